/* SPDX-License-Identifier: MIT */
/*
 * pos.c - LSP positions and file: URIs.
 *
 * memc counts bytes (struct loc) and prints code-point columns; LSP
 * counts 0-based lines and UTF-16 code units, so a code point above
 * U+FFFF (an emoji in a comment) is two characters to the editor. A
 * byte order mark that the source table dropped is still the editor's
 * first character of line 0.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lsp/lsp_impl.h"

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "file:///a/b%20c.mem" -> "/a/b c.mem"; an authority other than empty
 * or "localhost" is another machine's file, which we cannot open. */
char *lsp_uri_to_path(const char *uri)
{
	const char *p;

	if (strncmp(uri, "file:///", 8) == 0)
		p = uri + 7;
	else if (strncmp(uri, "file://localhost/", 17) == 0)
		p = uri + 16;
	else
		return NULL;
	char *out = malloc(strlen(p) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *p; p++) {
		int hi = p[0] == '%' ? hex_value(p[1]) : -1;
		int lo = hi >= 0 ? hex_value(p[2]) : -1;

		if (lo >= 0 && (hi || lo)) {
			*o++ = (char)(hi * 16 + lo);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

/* Unreserved characters and '/' stay; everything else is %XX. */
char *lsp_path_to_uri(const char *path)
{
	static const char keep[] = "-._~/";
	char *out = malloc(7 + 3 * strlen(path) + 1), *o = out;

	if (!out)
		return NULL;
	memcpy(o, "file://", 7);
	o += 7;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr(keep, *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = '\0';
	return out;
}

/* UTF-16 code units from @from to @to (both in @f's text). */
static uint32_t utf16_units(const struct src_file *f, uint32_t from, uint32_t to)
{
	const char *p = f->text + from, *end = f->text + to;
	uint32_t units = 0;

	while (p < end) {
		uint32_t cp;

		p += src_decode(p, end, &cp);
		units += cp != SRC_BAD_CP && cp > 0xFFFF ? 2 : 1;
	}
	return units;
}

json_t *lsp_position(const struct src_file *f, uint32_t offset, bool bom)
{
	if (offset > f->len)
		offset = f->len;
	uint32_t line = src_line_of(f, offset) - 1;
	uint32_t col = utf16_units(f, src_line_starts(f)[line], offset);

	return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character",
			 (json_int_t)col + (bom && line == 0));
}

json_t *lsp_range(const struct src_file *f, struct loc l, bool bom)
{
	uint32_t end = l.end < l.start ? l.start : l.end;

	return json_pack("{s:o, s:o}", "start", lsp_position(f, l.start, bom), "end",
			 lsp_position(f, end, bom));
}

uint32_t lsp_offset(const struct src_file *f, json_int_t line, json_int_t character, bool bom)
{
	if (line < 0)
		return 0;
	if ((uint64_t)line >= src_nlines(f))
		return f->len;
	size_t n;
	const char *p = src_line_text(f, (uint32_t)line + 1, &n), *end = p + n;
	json_int_t units = bom && line == 0 ? 1 : 0;

	while (p < end && units < character) {
		uint32_t cp;

		p += src_decode(p, end, &cp);
		units += cp != SRC_BAD_CP && cp > 0xFFFF ? 2 : 1;
	}
	return (uint32_t)(p - f->text);
}
