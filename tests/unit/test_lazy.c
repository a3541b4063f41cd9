/* SPDX-License-Identifier: MIT */
/*
 * test_lazy.c - the prescan of lazily loaded stdlib files (lang/lazy.c):
 * on text it vouches for, it splits declarations exactly as the parser
 * does (kind, name, locations, import paths), whatever comments, strings,
 * brackets and line ends hold; on anything else it gives up, so the file
 * is parsed in full.
 */
#include "lang_fixture.h"

#include "analyzer/cmd/stdlib_digests.h"
#include "lang/import.h"
#include "lang/lazy.h"

static const struct src_file *add(struct fixture *fx, const char *text)
{
	const struct src_file *f = src_add_string(fx->t, fx->de, "lib.mem", text, strlen(text));

	assert_non_null(f);
	return f;
}

static void assert_same_loc(struct loc a, struct loc b)
{
	assert_int_equal(a.file, b.file);
	assert_int_equal(a.start, b.start);
	assert_int_equal(a.end, b.end);
}

/* The prescan of @text has the parser's declarations, field by field. */
static void assert_splits_like_parser(struct fixture *fx, const char *text)
{
	const struct src_file *f = add(fx, text);
	struct file_ast *pre = lazy_prescan(&fx->arena, fx->in, f);
	struct file_ast *full = parse_file(&fx->arena, fx->in, fx->de, f);
	const struct decl *p, *q;

	fx_assert_no_diags(fx);
	assert_non_null(pre);
	for (p = pre->decls, q = full->decls; p && q; p = p->next, q = q->next) {
		assert_int_equal(p->kind, q->kind);
		assert_ptr_equal(p->name, q->name);	/* both interned */
		assert_same_loc(p->loc, q->loc);
		if (p->kind == DECL_IMPORT) {
			assert_string_equal(p->import.path, q->import.path);
			assert_same_loc(p->import.path_loc, q->import.path_loc);
		} else {
			assert_same_loc(p->name_loc, q->name_loc);
		}
	}
	assert_null(p);
	assert_null(q);
}

static void splits_like_the_parser(void **state)
{
	assert_splits_like_parser(*state,
		"// let gpu model ( { \" in a comment\n"
		"/* layer x(\n   \"unbalanced */ import \"gpus/nvidia\"\n"
		"import \"layers/norm\" # path\n"
		"let a = 1; let b = (2 +\n  3)   // continued in brackets\n"
		"gpu g1 { memory = 80 GiB, family = \"}{ \\\" model\" }\n"
		"gpu g2 : g1 { memory = 40 GiB }\n"
		"layer l(h: count, kind: a | b = a) {\n"
		"  param w : [h, h]\n"
		"  if kind == a { saves x : [batch, h] } else { temp y : [h] }\n"
		"}\n"
		"model m(layers: count = 2) { repeat layers { l(h = 8, kind = b) } }\n"
		"model m2 = m(layers = 4)\n"
		"optimizer o(lr: number = 0.1) { state s : [1] }\n"
		"precision p { weights = bf16, grads = bf16, compute = bf16 }\n"
		"let last = 1e3");
}

static void cr_and_crlf_line_ends(void **state)
{
	assert_splits_like_parser(*state, "let a = 1\r\nlet b = 2\r// c\rlet c = 3\r\n");
}

static void gives_up_on_what_it_does_not_vouch_for(void **state)
{
	struct fixture *fx = *state;
	static const char *const texts[] = {
		"train t { model = m }\n",		/* a job: the checker's, not the stdlib's */
		"let gr\xc3\xb6\xc3\x9f" "e = 1\n",	/* non-ASCII name: NFC is the lexer's */
		"let s = \"open\n",			/* unterminated string */
		"/* open comment\n",			/* unterminated comment */
		"layer l(h: count) {\n",		/* unclosed bracket */
		"let a = (1))\n",			/* extra closing bracket */
		"1 + 2\nlet a = 1\n",			/* a token before any declaration */
		"import \"a\" \"b\"\n",			/* a token after an import */
		"import \"a\\\"b\"\n",			/* an escape in an import path */
		"let model = 1\n",			/* a keyword as the name */
		"let\n  a = 1\n",			/* the name on another line */
	};

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		if (lazy_prescan(&fx->arena, fx->in, add(fx, texts[i])) != NULL)
			fail_msg("prescan accepted text %zu: %s", i, texts[i]);
}

/* ast_dump() of @f, in the arena. */
static const char *dump(struct fixture *fx, const struct file_ast *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	ast_dump(out, f);
	assert_int_equal(fclose(out), 0);
	const char *s = arena_strdup(&fx->arena, buf);

	free(buf);
	return s;
}

/* parse_file_range_clean(), the parser without lookahead correction that
 * verified stdlib files go through, builds what parse_file_range() builds,
 * declaration by declaration, on the stdlib's largest files. */
