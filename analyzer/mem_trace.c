/* SPDX-License-Identifier: MIT */
/*
 * mem_trace.c - the step of one stage as an allocation trace, for the
 * caching-allocator replay (memory-model.md §5.4).
 *
 * The trace follows the timeline's instants (mem_timeline.c, §5.1) with one
 * allocation per term of a layer: its stored activations, casts kept to its
 * backward, forward/backward temporaries, re-materialised saves, gradients
 * (resident, or produced in its backward), unsharded gradients and the
 * gathered copy of its unit (on a second stream, as FSDP's all-gather stream
 * allocates it).  It covers what the allocator needs to reach its steady
 * state: setup (weights, states, buckets), two optimizer steps of one or two
 * micro-batches each (the first micro-batch, a steady one), the optimizer
 * step, and the gradients freed by zero_grad(set_to_none).
 *
 * Folding: a segment of more than MEM_TRACE_REPEATS repeats keeps its first
 * and last MEM_TRACE_REPEATS / 2 repeats tensor by tensor; the repeats between
 * are one allocation per kind (their stored activations and casts, their
 * gradients), since once the pool stops growing a repeat's temporaries come
 * from blocks the earlier repeats freed.  What the fold drops is the
 * fragmentation inside the middle repeats; the analyzer adds the timeline's
 * exact peak allocated back (memory.c), so only the cache excess is approximate.
 */
#include "analyzer/mem_internal.h"
#include "analyzer/alloc.h"

#include <stdlib.h>
#include <string.h>

#define STREAM_COMPUTE 0u
#define STREAM_COMM 1u
#define NO_ID UINT32_MAX

/* Ids of one tensor-by-tensor layer instance. */
struct inst {
	uint32_t stored, keep, cfwd, saves, unsh;
};

struct tr {
	struct mem_ctx *cx;
	const struct mem_job *job;
	const struct mem_stage *st;
	struct alloc_trace *t;
	struct inst *in;	/* [seg base + kept repeat x nlayers + layer] */
	size_t *base;		/* per segment: first index into in */
	uint32_t *agg_act;	/* per segment: the folded middle */
	uint32_t *grads;	/* produced gradients, freed by zero_grad */
	size_t ngrads, grads_cap;
	bool states;		/* optimizer states exist (created by the first step) */
	bool resident;		/* gradients allocated at setup */
	bool have_grads;	/* produced by an earlier micro-batch of this step */
};

static uint64_t kept(uint64_t n)
{
	return n > MEM_TRACE_REPEATS ? MEM_TRACE_REPEATS : n;
}

static uint32_t put(struct tr *r, uint64_t n, uint32_t stream)
{
	return n ? alloc_trace_alloc(r->t, n, stream) : NO_ID;
}

static void drop(struct tr *r, uint32_t *id)
{
	if (*id != NO_ID)
		alloc_trace_release(r->t, *id);
	*id = NO_ID;
}

enum kind { K_W, K_G, K_S };

static uint64_t raw_of(const struct mem_param *p, enum kind k)
{
	if (k == K_W)
		return p->weight_bytes;
	if (!p->trainable)
		return 0;
	return k == K_G ? p->grad_bytes : p->state_bytes + p->master_bytes;
}

static void keep_grad(struct tr *r, uint32_t id)
{
	if (id == NO_ID)
		return;
	if (r->ngrads == r->grads_cap) {
		size_t nc = r->grads_cap ? r->grads_cap * 2 : 64;
		uint32_t *g = nc < SIZE_MAX / sizeof(*g) ? realloc(r->grads, nc * sizeof(*g)) : NULL;

		if (!g) {
			r->t->nomem = true;
			return;
		}
		r->grads = g;
		r->grads_cap = nc;
	}
	r->grads[r->ngrads++] = id;
}

/* A layer's `total` bytes of one kind as one tensor per parameter, in
 * proportion to the parameters' unsharded sizes (the last takes the rest),
 * as PyTorch allocates them; gradients are remembered for zero_grad. */
