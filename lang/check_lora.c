/* SPDX-License-Identifier: MIT */
/*
 * check_lora.c - the arguments of a train block's lora() and qlora() calls
 * (PEFT LoraConfig and BitsAndBytesConfig spellings) and FSDP's rule on the
 * 4-bit storage dtype.
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

/* The arguments lora() and qlora() take; an unknown one would be ignored.
 * PEFT LoraConfig / BitsAndBytesConfig spellings: docs/language.md §3.7. */
static const struct field_spec lora_args[] = {
	{ "r", "count", false }, { "alpha", "number", false }, { "targets", "list", false },
	{ "dropout", "number", false }, { "dtype", "dtype", false }, { "modules_to_save", "list", false },
	{ "use_dora", "bool", false }, { "use_rslora", "bool", false }, { "adapters", "count", false },
	{ "quant", "dtype", false }, { "save_input", "bool", false }, { "quant_storage", "dtype", false },
	{ "double_quant", "bool", false }, { "compute_dtype", "dtype", false },
	{ "prepare_kbit", "bool", false }, { "skip_modules", "list", false },
	{ "dequant_dtype", "dtype", false }, { "quantizer", "string", false }, { NULL, NULL, false },
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
					      { "prepare_model_for_kbit_training", "prepare_kbit" },
					      { "llm_int8_skip_modules", "skip_modules" },
					      { "ignore_modules", "skip_modules" } };

	for (size_t i = 0; i < sizeof syn / sizeof syn[0]; i++)
		if (!strcmp(syn[i][0], name))
			return syn[i][1];
	return NULL;
}

static bool qlora_only(const char *name)
{
	static const char *const only[] = { "quant", "save_input", "quant_storage", "double_quant",
					    "compute_dtype", "prepare_kbit", "skip_modules", "dequant_dtype",
					    "quantizer" };

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

/* Who packs the 4-bit weights while they load: their transients differ
 * (docs/memory-model.md, the run's loading). */
static bool quantizer_ok(struct eval *ev, struct value v)
{
	if (v.kind != VAL_STRING || !strcmp(v.str, "bitsandbytes") || !strcmp(v.str, "torchao") ||
	    !strcmp(v.str, "torchao-0.1") || !strcmp(v.str, "hqq"))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'quantizer' must be \"bitsandbytes\" (Params4bit), "
		   "\"torchao\" (to_nf4 in chunks, torchao 0.2 and later), \"torchao-0.1\" (to_nf4 over "
		   "the whole tensor) or \"hqq\" (HQQLinear)");
	return false;
}

/* use_dora: true is PEFT's DoraLinearLayer; "fsdp_qlora" that script's own
 * BNBDORA / HQQDORA layers, which save and build less (build_param.c). */
static bool dora_form_ok(struct eval *ev, struct value v)
{
	if (!strcmp(v.str, "fsdp_qlora"))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'use_dora' must be true or false (PEFT's DoRA) or "
		   "\"fsdp_qlora\" (fsdp_qlora's scripts/dora.py layers), not \"%s\"", v.str);
	return false;
}

/* `quant` stores the base weights: a dtype of 8 bits or fewer (nf4 or
 * int8; fp32 would be a larger copy, not a quantisation). `dtype`,
 * `compute_dtype` and `dequant_dtype` are what torch computes in (the
 * adapters, MatMul4Bit's dequantised weight): a plain float of 16 bits or
 * more. Either other way the number memc gave was of no real job. */
static bool dtype_arg_ok(struct eval *ev, const char *name, struct value v, const char *what)
{
	const struct dtype *d = v.kind == VAL_DTYPE ? v.dtype : NULL;
	bool quant = !strcmp(name, "quant");

	if (!d || (!quant && strcmp(name, "dtype") && strcmp(name, "compute_dtype") && strcmp(name, "dequant_dtype")))
		return true;
	if (quant ? d->kind != DTYPE_BOOL && d->bits <= 8 :
		    d->kind == DTYPE_FLOAT && d->bits >= 16 && !dtype_is_block_scaled(d))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, quant ? "%s must be a dtype of 8 bits or fewer (nf4, nf4_dq, fp4, "
		   "int8): the base weights are stored in it, and %s is not a quantisation" :
		   "%s must be a float dtype of 16 bits or more (bf16, fp16, fp32): torch computes in it, "
		   "and not in %s", what, dtype_name(d));
	return false;
}

