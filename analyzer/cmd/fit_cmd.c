/* SPDX-License-Identifier: MIT */
/*
 * fit_cmd.c - `memc fit FILE [--job NAME] [--format json]`: per train
 * block, the largest micro_batch and seq_len, the fewest GPUs and, for a
 * job that does not fit, the smallest changes that make it fit
 * (docs/fit.md). The file is compiled once as `memc check` would, its
 * errors printed; then every variant is compiled from its edited text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/cmd/fit_cmd.h"
#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/out/jsonw.h"
#include "analyzer/out/report.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/num.h"
#include "lang/source.h"

/* A search never runs away: past this many variants it stops and says so. */
enum { FIT_MAX_BUILDS = 4000 };

const char fit_usage_text[] =
	"usage: memc fit [--job NAME] [--format text|json] [-I DIR] [--stdlib DIR] FILE\n\n"
	"For each train block of FILE (or the one named NAME): the largest micro_batch\n"
	"and seq_len that fit with the job's headroom, the fewest GPUs of its type, and\n"
	"for a job that does not fit the smallest changes that make it fit, each\n"
	"verified by checking the file with the change written in (docs/fit.md).\n"
	"Exit status 0: answered (also 'nothing fits'); 1: FILE has errors or no such\n"
	"job; 2: usage.\n";

struct fit_args {
	struct driver_opts o;
	const char *file, *job;
	bool json;
};

static int parse_one(struct fit_args *a, int argc, char **argv, int *i)
{
	static const char *names[] = { "--job", "--format", "-I", "--stdlib" };
	bool hit;

	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const char *v = driver_option_value(argc, argv, i, names[k], &hit);

		if (!hit)
			continue;
		if (!v || !*v)
			return driver_usage("fit", "option needs a value:", names[k]);
		if (k == 0)
			a->job = v;
		else if (k == 1 && (strcmp(v, "json") == 0 || strcmp(v, "text") == 0))
			a->json = strcmp(v, "json") == 0;
		else if (k == 1)
			return driver_usage("fit", "unknown format (text, json):", v);
		else if (!driver_is_dir(v))	/* a typo must not find a same-named file elsewhere */
			return driver_usage("fit", "not a directory:", v);
		else if (k == 2)
			a->o.dirs[a->o.ndirs++] = v;
		else
			a->o.stdlib_dir = v;
		return -1;
	}
	return driver_usage("fit", "unknown option", argv[*i]);
}

static int option_of(void *ctx, int argc, char **argv, int *i)
{
	return parse_one(ctx, argc, argv, i);
}

static int parse_fit_args(struct fit_args *a, int argc, char **argv, const char **dirs)
{
	a->o.dirs = dirs;
	a->o.argv0 = argv[0];
	return driver_parse_file_args("fit", argc, argv, &a->file, option_of, a);
}

/* The paste-able lines, then each caveat as a comment line (pasted too,
 * it changes nothing). */
static void print_lines(const struct fit_fix *f)
{
	for (size_t i = 0; i < f->nlines; i++)
		printf("    %s\n", f->lines[i]);
	for (size_t i = 0; i < f->change.n; i++)
		if (f->change.v[i].caveat)
			printf("    // %s\n", f->change.v[i].caveat);
}

/* ", 4 fit the GPU with 3.00 GiB (7.5%) to spare, under the 10% headroom". */
static void print_spare(uint64_t spare, uint64_t capacity, const struct fit_answer *a)
{
	char b[32];

	printf("with %s (%.1f%%) to spare, under the %.0f%% headroom", report_bytes(spare, b, sizeof b),
	       capacity ? 100.0 * (double)spare / (double)capacity : 0.0, a->headroom * 100);
}

static void print_tight(const char *what, uint64_t v, uint64_t total, uint64_t spare, const struct fit_answer *a)
{
	char b[32];

	if (!v)
		return;
	printf("    %s = %llu fits the GPU (%s) ", what, (unsigned long long)v, report_bytes(total, b, sizeof b));
	print_spare(spare, a->capacity, a);
	putchar('\n');
}

static void print_found(const char *what, uint64_t v, uint64_t total, uint64_t limit)
{
	char b[32];

	if (v)
		printf("  %s = %llu (%s%s)\n", what, (unsigned long long)v, report_bytes(total, b, sizeof b),
		       v == limit ? "; the largest searched" : "");
	else
		printf("  %s: none fits\n", what);
}

