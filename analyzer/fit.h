/* SPDX-License-Identifier: MIT */
/*
 * fit.h - capacity warnings with a fix that fits.
 *
 * -Wcapacity fires when a rank class's device total exceeds its GPU's
 * memory. It points at the train-block line behind the largest component
 * at the peak and proposes changes found by searching one knob at a time
 * (the largest micro_batch that fits, full checkpointing, the next ZeRO
 * stage, more tensor parallelism), each with its predicted device total.
 * -Wheadroom fires when the job fits but leaves less free than `headroom`.
 */
#ifndef MEMC_ANALYZER_FIT_H
#define MEMC_ANALYZER_FIT_H

#include "analyzer/build.h"

struct arena;

void fit_check(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build *bd);

#endif
