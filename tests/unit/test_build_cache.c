/* SPDX-License-Identifier: MIT */
/*
 * test_build_cache.c - the builder's walks kept per compilation
 * (analyzer/model/build_cache.c): for every train block of every example
 * and a grid of what-if overrides (micro_batch, ZeRO stage, checkpoint,
 * tp), a build that reuses a kept walk is the build made afresh, block by
 * block and class by class after mem_analyze; a change of something only
 * applied after the walk (the ZeRO stage) reuses it, a change the model
 * reads (micro_batch) does not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/memory/memory.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"
#include "load_fixture.h"
#include "same_blocks.h"

static void assert_same_result(const struct mem_result *x, const struct mem_result *y)
{
	assert_int_equal(x->nclasses, y->nclasses);
	assert_int_equal(x->params_total, y->params_total);
	assert_int_equal(x->params_trainable, y->params_trainable);
	for (size_t i = 0; i < x->nclasses; i++) {
		assert_int_equal(x->classes[i].device_total, y->classes[i].device_total);
		assert_memory_equal(&x->classes[i], &y->classes[i], sizeof x->classes[i]);
	}
}

static uint64_t hits_of(struct eval *ev)
{
	unsigned long hits, misses;

	build_cache_stats(ev, &hits, &misses);
	return hits;
}

/* One variant built with the cache (kept or reused) and without it. */
static unsigned compare_one(struct eval *ev, const struct check_job *cj, const struct build_override *ov)
{
	struct arena a1 = { 0 }, a2 = { 0 };
	struct build kept, fresh;
	struct mem_result r1, r2;

	build_cache_enable(ev, true);
	bool ok1 = build_job(ev, &a1, cj, ov, true, &kept);

	build_cache_enable(ev, false);
	bool ok2 = build_job(ev, &a2, cj, ov, true, &fresh);

	build_cache_enable(ev, true);
	assert_int_equal(ok1, ok2);
	if (ok1) {
		assert_same_blocks(&kept.job, &fresh.job);
		assert_int_equal(kept.rep.params_total, fresh.rep.params_total);
		kept.job.no_explain = fresh.job.no_explain = true;
		enum mem_status s1 = mem_analyze(&kept.job, &r1), s2 = mem_analyze(&fresh.job, &r2);

		assert_int_equal(s1, s2);
		if (s1 == MEM_OK)
			assert_same_result(&r1, &r2);
		mem_result_free(&r1);
		mem_result_free(&r2);
	}
	arena_free(&a1);
	arena_free(&a2);
	return ok1;
}

/* Each variant twice: the second build of a variant reuses the first's walk. */
static void kept_builds_equal_fresh_ones(void **state)
{
	static const char *const ckpt[] = { NULL, "none", "full" };
	glob_t g;
	unsigned built = 0;
	unsigned long hits, misses, total_hits = 0;

	(void)state;
	assert_int_equal(glob("examples/*.mem", 0, NULL, &g), 0);
	for (size_t f = 0; f < g.gl_pathc; f++) {
		struct loaded l;

		if (!load(&l, g.gl_pathv[f])) {
			unload(&l);
			continue;
		}
		for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next)
			for (unsigned mb = 0; mb <= 2; mb++)
				for (int zero = -1; zero <= 3; zero += 2)
					for (size_t c = 0; c < sizeof ckpt / sizeof ckpt[0]; c++)
						for (int rep = 0; rep < 2; rep++) {
							struct build_override ov = { .micro_batch = mb, .zero = zero,
										     .checkpoint = ckpt[c] };

							built += compare_one(l.cr->ev, cj, &ov);
						}
		build_cache_stats(l.cr->ev, &hits, &misses);
		total_hits += hits;
		unload(&l);
	}
	globfree(&g);
	assert_true(built > 100);
	assert_true(total_hits >= built / 2);
}

