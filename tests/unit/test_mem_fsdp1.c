/* SPDX-License-Identifier: MIT */
/*
 * test_mem_fsdp1.c - FSDP1's flat-parameter gradients and no_sync(), and
 * activation offload (analyzer/memory/mem_fsdp1.c, memory.c, mem_timeline.c):
 * hand-worked values, and the fold (repeats evaluated at {0, 1, n-2, n-1})
 * equal to the unrolled walk with each of them on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "analyzer/memory/memory.h"
#include "mem_fixture.h"

enum { N = 6 };

struct fixture {
	struct mem_param p[4];
	struct mem_layer pre, body[2], post;
	struct mem_block folded[3], unrolled[N + 2];
	struct mem_job j;
};

static void param(struct mem_param *p, const char *name, uint64_t numel, bool trainable)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->numel = numel;
	p->weight_bytes = 2 * numel;
	p->grad_bytes = 2 * numel;
	p->state_bytes = 4 * numel;
	p->trainable = trainable;
}

/* Embedding, N body repeats of a trainable adapter `a` and a frozen weight
 * `w` (one mixed FlatParameter each), a frozen loss head; 2 ranks. */
static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	param(&f->p[0], "emb", 4000, false);
	param(&f->p[1], "a", 100, true);
	param(&f->p[2], "w", 10000, false);
	param(&f->p[3], "head", 4000, false);
	f->pre = (struct mem_layer){ .name = "pre", .params = &f->p[0], .nparams = 1, .saves_bytes = 100 };
	f->body[0] = (struct mem_layer){ .name = "a", .params = &f->p[1], .nparams = 1,
					 .saves_bytes = 9000, .input_bytes = 1000, .temp_bwd_bytes = 4000 };
	f->body[1] = (struct mem_layer){ .name = "w", .params = &f->p[2], .nparams = 1,
					 .saves_bytes = 20000, .temp_fwd_bytes = 5000 };
	f->post = (struct mem_layer){ .name = "loss", .params = &f->p[3], .nparams = 1,
				      .saves_bytes = 3000, .temp_bwd_bytes = 6000, .loss_region = true };
	f->folded[0] = (struct mem_block){ &f->pre, 1, 1, false };
	f->folded[1] = (struct mem_block){ f->body, 2, N, true };
	f->folded[2] = (struct mem_block){ &f->post, 1, 1, false };
	f->unrolled[0] = f->folded[0];
	for (int i = 0; i < N; i++)
		f->unrolled[1 + i] = (struct mem_block){ f->body, 2, 1, true };
	f->unrolled[N + 1] = f->folded[2];
	f->j.dp = 2;
	f->j.tp = f->j.pp = f->j.cp = f->j.ep = f->j.vp = 1;
	f->j.micro_batches = 1;
	f->j.frag_factor = 1.0;
	f->j.no_rounding = true;
	f->j.sharding = MEM_SHARD_FSDP_FULL;
	f->j.blocks = f->folded;
	f->j.nblocks = 3;
}

/* use_orig_params: each unit's sharded gradient covers a and w,
 * (200 + 20000) / 2 = 10,100 B per repeat; the frozen root keeps none.
 * Without it only a's: 100 B per repeat. */
static void orig_params_grads(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f);
	assert_int_equal(mem_fx_analyze(&f.j).persistent[MEM_C_GRADIENTS], N * 100);
	f.j.fsdp1 = f.j.fsdp1_orig_params = true;
	assert_int_equal(mem_fx_analyze(&f.j).persistent[MEM_C_GRADIENTS], N * 10100);
}

/* no_sync with 2 micro-batches: the second starts with every unit's
 * unsharded gradient, N x 20,200 B, the gradients at its peak. */
static void no_sync_resident(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f);
	f.j.fsdp1 = f.j.fsdp1_orig_params = f.j.fsdp1_no_sync = true;
	f.j.micro_batches = 2;
	assert_int_equal(mem_fx_analyze(&f.j).at_peak[MEM_C_GRADIENTS], N * 20200);
}

