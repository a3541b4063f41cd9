/* SPDX-License-Identifier: MIT */
/*
 * compare.c - `memc compare FILE SNAPSHOT`: what memc predicts for one
 * train block (one rank class) beside what a PyTorch memory snapshot of
 * the same job measured, per phase and per category, the largest
 * differences first.
 *
 * The prediction is the step's: phase peaks (mem_class.phase_peak), the
 * components live at the peak and the peak allocated and reserved. The
 * measurement is snapshot.c's replay of the device's trace. A row with
 * one side unknown is shown with "-" and sorted last: a snapshot never
 * sees CUDA context or NCCL (memc's overhead), and memc has no figure for
 * the setup before the first forward.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/lower/build.h"
#include "analyzer/cmd/compare.h"
#include "analyzer/cmd/compare_impl.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/out/jsonw.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

enum { CMP_OK = 0, CMP_ERRORS = 1, CMP_USAGE = 2 };

struct cmp_opts {
	const char *file, *snapshot, *job;
	int device;			/* -1: the first device with a trace */
	unsigned long stage;
	bool json, no_warnings;
	struct driver_opts d;		/* -I, --stdlib, -W for the .mem file */
};

/* What memc predicts for the chosen rank class. */
struct prediction {
	const char *job;
	struct mem_class cls;
	size_t nclasses;
};

struct row {
	const char *section;		/* "total", "phase", "category" */
	char name[48];
	bool has_pred, has_meas;
	uint64_t pred, meas;
	size_t order;			/* tie-break: the order rows are made in */
};

struct table {
	struct row *rows;
	size_t n, cap;
};

__attribute__((format(printf, 1, 2)))
static int usage(const char *fmt, ...)
{
	va_list ap;

	fputs("memc: compare: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'memc compare --help' for more information.\n", stderr);
	return CMP_USAGE;
}

static bool parse_number(const char *v, unsigned long max, unsigned long *out)
{
	char *end;

	if (!v || *v < '0' || *v > '9')
		return false;
	*out = strtoul(v, &end, 10);
	return !*end && *out <= max;
}

/* One option with a value, "--opt VALUE" or "--opt=VALUE"; NULL if @a is
 * not @name. */
static const char *value_of(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t n = strlen(name);

	*missing = false;
	if (strncmp(argv[*i], name, n) != 0 || (argv[*i][n] && argv[*i][n] != '='))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 < argc)
		return argv[++*i];
	*missing = true;
	return NULL;
}

static int add_dir(struct cmp_opts *o, const char *what, const char *d)
{
	if (!driver_is_dir(d))
		return usage("%s '%s' is not a directory", what, d);
	o->d.dirs[o->d.ndirs++] = d;
	return -1;
}

static int parse_valued(struct cmp_opts *o, int argc, char **argv, int *i)
{
	bool missing;
	const char *v;
	unsigned long n;

	if ((v = value_of(argc, argv, i, "--job", &missing)) || missing) {
		if (!v || !*v)
			return usage("option '--job' needs a train block's name");
		o->job = v;
	} else if ((v = value_of(argc, argv, i, "--device", &missing)) || missing) {
		if (!parse_number(v, SNAP_MAX_DEVICE, &n))
			return usage("--device needs a device index (0, 1, ...), not '%s'", v ? v : "");
		o->device = (int)n;
	} else if ((v = value_of(argc, argv, i, "--stage", &missing)) || missing) {
		if (!parse_number(v, BUILD_MAX_GPUS, &o->stage))
			return usage("--stage needs a pipeline stage (0, 1, ...), not '%s'", v ? v : "");
	} else if ((v = value_of(argc, argv, i, "--format", &missing)) || missing) {
		if (!v || (strcmp(v, "text") && strcmp(v, "json")))
			return usage("--format needs text or json, not '%s'", v ? v : "");
		o->json = strcmp(v, "json") == 0;
	} else if ((v = value_of(argc, argv, i, "--stdlib", &missing)) || missing) {
		if (!v || !driver_is_dir(v))
			return usage("--stdlib needs a directory, not '%s'", v ? v : "");
		o->d.stdlib_dir = v;
	} else {
		return -2;
	}
	return -1;
}

