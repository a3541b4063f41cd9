/* SPDX-License-Identifier: MIT */
/*
 * build_rl.c - a preference or RL job (train.rl): the policy is the job's
 * model; the chosen and rejected halves of DPO-style losses, the frozen
 * reference model, GRPO's generation and a colocated vLLM engine are what
 * this file adds to the build. docs/memory-model.md §"Preference and RL
 * jobs" gives each rule with the TRL code it comes from.
 */
#include <stdarg.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/eval.h"
#include "lang/num.h"

static const char *rl_sym(const struct bld *b, const char *key, struct loc *at)
{
	struct value v;

	if (!check_job_field(b->cj, key, &v))
		return NULL;
	if (at)
		*at = v.origin.file ? v.origin : v.loc;
	return v.kind == VAL_SYMBOL || v.kind == VAL_STRING ? v.str : v.kind == VAL_NONE ? "none" : NULL;
}

static bool rl_u64(const struct bld *b, const char *key, uint64_t *out, struct loc *at)
{
	struct value v;

	if (!check_job_field(b->cj, key, &v) || v.kind != VAL_NUM || !num_to_u64(v.num, out))
		return false;
	if (at)
		*at = v.origin.file ? v.origin : v.loc;
	return true;
}

__attribute__((format(printf, 4, 5)))
static void rl_error(struct bld *b, enum diag_id id, struct loc at, const char *fmt, ...)
{
	va_list ap;

	b->failed = true;
	if (b->quiet || b->reported)
		return;
	b->reported = true;
	va_start(ap, fmt);
	diag_vemit(eval_diag(b->ev), id, at.file ? at : b->cj->decl->name_loc, fmt, ap);
	va_end(ap);
}

static struct loc key_loc_of(const struct bld *b, const char *key)
{
	struct value v;

	if (!check_job_field(b->cj, key, &v))
		return NO_LOC;
	return v.origin.file ? v.origin : v.loc;
}

static enum bld_rl_algo algo_of(const char *s)
{
	static const char *const names[] = { "dpo", "orpo", "cpo", "simpo", "kto", "grpo", "ppo" };

	for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i]))
			return (enum bld_rl_algo)(i + 1);
	return BLD_RL_NONE;
}

/* ORPO, CPO and SimPO have no reference model (their trainers never make
 * one); TRL's DPO and KTO make a copy unless the policy is a PEFT model,
 * whose base with the adapters disabled is the reference; GRPO loads
 * none at its default beta = 0.0. */
static const char *default_reference(const struct bld *b)
{
	switch (b->rl) {
	case BLD_RL_DPO:
	case BLD_RL_KTO:
	case BLD_RL_PPO:
		return b->lora || b->qlora ? "adapter_disabled" : "copy";
	default:
		return "none";
	}
}

static void check_reference(struct bld *b, const char *ref, struct loc at)
{
	bool reference_free = b->rl == BLD_RL_ORPO || b->rl == BLD_RL_CPO || b->rl == BLD_RL_SIMPO;

	if (reference_free && strcmp(ref, "none"))
		rl_error(b, DIAG_IGNORED_SETTING, at, "rl { reference = %s } is ignored: ORPO, CPO and SimPO "
			 "train without a reference model; drop it", ref);
	else if (!strcmp(ref, "adapter_disabled") && !b->lora && !b->qlora)
		rl_error(b, DIAG_IGNORED_SETTING, at, "rl { reference = adapter_disabled } needs a PEFT policy: "
			 "set finetune = lora(...) or qlora(...), or use reference = copy");
	else if (!strcmp(ref, "precomputed") && (b->rl == BLD_RL_GRPO || b->rl == BLD_RL_PPO))
		rl_error(b, DIAG_IGNORED_SETTING, at, "rl { reference = precomputed } is DPO's and KTO's "
			 "precompute_ref_log_probs; %s scores each generation with the reference",
			 b->rl == BLD_RL_PPO ? "PPO" : "GRPO");
	else if (!strcmp(ref, "none") && b->rl == BLD_RL_PPO)
		rl_error(b, DIAG_IGNORED_SETTING, at, "rl { reference = none }: PPOTrainer always has a reference "
			 "(create_reference_model, or the PEFT base with adapters disabled)");
}

/* The keys of one algorithm only: the generation engine and
 * num_generations are GRPO's, the reward and value models and the rollout
 * chunk PPO's. */
