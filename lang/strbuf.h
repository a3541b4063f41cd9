/* SPDX-License-Identifier: MIT */
/*
 * strbuf.h - growable byte buffer, used while formatting text whose length
 * is not known in advance (diagnostic lines, report cells).
 *
 * Invariants (after git's strbuf):
 *  - buf is never NULL and is always NUL-terminated at buf[len], so it can
 *    be passed to any function that wants a C string.
 *  - len < alloc whenever alloc != 0; alloc == 0 means buf points at a
 *    shared static "" and nothing has been allocated yet.
 *  - The buffer lives on the heap, not in an arena, because it grows. Copy
 *    it into an arena with arena_strndup() when it has to live longer, then
 *    strbuf_release() it.
 *
 *	struct strbuf sb;
 *	strbuf_init(&sb);
 *	strbuf_addf(&sb, "%s:%u", name, line);
 *	fputs(sb.buf, out);
 *	strbuf_release(&sb);
 */
#ifndef MEMC_LANG_STRBUF_H
#define MEMC_LANG_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len;	/* bytes in use, excluding the NUL */
	size_t alloc;	/* bytes allocated; 0 = buf is the static "" */
};

void strbuf_init(struct strbuf *sb);
/* Make room for @extra more bytes plus the NUL without reallocating. */
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_add(struct strbuf *sb, const void *data, size_t n);
void strbuf_addstr(struct strbuf *sb, const char *s);
/* Append @n copies of byte @c. */
void strbuf_addchars(struct strbuf *sb, int c, size_t n);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Drop everything after the first @len bytes (len <= sb->len). */
void strbuf_setlen(struct strbuf *sb, size_t len);
/* Free the buffer and leave @sb empty and reusable. */
void strbuf_release(struct strbuf *sb);
/* Hand the malloc'd buffer to the caller (who free()s it); @sb is reset. */
char *strbuf_detach(struct strbuf *sb, size_t *len);

#endif
