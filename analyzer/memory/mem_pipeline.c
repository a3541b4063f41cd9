/* SPDX-License-Identifier: MIT */
/*
 * mem_pipeline.c - how a pipeline splits the body and schedules its
 * micro-batches (memory-model.md §4.6, "Pipeline split"): Megatron-Core's
 * stage split, the in-flight chunk counts of each schedule, the logits of
 * the last model chunk, and what the zero-bubble schedules' deferred weight
 * gradients hold (DualPipe(V), torch's ZBV and interleaved zero bubble).
 */
#include "analyzer/memory/mem_internal.h"

#include <stdlib.h>

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
	if (job->pp > 1 && mem_pp_dual(job->schedule))
		return 2;
	return mem_pp_interleaved(job->schedule) && job->pp > 1 ? job->vp : 1;
}

/* Pipeline stages the body is split into: DualPipeV's V runs over 2 pp
 * stages ("4 PP ranks (8 PP stages)", dualpipev.py), as ZBV's does
 * (schedules.py ScheduleZBVZeroBubble: "exactly two stages per rank",
 * _utils.py generate_stage_to_rank_mapping style "v"), the others over pp
 * (DualPipe's two directions are two copies of the same pp stages). */
static uint32_t model_stages(const struct mem_job *job)
{
	return mem_pp_v(job->schedule) && job->pp > 1 ? 2 * job->pp : job->pp;
}

/* Model chunks one stage splits into: vp under the interleaved schedule. */
static uint32_t stage_split(const struct mem_job *job)
{
	return mem_pp_interleaved(job->schedule) && job->pp > 1 ? job->vp : 1;
}

bool mem_pp_stated_split(const struct mem_job *job)
{
	return job->pp > 1 && (job->nstage_layers || job->first_stage_layers || job->last_stage_layers ||
			       job->pp_account_embedding || job->pp_account_loss);
}

uint64_t mem_pp_model_chunks(const struct mem_job *job)
{
	return (uint64_t)model_stages(job) * stage_split(job);
}

/* DualPipe (dualpipe.py DualPipe.__init__/step): rank i runs stage i of the
 * forward direction and stage pp-1-i of the reverse one, so each stage lives
 * on two ranks; DualPipeV: rank i holds V stages i and 2pp-1-i; otherwise
 * chunk c is on stage c mod pp. */
unsigned mem_pp_chunk_ranks(const struct mem_job *job, uint64_t c, uint32_t r[2])
{
	uint32_t p = job->pp;

	if (p <= 1) {
		r[0] = 0;
		return 1;
	}
	if (job->schedule == MEM_PP_DUALPIPE) {
		r[0] = (uint32_t)c;
		r[1] = p - 1 - (uint32_t)c;
		return 2;
	}
	if (mem_pp_v(job->schedule)) {
		r[0] = c < p ? (uint32_t)c : 2 * p - 1 - (uint32_t)c;
		return 1;
	}
	r[0] = (uint32_t)(c % p);
	return 1;
}

/* Forwards of model chunk c in flight at the rank's peak, from dualpipe.py
 * DualPipe.step (half_rank h): steps 1-2 (nF0, nF0F1) run pp - h - 1 F0 and
 * h + 1 F1, step 3 (nB1W1F1) keeps both, and step 4's first F0 runs before
 * its B1: pp - h of the rank's earlier stage h, h + 1 of stage pp - 1 - h,
 * i.e. pp - c of stage c, pp + 1 together. DualPipeV.step the same over its
 * 2 pp stages: 2 pp - c of V stage c, 2 pp + 1 per rank. Counted with the
 * forward before the backward it is paired with (the non-overlapped order).
 * 0 for the other schedules (the stage's count). */
uint64_t mem_pp_chunk_flight(const struct mem_job *job, uint64_t c)
{
	uint64_t m = job->micro_batches, k;

	if (job->pp <= 1 || !mem_pp_dual(job->schedule))
		return 0;
	if (job->schedule != MEM_PP_ZBV)
		return mem_pp_model_chunks(job) - c;
	/* ZBV: a chunk micro-batch holds its graph from F to W (zbv_peak) */
	k = c < job->pp ? 2 * (uint64_t)job->pp - 1 - c : 2 * (uint64_t)job->pp - c;
	return k < m ? k : m;
}

/* Megatron-Core's microbatch_group_size_per_vp_stage (0: pp, its default). */
uint64_t mem_pp_group(const struct mem_job *job)
{
	return job->pp_group ? job->pp_group : job->pp;
}

/* Forwards x of a rank (0-based, before x) that run its local chunk j under
 * Megatron-Core schedules.py get_schedule_table: micro-batches in groups of
 * g, each group run chunk by chunk, the last group the remainder of m / g
 * (r = m mod g, when not 0); torch schedules.py ScheduleInterleaved1F1B
 * forward_stage_index, rounds of microbatches_per_round (g = pp, m a
 * multiple of pp). Its backward k runs chunk v - 1 - chunk(k)
 * (get_model_chunk_id(forward=False), backward_stage_index): the backwards
 * of chunk j are the forwards of chunk v - 1 - j. */
