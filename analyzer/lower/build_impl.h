/* SPDX-License-Identifier: MIT */
/*
 * build_impl.h - state of one job build, shared by build.c (the walk),
 * build_param.c (parameter bytes, adapters, optimizer states) and
 * build_job*.c (the train block: layout, buffers and overheads).
 */
#ifndef MEMC_ANALYZER_BUILD_IMPL_H
#define MEMC_ANALYZER_BUILD_IMPL_H

#include "analyzer/lower/build.h"
#include "lang/diag.h"

struct dtype;

struct pending {
	const struct arg *names;	/* for_grad(...), or input_of(...) */
	uint64_t bytes;
	bool loss;
	bool kept;			/* input_of: saved anyway; only the graph's share waits */
	bool wgrad_only;		/* only a deferred weight gradient's hold of the save
					   counts (a recomputed save; input_of, fp8_copy) */
	bool weak;			/* input_of, fp8_copy: the Linear's input unless a
					   for_grad save of it is declared */
	uint64_t numel;			/* the save's elements: the rows its Linears multiply */
};

/* Byte sizes of single tensors, in walk order (heap). */
struct bld_parts {
	uint64_t *v;
	size_t n, cap;
};

/* One layer instance on the walk's stack. */
struct frame {
	const struct decl *decl;
	struct loc call;
	struct frame *parent;
	unsigned depth;			/* 0: used directly by the model */
	bool implicit;			/* tensors written in the model body itself */
	uint64_t mult;			/* product of the repeats around this point */
	const char **names;		/* params declared in this instance */
	bool *trains;			/* ... and whether each trains or carries an adapter */
	bool *learns;			/* ... the same, without a 4-bit matmul's kept input (trains(p)) */
	bool *linear;			/* ... and is a `linear` weight (FP8 GEMMs quantise its input) */
	bool *retains;			/* ... and is a 4-bit weight whose matmul keeps its input in
					   ctx.tensors (qlora save_input), which outlives backward */
	uint64_t *d_in, *d_out;		/* ... a trained `linear` weight's [d_in, d_out] (else 0) */
	size_t nnames, capnames;
	struct pending *pending;
	size_t npending, cappending;
	uint64_t temp_fwd, temp_bwd;	/* this instance's own transients */
	uint64_t loss_tf, loss_tb;	/* ... of them, those of the loss region (`loss`) */
	uint64_t mm_fwd, mm_bwd;	/* `matmul` temps: beside a per-call weight copy, in
					   place of the loss region (mem_layer mm_split) */
	bool mm;			/* a `matmul` temp is declared (here or nested) */
	uint64_t dora_temp;		/* the largest DoRA weight-norm transient in temp_fwd */
	bool shared_dropout;		/* a `shared_dropout` adapter's dropped input is counted */
	uint64_t child_fwd, child_bwd;	/* the largest nested instance's */
	/* the same as single tensors, for the allocator replay's trace */
	struct bld_parts tf, tb, ctf, ctb;
	uint64_t input;
	uint64_t input_numel;		/* the declared input, to recognise it among the saves */
	const struct dtype *input_dtype;
	uint64_t input_saved;		/* bytes of saves that are the input tensor itself */
	uint64_t input_width;		/* the declared input's last axis (a token's hidden) */
	bool loss;
	uint64_t grad_made;		/* top level: the gradients autograd makes of its trained
					   params (their dtype in the forward), for a tied use */
	const char *tied_to;		/* a save's tied(layer): the layer whose weight it reads */
	uint64_t output, output_saved;	/* bytes of its temps / saves marked `output` (mem_layer) */
	uint64_t wgrad;			/* top level: what a deferred W pass holds (mem_layer) */
	uint64_t wgrad_out;		/* ... of it, the Linears' output gradients */
};

/* A closed top-level layer instance, for a later tied(layer) to find:
 * where its mem_layer is and the gradient bytes of its trained params. */
struct bld_tie_src {
	const char *name;
	size_t block, layer;
	uint64_t grad_made;
};

/* One open repeat, model- or layer-level: the multiplier to restore when
 * it closes, and its count (with where it was written) to blame. */
struct bld_rep {
	uint64_t saved;
	struct value count;
};

/* Optimizer results per distinct tensor shape and dtype (memoised). */
struct opt_memo {
	uint64_t numel, rows, cols, rank;
	const struct dtype *dtype;
	uint64_t state, paged, temp;	/* paged: in unified memory */
	bool grouped;
};

