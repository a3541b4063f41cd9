/* SPDX-License-Identifier: MIT */
/*
 * confusable.h - declared names that read like other names.
 *
 * `gpu А100_80GB` with a Cyrillic А next to the stdlib's `A100_80GB`
 * passes every other check: they are two names, and a job that means one
 * can silently get the other. After a program is loaded, every declared
 * name (declarations, template parameters, lets and tensors in bodies) is
 * checked for
 *
 *  - -Wconfusable: its skeleton (Unicode TR39's idea, with a small table;
 *    see confusable_skeleton()) equals another declared name's, and the
 *    two names differ. The warning points at the name that contains the
 *    look-alike characters, with a note at the other one;
 *  - -Wmixed-script: it mixes letters of two scripts (uc_script(); Common
 *    and Inherited, such as digits and "_", do not count), other than the
 *    combinations Japanese, Chinese and Korean need with Latin (TR39's
 *    "highly restrictive" profile).
 *
 * A name gets at most one of the two warnings, at its first declaration.
 * Output is in declaration order and does not depend on hashing.
 */
#ifndef MEMC_LANG_CONFUSABLE_H
#define MEMC_LANG_CONFUSABLE_H

#include <stdbool.h>

struct arena;
struct diag_engine;
struct program;

/* Warn about the declared names of @p (every file, in load order). */
void confusable_check(struct arena *a, struct diag_engine *de, const struct program *p);

/*
 * The skeleton of @name (UTF-8, NFC): its NFKD form (fullwidth and
 * mathematical letters become plain ones) with each common Cyrillic,
 * Greek and Latin look-alike replaced by the ASCII letter it looks like.
 * Two names with one skeleton look alike. Returns @name itself when it is
 * ASCII. The table covers the common cases, not all of TR39's
 * confusables.txt; Latin-only look-alikes (rn/m, 0/O, l/1) are not folded.
 */
const char *confusable_skeleton(struct arena *a, const char *name);

/*
 * Whether @name mixes scripts as -Wmixed-script means it; if so, *first
 * and *second name the two scripts found first, and *cp is the first code
 * point of the one with fewer letters in @name.
 */
bool confusable_mixed_script(const char *name, const char **first, const char **second,
			     unsigned *cp);

#endif
