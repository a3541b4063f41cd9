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
 */
#include "analyzer/mem_internal.h"
#include "analyzer/alloc.h"
#include "analyzer/mem_fsdp1.h"

#include <stdlib.h>
#include <string.h>

#define STREAM_COMPUTE 0u
#define STREAM_COMM 1u		/* FSDP's all-gather stream */
#define STREAM_RS 2u		/* FSDP's reduce-scatter stream */
#define NO_ID UINT32_MAX

/* A growable list of trace ids. */
struct idl {
	uint32_t *v;
	size_t n, cap;
};

/* Ids of one tensor-by-tensor layer instance; stored and saves are runs of
 * r->parts (one id per saved tensor). */
struct inst {
	uint32_t keep, cfwd, unsh;
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
	uint32_t pre;		/* FSDP1: the next unit, gathered ahead (prefetch) */
	uint64_t *share;	/* scratch: one layer's per-parameter bytes */
	size_t share_cap;
	bool states;		/* optimizer states exist (created by the first step) */
	bool resident;		/* gradients allocated at setup */
	bool zeros;		/* zero_grad(set_to_none=False): made by the first backward, kept */
	bool have_grads;	/* produced by an earlier micro-batch of this step */
	uint64_t len;		/* this step's padded length (job->shape_seq_len) */
	size_t *qbase;		/* per block: its first layer's index into job->shape_quad */
	const struct mem_quad *q;	/* the running layer's */
};

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

static void idl_push(struct tr *r, struct idl *l, uint32_t id)
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
static void idl_drop_from(struct tr *r, struct idl *l, size_t from)
{
	while (l->n > from) {
		uint32_t id = l->v[--l->n];

		drop(r, &id);
	}
}

