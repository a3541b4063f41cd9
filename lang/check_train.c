/* SPDX-License-Identifier: MIT */
/*
 * check_train.c - train blocks: their keys, the rules between settings, and
 * the walk of the model with the job's real bindings, which is where
 * divisibility and positivity of every shape axis are checked (templates
 * no job instantiates: check_attrs.c).
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

/* ---- train blocks ---- */

static const struct field_spec train_fields[] = {
	{ "model", "model", true }, { "cluster", "cluster", true }, { "precision", "precision", true },
	{ "optimizer", "optimizer", true }, { "micro_batch", "count", true }, { "seq_len", "count", true },
	{ "target_len", "count", false }, { "grad_accum", "count", false },
	{ "checkpoint", "enum:none|selective|full|selective_op", false },
	{ "attention", "enum:flash|eager", false }, { "kernels", "enum:hf|fused", false },
	{ "loss", "enum:standard|chunked|chunked_kept|chunked_output|chunked_output_compiled|chunked_ce|inplace_ce|upcast|upcast_output", false },
	{ "zero", "count", false },
	{ "fsdp", "enum:none|full_shard|shard_grad_op|hybrid_shard|no_shard", false },
	{ "parallel", "record", false }, { "finetune", "finetune", false }, { "freeze", "list", false },
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
	{ "data", "record", false },
	{ NULL, NULL, false },
};

const char *check_train_key(size_t i)
{
	for (size_t n = 0; train_fields[n].name; n++)
		if (n == i)
			return train_fields[n].name;
	return NULL;
}

static const struct field_spec parallel_fields[] = {
	{ "tp", "count", false }, { "pp", "count", false }, { "cp", "count", false }, { "ep", "count", false },
	{ "vp", "count", false }, { "sequence_parallel", "bool", false }, { "schedule", "string", false },
	{ "etp", "count", false }, { "dp_shard", "count", false }, { "dp_replicate", "count", false },
	{ "first_stage_layers", "count", false }, { "last_stage_layers", "count", false },
	{ "account_for_embedding", "bool", false }, { "account_for_loss", "bool", false },
	{ "cp_comm_type", "enum:allgather|p2p|a2a", false }, { "async_tp", "bool", false },
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
/* NCCL's environment variables without NCCL_ (analyzer/mem_comm.h). */
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
/* A preference or RL job's models and generation (analyzer/build_rl.c). */
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
	{ NULL, NULL, false },
};

/* What each numeric key allows (a key not listed: any value of its type). */
static const struct range_spec train_ranges[] = {
	{ "headroom", RANGE_FRACTION }, { "ddp.bucket_cap", RANGE_POSITIVE_BYTES },
	{ "deepspeed.reduce_bucket_size", RANGE_AT_LEAST_1 }, { "deepspeed.allgather_bucket_size", RANGE_AT_LEAST_1 },
	{ "deepspeed.prefetch_bucket_size", RANGE_AT_LEAST_1 }, { "overhead.context", RANGE_NONNEG_BYTES },
	{ "overhead.cublas_workspace", RANGE_NONNEG_BYTES }, { "overhead.nccl", RANGE_NONNEG_BYTES },
	{ "overhead.fragmentation", RANGE_PERCENT }, { "eval.batch", RANGE_AT_LEAST_1 },
	{ "eval.seq_len", RANGE_AT_LEAST_1 }, { "alloc.max_split_size_mb", RANGE_AT_LEAST_1 },
	{ "alloc.roundup_power2_divisions", RANGE_AT_LEAST_1 },
	{ "alloc.garbage_collection_threshold", RANGE_FRACTION },
	{ "fp8.amax_history_len", RANGE_AT_LEAST_1 },
	{ "megatron.bucket_size", RANGE_AT_LEAST_1 }, { "nccl.buffsize", RANGE_POSITIVE_BYTES },
	{ "nccl.ll_buffsize", RANGE_POSITIVE_BYTES }, { "nccl.ll128_buffsize", RANGE_POSITIVE_BYTES },
	{ "nccl.nvls_chunksize", RANGE_POSITIVE_BYTES }, { "nccl.nchannels", RANGE_AT_LEAST_1 },
	{ "nccl.nchannels_per_net_peer", RANGE_AT_LEAST_1 }, { "nccl.nvls_nchannels", RANGE_AT_LEAST_1 }, { "parallel.first_stage_layers", RANGE_AT_LEAST_1 }, { "parallel.last_stage_layers", RANGE_AT_LEAST_1 },
	{ "rl.num_generations", RANGE_AT_LEAST_1 }, { "rl.prompt_len", RANGE_AT_LEAST_1 },
	{ "rl.vllm_gpu_memory_utilization", RANGE_PERCENT }, { "rl.rollout_batch", RANGE_AT_LEAST_1 },
	{ "data.min_seq_len", RANGE_AT_LEAST_1 },
	{ NULL, RANGE_ANY },
};

static const struct field_spec *sub_specs(const char *name)
{
	return !strcmp(name, "parallel") ? parallel_fields : !strcmp(name, "offload") ? offload_fields :
	       !strcmp(name, "ddp") ? ddp_fields : !strcmp(name, "deepspeed") ? deepspeed_fields :
	       !strcmp(name, "eval") ? eval_fields : !strcmp(name, "alloc") ? alloc_fields :
	       !strcmp(name, "megatron") ? megatron_fields : !strcmp(name, "fsdp1") ? fsdp1_fields :
	       !strcmp(name, "nccl") ? nccl_fields : !strcmp(name, "fsdp2") ? fsdp2_fields :
	       !strcmp(name, "fp8") ? fp8_fields : !strcmp(name, "rl") ? rl_fields :
	       !strcmp(name, "data") ? data_fields : overhead_fields;
}

/* `precision = fp32` names the precision, not the dtype of that name; a
 * dtype alias (`fp8` is fp8_e4m3) is matched by the name as written. */
static struct value as_decl(struct eval *ev, const struct expr *e, struct value v, enum decl_kind kind)
{
	if (v.kind == VAL_DTYPE && e->kind == EXPR_NAME) {
		const struct decl *d = scope_find_kind(ev->scope, e->name.name, kind);

		if (d)
			return eval_decl_value(ev, d, v.loc);
		v.str = e->name.name;	/* for the message: `fp8`, not fp8_e4m3 */
	}
	if (v.kind == VAL_DTYPE) {
		const struct decl *d = scope_find_kind(ev->scope, intern_cstr(ev->interner, dtype_name(v.dtype)), kind);

		if (d)
			return eval_decl_value(ev, d, v.loc);
	}
	if (v.kind == VAL_DECL && v.decl->kind == kind && kind != DECL_PRECISION)
		return eval_instantiate(ev, NULL, v.decl, NULL, v.loc);
	return v;
}

static bool enum_has(const char *alts, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = alts; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
		size_t len = strcspn(p, "|");

		if (len == n && !strncmp(p, v, n))
			return true;
	}
	return false;
}

/* The message grows with the list: the loss list alone is over 100 bytes. */
static bool check_enum(struct eval *ev, struct value v, const char *alts, const char *what)
{
	struct strbuf list;

	if (v.kind == VAL_ERROR)
		return false;
	if ((v.kind == VAL_SYMBOL || v.kind == VAL_NONE) && v.str && enum_has(alts, v.str))
		return true;
	/* "none|selective|full" -> "none, selective or full" */
	strbuf_init(&list);
	for (const char *p = alts; *p; p++) {
		if (*p != '|')
			strbuf_add(&list, p, 1);
		else
			strbuf_addf(&list, "%s", strchr(p + 1, '|') ? ", " : " or ");
	}
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be %s", what, list.buf);
	strbuf_release(&list);
	return false;
}

