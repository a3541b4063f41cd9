/* SPDX-License-Identifier: MIT */
/*
 * build_blocks.c - the walk's layers assembled into blocks: a layer closed
 * with its saves and parts, repeats opened and left, and equal neighbouring
 * blocks merged.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/intern.h"
#include "lang/scope.h"

/* @s is a literal (every caller's is): interned by its address. */
const char *bld_intern(struct bld *b, const char *s)
{
	return intern_static(eval_interner(b->ev), s);
}

struct frame *bld_frame(struct bld *b)
{
	if (!b->frame) {
		struct frame *f = bld_frame_push(b, b->cj->model.decl);

		f->implicit = true;
	}
	return b->frame;
}

void bld_close_implicit(struct bld *b)
{
	if (b->frame && b->frame->implicit)
		bld_frame_pop(b);
}

void bld_add_saves(struct bld *b, uint64_t bytes, bool loss)
{
	bld_frame(b);
	bld_add_act(b, loss ? &b->loss_saves : &b->saves, bytes, "the saved activations of a layer");
	if (!bytes)
		return;
	ARENA_GROW(b->arena, b->save_parts, b->nsave_parts, b->capsave_parts);
	b->save_parts[b->nsave_parts++] = bytes;
}

static void open_block(struct bld *b, uint64_t repeat, bool body)
{
	ARENA_GROW(b->arena, b->blocks, b->nblocks, b->capblocks);
	b->blocks[b->nblocks++] = (struct mem_block){ .repeat = repeat, .is_body = body };
	b->layers = NULL;
	b->nlayers = b->caplayers = 0;
}

/* A layer's temporaries as single tensors, in the arena: its own, then
 * those of its largest nested layer. */
static const uint64_t *layer_parts(struct bld *b, const struct bld_parts *own,
				   const struct bld_parts *child, size_t *n)
{
	uint64_t *v;

	*n = own->n + child->n;
	if (!*n)
		return NULL;
	v = ARENA_NEW_ARRAY(b->arena, uint64_t, *n);
	for (size_t i = 0; i < own->n; i++)
		v[i] = own->v[i];
	for (size_t i = 0; i < child->n; i++)
		v[own->n + i] = child->v[i];
	return v;
}

/* A layer that reads an earlier layer's weight (tied(layer), the LM head
 * of a tied embedding): the gradient it makes of that weight is held
 * until the earlier layer's backward (memory-model.md "Tied weights").
 * The latest instance of that layer before this one is the weight's;
 * none, or a frozen one, holds nothing. */
const struct bld_tie_src *bld_tie_source(const struct bld *b, const char *name)
{
	for (size_t i = b->ntie_srcs; name && i-- > 0;)
		if (!strcmp(b->tie_srcs[i].name, name))
			return &b->tie_srcs[i];
	return NULL;
}

static void tie_layer(struct bld *b, const struct frame *f)
{
	struct mem_layer *l = &b->layers[b->nlayers - 1];
	const struct bld_tie_src *t = bld_tie_source(b, f->tied_to);

	if (t) {
		/* a block's layers are this build's own arena array (open_block) */
		struct mem_layer *owner = (struct mem_layer *)(uintptr_t)&b->blocks[t->block].layers[t->layer];

		l->tied_grad_bytes = t->grad_made;
		bld_add(b, &owner->tied_grad_end_bytes, t->grad_made, "the gradient of a tied weight");
	}
	ARENA_GROW(b->arena, b->tie_srcs, b->ntie_srcs, b->captie_srcs);
	b->tie_srcs[b->ntie_srcs++] = (struct bld_tie_src){ l->name, b->nblocks - 1, b->nlayers - 1,
							    f->grad_made };
}

