/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - phase order after import, with gates: nothing runs after
 * a phase that reported an error. Check, then for each train block of the
 * root file: build the job, analyse it, warn about capacity, report.
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/lower/build.h"
#include "analyzer/fit/fit.h"
#include "analyzer/memory/offload.h"
#include "analyzer/pipeline.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/scope.h"
#include "lang/source.h"

static bool json_first_file = true;

void pipeline_begin(const struct driver_opts *o)
{
	json_first_file = true;
	if (o->command == DRIVER_REPORT && o->format == DRIVER_FORMAT_JSON)
		report_json_begin(stdout);
	if (o->command == DRIVER_REPORT && o->format == DRIVER_FORMAT_HTML)
		report_html_begin(stdout);
}

void pipeline_end(const struct driver_opts *o)
{
	if (o->command == DRIVER_REPORT && o->format == DRIVER_FORMAT_JSON)
		report_json_end(stdout);
	if (o->command == DRIVER_REPORT && o->format == DRIVER_FORMAT_HTML)
		report_html_end(stdout);
}

/* The memory model's totals overflowed; it knows no lines, so blame the
 * job's numeric key with the largest value (seq_len, a bucket size, ...). */
static void overflow_error(struct pipeline *p, const struct check_job *cj, const struct build *bd)
{
	uint64_t n = 0;
	unsigned best = cj->nfields;

	for (unsigned i = 0; i < cj->nfields; i++) {
		const struct value *v = &cj->fields[i];
		uint64_t u;

		if (v->kind == VAL_NUM && !v->unknown && num_to_u64(num_floor(v->num), &u) &&
		    (best == cj->nfields || u > n)) {
			best = i;
			n = u;
		}
	}
	if (best == cj->nfields)
		diag_error(p->diag, DIAG_OVERFLOW, bd->loc_train, "this job's memory would overflow 64 bits");
	else
		diag_error(p->diag, DIAG_OVERFLOW, cj->fields[best].origin.file ? cj->fields[best].origin :
			   bd->loc_train, "this job's memory would overflow 64 bits; its largest factor is %s (%llu)",
			   cj->names[best], (unsigned long long)n);
}

static struct loc at_or(struct loc a, struct loc b)
{
	return a.file ? a : b;
}

/* Megatron-Core's split rules (memory-model.md §4.6), blamed on the pp line
 * (vp's when only the chunking fails; first/last_stage_layers' or
 * account_for_*'s when those are what the rule refuses). */
static void split_error(struct pipeline *p, const struct build *bd)
{
	const struct mem_job *j = &bd->job;
	uint64_t sl = 0;
	struct loc pp = at_or(bd->loc_pp, at_or(bd->loc_tp, bd->loc_train));
	bool v = mem_pp_v(j->schedule);
	unsigned n = (unsigned)j->pp * (v ? 2 : 1);

	switch (mem_pp_split(j, &sl)) {
	case MEM_SPLIT_LIST_LEN: case MEM_SPLIT_LIST_SUM: case MEM_SPLIT_LIST_MIXED:
		/* the checker's check_stage_layers says it first, at the entry */
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_stage_layers, pp), "stage_layers does "
			   "not split the model's repeated layers over its %llu model chunks",
			   (unsigned long long)mem_pp_model_chunks(j));
		break;
	case MEM_SPLIT_VP:
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_vp, pp),
			   "a stage of %llu layers does not split into vp = %u model chunks",
			   (unsigned long long)sl, (unsigned)j->vp);
		break;
	case MEM_SPLIT_MIDDLE:
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_first_last, pp), "the layers between "
			   "the first and last stage do not split evenly over the other %u stages; change first_stage_layers or "
			   "last_stage_layers", n - (j->first_stage_layers != 0) - (j->last_stage_layers != 0));
		break;
	case MEM_SPLIT_EDGES:
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_first_last, pp), "first_stage_layers + "
			   "last_stage_layers exceed the model's repeated layers");
		break;
	case MEM_SPLIT_ACCOUNT:
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_account, pp), "account_for_embedding/"
			   "account_for_loss cannot be combined with first_stage_layers/last_stage_layers (as in Megatron-Core)");
		break;
	default:
		diag_error(p->diag, DIAG_BAD_LAYOUT, pp, "the model's repeated blocks%s do not split "
			   "evenly over %s = %u stages; set first_stage_layers/last_stage_layers or change pp",
			   j->pp_account_embedding || j->pp_account_loss ? " (with the accounted embedding/loss)" : "",
			   !v ? "pp" : j->schedule == MEM_PP_ZBV ? "the zbv schedule's 2 x pp" :
			   "the dualpipev schedule's 2 x pp", n);
	}
}

