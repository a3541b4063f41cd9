/* SPDX-License-Identifier: MIT */
/*
 * mem_fsdp.c - FSDP2 (torch.distributed.fsdp fully_shard) as torchtitan and
 * torchtune run it: what a unit keeps between its forward and its backward
 * (reshard_after_forward True / False / an int), and what is kept when
 * gradients are not synchronised until the last micro-batch
 * (set_requires_gradient_sync(False)) or parameters are not resharded after
 * backward (set_reshard_after_backward(False)), as
 * torch.distributed.pipelining's stage.py backward_maybe_with_nosync sets
 * both for every micro-batch of a stage.  docs/memory-model.md "FSDP2".
 *
 * The walk (mem_timeline.c) asks three things here: the gathered bytes at
 * an instant, the unsharded gradients at an instant, and the instant after
 * the last backward when the held gradients are reduce-scattered.  All of
 * them are prefix sums of the stage, so folding repeats stays exact.
 */
#include "analyzer/memory/mem_internal.h"

static uint64_t ceil_div(uint64_t bytes, uint32_t n)
{
	return n <= 1 ? bytes : bytes / n + (bytes % n != 0);
}

bool mem_fsdp_gathers(const struct mem_job *job)
{
	return job->fsdp_reshard_to || job->fsdp_keep_after_backward || job->fsdp_split_root;
}

/* Field f of the stage's non-body layers after its first body repeat: with
 * a split root, the [norm, output] unit (the rest, before the body, is the
 * tok_embeddings unit); 0 otherwise. */
static uint64_t post_root(struct mem_ctx *cx, const struct mem_stage *st, enum mem_sum_field f)
{
	uint64_t sum = 0;
	bool body = false;

	if (!cx->job->fsdp_split_root)
		return 0;
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct mem_seg *seg = &st->segs[i];

		if (cx->job->blocks[seg->block].is_body)
			body = true;
		else if (body)
			sum = mem_add(&cx->ovf, sum, mem_mul(&cx->ovf, mem_seg_iter(cx, seg)->v[f], seg->count));
	}
	return sum;
}

/* What a non-body unit keeps between its forward and its backward: the
 * body's rule on the unit's total (per-tensor rounding left out). */
static uint64_t unit_held(const struct mem_job *job, uint64_t gath)
{
	if (job->fsdp_reshard_to == 1)
		return gath;
	return job->fsdp_reshard_to ? mem_round(job, ceil_div(gath, job->fsdp_reshard_to)) : 0;
}

/* The gathered bytes of the non-body layers.  One root (9dec370's
 * fully_shard(model)): gathered through forward and backward.  Split
 * (torchtitan's apply_fsdp_to_decoder: tok_embeddings, [norm, lm_head]):
 * each is whole while it runs, the embedding keeps its post-forward copy,
 * [norm, lm_head] is resharded after its backward unless nothing is. */
static uint64_t root_gathered(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_cost *c,
			      bool post, bool bwd, bool accumulating)
{
	const struct mem_job *job = cx->job;
	uint64_t all = st->total.v[S_GATH_NB], tail = post_root(cx, st, S_GATH), head = mem_sub(all, tail);
	bool kept = job->fsdp_keep_after_backward && (bwd || accumulating);

	if (!job->fsdp_split_root)
		return all;
	if (!c->body && !post)
		return head;
	return mem_add(&cx->ovf, unit_held(job, head), post || kept ? tail : 0);
}

/* Per-parameter bytes: the post-forward copy (FSDPParam's
 * sharded_post_forward_size: dim 0 over the reshard_after_forward ranks)
 * and the accumulated gradient. */
void mem_fsdp_cost_param(struct mem_ctx *cx, const struct mem_param *p, struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	bool *o = &cx->ovf;
	uint64_t g = p->gather_bytes ? p->gather_bytes : p->weight_bytes;
	uint64_t ug = p->gather_grad_bytes ? p->gather_grad_bytes : p->grad_bytes;
	bool sharded = job->sharding == MEM_SHARD_FSDP_FULL || job->sharding == MEM_SHARD_FSDP_HYBRID ||
		       job->sharding == MEM_SHARD_FSDP_GRAD_OP;

	if (!sharded || p->replicated_dp)
		return;
	if (c->body && job->fsdp_reshard_to)
		c->held = mem_add(o, c->held, mem_round(job, ceil_div(g, job->fsdp_reshard_to)));
	if (p->trainable && job->fsdp_no_sync)
		c->gacc = mem_add(o, c->gacc, mem_round(job, p->acc_grad_bytes ? p->acc_grad_bytes : ug));
	/* fsdp2_bytes: gather_grad = param_dtype + reduce_dtype bytes when the
	 * dtypes differ, and acc_grad is then the reduce_dtype part */
	if (p->trainable && p->gather_grad_bytes > p->acc_grad_bytes)
		c->gred = mem_add(o, c->gred, mem_round(job, p->acc_grad_bytes));
}

