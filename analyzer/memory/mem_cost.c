/* SPDX-License-Identifier: MIT */
/*
 * mem_cost.c - step 2 of mem_analyze() (memory.c): every parameter tensor and
 * every layer turned into per-rank bytes (struct mem_cost), sharded per tensor
 * with ceil division (§3.1, §3.3) and rounded to the caching allocator's 512-B
 * blocks (§5.3.1), with the workspace's cache of per-layer parameter costs.
 */
#include "analyzer/memory/mem_internal.h"
#include "analyzer/memory/mem_fsdp1.h"

#include <stdlib.h>
#include <string.h>

/* §7: offloaded state is host (or NVMe) memory, unrounded: the CUDA
 * caching allocator does not hold it. */
static void offload_to(struct mem_ctx *cx, struct mem_cost *c, bool nvme, uint64_t bytes)
{
	uint64_t *to = nvme ? &c->nvme : &c->host;

	*to = mem_add(&cx->ovf, *to, bytes);
}

/* §7: the CPU optimizer keeps the fp32 master, the states and an fp32
 * gradient partition (DeepSpeed's single_partition_of_fp32_groups grads,
 * FSDP's offloaded sharded grads): 4 + 12 = 16 B/param for mixed Adam.
 * Without a master the gradient stays in its dtype. */
static void offload_states(struct mem_ctx *cx, const struct mem_param *p, uint32_t n, struct mem_cost *c)
{
	bool sh = mem_shards_states(cx->job->sharding), nvme = cx->job->offload_optimizer_nvme;
	uint64_t g = p->master_bytes ? p->master_bytes : p->grad_bytes;

	offload_to(cx, c, nvme, sh ? mem_shard_bytes(p->master_bytes, n) : p->master_bytes);
	offload_to(cx, c, nvme, sh ? mem_shard_bytes(p->state_bytes, n) : p->state_bytes);
	offload_to(cx, c, nvme, sh ? mem_shard_bytes(p->paged_state_bytes, n) : p->paged_state_bytes);
	offload_to(cx, c, nvme, sh ? mem_shard_bytes(g, n) : g);
}

static void cost_weights(struct mem_ctx *cx, const struct mem_param *p, uint32_t n,
			 struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	bool *o = &cx->ovf;

	c->raw_w = mem_add(o, c->raw_w, p->weight_bytes);
	c->numel = mem_add(o, c->numel, p->numel);
	if (mem_shards_weights(job->sharding) && !p->replicated_dp) {
		/* §3.1 ZeRO-3 / §3.3 FSDP: resident shard + gathered copy while running;
		 * a 4-bit weight's QuantState stays whole on every GPU */
		uint64_t part = p->weight_bytes - p->quant_state_bytes;

		if (!job->offload_params)
			c->w = mem_add(o, c->w, mem_round(job, mem_shard_bytes(part, n)));
		else
			offload_to(cx, c, job->offload_params_nvme, mem_shard_bytes(part, n));
		if (p->quant_state_bytes)
			c->w = mem_add(o, c->w, mem_round(job, p->quant_state_bytes));
		c->gath = mem_add(o, c->gath,
				  mem_round(job, p->gather_bytes ? p->gather_bytes : p->weight_bytes));
	} else {
		c->w = mem_add(o, c->w, mem_round(job, p->weight_bytes));
	}
	if (p->resident_bytes)
		c->w = mem_add(o, c->w, mem_round(job, p->resident_bytes));
}

/* A frozen model prepared apart from the job's (enum mem_engine): its
 * resident weights as the job's sharding keeps them, or whole where
 * PPOTrainer moves it to the GPU; never gathered with the job's units. */
static void cost_apart(struct mem_ctx *cx, const struct mem_param *p, uint32_t n, struct mem_cost *c)
{
	uint64_t gath = c->gath;
	struct mem_param whole;

	if (p->engine == MEM_ENGINE_APART_ZERO3 && cx->job->sharding != MEM_SHARD_ZERO3) {
		whole = *p;
		whole.replicated_dp = true;
		p = &whole;
	}
	cost_weights(cx, p, n, c);
	c->gath = gath;
}

static void cost_step_temp(struct mem_ctx *cx, const struct mem_param *p, uint32_t n,
			   struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	uint64_t t;

	if (job->offload_optimizer || !p->step_temp_bytes)
		return;
	/* §5.2: foreach temporaries exist for the whole group, for-loop ones one
	 * at a time; stepped in backward, every parameter is its own group */
	t = mem_round(job, mem_shards_states(job->sharding) ? mem_shard_bytes(p->step_temp_bytes, n) :
							       p->step_temp_bytes);
	if (p->step_temp_grouped && !job->optimizer_in_backward)
		c->step_group = mem_add(&cx->ovf, c->step_group, t);
	else if (t > c->step_max)
		c->step_max = t;
}

