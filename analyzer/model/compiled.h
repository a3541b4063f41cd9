/* SPDX-License-Identifier: MIT */
/*
 * compiled.h - a train block lowered once, evaluated for many variants.
 *
 * cm_compile() builds the job as written, once.  Each ZeRO stage and
 * checkpoint mode is lowered on the first variant that asks for it: the
 * model walked (build_job) at micro_batch 1 and 2 and kept as a flat list
 * of blocks of layer kinds with their repeat counts, parameter bytes as
 * built, activation bytes as c + micro_batch x d.  That the activations
 * are affine in micro_batch is checked at micro_batch 3, 16 and 1024 too;
 * where they are not (a model that rounds per sample), or where the walks
 * differ in anything else, that lowering is marked and cm_eval() rebuilds
 * it for each variant instead: slower, never different.  A micro_batch
 * above the largest checked one is rebuilt too.
 *
 * A lowering then gets a plan per grad_accum on first use (plan.h): each
 * pipeline stage's instants as lines in micro_batch (or along each residue
 * modulo a period, where 512-byte rounding or the interleaved schedule's
 * share of in-flight micro-batches steps), only those that can be the
 * peak somewhere in range, checked byte for byte against mem_analyze.
 * cm_eval() of a planned variant is a max over those lines and the last
 * figures of each class: no walk, no string formatting (explain strings
 * stay empty), no allocation once the scratch has grown.  Without a plan
 * it fills preallocated arrays and runs mem_analyze_ws().  Either way its
 * figures are those of build_job() + mem_analyze() with the same
 * overrides, byte for byte (tests/unit/test_compiled.c checks every
 * example over a grid).
 *
 * What a variant may change: micro_batch, grad_accum, the ZeRO stage and
 * the checkpoint mode.  What fixes a compiled model (its shape): the model
 * and every other binding of the train block (seq_len, tp/cp/ep,
 * precision, fine-tune mode, the cluster); compile once per shape, e.g.
 * per tp of a layout search.
 *
 * Use (memc search, the fit search):
 *
 *	struct cm_model *m = cm_compile(ev, arena, cj, 0);
 *	struct cm_scratch s = { 0 };
 *	for (each variant v) {
 *		const struct mem_result *r;
 *		if (cm_eval(m, &v, &s, &r) == MEM_OK)
 *			... cm_worst(r, &fits), or r->classes[i].device_total ...
 *	}
 *	cm_scratch_free(&s);
 *
 * The model lives in `arena` (with the evaluator it was compiled with),
 * and what cm_eval() lowers and plans is added to that arena: both must
 * outlive the model.  *r lives until the next cm_eval() with the same
 * scratch.  Not for several threads at once: a first use lowers or plans
 * into the model, and a rebuild uses the evaluator.
 */
#ifndef MEMC_ANALYZER_MODEL_COMPILED_H
#define MEMC_ANALYZER_MODEL_COMPILED_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/memory/memory.h"
#include "lang/arena.h"
#include "lang/check.h"

enum cm_checkpoint {
	CM_CKPT_WRITTEN,	/* the train block's checkpoint */
	CM_CKPT_NONE,
	CM_CKPT_SELECTIVE,
	CM_CKPT_FULL,
	CM_CKPT_SELECTIVE_OP,
	CM_CKPT__COUNT
};

/* One variant; 0 / -1 / CM_CKPT_WRITTEN: as the train block says. */
struct cm_variant {
	uint64_t micro_batch;
	uint64_t grad_accum;
	int zero;			/* -1, or a DeepSpeed stage 0..3 */
	enum cm_checkpoint checkpoint;
};

struct cm_model;

/* How cm_eval() got its last figures. */
enum cm_path {
	CM_PATH_PLAN,		/* evaluated the lowering's plan (analyzer/model/plan.h) */
	CM_PATH_FILLED,		/* filled the lowering at the micro_batch, then mem_analyze */
	CM_PATH_REBUILT,	/* build_job + mem_analyze (not affine, or past its range) */
};

/* Scratch of cm_eval(): zero-initialise, reuse, free with cm_scratch_free. */
struct cm_scratch {
	struct mem_job job;
	struct mem_block *blocks;
	struct mem_layer *layers;
	size_t capblocks, caplayers;
	struct mem_ws ws;
	struct mem_result res;
	struct arena rebuild;		/* the fallback's build (non-affine lowerings) */
	struct mem_class *classes;	/* a plan's result */
	size_t capclasses;
	enum cm_path path;		/* of the last cm_eval() */
};

/* Lower @cj (with tp = @tp, 0: as written).  NULL if the job as written
 * does not build; variants that do not build fail in cm_eval(). */
struct cm_model *cm_compile(struct eval *ev, struct arena *a, const struct check_job *cj, uint64_t tp);

/* Figures of variant @v: MEM_OK and *out, or the status mem_analyze gives
 * (MEM_E_INVALID also when the variant does not build). */
enum mem_status cm_eval(const struct cm_model *m, const struct cm_variant *v, struct cm_scratch *s,
			const struct mem_result **out);

/* The largest device total over @r's rank classes; *fits: every class
 * fits its GPU (what a search ranks and filters by). */
uint64_t cm_worst(const struct mem_result *r, bool *fits);

/* Whether variant @v's lowering is affine in micro_batch (the fast path). */
bool cm_is_affine(const struct cm_model *m, const struct cm_variant *v);

void cm_scratch_free(struct cm_scratch *s);

#endif
