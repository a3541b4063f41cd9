/* SPDX-License-Identifier: MIT */
/*
 * yaml_dialects.c - the YAML training configs memc import maps: Hugging
 * Face TrainingArguments (as TRL / alignment-handbook recipes write them),
 * accelerate's config and torchtune recipes.
 */
#include <math.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"

#include "analyzer/import/map_rows.h"
#define END       { NULL, NULL, MAP_IGNORE, NULL }

/* TrainingArguments.fsdp's spellings of a sharding strategy, mapped to
 * @a, @b, @c (without offload; the offload row names those with it) */
#define FSDP_WORDS(a, b, c) "full_shard=" a "|full_shard auto_wrap=" a "|shard_grad_op=" b \
	"|shard_grad_op auto_wrap=" b "|hybrid_shard=" c "|hybrid_shard auto_wrap=" c
#define FSDP_OFFLOAD(a, b, c) "full_shard offload=" a "|full_shard auto_wrap offload=" a \
	"|full_shard offload auto_wrap=" a "|shard_grad_op offload=" b "|shard_grad_op auto_wrap offload=" b \
	"|hybrid_shard offload=" c "|hybrid_shard auto_wrap offload=" c

static const struct map_row hf_args_rows[] = {
	C("per_device_train_batch_size", "micro_batch"), C("gradient_accumulation_steps", "grad_accum"),
	T("gradient_checkpointing", "checkpoint", "full"), IGN("gradient_checkpointing_kwargs.*"),
	T("bf16", "precision", "amp_bf16"), T("fp16", "precision", "amp_fp16"),
	E("optim", "optimizer", "adamw_torch=adamw|adamw_hf=adamw(impl = for_loop)|adamw_torch_fused=adamw(impl = fused)|"
	  "adamw_8bit=adamw_8bit|adamw_bnb_8bit=adamw_8bit|paged_adamw_8bit=paged_adamw_8bit|"
	  "paged_adamw_32bit=paged_adamw|adafactor=adafactor|sgd=sgd|lion_8bit=lion_8bit|"
	  "lion_32bit=lion_32bit|adamw_torch_foreach=adamw|adam=adam|adamw_bnb_32bit=paged_adamw"),
	C("max_seq_length", "seq_len"), C("max_length", "seq_len"), C("model_max_length", "seq_len"),
	/* TrainingArguments.fsdp: FSDPOption words; "offload" is CPUOffload of the parameters */
	E("fsdp", "fsdp", FSDP_WORDS("full_shard", "shard_grad_op", "hybrid_shard") "|"
	  FSDP_OFFLOAD("full_shard", "shard_grad_op", "hybrid_shard") "|=none"),
	E("fsdp", "offload.params", FSDP_WORDS("", "", "") "|" FSDP_OFFLOAD("cpu", "cpu", "cpu") "|="),
	B("fsdp_config.use_orig_params", "fsdp1.use_orig_params"),
	B("fsdp_config.limit_all_gathers", "fsdp1.limit_all_gathers"),
	B("fsdp_config.forward_prefetch", "fsdp1.forward_prefetch"),
	E("fsdp_config.backward_prefetch", "fsdp1.backward_prefetch",
	  "backward_pre=backward_pre|backward_post=backward_post|no_prefetch=none"),
	B("fsdp_config.sync_module_states", "fsdp1.sync_module_states"),
	T("fsdp_config.cpu_ram_efficient_loading", "load", "rank0_cpu"),
	T("fsdp_config.activation_checkpointing", "checkpoint", "full"),
	T("fsdp_config.offload_params", "offload.params", "cpu"),
	E("fsdp_config.state_dict_type", "save", "FULL_STATE_DICT=full_state_dict_cpu|"
	  "SHARDED_STATE_DICT=none|LOCAL_STATE_DICT=none"),
	MUST("fsdp_config.xla", "false"), MUST("fsdp_config.fsdp_version", "1"),
	IGN("fsdp_config.min_num_params"), IGN("fsdp_config.transformer_layer_cls_to_wrap"),
	IGN("fsdp_config.auto_wrap_policy"),
	/* TRL's DPOConfig / ORPOConfig / KTOConfig / GRPOConfig (TrainingArguments subclasses) */
	NOTE("beta", "a TRL preference/RL config: write rl { algorithm = dpo | orpo | cpo | simpo | kto }; "
	     "GRPO with beta = 0.0 loads no reference (rl { reference = none })"),
	C("num_generations", "rl.num_generations"), K("num_generations", "rl.algorithm", "grpo"),
	C("max_prompt_length", "rl.prompt_len"),
	NOTE("max_completion_length", "GRPO: seq_len = max_prompt_length + max_completion_length"),
	K("max_completion_length", "rl.algorithm", "grpo"),
	T("use_vllm", "rl.generation", "vllm_server"), K("use_vllm", "rl.algorithm", "grpo"),
	E("vllm_mode", "rl.generation", "server=vllm_server|colocate=vllm_colocate"),
	R("vllm_gpu_memory_utilization", "rl.vllm_gpu_memory_utilization"),
	T("precompute_ref_log_probs", "rl.reference", "precomputed"),
	NOTE("vllm_enable_sleep_mode", "vLLM's sleep mode is not modelled: its share stays in the device total"),
	NOTE("num_iterations", "old-policy log-probs: a no_grad forward, not modelled apart"),
	NOTE("padding_free", "memc models the concatenated, padded batch"),
	NOTE("generation_batch_size", "memc's generation batch is micro_batch x grad_accum"),
	NOTE("steps_per_generation", "memc's generation batch is micro_batch x grad_accum"),
	NOTE("model_init_kwargs.*", "how the model is loaded: torch_dtype sets the precision"),
	NOTE("ref_model_init_kwargs.*", "how the reference is loaded"),
	IGN("loss_type"), IGN("label_smoothing"), IGN("rpo_alpha"), IGN("simpo_gamma"), IGN("cpo_alpha"),
	IGN("desirable_weight"), IGN("undesirable_weight"), IGN("truncation_mode"),
	IGN("temperature"), IGN("top_p"), IGN("top_k"), IGN("epsilon"), IGN("epsilon_high"),
	IGN("scale_rewards"), IGN("reward_weights"), IGN("log_completions"), IGN("sync_ref_model"),
	IGN("ref_model_sync_steps"), IGN("ref_model_mixup_alpha"), IGN("mask_truncated_completions"),
	IGN("vllm_server_host"), IGN("vllm_server_port"), IGN("vllm_server_base_url"),
	IGN("dataset_num_proc"), IGN("max_prompt_length_ratio"),
	/* TRL's PPOConfig (trl/experimental/ppo/ppo_config.py) */
	K("reward_model_path", "rl.algorithm", "ppo"),
	NOTE("reward_model_path", "the reward model: import its config.json and write rl { reward_model = <model> } "
	     "(the value model is its architecture unless rl { value_model } says otherwise)"),
	NOTE("sft_model_path", "the policy: import its config.json"),
	C("local_rollout_forward_batch_size", "rl.rollout_batch"),
	NOTE("response_length", "PPO: seq_len = the prompt + response_length; rl { prompt_len } is the prompt"),
	NOTE("ds3_gather_for_generation", "memc gathers the whole model for generation under ZeRO-3"),
	IGN("num_ppo_epochs"), IGN("num_mini_batches"), IGN("total_episodes"), IGN("num_sample_generations"),
	IGN("stop_token"), IGN("stop_token_id"), IGN("missing_eos_penalty"), IGN("whiten_rewards"),
	IGN("kl_coef"), IGN("kl_estimator"), IGN("cliprange"), IGN("vf_coef"), IGN("cliprange_value"),
	IGN("gamma"), IGN("lam"), IGN("model_adapter_name"), IGN("ref_adapter_name"),
	E("attn_implementation", "attention", "flash_attention_2=flash|sdpa=flash|eager=eager"),
	T("use_liger_kernel", "loss", "chunked"),
	NOTE("deepspeed", "a DeepSpeed config: import it too"),
	NOTE("model_name_or_path", "the model: import its config.json"),
	NOTE("torch_dtype", "the dtype the model is loaded in; bf16 weights make it bf16_true"),
	IGN("output_dir"), IGN("overwrite_output_dir"), IGN("num_train_epochs"), IGN("max_steps"),
	IGN("learning_rate"), IGN("lr_scheduler_type"), IGN("lr_scheduler_kwargs.*"),
	IGN("warmup_ratio"), IGN("warmup_steps"), IGN("weight_decay"), IGN("logging_steps"),
	IGN("logging_strategy"), IGN("logging_first_step"), IGN("save_strategy"), IGN("save_steps"),
	IGN("save_total_limit"), IGN("save_only_model"), IGN("eval_strategy"),
	IGN("evaluation_strategy"), IGN("eval_steps"), IGN("per_device_eval_batch_size"), IGN("seed"),
	IGN("report_to"), IGN("run_name"), IGN("push_to_hub"), IGN("hub_model_id"),
	IGN("hub_strategy"), IGN("dataloader_num_workers"), IGN("remove_unused_columns"),
	IGN("do_train"), IGN("do_eval"), IGN("log_level"), IGN("max_grad_norm"), IGN("adam_beta1"),
	IGN("adam_beta2"), IGN("adam_epsilon"), IGN("tf32"), IGN("ddp_timeout"), IGN("packing"),
	IGN("dataset_text_field"), IGN("dataset_name"), IGN("dataset_mixer.*"), IGN("dataset_splits"),
	IGN("preprocessing_num_workers"), IGN("use_flash_attention_2"), IGN("model_revision"),
	IGN("trust_remote_code"), IGN("chat_template"), END
};

