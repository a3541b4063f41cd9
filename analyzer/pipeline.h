/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h - the phases after import for one compilation: check,
 * evaluate, analyse, report. The driver owns the arena and the engine.
 */
#ifndef MEMC_ANALYZER_PIPELINE_H
#define MEMC_ANALYZER_PIPELINE_H

#include <stdbool.h>

#include "analyzer/cmd/driver.h"

struct arena;
struct interner;
struct src_table;
struct diag_engine;
struct program;

struct diag_out;
struct fit_memo;

struct driver_totals {
	unsigned errors, warnings;
	struct diag_out *out;		/* check --format json|sarif|github; NULL: text */
};

struct pipeline {
	struct arena *arena;
	struct interner *interner;
	struct src_table *src;
	struct diag_engine *diag;
	const struct driver_opts *opts;
	struct program *program;
	bool reported;			/* report --format json: this file's entry is written */
	struct fit_memo *fit;		/* -Wcapacity's fixes, searched once per block text */
};

/* Called once before the first and after the last file (JSON framing). */
void pipeline_begin(const struct driver_opts *o);
void pipeline_end(const struct driver_opts *o);
/* report --format json: the entry of a file that stopped before the report
 * (it did not parse, or could not be read): no jobs, its diagnostics. */
void pipeline_report_unbuilt(struct pipeline *p, const char *file);
/* Run the phases after import; return 0, 1 (errors) or 2. */
int pipeline_run(struct pipeline *p);

#endif