/* `precision = bf16`: a dtype where a policy is wanted; name the policies
 * that compute or keep weights in it. */
static void precision_is_dtype(struct eval *ev, struct value v, const char *what)
{
	/* v.str: the name as written, which may be an alias (`fp8` is fp8_e4m3) */
	const char *written = v.str ? v.str : dtype_name(v.dtype);
	struct diag *d = eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be a precision policy, but %s is "
				    "a dtype", what, written);
	struct strbuf sb;

	strbuf_init(&sb);
	for (size_t i = 0; i < scope_count(ev->scope); i++) {
		const struct decl *p = scope_at(ev->scope, i);
		const struct field *w = p->kind == DECL_PRECISION ? eval_record_field(ev->scope, p, "weights") : NULL;
		const struct field *c = p->kind == DECL_PRECISION ? eval_record_field(ev->scope, p, "compute") : NULL;
		struct value wv = w ? eval_expr(ev, NULL, w->value) : val_error(NO_LOC);
		struct value cv = c ? eval_expr(ev, NULL, c->value) : val_error(NO_LOC);

		if ((wv.kind == VAL_DTYPE && wv.dtype == v.dtype) || (cv.kind == VAL_DTYPE && cv.dtype == v.dtype))
			strbuf_addf(&sb, "%s%s (weights %s, compute %s)", sb.len ? ", " : "", p->name,
				    wv.kind == VAL_DTYPE ? dtype_name(wv.dtype) : "?",
				    cv.kind == VAL_DTYPE ? dtype_name(cv.dtype) : "?");
	}
	if (sb.len) {
		diag_note(d, NO_LOC, "the policies that use %s: %s", dtype_name(v.dtype), sb.buf);
		strbuf_release(&sb);
		return;
	}
	const char *name, *import = NULL, *file = NULL;
	enum decl_kind k;

	/* none in scope: the stdlib's, by name (the index reads no fields) */
	for (size_t i = 0; eval_stdlib_at(ev, i, &name, &k, &import); i++)
		if (k == DECL_PRECISION && (strstr(name, dtype_name(v.dtype)) || strstr(name, written))) {
			strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", name);
			file = import;
		}
	if (file)
		diag_note(d, NO_LOC, "the stdlib's \"%s\" has %s: add import \"%s\"", file, sb.buf, file);
	strbuf_release(&sb);
}

static bool check_kind(struct eval *ev, struct value v, const char *type, const char *what)
{
	if (!strncmp(type, "enum:", 5))
		return check_enum(ev, v, type + 5, what);
	if (!strcmp(type, "model|policy")) {
		if (v.kind == VAL_SYMBOL && !strcmp(v.str, "policy"))
			return true;
		type = "model";
	}
	if (!strcmp(type, "cluster")) {
		if (v.kind == VAL_CLUSTER || v.kind == VAL_ERROR)
			return v.kind == VAL_CLUSTER;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be written 'N x GPU' or 'NODES x N x GPU'", what);
		return false;
	}
	if (!strcmp(type, "finetune")) {
		if ((v.kind == VAL_SYMBOL && !strcmp(v.str, "full")) ||
		    (v.kind == VAL_CALL && (!strcmp(v.str, "lora") || !strcmp(v.str, "qlora"))))
			return true;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be full, lora(...) or qlora(...)", what);
		return false;
	}
	if (!strcmp(type, "precision")) {
		if (v.kind == VAL_DECL && v.decl->kind == DECL_PRECISION)
			return true;
		if (v.kind == VAL_SYMBOL)
			return undefined_name_of(ev, &v, DECL_PRECISION), false;
		if (v.kind == VAL_DTYPE)
			return precision_is_dtype(ev, v, what), false;
	}
	return eval_is_type(ev, v, type, what, v.loc);
}

static void keep(struct eval *ev, struct check_job *j, const char *name, struct value v)
{
	if (j->nfields == j->capfields) {
		unsigned cap = j->capfields ? j->capfields * 2 : 16;
		struct value *f = ARENA_NEW_ARRAY(ev->arena, struct value, cap);
		const char **n = ARENA_NEW_ARRAY(ev->arena, const char *, cap);

		if (j->nfields) {
			memcpy(f, j->fields, j->nfields * sizeof *f);
			memcpy(n, j->names, j->nfields * sizeof *n);
		}
		j->fields = f;
		j->names = n;
		j->capfields = cap;
	}
	j->names[j->nfields] = name;
	j->fields[j->nfields++] = v;
}

/* Whether @word is one of the "a|b|c" alternatives. A key's own words win
 * over declarations: `attention = eager` means the enum value even when the
 * file also declares `train eager`. */
static bool is_enum_word(const char *alts, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = alts; *p; p = strchr(p, '|') ? strchr(p, '|') + 1 : p + strlen(p)) {
		const char *end = strchr(p, '|');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, word, n))
			return true;
	}
	return false;
}

static void train_field(struct eval *ev, struct check_job *j, const struct field *f, const char *prefix,
			const struct field_spec *specs)
{
	char what[96];
	const struct field_spec *s = check_spec_find(specs, f->name);

	snprintf(what, sizeof what, "'%s%s'", prefix, f->name);
	if (!s) {
		check_unknown_field(ev, specs, f, prefix[0] ? "this record" : "a train block");
		j->ok = false;	/* a misspelt key: do not also call it missing */
		return;
	}
	if (!strcmp(s->type, "record") || f->sub) {
		if (!f->sub && f->value)
			eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s is written '%s { ... }'", what, f->name);
		for (const struct field *g = f->sub; g; g = g->next)
			if (!check_duplicate_field(ev, f->sub, g))
				train_field(ev, j, g, arena_printf(ev->arena, "%s.", f->name), sub_specs(f->name));
		return;
	}
	struct value v = eval_expr(ev, NULL, f->value);

	if (!strncmp(s->type, "enum:", 5) && f->value->kind == EXPR_NAME &&
	    (v.kind == VAL_DECL || v.kind == VAL_INSTANCE) && is_enum_word(s->type + 5, f->value->name.name))
		v = (struct value){ .kind = VAL_SYMBOL, .str = f->value->name.name, .loc = v.loc, .origin = v.loc };
	/* `value_model = policy`: the policy's architecture (rl, build_rl.c) */
	if (!strcmp(s->type, "model|policy") && f->value->kind == EXPR_NAME && !strcmp(f->value->name.name, "policy"))
		v = (struct value){ .kind = VAL_SYMBOL, .str = f->value->name.name, .loc = v.loc, .origin = v.loc };
	else if (!strncmp(s->type, "model", 5) || !strcmp(s->type, "optimizer") || !strcmp(s->type, "precision"))
		v = as_decl(ev, f->value, v, !strncmp(s->type, "model", 5) ? DECL_MODEL :
			    !strcmp(s->type, "optimizer") ? DECL_OPTIMIZER : DECL_PRECISION);
	v.origin = f->loc;
	if (!v.label || (v.kind != VAL_INSTANCE && v.kind != VAL_DECL))
		v.label = f->name;	/* "tp (3)" in notes; a model keeps its own name */
	const char *key = arena_printf(ev->arena, "%s%s", prefix, f->name);

	if (check_kind(ev, v, s->type, what) && check_range(ev, v, check_range_of(train_ranges, key), what))
		keep(ev, j, key, v);
	else
		j->ok = false;
}