static int parse_option(struct cmp_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	int rc = parse_valued(o, argc, argv, i);

	if (rc != -2)
		return rc;
	if (strcmp(a, "-I") == 0 && *i + 1 < argc)
		return add_dir(o, "-I", argv[++*i]);
	else if (strncmp(a, "-I", 2) == 0 && a[2])
		return add_dir(o, "-I", a + 2);
	else if (strcmp(a, "-w") == 0)
		o->no_warnings = true;
	else if (strncmp(a, "-W", 2) == 0 && a[2])
		o->d.wflags[o->d.nwflags++] = a + 2;
	else
		return usage("unknown option '%s'", a);
	return -1;
}

static int parse_args(struct cmp_opts *o, int argc, char **argv)
{
	const char *pos[2];
	size_t npos = 0;
	bool options = true;

	for (int i = 2; i < argc; i++) {
		int rc;

		if (options && strcmp(argv[i], "--") == 0)
			options = false;
		else if (options && argv[i][0] == '-' && argv[i][1]) {
			if ((rc = parse_option(o, argc, argv, &i)) >= 0)
				return rc;
		} else if (npos < 2)
			pos[npos++] = argv[i];
		else
			return usage("one FILE and one SNAPSHOT, not '%s' as well", argv[i]);
	}
	if (npos < 2)
		return usage("needs a FILE and a SNAPSHOT (torch.cuda.memory._snapshot() as JSON)");
	o->file = pos[0];
	o->snapshot = pos[1];
	return -1;
}

/* The train block to compare: --job, or the file's only one. */
static const struct check_job *pick_job(const struct cmp_opts *o, struct check_result *cr, int *rc)
{
	size_t n = 0;

	for (const struct check_job *j = cr->jobs; j; j = j->next, n++)
		if (o->job && strcmp(j->decl->name, o->job) == 0)
			return j;
	if (!o->job && n == 1)
		return cr->jobs;
	*rc = CMP_USAGE;
	fprintf(stderr, "memc: compare: %s", o->file);
	if (o->job)
		fprintf(stderr, " has no train block '%s'", o->job);
	else
		fprintf(stderr, " has %s train block%s", n ? "several" : "no", n ? "s; choose one with --job" : "");
	for (const struct check_job *j = cr->jobs; j; j = j->next)
		fprintf(stderr, "%s%s", j == cr->jobs ? " (" : ", ", j->decl->name);
	fputs(n ? ")\n" : "\n", stderr);
	return NULL;
}

/* The class holding pipeline stage @stage. */
static bool pick_class(const struct cmp_opts *o, const struct mem_result *res, struct prediction *p)
{
	for (size_t i = 0; i < res->nclasses; i++) {
		const struct mem_class *c = &res->classes[i];

		if (o->stage >= c->stage && o->stage - c->stage < c->nstages) {
			p->cls = *c;
			p->nclasses = res->nclasses;
			return true;
		}
	}
	return false;
}

/* Build and analyse the chosen job; its errors are printed like check's. */
static int analyse(const struct cmp_opts *o, struct arena *a, struct check_result *cr,
		   struct diag_engine *de, struct prediction *p)
{
	int rc = CMP_ERRORS;
	const struct check_job *j = pick_job(o, cr, &rc);
	struct build_override none = { .zero = -1 };
	struct build bd = { .rep.name = NULL };
	struct mem_result res;

	if (!j)
		return rc;
	if (!j->ok || cr->shared_errors || !build_job(cr->ev, a, j, &none, false, &bd))
		return CMP_ERRORS;
	enum mem_status st = mem_analyze(&bd.job, &res);

	if (st != MEM_OK) {
		diag_error(de, DIAG_BAD_LAYOUT, bd.loc_train, "this job cannot be analysed: %s",
			   mem_status_str(st));
		return CMP_ERRORS;
	}
	p->job = j->decl->name;
	rc = pick_class(o, &res, p) ? CMP_OK : CMP_USAGE;
	if (rc != CMP_OK)
		fprintf(stderr, "memc: compare: job '%s' has no pipeline stage %lu\n", p->job, o->stage);
	mem_result_free(&res);
	return rc;
}

static int predict(const struct cmp_opts *o, struct arena *a, struct src_table *src,
		   struct diag_engine *de, struct prediction *p)
{
	struct interner *in = interner_new(a);
	struct import_opts io = { .dirs = o->d.dirs, .ndirs = o->d.ndirs,
				  .stdlib_dir = driver_stdlib_dir(a, &o->d) };
	int rc = CMP_ERRORS;
	bool flags = true;

