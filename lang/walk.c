/* SPDX-License-Identifier: MIT */
/*
 * walk.c - names, calls, template instantiation and body walking.
 *
 * A global `let` or alias is evaluated on first use and memoised; a
 * declaration met again while it is still being evaluated is a
 * definition cycle, reported at the use that closed it with one note per
 * step of the chain.
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/str.h"
#include "lang/strbuf.h"
#include "lang/u64map.h"

/* Memo entries live in a hash table: a file may hold a million lets. */
static struct decl_memo *memo_of(struct eval *ev, const struct decl *d)
{
	struct decl_memo *m = u64map_get(&ev->memo, (uintptr_t)d);

	if (!m) {
		m = ARENA_NEW(ev->perm, struct decl_memo);
		m->decl = d;
		u64map_put(&ev->memo, ev->perm, (uintptr_t)d, m);
	}
	return m;
}

static void report_cycle(struct eval *ev, struct decl_memo *m, struct loc use)
{
	struct diag *d = eval_error(ev, DIAG_DEFINITION_CYCLE, use,
				    "'%s' depends on itself", m->decl->name);
	unsigned i = ev->nactive;

	while (i > 0 && ev->active[i - 1] != m)
		i--;
	for (; i < ev->nactive; i++)
		diag_note(d, ev->active[i]->use, "'%s' is used here", ev->active[i]->decl->name);
}

static struct value eval_decl_body(struct eval *ev, const struct decl *d, struct loc use)
{
	struct value v;

	if (d->kind == DECL_LET)
		return eval_expr(ev, NULL, d->let.value);
	if (d->templ.alias) {
		v = eval_expr(ev, NULL, d->templ.alias);
		if (v.kind == VAL_DECL && v.decl->kind == d->kind)
			v = eval_instantiate(ev, NULL, v.decl, NULL, use);
		if (v.kind != VAL_ERROR && (v.kind != VAL_INSTANCE || v.decl->kind != d->kind)) {
			char b[64];

			eval_error(ev, DIAG_TYPE_MISMATCH, d->templ.alias->loc, "'%s' must be a %s, but this is %s",
				   d->name, ast_decl_keyword[d->kind], eval_type_name(&v, b, sizeof b));
			return val_error(use);
		}
		v.label = d->name;
		return v;
	}
	return eval_instantiate(ev, NULL, d, NULL, use);
}

struct value eval_decl_value(struct eval *ev, const struct decl *d, struct loc use)
{
	struct value v = { .kind = VAL_DECL, .decl = d, .loc = use, .origin = d->name_loc, .label = d->name };
	bool templ = d->kind == DECL_LAYER || d->kind == DECL_MODEL || d->kind == DECL_OPTIMIZER;

	if (d->kind != DECL_LET && !(templ && (d->templ.alias || !d->templ.has_params)))
		return v;
	struct decl_memo *m = memo_of(ev, d);

	if (m->state == 2)
		return m->v;
	if (m->state == 1 || ev->nactive == sizeof ev->active / sizeof ev->active[0]) {
		report_cycle(ev, m, use);
		return val_error(use);
	}
	m->state = 1;
	m->use = use;
	ev->active[ev->nactive++] = m;
	v = eval_decl_body(ev, d, use);
	ev->nactive--;
	if (d->kind == DECL_LET) {
		v.origin = d->name_loc;
		v.label = d->name;
	}
	m->v = v;
	m->state = ev->arena == ev->perm ? 2 : 0;	/* v may live in a scratch arena */
	return v;
}

struct value eval_name(struct eval *ev, struct env *env, const struct expr *e)
{
	const char *n = e->name.name;
	struct value v;
	struct unit_ref u;
	const struct dtype *dt;
	const struct decl *d;

	if (env_lookup(env, n, &v)) {
		v.loc = e->loc;
		return v;
	}
	/* dtypes before declarations: `precision fp32` may share a dtype's
	 * name, and a train block resolves it by kind (check_train.c). */
	if ((dt = dtype_find_in(ev->interner, n)))
		return (struct value){ .kind = VAL_DTYPE, .dtype = dt, .loc = e->loc, .origin = e->loc };
	if ((d = scope_find_in(ev->scope, n, e->loc.file)))
		return eval_decl_value(ev, d, e->loc);
	if (unit_lookup_in(ev->interner, n, &u))
		return (struct value){ .kind = VAL_NUM, .num = u.factor, .dim = u.dim, .loc = e->loc,
				       .origin = e->loc };
	if (n == ev->none)
		return (struct value){ .kind = VAL_NONE, .str = n, .loc = e->loc, .origin = e->loc };
	return (struct value){ .kind = VAL_SYMBOL, .str = n, .loc = e->loc, .origin = e->loc };
}

/* ---- type checks against parameter types ---- */

#define DIM_SCALAR_INIT { .e = { 0 } }
#define DIM_BYTES_INIT { .e = { [DIM_INFO] = 1 } }
#define DIM_BANDWIDTH_INIT { .e = { [DIM_INFO] = 1, [DIM_TIME] = -1 } }
#define DIM_THROUGHPUT_INIT { .e = { [DIM_OPS] = 1, [DIM_TIME] = -1 } }
#define DIM_SECONDS_INIT { .e = { [DIM_TIME] = 1 } }

