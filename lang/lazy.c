/* SPDX-License-Identifier: MIT */
/*
 * lazy.c - prescan stdlib files, parse only what is reached (lazy.h).
 *
 * The prescan knows the lexical shape of the language only as far as
 * docs/language.md §1 fixes it: blanks, the three comment forms, strings
 * with escapes, brackets, words. At bracket depth 0 a declaration
 * keyword can only start a declaration (keywords are names only as keys,
 * inside brackets), so the keywords at depth 0 split a file exactly as
 * the grammar does.
 */
#include "lang/lazy.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/lex_helpers.h"
#include "lang/parse.h"
#include "lang/reach.h"
#include "lang/source.h"

struct prescan {
	struct arena *arena;
	struct interner *in;
	const struct src_file *f;
	const char *t;
	uint32_t n, i;
	unsigned depth;
	struct decl *cur, **tail;	/* the declaration being read, the list's end */
	uint32_t last_end;		/* end of cur's last token */
	bool has_cr;			/* a CR anywhere: line comments may end at one */
};

static const struct {
	const char *word;
	enum decl_kind kind;
} decl_keywords[] = {
	{ "import", DECL_IMPORT }, { "let", DECL_LET }, { "gpu", DECL_GPU },
	{ "precision", DECL_PRECISION }, { "train", DECL_TRAIN }, { "layer", DECL_LAYER },
	{ "model", DECL_MODEL }, { "optimizer", DECL_OPTIMIZER },
};

/* The declaration kind keyword t[0, len) starts, or DECL__COUNT. */
static enum decl_kind decl_keyword(const char *t, size_t len)
{
	for (size_t k = 0; k < sizeof decl_keywords / sizeof decl_keywords[0]; k++)
		if (strlen(decl_keywords[k].word) == len && memcmp(decl_keywords[k].word, t, len) == 0)
			return decl_keywords[k].kind;
	return DECL__COUNT;
}

static bool word_start(unsigned char c)
{
	return (unsigned)((c | 0x20) - 'a') < 26u || c == '_' || c >= 0x80;
}

static bool word_byte(unsigned char c)
{
	return word_start(c) || (unsigned)(c - '0') < 10u;
}

/* The end of the line comment starting at @i: the next LF or CR. Half the
 * bytes of the stdlib are comments, so memchr rather than a byte loop. */
static uint32_t line_end(const struct prescan *ps, uint32_t i)
{
	const char *t = ps->t, *lf = memchr(t + i, '\n', ps->n - i);
	uint32_t end = lf ? (uint32_t)(lf - t) : ps->n;
	const char *cr = ps->has_cr ? memchr(t + i, '\r', end - i) : NULL;

	return cr ? (uint32_t)(cr - t) : end;
}

static void skip_blanks(struct prescan *ps)
{
	while (ps->i < ps->n && (ps->t[ps->i] == ' ' || ps->t[ps->i] == '\t'))
		ps->i++;
}

/* A comment at ps->i: skip it; false if unterminated (the parser reports). */
static bool skip_comment(struct prescan *ps, bool *was)
{
	const char *t = ps->t;
	uint32_t i = ps->i;

	*was = true;
	if (t[i] == '#' || (t[i] == '/' && i + 1 < ps->n && t[i + 1] == '/')) {
		i = line_end(ps, i);
	} else if (t[i] == '/' && i + 1 < ps->n && t[i + 1] == '*') {
		const char *star;

		for (i += 2; (star = memchr(t + i, '*', ps->n - i)); i = (uint32_t)(star - t) + 1)
			if ((uint32_t)(star - t) + 1 < ps->n && star[1] == '/')
				break;
		if (!star)
			return false;
		i = (uint32_t)(star - t) + 2;
	} else {
		*was = false;
	}
	ps->i = i;
	return true;
}

/* A string at ps->i: its end, or 0 if it is unterminated or spans a line. */
static uint32_t string_end(const struct prescan *ps, bool *escapes)
{
	const char *t = ps->t;

	*escapes = false;
	for (uint32_t i = ps->i + 1; i < ps->n; i++) {
		if (t[i] == '"')
			return i + 1;
		if (t[i] == '\n' || t[i] == '\r')
			return 0;
		if (t[i] == '\\') {
			*escapes = true;
			if (++i >= ps->n || t[i] == '\n' || t[i] == '\r')
				return 0;
		}
	}
	return 0;
}

