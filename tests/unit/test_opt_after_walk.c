/* SPDX-License-Identifier: MIT */
/*
 * test_opt_after_walk.c - the builder's kept walk taken under another
 * optimizer (analyzer/model/build_cache.c `rederive`): the optimizer is
 * not in the walk's key, and a job whose walk was made under another one
 * has its trainable tensors' states evaluated again from what the walk
 * recorded of each (build_param.c `train_bytes`, `bld_opt_states`).
 *
 * For every optimizer of stdlib/optimizers.mem (and arguments that move
 * a tensor across min_size, min_8bit_size and page_min), on models with
 * tensors on both sides of those sizes, 1-D and 2-D, full fine-tuning and
 * LoRA, with and without an fp32 master: the build that takes the kept
 * walk is the build made without the cache, block by block and class by
 * class after mem_analyze; one that cannot be evaluated quietly is walked
 * and reports what the walk reports; and every line of the builder that
 * reads the optimizer is one this shortcut knows (the analysis after the
 * build, analyzer/memory, reads only the states put in).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "same_blocks.h"
#include "source_guard.h"
#include "analyzer/memory/memory.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"
#include "lang/strbuf.h"
#include "load_fixture.h"

static void assert_same_analysis(struct build *x, struct build *y)
{
	struct mem_result r1, r2;

	x->job.no_explain = y->job.no_explain = true;
	enum mem_status s1 = mem_analyze(&x->job, &r1), s2 = mem_analyze(&y->job, &r2);

	assert_int_equal(s1, s2);
	if (s1 == MEM_OK) {
		assert_int_equal(r1.nclasses, r2.nclasses);
		for (size_t i = 0; i < r1.nclasses; i++) {
			assert_int_equal(r1.classes[i].device_total, r2.classes[i].device_total);
			assert_memory_equal(&r1.classes[i], &r2.classes[i], sizeof r1.classes[i]);
		}
	}
	mem_result_free(&r1);
	mem_result_free(&r2);
}

/* @cj built with the cache and without it: the same blocks and figures.
 * Whether it built. */
static bool compare_one(struct eval *ev, const struct check_job *cj)
{
	struct arena a1 = { 0 }, a2 = { 0 };
	struct build kept, fresh;
	struct build_override ov = { .zero = -1 };

	build_cache_enable(ev, true);
	bool ok1 = build_job(ev, &a1, cj, &ov, true, &kept);

	build_cache_enable(ev, false);
	bool ok2 = build_job(ev, &a2, cj, &ov, true, &fresh);

	build_cache_enable(ev, true);
	assert_int_equal(ok1, ok2);
	if (ok1) {
		assert_same_blocks(&kept.job, &fresh.job);
		assert_same_analysis(&kept, &fresh);
	}
	arena_free(&a1);
	arena_free(&a2);
	return ok1;
}

/* Every optimizer of stdlib/optimizers.mem, and arguments that put
 * tensors on the other side of its size thresholds. */
static const char *const optimizers[] = {
	"adamw", "sgd", "sgd_momentum", "sgd(momentum = 0.5)", "adamw(impl = fused)",
	"adamw(impl = for_loop, amsgrad = true)", "adam", "adam(weight_decay = 0.1)", "adamw_8bit",
	"adamw_8bit(min_size = 100000)", "adamw_8bit(block = 64, min_size = 1)", "adam_8bit",
	"paged_adamw", "paged_adamw(page_min = 1000)", "paged_adamw_8bit",
	"paged_adamw_8bit(min_size = 100000)", "adafactor", "adafactor(beta1 = true)", "lion", "lion_8bit",
	"lion_8bit(min_size = 2048)", "lion_32bit",
};

/* A model of its own: w 2,048 and 32,768 elements (either side of 4,096),
 * a 1-D b of 48 and 96, rows and cols apart (Adafactor factorises). */
static const char models_text[] =
	"import \"gpus/nvidia\"\nimport \"models/gpt2\"\nimport \"models/llama\"\nimport \"optimizers\"\n"
	"import \"precision\"\n"
	"layer lin(d: count, e: count) {\n  input x : [batch, seq, d]\n  param w : [d, e] linear\n"
	"  param b : [3 * e]\n  saves x_in : [batch, seq, d] for_grad(w)\n}\n"
	"model tiny(d: count) {\n  lin(d, d / 2)\n  repeat 3 { lin(4 * d, 2 * d) }\n}\n";

