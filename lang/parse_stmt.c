/* SPDX-License-Identifier: MIT */
/*
 * parse_stmt.c - node builders for body statements and expressions,
 * called from parser.y's actions. They allocate and link; the checks are
 * that the word between a cluster's counts is `x`, which the grammar
 * cannot express without reserving the letter, and that no expression is
 * deeper than PARSE_MAX_EXPR_DEPTH.
 */
#include <string.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/parse_build.h"

static struct expr *new_call(struct parse_ctx *pc, struct loc loc, struct expr *callee,
			     struct arg *args);

struct stmt *parse_instance(struct parse_ctx *pc, struct loc loc, struct expr *callee, struct arg *args)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_INSTANCE, loc);

	/* Not depth-capped: a statement is never an operand, so the call can
	 * be at most one node deeper than its arguments, and cutting it would
	 * leave an instance that is not a call. */
	s->instance.call = new_call(pc, loc, callee, args);
	return s;
}

struct stmt *parse_repeat(struct parse_ctx *pc, struct loc loc, struct expr *count, struct stmt *body)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_REPEAT, loc);

	s->repeat.count = count;
	s->repeat.body = body;
	return s;
}

/* `repeat i in layers { ... }`: `in` is a word, not a keyword, so that
 * no existing name stops working. */
struct stmt *parse_repeat_index(struct parse_ctx *pc, struct loc loc, const char *index, struct loc index_loc,
				const char *in, struct loc in_loc, struct expr *count, struct stmt *body)
{
	struct stmt *s = parse_repeat(pc, loc, count, body);

	if (strcmp(in, "in") != 0)
		diag_note(diag_error(pc->diag, DIAG_SYNTAX, in_loc,
				     "unexpected name '%s' after 'repeat %s', expected 'in'", in, index),
			  NO_LOC, "an indexed repeat is written 'repeat i in COUNT { ... }'");
	s->repeat.index = index;
	s->repeat.index_loc = index_loc;
	return s;
}

struct stmt *parse_if(struct parse_ctx *pc, struct loc loc, struct expr *cond, struct stmt *then_body,
		      struct stmt *else_part)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_IF, loc);

	s->if_.cond = cond;
	s->if_.then_body = then_body;
	s->if_.else_body = else_part;
	return s;
}

/* `else { body }`: kept as a statement list; `else if` is an IF statement. */
struct stmt *parse_else_body(struct parse_ctx *pc, struct loc loc, struct stmt *body)
{
	(void)pc;
	(void)loc;
	return body;
}

struct stmt *parse_stmt_let(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
			    struct expr *value)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_LET, loc);

	s->let.name = name;
	s->let.name_loc = name_loc;
	s->let.value = value;
	return s;
}

struct stmt *parse_tensor(struct parse_ctx *pc, struct loc loc, int kind, const char *name,
			  struct loc name_loc, struct expr *shape, struct attr *attrs)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_TENSOR, loc);

	s->tensor.kind = (enum tensor_kind)kind;
	s->tensor.name = name;
	s->tensor.name_loc = name_loc;
	s->tensor.shape = shape;
	s->tensor.attrs = attrs;
	return s;
}

struct attr *parse_attr(struct parse_ctx *pc, struct loc loc, const char *name, struct arg *args,
			bool has_parens)
{
	struct attr *a = ARENA_NEW(pc->arena, struct attr);

	a->name = name;
	a->loc = loc;
	a->args = args;
	a->has_parens = has_parens;
	return a;
}

/* The first byte of @l, or its last one (@last). */
static struct loc loc_byte(struct loc l, bool last)
{
	if (l.end > l.start) {
		if (last)
			l.start = l.end - 1;
		else
			l.end = l.start + 1;
	}
	return l;
}

/*
 * Trees are kept within PARSE_MAX_EXPR_DEPTH because chains such as
 * 1+1+1+... or a.b.c... need no brackets, so PARSE_MAX_DEPTH does not
 * bound them, and ast_dump and the evaluator recurse on them. True if @e
 * is past the limit. It is reported only where it first crossed it: a
 * node built on top of a cut one is deeper still and needs no second
 * error for the same chain.
 */
static bool too_deep(struct parse_ctx *pc, const struct expr *e, struct loc at)
{
	if (e->depth <= PARSE_MAX_EXPR_DEPTH)
		return false;
	if (e->depth == PARSE_MAX_EXPR_DEPTH + 1)
		diag_note(diag_error(pc->diag, DIAG_NESTING_DEPTH, at,
				     "expression nested more than %d levels deep",
				     PARSE_MAX_EXPR_DEPTH),
			  NO_LOC, "split it into parts with 'let'");
	return true;
}

/* @keep (a child of a too-deep node, itself within the limit) takes the
 * node's place; its depth is raised past the limit to mark the cut. */
static struct expr *cut(struct expr *keep)
{
	keep->depth = PARSE_MAX_EXPR_DEPTH + 1;
	return keep;
}

struct expr *parse_binary(struct parse_ctx *pc, int op, struct loc op_loc, struct expr *lhs,
			  struct expr *rhs)
{
	struct expr *e = ast_new_binary(pc->arena, (enum ast_binop)op, op_loc, lhs, rhs);

	return too_deep(pc, e, op_loc) ? cut(lhs) : e;
}

