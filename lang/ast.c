/* SPDX-License-Identifier: MIT */
/*
 * ast.c - node constructors and the --dump-ast printer. Constructors only
 * allocate and fill; they never check or evaluate.
 */
#include <inttypes.h>

#include "lang/arena.h"
#include "lang/ast.h"

const char *const ast_expr_kind_name[EXPR__COUNT] = {
#define EXPR(kind, example) #kind,
#include "lang/ast.def"
#undef EXPR
};

const char *const ast_decl_keyword[DECL__COUNT] = {
#define DECL(kind, keyword) keyword,
#include "lang/ast.def"
#undef DECL
};

const char *const ast_tensor_keyword[TENSOR__COUNT] = {
#define TENSOR(kind, keyword) keyword,
#include "lang/ast.def"
#undef TENSOR
};

const char *ast_binop_spelling(enum ast_binop op)
{
	static const char *const s[] = {
		[AST_ADD] = "+", [AST_SUB] = "-", [AST_MUL] = "*", [AST_DIV] = "/",
		[AST_EQ] = "==", [AST_NE] = "!=", [AST_LT] = "<", [AST_LE] = "<=",
		[AST_GT] = ">", [AST_GE] = ">=", [AST_AND] = "&&", [AST_OR] = "||",
	};
	return s[op];
}

struct expr *ast_new_expr(struct arena *a, enum expr_kind kind, struct loc loc)
{
	struct expr *e = ARENA_NEW(a, struct expr);

	e->kind = kind;
	e->loc = loc;
	e->depth = 1;
	return e;
}

void ast_add_child_depth(struct expr *e, const struct expr *child)
{
	if (child && child->depth >= e->depth)
		e->depth = child->depth + 1;
}

struct expr *ast_new_binary(struct arena *a, enum ast_binop op, struct loc op_loc,
			    struct expr *lhs, struct expr *rhs)
{
	struct expr *e = ast_new_expr(a, EXPR_BINARY, loc_join(lhs->loc, rhs->loc));

	e->binary.op = op;
	e->binary.op_loc = op_loc;
	e->binary.lhs = lhs;
	e->binary.rhs = rhs;
	ast_add_child_depth(e, lhs);
	ast_add_child_depth(e, rhs);
	return e;
}

struct expr *ast_new_name(struct arena *a, struct loc loc, const char *name)
{
	struct expr *e = ast_new_expr(a, EXPR_NAME, loc);

	e->name.name = name;
	return e;
}

struct stmt *ast_new_stmt(struct arena *a, enum stmt_kind kind, struct loc loc)
{
	struct stmt *s = ARENA_NEW(a, struct stmt);

	s->kind = kind;
	s->loc = loc;
	return s;
}

struct decl *ast_new_decl(struct arena *a, enum decl_kind kind, struct loc loc)
{
	struct decl *d = ARENA_NEW(a, struct decl);

	d->kind = kind;
	d->loc = loc;
	return d;
}

/* ---- dump: one node per line, children indented by two spaces ---- */

static void dump_expr(FILE *out, const struct expr *e);

static void dump_args(FILE *out, const struct arg *a)
{
	for (; a; a = a->next) {
		if (a->name)
			fprintf(out, "%s = ", a->name);
		dump_expr(out, a->value);
		if (a->next)
			fputs(", ", out);
	}
}

static void dump_expr(FILE *out, const struct expr *e)
{
	if (!e) {
		fputs("<error>", out);
		return;
	}
	switch (e->kind) {
	case EXPR_NUMBER: fputs(e->number.text, out); break;
	case EXPR_QUANTITY: fprintf(out, "%s %s", e->quantity.number->number.text, e->quantity.unit); break;
	case EXPR_PERCENT: fprintf(out, "%s%%", e->percent.number->number.text); break;
	case EXPR_STRING: fprintf(out, "\"%s\"", e->string.value); break;
	case EXPR_BOOL: fputs(e->boolean.value ? "true" : "false", out); break;
	case EXPR_NAME: fputs(e->name.name, out); break;
	case EXPR_MEMBER: dump_expr(out, e->member.object); fprintf(out, ".%s", e->member.field); break;
	case EXPR_UNARY:
		fputs(e->unary.op == AST_NEG ? "(-" : "(!", out);
		dump_expr(out, e->unary.operand);
		fputc(')', out);
		break;
	case EXPR_BINARY:
		fputc('(', out);
		dump_expr(out, e->binary.lhs);
		fprintf(out, " %s ", ast_binop_spelling(e->binary.op));
		dump_expr(out, e->binary.rhs);
		fputc(')', out);
		break;
	case EXPR_CALL: dump_expr(out, e->call.callee); fputc('(', out); dump_args(out, e->call.args); fputc(')', out); break;
	case EXPR_LIST:
		fputc('[', out);
		for (const struct item *it = e->list.items; it; it = it->next) {
			dump_expr(out, it->value);
			if (it->next)
				fputs(", ", out);
		}
		fputc(']', out);
		break;
	case EXPR_CLUSTER:
		if (e->cluster.nodes)
			fprintf(out, "%s x ", e->cluster.nodes->number.text);
		fprintf(out, "%s x %s", e->cluster.gpus->number.text, e->cluster.gpu);
		break;
	case EXPR__COUNT: break;
	}
}

