/* SPDX-License-Identifier: MIT */
/*
 * mem_trace_load.c - the part of a stage's allocation trace before its
 * first step (memory-model.md §5.4 "Trace"): the loading of the weights
 * (mem_job.load), what setup makes resident (master copies, buckets,
 * resident gradients, the ZeRO buckets), and the optimizer states the
 * first step creates.
 */
#include "analyzer/alloc/mem_trace.h"

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

/* FSDP1's NO_SHARD from rank 0's CPU model: each unit is moved, broadcast
 * and flattened as under sharding, and its FlatParameter is the unit's
 * resident weights (FlatParamHandle.shard only records metadata when
 * `not self.uses_sharded_strategy`). */
static bool fsdp1_whole(const struct tr *r)
{
	return r->job->fsdp1 && r->job->load == MEM_LOAD_RANK0_CPU &&
	       r->job->sharding == MEM_SHARD_FSDP_NO_SHARD;
}

/* Loading that gathers whole units before sharding them (FSDP's
 * FlatParameter from a model already on the GPU, or one moved there a
 * unit at a time). */
static bool loads_whole(const struct tr *r)
{
	enum mem_load ld = r->job->load;

	return (shards(r->job->sharding) || fsdp1_whole(r)) &&
	       (ld == MEM_LOAD_FROM_PRETRAINED || ld == MEM_LOAD_RANK0_CPU);
}

/* FSDP1 from rank 0's CPU model (sync_module_states): fsdp_qlora's
 * low_memory, whose weights are quantised before the wrap. */
static bool quantises_first(const struct tr *r)
{
	return r->job->fsdp1 && r->job->load == MEM_LOAD_RANK0_CPU;
}

/* FSDP1 wraps the layers outside the body as one root unit, last. */
static bool fsdp1_roots(const struct tr *r)
{
	return r->job->fsdp1 && r->job->sharding != MEM_SHARD_ZERO3 && loads_whole(r);
}

/* FSDP1 without use_orig_params from rank 0's CPU model: a FlatParameter's
 * tensors must agree on requires_grad (flat_param.py
 * _validate_tensors_to_flatten), so fsdp_qlora's policy (get_wrapping_policy:
 * every leaf module whose weight requires grad, i.e. each lora_A and
 * lora_B Linear) and PEFT's fsdp_auto_wrap_policy make each trainable
 * leaf a unit, wrapped before the body repeat that holds it. */
static bool leaf_units(const struct tr *r)
{
	return r->job->fsdp1 && !r->job->fsdp1_orig_params && r->job->load == MEM_LOAD_RANK0_CPU &&
	       r->job->sharding != MEM_SHARD_ZERO3;
}

/* HQQ's Quantizer.quantize beside the source (phases.c hqq_transient):
 * the fp32 copy, then the proximal optimiser's nine fp16 tensors at once. */
static void hqq_temps(struct tr *r, uint64_t n)
{
	uint32_t f = put(r, mem_round(r->job, mem_mul(&r->cx->ovf, n, 4)), STREAM_COMPUTE), h[9];

	for (size_t i = 0; i < 9; i++)
		h[i] = put(r, mem_round(r->job, mem_mul(&r->cx->ovf, n, 2)), STREAM_COMPUTE);
	for (size_t i = 9; i-- > 0;)
		drop(r, &h[i]);
	drop(r, &f);
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
	if (p->load_quantizer == MEM_QUANT_HQQ) {
		hqq_temps(r, p->numel);
		return;
	}
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
			   const struct mem_cost *c, bool leaf)
{
	bool sh = shards(r->job->sharding);

	x->load0 = r->loads.n;
	if (mtr_shares(r, l, sh ? c->gath : c->w, K_W))
		for (size_t i = 0; i < l->nparams; i++) {
			if (leaf && l->params[i].trainable)
				continue;	/* moved with its own unit (fsdp1_leaves) */
			/* quantised before the wrap (quantises_first): packed already */
			uint32_t src = quantises_first(r) ? NO_ID :
				       put(r, mem_round(r->job, l->params[i].load_bytes), STREAM_COMPUTE);

			if (!quantises_first(r))
				quant_temps(r, &l->params[i]);
			mtr_idl_push(r, &r->loads, put(r, r->share[i], STREAM_COMPUTE));
			drop(r, &src);
		}
	x->nload = r->loads.n - x->load0;
}