void bld_layer_close(struct bld *b, struct frame *f)
{
	if (!b->nblocks)
		open_block(b, 1, false);
	ARENA_GROW(b->arena, b->layers, b->nlayers, b->caplayers);
	bool loss = f->loss || b->loss_saves > 0;
	uint64_t saves = b->saves, tf = f->temp_fwd, tb = f->temp_bwd;

	bld_add_act(b, &saves, b->loss_saves, "the saved activations of a layer");
	bld_add_act(b, &tf, f->child_fwd, "the transient bytes of a layer");
	bld_add_act(b, &tb, f->child_bwd, "the transient bytes of a layer");

	/* The previous micro-batch's graph, held by the loop (b->keeps_graph),
	 * keeps what MatMul4Bit put in ctx.tensors: PyNode::release_variables
	 * frees saved_variables only.  It is alive through this forward until
	 * the model returns; the head's forward is that forward's highest
	 * instant, so it is counted there, once. */
	if (loss && b->keeps_graph && b->graph_kept && !b->graph_kept_placed) {
		uint64_t kept = 0;

		uint64_t den = b->graph_den ? b->graph_den : 1;

		if (bld_mul(b, b->graph_kept, b->graph_den ? b->graph_num : 1, &kept, "the transient bytes of a layer"))
			kept = kept / den + (kept % den != 0);
		bld_add_act(b, &tf, kept, "the transient bytes of a layer");
		bld_parts_push(&f->tf, kept);
		b->graph_kept_placed = true;
	}

	/* the per-call weight copy's instant: what is outside the loss region */
	uint64_t mmf = b->saves, mmb = b->saves;

	bld_add_act(b, &mmf, tf > f->loss_tf ? tf - f->loss_tf : 0, "the transient bytes of a layer");
	bld_add_act(b, &mmf, f->mm_fwd, "the transient bytes of a layer");
	bld_add_act(b, &mmb, tb > f->loss_tb ? tb - f->loss_tb : 0, "the transient bytes of a layer");
	bld_add_act(b, &mmb, f->mm_bwd, "the transient bytes of a layer");

	size_t ntf, ntb;
	const uint64_t *tfp = layer_parts(b, &f->tf, &f->ctf, &ntf);
	const uint64_t *tbp = layer_parts(b, &f->tb, &f->ctb, &ntb);

	/* PPO's reward model runs under no_grad in the scoring phase only: its
	 * largest layer is that phase's transient, nothing of it is in the step */
	if (b->rl_part == BLD_RL_REWARD) {
		uint64_t act = saves;

		if (!loss && bld_add_act(b, &act, tf, "the transient bytes of a layer") && act > b->rl_reward_act)
			b->rl_reward_act = act;
		saves = tf = tb = f->input = f->input_saved = mmf = mmb = 0;
		tfp = tbp = NULL;
		ntf = ntb = 0;
		b->nsave_parts = 0;
		b->op_mm[0] = b->op_mm[1] = b->op_sdpa = b->op_mm_count = 0;
	}

	/* train_layers: until a parameter trains nothing requires grad (the
	 * embedding is frozen), so autograd records no graph: those layers
	 * keep no saves and run no backward, and a non-reentrant checkpoint
	 * keeps not even its input (it holds it through the graph's saved-
	 * tensor hooks only; torch/utils/checkpoint.py
	 * _checkpoint_without_reentrant_generator) */
	if (b->train_layers.kind == VAL_LIST && !b->grad_seen && b->rl_part == BLD_RL_POLICY) {
		mmf = mmf >= b->saves ? mmf - b->saves : 0;
		saves = tb = f->input = f->input_saved = mmb = 0;
		tbp = NULL;
		ntb = 0;
		b->nsave_parts = 0;
		b->op_mm[0] = b->op_mm[1] = b->op_sdpa = b->op_mm_count = 0;
	}

	b->layers[b->nlayers++] = (struct mem_layer){
		.name = f->decl ? f->decl->name : "layer", .origin = f->decl,
		.params = b->params, .nparams = b->nparams,
		.saves_bytes = saves, .input_bytes = f->input, .input_saved_bytes = f->input_saved,
		.temp_fwd_bytes = tf, .temp_bwd_bytes = tb,
		.loss_region = loss,
		.mm_split = f->mm, .mm_fwd_bytes = mmf, .mm_bwd_bytes = mmb,
		.op_mm = { b->op_mm[0], b->op_mm[1] }, .op_sdpa = b->op_sdpa,
		.op_mm_count = b->op_mm_count,
		.save_parts = b->save_parts, .nsave_parts = b->nsave_parts,
		.temp_fwd_parts = tfp, .ntemp_fwd_parts = ntf,
		.temp_bwd_parts = tbp, .ntemp_bwd_parts = ntb,
		.output_bytes = f->output, .output_saved_bytes = f->output_saved,
		.wgrad_bytes = f->wgrad, .wgrad_out_bytes = f->wgrad_out,
	};
	b->blocks[b->nblocks - 1].layers = b->layers;
	b->blocks[b->nblocks - 1].nlayers = b->nlayers;
	tie_layer(b, f);
	b->params = NULL;
	b->nparams = b->capparams = 0;
	b->saves = b->loss_saves = 0;
	b->save_parts = NULL;
	b->nsave_parts = b->capsave_parts = 0;
	b->op_mm[0] = b->op_mm[1] = b->op_sdpa = b->op_mm_count = 0;
}

/* A repeat in the model body: the first is the body of identical blocks
 * (pipeline split, checkpoint unit); a repeat inside it multiplies. */
void bld_repeat_enter(struct bld *b, struct value count, uint64_t n)
{
	bld_rep_push(b, b->model_mult, count);
	if (b->model_repeats++ > 0) {
		bld_mul(b, b->model_mult, n, &b->model_mult, "the product of the repeat counts");
		return;
	}
	b->in_body = !b->have_body;
	b->body_pass = 0;
	open_block(b, n, !b->have_body);
	b->have_body = true;
	b->block_repeat = n;
}