static void indent(FILE *out, int depth)
{
	fprintf(out, "%*s", depth * 2, "");
}

static void dump_fields(FILE *out, const struct field *f, int depth)
{
	for (; f; f = f->next) {
		indent(out, depth);
		if (f->sub || !f->value) {
			fprintf(out, "%s {\n", f->name);
			dump_fields(out, f->sub, depth + 1);
			indent(out, depth);
			fputs("}\n", out);
			continue;
		}
		fprintf(out, "%s = ", f->name);
		dump_expr(out, f->value);
		fputc('\n', out);
	}
}

static void dump_stmts(FILE *out, const struct stmt *s, int depth)
{
	for (; s; s = s->next) {
		indent(out, depth);
		switch (s->kind) {
		case STMT_TENSOR:
			fprintf(out, "%s %s : ", ast_tensor_keyword[s->tensor.kind], s->tensor.name);
			dump_expr(out, s->tensor.shape);
			for (const struct attr *a = s->tensor.attrs; a; a = a->next) {
				fprintf(out, " %s", a->name);
				if (a->has_parens) {
					fputc('(', out);
					dump_args(out, a->args);
					fputc(')', out);
				}
			}
			fputc('\n', out);
			break;
		case STMT_INSTANCE: dump_expr(out, s->instance.call); fputc('\n', out); break;
		case STMT_LET: fprintf(out, "let %s = ", s->let.name); dump_expr(out, s->let.value); fputc('\n', out); break;
		case STMT_WARN: fprintf(out, "warn \"%s\"\n", s->warn.message); break;
		case STMT_REPEAT:
			fputs("repeat ", out);
			if (s->repeat.index)
				fprintf(out, "%s in ", s->repeat.index);
			dump_expr(out, s->repeat.count);
			fputs(" {\n", out);
			dump_stmts(out, s->repeat.body, depth + 1);
			indent(out, depth);
			fputs("}\n", out);
			break;
		case STMT_IF:
			fputs("if ", out);
			dump_expr(out, s->if_.cond);
			fputs(" {\n", out);
			dump_stmts(out, s->if_.then_body, depth + 1);
			indent(out, depth);
			fputs("} else {\n", out);
			dump_stmts(out, s->if_.else_body, depth + 1);
			indent(out, depth);
			fputs("}\n", out);
			break;
		case STMT__COUNT: break;
		}
	}
}

static void dump_params(FILE *out, const struct param *p)
{
	fputc('(', out);
	for (; p; p = p->next) {
		fprintf(out, "%s: ", p->name);
		for (unsigned i = 0; i < p->nalts; i++)
			fprintf(out, "%s%s", i ? " | " : "", p->type_alts[i]);
		if (p->def) {
			fputs(" = ", out);
			dump_expr(out, p->def);
		}
		if (p->next)
			fputs(", ", out);
	}
	fputc(')', out);
}

void ast_dump(FILE *out, const struct file_ast *f)
{
	for (const struct decl *d = f->decls; d; d = d->next) {
		fputs(ast_decl_keyword[d->kind], out);
		switch (d->kind) {
		case DECL_IMPORT: fprintf(out, " \"%s\"\n", d->import.path); break;
		case DECL_LET: fprintf(out, " %s = ", d->name); dump_expr(out, d->let.value); fputc('\n', out); break;
		case DECL_GPU: case DECL_PRECISION: case DECL_TRAIN:
			fprintf(out, " %s", d->name);
			if (d->record.base)
				fprintf(out, " : %s", d->record.base);
			fputs(" {\n", out);
			dump_fields(out, d->record.fields, 1);
			fputs("}\n", out);
			break;
		case DECL_LAYER: case DECL_MODEL: case DECL_OPTIMIZER:
			fprintf(out, " %s", d->name);
			if (d->templ.alias) {
				fputs(" = ", out);
				dump_expr(out, d->templ.alias);
				fputc('\n', out);
				break;
			}
			if (d->templ.has_params)
				dump_params(out, d->templ.params);
			fputs(" {\n", out);
			dump_stmts(out, d->templ.body, 1);
			fputs("}\n", out);
			break;
		case DECL__COUNT: break;
		}
	}
}