static const struct map_row accelerate_rows[] = {
	E("distributed_type", "", "DEEPSPEED=|FSDP=|MULTI_GPU=|NO="),
	E("mixed_precision", "precision", "bf16=amp_bf16|fp16=amp_fp16|no=fp32"),
	E("deepspeed_config.zero_stage", "zero", "0=0|1=1|2=2|3=3"),
	E("deepspeed_config.offload_optimizer_device", "offload.optimizer", "cpu=cpu|nvme=nvme|none=none"),
	E("deepspeed_config.offload_param_device", "offload.params", "cpu=cpu|nvme=nvme|none=none"),
	C("deepspeed_config.gradient_accumulation_steps", "grad_accum"),
	NOTE("deepspeed_config.deepspeed_config_file", "a DeepSpeed config: import it too"),
	IGN("deepspeed_config.*"),
	E("fsdp_config.fsdp_sharding_strategy", "fsdp", "FULL_SHARD=full_shard|SHARD_GRAD_OP=shard_grad_op|"
	  "NO_SHARD=no_shard|HYBRID_SHARD=hybrid_shard|1=full_shard|2=shard_grad_op|3=no_shard|"
	  "4=hybrid_shard"),
	T("fsdp_config.fsdp_offload_params", "offload.params", "cpu"),
	T("fsdp_config.fsdp_activation_checkpointing", "checkpoint", "full"),
	E("fsdp_config.fsdp_reshard_after_forward", "fsdp", "FULL_SHARD=full_shard|SHARD_GRAD_OP=shard_grad_op|"
	  "NO_SHARD=no_shard|HYBRID_SHARD=hybrid_shard|1=full_shard|2=shard_grad_op|3=no_shard|4=hybrid_shard"),
	B("fsdp_config.fsdp_use_orig_params", "fsdp1.use_orig_params"),
	B("fsdp_config.fsdp_forward_prefetch", "fsdp1.forward_prefetch"),
	B("fsdp_config.fsdp_sync_module_states", "fsdp1.sync_module_states"),
	E("fsdp_config.fsdp_backward_prefetch", "fsdp1.backward_prefetch", "BACKWARD_PRE=backward_pre|"
	  "BACKWARD_POST=backward_post|NO_PREFETCH=none|1=backward_pre|2=backward_post"),
	T("fsdp_config.fsdp_cpu_ram_efficient_loading", "load", "rank0_cpu"),
	MUST("fsdp_config.fsdp_version", "1|2"),
	MUST("fsdp_config.fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP"),
	IGN("fsdp_config.*"),
	NOTE("num_processes", "GPUs in all: cluster = N x GPU"), NOTE("num_machines", "nodes"),
	IGN("compute_environment"), IGN("debug"), IGN("machine_rank"), IGN("main_training_function"),
	IGN("rdzv_backend"), IGN("same_network"), IGN("tpu_env"), IGN("tpu_use_cluster"),
	IGN("tpu_use_sudo"), MUST("use_cpu", "false"), IGN("downcast_bf16"), IGN("gpu_ids"),
	IGN("main_process_ip"), IGN("main_process_port"), IGN("enable_cpu_affinity"),
	IGN("dynamo_config.*"), END
};

