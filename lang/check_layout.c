/* SPDX-License-Identifier: MIT */
/*
 * check_layout.c - the bindings a job gives its model: the parallel layout
 * (shard, expert and context groups), the compute dtype and autocast, and the
 * GPU's capabilities for the dtypes and kernels it asks for.
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

/* @name is a literal: interned by its address (intern_static). */
static void bind(struct eval *ev, struct env *e, const char *name, struct value v)
{
	v.label = name;
	env_bind(e, intern_static(ev->interner, name), v);
}

/* @def is a literal: val_symbol()'s value, interned by its address. */
static struct value sym_key(struct eval *ev, const struct check_job *j, const char *key, const char *def)
{
	struct value v;

	if (!check_job_field(j, key, &v))
		v = (struct value){ .kind = VAL_SYMBOL, .str = intern_static(ev->interner, def),
				    .loc = j->decl->name_loc, .origin = j->decl->name_loc };
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

/* A job with an fsdp2 record runs torch's own tensor parallelism: DTensor's
 * ColwiseParallel behind PrepareModuleInput(desired_input_layouts=
 * Replicate()) gathers the sequence-parallel input before the Linear, whose
 * backward saves the gathered input (torchtitan's apply_tp); Megatron-Core
 * and Transformer Engine save the shard and gather again in backward. */
bool check_tp_saves_gathered(const struct check_job *j)
{
	return check_job_record(j, "fsdp2");
}

uint64_t check_cp_seq_multiple(uint64_t cp)
{
	return cp < 2 ? 1 : cp > UINT64_MAX / 2 ? UINT64_MAX : 2 * cp;
}

bool check_cp_splits_seq(uint64_t seq_len, uint64_t cp)
{
	return seq_len % check_cp_seq_multiple(cp) == 0;
}

/* Context parallelism cuts each sequence into 2 x cp chunks and gives rank
 * r chunks r and 2cp - 1 - r, which balances the causal mask's work:
 * Megatron's get_batch_on_this_cp_rank views seq_len as [2cp, seq_len /
 * 2cp], torch's _HeadTailLoadBalancer._generate_indices (torchtitan's
 * default) asserts seq_len % (2cp) == 0. A length cp alone divides has no
 * such split: the job would not start. */
static void cp_chunks(struct eval *ev, struct check_job *j, uint64_t cp, const struct value *cpv)
{
	struct value s;
	uint64_t seq = 0;

	if (cp < 2 || cp > CHECK_MAX_GPUS || !check_job_field(j, "seq_len", &s) || s.kind != VAL_NUM || s.unknown ||
	    !num_to_u64(s.num, &seq) || seq % cp || check_cp_splits_seq(seq, cp))
		return;
	diag_note(eval_error(ev, DIAG_NOT_DIVISIBLE, s.loc, "seq_len = %llu is not a multiple of 2 x cp = %llu: "
			     "context parallelism cuts each sequence into 2 x cp chunks (Megatron's "
			     "get_batch_on_this_cp_rank, torch's _HeadTailLoadBalancer)",
			     (unsigned long long)seq, (unsigned long long)(2 * cp)),
		  cpv->origin.file ? cpv->origin : cpv->loc, "'cp' is set here");
	j->ok = false;
}

/* dp = gpus / (tp * pp * cp): the layout must divide the cluster. */
static void layout(struct eval *ev, struct check_job *j, struct env *e)
{
	struct value tp, pp, cp, ep, vp, spv, gpus;
	uint64_t t = check_count_key(ev, j, "parallel.tp", 1, &tp), p = check_count_key(ev, j, "parallel.pp", 1, &pp);
	uint64_t c = check_count_key(ev, j, "parallel.cp", 1, &cp);
	uint64_t total = 0, nodes = 0, per = 0;
	bool sp = false;

	check_count_key(ev, j, "parallel.ep", 1, &ep);
	check_count_key(ev, j, "parallel.vp", 1, &vp);
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

	cp_chunks(ev, j, c, &cp);

	expert_layout(ev, j, e, dp_shard_key(ev, j, dp, per, t * c) * c * t, tp, ep);
	bind(ev, e, "tp", tp);
	bind(ev, e, "pp", pp);
	bind(ev, e, "cp", cp);
	bind(ev, e, "ep", ep);
	bind(ev, e, "vp", vp);
	bind(ev, e, "sp", sp ? tp : val_count(1, j->decl->name_loc));
	bind(ev, e, "sp_in", sp && !check_tp_saves_gathered(j) ? tp : val_count(1, j->decl->name_loc));
	bool atp = false;
	struct value av;

	if (check_job_field(j, "parallel.async_tp", &av))
		eval_to_bool(ev, av, "async_tp", &atp);
	bind(ev, e, "async_tp", (struct value){ .kind = VAL_BOOL, .b = atp, .loc = j->decl->name_loc,
						.origin = j->decl->name_loc });
	bind(ev, e, "dtensor_plan", (struct value){ .kind = VAL_BOOL, .b = check_tp_saves_gathered(j),
					       .loc = j->decl->name_loc, .origin = j->decl->name_loc });
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
		const char *w = check_list_word(&l.items[i]);

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
	struct diag *d = eval_error(ev, DIAG_UNSUPPORTED_DTYPE, check_key_loc(j, "precision"),
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
	if (cc >= 8.0 || !check_sym_is(j, "attention", "flash"))
		return;
	diag_note(eval_error(ev, DIAG_UNSUPPORTED_KERNEL, check_key_loc(j, "attention"),
			     "FlashAttention-2 needs compute capability 8.0 (Ampere) or newer; %s has %.1f",
			     j->cluster.decl->name, cc),
		  NO_LOC, "PyTorch's scaled_dot_product_attention falls back to its memory-efficient kernel, "
		  "which keeps the same O(seq_len) memory, so the prediction stands; the flash_attn package will not run");
}

void check_capabilities(struct eval *ev, const struct check_job *j)
{
	double cc = compute_capability(ev, j);

	if (cc <= 0.0)
		return;
	dtype_capability(ev, j, cc, "compute");
	dtype_capability(ev, j, cc, "linear_input");
	check_fp8_capability(ev, j, cc);
	kernel_capability(ev, j, cc);
}

/* train.rope_cache: transformers' per-layer rotary cos/sin buffers and
 * their dtype (stdlib models/llama.mem); without it, none. */
static void rope_bindings(struct eval *ev, struct check_job *j, struct env *e)
{
	struct value v;
	bool on = check_job_field(j, "rope_cache", &v) && v.kind == VAL_DTYPE;

	if (!on)
		v = (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("fp32") };
	bind(ev, e, "rope_cache", (struct value){ .kind = VAL_BOOL, .b = on, .loc = j->decl->name_loc,
						  .origin = j->decl->name_loc });
	bind(ev, e, "rope_dtype", v);
}

/* `finetune`: the method's word (full, lora, qlora, adapter, adapter_v2),
 * so that a model declares the parameters only a method adds (LitGPT's
 * LLaMA-Adapter prompts and gates, models/litgpt.mem). */
static struct value finetune_word(struct eval *ev, const struct check_job *j)
{
	struct value v;

	if (!check_job_field(j, "finetune", &v) || (v.kind != VAL_SYMBOL && v.kind != VAL_CALL))
		return val_symbol(ev, "full", j->decl->name_loc);
	return val_symbol(ev, v.str, v.loc);
}

/* torchtune { rope_cache, max_seq_len }: torchtune's per-layer
 * RotaryPositionalEmbeddings buffers (stdlib layers/attention.mem
 * torchtune_rotary_cache); without the dtype, none (tt_rope_len 0). */
static void tt_rope_bindings(struct eval *ev, struct check_job *j, struct env *e)
{
	struct value v, n, sh;
	bool on = check_job_field(j, "torchtune.rope_cache", &v) && v.kind == VAL_DTYPE;
	uint64_t len = on ? check_count_key(ev, j, "torchtune.max_seq_len", 0, &n) : 0;
	bool shared = on && check_job_field(j, "torchtune.shared_rope", &sh) && sh.kind == VAL_BOOL && sh.b;

	if (!on)
		v = (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("fp32") };
	bind(ev, e, "tt_rope", (struct value){ .kind = VAL_BOOL, .b = on, .loc = j->decl->name_loc,
					       .origin = j->decl->name_loc });
	bind(ev, e, "tt_rope_len", val_count(len, j->decl->name_loc));
	bind(ev, e, "tt_rope_dtype", v);
	bind(ev, e, "tt_rope_shared", (struct value){ .kind = VAL_BOOL, .b = shared,
						      .loc = j->decl->name_loc, .origin = j->decl->name_loc });
}

struct env *check_job_bindings(struct eval *ev, struct check_job *j)
{
	struct env *e = env_new(ev, NULL);
	struct value mb, sl, tl;

	check_count_key(ev, j, "micro_batch", 1, &mb);
	check_count_key(ev, j, "seq_len", 1, &sl);
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
	bind(ev, e, "finetune", finetune_word(ev, j));
	bind(ev, e, "compile", compile_value(j, "model"));
	bind(ev, e, "compile_loss", compile_value(j, "loss"));
	bind(ev, e, "cp_comm", sym_key(ev, j, "parallel.cp_comm_type", "allgather"));
	bind(ev, e, "autocast", (struct value){ .kind = VAL_BOOL, .b = autocast_policy(ev, j),
						.loc = j->decl->name_loc, .origin = j->decl->name_loc });
	rope_bindings(ev, j, e);
	tt_rope_bindings(ev, j, e);
	return e;
}
