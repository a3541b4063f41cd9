/* SPDX-License-Identifier: MIT */
/*
 * alloc_ref.h - the reference for test_alloc_fast.c: analyzer/alloc/alloc.c's
 * simulation and replay as they were before they were made faster (commit
 * 63b5584: the free array's probes read each block's segment, malloc
 * searched its block twice, a replay out of memory started again from the
 * trace's start), renamed ref_*.  The fast code must agree with it on
 * every trace.  Only test_alloc_fast.c includes it.
 */
#ifndef MEMC_TESTS_ALLOC_REF_H
#define MEMC_TESTS_ALLOC_REF_H

#include "analyzer/alloc/alloc.h"

#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

struct ref_block {
	uint64_t segment;	/* segment id */
	uint64_t offset;	/* byte offset in the segment */
	uint64_t size;
	uint64_t freed_at;	/* get_free_block calls on the large pool when freed (gc age) */
	size_t prev, next;	/* neighbours in the segment; SIZE_MAX at an end */
	uint32_t stream;
	uint32_t owner;		/* the trace id it was handed to (alloc_replay) */
	enum alloc_pool pool;
	bool free;
	bool dead;		/* merged into a neighbour or released; slot reusable */
	bool pending;		/* freed, a use on another stream outstanding (record_stream) */
};

struct ref_segment {
	uint64_t size;		/* reserved bytes (mapped bytes of an expandable one) */
	uint32_t stream;
	enum alloc_pool pool;
	bool expandable;
	bool released;
	size_t tail;		/* expandable: the block at the end of the mapped range */
};

struct ref_sim {
	struct alloc_config cfg;
	struct ref_block *blocks;
	size_t nblocks, cap;
	size_t *freel;		/* the free blocks, sorted (what best fit searches) */
	size_t nfree, free_cap;
	size_t *spare;		/* dead slots to reuse */
	size_t nspare, spare_cap;
	struct ref_segment *segs;
	size_t nsegs, segs_cap;
	uint64_t gc_calls;	/* get_free_block calls on the large pool */
	uint64_t allocated, reserved;		/* current */
	uint64_t peak_allocated, peak_reserved;
	uint64_t retries;	/* cudaMalloc failures that freed the cache and retried */
	uint64_t ooms;
	uint64_t oom_request;	/* rounded size of the first request that failed */
};
static void ref_sim_init_cfg(struct ref_sim *sim, const struct alloc_config *cfg)
{
	memset(sim, 0, sizeof(*sim));
	if (cfg)
		sim->cfg = *cfg;
	else
		alloc_config_default(&sim->cfg);
}

static void ref_sim_free(struct ref_sim *sim)
{
	free(sim->blocks);
	free(sim->freel);
	free(sim->spare);
	free(sim->segs);
	memset(sim, 0, sizeof(*sim));
}

static void ref_sim_complete(struct ref_sim *sim, size_t handle);

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t nc;
	void *p;

	if (n < *cap)
		return true;
	nc = *cap ? *cap * 2 : 16;
	if (nc > SIZE_MAX / elem)
		return false;
	p = realloc(*arr, nc * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = nc;
	return true;
}

static bool push_block(struct ref_sim *sim, struct ref_block b, size_t *idx)
{
	if (sim->nspare) {
		*idx = sim->spare[--sim->nspare];
		sim->blocks[*idx] = b;
		return true;
	}
	if (!grow((void **)&sim->blocks, &sim->cap, sim->nblocks, sizeof(*sim->blocks)))
		return false;
	sim->blocks[sim->nblocks] = b;
	*idx = sim->nblocks++;
	return true;
}

/* A dead slot goes on the spare stack; the stack never outgrows the array. */
static void del_free(struct ref_sim *sim, size_t i);

