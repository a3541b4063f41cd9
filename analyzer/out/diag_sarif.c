/* SPDX-License-Identifier: MIT */
/*
 * diag_sarif.c - `memc check --format sarif`: a SARIF 2.1.0 log with one
 * run for the whole invocation, for GitHub code scanning and other SARIF
 * viewers.
 *
 * The rules are the rows of lang/diag.def that the run reports, in order
 * of first use (so ruleIndex is known when a result is written and the
 * log does not change when an unrelated row is added); they are written
 * after the results, once all are known. A rule's help text is the first
 * paragraph of its docs/diagnostics.md section (diag_help_text). Notes become
 * relatedLocations, and a note that proposes an edit also becomes a fix.
 * File names are as the text printer shows them, relative to the current
 * directory (uriBaseId %SRCROOT%), or relative to the standard library
 * (uriBaseId MEMC_STDLIB) for "<stdlib>/..." files; no absolute path of
 * the machine is written, so the log is the same everywhere.
 */
#include <string.h>

#include "analyzer/out/diag_out.h"
#include "lang/strbuf.h"

static const char stdlib_prefix[] = "<stdlib>/";

/* RFC 3986 path characters stay; every other byte is percent-encoded. */
static bool uri_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("-._~!$&'()*+,;=:@/", c));
}

static void artifact(struct jsonw *jw, const char *file)
{
	struct strbuf sb;
	const char *base = "%SRCROOT%";

	strbuf_init(&sb);
	if (strncmp(file, stdlib_prefix, sizeof stdlib_prefix - 1) == 0) {
		file += sizeof stdlib_prefix - 1;
		base = "MEMC_STDLIB";
	} else if (file[0] == '/') {
		strbuf_addstr(&sb, "file://");	/* an absolute path the user wrote */
		base = NULL;
	}
	for (const unsigned char *p = (const unsigned char *)file; *p; p++)
		if (uri_safe(*p))
			strbuf_addch(&sb, *p);
		else
			strbuf_addf(&sb, "%%%02X", *p);
	jsonw_open(jw, "artifactLocation", '{');
	jsonw_str(jw, "uri", sb.buf);
	if (base)
		jsonw_str(jw, "uriBaseId", base);
	jsonw_close(jw, '}');
	strbuf_release(&sb);
}

/* SARIF regions are 1-based; endColumn is the column after the range. */
static void region(struct jsonw *jw, const char *key, const struct diag_engine *de, struct loc loc)
{
	jsonw_open(jw, key, '{');
	jsonw_u64(jw, "startLine", diag_loc_line(de, loc));
	jsonw_u64(jw, "startColumn", diag_loc_col(de, loc));
	jsonw_u64(jw, "endLine", diag_loc_end_line(de, loc));
	jsonw_u64(jw, "endColumn", diag_loc_end_col(de, loc));
	jsonw_close(jw, '}');
}

static void physical(struct jsonw *jw, const struct diag_engine *de, struct loc loc)
{
	jsonw_open(jw, "physicalLocation", '{');
	artifact(jw, diag_loc_file(de, loc));
	region(jw, "region", de, loc);
	jsonw_close(jw, '}');
}

/* A message object under @key ("message", or "description" for a fix). */
static void message_as(struct jsonw *jw, const char *key, const char *text)
{
	jsonw_open(jw, key, '{');
	jsonw_str(jw, "text", text);
	jsonw_close(jw, '}');
}

static void message(struct jsonw *jw, const char *text)
{
	message_as(jw, "message", text);
}

static void rule(struct jsonw *jw, enum diag_id id)
{
	bool err = diag_kind_of(id) == DIAG_KIND_ERROR;

	jsonw_open(jw, NULL, '{');
	jsonw_str(jw, "id", diag_name(id));
	jsonw_open(jw, "shortDescription", '{');
	jsonw_str(jw, "text", diag_summary(id));
	jsonw_close(jw, '}');
	if (diag_help_text[id]) {
		jsonw_open(jw, "help", '{');
		jsonw_str(jw, "text", diag_help_text[id]);
		jsonw_str(jw, "markdown", diag_help_text[id]);
		jsonw_close(jw, '}');
	}
	jsonw_open(jw, "defaultConfiguration", '{');
	jsonw_bool(jw, "enabled", err || diag_default_on(id));
	jsonw_str(jw, "level", err ? "error" : "warning");
	jsonw_close(jw, '}');
	jsonw_close(jw, '}');
}

