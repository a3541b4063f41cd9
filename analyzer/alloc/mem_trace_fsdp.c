/* SPDX-License-Identifier: MIT */
/*
 * mem_trace_fsdp.c - the parts of a stage's allocation trace that ZeRO-3
 * and FSDP add (memory-model.md §5.4 "Trace"): the all-gathers, FSDP1's
 * recorded frees and rate limiter, the prefetched unit, the units held
 * from forward to backward, and the gradients' reduce-scatter (per unit,
 * the root at the end of backward, FSDP1's flat gradients and no_sync()).
 */
#include "analyzer/alloc/mem_trace.h"
#include "analyzer/memory/mem_fsdp1.h"

#include <string.h>

/* FSDP1 frees a unit's gathered flat parameter after record_stream() on the
 * compute stream (_flat_param.py FlatParamHandle._free_unsharded_flat_param),
 * so the all-gather stream gets the block back only once the compute stream
 * is past the unit.  The CPU learns it when the rate limiter
 * (limit_all_gathers; _runtime_utils.py _unshard: _free_event_queue
 * dequeue_if_needed, two events in flight) waits on the oldest free event
 * before an all-gather; the trace assumes the GPU no further ahead. */
static bool records(const struct tr *r)
{
	return r->job->fsdp1 && shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3;
}

/* SHARD_GRAD_OP keeps each unit gathered from its forward to its backward
 * (M8: no reshard after forward), and FSDP1's no_sync() past the backward
 * into the next micro-batch (_should_free_in_backward: only FULL_SHARD and
 * HYBRID_SHARD free while _sync_gradients is False). */
bool mtr_holds(const struct tr *r)
{
	return r->job->sharding == MEM_SHARD_FSDP_GRAD_OP || r->job->fsdp_reshard_to == 1;
}

/* FSDP2 without gradient sync before the last micro-batch (mem_fsdp.c):
 * set_requires_gradient_sync(False), and every micro-batch of a stage
 * under torch.distributed.pipelining (stage.py backward_maybe_with_nosync),
 * which also turns reshard after backward off (mtr_keeps_gathered). */
bool mtr_no_sync2(const struct tr *r)
{
	return r->job->fsdp2 && r->job->fsdp_no_sync && shards(r->job->sharding) &&
	       r->job->sharding != MEM_SHARD_ZERO3 && !records(r);
}

bool mtr_keeps_gathered(const struct tr *r)
{
	return mtr_no_sync2(r) && r->job->fsdp_keep_after_backward;
}

static void unshard_wait(struct tr *r)
{
	if (!records(r) || r->agq.n < 2)
		return;
	alloc_trace_complete(r->t, r->agq.v[0]);
	memmove(r->agq.v, r->agq.v + 1, (r->agq.n - 1) * sizeof(*r->agq.v));
	r->agq.n--;
}

uint32_t mtr_gather(struct tr *r, uint64_t n)
{
	uint32_t h = NO_ID, g;

	if (n)
		unshard_wait(r);
	/* FSDP1 CPU offload: FlatParamHandle.pre_unshard copies the host shard
	 * to the GPU (flat_param_to(self.device)) under _runtime_utils.py
	 * _unshard's `stream(pre_unshard_stream)`, a stream of its own
	 * (_init_streams), so the copy's blocks are that stream's pool; the
	 * all-gather's input, dropped once the gathered view replaces it */
	if (n && r->job->fsdp1 && r->job->offload_params)
		h = put(r, mem_shard_bytes(n, r->cx->shard_n), STREAM_PRE_UNSHARD);
	g = put(r, n, STREAM_COMM);
	drop(r, &h);
	return g;
}

/* The GPU has caught up: every recorded free completes.  The trace takes
 * the end of each micro-batch for it (a loop reads its loss on the host
 * once per micro-batch, as torchtune's does for its progress bar). */
void mtr_caught_up(struct tr *r)
{
	for (size_t i = 0; i < r->agq.n; i++)
		alloc_trace_complete(r->t, r->agq.v[i]);
	r->agq.n = 0;
}

/* The gathered bytes of the first body unit after segment s in this
 * pass, 0 if none follows. */
