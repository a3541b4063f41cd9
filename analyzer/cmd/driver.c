/* SPDX-License-Identifier: MIT */
/*
 * driver.c - run the phases over one input file at a time.
 *
 * Each file is one compilation with its own arena, source table and
 * diagnostics engine, freed before the next file starts. Phases are
 * gated: the checker runs only on a program that parsed and resolved,
 * the analyzer only on one that checked, so one mistake gives one
 * diagnostic rather than a cascade.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "analyzer/out/diag_out.h"
#include "analyzer/pipeline.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

bool driver_is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The stdlib next to the running binary: build/memc -> stdlib/ of the
 * source tree; PREFIX/bin/memc -> PREFIX/share/memc/stdlib. Else the
 * compiled-in install location. */
const char *driver_stdlib_dir(struct arena *a, const struct driver_opts *o)
{
	char exe[PATH_MAX];
	ssize_t n;

	if (o->stdlib_dir)
		return o->stdlib_dir;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');

		if (slash) {
			*slash = '\0';
			const char *src = arena_printf(a, "%s/../stdlib", exe);
			const char *inst = arena_printf(a, "%s/../share/memc/stdlib", exe);

			if (driver_is_dir(src))
				return src;
			if (driver_is_dir(inst))
				return inst;
		}
	}
	return MEMC_STDLIB_DIR;
}

/* -W flags; a bad one is a usage error. */
static bool apply_flags(struct diag_engine *de, const struct driver_opts *o)
{
	bool ok = true;

	for (size_t i = 0; i < o->nwflags; i++)
		ok &= diag_apply_flag(de, o->wflags[i]);
	if (o->no_warnings)
		diag_suppress_warnings(de);
	diag_set_max_errors(de, o->max_errors);
	return ok;
}

/* The machine formats get every compilation, also one that stopped early
 * (bad flags, unreadable, did not parse): an error never shows only on
 * stderr. */
static void write_machine(struct pipeline *p, const char *path, struct driver_totals *tot)
{
	const char *file = p->src->nfiles > 1 ? src_get(p->src, 1)->display_name : path;

	if (p->opts->command == DRIVER_REPORT && p->opts->format == DRIVER_FORMAT_JSON)
		pipeline_report_unbuilt(p, file);
	if (tot->out)
		diag_out_file(tot->out, file, p->diag);
}

static int compile_one(const struct driver_opts *o, const char *path, struct driver_totals *tot)
{
	struct arena arena = { 0 };
	struct interner *in = interner_new(&arena);
	struct src_table *src = src_table_new(&arena);
	struct diag_engine *de = diag_new(&arena, src, stderr);
	diag_set_color(de, o->color);
	struct pipeline p = { .arena = &arena, .interner = in, .src = src, .diag = de, .opts = o };
	int rc = 0;

	if (!apply_flags(de, o)) {
		diag_flush(de);
		write_machine(&p, path, tot);
		arena_free(&arena);
		return 2;
	}
	struct import_opts io = { .dirs = o->dirs, .ndirs = o->ndirs,
				  .stdlib_dir = driver_stdlib_dir(&arena, o),
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests,
				  .cache = import_cache_new(&arena, in) };

	p.program = import_load(&arena, in, src, de, path, &io);
	diag_flush(de);
	if (!p.program->root)	/* read but invalid (UTF-8, NUL): a located error, 1 */
		rc = src->nfiles > 1 && src_get(src, 1)->text ? 1 : 2;
	else
		rc = pipeline_run(&p);
	diag_flush(de);
	tot->errors += diag_error_count(de);
	tot->warnings += diag_warning_count(de);
	if (rc == 0 && diag_error_count(de) > 0)
		rc = 1;
	write_machine(&p, path, tot);
	arena_free(&arena);
	return rc;
}

static void print_tally(const struct driver_totals *t)
{
	if (!t->errors && !t->warnings)
		return;
	fputs("memc: ", stderr);
	if (t->errors)
		fprintf(stderr, "%u error%s", t->errors, t->errors == 1 ? "" : "s");
	if (t->errors && t->warnings)
		fputs(", ", stderr);
	if (t->warnings)
		fprintf(stderr, "%u warning%s", t->warnings, t->warnings == 1 ? "" : "s");
	fputc('\n', stderr);
}

static const enum diag_out_format machine_format[] = {
	[DRIVER_FORMAT_JSON] = DIAG_OUT_JSON,
	[DRIVER_FORMAT_SARIF] = DIAG_OUT_SARIF,
	[DRIVER_FORMAT_GITHUB] = DIAG_OUT_GITHUB,
};

int driver_compile_all(struct driver_opts *o)
{
	struct driver_totals tot = { 0 };
	struct diag_out out;
	int worst = 0;

	if (o->command == DRIVER_CHECK && o->format != DRIVER_FORMAT_TEXT) {
		diag_out_begin(&out, stdout, machine_format[o->format]);
		tot.out = &out;
	}
	pipeline_begin(o);
	for (size_t i = 0; i < o->nfiles; i++) {
		int rc = compile_one(o, o->files[i], &tot);

		worst = rc > worst ? rc : worst;
	}
	pipeline_end(o);
	if (tot.out)
		diag_out_end(tot.out);
	print_tally(&tot);
	return worst;
}

const char *driver_option_value(int argc, char **argv, int *i, const char *name, bool *hit)
{
	size_t n = strlen(name);
	bool glued = strcmp(name, "-I") == 0;

	*hit = strncmp(argv[*i], name, n) == 0 && (argv[*i][n] == '=' || !argv[*i][n] || glued);
	if (!*hit)
		return NULL;
	if (glued && argv[*i][n])
		return argv[*i] + n;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return *i + 1 < argc ? argv[++*i] : NULL;
}

int driver_usage(const char *command, const char *msg, const char *arg)
{
	fprintf(stderr, "memc: %s%s%s\nTry 'memc %s --help' for more information.\n", msg,
		arg ? " " : "", arg ? arg : "", command);
	return 2;
}

int driver_parse_file_args(const char *command, int argc, char **argv, const char **file,
			   int (*option)(void *ctx, int argc, char **argv, int *i), void *ctx)
{
	char msg[64];

	for (int i = 2; i < argc; i++) {
		int rc;

		if (argv[i][0] == '-' && argv[i][1]) {
			if ((rc = option(ctx, argc, argv, &i)) >= 0)
				return rc;
		} else if (*file) {
			snprintf(msg, sizeof msg, "%s takes one FILE; also given", command);
			return driver_usage(command, msg, argv[i]);
		} else {
			*file = argv[i];
		}
	}
	if (!*file || strcmp(*file, "-") == 0) {
		snprintf(msg, sizeof msg, "%s needs one FILE (not standard input)", command);
		return driver_usage(command, msg, NULL);
	}
	return -1;
}
