/* SPDX-License-Identifier: MIT */
/*
 * search_split.c - a stated pipeline split in the variants of memc search
 * and memc fit (search_split.h).
 */
#include <string.h>

#include "analyzer/cmd/search_split.h"
#include "analyzer/memory/memory.h"

const char *const search_split_keys[] = { "stage_layers", "first_stage_layers", "last_stage_layers",
					  "account_for_embedding", "account_for_loss" };
const size_t search_nsplit_keys = sizeof search_split_keys / sizeof search_split_keys[0];

const char search_split_note[] =
	"with the default even split: the job's stated one (stage_layers, first/last_stage_layers, "
	"account_for_*) is for its own pp and vp";

bool search_split_is_key(const char *sub)
{
	for (size_t i = 0; sub && i < search_nsplit_keys; i++)
		if (!strcmp(search_split_keys[i], sub))
			return true;
	return false;
}

/* A job without interleaving says vp 0 or 1 alike. */
static uint64_t chunks(uint64_t vp)
{
	return vp ? vp : 1;
}

/* The fields, not mem_pp_stated_split(): a split written beside pp = 1
 * is no split there, but would be one in a variant with pp > 1. */
static bool states(const struct mem_job *j)
{
	return j->nstage_layers || j->first_stage_layers || j->last_stage_layers || j->pp_account_embedding ||
	       j->pp_account_loss;
}

bool search_split_same(uint64_t written_pp, uint64_t written_vp, uint64_t pp, uint64_t vp)
{
	return written_pp == pp && chunks(written_vp) == chunks(vp);
}

bool search_split_dropped(const struct mem_job *written, uint32_t pp, uint32_t vp)
{
	return states(written) && !search_split_same(written->pp, written->vp, pp, vp);
}

void search_split_clear(struct mem_job *j)
{
	j->stage_layers = NULL;
	j->nstage_layers = 0;
	j->first_stage_layers = j->last_stage_layers = 0;
	j->pp_account_embedding = j->pp_account_loss = false;
}
