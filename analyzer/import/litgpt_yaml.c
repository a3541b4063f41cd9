/* SPDX-License-Identifier: MIT */
/*
 * litgpt_yaml.c - LitGPT's `litgpt finetune` configs (config_hub/finetune/
 * <model>/{lora,qlora,full}.yaml, jsonargparse over the scripts' arguments)
 * into train settings.
 *
 * The script is known from the keys: lora_* arguments are finetune/lora.py's,
 * whose GPT.forward(lm_head_chunk_size=128) keeps every fp32 logits chunk
 * (loss = chunked_kept); without them finetune/full.py's chunked_cross_entropy
 * over the whole logits (chunked_ce). Both loops run under Lightning Fabric:
 * more than one device is FSDPStrategy(auto_wrap_policy={Block},
 * activation_checkpointing_policy={Block}, limit_all_gathers=True), whose
 * use_orig_params defaults to True, accumulating under no_backward_sync
 * (litgpt/finetune/lora.py and full.py @00af8b0d).
 */
#include <math.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "analyzer/import/map_rows.h"
#include "lang/arena.h"
#include "lang/diag.h"

static const struct map_row litgpt_rows[] = {
	E("precision", "precision", "bf16-true=bf16_true|bf16-mixed=amp_bf16|16-mixed=amp_fp16|32-true=fp32"),
	C("train.micro_batch_size", "micro_batch"), C("train.max_seq_length", "seq_len"),
	NOTE("checkpoint_dir", "the model: models/litgpt's LitGPT instance of this checkpoint"),
	IGN("quantize"), IGN("devices"), IGN("num_nodes"), IGN("train.global_batch_size"),	/* litgpt_import */
	IGN("lora_r"), IGN("lora_alpha"), IGN("lora_dropout"), IGN("lora_query"), IGN("lora_key"),
	IGN("lora_value"), IGN("lora_projection"), IGN("lora_mlp"), IGN("lora_head"),
	IGN("optimizer.class_path"), IGN("optimizer"), IGN("optimizer.init_args.*"),
	MUST("train.tie_embeddings", "null|false"),
	IGN("out_dir"), IGN("data.*"), IGN("train.save_interval"), IGN("train.log_interval"),
	IGN("train.lr_warmup_steps"), IGN("train.lr_warmup_fraction"), IGN("train.epochs"),
	IGN("train.max_tokens"), IGN("train.max_steps"), IGN("train.max_norm"), IGN("train.min_lr"),
	IGN("eval.*"), IGN("logger_name"), IGN("seed"), IGN("access_token"), IGN("resume"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

/* The stdlib's LitGPT instances (models/litgpt.mem) by checkpoint name, and
 * whether their MLP is GptNeoxMLP (fc1, fc2) rather than LLaMAMLP/GemmaMLP. */
static const struct {
	const char *ckpt, *model;
	bool neox;
} litgpt_models[] = {
	{ "microsoft/phi-1_5", "litgpt_phi_1_5", true }, { "microsoft/phi-2", "litgpt_phi2", true },
	{ "stabilityai/stablelm-base-alpha-3b", "litgpt_stablelm_3b", true },
	{ "tiiuae/falcon-7b", "litgpt_falcon_7b", true },
	{ "meta-llama/Llama-2-7b-hf", "litgpt_llama2_7b", false },
	{ "meta-llama/Llama-2-13b-hf", "litgpt_llama2_13b", false },
	{ "meta-llama/Meta-Llama-3-8B", "litgpt_llama3_8b", false },
	{ "meta-llama/Meta-Llama-3.1-8B", "litgpt_llama3_8b", false },
	{ "meta-llama/Llama-3.2-1B", "litgpt_llama3_2_1b", false },
	{ "meta-llama/Llama-3.2-3B", "litgpt_llama3_2_3b", false },
	{ "mistralai/Mistral-7B-v0.1", "litgpt_mistral_7b", false },
	{ "unsloth/Mistral-7B-v0.2", "litgpt_mistral_7b", false },
	{ "microsoft/Phi-3-mini-4k-instruct", "litgpt_phi3_mini", false },
	{ "google/gemma-2b", "litgpt_gemma_2b", false }, { "google/gemma-7b", "litgpt_gemma_7b", false },
	{ "google/gemma-2-2b", "litgpt_gemma2_2b", false }, { "google/gemma-2-9b", "litgpt_gemma2_9b", false },
	{ "TinyLlama/", "litgpt_tinyllama_1_1b", false },
};

static int litgpt_model(const struct cfg *c)
{
	const struct cfg_item *dir = cfg_find(c, "checkpoint_dir");

	for (size_t i = 0; dir && dir->text && i < sizeof litgpt_models / sizeof *litgpt_models; i++)
		if (strstr(dir->text, litgpt_models[i].ckpt))
			return (int)i;
	return -1;
}

static bool cfg_on(const struct cfg *c, const char *path)
{
	const struct cfg_item *it = cfg_find(c, path);

	return it && it->kind == CFG_BOOL && it->i;
}

static long long cfg_count(const struct cfg *c, const char *path, long long dflt)
{
	const struct cfg_item *it = cfg_find(c, path);

	return it && it->kind == CFG_INT ? it->i : dflt;
}

/* devices, num_nodes and micro_batch_size, which the layout multiplies:
 * counts of 1 or more, and devices a number (LitGPT's parse_devices reads
 * "auto" and -1 as every GPU of the machine, which the YAML does not say). */
static bool litgpt_counts(struct cfg *c)
{
	static const char *const keys[] = { "devices", "num_nodes", "train.micro_batch_size",
					    "train.global_batch_size" };
	bool ok = true;

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const struct cfg_item *it = cfg_find(c, keys[i]);

		if (it && i == 0 && (it->kind == CFG_STR || (it->kind == CFG_INT && it->i == -1)))
			ok = diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, it->loc, "'devices' = %s: every GPU of "
				       "the machine (LitGPT's parse_devices); memc import needs the count",
				       it->text) && ok;
		else if (it && it->kind != CFG_NULL && !cfg_whole_at_least(c, it, 1))
			ok = false;
	}
	return ok;
}