/* A count key with its default; @v gets the key's value for notes. */
static uint64_t count_key(struct eval *ev, const struct check_job *j, const char *key, uint64_t def,
			  struct value *v)
{
	uint64_t u = def;

	if (check_job_field(j, key, v))
		eval_to_u64(ev, *v, key, &u);
	else
		*v = val_count(def, j->decl->name_loc);
	v->label = strrchr(key, '.') ? strrchr(key, '.') + 1 : key;
	return u;
}

/* micro_batch, seq_len and grad_accum of 0 would make every tensor empty:
 * say so at the line, not deep inside a stdlib shape. */
static bool positive_keys(struct eval *ev, struct check_job *j)
{
	static const char *const keys[] = { "micro_batch", "seq_len", "target_len", "grad_accum", "parallel.tp",
					    "parallel.pp", "parallel.cp", "parallel.ep", "parallel.vp" };
	bool ok = true;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		struct value v;

		if (check_job_field(j, keys[i], &v) && v.kind == VAL_NUM && !v.unknown &&
		    num_sign(v.num) <= 0) {
			eval_error(ev, DIAG_BAD_SHAPE, v.loc, "'%s' must be at least 1", keys[i]);
			ok = false;
		}
	}
	struct value z;

	if (check_job_field(j, "zero", &z) && z.kind == VAL_NUM &&
	    (num_sign(z.num) < 0 || num_cmp(z.num, num_from_int(3)) > 0)) {
		eval_error(ev, DIAG_TYPE_MISMATCH, z.loc, "'zero' is a DeepSpeed stage: 0, 1, 2 or 3");
		ok = false;
	}
	return ok;
}

/* The location of top-level key @key of @j's block (a sub-record too). */
static struct loc key_loc(const struct check_job *j, const char *key)
{
	for (const struct field *f = j->block; f; f = f->next)
		if (!strcmp(f->name, key))
			return f->loc;
	return NO_LOC;
}

/* 1 to CHECK_MAX_GPUS whole GPUs: `0 x A100` or `2.5 x A100` would leave
 * nothing, or nonsense, to divide. */
static bool cluster_ok(struct eval *ev, const struct check_job *j)
{
	uint64_t nodes = 0, per = 0;
	const struct value *c = &j->cluster;

	if (c->kind != VAL_CLUSTER)
		return true;
	if (!num_is_int(c->gpus) || !num_is_int(c->nodes) || !num_to_u64(c->gpus, &per) ||
	    !num_to_u64(c->nodes, &nodes) || !per || !nodes || per > CHECK_MAX_GPUS ||
	    nodes > CHECK_MAX_GPUS || nodes * per > CHECK_MAX_GPUS) {
		eval_error(ev, DIAG_OUT_OF_RANGE, c->loc, "a cluster has 1 to %d GPUs, in whole numbers of "
			   "nodes and GPUs per node", CHECK_MAX_GPUS);
		return false;
	}
	return true;
}

static bool sym_is(const struct check_job *j, const char *key, const char *sym)
{
	struct value v;

	return check_job_field(j, key, &v) && (v.kind == VAL_SYMBOL || v.kind == VAL_STRING) &&
	       !strcmp(v.str, sym);
}

static bool degree_above_1(const struct check_job *j, const char *key)
{
	struct value v;

	return check_job_field(j, key, &v) && v.kind == VAL_NUM && num_cmp(v.num, num_from_int(1)) > 0;
}

/* vp needs the interleaved schedule and pp > 1, an uneven or accounted
 * split pp > 1; sequence parallelism splits the tp group's sequence, so it
 * needs tp > 1. */
static bool parallel_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	if (check_job_field(j, "parallel.vp", &v) && degree_above_1(j, "parallel.vp") &&
	    (!sym_is(j, "parallel.schedule", "interleaved") || !degree_above_1(j, "parallel.pp"))) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'vp' chunks a pipeline stage only with pp > 1 "
			   "and schedule = \"interleaved\"");
		ok = false;
	}
	static const char *const split[] = { "first_stage_layers", "last_stage_layers",
					     "account_for_embedding", "account_for_loss" };

	for (size_t i = 0; i < sizeof split / sizeof split[0] && !degree_above_1(j, "parallel.pp"); i++)
		if (check_job_field(j, arena_printf(ev->arena, "parallel.%s", split[i]), &v) &&
		    (v.kind != VAL_BOOL || v.b)) {
			eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' places layers on pipeline "
				   "stages: it needs pp > 1", split[i]);
			ok = false;
		}
	if (check_job_field(j, "parallel.sequence_parallel", &v) && v.kind == VAL_BOOL && v.b &&
	    !degree_above_1(j, "parallel.tp")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'sequence_parallel' splits the sequence over "
			   "the tp ranks: it needs tp > 1");
		ok = false;
	}
	return ok;
}

/* offload { } as the frameworks take it: DeepSpeed's offload_param is
 * "valid only with stage 3"; PyTorch FSDP's CPUOffload moves the parameters
 * (and with them gradients and the optimizer step) to the CPU only. */
static bool offload_ok(struct eval *ev, const struct check_job *j, uint64_t zero, bool fsdp)
{
	struct value p, o;
	bool par = check_job_field(j, "offload.params", &p) && p.kind != VAL_NONE;
	bool opt = check_job_field(j, "offload.optimizer", &o) && o.kind != VAL_NONE;

	if (par && !fsdp && zero < 3) {
		eval_error(ev, DIAG_IGNORED_SETTING, p.origin, "'offload { params }' moves the ZeRO-3 or FSDP "
			   "parameter shards, but %s: use zero = 3 or fsdp", zero ? "ZeRO-1/2 keep every "
			   "parameter on the GPU" : "nothing shards the parameters");
		return false;
	}
	if (fsdp && opt && !par) {
		eval_error(ev, DIAG_IGNORED_SETTING, o.origin, "FSDP has no optimizer-only offload: "
			   "CPUOffload(offload_params=True) moves the optimizer with the parameters; "
			   "write offload { params = cpu }");
		return false;
	}
	if (fsdp && par && sym_is(j, "offload.params", "nvme")) {
		eval_error(ev, DIAG_IGNORED_SETTING, p.origin, "FSDP offloads to the CPU only: params = cpu "
			   "(NVMe is DeepSpeed ZeRO-Infinity's, zero = 3)");
		return false;
	}
	return true;
}

static bool needs_full(struct eval *ev, const struct check_job *j, const char *key, const char *what)
{
	struct value v;

	if (!check_job_field(j, key, &v) || v.kind == VAL_NONE || sym_is(j, "checkpoint", "full"))
		return true;
	eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' %s; it needs 'checkpoint = full'", key, what);
	return false;
}

/* Which layers full recompute covers: torchtitan's every N-th block, or
 * Megatron's --recompute-method/--recompute-num-layers. Megatron's uniform
 * method with more than one layer per unit checkpoints groups of layers,
 * which memc does not model. */
static bool layer_policy_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, n;
	bool ok = needs_full(ev, j, "checkpoint_every", "picks the checkpointed blocks") &
		  needs_full(ev, j, "recompute_method", "picks the recomputed layers") &
		  needs_full(ev, j, "recompute_num_layers", "picks the recomputed layers");
	bool has_n = check_job_field(j, "recompute_num_layers", &n) && n.kind == VAL_NUM;
	bool block = sym_is(j, "recompute_method", "block");

	if (check_job_field(j, "checkpoint_every", &v) && (block || has_n)) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'checkpoint_every' (torchtitan) and "
			   "'recompute_method'/'recompute_num_layers' (Megatron) both pick layers: use one");
		ok = false;
	}
	if (block && !has_n) {
		eval_error(ev, DIAG_MISSING_FIELD, key_loc(j, "recompute_method"),
			   "'recompute_method = block' needs 'recompute_num_layers'");
		ok = false;
	}
	if (has_n && !block && num_cmp(n.num, num_from_int(1)) > 0) {
		eval_error(ev, DIAG_OUT_OF_RANGE, n.origin, "'recompute_method = uniform' with more than one "
			   "layer per checkpoint is not modelled: memc recomputes layer by layer (1)");
		ok = false;
	}
	return ok;
}

