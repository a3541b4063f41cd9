/* SPDX-License-Identifier: MIT */
/*
 * test_mem_comm.c - NCCL's per-communicator buffers (analyzer/memory/mem_comm.c)
 * against the sizes NCCL computes, and the communicators a job creates.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "analyzer/memory/mem_internal.h"
#include "analyzer/memory/memory.h"

/* One connection's FIFOs at NCCL's defaults: LL 8 x 512 x 8 x 16 = 524,288
 * + LL128 120 x 640 x 8 x 8 = 4,915,200 + SIMPLE 4,194,304 = 9,633,792 B. */
#define CONN 9633792ull

static void defaults_per_kind(void **state)
{
	struct mem_nccl n;
	bool ovf = false;

	(void)state;
	memset(&n, 0, sizeof(n));
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_COLLECTIVE, 1, &ovf), 0);
	/* 16 ring channels, one receive connection each */
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_COLLECTIVE, 8, &ovf), 16 * CONN);
	/* a pipeline: two neighbours (one with two stages) x 2 channels */
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_P2P_RING, 2, &ovf), 2 * CONN);
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_P2P_RING, 4, &ovf), 4 * CONN);
	/* all-to-all over 8: 7 peers x 2 channels */
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_ALL_TO_ALL, 8, &ovf), 14 * CONN);
	assert_false(ovf);
}

static void keys_change_the_sizes(void **state)
{
	struct mem_nccl n;
	bool ovf = false;

	(void)state;
	memset(&n, 0, sizeof(n));
	n.buffsize = 1ull << 20;	/* NCCL_BUFFSIZE=1048576 */
	n.nchannels = 8;
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_COLLECTIVE, 8, &ovf),
			 8 * (524288ull + 4915200 + 1048576));
	/* NVLS on 8 ranks of one node: 16 channels x 2 x 128 KiB x 8 steps x 8 heads = 256 MiB */
	n.nvls = true;
	n.local_ranks = 8;
	assert_int_equal(mem_comm_nccl_bytes(&n, MEM_COMM_COLLECTIVE, 16, &ovf),
			 8 * (524288ull + 4915200 + 1048576) + (256ull << 20));
	n.buffsize = UINT64_MAX;
	mem_comm_nccl_bytes(&n, MEM_COMM_COLLECTIVE, 8, &ovf);
	assert_true(ovf);
}

static void job_groups(void **state)
{
	struct mem_job j;
	struct mem_comm_group g[MEM_COMM_MAX_GROUPS];
	bool ovf = false;

	(void)state;
	memset(&j, 0, sizeof(j));
	j.dp = j.tp = j.pp = j.cp = j.ep = 1;
	assert_int_equal(mem_comm_groups(&j, 1, 0, g), 0);
	/* plain data parallel: the default group is the gradient group */
	j.dp = 8;
	assert_int_equal(mem_comm_groups(&j, 1, 0, g), 1);
	/* dp 2 x tp 2 x pp 2: world, dp, tp, pp */
	j.dp = 2;
	j.tp = 2;
	j.pp = 2;
	assert_int_equal(mem_comm_groups(&j, 1, 0, g), 4);
	assert_int_equal(g[0].ranks, 8);
	assert_int_equal(g[3].kind, MEM_COMM_P2P_RING);
	assert_int_equal(mem_comm_total(&j, g, 4, &ovf), 16 * CONN * 3 + 2 * CONN);
	/* a flat figure per communicator wins */
	j.nccl_bytes_per_comm = 512ull << 20;
	assert_int_equal(mem_comm_total(&j, g, 4, &ovf), 2048ull << 20);
	/* all of them: world, dp x cp, tp, pp, cp, ep, replicas, expert dp */
	j.cp = 2;
	j.ep = 2;
	assert_int_equal(mem_comm_groups(&j, 2, 2, g), MEM_COMM_MAX_GROUPS);
	assert_int_equal(g[5].kind, MEM_COMM_ALL_TO_ALL);
	assert_false(ovf);
}

/* A body block of one layer whose input is the SP shard [s / tp, b, h]
 * = 8 MiB, and a non-body layer with a larger input (token ids of the
 * embedding) that no column-parallel linear gathers. */
static void sp_and_symm_workspace(void **state)
{
	struct mem_layer body = { .name = "attn", .input_bytes = 8ull << 20 };
	struct mem_layer emb = { .name = "emb", .input_bytes = 64ull << 20 };
	struct mem_block blocks[2] = {
		{ .layers = &emb, .nlayers = 1, .repeat = 1, .is_body = false },
		{ .layers = &body, .nlayers = 1, .repeat = 32, .is_body = true },
	};
	struct mem_job j;
	bool ovf = false;

	(void)state;
	memset(&j, 0, sizeof(j));
	j.blocks = blocks;
	j.nblocks = 2;
	j.dp = j.tp = j.pp = j.cp = j.ep = 1;
	j.tp = 4;
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 0);
	assert_int_equal(mem_comm_symm_workspace(&j, &ovf), 0);
	/* Megatron's global buffer: the gathered input, 8 MiB x tp 4 */
	j.sequence_parallel = true;
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 32ull << 20);
	/* AsyncTP: two reduce-scatter output chunks of 8 MiB */
	j.async_tp = true;
	assert_int_equal(mem_comm_symm_workspace(&j, &ovf), 16ull << 20);
	j.tp = 1;
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 0);
	assert_int_equal(mem_comm_symm_workspace(&j, &ovf), 0);
	assert_false(ovf);
}

/* DTensor's plan keeps the gather buffer (all_gather_tensor's dim-0 result
 * beside the cat) unless AsyncTP's fused op gathers in place. */