/* accelerate's FullyShardedDataParallelPlugin with fsdp_version 2
 * (utils/dataclasses.py __post_init__): reshard_after_forward is a bool;
 * backward_prefetch, use_orig_params and sync_module_states are dropped and
 * forward_prefetch and sharding_strategy are not read (env only in FSDP1). */
static const struct map_row accelerate_fsdp2_rows[] = {
	E("mixed_precision", "precision", "bf16=fsdp2_bf16|no=fp32"),
	E("fsdp_config.fsdp_reshard_after_forward", "fsdp2.reshard_after_forward", "true=true|false=false"),
	IGN("fsdp_config.fsdp_sharding_strategy"), IGN("fsdp_config.fsdp_backward_prefetch"),
	IGN("fsdp_config.fsdp_use_orig_params"), IGN("fsdp_config.fsdp_sync_module_states"),
	IGN("fsdp_config.fsdp_forward_prefetch"), END
};

/* torchtune's preference losses, old (modules.rlhf) and new (rlhf) paths */
#define TUNE_PREFERENCE(dpo, rso, simpo) "torchtune.rlhf.loss.DPOLoss=" dpo \
	"|torchtune.modules.rlhf.loss.DPOLoss=" dpo "|torchtune.rlhf.loss.RSOLoss=" rso \
	"|torchtune.modules.rlhf.loss.RSOLoss=" rso "|torchtune.rlhf.loss.SimPOLoss=" simpo \
	"|torchtune.modules.rlhf.loss.SimPOLoss=" simpo

