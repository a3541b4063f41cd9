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

#include "analyzer/build_impl.h"
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
	static const char *const names[] = { "dpo", "orpo", "cpo", "simpo", "kto", "grpo" };

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
	else if (!strcmp(ref, "precomputed") && b->rl == BLD_RL_GRPO)
		rl_error(b, DIAG_IGNORED_SETTING, at, "rl { reference = precomputed } is DPO's and KTO's "
			 "precompute_ref_log_probs; GRPO scores each generation with the reference");
}

/* num_generations and the generation engine are GRPO's; prompt_len is
 * every trainer's max_prompt_length, which only GRPO's generation uses. */
static void check_generation(struct bld *b)
{
	static const char *const keys[] = { "rl.num_generations", "rl.generation",
					    "rl.vllm_gpu_memory_utilization" };
	struct loc at = NO_LOC;
	const char *gen = rl_sym(b, "rl.generation", NULL);
	struct value v;

	for (size_t i = 0; b->rl != BLD_RL_GRPO && i < sizeof keys / sizeof keys[0]; i++)
		if (check_job_field(b->cj, keys[i], &v))
			return rl_error(b, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc,
					"%s is ignored: only algorithm = grpo generates", keys[i]);
	if (check_job_field(b->cj, "rl.vllm_gpu_memory_utilization", &v) && (!gen || strcmp(gen, "vllm_colocate")))
		return rl_error(b, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc,
				"rl { vllm_gpu_memory_utilization } is ignored without generation = vllm_colocate");
	/* TRL's max_prompt_length defaults to 512 */
	bool given = rl_u64(b, "rl.prompt_len", &b->rl_prompt, &at);

	if (!given)
		b->rl_prompt = 512, at = key_loc_of(b, "seq_len");
	if ((b->rl == BLD_RL_GRPO || given) && b->rl_prompt >= b->out->rep.seq_len)
		rl_error(b, DIAG_OUT_OF_RANGE, at, "rl { prompt_len = %llu } must be less than seq_len = %llu "
			 "(prompt and completion)", (unsigned long long)b->rl_prompt,
			 (unsigned long long)b->out->rep.seq_len);
}

/* `rl { }` is a block of the train record (or of a base it inherits) */
static bool has_rl_record(const struct bld *b, struct loc *at)
{
	for (const struct field *f = b->cj->decl->record.fields; f; f = f->next)
		if (!strcmp(f->name, "rl"))
			return *at = f->loc, true;
	return false;
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
				 "an rl { } record needs algorithm = dpo, orpo, cpo, simpo, kto or grpo");
		return;
	}
	ref = rl_sym(b, "rl.reference", &at);
	if (ref)
		check_reference(b, ref, at);
	else
		ref = default_reference(b);
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

	bld_mul(b, out->rep.micro_batch, out->job.micro_batches, &rows, "the generation batch");
	bld_mul(b, rows, out->job.dp, &all, "the generation batch");
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

/* After the walk: the reference's forward, GRPO's generation phase and
 * the vLLM engine's share. False when a key is refused. */
bool bld_finish_rl(struct bld *b, struct build *out)
{
	struct phase_input *in = &out->run_in;
	const char *gen = rl_sym(b, "rl.generation", NULL);

	if (!b->rl)
		return !b->failed;
	has_rl_record(b, &out->loc_rl);
	out->rep.micro_batch /= b->rl_factor;	/* the report shows the pairs as written */
	out->micro_batch /= b->rl_factor;
	in->rl_ref_forward = b->rl_ref_forward;
	in->rl_ref_after_policy = b->rl != BLD_RL_GRPO;
	in->asked = true;
	check_generation(b);
	if (b->rl != BLD_RL_GRPO || b->failed)
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
	return !b->failed;
}
