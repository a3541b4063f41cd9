/* SPDX-License-Identifier: MIT */
/*
 * fit_search.c - what fits (docs/fit.md). The largest micro_batch and
 * seq_len and the fewest GPUs are searched by galloping then bisecting,
 * each probe a variant (fit_variant.c). The fixes are combinations of
 * knobs, fewest knobs first, then in the cost order of enum knob; each
 * knob's alternatives go from the mildest to the strongest. A combination
 * whose strongest alternatives do not fit is not searched further: more
 * of every knob would not fit either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/search_split.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/import.h"
#include "lang/num.h"
#include "lang/source.h"

/* The cost order of docs/fit.md: a cheaper knob changes less of the run. */
/* K_ADAPTERS is LoRA for a job that does not say it is a fine-tune:
 * turning what may be pre-training into adapters is the largest change. */
enum knob { K_MICRO_BATCH, K_CHECKPOINT, K_SHARDING, K_OPTIMIZER, K_PRECISION, K_OFFLOAD, K_TP, K_PP, K_CP,
	    K_FINETUNE, K_GPU, K_ADAPTERS, K__COUNT };

enum { FIT_MAX_KNOBS = 3, FIT_MAX_FIXES = 6, FIT_MAX_ALTS = 24 };

struct knob_alts {
	struct fit_change alt[FIT_MAX_ALTS];	/* more are never generated: see add_alt */
	size_t n;
	size_t strong;		/* the strongest the checker takes alone (set when it is tried) */
};

/* Every identifier the knobs below write, keys included: the block path
 * parses what these name (analyzer/fit/fit.c load_gpus); one missing only
 * sends its variants to the whole text (fit_variant.c). */
const char fit_knob_words[] =
	"micro_batch grad_accum checkpoint selective full zero fsdp full_shard optimizer adamw_8bit "
	"paged_adamw_8bit adam_8bit offload params cpu parallel tp pp cp finetune lora qlora r alpha "
	"targets all_linear cluster x precision amp_bf16 bf16_true";

static uint64_t key_u64(const struct fit_ctx *c, const char *key, uint64_t dflt)
{
	struct value v;
	uint64_t u;

	if (check_job_field(c->job, key, &v) && v.kind == VAL_NUM && num_to_u64(v.num, &u))
		return u;
	return dflt;
}

/* The value text a key was written with (its field is `key = value`), or
 * NULL when it is not set. */
