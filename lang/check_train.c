/* SPDX-License-Identifier: MIT */
/*
 * check_train.c - train blocks and template bodies.
 *
 * A template no job instantiates is walked with unknown parameters and
 * unknown job bindings: types, units and attributes are checked, shapes
 * are not. A train block is walked with its real bindings, which is where
 * divisibility and positivity of every shape axis are checked.
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

static const char *const tensor_words[] = { "linear", "for_grad", "forward", "backward", "loss",
					    "grouped", "paged", "expert", NULL };

static bool is_word(const char *name)
{
	for (const char *const *w = tensor_words; *w; w++)
		if (!strcmp(*w, name))
			return true;
	return false;
}

/* Attributes: a known word, or something that evaluates to a dtype. */
static void check_attrs(struct eval *ev, const struct walk_tensor *t)
{
	for (const struct attr *a = t->stmt->tensor.attrs; a; a = a->next) {
		if (is_word(a->name))
			continue;
		struct expr name = { .kind = EXPR_NAME, .loc = a->loc, .name.name = a->name };
		struct value v = eval_expr(ev, t->env, &name);

		if (v.kind == VAL_DTYPE || v.kind == VAL_ERROR)
			continue;
		struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, a->loc,
					    "'%s' is neither a dtype nor a tensor attribute", a->name);
		const char *s = dtype_suggest(a->name);

		diag_note(d, NO_LOC, s ? "did you mean '%s'?" : "attributes are linear, expert, for_grad(...), "
			  "forward, backward, loss, grouped, paged%s", s ? s : "");
	}
}

static void static_tensor(void *ctx, const struct walk_tensor *t)
{
	check_attrs(ctx, t);
}

/* Unknown bindings for a template that no job instantiates. */
static struct env *unknown_job(struct eval *ev)
{
	static const char *const counts[] = { "batch", "seq", "tp", "sp", "cp", "ep", "etp", "pp", "dp",
					      "vp", "numel", "rows", "cols", "rank" };
	static const char *const syms[] = { "attention", "checkpoint", "kernels", "loss" };
	struct env *e = env_new(ev, NULL);

	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		env_bind(e, intern_cstr(ev->interner, counts[i]), val_unknown_num(DIM_SCALAR, NO_LOC));
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		struct value v = val_symbol(ev, syms[i], NO_LOC);

		v.unknown = true;
		env_bind(e, intern_cstr(ev->interner, syms[i]), v);
	}
	struct value act = { .kind = VAL_DTYPE, .dtype = dtype_find("bf16"), .unknown = true };
	struct value ac = { .kind = VAL_BOOL, .unknown = true };

	env_bind(e, intern_cstr(ev->interner, "autocast"), ac);

	env_bind(e, intern_cstr(ev->interner, "act"), act);
	return e;
}

void check_body_static(struct eval *ev, const struct decl *d)
{
	static const struct walk_ops ops = { .tensor = static_tensor };

	if (!ev->static_job)
		ev->static_job = unknown_job(ev);
	eval_walk(ev, eval_instantiate_unknown(ev, d), ev->static_job, &ops, ev);
}

/* ---- train blocks ---- */

static const struct field_spec train_fields[] = {
	{ "model", "model", true }, { "cluster", "cluster", true }, { "precision", "precision", true },
	{ "optimizer", "optimizer", true }, { "micro_batch", "count", true }, { "seq_len", "count", true },
	{ "grad_accum", "count", false }, { "checkpoint", "enum:none|selective|full", false },
	{ "attention", "enum:flash|eager", false }, { "kernels", "enum:hf|fused", false },
	{ "loss", "enum:standard|chunked|chunked_kept", false }, { "zero", "count", false },
	{ "fsdp", "enum:none|full_shard|shard_grad_op|hybrid_shard|no_shard", false },
	{ "parallel", "record", false }, { "finetune", "finetune", false }, { "freeze", "list", false },
	{ "offload", "record", false }, { "ddp", "record", false }, { "deepspeed", "record", false },
	{ "overhead", "record", false }, { "headroom", "ratio", false },
	{ "zero_grad", "enum:set_to_none|zeros", false }, { "optimizer_in_backward", "bool", false },
	{ NULL, NULL, false },
};