/* The model's body repeat (the first at model level) of a job with
 * train_layers: its layers differ, so it is walked as a layer pattern. */
bool bld_picks_layers(const struct bld *b, const struct stmt *s)
{
	return !s->repeat.index && b->train_layers.kind == VAL_LIST && !b->frame && !b->model_repeats &&
	       !b->have_body && b->rl_part == BLD_RL_POLICY;
}

/* train_layers names body layer b->body_pass (the checker bounded it). */
bool bld_layer_picked(const struct bld *b)
{
	if (!b->in_body || b->train_layers.kind != VAL_LIST || b->rl_part != BLD_RL_POLICY)
		return false;
	for (unsigned i = 0; i < b->train_layers.nitems; i++) {
		uint64_t u;

		if (b->train_layers.items[i].kind == VAL_NUM && num_to_u64(b->train_layers.items[i].num, &u) &&
		    u == b->body_pass)
			return true;
	}
	return false;
}

void bld_repeat_leave(struct bld *b, const struct stmt *s)
{
	(void)s;
	uint64_t saved = bld_rep_pop(b);

	if (--b->model_repeats > 0) {
		b->model_mult = saved;
		return;
	}
	open_block(b, 1, false);
	b->block_repeat = 1;
	b->in_body = false;
}

/* A pass of `repeat i in n` that is the outermost model-level repeat is
 * a block of its own (one layer of the pattern: its own checkpoint, FSDP
 * and pipeline unit); bld_merge_blocks() joins runs of equal passes again. */
void bld_repeat_next(struct bld *b)
{
	if (b->model_repeats == 1 && b->nblocks) {
		open_block(b, 1, b->blocks[b->nblocks - 1].is_body);
		b->body_pass++;
	}
}

static bool block_trains(const struct mem_block *blk)
{
	for (size_t l = 0; l < blk->nlayers; l++)
		for (size_t p = 0; p < blk->layers[l].nparams; p++)
			if (blk->layers[l].params[p].trainable)
				return true;
	return false;
}

/* Autograd records an op only when one of its inputs requires grad, so a
 * body block that trains nothing and has nothing trained below it (LitGPT's
 * LLaMA-Adapter blocks under adapter_start_layer: their input is the frozen
 * embedding's output) saves nothing, stores no checkpoint input and has no
 * backward.  Only whole body blocks: the layers of the first trained block
 * before its first trained param, and the non-body prefix, are left as
 * they are. */
static void drop_untrained_prefix(struct bld *b, size_t nblocks)
{
	for (size_t i = 0; i < nblocks && !block_trains(&b->blocks[i]); i++) {
		if (!b->blocks[i].is_body)
			continue;
		/* a block's layers are this build's own arena array (open_block) */
		struct mem_layer *ls = (struct mem_layer *)(uintptr_t)b->blocks[i].layers;

		for (size_t l = 0; l < b->blocks[i].nlayers; l++) {
			struct mem_layer *x = &ls[l];

			x->saves_bytes = x->input_bytes = x->input_saved_bytes = 0;
			x->temp_bwd_bytes = x->mm_bwd_bytes = x->output_saved_bytes = 0;
			x->wgrad_bytes = x->wgrad_out_bytes = x->tied_grad_bytes = 0;
			x->op_mm[0] = x->op_mm[1] = x->op_sdpa = x->op_mm_count = 0;
			x->save_parts = x->temp_bwd_parts = NULL;
			x->nsave_parts = x->ntemp_bwd_parts = 0;
		}
	}
}

static bool layer_equal(const struct mem_layer *x, const struct mem_layer *y)
{
	if (strcmp(x->name, y->name) || x->origin != y->origin || x->nparams != y->nparams ||
	    x->saves_bytes != y->saves_bytes || x->input_bytes != y->input_bytes ||
	    x->temp_fwd_bytes != y->temp_fwd_bytes || x->temp_bwd_bytes != y->temp_bwd_bytes ||
	    x->loss_region != y->loss_region || x->nsave_parts != y->nsave_parts ||
	    x->mm_split != y->mm_split || x->mm_fwd_bytes != y->mm_fwd_bytes ||
	    x->mm_bwd_bytes != y->mm_bwd_bytes ||
	    x->tied_grad_bytes != y->tied_grad_bytes || x->tied_grad_end_bytes != y->tied_grad_end_bytes ||
	    x->output_bytes != y->output_bytes || x->output_saved_bytes != y->output_saved_bytes)
		return false;
	for (size_t i = 0; i < x->nsave_parts; i++)
		if (x->save_parts[i] != y->save_parts[i])
			return false;
	if (x->ntemp_fwd_parts != y->ntemp_fwd_parts || x->ntemp_bwd_parts != y->ntemp_bwd_parts)
		return false;
	for (size_t i = 0; i < x->ntemp_fwd_parts; i++)
		if (x->temp_fwd_parts[i] != y->temp_fwd_parts[i])
			return false;
	for (size_t i = 0; i < x->ntemp_bwd_parts; i++)
		if (x->temp_bwd_parts[i] != y->temp_bwd_parts[i])
			return false;
	for (size_t i = 0; i < x->nparams; i++)
		if (!mem_param_equal(&x->params[i], &y->params[i]))
			return false;
	return true;
}