static const char *key_text(struct fit_ctx *c, const char *key)
{
	struct value v;

	if (!check_job_field(c->job, key, &v) || !v.origin.file)
		return NULL;
	const char *t = src_get(c->src, v.origin.file)->text, *p = t + v.origin.start, *end = t + v.origin.end;
	const char *eq = memchr(p, '=', (size_t)(end - p));

	for (p = eq ? eq + 1 : p; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	return arena_strndup(&c->arena, p, (size_t)(end - p));
}

static bool key_is(struct fit_ctx *c, const char *key, const char *text)
{
	const char *t = key_text(c, key);

	return t && strcmp(t, text) == 0;
}

/* One alternative of up to two keys; callers stay under FIT_MAX_ALTS. */
static void add_alt(struct fit_ctx *c, struct knob_alts *k, const char *top, const char *sub,
		    const char *value, const char *top2, const char *sub2, const char *value2)
{
	struct fit_change *ch = &k->alt[k->n++];

	ch->v = ARENA_NEW_ARRAY(&c->arena, struct fit_set, 2);
	ch->v[0] = (struct fit_set){ top, sub, arena_strdup(&c->arena, value), NULL, false };
	ch->n = 1;
	if (top2)
		ch->v[ch->n++] = (struct fit_set){ top2, sub2, arena_strdup(&c->arena, value2), NULL, false };
}

/* What the last alternative costs besides memory, said with it. */
static void caveat(struct knob_alts *k, const char *why)
{
	k->alt[k->n - 1].v[0].caveat = why;
}

static void alt_u64(struct fit_ctx *c, struct knob_alts *k, const char *top, const char *sub, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	add_alt(c, k, top, sub, b, NULL, NULL, NULL);
}

struct layout {
	uint64_t gpus, nodes, per, tp, pp, cp, capacity;
	const struct decl *gpu;
};

static void read_layout(struct fit_ctx *c, struct layout *l)
{
	const struct value *cl = &c->job->cluster;

	l->nodes = l->per = 1;
	num_to_u64(cl->nodes, &l->nodes);
	num_to_u64(cl->gpus, &l->per);
	l->gpus = l->nodes * l->per;	/* the checker bounds it to BUILD_MAX_GPUS */
	l->tp = key_u64(c, "parallel.tp", 1);
	l->pp = key_u64(c, "parallel.pp", 1);
	l->cp = key_u64(c, "parallel.cp", 1);
	l->gpu = cl->decl;
	l->capacity = 0;
	if (l->gpu)
		build_gpu_u64(c->ev, l->gpu, "memory", &l->capacity);
}

/* micro_batch divided, grad_accum multiplied: the global batch stays. */
static void alt_micro_batch(struct fit_ctx *c, struct knob_alts *k, uint64_t mb, uint64_t ga, uint64_t d)
{
	char m[24], g[24];

	if (ga > UINT64_MAX / d)
		return;
	snprintf(m, sizeof m, "%llu", (unsigned long long)(mb / d));
	snprintf(g, sizeof g, "%llu", (unsigned long long)(ga * d));
	add_alt(c, k, "micro_batch", NULL, m, "grad_accum", NULL, g);
}

/* micro_batch divided, grad_accum multiplied: the global batch stays.
 * The divisors up to 4096 (a huge prime must not cost a loop) while
 * there is room, and always micro_batch = 1, the strongest. */
static void knob_micro_batch(struct fit_ctx *c, struct knob_alts *k)
{
	uint64_t mb = key_u64(c, "micro_batch", 1), ga = key_u64(c, "grad_accum", 1);

	for (uint64_t d = 2; d < mb && d <= 4096 && k->n < FIT_MAX_ALTS - 1; d++)
		if (mb % d == 0)
			alt_micro_batch(c, k, mb, ga, d);
	if (mb > 1)
		alt_micro_batch(c, k, mb, ga, mb);
}

static void knob_checkpoint(struct fit_ctx *c, struct knob_alts *k)
{
	const char *t = key_text(c, "checkpoint");

	if (!t || strcmp(t, "none") == 0)
		add_alt(c, k, "checkpoint", NULL, "selective", NULL, NULL, NULL);
	if (!t || strcmp(t, "full") != 0)
		add_alt(c, k, "checkpoint", NULL, "full", NULL, NULL, NULL);
}

/* Sharding the states needs data parallelism to shard over. */
static void knob_sharding(struct fit_ctx *c, const struct layout *l, struct knob_alts *k)
{
	const char *fsdp = key_text(c, "fsdp");
	uint64_t mp = l->tp * l->pp * l->cp;

	if (!mp || l->gpus / mp < 2)
		return;
	if (fsdp && strcmp(fsdp, "none") != 0) {
		if (strcmp(fsdp, "full_shard") != 0)
			add_alt(c, k, "fsdp", NULL, "full_shard", NULL, NULL, NULL);
		return;
	}
	for (uint64_t z = key_u64(c, "zero", 0) + 1; z <= 3; z++)
		alt_u64(c, k, "zero", NULL, z);
}

/* By the optimizer's name: `adamw(impl = fused)` is an AdamW too (the
 * 8-bit ones take none of its arguments). */
static void knob_optimizer(struct fit_ctx *c, struct knob_alts *k)
{
	const char *t = key_text(c, "optimizer");
	size_t n = t ? strcspn(t, "( \t") : 0;

	if (n == 5 && strncmp(t, "adamw", n) == 0) {
		add_alt(c, k, "optimizer", NULL, "adamw_8bit", NULL, NULL, NULL);
		add_alt(c, k, "optimizer", NULL, "paged_adamw_8bit", NULL, NULL, NULL);
	} else if (n == 4 && strncmp(t, "adam", n) == 0) {
		add_alt(c, k, "optimizer", NULL, "adam_8bit", NULL, NULL, NULL);
	}
}

static void knob_offload(struct fit_ctx *c, struct knob_alts *k)
{
	if (key_text(c, "offload.optimizer") || key_text(c, "offload.params"))
		return;
	add_alt(c, k, "offload", "optimizer", "cpu", NULL, NULL, NULL);
	add_alt(c, k, "offload", "optimizer", "cpu", "offload", "params", "cpu");
}

/* Whether the job writes a pipeline split, which another pp drops (the
 * variant's parallel { }, fit_variant.c). */
static bool states_split(struct fit_ctx *c)
{
	for (size_t i = 0; i < search_nsplit_keys; i++)
		if (key_text(c, arena_printf(&c->arena, "parallel.%s", search_split_keys[i])))
			return true;
	return false;
}

/* Degrees that keep tp x pp x cp dividing the cluster: tp within a node
 * and up to 8, pp up to 16, cp up to 8 (each doubling), and a cp whose
 * 2 x cp chunks seq_len has (the checker's rule: a cp it refuses is no
 * fix, and no alternative to spend variants on). */
static void knob_degree(struct fit_ctx *c, const struct layout *l, const char *which, struct knob_alts *k)
{
	bool tp = strcmp(which, "tp") == 0, pp = strcmp(which, "pp") == 0;
	uint64_t cur = tp ? l->tp : pp ? l->pp : l->cp, mp = l->tp * l->pp * l->cp;
	uint64_t limit = tp ? (l->per < 8 ? l->per : 8) : pp ? 16 : 8, seq = key_u64(c, "seq_len", 0);

	for (uint64_t d = cur * 2; cur && d <= limit && k->n < FIT_MAX_ALTS; d *= 2)
		if (l->gpus % (mp / cur * d) == 0 && (tp || pp || check_cp_splits_seq(seq, d))) {
			alt_u64(c, k, "parallel", which, d);
			if (pp && states_split(c)) {
				caveat(k, search_split_note);
				k->alt[k->n - 1].v[0].whole_record = true;
			}
		}
}

static const char caveat_amp[] =
	"bf16 autocast over the fp32 weights (torch.autocast; HF Trainer bf16 = True, LitGPT --precision "
	"bf16-mixed): needs a GPU with bf16";
static const char caveat_true[] =
	"pure bf16 (LitGPT --precision bf16-true, torchtune dtype = bf16): no fp32 master weights or "
	"optimizer states, so updates below bf16's precision are lost; compare the loss with the mixed run";

/* Precision by the stdlib's names (stdlib/precision.mem): fp32 to bf16
 * autocast, then to pure bf16; a mixed bf16 policy (an fp32 master or
 * fp32 weights under autocast or FSDP2) to pure bf16. fp16 has no pure
 * form users train in, Megatron's bf16 none in its own options, and a
 * policy written as a record is the user's own: none is offered. */
static void knob_precision(struct fit_ctx *c, struct knob_alts *k)
{
	const char *t = key_text(c, "precision");

	if (!t)
		return;
	if (strcmp(t, "fp32") == 0) {
		add_alt(c, k, "precision", NULL, "amp_bf16", NULL, NULL, NULL);
		caveat(k, caveat_amp);
	}
	if (strcmp(t, "fp32") == 0 || strcmp(t, "amp_bf16") == 0 || strcmp(t, "bf16_mixed") == 0 ||
	    strcmp(t, "fsdp2_bf16") == 0) {
		add_alt(c, k, "precision", NULL, "bf16_true", NULL, NULL, NULL);
		caveat(k, caveat_true);
	}
}

/* LoRA and QLoRA for full training: a fine-tune (`finetune = full`
 * written, or a model loaded from a checkpoint) in @k; else, the default
 * `full`, in @guess, said to be for a fine-tune only. LoRA to QLoRA with
 * the same adapters. */
static void knob_finetune(struct fit_ctx *c, struct knob_alts *k, struct knob_alts *guess)
{
	const char *ft = key_text(c, "finetune");
	const char *why = ft || key_is(c, "load", "from_pretrained") ? NULL :
		"if this is a fine-tune: LoRA trains adapters on the frozen model, not the model itself";

	if (ft && strncmp(ft, "lora(", 5) == 0) {
		add_alt(c, k, "finetune", NULL, arena_printf(&c->arena, "q%s", ft), NULL, NULL, NULL);
		caveat(k, "QLoRA (LitGPT --quantize bnb.nf4, HF BitsAndBytesConfig(load_in_4bit = True)): "
			  "the frozen base weights in 4-bit NF4, dequantised per matmul: slower, and the "
			  "base's outputs move slightly");
		return;
	}
	if (ft && strcmp(ft, "full") != 0)
		return;
	k = why ? guess : k;
	add_alt(c, k, "finetune", NULL, "lora(r = 16, alpha = 32, targets = all_linear)", NULL, NULL, NULL);
	caveat(k, why);
	add_alt(c, k, "finetune", NULL, "qlora(r = 16, alpha = 32, targets = all_linear)", NULL, NULL, NULL);
	caveat(k, why);
}

static int gpu_cmp(const void *a, const void *b)
{
	const struct fit_gpu *x = a, *y = b;

	if (x->memory != y->memory)
		return x->memory < y->memory ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void alt_gpu(struct fit_ctx *c, const struct layout *l, struct knob_alts *k, const char *gpu)
{
	char *v = l->nodes > 1 ? arena_printf(&c->arena, "%llu x %llu x %s", (unsigned long long)l->nodes,
					      (unsigned long long)l->per, gpu) :
		  arena_printf(&c->arena, "%llu x %s", (unsigned long long)l->per, gpu);

	add_alt(c, k, "cluster", NULL, v, NULL, NULL, NULL);
}

size_t fit_gpu_choices(struct fit_gpu *g, size_t n, uint64_t capacity)
{
	size_t k = 0, out = 0;

	/* 5% more at least: a 24 GB card is no fix for a 23.99 GiB one */
	for (size_t i = 0; i < n; i++)
		if (g[i].memory / 21 > capacity / 20)
			g[k++] = g[i];
	qsort(g, k, sizeof *g, gpu_cmp);
	/* one per memory size, smallest first, as many as a knob has room
	 * for; the largest is always the last: the strongest */
	uint64_t top = k ? g[k - 1].memory : 0, prev = 0;

	for (size_t i = 0; i < k; i++) {
		uint64_t m = g[i].memory;

		if ((!i || m != prev) && (out < FIT_MAX_ALTS - 1 || i == k - 1 || m == top))
			g[out++] = g[i];
		prev = m;
	}
	return out;
}

/* Every GPU the file can name, parsed in c->prog, with its memory. */
static size_t parsed_gpus(struct fit_ctx *c, struct fit_gpu **out)
{
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < c->prog->nfiles; i++)
		for (const struct decl *d = c->prog->files[i]->decls; d; d = d->next)
			cap += d->kind == DECL_GPU;
	struct fit_gpu *g = ARENA_NEW_ARRAY(&c->arena, struct fit_gpu, cap ? cap : 1);

	for (size_t i = 0; i < c->prog->nfiles; i++)
		for (const struct decl *d = c->prog->files[i]->decls; d; d = d->next) {
			uint64_t m = 0;

			if (d->kind == DECL_GPU && build_gpu_u64(c->gpu_ev, d, "memory", &m))
				g[n++] = (struct fit_gpu){ d->name, m };
		}
	*out = g;
	return n;
}

/* The same number of each larger GPU the file can name, smallest first,
 * one per memory size. */
static void knob_gpu(struct fit_ctx *c, const struct layout *l, struct knob_alts *k)
{
	struct fit_gpu *g;
	size_t n = c->ngpus;

	if (n) {
		g = ARENA_NEW_ARRAY(&c->arena, struct fit_gpu, n);
		memcpy(g, c->gpus, n * sizeof *g);
	} else {
		n = parsed_gpus(c, &g);
	}
	n = fit_gpu_choices(g, n, l->capacity);
	for (size_t i = 0; i < n; i++)
		alt_gpu(c, l, k, g[i].name);
}

static void knobs(struct fit_ctx *c, struct knob_alts *k)
{
	struct layout l;

	read_layout(c, &l);
	knob_micro_batch(c, &k[K_MICRO_BATCH]);
	knob_checkpoint(c, &k[K_CHECKPOINT]);
	knob_sharding(c, &l, &k[K_SHARDING]);
	knob_optimizer(c, &k[K_OPTIMIZER]);
	knob_precision(c, &k[K_PRECISION]);
	knob_offload(c, &k[K_OFFLOAD]);
	knob_degree(c, &l, "tp", &k[K_TP]);
	knob_degree(c, &l, "pp", &k[K_PP]);
	knob_degree(c, &l, "cp", &k[K_CP]);
	knob_finetune(c, &k[K_FINETUNE], &k[K_ADAPTERS]);
	knob_gpu(c, &l, &k[K_GPU]);
}

/* ---- the search ---- */

struct search {
	struct fit_ctx *c;
	struct knob_alts *k;
	struct fit_answer *ans;
	enum knob pick[FIT_MAX_KNOBS];
	size_t npick;
	uint64_t closest;	/* the smallest total of a variant that did not fit */
	unsigned found[FIT_MAX_FIXES];	/* the knobs of each fix, as bits */
	/* the combination being tried (counted in search order) and the sum
	 * of its tuple's positions; the tight variant's, when one is kept */
	size_t combo, sum, tight_combo, tight_sum;
	size_t first_combo, first_sum;	/* the first fix's */
	bool alone;		/* a knob's strongest alternative tried on its own */
};

static size_t most_fixes(const struct fit_ctx *c)
{
	return c->max_fixes && c->max_fixes < FIT_MAX_FIXES ? c->max_fixes : FIT_MAX_FIXES;
}

/* The alternatives @idx of the picked knobs as one change. */
static struct fit_change combine(struct search *s, const size_t *idx)
{
	struct fit_change ch = { .n = 0 };
	size_t n = 0;

	for (size_t i = 0; i < s->npick; i++)
		n += s->k[s->pick[i]].alt[idx[i]].n;
	ch.v = ARENA_NEW_ARRAY(&s->c->arena, struct fit_set, n);
	for (size_t i = 0; i < s->npick; i++) {
		const struct fit_change *a = &s->k[s->pick[i]].alt[idx[i]];

		memcpy(ch.v + ch.n, a->v, a->n * sizeof *a->v);
		ch.n += a->n;
	}
	return ch;
}

static void keep(struct fit_ctx *c, struct fit_fix *f, const struct fit_change *ch, const struct fit_outcome *o)
{
	f->change = *ch;
	f->total = o->total;
	f->spare = o->spare;
	f->capacity = o->capacity;
	f->on_gpu = o->on_gpu;
	fit_lines(c, ch, &f->lines, &f->nlines);
}

/* A variant on the GPU but not inside the headroom: the first
 * combination in search order that has one, and its mildest tuple tried. */
static void keep_tight(struct search *s, const struct fit_change *ch, const struct fit_outcome *o)
{
	if (s->ans->tight.nlines && (s->tight_combo < s->combo ||
	    (s->tight_combo == s->combo && s->tight_sum <= s->sum)))
		return;
	keep(s->c, &s->ans->tight, ch, o);
	s->tight_combo = s->combo;
	s->tight_sum = s->sum;
}

static bool probe(struct search *s, const struct fit_change *ch, struct fit_outcome *o)
{
	if (s->c->builds >= s->c->max_builds) {
		s->c->truncated = true;
		return false;
	}
	/* past the first fix's combination only whether a variant fits is
	 * read, but for a knob's strongest alternative alone, where a refusal
	 * gives way to the next strongest (strongest_fits) */
	s->c->only_fits = s->ans->nfixes && s->combo > s->first_combo && !s->alone;
	fit_try(s->c, ch, o);
	s->c->only_fits = false;
	if (o->ok && !o->fits && (!s->ans->closest.nlines || o->total < s->closest)) {
		keep(s->c, &s->ans->closest, ch, o);
		s->closest = o->total;
	}
	if (o->ok && !o->fits && o->on_gpu)
		keep_tight(s, ch, o);
	return o->ok && o->fits;
}

/* A tuple's sum of indices: how far from as written, the search's order. */
static size_t tuple_sum(const struct search *s, const size_t *idx)
{
	size_t sum = 0;

	for (size_t i = 0; i < s->npick; i++)
		sum += idx[i];
	return sum;
}

/* The tuple of alternatives that fits with the smallest sum of indices
 * (the mildest); false if none does. */
static bool mildest(struct search *s, size_t *best, struct fit_outcome *best_o)
{
	size_t idx[FIT_MAX_KNOBS] = { 0 }, best_sum = SIZE_MAX;

	for (;;) {
		size_t sum = tuple_sum(s, idx), i;
		struct fit_outcome o;

		if (sum < best_sum) {
			struct fit_change ch = combine(s, idx);

			s->sum = sum;
			if (probe(s, &ch, &o)) {
				best_sum = sum;
				*best_o = o;
				memcpy(best, idx, sizeof idx);
			}
		}
		for (i = 0; i < s->npick && ++idx[i] == s->k[s->pick[i]].n; i++)
			idx[i] = 0;
		if (i == s->npick)
			return best_sum != SIZE_MAX;
	}
}

/* The strongest tuple, analysed: false if it does not fit, so no milder
 * one would. Alone, a knob's strongest alternative may be one the checker
 * refuses (tp = 8 that the experts do not divide) while a milder one is
 * taken: that is no answer about the milder ones, so the next strongest is
 * tried, and the one found stands for the knob in larger combinations. */
static bool strongest_fits(struct search *s, size_t *strong)
{
	struct fit_outcome o;
	struct knob_alts *k = &s->k[s->pick[0]];

	for (size_t i = 0; i < s->npick; i++)
		strong[i] = s->k[s->pick[i]].strong;
	for (;;) {
		struct fit_change ch = combine(s, strong);

		s->sum = tuple_sum(s, strong);
		s->alone = s->npick == 1;
		bool fits = probe(s, &ch, &o);

		s->alone = false;
		if (fits)
			return true;
		if (o.ok || s->npick > 1 || !strong[0] || s->c->truncated)
			return false;
		k->strong = --strong[0];
	}
}

static void try_combination(struct search *s)
{
	size_t strong[FIT_MAX_KNOBS], best[FIT_MAX_KNOBS];
	struct fit_outcome total = { .ok = false };
	unsigned mask = 0;

	for (size_t i = 0; i < s->npick; i++)
		mask |= 1u << s->pick[i];
	for (size_t i = 0; i < s->ans->nfixes; i++)
		if ((s->found[i] & mask) == s->found[i])
			return;		/* a fix with fewer knobs is inside this one */
	s->combo++;
	if (!strongest_fits(s, strong) || !mildest(s, best, &total) || s->ans->nfixes == most_fixes(s->c))
		return;
	struct fit_change ch = combine(s, best);

	s->found[s->ans->nfixes] = mask;
	if (!s->ans->nfixes) {
		s->first_combo = s->combo;
		s->first_sum = tuple_sum(s, best);
	}
	keep(s->c, &s->ans->fixes[s->ans->nfixes++], &ch, &total);
}

/* Every combination of @left more knobs from @from on, in cost order. */
static void combinations(struct search *s, enum knob from, size_t left)
{
	if (!left) {
		try_combination(s);
		return;
	}
	for (int k = from; k < K__COUNT && s->ans->nfixes < most_fixes(s->c) && !s->c->truncated; k++)
		if (s->k[k].n) {
			s->pick[s->npick++] = (enum knob)k;
			combinations(s, (enum knob)(k + 1), left - 1);
			s->npick--;
		}
}

static void find_fixes(struct fit_ctx *c, struct fit_answer *ans)
{
	struct knob_alts *k = ARENA_NEW_ARRAY(&c->arena, struct knob_alts, K__COUNT);
	struct search s = { .c = c, .k = k, .ans = ans };

	memset(k, 0, K__COUNT * sizeof *k);
	knobs(c, k);
	for (int i = 0; i < K__COUNT; i++)
		k[i].strong = k[i].n ? k[i].n - 1 : 0;
	ans->fixes = ARENA_NEW_ARRAY(&c->arena, struct fit_fix, FIT_MAX_FIXES);
	/* a level with fixes ends the search unless it found fewer than 3:
	 * then larger combinations that hold none of them are offered too */
	for (size_t n = 1; n <= FIT_MAX_KNOBS && ans->nfixes < 3 && ans->nfixes < most_fixes(c) &&
	     !c->truncated; n++)
		combinations(&s, K_MICRO_BATCH, n);
	/* a tight change is said only where the search, headroom given up,
	 * would have offered it before its first fix: a smaller change */
	if (ans->as_written.on_gpu || (ans->nfixes && (s.tight_combo > s.first_combo ||
	    (s.tight_combo == s.first_combo && s.tight_sum >= s.first_sum))))
		ans->tight.nlines = 0;	/* nor when the job as written is on the GPU */
}

/* ---- the largest and the fewest ---- */

/* @v as the value of the one key @top (@sub), or the cluster of @v GPUs:
 * whether it fits (with @on_gpu, the GPU without the headroom). */
static bool probe_one(struct fit_ctx *c, const char *top, uint64_t v, bool on_gpu, struct fit_outcome *o)
{
	struct fit_set set = { top, NULL, NULL, NULL, false };
	struct fit_change ch = { &set, 1 };
	struct layout l;

	memset(o, 0, sizeof *o);
	if (c->builds >= c->max_builds) {
		c->truncated = true;
		return false;
	}
	if (strcmp(top, "cluster") == 0) {
		read_layout(c, &l);
		set.value = l.nodes > 1 ? arena_printf(&c->arena, "%llu x %llu x %s", (unsigned long long)(v / l.per),
						       (unsigned long long)l.per, l.gpu->name) :
			    arena_printf(&c->arena, "%llu x %s", (unsigned long long)v, l.gpu->name);
	} else {
		set.value = arena_printf(&c->arena, "%llu", (unsigned long long)v);
	}
	fit_try(c, &ch, o);
	return o->ok && (on_gpu ? o->on_gpu : o->fits);
}

/* How a gallop judges and what it keeps: the outcome at its answer. */
struct gallop {
	bool fewest;		/* the smallest that fits (totals shrink as it grows) */
	bool on_gpu;		/* fits the GPU, the headroom left out */
	struct fit_outcome at;
};

/* The largest multiple of @step up to @limit for which @top fits (0 if
 * none; totals grow with it): gallop up, then bisect. With g->fewest, the
 * smallest multiple that fits instead. */
static uint64_t gallop(struct fit_ctx *c, const char *top, uint64_t step, uint64_t limit, struct gallop *g)
{
	uint64_t lo = 0, hi = 0;	/* in steps: lo fits (for fewest: does not), hi the other */
	struct fit_outcome t;

	for (uint64_t i = 1; i <= limit / step; i = i > UINT64_MAX / 2 ? UINT64_MAX : i * 2) {
		if (probe_one(c, top, i * step, g->on_gpu, &t) == g->fewest) {
			hi = i;
			if (g->fewest)
				g->at = t;
			break;
		}
		lo = i;
		if (!g->fewest)
			g->at = t;
	}
	if (!hi && g->fewest)
		return 0;
	if (!hi)
		hi = limit / step + 1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (probe_one(c, top, mid * step, g->on_gpu, &t) == g->fewest) {
			hi = mid;
			if (g->fewest)
				g->at = t;
		} else {
			lo = mid;
			if (!g->fewest)
				g->at = t;
		}
	}
	return g->fewest ? hi * step : lo * step;
}

