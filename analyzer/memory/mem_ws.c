/* SPDX-License-Identifier: MIT */
/*
 * mem_ws.c - the scratch of mem_analyze_ws(): one buffer reset per call,
 * grown to the high-water mark, so that evaluating many variants of a
 * compiled model (analyzer/model/compiled.h) allocates nothing once the
 * largest has been seen.  Without a workspace the same calls are calloc
 * and free, which is what mem_analyze() does.
 */
#include "analyzer/memory/mem_internal.h"

#include <stdlib.h>
#include <string.h>

/* A heap block taken when the buffer was full, linked for the reset. */
struct spill {
	struct spill *next;
	max_align_t data[];
};

enum { WS_ALIGN = sizeof(max_align_t) };

void *mem_ws_alloc(struct mem_ws *ws, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n ? n : 1, size, &bytes) || bytes > SIZE_MAX - 2 * WS_ALIGN)
		return NULL;
	if (!ws)
		return malloc(bytes);
	bytes = (bytes + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN;
	if (ws->cap - ws->used >= bytes) {
		void *p = ws->buf + ws->used;

		ws->used += bytes;
		return p;
	}
	struct spill *s = calloc(1, sizeof(*s) + bytes);

	if (!s)
		return NULL;
	s->next = ws->heap;
	ws->heap = s;
	ws->spilled = ws->spilled > SIZE_MAX - bytes ? SIZE_MAX : ws->spilled + bytes;
	return s->data;
}

void *mem_ws_calloc(struct mem_ws *ws, size_t n, size_t size)
{
	void *p = mem_ws_alloc(ws, n, size);

	/* n x size did not overflow in mem_ws_alloc */
	return p ? memset(p, 0, (n ? n : 1) * size) : NULL;
}

void mem_ws_release(struct mem_ws *ws, void *p)
{
	if (!ws)
		free(p);
}

/* Start a call: free the last call's spills and, if there were any, make
 * the buffer big enough for all of it (twice: segments grow by doubling). */
void mem_ws_reset(struct mem_ws *ws)
{
	size_t want = ws->used;

	for (struct spill *s = ws->heap, *n; s; s = n) {
		n = s->next;
		free(s);
	}
	ws->heap = NULL;
	if (ws->spilled && !__builtin_add_overflow(want, ws->spilled, &want) && want <= SIZE_MAX / 2) {
		unsigned char *b = malloc(want * 2);

		if (b) {
			free(ws->buf);
			ws->buf = b;
			ws->cap = want * 2;
		}
	}
	ws->spilled = 0;
	ws->used = 0;
}

void mem_ws_free(struct mem_ws *ws)
{
	mem_ws_reset(ws);
	mem_pcache_free(ws);
	free(ws->buf);
	memset(ws, 0, sizeof(*ws));
}