static void close_decl(struct prescan *ps)
{
	if (!ps->cur)
		return;
	ps->cur->loc.end = ps->last_end;
	*ps->tail = ps->cur;
	ps->tail = &ps->cur->next;
	ps->cur = NULL;
}

/* `import "path"`: complete, as the parser would make it. */
static bool read_import(struct prescan *ps, struct decl *d)
{
	bool escapes;

	skip_blanks(ps);
	if (ps->i >= ps->n || ps->t[ps->i] != '"')
		return false;
	uint32_t end = string_end(ps, &escapes);

	if (!end || escapes)
		return false;
	d->import.path = arena_strndup(ps->arena, ps->t + ps->i + 1, end - ps->i - 2);
	d->import.path_loc = (struct loc){ ps->f->id, ps->i, end };
	ps->i = ps->last_end = end;
	return true;
}

/* The name after a declaration keyword: ASCII, not a keyword, not too long. */
static bool read_name(struct prescan *ps, struct decl *d)
{
	skip_blanks(ps);
	uint32_t s = ps->i;

	if (s >= ps->n || !word_start((unsigned char)ps->t[s]))
		return false;
	while (ps->i < ps->n && word_byte((unsigned char)ps->t[ps->i]))
		if ((unsigned char)ps->t[ps->i++] >= 0x80)
			return false;
	size_t len = ps->i - s;

	if (len > PARSE_MAX_TOKEN || lex_is_keyword(ps->t + s, len))
		return false;
	d->name = intern(ps->in, ps->t + s, len);
	d->name_loc = (struct loc){ ps->f->id, s, ps->i };
	ps->last_end = ps->i;
	return true;
}

/* A word at ps->i (depth 0 and a declaration keyword: a new declaration). */
static bool read_word(struct prescan *ps)
{
	uint32_t s = ps->i;

	while (ps->i < ps->n && word_byte((unsigned char)ps->t[ps->i]))
		ps->i++;
	enum decl_kind kind = ps->depth == 0 ? decl_keyword(ps->t + s, ps->i - s) : DECL__COUNT;

	if (kind == DECL__COUNT) {
		ps->last_end = ps->i;
		/* a token after an import's path, or before any declaration */
		return ps->cur && ps->cur->kind != DECL_IMPORT;
	}
	if (kind == DECL_TRAIN)
		return false;
	close_decl(ps);
	ps->cur = ast_new_decl(ps->arena, kind, (struct loc){ ps->f->id, s, ps->i });
	ps->last_end = ps->i;
	return kind == DECL_IMPORT ? read_import(ps, ps->cur) : read_name(ps, ps->cur);
}

/* Any other token: a bracket, an operator, a digit, a string. */
static bool read_other(struct prescan *ps)
{
	char c = ps->t[ps->i];
	bool escapes;

	if (!ps->cur || ps->cur->kind == DECL_IMPORT)
		return false;
	if (c == '"') {
		uint32_t end = string_end(ps, &escapes);

		if (!end)
			return false;
		ps->i = ps->last_end = end;
		return true;
	}
	if (c == '{' || c == '(' || c == '[')
		ps->depth++;
	else if (c == '}' || c == ')' || c == ']') {
		if (ps->depth == 0)
			return false;
		ps->depth--;
	}
	if (c != ';' || ps->depth > 0)	/* a ';' between declarations ends none */
		ps->last_end = ps->i + 1;
	ps->i++;
	return true;
}

/*
 * Inside brackets only brackets, strings and comments matter: keywords
 * there are keys, and the closing bracket ends the last token. Brackets
 * and division signs are settled here, in one tight loop (a stdlib body
 * is mostly shapes like [batch, seq / cp / sp, hidden]); a string or a
 * comment goes back to the caller. An unbalanced ')' is left for it too.
 */
static void skip_inside(struct prescan *ps)
{
	/* '\0' too: the text ends in one (a valid source holds no other), so
	 * the tight loop needs no bounds check */
	static const bool special[256] = {
		['{'] = true, ['}'] = true, ['('] = true, [')'] = true, ['['] = true, [']'] = true,
		['"'] = true, ['/'] = true, ['#'] = true, ['\0'] = true,
	};
	const char *t = ps->t;
	uint32_t i = ps->i, n = ps->n, last = ps->last_end;
	unsigned depth = ps->depth;

	while (i < n && depth > 0) {
		while (!special[(unsigned char)t[i]])
			i++;
		if (i >= n)
			break;
		assert(t[i] != '\0');
		char c = t[i];

		if (c == '{' || c == '(' || c == '[') {
			depth++;
		} else if (c == '}' || c == ')' || c == ']') {
			depth--;
			last = i + 1;
		} else if (c != '/' || (i + 1 < n && (t[i + 1] == '/' || t[i + 1] == '*'))) {
			break;	/* a string or a comment */
		}
		i++;
	}
	ps->i = i;
	ps->depth = depth;
	ps->last_end = last;
}