/* Offload, one rank: weights 8,000 + N x 20,200 + 8,000 = 137,200, states
 * N x 400 = 2,400. The forward of the last repeat's `w` holds the
 * embedding's 100 B, its own repeat's 9,000 + 20,000 and w's 5,000
 * transient: 173,700 (N - 1 more repeats, 145,000, without offload); the
 * host holds N x 29,000 B. */
static void offload_forward(void **state)
{
	struct fixture f;
	struct mem_class k;

	(void)state;
	setup(&f);
	f.j.sharding = MEM_SHARD_NONE;
	f.j.dp = 1;
	f.j.offload_activations = true;
	k = mem_fx_analyze(&f.j);
	assert_int_equal(k.host_bytes, N * 29000);
	assert_int_equal(k.phase_peak[MEM_PHASE_FORWARD], 173700);
	f.j.offload_activations = false;
	assert_int_equal(mem_fx_analyze(&f.j).phase_peak[MEM_PHASE_FORWARD], 173700 + (N - 1) * 29000);
}

/* Megatron --cpu-offloading-num-layers 2: repeats 0 and 1 on the host
 * (2 x 29,000 B), the other 4 on the GPU: the forward peak above less
 * 2 x 29,000 = 260,700 (not 173,700: only two repeats move). */
static void offload_first_layers(void **state)
{
	struct fixture f;
	struct mem_class k;

	(void)state;
	setup(&f);
	f.j.sharding = MEM_SHARD_NONE;
	f.j.dp = 1;
	f.j.offload_first = 2;
	k = mem_fx_analyze(&f.j);
	assert_int_equal(k.host_bytes, 2 * 29000);
	assert_int_equal(k.phase_peak[MEM_PHASE_FORWARD], 173700 + (N - 1) * 29000 - 2 * 29000);
	f.j.recompute = MEM_RECOMPUTE_FULL;	/* Megatron refuses it */
	struct mem_result r;

	assert_int_equal(mem_analyze(&f.j, &r), MEM_E_INVALID);
}

static void check_fold(struct fixture *f)
{
	struct mem_class a, b;

	f->j.blocks = f->folded;
	f->j.nblocks = 3;
	a = mem_fx_analyze(&f->j);
	f->j.blocks = f->unrolled;
	f->j.nblocks = N + 2;
	b = mem_fx_analyze(&f->j);
	assert_int_equal(a.peak_allocated, b.peak_allocated);
	assert_memory_equal(a.at_peak, b.at_peak, sizeof(a.at_peak));
	assert_int_equal(a.host_bytes, b.host_bytes);
	assert_int_equal(a.peak.unit, b.peak.unit);
}

static void folded_equals_unrolled(void **state)
{
	static const enum mem_sharding modes[] = { MEM_SHARD_FSDP_FULL, MEM_SHARD_FSDP_GRAD_OP,
						   MEM_SHARD_NONE };
	struct fixture f;

	(void)state;
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
		for (int v = 0; v < 8; v++)
			for (int rc = 0; rc < 3; rc += 2)
				for (uint64_t mb = 1; mb <= 2; mb++) {
					setup(&f);
					f.j.sharding = modes[m];
					f.j.fsdp1 = v & 1;
					f.j.fsdp1_orig_params = f.j.fsdp1_no_sync = v & 2;
					f.j.offload_activations = v & 4;
					f.j.recompute = (enum mem_recompute)rc;
					f.j.micro_batches = mb;
					check_fold(&f);
					if (rc)
						continue;
					f.j.offload_activations = false;
					f.j.offload_first = v & 4 ? 1 : N - 1;
					check_fold(&f);
				}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(orig_params_grads),
		cmocka_unit_test(no_sync_resident),
		cmocka_unit_test(offload_forward),
		cmocka_unit_test(offload_first_layers),
		cmocka_unit_test(folded_equals_unrolled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
