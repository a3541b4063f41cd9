/* SPDX-License-Identifier: MIT */
/*
 * import_impl.h - what the readers and mappers of `memc import` share.
 *
 * Every config format is read into one flat list of items: a dotted key
 * path ("zero_optimization.offload_optimizer.device"), a scalar value and
 * the location of the key in the file. The mappers then walk that list
 * against their tables, so every key of the file is either mapped, known
 * not to change memory, or reported: nothing is dropped silently.
 */
#ifndef MEMC_ANALYZER_IMPORT_IMPL_H
#define MEMC_ANALYZER_IMPORT_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "lang/source.h"

struct arena;
struct diag_engine;
struct strbuf;

enum cfg_kind { CFG_INT, CFG_REAL, CFG_STR, CFG_BOOL, CFG_NULL, CFG_LIST };

struct cfg_item {
	const char *path;	/* dotted key path */
	enum cfg_kind kind;
	const char *text;	/* canonical scalar text; a list: its elements, comma-separated */
	long long i;		/* CFG_INT (and CFG_BOOL: 0/1) */
	double r;		/* CFG_REAL and CFG_INT */
	struct loc loc;		/* the key */
	struct loc block_loc;	/* its top-level key ("quantization_config"); loc if none */
	bool bare;		/* a command-line flag with nothing after it (read as true) */
};

struct cfg {
	struct arena *arena;
	struct diag_engine *diag;
	struct src_file *file;
	struct cfg_item *items;
	size_t n, cap;
	const char *reported_block;	/* the last unknown block an error named */
};

/* False, after an error at @loc, for a value no item can hold (an integer
 * wider than 64 bits); the item is then not added. */
bool cfg_add(struct cfg *c, const char *path, enum cfg_kind kind, const char *text, struct loc loc);
const struct cfg_item *cfg_find(const struct cfg *c, const char *path);
/* A located key range [start, start + len) in the config file. */
struct loc cfg_loc(const struct cfg *c, size_t start, size_t len);
/* Scalar text as it would be compared: "3", "0.5", "true", "null", "cpu". */
void cfg_set_scalar(struct cfg_item *it, enum cfg_kind kind, const char *text);
/* A command-line value's kind (argparse gives none): CFG_INT or CFG_REAL
 * where the whole text is a decimal number (a '.' or an exponent makes it
 * real), CFG_STR otherwise (hex, inf, nan). The readers of typed formats
 * use it for their decimal numbers too. */
enum cfg_kind cfg_number_kind(const char *v);

/* Values a mapper writes into memc text itself (a LoRA rank into
 * `lora(r = ...)`): true, or false after an error at @it that says what
 * was wanted. A whole number of at least @min; a number in [@lo, @hi),
 * @range saying so ("a number from 0 to below 1"). */
bool cfg_whole_at_least(struct cfg *c, const struct cfg_item *it, long long min);
bool cfg_number_in(struct cfg *c, const struct cfg_item *it, double lo, double hi, const char *range);

bool cfg_read_json(struct cfg *c);
bool cfg_read_yaml(struct cfg *c);
bool cfg_read_toml(struct cfg *c);
bool cfg_read_args(struct cfg *c);
/* An fsdp_qlora train.py command line (fsdp_qlora_args.c), not Megatron's. */
bool fsdp_qlora_is_args(const struct src_file *f);
bool cfg_read_fsdp_qlora(struct cfg *c);

/*
 * How a source key becomes memc text. A row's src may end in ".*" to cover
 * every key below it.
 */
enum map_conv {
	MAP_COUNT,	/* a whole number, at least arg if set (`"auto"` becomes a comment) */
	MAP_BOOL,	/* true / false */
	MAP_NONZERO,	/* a number: dst = (value != 0), e.g. a dropout probability */
	MAP_ENUM,	/* arg "src=dst|src=dst": string values, case-insensitive */
	MAP_IF_TRUE,	/* arg "value": dst = value when the key is true */
	MAP_MUST,	/* the key is harmless only with the value arg ("a|b" for either) */
	MAP_IGNORE,	/* does not change memory */
	MAP_NOTE,	/* does not map; the value is worth a comment (arg: why) */
	MAP_RATIO,	/* a number from 0 to 1, written as it is */
	MAP_IMPLIES,	/* arg "value": the key's presence (not false) sets dst = value */
};

/* A key may have several rows, one after the other: each is applied
 * (TRL's num_generations is rl.num_generations and says the job is GRPO). */
struct map_row {
	const char *src;
	const char *dst;
	enum map_conv conv;
	const char *arg;
};

/* One line of output: dst = value  // src. */
struct imp_setting {
	const char *dst;
	const char *value;	/* NULL: a comment-only line */
	const char *src;
	const char *note;
};

struct imp_out {
	struct arena *arena;
	struct imp_setting *set;
	size_t n, cap;
	/* Megatron's --mtp-num-layers (0: none) and where it was: a shape of
	 * the model a config.json of the same run declares (import_cmd.c) */
	long long mtp_layers;
	struct loc mtp_loc;
};

void imp_set(struct imp_out *o, const char *dst, const char *value, const char *src, const char *note);
/* The setting of @dst made so far (a value, not a comment line), or NULL. */
struct imp_setting *imp_find(const struct imp_out *o, const char *dst);
/* Apply @rows (NULL-terminated by src) to every item of @c; unmatched or
 * unmappable keys are import-unused-key errors. Returns false on errors. */
bool map_apply(struct cfg *c, const struct map_row *rows, struct imp_out *o);
/* An import-unused-key error for a key no table has (@what: "memc import
 * maps or knows to be harmless"): the key when its block is known
 * (@known_block: map_block_known), else its block, once for all its keys. */
bool cfg_unknown_key(struct cfg *c, const struct cfg_item *it, const char *what, bool known_block);
/* Whether a row of @rows is below @path's top-level block. */
bool map_block_known(const struct map_row *rows, const char *path);
const struct map_row *map_find(const struct map_row *rows, const char *path);
/* Convert one item by one row into @o (dst may be a template parameter). */
bool map_item(struct cfg *c, const struct cfg_item *it, const struct map_row *r, struct imp_out *o);

/* Hugging Face config.json: the model declaration text into @sb. */
bool hf_import(struct cfg *c, const char *name, struct strbuf *sb);
/* True when a JSON config looks like a Hugging Face model config. */
bool hf_is_model_config(const struct cfg *c);

/* The train-setting formats: each maps @c into @o. */
bool ds_import(struct cfg *c, struct imp_out *o);
bool megatron_import(struct cfg *c, struct imp_out *o);
bool fsdp_qlora_import(struct cfg *c, struct imp_out *o);
bool titan_import(struct cfg *c, struct imp_out *o);
bool yaml_import(struct cfg *c, struct imp_out *o);
/* LitGPT's `litgpt finetune` YAML (config_hub/finetune), from yaml_import. */
bool litgpt_import(struct cfg *c, struct imp_out *o);

#endif