static const char *const models[][2] = {
	{ "tiny(d = 64)", NULL },
	{ "gpt2", NULL },
	{ "llama2_7b", "lora(r = 16, alpha = 32, targets = [q, v])" },
	{ "tiny(d = 64)", "lora(r = 4, alpha = 8, targets = [w])" },
};

static const char *const precisions[] = { "bf16_mixed", "bf16_true" };

static char *jobs_text(size_t *ngroups)
{
	struct strbuf sb;
	size_t len, n = 0;

	strbuf_init(&sb);
	strbuf_addstr(&sb, models_text);
	for (size_t m = 0; m < sizeof models / sizeof *models; m++)
		for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++, (*ngroups)++)
			for (size_t o = 0; o < sizeof optimizers / sizeof *optimizers; o++) {
				char buf[512];

				snprintf(buf, sizeof buf,
					 "train j%zu {\n  model = %s\n  cluster = 1 x H100_SXM_80GB\n  precision = %s\n"
					 "  optimizer = %s\n  micro_batch = 1\n  seq_len = 256\n%s%s%s}\n",
					 n++, models[m][0], precisions[p], optimizers[o],
					 models[m][1] ? "  finetune = " : "", models[m][1] ? models[m][1] : "",
					 models[m][1] ? "\n" : "");
				strbuf_addstr(&sb, buf);
			}
	return strbuf_detach(&sb, &len);
}

static struct check_result *check_text(struct loaded *l, const char *text, struct diag_engine **out)
{
	struct import_opts io = { .stdlib_dir = "stdlib" };

	memset(l, 0, sizeof *l);
	l->devnull = fopen("/dev/null", "w");
	struct interner *in = interner_new(&l->a);
	struct src_table *src = src_table_new(&l->a);

	*out = diag_new(&l->a, src, l->devnull);
	src_set_overlay(src, "jobs.mem", text, strlen(text));
	struct program *p = import_load(&l->a, in, src, *out, "jobs.mem", &io);

	assert_non_null(p->root);
	l->cr = check_program(&l->a, in, *out, src, p);
	assert_int_equal(diag_error_count(*out), 0);
	return l->cr;
}

/* Each (model, precision) walks once, under its first optimizer; every
 * other optimizer of it takes that walk with its own states put in. */
static void every_optimizer_equals_its_walk(void **state)
{
	size_t groups = 0, built = 0, jobs = 0;
	char *text = jobs_text(&groups);
	struct loaded l;
	struct diag_engine *de;
	unsigned long hits, misses, local, store;

	(void)state;
	check_text(&l, text, &de);
	for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next, jobs++)
		built += compare_one(l.cr->ev, cj);
	build_cache_stats(l.cr->ev, &hits, &misses);
	build_cache_rederived(l.cr->ev, &local, &store);
	assert_int_equal(jobs, groups * (sizeof optimizers / sizeof *optimizers));
	assert_int_equal(built, jobs);
	assert_int_equal(misses, groups);
	assert_int_equal(hits, 0);
	assert_int_equal(local, jobs - groups);
	unload(&l);
	free(text);
}

/* An optimizer whose states overflow: the quiet evaluation fails, the job
 * walks and reports the overflow, as it does without the cache. */
static const char overflow_text[] =
	"import \"gpus/nvidia\"\nimport \"optimizers\"\nimport \"precision\"\n"
	"layer lin(d: count) {\n  input x : [batch, seq, d]\n  param w : [d, d] linear\n"
	"  saves x_in : [batch, seq, d] for_grad(w)\n}\n"
	"model one(d: count) { lin(d) }\n"
	"optimizer huge {\n  state m : [numel, 1_000_000_000_000, 1_000_000_000_000] fp32\n}\n"
	"train a {\n  model = one(d = 1024)\n  cluster = 1 x A100_80GB\n  precision = bf16_true\n"
	"  optimizer = adamw\n  micro_batch = 1\n  seq_len = 1024\n}\n"
	"train b : a { optimizer = huge }\n";

static unsigned build_errors(struct loaded *l, struct diag_engine *de, const struct check_job *cj, bool *ok)
{
	struct arena a = { 0 };
	struct build out;
	struct build_override ov = { .zero = -1 };
	unsigned e0 = diag_error_count(de);

	*ok = build_job(l->cr->ev, &a, cj, &ov, false, &out);
	arena_free(&a);
	return diag_error_count(de) - e0;
}

