/* SPDX-License-Identifier: MIT */
/*
 * walk_cache.c - the checker's walk of a model, once per model instance and
 * set of bindings.
 *
 * A file of many train blocks over one model walks that model under each
 * job's bindings (check_job_bindings: batch, seq, the layout, the compute
 * dtype, ...). The walk reads nothing else of the job: two jobs that bind
 * the same values to the same instance walk the same tensors, so the second
 * reuses what the first recorded (struct check_model: the distinct
 * parameter tensors and the count of the model's body). The key is the
 * whole binding environment, compared value by value: it holds only what a
 * model may read, so recording reads would save little and cost a hook in
 * every name lookup (docs/architecture.md, "The checker's walk, once per
 * model and bindings"). One outcome of the walk is a read all the same:
 * whether a layer read rope_cache (env_was_read), kept with the entry.
 *
 * Only a walk that asked for no diagnostic at all is kept (eval->reports,
 * counted in vreport whether the report is printed, deduplicated or
 * quiet): a job whose walk would report walks again and reports at its own
 * lines, so the output does not depend on the cache.
 *
 * A walk is also kept for every compilation that shares the program's
 * import cache (struct walk_store: the file's own, the -Wcapacity search
 * context and its verifications, memc fit's variants, all of one file's
 * declarations): there the key names each declaration by the node the
 * cache parsed (import_cache_origin), the same in all of them, and only a
 * walk whose key and outcome name nothing else is kept, so no pointer of
 * an entry leads into a compilation's own arena, which may be freed and
 * reused while the store lives.
 */
#include <string.h>

#include "lang/arena.h"
#include "lang/check_impl.h"
#include "lang/eval_impl.h"
#include "lang/import.h"
#include "lang/source.h"
#include "lang/walk_cache.h"

struct walk_cache_entry {
	struct walk_key key;		/* the model, then the bindings */
	struct check_param *params;	/* the walk's outcome */
	size_t nparams;
	bool have_body, body_known;
	uint64_t body;
	bool rope_read, tt_rope_read;
	struct walk_cache_entry *next;	/* same hash */
};

struct walk_cache {
	struct u64map by_hash;
	struct walk_key key;		/* the key being looked up (reused) */
	unsigned long hits, misses;
};

/* The walks kept for the compilations that share an import cache, in its
 * arena (docs/limits.md). */
struct walk_store {
	struct arena *arena;
	struct u64map by_hash;
	struct walk_key key;		/* the canonical key being looked up (reused) */
	size_t entries;
	unsigned long hits, misses;
};

enum { WALK_KEY_DEPTH = 16, WALK_STORE_MAX = 1024 };

static uint64_t mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * 0x100000001B3u;
}

/* A string's bytes, as atom_same compares them: a string literal is copied
 * into the arena where it is written (lex_string), not interned, so two
 * jobs that write the same "..." hold two pointers, and hashing the pointer
 * would file equal keys apart (each job walking again). */
static uint64_t str_hash(const char *s)
{
	return s ? src_digest(s, strlen(s)) : 0;
}

static uint64_t atom_hash(uint64_t h, const struct walk_atom *a)
{
	const struct value *v = &a->v;

	h = mix(h, (uintptr_t)a->name ^ (uint64_t)v->kind << 56 ^ (uint64_t)v->unknown << 63);
	switch (v->kind) {
	case VAL_NUM: {
		uint64_t d = 0;

		for (unsigned i = 0; i < DIM__COUNT; i++)	/* the exponents as one word */
			d = d << 8 | (uint8_t)v->dim.e[i];
		h = mix(h, d);
		return v->unknown ? h : mix(mix(h, (uint64_t)v->num.n), (uint64_t)v->num.d);
	}
	case VAL_BOOL: return mix(h, v->b);
	case VAL_STRING: case VAL_SYMBOL: return mix(h, str_hash(v->str));
	case VAL_CALL: return mix(mix(h, str_hash(v->str)), v->nitems);
	case VAL_DTYPE: return mix(h, (uintptr_t)v->dtype);
	case VAL_LIST: return mix(h, v->nitems);
	case VAL_DECL: case VAL_INSTANCE: return mix(mix(h, (uintptr_t)v->decl), v->nitems);
	case VAL_CLUSTER:
		return mix(mix(mix(h, (uintptr_t)v->decl), (uint64_t)v->nodes.n), (uint64_t)v->gpus.n);
	case VAL_ERROR: case VAL_NONE: break;
	}
	return h;
}

