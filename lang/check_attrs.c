/* SPDX-License-Identifier: MIT */
/*
 * check_attrs.c - the attributes of tensor statements (`linear`, `hf(...)`,
 * `op(...)`, `recompute(...)`, ...), and template bodies no job
 * instantiates: walked with unknown parameters and unknown job bindings,
 * so types, units and attributes are checked, shapes are not.
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
#include "lang/str.h"
#include "lang/strbuf.h"

static const char *const tensor_words[] = { "linear", "for_grad", "forward", "backward", "loss",
					    "grouped", "paged", "expert", "hf", "adaptable", "op", "recompute",
					    "shared_dropout", "input_of", "fp8_copy", "tied", "output",
					    "matmul", "buffer", "adapter", NULL };

static bool is_word(const char *name)
{
	for (const char *const *w = tensor_words; *w; w++)	/* the first byte rejects most */
		if (str_is(*w, name))
			return true;
	return false;
}

/* hf(q_proj, ...): the Hugging Face / PEFT names of a parameter, for
 * `freeze` and LoRA `targets`. */
static void check_hf(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	if (s->tensor.kind != TENSOR_PARAM || !a->args)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "hf(name, ...) names a param tensor's module");
	for (const struct arg *x = a->args; x; x = x->next)
		if (x->name || x->value->kind != EXPR_NAME)
			eval_error(ev, DIAG_BAD_ARGUMENT, x->value->loc, "hf() takes module names such as q_proj");
}

/* op(mm) / op(sdpa): the aten op that produced a saved tensor, which an
 * op-level checkpoint policy keeps (language.md). A save waiting on
 * for_grad may vanish, an op output does not. */
static void check_op(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	const struct arg *x = a->args;
	bool named = x && !x->next && !x->name && x->value->kind == EXPR_NAME;

	if (!named || (strcmp(x->value->name.name, "mm") && strcmp(x->value->name.name, "sdpa")))
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "op() takes one op name: mm or sdpa");
	else if (s->tensor.kind != TENSOR_SAVES)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "op() marks a saves tensor");
	for (const struct attr *o = s->tensor.attrs; o; o = o->next)
		if (!strcmp(o->name, "for_grad"))
			eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "an op() output is saved whatever trains: "
				   "drop for_grad(...)");
}

/* Megatron-Core's --recompute-modules that memc models (language.md). */
static const char *const recompute_modules[] = { "core_attn", "mlp", "moe", "moe_act", "layernorm",
						 "mla_up_proj", "shared_experts", NULL };

bool check_is_recompute_module(const char *name)
{
	for (const char *const *m = recompute_modules; *m; m++)
		if (!strcmp(*m, name))
			return true;
	return false;
}

/* recompute(mlp, ...): the Megatron modules whose selective recomputation
 * drops this save (it exists again during the layer's backward). */
static void check_recompute(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	if (s->tensor.kind != TENSOR_SAVES || !a->args)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "recompute(module, ...) marks a saves tensor");
	for (const struct arg *x = a->args; x; x = x->next)
		if (x->name || x->value->kind != EXPR_NAME || !check_is_recompute_module(x->value->name.name))
			eval_error(ev, DIAG_BAD_ARGUMENT, x->value->loc, "recompute() takes Megatron modules: "
				   "core_attn, mlp, moe, moe_act, layernorm, mla_up_proj, shared_experts");
}

/* shared_dropout: the adapters of this layer's params so marked read one
 * dropped input (LitGPT LoRAQKVLinear), which only a param can have. */
static void check_shared_dropout(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	if (s->tensor.kind != TENSOR_PARAM || a->args)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "shared_dropout marks a param, without arguments");
}

/* An attribute of a saves tensor naming the Linears that read it:
 * @name(param, ...). */
static void check_saves_params(struct eval *ev, const struct stmt *s, const struct attr *a, const char *name)
{
	if (s->tensor.kind != TENSOR_SAVES || !a->args)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "%s(param, ...) marks a saves tensor", name);
	for (const struct arg *x = a->args; x; x = x->next)
		if (x->name || x->value->kind != EXPR_NAME)
			eval_error(ev, DIAG_BAD_ARGUMENT, x->value->loc, "%s() takes param names", name);
}

/* input_of(p, ...): a save that is also the input of these Linears (their
 * 4-bit matmuls keep it in the graph, qlora save_input), of a saves. */