static uint64_t chunk_ops(uint64_t x, uint64_t j, uint64_t m, uint64_t g, uint64_t v)
{
	uint64_t full = m / g * g * v, r = m % g, in;

	if (x <= full) {
		in = x % (g * v) > j * g ? x % (g * v) - j * g : 0;
		return x / (g * v) * g + (in < g ? in : g);
	}
	in = x - full > j * r ? x - full - j * r : 0;
	return m / g * g + (in < r ? in : r);
}

/* Forwards from table position x on that run the same chunk. */
static uint64_t chunk_run(uint64_t x, uint64_t m, uint64_t g, uint64_t v)
{
	uint64_t full = m / g * g * v, r = m % g;

	return x < full ? g - x % g : r - (x - full) % r;
}

/* One micro-batch of the rank's chunk j, field f less field `minus`. */
static uint64_t chunk_bytes(const struct mem_stage *st, uint64_t j, enum mem_sum_field f,
			    enum mem_sum_field minus)
{
	const uint64_t *x = st->chunk_total[j].v;

	return mem_sub(x[f], minus < S__COUNT ? x[minus] : 0);
}

struct flight_walk {
	const struct mem_stage *st;
	uint64_t m, g, v, w, all;
	enum mem_sum_field f, minus;
};

/* The rank's bytes in flight after forward w + t, before backward t. */
static uint64_t flight_at(bool *ovf, const struct flight_walk *fw, uint64_t t)
{
	uint64_t sum = 0;

	for (uint64_t j = 0; j < fw->v; j++) {
		uint64_t n = mem_sub(chunk_ops(fw->w + t + 1, j, fw->m, fw->g, fw->v),
				     chunk_ops(t, fw->v - 1 - j, fw->m, fw->g, fw->v));

		sum = mem_add(ovf, sum, mem_mul(ovf, n, chunk_bytes(fw->st, j, fw->f, fw->minus)));
	}
	return sum;
}

/* The highest flight_at over steps [a, b): from t to t + 1 the sum gains
 * forward w + t + 1's chunk and loses backward t's, each the same along a
 * run of the table, so it is linear between run edges and peaks at one. */
static uint64_t flight_peak(bool *ovf, const struct flight_walk *fw, uint64_t a, uint64_t b)
{
	uint64_t peak = 0;

	for (uint64_t t = a; t < b;) {
		uint64_t d = chunk_run(t, fw->m, fw->g, fw->v), e = fw->w + t + 1 < fw->all ?
			     chunk_run(fw->w + t + 1, fw->m, fw->g, fw->v) : 1;
		uint64_t x = flight_at(ovf, fw, t);

		if (x > peak)
			peak = x;
		d = e < d ? e : d;
		t = b - t < d ? b : t + d;
	}
	if (b > a) {
		uint64_t x = flight_at(ovf, fw, b - 1);

		peak = x > peak ? x : peak;
	}
	return peak;
}

/* One rank's interleaved 1F1B, its k = w + 1 chunk forwards in flight
 * (mem_pp_chunks_in_flight): w warm-up forwards, then step t runs forward
 * w + t and backward t, of m x vp each. The peak is the highest sum over
 * the rank's chunks of its bytes a_j x n_j(t), n_j the micro-batches of
 * chunk j in flight after forward w + t. While both indices are in the
 * full groups the counts repeat every g x vp steps; the last (r x vp + 1)
 * steps reach the remainder group. The walked micro-batch holds one of
 * each chunk: the excess is the rest's, less the mean chunk for each of
 * the k - `chunks` forwards a later micro-batch has not in flight
 * (memory.c in_flight). */
static uint64_t interleaved_extra(bool *ovf, const struct mem_job *job, const struct mem_stage *st,
				  uint64_t chunks, enum mem_sum_field f, enum mem_sum_field minus)
{
	uint64_t v = mem_chunks_per_stage(job), g = mem_pp_group(job), m = job->micro_batches;
	uint64_t all = mem_mul(ovf, m, v), own = 0, peak, steps, tail;
	uint64_t k = mem_pp_chunks_in_flight_group(job->schedule, job->pp, job->vp, g, st->index, m);
	uint64_t w = k ? k - 1 : 0, less = k > chunks ? k - chunks : 0;
	struct flight_walk fw = { st, m, g, v, 0, all, f, minus };

	if (w >= all)
		w = all - 1;
	fw.w = w;
	steps = all - w;
	for (uint64_t j = 0; j < v; j++)
		own = mem_add(ovf, own, chunk_bytes(st, j, f, minus));
	peak = flight_peak(ovf, &fw, 0, steps < g * v ? steps : g * v);
	tail = (m % g) * v + 1;
	if (m % g && steps > g * v) {
		uint64_t x = flight_peak(ovf, &fw, steps - tail > g * v ? steps - tail : g * v, steps);

		peak = x > peak ? x : peak;
	}
	return mem_sub(mem_sub(peak, own), mem_extra_in_flight(ovf, own, less + v, (uint32_t)v));
}

