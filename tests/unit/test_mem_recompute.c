/* SPDX-License-Identifier: MIT */
/*
 * test_mem_recompute.c - regressions the property suite (tests/property/)
 * found in the memory model: the checkpoint input shared with the first
 * layer's saves under full recompute, and rank classes that must be
 * contiguous runs of stages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "analyzer/memory/memory.h"
#include "mem_fixture.h"

#define MIB (UINT64_C(1) << 20)

/* One body block of n repeats: a norm that saves its input (x_in, 8 MiB)
 * and 100 MiB more, then an MLP saving 200 MiB; no parameters. */
static uint64_t peak_of(enum mem_recompute rc, uint64_t input_saved)
{
	struct mem_layer l[2] = {
		{ .name = "norm", .saves_bytes = 108 * MIB, .input_bytes = 8 * MIB,
		  .input_saved_bytes = input_saved },
		{ .name = "mlp", .saves_bytes = 200 * MIB, .input_bytes = 8 * MIB },
	};
	struct mem_block b = { .layers = l, .nlayers = 2, .repeat = 1, .is_body = true };
	struct mem_job j;

	mem_fx_job(&j, true);
	j.blocks = &b;
	j.nblocks = 1;
	j.recompute = rc;
	return mem_fx_analyze(&j).peak_allocated;
}

/* torch/utils/checkpoint.py: the re-run uses detach()ed inputs, so the norm's
 * saved input is the stored input; full recompute equals none here. */
static void full_shares_the_saved_input(void **state)
{
	(void)state;
	assert_int_equal(peak_of(MEM_RECOMPUTE_FULL, 8 * MIB), peak_of(MEM_RECOMPUTE_NONE, 8 * MIB));
	assert_int_equal(peak_of(MEM_RECOMPUTE_NONE, 8 * MIB), 308 * MIB);
}

/* A first layer that saves a copy (HF RMSNorm's fp32 x32 of a bf16 input):
 * the stored input is one more tensor while the repeat is re-run. */
static void full_keeps_an_unsaved_input(void **state)
{
	(void)state;
	assert_int_equal(peak_of(MEM_RECOMPUTE_FULL, 0), peak_of(MEM_RECOMPUTE_NONE, 0) + 8 * MIB);
}

/* Two frozen layers with 50 MiB autocast weight casts saved for backward;
 * the second needs 300 MiB in its backward. */
static uint64_t cast_peak(enum mem_recompute rc)
{
	struct mem_param p[2] = {
		{ .name = "w0", .numel = 1, .weight_bytes = 100 * MIB, .cast_bytes = 50 * MIB,
		  .cast_saved = true },
		{ .name = "w1", .numel = 1, .weight_bytes = 100 * MIB, .cast_bytes = 50 * MIB,
		  .cast_saved = true },
	};
	struct mem_layer l[2] = {
		{ .name = "a", .params = &p[0], .nparams = 1 },
		{ .name = "b", .params = &p[1], .nparams = 1, .temp_bwd_bytes = 300 * MIB },
	};
	struct mem_block b = { .layers = l, .nlayers = 2, .repeat = 1, .is_body = true };
	struct mem_job j;
	struct mem_class k;

	mem_fx_job(&j, true);
	j.blocks = &b;
	j.nblocks = 1;
	j.recompute = rc;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.buffers_at_peak[MEM_B_CASTS], 100 * MIB);
	return k.peak_allocated;
}

/* The re-run forward (under the checkpoint's autocast, with grad enabled)
 * saves layer a's cast for its backward, as the none-mode forward does, so
 * both casts are live in layer b's backward under every mode. */
static void full_rematerialises_saved_casts(void **state)
{
	(void)state;
	assert_int_equal(cast_peak(MEM_RECOMPUTE_NONE), 600 * MIB);
	assert_int_equal(cast_peak(MEM_RECOMPUTE_FULL), 600 * MIB);
}

/* Stages 0 and 2 hold one body repeat each, stage 1 one plus a non-body
 * layer: 0 and 2 have identical figures but are not neighbours, so they
 * must stay separate classes (the report prints a class as "stages a-b"). */
static void classes_are_contiguous(void **state)
{
	struct mem_layer body = { .name = "block", .saves_bytes = 10 * MIB };
	struct mem_layer extra = { .name = "extra", .saves_bytes = 30 * MIB };
	struct mem_block b[3] = {
		{ .layers = &body, .nlayers = 1, .repeat = 2, .is_body = true },
		{ .layers = &extra, .nlayers = 1, .repeat = 1 },
		{ .layers = &body, .nlayers = 1, .repeat = 1, .is_body = true },
	};
	struct mem_job j;
	struct mem_result r;

	(void)state;
	mem_fx_job(&j, true);
	j.blocks = b;
	j.nblocks = 3;
	j.pp = 3;
	assert_int_equal(mem_analyze(&j, &r), MEM_OK);
	assert_int_equal(r.nclasses, 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(r.classes[i].stage, i);
		assert_int_equal(r.classes[i].nstages, 1);
	}
	assert_int_equal(r.classes[0].peak_allocated, r.classes[2].peak_allocated);
	mem_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_shares_the_saved_input),
		cmocka_unit_test(full_keeps_an_unsaved_input),
		cmocka_unit_test(full_rematerialises_saved_casts),
		cmocka_unit_test(classes_are_contiguous),
	};
	return cmocka_run_group_tests_name("mem_recompute", tests, NULL, NULL);
}