static uint64_t next_body(const struct tr *r, size_t s, bool bwd)
{
	for (size_t i = s; bwd ? i-- > 0 : ++i < r->st->nsegs;) {
		const struct mem_seg *o = &r->st->segs[i];

		if (r->job->blocks[o->block].is_body && o->count)
			return mem_seg_iter(r->cx, o)->v[S_GATH];
	}
	return 0;
}

/* The gathered bytes of the body unit after (s, k) in this pass, 0 if
 * none follows among the kept repeats (the folded middle gathers nothing). */
static uint64_t next_unit(const struct tr *r, size_t s, uint64_t k, bool bwd)
{
	const struct mem_seg *seg = &r->st->segs[s];

	if (bwd ? k > 0 : k + 1 < kept(seg->count))
		return mem_seg_iter(r->cx, seg)->v[S_GATH];
	return next_body(r, s, bwd);
}

/* FSDP gathers the next unit while the running one computes (M8): FSDP2's
 * all-gather stream runs ahead of the compute in forward, and in backward
 * FSDPParamGroup.pre_backward -> _backward_prefetch unshards the previous
 * unit of the post-forward order (torch/distributed/fsdp/_fully_shard/
 * _fsdp_param_group.py); FSDP1 as its prefetch arguments say. */
static bool prefetches(const struct tr *r, bool bwd)
{
	return shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3 &&
	       !(bwd && mtr_holds(r)) && !(!bwd && mtr_keeps_gathered(r) && r->have_grads) &&
	       mem_fsdp1_prefetch(r->job, bwd, 1);
}

/* The bytes gathered ahead for the next unit of `next` bytes: FSDP's whole
 * unit (prefetches), ZeRO-3's up to its prefetch bucket (DeepSpeed's
 * PartitionedParameterCoordinator fetches the next parameters while the
 * current module runs, up to stage3_prefetch_bucket_size: the timeline's
 * mem_timeline.c gathered). */
static uint64_t ahead(const struct tr *r, uint64_t next, bool bwd)
{
	if (r->job->sharding == MEM_SHARD_ZERO3)
		return next < r->job->zero_prefetch_bytes ? next : r->job->zero_prefetch_bytes;
	return prefetches(r, bwd) ? next : 0;
}

/* The post-forward copy of the body unit after (s, k) in this pass (its
 * first layer's instance), NULL if none follows among the kept repeats. */
static uint32_t *next_post(struct tr *r, size_t s, uint64_t k, bool bwd)
{
	if (bwd ? k > 0 : k + 1 < kept(r->st->segs[s].count))
		return &inst_of(r, s, bwd ? k - 1 : k + 1, 0)->post;
	for (size_t i = s; bwd ? i-- > 0 : ++i < r->st->nsegs;) {
		const struct mem_seg *o = &r->st->segs[i];

		if (r->job->blocks[o->block].is_body && o->count && r->job->blocks[o->block].nlayers)
			return &inst_of(r, i, bwd ? kept(o->count) - 1 : 0, 0)->post;
	}
	return NULL;
}

/* reshard_after_forward = N: a unit gathered again in backward gives up
 * the post-forward copy it is all-gathered from (mem_fsdp.c). */
static void drop_post(struct tr *r, uint32_t *post)
{
	if (post)
		drop(r, post);
}

/* A body unit's all-gather, or the one its predecessor prefetched; then,
 * as FSDP1 does with forward_prefetch / BACKWARD_PRE (_runtime_utils.py
 * _pre_forward_unshard, _pre_backward_hook -> _prefetch_handle), the next
 * unit's, through the same rate limiter (mem_fsdp1_prefetch). */
