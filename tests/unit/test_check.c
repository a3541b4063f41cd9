/* SPDX-License-Identifier: MIT */
/*
 * test_check.c - the checker end to end on small programs: a complete job
 * checks clean and hands the analyzer its settings and bindings; misspelt
 * and missing train keys, a layout that does not divide the cluster, a
 * shape that does not divide under the job, records and unused templates
 * checked statically, and only the root file's train blocks becoming
 * jobs. Diagnostics are kept in the engine, never printed.
 */
#include "lang/check.h"
#include "lang/eval_impl.h"
#include "lang/dtypes.h"
#include "lang/eval.h"
#include "lang/import.h"
#include "lang/num.h"
#include "lang/scope.h"

#define FX_FIELDS                   \
	struct file_ast *files[2];  \
	struct program p;           \
	struct check_result *r;     \
	char job[4096];
#include "lang_fixture.h"

/* Parse @text as file @name, which must parse clean. */
static struct file_ast *parse(struct fixture *fx, const char *name, const char *text)
{
	struct file_ast *ast = fx_parse(fx, name, text);

	fx_assert_no_diags(fx);
	return ast;
}

/* Check @root, with @lib (may be NULL) as a file it imported. */
static struct check_result *check2(struct fixture *fx, const char *root, const char *lib)
{
	struct file_ast *r = parse(fx, "root.mem", root);

	fx->p = (struct program){ .files = fx->files, .root = r };
	if (lib)
		fx->files[fx->p.nfiles++] = parse(fx, "lib.mem", lib);
	fx->files[fx->p.nfiles++] = r;		/* dependencies first */
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	assert_non_null(fx->r);
	assert_non_null(fx->r->ev);
	assert_non_null(fx->r->scope);
	return fx->r;
}

static struct check_result *check(struct fixture *fx, const char *root)
{
	return check2(fx, root, NULL);
}

static uint64_t u64(struct value v)
{
	uint64_t u = 0;

	assert_int_equal(v.kind, VAL_NUM);
	assert_false(v.unknown);
	assert_true(num_to_u64(v.num, &u));
	return u;
}

static uint64_t bound(struct fixture *fx, const struct check_job *j, const char *name)
{
	struct value v;

	assert_non_null(j->bindings);
	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, name), &v));
	return u64(v);
}

/* Everything a job needs; the train block comes from the test. */
#define DECLS                                                              \
	"gpu G { memory = 80 GiB; bandwidth = 2 TB/s; bf16 = 312 TFLOPS }\n" \
	"precision mixed { weights = bf16; grads = bf16; compute = bf16; master = fp32 }\n" \
	"optimizer adam(impl: foreach | fused = foreach) {\n"              \
	"  state m : [numel]\n"                                            \
	"  state v : [numel]\n"                                            \
	"  if impl == foreach { temp sq : [numel] grouped }\n"             \
	"}\n"                                                              \
	"layer mlp(hidden: count, ffn: count) {\n"                         \
	"  input x : [batch, seq / sp, hidden]\n"                          \
	"  param up : [hidden, ffn / tp] linear\n"                         \
	"  param down : [ffn / tp, hidden] linear\n"                       \
	"  saves h : [batch, seq, ffn / tp] for_grad(down)\n"              \
	"  temp dh : [batch, seq, ffn / tp] backward\n"                    \
	"}\n"                                                              \
	"model tiny(layers: count, hidden: count) {\n"                     \
	"  repeat layers { mlp(hidden, hidden * 4) }\n"                    \
	"}\n"

/* 17 lines above; the train block starts on line 18. */
enum { TRAIN_LINE = 18 };

static const char good_job[] =
	DECLS
	"train job {\n"
	"  model = tiny(layers = 2, hidden = 256)\n"
	"  cluster = 8 x G\n"
	"  precision = mixed\n"
	"  optimizer = adam\n"
	"  micro_batch = 4\n"
	"  seq_len = 1024\n"
	"  parallel {\n"
	"    tp = 2\n"
	"  }\n"
	"}\n";