static void cost_trainable(struct mem_ctx *cx, const struct mem_param *p, uint32_t n,
			   struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	enum mem_sharding m = job->sharding;
	bool *o = &cx->ovf, sh_s = mem_shards_states(m);
	uint64_t g = p->grad_bytes, ug = p->gather_grad_bytes ? p->gather_grad_bytes : g;

	c->raw_g = mem_add(o, c->raw_g, g);
	c->raw_s = mem_add(o, c->raw_s, mem_add(o, p->master_bytes, p->state_bytes));
	c->numel_trainable = mem_add(o, c->numel_trainable, p->numel);
	/* §3.1: ZeRO-2+ shard gradients; §7: with optimizer offload they go to the host */
	if (mem_shards_grads(m) || (m == MEM_SHARD_ZERO1 && job->offload_optimizer)) {
		if (!job->offload_optimizer)
			c->gfin = mem_add(o, c->gfin, mem_round(job, mem_shard_bytes(g, n)));
		c->gunsh = mem_add(o, c->gunsh, mem_round(job, ug));
	} else {
		c->gfin = mem_add(o, c->gfin, mem_round(job, g));
	}
	if (m == MEM_SHARD_DDP && !job->grad_as_bucket_view)
		c->bucket = mem_add(o, c->bucket, mem_round(job, g));	/* §3.4 */
	if (!job->offload_optimizer) {
		uint64_t ms = sh_s ? mem_shard_bytes(p->master_bytes, n) : p->master_bytes;
		uint64_t ss = sh_s ? mem_shard_bytes(p->state_bytes, n) : p->state_bytes;

		c->s = mem_add(o, c->s, mem_add(o, mem_round(job, ms), mem_round(job, ss)));
		/* cudaMallocManaged rounds to pages, not to the allocator's 512 B */
		c->paged = mem_add(o, c->paged, sh_s ? mem_shard_bytes(p->paged_state_bytes, n) :
						       p->paged_state_bytes);
	} else {
		offload_states(cx, p, n, c);
	}
	cost_step_temp(cx, p, n, c);
}

/* Op-level SAC (torchtitan distributed/activation_checkpoint.py
 * _custom_policy): the outputs of sdpa and of every other mm stay stored,
 * counting the block's mms from 1 and keeping the odd ones; the count starts
 * again in every checkpointed block (context_fn builds a fresh `meta` per
 * call). Everything else in the repeat is recomputed as under full. */
static uint64_t sac_kept(const struct mem_job *job, const struct mem_block *b, size_t j)
{
	const struct mem_layer *l = &b->layers[j];
	uint64_t before = 0;

	if (job->recompute != MEM_RECOMPUTE_SELECTIVE_OP)
		return 0;
	for (size_t i = 0; i < j; i++)
		before += b->layers[i].op_mm_count % 2;
	uint64_t sdpa = job->sac_ops & MEM_SAC_SDPA ? l->op_sdpa : 0;

	if (!(job->sac_ops & MEM_SAC_MM))
		return sdpa;
	if (!job->sac_every_other_mm)	/* a user's list: every output of its ops */
		return sdpa + l->op_mm[0] + l->op_mm[1];
	/* the layer's first mm is the block's (before + 1)-th: kept when odd */
	return sdpa + l->op_mm[before % 2];
}

/* The parameters' part of a layer's cost: what cost_key and the mem_param
 * array feed, nothing a micro-batch changes. */
