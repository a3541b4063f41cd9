/* SPDX-License-Identifier: MIT */
/*
 * alloc.h - the PyTorch CUDA caching allocator's size rules, and a tiny
 * single-stream simulation of it (memory-model.md §5.3.1, TV-22).
 *
 * alloc_round_size() is what every tensor costs in `memory_allocated`
 * (512-byte granularity); alloc_segment_size() is the cudaMalloc size of a new
 * segment for a rounded request.  The simulation keeps segments and blocks,
 * best-fit reuse, the split rules of both pools and coalescing on free; it
 * never returns segments to the driver (empty_cache is not modelled), has one
 * stream, the default config (no max_split_size, no roundup_power2_divisions,
 * no expandable segments) and no OOM.  It exists for tests and for checking
 * the timeline's rounding, not for the hot path.
 *
 * Ownership: struct alloc_sim owns one heap array; alloc_sim_free() releases it.
 */
#ifndef MEMC_ANALYZER_ALLOC_H
#define MEMC_ANALYZER_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALLOC_MIN_BLOCK   512u			/* kMinBlockSize */
#define ALLOC_SMALL_SIZE  (1u << 20)		/* kSmallSize: largest small request */
#define ALLOC_SMALL_BUF   (2u << 20)		/* kSmallBuffer: small-pool segment */
#define ALLOC_MIN_LARGE   (10u << 20)		/* kMinLargeAlloc */
#define ALLOC_LARGE_BUF   (20u << 20)		/* kLargeBuffer */
#define ALLOC_ROUND_LARGE (2u << 20)		/* kRoundLarge */

enum alloc_pool { ALLOC_POOL_SMALL, ALLOC_POOL_LARGE };

/* round_size(n): 512 for n < 512, else 512 x ceil(n / 512).  Saturates at the
 * largest multiple of 512 instead of wrapping. */
uint64_t alloc_round_size(uint64_t n);
/* Pool of a rounded size: small if <= 1 MiB. */
enum alloc_pool alloc_pool_of(uint64_t size);
/* get_allocation_size(size): 2 MiB, 20 MiB, or size rounded up to 2 MiB. */
uint64_t alloc_segment_size(uint64_t size);

struct alloc_block {
	uint64_t segment;	/* segment id */
	uint64_t offset;	/* byte offset in the segment */
	uint64_t size;
	enum alloc_pool pool;
	bool free;
	bool dead;		/* merged into a neighbour; slot never reused */
};

struct alloc_sim {
	struct alloc_block *blocks;
	size_t nblocks, cap;
	uint64_t nsegments;
	uint64_t allocated, reserved;		/* current */
	uint64_t peak_allocated, peak_reserved;
};

void alloc_sim_init(struct alloc_sim *sim);
void alloc_sim_free(struct alloc_sim *sim);
/* Allocate n bytes; *handle identifies the block for alloc_sim_release().
 * Returns false only if the host is out of memory. */
bool alloc_sim_malloc(struct alloc_sim *sim, uint64_t n, size_t *handle);
void alloc_sim_release(struct alloc_sim *sim, size_t handle);

#endif /* MEMC_ANALYZER_ALLOC_H */
