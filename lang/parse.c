/* SPDX-License-Identifier: MIT */
/*
 * parse.c - the parse driver and the node builders the grammar calls.
 *
 * parse_file() runs the reentrant flex scanner over a loaded source file
 * and the pure bison parser over its tokens. Between the two sits
 * parse_next_token(), which decides which newlines matter: a newline ends
 * an item only where an item can end, so it is dropped after an opening
 * bracket, a comma, `=`, `:` or a binary operator, and before a closing
 * bracket or `else`; runs of newlines fold into one.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/parse.h"
#include "lang/parse_build.h"
#include "lang/parser.tab.h"
#include "lang/source.h"

/* flex's entry points (prefix mlex_); its header is not included so that
 * no flex type escapes this file. */
int mlex_lex(YYSTYPE *lval, struct loc *lloc, void *scanner);
int mlex_lex_init_extra(struct lex_state *extra, void **scanner);
void *mlex__scan_bytes(const char *bytes, int len, void *scanner);
void mlex__delete_buffer(void *buf, void *scanner);
int mlex_lex_destroy(void *scanner);
int yyparse(struct parse_ctx *pc);
/* build/lang/parser_nolac.tab.c: parser.y without parse.lac (Makefile) */
int parse_yyparse_nolac(struct parse_ctx *pc);

/* A newline right after one of these tokens cannot end an item. */
static bool continues_line(int kind)
{
	switch (kind) {
	case YYEMPTY: case EOL: case '{': case '(': case '[': case ',': case ';':
	case '=': case ':': case '+': case '-': case '*': case '/': case '<': case '>':
	case '!': case '|': case EQ: case NE: case LE: case GE: case AND: case OR:
		return true;
	default:
		return false;
	}
}

/* A newline right before one of these is not a separator either. */
static bool continues_before(int kind)
{
	return kind == '}' || kind == ')' || kind == ']' || kind == ELSE || kind == YYEOF;
}

static int scan(struct parse_ctx *pc, YYSTYPE *lval, struct loc *lloc)
{
	if (pc->pending.kind != YYEMPTY) {
		int k = pc->pending.kind;

		lval->text = pc->pending.val.text;
		*lloc = pc->pending.loc;
		pc->pending.kind = YYEMPTY;
		return k;
	}
	/* flex sets no location at the end of input: give it an empty range
	 * at the cursor, where "unexpected end of file" belongs. */
	lloc->file = pc->src->id;
	lloc->start = lloc->end = pc->lex.offset;
	if (diag_too_many(pc->diag) || pc->lex.stopped)
		return YYEOF;
	int k = mlex_lex(lval, lloc, pc->scanner);

	if (k != YYEOF && ++pc->ntokens > PARSE_MAX_TOKENS) {
		/* Memory and time after the parser grow with the token count, not
		 * the byte count: past this, stop as nesting-depth does. */
		diag_error(pc->diag, DIAG_FILE_TOO_LARGE, *lloc,
			   "file has more than %d tokens; the limit is %d (split it into files that import each other)",
			   PARSE_MAX_TOKENS, PARSE_MAX_TOKENS);
		pc->lex.stopped = true;
		return YYEOF;
	}
	return k;
}

int parse_next_token(YYSTYPE *lval, struct loc *lloc, struct parse_ctx *pc)
{
	int k;

	do {
		k = scan(pc, lval, lloc);
	} while (k == EOL && continues_line(pc->last_kind));
	if (k == EOL) {
		YYSTYPE v;
		struct loc l;
		int next;

		do {
			next = scan(pc, &v, &l);
		} while (next == EOL);
		if (continues_before(next)) {
			k = next;
			*lval = v;
			*lloc = l;
		} else {
			pc->pending.kind = next;
			pc->pending.val.text = v.text;
			pc->pending.loc = l;
		}
	}
	pc->last_kind = k;
	return k;
}

struct file_ast *parse_file(struct arena *a, struct interner *in, struct diag_engine *de,
			    const struct src_file *f)
{
	return parse_file_range(a, in, de, f, 0, f->len);
}

static struct file_ast *parse_range(struct arena *a, struct interner *in, struct diag_engine *de,
				    const struct src_file *f, uint32_t start, uint32_t end, bool lac)
{
	struct parse_ctx *pc = xcalloc(1, sizeof *pc);
	struct file_ast *out = ARENA_NEW(a, struct file_ast);

	pc->arena = a;
	pc->diag = de;
	pc->src = f;
	pc->decls_tail = &pc->decls;
	pc->last_kind = YYEMPTY;
	pc->pending.kind = YYEMPTY;
	pc->lex = (struct lex_state){ .arena = a, .interner = in, .diag = de, .src = f,
				      .offset = start };
	if (mlex_lex_init_extra(&pc->lex, &pc->scanner) != 0)
		xdie_oom();

	assert(start <= end && end <= f->len);
	void *buf = mlex__scan_bytes(f->text + start, (int)(end - start), pc->scanner);

	if (lac)
		yyparse(pc);
	else
		parse_yyparse_nolac(pc);
	mlex__delete_buffer(buf, pc->scanner);
	mlex_lex_destroy(pc->scanner);
	out->file = f->id;
	out->decls = pc->decls;
	out->nerrors = pc->nerrors;
	free(pc);
	return out;
}

