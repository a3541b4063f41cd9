/* SPDX-License-Identifier: MIT */
/*
 * fit.c - -Wcapacity and -Wheadroom (see fit.h). The fixes noted on a
 * -Wcapacity warning are memc fit's (analyzer/cmd/fit_search.c): the
 * smallest sets of changes, each checked as the block with the change
 * written in (among the file's declarations, checked once here) and each
 * one noted verified by compiling the whole file with it, as the user
 * would paste it. A search runs once per distinct train block text in a
 * file (blocks that read alike are the same job) and never when
 * -Wcapacity is off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/fit_impl.h"
#include "analyzer/fit/fit.h"
#include "analyzer/memory/memory.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/reach.h"
#include "lang/source.h"
#include "lang/strbuf.h"
#include "lang/strmap.h"

/* A -Wcapacity search stops here and says so: a note must not cost what
 * `memc fit` may (docs/fit.md); nor a file of many distinct blocks that do
 * not fit more than FIT_FILE_MAX_BUILDS variants in all (a few seconds),
 * or more than FIT_FILE_MAX_SEARCHES searches (each one its context's
 * variants and whole-text verifications): as clang corrects at most 50
 * typos per translation unit (-fspell-checking-limit, Sema::CorrectTypo),
 * the blocks after those are warned about with a note saying how to get
 * their fixes, not searched. */
enum { FIT_NOTE_MAX_BUILDS = 1000, FIT_NOTE_FIXES = 3, FIT_FILE_MAX_BUILDS = 2000,
       FIT_FILE_MAX_SEARCHES = 8 };

/* Why a block's fixes were not searched. */
enum fit_unsearched { FIT_SEARCHED, FIT_NO_VARIANTS_LEFT, FIT_NO_SEARCHES_LEFT };

/* One fix as noted: the keys it sets (the same as memc fit's lines). */
struct fit_note_fix {
	struct fit_set *v;
	size_t n, nlines;
	char *line;		/* the one line to paste when nlines is 1 */
	uint64_t total;
	uint64_t spare, capacity;	/* a tight one's: what it leaves of the GPU's memory */
};

/* What a search found for one train block text. */
struct fit_memo_entry {
	struct fit_note_fix *fixes, closest;	/* closest.n 0: none */
	struct fit_note_fix tight;	/* on the GPU, not inside the headroom; n 0: none */
	double headroom;
	size_t nfixes;
	bool truncated;
	enum fit_unsearched unsearched;	/* the file's budget was spent before it */
	unsigned long builds;
};

struct fit_memo {
	struct arena *arena;		/* the compilation's: entries live as long as it */
	const struct driver_opts *opts;
	const struct src_table *src;
	const struct program *prog;
	struct eval *ev;
	const char *path, *stdlib;
	/* every GPU the file can name, parsed on the first search
	 * (the compilation parses only what the jobs reach) */
	const struct program *gpus;
	struct eval *gpu_ev;
	bool gpus_tried;
	/* ... or, where the build's index has them all, only those the first
	 * search picks parsed there, and every one listed here */
	struct fit_gpu *gpu_list;
	size_t ngpu_list;
	/* ... and checked: where a variant's block alone is checked (NULL: the
	 * file has errors there, each variant compiles the whole text) */
	struct check_result *ctx;
	struct src_table *ctx_src;
	struct interner *ctx_in;
	struct diag_engine *ctx_de;
	const struct reach *ctx_reach;
	struct strmap memo;	/* job_key() -> struct fit_memo_entry */
	unsigned long builds;	/* variants compiled for this file's notes */
	unsigned searches;	/* distinct blocks searched */
};

struct fit_memo *fit_memo_new(struct arena *a, const struct driver_opts *o, const struct src_table *src,
			      const struct program *p, struct eval *ev)
{
	struct fit_memo *m = ARENA_NEW(a, struct fit_memo);

	memset(m, 0, sizeof *m);
	m->arena = a;
	m->opts = o;
	m->src = src;
	m->prog = p;
	m->ev = ev;
	m->stdlib = p->stdlib_dir;
	m->path = p->root ? src_get(src, p->root->file)->display_name : NULL;
	return m;
}

