/* SPDX-License-Identifier: MIT */
/*
 * check.c - the checker's driver: declarations and records (check.h).
 * Train blocks are checked in check_train.c.
 */
#include <string.h>

#include "lang/arena.h"
#include "lang/check.h"
#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/eval_impl.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/reach.h"
#include "lang/scope.h"
#include "lang/str.h"
#include "lang/units.h"

/* Fields of gpu and precision records: name, type, required. */
static const struct field_spec gpu_fields[] = {
	{ "memory", "bytes", true }, { "bandwidth", "bandwidth", false },
	{ "fp64", "throughput", false }, { "fp32", "throughput", false }, { "tf32", "throughput", false },
	{ "bf16", "throughput", false }, { "fp16", "throughput", false }, { "fp8", "throughput", false },
	{ "fp4", "throughput", false }, { "int8", "throughput", false },
	{ "family", "string", false }, { "vendor", "string", false }, { "context", "bytes", false },
	{ "cublas_workspace", "bytes", false }, { "nccl", "bytes", false },
	{ "compute_capability", "number", false }, { "host_memory", "bytes", false },
	{ "node_bandwidth", "bandwidth", false }, { "network_bandwidth", "bandwidth", false },
	{ "host_bandwidth", "bandwidth", false }, { NULL, NULL, false },
};

static const struct field_spec precision_fields[] = {
	{ "weights", "dtype", true }, { "grads", "dtype", true }, { "compute", "dtype", true },
	{ "master", "dtype?", false }, { "cast_cache", "dtype?", false },
	{ "linear_input", "dtype?", false }, { "weight_copies", "count", false },
	{ "copy_dtype", "dtype", false }, { NULL, NULL, false },
};

/* What each numeric field allows (docs/language.md §3.7). */
static const struct range_spec gpu_ranges[] = {
	{ "memory", RANGE_POSITIVE_BYTES }, { "bandwidth", RANGE_NONNEG }, { "fp64", RANGE_NONNEG },
	{ "fp32", RANGE_NONNEG }, { "tf32", RANGE_NONNEG }, { "bf16", RANGE_NONNEG }, { "fp16", RANGE_NONNEG },
	{ "fp8", RANGE_NONNEG }, { "fp4", RANGE_NONNEG }, { "int8", RANGE_NONNEG },
	{ "context", RANGE_NONNEG_BYTES }, { "cublas_workspace", RANGE_NONNEG_BYTES },
	{ "nccl", RANGE_NONNEG_BYTES }, { "compute_capability", RANGE_NONNEG },
	{ "host_memory", RANGE_POSITIVE_BYTES }, { "node_bandwidth", RANGE_NONNEG },
	{ "network_bandwidth", RANGE_NONNEG }, { "host_bandwidth", RANGE_NONNEG }, { NULL, RANGE_ANY },
};
static const struct range_spec precision_ranges[] = { { "weight_copies", RANGE_NONNEG }, { NULL, RANGE_ANY } };

enum check_range check_range_of(const struct range_spec *t, const char *key)
{
	for (; t->key; t++)
		if (str_is(t->key, key))
			return t->range;
	return RANGE_ANY;
}

/* A key given twice in one record: the second wins nowhere, it is an error. */
bool check_duplicate_field(struct eval *ev, const struct field *first, const struct field *f)
{
	for (const struct field *g = first; g && g != f; g = g->next)
		if (str_is(g->name, f->name)) {
			diag_note(eval_error(ev, DIAG_DUPLICATE_FIELD, f->name_loc, "'%s' is set twice", f->name),
				  g->name_loc, "first set here");
			return true;
		}
	return false;
}

/* "'a'", "'a' and 'b'", "'a', 'b' and 'c'": one message for every missing field. */
void check_list_add(char *buf, size_t n, const char *name)
{
	size_t len = strlen(buf);
	char *and = strstr(buf, " and ");

	if (and) {		/* "'a' and 'b'" -> "'a', 'b' and 'c'" */
		memmove(and + 1, and + 4, strlen(and + 4) + 1);
		and[0] = ',';
		len = strlen(buf);
	}
	snprintf(buf + len, n - len, "%s'%s'", len ? " and " : "", name);
}

const struct field_spec *check_spec_find(const struct field_spec *specs, const char *name)
{
	/* the first byte before strcmp(): tables are searched per key of every record and job */
	for (; specs->name; specs++)
		if (str_is(specs->name, name))
			return specs;
	return NULL;
}