/* Megatron-Core forward_backward_pipelining_with_interleaving: the group
 * "should range in [PP, M]", and a last group below pp "introduces
 * dependency bubbles". */
static void group_error(struct pipeline *p, const struct build *bd, struct loc at)
{
	const struct mem_job *j = &bd->job;
	unsigned long long g = j->pp_group, m = j->micro_batches;

	if (g < j->pp || g > m)
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_pp_group, at), "'microbatch_group_size_"
			   "per_vp_stage' = %llu must be between pp = %u and grad_accum = %llu (Megatron-Core "
			   "refuses it); choose a group in that range", g, (unsigned)j->pp, m);
	else
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_grad_accum, at), "grad_accum = %llu "
			   "leaves a last group of %llu micro-batches, below pp = %u (Megatron-Core refuses "
			   "it: a dependency bubble); make grad_accum a multiple of %llu or leave at least %u "
			   "over", m, m % g, (unsigned)j->pp, g, (unsigned)j->pp);
}

/* DualPipe(V).step's asserts (mem_pp_dual_rule), at pp or grad_accum. */
static void dual_error(struct pipeline *p, const struct build *bd, struct loc at)
{
	const struct mem_job *j = &bd->job;
	const char *name = j->schedule == MEM_PP_DUALPIPEV ? "dualpipev" : "dualpipe";
	unsigned long long m = j->micro_batches, need = 2 * (unsigned long long)j->pp;
	struct loc ga = at_or(bd->loc_grad_accum, at);

	switch (mem_pp_dual_rule(j)) {
	case MEM_DUAL_PP_ODD:
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_pp, at), "the dualpipe schedule pairs "
			   "rank i with rank pp - 1 - i, so pp = %u must be even (DualPipe.step asserts "
			   "it); make pp even or use schedule = \"dualpipev\"", (unsigned)j->pp);
		break;
	case MEM_DUAL_MB_ODD:
		diag_error(p->diag, DIAG_BAD_LAYOUT, ga, "the dualpipe schedule feeds half the "
			   "micro-batches from each end, so grad_accum = %llu must be even (DualPipe.step "
			   "asserts it); make grad_accum even", m);
		break;
	default:
		diag_error(p->diag, DIAG_BAD_LAYOUT, ga, "the %s schedule needs at least 2 x pp = %llu "
			   "micro-batches, but grad_accum = %llu (%s.step asserts num_chunks >= num_ranks "
			   "* 2); make grad_accum at least %llu", name, need, m,
			   j->schedule == MEM_PP_DUALPIPEV ? "DualPipeV" : "DualPipe", need);
	}
}

/* A pipeline split that mem_analyze refused is the user's layout error. */
static void layout_error(struct pipeline *p, const struct check_job *cj, const struct build *bd,
			 enum mem_status st)
{
	struct loc at = bd->loc_tp.file ? bd->loc_tp : bd->loc_train;
	struct value frag;
	double f = bd->job.frag_factor;