struct file_ast *parse_file_range(struct arena *a, struct interner *in, struct diag_engine *de,
				  const struct src_file *f, uint32_t start, uint32_t end)
{
	return parse_range(a, in, de, f, start, end, true);
}

struct file_ast *parse_file_range_clean(struct arena *a, struct interner *in, struct diag_engine *de,
					const struct src_file *f, uint32_t start, uint32_t end)
{
	return parse_range(a, in, de, f, start, end, false);
}

/* ---- declarations ---- */

void parse_add_decl(struct parse_ctx *pc, struct decl *d)
{
	if (!d)
		return;
	*pc->decls_tail = d;
	pc->decls_tail = &d->next;
}

static struct decl *named_decl(struct parse_ctx *pc, enum decl_kind kind, struct loc loc,
			       const char *name, struct loc name_loc)
{
	struct decl *d = ast_new_decl(pc->arena, kind, loc);

	d->name = name;
	d->name_loc = name_loc;
	return d;
}

struct decl *parse_import(struct parse_ctx *pc, struct loc loc, const char *path, struct loc path_loc)
{
	struct decl *d = ast_new_decl(pc->arena, DECL_IMPORT, loc);

	d->import.path = path;
	d->import.path_loc = path_loc;
	return d;
}

struct decl *parse_let(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
		       struct expr *value)
{
	struct decl *d = named_decl(pc, DECL_LET, loc, name, name_loc);

	d->let.value = value;
	return d;
}

struct decl *parse_record(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			  struct loc name_loc, const char *base, struct loc base_loc,
			  struct field *fields)
{
	struct decl *d = named_decl(pc, (enum decl_kind)kind, loc, name, name_loc);

	d->record.base = base;
	d->record.base_loc = base_loc;
	d->record.fields = fields;
	return d;
}

struct decl *parse_template(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			    struct loc name_loc, struct param *params, bool has_params,
			    struct stmt *body)
{
	struct decl *d = named_decl(pc, (enum decl_kind)kind, loc, name, name_loc);

	d->templ.params = params;
	d->templ.has_params = has_params;
	d->templ.body = body;
	return d;
}

struct decl *parse_alias(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			 struct loc name_loc, struct expr *value)
{
	struct decl *d = named_decl(pc, (enum decl_kind)kind, loc, name, name_loc);

	d->templ.alias = value;
	return d;
}

/* ---- lists: circular while building, cut by parse_close_* ---- */

#define DEFINE_LIST(type, append, close)                          \
	struct type *append(struct type *last, struct type *x)    \
	{                                                         \
		if (!x)                                           \
			return last;                              \
		if (!last) {                                      \
			x->next = x;                              \
			return x;                                 \
		}                                                 \
		x->next = last->next;                             \
		last->next = x;                                   \
		return x;                                         \
	}                                                         \
	struct type *close(struct type *last)                     \
	{                                                         \
		if (!last)                                        \
			return NULL;                              \
		struct type *first = last->next;                  \
		last->next = NULL;                                \
		return first;                                     \
	}

DEFINE_LIST(field, parse_append_field, parse_close_fields)
DEFINE_LIST(param, parse_append_param, parse_close_params)
DEFINE_LIST(stmt, parse_append_stmt, parse_close_stmts)
DEFINE_LIST(attr, parse_append_attr, parse_close_attrs)
DEFINE_LIST(item, parse_append_item, parse_close_items)
DEFINE_LIST(arg, parse_append_arg, parse_close_args)

/* ---- fields, params, types ---- */

struct field *parse_field(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
			  struct expr *value, struct field *sub)
{
	struct field *f = ARENA_NEW(pc->arena, struct field);

	f->name = name;
	f->name_loc = name_loc;
	f->loc = loc;
	f->value = value;
	f->sub = sub;
	return f;
}

struct param *parse_param(struct parse_ctx *pc, const char *name, struct loc name_loc,
			  struct type_build *type, struct loc type_loc, struct expr *def)
{
	struct param *p = ARENA_NEW(pc->arena, struct param);

	p->name = name;
	p->name_loc = name_loc;
	p->nalts = type->n;
	p->type_alts = ARENA_NEW_ARRAY(pc->arena, const char *, type->n);
	p->type_locs = ARENA_NEW_ARRAY(pc->arena, struct loc, type->n);
	memcpy(p->type_alts, type->alts, type->n * sizeof *p->type_alts);
	memcpy(p->type_locs, type->locs, type->n * sizeof *p->type_locs);
	p->type_loc = type_loc;
	p->def = def;
	if (type == &pc->type)
		pc->type_busy = false;
	return p;
}

struct type_build *parse_type_new(struct parse_ctx *pc, const char *name, struct loc loc)
{
	struct type_build *t = pc->type_busy ? ARENA_NEW(pc->arena, struct type_build) : &pc->type;

	pc->type_busy = true;
	t->alts[0] = name;
	t->locs[0] = loc;
	t->n = 1;
	return t;
}

struct type_build *parse_type_add(struct parse_ctx *pc, struct type_build *t, const char *name,
				  struct loc loc)
{
	unsigned max = sizeof t->alts / sizeof t->alts[0];

	if (t->n == max) {
		diag_error(pc->diag, DIAG_SYNTAX, loc, "an enum type has at most %u values", max);
		return t;
	}
	t->alts[t->n] = name;
	t->locs[t->n++] = loc;
	return t;
}
