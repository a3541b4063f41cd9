/* SPDX-License-Identifier: MIT */
/*
 * stdlib-digests-none.c - the empty table of analyzer/cmd/stdlib_digests.h,
 * for memc-stage: the build of memc that decides which stdlib files are
 * clean must check every one of them in full.
 */
#include "analyzer/cmd/stdlib_digests.h"

const struct stdlib_digest memc_stdlib_digests[] = { { NULL, 0, NULL, 0 } };
const size_t memc_stdlib_ndigests = 0;