static bool dim_named(const char *type, struct dim *d)
{
	static const struct { const char *name; struct dim d; } t[] = {
		{ "count", DIM_SCALAR_INIT }, { "number", DIM_SCALAR_INIT }, { "ratio", DIM_SCALAR_INIT },
		{ "bytes", DIM_BYTES_INIT }, { "bandwidth", DIM_BANDWIDTH_INIT },
		{ "throughput", DIM_THROUGHPUT_INIT }, { "time", DIM_SECONDS_INIT },
	};

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (str_is(type, t[i].name)) {
			*d = t[i].d;
			return true;
		}
	return false;
}

bool eval_type_known(const char *type)
{
	struct dim d;

	return dim_named(type, &d) || str_is(type, "bool") || str_is(type, "string") ||
	       str_is(type, "dtype") || str_is(type, "list") || str_is(type, "layer") ||
	       str_is(type, "model") || str_is(type, "optimizer") || str_is(type, "any");
}

bool eval_matches_type(const struct value *v, const char *type)
{
	struct dim d;

	if (v->kind == VAL_ERROR || str_is(type, "any"))
		return true;
	/* a template checked on its own binds an unknown string, dtype or list
	 * parameter as its type's name (bind_defaults): passed on to another
	 * template of that type, it is any such value, not an undefined name */
	if (v->kind == VAL_SYMBOL && v->unknown && v->str && str_is(v->str, type))
		return true;
	if (dim_named(type, &d))
		return v->kind == VAL_NUM && dim_eq(v->dim, d) &&
		       (!str_is(type, "count") || v->unknown || num_is_int(v->num));
	if (str_is(type, "bool"))
		return v->kind == VAL_BOOL;
	if (str_is(type, "string"))
		return v->kind == VAL_STRING;
	if (str_is(type, "dtype"))
		return v->kind == VAL_DTYPE;
	if (str_is(type, "list"))
		return v->kind == VAL_LIST;
	return (v->kind == VAL_DECL || v->kind == VAL_INSTANCE) && str_is(type, ast_decl_keyword[v->decl->kind]);
}

/* The declaration kind a type name stands for ("model"), else DECL__COUNT:
 * where a key wants a model, only models are worth suggesting. */
static enum decl_kind kind_of_type(const char *type)
{
	for (int k = 0; k < DECL__COUNT; k++)
		if (!strcmp(ast_decl_keyword[k], type))
			return (enum decl_kind)k;
	return DECL__COUNT;
}

bool eval_is_type(struct eval *ev, struct value v, const char *type, const char *what, struct loc at)
{
	char b[64], h[128];

	if (eval_matches_type(&v, type))
		return true;
	if (v.kind == VAL_SYMBOL && v.unknown && v.str && eval_type_known(v.str)) {	/* bind_defaults' */
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc.file ? v.loc : at, "%s must be %s, but this is %s",
			   what, type, v.str);
		return false;
	}
	if (v.kind == VAL_SYMBOL) {
		undefined_name_of(ev, &v, kind_of_type(type));
		return false;
	}
	struct dim want;

	if (v.kind == VAL_NUM && dim_named(type, &want) && dim_eq(want, v.dim)) {
		diag_note(eval_error(ev, DIAG_TYPE_MISMATCH, v.loc.file ? v.loc : at,
				     "%s must be a whole count, but this is %s", what,
				     eval_describe(ev, &v, b, sizeof b)),
			  NO_LOC, "counts (layers, heads, sizes) are whole numbers; use ceil() or floor()");
		return false;
	}
	struct diag *d = eval_error(ev, DIAG_TYPE_MISMATCH, v.loc.file ? v.loc : at,
				    "%s must be %s, but this is %s", what, type,
				    eval_type_name(&v, b, sizeof b));

	if (v.kind == VAL_NUM && dim_named(type, &want) && dim_is_scalar(v.dim) &&
		 dim_literal_hint(want, h, sizeof h))
		diag_note(d, NO_LOC, "%s", h);
	else if (v.kind == VAL_NUM && dim_named(type, &want) && dim_is_scalar(want))
		diag_note(d, NO_LOC, "a %s has no unit: write the number alone", type);
	else if (v.kind == VAL_NUM && dim_named(type, &want) && dim_fix_hint(want, v.dim, h, sizeof h))
		diag_note(d, NO_LOC, "%s", h);
	return false;
}

bool eval_to_u64(struct eval *ev, struct value v, const char *what, uint64_t *out)
{
	if (!eval_is_type(ev, v, "count", what, v.loc) || v.kind == VAL_ERROR || v.unknown)
		return false;
	if (!num_to_u64(v.num, out)) {
		char b[64];

		eval_error(ev, DIAG_BAD_SHAPE, v.loc, "%s must be a whole number >= 0, but it is %s",
			   what, eval_describe(ev, &v, b, sizeof b));
		return false;
	}
	return true;
}