uint32_t mtr_unit_gather(struct tr *r, size_t s, uint64_t k, bool bwd)
{
	uint32_t g = r->pre;
	uint64_t next = ahead(r, next_unit(r, s, k, bwd), bwd);
	uint64_t full = mem_seg_iter(r->cx, &r->st->segs[s])->v[S_GATH];

	if (g == NO_ID)
		g = mtr_gather(r, full);
	else	/* ZeRO-3: what its prefetch bucket left of the unit */
		r->rest = mtr_gather(r, mem_sub(full, r->pre_bytes));
	if (bwd)
		drop_post(r, &inst_of(r, s, k, 0)->post);
	r->pre = NO_ID;
	if (next) {
		r->pre = mtr_gather(r, next);
		r->pre_bytes = next;
		if (bwd)
			drop_post(r, next_post(r, s, k, bwd));
	}
	return g;
}

/* The root's layers before the body in forward, after it in backward,
 * run while the first body unit of the pass is gathered ahead. */
void mtr_root_prefetch(struct tr *r, size_t s, bool bwd)
{
	uint64_t next = ahead(r, next_body(r, s, bwd), bwd);

	if (r->pre == NO_ID && next) {
		r->pre = mtr_gather(r, next);
		r->pre_bytes = next;
		if (bwd)
			drop_post(r, next_post(r, s, 0, bwd));
	}
}

void mtr_reshard(struct tr *r, uint32_t *g)
{
	drop(r, &r->rest);
	if (!records(r) || *g == NO_ID) {
		drop(r, g);
		return;
	}
	alloc_trace_release_recorded(r->t, *g);
	mtr_idl_push(r, &r->agq, *g);
	*g = NO_ID;
}

/* FSDP1's modules compute with views of the unit's FlatParameter, so
 * autograd makes a gradient per view and, once the unit's last view has
 * one, concatenates them into the flat gradient (split_with_sizes_backward:
 * at::cat), beside them (mem_fsdp1.c mem_fsdp1_view_grads): made with the
 * gradients of the unit's first layer, the last in backward. */
void mtr_flat_grad(struct tr *r, uint64_t cat)
{
	if (cat && records(r))
		r->cat = put(r, cat, STREAM_COMPUTE);
}

/* FSDP1 under no_sync() (mem_fsdp1_accumulates_unsharded): a micro-batch
 * before the last keeps each unit's flat gradient as its FlatParameter's
 * .grad instead of reduce-scattering it (_post_backward_hook returns
 * before _reduce_grad while _sync_gradients is False), a later one adds
 * its own to it in place, and the last reduce-scatters every unit.  The
 * trace's first micro-batch keeps (acc_mode 1), its second adds (2), then
 * syncs (sync_unsharded). */
bool mtr_keeps_unsharded(const struct tr *r)
{
	return r->job->micro_batches >= 2 && records(r) &&
	       mem_fsdp1_accumulates_unsharded(r->job, true);
}

void mtr_keep_or_add(struct tr *r, uint32_t *flat)
{
	if (r->acc_mode == 1)
		mtr_idl_push(r, &r->acc, *flat);
	else
		drop(r, flat);
	*flat = NO_ID;
}

/* FSDP2 without sync: the unit's post_backward turns its gradients into
 * unsharded_accumulated_grad in reduce_dtype (_fsdp_param.py
 * to_accumulated_grad_if_needed), the first micro-batch's kept (acc_mode
 * 1), a later one's added to it (accumulate_unsharded_grad_if_needed) and
 * freed; s == SIZE_MAX: the root's layers. */
static void accumulate2(struct tr *r, size_t s, uint64_t k, uint64_t acc)
{
	for (size_t i = s == SIZE_MAX ? 0 : s; i < (s == SIZE_MAX ? r->st->nsegs : s + 1); i++) {
		const struct mem_seg *seg = &r->st->segs[i];
		bool body = r->job->blocks[seg->block].is_body;

		for (uint64_t q = 0; q < kept(seg->count); q++)
			for (size_t j = 0; (s != SIZE_MAX ? q == k : !body) && j < r->job->blocks[seg->block].nlayers; j++)
				drop(r, &inst_of(r, i, q, j)->unsh);
	}
	if (r->acc_mode == 1 && !mtr_chunked(r))
		mtr_idl_push(r, &r->acc, put(r, acc, STREAM_COMPUTE));
}