uint64_t mem_pp_extra(bool *ovf, const struct mem_job *job, const struct mem_stage *st,
		      uint64_t chunks, enum mem_sum_field f, enum mem_sum_field minus)
{
	const uint64_t *t = st->total.v, *fl = st->flight.v;
	uint64_t x = mem_sub(t[f], minus < S__COUNT ? t[minus] : 0);

	if (job->pp > 1 && mem_pp_dual(job->schedule))
		return mem_sub(mem_sub(fl[f], t[f]), minus < S__COUNT ? mem_sub(fl[minus], t[minus]) : 0);
	if (st->chunk_total)
		return interleaved_extra(ovf, job, st, chunks, f, minus);
	if (f == S_STORED_LOG)
		return mem_extra_logits_in_flight(ovf, job, x, chunks);
	return mem_extra_in_flight(ovf, x, chunks, mem_chunks_per_stage(job));
}

uint64_t mem_pp_chunks_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp, uint32_t stage,
				 uint64_t m)
{
	return mem_pp_chunks_in_flight_group(s, pp, vp, pp, stage, m);
}

uint64_t mem_pp_chunks_in_flight_group(enum mem_schedule s, uint32_t pp, uint32_t vp, uint64_t g,
				       uint32_t stage, uint64_t m)
{
	uint64_t k, cap;
	bool ovf = false;

	if (pp <= 1 || stage >= pp)
		return 1;
	if (s == MEM_PP_GPIPE)
		return m;		/* all forwards before any backward */
	if (s == MEM_PP_ZBV) {
		/* mem_pp_chunk_flight of the rank's chunks i and 2pp - 1 - i */
		k = 2 * (uint64_t)pp - 1 - stage;
		return (k < m ? k : m) + (stage + 1 < m ? stage + 1 : m);
	}
	if (s == MEM_PP_INTERLEAVED_ZB) {
		/* zb_interleaved_flight: vp x pp chunk forwards await their W */
		k = (uint64_t)vp * pp;
		cap = m > UINT64_MAX / vp ? UINT64_MAX : m * vp;
		return k < cap ? k : cap;
	}
	if (mem_pp_dual(s)) {
		/* mem_pp_chunk_flight summed over the rank's two chunks */
		k = (s == MEM_PP_DUALPIPEV ? 2 * (uint64_t)pp : pp) + 1;
		cap = m > UINT64_MAX / 2 ? UINT64_MAX : 2 * m;
		return k < cap ? k : cap;
	}
	if (s == MEM_PP_ZB_H2) {
		/* ZB-H2 fills the tail bubble with p - 1 - i more warm-up forwards */
		k = 2 * (uint64_t)(pp - stage) - 1;
		return m < k ? m : k;
	}
	/* ZB-H1 keeps 1F1B's in-flight count: it only moves W passes */
	if (s != MEM_PP_INTERLEAVED || vp <= 1)
		return m < (uint64_t)(pp - stage) ? m : (uint64_t)(pp - stage);
	/* Megatron get_pp_rank_microbatches: 2(p - i - 1) + (v - 1) g warm-up
	 * chunk forwards (g = microbatch_group_size_per_vp_stage), plus one */
	k = mem_add(&ovf, 2 * (uint64_t)(pp - stage - 1) + 1, mem_mul(&ovf, vp - 1, g));
	cap = m > UINT64_MAX / vp ? UINT64_MAX : m * vp;
	return k < cap ? k : cap;
}

uint64_t mem_pp_micro_batches_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp,
					uint32_t stage, uint64_t m)
{
	uint64_t k = mem_pp_chunks_in_flight(s, pp, vp, stage, m);
	uint64_t v = (mem_pp_interleaved(s) && pp > 1 && vp > 1) ? vp : 1;

	/* a DualPipe micro-batch runs one chunk of a rank (one direction); a
	 * DualPipeV one runs both, chunk i holding the most: 2 pp - i */
	if (pp > 1 && s == MEM_PP_DUALPIPE)
		return k < m ? k : m;
	if (pp > 1 && stage < pp && mem_pp_v(s)) {
		k = 2 * (uint64_t)pp - stage - (s == MEM_PP_ZBV);
		return k < m ? k : m;
	}
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
	uint32_t ns = model_stages(job);
	uint64_t left = (uint64_t)ns - first - last;

	if (job->pp <= 1)
		return r;
	if (!first && !last)
		return (r + job->pp_account_embedding + job->pp_account_loss) / ns;
	if (s == 0 && first)
		return job->first_stage_layers;
	if (s == ns - 1 && last)
		return job->last_stage_layers;
	return left ? (r - job->first_stage_layers - job->last_stage_layers) / left : 0;
}

