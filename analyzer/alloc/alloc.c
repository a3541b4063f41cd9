/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - size rules of the CUDA caching allocator and a replay of it.
 *
 * The rules follow pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp v2.5
 * (memory-model.md §5.3.1, §5.4).  Blocks live in one array whose dead slots
 * are reused; each block links to its neighbours in its segment, so a free
 * merges in O(1).  The free blocks are one array sorted like the
 * allocator's BlockPool set, by (pool, stream, size, address) with an
 * expandable segment's growable tail after the others, so best fit is a
 * binary search; a block's key never changes while it is in the array.
 *
 * Simplifications (stated in §5.4): an expandable segment is one mapped
 * prefix per (stream, pool); empty_cache unmaps only the free pages at its
 * end, not free pages between live blocks.  A block freed after
 * record_stream() is pending until the trace says the other stream's use
 * completed (the allocator learns it from cudaEventQuery in process_events,
 * which memc cannot time); empty_cache and the retry path wait for every
 * pending block first, as synchronize_and_free_events() does.  CUDA-graph
 * private pools are not modelled.
 */
#include "analyzer/alloc/alloc.h"

#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

void alloc_config_default(struct alloc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_split_size = ALLOC_NO_SPLIT_LIMIT;
}

uint64_t alloc_round_size(uint64_t n)
{
	/* §5.3.1: n < 512 -> 512, else 512 * ceil(n / 512) */
	if (n < ALLOC_MIN_BLOCK)
		return ALLOC_MIN_BLOCK;
	if (n > UINT64_MAX - (ALLOC_MIN_BLOCK - 1))
		return UINT64_MAX - (UINT64_MAX % ALLOC_MIN_BLOCK);
	return (n + ALLOC_MIN_BLOCK - 1) / ALLOC_MIN_BLOCK * ALLOC_MIN_BLOCK;
}

static uint64_t floor_pow2(uint64_t n)
{
	return n ? (uint64_t)1 << (63 - __builtin_clzll(n)) : 0;
}

/* roundup_power2_next_division(): the next of `div` equal steps between the
 * power of two below n and the one above. */
static uint64_t next_division(uint64_t n, uint32_t div)
{
	uint64_t p2 = floor_pow2(n), step;

	if (p2 == n)
		return n;
	step = p2 >> (31 - __builtin_clz(div));
	if (step == 0)
		return p2 > UINT64_MAX / 2 ? p2 : p2 << 1;
	if ((n & ~(step - 1)) == n)
		return n;
	return (n & ~(step - 1)) > UINT64_MAX - step ? n : (n & ~(step - 1)) + step;
}

uint64_t alloc_round_size_cfg(const struct alloc_config *cfg, uint64_t n)
{
	uint32_t d = cfg ? cfg->roundup_power2_divisions : 0;

	if (n >= ALLOC_MIN_BLOCK && d > 1 && n > (uint64_t)ALLOC_MIN_BLOCK * d)
		return next_division(n, d);
	return alloc_round_size(n);
}

enum alloc_pool alloc_pool_of(uint64_t size)
{
	return size <= ALLOC_SMALL_SIZE ? ALLOC_POOL_SMALL : ALLOC_POOL_LARGE;
}

uint64_t alloc_segment_size(uint64_t size)
{
	/* §5.3.1 get_allocation_size */
	if (size <= ALLOC_SMALL_SIZE)
		return ALLOC_SMALL_BUF;
	if (size < ALLOC_MIN_LARGE)
		return ALLOC_LARGE_BUF;
	if (size > UINT64_MAX - (ALLOC_ROUND_LARGE - 1))
		return UINT64_MAX - (UINT64_MAX % ALLOC_ROUND_LARGE);
	return (size + ALLOC_ROUND_LARGE - 1) / ALLOC_ROUND_LARGE * ALLOC_ROUND_LARGE;
}

