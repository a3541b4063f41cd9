/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the numeric memory model (analyzer/memory/memory.c, mem_timeline.c):
 * the exact vectors of memory-model.md §13 that concern sharding, pipelines,
 * activations, the timeline and the worked examples, plus folding checks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "analyzer/memory/memory.h"
#include "mem_fixture.h"

/* Bytes per element of one precision regime (§2.1). */
struct regime {
	uint64_t w, g, master, state, step;	/* step: foreach temp per element */
	uint64_t gather, gather_grad;		/* FSDP: unsharded param / grad (+reduce copy) */
};

/* A Llama-shaped model: embedding, L identical blocks, final norm, head, loss. */
struct llama {
	struct mem_param emb, layer[9], norm, head;
	struct mem_layer pre, body, post[3];
	struct mem_block blocks[3];
	struct mem_job job;
};

static void set_param(struct mem_param *p, const char *name, uint64_t numel,
		      const struct regime *r)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->numel = numel;
	p->weight_bytes = r->w * numel;
	p->grad_bytes = r->g * numel;
	p->master_bytes = r->master * numel;
	p->state_bytes = r->state * numel;
	p->step_temp_bytes = r->step * numel;
	p->step_temp_grouped = true;
	p->gather_bytes = r->gather * numel;
	p->gather_grad_bytes = r->gather_grad * numel;
	p->trainable = true;
}

/* V, h, f, kv width; layers L. Activation bytes are set by each test. */
static struct llama *llama_new(uint64_t V, uint64_t h, uint64_t f, uint64_t hkv, uint64_t L,
			       const struct regime *r)
{
	static const char *const names[9] = { "q", "k", "v", "o", "gate", "up", "down",
					      "norm1", "norm2" };
	uint64_t numel[9] = { h * h, h * hkv, h * hkv, h * h, h * f, h * f, h * f, h, h };
	struct llama *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	set_param(&m->emb, "embed", V * h, r);
	for (int i = 0; i < 9; i++)
		set_param(&m->layer[i], names[i], numel[i], r);
	set_param(&m->norm, "final_norm", h, r);
	set_param(&m->head, "lm_head", V * h, r);
	m->pre = (struct mem_layer){ .name = "embedding", .params = &m->emb, .nparams = 1 };
	m->body = (struct mem_layer){ .name = "block", .params = m->layer, .nparams = 9 };
	m->post[0] = (struct mem_layer){ .name = "final_norm", .params = &m->norm, .nparams = 1 };
	m->post[1] = (struct mem_layer){ .name = "lm_head", .params = &m->head, .nparams = 1 };
	m->post[2] = (struct mem_layer){ .name = "loss", .loss_region = true };
	m->blocks[0] = (struct mem_block){ &m->pre, 1, 1, false };
	m->blocks[1] = (struct mem_block){ &m->body, 1, L, true };
	m->blocks[2] = (struct mem_block){ m->post, 3, 1, false };
	mem_fx_job(&m->job, false);
	m->job.blocks = m->blocks;
	m->job.nblocks = 3;
	return m;
}

static const struct regime zero_mixed = { 2, 2, 4, 8, 0, 0, 0 };	/* 16 B/param */

static struct llama *llama2_7b(const struct regime *r)
{
	return llama_new(32000, 4096, 11008, 4096, 32, r);
}

static uint64_t states(const struct mem_class *k)
{
	return k->persistent[MEM_C_WEIGHTS] + k->persistent[MEM_C_GRADIENTS] +
	       k->persistent[MEM_C_OPTIMIZER];
}

/* TV-02 and TV-08: Llama-2-7B, 16 B/param, one GPU. */
static void tv08_llama2_7b_states(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	struct mem_result res;
	struct mem_class k;

	(void)state;
	assert_int_equal(mem_analyze(&m->job, &res), MEM_OK);
	assert_int_equal(res.params_total, 6738415616ull);
	k = res.classes[0];
	mem_result_free(&res);
	assert_int_equal(k.persistent[MEM_C_WEIGHTS], 13476831232ull);
	assert_int_equal(k.persistent[MEM_C_GRADIENTS], 13476831232ull);
	assert_int_equal(k.persistent[MEM_C_OPTIMIZER], 80860987392ull);
	assert_int_equal(states(&k), 107814649856ull);
	free(m);
}

/* TV-09: N = 8, paper forms of ZeRO-1/2/3. */
static void tv09_zero_stages(void **state)
{
	static const enum mem_sharding modes[3] = { MEM_SHARD_ZERO1, MEM_SHARD_ZERO2,
						    MEM_SHARD_ZERO3 };
	static const uint64_t want[3] = { 37061285888ull, 25269058560ull, 13476831232ull };
	struct llama *m = llama2_7b(&zero_mixed);

	(void)state;
	m->job.dp = 8;
	for (int i = 0; i < 3; i++) {
		struct mem_class k;

		m->job.sharding = modes[i];
		k = mem_fx_analyze(&m->job);
		assert_int_equal(states(&k), want[i]);
		assert_int_equal(k.ranks, 8);
		assert_int_equal(k.ncomms, 1);
	}
	free(m);
}

/* §7 offload, TV-09's job (P = 6,738,415,616, N = 8): the host side per
 * rank. Optimizer: fp32 master + Adam m, v + fp32 grads = 16P/8; with the
 * params also their bf16 shard, 18P/8; on NVMe the same bytes go there and
 * the host keeps the staging buffers, 1e9 B (params) + 4 x P/8 x 4 B. */
static void tv09_offload_host(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	struct mem_class k;

	(void)state;
	m->job.dp = 8;
	m->job.sharding = MEM_SHARD_ZERO3;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.host_bytes, 0);
	assert_int_equal(k.nvme_bytes, 0);
	m->job.offload_optimizer = true;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.persistent[MEM_C_OPTIMIZER], 0);
	assert_int_equal(k.host_bytes, 13476831232ull);
	m->job.offload_params = true;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.persistent[MEM_C_WEIGHTS], 0);
	assert_int_equal(k.host_bytes, 15161435136ull);
	assert_int_equal(k.nvme_bytes, 0);
	m->job.offload_optimizer_nvme = m->job.offload_params_nvme = true;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.nvme_bytes, 15161435136ull);
	assert_int_equal(k.host_bytes, 1000000000ull + 16ull * 842301952ull);
	free(m);
}