/* What a walk can read of a value; never where it was written (a walk
 * that would point at a line reports, and is not kept). */
static bool atom_same(const struct walk_atom *x, const struct walk_atom *y)
{
	const struct value *a = &x->v, *b = &y->v;

	if (x->name != y->name || a->kind != b->kind || a->unknown != b->unknown || a->nitems != b->nitems)
		return false;
	switch (a->kind) {
	case VAL_NUM:	/* num_eq and dim_eq, inline: an atom of every binding */
		return !memcmp(a->dim.e, b->dim.e, sizeof a->dim.e) &&
		       (a->unknown || (a->num.n == b->num.n && a->num.d == b->num.d));
	case VAL_BOOL: return a->b == b->b;
	case VAL_STRING: case VAL_SYMBOL: case VAL_CALL:
		return a->str == b->str || (a->str && b->str && !strcmp(a->str, b->str));
	case VAL_DTYPE: return a->dtype == b->dtype;
	case VAL_DECL: case VAL_INSTANCE: return a->decl == b->decl;
	case VAL_CLUSTER:
		return a->decl == b->decl && num_eq(a->nodes, b->nodes) && num_eq(a->gpus, b->gpus);
	case VAL_LIST: case VAL_ERROR: case VAL_NONE: break;
	}
	return true;
}

static unsigned env_count(const struct env *e)
{
	const struct binding *b = NULL;
	const struct value *v;
	const char *name;
	unsigned n = 0;

	while (e && (b = env_next_binding(e, b, &name, &v)))
		n++;
	return n;
}

static void flatten_env(struct walk_key *c, const struct env *e, unsigned depth);

static void flatten(struct walk_key *c, const char *name, const struct value *v, unsigned depth)
{
	if (depth > WALK_KEY_DEPTH) {
		c->ok = false;
		return;
	}
	ARENA_GROW(c->arena, c->atoms, c->n, c->cap);
	struct walk_atom *a = &c->atoms[c->n++];

	/* only what atom_hash and atom_same read: the rest of an atom (loc,
	 * origin, label, items, args) is never written, so it stays as the
	 * arena gave it, zero (a tenth of a job's key made field by field) */
	a->name = name;
	a->v.kind = v->kind;
	a->v.unknown = v->unknown;
	a->v.num = v->num;
	a->v.dim = v->dim;
	a->v.b = v->b;
	a->v.str = v->str;
	a->v.dtype = v->dtype;
	a->v.decl = v->decl;
	a->v.nodes = v->nodes;
	a->v.gpus = v->gpus;
	a->v.nitems = v->nitems;
	if (v->kind == VAL_LIST) {
		for (unsigned i = 0; i < v->nitems; i++)
			flatten(c, NULL, &v->items[i], depth + 1);
	} else if (v->kind == VAL_INSTANCE || v->kind == VAL_CALL || v->kind == VAL_DECL) {
		a->v.nitems = env_count(v->args);
		flatten_env(c, v->args, depth + 1);
	}
}

/* An environment's own bindings, in binding order (not its parent's: the
 * instance's parent is the job's frame, flattened beside it). */
static void flatten_env(struct walk_key *c, const struct env *e, unsigned depth)
{
	const struct binding *b = NULL;
	const struct value *v;
	const char *name;

	while (e && (b = env_next_binding(e, b, &name, &v)))
		flatten(c, name, v, depth);
}

void walk_key_clear(struct walk_key *k, struct arena *a)
{
	if (k->arena != a) {	/* the atoms grown in another arena are not reused */
		k->atoms = NULL;
		k->cap = 0;
	}
	k->arena = a;
	k->n = 0;
	k->ok = true;
}

void walk_key_value(struct walk_key *k, const char *name, const struct value *v)
{
	flatten(k, name, v, 0);
}

void walk_key_env(struct walk_key *k, const struct env *e)
{
	flatten_env(k, e, 0);
}

uint64_t walk_key_hash(const struct walk_key *k, uint64_t h)
{
	for (size_t i = 0; i < k->n; i++)
		h = atom_hash(h, &k->atoms[i]);
	return h;
}