void mem_fsdp_add_sums(bool *ovf, struct mem_sums *s, const struct mem_cost *c)
{
	s->v[S_HELD] = mem_add(ovf, s->v[S_HELD], c->held);
	s->v[S_GACC] = mem_add(ovf, s->v[S_GACC], c->gacc);
	if (!c->body) {
		s->v[S_GACC_NB] = mem_add(ovf, s->v[S_GACC_NB], c->gacc);
		s->v[S_GRED_NB] = mem_add(ovf, s->v[S_GRED_NB], c->gred);
	}
}

/* The root's gradients in backward: param_dtype only.  Its reduce_dtype
 * copy is made by foreach_reduce in the root's post_backward, which
 * FSDPState._root_post_backward_final_callback runs once the whole
 * backward has ended (the root's inputs, token ids, need no gradient, so
 * no RegisterPostBackwardFunction runs it earlier); the body units' copy
 * stands for the previous unit's reduce_scatter_input, which
 * comm_ctx.reduce_scatter_state keeps through the next unit's backward.
 * B: sums before the current position; the root's layers from there on. */
uint64_t mem_fsdp_root_grads(const struct mem_stage *st, const struct mem_sums *B)
{
	const struct mem_sums *T = &st->total;

	return mem_sub(mem_sub(T->v[S_GUNSH_NB], B->v[S_GUNSH_NB]), mem_sub(T->v[S_GRED_NB], B->v[S_GRED_NB]));
}

/* The root's post_backward after a backward with gradient sync: its
 * param_dtype gradients and the reduce_scatter_input foreach_reduce fills
 * from them (the root resharded just before, _fsdp_param_group.py
 * post_backward); 0 when the root has no reduce_dtype copy, whose instant
 * the backward's own already covers. */
uint64_t mem_fsdp_root_reduce(struct mem_ctx *cx, const struct mem_stage *st)
{
	const struct mem_job *job = cx->job;
	const struct mem_sums *T = &st->total;

	if (!job->fsdp2 || job->fsdp_no_sync || !T->v[S_GRED_NB])
		return 0;
	/* split: [norm, lm_head] reduced after its own backward; the
	 * tok_embeddings unit, whose input needs no gradient either, here */
	return mem_sub(T->v[S_GUNSH_NB], post_root(cx, st, S_GUNSH));
}

/* In forward, the flat all_gather_output of the unit gathered last, beside
 * its per-parameter copies: foreach_all_gather allocates it (the input a
 * view of it), foreach_all_gather_copy_out splits it into the unsharded
 * tensors, and wait_for_unshard keeps it in comm_ctx.all_gather_state until
 * the next unit's copy-out, the last one until the root's post_forward
 * (_fsdp_state.py _post_forward: iter_forward_root), so through the layers
 * after the body but not the loss, outside the model.  A body unit with
 * another after it: that unit's (the prefetch, the same bytes); the last
 * one: its own; before the body: the root's (split: tok_embeddings');
 * after it: the last body unit's (split: [norm, lm_head]'s own). */
uint64_t mem_fsdp_forward_flat(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_cost *c,
			       bool post, uint64_t cur, bool more)
{
	const struct mem_job *job = cx->job;
	uint64_t tail = post_root(cx, st, S_GATH);

	if (c->body)
		return more ? st->max_unit_gath : cur;
	if (!post)
		return job->fsdp_split_root ? mem_sub(st->total.v[S_GATH_NB], tail) : st->total.v[S_GATH_NB];
	if (c->act == MEM_C_LOGITS)
		return 0;
	return job->fsdp_split_root ? tail : st->max_unit_gath;
}

/* Gathered parameters at an instant: the non-body layers as root_gathered
 * says (the root is not resharded after forward: _fsdp_state.py
 * _lazy_init).  A body unit before the current one keeps its post-forward
 * copy; the current one is whole; the next is prefetched (in backward only
 * what its post-forward copy lacks).  Without reshard after backward every
 * unit from the current one on is whole in backward, and in a later
 * micro-batch's forward too, since the previous backward left them
 * gathered.  cur: the current body unit's gathered bytes (0 at a root
 * layer); more: another body unit follows in this pass. */
