/* SPDX-License-Identifier: MIT */
/*
 * mem_timeline.c - the walk over one step of one pipeline stage.
 *
 * The step is a sequence of instants (memory-model.md §5.1): the forward of
 * every layer, the loss layers, the backward of every layer (preceded, for a
 * fully recomputed body repeat, by the re-run of its forward, §4.5), and the
 * optimizer step.  At each instant the live bytes are
 *
 *   base (weights + optimizer + resident grads + persistent buckets
 *         + activations of the other in-flight micro-batches, §4.6)
 *   + stored activations of the layers before (forward order)
 *   + the current layer's saves and temporaries
 *   + casts, gathered ZeRO-3/FSDP units, unsharded gradients (§3.3)
 *   + gradients produced so far (backward)
 *
 * Folding: inside a segment of N repeats, every term is a prefix sum that
 * grows by the same per-repeat amount, so the live bytes at "layer j of
 * repeat r" are linear in r.  The few terms that are not (prefetch of a next
 * unit exists or not) change only at the first or last body repeat of the
 * stage.  Evaluating repeats {0, 1, N-2, N-1} therefore finds the exact
 * maximum at O(layers) cost whatever N is.  Repeats are visited in time
 * order so that a tie keeps the earliest instant.
 */
#include "analyzer/memory/mem_internal.h"
#include "analyzer/memory/mem_fsdp1.h"

#include <stdlib.h>
#include <string.h>

/* A position in the walk: layer j of repeat r of segment seg. */
struct pos {
	const struct mem_seg *seg;
	size_t s;			/* its index in the stage */
	uint64_t r;
	size_t j;
	const struct mem_cost *c;
	struct mem_sums U;		/* everything before the current repeat */
	const struct mem_sums *pre;	/* layers 0..j-1 of the repeat: U + pre is everything
					   before the current layer (read through pv()) */
	bool *ovf;
	const struct mem_sums *it;	/* one repeat of the block */
	uint64_t unit_idx;		/* body repeats of the stage before this one */
};

/* Field f summed over everything before the current layer; only the
 * fields an instant reads are added (a sum over the stage's total, which
 * finish_stage checked, cannot overflow unnoticed). */
static inline uint64_t pv(const struct pos *p, enum mem_sum_field f)
{
	return mem_add(p->ovf, p->U.v[f], p->pre->v[f]);
}

/* One scenario of the step: the first micro-batch, or (accumulating) a
 * later one with the gradients resident.  Both pass the same instants and
 * differ only in what is persistent, so the walk computes each instant
 * once and adds each scenario's part (struct instant).  Each keeps its
 * own peak: the first scenario's instants all come before the second's,
 * which a tie must respect. */
struct scenario {
	bool accumulating;
	bool resident;		/* all final gradients live from the start */
	struct mem_vec base;	/* persistent part of every instant */
	uint64_t base_total;
	bool any;
	uint64_t peak;
	/* the peak's instant, made again at the end (replay): forward peaks
	 * rise with nearly every layer, and copying the vector and its
	 * mem_where each time cost more than finding them */
	struct mark {
		size_t seg, j;
		uint64_t r;
		bool bwd, rec, optimizer, final_reduce;
		unsigned char part;	/* enum part */
	} mark;
};

/* Everything before the current layer, every field (FSDP2's helpers
 * take the sums whole). */
static const struct mem_sums *full_before(const struct pos *p, struct mem_sums *tmp)
{
	for (int f = 0; f < S__COUNT; f++)
		tmp->v[f] = mem_add(p->ovf, p->U.v[f], p->pre->v[f]);
	return tmp;
}

/* A layer whose weight is copied per call (mem_cost mm_split) passes two
 * instants: its matmul, beside the copy, and its loss region without it;
 * any other layer, one (PART_WHOLE). */
enum part { PART_WHOLE, PART_LOSS, PART_MM };

struct walk {
	struct mem_ctx *cx;
	enum part part;		/* of the instant being made */
	const struct mem_job *job;
	const struct mem_stage *st;
	uint64_t ipg;		/* ZeRO-1/2 IPG buckets while backward runs */
	struct scenario sc[2];
	size_t sc0, nsc;	/* the scenarios this pass considers: sc[sc0 .. nsc) */
	bool accumulating;	/* of sc[sc0], where an instant itself depends on it
				   (FSDP2 gathers and no_sync: shared_instants()) */
	struct mem_walk_out *out;
	struct mem_rec *rec;	/* the workspace's listener (mem_ws.rec), or NULL */
};

/* An instant beyond the scenario's base: v, the gradients of finished
 * layers (in the base already where they are resident), and whether the
 * IPG buckets are live (backward of the first micro-batch). */
struct instant {
	struct mem_vec v;
	uint64_t after;
	bool ipg;
};

static void put(struct walk *w, struct mem_vec *v, enum mem_component c, uint64_t x)
{
	v->c[c] = mem_add(&w->cx->ovf, v->c[c], x);
}

static void put_buf(struct walk *w, struct mem_vec *v, enum mem_buffer b, uint64_t x)
{
	v->b[b] = mem_add(&w->cx->ovf, v->b[b], x);
	put(w, v, MEM_C_BUFFERS, x);
}

