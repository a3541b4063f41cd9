/* SPDX-License-Identifier: MIT */
/*
 * test_build.c - the builder and the fit search on small programs: an
 * overflow is an error at its largest factor, a quiet build says nothing,
 * cluster and degree limits, nested repeats deeper than any fixed stack,
 * layer patterns (one unit per layer, equal runs joined), the allocator
 * replay's default per sharding,
 * and the property that every fix -Wcapacity prints checks clean and fits
 * once it is written into the file.
 */
#include "analyzer/lower/build.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/fit/fit.h"
#include "analyzer/memory/memory.h"
#include "lang/check.h"
#include "lang/import.h"
#include "lang/num.h"

#define FX_FIELDS                   \
	struct file_ast *files[1];  \
	struct program p;           \
	struct check_result *r;     \
	char src[8192];
#include "lang_fixture.h"

static const char prelude[] =
	"gpu G { memory = 4 GiB }\n"
	"precision p { weights = bf16, grads = bf16, compute = bf16 }\n"
	"optimizer adam { state m : [numel]\n state v : [numel] }\n";

/* Check @text as the root file; the jobs must check clean. */
static const struct check_job *check(struct fixture *fx, const char *text)
{
	struct file_ast *r = fx_parse(fx, "root.mem", text);

	fx_assert_no_diags(fx);
	fx->files[0] = r;
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = r };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	fx_assert_no_diags(fx);
	assert_non_null(fx->r->jobs);
	return fx->r->jobs;
}

static const char *job(struct fixture *fx, const char *layers, const char *model, const char *extra)
{
	snprintf(fx->src, sizeof fx->src,
		 "%s%s\nmodel m { %s }\ntrain t {\n  model = m\n  cluster = 1 x G\n  precision = p\n"
		 "  optimizer = adam\n  micro_batch = 1\n  seq_len = 8\n%s}\n",
		 prelude, layers, model, extra);
	return fx->src;
}

static void shape_overflow_is_at_its_largest_axis(void **state)
{
	struct fixture *fx = *state;
	const struct check_job *cj = check(fx, job(fx, "layer l { param w : [3, 8589934592, 4294967296] }",
						   "l()", ""));
	struct build_override none = { .zero = -1 };
	struct build b;

	assert_false(build_job(fx->r->ev, &fx->arena, cj, &none, false, &b));
	const struct diag *d = fx_only_diag(fx, "overflow");

	assert_string_equal(fx_text_of_last(fx, d->loc), "8589934592");
	assert_non_null(strstr(d->msg, "largest factor"));
	assert_int_equal(b.rep.params_total, 0);	/* no count from half a walk */
}

static void quiet_build_fails_without_a_word(void **state)
{
	struct fixture *fx = *state;
	const struct check_job *cj = check(fx, job(fx, "layer l { param w : [2] }",
						   "repeat 4294967296 { repeat 4294967296 { l() } }", ""));
	struct build_override none = { .zero = -1 };
	struct build b;

	assert_false(build_job(fx->r->ev, &fx->arena, cj, &none, true, &b));
	assert_int_equal(fx_count_diags(fx), 0);
	assert_false(build_job(fx->r->ev, &fx->arena, cj, &none, false, &b));
	fx_only_diag(fx, "overflow");
}

static void cluster_past_the_limit(void **state)
{
	struct fixture *fx = *state;
	struct build_override none = { .zero = -1 };
	struct build b;

	job(fx, "layer l { param w : [2] }", "l()", "");
	char *c = strstr(fx->src, "1 x G");

	assert_non_null(c);
	memmove(c + 10, c, strlen(c) + 1);
	memcpy(c, "2097152 x ", 10);	/* 2^21 x 1 GPUs */
	/* The checker refuses it first (out-of-range at the cluster); the
	 * builder, given the failed job, adds nothing and builds nothing. */
	fx->files[0] = fx_parse(fx, "root.mem", fx->src);
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = fx->files[0] };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	assert_string_equal(fx_text_of_last(fx, fx_only_diag(fx, "out-of-range")->loc), "2097152 x 1 x G");
	assert_non_null(fx->r->jobs);
	assert_false(build_job(fx->r->ev, &fx->arena, fx->r->jobs, &none, false, &b));
	assert_int_equal(fx_count_diags(fx), 1);
}

/* 40 nested repeats of 2 around one parameter of 1 element, with one more
 * parameter after each: 2^40 + 2^40 - 1. A fixed stack of saved
 * multipliers gets the second sum wrong past its depth. */
