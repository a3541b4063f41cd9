/* SPDX-License-Identifier: MIT */
/*
 * fsdp_qlora_args.c - an AnswerDotAI fsdp_qlora `train.py` command line
 * (fastcore call_parse flags, "--flag value", on one line or continued with
 * backslashes) into train-block settings.  train.py's own defaults differ
 * from memc's (gradient checkpointing and CPU offload are on, LoRA dropout
 * is 0.1), so a flag left out is written with train.py's value; and what
 * train.py does whatever the flags say (its FSDP1 arguments, the loop that
 * keeps `output`) is written too (docs/import.md "fsdp_qlora train.py").
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

#include "analyzer/import/map_rows.h"

/* train.py @4cd6923 `main`: the flags a table maps as they are; those that
 * build the finetune call, the precision or a default are read by
 * fq_precision(), fq_finetune() and fq_fixed(), and are harmless here. */
static const struct map_row fq_rows[] = {
	C("batch_size", "micro_batch"),
	C("context_length", "seq_len"),
	C("gradient_accumulation_steps", "grad_accum"),
	E("sharding_strategy", "fsdp",
	  "full_shard=full_shard|shard_grad_op=shard_grad_op|ddp=no_shard|hybrid_full_shard=hybrid_shard"),
	E("optimizer", "optimizer", "adamw=adamw|adam=adam|sgd=sgd"),
	T("use_activation_cpu_offload", "offload.activations", "cpu"),
	NOTE("model_name", "a model: import its config.json (memc import config.json) for the model"),
	NOTE("world_size", "the GPUs: cluster = N x GPU (-1: every GPU of the node)"),
	NOTE("reentrant_checkpointing", "checkpoint = full either way (the forward keeps no saves)"),
	NOTE("dataset", "samples are cut to context_length: seq_len is the longest batch"),
	MUST("n_bits", "4"), MUST("profile_memory", "false"),
	IGN("train_type"), IGN("precision"), IGN("lora_rank"), IGN("lora_alpha"),
	IGN("lora_dropout"), IGN("lora_target_modules"), IGN("use_gradient_checkpointing"),
	IGN("use_cpu_offload"), IGN("low_memory"), IGN("no_sync"),
	IGN("num_epochs"), IGN("dataset_samples"), IGN("save_model"), IGN("llama_pro_path"),
	IGN("output_dir"), IGN("verbose"), IGN("lr"), IGN("apply_gradient_clipping"),
	IGN("grad_norm"), IGN("wd"), IGN("lr_scheduler"), IGN("loading_workers"), IGN("log_to"),
	IGN("master_addr"), IGN("master_port"), IGN("seed"), IGN("project_name"), IGN("name"),
	IGN("group"), IGN("entity"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

/* A train.py command line has underscore flags and names a flag only
 * train.py has; Megatron's are hyphenated. */
bool fsdp_qlora_is_args(const struct src_file *f)
{
	static const char *const marks[] = { "--train_type", "--context_length", "--use_cpu_offload" };

	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		for (size_t at = 0, n = strlen(marks[i]); at + n <= f->len; at++)
			if (!memcmp(f->text + at, marks[i], n))
				return true;
	return false;
}

/* fastcore's bool_arg (str2bool): y/yes/t/true/on/1 and n/no/f/false/off/0. */
static enum cfg_kind value_kind(const char *v, const char **canon)
{
	static const char *const yes[] = { "y", "yes", "t", "true", "on" };
	static const char *const no[] = { "n", "no", "f", "false", "off" };

	*canon = v;
	for (size_t i = 0; i < 5; i++) {
		if (!strcasecmp(v, yes[i]))
			return *canon = "true", CFG_BOOL;
		if (!strcasecmp(v, no[i]))
			return *canon = "false", CFG_BOOL;
	}
	return cfg_number_kind(v);
}

/* The next word at or after *pos: skips blanks, backslash continuations and
 * `#` comments; strips one pair of quotes.  Returns its length; at the end
 * *start is @len (a quoted '' is a word of length 0 before it). */
static size_t next_word(const char *t, size_t len, size_t *pos, size_t *start)
{
	size_t i = *pos;

	for (;;) {
		while (i < len && (isspace((unsigned char)t[i]) || t[i] == '\\'))
			i++;
		if (i < len && t[i] == '#') {
			while (i < len && t[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	size_t s = i;

	while (i < len && !isspace((unsigned char)t[i]))
		i++;
	*pos = i;
	if (i - s >= 2 && (t[s] == '"' || t[s] == '\'') && t[i - 1] == t[s])
		s++, i--;
	*start = s;
	return i - s;
}

bool cfg_read_fsdp_qlora(struct cfg *c)
{
	const char *t = c->file->text;
	size_t len = c->file->len, pos = 0, s, n = next_word(t, len, &pos, &s), n0 = c->n;
	bool ok = true;

	while (s < len) {
		if (n < 3 || t[s] != '-' || t[s + 1] != '-') {	/* python, train.py, a stray word */
			/* a launcher's own flags (torchrun --nproc_per_node 2 train.py) */
			if (n >= 3 && !memcmp(t + s + n - 3, ".py", 3))
				c->n = n0;
			n = next_word(t, len, &pos, &s);
			continue;
		}
		const char *eq = memchr(t + s, '=', n);
		size_t klen = eq ? (size_t)(eq - (t + s)) - 2 : n - 2, ks = s;
		const char *key = arena_strndup(c->arena, t + s + 2, klen), *val = "true", *canon;
		struct loc at = cfg_loc(c, ks, klen + 2);

		if (eq) {
			val = arena_strndup(c->arena, eq + 1, n - klen - 3);
			n = next_word(t, len, &pos, &s);
		} else if ((n = next_word(t, len, &pos, &s), s < len) && !(n >= 2 && t[s] == '-' && t[s + 1] == '-')) {
			val = arena_strndup(c->arena, t + s, n);
			n = next_word(t, len, &pos, &s);
		} else {
			/* train.py's flags are all typed (int, str, float, Param
			 * choices, bool_arg): argparse wants one value after each,
			 * a bool_arg one too ("expected one argument") */
			ok = diag_fail(c->diag, DIAG_TYPE_MISMATCH, at, "'--%s' needs a value and has none "
				       "after it: every train.py flag takes one (fastcore call_parse; "
				       "bool_arg flags: true or false)", key);
			continue;
		}
		enum cfg_kind kind = value_kind(val, &canon);

		cfg_add(c, key, kind, canon, at);
	}
	return ok;
}

/* ---- what no single flag says ---- */

static const char *flag_text(const struct cfg *c, const char *name, const char *dflt)
{
	const struct cfg_item *it = cfg_find(c, name);

	return it ? it->text : dflt;
}

static bool flag_bool(const struct cfg *c, const char *name, bool dflt)
{
	const struct cfg_item *it = cfg_find(c, name);

	if (!it)
		return dflt;
	return it->kind == CFG_BOOL || it->kind == CFG_INT ? it->i != 0 : dflt;
}

/* The setting from @flag, or train.py's default for it. */
static void set_from(struct imp_out *o, const struct cfg *c, const char *dst, const char *value,
		     const char *flag, const char *note)
{
	bool given = cfg_find(c, flag) != NULL;

	imp_set(o, dst, value, given ? flag : "train.py default", given ? note :
		arena_printf(o->arena, "--%s left out%s%s", flag, note ? "; " : "", note ? note : ""));
}

/* A flag whose value must be one of @allowed ("a|b"), or fail at it. */
static bool flag_in(struct cfg *c, const char *name, const char *allowed, const char *why)
{
	const struct cfg_item *it = cfg_find(c, name);
	const char *v = it ? it->text : NULL;

	for (const char *p = allowed; v && p;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (strlen(v) == n && !strncmp(p, v, n))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	char *known = arena_strdup(c->arena, allowed), *bar;

	while ((bar = strchr(known, '|')))
		*bar = ',';
	return !it || diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, it->loc,
				"'%s' = %s: %s (memc import knows %s)", name, v, why, known);
}

/* --precision: the policy and the dtype the 4-bit codes are stored in
 * (train.py's torch_dtype, which Linear4bit gets as quant_storage). */
static bool fq_precision(struct cfg *c, struct imp_out *o, const char **storage)
{
	const char *p = flag_text(c, "precision", "bf16");

	if (!flag_in(c, "precision", "bf16|fp32|fp16_autocast|bf16_autocast|bf16_buffers_autocast",
		     "not a train.py precision"))
		return false;
	*storage = !strcmp(p, "bf16") || !strcmp(p, "bf16_buffers_autocast") ? "bf16" : "fp32";
	set_from(o, c, "precision", !strcmp(p, "bf16") ? "bf16_true" : !strcmp(p, "fp32") ? "fp32" :
		 !strcmp(p, "fp16_autocast") ? "amp_fp16" : !strcmp(p, "bf16_autocast") ? "amp_bf16" :
		 "bf16_true", "precision", !strcmp(p, "bf16_buffers_autocast") ?
		 "bf16 parameters under bf16 autocast: fp32 buffers only" : NULL);
	return true;
}

/* The "blk_exp-ORIG-EXP" of a --llama_pro_path's last component, as
 * train.py reads it (`name.split("blk_exp-")[1].split("-")`, two ints). */
static bool pro_counts(const char *path, long long *orig, long long *exp)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')	/* pathlib drops a trailing slash */
		n--;
	const char *name = path + n;

	while (name > path && name[-1] != '/')
		name--;
	const char *at = strstr(name, "blk_exp-"), *end = path + n;

	if (!at || at >= end)
		return false;
	at += 8;
	const char *next = strstr(at, "blk_exp-"), *dash = memchr(at, '-', (size_t)(end - at));

	end = next && next < end ? next : end;
	if (!dash || dash >= end || memchr(dash + 1, '-', (size_t)(end - dash - 1)))
		return false;
	char *e1, *e2;

	*orig = strtoll(at, &e1, 10);
	*exp = strtoll(dash + 1, &e2, 10);
	return e1 == dash && e1 > at && e2 == end && e2 > dash + 1;
}

/* --train_type bnb_llama_pro / hqq_llama_pro (train.py fsdp_main): the
 * model scripts/block_expansion.py expanded, its new blocks at
 * split + (split + 1) n with split = orig / (exp - orig); replace_linear
 * skips them (skip_modules += new_layer_ids), so they keep their 16-bit
 * nn.Linear weights, and only their parameters require grad: train_layers.
 * The other Linears are quantised as under qlora, with no LoRA layers. */
static bool fq_llama_pro(struct cfg *c, struct imp_out *o, const char *storage, bool hqq)
{
	const struct cfg_item *tt = cfg_find(c, "train_type"), *lp = cfg_find(c, "llama_pro_path");
	const struct cfg_item *re = cfg_find(c, "reentrant_checkpointing");
	long long orig = 0, exp = 0;

	if (!lp)
		return diag_fail(c->diag, DIAG_MISSING_FIELD, tt->loc, "'--train_type %s' needs --llama_pro_path: "
				 "train.py reads the original and expanded layer counts from its name "
				 "(scripts/block_expansion.py's ..._blk_exp-32-35)", tt->text);
	if (!pro_counts(lp->text, &orig, &exp))
		return diag_fail(c->diag, DIAG_TYPE_MISMATCH, lp->loc, "'llama_pro_path' = %s: its last name "
				 "must end in blk_exp-ORIGINAL-EXPANDED, as scripts/block_expansion.py names it "
				 "(train.py splits it into two layer counts)", lp->text);
	if (orig < 1 || exp <= orig || exp - orig > orig)
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, lp->loc, "'llama_pro_path' expands %lld layers to "
				 "%lld: block_expansion.py adds 1 to %lld new layers (one per split of at least "
				 "one original layer)", orig, exp, orig > 0 ? orig : 1);
	if (re && re->kind == CFG_BOOL && re->i)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, re->loc, "'reentrant_checkpointing' = true "
				 "with %s: enable_input_require_grads() makes autograd run through the frozen "
				 "layers before the first new block, which memc's train_layers has keep nothing "
				 "(memc import knows false here)", tt->text);
	long long split = orig / (exp - orig);
	struct strbuf sb;

	strbuf_init(&sb);
	for (long long i = 0; i < exp - orig; i++)
		strbuf_addf(&sb, "%s%lld", i ? ", " : "[", split + (split + 1) * i);
	strbuf_addstr(&sb, "]");
	imp_set(o, "train_layers", arena_strdup(o->arena, sb.buf), "llama_pro_path",
		arena_printf(o->arena, "new_layer_ids, split = %lld // %lld = %lld; kept out of replace_linear, "
			     "16-bit and the only ones trained; the model has %lld layers (cfg.num_hidden_layers)",
			     orig, exp - orig, split, exp));
	strbuf_release(&sb);
	const char *p = flag_text(c, "precision", "bf16");

	/* hqq: W_q viewed as the compute dtype, as under hqq_lora */
	if (hqq)
		storage = !strcmp(p, "fp32") || !strcmp(p, "fp16_autocast") ? "fp16" : "bf16";
	set_from(o, c, "finetune", arena_printf(o->arena, hqq ? "qlora(quant = hqq4, quant_storage = %s, "
		 "quantizer = \"hqq\", save_input = true)" : "qlora(quant = nf4_dq, quant_storage = %s, "
		 "save_input = true)", storage), "train_type", hqq ? "the other Linears HQQLinear as under hqq_lora, "
		 "no LoRA layers" : "the other Linears Linear4bit as under qlora, no LoRA layers");
	return true;
}

/* --train_type and the --lora_* flags: one finetune call.  "all" is
 * train.py's list (k, q, v, up, down, gate), "default" PEFT's for Llama. */
static bool fq_finetune(struct cfg *c, struct imp_out *o, const char *storage)
{
	const char *tt = flag_text(c, "train_type", "qlora");

	if (!flag_in(c, "train_type", "full|lora|qlora|custom_lora|custom_qlora|bnb_dora|hqq_lora|hqq_dora|"
		     "bnb_llama_pro|hqq_llama_pro", "not a train.py train type"))
		return false;
	if (!flag_in(c, "lora_target_modules", "all|default", "not a train.py choice"))
		return false;
	/* "default" is None, which only PEFT's LoraConfig takes: the custom
	 * layers' loop (`value_key in args['lora_target_modules']`) raises */
	const struct cfg_item *tm = cfg_find(c, "lora_target_modules");

	bool pro = strstr(tt, "llama_pro") != NULL;	/* no LoRA layers: the lora_* flags are unread */

	if (tm && !strcmp(tm->text, "default") && !pro && (!strncmp(tt, "custom_", 7) || strstr(tt, "dora") ||
							   !strncmp(tt, "hqq_", 4)))
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, tm->loc, "'lora_target_modules' = default "
				 "is None, which train.py's %s layers cannot take (`value_key in None` raises "
				 "in fsdp_main); memc import knows all here", tt);
	/* save_model: a full model's FULL_STATE_DICT, offload_to_cpu and
	 * rank0_only; the LoRA types gather their adapter units only */
	if (!strcmp(tt, "full") && flag_bool(c, "save_model", false))
		imp_set(o, "save", "full_state_dict_cpu", "save_model", "FullStateDictConfig(offload_to_cpu=True)");
	/* transformers <= 4.39: each layer's rotary cos/sin buffers, in the
	 * default dtype when built: from_pretrained / from_config(torch_dtype=)
	 * on the full and lora paths, kept by --precision bf16 (no
	 * MixedPrecision); qlora's from_config(cfg) builds them fp32, and the
	 * autocast policies' buffer_dtype is fp32 */
	bool hqq = !strncmp(tt, "hqq_", 4), dora = strstr(tt, "dora") != NULL;
	bool rope16 = !strstr(tt, "qlora") && !dora && !hqq && !pro &&
		      !strcmp(flag_text(c, "precision", "bf16"), "bf16");

	imp_set(o, "rope_cache", rope16 ? "bf16" : "fp32", "train.py",
		"transformers <= 4.39: each layer's RotaryEmbedding buffers (4.40 and later: drop it)");
	if (!strcmp(tt, "full"))
		return true;
	if (pro)
		return fq_llama_pro(c, o, storage, hqq);
	/* written into the call as they are: train.py's lora_rank: int,
	 * lora_alpha: int, lora_dropout: float, in memc's ranges */
	const struct cfg_item *r = cfg_find(c, "lora_rank"), *a = cfg_find(c, "lora_alpha");
	const struct cfg_item *d = cfg_find(c, "lora_dropout");

	if ((r && !cfg_whole_at_least(c, r, 1)) || (a && !cfg_whole_at_least(c, a, 1)) ||
	    (d && !cfg_number_in(c, d, 0, 1, "a number from 0 to below 1")))
		return false;
	/* bnb_dora: Linear4bit bases under scripts/dora.py's BNBDORA; hqq_*:
	 * HQQLinear(BaseQuantizeConfig(nbits=4, group_size=64, quant_zero=True,
	 * quant_scale=True, offload_meta=True, view_as_float=True)), W_q viewed
	 * as the compute dtype, under scripts/lora.py's LORA or HQQDORA */
	bool q = strstr(tt, "qlora") != NULL || dora || hqq;
	const char *p = flag_text(c, "precision", "bf16");
	const char *quant = hqq ? arena_printf(o->arena, "quant = hqq4, quant_storage = %s, quantizer = \"hqq\"",
					       !strcmp(p, "fp32") || !strcmp(p, "fp16_autocast") ? "fp16" : "bf16") :
			    arena_printf(o->arena, "quant = nf4_dq, quant_storage = %s", storage);
	const char *targets = !strcmp(flag_text(c, "lora_target_modules", "all"), "default") ?
			      "[q, v]" : "[k, q, v, up, down, gate]";
	const char *call = arena_printf(o->arena, "%s(r = %s, alpha = %s, dropout = %s, targets = %s%s%s%s%s)",
					q ? "qlora" : "lora", flag_text(c, "lora_rank", "64"),
					flag_text(c, "lora_alpha", "16"), flag_text(c, "lora_dropout", "0.1"),
					targets, q ? ", " : "", q ? quant : "", q ? ", save_input = true" : "",
					dora ? ", use_dora = \"fsdp_qlora\"" : "");
	const char *why = hqq ? "HQQLinear(nbits=4, group_size=64, quant_zero, quant_scale, offload_meta, "
				"view_as_float) with HQQBackend.ATEN_BACKPROP, whose HQQMatmulNoCacheDeq saves its "
				"input: save_input" :
			  "Linear4bit(quant_type='nf4', quant_storage=torch_dtype), compress_statistics left True; "
			  "save_input: bitsandbytes before 0.43.2, as its README's >=0.43.0 and reentrant note had "
			  "it (drop it with 0.43.2 and later)";

	set_from(o, c, "finetune", call, "train_type", !q ? NULL : arena_printf(o->arena, "%s%s",
		 dora ? "scripts/dora.py's DoRA layers (DORALayer ignores the dropout) over " : "", why));
	return true;
}

/* What train.py does whatever the flags: FSDP1 with its fixed arguments,
 * checkpoint_wrapper per decoder layer, HF modules with SDPA (repeat_kv
 * before the kernel: `attention = sdpa`), and a loop
 * that keeps `output` until after optimizer.step(). */
static void fq_fixed(struct cfg *c, struct imp_out *o)
{
	bool offload = flag_bool(c, "use_cpu_offload", true);
	long long accum = cfg_find(c, "gradient_accumulation_steps") ?
			  cfg_find(c, "gradient_accumulation_steps")->i : 1;

	set_from(o, c, "checkpoint", flag_bool(c, "use_gradient_checkpointing", true) ? "full" : "none",
		 "use_gradient_checkpointing", NULL);
	imp_set(o, "attention", "sdpa", "train.py", "attn_impl = \"sdpa\"");
	imp_set(o, "kernels", "hf", "train.py", "AutoModelForCausalLM");
	imp_set(o, "loss", "upcast_output", "train.py",
		"transformers through 4.45 return logits.float() (4.46 and later: loss = standard)");
	imp_set(o, "keep_output", "true", "train.py", "output = None only after optimizer.step()");
	if (!imp_find(o, "fsdp"))
		set_from(o, c, "fsdp", "full_shard", "sharding_strategy", NULL);
	imp_set(o, "fsdp1.use_orig_params", "false", "train.py", "FSDP(use_orig_params=False)");
	set_from(o, c, "fsdp1.cpu_offload", offload ? "true" : "false", "use_cpu_offload", NULL);
	imp_set(o, "fsdp1.limit_all_gathers", "true", "train.py", "FSDP(limit_all_gathers=True)");
	imp_set(o, "fsdp1.backward_prefetch", "backward_pre", "train.py", "FSDP's default");
	set_from(o, c, "fsdp1.sync_module_states", flag_bool(c, "low_memory", true) ? "true" : "false",
		 "low_memory", NULL);
	/* without low_memory every rank builds the whole model on its GPU
	 * (`model.to(dtype, device=rank)`; QLoRA: load_and_quantize with
	 * neither to_cpu nor to_meta) and FSDP wraps it there */
	if (!flag_bool(c, "low_memory", true))
		imp_set(o, "load", "from_pretrained", "low_memory",
			"every rank loads the whole model onto its GPU before FSDP shards it");
	/* the benchmark's max_memory_reserved is read after
	 * reset_peak_memory_stats(), which keeps what the wrap left reserved:
	 * only the replay carries loading's cached blocks into the step */
	imp_set(o, "alloc.replay", "true", "train.py",
		"reset_peak_memory_stats() after the wrap: the reserved figure keeps loading's cache");
	/* train.py main: no_sync is forced on with CPU offload and accumulation,
	 * and off without accumulation */
	bool no_sync = accum > 1 && (offload || flag_bool(c, "no_sync", false));

	if (no_sync || cfg_find(c, "no_sync"))
		imp_set(o, "fsdp1.no_sync", no_sync ? "true" : "false", cfg_find(c, "no_sync") ? "no_sync" :
			"gradient_accumulation_steps", "train.py sets it with CPU offload and accumulation, "
			"clears it without accumulation");
}

/* fastcore's bool_arg flags that fq_fixed() and fq_finetune() read: true or false. */
static bool fq_bools(struct cfg *c)
{
	static const char *const names[] = { "use_gradient_checkpointing", "use_cpu_offload", "low_memory",
					     "no_sync", "save_model" };
	bool ok = true;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct cfg_item *it = cfg_find(c, names[i]);

		if (it && it->kind != CFG_BOOL && !(it->kind == CFG_INT && (it->i == 0 || it->i == 1)))
			ok = diag_fail(c->diag, DIAG_TYPE_MISMATCH, it->loc,
				       "'%s' is '%s'; memc import needs true or false here", it->path, it->text);
	}
	return ok;
}

bool fsdp_qlora_import(struct cfg *c, struct imp_out *o)
{
	const char *storage = "bf16";
	bool ok = map_apply(c, fq_rows, o) & fq_bools(c);

	if (!imp_find(o, "micro_batch"))
		set_from(o, c, "micro_batch", "1", "batch_size", NULL);
	if (!imp_find(o, "seq_len"))
		set_from(o, c, "seq_len", "512", "context_length", NULL);
	if (!imp_find(o, "optimizer"))
		set_from(o, c, "optimizer", "adamw", "optimizer", NULL);
	ok &= fq_precision(c, o, &storage);
	ok &= fq_finetune(c, o, storage);
	fq_fixed(c, o);
	return ok;
}