bool eval_to_bool(struct eval *ev, struct value v, const char *what, bool *out)
{
	if (!eval_is_type(ev, v, "bool", what, v.loc) || v.kind == VAL_ERROR || v.unknown)
		return false;
	*out = v.b;
	return true;
}

struct suggestion {
	const char *name;
	enum decl_kind kind;
	const char *best;		/* NULL: nothing close */
	bool stdlib_done;		/* the stdlib was asked (only when best is NULL) */
	const char *std_name, *std_import;
};

/* Names are interned, so the pointer and the kind are the key: a kind
 * fits in the low bits a pointer shifted by 8 leaves free (user space
 * pointers are below 2^48). */
static struct suggestion *suggestion_of(struct eval *ev, const char *name, enum decl_kind kind)
{
	uint64_t key = (uint64_t)(uintptr_t)name << 8 | (uint64_t)kind;
	struct suggestion *m = u64map_get(&ev->suggestions, key);

	if (m)
		return m;
	m = ARENA_NEW(ev->perm, struct suggestion);
	m->name = name;
	m->kind = kind;
	m->best = scope_suggest(ev->scope, name, kind);
	ev->suggestions_computed++;
	u64map_put(&ev->suggestions, ev->perm, key, m);
	return m;
}

const char *eval_suggest(struct eval *ev, const char *name, enum decl_kind kind)
{
	return suggestion_of(ev, name, kind)->best;
}

bool eval_note_undefined(struct eval *ev, struct diag *d, const char *name, enum decl_kind kind)
{
	struct suggestion *m = suggestion_of(ev, name, kind);

	if (m->best) {
		diag_note(d, NO_LOC, "did you mean '%s'?", m->best);
		return true;
	}
	if (!m->stdlib_done) {
		m->stdlib_done = true;
		m->std_import = eval_stdlib_import(ev, name, kind);
		m->std_name = m->std_import ? name : eval_stdlib_suggest(ev, name, kind, &m->std_import);
	}
	if (m->std_name == name)
		diag_note(d, NO_LOC, "'%s' is declared in the stdlib's \"%s\": add import \"%s\"", name,
			  m->std_import, m->std_import);
	else if (m->std_name)
		diag_note(d, NO_LOC, "did you mean '%s'? It is declared in the stdlib's \"%s\": add import \"%s\"",
			  m->std_name, m->std_import, m->std_import);
	return m->std_name != NULL;
}

struct value undefined_name_of(struct eval *ev, const struct value *v, enum decl_kind kind)
{
	struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, v->loc, "'%s' is not defined", v->str);

	/* a framework's spelling of a dtype (bfloat16, half) is the commonest
	 * slip in a precision, and nothing declared is close to it */
	if (!eval_note_undefined(ev, d, v->str, kind) && dtype_suggest(v->str))
		diag_note(d, NO_LOC, "did you mean the dtype '%s'?", dtype_suggest(v->str));
	return val_error(v->loc);
}

struct value undefined_name(struct eval *ev, const struct value *v)
{
	return undefined_name_of(ev, v, DECL__COUNT);
}


const struct field *eval_record_field(const struct scope *scope, const struct decl *d, const char *name)
{
	unsigned guard = 0;	/* `gpu A : B` and `gpu B : A` must not loop */

	for (; d && guard++ < EVAL_MAX_BASES;
	     d = d->record.base ? scope_find_kind_in(scope, d->record.base, d->kind, d->record.base_loc.file) : NULL)
		for (const struct field *f = d->record.fields; f; f = f->next)
			if (!strcmp(f->name, name) && f->value)
				return f;
	return NULL;
}

/* ---- calls ---- */

/* mod(a, b) = a - b * floor(a / b): the layer pattern's "every k-th". */
static struct value builtin_mod(struct eval *ev, const struct expr *e, struct value a, struct value b)
{
	struct num q, r;

	if (num_is_zero(b.num)) {
		eval_error(ev, DIAG_DIVISION_BY_ZERO, e->loc, "'mod' by zero");
		return val_error(e->loc);
	}
	if (num_div(a.num, b.num, &q) != NUM_OK || num_mul(num_floor(q), b.num, &q) != NUM_OK ||
	    num_sub(a.num, q, &r) != NUM_OK) {
		eval_error(ev, DIAG_OVERFLOW, e->loc, "'mod' would overflow");
		return val_error(e->loc);
	}
	a.num = r;
	a.loc = a.origin = e->loc;
	a.label = NULL;
	return a;
}

static struct value builtin_call(struct eval *ev, struct env *env, const struct expr *e, const char *f)
{
	struct value a[2];
	unsigned n = 0;
	bool in_shape = ev->in_shape;

	/* ceil(a / b) and floor(a / b) ask for a remainder explicitly */
	ev->in_shape = false;
	for (const struct arg *x = e->call.args; x && n < 2; x = x->next)
		a[n++] = eval_expr(ev, env, x->value);
	ev->in_shape = in_shape;
	bool unary = !strcmp(f, "ceil") || !strcmp(f, "floor");
	bool mod = !strcmp(f, "mod");

