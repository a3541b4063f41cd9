/* SPDX-License-Identifier: MIT */
/* Unit tests for analyzer/memory/phases.c: each phase's formula on a job small
 * enough to add up by hand (docs/memory-model.md §"The run, phase by phase"). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "analyzer/memory/phases.h"
#include "lang/arena.h"

#define MIB (1u << 20)

/* Two body repeats of one layer with a 4 MiB weight (3 MiB gathered
 * under sharding), and one 2 MiB head outside the body. */
static const struct mem_param body_params[] = { { .name = "w", .weight_bytes = 4 * MIB, .gather_bytes = 3 * MIB } };
static const struct mem_param head_params[] = { { .name = "h", .weight_bytes = 2 * MIB } };
static const struct mem_layer body_layers[] = {
	{ .name = "blk", .params = body_params, .nparams = 1, .saves_bytes = 1 * MIB, .temp_fwd_bytes = MIB / 2 },
};
static const struct mem_layer head_layers[] = {
	{ .name = "head", .params = head_params, .nparams = 1, .saves_bytes = 2 * MIB },
};
static const struct mem_block blocks[] = {
	{ .layers = body_layers, .nlayers = 1, .repeat = 2, .is_body = true },
	{ .layers = head_layers, .nlayers = 1, .repeat = 1 },
};

static struct mem_class one_class(void)
{
	struct mem_class k;

	memset(&k, 0, sizeof k);
	k.persistent[MEM_C_WEIGHTS] = 5 * MIB;
	k.persistent[MEM_C_OPTIMIZER] = 7 * MIB;
	k.persistent[MEM_C_GRADIENTS] = 11 * MIB;
	k.peak_allocated = 40 * MIB;
	k.peak_reserved = 44 * MIB;
	k.device_total = 44 * MIB + 500 * MIB;	/* 500 MiB of context, cuBLAS, NCCL */
	k.capacity = 0;
	return k;
}

static struct mem_job sharded_job(void)
{
	struct mem_job j;

	memset(&j, 0, sizeof j);
	j.blocks = blocks;
	j.nblocks = 2;
	j.dp = j.tp = j.pp = j.cp = j.ep = j.vp = 1;
	j.micro_batches = 1;
	j.sharding = MEM_SHARD_FSDP_FULL;
	return j;
}

static void analyse(const struct mem_job *j, struct mem_class *k, const struct phase_input *in,
		    struct phase_class *out)
{
	struct arena a = { 0 };
	struct mem_result r = { .classes = k, .nclasses = 1 };
	struct phase_result pr;

	assert_true(phases_analyze(&a, j, &r, in, &pr));
	assert_int_equal(pr.nclasses, 1);
	*out = pr.classes[0];
	arena_free(&a);
}

/* from_pretrained + QLoRA under FSDP: L + max(Q, U); Q = n·s + 4·ceil(n/64)
 * + ceil(n/64) with double quant. n = 6400: 12,800 + 400 + 100 = 13,300;
 * U = 3 MiB (one body repeat, gathered bytes) is the larger. */
static void loading_from_pretrained_takes_the_unit_or_the_quantise(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .load = PHASE_LOAD_FROM_PRETRAINED, .qlora = true, .double_quant = true,
				  .load_weights = 100 * MIB, .largest_quantised = 6400, .load_elem_size = 2 };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 100 * MIB + 3 * MIB);
	in.largest_quantised = 4 * MIB;	/* Q = 8 MiB + 256 KiB + 64 KiB > U */
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 100 * MIB + 8 * MIB + 256 * 1024 + 64 * 1024);
	assert_int_equal(c.run, PHASE_LOADING);
	/* reserved: ceil(alloc x 1.10) in 2 MiB pages = 120 MiB; + 500 MiB */
	assert_int_equal(c.device[PHASE_LOADING], 620 * MIB);
	assert_int_equal(c.run_device, 620 * MIB);
}

