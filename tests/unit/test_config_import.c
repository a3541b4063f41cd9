/* SPDX-License-Identifier: MIT */
/*
 * test_config_import.c - the readers and the table engine of `memc
 * import`: dotted paths, typed values and key locations for JSON, YAML,
 * TOML and Megatron arguments; how a table row maps, assumes or reports.
 */
#include "lang_fixture.h"

#include "analyzer/import/import_impl.h"

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

static struct cfg read_text(struct fixture *fx, const char *name, const char *text,
			    bool (*reader)(struct cfg *))
{
	struct cfg c = { .arena = &fx->arena, .diag = fx->de };

	c.file = src_add_string(fx->t, fx->de, name, text, strlen(text));
	assert_non_null(c.file);
	assert_true(reader(&c));
	return c;
}

/* "line:col" of the item @path, or "missing". */
static const char *where(struct fixture *fx, const struct cfg *c, const char *path)
{
	const struct cfg_item *it = cfg_find(c, path);

	if (!it)
		return "missing";
	snprintf(fx->text, sizeof fx->text, "%u:%u", src_line_of(c->file, it->loc.start),
		 src_col_of(c->file, it->loc.start));
	return fx->text;
}

static void json_paths_values_and_key_positions(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "c.json",
		"{\n  \"a\": 1,\n  \"zero\": { \"stage\": 3, \"off\": { \"device\": \"cpu\" } },\n"
		"  \"list\": [ { \"hidden\": 1 } ],\n  \"r\": 0.1, \"n\": null, \"b\": false,\n"
		"  \"after\": \"x\"\n}\n", cfg_read_json);

	assert_string_equal(where(fx, &c, "zero.stage"), "3:13");
	assert_string_equal(where(fx, &c, "zero.off.device"), "3:34");
	assert_string_equal(where(fx, &c, "after"), "6:3");
	assert_string_equal(cfg_find(&c, "zero.off.device")->text, "cpu");
	assert_int_equal(cfg_find(&c, "zero.stage")->kind, CFG_INT);
	/* The shortest text that reads back as the double: not 0.10000000000000001. */
	assert_string_equal(cfg_find(&c, "r")->text, "0.1");
	assert_int_equal(cfg_find(&c, "n")->kind, CFG_NULL);
	assert_int_equal(cfg_find(&c, "b")->i, 0);
	/* A key inside an array element is not a path of its own. */
	assert_null(cfg_find(&c, "list.hidden"));
	assert_int_equal(cfg_find(&c, "list")->kind, CFG_LIST);
	/* The top-level key above a nested one, for one error per unknown block. */
	const struct cfg_item *dev = cfg_find(&c, "zero.off.device");

	assert_int_equal(src_line_of(c.file, dev->block_loc.start), 3);
	assert_int_equal(src_col_of(c.file, dev->block_loc.start), 3);
}

static void json_duplicate_key_is_a_syntax_error(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = { .arena = &fx->arena, .diag = fx->de };
	const char *text = "{\"a\": 1, \"a\": 2}";

	c.file = src_add_string(fx->t, fx->de, "d.json", text, strlen(text));
	assert_false(cfg_read_json(&c));
	assert_int_equal(diag_first(fx->de)->id, DIAG_SYNTAX);
}

static void yaml_plain_and_quoted_scalars(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "c.yaml",
		"batch_size: 2\nflag: True\nquoted: '3'\noptimizer:\n  _component_: torch.optim.AdamW\n"
		"  lr: 2e-5\nlayers: ['a', 'b']\nnothing: null\n", cfg_read_yaml);

	assert_int_equal(cfg_find(&c, "batch_size")->kind, CFG_INT);
	assert_string_equal(cfg_find(&c, "flag")->text, "true");
	assert_int_equal(cfg_find(&c, "quoted")->kind, CFG_STR);
	assert_string_equal(where(fx, &c, "optimizer.lr"), "6:3");
	assert_int_equal(cfg_find(&c, "optimizer.lr")->kind, CFG_REAL);
	assert_string_equal(cfg_find(&c, "layers")->text, "a,b");
	assert_int_equal(cfg_find(&c, "nothing")->kind, CFG_NULL);
	assert_string_equal(where(fx, &c, "layers"), "7:1");
}

static void toml_tables_arrays_and_comments(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "c.toml",
		"# top\n[training]\nsteps = 1_000  # comment\nname = \"a # not a comment\"\n"
		"quoted = \"3\"\n\n[parallelism]\n  tensor_parallel_degree = 2\nlist = [\n  \"x\",\n  'y',\n]\n"
		"flag = true\n", cfg_read_toml);

	assert_int_equal(cfg_find(&c, "training.steps")->i, 1000);
	assert_string_equal(cfg_find(&c, "training.name")->text, "a # not a comment");
	assert_int_equal(cfg_find(&c, "training.quoted")->kind, CFG_STR);
	assert_string_equal(where(fx, &c, "parallelism.tensor_parallel_degree"), "8:3");
	assert_string_equal(cfg_find(&c, "parallelism.list")->text, "x,y");
	assert_string_equal(where(fx, &c, "parallelism.list"), "9:1");
	assert_int_equal(cfg_find(&c, "parallelism.flag")->kind, CFG_BOOL);
}