static void nested_repeats_past_any_fixed_stack(void **state)
{
	struct fixture *fx = *state;
	char layer[4096] = "layer l { ", *p = layer + strlen(layer);
	struct build_override none = { .zero = -1 };
	struct build b;

	for (int i = 0; i < 40; i++)
		p += sprintf(p, "repeat 2 {\n");
	p += sprintf(p, "param z : [1]\n");
	for (int i = 40; i > 0; i--)
		p += sprintf(p, "}\nparam a%d : [1]\n", i);
	sprintf(p, "}");
	const struct check_job *cj = check(fx, job(fx, layer, "l()", ""));

	assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, false, &b));
	assert_int_equal(b.rep.params_total, (UINT64_C(1) << 41) - 1);
}

/* `repeat i in n`: each layer is its own body unit; runs of equal layers
 * are one block. 7 layers, layer 2 and 5 wide: 2 narrow, 1 wide, 2 narrow,
 * 1 wide, 1 narrow, all body, 7 units (a nested repeat would make 1 unit
 * per group). Counts are exact sums over the layers. */
static void layer_pattern_blocks(void **state)
{
	struct fixture *fx = *state;
	const struct check_job *cj = check(fx, job(fx, "layer a { param w : [3] }\nlayer b { param w : [5] }",
						   "repeat i in 7 { if mod(i, 3) == 2 { b() } else { a() } }", ""));
	struct build_override none = { .zero = -1 };
	struct build bl;
	static const uint64_t reps[] = { 2, 1, 2, 1, 1 };
	uint64_t units = 0;

	assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, false, &bl));
	assert_int_equal(bl.job.nblocks, 5);
	for (size_t i = 0; i < bl.job.nblocks; i++) {
		assert_true(bl.job.blocks[i].is_body);
		assert_int_equal(bl.job.blocks[i].repeat, reps[i]);
		assert_int_equal(bl.job.blocks[i].layers[0].params[0].numel, i % 2 ? 5 : 3);
		units += bl.job.blocks[i].repeat;
	}
	assert_int_equal(units, 7);
	assert_int_equal(bl.rep.params_total, 5 * 3 + 2 * 5);
}

/* The same layers every pass: one block, as `repeat 6 { a() }` builds. */
static void equal_pattern_layers_are_one_block(void **state)
{
	struct fixture *fx = *state;
	const struct check_job *cj = check(fx, job(fx, "layer a(n: count) { param w : [3] }",
						   "repeat i in 6 { a(i) }", ""));
	struct build_override none = { .zero = -1 };
	struct build bl;

	assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, false, &bl));
	assert_int_equal(bl.job.nblocks, 1);
	assert_true(bl.job.blocks[0].is_body);
	assert_int_equal(bl.job.blocks[0].repeat, 6);
	assert_int_equal(bl.rep.params_total, 18);
}

/* data { padding = longest } with the replay: the builder builds the job
 * again at half the length and finds which share of a layer's saves grows
 * as seq_len^2.  At seq_len 8 (bf16): a [1, 8, 65536] save is 1 MiB per
 * token-linear, a [1, 8, 8, 8192] one 1 MiB quadratic; at 4 they are 0.5
 * and 0.25 MiB: half = full ((1 - q) / 2 + q / 4) gives q = 0.5.  The
 * temporary [1, 8, 8, 4096] is all quadratic (q = 1). */
static void padding_longest_splits_quadratic_saves(void **state)
{
	struct fixture *fx = *state;
	const struct check_job *cj = check(fx, job(fx,
		"layer l { param w : [4]\n saves a : [batch, seq, 65536]\n saves s : [batch, seq, seq, 8192]\n"
		" temp t : [batch, seq, seq, 4096] forward }", "l()",
		"  alloc { replay = true }\n  data { padding = longest }\n"));
	struct build_override none = { .zero = -1 };
	struct build b;

	assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, false, &b));
	assert_int_equal(b.job.shape_seq_len, 8);
	assert_int_equal(b.job.shape_min_seq_len, 1);
	assert_non_null(b.job.shape_quad);
	assert_int_equal(b.job.shape_quad_n, 1);
	assert_true(b.job.shape_quad[0].save > 0.4999 && b.job.shape_quad[0].save < 0.5001);
	assert_true(b.job.shape_quad[0].tfwd > 0.9999);
	assert_true(b.job.shape_quad[0].tbwd == 0);
}

/* The allocator replay's default follows the sharding (memory.h
 * mem_replays_by_default): torch FSDP's sharded modes and FSDP2 replay,
 * ZeRO-3 and the unsharded layouts keep the ratio, and `replay` written
 * either way wins. */
