/* SPDX-License-Identifier: MIT */
/*
 * fit_variant.c - one variant of the user's file: the change written into
 * the train block's text, then the whole file compiled, checked, built
 * and analysed as `memc check` would, in an arena of its own; or (the
 * block path, with c->ctx) only the rewritten block parsed and checked
 * among the declarations checked once. A variant that the checker refuses
 * (a layout that does not divide, a target the model lacks), or that adds
 * a warning, never counts as a fix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/memory/memory.h"
#include "analyzer/memory/phases.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/eval.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/parse.h"
#include "lang/reach.h"
#include "lang/source.h"
#include "lang/strbuf.h"
#include "lang/strmap.h"

/* A field the train block writes itself (inherited keys are not its text). */
static const struct field *own_field(const struct fit_ctx *c, const char *name)
{
	for (const struct field *f = c->job->decl->record.fields; f; f = f->next)
		if (f->name && strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static bool own_sub(const struct field *f, const char *name)
{
	for (const struct field *s = f->sub; s; s = s->next)
		if (s->name && strcmp(s->name, name) == 0)
			return true;
	return false;
}

static const struct fit_set *find_set(const struct fit_change *ch, const char *top, const char *sub)
{
	for (size_t i = 0; i < ch->n; i++)
		if (strcmp(ch->v[i].top, top) == 0 && (!sub ? !ch->v[i].sub :
		    ch->v[i].sub && strcmp(ch->v[i].sub, sub) == 0))
			return &ch->v[i];
	return NULL;
}

static uint64_t written_u64(const struct fit_ctx *c, const char *key)
{
	struct value v;
	uint64_t u;

	return check_job_field(c->job, key, &v) && v.kind == VAL_NUM && num_to_u64(v.num, &u) ? u : 1;
}

static uint64_t set_u64(const struct fit_change *ch, const char *sub, uint64_t dflt)
{
	const struct fit_set *set = find_set(ch, "parallel", sub);

	return set ? strtoull(set->value, NULL, 10) : dflt;
}

/* Whether @ch moves pp or vp off the written ones: its parallel { }
 * drops a stated split, which is for the written ones (search_split.h). */
static bool drops_split(const struct fit_ctx *c, const struct fit_change *ch)
{
	uint64_t pp = written_u64(c, "parallel.pp"), vp = written_u64(c, "parallel.vp");

	return !search_split_same(pp, vp, set_u64(ch, "pp", pp), set_u64(ch, "vp", vp));
}

/* `top { ... }`: the block's own sub-keys, rewritten where @ch sets them
 * (a stated split left out where @ch drops it), then the ones it adds; so
 * the line replaces the whole record. */
static void record_line(struct fit_ctx *c, const struct fit_change *ch, const char *top, struct strbuf *sb)
{
	const struct field *f = own_field(c, top);
	bool first = true, drop = strcmp(top, "parallel") == 0 && drops_split(c, ch);

	strbuf_addf(sb, "%s { ", top);
	for (const struct field *s = f ? f->sub : NULL; s; s = s->next) {
		const struct fit_set *set = find_set(ch, top, s->name);

		if (drop && search_split_is_key(s->name))
			continue;
		if (set)
			strbuf_addf(sb, "%s%s = %s", first ? "" : ", ", s->name, set->value);
		else
			strbuf_addf(sb, "%s%.*s", first ? "" : ", ", (int)(s->loc.end - s->loc.start),
				    c->text + s->loc.start);
		first = false;
	}
	for (size_t i = 0; i < ch->n; i++)
		if (strcmp(ch->v[i].top, top) == 0 && ch->v[i].sub && !(f && own_sub(f, ch->v[i].sub))) {
			strbuf_addf(sb, "%s%s = %s", first ? "" : ", ", ch->v[i].sub, ch->v[i].value);
			first = false;
		}
	strbuf_addstr(sb, " }");
}

/* Whether @top comes before index @i in @ch: one line per top key. */
static bool seen_top(const struct fit_change *ch, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (strcmp(ch->v[k].top, ch->v[i].top) == 0)
			return true;
	return false;
}

void fit_lines(struct fit_ctx *c, const struct fit_change *ch, char ***lines, size_t *n)
{
	*lines = ARENA_NEW_ARRAY(&c->arena, char *, ch->n ? ch->n : 1);
	*n = 0;
	for (size_t i = 0; i < ch->n; i++) {
		struct strbuf sb;

		if (seen_top(ch, i))
			continue;
		strbuf_init(&sb);
		if (ch->v[i].sub)
			record_line(c, ch, ch->v[i].top, &sb);
		else
			strbuf_addf(&sb, "%s = %s", ch->v[i].top, ch->v[i].value);
		(*lines)[(*n)++] = arena_strdup(&c->arena, sb.buf);
		strbuf_release(&sb);
	}
}

/* Where a key the block does not write goes: on a line of its own before
 * the closing brace. */
static uint32_t insert_point(const struct fit_ctx *c, bool *own_line)
{
	const struct decl *d = c->job->decl;
	uint32_t at = d->loc.end;

	while (at > d->loc.start && c->text[at - 1] != '}')
		at--;
	at = at > d->loc.start ? at - 1 : d->loc.end;
	uint32_t bol = at;

	while (bol > d->loc.start && (c->text[bol - 1] == ' ' || c->text[bol - 1] == '\t'))
		bol--;
	*own_line = bol > d->loc.start && c->text[bol - 1] == '\n';
	return *own_line ? bol : at;
}

struct fit_edit {
	uint32_t start, end;
	const char *text;
	size_t order;		/* inserts share one point: they keep this order */
};

static int edit_cmp(const void *a, const void *b)
{
	const struct fit_edit *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The text between the kept ranges @keep, as edits that delete it. */
static size_t drop_edits(const struct fit_ctx *c, const struct fit_range *keep, size_t nkeep, struct fit_edit *e)
{
	size_t k = 0;
	uint32_t at = 0;

	for (size_t i = 0; i < nkeep; i++) {
		if (keep[i].start > at)
			e[k] = (struct fit_edit){ at, keep[i].start, "", k }, k++;
		at = keep[i].end;
	}
	if (nkeep && at < c->len)
		e[k] = (struct fit_edit){ at, (uint32_t)c->len, "", k }, k++;
	return k;
}

/* The lines a variant writes: fit_lines() once per variant, for its key
 * in c->seen and its text (NULL: not made yet). */
struct fit_text {
	char **lines;
	size_t n;
};

/* The file's text with @ch (NULL: nothing) written into the train block
 * as the lines @t (made here if not yet) and only the ranges @keep left
 * (malloc'ed). */
static char *apply(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t, const struct fit_range *keep,
		   size_t nkeep, size_t *len)
{
	size_t k;
	bool own_line;
	uint32_t ins = insert_point(c, &own_line);

	if (ch && !t->lines)
		fit_lines(c, ch, &t->lines, &t->n);
	char **lines = t->lines;
	size_t n = ch ? t->n : 0;
	struct fit_edit *e = calloc(n + nkeep + 1, sizeof *e);

	if (!e)
		return NULL;
	k = drop_edits(c, keep, nkeep, e);
	for (size_t i = 0, l = 0; ch && i < ch->n; i++) {
		if (seen_top(ch, i))
			continue;
		const struct field *f = own_field(c, ch->v[i].top);

		e[k].start = f ? f->loc.start : ins;
		e[k].end = f ? f->loc.end : ins;
		e[k].text = f ? lines[l] : arena_printf(&c->arena, own_line ? "  %s\n" : "\n  %s\n", lines[l]);
		e[k].order = k;
		k++, l++;
	}
	qsort(e, k, sizeof *e, edit_cmp);
	struct strbuf sb;
	uint32_t at = 0;

	strbuf_init(&sb);
	for (size_t i = 0; i < k; i++) {
		strbuf_add(&sb, c->text + at, e[i].start - at);
		strbuf_addstr(&sb, e[i].text);
		at = e[i].end > at ? e[i].end : at;
	}
	strbuf_add(&sb, c->text + at, c->len - at);
	free(e);
	return strbuf_detach(&sb, len);
}

/* What @k's GPU has left at its largest total @t, measured as the
 * headroom is (paged states included): a variant that needs the driver
 * to evict its paged states is not said to be on the GPU with a margin. */
static void spare_of(const struct mem_class *k, uint64_t t, struct fit_outcome *out)
{
	uint64_t left = k->capacity > t ? k->capacity - t : 0;

	out->on_gpu &= !k->capacity || t <= k->capacity;
	if (k->capacity && left < out->spare) {
		out->spare = left;
		out->capacity = k->capacity;
	}
}

/* What @k's peak instant holds of weights, activations and logits: at
 * most its allocated peak (each component is bytes allocated at that
 * instant), so at most its device total (peak reserved is at least the
 * allocated peak, memory.c mem_class_totals). */
static uint64_t floor_of(const struct mem_class *k)
{
	uint64_t f = 0;

	if (__builtin_add_overflow(k->at_peak[MEM_C_WEIGHTS], k->at_peak[MEM_C_ACTIVATIONS], &f) ||
	    __builtin_add_overflow(f, k->at_peak[MEM_C_LOGITS], &f))
		return 0;
	return f;
}

/* Fold one analysed job into @out: the worst class and phase. */
static void judge(struct arena *a, struct build *bd, struct fit_outcome *out)
{
	struct mem_result res;
	struct phase_result run;

	bd->job.no_explain = true;	/* a variant is never printed */
	if (mem_analyze(&bd->job, &res) != MEM_OK)
		return;
	bool phases = phases_analyze(a, &bd->job, &res, &bd->run_in, &run);

	out->ok = out->fits = out->on_gpu = true;
	out->spare = UINT64_MAX;
	for (size_t i = 0; i < res.nclasses; i++) {
		const struct mem_class *k = &res.classes[i];
		uint64_t t = k->device_total, f = floor_of(k);

		out->fits &= k->fits_headroom;
		out->on_gpu &= k->fits;
		if (phases && i < run.nclasses) {
			t = run.classes[i].run_device > t ? run.classes[i].run_device : t;
			out->fits &= run.classes[i].run_fits;
			out->on_gpu &= run.classes[i].run_fits;
		}
		out->total = t > out->total ? t : out->total;
		out->floor = f > out->floor ? f : out->floor;
		spare_of(k, t, out);
	}
	out->fits &= out->on_gpu;
	if (!out->on_gpu)
		out->spare = 0;
	mem_result_free(&res);
}

/* Build and judge @j, checked in @de since it had @e0 errors and @w0
 * warnings. The job as written (c->have_base unset) records the warnings
 * its check and build add; a variant must add no more, or -Werror would
 * refuse the pasted fix. The declarations' own warnings are no variant's:
 * both paths count from after them. */
static struct build *analyse(struct fit_ctx *c, struct arena *a, struct eval *ev, struct diag_engine *de,
			     const struct check_job *j, unsigned e0, unsigned w0, struct fit_outcome *out)
{
	struct build_override none = { .zero = -1 };
	struct build *bd = ARENA_NEW(a, struct build);
	bool base = !c->have_base;

	c->have_base = true;	/* even if the job as written is not built */
	if (base)
		c->base_warnings = diag_warning_count(de) - w0;
	if (!j || !j->ok || diag_error_count(de) != e0 || !build_job(ev, a, j, &none, false, bd))
		return NULL;
	if (base)
		c->base_warnings = diag_warning_count(de) - w0;
	if (diag_error_count(de) != e0 || diag_warning_count(de) - w0 > c->base_warnings)
		return NULL;
	judge(a, bd, out);
	return out->ok ? bd : NULL;
}

/* The whole text compiled: its declarations, then its train blocks in
 * order as check_program() does, the job's judged. */
static void analyse_text(struct fit_ctx *c, struct arena *a, struct interner *in, struct diag_engine *de,
			 const struct src_table *src, const struct program *p, struct fit_outcome *out)
{
	struct check_result *cr = check_program_decls(a, in, de, src, p);
	unsigned w0 = diag_warning_count(de);
	const struct check_job *job = NULL;

	for (const struct decl *d = p->root->decls; cr->jobs_follow && !cr->shared_errors && d; d = d->next)
		if (d->kind == DECL_TRAIN) {
			const struct check_job *j = check_program_job(cr, d);

			if (strcmp(d->name, c->job_name) == 0)
				job = j;
		}
	analyse(c, a, cr->ev, de, cr->shared_errors ? NULL : job, 0, w0, out);
}

/* ---- outcomes already known ---- */

/* The change's lines (into @t), one per line; "" as written. */
static char *change_key(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t)
{
	struct strbuf sb;
	size_t len;

	strbuf_init(&sb);
	if (ch) {
		fit_lines(c, ch, &t->lines, &t->n);
		for (size_t i = 0; i < t->n; i++) {
			strbuf_addstr(&sb, t->lines[i]);
			strbuf_addch(&sb, '\n');
		}
	}
	char *s = strbuf_detach(&sb, &len), *k = arena_strdup(&c->arena, s);

	free(s);
	return k;
}

/* A build of the block path kept for the variants that only change its
 * GPU: its arena (the build, the block's check_job) and the two. */
struct fit_kept {
	struct arena arena;
	const struct build *bd;
	const struct check_job *cj;
	uint64_t floor;		/* its outcome's */
	struct fit_kept *next;
};

/* Each variant's outcome stays the same whether its GPU's figures come
 * from a build kept or a build of its own; a few dozen builds are what the
 * notes' searches reuse (a variant changes the GPU with at most two other
 * knobs), and a bound keeps memc fit's thousand variants from keeping all
 * their builds. */
enum { FIT_KEPT_MAX = 64 };

struct fit_gpu_shortcut_stats fit_gpu_shortcut;

void fit_ctx_release(struct fit_ctx *c)
{
	/* its entries stay in c->arena until that is freed */
	memset(&c->seen, 0, sizeof c->seen);
	for (struct fit_kept *k = c->kept_list; k; k = k->next)
		arena_free(&k->arena);
	c->kept_list = NULL;
	c->nkept = 0;
	memset(&c->kept, 0, sizeof c->kept);
}

/* The whole file's text with @ch written in, compiled from scratch in an
 * arena of its own: what `memc check` would see after the paste. */
static void text_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t,
			 struct fit_outcome *out)
{
	struct arena a = { 0 };
	struct interner *in = c->cache ? import_cache_interner(c->cache) : interner_new(&a);
	struct src_table *src = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, src, NULL);
	struct import_opts io = { .dirs = c->opts->dirs, .ndirs = c->opts->ndirs, .stdlib_dir = c->stdlib,
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests,
				  .cache = c->cache };
	size_t len = c->len;
	char *text = ch || c->nkeep ? apply(c, ch, t, c->keep, c->nkeep, &len) : NULL;

	memset(out, 0, sizeof *out);
	if ((ch || c->nkeep) && !text) {
		arena_free(&a);
		return;
	}
	src_set_overlay(src, c->path, text ? text : c->text, len);
	struct program *p = import_load(&a, in, src, de, c->path, &io);

	if (p->root && !diag_error_count(de))
		analyse_text(c, &a, in, de, src, p, out);
	arena_free(&a);
	free(text);
}

static const struct fit_set *gpu_set(const struct fit_change *ch);

/* Keep @bd, built in @a for the change whose lines are @key, for the
 * variants that only change its GPU (below). */
static void keep_build(struct fit_ctx *c, struct arena *a, const struct build *bd, const struct check_job *j,
		       const char *key, uint64_t floor)
{
	struct fit_kept *k;

	if (strmap_get(&c->kept, key, strlen(key))) {
		arena_free(a);
		return;
	}
	k = ARENA_NEW(&c->arena, struct fit_kept);
	*k = (struct fit_kept){ *a, bd, j, floor, c->kept_list };
	c->kept_list = k;
	c->nkept++;
	strmap_put(&c->kept, &c->arena, key, strlen(key), k);
}

/* Only the job's block, @ch written in, parsed as a file of its own and
 * checked among the declarations checked once (c->ctx): the same checker
 * and builder on the same text of the block, without re-reading the
 * file and the stdlib around it. */
static void block_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t, const char *key,
			  bool only_block, struct fit_outcome *out)
{
	const struct decl *d = c->job->decl;
	struct fit_range block = { d->loc.start, d->loc.end };
	struct diag_engine *de = c->ctx_de;
	unsigned e0 = diag_error_count(de), w0 = diag_warning_count(de);
	size_t len;
	char *text = apply(c, ch, t, &block, 1, &len);

	if (text && reach_misses(c->ctx_reach, c->ctx_in, text, 0, (uint32_t)len)) {
		free(text);	/* it names what the context left a stub */
		if (only_block)
			memset(out, 0, sizeof *out);
		else
			text_variant(c, ch, t, out);
		return;
	}
	const struct src_file *f = text ? src_add_string(c->ctx_src, de, c->path, text, len) : NULL;
	/* the parser without lookahead correction (lang/parse.h): that only
	 * makes a syntax error's list of expected tokens exact, and a variant
	 * with any error is refused, its messages never printed (ctx_de) */
	const struct file_ast *fa = f ? parse_file_range_clean(c->ctx_arena, c->ctx_in, de, f, 0, f->len) : NULL;

	memset(out, 0, sizeof *out);
	free(text);
	if (!fa || diag_error_count(de) != e0 || !fa->decls || fa->decls->kind != DECL_TRAIN || fa->decls->next)
		return;
	struct arena a = { 0 };
	struct eval *ev = c->ctx->ev;
	struct arena *was = eval_use_arena(ev, &a);
	const struct check_job *j = check_program_job(c->ctx, fa->decls);
	const struct build *bd = analyse(c, &a, ev, de, j, e0, w0, out);

	eval_use_arena(ev, was);
	if (bd && !gpu_set(ch) && c->nkept < FIT_KEPT_MAX)
		keep_build(c, &a, bd, j, key, out->floor);
	else
		arena_free(&a);
}