static void a_failing_optimizer_walks(void **state)
{
	unsigned errs[2];
	bool ok[2];

	(void)state;
	for (int cached = 0; cached < 2; cached++) {
		struct loaded l;
		struct diag_engine *de;
		unsigned long local, store;
		bool first;

		check_text(&l, overflow_text, &de);
		build_cache_enable(l.cr->ev, cached);
		assert_int_equal(build_errors(&l, de, l.cr->jobs, &first), 0);
		assert_true(first);
		errs[cached] = build_errors(&l, de, l.cr->jobs->next, &ok[cached]);
		build_cache_rederived(l.cr->ev, &local, &store);
		assert_int_equal(local, 0);
		unload(&l);
	}
	assert_int_equal(errs[0], 1);
	assert_int_equal(errs[1], errs[0]);
	assert_false(ok[0]);
	assert_false(ok[1]);
}

/* Every line of the builder that reads the job's optimizer or the states
 * it gives. Evaluating the body per tensor after the walk stands for the
 * walk only while nothing else of the walk reads them: a line not listed
 * here is a new reader, which the shortcut must learn (or refuse) before
 * this list does. */
static const char *const readers[] = {
	"build_job.c: r->optimizer = cj->optimizer.label ? cj->optimizer.label : cj->optimizer.decl->name;",
	"build_job.c: cj->optimizer.kind != VAL_INSTANCE || !bld_setup_precision(&b, cj->precision))",
	"build_job.c: b.optimizer = cj->optimizer;",
	"build_param.c: static struct opt_memo *opt_lookup(struct bld *b, uint64_t numel, uint64_t rows, uint64_t cols,",
	"build_param.c: struct opt_memo *m = &b->memo[i];",
	"build_param.c: static struct opt_memo *opt_eval(struct bld *b, uint64_t numel, uint64_t rows, uint64_t cols,",
	"build_param.c: struct opt_memo *m = opt_lookup(b, numel, rows, cols, rank, dt);",
	"build_param.c: eval_walk(b->ev, b->optimizer, e, &ops, &w);",
	"build_param.c: *m = (struct opt_memo){ numel, rows, cols, rank, dt, w.state, w.paged, w.temp, w.grouped };",
	"build_param.c: static void put_states(struct bld *b, const struct opt_memo *m, uint64_t mult, struct mem_param *p)",
	"build_param.c: struct opt_memo *m = opt_eval(b, base, rows, cols, rank, opt_dt);",
	"build_param.c: put_states(b, opt_eval(b, u->base, u->rows, u->cols, u->rank, u->dtype), u->mult, p);",
	"build_cache.c: memset(&img->optimizer, 0, sizeof img->optimizer);",
	"build_cache.c: walk_key_value(&c->opt, NULL, &b->optimizer);",
	"build_cache.c: b->optimizer = cur.optimizer;",
	"build_impl.h: struct opt_memo {",
	"build_impl.h: struct opt_memo *memo;",
};

/* @word in @line as a whole name (not optimizer_in_backward). */
static bool has_word(const char *line, const char *word)
{
	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
		char next = p[strlen(word)];

		if (next != '_' && !(next >= 'a' && next <= 'z') && !(next >= '0' && next <= '9'))
			return true;
	}
	return false;
}

static bool reads_optimizer(const char *line)
{
	if (line[0] == '*' || (line[0] == '/' && line[1] == '*'))
		return false;	/* a comment */
	return has_word(line, "->optimizer") || has_word(line, "b.optimizer") || has_word(line, "opt_memo") ||
	       strstr(line, "opt_eval(");
}

static const struct source_guard opt_guard = {
	readers, sizeof readers / sizeof *readers, reads_optimizer, "the optimizer"
};

static void every_optimizer_reader_known(void **state)
{
	(void)state;
	assert_int_equal(guard_unlisted(&opt_guard, "analyzer/lower/*.c") +
			 guard_unlisted(&opt_guard, "analyzer/lower/*.h") +
			 guard_unlisted(&opt_guard, "analyzer/model/*.c"), 0);
	assert_true(guard_listed(&opt_guard, "build_param.c", "eval_walk(b->ev, b->optimizer, e, &ops, &w);"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_optimizer_reader_known),
		cmocka_unit_test(every_optimizer_equals_its_walk),
		cmocka_unit_test(a_failing_optimizer_walks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
