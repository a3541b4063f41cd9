/* SPDX-License-Identifier: MIT */
/*
 * diag_json.c - `memc check --format json`: one versioned document,
 *
 *   { "schema": "memc-diagnostics/1", "tool": {...},
 *     "files": [ { "file": ..., "errors": N, "warnings": N,
 *                  "diagnostics": [...] }, ... ],
 *     "errors": N, "warnings": N }
 *
 * one "files" entry per compilation (root file), whether it parsed or
 * not, so an error is never hidden by an empty list. The diagnostic
 * objects are also what the report's JSON embeds. The schema is
 * docs/diagnostics.schema.json.
 */
#include "analyzer/out/diag_out.h"
#include "analyzer/out/jsonw.h"

/* Members "file" .. "end_column" of @loc; all null for no location. */
static void json_range(struct jsonw *w, const struct diag_engine *de, struct loc loc)
{
	if (loc.file == 0) {
		jsonw_null(w, "file");
		jsonw_null(w, "line");
		jsonw_null(w, "column");
		jsonw_null(w, "end_line");
		jsonw_null(w, "end_column");
		return;
	}
	jsonw_str(w, "file", diag_loc_file(de, loc));
	jsonw_u64(w, "line", diag_loc_line(de, loc));
	jsonw_u64(w, "column", diag_loc_col(de, loc));
	jsonw_u64(w, "end_line", diag_loc_end_line(de, loc));
	jsonw_u64(w, "end_column", diag_loc_end_col(de, loc));
}

static void json_note(struct jsonw *w, const struct diag_engine *de, const struct diag_note *n)
{
	jsonw_open(w, NULL, '{');
	json_range(w, de, n->loc);
	jsonw_str(w, "message", n->msg);
	if (n->fix) {
		jsonw_open(w, "fix", '{');
		json_range(w, de, n->fix->loc);
		jsonw_str(w, "replacement", n->fix->text);
		jsonw_close(w, '}');
	}
	jsonw_close(w, '}');
}

static void json_record(struct jsonw *w, const struct diag_engine *de, const struct diag *d)
{
	jsonw_open(w, NULL, '{');
	json_range(w, de, d->loc);
	jsonw_str(w, "severity", diag_severity_str(d));
	jsonw_bool(w, "promoted", d->promoted);
	jsonw_str(w, "name", diag_name(d->id));
	jsonw_str(w, "message", diag_message(d));
	jsonw_open(w, "notes", '[');
	for (const struct diag_note *n = d->notes; n; n = n->next)
		json_note(w, de, n);
	jsonw_close(w, ']');
	jsonw_close(w, '}');
}

void diag_out_json_record(FILE *out, unsigned depth, const struct diag_engine *de,
			  const struct diag *d)
{
	struct jsonw w;

	jsonw_init(&w, out, depth, false, true);
	json_record(&w, de, d);
}

static void json_tool(struct jsonw *jw)
{
	jsonw_open(jw, "tool", '{');
	jsonw_str(jw, "name", "memc");
	jsonw_str(jw, "version", MEMC_VERSION);
	jsonw_close(jw, '}');
}

void diag_json_begin(struct diag_out *w)
{
	jsonw_init(&w->jw, w->out, 0, false, true);
	jsonw_open(&w->jw, NULL, '{');
	jsonw_str(&w->jw, "schema", DIAG_OUT_JSON_SCHEMA);
	json_tool(&w->jw);
	jsonw_open(&w->jw, "files", '[');
}

void diag_json_file(struct diag_out *w, const char *file, const struct diag_engine *de)
{
	struct jsonw *jw = &w->jw;

	jsonw_open(jw, NULL, '{');
	jsonw_str(jw, "file", file);
	jsonw_u64(jw, "errors", diag_error_count(de));
	jsonw_u64(jw, "warnings", diag_warning_count(de));
	jsonw_open(jw, "diagnostics", '[');
	for (const struct diag *d = diag_first(de); d; d = d->next)
		json_record(jw, de, d);
	jsonw_close(jw, ']');
	jsonw_close(jw, '}');
}

/* The totals come last: they are known only after the last file. */
void diag_json_end(struct diag_out *w)
{
	jsonw_close(&w->jw, ']');
	jsonw_u64(&w->jw, "errors", w->errors);
	jsonw_u64(&w->jw, "warnings", w->warnings);
	jsonw_close(&w->jw, '}');
	fputc('\n', w->out);
}
