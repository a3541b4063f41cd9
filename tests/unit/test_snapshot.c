/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for analyzer/cmd/snapshot.c: the replay of a memory snapshot's
 * trace, on the hand-made snapshots of tests/compare/ (written by
 * tests/compare/make-snapshots.py; the sizes below are its constants).
 * Run from the repository root, as `make check-unit` does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analyzer/cmd/compare_impl.h"

#include <stdbool.h>
#include <string.h>

#define MiB (1ull << 20)
static const uint64_t W = 58832896, STATE = 58832896, ACT = 7 * MiB, LOGIT = 98304 * 1024ull;

static void one_step(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_true(snap_measure("tests/compare/tiny.json", -1, &m, &err));
	assert_int_equal(m.device, 0);
	assert_true(m.traced);
	assert_int_equal(m.nevents, 24);
	assert_int_equal(m.steps, 1);
	/* Before the trace: the weights, AdamW's two states and 512 B. */
	assert_int_equal(m.base_allocated, W + 2 * STATE + 512);
	assert_int_equal(m.base_reserved, 58 * MiB + 168 * MiB + 2 * MiB);
	/* The peak: the backward's first allocation, with the forward's two
	 * activations, the lm_head output, the loss and the logits' gradient live. */
	assert_int_equal(m.peak_allocated, W + 2 * STATE + 512 + 2 * ACT + 3 * LOGIT);
	assert_int_equal(m.cat_at_peak[SNAP_C_WEIGHTS], W);
	assert_int_equal(m.cat_at_peak[SNAP_C_OPTIMIZER], 2 * STATE);
	assert_int_equal(m.cat_at_peak[SNAP_C_ACTIVATIONS], 2 * ACT + 2 * LOGIT);
	assert_int_equal(m.cat_at_peak[SNAP_C_LOGITS], LOGIT);
	assert_int_equal(m.cat_at_peak[SNAP_C_GRADIENTS], 0);
	assert_int_equal(m.cat_at_peak[SNAP_C_UNTRACED], 512);
	assert_int_equal(m.peak_reserved, m.base_reserved + 20 * MiB + 2 * LOGIT + 196 * MiB);
	/* The optimizer step's peak: its foreach temporary beside the
	 * gradients, which outlived the backward. */
	assert_int_equal(m.phase_allocated[SNAP_P_OPTIMIZER], W + 2 * STATE + 512 + W + STATE);
	assert_false(m.phase_seen[SNAP_P_SETUP]);
	assert_true(m.framed);
}

/* Recorded without Python stacks: the same bytes, no phases. */
static void no_frames(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_true(snap_measure("tests/compare/no-frames.json", -1, &m, &err));
	assert_false(m.framed);
	assert_int_equal(m.steps, 0);
	assert_int_equal(m.peak_allocated, W + 2 * STATE + 512 + 2 * ACT + 3 * LOGIT);
	assert_false(m.phase_seen[SNAP_P_FORWARD]);
}

static void two_steps(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_true(snap_measure("tests/compare/two-steps.json", 0, &m, &err));
	assert_int_equal(m.nevents, 47);
	assert_int_equal(m.steps, 2);
	assert_int_equal(m.peak_allocated, W + 2 * STATE + 512 + 2 * ACT + 3 * LOGIT);
	assert_int_equal(m.phase_allocated[SNAP_P_FORWARD], W + 2 * STATE + 512 + 2 * ACT + LOGIT);
}

static void no_trace(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_true(snap_measure("tests/compare/no-trace.json", -1, &m, &err));
	assert_false(m.traced);
	assert_true(m.no_traces_key);
	assert_int_equal(m.nsegments, 5);
	assert_int_equal(m.final_allocated, W + 2 * STATE + 512);
	assert_int_equal(m.final_reserved, 58 * MiB + 168 * MiB + 2 * MiB + 20 * MiB + 196 * MiB);
}

/* Expandable segments (segment_map/unmap), an oom, and 16 MiB live before
 * the trace: half with _apply frames (weights), half with none. */
static void expandable_oom(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_true(snap_measure("tests/compare/oom-expandable.json", -1, &m, &err));
	assert_int_equal(m.ooms, 1);
	assert_int_equal(m.base_allocated, 16 * MiB);
	assert_int_equal(m.base_reserved, 40 * MiB);
	assert_int_equal(m.peak_reserved, 60 * MiB);
	assert_int_equal(m.peak_allocated, 36 * MiB);
	assert_int_equal(m.cat_at_peak[SNAP_C_WEIGHTS], 8 * MiB);
	assert_int_equal(m.cat_at_peak[SNAP_C_UNTRACED], 8 * MiB);
	assert_int_equal(m.cat_at_peak[SNAP_C_ACTIVATIONS], 20 * MiB);
}

static void errors(void **state)
{
	struct snap_measure m;
	struct snap_error err = { 0 };

	(void)state;
	assert_false(snap_measure("tests/compare/malformed.json", -1, &m, &err));
	assert_int_equal(err.line, 3);
	assert_int_equal(err.col, 64);
	memset(&err, 0, sizeof err);
	assert_false(snap_measure("tests/compare/bad-schema.json", -1, &m, &err));
	assert_string_equal(err.path, "device_traces[0][1].size");
	assert_int_equal(err.line, 0);
	memset(&err, 0, sizeof err);
	assert_false(snap_measure("tests/compare/snapshot.pickle", -1, &m, &err));
	assert_non_null(strstr(err.msg, "pickle"));
	memset(&err, 0, sizeof err);
	assert_false(snap_measure("tests/compare/no-such-file.json", -1, &m, &err));
	assert_true(err.unreadable);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_step),
		cmocka_unit_test(no_frames),
		cmocka_unit_test(two_steps),
		cmocka_unit_test(no_trace),
		cmocka_unit_test(expandable_oom),
		cmocka_unit_test(errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
