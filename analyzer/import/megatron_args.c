/* SPDX-License-Identifier: MIT */
/*
 * megatron_args.c - Megatron-LM command-line arguments (a file of
 * "--flag value" / "--flag" lines, as in a launch script's array; a
 * trailing backslash is allowed) into train-block settings.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"

#include "analyzer/import/map_rows.h"

static const struct map_row megatron_rows[] = {
	C("tensor-model-parallel-size", "parallel.tp"),
	C("pipeline-model-parallel-size", "parallel.pp"),
	C("decoder-first-pipeline-num-layers", "parallel.first_stage_layers"),
	C("decoder-last-pipeline-num-layers", "parallel.last_stage_layers"),
	T("account-for-embedding-in-pipeline-split", "parallel.account_for_embedding", "true"),
	T("account-for-loss-in-pipeline-split", "parallel.account_for_loss", "true"),
	T("grad-reduce-in-bf16", "megatron.grad_reduce_in_bf16", "true"),
	T("overlap-grad-reduce", "megatron.overlap_grad_reduce", "true"),
	T("overlap-param-gather", "megatron.overlap_param_gather", "true"),
	C("ddp-bucket-size", "megatron.bucket_size"),
	C("context-parallel-size", "parallel.cp"),
	E("cp-comm-type", "parallel.cp_comm_type", "p2p=p2p|a2a=a2a|allgather=allgather"),
	C("expert-model-parallel-size", "parallel.ep"),
	C("expert-tensor-parallel-size", "parallel.etp"),
	E("moe-token-dispatcher-type", "megatron.moe_token_dispatcher_type", "alltoall=alltoall|flex=flex"),
	C("moe-flex-dispatcher-num-sms", "megatron.moe_flex_dispatcher_num_sms"),
	C("moe-deepep-num-sms", "megatron.moe_flex_dispatcher_num_sms"),
	T("sequence-parallel", "parallel.sequence_parallel", "true"),
	C("num-distributed-optimizer-instances", "parallel.dp_replicate"),
	C("micro-batch-size", "micro_batch"),
	C("seq-length", "seq_len"),
	NOTE("global-batch-size", "grad_accum = global-batch-size / (micro-batch-size x dp)"),
	T("use-distributed-optimizer", "zero", "1"),
	T("bf16", "precision", "megatron_bf16"),
	T("fp16", "precision", "fp16_mixed"),
	E("recompute-granularity", "checkpoint", "full=full|selective=selective"),
	T("recompute-activations", "checkpoint", "selective"),
	T("use-flash-attn", "attention", "flash"),
	E("transformer-impl", "kernels", "transformer_engine=fused|local=hf"),
	E("optimizer", "optimizer", "adam=adamw|sgd=sgd"),
	NOTE("num-layers-per-virtual-pipeline-stage", "vp = layers / (pp x this)"),
	C("virtual-pipeline-model-parallel-size", "parallel.vp"),
	NOTE("num-layers", "a model shape: import its config.json for the model"),
	NOTE("hidden-size", "a model shape"), NOTE("ffn-hidden-size", "a model shape"),
	NOTE("num-attention-heads", "a model shape"), NOTE("num-query-groups", "a model shape"),
	NOTE("group-query-attention", "a model shape"), NOTE("max-position-embeddings", "a model shape"),
	NOTE("num-experts", "a model shape"), NOTE("moe-router-topk", "a model shape"),
	NOTE("swiglu", "a model shape"), NOTE("normalization", "a model shape"),
	NOTE("untie-embeddings-and-output-weights", "a model shape"),
	NOTE("position-embedding-type", "a model shape"), NOTE("disable-bias-linear", "a model shape"),
	NOTE("vocab-size", "a model shape"), NOTE("padded-vocab-size", "a model shape"),
	IGN("lr"), IGN("min-lr"), IGN("lr-decay-style"), IGN("lr-warmup-iters"),
	IGN("lr-warmup-fraction"), IGN("lr-decay-iters"), IGN("weight-decay"), IGN("clip-grad"),
	IGN("adam-beta1"), IGN("adam-beta2"), IGN("adam-eps"), IGN("train-iters"),
	IGN("train-samples"), IGN("eval-iters"), IGN("eval-interval"), IGN("log-interval"),
	IGN("save-interval"), IGN("save"), IGN("load"), IGN("data-path"), IGN("split"),
	IGN("tokenizer-type"), IGN("tokenizer-model"), IGN("vocab-file"), IGN("merge-file"),
	IGN("seed"), IGN("init-method-std"), IGN("attention-dropout"), IGN("hidden-dropout"),
	IGN("tensorboard-dir"), IGN("wandb-project"), IGN("wandb-exp-name"),
	IGN("distributed-backend"),
	IGN("no-masked-softmax-fusion"), IGN("no-bias-gelu-fusion"), IGN("no-bias-dropout-fusion"),
	IGN("attention-softmax-in-fp32"), IGN("rotary-base"), IGN("norm-epsilon"),
	IGN("use-mcore-models"), IGN("log-throughput"), IGN("timing-log-level"),
	E("recompute-method", "recompute_method", "uniform=uniform|block=block"),
	C("recompute-num-layers", "recompute_num_layers"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

/* One "--flag [value]" line: the flag's key (without "--"), a bare flag is
 * the boolean true. */
static void read_arg_line(struct cfg *c, const char *line, size_t len, size_t off)
{
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	while (len > i && (line[len - 1] == ' ' || line[len - 1] == '\\' || line[len - 1] == '\r' ||
			   line[len - 1] == '"' || line[len - 1] == '\t'))
		len--;
	if (i + 2 >= len || line[i] != '-' || line[i + 1] != '-')
		return;
	size_t k = i + 2, ke = k;

	while (ke < len && line[ke] != ' ' && line[ke] != '=' && line[ke] != '\t')
		ke++;
	size_t v = ke;

	while (v < len && (line[v] == ' ' || line[v] == '=' || line[v] == '\t' || line[v] == '"'))
		v++;
	const char *key = arena_strndup(c->arena, line + k, ke - k);
	const char *val = v < len ? arena_strndup(c->arena, line + v, len - v) : "true";
	enum cfg_kind kind = v >= len ? CFG_BOOL : cfg_number_kind(val);

	cfg_add(c, key, kind, val, cfg_loc(c, off + i, ke - i));
}

bool cfg_read_args(struct cfg *c)
{
	const char *t = c->file->text;
	size_t off = 0;

	while (off < c->file->len) {
		size_t len = strcspn(t + off, "\n");
		const char *hash = memchr(t + off, '#', len);

		read_arg_line(c, t + off, hash ? (size_t)(hash - (t + off)) : len, off);
		off += len + 1;
	}
	return true;
}

/* Megatron's --cp-comm-type defaults to p2p (arguments.py
 * _add_distributed_args), memc's cp_comm_type to torchtitan's allgather:
 * a job imported with cp but without the flag must say p2p, whatever order
 * the flags came in. */
bool megatron_import(struct cfg *c, struct imp_out *o)
{
	bool ok = map_apply(c, megatron_rows, o);

	if (ok && imp_find(o, "parallel.cp") && !imp_find(o, "parallel.cp_comm_type"))
		imp_set(o, "parallel.cp_comm_type", "p2p", "context-parallel-size",
			"Megatron's default --cp-comm-type");
	return ok;
}
