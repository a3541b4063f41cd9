/* SPDX-License-Identifier: MIT */
/*
 * build.c - walk a checked train block's model into a struct mem_job
 * (see build.h for the rules).
 *
 * Layer instances form a stack of frames while the walk runs. The frame
 * of a layer used directly by the model collects everything below it into
 * one mem_layer. A frame also resolves `for_grad(p, ...)` when it closes:
 * a saved tensor whose named parameters are all frozen and carry no
 * adapter is dropped, which is why a frozen Linear saves no input.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/intern.h"

/* ---- checked arithmetic: an overflow is an error at its largest factor ---- */

static void consider(const struct value *v, const struct value **best, uint64_t *bestn)
{
	uint64_t u;

	if (v && v->kind == VAL_NUM && !v->unknown && num_to_u64(num_floor(v->num), &u) && (!*best || u > *bestn)) {
		*best = v;
		*bestn = u;
	}
}

/* The factor to blame: the largest of @extra, the axes of the tensor being
 * added, the open repeat counts and, where tokens are a factor, the job's
 * batch and sequence length. */
static const struct value *largest_factor(struct bld *b, const struct value *extra, uint64_t *n)
{
	const struct value *best = NULL;
	/* the names the job binds, and the keys that set them */
	static const char *const keys[][2] = { { "batch", "micro_batch" }, { "seq", "seq_len" } };

	consider(extra, &best, n);
	/* first, so that an axis `seq / cp` no larger than seq_len blames the key */
	for (size_t i = 0; i < sizeof keys / sizeof keys[0] && b->bindings && b->tokens_in_play; i++) {
		struct value *v = ARENA_NEW(b->arena, struct value);

		if (env_lookup(b->bindings, bld_intern(b, keys[i][0]), v)) {
			v->label = keys[i][1];
			consider(v, &best, n);
		}
	}
	for (unsigned i = 0; b->tensor && i < b->tensor->ndims; i++)
		consider(&b->tensor->dims[i], &best, n);
	for (size_t i = 0; i < b->nreps; i++)
		consider(&b->reps[i].count, &best, n);
	return best;
}

void bld_overflow(struct bld *b, const char *what, const struct value *extra)
{
	uint64_t n = 0;
	const struct value *f;
	const struct decl *train = b->cj->decl;

	if (b->failed)
		return;
	b->failed = true;
	if (b->quiet)
		return;
	b->reported = true;
	f = largest_factor(b, extra, &n);
	struct loc at = !f ? NO_LOC : f->origin.file ? f->origin : f->loc;

	if (!at.file)
		at = train->name_loc;
	/* no factor known (a product of the job's own figures): none is named,
	 * rather than "its largest factor is 0" */
	struct diag *d = !f ? diag_error(eval_diag(b->ev), DIAG_OVERFLOW, at, "%s would overflow 64 bits", what) :
			 diag_error(eval_diag(b->ev), DIAG_OVERFLOW, at,
				    f->label ? "%s would overflow 64 bits; its largest factor is %s (%llu)" :
				    "%s would overflow 64 bits; its largest factor is %s%llu",
				    what, f->label ? f->label : "", (unsigned long long)n);

	if (b->tensor && b->tensor->stmt->loc.file)
		diag_note(d, b->tensor->stmt->loc, "in tensor '%s'", b->tensor->stmt->tensor.name);
	if (at.file != train->loc.file || at.start < train->loc.start || at.start >= train->loc.end)
		diag_note(d, train->name_loc, "in train block '%s'", train->name);
}

bool bld_mul(struct bld *b, uint64_t x, uint64_t y, uint64_t *out, const char *what)
{
	if (!__builtin_mul_overflow(x, y, out))
		return true;
	*out = 0;
	bld_overflow(b, what, NULL);
	return false;
}

bool bld_add(struct bld *b, uint64_t *acc, uint64_t x, const char *what)
{
	if (!__builtin_add_overflow(*acc, x, acc))
		return true;
	bld_overflow(b, what, NULL);
	return false;
}

