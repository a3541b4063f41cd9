/* SPDX-License-Identifier: MIT */
/*
 * compiled.c - lower a train block per ZeRO stage and checkpoint mode
 * (compiled.h), then evaluate variants with no walk and no allocation.
 * Lowerings are made lazily, on a variant's first use of them: the 5 x 5
 * of them at five micro-batches each would be 125 builds, about 6 ms,
 * for a caller (the fix search) that compiles once per layout and may
 * evaluate a few of them.  Each lowering then keeps a plan per grad_accum
 * (plan.h), also made on first use.
 */
#include "analyzer/model/compiled.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/alloc/alloc.h"
#include "analyzer/lower/build.h"
#include "analyzer/model/plan.h"
#include "lang/num.h"

enum { CM_NZERO = 5 };	/* as written, then ZeRO 0..3 */

/* grad_accum values a lowering keeps plans for, and plans a model makes
 * in all (one per residue where there is a period: a plan holds a class
 * per stage, 3 KiB, and its lines, so 4,096 of a 4-stage job are about
 * 50 MiB); past them, a variant is filled and analysed: slower, never
 * different. */
enum { CM_MAX_PLANS = 64, CM_MAX_MADE = 4096 };

/* The per-micro-batch fields of a layer: what build_job scales by tokens. */
static const size_t act_off[] = {
	offsetof(struct mem_layer, saves_bytes),
	offsetof(struct mem_layer, input_bytes),
	offsetof(struct mem_layer, input_saved_bytes),
	offsetof(struct mem_layer, temp_fwd_bytes),
	offsetof(struct mem_layer, temp_bwd_bytes),
	offsetof(struct mem_layer, op_mm),
	offsetof(struct mem_layer, op_mm) + sizeof(uint64_t),
	offsetof(struct mem_layer, op_sdpa),
	offsetof(struct mem_layer, output_bytes),
	offsetof(struct mem_layer, output_saved_bytes),
	offsetof(struct mem_layer, mm_fwd_bytes),
	offsetof(struct mem_layer, mm_bwd_bytes),
	offsetof(struct mem_layer, wgrad_bytes),
	offsetof(struct mem_layer, wgrad_out_bytes),
};
enum { CM_NACT = sizeof act_off / sizeof act_off[0] };

/* A field added to mem_layer or mem_param must be sorted here: scaled by
 * the micro-batch (act_off, or dropped as the parts are) or compared
 * between the builds (same_layer; mem_param_equal in memory.c).  Otherwise a lowering
 * would carry the micro_batch-1 value of a new per-token field into every
 * variant.  The sizes on x86-64 / LP64 stop the build until it is. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct mem_layer) == 224,
	       "a new mem_layer field: sort it in compiled.c (act_off or same_layer)");
_Static_assert(sizeof(void *) != 8 || sizeof(struct mem_param) == 152,
	       "a new mem_param field: compare it in memory.c (mem_param_equal)");

/* Micro-batches the affine form is checked at, besides the two it is
 * made from, ascending.  The last one that builds bounds the fast path:
 * a larger micro_batch is rebuilt.  Rounding per sample (ceil(batch x r),
 * max(batch, k)) that agrees with the line at that bound agrees with it
 * at every micro_batch below it too, and what does not agree at some
 * point is not affine at all. */
static const uint64_t verify_mb[] = { 3, 16, 1024 };

struct cm_layer {
	struct mem_layer at0;		/* activation fields: the value at micro_batch 0 */
	uint64_t d[CM_NACT];		/* ... and what one more micro-batch adds */
};

/* A lowering's plans at one grad_accum: one, or one per residue of the
 * micro_batch modulo a period (plan.h); NULL: none, analyse. */
struct cm_planned {
	struct cm_planned *next;
	uint64_t micro_batches;
	uint64_t period;
	struct cm_plan **plan;		/* [period]: micro_batch 1 + i + period x t */
	bool *tried;
};