/* A trainable tensor as the optimizer's body sees it (build_param.c
 * train_bytes records one per call, in walk order), and the states it
 * gave: a kept walk takes another optimizer by evaluating that body
 * again per tensor after it (build_cache.c, bld_opt_states). */
struct bld_opt_use {
	uint64_t base, mult, rows, cols, rank;
	const struct dtype *dtype;
	uint64_t state, paged, temp;	/* the tensor's fields, as the walk set them */
	bool grouped;
};

/* train.rl's algorithm (build_rl.c); NONE: an ordinary job */
enum bld_rl_algo { BLD_RL_NONE, BLD_RL_DPO, BLD_RL_ORPO, BLD_RL_CPO, BLD_RL_SIMPO, BLD_RL_KTO, BLD_RL_GRPO,
		   BLD_RL_PPO };
/* which of a PPO job's models the walk is in (build_rl.c) */
enum bld_rl_part { BLD_RL_POLICY, BLD_RL_VALUE, BLD_RL_REWARD };

struct bld {
	struct eval *ev;
	struct arena *arena;
	const struct check_job *cj;
	struct env *bindings;
	struct build *out;
	bool failed;
	bool quiet;			/* a what-if build: count failures, print none */
	bool reported;			/* this build printed its own error */
	const struct walk_tensor *tensor;	/* being added, for blame */
	bool tokens_in_play;		/* batch x seq is a factor of what is computed */
	/* precision */
	const struct dtype *weights, *grads, *master, *act, *cast_cache, *linear_input, *copy_dtype;
	uint64_t weight_copies;
	/* Megatron selective recomputation: the modules whose saves become
	 * backward transients (recompute(...) tags), a list of words */
	bool recompute_selective;
	struct value recompute_modules;
	bool recompute_full;		/* checkpoint = full: a re-run forward runs without grad */
	/* fp8 { } (build_fp8.c) */
	bool fp8, fp8_te, fp8_mx, fp8_model_init, fp8_cache, fp8_fsdp_gather;
	bool fp8_ao_saves, fp8_ao_recompute_w;	/* torchao < 2025-01: float8 casts saved */
	uint64_t fp8_amax_len;		/* DelayedScaling amax history, 0 without one */
	/* fine-tuning */
	bool lora, qlora;
	/* LitGPT's LLaMA-Adapter (finetune = adapter | adapter_v2): only the
	 * `adapter` params train, and under v2 the norms' too */
	bool adapter, adapter_v2;
	bool quant_saves_input;		/* bitsandbytes < 0.43.2 MatMul4Bit keeps its input */
	bool keeps_graph;		/* the loop holds the previous micro-batch's output, and so
					   its graph, until the next forward returns (LitGPT) */
	uint64_t graph_kept;		/* the inputs MatMul4Bit keeps in ctx.tensors, every layer */
	bool graph_kept_placed;		/* added to the first loss-region layer's forward */
	uint64_t graph_num, graph_den;	/* the previous batch's length over seq_len (data { }) */
	uint64_t lora_r;
	double lora_dropout;
	const struct dtype *lora_dtype, *quant;
	struct value targets, freeze;
	/* train_layers: the body layers (by index) that train whole, in 16 bit,
	 * with no adapter; every other parameter is frozen (Llama-Pro) */
	struct value train_layers;
	uint64_t body_pass;		/* the body layer being walked, from 0 */
	bool in_body;			/* the walk is inside the model's body repeat */
	bool grad_seen;			/* under train_layers: a parameter so far trains or
					   carries an adapter; before it no graph is built */
	struct value modules_to_save;	/* PEFT: trainable copies beside the frozen originals */
	bool all_linear;		/* targets = all_linear */
	bool dora;			/* use_dora: magnitude vector, two more saved outputs */
	bool dora_fq;			/* use_dora = "fsdp_qlora": its scripts/dora.py layers */
	bool prepare_kbit;		/* prepare_model_for_kbit_training: 16-bit params to fp32 */
	uint64_t adapters;		/* loaded adapters; one trains */
	enum mem_quantizer quantizer;	/* qlora(quantizer): who packs the 4-bit weights */
	const struct dtype *quant_compute;	/* bnb_4bit_compute_dtype; NULL: the compute dtype */
	const struct dtype *dequant;	/* QuantState.dtype, what dequantize_4bit returns; NULL:
					   the compute dtype (no second copy) */
	bool skip_given;		/* qlora(skip_modules = ...): else the head stays 16-bit */
	struct value skip_modules;	/* llm_int8_skip_modules / Lightning ignore_modules */
	/* fsdp2 { }: MixedPrecisionPolicy(param_dtype, reduce_dtype); NULL: None */
	bool fsdp2;
	const struct dtype *fsdp_param, *fsdp_reduce;
	/* the run's phases (phases.h): this walk's facts of the model */
	uint64_t largest_quantised;	/* numel of the largest quantised weight */
	uint64_t largest_cast;		/* bytes of the largest prepare_kbit fp32 cast source */
	uint64_t largest_param;		/* bytes of the largest base weight as loaded */
	uint64_t load_weights;		/* every base weight as loaded */
	uint64_t kbit_extra;		/* fp32 minus 16-bit bytes of the prepare_kbit casts */
	uint64_t kv_per_token;		/* k_proj + v_proj outputs per token, all layers */
	/* optimizer */
	struct value optimizer;
	struct opt_memo *memo;
	size_t nmemo, capmemo;
	struct bld_opt_use *opt_uses;	/* every trainable tensor of the walk (arena) */
	size_t nopt_uses, capopt_uses;
	/* walk state */
	struct frame *frame;
	uint64_t model_mult;
	unsigned model_repeats;		/* open repeats at model level */
	struct bld_rep *reps;		/* every open repeat, outermost first (grows) */
	size_t nreps, capreps;
	uint64_t block_repeat;		/* repeat of the block being walked (totals) */
	bool have_body;
	uint64_t tokens;		/* batch x seq / cp, for adapter activations */
	/* being assembled */
	struct mem_param *params;	/* of the open top-level layer */
	size_t nparams, capparams;
	uint64_t saves, loss_saves;
	uint64_t *save_parts;		/* each save of the open layer, for the replay's trace */
	size_t nsave_parts, capsave_parts;
	uint64_t op_mm[2], op_sdpa, op_mm_count;	/* op(...)-tagged saves of the open layer */
	struct mem_layer *layers;	/* of the open block */
	size_t nlayers, caplayers;
	struct bld_tie_src *tie_srcs;	/* every closed top-level layer instance (arena) */
	size_t ntie_srcs, captie_srcs;
	struct mem_block *blocks;
	size_t nblocks, capblocks;
	uint64_t params_total, params_trainable;	/* this walk's (tp-sharded) counts */
	bool experts;			/* a param has the `expert` attribute */
	uint64_t expert_width;		/* the widest input of a layer with expert params: what
					   DeepEP dispatches per token (mem_comm_deepep_bytes) */
	/* a preference / RL job (build_rl.c) */
	enum bld_rl_algo rl;
	uint64_t rl_factor;		/* sequences per pair in the policy's batch (chosen, rejected) */
	bool rl_ref_copy;		/* the reference is a frozen copy of the base weights */
	bool rl_ref_forward;		/* a reference forward runs (copy or adapters disabled) */
	uint64_t rl_prompt;		/* GRPO's prompt tokens of seq_len */
	enum bld_rl_part rl_part;	/* PPO: the model being walked */
	struct frame *rl_head;		/* the value/reward model's lm_head frame, replaced */
	unsigned rl_heads;		/* lm_head layers replaced so far */
	bool rl_head_seen;		/* the head's input is counted */
	uint64_t rl_layers;		/* the walked model's first repeat count */
	uint64_t rl_hidden[3];		/* per bld_rl_part: its forward's hidden states */
	const struct walk_ops *rl_ops;	/* bld_ops with PPO's head rule (build_rl.c) */
	uint64_t rl_vocab;		/* the policy's lm_head vocab / tp */
	uint64_t rl_reward_act;		/* the reward model's largest layer, saves + temp_fwd */
};

