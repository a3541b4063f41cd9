/* SPDX-License-Identifier: MIT */
/*
 * lang_fixture.h - the fixture the language unit tests share: one arena,
 * source table, diagnostic engine and interner per test, with helpers to
 * parse a string and to look at the diagnostics it left.
 *
 * Each test binary is built from its own .c file alone, so everything here
 * is static inline. A test adds its own members to struct fixture by
 * defining FX_FIELDS (members, each ending in ';') before including this.
 */
#ifndef MEMC_TESTS_UNIT_LANG_FIXTURE_H
#define MEMC_TESTS_UNIT_LANG_FIXTURE_H

/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"
#include "lang/intern.h"
#include "lang/parse.h"
#include "lang/source.h"

#ifndef FX_FIELDS
#define FX_FIELDS
#endif

struct fixture {
	struct arena arena;
	struct src_table *t;
	struct diag_engine *de;
	struct interner *in;
	FILE *out;			/* where the engine prints; NULL: kept only */
	char *buf;			/* what it printed (fx_setup_printing) */
	size_t len;
	const struct src_file *f;	/* the last file fx_parse() added */
	char text[128];			/* fx_text_of()'s buffer */
	FX_FIELDS
};

/* Allocate *@state; the engine prints into fx->buf if @printing, else keeps its diagnostics. */
static inline int fx_open(void **state, int printing)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	if (printing && !(fx->out = open_memstream(&fx->buf, &fx->len))) {
		free(fx);
		return -1;
	}
	fx->t = src_table_new(&fx->arena);
	fx->de = diag_new(&fx->arena, fx->t, fx->out);
	fx->in = interner_new(&fx->arena);
	*state = fx;
	return 0;
}

/* cmocka setup: a fixture whose engine keeps diagnostics and never prints. */
static inline int fx_setup(void **state)
{
	return fx_open(state, 0);
}

/* cmocka setup: a fixture whose engine prints into memory (see fx_output()). */
static inline int fx_setup_printing(void **state)
{
	return fx_open(state, 1);
}

/* cmocka teardown for either setup: frees the stream, the arena and the fixture. */
static inline int fx_teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->out)
		fclose(fx->out);
	free(fx->buf);
	arena_free(&fx->arena);
	free(fx);
	return 0;
}

/* Everything the engine printed so far (fx_setup_printing fixtures). */
static inline const char *fx_output(struct fixture *fx)
{
	diag_flush(fx->de);
	fflush(fx->out);
	return fx->buf;
}

/* Add @text as file @name to the table (it must load). */
static inline struct src_file *fx_add(struct fixture *fx, const char *name, const char *text)
{
	struct src_file *f = src_add_string(fx->t, fx->de, name, text, strlen(text));

	assert_non_null(f);
	return f;
}

/* The location of the first occurrence of @needle in @f. */
static inline struct loc fx_at(const struct src_file *f, const char *needle)
{
	const char *p = strstr(f->text, needle);

	assert_non_null(p);
	uint32_t start = (uint32_t)(p - f->text);
	return (struct loc){ f->id, start, start + (uint32_t)strlen(needle) };
}

/* Add @text as file @name, make it fx->f and parse it; diagnostics are left for the test. */
static inline struct file_ast *fx_parse(struct fixture *fx, const char *name, const char *text)
{
	struct src_file *f = fx_add(fx, name, text);

	fx->f = f;
	struct file_ast *ast = parse_file(&fx->arena, fx->in, fx->de, f);

	assert_non_null(ast);
	assert_int_equal(ast->file, f->id);
	return ast;
}

/* Fail, naming the first diagnostic and its line, if there is any. */
static inline void fx_assert_no_diags(struct fixture *fx)
{
	const struct diag *d = diag_first(fx->de);

	if (d)
		fail_msg("unexpected %s at line %u: %s", diag_name(d->id), diag_loc_line(fx->de, d->loc),
			 diag_message(d));
}

/* How many diagnostics the engine holds. */
static inline unsigned fx_count_diags(struct fixture *fx)
{
	unsigned n = 0;

	for (const struct diag *d = diag_first(fx->de); d; d = d->next)
		n++;
	return n;
}

/* The only diagnostic so far; it must be named @name. */
static inline const struct diag *fx_only_diag(struct fixture *fx, const char *name)
{
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	if (d->next)
		fail_msg("more than one diagnostic; second: %s: %s", diag_name(d->next->id),
			 diag_message(d->next));
	assert_string_equal(diag_name(d->id), name);
	return d;
}

/* The source text @l covers, in any file of the table (in fx->text). */
static inline const char *fx_text_of(struct fixture *fx, struct loc l)
{
	const struct src_file *f = src_get(fx->t, l.file);

	assert_non_null(f);
	assert_true(l.start <= l.end);
	assert_true(l.end <= f->len);
	assert_true(l.end - l.start < sizeof fx->text);
	memcpy(fx->text, f->text + l.start, l.end - l.start);
	fx->text[l.end - l.start] = '\0';
	return fx->text;
}

/* fx_text_of(), for a location that must lie in the last file parsed. */
static inline const char *fx_text_of_last(struct fixture *fx, struct loc l)
{
	assert_non_null(fx->f);
	assert_int_equal(l.file, fx->f->id);
	return fx_text_of(fx, l);
}

#endif