static enum mem_split split_uneven(const struct mem_job *job, uint64_t r, uint64_t *sl)
{
	bool first = job->first_stage_layers != 0, last = job->last_stage_layers != 0;
	uint32_t ns = model_stages(job);
	uint64_t left = (uint64_t)ns - first - last, rest, v = stage_split(job);
	uint32_t probe[3] = { 0, ns - 1, ns > 2 ? 1 : 0 };

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

/* parallel { stage_layers }: one entry per model chunk adding up to the
 * repeats; a stage may be empty (Megatron-Core's layout accepts one, its
 * pretty_repr prints "(empty stage)"). *sl: the offending length or sum. */
static enum mem_split split_list(const struct mem_job *job, uint64_t r, uint64_t *sl)
{
	uint64_t n = mem_pp_model_chunks(job), sum = 0;
	bool ovf = false;

	if (job->first_stage_layers || job->last_stage_layers || job->pp_account_embedding ||
	    job->pp_account_loss)
		return MEM_SPLIT_LIST_MIXED;
	if (job->nstage_layers != n) {
		*sl = job->nstage_layers;
		return MEM_SPLIT_LIST_LEN;
	}
	for (uint64_t i = 0; i < n; i++)
		sum = mem_add(&ovf, sum, job->stage_layers[i]);
	*sl = sum;
	return sum == r && !ovf ? MEM_SPLIT_OK : MEM_SPLIT_LIST_SUM;
}

enum mem_split mem_pp_split(const struct mem_job *job, uint64_t *sl)
{
	uint64_t r = mem_body_repeats(job), n;

	*sl = 0;
	if (job->pp <= 1)
		return MEM_SPLIT_OK;
	if (r == 0)
		return MEM_SPLIT_EMPTY;
	if (job->nstage_layers)
		return split_list(job, r, sl);
	if (job->first_stage_layers || job->last_stage_layers)
		return split_uneven(job, r, sl);
	n = r + job->pp_account_embedding + job->pp_account_loss;
	if (n % model_stages(job))
		return MEM_SPLIT_EVEN;
	*sl = n / model_stages(job);
	return *sl % stage_split(job) ? MEM_SPLIT_VP : MEM_SPLIT_OK;
}

uint64_t mem_pp_chunk_layers(const struct mem_job *job, uint64_t c)
{
	uint64_t v = stage_split(job), n;

	if (job->pp <= 1)
		return mem_body_repeats(job);
	if (job->nstage_layers)
		return c < job->nstage_layers ? job->stage_layers[c] : 0;
	/* otherwise the rule below is the list's shorthand */
	n = stage_layers(job, mem_body_repeats(job), (uint32_t)(c % model_stages(job))) / v;
	/* the embedding (loss) takes a layer's place in the first (last) chunk */
	if (c == 0 && job->pp_account_embedding && n)
		n--;
	if (c == mem_pp_model_chunks(job) - 1 && job->pp_account_loss && n)
		n--;
	return n;
}

uint64_t mem_extra_logits_in_flight(bool *ovf, const struct mem_job *job, uint64_t stored,
				    uint64_t chunks)
{
	uint64_t v = stage_split(job), n, all;

	if (v <= 1)
		return mem_extra_in_flight(ovf, stored, chunks, 1);
	/* of a stage's first `chunks` forwards, those of the last chunk: the
	 * last g of each g·v (chunk_ops) */
	all = mem_mul(ovf, job->micro_batches, v);
	n = chunk_ops(chunks < all ? chunks : all, v - 1, job->micro_batches, mem_pp_group(job), v);
	return n > 1 ? mem_mul(ovf, stored, n - 1) : 0;
}

/* dualpipe.py DualPipe.step: "assert num_ranks % 2 == 0" and "num_chunks > 0
 * and num_chunks % 2 == 0 and num_chunks >= num_ranks * 2"; dualpipev.py
 * DualPipeV.step only the last. */
enum mem_dual_rule mem_pp_dual_rule(const struct mem_job *job)
{
	bool v = job->schedule == MEM_PP_DUALPIPEV;

	/* ScheduleZBVZeroBubble runs max(2 pp - 1, m) and drops the rest */
	if (job->pp <= 1 || !mem_pp_dual(job->schedule) || job->schedule == MEM_PP_ZBV)
		return MEM_DUAL_OK;
	if (!v && job->pp % 2)
		return MEM_DUAL_PP_ODD;
	if (!v && job->micro_batches % 2)
		return MEM_DUAL_MB_ODD;
	if (job->micro_batches < 2 * (uint64_t)job->pp)
		return MEM_DUAL_MB_FEW;
	return MEM_DUAL_OK;
}

/* The stage's input: what a pipeline stage receives and sends, one
 * micro-batch of the first body layer's input ([b, s / tp, h] under
 * sequence parallelism). */
static uint64_t stage_io_bytes(const struct mem_job *job)
{
	for (size_t b = 0; b < job->nblocks; b++)
		if (job->blocks[b].is_body && job->blocks[b].nlayers)
			return mem_round(job, job->blocks[b].layers[0].input_bytes);
	return 0;
}

/* torch/distributed/pipelining/stage.py PipelineStage._prepare_forward_infra
 * makes one activation receive buffer per micro-batch for every stage but
 * the first, _prepare_backward_infra one gradient receive buffer per
 * micro-batch for every stage but the last; both stay allocated across
 * steps. The buffers of the micro-batches in flight are the inputs their
 * first layer saves anyway: only the others add. */
uint64_t mem_pp_recv_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks)
{
	uint64_t m = job->micro_batches, v = mem_chunks_per_stage(job), act, grad;

	if (!job->pp_stage_buffers || job->pp <= 1 || mem_pp_dual(job->schedule))
		return 0;
	act = mem_mul(ovf, m, v);
	grad = act;
	if (stage == 0)
		act = mem_sub(act, m);
	if (stage == job->pp - 1)
		grad = mem_sub(grad, m);
	return mem_mul(ovf, mem_add(ovf, mem_sub(act, chunks), grad), stage_io_bytes(job));
}

