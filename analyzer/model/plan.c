/* SPDX-License-Identifier: MIT */
/*
 * plan.c - a lowering's figures as a max over affine instants (plan.h).
 *
 * Why it is exact: a lowering's activation bytes are affine in
 * micro_batch (compiled.c checks them), the instants of the walk
 * (mem_timeline.c) are sums of them and of micro-batch-independent
 * states, buffers and persistent terms, and the walk passes the same
 * instants in the same order whatever the micro_batch.  So each instant's
 * total and components are lines, the peak is the first of the highest
 * lines at that micro_batch, and a line that another one reaches at both
 * ends of the range can never be the (first) peak: it is dropped; of the
 * rest, only those on the upper envelope at some micro_batch the plan
 * answers for are kept (envelope()).  What is left per stage is typically
 * one to three lines out of the walk's dozens.  Where rounding steps with
 * the micro_batch, the lines run along one residue modulo a period
 * (plan.h).  The assumptions are not trusted: the plan must reproduce
 * mem_analyze at five micro-batches (verify()), else there is none.
 */
#include "analyzer/model/plan.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { NV = MEM_C__COUNT + MEM_B__COUNT };

/* The class fields that grow with the micro-batch: the stored activations
 * of one and of all micro-batches in flight, the offloaded ones in host
 * memory (memory.c persistent()), and the buffers sized by a layer's
 * input: Megatron's sequence-parallel gather buffer in the persistent
 * buffers, async TP's symmetric-memory workspace in the NCCL overhead
 * (mem_comm.c).  The others either do not depend on it or follow from
 * the peak (mem_class_totals); verify() finds any field that does
 * otherwise. */
static const size_t cls_off[] = {
	offsetof(struct mem_class, stored_act),
	offsetof(struct mem_class, stored_logits),
	offsetof(struct mem_class, stored_act_in_flight),
	offsetof(struct mem_class, stored_logits_in_flight),
	offsetof(struct mem_class, host_bytes),
	offsetof(struct mem_class, persistent) + MEM_C_BUFFERS * sizeof(uint64_t),
	offsetof(struct mem_class, overhead_nccl),
};
enum { NCLS = sizeof cls_off / sizeof cls_off[0] };

/* a + d x t, at micro_batch r + period x t (struct cm_plan) */
struct line {
	uint64_t a, d;
};

/* An instant that may be the peak: its total, and its entry (components). */
struct cand {
	struct line t;
	size_t e;
};

struct entry {
	struct line v[NV];		/* mem_vec's c[], then b[] */
	struct mem_where where;
};

struct stage {
	struct mem_class k;		/* the class as analysed at micro_batch 1 ... */
	struct line kl[NCLS];		/* ... but its cls_off fields */
	struct cand *peak[2];		/* per scenario, in the walk's order */
	size_t npeak[2];
	struct line *ph[MEM_PHASE__COUNT];	/* what may be each phase's highest */
	size_t nph[MEM_PHASE__COUNT];
	struct entry *ent;
};

struct cm_plan {
	const struct mem_job *job;
	uint64_t r, period, tmax;	/* micro_batch r + period x t, t = 0 .. tmax */
	size_t nstages;
	struct stage *st;
	uint64_t params_total, params_trainable;
};

/* ---- recording an analysis ---- */

struct rec_instant {
	int sc;
	enum mem_phase ph;
	size_t stage;
	uint64_t x[1 + NV];		/* the total, then the components */
	struct mem_where where;
};

struct recorder {
	struct mem_rec r;		/* first: what the callbacks are given */
	struct rec_instant *in;
	size_t n, cap;
	struct mem_class *k;
	size_t nk, capk;
};