enum kind { K_W, K_G, K_S, K_M };

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
static bool shares(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k)
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
static void put_params(struct tr *r, const struct mem_layer *l, uint64_t total, enum kind k,
		       struct idl *keep)
{
	if (!shares(r, l, total, k)) {
		uint32_t id = put(r, total, STREAM_COMPUTE);

		if (keep)
			idl_push(r, keep, id);
		return;
	}
	for (size_t i = 0; i < l->nparams; i++) {
		uint32_t id = put(r, r->share[i], STREAM_COMPUTE);

		if (keep)
			idl_push(r, keep, id);
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
		idl_push(r, into, put(r, total, STREAM_COMPUTE));
		return;
	}
	for (size_t i = from; i < to && left; i++) {
		uint64_t n = i + 1 == to ? left : (uint64_t)((double)total * ((double)v[i] / (double)raw));

		n = n > left ? left : n;
		left -= n;
		idl_push(r, into, put(r, n, STREAM_COMPUTE));
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

/* The part of a layer's rounded states+master bytes `s` that is its fp32
 * master copies (master) or its optimizer states (!master). */
static uint64_t state_part(const struct mem_layer *l, uint64_t s, bool master)
{
	uint64_t st = 0, ms = 0, m;

	for (size_t i = 0; i < l->nparams; i++)
		if (l->params[i].trainable) {
			st += l->params[i].state_bytes;
			ms += l->params[i].master_bytes;
		}
	if (!ms)
		return master ? 0 : s;
	m = (uint64_t)((double)s * ((double)ms / ((double)st + (double)ms)));
	return master ? m : s - m;
}

/* Loading that gathers whole units before sharding them (FSDP's
 * FlatParameter from a model already on the GPU, or one moved there a
 * unit at a time). */
static bool loads_whole(const struct tr *r)
{
	enum mem_load ld = r->job->load;

	return shards(r->job->sharding) && (ld == MEM_LOAD_FROM_PRETRAINED || ld == MEM_LOAD_RANK0_CPU);
}

/* torchao's to_nf4 beside a weight's 16-bit source (phases.c
 * torchao_transient): scaled_blocks, then the two [elements, 16] tensors
 * of quantize_tensor_nearest, freed before the packed weight is made. */
static void quant_temps(struct tr *r, const struct mem_param *p)
{
	uint64_t e = p->numel ? p->load_bytes / p->numel : 0, n = p->numel;
	uint32_t sc, qb = NO_ID, d1, d2;

	if (p->load_quantizer == MEM_QUANT_BNB || !p->load_bytes)
		return;
	if (p->load_quantizer == MEM_QUANT_TORCHAO && n > (1u << 20))
		n = 1u << 20;
	sc = put(r, mem_round(r->job, p->load_bytes), STREAM_COMPUTE);
	if (p->load_quantizer == MEM_QUANT_TORCHAO)
		qb = put(r, mem_round(r->job, p->numel), STREAM_COMPUTE);
	d1 = put(r, mem_round(r->job, mem_mul(&r->cx->ovf, n * e, 16)), STREAM_COMPUTE);
	d2 = put(r, mem_round(r->job, mem_mul(&r->cx->ovf, n * e, 16)), STREAM_COMPUTE);
	drop(r, &d1);
	drop(r, &d2);
	drop(r, &qb);
	drop(r, &sc);
}

/* One layer's weights as loaded, unsharded, onto r->loads: a quantised
 * weight's 16-bit source goes to the GPU, is packed there and freed
 * (bitsandbytes Params4bit._quantize). */
static void load_originals(struct tr *r, struct inst *x, const struct mem_layer *l,
			   const struct mem_cost *c)
{
	bool sh = shards(r->job->sharding);

	x->load0 = r->loads.n;
	if (shares(r, l, sh ? c->gath : c->w, K_W))
		for (size_t i = 0; i < l->nparams; i++) {
			uint32_t src = put(r, mem_round(r->job, l->params[i].load_bytes), STREAM_COMPUTE);

			quant_temps(r, &l->params[i]);
			idl_push(r, &r->loads, put(r, r->share[i], STREAM_COMPUTE));
			drop(r, &src);
		}
	x->nload = r->loads.n - x->load0;
}

/* A layer's resident weights, each after its own loading (meta init,
 * load = meta): the 16-bit source of a quantised weight and its packed
 * form when that is not what stays (sharded, offloaded), or the full
 * tensor a shard is cut from (torchtitan/torchtune distribute_tensor). */
static void load_in_place(struct tr *r, const struct mem_layer *l, const struct mem_cost *c)
{
	uint64_t *w, *u, unsharded = shards(r->job->sharding) ? c->gath : c->w;

	if (r->job->load == MEM_LOAD_NONE || !shares(r, l, unsharded, K_W)) {
		put_params(r, l, c->w, K_W, NULL);
		return;
	}
	u = malloc(l->nparams * sizeof(*u) + 1);
	if (!u) {
		r->t->nomem = true;
		return;
	}
	memcpy(u, r->share, l->nparams * sizeof(*u));
	if (!shares(r, l, c->w, K_W))
		memset(r->share, 0, l->nparams * sizeof(*u));
	w = r->share;
	for (size_t i = 0; i < l->nparams; i++) {
		uint64_t src = mem_round(r->job, l->params[i].load_bytes);
		uint32_t a = put(r, src ? src : w[i] < u[i] ? u[i] : 0, STREAM_COMPUTE);
		uint32_t q;

		quant_temps(r, &l->params[i]);
		q = src && w[i] < u[i] ? put(r, u[i], STREAM_COMPUTE) : NO_ID;
		put(r, w[i], STREAM_COMPUTE);
		drop(r, &a);
		drop(r, &q);
	}
	free(u);
}

static void drop_loads(struct tr *r, struct inst *x)
{
	for (size_t i = x->load0 + x->nload; i-- > x->load0;)
		drop(r, &r->loads.v[i]);
	x->nload = 0;
}

/* FSDP1 keeps a unit's shard as one FlatParameter, cloned while the flat
 * buffer and the originals are alive: _flat_param.py FlatParamHandle.shard
 * (`_get_shard`: chunk.clone(), then `orig_storage._resize_(0)` frees the
 * buffer), called from _init_utils.py _init_param_handle_from_params while
 * its caller _init_param_handle_from_module still holds the originals in
 * `managed_params`; they go when it returns. */
static void fsdp1_shard(struct tr *r, size_t s, uint64_t k, size_t j0, size_t j1, uint32_t *flat)
{
	const struct mem_cost *c = mem_seg_costs(r->cx, &r->st->segs[s]);
	uint64_t w = 0;

	for (size_t j = j0; j < j1; j++)
		w = mem_add(&r->cx->ovf, w, c[j].w);
	put(r, w, STREAM_COMPUTE);
	drop(r, flat);
	for (size_t j = j0; j < j1; j++)
		drop_loads(r, inst_of(r, s, k, j));
}

/* One unit's weights when loading shards whole units: its originals
 * (already on the GPU under from_pretrained), the FlatParameter they are
 * concatenated into (flat_param.py flatten_tensors), then the shard. */
static void load_unit(struct tr *r, size_t s, uint64_t k, size_t j0, size_t j1)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);
	uint64_t unit = 0;
	uint32_t flat;

