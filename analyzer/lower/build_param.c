/* SPDX-License-Identifier: MIT */
/*
 * build_param.c - bytes of each parameter tensor under the job's
 * precision policy, fine-tuning mode and optimizer.
 *
 * The optimizer's body is evaluated per tensor with numel, rows, cols and
 * rank bound (docs/language.md §3.6); results are memoised per distinct
 * (shape, dtype), so a model costs as many evaluations as it has distinct
 * tensor shapes, not tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/dtypes.h"
#include "lang/intern.h"
#include "lang/scope.h"

/* @list names tensor @s (its own name or an hf() name) or, when @layer is
 * given, the layer that declares it. */
static bool in_list(const struct value *list, const struct stmt *s, const char *layer)
{
	if (list->kind != VAL_LIST)
		return false;
	for (unsigned i = 0; i < list->nitems; i++) {
		const struct value *v = &list->items[i];
		const char *n = v->kind == VAL_SYMBOL || v->kind == VAL_STRING ? v->str :
				(v->kind == VAL_DECL || v->kind == VAL_INSTANCE) && v->decl ? v->decl->name : NULL;

		if (n && (check_tensor_answers_to(s, n) || (layer && !strcmp(layer, n))))
			return true;
	}
	return false;
}

/* ---- optimizer states, per distinct tensor ---- */

struct opt_walk {
	struct bld *b;
	const struct dtype *dflt;
	uint64_t state, paged, temp;
	bool grouped;
};

static void opt_tensor(void *ctx, const struct walk_tensor *t)
{
	struct opt_walk *w = ctx;
	uint64_t n = 1;
	const struct dtype *dt = w->dflt;
	bool paged = false, grouped = false;

	for (unsigned i = 0; i < t->ndims; i++) {
		uint64_t u = 0;

		if (t->dims[i].kind != VAL_NUM || t->dims[i].unknown || !num_to_u64(t->dims[i].num, &u))
			return (void)(w->b->failed = true);	/* the checker reported it */
		if (!bld_mul(w->b, n, u, &n, "the optimizer state of a tensor"))
			return;
	}
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next) {
		struct expr name = { .kind = EXPR_NAME, .loc = a->loc, .name.name = a->name };

		paged |= !strcmp(a->name, "paged");
		grouped |= !strcmp(a->name, "grouped");
		if (!a->has_parens && !bld_is_tensor_word(a->name)) {
			struct value v = eval_expr(w->b->ev, t->env, &name);

			if (v.kind == VAL_DTYPE)
				dt = v.dtype;
		}
	}
	/* paged state lives in CUDA unified memory, outside the allocator:
	 * counted apart, in the device total only (memory-model.md §2.2) */
	if (t->stmt->tensor.kind == TENSOR_STATE)
		bld_add(w->b, paged ? &w->paged : &w->state, bld_bytes(w->b, dt, n),
			"the optimizer state of a tensor");
	if (t->stmt->tensor.kind == TENSOR_TEMP) {
		bld_add(w->b, &w->temp, bld_bytes(w->b, dt, n), "the optimizer state of a tensor");
		w->grouped |= grouped;
	}
}

static struct opt_memo *opt_lookup(struct bld *b, uint64_t numel, uint64_t rows, uint64_t cols,
				   uint64_t rank, const struct dtype *dt)
{
	for (size_t i = 0; i < b->nmemo; i++) {
		struct opt_memo *m = &b->memo[i];

		if (m->numel == numel && m->rows == rows && m->cols == cols && m->rank == rank && m->dtype == dt)
			return m;
	}
	return NULL;
}

static struct opt_memo *opt_eval(struct bld *b, uint64_t numel, uint64_t rows, uint64_t cols,
				 uint64_t rank, const struct dtype *dt)
{
	struct opt_memo *m = opt_lookup(b, numel, rows, cols, rank, dt);
	static const struct walk_ops ops = { .tensor = opt_tensor };

	if (m)
		return m;
	struct env *e = env_new(b->ev, b->bindings);
	struct opt_walk w = { .b = b, .dflt = dt };

	env_bind(e, bld_intern(b, "numel"), val_count(numel, NO_LOC));
	env_bind(e, bld_intern(b, "rows"), val_count(rows, NO_LOC));
	env_bind(e, bld_intern(b, "cols"), val_count(cols, NO_LOC));
	env_bind(e, bld_intern(b, "rank"), val_count(rank, NO_LOC));
	eval_walk(b->ev, b->optimizer, e, &ops, &w);
	if (b->nmemo == b->capmemo) {
		b->capmemo = b->capmemo ? b->capmemo * 2 : 16;
		b->memo = realloc(b->memo, b->capmemo * sizeof *b->memo);
		if (!b->memo)
			xdie_oom();
	}
	m = &b->memo[b->nmemo++];
	*m = (struct opt_memo){ numel, rows, cols, rank, dt, w.state, w.paged, w.temp, w.grouped };
	return m;
}