static void cost_params(struct mem_ctx *cx, const struct mem_block *b, size_t j, bool full, bool flat,
			struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	const struct mem_layer *l = &b->layers[j];
	uint64_t each = 0;

	memset(c, 0, sizeof(*c));
	c->body = b->is_body;
	for (size_t i = 0; i < l->nparams; i++) {
		const struct mem_param *p = &l->params[i];
		uint32_t n = p->shard_group ? p->shard_group : p->expert ? cx->expert_n : cx->shard_n;
		uint64_t cast = mem_round(job, p->cast_bytes);

		if (p->engine != MEM_ENGINE_JOB) {
			cost_apart(cx, p, n, c);
		} else {
			cost_weights(cx, p, n, c);
			if (p->trainable)
				cost_trainable(cx, p, n, c);
			else if (flat)
				mem_fsdp1_frozen_grad(cx, p, n, c);
			mem_fsdp_cost_param(cx, p, c);
		}
		/* AMP casts are saved for backward unless the layer is recomputed (§2.1).
		 * In a recomputed layer autocast's weight-cast cache still holds them
		 * until the autocast region exits at the end of the forward pass
		 * (autocast_mode.cpp cached_cast: fp32 leaf params requiring grad are
		 * cached whatever the grad mode, checkpoint's no_grad forward included;
		 * the cache is cleared when the outermost autocast exits); the
		 * recomputation in backward casts again and, grad enabled, saves
		 * those casts until each layer's backward (mem_timeline.c). */
		if (p->cast_each)
			each = cast > each ? cast : each;
		else if (p->cast_saved && !full)
			c->cast_keep = mem_add(&cx->ovf, c->cast_keep, cast);
		else
			c->cast_tmp = mem_add(&cx->ovf, c->cast_tmp, cast);
		if (p->cast_saved && full)
			c->cast_fwd = mem_add(&cx->ovf, c->cast_fwd, cast);
	}
	/* MatMul4Bit.forward/backward and torchao's linear_nf4 dequantise one
	 * weight per matmul and free it after: the layer's largest copy */
	c->cast_tmp = mem_add(&cx->ovf, c->cast_tmp, each);
	c->cast_each = each;
}

/* What cost_params reads of the job besides the layer's parameters and
 * block.  A mem_job field that a parameter's cost starts to read must be
 * added here, or a workspace's cache would keep the cost of the last job
 * (the _Static_assert below stops the build when mem_job changes).  Zeroed
 * before it is filled, so that memcmp also compares the padding. */
struct cost_key {
	enum mem_sharding sharding;
	uint32_t shard_n, expert_n, fsdp_reshard_to;
	bool offload_params, offload_params_nvme, offload_optimizer, offload_optimizer_nvme;
	bool no_rounding, grad_as_bucket_view, optimizer_in_backward, fsdp_no_sync;
	bool full, flat, body;
};

_Static_assert(sizeof(void *) != 8 || sizeof(struct mem_job) == 464,
	       "a new mem_job field: add it to struct cost_key if a parameter's cost reads it");

/* One layer's cached cost: the key and a copy of the parameters it was
 * computed from (compared by value: a caller may rebuild a job at the same
 * addresses, as cm_eval's fallback does). */
struct mem_pcache_slot {
	bool valid, ovf;
	struct cost_key key;
	struct mem_param *params;
	size_t nparams, cap;
	struct mem_cost cost;
};

struct mem_pcache {
	struct mem_pcache_slot *slot;
	size_t nslots;
};

static void cost_key_of(const struct mem_ctx *cx, bool full, bool flat, bool body, struct cost_key *k)
{
	const struct mem_job *job = cx->job;

	memset(k, 0, sizeof(*k));
	k->sharding = job->sharding;
	k->shard_n = cx->shard_n;
	k->expert_n = cx->expert_n;
	k->fsdp_reshard_to = job->fsdp_reshard_to;
	k->offload_params = job->offload_params;
	k->offload_params_nvme = job->offload_params_nvme;
	k->offload_optimizer = job->offload_optimizer;
	k->offload_optimizer_nvme = job->offload_optimizer_nvme;
	k->no_rounding = job->no_rounding;
	k->grad_as_bucket_view = job->grad_as_bucket_view;
	k->optimizer_in_backward = job->optimizer_in_backward;
	k->fsdp_no_sync = job->fsdp_no_sync;
	k->full = full;
	k->flat = flat;
	k->body = body;
}

/* The next slot of this call (layers are costed in the same order for the
 * same job); NULL without a workspace, or when it cannot grow. */
static struct mem_pcache_slot *pcache_next(struct mem_ctx *cx)
{
	struct mem_ws *ws = cx->ws;
	struct mem_pcache *pc;
	size_t i = cx->pslot++;

	if (!ws)
		return NULL;
	if (!ws->pcache && !(ws->pcache = calloc(1, sizeof(*ws->pcache))))
		return NULL;
	pc = ws->pcache;
	if (i >= pc->nslots) {
		size_t n = pc->nslots ? pc->nslots * 2 : 16;
		struct mem_pcache_slot *s;

		while (n <= i)
			n *= 2;
		if (n > SIZE_MAX / sizeof(*s) || !(s = realloc(pc->slot, n * sizeof(*s))))
			return NULL;
		memset(s + pc->nslots, 0, (n - pc->nslots) * sizeof(*s));
		pc->slot = s;
		pc->nslots = n;
	}
	return &pc->slot[i];
}

