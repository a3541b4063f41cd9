/* SPDX-License-Identifier: MIT */
/*
 * arena.c - a chain of blocks of at least 64 KiB. Small requests are carved
 * from the newest block; a request too big to share a block gets a block of
 * its own, linked behind the current one so the current block keeps filling.
 * arena_free() walks the chain once.
 */
#include "lang/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	struct arena_block *prev;
	size_t cap;			/* payload bytes */
	max_align_t data[];		/* keeps the payload maximally aligned */
};

enum {
	ARENA_BLOCK_MIN = 64 * 1024,
	/* Requests above this get a dedicated block; wasting the tail of the
	 * current block for them would waste up to a quarter of a block. */
	ARENA_BIG = ARENA_BLOCK_MIN / 4,
};

#define ARENA_ALIGN alignof(max_align_t)

_Noreturn void xdie_oom(void)
{
	fputs("memc: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		xdie_oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		xdie_oom();
	return p;
}

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		xdie_oom();
	return q;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

size_t arena_array_size(size_t size, size_t n)
{
	if (size && n > SIZE_MAX / size)
		xdie_oom();
	return size * n;
}

static struct arena_block *new_block(size_t cap)
{
	if (cap > SIZE_MAX - sizeof(struct arena_block))
		xdie_oom();
	struct arena_block *b = xmalloc(sizeof(*b) + cap);

	b->prev = NULL;
	b->cap = cap;
	return b;
}

/* A big request: its own block, slotted behind head so head stays current. */
static void *alloc_big(struct arena *a, size_t size)
{
	struct arena_block *b = new_block(size);

	if (a->head) {
		b->prev = a->head->prev;
		a->head->prev = b;
	} else {
		a->head = b;
		a->used = size;
	}
	return b->data;
}

/* Inlined into both arena_alloc and arena_alloc_raw: the memset of the
 * first stays a tail call. */
static inline void *carve(struct arena *a, size_t size)
{
	if (size > SIZE_MAX - ARENA_ALIGN)
		xdie_oom();
	size = (size + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (size > ARENA_BIG)
		return alloc_big(a, size);
	if (!a->head || a->head->cap - a->used < size) {
		struct arena_block *b = new_block(ARENA_BLOCK_MIN);

		b->prev = a->head;
		a->head = b;
		a->used = 0;
	}
	void *p = (char *)a->head->data + a->used;
	a->used += size;
	return p;
}

void *arena_alloc_raw(struct arena *a, size_t size)
{
	return carve(a, size);
}

void *arena_alloc(struct arena *a, size_t size)
{
	return memset(carve(a, size), 0, size);
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(struct arena *a, const char *fmt, va_list ap)
{
	va_list ap2;

	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;	/* an encoding error yields "", never a crash */
	char *p = arena_alloc(a, (size_t)n + 1);
	if (n > 0)
		vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *p = arena_vprintf(a, fmt, ap);
	va_end(ap);
	return p;
}

char *arena_concat(struct arena *a, ...)
{
	va_list ap;
	size_t n = 0;

	va_start(ap, a);
	for (const char *s; (s = va_arg(ap, const char *));) {
		size_t len = strlen(s);

		if (len > SIZE_MAX - 1 - n)
			xdie_oom();
		n += len;
	}
	va_end(ap);
	char *p = arena_alloc(a, n + 1), *q = p;

	va_start(ap, a);
	for (const char *s; (s = va_arg(ap, const char *));) {
		size_t len = strlen(s);

		memcpy(q, s, len);
		q += len;
	}
	va_end(ap);
	*q = '\0';
	return p;
}

void arena_free(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *prev = b->prev;

		free(b);
		b = prev;
	}
	a->head = NULL;
	a->used = 0;
}

void *arena_grow(struct arena *a, void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 8;
	void *q = arena_alloc(a, arena_array_size(size, *cap));

	if (n)
		memcpy(q, p, n * size);
	return q;
}