	for (size_t j = j0; j < j1; j++) {
		if (r->job->load != MEM_LOAD_FROM_PRETRAINED)
			load_originals(r, inst_of(r, s, k, j), &b->layers[j], &c[j]);
		unit = mem_add(&r->cx->ovf, unit, c[j].gath);
	}
	flat = put(r, unit, STREAM_COMPUTE);
	if (r->job->fsdp1 && r->job->sharding != MEM_SHARD_ZERO3) {
		fsdp1_shard(r, s, k, j0, j1, &flat);
		return;
	}
	for (size_t j = j0; j < j1; j++)
		drop_loads(r, inst_of(r, s, k, j));
	for (size_t j = j0; j < j1; j++)
		put_params(r, &b->layers[j], c[j].w, K_W, NULL);
	drop(r, &flat);
}

/* What a layer keeps from setup on: master copies (made when the
 * optimizer wraps the model), persistent buckets, resident gradients. */
static void layer_rest(struct tr *r, const struct mem_layer *l, const struct mem_cost *c)
{
	put_params(r, l, state_part(l, c->s, true), K_M, NULL);
	put(r, c->bucket, STREAM_COMPUTE);
	if (r->resident)
		put(r, c->gfin, STREAM_COMPUTE);
}

/* The kept repeats of one segment, unit by unit (a body repeat is FSDP's
 * unit; outside the body each layer is one). */
static void setup_seg(struct tr *r, size_t s)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_block *b = &r->job->blocks[seg->block];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);

	for (uint64_t k = 0; k < kept(seg->count); k++) {
		r->t->what = b->layers[0].name;
		for (size_t j = 0; loads_whole(r) && j < b->nlayers; j++)
			if (!b->is_body || j == 0)
				load_unit(r, s, k, j, b->is_body ? b->nlayers : j + 1);
		for (size_t j = 0; j < b->nlayers; j++) {
			r->t->what = b->layers[j].name;
			if (!loads_whole(r))
				load_in_place(r, &b->layers[j], &c[j]);
			layer_rest(r, &b->layers[j], &c[j]);
		}
	}
}

/* Loading and setup: under from_pretrained with sharding every weight is
 * on the GPU whole before FSDP shards it (phases.c loading). */
