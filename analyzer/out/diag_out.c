/* SPDX-License-Identifier: MIT */
/*
 * diag_out.c - dispatch to the writer of the chosen machine format and
 * keep the totals the documents end with.
 */
#include "analyzer/out/diag_out.h"

void diag_out_begin(struct diag_out *w, FILE *out, enum diag_out_format format)
{
	*w = (struct diag_out){ .out = out, .format = format };
	if (format == DIAG_OUT_JSON)
		diag_json_begin(w);
	else if (format == DIAG_OUT_SARIF)
		diag_sarif_begin(w);
}

void diag_out_file(struct diag_out *w, const char *file, const struct diag_engine *de)
{
	if (w->format == DIAG_OUT_JSON)
		diag_json_file(w, file, de);
	else if (w->format == DIAG_OUT_SARIF)
		diag_sarif_file(w, de);
	else
		diag_github_file(w, de);
	w->nfiles++;
	w->errors += diag_error_count(de);
	w->warnings += diag_warning_count(de);
}

void diag_out_end(struct diag_out *w)
{
	if (w->format == DIAG_OUT_JSON)
		diag_json_end(w);
	else if (w->format == DIAG_OUT_SARIF)
		diag_sarif_end(w);
	fflush(w->out);
}