static void kill_block(struct ref_sim *sim, size_t i)
{
	if (sim->blocks[i].free)
		del_free(sim, i);
	sim->blocks[i].dead = true;
	if (grow((void **)&sim->spare, &sim->spare_cap, sim->nspare, sizeof(size_t)))
		sim->spare[sim->nspare++] = i;
}

static bool is_tail(const struct ref_sim *sim, size_t i)
{
	const struct ref_segment *s = &sim->segs[sim->blocks[i].segment];

	return s->expandable && s->tail == i;
}

/* The free array's order: pool, stream, growable tail last, size, address. */
struct fkey {
	uint32_t pool, stream, tail;
	uint64_t size, segment, offset;
};

static struct fkey key_of(const struct ref_sim *sim, size_t i)
{
	const struct ref_block *b = &sim->blocks[i];
	struct fkey k = { (uint32_t)b->pool, b->stream, is_tail(sim, i), b->size, b->segment,
			  b->offset };

	return k;
}

static int cmp_key(const struct fkey *x, const struct fkey *y)
{
	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->tail != y->tail)
		return x->tail < y->tail ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->segment != y->segment)
		return x->segment < y->segment ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The first position whose block is not before k. */
static size_t lower_bound(const struct ref_sim *sim, const struct fkey *k)
{
	size_t lo = 0, hi = sim->nfree;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct fkey m = key_of(sim, sim->freel[mid]);

		if (cmp_key(&m, k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool add_free(struct ref_sim *sim, size_t i)
{
	struct fkey k = key_of(sim, i);
	size_t pos;

	if (!grow((void **)&sim->freel, &sim->free_cap, sim->nfree, sizeof(size_t)))
		return false;
	pos = lower_bound(sim, &k);
	memmove(&sim->freel[pos + 1], &sim->freel[pos], (sim->nfree - pos) * sizeof(size_t));
	sim->freel[pos] = i;
	sim->nfree++;
	sim->blocks[i].free = true;
	return true;
}

static void del_free(struct ref_sim *sim, size_t i)
{
	struct fkey k = key_of(sim, i);
	size_t pos = lower_bound(sim, &k);

	/* keys stay fixed while listed, so the search finds it; the scan is a guard */
	if (pos >= sim->nfree || sim->freel[pos] != i)
		for (pos = 0; pos < sim->nfree && sim->freel[pos] != i; pos++)
			;
	if (pos < sim->nfree) {
		memmove(&sim->freel[pos], &sim->freel[pos + 1], (sim->nfree - pos - 1) * sizeof(size_t));
		sim->nfree--;
	}
	sim->blocks[i].free = false;
}

/* Is block a before block b in the pool's (size, tail-last, address) order? */
static bool better(const struct ref_sim *sim, size_t a, size_t b)
{
	const struct ref_block *x = &sim->blocks[a], *y = &sim->blocks[b];
	bool ta = is_tail(sim, a), tb = is_tail(sim, b);

	/* an expandable tail counts as the size it can grow to (v2.5
	 * get_free_block): any other fitting block goes first */
	if (ta != tb)
		return tb;
	if (x->size != y->size)
		return x->size < y->size;
	if (x->segment != y->segment)
		return x->segment < y->segment;
	return x->offset < y->offset;
}

/* get_free_block: the first block of the stream's pool at least `size`
 * large (the growable tail only if no other fits), refused if the
 * oversize rules say so. */
static bool get_free_block(struct ref_sim *sim, uint64_t size, enum alloc_pool pool,
			   uint32_t stream, size_t *idx)
{
	uint64_t ms = sim->cfg.max_split_size;
	bool found = false;

	if (pool == ALLOC_POOL_LARGE)
		sim->gc_calls++;
	for (uint32_t tail = 0; tail < 2 && !found; tail++) {
		struct fkey k = { (uint32_t)pool, stream, tail, size, 0, 0 }, f;
		size_t pos = lower_bound(sim, &k);

		if (pos == sim->nfree)
			continue;
		f = key_of(sim, sim->freel[pos]);
		found = f.pool == k.pool && f.stream == stream && f.tail == tail;
		*idx = sim->freel[pos];
	}
	if (!found)
		return false;
	/* an oversize block is not split for a small request, and serves a
	 * large one only within kLargeBuffer of its size */
	if (size < ms && sim->blocks[*idx].size >= ms)
		return false;
	if (size >= ms && sim->blocks[*idx].size - size >= ALLOC_LARGE_BUF)
		return false;
	return true;
}

static bool should_split(const struct ref_sim *sim, size_t i, uint64_t size)
{
	const struct ref_block *b = &sim->blocks[i];
	uint64_t remaining = b->size - size;

	if (b->pool == ALLOC_POOL_SMALL || sim->segs[b->segment].expandable)
		return remaining >= ALLOC_MIN_BLOCK;
	return size < sim->cfg.max_split_size && remaining > ALLOC_SMALL_SIZE;
}

/* Saturating: a job this large already overflows the timeline's sums. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void add_reserved(struct ref_sim *sim, uint64_t n)
{
	sim->reserved = sat_add(sim->reserved, n);
	if (sim->reserved > sim->peak_reserved)
		sim->peak_reserved = sim->reserved;
}

static bool over_limit(const struct ref_sim *sim, uint64_t n)
{
	return sim->cfg.limit && (n > sim->cfg.limit || sim->reserved > sim->cfg.limit - n);
}

static bool new_segment(struct ref_sim *sim, uint32_t stream, enum alloc_pool pool,
			bool expandable, uint64_t size, size_t *seg)
{
	struct ref_segment s = { size, stream, pool, expandable, false, NONE };

	if (!grow((void **)&sim->segs, &sim->segs_cap, sim->nsegs, sizeof(*sim->segs)))
		return false;
	sim->segs[sim->nsegs] = s;
	*seg = sim->nsegs++;
	return true;
}

/* cudaMalloc of a whole segment for a rounded request. */
static enum alloc_status alloc_segment_block(struct ref_sim *sim, uint64_t size,
					     enum alloc_pool pool, uint32_t stream, size_t *idx)
{
	uint64_t n = alloc_segment_size(size);
	struct ref_block b = { 0, 0, n, 0, NONE, NONE, stream, 0, pool, false, false, false };
	size_t seg;

	if (over_limit(sim, n))
		return ALLOC_OOM;
	if (!new_segment(sim, stream, pool, false, n, &seg))
		return ALLOC_NOMEM;
	b.segment = seg;
	if (!push_block(sim, b, idx) || !add_free(sim, *idx))
		return ALLOC_NOMEM;
	add_reserved(sim, n);
	return ALLOC_OK;
}

static size_t find_expandable(const struct ref_sim *sim, enum alloc_pool pool, uint32_t stream)
{
	for (size_t i = 0; i < sim->nsegs; i++)
		if (sim->segs[i].expandable && sim->segs[i].pool == pool &&
		    sim->segs[i].stream == stream)
			return i;
	return NONE;
}

/* try_allocate_expandable_block: map pages (2 MiB small, 20 MiB large) at
 * the end of the stream's segment until its free tail holds the request. */
static enum alloc_status alloc_expandable(struct ref_sim *sim, uint64_t size,
					  enum alloc_pool pool, uint32_t stream, size_t *idx)
{
	uint64_t page = pool == ALLOC_POOL_SMALL ? ALLOC_SMALL_BUF : ALLOC_LARGE_BUF;
	size_t seg = find_expandable(sim, pool, stream);
	uint64_t have = 0, map;
	struct ref_segment *s;

	if (seg == NONE && !new_segment(sim, stream, pool, true, 0, &seg))
		return ALLOC_NOMEM;
	s = &sim->segs[seg];
	if (s->tail != NONE && sim->blocks[s->tail].free)
		have = sim->blocks[s->tail].size;
	map = have >= size ? 0 : (size - have + page - 1) / page * page;
	if ((have < size && map < size - have) || over_limit(sim, map))
		return ALLOC_OOM;
	if (have) {
		*idx = s->tail;
		del_free(sim, *idx);	/* its key changes */
		sim->blocks[*idx].size += map;
		if (!add_free(sim, *idx))
			return ALLOC_NOMEM;
	} else {
		struct ref_block b = { seg, s->size, map, 0, s->tail, NONE, stream, 0, pool,
					 false, false, false };

		if (!push_block(sim, b, idx))
			return ALLOC_NOMEM;
		s = &sim->segs[seg];
		if (s->tail != NONE)
			sim->blocks[s->tail].next = *idx;
		s->tail = *idx;
		if (!add_free(sim, *idx))
			return ALLOC_NOMEM;
	}
	s->size += map;
	add_reserved(sim, map);
	return ALLOC_OK;
}

static enum alloc_status alloc_block(struct ref_sim *sim, uint64_t size, enum alloc_pool pool,
				     uint32_t stream, size_t *idx)
{
	if (sim->cfg.expandable_segments)
		return alloc_expandable(sim, size, pool, stream, idx);
	return alloc_segment_block(sim, size, pool, stream, idx);
}

/* release_block: a whole free segment goes back to the driver. */
static void release_segment(struct ref_sim *sim, size_t i)
{
	struct ref_segment *s = &sim->segs[sim->blocks[i].segment];

	sim->reserved = sat_sub(sim->reserved, s->size);
	s->size = 0;
	s->released = true;
	kill_block(sim, i);
}

static bool whole_segment(const struct ref_sim *sim, size_t i)
{
	const struct ref_block *b = &sim->blocks[i];

	return !b->dead && b->free && b->prev == NONE && b->next == NONE &&
	       !sim->segs[b->segment].expandable;
}

/* Unmap the whole free pages at the end of an expandable segment. */
static void unmap_tail(struct ref_sim *sim, size_t seg)
{
	struct ref_segment *s = &sim->segs[seg];
	uint64_t page = s->pool == ALLOC_POOL_SMALL ? ALLOC_SMALL_BUF : ALLOC_LARGE_BUF;
	size_t t = s->tail;
	uint64_t keep, cut;

	if (t == NONE || !sim->blocks[t].free)
		return;
	keep = (sim->blocks[t].offset + page - 1) / page * page;
	cut = s->size - keep;
	if (!cut)
		return;
	sim->reserved = sat_sub(sim->reserved, cut);
	s->size = keep;
	del_free(sim, t);	/* its key changes */
	sim->blocks[t].size -= cut;
	if (sim->blocks[t].size) {
		add_free(sim, t);
		return;
	}
	s->tail = sim->blocks[t].prev;
	if (s->tail != NONE)
		sim->blocks[s->tail].next = NONE;
	kill_block(sim, t);
}

static void complete_all(struct ref_sim *sim)
{
	for (size_t i = 0; i < sim->nblocks; i++)
		if (sim->blocks[i].pending && !sim->blocks[i].dead)
			ref_sim_complete(sim, i);
}

/* release_cached_blocks: synchronize_and_free_events, then every whole
 * cached segment, both pools, all streams. */
static void ref_sim_empty_cache(struct ref_sim *sim)
{
	complete_all(sim);
	/* downwards: a removal moves the last entry, already visited, into k */
	for (size_t k = sim->nfree; k-- > 0;)
		if (k < sim->nfree && whole_segment(sim, sim->freel[k]))
			release_segment(sim, sim->freel[k]);
	for (size_t s = 0; s < sim->nsegs; s++)
		if (sim->segs[s].expandable)
			unmap_tail(sim, s);
}

/* release_available_cached_blocks: with max_split_size set, free the
 * smallest oversize cached block that covers the request, else the largest
 * ones until they add up to it. */
static bool release_oversize(struct ref_sim *sim, uint64_t size, enum alloc_pool pool,
			     uint32_t stream)
{
	uint64_t ms = sim->cfg.max_split_size, key = size < ms ? ms : size, freed = 0;

	if (ms == ALLOC_NO_SPLIT_LIMIT)
		return false;
	for (;;) {
		size_t best = NONE, big = NONE;

		for (size_t f = 0; f < sim->nfree; f++) {
			size_t i = sim->freel[f];
			const struct ref_block *b = &sim->blocks[i];

			if (!whole_segment(sim, i) || b->pool != pool || b->stream != stream ||
			    b->size < ms)
				continue;
			if (b->size >= key && (best == NONE || better(sim, i, best)))
				best = i;
			if (big == NONE || better(sim, big, i))
				big = i;
		}
		if (best != NONE && freed == 0) {
			release_segment(sim, best);
			return true;
		}
		if (big == NONE || freed >= key)
			return freed >= key;
		freed += sim->blocks[big].size;
		release_segment(sim, big);
	}
}

/* garbage_collect_cached_blocks: above threshold x limit, release whole
 * cached large segments whose age (get_free_block calls since their free) is
 * at least the average, until reserved is back under the threshold. */
static bool gc_candidate(const struct ref_sim *sim, size_t i)
{
	return whole_segment(sim, i) && sim->blocks[i].pool == ALLOC_POOL_LARGE;
}

/* One pass: every candidate at least `age` old, in the pool's (size,
 * address) order, as PyTorch walks it. */
static bool release_aged(struct ref_sim *sim, double age, uint64_t *got)
{
	bool freed = false;

	for (;;) {
		size_t pick = NONE;

		for (size_t f = 0; f < sim->nfree; f++) {
			size_t i = sim->freel[f];

			if (gc_candidate(sim, i) &&
			    (double)(sim->gc_calls - sim->blocks[i].freed_at) >= age &&
			    (pick == NONE || better(sim, i, pick)))
				pick = i;
		}
		if (pick == NONE)
			return freed;
		*got += sim->blocks[pick].size;
		release_segment(sim, pick);
		freed = true;
	}
}

static void garbage_collect(struct ref_sim *sim)
{
	uint64_t gc = (uint64_t)(sim->cfg.gc_threshold * (double)sim->cfg.limit), target, got = 0;
	bool freed = true;

	if (sim->cfg.gc_threshold <= 0.0 || !sim->cfg.limit || sim->reserved <= gc)
		return;
	target = sim->reserved - gc;
	while (got < target && freed) {
		double age = 0.0;
		size_t n = 0;

		for (size_t f = 0; f < sim->nfree; f++)
			if (gc_candidate(sim, sim->freel[f])) {
				age += (double)(sim->gc_calls - sim->blocks[sim->freel[f]].freed_at);
				n++;
			}
		if (!n)
			return;
		freed = release_aged(sim, age / (double)n, &got);
	}
}

/* malloc's slow path: a new segment; on failure free cached blocks and retry. */
static enum alloc_status slow_path(struct ref_sim *sim, uint64_t size, enum alloc_pool pool,
				   uint32_t stream, size_t *idx)
{
	enum alloc_status st;

	garbage_collect(sim);
	st = alloc_block(sim, size, pool, stream, idx);
	if (st != ALLOC_OOM)
		return st;
	if (release_oversize(sim, size, pool, stream)) {
		st = alloc_block(sim, size, pool, stream, idx);
		if (st != ALLOC_OOM)
			return st;
	}
	ref_sim_empty_cache(sim);
	sim->retries++;
	return alloc_block(sim, size, pool, stream, idx);
}

static bool split(struct ref_sim *sim, size_t idx, uint64_t size)
{
	struct ref_block rest = sim->blocks[idx];
	size_t r;

	rest.offset += size;
	rest.size -= size;
	rest.prev = idx;
	rest.free = false;
	if (!push_block(sim, rest, &r))
		return false;
	if (rest.next != NONE)
		sim->blocks[rest.next].prev = r;
	if (is_tail(sim, idx))
		sim->segs[rest.segment].tail = r;
	sim->blocks[idx].next = r;
	sim->blocks[idx].size = size;
	return add_free(sim, r);
}

static enum alloc_status ref_sim_malloc_on(struct ref_sim *sim, uint64_t n, uint32_t stream,
				      size_t *handle)
{
	uint64_t size = alloc_round_size_cfg(&sim->cfg, n);
	enum alloc_pool pool = alloc_pool_of(size);
	enum alloc_status st = ALLOC_OK;
	size_t idx = 0;

	if (!get_free_block(sim, size, pool, stream, &idx))
		st = slow_path(sim, size, pool, stream, &idx);
	if (st == ALLOC_OOM) {
		if (!sim->ooms++)
			sim->oom_request = size;
		return st;
	}
	if (st != ALLOC_OK)
		return st;
	del_free(sim, idx);	/* before a split changes its key */
	if (should_split(sim, idx, size) && !split(sim, idx, size))
		return ALLOC_NOMEM;
	/* allocated grows by the block size, unsplit remainder included */
	sim->allocated = sat_add(sim->allocated, sim->blocks[idx].size);
	if (sim->allocated > sim->peak_allocated)
		sim->peak_allocated = sim->allocated;
	*handle = idx;
	return ALLOC_OK;
}

/* Merge the free neighbour j into block i (j is prev or next of i; i is
 * not in the free array yet). */
static void merge(struct ref_sim *sim, size_t i, size_t j)
{
	struct ref_block *a = &sim->blocks[i], b;
	bool jtail;

	if (j == NONE || !sim->blocks[j].free)
		return;
	b = sim->blocks[j];
	jtail = is_tail(sim, j);
	kill_block(sim, j);	/* out of the free array while its key holds */
	if (a->prev == j) {
		a->offset = b.offset;
		a->prev = b.prev;
		if (a->prev != NONE)
			sim->blocks[a->prev].next = i;
	} else {
		a->next = b.next;
		if (a->next != NONE)
			sim->blocks[a->next].prev = i;
		if (jtail)
			sim->segs[a->segment].tail = i;
	}
	a->size += b.size;
}

/* free_block: coalesce with free neighbours, back into the pool. */
static void free_block(struct ref_sim *sim, size_t handle)
{
	sim->blocks[handle].pending = false;
	merge(sim, handle, sim->blocks[handle].prev);
	merge(sim, handle, sim->blocks[handle].next);
	add_free(sim, handle);
}

/* A live block: not free, not pending, not merged away. */
static struct ref_block *live_block(struct ref_sim *sim, size_t handle)
{
	struct ref_block *b = handle < sim->nblocks ? &sim->blocks[handle] : NULL;

	return b && !b->dead && !b->free && !b->pending ? b : NULL;
}

/* What every free() does first: the allocated statistic drops at once
 * (decrease_stat); NULL for a handle that is not a live block. */
static struct ref_block *released(struct ref_sim *sim, size_t handle)
{
	struct ref_block *b = live_block(sim, handle);

	if (b) {
		b->freed_at = sim->gc_calls;
		sim->allocated = sat_sub(sim->allocated, b->size);
	}
	return b;
}

static void ref_sim_release(struct ref_sim *sim, size_t handle)
{
	if (released(sim, handle))
		free_block(sim, handle);
}

/* free() with stream_uses: the statistic drops before insert_events, the
 * block waits for its events. */
static void ref_sim_release_recorded(struct ref_sim *sim, size_t handle)
{
	struct ref_block *b = released(sim, handle);

	if (b)
		b->pending = true;
}

/* process_events: the block's last event has completed. */
static void ref_sim_complete(struct ref_sim *sim, size_t handle)
{
	if (handle < sim->nblocks && sim->blocks[handle].pending && !sim->blocks[handle].dead)
		free_block(sim, handle);
}

/* At mark k >= 2: did step k - 1 leave peak reserved unchanged? */
static bool steady(const struct alloc_trace *t, size_t i, size_t *k, uint64_t *at, uint64_t peak,
		   struct alloc_replay *out)
{
	bool stop = false;

	while (*k < t->nmarks && t->marks[*k] == i) {
		if (*k == 0 && peak > out->setup_reserved)
			out->setup_reserved = peak;
		stop |= !t->varies && *k >= 2 && peak == *at;
		*at = peak;
		++*k;
	}
	return stop;
}

/* One event of the trace; an out-of-memory is noted in `out`. */
static enum alloc_status replay_event(struct ref_sim *sim, const struct alloc_trace *t, size_t i,
				      size_t *handle, struct alloc_replay *out)
{
	const struct alloc_event *e = &t->ev[i];
	enum alloc_status st;

	if (!e->size) {
		if (e->op == ALLOC_OP_EMPTY_CACHE) {
			/* the peak statistics restart from what is left
			 * (fsdp_qlora: reset_peak_memory_stats() before the
			 * loop, nothing emptied between); loading's own peak
			 * stays the setup figure */
			if (sim->peak_reserved > out->setup_reserved)
				out->setup_reserved = sim->peak_reserved;
			ref_sim_empty_cache(sim);
			sim->peak_reserved = sim->reserved;
			sim->peak_allocated = sim->allocated;
		} else if (e->op == ALLOC_OP_FREE_RECORDED)
			ref_sim_release_recorded(sim, handle[e->id]);
		else if (e->op == ALLOC_OP_COMPLETE) {
			/* empty_cache may have completed it, and its slot serve another */
			if (handle[e->id] < sim->nblocks && sim->blocks[handle[e->id]].owner == e->id)
				ref_sim_complete(sim, handle[e->id]);
		}
		else
			ref_sim_release(sim, handle[e->id]);
		return ALLOC_OK;
	}
	st = ref_sim_malloc_on(sim, e->size, e->stream, &handle[e->id]);
	if (st == ALLOC_OK)
		sim->blocks[handle[e->id]].owner = e->id;
	if (st == ALLOC_OOM) {
		out->oom = true;
		out->oom_request = sim->oom_request;
		out->oom_event = i;
		out->oom_what = e->what;
	}
	return st;
}

static enum alloc_status ref_replay(const struct alloc_trace *t, const struct alloc_config *cfg,
			       struct alloc_replay *out)
{
	struct ref_sim sim;
	size_t *handle = t->nids ? malloc((size_t)t->nids * sizeof(size_t)) : NULL;
	enum alloc_status st = ALLOC_OK;
	size_t k = 0;
	uint64_t at = 0;

	memset(out, 0, sizeof(*out));
	if (t->nomem || (t->nids && !handle)) {
		free(handle);
		return ALLOC_NOMEM;
	}
	ref_sim_init_cfg(&sim, cfg);
	for (size_t i = 0; i < t->n && st == ALLOC_OK; i++) {
		if (steady(t, i, &k, &at, sim.peak_reserved, out)) {
			k--;	/* the step at this mark is not replayed */
			break;
		}
		st = replay_event(&sim, t, i, handle, out);
	}
	out->steps = k;
	out->peak_allocated = sim.peak_allocated;
	if (!alloc_trace_step_peak(t, &out->step_requested))
		st = ALLOC_NOMEM;
	out->peak_reserved = sim.peak_reserved;
	out->retries = sim.retries;
	ref_sim_free(&sim);
	free(handle);
	return st == ALLOC_NOMEM ? ALLOC_NOMEM : ALLOC_OK;
}

#endif /* MEMC_TESTS_ALLOC_REF_H */
