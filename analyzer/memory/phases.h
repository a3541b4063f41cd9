/* SPDX-License-Identifier: MIT */
/*
 * phases.h - the run around the training step: loading (and quantising)
 * the model, prepare_model_for_kbit_training, evaluation with a KV cache
 * and saving a full state dict. Each phase's peak is formed from the
 * step's figures (struct mem_class) and what the builder measured of the
 * model (struct phase_input); docs/memory-model.md §"The run" gives every
 * formula with the library code it comes from. The first step's lazy
 * optimizer-state allocation is part of the step already (M14).
 *
 * The run peak is the largest of the step and these phases; -Wcapacity
 * uses it (fit.c) and the report prints it beside the step (report.c).
 */
#ifndef MEMC_ANALYZER_PHASES_H
#define MEMC_ANALYZER_PHASES_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/memory/memory.h"

struct arena;

/* How the model reaches the GPU. */
enum phase_load {
	PHASE_LOAD_META,		/* meta init, sharded load (torchtitan, torchtune) */
	PHASE_LOAD_FROM_PRETRAINED,	/* HF from_pretrained onto each rank's GPU */
	PHASE_LOAD_RANK0_CPU,		/* materialised on CPU, FSDP moves and shards units */
};

enum phase_save { PHASE_SAVE_NONE, PHASE_SAVE_FULL, PHASE_SAVE_FULL_CPU };

enum phase_id { PHASE_STEP, PHASE_LOADING, PHASE_PREPARE, PHASE_EVAL, PHASE_SAVE, PHASE_REF_FORWARD,
		PHASE_GENERATE, PHASE_UPDATE, PHASE__COUNT };

/* Facts of the job the builder gathers while it walks the model. */
struct phase_input {
	bool asked;			/* the job sets load, eval or save, or prepare_kbit */
	enum phase_load load;
	enum phase_save save;
	bool qlora, prepare_kbit, double_quant;
	bool quant_8bit;		/* qlora(quant = int8): LLM.int8 Int8Params */
	enum mem_quantizer quantizer;	/* qlora(quantizer): bitsandbytes or torchao's to_nf4 */
	uint64_t load_weights;		/* every base weight as loaded, whole model (one copy) */
	uint64_t largest_quantised;	/* numel of the largest 4-bit weight */
	uint32_t load_elem_size;	/* bytes per element of the weights as loaded */
	uint64_t largest_param;		/* bytes of the largest base weight as loaded */
	uint64_t kbit_extra;		/* prepare_kbit: fp32 minus 16-bit bytes, summed */
	uint64_t largest_cast;		/* prepare_kbit: the largest 16-bit source */
	bool eval;
	uint64_t eval_batch, eval_seq, eval_generate;
	uint64_t train_tokens;		/* micro_batch x seq_len / cp */
	uint64_t kv_per_token;		/* K and V elements per token, all layers */
	uint32_t act_size;		/* bytes per compute-dtype element */
	/* a preference / RL job (build_rl.c): the reference's no_grad forward,
	 * after the policy's forward of the same batch (DPO, KTO) or between
	 * steps (GRPO's scoring); GRPO's generation with the policy's KV cache */
	bool rl_ref_forward, rl_ref_after_policy;
	bool generate;
	uint64_t gen_batch, gen_prompt, gen_new;
	/* PPO (build_rl.c ppo_rollout): the rollout chunk's rows, the fp32
	 * scores batch_generation keeps, the reward model's largest layer at
	 * train_tokens, the policy's vocab / tp, the hidden states a forward
	 * of the policy, the value and the reward model returns (train_tokens) */
	bool ppo;
	uint64_t rl_chunk, gen_kept, rl_reward_act, rl_vocab;
	uint64_t gen_chunk_kept;	/* one rollout chunk's fp32 scores */
	uint64_t rl_hidden[3];
};

struct phase_class {
	uint64_t alloc[PHASE__COUNT];	/* 0: not modelled for this job */
	uint64_t device[PHASE__COUNT];
	enum phase_id run;		/* the phase with the largest device total */
	uint64_t run_alloc, run_device;
	bool run_fits;
};

struct phase_result {
	struct phase_class *classes;	/* one per mem_result class, in the arena */
	size_t nclasses;
	bool shown;			/* asked for, or a phase exceeds the step */
	bool overflow;
};

/* Form every phase of every class of @r; false on a byte count past 2^64. */
bool phases_analyze(struct arena *a, const struct mem_job *job, const struct mem_result *r,
		    const struct phase_input *in, struct phase_result *out);

const char *phase_name(enum phase_id p);	/* "the step", "loading", ... */

#endif
