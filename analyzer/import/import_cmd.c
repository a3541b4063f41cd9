/* SPDX-License-Identifier: MIT */
/*
 * import_cmd.c - the `memc import` command: read each CONFIG by its
 * format, map it, and print one .mem text (a model declaration from a
 * Hugging Face config.json, a train block from the training configs).
 *
 * All configs of one run share one arena, source table and diagnostics
 * engine, so errors in several files print in argument order and the text
 * is written only when there were none.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/import/import_cmd.h"
#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/source.h"
#include "lang/strbuf.h"

struct import_run {
	struct arena arena;
	struct src_table *src;
	struct diag_engine *diag;
	const char *name, *out_path;
	const char **files;
	size_t nfiles;
	struct strbuf model;		/* the model declaration, if a config.json gave one */
	struct imp_out train;
	const char *model_file;
	FILE *out;			/* where the text goes without -o (stdout) */
	FILE *diag_out;			/* the tally's stream (stderr) */
};

static int import_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "memc: import: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
	fputs("usage: memc import [--name NAME] [-o FILE] CONFIG...\n", stderr);
	return 2;
}

static bool is_identifier(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	while (*++s)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static int parse_import_args(struct import_run *r, int argc, char **argv)
{
	r->files = arena_alloc(&r->arena, arena_array_size(sizeof *r->files, (size_t)argc));
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--name") || !strcmp(a, "-o")) {
			if (i + 1 >= argc)
				return import_usage("option needs a value:", a);
			*(a[1] == 'o' ? &r->out_path : &r->name) = argv[++i];
		} else if (!strncmp(a, "--name=", 7)) {
			r->name = a + 7;
		} else if (a[0] == '-' && a[1]) {
			return import_usage("unknown option", a);
		} else {
			r->files[r->nfiles++] = a;
		}
	}
	if (r->name && !is_identifier(r->name))
		return import_usage("--name needs a .mem identifier (letters, digits, _), not", r->name);
	return r->nfiles ? -1 : import_usage("needs at least one CONFIG", NULL);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* A .mem identifier from the config's folder (config.json) or file name. */
static const char *default_name(struct arena *a, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t len = strcspn(base, ".");

	if (!strcmp(base, "config.json") && slash) {
		const char *end = slash, *start = end;

		while (start > path && start[-1] != '/')
			start--;
		base = start, len = (size_t)(end - start);
	}
	struct strbuf sb;

	strbuf_init(&sb);
	/* A prefix, since the stdlib already names many checkpoints the way
	 * their folders are named (qwen2_5_7b), and a name cannot start with a digit. */
	strbuf_addstr(&sb, "hf_");
	for (size_t i = 0; i < len; i++)
		strbuf_addch(&sb, isalnum((unsigned char)base[i]) ? tolower((unsigned char)base[i]) : '_');
	const char *name = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return name;
}

/* One CONFIG: its reader by extension, then its mapper. */
static bool import_one(struct import_run *r, const char *path)
{
	struct src_file *f = src_load(r->src, r->diag, path, NULL, NO_LOC);
	struct cfg c = { .arena = &r->arena, .diag = r->diag, .file = f };

	if (!f || !f->valid)	/* src_load gives none such; an overlay (import_text) may */
		return false;
	if (ends_with(path, ".json")) {
		if (!cfg_read_json(&c))
			return false;
		if (!hf_is_model_config(&c))
			return ds_import(&c, &r->train);
		if (r->model_file)
			return diag_fail(r->diag, DIAG_DUPLICATE_DEFINITION, cfg_loc(&c, 0, 1),
					 "a second model config (the first was %s)", r->model_file);
		r->model_file = path;
		if (!r->name)
			r->name = default_name(&r->arena, path);
		return hf_import(&c, r->name, &r->model);
	}
	if (ends_with(path, ".toml"))
		return cfg_read_toml(&c) && titan_import(&c, &r->train);
	if (ends_with(path, ".yaml") || ends_with(path, ".yml"))
		return cfg_read_yaml(&c) && yaml_import(&c, &r->train);
	if (fsdp_qlora_is_args(f))
		return cfg_read_fsdp_qlora(&c) && fsdp_qlora_import(&c, &r->train);
	return cfg_read_args(&c) && megatron_import(&c, &r->train);
}

static bool has_setting(const struct imp_out *o, const char *prefix)
{
	size_t n = strlen(prefix);

	for (size_t i = 0; i < o->n; i++)
		if (o->set[i].dst && o->set[i].value && o->set[i].value[0] &&
		    !strncmp(o->set[i].dst, prefix, n))
			return true;
	return false;
}

