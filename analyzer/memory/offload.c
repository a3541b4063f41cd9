/* SPDX-License-Identifier: MIT */
/*
 * offload.c - host RAM and NVMe of offloaded training state (offload.h).
 * memory.c puts each rank's share of the offloaded state in its class
 * (host_bytes, nvme_bytes); a node holds gpus-per-node ranks of it.
 */
#include <stdio.h>

#include "analyzer/lower/build.h"
#include "analyzer/memory/offload.h"
#include "lang/diag.h"
#include "lang/eval.h"

bool offload_active(const struct mem_job *job)
{
	return job && (job->offload_optimizer || job->offload_params || job->offload_activations ||
		       job->offload_first);
}

uint64_t offload_ranks_per_node(const struct report_job *j)
{
	return j->nodes && j->gpus >= j->nodes ? j->gpus / j->nodes : 1;
}

uint64_t offload_per_node(const struct report_job *j, uint64_t per_rank)
{
	uint64_t n;

	return __builtin_mul_overflow(per_rank, offload_ranks_per_node(j), &n) ? UINT64_MAX : n;
}

/* deepspeed/runtime/zero/stage_1_and_2.py and stage3.py (memory-model.md
 * TV-09): ZeRO-1/2 offload P * max(4 * gpus, 16) * 1.5 on each node; ZeRO-3
 * P * 16 * 1.5 / nodes, P * 18 * 1.5 / nodes with the parameters too. */
uint64_t offload_deepspeed_host(const struct report_job *j)
{
	const struct mem_job *job = j->job;
	uint64_t per = 0, p = j->params_total, nodes = j->nodes ? j->nodes : 1, out;

	if (!job || !job->offload_optimizer)
		return 0;
	if (job->sharding == MEM_SHARD_ZERO1 || job->sharding == MEM_SHARD_ZERO2)
		per = j->gpus > 4 ? 4 * j->gpus : 16;
	else if (job->sharding == MEM_SHARD_ZERO3)
		per = job->offload_params ? 18 : 16;
	if (!per || __builtin_mul_overflow(p, per * 3, &out))
		return 0;
	return out / 2 / (job->sharding == MEM_SHARD_ZERO3 ? nodes : 1);
}

/* The class whose ranks need the most host RAM. */
static const struct mem_class *largest_host(const struct mem_result *r)
{
	const struct mem_class *k = NULL;

	for (size_t i = 0; i < r->nclasses; i++)
		if (!k || r->classes[i].host_bytes > k->host_bytes)
			k = &r->classes[i];
	return k;
}

void offload_check(struct eval *ev, const struct build *bd)
{
	const struct report_job *j = &bd->rep;
	struct diag_engine *de = eval_diag(ev);
	uint64_t cap = bd->job.host_capacity_bytes, node, ds;
	char need[32], have[32], rank[32], est[32];

	if (!offload_active(&bd->job) || !cap || !j->result || !j->result->nclasses ||
	    !diag_is_enabled(de, DIAG_HOST_MEMORY))
		return;
	const struct mem_class *k = largest_host(j->result);

	node = offload_per_node(j, k->host_bytes);
	if (node <= cap)
		return;
	struct diag *d = diag_emit(de, DIAG_HOST_MEMORY, bd->loc_offload.file ? bd->loc_offload : bd->loc_train,
				   "offloaded state needs %s of host RAM per node (%llu ranks x %s), more than "
				   "the %s node's %s", report_bytes(node, need, sizeof need),
				   (unsigned long long)offload_ranks_per_node(j),
				   report_bytes(k->host_bytes, rank, sizeof rank), j->gpu,
				   report_bytes(cap, have, sizeof have));

	if (d == diag_sink(de))
		return;
	ds = offload_deepspeed_host(j);
	if (ds)
		diag_note(d, NO_LOC, "DeepSpeed's estimator asks for %s per node (x1.5 for its buffers)",
			  report_bytes(ds, est, sizeof est));
	diag_note(d, NO_LOC, "offload to nvme, spread the job over more nodes, or set host_memory in a "
		  "gpu record derived from %s if the nodes have more RAM", j->gpu);
}
