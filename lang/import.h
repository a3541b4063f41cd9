/* SPDX-License-Identifier: MIT */
/*
 * import.h - load a root file and everything it imports.
 *
 * `import "models/llama"` names a file relative to a search path: the
 * importing file's folder, then each -I folder, then each MEMC_PATH
 * folder, then the stdlib folder. A name starting with "./" or "../" is
 * looked up next to the importing file only; an absolute name is used as
 * is. ".mem" is appended when the name has no extension. Each file is
 * loaded once (identity: realpath). A file is ACTIVE while its own imports
 * load, so meeting an ACTIVE file again is a cycle, reported at the import
 * with the whole chain. IMPORT_MAX_DEPTH caps pathological nesting.
 *
 * Paths printed in diagnostics are never made absolute: files found in the
 * stdlib are shown as "<stdlib>/models/llama.mem". A root "-" is standard
 * input ("<stdin>"), whose imports resolve from the current folder. A
 * name that resolves to something other than a regular file (FIFO,
 * device, directory) is an error at the import, never a hang.
 */
#ifndef MEMC_LANG_IMPORT_H
#define MEMC_LANG_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/ast.h"

struct arena;
struct interner;
struct diag_engine;
struct src_table;
struct reach;

enum { IMPORT_MAX_DEPTH = 64 };

/* The folder files found in the stdlib are shown under. */
#define IMPORT_STDLIB_DISPLAY "<stdlib>"

/* A root path of "-" is read from standard input and shown as this. */
#define IMPORT_STDIN_NAME "<stdin>"

/* One top-level declaration of a verified stdlib file as lazy_prescan()
 * finds it (lang/lazy.h): kind, byte ranges, and the name or import path. */
struct stdlib_decl {
	int kind;			/* enum decl_kind */
	uint32_t start, end;		/* decl.loc */
	const char *name;		/* decl.name, NULL for an import */
	uint32_t name_start, name_end;	/* decl.name_loc, or import.path_loc */
	/* the words of its text (reach_each_word) that name a declaration
	 * of a verified stdlib file, each once: what reach.c would find */
	const char *const *refs;
	size_t nrefs;
	/* a gpu's `memory` in bytes as the builder reads it (floored), its
	 * file checked alone; 0 for any other declaration: the -Wcapacity
	 * search picks its larger GPUs by it without parsing every one
	 * (analyzer/fit/fit.c) */
	uint64_t memory;
};

/* A stdlib file that `memc check -Werror` found clean on its own when
 * memc was built (build/gen/stdlib_digests.c): its path under the stdlib
 * folder, src_digest() of its text, and its prescan, so that a file with
 * those bytes is not prescanned again (ndecls == 0 and decls NULL: the
 * prescan gave up on it, and it is parsed in full). */
struct stdlib_digest {
	const char *name;
	uint64_t digest;
	const struct stdlib_decl *decls;
	size_t ndecls;
};

struct import_cache;
struct reach_extra;

struct import_opts {
	const char *const *dirs;	/* -I folders, then MEMC_PATH folders, in order */
	size_t ndirs;
	const char *stdlib_dir;		/* NULL: no stdlib */
	const struct stdlib_digest *verified;	/* sorted by name; NULL: none */
	size_t nverified;
	/* NULL, or where the verified stdlib declarations this load parses
	 * are kept for the next load that shares its interner */
	struct import_cache *cache;
	/* NULL, or what a lazy load reaches besides the words of its
	 * files (lang/reach.h) */
	const struct reach_extra *reach_extra;
};

/* Every loaded file, dependencies before the files that import them. */
struct program {
	struct file_ast **files;
	size_t nfiles;
	struct file_ast *root;		/* NULL if the root could not be read */
	const char *stdlib_dir;		/* for "add import" notes on undefined names; may be NULL */
	const struct reach *reach;	/* lang/reach.h, once computed (lazy loading) */
	/* Every stdlib file loaded is byte for byte one that checked clean
	 * when memc was built (import_opts.verified), so the bodies of its
	 * templates need no static walk (check.c); false if none is loaded. */
	bool stdlib_verified;
	struct import_cache *cache;	/* import_opts.cache, for the loads that follow */
};