/* A word of a list: `mlp` may also name a stdlib layer, so a declaration
 * counts by its name. */
static const char *list_word(const struct value *v)
{
	if (v->kind == VAL_SYMBOL || v->kind == VAL_STRING)
		return v->str;
	return v->kind == VAL_DECL || v->kind == VAL_INSTANCE ? v->decl->name : NULL;
}

/* megatron { recompute_modules }: Megatron's module names, under
 * --recompute-granularity selective only. */
static bool recompute_modules_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	if (!check_job_field(j, "megatron.recompute_modules", &v) || v.kind != VAL_LIST)
		return true;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		const char *w = list_word(it);

		if (it->kind != VAL_ERROR && (!w || !check_is_recompute_module(w))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'recompute_modules' lists Megatron modules: "
				   "core_attn, mlp, moe, moe_act, layernorm, mla_up_proj, shared_experts");
			ok = false;
		}
	}
	if (!sym_is(j, "checkpoint", "selective")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'recompute_modules' is Megatron's "
			   "'--recompute-granularity selective' (checkpoint = selective); other modes ignore it");
		ok = false;
	}
	return ok;
}

/* megatron { cpu_offloading_num_layers }: what Megatron-Core's
 * TransformerConfig.__post_init__ refuses with --cpu-offloading (pp > 1,
 * recomputation), and cpu_offloading_activations = false, with which
 * Transformer Engine offloads nothing (its weight offload is deprecated). */
static bool cpu_offloading_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, a;

	if (!check_job_field(j, "megatron.cpu_offloading_num_layers", &v) || v.kind != VAL_NUM ||
	    num_sign(v.num) <= 0)
		return true;
	if (degree_above_1(j, "parallel.pp")) {
		eval_error(ev, DIAG_BAD_LAYOUT, v.origin, "Megatron-Core has no CPU offloading under "
			   "pipeline parallelism ('Currently there is no support for Pipeline parallelism "
			   "with CPU offloading'); remove cpu_offloading_num_layers or set pp = 1");
		return false;
	}
	if (check_job_field(j, "checkpoint", &a) && !sym_is(j, "checkpoint", "none")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "Megatron-Core's CPU offloading 'does not "
			   "work when activation recomputation is enabled'; set checkpoint = none or remove "
			   "cpu_offloading_num_layers");
		return false;
	}
	if (check_job_field(j, "megatron.cpu_offloading_activations", &a) && a.kind == VAL_BOOL && !a.b) {
		eval_error(ev, DIAG_IGNORED_SETTING, a.origin, "with cpu_offloading_activations = false "
			   "Transformer Engine offloads nothing (weight offload is deprecated and has no "
			   "effect); remove cpu_offloading_num_layers or set it to true");
		return false;
	}
	return true;
}

/* compile_components: torchtitan's compile.components, under compile = true. */
static bool compile_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, c;
	bool ok = true;

	if (!check_job_field(j, "compile_components", &v) || v.kind != VAL_LIST)
		return true;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		const char *w = list_word(it);

		if (it->kind != VAL_ERROR && (!w || (strcmp(w, "model") && strcmp(w, "loss")))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'compile_components' lists what "
				   "torch.compile wraps: model (each transformer block), loss");
			ok = false;
		}
	}
	if (!check_job_field(j, "compile", &c) || c.kind != VAL_BOOL || !c.b) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'compile_components' names what "
			   "'compile = true' compiles; without it nothing is compiled");
		ok = false;
	}
	return ok;
}

/* checkpoint_saves lists ops (as op() tags name them) for the op-level
 * policy; another checkpoint mode would ignore it. */
/* data { min_seq_len } bounds the lengths of padding = longest (§5.4). */
static bool data_ok(struct eval *ev, const struct check_job *j)
{
	struct value m, s;

	if (!check_job_field(j, "data.min_seq_len", &m) || m.kind != VAL_NUM)
		return true;
	if (!sym_is(j, "data.padding", "longest")) {
		eval_error(ev, DIAG_IGNORED_SETTING, m.origin, "'min_seq_len' bounds the batch lengths "
			   "of 'padding = longest'; other padding makes every batch 'seq_len' long");
		return false;
	}
	if (check_job_field(j, "seq_len", &s) && s.kind == VAL_NUM && num_cmp(m.num, s.num) > 0) {
		eval_error(ev, DIAG_OUT_OF_RANGE, m.origin, "'min_seq_len' is above 'seq_len', the "
			   "longest batch: it must be at most that");
		return false;
	}
	return true;
}

static bool checkpoint_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	ok = layer_policy_ok(ev, j);
	ok = recompute_modules_ok(ev, j) && ok;
	ok = cpu_offloading_ok(ev, j) && ok;
	ok = compile_ok(ev, j) && ok;
	if (!check_job_field(j, "checkpoint_saves", &v) || v.kind != VAL_LIST)
		return ok;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		bool sym = it->kind == VAL_SYMBOL || it->kind == VAL_STRING;

		if (it->kind != VAL_ERROR && (!sym || (strcmp(it->str, "mm") && strcmp(it->str, "sdpa")))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'checkpoint_saves' lists ops: mm, sdpa");
			ok = false;
		}
	}
	if (!sym_is(j, "checkpoint", "selective_op")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'checkpoint_saves' is the save list of "
			   "'checkpoint = selective_op'; other modes ignore it");
		ok = false;
	}
	return ok;
}

/* DeepSpeed's PipelineEngine asserts zero_optimization_stage() < 2 in its
 * __init__ (deepspeed/runtime/pipe/engine.py): ZeRO-2/3 shard the gradients
 * the pipeline schedule reduces itself. zero = 2|3 is always DeepSpeed;
 * Megatron's distributed optimizer is zero = 1 and FSDP is fsdp. */
static bool pipeline_zero_ok(struct eval *ev, const struct check_job *j, const struct value *z,
			     uint64_t zero)
{
	struct value pp;

	if (zero < 2 || !degree_above_1(j, "parallel.pp") || !check_job_field(j, "parallel.pp", &pp))
		return true;
	diag_note(eval_error(ev, DIAG_BAD_LAYOUT, z->origin, "DeepSpeed's pipeline engine runs ZeRO "
			     "stage 0 or 1 only ('ZeRO-2 and ZeRO-3 are incompatible with pipeline "
			     "parallelism'): use zero = 1 with pp > 1, or pp = 1"),
		  pp.origin, "'pp' is set here");
	return false;
}

/* Settings that another setting makes meaningless: each is an error at
 * the key that would be ignored. */
