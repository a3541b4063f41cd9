/* SPDX-License-Identifier: MIT */
/*
 * arena.h - region allocator for everything that lives as long as one
 * compilation: source text, interned strings, AST nodes, types and
 * diagnostics.
 *
 * Invariants:
 *  - arena_alloc() never returns NULL. If memory runs out the process prints
 *    "memc: out of memory" and aborts: a compiler can do nothing useful
 *    without memory, and checking NULL everywhere hides real bugs.
 *  - Memory is zero-filled and aligned for any object type (max_align_t).
 *  - Blocks never move, so a pointer stays valid until arena_free().
 *  - Nothing is freed on its own; arena_free() releases everything and
 *    leaves the arena empty and reusable.
 *
 * A zero-initialised struct arena is a valid empty arena:
 *
 *	struct arena a = {0};
 *	struct node *n = ARENA_NEW(&a, struct node);
 *	...
 *	arena_free(&a);
 *
 * The x*() helpers are for the few heap buffers that are not in an arena
 * (strbuf, growable tables); they abort on failure in the same way.
 */
#ifndef MEMC_LANG_ARENA_H
#define MEMC_LANG_ARENA_H

#include <stdarg.h>
#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;	/* block being filled; NULL when empty */
	size_t used;			/* bytes used in head */
};

void *arena_alloc(struct arena *a, size_t size);
/* arena_alloc() without the zeroing, for an array whose elements are each
 * written before they are read: zeroing a grown table of struct values
 * per train block cost more than filling it. */
void *arena_alloc_raw(struct arena *a, size_t size);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
char *arena_vprintf(struct arena *a, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* The strings up to the NULL, concatenated: the "%s%s" of arena_printf
 * without a format string, for keys and paths built once per field. */
char *arena_concat(struct arena *a, ...) __attribute__((sentinel));
void arena_free(struct arena *a);

#define ARENA_NEW(a, type) ((type *)arena_alloc((a), sizeof(type)))
#define ARENA_NEW_ARRAY(a, type, n) \
	((type *)arena_alloc((a), arena_array_size(sizeof(type), (n))))

/* size * n, aborting on overflow instead of allocating a short array. */
size_t arena_array_size(size_t size, size_t n);

/* Make room for one more element in the arena array *@p of @n elements of
 * @size bytes and capacity *@cap (doubling; the old block is abandoned to
 * the arena). Returns the (possibly moved) array. */
void *arena_grow(struct arena *a, void *p, size_t n, size_t *cap, size_t size);
#define ARENA_GROW(a, p, n, cap) ((p) = arena_grow((a), (p), (n), &(cap), sizeof *(p)))

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
/* Print "memc: out of memory" on stderr and abort(). */
_Noreturn void xdie_oom(void);

#endif
