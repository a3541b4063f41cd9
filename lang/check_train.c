/* SPDX-License-Identifier: MIT */
/*
 * check_train.c - train blocks: each key checked against its table
 * (check_train_keys.c), the rules between settings, and the walk of the
 * model with the job's real bindings (check_layout.c), which is where
 * divisibility and positivity of every shape axis are checked (templates
 * no job instantiates: check_attrs.c; lora() arguments: check_lora.c).
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/strbuf.h"
#include "lang/walk_cache.h"


/* `precision = fp32` names the precision, not the dtype of that name; a
 * dtype alias (`fp8` is fp8_e4m3) is matched by the name as written. */
static struct value as_decl(struct eval *ev, const struct expr *e, struct value v, enum decl_kind kind)
{
	if (v.kind == VAL_DTYPE && e->kind == EXPR_NAME) {
		const struct decl *d = scope_find_kind(ev->scope, e->name.name, kind);

		if (d)
			return eval_decl_value(ev, d, v.loc);
		v.str = e->name.name;	/* for the message: `fp8`, not fp8_e4m3 */
	}
	if (v.kind == VAL_DTYPE) {
		const struct decl *d = scope_find_kind(ev->scope, intern_cstr(ev->interner, dtype_name(v.dtype)), kind);

		if (d)
			return eval_decl_value(ev, d, v.loc);
	}
	if (v.kind == VAL_DECL && v.decl->kind == kind && kind != DECL_PRECISION)
		return eval_instantiate(ev, NULL, v.decl, NULL, v.loc);
	return v;
}

static bool enum_has(const char *alts, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = alts; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
		size_t len = strcspn(p, "|");

		if (len == n && !strncmp(p, v, n))
			return true;
	}
	return false;
}

/* The message grows with the list: the loss list alone is over 100 bytes. */
static bool check_enum(struct eval *ev, struct value v, const char *alts, const char *what)
{
	struct strbuf list;

	if (v.kind == VAL_ERROR)
		return false;
	if ((v.kind == VAL_SYMBOL || v.kind == VAL_NONE) && v.str && enum_has(alts, v.str))
		return true;
	/* "none|selective|full" -> "none, selective or full" */
	strbuf_init(&list);
	for (const char *p = alts; *p; p++) {
		if (*p != '|')
			strbuf_add(&list, p, 1);
		else
			strbuf_addf(&list, "%s", strchr(p + 1, '|') ? ", " : " or ");
	}
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be %s", what, list.buf);
	strbuf_release(&list);
	return false;
}

/* `precision = bf16`: a dtype where a policy is wanted; name the policies
 * that compute or keep weights in it. */
static void precision_is_dtype(struct eval *ev, struct value v, const char *what)
{
	/* v.str: the name as written, which may be an alias (`fp8` is fp8_e4m3) */
	const char *written = v.str ? v.str : dtype_name(v.dtype);
	struct diag *d = eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be a precision policy, but %s is "
				    "a dtype", what, written);
	struct strbuf sb;

	strbuf_init(&sb);
	for (size_t i = 0; i < scope_count(ev->scope); i++) {
		const struct decl *p = scope_at(ev->scope, i);
		const struct field *w = p->kind == DECL_PRECISION ? eval_record_field(ev->scope, p, "weights") : NULL;
		const struct field *c = p->kind == DECL_PRECISION ? eval_record_field(ev->scope, p, "compute") : NULL;
		struct value wv = w ? eval_expr(ev, NULL, w->value) : val_error(NO_LOC);
		struct value cv = c ? eval_expr(ev, NULL, c->value) : val_error(NO_LOC);

		if ((wv.kind == VAL_DTYPE && wv.dtype == v.dtype) || (cv.kind == VAL_DTYPE && cv.dtype == v.dtype))
			strbuf_addf(&sb, "%s%s (weights %s, compute %s)", sb.len ? ", " : "", p->name,
				    wv.kind == VAL_DTYPE ? dtype_name(wv.dtype) : "?",
				    cv.kind == VAL_DTYPE ? dtype_name(cv.dtype) : "?");
	}
	if (sb.len) {
		diag_note(d, NO_LOC, "the policies that use %s: %s", dtype_name(v.dtype), sb.buf);
		strbuf_release(&sb);
		return;
	}
	const char *name, *import = NULL, *file = NULL;
	enum decl_kind k;

	/* none in scope: the stdlib's, by name (the index reads no fields) */
	for (size_t i = 0; eval_stdlib_at(ev, i, &name, &k, &import); i++)
		if (k == DECL_PRECISION && (strstr(name, dtype_name(v.dtype)) || strstr(name, written))) {
			strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", name);
			file = import;
		}
	if (file)
		diag_note(d, NO_LOC, "the stdlib's \"%s\" has %s: add import \"%s\"", file, sb.buf, file);
	strbuf_release(&sb);
}

static bool check_kind(struct eval *ev, struct value v, const char *type, const char *what)
{
	if (!strncmp(type, "enum:", 5))
		return check_enum(ev, v, type + 5, what);
	if (!strcmp(type, "model|policy")) {
		if (v.kind == VAL_SYMBOL && !strcmp(v.str, "policy"))
			return true;
		type = "model";
	}
	if (!strcmp(type, "cluster")) {
		if (v.kind == VAL_CLUSTER || v.kind == VAL_ERROR)
			return v.kind == VAL_CLUSTER;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be written 'N x GPU' or 'NODES x N x GPU'", what);
		return false;
	}
	if (!strcmp(type, "finetune")) {
		/* adapter, adapter_v2: LitGPT's LLaMA-Adapter (lit_gpt/adapter.py, adapter_v2.py) */
		bool named = (v.kind == VAL_SYMBOL || v.kind == VAL_CALL) && v.str;
		bool adapter = named && (!strcmp(v.str, "adapter") || !strcmp(v.str, "adapter_v2"));

		if ((v.kind == VAL_SYMBOL && (!strcmp(v.str, "full") || adapter)) ||
		    (v.kind == VAL_CALL && (!strcmp(v.str, "lora") || !strcmp(v.str, "qlora") || adapter)))
			return true;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be full, lora(...), qlora(...), adapter or "
			   "adapter_v2 (with a quantised base: adapter(quant = nf4, ...))", what);
		return false;
	}
	if (!strcmp(type, "precision")) {
		if (v.kind == VAL_DECL && v.decl->kind == DECL_PRECISION)
			return true;
		if (v.kind == VAL_SYMBOL)
			return undefined_name_of(ev, &v, DECL_PRECISION), false;
		if (v.kind == VAL_DTYPE)
			return precision_is_dtype(ev, v, what), false;
	}
	return eval_is_type(ev, v, type, what, v.loc);
}

