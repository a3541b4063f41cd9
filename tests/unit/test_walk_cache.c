/* SPDX-License-Identifier: MIT */
/*
 * test_walk_cache.c - the checker's walk kept per model and bindings
 * (lang/walk_cache.c): over jobs that vary what the model reads and what
 * it does not, every job's kept walk equals a fresh walk under its own
 * bindings; a key the model reads changes the key, one it never reads
 * does not; a walk that reported is never kept, so each job reports at
 * its own lines.
 */
#include "lang/check.h"
#include "lang/check_impl.h"
#include "lang/eval.h"
#include "lang/eval_impl.h"
#include "lang/import.h"
#include "lang/num.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/walk_cache.h"

#define FX_FIELDS                   \
	struct file_ast *files[1];  \
	struct program p;           \
	struct check_result *r;     \
	char prog[1 << 16];
#include "lang_fixture.h"

#define DECLS                                                              \
	"gpu G { memory = 80 GiB; bandwidth = 2 TB/s; bf16 = 312 TFLOPS }\n" \
	"precision mixed { weights = bf16; grads = bf16; compute = bf16; master = fp32 }\n" \
	"optimizer adam(impl: foreach | fused = foreach) {\n"              \
	"  state m : [numel]\n"                                            \
	"  state v : [numel]\n"                                            \
	"}\n"                                                              \
	"layer mlp(hidden: count, ffn: count) {\n"                         \
	"  input x : [batch, seq / sp, hidden]\n"                          \
	"  param up : [hidden, ffn / tp] linear\n"                         \
	"  param down : [ffn / tp, hidden] linear\n"                       \
	"  if checkpoint == none { saves h : [batch, seq, ffn / tp] for_grad(down) }\n" \
	"  if tp > 2 { param extra : [hidden, 8] }\n"                      \
	"}\n"                                                              \
	"model tiny(layers: count, hidden: count) {\n"                     \
	"  repeat layers { mlp(hidden, hidden * 4) }\n"                    \
	"}\n"

/* One train block; @extra goes inside it, after the required keys. */
static void add_job(struct fixture *fx, unsigned i, unsigned layers, unsigned mb, const char *extra)
{
	size_t n = strlen(fx->prog);
	int w = snprintf(fx->prog + n, sizeof fx->prog - n,
			 "train t%u {\n  model = tiny(layers = %u, hidden = 256)\n  cluster = 8 x G\n"
			 "  precision = mixed\n  optimizer = adam\n  micro_batch = %u\n  seq_len = 1024\n%s}\n",
			 i, layers, mb, extra);

	assert_true(w > 0 && (size_t)w < sizeof fx->prog - n);
}

static struct check_result *check_text(struct fixture *fx)
{
	struct file_ast *root = fx_parse(fx, "root.mem", fx->prog);

	fx_assert_no_diags(fx);
	fx->files[0] = root;
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = root };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	assert_non_null(fx->r);
	return fx->r;
}

static void on_tensor(void *ctx, const struct walk_tensor *t)
{
	check_model_tensor(ctx, t);
}

static void on_enter(void *ctx, const struct stmt *s, struct value count)
{
	(void)s;
	check_model_repeat_enter(ctx, count);
}

static void on_leave(void *ctx, const struct stmt *s)
{
	(void)s;
	check_model_repeat_leave(ctx);
}

static uint64_t bound_tp(struct fixture *fx, const struct check_job *j)
{
	struct value v;
	uint64_t u = 0;

	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, "tp"), &v));
	assert_true(num_to_u64(v.num, &u));
	return u;
}

/* What the checker's walk records, walked afresh. */
static struct check_model fresh_walk(struct eval *ev, const struct check_job *j)
{
	static const struct walk_ops ops = { .tensor = on_tensor, .repeat_enter = on_enter,
					     .repeat_leave = on_leave };
	struct check_model m = { .ev = ev };

	eval_walk(ev, j->model, j->bindings, &ops, &m);
	return m;
}

static void assert_same_walk(const struct check_model *a, const struct check_model *b)
{
	assert_int_equal(a->nparams, b->nparams);
	for (size_t i = 0; i < a->nparams; i++) {
		assert_ptr_equal(a->params[i].stmt, b->params[i].stmt);
		assert_ptr_equal(a->params[i].layer, b->params[i].layer);
	}
	assert_int_equal(a->have_body, b->have_body);
	assert_int_equal(a->body_known, b->body_known);
	assert_int_equal(a->body, b->body);
}

/* 48 jobs over 2 depths x 3 micro-batches x 2 tp x 2 checkpoint modes, each
 * also with a grad_accum and zero of its own: 24 distinct walks. */
static void kept_walks_equal_fresh_ones(void **state)
{
	struct fixture *fx = *state;
	unsigned i = 0;

	snprintf(fx->prog, sizeof fx->prog, "%s", DECLS);
	for (unsigned r = 0; r < 2; r++)
		for (unsigned layers = 2; layers <= 3; layers++)
			for (unsigned mb = 1; mb <= 3; mb++)
				for (unsigned tp = 2; tp <= 4; tp += 2)
					for (unsigned ck = 0; ck < 2; ck++) {
						char extra[160];

						snprintf(extra, sizeof extra,
							 "  grad_accum = %u\n  zero = %u\n  checkpoint = %s\n"
							 "  parallel { tp = %u }\n",
							 1 + i, r, ck ? "full" : "none", tp);
						add_job(fx, i++, layers, mb, extra);
					}
	struct check_result *r = check_text(fx);
	unsigned long hits, misses;
	unsigned n = 0;

	fx_assert_no_diags(fx);
	walk_cache_stats(r->ev, &hits, &misses);
	assert_int_equal(hits + misses, 48);
	assert_int_equal(misses, 24);
	for (const struct check_job *j = r->jobs; j; j = j->next, n++) {
		struct check_model kept = { .ev = r->ev }, m = fresh_walk(r->ev, j);

		assert_true(j->ok);
		assert_true(walk_cache_find(r->ev, j->model, j->bindings, &kept));
		assert_same_walk(&kept, &m);
		/* tp 4 walks the extra parameter: the outcome depends on a binding */
		assert_int_equal(m.nparams, bound_tp(fx, j) > 2 ? 3 : 2);
	}
	assert_int_equal(n, 48);
}