bool walk_key_equal(const struct walk_key *x, const struct walk_key *y)
{
	if (x->n != y->n)
		return false;
	for (size_t i = 0; i < x->n; i++)
		if (!atom_same(&x->atoms[i], &y->atoms[i]))
			return false;
	return true;
}

void walk_key_copy(struct walk_key *dst, const struct walk_key *src, struct arena *a)
{
	dst->arena = a;
	dst->n = dst->cap = src->n;
	dst->ok = src->ok;
	dst->atoms = ARENA_NEW_ARRAY(a, struct walk_atom, src->n ? src->n : 1);
	if (src->n)
		memcpy(dst->atoms, src->atoms, src->n * sizeof *src->atoms);
}

bool walk_key_canonical(struct walk_key *dst, const struct walk_key *src, struct arena *a,
			const struct import_cache *ic)
{
	walk_key_clear(dst, a);
	if (!src->ok)
		return dst->ok = false;
	for (size_t i = 0; i < src->n; i++) {
		ARENA_GROW(a, dst->atoms, dst->n, dst->cap);
		struct walk_atom *x = &dst->atoms[dst->n++];

		*x = src->atoms[i];
		if (x->v.decl && !(x->v.decl = import_cache_origin(ic, x->v.decl)))
			return dst->ok = false;
	}
	return true;
}

static uint64_t make_key(struct walk_cache *c, struct arena *a, struct value model, const struct env *bindings)
{
	walk_key_clear(&c->key, a);
	walk_key_value(&c->key, NULL, &model);
	walk_key_env(&c->key, bindings);
	return walk_key_hash(&c->key, 0xCBF29CE484222325u);
}

static struct walk_cache *cache_of(struct eval *ev)
{
	if (!ev->walk_cache)
		ev->walk_cache = ARENA_NEW(ev->perm, struct walk_cache);
	return ev->walk_cache;
}

static struct walk_store *store_of(struct eval *ev)
{
	struct import_cache *ic = ev->import_cache;
	void **slot = ic ? import_cache_slot(ic, IMPORT_CACHE_WALKS) : NULL;

	if (slot && !*slot) {
		struct walk_store *s = ARENA_NEW(import_cache_arena(ic), struct walk_store);

		s->arena = import_cache_arena(ic);
		*slot = s;
	}
	return slot ? *slot : NULL;
}

static void fill(struct check_model *out, const struct walk_cache_entry *e)
{
	out->params = e->params;
	out->nparams = out->capparams = e->nparams;
	out->index = NULL;
	out->capindex = 0;
	out->open_repeats = 0;
	out->have_body = e->have_body;
	out->body_known = e->body_known;
	out->body = e->body;
	out->rope_read = e->rope_read;
	out->tt_rope_read = e->tt_rope_read;
}

/* The walk of @k (the key just made) kept by another compilation. */
static bool store_find(struct eval *ev, const struct walk_key *k, struct check_model *out)
{
	struct walk_store *s = store_of(ev);

	if (!s || !walk_key_canonical(&s->key, k, s->arena, ev->import_cache))
		return false;
	for (struct walk_cache_entry *e = u64map_get(&s->by_hash, walk_key_hash(&s->key, 0xCBF29CE484222325u));
	     e; e = e->next)
		if (walk_key_equal(&e->key, &s->key)) {
			fill(out, e);
			s->hits++;
			return true;
		}
	s->misses++;
	return false;
}

static struct walk_cache_entry *new_entry(struct arena *a, const struct walk_cache *c, const struct check_model *m);

/* Put @e first in its slot of @map (the map keeps one entry per hash). */
static void link_entry(struct u64map *map, struct arena *a, uint64_t h, struct walk_cache_entry *e)
{
	struct walk_cache_entry *first = u64map_get(map, h);

	if (first) {
		e->next = first->next;	/* the map's slot keeps its first entry */
		first->next = e;
	} else {
		u64map_put(map, a, h, e);
	}
}

/* What another compilation's walk gave the key just looked up, kept in
 * this one's cache too: the next job with that key is a local hit, not
 * a canonical key made and looked up again (each -Wcapacity variant is
 * such a job). */
static void keep_local(struct eval *ev, struct walk_cache *c, uint64_t h, const struct check_model *m)
{
	link_entry(&c->by_hash, ev->perm, h, new_entry(ev->perm, c, m));
}