/* TV-10: ZeRO paper Figure 1, Psi = 7.5e9 in one tensor, N_d = 64. */
static void tv10_zero_figure1(void **state)
{
	static const enum mem_sharding modes[4] = { MEM_SHARD_DDP, MEM_SHARD_ZERO1,
						    MEM_SHARD_ZERO2, MEM_SHARD_ZERO3 };
	static const uint64_t want[4] = { 120000000000ull, 31406250000ull, 16640625000ull,
					  1875000000ull };
	struct mem_param p;
	struct mem_layer l = { .name = "all", .params = &p, .nparams = 1 };
	struct mem_block b = { &l, 1, 1, true };
	struct mem_job j;

	(void)state;
	set_param(&p, "psi", 7500000000ull, &zero_mixed);
	mem_fx_job(&j, false);
	j.blocks = &b;
	j.nblocks = 1;
	j.dp = 64;
	j.no_rounding = true;
	j.grad_as_bucket_view = true;
	for (int i = 0; i < 4; i++) {
		struct mem_class k;

		j.sharding = modes[i];
		k = mem_fx_analyze(&j);
		assert_int_equal(states(&k), want[i]);
	}
}

/* A stack of n identical layers without parameters (activation-only jobs). */
static struct mem_job act_job(struct mem_layer *l, struct mem_block *b, uint64_t n)
{
	struct mem_job j;

	*b = (struct mem_block){ l, 1, n, true };
	mem_fx_job(&j, false);
	j.blocks = b;
	j.nblocks = 1;
	return j;
}

/* TV-13: Korthikanti per-layer bytes (GPT-3 dims) and 96-layer stage totals. */
static void tv13_korthikanti(void **state)
{
	const uint64_t s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
	uint64_t none = sbh * 34 + 5 * a * s * s * b, tp = sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t;
	uint64_t tpsp = none / t, sel = sbh * 34 / t;
	struct mem_layer l = { .name = "layer" };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 96);
	struct mem_class k;

	(void)state;
	assert_int_equal(sbh, 25165824);
	assert_int_equal(none, 2868903936ull);
	assert_int_equal(tp, 578813952ull);
	assert_int_equal(tpsp, 358612992ull);
	assert_int_equal(sel, 106954752ull);
	assert_int_equal(2 * sbh, 50331648ull);
	assert_int_equal(2 * sbh / t, 6291456ull);
	l.saves_bytes = tpsp;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 34426847232ull);
	assert_int_equal(k.at_peak[MEM_C_ACTIVATIONS], 34426847232ull);
	l.saves_bytes = sel;
	j.recompute = MEM_RECOMPUTE_SELECTIVE;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 10267656192ull);
}

/* TV-13 through a pipeline: p = 8, 1F1B, m = 8: stage 0 holds 8 micro-batches
 * of 12 layers = the activations of all 96 layers (§4.6). */
static void tv13_pipeline_first_stage(void **state)
{
	struct mem_layer l = { .name = "layer", .saves_bytes = 358612992ull };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 96);
	struct mem_result res;

	(void)state;
	j.pp = 8;
	j.micro_batches = 8;
	assert_int_equal(mem_analyze(&j, &res), MEM_OK);
	assert_int_equal(res.nclasses, 8);
	assert_int_equal(res.classes[0].peak_allocated, 34426847232ull);
	assert_int_equal(res.classes[0].chunks_in_flight, 8);
	assert_int_equal(res.classes[7].peak_allocated, 12 * 358612992ull);
	assert_int_equal(res.classes[3].ranks, 1);
	mem_result_free(&res);
}

/* TV-14: Llama-2-7B HF+FA2 layer, full checkpointing: stored inputs of 32
 * layers plus one recomputed layer at the backward of the last layer. */
static void tv14_full_checkpointing(void **state)
{
	const uint64_t sbh = 16777216, sbf = 45088768, layer = 24 * sbh + 8 * sbf + 4 * 32 * 4096;
	struct mem_layer l = { .name = "block", .saves_bytes = layer, .input_bytes = 2 * sbh };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 32);
	struct mem_class k;

	(void)state;
	assert_int_equal(layer, 763887616ull);
	assert_int_equal(32 * layer, 24444403712ull);
	j.recompute = MEM_RECOMPUTE_FULL;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 1837629440ull);
	assert_int_equal(k.peak.phase, MEM_PHASE_BACKWARD);
	assert_true(k.peak.recompute);
	assert_int_equal(k.peak.unit, 32);
	j.recompute = MEM_RECOMPUTE_NONE;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 24444403712ull);
}

/* TV-17(d): DDP, GPT-2 small fp32: buckets hold every gradient; without
 * gradient_as_bucket_view the param.grad tensors double it (§3.4). */
static void tv17d_ddp_buckets(void **state)
{
	const struct regime fp32 = { 4, 4, 0, 8, 0, 0, 0 };
	struct mem_param p;
	struct mem_layer l = { .name = "gpt2", .params = &p, .nparams = 1 };
	struct mem_block b = { &l, 1, 1, true };
	struct mem_job j;
	struct mem_class k;

	(void)state;
	set_param(&p, "all", 124439808ull, &fp32);
	mem_fx_job(&j, false);
	j.blocks = &b;
	j.nblocks = 1;
	j.dp = 2;
	j.sharding = MEM_SHARD_DDP;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.persistent[MEM_C_BUFFERS], 497759232ull);
	assert_int_equal(k.persistent[MEM_C_GRADIENTS], 497759232ull);
	assert_int_equal(k.at_peak[MEM_C_BUFFERS] + k.at_peak[MEM_C_GRADIENTS], 995518464ull);
	j.grad_as_bucket_view = true;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.persistent[MEM_C_BUFFERS], 0);
	assert_int_equal(k.at_peak[MEM_C_GRADIENTS], 497759232ull);
}