void fit_memo_free(struct fit_memo *m)
{
	(void)m;	/* everything is in the compilation's arena */
}

/* ---- the file as a variant sees it ---- */

static const struct decl *root_train(const struct fit_memo *m, const char *name)
{
	for (const struct decl *d = m->prog->root->decls; d; d = d->next)
		if (d->kind == DECL_TRAIN && d->name && strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* @job and the blocks of this file it derives from (the checker has
 * refused a cycle or a chain of more than 64). */
static size_t chain_of(const struct fit_memo *m, const struct decl *job, const struct decl **chain)
{
	size_t n = 0;

	for (const struct decl *b = job; b && n < 64; b = b->record.base ? root_train(m, b->record.base) : NULL)
		chain[n++] = b;
	return n;
}

static bool in_chain(const struct decl *const *chain, size_t n, const struct decl *d)
{
	for (size_t i = 0; i < n; i++)
		if (chain[i] == d)
			return true;
	return false;
}

/* The root file's text less every train block but @chain's (all of them
 * if @n is 0); a run of dropped blocks goes as one range. */
static size_t keep_ranges(const struct fit_memo *m, const struct decl *const *chain, size_t nchain,
			  struct arena *a, struct fit_range **out)
{
	const struct src_file *f = src_get(m->src, m->prog->root->file);
	size_t n = 1, k = 0;
	uint32_t at = 0;
	bool dropping = false;

	for (const struct decl *d = m->prog->root->decls; d; d = d->next)
		n++;
	struct fit_range *r = ARENA_NEW_ARRAY(a, struct fit_range, n);

	for (const struct decl *d = m->prog->root->decls; d; d = d->next) {
		bool drop = d->kind == DECL_TRAIN && !in_chain(chain, nchain, d);

		if (drop && !dropping && d->loc.start > at)
			r[k++] = (struct fit_range){ at, d->loc.start };
		if (drop)
			at = d->loc.end;
		dropping = drop;
	}
	if (at < f->len)
		r[k++] = (struct fit_range){ at, f->len };
	*out = r;
	return k;
}

/* The index entries of the verified stdlib file whose prescan is @x. */
static const struct stdlib_digest *digest_of(const struct stdlib_decl *x)
{
	for (size_t i = 0; i < memc_stdlib_ndigests; i++)
		if (memc_stdlib_digests[i].decls == x)
			return &memc_stdlib_digests[i];
	return NULL;
}

/* Every GPU the file can name with its memory, from the build's index
 * (stdlib_decl.memory, which the builder's reading of each gpu's `memory`
 * gave when its file checked clean): false unless every stdlib file
 * loaded is the verified one and no other file declares a GPU, as only
 * then is every GPU's memory the index's. */
static bool index_gpus(struct fit_memo *m)
{
	const struct program *p = m->prog;
	size_t n = 0;

	if (!p->stdlib_verified)
		return false;
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		for (size_t i = 0; i < p->nfiles; i++) {
			const struct file_ast *f = p->files[i];
			const struct stdlib_digest *x = f->verified && f->index ? digest_of(f->index) : NULL;

			for (const struct decl *d = x ? NULL : f->decls; d; d = d->next)
				if (d->kind == DECL_GPU)
					return false;	/* its memory is not in the index */
			for (size_t k = 0; x && k < x->ndecls; k++)
				if (x->decls[k].kind == DECL_GPU && pass)
					m->gpu_list[n++] = (struct fit_gpu){ x->decls[k].name, x->decls[k].memory };
				else
					n += x->decls[k].kind == DECL_GPU;
		}
		if (!pass)
			m->gpu_list = ARENA_NEW_ARRAY(m->arena, struct fit_gpu, n ? n : 1);
	}
	m->ngpu_list = n;
	return true;
}

/* The words the context reaches besides its own: what the fixes write,
 * and the GPUs @cj's search picks from the index (NULL: every GPU). */
static const char *context_words(struct fit_memo *m, const struct check_job *cj)
{
	struct strbuf sb;
	uint64_t cap = 0;

	if (!index_gpus(m)) {
		m->gpu_list = NULL;
		return NULL;
	}
	struct fit_gpu *g = ARENA_NEW_ARRAY(m->arena, struct fit_gpu, m->ngpu_list ? m->ngpu_list : 1);
	size_t n;

	memcpy(g, m->gpu_list, m->ngpu_list * sizeof *g);
	if (cj->cluster.decl)
		build_gpu_u64(m->ev, cj->cluster.decl, "memory", &cap);
	n = fit_gpu_choices(g, m->ngpu_list, cap);
	strbuf_init(&sb);
	strbuf_addstr(&sb, fit_knob_words);
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, " %s", g[i].name);
	const char *w = arena_strdup(m->arena, sb.buf);

	strbuf_release(&sb);
	return w;
}