/* Whether FSDP2's unit (s) has a reduce_dtype copy in its layers' gradients
 * (gather_grad_bytes = param_dtype + reduce_dtype, mem_cost.gred): the
 * timeline counts the reduce_scatter_input there (its M9 rule, mem_fsdp.c),
 * so the layers' tensors stand for it until the output exists. */
static bool unit_gred(struct tr *r, size_t s)
{
	const struct mem_seg *seg = &r->st->segs[s];
	const struct mem_cost *c = mem_seg_costs(r->cx, seg);

	for (size_t j = 0; r->job->fsdp2 && j < r->job->blocks[seg->block].nlayers; j++)
		if (c[j].gred)
			return true;
	return false;
}

static void drop_unsh(struct tr *r, size_t s, uint64_t k)
{
	for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
		drop(r, &inst_of(r, s, k, j)->unsh);
}

/* The unit's unsharded gradients become its shard.  FSDP2 (foreach_reduce
 * in torch/distributed/_composable/fsdp/_fsdp_collectives.py) copies them
 * into a reduce-scatter input and allocates the output on the
 * reduce-scatter stream, and the sharded gradients are views of that
 * output (accumulated into the existing ones, then freed, from the second
 * micro-batch on); ZeRO-3 reduces into its resident buckets. */
void mtr_reduce_scatter(struct tr *r, size_t s, uint64_t k)
{
	const struct mem_sums *it = mem_seg_iter(r->cx, &r->st->segs[s]);
	bool fsdp = r->job->sharding != MEM_SHARD_ZERO3;
	bool own = fsdp && r->cat == NO_ID && unit_gred(r, s);
	uint32_t in, out;

	if (mtr_no_sync2(r)) {
		accumulate2(r, s, k, it->v[S_GACC]);
		return;
	}
	/* FSDP1 reduce-scatters from the flat gradient itself (_reduce_grad) */
	in = r->cat != NO_ID ? r->cat : fsdp && !own ? put(r, it->v[S_GUNSH], STREAM_RS) : NO_ID;
	r->cat = NO_ID;
	if (!own)
		drop_unsh(r, s, k);
	if (r->acc_mode) {
		drop_unsh(r, s, k);
		mtr_keep_or_add(r, &in);
		return;
	}
	if (r->job->optimizer_in_backward) {
		drop_unsh(r, s, k);
		drop(r, &in);
		return;
	}
	out = produces(r) || fsdp ? put(r, it->v[S_GFIN], fsdp ? STREAM_RS : STREAM_COMPUTE) : NO_ID;
	drop_unsh(r, s, k);
	drop(r, &in);
	if (produces(r))
		mtr_idl_push(r, &r->grads, out);
	else
		drop(r, &out);
}

/* FSDP2's split root (fsdp2 { root_unit = "split" }: torchtitan's
 * apply_fsdp_to_decoder wraps tok_embeddings and [norm, lm_head] as units
 * of their own, mem_fsdp.c root_gathered): the head (the non-body layers
 * before the body) is whole while it runs, keeps its post-forward copy
 * between, and is gathered again for its backward; the tail (those after
 * the body) is gathered for its forward and kept to the end of its
 * backward, whose post_backward reshards it (unless reshard after
 * backward is off) and reduce-scatters its gradients then. */
bool mtr_split(const struct tr *r)
{
	return r->job->fsdp2 && r->job->fsdp_split_root && shards(r->job->sharding) &&
	       r->job->sharding != MEM_SHARD_ZERO3 && !records(r);
}

/* Field f of the tail's layers (after the stage's last body segment). */
static uint64_t tail_sum(const struct tr *r, enum mem_sum_field f)
{
	bool *o = &r->cx->ovf;
	uint64_t sum = 0;
	bool body = false;

	for (size_t i = 0; i < r->st->nsegs; i++) {
		const struct mem_seg *seg = &r->st->segs[i];

		if (r->job->blocks[seg->block].is_body)
			body = true, sum = 0;
		else if (body)
			sum = mem_add(o, sum, mem_mul(o, mem_seg_iter(r->cx, seg)->v[f], seg->count));
	}
	return sum;
}

