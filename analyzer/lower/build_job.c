/* SPDX-License-Identifier: MIT */
/*
 * build_job.c - the job from the train block and its GPU: reading its
 * keys, the walk that fills the blocks (build_blocks.c) and the report;
 * the layout is build_job_layout.c's, buffers and overheads
 * build_job_buffers.c's.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/strbuf.h"

/* ---- reading the train block ---- */

uint64_t bld_bound_u64(struct bld *b, const char *name, uint64_t dflt)
{
	struct value v;
	uint64_t u = dflt;

	if (env_lookup(b->bindings, bld_intern(b, name), &v) && v.kind == VAL_NUM && !v.unknown)
		num_to_u64(v.num, &u);
	return u;
}

const char *bld_bound_sym(struct bld *b, const char *name, const char *dflt)
{
	struct value v;

	if (env_lookup(b->bindings, bld_intern(b, name), &v) && v.kind == VAL_SYMBOL)
		return v.str;
	return dflt;
}

bool bld_key(const struct bld *b, const char *k, struct value *v)
{
	return check_job_field(b->cj, k, v);
}

uint64_t bld_key_u64(struct bld *b, const char *k, uint64_t dflt)
{
	struct value v;
	uint64_t u = dflt;

	if (bld_key(b, k, &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &u);
	return u;
}

bool bld_key_bool(struct bld *b, const char *k, bool dflt)
{
	struct value v;

	return bld_key(b, k, &v) && v.kind == VAL_BOOL ? v.b : dflt;
}

const char *bld_key_sym(struct bld *b, const char *k, const char *dflt)
{
	struct value v;

	return bld_key(b, k, &v) && (v.kind == VAL_SYMBOL || v.kind == VAL_STRING || v.kind == VAL_NONE) ? v.str : dflt;
}

static struct loc key_loc(struct bld *b, const char *k)
{
	struct value v;

	return bld_key(b, k, &v) ? v.origin : NO_LOC;
}

/* The first of @keys (NULL-ended) the block writes: where a setting said
 * by any of several keys is reported. */
static struct loc first_key_loc(struct bld *b, const char *const *keys)
{
	for (; *keys; keys++) {
		struct loc at = key_loc(b, *keys);

		if (at.file)
			return at;
	}
	return NO_LOC;
}

/* A field of the job's GPU (following `gpu X : Base`), in whole units. */
bool build_gpu_u64(struct eval *ev, const struct decl *gpu, const char *field, uint64_t *out)
{
	const struct field *f = eval_record_field(eval_scope(ev), gpu, field);
	struct value v = f ? eval_expr(ev, NULL, f->value) : val_error(NO_LOC);

	return v.kind == VAL_NUM && !v.unknown && num_to_u64(num_floor(v.num), out);
}

/* ---- the walk ---- */

/* tp (with sp and etp following it), cp, ep of a what-if build, and the dp
 * they leave of the cluster as written (unless the caller lays it out). */
static void override_degrees(struct bld *b, struct env *e, struct env *base, const struct build_override *ov)
{
	struct value spv;
	uint64_t gpus = b->out->gpus, pp = bld_bound_u64(b, "pp", 1);
	uint64_t tp = ov->tp ? ov->tp : bld_bound_u64(b, "tp", 1), cp = ov->cp ? ov->cp : bld_bound_u64(b, "cp", 1);
	uint64_t ep = ov->ep ? ov->ep : bld_bound_u64(b, "ep", 1), mp = 0;
	bool sp = ov->sp ? ov->sp == 2 && tp > 1 :
		  env_lookup(base, bld_intern(b, "sp"), &spv) && spv.kind == VAL_NUM && !num_eq(spv.num, num_from_int(1));
	struct value tpv = val_count(tp, NO_LOC), cpv = val_count(cp, NO_LOC), epv = val_count(ep, NO_LOC);

	tpv.label = "tp";
	cpv.label = "cp";
	epv.label = "ep";
	env_bind(e, bld_intern(b, "tp"), tpv);
	env_bind(e, bld_intern(b, "cp"), cpv);
	env_bind(e, bld_intern(b, "ep"), epv);
	if (!bld_key(b, "parallel.etp", &(struct value){ 0 })) {	/* etp follows tp unless set */
		struct value etpv = tpv;

		etpv.label = "etp";
		env_bind(e, bld_intern(b, "etp"), etpv);
	}
	env_bind(e, bld_intern(b, "sp"), sp ? tpv : val_count(1, NO_LOC));
	env_bind(e, bld_intern(b, "sp_in"), sp && !check_tp_saves_gathered(b->cj) ? tpv : val_count(1, NO_LOC));
	if (ov->layout_free) {
		env_bind(e, bld_intern(b, "dp"), val_count(1, NO_LOC));
		return;
	}
	/* the checker's rules for the edited file (check_train.c bld_layout()):
	 * tp x pp x cp divides the cluster, ep divides dp x tp */
	if (__builtin_mul_overflow(tp, pp, &mp) || __builtin_mul_overflow(mp, cp, &mp) || !mp ||
	    gpus % mp || (gpus / mp * tp) % ep)
		b->failed = true;
	env_bind(e, bld_intern(b, "dp"), val_count(mp ? gpus / mp : 1, NO_LOC));
}

static struct env *override_env(struct bld *b, struct env *base, const struct build_override *ov)
{
	struct env *e = env_new(b->ev, base);

	b->bindings = base;	/* bld_bound_u64() below reads the job as written: pp, cp */

	uint64_t mb = ov && ov->micro_batch ? ov->micro_batch : 0;

	/* DPO's concatenated_forward: chosen and rejected in one batch */
	if (b->rl_factor > 1 && !bld_mul(b, mb ? mb : bld_bound_u64(b, "batch", 1), b->rl_factor, &mb,
					 "micro_batch x 2 (chosen and rejected)"))
		mb = 0;
	if (mb) {
		struct value v = val_count(mb, NO_LOC);

		v.label = "batch";
		env_bind(e, bld_intern(b, "batch"), v);
	}
	if (ov && ov->checkpoint)
		env_bind(e, bld_intern(b, "checkpoint"), val_symbol(b->ev, ov->checkpoint, NO_LOC));
	if (ov && ov->seq) {
		struct value v = val_count(ov->seq, NO_LOC);

		v.label = "seq";
		env_bind(e, bld_intern(b, "seq"), v);
	}
	if (ov && (ov->tp || ov->cp || ov->ep || ov->sp))
		override_degrees(b, e, base, ov);
	return e;
}

/* Walk the model once under @env; the counts land in b->params_*. The
 * evaluator is quiet: the checker has walked this job and said everything
 * it has to say (warn statements included), so a second word would repeat
 * it; an error it counts fails the build. */
static bool walk(struct bld *b, struct env *env)
{
	unsigned before = eval_quiet_errors(b->ev);

	b->bindings = env;
	b->model_mult = 1;
	b->block_repeat = 1;
	b->model_repeats = 0;
	b->nreps = 0;
	b->in_body = false;
	if (b->rl == BLD_RL_PPO)
		bld_walk_rl_models(b, env);	/* first, as PolicyAndValueWrapper runs the critic */
	b->grad_seen = false;
	eval_walk(b->ev, b->cj->model, env, b->rl_ops ? b->rl_ops : &bld_ops, b);
	while (b->frame)
		bld_frame_pop(b);
	if (eval_quiet_errors(b->ev) != before)
		b->failed = true;
	return !b->failed;
}

/* The job's walk, or an earlier job's that read the same values
 * (analyzer/model/build_cache.c): one that failed or asked for a report
 * is not kept, so a job reports what it would without the cache. */
static bool walk_once(struct bld *b)
{
	if (bld_cache_find(b))
		return true;
	unsigned long reports = eval_reports(b->ev);
	bool reported = b->reported, ok = walk(b, b->bindings);

	if (ok && !b->failed && b->reported == reported && eval_reports(b->ev) == reports)
		bld_cache_put(b);
	return ok;
}

/* Exact totals with tp = ep = cp = 1: published counts are unsharded. */
static void count(struct bld *real, struct env *env)
{
	struct bld b = *real;
	struct env *e = env_new(real->ev, env);
	static const char *const ones[] = { "tp", "sp", "sp_in", "ep", "etp", "cp", "pp" };

	for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
		env_bind(e, bld_intern(real, ones[i]), val_count(1, NO_LOC));
	b.memo = NULL;
	b.nmemo = b.capmemo = 0;
	b.params_total = b.params_trainable = 0;
	b.blocks = NULL;
	b.nblocks = b.capblocks = 0;
	b.tie_srcs = NULL;
	b.ntie_srcs = b.captie_srcs = 0;
	b.reps = NULL;
	b.nreps = b.capreps = 0;
	walk(&b, e);
	free(b.memo);
	free(b.reps);
	real->failed |= b.failed;
	real->reported |= b.reported;
	real->out->rep.params_total = b.params_total;
	real->out->rep.params_trainable = b.params_trainable;
}

static void drop_empty_blocks(struct bld *b, struct mem_job *j)
{
	size_t n = 0;

	for (size_t i = 0; i < b->nblocks; i++)
		if (b->blocks[i].nlayers)
			b->blocks[n++] = b->blocks[i];
	j->blocks = b->blocks;
	j->nblocks = n;
	bld_merge_blocks(b, j);
}

/* "lora r=16", "qlora r=64 nf4_dq", "full"; with train_layers the
 * layers that train ("qlora nf4_dq, train_layers 10, 21, 32": no rank
 * where no targets give adapters). */
static const char *finetune_label(struct bld *b)
{
	bool adapters = b->all_linear || b->targets.nitems || b->train_layers.kind != VAL_LIST;
	const char *r = adapters ? arena_printf(b->arena, " r=%llu", (unsigned long long)b->lora_r) : "";
	const char *s = b->adapter ? arena_printf(b->arena, "adapter%s%s%s", b->adapter_v2 ? " v2" : "",
						  b->qlora ? " " : "", b->qlora ? dtype_name(b->quant) : "") :
			b->lora ? arena_printf(b->arena, "lora%s", r) :
			b->qlora ? arena_printf(b->arena, "qlora%s %s", r, dtype_name(b->quant)) : "full";
	struct strbuf sb;

	if (b->train_layers.kind != VAL_LIST)
		return s;
	strbuf_init(&sb);
	strbuf_addf(&sb, "%s, train_layers ", s);
	for (unsigned i = 0; i < b->train_layers.nitems; i++) {
		uint64_t u = 0;

		num_to_u64(b->train_layers.items[i].num, &u);
		strbuf_addf(&sb, "%s%llu", i ? ", " : "", (unsigned long long)u);
	}
	s = arena_strdup(b->arena, sb.buf);
	strbuf_release(&sb);
	return s;
}

static void fill_report(struct bld *b, struct build *out)
{
	struct report_job *r = &out->rep;
	const struct check_job *cj = b->cj;
	uint64_t nodes = 1;

	r->name = cj->decl->name;
	r->model = cj->model.label ? cj->model.label : cj->model.decl->name;
	r->gpu = cj->cluster.decl->name;
	num_to_u64(cj->cluster.nodes, &nodes);
	r->nodes = nodes;
	r->gpus = out->gpus;
	r->precision = cj->precision.decl->name;
	r->optimizer = cj->optimizer.label ? cj->optimizer.label : cj->optimizer.decl->name;
	r->finetune = finetune_label(b);
	r->dp = out->job.dp;
	r->tp = out->job.tp;
	r->pp = out->job.pp;
	r->cp = out->job.cp;
	r->ep = out->job.ep;
	r->vp = out->job.vp;
	r->sequence_parallel = bld_bound_u64(b, "sp", 1) > 1;
	r->micro_batch = bld_bound_u64(b, "batch", 1);
	r->seq_len = bld_bound_u64(b, "seq", 1);
	r->grad_accum = out->job.micro_batches;
	r->weights_dtype = dtype_name(b->weights);
	r->grads_dtype = dtype_name(b->grads);
	r->state_dtype = dtype_name(b->lora || b->qlora ? b->lora_dtype : b->master ? b->master : b->weights);
	r->act_dtype = dtype_name(b->act);
	r->job = &out->job;
}

static void locations(struct bld *b, struct build *out)
{
	out->loc_train = b->cj->decl->name_loc;
	out->loc_model = key_loc(b, "model");
	out->loc_micro_batch = key_loc(b, "micro_batch");
	out->loc_seq_len = key_loc(b, "seq_len");
	out->loc_checkpoint = key_loc(b, "checkpoint");
	out->loc_zero = key_loc(b, "zero");
	out->loc_tp = key_loc(b, "parallel.tp");
	out->loc_pp = key_loc(b, "parallel.pp");
	out->loc_vp = key_loc(b, "parallel.vp");
	out->loc_pp_group = key_loc(b, "parallel.microbatch_group_size_per_vp_stage");
	out->loc_stage_layers = key_loc(b, "parallel.stage_layers");
	out->loc_first_last = first_key_loc(b, (const char *const[]){ "parallel.first_stage_layers",
									 "parallel.last_stage_layers", NULL });
	out->loc_account = first_key_loc(b, (const char *const[]){ "parallel.account_for_embedding",
								     "parallel.account_for_loss", NULL });
	out->loc_grad_accum = key_loc(b, "grad_accum");
	out->loc_optimizer = key_loc(b, "optimizer");
	out->loc_precision = key_loc(b, "precision");
	out->loc_cluster = key_loc(b, "cluster");
	out->loc_offload = first_key_loc(b, (const char *const[]){ "offload.optimizer", "offload.params",
								     "offload.activations", NULL });
}

bool bld_error(struct bld *b, enum diag_id id, struct loc at, const char *fmt, ...)
{
	va_list ap;

	b->failed = true;
	if (b->quiet || b->reported)
		return false;
	b->reported = true;
	va_start(ap, fmt);
	diag_vemit(eval_diag(b->ev), id, at.file ? at : b->cj->decl->name_loc, fmt, ap);
	va_end(ap);
	return false;
}

/* The cluster and every degree within docs/limits.md: past them the
 * 32-bit degrees of struct mem_job would wrap. */
static bool layout_ok(struct bld *b, uint64_t *gpus)
{
	static const char *const degrees[] = { "dp", "tp", "pp", "cp", "ep", "etp", "vp" };
	uint64_t nodes = 0, per = 0;
	struct loc at = key_loc(b, "cluster");

	if (!num_to_u64(b->cj->cluster.nodes, &nodes) || !num_to_u64(b->cj->cluster.gpus, &per) ||
	    __builtin_mul_overflow(nodes, per, gpus))
		return bld_error(b, DIAG_OVERFLOW, at, "the cluster's GPU count overflows 64 bits");
	if (*gpus > BUILD_MAX_GPUS)
		return bld_error(b, DIAG_BAD_LAYOUT, at, "the cluster has %llu GPUs; memc models at most %u",
				 (unsigned long long)*gpus, (unsigned)BUILD_MAX_GPUS);
	for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++) {
		struct value v;
		uint64_t u = 0;

		if (!env_lookup(b->bindings, bld_intern(b, degrees[i]), &v) || v.kind != VAL_NUM || v.unknown)
			continue;
		if (!num_to_u64(v.num, &u))
			u = UINT64_MAX;		/* past 2^64: the checker's num range is wider */
		if (u > BUILD_MAX_GPUS)
			return bld_error(b, DIAG_BAD_LAYOUT, v.origin.file ? v.origin : v.loc,
					 "%s = %llu is more than the %u GPUs memc models", degrees[i],
					 (unsigned long long)u, (unsigned)BUILD_MAX_GPUS);
	}
	return true;
}

