/* SPDX-License-Identifier: MIT */
/*
 * property.h - shared state of the property suite (property.c: driver,
 * gen.c: job generator, props.c: the properties).
 */
#ifndef MEMC_TESTS_PROPERTY_H
#define MEMC_TESTS_PROPERTY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "lang/arena.h"
#include "tests/property/pjob.h"
#include "tests/property/prun.h"

struct prop_ctx {
	uint64_t seed, variants, only;	/* only: 1 + the one variant to run; 0 = all */
	bool verbose;
	struct prun_opts ro;
	struct arena keep;		/* base jobs, for the whole run */
	struct arena var;		/* everything of the current variant */
	struct pjob *base;		/* examples/ and tests/property/regress/ */
	size_t nbase, capbase;
	uint64_t rng, variant;
	uint64_t passed, failed, failed_now, printed_jobs;
};

uint64_t prop_rand(struct prop_ctx *pc);
size_t prop_pick(struct prop_ctx *pc, size_t n);

/* A job drawn from the stdlib's models, GPUs, precisions and optimizers. */
struct pjob *prop_generate(struct prop_ctx *pc);

/* Render @j in style @st and run it; false if it did not check. */
bool prop_run(struct prop_ctx *pc, const struct pjob *j, enum pjob_style st,
	      const struct build_override *ov, struct prun *out, const char **text);
/* Report one violated property (counted once per property and variant). */
void prop_fail(struct prop_ctx *pc, const char *prop, const char *a_text, const char *b_text,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Every property on one base job. */
void prop_check_all(struct prop_ctx *pc, const struct pjob *base);

#endif
