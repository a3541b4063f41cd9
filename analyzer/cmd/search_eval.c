/* SPDX-License-Identifier: MIT */
/*
 * search_eval.c - the memory of one layout of memc search: the layout
 * written on a copy of its shape's struct mem_job, then mem_analyze_ws()
 * with no explain strings: a layout's figures are only ranked and
 * filtered (the picks are re-checked from their pasted text), so the
 * strings would be formatted for nothing, and the scratch is reused from
 * layout to layout rather than allocated and freed per call.  This is
 * the search's only call into the memory model, so that a faster model
 * of the same job can take its place behind the same signature.
 *
 * A job whose reserved figure is the allocator replay (a torch FSDP job by
 * default, memory-model.md §5.4) is first analysed on the ratio, which is
 * the same walk without the replay: a layout whose lower bound (below)
 * already exceeds what the headroom leaves cannot fit, and is not
 * replayed (docs/search.md "A replayed job").
 */
#include "analyzer/cmd/search_impl.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/memory/memory.h"

struct search_eval_hook *search_eval_hook;

/* The sharding a layout's dp leaves: DDP needs two replicas. Sharded
 * modes came from the shape's build (zero) or the job (fsdp). */
static enum mem_sharding layout_sharding(const struct mem_job *built, const struct search_layout *l)
{
	if (built->sharding == MEM_SHARD_NONE || built->sharding == MEM_SHARD_DDP)
		return l->dp > 1 ? MEM_SHARD_DDP : MEM_SHARD_NONE;
	return built->sharding;
}

static void set_layout(struct mem_job *j, const struct search_layout *l)
{
	j->dp = l->dp;
	j->tp = l->tp;
	j->pp = l->pp;
	j->vp = l->vp;
	j->cp = l->cp;
	j->ep = l->ep;
	j->gpus_per_node = l->per_node;
	j->micro_batches = l->grad_accum;
	j->schedule = l->vp > 1 ? MEM_PP_INTERLEAVED : MEM_PP_1F1B;
	j->offload_optimizer = l->offload;
	j->offload_optimizer_nvme = false;
	j->offload_params = j->offload_params_nvme = false;
	j->phase_series = false;
}

static void analyse(const struct mem_job *j, struct mem_ws *ws, struct search_mem *out)
{
	struct mem_result res;

	out->ok = out->fits = out->pruned = false;
	out->device_total = 0;
	if (mem_analyze_ws(j, ws, &res) != MEM_OK)
		return;
	out->ok = out->fits = true;
	for (size_t i = 0; i < res.nclasses; i++) {
		const struct mem_class *k = &res.classes[i];

		out->fits &= k->fits_headroom;
		if (k->device_total > out->device_total)
			out->device_total = k->device_total;
	}
}

/* The lower bound of the replayed device total, from @j analysed on the
 * ratio; 0 where that fails.  The walk does not read alloc_replay, so its
 * peak allocated, context, NCCL, paged and engine bytes are those of the
 * replayed analysis, where mem_class_totals() adds them to a peak
 * reserved that memory.c replay_reserved() raises to at least the peak
 * allocated; the cuBLAS workspaces and the fragmentation are the ones
 * left out (the replay puts the workspaces in its pool). */
static uint64_t bound_of(const struct mem_job *j, struct mem_ws *ws)
{
	struct mem_job r = *j;
	struct mem_result res;
	uint64_t most = 0;

	r.alloc_replay = false;
	if (mem_analyze_ws(&r, ws, &res) != MEM_OK)
		return 0;
	for (size_t i = 0; i < res.nclasses; i++) {
		const struct mem_class *k = &res.classes[i];
		uint64_t b = k->device_total - k->overhead_frag - k->overhead_cublas;

		most = b > most ? b : most;
	}
	return most;
}

/* Whether a device total of @b fails the headroom test of every class
 * (mem_class_totals: the capacity is the job's, the same for all). */
static bool over_headroom(const struct mem_job *j, uint64_t b)
{
	return j->capacity_bytes && (double)b > (double)j->capacity_bytes * (1.0 - j->headroom);
}

void search_eval(const struct search_shape *s, const struct search_layout *l, struct mem_ws *ws,
		 struct search_mem *out)
{
	struct mem_job j = s->bd.job;
	struct search_eval_hook *h = search_eval_hook;

	out->pruned = false;
	if (search_split_dropped(&s->bd.job, l->pp, l->vp))
		search_split_clear(&j);
	set_layout(&j, l);
	j.sharding = layout_sharding(&s->bd.job, l);
	j.no_explain = true;
	uint64_t b = j.alloc_replay ? bound_of(&j, ws) : 0;

	if (over_headroom(&j, b) && !(h && h->no_prune)) {
		out->ok = true;
		out->fits = false;
		out->pruned = true;
		out->device_total = b;
		if (!h)
			return;
	}
	struct search_mem full;

	analyse(&j, ws, &full);
	if (h && j.alloc_replay)
		h->seen(h, l, b, out->pruned, &full);
	if (!out->pruned)
		*out = full;
}