static void replay_default_per_sharding(void **state)
{
	/* dflt: the predicate's answer, what the job gets without `replay` */
	static const struct { const char *extra; enum mem_sharding s; bool replay, dflt; } c[] = {
		{ "", MEM_SHARD_DDP, false, false },
		{ "  zero = 1\n", MEM_SHARD_ZERO1, false, false },
		{ "  zero = 2\n", MEM_SHARD_ZERO2, false, false },
		{ "  zero = 3\n", MEM_SHARD_ZERO3, false, false },
		{ "  fsdp = full_shard\n", MEM_SHARD_FSDP_FULL, true, true },
		{ "  fsdp = shard_grad_op\n", MEM_SHARD_FSDP_GRAD_OP, true, true },
		{ "  fsdp = hybrid_shard\n", MEM_SHARD_FSDP_HYBRID, true, true },
		{ "  fsdp = no_shard\n", MEM_SHARD_FSDP_NO_SHARD, false, false },
		{ "  fsdp2 {}\n", MEM_SHARD_FSDP_FULL, true, true },
		{ "  fsdp2 {}\n  fsdp = hybrid_shard\n", MEM_SHARD_FSDP_HYBRID, true, true },
		{ "  fsdp = full_shard\n  alloc { replay = false }\n", MEM_SHARD_FSDP_FULL, false, true },
		{ "  fsdp2 {}\n  alloc { replay = false }\n", MEM_SHARD_FSDP_FULL, false, true },
		{ "  zero = 3\n  alloc { replay = true }\n", MEM_SHARD_ZERO3, true, false },
	};
	struct fixture *fx = *state;
	struct build_override none = { .zero = -1 };

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		snprintf(fx->src, sizeof fx->src,
			 "%slayer l { param w : [8] }\nmodel m { l() }\ntrain t {\n  model = m\n"
			 "  cluster = 4 x G\n  precision = p\n  optimizer = adam\n  micro_batch = 1\n"
			 "  seq_len = 8\n%s}\n", prelude, c[i].extra);
		const struct check_job *cj = check(fx, fx->src);
		struct build b;

		assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, true, &b));
		if (b.job.sharding != c[i].s || b.job.alloc_replay != c[i].replay)
			fail_msg("%s: sharding %d replay %d", c[i].extra, (int)b.job.sharding, b.job.alloc_replay);
		assert_int_equal(mem_replays_by_default(c[i].s), c[i].dflt);
	}
}

/* ---- every printed fix applies ---- */

struct edit {
	uint64_t gpus, micro_batch, tp, pp;
	const char *checkpoint;
	int zero;		/* -1: no zero key */
	uint64_t grad_accum;	/* 0: no grad_accum key */
};

/* A model whose shapes divide only by tp in {1, 2, 4} (heads = 4), too big
 * for a 4 GiB GPU at micro_batch 8 without checkpointing or tp = 4; tried
 * with pp 1 and 2 and with and without a zero key. */
static const char *fit_job(struct fixture *fx, const struct edit *e)
{
	char extra[256], zero[32] = "", ga[40] = "";

	if (e->zero >= 0)
		snprintf(zero, sizeof zero, "  zero = %d\n", e->zero);
	if (e->grad_accum)
		snprintf(ga, sizeof ga, "  grad_accum = %llu\n", (unsigned long long)e->grad_accum);
	snprintf(extra, sizeof extra, "  micro_batch = %llu\n%s  checkpoint = %s\n%s  parallel { tp = %llu, pp = %llu }\n",
		 (unsigned long long)e->micro_batch, ga, e->checkpoint, zero, (unsigned long long)e->tp,
		 (unsigned long long)e->pp);
	snprintf(fx->src, sizeof fx->src,
		 "%slayer l(h: count, heads: count) {\n  param w : [h, h / tp] linear\n"
		 "  param o : [heads / tp, h]\n  saves a : [batch, seq, 16 * h / tp]\n}\n"
		 "model m { repeat 8 { l(h = 4096, heads = 4) } }\n"
		 "train t {\n  model = m\n  cluster = %llu x G\n  precision = p\n  optimizer = adam\n"
		 "  seq_len = 512\n%s}\n", prelude, (unsigned long long)e->gpus, extra);
	return fx->src;
}

/* Analyse @e; with @warn run the fit search too. Returns whether it fits. */
static bool analyse(struct fixture *fx, const struct edit *e, bool warn)
{
	const struct check_job *cj = check(fx, fit_job(fx, e));
	struct build_override none = { .zero = -1 };
	struct build b;
	struct mem_result r;
	bool fits = true;

	assert_true(build_job(fx->r->ev, &fx->arena, cj, &none, false, &b));
	assert_int_equal(mem_analyze(&b.job, &r), MEM_OK);
	for (size_t i = 0; i < r.nclasses; i++)
		fits &= r.classes[i].fits;
	b.rep.result = &r;
	if (warn) {
		struct driver_opts o = { .ndirs = 0 };
		struct fit_memo *m = fit_memo_new(&fx->arena, &o, fx->t, &fx->p, fx->r->ev);

		fit_check(m, fx->r->ev, &fx->arena, cj, &b);
		fit_memo_free(m);
	}
	mem_result_free(&r);
	return fits;
}