extern const struct walk_ops bld_ops;

/* analyzer/model/build_cache.c: the walk of an earlier job that read the
 * same values, restored into @b (true); else false, and bld_cache_put()
 * after the walk keeps it if the walk failed nothing and reported nothing. */
bool bld_cache_find(struct bld *b);
/* The optimizer states of @p, a tensor of @u, under b->optimizer; false
 * if the evaluation failed (b->failed). */
bool bld_opt_states(struct bld *b, const struct bld_opt_use *u, struct mem_param *p);
void bld_cache_put(const struct bld *b);

/* The interned @s, a string literal (lang/intern.h intern_static). */
const char *bld_intern(struct bld *b, const char *s);
bool bld_is_tensor_word(const char *name);
void bld_overflow(struct bld *b, const char *what, const struct value *extra);
bool bld_mul(struct bld *b, uint64_t x, uint64_t y, uint64_t *out, const char *what);
bool bld_add(struct bld *b, uint64_t *acc, uint64_t x, const char *what);
bool bld_add_act(struct bld *b, uint64_t *acc, uint64_t x, const char *what);
uint64_t bld_bytes(struct bld *b, const struct dtype *dt, uint64_t numel);
void bld_setup_fp8(struct bld *b, bool megatron);
void bld_fp8_param(struct bld *b, struct mem_param *p, bool linear, bool quantised, uint64_t base,
		   uint64_t mult);
