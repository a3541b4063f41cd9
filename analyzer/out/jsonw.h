/* SPDX-License-Identifier: MIT */
/*
 * jsonw.h - a streaming JSON writer for the machine output formats:
 * two-space indentation, one member per line, empty containers as "[]"
 * or "{}", strings escaped so that the document is valid UTF-8 JSON
 * whatever bytes a message holds. Nothing is buffered: a document can
 * be written one compilation at a time, before that compilation's arena
 * is freed.
 */
#ifndef MEMC_ANALYZER_OUT_JSONW_H
#define MEMC_ANALYZER_OUT_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Deeper than any document memc writes; jsonw_open asserts it. */
enum { JSONW_MAX_DEPTH = 63 };

struct jsonw {
	FILE *out;
	unsigned depth;
	uint64_t has_member;	/* bit d: the container at depth d has a member */
	bool value_pending;	/* the caller wrote the separator: the next value goes as is */
};

/*
 * Start writing at nesting @depth. With @value_pending the next call
 * writes a bare value (the caller already wrote the comma, newline and
 * indent: embedding in another writer's document); @has_member says
 * whether the container at @depth already has members.
 */
void jsonw_init(struct jsonw *w, FILE *out, unsigned depth, bool has_member, bool value_pending);

/* A string literal: quote, backslash and control characters escaped,
 * invalid UTF-8 as U+FFFD, bidi controls and C1 controls as \uXXXX. */
void jsonw_string(FILE *out, const char *s);

/* Containers: @key names the member, or NULL for an array element. */
void jsonw_open(struct jsonw *w, const char *key, char bracket);
void jsonw_close(struct jsonw *w, char bracket);

void jsonw_str(struct jsonw *w, const char *key, const char *s);	/* NULL: null */
void jsonw_u64(struct jsonw *w, const char *key, uint64_t v);
void jsonw_bool(struct jsonw *w, const char *key, bool v);
void jsonw_null(struct jsonw *w, const char *key);
/* A finite number with @decimals digits after the point (memc search). */
void jsonw_fixed(struct jsonw *w, const char *key, double v, int decimals);

#endif
