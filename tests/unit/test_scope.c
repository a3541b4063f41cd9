/* SPDX-License-Identifier: MIT */
/*
 * test_scope.c - the global name table: one namespace across files,
 * duplicates reported at the second declaration with a note at the first,
 * names that clash with units, dtypes and train-bound names, the
 * `precision fp32` exception, user names shadowing the stdlib's, lookups
 * by kind, declaration order and
 * did-you-mean suggestions. Diagnostics are kept, never printed.
 */
#include "lang/import.h"
#include "lang/scope.h"

#define FX_FIELDS                        \
	struct file_ast *files[4];       \
	const struct src_file *src[4];   \
	struct program p;
#include "lang_fixture.h"

static int setup(void **state)
{
	if (fx_setup(state))
		return -1;
	struct fixture *fx = *state;

	fx->p.files = fx->files;
	return 0;
}

/* Parse @text as the next file of the program (the first is the root). */
static void add_file(struct fixture *fx, const char *name, const char *text)
{
	assert_true(fx->p.nfiles < 4);
	struct file_ast *ast = fx_parse(fx, name, text);

	fx->src[fx->p.nfiles] = fx->f;
	fx->files[fx->p.nfiles++] = ast;
	fx->p.root = fx->files[0];
	assert_null(diag_first(fx->de));
}

static struct scope *build(struct fixture *fx)
{
	struct scope *s = scope_build(&fx->arena, fx->in, fx->de, &fx->p);

	assert_non_null(s);
	return s;
}

static const char *I(struct fixture *fx, const char *s)
{
	return intern_cstr(fx->in, s);
}

static void finds_every_kind(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem",
		 "import \"nothing\"\n"
		 "let hidden = 4096\n"
		 "gpu A100 { memory = 80 GiB }\n"
		 "precision mixed { weights = bf16 }\n"
		 "train job { model = m }\n"
		 "layer mlp(h: count) { param w : [h] }\n"
		 "model m = mlp(h = 1)\n"
		 "optimizer adam { state s : [numel] }\n");
	struct scope *s = build(fx);

	assert_null(diag_first(fx->de));
	assert_int_equal(scope_count(s), 7);	/* the import has no name */
	static const char *const names[] = { "hidden", "A100", "mixed", "job", "mlp", "m", "adam" };
	static const enum decl_kind kinds[] = { DECL_LET, DECL_GPU, DECL_PRECISION, DECL_TRAIN,
						DECL_LAYER, DECL_MODEL, DECL_OPTIMIZER };
	for (unsigned i = 0; i < 7; i++) {
		const struct decl *d = scope_find(s, I(fx, names[i]));

		assert_non_null(d);
		assert_ptr_equal(scope_at(s, i), d);		/* declaration order */
		assert_int_equal(d->kind, kinds[i]);
		assert_ptr_equal(scope_find_kind(s, I(fx, names[i]), kinds[i]), d);
		assert_null(scope_find_kind(s, I(fx, names[i]), kinds[(i + 1) % 7]));
	}
	assert_null(scope_find(s, I(fx, "nothing")));
	assert_null(scope_find(s, I(fx, "undeclared")));
	assert_null(scope_find(s, NULL));
}

static void many_names_across_files(void **state)
{
	struct fixture *fx = *state;
	char buf[8192];
	size_t n = 0;

	/* more than the table's first capacity, so the index grows */
	for (unsigned i = 0; i < 300; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "let v%u = %u\n", i, i);
	add_file(fx, "root.mem", buf);
	add_file(fx, "lib.mem", "let from_lib = 1\n");
	struct scope *s = build(fx);

	assert_null(diag_first(fx->de));
	assert_int_equal(scope_count(s), 301);
	for (unsigned i = 0; i < 300; i++) {
		char name[16];

		snprintf(name, sizeof name, "v%u", i);
		const struct decl *d = scope_find(s, I(fx, name));
		assert_non_null(d);
		assert_ptr_equal(scope_at(s, i), d);
	}
	/* files in program order, then source order */
	assert_string_equal(scope_at(s, 300)->name, "from_lib");
	assert_ptr_equal(scope_find(s, I(fx, "from_lib")), scope_at(s, 300));
}

