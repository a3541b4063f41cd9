/* SPDX-License-Identifier: MIT */
/*
 * titan_config.c - torchtitan's config keys (read from TOML by
 * toml_config.c) into train settings, with torchtitan's defaults
 * (config/job_config.py) and its stage splits, at 9dec370 and today.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyzer/import/import_impl.h"
#include "analyzer/import/map_rows.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

/* The dtype, reshard, pipeline and loss keys are read by titan_import's
 * helpers below, which apply torchtitan's defaults (config/job_config.py)
 * when a TOML leaves them out; their rows here only make them known. */
static const struct map_row titan_rows[] = {
	C("training.local_batch_size", "micro_batch"), C("training.batch_size", "micro_batch"),
	C("training.seq_len", "seq_len"),
	NOTE("training.global_batch_size", "grad_accum = global / (local x dp)"),
	IGN("training.mixed_precision_param"), IGN("training.mixed_precision_reduce"),
	IGN("training.dtype"), IGN("parallelism.fsdp_reshard_after_forward"),
	IGN("parallelism.pipeline_parallel_microbatch_size"),
	T("training.enable_cpu_offload", "offload.params", "cpu"),
	C("parallelism.data_parallel_shard_degree", "parallel.dp_shard"),
	C("parallelism.data_parallel_replicate_degree", "parallel.dp_replicate"),
	C("parallelism.tensor_parallel_degree", "parallel.tp"),
	C("parallelism.pipeline_parallel_degree", "parallel.pp"),
	C("parallelism.context_parallel_degree", "parallel.cp"),
	C("parallelism.expert_parallel_degree", "parallel.ep"),
	C("parallelism.expert_tensor_parallel_degree", "parallel.etp"),
	E("parallelism.pipeline_parallel_schedule", "parallel.schedule",
	  "1F1B=\"1f1b\"|Interleaved1F1B=\"interleaved\"|GPipe=\"gpipe\"|ZBVZeroBubble=\"zbv\"|"
	  "InterleavedZeroBubble=\"interleaved_zb\"|DualPipeV=\"dualpipev\""),
	B("parallelism.enable_async_tensor_parallel", "parallel.async_tp"),
	E("parallelism.context_parallel_rotate_method", "parallel.cp_comm_type", "allgather=allgather"),
	IGN("parallelism.context_parallel_load_balancer"),
	MUST("parallelism.expert_parallel_comm_backend", "standard"),
	NOTE("parallelism.pipeline_parallel_split_points",
	     "the stages' layers: parallel { stage_layers }, one count per stage in stage order"),
	NOTE("parallelism.pipeline_parallel_first_stage_less_layers",
	     "the embedding counted as layers in the stage split (first_stage_layers or stage_layers)"),
	NOTE("parallelism.pipeline_parallel_last_stage_less_layers",
	     "the head counted as layers in the stage split (last_stage_layers or stage_layers)"),
	NOTE("parallelism.pipeline_parallel_layers_per_stage",
	     "the stages' layers: parallel { stage_layers }, one count per stage in stage order"),
	IGN("parallelism.enable_compiled_autograd"), MUST("parallelism.disable_loss_parallel", "false"),
	E("activation_checkpoint.mode", "checkpoint",
	  "full=full|selective=selective|none=none|selective_op=selective_op"),
	IGN("activation_checkpoint.selective_ac_option"), IGN("activation_checkpoint.preserve_rng_state"),
	IGN("activation_checkpoint.early_stop"), IGN("activation_checkpoint.determinism_check"),
	IGN("activation_checkpoint.debug"),
	NOTE("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns",
	     "op-level SAC recomputes these mms (torchtitan's default: the MoE router gate)"),
	IGN("optimizer.name"),
	IGN("optimizer.lr"), IGN("optimizer.eps"), IGN("optimizer.weight_decay"),
	IGN("optimizer.implementation"), IGN("optimizer.beta1"), IGN("optimizer.beta2"),
	B("optimizer.early_step_in_backward", "optimizer_in_backward"),
	NOTE("model.name", "the model: a llama3 flavor's stdlib model (model = ...), else import its config.json"),
	NOTE("model.flavor", "the model size"),
	IGN("model.tokenizer_path"), IGN("model.hf_assets_path"), IGN("model.converters"),
	IGN("model.norm_type"), IGN("job.*"), IGN("profiling.*"), IGN("metrics.*"),
	IGN("lr_scheduler.*"), IGN("checkpoint.*"), IGN("comm.*"), IGN("validation.*"),
	IGN("training.steps"), IGN("training.max_norm"), IGN("training.dataset"),
	IGN("training.dataset_path"), IGN("training.warmup_steps"),
	IGN("training.compile"), IGN("training.dataloader.*"),
	IGN("training.seed"), IGN("training.deterministic"), IGN("training.gc_freq"),
	IGN("training.gc_debug"), IGN("debug.*"), IGN("memory_estimation.*"),
	IGN("compile.enable"), IGN("compile.components"), IGN("compile.backend"),
	IGN("float8.enable_float8_linear"), MUST("float8.scaling_type_input", "dynamic"),
	MUST("float8.scaling_type_weight", "dynamic"), MUST("float8.scaling_type_grad_output", "dynamic"),
	IGN("optimizer.fused"), IGN("experimental.pipeline_parallel_microbatches"),
	IGN("quantize.linear.float8.enable_fsdp_float8_all_gather"),
	IGN("quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp"),
	IGN("quantize.linear.float8.recipe_name"), IGN("quantize.linear.float8.filter_fqns"),
	MUST("quantize.linear.float8.emulate", "false"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

static struct cfg_item *titan_item(struct cfg *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->items[i].path, path))
			return &c->items[i];
	return NULL;
}

