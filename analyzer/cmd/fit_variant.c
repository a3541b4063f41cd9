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
		uint64_t t = k->device_total;

		out->fits &= k->fits_headroom;
		out->on_gpu &= k->fits;
		if (phases && i < run.nclasses) {
			t = run.classes[i].run_device > t ? run.classes[i].run_device : t;
			out->fits &= run.classes[i].run_fits;
			out->on_gpu &= run.classes[i].run_fits;
		}
		out->total = t > out->total ? t : out->total;
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
static void analyse(struct fit_ctx *c, struct arena *a, struct eval *ev, struct diag_engine *de,
		    const struct check_job *j, unsigned e0, unsigned w0, struct fit_outcome *out)
{
	struct build_override none = { .zero = -1 };
	struct build *bd = ARENA_NEW(a, struct build);
	bool base = !c->have_base;

	c->have_base = true;	/* even if the job as written is not built */
	if (base)
		c->base_warnings = diag_warning_count(de) - w0;
	if (!j || !j->ok || diag_error_count(de) != e0 || !build_job(ev, a, j, &none, false, bd))
		return;
	if (base)
		c->base_warnings = diag_warning_count(de) - w0;
	if (diag_error_count(de) == e0 && diag_warning_count(de) - w0 <= c->base_warnings)
		judge(a, bd, out);
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

void fit_ctx_release(struct fit_ctx *c)
{
	/* its entries stay in c->arena until that is freed */
	memset(&c->seen, 0, sizeof c->seen);
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

/* Only the job's block, @ch written in, parsed as a file of its own and
 * checked among the declarations checked once (c->ctx): the same checker
 * and builder on the same text of the block, without re-reading the
 * file and the stdlib around it. */
static void block_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t,
			  struct fit_outcome *out)
{
	const struct decl *d = c->job->decl;
	struct fit_range block = { d->loc.start, d->loc.end };
	struct diag_engine *de = c->ctx_de;
	unsigned e0 = diag_error_count(de), w0 = diag_warning_count(de);
	size_t len;
	char *text = apply(c, ch, t, &block, 1, &len);

	if (text && reach_misses(c->ctx_reach, c->ctx_in, text, 0, (uint32_t)len)) {
		free(text);	/* it names what the context left a stub */
		text_variant(c, ch, t, out);
		return;
	}
	const struct src_file *f = text ? src_add_string(c->ctx_src, de, c->path, text, len) : NULL;
	const struct file_ast *fa = f ? parse_file(c->ctx_arena, c->ctx_in, de, f) : NULL;

	memset(out, 0, sizeof *out);
	free(text);
	if (!fa || diag_error_count(de) != e0 || !fa->decls || fa->decls->kind != DECL_TRAIN || fa->decls->next)
		return;
	struct arena a = { 0 };
	struct eval *ev = c->ctx->ev;
	struct arena *was = eval_use_arena(ev, &a);

	analyse(c, &a, ev, de, check_program_job(c->ctx, fa->decls), e0, w0, out);
	eval_use_arena(ev, was);
	arena_free(&a);
}

static void compile_variant(struct fit_ctx *c, const struct fit_change *ch, struct fit_text *t,
			    struct fit_outcome *out)
{
	c->builds++;
	if (c->ctx)
		block_variant(c, ch, t, out);
	else
		text_variant(c, ch, t, out);
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
	compile_variant(c, ch, &t, out);
	struct fit_outcome *keep = ARENA_NEW(&c->arena, struct fit_outcome);

	*keep = *out;
	strmap_put(&c->seen, &c->arena, key, len, keep);
}
