/* SPDX-License-Identifier: MIT */
/* Unit tests for analyzer/alloc/alloc.c: the caching allocator's size rules (TV-22)
 * and its replay of hand-made traces; the replayed jobs are test_mem_trace.c's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analyzer/alloc/alloc.h"

#include <stdbool.h>
#include <string.h>

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

#define MiB (1ull << 20)

static void init_cfg(struct alloc_sim *sim, uint64_t max_split, uint64_t limit, bool expandable)
{
	struct alloc_config cfg;

	alloc_config_default(&cfg);
	if (max_split)
		cfg.max_split_size = max_split;
	cfg.limit = limit;
	cfg.expandable_segments = expandable;
	alloc_sim_init_cfg(sim, &cfg);
}

/* Three 5 MiB blocks split one 20 MiB segment (5 + 15, 5 + 10, 5 + 5); the
 * freed middle block is a 5 MiB hole a 6 MiB request cannot use, so it gets
 * a segment of its own.  Freeing everything coalesces the first segment. */
static void split_leaves_a_hole(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c, d, e;

	(void)state;
	alloc_sim_init(&sim);
	assert_true(alloc_sim_malloc(&sim, 5 * MiB, &a));
	assert_true(alloc_sim_malloc(&sim, 5 * MiB, &b));
	assert_true(alloc_sim_malloc(&sim, 5 * MiB, &c));
	assert_int_equal(sim.reserved, 20 * MiB);
	alloc_sim_release(&sim, b);
	assert_true(alloc_sim_malloc(&sim, 6 * MiB, &d));
	assert_int_equal(sim.reserved, 40 * MiB);
	assert_int_equal(sim.allocated, 16 * MiB);
	alloc_sim_release(&sim, a);
	alloc_sim_release(&sim, c);
	/* one free 20 MiB block again: 19 MiB fits without a new segment */
	assert_true(alloc_sim_malloc(&sim, 19 * MiB, &e));
	assert_int_equal(sim.reserved, 40 * MiB);
	/* remainder 1 MiB is not > kSmallSize: the whole block is allocated */
	assert_int_equal(sim.allocated, 26 * MiB);
	alloc_sim_free(&sim);
}

/* max_split_size 40 MiB: oversize blocks are never split, never serve a
 * request below 40 MiB, and serve a large one only within 20 MiB. */
static void oversize_blocks(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c, d;

	(void)state;
	init_cfg(&sim, 40 * MiB, 0, false);
	assert_true(alloc_sim_malloc(&sim, 100 * MiB, &a));
	alloc_sim_release(&sim, a);
	assert_true(alloc_sim_malloc(&sim, 50 * MiB, &b));	/* 100 - 50 >= 20: refused */
	assert_int_equal(sim.reserved, 150 * MiB);
	alloc_sim_release(&sim, b);
	assert_true(alloc_sim_malloc(&sim, 90 * MiB, &c));	/* 100 - 90 < 20: reused whole */
	assert_int_equal(sim.reserved, 150 * MiB);
	assert_int_equal(sim.allocated, 100 * MiB);
	assert_true(alloc_sim_malloc(&sim, 30 * MiB, &d));	/* below 40: not from the 50 */
	assert_int_equal(sim.reserved, 180 * MiB);
	alloc_sim_free(&sim);
}

/* Without max_split_size the same 100 MiB block is split for 50 MiB. */
static void no_max_split_splits_big_blocks(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	alloc_sim_init(&sim);
	assert_true(alloc_sim_malloc(&sim, 100 * MiB, &a));
	alloc_sim_release(&sim, a);
	assert_true(alloc_sim_malloc(&sim, 50 * MiB, &b));
	assert_true(alloc_sim_malloc(&sim, 30 * MiB, &c));
	assert_int_equal(sim.reserved, 100 * MiB);
	assert_int_equal(sim.allocated, 80 * MiB);
	alloc_sim_free(&sim);
}

/* Limit 60 MiB: cudaMalloc of 50 MiB fails with 40 cached, the cache is
 * freed and the retry succeeds; a further 20 MiB cannot be had: OOM. */