struct program *import_load(struct arena *a, struct interner *in, struct src_table *src,
			    struct diag_engine *de, const char *root_path,
			    const struct import_opts *opts);

/* Several roots into one program (memc list): each file still loads once;
 * root is the first one that could be read. */
struct program *import_load_many(struct arena *a, struct interner *in, struct src_table *src,
				 struct diag_engine *de, const char *const *roots, size_t nroots,
				 const struct import_opts *opts);

/*
 * The compilations of one process that share an interner (one file's and
 * its -Wcapacity verifications, memc fit's variants) parse a verified
 * stdlib declaration once (lang/import_cache.c): what the parser makes
 * of the same bytes at the same file id is the same tree, and nothing
 * after the parser writes to one. The cache lives in @a, as the interner
 * @in must.
 */
struct import_cache *import_cache_new(struct arena *a, struct interner *in);
struct interner *import_cache_interner(const struct import_cache *c);
/* The declarations of f's [start, end), whose index entry is @x (NULL:
 * not verified, so parsed here and not kept), parsed once per @c (NULL:
 * no cache) when @in is its interner; top-level nodes are fresh in @a. */
struct decl *import_cache_parse(struct import_cache *c, struct arena *a, struct interner *in,
				struct diag_engine *de, const struct src_file *f,
				const struct stdlib_decl *x, uint32_t start, uint32_t end, unsigned *nerrors);
/* Declarations taken from @c, and parsed into it. */
void import_cache_stats(const struct import_cache *c, unsigned long *hits, unsigned long *misses);
/* The node @c parsed that @d is a copy of (or is), NULL if @d is not one
 * of its declarations: what stands for @d in every compilation sharing
 * @c, for as long as @c lives. */
const struct decl *import_cache_origin(const struct import_cache *c, const struct decl *d);
struct arena *import_cache_arena(struct import_cache *c);
/* What other modules keep for the compilations sharing @c: the
 * checker's walks (lang/walk_cache.c) and the builder's
 * (analyzer/model/build_cache.c). NULL past the last slot. */
enum { IMPORT_CACHE_WALKS, IMPORT_CACHE_BUILDS, IMPORT_CACHE_SLOTS };
void **import_cache_slot(struct import_cache *c, unsigned which);

/* A stdlib file one of the compilations sharing @c has read and found
 * valid, by its real path: its text (in @c's arena) and digest, so the
 * next one neither reads nor digests it again. False if none kept it. */
bool import_cache_file(const struct import_cache *c, const char *real_path, const char **text, size_t *len,
		       uint64_t *digest);
/* Keep @f's text and @digest for the next compilations (a copy in @c's
 * arena unless @f's text is in it: the compilation that read it may free
 * its own). */
void import_cache_keep_file(struct import_cache *c, const struct src_file *f, uint64_t digest);

/* The realpath() of folder @dir, as a compilation sharing @c resolved it
 * (*real NULL: it failed); false if none did. */
bool import_cache_real_dir(const struct import_cache *c, const char *dir, const char **real);
void import_cache_keep_real_dir(struct import_cache *c, const char *dir, const char *real);
/* One more load through @c (lang/import.c, at the start of each). */
void import_cache_count_load(struct import_cache *c);
/* Whether a path an import tried exists, as a compilation sharing @c
 * found (*yes); false if none tried it since the second load. */
bool import_cache_exists(const struct import_cache *c, const char *path, bool *yes);
void import_cache_keep_exists(struct import_cache *c, const char *path, bool yes);

/* A display name of a file found in the stdlib folder (or next to one). */
bool import_is_stdlib_name(const char *display_name);

#endif