/* ---- one mem_param ---- */

static struct mem_param *new_param(struct bld *b)
{
	ARENA_GROW(b->arena, b->params, b->nparams, b->capparams);
	return memset(&b->params[b->nparams++], 0, sizeof(struct mem_param));
}

static void put_states(struct bld *b, const struct opt_memo *m, uint64_t mult, struct mem_param *p)
{
	bld_mul(b, m->state, mult, &p->state_bytes, "the optimizer state of a tensor");
	bld_mul(b, m->paged, mult, &p->paged_state_bytes, "the optimizer state of a tensor");
	bld_mul(b, m->temp, mult, &p->step_temp_bytes, "the optimizer state of a tensor");
	p->step_temp_grouped = m->grouped;
}

/* Gradient, master and optimizer bytes of a trainable tensor of @base
 * elements repeated @mult times, stored as @dt. The states are the only
 * bytes of the walk the optimizer decides, and they depend on nothing but
 * what the use records (the optimizer's body reads numel, rows, cols,
 * rank, its dtype and the job's bindings, docs/language.md §3.6). */
static void train_bytes(struct bld *b, struct mem_param *p, uint64_t base, uint64_t mult,
			const struct dtype *dt, uint64_t rows, uint64_t cols, uint64_t rank)
{
	const struct dtype *opt_dt = b->master ? b->master : dt;
	struct opt_memo *m = opt_eval(b, base, rows, cols, rank, opt_dt);

	p->trainable = true;
	p->grad_bytes = bld_bytes_x(b, b->grads && dt == b->weights ? b->grads : dt, base, mult);
	if (b->master && b->master != dt)
		p->master_bytes = bld_bytes_x(b, b->master, base, mult);
	put_states(b, m, mult, p);
	ARENA_GROW(b->arena, b->opt_uses, b->nopt_uses, b->capopt_uses);
	b->opt_uses[b->nopt_uses++] = (struct bld_opt_use){
		base, mult, rows, cols, rank, opt_dt, p->state_bytes, p->paged_state_bytes, p->step_temp_bytes,
		p->step_temp_grouped,
	};
}

bool bld_opt_states(struct bld *b, const struct bld_opt_use *u, struct mem_param *p)
{
	put_states(b, opt_eval(b, u->base, u->rows, u->cols, u->rank, u->dtype), u->mult, p);
	return !b->failed;
}

/* FSDP2 MixedPrecisionPolicy (_fsdp_param.py FSDPParam.init_dtype_attrs):
 * the sharded parameter keeps its dtype @dt, the all-gathered copy and its
 * gradient are param_dtype, foreach_reduce casts the gradient to
 * reduce_dtype for the reduce-scatter, and without gradient sync
 * to_accumulated_grad_if_needed keeps it in reduce_dtype.  Quantised
 * weights (not floating) are gathered as stored. */
static void fsdp2_bytes(struct bld *b, struct mem_param *p, const struct dtype *dt, uint64_t base,
			uint64_t mult)
{
	const struct dtype *pd = b->fsdp_param ? b->fsdp_param : dt, *rd = b->fsdp_reduce;
	uint64_t g, r = 0;

	if (!b->fsdp2 || !dt || dt->kind != DTYPE_FLOAT)
		return;
	p->gather_bytes = bld_bytes_x(b, pd, base, mult);
	if (!p->trainable)
		return;
	g = bld_bytes_x(b, pd, base, mult);
	if (rd && rd != pd)
		r = bld_bytes_x(b, rd, base, mult);
	p->gather_grad_bytes = g;
	bld_add(b, &p->gather_grad_bytes, r, "the size of this tensor");
	p->acc_grad_bytes = r ? r : g;
}

static void adapter(struct bld *b, const char *name, uint64_t rows, uint64_t cols, uint64_t mult,
		    uint64_t rank)
{
	struct mem_param *p = new_param(b);
	const struct dtype *dt = b->lora_dtype;
	uint64_t numel = 0, all = 0;

	p->name = name;
	bld_mul(b, rows, cols, &numel, "the size of a LoRA adapter");
	bld_mul(b, numel, mult, &p->numel, "the size of a LoRA adapter");
	p->weight_bytes = bld_bytes_x(b, dt, numel, mult);
	train_bytes(b, p, numel, mult, dt, rows, cols, rank);
	p->master_bytes = 0;	/* adapters are kept in their own dtype */
	fsdp2_bytes(b, p, dt, numel, mult);
	bld_mul(b, p->numel, b->block_repeat, &all, "the trainable parameter count");
	bld_add(b, &b->params_trainable, all, "the trainable parameter count");
}

/* Adapters loaded beside the active one (PeftModel.load_adapter): their
 * A and B stay resident, frozen (set_adapter clears requires_grad). */