static void retry_at_capacity(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	init_cfg(&sim, 0, 60 * MiB, false);
	assert_true(alloc_sim_malloc(&sim, 40 * MiB, &a));
	alloc_sim_release(&sim, a);
	assert_true(alloc_sim_malloc(&sim, 50 * MiB, &b));
	assert_int_equal(sim.retries, 1);
	assert_int_equal(sim.reserved, 50 * MiB);
	assert_int_equal(sim.peak_reserved, 50 * MiB);
	assert_int_equal(alloc_sim_malloc_on(&sim, 20 * MiB, 0, &c), ALLOC_OOM);
	assert_int_equal(sim.oom_request, 20 * MiB);
	assert_int_equal(sim.reserved, 50 * MiB);
	alloc_sim_free(&sim);
}

/* With max_split_size, the first resort frees only the smallest oversize
 * block that covers the request (100 of 100 and 60), not the whole cache. */
static void retry_frees_one_oversize_block(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	init_cfg(&sim, 40 * MiB, 200 * MiB, false);
	assert_true(alloc_sim_malloc(&sim, 100 * MiB, &a));
	assert_true(alloc_sim_malloc(&sim, 60 * MiB, &b));
	alloc_sim_release(&sim, a);
	alloc_sim_release(&sim, b);
	assert_true(alloc_sim_malloc(&sim, 70 * MiB, &c));
	assert_int_equal(sim.reserved, 130 * MiB);
	assert_int_equal(sim.retries, 0);
	alloc_sim_free(&sim);
}

/* Expandable segments map 20 MiB pages at the end of one segment: 30 MiB
 * maps 40, 15 more maps 20 (tail 10 + 20 = 30 free), the freed first block
 * serves 25 MiB before the tail does, and empty_cache unmaps the free pages
 * at the end (45..60 MiB free after the 15 MiB block goes: one page). */
static void expandable_segments(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	init_cfg(&sim, 0, 0, true);
	assert_true(alloc_sim_malloc(&sim, 30 * MiB, &a));
	assert_int_equal(sim.reserved, 40 * MiB);
	assert_int_equal(sim.allocated, 30 * MiB);
	assert_true(alloc_sim_malloc(&sim, 15 * MiB, &b));
	assert_int_equal(sim.reserved, 60 * MiB);
	alloc_sim_release(&sim, a);
	assert_true(alloc_sim_malloc(&sim, 25 * MiB, &c));
	assert_int_equal(sim.reserved, 60 * MiB);
	assert_int_equal(sim.allocated, 40 * MiB);
	alloc_sim_release(&sim, b);
	alloc_sim_empty_cache(&sim);
	assert_int_equal(sim.reserved, 40 * MiB);
	alloc_sim_free(&sim);
}

/* roundup_power2_divisions = 4: quarter steps between powers of two for
 * sizes above 4 x 512 B. */
static void roundup_power2(void **state)
{
	struct alloc_config cfg;

	(void)state;
	alloc_config_default(&cfg);
	cfg.roundup_power2_divisions = 4;
	assert_int_equal(alloc_round_size_cfg(&cfg, 1258291), 1310720);	/* 1.2 -> 1.25 MiB */
	assert_int_equal(alloc_round_size_cfg(&cfg, 614400), 655360);	/* 600 KiB -> 640 */
	assert_int_equal(alloc_round_size_cfg(&cfg, 1 << 20), 1 << 20);	/* powers of two stay */
	assert_int_equal(alloc_round_size_cfg(&cfg, 2000), 2048);		/* below 2 KiB: 512 B */
	assert_int_equal(alloc_round_size_cfg(&cfg, 5 * MiB + 1), 6 * MiB);
}

/* garbage_collection_threshold 0.5 of a 100 MiB limit: with 60 MiB cached
 * a 40 MiB request first releases the whole segments at least as old as
 * their average age (both 30 MiB ones, freed at the same call): 40 MiB
 * reserved after it instead of 100. */