struct file_ast *lazy_prescan(struct arena *a, struct interner *in, const struct src_file *f)
{
	struct file_ast *ast = ARENA_NEW(a, struct file_ast);
	struct prescan ps = { .arena = a, .in = in, .f = f, .t = f->text, .n = f->len,
			      .tail = &ast->decls };

	ast->file = f->id;
	ps.has_cr = memchr(ps.t, '\r', ps.n) != NULL;
	while (ps.i < ps.n) {
		if (ps.depth > 0)
			skip_inside(&ps);
		if (ps.i == ps.n)
			break;
		char c = ps.t[ps.i];
		bool comment;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			ps.i++;
			continue;
		}
		if (!skip_comment(&ps, &comment))
			return NULL;
		if (comment)
			continue;
		if (!(word_start((unsigned char)c) ? read_word(&ps) : read_other(&ps)))
			return NULL;
	}
	if (ps.depth != 0)
		return NULL;
	close_decl(&ps);
	return ast;
}

struct file_ast *lazy_from_index(struct arena *a, struct interner *in, const struct src_file *f,
				 const struct stdlib_decl *index, size_t n)
{
	struct file_ast *ast = ARENA_NEW(a, struct file_ast);
	struct decl **tail = &ast->decls;

	ast->file = f->id;
	for (size_t i = 0; i < n; i++) {
		const struct stdlib_decl *x = &index[i];
		struct decl *d = ast_new_decl(a, (enum decl_kind)x->kind, (struct loc){ f->id, x->start, x->end });
		struct loc at = { f->id, x->name_start, x->name_end };

		if (x->kind == DECL_IMPORT) {	/* the path's text, without its quotes */
			d->import.path = arena_strndup(a, f->text + at.start + 1, at.end - at.start - 2);
			d->import.path_loc = at;
		} else {
			d->name = intern(in, x->name, strlen(x->name));
			d->name_loc = at;
		}
		*tail = d;
		tail = &d->next;
	}
	return ast;
}

/* ---- parsing what is reached -------------------------------------------- */

/* Append the list @d to *@tail; returns the new end. */
static struct decl **append(struct decl **tail, struct decl *d)
{
	*tail = d;
	while (*tail)
		tail = &(*tail)->next;
	return tail;
}

/* Parse each reached declaration of @ast from its keyword to its last
 * token; imports and the unreached stay as prescanned. */
static void parse_reached(struct arena *a, struct interner *in, struct diag_engine *de,
			  const struct src_file *f, struct file_ast *ast, const struct reach *r,
			  struct import_cache *cache)
{
	struct decl *out = NULL, **tail = &out;
	unsigned nerrors = 0;

	/* the index, when there is one, has an entry per stub, in order */
	const struct stdlib_decl *x = ast->verified ? ast->index : NULL;

	for (struct decl *d = ast->decls, *next; d; d = next, x = x ? x + 1 : NULL) {
		next = d->next;
		d->next = NULL;
		if (d->kind == DECL_IMPORT || !reach_wants(r, d)) {
			tail = append(tail, d);
			continue;
		}
		unsigned ne;

		if (ast->verified) {
			tail = append(tail, import_cache_parse(cache, a, in, de, f, x, d->loc.start, d->loc.end, &ne));
		} else {
			struct file_ast *one = parse_file_range(a, in, de, f, d->loc.start, d->loc.end);

			ne = one->nerrors;
			tail = append(tail, one->decls);
		}
		nerrors += ne;
	}
	ast->decls = out;
	ast->nerrors = nerrors;
}

void lazy_parse_reached(struct arena *a, struct interner *in, struct diag_engine *de,
			const struct src_table *src, struct program *p, struct file_ast **asts,
			size_t n, const struct reach_extra *x)
{
	p->reach = reach_compute(a, in, src, p, x);
	for (size_t i = 0; i < n; i++)
		parse_reached(a, in, de, src_get(src, asts[i]->file), asts[i], p->reach, p->cache);
}
