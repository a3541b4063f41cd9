/* SPDX-License-Identifier: MIT */
/*
 * strmap.h - a map from byte strings to pointers, in an arena: the memo
 * tables keyed by text (a train block's text, a fix's lines) that the
 * -Wcapacity notes and memc fit keep (analyzer/fit/fit.c,
 * analyzer/cmd/fit_variant.c). Keys are any bytes, NULs included, and
 * are copied in; lang/u64map.h holds the chains by src_digest() of the
 * key. Never iterated, so nothing printed depends on the hash order.
 */
#ifndef MEMC_LANG_STRMAP_H
#define MEMC_LANG_STRMAP_H

#include <stddef.h>

#include "lang/u64map.h"

struct arena;

struct strmap {
	struct u64map chains;	/* digest -> struct strmap_entry list */
	size_t n;
};

/* The value stored for the @len bytes at @key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key, size_t len);
/* Store @val (not NULL) for @key, which must not be in the map yet; the
 * key is copied into @a, and that copy returned. */
const char *strmap_put(struct strmap *m, struct arena *a, const char *key, size_t len, void *val);

#endif
