/* SPDX-License-Identifier: MIT */
/*
 * hf_config.c - a Hugging Face config.json into a model declaration built
 * on a stdlib family template (the table is hf_families.inc).
 *
 * Every key of the file is accounted for: a template parameter, a value
 * the template assumes (anything else is an import-unused-key error), or
 * a key that does not change memory. An unknown model_type is an error at
 * the key, never a guess at the nearest family.
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

#include "analyzer/import/hf_families.inc"

struct hf_family {
	const char *model_type, *template, *file, *archs;
	const struct map_row *rows;
	const char *defaults, *required;
};

#define HF_ROW(mt, tpl, file, archs, rows, defaults, required) \
	{ mt, tpl, file, archs, rows, defaults, required },
static const struct hf_family families[] = { HF_FAMILIES(HF_ROW) };
#undef HF_ROW

/* Keys that do not change memory in any family: ids, numerics of norms and
 * RoPE, bookkeeping. Family rows are looked up first. */
static const struct map_row common_rows[] = {
	IGN("_name_or_path"), IGN("model_type"), IGN("architectures"), IGN("bos_token_id"),
	IGN("eos_token_id"), IGN("pad_token_id"), IGN("sep_token_id"),
	IGN("decoder_start_token_id"), IGN("torch_dtype"), IGN("dtype"),
	IGN("transformers_version"), IGN("use_cache"), IGN("initializer_range"),
	IGN("initializer_factor"), IGN("rms_norm_eps"), IGN("layer_norm_eps"),
	IGN("layer_norm_epsilon"), IGN("rope_theta"), IGN("rope_scaling"), IGN("rope_scaling.*"),
	IGN("rope_parameters.*"), IGN("max_position_embeddings"), IGN("hidden_act"),
	IGN("tokenizer_class"), IGN("_attn_implementation"), IGN("output_attentions"),
	IGN("output_hidden_states"), IGN("return_dict"), IGN("pretraining_tp"),
	IGN("_from_model_config"),
	/* The modelling code's module names: model_type already picked the family. */
	IGN("auto_map.*"), END
};

static const struct hf_family *family_of(const char *model_type)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (!strcmp(families[i].model_type, model_type))
			return &families[i];
	return NULL;
}

bool hf_is_model_config(const struct cfg *c)
{
	return cfg_find(c, "model_type") || cfg_find(c, "architectures");
}

static const struct imp_setting *param_of(const struct imp_out *o, const char *param)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->set[i].dst && !strcmp(o->set[i].dst, param))
			return &o->set[i];
	return NULL;
}

static bool check_archs(struct cfg *c, const struct hf_family *f)
{
	const struct cfg_item *a = cfg_find(c, "architectures");
	struct map_row must = MUST("architectures", f->archs);

	return !a || map_item(c, a, &must, NULL);
}

static bool map_keys(struct cfg *c, const struct hf_family *f, struct imp_out *o)
{
	bool ok = true;

	for (size_t i = 0; i < c->n; i++) {
		const struct cfg_item *it = &c->items[i];
		const struct map_row *r = map_find(f->rows, it->path);

		if (!r)
			r = map_find(common_rows, it->path);
		if (r) {
			ok &= map_item(c, it, r, o);
			continue;
		}
		ok = cfg_unknown_key(c, it, arena_printf(c->arena, "the %s template reads or memc import knows to be harmless",
							   f->template),
				     map_block_known(f->rows, it->path) || map_block_known(common_rows, it->path));
	}
	return ok;
}

/* Each count fits in 64 bits; a product of two need not. */
static bool product(struct cfg *c, long long a, long long b, struct loc at, const char *what, long long *out)
{
	if (!__builtin_mul_overflow(a, b, out))
		return true;
	return diag_fail(c->diag, DIAG_OUT_OF_RANGE, at, "%s does not fit in a 64-bit integer", what);
}

