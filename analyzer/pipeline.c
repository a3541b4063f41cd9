/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - phase order after import, with gates: nothing runs after
 * a phase that reported an error.
 */
#include <stdio.h>

#include "analyzer/pipeline.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"

void pipeline_begin(const struct driver_opts *o)
{
	(void)o;
}

void pipeline_end(const struct driver_opts *o)
{
	(void)o;
}

int pipeline_run(struct pipeline *p)
{
	if (p->opts->dump_ast) {
		ast_dump(stdout, p->program->root);
		return diag_error_count(p->diag) ? 1 : 0;
	}
	if (diag_error_count(p->diag))
		return 1;
	check_program(p->arena, p->interner, p->diag, p->src, p->program);
	diag_flush(p->diag);
	if (diag_error_count(p->diag))
		return 1;
	return 0;
}
