/* SPDX-License-Identifier: MIT */
/*
 * test_u64map.c - the evaluator's one hash table: lookups across growth,
 * keys that share a slot, pointer-shaped keys and key 0.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lang/arena.h"
#include "lang/u64map.h"

static void empty_map_finds_nothing(void **state)
{
	struct u64map m = { 0 };

	(void)state;
	assert_null(u64map_get(&m, 0));
	assert_null(u64map_get(&m, 42));
}

/* 10,000 keys spaced like arena pointers (16-byte aligned, one high
 * prefix): every one is found after many doublings, none that was not put. */
static void pointer_keys_survive_growth(void **state)
{
	struct arena a = { 0 };
	struct u64map m = { 0 };
	static int vals[10000];

	(void)state;
	for (uint64_t i = 0; i < 10000; i++)
		u64map_put(&m, &a, 0x7f0000000000u + 16 * i, &vals[i]);
	assert_int_equal(m.n, 10000);
	assert_true(m.cap >= 2 * m.n);
	for (uint64_t i = 0; i < 10000; i++)
		assert_ptr_equal(u64map_get(&m, 0x7f0000000000u + 16 * i), &vals[i]);
	assert_null(u64map_get(&m, 0x7f0000000000u + 8));
	assert_null(u64map_get(&m, 0x7f0000000000u + 16 * 10000));
	arena_free(&a);
}

/* 0 is a key like any other (empty slots are marked by their value). */
static void key_zero_is_a_key(void **state)
{
	struct arena a = { 0 };
	struct u64map m = { 0 };
	int x, y;

	(void)state;
	u64map_put(&m, &a, 0, &x);
	u64map_put(&m, &a, UINT64_MAX, &y);
	assert_ptr_equal(u64map_get(&m, 0), &x);
	assert_ptr_equal(u64map_get(&m, UINT64_MAX), &y);
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_map_finds_nothing),
		cmocka_unit_test(pointer_keys_survive_growth),
		cmocka_unit_test(key_zero_is_a_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