static const struct map_row torchtune_rows[] = {
	C("batch_size", "micro_batch"), C("gradient_accumulation_steps", "grad_accum"),
	T("enable_activation_checkpointing", "checkpoint", "full"),
	T("enable_activation_offloading", "offload.activations", "cpu"),
	E("dtype", "precision", "bf16=bf16_true|fp32=fp32"),
	E("optimizer._component_", "optimizer", "torch.optim.AdamW=adamw|torch.optim.Adam=adam|"
	  "bitsandbytes.optim.PagedAdamW8bit=paged_adamw_8bit|bitsandbytes.optim.PagedAdamW=paged_adamw|"
	  "bitsandbytes.optim.AdamW8bit=adamw_8bit|torch.optim.SGD=sgd"),
	IGN("optimizer.fused"), IGN("optimizer.*"),	/* fused: torchtune_import */
	B("optimizer_in_bwd", "optimizer_in_backward"),
	T("fsdp_cpu_offload", "offload.params", "cpu"),
	/* the 2024 QLoRA distributed configs' block, which no recipe reads
	 * (lora_finetune_distributed @30b8519e8 reads fsdp_cpu_offload) */
	NOTE("fsdp.cpu_offload", "no recipe reads it (fsdp_cpu_offload is the key): nothing offloaded"),
	C("tokenizer.max_seq_len", "seq_len"), IGN("tokenizer.*"),
	E("loss._component_", "loss", "torchtune.modules.loss.CEWithChunkedOutputLoss=chunked_output|"
	  "torch.nn.CrossEntropyLoss=upcast_output|torchtune.modules.loss.LinearCrossEntropyLoss=chunked|"
	  TUNE_PREFERENCE("", "", "")),
	/* the DPO recipes (recipes/lora_dpo_single_device.py, full_dpo_distributed.py):
	 * the policy's log-probs from concatenated_forward, the reference's after
	 * them, the LoRA base under disable_adapter or a second model */
	E("loss._component_", "rl.algorithm", "torchtune.modules.loss.CEWithChunkedOutputLoss=|"
	  "torch.nn.CrossEntropyLoss=|torchtune.modules.loss.LinearCrossEntropyLoss=|"
	  TUNE_PREFERENCE("dpo", "dpo", "simpo")),
	NOTE("model._component_", "the model: import its config.json"),
	/* read by torchtune_lora below into finetune = lora(...) / qlora(...) */
	NOTE("model.lora_attn_modules", "read into finetune"), NOTE("model.apply_lora_to_mlp", "read into finetune"),
	NOTE("model.apply_lora_to_output", "read into finetune"), NOTE("model.lora_rank", "read into finetune"),
	NOTE("model.lora_alpha", "read into finetune"), NOTE("model.lora_dropout", "read into finetune"),
	NOTE("model.use_dora", "read into finetune"), NOTE("model.quantize_base", "read into finetune"),
	NOTE("model.*", "a model (or LoRA: finetune = lora(r, alpha, ...)) setting"),
	T("compile", "compile", "true"), IGN("seed"), IGN("shuffle"), IGN("epochs"), IGN("max_steps_per_epoch"),
	IGN("output_dir"), IGN("checkpointer.*"), IGN("dataset.*"), IGN("metric_logger.*"),
	IGN("log_every_n_steps"), IGN("log_peak_memory_stats"), IGN("device"), IGN("profiler.*"),
	IGN("lr_scheduler.*"), IGN("clip_grad_norm"), IGN("resume_from_checkpoint"),
	IGN("custom_sharded_layers"), IGN("save_adapter_weights_only"), IGN("log_level"),
	IGN("fsdp_reshard_after_forward"), IGN("loss.*"), END
};