static bool check_owned_keys(struct bld *b)
{
	static const struct { const char *key; enum bld_rl_algo algo; const char *who; } keys[] = {
		{ "rl.num_generations", BLD_RL_GRPO, "grpo generates groups" },
		{ "rl.generation", BLD_RL_GRPO, "grpo has a generation engine" },
		{ "rl.vllm_gpu_memory_utilization", BLD_RL_GRPO, "grpo has a generation engine" },
		{ "rl.reward_model", BLD_RL_PPO, "ppo has reward and value models" },
		{ "rl.value_model", BLD_RL_PPO, "ppo has reward and value models" },
		{ "rl.rollout_batch", BLD_RL_PPO, "ppo rolls out in chunks" },
	};
	struct value v;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (b->rl != keys[i].algo && check_job_field(b->cj, keys[i].key, &v))
			return rl_error(b, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc,
					"%s is ignored: only algorithm = %s", keys[i].key, keys[i].who), false;
	return true;
}

/* prompt_len is every trainer's max_prompt_length, which only the
 * generating algorithms use; PPO's completions are PPOConfig's
 * response_length (53) unless prompt_len says otherwise. */
static void check_generation(struct bld *b)
{
	struct loc at = NO_LOC;
	const char *gen = rl_sym(b, "rl.generation", NULL);
	struct value v;
	uint64_t seq = b->out->rep.seq_len;

	if (!check_owned_keys(b))
		return;
	if (check_job_field(b->cj, "rl.vllm_gpu_memory_utilization", &v) && (!gen || strcmp(gen, "vllm_colocate")))
		return rl_error(b, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc,
				"rl { vllm_gpu_memory_utilization } is ignored without generation = vllm_colocate");
	/* TRL's max_prompt_length defaults to 512 */
	bool given = rl_u64(b, "rl.prompt_len", &b->rl_prompt, &at);

	if (!given)
		b->rl_prompt = b->rl == BLD_RL_PPO ? seq - 53 : 512, at = key_loc_of(b, "seq_len");
	if (!given && b->rl == BLD_RL_PPO && seq <= 53)
		rl_error(b, DIAG_OUT_OF_RANGE, at, "seq_len = %llu leaves no prompt beside PPOConfig's "
			 "response_length of 53 tokens: set rl { prompt_len }", (unsigned long long)seq);
	else if ((b->rl == BLD_RL_GRPO || b->rl == BLD_RL_PPO || given) && b->rl_prompt >= seq)
		rl_error(b, DIAG_OUT_OF_RANGE, at, "rl { prompt_len = %llu } must be less than seq_len = %llu "
			 "(prompt and completion)", (unsigned long long)b->rl_prompt, (unsigned long long)seq);
}

/* `rl { }` is a block of the train record (or of a base it inherits) */
static bool has_rl_record(const struct bld *b, struct loc *at)
{
	for (const struct field *f = b->cj->decl->record.fields; f; f = f->next)
		if (!strcmp(f->name, "rl"))
			return *at = f->loc, true;
	return false;
}

static const struct walk_ops *rl_ops(struct bld *b);

/* PPO needs its reward model; its value model is the reward model's
 * architecture (TRL's examples load both from reward_model_path) unless
 * `value_model` says otherwise. The models run one after another on one
 * rank, so pipeline stages are not modelled. */
static bool ppo_models(struct bld *b)
{
	struct value v;
	uint64_t pp = 1;

	if (!check_job_field(b->cj, "rl.reward_model", &v)) {
		struct loc at = NO_LOC;

		has_rl_record(b, &at);
		return rl_error(b, DIAG_MISSING_FIELD, at, "rl { algorithm = ppo } needs reward_model = <model>: "
				"the frozen AutoModelForSequenceClassification that scores each completion"), false;
	}
	if (check_job_field(b->cj, "parallel.pp", &v) && v.kind == VAL_NUM && num_to_u64(v.num, &pp) && pp > 1)
		return rl_error(b, DIAG_BAD_LAYOUT, v.origin.file ? v.origin : v.loc, "rl { algorithm = ppo } with "
				"pp = %llu: PPOTrainer runs its four models on each rank, memc does not split them "
				"over pipeline stages", (unsigned long long)pp), false;
	b->rl_ops = rl_ops(b);
	return true;
}