/* The root's part the trace gathers as one unit: all of it, or the head. */
uint64_t mtr_root_bytes(const struct tr *r)
{
	const struct mem_sums *T = &r->st->total;

	return mtr_split(r) ? mem_sub(T->v[S_GATH_NB], tail_sum(r, S_GATH)) : T->v[S_GATH_NB];
}

/* Whether segment s is the first body one (first) or the last (!first). */
static bool body_edge(const struct tr *r, size_t s, bool first)
{
	if (!r->job->blocks[r->st->segs[s].block].is_body)
		return false;
	for (size_t i = s; first ? i-- > 0 : ++i < r->st->nsegs;)
		if (r->job->blocks[r->st->segs[i].block].is_body)
			return false;
	return true;
}

static void tail_reduce(struct tr *r)
{
	uint32_t out;
	size_t last = 0;

	for (size_t i = 0; i < r->st->nsegs; i++)
		if (r->job->blocks[r->st->segs[i].block].is_body)
			last = i;
	for (size_t i = last + 1; i < r->st->nsegs; i++)
		for (uint64_t k = 0; k < kept(r->st->segs[i].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[i].block].nlayers; j++)
				drop(r, &inst_of(r, i, k, j)->unsh);
	if (mtr_no_sync2(r)) {
		if (r->acc_mode == 1 && !mtr_chunked(r))
			mtr_idl_push(r, &r->acc, put(r, tail_sum(r, S_GACC), STREAM_COMPUTE));
		return;
	}
	out = put(r, tail_sum(r, S_GFIN), STREAM_RS);
	if (produces(r))
		mtr_idl_push(r, &r->grads, out);
	else
		drop(r, &out);
}

/* Segment s begins in this pass: the split root's units change there. */
void mtr_split_at(struct tr *r, size_t s, bool bwd, uint32_t *root)
{
	const struct mem_seg *seg = &r->st->segs[s];
	bool body = r->job->blocks[seg->block].is_body;
	uint64_t head = mtr_root_bytes(r), n = r->job->fsdp_reshard_to;

	if (!mtr_split(r))
		return;
	if (!bwd && body && body_edge(r, s, true) && n != 1) {
		/* the head's post-forward copy (mem_fsdp.c unit_held) */
		drop(r, root);
		r->head_copy = put(r, n > 1 ? mem_round(r->job, head / n + (head % n != 0)) : 0,
				   STREAM_COMPUTE);
	} else if (!bwd && !body && s > 0 && r->tail == NO_ID && tail_sum(r, S_GATH) &&
		   (s + 1 == r->st->nsegs || r->job->blocks[r->st->segs[s - 1].block].is_body)) {
		r->tail = mtr_gather(r, tail_sum(r, S_GATH));
	} else if (bwd && body && body_edge(r, s, false)) {
		if (!mtr_keeps_gathered(r))
			drop(r, &r->tail);
		tail_reduce(r);
	} else if (bwd && !body && *root == NO_ID && s + 1 < r->st->nsegs &&
		   body_edge(r, s + 1, true)) {
		drop(r, &r->head_copy);
		*root = mtr_gather(r, head);
	}
}

void mtr_split_done(struct tr *r)
{
	drop(r, &r->tail);
	drop(r, &r->head_copy);
}

/* FSDP's root unit (every non-body layer) reduce-scatters once the whole
 * backward is done (FSDP2: _fsdp_state.py _root_post_backward_final_callback
 * -> the root group's post_backward, foreach_reduce as for a body unit;
 * FSDP1: its last _post_backward_hook), so its sharded gradients are made
 * then, not at each root layer's backward (mem_timeline.c add_grads). */
bool mtr_root_reduces(const struct tr *r)
{
	return shards(r->job->sharding) && r->job->sharding != MEM_SHARD_ZERO3 &&
	       !r->job->optimizer_in_backward;
}