static void print_text(const char *name, const struct fit_ctx *c, const struct fit_answer *a)
{
	char b[32], cap[32];

	printf("train %s: %s per GPU; %s has %s, %.0f%% kept free: %s\n", name,
	       report_bytes(a->as_written.total, b, sizeof b), a->gpu, report_bytes(a->capacity, cap, sizeof cap),
	       a->headroom * 100, !a->as_written.ok ? "cannot be analysed" :
	       a->as_written.fits ? "fits" : "does not fit");
	if (a->as_written.ok && !a->as_written.fits && a->as_written.on_gpu) {
		printf("  (it fits the GPU ");
		print_spare(a->as_written.spare, a->as_written.capacity, a);
		printf(")\n");
	}
	print_found("max_micro_batch", a->max_micro_batch, a->mb_total, FIT_MB_LIMIT);
	print_tight("micro_batch", a->tight_micro_batch, a->tight_mb_total, a->tight_mb_spare, a);
	print_found("max_seq_len", a->max_seq_len, a->seq_total, FIT_SEQ_LIMIT);
	print_tight("seq_len", a->tight_seq_len, a->tight_seq_total, a->tight_seq_spare, a);
	print_found("min_gpus", a->min_gpus, a->gpus_total, 0);
	print_tight("gpus", a->tight_gpus, a->tight_gpus_total, a->tight_gpus_spare, a);
	for (size_t i = 0; i < a->nfixes; i++) {
		printf("  fix %zu (%s):\n", i + 1, report_bytes(a->fixes[i].total, b, sizeof b));
		print_lines(&a->fixes[i]);
	}
	if (a->tight.nlines) {
		printf("  fits the GPU (%s) ", report_bytes(a->tight.total, b, sizeof b));
		print_spare(a->tight.spare, a->tight.capacity, a);
		printf(":\n");
		print_lines(&a->tight);
	}
	if (!a->as_written.fits && !a->nfixes) {
		printf("  nothing fits with up to 3 changes");
		if (a->closest.nlines) {
			printf("; the closest (%s):\n", report_bytes(a->closest.total, b, sizeof b));
			print_lines(&a->closest);
		} else {
			putchar('\n');
		}
	}
	if (c->truncated)
		printf("  (the search stopped after %lu variants)\n", c->builds);
}

static void json_fix(struct jsonw *w, const char *key, const struct fit_fix *f)
{
	jsonw_open(w, key, '{');
	jsonw_open(w, "changes", '[');
	for (size_t i = 0; i < f->nlines; i++)
		jsonw_str(w, NULL, f->lines[i]);
	jsonw_close(w, ']');
	jsonw_open(w, "caveats", '[');
	for (size_t i = 0; i < f->change.n; i++)
		if (f->change.v[i].caveat)
			jsonw_str(w, NULL, f->change.v[i].caveat);
	jsonw_close(w, ']');
	jsonw_u64(w, "device_total_bytes", f->total);
	jsonw_close(w, '}');
}

static void json_count(struct jsonw *w, const char *key, uint64_t v)
{
	if (v)
		jsonw_u64(w, key, v);
	else
		jsonw_null(w, key);
}

/* What fits the GPU but not inside the headroom (docs/fit.md). */
static void json_tight(struct jsonw *w, const struct fit_answer *a)
{
	jsonw_open(w, "under_headroom", '{');
	json_count(w, "max_micro_batch", a->tight_micro_batch);
	json_count(w, "max_seq_len", a->tight_seq_len);
	json_count(w, "min_gpus", a->tight_gpus);
	if (a->tight.nlines) {
		json_fix(w, "fix", &a->tight);
		jsonw_u64(w, "fix_spare_bytes", a->tight.spare);
	} else {
		jsonw_null(w, "fix");
	}
	jsonw_close(w, '}');
}

static void print_json(struct jsonw *w, const char *name, const struct fit_ctx *c, const struct fit_answer *a)
{
	jsonw_open(w, NULL, '{');
	jsonw_str(w, "name", name);
	jsonw_str(w, "gpu", a->gpu);
	jsonw_u64(w, "capacity_bytes", a->capacity);
	jsonw_bool(w, "analysed", a->as_written.ok);
	jsonw_bool(w, "fits", a->as_written.fits);
	jsonw_u64(w, "device_total_bytes", a->as_written.total);
	json_count(w, "max_micro_batch", a->max_micro_batch);
	json_count(w, "max_seq_len", a->max_seq_len);
	json_count(w, "min_gpus", a->min_gpus);
	jsonw_open(w, "fixes", '[');
	for (size_t i = 0; i < a->nfixes; i++)
		json_fix(w, NULL, &a->fixes[i]);
	jsonw_close(w, ']');
	if (!a->as_written.fits && !a->nfixes && a->closest.nlines)
		json_fix(w, "closest", &a->closest);
	else
		jsonw_null(w, "closest");
	json_tight(w, a);
	jsonw_bool(w, "truncated", c->truncated);
	jsonw_close(w, '}');
}