	for (size_t i = 0; i < o->d.nwflags; i++)
		flags &= diag_apply_flag(de, o->d.wflags[i]);
	if (o->no_warnings)
		diag_suppress_warnings(de);
	struct program *prog = flags ? import_load(a, in, src, de, o->file, &io) : NULL;

	diag_flush(de);
	if (!flags)
		return CMP_USAGE;
	if (!prog->root)
		return src->nfiles > 1 && src_get(src, 1)->text ? CMP_ERRORS : CMP_USAGE;
	if (diag_error_count(de) == 0) {
		struct check_result *cr = check_program(a, in, de, src, prog);

		diag_flush(de);
		rc = analyse(o, a, cr, de, p);
	}
	diag_flush(de);
	return diag_error_count(de) && rc == CMP_OK ? CMP_ERRORS : rc;
}

static void add_row(struct table *t, struct arena *a, const char *section, const char *name,
		    bool has_pred, uint64_t pred, bool has_meas, uint64_t meas)
{
	if (!has_pred && !has_meas)
		return;	/* the setup of a trace that starts at the forward */
	ARENA_GROW(a, t->rows, t->n, t->cap);
	struct row *r = &t->rows[t->n];

	*r = (struct row){ .section = section, .has_pred = has_pred, .pred = pred,
			   .has_meas = has_meas, .meas = meas, .order = t->n };
	snprintf(r->name, sizeof r->name, "%s", name);
	t->n++;
}

static uint64_t gap(const struct row *r)
{
	return r->meas > r->pred ? r->meas - r->pred : r->pred - r->meas;
}

/* Largest |measured - predicted| first; rows missing a side last, in the
 * order they were made. */
