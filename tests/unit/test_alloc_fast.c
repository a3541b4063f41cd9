/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_fast.c - the allocator simulation against its reference
 * (alloc_ref.h, the code before the free array stored its blocks' keys and
 * malloc reused the position best fit found): on random request streams
 * with splits, oversize blocks, expandable segments, record_stream,
 * empty_cache, garbage collection and the retry at capacity, both must hand
 * out the same blocks and end every operation with the same blocks,
 * segments, free array and statistics; on random traces, alloc_replay must
 * give what the reference replay gives, field by field, and so must
 * alloc_replay_steps on the same traces made a step at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "alloc_ref.h"

#define MiB (1ull << 20)

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t pick(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

/* Sizes in every regime: small, under kMinLargeAlloc, large, and beyond
 * the max_split_size the config may set. */
static uint64_t random_size(uint64_t *s)
{
	uint64_t r = pick(s, 100);

	if (r < 35)
		return 1 + pick(s, MiB);
	if (r < 65)
		return MiB + pick(s, 9 * MiB);
	if (r < 93)
		return 10 * MiB + pick(s, 110 * MiB);
	return 200 * MiB + pick(s, 200 * MiB);
}

static void random_config(uint64_t *s, struct alloc_config *cfg)
{
	static const uint32_t div[] = { 0, 0, 2, 4, 8 };

	alloc_config_default(cfg);
	if (pick(s, 2))
		cfg->max_split_size = (20 + pick(s, 180)) * MiB;
	cfg->roundup_power2_divisions = div[pick(s, 5)];
	cfg->expandable_segments = pick(s, 3) == 0;
	if (pick(s, 3))
		cfg->limit = (300 + pick(s, 900)) * MiB;
	if (cfg->limit && pick(s, 2))
		cfg->gc_threshold = 0.5 + 0.1 * (double)pick(s, 4);
}

static void same_blocks(const struct alloc_sim *a, const struct ref_sim *r)
{
	assert_int_equal(a->nblocks, r->nblocks);
	for (size_t i = 0; i < a->nblocks; i++) {
		const struct alloc_block *x = &a->blocks[i];
		const struct ref_block *y = &r->blocks[i];

		assert_int_equal(x->dead, y->dead);
		if (x->dead)
			continue;	/* a dead slot's fields are stale in both */
		assert_int_equal(x->segment, y->segment);
		assert_int_equal(x->offset, y->offset);
		assert_int_equal(x->size, y->size);
		assert_int_equal(x->freed_at, y->freed_at);
		assert_int_equal(x->prev, y->prev);
		assert_int_equal(x->next, y->next);
		assert_int_equal(x->stream, y->stream);
		assert_int_equal(x->pool, y->pool);
		assert_int_equal(x->free, y->free);
		assert_int_equal(x->pending, y->pending);
	}
}

static void same_state(const struct alloc_sim *a, const struct ref_sim *r)
{
	same_blocks(a, r);
	assert_int_equal(a->nsegs, r->nsegs);
	for (size_t i = 0; i < a->nsegs; i++) {
		assert_int_equal(a->segs[i].size, r->segs[i].size);
		assert_int_equal(a->segs[i].stream, r->segs[i].stream);
		assert_int_equal(a->segs[i].pool, r->segs[i].pool);
		assert_int_equal(a->segs[i].expandable, r->segs[i].expandable);
		assert_int_equal(a->segs[i].released, r->segs[i].released);
		assert_int_equal(a->segs[i].tail, r->segs[i].tail);
	}
	assert_int_equal(a->nfree, r->nfree);
	for (size_t i = 0; i < a->nfree; i++)
		assert_int_equal(a->freel[i], r->freel[i]);
	assert_int_equal(a->nspare, r->nspare);
	for (size_t i = 0; i < a->nspare; i++)
		assert_int_equal(a->spare[i], r->spare[i]);
	assert_int_equal(a->gc_calls, r->gc_calls);
	assert_int_equal(a->allocated, r->allocated);
	assert_int_equal(a->reserved, r->reserved);
	assert_int_equal(a->peak_allocated, r->peak_allocated);
	assert_int_equal(a->peak_reserved, r->peak_reserved);
	assert_int_equal(a->retries, r->retries);
	assert_int_equal(a->ooms, r->ooms);
	assert_int_equal(a->oom_request, r->oom_request);
}

/* The handles both hand out; `pend` marks those freed after record_stream. */
struct live {
	size_t h[64];
	bool pend[64];
	size_t n;
};

static void drop_live(struct live *l, size_t k)
{
	l->h[k] = l->h[--l->n];
	l->pend[k] = l->pend[l->n];
}

static void one_op(uint64_t *s, struct alloc_sim *a, struct ref_sim *r, struct live *l)
{
	uint64_t op = pick(s, 100);
	size_t k = l->n ? (size_t)pick(s, l->n) : 0;

	if (op < 50 && l->n < 64) {
		uint64_t n = random_size(s);
		uint32_t stream = (uint32_t)pick(s, 3);
		size_t ha = SIZE_MAX, hr = SIZE_MAX;
		enum alloc_status sa = alloc_sim_malloc_on(a, n, stream, &ha);

		assert_int_equal(sa, ref_sim_malloc_on(r, n, stream, &hr));
		if (sa == ALLOC_OK) {
			assert_int_equal(ha, hr);
			l->h[l->n] = ha;
			l->pend[l->n++] = false;
		}
	} else if (op < 98 && l->n && l->pend[k]) {
		alloc_sim_complete(a, l->h[k]);
		ref_sim_complete(r, l->h[k]);
		drop_live(l, k);
	} else if (op < 85 && l->n) {
		alloc_sim_release(a, l->h[k]);
		ref_sim_release(r, l->h[k]);
		drop_live(l, k);
	} else if (op < 98 && l->n) {
		alloc_sim_release_recorded(a, l->h[k]);
		ref_sim_release_recorded(r, l->h[k]);
		l->pend[k] = true;
	} else {
		alloc_sim_empty_cache(a);
		ref_sim_empty_cache(r);
		for (size_t i = l->n; i-- > 0;)
			if (l->pend[i])
				drop_live(l, i);	/* empty_cache completed them */
	}
}

static void test_sim_matches_reference(void **state)
{
	(void)state;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint64_t retried = 0, failed = 0, split_rest = 0;

	for (int trial = 0; trial < 300; trial++) {
		struct alloc_config cfg;
		struct alloc_sim a;
		struct ref_sim r;
		struct live l = { .n = 0 };

		random_config(&seed, &cfg);
		alloc_sim_init_cfg(&a, &cfg);
		ref_sim_init_cfg(&r, &cfg);
		for (int i = 0; i < 400; i++) {
			one_op(&seed, &a, &r, &l);
			same_state(&a, &r);
		}
		retried += a.retries;
		failed += a.ooms;
		split_rest += a.nfree;
		alloc_sim_free(&a);
		ref_sim_free(&r);
	}
	/* the streams did reach the paths under test */
	assert_true(retried > 0);
	assert_true(failed > 0);
	assert_true(split_rest > 0);
}

/* One step of random_trace: ntmp temporaries from the step's seed ss. */
static void random_step(struct alloc_trace *t, uint64_t ss, size_t ntmp)
{
	uint32_t tmp[24];

	alloc_trace_mark(t);
	for (size_t i = 0; i < ntmp; i++)
		tmp[i] = alloc_trace_alloc(t, random_size(&ss), (uint32_t)pick(&ss, 2));
	for (size_t i = 0; i < ntmp; i++) {
		uint64_t how = pick(&ss, 10);

		if (how == 0) {
			alloc_trace_release_recorded(t, tmp[i]);
			alloc_trace_complete(t, tmp[i]);
		} else {
			alloc_trace_release(t, tmp[i]);
		}
	}
	if (pick(&ss, 10) == 0)
		alloc_trace_empty_cache(t);
}

/* A trace of setup (tensors kept to the end) then steps, each the same
 * requests (so the replay may stop early), or, with `vary`, different ones. */
static void random_trace(uint64_t *s, struct alloc_trace *t, bool vary)
{
	size_t nkeep = 1 + (size_t)pick(s, 8), ntmp = 1 + (size_t)pick(s, 24);
	uint64_t step_seed = rng_next(s);

	for (size_t i = 0; i < nkeep; i++)
		alloc_trace_alloc(t, random_size(s), 0);
	for (int step = 0; step < 4; step++)
		random_step(t, vary ? rng_next(s) : step_seed, ntmp);
}

static void same_replay(const struct alloc_replay *x, const struct alloc_replay *y)
{
	assert_int_equal(x->peak_allocated, y->peak_allocated);
	assert_int_equal(x->peak_reserved, y->peak_reserved);
	assert_int_equal(x->steps, y->steps);
	assert_int_equal(x->setup_reserved, y->setup_reserved);
	assert_int_equal(x->step_requested, y->step_requested);
	assert_int_equal(x->retries, y->retries);
	assert_int_equal(x->oom, y->oom);
	assert_int_equal(x->oom_request, y->oom_request);
	assert_int_equal(x->oom_event, y->oom_event);
	assert_ptr_equal(x->oom_what, y->oom_what);
}

/* alloc_replay_written: the limited replay, and after an out-of-memory the
 * unlimited one continued from its copy, each as the reference replays it
 * from the start. */
static void test_replay_matches_reference(void **state)
{
	(void)state;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	size_t stopped_early = 0, resumed = 0;

	for (int trial = 0; trial < 400; trial++) {
		struct alloc_config cfg, unlimited;
		struct alloc_trace t = { 0 };
		struct alloc_replay x, w, y;

		random_config(&seed, &cfg);
		random_trace(&seed, &t, trial % 3 == 0);
		t.varies = trial % 5 == 0;
		assert_int_equal(alloc_replay_written(&t, &cfg, &x, &w), ref_replay(&t, &cfg, &y));
		same_replay(&x, &y);
		stopped_early += x.steps < t.nmarks;
		if (x.oom) {
			unlimited = cfg;
			unlimited.limit = 0;
			assert_int_equal(ref_replay(&t, &unlimited, &y), ALLOC_OK);
			same_replay(&w, &y);
			resumed++;
		}
		alloc_trace_free(&t);
	}
	assert_true(stopped_early > 0);
	assert_true(resumed > 0);
}

/* random_trace's steps made one at a time (alloc_more). */
struct lazy {
	struct alloc_trace *t;
	uint64_t seed;
	size_t ntmp;
	int made;
};

static bool lazy_step(void *ctx)
{
	struct lazy *z = ctx;

	if (z->made == 4)
		return false;
	z->made++;
	random_step(z->t, z->seed, z->ntmp);
	return true;
}

/* alloc_replay_steps on a trace made as the replay reaches its end: the
 * same figures as the reference's replay of the whole trace, limited and
 * (after an out-of-memory) unlimited, and no step made that neither
 * replay reached. */
static void test_lazy_steps_match_reference(void **state)
{
	(void)state;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t fewer = 0, resumed = 0;

	for (int trial = 0; trial < 400; trial++) {
		struct alloc_config cfg, unlimited;
		struct alloc_trace t = { 0 }, whole = { 0 };
		struct alloc_replay x, w, y;
		struct lazy z = { &t, 0, 0, 0 };
		struct alloc_more more = { lazy_step, &z };
		size_t nkeep, reached;

		random_config(&seed, &cfg);
		nkeep = 1 + (size_t)pick(&seed, 8);
		z.ntmp = 1 + (size_t)pick(&seed, 24);
		z.seed = rng_next(&seed);
		for (size_t i = 0; i < nkeep; i++) {
			uint64_t n = random_size(&seed);

			alloc_trace_alloc(&t, n, 0);
			alloc_trace_alloc(&whole, n, 0);
		}
		for (int step = 0; step < 4; step++)
			random_step(&whole, z.seed, z.ntmp);
		lazy_step(&z);	/* two steps made up front, as mem_replay_stage does */
		lazy_step(&z);
		assert_int_equal(alloc_replay_steps(&t, &more, &cfg, &x, &w), ref_replay(&whole, &cfg, &y));
		same_replay(&x, &y);
		if (x.oom) {
			unlimited = cfg;
			unlimited.limit = 0;
			assert_int_equal(ref_replay(&whole, &unlimited, &y), ALLOC_OK);
			same_replay(&w, &y);
			resumed++;
		}
		/* a step is made only where a replay went on into it */
		reached = x.steps > 2 ? x.steps : 2;
		if (x.oom && w.steps > reached)
			reached = w.steps;
		assert_int_equal(t.nmarks, reached);
		fewer += t.nmarks < 4;
		alloc_trace_free(&t);
		alloc_trace_free(&whole);
	}
	assert_true(fewer > 0);
	assert_true(resumed > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_matches_reference),
		cmocka_unit_test(test_replay_matches_reference),
		cmocka_unit_test(test_lazy_steps_match_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
