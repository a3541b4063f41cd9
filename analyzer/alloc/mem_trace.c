/* SPDX-License-Identifier: MIT */
/*
 * mem_trace.c - the step of one stage as an allocation trace, for the
 * caching-allocator replay (memory-model.md §5.4).
 *
 * The trace follows the timeline's instants (mem_timeline.c, §5.1) tensor
 * by tensor: the loading of the weights (mem_job.load), then per layer each
 * saved tensor as its own block (mem_layer.save_parts), the casts kept to
 * its backward, the forward/backward temporaries, re-materialised saves,
 * one gradient per parameter (produced by the first micro-batch's backward,
 * accumulated through a temporary of its size afterwards), unsharded
 * gradients and the gathered copy of each unit (on a second stream, as
 * FSDP's all-gather stream allocates it).  The optimizer states are created
 * by the first step as torch.optim does lazily; the step's temporaries are
 * one tensor per parameter (a foreach group lives together, a for-loop's
 * one at a time).  It covers what the allocator needs to reach its steady
 * state: loading and setup, then up to MEM_TRACE_MAX_STEPS optimizer steps
 * of one or two micro-batches each (the first micro-batch, a steady one),
 * each ending with the gradients freed by zero_grad(set_to_none); the
 * replay stops at the first step that leaves peak reserved unchanged.
 *
 * Folding: a segment of more than MEM_TRACE_REPEATS repeats keeps its first
 * and last MEM_TRACE_REPEATS / 2 repeats tensor by tensor; the repeats between
 * are one allocation per kind (their stored activations and casts, their
 * gradients), since once the pool stops growing a repeat's temporaries come
 * from blocks the earlier repeats freed.  What the fold drops is the
 * fragmentation inside the middle repeats; the analyzer adds the timeline's
 * exact peak allocated back (memory.c), so only the cache excess is approximate.
 *
 * What comes before the first step (loading, setup, the optimizer states)
 * is mem_trace_load.c's, ZeRO-3's and FSDP's gathers and reduce-scatters
 * mem_trace_fsdp.c's; the state they share is mem_trace.h's.
 */
#include "analyzer/alloc/mem_trace.h"
#include "analyzer/memory/mem_comm.h"

#include <stdlib.h>
#include <string.h>

/* Set r->q to layer j of block `block` (all per token without shares). */
static void set_quad(struct tr *r, size_t block, size_t j)
{
	static const struct mem_quad linear = { 0, 0, 0 };
	size_t i = r->qbase ? r->qbase[block] + j : SIZE_MAX;

	r->q = r->job->shape_quad && i < r->job->shape_quad_n ? &r->job->shape_quad[i] : &linear;
}

/* The bytes at this step's length of activations sized at seq_len, of
 * which the share q grows as seq_len^2 (struct mem_quad) and the rest
 * per token (memory-model.md §5.4 "Batch shapes"). */
static uint64_t act(const struct tr *r, uint64_t n, double q)
{
	uint64_t s = r->job->shape_seq_len;
	double x;

	if (!s || r->len >= s)
		return n;
	x = (double)r->len / (double)s;
	if (r->per_token)
		q = 0;
	return (uint64_t)((double)n * x * (1 - q + q * x));
}

/* Step `step` of `steps` under padding = longest: the last at seq_len (the
 * peak allocated), the others at the van der Corput points 1/2, 1/4, 3/4,
 * 1/8, ... of [min_seq_len, seq_len]: spread over the range, and the same
 * lengths on every run. */
static uint64_t step_len(const struct mem_job *job, int step, int steps)
{
	uint64_t s = job->shape_seq_len, m = job->shape_min_seq_len;
	double f = 0, w = 0.5;

	if (!s || step + 1 >= steps || m >= s)
		return s;
	for (unsigned i = (unsigned)step + 1; i; i >>= 1, w /= 2)
		f += (i & 1) ? w : 0;
	return m + (uint64_t)(f * (double)(s - m) + 0.5);
}

void mtr_idl_push(struct tr *r, struct idl *l, uint32_t id)
{
	if (id == NO_ID)
		return;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		uint32_t *v = nc < SIZE_MAX / sizeof(*v) ? realloc(l->v, nc * sizeof(*v)) : NULL;

		if (!v) {
			r->t->nomem = true;
			return;
		}
		l->v = v;
		l->cap = nc;
	}
	l->v[l->n++] = id;
}

/* Free the ids of l from index `from` on, newest first. */
void mtr_idl_drop_from(struct tr *r, struct idl *l, size_t from)
{
	while (l->n > from) {
		uint32_t id = l->v[--l->n];

		drop(r, &id);
	}
}

static uint64_t raw_of(const struct mem_param *p, enum kind k)
{
	if (k == K_W)
		return p->weight_bytes;
	if (!p->trainable)
		return 0;
	if (k == K_G)
		return p->grad_bytes;
	return k == K_S ? p->state_bytes : p->master_bytes;
}

/* r->share[i] = parameter i's part of a layer's `total` bytes of one kind,
 * in proportion to the parameters' unsharded sizes (the last takes the
 * rest).  Returns false (and shares nothing) if no parameter has that kind. */