static bool shards_weights(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO3 || m == MEM_SHARD_FSDP_FULL || m == MEM_SHARD_FSDP_GRAD_OP ||
	       m == MEM_SHARD_FSDP_HYBRID;
}

static bool is_fsdp(enum mem_sharding m)
{
	return shards_weights(m) && m != MEM_SHARD_ZERO3;
}

/* The series of the HTML chart: the highest instant of each phase. */
static void keep_point(struct mem_phase_point *pt, uint64_t total, const struct mem_vec *v,
		       const struct mem_where *where)
{
	if (total <= pt->allocated)
		return;
	pt->allocated = total;
	memcpy(pt->c, v->c, sizeof pt->c);
	pt->where = *where;
}

static void where_of(const struct walk *w, const struct pos *p, bool bwd, bool rec, bool accumulating,
		     struct mem_where *out)
{
	const struct mem_block *b = &w->job->blocks[p->seg->block];
	const struct mem_layer *l = &b->layers[p->j];
	struct mem_where wh;

	/* every byte, padding too: a class is compared whole (the compiled
	 * model's variants against the full build) */
	memset(&wh, 0, sizeof wh);
	wh.phase = l->loss_region ? MEM_PHASE_LOSS : bwd ? MEM_PHASE_BACKWARD : MEM_PHASE_FORWARD;
	wh.backward_pass = bwd;
	wh.recompute = rec;
	wh.accumulating = accumulating;
	wh.block = p->seg->block;
	wh.iteration = p->seg->first + p->r;
	wh.layer = p->j;
	wh.layer_name = l->name;
	wh.origin = l->origin;
	wh.unit = b->is_body ? p->seg->unit0 + p->r + 1 : 0;
	memcpy(out, &wh, sizeof wh);
}

/* Record one instant of scenario @s at @m; strict '>' keeps the earliest
 * of equal peaks.  The chart's series (phase_series) keeps its own
 * vectors: @v and @where are read only for it. */
static void keep(struct walk *w, struct scenario *s, uint64_t total, enum mem_phase ph,
		 const struct mark *m, const struct mem_vec *v, const struct mem_where *where)
{
	if (total > w->out->phase_peak[ph])
		w->out->phase_peak[ph] = total;
	if (w->job->phase_series)
		keep_point(&w->out->series[s->accumulating][ph], total, v, where);
	if (s->any && total <= s->peak)
		return;
	s->any = true;
	s->peak = total;
	s->mark = *m;
}

/* What scenario @s holds at instant @in, component by component. */
static void materialize(struct walk *w, const struct scenario *s, const struct instant *in,
			struct mem_vec *v)
{
	for (int c = 0; c < MEM_C__COUNT; c++)
		v->c[c] = mem_add(&w->cx->ovf, s->base.c[c], in->v.c[c]);
	for (int b = 0; b < MEM_B__COUNT; b++)
		v->b[b] = mem_add(&w->cx->ovf, s->base.b[b], in->v.b[b]);
	if (!s->resident)
		put(w, v, MEM_C_GRADIENTS, in->after);
	if (in->ipg && !s->accumulating)
		put_buf(w, v, MEM_B_BUCKETS, w->ipg);
}

/* An instant at a layer of the walk, for each scenario: its total first;
 * the vector and the mem_where are made only for an instant that is kept
 * (a new peak of the scenario or of its phase, or the chart's series). */
static void consider_at(struct walk *w, const struct instant *in, const struct pos *p, bool bwd,
			bool rec)
{
	bool *o = &w->cx->ovf;
	bool loss = p->c->act == MEM_C_LOGITS;	/* the layer's loss_region */
	enum mem_phase ph = loss ? MEM_PHASE_LOSS : bwd ? MEM_PHASE_BACKWARD : MEM_PHASE_FORWARD;
	uint64_t var = 0;

	for (int c = 0; c < MEM_C__COUNT; c++)
		var = mem_add(o, var, in->v.c[c]);
	for (size_t i = w->sc0; i < w->nsc; i++) {
		struct scenario *s = &w->sc[i];
		uint64_t total = mem_add(o, s->base_total, var);

		if (!s->resident)
			total = mem_add(o, total, in->after);
		if (in->ipg && !s->accumulating)
			total = mem_add(o, total, w->ipg);
		if (w->rec) {
			struct mem_vec rv;
			struct mem_where rw;

			where_of(w, p, bwd, rec, s->accumulating, &rw);
			materialize(w, s, in, &rv);
			w->rec->instant(w->rec, s->accumulating, ph, total, rv.c, rv.b, &rw);
		}
		if (!w->job->phase_series && total <= w->out->phase_peak[ph] && s->any && total <= s->peak)
			continue;
		struct mark m = { p->s, p->j, p->r, bwd, rec, false, false, (unsigned char)w->part };
		struct mem_vec v;
		struct mem_where wh;

		if (w->job->phase_series) {
			where_of(w, p, bwd, rec, s->accumulating, &wh);
			materialize(w, s, in, &v);
		}
		keep(w, s, total, ph, &m, &v, &wh);
	}
}

/* Stored activations before the current layer plus the current layer's
 * stored part; with full recompute in backward also the re-materialised
 * saves of this repeat up to and including the current layer (§4.5). */