struct expr *parse_unary(struct parse_ctx *pc, struct loc loc, int op, struct expr *operand)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_UNARY, loc);

	e->unary.op = (enum ast_unop)op;
	e->unary.operand = operand;
	ast_add_child_depth(e, operand);
	return too_deep(pc, e, loc_byte(loc, false)) ? cut(operand) : e;
}

struct expr *parse_member(struct parse_ctx *pc, struct loc loc, struct expr *obj, const char *field,
			  struct loc field_loc)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_MEMBER, loc);

	e->member.object = obj;
	e->member.field = field;
	e->member.field_loc = field_loc;
	ast_add_child_depth(e, obj);
	return too_deep(pc, e, field_loc) ? cut(obj) : e;
}

static struct expr *new_call(struct parse_ctx *pc, struct loc loc, struct expr *callee,
			     struct arg *args)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_CALL, loc);

	e->call.callee = callee;
	e->call.args = args;
	ast_add_child_depth(e, callee);
	for (const struct arg *a = args; a; a = a->next)
		ast_add_child_depth(e, a->value);
	return e;
}

/* A call too deep is reported at its closing ')'. */
struct expr *parse_call(struct parse_ctx *pc, struct loc loc, struct expr *callee, struct arg *args)
{
	struct expr *e = new_call(pc, loc, callee, args);

	return too_deep(pc, e, loc_byte(loc, true)) ? cut(callee) : e;
}

struct expr *parse_number(struct parse_ctx *pc, struct loc loc, const char *text)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_NUMBER, loc);

	e->number.text = text;
	return e;
}

struct expr *parse_quantity(struct parse_ctx *pc, struct loc loc, const char *num, struct loc num_loc,
			    const char *unit, struct loc unit_loc)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_QUANTITY, loc);

	e->quantity.number = parse_number(pc, num_loc, num);
	ast_add_child_depth(e, e->quantity.number);
	e->quantity.unit = unit;
	e->quantity.unit_loc = unit_loc;
	return e;
}

struct expr *parse_percent(struct parse_ctx *pc, struct loc loc, const char *num, struct loc num_loc)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_PERCENT, loc);

	e->percent.number = parse_number(pc, num_loc, num);
	ast_add_child_depth(e, e->percent.number);
	return e;
}

static void expect_x(struct parse_ctx *pc, const char *x, struct loc x_loc)
{
	if (strcmp(x, "x") != 0)
		diag_note(diag_error(pc->diag, DIAG_SYNTAX, x_loc,
				     "unexpected name '%s' in a cluster, expected 'x'", x),
			  NO_LOC, "a cluster is written 'GPUS x NAME' or 'NODES x GPUS x NAME'");
}

struct expr *parse_cluster_nodes(struct parse_ctx *pc, const char *num, struct loc num_loc,
				 const char *x, struct loc x_loc)
{
	expect_x(pc, x, x_loc);
	return parse_number(pc, num_loc, num);
}

struct expr *parse_cluster(struct parse_ctx *pc, struct loc loc, struct expr *nodes, const char *num,
			   struct loc num_loc, const char *x, struct loc x_loc, const char *gpu,
			   struct loc gpu_loc)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_CLUSTER, loc);

	expect_x(pc, x, x_loc);
	e->cluster.nodes = nodes;
	e->cluster.gpus = parse_number(pc, num_loc, num);
	ast_add_child_depth(e, nodes);
	ast_add_child_depth(e, e->cluster.gpus);
	e->cluster.gpu = gpu;
	e->cluster.gpu_loc = gpu_loc;
	return e;
}

struct expr *parse_string_lit(struct parse_ctx *pc, struct loc loc, const char *value)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_STRING, loc);

	e->string.value = value;
	return e;
}

struct expr *parse_bool(struct parse_ctx *pc, struct loc loc, bool value)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_BOOL, loc);

	e->boolean.value = value;
	return e;
}

/* A list too deep loses its items: it must stay a list, because a
 * tensor's shape is one. */
struct expr *parse_list(struct parse_ctx *pc, struct loc loc, struct item *items)
{
	struct expr *e = ast_new_expr(pc->arena, EXPR_LIST, loc);

	e->list.items = items;
	for (struct item *it = items; it; it = it->next) {
		e->list.count++;
		ast_add_child_depth(e, it->value);
	}
	if (too_deep(pc, e, loc_byte(loc, false))) {
		e->list.items = NULL;
		e->list.count = 0;
		return cut(e);
	}
	return e;
}

struct item *parse_item(struct parse_ctx *pc, struct expr *value)
{
	struct item *it = ARENA_NEW(pc->arena, struct item);

	it->value = value;
	return it;
}

struct arg *parse_arg(struct parse_ctx *pc, const char *name, struct loc name_loc, struct expr *value)
{
	struct arg *a = ARENA_NEW(pc->arena, struct arg);

	a->name = name;
	a->name_loc = name_loc;
	a->value = value;
	return a;
}

struct stmt *parse_warn(struct parse_ctx *pc, struct loc loc, const char *message, struct loc message_loc)
{
	struct stmt *s = ast_new_stmt(pc->arena, STMT_WARN, loc);

	s->warn.message = message;
	s->warn.message_loc = message_loc;
	return s;
}
