/* SPDX-License-Identifier: MIT */
/*
 * eval.c - environments and expression evaluation (see eval.h).
 *
 * Arithmetic is exact (lang/num.c): an overflow or a division by zero is
 * an error at the operator, never a wrapped or infinite number. `+`, `-`
 * and comparisons need equal dimensions; `*` and `/` combine them. A
 * division of two whole counts inside a shape must leave no remainder:
 * the error names both operands and points back at the divisor's binding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/builtins.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/source.h"
#include "lang/strbuf.h"

struct value val_error(struct loc loc)
{
	return (struct value){ .kind = VAL_ERROR, .loc = loc, .origin = loc };
}

struct value val_unknown_num(struct dim d, struct loc loc)
{
	return (struct value){ .kind = VAL_NUM, .unknown = true, .dim = d, .loc = loc, .origin = loc };
}

struct value val_count(uint64_t n, struct loc loc)
{
	struct value v = { .kind = VAL_NUM, .dim = DIM_SCALAR, .loc = loc, .origin = loc };

	if (num_from_u64(n, &v.num) != NUM_OK)
		v.kind = VAL_ERROR;
	return v;
}

struct value val_symbol(struct eval *ev, const char *s, struct loc loc)
{
	return (struct value){ .kind = VAL_SYMBOL, .str = intern_cstr(ev->interner, s), .loc = loc,
			       .origin = loc };
}

struct eval *eval_new(struct arena *a, struct interner *in, struct diag_engine *de,
		      const struct scope *scope)
{
	struct eval *ev = ARENA_NEW(a, struct eval);

	ev->arena = a;
	ev->perm = a;
	ev->interner = in;
	ev->diag = de;
	ev->scope = scope;
	ev->none = intern_cstr(in, "none");
	return ev;
}

struct arena *eval_use_arena(struct eval *ev, struct arena *a)
{
	struct arena *old = ev->arena;

	ev->arena = a;
	return old;
}

struct diag_engine *eval_diag(struct eval *ev) { return ev->diag; }
struct interner *eval_interner(struct eval *ev) { return ev->interner; }
const struct scope *eval_scope(struct eval *ev) { return ev->scope; }
struct arena *eval_perm(struct eval *ev) { return ev->perm; }
unsigned long eval_reports(const struct eval *ev) { return ev->reports; }
bool eval_walks_stopped(const struct eval *ev) { return ev->steps_reported; }
void **eval_build_cache(struct eval *ev) { return &ev->build_cache; }
struct import_cache *eval_import_cache(const struct eval *ev) { return ev->import_cache; }

/* ---- reporting once per location ---- */

/* FNV-1a: the message is part of what makes a report new, so one shape
 * that fails with other numbers under another job is reported again. */
static uint64_t hash_text(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001B3u;
	return h;
}

/* A set (u64map.h): with --max-errors=0 a file may report
 * thousands of distinct errors, each asked for on every walked use. It
 * lives in the compilation's arena (a job's scratch arena is freed after
 * its report). A key reported before the jobs holds for every job; one
 * reported inside a job is salted with that job's number, so each job
 * reports its own errors, also those another job had at the same stdlib
 * line (`heads / tp`): a job whose error was deduplicated away would look
 * clean and be analysed. */
static bool seen_before(struct eval *ev, uint64_t key)
{
	uint64_t salted = ev->job_gen ? key ^ ev->job_gen * 0xD6E8FEB86659FD93u : key;

	if (u64map_get(&ev->seen, key) || u64map_get(&ev->seen, salted))
		return true;
	u64map_put(&ev->seen, ev->perm, salted, ev);	/* any non-NULL value */
	return false;
}

static __attribute__((format(printf, 4, 0))) uint64_t report_key(struct eval *ev, int id, struct loc loc,
								  const char *fmt, va_list ap)
{
	struct strbuf msg;
	va_list cp;
	uint64_t h = 0xCBF29CE484222325u ^ ev->report_salt * 0x9E3779B97F4A7C15u;

	strbuf_init(&msg);
	va_copy(cp, ap);
	strbuf_vaddf(&msg, fmt, cp);
	va_end(cp);
	h = (h ^ loc.file) * 0x100000001B3u;
	h = (h ^ loc.start) * 0x100000001B3u;
	h = (h ^ (uint64_t)id) * 0x100000001B3u;
	h = hash_text(h, msg.buf);
	strbuf_release(&msg);
	return h;
}

static __attribute__((format(printf, 4, 0))) struct diag *vreport(struct eval *ev, int id, struct loc loc,
								    const char *fmt, va_list ap)
{
	ev->reports++;
	if (ev->quiet) {
		if (diag_kind_of((enum diag_id)id) == DIAG_KIND_ERROR)
			ev->quiet_errors++;
		return diag_sink(ev->diag);
	}
	if (diag_too_many(ev->diag))
		return diag_sink(ev->diag);	/* capped: do not grow the seen list */
	if (seen_before(ev, report_key(ev, id, loc, fmt, ap))) {
		/* the sink: notes on it are dropped */
		return diag_sink(ev->diag);
	}
	return diag_vemit(ev->diag, (enum diag_id)id, loc, fmt, ap);
}