static void setup(struct tr *r)
{
	bool *o = &r->cx->ovf;

	r->t->what = "loading";
	for (size_t s = 0; r->job->load == MEM_LOAD_FROM_PRETRAINED && loads_whole(r) &&
			   s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_block *b = &r->job->blocks[seg->block];

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < b->nlayers; j++)
				load_originals(r, inst_of(r, s, k, j), &b->layers[j],
					       &mem_seg_costs(r->cx, seg)[j]);
	}
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t mid = seg->count - kept(seg->count);

		setup_seg(r, s);
		if (!mid)
			continue;
		r->t->what = "folded repeats";
		put(r, mem_mul(o, it->v[S_W], mid), STREAM_COMPUTE);
		put(r, mem_mul(o, it->v[S_BUCKET], mid), STREAM_COMPUTE);
		if (r->resident)
			put(r, mem_mul(o, it->v[S_GFIN], mid), STREAM_COMPUTE);
	}
	r->loads.n = 0;
	if (r->job->sharding == MEM_SHARD_ZERO3)
		put(r, mem_round(r->job, r->job->zero_reduce_bucket_bytes), STREAM_COMPUTE);
	if (r->job->sharding == MEM_SHARD_ZERO1 || r->job->sharding == MEM_SHARD_ZERO2)
		put(r, mem_mul(o, mem_round(r->job, r->job->zero_reduce_bucket_bytes),
			       r->job->overlap_comm ? 2 : 1), STREAM_COMPUTE);
}

/* Optimizer states of every kept layer instance and the folded middle. */
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
				put_params(r, &l[j], state_part(&l[j], c[j].s, false), K_S, NULL);
		if (mid)
			put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_S], mid), STREAM_COMPUTE);
	}
	r->states = true;
}

/* FSDP1 frees a unit's gathered flat parameter after record_stream() on the
 * compute stream (_flat_param.py FlatParamHandle._free_unsharded_flat_param),
 * so the all-gather stream gets the block back only once the compute stream
 * is past the unit.  The CPU learns it when the rate limiter
 * (limit_all_gathers; _runtime_utils.py _unshard: _free_event_queue
 * dequeue_if_needed, two events in flight) waits on the oldest free event
 * before an all-gather; the trace assumes the GPU no further ahead. */
static bool records(const struct tr *r)
{
	return r->job->fsdp1 && shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3;
}

static void unshard_wait(struct tr *r)
{
	if (!records(r) || r->agq.n < 2)
		return;
	alloc_trace_complete(r->t, r->agq.v[0]);
	memmove(r->agq.v, r->agq.v + 1, (r->agq.n - 1) * sizeof(*r->agq.v));
	r->agq.n--;
}

static uint32_t gather(struct tr *r, uint64_t n)
{
	if (n)
		unshard_wait(r);
	return put(r, n, STREAM_COMM);
}

/* The GPU has caught up: every recorded free completes.  The trace takes
 * the end of each micro-batch for it (a loop reads its loss on the host
 * once per micro-batch, as torchtune's does for its progress bar). */
static void caught_up(struct tr *r)
{
	for (size_t i = 0; i < r->agq.n; i++)
		alloc_trace_complete(r->t, r->agq.v[i]);
	r->agq.n = 0;
}

/* The gathered bytes of the body unit after (s, k) in this pass, 0 if
 * none follows among the kept repeats (the folded middle gathers nothing). */
static uint64_t next_unit(const struct tr *r, size_t s, uint64_t k, bool bwd)
{
	const struct mem_seg *seg = &r->st->segs[s];

	if (bwd ? k > 0 : k + 1 < kept(seg->count))
		return mem_seg_iter(r->cx, seg)->v[S_GATH];
	for (size_t i = s; bwd ? i-- > 0 : ++i < r->st->nsegs;) {
		const struct mem_seg *o = &r->st->segs[i];

		if (r->job->blocks[o->block].is_body && o->count)
			return mem_seg_iter(r->cx, o)->v[S_GATH];
	}
	return 0;
}

/* A body unit's all-gather, or the one its predecessor prefetched; then,
 * as FSDP1 does with forward_prefetch / BACKWARD_PRE (_runtime_utils.py
 * _pre_forward_unshard, _pre_backward_hook -> _prefetch_handle), the next
 * unit's, through the same rate limiter (mem_fsdp1_prefetch). */
static uint32_t unit_gather(struct tr *r, size_t s, uint64_t k, bool bwd)
{
	uint32_t g = r->pre;
	uint64_t next = next_unit(r, s, k, bwd);

	if (g == NO_ID)
		g = gather(r, mem_seg_iter(r->cx, &r->st->segs[s])->v[S_GATH]);
	r->pre = NO_ID;
	if (next && records(r) && mem_fsdp1_prefetch(r->job, bwd, 1))
		r->pre = gather(r, next);
	return g;
}