/* A user file's name shadows the stdlib's, whichever loads first: user
 * files see theirs, stdlib files keep the stdlib's. Two user files (or
 * two stdlib files) still clash. The warning is off by default. */
static void user_names_shadow_the_stdlib(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "std.mem", "layer moe { }\nlayer norm { }\n");
	add_file(fx, "root.mem", "train moe { }\n");
	add_file(fx, "std2.mem", "layer other { }\nlayer moe2 { }\n");
	add_file(fx, "lib.mem", "let other = 1\n");
	fx->files[0]->stdlib = fx->files[2]->stdlib = true;
	struct scope *s = build(fx);

	assert_null(diag_first(fx->de));
	assert_int_equal(scope_find(s, I(fx, "moe"))->kind, DECL_TRAIN);
	assert_int_equal(scope_find_in(s, I(fx, "moe"), fx->src[1]->id)->kind, DECL_TRAIN);
	assert_int_equal(scope_find_in(s, I(fx, "moe"), fx->src[0]->id)->kind, DECL_LAYER);
	assert_ptr_equal(scope_find_kind_in(s, I(fx, "moe"), DECL_LAYER, fx->src[2]->id),
			 scope_find_in(s, I(fx, "moe"), fx->src[0]->id));
	/* the stdlib's `other` came first; the user's let still wins */
	assert_int_equal(scope_find(s, I(fx, "other"))->kind, DECL_LET);
	assert_int_equal(scope_find_in(s, I(fx, "other"), fx->src[2]->id)->kind, DECL_LAYER);
	assert_int_equal(scope_find_in(s, I(fx, "norm"), fx->src[2]->id)->kind, DECL_LAYER);
	/* the table lists each name once: moe, norm, moe2, other */
	assert_int_equal(scope_count(s), 4);
}

static void two_user_files_still_clash(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "std.mem", "layer moe { }\n");
	add_file(fx, "a.mem", "train moe { }\n");
	add_file(fx, "b.mem", "let moe = 1\n");
	fx->files[0]->stdlib = true;
	build(fx);
	fx_only_diag(fx, "duplicate-definition");
}

static void duplicate_definition(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem", "let x = 1\ngpu A100 { memory = 80 GiB }\n");
	add_file(fx, "b.mem", "\nlayer x { }\n");
	struct scope *s = build(fx);
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "duplicate-definition");
	assert_non_null(strstr(diag_message(d), "'x'"));
	/* at the second declaration's name, note at the first */
	assert_int_equal(d->loc.file, fx->src[1]->id);
	assert_int_equal(diag_loc_line(fx->de, d->loc), 2);
	assert_string_equal(fx_text_of(fx, d->loc), "x");
	assert_non_null(d->notes);
	assert_null(d->notes->next);
	assert_int_equal(d->notes->loc.file, fx->src[0]->id);
	assert_int_equal(diag_loc_line(fx->de, d->notes->loc), 1);
	assert_string_equal(fx_text_of(fx, d->notes->loc), "x");
	/* the first one stays */
	assert_int_equal(scope_find(s, I(fx, "x"))->kind, DECL_LET);
	assert_int_equal(scope_count(s), 2);
}

static void duplicate_reported_per_extra_definition(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem", "let x = 1\nlet x = 2\nlet x = 3\n");
	build(fx);
	assert_int_equal(fx_count_diags(fx), 2);
	for (const struct diag *d = diag_first(fx->de); d; d = d->next) {
		assert_string_equal(diag_name(d->id), "duplicate-definition");
		assert_int_equal(diag_loc_line(fx->de, d->notes->loc), 1);
	}
}