static void sp_buffer_under_dtensor(void **state)
{
	struct mem_layer body = { .name = "attn", .input_bytes = 8ull << 20 };
	struct mem_block block = { .layers = &body, .nlayers = 1, .repeat = 32, .is_body = true };
	struct mem_job j;
	bool ovf = false;

	(void)state;
	memset(&j, 0, sizeof(j));
	j.blocks = &block;
	j.nblocks = 1;
	j.dp = j.pp = j.cp = j.ep = 1;
	j.tp = 4;
	j.sequence_parallel = j.tp_saves_gathered = true;
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 32ull << 20);
	j.async_tp = true;
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 0);
	j.tp_saves_gathered = false;	/* a Megatron job keeps its global buffer */
	assert_int_equal(mem_comm_sp_buffer(&j, &ovf), 32ull << 20);
	assert_false(ovf);
}

/* DeepEP's Buffer (csrc/config.hpp hints, deep_ep/buffer.py configs) over
 * the tp x ep group, hidden 7168 in bf16: per received token 14,336 B + 8 +
 * 3 x 512 + 16 = 15,896 B of NVL buffer; 10 channels at 20 SMs. */
static void deepep_buffer(void **state)
{
	struct mem_job j;
	bool ovf = false;
	const uint64_t tail = 160 + (32ull << 20);	/* signals, pointers; workspace */

	(void)state;
	memset(&j, 0, sizeof(j));
	j.dp = j.pp = j.cp = j.tp = 1;
	j.ep = 8;
	j.deepep_num_sms = 20;
	assert_int_equal(mem_comm_deepep_bytes(&j, &ovf), 0);	/* not the flex dispatcher */
	j.deepep_hidden_bytes = 14336;
	/* one node: 10 x 8 x 4 x 4 + 10 x 8 x 256 x 15,896 */
	assert_int_equal(mem_comm_deepep_bytes(&j, &ovf), 325551360ull + tail);
	/* ep 16 = 2 nodes: NVL 10 x 8 x 6 x 4 + 10 x 8 x 288 x 15,896 = 366,245,760;
	 * RDMA: dispatch's 128 receive tokens round up to 140 (send chunk 20),
	 * 10 x 2 x 18 x 2 x 4 + 10 x 2 x 140 x 31,792 + 10 x 2 x 2 x 8 x 2 =
	 * 89,021,120, 89,021,184 in 128 B (combine's 132 tokens: 83,934,464) */
	j.ep = 16;
	assert_int_equal(mem_comm_deepep_bytes(&j, &ovf), 366245760ull + 89021184ull + tail);
	/* etp counts: 2 x 8 is the same group of 16 */
	j.ep = 8;
	j.etp = 2;
	assert_int_equal(mem_comm_deepep_ranks(&j), 16);
	assert_true(mem_comm_deepep_supported(16));
	assert_false(mem_comm_deepep_supported(12));
	assert_false(ovf);
}

/* torch.distributed.pipelining's PipelineStage, x = one micro-batch's stage
 * input (1 MiB): receive buffers beyond the `k` chunks in flight, the kept
 * outputs and the input gradients, 1F1B and interleaved (vp 2: two stages
 * a rank, the first rank's chunk 0 and the last rank's last chunk get no
 * activation, resp. gradient, buffers). */
static void pipeline_stage_buffers(void **state)
{
	struct mem_layer body = { .name = "block", .input_bytes = 1ull << 20 };
	struct mem_block block = { .layers = &body, .nlayers = 1, .repeat = 8, .is_body = true };
	struct mem_job j;
	bool ovf = false;
	const uint64_t x = 1ull << 20;

	(void)state;
	memset(&j, 0, sizeof(j));
	j.blocks = &block;
	j.nblocks = 1;
	j.dp = j.tp = j.cp = j.ep = j.vp = 1;
	j.pp = 4;
	j.micro_batches = 8;
	j.no_rounding = true;
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 1, 3), 0);	/* a Megatron job */
	j.pp_stage_buffers = true;
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 0, 4), 8 * x);		/* gradients only */
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 1, 3), (5 + 8) * x);
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 3, 1), 7 * x);		/* activations only */
	assert_int_equal(mem_pp_output_bytes(&ovf, &j, 1, 3), 3 * x);
	assert_int_equal(mem_pp_output_bytes(&ovf, &j, 3, 1), 0);		/* the logits */
	assert_int_equal(mem_pp_input_grad_bytes(&ovf, &j, 0, 4), 0);	/* token ids */
	assert_int_equal(mem_pp_input_grad_bytes(&ovf, &j, 1, 3), 5 * x);
	j.schedule = MEM_PP_INTERLEAVED;
	j.vp = 2;
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 0, 12), (0 + 16) * x);	/* 8 act < 12 in flight */
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 3, 9), (7 + 8) * x);
	assert_int_equal(mem_pp_output_bytes(&ovf, &j, 3, 9), 8 * x);	/* all but the logits chunk */
	assert_int_equal(mem_pp_input_grad_bytes(&ovf, &j, 3, 9), 7 * x);
	j.schedule = MEM_PP_DUALPIPE;		/* DualPipe's own comm.py: none */
	assert_int_equal(mem_pp_recv_bytes(&ovf, &j, 1, 3), 0);
	assert_false(ovf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_per_kind),
		cmocka_unit_test(keys_change_the_sizes),
		cmocka_unit_test(job_groups),
		cmocka_unit_test(sp_and_symm_workspace),
		cmocka_unit_test(sp_buffer_under_dtensor),
		cmocka_unit_test(deepep_buffer),
		cmocka_unit_test(pipeline_stage_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