/* The fewest GPUs of the job's type: a multiple of tp x pp x cp, and of
 * the GPUs per node when the cluster is written with nodes; then, if
 * fewer fit the GPU without the headroom, those. */
static void fewest_gpus(struct fit_ctx *c, struct fit_answer *ans)
{
	struct layout l;
	struct gallop g = { .fewest = true }, t = { .fewest = true, .on_gpu = true };

	read_layout(c, &l);
	uint64_t mp = l.tp * l.pp * l.cp, step = mp;

	if (!l.gpu || !mp)
		return;
	if (l.nodes > 1)
		step = mp / num_gcd_u64(mp, l.per) * l.per;
	ans->min_gpus = gallop(c, "cluster", step, BUILD_MAX_GPUS, &g);
	ans->gpus_total = g.at.total;
	uint64_t v = gallop(c, "cluster", step, ans->min_gpus ? ans->min_gpus : BUILD_MAX_GPUS, &t);

	if (v && (!ans->min_gpus || v < ans->min_gpus)) {
		ans->tight_gpus = v;
		ans->tight_gpus_total = t.at.total;
		ans->tight_gpus_spare = t.at.spare;
	}
}

/* The GPU and its capacity, and the job as written. */
static void as_written(struct fit_ctx *c, struct fit_answer *ans)
{
	struct layout l;

	memset(ans, 0, sizeof *ans);
	read_layout(c, &l);
	ans->capacity = l.capacity;
	ans->gpu = l.gpu ? l.gpu->name : "?";
	ans->headroom = c->job_headroom;
	fit_try(c, NULL, &ans->as_written);
}