/* Activation bytes: per token, so batch and seq_len are factors. */
bool bld_add_act(struct bld *b, uint64_t *acc, uint64_t x, const char *what)
{
	bool was = b->tokens_in_play, ok;

	b->tokens_in_play = true;
	ok = bld_add(b, acc, x, what);
	b->tokens_in_play = was;
	return ok;
}

/* Bytes of @numel elements of @dt; NULL dtype: none (an unset policy slot). */
uint64_t bld_bytes(struct bld *b, const struct dtype *dt, uint64_t numel)
{
	uint64_t n = 0;

	if (dt && !dtype_bytes(dt, numel, &n))
		bld_overflow(b, "the byte count of a tensor", NULL);
	return n;
}

/* ... repeated @mult times. */
uint64_t bld_bytes_x(struct bld *b, const struct dtype *dt, uint64_t numel, uint64_t mult)
{
	uint64_t n = 0;

	bld_mul(b, bld_bytes(b, dt, numel), mult, &n, "the byte count of a tensor");
	return n;
}

void bld_rep_push(struct bld *b, uint64_t saved, struct value count)
{
	if (b->nreps == b->capreps) {
		b->capreps = b->capreps ? b->capreps * 2 : 16;
		b->reps = realloc(b->reps, b->capreps * sizeof *b->reps);
		if (!b->reps)
			xdie_oom();
	}
	b->reps[b->nreps++] = (struct bld_rep){ saved, count };
}

uint64_t bld_rep_pop(struct bld *b)
{
	return b->nreps ? b->reps[--b->nreps].saved : 1;
}

/* The tensor words of the language (check_train.c reads them first too):
 * never a dtype, and evaluating them as names is most of a walk's time. */
bool bld_is_tensor_word(const char *name)
{
	static const char *const words[] = { "linear", "for_grad", "forward", "backward", "loss",
					     "grouped", "paged", "op", "recompute", "input_of", "fp8_copy",
					     "output", "matmul" };

	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (!strcmp(name, words[i]))
			return true;
	return false;
}

/* The dtype of attribute @a, or NULL if it names something else. */
static const struct dtype *attr_dtype(struct bld *b, const struct attr *a, struct env *env)
{
	struct expr name = { .kind = EXPR_NAME, .loc = a->loc, .name.name = a->name };
	struct value v;

	if (a->has_parens || bld_is_tensor_word(a->name))
		return NULL;
	v = eval_expr(b->ev, env, &name);
	return v.kind == VAL_DTYPE ? v.dtype : NULL;
}

