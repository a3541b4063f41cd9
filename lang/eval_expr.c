/* SPDX-License-Identifier: MIT */
/*
 * eval_expr.c - expressions: literals, names, operators, calls.
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/source.h"
#include "lang/strbuf.h"

static struct value number(struct eval *ev, const struct expr *lit)
{
	struct value v = { .kind = VAL_NUM, .dim = DIM_SCALAR, .loc = lit->loc, .origin = lit->loc };
	const char *t = lit->number.text;
	enum num_status st = num_parse(t, strlen(t), &v.num);

	if (st != NUM_OK) {
		eval_error(ev, DIAG_OVERFLOW, lit->loc, "number '%s' is out of range", t);
		return val_error(lit->loc);
	}
	return v;
}

/* `seq_len = 4k`: k is no unit; 4k tokens is 4096 (4 x 1024) in ML use. */
static void note_thousands(struct diag *d, const char *unit, struct num n)
{
	struct num full;
	char a[64], b[64];

	if (strcmp(unit, "k") && strcmp(unit, "K"))
		return;
	if (num_mul(n, num_from_int(1024), &full) != NUM_OK || !num_is_int(full))
		return;
	diag_note(d, NO_LOC, "did you mean %s? 'k' is not a unit: write the count out (%s x 1024)",
		  num_format(full, a, sizeof a, 0), num_format(n, b, sizeof b, 6));
}

static struct value quantity(struct eval *ev, const struct expr *e)
{
	struct value v = number(ev, e->quantity.number);
	struct unit_ref u;

	v.loc = v.origin = e->loc;
	if (v.kind == VAL_ERROR)
		return v;
	if (!unit_lookup_in(ev->interner, e->quantity.unit, &u)) {
		const char *s = unit_suggest(e->quantity.unit);
		struct diag *d = eval_error(ev, DIAG_UNKNOWN_UNIT, e->quantity.unit_loc,
					    "unknown unit '%s'", e->quantity.unit);

		if (s)
			diag_note(d, NO_LOC, "did you mean '%s'?", s);
		else
			note_thousands(d, e->quantity.unit, v.num);
		return val_error(e->loc);
	}
	if (num_mul(v.num, u.factor, &v.num) != NUM_OK) {
		eval_error(ev, DIAG_OVERFLOW, e->loc, "quantity is out of range");
		return val_error(e->loc);
	}
	v.dim = u.dim;
	return v;
}

static struct value percent(struct eval *ev, const struct expr *e)
{
	struct value v = number(ev, e->percent.number);

	v.loc = v.origin = e->loc;
	if (v.kind == VAL_NUM && num_div(v.num, num_from_int(100), &v.num) != NUM_OK)
		return val_error(e->loc);
	return v;
}

/* @e's source text, or NULL where it is long or not at hand. */
static const char *expr_text(struct eval *ev, const struct expr *e, char *buf, size_t n)
{
	const struct src_file *f = ev->src ? src_get(ev->src, e->loc.file) : NULL;
	uint32_t len = e->loc.end - e->loc.start;

	if (!f || len == 0 || len >= n)
		return NULL;
	memcpy(buf, f->text + e->loc.start, len);
	buf[len] = '\0';
	return buf;
}

/* The error names what the member was asked of: an undeclared word
 * (`bfloat16.size`, a framework's dtype spelling), a dtype, a declaration
 * or another value, never "this value". */
static void no_member(struct eval *ev, const struct expr *e, const struct value *obj)
{
	const char *f = e->member.field, *s;
	char type[64], text[64];
	struct diag *d;

	if (obj->kind == VAL_SYMBOL) {
		d = eval_error(ev, DIAG_UNKNOWN_FIELD, e->member.field_loc, "'%s' has no member '%s': it is "
			       "neither declared nor a dtype", obj->str, f);
		s = dtype_suggest(obj->str);
		if (!eval_note_undefined(ev, d, obj->str, DECL__COUNT) && s)
			diag_note(d, NO_LOC, "did you mean the dtype '%s'? (%s.%s)", s, s, f);
	} else if (obj->kind == VAL_DTYPE) {
		eval_error(ev, DIAG_UNKNOWN_FIELD, e->member.field_loc, "the dtype %s has no member '%s' "
			   "(a dtype has size and bits)", dtype_name(obj->dtype), f);
	} else if ((obj->kind == VAL_DECL || obj->kind == VAL_INSTANCE) && obj->decl && obj->decl->name) {
		eval_error(ev, DIAG_UNKNOWN_FIELD, e->member.field_loc, "the %s '%s' has no member '%s'",
			   ast_decl_keyword[obj->decl->kind], obj->decl->name, f);
	} else {
		const char *name = obj->label ? obj->label : expr_text(ev, e->member.object, text, sizeof text);

		eval_error(ev, DIAG_UNKNOWN_FIELD, e->member.field_loc, "the %s%s%s%s has no member '%s'",
			   eval_type_name(obj, type, sizeof type), name ? " '" : "", name ? name : "",
			   name ? "'" : "", f);
	}
}

