/* SPDX-License-Identifier: MIT */
/*
 * build_job.c - the job from the train block and its GPU: layout, sharding,
 * buffers and overheads, around the walk that fills the blocks
 * (build_blocks.c).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/build_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/intern.h"
#include "lang/scope.h"

/* ---- reading the train block ---- */

static uint64_t bound_u64(struct bld *b, const char *name, uint64_t dflt)
{
	struct value v;
	uint64_t u = dflt;

	if (env_lookup(b->bindings, bld_intern(b, name), &v) && v.kind == VAL_NUM && !v.unknown)
		num_to_u64(v.num, &u);
	return u;
}

static const char *bound_sym(struct bld *b, const char *name, const char *dflt)
{
	struct value v;

	if (env_lookup(b->bindings, bld_intern(b, name), &v) && v.kind == VAL_SYMBOL)
		return v.str;
	return dflt;
}

static bool key(const struct bld *b, const char *k, struct value *v)
{
	return check_job_field(b->cj, k, v);
}

/* checkpoint_saves = [mm, sdpa]: a save list of one's own, every output of
 * its ops kept; without it torchtitan's list and every-other-mm rule. */
static void sac_policy(struct bld *b, struct mem_job *j)
{
	struct value v;

	j->sac_ops = MEM_SAC_MM | MEM_SAC_SDPA;
	j->sac_every_other_mm = true;
	if (!key(b, "checkpoint_saves", &v) || v.kind != VAL_LIST)
		return;
	j->sac_ops = 0;
	j->sac_every_other_mm = false;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];

		if (it->kind != VAL_SYMBOL && it->kind != VAL_STRING)
			continue;
		j->sac_ops |= !strcmp(it->str, "mm") ? MEM_SAC_MM : !strcmp(it->str, "sdpa") ? MEM_SAC_SDPA : 0;
	}
}

static uint64_t key_u64(struct bld *b, const char *k, uint64_t dflt)
{
	struct value v;
	uint64_t u = dflt;

	if (key(b, k, &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &u);
	return u;
}

static bool key_bool(struct bld *b, const char *k, bool dflt)
{
	struct value v;

	return key(b, k, &v) && v.kind == VAL_BOOL ? v.b : dflt;
}

static const char *key_sym(struct bld *b, const char *k, const char *dflt)
{
	struct value v;

	return key(b, k, &v) && (v.kind == VAL_SYMBOL || v.kind == VAL_STRING || v.kind == VAL_NONE) ? v.str : dflt;
}

static struct loc key_loc(struct bld *b, const char *k)
{
	struct value v;

	return key(b, k, &v) ? v.origin : NO_LOC;
}

/* A field of the job's GPU (following `gpu X : Base`), in whole units. */
bool build_gpu_u64(struct eval *ev, const struct decl *gpu, const char *field, uint64_t *out)
{
	const struct field *f = eval_record_field(eval_scope(ev), gpu, field);
	struct value v = f ? eval_expr(ev, NULL, f->value) : val_error(NO_LOC);

	return v.kind == VAL_NUM && !v.unknown && num_to_u64(num_floor(v.num), out);
}

static bool gpu_u64(struct bld *b, const char *field, uint64_t *out)
{
	return build_gpu_u64(b->ev, b->cj->cluster.decl, field, out);
}

static uint64_t overhead(struct bld *b, const char *field, uint64_t dflt)
{
	char k[64];
	uint64_t u = dflt;

	gpu_u64(b, field, &u);
	snprintf(k, sizeof k, "overhead.%s", field);
	return key_u64(b, k, u);
}

/* ---- the layout ---- */

static enum mem_sharding sharding(struct bld *b, int zero, uint32_t dp, const char **name)
{
	const char *fsdp = key_sym(b, "fsdp", b->fsdp2 ? "full_shard" : "none");
	static const struct { const char *sym; enum mem_sharding s; const char *name; } f[] = {
		{ "full_shard", MEM_SHARD_FSDP_FULL, "FSDP full_shard" },
		{ "shard_grad_op", MEM_SHARD_FSDP_GRAD_OP, "FSDP shard_grad_op" },
		{ "hybrid_shard", MEM_SHARD_FSDP_HYBRID, "FSDP hybrid_shard" },
		{ "no_shard", MEM_SHARD_FSDP_NO_SHARD, "FSDP no_shard" },
	};

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!strcmp(fsdp, f[i].sym))
			return *name = f[i].name, f[i].s;
	if (zero >= 1 && zero <= 3) {
		static const char *const zn[] = { "", "ZeRO-1", "ZeRO-2", "ZeRO-3" };

		*name = zn[zero];
		return zero == 1 ? MEM_SHARD_ZERO1 : zero == 2 ? MEM_SHARD_ZERO2 : MEM_SHARD_ZERO3;
	}
	*name = dp > 1 ? "DDP" : "none";
	return dp > 1 ? MEM_SHARD_DDP : MEM_SHARD_NONE;
}

/* fsdp2 { } (FSDP2's fully_shard, docs/language.md): MixedPrecisionPolicy
 * dtypes for the walk; read before the model is walked. */
static bool fsdp2_record(struct bld *b)
{
	static const char *const keys[] = { "fsdp2.reshard_after_forward", "fsdp2.reshard_after_forward_policy",
					    "fsdp2.param_dtype", "fsdp2.reduce_dtype",
					    "fsdp2.requires_gradient_sync", "fsdp2.root_unit" };
	struct value v;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (key(b, keys[i], &v))
			return true;
	return false;
}

static void fsdp2_setup(struct bld *b)
{
	struct value v;

	b->fsdp2 = fsdp2_record(b);
	if (key(b, "fsdp2.param_dtype", &v) && v.kind == VAL_DTYPE)
		b->fsdp_param = v.dtype;
	if (key(b, "fsdp2.reduce_dtype", &v) && v.kind == VAL_DTYPE)
		b->fsdp_reduce = v.dtype;
}