/* Keep @c as the slot's cost of @l under @k; a copy that cannot be made
 * leaves the slot invalid (recomputed next time). */
static void pcache_store(struct mem_pcache_slot *sl, const struct cost_key *k, const struct mem_layer *l,
			 const struct mem_cost *c, bool ovf)
{
	sl->valid = false;
	if (l->nparams > sl->cap) {
		struct mem_param *p = l->nparams <= SIZE_MAX / sizeof(*p) ?
				      realloc(sl->params, l->nparams * sizeof(*p)) : NULL;

		if (!p)
			return;
		sl->params = p;
		sl->cap = l->nparams;
	}
	if (l->nparams)
		memcpy(sl->params, l->params, l->nparams * sizeof(*l->params));
	sl->nparams = l->nparams;
	sl->key = *k;
	sl->cost = *c;
	sl->ovf = ovf;
	sl->valid = true;
}

/* cost_params, from the workspace's cache when the layer's parameters and
 * the key are those it was computed from (memc search and the compiled
 * model analyse one job's variants, most of which change only what a
 * parameter's cost does not read). */
static void cost_params_cached(struct mem_ctx *cx, const struct mem_block *b, size_t j, bool full,
			       bool flat, struct mem_cost *c)
{
	const struct mem_layer *l = &b->layers[j];
	struct mem_pcache_slot *sl = pcache_next(cx);
	struct cost_key k;
	bool ovf = cx->ovf;

	if (!sl) {
		cost_params(cx, b, j, full, flat, c);
		return;
	}
	cost_key_of(cx, full, flat, b->is_body, &k);
	if (sl->valid && sl->nparams == l->nparams && !memcmp(&sl->key, &k, sizeof k) &&
	    (!l->nparams || !memcmp(sl->params, l->params, l->nparams * sizeof(*l->params)))) {
		*c = sl->cost;
		cx->ovf |= sl->ovf;
		cx->ws->pcache_hits++;
		return;
	}
	cx->ovf = false;
	cost_params(cx, b, j, full, flat, c);
	pcache_store(sl, &k, l, c, cx->ovf);
	cx->ovf |= ovf;
}

void mem_pcache_free(struct mem_ws *ws)
{
	struct mem_pcache *pc = ws->pcache;

	for (size_t i = 0; pc && i < pc->nslots; i++)
		free(pc->slot[i].params);
	if (pc)
		free(pc->slot);
	free(pc);
	ws->pcache = NULL;
}

/* plain: the cost of a repeat left out of the per-layer policy (policy_run):
 * not recomputed, and not offloaded by Megatron's cpu_offloading. */
static void cost_layer(struct mem_ctx *cx, const struct mem_block *b, size_t j, bool plain,
		       struct mem_cost *c)
{
	const struct mem_job *job = cx->job;
	const struct mem_layer *l = &b->layers[j];
	bool remat = !plain && mem_recomputes_repeat(job->recompute);
	bool full = remat && b->is_body, flat = mem_fsdp1_flat_grad(job, b);

	cost_params_cached(cx, b, j, full, flat, c);
	c->act = l->loss_region ? MEM_C_LOGITS : MEM_C_ACTIVATIONS;
	c->saves = mem_round(job, l->saves_bytes);
	c->stored = c->saves;
	if (full) {
		/* §4.5: a fully recomputed repeat keeps only its first layer's input.
		 * The recomputation runs on detach()ed inputs (torch/utils/checkpoint.py
		 * CheckpointFunction.backward, Megatron tensor_parallel/random.py), which
		 * share the stored input's storage: a save that is the input itself
		 * (a norm's x_in) is not allocated again when the repeat is re-run. */
		uint64_t alias = j == 0 ? l->input_saved_bytes : 0, kept = sac_kept(job, b, j);

		if (alias > l->saves_bytes)
			alias = l->saves_bytes;
		if (kept > l->saves_bytes - alias)
			kept = l->saves_bytes - alias;
		c->stored = j == 0 ? mem_round(job, l->input_bytes) : 0;
		c->stored = mem_add(&cx->ovf, c->stored, mem_round(job, kept));
		c->saves = mem_round(job, l->saves_bytes - alias - kept);
	}
	c->tfwd = mem_round(job, l->temp_fwd_bytes);
	c->tbwd = mem_round(job, l->temp_bwd_bytes);
	c->mm_split = l->mm_split && !full;
	c->mmf = mem_round(job, l->mm_fwd_bytes);
	c->mmb = mem_round(job, l->mm_bwd_bytes);
	/* outside the cached part: the bytes come from another layer's param */
	c->tied = mem_round(job, l->tied_grad_bytes);
	c->tied_end = mem_round(job, l->tied_grad_end_bytes);
	c->wgrad = mem_round(job, l->wgrad_bytes);
	c->wgrad_out = mem_round(job, l->wgrad_out_bytes);
	if (job->keep_output) {
		c->kept_t = mem_round(job, l->output_bytes);
		c->kept = mem_add(&cx->ovf, c->kept_t, mem_round(job, l->output_saved_bytes));
	}
	/* torchtune keeps the head and the loss out of OffloadActivations
	 * (NoOpManager on the output); Unsloth offloads decoder-layer inputs */
	if ((job->offload_activations || (job->offload_first && !plain)) && b->is_body &&
	    !l->loss_region)
		c->stored_off = c->stored;
}