	if (st == MEM_E_OVERFLOW)
		overflow_error(p, cj, bd);
	else if (st == MEM_E_INVALID && f != 0.0 && !(f >= 1.0 && f < 100.0) &&
		 check_job_field(cj, "overhead.fragmentation", &frag))
		diag_error(p->diag, DIAG_TYPE_MISMATCH, frag.origin.file ? frag.origin : bd->loc_train,
			   "'overhead.fragmentation' must be at least 0 and below 99");
	else if (st == MEM_E_PP_UNEVEN)
		split_error(p, bd);
	else if (st == MEM_E_PP_DUALPIPE)
		dual_error(p, bd, at);
	else if (st == MEM_E_PP_MICRO_BATCHES)
		diag_error(p->diag, DIAG_BAD_LAYOUT, at_or(bd->loc_grad_accum, at),
			   "the interleaved schedule needs the micro-batches (grad_accum = %llu) to be a "
			   "multiple of pp = %u; make grad_accum a multiple of %u",
			   (unsigned long long)bd->job.micro_batches, (unsigned)bd->job.pp, (unsigned)bd->job.pp);
	else if (st == MEM_E_PP_GROUP)
		group_error(p, bd, at);
	else
		diag_error(p->diag, DIAG_BAD_LAYOUT, at, "this job cannot be analysed: %s",
			   mem_status_str(st));
}

/* A job that could not be built still gets its header line in the report:
 * what it was written with, never a count from half a walk. */
static void header_only(struct build *bd, const struct check_job *cj)
{
	uint64_t nodes = 0, per = 0, gpus = 0;

	memset(&bd->rep, 0, sizeof bd->rep);
	bd->rep.name = cj->decl->name;
	bd->rep.model = cj->model.label;
	if (cj->cluster.kind == VAL_CLUSTER && cj->cluster.decl)
		bd->rep.gpu = cj->cluster.decl->name;
	if (bd->rep.gpu && num_to_u64(cj->cluster.nodes, &nodes) && num_to_u64(cj->cluster.gpus, &per) &&
	    !__builtin_mul_overflow(nodes, per, &gpus)) {
		bd->rep.gpus = gpus;
		bd->rep.nodes = nodes;
	}
}

/* Build, analyse and fit-check one job with everything in @scratch (the
 * evaluator's walks included), which the caller frees after the report. */
static void analyse(struct check_result *cr, const struct check_job *cj, struct arena *scratch,
		    struct build *bd, struct mem_result *res, struct pipeline *p)
{
	struct build_override none = { .zero = -1 };

	if (!build_job(cr->ev, scratch, cj, &none, false, bd)) {
		header_only(bd, cj);
		return;
	}
	bd->job.phase_series = p->opts->format == DRIVER_FORMAT_HTML;	/* the chart */
	/* explain strings only for what prints them (--explain, the HTML page) */
	bd->job.no_explain = !p->opts->explain && p->opts->format != DRIVER_FORMAT_HTML;
	enum mem_status st = mem_analyze(&bd->job, res);

	if (st != MEM_OK) {
		layout_error(p, cj, bd, st);
		header_only(bd, cj);
		return;
	}
	bd->rep.result = res;
	bd->rep.analysed = true;
	if (phases_analyze(scratch, &bd->job, res, &bd->run_in, &bd->run)) {
		bd->rep.run = &bd->run;
	} else if (bd->run.overflow) {
		/* eval { batch } past 64 bits: an error, not a report without the phase */
		overflow_error(p, cj, bd);
		mem_result_free(res);
		header_only(bd, cj);
		return;
	}
	fit_check(p->fit, cr->ev, scratch, cj, bd);
	offload_check(cr->ev, bd);
}

static void set_position(struct pipeline *p, struct build *bd, const struct check_job *cj)
{
	const struct src_file *f = src_get(p->src, cj->decl->name_loc.file);

	bd->rep.file = f->display_name;
	bd->rep.line = src_line_of(f, cj->decl->name_loc.start);
}

/* --explain: where every input of the job was written, so each number in
 * the formulas above can be traced to a line. */
static void print_inputs(struct pipeline *p, const struct check_job *cj, const struct scope *scope)
{
	printf("  inputs:\n");
	for (unsigned i = 0; i < cj->nfields; i++) {
		struct loc at = cj->fields[i].origin;
		const struct src_file *f = at.file ? src_get(p->src, at.file) : NULL;

		if (!f)
			continue;
		int len = (int)(at.end - at.start);
		const char *text = f->text + at.start;
		const char *nl = memchr(text, '\n', (size_t)len);

		if (nl)
			len = (int)(nl - text);
		printf("    %-40.*s %s:%u", len > 40 ? 40 : len, text, f->display_name,
		       src_line_of(f, at.start));
		const struct decl *d = cj->fields[i].decl;
		const struct decl *alias = cj->fields[i].label ? scope_find(scope, cj->fields[i].label) : NULL;

		if (alias && alias->kind == (d ? d->kind : DECL__COUNT))
			d = alias;	/* `model = llama2_7b`: point at the alias, not the template */
		const struct src_file *df = d && d->name_loc.file ? src_get(p->src, d->name_loc.file) : NULL;

		if (df)	/* and where what it names is declared */
			printf("  ('%s' at %s:%u)", d->name, df->display_name, src_line_of(df, d->name_loc.start));
		putchar('\n');
	}
}