/* ---- one GPU for another ---- */

/* A variant that changes a kept build's change only by `cluster`, to as
 * many of another GPU (fit_search.c alt_gpu), has the same allocations:
 * nothing the checker's or the builder's walks read is the GPU. What is
 * the GPU's, the builder reads in build_job_buffers.c bld_overheads (the
 * CUDA context, the cuBLAS workspace, NCCL's flat figure, memory and host
 * memory) and the checker in check_layout.c check_capabilities (compute
 * capability: bf16, fp8 and FlashAttention need a newer one); an RL job's
 * vLLM engine takes a share of the memory (build_rl.c engine_share). So
 * the kept build's job with those five put in from the new GPU is the
 * variant's, where its compute capability refuses nothing the old one
 * allowed and the job has no rl { }; else it is built. */

/* A GPU's compute_capability as check_layout.c reads it; 0: none. */
static double gpu_cc(struct eval *ev, const struct decl *gpu)
{
	const struct field *f = eval_record_field(eval_scope(ev), gpu, "compute_capability");
	struct value v = f ? eval_expr(ev, NULL, f->value) : val_error(NO_LOC);

	return v.kind == VAL_NUM && !v.unknown ? num_to_double(v.num) : 0.0;
}

/* The GPU declaration of the context named @name, if it was parsed. */
static const struct decl *context_gpu(const struct fit_ctx *c, const char *name)
{
	if (reach_misses(c->ctx_reach, c->ctx_in, name, 0, (uint32_t)strlen(name)))
		return NULL;
	for (size_t i = 0; i < c->prog->nfiles; i++)
		for (const struct decl *d = c->prog->files[i]->decls; d; d = d->next)
			if (d->kind == DECL_GPU && d->name && strcmp(d->name, name) == 0)
				return d;
	return NULL;
}

