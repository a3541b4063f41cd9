/* SPDX-License-Identifier: MIT */
/*
 * test_check_job.c - a job's keys by name (lang/check_job.c) and names
 * interned by address (intern_static, lang/intern.c): the filter in
 * front of check_job_field and check_job_record gives the answers of a
 * plain scan for every key the checker knows, over many sets of written
 * keys, keys that share their first bytes included; intern_static gives
 * intern_cstr's pointer, past the growth of its table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lang/arena.h"
#include "lang/check.h"
#include "lang/check_impl.h"
#include "lang/intern.h"

/* Keys the tests write and ask for: the train block's own, records'
 * keys that share "par", "off", "fsd", and two-byte names. */
static const char *const extra[] = {
	"parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep", "parallel.vp", "offload.params",
	"offload.optimizer", "fsdp", "fsdp2.reshard_after_forward", "fsdp1.sync_module_states", "fp8.recipe",
	"rl.group_size", "lora.r", "x", "zz", "zero", "zero_bubble",
};

static size_t all_keys(const char **out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; check_train_key(i) && n < cap; i++)
		out[n++] = check_train_key(i);
	for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < cap; i++)
		out[n++] = extra[i];
	return n;
}

/* A job that writes the keys of @keys whose bit is set in @mask (as
 * keep() in check_train.c does: value i + 1 for key i). */
static void make_job(struct arena *a, struct check_job *j, const char **keys, size_t n, uint64_t seed)
{
	memset(j, 0, sizeof *j);
	j->fields = ARENA_NEW_ARRAY(a, struct value, n);
	j->names = ARENA_NEW_ARRAY(a, const char *, n);
	j->capfields = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		if ((seed >> 33) % 4)
			continue;
		j->names[j->nfields] = keys[i];
		j->fields[j->nfields] = (struct value){ .kind = VAL_BOOL, .nitems = (unsigned)i + 1 };
		j->nfields++;
		check_job_index_key(j, keys[i]);
	}
}

static bool scan(const struct check_job *j, const char *key, unsigned *item)
{
	for (unsigned i = 0; i < j->nfields; i++)
		if (!strcmp(j->names[i], key)) {
			*item = j->fields[i].nitems;
			return true;
		}
	return false;
}

static bool scan_record(const struct check_job *j, const char *record)
{
	size_t n = strlen(record);

	for (unsigned i = 0; i < j->nfields; i++)
		if (!strncmp(j->names[i], record, n) && j->names[i][n] == '.')
			return true;
	return false;
}

static void lookups_match_a_scan(void **state)
{
	static const char *const records[] = { "parallel", "offload", "fsdp2", "fsdp1", "fp8", "rl", "lora",
					       "zero", "x" };
	const char *keys[256];
	size_t n = all_keys(keys, 256);
	struct arena a = { 0 };
	unsigned found = 0, missed = 0;

	(void)state;
	assert_true(n > 40);
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct check_job j;

		make_job(&a, &j, keys, n, seed);
		for (size_t k = 0; k < n; k++) {
			struct value v = { .kind = VAL_NONE };
			unsigned want = 0;
			bool in = scan(&j, keys[k], &want);

			assert_int_equal(check_job_field(&j, keys[k], &v), in);
			if (in)
				assert_int_equal(v.nitems, want);
			found += in;
			missed += !in;
		}
		for (size_t r = 0; r < sizeof records / sizeof records[0]; r++)
			assert_int_equal(check_job_record(&j, records[r]), scan_record(&j, records[r]));
	}
	assert_true(found > 1000 && missed > 1000);	/* both answers were asked for */
	arena_free(&a);
}

/* A key left out of the filter is not found: the filter is consulted
 * (else the test above would pass with none). */
static void the_filter_answers_misses(void **state)
{
	struct arena a = { 0 };
	struct check_job j;
	struct value v;

	(void)state;
	memset(&j, 0, sizeof j);
	j.fields = ARENA_NEW_ARRAY(&a, struct value, 2);
	j.names = ARENA_NEW_ARRAY(&a, const char *, 2);
	j.names[0] = "micro_batch";
	j.names[1] = "seq_len";
	j.nfields = 2;
	check_job_index_key(&j, "micro_batch");
	assert_true(check_job_field(&j, "micro_batch", &v));
	assert_false(check_job_field(&j, "seq_len", &v));
	check_job_index_key(&j, "seq_len");
	assert_true(check_job_field(&j, "seq_len", &v));
	arena_free(&a);
}

static char many[300][8];

static void static_names_intern_alike(void **state)
{
	struct arena a = { 0 };
	struct interner *in = interner_new(&a);

	(void)state;
	for (int i = 0; i < 300; i++)
		snprintf(many[i], sizeof many[i], "n%d", i);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 300; i++) {
			const char *s = intern_static(in, many[i]);

			assert_ptr_equal(s, intern_cstr(in, many[i]));
			assert_ptr_not_equal(s, many[i]);
			assert_string_equal(s, many[i]);
		}
	assert_ptr_equal(intern_static(in, "batch"), intern_cstr(in, "batch"));
	arena_free(&a);
}

static void memos_by_address(void **state)
{
	struct arena a = { 0 };
	struct interner *in = interner_new(&a);
	char copy[300][8];
	const char *s[300];

	(void)state;
	for (int i = 0; i < 300; i++) {
		snprintf(copy[i], sizeof copy[i], "m%d", i);
		s[i] = intern_cstr(in, copy[i]);
	}
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 300; i++) {
			struct intern_memo *m = intern_memo(in, s[i]);

			assert_non_null(m);
			assert_null(intern_memo(in, copy[i]));	/* the same bytes elsewhere */
			if (round == 0)
				m->unit = i + 1;
			assert_int_equal(m->unit, i + 1);	/* its own memo, each time */
		}
	assert_null(intern_memo(in, "never interned"));
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookups_match_a_scan),
		cmocka_unit_test(the_filter_answers_misses),
		cmocka_unit_test(static_names_intern_alike),
		cmocka_unit_test(memos_by_address),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