void bld_setup_rl(struct bld *b)
{
	struct loc at = NO_LOC;
	const char *algo = rl_sym(b, "rl.algorithm", &at), *ref;

	b->rl_factor = 1;
	b->rl = algo_of(algo);
	if (!b->rl) {
		if (has_rl_record(b, &at))
			rl_error(b, DIAG_MISSING_FIELD, at.file ? at : b->cj->decl->name_loc,
				 "an rl { } record needs algorithm = dpo, orpo, cpo, simpo, kto, grpo or ppo");
		return;
	}
	ref = rl_sym(b, "rl.reference", &at);
	if (ref)
		check_reference(b, ref, at);
	else
		ref = default_reference(b);
	if (b->rl == BLD_RL_PPO && !ppo_models(b))
		return;
	b->out->rep.rl = arena_printf(b->arena, "%s, reference %s", algo, ref);
	b->rl_ref_copy = !strcmp(ref, "copy");
	b->rl_ref_forward = strcmp(ref, "none") && strcmp(ref, "precomputed");
	/* concatenated_forward: chosen and rejected in one batch of 2 x micro_batch */
	if (b->rl == BLD_RL_DPO || b->rl == BLD_RL_ORPO || b->rl == BLD_RL_CPO || b->rl == BLD_RL_SIMPO)
		b->rl_factor = 2;
}

/* The generation batch of one rank: generation_batch_size =
 * per_device_train_batch_size x steps_per_generation (=
 * gradient_accumulation_steps) completions; num_generations must divide
 * the global one (grpo_config.py GRPOConfig.__post_init__). */
static uint64_t generation_rows(struct bld *b, struct build *out)
{
	uint64_t rows = 0, all = 0, n = 1;
	struct loc at = NO_LOC;
	struct value ga = { 0 };

	/* grad_accum is the factor a user can grow past 64 bits: blame its line */
	check_job_field(b->cj, "grad_accum", &ga);
	ga.label = "grad_accum";
	if (__builtin_mul_overflow(out->rep.micro_batch, out->job.micro_batches, &rows) ||
	    __builtin_mul_overflow(rows, out->job.dp, &all)) {
		bld_overflow(b, "the generation batch (micro_batch x grad_accum x dp)", ga.kind == VAL_NUM ? &ga : NULL);
		return 0;
	}
	if (rl_u64(b, "rl.num_generations", &n, &at) && n && all % n)
		rl_error(b, DIAG_NOT_DIVISIBLE, at, "rl { num_generations = %llu } does not divide the "
			 "generation batch of %llu completions (micro_batch x grad_accum x dp)",
			 (unsigned long long)n, (unsigned long long)all);
	return rows;
}

/* vLLM's worker takes total_memory x gpu_memory_utilization (vllm/v1/
 * worker/gpu_worker.py init_device: requested_memory); GRPOConfig
 * defaults vllm_gpu_memory_utilization to 0.3. */
static uint64_t engine_share(struct bld *b, uint64_t capacity)
{
	struct value v;
	double util = 0.3;
	uint64_t ppm;

	if (check_job_field(b->cj, "rl.vllm_gpu_memory_utilization", &v) && v.kind == VAL_NUM)
		util = num_to_double(v.num);
	ppm = (uint64_t)(util * 1e6 + 0.5);
	return capacity / 1000000 * ppm + capacity % 1000000 * ppm / 1000000;
}

/* PPO's rollout (ppo_trainer.py train): batch_generation generates the
 * local batch (micro_batch x grad_accum) in chunks of
 * local_rollout_forward_batch_size (64) queries, each with its own KV
 * cache, and keeps every chunk's `logitss`, torch.stack(output.scores):
 * rows x response_length x vocab in fp32 (generate upcasts the next
 * token's logits), held through the update (phases.c ppo_update); the
 * scoring loop walks the same chunks. */
static bool ppo_rollout(struct bld *b, struct build *out, uint64_t rows)
{
	struct phase_input *in = &out->run_in;
	uint64_t chunk = 64, kept = 0;

	if (!b->rl_vocab)
		return rl_error(b, DIAG_BAD_LAYOUT, key_loc_of(b, "model"), "rl { algorithm = ppo }: the policy "
				"has no lm_head(..., vocab) layer, whose vocab sizes the generation's scores"), false;
	rl_u64(b, "rl.rollout_batch", &chunk, NULL);
	in->gen_batch = in->rl_chunk = chunk < rows ? chunk : rows;
	if (!bld_mul(b, rows, in->gen_new, &kept, "the generation's scores") ||
	    !bld_mul(b, kept, b->rl_vocab, &kept, "the generation's scores") ||
	    !bld_mul(b, kept, 4, &in->gen_kept, "the generation's scores"))
		return false;
	/* one chunk's: gen_kept is rows x (new x vocab x 4), and chunk <= rows */
	in->gen_chunk_kept = rows ? in->gen_kept / rows * in->rl_chunk : 0;
	in->ppo = true;
	in->rl_reward_act = b->rl_reward_act;
	memcpy(in->rl_hidden, b->rl_hidden, sizeof in->rl_hidden);
	in->rl_vocab = b->rl_vocab;
	return true;
}