/* torchtune's PPO recipe (recipes/ppo_full_finetune_single_device.py):
 * tokenizer.max_seq_len bounds the query, max_generated_tokens the
 * response; the backward batch is ppo_batch_size / gradient_accumulation_steps
 * (_setup_training_parameters: _ppo_backward_batch_size), the trajectory
 * is generated forward_batch_size rows at a time. */
static const struct map_row torchtune_ppo_rows[] = {
	E("loss._component_", "rl.algorithm", "torchtune.rlhf.loss.PPOLoss=ppo|torchtune.modules.rlhf.loss.PPOLoss=ppo"),
	C("tokenizer.max_seq_len", "rl.prompt_len"), C("forward_batch_size", "rl.rollout_batch"),
	NOTE("batch_size", "the trajectory: memc generates micro_batch x grad_accum rows"),
	NOTE("ppo_batch_size", "micro_batch = ppo_batch_size / gradient_accumulation_steps"),
	NOTE("max_generated_tokens", "seq_len = tokenizer.max_seq_len + max_generated_tokens"),
	NOTE("policy_model._component_", "the policy: import its config.json"),
	NOTE("reward_and_value_model._component_", "the reward and value models (classifier_model): "
	     "write rl { reward_model = <model> }"),
	IGN("reward_and_value_model.*"), IGN("policy_model.*"), IGN("ref_policy_checkpointer.*"),
	IGN("value_checkpointer.*"), IGN("reward_checkpointer.*"), IGN("enable_kv_cache"), IGN("num_steps"),
	IGN("ppo_epochs"), IGN("temperature"), IGN("top_k"), IGN("min_response_length"), IGN("penalise_no_eos"),
	IGN("reward_penalty"), IGN("stop_token_ids"), IGN("whiten_rewards"), IGN("gamma"), IGN("lmbda"),
	IGN("kl_coeff"), END
};

static const struct map_row *rows_cat(struct arena *arena, const struct map_row *a, const struct map_row *b);

static bool cfg_true(const struct cfg *c, const char *path)
{
	const struct cfg_item *it = cfg_find(c, path);

	return it && it->kind == CFG_BOOL && it->i;
}

/* torchtune's attention names (modules/attention.py) in memc's, or NULL */
static const char *tune_attn(const char *m, size_t n)
{
	static const char *const names[][2] = {
		{ "q_proj", "q" }, { "k_proj", "k" }, { "v_proj", "v" }, { "output_proj", "o" },
	};

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strlen(names[i][0]) == n && !strncmp(m, names[i][0], n))
			return names[i][1];
	return NULL;
}

/* model.lora_attn_modules + apply_lora_to_mlp / _output as memc targets;
 * NULL when a module has no memc name. */
static const char *tune_targets(const struct cfg *c)
{
	const struct cfg_item *m = cfg_find(c, "model.lora_attn_modules");
	const char *t = "", *p = m && m->kind == CFG_LIST && m->text ? m->text : "";

	while (*p) {
		size_t n = strcspn(p, ",");
		const char *name = tune_attn(p, n);

		if (!name)
			return NULL;
		t = arena_printf(c->arena, "%s%s%s", t, *t ? ", " : "", name);
		p += n + (p[n] == ',');
	}
	if (cfg_true(c, "model.apply_lora_to_mlp"))
		t = arena_printf(c->arena, "%s%sgate, up, down", t, *t ? ", " : "");
	if (cfg_true(c, "model.apply_lora_to_output"))
		t = arena_printf(c->arena, "%s%slm_head", t, *t ? ", " : "");
	return t;
}

/* The LoRA builders' arguments (torchtune/models/<family>/_model_builders.py
 * lora_<model>: lora_attn_modules, apply_lora_to_mlp, apply_lora_to_output,
 * lora_rank, lora_alpha, lora_dropout, use_dora, quantize_base) as one
 * finetune call.  qlora_<model> is lora_<model> with quantize_base=True,
 * whose NF4 is torchao's NF4Tensor (modules/peft/lora.py to_nf4), not
 * bitsandbytes': quantizer = "torchao".  A dropout only when the config
 * states one: the builders' default is 0.0 since v0.3 (v0.1/v0.2's
 * lora_llama2_7b and lora_llama3_8b use 0.05), which the YAML cannot tell. */
