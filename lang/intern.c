/* SPDX-License-Identifier: MIT */
/*
 * intern.c - a chained hash table of interned strings, kept in the arena.
 * FNV-1a hashing; the table doubles when the load factor reaches 1. Old
 * slot arrays are abandoned in the arena, which costs at most as much again
 * as the final table.
 */
#include "lang/intern.h"

#include <stdint.h>
#include <string.h>

#include "lang/arena.h"

struct intern_entry {
	struct intern_entry *next;	/* next entry in the same slot */
	uint32_t hash;
	size_t len;
	struct intern_memo memo;
	char str[];			/* NUL-terminated copy */
};

enum { INTERN_INITIAL_SLOTS = 256 };

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

void interner_init(struct interner *in, struct arena *a)
{
	in->arena = a;
	in->nslots = INTERN_INITIAL_SLOTS;
	in->slots = ARENA_NEW_ARRAY(a, struct intern_entry *, in->nslots);
	in->count = 0;
	in->lits = in->strs = (struct intern_ptrmap){ NULL, NULL, 0, 0 };
}

struct interner *interner_new(struct arena *a)
{
	struct interner *in = ARENA_NEW(a, struct interner);

	interner_init(in, a);
	return in;
}

static struct intern_entry *lookup(const struct interner *in, const char *s, size_t n,
				   uint32_t h)
{
	struct intern_entry *e = in->slots[h & (in->nslots - 1)];

	for (; e; e = e->next)
		if (e->hash == h && e->len == n && memcmp(e->str, s, n) == 0)
			return e;
	return NULL;
}

static void grow(struct interner *in)
{
	size_t nslots = in->nslots * 2;
	struct intern_entry **slots = ARENA_NEW_ARRAY(in->arena, struct intern_entry *, nslots);

	for (size_t i = 0; i < in->nslots; i++) {
		struct intern_entry *e = in->slots[i];

		while (e) {
			struct intern_entry *next = e->next;
			size_t j = e->hash & (nslots - 1);

			e->next = slots[j];
			slots[j] = e;
			e = next;
		}
	}
	in->slots = slots;
	in->nslots = nslots;
}

static size_t ptr_slot(const struct intern_ptrmap *m, const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15);
	size_t i = (size_t)(h >> 40) & (m->cap - 1);

	while (m->from[i] && m->from[i] != p)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void *ptr_get(const struct intern_ptrmap *m, const void *p)
{
	size_t i = m->cap ? ptr_slot(m, p) : 0;

	return m->cap && m->from[i] ? m->to[i] : NULL;
}

static void ptr_put(struct intern_ptrmap *m, struct arena *a, const void *p, void *to);

/* Twice the room, the entries placed again. */
static void ptr_grow(struct intern_ptrmap *m, struct arena *a)
{
	struct intern_ptrmap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->n = 0;
	m->from = ARENA_NEW_ARRAY(a, const void *, m->cap);
	m->to = ARENA_NEW_ARRAY(a, void *, m->cap);
	for (size_t i = 0; i < old.cap; i++)
		if (old.from[i])
			ptr_put(m, a, old.from[i], old.to[i]);
}

static void ptr_put(struct intern_ptrmap *m, struct arena *a, const void *p, void *to)
{
	if (2 * (m->n + 1) > m->cap)
		ptr_grow(m, a);
	size_t i = ptr_slot(m, p);

	m->n += !m->from[i];
	m->from[i] = p;
	m->to[i] = to;
}

const char *intern(struct interner *in, const char *s, size_t n)
{
	uint32_t h = fnv1a(s, n);
	struct intern_entry *e = lookup(in, s, n, h);

	if (e)
		return e->str;
	if (in->count >= in->nslots)
		grow(in);
	e = arena_alloc(in->arena, sizeof(*e) + n + 1);
	e->hash = h;
	e->len = n;
	e->memo = (struct intern_memo){ 0, 0 };
	memcpy(e->str, s, n);
	e->str[n] = '\0';
	size_t j = h & (in->nslots - 1);
	e->next = in->slots[j];
	in->slots[j] = e;
	in->count++;
	return e->str;
}

const char *intern_static(struct interner *in, const char *s)
{
	const char *got = ptr_get(&in->lits, s);

	if (got)
		return got;
	got = intern_cstr(in, s);
	ptr_put(&in->lits, in->arena, s, (void *)(uintptr_t)got);
	return got;
}

const char *intern_cstr(struct interner *in, const char *s)
{
	return intern(in, s, strlen(s));
}

const char *intern_find(const struct interner *in, const char *s, size_t n)
{
	struct intern_entry *e = lookup(in, s, n, fnv1a(s, n));

	return e ? e->str : NULL;
}

/* By address once found by bytes: the few names whose memo is asked for
 * (units and dtypes, at every tensor of every walk) are each hashed once,
 * not every time. in->strs holds only interned strings, each with its own
 * entry, so what it answers is what the lookup by bytes would. It is the
 * interner's own cache, so the interner, const to the caller, is never
 * one that cannot be written. */
struct intern_memo *intern_memo(const struct interner *in, const char *s)
{
	struct intern_entry *e = ptr_get(&in->strs, s);

	if (e)
		return &e->memo;
	size_t n = strlen(s);

	e = lookup(in, s, n, fnv1a(s, n));
	if (!e || e->str != s)
		return NULL;
	struct interner *w = (struct interner *)(uintptr_t)in;

	ptr_put(&w->strs, w->arena, s, e);
	return &e->memo;
}
