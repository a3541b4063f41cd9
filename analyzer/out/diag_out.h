/* SPDX-License-Identifier: MIT */
/*
 * diag_out.h - diagnostics in machine formats, for `memc check --format
 * json|sarif|github` (docs/diagnostics.md, "Machine formats").
 *
 * Each compilation has its own engine and arena, so a document is written
 * as it goes: diag_out_begin() once, diag_out_file() for each compilation
 * before its arena is freed (it walks every record, printed or not, via
 * diag_first()), diag_out_end() once. The text diagnostics on stderr are
 * unaffected; the document goes to its own stream (stdout).
 *
 * Columns everywhere are 1-based code points, as the text printer counts
 * them; an end column is exclusive (the column after the range), as in
 * SARIF, except in the github format (see diag_github.c).
 */
#ifndef MEMC_ANALYZER_OUT_DIAG_OUT_H
#define MEMC_ANALYZER_OUT_DIAG_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "analyzer/out/jsonw.h"
#include "lang/diag.h"

/* The "schema" member of the JSON document; bumped on any incompatible
 * change (docs/diagnostics.schema.json describes it). */
#define DIAG_OUT_JSON_SCHEMA "memc-diagnostics/1"

enum diag_out_format {
	DIAG_OUT_JSON,
	DIAG_OUT_SARIF,
	DIAG_OUT_GITHUB,
};

struct diag_out {
	FILE *out;
	enum diag_out_format format;
	unsigned nfiles;		/* compilations written so far */
	unsigned errors, warnings;	/* summed over them */
	struct jsonw jw;		/* json, sarif: where the document is */
	/* sarif: the rules reported so far, in order of first use, and each
	 * id's position in that list plus one (0: not used yet). */
	enum diag_id rules[DIAG__COUNT];
	unsigned nrules;
	unsigned rule_pos[DIAG__COUNT];
};

void diag_out_begin(struct diag_out *w, FILE *out, enum diag_out_format format);
/* One compilation: @file is its root file as printed (display name). */
void diag_out_file(struct diag_out *w, const char *file, const struct diag_engine *de);
void diag_out_end(struct diag_out *w);

/*
 * One diagnostic as a JSON object, for documents written by someone else
 * (the report's "diagnostics" arrays): the caller has written the comma,
 * newline and indent; members are indented for nesting @depth.
 */
void diag_out_json_record(FILE *out, unsigned depth, const struct diag_engine *de,
			  const struct diag *d);

/* Help text of @id: the first paragraph of its docs/diagnostics.md
 * section, generated into build/ at build time (tools/gen-diag-help.sh). */
extern const char *const diag_help_text[DIAG__COUNT];

/* Per-format writers, called by diag_out.c. */
void diag_json_begin(struct diag_out *w);
void diag_json_file(struct diag_out *w, const char *file, const struct diag_engine *de);
void diag_json_end(struct diag_out *w);
void diag_sarif_begin(struct diag_out *w);
void diag_sarif_file(struct diag_out *w, const struct diag_engine *de);
void diag_sarif_end(struct diag_out *w);
void diag_github_file(struct diag_out *w, const struct diag_engine *de);

#endif