static void on_instant(struct mem_rec *mr, int sc, enum mem_phase ph, uint64_t total,
		       const uint64_t c[MEM_C__COUNT], const uint64_t b[MEM_B__COUNT],
		       const struct mem_where *where)
{
	struct recorder *r = (struct recorder *)(void *)mr;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->in = xrealloc(r->in, arena_array_size(sizeof *r->in, r->cap));
	}
	struct rec_instant *i = &r->in[r->n++];

	i->sc = sc;
	i->ph = ph;
	i->stage = r->nk;
	i->x[0] = total;
	memcpy(i->x + 1, c, MEM_C__COUNT * sizeof *c);
	memcpy(i->x + 1 + MEM_C__COUNT, b, MEM_B__COUNT * sizeof *b);
	i->where = *where;
}

static void on_stage(struct mem_rec *mr, const struct mem_class *k)
{
	struct recorder *r = (struct recorder *)(void *)mr;

	if (r->nk == r->capk) {
		r->capk = r->capk ? r->capk * 2 : 4;
		r->k = xrealloc(r->k, arena_array_size(sizeof *r->k, r->capk));
	}
	memcpy(&r->k[r->nk++], k, sizeof *k);	/* padding too: verify() compares bytes */
}

static bool record(struct cm_plan_src *src, uint64_t mb, struct recorder *r,
		   const struct mem_result **res)
{
	r->r.instant = on_instant;
	r->r.stage = on_stage;
	return src->analyze(src, mb, &r->r, res) == MEM_OK;
}

/* ---- lines ---- */

/* The line through (0, x0) and (1, x1); false if it falls. */
static bool line_of(uint64_t x0, uint64_t x1, struct line *l)
{
	if (x1 < x0)
		return false;
	l->a = x0;
	l->d = x1 - x0;
	return true;
}

static bool at(const struct line *l, uint64_t t, uint64_t *x)
{
	return !__builtin_mul_overflow(l->d, t, x) && !__builtin_add_overflow(*x, l->a, x);
}

/* x >= y (strict: x > y) at every t of 0 .. hi: at both ends. */
static bool above(const struct line *x, const struct line *y, uint64_t hi, bool strict)
{
	uint64_t x0, y0, xh, yh;

	if (!at(x, 0, &x0) || !at(y, 0, &y0) || !at(x, hi, &xh) || !at(y, hi, &yh))
		return false;
	return strict ? x0 > y0 && xh > yh : x0 >= y0 && xh >= yh;
}

static bool same_where(const struct mem_where *x, const struct mem_where *y)
{
	return x->phase == y->phase && x->backward_pass == y->backward_pass &&
	       x->recompute == y->recompute && x->accumulating == y->accumulating &&
	       x->block == y->block && x->iteration == y->iteration && x->layer == y->layer &&
	       x->layer_name == y->layer_name && x->origin == y->origin && x->unit == y->unit;
}

/* ---- one stage ---- */

/* Instants [0, n) of scenario @sc that may be its first peak somewhere in
 * 1 .. @hi, into @out (in order; returns how many).  Dropped: one that an
 * earlier instant reaches everywhere (a tie keeps the earlier), and one
 * that a later one exceeds everywhere.  Each is dropped for an instant of
 * the full list, so the true peak never is. */
static size_t prune_peaks(const struct rec_instant *in, const struct line *t, size_t n, int sc,
			  uint64_t hi, size_t *out, size_t *tmp)
{
	size_t k = 0, m = 0;

	for (size_t i = 0; i < n; i++) {
		bool dom = in[i].sc != sc;

		for (size_t j = 0; j < k && !dom; j++)
			dom = above(&t[out[j]], &t[i], hi, false);
		if (!dom)
			out[k++] = i;
	}
	for (size_t i = k; i-- > 0;) {
		bool dom = false;

		for (size_t j = 0; j < m && !dom; j++)
			dom = above(&t[tmp[j]], &t[out[i]], hi, true);
		if (!dom)
			tmp[m++] = out[i];
	}
	for (size_t i = 0; i < m; i++)
		out[i] = tmp[m - 1 - i];
	return m;
}

