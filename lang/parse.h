/* SPDX-License-Identifier: MIT */
/*
 * parse.h - turn one source file into a syntax tree.
 *
 * This is the only door to the flex scanner and the bison parser: no flex
 * or bison type leaves lang/lexer.l, lang/parser.y and lang/parse.c.
 * Syntax errors go to the diagnostics engine, each once, at its own line;
 * the parser recovers at the next field, statement or declaration, so a
 * file with three mistakes yields three errors. The returned tree holds
 * whatever parsed; it is never NULL.
 *
 * Limits (docs/limits.md): brackets and blocks nest at most
 * PARSE_MAX_DEPTH deep; an expression tree is at most
 * PARSE_MAX_EXPR_DEPTH nodes deep (chains like 1+1+1+... need no
 * brackets, and every later phase walks expressions recursively);
 * identifiers and numbers are at most PARSE_MAX_TOKEN bytes; strings at
 * most PARSE_MAX_STRING bytes; a file has at most PARSE_MAX_TOKENS tokens
 * (what the later phases cost grows with them, not with the bytes).
 */
#ifndef MEMC_LANG_PARSE_H
#define MEMC_LANG_PARSE_H

#include <stdint.h>

#include "lang/ast.h"

struct arena;
struct interner;
struct diag_engine;
struct src_file;

enum {
	PARSE_MAX_DEPTH = 256,
	PARSE_MAX_EXPR_DEPTH = 1000,
	PARSE_MAX_TOKEN = 1024,
	PARSE_MAX_STRING = 65536,
	PARSE_MAX_TOKENS = 1000000,
};

struct file_ast *parse_file(struct arena *a, struct interner *in, struct diag_engine *de,
			    const struct src_file *f);
/* Parse only f->text[start, end) (lang/lazy.c: one reached declaration
 * of a stdlib file); locations are still offsets into the whole file. */
struct file_ast *parse_file_range(struct arena *a, struct interner *in, struct diag_engine *de,
				  const struct src_file *f, uint32_t start, uint32_t end);
/* The same for text known to parse without a syntax error (a verified
 * stdlib file, file_ast.verified): a second parser from the same grammar
 * without lookahead correction, which only makes syntax errors' lists of
 * expected tokens exact and was a tenth of a `memc report`. On an error
 * it still reports one, with a list that may be longer. */
struct file_ast *parse_file_range_clean(struct arena *a, struct interner *in, struct diag_engine *de,
					const struct src_file *f, uint32_t start, uint32_t end);

#endif