static const struct attr *find_attr(const struct stmt *s, const char *name)
{
	for (const struct attr *a = s->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

static const struct dtype *tensor_dtype(struct bld *b, const struct walk_tensor *t)
{
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next) {
		const struct dtype *d = attr_dtype(b, a, t->env);

		if (d)
			return d;
	}
	return NULL;
}

/* Product of the axes times the enclosing repeats inside the layer. */
static bool tensor_numel(struct bld *b, const struct walk_tensor *t, uint64_t *base, uint64_t *mult)
{
	uint64_t n = 1;

	for (unsigned i = 0; i < t->ndims; i++) {
		uint64_t u;

		/* not a count: an evaluation error the checker has reported */
		if (t->dims[i].kind != VAL_NUM || t->dims[i].unknown || !num_to_u64(t->dims[i].num, &u))
			return b->failed = true, false;
		if (!bld_mul(b, n, u, &n, "the size of this tensor"))
			return false;
	}
	*base = n;
	*mult = b->frame ? b->frame->mult : 1;
	return true;
}

static uint64_t axis(const struct walk_tensor *t, unsigned i)
{
	uint64_t u = 1;

	if (i < t->ndims && t->dims[i].kind == VAL_NUM && !t->dims[i].unknown)
		num_to_u64(t->dims[i].num, &u);
	return u;
}

/* ---- frames ---- */

struct frame *bld_frame_push(struct bld *b, const struct decl *layer)
{
	struct frame *f = calloc(1, sizeof *f);

	if (!f)
		xdie_oom();
	f->decl = layer;
	f->parent = b->frame;
	f->mult = b->frame ? b->frame->mult : b->model_mult;
	f->depth = b->frame ? b->frame->depth + 1 : 0;
	b->frame = f;
	return f;
}

/* The instance the model uses directly, which becomes one mem_layer. */
struct frame *bld_frame_top(struct bld *b)
{
	struct frame *f = bld_frame(b);

	while (f->parent)
		f = f->parent;
	return f;
}

static bool frame_trains(const struct frame *f, const char *name)
{
	for (size_t i = 0; i < f->nnames; i++)
		if (f->names[i] == name)
			return f->trains[i];
	return false;
}

static bool frame_retains(const struct frame *f, const char *name)
{
	for (size_t i = 0; i < f->nnames; i++)
		if (f->names[i] == name)
			return f->retains[i];
	return false;
}

/* What a deferred weight gradient holds of a for_grad save (DualPipe's
 * WeightGradStore.put of a closure over the Linear's input and grad_output,
 * dualpipe/utils.py; examples/example_dualpipe.py LinearFunc.backward): the
 * save and, per trained `linear` weight [d_in, d_out] reading it, the
 * gradient of its output, the save's rows x d_out in the compute dtype. */
static void deferred_w(struct bld *b, struct frame *f, const struct pending *p)
{
	uint64_t held = 0, rows, n;
	bool any = false;

	for (const struct arg *a = p->names; p->numel && a; a = a->next)
		for (size_t i = 0; a->value->kind == EXPR_NAME && i < f->nnames; i++)
			if (f->names[i] == a->value->name.name && f->d_out[i] && f->d_in[i]) {
				rows = p->numel / f->d_in[i] + (p->numel % f->d_in[i] != 0);
				if (!bld_mul(b, rows, f->d_out[i], &n, "the gradient of a Linear's output"))
					return;
				bld_add_act(b, &held, bld_bytes(b, b->act, n), "the gradient of a Linear's output");
				f->d_in[i] = 0;	/* one input per Linear */
				any = true;
			}
	if (!any)
		return;
	bld_add_act(b, &bld_frame_top(b)->wgrad_out, held, "the gradient of a Linear's output");
	if (bld_add_act(b, &held, p->bytes, "the gradient of a Linear's output"))
		bld_add_act(b, &bld_frame_top(b)->wgrad, held, "the gradient of a Linear's output");
}

/* Saves waiting on for_grad: kept if any named param trains.  A save a
 * 4-bit matmul keeps in ctx.tensors is also counted, over the block's
 * repeats, as what the graph holds after backward (b->graph_kept). */
static void resolve_pending(struct bld *b, struct frame *f)
{
	for (size_t i = 0; i < f->npending; i++) {
		struct pending *p = &f->pending[i];
		bool keep = false, retained = false;
		uint64_t all = 0;

		for (const struct arg *a = p->names; a; a = a->next)
			if (a->value->kind == EXPR_NAME) {
				keep |= frame_trains(f, a->value->name.name);
				retained |= frame_retains(f, a->value->name.name);
			}
		if (!p->weak)
			deferred_w(b, f, p);
		if (p->wgrad_only)
			continue;
		if (keep && !p->kept)
			bld_add_saves(b, p->bytes, p->loss);
		if (retained && bld_mul(b, p->bytes, b->block_repeat, &all, "the saved activations of a layer"))
			bld_add_act(b, &b->graph_kept, all, "the saved activations of a layer");
	}
	for (size_t i = 0; i < f->npending; i++)
		if (f->pending[i].weak)
			deferred_w(b, f, &f->pending[i]);
	free(f->pending);
	free(f->names);
	free(f->trains);
	free(f->learns);
	free(f->linear);
	free(f->retains);
	free(f->d_in);
	free(f->d_out);
}

void bld_parts_push(struct bld_parts *p, uint64_t bytes)
{
	if (!bytes)
		return;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->v = realloc(p->v, p->cap * sizeof *p->v);
		if (!p->v)
			xdie_oom();
	}
	p->v[p->n++] = bytes;
}