/* stage.py stage_backward returns each input's `.grad`: the gradient stays
 * on its receive buffer until the next step's clear_runtime_states. A later
 * micro-batch's backward, with `chunks` forwards in flight, follows the
 * backwards of all the others that are not: those gradients are live (none
 * on the first stage, whose input is the token ids). */
uint64_t mem_pp_input_grad_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks)
{
	uint64_t m = job->micro_batches, act;

	if (!job->pp_stage_buffers || job->pp <= 1 || mem_pp_dual(job->schedule))
		return 0;
	act = mem_mul(ovf, m, mem_chunks_per_stage(job));
	if (stage == 0)
		act = mem_sub(act, m);
	return mem_mul(ovf, mem_sub(act, chunks), stage_io_bytes(job));
}

/* _PipelineStageBase.forward_one_chunk keeps each micro-batch's stage
 * output in fwd_cache until its backward_one_chunk: one per chunk forward
 * in flight, but the last stage's, which is the logits (the loss region).
 * Under interleaving the last stage's other chunks still send theirs. */
uint64_t mem_pp_output_bytes(bool *ovf, const struct mem_job *job, uint32_t stage, uint64_t chunks)
{
	if (!job->pp_stage_buffers || job->pp <= 1 || mem_pp_dual(job->schedule))
		return 0;
	if (stage == job->pp - 1)
		chunks = mem_chunks_per_stage(job) > 1 ? mem_sub(chunks, 1) : 0;
	return mem_mul(ovf, chunks, stage_io_bytes(job));
}

/* The last stage's outputs kept by step(): forward_one_chunk appends each
 * micro-batch's output to output_chunks (on the last stage only since
 * pytorch/pytorch#153383, on every stage before), and step() returns
 * _merge_outputs(output_chunks) after the last backward, unless called with
 * return_outputs=False; backward_one_chunk only detaches it (#138504).  So
 * each micro-batch's logits stay from its forward to the end of the step.
 * @t, @s: one micro-batch's, made as a transient of the head / saved by it. */
static bool kept_outputs(bool *ovf, const struct mem_ctx *cx, const struct mem_stage *st, uint64_t *t,
			 uint64_t *s)
{
	const struct mem_job *job = cx->job;

	*t = *s = 0;
	if (!job->pp_return_outputs || job->pp <= 1 || st->index != job->pp - 1 || mem_pp_dual(job->schedule))
		return false;
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct mem_block *blk = &job->blocks[st->segs[i].block];

		for (size_t j = 0; !blk->is_body && j < blk->nlayers; j++) {
			*t = mem_add(ovf, *t, mem_mul(ovf, mem_round(job, blk->layers[j].output_bytes),
						      st->segs[i].count));
			*s = mem_add(ovf, *s, mem_mul(ovf, mem_round(job, blk->layers[j].output_saved_bytes),
						      st->segs[i].count));
		}
	}
	return true;
}

/* At a later micro-batch, the m - 1 micro-batches' outputs before it, all
 * through it (the last micro-batch is the highest). */
uint64_t mem_pp_kept_outputs(bool *ovf, const struct mem_ctx *cx, const struct mem_stage *st,
			     bool accumulating)
{
	uint64_t t, s;

	if (!accumulating || !kept_outputs(ovf, cx, st, &t, &s))
		return 0;
	return mem_mul(ovf, mem_add(ovf, t, s), cx->job->micro_batches - 1);
}

/* The walked micro-batch's own, at a backward instant: the head made them
 * as a transient of its forward, or saved them to its backward (its saves
 * count them there); kept past both. */
uint64_t mem_pp_own_output(bool *ovf, const struct mem_ctx *cx, const struct mem_stage *st, bool loss_layer)
{
	uint64_t t, s;

	if (!kept_outputs(ovf, cx, st, &t, &s))
		return 0;
	return loss_layer ? t : mem_add(ovf, t, s);
}

/* One rank's DualPipe(V).step, event by event, in its logical phases (0:
 * the chunk with more forwards in flight): stored activations a[] and
 * deferred-W bytes w[] per chunk micro-batch, forwards in flight f[], the
 * FIFO of deferred W passes (WeightGradStore.funcs_queue, one entry per
 * B run with enable_zb). */
struct dual_sim {
	uint64_t a[2], w[2], f[2], held, peak, peak_act;
	unsigned char *q;
	size_t head, tail;
	bool *ovf;
};

