/* SPDX-License-Identifier: MIT */
/*
 * stdlib_digests.h - the stdlib files that checked clean on their own when
 * this memc was built, with their digests (import.h struct stdlib_digest).
 *
 * Defined by build/gen/stdlib_digests.c, which tools/gen-stdlib-digests.sh
 * writes from `memc-stage check -Werror` on every stdlib file (memc-stage:
 * memc linked with tools/stdlib-digests-none.c, the empty table). Sorted
 * by name; the last entry is all zero.
 */
#ifndef MEMC_ANALYZER_CMD_STDLIB_DIGESTS_H
#define MEMC_ANALYZER_CMD_STDLIB_DIGESTS_H

#include <stddef.h>

#include "lang/import.h"

extern const struct stdlib_digest memc_stdlib_digests[];
extern const size_t memc_stdlib_ndigests;

#endif
