/* SPDX-License-Identifier: MIT */
/*
 * analysis.c - what memc lsp computes from a document: diagnostics,
 * hover figures, definitions and completions.
 *
 * Every answer compiles the document anew (struct unit): its text is the
 * source table's overlay for the document's own path, so imports resolve
 * from the document's folder exactly as `memc check FILE` would, and the
 * unit's arena is freed before the answer goes out.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/lsp/lsp_impl.h"
#include "analyzer/pipeline.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/strbuf.h"

struct unit {
	struct arena arena;
	struct interner *in;
	struct src_table *src;
	struct diag_engine *de;
	struct program *prog;
	const struct src_file *root;	/* NULL: the text could not be registered */
	const struct lsp_doc *doc;
	const struct driver_opts *opts;
	bool bom;
};

static void unit_open(struct unit *u, const struct lsp_server *s, const struct lsp_doc *d)
{
	*u = (struct unit){ .arena = { 0 }, .doc = d, .opts = &s->opts };
	u->in = interner_new(&u->arena);
	u->src = src_table_new(&u->arena);
	u->de = diag_new(&u->arena, u->src, NULL);
	diag_set_max_errors(u->de, s->opts.max_errors);
	src_set_overlay(u->src, d->path, d->text, d->len);

	struct import_opts io = { .dirs = s->opts.dirs, .ndirs = s->opts.ndirs,
				  .stdlib_dir = driver_stdlib_dir(&u->arena, &s->opts) };

	u->prog = import_load(&u->arena, u->in, u->src, u->de, d->path, &io);
	u->root = u->src->nfiles > 1 ? src_get(u->src, 1) : NULL;
	u->bom = d->len >= 3 && memcmp(d->text, "\xEF\xBB\xBF", 3) == 0;
}

static void unit_close(struct unit *u)
{
	arena_free(&u->arena);
}

/* The URI of source file @id: the document's own for its root, file:
 * URIs of real paths for imports (the stdlib among them). */
static json_t *file_uri(const struct unit *u, uint32_t id)
{
	const struct src_file *f = id ? src_get(u->src, id) : NULL;

	if (!f || f == u->root || !f->real_path)
		return json_string(u->doc->uri);
	char *uri = lsp_path_to_uri(f->real_path);
	json_t *j = json_string(uri ? uri : u->doc->uri);

	free(uri);
	return j;
}

static json_t *range_of(const struct unit *u, struct loc l)
{
	if (!l.file)
		return json_pack("{s:{s:i, s:i}, s:{s:i, s:i}}", "start", "line", 0, "character", 0,
				 "end", "line", 0, "character", 0);
	return lsp_range(src_get(u->src, l.file), l, l.file == (u->root ? u->root->id : 0) && u->bom);
}

static json_t *location_of(const struct unit *u, struct loc l)
{
	return json_pack("{s:o, s:o}", "uri", file_uri(u, l.file), "range", range_of(u, l));
}

/* Messages quote user text, which may hold bytes that are not UTF-8
 * (jansson refuses those): escape them as the text printer does. */
static json_t *text_json(const char *s)
{
	json_t *j = json_string(s);

	if (j)
		return j;
	struct strbuf sb;

	strbuf_init(&sb);
	diag_escape(&sb, s);
	j = json_string(sb.buf);
	strbuf_release(&sb);
	return j ? j : json_string("?");
}

/* A diagnostic in an imported file is shown at the root's import that
 * brought it in: an editor lists only the open document's problems. */
static struct loc in_root(const struct unit *u, struct loc l)
{
	unsigned guard = 0;

	while (l.file && u->root && l.file != u->root->id && guard++ <= IMPORT_MAX_DEPTH)
		l = diag_loc_import_site(u->de, l);
	return l;
}

static json_t *related(struct unit *u, struct loc l, const char *msg)
{
	return json_pack("{s:o, s:o}", "location", location_of(u, l), "message", text_json(msg));
}

/* Notes with a place become relatedInformation; those without one are
 * lines of the message, as the terminal shows them. */
static json_t *diag_json(struct unit *u, const struct diag *g)
{
	struct loc at = in_root(u, g->loc);
	const char *msg = diag_message(g);
	json_t *rel = json_array();

	if (g->loc.file && at.file != g->loc.file) {
		const struct src_file *f = src_get(u->src, g->loc.file);

		msg = arena_printf(&u->arena, "%s:%u: %s", f->display_name,
				   src_line_of(f, g->loc.start), msg);
		json_array_append_new(rel, related(u, g->loc, diag_message(g)));
	}
	for (const struct diag_note *n = g->notes; n; n = n->next) {
		if (n->loc.file)
			json_array_append_new(rel, related(u, n->loc, n->msg));
		else
			msg = arena_printf(&u->arena, "%s\nnote: %s", msg, n->msg);
	}
	json_t *j = json_pack("{s:o, s:i, s:s, s:s, s:o}", "range", range_of(u, at), "severity",
			      g->sev == DIAG_SEV_ERROR ? 1 : 2, "code", diag_name(g->id),
			      "source", "memc", "message", text_json(msg));

	if (json_array_size(rel))
		json_object_set_new(j, "relatedInformation", rel);
	else
		json_decref(rel);
	return j;
}