/* The lines that may be phase @ph's highest (order does not matter). */
static size_t prune_phase(const struct rec_instant *in, const struct line *t, size_t n,
			  enum mem_phase ph, uint64_t hi, size_t *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		bool dom = in[i].ph != ph;

		for (size_t j = 0; j < k && !dom; j++)
			dom = above(&t[out[j]], &t[i], hi, false);
		if (!dom)
			out[k++] = i;
	}
	return k;
}

/* Of the lines @idx[0, k) (in the walk's order), those that are the first
 * highest at some t of 0 .. @tmax: the dominance above keeps lines that
 * two others cover between them, this keeps only the upper envelope's at
 * the micro-batches a plan answers for (a line whose value overflows is
 * kept: the evaluation then reports it).  Returns the new k. */
static size_t envelope(const struct line *t, size_t *idx, size_t k, uint64_t tmax, bool *won)
{
	size_t m = 0;

	memset(won, 0, k * sizeof *won);
	for (uint64_t x = 0; x <= tmax; x++) {
		size_t best = k;
		uint64_t top = 0, v;

		for (size_t i = 0; i < k; i++) {
			if (!at(&t[idx[i]], x, &v))
				won[i] = true;
			else if (best == k || v > top)
				best = i, top = v;
		}
		if (best < k)
			won[best] = true;
	}
	for (size_t i = 0; i < k; i++)
		if (won[i])
			idx[m++] = idx[i];
	return m;
}

/* Both recordings' instants [lo, hi) of one stage as lines; false where
 * the two walks differ in anything but the bytes. */
static bool stage_lines(const struct recorder *r1, const struct recorder *r2, size_t lo, size_t hi,
			struct line *t)
{
	for (size_t i = lo; i < hi; i++) {
		const struct rec_instant *x = &r1->in[i], *y = &r2->in[i];

		if (x->sc != y->sc || x->ph != y->ph || x->stage != y->stage ||
		    !same_where(&x->where, &y->where) || !line_of(x->x[0], y->x[0], &t[i - lo]))
			return false;
	}
	return true;
}

/* The entries of the peak candidates, in @a; false where a component is
 * not a line. */
static bool stage_entries(struct arena *a, struct stage *S, const struct recorder *r1,
			  const struct recorder *r2, size_t lo)
{
	S->ent = ARENA_NEW_ARRAY(a, struct entry, S->npeak[0] + S->npeak[1] + 1);
	for (int sc = 0, e = 0; sc < 2; sc++)
		for (size_t i = 0; i < S->npeak[sc]; i++, e++) {
			const struct rec_instant *x = &r1->in[lo + S->peak[sc][i].e];
			const struct rec_instant *y = &r2->in[lo + S->peak[sc][i].e];

			for (int v = 0; v < NV; v++)
				if (!line_of(x->x[1 + v], y->x[1 + v], &S->ent[e].v[v]))
					return false;
			S->ent[e].where = x->where;
			S->peak[sc][i].e = (size_t)e;
		}
	return true;
}

/* The class of stage @si with its cls_off fields as lines. */
static bool stage_class(struct stage *S, const struct recorder *r1, const struct recorder *r2,
			size_t si)
{
	memcpy(&S->k, &r1->k[si], sizeof S->k);
	for (size_t f = 0; f < NCLS; f++) {
		uint64_t x1, x2;

		memcpy(&x1, (const char *)&r1->k[si] + cls_off[f], sizeof x1);
		memcpy(&x2, (const char *)&r2->k[si] + cls_off[f], sizeof x2);
		if (!line_of(x1, x2, &S->kl[f]))
			return false;
	}
	return true;
}