static void idle_adapters(struct bld *b, const char *name, uint64_t d_in, uint64_t d_out, uint64_t mult)
{
	struct mem_param *p;
	uint64_t numel = 0, n = 0;

	if (b->adapters < 2)
		return;
	bld_add(b, &numel, d_in, "the size of a LoRA adapter");
	bld_add(b, &numel, d_out, "the size of a LoRA adapter");
	bld_mul(b, numel, b->lora_r, &numel, "the size of a LoRA adapter");
	bld_mul(b, numel, b->adapters - 1, &n, "the size of a LoRA adapter");
	p = new_param(b);
	p->name = name;
	bld_mul(b, n, mult, &p->numel, "the size of a LoRA adapter");
	p->weight_bytes = bld_bytes_x(b, b->lora_dtype, n, mult);
}

/* DoRA (peft/tuners/lora/dora.py DoraLinearLayer.forward): a trainable
 * magnitude [d_out]; the two products with mag_norm_scale save
 * lora_B(lora_A(x)) and the recomputed F.linear(x, W) (2 x tokens x d_out),
 * and F.linear saves W itself, a dequantised copy when the base is 4-bit.
 * Forward builds x_eye [d_in, d_in], lora_weight, scaling * lora_weight
 * and W + that (each [d_in, d_out]) for the detached weight norm: a
 * transient of the layer's largest DoRA Linear, not a sum (they run in
 * turn).  fsdp_qlora's own layers (scripts/dora.py BNBDORA / HQQDORA
 * .forward, use_dora = "fsdp_qlora") save one product: MagnitudeLayer's
 * `x * magnitude` keeps the normalised output (the division by the
 * detached column norm keeps only the norm), and the norm is taken of
 * `frozen_weight + lora_B.weight @ lora_A.weight`, three [d_in, d_out]
 * tensors with no x_eye, none saved. */
static void add_dora(struct bld *b, const char *name, uint64_t d_in, uint64_t d_out, uint64_t mult,
		     bool quantised)
{
	const char *what = "the saved activations of a DoRA adapter";
	struct frame *f = bld_frame(b);
	uint64_t n = 0, w = 0, t = 0;

	adapter(b, name, 1, d_out, mult, 1);
	b->tokens_in_play = true;
	bld_mul(b, b->tokens, d_out, &n, what);
	bld_mul(b, n, b->dora_fq ? 1 : 2, &n, what);
	bld_add_saves(b, bld_bytes_x(b, b->act, n, mult), false);
	b->tokens_in_play = false;
	bld_mul(b, d_in, d_out, &w, what);
	if (quantised && !b->dora_fq)
		bld_add_saves(b, bld_bytes_x(b, b->quant_compute ? b->quant_compute : b->act, w, mult), false);
	bld_mul(b, w, 3, &t, what);
	bld_mul(b, b->dora_fq ? 0 : d_in, d_in, &n, what);
	bld_add(b, &t, n, what);
	t = bld_bytes(b, b->act, t);
	if (t > f->dora_temp) {
		bld_add_act(b, &f->temp_fwd, t - f->dora_temp, "the transient bytes of a layer");
		bld_parts_push(&f->tf, t - f->dora_temp);
		f->dora_temp = t;
	}
}

/* LoRA on a Linear [d_in, d_out]: A [d_in, r], B [r, d_out], trainable;
 * it saves A's output (and, with dropout, its own dropped input, unless
 * @shared: another adapter of the layer already drops the same input). */
static void add_lora(struct bld *b, const char *name, uint64_t d_in, uint64_t d_out, uint64_t mult,
		     bool quantised, bool embedding, bool shared)
{
	uint64_t r = b->lora_r, n = 0, in = 0;
	const char *what = "the saved activations of a LoRA adapter";

	adapter(b, name, d_in, r, mult, 2);
	adapter(b, name, r, d_out, mult, 2);
	b->tokens_in_play = true;
	bld_mul(b, b->tokens, r, &n, what);
	bld_add_saves(b, bld_bytes_x(b, b->act, n, mult), false);
	/* peft lora.Embedding.forward looks A up by the ids (already saved)
	 * and applies no dropout; fsdp_qlora's DORALayer takes lora_dropout
	 * and never uses it (lora_B(lora_A(x))) */
	if (b->lora_dropout > 0 && !embedding && !shared && !b->dora_fq) {
		bld_mul(b, b->tokens, d_in, &in, what);
		n = bld_bytes(b, b->act, in);	/* the dropped input and its bool mask */
		bld_add(b, &n, in, what);
		bld_mul(b, n, mult, &n, what);
		bld_add_saves(b, n, false);
	}
	b->tokens_in_play = false;
	if (b->dora)
		add_dora(b, name, d_in, d_out, mult, quantised);
	idle_adapters(b, name, d_in, d_out, mult);
}

static bool has_attr(const struct walk_tensor *t, const char *name)
{
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, name))
			return true;
	return false;
}

