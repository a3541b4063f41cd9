/* SPDX-License-Identifier: MIT */
/* Unit tests for analyzer/alloc.c: the caching allocator's size rules (TV-22). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analyzer/alloc.h"

struct tv22 {
	uint64_t request, rounded, segment;
	enum alloc_pool pool;
	uint64_t allocated;	/* memory_allocated after the request on a fresh allocator */
};

/* memory-model.md §13 TV-22, row by row. */
static const struct tv22 rows[] = {
	{ 1, 512, 2097152, ALLOC_POOL_SMALL, 512 },
	{ 1000, 1024, 2097152, ALLOC_POOL_SMALL, 1024 },
	{ 1048576, 1048576, 2097152, ALLOC_POOL_SMALL, 1048576 },
	{ 1048577, 1049088, 20971520, ALLOC_POOL_LARGE, 1049088 },
	{ 10485760, 10485760, 10485760, ALLOC_POOL_LARGE, 10485760 },
	{ 13000000, 13000192, 14680064, ALLOC_POOL_LARGE, 13000192 },
	/* remainder 524,288 <= 1 MiB: not split, allocated grows by the segment */
	{ 20447232, 20447232, 20971520, ALLOC_POOL_LARGE, 20971520 },
};

static void tv22_rounding_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t r = alloc_round_size(rows[i].request);

		assert_int_equal(r, rows[i].rounded);
		assert_int_equal(alloc_pool_of(r), rows[i].pool);
		assert_int_equal(alloc_segment_size(r), rows[i].segment);
	}
}

static void tv22_simulated_allocated_and_reserved(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct alloc_sim sim;
		size_t h;

		alloc_sim_init(&sim);
		assert_true(alloc_sim_malloc(&sim, rows[i].request, &h));
		assert_int_equal(sim.allocated, rows[i].allocated);
		assert_int_equal(sim.reserved, rows[i].segment);
		alloc_sim_release(&sim, h);
		assert_int_equal(sim.allocated, 0);
		assert_int_equal(sim.peak_allocated, rows[i].allocated);
		alloc_sim_free(&sim);
	}
}

/* The 1,048,577-B request splits its 20 MiB segment (remainder 19,922,432 B
 * > 1 MiB); a second request of the same size reuses the remainder. */
static void large_split_and_reuse(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	alloc_sim_init(&sim);
	assert_true(alloc_sim_malloc(&sim, 1048577, &a));
	assert_true(alloc_sim_malloc(&sim, 1048577, &b));
	assert_int_equal(sim.reserved, 20971520);
	assert_int_equal(sim.allocated, 2 * 1049088);
	alloc_sim_release(&sim, a);
	alloc_sim_release(&sim, b);
	/* coalesced back into one 20 MiB free block: a 19 MiB request fits without cudaMalloc */
	assert_true(alloc_sim_malloc(&sim, 19u << 20, &c));
	assert_int_equal(sim.reserved, 20971520);
	assert_int_equal(sim.peak_reserved, 20971520);
	alloc_sim_free(&sim);
}

static void small_pool_packs_blocks(void **state)
{
	struct alloc_sim sim;
	size_t h;

	(void)state;
	alloc_sim_init(&sim);
	for (int i = 0; i < 4096; i++)	/* 4096 x 512 B = one 2 MiB small segment */
		assert_true(alloc_sim_malloc(&sim, 100, &h));
	assert_int_equal(sim.reserved, 2097152);
	assert_true(alloc_sim_malloc(&sim, 100, &h));
	assert_int_equal(sim.reserved, 2 * 2097152);
	alloc_sim_free(&sim);
}

static void rounding_saturates(void **state)
{
	(void)state;
	assert_int_equal(alloc_round_size(0), 512);
	assert_int_equal(alloc_round_size(512), 512);
	assert_int_equal(alloc_round_size(513), 1024);
	assert_int_equal(alloc_round_size(UINT64_MAX) % 512, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tv22_rounding_table),
		cmocka_unit_test(tv22_simulated_allocated_and_reserved),
		cmocka_unit_test(large_split_and_reuse),
		cmocka_unit_test(small_pool_packs_blocks),
		cmocka_unit_test(rounding_saturates),
	};
	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