static void reshard(struct tr *r, uint32_t *g)
{
	if (!records(r) || *g == NO_ID) {
		drop(r, g);
		return;
	}
	alloc_trace_release_recorded(r->t, *g);
	idl_push(r, &r->agq, *g);
	*g = NO_ID;
}

static void forward_layer(struct tr *r, struct inst *x, const struct mem_cost *c,
			  const struct mem_layer *l)
{
	size_t t0 = r->tmp.n;
	uint32_t cast;
	size_t n = l->nsave_parts, h = (n + 1) / 2, c1 = 0, c2 = 0;
	/* a recomputed layer stores its input: per token */
	uint64_t stored = act(r, c->stored, c->stored == c->saves ? r->q->save : 0), a = stored, all = 0;

	x->keep = put(r, c->cast_keep, STREAM_COMPUTE);
	x->cfwd = put(r, c->cast_fwd, STREAM_COMPUTE);
	cast = put(r, mem_sub(c->cast_tmp, c->cast_fwd), STREAM_COMPUTE);
	if (c->stored != c->saves)
		h = n = 0;	/* a recomputed repeat stores its input (and SAC's kept outputs) */
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
	idl_drop_from(r, &r->tmp, t0);
	drop(r, &cast);
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
		g = unit_gather(r, s, k, false);
	for (size_t j = 0; j < b->nlayers; j++) {
		/* ZeRO-3 gathers a non-body module around its own forward */
		uint32_t ng = !b->is_body && z3 ? put(r, c[j].gath, STREAM_COMM) : NO_ID;

		r->t->what = b->layers[j].name;
		set_quad(r, seg->block, j);
		forward_layer(r, inst_of(r, s, k, j), &c[j], &b->layers[j]);
		drop(r, &ng);
	}
	reshard(r, &g);
}