/* LLM.int8 (Int8Params): 2n for the fp16 copy + n for the transposed int8
 * matrix; the load dtype does not matter. */
static void loading_int8(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .load = PHASE_LOAD_FROM_PRETRAINED, .qlora = true, .quant_8bit = true,
				  .load_weights = 100 * MIB, .largest_quantised = 2 * MIB, .load_elem_size = 4 };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 100 * MIB + 6 * MIB);
}

/* meta: W + the largest weight; rank0_cpu: W + max(Q, U). */
static void loading_meta_and_rank0(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .load = PHASE_LOAD_META, .largest_param = 4 * MIB };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 9 * MIB);
	assert_int_equal(c.run, PHASE_STEP);
	in.load = PHASE_LOAD_RANK0_CPU;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 8 * MIB);
	/* from_pretrained under ZeRO-3 (deepspeed.zero.Init) loads as rank0_cpu */
	in.load = PHASE_LOAD_FROM_PRETRAINED;
	in.load_weights = 100 * MIB;
	j.sharding = MEM_SHARD_ZERO3;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_LOADING], 8 * MIB);
}

/* eval: W + S (gradients freed) + largest layer x tokens ratio + KV + 2U.
 * Layer: max(1.5 MiB, 2 MiB) = 2 MiB x 3000 / 2000 = 3 MiB; KV: 8 x 2 x
 * (10 + 6) x 2 B = 512 B; 2U = 6 MiB. */
static void eval_adds_kv_cache_and_two_units(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .eval = true, .eval_batch = 2, .eval_seq = 1500, .eval_generate = 0,
				  .train_tokens = 2000, .kv_per_token = 8, .act_size = 2, .largest_param = 1 };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_EVAL], 12 * MIB + 3 * MIB + 8 * 2 * 1500 * 2 + 6 * MIB);
	in.eval_seq = 10;
	in.eval_generate = 6;
	in.train_tokens = 20;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_EVAL], 12 * MIB + 2 * MIB + 512 + 6 * MIB);
	j.grads_persistent = true;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_EVAL], 23 * MIB + 2 * MIB + 512 + 6 * MIB);
}

/* save: sharded FULL = W + S + M + U (M = 2 x 3 + 2 = 8 MiB); CPU
 * offload = W + S + 2U; unsharded = W + S. */
static void save_full_state_dict(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .save = PHASE_SAVE_FULL, .largest_param = 1 };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_SAVE], 12 * MIB + 8 * MIB + 3 * MIB);
	in.save = PHASE_SAVE_FULL_CPU;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_SAVE], 12 * MIB + 6 * MIB);
	j.sharding = MEM_SHARD_DDP;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_SAVE], 12 * MIB);
}

/* prepare_kbit from_pretrained: L + the fp32 growth + the largest source. */
static void prepare_kbit_cast(void **state)
{
	struct mem_job j = sharded_job();
	struct mem_class k = one_class();
	struct phase_input in = { .load = PHASE_LOAD_FROM_PRETRAINED, .prepare_kbit = true, .load_weights = 10 * MIB,
				  .kbit_extra = 2 * MIB, .largest_cast = MIB };
	struct phase_class c;

	(void)state;
	analyse(&j, &k, &in, &c);
	assert_int_equal(c.alloc[PHASE_PREPARE], 13 * MIB);
	assert_int_equal(c.alloc[PHASE_EVAL], 0);	/* not asked for */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loading_from_pretrained_takes_the_unit_or_the_quantise),
		cmocka_unit_test(loading_int8),
		cmocka_unit_test(loading_meta_and_rank0),
		cmocka_unit_test(eval_adds_kv_cache_and_two_units),
		cmocka_unit_test(save_full_state_dict),
		cmocka_unit_test(prepare_kbit_cast),
	};
	return cmocka_run_group_tests_name("phases", tests, NULL, NULL);
}