/* Counts a template derives differently from the Hugging Face class. */
static bool derived_params(struct cfg *c, const struct hf_family *f, struct imp_out *o)
{
	const struct cfg_item *h = cfg_find(c, "hidden_size"), *n = cfg_find(c, "n_shared_experts");
	const struct cfg_item *e = cfg_find(c, "moe_intermediate_size");
	long long v;

	if (!strcmp(f->model_type, "falcon") && !param_of(o, "ffn") && h) {
		if (!product(c, 4, h->i, h->loc, "4 x hidden_size", &v))
			return false;
		imp_set(o, "ffn", arena_printf(c->arena, "%lld", v), "4 x hidden_size", "ffn_hidden_size absent");
	}
	if (!strcmp(f->model_type, "deepseek_v3") && n && e) {
		if (!product(c, n->i, e->i, n->loc, "n_shared_experts x moe_intermediate_size", &v))
			return false;
		imp_set(o, "shared_ffn", arena_printf(c->arena, "%lld", v),
			"n_shared_experts x moe_intermediate_size", NULL);
	}
	/* PhiAttention._init_rope: int(partial_rotary_factor x head_dim) dims,
	 * the width of the caches rope_cache counts (the template's floor) */
	const struct cfg_item *pr = cfg_find(c, "partial_rotary_factor"), *nh = cfg_find(c, "num_attention_heads");

	if (!strcmp(f->model_type, "phi") && pr && h && nh && nh->kind == CFG_INT && nh->i > 0 &&
	    h->kind == CFG_INT && (pr->kind == CFG_INT || pr->kind == CFG_REAL) &&
	    !(pr->r * (double)(h->i / nh->i) >= 1))
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, pr->loc, "partial_rotary_factor %s leaves no "
				 "rotary dimension of the %lld-wide heads (int(factor x head_dim) = 0)", pr->text,
				 h->i / nh->i);
	if (!strcmp(f->model_type, "t5")) {
		const struct cfg_item *l = cfg_find(c, "num_layers"), *d = cfg_find(c, "num_decoder_layers");
		const struct cfg_item *kv = cfg_find(c, "d_kv"), *m = cfg_find(c, "d_model");
		const struct cfg_item *hd = cfg_find(c, "num_heads");

		if (l && d && d->kind == CFG_INT && d->i != l->i)
			return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, d->loc,
					 "num_decoder_layers %lld != num_layers %lld: the T5 template has "
					 "one depth", d->i, l->i);
		if (kv && m && hd && hd->i && !product(c, kv->i, hd->i, kv->loc, "d_kv x num_heads", &v))
			return false;
		if (kv && m && hd && hd->i && v != m->i)
			return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, kv->loc,
					 "d_kv x num_heads != d_model: the T5 template has no d_kv");
	}
	return true;
}

static void apply_defaults(struct cfg *c, const struct hf_family *f, struct imp_out *o)
{
	char buf[128];

	for (const char *p = f->defaults; *p;) {
		size_t len = strcspn(p, " ");

		snprintf(buf, sizeof buf, "%.*s", (int)len, p);
		char *eq = strchr(buf, '=');

		if (eq) {
			*eq = '\0';
			if (!param_of(o, buf))
				imp_set(o, arena_strdup(c->arena, buf), arena_strdup(c->arena, eq + 1),
					NULL, "absent: the Hugging Face default");
		}
		p += len + (p[len] == ' ');
	}
}

/* A key of the file that gives @param and was refused where it stands
 * (`"hidden_size": -4096`): a second error saying it is absent would be
 * false. null and "auto" leave it to the template or the user. */
static bool refused(const struct cfg *c, const struct hf_family *f, const char *param)
{
	for (const struct map_row *r = f->rows; r->src; r++) {
		const struct cfg_item *it = r->dst && !strcmp(r->dst, param) ? cfg_find(c, r->src) : NULL;

		if (it && it->kind != CFG_NULL && !(it->kind == CFG_STR && !strcmp(it->text, "auto")))
			return true;
	}
	return false;
}

static bool check_required(struct cfg *c, const struct hf_family *f, const struct imp_out *o,
			   struct loc at)
{
	char buf[64];
	bool ok = true;

