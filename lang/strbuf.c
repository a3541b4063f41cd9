/* SPDX-License-Identifier: MIT */
/*
 * strbuf.c - the growable buffer. Growth is geometric (x1.5 plus slack) so
 * appending one byte at a time stays linear overall.
 */
#include "lang/strbuf.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/arena.h"

/*
 * The "" every empty strbuf points at. It is never written: strbuf_setlen
 * and the append functions only store through buf after strbuf_grow has
 * replaced it. It is not const so that buf can stay a plain char *.
 */
static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	if (extra > SIZE_MAX - sb->len - 1)
		xdie_oom();
	size_t need = sb->len + extra + 1;

	if (need <= sb->alloc)
		return;
	size_t cap = sb->alloc ? sb->alloc + sb->alloc / 2 : 64;
	if (cap < need)
		cap = need;
	if (sb->alloc == 0) {
		sb->buf = xmalloc(cap);
		sb->buf[0] = '\0';
	} else {
		sb->buf = xrealloc(sb->buf, cap);
	}
	sb->alloc = cap;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t n)
{
	strbuf_grow(sb, n);
	memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void strbuf_addch(struct strbuf *sb, int c)
{
	strbuf_grow(sb, 1);
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addchars(struct strbuf *sb, int c, size_t n)
{
	strbuf_grow(sb, n);
	memset(sb->buf + sb->len, c, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list ap2;

	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n <= 0)
		return;
	strbuf_grow(sb, (size_t)n);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	assert(len <= sb->len);
	if (sb->alloc == 0)
		return;	/* already empty: never write into strbuf_empty */
	sb->len = len;
	sb->buf[len] = '\0';
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *res;

	if (len)
		*len = sb->len;
	if (sb->alloc == 0)
		res = xstrdup("");
	else
		res = sb->buf;
	strbuf_init(sb);
	return res;
}