/* What the block path found is what the text gives: the job as written
 * does not fit (the caller's own analysis said so), and each fix noted,
 * the closest and the tight one, compiled from the whole text as they
 * would be pasted. */
static bool verified(struct fit_ctx *c, const struct fit_answer *ans)
{
	struct fit_outcome got = { .ok = true, .total = ans->closest.total, .on_gpu = ans->closest.on_gpu };
	struct fit_outcome tight = { .ok = true, .total = ans->tight.total, .on_gpu = true };

	if (!ans->as_written.ok || ans->as_written.fits)
		return false;
	for (size_t i = 0; i < ans->nfixes; i++) {
		struct fit_outcome fix = { .ok = true, .fits = true, .total = ans->fixes[i].total, .on_gpu = true };

		if (!fit_verify(c, &ans->fixes[i].change, &fix))
			return false;
	}
	if (ans->tight.nlines && !fit_verify(c, &ans->tight.change, &tight))
		return false;
	return ans->nfixes || !ans->closest.nlines || fit_verify(c, &ans->closest.change, &got);
}

void fit_search_fixes(struct fit_ctx *c, struct fit_answer *ans)
{
	as_written(c, ans);
	if (ans->as_written.ok && !ans->as_written.fits)
		find_fixes(c, ans);
	if (!c->ctx || verified(c, ans))
		return;
	/* the block path and the text disagree: the text decides, every
	 * variant of it compiled whole (docs/fit.md "Verified") */
	fit_ctx_release(c);
	c->ctx = NULL;
	c->have_base = c->truncated = false;
	c->builds = 0;
	as_written(c, ans);
	if (ans->as_written.ok && !ans->as_written.fits)
		find_fixes(c, ans);
}