static void reuse_follows_what_the_walk_reads(void **state)
{
	struct loaded l;

	(void)state;
	assert_true(load(&l, "examples/llama2-13b-zero3.mem"));
	struct eval *ev = l.cr->ev;
	const struct check_job *cj = l.cr->jobs;
	struct arena a = { 0 };
	struct build b;
	struct build_override ov = { .micro_batch = 2, .zero = -1 };

	assert_true(build_job(ev, &a, cj, &ov, true, &b));
	uint64_t h0 = hits_of(ev);

	ov.zero = 1;	/* sharding is applied after the walk */
	assert_true(build_job(ev, &a, cj, &ov, true, &b));
	assert_int_equal(hits_of(ev), h0 + 1);
	ov.micro_batch = 3;	/* the model's activations read batch */
	assert_true(build_job(ev, &a, cj, &ov, true, &b));
	assert_int_equal(hits_of(ev), h0 + 1);
	ov.checkpoint = "full";
	assert_true(build_job(ev, &a, cj, &ov, true, &b));
	assert_int_equal(hits_of(ev), h0 + 1);
	ov.tp = 2;
	assert_true(build_job(ev, &a, cj, &ov, true, &b));
	assert_int_equal(hits_of(ev), h0 + 1);
	assert_true(build_job(ev, &a, cj, &ov, true, &b));	/* the same again */
	assert_int_equal(hits_of(ev), h0 + 2);
	arena_free(&a);
	unload(&l);
}

/* A file of jobs that differ in what the walk reads of the job itself:
 * precision, optimizer, LoRA targets and rank; and in what it does not. */
static const char jobs_text[] =
	"import \"gpus/nvidia\"\nimport \"models/llama\"\nimport \"optimizers\"\nimport \"precision\"\n"
	"train j0 {\n  model = llama2_7b\n  cluster = 8 x A100_80GB\n  precision = bf16_mixed\n"
	"  optimizer = adamw\n  micro_batch = 1\n  seq_len = 2048\n"
	"  finetune = lora(r = 16, alpha = 32, targets = [q, v])\n}\n"
	"train j1 : j0 { grad_accum = 4 }\n"
	"train j2 : j0 { precision = fp16_mixed }\n"
	"train j3 : j0 { optimizer = adam_8bit }\n"
	"train j4 : j0 { finetune = lora(r = 16, alpha = 32, targets = [q, k, v]) }\n"
	"train j5 : j0 { finetune = lora(r = 8, alpha = 32, targets = [q, v]) }\n"
	"train j6 : j0 { zero = 2 }\n";

static void job_fields_are_in_the_key(void **state)
{
	struct loaded l;
	struct interner *in;
	struct src_table *src;
	struct diag_engine *de;
	struct import_opts io = { .stdlib_dir = "stdlib" };
	static const bool reused[] = { false, true, false, false, false, false, true };
	unsigned i = 0;

	(void)state;
	memset(&l, 0, sizeof l);
	l.devnull = fopen("/dev/null", "w");
	in = interner_new(&l.a);
	src = src_table_new(&l.a);
	de = diag_new(&l.a, src, l.devnull);
	src_set_overlay(src, "jobs.mem", jobs_text, sizeof jobs_text - 1);
	struct program *p = import_load(&l.a, in, src, de, "jobs.mem", &io);

	assert_non_null(p->root);
	l.cr = check_program(&l.a, in, de, src, p);
	assert_int_equal(diag_error_count(de), 0);
	for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next, i++) {
		struct build_override ov = { .zero = -1 };
		uint64_t h0 = hits_of(l.cr->ev);

		assert_true(i < sizeof reused / sizeof reused[0]);
		assert_true(compare_one(l.cr->ev, cj, &ov));
		assert_int_equal(hits_of(l.cr->ev) - h0, reused[i]);
	}
	assert_int_equal(i, sizeof reused / sizeof reused[0]);
	unload(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kept_builds_equal_fresh_ones),
		cmocka_unit_test(reuse_follows_what_the_walk_reads),
		cmocka_unit_test(job_fields_are_in_the_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