/* `adaptable` or `adaptable(embedding)` (docs/language.md §3.3). */
static const struct attr *find_adaptable(const struct walk_tensor *t)
{
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, "adaptable"))
			return a;
	return NULL;
}

/* bitsandbytes replaces every nn.Linear that skip_modules does not name
 * (transformers replace_with_bnb_linear, Lightning _convert_layers);
 * without skip_modules transformers keeps the output head in 16 bit
 * (get_keys_to_not_convert).  An adaptable(embedding) is no Linear. */
static bool quantises(struct bld *b, const struct walk_tensor *t, const struct frame *f, bool linear,
		      const struct attr *ad)
{
	if (!b->qlora)
		return false;
	if (!b->skip_given)
		return linear;
	return (linear || (ad && !ad->args)) && !in_list(&b->skip_modules, t->stmt, f->decl->name);
}

/* PEFT modules_to_save (peft/utils/other.py ModulesToSaveWrapper): the
 * original module stays, frozen, beside a deepcopy that trains. */
static bool saved_module(struct bld *b, const struct walk_tensor *t, const struct frame *f)
{
	return (b->lora || b->qlora) && in_list(&b->modules_to_save, t->stmt, f->decl->name);
}

/* prepare_model_for_kbit_training casts every fp16/bf16 parameter that
 * bitsandbytes did not pack to fp32 (peft/utils/other.py). */
static const struct dtype *kbit_dtype(struct bld *b, const struct dtype *dt, uint64_t base)
{
	if (!b->prepare_kbit || dt->kind != DTYPE_FLOAT || dt->bits != 16 || dt->block)
		return dt;
	const struct dtype *fp32 = dtype_find("fp32");
	uint64_t bytes = bld_bytes(b, dt, base), extra = 0;

	if (bytes > b->largest_cast)
		b->largest_cast = bytes;
	bld_mul(b, bld_bytes(b, fp32, base) - bytes, b->block_repeat, &extra, "the size of this tensor");
	bld_add(b, &b->kbit_extra, extra, "the size of this tensor");
	return fp32;
}

/* What the run's phases need of one base weight (phases.h): its bytes as
 * loaded, the K/V projections that fill a KV cache. */
static void load_facts(struct bld *b, const struct walk_tensor *t, uint64_t base, uint64_t mult,
		       const struct dtype *stored, uint64_t d_out)
{
	uint64_t one = bld_bytes(b, stored, base), all = 0, kv = 0;

	if (one > b->largest_param)
		b->largest_param = one;
	bld_mul(b, bld_bytes_x(b, stored, base, mult), b->block_repeat, &all, "the size of this tensor");
	bld_add(b, &b->load_weights, all, "the size of this tensor");
	if (check_tensor_answers_to(t->stmt, "k_proj") || check_tensor_answers_to(t->stmt, "v_proj")) {
		bld_mul(b, d_out, mult, &kv, "the KV cache");
		bld_mul(b, kv, b->block_repeat, &kv, "the KV cache");
		bld_add(b, &b->kv_per_token, kv, "the KV cache");
	}
}

/* Numel and stored bytes of @p (twice for a modules_to_save copy); its
 * count over the block's repeats, which joins the total. */
static uint64_t param_weight(struct bld *b, struct mem_param *p, uint64_t base, uint64_t mult,
			     const struct dtype *stored, bool saved)
{
	uint64_t all = 0;

	bld_mul(b, base, mult, &p->numel, "the size of this tensor");
	p->weight_bytes = bld_bytes_x(b, stored, base, mult);
	if (saved)
		bld_mul(b, p->weight_bytes, 2, &p->weight_bytes, "the size of this tensor");
	bld_mul(b, p->numel, b->block_repeat, &all, "the parameter count");
	bld_add(b, &b->params_total, all, "the parameter count");
	return all;
}

/* bitsandbytes keeps a 4-bit weight's absmax (and double quant's second
 * level) in Params4bit.quant_state, a plain attribute: FSDP flattens and
 * shards the packed data only (fsdp_qlora train.py load_and_quantize: "FSDP
 * only syncs parameters and buffers, so the quant_state isn't copied").
 * The packed codes are what a shard and a gather hold. HQQLinear likewise
 * keeps its meta in a dict beside the W_q Parameter (hqq core/quantize.py
 * HQQLinear.quantize). torchao's NF4Tensor shards its scalers with the
 * data (fsdp_pre_all_gather). */
static void quant_state(struct bld *b, struct mem_param *p)
{
	uint64_t bits = b->quant ? b->quant->bits : 0, codes;

	if ((b->quantizer != MEM_QUANT_BNB && b->quantizer != MEM_QUANT_HQQ) || bits != 4)
		return;
	codes = p->numel / 8 * bits + ((p->numel % 8) * bits + 7) / 8;
	if (codes >= p->weight_bytes)
		return;
	p->quant_state_bytes = p->weight_bytes - codes;
	p->gather_bytes = codes;
}