void mtr_root_reduce(struct tr *r)
{
	const struct mem_sums *T = &r->st->total;
	bool split = mtr_split(r);
	uint32_t in, out;

	if (!mtr_root_reduces(r))
		return;
	r->t->what = "root unit";
	if (mtr_no_sync2(r)) {
		accumulate2(r, SIZE_MAX, 0, mem_sub(T->v[S_GACC_NB], split ? tail_sum(r, S_GACC) : 0));
		return;
	}
	/* FSDP1: the flat gradient; FSDP2: foreach_reduce's reduce_scatter_input,
	 * in reduce_dtype where that differs (mem_fsdp.c mem_fsdp_root_reduce);
	 * a split root's tail has reduced already (mtr_split_at) */
	in = put(r, T->v[S_GRED_NB] ? mem_sub(T->v[S_GRED_NB], split ? tail_sum(r, S_GRED_NB) : 0) :
		 mem_sub(T->v[S_GUNSH_NB], split ? tail_sum(r, S_GUNSH) : 0),
		 records(r) ? STREAM_COMPUTE : STREAM_RS);
	for (size_t s = 0; s < r->st->nsegs; s++)
		for (uint64_t k = 0; !r->job->blocks[r->st->segs[s].block].is_body &&
				     k < kept(r->st->segs[s].count); k++)
			for (size_t j = 0; j < r->job->blocks[r->st->segs[s].block].nlayers; j++)
				drop(r, &inst_of(r, s, k, j)->unsh);
	if (r->acc_mode) {
		mtr_keep_or_add(r, &in);
		return;
	}
	out = put(r, mem_sub(T->v[S_GFIN_NB], split ? tail_sum(r, S_GFIN) : 0), STREAM_RS);
	drop(r, &in);
	if (produces(r))
		mtr_idl_push(r, &r->grads, out);
	else
		drop(r, &out);
}

/* One accumulated gradient (acc index *i, `n` bytes) reduce-scattered into
 * its `fin`-byte shard.  FSDP2's post_backward copies it into a
 * reduce_scatter_input of its size (foreach_reduce) after the last backward
 * under torch.distributed.pipelining (the timeline's final reduce-scatter
 * instant); FSDP1 reduce-scatters from the flat gradient itself. */
static void sync_one(struct tr *r, struct idl *l, size_t *i, uint64_t n, uint64_t fin)
{
	uint32_t in = put(r, mtr_keeps_gathered(r) ? n : 0, STREAM_RS);

	if (mtr_no_sync2(r))
		drop(r, &l->v[(*i)++]);
	mtr_idl_push(r, &r->grads, put(r, fin, STREAM_RS));
	if (!mtr_no_sync2(r))
		drop(r, &l->v[(*i)++]);
	drop(r, &in);
}

/* How many units body repeat k of a segment with @mid folded repeats
 * stands for in backward: the repeat, then the folded middle after the
 * 64th; unit u of them counts `u ? mid : 1` repeats. */
static int unit_parts(uint64_t mid, uint64_t k)
{
	return mid && k == MEM_TRACE_REPEATS / 2 ? 2 : 1;
}

/* The last micro-batch under no_sync(): each unit, in backward order, is
 * reduce-scattered from its accumulated flat gradient into its shard. */
void mtr_sync_unsharded(struct tr *r)
{
	bool *o = &r->cx->ovf;
	size_t i = 0;
	enum mem_sum_field a = mtr_no_sync2(r) ? S_GACC : S_GUNSH;

	for (size_t s = r->st->nsegs; s-- > 0;) {
		const struct mem_seg *seg = &r->st->segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		uint64_t n = kept(seg->count), mid = seg->count - n;

		/* a chunked job's units have reduced chunk by chunk */
		for (uint64_t k = n; !mtr_chunked(r) && r->job->blocks[seg->block].is_body && k-- > 0;) {
			for (int u = 0; u < unit_parts(mid, k); u++) {
				uint64_t x = u ? mid : 1;

				if (!mem_mul(o, it->v[a], x) || i >= r->acc.n)
					continue;
				sync_one(r, &r->acc, &i, mem_mul(o, it->v[a], x), mem_mul(o, it->v[S_GFIN], x));
			}
		}
	}
	if (!mtr_chunked(r) && r->st->total.v[a == S_GACC ? S_GACC_NB : S_GUNSH_NB] && i < r->acc.n)
		sync_one(r, &r->acc, &i, r->st->total.v[S_GACC_NB], r->st->total.v[S_GFIN_NB]);
	mtr_idl_drop_from(r, &r->acc, 0);	/* none left: a guard */
}