static bool build_stage(struct arena *a, struct stage *S, const struct recorder *r1,
			const struct recorder *r2, size_t si, size_t lo, size_t hi, uint64_t tmax)
{
	size_t n = hi - lo;
	struct line *t = xcalloc(n + 1, sizeof *t);
	size_t *out = xcalloc(n + 1, sizeof *out), *tmp = xcalloc(n + 1, sizeof *tmp);
	bool *won = xcalloc(n + 1, sizeof *won);
	bool ok = stage_lines(r1, r2, lo, hi, t) && stage_class(S, r1, r2, si);

	for (int sc = 0; ok && sc < 2; sc++) {
		size_t k = envelope(t, out, prune_peaks(r1->in + lo, t, n, sc, tmax, out, tmp), tmax, won);

		S->npeak[sc] = k;
		S->peak[sc] = ARENA_NEW_ARRAY(a, struct cand, k + 1);
		for (size_t i = 0; i < k; i++)
			S->peak[sc][i] = (struct cand){ t[out[i]], out[i] };
	}
	for (int ph = 0; ok && ph < MEM_PHASE__COUNT; ph++) {
		size_t k = prune_phase(r1->in + lo, t, n, (enum mem_phase)ph, tmax, out);

		k = envelope(t, out, k, tmax, won);

		S->nph[ph] = k;
		S->ph[ph] = ARENA_NEW_ARRAY(a, struct line, k + 1);
		for (size_t i = 0; i < k; i++)
			S->ph[ph][i] = t[out[i]];
	}
	ok = ok && stage_entries(a, S, r1, r2, lo);
	free(t);
	free(out);
	free(tmp);
	free(won);
	return ok;
}

/* ---- evaluation ---- */

/* The peak of stage @S at @t: the first highest line of each scenario,
 * the later micro-batch's only where strictly higher (mem_timeline.c
 * merge_peaks); NULL if the stage has no instant. */
static const struct cand *peak_at(const struct stage *S, uint64_t t, uint64_t *top, bool *ovf)
{
	const struct cand *best = NULL;

	*top = 0;
	for (int sc = 0; sc < 2; sc++) {
		const struct cand *b = NULL;
		uint64_t bx = 0, x;

		for (size_t i = 0; i < S->npeak[sc]; i++) {
			if (!at(&S->peak[sc][i].t, t, &x))
				*ovf = true;
			if (!b || x > bx)
				b = &S->peak[sc][i], bx = x;
		}
		if (b && (!best || bx > *top))
			best = b, *top = bx;
	}
	return best;
}

enum { SERIES_END = offsetof(struct mem_class, series) + sizeof(((struct mem_class *)0)->series) };

static void eval_stage(const struct cm_plan *p, const struct stage *S, uint64_t t,
		       struct mem_class *k, bool *ovf)
{
	uint64_t top, x;
	const struct cand *best = peak_at(S, t, &top, ovf);

	/* the chart's series and the explain strings stay as they are: zero */
	memcpy(k, &S->k, offsetof(struct mem_class, series));
	memcpy((char *)k + SERIES_END, (const char *)&S->k + SERIES_END,
	       offsetof(struct mem_class, explain) - SERIES_END);
	for (size_t f = 0; f < NCLS; f++) {
		*ovf |= !at(&S->kl[f], t, &x);
		memcpy((char *)k + cls_off[f], &x, sizeof x);
	}
	for (int ph = 0; ph < MEM_PHASE__COUNT; ph++) {
		k->phase_peak[ph] = 0;
		for (size_t i = 0; i < S->nph[ph]; i++) {
			*ovf |= !at(&S->ph[ph][i], t, &x);
			if (x > k->phase_peak[ph])
				k->phase_peak[ph] = x;
		}
	}
	memset(k->at_peak, 0, sizeof k->at_peak);
	memset(k->buffers_at_peak, 0, sizeof k->buffers_at_peak);
	memset(&k->peak, 0, sizeof k->peak);
	k->peak_allocated = top;
	if (best) {
		const struct entry *e = &S->ent[best->e];

		for (int c = 0; c < MEM_C__COUNT; c++)
			*ovf |= !at(&e->v[c], t, &k->at_peak[c]);
		for (int b = 0; b < MEM_B__COUNT; b++)
			*ovf |= !at(&e->v[MEM_C__COUNT + b], t, &k->buffers_at_peak[b]);
		k->peak = e->where;
	}
	mem_class_totals(p->job, k, ovf);
}

