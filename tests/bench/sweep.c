/* SPDX-License-Identifier: MIT */
/*
 * sweep.c - `make bench`: how fast memc answers "what if" questions.
 *
 *   build/bench-sweep FILE N
 *
 * Loads and checks FILE once, then builds and analyses N variants of its
 * first train block in one process (micro_batch 1..16, checkpoint none or
 * full, ZeRO 0..3), the way a sweep over configurations would, and prints
 * the time per variant. Not a test: timings live here, never in `make check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "analyzer/lower/build.h"
#include "analyzer/memory/memory.h"
#include "lang/arena.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct arena a = { 0 };
	long n = argc > 2 ? atol(argv[2]) : 10000;

	if (argc < 2)
		return fputs("usage: bench-sweep FILE [N]\n", stderr), 2;
	struct interner *in = interner_new(&a);
	struct src_table *src = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, src, stderr);
	struct import_opts io = { .stdlib_dir = "stdlib" };
	double t0 = now();
	struct program *p = import_load(&a, in, src, de, argv[1], &io);
	struct check_result *cr = p->root ? check_program(&a, in, de, src, p) : NULL;

	diag_flush(de);
	if (!cr || !cr->jobs || diag_error_count(de))
		return fputs("bench-sweep: the file does not check\n", stderr), 1;
	double t1 = now();
	uint64_t checksum = 0;
	long ok = 0;

	for (long i = 0; i < n; i++) {
		struct build_override ov = { .micro_batch = 1 + (uint64_t)(i % 16),
					     .checkpoint = (i / 16) % 2 ? "full" : NULL,
					     .zero = (int)((i / 32) % 4) };
		struct build b;
		struct mem_result r;

		if (!build_job(cr->ev, &a, cr->jobs, &ov, true, &b) || mem_analyze(&b.job, &r) != MEM_OK)
			continue;
		checksum += r.classes[0].device_total;
		ok++;
		mem_result_free(&r);
	}
	double t2 = now();

	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("%s: load+check %.2f ms; %ld variants (%ld analysed) in %.1f ms, %.1f us each, "
	       "%.0f variants/s, peak RSS %.1f MiB (checksum %llu)\n",
	       argv[1], (t1 - t0) * 1e3, n, ok, (t2 - t1) * 1e3, (t2 - t1) * 1e6 / (double)n,
	       (double)n / (t2 - t1), (double)ru.ru_maxrss / 1024.0, (unsigned long long)checksum);
	arena_free(&a);
	return 0;
}