static void put_params(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k)
{
	uint64_t raw = 0, left = total;
	size_t last = 0;

	for (size_t i = 0; i < l->nparams; i++)
		if (raw_of(&l->params[i], k)) {
			raw += raw_of(&l->params[i], k);
			last = i;
		}
	for (size_t i = 0; raw && i < l->nparams && left; i++) {
		uint64_t x = raw_of(&l->params[i], k), n;

		if (!x)
			continue;
		n = i == last ? left : (uint64_t)((double)total * ((double)x / (double)raw));
		n = n > left ? left : n;
		left -= n;
		if (k == K_G)
			keep_grad(r, put(r, n, STREAM_COMPUTE));
		else
			put(r, n, STREAM_COMPUTE);
	}
	if (!raw && total) {
		if (k == K_G)
			keep_grad(r, put(r, total, STREAM_COMPUTE));
		else
			put(r, total, STREAM_COMPUTE);
	}
}

static struct inst *inst_of(struct tr *r, size_t s, uint64_t k, size_t j)
{
	size_t nl = r->job->blocks[r->st->segs[s].block].nlayers;

	return &r->in[r->base[s] + (size_t)k * nl + j];
}

static bool shards(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO3 || m == MEM_SHARD_FSDP_FULL || m == MEM_SHARD_FSDP_GRAD_OP ||
	       m == MEM_SHARD_FSDP_HYBRID;
}

/* Weights, states, persistent buckets and resident gradients, in layer order. */
static void states(struct tr *r)
{
	bool *o = &r->cx->ovf;

	r->t->what = "optimizer states";
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_cost *c = mem_seg_costs(r->cx, seg);
		const struct mem_layer *l = r->job->blocks[seg->block].layers;
		uint64_t mid = seg->count - kept(seg->count);

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < r->job->blocks[seg->block].nlayers; j++)
				put_params(r, &l[j], c[j].s, K_S);
		if (mid)
			put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_S], mid), STREAM_COMPUTE);
	}
	r->states = true;
}

static void setup(struct tr *r)
{
	bool *o = &r->cx->ovf;

	r->t->what = "weights";
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_cost *c = mem_seg_costs(r->cx, seg);
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t mid = seg->count - kept(seg->count);

		const struct mem_layer *l = r->job->blocks[seg->block].layers;

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < r->job->blocks[seg->block].nlayers; j++) {
				put_params(r, &l[j], c[j].w, K_W);
				put(r, c[j].bucket, STREAM_COMPUTE);
				if (r->resident)
					put(r, c[j].gfin, STREAM_COMPUTE);
			}
		if (!mid)
			continue;
		put(r, mem_mul(o, it->v[S_W], mid), STREAM_COMPUTE);
		put(r, mem_mul(o, it->v[S_BUCKET], mid), STREAM_COMPUTE);
		if (r->resident)
			put(r, mem_mul(o, it->v[S_GFIN], mid), STREAM_COMPUTE);
	}
	if (r->job->sharding == MEM_SHARD_ZERO3)
		put(r, mem_round(r->job, r->job->zero_reduce_bucket_bytes), STREAM_COMPUTE);
	if (r->job->sharding == MEM_SHARD_ZERO1 || r->job->sharding == MEM_SHARD_ZERO2)
		put(r, mem_mul(o, mem_round(r->job, r->job->zero_reduce_bucket_bytes),
			       r->job->overlap_comm ? 2 : 1), STREAM_COMPUTE);
}

static void forward_layer(struct tr *r, struct inst *x, const struct mem_cost *c)
{
	uint32_t tmp, cast;

	x->keep = put(r, c->cast_keep, STREAM_COMPUTE);
	x->cfwd = put(r, c->cast_fwd, STREAM_COMPUTE);
	cast = put(r, mem_sub(c->cast_tmp, c->cast_fwd), STREAM_COMPUTE);
	x->stored = put(r, c->stored, STREAM_COMPUTE);
	tmp = put(r, c->tfwd, STREAM_COMPUTE);
	drop(r, &tmp);
	drop(r, &cast);
}

