/* SPDX-License-Identifier: MIT */
/*
 * mem_internal.h - types shared by memory.c (per-tensor costs, stage
 * placement, figures) and mem_timeline.c (the walk over one stage).
 * Not part of the public API; only the memory model (analyzer/memory/) and the trace (analyzer/alloc/) include it.
 *
 * Invariants: every byte count here is already sharded and rounded (what one
 * rank allocates); struct mem_sums adds the same fields over a set of layer
 * instances in forward order, so "what was before position X" is a prefix sum
 * and "one more repeat" is adding a block's per-repeat sums (this linearity is
 * what lets the walk fold repeats).
 */
#ifndef MEMC_ANALYZER_MEM_INTERNAL_H
#define MEMC_ANALYZER_MEM_INTERNAL_H

#include "analyzer/memory/memory.h"

/* Per-rank bytes of one layer instance. */
struct mem_cost {
	uint64_t w;		/* resident weights */
	uint64_t s;		/* optimizer states + master (0 if offloaded) */
	uint64_t gfin;		/* gradient resident after its unit's backward */
	uint64_t gunsh;		/* unsharded gradient until its unit's reduce-scatter */
	uint64_t bucket;	/* DDP reducer bucket share (persistent) */
	uint64_t gath;		/* ZeRO-3/FSDP gathered parameter copy */
	uint64_t held;		/* FSDP2: of gath, what a body unit keeps from its forward to
				   its backward (reshard_after_forward, mem_fsdp.c) */
	uint64_t gacc;		/* FSDP2 without gradient sync: unsharded accumulated gradient */
	uint64_t gred;		/* FSDP2: of gunsh, the reduce_dtype copy foreach_reduce makes */
	uint64_t cast_keep;	/* casts held from forward to this layer's backward */
	uint64_t cast_tmp;	/* casts alive only while the layer runs */
	uint64_t cast_fwd;	/* autocast-cached casts of a recomputed layer: held from its
				   forward to the end of the forward pass (part of cast_tmp) */
	uint64_t cast_each;	/* of cast_tmp, the per-call weight copy (MatMul4Bit) */
	bool mm_split;		/* that copy has an instant of its own (mem_layer) ... */
	uint64_t mmf, mmb;	/* ... where the layer holds these instead of stored + tfwd/tbwd */
	uint64_t step_group;	/* grouped (foreach) step temporaries */
	uint64_t step_max;	/* largest one-at-a-time step temporary */
	uint64_t stored;	/* activations kept to backward in stored form */
	uint64_t stored_off;	/* the part of `stored` offloaded to the host between the
				   repeat's forward and backward (offload_activations) */
	uint64_t saves;		/* full saves (what recompute re-materialises) */
	uint64_t tfwd, tbwd;
	uint64_t raw_w, raw_g, raw_s, numel, numel_trainable; /* unsharded, for explain */
	uint64_t paged;		/* paged optimizer states (unified memory, §2.2) */
	uint64_t host, nvme;	/* offloaded to host RAM / NVMe, this rank's share (§7) */
	uint64_t tied, tied_end;	/* a tied weight's gradient held from this layer's
					   backward / released after it (mem_layer) */
	uint64_t kept, kept_t;	/* keep_output: the output the loop holds past this layer's
				   backward; of it, the part made as a forward transient */
	uint64_t wgrad;		/* held by a deferred W pass (mem_layer wgrad_bytes) */
	uint64_t wgrad_out;	/* ... its output gradients (wgrad_out_bytes) */
	enum mem_component act;	/* MEM_C_ACTIVATIONS or MEM_C_LOGITS */
	bool body;
};

enum mem_sum_field {
	S_W, S_S, S_GFIN, S_GFIN_NB, S_GUNSH, S_GUNSH_NB, S_BUCKET, S_GATH, S_GATH_NB,
	S_CAST_KEEP, S_CAST_FWD, S_STEP_GROUP, S_STORED_ACT, S_STORED_LOG, S_SAVES_ACT, S_SAVES_LOG,
	S_RAW_W, S_RAW_G, S_RAW_S, S_NUMEL, S_NUMEL_TRAIN, S_HOST, S_NVME, S_PAGED, S_STORED_OFF,
	S_HELD, S_GACC, S_GACC_NB, S_GRED_NB,	/* FSDP2 (mem_fsdp.c) */
	S_TIED, S_TIED_END,		/* tied weights' held gradients (mem_timeline.c) */
	S_KEPT,				/* the model output the loop holds (mem_timeline.c) */
	S_WGRAD, S_WGRAD_OUT,		/* held by deferred W passes (mem_pipeline.c) */
	S__COUNT
};