static void garbage_collection(void **state)
{
	struct alloc_config cfg;
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	alloc_config_default(&cfg);
	cfg.limit = 100 * MiB;
	cfg.gc_threshold = 0.5;
	alloc_sim_init_cfg(&sim, &cfg);
	assert_true(alloc_sim_malloc(&sim, 30 * MiB, &a));
	assert_true(alloc_sim_malloc(&sim, 30 * MiB, &b));
	alloc_sim_release(&sim, a);
	alloc_sim_release(&sim, b);
	assert_true(alloc_sim_malloc(&sim, 40 * MiB, &c));
	assert_int_equal(sim.reserved, 40 * MiB);
	assert_int_equal(sim.peak_reserved, 60 * MiB);
	alloc_sim_free(&sim);
}

/* A block cached on one stream is not reused by another. */
static void per_stream_pools(void **state)
{
	struct alloc_sim sim;
	size_t a, b;

	(void)state;
	alloc_sim_init(&sim);
	assert_int_equal(alloc_sim_malloc_on(&sim, 5 * MiB, 1, &a), ALLOC_OK);
	alloc_sim_release(&sim, a);
	assert_int_equal(alloc_sim_malloc_on(&sim, 5 * MiB, 0, &b), ALLOC_OK);
	assert_int_equal(sim.reserved, 40 * MiB);
	alloc_sim_release(&sim, b);
	assert_int_equal(alloc_sim_malloc_on(&sim, 5 * MiB, 1, &a), ALLOC_OK);
	assert_int_equal(sim.reserved, 40 * MiB);
	alloc_sim_free(&sim);
}

/* record_stream (CUDACachingAllocator.cpp free -> insert_events, malloc ->
 * process_events): a block freed while another stream's use is pending
 * leaves `allocated` at once but is not reused until that use completes.
 * By hand: a 30 MiB block on stream 1 freed with a pending use; the next
 * 30 MiB request on stream 1 needs a second segment (60 MiB reserved, 30
 * allocated); once the first completes, a third request reuses it; then
 * empty_cache waits for the second (synchronize_and_free_events) and
 * releases its segment: 30 MiB. */
static void record_stream_defers_reuse(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	alloc_sim_init(&sim);
	assert_int_equal(alloc_sim_malloc_on(&sim, 30 * MiB, 1, &a), ALLOC_OK);
	alloc_sim_release_recorded(&sim, a);
	assert_int_equal(sim.allocated, 0);
	assert_int_equal(alloc_sim_malloc_on(&sim, 30 * MiB, 1, &b), ALLOC_OK);
	assert_int_equal(sim.reserved, 60 * MiB);
	assert_int_equal(sim.allocated, 30 * MiB);
	alloc_sim_complete(&sim, a);
	alloc_sim_release_recorded(&sim, b);
	assert_int_equal(alloc_sim_malloc_on(&sim, 30 * MiB, 1, &c), ALLOC_OK);
	assert_int_equal(sim.reserved, 60 * MiB);
	assert_int_equal(c, a);
	alloc_sim_empty_cache(&sim);
	assert_int_equal(sim.reserved, 30 * MiB);
	assert_int_equal(sim.peak_reserved, 60 * MiB);
	alloc_sim_free(&sim);
}

/* A pending block does not coalesce (try_merge_blocks skips a block with
 * stream uses).  By hand: two 5 MiB blocks split from one 20 MiB segment;
 * the first freed with a pending use, the second freed: it merges with the
 * 10 MiB rest only (15 MiB free), so a 16 MiB request takes a new 16 MiB
 * segment (36 MiB reserved); after completion the 20 MiB block is whole
 * again and a second 16 MiB request fits in it. */