/* TV-17(c): ZeRO-2 IPG buckets while backward runs, x2 with overlap_comm. */
static void tv17c_ipg_buckets(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	struct mem_class k;

	(void)state;
	m->job.dp = 8;
	m->job.sharding = MEM_SHARD_ZERO2;
	m->job.zero_reduce_bucket_bytes = 1000000000ull;
	m->body.saves_bytes = 4ull << 30;	/* make a backward instant the peak */
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.peak.phase, MEM_PHASE_BACKWARD);
	assert_int_equal(k.buffers_at_peak[MEM_B_BUCKETS], 1000000000ull);
	m->job.overlap_comm = true;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.buffers_at_peak[MEM_B_BUCKETS], 2000000000ull);
	free(m);
}

/* TV-21: pipeline factors. */
static void tv21_pipeline_factors(void **state)
{
	(void)state;
	assert_true(mem_pp_interleaved_factor(8, 2) == 1.4375);
	assert_int_equal(mem_pp_micro_batches_in_flight(MEM_PP_INTERLEAVED, 8, 2, 0, 64), 12);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED, 8, 2, 0, 64), 23);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_1F1B, 8, 1, 0, 4), 4);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_1F1B, 4, 1, i, 8), 4 - i);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_GPIPE, 4, 1, 3, 8), 8);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_1F1B, 1, 1, 0, 8), 1);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZB_H1, 4, 1, 0, 8), 4);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZB_H2, 4, 1, 0, 8), 7);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZB_H2, 4, 1, 3, 8), 1);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZB_H2, 4, 1, 0, 5), 5);
}

/* Megatron-Core get_num_layers_to_build: 32 layers, uneven and accounted. */
static void pp_split_megatron(void **state)
{
	struct mem_block b = { NULL, 0, 32, true };
	struct mem_job j = { .blocks = &b, .nblocks = 1, .pp = 3, .vp = 1 };
	uint64_t sl;

	(void)state;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_EVEN);
	j.first_stage_layers = j.last_stage_layers = 10;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_OK);
	assert_int_equal(mem_pp_chunk_layers(&j, 0), 10);
	assert_int_equal(mem_pp_chunk_layers(&j, 1), 12);
	assert_int_equal(mem_pp_chunk_layers(&j, 2), 10);
	j.pp_account_loss = true;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_ACCOUNT);
	j.first_stage_layers = j.last_stage_layers = 0;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_OK);	/* 33 = 3 x 11 */
	assert_int_equal(mem_pp_chunk_layers(&j, 2), 10);
	j.pp = 4;
	j.pp_account_loss = false;
	j.first_stage_layers = 5;
	j.last_stage_layers = 4;	/* 23 over 2 middle stages */
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_MIDDLE);
	j.first_stage_layers = j.last_stage_layers = 9;
	j.schedule = MEM_PP_INTERLEAVED;
	j.vp = 2;			/* 9 / 7 / 7 / 9 in 2 chunks */
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_VP);
	assert_int_equal(sl, 9);
	j.first_stage_layers = 20;
	j.last_stage_layers = 20;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_EDGES);
}

/* parallel { stage_layers }: one entry per model chunk (pp x vp in stage
 * order), adding up to the repeats; empty stages allowed; the derived
 * forms cannot be combined with it. */
static void pp_split_list(void **state)
{
	struct mem_block b = { NULL, 0, 32, true };
	uint64_t list[] = { 4, 12, 12, 4 }, sl;
	struct mem_job j = { .blocks = &b, .nblocks = 1, .pp = 2, .vp = 2, .schedule = MEM_PP_INTERLEAVED,
			     .stage_layers = list, .nstage_layers = 4 };

	(void)state;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_OK);
	assert_int_equal(mem_pp_chunk_layers(&j, 1), 12);
	assert_int_equal(mem_pp_chunk_layers(&j, 3), 4);
	assert_true(mem_pp_stated_split(&j));
	list[0] = 0;
	list[1] = 16;			/* an empty first stage */
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_OK);
	list[1] = 15;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_LIST_SUM);
	assert_int_equal(sl, 31);
	j.nstage_layers = 3;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_LIST_LEN);
	j.nstage_layers = 4;
	list[1] = 16;
	j.pp_account_loss = true;
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_LIST_MIXED);
	j.pp_account_loss = false;
	j.schedule = MEM_PP_1F1B;	/* pp chunks: 2 entries */
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_LIST_LEN);
}

/* DualPipe(V).step, simulated event by event (forward before the backward
 * it is paired with): pp 8, 16 micro-batches: rank i holds pp - i forwards
 * of stage i and i + 1 of stage 7 - i, 9 in all; DualPipeV on 4 ranks (8
 * V stages) holds 2 pp - c of V stage c, 9 per rank; the asserts. */
