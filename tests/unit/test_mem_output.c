/* SPDX-License-Identifier: MIT */
/*
 * test_mem_output.c - the model output the training loop holds
 * (train.keep_output, docs/memory-model.md "The output the loop keeps"):
 * a layer's output (output_saved_bytes, output_bytes) outlives its
 * backward, through the backward of the layers before it and the
 * optimizer step, and not into the next micro-batch's forward (the loop
 * rebinds `output` every micro-batch).
 */
#include "analyzer/memory/memory.h"
#include "mem_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MIB (UINT64_C(1) << 20)

/* A body repeat with a 10 MiB weight (10 MiB bf16 gradient) and 100 MiB of
 * saves, and a head without weights whose 20 MiB of saves hold 16 MiB of
 * output, with 30 MiB of backward temporaries; no optimizer states; the
 * loop keeps the output when @kept. */
struct tiny {
	struct mem_param body;
	struct mem_layer l[2];
	struct mem_block b[2];
	struct mem_job j;
};

static void tiny_job(struct tiny *t, bool kept, uint64_t micro_batches)
{
	t->body = (struct mem_param){ .name = "w", .numel = 1, .weight_bytes = 10 * MIB,
				      .grad_bytes = 10 * MIB, .trainable = true };
	t->l[0] = (struct mem_layer){ .name = "block", .params = &t->body, .nparams = 1,
				      .saves_bytes = 100 * MIB };
	t->l[1] = (struct mem_layer){ .name = "lm_head", .saves_bytes = 20 * MIB, .temp_bwd_bytes = 30 * MIB,
				      .loss_region = true, .output_saved_bytes = 16 * MIB };
	for (int i = 0; i < 2; i++)
		t->b[i] = (struct mem_block){ .layers = &t->l[i], .nlayers = 1, .repeat = 1, .is_body = i == 0 };
	mem_fx_job(&t->j, true);
	t->j.blocks = t->b;
	t->j.nblocks = 2;
	t->j.micro_batches = micro_batches;
	t->j.keep_output = kept;
}

static struct mem_result analyse(struct tiny *t)
{
	struct mem_result r;

	assert_int_equal(mem_analyze(&t->j, &r), MEM_OK);
	return r;
}

/* The head's backward holds weights 10 + saves 100 + 20 + temporaries 30
 * = 160 MiB either way (the output is among its own saves); the block's
 * backward 10 + 100 + its 10 MiB gradient = 120, with the held output 136;
 * the optimizer step 10 + 10 = 20, held 36. */
static void held_through_backward_and_step(void **state)
{
	struct tiny t;
	struct mem_result r;

	(void)state;
	tiny_job(&t, false, 1);
	r = analyse(&t);
	assert_int_equal(r.classes[0].peak_allocated, 160 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_BACKWARD], 120 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_OPTIMIZER], 20 * MIB);
	mem_result_free(&r);
	tiny_job(&t, true, 1);
	r = analyse(&t);
	assert_int_equal(r.classes[0].peak_allocated, 160 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_BACKWARD], 136 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_OPTIMIZER], 36 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_LOSS], 160 * MIB);
	mem_result_free(&r);
}

/* Accumulating over two micro-batches: the second forward starts with the
 * first's 10 MiB gradient, not its output (freed by the loop before it):
 * its block's forward, the forward phase's peak, is 10 + 10 + 100 = 120
 * MiB whether or not the output is held (136 if it leaked). */
static void not_into_the_next_forward(void **state)
{
	struct tiny t;
	struct mem_result r;
	uint64_t fwd[2];

	(void)state;
	for (int k = 0; k < 2; k++) {
		tiny_job(&t, k == 1, 2);
		r = analyse(&t);
		fwd[k] = r.classes[0].phase_peak[MEM_PHASE_FORWARD];
		mem_result_free(&r);
	}
	assert_int_equal(fwd[0], fwd[1]);
	assert_int_equal(fwd[1], 120 * MIB);
}

/* An output the head makes as a forward transient (upcast_output's fp32
 * logits): 16 MiB more at the head's own backward too (10 + 100 + 20 + 30
 * + 16 = 176 MiB), and at the block's (136) and the step (36). */
static void held_from_a_transient(void **state)
{
	struct tiny t;
	struct mem_result r;

	(void)state;
	tiny_job(&t, true, 1);
	t.l[1].output_saved_bytes = 0;
	t.l[1].output_bytes = 16 * MIB;
	t.l[1].temp_fwd_bytes = 16 * MIB;
	r = analyse(&t);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_LOSS], 176 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_BACKWARD], 136 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_OPTIMIZER], 36 * MIB);
	mem_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(held_through_backward_and_step),
		cmocka_unit_test(not_into_the_next_forward),
		cmocka_unit_test(held_from_a_transient),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
