/* SPDX-License-Identifier: MIT */
/*
 * search_split.h - what a variant of memc search or memc fit (and the
 * -Wcapacity fixes) does with a stated pipeline split (parallel {
 * stage_layers, first/last_stage_layers, account_for_* }): a split is
 * written for one pp x vp, so a variant with another pp or vp drops the
 * keys and runs the default even split (Megatron-Core's
 * get_num_layers_to_build without the uneven options); one with the
 * written pp and vp keeps them. Both searches ask here, so that neither
 * narrows itself to the written layout.
 */
#ifndef MEMC_ANALYZER_CMD_SEARCH_SPLIT_H
#define MEMC_ANALYZER_CMD_SEARCH_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mem_job;

/* The sub-keys of parallel { } that state the split. */
extern const char *const search_split_keys[];
extern const size_t search_nsplit_keys;

/* Said with a variant that dropped them. */
extern const char search_split_note[];

bool search_split_is_key(const char *sub);
/* Whether pp x vp is the written one, for which a stated split is
 * written (memc fit's variants, which are text, ask this). */
bool search_split_same(uint64_t written_pp, uint64_t written_vp, uint64_t pp, uint64_t vp);
/* Whether the variant of pp x vp drops a split @written states. */
bool search_split_dropped(const struct mem_job *written, uint32_t pp, uint32_t vp);
/* @j without a stated split: the even one. */
void search_split_clear(struct mem_job *j);

#endif
