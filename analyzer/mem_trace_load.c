/* SPDX-License-Identifier: MIT */
/*
 * mem_trace_load.c - the part of a stage's allocation trace before its
 * first step (memory-model.md §5.4 "Trace"): the loading of the weights
 * (mem_job.load), what setup makes resident (master copies, buckets,
 * resident gradients, the ZeRO buckets), and the optimizer states the
 * first step creates.
 */
#include "analyzer/mem_trace.h"

#include <stdlib.h>
#include <string.h>

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
	if (mtr_shares(r, l, sh ? c->gath : c->w, K_W))
		for (size_t i = 0; i < l->nparams; i++) {
			uint32_t src = put(r, mem_round(r->job, l->params[i].load_bytes), STREAM_COMPUTE);

			quant_temps(r, &l->params[i]);
			mtr_idl_push(r, &r->loads, put(r, r->share[i], STREAM_COMPUTE));
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

	if (r->job->load == MEM_LOAD_NONE || !mtr_shares(r, l, unsharded, K_W)) {
		mtr_put_params(r, l, c->w, K_W, NULL);
		return;
	}
	u = malloc(l->nparams * sizeof(*u) + 1);
	if (!u) {
		r->t->nomem = true;
		return;
	}
	memcpy(u, r->share, l->nparams * sizeof(*u));
	if (!mtr_shares(r, l, c->w, K_W))
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
		mtr_put_params(r, &b->layers[j], c[j].w, K_W, NULL);
	drop(r, &flat);
}

/* What a layer keeps from setup on: master copies (made when the
 * optimizer wraps the model), persistent buckets, resident gradients. */
static void layer_rest(struct tr *r, const struct mem_layer *l, const struct mem_cost *c)
{
	mtr_put_params(r, l, state_part(l, c->s, true), K_M, NULL);
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
void mtr_setup(struct tr *r)
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
	/* ZeRO-1/2's IPG buckets come with each backward (mem_trace.c ipg) */
}

/* Optimizer states of every kept layer instance and the folded middle. */
void mtr_states(struct tr *r)
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
				mtr_put_params(r, &l[j], state_part(&l[j], c[j].s, false), K_S, NULL);
		if (mid)
			put(r, mem_mul(o, mem_seg_iter(r->cx, seg)->v[S_S], mid), STREAM_COMPUTE);
	}
	r->states = true;
}
