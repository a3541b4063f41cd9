/* SPDX-License-Identifier: MIT */
/*
 * mem_trace.h - the state of one stage's allocation trace, shared by
 * mem_trace.c (the step: micro-batches and the optimizer step),
 * mem_trace_load.c (loading, setup and the optimizer states) and
 * mem_trace_fsdp.c (ZeRO-3's and FSDP's gathers and reduce-scatters).
 * Only analyzer/alloc/mem_trace*.c include it.
 */
#ifndef MEMC_ANALYZER_MEM_TRACE_H
#define MEMC_ANALYZER_MEM_TRACE_H

#include "analyzer/memory/mem_internal.h"
#include "analyzer/alloc/alloc.h"

#define STREAM_COMPUTE 0u
#define STREAM_COMM 1u		/* FSDP's all-gather stream */
#define STREAM_RS 2u		/* FSDP's reduce-scatter stream */
#define STREAM_PRE_UNSHARD 3u	/* FSDP1's pre-unshard stream (CPU offload's H2D copies) */
#define NO_ID UINT32_MAX
#define MEM_TRACE_FLIGHT_PIECES 4096u	/* tensors of the in-flight forwards (mem_trace.c put_flight) */

/* A growable list of trace ids. */
struct idl {
	uint32_t *v;
	size_t n, cap;
};

/* Ids of one tensor-by-tensor layer instance; stored and saves are runs of
 * r->parts (one id per saved tensor). */
struct inst {
	uint32_t keep, cfwd, unsh;
	uint32_t held;		/* SHARD_GRAD_OP: its unit gathered from forward to backward
				   (the unit's first layer's instance) */
	uint32_t post;		/* FSDP2 reshard_after_forward = N: its post-forward copy */
	size_t stored0, nstored, saves0, nsaves, load0, nload;
};

struct tr {
	struct mem_ctx *cx;
	const struct mem_job *job;
	const struct mem_stage *st;
	struct alloc_trace *t;
	struct inst *in;	/* [seg base + kept repeat x nlayers + layer] */
	size_t *base;		/* per segment: first index into in */
	uint32_t *agg_act;	/* per segment: the folded middle */
	struct idl grads;	/* produced gradients, freed by zero_grad */
	struct idl parts;	/* saved tensors of every instance (inst runs) */
	struct idl loads;	/* weights as loaded, before FSDP shards them (inst runs) */
	struct idl tmp;		/* the running layer's temporaries */
	struct idl agq;		/* FSDP1's free events not yet waited on (gathered units) */
	struct idl tied;	/* tied weights' gradients held for their owners (newest last) */
	struct idl kept;	/* train.keep_output: the model's output, held past the step */
	struct idl own;		/* the last stage's output step() keeps, to the micro-batch's end */
	uint64_t own_rest;	/* ... what the head saved, added after the loss region */
	uint64_t io;		/* the first micro-batch's pipeline stage buffers (kept) */
	uint32_t pre;		/* FSDP1: the next unit, gathered ahead (prefetch) */
	uint32_t root;		/* FSDP's gathered root unit */
	uint32_t rest;		/* ZeRO-3: the running unit's part its prefetch left */
	uint32_t tail, head_copy;	/* FSDP2's split root: [norm, lm_head], the head's copy */
	uint32_t ipg;		/* ZeRO-1/2's IPG buckets, from a backward to the step */
	uint64_t pre_bytes;	/* ... the bytes of `pre` */
	uint32_t cat;		/* FSDP1: the running unit's flat gradient (SplitWithSizesBackward) */
	struct idl acc;		/* FSDP1 no_sync(): the units' flat gradients kept as .grad */
	struct idl cacc;	/* FSDP2, one round of Interleaved1F1B: the running chunk's (mtr_chunked) */
	int acc_mode;		/* ... 0: reduce now, 1: keep them, 2: add to them (mem_trace_fsdp.c) */
	uint64_t *share;	/* scratch: one layer's per-parameter bytes */
	size_t share_cap;
	bool states;		/* optimizer states exist (created by the first step) */
	bool resident;		/* gradients allocated at setup */
	bool zeros;		/* zero_grad(set_to_none=False): made by the first backward, kept */
	bool have_grads;	/* produced by an earlier micro-batch of this step */
	int blas;		/* cuBLAS workspaces made so far (mem_trace.c blas_workspaces) */
	uint64_t len;		/* this step's padded length (job->shape_seq_len) */
	bool per_token;		/* ... its s^2 share taken per token (later_seq_len) */
	size_t *qbase;		/* per block: its first layer's index into job->shape_quad */
	const struct mem_quad *q;	/* the running layer's */
};

enum kind { K_W, K_G, K_S, K_M };

static inline uint64_t kept(uint64_t n)
{
	return n > MEM_TRACE_REPEATS ? MEM_TRACE_REPEATS : n;
}