/* torchtitan's keys before #980 (2025-03-18), as the configs of its Dec
 * 2024 benchmarks (9dec370) write them, and today's name of each; the
 * [float8] table is [quantize.linear.float8] since the converters. */
static const char *const titan_legacy[][2] = {
	{ "training.data_parallel_replicate_degree", "parallelism.data_parallel_replicate_degree" },
	{ "training.data_parallel_shard_degree", "parallelism.data_parallel_shard_degree" },
	{ "training.tensor_parallel_degree", "parallelism.tensor_parallel_degree" },
	{ "training.disable_loss_parallel", "parallelism.disable_loss_parallel" },
	{ "experimental.enable_async_tensor_parallel", "parallelism.enable_async_tensor_parallel" },
	{ "experimental.pipeline_parallel_degree", "parallelism.pipeline_parallel_degree" },
	{ "experimental.pipeline_parallel_split_points", "parallelism.pipeline_parallel_split_points" },
	{ "experimental.pipeline_parallel_schedule", "parallelism.pipeline_parallel_schedule" },
	{ "experimental.enable_compiled_autograd", "parallelism.enable_compiled_autograd" },
	{ "experimental.context_parallel_degree", "parallelism.context_parallel_degree" },
	{ "experimental.context_parallel_rotate_method", "parallelism.context_parallel_rotate_method" },
	{ "float8.enable_fsdp_float8_all_gather", "quantize.linear.float8.enable_fsdp_float8_all_gather" },
	{ "float8.precompute_float8_dynamic_scale_for_fsdp",
	  "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp" },
	{ "float8.recipe_name", "quantize.linear.float8.recipe_name" },
	{ "float8.filter_fqns", "quantize.linear.float8.filter_fqns" },
	{ "float8.emulate", "quantize.linear.float8.emulate" },
};

/* Reads an old config's keys under today's names, so every rule below
 * applies to both (the output's comments name them so); returns whether
 * the config is of the old layout. */
static bool titan_rename_legacy(struct cfg *c)
{
	bool legacy = false;

	for (size_t i = 0; i < c->n; i++) {
		struct cfg_item *it = &c->items[i];

		if (!strncmp(it->path, "experimental.", 13) || !strcmp(it->path, "optimizer.fused") ||
		    !strcmp(it->path, "float8.enable_float8_linear"))
			legacy = true;
		for (size_t k = 0; k < sizeof titan_legacy / sizeof titan_legacy[0]; k++) {
			if (strcmp(it->path, titan_legacy[k][0]))
				continue;
			legacy |= !strncmp(it->path, "training.", 9);
			if (!titan_item(c, titan_legacy[k][1]))
				it->path = titan_legacy[k][1];
		}
	}
	return legacy;
}

/* mode = "selective" with selective_ac_option = "op" is the op-level
 * policy (checkpoint = selective_op); with a layer frequency "N" it is full
 * AC of every N-th block (checkpoint = full, checkpoint_every = N). */
static void titan_ac_option(struct cfg *c, struct imp_out *o)
{
	struct cfg_item *mode = titan_item(c, "activation_checkpoint.mode");
	struct cfg_item *opt = titan_item(c, "activation_checkpoint.selective_ac_option");
	size_t n;

	if (!mode || !opt || !mode->text || !opt->text || strcmp(mode->text, "selective"))
		return;
	n = strspn(opt->text, "0123456789");
	if (!strcmp(opt->text, "op")) {
		cfg_set_scalar(mode, mode->kind, "selective_op");
	} else if (n > 0 && !opt->text[n] && strspn(opt->text, "0") < n) {
		cfg_set_scalar(mode, mode->kind, "full");
		imp_set(o, "checkpoint_every", opt->text, opt->path, NULL);
	}
}

static long long titan_count(struct cfg *c, const char *path, long long dflt)
{
	const struct cfg_item *it = titan_item(c, path);

	return it && it->kind == CFG_INT ? it->i : dflt;
}

static const char *titan_text(struct cfg *c, const char *path, const char *dflt)
{
	const struct cfg_item *it = titan_item(c, path);

	return it && it->text ? it->text : dflt;
}

/* @path through the enum @table into @dst; left out, torchtitan's default
 * @dflt (in memc's spelling; NULL: nothing). A @dst of "" only checks the
 * value, for a key that the job's other keys make inert. */
static bool titan_enum(struct cfg *c, struct imp_out *o, const char *path, const char *dst,
		       const char *table, const char *dflt)
{
	const struct cfg_item *it = titan_item(c, path);
	const struct map_row r = { path, dst, MAP_ENUM, table };

	if (it)
		return map_item(c, it, &r, o);
	if (dflt && *dst)
		imp_set(o, dst, dflt, path, "torchtitan's default");
	return true;
}

#define TT_DTYPES "bfloat16=|float32="

/* The precision (models/llama3/infra/parallelize.py, distributed/utils.py
 * maybe_enable_amp): with FSDP, fully_shard's MixedPrecisionPolicy casts
 * the fp32 model; without it torch.autocast does on DDP or one GPU, and
 * nothing does under tp or pp. training.dtype = "bfloat16" makes the
 * parameters, gradients and optimizer states bf16. */