/* FSDP2 under one round of Interleaved1F1B (mem_pipeline.c
 * mem_pp_chunk_scoped, the rule the timeline's mem_pp_chunk_view
 * follows): each chunk's micro-batches run their backwards back to back,
 * its PipelineStage root reduce-scattering and resharding after the last
 * of them, before the chunk below it starts.  The trace's last
 * micro-batch stands for that last backward: a chunk's accumulated
 * gradients (those its earlier backwards made) exist from its entry
 * (mtr_chunk_enter) to its reduce-scatter (mtr_chunk_reduce); the first
 * micro-batch's unit gradients are freed at its post_backward. */
bool mtr_chunked(const struct tr *r)
{
	return mtr_no_sync2(r) && mem_pp_chunk_scoped(r->job) && r->st->chunk_total &&
	       r->job->micro_batches >= 2;
}

/* Chunk c's gradients in backward order, its segments as
 * mem_pp_chunk_view gives them (the timeline's view of the chunk): a body
 * unit each (the repeat, then the folded middle after the 64th), a root
 * layer's its chunk root's; made (!reduce) or reduce-scattered. */
static void chunk_units(struct tr *r, uint32_t c, bool reduce)
{
	bool *o = &r->cx->ovf;
	struct mem_stage view;
	struct mem_sums skip;
	size_t i = 0;

	if (!mem_pp_chunk_view(r->job, r->st, c, &view, &skip))
		return;
	for (size_t s = view.nsegs; s-- > 0;) {
		const struct mem_seg *seg = &view.segs[s];
		const struct mem_sums *it = mem_seg_iter(r->cx, seg);
		bool body = r->job->blocks[seg->block].is_body;
		uint64_t n = kept(seg->count), mid = seg->count - n;

		for (uint64_t k = body ? n : 1; k-- > 0;)
			for (int u = 0; u < (body ? unit_parts(mid, k) : 1); u++) {
				uint64_t x = !body ? seg->count : u ? mid : 1, a = mem_mul(o, it->v[S_GACC], x);

				if (!a)
					continue;
				if (!reduce)
					mtr_idl_push(r, &r->cacc, put(r, a, STREAM_COMPUTE));
				else if (i < r->cacc.n)
					sync_one(r, &r->cacc, &i, a, mem_mul(o, it->v[S_GFIN], x));
			}
	}
}

/* The last micro-batch's backward reaches chunk c: the unsharded
 * accumulated gradients of its units, made by its earlier backwards. */
void mtr_chunk_enter(struct tr *r, uint32_t c)
{
	if (!mtr_chunked(r) || r->acc_mode != 2)
		return;
	r->t->what = "chunk accumulated gradients";
	chunk_units(r, c, false);
}

/* ... and leaves it: reduce-scattered into their shards, the units it
 * kept gathered (reshard after backward off) resharded. */
void mtr_chunk_reduce(struct tr *r, uint32_t c)
{
	if (!mtr_chunked(r) || r->acc_mode != 2)
		return;
	r->t->what = "chunk gradient reduce-scatter";
	chunk_units(r, c, true);
	mtr_idl_drop_from(r, &r->cacc, 0);	/* none left: a guard */
	for (size_t s = 0; mtr_keeps_gathered(r) && s < r->st->nsegs; s++)
		for (uint64_t k = 0; r->st->segs[s].chunk == c && k < kept(r->st->segs[s].count); k++)
			if (r->job->blocks[r->st->segs[s].block].is_body &&
			    r->job->blocks[r->st->segs[s].block].nlayers)
				mtr_reshard(r, &inst_of(r, s, k, 0)->held);
	/* the stage's root layers (the embedding or the head) all of this
	 * chunk: its root's post_backward reshards them too */
	for (size_t s = 0; s < r->st->nsegs; s++)
		if (!r->job->blocks[r->st->segs[s].block].is_body && r->st->segs[s].chunk != c)
			return;
	mtr_reshard(r, &r->root);
}
