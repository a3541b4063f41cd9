/* SPDX-License-Identifier: MIT */
/*
 * check_fsdp2.c - the fsdp2 { } record of a train block: FSDP2's
 * fully_shard arguments and MixedPrecisionPolicy in PyTorch's names, and
 * torchtitan's reshard_after_forward_policy (docs/language.md §3.7).
 */
#include <string.h>

#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/eval_impl.h"
#include "lang/num.h"

bool check_fsdp2_present(const struct check_job *j)
{
	return check_job_record(j, "fsdp2");
}

/* fully_shard(reshard_after_forward: bool | int): an int is the number of
 * ranks a unit reshards to after forward, at least 1. */
static bool reshard_ok(struct eval *ev, const struct check_job *j)
{
	struct value v, p;

	if (!check_job_field(j, "fsdp2.reshard_after_forward", &v))
		return true;
	if (v.kind != VAL_BOOL && v.kind != VAL_ERROR &&
	    (v.kind != VAL_NUM || !dim_is_scalar(v.dim) || (!v.unknown && (!num_is_int(v.num) ||
									 num_sign(v.num) <= 0)))) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'reshard_after_forward' is true, false or the "
			   "number of ranks to reshard to after forward (fully_shard's bool | int)");
		return false;
	}
	if (!check_job_field(j, "fsdp2.reshard_after_forward_policy", &p))
		return true;
	diag_note(eval_error(ev, DIAG_IGNORED_SETTING, p.origin, "torchtitan's 'reshard_after_forward_policy' "
			     "decides what 'reshard_after_forward' says: use one"),
		  v.origin, "'reshard_after_forward' is set here");
	return false;
}

static bool policy_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;

	if (check_job_field(j, "fsdp2.root_unit", &v) && v.kind == VAL_STRING && strcmp(v.str, "model") &&
	    strcmp(v.str, "split")) {
		eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'root_unit' must be \"model\" (fully_shard(model) "
			   "holds the embeddings, norm and output) or \"split\" (tok_embeddings and [norm, "
			   "output] are units of their own)");
		return false;
	}

	if (!check_job_field(j, "fsdp2.reshard_after_forward_policy", &v) || v.kind != VAL_STRING ||
	    !strcmp(v.str, "default") || !strcmp(v.str, "always") || !strcmp(v.str, "never"))
		return true;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "'reshard_after_forward_policy' must be \"default\", "
		   "\"always\" or \"never\" (torchtitan's parallelism.fsdp_reshard_after_forward)");
	return false;
}

static bool above_1(const struct check_job *j, const char *key)
{
	struct value v;

	return check_job_field(j, key, &v) && v.kind == VAL_NUM && num_cmp(v.num, num_from_int(1)) > 0;
}

/* requires_gradient_sync: under pp > 1 torch.distributed.pipelining turns
 * gradient sync off itself; with one micro-batch there is nothing to hold. */
static bool sync_ok(struct eval *ev, const struct check_job *j)
{
	struct value v;

	if (!check_job_field(j, "fsdp2.requires_gradient_sync", &v) || v.kind != VAL_BOOL)
		return true;
	if (v.b && above_1(j, "parallel.pp")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "with pp > 1 torch.distributed.pipelining "
			   "syncs FSDP2 gradients only after the last micro-batch "
			   "(set_requires_gradient_sync(False)): remove 'requires_gradient_sync'");
		return false;
	}
	if (!v.b && !above_1(j, "grad_accum") && !above_1(j, "parallel.pp")) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'requires_gradient_sync = false' holds gradients "
			   "until the last micro-batch, but with grad_accum = 1 every micro-batch is the last");
		return false;
	}
	return true;
}

/* The record is FSDP2: not DeepSpeed, not FSDP1's other strategies. */
bool check_fsdp2(struct eval *ev, const struct check_job *j)
{
	struct value fs, v;
	bool ok = true;

	if (!check_fsdp2_present(j))
		return true;
	ok &= reshard_ok(ev, j);
	ok &= policy_ok(ev, j);
	ok &= sync_ok(ev, j);
	if (check_job_field(j, "fsdp", &fs) && (fs.kind == VAL_NONE || (fs.kind == VAL_SYMBOL &&
	    !strcmp(fs.str, "none")))) {
		eval_error(ev, DIAG_IGNORED_SETTING, fs.origin, "'fsdp = none' turns FSDP off, but 'fsdp2 { }' "
			   "configures it: remove one");
		ok = false;
	}
	if (check_job_field(j, "fsdp", &fs) && fs.kind == VAL_SYMBOL &&
	    (!strcmp(fs.str, "shard_grad_op") || !strcmp(fs.str, "no_shard"))) {
		eval_error(ev, DIAG_IGNORED_SETTING, fs.origin, "'fsdp2 { }' is fully_shard, which has no %s "
			   "strategy: %s", fs.str, !strcmp(fs.str, "no_shard") ? "remove the fsdp2 record" :
			   "write fsdp2 { reshard_after_forward = false }");
		ok = false;
	}
	if (check_job_field(j, "zero", &v) && v.kind == VAL_NUM && num_sign(v.num) > 0) {
		eval_error(ev, DIAG_IGNORED_SETTING, v.origin, "'zero' shards with DeepSpeed, but 'fsdp2 { }' "
			   "shards with FSDP2: use one");
		ok = false;
	}
	return ok;
}
