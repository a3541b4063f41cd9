/* SPDX-License-Identifier: MIT */
/*
 * memory.c - the job's checks, pipeline placement, and the three figures of
 * each class of rank (per-tensor costs are mem_cost.c's).
 *
 * Flow of mem_analyze():
 *   1. check the job (degrees, divisibility of body repeats over pp x vp);
 *   2. turn every parameter tensor and every layer into per-rank bytes
 *      (struct mem_cost, mem_cost.c): sharded per tensor with ceil division (§3.1, §3.3),
 *      then rounded to the caching allocator's 512-B blocks (§5.3.1);
 *   3. place body repeats on stages in contiguous chunks (§4.6; interleaved:
 *      chunk c on stage c mod pp), other blocks with the stage of the body
 *      repeat before them (stage 0 if none);
 *   4. walk each stage's step (mem_timeline.c) for the first micro-batch and,
 *      with gradient accumulation, for a later one, and keep the maximum;
 *   5. derive reserved (x frag, 2 MiB segments, §5.3.4) and device totals
 *      (+ context, cuBLAS, NCCL per communicator, §5.3.2-5.3.3), write the
 *      explain strings, and merge stages whose figures are identical.
 */
#include "analyzer/memory/mem_internal.h"
#include "analyzer/memory/mem_fsdp1.h"
#include "analyzer/alloc/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every tensor costs round_size(n) in memory_allocated (§5.3.1); an absent
 * tensor (0 bytes) costs nothing. */
uint64_t mem_round(const struct mem_job *job, uint64_t bytes)
{
	if (bytes == 0 || job->no_rounding)
		return bytes;
	return alloc_round_size(bytes);
}

void mem_sums_add_cost(bool *ovf, struct mem_sums *s, const struct mem_cost *c)
{
	uint64_t *v = s->v;
	bool log = c->act == MEM_C_LOGITS;
	enum mem_sum_field st = log ? S_STORED_LOG : S_STORED_ACT, sv = log ? S_SAVES_LOG : S_SAVES_ACT;

	v[S_W] = mem_add(ovf, v[S_W], c->w);
	v[S_S] = mem_add(ovf, v[S_S], c->s);
	v[S_GFIN] = mem_add(ovf, v[S_GFIN], c->gfin);
	v[S_GUNSH] = mem_add(ovf, v[S_GUNSH], c->gunsh);
	if (!c->body) {
		v[S_GFIN_NB] = mem_add(ovf, v[S_GFIN_NB], c->gfin);
		v[S_GUNSH_NB] = mem_add(ovf, v[S_GUNSH_NB], c->gunsh);
		v[S_GATH_NB] = mem_add(ovf, v[S_GATH_NB], c->gath);
	}
	v[S_BUCKET] = mem_add(ovf, v[S_BUCKET], c->bucket);
	v[S_GATH] = mem_add(ovf, v[S_GATH], c->gath);
	v[S_CAST_KEEP] = mem_add(ovf, v[S_CAST_KEEP], c->cast_keep);
	v[S_CAST_FWD] = mem_add(ovf, v[S_CAST_FWD], c->cast_fwd);
	v[S_STEP_GROUP] = mem_add(ovf, v[S_STEP_GROUP], c->step_group);
	v[st] = mem_add(ovf, v[st], c->stored);
	v[sv] = mem_add(ovf, v[sv], c->saves);
	v[S_RAW_W] = mem_add(ovf, v[S_RAW_W], c->raw_w);
	v[S_RAW_G] = mem_add(ovf, v[S_RAW_G], c->raw_g);
	v[S_RAW_S] = mem_add(ovf, v[S_RAW_S], c->raw_s);
	v[S_NUMEL] = mem_add(ovf, v[S_NUMEL], c->numel);
	v[S_NUMEL_TRAIN] = mem_add(ovf, v[S_NUMEL_TRAIN], c->numel_trainable);
	v[S_HOST] = mem_add(ovf, v[S_HOST], c->host);
	v[S_NVME] = mem_add(ovf, v[S_NVME], c->nvme);
	v[S_PAGED] = mem_add(ovf, v[S_PAGED], c->paged);
	v[S_STORED_OFF] = mem_add(ovf, v[S_STORED_OFF], c->stored_off);
	v[S_TIED] = mem_add(ovf, v[S_TIED], c->tied);
	v[S_TIED_END] = mem_add(ovf, v[S_TIED_END], c->tied_end);
	v[S_KEPT] = mem_add(ovf, v[S_KEPT], c->kept);
	v[S_WGRAD] = mem_add(ovf, v[S_WGRAD], c->wgrad);
	v[S_WGRAD_OUT] = mem_add(ovf, v[S_WGRAD_OUT], c->wgrad_out);
	mem_fsdp_add_sums(ovf, s, c);
}

/* mem_add(x, mem_mul(y, k)) field by field, without a branch per field:
 * the walk calls it for every repeat it visits.  A product or sum that
 * overflows saturates, as mem_add of a saturated product does. @out may
 * be @x. */
void mem_sums_axpy(bool *ovf, struct mem_sums *out, const struct mem_sums *x,
		   const struct mem_sums *y, uint64_t k)
{
	bool any = false;

	if (k == 0) {
		if (out != x)
			*out = *x;
		return;
	}
	for (int i = 0; i < S__COUNT; i++) {
		uint64_t t, r;
		bool o = __builtin_mul_overflow(y->v[i], k, &t);

		o |= __builtin_add_overflow(x->v[i], t, &r);
		out->v[i] = o ? UINT64_MAX : r;
		any |= o;
	}
	if (any)
		*ovf = true;
}