static void forward_repeat(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);
	bool z3 = r->job->sharding == MEM_SHARD_ZERO3;
	uint32_t g = NO_ID;

	if (b->is_body && shards(r->job->sharding))
		g = put(r, mem_seg_iter(r->cx, seg)->v[S_GATH], STREAM_COMM);
	for (size_t j = 0; j < b->nlayers; j++) {
		/* ZeRO-3 gathers a non-body module around its own forward */
		uint32_t ng = !b->is_body && z3 ? put(r, c[j].gath, STREAM_COMM) : NO_ID;

		r->t->what = b->layers[j].name;
		forward_layer(r, inst_of(r, s, k, j), &c[j]);
		drop(r, &ng);
	}
	drop(r, &g);
}

static void forward(struct tr *r, uint32_t *root)
{
	bool *o = &r->cx->ovf;
	enum mem_sharding m = r->job->sharding;

	/* FSDP's root unit stays gathered through forward and backward */
	if (shards(m) && m != MEM_SHARD_ZERO3)
		*root = put(r, r->st->total.v[S_GATH_NB], STREAM_COMM);
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t n = kept(seg->count), mid = seg->count - n;

		for (uint64_t k = 0; k < n; k++) {
			if (mid && k == MEM_TRACE_REPEATS / 2) {
				r->t->what = "folded repeats";
				r->agg_act[s] = put(r, mem_mul(o, mem_add(o, mem_add(o,
					it->v[S_STORED_ACT], it->v[S_STORED_LOG]), it->v[S_CAST_KEEP]),
					mid), STREAM_COMPUTE);
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

/* A gradient is produced unless resident or left by an earlier micro-batch. */
static bool produces(const struct tr *r)
{
	return !r->resident && !r->have_grads;
}

static void backward_layer(struct tr *r, struct inst *x, const struct mem_cost *c,
			   const struct mem_layer *l, bool unit)
{
	uint32_t cast = put(r, c->cast_tmp, STREAM_COMPUTE);
	uint32_t tmp = put(r, c->tbwd, STREAM_COMPUTE);
	size_t g0 = r->ngrads;

	if (!unit && produces(r))
		put_params(r, l, c->gfin, K_G);
	x->unsh = put(r, c->gunsh, STREAM_COMPUTE);
	drop(r, &tmp);
	drop(r, &cast);
	drop(r, &x->stored);
	drop(r, &x->keep);
	drop(r, &x->saves);
	if (r->job->optimizer_in_backward) {
		uint32_t step = put(r, r->st->step_max, STREAM_COMPUTE);

		drop(r, &step);
		while (r->ngrads > g0)
			alloc_trace_release(r->t, r->grads[--r->ngrads]);
	}
	/* ZeRO-2 and DDP reduce a layer's gradient as soon as it exists; FSDP
	 * keeps the root's unsharded gradients to the end of the backward */
	if (!unit && !(shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3))
		drop(r, &x->unsh);
}

static void backward_repeat(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);
	bool unit = b->is_body && shards(r->job->sharding);
	uint32_t g = unit ? put(r, mem_seg_iter(r->cx, seg)->v[S_GATH], STREAM_COMM) : NO_ID;

	for (size_t j = 0; b->is_body && mem_seg_recomputes(r->cx, seg) &&
			   j < b->nlayers; j++) {
		uint32_t tmp;

		inst_of(r, s, k, j)->saves = put(r, c[j].saves, STREAM_COMPUTE);
		tmp = put(r, c[j].tfwd, STREAM_COMPUTE);
		drop(r, &tmp);
	}
	for (size_t j = b->nlayers; j-- > 0;) {
		r->t->what = b->layers[j].name;
		backward_layer(r, inst_of(r, s, k, j), &c[j], &b->layers[j], unit);
	}
	drop(r, &g);
	if (!unit)
		return;
	/* reduce-scatter: the unit's unsharded gradients become its shard */
	for (size_t j = 0; j < b->nlayers; j++)
		drop(r, &inst_of(r, s, k, j)->unsh);
	if (produces(r) && !r->job->optimizer_in_backward)
		keep_grad(r, put(r, mem_seg_iter(r->cx, seg)->v[S_GFIN], STREAM_COMPUTE));
}

static void backward(struct tr *r, uint32_t *root)
{
	bool *o = &r->cx->ovf;

	for (size_t s = r->st->nsegs; s-- > 0;) {
		const struct mem_seg *seg = &r->st->segs[s];
		uint64_t n = kept(seg->count), mid = seg->count - n;

		for (uint64_t k = n; k-- > 0;) {
			backward_repeat(r, s, k);
			if (!mid || k != MEM_TRACE_REPEATS / 2)
				continue;
			drop(r, &r->agg_act[s]);
			r->t->what = "folded repeats";
			if (produces(r) && !r->job->optimizer_in_backward)
				keep_grad(r, put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_GFIN], mid),
						 STREAM_COMPUTE));
		}
	}
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; k < kept(r->st->segs[s].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
				drop(r, &inst_of(r, s, k, j)->unsh);
	drop(r, root);
}