static void dual_note(struct dual_sim *s)
{
	uint64_t act = mem_add(s->ovf, mem_mul(s->ovf, s->f[0], s->a[0]), mem_mul(s->ovf, s->f[1], s->a[1]));
	uint64_t all = mem_add(s->ovf, act, s->held);

	if (act > s->peak_act)
		s->peak_act = act;
	if (all > s->peak)
		s->peak = all;
}

/* _forward_chunk: its activations exist once it ran */
static void dual_f(struct dual_sim *s, int p)
{
	s->f[p]++;
	dual_note(s);
}

/* _backward_chunk: the chunk's activations until it ends (its input is
 * dropped after it, `input_chunks[phase][chunk_id] = None`); with enable_zb
 * each Linear's backward has put a closure over its input and grad_output
 * (WeightGradStore.put), all queued by the flush at its end */
static void dual_b(struct dual_sim *s, int p, bool zb)
{
	if (zb) {
		s->q[s->tail++] = (unsigned char)p;
		s->held = mem_add(s->ovf, s->held, s->w[p]);
	}
	dual_note(s);
	s->f[p] = mem_sub(s->f[p], 1);
}

/* _weight_chunk: WeightGradStore.pop runs the oldest queued W */
static void dual_w(struct dual_sim *s)
{
	dual_note(s);
	if (s->head < s->tail)
		s->held = mem_sub(s->held, s->w[s->q[s->head++]]);
}

/* dualpipe.py DualPipe.step over num_half_ranks n, half_rank h and
 * half_num_chunks c (DualPipeV.step: num_ranks, rank, num_chunks, whose
 * step 4 runs c - 2n + h + 1 times); step 4 repeats one state, so two of
 * its iterations stand for all. */
static void dual_step(struct dual_sim *s, uint64_t n, uint64_t h, uint64_t n4)
{
	uint64_t i;

	for (i = 0; i < (n - h - 1) * 2; i++)
		dual_f(s, 0);
	for (i = 0; i < h + 1; i++) {			/* step 2: nF0F1 */
		dual_f(s, 0);
		dual_f(s, 1);
	}
	for (i = 0; i < n - h - 1; i++) {		/* step 3: nB1W1F1 */
		dual_b(s, 1, true);
		dual_w(s);
		dual_f(s, 1);
	}
	for (i = 0; i < (n4 < 2 ? n4 : 2); i++) {	/* step 4: nF0B1F1B0 */
		dual_f(s, 0);
		dual_b(s, 1, false);
		dual_f(s, 1);
		dual_b(s, 0, false);
	}
	for (i = 0; i < n - h - 1; i++) {		/* step 5: nB1F1B0 */
		dual_b(s, 1, false);
		dual_f(s, 1);
		dual_b(s, 0, false);
	}
	for (i = 0; i < h + 1; i++) {			/* step 6: the second half with zero bubble */
		dual_b(s, 1, i > (h + 1) / 2 || (i == (h + 1) / 2 && h % 2 == 1));
		dual_b(s, 0, i >= (h + 1) / 2);
	}
	for (i = 0; i < n - h - 1; i++) {		/* step 7: nWB0 */
		dual_w(s);
		dual_b(s, 0, true);
	}
	for (i = 0; i < h + 1; i++)			/* step 8: nW */
		dual_w(s);
}

/* ScheduleZBVZeroBubble._calculate_single_rank_operations for rank r,
 * chunk 0 its stage r, chunk 1 stage 2pp - 1 - r, over n micro-batches
 * (max(2pp - 1, m)) of which those from m on are dropped. torch's I
 * (stage_backward_input, retain_graph=True) keeps the chunk's graph and adds
 * its Linears' output gradients (param_groups' "grads") until the W
 * (stage_backward_weight): a chunk micro-batch is held from F to W. */
struct zbv_run {
	struct dual_sim *s;
	uint64_t m, f[2], i[2], w[2];
};

static void zbv_act(struct zbv_run *z, int p, char t)
{
	struct dual_sim *s = z->s;
	uint64_t *n = t == 'F' ? z->f : t == 'I' ? z->i : z->w;

	if (n[p]++ >= z->m)
		return;		/* "microbatch_index < self._n_microbatches" */
	if (t == 'F')
		s->f[p]++;
	else if (t == 'I')
		s->held = mem_add(s->ovf, s->held, s->w[p]);
	dual_note(s);
	if (t == 'W') {
		s->held = mem_sub(s->held, s->w[p]);
		s->f[p] = mem_sub(s->f[p], 1);
	}
}

