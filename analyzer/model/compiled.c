/* SPDX-License-Identifier: MIT */
/*
 * compiled.c - lower a train block once per ZeRO stage and checkpoint
 * mode (compiled.h), then evaluate variants with no walk and no
 * allocation.  Lowerings are made eagerly: 5 x 5 of them at five
 * micro-batches each cost 125 builds, about 5 ms, against the millions
 * of evaluations a search makes of them.
 */
#include "analyzer/model/compiled.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/build.h"

enum { CM_NZERO = 5 };	/* as written, then ZeRO 0..3 */

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
};
enum { CM_NACT = sizeof act_off / sizeof act_off[0] };

/* A field added to mem_layer or mem_param must be sorted here: scaled by
 * the micro-batch (act_off, or dropped as the parts are) or compared
 * between the builds (same_layer; mem_param_equal in memory.c).  Otherwise a lowering
 * would carry the micro_batch-1 value of a new per-token field into every
 * variant.  The sizes on x86-64 / LP64 stop the build until it is. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct mem_layer) == 176,
	       "a new mem_layer field: sort it in compiled.c (act_off or same_layer)");
_Static_assert(sizeof(void *) != 8 || sizeof(struct mem_param) == 144,
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

struct cm_lowering {
	bool built;			/* the variant builds at micro_batch 1 */
	bool affine;			/* else cm_eval rebuilds it */
	uint64_t affine_max;		/* largest micro_batch checked: above, rebuilt */
	struct mem_job job;		/* blocks = NULL: cm_eval points them at its scratch */
	struct mem_block *blocks;	/* .layers = NULL; nlayers, repeat, is_body */
	struct cm_layer *layers;	/* every block's layers, in order */
	size_t nblocks, nlayers;
};

struct cm_model {
	struct eval *ev;
	const struct check_job *cj;
	uint64_t tp, mb_written;
	size_t maxblocks, maxlayers;
	struct cm_lowering low[CM_NZERO][CM_CKPT__COUNT];
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
static bool check_affine(struct cm_model *m, struct arena *a, struct cm_lowering *L,
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

static void lower(struct cm_model *m, struct arena *a, size_t zi, size_t ci)
{
	struct cm_lowering *L = &m->low[zi][ci];
	struct build b1;
	struct build_override ov = override(m, zi, ci, 1);

	if (!build_job(m->ev, a, m->cj, &ov, true, &b1))
		return;
	L->built = true;
	L->job = b1.job;
	L->job.blocks = NULL;
	L->job.nblocks = 0;
	/* the allocator replay (§5.4) reads each saved tensor's bytes
	 * (mem_layer.save_parts), which the affine form does not keep:
	 * such a job is rebuilt per variant */
	L->affine = !b1.job.alloc_replay && check_affine(m, a, L, &b1, zi, ci);
	if (L->nblocks > m->maxblocks)
		m->maxblocks = L->nblocks;
	if (L->nlayers > m->maxlayers)
		m->maxlayers = L->nlayers;
}

struct cm_model *cm_compile(struct eval *ev, struct arena *a, const struct check_job *cj, uint64_t tp)
{
	struct cm_model *m = arena_alloc(a, sizeof *m);
	struct build b;
	struct build_override ov = { .zero = -1, .tp = tp };

	memset(m, 0, sizeof *m);
	m->ev = ev;
	m->cj = cj;
	m->tp = tp;
	if (!build_job(ev, a, cj, &ov, true, &b))
		return NULL;
	m->mb_written = b.micro_batch;
	for (size_t zi = 0; zi < CM_NZERO; zi++)
		for (size_t ci = 0; ci < CM_CKPT__COUNT; ci++)
			lower(m, a, zi, ci);
	return m;
}

/* ---- evaluation ---- */

static const struct cm_lowering *lowering(const struct cm_model *m, const struct cm_variant *v)
{
	if (!m || v->zero < -1 || v->zero > 3 || (unsigned)v->checkpoint >= CM_CKPT__COUNT)
		return NULL;
	return &m->low[v->zero + 1][v->checkpoint];
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
	if (s->capblocks < m->maxblocks) {
		struct mem_block *b = realloc(s->blocks, m->maxblocks * sizeof *b);

		if (!b)
			return false;
		s->blocks = b;
		s->capblocks = m->maxblocks;
	}
	if (s->caplayers < m->maxlayers) {
		struct mem_layer *l = realloc(s->layers, m->maxlayers * sizeof *l);

		if (!l)
			return false;
		s->layers = l;
		s->caplayers = m->maxlayers;
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

enum mem_status cm_eval(const struct cm_model *m, const struct cm_variant *v, struct cm_scratch *s,
			const struct mem_result **out)
{
	const struct cm_lowering *L = lowering(m, v);
	enum mem_status st;

	*out = NULL;
	if (!L || !L->built)
		return MEM_E_INVALID;
	if (!cm_is_affine(m, v))
		st = rebuild(m, v, s);
	else if (!reserve(s, m))
		st = MEM_E_NOMEM;
	else
		st = fill(L, micro_batch(m, v), s) ? MEM_OK : MEM_E_OVERFLOW;
	if (st != MEM_OK)
		return st;
	if (v->grad_accum)
		s->job.micro_batches = v->grad_accum;
	s->job.no_explain = true;
	s->job.phase_series = false;
	st = mem_analyze_ws(&s->job, &s->ws, &s->res);
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
	mem_ws_free(&s->ws);
	arena_free(&s->rebuild);
	memset(s, 0, sizeof *s);
}