/* Whether the checker refuses on @to nothing it allowed on @from. */
static bool allows_as_much(struct eval *ev, const struct decl *from, const struct decl *to)
{
	double was = gpu_cc(ev, from), now = gpu_cc(ev, to);

	return now <= 0.0 || now == was || (was > 0.0 && now > was);
}

/* @ch's own `cluster = ...`, NULL if it sets none. */
static const struct fit_set *gpu_set(const struct fit_change *ch)
{
	for (size_t i = 0; ch && i < ch->n; i++)
		if (!ch->v[i].sub && strcmp(ch->v[i].top, "cluster") == 0)
			return &ch->v[i];
	return NULL;
}

/* The kept build of @ch less its cluster; if there is none yet, that
 * change is built (not counted: it is no variant of the search) so that
 * the variants that add each larger GPU to it share it. NULL: none. */
static const struct fit_kept *kept_for(struct fit_ctx *c, const struct fit_change *ch, const struct fit_set *g)
{
	struct fit_set *rest = ARENA_NEW_ARRAY(&c->arena, struct fit_set, ch->n);
	struct fit_change w = { rest, 0 };
	struct fit_text t = { NULL, 0 };
	struct fit_outcome o;

	for (size_t i = 0; i < ch->n; i++)
		if (&ch->v[i] != g)
			rest[w.n++] = ch->v[i];
	const char *key = change_key(c, w.n ? &w : NULL, &t);
	const struct fit_kept *k = strmap_get(&c->kept, key, strlen(key));

	if (k || !w.n || c->nkept >= FIT_KEPT_MAX)
		return k;
	block_variant(c, &w, &t, key, true, &o);
	return strmap_get(&c->kept, key, strlen(key));
}