/* Compile the file as written, its errors on stderr; false if it has any.
 * Variants add no warning to the ones of this file as a variant (the
 * first fit_try), not to this compilation's, which checks everything. */
static bool load_base(struct fit_ctx *c, struct fit_args *a)
{
	struct interner *in = interner_new(&c->arena);
	struct src_table *src = src_table_new(&c->arena);
	struct diag_engine *de = diag_new(&c->arena, src, stderr);
	struct program *prog;

	c->src = src;
	diag_suppress_warnings(de);	/* memc check says those; fit answers */
	c->opts = &a->o;
	c->path = a->file;
	c->stdlib = driver_stdlib_dir(&c->arena, &a->o);
	struct import_opts io = { .dirs = a->o.dirs, .ndirs = a->o.ndirs, .stdlib_dir = c->stdlib,
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests };

	/* every declaration in full, not the lazy stubs of what the job does
	 * not reach: the larger-GPU fixes read the memory of GPUs it never
	 * names (each variant loads lazily, as memc check does) */
	c->prog = prog = import_load_many(&c->arena, in, src, de, &a->file, 1, &io);
	c->cache = import_cache_new(&c->arena, in);	/* the variants parse the stdlib once */
	if (prog->root && !diag_error_count(de))
		c->cr = check_program(&c->arena, in, de, src, prog);
	diag_flush(de);
	if (!prog->root || diag_error_count(de))
		return false;
	c->ev = c->gpu_ev = c->cr->ev;
	c->text = src_get(c->src, 1)->text;
	c->len = src_get(c->src, 1)->len;
	return true;
}

/* Answer one job; false if it has an error of its own. */
static bool fit_job(struct fit_ctx *c, const struct check_job *j, struct jsonw *w, bool json)
{
	struct fit_answer ans;
	struct value hv;

	if (!j->ok)
		return false;
	c->job = j;
	c->job_name = j->decl->name;
	c->job_headroom = check_job_field(j, "headroom", &hv) && hv.kind == VAL_NUM ? num_to_double(hv.num) : 0.10;
	c->have_base = c->truncated = false;
	c->builds = 0;
	fit_search(c, &ans);
	fit_ctx_release(c);	/* the outcomes are this job's variants */
	if (json)
		print_json(w, j->decl->name, c, &ans);
	else
		print_text(j->decl->name, c, &ans);
	return true;
}

static int fit_run(struct fit_args *a)
{
	struct fit_ctx c = { .arena = { 0 }, .max_builds = FIT_MAX_BUILDS };
	struct jsonw w;
	int rc = 0;
	size_t n = 0;

	if (!load_base(&c, a)) {
		arena_free(&c.arena);
		return 1;
	}
	jsonw_init(&w, stdout, 0, false, true);
	if (a->json) {
		jsonw_open(&w, NULL, '{');
		jsonw_str(&w, "file", a->file);
		jsonw_open(&w, "jobs", '[');
	}
	for (const struct check_job *j = c.cr->jobs; j; j = j->next)
		if (!a->job || strcmp(a->job, j->decl->name) == 0) {
			if (!a->json && n)
				putchar('\n');
			n++;
			rc |= !fit_job(&c, j, &w, a->json);
		}
	if (a->json) {
		jsonw_close(&w, ']');
		jsonw_close(&w, '}');
		putchar('\n');
	}
	if (a->job && !n)
		fprintf(stderr, "memc: %s: no train block named '%s'\n", a->file, a->job), rc = 1;
	arena_free(&c.arena);
	return rc;
}

int fit_main(int argc, char **argv)
{
	const char **dirs = calloc((size_t)argc, sizeof *dirs);	/* one -I per argument at most */
	struct fit_args a = { .file = NULL };

	if (!dirs)
		return driver_usage("fit", "out of memory", NULL);
	int rc = parse_fit_args(&a, argc, argv, dirs);

	rc = rc >= 0 ? rc : fit_run(&a);
	free(dirs);
	return rc;
}