static struct value member(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value obj = eval_expr(ev, env, e->member.object);
	const char *f = e->member.field;

	if (obj.kind == VAL_ERROR)
		return obj;
	if (obj.kind == VAL_DTYPE && (!strcmp(f, "size") || !strcmp(f, "bits"))) {
		struct value v = { .kind = VAL_NUM, .loc = e->loc, .origin = e->loc };

		v.num = dtype_size(obj.dtype);
		v.dim = DIM_BYTES;
		if (!strcmp(f, "bits")) {
			v.num = dtype_effective_bits(obj.dtype);
			v.dim = DIM_SCALAR;
		}
		return v;
	}
	if (obj.kind == VAL_DECL && obj.decl->kind <= DECL_TRAIN && obj.decl->kind >= DECL_GPU) {
		const struct field *fl = eval_record_field(ev->scope, obj.decl, f);

		if (fl)
			return eval_expr(ev, env, fl->value);
	}
	no_member(ev, e, &obj);
	return val_error(e->loc);
}

static struct value unary(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value v = eval_expr(ev, env, e->unary.operand);
	char b[64];

	if (v.kind == VAL_ERROR)
		return v;
	v.loc = v.origin = e->loc;
	v.label = NULL;
	if (e->unary.op == AST_NOT) {
		if (v.kind == VAL_BOOL) {
			v.b = !v.b;
			return v;
		}
	} else if (v.kind == VAL_NUM) {
		v.num = num_neg(v.num);
		return v;
	}
	eval_error(ev, DIAG_TYPE_MISMATCH, e->loc, "operator '%s' cannot apply to %s",
		   e->unary.op == AST_NOT ? "!" : "-", eval_type_name(&v, b, sizeof b));
	return val_error(e->loc);
}

static struct value mismatch(struct eval *ev, const struct expr *e, const struct value *l,
			     const struct value *r)
{
	char a[64], b[64], h[128];
	const char *verb = e->binary.op == AST_ADD ? "add" : e->binary.op == AST_SUB ? "subtract" : "compare";
	struct diag *d = eval_error(ev, DIAG_UNIT_MISMATCH, e->binary.op_loc, "cannot %s %s and %s",
				    verb, eval_type_name(l, a, sizeof a), eval_type_name(r, b, sizeof b));

	if (l->kind == VAL_NUM && r->kind == VAL_NUM) {
		const struct value *bare = dim_is_scalar(l->dim) ? l : r;
		const struct value *other = bare == l ? r : l;

		if (dim_is_scalar(bare->dim) && dim_fix_hint(other->dim, bare->dim, h, sizeof h))
			diag_note(d, bare->loc, "%s", h);
	}
	return val_error(e->loc);
}

/* heads / tp fails in every shape of a layer: report the pair once. */
static bool divisible_reported(struct eval *ev, struct num a, struct num b)
{
	for (unsigned i = 0; i < ev->ndivisible_seen; i++)
		if (num_eq(ev->divisible_seen[i][0], a) && num_eq(ev->divisible_seen[i][1], b))
			return true;
	if (ev->ndivisible_seen < 16 && !ev->quiet) {
		ev->divisible_seen[ev->ndivisible_seen][0] = a;
		ev->divisible_seen[ev->ndivisible_seen++][1] = b;
	}
	return false;
}

static struct value division_by_zero(struct eval *ev, const struct expr *e, const struct value *r)
{
	struct diag *d = eval_error(ev, DIAG_DIVISION_BY_ZERO, e->binary.op_loc, "division by zero");