bool mtr_shares(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k)
{
	uint64_t raw = 0, left = total;
	size_t last = 0;

	if (l->nparams > r->share_cap) {
		uint64_t *s = l->nparams < SIZE_MAX / sizeof(*s) ?
				      realloc(r->share, l->nparams * sizeof(*s)) : NULL;

		if (!s) {
			r->t->nomem = true;
			return false;
		}
		r->share = s;
		r->share_cap = l->nparams;
	}
	for (size_t i = 0; i < l->nparams; i++)
		if (raw_of(&l->params[i], k)) {
			raw += raw_of(&l->params[i], k);
			last = i;
		}
	for (size_t i = 0; i < l->nparams; i++) {
		uint64_t x = raw_of(&l->params[i], k), n;

		n = !raw || !x ? 0 : i == last ? left :
		    (uint64_t)((double)total * ((double)x / (double)raw));
		n = n > left ? left : n;
		left -= n;
		r->share[i] = n;
	}
	return raw != 0;
}

/* A layer's `total` bytes of one kind as one tensor per parameter, as
 * PyTorch allocates them; ids go to `keep` (NULL: resident, not freed). */
void mtr_put_params(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k,
		    struct idl *keep)
{
	if (!mtr_shares(r, l, total, k)) {
		uint32_t id = put(r, total, STREAM_COMPUTE);

		if (keep)
			mtr_idl_push(r, keep, id);
		return;
	}
	for (size_t i = 0; i < l->nparams; i++) {
		uint32_t id = put(r, r->share[i], STREAM_COMPUTE);

		if (keep)
			mtr_idl_push(r, keep, id);
	}
}

/* `total` bytes as one block per tensor v[from..to) of a layer's list
 * (its saves or temporaries), in proportion to their sizes (one block when
 * the list is empty); the ids go to `into`. */
static void put_split(struct tr *r, const uint64_t *v, size_t from, size_t to, uint64_t total,
		      struct idl *into)
{
	uint64_t raw = 0, left = total;

	for (size_t i = from; i < to; i++)
		raw += v[i];
	if (!raw) {
		mtr_idl_push(r, into, put(r, total, STREAM_COMPUTE));
		return;
	}
	for (size_t i = from; i < to && left; i++) {
		uint64_t n = i + 1 == to ? left : (uint64_t)((double)total * ((double)v[i] / (double)raw));

		n = n > left ? left : n;
		left -= n;
		mtr_idl_push(r, into, put(r, n, STREAM_COMPUTE));
	}
}

/* The same onto r->parts as a run of one instance: returns its start. */
static size_t put_saves(struct tr *r, const struct mem_layer *l, uint64_t total, size_t from,
			size_t to, size_t *count)
{
	size_t first = r->parts.n;

	put_split(r, l->save_parts, from, to < l->nsave_parts ? to : l->nsave_parts, total, &r->parts);
	*count = r->parts.n - first;
	return first;
}

static void drop_run(struct tr *r, size_t first, size_t *count)
{
	for (size_t i = first + *count; i-- > first;)
		drop(r, &r->parts.v[i]);
	*count = 0;
}

/* A layer's stored bytes at this step's length; a recomputed layer stores
 * its input (and SAC's kept outputs): per token, as one tensor. */
static uint64_t stored_of(const struct tr *r, const struct mem_cost *c, const struct mem_layer *l,
			  size_t *nparts)
{
	*nparts = c->stored != c->saves ? 0 : l->nsave_parts;
	return act(r, c->stored, c->stored == c->saves ? r->q->save : 0);
}

/* A layer whose weight is dequantised per call (mem_cost.mm_split: bitsandbytes
 * MatMul4Bit) holds the copy only at its matmul, beside `mm` bytes of its
 * own: before its loss region in forward, after it in backward (the
 * engine runs every chunk's loss backward first), as the timeline's two
 * instants of such a layer are (mem_timeline.c enum part). */
static void matmul(struct tr *r, const struct mem_cost *c, uint64_t mm)
{
	uint32_t w, t;

	if (!c->mm_split)
		return;
	w = put(r, c->cast_each, STREAM_COMPUTE);
	t = put(r, act(r, mm, 0), STREAM_COMPUTE);
	drop(r, &t);
	drop(r, &w);
}

/* cuBLAS's workspaces, in the pool since PyTorch 1.13 (pytorch#83461):
 * aten/src/ATen/cuda/CublasHandlePool.cpp getCurrentCUDABlasHandle keeps
 * one per (handle, stream) in cublas_handle_stream_to_workspace, made by
 * getNewWorkspace through the caching allocator and never freed, and a
 * thread takes its handles through a thread_local PoolWindow.  The forward
 * pass runs on the loop's thread, backward (the recompute with it) on
 * autograd's device thread (torch/csrc/autograd/engine.cpp
 * Engine::start_device_threads), so a rank has two, on the compute
 * stream, each made at its pass's first matmul: before the first
 * forward, and at the first layer's backward or recompute. */
static void blas_workspaces(struct tr *r, int upto)
{
	for (; r->blas < upto; r->blas++)
		(void)put(r, mem_trace_blas_bytes(r->job) / MEM_TRACE_BLAS_HANDLES, STREAM_COMPUTE);
}

uint64_t mem_trace_blas_bytes(const struct mem_job *job)
{
	uint64_t n = job->cublas_workspace_bytes;

	return n > UINT64_MAX / MEM_TRACE_BLAS_HANDLES ? 0 : n * MEM_TRACE_BLAS_HANDLES;
}