/* The reason a job was not built is always printed: a CI gate that exits
 * 0 with no number, or 1 with no message, is a silent wrong answer. */
static bool unreported(struct bld *b)
{
	return bld_error(b, DIAG_BAD_LAYOUT, b->cj->decl->name_loc,
			 "train block '%s' checked, but its model does not evaluate when it is built "
			 "for analysis", b->cj->decl->name);
}

static bool build_walks(struct bld *b, const struct build_override *ov)
{
	uint64_t tokens = 0, cp = 0;

	b->bindings = b->cj->bindings;
	if (!layout_ok(b, &b->out->gpus))
		return false;
	b->bindings = override_env(b, b->cj->bindings, ov);
	if (b->failed)
		return false;
	/* a what-if checkpoint mode (fit) decides too, hence the bindings */
	b->recompute_selective = !strcmp(bld_bound_sym(b, "checkpoint", "none"), "selective");
	b->recompute_full = !strcmp(bld_bound_sym(b, "checkpoint", "none"), "full");
	b->tokens_in_play = true;
	bld_mul(b, bld_bound_u64(b, "batch", 1), bld_bound_u64(b, "seq", 1), &tokens, "micro_batch x seq_len");
	b->tokens_in_play = false;
	cp = bld_bound_u64(b, "cp", 1);
	b->tokens = tokens / (cp ? cp : 1);
	bool unsharded = true;
	static const char *const degrees[] = { "tp", "sp", "ep", "cp", "pp" };

	for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++)
		unsharded &= bld_bound_u64(b, degrees[i], 1) == 1;
	/* what-if variants (fit search, sweeps) never print the totals; with
	 * every degree 1 the job's own walk gives them */
	if (!b->quiet && !unsharded)
		count(b, b->bindings);
	if (!walk_once(b) || b->failed)
		return false;
	/* the checker counts declarations; `repeat 0 { ... }` around all of them
	 * leaves a job with nothing to train, and a report of zeros */
	if (!b->params_total)
		return bld_error(b, DIAG_BAD_ARGUMENT, key_loc(b, "model"), "%s has no parameters once its "
				 "repeats are counted: the job trains nothing",
				 b->cj->model.label ? b->cj->model.label : b->cj->model.decl->name);
	if (!b->quiet && unsharded) {
		b->out->rep.params_total = b->params_total;
		b->out->rep.params_trainable = b->params_trainable;
	}
	return true;
}