/* torchao 0.1's NF4Tensor.get_original_weight, run by linear_nf4 at every
 * call (LinearNF4.forward and .backward: weight.to(dtype)), holds all its
 * locals until it returns: both halves of the codes widened to int64
 * (`(quantized_data >> 4).to(torch.long)` and `& 0b1111`), their bf16 LUT
 * values (`nf4[value]`), the scaled halves and torch.stack's bf16 result:
 * 8 + 3 x 2 = 14 bytes an element at the stack, against the 2 of a bf16
 * copy.  `.to(dtype)` copies once more when the compute dtype is not the
 * LUT's bf16.  torchao 0.2 and later (MEM_QUANT_TORCHAO) are not this. */
static void torchao01_unpack(struct bld *b, struct mem_param *p, const struct dtype *cd, uint64_t base)
{
	const struct dtype *bf16 = dtype_find("bf16");

	p->cast_bytes = bld_bytes(b, dtype_find("int64"), base);
	for (int i = 0; i < 3; i++)
		bld_add(b, &p->cast_bytes, bld_bytes(b, bf16, base), "the size of this tensor");
	if (cd != bf16)
		bld_add(b, &p->cast_bytes, bld_bytes(b, cd, base), "the size of this tensor");
}

/* The low-precision copy a weight gets while its layer runs. */
static void param_cast(struct bld *b, struct mem_param *p, bool quantised, bool linear, uint64_t base,
		       uint64_t mult)
{
	const struct dtype *cd = b->quant_compute ? b->quant_compute : b->act;

	/* MatMul4Bit dequantises the whole weight per call, to QuantState.dtype
	 * (F.dequantize_4bit), then `.to(A.dtype)` copies it when that is not
	 * the compute dtype: both exist while the copy is made */
	if (quantised) {
		p->cast_each = true;
		p->cast_bytes = bld_bytes(b, cd, base);
		if (b->quantizer == MEM_QUANT_TORCHAO_WHOLE)
			torchao01_unpack(b, p, cd, base);
		else if (b->dequant && b->dequant != cd)
			bld_add(b, &p->cast_bytes, bld_bytes(b, b->dequant, base), "the size of this tensor");
	} else if (linear && b->cast_cache) {
		p->cast_bytes = bld_bytes_x(b, b->cast_cache, base, mult);
		p->cast_saved = true;
	} else if (linear && b->weight_copies)
		p->cast_bytes = bld_bytes_x(b, b->copy_dtype, base, b->weight_copies);
}

/* rl { reference = copy }: TRL's create_reference_model / a second
 * from_pretrained, the base weight once more, frozen, stored as the
 * policy stores it (quantised under qlora), without its adapters. */
static void ref_copy(struct bld *b, size_t i)
{
	struct mem_param r = b->params[i];

	r.name = arena_printf(b->arena, "ref.%s", r.name);
	r.trainable = false;
	r.grad_bytes = r.master_bytes = r.state_bytes = r.paged_state_bytes = r.step_temp_bytes = 0;
	r.gather_grad_bytes = r.acc_grad_bytes = 0;
	r.cast_bytes = r.resident_bytes = 0;	/* its casts are its own forward's (phases.c) */
	r.cast_saved = false;
	bld_rl_apart(b, &r, true);
	*new_param(b) = r;
}

/* A module buffer (`buffer`: nn.Module.register_buffer), such as the
 * per-layer rotary cos/sin caches of transformers <= 4.39: no parameter, so
 * no gradient, optimizer state or checkpoint loading, no count; FSDP
 * flattens and shards parameters only (FlatParamHandle), so every rank
 * holds it whole all step, beside the weights. */
static void buffer_tensor(struct bld *b, const struct walk_tensor *t, uint64_t base, uint64_t mult,
			  const struct dtype *dt)
{
	struct mem_param *p = new_param(b);

	p->name = t->stmt->tensor.name;
	p->origin = t->stmt;
	p->resident_bytes = bld_bytes_x(b, dt ? dt : b->weights, base, mult);
}

/* LitGPT's mark_only_adapter_as_trainable / mark_only_adapter_v2_as_trainable
 * (lit_gpt/adapter.py, adapter_v2.py adapter_filter): the prompts and gates
 * (v1), and under v2 also every Linear's adapter_scale and adapter_bias
 * (all `adapter` params) and the norms norm_1, norm_2 and ln_f: the
 * params of the norm layers. */
static bool adapter_trains(const struct bld *b, const struct walk_tensor *t, const struct frame *f)
{
	const char *layer = f->decl ? f->decl->name : "";

	return has_attr(t, "adapter") ||
	       (b->adapter_v2 && (!strcmp(layer, "layernorm") || !strcmp(layer, "rmsnorm")));
}

