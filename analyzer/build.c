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

#include "analyzer/build.h"
#include "analyzer/build_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/intern.h"

/* ---- small helpers ---- */

bool bld_mul(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

uint64_t bld_bytes(const struct dtype *dt, uint64_t numel)
{
	uint64_t b = 0;

	if (!dt || !dtype_bytes(dt, numel, &b))
		return 0;
	return b;
}

/* The dtype of attribute @a, or NULL if it names something else. */
static const struct dtype *attr_dtype(struct bld *b, const struct attr *a, struct env *env)
{
	struct expr name = { .kind = EXPR_NAME, .loc = a->loc, .name.name = a->name };
	struct value v;

	if (a->has_parens)
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

		if (t->dims[i].kind != VAL_NUM || t->dims[i].unknown || !num_to_u64(t->dims[i].num, &u) ||
		    !bld_mul(n, u, &n))
			return b->failed = true, false;
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

static bool frame_trains(const struct frame *f, const char *name)
{
	for (size_t i = 0; i < f->nnames; i++)
		if (f->names[i] == name)
			return f->trains[i];
	return false;
}

/* Saves waiting on for_grad: kept if any named param trains. */
static void resolve_pending(struct bld *b, struct frame *f)
{
	for (size_t i = 0; i < f->npending; i++) {
		struct pending *p = &f->pending[i];
		bool keep = false;

		for (const struct arg *a = p->names; a; a = a->next)
			if (a->value->kind == EXPR_NAME && frame_trains(f, a->value->name.name))
				keep = true;
		if (keep)
			bld_add_saves(b, p->bytes, p->loss);
	}
	free(f->pending);
	free(f->names);
	free(f->trains);
}

void bld_frame_pop(struct bld *b)
{
	struct frame *f = b->frame;

	resolve_pending(b, f);
	b->frame = f->parent;
	if (b->frame) {
		uint64_t child = f->temp_fwd + f->child_fwd, childb = f->temp_bwd + f->child_bwd;

		/* nested layers run one after another: their transients do not add up */
		if (child > b->frame->child_fwd)
			b->frame->child_fwd = child;
		if (childb > b->frame->child_bwd)
			b->frame->child_bwd = childb;
	} else {
		bld_layer_close(b, f);
	}
	free(f);
}

void bld_frame_param(struct frame *f, const char *name, bool trains)
{
	if (f->nnames == f->capnames) {
		f->capnames = f->capnames ? f->capnames * 2 : 8;
		f->names = realloc(f->names, f->capnames * sizeof *f->names);
		f->trains = realloc(f->trains, f->capnames * sizeof *f->trains);
		if (!f->names || !f->trains)
			xdie_oom();
	}
	f->names[f->nnames] = name;
	f->trains[f->nnames++] = trains;
}

static void add_pending(struct frame *f, const struct arg *names, uint64_t bytes, bool loss)
{
	if (f->npending == f->cappending) {
		f->cappending = f->cappending ? f->cappending * 2 : 8;
		f->pending = realloc(f->pending, f->cappending * sizeof *f->pending);
		if (!f->pending)
			xdie_oom();
	}
	f->pending[f->npending++] = (struct pending){ names, bytes, loss };
}

/* ---- tensors ---- */

static void on_saves(struct bld *b, const struct walk_tensor *t, uint64_t numel)
{
	const struct attr *fg = find_attr(t->stmt, "for_grad");
	const struct dtype *dt = tensor_dtype(b, t);
	bool loss = find_attr(t->stmt, "loss") != NULL;

	if (!dt)
		dt = fg && b->linear_input ? b->linear_input : b->act;
	uint64_t bytes = bld_bytes(dt, numel);

	if (fg && b->frame)
		add_pending(b->frame, fg->args, bytes, loss);
	else
		bld_add_saves(b, bytes, loss);
	/* A save of the input's shape and dtype is the input itself (a norm's
	 * x_in; HF RMSNorm's x.to(fp32) when x is already fp32): a checkpoint
	 * storing the input shares its storage (memory.c, cost_layer). */
	struct frame *f = b->frame;

	if (!fg && f && f->depth == 0 && !f->input_saved && f->input && numel == f->input_numel &&
	    dt == f->input_dtype)
		f->input_saved = bytes;
}

static void on_temp(struct bld *b, const struct walk_tensor *t, uint64_t numel)
{
	const struct dtype *dt = tensor_dtype(b, t);
	uint64_t bytes = bld_bytes(dt ? dt : b->act, numel);
	bool fwd = find_attr(t->stmt, "forward") != NULL, bwd = find_attr(t->stmt, "backward") != NULL;
	struct frame *f = bld_frame(b);

	if (find_attr(t->stmt, "loss"))
		f->loss = true;
	if (fwd || !bwd)
		f->temp_fwd += bytes;
	if (bwd || !fwd)
		f->temp_bwd += bytes;
}

static void on_tensor(void *ctx, const struct walk_tensor *t)
{
	struct bld *b = ctx;
	uint64_t base, mult, numel;

	if (b->failed || !tensor_numel(b, t, &base, &mult) || !bld_mul(base, mult, &numel)) {
		b->failed = true;
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
			b->frame->input = bld_bytes(b->frame->input_dtype, numel);
		}
		break;
	default: break;
	}
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

	num_to_u64(count.num, &n);
	bld_close_implicit(b);
	if (b->frame) {
		b->frame->saved_mult[b->frame->nrep < 8 ? b->frame->nrep : 7] = b->frame->mult;
		b->frame->nrep++;
		if (!bld_mul(b->frame->mult, n, &b->frame->mult))
			b->failed = true;
		return;
	}
	bld_repeat_enter(b, s, n);
}

static void on_repeat_leave(void *ctx, const struct stmt *s)
{
	struct bld *b = ctx;

	bld_close_implicit(b);
	if (b->frame) {
		b->frame->nrep--;
		b->frame->mult = b->frame->saved_mult[b->frame->nrep < 8 ? b->frame->nrep : 7];
		return;
	}
	bld_repeat_leave(b, s);
}

/* trains(p) in a layer body: the parameter of the innermost instance. */
static int on_trains(void *ctx, const char *param)
{
	struct bld *b = ctx;
	const struct frame *f = b->frame;

	for (size_t i = 0; f && i < f->nnames; i++)
		if (f->names[i] == param)
			return f->trains[i];
	return 0;	/* no such parameter here: nothing trains */
}

const struct walk_ops bld_ops = {
	.tensor = on_tensor, .enter = on_enter, .leave = on_leave,
	.repeat_enter = on_repeat_enter, .repeat_leave = on_repeat_leave, .trains = on_trains,
};
