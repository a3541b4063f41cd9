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

struct eval;
struct env;
struct check_model;

/* The hash of @model and @bindings as the cache compares them: equal
 * values (not locations) give equal keys. For the unit tests. */
uint64_t walk_cache_key(struct eval *ev, struct value model, const struct env *bindings);
/* A walk kept for the same @model and @bindings, copied into @out (its
 * params shared, read-only); false if there is none. */
bool walk_cache_find(struct eval *ev, struct value model, const struct env *bindings, struct check_model *out);
/* Keep @m, the outcome of a walk that reported nothing. */
void walk_cache_put(struct eval *ev, struct value model, const struct env *bindings, const struct check_model *m);
void walk_cache_stats(const struct eval *ev, unsigned long *hits, unsigned long *misses);

#endif
