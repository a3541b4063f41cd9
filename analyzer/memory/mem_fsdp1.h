/* SPDX-License-Identifier: MIT */
/*
 * mem_fsdp1.h - torch FSDP1's own rules (use_orig_params FlatParameter
 * gradients, no_sync() accumulation, prefetch), hooks for memory.c and
 * mem_timeline.c.  Only the memory model (analyzer/memory/) and the trace (analyzer/alloc/) include it.
 */
#ifndef MEMC_ANALYZER_MEM_FSDP1_H
#define MEMC_ANALYZER_MEM_FSDP1_H

#include "analyzer/memory/mem_internal.h"

/* Frozen tensors of block b keep a gradient (their unit's FlatParameter trains). */
bool mem_fsdp1_flat_grad(const struct mem_job *job, const struct mem_block *b);
/* Add a frozen tensor's FlatParameter gradient to its layer's cost. */
void mem_fsdp1_frozen_grad(struct mem_ctx *cx, const struct mem_param *p, uint32_t n,
			   struct mem_cost *c);
/* The prefetched unit's bytes `pre` as FSDP1's prefetch arguments leave them. */
uint64_t mem_fsdp1_prefetch(const struct mem_job *job, bool bwd, uint64_t pre);
/* A later micro-batch under no_sync(): every unsharded gradient resident. */
bool mem_fsdp1_accumulates_unsharded(const struct mem_job *job, bool accumulating);
/* The unsharded gradients a unit's backward holds at an instant: @views,
 * its parameters' own so far, + @cat, the flat gradient SplitWithSizesBackward
 * makes at the unit's last backward layer (0 elsewhere). */
uint64_t mem_fsdp1_view_grads(struct mem_ctx *cx, bool accumulating, uint64_t views, uint64_t cat);
/* ... and, under SHARD_GRAD_OP, every unit still gathered. */
bool mem_fsdp1_all_gathered(const struct mem_job *job, bool accumulating);

#endif