static bool sharding_ok(struct eval *ev, const struct check_job *j)
{
	struct value z, fs, v;
	uint64_t zero = 0;
	bool fsdp1 = check_job_field(j, "fsdp", &fs) && fs.kind != VAL_NONE && !sym_is(j, "fsdp", "none");
	bool fsdp = fsdp1 || check_fsdp2_present(j);	/* fsdp2 { } alone is full_shard */
	bool ok = check_fsdp2(ev, j);

	if (check_job_field(j, "zero", &z))
		num_to_u64(z.num, &zero);
	if (zero > 0 && fsdp1) {
		diag_note(eval_error(ev, DIAG_IGNORED_SETTING, fs.origin, "'fsdp' and 'zero = %llu' both shard the "
				     "model (PyTorch FSDP or DeepSpeed ZeRO): use one", (unsigned long long)zero),
			  z.origin, "'zero' is set here");
		ok = false;
	}
	ok &= pipeline_zero_ok(ev, j, &z, zero);
	if (key_loc(j, "ddp").file && (zero > 0 || fsdp)) {
		eval_error(ev, DIAG_IGNORED_SETTING, key_loc(j, "ddp"), "'ddp { }' sets DistributedDataParallel's "
			   "buckets, but %s does the reduction: remove it (DeepSpeed's buckets are "
			   "'deepspeed { reduce_bucket_size }')", zero > 0 ? "DeepSpeed ZeRO" : "FSDP");
		ok = false;
	}
	if (key_loc(j, "fsdp1").file && !fsdp) {
		eval_error(ev, DIAG_IGNORED_SETTING, key_loc(j, "fsdp1"),
			   "'fsdp1 { }' sets FullyShardedDataParallel's arguments, but 'fsdp' is none: "
			   "add 'fsdp = full_shard' (or another strategy) or remove it");
		ok = false;
	}
	if (key_loc(j, "fsdp1").file && check_fsdp2_present(j)) {
		eval_error(ev, DIAG_IGNORED_SETTING, key_loc(j, "fsdp1"),
			   "'fsdp1 { }' describes FullyShardedDataParallel and 'fsdp2 { }' fully_shard: "
			   "a model is wrapped by one of them, remove the other");
		ok = false;
	}
	if (key_loc(j, "deepspeed").file && zero == 0) {
		eval_error(ev, DIAG_IGNORED_SETTING, key_loc(j, "deepspeed"),
			   "'deepspeed { }' applies to ZeRO stages 1 to 3, but 'zero' is 0");
		ok = false;
	}
	if (check_job_field(j, "parallel.schedule", &v) && v.kind == VAL_STRING &&
	    strcmp(v.str, "1f1b") && strcmp(v.str, "interleaved") && strcmp(v.str, "gpipe") &&
	    strcmp(v.str, "zb_h1") && strcmp(v.str, "zb_h2") && strcmp(v.str, "dualpipe") &&
	    strcmp(v.str, "dualpipev")) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'schedule' must be \"1f1b\", \"interleaved\", "
			   "\"gpipe\", \"zb_h1\", \"zb_h2\", \"dualpipe\" or \"dualpipev\"");
		ok = false;
	}
	return ok & parallel_ok(ev, j) & offload_ok(ev, j, zero, fsdp);
}

/* The arguments lora() and qlora() take; an unknown one would be ignored.
 * PEFT LoraConfig / BitsAndBytesConfig spellings: docs/language.md §3.7. */
static const struct field_spec lora_args[] = {
	{ "r", "count", false }, { "alpha", "number", false }, { "targets", "list", false },
	{ "dropout", "number", false }, { "dtype", "dtype", false }, { "modules_to_save", "list", false },
	{ "use_dora", "bool", false }, { "use_rslora", "bool", false }, { "adapters", "count", false },
	{ "quant", "dtype", false }, { "save_input", "bool", false }, { "quant_storage", "dtype", false },
	{ "double_quant", "bool", false }, { "compute_dtype", "dtype", false },
	{ "prepare_kbit", "bool", false }, { NULL, NULL, false },
};
static const struct range_spec lora_ranges[] = {
	{ "r", RANGE_AT_LEAST_1 }, { "alpha", RANGE_POSITIVE }, { "dropout", RANGE_FRACTION },
	{ "adapters", RANGE_AT_LEAST_1 }, { NULL, RANGE_ANY },
};

/* PEFT's and other tools' spellings of lora()'s arguments. */
static const char *lora_synonym(const char *name)
{
	static const char *const syn[][2] = { { "rank", "r" }, { "lora_r", "r" }, { "lora_alpha", "alpha" },
					      { "lora_dropout", "dropout" }, { "target_modules", "targets" },
					      { "quant_type", "quant" }, { "bnb_4bit_quant_type", "quant" },
					      { "bnb_4bit_quant_storage", "quant_storage" },
					      { "bnb_4bit_use_double_quant", "double_quant" },
					      { "bnb_4bit_compute_dtype", "compute_dtype" },
					      { "prepare_model_for_kbit_training", "prepare_kbit" } };

	for (size_t i = 0; i < sizeof syn / sizeof syn[0]; i++)
		if (!strcmp(syn[i][0], name))
			return syn[i][1];
	return NULL;
}

static bool qlora_only(const char *name)
{
	static const char *const only[] = { "quant", "save_input", "quant_storage", "double_quant",
					    "compute_dtype", "prepare_kbit" };

	for (size_t i = 0; i < sizeof only / sizeof only[0]; i++)
		if (!strcmp(only[i], name))
			return true;
	return false;
}

/* PEFT's target_modules="all-linear": every Linear but the output head. */
static bool all_linear(struct value v)
{
	return (v.kind == VAL_SYMBOL && !strcmp(v.str, "all_linear")) ||
	       (v.kind == VAL_STRING && !strcmp(v.str, "all-linear"));
}

static bool lora_arg(struct eval *ev, const char *call, const char *name, struct value v)
{
	const struct field_spec *s = check_spec_find(lora_args, name);
	char what[96];

	if (!s || (qlora_only(name) && strcmp(call, "qlora"))) {
		const char *syn = lora_synonym(name);
		struct diag *d = eval_error(ev, DIAG_BAD_ARGUMENT, v.origin, "%s() has no argument '%s'", call, name);

		if (syn || !s)
			diag_note(d, NO_LOC, "%s() takes r, alpha, targets, dropout, dtype, modules_to_save, "
				  "use_dora, use_rslora, adapters%s%s%s%s", call,
				  strcmp(call, "qlora") ? "" : ", quant, save_input, quant_storage, double_quant, "
				  "compute_dtype, prepare_kbit", syn ? "; did you mean '" : "",
				  syn ? syn : "", syn ? "'?" : "");
		else
			diag_note(d, NO_LOC, "'%s' is an argument of qlora(...)", name);
		return false;
	}
	if (!strcmp(name, "targets") && all_linear(v))
		return true;
	snprintf(what, sizeof what, "'%s' of %s()", name, call);
	return check_value_type(ev, v, s->type, what) && check_range(ev, v, check_range_of(lora_ranges, name), what);
}

/* FSDP flattens a unit's parameters into one tensor of one dtype (torch
 * FSDP _validate_tensors_to_flatten: "Must flatten tensors with uniform
 * dtype"), so a quant_storage other than the weights' cannot be sharded.
 * Only an explicit one is checked: torchao's NF4 (torchtune) has none. */
static bool fsdp_storage_ok(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, "weights") : NULL;
	struct value qs, fs, w;

	if (!env_lookup(j->finetune.args, intern_cstr(ev->interner, "quant_storage"), &qs) ||
	    qs.kind != VAL_DTYPE || !f || !check_job_field(j, "fsdp", &fs) || fs.kind != VAL_SYMBOL ||
	    !strcmp(fs.str, "none"))
		return true;
	w = eval_expr(ev, NULL, f->value);
	if (w.kind != VAL_DTYPE || w.dtype == qs.dtype)
		return true;
	diag_note(eval_error(ev, DIAG_TYPE_MISMATCH, qs.origin, "FSDP flattens each unit's parameters into one "
			     "tensor of one dtype, but quant_storage = %s and the other weights are %s: use "
			     "quant_storage = %s", dtype_name(qs.dtype), dtype_name(w.dtype), dtype_name(w.dtype)),
		  fs.origin, "'fsdp' is set here");
	return false;
}

