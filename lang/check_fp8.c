/* SPDX-License-Identifier: MIT */
/*
 * check_fp8.c - the train block's fp8 { } record: FP8 training in the
 * words of Transformer Engine, Megatron-Core and torchao (language.md
 * §3.7, memory-model.md "FP8 training").
 *
 * Each library accepts only its own recipes and switches; a switch of the
 * other library, or one that another key makes meaningless, is an error at
 * the key that would be ignored.
 */
#include <string.h>

#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/eval_impl.h"

static bool str_key(const struct check_job *j, const char *key, struct value *v)
{
	return check_job_field(j, key, v) && v->kind == VAL_STRING;
}

static bool true_key(const struct check_job *j, const char *key, struct value *v)
{
	return check_job_field(j, key, v) && v->kind == VAL_BOOL && v->b;
}

/* Records are flattened into dotted keys; an empty `fp8 { }` has none,
 * so the block's own field counts too. */
static bool has_record(const struct check_job *j, const char *name)
{
	if (check_job_record(j, name))
		return true;
	for (const struct field *f = j->block; f; f = f->next)
		if (!strcmp(f->name, name))
			return true;
	return false;
}

bool check_fp8_on(const struct check_job *j)
{
	return has_record(j, "fp8");
}

/* The library: "transformer_engine" unless given, torchao for rowwise. */
const char *check_fp8_library(const struct check_job *j)
{
	struct value v;

	if (str_key(j, "fp8.library", &v))
		return v.str;
	if (str_key(j, "fp8.recipe", &v) && !strcmp(v.str, "rowwise"))
		return "torchao";
	return "transformer_engine";
}

/* The recipe: TE's DelayedScaling, torchao's tensorwise unless given. */
const char *check_fp8_recipe(const struct check_job *j)
{
	struct value v;

	if (str_key(j, "fp8.recipe", &v))
		return v.str;
	return strcmp(check_fp8_library(j), "torchao") ? "delayed" : "tensorwise";
}

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return true;
	return false;
}

/* library and recipe: their values, and the pairs that exist. */
static bool names_ok(struct eval *ev, const struct check_job *j, bool te)
{
	static const char *const te_recipes[] = { "delayed", "tensorwise", "mxfp8", NULL };
	static const char *const ao_recipes[] = { "tensorwise", "rowwise", NULL };
	struct value v;

	if (str_key(j, "fp8.library", &v) && strcmp(v.str, "transformer_engine") && strcmp(v.str, "torchao")) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'library' must be \"transformer_engine\" or \"torchao\"");
		return false;
	}
	if (!str_key(j, "fp8.recipe", &v) || one_of(v.str, te ? te_recipes : ao_recipes))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, te ? "Transformer Engine's recipes are \"delayed\" "
		   "(DelayedScaling), \"tensorwise\" (Float8CurrentScaling) and \"mxfp8\" (MXFP8BlockScaling)" :
		   "torchao's Float8 recipes are \"tensorwise\" and \"rowwise\"");
	return false;
}

static bool ignored(struct eval *ev, const struct check_job *j, const char *key, const char *why)
{
	struct value v;

	if (!check_job_field(j, key, &v))
		return true;
	eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' %s", strchr(key, '.') + 1, why);
	return false;
}

bool check_fp8_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, fs;
	bool te, ok;

	if (!check_fp8_on(j))
		return true;
	te = strcmp(check_fp8_library(j), "torchao") != 0;
	ok = names_ok(ev, j, te);
	if (strcmp(check_fp8_recipe(j), "delayed"))
		ok &= ignored(ev, j, "fp8.amax_history_len", "is DelayedScaling's; this recipe keeps no amax history");
	if (te) {
		ok &= ignored(ev, j, "fp8.enable_fsdp_float8_all_gather", "is torchao's (library = \"torchao\")");
		ok &= ignored(ev, j, "fp8.precompute_float8_dynamic_scale_for_fsdp",
			      "is torchao's (library = \"torchao\")");
		ok &= ignored(ev, j, "fp8.save_float8_casts", "is torchao's (library = \"torchao\")");
		ok &= ignored(ev, j, "fp8.force_recompute_fp8_weight_in_bwd", "is torchao's (library = \"torchao\")");
		return ok;
	}
	ok &= ignored(ev, j, "fp8.fp8_model_init", "is Transformer Engine's; torchao keeps high-precision weights");
	ok &= ignored(ev, j, "fp8.fp8_param_gather", "is Megatron-Core's (Transformer Engine)");
	ok &= ignored(ev, j, "fp8.weight_cache", "is Transformer Engine's (is_first_microbatch)");
	if (strcmp(check_fp8_recipe(j), "tensorwise"))
		ok &= ignored(ev, j, "fp8.save_float8_casts", "describes torchao's tensorwise path before "
			      "2025-01 (rowwise always saved high precision)");
	if (!true_key(j, "fp8.save_float8_casts", &v))
		ok &= ignored(ev, j, "fp8.force_recompute_fp8_weight_in_bwd", "recomputes the saved float8 "
			      "weight, which only 'save_float8_casts = true' saves");
	/* an fsdp2 { } record is fully_shard too (language.md §3.7) */
	bool fsdp = (check_job_field(j, "fsdp", &fs) && fs.kind == VAL_SYMBOL && strcmp(fs.str, "none")) ||
		    has_record(j, "fsdp2");

	if (!fsdp && true_key(j, "fp8.enable_fsdp_float8_all_gather", &v)) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.loc, "'enable_fsdp_float8_all_gather' casts FSDP's "
			   "all-gather to float8, but the job has no 'fsdp'");
		ok = false;
	}
	return ok;
}

/* FP8 GEMMs need sm89 (Ada, Hopper); MXFP8's block-scaled GEMMs sm100
 * (Blackwell). A GPU without compute_capability (cc 0) is not judged. */
void check_fp8_capability(struct eval *ev, const struct check_job *j, double cc)
{
	bool mx;
	double need;
	struct loc at = NO_LOC;

	if (!check_fp8_on(j) || cc <= 0.0)
		return;
	mx = !strcmp(check_fp8_recipe(j), "mxfp8");
	need = mx ? 10.0 : 8.9;
	if (cc >= need)
		return;
	for (const struct field *f = j->block; f; f = f->next)
		if (!strcmp(f->name, "fp8"))
			at = f->loc;
	diag_note(eval_error(ev, DIAG_UNSUPPORTED_DTYPE, at, "the %s recipe needs compute capability %.1f "
			     "(%s) or newer; %s has %.1f", check_fp8_recipe(j), need,
			     mx ? "Blackwell" : "Ada, Hopper", j->cluster.decl->name, cc),
		  NO_LOC, "%s", "the memory prediction assumes fp8 GEMMs; leave out 'fp8 { }' on this GPU");
}