static void forward_layer(struct tr *r, struct inst *x, const struct mem_cost *c,
			  const struct mem_layer *l)
{
	size_t t0 = r->tmp.n;
	uint32_t cast;
	size_t n, h, c1 = 0, c2 = 0;
	uint64_t stored = stored_of(r, c, l, &n), a = stored, all = 0;

	x->keep = put(r, c->cast_keep, STREAM_COMPUTE);
	x->cfwd = put(r, c->cast_fwd, STREAM_COMPUTE);
	cast = put(r, mem_sub(mem_sub(c->cast_tmp, c->cast_fwd), c->mm_split ? c->cast_each : 0),
		   STREAM_COMPUTE);
	matmul(r, c, c->mmf);
	h = (n + 1) / 2;
	for (size_t i = 0; i < n; i++)
		all += l->save_parts[i];
	if (all) {
		a = 0;
		for (size_t i = 0; i < h; i++)
			a += l->save_parts[i];
		a = (uint64_t)((double)stored * ((double)a / (double)all));
	}
	/* the forward's temporaries come and go between its saves */
	x->stored0 = put_saves(r, l, a, 0, h, &c1);
	put_split(r, l->temp_fwd_parts, 0, l->ntemp_fwd_parts, act(r, c->tfwd, r->q->tfwd), &r->tmp);
	put_saves(r, l, stored - a, h, n, &c2);
	x->nstored = c1 + c2;
	mtr_idl_drop_from(r, &r->tmp, t0);
	/* the output the loop binds outlives the forward's temporaries */
	if (c->kept_t)
		mtr_idl_push(r, &r->kept, put(r, c->kept_t, STREAM_COMPUTE));
	drop(r, &cast);
}

/* Activation offloading (mem_cost.stored_off, memory-model.md "Activation offload"):
 * a repeat's stored tensors go to the host once its forward is done
 * (torchtune's OffloadActivations copies each saved tensor out and frees
 * its device copy) and come back for its backward, before its recompute. */
static void offload(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);

	for (size_t j = 0; j < r->job->blocks[seg->block].nlayers; j++)
		if (c[j].stored_off) {
			struct inst *x = inst_of(r, s, k, j);

			drop_run(r, x->stored0, &x->nstored);
		}
}

static void bring_back(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);

	for (size_t j = 0; j < b->nlayers; j++)
		if (c[j].stored_off) {
			struct inst *x = inst_of(r, s, k, j);
			size_t n;
			uint64_t stored;

			set_quad(r, seg->block, j);
			stored = stored_of(r, &c[j], &b->layers[j], &n);
			x->stored0 = put_saves(r, &b->layers[j], stored, 0, n, &x->nstored);
		}
}

static void forward_repeat(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);
	bool z3 = r->job->sharding == MEM_SHARD_ZERO3;
	uint32_t g = NO_ID;

	if (b->nlayers)
		r->t->what = b->layers[0].name;
	if (b->is_body && shards(r->job->sharding))
		g = inst_of(r, s, k, 0)->held != NO_ID ? inst_of(r, s, k, 0)->held :
		    mtr_unit_gather(r, s, k, false);
	else
		mtr_root_prefetch(r, s, false);
	for (size_t j = 0; j < b->nlayers; j++) {
		/* ZeRO-3 gathers a non-body module around its own forward */
		uint32_t ng = !b->is_body && z3 ? put(r, c[j].gath, STREAM_COMM) : NO_ID;

		r->t->what = b->layers[j].name;
		set_quad(r, seg->block, j);
		forward_layer(r, inst_of(r, s, k, j), &c[j], &b->layers[j]);
		drop(r, &ng);
	}
	inst_of(r, s, k, 0)->held = NO_ID;
	if (mtr_holds(r) && b->is_body)
		inst_of(r, s, k, 0)->held = g;
	else
		mtr_reshard(r, &g);
	/* reshard_after_forward = N: dim 0 of each parameter over N ranks
	 * (FSDPParam's sharded_post_forward_size), kept to the backward */
	if (b->is_body && b->nlayers && shards(r->job->sharding) && r->job->fsdp_reshard_to > 1 &&
	    inst_of(r, s, k, 0)->post == NO_ID)
		inst_of(r, s, k, 0)->post = put(r, mem_seg_iter(r->cx, seg)->v[S_HELD], STREAM_COMPUTE);
	offload(r, s, k);
}

static void forward(struct tr *r, uint32_t *root)
{
	bool *o = &r->cx->ovf;
	enum mem_sharding m = r->job->sharding;

	/* FSDP's root unit stays gathered through forward and backward */
	r->t->what = "root unit";	/* not the optimizer step's label of the step before */
	if (shards(m) && m != MEM_SHARD_ZERO3 && *root == NO_ID)	/* else kept (sync_step) */
		*root = mtr_gather(r, mtr_root_bytes(r));
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t n = kept(seg->count), mid = seg->count - n;

		mtr_split_at(r, s, false, root);
		for (uint64_t k = 0; k < n; k++) {
			if (mid && k == MEM_TRACE_REPEATS / 2) {
				r->t->what = "folded repeats";
				/* offloaded stored activations are on the host */
				r->agg_act[s] = put(r, mem_mul(o, mem_add(o, act(r, mem_add(o,
					mem_sub(it->v[S_STORED_ACT], it->v[S_STORED_OFF]),
					it->v[S_STORED_LOG]), 0), it->v[S_CAST_KEEP]), mid), STREAM_COMPUTE);
			}
			forward_repeat(r, s, k);
		}
	}
	/* autocast's cache of recomputed layers' casts ends with the forward pass */
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; k < kept(r->st->segs[s].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
				drop(r, &inst_of(r, s, k, j)->cfwd);
}

/* AccumulateGrad: with a .grad already there (accumulation, resident
 * gradients) each new gradient is its own tensor, added in place and freed;
 * the first micro-batch's is stolen as .grad (produced above). */