static bool blocks_equal(const struct mem_block *x, const struct mem_block *y)
{
	if (!x->is_body || !y->is_body || x->nlayers != y->nlayers)
		return false;
	for (size_t i = 0; i < x->nlayers; i++)
		if (!layer_equal(&x->layers[i], &y->layers[i]))
			return false;
	return true;
}

/* Runs of equal body blocks are one block repeated: 48 equal layers of a
 * pattern are the block `repeat 48`, exactly what the flat form builds. */
void bld_merge_blocks(struct bld *b, struct mem_job *j)
{
	struct mem_block *out = b->blocks;
	size_t n = 0;

	drop_untrained_prefix(b, j->nblocks);
	for (size_t i = 0; i < j->nblocks; i++) {
		if (n && blocks_equal(&out[n - 1], &out[i]) &&
		    !__builtin_add_overflow(out[n - 1].repeat, out[i].repeat, &out[n - 1].repeat))
			continue;
		out[n++] = out[i];
	}
	j->nblocks = n;
}

/* The block's layers again, layer li reading @own's parameters as its own. */
static void copy_tied_params(struct bld *b, struct mem_block *blk, size_t li, const struct mem_layer *own)
{
	struct mem_layer *layers = ARENA_NEW_ARRAY(b->arena, struct mem_layer, blk->nlayers);
	struct mem_layer *l = &layers[li];
	struct mem_param *p;

	memcpy(layers, blk->layers, blk->nlayers * sizeof *layers);
	p = ARENA_NEW_ARRAY(b->arena, struct mem_param, l->nparams + own->nparams);
	if (l->nparams)
		memcpy(p, l->params, l->nparams * sizeof *p);
	memcpy(p + l->nparams, own->params, own->nparams * sizeof *p);
	l->params = p;
	l->nparams += own->nparams;
	l->tied_grad_bytes = 0;
	blk->layers = layers;
}

/* The layer owning the weight a tied layer reads: the latest earlier
 * layer whose backward ends a hold of at least those bytes (tie_layer). */
static const struct mem_layer *tie_owner(const struct mem_job *j, size_t bi, size_t li)
{
	uint64_t made = j->blocks[bi].layers[li].tied_grad_bytes;

	for (size_t b = bi + 1; b-- > 0;)
		for (size_t l = b == bi ? li : j->blocks[b].nlayers; l-- > 0;)
			if (j->blocks[b].layers[l].tied_grad_end_bytes >= made)
				return &j->blocks[b].layers[l];
	return NULL;
}

/* Megatron-Core under pp > 1 with tied embeddings: the last stage's
 * output layer is not the first stage's embedding, so it allocates a weight
 * of its own (GPTModel: ColumnParallelLinear's skip_weight_param_allocation
 * is pre_process and share_embeddings_and_output_weights), zeroed and
 * all-reduced with the embedding group
 * (language_module.py setup_embeddings_and_output_layer,
 * shared_embedding_or_output_weight); a parameter of that stage's model,
 * with its main_grad in the grad buffer and its optimizer states, its
 * gradient all-reduced in place (finalize_model_grads
 * _allreduce_word_embedding_grads).  The head gets a copy of the owner's
 * parameters and makes its gradient into them: no hold across stages.  A
 * frozen tied weight (no gradient made) is left as it is. */
void bld_megatron_tied_copy(struct bld *b, struct mem_job *j)
{
	struct mem_block *blocks = NULL;

	for (size_t bi = 0; bi < j->nblocks; bi++)
		for (size_t li = 0; li < j->blocks[bi].nlayers; li++) {
			const struct mem_layer *l = &j->blocks[bi].layers[li], *own;

			if (!l->tied_grad_bytes || j->blocks[bi].is_body || !(own = tie_owner(j, bi, li)))
				continue;
			if (!blocks) {
				blocks = ARENA_NEW_ARRAY(b->arena, struct mem_block, j->nblocks);
				memcpy(blocks, j->blocks, j->nblocks * sizeof *blocks);
			}
			copy_tied_params(b, &blocks[bi], li, own);
			j->blocks = blocks;
		}
}