/* A LoRA builder whose config leaves out what the finetune call needs, or
 * names what memc has no name for, is an error: read as a full fine-tune
 * it would be a wrong number with exit status 0. */
static bool torchtune_lora_ok(struct cfg *c, const struct cfg_item *r, const struct cfg_item *comp,
			      const char *t)
{
	const struct cfg_item *a = cfg_find(c, "model.lora_alpha"), *d = cfg_find(c, "model.lora_dropout");
	const struct cfg_item *m = cfg_find(c, "model.lora_attn_modules");

	if (!r)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, comp->loc, "'%s' builds LoRA adapters, and "
				 "the config gives no model.lora_rank: write finetune = lora(...) by hand",
				 comp->text);
	if (!cfg_whole_at_least(c, r, 1) || (a && !cfg_number_in(c, a, nextafter(0, 1), INFINITY,
								  "a number above 0")) ||
	    (d && !cfg_number_in(c, d, 0, 1, "a number from 0 to below 1")))
		return false;
	if (!t)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, m->loc, "'model.lora_attn_modules' is [%s]; "
				 "memc import knows q_proj, k_proj, v_proj and output_proj", m->text);
	if (!*t)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, m ? m->loc : r->loc, "no module gets an "
				 "adapter (lora_attn_modules, apply_lora_to_mlp, apply_lora_to_output): nothing trains");
	return true;
}

static bool torchtune_lora(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *r = cfg_find(c, "model.lora_rank"), *a = cfg_find(c, "model.lora_alpha");
	const struct cfg_item *d = cfg_find(c, "model.lora_dropout"), *comp = cfg_find(c, "model._component_");
	const char *t = tune_targets(c), *v;
	bool q = cfg_true(c, "model.quantize_base") ||
		 (comp && comp->text && (strstr(comp->text, ".qlora_") || strstr(comp->text, ".qdora_")));
	bool builder = comp && comp->text && (strstr(comp->text, "lora_") || strstr(comp->text, "dora_"));

	if (!r && !builder)
		return true;
	if (!torchtune_lora_ok(c, r, comp, t))
		return false;
	v = arena_printf(c->arena, "%s(r = %lld%s%s, targets = [%s]", q ? "qlora" : "lora", r->i,
			 a ? ", alpha = " : "", a ? a->text : "", t);
	if (d && d->r > 0)
		v = arena_printf(c->arena, "%s, dropout = %s", v, d->text);
	if (cfg_true(c, "model.use_dora") || (comp && comp->text && strstr(comp->text, "dora_")))
		v = arena_printf(c->arena, "%s, use_dora = true", v);
	v = arena_printf(c->arena, "%s%s)", v, q ? ", quantizer = \"torchao\"" : "");
	imp_set(o, "finetune", v, "model.lora_rank", "model.lora_attn_modules, apply_lora_to_mlp, ...");
	return true;
}

/* What the YAML cannot say but its recipe and release decide, where a
 * user reads it: full_finetune_* (and lora_finetune_distributed) call
 * training.compile_loss(self._loss_fn) and drop what it returns, so a plain
 * CrossEntropyLoss runs eager (the recipes @1814feb17); the *_distributed
 * recipes shard with FSDP, FSDP1 before #1287 (full, 2024-08-11) and #1517
 * (LoRA, 2024-09-10); v0.1 pinned torchao 0.1 and v0.1/v0.2's
 * lora_llama2_7b / lora_llama3_8b default lora_dropout to 0.05; until
 * `del logits` (cb3ed29d7 LoRA, 8a98fbaa3 full) the loop kept the fp32
 * shifted logits through backward and the step. */
