/* SPDX-License-Identifier: MIT */
/*
 * alloc.h - the PyTorch CUDA caching allocator's size rules, and a replay of
 * it (memory-model.md §5.3.1, §5.4; TV-22).
 *
 * alloc_round_size() is what every tensor costs in `memory_allocated`
 * (512-byte granularity); alloc_segment_size() is the cudaMalloc size of a new
 * segment for a rounded request.  The simulation follows
 * pytorch/pytorch:c10/cuda/CUDACachingAllocator.cpp as of v2.5: small and
 * large pools, per-stream blocks, best fit, the split rules, oversize blocks
 * (max_split_size), roundup_power2_divisions (one value for every size),
 * garbage_collection_threshold, expandable segments, and the path taken when
 * cudaMalloc fails at the limit: release oversize cached blocks, then every
 * whole cached segment, retry once, else out of memory.  A block freed while
 * another stream still uses it (record_stream) stays out of the pool until
 * that use completes (free -> insert_events, process_events).
 *
 * Ownership: struct alloc_sim owns its heap arrays; alloc_sim_free() releases them.
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
#define ALLOC_NO_SPLIT_LIMIT UINT64_MAX		/* max_split_size unset */

enum alloc_pool { ALLOC_POOL_SMALL, ALLOC_POOL_LARGE };

/* PYTORCH_CUDA_ALLOC_CONF, plus the bytes the process may reserve. */
struct alloc_config {
	uint64_t max_split_size;	/* bytes; ALLOC_NO_SPLIT_LIMIT = unset */
	uint32_t roundup_power2_divisions; /* 0 or 1 = off */
	double gc_threshold;		/* garbage_collection_threshold; 0 = off */
	bool expandable_segments;
	uint64_t limit;			/* cudaMalloc fails past this reserved total; 0 = none */
};

/* The default config: what PyTorch does with PYTORCH_CUDA_ALLOC_CONF unset. */
void alloc_config_default(struct alloc_config *cfg);

/* round_size(n): 512 for n < 512, else 512 x ceil(n / 512).  Saturates at the
 * largest multiple of 512 instead of wrapping. */
uint64_t alloc_round_size(uint64_t n);
/* round_size under a config (roundup_power2_divisions). */
uint64_t alloc_round_size_cfg(const struct alloc_config *cfg, uint64_t n);
/* Pool of a rounded size: small if <= 1 MiB. */
enum alloc_pool alloc_pool_of(uint64_t size);
/* get_allocation_size(size): 2 MiB, 20 MiB, or size rounded up to 2 MiB. */
uint64_t alloc_segment_size(uint64_t size);

struct alloc_block {
	uint64_t segment;	/* segment id */
	uint64_t offset;	/* byte offset in the segment */
	uint64_t size;
	uint64_t cls;		/* listed free: pool << 33 | stream << 1 | growable tail */
	uint64_t freed_at;	/* get_free_block calls on the large pool when freed (gc age) */
	size_t prev, next;	/* neighbours in the segment; SIZE_MAX at an end */
	uint32_t stream;
	uint32_t owner;		/* the trace id it was handed to (alloc_replay) */
	enum alloc_pool pool;
	bool free;
	bool dead;		/* merged into a neighbour or released; slot reusable */
	bool pending;		/* freed, a use on another stream outstanding (record_stream) */
};

struct alloc_segment {
	uint64_t size;		/* reserved bytes (mapped bytes of an expandable one) */
	uint32_t stream;
	enum alloc_pool pool;
	bool expandable;
	bool released;
	size_t tail;		/* expandable: the block at the end of the mapped range */
};

struct alloc_sim {
	struct alloc_config cfg;
	struct alloc_block *blocks;
	size_t nblocks, cap;
	size_t *freel;		/* the free blocks, sorted (what best fit searches) */
	size_t nfree, free_cap;
	size_t *spare;		/* dead slots to reuse */
	size_t nspare, spare_cap;
	struct alloc_segment *segs;
	size_t nsegs, segs_cap;
	uint64_t gc_calls;	/* get_free_block calls on the large pool */
	uint64_t allocated, reserved;		/* current */
	uint64_t peak_allocated, peak_reserved;
	uint64_t retries;	/* cudaMalloc failures that freed the cache and retried */
	uint64_t ooms;
	uint64_t oom_request;	/* rounded size of the first request that failed */
};

enum alloc_status { ALLOC_OK, ALLOC_OOM, ALLOC_NOMEM };

void alloc_sim_init(struct alloc_sim *sim);
void alloc_sim_init_cfg(struct alloc_sim *sim, const struct alloc_config *cfg);
void alloc_sim_free(struct alloc_sim *sim);
/* Room for element @n of the array *@arr of *@cap elements of @elem bytes,
 * doubling it; false if the host has no memory (the array is unchanged). */
bool alloc_grow(void **arr, size_t *cap, size_t n, size_t elem);
/* Allocate n bytes on stream 0; *handle identifies the block for
 * alloc_sim_release().  Returns false if the request failed (out of device
 * memory under cfg.limit, or the host is out of memory). */
bool alloc_sim_malloc(struct alloc_sim *sim, uint64_t n, size_t *handle);
enum alloc_status alloc_sim_malloc_on(struct alloc_sim *sim, uint64_t n, uint32_t stream,
				      size_t *handle);
void alloc_sim_release(struct alloc_sim *sim, size_t handle);
/* Free a block that record_stream() marked as used on another stream: its
 * bytes leave `allocated` now, but the block is not reusable (nor merged)
 * until alloc_sim_complete(), when that stream's event has completed. */
