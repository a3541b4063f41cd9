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
#include "lang/strbuf.h"

#include "analyzer/import/map_rows.h"

static const struct map_row megatron_rows[] = {
	C("tensor-model-parallel-size", "parallel.tp"),
	C("pipeline-model-parallel-size", "parallel.pp"),
	/* at least 1, as parallel { first/last_stage_layers } (count_min) */
	{ "decoder-first-pipeline-num-layers", "parallel.first_stage_layers", MAP_COUNT, "1" },
	{ "decoder-last-pipeline-num-layers", "parallel.last_stage_layers", MAP_COUNT, "1" },
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
	{ "microbatch-group-size-per-virtual-pipeline-stage", "parallel.microbatch_group_size_per_vp_stage",
	  MAP_COUNT, "1" },
	IGN("pipeline-model-parallel-layout"),	/* megatron_layout */
	NOTE("mtp-num-layers", "a model shape: the model's mtp_num_layers (the stdlib's deepseek_v3_mtp "
	     "for DeepSeek-V3's 1), on the last pipeline stage"),
	IGN("mtp-loss-scaling-factor"),	/* scales the MTP loss only */
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

	if (cfg_add(c, key, kind, val, cfg_loc(c, off + i, ke - i)))
		c->items[c->n - 1].bare = v >= len;
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

/* The layout's unrolled text is at most this long: a "t*N" beyond it is no
 * model memc could analyse, and an error rather than a huge string. */
enum { LAYOUT_MAX = 1 << 20 };

/* "x*N" (@group: "(...)*N") at in[*i], appended N times to @out; false if
 * there is none there (the character is copied). */
static bool unroll_one(const char *in, size_t *i, bool group, struct strbuf *out, bool *big)
{
	size_t a = *i, b = a + 1, n = 0;

	if (group) {
		if (in[a] != '(')
			return false;
		while (in[b] && in[b] != ')')
			b++;
		if (b == a + 1 || in[b] != ')')
			return false;
	} else if (!in[a]) {
		return false;
	}
	size_t star = group ? b + 1 : a + 1, d = star + 1;

	if (in[star] != '*' || in[d] < '0' || in[d] > '9')
		return false;
	for (; in[d] >= '0' && in[d] <= '9'; d++)
		n = n > LAYOUT_MAX ? n : n * 10 + (size_t)(in[d] - '0');
	for (size_t k = 0; k < n && !*big; k++) {
		strbuf_add(out, in + a + group, group ? b - a - 1 : 1);
		*big = out->len > LAYOUT_MAX;
	}
	*i = d;
	return true;
}

/* parse_str_to_list's unrolling: commas dropped, then each "(...)*N", then
 * each "x*N", left to right as re.sub does. */
static bool unroll(const char *text, struct strbuf *out)
{
	struct strbuf a, b;
	bool big = false;

	strbuf_init(&a);
	strbuf_init(&b);
	for (const char *p = text; *p; p++)
		if (*p != ',')
			strbuf_addch(&a, *p);
	for (size_t i = 0; i < a.len && !big;)
		if (!unroll_one(a.buf, &i, true, &b, &big))
			strbuf_addch(&b, a.buf[i++]);
	for (size_t i = 0; i < b.len && !big;)
		if (!unroll_one(b.buf, &i, false, out, &big))
			strbuf_addch(out, b.buf[i++]);
	strbuf_release(&a);
	strbuf_release(&b);
	return !big && out->len <= LAYOUT_MAX;
}

/* The decoder layers (t) of each '|'-separated virtual stage as a .mem
 * list; the embedding E first and the loss L last, once each
 * (validate_layer_layout); false with *bad the offending character. */
static bool layout_counts(const char *s, struct strbuf *list, size_t *stages, char *bad)
{
	size_t t = 0, e = 0, l = 0;

	*stages = 1;
	strbuf_addch(list, '[');
	for (const char *p = s;; p++) {
		if (*p == '|' || !*p) {
			strbuf_addf(list, "%s%zu", *stages > 1 ? ", " : "", t);
			if (!*p)
				break;
			t = 0;
			++*stages;
		} else if (*p == 't') {
			t++;
		} else if (*p == 'E' || *p == 'L') {
			*p == 'E' ? e++ : l++;
		} else if (*p != 'm') {
			*bad = *p;
			return false;
		}
	}
	strbuf_addch(list, ']');
	*bad = 0;
	return e == 1 && l == 1 && s[0] == 'E' && s[strlen(s) - 1] == 'L';
}

static unsigned long long count_t(const char *s)
{
	unsigned long long n = 0;

	for (; *s; s++)
		n += *s == 't';
	return n;
}

/* validate_layer_layout's MTP rules: as many m as --mtp-num-layers (none
 * without it, @mtp -1), no decoder layer after the first, all in one virtual stage
 * and that the last of its rank (stage k is chunk k / pp of rank k mod pp);
 * NULL when the layout keeps them, else what is wrong. */
static const char *layout_mtp_error(struct arena *a, const char *u, size_t n, size_t pp, long long mtp)
{
	unsigned long long m = 0;
	size_t stage = 0, at = 0;
	bool split = false;

	for (const char *p = u; *p; p++) {
		stage += *p == '|';
		if (*p == 't' && m)
			return "decoder layers (t) must come before the MTP layers (m) (validate_layer_layout)";
		if (*p == 'm') {
			split |= m && stage != at;
			at = stage;
			m++;
		}
	}
	if (mtp < 0 && m)
		return arena_printf(a, "the pipeline layout places %llu MTP layers (m) without "
				    "--mtp-num-layers (validate_layer_layout: give it or drop the m)", m);
	if (mtp >= 0 && m != (unsigned long long)mtp)
		return arena_printf(a, "the pipeline layout places %llu MTP layers (m), but --mtp-num-layers "
				    "is %lld (validate_layer_layout: they must match)", m, mtp);
	if (m && (split || at / pp != n / pp - 1))
		return "the MTP layers (m) must all be in one virtual stage, the last of its rank "
		       "(validate_layer_layout)";
	return NULL;
}

/* --mtp-num-layers, argparse's int (None, no MTP, when absent: -1); a
 * layout is checked against it. */
static bool megatron_mtp(struct cfg *c, struct imp_out *o, long long *n)
{
	const struct cfg_item *it = cfg_find(c, "mtp-num-layers");

	*n = -1;
	if (!it)
		return true;
	if (!cfg_whole_at_least(c, it, 0))	/* bare: megatron_note_values */
		return false;
	*n = it->i;
	o->mtp_layers = it->i;
	o->mtp_loc = it->loc;
	return true;
}

/* What the import says of the layout's MTP layers (m): a model's
 * mtp_num_layers go after its body, on the last virtual stage, where the
 * layout has its loss L; an m elsewhere is not placed there. */
static const char *layout_mtp_note(const char *u)
{
	const char *last = strrchr(u, '|'), *m = strchr(u, 'm');

	if (!m)
		return "each virtual stage's decoder layers (t)";
	if (!last || m > last)
		return "each virtual stage's decoder layers (t); the MTP layers (m) are on the last stage, "
		       "where memc puts the model's mtp_num_layers";
	return "each virtual stage's decoder layers (t); memc puts the model's mtp_num_layers on the "
	       "last stage, not where this layout's m are";
}

/* --pipeline-model-parallel-layout (megatron/core/transformer/
 * pipeline_parallel_layer_layout.py PipelineParallelLayerLayout): one
 * virtual stage per '|', stage s chunk s / pp of rank s mod pp, as
 * parallel { stage_layers } lists them; its length / pp is vp. */
static bool megatron_layout(struct cfg *c, struct imp_out *o)
{
	const struct cfg_item *it = cfg_find(c, "pipeline-model-parallel-layout");
	const struct cfg_item *pp = cfg_find(c, "pipeline-model-parallel-size");
	const struct cfg_item *nl = cfg_find(c, "num-layers");
	struct strbuf u, list;
	const char *mtp_bad;
	long long mtp;
	size_t n = 0;
	char bad = 0;
	bool ok;

	if (!megatron_mtp(c, o, &mtp))
		return false;
	if (!it)
		return true;
	if (!pp || pp->kind != CFG_INT || pp->i < 2)
		return diag_fail(c->diag, DIAG_MISSING_FIELD, it->loc, "a pipeline layout needs "
				 "--pipeline-model-parallel-size of 2 or more");
	/* a flag without its value reads as "true", whose 'r' is no layer */
	if (it->kind != CFG_STR || !*it->text)
		return diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "--pipeline-model-parallel-layout needs "
				 "a layout such as \"Et*8|t*8|t*8|t*8L\" (one '|'-separated stage each)");
	strbuf_init(&u);
	strbuf_init(&list);
	ok = unroll(it->text, &u);
	if (!ok)
		diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "the pipeline layout unrolls past %d layers",
			  LAYOUT_MAX);
	else if (!(ok = layout_counts(u.buf, &list, &n, &bad)) && bad)
		diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "invalid layer character '%c' in the pipeline "
			  "layout; known: E (embedding), t (decoder layer), m (MTP), L (loss)", bad);
	else if (!ok)
		diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "the pipeline layout must begin with the "
			  "embedding E and end with the loss L, each once (validate_layer_layout)");
	else if (!(ok = n % (size_t)pp->i == 0))
		diag_fail(c->diag, DIAG_NOT_DIVISIBLE, it->loc, "the pipeline layout's %zu stages do not "
			  "divide by --pipeline-model-parallel-size %lld", n, pp->i);
	else if (nl && nl->kind == CFG_INT && !(ok = count_t(u.buf) == (unsigned long long)nl->i))
		diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "the pipeline layout places %llu decoder layers "
			  "(t), but --num-layers is %lld (validate_layer_layout)", count_t(u.buf), nl->i);
	else if ((mtp_bad = layout_mtp_error(c->arena, u.buf, n, (size_t)pp->i, mtp)))
		ok = diag_fail(c->diag, DIAG_BAD_LAYOUT, it->loc, "%s", mtp_bad);
	if (ok) {
		imp_set(o, "parallel.stage_layers", arena_strdup(c->arena, list.buf), it->path,
			layout_mtp_note(u.buf));
		if (n / (size_t)pp->i > 1 && !imp_find(o, "parallel.vp"))
			imp_set(o, "parallel.vp", arena_printf(c->arena, "%zu", n / (size_t)pp->i), it->path,
				"the layout's stages / pp");
	}
	strbuf_release(&u);
	strbuf_release(&list);
	return ok;
}