static void pp_dualpipe(void **state)
{
	struct mem_block b = { NULL, 0, 32, true };
	struct mem_job j = { .blocks = &b, .nblocks = 1, .pp = 8, .vp = 1, .micro_batches = 16,
			     .schedule = MEM_PP_DUALPIPE };
	uint32_t r[2];
	uint64_t sl;

	(void)state;
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_DUALPIPE, 8, 1, i, 16), 9);
	assert_int_equal(mem_pp_micro_batches_in_flight(MEM_PP_DUALPIPE, 8, 1, 3, 16), 9);
	assert_int_equal(mem_pp_chunk_ranks(&j, 2, r), 2);
	assert_int_equal(r[0], 2);
	assert_int_equal(r[1], 5);
	assert_int_equal(mem_pp_chunk_flight(&j, 0), 8);
	assert_int_equal(mem_pp_chunk_flight(&j, 7), 1);
	assert_int_equal(mem_pp_model_chunks(&j), 8);
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_OK);
	assert_int_equal(mem_pp_chunk_layers(&j, 5), 4);
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_OK);
	j.micro_batches = 15;
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_MB_ODD);
	j.micro_batches = 14;
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_MB_FEW);
	j.pp = 7;
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_PP_ODD);
	j.schedule = MEM_PP_DUALPIPEV;
	j.pp = 4;
	j.micro_batches = 9;		/* DualPipeV: odd is fine, >= 2 pp */
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_OK);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_DUALPIPEV, 4, 1, 1, 9), 9);
	assert_int_equal(mem_pp_micro_batches_in_flight(MEM_PP_DUALPIPEV, 4, 1, 1, 9), 7);
	assert_int_equal(mem_pp_model_chunks(&j), 8);
	assert_int_equal(mem_pp_chunk_ranks(&j, 6, r), 1);
	assert_int_equal(r[0], 1);
	assert_int_equal(mem_pp_chunk_flight(&j, 6), 2);
	assert_int_equal(mem_pp_chunk_layers(&j, 6), 4);	/* 32 over 8 V stages */
	/* ScheduleZBVZeroBubble's action lists: the V of DualPipeV, stage c < pp
	 * min(2pp - 1 - c, m) from F to W, stage c >= pp min(2pp - c, m); no
	 * micro-batch rule (it runs max(2pp - 1, m) and drops the rest) */
	j.schedule = MEM_PP_ZBV;
	j.micro_batches = 8;
	assert_int_equal(mem_pp_model_chunks(&j), 8);
	assert_int_equal(mem_pp_chunk_ranks(&j, 6, r), 1);
	assert_int_equal(r[0], 1);
	assert_int_equal(mem_pp_chunk_flight(&j, 0), 7);
	assert_int_equal(mem_pp_chunk_flight(&j, 1), 6);
	assert_int_equal(mem_pp_chunk_flight(&j, 6), 2);
	assert_int_equal(mem_pp_chunk_flight(&j, 7), 1);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZBV, 4, 1, 1, 8), 8);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_ZBV, 4, 1, 0, 3), 4);
	assert_int_equal(mem_pp_micro_batches_in_flight(MEM_PP_ZBV, 4, 1, 1, 8), 6);
	j.micro_batches = 3;
	assert_int_equal(mem_pp_dual_rule(&j), MEM_DUAL_OK);
	assert_int_equal(mem_pp_chunk_flight(&j, 1), 3);
	/* ScheduleInterleavedZeroBubble: vp x pp chunk forwards await their W
	 * on every stage (Interleaved1F1B: 2(pp - i - 1) + (vp - 1)pp + 1) */
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED_ZB, 4, 2, 0, 8), 8);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED_ZB, 4, 2, 3, 8), 8);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED, 4, 2, 0, 8), 11);
	/* Megatron's microbatch_group_size_per_vp_stage g: 2(pp - i - 1) +
	 * (vp - 1) g + 1, capped at m x vp (g = pp: the above) */
	assert_int_equal(mem_pp_chunks_in_flight_group(MEM_PP_INTERLEAVED, 4, 2, 4, 1, 12), 9);
	assert_int_equal(mem_pp_chunks_in_flight_group(MEM_PP_INTERLEAVED, 4, 2, 6, 1, 12), 11);
	assert_int_equal(mem_pp_chunks_in_flight_group(MEM_PP_INTERLEAVED, 4, 2, 12, 1, 12), 17);
	assert_int_equal(mem_pp_chunks_in_flight_group(MEM_PP_INTERLEAVED, 4, 2, 6, 0, 6), 12);
	assert_int_equal(mem_pp_micro_batches_in_flight(MEM_PP_INTERLEAVED_ZB, 4, 2, 0, 8), 4);
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED_ZB, 8, 3, 0, 2), 6);
	b.repeat = 36;			/* 36 over 4 ranks, not over 8 V stages */
	assert_int_equal(mem_pp_split(&j, &sl), MEM_SPLIT_EVEN);
}

/* Logits live in the last chunk: pp 4, vp 5, 17 forwards of the last stage
 * hold one micro-batch's, all 4 x 5 x 2 = 40 (m = 8 in warm-up) hold 8. */
static void pp_logits_last_chunk(void **state)
{
	struct mem_job j = { .pp = 4, .vp = 5, .schedule = MEM_PP_INTERLEAVED, .micro_batches = 8 };
	bool ovf = false;

	(void)state;
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 17), 0);
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 40), 7000);
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 21), 3000);
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 37), 4000);
	/* pp 8, vp 2, the last stage's 9 (Interleaved1F1B's (vp - 1) pp + 1):
	 * one micro-batch, its own (the mean-chunk rule's extra was 3.5); the
	 * interleaved zero bubble's vp x pp = 16: pp = 8, 7 extra */
	j.pp = 8;
	j.vp = 2;
	assert_int_equal(mem_pp_chunks_in_flight(MEM_PP_INTERLEAVED, 8, 2, 7, 8), 9);
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 9), 0);
	j.schedule = MEM_PP_INTERLEAVED_ZB;
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 16), 7000);
	j.pp = 4;
	j.vp = 5;
	j.schedule = MEM_PP_1F1B;
	assert_int_equal(mem_extra_logits_in_flight(&ovf, &j, 1000, 3), 2000);
	assert_false(ovf);
}

/* TV-21 through the analyzer: 1F1B p = 8, m = 4 -> stage 0 holds 4
 * micro-batches of L/8 layers = half the model's activations. */
