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
	in->lit_from = in->lit_to = NULL;
	in->nlit = in->caplit = 0;
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

const char *intern_cstr(struct interner *in, const char *s)
{
	return intern(in, s, strlen(s));
}

static size_t lit_slot(const struct interner *in, const char *s)
{
	uint64_t h = (uint64_t)(uintptr_t)s * UINT64_C(0x9E3779B97F4A7C15);
	size_t i = (size_t)(h >> 40) & (in->caplit - 1);

	while (in->lit_from[i] && in->lit_from[i] != s)
		i = (i + 1) & (in->caplit - 1);
	return i;
}

/* Twice the room, the entries placed again (kept at most half full). */
static void lit_grow(struct interner *in)
{
	const char **from = in->lit_from, **to = in->lit_to;
	size_t old = in->caplit;

	in->caplit = old ? old * 2 : 64;
	in->lit_from = ARENA_NEW_ARRAY(in->arena, const char *, in->caplit);
	in->lit_to = ARENA_NEW_ARRAY(in->arena, const char *, in->caplit);
	for (size_t i = 0; i < old; i++)
		if (from[i]) {
			size_t j = lit_slot(in, from[i]);

			in->lit_from[j] = from[i];
			in->lit_to[j] = to[i];
		}
}

const char *intern_static(struct interner *in, const char *s)
{
	size_t i;

	if (in->caplit) {
		i = lit_slot(in, s);
		if (in->lit_from[i])
			return in->lit_to[i];
	}
	if (2 * (in->nlit + 1) > in->caplit)
		lit_grow(in);
	i = lit_slot(in, s);
	in->lit_from[i] = s;
	in->lit_to[i] = intern_cstr(in, s);
	in->nlit++;
	return in->lit_to[i];
}

const char *intern_find(const struct interner *in, const char *s, size_t n)
{
	struct intern_entry *e = lookup(in, s, n, fnv1a(s, n));

	return e ? e->str : NULL;
}

struct intern_memo *intern_memo(const struct interner *in, const char *s)
{
	size_t n = strlen(s);
	struct intern_entry *e = lookup(in, s, n, fnv1a(s, n));

	return e && e->str == s ? &e->memo : NULL;
}