/* The largest value of @key that fits, in multiples of @step. Values the
 * checker refuses (GRPO's micro_batch x grad_accum a multiple of
 * num_generations, a seq_len above rl.prompt_len) read as "does not fit"
 * and stop the gallop below the job as written; then the multiples of the
 * written value are searched, which keep every such rule. */
static uint64_t largest(struct fit_ctx *c, const struct fit_answer *ans, const char *key, uint64_t step,
			uint64_t limit, struct gallop *g)
{
	uint64_t v = gallop(c, key, step, limit, g);
	uint64_t written = key_u64(c, key, 1);
	bool fits = ans->as_written.ok && (g->on_gpu ? ans->as_written.on_gpu : ans->as_written.fits);

	if (v < written && fits && written <= limit)
		v = gallop(c, key, written, limit, g);
	return v;
}

/* The largest @key that fits the GPU without the headroom, if larger
 * than @v, the largest inside it. */
static uint64_t largest_tight(struct fit_ctx *c, const struct fit_answer *ans, const char *key, uint64_t step,
			      uint64_t limit, uint64_t v, uint64_t *total, uint64_t *spare)
{
	struct gallop g = { .on_gpu = true };
	uint64_t t = largest(c, ans, key, step, limit, &g);

	if (t <= v)
		return 0;
	*total = g.at.total;
	*spare = g.at.spare;
	return t;
}

