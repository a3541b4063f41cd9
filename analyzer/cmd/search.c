/* SPDX-License-Identifier: MIT */
/*
 * search.c - memc search over one train block: every layout of its model
 * on its cluster (or on --gpus), pruned by divisibility, ranked by the
 * step-time model, then taken best first through the memory model until
 * --top of them fit, each of those verified as pasted text
 * (docs/search.md). Memory is asked only of layouts that could make the
 * list: ranking does not depend on it, so the answer is the one a full
 * memory sweep would give.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "analyzer/cmd/search_impl.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/cmd/search_pick.h"
#include "analyzer/memory/memory.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/dtypes.h"
#include "lang/eval.h"
#include "lang/intern.h"
#include "lang/num.h"
#include "lang/value.h"

/* The largest micro-batch and cp degree searched (docs/search.md). */
enum { SEARCH_MB_LIMIT = 64, SEARCH_CP_LIMIT = 16, SEARCH_VP_LIMIT = 128 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- what the job says ---- */

static bool bound(const struct search_ctx *c, const char *name, uint64_t *out)
{
	struct value v;
	struct interner *in = eval_interner(c->cr->ev);

	return env_lookup(c->job->bindings, intern_cstr(in, name), &v) && v.kind == VAL_NUM && !v.unknown &&
	       num_to_u64(v.num, out);
}

/* A whole-number argument of the model's template (hidden, heads, ...). */
static double model_arg(const struct search_ctx *c, const char *name)
{
	struct value v;
	uint64_t u = 0;
	struct interner *in = eval_interner(c->cr->ev);

	if (c->job->model.kind != VAL_INSTANCE || !c->job->model.args ||
	    !env_lookup(c->job->model.args, intern_cstr(in, name), &v) || v.kind != VAL_NUM ||
	    !num_to_u64(v.num, &u))
		return 0;
	return (double)u;
}

static double gpu_field(const struct search_ctx *c, const char *name)
{
	uint64_t u = 0;

	return build_gpu_u64(c->cr->ev, c->job->cluster.decl, name, &u) ? (double)u : 0;
}

static double dtype_bytes_of(const char *name)
{
	const struct dtype *dt = name ? dtype_find(name) : NULL;

	return dt ? dtype_bits(dt) / 8.0 : 2;
}

/* Parameters of the reference build (tp = cp = 1): dense and expert. */
static double layer_numel(const struct mem_layer *ly, bool expert)
{
	double n = 0;

	for (size_t p = 0; p < ly->nparams; p++)
		if (ly->params[p].expert == expert)
			n += (double)ly->params[p].numel;
	return n;
}

/* Parameters of the reference build (tp = cp = 1): dense and expert, and
 * those that are looked up, not multiplied: torchtitan's
 * get_dense_model_nparams_and_flops() leaves the embeddings out of 6 N,
 * unless the output head is tied to the token embedding (the stdlib's
 * lm_head then has no weight of its own). */
static void count_params(const struct mem_job *j, uint32_t ep, struct search_facts *f)
{
	double dense = 0, expert = 0, tokens = 0, positions = 0;
	bool head = false;

	f->layers = 0;
	for (size_t b = 0; b < j->nblocks; b++) {
		const struct mem_block *bk = &j->blocks[b];

		if (bk->is_body)
			f->layers += (double)bk->repeat;
		for (size_t l = 0; l < bk->nlayers; l++) {
			const struct mem_layer *ly = &bk->layers[l];
			double n = layer_numel(ly, false) * (double)bk->repeat;

			dense += n;
			expert += layer_numel(ly, true) * (double)bk->repeat;
			tokens += !bk->is_body && ly->name && !strcmp(ly->name, "embedding") ? n : 0;
			positions += !bk->is_body && ly->name && !strcmp(ly->name, "position_embedding") ? n : 0;
			head |= !bk->is_body && ly->name && !strcmp(ly->name, "lm_head") && n > 0;
		}
	}
	f->expert_params = expert * ep;
	f->params = dense + f->expert_params;
	f->lookup_params = positions + (head ? tokens : 0);
}

static struct search_shape *shape(struct search_ctx *c, uint32_t tp, uint32_t cp, uint32_t ep, uint64_t mb,
				  int zero, enum search_ckpt ck);

/* What the template's arguments say: the width, the key width, and the
 * experts a token runs through (all of them when top_k is not an argument). */
static void model_facts(const struct search_ctx *c, struct search_facts *f)
{
	double experts = model_arg(c, "experts"), top_k = model_arg(c, "top_k");
	double heads = model_arg(c, "heads"), kv = model_arg(c, "kv_heads");

	f->top_k = f->expert_params > 0 ? (top_k ? top_k : 1) : 0;
	f->active = f->params - f->lookup_params - f->expert_params +
		    (experts && top_k ? f->expert_params * top_k / experts : f->expert_params);
	f->hidden = model_arg(c, "hidden");
	f->kv_dim = heads && f->hidden ? (kv ? kv : heads) * f->hidden / heads : f->hidden;
}

static bool link_facts(struct search_ctx *c, struct search_facts *f)
{
	f->node_bw = gpu_field(c, "node_bandwidth");
	f->network_bw = gpu_field(c, "network_bandwidth");
	f->host_bw = gpu_field(c, "host_bandwidth");
	/* PCIe Gen4 x16 and 100 Gb/s Ethernet, each way: what a GPU without
	 * the figures is assumed to have (docs/search.md) */
	f->assumed_links = !f->node_bw || !f->network_bw || !f->host_bw;
	f->node_bw = f->node_bw ? f->node_bw : 32e9;
	f->host_bw = f->host_bw ? f->host_bw : 32e9;
	f->network_bw = f->network_bw ? f->network_bw : 12.5e9;
	return true;
}

static bool gather_facts(struct search_ctx *c, const struct search_opts *o)
{
	struct search_facts *f = &c->facts;
	uint64_t mb = 1, ga = 1, dp = 1, seq = 1, ep = 1, per = 0;
	struct value v;

	bound(c, "batch", &mb);
	bound(c, "seq", &seq);
	bound(c, "dp", &dp);
	bound(c, "ep", &ep);
	if (check_job_field(c->job, "grad_accum", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &ga);
	num_to_u64(c->job->cluster.gpus, &per);
	c->per_node = (uint32_t)per;
	f->seq_len = seq;
	if (__builtin_mul_overflow(mb, ga, &f->global_batch) ||
	    __builtin_mul_overflow(f->global_batch, dp, &f->global_batch))
		return c->why = "its global batch (micro_batch x grad_accum x dp) overflows 64 bits", false;
	f->mfu = o->mfu;
	const struct search_shape *ref = shape(c, 1, 1, 0, mb, -2, SEARCH_CKPT_NONE);

	if (!ref->ok)
		return c->why = "its model does not build with tp = cp = 1", false;
	count_params(&ref->bd.job, (uint32_t)ep, f);
	model_facts(c, f);
	f->act_bytes = dtype_bytes_of(ref->bd.rep.act_dtype);
	f->grad_bytes = dtype_bytes_of(ref->bd.rep.grads_dtype);
	f->weight_bytes = dtype_bytes_of(ref->bd.rep.weights_dtype);
	f->peak_flops = gpu_field(c, ref->bd.rep.act_dtype ? ref->bd.rep.act_dtype : "bf16");
	if (!f->peak_flops)
		f->peak_flops = gpu_field(c, "bf16");
	if (!f->peak_flops || !f->hidden || !f->layers)
		return c->why = !f->peak_flops ? "its GPU gives no flop/s for the compute dtype" :
			"its model has no 'hidden' argument or no repeated body", false;
	return link_facts(c, f);
}

/* ---- shapes: one build per tensor-sizing binding ---- */

static const char *const ckpt_sym[] = { "none", "selective", "full" };

/* zero -2: the job's own stage (the reference build). */
static struct search_shape *shape(struct search_ctx *c, uint32_t tp, uint32_t cp, uint32_t ep, uint64_t mb,
				  int zero, enum search_ckpt ck)
{
	for (size_t i = 0; i < c->nshapes; i++) {
		struct search_shape *s = c->shapes[i];

		if (s->tp == tp && s->cp == cp && s->ep == ep && s->micro_batch == mb && s->zero == zero &&
		    s->ckpt == ck)
			return s;
	}
	/* by pointer: a struct build points into itself (rep.job) */
	struct search_shape *s = ARENA_NEW(c->arena, struct search_shape);

	c->shapes = arena_grow(c->arena, c->shapes, c->nshapes, &c->capshapes, sizeof *c->shapes);
	c->shapes[c->nshapes++] = s;
	struct build_override ov = { .micro_batch = mb, .checkpoint = ckpt_sym[ck], .tp = tp, .cp = cp,
				     .ep = ep, .sp = 2, .layout_free = true,
				     .zero = zero == -2 || zero == -1 ? -1 : zero };

	memset(s, 0, sizeof *s);
	s->tp = tp, s->cp = cp, s->ep = ep, s->micro_batch = mb, s->zero = zero, s->ckpt = ck;
	s->built = true;
	s->ok = build_job(c->cr->ev, c->arena, c->job, &ov, true, &s->bd);
	return s;
}

/* ---- the layouts ---- */

struct list {
	struct search_layout *v;
	size_t n, cap;
};

static void push(struct list *ls, const struct search_layout *l)
{
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 1024;
		ls->v = xrealloc(ls->v, arena_array_size(sizeof *ls->v, ls->cap));
	}
	ls->v[ls->n++] = *l;
}

/* Whether the body repeats split over pp x vp chunks (mem_pp_split on the
 * reference job, which knows the stated split: kept at the written pp and
 * vp, the even one elsewhere, search_split.h). */
static bool splits(const struct search_ctx *c, uint32_t pp, uint32_t vp)
{
	struct mem_job j = c->shapes[0]->bd.job;
	uint64_t layers;

	if (search_split_dropped(&j, pp, vp))
		search_split_clear(&j);
	j.pp = pp;
	j.vp = vp;
	j.schedule = vp > 1 ? MEM_PP_INTERLEAVED : MEM_PP_1F1B;
	return mem_pp_split(&j, &layers) == MEM_SPLIT_OK;
}

static bool has_key(const struct search_ctx *c, const char *name)
{
	for (const struct field *f = c->job->block; f; f = f->next)
		if (f->name && !strcmp(f->name, name))
			return true;
	return false;
}

/* The knobs set on the built job: zero, recompute, offload. */
static void knobs(struct search_ctx *c, struct list *ls, struct search_layout *l)
{
	struct value v;
	bool fsdp = check_job_field(c->job, "fsdp", &v) && v.kind == VAL_SYMBOL && strcmp(v.str, "none");
	/* a ddp { } record is refused under ZeRO, a deepspeed { } one without
	 * it (check_train.c): the stages the job's own records allow */
	bool ddp = has_key(c, "ddp"), ds = has_key(c, "deepspeed");
	int lo = fsdp ? -1 : ds ? 1 : 0, hi = fsdp ? -1 : ddp ? 0 : 3;

	/* DeepSpeed's PipelineEngine asserts zero_optimization_stage() <
	 * ZeroStageEnum.gradients (deepspeed/runtime/pipe/engine.py) */
	if (l->pp > 1 && hi > 1)
		hi = 1;

	for (int z = lo; z <= hi; z++)
		for (int k = 0; k < SEARCH_CKPT__COUNT; k++)
			for (int off = 0; off <= (z >= 1); off++) {
				l->zero = z;
				l->ckpt = (enum search_ckpt)k;
				l->offload = off;
				search_time(&c->facts, l);
				push(ls, l);
				c->layouts++;
			}
}

static void micro_batches(struct search_ctx *c, struct list *ls, struct search_layout *l)
{
	uint64_t per_dp = c->facts.global_batch / l->dp;

	for (uint64_t mb = 1; mb <= per_dp && mb <= SEARCH_MB_LIMIT; mb++) {
		if (per_dp % mb)
			continue;
		l->micro_batch = mb;
		l->grad_accum = per_dp / mb;
		for (uint32_t vp = 1; vp <= SEARCH_VP_LIMIT && vp <= c->facts.layers / l->pp; vp++) {
			/* interleaving: pp > 1, micro-batches a multiple of pp
			 * (Megatron's schedules.py asserts it) */
			if (vp > 1 && (l->pp == 1 || l->grad_accum % l->pp))
				break;
			if (!splits(c, l->pp, vp))
				continue;
			l->vp = vp;
			knobs(c, ls, l);
		}
	}
}

static void experts(struct search_ctx *c, struct list *ls, struct search_layout *l)
{
	double n = model_arg(c, "experts");
	uint64_t ranks = (uint64_t)l->dp * l->cp;	/* both at most 2^20 */
	uint64_t most = c->facts.expert_params > 0 && n > 1 ? (n < (double)ranks ? (uint64_t)n : ranks) : 1;

	for (uint32_t ep = 1; ep <= most; ep++) {
		/* ep divides the experts and the dp x cp ranks (check_train.c) */
		if (fmod(n, ep) != 0 || ranks % ep)
			continue;
		l->ep = ep;
		micro_batches(c, ls, l);
	}
}

static void layouts_of(struct search_ctx *c, struct list *ls, uint32_t gpus)
{
	struct search_layout l = { .gpus = gpus, .per_node = gpus < c->per_node ? gpus : c->per_node };

	for (uint32_t tp = 1; tp <= l.per_node; tp++) {
		if (l.per_node % tp)
			continue;
		for (uint32_t cp = 1; cp <= SEARCH_CP_LIMIT && tp * cp <= gpus; cp++) {
			/* cp > 1 cuts each sequence into 2 x cp chunks (check_layout.c cp_chunks) */
			if ((gpus / tp) % cp || gpus % (tp * cp) || !check_cp_splits_seq(c->facts.seq_len, cp))
				continue;
			uint32_t rest = gpus / (tp * cp);

			for (uint32_t pp = 1; pp <= rest && pp <= c->facts.layers; pp++) {
				if (rest % pp || c->facts.global_batch % (rest / pp))
					continue;
				l.tp = tp, l.cp = cp, l.pp = pp, l.dp = rest / pp;
				experts(c, ls, &l);
			}
		}
	}
}

/* Best first; ties in a fixed order of the knobs, so output is stable. */
static int by_speed(const void *a, const void *b)
{
	const struct search_layout *x = a, *y = b;

	if (x->tokens_per_s != y->tokens_per_s)
		return x->tokens_per_s > y->tokens_per_s ? -1 : 1;
	uint64_t kx[] = { x->gpus, x->tp, x->pp, x->vp, x->cp, x->ep, x->micro_batch, (uint64_t)(x->zero + 1),
			  x->ckpt, x->offload };
	uint64_t ky[] = { y->gpus, y->tp, y->pp, y->vp, y->cp, y->ep, y->micro_batch, (uint64_t)(y->zero + 1),
			  y->ckpt, y->offload };

	for (size_t i = 0; i < sizeof kx / sizeof kx[0]; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

static void progress(const struct search_ctx *c, const struct search_opts *o, double t0, double *last,
		     size_t i, size_t n)
{
	double t = now_s();

	if (!o->progress || t - t0 < 1.0 || t - *last < 0.2)
		return;
	*last = t;
	fprintf(stderr, "\rmemc search: %s: %zu of %zu layouts analysed, %zu found", c->job->decl->name, i, n,
		c->npicks);
}

/* Best first through memory, then the pasted text, until o->top fit. */
static void pick(struct search_ctx *c, const struct search_opts *o, struct list *ls, double t0)
{
	double last = 0;

	c->picks = ARENA_NEW_ARRAY(c->arena, struct search_pick, o->top ? o->top : 1);
	for (size_t i = 0; i < ls->n && c->npicks < o->top; i++) {
		const struct search_layout *l = &ls->v[i];
		struct search_shape *s = shape(c, l->tp, l->cp, l->ep, l->micro_batch, l->zero, l->ckpt);
		struct search_mem m;
		uint64_t total = 0;

		progress(c, o, t0, &last, i, ls->n);
		if (!s->ok)
			continue;
		double e0 = now_s();

		search_eval(s, l, &c->ws, &m);
		c->eval_seconds += now_s() - e0;
		c->analysed++;
		c->pruned += m.pruned;
		if (!m.ok || !m.fits)
			continue;
		char *block = search_render(c, l, c->job->decl->name);

		c->verified++;
		if (!search_verify(c, block, &total))
			continue;
		struct search_pick *p = &c->picks[c->npicks++];

		p->l = *l;
		p->block = block;
		p->device_total = total;
		p->capacity = s->bd.job.capacity_bytes;
	}
	if (o->progress && now_s() - t0 >= 1.0)
		fprintf(stderr, "\r\033[K");
}

static const char *bound_symbol(const struct search_ctx *c, const char *name)
{
	struct value v;

	return env_lookup(c->job->bindings, intern_cstr(eval_interner(c->cr->ev), name), &v) &&
	       v.kind == VAL_SYMBOL ? v.str : "";
}

/* The job's own layout through the same step-time model, for comparison
 * (selective_op counts as selective: it recomputes a part of the forward). */
static void as_written(struct search_ctx *c, uint32_t gpus)
{
	struct search_layout *l = &c->written;
	uint64_t u[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	static const char *const names[] = { "dp", "tp", "pp", "vp", "cp", "ep", "batch" };
	struct value v;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		bound(c, names[i], &u[i]);
	if (check_job_field(c->job, "grad_accum", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &u[7]);
	*l = (struct search_layout){ .gpus = gpus, .per_node = c->per_node, .dp = (uint32_t)u[0],
				     .tp = (uint32_t)u[1], .pp = (uint32_t)u[2], .vp = (uint32_t)u[3],
				     .cp = (uint32_t)u[4], .ep = (uint32_t)u[5], .micro_batch = u[6],
				     .grad_accum = u[7] };
	const char *ck = bound_symbol(c, "checkpoint");

	l->ckpt = !strcmp(ck, "full") ? SEARCH_CKPT_FULL : !strcmp(ck, "none") || !*ck ? SEARCH_CKPT_NONE :
		  SEARCH_CKPT_SELECTIVE;
	uint64_t zero = 0;

	if (check_job_field(c->job, "zero", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &zero);
	l->zero = check_job_field(c->job, "fsdp", &v) && v.kind == VAL_SYMBOL && strcmp(v.str, "none") ? -1 :
		  (int)zero;
	l->offload = check_job_field(c->job, "offload.optimizer", &v) && v.kind == VAL_SYMBOL &&
		     strcmp(v.str, "none");
	search_time(&c->facts, l);
}

bool search_job(struct search_ctx *c, const struct search_opts *o)
{
	double t0 = now_s();
	struct list ls = { 0 };
	uint64_t gpus = 0, nodes = 0;

	c->nshapes = c->npicks = 0;
	c->layouts = c->analysed = c->verified = c->pruned = 0;
	c->eval_seconds = 0;
	if (!c->job->ok)
		return c->why = "it has errors", false;
	if (!gather_facts(c, o))
		return false;
	num_to_u64(c->job->cluster.nodes, &nodes);
	gpus = nodes * c->per_node;
	as_written(c, (uint32_t)gpus);
	for (size_t i = 0; i < o->ngpus; i++)
		if (o->gpus[i] > c->per_node && o->gpus[i] % c->per_node)
			return c->why = arena_printf(c->arena, "--gpus %u is more than one node of %u GPUs and "
						     "not whole nodes", (unsigned)o->gpus[i],
						     (unsigned)c->per_node), false;
	if (o->ngpus)
		for (size_t i = 0; i < o->ngpus; i++)
			layouts_of(c, &ls, o->gpus[i]);
	else
		layouts_of(c, &ls, (uint32_t)gpus);
	if (ls.n)	/* none divides: ls.v is NULL, which qsort may not be given */
		qsort(ls.v, ls.n, sizeof *ls.v, by_speed);
	pick(c, o, &ls, t0);
	mem_ws_free(&c->ws);
	free(ls.v);
	c->seconds = now_s() - t0;
	return true;
}
