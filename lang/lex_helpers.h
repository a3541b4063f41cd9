/* SPDX-License-Identifier: MIT */
/*
 * lex_helpers.h - the work behind the scanner's one-line rules (scan.c).
 * Private to lexer.l. Each helper returns the token kind to hand to the
 * parser, or reports a located error and returns 0 so the rule returns
 * nothing and scanning continues.
 */
#ifndef MEMC_LANG_LEX_HELPERS_H
#define MEMC_LANG_LEX_HELPERS_H

#include <stdbool.h>
#include <stddef.h>

#include "lang/diag.h"
#include "lang/parse_impl.h"

union YYSTYPE;

struct loc lex_head(struct loc l, uint32_t n);
void lex_error(struct lex_state *ls, enum diag_id id, struct loc loc, const char *msg);
void lex_check_comment(struct lex_state *ls, struct loc loc, const char *text, size_t len);
int lex_number(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len);
bool lex_stray_bom(struct lex_state *ls, struct loc loc, const char *text, size_t len);
/* Whether text[0, len) is one of the language's keywords. */
bool lex_is_keyword(const char *text, size_t len);
int lex_ident(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len);
int lex_string(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len);
int lex_open(struct lex_state *ls, struct loc loc, char c);
int lex_close(struct lex_state *ls, char c);
void lex_bad_char(struct lex_state *ls, struct loc loc, const char *text, size_t len);

#endif
