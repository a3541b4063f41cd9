/* SPDX-License-Identifier: MIT */
/*
 * test_walk_store.c - the checker's and the builder's walks kept across
 * the compilations that share an import cache (lang/walk_cache.c struct
 * walk_store, analyzer/model/build_cache.c struct bld_store): a second
 * compilation of the same job, made after the first one's arena is freed,
 * takes both walks from the store and gets what a compilation without the
 * cache gets, parameter for parameter and byte for byte; a job with
 * another shape walks again; a model whose template or layers are
 * declared in the user's file (not declarations the cache parsed) is never
 * kept there, while a user's alias of a stdlib template is that template
 * instantiated, and is.
 */
#include "lang_fixture.h"

#include "analyzer/lower/build.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "analyzer/memory/memory.h"
#include "lang/check.h"
#include "lang/check_impl.h"
#include "lang/eval.h"
#include "lang/import.h"
#include "lang/walk_cache.h"

#define HEAD "import \"gpus/nvidia\"\nimport \"models/llama\"\nimport \"optimizers\"\nimport \"precision\"\n"
#define JOB(model, mb, more)                                                                    \
	"train t {\n  model = " model "\n  cluster = 1 x A100_80GB\n  precision = bf16_true\n" \
	"  optimizer = adamw\n  micro_batch = " mb "\n  seq_len = 4096\n" more "}\n"
#define LORA "  finetune = lora(r = 16, alpha = 32, targets = [q, k, v, o])\n"

static const char stdlib_job[] = HEAD JOB("llama3_8b", "2", LORA);
static const char other_shape[] = HEAD JOB("llama3_8b", "4", LORA);
/* the stdlib template under a name of the user's file */
static const char user_alias[] = HEAD
	"model mine = Llama(layers = 4, hidden = 4096, heads = 32, kv_heads = 8, ffn = 14336, vocab = 128256)\n"
	JOB("mine", "2", LORA);
/* a template and a layer of the user's file */
static const char user_model[] = HEAD
	"layer blk(hidden: count) {\n  input x : [batch, seq, hidden]\n  param w : [hidden, hidden] linear\n"
	"  saves h : [batch, seq, hidden] for_grad(w)\n}\n"
	"model mine(layers: count) {\n  repeat layers { blk(4096) }\n}\n"
	JOB("mine(layers = 4)", "2", "");

struct run {
	unsigned long check_hits, check_misses, build_hits, build_misses;
	uint64_t total;		/* the device total of the job's first class */
	size_t nparams;		/* distinct parameter tensors the checker's walk saw */
};

/* One compilation of @text in @a (as memc check compiles it, with @cache
 * or none), its job built and analysed. */
static struct run compile(struct arena *a, struct interner *in, struct import_cache *cache, const char *text)
{
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, NULL);
	struct import_opts io = { .stdlib_dir = "stdlib", .verified = memc_stdlib_digests,
				  .nverified = memc_stdlib_ndigests, .cache = cache };
	struct run r = { 0 };

	src_set_overlay(src, "t.mem", text, strlen(text));
	struct program *p = import_load(a, in, src, de, "t.mem", &io);

	assert_non_null(p->root);
	struct check_result *cr = check_program(a, in, de, src, p);
	struct build_override none = { .zero = -1 };
	struct build *bd = ARENA_NEW(a, struct build);
	struct mem_result res;

	assert_int_equal(diag_error_count(de), 0);
	assert_non_null(cr->jobs);
	assert_true(build_job(cr->ev, a, cr->jobs, &none, false, bd));
	assert_int_equal(mem_analyze(&bd->job, &res), MEM_OK);
	r.total = res.classes[0].device_total;
	mem_result_free(&res);
	for (size_t i = 0; i < bd->job.nblocks; i++)
		r.nparams += bd->job.blocks[i].nlayers;
	walk_store_stats(cr->ev, &r.check_hits, &r.check_misses);
	build_store_stats(cr->ev, &r.build_hits, &r.build_misses);
	return r;
}

static void second_compilation_takes_both_walks(void **state)
{
	struct fixture *fx = *state;
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	struct arena plain = { 0 }, first = { 0 }, second = { 0 }, third = { 0 };
	struct run want = compile(&plain, interner_new(&plain), NULL, stdlib_job);
	struct run a = compile(&first, fx->in, c, stdlib_job);

	assert_int_equal(want.check_hits + want.check_misses + want.build_hits + want.build_misses, 0);
	assert_int_equal(a.check_hits, 0);
	assert_int_equal(a.check_misses, 1);
	assert_int_equal(a.build_hits, 0);
	assert_int_equal(a.build_misses, 1);
	assert_int_equal(a.total, want.total);
	/* nothing of the store may point into a compilation that has ended */
	arena_free(&first);
	struct run b = compile(&second, fx->in, c, stdlib_job);

	assert_int_equal(b.check_hits, 1);
	assert_int_equal(b.build_hits, 1);
	assert_int_equal(b.total, want.total);
	assert_int_equal(b.nparams, want.nparams);
	/* micro_batch is read by the walks: another shape walks again */
	struct run d = compile(&third, fx->in, c, other_shape);

	assert_int_equal(d.check_hits, 1);	/* the store's counts so far */
	assert_int_equal(d.check_misses, 2);
	assert_int_equal(d.build_hits, 1);
	assert_int_equal(d.build_misses, 2);
	assert_true(d.total > want.total);
	arena_free(&second);
	arena_free(&third);
	arena_free(&plain);
}

/* The second of two compilations of @text sharing one cache, the first
 * one's arena freed before it; its total must be that of a compilation
 * without the cache. */
static struct run twice(struct fixture *fx, const char *text)
{
	struct import_cache *c = import_cache_new(&fx->arena, fx->in);
	struct arena plain = { 0 }, first = { 0 }, second = { 0 };
	struct run want = compile(&plain, interner_new(&plain), NULL, text);

	compile(&first, fx->in, c, text);
	arena_free(&first);
	struct run b = compile(&second, fx->in, c, text);

	assert_int_equal(b.total, want.total);
	assert_int_equal(b.nparams, want.nparams);
	arena_free(&second);
	arena_free(&plain);
	return b;
}

static void a_model_of_the_users_file_is_not_kept(void **state)
{
	struct run b = twice(*state, user_model);

	/* its key names the user's template: not even looked up */
	assert_int_equal(b.check_hits + b.check_misses, 0);
	assert_int_equal(b.build_hits + b.build_misses, 0);
	b = twice(*state, user_alias);
	assert_int_equal(b.check_hits, 1);
	assert_int_equal(b.build_hits, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(second_compilation_takes_both_walks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(a_model_of_the_users_file_is_not_kept, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
