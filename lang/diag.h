/* SPDX-License-Identifier: MIT */
/*
 * diag.h - the diagnostics engine: named records with a primary location
 * and notes, -W flags, and GCC-style printing.
 *
 * Every diagnostic is a row in lang/diag.def, which gives it a stable
 * kebab-case name and a kind (ERROR or WARNING). Code reports problems with
 * diag_error()/diag_warn() (or diag_emit(), which takes the kind from the
 * table) and attaches notes with diag_note(). Records are queued, not
 * printed: main.c calls diag_flush() after each phase, so output order is
 * phase order, then emission order.
 *
 * Invariants:
 *  - The engine and all records live in the arena given to diag_new().
 *    There is no diag_free().
 *  - Records are never dropped from the list once queued: diag_first()
 *    walks every diagnostic of the run in order, printed or not (the JSON
 *    reporter reads them this way).
 *  - A warning that is switched off (or any diagnostic after the error
 *    limit) returns a shared sink record: diag_note() on it does nothing,
 *    so callers never need to check.
 *  - Counts are updated when a diagnostic is created, not when printed.
 *    A warning promoted by -Werror[=name] counts as an error.
 *  - Output never depends on hash order, locale or absolute paths.
 */
#ifndef MEMC_LANG_DIAG_H
#define MEMC_LANG_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "lang/source.h"

struct arena;

enum diag_id {
#define DIAG(id, name, kind, on, summary) DIAG_##id,
#include "lang/diag.def"
#undef DIAG
	DIAG__COUNT
};

enum diag_kind {
	DIAG_KIND_ERROR,
	DIAG_KIND_WARNING,
};

/* What a record is printed as: an error may come from a promoted warning. */
enum diag_severity {
	DIAG_SEV_WARNING,
	DIAG_SEV_ERROR,
};

/* An edit a note proposes, for machine formats: replace the bytes of
 * @loc with @text. The text printer shows only the note's message. */
struct diag_fix {
	struct loc loc;
	const char *text;
};

struct diag_note {
	struct loc loc;			/* NO_LOC: a note without a position */
	const char *msg;
	const struct diag_fix *fix;	/* NULL: the note proposes no edit */
	struct diag_note *next;
};

struct diag {
	enum diag_id id;
	enum diag_severity sev;		/* after -Werror promotion */
	bool promoted;			/* a warning turned into an error by -Werror[=name] */
	struct loc loc;			/* primary location; file 0: none */
	const char *msg;
	struct diag_note *notes;	/* in the order they were added */
	struct diag_note **notes_tail;
	struct diag *next;		/* next record in emission order */
	struct diag_engine *engine;	/* NULL for the sink */
};

struct diag_engine;

/*
 * A new engine printing to @out (stderr in the CLI, a memstream in tests;
 * NULL keeps records without printing them, for --format=json). @sources
 * maps locations to files; it may be NULL only if no located diagnostic
 * is ever emitted.
 */
struct diag_engine *diag_new(struct arena *a, struct src_table *sources, FILE *out);
void diag_set_output(struct diag_engine *de, FILE *out);
/* Colour the output with ANSI escapes (GCC's colours). Off by default. */
void diag_set_color(struct diag_engine *de, bool on);

/* Report an error; @id must be an ERROR row. */
struct diag *diag_error(struct diag_engine *de, enum diag_id id, struct loc loc,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Report a warning; @id must be a WARNING row. May return the sink. */
struct diag *diag_warn(struct diag_engine *de, enum diag_id id, struct loc loc,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Report with the kind from the table. */
struct diag *diag_emit(struct diag_engine *de, enum diag_id id, struct loc loc,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
struct diag *diag_vemit(struct diag_engine *de, enum diag_id id, struct loc loc,
			const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* Report an error and return false: "return diag_fail(de, ...);". */
bool diag_fail(struct diag_engine *de, enum diag_id id, struct loc loc,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Attach a note to @d (a no-op on the sink). */
/* The record that drops everything: notes added to it vanish. For
 * callers that decide themselves not to report a diagnostic twice. */
struct diag *diag_sink(struct diag_engine *de);
void diag_note(struct diag *d, struct loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A note at @loc that proposes replacing @loc's bytes with @replacement
 * (copied); printed like diag_note(), the edit goes to JSON and SARIF. */
void diag_note_fix(struct diag *d, struct loc loc, const char *replacement, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Apply one -W argument given without the "-W": "name", "no-name",
 * "error", "no-error", "error=name" or "no-error=name". An unknown name,
 * or an attempt to disable an error, emits a bad-flag error (with a
 * did-you-mean suggestion when a name is close) and returns false.
 */
bool diag_apply_flag(struct diag_engine *de, const char *arg);
/* -w: drop every warning, including ones -Werror would promote. */
void diag_suppress_warnings(struct diag_engine *de);
/* Stop after @n errors (0: no limit; the default is 20). */
void diag_set_max_errors(struct diag_engine *de, unsigned n);
/* True once the error limit was hit; later diagnostics are dropped. */
bool diag_too_many(const struct diag_engine *de);
/* Whether warning @id is currently enabled (errors: always true). */
bool diag_is_enabled(const struct diag_engine *de, enum diag_id id);

/* Errors (promoted warnings included) and warnings recorded so far. The
 * too-many-errors record itself is not counted. */
unsigned diag_error_count(const struct diag_engine *de);
unsigned diag_warning_count(const struct diag_engine *de);

/* Print the records queued since the last flush, in order. */
void diag_flush(struct diag_engine *de);
/*
 * Print "memc: 2 errors, 1 warning" (singular/plural as needed, either
 * part left out when zero; nothing at all when both are zero).
 */
void diag_print_tally(const struct diag_engine *de, FILE *out);

/* Every record of the run, in emission order; follow d->next. */
const struct diag *diag_first(const struct diag_engine *de);
const char *diag_severity_str(const struct diag *d);	/* "error", "warning" */
const char *diag_message(const struct diag *d);
/* Display name of @loc's file, or NULL for file 0 (no location). */
const char *diag_loc_file(const struct diag_engine *de, struct loc loc);
/* 1-based line and code-point column of loc.start; 0 for file 0. */
unsigned diag_loc_line(const struct diag_engine *de, struct loc loc);
unsigned diag_loc_col(const struct diag_engine *de, struct loc loc);
/* The same for loc.end, which is exclusive: the column just after the
 * range (an empty or reversed range ends where it starts). */
unsigned diag_loc_end_line(const struct diag_engine *de, struct loc loc);
unsigned diag_loc_end_col(const struct diag_engine *de, struct loc loc);
/* The import statement that loaded @loc's file; NO_LOC for a root file
 * or file 0. */
struct loc diag_loc_import_site(const struct diag_engine *de, struct loc loc);

struct strbuf;
/*
 * Append @s to @sb as the printer shows message text, notes and file
 * names: control characters, invalid bytes, format characters (bidi
 * controls among them) and line separators become "\n", "\t", "\r",
 * "\x1b" or "\u{202e}", so no text can start a line of its own.
 */
void diag_escape(struct strbuf *sb, const char *s);

/* The table, for --list-diagnostics, docs and tests. */
const char *diag_name(enum diag_id id);
enum diag_kind diag_kind_of(enum diag_id id);
const char *diag_kind_str(enum diag_id id);	/* "error", "warning" */
bool diag_default_on(enum diag_id id);
const char *diag_summary(enum diag_id id);
/* The id named @name, or -1. */
int diag_find_name(const char *name);
/* One line per row: "name<pad> kind<pad> on|off  summary". */
void diag_list_print(FILE *out);

#endif
