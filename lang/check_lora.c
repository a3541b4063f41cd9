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
	{ "dequant_dtype", "dtype", false }, { NULL, NULL, false },
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
					    "compute_dtype", "prepare_kbit", "skip_modules", "dequant_dtype" };

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
				  "compute_dtype, prepare_kbit, skip_modules, dequant_dtype", syn ? "; did you mean '" : "",
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
	return ok && fsdp_storage_ok(ev, j);
}