static void tv21_first_stage_activations(void **state)
{
	struct mem_layer l = { .name = "layer", .saves_bytes = 1ull << 20 };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 64);
	struct mem_result res;

	(void)state;
	j.pp = 8;
	j.micro_batches = 4;
	assert_int_equal(mem_analyze(&j, &res), MEM_OK);
	assert_int_equal(res.classes[0].peak_allocated, 32ull << 20);
	/* stages 4..7 hold min(p - i, 4) = 4, 3, 2, 1: stages 0-4 merge into one class */
	assert_int_equal(res.nclasses, 4);
	assert_int_equal(res.classes[0].nstages, 5);
	assert_int_equal(res.classes[0].ranks, 5);
	mem_result_free(&res);
	j.schedule = MEM_PP_INTERLEAVED;
	j.vp = 2;
	j.micro_batches = 64;
	assert_int_equal(mem_analyze(&j, &res), MEM_OK);
	/* 23 chunks of 4 layers = 1.4375 x 64 layers */
	assert_int_equal(res.classes[0].peak_allocated, 92ull << 20);
	mem_result_free(&res);
}

/* Example A (TV-23): Llama-2-7B, pure bf16, AdamW bf16 state, FA2, full
 * checkpointing, s = 4096, b = 1. */
static struct llama *example_a(uint64_t step)
{
	const struct regime bf16 = { 2, 2, 0, 4, step, 0, 0 };
	const uint64_t sbV = 4096ull * 32000;
	struct llama *m = llama2_7b(&bf16);

	m->body.saves_bytes = 763887616ull;
	m->body.input_bytes = 2ull * 4096 * 4096;
	m->post[2].saves_bytes = 6 * sbV;	/* bf16 logits + fp32 log-probs (§4.4) */
	m->post[2].temp_fwd_bytes = 4 * sbV;	/* fp32 upcast */
	m->post[2].temp_bwd_bytes = 8 * sbV;	/* two fp32 gradients */
	m->job.recompute = MEM_RECOMPUTE_FULL;
	return m;
}

static void tv23_example_a_foreach(void **state)
{
	struct llama *m = example_a(2);
	struct mem_class k;

	(void)state;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.peak_allocated, 67384156160ull);
	assert_int_equal(k.peak.phase, MEM_PHASE_OPTIMIZER);
	assert_int_equal(k.buffers_at_peak[MEM_B_STEP_TEMPS], 13476831232ull);
	/* the start-of-backward loss peak of TV-23 */
	assert_int_equal(k.phase_peak[MEM_PHASE_LOSS], 43339243520ull);
	/* same with rounding on: every tensor is a multiple of 512 B */
	m->job.no_rounding = true;
	assert_int_equal(mem_fx_analyze(&m->job).peak_allocated, 67384156160ull);
	free(m);
}

/* Fused AdamW: the end of backward dominates.  memory-model.md's candidate
 * W + S + G + A_layer = 54,671,212,544 counts every gradient (the embedding's
 * too) during the recomputed first layer; the timeline counts the gradients
 * produced so far (all but the embedding's 262,144,000 B) and the stored
 * input of that layer (33,554,432 B): 54,442,622,976. */
static void tv23_example_a_fused(void **state)
{
	struct llama *m = example_a(0);
	struct mem_class k;

	(void)state;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.peak_allocated, 54671212544ull - 262144000ull + 33554432ull);
	assert_true(k.peak_allocated <= 54671212544ull);
	assert_int_equal(k.peak.phase, MEM_PHASE_BACKWARD);
	assert_int_equal(k.peak.unit, 1);
	assert_int_equal(k.phase_peak[MEM_PHASE_OPTIMIZER], 53907324928ull);
	free(m);
}

/* optimizer_in_bwd: Example A with each parameter stepped in its own
 * backward. No optimizer-step instant exists and at no instant do more
 * than one layer's gradients exist, so the peak falls from the fused run's
 * end of backward (all gradients) to the start-of-backward loss region
 * (TV-23's 43,339,243,520 B) plus at most the head's own gradient. */
static void optimizer_in_backward(void **state)
{
	struct llama *m = example_a(2);
	struct mem_class k;
	uint64_t fused_peak;

	(void)state;
	m->job.optimizer_in_backward = true;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.phase_peak[MEM_PHASE_OPTIMIZER], 0);
	assert_true(k.peak.phase != MEM_PHASE_OPTIMIZER);
	/* the gradients at the peak are one layer's at most (202,383,360 params x 2 B) */
	assert_true(k.at_peak[MEM_C_GRADIENTS] <= 262144000ull);
	fused_peak = 54671212544ull - 262144000ull + 33554432ull;
	assert_true(k.peak_allocated < fused_peak);
	assert_true(k.peak_allocated >= 43339243520ull);
	assert_true(k.peak_allocated <= 43339243520ull + 262144000ull);
	free(m);
}

/* Example B (TV-24): Llama-3-8B, FSDP per block + root, 8 GPUs, bf16 compute,
 * fp32 master/reduce, AdamW, FA2, full checkpointing, s = 8192, b = 1. */
static struct llama *example_b(void)
{
	const struct regime fsdp = { 4, 4, 0, 8, 0, 2, 6 };
	const uint64_t sbV = 8192ull * 128256, sbh = 8192ull * 4096;
	struct llama *m = llama_new(128256, 4096, 14336, 1024, 32, &fsdp);

	m->body.saves_bytes = 1645215744ull;
	m->body.input_bytes = 2 * sbh;
	m->post[2].saves_bytes = 6 * sbV;
	m->post[2].temp_fwd_bytes = 4 * sbV;
	m->post[2].temp_bwd_bytes = 8 * sbV;
	m->job.recompute = MEM_RECOMPUTE_FULL;
	m->job.sharding = MEM_SHARD_FSDP_FULL;
	m->job.dp = 8;
	return m;
}

