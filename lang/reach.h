/* SPDX-License-Identifier: MIT */
/*
 * reach.h - which declarations of imported stdlib files a program can
 * reach by name, so that only those are parsed and checked
 * (docs/architecture.md, "The stdlib, lazily").
 *
 * Every declaration of a file the user gave (a root, or a file found next
 * to it, on -I or on MEMC_PATH) is checked in full, used or not. A
 * declaration of a file that was imported from the stdlib folder is
 * checked only when a checked declaration mentions its name: every
 * stdlib file is checked in full on its own by `make check-stdlib`, so a
 * job pays only for what it uses.
 *
 * "Mentions" is over-approximated on purpose: every identifier-shaped
 * word in the declaration's source text counts (field names, parameter
 * names, words in comments and strings), so a declaration is never
 * skipped that the job could evaluate; at worst one more is checked.
 */
#ifndef MEMC_LANG_REACH_H
#define MEMC_LANG_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena;
struct decl;
struct interner;
struct program;
struct reach;
struct src_table;

/* What a load reaches besides its files' words (import_opts.reach_extra):
 * the -Wcapacity notes' context (analyzer/fit/fit.c) is the file without its
 * train blocks, and its variants name what those blocks and the fixes
 * name, and every GPU the file can. */
struct reach_extra {
	const struct reach *like;	/* every name this one reached; NULL: none */
	const char *words;		/* NUL-terminated, words as in a file; NULL: none */
	bool gpus;			/* every gpu declaration */
};

/* NULL when nothing is lazy (no stdlib file was imported). Lazy loading
 * (lang/lazy.c) keeps it in p->reach for the checker. @extra may be NULL. */
const struct reach *reach_compute(struct arena *a, const struct interner *in,
				  const struct src_table *src, const struct program *p,
				  const struct reach_extra *extra);
/* Whether @d is to be checked: always for the user's own files. */
bool reach_wants(const struct reach *r, const struct decl *d);
/* Whether a word of t[start, end) names a stdlib declaration @r left
 * unreached (a stub): text that would need a load of its own. */
bool reach_misses(const struct reach *r, const struct interner *in, const char *t, uint32_t start,
		  uint32_t end);

/* Call @fn with each word of t[start, end) that could name a declaration,
 * as reach_compute() reads the text of one: letters, digits, '_' and
 * UTF-8, not starting with a digit; NFC when not ASCII, as the lexer
 * interns it. tools/stdlib-digest.c lists a verified file's words so. */
typedef void reach_word_fn(void *ctx, const char *word, size_t len);
void reach_each_word(const char *t, uint32_t start, uint32_t end, reach_word_fn *fn, void *ctx);

#endif