static bool check_finetune(struct eval *ev, const struct check_job *j)
{
	const struct value *ft = &j->finetune;
	struct value v;
	const char *name;
	bool ok = true;

	if (ft->kind != VAL_CALL)
		return true;
	for (unsigned i = 0; (name = env_name_at(ft->args, i, &v)); i++)
		ok &= lora_arg(ev, ft->str, name, v);
	return ok && fsdp_storage_ok(ev, j);
}

static void bind(struct eval *ev, struct env *e, const char *name, struct value v)
{
	v.label = name;
	env_bind(e, intern_cstr(ev->interner, name), v);
}

static struct value sym_key(struct eval *ev, const struct check_job *j, const char *key, const char *def)
{
	struct value v;

	if (!check_job_field(j, key, &v))
		v = val_symbol(ev, def, j->decl->name_loc);
	return v;
}

/* An optional count of the parallel record that must be at least 1. */
static bool group_key(struct eval *ev, struct check_job *j, const char *key, uint64_t *u, struct value *v)
{
	*u = 0;
	if (!check_job_field(j, key, v) || v->kind != VAL_NUM || v->unknown)
		return false;
	eval_to_u64(ev, *v, key, u);
	if (*u == 0) {
		eval_error(ev, DIAG_BAD_SHAPE, v->loc, "'%s' must be at least 1", key);
		j->ok = false;
	}
	return *u != 0;
}

/* zero = 1..3 or an fsdp strategy that shards: only these have shard groups. */
static bool sharded_mode(const struct check_job *j)
{
	struct value z, f;
	uint64_t u = 0;

	if (check_job_field(j, "zero", &z) && z.kind == VAL_NUM && num_to_u64(z.num, &u) && u >= 1)
		return true;
	return check_job_field(j, "fsdp", &f) && f.kind == VAL_SYMBOL &&
	       (!strcmp(f.str, "full_shard") || !strcmp(f.str, "shard_grad_op") || !strcmp(f.str, "hybrid_shard"));
}

/* dp = dp_shard x dp_replicate (torchtitan's names): the dp ranks of one shard
 * group, and how many such groups replicate. Returns dp_shard; as memory.c,
 * hybrid_shard defaults to the dp ranks of one node, per / (tp x cp). */
static uint64_t dp_shard_key(struct eval *ev, struct check_job *j, uint64_t dp, uint64_t per,
			     uint64_t node_mp)
{
	struct value sv, rv, f;
	uint64_t s, r, sr = 0;
	bool has_s = group_key(ev, j, "parallel.dp_shard", &s, &sv);
	bool has_r = group_key(ev, j, "parallel.dp_replicate", &r, &rv);
	const char *bad = NULL;

	if (has_s && has_r && (__builtin_mul_overflow(s, r, &sr) || sr != dp))
		bad = "dp_shard x dp_replicate";
	else if ((has_s && dp % s) || (has_r && dp % r))
		bad = has_s && dp % s ? "dp_shard" : "dp_replicate";
	if (bad) {
		struct diag *d = eval_error(ev, DIAG_NOT_DIVISIBLE, has_s ? sv.loc : rv.loc,
					    "%s = %llu does not %s dp = %llu", bad,
					    (unsigned long long)(has_s && has_r ? sr : has_s && dp % s ? s : r),
					    has_s && has_r ? "equal" : "divide", (unsigned long long)dp);

		diag_note(d, j->cluster.loc, "dp is the GPUs of the cluster over tp x pp x cp");
		j->ok = false;
		return dp;
	}
	s = has_s ? s : has_r ? dp / r : dp;
	if (!has_s && !has_r && check_job_field(j, "fsdp", &f) && f.kind == VAL_SYMBOL &&
	    !strcmp(f.str, "hybrid_shard") && per && per / node_mp < dp)
		s = per / node_mp ? per / node_mp : 1;
	if ((has_s || has_r) && s < dp && !sharded_mode(j)) {
		eval_error(ev, DIAG_BAD_LAYOUT, has_s ? sv.loc : rv.loc,
			   "'%s' asks for shard groups of %llu of the %llu dp ranks, but nothing is "
			   "sharded: set zero = 1, 2 or 3 or fsdp = full_shard, shard_grad_op or hybrid_shard",
			   has_s ? "dp_shard" : "dp_replicate", (unsigned long long)s, (unsigned long long)dp);
		j->ok = false;
	}
	return s;
}

/* Experts are laid out over dp_shard x cp x tp as ep x etp x the expert data
 * parallel group (Megatron-Core expert_data_parallel_size, torchtitan
 * dp_shard_mod_ep): that group must be whole. etp defaults to tp. */
static void expert_layout(struct eval *ev, struct check_job *j, struct env *e, uint64_t shard_cp_tp,
			  struct value tp, struct value ep)
{
	struct value etp;
	uint64_t x = 1, t = 1, xt = 0;
	bool has_t = group_key(ev, j, "parallel.etp", &t, &etp);

	eval_to_u64(ev, ep, "ep", &x);
	if (!has_t)
		eval_to_u64(ev, tp, "tp", &t);
	if (x && t && (__builtin_mul_overflow(x, t, &xt) || shard_cp_tp % xt)) {
		struct diag *d = eval_error(ev, DIAG_NOT_DIVISIBLE, x > 1 || !has_t ? ep.loc : etp.loc,
					    "ep x etp = %llu does not divide dp_shard x cp x tp = %llu",
					    (unsigned long long)xt, (unsigned long long)shard_cp_tp);

		diag_note(d, NO_LOC, "the expert data parallel group is dp_shard x cp x tp / (ep x etp); "
			  "etp is tp unless set: lower ep or etp");
		j->ok = false;
	}
	bind(ev, e, "etp", has_t ? etp : tp);
}

static void layout_not_divisible(struct eval *ev, struct check_job *j, struct loc at, uint64_t mp,
				 uint64_t total)
{
	char prod[32] = "more than 2^64";	/* UINT64_MAX: the product overflowed */
	struct diag *g;

	if (mp != UINT64_MAX)
		snprintf(prod, sizeof prod, "%llu", (unsigned long long)mp);
	g = eval_error(ev, DIAG_NOT_DIVISIBLE, at, "tp x pp x cp = %s does not divide the %llu GPUs of the cluster",
		       prod, (unsigned long long)total);
	diag_note(g, j->cluster.loc, "the cluster is set here");
	j->ok = false;
}

