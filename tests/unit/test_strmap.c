/* SPDX-License-Identifier: MIT */
/*
 * test_strmap.c - the text-keyed memo of the -Wcapacity notes and memc
 * fit (lang/strmap.c): keys are bytes (a NUL inside, a prefix of another
 * key, the empty key are all keys of their own), copied in, and found
 * across growth.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/strmap.h"

static void keys_are_bytes(void **state)
{
	struct arena a = { 0 };
	struct strmap m = { 0 };
	int x, y, z, w;
	char buf[] = "zero = 3\n";

	(void)state;
	assert_null(strmap_get(&m, "", 0));
	const char *copy = strmap_put(&m, &a, buf, strlen(buf), &x);

	strmap_put(&m, &a, "zero = 3", 8, &y);		/* a prefix */
	strmap_put(&m, &a, "a\0b", 3, &z);		/* a NUL between blocks */
	strmap_put(&m, &a, "", 0, &w);
	buf[0] = 'Z';					/* the key was copied */
	assert_string_equal(copy, "zero = 3\n");
	assert_ptr_equal(strmap_get(&m, "zero = 3\n", 9), &x);
	assert_ptr_equal(strmap_get(&m, "zero = 3", 8), &y);
	assert_ptr_equal(strmap_get(&m, "a\0b", 3), &z);
	assert_null(strmap_get(&m, "a\0c", 3));
	assert_null(strmap_get(&m, "a", 1));
	assert_ptr_equal(strmap_get(&m, "", 0), &w);
	assert_null(strmap_get(&m, buf, strlen(buf)));
	assert_int_equal(m.n, 4);
	arena_free(&a);
}

/* 5,000 keys alike but for a number, as a search's change lines are:
 * every one found after the table has doubled many times. */
static void lines_survive_growth(void **state)
{
	struct arena a = { 0 };
	struct strmap m = { 0 };
	static int vals[5000];
	char k[64];

	(void)state;
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(k, sizeof k, "micro_batch = %d\ngrad_accum = %d\n", i, 5000 - i);

		strmap_put(&m, &a, k, (size_t)n, &vals[i]);
	}
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(k, sizeof k, "micro_batch = %d\ngrad_accum = %d\n", i, 5000 - i);

		assert_ptr_equal(strmap_get(&m, k, (size_t)n), &vals[i]);
	}
	assert_null(strmap_get(&m, "micro_batch = 1\n", 16));
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_are_bytes),
		cmocka_unit_test(lines_survive_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