static void keep(struct eval *ev, struct check_job *j, const char *name, struct value v)
{
	if (j->nfields == j->capfields) {
		unsigned cap = j->capfields ? j->capfields * 2 : 16;
		/* raw: an element is read only below nfields, once written */
		struct value *f = arena_alloc_raw(ev->arena, arena_array_size(sizeof *f, cap));
		const char **n = arena_alloc_raw(ev->arena, arena_array_size(sizeof *n, cap));

		if (j->nfields) {
			memcpy(f, j->fields, j->nfields * sizeof *f);
			memcpy(n, j->names, j->nfields * sizeof *n);
		}
		j->fields = f;
		j->names = n;
		j->capfields = cap;
	}
	j->names[j->nfields] = name;
	j->fields[j->nfields++] = v;
	check_job_index_key(j, name);
}

/* Whether @word is one of the "a|b|c" alternatives. A key's own words win
 * over declarations: `attention = eager` means the enum value even when the
 * file also declares `train eager`. */
static bool is_enum_word(const char *alts, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = alts; *p; p = strchr(p, '|') ? strchr(p, '|') + 1 : p + strlen(p)) {
		const char *end = strchr(p, '|');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, word, n))
			return true;
	}
	return false;
}

/*
 * The key @prefix@name, and the same quoted for messages, in one
 * allocation: "'key'\0key\0". Every field of every block asks for both,
 * and two concatenations cost a quarter of reading a field.
 */
static const char *quoted_key(struct arena *a, const char *prefix, const char *name, const char **key)
{
	size_t np = strlen(prefix), nn = strlen(name);
	char *q = arena_alloc_raw(a, arena_array_size(2, np + nn) + 4), *k = q + np + nn + 3;

	q[0] = '\'';
	memcpy(q + 1, prefix, np);
	memcpy(q + 1 + np, name, nn);
	memcpy(q + 1 + np + nn, "'", 2);
	memcpy(k, q + 1, np + nn);
	k[np + nn] = '\0';
	*key = k;
	return q;
}

static void train_field(struct eval *ev, struct check_job *j, const struct field *f, const char *prefix,
			const struct field_spec *specs)
{
	const struct field_spec *s = check_spec_find(specs, f->name);
	const char *key, *what = quoted_key(ev->arena, prefix, f->name, &key);

	if (!s) {
		check_unknown_field(ev, specs, f, prefix[0] ? "this record" : "a train block");
		j->ok = false;	/* a misspelt key: do not also call it missing */
		return;
	}
	/* `zero { ... }` would flatten into keys nothing reads (zero.x) */
	if (strcmp(s->type, "record") && (f->sub || !f->value)) {
		eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s must be a value, not a block: write '%s = ...'",
			   what, f->name);
		j->ok = false;
		return;
	}
	if (!strcmp(s->type, "record") || f->sub) {
		if (!f->sub && f->value)
			eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s is written '%s { ... }'", what, f->name);
		for (const struct field *g = f->sub; g; g = g->next)
			if (!check_duplicate_field(ev, f->sub, g))
				train_field(ev, j, g, arena_concat(ev->arena, f->name, ".", (char *)NULL),
					    check_train_sub_specs(f->name));
		return;
	}
	struct value v = eval_expr(ev, NULL, f->value);

	if (!strncmp(s->type, "enum:", 5) && f->value->kind == EXPR_NAME &&
	    (v.kind == VAL_DECL || v.kind == VAL_INSTANCE) && is_enum_word(s->type + 5, f->value->name.name))
		v = (struct value){ .kind = VAL_SYMBOL, .str = f->value->name.name, .loc = v.loc, .origin = v.loc };
	/* `value_model = policy`: the policy's architecture (rl, build_rl.c) */
	if (!strcmp(s->type, "model|policy") && f->value->kind == EXPR_NAME && !strcmp(f->value->name.name, "policy"))
		v = (struct value){ .kind = VAL_SYMBOL, .str = f->value->name.name, .loc = v.loc, .origin = v.loc };
	else if (!strncmp(s->type, "model", 5) || !strcmp(s->type, "optimizer") || !strcmp(s->type, "precision"))
		v = as_decl(ev, f->value, v, !strncmp(s->type, "model", 5) ? DECL_MODEL :
			    !strcmp(s->type, "optimizer") ? DECL_OPTIMIZER : DECL_PRECISION);
	v.origin = f->loc;
	if (!v.label || (v.kind != VAL_INSTANCE && v.kind != VAL_DECL))
		v.label = f->name;	/* "tp (3)" in notes; a model keeps its own name */
	/* only a number has a range: the table is not searched for the others */
	if (check_kind(ev, v, s->type, what) &&
	    (v.kind != VAL_NUM || check_range(ev, v, check_range_of(check_train_ranges, key), what)))
		keep(ev, j, key, v);
	else
		j->ok = false;
}

/* A count key with its default; @v gets the key's value for notes. */
uint64_t check_count_key(struct eval *ev, const struct check_job *j, const char *key, uint64_t def,
			  struct value *v)
{
	uint64_t u = def;

	if (check_job_field(j, key, v))
		eval_to_u64(ev, *v, key, &u);
	else
		*v = val_count(def, j->decl->name_loc);
	v->label = strrchr(key, '.') ? strrchr(key, '.') + 1 : key;
	return u;
}

/* micro_batch, seq_len and grad_accum of 0 would make every tensor empty:
 * say so at the line, not deep inside a stdlib shape. */
static bool positive_keys(struct eval *ev, struct check_job *j)
{
	static const char *const keys[] = { "micro_batch", "seq_len", "target_len", "grad_accum", "parallel.tp",
					    "parallel.pp", "parallel.cp", "parallel.ep", "parallel.vp" };
	bool ok = true;

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		struct value v;

		if (check_job_field(j, keys[i], &v) && v.kind == VAL_NUM && !v.unknown &&
		    num_sign(v.num) <= 0) {
			eval_error(ev, DIAG_BAD_SHAPE, v.loc, "'%s' must be at least 1", keys[i]);
			ok = false;
		}
	}
	struct value z;

	if (check_job_field(j, "zero", &z) && z.kind == VAL_NUM &&
	    (num_sign(z.num) < 0 || num_cmp(z.num, num_from_int(3)) > 0)) {
		eval_error(ev, DIAG_TYPE_MISMATCH, z.loc, "'zero' is a DeepSpeed stage: 0, 1, 2 or 3");
		ok = false;
	}
	return ok;
}