size_t cm_plan_stages(const struct cm_plan *p)
{
	return p->nstages;
}

bool cm_plan_eval(const struct cm_plan *p, uint64_t mb, struct mem_result *res,
		  struct mem_class *classes)
{
	bool ovf = false;
	uint64_t t = (mb - p->r) / p->period;

	if (mb < p->r || (mb - p->r) % p->period || t > p->tmax)
		return false;
	res->classes = classes;
	res->nclasses = 0;
	res->params_total = p->params_total;
	res->params_trainable = p->params_trainable;
	for (size_t i = 0; i < p->nstages && !ovf; i++) {
		/* in the next free slot, as memory.c run_stages() */
		struct mem_class *k = &classes[res->nclasses];

		eval_stage(p, &p->st[i], t, k, &ovf);
		mem_class_add(res, k, &ovf);
	}
	return !ovf;
}

/* ---- building ---- */

static bool same_result(const struct mem_result *x, const struct mem_result *y)
{
	return x->nclasses == y->nclasses && x->params_total == y->params_total &&
	       x->params_trainable == y->params_trainable &&
	       !memcmp(x->classes, y->classes, x->nclasses * sizeof *x->classes);
}

/* The plan against mem_analyze at t = 0, 1, 2, about micro_batch 16 and
 * the top of the range: every byte of every class (explain strings are
 * empty on both sides). */
static bool verify(const struct cm_plan *p, struct cm_plan_src *src)
{
	uint64_t ts[] = { 0, 1, 2, 16 / p->period, p->tmax };
	struct mem_class *mine = xcalloc(p->nstages + 1, sizeof *mine);
	bool ok = true;

	for (size_t i = 0; ok && i < sizeof ts / sizeof ts[0]; i++) {
		uint64_t mb = p->r + p->period * ts[i];
		const struct mem_result *r;
		struct mem_result x;

		if (ts[i] > p->tmax)
			continue;
		ok = src->analyze(src, mb, NULL, &r) == MEM_OK && cm_plan_eval(p, mb, &x, mine) &&
		     same_result(r, &x);
	}
	free(mine);
	return ok;
}

static bool build_stages(struct arena *a, struct cm_plan *p, const struct recorder *r1,
			 const struct recorder *r2, uint64_t tmax)
{
	size_t lo = 0;

	for (size_t s = 0; s < p->nstages; s++) {
		size_t hi = lo;

		while (hi < r1->n && r1->in[hi].stage == s)
			hi++;
		if (!build_stage(a, &p->st[s], r1, r2, s, lo, hi, tmax))
			return false;
		lo = hi;
	}
	return lo == r1->n;
}

struct cm_plan *cm_plan_build(struct arena *a, struct cm_plan_src *src)
{
	struct recorder r1 = { 0 }, r2 = { 0 };
	const struct mem_result *res;
	struct cm_plan *p = ARENA_NEW(a, struct cm_plan);
	bool ok = src->r >= 1 && src->period >= 1 && src->mb_max >= src->r &&
		  src->mb_max - src->r >= src->period && record(src, src->r, &r1, &res);

	if (ok) {
		p->params_total = res->params_total;
		p->params_trainable = res->params_trainable;
	}
	ok = ok && record(src, src->r + src->period, &r2, &res) && r1.n == r2.n && r1.nk == r2.nk &&
	     r1.nk > 0;
	if (ok) {
		p->job = src->job;
		p->r = src->r;
		p->period = src->period;
		p->tmax = (src->mb_max - src->r) / src->period;
		p->nstages = r1.nk;
		p->st = ARENA_NEW_ARRAY(a, struct stage, r1.nk);
		ok = build_stages(a, p, &r1, &r2, p->tmax) && verify(p, src);
	}
	free(r1.in);
	free(r1.k);
	free(r2.in);
	free(r2.k);
	return ok ? p : NULL;
}