bool build_job(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build_override *ov,
	       bool quiet, struct build *out)
{
	struct bld b;

	/* zeroed padding too: the builder's cache compares the struct's bytes */
	memset(&b, 0, sizeof b);
	b.ev = ev;
	b.arena = a;
	b.cj = cj;
	b.out = out;
	b.quiet = quiet;
	int zero = (int)bld_key_u64(&b, "zero", 0);

	memset(out, 0, sizeof *out);
	if (!cj->ok)
		return false;	/* the checker said why */
	if (cj->model.kind != VAL_INSTANCE || cj->cluster.kind != VAL_CLUSTER ||
	    cj->optimizer.kind != VAL_INSTANCE || !bld_setup_precision(&b, cj->precision))
		return unreported(&b);
	zero = bld_megatron_setup(&b, zero);
	bld_fsdp2_setup(&b);
	bld_setup_fp8(&b, bld_megatron_job(&b, zero));
	zero = ov && ov->zero >= 0 ? ov->zero : zero;
	out->zero = bld_key(&b, "zero", &(struct value){ 0 }) || (ov && ov->zero >= 0) ||
		    zero > 0 ? zero : -1;
	b.optimizer = cj->optimizer;
	bld_key(&b, "megatron.recompute_modules", &b.recompute_modules);
	bld_setup_finetune(&b, cj->finetune);
	/* the loop holds the model's output (the `output` tensors) until
	 * after the optimizer step */
	out->job.keep_output = bld_key_bool(&b, "keep_output", false);
	bld_setup_rl(&b);
	bld_key(&b, "freeze", &b.freeze);
	bld_key(&b, "train_layers", &b.train_layers);
	/* The real build reports what only it evaluates (an optimizer state's
	 * shape under this job's arguments); what the checker already reported
	 * is not repeated (eval.c seen_before), and warn fires in the checker's
	 * walk only. What-if builds are quiet. */
	eval_set_quiet(ev, quiet);
	unsigned errors = diag_error_count(eval_diag(ev));
	bool ok = build_walks(&b, ov);

	eval_set_quiet(ev, false);
	b.reported |= diag_error_count(eval_diag(ev)) > errors;	/* the walk said why */
	/* and a walk that said so dropped what it could not size (a state of
	 * 0 elements): no numbers from it, as from a build that failed */
	ok = ok && !b.reported;
	free(b.memo);
	free(b.reps);
	if (ok) {
		drop_empty_blocks(&b, &out->job);
		ok = bld_layout(&b, &out->job, zero);
		if (ok) {
			bld_buffers(&b, &out->job, zero);
			bld_overheads(&b, &out->job);
			if (out->job.pp > 1 && bld_megatron_job(&b, zero))
				bld_megatron_tied_copy(&b, &out->job);
		}
		ok = ok && !b.failed;
	}
	if (!ok) {
		if (!b.reported)
			unreported(&b);
		out->rep.params_total = out->rep.params_trainable = 0;	/* half a walk's count */
		return false;
	}
	out->micro_batch = bld_bound_u64(&b, "batch", 1);
	out->tp = out->job.tp;
	fill_report(&b, out);
	locations(&b, out);
	bld_fill_phases(&b, out);
	if (!bld_finish_rl(&b, out))
		return false;
	if (out->job.alloc_replay && out->job.shape_seq_len >= 2 && !(ov && ov->seq))
		bld_shapes_split(ev, a, cj, ov, &out->job);
	return true;
}

