/* SPDX-License-Identifier: MIT */
/*
 * test_fit_gpus.c - the GPUs the -Wcapacity search picks from the build's
 * index (analyzer/fit/fit.c index_gpus): every gpu entry's `memory` in
 * build/gen/stdlib_digests.c is what the builder's build_gpu_u64 reads of
 * that declaration, its file loaded and checked as memc loads it; other
 * entries have none; and fit_gpu_choices() picks as the search did when it
 * parsed every GPU (larger by 5% at least, one per memory size, smallest
 * first, the largest last).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "analyzer/lower/build.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

/* The gpu declarations of stdlib/@name, checked, against its entry. */
static unsigned check_file(const struct stdlib_digest *x)
{
	struct arena a = { 0 };
	struct interner *in = interner_new(&a);
	struct src_table *src = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, src, NULL);
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests };
	const char *path = arena_printf(&a, "stdlib/%s", x->name);
	struct program *p = import_load(&a, in, src, de, path, &io);
	unsigned seen = 0;

	assert_non_null(p->root);
	struct check_result *cr = check_program_decls(&a, in, de, src, p);

	assert_int_equal(diag_error_count(de), 0);
	for (size_t k = 0; k < x->ndecls; k++) {
		const struct stdlib_decl *e = &x->decls[k];
		const struct decl *d = p->root->decls;

		if (e->kind != DECL_GPU) {
			assert_int_equal(e->memory, 0);
			continue;
		}
		while (d && d->loc.start != e->start)
			d = d->next;
		assert_non_null(d);
		assert_string_equal(d->name, e->name);
		uint64_t m = 0;

		assert_true(build_gpu_u64(cr->ev, d, "memory", &m));
		assert_true(m > 0);
		assert_int_equal(e->memory, m);
		seen++;
	}
	arena_free(&a);
	return seen;
}

static void index_memory_is_the_builders(void **state)
{
	unsigned gpus = 0;

	(void)state;
	for (size_t i = 0; i < memc_stdlib_ndigests; i++)
		gpus += check_file(&memc_stdlib_digests[i]);
	/* the gpus files of the stdlib declare 41 (a new one only raises this) */
	assert_true(gpus >= 41);
}

static void choices_larger_one_per_size(void **state)
{
	/* on an 80 GiB GPU a memory m is larger when m / 21 > 80 GiB / 20 =
	 * 4 GiB: 84 GiB (90194313216) is not, 21 bytes more is; of two of
	 * 96 GiB the first by name; 141 GiB is the largest, last */
	struct fit_gpu g[] = {
		{ "small", 40ull << 30 }, { "big", 141ull << 30 }, { "b96", 96ull << 30 },
		{ "a96", 96ull << 30 }, { "edge", 90194313216ull }, { "same", 80ull << 30 },
		{ "more", 90194313237ull },
	};
	size_t n = fit_gpu_choices(g, sizeof g / sizeof g[0], 80ull << 30);

	(void)state;
	assert_int_equal(n, 3);
	assert_string_equal(g[0].name, "more");
	assert_string_equal(g[1].name, "a96");
	assert_string_equal(g[2].name, "big");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(index_memory_is_the_builders),
		cmocka_unit_test(choices_larger_one_per_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