static int by_gap(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	bool kx = x->has_pred && x->has_meas, ky = y->has_pred && y->has_meas;

	if (kx != ky)
		return kx ? -1 : 1;
	if (kx && gap(x) != gap(y))
		return gap(x) > gap(y) ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* memc's step phases are snapshot phases 1..4 (enum mem_phase order). */
static void phase_rows(struct table *t, struct arena *a, const struct prediction *p,
		       const struct snap_measure *m)
{
	for (int ph = 0; ph < SNAP_P__COUNT; ph++) {
		bool step = ph != SNAP_P_SETUP, seen = m->traced && m->framed && m->phase_seen[ph];
		bool at_peak = step && (int)p->cls.peak.phase == ph - 1;
		char name[48];

		snprintf(name, sizeof name, "%s allocated", snap_phase_name(ph));
		add_row(t, a, "phase", name, step, step ? p->cls.phase_peak[ph - 1] : 0, seen,
			m->phase_allocated[ph]);
		snprintf(name, sizeof name, "%s reserved", snap_phase_name(ph));
		add_row(t, a, "phase", name, at_peak, p->cls.peak_reserved, seen, m->phase_reserved[ph]);
	}
}

static void category_rows(struct table *t, struct arena *a, const struct prediction *p,
			  const struct snap_measure *m)
{
	for (int c = 0; c < SNAP_C__COUNT; c++) {
		bool memc = c < SNAP_C_OTHER;	/* the first six are mem_component's */

		add_row(t, a, "category", snap_cat_name(c), memc, memc ? p->cls.at_peak[c] : 0,
			m->traced && m->framed, m->cat_at_peak[c]);
	}
}

static void total_rows(struct table *t, struct arena *a, const struct prediction *p,
		       const struct snap_measure *m)
{
	if (m->traced) {
		add_row(t, a, "total", "peak allocated", true, p->cls.peak_allocated, true,
			m->peak_allocated);
		add_row(t, a, "total", "peak reserved", true, p->cls.peak_reserved, true,
			m->peak_reserved);
		return;
	}
	/* Without a trace only the end state is known, which is no peak. */
	add_row(t, a, "total", "peak allocated", true, p->cls.peak_allocated, false, 0);
	add_row(t, a, "total", "peak reserved", true, p->cls.peak_reserved, false, 0);
	add_row(t, a, "total", "allocated at the snapshot", false, 0, true, m->final_allocated);
	add_row(t, a, "total", "reserved at the snapshot", false, 0, true, m->final_reserved);
}

static void make_table(struct table *t, struct arena *a, const struct prediction *p,
		       const struct snap_measure *m)
{
	size_t first = 0;

	total_rows(t, a, p, m);
	qsort(t->rows + first, t->n - first, sizeof *t->rows, by_gap);
	first = t->n;
	phase_rows(t, a, p, m);
	qsort(t->rows + first, t->n - first, sizeof *t->rows, by_gap);
	first = t->n;
	category_rows(t, a, p, m);
	qsort(t->rows + first, t->n - first, sizeof *t->rows, by_gap);
}

/* MiB below 10 GiB, else GiB: the report's GiB with two decimals would
 * hide the differences of a small job. */
static const char *fmt_bytes(uint64_t v, char *buf, size_t n)
{
	if (v < (10ull << 30))
		snprintf(buf, n, "%.2f MiB", (double)v / (1 << 20));
	else
		snprintf(buf, n, "%.2f GiB", (double)v / (1 << 30));
	return buf;
}

static const char *cell(bool known, uint64_t v, char *buf, size_t n)
{
	return known ? fmt_bytes(v, buf, n) : "-";
}

static void print_row(const struct row *r)
{
	char pb[32], mb[32], db[32];
	const char *sign = r->meas >= r->pred ? "+" : "-";

	printf("  %-30s %13s %13s", r->name, cell(r->has_pred, r->pred, pb, sizeof pb),
	       cell(r->has_meas, r->meas, mb, sizeof mb));
	if (r->has_pred && r->has_meas)
		printf("  %s%s", gap(r) ? sign : " ", fmt_bytes(gap(r), db, sizeof db));
	else
		printf("  %13s", "-");
	putchar('\n');
}

static void print_text(const struct cmp_opts *o, const struct prediction *p,
		       const struct snap_measure *m, const struct table *t)
{
	static const char *const titles[][2] = {
		{ "total", "totals" }, { "phase", "by phase (peak in the phase)" },
		{ "category", "by category (at the peak)" },
	};

	printf("job '%s' (stage %u, %zu rank class%s) against %s (device %d: %zu segment%s, "
	       "%zu event%s, %llu step%s)\n", p->job, (unsigned)p->cls.stage, p->nclasses,
	       p->nclasses == 1 ? "" : "es", o->snapshot, m->device, m->nsegments,
	       m->nsegments == 1 ? "" : "s", m->nevents, m->nevents == 1 ? "" : "s",
	       (unsigned long long)m->steps, m->steps == 1 ? "" : "s");
	if (!m->traced)
		printf("not measured: peaks per phase and category (the snapshot has no trace "
		       "for device %d)\n", m->device);
	else if (!m->framed)
		printf("not measured: peaks per phase and category (the trace has no frames: "
		       "record with _record_memory_history(stacks=\"python\"))\n");
	if (m->ooms)
		printf("the trace has %llu out-of-memory event%s: the job did not fit as run\n",
		       (unsigned long long)m->ooms, m->ooms == 1 ? "" : "s");
	for (size_t s = 0; s < sizeof titles / sizeof titles[0]; s++) {
		printf("\n%-32s %13s %13s  %s\n", titles[s][1], "predicted", "measured", "difference");
		for (size_t i = 0; i < t->n; i++)
			if (strcmp(t->rows[i].section, titles[s][0]) == 0)
				print_row(&t->rows[i]);
	}
}

static void json_side(struct jsonw *w, const char *key, bool known, uint64_t v)
{
	if (known)
		jsonw_u64(w, key, v);
	else
		jsonw_null(w, key);
}

static void print_json(const struct cmp_opts *o, const struct prediction *p,
		       const struct snap_measure *m, const struct table *t)
{
	struct jsonw w;

	jsonw_init(&w, stdout, 0, false, false);
	jsonw_open(&w, NULL, '{');
	jsonw_u64(&w, "memc_compare_version", 1);
	jsonw_str(&w, "file", o->file);
	jsonw_str(&w, "job", p->job);
	jsonw_u64(&w, "stage", p->cls.stage);
	jsonw_str(&w, "snapshot", o->snapshot);
	jsonw_u64(&w, "device", (uint64_t)m->device);
	jsonw_bool(&w, "traced", m->traced);
	jsonw_bool(&w, "framed", m->framed);
	jsonw_u64(&w, "events", m->nevents);
	jsonw_u64(&w, "steps", m->steps);
	jsonw_u64(&w, "ooms", m->ooms);
	jsonw_open(&w, "rows", '[');
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];

		jsonw_open(&w, NULL, '{');
		jsonw_str(&w, "section", r->section);
		jsonw_str(&w, "name", r->name);
		json_side(&w, "predicted", r->has_pred, r->pred);
		json_side(&w, "measured", r->has_meas, r->meas);
		json_side(&w, "abs_difference", r->has_pred && r->has_meas, gap(r));
		jsonw_close(&w, '}');
	}
	jsonw_close(&w, ']');
	jsonw_close(&w, '}');
	putchar('\n');
}