/* The neutral job of `memc list`: every degree 1, one token. */
static struct env *neutral_bindings(struct bld *b)
{
	static const char *const ones[] = { "batch", "seq", "tgt", "tp", "sp", "sp_in", "cp", "ep", "etp", "pp", "dp",
					    "vp" };
	static const char *const syms[][2] = { { "attention", "flash" }, { "checkpoint", "none" },
					       { "kernels", "hf" }, { "loss", "standard" },
					       { "cp_comm", "allgather" }, { "finetune", "full" } };
	struct env *e = env_new(b->ev, NULL);

	for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
		env_bind(e, bld_intern(b, ones[i]), val_count(1, NO_LOC));
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		env_bind(e, bld_intern(b, syms[i][0]), val_symbol(b->ev, syms[i][1], NO_LOC));
	env_bind(e, bld_intern(b, "act"), (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("bf16") });
	env_bind(e, bld_intern(b, "autocast"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "compile"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "async_tp"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "dtensor_plan"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "compile_loss"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "rope_cache"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "rope_dtype"), (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("fp32") });
	env_bind(e, bld_intern(b, "tt_rope"), (struct value){ .kind = VAL_BOOL, .b = false });
	env_bind(e, bld_intern(b, "tt_rope_len"), val_count(0, NO_LOC));
	env_bind(e, bld_intern(b, "tt_rope_dtype"), (struct value){ .kind = VAL_DTYPE, .dtype = dtype_find("fp32") });
	env_bind(e, bld_intern(b, "tt_rope_shared"), (struct value){ .kind = VAL_BOOL, .b = false });
	return e;
}

bool build_count_params(struct eval *ev, struct arena *a, struct value model, uint64_t *total)
{
	struct check_job cj = { .model = model, .ok = true };
	struct build out;
	struct bld b = { .ev = ev, .arena = a, .cj = &cj, .out = &out, .quiet = true };

	if (model.kind != VAL_INSTANCE)
		return false;
	eval_set_quiet(ev, true);
	bool ok = walk(&b, neutral_bindings(&b));

	eval_set_quiet(ev, false);
	free(b.memo);
	free(b.reps);
	*total = b.params_total;
	return ok;
}