/* One `key = value` of a note to @e; false for a key this job lacks. */
static bool apply_key(struct edit *e, const char *kv)
{
	unsigned long long v;
	char sym[16];

	if (sscanf(kv, "micro_batch = %llu", &v) == 1)
		e->micro_batch = v;
	else if (sscanf(kv, "grad_accum = %llu", &v) == 1)
		e->grad_accum = v;
	else if (sscanf(kv, "tp = %llu", &v) == 1)
		e->tp = v;
	else if (sscanf(kv, "pp = %llu", &v) == 1)
		e->pp = v;
	else if (sscanf(kv, "zero = %llu", &v) == 1)
		e->zero = (int)v;
	else if (sscanf(kv, "checkpoint = %15[a-z_]", sym) == 1)
		e->checkpoint = !strcmp(sym, "full") ? "full" : !strcmp(sym, "selective") ? "selective" : "none";
	else
		return false;
	return true;
}

/* Apply the note "a = 1 and parallel { tp = 2 } together fit (...)" to @e:
 * every `key = value` in it; false if one is a key this job lacks. */
static bool apply(struct edit *e, const char *note)
{
	char buf[256], *p = buf;
	size_t n = strcspn(note, "(");

	snprintf(buf, sizeof buf, "%.*s", (int)n, note);
	while (*p) {
		p += strspn(p, " ,{}");
		if (!strncmp(p, "and ", 4) || !strncmp(p, "parallel ", 9)) {
			p += strcspn(p, " ");
			continue;
		}
		if (!strncmp(p, "fits", 4) || !strncmp(p, "together", 8) || !*p)
			break;
		if (!apply_key(e, p))
			return false;
		p += strcspn(p, "=");
		p += strspn(p, "= ");
		p += strcspn(p, " ,}");
	}
	return true;
}

/* The fixes noted on the warnings of @fx, each applied to @e in a fresh
 * compilation: it must check clean (check() asserts it) and fit. */
static unsigned apply_each(struct fixture *fx, const struct edit *e)
{
	unsigned fixes = 0;

	for (const struct diag *d = diag_first(fx->de); d; d = d->next) {
		if (strcmp(diag_name(d->id), "capacity"))
			continue;	/* -Wheadroom: nothing to apply */
		for (const struct diag_note *n = d->notes; n; n = n->next) {
			struct edit applied = *e;
			void *s2 = NULL;

			if (!strstr(n->msg, "fit (") && !strstr(n->msg, "fits ("))
				continue;
			if (!apply(&applied, n->msg))
				continue;	/* offload, optimizer, cp: not in this job's text */
			assert_int_equal(fx_setup(&s2), 0);
			if (!analyse(s2, &applied, false))
				fail_msg("on %llu GPUs, '%s' does not fit once applied",
					 (unsigned long long)e->gpus, n->msg);
			fx_teardown(&s2);
			fixes++;
		}
	}
	return fixes;
}

static void every_printed_fix_checks_clean_and_fits(void **state)
{
	unsigned fixes = 0;
	bool tp4_on_6 = false;

	(void)state;
	for (unsigned c = 0; c < 12 * 2 * 2; c++) {
		struct edit e = { 1 + c % 12, 8, 1, 1 + c / 12 % 2, "none", c / 24 ? 0 : -1, 0 };
		void *s1 = NULL;

		if (e.gpus % e.pp)
			continue;	/* the job as written must check */
		assert_int_equal(fx_setup(&s1), 0);
		analyse(s1, &e, true);
		for (const struct diag *d = diag_first(((struct fixture *)s1)->de); d; d = d->next)
			for (const struct diag_note *n = d->notes; n; n = n->next)
				tp4_on_6 |= e.gpus == 6 && e.pp == 1 && strstr(n->msg, "tp = 4 ") != NULL;
		fixes += apply_each(s1, &e);
		fx_teardown(&s1);
	}
	assert_false(tp4_on_6);		/* 4 does not divide 6 GPUs */
	assert_true(fixes >= 12);	/* the search did propose things */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shape_overflow_is_at_its_largest_axis, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(quiet_build_fails_without_a_word, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(cluster_past_the_limit, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(nested_repeats_past_any_fixed_stack, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(layer_pattern_blocks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(equal_pattern_layers_are_one_block, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(padding_longest_splits_quadratic_saves, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(replay_default_per_sharding, fx_setup, fx_teardown),
		cmocka_unit_test(every_printed_fix_checks_clean_and_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