static bool lora_arg(struct eval *ev, const char *call, const char *name, struct value v)
{
	const struct field_spec *s = check_spec_find(lora_args, name);
	char what[96];

	bool adapter = !strcmp(call, "adapter") || !strcmp(call, "adapter_v2");

	/* adapter(...) and adapter_v2(...) take only the quantised base's */
	if (adapter && (!s || !qlora_only(name))) {
		diag_note(eval_error(ev, DIAG_BAD_ARGUMENT, v.origin, "%s() has no argument '%s'", call, name),
			  NO_LOC, "%s() takes the quantised base's quant, save_input, quant_storage, double_quant, "
			  "compute_dtype, prepare_kbit, skip_modules, dequant_dtype, quantizer", call);
		return false;
	}
	if (!s || (qlora_only(name) && strcmp(call, "qlora") && !adapter)) {
		const char *syn = lora_synonym(name);
		struct diag *d = eval_error(ev, DIAG_BAD_ARGUMENT, v.origin, "%s() has no argument '%s'", call, name);

		if (syn || !s)
			diag_note(d, NO_LOC, "%s() takes r, alpha, targets, dropout, dtype, modules_to_save, "
				  "use_dora, use_rslora, adapters%s%s%s%s", call,
				  strcmp(call, "qlora") ? "" : ", quant, save_input, quant_storage, double_quant, "
				  "compute_dtype, prepare_kbit, skip_modules, dequant_dtype, quantizer", syn ? "; did you mean '" : "",
				  syn ? syn : "", syn ? "'?" : "");
		else
			diag_note(d, NO_LOC, "'%s' is an argument of qlora(...)", name);
		return false;
	}
	if (!strcmp(name, "targets") && all_linear(v))
		return true;
	if (!strcmp(name, "use_dora") && v.kind == VAL_STRING)
		return dora_form_ok(ev, v);
	snprintf(what, sizeof what, "'%s' of %s()", name, call);
	if (!check_value_type(ev, v, s->type, what) || !dtype_arg_ok(ev, name, v, what))
		return false;
	return !strcmp(name, "quantizer") ? quantizer_ok(ev, v) :
	       check_range(ev, v, check_range_of(lora_ranges, name), what);
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

static bool ft_arg_of(struct eval *ev, const struct value *ft, const char *name, struct value *v)
{
	return env_lookup(ft->args, intern_cstr(ev->interner, name), v);
}

/* Each quantizer packs its own format: HQQLinear (fsdp_qlora's hqq_*:
 * nbits=4, group_size=64) hqq4 only, torchao's to_nf4 NF4Tensor only, and
 * bitsandbytes' Params4bit no hqq4. Another pair would give one library's
 * storage with another's loading transient: a job no one can run. */
static bool quant_pair_ok(struct eval *ev, const struct value *ft)
{
	struct value q, qz;
	bool has_q = ft_arg_of(ev, ft, "quant", &q) && q.kind == VAL_DTYPE;
	bool has_qz = ft_arg_of(ev, ft, "quantizer", &qz) && qz.kind == VAL_STRING;
	const char *who = has_qz ? qz.str : "bitsandbytes", *dt = has_q ? dtype_name(q.dtype) : "nf4_dq";
	bool hqq4 = has_q && !strcmp(dt, "hqq4"), nf4 = !strncmp(dt, "nf4", 3);
	const char *need = !strcmp(who, "hqq") ? (hqq4 ? NULL : "quant = hqq4 (HQQLinear's 4-bit groups of 64)") :
			   strncmp(who, "torchao", 7) ? (hqq4 ? "quantizer = \"hqq\" (HQQLinear)" : NULL) :
			   nf4 ? NULL : "quant = nf4_dq (to_nf4's NF4Tensor, its scalers quantised)";
	struct diag *d;

	if (!need)
		return true;
	d = eval_error(ev, DIAG_TYPE_MISMATCH, has_q ? q.origin : qz.origin, "quant = %s%s is not what the "
		       "\"%s\" quantizer packs: use %s", dt, has_q ? "" : " (the default)", who, need);
	if (has_q && has_qz)
		diag_note(d, qz.origin, "'quantizer' is set here");
	return false;
}

/* fsdp_qlora's BNBDORA and HQQDORA wrap its 4-bit Linear4bit or HQQLinear
 * (scripts/dora.py; train.py's bnb_dora / hqq_dora): without such a base
 * the layers memc would count are no framework's. */
static bool dora_base_ok(struct eval *ev, const struct value *ft)
{
	struct value v, qz;

	if (!ft_arg_of(ev, ft, "use_dora", &v) || v.kind != VAL_STRING)
		return true;
	if (strcmp(ft->str, "qlora")) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.origin, "use_dora = \"fsdp_qlora\" is fsdp_qlora's BNBDORA / "
			   "HQQDORA, which wrap a 4-bit base: use qlora(...), or use_dora = true (PEFT's DoRA)");
		return false;
	}
	if (!ft_arg_of(ev, ft, "quantizer", &qz) || qz.kind != VAL_STRING || !strncmp(qz.str, "hqq", 3) ||
	    !strcmp(qz.str, "bitsandbytes"))
		return true;
	diag_note(eval_error(ev, DIAG_TYPE_MISMATCH, v.origin, "use_dora = \"fsdp_qlora\" is fsdp_qlora's "
			     "DoRA over bitsandbytes or HQQ, not over quantizer = \"%s\": use use_dora = true "
			     "(torchtune's and PEFT's DoRA)", qz.str), qz.origin, "'quantizer' is set here");
	return false;
}