/* optimizer_in_backward steps each parameter as its gradient is made and
 * frees it, so no gradient is left to accumulate: torchtune's recipes raise
 * "Gradient accumulation is not supported with optimizer in bwd"
 * (recipes/full_finetune_single_device.py and
 * full_finetune_distributed.py, __init__). */
static bool in_backward_ok(struct eval *ev, const struct check_job *j)
{
	struct value o, g;

	if (!check_job_field(j, "optimizer_in_backward", &o) || o.kind != VAL_BOOL || !o.b ||
	    !check_job_field(j, "grad_accum", &g) || g.kind != VAL_NUM || g.unknown ||
	    num_cmp(g.num, num_from_int(1)) <= 0)
		return true;
	diag_note(eval_error(ev, DIAG_IGNORED_SETTING, o.origin, "'optimizer_in_backward' steps the "
			     "optimizer inside each backward, so no gradient is kept to accumulate "
			     "(torchtune raises 'Gradient accumulation is not supported with optimizer "
			     "in bwd'): set grad_accum = 1 or optimizer_in_backward = false"),
		  g.origin, "'grad_accum' is set here");
	return false;
}

/* The location of top-level key @key of @j's block (a sub-record too). */
struct loc check_key_loc(const struct check_job *j, const char *key)
{
	for (const struct field *f = j->block; f; f = f->next)
		if (!strcmp(f->name, key))
			return f->loc;
	return NO_LOC;
}

/* 1 to CHECK_MAX_GPUS whole GPUs: `0 x A100` or `2.5 x A100` would leave
 * nothing, or nonsense, to divide. */
static bool cluster_ok(struct eval *ev, const struct check_job *j)
{
	uint64_t nodes = 0, per = 0;
	const struct value *c = &j->cluster;

	if (c->kind != VAL_CLUSTER)
		return true;
	if (!num_is_int(c->gpus) || !num_is_int(c->nodes) || !num_to_u64(c->gpus, &per) ||
	    !num_to_u64(c->nodes, &nodes) || !per || !nodes || per > CHECK_MAX_GPUS ||
	    nodes > CHECK_MAX_GPUS || nodes * per > CHECK_MAX_GPUS) {
		eval_error(ev, DIAG_OUT_OF_RANGE, c->loc, "a cluster has 1 to %d GPUs, in whole numbers of "
			   "nodes and GPUs per node", CHECK_MAX_GPUS);
		return false;
	}
	return true;
}

bool check_sym_is(const struct check_job *j, const char *key, const char *sym)
{
	struct value v;

	return check_job_field(j, key, &v) && (v.kind == VAL_SYMBOL || v.kind == VAL_STRING) &&
	       !strcmp(v.str, sym);
}

static bool degree_above_1(const struct check_job *j, const char *key)
{
	struct value v;

	return check_job_field(j, key, &v) && v.kind == VAL_NUM && num_cmp(v.num, num_from_int(1)) > 0;
}

/* vp needs the interleaved schedule and pp > 1, a schedule other than the
 * default and an uneven or accounted split pp > 1; sequence parallelism
 * splits the tp group's sequence, so it needs tp > 1. */
static bool parallel_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	if (check_job_field(j, "parallel.vp", &v) && degree_above_1(j, "parallel.vp") &&
	    ((!check_sym_is(j, "parallel.schedule", "interleaved") &&
	      !check_sym_is(j, "parallel.schedule", "interleaved_zb")) || !degree_above_1(j, "parallel.pp"))) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'vp' chunks a pipeline stage only with pp > 1 "
			   "and schedule = \"interleaved\" or \"interleaved_zb\"");
		ok = false;
	}
	/* 1F1B is the default: only another order says something pp = 1 drops */
	if (check_job_field(j, "parallel.schedule", &v) && v.kind == VAL_STRING && strcmp(v.str, "1f1b") &&
	    !degree_above_1(j, "parallel.pp")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'schedule' orders the micro-batches over "
			   "pipeline stages: it needs pp > 1");
		ok = false;
	}
	static const char prefix[] = "parallel.";
	static const char *const split[] = { "parallel.first_stage_layers", "parallel.last_stage_layers",
					     "parallel.account_for_embedding", "parallel.account_for_loss",
					     "parallel.stage_layers" };

	for (size_t i = 0; i < sizeof split / sizeof split[0] && !degree_above_1(j, "parallel.pp"); i++)
		if (check_job_field(j, split[i], &v) && (v.kind != VAL_BOOL || v.b)) {
			eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' places layers on pipeline "
				   "stages: it needs pp > 1", split[i] + sizeof prefix - 1);
			ok = false;
		}
	if (check_job_field(j, "parallel.sequence_parallel", &v) && v.kind == VAL_BOOL && v.b &&
	    !degree_above_1(j, "parallel.tp")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'sequence_parallel' splits the sequence over "
			   "the tp ranks: it needs tp > 1");
		ok = false;
	}
	/* the PipelineStage's schedule.step() (analyzer/lower/build_job_layout.c
	 * pp_return_outputs): only an fsdp2 job with pp > 1 has one */
	if (check_job_field(j, "parallel.return_outputs", &v) && v.kind == VAL_BOOL &&
	    (!degree_above_1(j, "parallel.pp") || !check_fsdp2_present(j))) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'return_outputs' is torch.distributed."
			   "pipelining's schedule.step(return_outputs=...): it needs pp > 1 and 'fsdp2 { }'");
		ok = false;
	}
	/* Megatron-Core's knob; torch's ScheduleInterleaved1F1B has none (its
	 * rounds are microbatches_per_round) */
	if (check_job_field(j, "parallel.microbatch_group_size_per_vp_stage", &v) &&
	    (!check_sym_is(j, "parallel.schedule", "interleaved") || !degree_above_1(j, "parallel.vp") ||
	     !degree_above_1(j, "parallel.pp") || check_fsdp2_present(j))) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'microbatch_group_size_per_vp_stage' is "
			   "Megatron-Core's interleaved schedule: it needs pp > 1, vp > 1 and schedule = "
			   "\"interleaved\", without 'fsdp2 { }' (torch.distributed.pipelining has no such knob)");
		ok = false;
	}
	return ok;
}