uint64_t walk_cache_key(struct eval *ev, struct value model, const struct env *bindings)
{
	return make_key(cache_of(ev), ev->perm, model, bindings);
}

bool walk_cache_find(struct eval *ev, struct value model, const struct env *bindings, struct check_model *out)
{
	struct walk_cache *c = cache_of(ev);

	/* after a runaway template every walk stops at once (walk.c): so does this one */
	if (ev->steps_reported)
		return false;
	uint64_t h = make_key(c, ev->perm, model, bindings);
	struct walk_cache_entry *e = u64map_get(&c->by_hash, h);

	for (; c->key.ok && e; e = e->next)
		if (walk_key_equal(&e->key, &c->key)) {
			fill(out, e);
			c->hits++;
			return true;
		}
	c->misses++;
	if (!c->key.ok || !store_find(ev, &c->key, out))
		return false;
	keep_local(ev, c, h, out);
	return true;
}

static struct walk_cache_entry *new_entry(struct arena *a, const struct walk_cache *c, const struct check_model *m)
{
	struct walk_cache_entry *e = ARENA_NEW(a, struct walk_cache_entry);

	walk_key_copy(&e->key, &c->key, a);
	e->params = ARENA_NEW_ARRAY(a, struct check_param, m->nparams ? m->nparams : 1);
	if (m->nparams)
		memcpy(e->params, m->params, m->nparams * sizeof *m->params);
	e->nparams = m->nparams;
	e->have_body = m->have_body;
	e->body_known = m->body_known;
	e->body = m->body;
	e->rope_read = m->rope_read;
	e->tt_rope_read = m->tt_rope_read;
	return e;
}

/* Keep @m for the compilations sharing the import cache too, when every
 * declaration its key and its parameters name is one the cache parsed:
 * a tensor statement lies under its layer's node, which is then the
 * cache's. */
static void store_put(struct eval *ev, const struct walk_key *k, const struct check_model *m)
{
	struct walk_store *s = store_of(ev);

	if (!s || s->entries >= WALK_STORE_MAX || !walk_key_canonical(&s->key, k, s->arena, ev->import_cache))
		return;
	for (size_t i = 0; i < m->nparams; i++)
		if (!import_cache_origin(ev->import_cache, m->params[i].layer))
			return;
	uint64_t h = walk_key_hash(&s->key, 0xCBF29CE484222325u);
	struct walk_cache_entry *first = u64map_get(&s->by_hash, h);

	for (struct walk_cache_entry *e = first; e; e = e->next)
		if (walk_key_equal(&e->key, &s->key))
			return;	/* kept by another compilation meanwhile */
	struct walk_cache_entry *e = ARENA_NEW(s->arena, struct walk_cache_entry);

	walk_key_copy(&e->key, &s->key, s->arena);
	e->params = ARENA_NEW_ARRAY(s->arena, struct check_param, m->nparams ? m->nparams : 1);
	for (size_t i = 0; i < m->nparams; i++)
		e->params[i] = (struct check_param){ m->params[i].stmt,
						     import_cache_origin(ev->import_cache, m->params[i].layer) };
	e->nparams = m->nparams;
	e->have_body = m->have_body;
	e->body_known = m->body_known;
	e->body = m->body;
	e->rope_read = m->rope_read;
	e->tt_rope_read = m->tt_rope_read;
	if (first) {
		e->next = first->next;
		first->next = e;
	} else {
		u64map_put(&s->by_hash, s->arena, h, e);
	}
	s->entries++;
}

void walk_cache_put(struct eval *ev, struct value model, const struct env *bindings, const struct check_model *m)
{
	struct walk_cache *c = cache_of(ev);
	uint64_t key = make_key(c, ev->perm, model, bindings);

	if (!c->key.ok)
		return;
	link_entry(&c->by_hash, ev->perm, key, new_entry(ev->perm, c, m));
	store_put(ev, &c->key, m);
}

void walk_cache_stats(const struct eval *ev, unsigned long *hits, unsigned long *misses)
{
	*hits = ev->walk_cache ? ev->walk_cache->hits : 0;
	*misses = ev->walk_cache ? ev->walk_cache->misses : 0;
}

void walk_store_stats(struct eval *ev, unsigned long *hits, unsigned long *misses)
{
	const struct walk_store *s = store_of(ev);

	*hits = s ? s->hits : 0;
	*misses = s ? s->misses : 0;
}