static bool titan_precision(struct cfg *c, struct imp_out *o, bool fsdp)
{
	const char *mp = "training.mixed_precision_param";
	bool bf16 = !strcmp(titan_text(c, "training.dtype", "float32"), "bfloat16");
	bool mp_off = titan_count(c, "parallelism.tensor_parallel_degree", 1) > 1 ||
		      titan_count(c, "parallelism.pipeline_parallel_degree", 1) > 1;
	bool ok = titan_enum(c, o, "training.dtype", bf16 ? "precision" : "",
			     "bfloat16=bf16_true|float32=", NULL);

	if (!bf16 && fsdp)
		ok &= titan_enum(c, o, mp, "precision", "bfloat16=fsdp2_bf16|float32=fp32", "fsdp2_bf16");
	else if (!bf16 && !mp_off)
		ok &= titan_enum(c, o, mp, "precision", "bfloat16=amp_bf16|float32=fp32", "amp_bf16");
	else if (!bf16)
		imp_set(o, "precision", "fp32", mp, "maybe_enable_amp: no mixed precision under tp or pp without FSDP");
	if (!ok)
		return false;
	if (!fsdp)
		return ok & ((!bf16 && !mp_off) || titan_enum(c, o, mp, "", TT_DTYPES, NULL)) &
		       titan_enum(c, o, "training.mixed_precision_reduce", "", TT_DTYPES, NULL);
	return ok & titan_enum(c, o, mp, "fsdp2.param_dtype", "bfloat16=bf16|float32=fp32", "bf16") &
	       titan_enum(c, o, "training.mixed_precision_reduce", "fsdp2.reduce_dtype", "float32=fp32", "fp32");
}

/* apply_fsdp: the policy names reshard_after_forward ("default": not under
 * pp); today's torchtitan wraps tok_embeddings and [norm, output] as units
 * of their own, root_unit = "split". */
static bool titan_reshard(struct cfg *c, struct imp_out *o, bool fsdp, bool legacy)
{
	const char *path = "parallelism.fsdp_reshard_after_forward";
	bool pp = titan_count(c, "parallelism.pipeline_parallel_degree", 1) > 1;

	if (!fsdp)
		return titan_enum(c, o, path, "", "default=|always=|never=", NULL);
	if (legacy)
		imp_set(o, "fsdp2.root_unit", "\"model\"", "torchtitan's apply_fsdp before #1094",
			"tok_embeddings, norm and output are the root's, fully_shard(model)");
	else
		imp_set(o, "fsdp2.root_unit", "\"split\"", "torchtitan's apply_fsdp",
			"tok_embeddings and [norm, output] are units of their own");
	return titan_enum(c, o, path, "fsdp2.reshard_after_forward_policy",
			  "default=\"default\"|always=\"always\"|never=\"never\"", pp ? "\"default\"" : NULL);
}

/* torchtitan's llama3 flavors (models/llama/__init__.py llama3_configs at
 * 9dec370, models/llama3 today): dim, n_layers, heads, kv heads and the
 * ffn rounding give the stdlib's Llama 3.1 shapes, and the tokenizer's
 * 128,256 words its vocabulary. */
static const struct titan_flavor {
	const char *flavor, *model, *file;
	long long layers;
} titan_flavors[] = {
	{ "8B", "llama3_1_8b", "models/llama3_1", 32 },
	{ "70B", "llama3_1_70b", "models/llama3_1", 80 },
	{ "405B", "llama3_1_405b", "models/llama", 126 },
};

static const struct titan_flavor *titan_model(struct cfg *c, struct imp_out *o)
{
	const char *name = titan_text(c, "model.name", ""), *flavor = titan_text(c, "model.flavor", "");

	if (strcmp(name, "llama3"))
		return NULL;
	for (size_t i = 0; i < sizeof titan_flavors / sizeof titan_flavors[0]; i++) {
		const struct titan_flavor *f = &titan_flavors[i];

		if (strcmp(flavor, f->flavor))
			continue;
		imp_set(o, NULL, NULL, "model.flavor", arena_printf(c->arena, "model = %s (import \"%s\"): "
			"llama3 %s, the same shapes", f->model, f->file, f->flavor));
		return f;
	}
	return NULL;
}

/* Stages per rank of torchtitan's schedule: 2 for its multi-stage ones
 * (generate_split_points; pipeline_parallel.py "2 virtual stages per
 * rank"), 1 for 1F1B and GPipe. */
static long long titan_stages_per_rank(const char *sched)
{
	return strcmp(sched, "1F1B") && strcmp(sched, "GPipe") ? 2 : 1;
}

/* Which stages a rank holds (pipeline_parallel.py stage_ids_this_rank:
 * "loop" or "v" style), for the list's comment. */
static const char *titan_ranks(struct arena *a, const char *sched, long long pp, long long st)
{
	if (st <= pp)
		return "";
	if (!strcmp(sched, "ZBVZeroBubble") || !strcmp(sched, "DualPipeV"))
		return arena_printf(a, "; rank r holds stages r and %lld - r", 2 * pp - 1);
	if (st == 2 * pp)
		return arena_printf(a, "; rank r holds stages r and r + %lld", pp);
	return arena_printf(a, "; rank r holds stages r, r + %lld, ... (%lld a rank)", pp, st / pp);
}

/* @n[0..s) as parallel { stage_layers }, in stage order: NULL when every
 * stage has the same count (the even split memc makes without it). */