static void zbv_step(struct dual_sim *s, uint64_t pp, uint64_t r, uint64_t n, uint64_t m)
{
	struct zbv_run z = { s, m, { 0 }, { 0 }, { 0 } };
	uint64_t k;

	for (k = 0; k < 2 * (pp - r) - 1; k++)
		zbv_act(&z, 0, 'F');
	for (k = 0; k < r; k++) {
		zbv_act(&z, 1, 'F');
		zbv_act(&z, 0, 'F');
	}
	for (k = 0; k < pp - r; k++) {
		zbv_act(&z, 1, 'F');
		zbv_act(&z, 1, 'I');
		zbv_act(&z, 1, 'W');
	}
	while (z.f[1] < z.f[0] || z.f[0] < n) {		/* stable phase */
		if (z.f[0] < n)
			zbv_act(&z, 0, 'F');
		zbv_act(&z, 0, 'I');
		zbv_act(&z, 0, 'W');
		zbv_act(&z, 1, 'F');
		zbv_act(&z, 1, 'I');
		zbv_act(&z, 1, 'W');
	}
	for (k = 0; k < r; k++) {			/* cool-down: I without W */
		zbv_act(&z, 0, 'I');
		zbv_act(&z, 1, 'I');
	}
	for (k = 0; k < pp - r; k++) {
		zbv_act(&z, 0, 'I');
		zbv_act(&z, 0, 'W');
	}
	while (z.w[1] < z.i[1])
		zbv_act(&z, 1, 'W');
	while (z.w[0] < z.i[0])
		zbv_act(&z, 0, 'W');
}

/* The rank's two chunks have in-flight counts k0 > k1, so the stage's total
 * (one micro-batch of each) and flight (each times its count) give each
 * chunk's share of field f; equal counts (ZBV's middle rank) share evenly. */
static void chunk_shares(const struct mem_stage *st, enum mem_sum_field f, uint64_t k0, uint64_t k1,
			 uint64_t x[2])
{
	uint64_t t = st->total.v[f], fl = st->flight.v[f], base = k1 * t;

	if (k0 <= k1)
		x[0] = t - t / 2;
	else
		x[0] = fl >= base ? (fl - base) / (k0 - k1) : 0;
	x[1] = mem_sub(t, x[0]);
}

/* The rank's two chunks' stored activations (a) and deferred-W bytes (@w) */
static void dual_shares(bool *ovf, const struct mem_stage *st, uint64_t k0, uint64_t k1,
			enum mem_sum_field w, struct dual_sim *s)
{
	uint64_t act[2], off[2], log[2];

	chunk_shares(st, S_STORED_ACT, k0, k1, act);
	chunk_shares(st, S_STORED_OFF, k0, k1, off);
	chunk_shares(st, S_STORED_LOG, k0, k1, log);
	chunk_shares(st, w, k0, k1, s->w);
	for (int p = 0; p < 2; p++)
		s->a[p] = mem_add(ovf, mem_sub(act[p], off[p]), log[p]);
}

/* ScheduleZBVZeroBubble: the excess of its worst point over the in-flight
 * activations' own peak (which the stage's flight counts). */
static uint64_t zbv_deferred(bool *ovf, const struct mem_job *job, const struct mem_stage *st)
{
	uint64_t pp = job->pp, r = st->index, m = job->micro_batches, n = m > 2 * pp - 1 ? m : 2 * pp - 1;
	struct dual_sim s = { .ovf = ovf };

	dual_shares(ovf, st, mem_pp_chunk_flight(job, r), mem_pp_chunk_flight(job, 2 * pp - 1 - r),
		    S_WGRAD_OUT, &s);
	/* the stable phase repeats one state: a few rounds stand for all */
	if (n > 2 * pp + 2) {
		n = 2 * pp + 2;
		m = n;
	}
	zbv_step(&s, pp, r, n, m);
	return s.peak > s.peak_act ? s.peak - s.peak_act : 0;
}

/* ScheduleInterleavedZeroBubble (_get_1f1b_rank_ops with enable_zero_bubble,
 * num_1f1b_microbatches = rank): each steady step's W is that of the I
 * `rank` steps earlier, so at a step's I the rank holds rank + 1 chunk
 * micro-batches' output gradients (capped at its m x vp), the stage's mean
 * chunk each (interleaved: memory.c mem_extra_in_flight). */
static uint64_t zb_interleaved_deferred(bool *ovf, const struct mem_job *job, const struct mem_stage *st)
{
	uint64_t v = mem_chunks_per_stage(job), k = (uint64_t)st->index + 1, g = st->total.v[S_WGRAD_OUT];
	uint64_t cap = mem_mul(ovf, job->micro_batches, v);

	if (k > cap)
		k = cap;
	return mem_mul(ovf, g / v + (g % v != 0), k);
}