/* After the walk: the reference's forward, GRPO's and PPO's generation
 * phase and the vLLM engine's share. False when a key is refused. */
bool bld_finish_rl(struct bld *b, struct build *out)
{
	struct phase_input *in = &out->run_in;
	const char *gen = rl_sym(b, "rl.generation", NULL);
	bool generates = b->rl == BLD_RL_GRPO || b->rl == BLD_RL_PPO;

	if (!b->rl)
		return !b->failed;
	has_rl_record(b, &out->loc_rl);
	out->rep.micro_batch /= b->rl_factor;	/* the report shows the pairs as written */
	out->micro_batch /= b->rl_factor;
	in->rl_ref_forward = b->rl_ref_forward;
	in->rl_ref_after_policy = !generates;
	in->asked = true;
	check_generation(b);
	if (!generates || b->failed)
		return !b->failed;
	uint64_t rows = generation_rows(b, out);

	if (gen && !strcmp(gen, "vllm_colocate"))
		out->job.engine_bytes = engine_share(b, out->job.capacity_bytes);
	else if (!gen || strcmp(gen, "vllm_server")) {
		in->generate = true;
		in->gen_batch = rows;
		in->gen_prompt = b->rl_prompt;
		in->gen_new = out->rep.seq_len - b->rl_prompt;
	}
	if (b->rl == BLD_RL_PPO)
		ppo_rollout(b, out, rows);
	return !b->failed;
}

/* The reference copy (@ref) and PPO's reward model are models of their own:
 * TRL prepares them apart from the policy (trl/models/utils.py
 * prepare_deepspeed: a DeepSpeed engine of their own, ZeRO-3 kept, else
 * stage 0; prepare_fsdp in the DPO, KTO, GRPO and RLOO trainers;
 * ppo_trainer.py __init__ under FSDP: `.to(self.accelerator.device)`,
 * whole), gathered only while their own forward runs. The reference is
 * loaded beside the policy (create_reference_model's deepcopy or its own
 * from_pretrained): its weights join the loading phase's; the reward
 * model's are counted as the walk meets them. */
void bld_rl_apart(struct bld *b, struct mem_param *p, bool ref)
{
	uint64_t all = 0;

	p->engine = b->rl == BLD_RL_PPO ? MEM_ENGINE_APART_ZERO3 : MEM_ENGINE_APART;
	if (ref && bld_mul(b, p->weight_bytes, b->block_repeat, &all, "the size of this tensor"))
		bld_add(b, &b->load_weights, all, "the size of this tensor");
}

/* ---- PPO's value and reward models, walked before the policy ---- */

/* AutoModelForSequenceClassification is the backbone with `score`, a
 * Linear(hidden, num_labels = 1, bias = False), where the causal LM has
 * lm_head: the stdlib's lm_head layer is dropped, and the value model's
 * score saves its input (it trains); the score weight's `hidden` elements
 * are left out (docs/memory-model.md). */
static void rl_enter(void *ctx, const struct decl *layer, struct env *env, struct loc call)
{
	struct bld *b = ctx;
	bool head = !b->rl_head && (!b->frame || b->frame->implicit) && !strcmp(layer->name, "lm_head");
	struct value v;
	uint64_t tp = 1;

	bld_ops.enter(ctx, layer, env, call);
	if (!head)
		return;
	b->rl_head = b->frame;
	if (b->rl_part != BLD_RL_POLICY) {
		b->rl_heads++;
		return;
	}
	if (env_lookup(env, bld_intern(b, "tp"), &v) && v.kind == VAL_NUM && (!num_to_u64(v.num, &tp) || !tp))
		tp = 1;
	if (env_lookup(env, bld_intern(b, "vocab"), &v) && v.kind == VAL_NUM && num_to_u64(v.num, &b->rl_vocab))
		b->rl_vocab /= tp;
}

/* The model's first repeat is its decoder layers: with the embedding's
 * output, the hidden states output_hidden_states returns. */
static void rl_repeat_enter(void *ctx, const struct stmt *s, struct value count)
{
	struct bld *b = ctx;

	if ((!b->frame || b->frame->implicit) && !b->model_repeats && count.kind == VAL_NUM &&
	    !num_to_u64(count.num, &b->rl_layers))
		b->rl_layers = 0;
	bld_ops.repeat_enter(ctx, s, count);
}

