/* SPDX-License-Identifier: MIT */
/*
 * builtins.h - names the language binds by itself: what a train block
 * binds inside layers, models and optimizers (batch, seq, tp, ...), what
 * an optimizer body sees per tensor (numel, rows, cols, rank), `none`,
 * and the builtin functions (ceil, floor, min, max). User declarations
 * may not reuse them (scope.c reports `name-clash`).
 */
#ifndef MEMC_LANG_BUILTINS_H
#define MEMC_LANG_BUILTINS_H

#include <stdbool.h>

bool builtin_is_reserved(const char *name);

#endif