static void micro_batch(struct tr *r, uint64_t chunks)
{
	const struct mem_sums *T = &r->st->total;
	uint32_t vp = r->job->schedule == MEM_PP_INTERLEAVED && r->job->pp > 1 ? r->job->vp : 1;
	bool *o = &r->cx->ovf;
	/* the other in-flight micro-batches' stored activations (§4.6) */
	uint32_t extra = put(r, mem_add(o, mem_extra_in_flight(o, T->v[S_STORED_ACT], chunks, vp),
					mem_extra_logits_in_flight(o, r->job, T->v[S_STORED_LOG], chunks)),
			     STREAM_COMPUTE);
	uint32_t root = NO_ID;

	forward(r, &root);
	backward(r, &root);
	drop(r, &extra);
	r->have_grads = !r->job->optimizer_in_backward;
}

/* The optimizer step (the first creates the states, as torch.optim does
 * lazily), then zero_grad(set_to_none) frees the produced gradients. */
static void optimizer(struct tr *r)
{
	uint32_t step;

	r->t->what = "optimizer step";
	if (!r->states)
		states(r);
	step = put(r, mem_add(&r->cx->ovf, r->st->total.v[S_STEP_GROUP], r->st->step_max),
		   STREAM_COMPUTE);
	drop(r, &step);
	while (r->ngrads)
		alloc_trace_release(r->t, r->grads[--r->ngrads]);
	r->have_grads = false;
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
	if (r->in)
		memset(r->in, 0xff, (n ? n : 1) * sizeof(*r->in));	/* every id NO_ID */
	return r->in != NULL;
}

bool mem_trace_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, struct alloc_trace *out)
{
	const struct mem_job *job = cx->job;
	struct tr r = { 0 };
	bool ok;

	r.cx = cx;
	r.job = job;
	r.st = st;
	r.t = out;
	r.resident = job->grads_persistent ||
		     (job->sharding == MEM_SHARD_DDP && job->grad_as_bucket_view);
	ok = make_ids(&r);
	if (ok)
		setup(&r);
	if (ok && job->optimizer_in_backward)
		states(&r);	/* stepped in backward: created on the first gradient */
	/* two steps: the second starts from the pool the first left */
	for (int step = 0; ok && step < 2; step++) {
		micro_batch(&r, first);
		if (job->micro_batches >= 2)
			micro_batch(&r, later);
		if (!job->optimizer_in_backward)
			optimizer(&r);
	}
	free(r.in);
	free(r.base);
	free(r.agg_act);
	free(r.grads);
	return ok && !out->nomem;
}