static void forward(struct tr *r, uint32_t *root)
{
	bool *o = &r->cx->ovf;
	enum mem_sharding m = r->job->sharding;

	/* FSDP's root unit stays gathered through forward and backward */
	r->t->what = "root unit";	/* not the optimizer step's label of the step before */
	if (shards(m) && m != MEM_SHARD_ZERO3)
		*root = gather(r, r->st->total.v[S_GATH_NB]);
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t n = kept(seg->count), mid = seg->count - n;

		for (uint64_t k = 0; k < n; k++) {
			if (mid && k == MEM_TRACE_REPEATS / 2) {
				r->t->what = "folded repeats";
				r->agg_act[s] = put(r, mem_mul(o, mem_add(o, act(r, mem_add(o,
					it->v[S_STORED_ACT], it->v[S_STORED_LOG]), 0), it->v[S_CAST_KEEP]),
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

/* AccumulateGrad: with a .grad already there (accumulation, resident
 * gradients) each new gradient is its own tensor, added in place and freed;
 * the first micro-batch's is stolen as .grad (produced above). */
static void accumulate(struct tr *r, const struct mem_cost *c, const struct mem_layer *l)
{
	/* ZeRO-2/3 and FSDP produce an unsharded gradient every micro-batch */
	if (produces(r) || shards(r->job->sharding) || r->job->sharding == MEM_SHARD_ZERO2)
		return;
	if (!shares(r, l, c->gfin, K_G))
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
		idl_push(r, tmp, put(r, tbwd, STREAM_COMPUTE));
		nt = 0;
	}
	for (size_t i = 0; i < steps; i++) {
		if (i < nt && left) {
			uint64_t n = i + 1 == nt ? left :
				     (uint64_t)((double)tbwd * ((double)l->temp_bwd_parts[i] / (double)raw));

			n = n > left ? left : n;
			left -= n;
			idl_push(r, tmp, put(r, n, STREAM_COMPUTE));
		}
		if (i < nr)
			drop(r, &r->parts.v[r0 + nr - 1 - i]);
	}
	if (x->nsaves)
		x->nsaves = 0;
	else
		x->nstored = 0;
}

static void backward_layer(struct tr *r, struct inst *x, const struct mem_cost *c,
			   const struct mem_layer *l, bool unit)
{
	uint32_t cast = put(r, c->cast_tmp, STREAM_COMPUTE);
	size_t g0 = r->grads.n, t0 = r->tmp.n;

	backward_frees(r, x, c, l, &r->tmp);
	if (!unit && produces(r))
		put_params(r, l, c->gfin, K_G, &r->grads);
	else if (!unit)
		accumulate(r, c, l);
	x->unsh = put(r, c->gunsh, STREAM_COMPUTE);
	drop_run(r, x->saves0, &x->nsaves);
	drop_run(r, x->stored0, &x->nstored);
	idl_drop_from(r, &r->tmp, t0);
	drop(r, &cast);
	drop(r, &x->keep);
	if (r->job->optimizer_in_backward) {
		uint32_t step = put(r, r->st->step_max, STREAM_COMPUTE);

		drop(r, &step);
		idl_drop_from(r, &r->grads, g0);
	}
	/* ZeRO-2 and DDP reduce a layer's gradient as soon as it exists; FSDP
	 * keeps the root's unsharded gradients to the end of the backward */
	if (!unit && !(shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3))
		drop(r, &x->unsh);
}

/* The unit's unsharded gradients become its shard.  FSDP2 (foreach_reduce
 * in torch/distributed/_composable/fsdp/_fsdp_collectives.py) copies them
 * into a reduce-scatter input and allocates the output on the
 * reduce-scatter stream, and the sharded gradients are views of that
 * output (accumulated into the existing ones, then freed, from the second
 * micro-batch on); ZeRO-3 reduces into its resident buckets. */
static void reduce_scatter(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_sums *it = mem_seg_iter(r->cx, seg);
	size_t nl = r->job->blocks[seg->block].nlayers;
	bool fsdp = r->job->sharding != MEM_SHARD_ZERO3;
	uint32_t in = fsdp ? put(r, it->v[S_GUNSH], STREAM_RS) : NO_ID, out;

	for (size_t j = 0; j < nl; j++)
		drop(r, &inst_of(r, s, k, j)->unsh);
	if (r->job->optimizer_in_backward) {
		drop(r, &in);
		return;
	}
	out = produces(r) || fsdp ? put(r, it->v[S_GFIN], fsdp ? STREAM_RS : STREAM_COMPUTE) : NO_ID;
	drop(r, &in);
	if (produces(r))
		idl_push(r, &r->grads, out);
	else
		drop(r, &out);
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
	g = unit ? unit_gather(r, s, k, true) : NO_ID;
	for (size_t j = 0; b->is_body && mem_seg_recomputes(r->cx, seg) &&
			   j < b->nlayers; j++) {
		struct inst *x = inst_of(r, s, k, j);
		uint32_t tmp;

		set_quad(r, seg->block, j);
		x->saves0 = put_saves(r, &b->layers[j], act(r, c[j].saves, r->q->save), 0,
				      b->layers[j].nsave_parts, &x->nsaves);
		tmp = put(r, act(r, c[j].tfwd, r->q->tfwd), STREAM_COMPUTE);
		drop(r, &tmp);
	}
	for (size_t j = b->nlayers; j-- > 0;) {
		r->t->what = b->layers[j].name;
		set_quad(r, seg->block, j);
		backward_layer(r, inst_of(r, s, k, j), &c[j], &b->layers[j], unit);
	}
	reshard(r, &g);
	if (unit)
		reduce_scatter(r, s, k);
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
				idl_push(r, &r->grads, put(r, mem_mul(o,
					 mem_seg_iter(r->cx, seg)->v[S_GFIN], mid), STREAM_COMPUTE));
		}
	}
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; k < kept(r->st->segs[s].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
				drop(r, &inst_of(r, s, k, j)->unsh);
	reshard(r, root);
	r->parts.n = 0;		/* every run is freed: reuse the list */
}

static void micro_batch(struct tr *r, uint64_t chunks)
{
	bool *o = &r->cx->ovf;
	/* the other in-flight micro-batches' stored activations (§4.6) */
	uint32_t extra = put(r, act(r, mem_add(o, mem_pp_extra(o, r->job, r->st, chunks, S_STORED_ACT, S__COUNT),
					       mem_pp_extra(o, r->job, r->st, chunks, S_STORED_LOG, S__COUNT)), 0),
			     STREAM_COMPUTE);
	uint32_t root = NO_ID;

	forward(r, &root);
	backward(r, &root);
	caught_up(r);
	drop(r, &extra);
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
						idl_push(r, &group, id);
					else
						drop(r, &id);
				}
		if (mid)
			idl_push(r, &group, put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_STEP_GROUP],
							   mid), STREAM_COMPUTE));
	}
	idl_drop_from(r, &group, 0);
	free(group.v);
}

