/* SPDX-License-Identifier: MIT */
/*
 * toml_config.c - torchtitan's TOML into the flat key list, and its keys
 * into train settings.
 *
 * Debian 12 has no C TOML library (see docs/import.md), so this reads the
 * subset torchtitan configs use: [table] and [[table]] headers, bare,
 * quoted and dotted keys, strings, integers (with _), floats, booleans,
 * arrays (which may span lines) and # comments. Anything else is a located
 * syntax error rather than a silent misread.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "analyzer/import/map_rows.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

/* The line without its comment and trailing blanks (a # inside a string stays). */
static size_t content_len(const char *p, size_t len)
{
	char quote = 0;

	for (size_t i = 0; i < len; i++) {
		if (quote && p[i] == quote)
			quote = 0;
		else if (!quote && (p[i] == '"' || p[i] == '\''))
			quote = p[i];
		else if (!quote && p[i] == '#') {
			len = i;
			break;
		}
	}
	while (len && isspace((unsigned char)p[len - 1]))
		len--;
	return len;
}

static const char *trim_ws(struct arena *a, const char *p, size_t len, bool unquote)
{
	while (len && isspace((unsigned char)*p))
		p++, len--;
	while (len && isspace((unsigned char)p[len - 1]))
		len--;
	if (unquote && len >= 2 && (p[0] == '"' || p[0] == '\'') && p[len - 1] == p[0])
		p++, len -= 2;
	return arena_strndup(a, p, len);
}

static const char *trim(struct arena *a, const char *p, size_t len)
{
	return trim_ws(a, p, len, true);
}

static enum cfg_kind value_kind(struct arena *a, const char *v, const char **text)
{
	size_t n = strlen(v);
	char *end;

	if (n >= 2 && (v[0] == '"' || v[0] == '\''))
		return *text = arena_strndup(a, v + 1, n - 2), CFG_STR;
	if (!strcmp(v, "true") || !strcmp(v, "false"))
		return *text = v, CFG_BOOL;
	char *digits = arena_strdup(a, v), *w = digits;

	for (const char *p = v; *p; p++)
		if (*p != '_')
			*w++ = *p;
	*w = '\0';
	(void)strtod(digits, &end);
	*text = digits;
	if (*digits && !*end)
		return strpbrk(digits, ".eE") && strncmp(digits, "0x", 2) ? CFG_REAL : CFG_INT;
	return CFG_STR;
}

/* "[a, 'b', 3]" -> "a,b,3". */
static const char *array_text(struct arena *a, const char *v)
{
	struct strbuf sb;
	const char *p = v + 1, *end = v + strlen(v) - 1;

	strbuf_init(&sb);
	while (p < end) {
		size_t len = strcspn(p, ",");

		if (p + len > end)
			len = (size_t)(end - p);
		const char *e = trim(a, p, len);

		if (*e)
			strbuf_addf(&sb, "%s%s", sb.len ? "," : "", e);
		p += len + 1;
	}
	const char *t = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return t;
}

static bool toml_pair(struct cfg *c, const char *table, const char *line, size_t len, size_t off,
		      struct strbuf *pending)
{
	const char *eq = memchr(line, '=', len);

	if (!eq)
		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, off, len ? len : 1),
				 "expected 'key = value' or a [table] header");
	const char *key = trim(c->arena, line, (size_t)(eq - line));
	const char *val = trim_ws(c->arena, eq + 1, len - (size_t)(eq + 1 - line), false);
	size_t lead = strspn(line, " \t");
	const char *path = *table ? arena_printf(c->arena, "%s.%s", table, key) : key;
	struct loc loc = cfg_loc(c, off + lead, (size_t)(eq - line) - lead);

	if (val[0] == '[' && val[strlen(val) - 1] != ']') {
		strbuf_addf(pending, "%s\n%s\n%u %u", path, val, loc.start, loc.end);
		return true;
	}
	if (!*val)
		return diag_fail(c->diag, DIAG_SYNTAX, loc, "'%s' has no value", key);
	if (val[0] == '[') {
		cfg_add(c, path, CFG_LIST, array_text(c->arena, val), loc);
		return true;
	}
	const char *text;
	enum cfg_kind k = value_kind(c->arena, val, &text);

	cfg_add(c, path, k, text, loc);
	return true;
}

/* A multi-line array: lines are appended until the closing bracket. */
static void toml_continue(struct cfg *c, struct strbuf *pending, const char *line, size_t len)
{
	strbuf_add(pending, "", 0);
	char *nl1 = strchr(pending->buf, '\n'), *nl2 = strchr(nl1 + 1, '\n');
	const char *path = arena_strndup(c->arena, pending->buf, (size_t)(nl1 - pending->buf));
	char *val = arena_printf(c->arena, "%.*s %.*s", (int)(nl2 - nl1 - 1), nl1 + 1, (int)len, line);
	unsigned s = 0, e = 0;

	sscanf(nl2 + 1, "%u %u", &s, &e);
	if (len && line[len - 1] == ']') {
		cfg_add(c, path, CFG_LIST, array_text(c->arena, trim(c->arena, val, strlen(val))),
			cfg_loc(c, s, e - s));
		strbuf_setlen(pending, 0);
		return;
	}
	strbuf_setlen(pending, 0);
	strbuf_addf(pending, "%s\n%s\n%u %u", path, val, s, e);
}

