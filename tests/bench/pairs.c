/* SPDX-License-Identifier: MIT */
/*
 * pairs.c - paired timing of two commands for `make bench`.
 *
 *   build/bench-pairs N CMD_A [ARG...] -- CMD_B [ARG...]
 *
 * Runs A and B alternately N times each (output to /dev/null), so a noisy,
 * shared machine slows both alike, and prints one line:
 *   "A_MEDIAN_US B_MEDIAN_US RATIO_MEDIAN A_MAXRSS_KB B_MAXRSS_KB"
 * where RATIO_MEDIAN is the median over the pairs of A's time over B's.
 * Medians, not means: one descheduled run must not move the figure.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run of argv: wall seconds, or -1 if it could not run or failed to
 * start; *rss gets the child's peak RSS in KiB. */
static double run_once(char **argv, long *rss)
{
	struct rusage ru;
	int status;
	double t0 = now();
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
		return -1;
	if (ru.ru_maxrss > *rss)
		*rss = ru.ru_maxrss;
	return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0, rss_a = 0, rss_b = 0;
	int sep = 2;

	while (sep < argc && strcmp(argv[sep], "--") != 0)
		sep++;
	if (n < 1 || sep == 2 || sep + 1 >= argc)
		return fputs("usage: bench-pairs N CMD_A [ARG...] -- CMD_B [ARG...]\n", stderr), 2;
	argv[sep] = NULL;
	double *ta = calloc((size_t)n, sizeof *ta), *tb = calloc((size_t)n, sizeof *tb);
	double *ratio = calloc((size_t)n, sizeof *ratio);

	if (!ta || !tb || !ratio)
		return fputs("bench-pairs: out of memory\n", stderr), 2;
	for (long i = 0; i < n; i++) {
		ta[i] = run_once(argv + 2, &rss_a);
		tb[i] = run_once(argv + sep + 1, &rss_b);
		if (ta[i] < 0 || tb[i] < 0)
			return fputs("bench-pairs: a command failed to run\n", stderr), 1;
		ratio[i] = ta[i] / tb[i];
	}
	printf("%.0f %.0f %.2f %ld %ld\n", median(ta, n) * 1e6, median(tb, n) * 1e6,
	       median(ratio, n), rss_a, rss_b);
	return 0;
}