uint64_t mem_extra_in_flight(bool *ovf, uint64_t stored, uint64_t chunks, uint32_t vp)
{
	uint64_t x;

	/* stored is one micro-batch over all vp chunks of the stage; the walked
	 * micro-batch accounts for vp chunks, the others are resident (§4.6).
	 * Exact when the chunks are equal; otherwise rounded up. */
	if (chunks <= vp)
		return 0;
	x = chunks - vp;
	return mem_add(ovf, mem_mul(ovf, stored / vp, x), (stored % vp * x + vp - 1) / vp);
}

bool mem_param_equal(const struct mem_param *x, const struct mem_param *y)
{
	return (x->name == y->name || (x->name && y->name && !strcmp(x->name, y->name))) &&
	       x->origin == y->origin && x->numel == y->numel &&
	       x->weight_bytes == y->weight_bytes && x->grad_bytes == y->grad_bytes &&
	       x->master_bytes == y->master_bytes && x->state_bytes == y->state_bytes &&
	       x->paged_state_bytes == y->paged_state_bytes &&
	       x->step_temp_bytes == y->step_temp_bytes && x->step_temp_grouped == y->step_temp_grouped &&
	       x->gather_bytes == y->gather_bytes && x->gather_grad_bytes == y->gather_grad_bytes &&
	       x->cast_bytes == y->cast_bytes && x->cast_saved == y->cast_saved &&
	       x->cast_each == y->cast_each && x->load_quantizer == y->load_quantizer &&
	       x->resident_bytes == y->resident_bytes && x->trainable == y->trainable &&
	       x->replicated_dp == y->replicated_dp && x->expert == y->expert &&
	       x->shard_group == y->shard_group && x->acc_grad_bytes == y->acc_grad_bytes &&
	       x->load_bytes == y->load_bytes && x->engine == y->engine &&
	       x->quant_state_bytes == y->quant_state_bytes;
}

const char *mem_status_str(enum mem_status st)
{
	switch (st) {
	case MEM_OK: return "ok";
	case MEM_E_INVALID: return "invalid job (a degree or micro_batches is 0, or bad factor)";
	case MEM_E_PP_UNEVEN: return "body layers cannot be split over the pipeline stages";
	case MEM_E_PP_MICRO_BATCHES: return "interleaved schedule: micro-batches not a multiple of pp";
	case MEM_E_PP_GROUP: return "interleaved schedule: micro-batch groups not as Megatron-Core takes them";
	case MEM_E_HYBRID_GROUP: return "dp is not a multiple of the shard group (dp_shard)";
	case MEM_E_OVERFLOW: return "byte count overflows 64 bits";
	case MEM_E_NOMEM: return "out of memory";
	case MEM_E_EXPERT_GROUP: return "ep x etp does not divide dp_shard x cp x tp (expert data parallel group)";
	case MEM_E_PP_DUALPIPE: return "DualPipe: pp or the micro-batches break DualPipe.step's asserts";
	}
	return "unknown status";
}

const char *mem_component_name(enum mem_component c)
{
	static const char *const names[MEM_C__COUNT] = {
		"weights", "gradients", "optimizer", "activations", "logits+loss", "buffers",
		"overhead",
	};
	return (unsigned)c < MEM_C__COUNT ? names[c] : "?";
}

const char *mem_buffer_name(enum mem_buffer b)
{
	static const char *const names[MEM_B__COUNT] = {
		"gathered params", "unsharded grads", "buckets", "casts", "step temporaries",
	};
	return (unsigned)b < MEM_B__COUNT ? names[b] : "?";
}

const char *mem_phase_name(enum mem_phase p)
{
	static const char *const names[MEM_PHASE__COUNT] = {
		"forward", "loss", "backward", "optimizer step",
	};
	return (unsigned)p < MEM_PHASE__COUNT ? names[p] : "?";
}

/* ---- 1. checking the job ------------------------------------------------- */

/* dp ranks of one shard group: the job's dp_shard, else all of dp, or under
 * hybrid_shard those of one node (§3.3): the node's GPUs over its tp x cp
 * ranks, which the group spans anyway; dp / dp_shard groups replicate. */
static uint32_t dp_shard(const struct mem_job *job)
{
	uint64_t mp = (uint64_t)job->tp * job->cp;
	uint64_t g = job->gpus_per_node && mp ? job->gpus_per_node / mp : job->dp;

	if (job->dp_shard)
		return job->dp_shard;
	if (job->sharding != MEM_SHARD_FSDP_HYBRID)
		return job->dp;
	if (g == 0)
		g = 1;
	return g < job->dp ? (uint32_t)g : job->dp;
}

/* cp ranks hold the same weights and reduce their gradients together, so
 * they are inside the shard group: Megatron-Core shards the distributed
 * optimizer over get_data_parallel_group(with_context_parallel=True),
 * torchtitan's apply_fsdp shards over the dp_shard_cp mesh, DeepSpeed
 * partitions over its sequence-data-parallel group. */
uint32_t mem_shard_group(const struct mem_job *job)
{
	uint64_t n = (uint64_t)dp_shard(job) * job->cp;

	return n > UINT32_MAX ? 0 : (uint32_t)n;
}

/* Expert params are laid out over pp x edp x ep x etp, the same ranks as the
 * dense pp x dp x cp x tp: edp = dp_shard x cp x tp / (ep x etp), Megatron's
 * expert_data_parallel_size = world / (etp x ep x pp) (parallel_state.py
 * initialize_model_parallel), torchtitan's dp_shard_mod_ep (parallel_dims.py),
 * DeepSpeed's expert data parallel group of dp / ep (etp = tp). */
uint32_t mem_expert_group(const struct mem_job *job)
{
	uint64_t etp = job->etp ? job->etp : job->tp;
	uint64_t m = (uint64_t)mem_shard_group(job) * job->tp, d = (uint64_t)job->ep * etp;

	if (!m || !d || m % d || m / d > UINT32_MAX)
		return 0;
	return (uint32_t)(m / d);
}