bool cfg_read_toml(struct cfg *c)
{
	const char *t = c->file->text, *table = "";
	struct strbuf pending;
	bool ok = true;

	strbuf_init(&pending);
	for (size_t off = 0; off < c->file->len;) {
		size_t full = strcspn(t + off, "\n"), len = content_len(t + off, full);
		const char *line = t + off;
		size_t lead = strspn(line, " \t");

		if (pending.len)
			toml_continue(c, &pending, line + lead, len - lead);
		else if (len > lead && line[lead] == '[') {
			size_t n = len - lead, br = line[lead + 1] == '[' ? 2 : 1;

			table = trim(c->arena, line + lead + br, n - 2 * br);
		} else if (len > lead)
			ok &= toml_pair(c, table, line, len, off, &pending);
		off += full + 1;
	}
	if (pending.len)
		ok = diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, c->file->len, 0), "an array is not closed");
	strbuf_release(&pending);
	return ok;
}


static const struct map_row titan_rows[] = {
	C("training.local_batch_size", "micro_batch"), C("training.batch_size", "micro_batch"),
	C("training.seq_len", "seq_len"),
	NOTE("training.global_batch_size", "grad_accum = global / (local x dp)"),
	E("training.mixed_precision_param", "precision", "bfloat16=bf16_mixed|float32=fp32"),
	IGN("training.mixed_precision_reduce"),
	C("parallelism.data_parallel_shard_degree", "parallel.dp_shard"),
	C("parallelism.data_parallel_replicate_degree", "parallel.dp_replicate"),
	C("parallelism.tensor_parallel_degree", "parallel.tp"),
	C("parallelism.pipeline_parallel_degree", "parallel.pp"),
	C("parallelism.context_parallel_degree", "parallel.cp"),
	C("parallelism.expert_parallel_degree", "parallel.ep"),
	C("parallelism.expert_tensor_parallel_degree", "parallel.etp"),
	E("parallelism.pipeline_parallel_schedule", "parallel.schedule",
	  "1F1B=\"1f1b\"|Interleaved1F1B=\"interleaved\"|GPipe=\"gpipe\""),
	IGN("parallelism.enable_async_tensor_parallel"), IGN("parallelism.pipeline_parallel_split_points"),
	IGN("parallelism.enable_compiled_autograd"), IGN("parallelism.disable_loss_parallel"),
	IGN("parallelism.fsdp_reshard_after_forward"),
	E("activation_checkpoint.mode", "checkpoint",
	  "full=full|selective=selective|none=none|selective_op=selective_op"),
	IGN("activation_checkpoint.selective_ac_option"),
	E("optimizer.name", "optimizer", "AdamW=adamw|Adam=adam"),
	IGN("optimizer.lr"), IGN("optimizer.eps"), IGN("optimizer.weight_decay"),
	IGN("optimizer.implementation"), IGN("optimizer.beta1"), IGN("optimizer.beta2"),
	NOTE("model.name", "the model: import its config.json"), NOTE("model.flavor", "the model size"),
	IGN("model.tokenizer_path"), IGN("model.hf_assets_path"), IGN("model.converters"),
	IGN("model.norm_type"), IGN("job.*"), IGN("profiling.*"), IGN("metrics.*"),
	IGN("lr_scheduler.*"), IGN("checkpoint.*"), IGN("comm.*"), IGN("validation.*"),
	IGN("training.steps"), IGN("training.max_norm"), IGN("training.dataset"),
	IGN("training.dataset_path"), IGN("training.warmup_steps"), IGN("training.compile"),
	IGN("training.seed"), IGN("training.deterministic"), IGN("training.gc_freq"),
	IGN("compile.*"), MUST("float8.enable_fsdp_float8_all_gather", "false"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

static struct cfg_item *titan_item(struct cfg *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->items[i].path, path))
			return &c->items[i];
	return NULL;
}

/* mode = "selective" with selective_ac_option = "op" is the op-level
 * policy (checkpoint = selective_op); with a layer frequency "N" it is full
 * AC of every N-th block (checkpoint = full, checkpoint_every = N). */
static void titan_ac_option(struct cfg *c, struct imp_out *o)
{
	struct cfg_item *mode = titan_item(c, "activation_checkpoint.mode");
	struct cfg_item *opt = titan_item(c, "activation_checkpoint.selective_ac_option");
	size_t n;

	if (!mode || !opt || !mode->text || !opt->text || strcmp(mode->text, "selective"))
		return;
	n = strspn(opt->text, "0123456789");
	if (!strcmp(opt->text, "op")) {
		cfg_set_scalar(mode, mode->kind, "selective_op");
	} else if (n > 0 && !opt->text[n] && strspn(opt->text, "0") < n) {
		cfg_set_scalar(mode, mode->kind, "full");
		imp_set(o, "checkpoint_every", opt->text, opt->path, NULL);
	}
}

/* torchtitan shards with FSDP2 whenever dp_shard is not 1; -1 means "the
 * GPUs left over", which is memc's default for dp_shard as well. */
bool titan_import(struct cfg *c, struct imp_out *o)
{
	titan_ac_option(c, o);
	for (size_t i = 0; i < c->n; i++) {
		struct cfg_item *it = &c->items[i];

		if (strcmp(it->path, "parallelism.data_parallel_shard_degree") || it->kind != CFG_INT)
			continue;
		if (it->i != 1)
			imp_set(o, "fsdp", "full_shard", it->path, NULL);
		if (it->i == -1)
			cfg_set_scalar(it, CFG_NULL, "null");
	}
	return map_apply(c, titan_rows, o);
}