static const char *titan_list(struct arena *a, const long long *n, long long s)
{
	struct strbuf sb;
	bool even = true;

	for (long long i = 1; i < s; i++)
		even &= n[i] == n[0];
	if (even)
		return NULL;
	strbuf_init(&sb);
	for (long long i = 0; i < s; i++)
		strbuf_addf(&sb, "%s%lld", i ? ", " : "[", n[i]);
	strbuf_addch(&sb, ']');
	const char *r = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return r;
}

/* generate_split_points over @s stages: stage 0 n // s, each middle one a
 * layer more while the remainder lasts, the last the rest. */
static const char *titan_split_points(struct arena *a, long long s, long long layers)
{
	long long *n = ARENA_NEW_ARRAY(a, long long, (size_t)s), base = layers / s, extra = layers % s, left = layers;

	for (long long i = 0; i + 1 < s; i++) {
		n[i] = base + (i > 0 && extra > 0);
		extra -= i > 0 && extra > 0;
		left -= n[i];
	}
	n[s - 1] = left;
	return titan_list(a, n, s);
}

static bool titan_v(const char *sched)
{
	return !strcmp(sched, "ZBVZeroBubble") || !strcmp(sched, "DualPipeV");
}

/* Stages a rank the schedule takes: 1 single-stage, 2 in a V, else 2 or more. */
static bool titan_spr_ok(const char *sched, long long spr)
{
	return titan_stages_per_rank(sched) == 1 ? spr == 1 : titan_v(sched) ? spr == 2 : spr >= 2;
}

static const char *titan_spr_need(const char *sched)
{
	return titan_stages_per_rank(sched) == 1 ? "1" : titan_v(sched) ? "2" : "2 or more";
}

/* pipeline_parallel_split_points ("layers.N", increasing): stage i runs
 * from point i - 1 to point i, so len + 1 stages (pipeline_llama.py
 * pipeline_llama_manual_split); stages / pp a rank (2 for the V schedules,
 * 1 for a single-stage one: stage_ids_this_rank). Returns false on a
 * diagnosed error; *list NULL when the points give no list. */
static bool titan_points(struct cfg *c, struct imp_out *o, long long pp, long long layers, bool *done)
{
	const struct cfg_item *it = titan_item(c, "parallelism.pipeline_parallel_split_points");
	const char *sched = titan_text(c, "parallelism.pipeline_parallel_schedule", "1F1B");
	long long k = 1, prev = 0, *n, i = 0, spr;

	*done = it && it->kind == CFG_LIST && it->text && *it->text;
	if (!*done)
		return true;
	for (const char *p = it->text; *p; p++)
		k += *p == ',';
	n = ARENA_NEW_ARRAY(c->arena, long long, (size_t)k + 1);
	for (const char *p = it->text; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		char *end;
		long long at = strncmp(p, "layers.", 7) || p[7] < '0' || p[7] > '9' ? -1 : strtoll(p + 7, &end, 10);

		if (at <= prev || at >= layers || (*end && *end != ','))
			return diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "split point %lld of "
					 "'pipeline_parallel_split_points' must be \"layers.N\", N increasing from "
					 "1 to %lld", i + 1, layers - 1);
		n[i++] = at - prev;
		prev = at;
	}
	n[i] = layers - prev;
	spr = (k + 1) / pp;
	if ((k + 1) % pp || !titan_spr_ok(sched, spr))
		return diag_fail(c->diag, DIAG_NOT_DIVISIBLE, it->loc, "%lld split points make %lld stages, "
				 "not %s a rank of pp = %lld (stage_ids_this_rank)", k, k + 1,
				 titan_spr_need(sched), pp);
	const char *list = titan_list(c->arena, n, k + 1);

	if (list)
		imp_set(o, "parallel.stage_layers", list, it->path, arena_printf(c->arena,
			"the layers between the split points%s", titan_ranks(c->arena, sched, pp, k + 1)));
	return true;
}

/* generate_split_points (9dec370 parallelisms/pipelining_utils.py) without
 * split points: pp stages (2 pp for a multi-stage schedule), the first
 * n // stages layers, each middle one a layer more while the remainder
 * lasts, the last what is left. Written as first and last stage counts
 * where the remainder fills the middle stages, else as the list. */
static void titan_split(struct cfg *c, struct imp_out *o, long long pp, long long layers)
{
	const char *sched = titan_text(c, "parallelism.pipeline_parallel_schedule", "1F1B");
	const char *why = "generate_split_points; the middle stages a layer more";
	long long base = layers / pp, extra = layers % pp, st = pp * titan_stages_per_rank(sched);
	const char *list;

	bool done;

	if (!titan_points(c, o, pp, layers, &done) || done || pp < 2 || layers < st)
		return;
	if (st > pp || (extra && extra < pp - 2) || pp < 3) {
		/* the stages differ where first/last_stage_layers cannot say it */
		list = titan_split_points(c->arena, st, layers);
		if (list)
			imp_set(o, "parallel.stage_layers", list, "parallelism.pipeline_parallel_degree",
				arena_printf(c->arena, "generate_split_points over %lld stages%s", st,
					     titan_ranks(c->arena, sched, pp, st)));
		return;
	}
	if (!extra || !base)
		return;
	imp_set(o, "parallel.first_stage_layers", arena_printf(c->arena, "%lld", base),
		"parallelism.pipeline_parallel_degree", why);
	imp_set(o, "parallel.last_stage_layers", arena_printf(c->arena, "%lld", base + extra - (pp - 2)),
		"parallelism.pipeline_parallel_degree", why);
}