static void record_stream_blocks_merge(void **state)
{
	struct alloc_sim sim;
	size_t x, y, z, w;

	(void)state;
	alloc_sim_init(&sim);
	assert_true(alloc_sim_malloc(&sim, 5 * MiB, &x));
	assert_true(alloc_sim_malloc(&sim, 5 * MiB, &y));
	assert_int_equal(sim.reserved, 20 * MiB);
	alloc_sim_release_recorded(&sim, x);
	alloc_sim_release(&sim, y);
	assert_true(alloc_sim_malloc(&sim, 16 * MiB, &z));
	assert_int_equal(sim.reserved, 36 * MiB);
	alloc_sim_complete(&sim, x);
	assert_true(alloc_sim_malloc(&sim, 16 * MiB, &w));
	assert_int_equal(sim.reserved, 36 * MiB);
	assert_int_equal(sim.allocated, 32 * MiB);
	alloc_sim_free(&sim);
}

/* The trace's recorded frees and completions replay the same way, and a
 * completion that empty_cache already made (the retry path at the limit)
 * is a no-op even when the block's slot serves another tensor by then.
 * By hand: limit 50 MiB; a (30 MiB, stream 1) freed recorded; b (30 MiB)
 * cannot get a segment (60 > 50): the retry waits for a and releases its
 * segment, then b's segment fits (30 MiB); b freed recorded; the late
 * completion of a must not free b, so c (30 MiB) fails over the limit, which
 * frees b's segment through the same path: c then fits.  One retry each. */
static void trace_record_stream(void **state)
{
	struct alloc_trace t = { 0 };
	struct alloc_config cfg;
	struct alloc_replay r;
	uint32_t a, b;

	(void)state;
	alloc_config_default(&cfg);
	cfg.limit = 50 * MiB;
	a = alloc_trace_alloc(&t, 30 * MiB, 1);
	alloc_trace_release_recorded(&t, a);
	b = alloc_trace_alloc(&t, 30 * MiB, 1);
	alloc_trace_release_recorded(&t, b);
	alloc_trace_complete(&t, a);
	alloc_trace_alloc(&t, 30 * MiB, 1);
	alloc_trace_complete(&t, b);
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_false(r.oom);
	assert_int_equal(r.retries, 2);
	assert_int_equal(r.peak_reserved, 30 * MiB);
	assert_int_equal(r.peak_allocated, 30 * MiB);
	cfg.limit = 0;
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_int_equal(r.peak_reserved, 60 * MiB);
	alloc_trace_free(&t);
}

/* Best fit over the sorted free blocks: three freed segments of 12, 16 and
 * 14 MiB; 13 MiB takes the 14 (its 1 MiB rest is not split), 12 the 12,
 * 11 splits the 16 (5 MiB rest); freeing the 11 merges it back, so a
 * 16 MiB request needs no new segment.  Reserved stays 42 MiB. */
static void best_fit_order(void **state)
{
	struct alloc_sim sim;
	size_t a, b, c;

	(void)state;
	alloc_sim_init(&sim);
	assert_true(alloc_sim_malloc(&sim, 12 * MiB, &a));
	assert_true(alloc_sim_malloc(&sim, 16 * MiB, &b));
	assert_true(alloc_sim_malloc(&sim, 14 * MiB, &c));
	alloc_sim_release(&sim, a);
	alloc_sim_release(&sim, b);
	alloc_sim_release(&sim, c);
	assert_true(alloc_sim_malloc(&sim, 13 * MiB, &a));
	assert_int_equal(sim.allocated, 14 * MiB);
	assert_true(alloc_sim_malloc(&sim, 12 * MiB, &b));
	assert_int_equal(sim.allocated, 26 * MiB);
	assert_true(alloc_sim_malloc(&sim, 11 * MiB, &c));
	assert_int_equal(sim.allocated, 37 * MiB);
	alloc_sim_release(&sim, c);
	assert_true(alloc_sim_malloc(&sim, 16 * MiB, &c));
	assert_int_equal(sim.allocated, 42 * MiB);
	assert_int_equal(sim.reserved, 42 * MiB);
	assert_int_equal(sim.peak_reserved, 42 * MiB);
	alloc_sim_free(&sim);
}