static void add_activations(struct walk *w, const struct pos *p, struct mem_vec *v, bool remat)
{
	/* offloaded: the earlier repeats' stored activations are on the host,
	 * the running repeat's on the GPU (being copied out, or brought back) */
	put(w, v, MEM_C_ACTIVATIONS, mem_sub(pv(p, S_STORED_ACT), p->U.v[S_STORED_OFF]));
	put(w, v, MEM_C_LOGITS, pv(p, S_STORED_LOG));
	if (w->part != PART_MM)	/* the matmul's instant: the layer's own in mmf/mmb */
		put(w, v, p->c->act, p->c->stored);
	if (!remat)
		return;
	put(w, v, MEM_C_ACTIVATIONS, mem_sub(pv(p, S_SAVES_ACT), p->U.v[S_SAVES_ACT]));
	put(w, v, MEM_C_LOGITS, mem_sub(pv(p, S_SAVES_LOG), p->U.v[S_SAVES_LOG]));
	put(w, v, p->c->act, p->c->saves);
}

/* Gathered (unsharded) parameters, §3.3: the root unit (non-body layers)
 * held through forward and backward under FSDP, the running unit, and one
 * prefetched unit while another body unit follows in this pass. */
static uint64_t gathered(struct walk *w, const struct pos *p, bool bwd)
{
	enum mem_sharding m = w->job->sharding;
	const struct mem_stage *st = w->st;
	bool more = bwd ? p->unit_idx > 0 :
		    p->unit_idx + (p->c->body ? 1 : 0) < st->body_units;
	uint64_t cur = p->c->body ? p->it->v[S_GATH] : 0, pre = more ? st->max_unit_gath : 0;
	bool *o = &w->cx->ovf;

	if (!shards_weights(m))
		return 0;
	if (mem_fsdp1_all_gathered(w->job, w->accumulating))
		return st->total.v[S_GATH];
	pre = mem_fsdp1_prefetch(w->job, bwd, pre);
	if (is_fsdp(m) && w->job->fsdp2 && !bwd)
		pre = mem_fsdp_forward_flat(w->cx, st, p->c, !p->c->body && p->unit_idx > 0, cur, more);
	if (is_fsdp(m) && mem_fsdp_gathers(w->job)) {
		struct mem_sums P, skip, R;
		const struct mem_sums *B = p->c->body ? &p->U : full_before(p, &P);
		struct mem_stage view;
		uint64_t earlier = 0;

		if (bwd && mem_pp_chunk_view(w->job, st, p->seg->chunk, &view, &skip)) {
			/* the chunks after this one resharded, those before it whole */
			mem_pp_chunk_rebase(B, &skip, &R);
			B = &R, st = &view, earlier = skip.v[S_GATH];
		}
		return mem_add(o, earlier, mem_fsdp_gathered(w->cx, st, B, p->c, !p->c->body && p->unit_idx > 0,
							     cur, more, bwd, w->accumulating));
	}
	if (m == MEM_SHARD_ZERO3) {
		if (w->job->zero_prefetch_bytes < pre)
			pre = w->job->zero_prefetch_bytes;
		return mem_add(o, p->c->body ? cur : p->c->gath, pre);
	}
	if (m == MEM_SHARD_FSDP_GRAD_OP) {
		/* units stay gathered from their forward until their backward */
		uint64_t held = mem_sub(p->U.v[S_GATH], p->U.v[S_GATH_NB]);

		if (!p->c->body)
			held = mem_sub(pv(p, S_GATH), pv(p, S_GATH_NB));
		held = mem_add(o, held, st->total.v[S_GATH_NB]);
		return mem_add(o, mem_add(o, held, cur), bwd ? 0 : pre);
	}
	return mem_add(o, mem_add(o, st->total.v[S_GATH_NB], cur), pre);
}

/* Gradients live during the backward of the current layer (§3, §5.1).  A
 * layer's gradient counts from its own backward on (conservative: it is
 * produced while its saves are still live).  Modes that reduce-scatter keep
 * the unsharded gradient of the running unit (ZeRO-2: the layer; ZeRO-3 and
 * FSDP: the body repeat; FSDP root: all non-body layers until the end of the
 * backward) and the sharded gradient of finished units.  `remat`: the current
 * repeat is re-running its forward and has produced no gradient yet. */
