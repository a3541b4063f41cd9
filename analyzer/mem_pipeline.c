/* SPDX-License-Identifier: MIT */
/*
 * mem_pipeline.c - how a pipeline splits the body and schedules its
 * micro-batches (memory-model.md §4.6, "Pipeline split"): Megatron-Core's
 * stage split, the in-flight chunk counts of each schedule, and the
 * logits of the last model chunk.
 */
#include "analyzer/mem_internal.h"

uint64_t mem_body_repeats(const struct mem_job *job)
{
	uint64_t r = 0;
	bool ovf = false;

	for (size_t b = 0; b < job->nblocks; b++)
		if (job->blocks[b].is_body)
			r = mem_add(&ovf, r, job->blocks[b].repeat);
	return r;
}

uint32_t mem_chunks_per_stage(const struct mem_job *job)
{
	return job->schedule == MEM_PP_INTERLEAVED && job->pp > 1 ? job->vp : 1;
}

uint64_t mem_pp_chunks_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp, uint32_t stage,
				 uint64_t m)
{
	uint64_t k, cap;

	if (pp <= 1 || stage >= pp)
		return 1;
	if (s == MEM_PP_GPIPE)
		return m;		/* all forwards before any backward */
	if (s == MEM_PP_ZB_H2) {
		/* ZB-H2 fills the tail bubble with p - 1 - i more warm-up forwards */
		k = 2 * (uint64_t)(pp - stage) - 1;
		return m < k ? m : k;
	}
	/* ZB-H1 keeps 1F1B's in-flight count: it only moves W passes */
	if (s != MEM_PP_INTERLEAVED || vp <= 1)
		return m < (uint64_t)(pp - stage) ? m : (uint64_t)(pp - stage);
	/* Megatron interleaved warm-up: 2(p - i - 1) + (v - 1)p chunk forwards, plus one */
	k = 2 * (uint64_t)(pp - stage - 1) + (uint64_t)(vp - 1) * pp + 1;
	cap = m > UINT64_MAX / vp ? UINT64_MAX : m * vp;
	return k < cap ? k : cap;
}

uint64_t mem_pp_micro_batches_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp,
					uint32_t stage, uint64_t m)
{
	uint64_t k = mem_pp_chunks_in_flight(s, pp, vp, stage, m);
	uint64_t v = (s == MEM_PP_INTERLEAVED && pp > 1 && vp > 1) ? vp : 1;

	return (k + v - 1) / v;
}

double mem_pp_interleaved_factor(uint32_t pp, uint32_t vp)
{
	if (pp == 0 || vp == 0)
		return 1.0;
	return 1.0 + (double)(pp - 1) / ((double)pp * (double)vp);
}

/* Layers of stage s before the embedding/loss adjustment, as Megatron-Core's
 * transformer_block.py get_num_layers_to_build: an uneven first/last stage
 * takes its count, the middle stages share the rest; otherwise the repeats
 * plus one for each accounted embedding/loss split evenly. */
static uint64_t stage_layers(const struct mem_job *job, uint64_t r, uint32_t s)
{
	bool first = job->first_stage_layers != 0, last = job->last_stage_layers != 0;
	uint64_t left = (uint64_t)job->pp - first - last;

	if (job->pp <= 1)
		return r;
	if (!first && !last)
		return (r + job->pp_account_embedding + job->pp_account_loss) / job->pp;
	if (s == 0 && first)
		return job->first_stage_layers;
	if (s == job->pp - 1 && last)
		return job->last_stage_layers;
	return left ? (r - job->first_stage_layers - job->last_stage_layers) / left : 0;
}

static enum mem_split split_uneven(const struct mem_job *job, uint64_t r, uint64_t *sl)
{
	bool first = job->first_stage_layers != 0, last = job->last_stage_layers != 0;
	uint64_t left = (uint64_t)job->pp - first - last, rest, v = mem_chunks_per_stage(job);
	uint32_t probe[3] = { 0, job->pp - 1, job->pp > 2 ? 1 : 0 };

	if (job->pp_account_embedding || job->pp_account_loss)
		return MEM_SPLIT_ACCOUNT;
	if (job->first_stage_layers > r || job->last_stage_layers > r - job->first_stage_layers)
		return MEM_SPLIT_EDGES;
	rest = r - job->first_stage_layers - job->last_stage_layers;
	if (left ? rest % left != 0 : rest != 0) {
		*sl = left ? rest / left : rest;
		return MEM_SPLIT_MIDDLE;
	}
	for (int i = 0; i < 3; i++)
		if (stage_layers(job, r, probe[i]) % v) {
			*sl = stage_layers(job, r, probe[i]);
			return MEM_SPLIT_VP;
		}
	return MEM_SPLIT_OK;
}

enum mem_split mem_pp_split(const struct mem_job *job, uint64_t *sl)
{
	uint64_t r = mem_body_repeats(job), n;

	*sl = 0;
	if (job->pp <= 1)
		return MEM_SPLIT_OK;
	if (r == 0)
		return MEM_SPLIT_EMPTY;
	if (job->first_stage_layers || job->last_stage_layers)
		return split_uneven(job, r, sl);
	n = r + job->pp_account_embedding + job->pp_account_loss;
	if (n % job->pp)
		return MEM_SPLIT_EVEN;
	*sl = n / job->pp;
	return *sl % mem_chunks_per_stage(job) ? MEM_SPLIT_VP : MEM_SPLIT_OK;
}

uint64_t mem_pp_chunk_layers(const struct mem_job *job, uint64_t c)
{
	uint64_t v = mem_chunks_per_stage(job), n;

	if (job->pp <= 1)
		return mem_body_repeats(job);
	n = stage_layers(job, mem_body_repeats(job), (uint32_t)(c % job->pp)) / v;
	/* the embedding (loss) takes a layer's place in the first (last) chunk */
	if (c == 0 && job->pp_account_embedding && n)
		n--;
	if (c == (uint64_t)job->pp * v - 1 && job->pp_account_loss && n)
		n--;
	return n;
}

uint64_t mem_extra_logits_in_flight(bool *ovf, const struct mem_job *job, uint64_t stored,
				    uint64_t chunks)
{
	uint64_t v = mem_chunks_per_stage(job), g, rem, n;

	if (v <= 1)
		return mem_extra_in_flight(ovf, stored, chunks, 1);
	/* forward k of a stage runs chunk (k mod pp·v) / pp: only the last pp of
	 * each pp·v forwards are the last chunk's */
	g = chunks / ((uint64_t)job->pp * v);
	rem = chunks % ((uint64_t)job->pp * v);
	n = mem_add(ovf, mem_mul(ovf, g, job->pp), rem > (v - 1) * job->pp ? rem - (v - 1) * job->pp : 0);
	return n > 1 ? mem_mul(ovf, stored, n - 1) : 0;
}
