/* SPDX-License-Identifier: MIT */
/*
 * build_fp8.c - the bytes FP8 training adds to each Linear weight and
 * the width of the Linear inputs it saves (the train block's fp8 { }).
 *
 * Transformer Engine quantises each weight before its GEMM into a tensor
 * with row-wise and column-wise data (the transpose on Hopper; MXFP8 keeps
 * both with an E8M0 scale per 32 elements) and saves it for backward, or
 * keeps it in the module's workspace across micro-batches; the Linear's
 * input is saved in FP8 (column-wise). torchao's Float8Linear saves the
 * high-precision input and weight and casts per GEMM. Sources and rules:
 * docs/memory-model.md "FP8 training".
 */
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/check.h"
#include "lang/dtypes.h"

/* DelayedScaling (quantization.py DelayedScalingRecipeState): an fp32
 * amax_history [len, n] and scale [n] per mode, n = 3 tensors a GEMM in
 * forward (input, weight, output) and 2 in backward. */
enum { FP8_TENSORS_PER_GEMM = 5 };

static bool key_true(const struct bld *b, const char *k)
{
	struct value v;

	return check_job_field(b->cj, k, &v) && v.kind == VAL_BOOL && v.b;
}

void bld_setup_fp8(struct bld *b, bool megatron)
{
	struct value v;

	if (!check_fp8_on(b->cj))
		return;
	b->fp8 = true;
	b->fp8_te = strcmp(check_fp8_library(b->cj), "torchao") != 0;
	b->fp8_mx = !strcmp(check_fp8_recipe(b->cj), "mxfp8");
	b->fp8_amax_len = 0;
	if (b->fp8_te && !strcmp(check_fp8_recipe(b->cj), "delayed")) {
		b->fp8_amax_len = 1024;
		if (check_job_field(b->cj, "fp8.amax_history_len", &v) && v.kind == VAL_NUM)
			num_to_u64(v.num, &b->fp8_amax_len);
	}
	b->fp8_model_init = key_true(b, "fp8.fp8_model_init") || key_true(b, "fp8.fp8_param_gather");
	/* Megatron's TELinear passes is_first_microbatch unless
	 * --disable-parameter-transpose-cache; plain TE callers pass None */
	b->fp8_cache = megatron;
	if (check_job_field(b->cj, "fp8.weight_cache", &v) && v.kind == VAL_BOOL)
		b->fp8_cache = v.b;
	b->fp8_fsdp_gather = key_true(b, "fp8.enable_fsdp_float8_all_gather");
	/* torchao before pytorch/ao#1480 (2025-01-13): tensorwise Float8Linear
	 * saved input_fp8 and weight_fp8_t (manual_float8_matmul_with_args_in_float8) */
	b->fp8_ao_saves = !b->fp8_te && key_true(b, "fp8.save_float8_casts");
	b->fp8_ao_recompute_w = key_true(b, "fp8.force_recompute_fp8_weight_in_bwd");
	/* the record decides: a precision's own FP8 fields are its stand-in */
	b->weight_copies = 0;
	b->linear_input = b->fp8_te || b->fp8_ao_saves ? dtype_find(b->fp8_mx ? "mxfp8" : "fp8_e4m3") : NULL;
}

/* Op-level SAC caches only the outputs of its save list's ops (torchtitan
 * 9dec370 parallelize_llama.py _save_list: mm, the SDPA kernels,
 * reduce_scatter, abs, max); the float8 casts are _to_copy outputs,
 * PREFER_RECOMPUTE, so the weight's cast is re-made in the layer's
 * backward like any other unsaved tensor of the block. */
static bool sac_op(struct bld *b)
{
	return !strcmp(bld_bound_sym(b, "checkpoint", "none"), "selective_op");
}

/* TE's quantised weight: row-wise and column-wise data (and scales). */
static uint64_t te_copies(struct bld *b, uint64_t one)
{
	uint64_t two = 0;

	bld_mul(b, one, 2, &two, "the FP8 copies of this weight");
	return two;
}

void bld_fp8_param(struct bld *b, struct mem_param *p, bool linear, bool quantised, uint64_t base,
		   uint64_t mult)
{
	if (!b->fp8 || !linear || quantised)
		return;
	uint64_t one = bld_bytes_x(b, dtype_find(b->fp8_mx ? "mxfp8" : "fp8_e4m3"), base, mult);

	p->cast_bytes = 0;
	p->cast_saved = false;
	if (!b->fp8_te) {
		/* Float8Linear: the sharded param stays high precision; with the
		 * float8 all-gather the gathered weight is the FP8 operand, cast
		 * already, its transpose a view (cast_weight_to_float8_t) */
		if (b->fp8_fsdp_gather) {
			p->gather_bytes = one;
		} else if (b->fp8_ao_saves) {
			p->cast_bytes = one;	/* weight_fp8_t, saved unless recomputed */
			p->cast_saved = !b->recompute_full && !b->fp8_ao_recompute_w && !sac_op(b);
		} else {
			p->cast_bytes = one;
		}
		return;
	}
	if (b->fp8_model_init) {
		p->weight_bytes = one;		/* the primary weight is FP8: no bf16 copy */
		bld_add(b, &p->resident_bytes, one, "the FP8 copies of this weight");
	} else if (b->fp8_cache) {
		bld_add(b, &p->resident_bytes, te_copies(b, one), "the FP8 copies of this weight");
	} else {
		/* saved for backward (linear.py wt_save = weightmat), except in a
		 * checkpointed forward, which runs without grad */
		p->cast_bytes = te_copies(b, one);
		p->cast_saved = !b->recompute_full;
	}
	if (b->fp8_amax_len) {
		uint64_t meta = 0;

		bld_mul(b, b->fp8_amax_len + 1, FP8_TENSORS_PER_GEMM * 4, &meta, "the FP8 scaling state");
		bld_add(b, &p->resident_bytes, meta, "the FP8 scaling state");
	}
}