/* The phases of `memc check`, gated the same way. */
json_t *lsp_diagnostics(const struct lsp_server *s, const struct lsp_doc *d)
{
	struct unit u;
	struct driver_opts o = s->opts;

	o.command = DRIVER_CHECK;
	o.format = DRIVER_FORMAT_TEXT;
	unit_open(&u, s, d);
	if (u.prog->root && !diag_error_count(u.de)) {
		struct pipeline p = { .arena = &u.arena, .interner = u.in, .src = u.src,
				      .diag = u.de, .opts = &o, .program = u.prog };

		pipeline_run(&p);
	}
	json_t *list = json_array();

	for (const struct diag *g = diag_first(u.de); g; g = g->next)
		json_array_append_new(list, diag_json(&u, g));
	json_t *params = json_pack("{s:s, s:o}", "uri", d->uri, "diagnostics", list);

	unit_close(&u);
	return params;
}

/* ---- positions in the document ---- */

static bool word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c >= 0x80;
}

/* The identifier around byte @off of the root, or false. */
static bool word_at(const struct unit *u, uint32_t off, struct loc *w)
{
	const char *t = u->root->text;
	uint32_t a = off, b = off;

	while (a > 0 && word_byte((unsigned char)t[a - 1]))
		a--;
	while (b < u->root->len && word_byte((unsigned char)t[b]))
		b++;
	if (a == b || (t[a] >= '0' && t[a] <= '9'))
		return false;
	*w = (struct loc){ u->root->id, a, b };
	return true;
}

/* The byte offset of an LSP position, or false without a usable root. */
static bool unit_offset(const struct unit *u, json_int_t line, json_int_t ch, uint32_t *off)
{
	if (!u->root || !u->prog->root)
		return false;
	*off = lsp_offset(u->root, line, ch, u->bom);
	return true;
}

/* The declaration the identifier at @off names, if any. */
static const struct decl *decl_at(struct unit *u, uint32_t off, struct loc *w)
{
	if (!word_at(u, off, w))
		return NULL;
	const char *name = intern_find(u->in, u->root->text + w->start, w->end - w->start);

	if (!name)
		return NULL;
	const struct decl *d = scope_find(scope_build(&u->arena, u->in, u->de, u->prog), name);

	return d && d->kind != DECL_IMPORT ? d : NULL;
}

/* ---- hover ---- */

static const struct decl *train_at(const struct unit *u, uint32_t off)
{
	for (const struct decl *d = u->prog->root->decls; d; d = d->next)
		if (d->kind == DECL_TRAIN && d->loc.file == u->root->id && d->loc.start <= off &&
		    off <= d->loc.end)
			return d;
	return NULL;
}

/* `memc report`'s text for one job; nothing if it cannot be analysed. */
static void report_job(struct unit *u, struct check_result *cr, const struct check_job *j, FILE *out)
{
	struct build_override none = { .zero = -1 };
	struct build *bd = ARENA_NEW(&u->arena, struct build);
	struct mem_result res;

	if (!j->ok || !build_job(cr->ev, &u->arena, j, &none, false, bd))
		return;
	if (mem_analyze(&bd->job, &res) != MEM_OK)
		return;
	const struct src_file *f = src_get(u->src, j->decl->name_loc.file);

	bd->rep.result = &res;
	bd->rep.analysed = true;
	bd->rep.file = f->display_name;
	bd->rep.line = src_line_of(f, j->decl->name_loc.start);
	report_text(out, &bd->rep, false);
	mem_result_free(&res);
}

/* The per-device figures of train block @t as markdown (malloc'ed). */
static char *train_hover(struct unit *u, const struct decl *t)
{
	char *text = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&text, &n);

	if (!out)
		return NULL;
	fputs("```text\n", out);
	long empty = ftell(out);

	if (!diag_error_count(u->de)) {
		struct check_result *cr = check_program(&u->arena, u->in, u->de, u->src, u->prog);

		for (const struct check_job *j = cr->jobs; j; j = j->next)
			if (j->decl == t)
				report_job(u, cr, j, out);
	}
	if (ftell(out) == empty)
		fprintf(out, "train %s: no figures until its errors are fixed\n", t->name);
	fputs("```\n", out);
	fclose(out);
	return text;
}

/* Another name: what it is and where it is declared. */
static char *decl_hover(struct unit *u, const struct decl *d)
{
	const struct src_file *f = src_get(u->src, d->name_loc.file);
	const char *s = arena_printf(&u->arena, "%s `%s` (%s:%u)", ast_decl_keyword[d->kind], d->name,
				     f->display_name, src_line_of(f, d->name_loc.start));

	return strdup(s);
}

