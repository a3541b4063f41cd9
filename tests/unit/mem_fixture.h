/* SPDX-License-Identifier: MIT */
/*
 * mem_fixture.h - the hand-built struct mem_job the memory model's unit
 * tests start from. Static inline: each test binary is built from its own
 * .c file.
 */
#ifndef MEMC_TESTS_UNIT_MEM_FIXTURE_H
#define MEMC_TESTS_UNIT_MEM_FIXTURE_H

/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "analyzer/memory/memory.h"

/* One GPU, every degree 1, one micro-batch, no fragmentation factor, the
 * rest zero; @exact: no 512-byte rounding, so sums are the hand figures. */
static inline void mem_fx_job(struct mem_job *j, bool exact)
{
	memset(j, 0, sizeof(*j));
	j->dp = j->tp = j->pp = j->cp = j->ep = j->vp = 1;
	j->micro_batches = 1;
	j->frag_factor = 1.0;
	j->no_rounding = exact;
}

/* The one rank class of @j, which must analyse (its arrays are freed: the
 * totals and per-class figures only). */
static inline struct mem_class mem_fx_analyze(const struct mem_job *j)
{
	struct mem_result r;
	struct mem_class k;

	assert_int_equal(mem_analyze(j, &r), MEM_OK);
	assert_int_equal(r.nclasses, 1);
	k = r.classes[0];
	mem_result_free(&r);
	return k;
}

#endif