/* @ch's outcome from a kept build, if it only changes that one's GPU. */
static bool gpu_swap(struct fit_ctx *c, const struct fit_change *ch, struct fit_outcome *out)
{
	const struct fit_set *g = c->ctx ? gpu_set(ch) : NULL;
	const struct fit_kept *k = g ? kept_for(c, ch, g) : NULL;
	const char *name = g ? strrchr(g->value, ' ') : NULL;
	const struct decl *gpu = k ? context_gpu(c, name ? name + 1 : g->value) : NULL;
	struct eval *ev = c->ctx ? c->ctx->ev : NULL;

	if (!gpu || check_job_record(k->cj, "rl") || !allows_as_much(ev, k->cj->cluster.decl, gpu))
		return false;
	struct arena a = { 0 };
	struct arena *was = eval_use_arena(ev, &a);
	struct build v = *k->bd;

	build_gpu_figures(ev, gpu, k->cj, &v.job);
	memset(out, 0, sizeof *out);
	judge(&a, &v, out);
	eval_use_arena(ev, was);
	arena_free(&a);
	return true;
}

/* ---- only whether it fits ---- */

/* After the search's first fix, what it reads of a variant is only
 * whether it fits (fit_search.c probe sets c->only_fits): the closest is
 * said only when no fix is found, the tight change only before the first
 * fix. A variant that changes a kept build's change only by the
 * optimizer, `offload { optimizer = cpu }` and the GPU has that build's
 * weights, activations and logits at every instant of its step: the
 * optimizer decides only its tensors' states (build_cache.c rederive), the
 * optimizer's offload only where states, the master and gradients live
 * (mem_cost.c cost_trainable, offload_states), the GPU none of its
 * allocations ("One GPU for another"). What the kept build's worst peak
 * instant holds of those three is then at most the variant's allocated
 * peak there, so at most its device total: above the variant's GPU less
 * the headroom, the variant cannot fit and is not built. It is counted as
 * a variant as before, and its outcome (not built, so no outcome but
 * "does not fit") is not kept for a later probe. */