/* Replace the first @from in @text (a buffer of @size bytes) by @to. */
static void replace(char *text, size_t size, const char *from, const char *to)
{
	char *p = strstr(text, from);
	size_t nfrom = strlen(from), nto = strlen(to);

	assert_non_null(p);
	assert_true(strlen(text) - nfrom + nto < size);
	memmove(p + nto, p + nfrom, strlen(p + nfrom) + 1);
	memcpy(p, to, nto);
}

/* good_job in fx->job, its first @from replaced by @to. */
static const char *job_with(struct fixture *fx, const char *from, const char *to)
{
	snprintf(fx->job, sizeof fx->job, "%s", good_job);
	replace(fx->job, sizeof fx->job, from, to);
	return fx->job;
}

/* Check job_with(@from, @to); its only diagnostic must be named @name. */
static const struct diag *check_edited(struct fixture *fx, const char *from, const char *to,
				       const char *name)
{
	check(fx, job_with(fx, from, to));
	return fx_only_diag(fx, name);
}

/* @d, which must be there and be named @name. */
static const struct diag *expect_diag(const struct diag *d, const char *name)
{
	assert_non_null(d);
	assert_string_equal(diag_name(d->id), name);
	return d;
}

struct walked {
	unsigned tensors, params;
};

static void on_tensor(void *ctx, const struct walk_tensor *t)
{
	struct walked *w = ctx;

	w->tensors++;
	w->params += t->stmt->tensor.kind == TENSOR_PARAM;
	for (unsigned i = 0; i < t->ndims; i++)
		assert_int_equal(t->dims[i].kind, VAL_NUM);
}

static void complete_job_checks_clean(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check(fx, good_job);

	fx_assert_no_diags(fx);
	const struct check_job *j = r->jobs;
	assert_non_null(j);
	assert_null(j->next);
	assert_true(j->ok);
	assert_string_equal(j->decl->name, "job");
	assert_int_equal(diag_loc_line(fx->de, j->decl->loc), TRAIN_LINE);

	/* the settings, resolved */
	assert_int_equal(j->model.kind, VAL_INSTANCE);
	assert_string_equal(j->model.decl->name, "tiny");
	assert_int_equal(j->cluster.kind, VAL_CLUSTER);
	assert_string_equal(j->cluster.decl->name, "G");
	assert_true(num_eq(j->cluster.gpus, num_from_int(8)));
	assert_true(num_eq(j->cluster.nodes, num_from_int(1)));
	assert_int_equal(j->precision.kind, VAL_DECL);
	assert_string_equal(j->precision.decl->name, "mixed");
	assert_int_equal(j->optimizer.kind, VAL_INSTANCE);
	assert_string_equal(j->optimizer.decl->name, "adam");
	assert_int_equal(j->finetune.kind, VAL_SYMBOL);
	assert_string_equal(j->finetune.str, "full");

	struct value v;
	assert_true(check_job_field(j, "micro_batch", &v));
	assert_int_equal(u64(v), 4);
	assert_true(check_job_field(j, "parallel.tp", &v));
	assert_int_equal(u64(v), 2);
	assert_false(check_job_field(j, "grad_accum", &v));

	/* the bindings the analyzer walks with: dp = 8 / (tp * pp * cp) */
	assert_int_equal(bound(fx, j, "batch"), 4);
	assert_int_equal(bound(fx, j, "seq"), 1024);
	assert_int_equal(bound(fx, j, "tp"), 2);
	assert_int_equal(bound(fx, j, "pp"), 1);
	assert_int_equal(bound(fx, j, "sp"), 1);
	assert_int_equal(bound(fx, j, "dp"), 4);
	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, "act"), &v));
	assert_int_equal(v.kind, VAL_DTYPE);
	assert_ptr_equal(v.dtype, dtype_find("bf16"));
	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, "attention"), &v));
	assert_string_equal(v.str, "flash");

	/* walking the model under the job: 2 x mlp, one walk of the repeat */
	struct walked w = { 0 };
	static const struct walk_ops ops = { .tensor = on_tensor };
	eval_walk(r->ev, j->model, j->bindings, &ops, &w);
	assert_int_equal(w.tensors, 5);
	assert_int_equal(w.params, 2);
	fx_assert_no_diags(fx);
}