void check_unknown_field(struct eval *ev, const struct field_spec *specs, const struct field *f,
			 const char *what)
{
	const char *best = NULL;
	unsigned bd = 3;

	for (const struct field_spec *s = specs; s->name; s++) {
		unsigned d = unit_edit_distance(f->name, s->name);

		if (d < bd) {
			bd = d;
			best = s->name;
		}
	}
	struct diag *d = eval_error(ev, DIAG_UNKNOWN_FIELD, f->name_loc, "%s has no field '%s'", what, f->name);

	if (best)
		diag_note(d, NO_LOC, "did you mean '%s'?", best);
}

static const char *const range_words[] = {
	[RANGE_POSITIVE] = "more than 0", [RANGE_NONNEG] = "0 or more",
	[RANGE_FRACTION] = "at least 0% and below 100%", [RANGE_PERCENT] = "between 0% and 100%",
	[RANGE_AT_LEAST_1] = "at least 1", [RANGE_POSITIVE_BYTES] = "more than 0 B, in whole bytes",
	[RANGE_NONNEG_BYTES] = "0 B or more, in whole bytes",
	/* NCCL src/include/device.h MAXCHANNELS: every channel count is capped
	 * there (ncclMaxNchannels), so a larger one is never what runs */
	[RANGE_NCCL_CHANNELS] = "from 1 to 64 (NCCL's MAXCHANNELS)",
	/* c10 CUDAAllocatorConfig parseRoundUpPower2Divisions: stoi, then
	 * TORCH_CHECK(isPowerOf2_64); 2^30 is the largest power of two an int holds */
	[RANGE_POWER_OF_2] = "a power of two from 1 to 2^30 (PyTorch refuses any other)",
	[RANGE_PERCENT_ABOVE_0] = "above 0% and at most 100%",
	[RANGE_FRACTION_ABOVE_0] = "above 0% and below 100%",
	/* c10 CUDAAllocatorConfig parseMaxSplitSize: TORCH_CHECK(val > kLargeBuffer
	 * / 1 MiB), "max_split_size_mb too small, must be > 20"; the later
	 * AcceleratorAllocatorConfig takes 20 itself (>=) */
	[RANGE_SPLIT_MB] = "at least 20 (PyTorch refuses a max_split_size_mb below its 20 MiB kLargeBuffer, "
			   "and its releases before AcceleratorAllocatorConfig 20 too)",
};

/* n = 2^k for a k in 0..30. */
static bool power_of_2(struct num n)
{
	uint64_t u = 0;

	return num_is_int(n) && num_sign(n) > 0 && num_to_u64(n, &u) && u <= (1u << 30) && !(u & (u - 1));
}

static bool in_range(struct num n, enum check_range r)
{
	int sign = num_sign(n), vs1 = num_cmp(n, num_from_int(1));

	switch (r) {
	case RANGE_ANY: return true;
	case RANGE_POSITIVE: return sign > 0;
	case RANGE_NONNEG: return sign >= 0;
	case RANGE_FRACTION: return sign >= 0 && vs1 < 0;
	case RANGE_PERCENT: return sign >= 0 && vs1 <= 0;
	case RANGE_AT_LEAST_1: return vs1 >= 0;
	case RANGE_POSITIVE_BYTES: return sign > 0 && num_is_int(n);
	case RANGE_NONNEG_BYTES: return sign >= 0 && num_is_int(n);
	case RANGE_NCCL_CHANNELS: return vs1 >= 0 && num_cmp(n, num_from_int(64)) <= 0;
	case RANGE_POWER_OF_2: return power_of_2(n);
	case RANGE_PERCENT_ABOVE_0: return sign > 0 && vs1 <= 0;
	case RANGE_FRACTION_ABOVE_0: return sign > 0 && vs1 < 0;
	case RANGE_SPLIT_MB: return num_cmp(n, num_from_int(20)) >= 0;
	}
	return true;
}