/* dp = gpus / (tp * pp * cp): the layout must divide the cluster. */
static void layout(struct eval *ev, struct check_job *j, struct env *e)
{
	struct value tp, pp, cp, ep, vp, spv, gpus;
	uint64_t t = count_key(ev, j, "parallel.tp", 1, &tp), p = count_key(ev, j, "parallel.pp", 1, &pp);
	uint64_t c = count_key(ev, j, "parallel.cp", 1, &cp);
	uint64_t total = 0, nodes = 0, per = 0;
	bool sp = false;

	count_key(ev, j, "parallel.ep", 1, &ep);
	count_key(ev, j, "parallel.vp", 1, &vp);
	if (check_job_field(j, "parallel.sequence_parallel", &spv))
		eval_to_bool(ev, spv, "sequence_parallel", &sp);
	if (j->cluster.kind == VAL_CLUSTER && num_to_u64(j->cluster.nodes, &nodes) &&
	    num_to_u64(j->cluster.gpus, &per))
		total = nodes * per;
	gpus = val_count(total, j->cluster.loc);
	/* degrees are >= 1 here: positive_keys() ran first; a product past
	 * 64 bits can divide no cluster */
	uint64_t mp;

	if (__builtin_mul_overflow(t, p, &mp) || __builtin_mul_overflow(mp, c, &mp))
		mp = UINT64_MAX;
	if (total && mp && total % mp) {
		layout_not_divisible(ev, j, t > 1 ? tp.loc : p > 1 ? pp.loc : cp.loc, mp, total);
		return;
	}
	uint64_t dp = total && mp ? total / mp : 1;

	expert_layout(ev, j, e, dp_shard_key(ev, j, dp, per, t * c) * c * t, tp, ep);
	bind(ev, e, "tp", tp);
	bind(ev, e, "pp", pp);
	bind(ev, e, "cp", cp);
	bind(ev, e, "ep", ep);
	bind(ev, e, "vp", vp);
	bind(ev, e, "sp", sp ? tp : val_count(1, j->decl->name_loc));
	bind(ev, e, "dp", val_count(dp, gpus.loc));
}

static struct value compute_dtype(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, "compute") : NULL;

	return f ? eval_expr(ev, NULL, f->value) : (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("bf16") };
}

/* autocast: the policy keeps a low-precision weight cache, i.e. fp32
 * weights computed under torch.autocast (layers save fp32 where autocast
 * runs an op in fp32). */
static bool autocast_policy(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, "cast_cache") : NULL;

	return f && eval_expr(ev, NULL, f->value).kind == VAL_DTYPE;
}

/* torch.compile of one component (torchtitan compile.components: "model",
 * the transformer blocks; "loss"): compile = true, and the component in
 * compile_components, whose default is both. */
static bool compiled(const struct check_job *j, const char *component)
{
	struct value c, l;

	if (!check_job_field(j, "compile", &c) || c.kind != VAL_BOOL || !c.b)
		return false;
	if (!check_job_field(j, "compile_components", &l) || l.kind != VAL_LIST)
		return true;
	for (unsigned i = 0; i < l.nitems; i++) {
		const char *w = list_word(&l.items[i]);

		if (w && !strcmp(w, component))
			return true;
	}
	return false;
}

static struct value compile_value(const struct check_job *j, const char *component)
{
	return (struct value){ .kind = VAL_BOOL, .b = compiled(j, component), .loc = j->decl->name_loc,
			       .origin = j->decl->name_loc };
}

/* ---- hardware capabilities (issue 17) ---- */

/* The GPU's compute_capability (8.0 for sm80); 0 when the record has none,
 * so a user GPU without the field is never warned about. */
static double compute_capability(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->cluster.kind == VAL_CLUSTER && j->cluster.decl ?
		eval_record_field(ev->scope, j->cluster.decl, "compute_capability") : NULL;
	struct value v = f ? eval_expr(ev, NULL, f->value) : val_error(NO_LOC);

	return v.kind == VAL_NUM && !v.unknown ? num_to_double(v.num) : 0.0;
}

/* A precision field (compute, linear_input) in a dtype the GPU's tensor
 * cores lack: bf16 before sm80 (torch.cuda.is_bf16_supported() is False,
 * matmuls are emulated), fp8 before sm89 (no fp8 GEMM in cuBLASLt/TE). */
static void dtype_capability(struct eval *ev, const struct check_job *j, double cc, const char *field)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, field) : NULL;
	struct value v = f ? eval_expr(ev, NULL, f->value) : val_error(NO_LOC);
	const char *name = v.kind == VAL_DTYPE ? dtype_name(v.dtype) : "";
	bool fp8 = !strncmp(name, "fp8", 3) || !strcmp(name, "mxfp8");
	double need = !strcmp(name, "bf16") ? 8.0 : fp8 ? 8.9 : 0.0;

	if (!need || cc >= need)
		return;
	struct diag *d = eval_error(ev, DIAG_UNSUPPORTED_DTYPE, key_loc(j, "precision"),
				    "%s %s %s, which needs compute capability %.1f (%s) or newer; "
				    "%s has %.1f", j->precision.decl->name,
				    strcmp(field, "compute") ? "runs its linear layers in" : "computes in", name, need,
				    fp8 ? "Ada, Hopper" : "Ampere", j->cluster.decl->name, cc);

	diag_note(d, NO_LOC, "%s", fp8 ? "the memory prediction assumes fp8 GEMMs; use bf16_mixed on this GPU"
		  : "the GPU emulates bf16 without tensor cores, if at all; use fp16_mixed (fp16 with loss scaling)");
}

/* `attention = flash` on a GPU before sm80: FlashAttention-2 refuses it. */
static void kernel_capability(struct eval *ev, const struct check_job *j, double cc)
{
	if (cc >= 8.0 || !sym_is(j, "attention", "flash"))
		return;
	diag_note(eval_error(ev, DIAG_UNSUPPORTED_KERNEL, key_loc(j, "attention"),
			     "FlashAttention-2 needs compute capability 8.0 (Ampere) or newer; %s has %.1f",
			     j->cluster.decl->name, cc),
		  NO_LOC, "PyTorch's scaled_dot_product_attention falls back to its memory-efficient kernel, "
		  "which keeps the same O(seq_len) memory, so the prediction stands; the flash_attn package will not run");
}

static void check_capabilities(struct eval *ev, const struct check_job *j)
{
	double cc = compute_capability(ev, j);

	if (cc <= 0.0)
		return;
	dtype_capability(ev, j, cc, "compute");
	dtype_capability(ev, j, cc, "linear_input");
	check_fp8_capability(ev, j, cc);
	kernel_capability(ev, j, cc);
}

static struct env *job_bindings(struct eval *ev, struct check_job *j)
{
	struct env *e = env_new(ev, NULL);
	struct value mb, sl, tl;

	count_key(ev, j, "micro_batch", 1, &mb);
	count_key(ev, j, "seq_len", 1, &sl);
	/* the decoder (target) length of encoder-decoder models: seq_len unless set */
	if (!check_job_field(j, "target_len", &tl))
		tl = sl;
	bind(ev, e, "batch", mb);
	bind(ev, e, "seq", sl);
	bind(ev, e, "tgt", tl);
	layout(ev, j, e);
	bind(ev, e, "act", compute_dtype(ev, j));
	bind(ev, e, "attention", sym_key(ev, j, "attention", "flash"));
	bind(ev, e, "checkpoint", sym_key(ev, j, "checkpoint", "none"));
	bind(ev, e, "kernels", sym_key(ev, j, "kernels", "hf"));
	bind(ev, e, "loss", sym_key(ev, j, "loss", "standard"));
	bind(ev, e, "compile", compile_value(j, "model"));
	bind(ev, e, "compile_loss", compile_value(j, "loss"));
	bind(ev, e, "cp_comm", sym_key(ev, j, "parallel.cp_comm_type", "allgather"));
	bind(ev, e, "autocast", (struct value){ .kind = VAL_BOOL, .b = autocast_policy(ev, j),
						.loc = j->decl->name_loc, .origin = j->decl->name_loc });
	return e;
}

static void job_tensor(void *ctx, const struct walk_tensor *t)
{
	struct check_model *m = ctx;

	check_tensor_attrs(m->ev, t);
	check_model_tensor(m, t);
}

static void job_repeat_enter(void *ctx, const struct stmt *s, struct value count)
{
	(void)s;
	check_model_repeat_enter(ctx, count);
}

