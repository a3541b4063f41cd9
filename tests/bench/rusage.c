/* SPDX-License-Identifier: MIT */
/*
 * rusage.c - run a command, print its wall time, peak RSS, exit status
 * and CPU time.
 *
 *   build/bench-rusage FILE CMD [ARG...]
 *
 * writes "WALL_S MAXRSS_MB RC CPU_S" to FILE (CPU: user + system, which
 * moves less than wall time with the load of a shared machine; the
 * command's own output goes
 * where it would). GNU time would do, but it is a package of its own that a
 * fresh machine may lack; wait4() gives the same figures. Used by
 * tests/bench/hostile.sh (`make bench-limits`).
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
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

int main(int argc, char **argv)
{
	struct rusage ru;
	int status = 0;

	if (argc < 3)
		return fputs("usage: bench-rusage FILE CMD [ARG...]\n", stderr), 2;
	FILE *summary = fopen(argv[1], "w");

	if (!summary)
		return perror(argv[1]), 2;
	double t0 = now();
	pid_t pid = fork();

	if (pid < 0)
		return perror("fork"), 2;
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return perror("wait4"), 2;
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;

	fprintf(summary, "%.3f %.1f %d %.3f\n", now() - t0, (double)ru.ru_maxrss / 1024.0, rc, cpu);
	return fclose(summary) ? 2 : 0;
}
