/* SPDX-License-Identifier: MIT */
/*
 * check_train_keys.c - the keys a train block and its records take, with
 * their types and ranges (check_train.c applies them).
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/strbuf.h"

const struct field_spec check_train_fields[] = {
	{ "model", "model", true }, { "cluster", "cluster", true }, { "precision", "precision", true },
	{ "optimizer", "optimizer", true }, { "micro_batch", "count", true }, { "seq_len", "count", true },
	{ "target_len", "count", false }, { "grad_accum", "count", false },
	{ "checkpoint", "enum:none|selective|full|selective_op", false },
	{ "attention", "enum:flash|eager|sdpa", false }, { "kernels", "enum:hf|fused", false },
	{ "loss", "enum:standard|chunked|chunked_kept|chunked_output|chunked_output_compiled|chunked_ce|inplace_ce|upcast|upcast_output", false },
	{ "zero", "count", false },
	{ "fsdp", "enum:none|full_shard|shard_grad_op|hybrid_shard|no_shard", false },
	{ "parallel", "record", false }, { "finetune", "finetune", false }, { "freeze", "list", false },
	{ "train_layers", "list", false },
	{ "offload", "record", false }, { "ddp", "record", false }, { "deepspeed", "record", false },
	{ "overhead", "record", false }, { "headroom", "ratio", false },
	{ "zero_grad", "enum:set_to_none|zeros", false }, { "optimizer_in_backward", "bool", false },
	{ "load", "enum:meta|from_pretrained|rank0_cpu", false }, { "eval", "record", false },
	{ "save", "enum:none|full_state_dict|full_state_dict_cpu", false },
	{ "alloc", "record", false }, { "checkpoint_saves", "list", false },
	{ "checkpoint_every", "count", false }, { "recompute_method", "enum:uniform|block", false },
	{ "recompute_num_layers", "count", false }, { "megatron", "record", false },
	{ "compile", "bool", false }, { "compile_components", "list", false },
	{ "fp8", "record", false },
	{ "fsdp1", "record", false }, { "nccl", "record", false },
	{ "fsdp2", "record", false }, { "rl", "record", false },
	{ "data", "record", false }, { "keep_output", "bool", false },
	{ "rope_cache", "dtype", false }, { "torchtune", "record", false },
	{ NULL, NULL, false },
};

const char *check_train_key(size_t i)
{
	for (size_t n = 0; check_train_fields[n].name; n++)
		if (n == i)
			return check_train_fields[n].name;
	return NULL;
}

static const struct field_spec parallel_fields[] = {
	{ "tp", "count", false }, { "pp", "count", false }, { "cp", "count", false }, { "ep", "count", false },
	{ "vp", "count", false }, { "sequence_parallel", "bool", false }, { "schedule", "string", false },
	{ "etp", "count", false }, { "dp_shard", "count", false }, { "dp_replicate", "count", false },
	{ "first_stage_layers", "count", false }, { "last_stage_layers", "count", false },
	{ "stage_layers", "list", false },
	{ "account_for_embedding", "bool", false }, { "account_for_loss", "bool", false },
	{ "cp_comm_type", "enum:allgather|p2p|a2a", false }, { "async_tp", "bool", false },
	{ "return_outputs", "bool", false }, { "microbatch_group_size_per_vp_stage", "count", false },
	{ NULL, NULL, false },
};
static const struct field_spec offload_fields[] = {
	{ "optimizer", "enum:none|cpu|nvme", false }, { "params", "enum:none|cpu|nvme", false },
	{ "activations", "enum:none|cpu", false }, { NULL, NULL, false },
};
static const struct field_spec ddp_fields[] = {
	{ "bucket_cap", "bytes", false }, { "gradient_as_bucket_view", "bool", false }, { NULL, NULL, false },
};
static const struct field_spec deepspeed_fields[] = {
	{ "reduce_bucket_size", "count", false }, { "allgather_bucket_size", "count", false },
	{ "prefetch_bucket_size", "count", false }, { "overlap_comm", "bool", false }, { NULL, NULL, false },
};
static const struct field_spec eval_fields[] = {
	{ "batch", "count", false }, { "seq_len", "count", false }, { "generate", "count", false },
	{ NULL, NULL, false },
};
static const struct field_spec overhead_fields[] = {
	{ "context", "bytes", false }, { "cublas_workspace", "bytes", false }, { "nccl", "bytes", false },
	{ "fragmentation", "ratio", false }, { NULL, NULL, false },
};
/* Megatron-Core's DistributedDataParallelConfig / OptimizerConfig, its names. */
static const struct field_spec megatron_fields[] = {
	{ "distributed_optimizer", "bool", false }, { "grad_reduce_in_bf16", "bool", false },
	{ "overlap_grad_reduce", "bool", false }, { "overlap_param_gather", "bool", false },
	{ "bucket_size", "count", false }, { "recompute_modules", "list", false },
	{ "cpu_offloading_num_layers", "count", false }, { "cpu_offloading_activations", "bool", false },
	{ "moe_token_dispatcher_type", "enum:alltoall|flex", false },
	{ "moe_flex_dispatcher_num_sms", "count", false },
	{ NULL, NULL, false },
};
/* FP8 training: Transformer Engine / Megatron-Core / torchao names (check_fp8.c). */
static const struct field_spec fp8_fields[] = {
	{ "library", "string", false }, { "recipe", "string", false }, { "amax_history_len", "count", false },
	{ "fp8_model_init", "bool", false }, { "fp8_param_gather", "bool", false },
	{ "weight_cache", "bool", false }, { "enable_fsdp_float8_all_gather", "bool", false },
	{ "precompute_float8_dynamic_scale_for_fsdp", "bool", false }, { "save_float8_casts", "bool", false },
	{ "force_recompute_fp8_weight_in_bwd", "bool", false }, { NULL, NULL, false },
};
/* torch FSDP1's FullyShardedDataParallel arguments, its names (and no_sync()). */
static const struct field_spec fsdp1_fields[] = {
	{ "use_orig_params", "bool", false }, { "no_sync", "bool", false },
	{ "limit_all_gathers", "bool", false }, { "forward_prefetch", "bool", false },
	{ "backward_prefetch", "enum:backward_pre|backward_post|none", false },
	{ "cpu_offload", "bool", false }, { "sync_module_states", "bool", false },
	{ NULL, NULL, false },
};
/* NCCL's environment variables without NCCL_ (analyzer/memory/mem_comm.h). */
static const struct field_spec nccl_fields[] = {
	{ "buffsize", "bytes", false }, { "ll_buffsize", "bytes", false },
	{ "ll128_buffsize", "bytes", false }, { "nchannels", "count", false },
	{ "nchannels_per_net_peer", "count", false }, { "nvls_enable", "bool", false },
	{ "nvls_nchannels", "count", false }, { "nvls_chunksize", "bytes", false },
	{ NULL, NULL, false },
};
/* FSDP2's fully_shard and MixedPrecisionPolicy, torchtitan's policy (check_fsdp2.c). */
static const struct field_spec fsdp2_fields[] = {
	{ "reshard_after_forward", "any", false }, { "reshard_after_forward_policy", "string", false },
	{ "param_dtype", "dtype", false }, { "reduce_dtype", "dtype", false },
	{ "requires_gradient_sync", "bool", false }, { "root_unit", "string", false },
	{ NULL, NULL, false },
};
/* A preference or RL job's models and generation (analyzer/lower/build_rl.c). */
static const struct field_spec rl_fields[] = {
	{ "algorithm", "enum:dpo|orpo|cpo|simpo|kto|grpo|ppo", false },
	{ "reference", "enum:copy|adapter_disabled|precomputed|none", false },
	{ "num_generations", "count", false }, { "prompt_len", "count", false },
	{ "generation", "enum:policy|vllm_colocate|vllm_server", false },
	{ "vllm_gpu_memory_utilization", "ratio", false },
	{ "reward_model", "model", false }, { "value_model", "model|policy", false },
	{ "rollout_batch", "count", false },
	{ NULL, NULL, false },
};
/* PYTORCH_CUDA_ALLOC_CONF in PyTorch's spelling, and memc's switch (§5.4). */
static const struct field_spec alloc_fields[] = {
	{ "replay", "bool", false }, { "max_split_size_mb", "count", false },
	{ "roundup_power2_divisions", "count", false }, { "garbage_collection_threshold", "ratio", false },
	{ "expandable_segments", "bool", false }, { NULL, NULL, false },
};

