/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - size rules of the CUDA caching allocator and a small simulation.
 *
 * The rules follow pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp as
 * summarised in memory-model.md §5.3.1 (round_size, get_allocation_size, the
 * split conditions of the small and large pools).  Blocks live in one array in
 * creation order; a block's neighbours are found by a linear scan over its
 * segment, which is plenty for test-sized traces ("simple beats clever").
 */
#include "analyzer/alloc.h"

#include <stdlib.h>
#include <string.h>

uint64_t alloc_round_size(uint64_t n)
{
	/* §5.3.1: n < 512 -> 512, else 512 * ceil(n / 512) */
	if (n < ALLOC_MIN_BLOCK)
		return ALLOC_MIN_BLOCK;
	if (n > UINT64_MAX - (ALLOC_MIN_BLOCK - 1))
		return UINT64_MAX - (UINT64_MAX % ALLOC_MIN_BLOCK);
	return (n + ALLOC_MIN_BLOCK - 1) / ALLOC_MIN_BLOCK * ALLOC_MIN_BLOCK;
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

void alloc_sim_init(struct alloc_sim *sim)
{
	memset(sim, 0, sizeof(*sim));
}

void alloc_sim_free(struct alloc_sim *sim)
{
	free(sim->blocks);
	memset(sim, 0, sizeof(*sim));
}

static bool push_block(struct alloc_sim *sim, struct alloc_block b, size_t *idx)
{
	if (sim->nblocks == sim->cap) {
		size_t cap = sim->cap ? sim->cap * 2 : 16;
		struct alloc_block *nb = realloc(sim->blocks, cap * sizeof(*nb));

		if (!nb)
			return false;
		sim->blocks = nb;
		sim->cap = cap;
	}
	sim->blocks[sim->nblocks] = b;
	*idx = sim->nblocks++;
	return true;
}

/* Best fit: the smallest free block of the pool that is large enough; ties go
 * to the older block, like the allocator's ordered set keyed by (size, ptr). */
static bool find_best(const struct alloc_sim *sim, uint64_t size, enum alloc_pool pool,
		      size_t *idx)
{
	bool found = false;

	for (size_t i = 0; i < sim->nblocks; i++) {
		const struct alloc_block *b = &sim->blocks[i];

		if (b->dead || !b->free || b->pool != pool || b->size < size)
			continue;
		if (!found || b->size < sim->blocks[*idx].size) {
			*idx = i;
			found = true;
		}
	}
	return found;
}

static bool should_split(const struct alloc_block *b, uint64_t size)
{
	uint64_t remaining = b->size - size;

	/* small pool: any remainder of a whole block; large pool: > 1 MiB */
	if (b->pool == ALLOC_POOL_SMALL)
		return remaining >= ALLOC_MIN_BLOCK;
	return remaining > ALLOC_SMALL_SIZE;
}

static bool new_segment(struct alloc_sim *sim, uint64_t size, enum alloc_pool pool, size_t *idx)
{
	uint64_t seg = alloc_segment_size(size);
	struct alloc_block b = { sim->nsegments++, 0, seg, pool, true, false };

	if (!push_block(sim, b, idx))
		return false;
	sim->reserved += seg;
	if (sim->reserved > sim->peak_reserved)
		sim->peak_reserved = sim->reserved;
	return true;
}

bool alloc_sim_malloc(struct alloc_sim *sim, uint64_t n, size_t *handle)
{
	uint64_t size = alloc_round_size(n);
	enum alloc_pool pool = alloc_pool_of(size);
	size_t idx = 0;

	if (!find_best(sim, size, pool, &idx) && !new_segment(sim, size, pool, &idx))
		return false;
	if (should_split(&sim->blocks[idx], size)) {
		struct alloc_block rest = sim->blocks[idx];
		size_t ridx;

		rest.offset += size;
		rest.size -= size;
		if (!push_block(sim, rest, &ridx))
			return false;
		sim->blocks[idx].size = size;
	}
	sim->blocks[idx].free = false;
	/* allocated grows by the block size, unsplit remainder included */
	sim->allocated += sim->blocks[idx].size;
	if (sim->allocated > sim->peak_allocated)
		sim->peak_allocated = sim->allocated;
	*handle = idx;
	return true;
}

/* Merge free neighbour `j` into block `i` when they touch in one segment. */
static void try_merge(struct alloc_sim *sim, size_t i, size_t j)
{
	struct alloc_block *a = &sim->blocks[i], *b = &sim->blocks[j];

	if (i == j || b->dead || !b->free || b->segment != a->segment)
		return;
	if (b->offset + b->size == a->offset) {
		a->offset = b->offset;
		a->size += b->size;
		b->dead = true;
	} else if (a->offset + a->size == b->offset) {
		a->size += b->size;
		b->dead = true;
	}
}

void alloc_sim_release(struct alloc_sim *sim, size_t handle)
{
	struct alloc_block *b;

	if (handle >= sim->nblocks)
		return;
	b = &sim->blocks[handle];
	if (b->dead || b->free)
		return;
	b->free = true;
	sim->allocated -= b->size;
	for (size_t j = 0; j < sim->nblocks; j++)
		try_merge(sim, handle, j);
}