/* HQQLinear trains through HQQMatmulNoCacheDeq (every *_backprop backend),
 * whose setup_context saves its input x for backward: without
 * save_input = true memc would drop what HQQ keeps. */
static bool hqq_saves_ok(struct eval *ev, const struct value *ft)
{
	struct value qz, si;
	bool given = ft_arg_of(ev, ft, "save_input", &si) && si.kind == VAL_BOOL;

	if (!ft_arg_of(ev, ft, "quantizer", &qz) || qz.kind != VAL_STRING || strcmp(qz.str, "hqq") ||
	    (given && si.b))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, given ? si.origin : qz.origin, "HQQLinear's backprop matmul "
		   "(HQQMatmulNoCacheDeq) saves each quantised Linear's input for backward: with quantizer = "
		   "\"hqq\" write save_input = true");
	return false;
}

/* dequant_dtype is bitsandbytes' QuantState.dtype (MatMul4Bit's second
 * copy, build_param.c param_cast): torchao's NF4Tensor and HQQLinear
 * dequantise straight to their compute dtype. */
static bool dequant_ok(struct eval *ev, const struct value *ft)
{
	struct value qz, dd;

	if (!ft_arg_of(ev, ft, "dequant_dtype", &dd) || !ft_arg_of(ev, ft, "quantizer", &qz) ||
	    qz.kind != VAL_STRING || !strcmp(qz.str, "bitsandbytes"))
		return true;
	diag_note(eval_error(ev, DIAG_IGNORED_SETTING, dd.origin, "'dequant_dtype' is bitsandbytes' "
			     "QuantState.dtype; quantizer = \"%s\" dequantises to the compute dtype without "
			     "it: drop it", qz.str), qz.origin, "'quantizer' is set here");
	return false;
}

/* double_quant only picks quant's default (nf4_dq or nf4, build_param.c):
 * beside a written quant it changes nothing. */
static bool double_quant_ok(struct eval *ev, const struct value *ft)
{
	struct value q, dq;

	if (!ft_arg_of(ev, ft, "double_quant", &dq) || !ft_arg_of(ev, ft, "quant", &q))
		return true;
	diag_note(eval_error(ev, DIAG_IGNORED_SETTING, dq.origin, "'double_quant' only picks the default "
			     "quant (nf4_dq or nf4), and quant is written: drop one"), q.origin,
		  "'quant' is set here");
	return false;
}

bool check_finetune(struct eval *ev, const struct check_job *j)
{
	const struct value *ft = &j->finetune;
	struct value v;
	const char *name;
	bool ok = true;

	if (ft->kind != VAL_CALL)
		return true;
	for (unsigned i = 0; (name = env_name_at(ft->args, i, &v)); i++)
		ok &= lora_arg(ev, ft->str, name, v);
	if (!ok)
		return false;
	ok = dora_base_ok(ev, ft);
	if (!strcmp(ft->str, "qlora"))
		ok &= quant_pair_ok(ev, ft) & double_quant_ok(ev, ft) & hqq_saves_ok(ev, ft) &
		      dequant_ok(ev, ft);
	return ok && fsdp_storage_ok(ev, j);
}