void bld_param(struct bld *b, const struct walk_tensor *t, uint64_t base, uint64_t mult, bool linear,
	       const struct dtype *dt, uint64_t d_in, uint64_t d_out)
{
	if (has_attr(t, "buffer")) {
		buffer_tensor(b, t, base, mult, dt);
		return;
	}
	const char *name = t->stmt->tensor.name;
	struct frame *f = bld_frame(b);
	/* train_layers (Llama-Pro, fsdp_qlora train.py): a named body layer
	 * trains whole and keeps its 16-bit weights (skip_modules), the rest
	 * of the model is frozen */
	bool picked = bld_layer_picked(b);
	bool saved = !picked && saved_module(b, t, f);
	bool frozen = !saved && (picked ? in_list(&b->freeze, t->stmt, f->decl->name) :
				 ((b->lora || b->qlora || b->adapter) && !(b->adapter && adapter_trains(b, t, f))) ||
				 b->rl_part == BLD_RL_REWARD || b->train_layers.kind == VAL_LIST ||
				 in_list(&b->freeze, t->stmt, f->decl->name));
	const struct attr *ad = find_adaptable(t);
	bool adapted = (b->lora || b->qlora) && !saved && !picked &&
		       ((linear && (b->all_linear || in_list(&b->targets, t->stmt, NULL))) ||
			(ad && in_list(&b->targets, t->stmt, NULL)));
	bool quantised = quantises(b, t, f, linear, ad) && !dt && !saved && !picked;
	struct mem_param *p = new_param(b);
	uint64_t all = 0;

	dt = dt ? dt : b->weights;
	load_facts(b, t, base, mult, quantised ? b->quant : dt, d_out);
	if (!quantised)
		dt = kbit_dtype(b, dt, base);
	else if (base > b->largest_quantised)
		b->largest_quantised = base;
	p->name = b->rl_part ? arena_printf(b->arena, "%s.%s", b->rl_part == BLD_RL_VALUE ? "value" : "reward",
					    name) : name;
	if (b->rl_part == BLD_RL_REWARD)
		bld_rl_apart(b, p, false);
	p->origin = t->stmt;
	p->expert = has_attr(t, "expert");	/* states shard over the expert group */
	b->experts |= p->expert;
	if (p->expert && b->frame && b->frame->input_width > b->expert_width)
		b->expert_width = b->frame->input_width;
	all = param_weight(b, p, base, mult, quantised ? b->quant : dt, saved);
	if (quantised) {	/* loaded in 16 bits, quantised on the GPU (§5.4 loading) */
		p->load_bytes = bld_bytes_x(b, dt, base, mult);
		p->load_quantizer = (uint8_t)b->quantizer;
		quant_state(b, p);
	}
	if (!frozen) {
		train_bytes(b, p, base, mult, dt, t->ndims ? d_in : 1, d_out, t->ndims);
		bld_add(b, &b->params_trainable, all, "the trainable parameter count");
		/* autograd's gradient has the dtype the forward used: FSDP2's
		 * gathered param_dtype, else the stored one (a tied use, build_job.c) */
		bld_add(b, &bld_frame_top(b)->grad_made,
			bld_bytes_x(b, b->fsdp2 && b->fsdp_param && dt->kind == DTYPE_FLOAT ? b->fsdp_param : dt,
				    base, mult), "the gradient of a tied weight");
	}
	param_cast(b, p, quantised, linear, base, mult);
	uint64_t copies = mult;

	if (saved)
		bld_mul(b, mult, 2, &copies, "the size of this tensor");
	fsdp2_bytes(b, p, quantised ? NULL : dt, base, copies);
	bld_fp8_param(b, p, linear, quantised, base, mult);
	if (b->rl_ref_copy)
		ref_copy(b, (size_t)(p - b->params));
	/* A frozen Linear saves no input, unless its 4-bit matmul keeps it
	 * anyway (bitsandbytes MatMul4Bit before 0.43.2: ctx.tensors = (A, B)). */
	bool retains = quantised && b->quant_saves_input;
	/* an adapter reads its own dropped copy of the input (PEFT lora.Linear,
	 * LitGPT LoRALinear: lora_A(lora_dropout(x))), which add_lora counts;
	 * x itself is what lora_A saves only without dropout */
	bool reads_input = adapted && (b->lora_dropout <= 0 || b->dora);

	b->grad_seen |= !frozen || adapted;
	bld_frame_param(f, name, !frozen || reads_input || retains, !frozen || adapted, linear, retains);
	if (linear && !frozen && t->ndims >= 2)
		bld_frame_linear(f, d_in, d_out);
	if (adapted) {
		bool expert = p->expert;
		size_t first = b->nparams;

		/* LitGPT LoRAQKVLinear: one lora_dropout(x) for q, k and v */
		bool shared = has_attr(t, "shared_dropout");

		add_lora(b, name, d_in, d_out, mult, quantised, ad && ad->args, shared && f->shared_dropout);
		f->shared_dropout |= shared;
		for (size_t i = first; i < b->nparams; i++)
			b->params[i].expert = expert;	/* with its expert on its EP rank */
	}
}