static void tv24_example_b(void **state)
{
	struct llama *m = example_b();
	struct mem_class k;

	(void)state;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.peak_allocated, 31439878144ull);
	assert_int_equal(k.peak.phase, MEM_PHASE_LOSS);
	assert_true(k.peak.backward_pass);
	assert_int_equal(k.at_peak[MEM_C_WEIGHTS] + k.at_peak[MEM_C_OPTIMIZER], 12045391872ull);
	assert_int_equal(k.buffers_at_peak[MEM_B_GATHERED], 2101354496ull + 436224000ull);
	assert_int_equal(k.at_peak[MEM_C_ACTIVATIONS], 2147483648ull);
	assert_int_equal(k.at_peak[MEM_C_LOGITS], 14709424128ull);
	m->job.micro_batches = 2;	/* sharded grads resident */
	k = mem_fx_analyze(&m->job);
	assert_int_equal(k.peak_allocated, 35455008768ull);
	assert_true(k.peak.accumulating);
	free(m);
}

/* Three figures: reserved = allocated x frag rounded to 2 MiB; device adds
 * context, cuBLAS and one NCCL communicator per parallel group. */
static void figures_reserved_and_device(void **state)
{
	struct mem_layer l = { .name = "layer", .saves_bytes = 1000ull << 20 };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 10);
	struct mem_class k;

	(void)state;
	j.frag_factor = 0;	/* default 1.10 */
	j.dp = 4;
	j.tp = 2;
	j.cuda_context_bytes = 500ull << 20;
	j.cublas_workspace_bytes = 33554432;
	j.nccl_bytes_per_comm = 512ull << 20;
	j.capacity_bytes = 80ull << 30;
	j.headroom = 0.10;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 10000ull << 20);
	assert_int_equal(k.peak_reserved, 11000ull << 20);
	assert_int_equal(k.ncomms, 3);		/* world (split by tp), dp, tp */
	assert_int_equal(k.device_total, (11000ull + 500 + 32 + 1536) << 20);
	assert_int_equal(k.at_peak[MEM_C_OVERHEAD], k.device_total - k.peak_allocated);
	assert_int_equal(k.ranks, 8);
	assert_true(k.fits);
	assert_true(k.fits_headroom);
	assert_true(k.headroom > 0.840 && k.headroom < 0.841);
	assert_non_null(strstr(k.explain[MEM_C_OVERHEAD], "NCCL 1,610,612,736 (3 comms)"));
}

/* A folded repeat gives exactly the unrolled answer. */
static void check_fold(struct mem_job *j, struct mem_block *folded, struct mem_block *unrolled,
		       size_t n)
{
	struct mem_result a, b;

	j->blocks = folded;
	j->nblocks = 3;
	assert_int_equal(mem_analyze(j, &a), MEM_OK);
	j->blocks = unrolled;
	j->nblocks = n + 2;
	assert_int_equal(mem_analyze(j, &b), MEM_OK);
	assert_int_equal(a.nclasses, b.nclasses);
	for (size_t i = 0; i < a.nclasses; i++) {
		assert_int_equal(a.classes[i].peak_allocated, b.classes[i].peak_allocated);
		assert_memory_equal(a.classes[i].at_peak, b.classes[i].at_peak,
				    sizeof(a.classes[i].at_peak));
		assert_int_equal(a.classes[i].peak.phase, b.classes[i].peak.phase);
		assert_int_equal(a.classes[i].peak.unit, b.classes[i].peak.unit);
		assert_int_equal(a.classes[i].peak.layer, b.classes[i].peak.layer);
	}
	mem_result_free(&a);
	mem_result_free(&b);
}

static void folded_equals_unrolled(void **state)
{
	static const enum mem_sharding modes[] = {
		MEM_SHARD_NONE, MEM_SHARD_DDP, MEM_SHARD_ZERO1, MEM_SHARD_ZERO2, MEM_SHARD_ZERO3,
		MEM_SHARD_FSDP_FULL, MEM_SHARD_FSDP_GRAD_OP,
	};
	const struct regime r = { 2, 2, 4, 8, 4, 2, 6 };
	enum { N = 8 };
	struct mem_param pp[4];
	struct mem_layer pre, post, body[2];
	struct mem_block folded[3], unrolled[N + 2];
	struct mem_job j;

	(void)state;
	set_param(&pp[0], "emb", 5000, &r);
	set_param(&pp[1], "w1", 3000, &r);
	set_param(&pp[2], "w2", 7000, &r);
	set_param(&pp[3], "head", 5000, &r);
	pp[2].cast_bytes = 700;
	pp[2].cast_saved = true;
	pre = (struct mem_layer){ .name = "pre", .params = &pp[0], .nparams = 1, .saves_bytes = 100 };
	body[0] = (struct mem_layer){ .name = "a", .params = &pp[1], .nparams = 1,
				      .saves_bytes = 9000, .input_bytes = 1000, .temp_bwd_bytes = 40000 };
	body[1] = (struct mem_layer){ .name = "b", .params = &pp[2], .nparams = 1,
				      .saves_bytes = 20000, .temp_fwd_bytes = 50000 };
	post = (struct mem_layer){ .name = "loss", .params = &pp[3], .nparams = 1,
				   .saves_bytes = 30000, .temp_bwd_bytes = 60000, .loss_region = true };
	folded[0] = (struct mem_block){ &pre, 1, 1, false };
	folded[1] = (struct mem_block){ body, 2, N, true };
	folded[2] = (struct mem_block){ &post, 1, 1, false };
	unrolled[0] = folded[0];
	for (int i = 0; i < N; i++)
		unrolled[1 + i] = (struct mem_block){ body, 2, 1, true };
	unrolled[N + 1] = folded[2];
	mem_fx_job(&j, false);
	j.dp = 4;
	j.zero_reduce_bucket_bytes = 4096;
	j.zero_prefetch_bytes = 8192;
	for (size_t mi = 0; mi < sizeof(modes) / sizeof(modes[0]); mi++) {
		for (int rc = 0; rc < 3; rc += 2) {
			for (uint64_t mb = 1; mb <= 2; mb++) {
				j.sharding = modes[mi];
				j.recompute = (enum mem_recompute)rc;
				j.micro_batches = mb;
				j.pp = 1;
				check_fold(&j, folded, unrolled, N);
				j.pp = 2;
				check_fold(&j, folded, unrolled, N);
			}
		}
	}
	/* FSDP2 (mem_fsdp.c): reshard_after_forward True / False / 2, without
	 * gradient sync, without reshard after backward, a split root */
	j.sharding = MEM_SHARD_FSDP_FULL;
	for (uint32_t rt = 0; rt <= 2; rt++)
		for (unsigned fl = 0; fl < 8; fl++)
			for (int rc = 0; rc < 3; rc += 2)
				for (uint64_t mb = 1; mb <= 2; mb++) {
					j.fsdp_reshard_to = rt;
					j.fsdp_no_sync = fl & 1;
					j.fsdp_keep_after_backward = fl & 2;
					j.fsdp_split_root = fl & 4;
					j.recompute = (enum mem_recompute)rc;
					j.micro_batches = mb;
					j.pp = 1;
					check_fold(&j, folded, unrolled, N);
					j.pp = 2;
					check_fold(&j, folded, unrolled, N);
				}
}