/* lora_query ... lora_head as memc targets; lora_mlp needs the model's MLP. */
static const char *litgpt_targets(struct cfg *c, int model)
{
	static const char *const keys[][2] = {
		{ "lora_query", "q" }, { "lora_key", "k" }, { "lora_value", "v" }, { "lora_projection", "o" },
	};
	const char *t = "";

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (cfg_on(c, keys[i][0]))
			t = arena_printf(c->arena, "%s%s%s", t, *t ? ", " : "", keys[i][1]);
	if (cfg_on(c, "lora_mlp") && model < 0)
		return NULL;
	if (cfg_on(c, "lora_mlp"))
		t = arena_printf(c->arena, "%s%s%s", t, *t ? ", " : "",
				 litgpt_models[model].neox ? "fc1, fc2" : "gate, up, down");
	if (cfg_on(c, "lora_head"))
		t = arena_printf(c->arena, "%s%slm_head", t, *t ? ", " : "");
	return t;
}

/* quantize = "bnb.nf4[-dq]": Lightning's BitsandbytesPrecision, which
 * quantises every Linear the head included (no ignore_modules), through
 * _Linear4bit.quantize's fp16 cast, with the bitsandbytes 0.42.0 LitGPT pins
 * (MatMul4Bit keeps its input: save_input); the optimizer is then
 * instantiate_bnb_optimizer's bnb.optim.PagedAdamW. */
static bool litgpt_finetune(struct cfg *c, struct imp_out *o, bool lora, const char *quant)
{
	const struct cfg_item *r = cfg_find(c, "lora_r"), *a = cfg_find(c, "lora_alpha");
	const struct cfg_item *d = cfg_find(c, "lora_dropout");
	int model = litgpt_model(c);
	const char *t = litgpt_targets(c, model), *v;

	if (!lora)
		return true;
	/* LitGPT's setup(lora_r: int, lora_alpha: int, lora_dropout: float);
	 * LoRALinear takes the dropout only above 0 (nn.Dropout refuses p
	 * outside [0, 1]; memc's dropout is below 1) */
	if (!cfg_whole_at_least(c, r, 1) || (a && !cfg_number_in(c, a, nextafter(0, 1), INFINITY, "a number above 0")) ||
	    (d && !cfg_number_in(c, d, 0, 1, "a number from 0 to below 1")))
		return false;
	if (!t)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, cfg_find(c, "lora_mlp")->loc,
				 "'lora_mlp' names the model's MLP, and memc import does not know the "
				 "checkpoint's; write finetune = lora(...) by hand");
	if (!*t)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, r->loc, "no lora_query, lora_key, "
				 "lora_value, lora_projection, lora_mlp or lora_head is true: nothing trains");
	v = arena_printf(c->arena, "%s(r = %lld", quant ? "qlora" : "lora", r->i);
	if (a)
		v = arena_printf(c->arena, "%s, alpha = %s", v, a->text);
	v = arena_printf(c->arena, "%s, targets = [%s]", v, t);
	if (d && d->r > 0)
		v = arena_printf(c->arena, "%s, dropout = %s", v, d->text);
	if (quant)
		v = arena_printf(c->arena, "%s, quant = %s, skip_modules = [], dequant_dtype = fp16, "
				 "save_input = true", v, quant);
	imp_set(o, "finetune", arena_printf(c->arena, "%s)", v), "lora_r", quant ?
		"quantize: Lightning's BitsandbytesPrecision quantises the head too, via fp16; "
		"bitsandbytes 0.42.0 keeps the 4-bit matmuls' inputs" : "lora_* of finetune/lora.py");
	return true;
}