static void torchtune_recipe_notes(struct cfg *c, struct imp_out *o, bool lora)
{
	const struct imp_setting *loss = imp_find(o, "loss"), *ft = imp_find(o, "finetune");

	if (cfg_true(c, "compile") && loss && !strcmp(loss->value, "upcast_output")) {
		if (!lora)
			imp_set(o, "compile_components", "[\"model\"]", "compile",
				"full_finetune_* drops what training.compile_loss returns: the plain loss runs eager");
		else
			imp_set(o, NULL, NULL, "compile", "lora_finetune_distributed drops what "
				"training.compile_loss returns: write compile_components = [\"model\"] for it");
	}
	imp_set(o, NULL, NULL, "recipe", "a *_distributed recipe (tune run --nproc_per_node N): "
		"fsdp = full_shard and alloc { replay = true }; before torchtune #1287 (full, 2024-08-11) / #1517 (LoRA, "
		"2024-09-10) its FSDP1 also fsdp1 { } and load = rank0_cpu (docs/writing-rows.md)");
	if (ft && strstr(ft->value, "qlora("))
		imp_set(o, NULL, NULL, "release", "a config of torchtune v0.1 (2024-04, torchao 0.1): "
			"quantizer = \"torchao-0.1\"");
	if (loss && !strcmp(loss->value, "upcast_output"))
		imp_set(o, NULL, NULL, "release", "a recipe of torchtune before cb3ed29d7 (LoRA, 2024-06-04) / "
			"8a98fbaa3 (full, 2024-07-28) keeps logits[..., :-1, :].contiguous() through backward: "
			"keep_output = true");
	if (ft && !cfg_find(c, "model.lora_dropout"))
		imp_set(o, NULL, NULL, "release", "a config of torchtune v0.1 or v0.2 (before 2024-09): "
			"lora_llama2_7b and lora_llama3_8b default to dropout = 0.05");
}

/* The llama2 and llama3 component builders (until 23896c30d, 2025-01-27)
 * build one layer and TransformerDecoder deep-copies it, so every layer
 * keeps its RotaryPositionalEmbeddings buffers; the builder's max_seq_len
 * and the recipe's dtype are not in the YAML; the llama3_1 and llama3_2
 * builders pass one module to every layer. */
static void torchtune_rope_note(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *comp = cfg_find(c, "model._component_");
	const char *t = comp ? comp->text : NULL;

	if (t && (!strncmp(t, "torchtune.models.llama2.", 24) || !strncmp(t, "torchtune.models.llama3.", 24)))
		imp_set(o, NULL, NULL, "model._component_", "torchtune's llama2/llama3 builders (until 23896c30d, "
			"2025-01-27) deep-copy one layer with its rotary cache: torchtune { rope_cache = fp32, "
			"max_seq_len = 4096 } (llama3 from 41341fd1d, 2024-04-18: 8192; bf16 under an FSDP1 "
			"*_distributed recipe's model.to(torch.bfloat16))");
	else if (t && (!strncmp(t, "torchtune.models.llama3_1.", 26) || !strncmp(t, "torchtune.models.llama3_2.", 26)))
		imp_set(o, NULL, NULL, "model._component_", "torchtune's llama3_1/llama3_2 builders pass one "
			"rotary cache to every layer: torchtune { rope_cache = fp32, max_seq_len = 131072, "
			"shared_rope = true } (the 405B: 8192)");
}

/* optimizer.fused: torch.optim.AdamW(fused=True) (torch/optim/adamw.py
 * _fused_adamw), what the llama3_2 configs ask for. */
static bool torchtune_import(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *comp = cfg_find(c, "model._component_");
	struct imp_setting *opt;

	if (!map_apply(c, torchtune_rows, o))
		return false;
	if (!torchtune_lora(c, o))
		return false;
	torchtune_recipe_notes(c, o, cfg_find(c, "model.lora_rank") ||
			       (comp && comp->text && strstr(comp->text, "lora_")));
	torchtune_rope_note(c, o);
	opt = imp_find(o, "optimizer");
	if (!cfg_true(c, "optimizer.fused"))
		return true;
	if (opt && !strcmp(opt->value, "adamw")) {
		opt->value = "adamw(impl = fused)";
		opt->src = "optimizer._component_, optimizer.fused";
	} else {
		imp_set(o, NULL, NULL, "optimizer.fused", "optimizer.fused = true: memc's impl = fused is AdamW's");
	}
	return true;
}

static long long cfg_int(const struct cfg *c, const char *path, long long dflt)
{
	const struct cfg_item *it = cfg_find(c, path);

	return it && it->kind == CFG_INT ? it->i : dflt;
}

/* The two keys the recipe derives from others. */
static bool torchtune_ppo(struct cfg *c, struct imp_out *o)
{
	long long ppo = cfg_int(c, "ppo_batch_size", 0), ga = cfg_int(c, "gradient_accumulation_steps", 1);
	long long prompt = cfg_int(c, "tokenizer.max_seq_len", 0), gen = cfg_int(c, "max_generated_tokens", 0);

	if (!map_apply(c, rows_cat(c->arena, torchtune_ppo_rows, torchtune_rows), o))
		return false;
	if (ppo > 0 && ga > 0 && ppo % ga == 0)
		imp_set(o, "micro_batch", arena_printf(c->arena, "%lld", ppo / ga), "ppo_batch_size",
			"ppo_batch_size / gradient_accumulation_steps");
	if (prompt > 0 && gen > 0 && prompt <= (1LL << 40) && gen <= (1LL << 40))
		imp_set(o, "seq_len", arena_printf(c->arena, "%lld", prompt + gen), "max_generated_tokens",
			"tokenizer.max_seq_len + max_generated_tokens");
	return true;
}