__attribute__((format(printf, 4, 5)))
static bool bld_error(struct bld *b, enum diag_id id, struct loc at, const char *fmt, ...);

/* reshard_after_forward as a group size (mem_job.fsdp_reshard_to): True
 * 0, False 1, an int N a factor of the shard group (fully_shard's
 * _get_post_forward_mesh_info; N = 1 is False, N = the group is True).
 * torchtitan's policy: "default" is False under PP, True otherwise
 * (get_fsdp_reshard_after_forward_policy). */
static bool fsdp2_reshard(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint32_t n = mem_shard_group(j);
	uint64_t k = 0;
	char buf[64] = "?";
	const char *pol = key_sym(b, "fsdp2.reshard_after_forward_policy", "");

	j->fsdp_reshard_to = !strcmp(pol, "never") || (!strcmp(pol, "default") && j->pp > 1) ? 1 : 0;
	if (!key(b, "fsdp2.reshard_after_forward", &v))
		return true;
	if (v.kind == VAL_BOOL) {
		j->fsdp_reshard_to = v.b ? 0 : 1;
		return true;
	}
	if (v.kind == VAL_NUM)
		num_format(v.num, buf, sizeof buf, 0);
	if (v.kind != VAL_NUM || !num_to_u64(v.num, &k) || !k || k > n || n % k)
		return bld_error(b, DIAG_NOT_DIVISIBLE, v.origin, "reshard_after_forward = %s must be a factor "
				 "of the shard group's %u ranks (dp_shard x cp)", buf, (unsigned)n);
	j->fsdp_reshard_to = k == n ? 0 : (uint32_t)k;
	return true;
}

/* The FSDP2 job's label: "FSDP2, reshard_after_forward=False, gradients
 * synced at the last micro-batch". */
static bool fsdp2_layout(struct bld *b, struct mem_job *j, const char **name)
{
	if (!b->fsdp2)
		return true;
	if (!fsdp2_reshard(b, j))
		return false;
	/* stage.py backward_maybe_with_nosync: every micro-batch of a stage
	 * runs with set_requires_gradient_sync(False) and
	 * set_reshard_after_backward(False); post_backward runs after the last */
	j->fsdp_keep_after_backward = j->pp > 1;
	/* a stage FSDP2 wraps is a torch.distributed.pipelining PipelineStage */
	j->pp_stage_buffers = j->pp > 1;
	j->fsdp_split_root = !strcmp(key_sym(b, "fsdp2.root_unit", "model"), "split");
	j->fsdp_no_sync = j->pp > 1 || (!key_bool(b, "fsdp2.requires_gradient_sync", true) &&
					j->micro_batches > 1);
	*name = arena_printf(b->arena, "FSDP2%s%s%s", j->sharding == MEM_SHARD_FSDP_HYBRID ? " (HSDP)" : "",
			     j->fsdp_reshard_to == 1 ? ", reshard_after_forward=False" :
			     j->fsdp_reshard_to ? arena_printf(b->arena, ", reshard_after_forward=%u",
							       (unsigned)j->fsdp_reshard_to) : "",
			     j->fsdp_no_sync ? ", gradients synced at the last micro-batch" : "");
	return true;
}

/* megatron { moe_token_dispatcher_type = "flex" }: MoEFlexTokenDispatcher
 * with its default backend, DeepEP, over the tp x ep group; fused_a2a.py
 * get_hidden_bytes is a token's hidden x max(element size, 2). DeepEP
 * asserts on a group size its config table lacks and on an odd SM count
 * (Buffer.set_num_sms). */
static bool deepep_layout(struct bld *b, struct mem_job *j)
{
	struct value t, n;
	bool flex = key(b, "megatron.moe_token_dispatcher_type", &t) && t.kind == VAL_SYMBOL &&
		    !strcmp(t.str, "flex");
	bool sms = key(b, "megatron.moe_flex_dispatcher_num_sms", &n);
	uint64_t elem = b->act && b->act->bits > 16 ? b->act->bits / 8 : 2;

	if (sms && !flex)
		return bld_error(b, DIAG_IGNORED_SETTING, n.origin.file ? n.origin : n.loc,
				 "moe_flex_dispatcher_num_sms sizes DeepEP's buffer, which only "
				 "moe_token_dispatcher_type = flex uses");
	if (!flex)
		return true;
	if (!b->experts)
		return bld_error(b, DIAG_IGNORED_SETTING, t.origin.file ? t.origin : t.loc,
				 "the flex dispatcher routes tokens to experts, and this model has none");
	j->deepep_num_sms = (uint32_t)key_u64(b, "megatron.moe_flex_dispatcher_num_sms", 20);
	if (j->deepep_num_sms % 2)
		return bld_error(b, DIAG_OUT_OF_RANGE, n.origin.file ? n.origin : n.loc,
				 "DeepEP's SM count must be even ('The SM count must be even'); "
				 "moe_flex_dispatcher_num_sms = %u", (unsigned)j->deepep_num_sms);
	if (!mem_comm_deepep_supported(mem_comm_deepep_ranks(j)))
		return bld_error(b, DIAG_BAD_LAYOUT, t.origin.file ? t.origin : t.loc,
				 "DeepEP has no dispatch config for a tp x ep group of %u ranks "
				 "(Buffer.get_dispatch_config: 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144 "
				 "or 160)", (unsigned)mem_comm_deepep_ranks(j));
	return bld_mul(b, b->expert_width, elem, &j->deepep_hidden_bytes, "DeepEP's bytes per token");
}

static enum mem_schedule schedule(struct bld *b)
{
	const char *s = key_sym(b, "parallel.schedule", "1f1b");

	return !strcmp(s, "interleaved") ? MEM_PP_INTERLEAVED : !strcmp(s, "gpipe") ? MEM_PP_GPIPE :
	       !strcmp(s, "zb_h1") ? MEM_PP_ZB_H1 : !strcmp(s, "zb_h2") ? MEM_PP_ZB_H2 :
	       !strcmp(s, "dualpipe") ? MEM_PP_DUALPIPE : !strcmp(s, "dualpipev") ? MEM_PP_DUALPIPEV :
	       MEM_PP_1F1B;
}