bool check_range(struct eval *ev, struct value v, enum check_range r, const char *what)
{
	char x[32], y[32];
	struct num pct;

	if (v.kind != VAL_NUM || v.unknown || in_range(v.num, r))
		return true;
	if (r != RANGE_FRACTION && r != RANGE_PERCENT && r != RANGE_PERCENT_ABOVE_0 && r != RANGE_FRACTION_ABOVE_0) {
		eval_error(ev, DIAG_OUT_OF_RANGE, v.loc, "%s must be %s", what, range_words[r]);
		return false;
	}
	if (num_mul(v.num, num_from_int(100), &pct) != NUM_OK)
		pct = v.num;
	struct diag *d = eval_error(ev, DIAG_OUT_OF_RANGE, v.loc, "%s must be %s, but it is %s%%", what,
				    range_words[r], num_format(pct, x, sizeof x, 2));

	/* `headroom = 10` reads as 1000 % */
	if (num_sign(v.num) > 0 && num_is_int(v.num))
		diag_note(d, NO_LOC, "a ratio is written with %%: did you mean %s%%?",
			  num_format(v.num, y, sizeof y, 0));
	return false;
}

/* Check one value against a spec type; "dtype?" also takes `none`. */
bool check_value_type(struct eval *ev, struct value v, const char *type, const char *what)
{
	if (!strcmp(type, "dtype?")) {
		if (v.kind == VAL_NONE)
			return true;
		type = "dtype";
	}
	return eval_is_type(ev, v, type, what, v.loc);
}

/* Whether check_value_type() and check_range() both pass, without
 * reporting: a record's message words are formatted only for a field
 * that fails (every field of every reached gpu and precision is checked). */
static bool field_ok(struct value v, const char *type, enum check_range r)
{
	if (!strcmp(type, "dtype?"))
		type = v.kind == VAL_NONE ? "any" : "dtype";
	return eval_matches_type(&v, type) && (v.kind != VAL_NUM || v.unknown || in_range(v.num, r));
}

/* "gpu 'A100'": in the arena, since a name may be 1024 bytes long and a
 * message is never cut. */
static const char *record_owner(struct eval *ev, const struct decl *d)
{
	return arena_printf(ev->arena, "%s '%s'", ast_decl_keyword[d->kind], d->name);
}

static const char *field_what(struct eval *ev, const struct decl *d, const struct field *f)
{
	return arena_printf(ev->arena, "'%s' of %s", f->name, record_owner(ev, d));
}

/* `gpu A : B`, `gpu B : A`: eval_record_field() reads EVAL_MAX_BASES
 * records, so a cycle (or a longer chain) would leave every field it does
 * not write, memory included, silently unset. Reported by each record on
 * the cycle; one that only leads into a cycle is left to them. */
static void check_base_chain(struct eval *ev, const struct decl *d)
{
	const struct decl *seen[EVAL_MAX_BASES];
	const struct decl *b = d;
	unsigned n = 0;

	while (b && b->record.base) {
		b = scope_find_kind_in(ev->scope, b->record.base, b->kind, b->record.base_loc.file);
		for (unsigned i = 0; b && i < n; i++)
			if (seen[i] == b)
				return;		/* a cycle d only leads into */
		if (b == d) {
			struct diag *g = eval_error(ev, DIAG_DEFINITION_CYCLE, d->record.base_loc,
						    "%s derives from itself", record_owner(ev, d));

			for (unsigned k = 0; k < n; k++)
				diag_note(g, seen[k]->record.base_loc, "'%s' derives from '%s'", seen[k]->name,
					  seen[k]->record.base);
			return;
		}
		if (b && n + 2 > EVAL_MAX_BASES) {	/* d, n bases and b */
			eval_error(ev, DIAG_DEFINITION_CYCLE, d->record.base_loc, "%s derives through a chain of "
				   "more than %d records; memc follows at most %d", record_owner(ev, d),
				   EVAL_MAX_BASES, EVAL_MAX_BASES);
			return;
		}
		if (b)
			seen[n++] = b;
	}
}

/* A precision's weights, grads, master and compute dtypes are what autograd
 * trains and computes in: floating point ("only Tensors of floating point
 * and complex dtype can require gradients", torch/csrc/autograd/
 * python_variable.cpp THPVariable_set_requires_grad). A block-scaled type
 * (nf4, mxfp8) is packed bytes to torch; 4-bit weights are qlora's. */