static void job_repeat_leave(void *ctx, const struct stmt *s)
{
	(void)s;
	check_model_repeat_leave(ctx);
}

/* Walk the model under the job; then what the job asks of the model. */
static void walk_job(struct eval *ev, struct check_job *j)
{
	static const struct walk_ops ops = { .tensor = job_tensor, .repeat_enter = job_repeat_enter,
					     .repeat_leave = job_repeat_leave };
	struct check_model m = { .ev = ev };
	unsigned before = diag_error_count(ev->diag);
	struct value pp, vp, sched;

	ev->warn_job = j->bindings;
	ev->warn_train = j->decl;
	eval_walk(ev, j->model, j->bindings, &ops, &m);
	ev->warn_job = NULL;
	ev->warn_train = NULL;
	if (diag_error_count(ev->diag) != before)
		return;
	count_key(ev, j, "parallel.pp", 1, &pp);
	count_key(ev, j, "parallel.vp", 1, &vp);
	bool interleaved = check_job_field(j, "parallel.schedule", &sched) && sched.kind == VAL_STRING &&
			   !strcmp(sched.str, "interleaved");

	/* an uneven or accounted split has Megatron-Core's rules, and
	 * DualPipeV's 2 pp stages their own, which the analyzer checks
	 * (mem_pipeline.c mem_pp_split) at the same lines */
	struct value k;
	bool uneven = sym_is(j, "parallel.schedule", "dualpipev") ||
		      check_job_field(j, "parallel.first_stage_layers", &k) ||
		      check_job_field(j, "parallel.last_stage_layers", &k) ||
		      check_job_field(j, "parallel.account_for_embedding", &k) ||
		      check_job_field(j, "parallel.account_for_loss", &k);

	if (uneven || check_model_split(ev, &m, j, pp, vp, interleaved))
		check_model_names(ev, &m, j);
	/* transformer_config.py: "CPU offloading can be done only for layers
	 * less than num_layers" (the last layer is never offloaded) */
	uint64_t off = count_key(ev, j, "megatron.cpu_offloading_num_layers", 0, &k);

	if (off && m.body_known && m.have_body && off >= m.body)
		eval_error(ev, DIAG_OUT_OF_RANGE, k.origin, "cpu_offloading_num_layers = %llu must be "
			   "less than the model's %llu layers (Megatron-Core offloads all but the last)",
			   (unsigned long long)off, (unsigned long long)m.body);
}

/* ---- `train b : a`: a base job and its variants ---- */

static struct field *copy_field(struct arena *a, const struct field *f)
{
	struct field *c = ARENA_NEW(a, struct field);

	*c = *f;
	c->next = NULL;
	return c;
}

/* @base's keys, then @own's: a key of @own replaces the base's, and a
 * nested record (`parallel { }`) merges key by key. */
static struct field *merge_fields(struct arena *a, const struct field *base, const struct field *own)
{
	struct field *head = NULL, **tail = &head;

	for (const struct field *f = base; f; f = f->next, tail = &(*tail)->next)
		*tail = copy_field(a, f);
	for (const struct field *f = own; f; f = f->next) {
		struct field *m = head;

		while (m && strcmp(m->name, f->name))
			m = m->next;
		if (!m) {
			*tail = copy_field(a, f);
			tail = &(*tail)->next;
		} else if (m->sub && f->sub) {
			m->sub = merge_fields(a, m->sub, f->sub);
		} else {
			struct field *next = m->next;

			*m = *f;
			m->next = next;
		}
	}
	return head;
}

/* The chain b, a, ... up to a block with no base; false (reported) if a
 * base is unknown or the chain comes back to a block in it. */
static bool base_chain(struct eval *ev, const struct decl *d, const struct decl **chain, unsigned *n,
		       unsigned cap)
{
	for (*n = 0; d; d = d->record.base ? scope_find_kind_in(ev->scope, d->record.base, DECL_TRAIN,
								 d->record.base_loc.file) : NULL) {
		for (unsigned i = 0; i < *n; i++)
			if (chain[i] == d) {
				struct diag *g = eval_error(ev, DIAG_DEFINITION_CYCLE, chain[i]->record.base_loc,
							    "train block '%s' derives from itself", chain[i]->name);

				for (unsigned k = i + 1; k < *n; k++)
					diag_note(g, chain[k]->record.base_loc, "'%s' derives from '%s'",
						  chain[k]->name, chain[k]->record.base);
				return false;
			}
		if (*n == cap) {
			eval_error(ev, DIAG_DEFINITION_CYCLE, chain[0]->record.base_loc,
				   "train block '%s' derives through more than %u blocks", chain[0]->name, cap);
			return false;
		}
		chain[(*n)++] = d;
		if (d->record.base && !scope_find_kind_in(ev->scope, d->record.base, DECL_TRAIN,
							  d->record.base_loc.file)) {
			struct diag *g = eval_error(ev, DIAG_UNDEFINED_NAME, d->record.base_loc,
						    "no train block named '%s' to derive from", d->record.base);

			eval_note_undefined(ev, g, d->record.base, DECL_TRAIN);
			return false;
		}
	}
	return true;
}

/* The keys of @d, its bases' inherited; NULL with an error reported. */
static const struct field *train_block(struct eval *ev, const struct decl *d, bool *ok)
{
	const struct decl *chain[64];
	unsigned n = 0;
	const struct field *f = NULL;

	if (!d->record.base)
		return d->record.fields;
	if (!base_chain(ev, d, chain, &n, sizeof chain / sizeof chain[0])) {
		*ok = false;
		return NULL;
	}
	while (n-- > 0)
		f = merge_fields(ev->arena, f, chain[n]->record.fields);
	return f;
}

struct check_job *check_train(struct eval *ev, const struct decl *d)
{
	struct check_job *j = ARENA_NEW(ev->arena, struct check_job);
	unsigned before = diag_error_count(ev->diag);

	j->decl = d;
	j->ok = true;
	for (const struct field *f = d->record.fields; f; f = f->next)
		if (check_duplicate_field(ev, d->record.fields, f))
			j->ok = false;
	j->block = j->ok ? train_block(ev, d, &j->ok) : NULL;
	for (const struct field *f = j->block; f; f = f->next)
		train_field(ev, j, f, "", train_fields);
	char missing[256] = "";

	for (const struct field_spec *s = train_fields; s->name; s++) {
		struct value v;

		if (s->required && !check_job_field(j, s->name, &v) && j->ok)
			check_list_add(missing, sizeof missing, s->name);
	}
	if (missing[0])
		eval_error(ev, DIAG_MISSING_FIELD, d->name_loc, "train block '%s' has no %s", d->name, missing);
	check_job_field(j, "model", &j->model);
	check_job_field(j, "cluster", &j->cluster);
	check_job_field(j, "precision", &j->precision);
	check_job_field(j, "optimizer", &j->optimizer);
	if (!check_job_field(j, "finetune", &j->finetune))
		j->finetune = val_symbol(ev, "full", d->name_loc);
	bool keys_ok = positive_keys(ev, j) & cluster_ok(ev, j) & sharding_ok(ev, j) & check_finetune(ev, j) &
		       checkpoint_ok(ev, j) & check_fp8_ok(ev, j) & data_ok(ev, j);

	if (diag_error_count(ev->diag) == before && keys_ok) {
		check_capabilities(ev, j);
		j->bindings = job_bindings(ev, j);
		if (diag_error_count(ev->diag) == before)
			walk_job(ev, j);
	}
	j->ok = diag_error_count(ev->diag) == before;
	return j;
}