static uint64_t add_grads(struct walk *w, const struct pos *p, struct mem_vec *v, bool remat)
{
	enum mem_sharding m = w->job->sharding;
	const struct mem_sums *T = &w->st->total;
	bool *o = &w->cx->ovf;
	bool unit = p->c->body && shards_weights(m);
	uint64_t after, unsh = 0;
	/* unsharded grads of this repeat from the current layer to its end */
	uint64_t in_unit = mem_sub(p->it->v[S_GUNSH], mem_sub(pv(p, S_GUNSH), p->U.v[S_GUNSH]));

	if (remat || (p->c->body && unit))
		after = mem_sub(T->v[S_GFIN], mem_add(o, p->U.v[S_GFIN], p->it->v[S_GFIN]));
	else if (p->c->gunsh)
		after = mem_sub(T->v[S_GFIN], mem_add(o, pv(p, S_GFIN), p->c->gfin));
	else
		after = mem_sub(T->v[S_GFIN], pv(p, S_GFIN));
	if (unit && !remat)
		unsh = in_unit;
	else if (!p->c->body || !remat)
		unsh = p->c->gunsh;
	if (is_fsdp(m)) {
		/* root (non-body) grads stay unsharded until the whole backward ends */
		uint64_t nb_before = pv(p, S_GFIN_NB);

		if (p->c->body)
			after = mem_sub(T->v[S_GFIN], mem_add(o, p->U.v[S_GFIN], p->it->v[S_GFIN]));
		else
			after = mem_sub(T->v[S_GFIN], pv(p, S_GFIN));
		after = mem_sub(after, mem_sub(T->v[S_GFIN_NB], nb_before));
		struct mem_sums P;

		unsh = (p->c->body && !remat) ? in_unit : 0;
		unsh = mem_add(o, unsh, mem_fsdp_root_grads(w->st, full_before(p, &P)));
		mem_fsdp_split_grads(w->cx, w->st, !p->c->body && p->unit_idx > 0, &after, &unsh);
	}
	if (is_fsdp(m) && w->job->fsdp_no_sync) {
		/* nothing reduce-scattered before the last micro-batch (mem_fsdp.c) */
		uint64_t in_acc = mem_sub(p->it->v[S_GACC], mem_sub(pv(p, S_GACC), p->U.v[S_GACC]));
		struct mem_sums P;

		after = 0;
		if (!p->c->body)
			in_unit = p->c->gunsh, in_acc = p->c->gacc;
		else if (remat)
			in_unit = in_acc = 0;
		const struct mem_sums *B = p->c->body ? &p->U : full_before(p, &P);
		const struct mem_stage *st = w->st;
		struct mem_stage view;
		struct mem_sums skip, R;

		if (mem_pp_chunk_view(w->job, w->st, p->seg->chunk, &view, &skip)) {
			/* this chunk's alone; those after it reduced (mem_pipeline.c) */
			mem_pp_chunk_rebase(B, &skip, &R);
			B = &R, st = &view;
			put(w, v, MEM_C_GRADIENTS, mem_pp_chunk_after(w->st, &view, &skip, S_GFIN));
		}
		unsh = mem_fsdp_unsharded(w->cx, st, B, p->c->body ? p->it : NULL,
					  !p->c->body && p->unit_idx > 0, in_unit, in_acc, w->accumulating);
	}
	/* the flat gradient of a unit made at its last backward layer */
	uint64_t cat = 0;

	if (is_fsdp(m) && !remat && p->c->body && p->j == 0)
		cat = p->it->v[S_GUNSH];
	else if (is_fsdp(m) && !p->c->body && p->c->gunsh && !pv(p, S_GUNSH_NB))
		cat = T->v[S_GUNSH_NB];
	unsh = mem_fsdp1_view_grads(w->cx, w->accumulating, unsh, cat);
	if (w->job->optimizer_in_backward) {
		/* stepped as produced: only this layer's gradients, and one
		 * tensor's step temporaries, ever exist (no optimizer phase) */
		after = p->c->gfin;
		put_buf(w, v, MEM_B_STEP_TEMPS, w->st->step_max);
	}
	put_buf(w, v, MEM_B_UNSHARDED_GRADS, unsh);
	return after;	/* the scenarios without resident gradients add it */
}

/* The layer's own transient casts at this instant: the per-call weight
 * copy (MatMul4Bit dequantises per call) exists at the matmul's, not
 * beside the loss region. */
static uint64_t own_casts(const struct walk *w, const struct pos *p)
{
	return w->part == PART_LOSS ? mem_sub(p->c->cast_tmp, p->c->cast_each) : p->c->cast_tmp;
}

/* data { later_seq_len }: lit-gpt 2023's train() forces the longest
 * sample into iteration 0 (get_batch(..., longest_seq_ix if iter_num == 0)),
 * before any gradient exists; a later micro-batch, with the gradients
 * resident, is padded to its own longest sample, at most later_seq_len:
 * its activations and logits are taken per token at that length. */
static void later_shape(struct walk *w, struct instant *in)
{
	uint64_t n = w->job->later_seq_len, d = w->job->shape_seq_len;
	bool *o = &w->cx->ovf;
	static const enum mem_component cs[] = { MEM_C_ACTIVATIONS, MEM_C_LOGITS };

	if (!w->accumulating || !n || !d || n >= d)
		return;
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		uint64_t x = in->v.c[cs[i]];

		in->v.c[cs[i]] = mem_add(o, mem_mul(o, x / d, n), (x % d * n + d - 1) / d);
	}
}

static void instant_forward(struct walk *w, const struct pos *p, struct instant *in)
{
	struct mem_vec *v = &in->v;

	*in = (struct instant){ { { 0 }, { 0 } }, 0, false };
	add_activations(w, p, v, false);
	put(w, v, p->c->act, w->part == PART_MM ? p->c->mmf : p->c->tfwd);
	/* casts saved for backward, the autocast-cached casts of earlier
	 * recomputed layers (held until the forward pass ends, §2.1), and this
	 * layer's own */
	put_buf(w, v, MEM_B_CASTS, mem_add(&w->cx->ovf, mem_add(&w->cx->ovf, pv(p, S_CAST_KEEP),
							       pv(p, S_CAST_FWD)),
					   mem_add(&w->cx->ovf, p->c->cast_keep, own_casts(w, p))));
	put_buf(w, v, MEM_B_GATHERED, gathered(w, p, false));
	later_shape(w, in);
}