/* How batches are shaped: HF DataCollatorWithPadding / torchtune
 * padded_collate_sft padding (§5.4 "Batch shapes"). */
static const struct field_spec data_fields[] = {
	{ "padding", "enum:longest|max_length|packed", false }, { "min_seq_len", "count", false },
	{ "later_seq_len", "count", false },
	{ NULL, NULL, false },
};

/* torchtune's own modules where their buffers differ from HF's: the
 * builders' RotaryPositionalEmbeddings (memory-model.md "torchtune's
 * rotary caches"). */
static const struct field_spec torchtune_fields[] = {
	{ "rope_cache", "dtype", false }, { "max_seq_len", "count", false },
	{ "shared_rope", "bool", false }, { NULL, NULL, false },
};

/* What each numeric key allows (a key not listed: any value of its type). */
const struct range_spec check_train_ranges[] = {
	{ "headroom", RANGE_FRACTION }, { "ddp.bucket_cap", RANGE_POSITIVE_BYTES },
	{ "deepspeed.reduce_bucket_size", RANGE_AT_LEAST_1 }, { "deepspeed.allgather_bucket_size", RANGE_AT_LEAST_1 },
	{ "deepspeed.prefetch_bucket_size", RANGE_AT_LEAST_1 }, { "overhead.context", RANGE_NONNEG_BYTES },
	{ "overhead.cublas_workspace", RANGE_NONNEG_BYTES }, { "overhead.nccl", RANGE_NONNEG_BYTES },
	{ "overhead.fragmentation", RANGE_PERCENT }, { "eval.batch", RANGE_AT_LEAST_1 },
	{ "eval.seq_len", RANGE_AT_LEAST_1 }, { "alloc.max_split_size_mb", RANGE_SPLIT_MB },
	{ "alloc.roundup_power2_divisions", RANGE_POWER_OF_2 },
	/* c10 CUDAAllocatorConfig parseGarbageCollectionThreshold: 0 < t < 1 */
	{ "alloc.garbage_collection_threshold", RANGE_FRACTION_ABOVE_0 },
	{ "fp8.amax_history_len", RANGE_AT_LEAST_1 },
	{ "megatron.bucket_size", RANGE_AT_LEAST_1 }, { "nccl.buffsize", RANGE_POSITIVE_BYTES },
	{ "nccl.ll_buffsize", RANGE_POSITIVE_BYTES }, { "nccl.ll128_buffsize", RANGE_POSITIVE_BYTES },
	{ "nccl.nvls_chunksize", RANGE_POSITIVE_BYTES }, { "nccl.nchannels", RANGE_NCCL_CHANNELS },
	{ "nccl.nchannels_per_net_peer", RANGE_NCCL_CHANNELS }, { "nccl.nvls_nchannels", RANGE_NCCL_CHANNELS }, { "parallel.first_stage_layers", RANGE_AT_LEAST_1 }, { "parallel.last_stage_layers", RANGE_AT_LEAST_1 },
	/* schedules.py: None is pp; a written 0 is outside [pp, M], not the default */
	{ "parallel.microbatch_group_size_per_vp_stage", RANGE_AT_LEAST_1 },
	{ "rl.num_generations", RANGE_AT_LEAST_1 }, { "rl.prompt_len", RANGE_AT_LEAST_1 },
	/* vllm/config CacheConfig: gpu_memory_utilization = Field(0.9, gt=0, le=1) */
	{ "rl.vllm_gpu_memory_utilization", RANGE_PERCENT_ABOVE_0 }, { "rl.rollout_batch", RANGE_AT_LEAST_1 },
	{ "data.min_seq_len", RANGE_AT_LEAST_1 },
	{ "data.later_seq_len", RANGE_AT_LEAST_1 }, { "torchtune.max_seq_len", RANGE_AT_LEAST_1 },
	{ "checkpoint_every", RANGE_AT_LEAST_1 }, { "recompute_num_layers", RANGE_AT_LEAST_1 },
	{ "eval.generate", RANGE_NONNEG }, { "megatron.moe_flex_dispatcher_num_sms", RANGE_AT_LEAST_1 },
	{ NULL, RANGE_ANY },
};

const struct field_spec *check_train_sub_specs(const char *name)
{
	return !strcmp(name, "parallel") ? parallel_fields : !strcmp(name, "offload") ? offload_fields :
	       !strcmp(name, "ddp") ? ddp_fields : !strcmp(name, "deepspeed") ? deepspeed_fields :
	       !strcmp(name, "eval") ? eval_fields : !strcmp(name, "alloc") ? alloc_fields :
	       !strcmp(name, "megatron") ? megatron_fields : !strcmp(name, "fsdp1") ? fsdp1_fields :
	       !strcmp(name, "nccl") ? nccl_fields : !strcmp(name, "fsdp2") ? fsdp2_fields :
	       !strcmp(name, "fp8") ? fp8_fields : !strcmp(name, "rl") ? rl_fields :
	       !strcmp(name, "data") ? data_fields : !strcmp(name, "torchtune") ? torchtune_fields :
	       overhead_fields;
}