static void accumulate(struct tr *r, const struct mem_cost *c, const struct mem_layer *l)
{
	/* ZeRO-2/3 and FSDP produce an unsharded gradient every micro-batch;
	 * Megatron-Core's Linear layers accumulate their weight gradient into
	 * main_grad in the GEMM (layers.py LinearWithGradAccumulationAndAsync-
	 * Communication.backward: wgrad_gemm_accum_fp32), the model's rule for
	 * every layer (memory-model.md "Megatron-Core") */
	if (produces(r) || shards(r->job->sharding) || r->job->sharding == MEM_SHARD_ZERO2 ||
	    r->job->wgrad_fused)
		return;
	if (!mtr_shares(r, l, c->gfin, K_G))
		return;
	for (size_t i = 0; i < l->nparams; i++) {
		uint32_t id = put(r, r->share[i], STREAM_COMPUTE);

		drop(r, &id);
	}
}

/* Autograd frees a node's saved tensors as its backward runs, while the
 * gradients it makes are allocated: the layer's backward temporaries come
 * one by one between the frees of its saves (newest first). */
static void backward_frees(struct tr *r, struct inst *x, const struct mem_cost *c,
			   const struct mem_layer *l, struct idl *tmp)
{
	size_t nt = l->ntemp_bwd_parts, nr = x->nsaves ? x->nsaves : x->nstored;
	size_t r0 = x->nsaves ? x->saves0 : x->stored0, steps = nt > nr ? nt : nr;
	uint64_t raw = 0, tbwd = act(r, c->tbwd, r->q->tbwd), left = tbwd;

	for (size_t i = 0; i < nt; i++)
		raw += l->temp_bwd_parts[i];
	if (!raw) {
		mtr_idl_push(r, tmp, put(r, tbwd, STREAM_COMPUTE));
		nt = 0;
	}
	for (size_t i = 0; i < steps; i++) {
		if (i < nt && left) {
			uint64_t n = i + 1 == nt ? left :
				     (uint64_t)((double)tbwd * ((double)l->temp_bwd_parts[i] / (double)raw));

			n = n > left ? left : n;
			left -= n;
			mtr_idl_push(r, tmp, put(r, n, STREAM_COMPUTE));
		}
		if (i < nr)
			drop(r, &r->parts.v[r0 + nr - 1 - i]);
	}
	if (x->nsaves)
		x->nsaves = 0;
	else
		x->nstored = 0;
}

/* A tied weight's gradient made by a later layer (the LM head) waits in
 * the weight's AccumulateGrad input buffer (engine.cpp evaluate_function,
 * not_ready_) until the weight's own layer has run its backward, whose
 * gradient input_buffer.cpp accumulate adds to it (mem_timeline.c
 * tied_held).  A stage without that layer (pipelined) holds none. */
static void tied_hold(struct tr *r, const struct mem_cost *c)
{
	if (c->tied && r->st->total.v[S_TIED_END])
		mtr_idl_push(r, &r->tied, put(r, c->tied, STREAM_COMPUTE));
}

/* The bytes tensor `id` was allocated with (a search back: once per
 * tied weight and micro-batch). */
static uint64_t size_of(const struct alloc_trace *t, uint32_t id)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->ev[i].size && t->ev[i].id == id)
			return t->ev[i].size;
	return 0;
}

/* The owner's backward is done: AccumulateGrad has the sum (the owner's
 * own gradient, made above); the held ones go, newest first, up to the
 * bytes the owner releases. */
static void tied_release(struct tr *r, const struct mem_cost *c)
{
	uint64_t left = c->tied_end;

	while (left && r->tied.n) {
		uint32_t id = r->tied.v[--r->tied.n];

		left = mem_sub(left, size_of(r->t, id));
		drop(r, &id);
	}
}

/* The last stage's own output that step() keeps (mem_pipeline.c
 * mem_pp_own_output): the head's forward transient from the start of the
 * backward, what it saved once the loss region's backward is done. */
static void own_output(struct tr *r, const struct mem_cost *c)
{
	bool *o = &r->cx->ovf;
	uint64_t t = mem_pp_own_output(o, r->cx, r->st, true);

	if (!c) {
		mtr_idl_push(r, &r->own, put(r, t, STREAM_COMPUTE));
		r->own_rest = mem_sub(mem_pp_own_output(o, r->cx, r->st, false), t);
	} else if (r->own_rest && c->act != MEM_C_LOGITS) {
		mtr_idl_push(r, &r->own, put(r, r->own_rest, STREAM_COMPUTE));
		r->own_rest = 0;
	}
}

/* A layer's unsharded gradient: the FSDP root's reduce_dtype copy is its
 * post_backward's (mtr_root_reduce); FSDP2 without sync makes only the
 * param_dtype part in a later micro-batch, added to the accumulated one. */
static uint64_t unsharded(const struct tr *r, const struct mem_cost *c, bool unit)
{
	if (mtr_no_sync2(r) && r->acc_mode == 2)
		return mem_sub(c->gunsh, c->gacc);
	return !unit && mtr_root_reduces(r) ? mem_sub(c->gunsh, c->gred) : c->gunsh;
}

/* ZeRO-2 reduces a layer's unsharded gradient into its IPG bucket; the
 * partition it keeps is counted once that is gone (the timeline's
 * add_grads: the unsharded gradient, not also its partition). */
static bool late_grads(const struct tr *r, const struct mem_cost *c, bool unit)
{
	return !unit && c->gunsh && r->job->sharding == MEM_SHARD_ZERO2;
}

/* The end of a layer's backward: its unsharded gradient reduced, the
 * gradients stepped at once under optimizer_in_backward. */