static void megatron_flags_values_and_continuations(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "a.args",
		"# GPT_ARGS\n  --tensor-model-parallel-size 8 \\\n--bf16\n--lr=1.5e-4\n--data-path \"a b\"\n",
		cfg_read_args);

	assert_int_equal(cfg_find(&c, "tensor-model-parallel-size")->i, 8);
	assert_string_equal(where(fx, &c, "tensor-model-parallel-size"), "2:3");
	assert_int_equal(cfg_find(&c, "bf16")->kind, CFG_BOOL);
	assert_int_equal(cfg_find(&c, "lr")->kind, CFG_REAL);
	assert_string_equal(cfg_find(&c, "data-path")->text, "a b");
}

static const struct map_row rows[] = {
	{ "micro", "micro_batch", MAP_COUNT, NULL },
	{ "device", "offload.optimizer", MAP_ENUM, "cpu=cpu|nvme=nvme" },
	{ "bias", NULL, MAP_MUST, "false" },
	{ "bf16", "precision", MAP_IF_TRUE, "bf16_mixed" },
	{ "drop", "dropout", MAP_NONZERO, NULL },
	{ "lr", NULL, MAP_IGNORE, NULL },
	{ "sched.*", NULL, MAP_IGNORE, NULL },
	{ NULL, NULL, MAP_IGNORE, NULL },
};

static const char *value_of(const struct imp_out *o, const char *dst)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->set[i].dst && !strcmp(o->set[i].dst, dst))
			return o->set[i].value;
	return NULL;
}

static void table_maps_and_assumes(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "ok.json",
		"{\"micro\": 4, \"device\": \"CPU\", \"bias\": false, \"bf16\": true, \"drop\": 0.0,"
		" \"lr\": 1e-4, \"sched\": {\"type\": \"cosine\"}}", cfg_read_json);
	struct imp_out o = { .arena = &fx->arena };

	assert_true(map_apply(&c, rows, &o));
	assert_string_equal(value_of(&o, "micro_batch"), "4");
	assert_string_equal(value_of(&o, "offload.optimizer"), "cpu");
	assert_string_equal(value_of(&o, "precision"), "bf16_mixed");
	assert_string_equal(value_of(&o, "dropout"), "false");
	assert_int_equal(diag_error_count(fx->de), 0);
}

static void auto_becomes_a_comment(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "auto.json", "{\"micro\": \"auto\"}", cfg_read_json);
	struct imp_out o = { .arena = &fx->arena };

	assert_true(map_apply(&c, rows, &o));
	assert_null(value_of(&o, "micro_batch"));
	assert_int_equal(o.n, 1);
	assert_non_null(strstr(o.set[0].note, "auto"));
}

/* Each kind of unaccounted key is one located import-unused-key error;
 * an unknown block is reported once, at its key. */
static void unaccounted_keys_are_located_errors(void **state)
{
	struct fixture *fx = *state;
	struct cfg c = read_text(fx, "bad.json",
		"{\"bias\": true,\n \"device\": \"disk\",\n \"quant\": {\"bits\": 4, \"method\": \"gptq\"},\n"
		" \"micro\": \"four\"}", cfg_read_json);
	struct imp_out o = { .arena = &fx->arena };

	assert_false(map_apply(&c, rows, &o));
	assert_int_equal(diag_error_count(fx->de), 4);
	const struct diag *d = diag_first(fx->de);
	unsigned lines[4], i = 0;
	enum diag_id ids[4];

	for (; d && i < 4; d = d->next, i++)
		lines[i] = diag_loc_line(fx->de, d->loc), ids[i] = d->id;
	assert_int_equal(lines[0], 1);
	assert_int_equal(lines[1], 2);
	assert_int_equal(lines[2], 3);
	assert_int_equal(diag_loc_col(fx->de, diag_first(fx->de)->next->next->loc), 2);
	assert_int_equal(ids[0], DIAG_IMPORT_UNUSED_KEY);
	assert_int_equal(ids[2], DIAG_IMPORT_UNUSED_KEY);
	assert_int_equal(ids[3], DIAG_TYPE_MISMATCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(json_paths_values_and_key_positions),
		T(json_duplicate_key_is_a_syntax_error),
		T(yaml_plain_and_quoted_scalars),
		T(toml_tables_arrays_and_comments),
		T(megatron_flags_values_and_continuations),
		T(table_maps_and_assumes),
		T(auto_becomes_a_comment),
		T(unaccounted_keys_are_located_errors),
	};
	return cmocka_run_group_tests_name("config-import", tests, NULL, NULL);
}