/* The file without its train blocks, every GPU parsed (or those @cj's
 * search picks, where the index lists them all): what the larger-GPU
 * fixes choose from. An empty program if it has errors. */
static void load_gpus(struct fit_memo *m, const struct check_job *cj)
{
	static const struct program none = { .nfiles = 0 };
	struct fit_range *keep;
	size_t n = keep_ranges(m, NULL, 0, m->arena, &keep);
	const char *text = src_get(m->src, m->prog->root->file)->text;
	struct strbuf sb;
	size_t len;

	m->gpus_tried = true;
	m->gpus = &none;
	strbuf_init(&sb);
	for (size_t i = 0; i < n; i++)
		strbuf_add(&sb, text + keep[i].start, keep[i].end - keep[i].start);
	char *t = strbuf_detach(&sb, &len), *own = arena_strndup(m->arena, t, len);

	free(t);
	struct import_cache *cache = m->prog->cache;
	struct interner *in = cache ? import_cache_interner(cache) : interner_new(m->arena);
	struct src_table *src = src_table_new(m->arena);
	struct diag_engine *de = diag_new(m->arena, src, NULL);
	/* lazily, through the cache: what the file's train blocks reach
	 * (parsed already), what the fixes can write, and every GPU; a
	 * variant that names anything else compiles from the text
	 * (fit_variant.c) */
	const char *words = context_words(m, cj);
	struct reach_extra rx = { .like = m->prog->reach, .words = words ? words : fit_knob_words, .gpus = !words };
	struct import_opts io = { .dirs = m->opts->dirs, .ndirs = m->opts->ndirs, .stdlib_dir = m->stdlib,
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests,
				  .cache = cache, .reach_extra = &rx };

	src_set_overlay(src, m->path, own, len);
	struct program *p = import_load(m->arena, in, src, de, m->path, &io);

	if (!p->root || diag_error_count(de))
		return;
	struct check_result *cr = check_program_decls(m->arena, in, de, src, p);

	if (!diag_error_count(de)) {
		m->gpus = p;
		m->gpu_ev = cr->ev;
	}
	if (diag_error_count(de) || cr->shared_errors || !cr->jobs_follow)
		return;
	diag_set_max_errors(de, 0);	/* the variants' errors are counted, never printed */
	m->ctx = cr;
	m->ctx_src = src;
	m->ctx_in = in;
	m->ctx_de = de;
	m->ctx_reach = p->reach;
}

/* ---- the search, once per distinct block ---- */

/* The block's text after its name, then its bases': alike, the same job. */
static char *job_key(const struct fit_memo *m, const struct decl *const *chain, size_t n, size_t *len)
{
	struct strbuf sb;
	const char *t = src_get(m->src, m->prog->root->file)->text;

	strbuf_init(&sb);
	for (size_t i = 0; i < n; i++) {
		uint32_t from = i ? chain[i]->loc.start : chain[i]->name_loc.end;

		strbuf_add(&sb, t + from, chain[i]->loc.end - from);
		strbuf_add(&sb, "", 1);	/* a NUL between blocks: no text has one */
	}
	return strbuf_detach(&sb, len);
}