static void emit_line(struct strbuf *sb, const char *indent, const char *key,
		      const struct imp_setting *s)
{
	size_t start = sb->len;

	strbuf_addf(sb, "%s%s = %s", indent, key, s->value);
	while (sb->len - start < 30)
		strbuf_addch(sb, ' ');
	strbuf_addf(sb, " // %s%s%s\n", s->src, s->note ? "; " : "", s->note ? s->note : "");
}

/* Sub-record settings ("offload.optimizer") grouped into one block each,
 * in the order their first key came. */
static void emit_group(struct strbuf *sb, const struct imp_out *o, size_t first)
{
	const char *dot = strchr(o->set[first].dst, '.');
	size_t plen = (size_t)(dot - o->set[first].dst);

	/* an empty value (a null: the framework default) opened no block */
	for (size_t i = 0; i < first; i++)
		if (o->set[i].dst && o->set[i].value && o->set[i].value[0] &&
		    !strncmp(o->set[i].dst, o->set[first].dst, plen + 1))
			return;
	strbuf_addf(sb, "  %.*s {\n", (int)plen, o->set[first].dst);
	for (size_t i = first; i < o->n; i++)
		if (o->set[i].dst && o->set[i].value && o->set[i].value[0] &&
		    !strncmp(o->set[i].dst, o->set[first].dst, plen + 1))
			emit_line(sb, "    ", o->set[i].dst + plen + 1, &o->set[i]);
	strbuf_addstr(sb, "  }\n");
}

static void emit_train(struct import_run *r, struct strbuf *sb)
{
	static const char *const required[] = { "model", "cluster", "precision", "optimizer",
						"micro_batch", "seq_len" };
	const struct imp_out *o = &r->train;
	struct strbuf missing;

	strbuf_init(&missing);
	strbuf_addstr(sb, "\ntrain job {\n");
	if (r->model.len)
		emit_line(sb, "  ", "model", &(struct imp_setting){ "model", r->name, r->model_file, NULL });
	for (size_t i = 0; i < o->n; i++) {
		const struct imp_setting *s = &o->set[i];

		if (!s->value)
			strbuf_addf(sb, "  // %s\n", s->note);
		else if (s->value[0] && strchr(s->dst, '.'))
			emit_group(sb, o, i);
		else if (s->value[0])
			emit_line(sb, "  ", s->dst, s);
	}
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!has_setting(o, required[i]) && !(i == 0 && r->model.len))
			strbuf_addf(&missing, "%s%s", missing.len ? ", " : "", required[i]);
	if (missing.len)
		strbuf_addf(sb, "  // required, and not in these configs: %s\n", missing.buf);
	strbuf_addstr(sb, "}\n");
	strbuf_release(&missing);
}

static void emit_all(struct import_run *r, struct strbuf *sb)
{
	strbuf_addstr(sb, "// Generated by `memc import");
	for (size_t i = 0; i < r->nfiles; i++)
		strbuf_addf(sb, " %s", r->files[i]);
	strbuf_addstr(sb, "`; each value names the key it came from.\n");
	if (has_setting(&r->train, "precision"))
		strbuf_addstr(sb, "import \"precision\"\n");
	if (has_setting(&r->train, "optimizer"))
		strbuf_addstr(sb, "import \"optimizers\"\n");
	if (r->model.len)
		strbuf_addf(sb, "%s%s", sb->buf[sb->len - 2] == '`' ? "" : "\n", r->model.buf);
	if (r->train.n)
		emit_train(r, sb);
}

static int write_out(const struct import_run *r, const struct strbuf *sb)
{
	FILE *out = r->out_path ? fopen(r->out_path, "w") : r->out;

	if (!out) {
		fprintf(stderr, "memc: import: cannot write %s\n", r->out_path);
		return 2;
	}
	fputs(sb->buf, out);
	if (out != r->out && fclose(out) != 0) {
		fprintf(stderr, "memc: import: cannot write %s\n", r->out_path);
		return 2;
	}
	return 0;
}

static void run_init(struct import_run *r, FILE *out, FILE *diag_out)
{
	memset(r, 0, sizeof *r);
	r->src = src_table_new(&r->arena);
	r->diag = diag_new(&r->arena, r->src, diag_out);
	r->train.arena = &r->arena;
	r->out = out;
	strbuf_init(&r->model);
}

/* A job whose framework shards its weights gathers and reduces on streams
 * of its own (FSDP1, FSDP2, ZeRO-3; the class of memory.h
 * mem_shards_weights, spelt as the importers write it): what each
 * stream's pool caches is what the flat ratio cannot describe and the
 * replay's per-stream pools do (docs/accuracy.md, fifth pass: 5.8 %
 * against 15.5 % median on those rows), so the import asks for the replay
 * unless its mapper chose. The builder replays torch FSDP's by default
 * (memory.h mem_replays_by_default) and not ZeRO-3's; the line is written
 * for both, so the imported file says what it gets. The importer sees
 * strings, not the builder's enum: the spellings are its own. */