/* offload { } as the frameworks take it: DeepSpeed's offload_param is
 * "valid only with stage 3"; PyTorch FSDP's CPUOffload moves the parameters
 * (and with them gradients and the optimizer step) to the CPU only. */
static bool offload_ok(struct eval *ev, const struct check_job *j, uint64_t zero, bool fsdp)
{
	struct value p, o;
	bool par = check_job_field(j, "offload.params", &p) && p.kind != VAL_NONE;
	bool opt = check_job_field(j, "offload.optimizer", &o) && o.kind != VAL_NONE;

	if (par && !fsdp && zero < 3) {
		eval_error(ev, DIAG_IGNORED_SETTING, p.origin, "'offload { params }' moves the ZeRO-3 or FSDP "
			   "parameter shards, but %s: use zero = 3 or fsdp", zero ? "ZeRO-1/2 keep every "
			   "parameter on the GPU" : "nothing shards the parameters");
		return false;
	}
	if (fsdp && opt && !par) {
		eval_error(ev, DIAG_IGNORED_SETTING, o.origin, "FSDP has no optimizer-only offload: "
			   "CPUOffload(offload_params=True) moves the optimizer with the parameters; "
			   "write offload { params = cpu }");
		return false;
	}
	if (fsdp && par && check_sym_is(j, "offload.params", "nvme")) {
		eval_error(ev, DIAG_IGNORED_SETTING, p.origin, "FSDP offloads to the CPU only: params = cpu "
			   "(NVMe is DeepSpeed ZeRO-Infinity's, zero = 3)");
		return false;
	}
	return true;
}

static bool needs_full(struct eval *ev, const struct check_job *j, const char *key, const char *what)
{
	struct value v;

	if (!check_job_field(j, key, &v) || v.kind == VAL_NONE || check_sym_is(j, "checkpoint", "full"))
		return true;
	eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' %s; it needs 'checkpoint = full'", key, what);
	return false;
}

/* Which layers full recompute covers: torchtitan's every N-th block, or
 * Megatron's --recompute-method/--recompute-num-layers. Megatron's uniform
 * method with more than one layer per unit checkpoints groups of layers,
 * which memc does not model. */
static bool layer_policy_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, n;
	bool ok = needs_full(ev, j, "checkpoint_every", "picks the checkpointed blocks") &
		  needs_full(ev, j, "recompute_method", "picks the recomputed layers") &
		  needs_full(ev, j, "recompute_num_layers", "picks the recomputed layers");
	bool has_n = check_job_field(j, "recompute_num_layers", &n) && n.kind == VAL_NUM;
	bool block = check_sym_is(j, "recompute_method", "block");

	if (check_job_field(j, "checkpoint_every", &v) && (block || has_n)) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'checkpoint_every' (torchtitan) and "
			   "'recompute_method'/'recompute_num_layers' (Megatron) both pick layers: use one");
		ok = false;
	}
	/* written but refused (out-of-range) is not missing: one error is enough */
	if (block && !has_n && !check_key_loc(j, "recompute_num_layers").file) {
		eval_error(ev, DIAG_MISSING_FIELD, check_key_loc(j, "recompute_method"),
			   "'recompute_method = block' needs 'recompute_num_layers'");
		ok = false;
	}
	if (has_n && !block && num_cmp(n.num, num_from_int(1)) > 0) {
		eval_error(ev, DIAG_OUT_OF_RANGE, n.origin, "'recompute_method = uniform' with more than one "
			   "layer per checkpoint is not modelled: memc recomputes layer by layer (1)");
		ok = false;
	}
	return ok;
}

/* A word of a list: `mlp` may also name a stdlib layer, so a declaration
 * counts by its name. */
const char *check_list_word(const struct value *v)
{
	if (v->kind == VAL_SYMBOL || v->kind == VAL_STRING)
		return v->str;
	return v->kind == VAL_DECL || v->kind == VAL_INSTANCE ? v->decl->name : NULL;
}

/* megatron { recompute_modules }: Megatron's module names, under
 * --recompute-granularity selective only. */
static bool recompute_modules_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	if (!check_job_field(j, "megatron.recompute_modules", &v) || v.kind != VAL_LIST)
		return true;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		const char *w = check_list_word(it);

		if (it->kind != VAL_ERROR && (!w || !check_is_recompute_module(w))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'recompute_modules' lists Megatron modules: "
				   "core_attn, mlp, moe, moe_act, layernorm, mla_up_proj, shared_experts");
			ok = false;
		}
	}
	if (!check_sym_is(j, "checkpoint", "selective")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'recompute_modules' is Megatron's "
			   "'--recompute-granularity selective' (checkpoint = selective); other modes ignore it");
		ok = false;
	}
	return ok;
}

/* megatron { cpu_offloading_num_layers }: what Megatron-Core's
 * TransformerConfig.__post_init__ refuses with --cpu-offloading (pp > 1,
 * recomputation), and cpu_offloading_activations = false, with which
 * Transformer Engine offloads nothing (its weight offload is deprecated). */
static bool cpu_offloading_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, a;

	if (!check_job_field(j, "megatron.cpu_offloading_num_layers", &v) || v.kind != VAL_NUM ||
	    num_sign(v.num) <= 0)
		return true;
	if (degree_above_1(j, "parallel.pp")) {
		eval_error(ev, DIAG_BAD_LAYOUT, v.origin, "Megatron-Core has no CPU offloading under "
			   "pipeline parallelism ('Currently there is no support for Pipeline parallelism "
			   "with CPU offloading'); remove cpu_offloading_num_layers or set pp = 1");
		return false;
	}
	if (check_job_field(j, "checkpoint", &a) && !check_sym_is(j, "checkpoint", "none")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "Megatron-Core's CPU offloading 'does not "
			   "work when activation recomputation is enabled'; set checkpoint = none or remove "
			   "cpu_offloading_num_layers");
		return false;
	}
	if (check_job_field(j, "megatron.cpu_offloading_activations", &a) && a.kind == VAL_BOOL && !a.b) {
		eval_error(ev, DIAG_IGNORED_SETTING, a.origin, "with cpu_offloading_activations = false "
			   "Transformer Engine offloads nothing (weight offload is deprecated and has no "
			   "effect); remove cpu_offloading_num_layers or set it to true");
		return false;
	}
	return true;
}