/* A tied weight's gradient from a later layer (the LM head), not yet in
 * .grad: the engine keeps it in the weight's AccumulateGrad input buffer
 * (engine.cpp evaluate_function, not_ready_) from that layer's backward
 * until the weight's own layer's backward, whose gradient is added to it
 * in place (input_buffer.cpp accumulate) before AccumulateGrad steals the
 * sum: live through that backward too, beside the gradient it makes.  A
 * stage without the weight's own layer (pipelined) holds none. */
static uint64_t tied_held(const struct walk *w, const struct pos *p)
{
	const struct mem_sums *T = &w->st->total;
	uint64_t made = mem_sub(T->v[S_TIED], pv(p, S_TIED));
	uint64_t owners = mem_add(p->ovf, pv(p, S_TIED_END), p->c->tied_end);
	uint64_t held = mem_sub(made, mem_sub(T->v[S_TIED_END], owners));

	return held < owners ? held : owners;
}

/* The model's output that the loop holds (train.keep_output: fsdp_qlora
 * train.py binds `output = model(...)` and drops it only after
 * optimizer.step()): a later layer's that outlives that layer's backward,
 * and the current layer's own where it was a forward transient (what it
 * saved is still among its saves). */
static uint64_t output_held(const struct walk *w, const struct pos *p)
{
	uint64_t later = mem_sub(w->st->total.v[S_KEPT], mem_add(p->ovf, pv(p, S_KEPT), p->c->kept));

	return mem_add(p->ovf, later, p->c->kept_t);
}

/* Backward of the current layer, or (remat) the re-run of its forward. */
static void instant_backward(struct walk *w, const struct pos *p, bool remat, struct instant *in)
{
	struct mem_vec *v = &in->v;
	bool full = mem_seg_recomputes(w->cx, p->seg) && p->c->body;

	*in = (struct instant){ { { 0 }, { 0 } }, 0, true };	/* + the first micro-batch's IPG */
	add_activations(w, p, v, full);
	put(w, v, p->c->act, remat ? p->c->tfwd : w->part == PART_MM ? p->c->mmb : p->c->tbwd);
	put_buf(w, v, MEM_B_CASTS, mem_add(&w->cx->ovf, pv(p, S_CAST_KEEP),
					   mem_add(&w->cx->ovf, p->c->cast_keep, own_casts(w, p))));
	/* the re-run forward of a recomputed repeat saves its casts for
	 * backward, as a none-mode forward does: earlier layers' casts live */
	if (full)
		put_buf(w, v, MEM_B_CASTS, mem_sub(pv(p, S_CAST_FWD), p->U.v[S_CAST_FWD]));
	put_buf(w, v, MEM_B_GATHERED, gathered(w, p, true));
	put(w, v, MEM_C_GRADIENTS, tied_held(w, p));
	put(w, v, MEM_C_LOGITS, mem_pp_own_output(&w->cx->ovf, w->cx, w->st, p->c->act == MEM_C_LOGITS));
	put(w, v, MEM_C_LOGITS, output_held(w, p));
	in->after = add_grads(w, p, v, remat);
	later_shape(w, in);
}

/* In time order: forward makes the head's output (beside the weight's
 * copy) before the loss region; backward ends the loss region first
 * (litgpt chunked_cross_entropy's log-softmax backward runs before
 * MatMul4Bit.backward dequantises again). */
static void eval_forward(struct walk *w, const struct pos *p)
{
	struct instant in;
	bool split = p->c->mm_split;

	for (int k = 0; k < (split ? 2 : 1); k++) {
		w->part = !split ? PART_WHOLE : k == 0 ? PART_MM : PART_LOSS;
		instant_forward(w, p, &in);
		consider_at(w, &in, p, false, false);
	}
	w->part = PART_WHOLE;
}

static void eval_backward(struct walk *w, const struct pos *p, bool remat)
{
	struct instant in;
	bool split = p->c->mm_split && !remat;

	for (int k = 0; k < (split ? 2 : 1); k++) {
		w->part = !split ? PART_WHOLE : k == 0 ? PART_LOSS : PART_MM;
		instant_backward(w, p, remat, &in);
		consider_at(w, &in, p, true, remat);
	}
	w->part = PART_WHOLE;
}

/* What every instant after backward holds: the weights, the optimizer
 * states, the loop's kept output (freed after the step) and the buckets. */
static void after_backward(struct walk *w, struct mem_vec *v, struct mem_where *wh,
			   uint64_t buckets)
{
	const struct mem_sums *T = &w->st->total;

	memset(v, 0, sizeof(*v));
	memset(wh, 0, sizeof(*wh));
	put(w, v, MEM_C_WEIGHTS, T->v[S_W]);
	put(w, v, MEM_C_OPTIMIZER, T->v[S_S]);
	put(w, v, MEM_C_LOGITS, T->v[S_KEPT]);
	put_buf(w, v, MEM_B_BUCKETS, buckets);
}

