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
 */
#include "analyzer/cmd/search_impl.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/memory/memory.h"

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

void search_eval(const struct search_shape *s, const struct search_layout *l, struct mem_ws *ws,
		 struct search_mem *out)
{
	struct mem_job j = s->bd.job;
	struct mem_result res;

	out->ok = out->fits = false;
	out->device_total = 0;
	if (search_split_dropped(&s->bd.job, l->pp, l->vp))
		search_split_clear(&j);
	set_layout(&j, l);
	j.sharding = layout_sharding(&s->bd.job, l);
	j.no_explain = true;
	if (mem_analyze_ws(&j, ws, &res) != MEM_OK)
		return;
	out->ok = out->fits = true;
	for (size_t i = 0; i < res.nclasses; i++) {
		const struct mem_class *k = &res.classes[i];

		out->fits &= k->fits_headroom;
		if (k->device_total > out->device_total)
			out->device_total = k->device_total;
	}
}