/* compile_components: torchtitan's compile.components, under compile = true. */
static bool compile_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, c;
	bool ok = true;

	if (!check_job_field(j, "compile_components", &v) || v.kind != VAL_LIST)
		return true;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		const char *w = check_list_word(it);

		if (it->kind != VAL_ERROR && (!w || (strcmp(w, "model") && strcmp(w, "loss")))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'compile_components' lists what "
				   "torch.compile wraps: model (each transformer block), loss");
			ok = false;
		}
	}
	if (!check_job_field(j, "compile", &c) || c.kind != VAL_BOOL || !c.b) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'compile_components' names what "
			   "'compile = true' compiles; without it nothing is compiled");
		ok = false;
	}
	return ok;
}

/* Whether the job (or the block it inherits from) writes data { @key }. */
static bool data_key_written(const struct check_job *j, const char *key)
{
	for (const struct field *f = j->block; f; f = f->next)
		if (!strcmp(f->name, "data"))
			for (const struct field *g = f->sub; g; g = g->next)
				if (!strcmp(g->name, key))
					return true;
	return false;
}

/* data { min_seq_len, later_seq_len } bound the lengths of padding =
 * longest (§5.4); @path is "data.<key>", spelt out by the caller, no
 * format per block. */
static bool data_len_ok(struct eval *ev, const struct check_job *j, const char *path)
{
	struct value m, s, p;
	const char *key = path + sizeof "data." - 1;

	if (!check_job_field(j, path, &m) || m.kind != VAL_NUM)
		return true;
	/* a padding written but refused (type-mismatch, e.g. "longest" as a
	 * string) is not kept: what it meant is unknown, so the bounds are not
	 * called ignored on top of that error */
	if (!check_job_field(j, "data.padding", &p) && data_key_written(j, "padding"))
		return true;
	if (!check_sym_is(j, "data.padding", "longest")) {
		eval_error(ev, DIAG_IGNORED_SETTING, m.origin, "'%s' bounds the batch lengths "
			   "of 'padding = longest'; other padding makes every batch 'seq_len' long", key);
		return false;
	}
	if (check_job_field(j, "seq_len", &s) && s.kind == VAL_NUM && num_cmp(m.num, s.num) > 0) {
		eval_error(ev, DIAG_OUT_OF_RANGE, m.origin, "'%s' is above 'seq_len', the "
			   "longest batch: it must be at most that", key);
		return false;
	}
	return true;
}

static bool data_ok(struct eval *ev, const struct check_job *j)
{
	bool a = data_len_ok(ev, j, "data.min_seq_len"), b = data_len_ok(ev, j, "data.later_seq_len");
	struct value m, l;

	/* a later batch is padded to its own longest sample, which is no
	 * shorter than the shortest sample there is */
	if (a && b && check_job_field(j, "data.min_seq_len", &m) && m.kind == VAL_NUM &&
	    check_job_field(j, "data.later_seq_len", &l) && l.kind == VAL_NUM && num_cmp(l.num, m.num) < 0) {
		diag_note(eval_error(ev, DIAG_OUT_OF_RANGE, l.origin, "'later_seq_len' is below 'min_seq_len', "
				     "the shortest batch: it must be at least that"), m.origin, "'min_seq_len' is set here");
		return false;
	}
	return a && b;
}

/* A PYTORCH_CUDA_ALLOC_CONF key turns the replay on (build_job_buffers.c
 * alloc_conf); beside replay = false it would change no figure. */
static bool alloc_ok(struct eval *ev, const struct check_job *j)
{
	static const char *const conf[] = { "alloc.max_split_size_mb", "alloc.roundup_power2_divisions",
					    "alloc.garbage_collection_threshold", "alloc.expandable_segments" };
	struct value r, v;

	if (!check_job_field(j, "alloc.replay", &r) || r.kind != VAL_BOOL || r.b)
		return true;
	for (size_t i = 0; i < sizeof conf / sizeof conf[0]; i++)
		if (check_job_field(j, conf[i], &v)) {
			diag_note(eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'%s' configures the caching "
					     "allocator that 'replay' replays; with 'replay = false' it changes "
					     "nothing: drop one", conf[i] + sizeof "alloc." - 1),
				  r.origin, "'replay = false' is set here");
			return false;
		}
	return true;
}

/* checkpoint_saves lists ops (as op() tags name them) for the op-level
 * policy; another checkpoint mode would ignore it. */
static bool checkpoint_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;
	bool ok = true;

	ok = layer_policy_ok(ev, j);
	ok = recompute_modules_ok(ev, j) && ok;
	ok = cpu_offloading_ok(ev, j) && ok;
	ok = compile_ok(ev, j) && ok;
	if (!check_job_field(j, "checkpoint_saves", &v) || v.kind != VAL_LIST)
		return ok;
	for (unsigned i = 0; i < v.nitems; i++) {
		const struct value *it = &v.items[i];
		bool sym = it->kind == VAL_SYMBOL || it->kind == VAL_STRING;

		if (it->kind != VAL_ERROR && (!sym || (strcmp(it->str, "mm") && strcmp(it->str, "sdpa")))) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'checkpoint_saves' lists ops: mm, sdpa");
			ok = false;
		}
	}
	if (!check_sym_is(j, "checkpoint", "selective_op")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'checkpoint_saves' is the save list of "
			   "'checkpoint = selective_op'; other modes ignore it");
		ok = false;
	}
	return ok;
}

/* DeepSpeed's PipelineEngine asserts zero_optimization_stage() < 2 in its
 * __init__ (deepspeed/runtime/pipe/engine.py): ZeRO-2/3 shard the gradients
 * the pipeline schedule reduces itself. zero = 2|3 is always DeepSpeed;
 * Megatron's distributed optimizer is zero = 1 and FSDP is fsdp. */
static bool pipeline_zero_ok(struct eval *ev, const struct check_job *j, const struct value *z,
			     uint64_t zero)
{
	struct value pp;

	if (zero < 2 || !degree_above_1(j, "parallel.pp") || !check_job_field(j, "parallel.pp", &pp))
		return true;
	diag_note(eval_error(ev, DIAG_BAD_LAYOUT, z->origin, "DeepSpeed's pipeline engine runs ZeRO "
			     "stage 0 or 1 only ('ZeRO-2 and ZeRO-3 are incompatible with pipeline "
			     "parallelism'): use zero = 1 with pp > 1, or pp = 1"),
		  pp.origin, "'pp' is set here");
	return false;
}

/* Settings that another setting makes meaningless: each is an error at
 * the key that would be ignored. */