/* Megatron runs virtual pipeline stages (vp > 1) with its interleaved 1F1B
 * (schedules.py get_forward_backward_func). */
static void megatron_schedule(struct cfg *c, struct imp_out *o)
{
	const struct imp_setting *vp = imp_find(o, "parallel.vp");

	(void)c;
	if (vp && vp->value && strcmp(vp->value, "1") && !imp_find(o, "parallel.schedule"))
		imp_set(o, "parallel.schedule", "\"interleaved\"", vp->src,
			"Megatron's interleaved 1F1B (forward_backward_pipelining_with_interleaving)");
}

/* A comment row's flag that argparse types (--num-layers, --global-batch-
 * size, ...) given alone would be noted as "= true" and skip the layout's
 * checks against it; only its store_true switches take no value. */
static bool megatron_note_values(struct cfg *c)
{
	static const char *const switches[] = { "swiglu", "group-query-attention",
						"untie-embeddings-and-output-weights", "disable-bias-linear" };
	bool ok = true;

	for (size_t i = 0; i < c->n; i++) {
		const struct cfg_item *it = &c->items[i];
		const struct map_row *r = it->bare ? map_find(megatron_rows, it->path) : NULL;
		bool sw = false;

		for (size_t k = 0; k < sizeof switches / sizeof switches[0]; k++)
			sw |= !strcmp(it->path, switches[k]);
		if (r && r->conv == MAP_NOTE && !sw && cfg_find(c, it->path) == it)
			ok = diag_fail(c->diag, DIAG_TYPE_MISMATCH, it->loc, "'--%s' needs a value and has "
				       "none after it", it->path);
	}
	return ok;
}

/* Megatron's --cp-comm-type defaults to p2p (arguments.py
 * _add_distributed_args), memc's cp_comm_type to torchtitan's allgather:
 * a job imported with cp but without the flag must say p2p, whatever order
 * the flags came in. */
bool megatron_import(struct cfg *c, struct imp_out *o)
{
	bool ok = megatron_note_values(c) && map_apply(c, megatron_rows, o) && megatron_layout(c, o);

	if (ok)
		megatron_schedule(c, o);

	if (ok && imp_find(o, "parallel.cp") && !imp_find(o, "parallel.cp_comm_type"))
		imp_set(o, "parallel.cp_comm_type", "p2p", "context-parallel-size",
			"Megatron's default --cp-comm-type");
	return ok;
}