void alloc_sim_init_cfg(struct alloc_sim *sim, const struct alloc_config *cfg)
{
	memset(sim, 0, sizeof(*sim));
	if (cfg)
		sim->cfg = *cfg;
	else
		alloc_config_default(&sim->cfg);
}

void alloc_sim_init(struct alloc_sim *sim)
{
	alloc_sim_init_cfg(sim, NULL);
}

void alloc_sim_free(struct alloc_sim *sim)
{
	free(sim->blocks);
	free(sim->freel);
	free(sim->spare);
	free(sim->segs);
	memset(sim, 0, sizeof(*sim));
}

bool alloc_grow(void **arr, size_t *cap, size_t n, size_t elem)
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

static bool push_block(struct alloc_sim *sim, struct alloc_block b, size_t *idx)
{
	if (sim->nspare) {
		*idx = sim->spare[--sim->nspare];
		sim->blocks[*idx] = b;
		return true;
	}
	if (!alloc_grow((void **)&sim->blocks, &sim->cap, sim->nblocks, sizeof(*sim->blocks)))
		return false;
	sim->blocks[sim->nblocks] = b;
	*idx = sim->nblocks++;
	return true;
}

/* A dead slot goes on the spare stack; the stack never outgrows the array. */
static void del_free(struct alloc_sim *sim, size_t i);

static void kill_block(struct alloc_sim *sim, size_t i)
{
	if (sim->blocks[i].free)
		del_free(sim, i);
	sim->blocks[i].dead = true;
	if (alloc_grow((void **)&sim->spare, &sim->spare_cap, sim->nspare, sizeof(size_t)))
		sim->spare[sim->nspare++] = i;
}

static bool is_tail(const struct alloc_sim *sim, size_t i)
{
	const struct alloc_segment *s = &sim->segs[sim->blocks[i].segment];

	return s->expandable && s->tail == i;
}

/* The free array's order: pool, stream, growable tail last, size, address
 * (a key is fixed while its block is listed). */
static uint64_t class_of(enum alloc_pool pool, uint32_t stream, bool tail)
{
	return (uint64_t)pool << 33 | (uint64_t)stream << 1 | (uint64_t)tail;
}

/* What a search looks for: a block's place in the order. */
struct fkey {
	uint64_t cls, size, segment, offset;
};

static struct fkey key_of(const struct alloc_sim *sim, size_t i)
{
	const struct alloc_block *b = &sim->blocks[i];
	struct fkey k = { class_of(b->pool, b->stream, is_tail(sim, i)), b->size, b->segment,
			  b->offset };

	return k;
}

/* Is listed block i before k?  Its class was stored when it was listed. */
static bool before(const struct alloc_sim *sim, size_t i, const struct fkey *k)
{
	const struct alloc_block *b = &sim->blocks[i];

	if (b->cls != k->cls)
		return b->cls < k->cls;
	if (b->size != k->size)
		return b->size < k->size;
	if (b->segment != k->segment)
		return b->segment < k->segment;
	return b->offset < k->offset;
}

/* The first position whose block is not before k. */
static size_t lower_bound(const struct alloc_sim *sim, const struct fkey *k)
{
	const size_t *f = sim->freel;
	size_t lo = 0, n = sim->nfree;

	while (n) {
		size_t half = n / 2;

		if (before(sim, f[lo + half], k)) {
			lo += half + 1;
			n -= half + 1;
		} else {
			n = half;
		}
	}
	return lo;
}

static bool add_free(struct alloc_sim *sim, size_t i)
{
	struct fkey k = key_of(sim, i);
	size_t pos;

	if (!alloc_grow((void **)&sim->freel, &sim->free_cap, sim->nfree, sizeof(*sim->freel)))
		return false;
	pos = lower_bound(sim, &k);
	memmove(&sim->freel[pos + 1], &sim->freel[pos], (sim->nfree - pos) * sizeof(*sim->freel));
	sim->freel[pos] = i;
	sim->nfree++;
	sim->blocks[i].free = true;
	sim->blocks[i].cls = k.cls;
	return true;
}