/* Megatron-Core's DDP: the job sets a megatron { } key, or precision megatron_bf16
 * where Megatron's DDP can be what wraps the model: not under torch FSDP or
 * DeepSpeed ZeRO-2/3, whose engines own the gradients (a torchtitan job may
 * borrow megatron_bf16 for FSDP2's bf16/fp32 dtypes). */
static bool megatron_record(struct bld *b)
{
	static const char *const keys[] = { "megatron.distributed_optimizer", "megatron.grad_reduce_in_bf16",
					    "megatron.overlap_grad_reduce", "megatron.overlap_param_gather",
					    "megatron.bucket_size", "megatron.recompute_modules",
					    "megatron.cpu_offloading_num_layers", "megatron.cpu_offloading_activations",
					    "megatron.moe_token_dispatcher_type", "megatron.moe_flex_dispatcher_num_sms" };
	struct value v;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (key(b, keys[i], &v))
			return true;
	return false;
}

static bool megatron_job(struct bld *b, int zero)
{
	if (megatron_record(b))
		return true;
	return b->cj->precision.kind == VAL_DECL && !strcmp(b->cj->precision.decl->name, "megatron_bf16") &&
	       !strcmp(key_sym(b, "fsdp", "none"), "none") && !fsdp2_record(b) && zero <= 1;
}

/* megatron { }: the distributed optimizer is ZeRO-1 (zero = 1 unless the job
 * says zero); grad_reduce_in_bf16 makes the grad buffer bf16 (memory-model.md
 * "Megatron-Core"). */
static int megatron_setup(struct bld *b, int zero)
{
	struct value v;

	if (!megatron_record(b))
		return zero;
	if (key_bool(b, "megatron.grad_reduce_in_bf16", false))
		b->grads = dtype_find("bf16");
	if (!key(b, "zero", &v) && key_bool(b, "megatron.distributed_optimizer", false))
		zero = 1;
	return zero;
}

/* The dp ranks of one shard group: parallel.dp_shard, or dp over
 * parallel.dp_replicate, else 0 (memory.c's default). False when a what-if
 * tp left a dp that the replicas no longer divide. */
static bool dp_shard(struct bld *b, struct mem_job *j)
{
	uint64_t s = key_u64(b, "parallel.dp_shard", 0), r = key_u64(b, "parallel.dp_replicate", 0);

	if (!s && r) {
		if (j->dp % r)
			return false;
		s = j->dp / r;
	}
	if (s > UINT32_MAX)
		return false;
	j->dp_shard = (uint32_t)s;
	return true;
}

/* "ZeRO-3 over 8 ranks, experts over 1": the groups, where they are not dp. */
static const char *shard_label(struct bld *b, const struct mem_job *j, const char *name)
{
	uint32_t n = mem_shard_group(j), e = mem_expert_group(j);
	uint32_t shard = n / (j->cp ? j->cp : 1), reps = shard ? j->dp / shard : 1;
	bool sharded = j->sharding != MEM_SHARD_NONE && j->sharding != MEM_SHARD_DDP &&
		       j->sharding != MEM_SHARD_FSDP_NO_SHARD;

	if (!sharded || !n || (n == j->dp && reps == 1 && (!b->experts || e == n)))
		return name;
	return arena_printf(b->arena, "%s over %u ranks%s%s", name, (unsigned)n,
			    reps > 1 ? arena_printf(b->arena, " x %u replicas", (unsigned)reps) : "",
			    b->experts && e != n ? arena_printf(b->arena, ", experts over %u", (unsigned)e) : "");
}

static bool layout(struct bld *b, struct mem_job *j, int zero)
{
	const char *shard_name;

	j->dp = (uint32_t)bound_u64(b, "dp", 1);
	j->tp = (uint32_t)bound_u64(b, "tp", 1);
	j->pp = (uint32_t)bound_u64(b, "pp", 1);
	j->cp = (uint32_t)bound_u64(b, "cp", 1);
	j->ep = (uint32_t)bound_u64(b, "ep", 1);
	j->vp = (uint32_t)bound_u64(b, "vp", 1);
	j->etp = (uint32_t)bound_u64(b, "etp", j->tp);
	uint64_t per = 0;

	num_to_u64(b->cj->cluster.gpus, &per);
	j->gpus_per_node = (uint32_t)per;
	j->schedule = schedule(b);
	j->first_stage_layers = key_u64(b, "parallel.first_stage_layers", 0);
	j->last_stage_layers = key_u64(b, "parallel.last_stage_layers", 0);
	j->pp_account_embedding = key_bool(b, "parallel.account_for_embedding", false);
	j->pp_account_loss = key_bool(b, "parallel.account_for_loss", false);
	j->micro_batches = key_u64(b, "grad_accum", 1);
	j->sharding = sharding(b, zero, j->dp, &shard_name);
	if (j->sharding == MEM_SHARD_ZERO1 && megatron_job(b, zero))
		shard_name = "distributed optimizer";
	if (!dp_shard(b, j) || !fsdp2_layout(b, j, &shard_name) || !deepep_layout(b, j))
		return false;
	b->out->rep.sharding = shard_label(b, j, shard_name);
	const char *ck = bound_sym(b, "checkpoint", "none");

	j->recompute = !strcmp(ck, "full") ? MEM_RECOMPUTE_FULL :
		       !strcmp(ck, "selective") ? MEM_RECOMPUTE_SELECTIVE :
		       !strcmp(ck, "selective_op") ? MEM_RECOMPUTE_SELECTIVE_OP : MEM_RECOMPUTE_NONE;
	b->out->rep.recompute = ck;
	b->out->full_recompute = j->recompute == MEM_RECOMPUTE_FULL;
	sac_policy(b, j);
	struct value m;

	j->recompute_every = key_u64(b, "checkpoint_every", 0);
	if (key(b, "recompute_method", &m) && m.kind == VAL_SYMBOL && !strcmp(m.str, "block"))
		j->recompute_first = key_u64(b, "recompute_num_layers", 0);
	return true;
}

