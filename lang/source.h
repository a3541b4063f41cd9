/* SPDX-License-Identifier: MIT */
/*
 * source.h - the table of loaded source files, and locations into them.
 *
 * A file is read whole, copied into the arena, checked (no NUL bytes, valid
 * UTF-8) and given a line table. Locations are byte offsets; line and
 * column are computed only when something is printed.
 *
 * Invariants:
 *  - File ids start at 1, in load order. Id 0 is the <builtin> pseudo-file
 *    for things no file spelled out; printers leave out line and column
 *    for it. src_get(t, 0) returns that pseudo-file (empty text).
 *  - f->text is NUL-terminated (text[len] == 0) and, for a file that loaded
 *    successfully (f->valid), contains no NUL byte and is valid UTF-8.
 *    A leading UTF-8 byte order mark is not part of f->text: offsets and
 *    columns start after it.
 *  - "\n", "\r\n" and a lone "\r" each end a line (as in lexer.l).
 *  - A file that fails validation stays in the table (so the diagnostic can
 *    show the offending line) but has valid == false, and src_load()
 *    returns NULL for it.
 *  - Everything lives in the arena given to src_table_new(); pointers to
 *    src_file stay valid until it is freed.
 *  - This module reads files but does not search for them: include
 *    resolution (search path, include-once, cycles) is the importer's job.
 *    src_find_real() is the hook it uses for include-once.
 */
#ifndef MEMC_LANG_SOURCE_H
#define MEMC_LANG_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena;
struct diag_engine;

/*
 * A half-open byte range [start, end) in one source file. It is 12 bytes,
 * passed and stored by value and never allocated. file == 0 is <builtin>;
 * NO_LOC is the "no location at all" value (also file 0).
 */
struct loc {
	uint32_t file;
	uint32_t start;
	uint32_t end;
};

#define NO_LOC ((struct loc){ 0, 0, 0 })

static inline bool loc_is_none(struct loc l)
{
	return l.file == 0;
}

/*
 * The smallest range covering both @a and @b. A location without a file
 * is ignored; if the two name different files, @a wins (a range cannot
 * span files).
 */
static inline struct loc loc_join(struct loc a, struct loc b)
{
	if (a.file == 0)
		return b;
	if (b.file == 0 || b.file != a.file)
		return a;
	return (struct loc){ a.file, a.start < b.start ? a.start : b.start,
			     a.end > b.end ? a.end : b.end };
}

/* States for the importer's cycle detection (NONE -> ACTIVE -> DONE). */
enum src_load_state {
	SRC_NONE,
	SRC_ACTIVE,
	SRC_DONE,
};

/* Files larger than this are refused with a file-too-large error. */
#define SRC_MAX_SIZE (16u * 1024 * 1024)

struct src_file {
	uint32_t id;
	const char *display_name;	/* as the user wrote it, or "<stdlib>/gpus/h100.mem";
					   never made absolute by this module */
	const char *real_path;		/* realpath(); identity for include-once; NULL for
					   strings and <builtin> */
	const char *text;		/* whole file, NUL-terminated */
	uint32_t len;			/* bytes in text, excluding the final NUL */
	/* Built on first use, so read through src_line_starts()/src_nlines():
	 * most loaded files (the stdlib's) are never shown in a message. */
	uint32_t *line_table;		/* offset of each line's first byte; [0] == 0 */
	uint32_t line_count;		/* >= 1: an empty file has one empty line */
	struct arena *arena;		/* where the line table goes */
	struct loc included_from;	/* the include statement; .file == 0 for roots */
	bool valid;			/* passed the NUL and UTF-8 checks */
	enum src_load_state state;	/* owned by the importer */
	void *user;			/* owned by the importer (e.g. the parsed AST) */
};

struct src_table {
	struct arena *arena;
	struct src_file **files;	/* indexed by id; files[0] is <builtin> */
	uint32_t nfiles;		/* including <builtin> */
	uint32_t cap;
	/* src_set_overlay(): one path whose text comes from memory */
	const char *overlay_path;
	const char *overlay_text;
	size_t overlay_len;
};

