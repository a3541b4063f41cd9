/* SPDX-License-Identifier: MIT */
/*
 * test_mem_tied.c - the gradient of a tied weight (docs/memory-model.md
 * "Tied weights"): the builder gives a layer that reads an earlier
 * layer's weight (`tied(layer)`) that weight's gradient bytes, and the
 * walk holds them from that layer's backward through the earlier layer's,
 * for every micro-batch, on a stage that holds both.
 */
#include "analyzer/lower/build.h"
#include "analyzer/memory/memory.h"
#include "mem_fixture.h"
#include "lang/check.h"
#include "lang/import.h"

#define FX_FIELDS                   \
	struct file_ast *files[1];  \
	struct program p;           \
	struct check_result *r;     \
	char src[4096];
#include "lang_fixture.h"

#define MIB (UINT64_C(1) << 20)

/* An embedding (64 MiB weight, bf16 grad 64 MiB), a body repeat with a
 * 10 MiB weight and 100 MiB of saves, and a head that reads the
 * embedding's weight (64 MiB held when @held) with 30 MiB of backward
 * temporaries; no optimizer states. */
struct tiny {
	struct mem_param emb, body;
	struct mem_layer l[3];
	struct mem_block b[3];
	struct mem_job j;
};

static void tiny_job(struct tiny *t, bool held)
{
	t->emb = (struct mem_param){ .name = "weight", .numel = 1, .weight_bytes = 64 * MIB,
				     .grad_bytes = 64 * MIB, .trainable = true };
	t->body = (struct mem_param){ .name = "w", .numel = 1, .weight_bytes = 10 * MIB,
				      .grad_bytes = 10 * MIB, .trainable = true };
	t->l[0] = (struct mem_layer){ .name = "embedding", .params = &t->emb, .nparams = 1,
				      .tied_grad_end_bytes = held ? 64 * MIB : 0 };
	t->l[1] = (struct mem_layer){ .name = "block", .params = &t->body, .nparams = 1,
				      .saves_bytes = 100 * MIB };
	t->l[2] = (struct mem_layer){ .name = "lm_head", .temp_bwd_bytes = 30 * MIB, .loss_region = true,
				      .tied_grad_bytes = held ? 64 * MIB : 0 };
	for (int i = 0; i < 3; i++)
		t->b[i] = (struct mem_block){ .layers = &t->l[i], .nlayers = 1, .repeat = 1, .is_body = i == 1 };
	mem_fx_job(&t->j, true);
	t->j.blocks = t->b;
	t->j.nblocks = 3;
}

static struct mem_result analyse(struct tiny *t)
{
	struct mem_result r;

	assert_int_equal(mem_analyze(&t->j, &r), MEM_OK);
	return r;
}

/* Without the hold the head's backward is the peak: weights 74 + saves
 * 100 + temporaries 30 = 204 MiB.  With it the head's backward has the
 * held 64 MiB more (268), the block's backward 74 + 100 + 64 + its own
 * 10 MiB gradient = 248, and the embedding's backward 74 + 64 held + its
 * own 64 + 10 = 212: the peak is 268 MiB in the loss phase, the backward
 * phase's is 248, and the optimizer step (74 + 74 of .grad) does not move. */
static void held_from_the_head_to_the_embedding(void **state)
{
	struct tiny t;
	struct mem_result r;

	(void)state;
	tiny_job(&t, false);
	r = analyse(&t);
	assert_int_equal(r.classes[0].peak_allocated, 204 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_BACKWARD], 184 * MIB);
	mem_result_free(&r);
	tiny_job(&t, true);
	r = analyse(&t);
	assert_int_equal(r.classes[0].peak_allocated, 268 * MIB);
	assert_int_equal(r.classes[0].at_peak[MEM_C_GRADIENTS], 64 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_BACKWARD], 248 * MIB);
	assert_int_equal(r.classes[0].phase_peak[MEM_PHASE_OPTIMIZER], 148 * MIB);
	mem_result_free(&r);
}

/* A later micro-batch has .grad resident (74 MiB) and the head's new
 * gradient held beside it: 74 + 74 + 100 + 30 + 64 = 342 MiB at the head. */