	if (n != (unary ? 1u : 2u) || (e->call.args && e->call.args->next && e->call.args->next->next)) {
		eval_error(ev, DIAG_BAD_ARGUMENT, e->loc, "'%s' takes %s", f, unary ? "one argument" : "two arguments");
		return val_error(e->loc);
	}
	for (unsigned i = 0; i < n; i++)
		if (a[i].kind == VAL_ERROR || !eval_is_type(ev, a[i], unary ? "number" : "any", "an argument", e->loc))
			return val_error(e->loc);
	struct value v = a[0];

	v.loc = v.origin = e->loc;
	v.label = NULL;
	if (unary) {
		if (!v.unknown)	/* an unknown number has no value (d == 0) */
			v.num = !strcmp(f, "ceil") ? num_ceil(v.num) : num_floor(v.num);
		return v;
	}
	if (a[0].kind != VAL_NUM || a[1].kind != VAL_NUM || !dim_eq(a[0].dim, a[1].dim)) {
		eval_error(ev, DIAG_UNIT_MISMATCH, e->loc, "'%s' needs two numbers of the same unit", f);
		return val_error(e->loc);
	}
	v.unknown = a[0].unknown || a[1].unknown;
	if (mod)
		return v.unknown ? v : builtin_mod(ev, e, a[0], a[1]);
	v.num = !strcmp(f, "min") ? num_min(a[0].num, a[1].num) : num_max(a[0].num, a[1].num);
	return v;
}

/* at(list, i): item i (from 0), a layer pattern's list of kinds. While i
 * is unknown (a template checked alone) it is item 0, unknown, so that a
 * comparison with it is unknown and both branches of an `if` are checked. */
static struct value at_call(struct eval *ev, struct env *env, const struct expr *e)
{
	const struct arg *a = e->call.args;

	if (!a || !a->next || a->next->next || a->name || a->next->name) {
		eval_error(ev, DIAG_BAD_ARGUMENT, e->loc, "'at' takes a list and an index: at(kinds, i)");
		return val_error(e->loc);
	}
	struct value l = eval_expr(ev, env, a->value), i = eval_expr(ev, env, a->next->value);
	uint64_t k = 0;

	/* a `list` parameter checked alone is bound to its type's name */
	if (l.kind == VAL_SYMBOL && !strcmp(l.str, "list") && i.kind != VAL_ERROR)
		return (struct value){ .kind = VAL_SYMBOL, .unknown = true, .str = l.str, .loc = e->loc,
				       .origin = e->loc };
	if (l.kind == VAL_ERROR || i.kind == VAL_ERROR || !eval_is_type(ev, l, "list", "the list of 'at'", e->loc) ||
	    !eval_is_type(ev, i, "count", "the index of 'at'", e->loc))
		return val_error(e->loc);
	if (!i.unknown && (!num_to_u64(i.num, &k) || k >= l.nitems)) {
		eval_error(ev, DIAG_OUT_OF_RANGE, i.loc, "index %s is past the end of a list of %u item%s",
			   num_format(i.num, (char[32]){ 0 }, 32, 0), l.nitems, l.nitems == 1 ? "" : "s");
		return val_error(e->loc);
	}
	if (!l.nitems)
		return val_error(e->loc);	/* only an unknown index gets here */
	struct value v = l.items[k];

	v.unknown = v.unknown || i.unknown;
	v.loc = e->loc;
	return v;
}

/* lora(r = 16, ...) and other record calls: named arguments, evaluated. */
static struct value record_call(struct eval *ev, struct env *env, const struct expr *e, const char *f)
{
	struct value v = { .kind = VAL_CALL, .str = f, .loc = e->loc, .origin = e->loc };

	v.args = env_new(ev, NULL);
	for (const struct arg *x = e->call.args; x; x = x->next) {
		if (!x->name) {
			eval_error(ev, DIAG_BAD_ARGUMENT, x->value->loc, "arguments of '%s' must be named", f);
			continue;
		}
		struct value a = eval_expr(ev, env, x->value), old;

		/* as bind_args() for templates: a second value would silently win */
		if (env_lookup(v.args, x->name, &old)) {
			diag_note(eval_error(ev, DIAG_BAD_ARGUMENT, x->name_loc, "'%s' is given twice", x->name),
				  old.origin, "first given here");
			continue;
		}
		a.origin = x->name_loc;
		a.label = x->name;
		env_bind(v.args, x->name, a);
	}
	return v;
}

/* trains(p): known only while the analyzer walks a job; the checker sees
 * an unknown bool and checks both branches. */
static struct value trains_call(struct eval *ev, const struct expr *e)
{
	const struct arg *a = e->call.args;
	struct value v = { .kind = VAL_BOOL, .unknown = true, .loc = e->loc, .origin = e->loc };

