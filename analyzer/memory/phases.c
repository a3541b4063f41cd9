/* SPDX-License-Identifier: MIT */
/*
 * phases.c - the peaks of the run's phases around the step (phases.h).
 * Formulas: docs/memory-model.md §"The run, phase by phase".
 */
#include <math.h>
#include <string.h>

#include "analyzer/alloc/alloc.h"
#include "analyzer/memory/phases.h"
#include "lang/arena.h"

struct ph {
	const struct mem_job *job;
	const struct phase_input *in;
	bool ovf;
	uint64_t unit;		/* one body repeat's weights, unsharded */
	uint64_t root;		/* the layers outside the body, unsharded (FSDP1's root unit) */
	uint64_t full;		/* every weight of the model, unsharded */
	uint64_t layer_act;	/* the largest layer's saves + forward transients */
	uint64_t body_act;	/* the same outside the loss region */
};

static uint64_t add(struct ph *p, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return p->ovf = true, UINT64_MAX;
	return r;
}

static uint64_t mul(struct ph *p, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return p->ovf = true, UINT64_MAX;
	return r;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static bool shards_weights(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO3 || m == MEM_SHARD_FSDP_FULL || m == MEM_SHARD_FSDP_GRAD_OP ||
	       m == MEM_SHARD_FSDP_HYBRID;
}

/* The unsharded bytes of one layer's parameters (what a gather holds). */
static uint64_t layer_weights(struct ph *p, const struct mem_layer *l)
{
	uint64_t s = 0;

	for (size_t i = 0; i < l->nparams; i++)
		if (l->params[i].engine == MEM_ENGINE_JOB)	/* a model apart gathers its own */
			s = add(p, s, l->params[i].gather_bytes ? l->params[i].gather_bytes :
								 l->params[i].weight_bytes);
	return s;
}

/* The FSDP unit (one body repeat), the whole model and the largest
 * layer's forward bytes, from the numeric job. */
static void measure(struct ph *p)
{
	for (size_t b = 0; b < p->job->nblocks; b++) {
		const struct mem_block *blk = &p->job->blocks[b];
		uint64_t rep = 0;

		for (size_t l = 0; l < blk->nlayers; l++) {
			const struct mem_layer *ly = &blk->layers[l];

			rep = add(p, rep, layer_weights(p, ly));
			p->layer_act = max_u64(p->layer_act, add(p, ly->saves_bytes, ly->temp_fwd_bytes));
			if (!ly->loss_region)
				p->body_act = max_u64(p->body_act, add(p, ly->saves_bytes, ly->temp_fwd_bytes));
		}
		if (blk->is_body)
			p->unit = max_u64(p->unit, rep);
		else
			p->root = add(p, p->root, mul(p, rep, blk->repeat));
		p->full = add(p, p->full, mul(p, rep, blk->repeat));
	}
}

/* torchao's to_nf4 (NF4Tensor.from_tensor, convert_to_norm_float_weight)
 * on the GPU: beside the source, `scaled_blocks = blocks / scales` in its
 * dtype, then quantize_tensor_nearest's `(value.unsqueeze(-1) - nf4)` and
 * its `.abs()`, both [elements, 16] in that dtype while abs runs. torchao
 * 0.1 does it over the whole tensor; 0.2 (pytorch/ao#196) over chunks of
 * 2^20 elements into a uint8 `quantized_blocks` of every element. The
 * per-block scalers (under 5 B per 64 elements) are left out. */
static uint64_t torchao_transient(struct ph *p)
{
	const struct phase_input *in = p->in;
	uint64_t n = in->largest_quantised, e = in->load_elem_size;
	uint64_t chunk = in->quantizer == MEM_QUANT_TORCHAO && n > (1u << 20) ? 1u << 20 : n;
	uint64_t t = mul(p, mul(p, n, e), 2);

	if (in->quantizer == MEM_QUANT_TORCHAO)
		t = add(p, t, n);
	return add(p, t, mul(p, mul(p, chunk, e), 32));
}

/* HQQ's Quantizer.quantize (hqq core/quantize.py @72b2b641, the commit
 * fsdp_qlora's README pins) beside the source: `W = tensor.float()`, then
 * optimize_weights_proximal_legacy (core/optimize.py) in fp16 on the GPU:
 * W_f, W_q, W_r and the previous iteration's W_e live while shrink_op
 * evaluates `torch.sign(x) * relu(torch.abs(x) - (1/beta) *
 * torch.pow(torch.abs(x), p - 1))` on x = W_f - W_r: x, sign, abs, abs
 * and pow at once, nine fp16 tensors of the weight (the second iteration,
 * which always runs, has a W_e).  The group scales are left out. */
#define HQQ_FP16_TEMPS 9

static uint64_t hqq_transient(struct ph *p)
{
	const struct phase_input *in = p->in;
	uint64_t n = in->largest_quantised;

	return add(p, mul(p, n, in->load_elem_size), add(p, mul(p, n, 4), mul(p, n, 2 * HQQ_FP16_TEMPS)));
}

/* bitsandbytes Params4bit._quantize: the weight as loaded is copied to
 * the GPU (`self.data.contiguous().to(device)`) and quantize_4bit makes
 * fp32 absmax per 64-element block beside it; compress_statistics
 * (double quant) adds the uint8 quantised absmax before the fp32 one is
 * freed. The packed output is counted with the resident weights. */
static uint64_t quantise_transient(struct ph *p)
{
	const struct phase_input *in = p->in;

	if (in->quantizer == MEM_QUANT_HQQ)
		return hqq_transient(p);
	if (in->quantizer != MEM_QUANT_BNB)
		return torchao_transient(p);
	uint64_t n = in->largest_quantised, blocks = n / 64 + (n % 64 != 0);
	uint64_t t = add(p, mul(p, n, in->load_elem_size), mul(p, blocks, 4));

	/* Int8Params._quantize: an fp16 copy on the GPU, then double_quant's
	 * row- and column-wise int8 matrices (CBt is freed after; the
	 * per-row/column fp32 scales are left out) */
	if (in->quant_8bit)
		return add(p, mul(p, n, 2), n);
	return in->double_quant ? add(p, t, blocks) : t;
}

static uint64_t loading(struct ph *p, const struct mem_class *k)
{
	const struct phase_input *in = p->in;
	uint64_t q = in->qlora ? quantise_transient(p) : 0;

	switch (in->load) {
	case PHASE_LOAD_FROM_PRETRAINED:
		/* the whole model on every rank; FSDP's FlatParameter then
		 * concatenates one unit beside its parameters (flat_param.py
		 * flatten_tensors) before sharding it. Under ZeRO-3,
		 * from_pretrained builds the model inside deepspeed.zero.Init
		 * and gathers one module at a time to load it: as rank0_cpu. */
		if (p->job->sharding != MEM_SHARD_ZERO3)
			return add(p, in->load_weights, max_u64(q, shards_weights(p->job->sharding) ? p->unit : 0));
		/* fall through */
	case PHASE_LOAD_RANK0_CPU:
		/* FSDP moves one unit to the GPU, flattens and shards it; FSDP1
		 * (the record) holds the originals beside the FlatParameter
		 * (_init_param_handle_from_module's managed_params), and its root
		 * unit is every layer outside the body, often the largest */
		if (p->job->fsdp1)
			return add(p, k->persistent[MEM_C_WEIGHTS],
				   max_u64(q, mul(p, max_u64(p->unit, p->root), 2)));
		return add(p, k->persistent[MEM_C_WEIGHTS], max_u64(q, p->unit));
	default:
		/* each full tensor passes through the GPU once (distribute_tensor) */
		return add(p, k->persistent[MEM_C_WEIGHTS], in->qlora ? q : in->largest_param);
	}
}

/* prepare_model_for_kbit_training: param.data = param.data.to(float32),
 * one parameter at a time: the fp32 copies of those before it plus the
 * 16-bit source and fp32 copy of the current one. */
static uint64_t prepare(struct ph *p, const struct mem_class *k)
{
	const struct phase_input *in = p->in;
	uint64_t resident = in->load == PHASE_LOAD_FROM_PRETRAINED ? add(p, in->load_weights, in->kbit_extra)
								    : k->persistent[MEM_C_WEIGHTS];

	return add(p, resident, in->largest_cast);
}

/* What stays between steps: weights, optimizer states, resident buffers,
 * and the gradients only when zero_grad keeps them. */
static uint64_t between_steps(struct ph *p, const struct mem_class *k)
{
	uint64_t s = add(p, k->persistent[MEM_C_WEIGHTS], k->persistent[MEM_C_OPTIMIZER]);

	s = add(p, s, k->persistent[MEM_C_BUFFERS]);
	return p->job->grads_persistent ? add(p, s, k->persistent[MEM_C_GRADIENTS]) : s;
}

/* Evaluation under torch.no_grad: nothing is saved for backward, so one
 * layer's saves and transients are alive at a time (scaled to the eval
 * tokens), beside the KV cache of every layer for prompt + generated
 * tokens (HF DynamicCache, LitGPT's kv_cache) and, when sharded, the
 * running and the prefetched unit. */
static uint64_t no_grad_pass(struct ph *p, const struct mem_class *k, uint64_t layer_act, uint64_t batch,
			     uint64_t seq, uint64_t generate)
{
	const struct phase_input *in = p->in;
	uint64_t tokens = mul(p, batch, seq);
	uint64_t kv_tokens = mul(p, batch, add(p, seq, generate));
	uint64_t act = mul(p, layer_act, tokens), s = between_steps(p, k);

	act = in->train_tokens ? act / in->train_tokens + (act % in->train_tokens != 0) : act;
	s = add(p, s, act);
	s = add(p, s, mul(p, mul(p, in->kv_per_token, kv_tokens), in->act_size));
	return shards_weights(p->job->sharding) ? add(p, s, mul(p, p->unit, 2)) : s;
}

static uint64_t evaluation(struct ph *p, const struct mem_class *k)
{
	return no_grad_pass(p, k, p->layer_act, p->in->eval_batch, p->in->eval_seq, p->in->eval_generate);
}

/* PPO's scores during batch_generation (ppo_trainer.py): while a chunk
 * decodes, the chunks before it are stacked and its own output.scores
 * grow (one fp32 [rows, vocab] per token): @pass + the kept scores.
 * generate() then stacks its chunk's scores (torch.stack(output.scores,
 * 1)) while `output` still holds them and the KV cache; at the end pad()
 * (trl/trainer/utils.py: torch.full, then a copy of each chunk) makes the
 * padded copy of every chunk's scores before the list is dropped. */
static uint64_t ppo_scores(struct ph *p, const struct mem_class *k, uint64_t pass)
{
	const struct phase_input *in = p->in;
	uint64_t cache = no_grad_pass(p, k, 0, in->gen_batch, in->gen_prompt, in->gen_new);
	uint64_t stack = add(p, add(p, cache, in->gen_kept), in->gen_chunk_kept);
	uint64_t padded = add(p, between_steps(p, k), mul(p, in->gen_kept, 2));

	return max_u64(add(p, pass, in->gen_kept), max_u64(stack, padded));
}

/* GRPO's generation with the policy (TRL unwrap_model_for_generation,
 * then generate with a DynamicCache): the prompts of the whole generation
 * batch prefilled, their completions' KV cache of every layer; generate
 * keeps the last position's logits only (logits_to_keep), so the body's
 * largest layer is the transient. Under ZeRO-3 the whole model is
 * gathered for it (gather_deepspeed3_params). */
static uint64_t generation(struct ph *p, const struct mem_class *k)
{
	const struct phase_input *in = p->in;
	uint64_t s = no_grad_pass(p, k, p->body_act, in->gen_batch, in->gen_prompt, in->gen_new);

	if (in->ppo)
		s = ppo_scores(p, k, s);
	return p->job->sharding == MEM_SHARD_ZERO3 ? add(p, s, p->full) : s;
}

/* PPO's update (ppo_trainer.py train): the PPO epochs run in the scope
 * of the rollout, whose `logitss` (the fp32 scores of every generated
 * token, build_rl.c ppo_rollout) is only rebound by the next rollout's
 * batch_generation; every step of the update holds it. The rollout's
 * [rows, response_length] tensors (logprobs, values, advantages, ...)
 * are left out. */
static uint64_t ppo_update(struct ph *p, const struct mem_class *k)
{
	return add(p, k->peak_allocated, p->in->gen_kept);
}

/* The bytes of @v, measured at the step's tokens, at @tokens. */
static uint64_t at_tokens(struct ph *p, uint64_t v, uint64_t tokens)
{
	uint64_t t = p->in->train_tokens, x = mul(p, v, tokens);

	return t ? x / t + (x % t != 0) : x;
}

/* PPO's scoring loop, one rollout chunk of seq_len tokens at a time, the
 * generation's scores still held: the reference's forward (its logits,
 * ref_output.logits in the compute dtype, or its largest body layer), the
 * value model's and the reward model's (get_reward: a 1-output score, so
 * their largest layer), one after another, each holding the hidden states
 * output_hidden_states=True returns until it ends. */
static uint64_t scoring(struct ph *p, const struct mem_class *k)
{
	const struct phase_input *in = p->in;
	uint64_t tokens = mul(p, in->rl_chunk, add(p, in->gen_prompt, in->gen_new));
	uint64_t act = at_tokens(p, p->body_act, tokens);
	uint64_t logits = mul(p, mul(p, tokens, in->rl_vocab), in->act_size);
	uint64_t ref = add(p, max_u64(act, logits), at_tokens(p, in->rl_hidden[0], tokens));
	uint64_t value = add(p, act, at_tokens(p, in->rl_hidden[1], tokens));
	uint64_t reward = add(p, at_tokens(p, in->rl_reward_act, tokens), at_tokens(p, in->rl_hidden[2], tokens));
	uint64_t s = add(p, between_steps(p, k), in->gen_kept);

	s = add(p, s, max_u64(ref, max_u64(value, reward)));
	return shards_weights(p->job->sharding) ? add(p, s, mul(p, p->unit, 2)) : s;
}

/* The reference model's forward under no_grad (TRL compute_ref_log_probs,
 * _get_per_token_logps): it saves nothing, so its largest layer or its
 * logits are alive at a time, on the batch the policy trains on. DPO and
 * KTO run it after the policy's forward of that batch, whose saved
 * activations and logits are still held (and the accumulated gradients of
 * earlier micro-batches); GRPO scores the completions between steps. */
static uint64_t ref_forward(struct ph *p, const struct mem_class *k)
{
	uint64_t s = between_steps(p, k);

	if (p->in->ppo)
		return scoring(p, k);
	if (p->in->rl_ref_after_policy) {
		s = add(p, s, add(p, k->stored_act, k->stored_logits));
		if (p->job->micro_batches > 1 && !p->job->grads_persistent)
			s = add(p, s, k->persistent[MEM_C_GRADIENTS]);
	}
	s = add(p, s, max_u64(p->body_act, k->stored_logits));
	return shards_weights(p->job->sharding) ? add(p, s, mul(p, p->unit, 2)) : s;
}

/* FSDP FULL_STATE_DICT (_full_post_state_dict_hook): each unit is
 * unsharded and its parameters cloned. With offload_to_cpu = False and
 * rank0_only = False (FullStateDictConfig's defaults) the clones of the
 * whole model stay on every GPU; with offload_to_cpu (accelerate's
 * default) each clone goes to the CPU before the next unit. Unsharded
 * modes return views: no bytes. */
static uint64_t saving(struct ph *p, const struct mem_class *k)
{
	uint64_t s = between_steps(p, k);

	if (!shards_weights(p->job->sharding))
		return s;
	if (p->in->save == PHASE_SAVE_FULL)
		return add(p, add(p, s, p->full), p->unit);
	return add(p, s, mul(p, p->unit, 2));
}

/* M16/M17 with the step's overheads: reserved = allocated x frag in
 * whole 2 MiB segments, plus context, cuBLAS and NCCL as in the step. */
static uint64_t device_of(struct ph *p, const struct mem_class *k, uint64_t alloc)
{
	double f = p->job->frag_factor != 0.0 ? p->job->frag_factor : 1.10;
	double r = ceil((double)alloc * f);
	uint64_t res, seg = ALLOC_ROUND_LARGE;

	if (r >= 18446744073709549568.0)
		return p->ovf = true, UINT64_MAX;
	res = (uint64_t)r < alloc ? alloc : (uint64_t)r;
	res = mul(p, res / seg + (res % seg != 0), seg);
	return add(p, res, k->device_total - k->peak_reserved);
}

/* With the allocator replay, loading is the replay's first part: its
 * device total is the pool it reserved by then (in whole 2 MiB pages)
 * plus the step's overheads, which the step's own reserved already
 * includes, since the allocator keeps what loading cached (§5.4). */
static uint64_t replayed_loading(struct ph *p, const struct mem_class *k)
{
	uint64_t res = k->replay_setup_reserved, seg = ALLOC_ROUND_LARGE;

	res = mul(p, res / seg + (res % seg != 0), seg);
	return add(p, res, k->device_total - k->peak_reserved);
}

static void one_class(struct ph *p, const struct mem_class *k, struct phase_class *c)
{
	const struct phase_input *in = p->in;

	memset(c, 0, sizeof *c);
	c->alloc[PHASE_STEP] = k->peak_allocated;
	c->alloc[PHASE_LOADING] = loading(p, k);
	if (in->prepare_kbit)
		c->alloc[PHASE_PREPARE] = prepare(p, k);
	if (in->eval)
		c->alloc[PHASE_EVAL] = evaluation(p, k);
	if (in->save != PHASE_SAVE_NONE)
		c->alloc[PHASE_SAVE] = saving(p, k);
	if (in->rl_ref_forward)
		c->alloc[PHASE_REF_FORWARD] = ref_forward(p, k);
	if (in->generate)
		c->alloc[PHASE_GENERATE] = generation(p, k);
	if (in->ppo && in->gen_kept)
		c->alloc[PHASE_UPDATE] = ppo_update(p, k);
	c->device[PHASE_STEP] = k->device_total;
	c->run = PHASE_STEP;
	for (int i = PHASE_LOADING; i < PHASE__COUNT; i++) {
		if (!c->alloc[i])
			continue;
		c->device[i] = i == PHASE_LOADING && k->replayed ? replayed_loading(p, k)
								  : device_of(p, k, c->alloc[i]);
		if (c->device[i] > c->device[c->run])
			c->run = (enum phase_id)i;
	}
	c->run_alloc = c->alloc[c->run];
	c->run_device = c->device[c->run];
	/* the paged states the driver evicts (memory.c mem_class_totals); the
	 * optimizer makes them at its first step, after loading and preparing */
	bool states = c->run != PHASE_LOADING && c->run != PHASE_PREPARE;
	uint64_t paged = states && k->paged_bytes < c->run_device ? k->paged_bytes : 0;

	c->run_fits = !k->capacity || c->run_device - paged <= k->capacity;
}

bool phases_analyze(struct arena *a, const struct mem_job *job, const struct mem_result *r,
		    const struct phase_input *in, struct phase_result *out)
{
	struct ph p = { .job = job, .in = in };

	memset(out, 0, sizeof *out);
	measure(&p);
	out->classes = ARENA_NEW_ARRAY(a, struct phase_class, r->nclasses ? r->nclasses : 1);
	out->nclasses = r->nclasses;
	out->shown = in->asked;
	for (size_t i = 0; i < r->nclasses; i++) {
		one_class(&p, &r->classes[i], &out->classes[i]);
		out->shown |= out->classes[i].run != PHASE_STEP;
	}
	out->overflow = p.ovf;
	return !p.ovf;
}

const char *phase_name(enum phase_id p)
{
	static const char *const names[PHASE__COUNT] = { "the step", "loading", "prepare_kbit", "evaluation",
							  "saving", "ref forward", "generation", "the update" };

	return (unsigned)p < PHASE__COUNT ? names[p] : "?";
}
