/* SPDX-License-Identifier: MIT */
/*
 * offload.h - the other side of CPU/NVMe offload (memory-model.md §7): what
 * the offloaded state takes in a node's RAM and on its NVMe, DeepSpeed's
 * own estimate of the host side, and -Whost-memory when the node's RAM is
 * too small.
 */
#ifndef MEMC_ANALYZER_OFFLOAD_H
#define MEMC_ANALYZER_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/out/report.h"

struct build;
struct eval;

/* Whether the job offloads anything (its report then has host lines). */
bool offload_active(const struct mem_job *job);
/* GPUs of one node (1 if the cluster is unknown). */
uint64_t offload_ranks_per_node(const struct report_job *j);
/* @per_rank x the node's ranks; UINT64_MAX if that overflows. */
uint64_t offload_per_node(const struct report_job *j, uint64_t per_rank);
/* DeepSpeed's estimate_zero{2,3}_model_states_mem_needs CPU figure per node
 * (zero_init on, its 1.5 buffer factor); 0 where the job is not ZeRO. */
uint64_t offload_deepspeed_host(const struct report_job *j);
/* -Whost-memory at the offload key, once per job. */
void offload_check(struct eval *ev, const struct build *bd);

#endif