static const struct check_job *job_at(const struct check_result *r, unsigned i)
{
	const struct check_job *j = r->jobs;

	while (j && i--)
		j = j->next;
	assert_non_null(j);
	return j;
}

static uint64_t key_of(const struct check_result *r, unsigned i)
{
	const struct check_job *j = job_at(r, i);

	return walk_cache_key(r->ev, j->model, j->bindings);
}

/* Job 0 as written; each other job changes one key. */
static void keys_follow_what_the_model_reads(void **state)
{
	struct fixture *fx = *state;
	static const char *const unread[] = { "  grad_accum = 8\n", "  zero = 3\n", "  headroom = 0.2\n" };
	static const char *const read[] = { "  target_len = 2048\n", "  parallel { tp = 4 }\n",
					    "  checkpoint = full\n", "  attention = eager\n", "  kernels = fused\n" };
	unsigned i = 0;

	snprintf(fx->prog, sizeof fx->prog, "%s", DECLS);
	add_job(fx, i++, 2, 1, "");
	for (size_t k = 0; k < sizeof unread / sizeof unread[0]; k++)
		add_job(fx, i++, 2, 1, unread[k]);
	add_job(fx, i++, 2, 2, "");		/* micro_batch */
	add_job(fx, i++, 3, 1, "");		/* the model's own argument */
	for (size_t k = 0; k < sizeof read / sizeof read[0]; k++)
		add_job(fx, i++, 2, 1, read[k]);
	struct check_result *r = check_text(fx);
	unsigned n = 1 + (unsigned)(sizeof unread / sizeof unread[0]);

	fx_assert_no_diags(fx);

	for (unsigned k = 1; k < n; k++)
		assert_true(key_of(r, k) == key_of(r, 0));
	for (unsigned k = n; k < i; k++)
		for (unsigned l = 0; l < k; l++)
			assert_true(key_of(r, k) != key_of(r, l));
}

/* A string literal is not interned (lex_string copies each one): two jobs
 * that write the same "..." argument, and one that writes another, give
 * two keys and two walks, not three. */
static void equal_strings_written_twice_share_a_walk(void **state)
{
	struct fixture *fx = *state;
	static const char *const tags[] = { "a", "a", "b" };

	snprintf(fx->prog, sizeof fx->prog, "%s%s", DECLS,
		 "model tagged(layers: count, tag: string) {\n  repeat layers { mlp(256, 1024) }\n}\n");
	for (unsigned i = 0; i < 3; i++) {
		size_t n = strlen(fx->prog);

		snprintf(fx->prog + n, sizeof fx->prog - n,
			 "train s%u {\n  model = tagged(layers = 2, tag = \"%s\")\n  cluster = 8 x G\n"
			 "  precision = mixed\n  optimizer = adam\n  micro_batch = 1\n  seq_len = 64\n}\n",
			 i, tags[i]);
	}
	struct check_result *r = check_text(fx);
	unsigned long hits, misses;

	fx_assert_no_diags(fx);
	walk_cache_stats(r->ev, &hits, &misses);
	assert_int_equal(hits, 1);
	assert_int_equal(misses, 2);
	assert_true(key_of(r, 0) == key_of(r, 1));
	assert_true(key_of(r, 0) != key_of(r, 2));
}

/* Two jobs, one binding set: a walk whose warn fires is not kept, so the
 * second job warns too, at its own line, as without the cache. */
static void a_walk_that_reported_is_not_kept(void **state)
{
	struct fixture *fx = *state;

	snprintf(fx->prog, sizeof fx->prog, "%s%s", DECLS,
		 "layer loud(hidden: count) {\n  param w : [hidden, hidden / tp] linear\n  warn \"tp is {tp}\"\n}\n"
		 "model m(layers: count) {\n  repeat layers { loud(256) }\n}\n");
	for (unsigned i = 0; i < 2; i++) {
		size_t n = strlen(fx->prog);

		snprintf(fx->prog + n, sizeof fx->prog - n,
			 "train w%u {\n  model = m(layers = 2)\n  cluster = 8 x G\n  precision = mixed\n"
			 "  optimizer = adam\n  micro_batch = 1\n  seq_len = 64\n  parallel { tp = 2 }\n}\n", i);
	}
	struct check_result *r = check_text(fx);
	unsigned long hits, misses;
	unsigned lines[2], n = 0;

	walk_cache_stats(r->ev, &hits, &misses);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, 2);
	for (const struct diag *d = diag_first(fx->de); d; d = d->next) {
		assert_string_equal(diag_name(d->id), "layout");
		assert_true(n < 2);
		lines[n++] = diag_loc_line(fx->de, d->loc);
	}
	assert_int_equal(n, 2);
	assert_true(lines[0] < lines[1]);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(kept_walks_equal_fresh_ones),
		T(keys_follow_what_the_model_reads),
		T(a_walk_that_reported_is_not_kept),
		T(equal_strings_written_twice_share_a_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