/* The optimizer step (the first creates the states, as torch.optim does
 * lazily), then zero_grad(set_to_none) frees the produced gradients. */
static void optimizer(struct tr *r)
{
	if (!r->states)
		states(r);
	r->t->what = "optimizer step";
	step_temps(r);
	if (r->zeros)
		return;
	idl_drop_from(r, &r->grads, 0);
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
		r->in[i] = (struct inst){ NO_ID, NO_ID, NO_ID, 0, 0, 0, 0, 0, 0 };
	return true;
}

bool mem_trace_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, int steps, struct alloc_trace *out)
{
	const struct mem_job *job = cx->job;
	struct tr r = { 0 };
	bool ok;

	r.cx = cx;
	r.job = job;
	r.st = st;
	r.t = out;
	/* bucket views (DDP, Megatron's main_grad) exist from the wrap on;
	 * zeroed gradients are made by the first backward and then kept */
	r.resident = job->grad_as_bucket_view &&
		     (job->sharding == MEM_SHARD_DDP || job->sharding == MEM_SHARD_NONE ||
		      job->sharding == MEM_SHARD_ZERO1 || job->sharding == MEM_SHARD_ZERO2);
	r.zeros = job->grads_persistent && !r.resident;
	r.pre = NO_ID;
	ok = make_ids(&r);
	if (ok)
		setup(&r);
	if (ok && job->optimizer_in_backward)
		states(&r);	/* stepped in backward: created on the first gradient */
	out->varies = job->shape_seq_len && job->shape_min_seq_len < job->shape_seq_len;
	for (int step = 0; ok && step < steps; step++) {
		r.len = step_len(job, step, steps);
		alloc_trace_mark(out);
		micro_batch(&r, first);
		if (job->micro_batches >= 2)
			micro_batch(&r, later);
		if (!job->optimizer_in_backward)
			optimizer(&r);
	}
	free(r.in);
	free(r.qbase);
	free(r.base);
	free(r.agg_act);
	free(r.grads.v);
	free(r.parts.v);
	free(r.loads.v);
	free(r.tmp.v);
	free(r.agq.v);
	free(r.share);
	return ok && !out->nomem;
}

/* The first step creates the optimizer states and the second starts from
 * the pool the first left; the replay stops before a further step once
 * one left peak reserved where it was (alloc_replay): it repeats the same
 * requests against the same free blocks, so every later one would too. */
int mem_replay_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		     uint64_t later, const struct alloc_config *cfg, struct alloc_replay *out)
{
	struct alloc_trace t = { 0 };
	enum alloc_status as = ALLOC_NOMEM;
	/* varying shapes never settle: every step is replayed */
	bool vary = cx->job->shape_seq_len && cx->job->shape_min_seq_len < cx->job->shape_seq_len;

	if (mem_trace_stage(cx, st, first, later, vary ? MEM_TRACE_SHAPE_STEPS : MEM_TRACE_MAX_STEPS,
			    &t))
		as = alloc_replay(&t, cfg, out);
	alloc_trace_free(&t);
	return as;
}