struct mem_sums {
	uint64_t v[S__COUNT];
};

/* Live bytes at one instant, per component and per kind of buffer. */
struct mem_vec {
	uint64_t c[MEM_C__COUNT];
	uint64_t b[MEM_B__COUNT];
};

/* `count` repeats of block `block` starting at repeat `first`, all on one stage. */
struct mem_seg {
	size_t block;
	uint64_t first, count;
	uint64_t unit0;		/* global 0-based body ordinal of repeat `first` (body only) */
	uint64_t units_before;	/* body repeats of this stage before this segment */
	bool plain;		/* body repeats left out of a per-layer checkpoint policy
				   (checkpoint_every, recompute_first): not recomputed */
	uint64_t flight;	/* DualPipe(V): its chunk's forwards in flight
				   (mem_pp_chunk_flight); 0: the stage's count */
	uint32_t chunk;		/* interleaved: which of the rank's vp chunks (c / pp) */
};

struct mem_stage {
	struct mem_seg *segs;
	size_t nsegs, cap;
	struct mem_sums *before;	/* per segment: sums of everything earlier in the stage */
	struct mem_sums total;
	struct mem_sums flight;		/* DualPipe(V): each segment x its chunk's in-flight
					   count (the walked micro-batch's own included) */
	uint64_t body_units;		/* body repeats on this stage */
	uint64_t max_unit_gath;		/* largest gathered body repeat */
	uint64_t max_unit_held;		/* its part kept from forward to backward (FSDP2) */
	uint64_t step_max;		/* largest one-at-a-time step temporary */
	uint32_t index;			/* the stage's pp rank */
	struct mem_sums *chunk_total;	/* interleaved: [vp] one micro-batch of each of the
					   rank's chunks (mem_pp_extra); NULL otherwise */
};

/* One analysis. */
struct mem_ctx {
	const struct mem_job *job;
	struct mem_cost **costs;	/* [block][layer] */
	struct mem_sums *iter;		/* [block]: sums of one repeat */
	struct mem_cost **costs_plain;	/* the same without recompute, for plain segments
					   (the same arrays when no segment is plain) */
	struct mem_sums *iter_plain;
	uint32_t shard_n;		/* default sharding group (mem_shard_group) */
	uint32_t expert_n;		/* expert params' group (mem_expert_group) */
	bool experts;			/* the job has expert params */
	bool ovf;			/* sticky overflow flag */
	struct mem_ws *ws;		/* NULL: the heap */
	struct mem_sums **prefix;	/* [block][layer]: sums of layers 0..layer-1 of one
					   repeat (set_layer in O(1)); [nlayers] = iter */
	struct mem_sums **prefix_plain;
	size_t pslot;			/* next slot of ws->pcache (cost_table's layer order) */
};

struct mem_walk_out {
	bool any;
	uint64_t peak;
	struct mem_vec at;
	struct mem_where where;
	uint64_t phase_peak[MEM_PHASE__COUNT];
	struct mem_phase_point series[2][MEM_PHASE__COUNT];	/* job->phase_series */
};

static inline const struct mem_cost *mem_seg_costs(const struct mem_ctx *cx, const struct mem_seg *s)
{
	return s->plain ? cx->costs_plain[s->block] : cx->costs[s->block];
}

static inline const struct mem_sums *mem_seg_iter(const struct mem_ctx *cx, const struct mem_seg *s)
{
	return s->plain ? &cx->iter_plain[s->block] : &cx->iter[s->block];
}

static inline const struct mem_sums *mem_seg_prefix(const struct mem_ctx *cx, const struct mem_seg *s)
{
	return s->plain ? cx->prefix_plain[s->block] : cx->prefix[s->block];
}

/* Whether a segment's body repeats re-run their forward in backward. */
static inline bool mem_seg_recomputes(const struct mem_ctx *cx, const struct mem_seg *s)
{
	return mem_recomputes_repeat(cx->job->recompute) && !s->plain;
}

/* Inline: the walk calls them a hundred times per instant, and an
 * out-of-line call was a fifth of mem_analyze (docs/performance.md). */
static inline uint64_t mem_add(bool *ovf, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r)) {
		*ovf = true;
		return UINT64_MAX;
	}
	return r;
}

static inline uint64_t mem_mul(bool *ovf, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r)) {
		*ovf = true;
		return UINT64_MAX;
	}
	return r;
}