/* One job's report, as soon as it is analysed: nothing of a job is kept
 * once its report is out (JSON streams its jobs the same way). */
static void print(struct pipeline *p, const struct build *bd, const struct check_job *cj,
		  const struct scope *scope, struct report_jw *jw, size_t i)
{
	if (p->opts->command != DRIVER_REPORT)
		return;
	if (p->opts->format == DRIVER_FORMAT_JSON) {
		report_json_job(jw, &bd->rep);
		return;
	}
	if (p->opts->format == DRIVER_FORMAT_HTML) {
		report_html_job(stdout, &bd->rep);
		return;
	}
	if (i)
		fputc('\n', stdout);
	report_text(stdout, &bd->rep, p->opts->explain);
	if (p->opts->explain)
		print_inputs(p, cj, scope);
}

/* Check, analyse and report the train block @d, everything in an arena
 * freed once its report is out: memory does not grow with the number of
 * jobs beyond their diagnostics. */
static void one_job(struct pipeline *p, struct check_result *cr, const struct decl *d,
		    struct report_jw *jw, size_t i)
{
	struct arena scratch = { 0 };
	struct arena *was = eval_use_arena(cr->ev, &scratch);
	const struct check_job *j = check_program_job(cr, d);
	struct build bd = { .rep.name = NULL };
	struct mem_result res;

	diag_flush(p->diag);
	/* Jobs are independent: one with an error of its own does not stop the
	 * others; an error outside every train block (a template, a gpu) does. */
	if (j->ok && !cr->shared_errors && !diag_too_many(p->diag))
		analyse(cr, j, &scratch, &bd, &res, p);
	eval_use_arena(cr->ev, was);
	if (!bd.rep.name)
		header_only(&bd, j);
	set_position(p, &bd, j);
	diag_flush(p->diag);
	print(p, &bd, j, cr->scope, jw, i);
	if (bd.rep.analysed)
		mem_result_free(&res);
	arena_free(&scratch);
}

void pipeline_report_unbuilt(struct pipeline *p, const char *file)
{
	if (p->reported)
		return;
	report_json_file(stdout, file, NULL, 0, p->diag, json_first_file);
	json_first_file = false;
	p->reported = true;
}

int pipeline_run(struct pipeline *p)
{
	if (p->opts->dump_ast) {
		ast_dump(stdout, p->program->root);
		return diag_error_count(p->diag) ? 1 : 0;
	}
	if (diag_error_count(p->diag))
		return 1;
	struct check_result *cr = check_program_decls(p->arena, p->interner, p->diag, p->src, p->program);
	struct report_jw jw;
	bool json = p->opts->command == DRIVER_REPORT && p->opts->format == DRIVER_FORMAT_JSON;
	size_t i = 0;

	p->fit = fit_memo_new(p->arena, p->opts, p->src, p->program, cr->ev);
	diag_flush(p->diag);
	if (json)
		report_json_file_begin(&jw, stdout, src_get(p->src, 1)->display_name, json_first_file);
	for (const struct decl *d = p->program->root->decls; cr->jobs_follow && d; d = d->next)
		if (d->kind == DECL_TRAIN)
			one_job(p, cr, d, &jw, i++);
	fit_memo_free(p->fit);
	p->fit = NULL;
	diag_flush(p->diag);
	if (json) {
		report_json_file_end(&jw, p->diag);
		json_first_file = false;
		p->reported = true;
	}
	return diag_error_count(p->diag) ? 1 : 0;
}
