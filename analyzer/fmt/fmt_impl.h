/* SPDX-License-Identifier: MIT */
/*
 * fmt_impl.h - what the formatter's scanner hands its layout engine.
 *
 * The scanner is not lang/lexer.l: it keeps what the lexer throws away
 * (comments, line ends) and decides nothing about validity. It splits
 * bytes exactly where the lexer does, so a formatted file has the same
 * tokens; the files are parsed by the real parser before and after, which
 * is what guarantees it (fmt_cmd.c).
 */
#ifndef MEMC_ANALYZER_FMT_IMPL_H
#define MEMC_ANALYZER_FMT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fmt_tok_kind {
	FT_WORD,	/* identifier or keyword */
	FT_NUMBER,
	FT_STRING,
	FT_PUNCT,	/* one or two bytes: "(" "==" ... */
	FT_LCOMMENT,	/* // or #, to the end of the line */
	FT_BCOMMENT,	/* slash-star, possibly over several lines */
	FT_EOL,		/* LF, CRLF or CR outside a comment */
};

struct fmt_tok {
	enum fmt_tok_kind kind;
	uint32_t start, end;	/* bytes of the source text */
	uint32_t col;		/* 0-based column in the source (tabs to 8) */
	uint32_t width;		/* code points; for a multi-line comment, of its last line */
	bool multiline;		/* a block comment holding a line end */
};

struct fmt_toks {
	struct fmt_tok *v;
	size_t n, cap;
};

/* Split @text into tokens; never fails (a byte the lexer would reject is
 * a one-byte FT_PUNCT: such a file never gets this far). Free with
 * free(toks->v). */
void fmt_scan(const char *text, size_t len, struct fmt_toks *toks);

/* Code points in text[start, end). */
uint32_t fmt_width(const char *text, uint32_t start, uint32_t end);

/* The canonical layout of @text (no BOM, as lang/source.c stores it),
 * malloc'd and NUL-terminated; its length in *out_len. */
char *fmt_layout(const char *text, size_t len, size_t *out_len);

#endif