	if (!a || a->next || a->name || a->value->kind != EXPR_NAME) {
		eval_error(ev, DIAG_BAD_ARGUMENT, e->loc, "'trains' takes one parameter name");
		return val_error(e->loc);
	}
	int t = ev->walk_ops && ev->walk_ops->trains ? ev->walk_ops->trains(ev->walk_ctx, a->value->name.name) : -1;

	if (t >= 0) {
		v.unknown = false;
		v.b = t;
	}
	return v;
}

struct value eval_call(struct eval *ev, struct env *env, const struct expr *e)
{
	const struct expr *c = e->call.callee;

	if (c->kind != EXPR_NAME) {
		eval_error(ev, DIAG_TYPE_MISMATCH, c->loc, "only declarations and builtins can be called");
		return val_error(e->loc);
	}
	const char *f = c->name.name;
	const struct decl *d = scope_find_in(ev->scope, f, c->loc.file);

	if (d && (d->kind == DECL_LAYER || d->kind == DECL_MODEL || d->kind == DECL_OPTIMIZER)) {
		if (d->templ.alias) {
			eval_error(ev, DIAG_BAD_ARGUMENT, e->loc, "'%s' is already instantiated; use it without arguments", f);
			return val_error(e->loc);
		}
		return eval_instantiate(ev, env, d, e->call.args, e->loc);
	}
	if (!strcmp(f, "ceil") || !strcmp(f, "floor") || !strcmp(f, "min") || !strcmp(f, "max") ||
	    !strcmp(f, "mod"))
		return builtin_call(ev, env, e, f);
	if (!strcmp(f, "trains"))
		return trains_call(ev, e);
	if (!strcmp(f, "at"))
		return at_call(ev, env, e);
	return record_call(ev, env, e, f);
}

/* ---- binding arguments to parameters ---- */

static const struct param *param_named(const struct decl *d, const char *name)
{
	for (const struct param *p = d->templ.params; p; p = p->next)
		if (p->name == name)
			return p;
	return NULL;
}

/* A count is never negative (a negative `block` or `layers` would pass
 * `numel < min_size`-style tests silently); a ratio lies in [0, 1]. */
/* @d and @p name the argument only in the error: formatting that on every
 * call was a tenth of a job's check. */
static bool arg_in_range(struct eval *ev, const struct value *v, const char *type, const struct decl *d,
			 const struct param *p)
{
	bool count = !strcmp(type, "count"), ratio = !strcmp(type, "ratio");

	if (v->kind != VAL_NUM || v->unknown || (!count && !ratio))
		return true;
	if (num_sign(v->num) >= 0 && (!ratio || num_cmp(v->num, num_from_int(1)) <= 0))
		return true;
	eval_error(ev, DIAG_OUT_OF_RANGE, v->loc, "argument '%s' of '%s' must be %s", p->name, d->name,
		   count ? "0 or more (a count)" : "between 0 and 1 (a ratio: 0% to 100%)");
	return false;
}

static bool check_arg(struct eval *ev, const struct decl *d, const struct param *p, struct value *v)
{
	if (v->kind == VAL_ERROR)
		return true;
	if (p->nalts > 1) {
		for (unsigned i = 0; i < p->nalts; i++)
			if ((v->kind == VAL_SYMBOL || v->kind == VAL_NONE) && v->str == p->type_alts[i]) {
				v->kind = VAL_SYMBOL;
				return true;
			}
		struct diag *g = eval_error(ev, DIAG_BAD_ARGUMENT, v->loc, "'%s' of '%s' must be one of its values",
					    p->name, d->name);
		diag_note(g, p->type_loc, "parameter '%s' is declared here", p->name);
		return false;
	}
	if (!eval_matches_type(v, p->type_alts[0])) {
		eval_is_type(ev, *v, p->type_alts[0], arena_printf(ev->arena, "argument '%s' of '%s'", p->name,
								    d->name), v->loc);
		return false;
	}
	return arg_in_range(ev, v, p->type_alts[0], d, p);
}

static void bind_args(struct eval *ev, struct env *frame, const struct decl *d, struct env *caller,
		      const struct arg *args, struct loc call)
{
	const struct param *p = d->templ.params;

	for (const struct arg *a = args; a; a = a->next) {
		const struct param *to = a->name ? param_named(d, a->name) : p;

		if (!to) {
			const char *what = a->name ? "has no parameter" : "takes no more arguments than";
			struct diag *g = eval_error(ev, DIAG_BAD_ARGUMENT, a->name ? a->name_loc : a->value->loc,
						    "'%s' %s %s%s%s", d->name, what, a->name ? "'" : "",
						    a->name ? a->name : "these", a->name ? "'" : "");
			diag_note(g, d->name_loc, "'%s' is declared here", d->name);
			continue;
		}
		struct value v = eval_expr(ev, caller, a->value);
		struct value old;

		if (env_lookup(frame, to->name, &old) && old.loc.file) {
			eval_error(ev, DIAG_BAD_ARGUMENT, a->value->loc, "'%s' is given twice", to->name);
			continue;
		}
		if (!check_arg(ev, d, to, &v))
			v = val_error(a->value->loc);	/* reported: not "missing" as well */
		v.origin = a->name ? a->name_loc : a->value->loc;
		v.label = to->name;
		env_bind(frame, to->name, v);
		if (!a->name && p)
			p = p->next;
	}
	(void)call;
}