static bool any_component(const struct cfg *c)
{
	for (size_t i = 0; i < c->n; i++) {
		size_t n = strlen(c->items[i].path);

		if (n >= 11 && !strcmp(c->items[i].path + n - 11, "_component_"))
			return true;
	}
	return false;
}

static bool imp_has(const struct imp_out *o, const char *dst)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->set[i].dst && o->set[i].value && !strcmp(o->set[i].dst, dst))
			return true;
	return false;
}

/* @a's rows, then @b's: the first match wins. */
static const struct map_row *rows_cat(struct arena *arena, const struct map_row *a, const struct map_row *b)
{
	size_t na = 0, nb = 0;

	while (a[na].src)
		na++;
	while (b[nb].src)
		nb++;
	struct map_row *r = arena_alloc(arena, arena_array_size(sizeof *r, na + nb + 1));

	memcpy(r, a, na * sizeof *r);
	memcpy(r + na, b, (nb + 1) * sizeof *r);
	return r;
}

/* accelerate's defaults where they are not torch's: FULL_SHARD, and in
 * FSDP1 no backward prefetch; in FSDP2 reshard_after_forward = True and
 * set_mixed_precision's MixedPrecisionPolicy(param_dtype = reduce_dtype =
 * the mixed precision) over the model fsdp2_prepare_model upcasts to fp32. */
static bool accelerate_import(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *dt = cfg_find(c, "distributed_type"), *v = cfg_find(c, "fsdp_config.fsdp_version");
	const struct cfg_item *mp = cfg_find(c, "mixed_precision");
	bool fsdp = dt && dt->text && !strcmp(dt->text, "FSDP"), v2 = v && v->kind == CFG_INT && v->i == 2;
	bool ok = map_apply(c, fsdp && v2 ? rows_cat(c->arena, accelerate_fsdp2_rows, accelerate_rows) :
			    accelerate_rows, o);

	if (!fsdp || !ok)
		return ok;
	if (v2 && mp && mp->text && !strcmp(mp->text, "bf16")) {
		imp_set(o, "fsdp2.param_dtype", "bf16", mp->path, "accelerate's MixedPrecisionPolicy");
		imp_set(o, "fsdp2.reduce_dtype", "bf16", mp->path, "accelerate's MixedPrecisionPolicy");
	}
	if (v2 && !imp_has(o, "fsdp2.reshard_after_forward"))
		imp_set(o, "fsdp2.reshard_after_forward", "true", "fsdp_config.fsdp_version", "accelerate's default");
	if (!v2 && !imp_has(o, "fsdp"))
		imp_set(o, "fsdp", "full_shard", "distributed_type", "accelerate's default FULL_SHARD");
	if (!v2 && !imp_has(o, "fsdp1.backward_prefetch"))
		imp_set(o, "fsdp1.backward_prefetch", "none", "fsdp_config.fsdp_backward_prefetch",
			"accelerate's default NO_PREFETCH");
	return true;
}

bool yaml_import(struct cfg *c, struct imp_out *o)
{
	if (cfg_find(c, "distributed_type") || cfg_find(c, "compute_environment"))
		return accelerate_import(c, o);
	if (cfg_find(c, "policy_model._component_"))
		return torchtune_ppo(c, o);
	if (any_component(c))
		return torchtune_import(c, o);
	if (cfg_find(c, "checkpoint_dir") && (cfg_find(c, "train.micro_batch_size") || cfg_find(c, "train.global_batch_size")))
		return litgpt_import(c, o);
	if (!map_apply(c, hf_args_rows, o))
		return false;
	/* use_vllm means TRL's default vllm_mode = "server"; a vllm_mode
	 * written before it in the file still decides */
	const struct cfg_item *use = cfg_find(c, "use_vllm"), *mode = cfg_find(c, "vllm_mode");

	if (use && use->kind == CFG_BOOL && use->i && mode)
		return map_item(c, mode, map_find(hf_args_rows, "vllm_mode"), o);
	return true;
}