static const struct field_spec parallel_fields[] = {
	{ "tp", "count", false }, { "pp", "count", false }, { "cp", "count", false }, { "ep", "count", false },
	{ "vp", "count", false }, { "sequence_parallel", "bool", false }, { "schedule", "string", false },
	{ "etp", "count", false }, { "dp_shard", "count", false }, { "dp_replicate", "count", false },
	{ NULL, NULL, false },
};
static const struct field_spec offload_fields[] = {
	{ "optimizer", "enum:none|cpu|nvme", false }, { "params", "enum:none|cpu|nvme", false },
	{ NULL, NULL, false },
};
static const struct field_spec ddp_fields[] = {
	{ "bucket_cap", "bytes", false }, { "gradient_as_bucket_view", "bool", false }, { NULL, NULL, false },
};
static const struct field_spec deepspeed_fields[] = {
	{ "reduce_bucket_size", "count", false }, { "allgather_bucket_size", "count", false },
	{ "prefetch_bucket_size", "count", false }, { "overlap_comm", "bool", false }, { NULL, NULL, false },
};
static const struct field_spec overhead_fields[] = {
	{ "context", "bytes", false }, { "cublas_workspace", "bytes", false }, { "nccl", "bytes", false },
	{ "fragmentation", "ratio", false }, { NULL, NULL, false },
};

static const struct field_spec *sub_specs(const char *name)
{
	return !strcmp(name, "parallel") ? parallel_fields : !strcmp(name, "offload") ? offload_fields :
	       !strcmp(name, "ddp") ? ddp_fields : !strcmp(name, "deepspeed") ? deepspeed_fields :
	       overhead_fields;
}

/* `precision = fp32` names the precision, not the dtype of that name. */
static struct value as_decl(struct eval *ev, struct value v, enum decl_kind kind)
{
	if (v.kind == VAL_DTYPE) {
		const struct decl *d = scope_find_kind(ev->scope, intern_cstr(ev->interner, dtype_name(v.dtype)), kind);

		if (d)
			return eval_decl_value(ev, d, v.loc);
	}
	if (v.kind == VAL_DECL && v.decl->kind == kind && kind != DECL_PRECISION)
		return eval_instantiate(ev, NULL, v.decl, NULL, v.loc);
	return v;
}

static bool check_enum(struct eval *ev, struct value v, const char *alts, const char *what)
{
	char buf[128];

	if (v.kind == VAL_ERROR)
		return false;
	if (v.kind == VAL_SYMBOL || v.kind == VAL_NONE) {
		snprintf(buf, sizeof buf, "|%s|", alts);
		char key[96];

		snprintf(key, sizeof key, "|%s|", v.str);
		if (strstr(buf, key))
			return true;
	}
	char list[128];
	size_t n = 0;

	/* "none|selective|full" -> "none, selective or full" */
	for (const char *p = alts; *p && n + 4 < sizeof list; p++) {
		if (*p != '|') {
			list[n++] = *p;
			continue;
		}
		const char *sep = strchr(p + 1, '|') ? ", " : " or ";

		for (; *sep && n + 1 < sizeof list; sep++)
			list[n++] = *sep;
	}
	list[n] = '\0';
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be %s", what, list);
	return false;
}

static bool check_kind(struct eval *ev, struct value v, const char *type, const char *what)
{
	if (!strncmp(type, "enum:", 5))
		return check_enum(ev, v, type + 5, what);
	if (!strcmp(type, "cluster")) {
		if (v.kind == VAL_CLUSTER || v.kind == VAL_ERROR)
			return v.kind == VAL_CLUSTER;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be written 'N x GPU' or 'NODES x N x GPU'", what);
		return false;
	}
	if (!strcmp(type, "finetune")) {
		if ((v.kind == VAL_SYMBOL && !strcmp(v.str, "full")) ||
		    (v.kind == VAL_CALL && (!strcmp(v.str, "lora") || !strcmp(v.str, "qlora"))))
			return true;
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be full, lora(...) or qlora(...)", what);
		return false;
	}
	if (!strcmp(type, "precision")) {
		if (v.kind == VAL_DECL && v.decl->kind == DECL_PRECISION)
			return true;
		if (v.kind == VAL_SYMBOL)
			return undefined_name(ev, &v), false;
	}
	return eval_is_type(ev, v, type, what, v.loc);
}