	for (const char *p = f->required; *p;) {
		size_t len = strcspn(p, " ");

		snprintf(buf, sizeof buf, "%.*s", (int)len, p);
		const struct imp_setting *s = param_of(o, buf);

		if ((!s || !s->value || !*s->value) && refused(c, f, buf)) {
			ok = false;
		} else if (!s || !s->value || !*s->value) {
			diag_error(c->diag, DIAG_MISSING_FIELD, at,
				   "%s needs '%s', and this config.json does not give the key for it",
				   f->template, buf);
			ok = false;
		}
		p += len + (p[len] == ' ');
	}
	return ok;
}

static bool printed_before(const struct map_row *rows, const struct map_row *r)
{
	for (const struct map_row *q = rows; q < r; q++)
		if (q->dst && !strcmp(q->dst, r->dst))
			return true;
	return false;
}

/* "  name = value," padded so the source-key comments line up. */
static void emit_arg(struct strbuf *sb, const struct imp_setting *s, bool last)
{
	size_t start = sb->len;

	if (!s->value[0]) {
		strbuf_addf(sb, "  // %s = null: the template's default\n", s->src);
		return;
	}
	strbuf_addf(sb, "  %s = %s%s", s->dst, s->value, last ? "" : ",");
	while (sb->len - start < 28)
		strbuf_addch(sb, ' ');
	strbuf_addf(sb, " // %s%s%s\n", s->src ? s->src : "", s->src && s->note ? "; " : "",
		    s->note ? s->note : "");
}

static void emit_model(struct strbuf *sb, const struct hf_family *f, const struct imp_out *o,
		       const char *name, const char *path)
{
	const struct imp_setting **order = NULL;
	size_t n = 0, cap = 0, last = 0;

	for (const struct map_row *r = f->rows; r->src; r++) {
		const struct imp_setting *s = r->dst && !printed_before(f->rows, r) ? param_of(o, r->dst) : NULL;

		if (s)
			ARENA_GROW(o->arena, order, n, cap), order[n++] = s;
	}
	for (size_t i = 0; i < o->n; i++) {
		bool seen = false;

		for (size_t j = 0; j < n; j++)
			seen |= order[j] == &o->set[i];
		if (!seen && o->set[i].dst)
			ARENA_GROW(o->arena, order, n, cap), order[n++] = &o->set[i];
	}
	for (size_t i = 0; i < n; i++)
		if (order[i]->value[0])
			last = i;
	strbuf_addf(sb, "// %s: model_type \"%s\" -> %s (stdlib %s.mem)\n", path, f->model_type,
		    f->template, f->file);
	strbuf_addf(sb, "import \"%s\"\n\nmodel %s = %s(\n", f->file, name, f->template);
	for (size_t i = 0; i < n; i++)
		emit_arg(sb, order[i], i == last);
	strbuf_addstr(sb, ")\n");
}

bool hf_import(struct cfg *c, const char *name, struct strbuf *sb)
{
	const struct cfg_item *mt = cfg_find(c, "model_type");
	struct imp_out o = { .arena = c->arena };

	if (!mt)
		return diag_fail(c->diag, DIAG_MISSING_FIELD, cfg_loc(c, 0, 1),
				 "a Hugging Face config.json needs 'model_type'");
	const struct hf_family *f = family_of(mt->text);

	if (!f) {
		struct diag *d = diag_error(c->diag, DIAG_IMPORT_UNKNOWN_MODEL_TYPE, mt->loc,
					    "model_type '%s' maps to no stdlib family", mt->text);

		diag_note(d, NO_LOC, "memc import knows llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, "
			  "gemma, gemma2, gemma3_text, phi3, olmo2, falcon, gpt2, bert, t5, deepseek_v2, "
			  "deepseek_v3, phi and bloom (docs/import.md)");
		return false;
	}
	bool ok = check_archs(c, f);

	ok &= map_keys(c, f, &o);
	ok &= derived_params(c, f, &o);
	apply_defaults(c, f, &o);
	ok &= check_required(c, f, &o, mt->loc);
	if (ok)
		emit_model(sb, f, &o, name, c->file->display_name);
	return ok;
}