/* AMP weight casts (§2.1) under full recompute: autocast's cast cache holds
 * every recomputed layer's cast until the forward pass ends, so the forward
 * end carries all N of them; in backward each recomputed layer casts again
 * transiently (one at a time). Without recompute they are saved for backward
 * and all N are live at the start of backward too. Weights 4 B, cast 2 B per
 * element, frozen, no rounding: forward end = N x ((4 + 2) x numel + input). */
static void amp_cast_cache_under_recompute(void **state)
{
	enum { N = 10 };
	const uint64_t numel = 1000;
	struct mem_param p = { .name = "w", .numel = numel, .weight_bytes = 4 * numel,
			       .cast_bytes = 2 * numel, .cast_saved = true };
	struct mem_layer l = { .name = "layer", .params = &p, .nparams = 1,
			       .saves_bytes = 512, .input_bytes = 64 };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, N);
	struct mem_class k;

	(void)state;
	j.no_rounding = true;
	j.recompute = MEM_RECOMPUTE_FULL;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak.phase, MEM_PHASE_FORWARD);
	assert_int_equal(k.peak_allocated, N * 6 * numel + N * 64);	/* saves are not kept */
	assert_int_equal(k.buffers_at_peak[MEM_B_CASTS], N * 2 * numel);
	j.recompute = MEM_RECOMPUTE_NONE;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.buffers_at_peak[MEM_B_CASTS], N * 2 * numel);
	assert_int_equal(k.peak_allocated, N * 6 * numel + N * 512);
}

/* 10^9 repeats cost the same as four: forward end = 10^9 x 512 B. */
static void billion_repeats_are_instant(void **state)
{
	struct mem_layer l = { .name = "tiny", .saves_bytes = 512 };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 1000000000ull);
	struct mem_class k;

	(void)state;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 512000000000ull);
	assert_int_equal(k.peak.unit, 1000000000ull);
}

static void errors(void **state)
{
	struct mem_layer l = { .name = "layer", .saves_bytes = 512 };
	struct mem_block blk;
	struct mem_job j = act_job(&l, &blk, 32);
	struct mem_result res;

	(void)state;
	j.pp = 3;
	assert_int_equal(mem_analyze(&j, &res), MEM_E_PP_UNEVEN);
	assert_null(res.classes);
	j.pp = 4;
	j.schedule = MEM_PP_INTERLEAVED;
	j.vp = 3;
	assert_int_equal(mem_analyze(&j, &res), MEM_E_PP_UNEVEN);
	j.vp = 2;
	j.micro_batches = 6;	/* interleaving needs a multiple of pp */
	assert_int_equal(mem_analyze(&j, &res), MEM_E_PP_MICRO_BATCHES);
	j.micro_batches = 8;
	assert_int_equal(mem_analyze(&j, &res), MEM_OK);
	mem_result_free(&res);
	j.dp = 0;
	assert_int_equal(mem_analyze(&j, &res), MEM_E_INVALID);
	j.dp = 12;
	j.pp = 1;
	j.sharding = MEM_SHARD_FSDP_HYBRID;
	j.gpus_per_node = 8;
	assert_int_equal(mem_analyze(&j, &res), MEM_E_HYBRID_GROUP);
	j.sharding = MEM_SHARD_NONE;
	l.saves_bytes = UINT64_MAX / 8;
	assert_int_equal(mem_analyze(&j, &res), MEM_E_OVERFLOW);
	assert_string_equal(mem_status_str(MEM_E_PP_UNEVEN),
			    "body layers cannot be split over the pipeline stages");
}

/* The shard groups: dp_shard x cp for dense params, dp_shard x cp x tp /
 * (ep x etp) for experts (Megatron, DeepSpeed-MoE, torchtitan agree). */
static void sharding_groups(void **state)
{
	struct mem_job j;

	(void)state;
	mem_fx_job(&j, false);
	j.dp = 2;
	j.cp = 4;
	assert_int_equal(mem_shard_group(&j), 8);
	mem_fx_job(&j, false);
	j.dp = 16;
	j.dp_shard = 8;
	assert_int_equal(mem_shard_group(&j), 8);
	j.dp_shard = 0;
	j.sharding = MEM_SHARD_FSDP_HYBRID;
	j.gpus_per_node = 8;
	assert_int_equal(mem_shard_group(&j), 8);
	j.tp = 2;	/* a node holds 8 / 2 dp ranks */
	assert_int_equal(mem_shard_group(&j), 4);
	j.tp = 16;	/* a tp group wider than the node: one dp rank */
	assert_int_equal(mem_shard_group(&j), 1);
	j.tp = 1;
	j.sharding = MEM_SHARD_ZERO1;
	assert_int_equal(mem_shard_group(&j), 16);
	/* Megatron folding: 16 GPUs, tp 2, ep 8, etp 1 -> edp = 16 / 8 = 2 */
	mem_fx_job(&j, false);
	j.dp = 8;
	j.tp = 2;
	j.ep = 8;
	j.etp = 1;
	assert_int_equal(mem_expert_group(&j), 2);
	j.etp = 0;	/* = tp: 16 / 16 */
	assert_int_equal(mem_expert_group(&j), 1);
	j.ep = 3;
	assert_int_equal(mem_expert_group(&j), 0);
	/* DeepSpeed-MoE: dp 8, ep 4 -> 2; torchtitan dp_shard 16 of 32, ep 8 -> 2 */
	mem_fx_job(&j, false);
	j.dp = 8;
	j.ep = 4;
	assert_int_equal(mem_expert_group(&j), 2);
	j.dp = 32;
	j.dp_shard = 16;
	j.ep = 8;
	assert_int_equal(mem_expert_group(&j), 2);
}