/* fsdp_qlora train.py with low_memory (FSDP1 sync_module_states): every
 * tensor is loaded and quantised on the GPU before FSDP(...) is called
 * (load_and_quantize: `type(param)(value.to(device)...).cuda(device)`,
 * then `value.data.to("cpu")` on rank 0, `.to("meta")` on the others, the
 * QuantState left on the GPU), and `torch.cuda.empty_cache()` follows; the
 * wrap then moves the packed weights.  The QuantState is made here, beside
 * the packed codes (bitsandbytes functional.py quantize_4bit: `out`, then
 * the absmax that compress_statistics quantises), and kept: the wrap's
 * resident weights leave it out (wrap_resident). */
static void quantise_ahead(struct tr *r)
{
	bool sh = shards(r->job->sharding), any = false;

	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_block *b = &r->job->blocks[seg->block];
		const struct mem_cost *c = mem_seg_costs(r->cx, seg);

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < b->nlayers; j++) {
				const struct mem_layer *l = &b->layers[j];

				if (!mtr_shares(r, l, sh ? c[j].gath : c[j].w, K_W))
					continue;
				r->t->what = l->name;
				for (size_t i = 0; i < l->nparams; i++) {
					uint32_t src = put(r, mem_round(r->job, l->params[i].load_bytes),
							   STREAM_COMPUTE), q = NO_ID;

					if (src == NO_ID)
						continue;
					any = true;
					quant_temps(r, &l->params[i]);
					q = put(r, r->share[i], STREAM_COMPUTE);
					put(r, mem_round(r->job, l->params[i].quant_state_bytes), STREAM_COMPUTE);
					drop(r, &src);
					drop(r, &q);
				}
			}
	}
	if (any)
		alloc_trace_empty_cache(r->t);
}

/* FSDP1's sync_module_states (_init_utils.py
 * _sync_module_params_and_buffers -> _sync_params_and_buffers with
 * PARAM_BROADCAST_BUCKET_SIZE, 250 MiB): c10d comm.cpp broadcast_coalesced
 * groups a unit's tensors into buckets closed once they reach the size
 * (compute_bucket_assignment_by_size), flattens each (torch/csrc/utils/
 * tensor_flatten.h flatten_dense_tensors: a cat, a view for one tensor) on
 * every rank and keeps at most two broadcasts in flight. */
#define FSDP1_BCAST_BUCKET (250ull << 20)

struct bcast {
	uint64_t fill;
	size_t n, nflight;
	uint32_t flight[2];
};

static void bcast_flush(struct tr *r, struct bcast *b)
{
	if (!b->n)
		return;
	if (b->nflight == 2) {
		drop(r, &b->flight[0]);
		b->flight[0] = b->flight[1];
		b->nflight = 1;
	}
	b->flight[b->nflight++] = b->n > 1 ? put(r, mem_round(r->job, b->fill), STREAM_COMPUTE) : NO_ID;
	b->fill = 0;
	b->n = 0;
}

static void bcast_layer(struct tr *r, struct bcast *b, const struct mem_layer *l, uint64_t unsharded,
			bool leaf)
{
	if (!mtr_shares(r, l, unsharded, K_W))
		return;
	for (size_t i = 0; i < l->nparams; i++) {
		if (!r->share[i] || (leaf && l->params[i].trainable))
			continue;
		b->fill = mem_add(&r->cx->ovf, b->fill, r->share[i]);
		b->n++;
		if (b->fill >= FSDP1_BCAST_BUCKET)
			bcast_flush(r, b);
	}
}

static void bcast_end(struct tr *r, struct bcast *b)
{
	bcast_flush(r, b);
	for (size_t i = 0; i < b->nflight; i++)
		drop(r, &b->flight[i]);
	b->nflight = 0;
}

/* Two splits of one layer's weights by parameter: a copy of the split
 * mtr_shares just made (the caller frees it), and r->share made the split
 * of @then (zeros where it has none). NULL when out of memory. */