/* "'a'", "'a' and 'b'", "'a', 'b' and 'c'" from @n names. */
static void name_list(struct strbuf *sb, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strbuf_addf(sb, "%s'%s'", i == 0 ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

/* Every missing argument in one error at the call, a note at each parameter. */
static void report_missing(struct eval *ev, const struct decl *d, struct loc call, struct env *frame)
{
	size_t n = 0, i = 0;
	struct value v;

	for (const struct param *p = d->templ.params; p; p = p->next)
		n += !p->def && env_lookup(frame, p->name, &v) && v.kind == VAL_ERROR && !v.loc.file;
	if (!n)
		return;
	const char **names = ARENA_NEW_ARRAY(ev->arena, const char *, n);
	struct strbuf sb;

	for (const struct param *p = d->templ.params; p; p = p->next)
		if (!p->def && env_lookup(frame, p->name, &v) && v.kind == VAL_ERROR && !v.loc.file)
			names[i++] = p->name;
	strbuf_init(&sb);
	name_list(&sb, names, n);
	struct diag *g = eval_error(ev, DIAG_BAD_ARGUMENT, call, "'%s' needs argument%s %s", d->name,
				    n > 1 ? "s" : "", sb.buf);

	strbuf_release(&sb);
	for (const struct param *p = d->templ.params; p; p = p->next)
		if (!p->def && env_lookup(frame, p->name, &v) && v.kind == VAL_ERROR && !v.loc.file)
			diag_note(g, p->name_loc, "parameter '%s' is declared here", p->name);
}

static void bind_defaults(struct eval *ev, struct env *frame, const struct decl *d, struct loc call,
			  bool unknown)
{
	for (const struct param *p = d->templ.params; p; p = p->next) {
		struct value v;

		if (env_lookup(frame, p->name, &v))
			continue;
		if (p->def) {
			v = eval_expr(ev, frame, p->def);
			check_arg(ev, d, p, &v);
		} else if (unknown) {
			struct dim dm = DIM_SCALAR;

			v = (struct value){ .kind = VAL_NUM, .unknown = true, .dim = dm, .loc = p->name_loc };
			if (p->nalts > 1 || !dim_named(p->type_alts[0], &v.dim))
				v.kind = !strcmp(p->type_alts[0], "bool") ? VAL_BOOL : VAL_SYMBOL;
			if (v.kind == VAL_SYMBOL)
				v.str = p->type_alts[0];
		} else {
			v = val_error(NO_LOC);	/* missing: reported below, all at once */
			v.label = p->name;
			env_bind(frame, p->name, v);
			continue;
		}
		v.origin = p->name_loc;
		v.label = p->name;
		env_bind(frame, p->name, v);
	}
	report_missing(ev, d, call, frame);
}

static struct value make_instance(const struct decl *d, struct env *frame, struct loc call)
{
	return (struct value){ .kind = VAL_INSTANCE, .decl = d, .args = frame, .loc = call, .origin = call,
			       .label = d->name };
}

struct value eval_instantiate(struct eval *ev, struct env *env, const struct decl *d,
			      const struct arg *args, struct loc call)
{
	struct env *frame = env_new(ev, NULL);

	bind_args(ev, frame, d, env, args, call);
	bind_defaults(ev, frame, d, call, false);
	return make_instance(d, frame, call);
}

struct value eval_instantiate_unknown(struct eval *ev, const struct decl *d)
{
	struct env *frame = env_new(ev, NULL);

	bind_defaults(ev, frame, d, d->name_loc, true);
	return make_instance(d, frame, d->name_loc);
}

/* ---- walking bodies ---- */

static void walk_body(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
		      void *ctx, struct env *job);

static void walk_tensor(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
			void *ctx)
{
	const struct expr *shape = s->tensor.shape;
	struct value dims[16];
	unsigned n = 0;
	bool saved = ev->in_shape;

	if (shape->list.count > 16) {
		eval_error(ev, DIAG_BAD_SHAPE, shape->loc, "a tensor has at most 16 axes");
		return;
	}
	ev->in_shape = true;
	for (const struct item *it = shape->list.items; it; it = it->next) {
		struct value v = eval_expr(ev, env, it->value);
		uint64_t u;

		if (v.kind != VAL_ERROR && !v.unknown && eval_to_u64(ev, v, "a shape axis", &u) && u == 0)
			eval_error(ev, DIAG_BAD_SHAPE, it->value->loc, "a shape axis must be positive, but it is 0");
		else if (v.kind != VAL_ERROR && v.unknown)
			eval_is_type(ev, v, "count", "a shape axis", it->value->loc);
		dims[n++] = v;
	}
	ev->in_shape = saved;
	if (ops->tensor) {
		struct walk_tensor t = { .stmt = s, .dims = dims, .ndims = n, .env = env };

		ops->tensor(ctx, &t);
	}
}

static void walk_instance(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
			  void *ctx, struct env *job)
{
	const struct expr *callee = s->instance.call->call.callee;
	const struct decl *d = callee->kind == EXPR_NAME ?
		scope_find_in(ev->scope, callee->name.name, callee->loc.file) : NULL;

	if (callee->kind == EXPR_NAME && (!d || d->kind != DECL_LAYER)) {
		struct diag *g = eval_error(ev, DIAG_UNDEFINED_NAME, callee->loc, "no layer named '%s'",
					    callee->name.name);

		if (!eval_note_undefined(ev, g, callee->name.name, DECL_LAYER) && !d)
			diag_note(g, NO_LOC, "is an import missing? The stdlib layers are in \"layers/...\"");
		return;
	}
	struct value inst = eval_expr(ev, env, s->instance.call);

	if (inst.kind == VAL_ERROR)
		return;
	if (inst.kind != VAL_INSTANCE || inst.decl->kind != DECL_LAYER) {
		eval_error(ev, DIAG_TYPE_MISMATCH, s->loc, "only layers can be used inside a body");
		return;
	}
	for (unsigned i = 0; i < ev->depth; i++)
		if (ev->layers[i] == inst.decl) {
			/* a layer inside itself would never end (and fans out exponentially) */
			struct diag *g = eval_error(ev, DIAG_DEFINITION_CYCLE, s->loc,
						    "layer '%s' uses itself", inst.decl->name);

			for (unsigned j = i + 1; j < ev->depth; j++)
				diag_note(g, ev->layer_calls[j], "'%s' is used here", ev->layers[j]->name);
			return;
		}
	if (ev->depth >= EVAL_MAX_DEPTH) {
		eval_error(ev, DIAG_DEFINITION_CYCLE, s->loc, "layers are nested more than %d deep",
			   EVAL_MAX_DEPTH);
		return;
	}
	ev->layers[ev->depth] = inst.decl;
	ev->layer_calls[ev->depth] = s->loc;
	env_set_parent(inst.args, job);
	if (ops->enter)
		ops->enter(ctx, inst.decl, inst.args, s->loc);
	ev->depth++;
	walk_body(ev, inst.decl->templ.body, env_new(ev, inst.args), ops, ctx, job);
	ev->depth--;
	if (ops->leave)
		ops->leave(ctx, inst.decl);
}

/* Count one statement (or pass) against EVAL_MAX_STEPS; false past it. */
static bool walk_step(struct eval *ev, const struct stmt *s)
{
	ev->total_steps++;
	if (++ev->steps <= EVAL_MAX_STEPS)
		return true;
	if (!ev->steps_reported)
		eval_error(ev, DIAG_INSTANTIATION_LIMIT, s->loc,
			   "more than %d statements to walk: layers use each other too many times",
			   EVAL_MAX_STEPS);
	ev->steps_reported = true;
	return false;
}

/* The body's frame; `repeat i in n` binds i (unknown while n is). */
static struct env *repeat_frame(struct eval *ev, const struct stmt *s, struct env *env, const struct value *n,
				uint64_t i)
{
	struct env *e = env_new(ev, env);
	struct value v = val_count(i, s->repeat.index_loc);

	if (!s->repeat.index)
		return e;
	v.unknown = n->unknown;
	v.origin = s->repeat.index_loc;
	v.label = s->repeat.index;
	env_bind(e, s->repeat.index, v);
	return e;
}

/* `repeat i in n`: one pass per layer, each with its own i. */
static void walk_passes(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
			void *ctx, struct env *job, const struct value *n, uint64_t u)
{
	for (uint64_t i = 0; i < u && walk_step(ev, s); i++) {
		if (i && ops->repeat_next)
			ops->repeat_next(ctx, s);
		walk_body(ev, s->repeat.body, repeat_frame(ev, s, env, n, i), ops, ctx, job);
	}
}

static void walk_repeat(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
			void *ctx, struct env *job)
{
	struct value n = eval_expr(ev, env, s->repeat.count);
	uint64_t u = 0;

	if (n.kind == VAL_ERROR)
		return;
	if (!n.unknown && !eval_to_u64(ev, n, "a repeat count", &u))
		return;
	if (n.unknown && !eval_is_type(ev, n, "count", "a repeat count", n.loc))
		return;
	bool passes = !n.unknown && (s->repeat.index || (ops->passes && ops->passes(ctx, s)));

	if (ops->repeat_enter)
		ops->repeat_enter(ctx, s, n);
	if (passes)
		walk_passes(ev, s, env, ops, ctx, job, &n, u);
	else
		walk_body(ev, s->repeat.body, repeat_frame(ev, s, env, &n, 0), ops, ctx, job);
	if (ops->repeat_leave)
		ops->repeat_leave(ctx, s);
}

static void walk_if(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
		    void *ctx, struct env *job)
{
	struct value c = eval_expr(ev, env, s->if_.cond);

	if (c.kind == VAL_ERROR || !eval_is_type(ev, c, "bool", "a condition", c.loc))
		return;
	if (c.unknown || c.b)
		walk_body(ev, s->if_.then_body, env_new(ev, env), ops, ctx, job);
	if (c.unknown || !c.b)
		walk_body(ev, s->if_.else_body, env_new(ev, env), ops, ctx, job);
}

/* Append the value of {name} to @out; false if it is not known yet. */
static bool interpolate_one(struct eval *ev, struct env *env, const char *name, size_t len,
			    struct strbuf *out, struct loc *blame, struct env *job)
{
	const char *n = intern(ev->interner, name, len);
	struct expr e = { .kind = EXPR_NAME, .loc = NO_LOC, .name.name = n };
	struct value v = eval_expr(ev, env, &e), jv;
	char buf[64];

	if (v.kind == VAL_ERROR || v.unknown)
		return false;
	if (v.kind == VAL_NUM)
		strbuf_addstr(out, num_format(v.num, buf, sizeof buf, 4));
	else if (v.kind == VAL_SYMBOL || v.kind == VAL_STRING)
		strbuf_addstr(out, v.str);
	else if (v.kind == VAL_BOOL)
		strbuf_addstr(out, v.b ? "true" : "false");
	else if (v.kind == VAL_DTYPE)
		strbuf_addstr(out, dtype_name(v.dtype));
	else
		strbuf_addstr(out, n);
	/* the warning belongs at the line of the job that chose this value */
	if (!blame->file && env_lookup(job, n, &jv) && jv.origin.file)
		*blame = jv.origin;
	return true;
}

/* `warn "tp ({tp}) above kv_heads ({kv_heads})"`: only in the checker's
 * walk of a job (the analyzer re-walks with other bindings, e.g. tp = 1
 * for the unsharded count), once per job, and only once every {name} has
 * a value. */
static void walk_warn(struct eval *ev, const struct stmt *s, struct env *env, struct env *job)
{
	const char *m = s->warn.message;
	struct strbuf sb;
	struct loc blame = NO_LOC;
	bool ok = true;

	if (!job || job != ev->warn_job)
		return;
	strbuf_init(&sb);
	while (*m && ok) {
		const char *close = *m == '{' ? strchr(m, '}') : NULL;

		if (close) {
			ok = interpolate_one(ev, env, m + 1, (size_t)(close - m - 1), &sb, &blame, job);
			m = close + 1;
		} else {
			strbuf_addch(&sb, *m++);
		}
	}
	if (ok) {
		ev->report_salt = (uintptr_t)ev->warn_train;
		struct diag *d = eval_error(ev, DIAG_LAYOUT, blame.file ? blame : s->loc, "%s", sb.buf);

		ev->report_salt = 0;
		if (blame.file)
			diag_note(d, s->loc, "warning written in layer '%s'",
				  ev->depth ? ev->layers[ev->depth - 1]->name : "?");
		else if (ev->warn_train)
			diag_note(d, ev->warn_train->name_loc, "for train block '%s'", ev->warn_train->name);
	}
	strbuf_release(&sb);
}

static void walk_body(struct eval *ev, const struct stmt *s, struct env *env, const struct walk_ops *ops,
		      void *ctx, struct env *job)
{
	for (; s; s = s->next) {
		if (!walk_step(ev, s))
			return;
		switch (s->kind) {
		case STMT_TENSOR: walk_tensor(ev, s, env, ops, ctx); break;
		case STMT_INSTANCE: walk_instance(ev, s, env, ops, ctx, job); break;
		case STMT_REPEAT: walk_repeat(ev, s, env, ops, ctx, job); break;
		case STMT_IF: walk_if(ev, s, env, ops, ctx, job); break;
		case STMT_WARN: walk_warn(ev, s, env, job); break;
		case STMT_LET: {
			bool in_shape = ev->in_shape;

			/* counts in a body are whole: a let's division must be exact too */
			ev->in_shape = true;
			struct value v = eval_expr(ev, env, s->let.value);

			ev->in_shape = in_shape;
			v.origin = s->let.name_loc;
			v.label = s->let.name;
			env_bind(env, s->let.name, v);
			break;
		}
		case STMT__COUNT: break;
		}
	}
}

void eval_walk(struct eval *ev, struct value inst, struct env *job, const struct walk_ops *ops, void *ctx)
{
	if (inst.kind != VAL_INSTANCE)
		return;
	if (ev->depth >= EVAL_MAX_DEPTH)
		return;
	env_set_parent(inst.args, job);
	if (ev->steps_reported)
		return;		/* one runaway template is enough: do not walk the rest */
	if (ev->depth == 0)
		ev->steps = 0;
	const struct walk_ops *saved_ops = ev->walk_ops;
	void *saved_ctx = ev->walk_ctx;

	ev->walk_ops = ops;
	ev->walk_ctx = ctx;
	ev->layers[ev->depth] = inst.decl;
	ev->layer_calls[ev->depth++] = inst.loc;
	walk_body(ev, inst.decl->templ.body, env_new(ev, inst.args), ops, ctx, job);
	ev->depth--;
	ev->walk_ops = saved_ops;
	ev->walk_ctx = saved_ctx;
}