/* A snapshot error in GCC's form: "file:line:col:" for bad JSON, else
 * "file:" and the path of the offending value. */
static int snapshot_error(const struct cmp_opts *o, const struct snap_error *e)
{
	const char *name = e->unreadable ? "file-not-found" : "snapshot-invalid";

	if (e->line)
		fprintf(stderr, "%s:%u:%u: error: %s [%s]\n", o->snapshot, e->line, e->col, e->msg, name);
	else if (*e->path)
		fprintf(stderr, "%s: error: %s: %s [%s]\n", o->snapshot, e->path, e->msg, name);
	else
		fprintf(stderr, "%s: error: %s [%s]\n", o->snapshot, e->msg, name);
	return e->unreadable ? CMP_USAGE : CMP_ERRORS;
}

static int measure_and_print(const struct cmp_opts *o, struct arena *a, struct diag_engine *de,
			     const struct prediction *p)
{
	struct snap_measure m;
	struct snap_error err = { 0 };
	struct table t = { 0 };

	if (!snap_measure(o->snapshot, o->device, &m, &err))
		return snapshot_error(o, &err);
	if (!m.traced) {
		diag_warn(de, DIAG_SNAPSHOT_NO_TRACE, NO_LOC, "%s has %s: the peaks per phase and "
			  "the categories cannot be measured, only what was allocated and reserved "
			  "when it was taken; call torch.cuda.memory._record_memory_history() before "
			  "the step", o->snapshot, m.no_traces_key ? "no device_traces" :
			  "no trace events for this device");
		diag_flush(de);
		if (diag_error_count(de))
			return CMP_ERRORS;
	}
	make_table(&t, a, p, &m);
	if (o->json)
		print_json(o, p, &m, &t);
	else
		print_text(o, p, &m, &t);
	return CMP_OK;
}

/* MEMC_PATH folders after the -I ones, as for check and report; a
 * missing one is an error there too, not skipped. */
static int add_memc_path(struct cmp_opts *o, char *copy)
{
	int rc = -1;

	for (char *tok = copy ? strtok(copy, ":") : NULL; tok && rc < 0; tok = strtok(NULL, ":"))
		rc = add_dir(o, "MEMC_PATH entry", tok);
	return rc;
}

static size_t count_memc_path(const char *env)
{
	size_t n = 1;

	for (const char *p = env ? env : ""; *p; p++)
		n += *p == ':';
	return n;
}

int compare_main(int argc, char **argv)
{
	struct cmp_opts o = { .device = -1 };
	struct arena arena = { 0 };
	struct prediction p = { 0 };
	const char *env = getenv("MEMC_PATH");
	char *env_copy = env && *env ? strdup(env) : NULL;
	int rc;

	o.d.dirs = calloc((size_t)argc + count_memc_path(env), sizeof *o.d.dirs);
	o.d.wflags = calloc((size_t)argc, sizeof *o.d.wflags);
	if (!o.d.dirs || !o.d.wflags || (env && *env && !env_copy))
		rc = usage("out of memory");
	else if ((rc = parse_args(&o, argc, argv)) < 0)
		rc = add_memc_path(&o, env_copy);
	if (rc < 0) {
		struct src_table *src = src_table_new(&arena);
		struct diag_engine *de = diag_new(&arena, src, stderr);

		rc = predict(&o, &arena, src, de, &p);
		if (rc == CMP_OK)
			rc = measure_and_print(&o, &arena, de, &p);
	}
	arena_free(&arena);
	free(env_copy);
	free(o.d.dirs);
	free(o.d.wflags);
	return rc;
}
