/* SPDX-License-Identifier: MIT */
/*
 * test_compiled.c - the compiled model (analyzer/model/compiled.h) gives
 * the figures of a full build_job + mem_analyze, exactly: for every train
 * block of every example and a grid of variants (micro_batch, grad_accum,
 * ZeRO stage, checkpoint mode), each class's peak allocated, peak
 * reserved, device total, fit and live components are compared with a
 * rebuild under the same overrides.  A model whose activations are not
 * affine in micro_batch takes the rebuild path and still agrees; the
 * workspace stops allocating once it has seen the largest variant; and
 * the workspace's cache of parameter costs is hit where only the
 * activations change, yet follows every field it is keyed on.
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
#include "analyzer/model/compiled.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"
#include "load_fixture.h"

static const char *const ckpt[CM_CKPT__COUNT] = { NULL, "none", "selective", "full", "selective_op" };

/* The full path: build with the overrides, then the variant's grad_accum. */
static enum mem_status full(struct eval *ev, const struct check_job *cj, const struct cm_variant *v,
			    struct mem_result *r)
{
	struct arena tmp = { 0 };
	struct build b;
	struct build_override ov = { .micro_batch = v->micro_batch, .checkpoint = ckpt[v->checkpoint],
				     .zero = v->zero };
	enum mem_status st = MEM_E_INVALID;

	memset(r, 0, sizeof *r);
	if (build_job(ev, &tmp, cj, &ov, true, &b)) {
		if (v->grad_accum)
			b.job.micro_batches = v->grad_accum;
		/* what cm_eval leaves out, so that whole classes compare */
		b.job.no_explain = true;
		b.job.phase_series = false;
		st = mem_analyze(&b.job, r);
	}
	arena_free(&tmp);
	return st;
}

static void assert_same(const struct mem_result *x, const struct mem_result *y)
{
	assert_int_equal(x->nclasses, y->nclasses);
	assert_int_equal(x->params_total, y->params_total);
	assert_int_equal(x->params_trainable, y->params_trainable);
	for (size_t i = 0; i < x->nclasses; i++) {
		const struct mem_class *p = &x->classes[i], *q = &y->classes[i];

		/* the figures a search reads first, for a readable failure ... */
		assert_int_equal(p->stage, q->stage);
		assert_int_equal(p->nstages, q->nstages);
		assert_int_equal(p->peak_allocated, q->peak_allocated);
		assert_int_equal(p->device_total, q->device_total);
		assert_int_equal(p->peak.phase, q->peak.phase);
		assert_int_equal(p->peak.unit, q->peak.unit);
		/* ... then every byte of the class */
		assert_memory_equal(p, q, sizeof *p);
	}
}

/* Every variant of the grid, compiled against rebuilt; returns how many
 * analysed (so that a grid where nothing builds fails the test). */
static unsigned compare_grid(struct eval *ev, const struct check_job *cj, struct arena *a)
{
	static const uint64_t mbs[] = { 0, 1, 2, 3, 5, 8, 13 }, gas[] = { 0, 1, 4 };
	struct cm_model *m = cm_compile(ev, a, cj, 0);
	struct cm_scratch s = { 0 };
	unsigned ok = 0;

	assert_non_null(m);
	for (size_t i = 0; i < sizeof mbs / sizeof mbs[0]; i++)
		for (size_t g = 0; g < sizeof gas / sizeof gas[0]; g++)
			for (int z = -1; z <= 3; z++)
				for (int c = 0; c < CM_CKPT__COUNT; c++) {
					struct cm_variant v = { mbs[i], gas[g], z, (enum cm_checkpoint)c };
					const struct mem_result *cr;
					struct mem_result fr;
					enum mem_status cs = cm_eval(m, &v, &s, &cr), fs = full(ev, cj, &v, &fr);

					assert_int_equal(cs, fs);
					if (fs != MEM_OK)
						continue;
					assert_same(cr, &fr);
					mem_result_free(&fr);
					ok++;
				}
	cm_scratch_free(&s);
	return ok;
}