static void layer_done(struct tr *r, struct inst *x, const struct mem_cost *c,
		       const struct mem_layer *l, bool unit, size_t g0)
{
	/* ZeRO-2 and DDP reduce a layer's gradient as soon as it exists; FSDP
	 * keeps the root's unsharded gradients to the end of the backward; the
	 * timeline counts a later micro-batch's new root gradient under FSDP2
	 * without sync at its own layer only (mem_fsdp.c mem_fsdp_unsharded) */
	if (!unit && (!(shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3) ||
		      (mtr_no_sync2(r) && r->acc_mode == 2)))
		drop(r, &x->unsh);
	if (late_grads(r, c, unit) && produces(r))
		mtr_put_params(r, l, c->gfin, K_G, &r->grads);
	if (r->job->optimizer_in_backward) {
		uint32_t step = put(r, r->st->step_max, STREAM_COMPUTE);

		drop(r, &step);
		mtr_idl_drop_from(r, &r->grads, g0);
	}
}

static void backward_layer(struct tr *r, struct inst *x, const struct mem_cost *c,
			   const struct mem_layer *l, bool unit, uint64_t cat)
{
	own_output(r, c);
	/* a recomputed layer's cached casts are the part of its casts kept */
	uint32_t cast = put(r, mem_sub(mem_sub(c->cast_tmp, x->cfwd != NO_ID ? c->cast_fwd : 0),
				       c->mm_split ? c->cast_each : 0), STREAM_COMPUTE);
	size_t g0 = r->grads.n, t0 = r->tmp.n;

	/* a node's outputs, the gradients it makes, are made before its saved
	 * tensors are released (engine.cpp evaluate_function: call_function,
	 * then fn.release_variables()) */
	if (!unit && produces(r) && !mtr_root_reduces(r) && !late_grads(r, c, unit))
		mtr_put_params(r, l, c->gfin, K_G, &r->grads);
	else if (!unit)
		accumulate(r, c, l);
	x->unsh = put(r, unsharded(r, c, unit), STREAM_COMPUTE);
	mtr_flat_grad(r, cat);
	tied_hold(r, c);
	backward_frees(r, x, c, l, &r->tmp);
	/* autograd thread's first matmul: after the loss region's backward
	 * (cross-entropy's, the upcast's), before the layer's temporaries go */
	blas_workspaces(r, 2);
	drop_run(r, x->saves0, &x->nsaves);
	drop_run(r, x->stored0, &x->nstored);
	/* what of the kept output the layer saved stays once its saves go
	 * (the timeline's output_held) */
	if (c->kept > c->kept_t)
		mtr_idl_push(r, &r->kept, put(r, c->kept - c->kept_t, STREAM_COMPUTE));
	mtr_idl_drop_from(r, &r->tmp, t0);
	matmul(r, c, c->mmb);
	drop(r, &cast);
	drop(r, &x->cfwd);
	drop(r, &x->keep);
	tied_release(r, c);
	layer_done(r, x, c, l, unit, g0);
}

/* A fully recomputed repeat's forward again, before its backward. */
static void rematerialise(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);

	if (b->is_body && mem_seg_recomputes(r->cx, seg) && b->nlayers)
		blas_workspaces(r, 2);	/* the re-run forward is autograd's */
	for (size_t j = 0; b->is_body && mem_seg_recomputes(r->cx, seg) &&
			   j < b->nlayers; j++) {
		struct inst *x = inst_of(r, s, k, j);
		uint32_t tmp, cast;

		set_quad(r, seg->block, j);
		/* the re-run forward's casts: the autocast-cached ones are saved
		 * for the layer's backward, as a forward without recompute does */
		x->cfwd = put(r, c[j].cast_fwd, STREAM_COMPUTE);
		cast = put(r, mem_sub(c[j].cast_tmp, c[j].cast_fwd), STREAM_COMPUTE);
		x->saves0 = put_saves(r, &b->layers[j], act(r, c[j].saves, r->q->save), 0,
				      b->layers[j].nsave_parts, &x->nsaves);
		tmp = put(r, act(r, c[j].tfwd, r->q->tfwd), STREAM_COMPUTE);
		drop(r, &tmp);
		drop(r, &cast);
	}
}

static void backward_repeat(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);
	bool unit = b->is_body && shards(r->job->sharding);
	uint32_t g;

	if (b->nlayers)
		r->t->what = b->layers[b->nlayers - 1].name;
	g = unit ? inst_of(r, s, k, 0)->held : NO_ID;
	if (unit)
		inst_of(r, s, k, 0)->held = NO_ID;
	if (unit && g == NO_ID)
		g = mtr_unit_gather(r, s, k, true);
	if (!b->is_body)
		mtr_root_prefetch(r, s, true);
	bring_back(r, s, k);
	rematerialise(r, s, k);
	for (size_t j = b->nlayers; j-- > 0;) {
		/* ZeRO-3 gathers a non-body module around its backward too */
		uint32_t ng;

		r->t->what = b->layers[j].name;
		ng = !b->is_body && r->job->sharding == MEM_SHARD_ZERO3 ? put(r, c[j].gath, STREAM_COMM) : NO_ID;
		set_quad(r, seg->block, j);
		backward_layer(r, inst_of(r, s, k, j), &c[j], &b->layers[j], unit,
			       unit && !j ? mem_seg_iter(r->cx, seg)->v[S_GUNSH] : 0);
		drop(r, &ng);
	}
	if (unit && ((mtr_holds(r) && r->acc_mode == 1) || mtr_keeps_gathered(r)))
		inst_of(r, s, k, 0)->held = g;	/* gathered into the next micro-batch */
	else
		mtr_reshard(r, &g);
	if (unit)
		mtr_reduce_scatter(r, s, k);
}

