/* SPDX-License-Identifier: MIT */
/*
 * test_import_cache.c - the parsed stdlib declarations kept across loads
 * (lang/import_cache.c): a load through the cache gives the tree a load
 * without it gives, declaration for declaration; it parses nothing a
 * load before it parsed; a load with another interner does not use it;
 * and a load that ends (its arena freed) leaves the others' lists whole.
 */
#include "lang_fixture.h"

#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/import.h"
#include "lang/reach.h"

static const char root_text[] =
	"import \"gpus/nvidia\"\nimport \"models/llama\"\nimport \"optimizers\"\nimport \"precision\"\n"
	"train t {\n  model = llama3_8b\n  cluster = 1 x A100_80GB\n  precision = bf16_true\n"
	"  optimizer = adamw\n  micro_batch = 1\n  seq_len = 4096\n}\n";

/* One load of root_text as "t.mem", in @a, lazily as memc check loads. */
static struct program *load(struct arena *a, struct interner *in, struct import_cache *cache, bool gpus)
{
	struct reach_extra rx = { .gpus = true };
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, NULL);
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests, .cache = cache, .reach_extra = gpus ? &rx : NULL };

	src_set_overlay(src, "t.mem", root_text, strlen(root_text));
	struct program *p = import_load(a, in, src, de, "t.mem", &io);

	assert_non_null(p->root);
	assert_int_equal(diag_error_count(de), 0);
	assert_true(p->stdlib_verified);
	return p;
}

/* ast_dump() of every file of @p, malloc'ed. */
static char *dump(const struct program *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	for (size_t i = 0; i < p->nfiles; i++)
		ast_dump(out, p->files[i]);
	assert_int_equal(fclose(out), 0);
	return buf;
}

static void cached_loads_build_the_same_trees(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	struct arena plain = { 0 }, second = { 0 }, third = { 0 };
	unsigned long hits, misses, misses1;
	char *want = dump(load(&plain, interner_new(&plain), NULL, false));
	const struct program *first = load(&fx->arena, fx->in, c, false);
	char *got1 = dump(first);

	import_cache_stats(c, &hits, &misses1);
	assert_int_equal(hits, 0);
	assert_true(misses1 > 10);	/* the model, its layers, the GPU, ... */
	assert_string_equal(want, got1);

	const struct program *p2 = load(&second, fx->in, c, false);
	char *got2 = dump(p2);

	import_cache_stats(c, &hits, &misses);
	assert_int_equal(misses, misses1);	/* nothing parsed twice */
	assert_int_equal(hits, misses1);
	assert_string_equal(want, got2);
	/* a third load links its own copies and ends: the others' lists stand */
	load(&third, fx->in, c, false);
	arena_free(&third);
	char *again1 = dump(first), *again2 = dump(p2);

	assert_string_equal(want, again1);
	assert_string_equal(want, again2);
	arena_free(&second);
	arena_free(&plain);
	free(want), free(got1), free(got2), free(again1), free(again2);
}

/* Every GPU reached besides (what the -Wcapacity notes' context loads):
 * the job's declarations, parsed before, are taken; only the rest is
 * parsed. */
static void more_reached_parses_only_what_is_new(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	unsigned long hits, misses1, misses;

	load(&fx->arena, fx->in, c, false);
	import_cache_stats(c, &hits, &misses1);
	const struct program *all = load(&fx->arena, fx->in, c, true);

	import_cache_stats(c, &hits, &misses);
	assert_int_equal(hits, misses1);
	assert_true(misses > misses1 + 30);	/* the other GPUs of nvidia.mem */
	for (size_t i = 0; i < all->nfiles; i++)
		for (const struct decl *d = all->files[i]->decls; d; d = d->next)
			if (d->kind == DECL_GPU)
				assert_true(reach_wants(all->reach, d));
}

static bool misses(const struct program *p, struct interner *in, const char *text)
{
	return reach_misses(p->reach, in, text, 0, (uint32_t)strlen(text));
}

/* A word naming a declaration the load left a stub is a miss, one naming
 * a parsed one or none is not; the -Wcapacity context (what the fixes
 * write, every GPU) has no miss on a fix of the knobs. */
