/* SPDX-License-Identifier: MIT */
/*
 * fmt_scan.c - the formatter's scanner: tokens, comments and line ends.
 *
 * Token boundaries follow lang/lexer.l rule for rule (numbers with their
 * underscores and exponent, words of ASCII and non-ASCII bytes, strings
 * that stop at a line end, two-byte operators), because the layout
 * engine only ever changes the blanks between tokens: if it split a
 * token differently, gluing or separating it could change the program.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/fmt/fmt_impl.h"
#include "lang/arena.h"

static bool is_word_start(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80;
}

static bool is_word(unsigned char c)
{
	return is_word_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

uint32_t fmt_width(const char *text, uint32_t start, uint32_t end)
{
	uint32_t w = 0;

	for (uint32_t i = start; i < end; i++)
		w += ((unsigned char)text[i] & 0xC0) != 0x80;
	return w;
}

/* {DIGITS}("."[0-9_]+)?([eE][+-]?[0-9_]+)? as in lexer.l. */
static size_t scan_number(const char *s, size_t i, size_t len)
{
	while (i < len && (is_digit((unsigned char)s[i]) || s[i] == '_'))
		i++;
	if (i + 1 < len && s[i] == '.' && (is_digit((unsigned char)s[i + 1]) || s[i + 1] == '_')) {
		i++;
		while (i < len && (is_digit((unsigned char)s[i]) || s[i] == '_'))
			i++;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;

		if (j < len && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < len && (is_digit((unsigned char)s[j]) || s[j] == '_')) {
			while (j < len && (is_digit((unsigned char)s[j]) || s[j] == '_'))
				j++;
			i = j;
		}
	}
	return i;
}

/* A string stops at its closing quote or, unterminated, before the line end. */
static size_t scan_string(const char *s, size_t i, size_t len)
{
	for (i++; i < len && s[i] != '"' && s[i] != '\n' && s[i] != '\r'; i++)
		if (s[i] == '\\' && i + 1 < len && s[i + 1] != '\n' && s[i + 1] != '\r')
			i++;
	return i < len && s[i] == '"' ? i + 1 : i;
}

static size_t scan_block_comment(const char *s, size_t i, size_t len, bool *multiline)
{
	for (i += 2; i < len; i++) {
		if (s[i] == '\n' || s[i] == '\r')
			*multiline = true;
		if (s[i] == '*' && i + 1 < len && s[i + 1] == '/')
			return i + 2;
	}
	return len;
}

static size_t scan_punct(const char *s, size_t i, size_t len)
{
	static const char *const two[] = { "==", "!=", "<=", ">=", "&&", "||" };

	for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
		if (i + 1 < len && s[i] == two[k][0] && s[i + 1] == two[k][1])
			return i + 2;
	return i + 1;
}

/* One token starting at @i (not a blank); its kind in *kind, its end returned. */
static size_t scan_one(const char *s, size_t i, size_t len, enum fmt_tok_kind *kind,
		       bool *multiline)
{
	unsigned char c = (unsigned char)s[i];

	if (c == '\n' || c == '\r') {
		*kind = FT_EOL;
		return c == '\r' && i + 1 < len && s[i + 1] == '\n' ? i + 2 : i + 1;
	}
	if (c == '#' || (c == '/' && i + 1 < len && s[i + 1] == '/')) {
		*kind = FT_LCOMMENT;
		while (i < len && s[i] != '\n' && s[i] != '\r')
			i++;
		return i;
	}
	if (c == '/' && i + 1 < len && s[i + 1] == '*') {
		*kind = FT_BCOMMENT;
		return scan_block_comment(s, i, len, multiline);
	}
	if (is_digit(c))
		return *kind = FT_NUMBER, scan_number(s, i, len);
	if (is_word_start(c)) {
		*kind = FT_WORD;
		while (i < len && is_word((unsigned char)s[i]))
			i++;
		return i;
	}
	if (c == '"')
		return *kind = FT_STRING, scan_string(s, i, len);
	*kind = FT_PUNCT;
	return scan_punct(s, i, len);
}

/* The source column after text[start, end), from @col: tabs stop every 8. */
static uint32_t advance_col(const char *s, size_t start, size_t end, uint32_t col)
{
	for (size_t i = start; i < end; i++) {
		if (s[i] == '\n' || s[i] == '\r')
			col = 0;
		else if (s[i] == '\t')
			col = (col / 8 + 1) * 8;
		else
			col += ((unsigned char)s[i] & 0xC0) != 0x80;
	}
	return col;
}

static uint32_t last_line_width(const char *s, size_t start, size_t end)
{
	size_t b = end;

	while (b > start && s[b - 1] != '\n' && s[b - 1] != '\r')
		b--;
	return fmt_width(s, (uint32_t)b, (uint32_t)end);
}

void fmt_scan(const char *text, size_t len, struct fmt_toks *toks)
{
	uint32_t col = 0;
	size_t i = 0;

	/* Offsets are uint32_t like struct loc: the text is a src_file's,
	 * at most SRC_MAX_SIZE bytes. */
	assert(len <= UINT32_MAX);
	memset(toks, 0, sizeof *toks);
	while (i < len) {
		size_t b = i;

		while (i < len && (text[i] == ' ' || text[i] == '\t'))
			i++;
		col = advance_col(text, b, i, col);
		if (i >= len)
			break;

		struct fmt_tok t = { .start = (uint32_t)i, .col = col };
		size_t end = scan_one(text, i, len, &t.kind, &t.multiline);

		t.end = (uint32_t)end;
		t.width = t.multiline ? last_line_width(text, i, end) : fmt_width(text, t.start, t.end);
		if (toks->n == toks->cap) {
			toks->cap = toks->cap ? toks->cap * 2 : 256;
			toks->v = xrealloc(toks->v, arena_array_size(sizeof *toks->v, toks->cap));
		}
		toks->v[toks->n++] = t;
		col = advance_col(text, i, end, col);
		i = end;
	}
}