/* pipeline_llm (distributed/pipeline_parallel.py): with
 * pipeline_parallel_layers_per_stage, ceil((n + both) / it) virtual stages,
 * a multiple of pp, 1 a rank for a single-stage schedule and 2 or more for
 * the others; *st: their number (vp the stages a rank). */
static bool titan_layers_per_stage(struct cfg *c, struct imp_out *o, long long pp, long long eff,
				   long long lps, long long *st)
{
	const char *sched = titan_text(c, "parallelism.pipeline_parallel_schedule", "1F1B");
	const char *path = "parallelism.pipeline_parallel_layers_per_stage";
	long long n = eff / lps + (eff % lps != 0), spr = n / pp;

	if (n % pp || !titan_spr_ok(sched, spr))
		return diag_fail(c->diag, DIAG_NOT_DIVISIBLE, titan_item(c, path)->loc, "%lld layers a "
				 "stage make %lld virtual stages, not %s a rank of pp = %lld (pipeline_llm)", lps,
				 n, titan_spr_need(sched), pp);
	if (titan_stages_per_rank(sched) > 1 && !titan_v(sched))
		imp_set(o, "parallel.vp", arena_printf(c->arena, "%lld", spr), path,
			"ceil((layers + first/last_stage_less_layers) / it) stages over pp");
	*st = n;
	return true;
}

/* generate_llm_fqn_per_model_part's counts over @s stages as the list */
static const char *titan_fqn_list(struct arena *a, long long s, long long eff, long long in, long long out)
{
	long long *n = ARENA_NEW_ARRAY(a, long long, (size_t)s);

	for (long long i = 0; i < s; i++)
		n[i] = eff / s + (i < eff % s) - (i == 0 ? in : 0) - (i == s - 1 ? out : 0);
	return titan_list(a, n, s);
}

/* Today's split (distributed/pipeline_parallel.py
 * generate_llm_fqn_per_model_part): the embedding and the head count as
 * pipeline_parallel_first/last_stage_less_layers (default 1) layers; n +
 * both over the stages (2 a rank for a multi-stage schedule), the first
 * (n + both) % stages a layer more. First and last stage counts where they
 * say it, else the list. */
static bool titan_split_today(struct cfg *c, struct imp_out *o, long long pp, long long layers)
{
	const char *sched = titan_text(c, "parallelism.pipeline_parallel_schedule", "1F1B");
	long long in = titan_count(c, "parallelism.pipeline_parallel_first_stage_less_layers", 1);
	long long out = titan_count(c, "parallelism.pipeline_parallel_last_stage_less_layers", 1);
	long long lps = titan_count(c, "parallelism.pipeline_parallel_layers_per_stage", 0);
	long long st = pp * titan_stages_per_rank(sched), eff = layers + in + out, base, extra;
	const char *why = "generate_llm_fqn_per_model_part; the embedding and the head as layers";
	bool done;

	if (!titan_points(c, o, pp, layers, &done) || done)
		return true;
	if (lps > 0 && !titan_layers_per_stage(c, o, pp, eff, lps, &st))
		return true;
	base = eff / st;
	extra = eff % st;
	if (pp < 2 || base <= in || base <= out)
		return false;
	if (st > pp || pp < 3 || (extra > 1 && extra < pp - 1)) {
		const char *list = titan_fqn_list(c->arena, st, eff, in, out);

		if (list)
			imp_set(o, "parallel.stage_layers", list, "parallelism.pipeline_parallel_degree",
				arena_printf(c->arena, "generate_llm_fqn_per_model_part over %lld stages, the "
					     "embedding and the head as layers%s", st, titan_ranks(c->arena, sched, pp, st)));
		return true;
	}
	imp_set(o, "parallel.first_stage_layers", arena_printf(c->arena, "%lld", base + (extra > 0) - in),
		"parallelism.pipeline_parallel_degree", why);
	imp_set(o, "parallel.last_stage_layers", arena_printf(c->arena, "%lld", base - out),
		"parallelism.pipeline_parallel_degree", why);
	return true;
}

/* Before #980 the local batch ran as experimental.pipeline_parallel_microbatches
 * micro-batches (parallelisms/pipeline_llama.py: default the pp degree). */
static bool titan_pipeline_count(struct cfg *c, struct imp_out *o, const struct cfg_item *lb, long long pp,
				 const struct titan_flavor *f)
{
	const char *path = "experimental.pipeline_parallel_microbatches";
	const struct cfg_item *n = titan_item(c, path);
	long long k = n && n->kind == CFG_INT ? n->i : pp;

	if (k < 1 || lb->i % k)
		return diag_fail(c->diag, DIAG_NOT_DIVISIBLE, n ? n->loc : lb->loc,
				 "'training.batch_size' = %lld does not split into %lld pipeline "
				 "micro-batches", lb->i, k);
	imp_set(o, "micro_batch", arena_printf(c->arena, "%lld", lb->i / k),
		"training.batch_size / pipeline_parallel_microbatches", "the pipeline micro-batch");
	imp_set(o, "grad_accum", arena_printf(c->arena, "%lld", k), path,
		n ? "micro-batches per stage" : "torchtitan's default: the pp degree");
	if (f)
		titan_split(c, o, pp, f->layers);
	else
		imp_set(o, NULL, NULL, "experimental.pipeline_parallel_degree",
			"pp > 1: generate_split_points gives the first and the last stage n_layers // stages "
			"and each middle one a layer more while the remainder lasts: set parallel "
			"{ first_stage_layers, last_stage_layers } (or { stage_layers }) when they do not "
			"split evenly");
	return true;
}

