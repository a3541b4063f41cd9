/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - a map from 64-bit keys to pointers, in an arena.
 *
 * The evaluator remembers per declaration (memoised lets), per (name, kind)
 * (did-you-mean) and per reported message (the report-once set); a file may
 * hold a million of each, so each is a hash table, and this is the one they
 * share. Open addressing with linear probing, at most half full; growth
 * doubles into new arena arrays (the old ones stay in the arena until it is
 * freed, as everything else of a compilation does). Keys are any value;
 * a NULL value marks an empty slot, so values are never NULL.
 */
#ifndef MEMC_LANG_U64MAP_H
#define MEMC_LANG_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct arena;

struct u64map {
	uint64_t *keys;
	void **vals;
	size_t n, cap;		/* cap: 0 or a power of two */
};

/* The value stored for @key, or NULL. */
void *u64map_get(const struct u64map *m, uint64_t key);
/* Store @val (not NULL) for @key, which must not be in the map yet. */
void u64map_put(struct u64map *m, struct arena *a, uint64_t key, void *val);

#endif
