/* SPDX-License-Identifier: MIT */
/*
 * plan.h - one lowering of a compiled model (compiled.c) at one grad_accum,
 * reduced to what its figures are made of: for each pipeline stage, the
 * instants of the step as affine functions of micro_batch (a + d x mb, or
 * along each residue of a period: cm_plan_src), only those that can be the
 * peak of some micro_batch in range, and the stage's class with its
 * per-micro-batch fields affine too.  Evaluating a variant is then a max
 * over a few lines per stage and the class's last figures
 * (mem_class_totals): no walk, no sums, no costs.
 *
 * The plan is made from two analyses (micro_batch r and r + period) that
 * report every instant and stage through a mem_rec, and is kept only if
 * its result equals mem_analyze's, byte for byte, at five micro-batches of
 * its range, its ends included; otherwise cm_plan_build() gives NULL and
 * the caller analyses each variant instead.
 */
#ifndef MEMC_ANALYZER_MODEL_PLAN_H
#define MEMC_ANALYZER_MODEL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/memory/memory.h"
#include "lang/arena.h"

struct cm_plan;

/* The lowering's analysis at micro_batch @mb, told to @rec (NULL: none);
 * *out lives until the next call.  The plan covers the micro-batches
 * r, r + period, r + 2 period, ... up to mb_max: a period above 1 where a
 * figure steps with the micro_batch modulo it (the interleaved schedule's
 * other micro-batches in flight hold stored x (chunks - vp) / vp, rounded:
 * memory.c mem_extra_in_flight), affine again along each residue. */
struct cm_plan_src {
	enum mem_status (*analyze)(struct cm_plan_src *src, uint64_t mb, struct mem_rec *rec,
				   const struct mem_result **out);
	const struct mem_job *job;	/* the lowering's scalars (mem_class_totals reads them) */
	uint64_t r, period, mb_max;	/* r >= 1, r + period <= mb_max */
};

/* The plan in @a, or NULL where the lowering's figures are not a max of
 * affine instants over the range (or an analysis fails). */
struct cm_plan *cm_plan_build(struct arena *a, struct cm_plan_src *src);

/* Classes a result of @p needs room for (its pipeline stages). */
size_t cm_plan_stages(const struct cm_plan *p);

/* The figures at micro_batch @mb (one of the plan's) into @res, its
 * classes in @classes (cm_plan_stages() of them, explain strings zero);
 * false where a figure overflows or @mb is not the plan's (the caller
 * analyses that variant). */
bool cm_plan_eval(const struct cm_plan *p, uint64_t mb, struct mem_result *res,
		  struct mem_class *classes);

#endif