void diag_sarif_begin(struct diag_out *w)
{
	struct jsonw *jw = &w->jw;

	jsonw_init(jw, w->out, 0, false, true);
	jsonw_open(jw, NULL, '{');
	jsonw_str(jw, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
	jsonw_str(jw, "version", "2.1.0");
	jsonw_open(jw, "runs", '[');
	jsonw_open(jw, NULL, '{');
	jsonw_str(jw, "columnKind", "unicodeCodePoints");
	jsonw_open(jw, "results", '[');
}

static void related(struct jsonw *jw, const struct diag_engine *de, const struct diag *d)
{
	unsigned id = 1;

	jsonw_open(jw, "relatedLocations", '[');
	for (const struct diag_note *n = d->notes; n; n = n->next) {
		jsonw_open(jw, NULL, '{');
		jsonw_u64(jw, "id", id++);
		if (n->loc.file)
			physical(jw, de, n->loc);
		message(jw, n->msg);
		jsonw_close(jw, '}');
	}
	jsonw_close(jw, ']');
}

static void fix(struct jsonw *jw, const struct diag_engine *de, const struct diag_note *n)
{
	jsonw_open(jw, NULL, '{');
	message_as(jw, "description", n->msg);
	jsonw_open(jw, "artifactChanges", '[');
	jsonw_open(jw, NULL, '{');
	artifact(jw, diag_loc_file(de, n->fix->loc));
	jsonw_open(jw, "replacements", '[');
	jsonw_open(jw, NULL, '{');
	region(jw, "deletedRegion", de, n->fix->loc);
	jsonw_open(jw, "insertedContent", '{');
	jsonw_str(jw, "text", n->fix->text);
	jsonw_close(jw, '}');
	jsonw_close(jw, '}');
	jsonw_close(jw, ']');
	jsonw_close(jw, '}');
	jsonw_close(jw, ']');
	jsonw_close(jw, '}');
}

static void fixes(struct jsonw *jw, const struct diag_engine *de, const struct diag *d)
{
	bool any = false;

	for (const struct diag_note *n = d->notes; n; n = n->next)
		any |= n->fix && n->fix->loc.file;
	if (!any)
		return;
	jsonw_open(jw, "fixes", '[');
	for (const struct diag_note *n = d->notes; n; n = n->next)
		if (n->fix && n->fix->loc.file)
			fix(jw, de, n);
	jsonw_close(jw, ']');
}

/* @id's index in the rules array, which it joins on first use. */
static unsigned rule_index(struct diag_out *w, enum diag_id id)
{
	if (!w->rule_pos[id]) {
		w->rules[w->nrules++] = id;
		w->rule_pos[id] = w->nrules;
	}
	return w->rule_pos[id] - 1;
}

static void result(struct diag_out *w, const struct diag_engine *de, const struct diag *d)
{
	struct jsonw *jw = &w->jw;

	jsonw_open(jw, NULL, '{');
	jsonw_str(jw, "ruleId", diag_name(d->id));
	jsonw_u64(jw, "ruleIndex", rule_index(w, d->id));
	jsonw_str(jw, "level", diag_severity_str(d));
	message(jw, diag_message(d));
	jsonw_open(jw, "locations", '[');
	if (d->loc.file) {
		jsonw_open(jw, NULL, '{');
		physical(jw, de, d->loc);
		jsonw_close(jw, '}');
	}
	jsonw_close(jw, ']');
	if (d->notes)
		related(jw, de, d);
	fixes(jw, de, d);
	jsonw_close(jw, '}');
}

void diag_sarif_file(struct diag_out *w, const struct diag_engine *de)
{
	for (const struct diag *d = diag_first(de); d; d = d->next)
		result(w, de, d);
}

void diag_sarif_end(struct diag_out *w)
{
	struct jsonw *jw = &w->jw;

	jsonw_close(jw, ']');	/* results */
	jsonw_open(jw, "tool", '{');
	jsonw_open(jw, "driver", '{');
	jsonw_str(jw, "name", "memc");
	jsonw_str(jw, "version", MEMC_VERSION);
	jsonw_open(jw, "rules", '[');
	for (unsigned i = 0; i < w->nrules; i++)
		rule(jw, w->rules[i]);
	jsonw_close(jw, ']');
	jsonw_close(jw, '}');
	jsonw_close(jw, '}');
	jsonw_close(&w->jw, '}');	/* the run */
	jsonw_close(&w->jw, ']');	/* runs */
	jsonw_close(&w->jw, '}');
	fputc('\n', w->out);
}