static void clean_parser_builds_the_same_ast(void **state)
{
	struct fixture *fx = *state;
	static const char *const files[] = { "stdlib/layers/attention.mem", "stdlib/layers/head.mem",
					     "stdlib/layers/mlp.mem", "stdlib/models/llama.mem",
					     "stdlib/models/mixtral.mem", "stdlib/precision.mem",
					     "stdlib/gpus/nvidia.mem", "stdlib/optimizers.mem" };
	unsigned ndecls = 0;

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		const struct src_file *f = src_load(fx->t, fx->de, files[i], files[i], NO_LOC);

		assert_non_null(f);
		struct file_ast *pre = lazy_prescan(&fx->arena, fx->in, f);

		assert_non_null(pre);
		for (const struct decl *d = pre->decls; d; d = d->next, ndecls++) {
			struct file_ast *a = parse_file_range(&fx->arena, fx->in, fx->de, f, d->loc.start, d->loc.end);
			struct file_ast *b = parse_file_range_clean(&fx->arena, fx->in, fx->de, f, d->loc.start,
								    d->loc.end);

			assert_non_null(a->decls);
			assert_string_equal(dump(fx, a), dump(fx, b));
		}
	}
	fx_assert_no_diags(fx);
	assert_true(ndecls > 50);
}

/* Each verified stdlib file's index, linked into memc by the build
 * (build/gen/stdlib_digests.c), makes the stubs the prescan makes of the
 * file's bytes: the importer uses it instead of prescanning. */
static void build_index_is_the_prescan(void **state)
{
	struct fixture *fx = *state;
	size_t nindexed = 0;

	for (size_t i = 0; i < memc_stdlib_ndigests; i++) {
		const struct stdlib_digest *e = &memc_stdlib_digests[i];
		const char *path = arena_printf(&fx->arena, "stdlib/%s", e->name);
		const struct src_file *f = src_load(fx->t, fx->de, path, path, NO_LOC);

		assert_non_null(f);
		assert_true(src_digest(f->text, f->len) == e->digest);
		struct file_ast *pre = lazy_prescan(&fx->arena, fx->in, f);

		if (!e->decls) {	/* the prescan gave up, or found nothing */
			assert_true(!pre || !pre->decls);
			continue;
		}
		nindexed++;
		struct file_ast *ix = lazy_from_index(&fx->arena, fx->in, f, e->decls, e->ndecls);
		const struct decl *p, *q;

		assert_non_null(pre);
		for (p = pre->decls, q = ix->decls; p && q; p = p->next, q = q->next) {
			assert_int_equal(p->kind, q->kind);
			assert_ptr_equal(p->name, q->name);
			assert_same_loc(p->loc, q->loc);
			assert_same_loc(p->name_loc, q->name_loc);
			if (p->kind == DECL_IMPORT) {
				assert_string_equal(p->import.path, q->import.path);
				assert_same_loc(p->import.path_loc, q->import.path_loc);
			}
		}
		assert_null(p);
		assert_null(q);
	}
	fx_assert_no_diags(fx);
	assert_true(nindexed > 40);
}

/* Every file of the program loaded from examples/@name, dumped, with
 * the stdlib table @table (its index used, or not). */
static const char *load_dump(struct fixture *fx, const char *name, const struct stdlib_digest *table)
{
	struct src_table *t = src_table_new(&fx->arena);
	struct diag_engine *de = diag_new(&fx->arena, t, NULL);
	struct interner *in = interner_new(&fx->arena);
	struct import_opts o = { .stdlib_dir = "stdlib", .verified = table, .nverified = memc_stdlib_ndigests };
	struct program *p = import_load(&fx->arena, in, t, de, arena_printf(&fx->arena, "examples/%s", name), &o);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_true(p->stdlib_verified);
	assert_null(diag_first(de));
	for (size_t i = 0; i < p->nfiles; i++)
		ast_dump(out, p->files[i]);
	assert_int_equal(fclose(out), 0);
	const char *s = arena_strdup(&fx->arena, buf);

	free(buf);
	return s;
}

/* What a job reaches and parses is the same whether the reach reads a
 * verified file's words from the build's index or scans its text. */
static void index_reaches_what_the_text_does(void **state)
{
	struct fixture *fx = *state;
	static const char *const examples[] = { "llama2-13b-zero3.mem", "llama2-70b-3d.mem", "mixtral-ep.mem",
						"llama3-8b-lora-a100.mem", "bert-finetune.mem",
						"resnet50-finetune.mem" };
	struct stdlib_digest *bare = calloc(memc_stdlib_ndigests + 1, sizeof *bare);

	assert_non_null(bare);
	for (size_t i = 0; i < memc_stdlib_ndigests; i++)	/* same digests, no index */
		bare[i] = (struct stdlib_digest){ memc_stdlib_digests[i].name, memc_stdlib_digests[i].digest,
						  NULL, 0 };
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
		assert_string_equal(load_dump(fx, examples[i], memc_stdlib_digests),
				    load_dump(fx, examples[i], bare));
	free(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(splits_like_the_parser, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(clean_parser_builds_the_same_ast, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(build_index_is_the_prescan, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(index_reaches_what_the_text_does, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(cr_and_crlf_line_ends, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(gives_up_on_what_it_does_not_vouch_for, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests_name("lazy", tests, NULL, NULL);
}