static void settings_with_every_section(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check(fx,
		DECLS
		"precision fp32 { weights = fp32; grads = fp32; compute = fp32 }\n"
		"train job {\n"
		"  model = tiny(layers = 2, hidden = 256)\n"
		"  cluster = 2 x 8 x G\n"
		"  precision = fp32\n"
		"  optimizer = adam(impl = fused)\n"
		"  micro_batch = 1; seq_len = 2048; grad_accum = 8\n"
		"  checkpoint = full; attention = eager; zero = 1\n"
		"  parallel { tp = 4; pp = 2; sequence_parallel = true }\n"
		"  finetune = lora(r = 16, alpha = 32, targets = [up, down])\n"
		"  freeze = [up]\n"
		"  headroom = 5%\n"
		"  overhead { fragmentation = 10%; context = 500 MiB }\n"
		"}\n");

	fx_assert_no_diags(fx);
	const struct check_job *j = r->jobs;
	assert_true(j->ok);
	/* `precision = fp32` names the precision, not the dtype */
	assert_int_equal(j->precision.kind, VAL_DECL);
	assert_int_equal(j->precision.decl->kind, DECL_PRECISION);
	assert_true(num_eq(j->cluster.nodes, num_from_int(2)));
	assert_int_equal(j->finetune.kind, VAL_CALL);
	assert_string_equal(j->finetune.str, "lora");
	assert_int_equal(bound(fx, j, "dp"), 2);	/* 16 / (4 * 2) */
	assert_int_equal(bound(fx, j, "sp"), 4);	/* sequence parallel */
	assert_int_equal(bound(fx, j, "seq"), 2048);
	struct value v;
	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, "act"), &v));
	assert_ptr_equal(v.dtype, dtype_find("fp32"));
	assert_true(env_lookup(j->bindings, intern_cstr(fx->in, "checkpoint"), &v));
	assert_string_equal(v.str, "full");
	assert_true(check_job_field(j, "overhead.context", &v));
	assert_int_equal(u64(v), 500u << 20);
	/* a record is written when one of its keys is: `parallel.tp`, not a
	 * top-level key that only starts with its name (`optimizer`, `overhead`) */
	assert_true(check_job_record(j, "parallel"));
	assert_true(check_job_record(j, "overhead"));
	assert_false(check_job_record(j, "over"));
	assert_false(check_job_record(j, "optimizer"));
	assert_false(check_job_record(j, "fsdp2"));
}

static void misspelt_train_key(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "micro_batch", "micro_bach", "unknown-field");

	assert_string_equal(fx_text_of(fx, d->loc), "micro_bach");
	assert_int_equal(diag_loc_line(fx->de, d->loc), TRAIN_LINE + 5);
	assert_non_null(d->notes);
	assert_string_equal(d->notes->msg, "did you mean 'micro_batch'?");
	/* a misspelt key is not also reported missing */
	assert_non_null(fx->r->jobs);
	assert_false(fx->r->jobs->ok);
}

static void unknown_key_in_a_section(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "    tp = 2", "    pq = 2", "unknown-field");

	assert_string_equal(fx_text_of(fx, d->loc), "pq");
	assert_non_null(d->notes);
	assert_non_null(strstr(d->notes->msg, "did you mean"));
	assert_false(fx->r->jobs->ok);
}

static void missing_required_key(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "  seq_len = 1024\n", "", "missing-field");

	assert_non_null(strstr(diag_message(d), "'seq_len'"));
	assert_string_equal(fx_text_of(fx, d->loc), "job");
	assert_int_equal(diag_loc_line(fx->de, d->loc), TRAIN_LINE);
	assert_false(fx->r->jobs->ok);
}

static void first_missing_key_of_an_empty_block(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check(fx, "train empty { }\n");
	/* Only the first is asserted: every missing key is reported at the
	 * block's name, and the evaluator's once-per-location rule currently
	 * swallows the others (see the report). */
	const struct diag *d = expect_diag(diag_first(fx->de), "missing-field");

	assert_non_null(strstr(diag_message(d), "'model'"));
	assert_string_equal(fx_text_of(fx, d->loc), "empty");
	for (; d; d = d->next)
		assert_string_equal(diag_name(d->id), "missing-field");
	assert_false(r->jobs->ok);
}