static enum mem_status cost_table(struct mem_ctx *cx, bool plain, struct mem_cost ***costs,
				  struct mem_sums **iter, struct mem_sums ***prefix)
{
	const struct mem_job *job = cx->job;

	*costs = mem_ws_calloc(cx->ws, job->nblocks, sizeof(**costs));
	*iter = mem_ws_calloc(cx->ws, job->nblocks, sizeof(**iter));
	*prefix = mem_ws_calloc(cx->ws, job->nblocks, sizeof(**prefix));
	if (!*costs || !*iter || !*prefix)
		return MEM_E_NOMEM;
	for (size_t b = 0; b < job->nblocks; b++) {
		const struct mem_block *blk = &job->blocks[b];

		/* cost_layer and the prefix sums write every element */
		(*costs)[b] = mem_ws_alloc(cx->ws, blk->nlayers, sizeof(struct mem_cost));
		(*prefix)[b] = mem_ws_alloc(cx->ws, blk->nlayers + 1, sizeof(struct mem_sums));
		if (!(*costs)[b] || !(*prefix)[b])
			return MEM_E_NOMEM;
		memset(&(*prefix)[b][0], 0, sizeof(struct mem_sums));
		for (size_t j = 0; j < blk->nlayers; j++) {
			cost_layer(cx, blk, j, plain, &(*costs)[b][j]);
			mem_sums_add_cost(&cx->ovf, &(*iter)[b], &(*costs)[b][j]);
			(*prefix)[b][j + 1] = (*iter)[b];
		}
	}
	return MEM_OK;
}

/* Whether some body repeats escape the recompute mode or Megatron's
 * activation offload (plain segments). */
bool mem_has_plain(const struct mem_job *job)
{
	return (mem_recomputes_repeat(job->recompute) &&
		(job->recompute_every > 1 || job->recompute_first > 0)) || job->offload_first > 0;
}

enum mem_status mem_build_costs(struct mem_ctx *cx)
{
	enum mem_status s = cost_table(cx, false, &cx->costs, &cx->iter, &cx->prefix);

	if (s != MEM_OK || !mem_has_plain(cx->job)) {
		cx->costs_plain = cx->costs;
		cx->iter_plain = cx->iter;
		cx->prefix_plain = cx->prefix;
		return s;
	}
	return cost_table(cx, true, &cx->costs_plain, &cx->iter_plain, &cx->prefix_plain);
}

/* Whether any layer has expert params: only then must the expert group be
 * whole, and only then is it a communicator of its own. */
bool mem_has_experts(const struct mem_job *job)
{
	for (size_t b = 0; b < job->nblocks; b++)
		for (size_t j = 0; j < job->blocks[b].nlayers; j++)
			for (size_t i = 0; i < job->blocks[b].layers[j].nparams; i++)
				if (job->blocks[b].layers[j].params[i].expert)
					return true;
	return false;
}

static void free_table(struct mem_ctx *cx, struct mem_cost **costs, struct mem_sums *iter,
		       struct mem_sums **prefix)
{
	for (size_t b = 0; costs && b < cx->job->nblocks; b++)
		mem_ws_release(cx->ws, costs[b]);
	for (size_t b = 0; prefix && b < cx->job->nblocks; b++)
		mem_ws_release(cx->ws, prefix[b]);
	mem_ws_release(cx->ws, costs);
	mem_ws_release(cx->ws, iter);
	mem_ws_release(cx->ws, prefix);
}

void mem_free_costs(struct mem_ctx *cx)
{
	if (cx->costs_plain != cx->costs)
		free_table(cx, cx->costs_plain, cx->iter_plain, cx->prefix_plain);
	free_table(cx, cx->costs, cx->iter, cx->prefix);
}
