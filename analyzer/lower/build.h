/* SPDX-License-Identifier: MIT */
/*
 * build.h - turn one checked train block into the numeric memory model's
 * input (struct mem_job) and the facts its report prints.
 *
 * The model is walked under the job's bindings. Each layer instance used
 * directly in the model body (or in its repeats) becomes one mem_layer;
 * tensors of layers nested inside it are added to it. The model's first
 * repeat is the body block. Per parameter tensor the precision policy,
 * the fine-tuning mode (LoRA adapters, QLoRA quantisation, frozen bases)
 * and the optimizer body (evaluated once per distinct tensor shape) give
 * weight, gradient, master and state bytes. Overrides (a different
 * micro_batch, checkpointing, ZeRO stage or tp) let the fit search ask
 * "what if" without touching the source.
 */
#ifndef MEMC_ANALYZER_BUILD_H
#define MEMC_ANALYZER_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/memory/memory.h"
#include "analyzer/memory/phases.h"
#include "analyzer/out/report.h"
#include "lang/check.h"

/* docs/limits.md: the largest cluster, and so the largest parallel degree,
 * memc models (the degrees of struct mem_job are 32-bit). */
enum { BUILD_MAX_GPUS = 1 << 20 };

/* "What if" changes to a job, for the fit search. 0 / NULL: as written. */
struct build_override {
	uint64_t micro_batch;
	const char *checkpoint;		/* "full" */
	int zero;			/* -1: as written; else 0..3 */
	uint64_t tp;
	/* memc search: the other degrees that size tensors. With @layout_free
	 * the caller lays dp and pp out on the built job itself, so the
	 * cluster is not divided here (dp is bound to 1) */
	uint64_t cp, ep;
	int sp;				/* 0: as written; 1: off; 2: on (tp > 1) */
	bool layout_free;
	uint64_t seq;			/* 0: as written; else seq_len (the builder's own
					   half-length build, §5.4 "Batch shapes") */
};

struct build {
	struct mem_job job;
	struct report_job rep;
	/* where each knob was set, for warnings and notes (NO_LOC: default) */
	struct loc loc_model, loc_micro_batch, loc_seq_len, loc_checkpoint, loc_zero, loc_tp,
		   loc_optimizer, loc_precision, loc_cluster, loc_train;
	struct loc loc_pp, loc_vp, loc_grad_accum;	/* a pipeline split's blame */
	struct loc loc_pp_group;	/* parallel.microbatch_group_size_per_vp_stage */
	struct loc loc_stage_layers;
	struct loc loc_first_last, loc_account;	/* first_stage_layers (else last_), account_for_* */
	uint64_t micro_batch, gpus;
	int zero;			/* DeepSpeed stage, -1 if FSDP or none */
	bool full_recompute;
	uint32_t tp;
	struct phase_input run_in;	/* the phases around the step (phases.h) */
	struct phase_result run;	/* filled after mem_analyze */
	struct loc loc_load, loc_eval, loc_save;
	struct loc loc_rl;		/* the rl { } record */
	struct loc loc_offload;		/* offload.optimizer, else offload.params */
};

/* Build @out for @cj. With @quiet, evaluation errors are not reported (the
 * fit search); returns false if the job could not be built. */
bool build_job(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build_override *ov,
	       bool quiet, struct build *out);

/* The builder's walks kept per compilation (analyzer/model/build_cache.c):
 * hits and misses so far; off, every walk is made (the tests compare). */
void build_cache_stats(struct eval *ev, unsigned long *hits, unsigned long *misses);
/* The same for the walks kept across the compilations that share the
 * program's import cache (analyzer/model/build_cache.c; 0 and 0 without). */
void build_store_stats(struct eval *ev, unsigned long *hits, unsigned long *misses);
/* Walks taken from the cache (@local) or the store (@store) with another
 * optimizer's states put in, not counted in the hits above. */
void build_cache_rederived(struct eval *ev, unsigned long *local, unsigned long *store);
void build_cache_enable(struct eval *ev, bool on);

/* Exact parameter count of a model instance with tp = ep = 1, tied
 * weights once (memc list). */
bool build_count_params(struct eval *ev, struct arena *a, struct value model, uint64_t *total);

/* A whole-unit field of a gpu declaration (memory, context, ...). */
bool build_gpu_u64(struct eval *ev, const struct decl *gpu, const char *field, uint64_t *out);

/* What job @cj takes from @gpu, its overhead keys over the GPU's figures:
 * the CUDA context, the cuBLAS workspace, NCCL's flat figure, memory and
 * host memory.  The builder's, and the fit search's for a variant that
 * only changes the GPU of a kept build (fit_variant.c). */
struct check_job;
struct mem_job;
void build_gpu_figures(struct eval *ev, const struct decl *gpu, const struct check_job *cj, struct mem_job *j);

#endif