/* A count key times an element size, blaming the key if it overflows. */
static uint64_t key_bytes(struct bld *b, const char *k, uint64_t dflt, uint64_t elem)
{
	struct value v;
	uint64_t n = 0;

	if (__builtin_mul_overflow(key_u64(b, k, dflt), elem, &n) && key(b, k, &v))
		bld_overflow(b, "a DeepSpeed bucket's byte count", &v);
	return n;
}

/* fsdp1 { }: FullyShardedDataParallel's arguments with torch's defaults
 * (use_orig_params=False, forward_prefetch=False, BACKWARD_PRE) and
 * no_sync() for accumulation; cpu_offload is CPUOffload(offload_params=True),
 * `offload { params = cpu }` (memory-model.md "FSDP1"). */
static void fsdp1_setup(struct bld *b, struct mem_job *j)
{
	static const char *const keys[] = { "fsdp1.use_orig_params", "fsdp1.no_sync",
					    "fsdp1.limit_all_gathers", "fsdp1.forward_prefetch",
					    "fsdp1.backward_prefetch", "fsdp1.cpu_offload",
					    "fsdp1.sync_module_states" };
	struct value v;

	for (const struct field *f = b->cj->decl->record.fields; f; f = f->next)
		j->fsdp1 |= !strcmp(f->name, "fsdp1");
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		j->fsdp1 |= key(b, keys[i], &v);
	j->fsdp1_orig_params = key_bool(b, "fsdp1.use_orig_params", false);
	j->fsdp1_no_sync = key_bool(b, "fsdp1.no_sync", false);
	j->fsdp1_forward_prefetch = key_bool(b, "fsdp1.forward_prefetch", false);
	j->fsdp1_backward_pre = !strcmp(key_sym(b, "fsdp1.backward_prefetch", "backward_pre"), "backward_pre");
	if (!j->fsdp1)
		j->fsdp1_backward_pre = false;
}

static void buffers(struct bld *b, struct mem_job *j, int zero)
{
	uint64_t gsz = bld_bytes(b, b->grads, 1), wsz = bld_bytes(b, b->weights, 1);
	const char *off_opt = key_sym(b, "offload.optimizer", "none");
	const char *off_par = key_sym(b, "offload.params", "none");

	fsdp1_setup(b, j);
	if (key_bool(b, "fsdp1.cpu_offload", false) && !strcmp(off_par, "none"))
		off_par = "cpu";

	bool mcore = megatron_job(b, zero);

	/* Megatron-Core (param_and_grad_buffer.py _ParamAndGradBuffer): one
	 * contiguous grad buffer (main_grad), allocated when DDP wraps the model
	 * and zeroed each step; its buckets are views of it: no gradient copy,
	 * no IPG bucket, gradients resident from the first micro-batch */
	j->grad_as_bucket_view = mcore || key_bool(b, "ddp.gradient_as_bucket_view", false);
	/* zero_grad(set_to_none=False) (PyTorch < 2.0 default, HF Trainer then):
	 * zeroed gradients stay allocated through forward (memory-model.md §5.1) */
	j->grads_persistent = mcore || !strcmp(key_sym(b, "zero_grad", "set_to_none"), "zeros");
	j->optimizer_in_backward = key_bool(b, "optimizer_in_backward", false);
	if (zero >= 1 && !mcore) {
		j->zero_reduce_bucket_bytes = key_bytes(b, "deepspeed.reduce_bucket_size", 500000000, gsz);
		j->overlap_comm = key_bool(b, "deepspeed.overlap_comm", zero == 3);
		j->zero_prefetch_bytes = key_bytes(b, "deepspeed.prefetch_bucket_size", 50000000, wsz);
	}
	j->offload_optimizer = strcmp(off_opt, "none") != 0;
	j->offload_params = strcmp(off_par, "none") != 0;
	j->offload_optimizer_nvme = !strcmp(off_opt, "nvme");
	/* FSDP CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy: the
	 * sharded grads go to the CPU with the params, so the optimizer steps
	 * there and its states live there (memory-model.md §7) */
	if (j->offload_params && j->sharding >= MEM_SHARD_FSDP_FULL && !j->offload_optimizer) {
		j->offload_optimizer = true;
		j->offload_optimizer_nvme = j->offload_params_nvme;
	}
	j->offload_params_nvme = !strcmp(off_par, "nvme");
	j->offload_activations = !strcmp(key_sym(b, "offload.activations", "none"), "cpu");
	if (key_bool(b, "megatron.cpu_offloading_activations", true))
		j->offload_first = key_u64(b, "megatron.cpu_offloading_num_layers", 0);
}

/* train.alloc (memory-model.md §5.4).  PyTorch refuses max_split_size_mb
 * <= 20 (kLargeBuffer); memc takes such a value as 20 MiB. */
static void alloc_conf(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint64_t mb = key_u64(b, "alloc.max_split_size_mb", 0);
	uint64_t div = key_u64(b, "alloc.roundup_power2_divisions", 0);

	bool conf = key(b, "alloc.max_split_size_mb", &v) ||
		    key(b, "alloc.roundup_power2_divisions", &v) ||
		    key(b, "alloc.garbage_collection_threshold", &v) ||
		    key(b, "alloc.expandable_segments", &v);

	/* a conf key means nothing without the replay: it turns it on */
	j->alloc_replay = key_bool(b, "alloc.replay", conf);
	j->alloc_expandable = key_bool(b, "alloc.expandable_segments", false);
	j->alloc_roundup_divisions = div > (1u << 30) ? 1u << 30 : (uint32_t)div;
	if (mb)
		j->alloc_max_split_bytes = mb < 20 ? 20ull << 20 : mb > (UINT64_MAX >> 20) ?
					   UINT64_MAX : mb << 20;
	if (key(b, "alloc.garbage_collection_threshold", &v) && v.kind == VAL_NUM)
		j->alloc_gc_threshold = num_to_double(v.num);
}