static void trained_dtype_ok(struct eval *ev, const struct decl *d, const struct field *f, struct value v)
{
	static const char *const trained[] = { "weights", "grads", "master", "compute" };
	bool listed = false;

	for (size_t i = 0; i < sizeof trained / sizeof trained[0]; i++)
		listed |= str_is(f->name, trained[i]);
	if (d->kind != DECL_PRECISION || !listed || v.kind != VAL_DTYPE ||
	    (v.dtype->kind == DTYPE_FLOAT && !dtype_is_block_scaled(v.dtype)))
		return;
	eval_error(ev, DIAG_TYPE_MISMATCH, v.loc, "%s must be a floating-point dtype (fp32, bf16, fp16, fp8_e4m3): "
		   "autograd trains only those, and %s is not one%s", field_what(ev, d, f), dtype_name(v.dtype),
		   dtype_is_block_scaled(v.dtype) ? " (4-bit base weights are qlora(...)'s)" : "");
}

static void check_record(struct eval *ev, const struct decl *d, const struct field_spec *specs)
{
	for (const struct field *f = d->record.fields; f; f = f->next) {
		const struct field_spec *s = check_spec_find(specs, f->name);

		if (check_duplicate_field(ev, d->record.fields, f))
			continue;
		if (!s) {
			check_unknown_field(ev, specs, f, record_owner(ev, d));
			continue;
		}
		if (!f->value) {
			eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s must be a value, not a block",
				   field_what(ev, d, f));
			continue;
		}
		struct value v = eval_expr(ev, NULL, f->value);
		enum check_range r = check_range_of(d->kind == DECL_GPU ? gpu_ranges : precision_ranges, f->name);

		if (field_ok(v, s->type, r)) {
			trained_dtype_ok(ev, d, f, v);
			continue;
		}
		const char *what = field_what(ev, d, f);

		if (check_value_type(ev, v, s->type, what))
			check_range(ev, v, r, what);
	}
	if (d->record.base) {
		if (!scope_find_kind_in(ev->scope, d->record.base, d->kind, d->record.base_loc.file)) {
			struct diag *g = eval_error(ev, DIAG_UNDEFINED_NAME, d->record.base_loc,
						    "no %s named '%s' to derive from", ast_decl_keyword[d->kind],
						    d->record.base);

			if (d->kind == DECL_GPU)
				eval_note_gpu(ev, g, d->record.base, d->name);
			else
				eval_note_undefined(ev, g, d->record.base, d->kind);
		} else {
			check_base_chain(ev, d);
		}
		return;
	}
	char missing[256] = "";

	for (const struct field_spec *s = specs; s->name; s++) {
		bool given = false;

		for (const struct field *f = d->record.fields; f; f = f->next)
			given |= str_is(f->name, s->name);
		if (s->required && !given)
			check_list_add(missing, sizeof missing, s->name);
	}
	if (missing[0])
		eval_error(ev, DIAG_MISSING_FIELD, d->name_loc, "%s has no %s", record_owner(ev, d), missing);
}

static void check_params(struct eval *ev, const struct decl *d)
{
	for (const struct param *p = d->templ.params; p; p = p->next)
		if (p->nalts == 1 && !eval_type_known(p->type_alts[0]))
			eval_error(ev, DIAG_UNDEFINED_NAME, p->type_loc,
				   "unknown type '%s' (count, number, ratio, bytes, bandwidth, throughput, "
				   "time, bool, string, dtype, list, or an enum 'a | b')", p->type_alts[0]);
}

/* @walk: false for a template of a verified stdlib file (import.h
 * program.stdlib_verified), whose static walk was clean at build time:
 * the walk reads only the stdlib's own declarations (scope_find_in) and
 * the builtin tables, so it would be clean again. */
/* The analyzer reads `state` only in an optimizer and only `state` and
 * `temp` there: any other tensor would be accepted and count nothing. */
/* grouped (foreach temporaries of all tensors at once) has a meaning only
 * in the optimizer step; a layer's temp with it would be counted as if
 * unmarked, and the attribute table's places cannot tell the two temps
 * apart. */
static void refuse_layer_grouped(struct eval *ev, const struct stmt *s)
{
	for (const struct attr *a = s->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, "grouped"))
			eval_error(ev, DIAG_BAD_ARGUMENT, a->loc,
				   "grouped marks an optimizer's temp tensor, not a layer's");
}