void alloc_sim_release_recorded(struct alloc_sim *sim, size_t handle);
void alloc_sim_complete(struct alloc_sim *sim, size_t handle);
/* torch.cuda.empty_cache(): wait for the pending blocks' events, then
 * release every whole cached segment (and the unused mapped pages at the
 * end of expandable segments). */
void alloc_sim_empty_cache(struct alloc_sim *sim);
/* A copy of src with arrays of its own; false if the host is out of memory
 * (dst is then empty). */
bool alloc_sim_clone(struct alloc_sim *dst, const struct alloc_sim *src);

/* An allocation trace (memory-model.md §5.4): `size` > 0 allocates tensor
 * `id` on `stream`; size 0 frees tensor `id`, as `op` says. */
enum alloc_op {
	ALLOC_OP_FREE,		/* free: reusable at once */
	ALLOC_OP_FREE_RECORDED,	/* free with a use on another stream pending */
	ALLOC_OP_COMPLETE,	/* that use has completed: the block is reusable */
	ALLOC_OP_EMPTY_CACHE,	/* torch.cuda.empty_cache(), the peak statistics reset
				   after it (no tensor; id unused) */
};

struct alloc_event {
	uint64_t size;
	const char *what;	/* the layer (or step) that asked, for messages */
	uint32_t id;
	uint32_t stream;
	enum alloc_op op;	/* of a free (size 0) */
};

struct alloc_trace {
	struct alloc_event *ev;
	size_t n, cap;
	uint32_t nids;		/* ids handed out so far */
	const char *what;	/* label given to the events pushed next */
	size_t *marks;		/* event indices where a step starts (alloc_trace_mark) */
	size_t nmarks, marks_cap;
	bool nomem;		/* a push failed: the trace is incomplete */
	bool varies;		/* the steps differ (batch shapes): replay every one */
};

void alloc_trace_free(struct alloc_trace *t);
/* A new tensor of n bytes; returns its id (for alloc_trace_release). */
uint32_t alloc_trace_alloc(struct alloc_trace *t, uint64_t n, uint32_t stream);
void alloc_trace_release(struct alloc_trace *t, uint32_t id);
/* A free after record_stream(), and the completion of that stream's use. */
void alloc_trace_release_recorded(struct alloc_trace *t, uint32_t id);
void alloc_trace_complete(struct alloc_trace *t, uint32_t id);
/* torch.cuda.empty_cache() at this point (alloc_sim_empty_cache); the
 * replay's peaks restart there, its setup figure keeps the larger. */
void alloc_trace_empty_cache(struct alloc_trace *t);
/* A step starts at the next event. */
void alloc_trace_mark(struct alloc_trace *t);
/* *peak = the most bytes the trace's live tensors hold at once from its
 * first mark on, each at its round_size: what the steps ask for, whatever
 * blocks serve them (what the timeline's peak allocated is compared with,
 * memory-model.md §5.4).  False if the host ran out of memory. */
bool alloc_trace_step_peak(const struct alloc_trace *t, uint64_t *peak);

struct alloc_replay {
	uint64_t peak_allocated, peak_reserved;
	size_t steps;		/* steps (marks) replayed before it stopped */
	uint64_t setup_reserved;	/* peak reserved before the first mark (loading, setup) */
	uint64_t step_requested;	/* alloc_trace_step_peak of the trace (of the steps made,
					   alloc_replay_steps) */
	uint64_t retries;
	bool oom;
	uint64_t oom_request;	/* bytes of the request that could not be satisfied */
	size_t oom_event;	/* its index in the trace */
	const char *oom_what;	/* its label */
};

/* Replay the trace through a fresh allocator with `cfg`.  Stops at the first
 * request that fails (PyTorch raises OutOfMemoryError there), and, unless
 * t->varies, at a mark from the third on when the step before it left peak
 * reserved where it was: the steps repeat the same requests, so the pool has
 * stopped growing.
 * Returns ALLOC_NOMEM if the host ran out of memory. */
enum alloc_status alloc_replay(const struct alloc_trace *t, const struct alloc_config *cfg,
			       struct alloc_replay *out);
/* alloc_replay(), and if it ran out of memory, *written = the replay with
 * no limit (cfg.limit = 0: the figures of the job as written), continued
 * from a copy taken where the two could first differ; *written is zero
 * when out->oom is not set. */
enum alloc_status alloc_replay_written(const struct alloc_trace *t, const struct alloc_config *cfg,
				       struct alloc_replay *out, struct alloc_replay *written);

/* A trace made a step at a time: next(ctx) appends the next step, its mark
 * first, and returns false when there is none left or the host ran out of
 * memory (the trace's nomem). */
struct alloc_more {
	bool (*next)(void *ctx);
	void *ctx;
};
/* alloc_replay_written() on a trace that `more` extends (NULL: the trace
 * as it is): a replay that reaches the trace's end asks for the next step,
 * unless it would stop at that step's mark, so the steps a replay does not
 * reach are never made.  The largest request of the trace as given bounds
 * the fork (every later step repeats an earlier one's requests). */
enum alloc_status alloc_replay_steps(const struct alloc_trace *t, const struct alloc_more *more,
				     const struct alloc_config *cfg, struct alloc_replay *out,
				     struct alloc_replay *written);

#endif /* MEMC_ANALYZER_ALLOC_H */