/* train.data (§5.4 "Batch shapes"): padding to the longest sample varies
 * the replay's step lengths from min_seq_len (default 1: nothing is known
 * of the dataset but the bound) to seq_len; a larger one is seq_len. */
static void data_shapes(struct bld *b, struct mem_job *j)
{
	uint64_t s = bound_u64(b, "seq", 1), m = key_u64(b, "data.min_seq_len", 1);

	if (strcmp(key_sym(b, "data.padding", "max_length"), "longest"))
		return;
	j->shape_seq_len = s;
	j->shape_min_seq_len = m < 1 ? 1 : m > s ? s : m;
}

/* The share q of `full` bytes at seq_len that is quadratic in it, from
 * `half` bytes at x = half length / seq_len: half = full ((1-q) x + q x^2).
 * A part that does not grow with seq (a decoder's tgt) comes out below 0:
 * taken as linear. */
static double quad_share(uint64_t full, uint64_t half, double x)
{
	double q;

	if (!full)
		return 0;
	q = ((double)half / (double)full - x) / (x * x - x);
	return q < 0 ? 0 : q > 1 ? 1 : q;
}

/* §5.4 "Batch shapes": which part of each layer's activations grows as
 * seq_len^2 (eager attention's scores, a.s^2) is found by building the job
 * again at half the length.  A half-length build that fails or is shaped
 * otherwise leaves every activation per token. */
static void shapes_split(struct eval *ev, struct arena *a, const struct check_job *cj,
			 const struct build_override *ov, struct mem_job *j)
{
	struct build_override h = ov ? *ov : (struct build_override){ .zero = -1 };
	struct build half;
	struct mem_quad *q;
	size_t n = 0;
	double x;

	h.seq = j->shape_seq_len / 2;
	x = (double)h.seq / (double)j->shape_seq_len;
	if (!build_job(ev, a, cj, &h, true, &half) || half.job.nblocks != j->nblocks)
		return;
	for (size_t i = 0; i < j->nblocks; i++) {
		if (half.job.blocks[i].nlayers != j->blocks[i].nlayers)
			return;
		n += j->blocks[i].nlayers;
	}
	q = ARENA_NEW_ARRAY(a, struct mem_quad, n ? n : 1);
	n = 0;
	for (size_t i = 0; i < j->nblocks; i++)
		for (size_t k = 0; k < j->blocks[i].nlayers; k++, n++) {
			const struct mem_layer *l = &j->blocks[i].layers[k], *hl = &half.job.blocks[i].layers[k];

			q[n].save = quad_share(l->saves_bytes, hl->saves_bytes, x);
			q[n].tfwd = quad_share(l->temp_fwd_bytes, hl->temp_fwd_bytes, x);
			q[n].tbwd = quad_share(l->temp_bwd_bytes, hl->temp_bwd_bytes, x);
		}
	j->shape_quad = q;
	j->shape_quad_n = n;
}