static void replay_if_sharded(struct imp_out *o)
{
	const struct imp_setting *fsdp = imp_find(o, "fsdp"), *zero = imp_find(o, "zero"), *by = NULL;
	const char *src = NULL;

	if (fsdp && fsdp->value && (!strcmp(fsdp->value, "full_shard") || !strcmp(fsdp->value, "shard_grad_op") ||
				    !strcmp(fsdp->value, "hybrid_shard")))
		by = fsdp;
	else if (zero && zero->value && !strcmp(zero->value, "3"))
		by = zero;
	/* an fsdp2 { } record without fsdp is full_shard (build_job_layout.c
	 * sharding): torchtitan's default dp_shard, or dp_shard 1 under cp */
	for (size_t i = 0; !by && !fsdp && i < o->n; i++)
		if (o->set[i].dst && o->set[i].value && !strncmp(o->set[i].dst, "fsdp2.", 6))
			by = &o->set[i], src = "fsdp2 { } (fully_shard)";
	if (by && !imp_find(o, "alloc.replay"))
		imp_set(o, "alloc.replay", "true", src ? src : by->src, "weights sharded on streams of their own: "
			"the allocator replay's per-stream pools (docs/accuracy.md, fifth pass)");
}

/* Megatron's --mtp-num-layers beside a config.json: DeepseekV3ForCausalLM
 * builds no MTP layer (config.json's num_nextn_predict_layers is read by
 * no HF class), so the count is the declared model's mtp_num_layers, put
 * first among its named arguments; a template without MTP layers (memc's
 * are DeepSeekV3's) cannot hold what Megatron builds. */
static bool mtp_into_model(struct import_run *r)
{
	struct strbuf *m = &r->model, arg;
	/* the declaration's line, not the comment above it, which names a path */
	const char *decl = r->train.mtp_layers && m->len ? strstr(m->buf, "\nmodel ") : NULL;
	const char *open = decl ? strstr(decl, " = ") : NULL;
	size_t at;

	if (!open)
		return true;
	open += 3;
	if (strncmp(open, "DeepSeekV3(\n", 12))
		return diag_fail(r->diag, DIAG_IMPORT_UNUSED_KEY, r->train.mtp_loc, "--mtp-num-layers %lld "
				 "adds multi-token-prediction layers, and %s's model (%.*s) has none in memc "
				 "(only DeepSeekV3's template does): drop the flag or import without the config",
				 r->train.mtp_layers, r->model_file, (int)strcspn(open, "("), open);
	at = (size_t)(open + 12 - m->buf);
	strbuf_init(&arg);
	strbuf_addf(&arg, "  mtp_num_layers = %lld,", r->train.mtp_layers);
	while (arg.len < 28)
		strbuf_addch(&arg, ' ');
	strbuf_addf(&arg, " // mtp-num-layers (Megatron-Core's MultiTokenPredictionBlock)\n%s", m->buf + at);
	strbuf_setlen(m, at);
	strbuf_addstr(m, arg.buf);
	strbuf_release(&arg);
	return true;
}

/* Each CONFIG, then the text; @rc < 0: the arguments were good. */
static int run_files(struct import_run *r, int rc)
{
	bool ok = true, unreadable = false;

	for (size_t i = 0; rc < 0 && i < r->nfiles; i++) {
		uint32_t before = r->src->nfiles;

		ok &= import_one(r, r->files[i]);
		unreadable |= r->src->nfiles == before;
		diag_flush(r->diag);
	}
	if (rc < 0 && ok) {
		ok = mtp_into_model(r);
		diag_flush(r->diag);
	}
	replay_if_sharded(&r->train);
	if (rc < 0) {
		diag_print_tally(r->diag, r->diag_out);
		rc = unreadable ? 2 : !ok || diag_error_count(r->diag) ? 1 : -1;
	}
	if (rc < 0) {
		struct strbuf sb;

		strbuf_init(&sb);
		emit_all(r, &sb);
		rc = write_out(r, &sb);
		strbuf_release(&sb);
	}
	strbuf_release(&r->model);
	arena_free(&r->arena);
	return rc;
}

int import_text(const char *path, const char *text, size_t len, FILE *out, FILE *diag_out)
{
	struct import_run r;

	run_init(&r, out, diag_out);
	r.diag_out = diag_out;
	r.files = &path;
	r.nfiles = 1;
	src_set_overlay(r.src, path, text, len);
	return run_files(&r, -1);
}

int import_main(int argc, char **argv)
{
	struct import_run r;

	run_init(&r, stdout, stderr);
	r.diag_out = stderr;
	return run_files(&r, parse_import_args(&r, argc, argv));
}
