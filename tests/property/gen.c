/* SPDX-License-Identifier: MIT */
/*
 * gen.c - valid-looking train jobs over the stdlib, drawn with the suite's
 * PRNG. Not every draw checks (tp must divide the heads, a precision may
 * need a GPU that has its dtype); the driver draws again when one does not.
 */
#include "tests/property/property.h"

#include <inttypes.h>
#include <string.h>

struct gen_model {
	const char *import, *name, *targets;	/* targets: LoRA target names */
	uint64_t max_seq;
};

static const struct gen_model models[] = {
	{ "models/llama", "llama2_7b", "[q, k, v, o, gate, up, down]", 4096 },
	{ "models/llama", "llama3_2_1b", "[q, v]", 8192 },
	{ "models/llama", "tinyllama_1_1b", "[q, k, v, o]", 2048 },
	{ "models/llama", "llama2_13b", "[q, v]", 4096 },
	{ "models/mistral", "mistral_7b", "[q, k, v, o]", 8192 },
	{ "models/qwen2", "qwen2_5_0_5b", "[q, v]", 8192 },
	{ "models/gemma", "gemma_2b", "[q, k, v, o]", 8192 },
	{ "models/phi3", "phi3_mini", "[qkv, o]", 4096 },
	{ "models/falcon", "falcon_7b", "[qkv]", 2048 },
	{ "models/gpt2", "gpt2", "[qkv, o]", 1024 },
	{ "models/gpt2", "gpt2_medium", "[qkv, o, fc1, fc2]", 1024 },
	{ "models/bert", "bert_base", "[q, v]", 512 },
	{ "models/litgpt", "litgpt_phi_1_5", "[q, v]", 2048 },
	{ "models/mixtral", "mixtral_8x7b", "[q, k, v, o]", 4096 },
	{ "models/t5", "t5_base", "[q, v]", 512 },
};

static const char *const gpu_names[] = { "A100_80GB", "H100_SXM_80GB", "A100_40GB", "L40S", "H200",
				    "MI300X", "RTX_4090" };
static const char *const precisions[] = { "fp32", "amp_bf16", "amp_fp16", "bf16_mixed",
					  "bf16_true", "fp16_mixed", "megatron_bf16" };
static const char *const optimizers[] = { "adamw", "adam", "sgd", "sgd_momentum",
					  "adamw(impl = fused)", "adamw(impl = for_loop)",
					  "adamw_8bit", "lion", "adafactor", "paged_adamw_8bit" };
static const char *const fsdps[] = { "full_shard", "shard_grad_op", "hybrid_shard", "no_shard" };

#define PICK(pc, v) ((v)[prop_pick((pc), sizeof(v) / sizeof((v)[0]))])

static void gen_parallel(struct prop_ctx *pc, struct arena *a, struct pjob *j, uint64_t *gpus)
{
	static const uint64_t degs[] = { 1, 1, 1, 2, 4 };
	uint64_t tp = PICK(pc, degs), pp = prop_pick(pc, 3) ? 1 : 2, cp = prop_pick(pc, 8) ? 1 : 2;

	if (tp > 1)
		pjob_set_u64(a, j, "parallel.tp", tp);
	if (pp > 1)
		pjob_set_u64(a, j, "parallel.pp", pp);
	if (cp > 1)
		pjob_set_u64(a, j, "parallel.cp", cp);
	if (tp > 1 && prop_pick(pc, 2))
		pjob_set(a, j, "parallel.sequence_parallel", "true");
	if (pp > 1 && prop_pick(pc, 4) == 0) {
		pjob_set(a, j, "parallel.schedule", prop_pick(pc, 2) ? "\"gpipe\"" : "\"interleaved\"");
		if (!strcmp(pjob_get(j, "parallel.schedule"), "\"interleaved\""))
			pjob_set_u64(a, j, "parallel.vp", 2);
	}
	*gpus *= tp * pp * cp;
}

/* The rarer train keys: offload, DDP bucket views, stepping in backward,
 * gradients kept between steps. */