/* Optimizer step: all gradients exist, activations are gone (§5.1, §5.2). */
static void optimizer_instant(struct walk *w, struct mem_vec *v, struct mem_where *wh)
{
	const struct mem_sums *T = &w->st->total;
	bool *o = &w->cx->ovf;

	after_backward(w, v, wh, w->sc[0].base.b[MEM_B_BUCKETS]);
	put(w, v, MEM_C_GRADIENTS, T->v[S_GFIN]);
	put_buf(w, v, MEM_B_STEP_TEMPS, mem_add(o, T->v[S_STEP_GROUP], w->st->step_max));
	wh->phase = MEM_PHASE_OPTIMIZER;
	wh->block = SIZE_MAX;
	wh->layer = SIZE_MAX;
	wh->layer_name = "optimizer step";
}

static void eval_optimizer(struct walk *w)
{
	struct mem_vec v;
	struct mem_where wh;
	struct mark m = { 0, 0, 0, false, false, true, false, PART_WHOLE };
	uint64_t total = 0;

	optimizer_instant(w, &v, &wh);
	for (int c = 0; c < MEM_C__COUNT; c++)
		total = mem_add(&w->cx->ovf, total, v.c[c]);
	if (w->rec)
		w->rec->instant(w->rec, 0, MEM_PHASE_OPTIMIZER, total, v.c, v.b, &wh);
	keep(w, &w->sc[0], total, MEM_PHASE_OPTIMIZER, &m, &v, &wh);	/* after the first micro-batch */
}

/* FSDP2 under torch.distributed.pipelining: after the last micro-batch's
 * backward the held gradients are reduce-scattered unit by unit
 * (mem_fsdp.c), every unit still gathered; the first unit's reduce is the
 * highest instant. (With gradient sync turned on for the last micro-batch
 * alone, each unit reduces in that backward instead.)  With sync on every
 * backward: the root's reduce-scatter once backward has ended
 * (mem_fsdp_root_reduce). */
static void final_reduce_instant(struct walk *w, const struct scenario *s, struct mem_vec *v,
				 struct mem_where *wh)
{
	const struct mem_sums *T = &w->st->total;
	bool *o = &w->cx->ovf;

	after_backward(w, v, wh, s->base.b[MEM_B_BUCKETS]);
	if (!w->job->fsdp_no_sync) {
		/* synced: the root's own reduce-scatter, every unit resharded */
		put(w, v, MEM_C_GRADIENTS, T->v[S_GFIN]);
		put_buf(w, v, MEM_B_UNSHARDED_GRADS, mem_fsdp_root_reduce(w->cx, w->st));
	} else if (mem_pp_chunk_scoped(w->job) && w->st->chunk_total) {
		uint64_t gath, unsh, fin;

		mem_pp_chunk_reduce(o, w->job, w->st, &gath, &unsh, &fin);
		put_buf(w, v, MEM_B_GATHERED, gath);
		put_buf(w, v, MEM_B_UNSHARDED_GRADS, unsh);
		put(w, v, MEM_C_GRADIENTS, fin);
	} else {
		put_buf(w, v, MEM_B_GATHERED, T->v[S_GATH]);
		put_buf(w, v, MEM_B_UNSHARDED_GRADS, mem_add(o, T->v[S_GACC], mem_fsdp_reduce_extra(w->st)));
	}
	wh->phase = MEM_PHASE_BACKWARD;
	wh->backward_pass = true;
	wh->accumulating = s->accumulating;
	wh->block = SIZE_MAX;
	wh->layer = SIZE_MAX;
	wh->layer_name = w->job->fsdp_no_sync ? "gradient reduce-scatter" : "root gradient reduce-scatter";
}

static void eval_final_reduce(struct walk *w, struct scenario *s)
{
	struct mem_vec v;
	struct mem_where wh;
	struct mark m = { 0, 0, 0, true, false, false, true, PART_WHOLE };
	uint64_t total = 0;

	final_reduce_instant(w, s, &v, &wh);
	for (int c = 0; c < MEM_C__COUNT; c++)
		total = mem_add(&w->cx->ovf, total, v.c[c]);
	if (w->rec)
		w->rec->instant(w->rec, s->accumulating, MEM_PHASE_BACKWARD, total, v.c, v.b, &wh);
	keep(w, s, total, MEM_PHASE_BACKWARD, &m, &v, &wh);
}

/* Repeats to evaluate, ascending: {0, 1, n-2, n-1} within [0, n). */
static size_t eval_set(uint64_t n, uint64_t out[4])
{
	uint64_t cand[4] = { 0, 1, n >= 2 ? n - 2 : 0, n - 1 };
	size_t k = 0;

	for (size_t i = 0; i < 4; i++) {
		if (cand[i] >= n || (k > 0 && cand[i] <= out[k - 1]))
			continue;
		out[k++] = cand[i];
	}
	return k;
}

static void set_repeat(struct walk *w, struct pos *p, size_t s, uint64_t r)
{
	const struct mem_seg *seg = &w->st->segs[s];
	bool body = w->job->blocks[seg->block].is_body;

	p->seg = seg;
	p->s = s;
	p->r = r;
	p->it = mem_seg_iter(w->cx, seg);
	mem_sums_axpy(&w->cx->ovf, &p->U, &w->st->before[s], p->it, r);
	p->pre = mem_seg_prefix(w->cx, seg);
	p->ovf = &w->cx->ovf;
	p->unit_idx = seg->units_before + (body ? r : 0);
}