/* ZeRO-1/2's IPG buckets (M7): DeepSpeed's stage_1_and_2.py backward()
 * replaces self.ipg_buffer with reduce_bucket_size elements (two with
 * overlap_comm) at the start of every backward, the old list freed first,
 * and step() frees them (_release_ipg_buffers): they live from the first
 * backward to the optimizer step, the next forward included.  n = 0 frees. */
static void ipg(struct tr *r, bool make)
{
	const struct mem_job *job = r->job;

	drop(r, &r->ipg);
	if (make && (job->sharding == MEM_SHARD_ZERO1 || job->sharding == MEM_SHARD_ZERO2))
		r->ipg = put(r, mem_mul(&r->cx->ovf, mem_round(job, job->zero_reduce_bucket_bytes),
					job->overlap_comm ? 2 : 1), STREAM_COMPUTE);
}

static void backward(struct tr *r, uint32_t *root)
{
	bool *o = &r->cx->ovf;

	ipg(r, true);
	own_output(r, NULL);

	for (size_t s = r->st->nsegs; s-- > 0;) {
		const struct mem_seg *seg = &r->st->segs[s];
		uint64_t n = kept(seg->count), mid = seg->count - n;

		/* one round of Interleaved1F1B: chunk by chunk (mem_trace_fsdp.c) */
		if (s + 1 == r->st->nsegs || r->st->segs[s + 1].chunk != seg->chunk) {
			if (s + 1 < r->st->nsegs)
				mtr_chunk_reduce(r, r->st->segs[s + 1].chunk);
			mtr_chunk_enter(r, seg->chunk);
		}
		mtr_split_at(r, s, true, root);
		for (uint64_t k = n; k-- > 0;) {
			backward_repeat(r, s, k);
			if (!mid || k != MEM_TRACE_REPEATS / 2)
				continue;
			drop(r, &r->agg_act[s]);
			r->t->what = "folded repeats";
			if (r->acc_mode == 1 && mtr_chunked(r)) {
				/* its chunk's, made at the last micro-batch's entry */
			} else if (r->acc_mode == 1) {
				uint32_t flat = put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[mtr_no_sync2(r) ?
						    S_GACC : S_GUNSH], mid), STREAM_COMPUTE);

				mtr_keep_or_add(r, &flat);
			} else if (produces(r) && !r->acc_mode && !r->job->optimizer_in_backward)
				mtr_idl_push(r, &r->grads, put(r, mem_mul(o,
					 mem_seg_iter(r->cx, seg)->v[S_GFIN], mid), STREAM_COMPUTE));
		}
	}
	if (r->st->nsegs)
		mtr_chunk_reduce(r, r->st->segs[0].chunk);
	/* FSDP2's root post_backward reshards before foreach_reduce */
	if (r->job->fsdp2 && !mtr_keeps_gathered(r))
		mtr_reshard(r, root);
	mtr_root_reduce(r);
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; k < kept(r->st->segs[s].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
				drop(r, &inst_of(r, s, k, j)->unsh);
	if (!mtr_keeps_gathered(r)) {
		mtr_reshard(r, root);	/* else whole to the reduce-scatter */
		mtr_split_done(r);
	}
	r->parts.n = 0;		/* every run is freed: reuse the list */
}

/* The reduce-scatter after the last micro-batch's backward; under
 * torch.distributed.pipelining (perform_reduce_grad) every unit and the
 * root are still whole until their post_backward has run. */
static void sync_step(struct tr *r, uint32_t *root)
{
	r->t->what = "gradient reduce-scatter";
	mtr_sync_unsharded(r);
	if (!mtr_keeps_gathered(r))
		return;
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; k < kept(r->st->segs[s].count); k++)
			if (r->job->blocks[r->st->segs[s].block].nlayers)
				mtr_reshard(r, &inst_of(r, s, k, 0)->held);
	mtr_reshard(r, root);
	mtr_split_done(r);
}

/* torch.distributed.pipelining's PipelineStage buffers beside the walked
 * micro-batch, `chunks` forwards in flight: the receive buffers, the stage
 * outputs fwd_cache holds and, at a later micro-batch, the input gradients
 * left on the receive buffers (mem_pipeline.c, the timeline's make_base). */
static uint64_t stage_io(struct tr *r, uint64_t chunks, bool later)
{
	bool *o = &r->cx->ovf;
	uint32_t i = r->st->index;
	uint64_t n = mem_add(o, mem_pp_recv_bytes(o, r->job, i, chunks), mem_pp_output_bytes(o, r->job, i, chunks));

	return later ? mem_add(o, n, mem_pp_input_grad_bytes(o, r->job, i, chunks)) : n;
}

/* Buffers that live from the first forward on, through every optimizer
 * step (the timeline's base, which its optimizer instant keeps): the stage
 * buffers of the first micro-batch (made by _prepare_forward_infra and
 * kept) and Megatron's GlobalMemoryBuffer for the gathered sequence-parallel
 * input (mem_comm.c mem_comm_sp_buffer: allocated once, never freed). */
static void resident_buffers(struct tr *r, uint64_t first)
{
	r->t->what = "pipeline and sequence-parallel buffers";
	r->io = stage_io(r, first, false);
	put(r, r->io, STREAM_COMPUTE);
	put(r, mem_comm_sp_buffer(r->job, &r->cx->ovf), STREAM_COMPUTE);
}

/* data { later_seq_len } (lit-gpt 2023's longest sample first): a later
 * micro-batch is at most that long, its activations and logits per token
 * (the timeline's later_shape, which takes eager attention's s^2 share per
 * token too). */