static inline uint64_t mem_sub(uint64_t a, uint64_t b)	/* saturates at 0 */
{
	return a > b ? a - b : 0;
}

static inline bool mem_shards_grads(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO2 || mem_shards_weights(m);
}

static inline bool mem_shards_states(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO1 || mem_shards_grads(m);
}

/* ceil(bytes / n): each tensor is padded to a multiple of the group, as
 * FSDP2's per-parameter dim-0 shards and DeepSpeed's padded flat buffers are
 * (the per-tensor form; exact for the §13 vectors, whose sizes divide). */
static inline uint64_t mem_shard_bytes(uint64_t bytes, uint32_t n)
{
	if (n <= 1)
		return bytes;
	/* groups are mostly powers of two, and a 64-bit division costs as
	 * much as the rest of a tensor's figures: shift where it is exact */
	if (!(n & (n - 1)))
		return (bytes >> __builtin_ctz(n)) + ((bytes & (n - 1)) != 0);
	return bytes / n + (bytes % n != 0);
}

/* mem_cost.c: step 2 of mem_analyze, the per-rank cost tables of cx */
enum mem_status mem_build_costs(struct mem_ctx *cx);
void mem_free_costs(struct mem_ctx *cx);
bool mem_has_experts(const struct mem_job *job);
bool mem_has_plain(const struct mem_job *job);

/* Zeroed scratch from the caller's workspace (mem_analyze_ws), else the
 * heap; mem_ws_release frees only what came from the heap. */
void *mem_ws_calloc(struct mem_ws *ws, size_t n, size_t size);
void *mem_ws_alloc(struct mem_ws *ws, size_t n, size_t size);	/* not zeroed */
void mem_ws_release(struct mem_ws *ws, void *p);
void mem_ws_reset(struct mem_ws *ws);	/* start of a call: last call's blocks are free */
void mem_pcache_free(struct mem_ws *ws);	/* memory.c: the cost cache of mem_ws_free */
uint64_t mem_round(const struct mem_job *job, uint64_t bytes);
void mem_sums_add_cost(bool *ovf, struct mem_sums *s, const struct mem_cost *c);
/* out = x + k * y */
void mem_sums_axpy(bool *ovf, struct mem_sums *out, const struct mem_sums *x,
		   const struct mem_sums *y, uint64_t k);
/* Extra activations of the other in-flight chunks: stored x (chunks - vp) / vp. */
uint64_t mem_extra_in_flight(bool *ovf, uint64_t stored, uint64_t chunks, uint32_t vp);

/* Walk one stage for the first micro-batch (`first` model-chunk forwards
 * in flight) and, if `later` > 0, for a later one (micro-batch >= 2, with
 * `later` chunks in flight), folding into `out`. */
void mem_walk_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		    uint64_t later, struct mem_walk_out *out);

/* The allocator replay of one stage (mem_trace.c, §5.4): the trace of its
 * loading and setup, then optimizer steps of the first (`first` chunks in
 * flight) and, with accumulation, a later micro-batch (`later`), replayed
 * with `cfg`.  Two steps, then one more while the last one still grew the
 * pool, up to MEM_TRACE_MAX_STEPS.  Segments of more repeats than
 * MEM_TRACE_REPEATS fold their middle repeats. */
#define MEM_TRACE_REPEATS 128
#define MEM_TRACE_MAX_STEPS 4
/* Under data.padding = longest every step differs: this many are replayed,
 * the last at seq_len (mem_trace.c step_len). */
#define MEM_TRACE_SHAPE_STEPS 8
struct alloc_trace;
struct alloc_config;
struct alloc_replay;
bool mem_trace_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, int steps, struct alloc_trace *out);
/* The trace's cuBLAS workspaces (mem_trace.c blas_workspaces): one per
 * thread that runs matmuls, the loop's and autograd's, each of
 * train.overhead.cublas_workspace bytes, in the caching allocator. */
#define MEM_TRACE_BLAS_HANDLES 2
uint64_t mem_trace_blas_bytes(const struct mem_job *job);
/* ALLOC_NOMEM if the host ran out of memory.  If the replay ran out of
 * device memory (out->oom), *written is the replay without cfg->limit. */
int mem_replay_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, const struct alloc_config *cfg, struct alloc_replay *out,
		     struct alloc_replay *written);

/* mem_fsdp.c: FSDP2's reshard_after_forward, and what is kept without
 * gradient sync or reshard after backward (docs/memory-model.md "FSDP2"). */