struct src_table *src_table_new(struct arena *a);

/*
 * Read @path whole and register it under @display_name (which defaults to
 * @path when NULL). It is opened without blocking and must be a regular
 * file (a FIFO, device or directory is file-not-found, never a hang). @site is the include statement, or NO_LOC for a root
 * file; it becomes f->included_from and is where open/read errors point.
 * On any error a diagnostic goes to @de and NULL is returned.
 */
struct src_file *src_load(struct src_table *t, struct diag_engine *de, const char *path,
			  const char *display_name, struct loc site);
/* src_load() for a caller that already knows realpath(@path) (the
 * importer, which needs it first for include-once); NULL: compute it. */
struct src_file *src_load_real(struct src_table *t, struct diag_engine *de, const char *path,
			       const char *display_name, struct loc site, const char *real_path);

/*
 * Read descriptor @fd (standard input for `memc check -`) to its end and
 * register it as @display_name ("<stdin>"), validated like a file. It is
 * read in chunks and never more than one byte past SRC_MAX_SIZE, so an
 * endless pipe is refused with file-too-large. real_path is NULL: such a
 * text cannot be imported, and imports from it resolve from the current
 * folder.
 */
struct src_file *src_load_fd(struct src_table *t, struct diag_engine *de, int fd,
			     const char *display_name);

/*
 * Make src_load() of exactly @path (compared as given, before any
 * realpath) register @text instead of reading the file: an editor's
 * unsaved buffer (memc lsp), so its imports still resolve from its folder
 * and include-once still knows it. @text must outlive the table; a file
 * of that name need not exist.
 */
void src_set_overlay(struct src_table *t, const char *path, const char *text, size_t len);

/* A file whose text an earlier load read and validated (a stdlib file
 * already loaded by a compilation sharing the import cache,
 * lang/import_cache.c): registered as src_load_real() would, without
 * reading or validating it again. @text must outlive the table. */
struct src_file *src_add_loaded(struct src_table *t, const char *display_name, const char *text, size_t len,
				const char *real_path, struct loc site);

/* Register in-memory text (tests). Validated like a file. */
struct src_file *src_add_string(struct src_table *t, struct diag_engine *de,
				const char *display_name, const char *text, size_t len);

/* The file with id @id; asserts that it exists. Id 0 is <builtin>. */
struct src_file *src_get(const struct src_table *t, uint32_t id);
/* Length of the pure-ASCII prefix of s[0, n), eight bytes at a time. */
size_t src_ascii_prefix(const char *s, size_t n);
/* A 64-bit digest of s[0, n), eight bytes at a time: equal texts, equal
 * digests. Not cryptographic; it tells a stdlib file from an edited copy. */
uint64_t src_digest(const char *s, size_t n);
/* The file loaded from @real_path, or NULL. */
struct src_file *src_find_real(const struct src_table *t, const char *real_path);

/* The line table: the offset of each line's first byte, and the count. */
const uint32_t *src_line_starts(const struct src_file *f);
uint32_t src_nlines(const struct src_file *f);
/* 1-based line containing byte @offset (offsets past the end: last line). */
uint32_t src_line_of(const struct src_file *f, uint32_t offset);
/* 1-based column of @offset, counted in code points (an invalid byte is 1). */
uint32_t src_col_of(const struct src_file *f, uint32_t offset);
/* Start of 1-based @line, its length without the "\n", "\r\n" or "\r" in *len. */
const char *src_line_text(const struct src_file *f, uint32_t line, size_t *len);

/* Returned by src_decode() for a byte that does not start valid UTF-8. */
#define SRC_BAD_CP 0xFFFFFFFFu

/*
 * Decode the code point at @p (p < end) into *cp and return its length in
 * bytes (always >= 1). A byte that does not start a valid sequence gives
 * SRC_BAD_CP and length 1, so every byte is consumed exactly once.
 */
size_t src_decode(const char *p, const char *end, uint32_t *cp);

#endif
