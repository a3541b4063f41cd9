/* SPDX-License-Identifier: MIT */
/*
 * walk_cache.h - the checker's walk of a model instance under a job's
 * bindings, kept per compilation and reused by a job whose model and
 * bindings are the same values (walk_cache.c).
 */
#ifndef MEMC_LANG_WALK_CACHE_H
#define MEMC_LANG_WALK_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/value.h"

struct arena;
struct eval;
struct env;
struct check_model;
struct import_cache;

/* One atom of a key: a binding's name and value, flattened. A list or an
 * instance is its kind (with its item or argument count) followed by its
 * items or arguments, so that nothing of a key points into a job's scratch
 * arena (an inline `model = llama(...)` has its arguments there). */
struct walk_atom {
	const char *name;
	struct value v;			/* loc, origin, label, items and args cleared */
};

/* Values as a walk reads them: equal keys walk alike. The builder's cache
 * (analyzer/model/build_cache.c) keys its walks the same way. */
struct walk_key {
	struct arena *arena;		/* where the atoms grow */
	struct walk_atom *atoms;
	size_t n, cap;
	bool ok;			/* false: nested too deep to flatten, not comparable */
};

void walk_key_clear(struct walk_key *k, struct arena *a);
void walk_key_value(struct walk_key *k, const char *name, const struct value *v);
/* @e's own bindings, in binding order (not its parent's). */
void walk_key_env(struct walk_key *k, const struct env *e);
uint64_t walk_key_hash(const struct walk_key *k, uint64_t h);
bool walk_key_equal(const struct walk_key *x, const struct walk_key *y);
void walk_key_copy(struct walk_key *dst, const struct walk_key *src, struct arena *a);
/* @src into @dst (its atoms grown in @a) with each declaration replaced by
 * the node @ic parsed it from (lang/import.h import_cache_origin), so that
 * the key reads alike in every compilation sharing @ic; false (dst->ok
 * false) if @src is not comparable or names a declaration @ic did not
 * parse. */
bool walk_key_canonical(struct walk_key *dst, const struct walk_key *src, struct arena *a,
			const struct import_cache *ic);

/* The hash of @model and @bindings as the cache compares them: equal
 * values (not locations) give equal keys. For the unit tests. */
uint64_t walk_cache_key(struct eval *ev, struct value model, const struct env *bindings);
/* A walk kept for the same @model and @bindings, copied into @out (its
 * params shared, read-only); false if there is none. */
bool walk_cache_find(struct eval *ev, struct value model, const struct env *bindings, struct check_model *out);
/* Keep @m, the outcome of a walk that reported nothing. */
void walk_cache_put(struct eval *ev, struct value model, const struct env *bindings, const struct check_model *m);
void walk_cache_stats(const struct eval *ev, unsigned long *hits, unsigned long *misses);
/* The same for the walks kept across the compilations that share the
 * program's import cache (0 and 0 without one). */
void walk_store_stats(struct eval *ev, unsigned long *hits, unsigned long *misses);

#endif
