/* SPDX-License-Identifier: MIT */
/*
 * test_fit_block.c - the fix search's block path (analyzer/cmd/fit_variant.c,
 * docs/fit.md "Verified"): a variant's train block parsed and checked
 * alone, among the file's declarations checked once, gives the outcome of
 * compiling the whole text with the change written in; the search finds
 * the same fixes either way; and where the block path disagrees with the
 * text (here: a context whose GPU is not the file's), the verification
 * catches it and the text decides; and a variant naming a stdlib
 * declaration the context left a stub goes to the text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/fit_impl.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

/* Too big for 2 x 4 GiB at micro_batch 8 without checkpointing (the
 * model of test_build.c); H is the larger GPU a fix may name. */
#define DECLS(g_memory)                                                                         \
	"gpu G { memory = " g_memory " }\ngpu H { memory = 64 GiB }\n"                          \
	"precision p { weights = bf16, grads = bf16, compute = bf16 }\n"                        \
	"optimizer adam { state m : [numel]\n state v : [numel] }\n"                            \
	"layer l(h: count, heads: count) {\n  param w : [h, h / tp] linear\n"                   \
	"  param o : [heads / tp, h]\n  saves a : [batch, seq, 16 * h / tp]\n}\n"               \
	"model m { repeat 8 { l(h = 4096, heads = 4) } }\n"

static const char job_text[] = DECLS("4 GiB")
	"train t {\n  model = m\n  cluster = 2 x G\n  precision = p\n  optimizer = adam\n"
	"  micro_batch = 8\n  seq_len = 512\n  checkpoint = none\n}\n";

struct unit {
	struct arena a;
	struct interner *in;
	struct src_table *src;
	struct diag_engine *de;
	struct program *p;
	struct check_result *cr;
};

/* @len bytes of @text as root.mem, loaded with @io, its declarations
 * checked (and its jobs, with @jobs). */
static void compile_with(struct unit *u, const char *text, size_t len, bool jobs,
			 const struct import_opts *io)
{
	memset(u, 0, sizeof *u);
	u->in = interner_new(&u->a);
	u->src = src_table_new(&u->a);
	u->de = diag_new(&u->a, u->src, NULL);
	src_set_overlay(u->src, "root.mem", text, len);
	u->p = import_load(&u->a, u->in, u->src, u->de, "root.mem", io);
	assert_non_null(u->p->root);
	u->cr = jobs ? check_program(&u->a, u->in, u->de, u->src, u->p) :
		       check_program_decls(&u->a, u->in, u->de, u->src, u->p);
	assert_int_equal(diag_error_count(u->de), 0);
	diag_set_max_errors(u->de, 0);
}

/* @text as root.mem without the stdlib. */
static void compile(struct unit *u, const char *text, bool jobs)
{
	struct import_opts io = { .stdlib_dir = NULL };

	compile_with(u, text, strlen(text), jobs, &io);
}

/* The search's context as analyzer/fit/fit.c sets it, with @block the block
 * path through @ctx's declarations (else every variant compiles the text). */
static void setup_ctx(struct fit_ctx *c, const struct driver_opts *o, struct unit *job, struct unit *ctx,
		      bool block)
{
	memset(c, 0, sizeof *c);
	c->opts = o;
	c->path = "root.mem";
	c->text = job_text;
	c->len = strlen(job_text);
	c->src = job->src;
	c->prog = ctx->p;
	c->ev = job->cr->ev;
	c->gpu_ev = ctx->cr->ev;
	c->job = job->cr->jobs;
	c->job_name = "t";
	c->job_headroom = 0.10;
	c->max_fixes = 3;
	c->max_builds = 1000;
	if (!block)
		return;
	c->ctx = ctx->cr;
	c->ctx_src = ctx->src;
	c->ctx_in = ctx->in;
	c->ctx_de = ctx->de;
	c->ctx_arena = &ctx->a;
}

static void one(struct fit_set *v, const char *top, const char *sub, const char *value,
		struct fit_change *ch)
{
	*v = (struct fit_set){ top, sub, value, NULL, false };
	*ch = (struct fit_change){ v, 1 };
}