static void later_len(struct tr *r, bool later, uint64_t len)
{
	uint64_t n = r->job->later_seq_len;

	if (later && n && r->job->shape_seq_len && n < len) {
		r->len = n;
		r->per_token = true;
	}
}

static void micro_batch(struct tr *r, uint64_t chunks, bool later)
{
	bool *o = &r->cx->ovf;
	/* the other in-flight micro-batches' stored activations (§4.6) and,
	 * under DualPipe(V), what the deferred W passes hold beyond them
	 * (mem_pipeline.c mem_pp_deferred_w, the timeline's base) */
	uint32_t extra = put(r, act(r, mem_add(o, mem_add(o,
				mem_pp_extra(o, r->job, r->st, chunks, S_STORED_ACT, S_STORED_OFF),
				mem_pp_extra(o, r->job, r->st, chunks, S_STORED_LOG, S__COUNT)),
				mem_pp_deferred_w(o, r->job, r->st)), 0), STREAM_COMPUTE);
	uint32_t *root = &r->root, io, outs;
	uint64_t len = r->len;

	/* a later micro-batch's stage buffers beyond the first's (kept) */
	io = put(r, later ? mem_sub(stage_io(r, chunks, true), r->io) : 0, STREAM_COMPUTE);
	/* step()'s output_chunks: the earlier micro-batches' logits (mem_pipeline.c) */
	outs = put(r, mem_pp_kept_outputs(o, r->cx, r->st, later), STREAM_COMPUTE);
	/* the loop rebinds its output each micro-batch (fsdp_qlora's `output =
	 * None` per iteration, torchtune 2024's `logits = ...`): a previous
	 * micro-batch's kept output is gone before this one's loss region */
	mtr_idl_drop_from(r, &r->kept, 0);
	r->acc_mode = !mtr_keeps_unsharded(r) && !mtr_no_sync2(r) ? 0 : later ? 2 : 1;
	later_len(r, later, len);
	blas_workspaces(r, 1);
	forward(r, root);
	backward(r, root);
	r->len = len;
	r->per_token = false;
	mtr_idl_drop_from(r, &r->own, 0);
	drop(r, &outs);
	drop(r, &extra);	/* no micro-batch is in flight after the last backward */
	/* the last micro-batch syncs (the trace's later one; the only one) */
	if (r->acc_mode == 2 || (r->acc_mode == 1 && r->job->micro_batches < 2))
		sync_step(r, root);
	r->acc_mode = 0;
	mtr_caught_up(r);
	drop(r, &io);
	if (r->job->optimizer_in_backward)
		mtr_idl_drop_from(r, &r->kept, 0);
	r->have_grads = !r->job->optimizer_in_backward;
}

/* One parameter's step temporary on this rank (memory.c cost_step_temp). */
static uint64_t step_temp(const struct tr *r, const struct mem_param *p)
{
	const struct mem_job *job = r->job;
	uint32_t n = p->shard_group ? p->shard_group : p->expert ? r->cx->expert_n : r->cx->shard_n;
	uint64_t t = p->step_temp_bytes;

	if (job->offload_optimizer || !t || !p->trainable)
		return 0;
	if (job->sharding != MEM_SHARD_NONE && job->sharding != MEM_SHARD_DDP &&
	    job->sharding != MEM_SHARD_FSDP_NO_SHARD && n > 1)
		t = t / n + (t % n != 0);
	return mem_round(job, t);
}

/* The step's temporaries, one tensor per parameter of the kept repeats
 * (torch.optim _multi_tensor_adam: _foreach_sqrt makes one per tensor of
 * the group, alive together; _single_tensor_adam one at a time), and one
 * for the folded middle's group. */
static void step_temps(struct tr *r)
{
	struct idl group = { 0 };
	bool *o = &r->cx->ovf;

	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_block *b = &r->job->blocks[seg->block];
		uint64_t mid = seg->count - kept(seg->count);

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < b->nlayers; j++)
				for (size_t i = 0; i < b->layers[j].nparams; i++) {
					const struct mem_param *p = &b->layers[j].params[i];
					uint32_t id = put(r, step_temp(r, p), STREAM_COMPUTE);

					if (p->step_temp_grouped)
						mtr_idl_push(r, &group, id);
					else
						drop(r, &id);
				}
		if (mid)
			mtr_idl_push(r, &group, put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_STEP_GROUP],
							   mid), STREAM_COMPUTE));
	}
	mtr_idl_drop_from(r, &group, 0);
	free(group.v);
}

/* The optimizer step (the first creates the states, as torch.optim does
 * lazily), then zero_grad(set_to_none) frees the produced gradients. */
static void optimizer(struct tr *r)
{
	if (!r->states)
		mtr_states(r);
	r->t->what = "optimizer step";
	ipg(r, false);
	step_temps(r);
	/* train.py's `output = None` comes after optimizer.step() */
	mtr_idl_drop_from(r, &r->kept, 0);
	if (r->zeros)
		return;
	mtr_idl_drop_from(r, &r->grads, 0);
	r->have_grads = false;
}

/* Only a job with shares (padding = longest) indexes them. */
static bool make_qbase(struct tr *r)
{
	size_t n = 0;

	if (!r->job->shape_quad)
		return true;
	r->qbase = malloc((r->job->nblocks ? r->job->nblocks : 1) * sizeof(*r->qbase));
	if (!r->qbase)
		return false;
	for (size_t b = 0; b < r->job->nblocks; b++) {
		r->qbase[b] = n;
		n += r->job->blocks[b].nlayers;
	}
	return true;
}