uint64_t mem_fsdp_gathered(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_sums *B,
			   const struct mem_cost *c, bool post, uint64_t cur, bool more, bool bwd,
			   bool accumulating)
{
	const struct mem_job *job = cx->job;
	const struct mem_sums *T = &st->total;
	bool *o = &cx->ovf;
	uint64_t root = root_gathered(cx, st, c, post, bwd, accumulating);
	uint64_t body_before = mem_sub(B->v[S_GATH], B->v[S_GATH_NB]);
	uint64_t live = mem_add(o, root, B->v[S_HELD]);
	uint64_t pre = 0;

	if (job->fsdp_keep_after_backward && (bwd || accumulating)) {
		uint64_t body_total = mem_sub(T->v[S_GATH], T->v[S_GATH_NB]);

		return mem_add(o, live, mem_sub(body_total, body_before));
	}
	if (!bwd && job->fsdp2)
		pre = mem_fsdp_forward_flat(cx, st, c, post, cur, more);
	else if (more)
		pre = bwd ? mem_sub(st->max_unit_gath, st->max_unit_held) : st->max_unit_gath;
	return mem_add(o, live, mem_add(o, cur, pre));
}

/* Unsharded gradients at an instant when nothing is reduce-scattered before
 * the last micro-batch: each unit's post_backward turns its gradient into
 * unsharded_accumulated_grad (reduce_dtype: _fsdp_param.py
 * to_accumulated_grad_if_needed), later micro-batches add to it
 * (accumulate_unsharded_grad_if_needed).  The first micro-batch holds the
 * units already back-propagated and, for the running unit, its gradients
 * with their reduce_dtype copy; a later one holds every unit's and the
 * running unit's new gradient in param_dtype.  B: sums before the current
 * repeat (body) or layer (root); in_unit, in_acc: the running unit's
 * gradients from the current layer to its end (gather_grad, accumulated). */
uint64_t mem_fsdp_unsharded(struct mem_ctx *cx, const struct mem_stage *st, const struct mem_sums *B,
			    const struct mem_sums *unit, bool post, uint64_t in_unit, uint64_t in_acc,
			    bool accumulating)
{
	const struct mem_sums *T = &st->total;
	bool *o = &cx->ovf;
	uint64_t body_total = mem_sub(T->v[S_GACC], T->v[S_GACC_NB]);
	uint64_t body_done = mem_sub(B->v[S_GACC], B->v[S_GACC_NB]);

	if (accumulating)
		return mem_add(o, T->v[S_GACC], mem_sub(in_unit, in_acc));
	/* units after the current one in forward order are done; the root's
	 * layers after this position too, in param_dtype until its own
	 * post_backward at the end of the stage's backward */
	body_done = mem_sub(body_total, mem_add(o, body_done, unit ? mem_sub(unit->v[S_GACC],
									      unit->v[S_GACC_NB]) : 0));
	if (!unit)
		in_unit = 0;	/* a root layer's own gradient is in the root's share */
	uint64_t root_done = mem_fsdp_root_grads(st, B);
	uint64_t tail = mem_sub(post_root(cx, st, S_GUNSH), post_root(cx, st, S_GRED_NB));

	if (!post)	/* a split [norm, lm_head] unit has had its post_backward */
		root_done = mem_add(o, mem_sub(root_done, tail), post_root(cx, st, S_GACC));
	return mem_add(o, mem_add(o, body_done, root_done), in_unit);
}

/* With gradient sync and a split root, the [norm, lm_head] unit
 * reduce-scatters after its own backward: once the walk is past it (in the
 * body or the embedding), its gradients are sharded. */
void mem_fsdp_split_grads(struct mem_ctx *cx, const struct mem_stage *st, bool post, uint64_t *after,
			  uint64_t *unsh)
{
	if (post || !cx->job->fsdp_split_root)
		return;
	*unsh = mem_sub(*unsh, mem_sub(post_root(cx, st, S_GUNSH), post_root(cx, st, S_GRED_NB)));
	*after = mem_add(&cx->ovf, *after, post_root(cx, st, S_GFIN));
}

/* After the last micro-batch's backward each unit's post_backward reshards
 * it and reduce-scatters its accumulated gradient (foreach_reduce copies it
 * into a reduce_scatter_input of the same size): the first unit is the
 * peak, with everything else still gathered and accumulated. */
uint64_t mem_fsdp_reduce_extra(const struct mem_stage *st)
{
	const struct mem_sums *T = &st->total;
	uint64_t root = T->v[S_GACC_NB], body = mem_sub(T->v[S_GACC], root);
	uint64_t unit = st->body_units ? body / st->body_units : 0;

	return root > unit ? root : unit;
}