json_t *lsp_hover(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		  json_int_t character)
{
	struct unit u;
	uint32_t off;
	json_t *res = json_null();

	unit_open(&u, s, d);
	if (unit_offset(&u, line, character, &off)) {
		struct loc w;
		const struct decl *t = train_at(&u, off), *named = t ? NULL : decl_at(&u, off, &w);
		char *text = t ? train_hover(&u, t) : named ? decl_hover(&u, named) : NULL;

		if (text)
			res = json_pack("{s:{s:s, s:o}, s:o}", "contents", "kind", "markdown", "value",
					text_json(text), "range", range_of(&u, t ? t->name_loc : w));
		free(text);
	}
	unit_close(&u);
	return res;
}

/* ---- definition ---- */

/* The file an import statement of the root loaded, at its first byte. */
static json_t *import_target(struct unit *u, uint32_t off)
{
	for (const struct decl *d = u->prog->root->decls; d; d = d->next) {
		struct loc p = d->kind == DECL_IMPORT ? d->import.path_loc : NO_LOC;

		if (!p.file || off < p.start || off > p.end)
			continue;
		for (uint32_t i = 1; i < u->src->nfiles; i++) {
			struct loc from = src_get(u->src, i)->included_from;

			if (from.file == p.file && from.start == p.start)
				return location_of(u, (struct loc){ i, 0, 0 });
		}
	}
	return NULL;
}

json_t *lsp_definition(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		       json_int_t character)
{
	struct unit u;
	uint32_t off;
	json_t *res = NULL;

	unit_open(&u, s, d);
	if (unit_offset(&u, line, character, &off)) {
		struct loc w;
		const struct decl *named = decl_at(&u, off, &w);

		res = named ? location_of(&u, named->name_loc) : import_target(&u, off);
	}
	unit_close(&u);
	return res ? res : json_null();
}

/* ---- completion ---- */

/* LSP CompletionItemKind per declaration kind; 0: not offered. */
static int item_kind(enum decl_kind k)
{
	switch (k) {
	case DECL_GPU: return 21;		/* Constant */
	case DECL_MODEL: return 7;		/* Class */
	case DECL_LAYER: return 3;		/* Function */
	case DECL_OPTIMIZER: return 3;
	case DECL_PRECISION: return 20;		/* EnumMember */
	default: return 0;
	}
}

/* The kind of name a train key takes; DECL__COUNT: any. */
static enum decl_kind value_kind(const char *key, size_t n)
{
	static const struct { const char *key; enum decl_kind kind; } keys[] = {
		{ "model", DECL_MODEL }, { "cluster", DECL_GPU },
		{ "precision", DECL_PRECISION }, { "optimizer", DECL_OPTIMIZER },
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strlen(keys[i].key) == n && memcmp(keys[i].key, key, n) == 0)
			return keys[i].kind;
	return DECL__COUNT;
}

/* After "key =" on the cursor's line a value is wanted: true, with the
 * kind of name that key takes. Before any "=" a key is wanted. */
static bool value_wanted(const struct unit *u, uint32_t off, enum decl_kind *want)
{
	const char *text = u->root->text;
	const char *start = text + src_line_starts(u->root)[src_line_of(u->root, off) - 1];
	const char *eq = NULL;

	for (const char *p = start; p < text + off; p++)
		if (*p == '=')
			eq = p;
	if (!eq)
		return false;
	const char *e = eq, *b;

	while (e > start && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	for (b = e; b > start && word_byte((unsigned char)b[-1]); b--)
		;
	*want = value_kind(b, (size_t)(e - b));
	return true;
}

static void add_keys(json_t *items)
{
	for (size_t i = 0; check_train_key(i); i++)
		json_array_append_new(items, json_pack("{s:s, s:i, s:s}", "label", check_train_key(i),
						       "kind", 10, "detail", "train key"));
}

/* Names of kind @want (DECL__COUNT: every kind offered) in scope. */
static void add_names(struct unit *u, json_t *items, enum decl_kind want)
{
	const struct scope *sc = scope_build(&u->arena, u->in, u->de, u->prog);

	for (size_t i = 0; i < scope_count(sc); i++) {
		const struct decl *g = scope_at(sc, i);

		if (item_kind(g->kind) && (want == DECL__COUNT || g->kind == want))
			json_array_append_new(items, json_pack("{s:s, s:i, s:s}", "label", g->name, "kind",
							       item_kind(g->kind), "detail",
							       ast_decl_keyword[g->kind]));
	}
}

/* Keys before the "=" of a line, names after it (only GPUs after
 * "cluster =", and so on); both when the position is unusable. */
json_t *lsp_completion(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		       json_int_t character)
{
	struct unit u;
	json_t *items = json_array();
	uint32_t off;
	enum decl_kind want = DECL__COUNT;

	unit_open(&u, s, d);
	bool located = unit_offset(&u, line, character, &off);
	bool value = located && value_wanted(&u, off, &want);

	if (!value)
		add_keys(items);
	if (value || !located)
		add_names(&u, items, want);
	unit_close(&u);
	return json_pack("{s:b, s:o}", "isIncomplete", 0, "items", items);
}