struct cm_lowering {
	bool lowered;			/* lower() ran */
	bool built;			/* the variant builds at micro_batch 1 */
	bool affine;			/* else cm_eval rebuilds it */
	uint64_t affine_max;		/* largest micro_batch checked: above, rebuilt */
	struct mem_job job;		/* blocks = NULL: cm_eval points them at its scratch */
	struct mem_block *blocks;	/* .layers = NULL; nlayers, repeat, is_body */
	struct cm_layer *layers;	/* every block's layers, in order */
	size_t nblocks, nlayers;
	struct cm_planned *plans, *last;	/* last: the one used last */
	size_t nplans;
};

/* What the evaluations make as they need it: cm_eval() takes the model
 * const, as it reads it, and these are reached through a pointer. */
struct cm_lazy {
	size_t maxblocks, maxlayers;
	size_t made;			/* plans tried (CM_MAX_MADE) */
	struct cm_lowering low[CM_NZERO][CM_CKPT__COUNT];
};

struct cm_model {
	struct eval *ev;
	struct arena *a;
	const struct check_job *cj;
	uint64_t tp, mb_written;
	struct cm_lazy *z;
};

static const char *const ckpt_name[CM_CKPT__COUNT] = {
	NULL, "none", "selective", "full", "selective_op",
};

static uint64_t *act(struct mem_layer *l, int k)
{
	return (uint64_t *)(void *)((char *)l + act_off[k]);
}

static uint64_t act_of(const struct mem_layer *l, int k)
{
	return *act((struct mem_layer *)(uintptr_t)l, k);
}

/* ---- comparing two builds (all but the activation bytes) ---- */