struct fit_floor_stats fit_floor;

/* The floor of @ch from a kept build and the most its GPU allows inside
 * the headroom; false if it has none. */
static bool floor_of_change(struct fit_ctx *c, const struct fit_change *ch, uint64_t *floor, double *limit)
{
	const struct fit_set *g = c->ctx && ch ? gpu_set(ch) : NULL;
	bool only_states = true;

	if (!c->ctx || !ch)
		return false;
	for (size_t i = 0; i < ch->n; i++)
		only_states &= strcmp(ch->v[i].top, "offload") || (ch->v[i].sub && !strcmp(ch->v[i].sub, "optimizer"));
	struct fit_set *rest = ARENA_NEW_ARRAY(&c->arena, struct fit_set, ch->n);
	struct fit_change w = { rest, 0 };
	struct fit_text t = { NULL, 0 };

	for (size_t i = 0; i < ch->n; i++) {
		const struct fit_set *v = &ch->v[i];

		if (v != g && (v->sub || strcmp(v->top, "optimizer")) && (!only_states || strcmp(v->top, "offload")))
			rest[w.n++] = *v;
	}
	if (w.n == ch->n)
		return false;	/* nothing set apart: the variant is its own build */
	const char *key = change_key(c, w.n ? &w : NULL, &t);
	const struct fit_kept *k = strmap_get(&c->kept, key, strlen(key));
	uint64_t cap = k ? k->bd->job.capacity_bytes : 0;
	const char *name = g ? strrchr(g->value, ' ') : NULL;
	const struct decl *gpu = k && g ? context_gpu(c, name ? name + 1 : g->value) : NULL;

	if (!k || check_job_record(k->cj, "rl") || (g && (!gpu || !build_gpu_u64(c->ctx->ev, gpu, "memory", &cap))))
		return false;
	*floor = k->floor;
	*limit = (double)cap * (1.0 - k->bd->job.headroom);
	return cap != 0;
}

