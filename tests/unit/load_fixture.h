/* SPDX-License-Identifier: MIT */
/*
 * load_fixture.h - a .mem file loaded and checked as memc check does (the
 * source stdlib, diagnostics to /dev/null), for the unit tests that build
 * and analyse its jobs. Everything is static inline: each test binary is
 * built from its own .c file.
 */
#ifndef MEMC_TESTS_UNIT_LOAD_FIXTURE_H
#define MEMC_TESTS_UNIT_LOAD_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

struct loaded {
	struct arena a;
	struct check_result *cr;
	FILE *devnull;
};

static inline bool load(struct loaded *l, const char *path)
{
	memset(l, 0, sizeof *l);
	l->devnull = fopen("/dev/null", "w");
	struct interner *in = interner_new(&l->a);
	struct src_table *src = src_table_new(&l->a);
	struct diag_engine *de = diag_new(&l->a, src, l->devnull);
	struct import_opts io = { .stdlib_dir = "stdlib" };
	struct program *p = import_load(&l->a, in, src, de, path, &io);

	l->cr = p && p->root ? check_program(&l->a, in, de, src, p) : NULL;
	return l->cr && l->cr->jobs && !diag_error_count(de);
}

static inline void unload(struct loaded *l)
{
	arena_free(&l->a);
	if (l->devnull)
		fclose(l->devnull);
}

#endif
