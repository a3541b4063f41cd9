/* SPDX-License-Identifier: MIT */
/*
 * lazy.h - parse only the stdlib declarations a program reaches.
 *
 * A file imported from the stdlib folder is first prescanned: one pass
 * over its bytes finds each top-level declaration's keyword, name and
 * extent without the lexer or the parser, and its imports in full (they
 * are needed to load the rest of the program). Once every file is
 * loaded, lang/reach.c decides, by name, which declarations the user's
 * files reach; only those are parsed, each from its keyword to its last
 * token with parse_file_range(), so every location is what a full parse
 * gives. The rest stay stubs: kind, name and locations, enough for the
 * scope (duplicates, clashes), -Wconfusable on declared names and
 * "did you mean". memc list (import_load_many) never loads lazily.
 *
 * The prescan vouches only for text it fully understands; anything else
 * (a train block, a non-ASCII or over-long name, an unterminated string
 * or comment, unbalanced brackets, a token outside a declaration) makes
 * it give up, and that file is parsed in full as before.
 */
#ifndef MEMC_LANG_LAZY_H
#define MEMC_LANG_LAZY_H

#include <stddef.h>

struct arena;
struct diag_engine;
struct file_ast;
struct interner;
struct program;
struct reach_extra;
struct src_file;
struct src_table;

/* @f's imports and declaration stubs, or NULL: parse @f in full. */
struct file_ast *lazy_prescan(struct arena *a, struct interner *in, const struct src_file *f);
/* The stubs lazy_prescan() would make, from the @n entries @index it made
 * of the same bytes when memc was built (import.h struct stdlib_decl). */
struct stdlib_decl;
struct file_ast *lazy_from_index(struct arena *a, struct interner *in, const struct src_file *f,
				 const struct stdlib_decl *index, size_t n);

/* Parse the reached declarations of the @n prescanned files @asts (all
 * in @p), in place: each file keeps its imports and unreached stubs, in
 * source order with what the parser made of the rest. @x (may be NULL):
 * what is reached besides the files' words (lang/reach.h). */
void lazy_parse_reached(struct arena *a, struct interner *in, struct diag_engine *de,
			const struct src_table *src, struct program *p, struct file_ast **asts,
			size_t n, const struct reach_extra *x);

#endif
