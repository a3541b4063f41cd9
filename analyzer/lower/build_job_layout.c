/* SPDX-License-Identifier: MIT */
/*
 * build_job_layout.c - the job's layout from the train block: degrees,
 * sharding (ZeRO, FSDP1/2, Megatron's distributed optimizer), DeepEP, the
 * pipeline schedule and recomputation.
 */
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/dtypes.h"

/* checkpoint_saves = [mm, sdpa]: a save list of one's own, every output of
 * its ops kept; without it torchtitan's list and every-other-mm rule. */
static void sac_policy(struct bld *b, struct mem_job *j)
{
	struct value v;

	j->sac_ops = MEM_SAC_MM | MEM_SAC_SDPA;
	j->sac_every_other_mm = true;
	if (!bld_key(b, "checkpoint_saves", &v) || v.kind != VAL_LIST)
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

/* ---- the layout ---- */

static enum mem_sharding sharding(struct bld *b, int zero, uint32_t dp, const char **name)
{
	const char *fsdp = bld_key_sym(b, "fsdp", b->fsdp2 ? "full_shard" : "none");
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
	return check_job_record(b->cj, "fsdp2");
}

void bld_fsdp2_setup(struct bld *b)
{
	struct value v;

	b->fsdp2 = fsdp2_record(b);
	if (bld_key(b, "fsdp2.param_dtype", &v) && v.kind == VAL_DTYPE)
		b->fsdp_param = v.dtype;
	if (bld_key(b, "fsdp2.reduce_dtype", &v) && v.kind == VAL_DTYPE)
		b->fsdp_reduce = v.dtype;
}

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
	const char *pol = bld_key_sym(b, "fsdp2.reshard_after_forward_policy", "");

	j->fsdp_reshard_to = !strcmp(pol, "never") || (!strcmp(pol, "default") && j->pp > 1) ? 1 : 0;
	if (!bld_key(b, "fsdp2.reshard_after_forward", &v))
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
	j->fsdp2 = true;
	if (!fsdp2_reshard(b, j))
		return false;
	/* stage.py backward_maybe_with_nosync: every micro-batch of a stage
	 * runs with set_requires_gradient_sync(False) and
	 * set_reshard_after_backward(False); post_backward runs after the last */
	j->fsdp_keep_after_backward = j->pp > 1;
	/* a stage FSDP2 wraps is a torch.distributed.pipelining PipelineStage */
	j->pp_stage_buffers = j->pp > 1;
	j->pp_return_outputs = j->pp_stage_buffers && bld_key_bool(b, "parallel.return_outputs", true);
	j->fsdp_split_root = !strcmp(bld_key_sym(b, "fsdp2.root_unit", "model"), "split");
	j->fsdp_no_sync = j->pp > 1 || (!bld_key_bool(b, "fsdp2.requires_gradient_sync", true) &&
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
	bool flex = bld_key(b, "megatron.moe_token_dispatcher_type", &t) && t.kind == VAL_SYMBOL &&
		    !strcmp(t.str, "flex");
	bool sms = bld_key(b, "megatron.moe_flex_dispatcher_num_sms", &n);
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
	uint64_t num_sms = bld_key_u64(b, "megatron.moe_flex_dispatcher_num_sms", 20);

	if (num_sms % 2)
		return bld_error(b, DIAG_OUT_OF_RANGE, n.origin.file ? n.origin : n.loc,
				 "DeepEP's SM count must be even ('The SM count must be even'); "
				 "moe_flex_dispatcher_num_sms = %llu", (unsigned long long)num_sms);
	/* csrc/config.hpp Config(int num_sms, ...): past an int the count wraps */
	if (num_sms > INT32_MAX)
		return bld_error(b, DIAG_OUT_OF_RANGE, n.origin.file ? n.origin : n.loc,
				 "moe_flex_dispatcher_num_sms = %llu is past DeepEP's int SM count "
				 "(at most 2^31 - 1, and no GPU has that many SMs)", (unsigned long long)num_sms);
	j->deepep_num_sms = (uint32_t)num_sms;
	if (!mem_comm_deepep_supported(mem_comm_deepep_ranks(j)))
		return bld_error(b, DIAG_BAD_LAYOUT, t.origin.file ? t.origin : t.loc,
				 "DeepEP has no dispatch config for a tp x ep group of %u ranks "
				 "(Buffer.get_dispatch_config: 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144 "
				 "or 160)", (unsigned)mem_comm_deepep_ranks(j));
	return bld_mul(b, b->expert_width, elem, &j->deepep_hidden_bytes, "DeepEP's bytes per token");
}

/* ep > 1 lays experts out over ranks; without experts it does nothing but
 * make a communicator. Megatron-LM refuses it (validate_args: "num_experts
 * must be non None to use expert model parallelism"). */
static bool ep_layout(struct bld *b, const struct mem_job *j)
{
	struct value v = { 0 };

	if (j->ep <= 1 || b->experts)
		return true;
	bld_key(b, "parallel.ep", &v);
	return bld_error(b, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc,
			 "ep = %u splits the experts over ranks, and this model has none: "
			 "remove ep (Megatron-LM: 'num_experts must be non None to use expert model "
			 "parallelism')", (unsigned)j->ep);
}

static enum mem_schedule schedule(struct bld *b)
{
	const char *s = bld_key_sym(b, "parallel.schedule", "1f1b");

	return !strcmp(s, "interleaved") ? MEM_PP_INTERLEAVED : !strcmp(s, "gpipe") ? MEM_PP_GPIPE :
	       !strcmp(s, "zb_h1") ? MEM_PP_ZB_H1 : !strcmp(s, "zb_h2") ? MEM_PP_ZB_H2 :
	       !strcmp(s, "dualpipe") ? MEM_PP_DUALPIPE : !strcmp(s, "dualpipev") ? MEM_PP_DUALPIPEV :
	       !strcmp(s, "zbv") ? MEM_PP_ZBV : !strcmp(s, "interleaved_zb") ? MEM_PP_INTERLEAVED_ZB :
	       MEM_PP_1F1B;
}

/* Megatron-Core's DDP: the job sets a megatron { } key, or precision megatron_bf16
 * where Megatron's DDP can be what wraps the model: not under torch FSDP or
 * DeepSpeed ZeRO-2/3, whose engines own the gradients (a torchtitan job may
 * borrow megatron_bf16 for FSDP2's bf16/fp32 dtypes). */
static bool megatron_record(struct bld *b)
{
	return check_job_record(b->cj, "megatron");
}

bool bld_megatron_job(struct bld *b, int zero)
{
	if (megatron_record(b))
		return true;
	return b->cj->precision.kind == VAL_DECL && !strcmp(b->cj->precision.decl->name, "megatron_bf16") &&
	       !strcmp(bld_key_sym(b, "fsdp", "none"), "none") && !fsdp2_record(b) && zero <= 1;
}

/* megatron { }: the distributed optimizer is ZeRO-1 (zero = 1 unless the job
 * says zero); grad_reduce_in_bf16 makes the grad buffer bf16 (memory-model.md
 * "Megatron-Core"). */
int bld_megatron_setup(struct bld *b, int zero)
{
	struct value v;

	if (!megatron_record(b))
		return zero;
	if (bld_key_bool(b, "megatron.grad_reduce_in_bf16", false))
		b->grads = dtype_find("bf16");
	if (!bld_key(b, "zero", &v) && bld_key_bool(b, "megatron.distributed_optimizer", false))
		zero = 1;
	return zero;
}

/* The dp ranks of one shard group: parallel.dp_shard, or dp over
 * parallel.dp_replicate, else 0 (memory.c's default). False when a what-if
 * tp left a dp that the replicas no longer divide. */
static bool dp_shard(struct bld *b, struct mem_job *j)
{
	uint64_t s = bld_key_u64(b, "parallel.dp_shard", 0), r = bld_key_u64(b, "parallel.dp_replicate", 0);

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

/* parallel { stage_layers = [...] }: the checker took each entry as a count */
static bool stage_list(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint64_t *n;

	if (!bld_key(b, "parallel.stage_layers", &v) || v.kind != VAL_LIST || !v.nitems)
		return true;
	if (v.nitems > UINT32_MAX)
		return false;
	n = ARENA_NEW_ARRAY(b->arena, uint64_t, v.nitems);
	for (unsigned i = 0; i < v.nitems; i++)
		if (v.items[i].kind != VAL_NUM || !num_to_u64(num_floor(v.items[i].num), &n[i]))
			return false;
	j->stage_layers = n;
	j->nstage_layers = (uint32_t)v.nitems;
	return true;
}

bool bld_layout(struct bld *b, struct mem_job *j, int zero)
{
	const char *shard_name;

	j->dp = (uint32_t)bld_bound_u64(b, "dp", 1);
	j->tp = (uint32_t)bld_bound_u64(b, "tp", 1);
	j->pp = (uint32_t)bld_bound_u64(b, "pp", 1);
	j->cp = (uint32_t)bld_bound_u64(b, "cp", 1);
	j->ep = (uint32_t)bld_bound_u64(b, "ep", 1);
	j->vp = (uint32_t)bld_bound_u64(b, "vp", 1);
	j->etp = (uint32_t)bld_bound_u64(b, "etp", j->tp);
	uint64_t per = 0;

	num_to_u64(b->cj->cluster.gpus, &per);
	j->gpus_per_node = (uint32_t)per;
	j->schedule = schedule(b);
	j->first_stage_layers = bld_key_u64(b, "parallel.first_stage_layers", 0);
	j->last_stage_layers = bld_key_u64(b, "parallel.last_stage_layers", 0);
	j->pp_account_embedding = bld_key_bool(b, "parallel.account_for_embedding", false);
	j->pp_account_loss = bld_key_bool(b, "parallel.account_for_loss", false);
	if (!stage_list(b, j))
		return false;
	j->micro_batches = bld_key_u64(b, "grad_accum", 1);
	j->pp_group = bld_key_u64(b, "parallel.microbatch_group_size_per_vp_stage", 0);
	j->sharding = sharding(b, zero, j->dp, &shard_name);
	if (j->sharding == MEM_SHARD_ZERO1 && bld_megatron_job(b, zero))
		shard_name = "distributed optimizer";
	if (!dp_shard(b, j) || !fsdp2_layout(b, j, &shard_name) || !deepep_layout(b, j) ||
	    !ep_layout(b, j))
		return false;
	b->out->rep.sharding = shard_label(b, j, shard_name);
	const char *ck = bld_bound_sym(b, "checkpoint", "none");

	j->recompute = !strcmp(ck, "full") ? MEM_RECOMPUTE_FULL :
		       !strcmp(ck, "selective") ? MEM_RECOMPUTE_SELECTIVE :
		       !strcmp(ck, "selective_op") ? MEM_RECOMPUTE_SELECTIVE_OP : MEM_RECOMPUTE_NONE;
	b->out->rep.recompute = ck;
	b->out->full_recompute = j->recompute == MEM_RECOMPUTE_FULL;
	sac_policy(b, j);
	struct value m;

	j->recompute_every = bld_key_u64(b, "checkpoint_every", 0);
	if (bld_key(b, "recompute_method", &m) && m.kind == VAL_SYMBOL && !strcmp(m.str, "block"))
		j->recompute_first = bld_key_u64(b, "recompute_num_layers", 0);
	return true;
}