static bool same_str(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

static bool same_layer(const struct mem_layer *x, const struct mem_layer *y)
{
	if (!same_str(x->name, y->name) || x->origin != y->origin || x->nparams != y->nparams ||
	    x->loss_region != y->loss_region || x->op_mm_count != y->op_mm_count ||
	    x->mm_split != y->mm_split ||
	    x->tied_grad_bytes != y->tied_grad_bytes || x->tied_grad_end_bytes != y->tied_grad_end_bytes)
		return false;
	for (size_t i = 0; i < x->nparams; i++)
		if (!mem_param_equal(&x->params[i], &y->params[i]))
			return false;
	return true;
}

/* The job's scalars: build_job zeroes the struct before filling it, so
 * the padding compares equal too. */
static bool same_scalars(const struct mem_job *x, const struct mem_job *y)
{
	struct mem_job a, b;

	memcpy(&a, x, sizeof a);
	memcpy(&b, y, sizeof b);
	a.blocks = b.blocks = NULL;
	a.nblocks = b.nblocks = 0;
	return !memcmp(&a, &b, sizeof a);
}

static bool same_shape(const struct mem_job *x, const struct mem_job *y)
{
	if (x->nblocks != y->nblocks || !same_scalars(x, y))
		return false;
	for (size_t b = 0; b < x->nblocks; b++) {
		const struct mem_block *p = &x->blocks[b], *q = &y->blocks[b];

		if (p->nlayers != q->nlayers || p->repeat != q->repeat || p->is_body != q->is_body)
			return false;
		for (size_t j = 0; j < p->nlayers; j++)
			if (!same_layer(&p->layers[j], &q->layers[j]))
				return false;
	}
	return true;
}

/* ---- lowering ---- */

static struct build_override override(const struct cm_model *m, size_t zi, size_t ci, uint64_t mb)
{
	return (struct build_override){ .micro_batch = mb, .checkpoint = ckpt_name[ci],
					.zero = (int)zi - 1, .tp = m->tp };
}

/* Copy build @b1 (micro_batch 1) as intercept, @b2 - @b1 as slope; false
 * where a field shrinks with the micro-batch (not affine with d >= 0). */
static bool lower_layers(struct arena *a, struct cm_lowering *L, const struct mem_job *j1,
			 const struct mem_job *j2)
{
	size_t n = 0;

	L->nblocks = j1->nblocks;
	L->blocks = arena_alloc(a, arena_array_size(sizeof *L->blocks, L->nblocks ? L->nblocks : 1));
	for (size_t b = 0; b < j1->nblocks; b++) {
		L->blocks[b] = j1->blocks[b];
		L->blocks[b].layers = NULL;
		n += j1->blocks[b].nlayers;
	}
	L->nlayers = n;
	L->layers = arena_alloc(a, arena_array_size(sizeof *L->layers, n ? n : 1));
	n = 0;
	for (size_t b = 0; b < j1->nblocks; b++)
		for (size_t j = 0; j < j1->blocks[b].nlayers; j++, n++) {
			struct cm_layer *c = &L->layers[n];
			const struct mem_layer *y = &j2->blocks[b].layers[j];

			c->at0 = j1->blocks[b].layers[j];
			/* per-tensor parts scale with the micro-batch too; only the
			 * allocator replay reads them, which a lowering does not take
			 * (lower()): none is kept, so none can be stale */
			c->at0.save_parts = c->at0.temp_fwd_parts = c->at0.temp_bwd_parts = NULL;
			c->at0.nsave_parts = c->at0.ntemp_fwd_parts = c->at0.ntemp_bwd_parts = 0;
			for (int k = 0; k < CM_NACT; k++) {
				uint64_t f1 = act_of(&c->at0, k), f2 = act_of(y, k);

				if (f2 < f1 || f2 - f1 > f1)
					return false;
				c->d[k] = f2 - f1;
				*act(&c->at0, k) = f1 - c->d[k];
			}
		}
	return true;
}

/* Whether build @j at micro_batch @mb is what the affine form gives. */
static bool affine_at(const struct cm_lowering *L, const struct mem_job *j, uint64_t mb)
{
	size_t n = 0;

	for (size_t b = 0; b < j->nblocks; b++)
		for (size_t i = 0; i < j->blocks[b].nlayers; i++, n++)
			for (int k = 0; k < CM_NACT; k++) {
				uint64_t x;

				if (__builtin_mul_overflow(L->layers[n].d[k], mb, &x) ||
				    __builtin_add_overflow(x, act_of(&L->layers[n].at0, k), &x) ||
				    x != act_of(&j->blocks[b].layers[i], k))
					return false;
			}
	return true;
}

/* The builds at micro_batch 2, 3 and 16, in an arena freed here: only
 * their numbers are compared. */
static bool check_affine(const struct cm_model *m, struct arena *a, struct cm_lowering *L,
			 const struct build *b1, size_t zi, size_t ci)
{
	struct arena tmp = { 0 };
	struct build bx;
	struct build_override ov = override(m, zi, ci, 2);
	bool ok = build_job(m->ev, &tmp, m->cj, &ov, true, &bx) && same_shape(&b1->job, &bx.job) &&
		  lower_layers(a, L, &b1->job, &bx.job);

	L->affine_max = 2;
	for (size_t i = 0; ok && i < sizeof verify_mb / sizeof verify_mb[0]; i++) {
		ov.micro_batch = verify_mb[i];
		if (!build_job(m->ev, &tmp, m->cj, &ov, true, &bx))
			break;	/* too large to build: the bound is the last that built */
		ok = same_shape(&b1->job, &bx.job) && affine_at(L, &bx.job, verify_mb[i]);
		L->affine_max = verify_mb[i];
		arena_free(&tmp);
	}
	arena_free(&tmp);
	return ok;
}

static void lower(const struct cm_model *m, size_t zi, size_t ci)
{
	struct cm_lowering *L = &m->z->low[zi][ci];
	struct build b1;
	struct build_override ov = override(m, zi, ci, 1);

	L->lowered = true;
	if (!build_job(m->ev, m->a, m->cj, &ov, true, &b1))
		return;
	L->built = true;
	L->job = b1.job;
	L->job.blocks = NULL;
	L->job.nblocks = 0;
	/* the allocator replay (§5.4) reads each saved tensor's bytes
	 * (mem_layer.save_parts), which the affine form does not keep:
	 * such a job is rebuilt per variant */
	L->affine = !b1.job.alloc_replay && check_affine(m, m->a, L, &b1, zi, ci);
	if (L->nblocks > m->z->maxblocks)
		m->z->maxblocks = L->nblocks;
	if (L->nlayers > m->z->maxlayers)
		m->z->maxlayers = L->nlayers;
}

struct cm_model *cm_compile(struct eval *ev, struct arena *a, const struct check_job *cj, uint64_t tp)
{
	struct cm_model *m = arena_alloc(a, sizeof *m);
	struct build b;
	struct build_override ov = { .zero = -1, .tp = tp };

	memset(m, 0, sizeof *m);
	m->ev = ev;
	m->a = a;
	m->cj = cj;
	m->tp = tp;
	m->z = arena_alloc(a, sizeof *m->z);	/* zeroed: nothing lowered yet */
	if (!build_job(ev, a, cj, &ov, true, &b))
		return NULL;
	m->mb_written = b.micro_batch;
	return m;
}

/* ---- evaluation ---- */

static const struct cm_lowering *lowering(const struct cm_model *m, const struct cm_variant *v)
{
	if (!m || v->zero < -1 || v->zero > 3 || (unsigned)v->checkpoint >= CM_CKPT__COUNT)
		return NULL;
	if (!m->z->low[v->zero + 1][v->checkpoint].lowered)
		lower(m, (size_t)(v->zero + 1), (size_t)v->checkpoint);
	return &m->z->low[v->zero + 1][v->checkpoint];
}

static uint64_t micro_batch(const struct cm_model *m, const struct cm_variant *v)
{
	return v->micro_batch ? v->micro_batch : m->mb_written;
}

bool cm_is_affine(const struct cm_model *m, const struct cm_variant *v)
{
	const struct cm_lowering *L = lowering(m, v);

	return L && L->built && L->affine && micro_batch(m, v) <= L->affine_max;
}

static bool reserve(struct cm_scratch *s, const struct cm_model *m)
{
	const struct cm_lazy *z = m->z;

	if (s->capblocks < z->maxblocks) {
		struct mem_block *b = realloc(s->blocks, z->maxblocks * sizeof *b);

		if (!b)
			return false;
		s->blocks = b;
		s->capblocks = z->maxblocks;
	}
	if (s->caplayers < z->maxlayers) {
		struct mem_layer *l = realloc(s->layers, z->maxlayers * sizeof *l);

		if (!l)
			return false;
		s->layers = l;
		s->caplayers = z->maxlayers;
	}
	return true;
}

/* The variant's mem_job in the scratch: the lowering's layers with their
 * activation bytes at @mb (false if one overflows 64 bits). */
static bool fill(const struct cm_lowering *L, uint64_t mb, struct cm_scratch *s)
{
	size_t n = 0;

	for (size_t b = 0; b < L->nblocks; b++) {
		s->blocks[b] = L->blocks[b];
		s->blocks[b].layers = s->layers + n;
		for (size_t j = 0; j < L->blocks[b].nlayers; j++, n++) {
			const struct cm_layer *c = &L->layers[n];
			struct mem_layer *l = &s->layers[n];

			*l = c->at0;
			for (int k = 0; k < CM_NACT; k++) {
				uint64_t x;

				if (__builtin_mul_overflow(c->d[k], mb, &x) ||
				    __builtin_add_overflow(x, act_of(&c->at0, k), act(l, k)))
					return false;
			}
		}
	}
	s->job = L->job;
	s->job.blocks = s->blocks;
	s->job.nblocks = L->nblocks;
	return true;
}

/* A lowering that is not affine: the full build, in the scratch's arena. */
static enum mem_status rebuild(const struct cm_model *m, const struct cm_variant *v,
			       struct cm_scratch *s)
{
	struct build b;
	struct build_override ov = override(m, (size_t)(v->zero + 1), v->checkpoint, v->micro_batch);

	arena_free(&s->rebuild);
	if (!build_job(m->ev, &s->rebuild, m->cj, &ov, true, &b))
		return MEM_E_INVALID;
	s->job = b.job;
	return MEM_OK;
}

/* The filled lowering, analysed with the variant's grad_accum. */
static enum mem_status analyse(struct cm_scratch *s, uint64_t grad_accum, struct mem_rec *rec)
{
	enum mem_status st;

	if (grad_accum)
		s->job.micro_batches = grad_accum;
	s->job.no_explain = true;
	s->job.phase_series = false;
	s->ws.rec = rec;
	st = mem_analyze_ws(&s->job, &s->ws, &s->res);
	s->ws.rec = NULL;
	return st;
}

/* What a plan is made from: the lowering filled at a micro_batch. */
struct plan_src {
	struct cm_plan_src src;		/* first: what cm_plan_build calls back with */
	const struct cm_lowering *L;
	uint64_t grad_accum;
	struct cm_scratch *s;
};

static enum mem_status plan_analyze(struct cm_plan_src *src, uint64_t mb, struct mem_rec *rec,
				    const struct mem_result **out)
{
	struct plan_src *p = (struct plan_src *)(void *)src;
	enum mem_status st = fill(p->L, mb, p->s) ? analyse(p->s, p->grad_accum, rec) : MEM_E_OVERFLOW;

	*out = &p->s->res;
	return st;
}

static struct cm_plan *make_plan(const struct cm_model *m, const struct cm_lowering *L,
				 uint64_t grad_accum, uint64_t r, uint64_t period, struct cm_scratch *s)
{
	struct plan_src src = { { plan_analyze, &L->job, r, period, L->affine_max }, L, grad_accum, s };

	if (m->z->made >= CM_MAX_MADE)
		return NULL;
	m->z->made++;
	return cm_plan_build(m->a, &src.src);
}

/* The period after which every figure of @L is affine again: each
 * activation tensor costs its bytes rounded up to 512 (mem_round), which
 * is affine along micro-batches @P apart once d x P is a multiple of 512
 * for every per-micro-batch slope d; and under the interleaved schedule
 * the other micro-batches in flight hold stored x (chunks - vp) / vp
 * (mem_extra_in_flight), affine along steps that are multiples of vp. */
static uint64_t period_of(const struct cm_lowering *L)
{
	uint64_t g = 0, p = 1;

	for (size_t n = 0; n < L->nlayers; n++)
		for (int k = 0; k < CM_NACT; k++)
			g = num_gcd_u64(g, L->layers[n].d[k]);
	if (!L->job.no_rounding && g)
		p = ALLOC_MIN_BLOCK / num_gcd_u64(g, ALLOC_MIN_BLOCK);
	if (L->job.vp > 1)
		p = p / num_gcd_u64(p, L->job.vp) * L->job.vp;
	return p;
}

/* A new entry for grad_accum @g: a plan over every micro_batch, else room
 * for one per residue modulo period_of() (each made on first use). */
static struct cm_planned *new_planned(const struct cm_model *m, struct cm_lowering *W, uint64_t g,
				      uint64_t grad_accum, struct cm_scratch *s)
{
	struct cm_planned *p = arena_alloc(m->a, sizeof *p);

	p->micro_batches = g;
	p->period = 1;
	p->plan = arena_alloc(m->a, sizeof *p->plan);
	p->tried = arena_alloc(m->a, sizeof *p->tried);
	p->tried[0] = true;
	p->plan[0] = make_plan(m, W, grad_accum, 1, 1, s);
	if (!p->plan[0] && period_of(W) > 1 && period_of(W) < W->affine_max) {
		p->period = period_of(W);
		p->plan = ARENA_NEW_ARRAY(m->a, struct cm_plan *, p->period);
		p->tried = ARENA_NEW_ARRAY(m->a, bool, p->period);
	}
	p->next = W->plans;
	W->plans = p;
	W->nplans++;
	return p;
}

/* The plan of lowering @L for the variant's grad_accum and micro_batch
 * @mb, made on first use; NULL where it has none. */
static const struct cm_plan *plan_of(const struct cm_model *m, const struct cm_lowering *L,
				     uint64_t grad_accum, uint64_t mb, struct cm_scratch *s)
{
	struct cm_lowering *W = (struct cm_lowering *)(uintptr_t)L;	/* m->z's: writable */
	uint64_t g = grad_accum ? grad_accum : L->job.micro_batches;
	struct cm_planned *p = W->last;
	size_t i;

	if (!p || p->micro_batches != g) {
		for (p = W->plans; p && p->micro_batches != g; p = p->next)
			;
		if (!p && W->nplans >= CM_MAX_PLANS)
			return NULL;
		if (!p)
			p = new_planned(m, W, g, grad_accum, s);
		W->last = p;
	}
	i = (size_t)((mb - 1) % p->period);
	if (!p->tried[i]) {
		p->tried[i] = true;
		p->plan[i] = make_plan(m, W, grad_accum, i + 1, p->period, s);
	}
	return p->plan[i];
}

/* Room for a plan's classes; false if it cannot be had. */
static bool reserve_classes(struct cm_scratch *s, size_t n)
{
	if (s->capclasses >= n)
		return true;
	free(s->classes);
	/* zeroed: the explain strings and chart series are never written */
	s->classes = calloc(n, sizeof *s->classes);
	s->capclasses = s->classes ? n : 0;
	return s->classes != NULL;
}

static bool eval_plan(const struct cm_plan *p, uint64_t mb, struct cm_scratch *s)
{
	return reserve_classes(s, cm_plan_stages(p)) && cm_plan_eval(p, mb, &s->res, s->classes);
}

enum mem_status cm_eval(const struct cm_model *m, const struct cm_variant *v, struct cm_scratch *s,
			const struct mem_result **out)
{
	const struct cm_lowering *L = lowering(m, v);
	const struct cm_plan *p;
	enum mem_status st;

	*out = NULL;
	if (!L)
		return MEM_E_INVALID;
	s->path = CM_PATH_REBUILT;
	if (!cm_is_affine(m, v))	/* also where micro_batch 1 does not build */
		st = rebuild(m, v, s);
	else if (!reserve(s, m))
		st = MEM_E_NOMEM;
	else if ((p = plan_of(m, L, v->grad_accum, micro_batch(m, v), s)) &&
		 eval_plan(p, micro_batch(m, v), s)) {
		s->path = CM_PATH_PLAN;
		*out = &s->res;
		return MEM_OK;
	} else {
		s->path = CM_PATH_FILLED;
		st = fill(L, micro_batch(m, v), s) ? MEM_OK : MEM_E_OVERFLOW;
	}
	if (st == MEM_OK)
		st = analyse(s, v->grad_accum, NULL);
	if (st == MEM_OK)
		*out = &s->res;
	return st;
}

uint64_t cm_worst(const struct mem_result *r, bool *fits)
{
	uint64_t worst = 0;

	*fits = r->nclasses > 0;
	for (size_t i = 0; i < r->nclasses; i++) {
		if (r->classes[i].device_total > worst)
			worst = r->classes[i].device_total;
		*fits &= r->classes[i].fits;
	}
	return worst;
}

void cm_scratch_free(struct cm_scratch *s)
{
	free(s->blocks);
	free(s->layers);
	free(s->classes);
	mem_ws_free(&s->ws);
	arena_free(&s->rebuild);
	memset(s, 0, sizeof *s);
}