static bool sharding_ok(struct eval *ev, const struct check_job *j)
{
	struct value z, fs, v;
	uint64_t zero = 0;
	bool fsdp1 = check_job_field(j, "fsdp", &fs) && fs.kind != VAL_NONE && !check_sym_is(j, "fsdp", "none");
	bool fsdp = fsdp1 || check_fsdp2_present(j);	/* fsdp2 { } alone is full_shard */
	bool ok = check_fsdp2(ev, j);

	if (check_job_field(j, "zero", &z))
		num_to_u64(z.num, &zero);
	if (zero > 0 && fsdp1) {
		diag_note(eval_error(ev, DIAG_IGNORED_SETTING, fs.origin, "'fsdp' and 'zero = %llu' both shard the "
				     "model (PyTorch FSDP or DeepSpeed ZeRO): use one", (unsigned long long)zero),
			  z.origin, "'zero' is set here");
		ok = false;
	}
	ok &= pipeline_zero_ok(ev, j, &z, zero);
	if (check_key_loc(j, "ddp").file && (zero > 0 || fsdp)) {
		eval_error(ev, DIAG_IGNORED_SETTING, check_key_loc(j, "ddp"), "'ddp { }' sets DistributedDataParallel's "
			   "buckets, but %s does the reduction: remove it (DeepSpeed's buckets are "
			   "'deepspeed { reduce_bucket_size }')", zero > 0 ? "DeepSpeed ZeRO" : "FSDP");
		ok = false;
	}
	if (check_key_loc(j, "fsdp1").file && !fsdp) {
		eval_error(ev, DIAG_IGNORED_SETTING, check_key_loc(j, "fsdp1"),
			   "'fsdp1 { }' sets FullyShardedDataParallel's arguments, but 'fsdp' is none: "
			   "add 'fsdp = full_shard' (or another strategy) or remove it");
		ok = false;
	}
	if (check_key_loc(j, "fsdp1").file && check_fsdp2_present(j)) {
		eval_error(ev, DIAG_IGNORED_SETTING, check_key_loc(j, "fsdp1"),
			   "'fsdp1 { }' describes FullyShardedDataParallel and 'fsdp2 { }' fully_shard: "
			   "a model is wrapped by one of them, remove the other");
		ok = false;
	}
	if (check_key_loc(j, "deepspeed").file && zero == 0) {
		eval_error(ev, DIAG_IGNORED_SETTING, check_key_loc(j, "deepspeed"),
			   "'deepspeed { }' applies to ZeRO stages 1 to 3, but 'zero' is 0");
		ok = false;
	}
	if (check_job_field(j, "parallel.schedule", &v) && v.kind == VAL_STRING &&
	    strcmp(v.str, "1f1b") && strcmp(v.str, "interleaved") && strcmp(v.str, "gpipe") &&
	    strcmp(v.str, "zb_h1") && strcmp(v.str, "zb_h2") && strcmp(v.str, "dualpipe") &&
	    strcmp(v.str, "dualpipev") && strcmp(v.str, "zbv") && strcmp(v.str, "interleaved_zb")) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'schedule' must be \"1f1b\", \"interleaved\", "
			   "\"gpipe\", \"zb_h1\", \"zb_h2\", \"dualpipe\", \"dualpipev\", \"zbv\" or "
			   "\"interleaved_zb\"");
		ok = false;
	}
	return ok & parallel_ok(ev, j) & offload_ok(ev, j, zero, fsdp);
}

static void job_tensor(void *ctx, const struct walk_tensor *t)
{
	struct check_model *m = ctx;

	check_tensor_attrs(m->ev, t);
	check_model_tensor(m, t);
}

static void job_repeat_enter(void *ctx, const struct stmt *s, struct value count)
{
	(void)s;
	check_model_repeat_enter(ctx, count);
}

static void job_repeat_leave(void *ctx, const struct stmt *s)
{
	(void)s;
	check_model_repeat_leave(ctx);
}

/* parallel { stage_layers }: one count per model chunk in stage order (pp
 * x vp interleaved, 2 pp for the V schedules), adding up to the model's
 * repeats; 0 is a stage without layers, which Megatron-Core's
 * --pipeline-model-parallel-layout accepts ("E|t*4|..."); it states what
 * first/last_stage_layers and account_for_* derive.
 * mem_pipeline.c split_list holds the analyzer to the same rules. */
static void check_stage_layers(struct eval *ev, const struct check_model *m, const struct check_job *j,
			       uint64_t pp, uint64_t vp)
{
	static const char *const derived[] = { "parallel.first_stage_layers", "parallel.last_stage_layers",
					       "parallel.account_for_embedding", "parallel.account_for_loss" };
	struct value l, k;
	uint64_t n, sum = 0, u;
	bool over = false;
	bool v2 = check_sym_is(j, "parallel.schedule", "dualpipev") || check_sym_is(j, "parallel.schedule", "zbv");
	bool inter = check_sym_is(j, "parallel.schedule", "interleaved") ||
		     check_sym_is(j, "parallel.schedule", "interleaved_zb");

	if (!check_job_field(j, "parallel.stage_layers", &l) || l.kind != VAL_LIST || pp <= 1)
		return;
	for (size_t i = 0; i < sizeof derived / sizeof derived[0]; i++)
		if (check_job_field(j, derived[i], &k) && (k.kind != VAL_BOOL || k.b)) {
			eval_error(ev, DIAG_BAD_LAYOUT, k.origin, "'%s' cannot be combined with stage_layers, "
				   "which states every stage's layers; drop one", derived[i] + 9);
			return;
		}
	n = v2 ? 2 * pp : inter ? pp * vp : pp;
	if (l.nitems != n) {
		eval_error(ev, DIAG_BAD_LAYOUT, l.origin, "stage_layers has %u entries, but pp = %llu%s has "
			   "%llu model chunks: give one layer count per chunk, in stage order", l.nitems,
			   (unsigned long long)pp, v2 ? " with a V schedule (2 stages per rank)" : inter && vp > 1 ?
			   arena_printf(ev->arena, " x vp = %llu", (unsigned long long)vp) : "",
			   (unsigned long long)n);
		return;
	}
	for (unsigned i = 0; i < l.nitems; i++) {
		const struct value *x = &l.items[i];
		struct loc at = x->origin.file ? x->origin : l.origin;

		if (x->kind != VAL_NUM || !dim_is_scalar(x->dim) || !num_is_int(x->num) ||
		    !num_to_u64(x->num, &u)) {
			eval_error(ev, DIAG_TYPE_MISMATCH, at, "a stage_layers entry must be a layer count (0 or more)");
			return;
		}
		over |= __builtin_add_overflow(sum, u, &sum);
	}
	if (m->body_known && m->have_body && (over || sum != m->body))
		eval_error(ev, DIAG_BAD_LAYOUT, l.origin, "stage_layers adds up to %s layers, but %s has %llu "
			   "repeated layers", over ? "at least 2^64" : arena_printf(ev->arena, "%llu",
			   (unsigned long long)sum), j->model.label ? j->model.label : "the model",
			   (unsigned long long)m->body);
}

