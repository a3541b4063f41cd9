/* SPDX-License-Identifier: MIT */
/*
 * fit.h - capacity warnings with a fix that fits.
 *
 * -Wcapacity fires when a rank class's device total exceeds its GPU's
 * memory. It points at the train-block line behind the largest component
 * at the peak and notes the fixes `memc fit` finds (docs/fit.md): the
 * smallest sets of changes that fit with the job's headroom, each
 * verified by re-analysis, with its predicted device total, or that
 * nothing fits and what is closest. -Wheadroom fires when the job fits
 * but leaves less free than `headroom`.
 */
#ifndef MEMC_ANALYZER_FIT_H
#define MEMC_ANALYZER_FIT_H

#include "analyzer/lower/build.h"

struct arena;
struct driver_opts;
struct program;
struct src_table;
struct fit_memo;

/* One per compilation: the searches' answers by train block text. */
struct fit_memo *fit_memo_new(struct arena *a, const struct driver_opts *o, const struct src_table *src,
			      const struct program *p, struct eval *ev);
void fit_memo_free(struct fit_memo *m);

void fit_check(struct fit_memo *m, struct eval *ev, struct arena *a, const struct check_job *cj,
	       const struct build *bd);

#endif
