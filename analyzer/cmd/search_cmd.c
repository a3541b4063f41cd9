/* SPDX-License-Identifier: MIT */
/*
 * search_cmd.c - `memc search FILE [--job NAME] [--gpus N,...] [--top K]
 * [--mfu X] [--format text|json|csv]`: the command line and the output
 * (docs/search.md). The file is compiled once as `memc check` would, its
 * errors printed; each job is then searched (search.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/search_cmd.h"
#include "analyzer/cmd/search_impl.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/cmd/search_pick.h"
#include "analyzer/out/jsonw.h"
#include "analyzer/out/report.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/num.h"
#include "lang/source.h"

/* The default --mfu (docs/search.md "The MFU assumption"). */
#define SEARCH_DEFAULT_MFU 0.5

const char search_usage_text[] =
	"usage: memc search [--job NAME] [--gpus N,...] [--top K] [--mfu X] [--stats]\n"
	"                   [--format text|json|csv] [-I DIR] [--stdlib DIR] FILE\n\n"
	"For each train block of FILE (or the one named NAME): every layout of its model\n"
	"on its cluster (or on N GPUs of its type, for each N given): dp, tp, pp, vp, cp,\n"
	"ep, the ZeRO stage, the recompute mode, micro_batch with grad_accum keeping the\n"
	"global batch, optimizer offload. Those that divide are ranked by a first-order\n"
	"step-time model with the math at X of the GPU's peak (default 0.5), and the K\n"
	"fastest that fit with the job's headroom (default 5) are printed best first as\n"
	"train blocks, each verified by checking the file with it in (docs/search.md).\n"
	"--stats: the counts and the time on standard error.\n"
	"Exit status 0: answered (also 'nothing fits'); 1: FILE has errors or no such\n"
	"job; 2: usage.\n";

enum search_format { SEARCH_TEXT, SEARCH_JSON, SEARCH_CSV };

struct search_args {
	struct driver_opts o;
	const char *file, *job;
	enum search_format format;
	struct search_opts so;
	uint32_t *gpus;
	bool stats;
};

/* A whole number from 1 to @max: no sign, no blank, no suffix. */
static bool whole(const char *v, unsigned long long max, unsigned long long *out)
{
	unsigned long long n = 0;

	if (!*v)
		return false;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9' || n > max / 10)
			return false;
		n = n * 10 + (unsigned)(*p - '0');
	}
	*out = n;
	return n >= 1 && n <= max;
}

/* --gpus 8,64,128: each a cluster size of the job's GPU. */
static bool parse_gpus(struct search_args *a, const char *v)
{
	char *copy = strdup(v), *save = NULL;
	size_t n = 1;

	if (!copy)
		return false;
	for (const char *p = v; *p; p++)
		n += *p == ',';
	a->gpus = realloc(a->gpus, n * sizeof *a->gpus);
	a->so.gpus = a->gpus;
	a->so.ngpus = 0;
	bool ok = a->gpus != NULL;

	for (char *t = strtok_r(copy, ",", &save); ok && t; t = strtok_r(NULL, ",", &save)) {
		unsigned long long g;

		ok = whole(t, BUILD_MAX_GPUS, &g);
		if (ok)
			a->gpus[a->so.ngpus++] = (uint32_t)g;
	}
	free(copy);
	return ok && a->so.ngpus == n;
}

static int set_value(struct search_args *a, size_t k, const char *name, const char *v)
{
	unsigned long long n;
	char *end;

	if (k == 0)
		a->job = v;
	else if (k == 1 && !parse_gpus(a, v))
		return driver_usage("search", "--gpus needs GPU counts from 1 to 1048576, separated by commas, not", v);
	else if (k == 2 && !whole(v, 1000000, &n))
		return driver_usage("search", "--top needs a whole number from 1 to 1000000, not", v);
	else if (k == 2)
		a->so.top = (size_t)n;
	else if (k == 3 && (a->so.mfu = strtod(v, &end), *end || !(a->so.mfu > 0 && a->so.mfu <= 1)))
		return driver_usage("search", "--mfu needs a fraction above 0 and at most 1, not", v);
	else if (k == 4 && !strcmp(v, "text"))
		a->format = SEARCH_TEXT;
	else if (k == 4 && !strcmp(v, "json"))
		a->format = SEARCH_JSON;
	else if (k == 4 && !strcmp(v, "csv"))
		a->format = SEARCH_CSV;
	else if (k == 4)
		return driver_usage("search", "unknown format (text, json, csv):", v);
	else if (k >= 5 && !driver_is_dir(v))	/* a typo must not find a same-named file elsewhere */
		return driver_usage("search", "not a directory:", v);
	else if (k == 5)
		a->o.dirs[a->o.ndirs++] = v;
	else if (k == 6)
		a->o.stdlib_dir = v;
	(void)name;
	return -1;
}