static bool make_ids(struct tr *r)
{
	size_t n = 0, ns = r->st->nsegs ? r->st->nsegs : 1;

	r->base = calloc(ns, sizeof(*r->base));
	r->agg_act = malloc(ns * sizeof(uint32_t));
	if (!r->base || !r->agg_act)
		return false;
	for (size_t s = 0; s < r->st->nsegs; s++) {
		size_t nl = r->job->blocks[r->st->segs[s].block].nlayers;

		r->base[s] = n;
		r->agg_act[s] = NO_ID;
		if (nl && kept(r->st->segs[s].count) > (SIZE_MAX - n) / nl)
			return false;
		n += (size_t)kept(r->st->segs[s].count) * nl;
	}
	r->in = malloc((n ? n : 1) * sizeof(*r->in));
	if (!r->in || !make_qbase(r))
		return false;
	for (size_t i = 0; i < (n ? n : 1); i++)
		r->in[i] = (struct inst){ NO_ID, NO_ID, NO_ID, NO_ID, NO_ID, 0, 0, 0, 0, 0, 0 };
	return true;
}

static void tr_init(struct tr *r, struct mem_ctx *cx, const struct mem_stage *st,
		    struct alloc_trace *out)
{
	const struct mem_job *job = cx->job;

	r->cx = cx;
	r->job = job;
	r->st = st;
	r->t = out;
	/* bucket views (DDP, Megatron's main_grad) exist from the wrap on;
	 * zeroed gradients are made by the first backward and then kept */
	r->resident = job->grad_as_bucket_view &&
		      (job->sharding == MEM_SHARD_DDP || job->sharding == MEM_SHARD_NONE ||
		       job->sharding == MEM_SHARD_ZERO1 || job->sharding == MEM_SHARD_ZERO2);
	r->zeros = job->grads_persistent && !r->resident;
	r->pre = NO_ID;
	r->cat = NO_ID;
	r->root = NO_ID;
	r->rest = NO_ID;
	r->tail = NO_ID;
	r->head_copy = NO_ID;
	r->ipg = NO_ID;
}

static void tr_free(struct tr *r)
{
	free(r->in);
	free(r->qbase);
	free(r->base);
	free(r->agg_act);
	free(r->grads.v);
	free(r->parts.v);
	free(r->loads.v);
	free(r->tmp.v);
	free(r->agq.v);
	free(r->tied.v);
	free(r->kept.v);
	free(r->own.v);
	free(r->acc.v);
	free(r->cacc.v);
	free(r->share);
}

/* A stage's trace made a step at a time (gen_begin, gen_step), so that a
 * replay that stops early leaves the later steps ungenerated. */
struct gen {
	struct tr r;
	uint64_t first, later;
	int step, steps;
	bool ok;
};

static void gen_begin(struct gen *g, struct mem_ctx *cx, const struct mem_stage *st,
		      uint64_t first, uint64_t later, int steps, struct alloc_trace *out)
{
	const struct mem_job *job = cx->job;

	memset(g, 0, sizeof(*g));
	g->first = first;
	g->later = later;
	g->steps = steps;
	tr_init(&g->r, cx, st, out);
	g->ok = make_ids(&g->r);
	if (g->ok)
		mtr_setup(&g->r);
	if (g->ok)
		resident_buffers(&g->r, first);
	if (g->ok && job->optimizer_in_backward)
		mtr_states(&g->r);	/* stepped in backward: created on the first gradient */
	out->varies = job->shape_seq_len && job->shape_min_seq_len < job->shape_seq_len;
}

/* The next step appended to the trace (its mark first); false if there is
 * none left or the trace could not be made. */
static bool gen_step(void *ctx)
{
	struct gen *g = ctx;
	struct tr *r = &g->r;

	if (!g->ok || r->t->nomem || g->step >= g->steps)
		return false;
	r->len = step_len(r->job, g->step, g->steps);
	g->step++;
	alloc_trace_mark(r->t);
	micro_batch(r, g->first, false);
	if (r->job->micro_batches >= 2)
		micro_batch(r, g->later, true);
	if (!r->job->optimizer_in_backward)
		optimizer(r);
	return !r->t->nomem;
}

bool mem_trace_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, int steps, struct alloc_trace *out)
{
	struct gen g;

	gen_begin(&g, cx, st, first, later, steps, out);
	while (gen_step(&g))
		;
	tr_free(&g.r);
	return g.ok && !out->nomem;
}

/* The first step creates the optimizer states and the second starts from
 * the pool the first left; the replay stops before a further step once
 * one left peak reserved where it was (alloc_replay): it repeats the same
 * requests against the same free blocks, so every later one would too, and
 * is not generated (alloc_replay_steps asks for each step beyond the
 * second as it reaches it).  Varying shapes never settle: every step is
 * made and replayed.  One trace serves both replays of a job that runs out
 * of memory. */
int mem_replay_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, const struct alloc_config *cfg, struct alloc_replay *out,
		     struct alloc_replay *written)
{
	struct alloc_trace t = { 0 };
	enum alloc_status as = ALLOC_NOMEM;
	bool vary = cx->job->shape_seq_len && cx->job->shape_min_seq_len < cx->job->shape_seq_len;
	struct gen g;
	struct alloc_more more = { gen_step, &g };

	gen_begin(&g, cx, st, first, later, vary ? MEM_TRACE_SHAPE_STEPS : MEM_TRACE_MAX_STEPS, &t);
	for (int i = 0; i < (vary ? MEM_TRACE_SHAPE_STEPS : 2); i++)
		gen_step(&g);
	if (g.ok && !t.nomem)
		as = alloc_replay_steps(&t, &more, cfg, out, written);
	tr_free(&g.r);
	alloc_trace_free(&t);
	return as;
}
