/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - the phases after import for one compilation: check,
 * evaluate, analyse, report. The driver owns the arena and the engine.
 */
#ifndef MEMC_ANALYZER_PIPELINE_H
#define MEMC_ANALYZER_PIPELINE_H

#include "analyzer/driver.h"

struct arena;
struct interner;
struct src_table;
struct diag_engine;
struct program;

struct driver_totals {
	unsigned errors, warnings;
};

struct pipeline {
	struct arena *arena;
	struct interner *interner;
	struct src_table *src;
	struct diag_engine *diag;
	const struct driver_opts *opts;
	struct program *program;
};

/* Called once before the first and after the last file (JSON framing). */
void pipeline_begin(const struct driver_opts *o);
void pipeline_end(const struct driver_opts *o);
/* Run the phases after import; return 0, 1 (errors) or 2. */
int pipeline_run(struct pipeline *p);

#endif