/* *to = a child's own tensors followed by its largest child's */
static void parts_take(struct bld_parts *to, const struct bld_parts *own,
		       const struct bld_parts *child)
{
	to->n = 0;
	for (size_t i = 0; i < own->n; i++)
		bld_parts_push(to, own->v[i]);
	for (size_t i = 0; i < child->n; i++)
		bld_parts_push(to, child->v[i]);
}

static void frame_free(struct frame *f)
{
	free(f->tf.v);
	free(f->tb.v);
	free(f->ctf.v);
	free(f->ctb.v);
	free(f);
}

void bld_frame_pop(struct bld *b)
{
	struct frame *f = b->frame;

	resolve_pending(b, f);
	b->frame = f->parent;
	if (b->frame) {
		uint64_t child = f->temp_fwd, childb = f->temp_bwd;

		bld_add_act(b, &child, f->child_fwd, "the transient bytes of a layer");
		bld_add_act(b, &childb, f->child_bwd, "the transient bytes of a layer");

		/* nested layers run one after another: their transients do not add up */
		if (child > b->frame->child_fwd) {
			b->frame->child_fwd = child;
			parts_take(&b->frame->ctf, &f->tf, &f->ctf);
		}
		if (childb > b->frame->child_bwd) {
			b->frame->child_bwd = childb;
			parts_take(&b->frame->ctb, &f->tb, &f->ctb);
		}
		/* a nested layer's `matmul` temps stand for its own instant */
		b->frame->mm |= f->mm;
		if (f->mm_fwd > b->frame->mm_fwd)
			b->frame->mm_fwd = f->mm_fwd;
		if (f->mm_bwd > b->frame->mm_bwd)
			b->frame->mm_bwd = f->mm_bwd;
	} else {
		bld_layer_close(b, f);
	}
	frame_free(f);
}

void bld_frame_param(struct frame *f, const char *name, bool trains, bool learns, bool linear,
		     bool retains)
{
	if (f->nnames == f->capnames) {
		f->capnames = f->capnames ? f->capnames * 2 : 8;
		f->names = realloc(f->names, f->capnames * sizeof *f->names);
		f->trains = realloc(f->trains, f->capnames * sizeof *f->trains);
		f->learns = realloc(f->learns, f->capnames * sizeof *f->learns);
		f->linear = realloc(f->linear, f->capnames * sizeof *f->linear);
		f->retains = realloc(f->retains, f->capnames * sizeof *f->retains);
		f->d_in = realloc(f->d_in, f->capnames * sizeof *f->d_in);
		f->d_out = realloc(f->d_out, f->capnames * sizeof *f->d_out);
		if (!f->names || !f->trains || !f->learns || !f->linear || !f->retains || !f->d_in ||
		    !f->d_out)
			xdie_oom();
	}
	f->d_in[f->nnames] = f->d_out[f->nnames] = 0;
	f->names[f->nnames] = name;
	f->linear[f->nnames] = linear;
	f->learns[f->nnames] = learns;
	f->retains[f->nnames] = retains;
	f->trains[f->nnames++] = trains;
}

/* The param just declared is a trained Linear weight [d_in, d_out]. */
void bld_frame_linear(struct frame *f, uint64_t d_in, uint64_t d_out)
{
	if (f->nnames) {
		f->d_in[f->nnames - 1] = d_in;
		f->d_out[f->nnames - 1] = d_out;
	}
}

/* An FP8 Linear quantises its input (precision linear_input, fp8 { }):
 * a save for the weight gradient of a `linear` param, not of a norm's
 * weight or the LM head, which stay in high precision. */
static bool for_linear(const struct frame *f, const struct attr *fg)
{
	for (const struct arg *a = fg ? fg->args : NULL; f && a; a = a->next)
		for (size_t i = 0; a->value->kind == EXPR_NAME && i < f->nnames; i++)
			if (f->names[i] == a->value->name.name && f->linear[i])
				return true;
	return false;
}

static void add_pending(struct frame *f, const struct arg *names, uint64_t bytes, bool loss, bool kept,
			uint64_t numel)
{
	if (f->npending == f->cappending) {
		f->cappending = f->cappending ? f->cappending * 2 : 8;
		f->pending = realloc(f->pending, f->cappending * sizeof *f->pending);
		if (!f->pending)
			xdie_oom();
	}
	f->pending[f->npending++] = (struct pending){ names, bytes, loss, kept, false, false, numel };
}