/* Move p to layer j of its repeat: a prefix sum of the block, O(1) in j. */
static void set_layer(struct walk *w, struct pos *p, size_t j)
{
	p->pre = &mem_seg_prefix(w->cx, p->seg)[j];
	p->j = j;
	p->c = &mem_seg_costs(w->cx, p->seg)[j];
}

/* Consecutive segments of one body block that the walk can take as one:
 * same block, recompute mode and (DualPipe) chunk in flight, each
 * starting where the last ended (its
 * sums and units are the last one's plus its repeats, finish_stage).  An interleaved
 * stage's vp chunks are such segments.  Their instants are then exactly
 * those of one segment of the summed count, linear in the repeat but at
 * the stage's first and last body units, which are the run's ends; so
 * {0, 1, N-2, N-1} of the run finds the peak and each phase's, with the
 * same earliest instant on a tie, that every segment's own four find
 * (§"Folding" of docs/memory-model.md).  job->walk_every_segment keeps
 * the segments apart (the tests compare the two). */
static bool joins(const struct walk *w, size_t e)
{
	const struct mem_seg *a = &w->st->segs[e - 1], *b = &w->st->segs[e];

	/* before[e] is before[e - 1] + count x the block's sums by construction
	 * (finish_stage), so the sums need no comparing */
	return !w->job->walk_every_segment && b->block == a->block && b->plain == a->plain &&
	       b->flight == a->flight && w->job->blocks[a->block].is_body &&
	       b->units_before == a->units_before + a->count;
}

static size_t run_end(const struct walk *w, size_t s)
{
	size_t e = s + 1;

	while (e < w->st->nsegs && joins(w, e))
		e++;
	return e;
}

static uint64_t run_count(const struct walk *w, size_t s, size_t e)
{
	uint64_t n = 0;

	for (size_t i = s; i < e; i++)
		n += w->st->segs[i].count;	/* <= the stage's body units */
	return n;
}

/* Repeat @r of the run [@s, @e): its segment and the repeat within it. */
static void run_locate(const struct walk *w, size_t s, size_t e, uint64_t r, size_t *seg, uint64_t *rr)
{
	for (; s + 1 < e && r >= w->st->segs[s].count; s++)
		r -= w->st->segs[s].count;
	*seg = s;
	*rr = r;
}

static void walk_forward(struct walk *w)
{
	for (size_t s = 0, e; s < w->st->nsegs; s = e) {
		e = run_end(w, s);
		const struct mem_seg *seg = &w->st->segs[s];
		uint64_t rs[4];
		size_t nr = eval_set(run_count(w, s, e), rs);

		for (size_t k = 0; k < nr; k++) {
			struct pos p;
			size_t at;
			uint64_t r;

			run_locate(w, s, e, rs[k], &at, &r);
			set_repeat(w, &p, at, r);
			for (size_t j = 0; j < w->job->blocks[seg->block].nlayers; j++) {
				set_layer(w, &p, j);
				eval_forward(w, &p);
			}
		}
	}
}

/* The runs of walk_forward, last first. */
static size_t run_start(const struct walk *w, size_t e)
{
	size_t s = e - 1;

	while (s > 0 && joins(w, s))
		s--;
	return s;
}

static void walk_backward(struct walk *w)
{
	for (size_t e = w->st->nsegs, s; e > 0; e = s) {
		s = run_start(w, e);
		const struct mem_seg *seg = &w->st->segs[s];
		const struct mem_block *b = &w->job->blocks[seg->block];
		uint64_t rs[4];
		size_t nr = eval_set(run_count(w, s, e), rs);

		for (size_t k = nr; k-- > 0;) {
			struct pos p;
			size_t at;
			uint64_t r;

			run_locate(w, s, e, rs[k], &at, &r);
			set_repeat(w, &p, at, r);
			for (size_t j = 0; mem_seg_recomputes(w->cx, seg) && b->is_body && j < b->nlayers;
			     j++) {
				set_layer(w, &p, j);
				eval_backward(w, &p, true);
			}
			for (size_t j = b->nlayers; j-- > 0;) {
				set_layer(w, &p, j);
				eval_backward(w, &p, false);
			}
		}
	}
}