static void misses_are_the_stubs_named(void **state)
{
	struct fixture *fx = *state;
	struct reach_extra rx = { .words = fit_knob_words, .gpus = true };
	const struct program *job = load(&fx->arena, fx->in, NULL, false);

	assert_false(misses(job, fx->in, "optimizer = adamw  micro_batch = 2  no_such_name"));
	assert_true(misses(job, fx->in, "optimizer = paged_adamw_8bit"));
	assert_true(misses(job, fx->in, "cluster = 1 x H200"));
	rx.like = job->reach;
	struct src_table *src = src_table_new(&fx->arena);
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests, .reach_extra = &rx };

	src_set_overlay(src, "t.mem", root_text, (size_t)(strstr(root_text, "train") - root_text));
	const struct program *ctx = import_load(&fx->arena, fx->in, src, diag_new(&fx->arena, src, NULL),
						"t.mem", &io);

	assert_false(misses(ctx, fx->in, "optimizer = paged_adamw_8bit\n cluster = 1 x H200\n model = llama3_8b"));
	assert_true(misses(ctx, fx->in, "model = llama2_70b"));
}

static void another_interner_does_not_use_it(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	struct arena other = { 0 };
	unsigned long hits, misses;

	load(&other, interner_new(&other), c, false);
	import_cache_stats(c, &hits, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 0);
	arena_free(&other);
}

/* The text of each stdlib file of a load of root_text, by file id. */
static void stdlib_texts(struct arena *a, struct interner *in, struct import_cache *cache, const char **texts,
			 size_t *n)
{
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, NULL);
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests, .cache = cache };

	src_set_overlay(src, "t.mem", root_text, strlen(root_text));
	const struct program *p = import_load(a, in, src, de, "t.mem", &io);

	assert_true(p->stdlib_verified);	/* the kept digest is the file's */
	*n = 0;
	for (uint32_t id = 1; id < src->nfiles; id++)
		if (import_is_stdlib_name(src_get(src, id)->display_name))
			texts[(*n)++] = src_get(src, id)->text;
}

static void stdlib_files_are_read_once(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	struct arena a1 = { 0 }, a2 = { 0 }, a3 = { 0 }, a4 = { 0 };
	const char *t1[64], *t2[64], *t3[64], *t4[64];
	size_t n1, n2, n3, n4;

	stdlib_texts(&a1, fx->in, c, t1, &n1);
	arena_free(&a1);	/* what the first load read is the cache's own copy */
	stdlib_texts(&a2, fx->in, c, t2, &n2);
	stdlib_texts(&a3, fx->in, c, t3, &n3);
	stdlib_texts(&a4, fx->in, NULL, t4, &n4);
	assert_true(n1 >= 4);
	assert_int_equal(n2, n1);
	assert_int_equal(n3, n1);
	assert_int_equal(n4, n1);
	for (size_t i = 0; i < n1; i++) {
		assert_ptr_equal(t2[i], t3[i]);		/* not read again */
		assert_ptr_not_equal(t4[i], t2[i]);	/* without a cache: read */
		assert_string_equal(t4[i], t2[i]);
	}
	arena_free(&a2), arena_free(&a3), arena_free(&a4);
}

/* What the loader asks the file system, kept per cache: a path's
 * existence from the second load on (the first one's would be for
 * nothing in a run of one compilation), a folder's realpath() always. */
static void paths_and_folders_are_kept(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	const char *real = "?";
	bool yes = false;

	import_cache_count_load(c);
	import_cache_keep_exists(c, "a.mem", true);
	assert_false(import_cache_exists(c, "a.mem", &yes));	/* one load: not kept */
	import_cache_count_load(c);
	import_cache_keep_exists(c, "a.mem", true);
	import_cache_keep_exists(c, "b.mem", false);
	assert_true(import_cache_exists(c, "a.mem", &yes));
	assert_true(yes);
	assert_true(import_cache_exists(c, "b.mem", &yes));
	assert_false(yes);
	assert_false(import_cache_exists(c, "c.mem", &yes));
	assert_false(import_cache_real_dir(c, "stdlib", &real));
	import_cache_keep_real_dir(c, "stdlib", "/x/stdlib");
	import_cache_keep_real_dir(c, "gone", NULL);
	assert_true(import_cache_real_dir(c, "stdlib", &real));
	assert_string_equal(real, "/x/stdlib");
	assert_true(import_cache_real_dir(c, "gone", &real));
	assert_null(real);
	assert_false(import_cache_exists(NULL, "a.mem", &yes));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(cached_loads_build_the_same_trees, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(more_reached_parses_only_what_is_new, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(misses_are_the_stubs_named, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(another_interner_does_not_use_it, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(stdlib_files_are_read_once, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(paths_and_folders_are_kept, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