uint64_t mem_pp_deferred_w(bool *ovf, const struct mem_job *job, const struct mem_stage *st)
{
	bool v = job->schedule == MEM_PP_DUALPIPEV;
	uint64_t n = v ? job->pp : job->pp / 2, h, c, n4;
	struct dual_sim s = { .ovf = ovf };

	if (job->pp <= 1 || st->index >= job->pp)
		return 0;
	if (job->schedule == MEM_PP_INTERLEAVED_ZB)
		return zb_interleaved_deferred(ovf, job, st);
	if (job->schedule == MEM_PP_ZBV)
		return st->total.v[S_WGRAD_OUT] ? zbv_deferred(ovf, job, st) : 0;
	if (!mem_pp_dual(job->schedule) || !st->total.v[S_WGRAD] || mem_pp_dual_rule(job) != MEM_DUAL_OK)
		return 0;
	h = v ? st->index : (st->index < n ? st->index : job->pp - 1 - st->index);
	c = v ? job->micro_batches : job->micro_batches / 2;
	n4 = mem_sub(c + h + 1, 2 * n);
	/* flights (mem_pp_chunk_flight): 2n - h and h + 1 */
	dual_shares(ovf, st, 2 * n - h, h + 1, S_WGRAD, &s);
	/* each zero-bubble B queues one entry: steps 3, 6 and 7 */
	s.q = malloc(2 * (n + 1));
	if (!s.q) {
		*ovf = true;
		return 0;
	}
	dual_step(&s, n, h, n4);
	free(s.q);
	return s.peak > s.peak_act ? s.peak - s.peak_act : 0;
}

/* FSDP2 under torch.distributed.pipelining: each PipelineStage's module is
 * its own fully_shard root, whose post_backward (reduce-scatter, then
 * reshard) runs after that stage's own last backward (stage.py
 * backward_maybe_with_nosync(last_backward), which schedules.py
 * PipelineScheduleMulti._step_microbatches sets from backward_counter;
 * since pytorch#166449 the REDUCE_GRAD action, _add_reduce_grad puts it
 * just after the stage's last backward).  ScheduleInterleaved1F1B's
 * backward k runs local stage vp - 1 - (k / r) mod vp, r =
 * microbatches_per_round (backward_stage_index): with one round (m <= pp,
 * r = m) each chunk's m backwards run back to back, the last chunk first,
 * so an instant of chunk c holds no gradient of the chunks before it and
 * only the sharded gradient of those after it, which are resharded too. */
bool mem_pp_chunk_scoped(const struct mem_job *job)
{
	return job->fsdp2 && job->fsdp_no_sync && job->schedule == MEM_PP_INTERLEAVED &&
	       mem_chunks_per_stage(job) > 1 && job->micro_batches <= job->pp;
}

/* Stage st as its chunk c alone (segments, totals, body repeats) in *view;
 * *skip: the sums of its segments before chunk c.  False unless
 * mem_pp_chunk_scoped. */
bool mem_pp_chunk_view(const struct mem_job *job, const struct mem_stage *st, uint32_t c,
		       struct mem_stage *view, struct mem_sums *skip)
{
	size_t a = 0, b;

	if (!mem_pp_chunk_scoped(job) || !st->chunk_total || c >= mem_chunks_per_stage(job))
		return false;
	while (a < st->nsegs && st->segs[a].chunk < c)
		a++;
	*view = *st;
	view->segs = st->segs + a;
	view->before = st->before + a;
	view->total = st->chunk_total[c];
	view->body_units = 0;
	for (b = a; b < st->nsegs && st->segs[b].chunk == c; b++)
		if (job->blocks[st->segs[b].block].is_body)
			view->body_units += st->segs[b].count;
	view->nsegs = b - a;
	*skip = a < st->nsegs ? st->before[a] : st->total;
	return true;
}

/* B (sums before a position of the stage) as sums before it in its chunk. */
void mem_pp_chunk_rebase(const struct mem_sums *B, const struct mem_sums *skip, struct mem_sums *out)
{
	for (int f = 0; f < S__COUNT; f++)
		out->v[f] = mem_sub(B->v[f], skip->v[f]);
}

/* Field f of the chunks after chunk c of the view (skip: before it). */
uint64_t mem_pp_chunk_after(const struct mem_stage *st, const struct mem_stage *view,
			    const struct mem_sums *skip, enum mem_sum_field f)
{
	bool ovf = false;

	return mem_sub(st->total.v[f], mem_add(&ovf, skip->v[f], view->total.v[f]));
}

/* The gradient reduce-scatter after chunk c's last backward, the highest
 * over c: chunks up to c gathered, chunk c's accumulated gradients and its
 * reduce_scatter_input, the chunks after c sharded. */
void mem_pp_chunk_reduce(bool *ovf, const struct mem_job *job, const struct mem_stage *st,
			 uint64_t *gath, uint64_t *unsh, uint64_t *fin)
{
	uint64_t best = 0;

	*gath = *unsh = *fin = 0;
	for (uint32_t c = 0; c < mem_chunks_per_stage(job); c++) {
		struct mem_stage view;
		struct mem_sums skip;

		if (!mem_pp_chunk_view(job, st, c, &view, &skip))
			return;
		uint64_t g = mem_add(ovf, skip.v[S_GATH], view.total.v[S_GATH]);
		uint64_t u = mem_add(ovf, view.total.v[S_GACC], mem_fsdp_reduce_extra(&view));
		uint64_t d = mem_pp_chunk_after(st, &view, &skip, S_GFIN);
		uint64_t sum = mem_add(ovf, mem_add(ovf, g, u), d);

		if (c == 0 || sum > best)
			best = sum, *gath = g, *unsh = u, *fin = d;
	}
}