/* Persistent part of every instant of scenario @s. */
static void make_base(struct walk *w, struct scenario *s, uint64_t chunks)
{
	const struct mem_job *job = w->job;
	const struct mem_sums *T = &w->st->total;
	enum mem_sharding m = job->sharding;
	bool *o = &w->cx->ovf;
	struct mem_vec *b = &s->base;

	s->resident = s->accumulating || job->grads_persistent ||
		      (m == MEM_SHARD_DDP && job->grad_as_bucket_view);
	put(w, b, MEM_C_WEIGHTS, T->v[S_W]);
	put(w, b, MEM_C_OPTIMIZER, T->v[S_S]);
	if (mem_fsdp1_accumulates_unsharded(job, s->accumulating))
		put(w, b, MEM_C_GRADIENTS, T->v[S_GUNSH]);
	else if (s->resident && !(is_fsdp(m) && job->fsdp_no_sync))
		put(w, b, MEM_C_GRADIENTS, T->v[S_GFIN]);
	put_buf(w, b, MEM_B_BUCKETS, T->v[S_BUCKET]);
	put_buf(w, b, MEM_B_BUCKETS, mem_comm_sp_buffer(job, o));
	put_buf(w, b, MEM_B_BUCKETS, mem_add(o, mem_pp_recv_bytes(o, job, w->st->index, chunks),
					    mem_pp_output_bytes(o, job, w->st->index, chunks)));
	if (s->accumulating)
		put_buf(w, b, MEM_B_BUCKETS, mem_pp_input_grad_bytes(o, job, w->st->index, chunks));
	put(w, b, MEM_C_LOGITS, mem_pp_kept_outputs(o, w->cx, w->st, s->accumulating));
	if (m == MEM_SHARD_ZERO3)
		put_buf(w, b, MEM_B_BUCKETS, mem_round(job, job->zero_reduce_bucket_bytes));
	if (s->accumulating)
		put_buf(w, b, MEM_B_BUCKETS, w->ipg);
	put(w, b, MEM_C_ACTIVATIONS, mem_pp_extra(o, job, w->st, chunks, S_STORED_ACT, S_STORED_OFF));
	put(w, b, MEM_C_ACTIVATIONS, mem_pp_deferred_w(o, job, w->st));
	put(w, b, MEM_C_LOGITS, mem_pp_extra(o, job, w->st, chunks, S_STORED_LOG, S__COUNT));
	for (int c = 0; c < MEM_C__COUNT; c++)
		s->base_total = mem_add(o, s->base_total, b->c[c]);
}

/* Whether an instant is the same in both scenarios but for their base,
 * the finished gradients and the IPG buckets (struct instant): not so
 * where FSDP2 gathers or accumulates without sync by micro-batch, nor
 * where FSDP1's no_sync() keeps a later micro-batch's grads or units. */
static bool shared_instants(const struct mem_job *job)
{
	if (is_fsdp(job->sharding) && (mem_fsdp_gathers(job) || job->fsdp_no_sync))
		return false;
	if (job->later_seq_len)	/* a later micro-batch is shorter */
		return false;
	return mem_fsdp1_all_gathered(job, false) == mem_fsdp1_all_gathered(job, true) &&
	       mem_fsdp1_accumulates_unsharded(job, false) == mem_fsdp1_accumulates_unsharded(job, true);
}

/* The peak instant of scenario @s again: its vector and mem_where. */
static void replay(struct walk *w, const struct scenario *s, struct mem_vec *at,
		   struct mem_where *where)
{
	const struct mark *m = &s->mark;
	struct pos p;
	struct instant in;

	if (m->optimizer) {
		optimizer_instant(w, at, where);
		return;
	}
	if (m->final_reduce) {
		final_reduce_instant(w, s, at, where);
		return;
	}
	w->accumulating = s->accumulating;
	w->part = (enum part)m->part;
	set_repeat(w, &p, m->seg, m->r);
	set_layer(w, &p, m->j);
	if (m->bwd)
		instant_backward(w, &p, m->rec, &in);
	else
		instant_forward(w, &p, &in);
	w->part = PART_WHOLE;
	materialize(w, s, &in, at);
	where_of(w, &p, m->bwd, m->rec, s->accumulating, where);
}

/* The peak of the two scenarios, as if walked one after the other: the
 * later one's only if strictly higher. */
static void merge_peaks(struct walk *w, struct mem_walk_out *out)
{
	const struct scenario *best = &w->sc[0];

	if (w->nsc > 1 && w->sc[1].any && (!best->any || w->sc[1].peak > best->peak))
		best = &w->sc[1];
	if (!best->any || (out->any && best->peak <= out->peak))
		return;
	out->any = true;
	out->peak = best->peak;
	replay(w, best, &out->at, &out->where);
}

void mem_walk_stage(struct mem_ctx *cx, const struct mem_stage *st, uint64_t first,
		    uint64_t later, struct mem_walk_out *out)
{
	struct walk w = { 0 };
	const struct mem_job *job = cx->job;

	w.cx = cx;
	w.job = job;
	w.st = st;
	w.out = out;
	w.rec = cx->ws ? cx->ws->rec : NULL;
	if (job->sharding == MEM_SHARD_ZERO1 || job->sharding == MEM_SHARD_ZERO2)
		w.ipg = mem_mul(&cx->ovf, mem_round(job, job->zero_reduce_bucket_bytes),
				job->overlap_comm ? 2 : 1);
	w.sc[1].accumulating = true;
	make_base(&w, &w.sc[0], first);
	if (later)
		make_base(&w, &w.sc[1], later);
	if (shared_instants(job)) {
		w.nsc = later ? 2 : 1;
		walk_forward(&w);
		walk_backward(&w);
	} else {
		for (w.sc0 = 0; w.sc0 < (later ? 2u : 1u); w.sc0++) {
			w.nsc = w.sc0 + 1;
			w.accumulating = w.sc[w.sc0].accumulating;
			walk_forward(&w);
			walk_backward(&w);
			if (is_fsdp(job->sharding) && job->fsdp_no_sync && job->fsdp_keep_after_backward &&
			    (w.accumulating || job->micro_batches < 2))
				eval_final_reduce(&w, &w.sc[w.sc0]);
		}
	}
	if (is_fsdp(job->sharding) && mem_fsdp_root_reduce(cx, st))
		eval_final_reduce(&w, &w.sc[0]);
	if (!job->optimizer_in_backward)
		eval_optimizer(&w);
	merge_peaks(&w, out);
}