static void each_variant_is_what_the_text_gives(void **state)
{
	struct driver_opts o = { .ndirs = 0 };
	struct unit job, ctx;
	struct fit_ctx c;
	static const char *const v[][3] = {
		{ "micro_batch", NULL, "1" }, { "micro_batch", NULL, "4" }, { "checkpoint", NULL, "full" },
		{ "checkpoint", NULL, "selective" }, { "zero", NULL, "3" }, { "parallel", "tp", "2" },
		{ "parallel", "tp", "4" }, { "parallel", "tp", "8" }, { "cluster", NULL, "2 x H" },
		{ "seq_len", NULL, "2" }, { "micro_batch", NULL, "0" },
	};
	unsigned fits = 0, over = 0, refused = 0;

	(void)state;
	compile(&job, job_text, true);
	compile(&ctx, DECLS("4 GiB"), false);
	setup_ctx(&c, &o, &job, &ctx, true);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct fit_set set;
		struct fit_change ch;
		struct fit_outcome got;

		one(&set, v[i][0], v[i][1], v[i][2], &ch);
		fit_try(&c, i ? &ch : NULL, &got);
		assert_true(fit_verify(&c, i ? &ch : NULL, &got));
		fits += got.ok && got.fits;
		over += got.ok && !got.fits;
		refused += !got.ok;	/* tp = 8 leaves heads / tp a remainder; micro_batch 0 */
	}
	assert_true(fits >= 2 && over >= 2 && refused >= 2);
	fit_ctx_release(&c);
	arena_free(&c.arena);
	arena_free(&ctx.a);
	arena_free(&job.a);
}

static void same_fixes(const struct fit_answer *x, const struct fit_answer *y)
{
	assert_int_equal(x->nfixes, y->nfixes);
	for (size_t i = 0; i < x->nfixes; i++) {
		assert_int_equal(x->fixes[i].total, y->fixes[i].total);
		assert_int_equal(x->fixes[i].nlines, y->fixes[i].nlines);
		for (size_t k = 0; k < x->fixes[i].nlines; k++)
			assert_string_equal(x->fixes[i].lines[k], y->fixes[i].lines[k]);
	}
	assert_int_equal(x->tight.nlines, y->tight.nlines);
	assert_int_equal(x->tight.total, y->tight.total);
	for (size_t k = 0; k < x->tight.nlines; k++)
		assert_string_equal(x->tight.lines[k], y->tight.lines[k]);
}

/* @ctx_decls: the context the block path checks in. */
static void search(const char *ctx_decls, bool block, struct fit_answer *ans, struct fit_ctx *c,
		   struct unit *job, struct unit *ctx)
{
	static const struct driver_opts o = { .ndirs = 0 };

	compile(job, job_text, true);
	compile(ctx, ctx_decls, false);
	setup_ctx(c, &o, job, ctx, block);
	fit_search_fixes(c, ans);
}

static void release(struct fit_ctx *c, struct unit *job, struct unit *ctx)
{
	fit_ctx_release(c);
	arena_free(&c->arena);
	arena_free(&ctx->a);
	arena_free(&job->a);
}

static void the_search_finds_the_text_s_fixes(void **state)
{
	struct unit j1, x1, j2, x2;
	struct fit_ctx text, block;
	struct fit_answer a, b;

	(void)state;
	search(DECLS("4 GiB"), false, &a, &text, &j1, &x1);
	search(DECLS("4 GiB"), true, &b, &block, &j2, &x2);
	assert_true(a.nfixes >= 2);
	same_fixes(&a, &b);
	assert_int_equal(text.builds, block.builds);
	assert_non_null(block.ctx);	/* verified: no fallback */
	release(&text, &j1, &x1);
	release(&block, &j2, &x2);
}

/* A context whose G has 400 GiB: by the block path the job fits as
 * written; the text says it does not, so the text's search stands. */
static void a_wrong_context_falls_back_to_the_text(void **state)
{
	struct unit j1, x1, j2, x2;
	struct fit_ctx text, block;
	struct fit_answer a, b;

	(void)state;
	search(DECLS("4 GiB"), false, &a, &text, &j1, &x1);
	search(DECLS("400 GiB"), true, &b, &block, &j2, &x2);
	assert_null(block.ctx);
	assert_true(b.as_written.ok && !b.as_written.fits);
	same_fixes(&a, &b);
	release(&text, &j1, &x1);
	release(&block, &j2, &x2);
}

/* A stdlib job, and a context that reached nothing of the stdlib (no
 * words besides its imports, no reach_extra): every declaration the
 * block names is a stub there, so the block path must hand each variant
 * to the text (reach_misses), which checks and analyses it in full. */