/* Under pp the local batch runs as micro-batches of
 * pipeline_parallel_microbatch_size (1 unless given) through each stage. */
static bool titan_pipeline(struct cfg *c, struct imp_out *o, bool legacy, const struct titan_flavor *f)
{
	const char *path = "parallelism.pipeline_parallel_microbatch_size";
	const struct cfg_item *lb = titan_item(c, "training.local_batch_size"), *mb = titan_item(c, path);
	long long m = mb && mb->kind == CFG_INT ? mb->i : 1;
	long long pp = titan_count(c, "parallelism.pipeline_parallel_degree", 1);

	if (!lb)
		lb = titan_item(c, "training.batch_size");
	if (pp <= 1 || !lb || lb->kind != CFG_INT)
		return true;
	if (legacy && !mb)
		return titan_pipeline_count(c, o, lb, pp, f);
	if (m < 1 || lb->i % m)
		return diag_fail(c->diag, DIAG_NOT_DIVISIBLE, mb ? mb->loc : lb->loc,
				 "'training.local_batch_size' = %lld is not a whole number of pipeline "
				 "micro-batches of %lld", lb->i, m);
	imp_set(o, "micro_batch", arena_printf(c->arena, "%lld", m), path, mb ? NULL : "torchtitan's default");
	imp_set(o, "grad_accum", arena_printf(c->arena, "%lld", lb->i / m),
		"training.local_batch_size / pipeline_parallel_microbatch_size", "micro-batches per stage");
	if (!f || !titan_split_today(c, o, pp, f->layers))
		imp_set(o, NULL, NULL, "parallelism.pipeline_parallel_degree",
			"pp > 1: torchtitan's generate_split_points gives the first and last stages "
			"pipeline_parallel_first/last_stage_less_layers (1) fewer layers: set parallel "
			"{ first_stage_layers, last_stage_layers } or { stage_layers }");
	return true;
}

/* pipeline_parallel.py: a multi-stage schedule without
 * pipeline_parallel_layers_per_stage runs "2 virtual stages per rank"; ZBV
 * and DualPipeV place theirs in a V, which their memc schedules imply. */
static void titan_stages(struct cfg *c, struct imp_out *o)
{
	const char *path = "parallelism.pipeline_parallel_schedule";
	const char *s = titan_text(c, path, "1F1B");
	const struct cfg_item *sp = titan_item(c, "parallelism.pipeline_parallel_split_points");
	long long pp = titan_count(c, "parallelism.pipeline_parallel_degree", 1), k = 1;

	if (sp && (sp->kind != CFG_LIST || !sp->text || !*sp->text))
		sp = NULL;	/* `split_points or generate_split_points(...)`: [] is none */
	if (pp <= 1 || titan_item(c, "parallelism.pipeline_parallel_layers_per_stage"))
		return;
	for (const char *p = sp ? sp->text : ""; *p; p++)
		k += *p == ',';
	if (sp && (strcmp(s, "Interleaved1F1B") && strcmp(s, "InterleavedZeroBubble")))
		return;
	if (sp && (k + 1) % pp == 0 && (k + 1) / pp >= 2)
		imp_set(o, "parallel.vp", arena_printf(c->arena, "%lld", (k + 1) / pp), sp->path,
			"its stages / pp (stage_ids_this_rank, loop style)");
	else if (!sp && (!strcmp(s, "Interleaved1F1B") || !strcmp(s, "InterleavedZeroBubble")))
		imp_set(o, "parallel.vp", "2", path, "torchtitan's default: 2 stages per rank");
}

/* The split keys as torchtitan's JobConfig types them: the split points a
 * list of module names, layers_per_stage at least 1 (pipeline_llm divides
 * by it), the less-layers weights 0 or more; none dropped unread, and
 * bounded so that layers + weights cannot overflow. */
static bool titan_split_keys_ok(struct cfg *c)
{
	static const char *const keys[] = { "parallelism.pipeline_parallel_layers_per_stage",
					    "parallelism.pipeline_parallel_first_stage_less_layers",
					    "parallelism.pipeline_parallel_last_stage_less_layers" };
	const struct cfg_item *sp = titan_item(c, "parallelism.pipeline_parallel_split_points");
	bool ok = !sp || sp->kind == CFG_LIST ||
		  diag_fail(c->diag, DIAG_TYPE_MISMATCH, sp->loc, "'%s' is a list of module names, "
			    "[\"layers.N\", ...]", sp->path);

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct cfg_item *it = titan_item(c, keys[i]);

		if (it && (it->kind != CFG_INT || it->i < (i ? 0 : 1) || it->i > 1 << 20))
			ok = diag_fail(c->diag, it->kind == CFG_INT ? DIAG_OUT_OF_RANGE : DIAG_TYPE_MISMATCH,
				       it->loc, "'%s' is %s; memc import needs a whole number from %d to %d here",
				       it->path, it->text, i ? 0 : 1, 1 << 20);
	}
	return ok;
}