/* ---- tensors ---- */

/* A save the Linears @names read, counted only for what a deferred weight
 * gradient holds of it (deferred_w). */
static void linear_input(struct bld *b, const struct attr *names, uint64_t bytes, bool loss, uint64_t numel,
			 bool weak)
{
	if (!names || !b->frame)
		return;
	add_pending(b->frame, names->args, bytes, loss, false, numel);
	b->frame->pending[b->frame->npending - 1].wgrad_only = true;
	b->frame->pending[b->frame->npending - 1].weak = weak;
}

/* op(mm) / op(sdpa): the aten op whose output this save is, for op-level
 * SAC (memory.c sac_kept). The checker allows op() only without for_grad,
 * so the bytes are part of the layer's saves whatever trains. */
static void note_op(struct bld *b, const struct attr *op, uint64_t bytes)
{
	const char *name;

	if (!op || !op->args || op->args->value->kind != EXPR_NAME)
		return;
	name = op->args->value->name.name;
	if (!strcmp(name, "sdpa")) {
		bld_add_act(b, &b->op_sdpa, bytes, "the saved activations of a layer");
	} else if (!strcmp(name, "mm")) {
		bld_add_act(b, &b->op_mm[b->op_mm_count % 2], bytes, "the saved activations of a layer");
		b->op_mm_count++;
	}
}

/* recompute(core_attn, ...): Megatron re-runs the module in its backward
 * (tensor_parallel.checkpoint, CheckpointWithoutOutput), so under
 * `checkpoint = selective` with a listed module the save is a backward
 * transient of the layer; the default list is core_attn alone. */
static bool recomputed(const struct bld *b, const struct attr *rc)
{
	if (!rc || !b->recompute_selective)
		return false;
	for (const struct arg *a = rc->args; a; a = a->next) {
		const char *m = a->value->kind == EXPR_NAME ? a->value->name.name : "";

		if (b->recompute_modules.kind != VAL_LIST && !strcmp(m, "core_attn"))
			return true;
		for (unsigned i = 0; b->recompute_modules.kind == VAL_LIST && i < b->recompute_modules.nitems; i++) {
			const struct value *it = &b->recompute_modules.items[i];
			const char *w = it->kind == VAL_SYMBOL || it->kind == VAL_STRING ? it->str :
					it->kind == VAL_DECL || it->kind == VAL_INSTANCE ? it->decl->name : "";

			if (!strcmp(w, m))
				return true;
		}
	}
	return false;
}