static int parse_one(struct search_args *a, int argc, char **argv, int *i)
{
	static const char *names[] = { "--job", "--gpus", "--top", "--mfu", "--format", "-I", "--stdlib" };
	bool hit;

	if (!strcmp(argv[*i], "--stats"))
		return a->stats = true, -1;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const char *v = driver_option_value(argc, argv, i, names[k], &hit);

		if (!hit)
			continue;
		if (!v || !*v)
			return driver_usage("search", "option needs a value:", names[k]);
		return set_value(a, k, names[k], v);
	}
	return driver_usage("search", "unknown option", argv[*i]);
}

static int option_of(void *ctx, int argc, char **argv, int *i)
{
	return parse_one(ctx, argc, argv, i);
}

static int parse_search_args(struct search_args *a, int argc, char **argv, const char **dirs)
{
	a->o.dirs = dirs;
	a->o.argv0 = argv[0];
	a->so.top = 5;
	a->so.mfu = SEARCH_DEFAULT_MFU;
	a->so.progress = isatty(STDERR_FILENO);
	return driver_parse_file_args("search", argc, argv, &a->file, option_of, a);
}

/* ---- output ---- */

static const char *thousands(double v, char *buf, size_t n)
{
	char raw[32];
	size_t len, o = 0;

	snprintf(raw, sizeof raw, "%.0f", v);
	len = strlen(raw);
	for (size_t i = 0; i < len && o + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}

static const char *pick_name(struct search_ctx *c, size_t i)
{
	return arena_printf(c->arena, "%s_%zu", c->job->decl->name, i + 1);
}

static void print_header(const struct search_ctx *c)
{
	const struct search_facts *f = &c->facts;
	char a[32], b[32], d[32];

	printf("search %s: %s on %s; global batch %s x %llu tokens; math at %.0f%% of %s TFLOPS\n",
	       c->job->decl->name, c->job->model.label ? c->job->model.label : c->job->model.decl->name,
	       c->job->cluster.decl->name, thousands((double)f->global_batch, a, sizeof a),
	       (unsigned long long)f->seq_len, f->mfu * 100, thousands(f->peak_flops / 1e12, b, sizeof b));
	printf("  %s layouts divide; %s analysed for memory; %s verified\n", thousands((double)c->layouts, a, sizeof a),
	       thousands((double)c->analysed, b, sizeof b), thousands((double)c->verified, d, sizeof d));
	printf("  as written: %s tokens/s/GPU, step %.2f s, MFU %.1f%%\n",
	       thousands(c->written.tokens_per_s, a, sizeof a), c->written.step_s, c->written.mfu * 100);
	if (f->assumed_links)
		printf("  (%s gives no node_bandwidth, network_bandwidth or host_bandwidth: assumed 32 GB/s in a node "
		       "and to the host, 12.5 GB/s between nodes)\n", c->job->cluster.decl->name);
}

static void print_text(struct search_ctx *c)
{
	char tok[32], b[32], cap[32];

	print_header(c);
	if (!c->npicks)
		printf("  nothing fits with the job's headroom (%.0f%%)\n", c->headroom * 100);
	for (size_t i = 0; i < c->npicks; i++) {
		const struct search_pick *p = &c->picks[i];

		printf("\n// %zu: %s tokens/s/GPU, step %.2f s, MFU %.1f%%, %s of %s per GPU\n", i + 1,
		       thousands(p->l.tokens_per_s, tok, sizeof tok), p->l.step_s, p->l.mfu * 100,
		       report_bytes(p->device_total, b, sizeof b), report_bytes(p->capacity, cap, sizeof cap));
		if (search_drops_split(c, &p->l))
			printf("// %s\n", search_split_note);
		fputs(search_render(c, &p->l, pick_name(c, i)), stdout);
	}
}

static void json_pick(struct jsonw *w, struct search_ctx *c, size_t i)
{
	const struct search_pick *p = &c->picks[i];
	const struct search_layout *l = &p->l;

	jsonw_open(w, NULL, '{');
	jsonw_u64(w, "rank", i + 1);
	jsonw_fixed(w, "tokens_per_s_per_gpu", l->tokens_per_s, 1);
	jsonw_fixed(w, "step_time_s", l->step_s, 4);
	jsonw_fixed(w, "mfu", l->mfu, 4);
	jsonw_u64(w, "device_total_bytes", p->device_total);
	jsonw_u64(w, "capacity_bytes", p->capacity);
	jsonw_u64(w, "gpus", l->gpus);
	jsonw_u64(w, "gpus_per_node", l->per_node);
	static const char *const deg[] = { "dp", "tp", "pp", "vp", "cp", "ep" };
	const uint32_t v[] = { l->dp, l->tp, l->pp, l->vp, l->cp, l->ep };

	for (size_t k = 0; k < sizeof deg / sizeof deg[0]; k++)
		jsonw_u64(w, deg[k], v[k]);
	jsonw_u64(w, "micro_batch", l->micro_batch);
	jsonw_u64(w, "grad_accum", l->grad_accum);
	if (l->zero >= 0)
		jsonw_u64(w, "zero", (uint64_t)l->zero);
	else
		jsonw_null(w, "zero");
	jsonw_str(w, "checkpoint", search_ckpt_name(l->ckpt));
	jsonw_bool(w, "offload_optimizer", l->offload);
	jsonw_str(w, "block", search_render(c, l, pick_name(c, i)));
	jsonw_close(w, '}');
}

static void print_json(struct jsonw *w, struct search_ctx *c)
{
	const struct search_facts *f = &c->facts;

	jsonw_open(w, NULL, '{');
	jsonw_str(w, "name", c->job->decl->name);
	jsonw_str(w, "gpu", c->job->cluster.decl->name);
	jsonw_u64(w, "global_batch", f->global_batch);
	jsonw_u64(w, "seq_len", f->seq_len);
	jsonw_fixed(w, "mfu_assumed", f->mfu, 4);
	jsonw_fixed(w, "peak_flops", f->peak_flops, 0);
	jsonw_bool(w, "links_assumed", f->assumed_links);
	jsonw_open(w, "as_written", '{');
	jsonw_fixed(w, "tokens_per_s_per_gpu", c->written.tokens_per_s, 1);
	jsonw_fixed(w, "step_time_s", c->written.step_s, 4);
	jsonw_fixed(w, "mfu", c->written.mfu, 4);
	jsonw_close(w, '}');
	jsonw_u64(w, "layouts", c->layouts);
	jsonw_u64(w, "analysed", c->analysed);
	jsonw_u64(w, "verified", c->verified);
	jsonw_open(w, "results", '[');
	for (size_t i = 0; i < c->npicks; i++)
		json_pick(w, c, i);
	jsonw_close(w, ']');
	jsonw_close(w, '}');
}

static void print_csv(struct search_ctx *c)
{
	for (size_t i = 0; i < c->npicks; i++) {
		const struct search_layout *l = &c->picks[i].l;

		printf("%s,%zu,%.1f,%.4f,%.4f,%llu,%u,%u,%u,%u,%u,%u,%u,%u,%llu,%llu,%d,%s,%s\n",
		       c->job->decl->name, i + 1, l->tokens_per_s, l->step_s, l->mfu,
		       (unsigned long long)c->picks[i].device_total, (unsigned)l->gpus, (unsigned)l->per_node,
		       (unsigned)l->dp, (unsigned)l->tp, (unsigned)l->pp, (unsigned)l->vp, (unsigned)l->cp,
		       (unsigned)l->ep, (unsigned long long)l->micro_batch, (unsigned long long)l->grad_accum,
		       l->zero, search_ckpt_name(l->ckpt), l->offload ? "true" : "false");
	}
}

static const char csv_header[] = "job,rank,tokens_per_s_per_gpu,step_time_s,mfu,device_total_bytes,gpus,"
				 "gpus_per_node,dp,tp,pp,vp,cp,ep,micro_batch,grad_accum,zero,checkpoint,"
				 "offload_optimizer\n";

/* ---- the run ---- */

/* Compile the file as written, its errors on stderr; false if it has any. */
static bool load_base(struct search_ctx *c, struct search_args *a)
{
	struct interner *in = interner_new(c->arena);
	struct diag_engine *de;

	c->src = src_table_new(c->arena);
	de = diag_new(c->arena, c->src, stderr);
	diag_suppress_warnings(de);	/* memc check says those; search answers */
	c->dopts = &a->o;
	c->path = a->file;
	c->stdlib = driver_stdlib_dir(c->arena, &a->o);
	c->cache = import_cache_new(c->arena, in);	/* the verifications parse the stdlib once */
	struct import_opts io = { .dirs = a->o.dirs, .ndirs = a->o.ndirs, .stdlib_dir = c->stdlib,
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests,
				  .cache = c->cache };
	struct program *p = import_load_many(c->arena, in, c->src, de, &a->file, 1, &io);

	if (p->root && !diag_error_count(de))
		c->cr = check_program(c->arena, in, de, c->src, p);
	diag_flush(de);
	if (!p->root || diag_error_count(de))
		return false;
	c->base_warnings = diag_warning_count(de);
	c->text = src_get(c->src, 1)->text;
	c->len = src_get(c->src, 1)->len;
	return true;
}

static void stats(const struct search_ctx *c)
{
	fprintf(stderr, "memc search: %s: %llu layouts, %llu analysed (%llu by the bound alone), %llu verified in "
		"%.3f s (%.0f layouts/s); memory: %.3f s (%.0f layouts/s)\n", c->job->decl->name,
		(unsigned long long)c->layouts, (unsigned long long)c->analysed, (unsigned long long)c->pruned,
		(unsigned long long)c->verified, c->seconds,
		c->seconds > 0 ? (double)c->layouts / c->seconds : 0, c->eval_seconds,
		c->eval_seconds > 0 ? (double)c->analysed / c->eval_seconds : 0);
}

static bool one_job(struct search_ctx *c, struct search_args *a, const struct check_job *j, struct jsonw *w)
{
	struct value hv;

	c->job = j;
	c->headroom = check_job_field(j, "headroom", &hv) && hv.kind == VAL_NUM ? num_to_double(hv.num) : 0.10;
	if (!search_job(c, &a->so)) {
		fprintf(stderr, "memc: %s: train block '%s' cannot be searched: %s\n", a->file, j->decl->name, c->why);
		return false;
	}
	if (a->stats)
		stats(c);
	if (a->format == SEARCH_JSON)
		print_json(w, c);
	else if (a->format == SEARCH_CSV)
		print_csv(c);
	else
		print_text(c);
	return true;
}

static int search_run(struct search_args *a)
{
	struct arena arena = { 0 };
	struct search_ctx c = { .arena = &arena };
	struct jsonw w;
	int rc = 0;
	size_t n = 0;

	if (!load_base(&c, a))
		return arena_free(&arena), 1;
	jsonw_init(&w, stdout, 0, false, true);
	if (a->format == SEARCH_JSON) {
		jsonw_open(&w, NULL, '{');
		jsonw_str(&w, "schema", "memc-search/1");	/* docs/search.schema.json */
		jsonw_str(&w, "file", a->file);
		jsonw_open(&w, "jobs", '[');
	} else if (a->format == SEARCH_CSV) {
		fputs(csv_header, stdout);
	}
	for (const struct check_job *j = c.cr->jobs; j; j = j->next)
		if (!a->job || strcmp(a->job, j->decl->name) == 0) {
			if (a->format == SEARCH_TEXT && n)
				putchar('\n');
			n++;
			rc |= !one_job(&c, a, j, &w);
		}
	if (a->format == SEARCH_JSON) {
		jsonw_close(&w, ']');
		jsonw_close(&w, '}');
		putchar('\n');
	}
	if (a->job && !n)
		fprintf(stderr, "memc: %s: no train block named '%s'\n", a->file, a->job), rc = 1;
	arena_free(&arena);
	return rc;
}

int search_main(int argc, char **argv)
{
	const char **dirs = calloc((size_t)argc, sizeof *dirs);	/* one -I per argument at most */
	struct search_args a = { .file = NULL };

	if (!dirs)
		return driver_usage("search", "out of memory", NULL);
	int rc = parse_search_args(&a, argc, argv, dirs);

	rc = rc >= 0 ? rc : search_run(&a);
	free(dirs);
	free(a.gpus);
	return rc;
}