/* rope_cache adds buffers only where a layer reads it (the stdlib's
 * hf_rotary_cache, in the families whose transformers 4.39 class kept
 * the tables): on another model it would change nothing. */
static void check_rope_read(struct eval *ev, const struct check_model *m, const struct check_job *j)
{
	struct value v;

	if (!check_job_field(j, "rope_cache", &v) || v.kind != VAL_DTYPE)
		return;
	/* torch.set_default_dtype takes a floating type only */
	if (v.dtype->kind != DTYPE_FLOAT || v.dtype->bits < 16 || dtype_is_block_scaled(v.dtype))
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "rope_cache must be a float dtype of 16 bits or more "
			   "(bf16, fp16, fp32): torch's default dtype, which builds the caches, is one, and "
			   "not %s", dtype_name(v.dtype));
	else if (!m->rope_read)
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc, "'rope_cache' counts "
			   "transformers' per-layer rotary cos/sin buffers, but no layer of %s reads it "
			   "(the stdlib's Llama, Mistral, Mixtral, Qwen2, Phi-2 and Falcon models call "
			   "hf_rotary_cache; transformers 4.39's other classes kept no such buffer); drop it",
			   j->model.label ? j->model.label : "the model");
}

/* torchtune { rope_cache, max_seq_len }: the table's dtype and length are
 * the builder's, so both are needed, and a model none of whose layers calls
 * torchtune_rotary_cache keeps no such buffer. */
static void check_tt_rope(struct eval *ev, const struct check_model *m, const struct check_job *j)
{
	struct value v, n, sh;
	bool dt = check_job_field(j, "torchtune.rope_cache", &v) && v.kind == VAL_DTYPE;
	bool len = check_job_field(j, "torchtune.max_seq_len", &n) && n.kind == VAL_NUM;
	const char *name = j->model.label ? j->model.label : "the model";

	if (!dt) {
		if (len)
			eval_error(ev, DIAG_IGNORED_SETTING, n.origin.file ? n.origin : n.loc, "'torchtune.max_seq_len' "
				   "is the length of the rotary cache 'torchtune.rope_cache' counts, which is not set: "
				   "add 'rope_cache = fp32' or drop it");
		if (check_job_field(j, "torchtune.shared_rope", &sh))
			eval_error(ev, DIAG_IGNORED_SETTING, sh.origin.file ? sh.origin : sh.loc, "'torchtune.shared_rope' "
				   "says how many rotary caches 'torchtune.rope_cache' counts, which is not set: "
				   "add 'rope_cache = fp32' or drop it");
		return;
	}
	if (v.dtype->kind != DTYPE_FLOAT || v.dtype->bits < 16 || dtype_is_block_scaled(v.dtype))
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "torchtune.rope_cache must be a float dtype of 16 "
			   "bits or more (fp32 as RotaryPositionalEmbeddings builds it, bf16 after a recipe's "
			   "model.to(torch.bfloat16)), not %s", dtype_name(v.dtype));
	else if (!len && !check_key_loc(j, "torchtune.max_seq_len").file)
		eval_error(ev, DIAG_MISSING_FIELD, v.origin.file ? v.origin : v.loc, "'torchtune.rope_cache' "
			   "needs 'max_seq_len', the model builder's (torchtune's llama2_7b and llama3_8b: 4096), "
			   "which sets the cache's length");
	else if (check_job_field(j, "rope_cache", &sh))
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc, "'torchtune.rope_cache' "
			   "counts torchtune's rotary buffers and 'rope_cache' transformers' tables: a model is "
			   "built by one of them; drop one");
	else if (!m->tt_rope_read)
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin.file ? v.origin : v.loc, "'torchtune.rope_cache' "
			   "counts torchtune's RotaryPositionalEmbeddings buffers, but no layer of %s reads it "
			   "(the stdlib's Llama calls torchtune_rotary_cache); drop it", name);
}

/* Walk the model under the job; then what the job asks of the model. */
static void walk_job(struct eval *ev, struct check_job *j)
{
	static const struct walk_ops ops = { .tensor = job_tensor, .repeat_enter = job_repeat_enter,
					     .repeat_leave = job_repeat_leave };
	struct check_model m = { .ev = ev };
	unsigned before = diag_error_count(ev->diag);
	struct value pp, vp, sched;

	if (walk_cache_find(ev, j->model, j->bindings, &m)) {
		/* the walk leaves the instance's frame parented to the job's */
		if (j->model.kind == VAL_INSTANCE)
			env_set_parent(j->model.args, j->bindings);
	} else {
		unsigned long reports = ev->reports;

		ev->warn_job = j->bindings;
		ev->warn_train = j->decl;
		eval_walk(ev, j->model, j->bindings, &ops, &m);
		ev->warn_job = NULL;
		ev->warn_train = NULL;
		m.rope_read = env_was_read(j->bindings, intern_static(ev->interner, "rope_cache"));
		m.tt_rope_read = env_was_read(j->bindings, intern_static(ev->interner, "tt_rope"));
		if (ev->reports == reports && !ev->steps_reported)
			walk_cache_put(ev, j->model, j->bindings, &m);
	}
	if (diag_error_count(ev->diag) != before)
		return;
	check_count_key(ev, j, "parallel.pp", 1, &pp);
	check_count_key(ev, j, "parallel.vp", 1, &vp);
	bool interleaved = check_job_field(j, "parallel.schedule", &sched) && sched.kind == VAL_STRING &&
			   (!strcmp(sched.str, "interleaved") || !strcmp(sched.str, "interleaved_zb"));

	/* an uneven or accounted split has Megatron-Core's rules, and
	 * the V schedules' 2 pp stages their own, which the analyzer checks
	 * (mem_pipeline.c mem_pp_split) at the same lines */
	struct value k;
	bool uneven = check_sym_is(j, "parallel.schedule", "dualpipev") ||
		      check_sym_is(j, "parallel.schedule", "zbv") ||
		      check_job_field(j, "parallel.first_stage_layers", &k) ||
		      check_job_field(j, "parallel.last_stage_layers", &k) ||
		      check_job_field(j, "parallel.account_for_embedding", &k) ||
		      check_job_field(j, "parallel.account_for_loss", &k) ||
		      check_job_field(j, "parallel.stage_layers", &k);
	uint64_t p = 1, v = 1;

	num_to_u64(pp.num, &p);
	num_to_u64(vp.num, &v);
	check_stage_layers(ev, &m, j, p, v);
	check_rope_read(ev, &m, j);
	check_tt_rope(ev, &m, j);
	if (uneven || check_model_split(ev, &m, j, pp, vp, interleaved))
		check_model_names(ev, &m, j);
	/* transformer_config.py: "CPU offloading can be done only for layers
	 * less than num_layers" (the last layer is never offloaded) */
	uint64_t off = check_count_key(ev, j, "megatron.cpu_offloading_num_layers", 0, &k);

	if (off && m.body_known && m.have_body && off >= m.body)
		eval_error(ev, DIAG_OUT_OF_RANGE, k.origin, "cpu_offloading_num_layers = %llu must be "
			   "less than the model's %llu layers (Megatron-Core offloads all but the last)",
			   (unsigned long long)off, (unsigned long long)m.body);
}