static void check_input_of(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	check_saves_params(ev, s, a, "input_of");
	for (const struct attr *o = s->tensor.attrs; o; o = o->next)
		if (!strcmp(o->name, "for_grad"))
			eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "a for_grad(...) save already follows its "
				   "params: drop input_of(...)");
}

/* tied(embedding): the save is the input of a matmul with an earlier
 * layer's weight (a tied LM head), whose gradient autograd then holds
 * until that layer's backward (build.c, memory-model.md).  The layer is
 * named, not resolved: the head's file need not import it. */
static void check_tied(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	const struct arg *x = a->args;

	if (s->tensor.kind != TENSOR_SAVES || !x || x->next || x->name || x->value->kind != EXPR_NAME)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "tied(layer) marks a saves tensor with the "
			   "one layer whose weight it multiplies, such as tied(embedding)");
}

/* fp8_copy(o, ...): a save that the named FP8 Linears read as their input
 * and quantise, saving the quantised copy beside it (the out-projection
 * reading the flash output that attention keeps). */
static void check_fp8_copy(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	check_saves_params(ev, s, a, "fp8_copy");
}

/* output: the tensor the model returns to the training loop (its logits),
 * which `keep_output` (and pipelining's step()) hold past the layer's
 * backward; a save or a forward temporary, without arguments. */
static void check_output(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	bool fwd = false, bwd = false, fg = false;

	for (const struct attr *o = s->tensor.attrs; o; o = o->next) {
		fwd |= !strcmp(o->name, "forward");
		bwd |= !strcmp(o->name, "backward");
		fg |= !strcmp(o->name, "for_grad");
	}
	if (a->args || bwd || (s->tensor.kind != TENSOR_SAVES && (s->tensor.kind != TENSOR_TEMP || !fwd)))
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "output marks a saves or forward temp tensor, "
			   "without arguments");
	else if (fg)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "the loop holds the model's output whatever "
			   "trains: drop for_grad(...)");
}

/* matmul, matmul(previous): a temp alive beside its layer's per-call
 * weight copy, in place of the loss region (language.md). */
static void check_matmul(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	const struct arg *x = a->args;

	if (s->tensor.kind != TENSOR_TEMP)
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "matmul marks a temp tensor");
	else if (x && (x->next || x->name || x->value->kind != EXPR_NAME ||
		       strcmp(x->value->name.name, "previous")))
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "matmul takes no argument, or `previous` "
			   "(the previous micro-batch's, which the loop holds)");
}

/* Where each plain word may stand (language.md, the attribute table): on
 * another kind of tensor the analyzer would ignore it without a word. */
#define ON(k) (1u << TENSOR_##k)
#define ON_KIND(k) (1u << (unsigned)(k))
static const struct {
	const char *name;
	unsigned kinds;
	const char *what;
} attr_places[] = {
	{ "linear", ON(PARAM), "a param" }, { "adaptable", ON(PARAM), "a param" },
	{ "expert", ON(PARAM), "a param" }, { "for_grad", ON(SAVES), "a saves" },
	{ "forward", ON(TEMP), "a temp" }, { "backward", ON(TEMP), "a temp" },
	{ "loss", ON(SAVES) | ON(TEMP), "a saves or temp" }, { "grouped", ON(TEMP), "an optimizer's temp" },
	{ "paged", ON(STATE), "an optimizer's state" }, { "adapter", ON(PARAM), "a param" },
};

static void check_attr_place(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	for (size_t i = 0; i < sizeof attr_places / sizeof attr_places[0]; i++)
		if (!strcmp(a->name, attr_places[i].name) && !(attr_places[i].kinds & ON_KIND(s->tensor.kind)))
			eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "%s marks %s tensor", a->name,
				   attr_places[i].what);
}

/* buffer: a module buffer (register_buffer) declared as a param, which
 * nothing trains, adapts or shards (language.md); no arguments. */
static void check_buffer(struct eval *ev, const struct stmt *s, const struct attr *a)
{
	if (s->tensor.kind != TENSOR_PARAM || a->args) {
		eval_error(ev, DIAG_BAD_ARGUMENT, a->loc, "buffer marks a param tensor, without arguments");
		return;
	}
	/* a buffer has no gradient: the roles of a trained weight would be
	 * dropped without a word */
	for (const struct attr *o = s->tensor.attrs; o; o = o->next)
		if (!strcmp(o->name, "linear") || !strcmp(o->name, "adaptable") || !strcmp(o->name, "tied")) {
			eval_error(ev, DIAG_BAD_ARGUMENT, o->loc, "'%s' marks a trained weight, and a buffer is "
				   "none (no gradient, never adapted): drop '%s' or 'buffer'", o->name, o->name);
			return;
		}
}