	/* `block = 0` in a train block divides inside the stdlib: point back */
	if (r->origin.file && (r->origin.file != r->loc.file || r->origin.start != r->loc.start))
		diag_note(d, r->origin, "'%s' is set to 0 here", r->label ? r->label : "the divisor");
	return val_error(e->loc);
}

static struct value arith(struct eval *ev, const struct expr *e, struct value l, struct value r)
{
	struct value v = { .kind = VAL_NUM, .loc = e->loc, .origin = e->loc };
	enum num_status st = NUM_OK;
	enum ast_binop op = e->binary.op;

	if ((op == AST_ADD || op == AST_SUB) && !dim_eq(l.dim, r.dim))
		return mismatch(ev, e, &l, &r);
	v.dim = op == AST_MUL ? dim_mul(l.dim, r.dim) : op == AST_DIV ? dim_div(l.dim, r.dim) : l.dim;
	v.unknown = l.unknown || r.unknown;
	if (!dim_is_valid(v.dim)) {
		eval_error(ev, DIAG_UNIT_MISMATCH, e->binary.op_loc, "unit exponent out of range");
		return val_error(e->loc);
	}
	if (op == AST_DIV && !r.unknown && num_is_zero(r.num))
		return division_by_zero(ev, e, &r);
	if (v.unknown)
		return v;
	switch (op) {
	case AST_ADD: st = num_add(l.num, r.num, &v.num); break;
	case AST_SUB: st = num_sub(l.num, r.num, &v.num); break;
	case AST_MUL: st = num_mul(l.num, r.num, &v.num); break;
	default: st = num_div(l.num, r.num, &v.num); break;
	}
	if (st != NUM_OK) {
		char a[96], b[96];

		eval_error(ev, DIAG_OVERFLOW, e->binary.op_loc, "%s %s %s overflows 64-bit arithmetic",
			   eval_describe(ev, &l, a, sizeof a), ast_binop_spelling(op),
			   eval_describe(ev, &r, b, sizeof b));
		return val_error(e->loc);
	}
	if (op == AST_DIV && ev->in_shape && num_is_int(l.num) && num_is_int(r.num) &&
	    dim_is_scalar(l.dim) && dim_is_scalar(r.dim) && !num_is_int(v.num)) {
		if (divisible_reported(ev, l.num, r.num))
			return val_error(e->loc);	/* one error per pair of numbers, not per shape */
		char a[96], b[96];
		struct diag *d = eval_error(ev, DIAG_NOT_DIVISIBLE, e->loc, "%s is not divisible by %s",
					    eval_describe(ev, &l, a, sizeof a),
					    eval_describe(ev, &r, b, sizeof b));

		if (r.origin.file && (r.origin.file != r.loc.file || r.origin.start != r.loc.start))
			diag_note(d, r.origin, "'%s' is set here", r.label ? r.label : "the divisor");
		return val_error(e->loc);
	}
	return v;
}

static bool same_value(const struct value *l, const struct value *r, bool *eq)
{
	if (l->kind == VAL_NUM && r->kind == VAL_NUM)
		*eq = num_eq(l->num, r->num);
	else if (l->kind == VAL_BOOL && r->kind == VAL_BOOL)
		*eq = l->b == r->b;
	else if ((l->kind == VAL_SYMBOL || l->kind == VAL_STRING || l->kind == VAL_NONE) &&
		 (r->kind == VAL_SYMBOL || r->kind == VAL_STRING || r->kind == VAL_NONE))
		*eq = l->str == r->str || (l->str && r->str && !strcmp(l->str, r->str));
	else if (l->kind == VAL_DTYPE && r->kind == VAL_DTYPE)
		*eq = l->dtype == r->dtype;
	else if ((l->kind == VAL_DECL || l->kind == VAL_INSTANCE) && r->kind == l->kind)
		*eq = l->decl == r->decl;
	else
		return false;
	return true;
}

static struct value compare(struct eval *ev, const struct expr *e, struct value l, struct value r)
{
	struct value v = { .kind = VAL_BOOL, .loc = e->loc, .origin = e->loc };
	enum ast_binop op = e->binary.op;
	bool eq;