bool mem_fsdp_gathers(const struct mem_job *job);
void mem_fsdp_cost_param(struct mem_ctx *cx, const struct mem_param *p, struct mem_cost *c);
void mem_fsdp_add_sums(bool *ovf, struct mem_sums *s, const struct mem_cost *c);
/* B: the sums before the current repeat (body) or layer; post: the current
 * layer is a non-body layer after the stage's body */
uint64_t mem_fsdp_gathered(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_sums *B,
			   const struct mem_cost *c, bool post, uint64_t cur, bool more, bool bwd,
			   bool accumulating);
uint64_t mem_fsdp_unsharded(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_sums *B,
			    const struct mem_sums *unit, bool post, uint64_t in_unit, uint64_t in_acc,
			    bool accumulating);
void mem_fsdp_split_grads(struct mem_ctx *cx, const struct mem_stage *st, bool post, uint64_t *after,
			  uint64_t *unsh);
uint64_t mem_fsdp_reduce_extra(const struct mem_stage *st);
uint64_t mem_pp_kept_outputs(bool *ovf, const struct mem_ctx *cx, const struct mem_stage *st,
			     bool accumulating);
uint64_t mem_pp_own_output(bool *ovf, const struct mem_ctx *cx, const struct mem_stage *st, bool loss_layer);
uint64_t mem_fsdp_root_grads(const struct mem_stage *st, const struct mem_sums *B);
uint64_t mem_fsdp_root_reduce(struct mem_ctx *cx, const struct mem_stage *st);
uint64_t mem_fsdp_forward_flat(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_cost *c,
			       bool post, uint64_t cur, bool more);

/* mem_pipeline.c: the body's repeats, and model chunks per stage (vp under
 * the interleaved schedule with pp > 1, else 1). */
uint64_t mem_body_repeats(const struct mem_job *job);
uint32_t mem_chunks_per_stage(const struct mem_job *job);
/* Consecutive micro-batches a rank runs on one chunk (interleaved). */
uint64_t mem_pp_group(const struct mem_job *job);
/* Bytes of field f (less field `minus`; S__COUNT: none) that the other
 * micro-batches in flight hold on the stage beside the walked one, `chunks`
 * model-chunk forwards in flight: chunk by chunk under the interleaved
 * schedules (each chunk's micro-batches in flight at the rank's peak,
 * mem_pipeline.c interleaved_extra) and DualPipe(V). */
uint64_t mem_pp_extra(bool *ovf, const struct mem_job *job, const struct mem_stage *st,
		      uint64_t chunks, enum mem_sum_field f, enum mem_sum_field minus);
/* torch.distributed.pipelining's PipelineStage (job->pp_stage_buffers):
 * the receive buffers a stage keeps beyond the `chunks` in flight, and the
 * stage outputs its fwd_cache holds for them (memory-model.md "Pipeline
 * send/recv buffers"). */
uint64_t mem_pp_recv_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks);
uint64_t mem_pp_output_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks);
/* ... and, at a later micro-batch, the input gradients its receive buffers
 * hold (mem_pp_input_grad_bytes) */
uint64_t mem_pp_input_grad_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks);
/* DualPipe(V): what the W passes deferred by the zero-bubble backwards
 * (WeightGradStore) add at the rank's worst point over the in-flight
 * activations' own peak (memory-model.md "DualPipe") */
uint64_t mem_pp_deferred_w(bool *ovf, const struct mem_job *job, const struct mem_stage *st);
/* FSDP2 under torch.distributed.pipelining with one round of the
 * interleaved schedule: a chunk's gradients live only from its first to its
 * last backward, the chunks' back to back (mem_pipeline.c); the stage seen
 * as one chunk, and the reduce-scatter after each chunk's last backward */
bool mem_pp_chunk_scoped(const struct mem_job *job);
bool mem_pp_chunk_view(const struct mem_job *job, const struct mem_stage *st, uint32_t c,
		       struct mem_stage *view, struct mem_sums *skip);
void mem_pp_chunk_rebase(const struct mem_sums *B, const struct mem_sums *skip, struct mem_sums *out);
uint64_t mem_pp_chunk_after(const struct mem_stage *st, const struct mem_stage *view,
			    const struct mem_sums *skip, enum mem_sum_field f);
void mem_pp_chunk_reduce(bool *ovf, const struct mem_job *job, const struct mem_stage *st,
			 uint64_t *gath, uint64_t *unsh, uint64_t *fin);

#endif /* MEMC_ANALYZER_MEM_INTERNAL_H */