static void gen_extras(struct prop_ctx *pc, struct arena *a, struct pjob *j)
{
	switch (prop_pick(pc, 10)) {
	case 0: pjob_set(a, j, "offload.optimizer", "cpu"); break;
	case 1: pjob_set(a, j, "ddp.gradient_as_bucket_view", "true"); break;
	case 2: pjob_set(a, j, "optimizer_in_backward", "true"); break;
	case 3: pjob_set(a, j, "zero_grad", "zeros"); break;
	default: break;
	}
}

/* DeepSpeed refuses ZeRO-2/3 under pipeline parallelism (bad-layout), so a
 * pipelined job draws only stages 0 and 1: every draw then checks. */
static void gen_sharding(struct prop_ctx *pc, struct arena *a, struct pjob *j)
{
	uint64_t stages = pjob_get_u64(j, "parallel.pp", 1) > 1 ? 2 : 4;

	switch (prop_pick(pc, 6)) {
	case 0: case 1: case 2: case 3:
		pjob_set_u64(a, j, "zero", prop_pick(pc, stages));
		break;
	case 4:
		pjob_set(a, j, "fsdp", PICK(pc, fsdps));
		break;
	default:
		break;
	}
}

static void gen_finetune(struct prop_ctx *pc, struct arena *a, struct pjob *j,
			 const struct gen_model *m)
{
	static const unsigned ranks[] = { 8, 16, 64 };

	switch (prop_pick(pc, 5)) {
	case 0:
		pjob_set(a, j, "finetune", arena_printf(a, "lora(r = %u, alpha = 16, targets = %s)",
							PICK(pc, ranks), m->targets));
		break;
	case 1:
		pjob_set(a, j, "finetune", arena_printf(a, "qlora(r = %u, alpha = 16, targets = %s)",
							PICK(pc, ranks), m->targets));
		break;
	default:
		break;
	}
}

static void gen_activations(struct prop_ctx *pc, struct arena *a, struct pjob *j,
			    const struct gen_model *m)
{
	static const uint64_t mbs[] = { 1, 1, 2, 4, 8 }, seqs[] = { 128, 256, 512, 1024, 2048 };
	static const char *const ckpt[] = { "none", "selective", "full" };
	uint64_t s = PICK(pc, seqs);

	pjob_set_u64(a, j, "micro_batch", PICK(pc, mbs));
	pjob_set_u64(a, j, "seq_len", s > m->max_seq / 2 ? m->max_seq / 2 : s);
	if (prop_pick(pc, 2))
		pjob_set_u64(a, j, "grad_accum", 1 + prop_pick(pc, 4));
	pjob_set(a, j, "checkpoint", PICK(pc, ckpt));
	pjob_set(a, j, "attention", prop_pick(pc, 3) ? "flash" : "eager");
	if (prop_pick(pc, 3) == 0)
		pjob_set(a, j, "kernels", "fused");
	if (prop_pick(pc, 5) == 0)
		pjob_set(a, j, "loss", prop_pick(pc, 2) ? "chunked" : "chunked_kept");
}

struct pjob *prop_generate(struct prop_ctx *pc)
{
	struct arena *a = &pc->var;
	struct pjob *j = ARENA_NEW(a, struct pjob);
	const struct gen_model *m = &PICK(pc, models);
	static const uint64_t counts[] = { 1, 2, 4, 8 };
	uint64_t gpus = PICK(pc, counts);

	j->origin = "generated";
	j->name = "gen";
	j->prelude = arena_printf(a, "import \"gpus/nvidia\"\nimport \"gpus/amd\"\nimport \"%s\"\n"
				  "import \"optimizers\"\nimport \"precision\"\n", m->import);
	pjob_set(a, j, "model", m->name);
	pjob_set(a, j, "precision", PICK(pc, precisions));
	pjob_set(a, j, "optimizer", PICK(pc, optimizers));
	gen_activations(pc, a, j, m);
	gen_parallel(pc, a, j, &gpus);
	gen_sharding(pc, a, j);
	gen_finetune(pc, a, j, m);
	gen_extras(pc, a, j);
	pjob_set(a, j, "cluster", arena_printf(a, "%" PRIu64 " x %s", gpus, PICK(pc, gpu_names)));
	return j;
}