	if (l.kind == VAL_NUM && r.kind == VAL_NUM) {
		if (!dim_eq(l.dim, r.dim))
			return mismatch(ev, e, &l, &r);
		v.unknown = l.unknown || r.unknown;
		int c = v.unknown ? 0 : num_cmp(l.num, r.num);

		v.b = op == AST_EQ ? c == 0 : op == AST_NE ? c != 0 : op == AST_LT ? c < 0 :
		      op == AST_LE ? c <= 0 : op == AST_GT ? c > 0 : c >= 0;
		return v;
	}
	if ((op == AST_EQ || op == AST_NE) && same_value(&l, &r, &eq)) {
		v.unknown = l.unknown || r.unknown;
		v.b = op == AST_EQ ? eq : !eq;
		return v;
	}
	return mismatch(ev, e, &l, &r);
}

static struct value logic(struct eval *ev, const struct expr *e, struct value l, struct value r)
{
	struct value v = { .kind = VAL_BOOL, .loc = e->loc, .origin = e->loc };
	char b[64];

	if (l.kind != VAL_BOOL || r.kind != VAL_BOOL) {
		const struct value *bad = l.kind != VAL_BOOL ? &l : &r;

		eval_error(ev, DIAG_TYPE_MISMATCH, bad->loc, "'%s' needs bool operands, but this is %s",
			   ast_binop_spelling(e->binary.op), eval_type_name(bad, b, sizeof b));
		return val_error(e->loc);
	}
	bool and = e->binary.op == AST_AND;

	/* A known false (&&) or true (||) decides even next to an unknown. */
	if ((!l.unknown && l.b != and) || (!r.unknown && r.b != and)) {
		v.b = !and;
		return v;
	}
	v.unknown = l.unknown || r.unknown;
	v.b = and;
	return v;
}

/* Out of line: its message buffers must not sit in binary()'s frame,
 * which is on the stack once per nesting level. */
static __attribute__((noinline)) struct value bad_operands(struct eval *ev, const struct expr *e,
							 const struct value *l, const struct value *r)
{
	char a[64], b[64];

	eval_error(ev, DIAG_TYPE_MISMATCH, e->binary.op_loc, "operator '%s' cannot combine %s and %s",
		   ast_binop_spelling(e->binary.op), eval_type_name(l, a, sizeof a),
		   eval_type_name(r, b, sizeof b));
	return val_error(e->loc);
}

/* Operands are evaluated into one heap-free pair and combined out of line,
 * so that the recursive path (eval_expr -> binary -> eval_expr) keeps a
 * small frame. */
static __attribute__((noinline)) struct value combine(struct eval *ev, const struct expr *e,
						      const struct value *l, const struct value *r)
{
	enum ast_binop op = e->binary.op;

	if (l->kind == VAL_ERROR || r->kind == VAL_ERROR)
		return val_error(e->loc);
	if (op == AST_AND || op == AST_OR)
		return logic(ev, e, *l, *r);
	if (op >= AST_EQ)
		return compare(ev, e, *l, *r);
	if (l->kind == VAL_SYMBOL)
		return undefined_name(ev, l);
	if (r->kind == VAL_SYMBOL)
		return undefined_name(ev, r);
	if (l->kind == VAL_NUM && r->kind == VAL_NUM)
		return arith(ev, e, *l, *r);
	return bad_operands(ev, e, l, r);
}

/* A name nothing binds: not a local, dtype, declaration, unit or none. */
static bool unbound_name(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value v;
	struct unit_ref u;
	const char *n = e->name.name;

	return e->kind == EXPR_NAME && !env_lookup(env, n, &v) && !dtype_find(n) && !scope_find(ev->scope, n) &&
	       !unit_lookup(n, &u) && n != ev->none;
}

/* `llama3-8b` is `llama3 - 8 b`: when the left name is unbound and the
 * operands touch the '-', say so instead of "unknown unit 'b'". */
