/* SPDX-License-Identifier: MIT */
/*
 * list.c - memc list: the declarations visible from the given files, or
 * from the whole stdlib when none are given. Models are listed with their
 * exact parameter count (tp = ep = 1, tied weights once), GPUs with their
 * memory. Output follows declaration order, so it is stable.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/lower/build.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/source.h"

/* Every .mem file below @dir, sorted: readdir order is not stable. */
static void collect(struct arena *a, const char *dir, const char ***out, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *p = arena_printf(a, "%s/%s", dir, e->d_name);
		struct stat st;
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.' || stat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			collect(a, p, out, n, cap);
		} else if (len > 4 && !strcmp(e->d_name + len - 4, ".mem")) {
			*out = arena_grow(a, (void *)*out, *n, cap, sizeof **out);
			(*out)[(*n)++] = p;
		}
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct entry {
	const struct decl *d;
	uint64_t n;		/* params (models) or bytes (gpus) */
	bool known;
};

/* A model a user can name in a train block: an alias or a template whose
 * parameters all have defaults. */
static bool model_count(struct eval *ev, struct arena *a, const struct decl *d, uint64_t *n)
{
	struct value v = eval_decl_value(ev, d, d->name_loc);

	if (v.kind == VAL_DECL) {
		for (const struct param *p = d->templ.params; p; p = p->next)
			if (!p->def)
				return false;
		v = eval_instantiate(ev, NULL, d, NULL, d->name_loc);
	}
	return build_count_params(ev, a, v, n);
}

static void print_text(const struct scope *s, const struct entry *e)
{
	static const struct { enum decl_kind k; const char *title; } groups[] = {
		{ DECL_MODEL, "models" }, { DECL_GPU, "gpus" }, { DECL_LAYER, "layers" },
		{ DECL_OPTIMIZER, "optimizers" }, { DECL_PRECISION, "precisions" },
	};
	char buf[32];

	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		printf("%s%s:\n", g ? "\n" : "", groups[g].title);
		for (size_t i = 0; i < scope_count(s); i++) {
			if (e[i].d->kind != groups[g].k)
				continue;
			if (e[i].known && groups[g].k == DECL_MODEL)
				printf("  %-24s %20llu params\n", e[i].d->name, (unsigned long long)e[i].n);
			else if (e[i].known)
				printf("  %-24s %s\n", e[i].d->name, report_bytes(e[i].n, buf, sizeof buf));
			else
				printf("  %s\n", e[i].d->name);
		}
	}
}

static void print_json(const struct scope *s, const struct entry *e)
{
	static const struct { enum decl_kind k; const char *key, *num; } groups[] = {
		{ DECL_MODEL, "models", "params_total" }, { DECL_GPU, "gpus", "memory_bytes" },
		{ DECL_LAYER, "layers", NULL }, { DECL_OPTIMIZER, "optimizers", NULL },
		{ DECL_PRECISION, "precisions", NULL },
	};

	printf("{\n  \"memc_list_version\": 1");
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		bool first = true;

		printf(",\n  \"%s\": [", groups[g].key);
		for (size_t i = 0; i < scope_count(s); i++) {
			if (e[i].d->kind != groups[g].k)
				continue;
			printf("%s\n    {\"name\": \"%s\"", first ? "" : ",", e[i].d->name);
			if (groups[g].num && e[i].known)
				printf(", \"%s\": %llu", groups[g].num, (unsigned long long)e[i].n);
			else if (groups[g].num)
				printf(", \"%s\": null", groups[g].num);
			printf("}");
			first = false;
		}
		printf("%s]", first ? "" : "\n  ");
	}
	printf("\n}\n");
}

static int list_program(struct driver_opts *o, struct arena *a, const char *const *roots, size_t n,
			const char *stdlib)
{
	struct interner *in = interner_new(a);
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, stderr);
	diag_set_color(de, o->color);
	struct import_opts io = { .dirs = o->dirs, .ndirs = o->ndirs, .stdlib_dir = stdlib };
	struct program *p = import_load_many(a, in, src, de, roots, n, &io);

	diag_flush(de);
	if (!p->root || diag_error_count(de))
		return diag_print_tally(de, stderr), p->root ? 1 : 2;
	struct check_result *cr = check_program(a, in, de, src, p);

	diag_flush(de);
	if (diag_error_count(de))
		return diag_print_tally(de, stderr), 1;
	struct entry *e = ARENA_NEW_ARRAY(a, struct entry, scope_count(cr->scope) + 1);

	for (size_t i = 0; i < scope_count(cr->scope); i++) {
		e[i].d = scope_at(cr->scope, i);
		if (e[i].d->kind == DECL_MODEL)
			e[i].known = model_count(cr->ev, a, e[i].d, &e[i].n);
		else if (e[i].d->kind == DECL_GPU)
			e[i].known = build_gpu_u64(cr->ev, e[i].d, "memory", &e[i].n);
	}
	if (o->format == DRIVER_FORMAT_JSON)
		print_json(cr->scope, e);
	else
		print_text(cr->scope, e);
	return 0;
}

int driver_list(struct driver_opts *o)
{
	struct arena a = { 0 };
	const char *stdlib = driver_stdlib_dir(&a, o);
	const char **roots = (const char **)o->files;
	size_t n = o->nfiles, cap = 0;
	int rc;

	if (!n) {
		roots = NULL;
		collect(&a, stdlib, &roots, &n, &cap);
		qsort(roots, n, sizeof *roots, cmp_str);
	}
	rc = n ? list_program(o, &a, roots, n, stdlib) : 2;
	if (!n)
		fprintf(stderr, "memc: no stdlib found in '%s'\n", stdlib);
	arena_free(&a);
	return rc;
}