static void keep(struct eval *ev, struct check_job *j, const char *name, struct value v)
{
	if (j->nfields == j->capfields) {
		unsigned cap = j->capfields ? j->capfields * 2 : 16;
		struct value *f = ARENA_NEW_ARRAY(ev->arena, struct value, cap);
		const char **n = ARENA_NEW_ARRAY(ev->arena, const char *, cap);

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
}

static void train_field(struct eval *ev, struct check_job *j, const struct field *f, const char *prefix,
			const struct field_spec *specs)
{
	char what[96];
	const struct field_spec *s = check_spec_find(specs, f->name);

	snprintf(what, sizeof what, "'%s%s'", prefix, f->name);
	if (!s) {
		check_unknown_field(ev, specs, f, prefix[0] ? "this record" : "a train block");
		j->ok = false;	/* a misspelt key: do not also call it missing */
		return;
	}
	if (!strcmp(s->type, "record") || f->sub) {
		if (!f->sub && f->value)
			eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s is written '%s { ... }'", what, f->name);
		for (const struct field *g = f->sub; g; g = g->next)
			if (!check_duplicate_field(ev, f->sub, g))
				train_field(ev, j, g, arena_printf(ev->arena, "%s.", f->name), sub_specs(f->name));
		return;
	}
	struct value v = eval_expr(ev, NULL, f->value);

	if (!strcmp(s->type, "model") || !strcmp(s->type, "optimizer") || !strcmp(s->type, "precision"))
		v = as_decl(ev, v, !strcmp(s->type, "model") ? DECL_MODEL :
			    !strcmp(s->type, "optimizer") ? DECL_OPTIMIZER : DECL_PRECISION);
	v.origin = f->loc;
	if (!v.label || (v.kind != VAL_INSTANCE && v.kind != VAL_DECL))
		v.label = f->name;	/* "tp (3)" in notes; a model keeps its own name */
	if (check_kind(ev, v, s->type, what))
		keep(ev, j, arena_printf(ev->arena, "%s%s", prefix, f->name), v);
	else
		j->ok = false;
}

/* A count key with its default; @v gets the key's value for notes. */
static uint64_t count_key(struct eval *ev, const struct check_job *j, const char *key, uint64_t def,
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
	static const char *const keys[] = { "micro_batch", "seq_len", "grad_accum", "parallel.tp",
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

static void bind(struct eval *ev, struct env *e, const char *name, struct value v)
{
	v.label = name;
	env_bind(e, intern_cstr(ev->interner, name), v);
}

static struct value sym_key(struct eval *ev, const struct check_job *j, const char *key, const char *def)
{
	struct value v;

	if (!check_job_field(j, key, &v))
		v = val_symbol(ev, def, j->decl->name_loc);
	return v;
}

/* An optional count of the parallel record that must be at least 1. */
static bool group_key(struct eval *ev, struct check_job *j, const char *key, uint64_t *u, struct value *v)
{
	*u = 0;
	if (!check_job_field(j, key, v) || v->kind != VAL_NUM || v->unknown)
		return false;
	eval_to_u64(ev, *v, key, u);
	if (*u == 0) {
		eval_error(ev, DIAG_BAD_SHAPE, v->loc, "'%s' must be at least 1", key);
		j->ok = false;
	}
	return *u != 0;
}

/* zero = 1..3 or an fsdp strategy that shards: only these have shard groups. */
static bool sharded_mode(const struct check_job *j)
{
	struct value z, f;
	uint64_t u = 0;

	if (check_job_field(j, "zero", &z) && z.kind == VAL_NUM && num_to_u64(z.num, &u) && u >= 1)
		return true;
	return check_job_field(j, "fsdp", &f) && f.kind == VAL_SYMBOL &&
	       (!strcmp(f.str, "full_shard") || !strcmp(f.str, "shard_grad_op") || !strcmp(f.str, "hybrid_shard"));
}

/* dp = dp_shard x dp_replicate (torchtitan's names): the dp ranks of one shard
 * group, and how many such groups replicate. Returns dp_shard; as memory.c,
 * hybrid_shard defaults to the dp ranks of one node, per / (tp x cp). */
static uint64_t dp_shard_key(struct eval *ev, struct check_job *j, uint64_t dp, uint64_t per,
			     uint64_t node_mp)
{
	struct value sv, rv, f;
	uint64_t s, r, sr = 0;
	bool has_s = group_key(ev, j, "parallel.dp_shard", &s, &sv);
	bool has_r = group_key(ev, j, "parallel.dp_replicate", &r, &rv);
	const char *bad = NULL;

	if (has_s && has_r && (__builtin_mul_overflow(s, r, &sr) || sr != dp))
		bad = "dp_shard x dp_replicate";
	else if ((has_s && dp % s) || (has_r && dp % r))
		bad = has_s && dp % s ? "dp_shard" : "dp_replicate";
	if (bad) {
		struct diag *d = eval_error(ev, DIAG_NOT_DIVISIBLE, has_s ? sv.loc : rv.loc,
					    "%s = %llu does not %s dp = %llu", bad,
					    (unsigned long long)(has_s && has_r ? sr : has_s && dp % s ? s : r),
					    has_s && has_r ? "equal" : "divide", (unsigned long long)dp);

		diag_note(d, j->cluster.loc, "dp is the GPUs of the cluster over tp x pp x cp");
		j->ok = false;
		return dp;
	}
	s = has_s ? s : has_r ? dp / r : dp;
	if (!has_s && !has_r && check_job_field(j, "fsdp", &f) && f.kind == VAL_SYMBOL &&
	    !strcmp(f.str, "hybrid_shard") && per && per / node_mp < dp)
		s = per / node_mp ? per / node_mp : 1;
	if ((has_s || has_r) && s < dp && !sharded_mode(j)) {
		eval_error(ev, DIAG_BAD_LAYOUT, has_s ? sv.loc : rv.loc,
			   "'%s' asks for shard groups of %llu of the %llu dp ranks, but nothing is "
			   "sharded: set zero = 1, 2 or 3 or fsdp = full_shard, shard_grad_op or hybrid_shard",
			   has_s ? "dp_shard" : "dp_replicate", (unsigned long long)s, (unsigned long long)dp);
		j->ok = false;
	}
	return s;
}

/* Experts are laid out over dp_shard x cp x tp as ep x etp x the expert data
 * parallel group (Megatron-Core expert_data_parallel_size, torchtitan
 * dp_shard_mod_ep): that group must be whole. etp defaults to tp. */
static void expert_layout(struct eval *ev, struct check_job *j, struct env *e, uint64_t shard_cp_tp,
			  struct value tp, struct value ep)
{
	struct value etp;
	uint64_t x = 1, t = 1, xt = 0;
	bool has_t = group_key(ev, j, "parallel.etp", &t, &etp);

	eval_to_u64(ev, ep, "ep", &x);
	if (!has_t)
		eval_to_u64(ev, tp, "tp", &t);
	if (x && t && (__builtin_mul_overflow(x, t, &xt) || shard_cp_tp % xt)) {
		struct diag *d = eval_error(ev, DIAG_NOT_DIVISIBLE, x > 1 || !has_t ? ep.loc : etp.loc,
					    "ep x etp = %llu does not divide dp_shard x cp x tp = %llu",
					    (unsigned long long)xt, (unsigned long long)shard_cp_tp);

		diag_note(d, NO_LOC, "the expert data parallel group is dp_shard x cp x tp / (ep x etp); "
			  "etp is tp unless set: lower ep or etp");
		j->ok = false;
	}
	bind(ev, e, "etp", has_t ? etp : tp);
}

/* dp = gpus / (tp * pp * cp): the layout must divide the cluster. */
static void layout(struct eval *ev, struct check_job *j, struct env *e)
{
	struct value tp, pp, cp, ep, vp, spv, gpus;
	uint64_t t = count_key(ev, j, "parallel.tp", 1, &tp), p = count_key(ev, j, "parallel.pp", 1, &pp);
	uint64_t c = count_key(ev, j, "parallel.cp", 1, &cp);
	uint64_t total = 0, nodes = 0, per = 0;
	bool sp = false;

	count_key(ev, j, "parallel.ep", 1, &ep);
	count_key(ev, j, "parallel.vp", 1, &vp);
	if (check_job_field(j, "parallel.sequence_parallel", &spv))
		eval_to_bool(ev, spv, "sequence_parallel", &sp);
	if (j->cluster.kind == VAL_CLUSTER && num_to_u64(j->cluster.nodes, &nodes) &&
	    num_to_u64(j->cluster.gpus, &per))
		total = nodes * per;
	gpus = val_count(total, j->cluster.loc);
	/* degrees are >= 1 here: positive_keys() ran first */
	uint64_t mp = t * p * c;

	if (total && mp && total % mp) {
		struct diag *g = eval_error(ev, DIAG_NOT_DIVISIBLE, t > 1 ? tp.loc : p > 1 ? pp.loc : cp.loc,
					    "tp x pp x cp = %llu does not divide the %llu GPUs of the cluster",
					    (unsigned long long)mp, (unsigned long long)total);

		diag_note(g, j->cluster.loc, "the cluster is set here");
		j->ok = false;
		return;
	}
	uint64_t dp = total && mp ? total / mp : 1;

	expert_layout(ev, j, e, dp_shard_key(ev, j, dp, per, t * c) * c * t, tp, ep);
	bind(ev, e, "tp", tp);
	bind(ev, e, "pp", pp);
	bind(ev, e, "cp", cp);
	bind(ev, e, "ep", ep);
	bind(ev, e, "vp", vp);
	bind(ev, e, "sp", sp ? tp : val_count(1, j->decl->name_loc));
	bind(ev, e, "dp", val_count(dp, gpus.loc));
}

static struct value compute_dtype(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, "compute") : NULL;

	return f ? eval_expr(ev, NULL, f->value) : (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("bf16") };
}

/* autocast: the policy keeps a low-precision weight cache, i.e. fp32
 * weights computed under torch.autocast (layers save fp32 where autocast
 * runs an op in fp32). */
static bool autocast_policy(struct eval *ev, const struct check_job *j)
{
	const struct field *f = j->precision.kind == VAL_DECL ?
		eval_record_field(ev->scope, j->precision.decl, "cast_cache") : NULL;

	return f && eval_expr(ev, NULL, f->value).kind == VAL_DTYPE;
}

static struct env *job_bindings(struct eval *ev, struct check_job *j)
{
	struct env *e = env_new(ev, NULL);
	struct value mb, sl;

	count_key(ev, j, "micro_batch", 1, &mb);
	count_key(ev, j, "seq_len", 1, &sl);
	bind(ev, e, "batch", mb);
	bind(ev, e, "seq", sl);
	layout(ev, j, e);
	bind(ev, e, "act", compute_dtype(ev, j));
	bind(ev, e, "attention", sym_key(ev, j, "attention", "flash"));
	bind(ev, e, "checkpoint", sym_key(ev, j, "checkpoint", "none"));
	bind(ev, e, "kernels", sym_key(ev, j, "kernels", "hf"));
	bind(ev, e, "loss", sym_key(ev, j, "loss", "standard"));
	bind(ev, e, "autocast", (struct value){ .kind = VAL_BOOL, .b = autocast_policy(ev, j),
						.loc = j->decl->name_loc, .origin = j->decl->name_loc });
	return e;
}

struct check_job *check_train(struct eval *ev, const struct decl *d)
{
	struct check_job *j = ARENA_NEW(ev->arena, struct check_job);
	unsigned before = diag_error_count(ev->diag);
	static const struct walk_ops ops = { .tensor = static_tensor };

	j->decl = d;
	j->ok = true;
	for (const struct field *f = d->record.fields; f; f = f->next)
		if (check_duplicate_field(ev, d->record.fields, f))
			j->ok = false;
		else
			train_field(ev, j, f, "", train_fields);
	char missing[256] = "";

	for (const struct field_spec *s = train_fields; s->name; s++) {
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
	if (diag_error_count(ev->diag) == before && positive_keys(ev, j)) {
		j->bindings = job_bindings(ev, j);
		if (diag_error_count(ev->diag) == before)
			eval_walk(ev, j->model, j->bindings, &ops, ev);
	}
	j->ok = diag_error_count(ev->diag) == before;
	return j;
}