static const char std_text[] =
	"import \"gpus/nvidia\"\nimport \"models/llama\"\nimport \"optimizers\"\nimport \"precision\"\n"
	"train t {\n  model = llama2_7b\n  cluster = 1 x A100_80GB\n  precision = bf16_true\n"
	"  optimizer = adamw\n  micro_batch = 1\n  seq_len = 512\n}\n";

static void compile_std(struct unit *u, const char *text, size_t len, bool jobs)
{
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests };

	compile_with(u, text, len, jobs, &io);
}

static void a_stub_named_sends_the_variant_to_the_text(void **state)
{
	struct driver_opts o = { .ndirs = 0, .stdlib_dir = "stdlib" };
	struct unit job, ctx;
	struct fit_ctx c;
	struct fit_set set;
	struct fit_change ch;
	struct fit_outcome as_written, changed;

	(void)state;
	compile_std(&job, std_text, strlen(std_text), true);
	compile_std(&ctx, std_text, (size_t)(strstr(std_text, "train") - std_text), false);
	assert_non_null(ctx.p->reach);
	memset(&c, 0, sizeof c);
	c = (struct fit_ctx){ .opts = &o, .path = "root.mem", .stdlib = "stdlib", .text = std_text,
			      .len = strlen(std_text), .src = job.src, .prog = ctx.p, .ev = job.cr->ev,
			      .gpu_ev = ctx.cr->ev, .job = job.cr->jobs, .job_name = "t", .job_headroom = 0.10,
			      .max_fixes = 3, .max_builds = 1000, .ctx = ctx.cr, .ctx_src = ctx.src,
			      .ctx_in = ctx.in, .ctx_de = ctx.de, .ctx_arena = &ctx.a, .ctx_reach = ctx.p->reach };
	fit_try(&c, NULL, &as_written);
	one(&set, "optimizer", NULL, "adamw_8bit", &ch);
	fit_try(&c, &ch, &changed);
	assert_true(as_written.ok && changed.ok);	/* a stub checked would be an error */
	assert_true(changed.total < as_written.total);	/* 8-bit states are smaller */
	assert_true(fit_verify(&c, NULL, &as_written));
	assert_true(fit_verify(&c, &ch, &changed));
	fit_ctx_release(&c);
	arena_free(&c.arena);
	arena_free(&ctx.a);
	arena_free(&job.a);
}

/* What a variant leaves of the GPU: on it, the GPU's memory less its
 * total (no paged states here); inside the headroom only with 10% of it
 * left; off it, nothing. Micro-batches 1 to 16 on 4 GiB (3 fit, 1 is on
 * the GPU under the headroom, 12 are over it), and the block path and the
 * text agree on each. */
static void the_margin_is_what_the_gpu_has_left(void **state)
{
	struct driver_opts o = { .ndirs = 0 };
	struct unit job, ctx;
	struct fit_ctx c;
	const uint64_t cap = 4ull << 30;
	unsigned fits = 0, tight = 0, over = 0;

	(void)state;
	compile(&job, job_text, true);
	compile(&ctx, DECLS("4 GiB"), false);
	setup_ctx(&c, &o, &job, &ctx, true);
	for (unsigned mb = 1; mb <= 16; mb++) {
		char v[8];
		struct fit_set set;
		struct fit_change ch;
		struct fit_outcome got;

		snprintf(v, sizeof v, "%u", mb);
		one(&set, "micro_batch", NULL, v, &ch);
		fit_try(&c, &ch, &got);
		assert_true(got.ok && fit_verify(&c, &ch, &got));
		assert_int_equal(got.on_gpu, got.total <= cap);
		assert_int_equal(got.spare, got.on_gpu ? cap - got.total : 0);
		if (got.on_gpu)
			assert_int_equal(got.capacity, cap);
		assert_true(!got.fits || got.spare * 10 >= cap);
		fits += got.fits;
		tight += got.on_gpu && !got.fits;
		over += !got.on_gpu;
	}
	assert_true(fits >= 1 && tight >= 1 && over >= 1);	/* 3, 1 and 12 */
	fit_ctx_release(&c);
	arena_free(&c.arena);
	arena_free(&ctx.a);
	arena_free(&job.a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_variant_is_what_the_text_gives),
		cmocka_unit_test(the_search_finds_the_text_s_fixes),
		cmocka_unit_test(a_wrong_context_falls_back_to_the_text),
		cmocka_unit_test(a_stub_named_sends_the_variant_to_the_text),
		cmocka_unit_test(the_margin_is_what_the_gpu_has_left),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
