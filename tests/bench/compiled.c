/* SPDX-License-Identifier: MIT */
/*
 * compiled.c - `make bench`: the rate of the compiled model.
 *
 *   build/bench-compiled FILE N
 *
 * Loads and checks FILE once, compiles its first train block
 * (analyzer/model/compiled.h), then evaluates N variants of it in one
 * process (micro_batch 1..16, checkpoint none or full, ZeRO 0..3, the
 * grid of tests/bench/sweep.c) and prints the rate, by the wall clock and
 * by this thread's CPU time (what one core spent, whatever else the
 * machine runs).  Not a test: timings live here, never in `make check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "analyzer/model/compiled.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct check_result *load(struct arena *a, const char *path)
{
	struct interner *in = interner_new(a);
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, stderr);
	struct import_opts io = { .stdlib_dir = "stdlib" };
	struct program *p = import_load(a, in, src, de, path, &io);
	struct check_result *cr = p->root ? check_program(a, in, de, src, p) : NULL;

	diag_flush(de);
	return cr && cr->jobs && !diag_error_count(de) ? cr : NULL;
}

int main(int argc, char **argv)
{
	struct arena a = { 0 };
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	struct check_result *cr = argc > 1 ? load(&a, argv[1]) : NULL;

	if (!cr)
		return fputs("usage: bench-compiled FILE [N] (FILE must check)\n", stderr), 2;
	double t0 = clock_s(CLOCK_MONOTONIC);
	struct cm_model *m = cm_compile(cr->ev, &a, cr->jobs, 0);
	double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	struct cm_scratch s = { 0 };
	uint64_t checksum = 0;
	long ok = 0;

	if (!m)
		return fputs("bench-compiled: the train block does not build\n", stderr), 1;
	for (long i = 0; i < n; i++) {
		struct cm_variant v = { .micro_batch = 1 + (uint64_t)(i % 16),
					.checkpoint = (i / 16) % 2 ? CM_CKPT_FULL : CM_CKPT_NONE,
					.zero = (int)((i / 32) % 4) };
		const struct mem_result *r;

		if (cm_eval(m, &v, &s, &r) != MEM_OK)
			continue;
		checksum += r->classes[0].device_total;
		ok++;
	}
	double t2 = clock_s(CLOCK_MONOTONIC), c2 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("%s: compile %.2f ms; %ld variants (%ld analysed) in %.1f ms, %.3f us each, "
	       "%.0f variants/s (CPU time: %.0f variants/s), peak RSS %.1f MiB (checksum %llu)\n",
	       argv[1], (t1 - t0) * 1e3, n, ok, (t2 - t1) * 1e3, (t2 - t1) * 1e6 / (double)n,
	       (double)n / (t2 - t1), (double)n / (c2 - c1), (double)ru.ru_maxrss / 1024.0,
	       (unsigned long long)checksum);
	cm_scratch_free(&s);
	arena_free(&a);
	return 0;
}
