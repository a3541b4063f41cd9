/* SPDX-License-Identifier: MIT */
/*
 * test_arena.c - the arena, strbuf and interner: the allocation layer
 * everything else stands on.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/intern.h"
#include "lang/strbuf.h"

static bool is_aligned(const void *p)
{
	return (uintptr_t)p % alignof(max_align_t) == 0;
}

static bool is_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void allocations_are_aligned_and_zeroed(void **state)
{
	struct arena a = { 0 };
	(void)state;

	for (size_t size = 0; size < 300; size++) {
		unsigned char *p = arena_alloc(&a, size);

		assert_true(is_aligned(p));
		assert_true(is_zero(p, size));
		memset(p, 0xab, size);	/* must not overlap the next one */
	}
	arena_free(&a);
	assert_null(a.head);
}

/* A raw request is aligned and its own: the zeroed ones around it stay
 * zeroed, small and big alike. */
static void raw_allocations_keep_the_others_zeroed(void **state)
{
	struct arena a = { 0 };
	(void)state;

	for (size_t size = 1; size < 40000; size = size * 3 + 1) {
		unsigned char *r = arena_alloc_raw(&a, size);

		assert_true(is_aligned(r));
		memset(r, 0xcd, size);
		unsigned char *p = arena_alloc(&a, size);

		assert_true(is_aligned(p));
		assert_true(is_zero(p, size));
		assert_true(p + size <= r || r + size <= p);
		memset(p, 0xab, size);
	}
	arena_free(&a);
}

/* Big blocks get their own chunk; earlier and later small ones survive. */
static void large_blocks_keep_pointers_valid(void **state)
{
	struct arena a = { 0 };
	(void)state;

	char *small1 = arena_strdup(&a, "before");
	size_t big_n = 3u << 20;
	unsigned char *big = arena_alloc(&a, big_n);
	char *small2 = arena_strdup(&a, "after");

	assert_true(is_aligned(big));
	assert_true(is_zero(big, big_n));
	memset(big, 0x5a, big_n);
	for (int i = 0; i < 10000; i++)	/* spill into several 64 KiB blocks */
		arena_alloc(&a, 48);
	assert_string_equal(small1, "before");
	assert_string_equal(small2, "after");
	assert_int_equal(big[0], 0x5a);
	assert_int_equal(big[big_n - 1], 0x5a);
	arena_free(&a);
}

static void a_big_block_first_is_fine(void **state)
{
	struct arena a = { 0 };
	(void)state;

	unsigned char *big = arena_alloc(&a, 100000);
	char *s = arena_strdup(&a, "x");

	assert_non_null(big);
	assert_string_equal(s, "x");
	arena_free(&a);
}

static void string_helpers(void **state)
{
	struct arena a = { 0 };
	(void)state;

	assert_string_equal(arena_strndup(&a, "abcdef", 3), "abc");
	assert_string_equal(arena_printf(&a, "%s=%d", "n", 42), "n=42");
	assert_string_equal(arena_printf(&a, "%s", ""), "");
	assert_string_equal(arena_concat(&a, "parallel", ".", "tp", (char *)NULL), "parallel.tp");
	assert_string_equal(arena_concat(&a, "", "x", "", (char *)NULL), "x");
	assert_string_equal(arena_concat(&a, (char *)NULL), "");

	int *v = ARENA_NEW_ARRAY(&a, int, 1000);
	assert_true(is_zero((unsigned char *)v, 1000 * sizeof(int)));

	struct pair { double x; char c; } *p = ARENA_NEW(&a, struct pair);
	assert_true(is_aligned(p));
	arena_free(&a);
}

static void strbuf_grows_and_detaches(void **state)
{
	struct strbuf sb;
	(void)state;

	strbuf_init(&sb);
	assert_string_equal(sb.buf, "");
	strbuf_setlen(&sb, 0);	/* on the shared empty buffer: a no-op */
	for (int i = 0; i < 1000; i++)
		strbuf_addch(&sb, 'a' + i % 26);
	assert_int_equal(sb.len, 1000);
	assert_int_equal(sb.buf[1000], '\0');
	strbuf_setlen(&sb, 2);
	strbuf_addf(&sb, "-%03d-", 7);
	strbuf_addchars(&sb, '~', 3);
	strbuf_add(&sb, "xyz", 2);
	strbuf_addstr(&sb, "!");
	assert_string_equal(sb.buf, "ab-007-~~~xy!");

	size_t len;
	char *s = strbuf_detach(&sb, &len);
	assert_int_equal(len, 13);
	assert_string_equal(s, "ab-007-~~~xy!");
	free(s);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb.buf, "");
	strbuf_release(&sb);
}

static void intern_gives_one_pointer_per_string(void **state)
{
	struct arena a = { 0 };
	(void)state;
	struct interner *in = interner_new(&a);

	const char *x = intern(in, "gpu_x", 3);
	assert_string_equal(x, "gpu");
	assert_ptr_equal(intern_cstr(in, "gpu"), x);
	assert_ptr_not_equal(intern_cstr(in, "gpus"), x);
	assert_ptr_equal(intern_find(in, "gpu", 3), x);
	assert_null(intern_find(in, "tpu", 3));
	assert_string_equal(intern(in, "", 0), "");

	/* Past several table doublings, every earlier pointer stays put. */
	const char *first[2000];
	char name[32];
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "name%d", i);
		first[i] = intern_cstr(in, name);
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "name%d", i);
		assert_ptr_equal(intern_cstr(in, name), first[i]);
	}
	assert_ptr_equal(intern_cstr(in, "gpu"), x);
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allocations_are_aligned_and_zeroed),
		cmocka_unit_test(raw_allocations_keep_the_others_zeroed),
		cmocka_unit_test(large_blocks_keep_pointers_valid),
		cmocka_unit_test(a_big_block_first_is_fine),
		cmocka_unit_test(string_helpers),
		cmocka_unit_test(strbuf_grows_and_detaches),
		cmocka_unit_test(intern_gives_one_pointer_per_string),
	};
	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