/* apply_tp: the norms are SequenceParallel() whenever tp > 1. */
static void titan_tp(struct cfg *c, struct imp_out *o)
{
	if (titan_count(c, "parallelism.tensor_parallel_degree", 1) > 1)
		imp_set(o, "parallel.sequence_parallel", "true", "parallelism.tensor_parallel_degree",
			"torchtitan's TP plan shards the norms' sequence");
}

/* The llama3 Attention.forward repeats K and V to every query head before
 * F.scaled_dot_product_attention, until #2259 (2026-01-27) passed
 * enable_gqa: the stdlib's sdpa attention. */
static void titan_attention(struct cfg *c, struct imp_out *o)
{
	if (!strcmp(titan_text(c, "model.name", ""), "llama3"))
		imp_set(o, "attention", "sdpa", "torchtitan's llama3 Attention", "repeat_kv to every query "
			"head, then F.scaled_dot_product_attention (until #2259, 2026-01-27: enable_gqa)");
}

/* "a,b" -> ["a", "b"], a .mem list of strings. */
static const char *titan_str_list(struct arena *a, const char *list)
{
	struct strbuf sb;

	strbuf_init(&sb);
	strbuf_addch(&sb, '[');
	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		strbuf_addf(&sb, "%s\"%.*s\"", sb.len > 1 ? ", " : "", (int)strcspn(p, ","), p);
	strbuf_addch(&sb, ']');
	const char *t = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return t;
}

/* distributed/compile.py: compile.enable compiles each block and, with
 * "loss" in compile.components (its default), the loss; the older
 * training.compile compiled the blocks only. components/loss.py
 * cross_entropy_loss is F.cross_entropy(pred.flatten(0, 1).float(), ...)
 * outside the model: loss = upcast, compiled or not. */
static bool titan_loss_compile(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *en = titan_item(c, "compile.enable"), *old = titan_item(c, "training.compile");
	const struct cfg_item *comp = titan_item(c, "compile.components");
	bool ok = true;

	if (en)
		ok = map_item(c, en, &(const struct map_row){ en->path, "compile", MAP_IF_TRUE, "true" }, o);
	if (en && en->kind == CFG_BOOL && en->i && comp)
		imp_set(o, "compile_components", titan_str_list(c->arena, comp->text), comp->path, NULL);
	if (!en && old)
		ok = map_item(c, old, &(const struct map_row){ old->path, "compile", MAP_IF_TRUE, "true" }, o);
	if (!en && old && old->kind == CFG_BOOL && old->i)
		imp_set(o, "compile_components", "[\"model\"]", old->path, "the blocks only");
	imp_set(o, "loss", "upcast", "torchtitan's cross_entropy_loss (pred.float())", NULL);
	return ok;
}

/* AsyncTP is an Inductor pass: torchtitan refuses it without compiled
 * blocks (9dec370 parallelize_llama.py "Async TP requires
 * --training.compile", under tp > 1; config/configs.py today: "Async TP
 * requires 'model' in --compile.components and --compile.enable"). */
static bool titan_async_tp(struct cfg *c)
{
	const struct cfg_item *at = titan_item(c, "parallelism.enable_async_tensor_parallel");
	const struct cfg_item *en = titan_item(c, "compile.enable"), *old = titan_item(c, "training.compile");
	const char *comp = titan_text(c, "compile.components", "model,loss");
	bool blocks = en ? en->kind == CFG_BOOL && en->i && strstr(comp, "model") :
		      old && old->kind == CFG_BOOL && old->i;

	if (!at || at->kind != CFG_BOOL || !at->i || blocks ||
	    titan_count(c, "parallelism.tensor_parallel_degree", 1) <= 1)
		return true;
	return diag_fail(c->diag, DIAG_MISSING_FIELD, at->loc, "'enable_async_tensor_parallel' needs "
			 "the blocks compiled (training.compile = true before #980, compile.enable with "
			 "\"model\" in compile.components today): torchtitan refuses AsyncTP without them");
}

/* components/quantization/float8.py: the "quantize.linear.float8"
 * converter ("float8" before) swaps nn.Linear for torchao's Float8Linear;
 * its [quantize.linear.float8] keys only act with it. */
static bool titan_float8(struct cfg *c, struct imp_out *o)
{
	static const char *const keys[] = { "enable_fsdp_float8_all_gather",
					    "precompute_float8_dynamic_scale_for_fsdp" };
	const struct cfg_item *conv = titan_item(c, "model.converters");
	const struct cfg_item *old = titan_item(c, "float8.enable_float8_linear");
	bool on = old && old->kind == CFG_BOOL && old->i, ok = true;

	for (const char *p = conv ? conv->text : NULL; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		size_t n = strcspn(p, ",");

		if ((n == 22 && !strncmp(p, "quantize.linear.float8", n)) || (n == 6 && !strncmp(p, "float8", n)))
			on = true;
		else
			ok = diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, conv->loc, "'model.converters' has "
				       "'%.*s', which memc import cannot express (it knows quantize.linear.float8)",
				       (int)n, p);
	}
	if (!on)
		return ok;
	imp_set(o, "fp8.library", "\"torchao\"", old && old->i ? old->path : conv->path, "Float8Linear");
	if (old && old->i)
		imp_set(o, "fp8.save_float8_casts", "true", old->path, "the torchao of these configs, "
			"before pytorch/ao#1480 (2025-01-13), saved the float8 casts; drop it for a later torchao");
	ok &= titan_enum(c, o, "quantize.linear.float8.recipe_name", "fp8.recipe",
			 "tensorwise=\"tensorwise\"|rowwise=\"rowwise\"", NULL);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *path = arena_printf(c->arena, "quantize.linear.float8.%s", keys[i]);
		const struct cfg_item *it = titan_item(c, path);

		if (it)
			ok &= map_item(c, it, &(const struct map_row){ path, arena_printf(c->arena, "fp8.%s",
				       keys[i]), MAP_BOOL, NULL }, o);
	}
	return ok;
}