/* Llama-2-7B ZeRO-3 on 8 GPUs as dp 2 x cp 4: the TV-09 N = 8 states. */
static void cp_inside_shard_group(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	struct mem_class k;

	(void)state;
	m->job.dp = 2;
	m->job.cp = 4;
	m->job.sharding = MEM_SHARD_ZERO3;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(states(&k), 13476831232ull);
	assert_int_equal(k.ncomms, 2);		/* dp x cp and cp */
	m->job.dp = 1;
	m->job.cp = 8;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(states(&k), 13476831232ull);
	assert_int_equal(k.ncomms, 2);		/* dp x cp is 8 even with dp 1 */
	free(m);
}

/* Gate/up/down as experts, ep = dp = 8: each GPU holds its experts whole
 * (edp = 1), the dense rest shards over 8. */
static void expert_params_shard_over_expert_group(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	uint64_t expert = 32ull * 3 * 4096 * 11008, dense = 6738415616ull - expert;
	struct mem_result res;
	struct mem_class k;

	(void)state;
	for (int i = 4; i < 7; i++)
		m->layer[i].expert = true;
	m->job.dp = 8;
	m->job.ep = 8;
	m->job.sharding = MEM_SHARD_ZERO3;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(states(&k), 16 * dense / 8 + 16 * expert);
	assert_int_equal(k.ncomms, 2);		/* dp and ep; the expert group is one rank */
	m->job.dp = 16;
	k = mem_fx_analyze(&m->job);
	assert_int_equal(states(&k), 16 * dense / 16 + 16 * expert / 2);
	assert_int_equal(k.ncomms, 3);		/* + the expert data parallel group */
	m->job.dp_shard = 8;			/* HSDP: 8 x 2 replicas, experts over 1 */
	k = mem_fx_analyze(&m->job);
	assert_int_equal(states(&k), 16 * dense / 8 + 16 * expert);
	assert_int_equal(k.ncomms, 3);		/* dp, ep, replicate */
	m->job.dp_shard = 3;
	assert_int_equal(mem_analyze(&m->job, &res), MEM_E_HYBRID_GROUP);
	m->job.dp_shard = 0;
	m->job.ep = 32;
	assert_int_equal(mem_analyze(&m->job, &res), MEM_E_EXPERT_GROUP);
	assert_null(res.classes);
	free(m);
}

static void explain_strings(void **state)
{
	struct llama *m = llama2_7b(&zero_mixed);
	struct mem_class k;

	(void)state;
	m->job.dp = 8;
	m->job.sharding = MEM_SHARD_ZERO3;
	m->job.no_explain = true;	/* never printed: not formatted */
	k = mem_fx_analyze(&m->job);
	assert_string_equal(k.explain[MEM_C_WEIGHTS], "");
	assert_string_equal(k.explain_peak, "");
	m->job.no_explain = false;
	k = mem_fx_analyze(&m->job);
	assert_non_null(strstr(k.explain[MEM_C_WEIGHTS], "13,476,831,232 B for 6,738,415,616 params"));
	assert_non_null(strstr(k.explain[MEM_C_WEIGHTS], "group (§3.1, §3.3), = 1,684,603,904 B (ZeRO-3)"));
	/* no activations: the running unit's gathered params + unsharded grads win */
	assert_string_equal(k.explain_peak,
			    "peak allocated 14,203,000,832 B in backward, layer 1 ('block')");
	assert_non_null(strstr(k.explain[MEM_C_BUFFERS], "gathered 404,766,720 + unsharded grads "
						       "404,766,720"));
	assert_string_equal(mem_component_name(MEM_C_LOGITS), "logits+loss");
	assert_string_equal(mem_phase_name(MEM_PHASE_OPTIMIZER), "optimizer step");
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tv08_llama2_7b_states),
		cmocka_unit_test(tv09_zero_stages),
		cmocka_unit_test(tv09_offload_host),
		cmocka_unit_test(tv10_zero_figure1),
		cmocka_unit_test(tv13_korthikanti),
		cmocka_unit_test(tv13_pipeline_first_stage),
		cmocka_unit_test(tv14_full_checkpointing),
		cmocka_unit_test(tv17c_ipg_buckets),
		cmocka_unit_test(tv17d_ddp_buckets),
		cmocka_unit_test(tv21_pipeline_factors),
		cmocka_unit_test(pp_split_megatron),
		cmocka_unit_test(pp_split_list),
		cmocka_unit_test(pp_dualpipe),
		cmocka_unit_test(pp_logits_last_chunk),
		cmocka_unit_test(tv21_first_stage_activations),
		cmocka_unit_test(tv23_example_a_foreach),
		cmocka_unit_test(tv23_example_a_fused),
		cmocka_unit_test(optimizer_in_backward),
		cmocka_unit_test(tv24_example_b),
		cmocka_unit_test(figures_reserved_and_device),
		cmocka_unit_test(folded_equals_unrolled),
		cmocka_unit_test(amp_cast_cache_under_recompute),
		cmocka_unit_test(billion_repeats_are_instant),
		cmocka_unit_test(errors),
		cmocka_unit_test(explain_strings),
		cmocka_unit_test(sharding_groups),
		cmocka_unit_test(cp_inside_shard_group),
		cmocka_unit_test(expert_params_shard_over_expert_group),
	};
	return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