/* ---- the precision policy and the fine-tuning mode ---- */

static const struct dtype *record_dtype(struct bld *b, const struct decl *d, const char *field)
{
	const struct field *f = eval_record_field(eval_scope(b->ev), d, field);
	struct value v = f ? eval_expr(b->ev, NULL, f->value) : val_error(NO_LOC);

	return v.kind == VAL_DTYPE ? v.dtype : NULL;
}

bool bld_setup_precision(struct bld *b, struct value precision)
{
	const struct decl *d = precision.kind == VAL_DECL ? precision.decl : NULL;

	if (!d)
		return false;
	b->weights = record_dtype(b, d, "weights");
	b->grads = record_dtype(b, d, "grads");
	b->master = record_dtype(b, d, "master");
	b->act = record_dtype(b, d, "compute");
	b->cast_cache = record_dtype(b, d, "cast_cache");
	b->linear_input = record_dtype(b, d, "linear_input");
	b->copy_dtype = record_dtype(b, d, "copy_dtype");
	const struct field *wc = eval_record_field(eval_scope(b->ev), d, "weight_copies");

	if (wc) {
		struct value v = eval_expr(b->ev, NULL, wc->value);

		if (v.kind == VAL_NUM)
			num_to_u64(v.num, &b->weight_copies);
	}
	if (b->master == b->weights)
		b->master = NULL;
	return b->weights && b->grads && b->act;
}

static bool ft_arg(struct bld *b, const struct value *ft, const char *name, struct value *out)
{
	return ft->kind == VAL_CALL && env_lookup(ft->args, bld_intern(b, name), out);
}

/* data { padding = longest }: the batch before the longest one is not
 * assumed as long; its graph is taken at min_seq_len tokens (default 1). */