/* A trace replays to the same figures, and names the request that fails. */
static void trace_replay(void **state)
{
	struct alloc_trace t = { 0 };
	struct alloc_config cfg;
	struct alloc_replay r;
	uint32_t a, b;

	(void)state;
	alloc_config_default(&cfg);
	a = alloc_trace_alloc(&t, 5 * MiB, 0);
	b = alloc_trace_alloc(&t, 5 * MiB, 0);
	alloc_trace_release(&t, a);
	alloc_trace_alloc(&t, 12 * MiB, 0);	/* the 10 MiB rest is too small */
	alloc_trace_release(&t, b);
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_false(r.oom);
	assert_int_equal(r.peak_allocated, 17 * MiB);
	assert_int_equal(r.peak_reserved, 32 * MiB);
	cfg.limit = 30 * MiB;
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_true(r.oom);
	assert_int_equal(r.oom_event, 3);
	assert_int_equal(r.oom_request, 12 * MiB);
	alloc_trace_free(&t);
}

/* The steps' request peak (alloc_trace_step_peak) against the replay's
 * memory_allocated.  By hand: setup keeps a 1 MiB tensor (small pool); the
 * step makes a 12 MiB tensor, frees it, makes 11.5 MiB, which takes the
 * cached 12 MiB block whole (its 0.5 MiB rest is not over kSmallSize, so
 * not split): memory_allocated peaks at 1 + 12 MiB both times, the
 * requests at 1 + 12 then 1 + 11.5; the setup's 3 MiB tensor, freed
 * before the mark, is not the steps'. */
static void step_peak_counts_requests(void **state)
{
	struct alloc_trace t = { 0 };
	struct alloc_config cfg;
	struct alloc_replay r;
	uint32_t a;
	uint64_t peak;

	(void)state;
	alloc_config_default(&cfg);
	alloc_trace_alloc(&t, 1 * MiB, 0);
	a = alloc_trace_alloc(&t, 3 * MiB, 0);
	alloc_trace_release(&t, a);
	alloc_trace_mark(&t);
	a = alloc_trace_alloc(&t, 12 * MiB, 0);
	alloc_trace_release(&t, a);
	alloc_trace_mark(&t);
	a = alloc_trace_alloc(&t, 11 * MiB + MiB / 2, 0);
	alloc_trace_release(&t, a);
	assert_true(alloc_trace_step_peak(&t, &peak));
	assert_int_equal(peak, 13 * MiB);
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_int_equal(r.step_requested, 13 * MiB);
	assert_int_equal(r.peak_allocated, 13 * MiB);
	alloc_trace_free(&t);
	/* the second step alone: requests 1 + 11.5, blocks 1 + 12 MiB */
	t = (struct alloc_trace){ 0 };
	alloc_trace_alloc(&t, 1 * MiB, 0);
	a = alloc_trace_alloc(&t, 12 * MiB, 0);
	alloc_trace_release(&t, a);
	alloc_trace_mark(&t);
	alloc_trace_alloc(&t, 11 * MiB + MiB / 2, 0);
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_int_equal(r.step_requested, 12 * MiB + MiB / 2);
	assert_int_equal(r.peak_allocated, 13 * MiB);
	alloc_trace_free(&t);
}

/* Four marked steps: step 0 a 5 MiB tensor kept (a 20 MiB segment), steps
 * 1 and 2 a 30 MiB one made and freed (one 30 MiB segment, reused), step 3
 * a 100 MiB one; replayed with the default config. */
static enum alloc_status four_steps(bool varies, struct alloc_replay *r)
{
	struct alloc_trace t = { 0 };
	struct alloc_config cfg;
	enum alloc_status st;

	alloc_config_default(&cfg);
	t.varies = varies;
	alloc_trace_mark(&t);
	alloc_trace_alloc(&t, 5 * MiB, 0);
	for (int step = 1; step < 3; step++) {
		uint32_t a;

		alloc_trace_mark(&t);
		a = alloc_trace_alloc(&t, 30 * MiB, 0);
		alloc_trace_release(&t, a);
	}
	alloc_trace_mark(&t);
	alloc_trace_alloc(&t, 100 * MiB, 0);
	st = alloc_replay(&t, &cfg, r);
	alloc_trace_free(&t);
	return st;
}

