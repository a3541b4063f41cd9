/* SPDX-License-Identifier: MIT */
/*
 * test_search.c - memc search's step-time model (analyzer/cmd/search_time.c,
 * docs/search.md) on round numbers, each expected figure worked by hand in
 * the comment above it: the math, the tp traffic with full recompute, the
 * pipeline bubble, and ZeRO-3 gathers over the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyzer/cmd/search_impl.h"

/* 1e9 params, 10 layers of width 1000, 1000-token sequences, 8 sequences
 * a step; 1e12 flop/s at half of it; 1 GB/s in a node, 0.1 GB/s between
 * nodes. */
static struct search_facts facts(void)
{
	return (struct search_facts){
		.params = 1e9, .active = 1e9, .layers = 10, .hidden = 1000, .kv_dim = 1000,
		.seq_len = 1000, .global_batch = 8, .act_bytes = 2, .grad_bytes = 4, .weight_bytes = 2,
		.peak_flops = 1e12, .node_bw = 1e9, .network_bw = 1e8, .host_bw = 1e9, .mfu = 0.5,
	};
}

static struct search_layout layout(uint32_t gpus, uint32_t dp, uint32_t tp, uint32_t pp, uint64_t ga)
{
	return (struct search_layout){ .gpus = gpus, .per_node = 8, .dp = dp, .tp = tp, .pp = pp, .vp = 1,
				       .cp = 1, .ep = 1, .micro_batch = 1, .grad_accum = ga };
}

/* 6 N + 12 L h s = 6e9 + 1.2e8 = 6.12e9 flop a token; full recompute adds
 * 2 N + 4 L h s = 2.04e9; selective 4 L h s = 4e7. */
static void flops_per_token(void **state)
{
	struct search_facts f = facts();

	(void)state;
	assert_true(search_flops_per_token(&f, SEARCH_CKPT_NONE) == 6.12e9);
	assert_true(search_flops_per_token(&f, SEARCH_CKPT_SELECTIVE) == 6.16e9);
	assert_true(search_flops_per_token(&f, SEARCH_CKPT_FULL) == 8.16e9);
}

/* dp 8: 1000 tokens x 6.12e9 / 5e11 = 12.24 s; the all-reduce, 2 x 7/8 x
 * 1e9 x 4 B / 1e9 = 7 s, hides behind 2/3 of it (8.16 s): 8,000 tokens /
 * 12.24 s / 8 = 81.70 tokens/s/GPU, and so exactly the assumed MFU. */
static void data_parallel_math(void **state)
{
	struct search_facts f = facts();
	struct search_layout l = layout(8, 8, 1, 1, 1);

	(void)state;
	search_time(&f, &l);
	assert_float_equal(l.step_s, 12.24, 1e-9);
	assert_float_equal(l.tokens_per_s, 8000 / 12.24 / 8, 1e-9);
	assert_float_equal(l.mfu, 0.5, 1e-12);
}

/* tp 2, full recompute: 8.16e9 x 1000 / 2 / 5e11 = 8.16 s of math; tp
 * traffic 10 layers x 12 transfers x 1/2 x 2e6 B = 1.2e8 B at 1 GB/s =
 * 0.12 s: 8.28 s (the dp all-reduce, 3 s, hides). */
static void tensor_parallel_traffic(void **state)
{
	struct search_facts f = facts();
	struct search_layout l = layout(8, 4, 2, 1, 2);

	(void)state;
	l.ckpt = SEARCH_CKPT_FULL;
	search_time(&f, &l);
	assert_float_equal(l.step_s, 2 * 8.28, 1e-9);
}

/* pp 2, 2 micro-batches: 6.12 s of math each, plus 2 x 2e6 B / 1 GB/s =
 * 0.004 s at the stage boundary; (2 + (2 - 1) / 1) x 6.124 = 18.372 s. */
static void pipeline_bubble(void **state)
{
	struct search_facts f = facts();
	struct search_layout l = layout(8, 4, 1, 2, 2);

	(void)state;
	search_time(&f, &l);
	assert_float_equal(l.step_s, 18.372, 1e-9);
}

/* ZeRO-3 over 16 GPUs of two nodes: 15/16 x 1e9 x (2 x 2 + 4) B at 0.1
 * GB/s = 75 s a micro-batch, of which the 12.24 s of math hide 12.24. */
static void zero3_gathers_cross_nodes(void **state)
{
	struct search_facts f = facts();
	struct search_layout l = layout(16, 16, 1, 1, 1);

	(void)state;
	f.global_batch = 16;
	l.zero = 3;
	search_time(&f, &l);
	assert_float_equal(l.step_s, 75.0, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flops_per_token),
		cmocka_unit_test(data_parallel_math),
		cmocka_unit_test(tensor_parallel_traffic),
		cmocka_unit_test(pipeline_bubble),
		cmocka_unit_test(zero3_gathers_cross_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