/* A count key, 0 if absent; the checker bounds it, memc clamps it. */
static uint32_t key_u32(struct bld *b, const char *k)
{
	uint64_t u = key_u64(b, k, 0);

	return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* NCCL's buffers from its own sizes (mem_comm.c): train.nccl in NCCL's
 * spelling; a flat figure per communicator only where one is written
 * (overhead.nccl, or a GPU's `nccl` when the job has no nccl record). */
static void nccl_conf(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint64_t flat = 0;
	bool rec = key(b, "nccl", &v);

	if (!rec)
		gpu_u64(b, "nccl", &flat);
	j->nccl_bytes_per_comm = key_u64(b, "overhead.nccl", flat);
	j->nccl.buffsize = key_u64(b, "nccl.buffsize", 0);
	j->nccl.ll_buffsize = key_u64(b, "nccl.ll_buffsize", 0);
	j->nccl.ll128_buffsize = key_u64(b, "nccl.ll128_buffsize", 0);
	j->nccl.nchannels = key_u32(b, "nccl.nchannels");
	j->nccl.nchannels_per_peer = key_u32(b, "nccl.nchannels_per_net_peer");
	j->nccl.nvls = key_bool(b, "nccl.nvls_enable", false);
	j->nccl.nvls_nchannels = key_u32(b, "nccl.nvls_nchannels");
	j->nccl.nvls_chunksize = key_u64(b, "nccl.nvls_chunksize", 0);
	j->nccl.local_ranks = j->gpus_per_node;
	j->sequence_parallel = bound_u64(b, "sp", 1) > 1;
	j->async_tp = key_bool(b, "parallel.async_tp", false);
	j->tp_saves_gathered = check_tp_saves_gathered(b->cj);
}

static void overheads(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint64_t mem = 0;

	j->cuda_context_bytes = overhead(b, "context", 500ull << 20);
	j->cublas_workspace_bytes = overhead(b, "cublas_workspace", 8519680);
	nccl_conf(b, j);
	j->frag_factor = 1.10;
	if (key(b, "overhead.fragmentation", &v) && v.kind == VAL_NUM)
		j->frag_factor = 1.0 + num_to_double(v.num);
	alloc_conf(b, j);
	data_shapes(b, j);
	gpu_u64(b, "memory", &mem);
	j->capacity_bytes = mem;
	mem = 0;
	gpu_u64(b, "host_memory", &mem);
	j->host_capacity_bytes = mem;
	j->headroom = 0.10;
	if (key(b, "headroom", &v) && v.kind == VAL_NUM)
		j->headroom = num_to_double(v.num);
}

/* ---- the walk ---- */

/* tp (with sp and etp following it), cp, ep of a what-if build, and the dp
 * they leave of the cluster as written (unless the caller lays it out). */
static void override_degrees(struct bld *b, struct env *e, struct env *base, const struct build_override *ov)
{
	struct value spv;
	uint64_t gpus = b->out->gpus, pp = bound_u64(b, "pp", 1);
	uint64_t tp = ov->tp ? ov->tp : bound_u64(b, "tp", 1), cp = ov->cp ? ov->cp : bound_u64(b, "cp", 1);
	uint64_t ep = ov->ep ? ov->ep : bound_u64(b, "ep", 1), mp = 0;
	bool sp = ov->sp ? ov->sp == 2 && tp > 1 :
		  env_lookup(base, bld_intern(b, "sp"), &spv) && spv.kind == VAL_NUM && !num_eq(spv.num, num_from_int(1));
	struct value tpv = val_count(tp, NO_LOC), cpv = val_count(cp, NO_LOC), epv = val_count(ep, NO_LOC);

	tpv.label = "tp";
	cpv.label = "cp";
	epv.label = "ep";
	env_bind(e, bld_intern(b, "tp"), tpv);
	env_bind(e, bld_intern(b, "cp"), cpv);
	env_bind(e, bld_intern(b, "ep"), epv);
	if (!key(b, "parallel.etp", &(struct value){ 0 })) {	/* etp follows tp unless set */
		struct value etpv = tpv;

		etpv.label = "etp";
		env_bind(e, bld_intern(b, "etp"), etpv);
	}
	env_bind(e, bld_intern(b, "sp"), sp ? tpv : val_count(1, NO_LOC));
	env_bind(e, bld_intern(b, "sp_in"), sp && !check_tp_saves_gathered(b->cj) ? tpv : val_count(1, NO_LOC));
	if (ov->layout_free) {
		env_bind(e, bld_intern(b, "dp"), val_count(1, NO_LOC));
		return;
	}
	/* the checker's rules for the edited file (check_train.c layout()):
	 * tp x pp x cp divides the cluster, ep divides dp x tp */
	if (__builtin_mul_overflow(tp, pp, &mp) || __builtin_mul_overflow(mp, cp, &mp) || !mp ||
	    gpus % mp || (gpus / mp * tp) % ep)
		b->failed = true;
	env_bind(e, bld_intern(b, "dp"), val_count(mp ? gpus / mp : 1, NO_LOC));
}

static struct env *override_env(struct bld *b, struct env *base, const struct build_override *ov)
{
	struct env *e = env_new(b->ev, base);

	b->bindings = base;	/* bound_u64() below reads the job as written: pp, cp */

	uint64_t mb = ov && ov->micro_batch ? ov->micro_batch : 0;

	/* DPO's concatenated_forward: chosen and rejected in one batch */
	if (b->rl_factor > 1 && !bld_mul(b, mb ? mb : bound_u64(b, "batch", 1), b->rl_factor, &mb,
					 "micro_batch x 2 (chosen and rejected)"))
		mb = 0;
	if (mb) {
		struct value v = val_count(mb, NO_LOC);

		v.label = "batch";
		env_bind(e, bld_intern(b, "batch"), v);
	}
	if (ov && ov->checkpoint)
		env_bind(e, bld_intern(b, "checkpoint"), val_symbol(b->ev, ov->checkpoint, NO_LOC));
	if (ov && ov->seq) {
		struct value v = val_count(ov->seq, NO_LOC);

		v.label = "seq";
		env_bind(e, bld_intern(b, "seq"), v);
	}
	if (ov && (ov->tp || ov->cp || ov->ep || ov->sp))
		override_degrees(b, e, base, ov);
	return e;
}

/* Walk the model once under @env; the counts land in b->params_*. The
 * evaluator is quiet: the checker has walked this job and said everything
 * it has to say (warn statements included), so a second word would repeat
 * it; an error it counts fails the build. */
static bool walk(struct bld *b, struct env *env)
{
	unsigned before = eval_quiet_errors(b->ev);

	b->bindings = env;
	b->model_mult = 1;
	b->block_repeat = 1;
	b->model_repeats = 0;
	b->nreps = 0;
	if (b->rl == BLD_RL_PPO)
		bld_walk_rl_models(b, env);	/* first, as PolicyAndValueWrapper runs the critic */
	eval_walk(b->ev, b->cj->model, env, b->rl_ops ? b->rl_ops : &bld_ops, b);
	while (b->frame)
		bld_frame_pop(b);
	if (eval_quiet_errors(b->ev) != before)
		b->failed = true;
	return !b->failed;
}

/* The job's walk, or an earlier job's that read the same values
 * (analyzer/model/build_cache.c): one that failed or asked for a report
 * is not kept, so a job reports what it would without the cache. */
static bool walk_once(struct bld *b)
{
	if (bld_cache_find(b))
		return true;
	unsigned long reports = eval_reports(b->ev);
	bool reported = b->reported, ok = walk(b, b->bindings);

	if (ok && !b->failed && b->reported == reported && eval_reports(b->ev) == reports)
		bld_cache_put(b);
	return ok;
}

/* Exact totals with tp = ep = cp = 1: published counts are unsharded. */
static void count(struct bld *real, struct env *env)
{
	struct bld b = *real;
	struct env *e = env_new(real->ev, env);
	static const char *const ones[] = { "tp", "sp", "sp_in", "ep", "etp", "cp", "pp" };

	for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
		env_bind(e, bld_intern(real, ones[i]), val_count(1, NO_LOC));
	b.memo = NULL;
	b.nmemo = b.capmemo = 0;
	b.params_total = b.params_trainable = 0;
	b.blocks = NULL;
	b.nblocks = b.capblocks = 0;
	b.tie_srcs = NULL;
	b.ntie_srcs = b.captie_srcs = 0;
	b.reps = NULL;
	b.nreps = b.capreps = 0;
	walk(&b, e);
	free(b.memo);
	free(b.reps);
	real->failed |= b.failed;
	real->reported |= b.reported;
	real->out->rep.params_total = b.params_total;
	real->out->rep.params_trainable = b.params_trainable;
}

static void drop_empty_blocks(struct bld *b, struct mem_job *j)
{
	size_t n = 0;

	for (size_t i = 0; i < b->nblocks; i++)
		if (b->blocks[i].nlayers)
			b->blocks[n++] = b->blocks[i];
	j->blocks = b->blocks;
	j->nblocks = n;
	bld_merge_blocks(b, j);
}

static void fill_report(struct bld *b, struct build *out)
{
	struct report_job *r = &out->rep;
	const struct check_job *cj = b->cj;
	uint64_t nodes = 1;

	r->name = cj->decl->name;
	r->model = cj->model.label ? cj->model.label : cj->model.decl->name;
	r->gpu = cj->cluster.decl->name;
	num_to_u64(cj->cluster.nodes, &nodes);
	r->nodes = nodes;
	r->gpus = out->gpus;
	r->precision = cj->precision.decl->name;
	r->optimizer = cj->optimizer.label ? cj->optimizer.label : cj->optimizer.decl->name;
	r->finetune = b->lora ? arena_printf(b->arena, "lora r=%llu", (unsigned long long)b->lora_r) :
		      b->qlora ? arena_printf(b->arena, "qlora r=%llu %s", (unsigned long long)b->lora_r,
					      dtype_name(b->quant)) : "full";
	r->dp = out->job.dp;
	r->tp = out->job.tp;
	r->pp = out->job.pp;
	r->cp = out->job.cp;
	r->ep = out->job.ep;
	r->vp = out->job.vp;
	r->sequence_parallel = bound_u64(b, "sp", 1) > 1;
	r->micro_batch = bound_u64(b, "batch", 1);
	r->seq_len = bound_u64(b, "seq", 1);
	r->grad_accum = out->job.micro_batches;
	r->weights_dtype = dtype_name(b->weights);
	r->grads_dtype = dtype_name(b->grads);
	r->state_dtype = dtype_name(b->lora || b->qlora ? b->lora_dtype : b->master ? b->master : b->weights);
	r->act_dtype = dtype_name(b->act);
	r->job = &out->job;
}

static void locations(struct bld *b, struct build *out)
{
	out->loc_train = b->cj->decl->name_loc;
	out->loc_model = key_loc(b, "model");
	out->loc_micro_batch = key_loc(b, "micro_batch");
	out->loc_seq_len = key_loc(b, "seq_len");
	out->loc_checkpoint = key_loc(b, "checkpoint");
	out->loc_zero = key_loc(b, "zero");
	out->loc_tp = key_loc(b, "parallel.tp");
	out->loc_pp = key_loc(b, "parallel.pp");
	out->loc_vp = key_loc(b, "parallel.vp");
	out->loc_grad_accum = key_loc(b, "grad_accum");
	out->loc_optimizer = key_loc(b, "optimizer");
	out->loc_precision = key_loc(b, "precision");
	out->loc_cluster = key_loc(b, "cluster");
	out->loc_offload = key_loc(b, "offload.optimizer");
	if (!out->loc_offload.file)
		out->loc_offload = key_loc(b, "offload.params");
	if (!out->loc_offload.file)
		out->loc_offload = key_loc(b, "offload.activations");
}

__attribute__((format(printf, 4, 5)))
static bool bld_error(struct bld *b, enum diag_id id, struct loc at, const char *fmt, ...)
{
	va_list ap;

	b->failed = true;
	if (b->quiet || b->reported)
		return false;
	b->reported = true;
	va_start(ap, fmt);
	diag_vemit(eval_diag(b->ev), id, at.file ? at : b->cj->decl->name_loc, fmt, ap);
	va_end(ap);
	return false;
}

/* The cluster and every degree within docs/limits.md: past them the
 * 32-bit degrees of struct mem_job would wrap. */
static bool layout_ok(struct bld *b, uint64_t *gpus)
{
	static const char *const degrees[] = { "dp", "tp", "pp", "cp", "ep", "etp", "vp" };
	uint64_t nodes = 0, per = 0;
	struct loc at = key_loc(b, "cluster");

	if (!num_to_u64(b->cj->cluster.nodes, &nodes) || !num_to_u64(b->cj->cluster.gpus, &per) ||
	    __builtin_mul_overflow(nodes, per, gpus))
		return bld_error(b, DIAG_OVERFLOW, at, "the cluster's GPU count overflows 64 bits");
	if (*gpus > BUILD_MAX_GPUS)
		return bld_error(b, DIAG_BAD_LAYOUT, at, "the cluster has %llu GPUs; memc models at most %u",
				 (unsigned long long)*gpus, (unsigned)BUILD_MAX_GPUS);
	for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++) {
		struct value v;
		uint64_t u = 0;

		if (!env_lookup(b->bindings, bld_intern(b, degrees[i]), &v) || v.kind != VAL_NUM || v.unknown)
			continue;
		if (!num_to_u64(v.num, &u))
			u = UINT64_MAX;		/* past 2^64: the checker's num range is wider */
		if (u > BUILD_MAX_GPUS)
			return bld_error(b, DIAG_BAD_LAYOUT, v.origin.file ? v.origin : v.loc,
					 "%s = %llu is more than the %u GPUs memc models", degrees[i],
					 (unsigned long long)u, (unsigned)BUILD_MAX_GPUS);
	}
	return true;
}

/* The reason a job was not built is always printed: a CI gate that exits
 * 0 with no number, or 1 with no message, is a silent wrong answer. */
static bool unreported(struct bld *b)
{
	return bld_error(b, DIAG_BAD_LAYOUT, b->cj->decl->name_loc,
			 "train block '%s' checked, but its model does not evaluate when it is built "
			 "for analysis", b->cj->decl->name);
}

static bool build_walks(struct bld *b, const struct build_override *ov)
{
	uint64_t tokens = 0, cp = 0;

	b->bindings = b->cj->bindings;
	if (!layout_ok(b, &b->out->gpus))
		return false;
	b->bindings = override_env(b, b->cj->bindings, ov);
	if (b->failed)
		return false;
	/* a what-if checkpoint mode (fit) decides too, hence the bindings */
	b->recompute_selective = !strcmp(bound_sym(b, "checkpoint", "none"), "selective");
	b->recompute_full = !strcmp(bound_sym(b, "checkpoint", "none"), "full");
	b->tokens_in_play = true;
	bld_mul(b, bound_u64(b, "batch", 1), bound_u64(b, "seq", 1), &tokens, "micro_batch x seq_len");
	b->tokens_in_play = false;
	cp = bound_u64(b, "cp", 1);
	b->tokens = tokens / (cp ? cp : 1);
	bool unsharded = true;
	static const char *const degrees[] = { "tp", "sp", "ep", "cp", "pp" };

	for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++)
		unsharded &= bound_u64(b, degrees[i], 1) == 1;
	/* what-if variants (fit search, sweeps) never print the totals; with
	 * every degree 1 the job's own walk gives them */
	if (!b->quiet && !unsharded)
		count(b, b->bindings);
	if (!walk_once(b) || b->failed)
		return false;
	if (!b->quiet && unsharded) {
		b->out->rep.params_total = b->params_total;
		b->out->rep.params_trainable = b->params_trainable;
	}
	return true;
}