/* The attributes whose arguments or placement have rules of their own. */
static const struct {
	const char *name;
	void (*check)(struct eval *ev, const struct stmt *s, const struct attr *a);
} attr_checks[] = {
	{ "hf", check_hf },
	{ "op", check_op },
	{ "recompute", check_recompute },
	{ "shared_dropout", check_shared_dropout },
	{ "input_of", check_input_of },
	{ "fp8_copy", check_fp8_copy },
	{ "tied", check_tied },
	{ "output", check_output },
	{ "matmul", check_matmul },
	{ "buffer", check_buffer },
};

/* Attributes: a known word, or something that evaluates to a dtype. */
void check_tensor_attrs(struct eval *ev, const struct walk_tensor *t)
{
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next) {
		check_attr_place(ev, t->stmt, a);
		for (size_t i = 0; i < sizeof attr_checks / sizeof attr_checks[0]; i++)
			if (!strcmp(a->name, attr_checks[i].name))
				attr_checks[i].check(ev, t->stmt, a);
		if (is_word(a->name))
			continue;
		struct expr name = { .kind = EXPR_NAME, .loc = a->loc, .name.name = a->name };
		struct value v = eval_expr(ev, t->env, &name);

		if (v.kind == VAL_DTYPE || v.kind == VAL_ERROR)
			continue;
		struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, a->loc,
					    "'%s' is neither a dtype nor a tensor attribute", a->name);
		const char *s = dtype_suggest(a->name);

		diag_note(d, NO_LOC, s ? "did you mean '%s'?" : "attributes are linear, adaptable, adapter, expert, "
			  "for_grad(...), fp8_copy(...), op(...), recompute(...), shared_dropout, input_of(...), "
			  "tied(...), forward, backward, loss, output, "
			  "grouped, paged%s", s ? s : "");
	}
}

static void static_tensor(void *ctx, const struct walk_tensor *t)
{
	check_tensor_attrs(ctx, t);
}

/* Unknown bindings for a template that no job instantiates. */
static struct env *unknown_job(struct eval *ev)
{
	static const char *const counts[] = { "batch", "seq", "tgt", "tp", "sp", "sp_in", "cp", "ep", "etp", "pp", "dp",
					      "vp", "numel", "rows", "cols", "rank", "tt_rope_len" };
	static const char *const syms[] = { "attention", "checkpoint", "kernels", "loss", "cp_comm" };
	struct env *e = env_new(ev, NULL);

	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		env_bind(e, intern_cstr(ev->interner, counts[i]), val_unknown_num(DIM_SCALAR, NO_LOC));
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		struct value v = val_symbol(ev, syms[i], NO_LOC);

		v.unknown = true;
		env_bind(e, intern_cstr(ev->interner, syms[i]), v);
	}
	struct value act = { .kind = VAL_DTYPE, .dtype = dtype_find("bf16"), .unknown = true };
	struct value ac = { .kind = VAL_BOOL, .unknown = true };

	env_bind(e, intern_cstr(ev->interner, "autocast"), ac);
	env_bind(e, intern_cstr(ev->interner, "compile"), ac);
	env_bind(e, intern_cstr(ev->interner, "async_tp"), ac);
	env_bind(e, intern_cstr(ev->interner, "dtensor_plan"), ac);
	env_bind(e, intern_cstr(ev->interner, "compile_loss"), ac);
	env_bind(e, intern_cstr(ev->interner, "rope_cache"), ac);
	env_bind(e, intern_cstr(ev->interner, "rope_dtype"), act);
	struct value ft = val_symbol(ev, "full", NO_LOC);

	ft.unknown = true;
	env_bind(e, intern_cstr(ev->interner, "finetune"), ft);
	env_bind(e, intern_cstr(ev->interner, "tt_rope"), ac);
	env_bind(e, intern_cstr(ev->interner, "tt_rope_dtype"), act);
	env_bind(e, intern_cstr(ev->interner, "tt_rope_shared"), ac);

	env_bind(e, intern_cstr(ev->interner, "act"), act);
	return e;
}

void check_body_static(struct eval *ev, const struct decl *d)
{
	static const struct walk_ops ops = { .tensor = static_tensor };

	if (!ev->static_job)
		ev->static_job = unknown_job(ev);
	eval_walk(ev, eval_instantiate_unknown(ev, d), ev->static_job, &ops, ev);
}