static uint64_t *shares_then(struct tr *r, const struct mem_layer *l, uint64_t then)
{
	uint64_t *first = malloc(l->nparams * sizeof(*first) + 1);

	if (!first) {
		r->t->nomem = true;
		return NULL;
	}
	memcpy(first, r->share, l->nparams * sizeof(*first));
	if (!mtr_shares(r, l, then, K_W))
		memset(r->share, 0, l->nparams * sizeof(*first));
	return first;
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
	u = shares_then(r, l, c->w);
	if (!u)
		return;
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

/* A layer instance of an FSDP1 unit. */
struct uref {
	size_t s, j;
	uint64_t k;
};

/* Whether a body unit mixes trainable and frozen tensors, which only
 * leaf_units splits (a full fine-tune's repeat stays one FlatParameter). */
static bool mixed(const struct tr *r, const struct uref *u, size_t n)
{
	bool tr = false, fr = false;

	for (size_t i = 0; leaf_units(r) && i < n; i++) {
		const struct mem_block *b = &r->job->blocks[r->st->segs[u[i].s].block];
		const struct mem_layer *l = &b->layers[u[i].j];

		for (size_t p = 0; b->is_body && p < l->nparams; p++) {
			tr |= l->params[p].trainable;
			fr |= !l->params[p].trainable;
		}
	}
	return tr && fr;
}

/* A layer's resident bytes at the wrap: its QuantStates, made while it
 * loaded (quantise_ahead), are already on the GPU. */
static uint64_t wrap_resident(const struct tr *r, const struct mem_layer *l, uint64_t w)
{
	for (size_t i = 0; quantises_first(r) && i < l->nparams; i++) {
		uint64_t q = mem_round(r->job, l->params[i].quant_state_bytes);

		w -= w < q ? w : q;
	}
	return w;
}

/* sync_module_states' buckets over one unit's tensors (its trainable
 * ones left out where they are units of their own), all freed before the
 * FlatParameter is made. */
static void bcast_unit(struct tr *r, const struct uref *u, size_t n, bool leaf)
{
	struct bcast bc = { 0 };

	for (size_t i = 0; i < n; i++) {
		const struct mem_block *b = &r->job->blocks[r->st->segs[u[i].s].block];
		const struct mem_cost *c = &mem_seg_costs(r->cx, &r->st->segs[u[i].s])[u[i].j];

		bcast_layer(r, &bc, &b->layers[u[i].j], fsdp1_whole(r) ? c->w : c->gath, leaf);
	}
	bcast_end(r, &bc);
}

/* The trainable parameters of a body layer as units of their own
 * (leaf_units), each wrapped as fsdp1_unit does (one tensor: its broadcast
 * is a view); *g and *w lose their unsharded and resident bytes. */
static void fsdp1_leaves(struct tr *r, const struct mem_layer *l, const struct mem_cost *c,
			 uint64_t *g, uint64_t *w)
{
	uint64_t *gs;

	if (!mtr_shares(r, l, *g, K_W))
		return;
	gs = shares_then(r, l, c->w);
	if (!gs)
		return;
	for (size_t i = 0; i < l->nparams; i++) {
		uint64_t sh = r->share[i] ? r->share[i] : mem_shard_bytes(gs[i], r->cx->shard_n);
		uint32_t o, f, d;

		if (!l->params[i].trainable || !gs[i])
			continue;
		o = put(r, gs[i], STREAM_COMPUTE);
		f = put(r, gs[i], STREAM_COMPUTE);
		d = fsdp1_whole(r) ? f : put(r, sh, STREAM_COMPUTE);
		if (d != f)
			drop(r, &f);
		drop(r, &o);
		if (r->job->offload_params && d != f)
			drop(r, &d);
		*g -= *g < gs[i] ? *g : gs[i];
		*w -= *w < r->share[i] ? *w : r->share[i];
	}
	free(gs);
}

/* One FSDP1 unit's wrap (_init_utils.py _init_param_handle_from_module):
 * its originals moved to the GPU (_move_module_to_device; on the other
 * ranks param_init_fn's to_empty, the same sizes), sync_module_states'
 * broadcast buckets, the FlatParameter they are concatenated into
 * (flat_param.py flatten_tensors), and the shard, one tensor cloned while
 * the flat buffer and the originals are alive: FlatParamHandle.shard
 * (`_get_shard`: chunk.clone(), then `orig_storage._resize_(0)`), called
 * from _init_param_handle_from_params while its caller still holds the
 * originals in `managed_params`; they go when it returns.  With CPU
 * offload the shard then moves to the host (`handle.flat_param_to(cpu)`).
 * Under NO_SHARD the flat buffer is what stays. */
static void fsdp1_unit(struct tr *r, const struct uref *u, size_t n)
{
	bool whole = fsdp1_whole(r), leaf = mixed(r, u, n);
	uint64_t unit = 0, w = 0;
	uint32_t flat, shard;

	for (size_t i = 0; i < n; i++) {
		const struct mem_block *b = &r->job->blocks[r->st->segs[u[i].s].block];
		const struct mem_cost *c = &mem_seg_costs(r->cx, &r->st->segs[u[i].s])[u[i].j];
		uint64_t wl = wrap_resident(r, &b->layers[u[i].j], c->w), g = whole ? wl : c->gath;

		r->t->what = b->layers[u[i].j].name;
		if (leaf)
			fsdp1_leaves(r, &b->layers[u[i].j], c, &g, &wl);
		if (r->job->load != MEM_LOAD_FROM_PRETRAINED)
			load_originals(r, inst_of(r, u[i].s, u[i].k, u[i].j), &b->layers[u[i].j], c, leaf);
		unit = mem_add(&r->cx->ovf, unit, g);
		w = mem_add(&r->cx->ovf, w, wl);
	}
	if (r->job->load == MEM_LOAD_RANK0_CPU)
		bcast_unit(r, u, n, leaf);
	flat = put(r, unit, STREAM_COMPUTE);
	if (!whole && r->job->offload_params) {
		/* the shard goes to the host; what FSDP does not flatten (a 4-bit
		 * weight's QuantState, the module's buffers) stays resident */
		shard = put(r, mem_shard_bytes(unit, r->cx->shard_n), STREAM_COMPUTE);
		drop(r, &flat);
		drop(r, &shard);
		if (w)
			put(r, w, STREAM_COMPUTE);
	} else if (!whole) {
		put(r, w, STREAM_COMPUTE);
		drop(r, &flat);
	}
	for (size_t i = 0; i < n; i++)
		drop_loads(r, inst_of(r, u[i].s, u[i].k, u[i].j));
}

/* FSDP1's root unit, wrapped last (_recursive_wrap wraps the children
 * before the root FullyShardedDataParallel's own
 * _init_param_handle_from_module): every kept layer outside the body as one
 * FlatParameter. */
static void fsdp1_root(struct tr *r)
{
	size_t n = 0, cap = 0;
	struct uref *u = NULL;

	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_block *b = &r->job->blocks[seg->block];

		for (uint64_t k = 0; !b->is_body && k < kept(seg->count); k++)
			for (size_t j = 0; j < b->nlayers; j++) {
				if (n == cap) {
					struct uref *g = realloc(u, (cap = cap ? 2 * cap : 8) * sizeof(*u));

					if (!g) {
						free(u);
						r->t->nomem = true;
						return;
					}
					u = g;
				}
				u[n++] = (struct uref){ .s = s, .j = j, .k = k };
			}
	}
	if (n)
		fsdp1_unit(r, u, n);
	free(u);
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

	if (r->job->fsdp1 && r->job->sharding != MEM_SHARD_ZERO3) {
		struct uref *u = malloc((j1 - j0) * sizeof(*u));

		if (!u) {
			r->t->nomem = true;
			return;
		}
		for (size_t j = j0; j < j1; j++)
			u[j - j0] = (struct uref){ .s = s, .j = j, .k = k };
		fsdp1_unit(r, u, j1 - j0);
		free(u);
		return;
	}
	for (size_t j = j0; j < j1; j++) {
		if (r->job->load != MEM_LOAD_FROM_PRETRAINED)
			load_originals(r, inst_of(r, s, k, j), &b->layers[j], &c[j], false);
		unit = mem_add(&r->cx->ovf, unit, c[j].gath);
	}
	flat = put(r, unit, STREAM_COMPUTE);
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
			if (b->is_body ? j == 0 : !fsdp1_roots(r))
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
	if (quantises_first(r))
		quantise_ahead(r);
	for (size_t s = 0; r->job->load == MEM_LOAD_FROM_PRETRAINED && loads_whole(r) &&
			   s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_block *b = &r->job->blocks[seg->block];

		for (uint64_t k = 0; k < kept(seg->count); k++)
			for (size_t j = 0; j < b->nlayers; j++)
				load_originals(r, inst_of(r, s, k, j), &b->layers[j],
					       &mem_seg_costs(r->cx, seg)[j], false);
	}
	for (size_t s = 0; s < r->st->nsegs; s++) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t mid = seg->count - kept(seg->count);

		setup_seg(r, s);
		if (fsdp1_roots(r) && s + 1 == r->st->nsegs)
			fsdp1_root(r);
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