uint64_t bld_bytes_x(struct bld *b, const struct dtype *dt, uint64_t numel, uint64_t mult);
void bld_rep_push(struct bld *b, uint64_t saved, struct value count);
uint64_t bld_rep_pop(struct bld *b);
struct frame *bld_frame_push(struct bld *b, const struct decl *layer);
void bld_frame_pop(struct bld *b);
struct frame *bld_frame(struct bld *b);
struct frame *bld_frame_top(struct bld *b);
void bld_close_implicit(struct bld *b);
void bld_frame_param(struct frame *f, const char *name, bool trains, bool learns, bool linear,
		     bool retains);
void bld_frame_linear(struct frame *f, uint64_t d_in, uint64_t d_out);
void bld_add_saves(struct bld *b, uint64_t bytes, bool loss);
void bld_parts_push(struct bld_parts *p, uint64_t bytes);
void bld_layer_close(struct bld *b, struct frame *f);
void bld_repeat_enter(struct bld *b, struct value count, uint64_t n);
void bld_repeat_leave(struct bld *b, const struct stmt *s);
void bld_repeat_next(struct bld *b);
bool bld_picks_layers(const struct bld *b, const struct stmt *s);
bool bld_layer_picked(const struct bld *b);
/* The latest closed top-level instance of layer @name (a tied(layer)'s
 * weight); NULL if none. */
const struct bld_tie_src *bld_tie_source(const struct bld *b, const char *name);
/* Equal neighbouring blocks (the walk's passes) joined again, into @j. */
void bld_merge_blocks(struct bld *b, struct mem_job *j);
void bld_megatron_tied_copy(struct bld *b, struct mem_job *j);
void bld_param(struct bld *b, const struct walk_tensor *t, uint64_t base, uint64_t mult, bool linear,
	       const struct dtype *dt, uint64_t d_in, uint64_t d_out);
bool bld_setup_precision(struct bld *b, struct value precision);
bool bld_setup_finetune(struct bld *b, struct value ft);
void bld_fill_phases(struct bld *b, struct build *out);
void bld_setup_rl(struct bld *b);
bool bld_finish_rl(struct bld *b, struct build *out);
void bld_walk_rl_models(struct bld *b, struct env *env);
void bld_rl_apart(struct bld *b, struct mem_param *p, bool ref);

/* build_job.c: the train block's keys (check_job_field) and the walk's
 * bindings, each with the default the key has when it is not written. */
bool bld_key(const struct bld *b, const char *k, struct value *v);
uint64_t bld_key_u64(struct bld *b, const char *k, uint64_t dflt);
bool bld_key_bool(struct bld *b, const char *k, bool dflt);
const char *bld_key_sym(struct bld *b, const char *k, const char *dflt);
uint64_t bld_bound_u64(struct bld *b, const char *name, uint64_t dflt);
const char *bld_bound_sym(struct bld *b, const char *name, const char *dflt);
/* Fails the build; prints (once, and not when quiet) at @at or the train block. */
__attribute__((format(printf, 4, 5)))
bool bld_error(struct bld *b, enum diag_id id, struct loc at, const char *fmt, ...);
/* build_job_layout.c */
bool bld_layout(struct bld *b, struct mem_job *j, int zero);
bool bld_megatron_job(struct bld *b, int zero);
int bld_megatron_setup(struct bld *b, int zero);
void bld_fsdp2_setup(struct bld *b);
/* build_job_buffers.c */
void bld_buffers(struct bld *b, struct mem_job *j, int zero);
void bld_overheads(struct bld *b, struct mem_job *j);
void bld_shapes_split(struct eval *ev, struct arena *a, const struct check_job *cj,
		      const struct build_override *ov, struct mem_job *j);

#endif