bool build_job(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build_override *ov,
	       bool quiet, struct build *out)
{
	struct bld b;

	/* zeroed padding too: the builder's cache compares the struct's bytes */
	memset(&b, 0, sizeof b);
	b.ev = ev;
	b.arena = a;
	b.cj = cj;
	b.out = out;
	b.quiet = quiet;
	int zero = (int)key_u64(&b, "zero", 0);

	memset(out, 0, sizeof *out);
	if (!cj->ok)
		return false;	/* the checker said why */
	if (cj->model.kind != VAL_INSTANCE || cj->cluster.kind != VAL_CLUSTER ||
	    cj->optimizer.kind != VAL_INSTANCE || !bld_setup_precision(&b, cj->precision))
		return unreported(&b);
	zero = megatron_setup(&b, zero);
	fsdp2_setup(&b);
	bld_setup_fp8(&b, megatron_job(&b, zero));
	zero = ov && ov->zero >= 0 ? ov->zero : zero;
	out->zero = key(&b, "zero", &(struct value){ 0 }) || (ov && ov->zero >= 0) ||
		    zero > 0 ? zero : -1;
	b.optimizer = cj->optimizer;
	key(&b, "megatron.recompute_modules", &b.recompute_modules);
	bld_setup_finetune(&b, cj->finetune);
	b.keep_output = key_bool(&b, "keep_output", false);
	bld_setup_rl(&b);
	key(&b, "freeze", &b.freeze);
	/* The real build reports what only it evaluates (an optimizer state's
	 * shape under this job's arguments); what the checker already reported
	 * is not repeated (eval.c seen_before), and warn fires in the checker's
	 * walk only. What-if builds are quiet. */
	eval_set_quiet(ev, quiet);
	unsigned errors = diag_error_count(eval_diag(ev));
	bool ok = build_walks(&b, ov);

	eval_set_quiet(ev, false);
	b.reported |= diag_error_count(eval_diag(ev)) > errors;	/* the walk said why */
	free(b.memo);
	free(b.reps);
	if (ok) {
		drop_empty_blocks(&b, &out->job);
		ok = layout(&b, &out->job, zero);
		if (ok) {
			buffers(&b, &out->job, zero);
			overheads(&b, &out->job);
		}
		ok = ok && !b.failed;
	}
	if (!ok) {
		if (!b.reported)
			unreported(&b);
		out->rep.params_total = out->rep.params_trainable = 0;	/* half a walk's count */
		return false;
	}
	out->micro_batch = bound_u64(&b, "batch", 1);
	out->tp = out->job.tp;
	fill_report(&b, out);
	locations(&b, out);
	bld_fill_phases(&b, out);
	if (!bld_finish_rl(&b, out))
		return false;
	if (out->job.alloc_replay && out->job.shape_seq_len >= 2 && !(ov && ov->seq))
		shapes_split(ev, a, cj, ov, &out->job);
	return true;
}