static void name_clash(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem",
		 "let GiB = 1\n"				/* a unit */
		 "let tp = 2\n"					/* bound by the train block */
		 "layer bf16 { }\n"				/* a dtype */
		 "gpu s { memory = 1 GiB }\n"			/* the unit 's' */
		 "model batch { }\n"				/* train-bound */
		 "let none = 3\n"				/* a builtin value */
		 "let fine = 4\n");
	struct scope *s = build(fx);
	static const char *const want[][2] = {
		{ "GiB", "a unit" }, { "tp", "train block" }, { "bf16", "a dtype" },
		{ "s", "a unit" }, { "batch", "train block" }, { "none", "train block" },
	};
	unsigned i = 0;

	for (const struct diag *d = diag_first(fx->de); d; d = d->next, i++) {
		assert_true(i < 6);
		assert_string_equal(diag_name(d->id), "name-clash");
		assert_string_equal(fx_text_of(fx, d->loc), want[i][0]);
		assert_non_null(strstr(diag_message(d), want[i][1]));
		assert_int_equal(diag_loc_line(fx->de, d->loc), i + 1);
		assert_null(scope_find(s, I(fx, want[i][0])));
	}
	assert_int_equal(i, 6);
	assert_int_equal(scope_count(s), 1);
	assert_non_null(scope_find(s, I(fx, "fine")));
}

static void precision_may_share_a_dtype_name(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem",
		 "precision fp32 { weights = fp32; grads = fp32; compute = fp32 }\n"
		 "precision bf16 { weights = bf16; grads = bf16; compute = bf16 }\n");
	struct scope *s = build(fx);

	assert_null(diag_first(fx->de));
	assert_non_null(scope_find_kind(s, I(fx, "fp32"), DECL_PRECISION));
	assert_non_null(scope_find_kind(s, I(fx, "bf16"), DECL_PRECISION));
}

static void precision_may_not_share_a_unit_name(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem", "precision GB { weights = bf16 }\nprecision seq { weights = bf16 }\n");
	struct scope *s = build(fx);

	assert_int_equal(fx_count_diags(fx), 2);
	for (const struct diag *d = diag_first(fx->de); d; d = d->next)
		assert_string_equal(diag_name(d->id), "name-clash");
	assert_int_equal(scope_count(s), 0);
}

static void suggestions(void **state)
{
	struct fixture *fx = *state;

	add_file(fx, "a.mem",
		 "gpu A100_80GB { memory = 80 GiB }\n"
		 "gpu H100_80GB { memory = 80 GiB }\n"
		 "model llama2_7b { }\n"
		 "layer rmsnorm { }\n"
		 "let llama2_7 = 1\n");
	struct scope *s = build(fx);

	assert_null(diag_first(fx->de));
	assert_string_equal(scope_suggest(s, "A100_80G", DECL__COUNT), "A100_80GB");
	assert_string_equal(scope_suggest(s, "H100_80gb", DECL_GPU), "H100_80GB");
	assert_string_equal(scope_suggest(s, "rmsnrom", DECL_LAYER), "rmsnorm");
	/* the kind filters: llama2_7 is closer, but not a model */
	assert_string_equal(scope_suggest(s, "llama2_7", DECL__COUNT), "llama2_7");
	assert_string_equal(scope_suggest(s, "llama2_7c", DECL_MODEL), "llama2_7b");
	assert_null(scope_suggest(s, "rmsnrom", DECL_GPU));
	/* nothing close */
	assert_null(scope_suggest(s, "zzzzzzzz", DECL__COUNT));
	assert_null(scope_suggest(s, "x", DECL__COUNT));
}

static void empty_program(void **state)
{
	struct fixture *fx = *state;
	struct scope *s = build(fx);

	assert_int_equal(scope_count(s), 0);
	assert_null(scope_find(s, I(fx, "a")));
	assert_null(scope_suggest(s, "a", DECL__COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(finds_every_kind, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(many_names_across_files, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(duplicate_definition, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(user_names_shadow_the_stdlib, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(two_user_files_still_clash, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(duplicate_reported_per_extra_definition, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(name_clash, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(precision_may_share_a_dtype_name, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(precision_may_not_share_a_unit_name, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(suggestions, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(empty_program, setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("scope", tests, NULL, NULL);
}
