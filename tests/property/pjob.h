/* SPDX-License-Identifier: MIT */
/*
 * pjob.h - a train job as editable text, for the property suite.
 *
 * A job is its prelude (imports and any other declarations, kept verbatim)
 * and one train block: an ordered list of fields, `key = value` or a nested
 * record `key { sub = value ... }`. Properties edit fields by name and
 * render the job again, optionally in another layout (whitespace, comments,
 * field and declaration order) that must not change any number.
 *
 * Everything lives in the arena passed in; a job is copied before editing
 * (pjob_copy), so a base job is never changed by a variant.
 */
#ifndef MEMC_TESTS_PJOB_H
#define MEMC_TESTS_PJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena;

struct pjob_field {
	const char *key;
	const char *value;		/* NULL for a nested record */
	struct pjob_field *sub;		/* the record's fields */
	size_t nsub, capsub;
};

struct pjob {
	const char *origin;		/* "examples/x.mem" or "generated #3" */
	const char *prelude;		/* imports, comments, other declarations */
	const char *name;		/* the train block's name */
	struct pjob_field *f;
	size_t nf, capf;
};

/* Layouts that must give the same numbers as PJOB_PLAIN. */
enum pjob_style {
	PJOB_PLAIN,		/* two-space indent, one field a line */
	PJOB_NOISY,		/* tabs, blank lines, line and block comments, aligned '=' */
	PJOB_REORDERED,		/* fields reversed, records inline, train block first */
	PJOB__STYLES
};

/* The first train block of @text as a job; false if it has none or its
 * fields are not of the simple form above. */
bool pjob_parse(struct arena *a, const char *origin, const char *text, struct pjob *out);
/* Every train block of @text, in order; returns how many (at most @max). */
size_t pjob_parse_all(struct arena *a, const char *origin, const char *text, struct pjob *out,
		      size_t max);

struct pjob *pjob_copy(struct arena *a, const struct pjob *j);

/* The value of @key ("parallel.tp" reaches into a record), or NULL. */
const char *pjob_get(const struct pjob *j, const char *key);
/* Set @key to @value (adding it, and its record, when absent); NULL removes it. */
void pjob_set(struct arena *a, struct pjob *j, const char *key, const char *value);
/* pjob_get as a whole number; @dflt when absent or not a plain number. */
uint64_t pjob_get_u64(const struct pjob *j, const char *key, uint64_t dflt);
void pjob_set_u64(struct arena *a, struct pjob *j, const char *key, uint64_t v);

/* The whole file. */
char *pjob_render(struct arena *a, const struct pjob *j, enum pjob_style style);

#endif