struct diag *eval_error(struct eval *ev, int id, struct loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	struct diag *d = vreport(ev, id, loc, fmt, ap);
	va_end(ap);
	return d;
}

/* ---- environments: small frames, searched innermost first ---- */

struct binding {
	const char *name;
	struct value v;
	struct binding *next;
	bool read;		/* found by a lookup (env_was_read) */
};

struct env {
	struct env *parent;
	struct binding *first, **tail;
	struct eval *ev;
	uint64_t names;		/* name_bit() of every name bound here */
};

/* A bit per name, from its interned address: a lookup skips each frame
 * whose bits rule the name out. Most lookups are of global names (dtypes,
 * units, declarations) that no frame binds, and the static walk's job
 * frame, two dozen bindings, is the ancestor of every frame of its walk. */
static inline uint64_t name_bit(const char *name)
{
	uintptr_t p = (uintptr_t)name;

	return (uint64_t)1 << ((p >> 4 ^ p >> 10) & 63);
}

struct env *env_new(struct eval *ev, struct env *parent)
{
	struct env *e = ARENA_NEW(ev->arena, struct env);

	e->parent = parent;
	e->tail = &e->first;
	e->ev = ev;
	return e;
}

void env_set_parent(struct env *e, struct env *parent)
{
	e->parent = parent;
}

struct env *env_parent(const struct env *e)
{
	return e->parent;
}

void env_bind(struct env *e, const char *name, struct value v)
{
	struct binding *b = ARENA_NEW(e->ev->arena, struct binding);

	b->name = name;
	b->v = v;
	*e->tail = b;
	e->tail = &b->next;
	e->names |= name_bit(name);
}

bool env_lookup(const struct env *e, const char *name, struct value *out)
{
	uint64_t bit = name_bit(name);

	for (; e; e = e->parent)
		for (struct binding *b = e->names & bit ? e->first : NULL; b; b = b->next)
			if (b->name == name) {
				b->read = true;
				*out = b->v;
				return true;
			}
	return false;
}

bool env_was_read(const struct env *e, const char *name)
{
	for (; e; e = e->parent)
		for (const struct binding *b = e->first; b; b = b->next)
			if (b->name == name)
				return b->read;
	return false;
}

const char *env_name_at(const struct env *e, unsigned i, struct value *out)
{
	const struct binding *b = e->first;

	while (b && i--)
		b = b->next;
	if (!b)
		return NULL;
	*out = b->v;
	return b->name;
}

const struct binding *env_next_binding(const struct env *e, const struct binding *prev, const char **name,
				       const struct value **v)
{
	const struct binding *b = prev ? prev->next : e->first;

	if (b) {
		*name = b->name;
		*v = &b->v;
	}
	return b;
}

/* ---- describing values in messages ---- */

const char *eval_type_name(const struct value *v, char *buf, size_t n)
{
	switch (v->kind) {
	case VAL_NUM: return dim_describe(v->dim, buf, n);
	case VAL_BOOL: return "bool";
	case VAL_STRING: return "string";
	case VAL_DTYPE: return "dtype";
	case VAL_SYMBOL: return "a name";
	case VAL_NONE: return "none";
	case VAL_LIST: return "list";
	case VAL_DECL: case VAL_INSTANCE:
		snprintf(buf, n, "%s", v->decl ? ast_decl_keyword[v->decl->kind] : "declaration");
		return buf;
	case VAL_CALL: return "call";
	case VAL_CLUSTER: return "cluster";
	case VAL_ERROR: return "error";
	}
	return "value";
}

/* "tp (3)" or "hidden / heads (128)". */
const char *eval_describe(struct eval *ev, const struct value *v, char *buf, size_t n)
{
	char num[64];
	const char *label = v->label;
	char text[48];

	if (!label) {
		const struct src_file *f = ev->src ? src_get(ev->src, v->loc.file) : NULL;
		uint32_t len = v->loc.end - v->loc.start;

		if (f && len < sizeof text) {
			memcpy(text, f->text + v->loc.start, len);
			text[len] = '\0';
			label = text;
		}
	}
	if (v->kind == VAL_NUM && !v->unknown)
		num_format(v->num, num, sizeof num, 6);
	else
		snprintf(num, sizeof num, "?");
	if (label && strcmp(label, num) != 0)
		snprintf(buf, n, "%s (%s)", label, num);
	else
		snprintf(buf, n, "%s", num);
	return buf;
}

/* ---- quiet mode, for "what if" evaluations ---- */

void eval_set_quiet(struct eval *ev, bool quiet)
{
	ev->quiet = quiet;
	ev->quiet_errors = 0;
}

unsigned eval_quiet_errors(const struct eval *ev)
{
	return ev->quiet_errors;
}