static __attribute__((noinline)) bool hyphenated(struct eval *ev, struct env *env, const struct expr *e)
{
	const struct expr *left = e->binary.lhs;
	const struct src_file *f = ev->src ? src_get(ev->src, e->loc.file) : NULL;

	if (!f || !e->loc.file || !unbound_name(ev, env, left))
		return false;
	const char *text = f->text + e->loc.start;
	size_t len = e->loc.end - e->loc.start;

	for (size_t i = 0; i < len; i++)
		if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
			return false;
	char *joined = arena_printf(ev->arena, "%.*s", (int)len, text);

	for (char *p = joined; *p; p++)
		*p = *p == '-' ? '_' : *p;
	const char *name = intern_cstr(ev->interner, joined);
	struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, e->loc, "'%.*s' is not a name: '-' subtracts, so it "
				    "reads as '%s' minus what follows", (int)len, text, left->name.name);

	if (scope_find(ev->scope, name))
		diag_note(d, NO_LOC, "did you mean '%s'? Names use '_', not '-'", name);
	else if (!eval_note_undefined(ev, d, name, DECL__COUNT))
		diag_note(d, NO_LOC, "names use '_', not '-'");
	return true;
}

static struct value binary(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value lr[2];

	lr[0] = eval_expr(ev, env, e->binary.lhs);
	/* checked only when the left side is already an unbound word */
	if (e->binary.op == AST_SUB && lr[0].kind == VAL_SYMBOL && hyphenated(ev, env, e))
		return val_error(e->loc);
	lr[1] = eval_expr(ev, env, e->binary.rhs);
	return combine(ev, e, &lr[0], &lr[1]);
}

static struct value list(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value v = { .kind = VAL_LIST, .loc = e->loc, .origin = e->loc };
	unsigned i = 0;

	v.nitems = e->list.count;
	v.items = ARENA_NEW_ARRAY(ev->arena, struct value, v.nitems ? v.nitems : 1);
	for (const struct item *it = e->list.items; it; it = it->next)
		v.items[i++] = eval_expr(ev, env, it->value);
	return v;
}

/* Case-insensitive equality of @a[0..n) and @b[0..m). */
static bool same_token(const char *a, size_t n, const char *b, size_t m)
{
	if (n != m)
		return false;
	for (size_t i = 0; i < n; i++) {
		char x = a[i] >= 'a' && a[i] <= 'z' ? (char)(a[i] - 32) : a[i];
		char y = b[i] >= 'a' && b[i] <= 'z' ? (char)(b[i] - 32) : b[i];

		if (x != y)
			return false;
	}
	return true;
}

/* The 80 of "H100_80GB" (a token of digits then G or GB), or -1. */
static long memory_gb(const char *name)
{
	for (const char *t = strchr(name, '_'); t; t = strchr(t + 1, '_')) {
		long v = 0;
		size_t n = 0;

		while (t[1 + n] >= '0' && t[1 + n] <= '9' && v < 1000000)
			v = v * 10 + (t[1 + n++] - '0');
		if (n && (t[1 + n] == 'G' || t[1 + n] == 'g'))
			return v;
	}
	return -1;
}

/* A GPU name is a family and variants: `H100` means one of the H100_*
 * GPUs, never the H200 one letter away (1.76x the memory). Keep the
 * family (the part before the first '_'), prefer the nearest memory size
 * when the name gives one, and list every variant that is left (MIG slices
 * only for a name that says MIG). The GPUs
 * in scope, or the stdlib's when none is imported. */
static size_t gpu_candidates(struct eval *ev, const char *name, const char *except, const char ***out,
			     const char **import)
{
	size_t fl = strcspn(name, "_"), n = 0, cap = 0, keep = 0;
	long want = memory_gb(name), best = -1;
	const char *cand, *imp = NULL;
	const struct scope *sc = ev->scope;
	bool from_scope = false;
	enum decl_kind k;

	for (size_t j = 0; j < scope_count(sc); j++)
		from_scope |= scope_at(sc, j)->kind == DECL_GPU;
	*out = NULL;
	for (size_t i = 0;; i++) {
		if (from_scope && i >= scope_count(sc))
			break;
		if (from_scope) {
			cand = scope_at(sc, i)->name;
			k = scope_at(sc, i)->kind;
		} else if (!eval_stdlib_at(ev, i, &cand, &k, &imp)) {
			break;
		}
		if (k != DECL_GPU || cand == except || !same_token(name, fl, cand, strcspn(cand, "_")))
			continue;
		if (strstr(cand, "_MIG_") && !strstr(name, "MIG"))
			continue;	/* a slice is asked for by name: A100_81GB means a whole GPU */
		ARENA_GROW(ev->arena, *out, n, cap);
		(*out)[n++] = cand;
		*import = imp;
		long m = memory_gb(cand), d = m < 0 || want < 0 ? -1 : m > want ? m - want : want - m;

		if (d >= 0 && (best < 0 || d < best))
			best = d;
	}
	for (size_t i = 0; i < n; i++) {	/* keep the nearest memory size */
		long m = memory_gb((*out)[i]), d = m < 0 || want < 0 ? -1 : m > want ? m - want : want - m;

		if (best < 0 || d == best)
			(*out)[keep++] = (*out)[i];
	}
	return keep;
}