static void layout_does_not_divide_the_cluster(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "tp = 2", "tp = 3", "not-divisible");

	/* at the tp line, note at the cluster */
	assert_int_equal(diag_loc_line(fx->de, d->loc), TRAIN_LINE + 8);
	assert_string_equal(fx_text_of(fx, d->loc), "3");
	assert_non_null(strstr(diag_message(d), "8 GPUs"));
	assert_non_null(d->notes);
	assert_string_equal(fx_text_of(fx, d->notes->loc), "8 x G");
	assert_false(fx->r->jobs->ok);
}

static void pipeline_layout_does_not_divide(void **state)
{
	struct fixture *fx = *state;

	check(fx, DECLS
		  "train job {\n"
		  "  model = tiny(layers = 2, hidden = 256); cluster = 8 x G; precision = mixed\n"
		  "  optimizer = adam; micro_batch = 4; seq_len = 1024\n"
		  "  parallel { pp = 3 }\n"
		  "}\n");
	const struct diag *d = fx_only_diag(fx, "not-divisible");

	assert_int_equal(diag_loc_line(fx->de, d->loc), TRAIN_LINE + 3);
}

static void shape_does_not_divide_under_the_job(void **state)
{
	struct fixture *fx = *state;
	/* hidden 257: ffn = 1028, and 1028 / 8 leaves a remainder */
	job_with(fx, "hidden = 256", "hidden = 257");
	replace(fx->job, sizeof fx->job, "tp = 2", "tp = 8");
	struct check_result *r = check(fx, fx->job);
	const struct diag *d = expect_diag(diag_first(fx->de), "not-divisible");

	assert_string_equal(fx_text_of(fx, d->loc), "ffn / tp");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 10);	/* param up */
	assert_non_null(strstr(diag_message(d), "ffn (1028)"));
	assert_non_null(strstr(diag_message(d), "tp (8)"));
	assert_non_null(d->notes);
	assert_int_equal(diag_loc_line(fx->de, d->notes->loc), TRAIN_LINE + 8);
	assert_string_equal(fx_text_of(fx, d->notes->loc), "tp = 8");
	/* every diagnostic is that one kind, each at its own place */
	for (; d; d = d->next)
		assert_string_equal(diag_name(d->id), "not-divisible");
	assert_false(r->jobs->ok);
}

static void records_are_checked(void **state)
{
	struct fixture *fx = *state;

	check(fx,
	      "gpu Alpha { bandwidth = 2 TB/s }\n"			/* no memory */
	      "gpu Beta { memory = 80 }\n"				/* not bytes */
	      "gpu Gamma { memroy = 80 GiB; memory = 1 GiB }\n"	/* misspelt */
	      "gpu Delta : Zeta { memory = 1 GiB }\n"			/* no base */
	      "precision p { weights = bf16; grads = bf16; compute = 3 }\n");
	static const char *const want[][2] = {
		{ "missing-field", "Alpha" }, { "type-mismatch", "80" }, { "unknown-field", "memroy" },
		{ "undefined-name", "Zeta" }, { "type-mismatch", "3" },
	};
	unsigned i = 0;

	for (const struct diag *d = diag_first(fx->de); d; d = d->next, i++) {
		assert_true(i < 5);
		assert_string_equal(diag_name(d->id), want[i][0]);
		assert_string_equal(fx_text_of(fx, d->loc), want[i][1]);
		assert_int_equal(diag_loc_line(fx->de, d->loc), i + 1);
	}
	assert_int_equal(i, 5);
}