static enum mem_status check_job(const struct mem_job *job)
{
	uint64_t sl;

	if (!job->dp || !job->tp || !job->pp || !job->cp || !job->ep || !job->micro_batches)
		return MEM_E_INVALID;
	if (mem_pp_interleaved(job->schedule) && job->pp > 1 && !job->vp)
		return MEM_E_INVALID;
	if (job->frag_factor != 0.0 && !(job->frag_factor >= 1.0 && job->frag_factor < 100.0))
		return MEM_E_INVALID;
	if (!mem_shard_group(job))
		return MEM_E_INVALID;
	if (job->dp % dp_shard(job))
		return MEM_E_HYBRID_GROUP;
	if (mem_pp_split(job, &sl) != MEM_SPLIT_OK)
		return MEM_E_PP_UNEVEN;
	/* schedules.py forward_backward_pipelining_with_interleaving refuses
	 * a group outside [pp, m] and a last group of 1 to pp - 1 micro-batches
	 * (with the default group, pp: m not a multiple of pp) */
	if (mem_pp_interleaved(job->schedule) && mem_chunks_per_stage(job) > 1) {
		uint64_t g = mem_pp_group(job), r = job->micro_batches % g;

		if (job->pp_group && (g < job->pp || g > job->micro_batches || (r && r < job->pp)))
			return MEM_E_PP_GROUP;
		if (r && r < job->pp)
			return MEM_E_PP_MICRO_BATCHES;
	}
	if (mem_pp_dual_rule(job) != MEM_DUAL_OK)
		return MEM_E_PP_DUALPIPE;
	/* transformer_config.py: no CPU offloading with recomputation or pp */
	if (job->offload_first && (job->recompute != MEM_RECOMPUTE_NONE || job->pp > 1))
		return MEM_E_INVALID;
	return MEM_OK;
}

/* ---- 3. pipeline placement (§4.6) ---------------------------------------- */

static enum mem_status seg_push(struct mem_ws *ws, struct mem_stage *st, struct mem_seg s)
{
	if (s.count == 0)
		return MEM_OK;
	if (st->nsegs == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 8;
		struct mem_seg *n = cap < st->cap ? NULL : mem_ws_alloc(ws, cap, sizeof(*n));

		if (!n)
			return MEM_E_NOMEM;
		if (st->nsegs)
			memcpy(n, st->segs, st->nsegs * sizeof(*n));
		mem_ws_release(ws, st->segs);
		st->segs = n;
		st->cap = cap;
	}
	st->segs[st->nsegs++] = s;
	return MEM_OK;
}

/* The end of the run of body repeats from x (global, 0-based; chunk c0
 * starts at c0) that share x's plain flag, at most `end`. */
static uint64_t policy_run(const struct mem_job *job, uint64_t x, uint64_t c0, uint64_t end,
			   bool *plain)
{
	/* Megatron's offload of the first layers works like --recompute-method
	 * block: the first repeats of the chunk differ (check_job: not both) */
	uint64_t n = job->recompute_every, stop = end;
	uint64_t k = job->offload_first ? job->offload_first : job->recompute_first;

	*plain = false;
	if (!mem_has_plain(job))
		return end;
	if (n > 1) {
		/* torchtitan: checkpointed when the 1-based index is a multiple of n */
		*plain = (x + 1) % n != 0;
		stop = *plain ? x + (n - 1 - x % n) : x + 1;
	} else if (k > 0) {
		*plain = x - c0 >= k;
		stop = *plain ? end : c0 + k;
	}
	return stop < end ? stop : end;
}

/* Which model chunk holds body repeat x: advance past chunks that end at or
 * before it (chunks may be empty: an accounted embedding or loss). */
struct chunk_at {
	uint64_t chunk, end, n;
};

static void chunk_seek(const struct mem_job *job, struct chunk_at *at, uint64_t x)
{
	while (at->end <= x && at->chunk + 1 < at->n) {
		at->chunk++;
		at->end += mem_pp_chunk_layers(job, at->chunk);
	}
}

/* Segment s of model chunk c on each stage holding it (mem_pp_chunk_ranks). */
static enum mem_status push_chunk(struct mem_ws *ws, const struct mem_job *job,
				  struct mem_stage *stages, uint64_t c, struct mem_seg s)
{
	uint32_t r[2];
	unsigned n = mem_pp_chunk_ranks(job, c, r);
	enum mem_status st = MEM_OK;

	s.flight = mem_pp_chunk_flight(job, c);
	s.chunk = mem_pp_dual(job->schedule) || !job->pp ? 0 : (uint32_t)(c / job->pp);
	for (unsigned i = 0; i < n && st == MEM_OK; i++)
		st = seg_push(ws, &stages[r[i]], s);
	return st;
}

/* Body repeats [start, end) of block b: cut at chunk boundaries; chunk c
 * lives on stage c mod pp (plain 1F1B/GPipe: vp = 1; DualPipe(V):
 * mem_pp_chunk_ranks); and where a per-layer checkpoint policy switches on
 * or off. */
static enum mem_status place_body(struct mem_ws *ws, const struct mem_job *job,
				  struct mem_stage *stages, struct chunk_at *at, size_t b, uint64_t start, uint64_t end)
{
	for (uint64_t x = start; x < end;) {
		chunk_seek(job, at, x);
		uint64_t c0 = at->end - mem_pp_chunk_layers(job, at->chunk);
		bool plain;
		uint64_t send = policy_run(job, x, c0, at->end < end ? at->end : end, &plain);
		struct mem_seg s = { b, x - start, send - x, x, 0, plain, 0, 0 };
		enum mem_status st = push_chunk(ws, job, stages, at->chunk, s);

		if (st != MEM_OK)
			return st;
		x = send;
	}
	return MEM_OK;
}