static bool litgpt_optimizer(struct cfg *c, struct imp_out *o, bool bnb)
{
	const struct cfg_item *cls = cfg_find(c, "optimizer.class_path"), *s = cfg_find(c, "optimizer");
	const char *name = cls && cls->text ? cls->text : s && s->text ? s->text : "AdamW";
	const struct cfg_item *at = cls ? cls : s;

	if (!strstr(name, "AdamW"))
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, at->loc, "'%s' = %s: memc import "
				 "knows torch.optim.AdamW here", at->path, name);
	imp_set(o, "optimizer", bnb ? "paged_adamw" : "adamw", at ? at->path : "optimizer",
		bnb ? "instantiate_bnb_optimizer: bnb.optim.PagedAdamW under quantize" :
		at ? NULL : "LitGPT's default AdamW");
	return true;
}

/* grad_accum is TrainArgs.gradient_accumulation_iters: global_batch_size
 * // devices // micro_batch_size; more than one device is Fabric's FSDP. */
static bool litgpt_layout(struct cfg *c, struct imp_out *o)
{
	long long dev, per;
	long long mb = cfg_count(c, "train.micro_batch_size", 1), gb = cfg_count(c, "train.global_batch_size", 0);
	const struct cfg_item *g = cfg_find(c, "train.global_batch_size");

	if (!litgpt_counts(c))
		return false;
	if (__builtin_mul_overflow(cfg_count(c, "devices", 1), cfg_count(c, "num_nodes", 1), &dev) ||
	    __builtin_mul_overflow(dev, mb, &per))
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, cfg_find(c, "devices") ? cfg_find(c, "devices")->loc :
				 cfg_find(c, "num_nodes")->loc, "devices x num_nodes x train.micro_batch_size "
				 "is more than 2^63 - 1");
	if (g && g->kind == CFG_INT && (gb < per || gb % per))
		return diag_fail(c->diag, DIAG_NOT_DIVISIBLE, g->loc, "'train.global_batch_size' = %lld is "
				 "not a whole number of micro-batches of %lld on %lld devices", gb, mb, dev);
	if (g && g->kind == CFG_INT)
		imp_set(o, "grad_accum", arena_printf(c->arena, "%lld", gb / dev / mb), g->path,
			"global_batch_size // devices // micro_batch_size");
	imp_set(o, NULL, NULL, "devices", arena_printf(c->arena, "devices x num_nodes = %lld: "
		"cluster = %lld x GPU", dev, dev));
	if (dev == 1)
		return true;
	imp_set(o, "fsdp", "full_shard", "devices", "Fabric's FSDPStrategy (auto_wrap_policy={Block})");
	imp_set(o, "checkpoint", "full", "devices", "activation_checkpointing_policy={Block}");
	imp_set(o, "fsdp1.use_orig_params", "true", "devices", "Fabric's default");
	imp_set(o, "fsdp1.limit_all_gathers", "true", "devices", NULL);
	if (g && gb / dev / mb > 1)
		imp_set(o, "fsdp1.no_sync", "true", "train.global_batch_size",
			"fabric.no_backward_sync while accumulating");
	return true;
}

bool litgpt_import(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *q = cfg_find(c, "quantize");
	const char *quant = NULL;
	bool lora = cfg_find(c, "lora_r") != NULL, ok = map_apply(c, litgpt_rows, o);
	int model = litgpt_model(c);

	if (q && q->text && q->kind == CFG_STR && strcmp(q->text, "null")) {
		if (!strcmp(q->text, "bnb.nf4") || !strcmp(q->text, "bnb.nf4-dq"))
			quant = strcmp(q->text, "bnb.nf4") ? "nf4_dq" : "nf4";
		else
			ok = diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, q->loc, "'quantize' = %s: memc "
				       "import knows bnb.nf4 and bnb.nf4-dq", q->text);
	}
	if (model >= 0)
		imp_set(o, NULL, NULL, "checkpoint_dir", arena_printf(c->arena, "model = %s "
			"(import \"models/litgpt\")", litgpt_models[model].model));
	imp_set(o, "loss", lora ? "chunked_kept" : "chunked_ce", lora ? "finetune/lora.py" : "finetune/full.py",
		lora ? "GPT.forward(lm_head_chunk_size=128): the fp32 chunks kept" :
		"chunked_cross_entropy over the whole fp32 logits");
	imp_set(o, NULL, NULL, "train.max_seq_length", "LitGPT pads each batch to its longest sample, "
		"truncated to max_seq_length: seq_len is the longest batch; where batches are shorter "
		"than it, data { padding = longest, min_seq_len = N } (docs/writing-rows.md)");
	return ok & litgpt_optimizer(c, o, quant != NULL) & litgpt_finetune(c, o, lora, quant) &
	       litgpt_layout(c, o);
}
