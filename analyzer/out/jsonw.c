/* SPDX-License-Identifier: MIT */
/*
 * jsonw.c - see jsonw.h. The layout matches the report's JSON (report.c),
 * so that diagnostics embedded in a report read like the rest of it.
 */
#include "analyzer/out/jsonw.h"

#include <assert.h>
#include <inttypes.h>
#include <unictype.h>

#include "lang/source.h"

void jsonw_init(struct jsonw *w, FILE *out, unsigned depth, bool has_member, bool value_pending)
{
	assert(depth <= JSONW_MAX_DEPTH);
	w->out = out;
	w->depth = depth;
	w->has_member = has_member ? (uint64_t)1 << depth : 0;
	w->value_pending = value_pending;
}

/* Code points a JSON reader accepts raw but a terminal or a web page
 * would act on: keep them visible as escapes. */
static bool must_escape(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ||
	       uc_is_property_bidi_control(cp);
}

static void put_escaped(FILE *out, uint32_t cp)
{
	switch (cp) {
	case '\n': fputs("\\n", out); break;
	case '\r': fputs("\\r", out); break;
	case '\t': fputs("\\t", out); break;
	default: fprintf(out, "\\u%04" PRIX32, cp); break;	/* all of them are in the BMP */
	}
}

void jsonw_string(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	const char *p = s, *end = s;

	while (*end)
		end++;
	fputc('"', out);
	while (p < end) {
		uint32_t cp;
		size_t n = src_decode(p, end, &cp);

		if (cp == SRC_BAD_CP)
			fputs("\\uFFFD", out);
		else if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (char)cp);
		else if (must_escape(cp))
			put_escaped(out, cp);
		else
			fwrite(p, 1, n, out);
		p += n;
	}
	fputc('"', out);
}

/* The separator, newline and indent before a member or element. */
static void member(struct jsonw *w, const char *key)
{
	uint64_t bit = (uint64_t)1 << w->depth;

	if (w->value_pending) {
		w->value_pending = false;
		return;
	}
	if (w->has_member & bit)
		fputc(',', w->out);
	w->has_member |= bit;
	fprintf(w->out, "\n%*s", (int)(2 * w->depth), "");
	if (key) {
		jsonw_string(w->out, key);
		fputs(": ", w->out);
	}
}

void jsonw_open(struct jsonw *w, const char *key, char bracket)
{
	member(w, key);
	fputc(bracket, w->out);
	assert(w->depth < JSONW_MAX_DEPTH);
	w->depth++;
	w->has_member &= ~((uint64_t)1 << w->depth);
}

void jsonw_close(struct jsonw *w, char bracket)
{
	bool empty = !(w->has_member & ((uint64_t)1 << w->depth));

	assert(w->depth > 0);
	w->depth--;
	if (!empty)
		fprintf(w->out, "\n%*s", (int)(2 * w->depth), "");
	fputc(bracket, w->out);
}

void jsonw_str(struct jsonw *w, const char *key, const char *s)
{
	member(w, key);
	jsonw_string(w->out, s);
}

void jsonw_u64(struct jsonw *w, const char *key, uint64_t v)
{
	member(w, key);
	fprintf(w->out, "%" PRIu64, v);
}

void jsonw_bool(struct jsonw *w, const char *key, bool v)
{
	member(w, key);
	fputs(v ? "true" : "false", w->out);
}

void jsonw_null(struct jsonw *w, const char *key)
{
	member(w, key);
	fputs("null", w->out);
}

void jsonw_fixed(struct jsonw *w, const char *key, double v, int decimals)
{
	member(w, key);
	fprintf(w->out, "%.*f", decimals, v);
}