/* The neutral job of `memc list`: every degree 1, one token. */
static struct env *neutral_bindings(struct bld *b)
{
	static const char *const ones[] = { "batch", "seq", "tgt", "tp", "sp", "sp_in", "cp", "ep", "etp", "pp", "dp",
					    "vp" };
	static const char *const syms[][2] = { { "attention", "flash" }, { "checkpoint", "none" },
					       { "kernels", "hf" }, { "loss", "standard" },
					       { "cp_comm", "allgather" } };
	struct env *e = env_new(b->ev, NULL);

	for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
		env_bind(e, bld_intern(b, ones[i]), val_count(1, NO_LOC));
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		env_bind(e, bld_intern(b, syms[i][0]), val_symbol(b->ev, syms[i][1], NO_LOC));
	env_bind(e, bld_intern(b, "act"), (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("bf16") });
	env_bind(e, bld_intern(b, "autocast"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "compile"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "async_tp"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "compile_loss"), (struct value){ .kind = VAL_BOOL, .b = false });
	return e;
}

bool build_count_params(struct eval *ev, struct arena *a, struct value model, uint64_t *total)
{
	struct check_job cj = { .model = model, .ok = true };
	struct build out;
	struct bld b = { .ev = ev, .arena = a, .cj = &cj, .out = &out, .quiet = true };

	if (model.kind != VAL_INSTANCE)
		return false;
	eval_set_quiet(ev, true);
	bool ok = walk(&b, neutral_bindings(&b));

	eval_set_quiet(ev, false);
	free(b.memo);
	free(b.reps);
	*total = b.params_total;
	return ok;
}