static void unused_templates_are_checked_statically(void **state)
{
	struct fixture *fx = *state;

	check(fx,
	      "layer a(h: count) { param w : [h + 1 GiB] }\n"
	      "layer b(h: count) { param w : [h] fp33 }\n"
	      "layer c(h: count) { param w : [h / tp] }\n"	/* shapes are not checked */
	      "layer d(h: cnt) { }\n"
	      "layer e(h: count) { nosuch(h) }\n");
	const struct diag *d = expect_diag(diag_first(fx->de), "unit-mismatch");

	assert_int_equal(diag_loc_line(fx->de, d->loc), 1);
	d = expect_diag(d->next, "undefined-name");
	assert_string_equal(fx_text_of(fx, d->loc), "fp33");
	assert_non_null(d->notes);
	assert_string_equal(d->notes->msg, "did you mean 'fp32'?");
	d = expect_diag(d->next, "undefined-name");
	assert_string_equal(fx_text_of(fx, d->loc), "cnt");
	d = expect_diag(d->next, "undefined-name");
	assert_string_equal(fx_text_of(fx, d->loc), "nosuch");
	assert_null(d->next);
}

static void only_root_train_blocks_are_jobs(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check2(fx,
		"train one { model = tiny(layers = 1, hidden = 8); cluster = 1 x G; precision = mixed\n"
		"  optimizer = adam; micro_batch = 1; seq_len = 8 }\n"
		"train two { model = tiny(layers = 1, hidden = 8); cluster = 1 x G; precision = mixed\n"
		"  optimizer = adam; micro_batch = 1; seq_len = 8; parallel { tp = 2 } }\n",
		DECLS "train in_lib { }\n");
	const struct check_job *j = r->jobs;

	/* in_lib has no keys at all, yet nothing is reported for it */
	assert_non_null(j);
	assert_string_equal(j->decl->name, "one");
	assert_true(j->ok);
	assert_non_null(j->next);
	assert_string_equal(j->next->decl->name, "two");
	assert_false(j->next->ok);	/* tp 2 on one GPU */
	assert_null(j->next->next);
	fx_only_diag(fx, "not-divisible");
}

static void scope_errors_stop_the_check(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check(fx, "let x = 1\nlet x = 8 / 0\ntrain t { }\n");

	fx_only_diag(fx, "duplicate-definition");
	assert_null(r->jobs);
}

static void no_train_block_no_jobs(void **state)
{
	struct fixture *fx = *state;
	struct check_result *r = check(fx, DECLS);

	fx_assert_no_diags(fx);
	assert_null(r->jobs);
	assert_int_equal(fx_count_diags(fx), 0);
}

/* An undefined layer under a fan-out (l1 uses it twice, each l<k> uses
 * l<k-1> twice): 2 + 4 + ... + 2^10 walked uses, one did-you-mean scan and
 * one error per use site. */
static void undefined_layer_under_a_fan_out(void **state)
{
	struct fixture *fx = *state;
	char text[4096];
	size_t n = (size_t)snprintf(text, sizeof text, "layer rmsnorm(h: count) { param w : [h] }\n"
				    "layer l1(h: count) { rmsnrom(h)\n rmsnrom(h) }\n");

	for (int k = 2; k <= 10; k++)
		n += (size_t)snprintf(text + n, sizeof text - n, "layer l%d(h: count) { l%d(h)\n l%d(h) }\n",
				      k, k - 1, k - 1);
	assert_true(n < sizeof text);
	struct check_result *r = check(fx, text);
	const struct diag *d = expect_diag(diag_first(fx->de), "undefined-name");

	assert_int_equal(diag_loc_line(fx->de, d->loc), 2);
	assert_string_equal(d->notes->msg, "did you mean 'rmsnorm'?");
	d = expect_diag(d->next, "undefined-name");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 3);
	assert_null(d->next);
	assert_int_equal(r->ev->suggestions_computed, 1);
}

/* A number that would switch a check off fails the job at its line. */
static void headroom_of_ten_is_out_of_range(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "  seq_len = 1024\n", "  seq_len = 1024\n  headroom = 10\n",
					    "out-of-range");

	assert_string_equal(fx_text_of_last(fx, d->loc), "10");
	assert_non_null(d->notes);
	assert_string_equal(d->notes->msg, "a ratio is written with %: did you mean 10%?");
	assert_false(fx->r->jobs->ok);
}

/* hf(q_proj) makes q_proj a name of the tensor, for targets and freeze;
 * a target that matches no Linear fails the job. */