static void every_example_equals_the_full_build(void **state)
{
	glob_t g;
	unsigned jobs = 0;

	(void)state;
	assert_int_equal(glob("examples/*.mem", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 8);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct loaded l;

		if (!load(&l, g.gl_pathv[i])) {
			unload(&l);
			continue;	/* does-not-fit.mem and friends may not check clean */
		}
		for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next) {
			if (!cj->ok)
				continue;
			assert_true(compare_grid(l.cr->ev, cj, &l.a) > 0);
			jobs++;
		}
		unload(&l);
	}
	globfree(&g);
	assert_true(jobs >= 8);
}

/* A job with the allocator replay (peak reserved from a trace of every
 * saved tensor) takes the rebuild path and agrees with it. */
static void the_allocator_replay_is_rebuilt(void **state)
{
	struct loaded l;

	(void)state;
	assert_true(load(&l, "tests/alloc/replay-loading.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);
	struct cm_variant v = { 2, 0, -1, CM_CKPT_WRITTEN };

	assert_non_null(m);
	assert_false(cm_is_affine(m, &v));
	assert_true(compare_grid(l.cr->ev, l.cr->jobs, &l.a) > 0);
	unload(&l);
}

/* The test binary's folder (build/tests or build-asan/tests). */
static const char *self_dir = ".";

static const char *write_tmp(const char *text)
{
	static char path[4096];
	FILE *f;

	assert_true((size_t)snprintf(path, sizeof path, "%s/test_compiled_tmp.mem", self_dir) < sizeof path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* A model whose saved tensor has @axis as its first axis. */
static const char *rounding_model(char *buf, size_t n, const char *axis)
{
	snprintf(buf, n,
		 "gpu G { memory = 4 GiB }\n"
		 "precision p { weights = bf16, grads = bf16, compute = bf16 }\n"
		 "optimizer adam { state m : [numel]\n state v : [numel] }\n"
		 "layer l { param w : [64, 64]\n saves s : [%s, seq, 64] }\n"
		 "model m { repeat i in 4 { l() } }\n"
		 "train t {\n  model = m\n  cluster = 1 x G\n  precision = p\n"
		 "  optimizer = adam\n  micro_batch = 1\n  seq_len = 8\n}\n", axis);
	return buf;
}

/* ceil(batch / 2) is not affine in micro_batch (1 and 2 give the same
 * bytes, 3 more): the lowering is marked and evaluated by rebuilding.
 * ceil(batch x 99 / 100) is b for b = 1, 2, 3 and 16 and only drifts
 * from micro_batch 101 on: the check at 1024 catches it. */
static void a_non_affine_model_is_rebuilt(void **state)
{
	static const char *const axes[] = { "ceil(batch / 2)", "ceil(batch * 99 / 100)" };
	char text[1024];

	(void)state;
	for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
		struct loaded l;

		assert_true(load(&l, write_tmp(rounding_model(text, sizeof text, axes[i]))));
		struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);
		struct cm_variant v = { 101, 0, -1, CM_CKPT_WRITTEN };
		struct cm_scratch s = { 0 };
		const struct mem_result *cr;
		struct mem_result fr;

		assert_non_null(m);
		assert_false(cm_is_affine(m, &v));
		assert_true(compare_grid(l.cr->ev, l.cr->jobs, &l.a) > 0);
		assert_int_equal(cm_eval(m, &v, &s, &cr), MEM_OK);
		assert_int_equal(full(l.cr->ev, l.cr->jobs, &v, &fr), MEM_OK);
		assert_same(cr, &fr);
		mem_result_free(&fr);
		cm_scratch_free(&s);
		unload(&l);
	}
}

/* The stdlib's models are affine: the 13B example takes the fast path,
 * and after the first (largest) variant its workspace no longer grows. */
static void the_fast_path_stops_allocating(void **state)
{
	struct loaded l;
	struct cm_scratch s = { 0 };
	const struct mem_result *r;

	(void)state;
	assert_true(load(&l, "examples/llama2-13b-zero3.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);
	struct cm_variant v = { 16, 8, 3, CM_CKPT_NONE };

	assert_non_null(m);
	assert_true(cm_is_affine(m, &v));
	assert_int_equal(cm_eval(m, &v, &s, &r), MEM_OK);
	unsigned char *buf;
	size_t cap;

	/* past the largest micro_batch the lowering was checked at: rebuilt */
	v.micro_batch = 2000;
	assert_false(cm_is_affine(m, &v));
	struct mem_result fr;

	assert_int_equal(cm_eval(m, &v, &s, &r), full(l.cr->ev, l.cr->jobs, &v, &fr));
	if (fr.nclasses)
		assert_same(r, &fr);
	mem_result_free(&fr);
	assert_int_equal(cm_eval(m, &v, &s, &r), MEM_OK);	/* sized by the largest */
	v.micro_batch = 1;
	assert_int_equal(cm_eval(m, &v, &s, &r), MEM_OK);	/* the plan made */
	buf = s.ws.buf;
	cap = s.ws.cap;
	const struct mem_class *classes = s.classes;

	for (uint64_t mb = 1; mb <= 16; mb++) {
		v.micro_batch = mb;
		assert_int_equal(cm_eval(m, &v, &s, &r), MEM_OK);
		assert_int_equal(s.path, CM_PATH_PLAN);
		assert_ptr_equal(r->classes, classes);
		assert_ptr_equal(s.ws.buf, buf);
		assert_int_equal(s.ws.cap, cap);
		assert_null(s.ws.heap);
		assert_string_equal(r->classes[0].explain_peak, "");	/* never printed */
		bool fits;

		assert_int_equal(cm_worst(r, &fits), r->classes[0].device_total);	/* one class */
		assert_int_equal(fits, r->classes[0].fits);
	}
	cm_scratch_free(&s);
	unload(&l);
}

/* memc search's order: micro_batch innermost, so that the layers'
 * parameter costs come from the workspace's cache (mem_cost.c cost_key):
 * the first micro_batch of each lowering makes its plan from analyses at
 * several micro-batches, which hit the cache; every variant still equals
 * the rebuild. */
static void the_cost_cache_is_used_and_exact(void **state)
{
	struct loaded l;
	struct cm_scratch s = { 0 };
	(void)state;
	assert_true(load(&l, "examples/llama2-13b-zero3.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);

	assert_non_null(m);
	for (int z = -1; z <= 3; z++)
		for (int c = 0; c < CM_CKPT__COUNT; c++)
			for (uint64_t mb = 1; mb <= 4; mb++) {
				struct cm_variant v = { mb, 2, z, (enum cm_checkpoint)c };
				const struct mem_result *cr;
				struct mem_result fr;
				uint64_t hits = s.ws.pcache_hits;
				enum mem_status cs = cm_eval(m, &v, &s, &cr), fs = full(l.cr->ev, l.cr->jobs, &v, &fr);

				assert_int_equal(cs, fs);
				if (fs != MEM_OK)
					continue;
				assert_same(cr, &fr);
				mem_result_free(&fr);
				if (mb == 1)	/* only the activations changed: layers hit */
					assert_true(s.ws.pcache_hits > hits);
			}
	cm_scratch_free(&s);
	assert_null(s.ws.pcache);
	unload(&l);
}

/* Field changes that a parameter's cost reads (memory.c cost_key):
 * case @k's first part is the job a workspace analyses first, the
 * second (@test) what it then analyses with that cache. */
static void change(struct mem_job *j, struct mem_param *p, int k, bool test)
{
	switch (k) {
	case 0: if (test) j->sharding = MEM_SHARD_ZERO1; break;
	case 1: p->shard_group = 0; if (test) j->dp_shard = j->dp / 2; break;	/* shard_n */
	case 2: if (test) j->offload_optimizer = true; break;
	case 3: j->offload_optimizer = true; if (test) j->offload_optimizer_nvme = true; break;
	case 4: if (test) j->offload_params = true; break;
	case 5: j->offload_params = true; if (test) j->offload_params_nvme = true; break;
	case 6: if (test) j->no_rounding = true; break;
	case 7: j->sharding = MEM_SHARD_DDP; if (test) j->grad_as_bucket_view = true; break;
	case 8: if (test) j->optimizer_in_backward = true; break;
	case 9: j->sharding = MEM_SHARD_FSDP_FULL; if (test) j->fsdp_reshard_to = 2; break;
	case 10: j->sharding = MEM_SHARD_FSDP_FULL; if (test) j->fsdp_no_sync = true; break;
	case 11: p->cast_saved = true, p->cast_bytes = 1 << 20;	/* an AMP cast: key.full */
		j->recompute = test ? MEM_RECOMPUTE_NONE : MEM_RECOMPUTE_FULL;
		break;
	case 12: if (test) p->weight_bytes += 4096, p->grad_bytes += 4096; break;	/* in place */
	case 13: if (test) p->trainable = !p->trainable; break;
	default: break;
	}
}
enum { NCHANGES = 14 };

/* The cache cannot go stale: for each change, one workspace analyses the
 * job before it, then the job after it (same addresses); the second
 * result equals a fresh mem_analyze of the same job. */
static void the_cost_cache_follows_every_key_field(void **state)
{
	struct loaded l;
	struct build b;
	struct build_override ov = { .zero = 3 };
	(void)state;
	assert_true(load(&l, "examples/llama2-13b-zero3.mem"));
	assert_true(build_job(l.cr->ev, &l.a, l.cr->jobs, &ov, true, &b));
	struct mem_job base = b.job, *j = &b.job;
	struct mem_param *p = NULL, p0;

	for (size_t k = 0; k < j->nblocks && !p; k++)
		for (size_t i = 0; i < j->blocks[k].nlayers && !p; i++)
			if (j->blocks[k].is_body && j->blocks[k].layers[i].nparams)
				/* the build's own arena memory: writable */
				p = (struct mem_param *)(uintptr_t)&j->blocks[k].layers[i].params[0];
	assert_non_null(p);
	p0 = *p;
	for (int k = 0; k < NCHANGES; k++) {
		struct mem_ws ws = { 0 };
		struct mem_result wr, fr;

		*j = base, *p = p0;
		change(j, p, k, false);
		assert_int_equal(mem_analyze_ws(j, &ws, &wr), MEM_OK);
		*j = base, *p = p0;
		change(j, p, k, true);
		enum mem_status ws_st = mem_analyze_ws(j, &ws, &wr), fs = mem_analyze(j, &fr);

		assert_int_equal(ws_st, fs);
		if (fs == MEM_OK)
			assert_same(&wr, &fr);
		mem_result_free(&fr);
		mem_ws_free(&ws);
	}
	*j = base, *p = p0;
	unload(&l);
}

/* Both walks of @j, every segment on its own and runs of consecutive
 * chunks, give the same classes, byte for byte (explain strings, chart
 * series and peak instants included); returns whether @j analysed. */
static bool same_walks(struct mem_job *j)
{
	struct mem_result x, y;

	j->walk_every_segment = true;
	enum mem_status sx = mem_analyze(j, &x);

	j->walk_every_segment = false;
	enum mem_status sy = mem_analyze(j, &y);

	assert_int_equal(sx, sy);
	if (sx == MEM_OK) {
		assert_int_equal(x.nclasses, y.nclasses);
		assert_memory_equal(x.classes, y.classes, x.nclasses * sizeof *x.classes);
	}
	mem_result_free(&x);
	mem_result_free(&y);
	return sx == MEM_OK;
}

/* An interleaved stage's vp chunks are walked as one run (mem_timeline.c
 * joins): the same figures as chunk by chunk, over the 70B example's
 * pp x vp x grad_accum, with the chart's series on and off. */
static void chunk_runs_equal_the_chunk_walk(void **state)
{
	static const uint32_t pps[] = { 1, 2, 4, 8 }, vps[] = { 1, 2, 3, 4, 5, 10, 20 };
	static const uint64_t gas[] = { 1, 8, 32 };
	struct loaded l;
	struct build b;
	struct build_override ov = { .zero = -1 };
	unsigned ok = 0;
	(void)state;
	assert_true(load(&l, "examples/llama2-70b-3d.mem"));
	assert_true(build_job(l.cr->ev, &l.a, l.cr->jobs, &ov, true, &b));
	struct mem_job base = b.job, *j = &b.job;
	uint64_t world = (uint64_t)base.dp * base.pp;

	for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++)
		for (size_t v = 0; v < sizeof vps / sizeof vps[0]; v++)
			for (size_t g = 0; g < sizeof gas / sizeof gas[0]; g++)
				for (int series = 0; series < 2; series++) {
					if (world % pps[a])
						continue;
					*j = base;
					j->pp = pps[a];
					j->dp = (uint32_t)(world / pps[a]);
					j->vp = vps[v];
					j->schedule = vps[v] > 1 ? MEM_PP_INTERLEAVED : MEM_PP_1F1B;
					j->micro_batches = gas[g];
					j->phase_series = series;
					ok += same_walks(j);
				}
	assert_true(ok >= 40);
	*j = base;
	unload(&l);
}

/* Files whose train blocks take the plan (analyzer/model/plan.h) over
 * every micro_batch, with what each one exercises. */
static const char *const plan_files[] = {
	"examples/llama2-13b-zero3.mem",	/* dense, ZeRO-3, one stage */
	"examples/llama2-70b-3d.mem",		/* pp 4 interleaved: a period of vp = 5 */
	"examples/mixtral-ep.mem",		/* MoE, expert parallel */
	"examples/llama3-8b-lora-a100.mem",	/* LoRA */
	"examples/llama2-7b-qlora-4090.mem",	/* QLoRA, paged optimizer states */
	"examples/bert-finetune.mem",		/* a period from 512-byte rounding */
	"tests/ckpt/activation-offload.mem",	/* activations offloaded: host bytes */
	"tests/offload/zero3-offload-optimizer.mem", /* ZeRO-3 offload */
	"tests/offload/megatron-cpu-offloading.mem", /* the first N repeats offloaded */
	"tests/pipelines/dualpipe.mem",		/* DualPipe: chunk by chunk in flight */
	"tests/pipelines/zero-bubble.mem",	/* ZB-H1 */
	"tests/fsdp1/cpu-offload.mem",		/* FSDP1 */
	"tests/comm/sp-buffer.mem",		/* SP gather buffer, async TP workspace */
	"tests/fsdp2/no-sync-accum.mem",	/* FSDP2 without gradient sync */
	"tests/fsdp2/policy-default-pp.mem",	/* FSDP2 under pp: the final reduce-scatter */
};

/* Every variant of one train block over micro_batch 1 .. 40 (each residue
 * of the 70B example's period several times), grad_accum as written and
 * 3, every ZeRO stage and checkpoint mode: the plan is what answers
 * (s.path), or the rebuild where the allocator is replayed, and it equals
 * the rebuild byte for byte.  Returns how many. */
static unsigned plan_grid(struct eval *ev, const struct check_job *cj, struct arena *a)
{
	struct cm_model *m = cm_compile(ev, a, cj, 0);
	struct cm_scratch s = { 0 };
	unsigned planned = 0;

	assert_non_null(m);
	for (uint64_t ga = 0; ga <= 3; ga += 3)
		for (int z = -1; z <= 3; z++)
			for (int c = 0; c < CM_CKPT__COUNT; c++)
				for (uint64_t mb = 1; mb <= 40; mb++) {
					struct cm_variant v = { mb, ga, z, (enum cm_checkpoint)c };
					const struct mem_result *cr;
					struct mem_result fr;
					enum mem_status cs = cm_eval(m, &v, &s, &cr);

					assert_int_equal(cs, full(ev, cj, &v, &fr));
					if (cs == MEM_OK) {
						/* a replayed job (torch FSDP's default,
						 * memory.h mem_replays_by_default) is
						 * rebuilt: the plan keeps no save_parts */
						assert_int_equal(s.path, fr.classes[0].replayed ? CM_PATH_REBUILT :
									 CM_PATH_PLAN);
						assert_same(cr, &fr);
						planned++;
					}
					mem_result_free(&fr);
				}
	cm_scratch_free(&s);
	return planned;
}

/* Every train block of every file of plan_files. */
static void plans_equal_the_full_build(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof plan_files / sizeof plan_files[0]; f++) {
		struct loaded l;

		assert_true(load(&l, plan_files[f]));
		for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next)
			if (cj->ok)
				assert_true(plan_grid(l.cr->ev, cj, &l.a) >= 40);
		unload(&l);
	}
}

/* GRPO's micro_batch must be a multiple of its group (2 here): the
 * lowering at micro_batch 1 does not build, yet the even micro-batches
 * do, and are answered by rebuilding them (they used to be refused). */
static void a_lowering_that_does_not_build_at_1_rebuilds(void **state)
{
	struct loaded l;
	struct cm_scratch s = { 0 };
	unsigned ok = 0;

	(void)state;
	assert_true(load(&l, "tests/rl/grpo-generate.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);

	assert_non_null(m);
	for (uint64_t mb = 1; mb <= 6; mb++) {
		struct cm_variant v = { mb, 0, -1, CM_CKPT_WRITTEN };
		const struct mem_result *cr;
		struct mem_result fr;
		enum mem_status cs = cm_eval(m, &v, &s, &cr);

		assert_int_equal(cs, full(l.cr->ev, l.cr->jobs, &v, &fr));
		if (cs == MEM_OK) {
			assert_int_equal(s.path, CM_PATH_REBUILT);
			assert_same(cr, &fr);
			ok++;
		}
		mem_result_free(&fr);
	}
	assert_int_equal(ok, 3);	/* 2, 4 and 6 */
	cm_scratch_free(&s);
	unload(&l);
}

/* The 13B example at ZeRO-0 with its full checkpointing: up to
 * micro_batch 14 the optimizer step is the peak (weights, fp32 states and
 * gradients, the step's temporaries), from 15 on the logits' backward of a
 * later micro-batch (its activations grow with the batch, the step's do
 * not).  The plan keeps both lines and switches where they cross, as the
 * rebuild does. */
static void the_plan_follows_the_peak_across_micro_batches(void **state)
{
	struct loaded l;
	struct cm_scratch s = { 0 };
	enum mem_phase seen[64];

	(void)state;
	assert_true(load(&l, "examples/llama2-13b-zero3.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);

	assert_non_null(m);
	for (uint64_t mb = 1; mb <= 40; mb++) {
		struct cm_variant v = { mb, 0, 0, CM_CKPT_WRITTEN };
		const struct mem_result *cr;
		struct mem_result fr;

		assert_int_equal(cm_eval(m, &v, &s, &cr), MEM_OK);
		assert_int_equal(s.path, CM_PATH_PLAN);
		assert_int_equal(full(l.cr->ev, l.cr->jobs, &v, &fr), MEM_OK);
		assert_same(cr, &fr);
		seen[mb] = cr->classes[0].peak.phase;
		mem_result_free(&fr);
	}
	assert_int_equal(seen[14], MEM_PHASE_OPTIMIZER);
	assert_int_not_equal(seen[15], MEM_PHASE_OPTIMIZER);
	assert_int_equal(seen[1], MEM_PHASE_OPTIMIZER);
	assert_int_equal(seen[40], seen[15]);
	cm_scratch_free(&s);
	unload(&l);
}

/* A plan per grad_accum: switching between two keeps both (a search
 * alternates them), and each still equals the rebuild. */
static void plans_per_grad_accum(void **state)
{
	struct loaded l;
	struct cm_scratch s = { 0 };

	(void)state;
	assert_true(load(&l, "examples/llama2-70b-3d.mem"));
	struct cm_model *m = cm_compile(l.cr->ev, &l.a, l.cr->jobs, 0);

	assert_non_null(m);
	for (int i = 0; i < 12; i++) {
		struct cm_variant v = { 1 + (uint64_t)i % 3, i % 2 ? 8 : 64, -1, CM_CKPT_WRITTEN };
		const struct mem_result *cr;
		struct mem_result fr;

		assert_int_equal(cm_eval(m, &v, &s, &cr), MEM_OK);
		assert_int_equal(s.path, CM_PATH_PLAN);
		assert_int_equal(full(l.cr->ev, l.cr->jobs, &v, &fr), MEM_OK);
		assert_same(cr, &fr);
		assert_true(cr->nclasses >= 1);
		mem_result_free(&fr);
	}
	cm_scratch_free(&s);
	unload(&l);
}

int main(int argc, char **argv)
{
	static char dir[4096];
	const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;

	if (slash && (size_t)(slash - argv[0]) < sizeof dir) {
		memcpy(dir, argv[0], (size_t)(slash - argv[0]));
		self_dir = dir;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_example_equals_the_full_build),
		cmocka_unit_test(a_non_affine_model_is_rebuilt),
		cmocka_unit_test(the_allocator_replay_is_rebuilt),
		cmocka_unit_test(the_fast_path_stops_allocating),
		cmocka_unit_test(the_cost_cache_is_used_and_exact),
		cmocka_unit_test(the_cost_cache_follows_every_key_field),
		cmocka_unit_test(chunk_runs_equal_the_chunk_walk),
		cmocka_unit_test(plans_equal_the_full_build),
		cmocka_unit_test(the_plan_follows_the_peak_across_micro_batches),
		cmocka_unit_test(plans_per_grad_accum),
		cmocka_unit_test(a_lowering_that_does_not_build_at_1_rebuilds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