static void graph_shape(struct bld *b)
{
	struct value v;
	uint64_t seq = 0, min = 1;

	b->graph_num = b->graph_den = 1;
	if (!check_job_field(b->cj, "data.padding", &v) || v.kind != VAL_SYMBOL || strcmp(v.str, "longest"))
		return;
	if (check_job_field(b->cj, "data.min_seq_len", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &min);
	if (check_job_field(b->cj, "seq_len", &v) && v.kind == VAL_NUM && num_to_u64(v.num, &seq) && seq)
		b->graph_num = min, b->graph_den = seq;
}

bool bld_setup_finetune(struct bld *b, struct value ft)
{
	struct value v;

	bool word = ft.kind == VAL_SYMBOL || ft.kind == VAL_CALL;

	b->adapter_v2 = word && !strcmp(ft.str, "adapter_v2");
	b->adapter = b->adapter_v2 || (word && !strcmp(ft.str, "adapter"));
	b->lora = ft.kind == VAL_CALL && !strcmp(ft.str, "lora");
	/* adapter(quant = ...): the adapter on a 4-bit base (adapter.py --quantize) */
	b->qlora = ft.kind == VAL_CALL && (!strcmp(ft.str, "qlora") || b->adapter);
	if (!b->lora && !b->qlora)
		return true;
	b->lora_r = 8;
	b->lora_dtype = b->master ? b->master : b->weights;
	b->quant = dtype_find("nf4_dq");
	if (ft_arg(b, &ft, "r", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &b->lora_r);
	if (ft_arg(b, &ft, "dropout", &v) && v.kind == VAL_NUM)
		b->lora_dropout = num_to_double(v.num);
	if (ft_arg(b, &ft, "dtype", &v) && v.kind == VAL_DTYPE)
		b->lora_dtype = v.dtype;
	if (ft_arg(b, &ft, "quant", &v) && v.kind == VAL_DTYPE)
		b->quant = v.dtype;
	if (ft_arg(b, &ft, "save_input", &v) && v.kind == VAL_BOOL)
		b->quant_saves_input = v.b;
	/* LitGPT's loops bind the model's output to `logits` (lora.py
	 * chunked_kept, full.py chunked_ce), so the previous micro-batch's
	 * graph lives until the next forward returns */
	b->keeps_graph = check_job_field(b->cj, "loss", &v) && v.kind == VAL_SYMBOL &&
			 (!strcmp(v.str, "chunked_kept") || !strcmp(v.str, "chunked_ce"));
	graph_shape(b);
	if (!ft_arg(b, &ft, "targets", &b->targets))
		b->targets = (struct value){ .kind = VAL_LIST };
	b->all_linear = b->targets.kind == VAL_SYMBOL || b->targets.kind == VAL_STRING;	/* all_linear */
	if (!ft_arg(b, &ft, "modules_to_save", &b->modules_to_save))
		b->modules_to_save = (struct value){ .kind = VAL_LIST };
	b->adapters = 1;
	if (ft_arg(b, &ft, "adapters", &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &b->adapters);
	b->dora = ft_arg(b, &ft, "use_dora", &v) && ((v.kind == VAL_BOOL && v.b) || v.kind == VAL_STRING);
	b->dora_fq = b->dora && v.kind == VAL_STRING;	/* "fsdp_qlora", check_lora.c */
	b->prepare_kbit = ft_arg(b, &ft, "prepare_kbit", &v) && v.kind == VAL_BOOL && v.b;
	if (ft_arg(b, &ft, "compute_dtype", &v) && v.kind == VAL_DTYPE)
		b->quant_compute = v.dtype;
	if (ft_arg(b, &ft, "dequant_dtype", &v) && v.kind == VAL_DTYPE)
		b->dequant = v.dtype;
	if (ft_arg(b, &ft, "quantizer", &v) && v.kind == VAL_STRING)
		b->quantizer = !strcmp(v.str, "torchao") ? MEM_QUANT_TORCHAO :
			       !strcmp(v.str, "torchao-0.1") ? MEM_QUANT_TORCHAO_WHOLE :
			       !strcmp(v.str, "hqq") ? MEM_QUANT_HQQ : MEM_QUANT_BNB;
	b->skip_given = ft_arg(b, &ft, "skip_modules", &b->skip_modules) && b->skip_modules.kind == VAL_LIST;
	/* bnb_4bit_use_double_quant picks the absmax layout (docs/language.md) */
	if (!ft_arg(b, &ft, "quant", &v) && ft_arg(b, &ft, "double_quant", &v) && v.kind == VAL_BOOL)
		b->quant = dtype_find(v.b ? "nf4_dq" : "nf4");
	return true;
}

/* ---- the run's phases (phases.h) ---- */

static const char *job_sym(const struct bld *b, const char *key, const char *dflt, struct loc *at)
{
	struct value v;

	if (!check_job_field(b->cj, key, &v))
		return dflt;
	*at = v.origin;
	return v.kind == VAL_SYMBOL || v.kind == VAL_STRING ? v.str : v.kind == VAL_NONE ? "none" : dflt;
}

static uint64_t job_u64(const struct bld *b, const char *key, uint64_t dflt)
{
	struct value v;
	uint64_t u = dflt;

	if (check_job_field(b->cj, key, &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &u);
	return u;
}

void bld_fill_phases(struct bld *b, struct build *out)
{
	struct phase_input *in = &out->run_in;
	const char *load = job_sym(b, "load", "meta", &out->loc_load);
	const char *save = job_sym(b, "save", "none", &out->loc_save);

	struct value v;

	/* FSDP sync_module_states: rank 0's CPU model, one unit at a time to the GPU */
	if (!out->loc_load.file && check_job_field(b->cj, "fsdp1.sync_module_states", &v) &&
	    v.kind == VAL_BOOL && v.b) {
		load = "rank0_cpu";
		out->loc_load = v.origin;
	}
	in->load = !strcmp(load, "from_pretrained") ? PHASE_LOAD_FROM_PRETRAINED :
		   !strcmp(load, "rank0_cpu") ? PHASE_LOAD_RANK0_CPU : PHASE_LOAD_META;
	/* the allocator replay plays the loading before the step (§5.4) */
	out->job.load = in->load == PHASE_LOAD_FROM_PRETRAINED ? MEM_LOAD_FROM_PRETRAINED :
			in->load == PHASE_LOAD_RANK0_CPU ? MEM_LOAD_RANK0_CPU : MEM_LOAD_META;
	in->save = !strcmp(save, "full_state_dict") ? PHASE_SAVE_FULL :
		   !strcmp(save, "full_state_dict_cpu") ? PHASE_SAVE_FULL_CPU : PHASE_SAVE_NONE;
	/* `eval { }` is a block of the train record */
	for (const struct field *f = b->cj->decl->record.fields; f; f = f->next)
		if (!strcmp(f->name, "eval")) {
			in->eval = true;
			out->loc_eval = f->loc;
		}
	in->eval_batch = job_u64(b, "eval.batch", out->micro_batch);
	in->eval_seq = job_u64(b, "eval.seq_len", out->rep.seq_len);
	in->eval_generate = job_u64(b, "eval.generate", 0);
	in->qlora = b->qlora;
	in->prepare_kbit = b->prepare_kbit;
	in->double_quant = b->quant && b->quant->block2;
	in->quant_8bit = b->quant && b->quant->bits == 8;
	in->quantizer = b->quantizer;
	in->asked = out->loc_load.file || out->loc_save.file || in->eval || b->prepare_kbit;
	in->load_weights = b->load_weights;
	in->largest_quantised = b->largest_quantised;
	in->load_elem_size = b->weights ? (uint32_t)(b->weights->bits / 8) : 2;
	in->largest_param = b->largest_param;
	in->kbit_extra = b->kbit_extra;
	in->largest_cast = b->largest_cast;
	in->train_tokens = b->tokens;
	in->kv_per_token = b->kv_per_token;
	in->act_size = b->act ? (uint32_t)(b->act->bits / 8) : 2;
}
