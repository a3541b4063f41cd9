/* SPDX-License-Identifier: MIT */
/*
 * search_impl.h - memc search (docs/search.md): the layouts of one train
 * block (search.c), the memory of one layout (search_eval.c), its step
 * time (search_time.c), and the command and its output (search_cmd.c).
 *
 * A shape is one what-if build of the job (struct build): the bindings
 * that size tensors (tp with sequence parallelism, cp, ep, micro_batch,
 * the checkpoint mode) and the ZeRO stage, whose buckets the builder
 * sets. Everything else of a layout (dp, pp, vp, grad_accum, offload, the
 * cluster) is written on a copy of the shape's struct mem_job.
 */
#ifndef MEMC_ANALYZER_CMD_SEARCH_IMPL_H
#define MEMC_ANALYZER_CMD_SEARCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/lower/build.h"
#include "lang/arena.h"

enum search_ckpt { SEARCH_CKPT_NONE, SEARCH_CKPT_SELECTIVE, SEARCH_CKPT_FULL, SEARCH_CKPT__COUNT };

/* One layout: what the pasted train block says. */
struct search_layout {
	uint32_t gpus, per_node;	/* the cluster: gpus / per_node nodes of per_node */
	uint32_t dp, tp, pp, vp, cp, ep;
	uint64_t micro_batch, grad_accum;
	int zero;			/* 0..3; -1: the job's FSDP as written */
	enum search_ckpt ckpt;
	bool offload;			/* offload { optimizer = cpu } */
	double tokens_per_s;		/* per GPU, the step-time model */
	double step_s, mfu;
};

/* One built shape; @ok false: the model does not build under it. */
struct search_shape {
	uint32_t tp, cp, ep;
	uint64_t micro_batch;
	int zero;
	enum search_ckpt ckpt;
	bool built, ok;
	struct build bd;
};

/* What one layout holds on its worst rank class. */
struct search_mem {
	bool ok;			/* analysed (the split and the groups divide) */
	bool fits;			/* every class within the job's headroom */
	uint64_t device_total;		/* the largest class's nvidia-smi total */
	bool pruned;			/* replayed job: its bound fails, not replayed (then
					   device_total is the bound) */
};

/* The memory of @l on the job built as @s: the one entry point of the
 * search into the memory model (a compiled model can replace it).  @ws
 * is the search's scratch, reused from layout to layout. */
void search_eval(const struct search_shape *s, const struct search_layout *l, struct mem_ws *ws,
		 struct search_mem *out);

/* The bound's check (tests/unit/test_search_bound.c), NULL otherwise:
 * where set, every layout of a replayed job is also replayed, pruned or
 * not, and told to @seen with its bound (0: none) and the replay's
 * figures; @no_prune: the search uses the replay of every layout. */
struct search_eval_hook {
	bool no_prune;
	void (*seen)(struct search_eval_hook *h, const struct search_layout *l, uint64_t bound, bool pruned,
		     const struct search_mem *replayed);
};
extern struct search_eval_hook *search_eval_hook;

/* What the step-time model reads of the model and the GPU (docs/search.md). */
struct search_facts {
	double params;			/* all parameters, tp = ep = 1 */
	double active;			/* those one token runs through (MoE: top_k of experts) */
	double expert_params;		/* expert weights, all experts */
	double lookup_params;		/* embeddings looked up, not multiplied */
	double layers, hidden, kv_dim;	/* body repeats; hidden width; K (or V) width */
	double top_k;			/* experts per token; 0: dense */
	uint64_t seq_len, global_batch;	/* sequences per optimizer step */
	double act_bytes, grad_bytes, weight_bytes;
	double peak_flops;		/* the compute dtype's dense figure */
	double node_bw, network_bw, host_bw;	/* bytes/s each way */
	bool assumed_links;		/* a link figure is memc's default, not the GPU's */
	double mfu;			/* the fraction of peak the math runs at */
};

/* Fill @l's step_s, tokens_per_s and mfu. */
void search_time(const struct search_facts *f, struct search_layout *l);

/* Recompute FLOPs per token relative to none (docs/search.md). */
double search_flops_per_token(const struct search_facts *f, enum search_ckpt c);

const char *search_ckpt_name(enum search_ckpt c);


/* ---- the search of one job (search.c) ---- */

struct check_job;
struct check_result;
struct program;
struct src_table;
struct driver_opts;

struct search_opts {
	const uint32_t *gpus;		/* cluster sizes; none: the job's */
	size_t ngpus;
	size_t top;
	double mfu;
	bool progress;			/* stderr is a terminal */
};

struct search_pick {
	struct search_layout l;
	uint64_t device_total, capacity;
	char *block;			/* the train block, named as the job */
};

struct import_cache;

struct search_ctx {
	struct arena *arena;
	const struct driver_opts *dopts;
	const char *path, *stdlib;
	const char *text;		/* the root file */
	size_t len;
	struct src_table *src;
	struct check_result *cr;
	/* the parsed stdlib declarations the verifications take instead of
	 * parsing them again, with the interner they need (lang/import.h) */
	struct import_cache *cache;
	unsigned base_warnings;
	/* per job */
	const struct check_job *job;
	struct search_facts facts;
	uint32_t per_node;
	double headroom;
	struct search_shape **shapes;
	size_t nshapes, capshapes;
	struct search_layout written;	/* the job's own layout, timed alike */
	struct search_pick *picks;
	size_t npicks;
	uint64_t layouts, analysed, verified;
	uint64_t pruned;		/* analysed, not replayed: the bound fails (search_eval.c) */
	double seconds, eval_seconds;	/* the whole search; search_eval() alone */
	struct mem_ws ws;		/* search_eval()'s scratch, freed by search_job */
	bool no_facts;			/* the model or GPU lacks what the time model reads */
	const char *why;
};

/* Whether @l drops the job's stated pipeline split (search_split.h). */
bool search_drops_split(const struct search_ctx *c, const struct search_layout *l);

/* Search @c->job; false (with c->why) when it cannot be searched. */
bool search_job(struct search_ctx *c, const struct search_opts *o);

#endif