/* A trace marked as varying replays every step: the steady rule would stop
 * at step 3 (unchanged after step 2) and miss step 3's 100 MiB segment. */
static void trace_varies_replays_all(void **state)
{
	struct alloc_replay r;

	(void)state;
	assert_int_equal(four_steps(true, &r), ALLOC_OK);
	assert_int_equal(r.peak_reserved, 150 * MiB);
	assert_int_equal(r.steps, 4);
	/* every step's requests, the steps' peak: 5 + 100 MiB */
	assert_int_equal(r.step_requested, 105 * MiB);
}

/* Steps are marked; the replay stops at a mark once the step before it
 * left peak reserved unchanged (from the third mark on): step 3 is not
 * replayed.  The request peak is the trace's, whatever was replayed. */
static void trace_stops_when_steady(void **state)
{
	struct alloc_replay r;

	(void)state;
	assert_int_equal(four_steps(false, &r), ALLOC_OK);
	assert_int_equal(r.peak_reserved, 50 * MiB);
	assert_int_equal(r.steps, 3);
	assert_int_equal(r.step_requested, 105 * MiB);
}

/* torch.cuda.empty_cache() in the trace (fsdp_qlora's after loading, then
 * reset_peak_memory_stats() before the loop).  By hand: loading makes a
 * 100 MiB source and a 30 MiB packed copy (130 MiB reserved), frees both and
 * keeps a 1 MiB QuantState (small pool: a 2 MiB segment); the cache is
 * emptied (2 MiB left); the step makes 40 MiB.  Peak reserved from the empty
 * cache on: 2 + 40 = 42 MiB; the setup figure keeps loading's 132 MiB.
 * Without the empty cache the 40 MiB takes the cached 100 MiB block: 132. */
static void trace_empty_cache(void **state)
{
	struct alloc_trace t = { 0 };
	struct alloc_config cfg;
	struct alloc_replay r;
	uint32_t src, q;

	(void)state;
	alloc_config_default(&cfg);
	src = alloc_trace_alloc(&t, 100 * MiB, 0);
	q = alloc_trace_alloc(&t, 30 * MiB, 0);
	alloc_trace_alloc(&t, 1 * MiB, 0);
	alloc_trace_release(&t, src);
	alloc_trace_release(&t, q);
	alloc_trace_empty_cache(&t);
	alloc_trace_mark(&t);
	alloc_trace_alloc(&t, 40 * MiB, 0);
	assert_int_equal(alloc_replay(&t, &cfg, &r), ALLOC_OK);
	assert_int_equal(r.peak_reserved, 42 * MiB);
	assert_int_equal(r.setup_reserved, 132 * MiB);
	assert_int_equal(r.step_requested, 41 * MiB);
	alloc_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tv22_rounding_table),
		cmocka_unit_test(tv22_simulated_allocated_and_reserved),
		cmocka_unit_test(large_split_and_reuse),
		cmocka_unit_test(small_pool_packs_blocks),
		cmocka_unit_test(rounding_saturates),
		cmocka_unit_test(split_leaves_a_hole),
		cmocka_unit_test(oversize_blocks),
		cmocka_unit_test(no_max_split_splits_big_blocks),
		cmocka_unit_test(retry_at_capacity),
		cmocka_unit_test(retry_frees_one_oversize_block),
		cmocka_unit_test(expandable_segments),
		cmocka_unit_test(roundup_power2),
		cmocka_unit_test(garbage_collection),
		cmocka_unit_test(per_stream_pools),
		cmocka_unit_test(record_stream_defers_reuse),
		cmocka_unit_test(record_stream_blocks_merge),
		cmocka_unit_test(trace_record_stream),
		cmocka_unit_test(best_fit_order),
		cmocka_unit_test(trace_replay),
		cmocka_unit_test(step_peak_counts_requests),
		cmocka_unit_test(trace_stops_when_steady),
		cmocka_unit_test(trace_varies_replays_all),
		cmocka_unit_test(trace_empty_cache),
	};
	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