/* optimizer.name with optimizer.implementation, whose default is fused. */
static bool titan_optimizer(struct cfg *c, struct imp_out *o, bool legacy)
{
	const char *name = titan_text(c, "optimizer.name", NULL);
	const struct cfg_item *fused = titan_item(c, "optimizer.fused");
	const char *impl = titan_text(c, "optimizer.implementation", legacy ? "foreach" : "fused");
	const char *why = legacy ? "implementation: foreach, torchtitan's default before #881 (2025-02-24)" :
			  "implementation: torchtitan's default fused";

	if (fused && !titan_item(c, "optimizer.implementation")) {
		impl = fused->kind == CFG_BOOL && fused->i ? "fused" : "foreach";
		why = "optimizer.fused";
	}
	bool ok = titan_enum(c, o, "optimizer.name", "", "AdamW=|Adam=", NULL) &
		  titan_enum(c, o, "optimizer.implementation", "", "fused=|foreach=|for-loop=", NULL);

	if (!ok || !name)
		return ok;
	impl = !strcmp(impl, "fused") ? "(impl = fused)" : !strcmp(impl, "for-loop") ? "(impl = for_loop)" : "";
	imp_set(o, "optimizer", arena_printf(c->arena, "%s%s", strcasecmp(name, "adam") ? "adamw" : "adam", impl),
		"optimizer.name", titan_item(c, "optimizer.implementation") ? "optimizer.implementation" : why);
	return true;
}

/* torchtitan shards with FSDP2 whenever dp_shard is not 1 (its default -1
 * is "the GPUs left over", memc's default for dp_shard as well) or cp > 1. */
bool titan_import(struct cfg *c, struct imp_out *o)
{
	bool legacy = titan_rename_legacy(c);
	bool fsdp = titan_count(c, "parallelism.data_parallel_shard_degree", -1) != 1 ||
		    titan_count(c, "parallelism.context_parallel_degree", 1) > 1;
	bool ok;

	if (legacy)
		imp_set(o, NULL, NULL, "torchtitan before #980", "torchtitan before #980 (2025-03-18): "
			"its training.*_degree, [experimental] and [float8] keys are read as today's "
			"parallelism.* and quantize.linear.float8.* (the comments name those), with that "
			"torchtitan's defaults");
	ok = titan_precision(c, o, fsdp) & titan_reshard(c, o, fsdp, legacy);

	titan_ac_option(c, o);
	for (size_t i = 0; i < c->n; i++) {
		struct cfg_item *it = &c->items[i];

		/* Without FSDP the replicas are DDP's over all dp ranks, memc's plain data parallelism. */
		if (!fsdp && it->kind == CFG_INT && (!strcmp(it->path, "parallelism.data_parallel_shard_degree") ||
						     !strcmp(it->path, "parallelism.data_parallel_replicate_degree"))) {
			imp_set(o, NULL, NULL, it->path, arena_printf(c->arena, "%s = %lld: no FSDP, so DDP "
				"over all dp ranks", it->path, it->i));
			cfg_set_scalar(it, CFG_NULL, "null");
		}
		/* apply_fsdp is its one reader (parallelize_llama.py, 9dec370 and
		 * today): without FSDP torchtitan offloads nothing */
		if (!fsdp && it->kind == CFG_BOOL && it->i && !strcmp(it->path, "training.enable_cpu_offload")) {
			imp_set(o, NULL, NULL, it->path, "training.enable_cpu_offload = true: torchtitan reads "
				"it in apply_fsdp only, and this job has no FSDP (data_parallel_shard_degree 1, "
				"no cp): ignored, nothing is offloaded");
			cfg_set_scalar(it, CFG_BOOL, "false");
		}
		if (strcmp(it->path, "parallelism.data_parallel_shard_degree") || it->kind != CFG_INT)
			continue;
		if (it->i != 1)
			imp_set(o, "fsdp", "full_shard", it->path, NULL);
		if (it->i == -1)
			cfg_set_scalar(it, CFG_NULL, "null");
	}
	/* dp_shard 1 under cp still shards, over the dp_shard x cp mesh
	 * (9dec370 parallelize_llama.py: `dp_shard_enabled or cp_enabled`,
	 * apply_fsdp on "dp_shard_cp"): said, so the job gets the replay too */
	if (fsdp && !imp_find(o, "fsdp") && titan_count(c, "parallelism.context_parallel_degree", 1) > 1)
		imp_set(o, "fsdp", "full_shard", "parallelism.context_parallel_degree",
			"FSDP2 over the dp_shard x cp mesh (dp_shard_cp)");
	ok &= titan_optimizer(c, o, legacy);
	const struct titan_flavor *flavor = titan_model(c, o);

	ok &= map_apply(c, titan_rows, o);
	titan_tp(c, o);
	if (!titan_split_keys_ok(c))
		return false;
	titan_stages(c, o);
	ok &= titan_pipeline(c, o, legacy, flavor);
	titan_attention(c, o);
	return ok & titan_async_tp(c) & titan_loss_compile(c, o) & titan_float8(c, o);
}
