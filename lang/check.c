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
#include "lang/eval_impl.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/reach.h"
#include "lang/scope.h"
#include "lang/units.h"

/* Fields of gpu and precision records: name, type, required. */
static const struct field_spec gpu_fields[] = {
	{ "memory", "bytes", true }, { "bandwidth", "bandwidth", false },
	{ "fp64", "throughput", false }, { "fp32", "throughput", false }, { "tf32", "throughput", false },
	{ "bf16", "throughput", false }, { "fp16", "throughput", false }, { "fp8", "throughput", false },
	{ "fp4", "throughput", false }, { "int8", "throughput", false },
	{ "family", "string", false }, { "vendor", "string", false }, { "context", "bytes", false },
	{ "cublas_workspace", "bytes", false }, { "nccl", "bytes", false }, { NULL, NULL, false },
};

static const struct field_spec precision_fields[] = {
	{ "weights", "dtype", true }, { "grads", "dtype", true }, { "compute", "dtype", true },
	{ "master", "dtype?", false }, { "cast_cache", "dtype?", false },
	{ "linear_input", "dtype?", false }, { "weight_copies", "count", false },
	{ "copy_dtype", "dtype", false }, { NULL, NULL, false },
};

/* A key given twice in one record: the second wins nowhere, it is an error. */
bool check_duplicate_field(struct eval *ev, const struct field *first, const struct field *f)
{
	for (const struct field *g = first; g && g != f; g = g->next)
		if (!strcmp(g->name, f->name)) {
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
	for (; specs->name; specs++)
		if (!strcmp(specs->name, name))
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

static void check_record(struct eval *ev, const struct decl *d, const struct field_spec *specs)
{
	char what[96], owner[80];

	snprintf(owner, sizeof owner, "%s '%s'", ast_decl_keyword[d->kind], d->name);
	for (const struct field *f = d->record.fields; f; f = f->next) {
		const struct field_spec *s = check_spec_find(specs, f->name);

		snprintf(what, sizeof what, "'%s' of %s", f->name, owner);
		if (check_duplicate_field(ev, d->record.fields, f))
			continue;
		if (!s) {
			check_unknown_field(ev, specs, f, owner);
			continue;
		}
		if (!f->value) {
			eval_error(ev, DIAG_TYPE_MISMATCH, f->loc, "%s must be a value, not a block", what);
			continue;
		}
		check_value_type(ev, eval_expr(ev, NULL, f->value), s->type, what);
	}
	if (d->record.base) {
		if (!scope_find_kind(ev->scope, d->record.base, d->kind))
			eval_error(ev, DIAG_UNDEFINED_NAME, d->record.base_loc, "no %s named '%s' to derive from",
				   ast_decl_keyword[d->kind], d->record.base);
		return;
	}
	char missing[256] = "";

	for (const struct field_spec *s = specs; s->name; s++) {
		bool given = false;

		for (const struct field *f = d->record.fields; f; f = f->next)
			given |= !strcmp(f->name, s->name);
		if (s->required && !given)
			check_list_add(missing, sizeof missing, s->name);
	}
	if (missing[0])
		eval_error(ev, DIAG_MISSING_FIELD, d->name_loc, "%s has no %s", owner, missing);
}

static void check_params(struct eval *ev, const struct decl *d)
{
	for (const struct param *p = d->templ.params; p; p = p->next)
		if (p->nalts == 1 && !eval_type_known(p->type_alts[0]))
			eval_error(ev, DIAG_UNDEFINED_NAME, p->type_loc,
				   "unknown type '%s' (count, number, ratio, bytes, bandwidth, throughput, "
				   "time, bool, string, dtype, list, or an enum 'a | b')", p->type_alts[0]);
}

static void check_template(struct eval *ev, const struct decl *d)
{
	if (d->templ.alias) {
		eval_decl_value(ev, d, d->name_loc);
		return;
	}
	check_params(ev, d);
	check_body_static(ev, d);
}

static void check_decl(struct eval *ev, const struct decl *d)
{
	switch (d->kind) {
	case DECL_LET: eval_decl_value(ev, d, d->name_loc); break;
	case DECL_GPU: check_record(ev, d, gpu_fields); break;
	case DECL_PRECISION: check_record(ev, d, precision_fields); break;
	case DECL_LAYER: case DECL_MODEL: case DECL_OPTIMIZER: check_template(ev, d); break;
	default: break;
	}
}

struct check_result *check_program(struct arena *a, struct interner *in, struct diag_engine *de,
				   const struct src_table *src, const struct program *p)
{
	struct check_result *r = ARENA_NEW(a, struct check_result);
	struct check_job **tail = &r->jobs;

	r->scope = scope_build(a, in, de, p);
	r->ev = eval_new(a, in, de, r->scope);
	r->ev->src = src;
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
			check_decl(r->ev, d);
		}
	for (const struct decl *d = p->root ? p->root->decls : NULL; d; d = d->next) {
		if (d->kind != DECL_TRAIN)
			continue;
		*tail = check_train(r->ev, d);
		tail = &(*tail)->next;
	}
	return r;
}

bool check_job_field(const struct check_job *job, const char *key, struct value *out)
{
	for (unsigned i = 0; i < job->nfields; i++)
		if (!strcmp(job->names[i], key)) {
			*out = job->fields[i];
			return true;
		}
	return false;
}
