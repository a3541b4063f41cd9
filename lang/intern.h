/* SPDX-License-Identifier: MIT */
/*
 * intern.h - string interning. Equal byte strings intern to the same
 * pointer, so interned names compare with == and can key lookups by
 * address.
 *
 * Invariants:
 *  - The returned string is NUL-terminated, lives in the interner's arena
 *    and stays valid until that arena is freed.
 *  - Strings are compared as bytes: callers normalise (e.g. to NFC) first
 *    if they want canonically equal spellings to meet.
 *  - The hash table is an implementation detail. It is never iterated, so
 *    nothing that reaches the output depends on hash order.
 *  - Everything, the table included, is in the arena: there is no
 *    interner_free().
 */
#ifndef MEMC_LANG_INTERN_H
#define MEMC_LANG_INTERN_H

#include <stddef.h>

struct arena;
struct intern_entry;

/* An address -> address map, open addressing, at most half full. */
struct intern_ptrmap {
	const void **from;
	void **to;
	size_t n, cap;
};

struct interner {
	struct arena *arena;
	struct intern_entry **slots;	/* open hashing, power-of-two size */
	size_t nslots;
	size_t count;
	struct intern_ptrmap lits;	/* intern_static(): a literal -> its interned copy */
	struct intern_ptrmap strs;	/* interned strings asked for -> their entries (intern_memo) */
};

struct interner *interner_new(struct arena *a);
void interner_init(struct interner *in, struct arena *a);
/* Intern the @n bytes at @s (which need not be NUL-terminated). */
const char *intern(struct interner *in, const char *s, size_t n);
/* Intern a NUL-terminated string. */
const char *intern_cstr(struct interner *in, const char *s);
/* Intern @s, a string with static storage (a literal): after the first
 * call its interned copy is found by @s's address, without hashing its
 * bytes. The checker binds twenty-odd such names per train block. */
const char *intern_static(struct interner *in, const char *s);
/* The interned copy of @s, or NULL if it was never interned. */
const char *intern_find(const struct interner *in, const char *s, size_t n);

/*
 * Per-name memo of table lookups, so that the evaluator's many lookups of
 * the same non-local name (about 40 per variant) search the unit and
 * dtype tables once per compilation, not once per use. 0 means "not
 * looked up yet"; the tables (units.c, dtypes.c) give meaning to the
 * rest. Only they write it.
 */
struct intern_memo {
	int unit;
	int dtype;
};

/* The memo of interned string @s, or NULL if @s was never interned. */
struct intern_memo *intern_memo(const struct interner *in, const char *s);

#endif