/* A fix kept past the search's arena. */
static void keep_fix(struct arena *a, const struct fit_fix *f, struct fit_note_fix *out)
{
	out->n = f->change.n;
	out->nlines = f->nlines;
	out->line = f->nlines == 1 ? arena_strdup(a, f->lines[0]) : NULL;
	out->total = f->total;
	out->spare = f->spare;
	out->capacity = f->capacity;
	out->v = ARENA_NEW_ARRAY(a, struct fit_set, f->change.n ? f->change.n : 1);
	for (size_t i = 0; i < f->change.n; i++) {
		const struct fit_set *v = &f->change.v[i];

		/* a caveat is a static string of fit_search.c */
		out->v[i] = (struct fit_set){ arena_strdup(a, v->top), v->sub ? arena_strdup(a, v->sub) : NULL,
					      arena_strdup(a, v->value), v->caveat, v->whole_record };
	}
}

static void run_search(struct fit_memo *m, const struct check_job *cj, const struct decl *const *chain,
		       size_t nchain, struct fit_memo_entry *e)
{
	unsigned long left = m->builds < FIT_FILE_MAX_BUILDS ? FIT_FILE_MAX_BUILDS - m->builds : 0;
	struct fit_ctx c = { .arena = { 0 }, .max_fixes = FIT_NOTE_FIXES,
			     .max_builds = left < FIT_NOTE_MAX_BUILDS ? left : FIT_NOTE_MAX_BUILDS };
	const struct src_file *f = src_get(m->src, m->prog->root->file);
	struct fit_answer ans;
	struct value hv;

	if (!left || m->searches >= FIT_FILE_MAX_SEARCHES) {
		e->unsearched = left ? FIT_NO_SEARCHES_LEFT : FIT_NO_VARIANTS_LEFT;
		return;
	}
	m->searches++;
	if (!m->gpus_tried)
		load_gpus(m, cj);
	c.opts = m->opts;
	c.path = m->path;
	c.stdlib = m->stdlib;
	c.text = f->text;
	c.len = f->len;
	c.nkeep = keep_ranges(m, chain, nchain, &c.arena, (struct fit_range **)&c.keep);
	c.src = m->src;
	c.prog = m->gpus;
	c.ev = m->ev;
	c.gpu_ev = m->gpu_ev;
	if (m->gpu_list && m->gpus->nfiles) {	/* none if the context has errors, as before */
		c.gpus = m->gpu_list;
		c.ngpus = m->ngpu_list;
	}
	c.job = cj;
	c.job_name = cj->decl->name;
	c.cache = m->prog->cache;
	if (nchain == 1 && m->ctx) {	/* a base block is not in the context */
		c.ctx = m->ctx;
		c.ctx_src = m->ctx_src;
		c.ctx_in = m->ctx_in;
		c.ctx_de = m->ctx_de;
		c.ctx_reach = m->ctx_reach;
		c.ctx_arena = m->arena;
	}
	c.job_headroom = check_job_field(cj, "headroom", &hv) && hv.kind == VAL_NUM ? num_to_double(hv.num) : 0.10;
	fit_search_fixes(&c, &ans);
	e->fixes = ARENA_NEW_ARRAY(m->arena, struct fit_note_fix, ans.nfixes ? ans.nfixes : 1);
	for (size_t i = 0; i < ans.nfixes; i++)
		keep_fix(m->arena, &ans.fixes[i], &e->fixes[e->nfixes++]);
	if (!ans.nfixes && ans.closest.nlines)
		keep_fix(m->arena, &ans.closest, &e->closest);
	else
		e->closest.n = 0;
	e->tight.n = 0;
	if (ans.tight.nlines)
		keep_fix(m->arena, &ans.tight, &e->tight);
	e->headroom = c.job_headroom;
	e->truncated = c.truncated;
	e->builds = c.builds;
	m->builds += c.builds;
	fit_ctx_release(&c);
	arena_free(&c.arena);
}