static inline uint32_t put(struct tr *r, uint64_t n, uint32_t stream)
{
	return n ? alloc_trace_alloc(r->t, n, stream) : NO_ID;
}

static inline void drop(struct tr *r, uint32_t *id)
{
	if (*id != NO_ID)
		alloc_trace_release(r->t, *id);
	*id = NO_ID;
}

static inline struct inst *inst_of(struct tr *r, size_t s, uint64_t k, size_t j)
{
	size_t nl = r->job->blocks[r->st->segs[s].block].nlayers;

	return &r->in[r->base[s] + (size_t)k * nl + j];
}

static inline bool shards(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO3 || m == MEM_SHARD_FSDP_FULL || m == MEM_SHARD_FSDP_GRAD_OP ||
	       m == MEM_SHARD_FSDP_HYBRID;
}

/* A gradient is produced unless resident or left by an earlier micro-batch. */
static inline bool produces(const struct tr *r)
{
	return !r->resident && !r->have_grads;
}

void mtr_idl_push(struct tr *r, struct idl *l, uint32_t id);
/* Free the ids of l from index `from` on, newest first. */
void mtr_idl_drop_from(struct tr *r, struct idl *l, size_t from);
/* r->share[i] = parameter i's part of a layer's `total` bytes of one kind
 * (false, nothing shared, if no parameter has that kind). */
bool mtr_shares(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k);
/* A layer's `total` bytes of one kind as one tensor per parameter; ids go
 * to `keep` (NULL: resident, not freed). */
void mtr_put_params(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k,
		    struct idl *keep);

/* mem_trace_load.c: loading and setup, before the first step; the
 * optimizer states (made by the first step, or before the first backward
 * when stepped in backward). */
void mtr_setup(struct tr *r);
void mtr_states(struct tr *r);

/* mem_trace_fsdp.c: the all-gathers and reduce-scatters of ZeRO-3 and
 * FSDP.  mtr_gather: n bytes on the all-gather stream, after FSDP1's rate
 * limiter; mtr_unit_gather: body unit (s, k)'s gathered block (prefetched
 * or gathered now), prefetching the next; mtr_root_prefetch: the first body
 * unit gathered ahead at a root layer; mtr_reshard: a unit's block freed
 * (recorded under FSDP1); mtr_caught_up: FSDP1's recorded frees complete. */
uint32_t mtr_gather(struct tr *r, uint64_t n);
uint32_t mtr_unit_gather(struct tr *r, size_t s, uint64_t k, bool bwd);
void mtr_root_prefetch(struct tr *r, size_t s, bool bwd);
void mtr_reshard(struct tr *r, uint32_t *g);
void mtr_caught_up(struct tr *r);
/* Units gathered from forward to backward (SHARD_GRAD_OP, FSDP2
 * reshard_after_forward = false). */
bool mtr_holds(const struct tr *r);
/* FSDP2 without gradient sync before the last micro-batch; with reshard
 * after backward off too (torch.distributed.pipelining), every unit stays
 * gathered from its backward to the end of the step's last micro-batch. */
bool mtr_no_sync2(const struct tr *r);
bool mtr_keeps_gathered(const struct tr *r);
/* FSDP1's flat gradient of `cat` bytes, made with the unit's gradients. */
void mtr_flat_grad(struct tr *r, uint64_t cat);
/* FSDP1 no_sync(): whether the job keeps unsharded gradients between
 * micro-batches; a flat gradient kept (acc_mode 1) or added and freed (2);
 * the last micro-batch's reduce-scatter of every unit. */
bool mtr_keeps_unsharded(const struct tr *r);
void mtr_keep_or_add(struct tr *r, uint32_t *flat);
bool mtr_chunked(const struct tr *r);
void mtr_chunk_enter(struct tr *r, uint32_t c);
void mtr_chunk_reduce(struct tr *r, uint32_t c);
void mtr_sync_unsharded(struct tr *r);
/* Body unit (s, k)'s reduce-scatter; the FSDP root unit's, at the end of
 * backward (mtr_root_reduces: the job has one). */
void mtr_reduce_scatter(struct tr *r, size_t s, uint64_t k);
bool mtr_root_reduces(const struct tr *r);
/* FSDP2's split root: the bytes the trace gathers as the root (the head
 * when split), the units' changes as segment s begins (mtr_split_at), and
 * the end of the step (mtr_split_done). */
bool mtr_split(const struct tr *r);
uint64_t mtr_root_bytes(const struct tr *r);
void mtr_split_at(struct tr *r, size_t s, bool bwd, uint32_t *root);
void mtr_split_done(struct tr *r);
void mtr_root_reduce(struct tr *r);

#endif /* MEMC_ANALYZER_MEM_TRACE_H */