static void check_tensor_kinds(struct eval *ev, const struct stmt *s, bool optimizer)
{
	for (; s; s = s->next) {
		if (s->kind == STMT_REPEAT) {
			check_tensor_kinds(ev, s->repeat.body, optimizer);
		} else if (s->kind == STMT_IF) {
			check_tensor_kinds(ev, s->if_.then_body, optimizer);
			check_tensor_kinds(ev, s->if_.else_body, optimizer);
		} else if (s->kind == STMT_TENSOR && optimizer && s->tensor.kind != TENSOR_STATE &&
			   s->tensor.kind != TENSOR_TEMP) {
			eval_error(ev, DIAG_TYPE_MISMATCH, s->loc,
				   "an optimizer body holds state and temp tensors only: '%s' would count nothing",
				   s->tensor.name);
		} else if (s->kind == STMT_TENSOR && !optimizer && s->tensor.kind == TENSOR_STATE) {
			eval_error(ev, DIAG_TYPE_MISMATCH, s->loc,
				   "state tensors belong in an optimizer body: '%s' would count nothing here "
				   "(a layer holds param, saves, temp and input tensors)", s->tensor.name);
		} else if (s->kind == STMT_TENSOR && !optimizer && s->tensor.kind == TENSOR_TEMP) {
			refuse_layer_grouped(ev, s);
		}
	}
}

static void check_template(struct eval *ev, const struct decl *d, bool walk)
{
	if (d->templ.alias) {
		eval_decl_value(ev, d, d->name_loc);
		return;
	}
	check_params(ev, d);
	if (walk) {
		check_tensor_kinds(ev, d->templ.body, d->kind == DECL_OPTIMIZER);
		check_body_static(ev, d);
	}
}

static void check_decl(struct eval *ev, const struct decl *d, bool verified)
{
	switch (d->kind) {
	case DECL_LET: eval_decl_value(ev, d, d->name_loc); break;
	case DECL_GPU: check_record(ev, d, gpu_fields); break;
	case DECL_PRECISION: check_record(ev, d, precision_fields); break;
	case DECL_LAYER: case DECL_MODEL: case DECL_OPTIMIZER: check_template(ev, d, !verified); break;
	default: break;
	}
}

struct check_result *check_program_decls(struct arena *a, struct interner *in, struct diag_engine *de,
					 const struct src_table *src, const struct program *p)
{
	struct check_result *r = ARENA_NEW(a, struct check_result);

	/* the importer shows stdlib files as "<stdlib>/...": their names yield */
	for (size_t i = 0; src && i < p->nfiles; i++) {
		const struct src_file *f = src_get(src, p->files[i]->file);

		p->files[i]->stdlib = f && f->display_name && !strncmp(f->display_name, "<stdlib>/", 9);
	}
	r->scope = scope_build(a, in, de, p);
	r->ev = eval_new(a, in, de, r->scope);
	r->ev->src = src;
	r->ev->stdlib_dir = p->stdlib_dir;
	r->ev->import_cache = p->cache && import_cache_interner(p->cache) == in ? p->cache : NULL;
	if (diag_error_count(de))
		return r;
	/* what lazy loading left unreached is checked by make check-stdlib */
	const struct reach *reach = p->reach;

	for (size_t i = 0; i < p->nfiles; i++)
		for (const struct decl *d = p->files[i]->decls; d; d = d->next) {
			if (!reach_wants(reach, d))
				continue;
			if (r->ev->total_steps > EVAL_MAX_TOTAL_STEPS) {
				eval_error(r->ev, DIAG_INSTANTIATION_LIMIT, d->loc,
					   "the program's templates expand into more than %d statements; "
					   "stopping here", EVAL_MAX_TOTAL_STEPS);
				return r;
			}
			check_decl(r->ev, d, p->stdlib_verified && p->files[i]->stdlib);
		}
	r->shared_errors = diag_error_count(de);
	r->jobs_follow = true;
	return r;
}

struct check_job *check_program_job(struct check_result *r, const struct decl *train)
{
	/* Each job reports its own errors (eval.c seen_before). */
	r->ev->job_gen++;
	r->ev->ndivisible_seen = 0;
	return check_train(r->ev, train);
}

struct check_result *check_program(struct arena *a, struct interner *in, struct diag_engine *de,
				   const struct src_table *src, const struct program *p)
{
	struct check_result *r = check_program_decls(a, in, de, src, p);
	struct check_job **tail = &r->jobs;

	for (const struct decl *d = p->root ? p->root->decls : NULL; r->jobs_follow && d; d = d->next) {
		if (d->kind != DECL_TRAIN)
			continue;
		*tail = check_program_job(r, d);
		tail = &(*tail)->next;
	}
	return r;
}