static void rl_leave(void *ctx, const struct decl *layer)
{
	struct bld *b = ctx;

	if (b->frame == b->rl_head)
		b->rl_head = NULL;
	bld_ops.leave(ctx, layer);
}

/* The head's input x is one hidden state, the one the value model's
 * score saves; ppo_trainer.py's forward and get_reward ask for
 * output_hidden_states, so a no_grad forward holds layers + 1 of them. */
static void rl_tensor(void *ctx, const struct walk_tensor *t)
{
	struct bld *b = ctx;
	uint64_t numel = 1, n = 0, bytes = 0;

	if (!b->rl_head || b->rl_part == BLD_RL_POLICY)
		bld_ops.tensor(ctx, t);
	if (!b->rl_head || b->frame != b->rl_head || t->stmt->tensor.kind != TENSOR_INPUT || b->rl_head_seen)
		return;
	b->rl_head_seen = true;
	for (unsigned i = 0; i < t->ndims; i++)
		if (t->dims[i].kind != VAL_NUM || !num_to_u64(num_floor(t->dims[i].num), &n) ||
		    !bld_mul(b, numel, n, &numel, "the value head's input"))
			return;
	bytes = bld_bytes(b, b->act, numel);
	bld_mul(b, bytes, b->rl_layers + 1, &b->rl_hidden[b->rl_part], "the hidden states of a forward");
	if (b->rl_part == BLD_RL_VALUE)
		bld_add_saves(b, bytes, false);
}

/* The walk of a PPO job's models: bld_ops with the head replaced (the
 * policy's own head is kept; its vocab is the generation's scores). */
static const struct walk_ops *rl_ops(struct bld *b)
{
	struct walk_ops *ops = ARENA_NEW(b->arena, struct walk_ops);

	*ops = bld_ops;
	ops->repeat_enter = rl_repeat_enter;
	ops->tensor = rl_tensor;
	ops->enter = rl_enter;
	ops->leave = rl_leave;
	return ops;
}

static void walk_part(struct bld *b, struct env *env, struct value model, enum bld_rl_part part)
{
	unsigned heads = b->rl_heads;

	b->rl_part = part;
	b->rl_head = NULL;
	b->rl_head_seen = false;
	b->rl_layers = 0;
	b->model_mult = 1;
	b->block_repeat = 1;
	b->model_repeats = 0;
	b->nreps = 0;
	eval_walk(b->ev, model, env, b->rl_ops, b);
	while (b->frame)
		bld_frame_pop(b);
	if (heads == b->rl_heads)
		rl_error(b, DIAG_BAD_LAYOUT, key_loc_of(b, part == BLD_RL_VALUE ? "rl.value_model" : "rl.reward_model"),
			 "the %s model has no lm_head layer for memc to replace with its 1-output score head",
			 part == BLD_RL_VALUE ? "value" : "reward");
}

/* The reward model (frozen, AutoModelForSequenceClassification), then the
 * value model (trained beside the policy: PolicyAndValueWrapper.forward
 * runs critic_backbone and score, then the policy, and one backward goes
 * through both). Neither is a PEFT model, a reference copy, the body that
 * gradient checkpointing wraps (the wrapper's gradient_checkpointing_enable
 * enables it on the policy only) or part of the policy's KV cache. */
void bld_walk_rl_models(struct bld *b, struct env *env)
{
	struct value reward = { 0 }, value = { 0 };
	bool lora = b->lora, qlora = b->qlora, copy = b->rl_ref_copy;
	uint64_t total = b->params_total, trainable = b->params_trainable, kv = b->kv_per_token;

	check_job_field(b->cj, "rl.reward_model", &reward);
	if (!check_job_field(b->cj, "rl.value_model", &value) || value.kind != VAL_INSTANCE)
		value = value.kind == VAL_SYMBOL ? b->cj->model : reward;
	if (reward.kind != VAL_INSTANCE || value.kind != VAL_INSTANCE)
		return;
	b->lora = b->qlora = b->rl_ref_copy = false;
	b->have_body = true;
	walk_part(b, env, reward, BLD_RL_REWARD);
	walk_part(b, env, value, BLD_RL_VALUE);
	b->have_body = false;
	b->lora = lora;
	b->qlora = qlora;
	b->rl_ref_copy = copy;
	b->params_total = total;
	b->params_trainable = trainable;
	b->kv_per_token = kv;
	b->rl_part = BLD_RL_POLICY;
	b->rl_head = NULL;
	b->rl_head_seen = false;
	b->rl_layers = 0;
}