static enum mem_status place(struct mem_ws *ws, const struct mem_job *job, struct mem_stage *stages)
{
	uint64_t r = mem_body_repeats(job), u = 0;
	struct chunk_at at = { 0, mem_pp_chunk_layers(job, 0), mem_pp_model_chunks(job) };
	enum mem_status st = MEM_OK;

	for (size_t b = 0; b < job->nblocks && st == MEM_OK; b++) {
		const struct mem_block *blk = &job->blocks[b];

		if (blk->is_body && r) {
			st = place_body(ws, job, stages, &at, b, u, u + blk->repeat);
			u += blk->repeat;
		} else {
			/* pre/post blocks go with the body repeat before them; after
			 * the last one, with the last chunk (where the loss is) */
			uint64_t chunk = u == 0 || r == 0 ? 0 : u == r ? at.n - 1 : at.chunk;
			struct mem_seg s = { b, 0, blk->repeat, u, 0, false, 0, 0 };

			st = push_chunk(ws, job, stages, chunk, s);
		}
	}
	return st;
}

/* Prefix sums per segment, totals and the maxima the walk needs. */
static enum mem_status finish_stage(struct mem_ctx *cx, struct mem_stage *st)
{
	const struct mem_job *job = cx->job;
	struct mem_sums acc = { { 0 } };
	uint32_t v = mem_pp_dual(job->schedule) ? 1 : mem_chunks_per_stage(job);

	st->before = mem_ws_alloc(cx->ws, st->nsegs, sizeof(*st->before));	/* all written */
	if (!st->before)
		return MEM_E_NOMEM;
	st->chunk_total = v > 1 ? mem_ws_calloc(cx->ws, v, sizeof(*st->chunk_total)) : NULL;
	if (v > 1 && !st->chunk_total)
		return MEM_E_NOMEM;
	for (size_t s = 0; s < st->nsegs; s++) {
		struct mem_seg *seg = &st->segs[s];
		const struct mem_block *blk = &job->blocks[seg->block];

		st->before[s] = acc;
		if (v > 1 && seg->chunk < v)
			mem_sums_axpy(&cx->ovf, &st->chunk_total[seg->chunk], &st->chunk_total[seg->chunk],
				      mem_seg_iter(cx, seg), seg->count);
		seg->units_before = st->body_units;
		mem_sums_axpy(&cx->ovf, &acc, &acc, mem_seg_iter(cx, seg), seg->count);
		mem_sums_axpy(&cx->ovf, &st->flight, &st->flight, mem_seg_iter(cx, seg),
			      mem_mul(&cx->ovf, seg->count, seg->flight));
		if (blk->is_body) {
			st->body_units += seg->count;
			if (mem_seg_iter(cx, seg)->v[S_GATH] > st->max_unit_gath) {
				st->max_unit_gath = mem_seg_iter(cx, seg)->v[S_GATH];
				st->max_unit_held = mem_seg_iter(cx, seg)->v[S_HELD];
			}
		}
		for (size_t j = 0; j < blk->nlayers; j++)
			if (mem_seg_costs(cx, seg)[j].step_max > st->step_max)
				st->step_max = mem_seg_costs(cx, seg)[j].step_max;
	}
	st->total = acc;
	return MEM_OK;
}

/* ---- 4/5. walking a stage, figures, explain ------------------------------ */

/* 13476831232 -> "13,476,831,232" (no locale: output must be deterministic). */
static const char *fmt_u64(char buf[32], uint64_t x)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)x), k = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = tmp[i];
	}
	buf[k] = '\0';
	return buf;
}