static void on_saves(struct bld *b, const struct walk_tensor *t, uint64_t numel)
{
	const struct attr *fg = find_attr(t->stmt, "for_grad");
	const struct dtype *dt = tensor_dtype(b, t);
	bool loss = find_attr(t->stmt, "loss") != NULL;

	if (!dt)
		dt = b->linear_input && for_linear(b->frame, fg) ? b->linear_input : b->act;
	uint64_t bytes = bld_bytes(b, dt, numel);

	if (recomputed(b, find_attr(t->stmt, "recompute"))) {
		bld_add_act(b, &bld_frame(b)->temp_bwd, bytes, "the transient bytes of a layer");
		linear_input(b, fg, bytes, loss, numel, false);	/* a deferred W holds it */
		return;
	}
	const struct attr *io = find_attr(t->stmt, "input_of");
	const struct attr *tied = find_attr(t->stmt, "tied");

	if (tied && tied->args && tied->args->value->kind == EXPR_NAME) {
		const char *to = tied->args->value->name.name;
		const struct bld_tie_src *src = bld_tie_source(b, to);

		bld_frame_top(b)->tied_to = to;
		/* the matmul keeps its input only for the weight's gradient (mm's
		 * backward: grad_W = grad_out^T x; grad_x needs W alone), as an
		 * untied head's for_grad(weight) save: a frozen tied weight (LoRA,
		 * freeze) keeps no input */
		if (src && !src->grad_made)
			return;
	}
	if (fg && b->frame)
		add_pending(b->frame, fg->args, bytes, loss, false, numel);
	else
		bld_add_saves(b, bytes, loss);
	if (!fg && io && b->frame)
		add_pending(b->frame, io->args, bytes, loss, true, 0);
	/* the input of Linears that need it for no gradient of their own here */
	if (!fg)
		linear_input(b, io ? io : find_attr(t->stmt, "fp8_copy"), bytes, loss, numel, true);
	/* TE's _Linear and torchao's saved casts keep the FP8 input they made,
	 * beside this high-precision tensor its own layer keeps */
	const struct attr *fc = find_attr(t->stmt, "fp8_copy");

	if (fc && b->linear_input && for_linear(b->frame, fc))
		add_pending(b->frame, fc->args, bld_bytes(b, b->linear_input, numel), loss, false, 0);
	note_op(b, find_attr(t->stmt, "op"), bytes);
	if (find_attr(t->stmt, "output"))
		bld_add_act(b, &bld_frame_top(b)->output_saved, bytes, "the saved activations of a layer");
	/* A save of the input's shape and dtype is the input itself (a norm's
	 * x_in; HF RMSNorm's x.to(fp32) when x is already fp32): a checkpoint
	 * storing the input shares its storage (memory.c, cost_layer). */
	struct frame *f = b->frame;

	if (!fg && f && f->depth == 0 && !f->input_saved && f->input && numel == f->input_numel &&
	    dt == f->input_dtype)
		f->input_saved = bytes;
}

/* A `matmul` temp: alive beside the layer's per-call weight copy
 * (MatMul4Bit's dequantisation), which comes before the layer's loss
 * region in forward and after it in backward (mem_timeline.c).
 * matmul(previous): the previous micro-batch's, which the loop holds, at
 * that batch's length (data { padding = longest }: min_seq_len). */
static void on_matmul_temp(struct bld *b, const struct attr *mm, uint64_t bytes, bool fwd, bool bwd)
{
	struct frame *f = bld_frame(b);
	uint64_t den = b->graph_den ? b->graph_den : 1, scaled = bytes;

	f->mm = true;
	if (mm->args && bld_mul(b, bytes, b->graph_den ? b->graph_num : 1, &scaled, "the transient bytes of a layer"))
		scaled = scaled / den + (scaled % den != 0);
	if (fwd || !bwd)
		bld_add_act(b, &f->mm_fwd, scaled, "the transient bytes of a layer");
	if (bwd || !fwd)
		bld_add_act(b, &f->mm_bwd, scaled, "the transient bytes of a layer");
}

static void on_temp(struct bld *b, const struct walk_tensor *t, uint64_t numel)
{
	const struct dtype *dt = tensor_dtype(b, t);
	uint64_t bytes = bld_bytes(b, dt ? dt : b->act, numel);
	bool fwd = find_attr(t->stmt, "forward") != NULL, bwd = find_attr(t->stmt, "backward") != NULL;
	bool loss = find_attr(t->stmt, "loss") != NULL;
	const struct attr *mm = find_attr(t->stmt, "matmul");
	struct frame *f = bld_frame(b);

	if (mm) {
		on_matmul_temp(b, mm, bytes, fwd, bwd);
		return;
	}
	if (loss)
		f->loss = true;
	if (find_attr(t->stmt, "output"))
		bld_add_act(b, &bld_frame_top(b)->output, bytes, "the transient bytes of a layer");
	if (fwd || !bwd) {
		bld_add_act(b, &f->temp_fwd, bytes, "the transient bytes of a layer");
		bld_parts_push(&f->tf, bytes);
		if (loss)
			bld_add_act(b, &f->loss_tf, bytes, "the transient bytes of a layer");
	}
	if (bwd || !fwd) {
		bld_add_act(b, &f->temp_bwd, bytes, "the transient bytes of a layer");
		bld_parts_push(&f->tb, bytes);
		if (loss)
			bld_add_act(b, &f->loss_tb, bytes, "the transient bytes of a layer");
	}
}