static void lora_targets_use_hf_names(void **state)
{
	struct fixture *fx = *state;

	check(fx, job_with(fx, "  param up : [hidden, ffn / tp] linear\n",
			   "  param up : [hidden, ffn / tp] linear hf(up_proj)\n"));
	fx_assert_no_diags(fx);
	const struct stmt *up = NULL;

	for (const struct decl *d = fx->files[0]->decls; d; d = d->next)
		if (!strcmp(d->name, "mlp"))
			up = d->templ.body->next;
	assert_non_null(up);
	assert_true(check_tensor_answers_to(up, "up"));
	assert_true(check_tensor_answers_to(up, "up_proj"));
	assert_false(check_tensor_answers_to(up, "down_proj"));
}

static void lora_target_that_matches_nothing(void **state)
{
	struct fixture *fx = *state;
	const struct diag *d = check_edited(fx, "  seq_len = 1024\n",
					    "  seq_len = 1024\n  finetune = lora(r = 8, targets = [upp])\n",
					    "undefined-name");

	assert_string_equal(fx_text_of_last(fx, d->loc), "upp");
	assert_string_equal(d->notes->msg, "did you mean 'up'?");
	assert_false(fx->r->jobs->ok);
}

/* The stdlib's declarations are read only once a name is undefined. */
static void stdlib_is_scanned_only_for_undefined_names(void **state)
{
	struct fixture *fx = *state;
	struct file_ast *root = parse(fx, "root.mem", good_job);

	fx->files[0] = root;
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = root, .stdlib_dir = "no-such-dir" };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	fx_assert_no_diags(fx);
	assert_null(fx->r->ev->stdlib_index);

	struct file_ast *bad = parse(fx, "bad.mem", "let x = nosuch_name + 1\n");

	fx->files[0] = bad;
	fx->p = (struct program){ .files = fx->files, .nfiles = 1, .root = bad, .stdlib_dir = "no-such-dir" };
	fx->r = check_program(&fx->arena, fx->in, fx->de, fx->t, &fx->p);
	fx_only_diag(fx, "undefined-name");
	assert_non_null(fx->r->ev->stdlib_index);
}

/* The rule memc fit and memc search generate cp by is the checker's:
 * 2 x cp chunks (check_layout.c cp_chunks), no rule without cp, and a
 * degree whose double overflows divides no length. */
static void cp_needs_two_chunks_per_rank(void **state)
{
	(void)state;
	assert_int_equal(check_cp_seq_multiple(0), 1);
	assert_int_equal(check_cp_seq_multiple(1), 1);
	assert_int_equal(check_cp_seq_multiple(3), 6);
	assert_true(check_cp_splits_seq(4100, 1));
	assert_true(check_cp_splits_seq(4100, 2));
	assert_false(check_cp_splits_seq(4100, 4));	/* 4100 = 8 x 512 + 4 */
	assert_false(check_cp_splits_seq(24, 8));
	assert_true(check_cp_splits_seq(65532, 3));
	assert_false(check_cp_splits_seq(65532 + 4, 3));
	assert_true(check_cp_seq_multiple(UINT64_MAX) == UINT64_MAX);
	assert_false(check_cp_splits_seq(UINT64_MAX - 1, UINT64_MAX));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(complete_job_checks_clean),
		T(settings_with_every_section),
		T(misspelt_train_key),
		T(unknown_key_in_a_section),
		T(missing_required_key),
		T(first_missing_key_of_an_empty_block),
		T(layout_does_not_divide_the_cluster),
		T(pipeline_layout_does_not_divide),
		T(shape_does_not_divide_under_the_job),
		T(records_are_checked),
		T(unused_templates_are_checked_statically),
		T(only_root_train_blocks_are_jobs),
		T(scope_errors_stop_the_check),
		T(no_train_block_no_jobs),
		T(undefined_layer_under_a_fan_out),
		T(headroom_of_ten_is_out_of_range),
		T(lora_targets_use_hf_names),
		T(lora_target_that_matches_nothing),
		T(stdlib_is_scanned_only_for_undefined_names),
		cmocka_unit_test(cp_needs_two_chunks_per_rank),
	};
#undef T

	return cmocka_run_group_tests_name("check", tests, NULL, NULL);
}
