/* SPDX-License-Identifier: MIT */
/*
 * property.c - the property suite: relations between the predictions of
 * related jobs that must hold for every job, checked on the examples, the
 * regression files of tests/property/regress/ and jobs generated from the
 * stdlib with a fixed-seed PRNG.
 *
 *   build/tests/run-property [--seed S] [--variants N] [--only V] [--verbose]
 *                            [--stdlib DIR] [--tmp FILE]
 *
 * The job text is written to FILE (default build/property-job-PID.mem) for
 * the importer; run from the repository root.
 *
 * Each variant draws one base job (variant v uses its own stream, seeded
 * from S and v, so `--only V` replays exactly variant V) and checks every
 * property on it (props.c); a property whose edited job does not check
 * (tp not dividing the heads, ...) is skipped, not failed. The last line is
 * `property: N passed, N failed`. A failure prints the seed, the variant,
 * both job texts and the two numbers.
 */
#include "tests/property/property.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/arena.h"

/* ---- PRNG (splitmix64: deterministic, no time, no libc rand) ------------ */

uint64_t prop_rand(struct prop_ctx *pc)
{
	uint64_t z = (pc->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

size_t prop_pick(struct prop_ctx *pc, size_t n)
{
	return n ? (size_t)(prop_rand(pc) % n) : 0;
}

/* ---- base jobs ----------------------------------------------------------- */

static char *read_text(struct arena *a, const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	buf = arena_alloc(a, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	return buf;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The *.mem names of @dir, sorted (readdir order is not deterministic). */
static size_t list_mem(struct arena *a, const char *dir, const char ***out)
{
	DIR *d = opendir(dir);
	size_t n = 0, cap = 16;
	const char **v = ARENA_NEW_ARRAY(a, const char *, cap);

	for (struct dirent *e; d && (e = readdir(d));) {
		size_t l = strlen(e->d_name);

		if (l < 5 || strcmp(e->d_name + l - 4, ".mem") != 0)
			continue;
		if (n == cap)
			ARENA_GROW(a, v, n, cap);
		v[n++] = arena_printf(a, "%s/%s", dir, e->d_name);
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	return n;
}

/* Every train block of every file of @dir becomes a base job. */
static void load_dir(struct prop_ctx *pc, const char *dir)
{
	const char **files;
	size_t n = list_mem(&pc->keep, dir, &files);

	for (size_t i = 0; i < n; i++) {
		const char *text = read_text(&pc->keep, files[i]);
		struct pjob jobs[16];
		size_t k = text ? pjob_parse_all(&pc->keep, files[i], text, jobs, 16) : 0;

		if (!k) {
			printf("property: cannot read the train blocks of %s\n", files[i]);
			pc->failed++;
		}
		for (size_t j = 0; j < k; j++) {
			if (pc->nbase == pc->capbase)
				ARENA_GROW(&pc->keep, pc->base, pc->nbase, pc->capbase);
			pc->base[pc->nbase++] = jobs[j];
		}
	}
}

/* ---- running and reporting --------------------------------------------- */

bool prop_run(struct prop_ctx *pc, const struct pjob *j, enum pjob_style st,
	      const struct build_override *ov, struct prun *out, const char **text)
{
	const char *t = pjob_render(&pc->var, j, st);

	prun_job(&pc->var, &pc->ro, t, ov, out);
	if (text)
		*text = t;
	if (pc->verbose && !out->ok)
		printf("  (skipped: does not check)\n%s%s", t, out->diags);
	return out->ok;
}

void prop_fail(struct prop_ctx *pc, const char *prop, const char *a_text, const char *b_text,
	       const char *fmt, ...)
{
	va_list ap;

	pc->failed_now++;
	printf("FAIL property %s (seed %" PRIu64 ", variant %" PRIu64 "): ", prop, pc->seed,
	       pc->variant);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (pc->printed_jobs++ >= 3)
		return;		/* the first few failures are enough to read */
	printf("--- job A\n%s", a_text ? a_text : "(none)\n");
	if (b_text)
		printf("--- job B\n%s", b_text);
	printf("--- replay: build/tests/run-property --seed %" PRIu64 " --only %" PRIu64 "\n", pc->seed,
	       pc->variant);
}

/* One base job for variant v: an example or regression file a quarter of
 * the time (or always with --base), else a generated one. */
static const struct pjob *draw_base(struct prop_ctx *pc)
{
	if (pc->nbase && prop_pick(pc, 4) == 0)
		return &pc->base[prop_pick(pc, pc->nbase)];
	for (int tries = 0; tries < 20; tries++) {
		struct pjob *j = prop_generate(pc);
		struct prun r;

		if (prop_run(pc, j, PJOB_PLAIN, NULL, &r, NULL))
			return j;
	}
	return pc->nbase ? &pc->base[prop_pick(pc, pc->nbase)] : NULL;
}

static void run_variant(struct prop_ctx *pc, uint64_t v)
{
	const struct pjob *base;

	pc->variant = v;
	pc->rng = pc->seed * UINT64_C(0x100000001b3) ^ (v + 1) * UINT64_C(0x9e3779b97f4a7c15);
	arena_free(&pc->var);
	base = v < pc->nbase ? &pc->base[v] : draw_base(pc);
	if (!base)
		return;
	if (pc->verbose)
		printf("variant %" PRIu64 ": %s\n", v, base->origin);
	prop_check_all(pc, base);
}

static bool parse_args(int argc, char **argv, struct prop_ctx *pc)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *n = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--verbose"))
			pc->verbose = true;
		else if (n && !strcmp(a, "--seed") && ++i)
			pc->seed = strtoull(n, NULL, 10);
		else if (n && !strcmp(a, "--variants") && ++i)
			pc->variants = strtoull(n, NULL, 10);
		else if (n && !strcmp(a, "--only") && ++i)
			pc->only = strtoull(n, NULL, 10) + 1;
		else if (n && !strcmp(a, "--stdlib") && ++i)
			pc->ro.stdlib_dir = n;
		else if (n && !strcmp(a, "--tmp") && ++i)
			pc->ro.path = n;
		else {
			fprintf(stderr, "usage: %s [--seed S] [--variants N] [--only V] "
				"[--stdlib DIR] [--tmp FILE] [--verbose]\n", argv[0]);
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	static struct prop_ctx pc = { .seed = 1, .variants = 300, .ro = { "stdlib", NULL } };

	if (!parse_args(argc, argv, &pc))
		return 2;
	/* one file per process: runs with other seeds may share the folder */
	if (!pc.ro.path)
		pc.ro.path = arena_printf(&pc.keep, "build/property-job-%ld.mem", (long)getpid());
	load_dir(&pc, "examples");
	load_dir(&pc, "tests/property/regress");
	for (uint64_t v = 0; v < pc.variants; v++)
		if (!pc.only || pc.only == v + 1)
			run_variant(&pc, v);
	printf("property: %" PRIu64 " passed, %" PRIu64 " failed\n", pc.passed, pc.failed);
	remove(pc.ro.path);
	arena_free(&pc.var);
	arena_free(&pc.keep);
	return pc.failed ? 1 : 0;
}