static bool same_outcome(const struct fit_outcome *x, const struct fit_outcome *y)
{
	return x->ok == y->ok && x->fits == y->fits && x->total == y->total && x->on_gpu == y->on_gpu &&
	       x->spare == y->spare && x->capacity == y->capacity;
}

static void build_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t, const char *key,
			  struct fit_outcome *out)
{
	struct fit_outcome full;

	if (gpu_swap(c, ch, out)) {
		fit_gpu_shortcut.taken++;
		if (!fit_gpu_shortcut.check)
			return;
		block_variant(c, ch, t, key, false, &full);
		fit_gpu_shortcut.mismatches += !same_outcome(&full, out);
		return;
	}
	if (c->ctx)
		block_variant(c, ch, t, key, false, out);
	else
		text_variant(c, ch, t, out);
}

/* @ch's outcome, or (out->unbuilt) only that it does not fit. */
static void compile_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t, const char *key,
			    struct fit_outcome *out)
{
	uint64_t floor = 0;
	double limit = 0.0;
	bool has = floor_of_change(c, ch, &floor, &limit), beyond = has && (double)floor > limit;

	c->builds++;
	fit_floor.floors += has;
	if (beyond && c->only_fits && !fit_floor.check) {
		fit_floor.taken++;
		memset(out, 0, sizeof *out);
		out->unbuilt = true;
		return;
	}
	build_variant(c, ch, t, key, out);
	if (!fit_floor.check || !has)
		return;
	fit_floor.above += out->ok && floor > out->total;
	if (beyond && c->only_fits) {
		fit_floor.taken++;
		fit_floor.fitted += out->fits;
	}
}

bool fit_verify(struct fit_ctx *c, const struct fit_change *ch, const struct fit_outcome *got)
{
	struct fit_outcome text;
	struct fit_text t = { NULL, 0 };

	text_variant(c, ch, &t, &text);
	return text.ok == got->ok && text.fits == got->fits && text.total == got->total &&
	       text.on_gpu == got->on_gpu;
}

void fit_try(struct fit_ctx *c, const struct fit_change *ch, struct fit_outcome *out)
{
	struct fit_text t = { NULL, 0 };
	char *key = change_key(c, ch, &t);
	size_t len = strlen(key);
	const struct fit_outcome *known = strmap_get(&c->seen, key, len);

	if (known) {
		*out = *known;
		return;
	}
	compile_variant(c, ch, &t, key, out);
	if (out->unbuilt)
		return;	/* a later probe may read more of it than whether it fits */
	struct fit_outcome *keep = ARENA_NEW(&c->arena, struct fit_outcome);

	*keep = *out;
	strmap_put(&c->seen, &c->arena, key, len, keep);
}
