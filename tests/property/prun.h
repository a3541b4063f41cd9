/* SPDX-License-Identifier: MIT */
/*
 * prun.h - one job text through the whole pipeline, in process: import
 * (with the stdlib), check, build (optionally with a fit-search override),
 * analyse, and both reports, as `memc report` and `memc report --format
 * json` would print them. The results are copied out of the compilation's
 * arena, which is freed before prun_job() returns.
 */
#ifndef MEMC_TESTS_PRUN_H
#define MEMC_TESTS_PRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/lower/build.h"
#include "analyzer/memory/memory.h"

struct arena;

struct prun_opts {
	const char *stdlib_dir;
	const char *path;		/* where the job text is written for the importer */
};

struct prun {
	bool ok;			/* checked without errors and analysed */
	const char *diags;		/* diagnostics, as memc prints them */
	const char *text, *json;	/* both reports */
	struct mem_class *classes;	/* in stage order */
	size_t nclasses;
	uint32_t dp, tp, pp;
	uint64_t params_total, params_trainable;
	uint64_t tensors;		/* parameter tensors over all layer instances */
	uint64_t replicated_bytes;	/* weights of never-partitioned tensors (ZeRO-3), and
					   the 4-bit weights' QuantState */
	uint64_t ckpt_extra;		/* what full recompute may hold beyond none: the
					   checkpoint's stored input of a stage's first body
					   repeat when no save of its first layer is that input */
	uint64_t repeat_saves;		/* saves of one body repeat (the largest body block) */
};

/* Run @text; @ov may be NULL (as written). Everything is kept in @keep. */
void prun_job(struct arena *keep, const struct prun_opts *o, const char *text,
	      const struct build_override *ov, struct prun *out);

/* The largest of field @f over the rank classes (f reads one class). */
uint64_t prun_max(const struct prun *r, uint64_t (*f)(const struct mem_class *));

#endif