static void held_beside_accumulated_grads(void **state)
{
	struct tiny t;
	struct mem_result r;

	(void)state;
	tiny_job(&t, true);
	t.j.micro_batches = 2;
	r = analyse(&t);
	assert_int_equal(r.classes[0].peak_allocated, 342 * MIB);
	assert_true(r.classes[0].peak.accumulating);
	mem_result_free(&r);
}

/* Two stages: the head is on the last, the embedding on the first; the
 * last stage (Megatron keeps its own copy of a shared embedding there)
 * holds nothing of the first stage's weight, and the first nothing at all
 * beyond its own gradient. */
static void no_hold_across_stages(void **state)
{
	struct tiny with, without;
	struct mem_result a, b;

	(void)state;
	tiny_job(&with, true);
	tiny_job(&without, false);
	with.j.pp = without.j.pp = 2;
	with.b[1].repeat = without.b[1].repeat = 2;
	a = analyse(&with);
	b = analyse(&without);
	assert_int_equal(a.nclasses, 2);
	assert_int_equal(b.nclasses, 2);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(a.classes[i].peak_allocated, b.classes[i].peak_allocated);
	mem_result_free(&a);
	mem_result_free(&b);
}

/* ---- the builder ---- */

static const char prelude[] =
	"gpu G { memory = 4 GiB }\n"
	"precision p { weights = bf16, grads = bf16, compute = bf16 }\n"
	"optimizer adam { state m : [numel]\n state v : [numel] }\n"
	"layer embedding(v: count, h: count) { param weight : [v, h]\n saves idx : [batch, seq] int64 }\n"
	"layer norm(h: count) { param w : [h] }\n"
	"layer head(h: count) { saves x : [batch, seq, h] tied(embedding) }\n"
	"model m { embedding(1000, 64)\n norm(64)\n head(64) }\n";

static const struct mem_job *build(struct fixture *fx, struct build *bl, const char *extra)
{
	struct file_ast *f;
	struct build_override none = { .zero = -1 };

	snprintf(fx->src, sizeof fx->src,
		 "%strain t {\n  model = m\n  cluster = 1 x G\n  precision = p\n  optimizer = adam\n"
		 "  micro_batch = 1\n  seq_len = 8\n%s}\n", prelude, extra);
	f = fx_parse(fx, "root.mem", fx->src);
	fx_assert_no_diags(fx);
	fx->files[0] = f;
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = f };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	fx_assert_no_diags(fx);
	assert_true(build_job(fx->r->ev, &fx->arena, fx->r->jobs, &none, false, bl));
	assert_int_equal(bl->job.nblocks, 1);
	assert_int_equal(bl->job.blocks[0].nlayers, 3);
	return &bl->job;
}

/* The head holds the embedding's weight as autograd makes its gradient:
 * 1000 x 64 x 2 B = 128,000 B, which the embedding's backward ends. */
static void builder_ties_the_head_to_the_embedding(void **state)
{
	struct fixture *fx = *state;
	struct build bl;
	const struct mem_job *j = build(fx, &bl, "");

	assert_int_equal(j->blocks[0].layers[2].tied_grad_bytes, 128000);
	assert_int_equal(j->blocks[0].layers[0].tied_grad_end_bytes, 128000);
	assert_int_equal(j->blocks[0].layers[0].tied_grad_bytes, 0);
	assert_int_equal(j->blocks[0].layers[1].tied_grad_bytes, 0);
	assert_int_equal(j->blocks[0].layers[1].tied_grad_end_bytes, 0);
}

/* A frozen tied weight makes no gradient: nothing is held. */
static void builder_frozen_weight_holds_nothing(void **state)
{
	struct fixture *fx = *state;
	struct build bl;
	const struct mem_job *j = build(fx, &bl, "  freeze = [embedding]\n");

	assert_int_equal(j->blocks[0].layers[2].tied_grad_bytes, 0);
	assert_int_equal(j->blocks[0].layers[0].tied_grad_end_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(held_from_the_head_to_the_embedding),
		cmocka_unit_test(held_beside_accumulated_grads),
		cmocka_unit_test(no_hold_across_stages),
		cmocka_unit_test_setup_teardown(builder_ties_the_head_to_the_embedding, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(builder_frozen_weight_holds_nothing, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