/* The search's answer for @cj's block: run once per distinct text. */
static const struct fit_memo_entry *fixes_for(struct fit_memo *m, const struct check_job *cj)
{
	const struct decl *chain[64];
	size_t n = chain_of(m, cj->decl, chain), len;
	char *key = job_key(m, chain, n, &len);
	struct fit_memo_entry *e = strmap_get(&m->memo, key, len);

	if (e) {
		free(key);
		return e;
	}
	e = ARENA_NEW(m->arena, struct fit_memo_entry);
	memset(e, 0, sizeof *e);
	run_search(m, cj, chain, n, e);
	strmap_put(&m->memo, m->arena, key, len, e);
	free(key);
	return e;
}

/* ---- the notes ---- */

/* A field the train block writes itself (an inherited one is not its text). */
static const struct field *own_field(const struct check_job *cj, const char *name)
{
	for (const struct field *f = cj->decl->record.fields; f; f = f->next)
		if (f->name && strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static const struct field *sub_field(const struct field *f, const char *name)
{
	for (const struct field *s = f ? f->sub : NULL; s; s = s->next)
		if (s->name && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* What @f changes, shortly: `zero = 3 and parallel { tp = 2 }`, only the
 * keys it sets (the paste-able line of a record repeats the block's). */
static void describe(struct strbuf *sb, const struct fit_note_fix *f)
{
	for (size_t i = 0, g = 0; i < f->n; i++) {
		const struct fit_set *v = &f->v[i];
		bool later = false;

		if (i && v->sub && f->v[i - 1].sub && strcmp(f->v[i - 1].top, v->top) == 0)
			continue;	/* printed with the first of its record */
		for (size_t k = i + 1; k < f->n; k++)
			later |= !f->v[k].sub || strcmp(f->v[k].top, v->top) != 0;
		strbuf_addstr(sb, !g++ ? "" : later ? ", " : " and ");
		if (!v->sub) {
			strbuf_addf(sb, "%s = %s", v->top, v->value);
			continue;
		}
		strbuf_addf(sb, "%s { ", v->top);
		for (size_t k = i; k < f->n && f->v[k].sub && strcmp(f->v[k].top, v->top) == 0; k++)
			strbuf_addf(sb, "%s%s = %s", k > i ? ", " : "", f->v[k].sub, f->v[k].value);
		strbuf_addstr(sb, " }");
	}
}

/* "; " and each caveat of @f's keys (docs/fit.md "Caveats"). */
static void caveats(struct strbuf *sb, const struct fit_note_fix *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].caveat)
			strbuf_addf(sb, "; %s", f->v[i].caveat);
}

/* The field a note on @v points at: the key itself if the block writes it,
 * its record if only that. */
static const struct field *field_of(const struct check_job *cj, const struct fit_set *v)
{
	const struct field *top = own_field(cj, v->top), *sub = v->sub ? sub_field(top, v->sub) : NULL;

	return sub ? sub : top;
}

/* "zero = 1 fits (device total ...)" at the first key it changes that the
 * block writes, else at the block's name. A change of one line whose key
 * the block writes carries the edit too (JSON, SARIF): the key alone
 * (`tp = 2` over `tp = 1` in `parallel { tp = 1 }`), else the whole line. */
static void note_fix(struct diag *d, const struct check_job *cj, const struct fit_note_fix *f)
{
	const struct field *at = NULL, *top = f->nlines == 1 ? own_field(cj, f->v[0].top) : NULL;
	struct strbuf sb, edit, why;
	char buf[32];

	strbuf_init(&sb);
	strbuf_init(&edit);
	describe(&sb, f);
	for (size_t i = 0; i < f->n && !at; i++)
		at = field_of(cj, &f->v[i]);
	report_bytes(f->total, buf, sizeof buf);
	strbuf_init(&why);
	caveats(&why, f);
	bool one_sub = top && f->n == 1 && f->v[0].sub && at != top && !f->v[0].whole_record;

	if (top)
		strbuf_addf(&edit, "%s%s%s", one_sub ? f->v[0].sub : f->line, one_sub ? " = " : "",
			    one_sub ? f->v[0].value : "");
	if (top)
		diag_note_fix(d, one_sub ? at->loc : top->loc, edit.buf, "%s fits (device total %s)%s", sb.buf, buf,
			      why.buf);
	else
		diag_note(d, at ? at->loc : cj->decl->name_loc, "%s %s (device total %s)%s", sb.buf,
			  f->nlines > 1 || f->n > 1 ? "together fit" : "fits", buf, why.buf);
	strbuf_release(&sb);
	strbuf_release(&edit);
	strbuf_release(&why);
}

static void note_closest(struct diag *d, const struct check_job *cj, const struct fit_note_fix *f)
{
	struct strbuf sb;
	char buf[32];

	strbuf_init(&sb);
	describe(&sb, f);
	diag_note(d, cj->decl->name_loc, "nothing fits with up to 3 changes; the closest is %s (device total %s)",
		  sb.buf, report_bytes(f->total, buf, sizeof buf));
	strbuf_release(&sb);
}

/* A change that fits the GPU but not inside the headroom, with its
 * margin: the smaller change the headroom hides (docs/fit.md). */
static void note_tight(struct diag *d, const struct check_job *cj, const struct fit_memo_entry *e)
{
	const struct fit_note_fix *f = &e->tight;
	const struct field *at = NULL;
	struct strbuf sb, why;
	char buf[32], left[32];
	uint64_t cap = f->capacity;

	strbuf_init(&sb);
	strbuf_init(&why);
	describe(&sb, f);
	caveats(&why, f);
	for (size_t i = 0; i < f->n && !at; i++)
		at = field_of(cj, &f->v[i]);
	report_bytes(f->spare, left, sizeof left);
	diag_note(d, at ? at->loc : cj->decl->name_loc, "a smaller change: %s %s the GPU with %s (%.1f%%) to "
		  "spare, under the %.0f%% headroom (device total %s)%s", sb.buf, f->n > 1 ? "fit" : "fits", left,
		  cap ? 100.0 * (double)f->spare / (double)cap : 0.0, e->headroom * 100,
		  report_bytes(f->total, buf, sizeof buf), why.buf);
	strbuf_release(&sb);
	strbuf_release(&why);
}

static void note_fixes(struct fit_memo *m, const struct check_job *cj, struct diag *d)
{
	const struct fit_memo_entry *e = fixes_for(m, cj);

	if (e->unsearched == FIT_NO_VARIANTS_LEFT) {
		diag_note(d, NO_LOC, "no fix searched: this file's -Wcapacity searches used their %u variants; "
			  "`memc fit --job %s %s` searches this one", (unsigned)FIT_FILE_MAX_BUILDS,
			  cj->decl->name, m->path);
		return;
	}
	if (e->unsearched == FIT_NO_SEARCHES_LEFT) {
		diag_note(d, NO_LOC, "no fix searched: this file's -Wcapacity notes search the first %u distinct "
			  "train blocks that do not fit; `memc fit --job %s %s` searches this one",
			  (unsigned)FIT_FILE_MAX_SEARCHES, cj->decl->name, m->path);
		return;
	}
	for (size_t i = 0; i < e->nfixes; i++)
		note_fix(d, cj, &e->fixes[i]);
	if (e->tight.n)
		note_tight(d, cj, e);
	if (e->nfixes)
		return;
	if (e->closest.n)
		note_closest(d, cj, &e->closest);
	else
		diag_note(d, cj->decl->name_loc, "nothing fits with up to 3 changes");
	if (e->truncated)
		diag_note(d, NO_LOC, "the search stopped after %lu variants", e->builds);
}

/* Classes blamed at the same line with the same warning print once. */
static bool seen_at(struct loc *seen, size_t *n, struct loc at)
{
	for (size_t i = 0; i < *n; i++)
		if (seen[i].file == at.file && seen[i].start == at.start)
			return true;
	seen[(*n)++] = at;
	return false;
}

/* The line of the knob that drives @c, or the train block's name. */
static struct loc blame(const struct build *bd, enum mem_component c)
{
	struct loc l = NO_LOC;

	switch (c) {
	case MEM_C_ACTIVATIONS: case MEM_C_LOGITS: l = bd->loc_micro_batch; break;
	case MEM_C_OPTIMIZER: case MEM_C_GRADIENTS: l = bd->loc_zero.file ? bd->loc_zero : bd->loc_optimizer; break;
	case MEM_C_WEIGHTS: l = bd->loc_model; break;
	case MEM_C_BUFFERS: l = bd->loc_zero.file ? bd->loc_zero : bd->loc_cluster; break;
	default: l = bd->loc_cluster; break;
	}
	return l.file ? l : bd->loc_train;
}

static enum mem_component largest(const struct mem_class *k)
{
	enum mem_component best = MEM_C_WEIGHTS;

	for (int c = 0; c < MEM_C__COUNT; c++)
		if (c != MEM_C_OVERHEAD && k->at_peak[c] > k->at_peak[best])
			best = (enum mem_component)c;
	return best;
}

static void capacity(struct fit_memo *m, struct eval *ev, const struct check_job *cj, const struct build *bd,
		     const struct mem_class *k, struct diag *d)
{
	char part[32], rest[32];
	enum mem_component c = largest(k);

	if (d == diag_sink(eval_diag(ev)))
		return;		/* dropped (--max-errors): nothing to note on */
	if (bd->job.pp > 1)
		diag_note(d, NO_LOC, "on pipeline stage %u", (unsigned)k->stage);
	if (k->paged_bytes)	/* evictable (memory.c mem_class_totals): not what runs out */
		diag_note(d, NO_LOC, "without the %s of paged optimizer states, which the driver "
			  "evicts to the host, it still needs %s",
			  report_bytes(k->paged_bytes, part, sizeof part),
			  report_bytes(k->device_total - k->paged_bytes, rest, sizeof rest));
	diag_note(d, NO_LOC, "the largest part is %s (%s)", mem_component_name(c),
		  report_bytes(k->at_peak[c], part, sizeof part));
	if (k->alloc_oom)	/* §5.4: where the replay, like PyTorch, runs out */
		diag_note(d, NO_LOC, "the caching allocator cannot satisfy a request of %s (%s) even "
			  "after freeing its cache; PyTorch raises OutOfMemoryError there",
			  report_bytes(k->alloc_oom_request, part, sizeof part),
			  k->alloc_oom_what ? k->alloc_oom_what : "?");
	note_fixes(m, cj, d);
}

/* The line that asked for @p, or the train block's name. */
static struct loc phase_loc(const struct build *bd, enum phase_id p)
{
	struct loc l = p == PHASE_LOADING ? bd->loc_load : p == PHASE_EVAL ? bd->loc_eval :
		       p == PHASE_SAVE ? bd->loc_save : p >= PHASE_REF_FORWARD ? bd->loc_rl : NO_LOC;

	return l.file ? l : p == PHASE_LOADING && bd->loc_model.file ? bd->loc_model : bd->loc_train;
}

/* Loading from_pretrained puts the whole model on every GPU before FSDP or
 * ZeRO-3 shards it: say what loading on the CPU (FSDP sync_module_states,
 * accelerate's cpu_ram_efficient_loading) would need instead. */
static void note_load(struct arena *a, const struct build *bd, size_t i, struct diag *d)
{
	struct phase_input in = bd->run_in;
	struct phase_result alt;
	char b[32];

	if (in.load != PHASE_LOAD_FROM_PRETRAINED || !bd->rep.result)
		return;
	in.load = PHASE_LOAD_RANK0_CPU;
	if (phases_analyze(a, &bd->job, bd->rep.result, &in, &alt) && i < alt.nclasses)
		diag_note(d, NO_LOC, "with load = rank0_cpu (FSDP sync_module_states, one unit at a time on "
			  "the GPU) loading needs %s", report_bytes(alt.classes[i].device[PHASE_LOADING], b, sizeof b));
}

/* The step fits but a phase around it does not (phases.h). */
static void run_capacity(struct fit_memo *m, struct eval *ev, struct arena *a, const struct check_job *cj,
			 const struct build *bd, const struct mem_class *k, size_t i, struct loc *seen, size_t *nseen)
{
	struct diag_engine *de = eval_diag(ev);
	const struct phase_class *c = bd->rep.run && i < bd->rep.run->nclasses ? &bd->rep.run->classes[i] : NULL;
	char got[32], cap[32], over[32], step[32];
	struct loc at;

	if (!c || c->run_fits || !diag_is_enabled(de, DIAG_CAPACITY))
		return;
	at = phase_loc(bd, c->run);
	if (seen_at(seen, nseen, at))
		return;
	struct diag *d = diag_emit(de, DIAG_CAPACITY, at, "device total %s per GPU at %s exceeds %s (%s) by %s",
				   report_bytes(c->run_device, got, sizeof got), phase_name(c->run), bd->rep.gpu,
				   report_bytes(k->capacity, cap, sizeof cap),
				   report_bytes(c->run_device - k->capacity, over, sizeof over));

	if (d == diag_sink(de))
		return;
	diag_note(d, NO_LOC, "the training step itself needs %s; the run's peak is %s",
		  report_bytes(k->device_total, step, sizeof step), phase_name(c->run));
	if (c->run == PHASE_LOADING)
		note_load(a, bd, i, d);
	note_fixes(m, cj, d);
}

static void warn_class(struct fit_memo *m, struct eval *ev, const struct check_job *cj, const struct build *bd,
		       const struct mem_class *k, struct loc *seen[2], size_t nseen[2])
{
	struct diag_engine *de = eval_diag(ev);
	char got[32], cap[32], over[32], free_b[32];

	if (!k->fits) {
		struct loc at = blame(bd, largest(k));

		/* -Wno-capacity: no warning, so no search either */
		if (!diag_is_enabled(de, DIAG_CAPACITY) || seen_at(seen[0], &nseen[0], at))
			return;
		capacity(m, ev, cj, bd, k,
			 diag_emit(de, DIAG_CAPACITY, at, "device total %s per GPU exceeds %s (%s) by %s",
				   report_bytes(k->device_total, got, sizeof got), bd->rep.gpu,
				   report_bytes(k->capacity, cap, sizeof cap),
				   report_bytes(k->device_total - k->capacity, over, sizeof over)));
	} else if (k->paged_evicted && !seen_at(seen[1], &nseen[1], bd->loc_train)) {
		diag_emit(de, DIAG_HEADROOM, bd->loc_train,
			  "nothing of %s stays free: %s of the paged optimizer states do not fit beside "
			  "the rest and are evicted to host memory (paged in and out every step)",
			  bd->rep.gpu, report_bytes(k->paged_evicted, over, sizeof over));
	} else if (!k->fits_headroom && !seen_at(seen[1], &nseen[1], bd->loc_train)) {
		diag_emit(de, DIAG_HEADROOM, bd->loc_train,
			  "only %s (%.1f%%) of %s stays free; the job asks for %.0f%% headroom",
			  report_bytes(k->capacity - k->device_total, free_b, sizeof free_b),
			  k->headroom * 100, bd->rep.gpu, bd->job.headroom * 100);
	}
}

void fit_check(struct fit_memo *m, struct eval *ev, struct arena *a, const struct check_job *cj,
	       const struct build *bd)
{
	const struct mem_result *r = bd->rep.result;

	if (!r || !r->nclasses)
		return;
	struct loc *seen[2] = { ARENA_NEW_ARRAY(a, struct loc, r->nclasses),
				ARENA_NEW_ARRAY(a, struct loc, r->nclasses) };
	size_t nseen[2] = { 0, 0 };

	for (size_t i = 0; i < r->nclasses; i++)
		if (r->classes[i].capacity) {
			warn_class(m, ev, cj, bd, &r->classes[i], seen, nseen);
			if (r->classes[i].fits)
				run_capacity(m, ev, a, cj, bd, &r->classes[i], i, seen[0], &nseen[0]);
		}
}
