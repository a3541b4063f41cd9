/* SPDX-License-Identifier: MIT */
/*
 * mem_fsdp1.c - torch FSDP1 (FullyShardedDataParallel) rules that differ
 * from memc's generic FSDP: FlatParameter gradients under use_orig_params,
 * gradient accumulation under no_sync(), and the prefetch arguments.
 * memory.c and mem_timeline.c call these hooks; each is a no-op without
 * the `fsdp1 { }` record (docs/memory-model.md "FSDP1").
 */
#include "analyzer/memory/mem_fsdp1.h"

static bool unit_trains(const struct mem_block *b)
{
	for (size_t j = 0; j < b->nlayers; j++)
		for (size_t i = 0; i < b->layers[j].nparams; i++)
			if (b->layers[j].params[i].trainable)
				return true;
	return false;
}

/* torch/distributed/fsdp/_flat_param.py: one FlatParameter per unit (a body
 * repeat; the root's holds every other layer).  With use_orig_params=True it
 * may mix frozen and trainable tensors and requires grad when any of them
 * does (FlatParamHandle._reset_flat_param_grad_info_if_needed); its .grad is
 * then sized to the whole flat parameter, the frozen views included. */
bool mem_fsdp1_flat_grad(const struct mem_job *job, const struct mem_block *b)
{
	if (!job->fsdp1_orig_params)
		return false;
	if (b->is_body)
		return unit_trains(b);
	for (size_t k = 0; k < job->nblocks; k++)
		if (!job->blocks[k].is_body && unit_trains(&job->blocks[k]))
			return true;
	return false;
}

/* A frozen tensor's share of its FlatParameter's gradient: unsharded (the
 * flat parameter's dtype, as its weight) until _post_backward_hook's
 * reduce-scatter, then this rank's shard (_saved_grad_shard), on the host
 * under CPUOffload.  No optimizer state: _use_sharded_grad_views leaves a
 * frozen parameter's .grad None, which torch.optim skips. */
void mem_fsdp1_frozen_grad(struct mem_ctx *cx, const struct mem_param *p, uint32_t n,
			   struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	bool *o = &cx->ovf;
	uint64_t g = p->weight_bytes - p->quant_state_bytes, ug = p->gather_bytes ? p->gather_bytes : g;
	uint64_t sh = n <= 1 ? g : g / n + (g % n != 0);

	c->raw_g = mem_add(o, c->raw_g, g);
	if (job->sharding == MEM_SHARD_FSDP_NO_SHARD) {
		c->gfin = mem_add(o, c->gfin, mem_round(job, g));
		return;
	}
	c->gunsh = mem_add(o, c->gunsh, mem_round(job, ug));
	if (job->offload_optimizer)
		c->host = mem_add(o, c->host, sh);
	else
		c->gfin = mem_add(o, c->gfin, mem_round(job, sh));
}

/* The prefetched unit of a pass: FSDP1 all-gathers the next unit ahead only
 * with forward_prefetch=True (forward) and BackwardPrefetch.BACKWARD_PRE
 * (backward; BACKWARD_POST issues it after the current unit's reshard,
 * _runtime_utils.py _post_backward_hook -> _prefetch_handle).  The rate
 * limiter (limit_all_gathers) bounds the rest at two units in flight. */
uint64_t mem_fsdp1_prefetch(const struct mem_job *job, bool bwd, uint64_t pre)
{
	if (!job->fsdp1)
		return pre;
	return (bwd ? job->fsdp1_backward_pre : job->fsdp1_forward_prefetch) ? pre : 0;
}

/* no_sync(): a later micro-batch starts with every unit's unsharded
 * gradient (_post_backward_hook returns before _reduce_grad while
 * _sync_gradients is False; .grad accumulates in place), so they are the
 * resident gradients; its backward's own are mem_fsdp1_view_grads. */
bool mem_fsdp1_accumulates_unsharded(const struct mem_job *job, bool accumulating)
{
	return accumulating && job->fsdp1_no_sync && job->sharding >= MEM_SHARD_FSDP_FULL &&
	       job->sharding != MEM_SHARD_FSDP_NO_SHARD;
}

/* FSDP1's modules compute with views of the unsharded FlatParameter
 * (_flat_param.py _use_unsharded_views -> _get_unflat_views_unaligned:
 * torch.split(flat_param, _numels) then .view(shape)), so autograd gives
 * each view a gradient of its own and holds it until the unit's last view
 * has one (the root's head gradient through the whole backward);
 * SplitWithSizesBackward then concatenates them into a new flat-size
 * gradient (split_with_sizes_backward: at::cat) for the FlatParameter's
 * AccumulateGrad, beside them.  Under no_sync() that sum is added to the
 * resident .grad in place: a later micro-batch makes the same tensors. */
uint64_t mem_fsdp1_view_grads(struct mem_ctx *cx, bool accumulating, uint64_t views, uint64_t cat)
{
	const struct mem_job *job = cx->job;

	if (!job->fsdp1)
		return mem_fsdp1_accumulates_unsharded(job, accumulating) ? 0 : views;
	return mem_add(&cx->ovf, views, cat);
}

/* SHARD_GRAD_OP under no_sync() keeps every unit gathered between
 * micro-batches (_should_free_in_backward: only FULL_SHARD and HYBRID_SHARD
 * free while _sync_gradients is False). */
bool mem_fsdp1_all_gathered(const struct mem_job *job, bool accumulating)
{
	return mem_fsdp1_accumulates_unsharded(job, accumulating) &&
	       job->sharding == MEM_SHARD_FSDP_GRAD_OP;
}