/* ---- `train b : a`: a base job and its variants ---- */

static struct field *copy_field(struct arena *a, const struct field *f)
{
	struct field *c = ARENA_NEW(a, struct field);

	*c = *f;
	c->next = NULL;
	return c;
}

/* @base's keys, then @own's: a key of @own replaces the base's, and a
 * nested record (`parallel { }`) merges key by key. */
static struct field *merge_fields(struct arena *a, const struct field *base, const struct field *own)
{
	struct field *head = NULL, **tail = &head;

	for (const struct field *f = base; f; f = f->next, tail = &(*tail)->next)
		*tail = copy_field(a, f);
	for (const struct field *f = own; f; f = f->next) {
		struct field *m = head;

		while (m && strcmp(m->name, f->name))
			m = m->next;
		if (!m) {
			*tail = copy_field(a, f);
			tail = &(*tail)->next;
		} else if (m->sub && f->sub) {
			m->sub = merge_fields(a, m->sub, f->sub);
		} else {
			struct field *next = m->next;

			*m = *f;
			m->next = next;
		}
	}
	return head;
}

/* The chain b, a, ... up to a block with no base; false (reported) if a
 * base is unknown or the chain comes back to a block in it. */
static bool base_chain(struct eval *ev, const struct decl *d, const struct decl **chain, unsigned *n,
		       unsigned cap)
{
	for (*n = 0; d; d = d->record.base ? scope_find_kind_in(ev->scope, d->record.base, DECL_TRAIN,
								 d->record.base_loc.file) : NULL) {
		for (unsigned i = 0; i < *n; i++)
			if (chain[i] == d) {
				struct diag *g = eval_error(ev, DIAG_DEFINITION_CYCLE, chain[i]->record.base_loc,
							    "train block '%s' derives from itself", chain[i]->name);

				for (unsigned k = i + 1; k < *n; k++)
					diag_note(g, chain[k]->record.base_loc, "'%s' derives from '%s'",
						  chain[k]->name, chain[k]->record.base);
				return false;
			}
		if (*n == cap) {
			eval_error(ev, DIAG_DEFINITION_CYCLE, chain[0]->record.base_loc,
				   "train block '%s' derives through more than %u blocks", chain[0]->name, cap);
			return false;
		}
		chain[(*n)++] = d;
		if (d->record.base && !scope_find_kind_in(ev->scope, d->record.base, DECL_TRAIN,
							  d->record.base_loc.file)) {
			struct diag *g = eval_error(ev, DIAG_UNDEFINED_NAME, d->record.base_loc,
						    "no train block named '%s' to derive from", d->record.base);

			eval_note_undefined(ev, g, d->record.base, DECL_TRAIN);
			return false;
		}
	}
	return true;
}

/* The keys of @d, its bases' inherited; NULL with an error reported. */
static const struct field *train_block(struct eval *ev, const struct decl *d, bool *ok)
{
	const struct decl *chain[64];
	unsigned n = 0;
	const struct field *f = NULL;

	if (!d->record.base)
		return d->record.fields;
	if (!base_chain(ev, d, chain, &n, sizeof chain / sizeof chain[0])) {
		*ok = false;
		return NULL;
	}
	while (n-- > 0)
		f = merge_fields(ev->arena, f, chain[n]->record.fields);
	return f;
}

struct check_job *check_train(struct eval *ev, const struct decl *d)
{
	struct check_job *j = ARENA_NEW(ev->arena, struct check_job);
	unsigned before = diag_error_count(ev->diag);

	j->decl = d;
	j->ok = true;
	for (const struct field *f = d->record.fields; f; f = f->next)
		if (check_duplicate_field(ev, d->record.fields, f))
			j->ok = false;
	j->block = j->ok ? train_block(ev, d, &j->ok) : NULL;
	for (const struct field *f = j->block; f; f = f->next)
		train_field(ev, j, f, "", check_train_fields);
	char missing[256] = "";

	for (const struct field_spec *s = check_train_fields; s->name; s++) {
		struct value v;

		if (s->required && !check_job_field(j, s->name, &v) && j->ok)
			check_list_add(missing, sizeof missing, s->name);
	}
	if (missing[0])
		eval_error(ev, DIAG_MISSING_FIELD, d->name_loc, "train block '%s' has no %s", d->name, missing);
	check_job_field(j, "model", &j->model);
	check_job_field(j, "cluster", &j->cluster);
	check_job_field(j, "precision", &j->precision);
	check_job_field(j, "optimizer", &j->optimizer);
	if (!check_job_field(j, "finetune", &j->finetune))
		j->finetune = val_symbol(ev, "full", d->name_loc);
	bool keys_ok = positive_keys(ev, j) & cluster_ok(ev, j) & sharding_ok(ev, j) & check_finetune(ev, j) &
		       checkpoint_ok(ev, j) & check_fp8_ok(ev, j) & data_ok(ev, j) & alloc_ok(ev, j) &
		       in_backward_ok(ev, j);

	if (diag_error_count(ev->diag) == before && keys_ok) {
		check_capabilities(ev, j);
		j->bindings = check_job_bindings(ev, j);
		if (diag_error_count(ev->diag) == before)
			walk_job(ev, j);
	}
	j->ok = diag_error_count(ev->diag) == before;
	return j;
}
