/* SPDX-License-Identifier: MIT */
/*
 * prun.c - one job through the pipeline, in process (see prun.h).
 *
 * This is analyzer/pipeline.c's analyse() and print() for the first train
 * block of one file, with diagnostics and both reports captured in memory
 * streams instead of stderr and stdout.
 */
#include "tests/property/prun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/fit/fit.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

/* A memory stream's text copied into @keep (the stream is closed). */
static const char *take(struct arena *keep, FILE *f, char **buf, size_t *len)
{
	const char *s;

	fclose(f);
	s = arena_strndup(keep, *buf ? *buf : "", *buf ? *len : 0);
	free(*buf);
	return s;
}

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* Tensor count and ZeRO-3-persistent weight bytes over all layer instances:
 * the slack a property allows for per-tensor rounding and replication. */
static void count_tensors(const struct mem_job *job, struct prun *out)
{
	for (size_t b = 0; b < job->nblocks; b++) {
		const struct mem_block *blk = &job->blocks[b];
		const struct mem_layer *first = blk->nlayers ? &blk->layers[0] : NULL;

		/* 512: one rounding of the saves less the shared input */
		uint64_t saves = 0;

		for (size_t l = 0; blk->is_body && l < blk->nlayers; l++)
			saves += blk->layers[l].saves_bytes + 512;
		out->repeat_saves = saves > out->repeat_saves ? saves : out->repeat_saves;
		if (blk->is_body && first) {
			uint64_t x = 512 + (first->input_saved_bytes < first->input_bytes ?
					    first->input_bytes + 512 : 0);

			out->ckpt_extra = x > out->ckpt_extra ? x : out->ckpt_extra;
		}

		for (size_t l = 0; l < blk->nlayers; l++) {
			const struct mem_layer *ly = &blk->layers[l];

			out->tensors += blk->repeat * ly->nparams;
			for (size_t p = 0; p < ly->nparams; p++)
				if (ly->params[p].replicated_dp)
					out->replicated_bytes += blk->repeat * (ly->params[p].weight_bytes + 512);
				else if (ly->params[p].quant_state_bytes)	/* stays whole (mem_cost.c) */
					out->replicated_bytes += blk->repeat *
								 (ly->params[p].quant_state_bytes + 512);
		}
	}
}

static void reports(struct arena *keep, struct build *bd, const struct diag_engine *de,
		    struct prun *out)
{
	char *tb = NULL, *jb = NULL;
	size_t tl = 0, jl = 0;
	FILE *tf = open_memstream(&tb, &tl), *jf = open_memstream(&jb, &jl);

	if (!tf || !jf) {
		fprintf(stderr, "property: open_memstream failed\n");
		exit(2);
	}
	report_text(tf, &bd->rep, false);
	report_json_begin(jf);
	report_json_file(jf, bd->rep.file, &bd->rep, 1, de, true);
	report_json_end(jf);
	out->text = take(keep, tf, &tb, &tl);
	out->json = take(keep, jf, &jb, &jl);
}

static void copy_result(struct arena *keep, const struct build *bd, const struct mem_result *res,
			struct prun *out)
{
	out->nclasses = res->nclasses;
	out->classes = ARENA_NEW_ARRAY(keep, struct mem_class, res->nclasses ? res->nclasses : 1);
	memcpy(out->classes, res->classes, res->nclasses * sizeof(*res->classes));
	for (size_t i = 0; i < res->nclasses; i++) {
		/* the names point into the compilation's arena */
		const char *n = res->classes[i].peak.layer_name;

		out->classes[i].peak.layer_name = n ? arena_strdup(keep, n) : NULL;
		out->classes[i].peak.origin = NULL;
	}
	out->dp = bd->job.dp;
	out->tp = bd->job.tp;
	out->pp = bd->job.pp;
	out->params_total = bd->rep.params_total;
	out->params_trainable = bd->rep.params_trainable;
	count_tensors(&bd->job, out);
}

/* Build, analyse and report the first job, as pipeline.c's analyse(). */
static void analyse(struct arena *keep, struct arena *a, struct check_result *cr,
		    struct diag_engine *de, const struct build_override *ov, struct prun *out,
		    struct fit_memo *fit)
{
	struct build_override none = { .zero = -1 };
	const struct check_job *cj = cr->jobs;
	struct build bd;
	struct mem_result res;

	if (!cj || diag_error_count(de) || !build_job(cr->ev, a, cj, ov ? ov : &none, false, &bd))
		return;
	if (mem_analyze(&bd.job, &res) != MEM_OK)
		return;
	bd.rep.result = &res;
	bd.rep.analysed = true;
	bd.rep.file = "job.mem";
	bd.rep.line = 1;
	fit_check(fit, cr->ev, a, cj, &bd);
	copy_result(keep, &bd, &res, out);
	reports(keep, &bd, de, out);
	out->ok = diag_error_count(de) == 0;
	mem_result_free(&res);
}

void prun_job(struct arena *keep, const struct prun_opts *o, const char *text,
	      const struct build_override *ov, struct prun *out)
{
	struct arena a = { 0 };
	char *db = NULL;
	size_t dl = 0;
	FILE *df = open_memstream(&db, &dl);

	memset(out, 0, sizeof(*out));
	if (!df || !write_file(o->path, text)) {
		fprintf(stderr, "property: cannot write %s\n", o->path);
		exit(2);
	}
	struct interner *in = interner_new(&a);
	struct src_table *src = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, src, df);
	struct import_opts io = { .stdlib_dir = o->stdlib_dir };

	diag_set_max_errors(de, 20);
	struct program *prog = import_load(&a, in, src, de, o->path, &io);

	if (prog->root && !diag_error_count(de)) {
		struct check_result *cr = check_program(&a, in, de, src, prog);
		struct driver_opts dopts = { .ndirs = 0 };
		struct fit_memo *fit = fit_memo_new(&a, &dopts, src, prog, cr->ev);

		analyse(keep, &a, cr, de, ov, out, fit);
		fit_memo_free(fit);
	}
	diag_flush(de);
	out->diags = take(keep, df, &db, &dl);
	arena_free(&a);
}

uint64_t prun_max(const struct prun *r, uint64_t (*f)(const struct mem_class *))
{
	uint64_t m = 0;

	for (size_t i = 0; i < r->nclasses; i++)
		if (f(&r->classes[i]) > m)
			m = f(&r->classes[i]);
	return m;
}