/* Lengths in steps of 128 (or of the largest power of two dividing
 * seq_len as written, if smaller), and of 2 x cp under context
 * parallelism: lcm(step, 2cp), so that every length tried keeps the
 * checker's divisibility by sp and cp as the job as written does (with
 * cp = 3, steps of 4 would try only lengths the checker refuses). */
static uint64_t seq_step(const struct fit_ctx *c)
{
	uint64_t seq = key_u64(c, "seq_len", 1), step = seq & (~seq + 1);
	uint64_t m = check_cp_seq_multiple(key_u64(c, "parallel.cp", 1)), low = m & (~m + 1);

	step = step > 128 || !step ? 128 : step;
	if (low >= step)
		return m;
	return m / low > UINT64_MAX / step ? UINT64_MAX : m / low * step;
}

void fit_search(struct fit_ctx *c, struct fit_answer *ans)
{
	struct gallop mb = { .fewest = false }, sl = { .fewest = false };

	as_written(c, ans);
	ans->max_micro_batch = largest(c, ans, "micro_batch", 1, FIT_MB_LIMIT, &mb);
	ans->mb_total = mb.at.total;
	ans->tight_micro_batch = largest_tight(c, ans, "micro_batch", 1, FIT_MB_LIMIT, ans->max_micro_batch,
					       &ans->tight_mb_total, &ans->tight_mb_spare);
	uint64_t step = seq_step(c);

	ans->max_seq_len = largest(c, ans, "seq_len", step, FIT_SEQ_LIMIT, &sl);
	ans->seq_total = sl.at.total;
	ans->tight_seq_len = largest_tight(c, ans, "seq_len", step, FIT_SEQ_LIMIT, ans->max_seq_len,
					   &ans->tight_seq_total, &ans->tight_seq_spare);
	fewest_gpus(c, ans);
	if (!ans->as_written.fits)
		find_fixes(c, ans);
}