static void on_tensor(void *ctx, const struct walk_tensor *t)
{
	struct bld *b = ctx;
	uint64_t base, mult, numel;

	if (b->failed)
		return;
	b->tensor = t;
	b->tokens_in_play = t->stmt->tensor.kind != TENSOR_PARAM;
	if (!tensor_numel(b, t, &base, &mult) || !bld_mul(b, base, mult, &numel, "the size of this tensor")) {
		b->tensor = NULL;
		b->tokens_in_play = false;
		return;
	}
	switch (t->stmt->tensor.kind) {
	case TENSOR_PARAM:
		bld_param(b, t, base, mult, find_attr(t->stmt, "linear") != NULL, tensor_dtype(b, t),
			  axis(t, t->ndims >= 2 ? t->ndims - 2 : 0), axis(t, t->ndims - 1));
		break;
	case TENSOR_SAVES: on_saves(b, t, numel); break;
	case TENSOR_TEMP: on_temp(b, t, numel); break;
	case TENSOR_INPUT:
		if (b->frame && b->frame->depth == 0 && !b->frame->input) {
			b->frame->input_dtype = tensor_dtype(b, t) ? tensor_dtype(b, t) : b->act;
			b->frame->input_numel = numel;
			b->frame->input = bld_bytes(b, b->frame->input_dtype, numel);
			b->frame->input_width = axis(t, t->ndims ? t->ndims - 1 : 0);
		}
		break;
	default: break;
	}
	b->tensor = NULL;
	b->tokens_in_play = false;
}

static void on_enter(void *ctx, const struct decl *layer, struct env *env, struct loc call)
{
	struct bld *b = ctx;
	bld_close_implicit(b);
	struct frame *f = bld_frame_push(b, layer);

	(void)env;
	f->call = call;
}

static void on_leave(void *ctx, const struct decl *layer)
{
	(void)layer;
	bld_frame_pop(ctx);
}

static void on_repeat_enter(void *ctx, const struct stmt *s, struct value count)
{
	struct bld *b = ctx;
	uint64_t n = 1;

	if (count.kind != VAL_NUM || count.unknown || !num_to_u64(count.num, &n))
		b->failed = true;	/* the checker reported it */
	if (s->repeat.index || bld_picks_layers(b, s))
		n = 1;		/* walked once per pass (repeat_next): nothing multiplies */
	bld_close_implicit(b);
	if (b->frame) {
		bld_rep_push(b, b->frame->mult, count);
		bld_mul(b, b->frame->mult, n, &b->frame->mult, "the product of the repeat counts");
		return;
	}
	bld_repeat_enter(b, count, n);
}

static void on_repeat_leave(void *ctx, const struct stmt *s)
{
	struct bld *b = ctx;

	bld_close_implicit(b);
	if (b->frame) {
		b->frame->mult = bld_rep_pop(b);
		return;
	}
	bld_repeat_leave(b, s);
}

/* The next pass of `repeat i in n`: inside a layer, more of the same
 * layer; in the model body, the next layer of the pattern. */
static void on_repeat_next(void *ctx, const struct stmt *s)
{
	struct bld *b = ctx;

	(void)s;
	bld_close_implicit(b);
	if (!b->frame)
		bld_repeat_next(b);
}

/* train_layers: the body repeat walked pass by pass, each layer its own. */
static bool on_passes(void *ctx, const struct stmt *s)
{
	return bld_picks_layers(ctx, s);
}

/* trains(p) in a layer body: the parameter of the innermost instance. */
static int on_trains(void *ctx, const char *param)
{
	struct bld *b = ctx;
	const struct frame *f = b->frame;

	for (size_t i = 0; f && i < f->nnames; i++)
		if (f->names[i] == param)
			return f->learns[i];
	return 0;	/* no such parameter here: nothing trains */
}

const struct walk_ops bld_ops = {
	.tensor = on_tensor, .enter = on_enter, .leave = on_leave,
	.repeat_enter = on_repeat_enter, .repeat_leave = on_repeat_leave, .repeat_next = on_repeat_next,
	.trains = on_trains, .passes = on_passes,
};