static const char *sharding_name(enum mem_sharding m)
{
	static const char *const names[] = {
		"no sharding", "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "FSDP full_shard",
		"FSDP shard_grad_op", "FSDP hybrid_shard", "FSDP no_shard",
	};
	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* Chunks in flight for the first micro-batch and for a later one (§4.6): the
 * later one has gradients resident but, when all micro-batches fit in the
 * warm-up, one micro-batch fewer in flight. */
static void in_flight(const struct mem_job *job, uint32_t stage, uint64_t *a, uint64_t *b)
{
	uint64_t v = mem_chunks_per_stage(job);

	*a = mem_pp_chunks_in_flight_group(job->schedule, job->pp, job->vp, mem_pp_group(job), stage,
					   job->micro_batches);
	*b = 0;
	if (job->micro_batches < 2)
		return;
	if (job->pp <= 1)
		*b = 1;
	else if (job->micro_batches > UINT64_MAX / v || job->micro_batches * v > *a)
		*b = *a;
	else
		*b = *a > v ? *a - v : *a;
}

double mem_frag_factor(const struct mem_job *job)
{
	return job->frag_factor != 0.0 ? job->frag_factor : 1.10;
}

static uint64_t reserved_of(bool *ovf, const struct mem_job *job, uint64_t alloc)
{
	double f = mem_frag_factor(job);
	double r = ceil((double)alloc * f);
	uint64_t res, seg = ALLOC_ROUND_LARGE;

	/* §5.3.4: allocated x frag, then whole 2 MiB segment pages */
	if (r >= 18446744073709549568.0) {
		*ovf = true;
		return UINT64_MAX;
	}
	res = (uint64_t)r < alloc ? alloc : (uint64_t)r;
	return mem_mul(ovf, res / seg + (res % seg != 0), seg);
}

/* §5.3.3: the communicators of one rank (mem_comm.c). */
static unsigned communicators(const struct mem_ctx *cx, struct mem_comm_group g[MEM_COMM_MAX_GROUPS])
{
	const struct mem_job *job = cx->job;
	uint64_t replicas = mem_shards_states(job->sharding) ? job->dp / dp_shard(job) : 1;

	/* expert gradients reduce over the expert data parallel group */
	return mem_comm_groups(job, replicas, cx->experts && job->ep > 1 ? cx->expert_n : 0, g);
}

static uint64_t nccl_bytes(struct mem_ctx *cx, uint32_t *ncomms)
{
	struct mem_comm_group g[MEM_COMM_MAX_GROUPS];
	unsigned n = communicators(cx, g);

	if (ncomms)
		*ncomms = n;
	/* the symmetric-memory workspace is cuMem as well: outside the allocator */
	return mem_add(&cx->ovf, mem_add(&cx->ovf, mem_comm_total(cx->job, g, n, &cx->ovf),
					 mem_comm_symm_workspace(cx->job, &cx->ovf)),
		       mem_comm_deepep_bytes(cx->job, &cx->ovf));
}

/* Device memory the caching allocator does not own (§5.3.2-5.3.3). */
static uint64_t outside_bytes(struct mem_ctx *cx)
{
	const struct mem_job *job = cx->job;
	bool *o = &cx->ovf;

	return mem_add(o, mem_add(o, job->cuda_context_bytes, job->cublas_workspace_bytes),
		       nccl_bytes(cx, NULL));
}

/* The replay's batch lengths under data.padding = longest, for explain. */
static const char *shapes_note(const struct mem_job *job, char *buf, size_t size)
{
	if (!job->shape_seq_len || job->shape_min_seq_len >= job->shape_seq_len)
		return "";
	snprintf(buf, size, " over %d steps padded to %llu..%llu tokens", MEM_TRACE_SHAPE_STEPS,
		 (unsigned long long)job->shape_min_seq_len, (unsigned long long)job->shape_seq_len);
	return buf;
}

static void replay_config(const struct mem_job *job, uint64_t limit, struct alloc_config *cfg)
{
	alloc_config_default(cfg);
	if (job->alloc_max_split_bytes)
		cfg->max_split_size = job->alloc_max_split_bytes;
	cfg->roundup_power2_divisions = job->alloc_roundup_divisions;
	cfg->gc_threshold = job->alloc_gc_threshold;
	cfg->expandable_segments = job->alloc_expandable;
	cfg->limit = limit;
}

/* §5.4: peak reserved from replaying the stage's allocation trace, shifted
 * by what the trace's tensors miss of the timeline's peak (what the trace
 * does not model, the folded middle), and capped by what the device leaves
 * the allocator. */
static enum mem_status replay_reserved(struct mem_ctx *cx, const struct mem_stage *st,
				       uint64_t first, uint64_t later, uint64_t outside,
				       struct mem_class *k)
{
	const struct mem_job *job = cx->job;
	struct alloc_config cfg;
	struct alloc_replay r, w;
	uint64_t cap = job->capacity_bytes, res, trace;
	int as;

	replay_config(job, cap > outside ? cap - outside : 0, &cfg);
	as = mem_replay_stage(cx, st, first, later, &cfg, &r, &w);
	if (as == ALLOC_OK && r.oom) {
		k->alloc_oom = true;
		k->alloc_oom_request = r.oom_request;
		k->alloc_oom_what = r.oom_what;
		r = w;	/* the figures of the job as written: no limit */
	}
	if (as != ALLOC_OK)
		return MEM_E_NOMEM;
	/* what the trace's tensors lack of the timeline's (the replay's own
	 * allocated peak also counts unsplit block rests: not comparable); the
	 * cuBLAS workspaces are the trace's only, alive at its peak (made by
	 * the first step, every later one repeats it), and M17's outside it */
	trace = mem_sub(r.step_requested, mem_trace_blas_bytes(job));
	res = mem_add(&cx->ovf, r.peak_reserved, mem_sub(k->peak_allocated, trace));
	k->peak_reserved = mem_mul(&cx->ovf, res / ALLOC_ROUND_LARGE + (res % ALLOC_ROUND_LARGE != 0),
				   ALLOC_ROUND_LARGE);
	if (k->peak_reserved < k->peak_allocated)
		k->peak_reserved = k->peak_allocated;
	k->alloc_retries = r.retries;
	k->replay_setup_reserved = r.setup_reserved;
	k->replay_allocated = trace;
	k->replayed = true;
	return MEM_OK;
}

static void figures(struct mem_ctx *cx, const struct mem_walk_out *w, struct mem_class *k)
{
	const struct mem_job *job = cx->job;

	k->peak_allocated = w->peak;
	k->overhead_context = job->cuda_context_bytes;
	/* replayed: the workspaces are blocks of the pool, in peak reserved */
	k->overhead_cublas = k->replayed ? 0 : job->cublas_workspace_bytes;
	k->overhead_nccl = nccl_bytes(cx, &k->ncomms);
	k->engine_bytes = job->engine_bytes;
	memcpy(k->at_peak, w->at.c, sizeof(k->at_peak));
	memcpy(k->buffers_at_peak, w->at.b, sizeof(k->buffers_at_peak));
	memcpy(k->phase_peak, w->phase_peak, sizeof(k->phase_peak));
	if (job->phase_series)	/* else both are zero */
		memcpy(k->series, w->series, sizeof(k->series));
	k->peak = w->where;
	mem_class_totals(job, k, &cx->ovf);
}

void mem_class_totals(const struct mem_job *job, struct mem_class *k, bool *o)
{
	if (!k->replayed)
		k->peak_reserved = reserved_of(o, job, k->peak_allocated);
	k->overhead_frag = k->peak_reserved - k->peak_allocated;
	k->device_total = mem_add(o, mem_add(o, k->peak_reserved, k->overhead_context),
				  mem_add(o, k->overhead_cublas, k->overhead_nccl));
	k->device_total = mem_add(o, k->device_total, k->paged_bytes);
	k->device_total = mem_add(o, k->device_total, k->engine_bytes);
	/* paged states are their own figure, not overhead */
	k->at_peak[MEM_C_OVERHEAD] = k->device_total - k->paged_bytes - k->engine_bytes - k->peak_allocated;
	k->capacity = job->capacity_bytes;
	/* Paged states are cudaMallocManaged pages (bitsandbytes get_paged):
	 * when the device is full the driver evicts them to the host rather
	 * than fail a cudaMalloc, so they can slow a step but not end it. */
	k->fits = !k->capacity || k->device_total - k->paged_bytes <= k->capacity;
	k->paged_evicted = k->fits && k->capacity && k->device_total > k->capacity ?
				   k->device_total - k->capacity : 0;
	k->fits_headroom = !k->capacity ||
			   (double)k->device_total <= (double)k->capacity * (1.0 - job->headroom);
	k->headroom = k->capacity ? ((double)k->capacity - (double)k->device_total) /
					    (double)k->capacity : 0.0;
}

/* §7, ZeRO-Infinity's pinned staging buffers (deepspeed/runtime/zero/
 * offload_config.py defaults): parameters buffer_count 5 x buffer_size 1e8
 * 16-bit elements; the optimizer swapper buffer_count 4 fp32 buffers of the
 * largest sub-group (sub_group_size 1e9, at most this rank's partition). */
static uint64_t nvme_staging(struct mem_ctx *cx, const struct mem_stage *st)
{
	const struct mem_job *job = cx->job;
	uint64_t n = st->total.v[S_NUMEL_TRAIN], b = 0;

	if (job->offload_params_nvme && mem_shards_weights(job->sharding))
		b = 5ull * 100000000ull * 2;
	if (job->offload_optimizer && job->offload_optimizer_nvme) {
		n = mem_shards_states(job->sharding) ? mem_shard_bytes(n, cx->shard_n) : n;
		b = mem_add(&cx->ovf, b, mem_mul(&cx->ovf, 4 * 4, n < 1000000000ull ? n : 1000000000ull));
	}
	return b;
}

static void persistent(struct mem_ctx *cx, const struct mem_stage *st, struct mem_class *k)
{
	const struct mem_job *job = cx->job;

	k->persistent[MEM_C_WEIGHTS] = st->total.v[S_W];
	k->persistent[MEM_C_GRADIENTS] = st->total.v[S_GFIN];
	k->persistent[MEM_C_OPTIMIZER] = st->total.v[S_S];
	k->persistent[MEM_C_BUFFERS] = st->total.v[S_BUCKET];
	k->nvme_bytes = st->total.v[S_NVME];
	k->host_bytes = mem_add(&cx->ovf, st->total.v[S_HOST], nvme_staging(cx, st));
	/* offloaded activations of every micro-batch in flight, pinned host RAM */
	k->host_bytes = mem_add(&cx->ovf, k->host_bytes, mem_add(&cx->ovf, st->total.v[S_STORED_OFF],
				mem_pp_extra(&cx->ovf, job, st, k->chunks_in_flight, S_STORED_OFF, S__COUNT)));
	k->stored_act = st->total.v[S_STORED_ACT];
	k->stored_logits = st->total.v[S_STORED_LOG];
	k->stored_act_in_flight = mem_add(&cx->ovf, k->stored_act, mem_pp_extra(&cx->ovf, job, st,
					  k->chunks_in_flight, S_STORED_ACT, S__COUNT));
	/* the logits are the last chunk's only (mem_extra_logits_in_flight) */
	k->stored_logits_in_flight = mem_add(&cx->ovf, k->stored_logits, mem_pp_extra(&cx->ovf, job, st,
					     k->chunks_in_flight, S_STORED_LOG, S__COUNT));
	if (job->sharding == MEM_SHARD_ZERO3)
		k->persistent[MEM_C_BUFFERS] = mem_add(&cx->ovf, k->persistent[MEM_C_BUFFERS],
						       mem_round(job, job->zero_reduce_bucket_bytes));
	k->persistent[MEM_C_BUFFERS] = mem_add(&cx->ovf, k->persistent[MEM_C_BUFFERS],
					       mem_comm_sp_buffer(job, &cx->ovf));
	/* every receive buffer, none of them counted as in flight */
	k->persistent[MEM_C_BUFFERS] = mem_add(&cx->ovf, k->persistent[MEM_C_BUFFERS],
					       mem_pp_recv_bytes(&cx->ovf, job, st->index, 0));
}

/* The group is named by size where it is not plain dp (cp inside it,
 * replicas, experts over their own group). */
static const char *shard_note(const struct mem_ctx *cx, bool sharded, char buf[80])
{
	if (!sharded)
		return "";
	if (cx->shard_n == cx->job->dp && !cx->experts)
		return ", sharded per tensor over the DP group (§3.1, §3.3),";
	if (!cx->experts)
		snprintf(buf, 80, ", sharded per tensor over %u ranks (§3.1),", cx->shard_n);
	else
		snprintf(buf, 80, ", sharded per tensor over %u ranks, experts over %u (§3.1),",
			 cx->shard_n, cx->expert_n);
	return buf;
}

static void explain_states(const struct mem_ctx *cx, const struct mem_stage *st,
			   struct mem_class *k)
{
	const struct mem_job *job = cx->job;
	enum mem_sharding m = job->sharding;
	char a[32], b[32], c[32], d[32], note[80];

	snprintf(k->explain[MEM_C_WEIGHTS], MEM_EXPLAIN_LEN,
		 "weights = %s B for %s params%s%s = %s B (%s)", fmt_u64(a, st->total.v[S_RAW_W]),
		 fmt_u64(b, st->total.v[S_NUMEL]), shard_note(cx, mem_shards_weights(m), note),
		 mem_shards_weights(m) && job->offload_params ? ", offloaded to host (§7)" : "",
		 fmt_u64(c, st->total.v[S_W]), sharding_name(m));
	snprintf(k->explain[MEM_C_GRADIENTS], MEM_EXPLAIN_LEN,
		 "gradients = %s B unsharded%s -> %s B resident after backward; %s B at the peak%s",
		 fmt_u64(a, st->total.v[S_RAW_G]), shard_note(cx, mem_shards_grads(m), note),
		 fmt_u64(b, st->total.v[S_GFIN]), fmt_u64(c, k->at_peak[MEM_C_GRADIENTS]),
		 k->peak.accumulating ? " (accumulated, micro-batch >= 2)" : "");
	snprintf(k->explain[MEM_C_OPTIMIZER], MEM_EXPLAIN_LEN,
		 "optimizer = %s B states + master%s%s = %s B (%s, §2.2, §3.1)",
		 fmt_u64(a, st->total.v[S_RAW_S]), shard_note(cx, mem_shards_states(m), note),
		 job->offload_optimizer ? ", offloaded to host (§7)" : "",
		 fmt_u64(d, st->total.v[S_S]), sharding_name(m));
}

static void explain_rest(const struct mem_ctx *cx, const struct mem_stage *st,
			 struct mem_class *k)
{
	static const char *const rc[] = { "none", "selective", "full", "selective_op" };
	const struct mem_job *job = cx->job;
	const uint64_t *bp = k->buffers_at_peak;
	char a[32], b[32], c[32], d[32], e[32], f[32], sh[80];

	snprintf(k->explain[MEM_C_ACTIVATIONS], MEM_EXPLAIN_LEN,
		 "activations = %s B at the peak; %s B stored per micro-batch, %llu chunk(s) in "
		 "flight (§4.6), recompute %s (§4.5)", fmt_u64(a, k->at_peak[MEM_C_ACTIVATIONS]),
		 fmt_u64(b, st->total.v[S_STORED_ACT]), (unsigned long long)k->chunks_in_flight,
		 rc[job->recompute]);
	snprintf(k->explain[MEM_C_LOGITS], MEM_EXPLAIN_LEN,
		 "logits+loss = %s B at the peak; %s B saved per micro-batch + loss temporaries "
		 "(§4.4)", fmt_u64(a, k->at_peak[MEM_C_LOGITS]), fmt_u64(b, st->total.v[S_STORED_LOG]));
	snprintf(k->explain[MEM_C_BUFFERS], MEM_EXPLAIN_LEN,
		 "buffers = %s B: gathered %s + unsharded grads %s + buckets %s + casts %s + step "
		 "temps %s (§3.2-3.4, §5.2)", fmt_u64(a, k->at_peak[MEM_C_BUFFERS]),
		 fmt_u64(b, bp[MEM_B_GATHERED]), fmt_u64(c, bp[MEM_B_UNSHARDED_GRADS]),
		 fmt_u64(d, bp[MEM_B_BUCKETS]), fmt_u64(e, bp[MEM_B_CASTS]),
		 fmt_u64(f, bp[MEM_B_STEP_TEMPS]));
	if (k->replayed)
		snprintf(k->explain[MEM_C_OVERHEAD], MEM_EXPLAIN_LEN,
			 "overhead = context %s + NCCL %s (%u comms) + allocator cache %s "
			 "(replayed%s, %llu cache flush(es), %d cuBLAS workspaces in it, §5.4) = %s B "
			 "(§5.3)",
			 fmt_u64(a, k->overhead_context),
			 fmt_u64(c, k->overhead_nccl), k->ncomms, fmt_u64(d, k->overhead_frag),
			 shapes_note(job, sh, sizeof(sh)), (unsigned long long)k->alloc_retries,
			 job->cublas_workspace_bytes ? MEM_TRACE_BLAS_HANDLES : 0, fmt_u64(e, k->at_peak[MEM_C_OVERHEAD]));
	else
		snprintf(k->explain[MEM_C_OVERHEAD], MEM_EXPLAIN_LEN,
			 "overhead = context %s + cuBLAS %s + NCCL %s (%u comms) + fragmentation %s (x%.2f, 2 MiB "
			 "segments) = %s B (§5.3)", fmt_u64(a, k->overhead_context),
			 fmt_u64(b, k->overhead_cublas), fmt_u64(c, k->overhead_nccl), k->ncomms,
			 fmt_u64(d, k->overhead_frag), job->frag_factor != 0.0 ? job->frag_factor : 1.10,
			 fmt_u64(e, k->at_peak[MEM_C_OVERHEAD]));
}

static void explain_peak(struct mem_class *k)
{
	const struct mem_where *p = &k->peak;
	char a[32], unit[48] = "";

	if (p->unit)
		snprintf(unit, sizeof(unit), ", layer %llu", (unsigned long long)p->unit);
	snprintf(k->explain_peak, MEM_EXPLAIN_LEN, "peak allocated %s B in %s%s%s ('%s'%s)%s",
		 fmt_u64(a, k->peak_allocated), mem_phase_name(p->phase),
		 p->phase == MEM_PHASE_LOSS ? (p->backward_pass ? " backward" : " forward") : "",
		 unit, p->layer_name ? p->layer_name : "?", p->recompute ? ", recomputing" : "",
		 p->accumulating ? ", micro-batch >= 2" : "");
}

static enum mem_status analyze_stage(struct mem_ctx *cx, struct mem_stage *st, uint32_t i,
				     struct mem_class *k)
{
	const struct mem_job *job = cx->job;
	struct mem_walk_out w;
	uint64_t a, b;
	enum mem_status s = finish_stage(cx, st);

	if (s != MEM_OK)
		return s;
	memset(&w, 0, sizeof(w));
	memset(k, 0, sizeof(*k));
	in_flight(job, i, &a, &b);
	st->index = i;
	mem_walk_stage(cx, st, a, b, &w);
	k->stage = i;
	k->nstages = 1;
	k->ranks = mem_mul(&cx->ovf, mem_mul(&cx->ovf, job->dp, job->tp), job->cp);
	k->chunks_in_flight = a;
	k->body_layers = st->body_units;
	k->paged_bytes = st->total.v[S_PAGED];
	if (job->alloc_replay) {
		k->peak_allocated = w.peak;
		/* not the paged states: the driver evicts them for the allocator;
		 * not cuBLAS's workspaces: the trace has them */
		uint64_t outside = mem_add(&cx->ovf, mem_sub(outside_bytes(cx), job->cublas_workspace_bytes),
					   job->engine_bytes);

		s = replay_reserved(cx, st, a, b, outside, k);
		if (s != MEM_OK)
			return s;
	}
	figures(cx, &w, k);
	persistent(cx, st, k);
	if (cx->ws && cx->ws->rec)
		cx->ws->rec->stage(cx->ws->rec, k);
	if (job->no_explain)
		return MEM_OK;
	explain_states(cx, st, k);
	explain_rest(cx, st, k);
	explain_peak(k);
	return MEM_OK;
}

/* Consecutive stages with identical figures form one class (ranks add up);
 * the report names a class by its first and last stage, so a class is
 * always a contiguous run of stages. */
static bool same_class(const struct mem_class *x, const struct mem_class *y)
{
	return x->peak_allocated == y->peak_allocated && x->device_total == y->device_total &&
	       x->peak.phase == y->peak.phase && x->chunks_in_flight == y->chunks_in_flight &&
	       x->body_layers == y->body_layers &&
	       !memcmp(x->at_peak, y->at_peak, sizeof(x->at_peak)) &&
	       !memcmp(x->persistent, y->persistent, sizeof(x->persistent)) &&
	       x->host_bytes == y->host_bytes && x->nvme_bytes == y->nvme_bytes &&
	       x->paged_bytes == y->paged_bytes;
}

void mem_class_add(struct mem_result *res, const struct mem_class *k, bool *ovf)
{
	struct mem_class *last = res->nclasses ? &res->classes[res->nclasses - 1] : NULL;

	if (last && last->stage + last->nstages == k->stage && same_class(last, k)) {
		last->nstages++;
		last->ranks = mem_add(ovf, last->ranks, k->ranks);
		return;
	}
	if (k != &res->classes[res->nclasses])
		res->classes[res->nclasses] = *k;
	res->nclasses++;
}

static void count_params(struct mem_ctx *cx, struct mem_result *res)
{
	for (size_t b = 0; b < cx->job->nblocks; b++) {
		uint64_t r = cx->job->blocks[b].repeat;

		res->params_total = mem_add(&cx->ovf, res->params_total,
					    mem_mul(&cx->ovf, cx->iter[b].v[S_NUMEL], r));
		res->params_trainable = mem_add(&cx->ovf, res->params_trainable,
						mem_mul(&cx->ovf, cx->iter[b].v[S_NUMEL_TRAIN], r));
	}
}

static enum mem_status run_stages(struct mem_ctx *cx, struct mem_stage *stages,
				  struct mem_result *res)
{
	enum mem_status s = place(cx->ws, cx->job, stages);

	for (uint32_t i = 0; i < cx->job->pp && s == MEM_OK; i++) {
		/* analysed in the next free slot (a class is 3 KiB: no copy) */
		struct mem_class *k = &res->classes[res->nclasses];

		s = analyze_stage(cx, &stages[i], i, k);
		if (s == MEM_OK)
			mem_class_add(res, k, &cx->ovf);
	}
	return s;
}

static enum mem_status analyze(const struct mem_job *job, struct mem_ws *ws, struct mem_result *out)
{
	struct mem_ctx cx = { 0 };
	struct mem_stage *stages = NULL;
	enum mem_status s;

	memset(out, 0, sizeof(*out));
	s = check_job(job);
	if (s != MEM_OK)
		return s;
	cx.ws = ws;
	cx.job = job;
	cx.shard_n = mem_shard_group(job);
	cx.expert_n = mem_expert_group(job);
	cx.experts = mem_has_experts(job);
	if (cx.experts && !cx.expert_n)
		return MEM_E_EXPERT_GROUP;
	s = mem_build_costs(&cx);
	if (s == MEM_OK) {
		stages = mem_ws_calloc(ws, job->pp, sizeof(*stages));
		/* analyze_stage clears each class it writes */
		out->classes = mem_ws_alloc(ws, job->pp, sizeof(*out->classes));
		s = (stages && out->classes) ? run_stages(&cx, stages, out) : MEM_E_NOMEM;
	}
	if (s == MEM_OK)
		count_params(&cx, out);
	if (s == MEM_OK && cx.ovf)
		s = MEM_E_OVERFLOW;
	for (uint32_t i = 0; stages && i < job->pp; i++) {
		mem_ws_release(ws, stages[i].segs);
		mem_ws_release(ws, stages[i].before);
		mem_ws_release(ws, stages[i].chunk_total);
	}
	mem_ws_release(ws, stages);
	mem_free_costs(&cx);
	if (s != MEM_OK && !ws)
		mem_result_free(out);
	else if (s != MEM_OK)
		memset(out, 0, sizeof(*out));
	return s;
}

enum mem_status mem_analyze(const struct mem_job *job, struct mem_result *out)
{
	return analyze(job, NULL, out);
}

enum mem_status mem_analyze_ws(const struct mem_job *job, struct mem_ws *ws, struct mem_result *out)
{
	mem_ws_reset(ws);
	return analyze(job, ws, out);
}

void mem_result_free(struct mem_result *res)
{
	free(res->classes);
	memset(res, 0, sizeof(*res));
}