void eval_note_gpu(struct eval *ev, struct diag *d, const char *name, const char *except)
{
	const char **c, *import = NULL;
	size_t n = gpu_candidates(ev, name, except, &c, &import);
	struct strbuf sb;

	if (!n) {
		eval_note_undefined(ev, d, name, DECL_GPU);
		return;
	}
	strbuf_init(&sb);
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " : ", ", c[i]);
	if (import)
		strbuf_addf(&sb, "? (the stdlib's \"%s\": add import \"%s\")", import, import);
	else
		strbuf_addch(&sb, '?');
	diag_note(d, NO_LOC, "did you mean %s", sb.buf);
	strbuf_release(&sb);
}

static struct value cluster(struct eval *ev, const struct expr *e)
{
	struct value v = { .kind = VAL_CLUSTER, .loc = e->loc, .origin = e->loc };
	struct value g = number(ev, e->cluster.gpus);
	struct value n = e->cluster.nodes ? number(ev, e->cluster.nodes) : val_count(1, e->loc);
	const struct decl *gpu = scope_find_kind(ev->scope, e->cluster.gpu, DECL_GPU);

	if (g.kind == VAL_ERROR || n.kind == VAL_ERROR)
		return val_error(e->loc);
	if (!gpu) {
		struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, e->cluster.gpu_loc,
					    "unknown GPU '%s'", e->cluster.gpu);

		eval_note_gpu(ev, d, e->cluster.gpu, NULL);
		return val_error(e->loc);
	}
	v.decl = gpu;
	v.gpus = g.num;
	v.nodes = n.num;
	return v;
}

static __attribute__((noinline)) struct value eval_expr1(struct eval *ev, struct env *env, const struct expr *e);

/* Expressions nest at most PARSE_MAX_EXPR_DEPTH in one tree, but names
 * chain trees together (`let x2 = x1 + ...`): the total depth is bounded
 * here, before the C stack is. */
struct value eval_expr(struct eval *ev, struct env *env, const struct expr *e)
{
	if (ev->expr_depth >= EVAL_MAX_EXPR_DEPTH) {
		if (!ev->expr_depth_reported)
			eval_error(ev, DIAG_NESTING_DEPTH, e->loc,
				   "evaluation nested more than %d levels deep (through names that use "
				   "deep expressions)", EVAL_MAX_EXPR_DEPTH);
		ev->expr_depth_reported = true;
		return val_error(e->loc);
	}
	ev->expr_depth++;
	struct value v = eval_expr1(ev, env, e);

	ev->expr_depth--;
	return v;
}

static struct value eval_expr1(struct eval *ev, struct env *env, const struct expr *e)
{
	struct value v;

	switch (e->kind) {
	case EXPR_NUMBER: return number(ev, e);
	case EXPR_QUANTITY: return quantity(ev, e);
	case EXPR_PERCENT: return percent(ev, e);
	case EXPR_STRING:
		return (struct value){ .kind = VAL_STRING, .str = e->string.value, .loc = e->loc, .origin = e->loc };
	case EXPR_BOOL:
		return (struct value){ .kind = VAL_BOOL, .b = e->boolean.value, .loc = e->loc, .origin = e->loc };
	case EXPR_NAME: return eval_name(ev, env, e);
	case EXPR_MEMBER: return member(ev, env, e);
	case EXPR_UNARY: return unary(ev, env, e);
	case EXPR_BINARY: return binary(ev, env, e);
	case EXPR_CALL: return eval_call(ev, env, e);
	case EXPR_LIST: return list(ev, env, e);
	case EXPR_CLUSTER: return cluster(ev, e);
	case EXPR__COUNT: break;
	}
	v = val_error(e->loc);
	return v;
}