/* Unlist block i, found at `pos` if the caller knows where (else NONE). */
static void del_free_at(struct alloc_sim *sim, size_t i, size_t pos)
{
	struct fkey k;

	if (pos >= sim->nfree || sim->freel[pos] != i) {
		k = key_of(sim, i);
		pos = lower_bound(sim, &k);
	}
	/* keys stay fixed while listed, so the search finds it; the scan is a guard */
	if (pos >= sim->nfree || sim->freel[pos] != i)
		for (pos = 0; pos < sim->nfree && sim->freel[pos] != i; pos++)
			;
	if (pos < sim->nfree) {
		memmove(&sim->freel[pos], &sim->freel[pos + 1],
			(sim->nfree - pos - 1) * sizeof(*sim->freel));
		sim->nfree--;
	}
	sim->blocks[i].free = false;
}

static void del_free(struct alloc_sim *sim, size_t i)
{
	del_free_at(sim, i, NONE);
}

/* Is block a before block b in the pool's (size, tail-last, address) order? */
static bool better(const struct alloc_sim *sim, size_t a, size_t b)
{
	const struct alloc_block *x = &sim->blocks[a], *y = &sim->blocks[b];
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
static bool get_free_block(struct alloc_sim *sim, uint64_t size, enum alloc_pool pool,
			   uint32_t stream, size_t *idx, size_t *at)
{
	uint64_t ms = sim->cfg.max_split_size;
	bool found = false;

	if (pool == ALLOC_POOL_LARGE)
		sim->gc_calls++;
	for (uint32_t tail = 0; tail < 2 && !found; tail++) {
		struct fkey k = { class_of(pool, stream, tail), size, 0, 0 };
		size_t pos = lower_bound(sim, &k);

		if (pos == sim->nfree)
			continue;
		found = sim->blocks[sim->freel[pos]].cls == k.cls;
		*idx = sim->freel[pos];
		*at = pos;
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

static bool should_split(const struct alloc_sim *sim, size_t i, uint64_t size)
{
	const struct alloc_block *b = &sim->blocks[i];
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

static void add_reserved(struct alloc_sim *sim, uint64_t n)
{
	sim->reserved = sat_add(sim->reserved, n);
	if (sim->reserved > sim->peak_reserved)
		sim->peak_reserved = sim->reserved;
}

static bool over_limit(const struct alloc_sim *sim, uint64_t n)
{
	return sim->cfg.limit && (n > sim->cfg.limit || sim->reserved > sim->cfg.limit - n);
}

static bool new_segment(struct alloc_sim *sim, uint32_t stream, enum alloc_pool pool,
			bool expandable, uint64_t size, size_t *seg)
{
	struct alloc_segment s = { size, stream, pool, expandable, false, NONE };

	if (!alloc_grow((void **)&sim->segs, &sim->segs_cap, sim->nsegs, sizeof(*sim->segs)))
		return false;
	sim->segs[sim->nsegs] = s;
	*seg = sim->nsegs++;
	return true;
}

/* cudaMalloc of a whole segment for a rounded request. */
static enum alloc_status alloc_segment_block(struct alloc_sim *sim, uint64_t size,
					     enum alloc_pool pool, uint32_t stream, size_t *idx)
{
	uint64_t n = alloc_segment_size(size);
	struct alloc_block b = { .size = n, .prev = NONE, .next = NONE, .stream = stream,
				 .pool = pool };
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

static size_t find_expandable(const struct alloc_sim *sim, enum alloc_pool pool, uint32_t stream)
{
	for (size_t i = 0; i < sim->nsegs; i++)
		if (sim->segs[i].expandable && sim->segs[i].pool == pool &&
		    sim->segs[i].stream == stream)
			return i;
	return NONE;
}

/* try_allocate_expandable_block: map pages (2 MiB small, 20 MiB large) at
 * the end of the stream's segment until its free tail holds the request. */
static enum alloc_status alloc_expandable(struct alloc_sim *sim, uint64_t size,
					  enum alloc_pool pool, uint32_t stream, size_t *idx)
{
	uint64_t page = pool == ALLOC_POOL_SMALL ? ALLOC_SMALL_BUF : ALLOC_LARGE_BUF;
	size_t seg = find_expandable(sim, pool, stream);
	uint64_t have = 0, map;
	struct alloc_segment *s;

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
		struct alloc_block b = { .segment = seg, .offset = s->size, .size = map,
					 .prev = s->tail, .next = NONE, .stream = stream, .pool = pool };

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

static enum alloc_status alloc_block(struct alloc_sim *sim, uint64_t size, enum alloc_pool pool,
				     uint32_t stream, size_t *idx)
{
	if (sim->cfg.expandable_segments)
		return alloc_expandable(sim, size, pool, stream, idx);
	return alloc_segment_block(sim, size, pool, stream, idx);
}

/* release_block: a whole free segment goes back to the driver. */
static void release_segment(struct alloc_sim *sim, size_t i)
{
	struct alloc_segment *s = &sim->segs[sim->blocks[i].segment];

	sim->reserved = sat_sub(sim->reserved, s->size);
	s->size = 0;
	s->released = true;
	kill_block(sim, i);
}

static bool whole_segment(const struct alloc_sim *sim, size_t i)
{
	const struct alloc_block *b = &sim->blocks[i];

	return !b->dead && b->free && b->prev == NONE && b->next == NONE &&
	       !sim->segs[b->segment].expandable;
}

/* Unmap the whole free pages at the end of an expandable segment. */
static void unmap_tail(struct alloc_sim *sim, size_t seg)
{
	struct alloc_segment *s = &sim->segs[seg];
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

static void complete_all(struct alloc_sim *sim)
{
	for (size_t i = 0; i < sim->nblocks; i++)
		if (sim->blocks[i].pending && !sim->blocks[i].dead)
			alloc_sim_complete(sim, i);
}

/* release_cached_blocks: synchronize_and_free_events, then every whole
 * cached segment, both pools, all streams. */
void alloc_sim_empty_cache(struct alloc_sim *sim)
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
static bool release_oversize(struct alloc_sim *sim, uint64_t size, enum alloc_pool pool,
			     uint32_t stream)
{
	uint64_t ms = sim->cfg.max_split_size, key = size < ms ? ms : size, freed = 0;

	if (ms == ALLOC_NO_SPLIT_LIMIT)
		return false;
	for (;;) {
		size_t best = NONE, big = NONE;

		for (size_t f = 0; f < sim->nfree; f++) {
			size_t i = sim->freel[f];
			const struct alloc_block *b = &sim->blocks[i];

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
static bool gc_candidate(const struct alloc_sim *sim, size_t i)
{
	return whole_segment(sim, i) && sim->blocks[i].pool == ALLOC_POOL_LARGE;
}

/* One pass: every candidate at least `age` old, in the pool's (size,
 * address) order, as PyTorch walks it. */
static bool release_aged(struct alloc_sim *sim, double age, uint64_t *got)
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

static void garbage_collect(struct alloc_sim *sim)
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
static enum alloc_status slow_path(struct alloc_sim *sim, uint64_t size, enum alloc_pool pool,
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
	alloc_sim_empty_cache(sim);
	sim->retries++;
	return alloc_block(sim, size, pool, stream, idx);
}

static bool split(struct alloc_sim *sim, size_t idx, uint64_t size)
{
	struct alloc_block rest = sim->blocks[idx];
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

enum alloc_status alloc_sim_malloc_on(struct alloc_sim *sim, uint64_t n, uint32_t stream,
				      size_t *handle)
{
	uint64_t size = alloc_round_size_cfg(&sim->cfg, n);
	enum alloc_pool pool = alloc_pool_of(size);
	enum alloc_status st = ALLOC_OK;
	size_t idx = 0, at = NONE;

	/* the fast path knows where its block is listed; a new one is searched */
	if (!get_free_block(sim, size, pool, stream, &idx, &at)) {
		at = NONE;
		st = slow_path(sim, size, pool, stream, &idx);
	}
	if (st == ALLOC_OOM) {
		if (!sim->ooms++)
			sim->oom_request = size;
		return st;
	}
	if (st != ALLOC_OK)
		return st;
	del_free_at(sim, idx, at);	/* before a split changes its key */
	if (should_split(sim, idx, size) && !split(sim, idx, size))
		return ALLOC_NOMEM;
	/* allocated grows by the block size, unsplit remainder included */
	sim->allocated = sat_add(sim->allocated, sim->blocks[idx].size);
	if (sim->allocated > sim->peak_allocated)
		sim->peak_allocated = sim->allocated;
	*handle = idx;
	return ALLOC_OK;
}

bool alloc_sim_malloc(struct alloc_sim *sim, uint64_t n, size_t *handle)
{
	return alloc_sim_malloc_on(sim, n, 0, handle) == ALLOC_OK;
}

/* Merge the free neighbour j into block i (j is prev or next of i; i is
 * not in the free array yet). */
static void merge(struct alloc_sim *sim, size_t i, size_t j)
{
	struct alloc_block *a = &sim->blocks[i], b;
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
static void free_block(struct alloc_sim *sim, size_t handle)
{
	sim->blocks[handle].pending = false;
	merge(sim, handle, sim->blocks[handle].prev);
	merge(sim, handle, sim->blocks[handle].next);
	add_free(sim, handle);
}

/* A live block: not free, not pending, not merged away. */
static struct alloc_block *live_block(struct alloc_sim *sim, size_t handle)
{
	struct alloc_block *b = handle < sim->nblocks ? &sim->blocks[handle] : NULL;

	return b && !b->dead && !b->free && !b->pending ? b : NULL;
}

/* What every free() does first: the allocated statistic drops at once
 * (decrease_stat); NULL for a handle that is not a live block. */
static struct alloc_block *released(struct alloc_sim *sim, size_t handle)
{
	struct alloc_block *b = live_block(sim, handle);

	if (b) {
		b->freed_at = sim->gc_calls;
		sim->allocated = sat_sub(sim->allocated, b->size);
	}
	return b;
}

void alloc_sim_release(struct alloc_sim *sim, size_t handle)
{
	if (released(sim, handle))
		free_block(sim, handle);
}

/* free() with stream_uses: the statistic drops before insert_events, the
 * block waits for its events. */
void alloc_sim_release_recorded(struct alloc_sim *sim, size_t handle)
{
	struct alloc_block *b = released(sim, handle);

	if (b)
		b->pending = true;
}

/* process_events: the block's last event has completed. */
void alloc_sim_complete(struct alloc_sim *sim, size_t handle)
{
	if (handle < sim->nblocks && sim->blocks[handle].pending && !sim->blocks[handle].dead)
		free_block(sim, handle);
}

static bool copy_array(void **dst, const void *src, size_t n, size_t elem)
{
	*dst = NULL;
	if (!n)
		return true;
	*dst = malloc(n * elem);	/* n * elem was allocated once: no overflow */
	if (*dst)
		memcpy(*dst, src, n * elem);
	return *dst != NULL;
}

bool alloc_sim_clone(struct alloc_sim *dst, const struct alloc_sim *src)
{
	bool ok;

	*dst = *src;
	ok = copy_array((void **)&dst->blocks, src->blocks, src->cap, sizeof(*src->blocks));
	ok &= copy_array((void **)&dst->freel, src->freel, src->free_cap, sizeof(*src->freel));
	ok &= copy_array((void **)&dst->spare, src->spare, src->spare_cap, sizeof(*src->spare));
	ok &= copy_array((void **)&dst->segs, src->segs, src->segs_cap, sizeof(*src->segs));
	if (!ok)
		alloc_sim_free(dst);
	return ok;
}
