/* SPDX-License-Identifier: MIT */
/*
 * test_fit_gpu_swap.c - the -Wcapacity search's GPU-only variants
 * (analyzer/cmd/fit_variant.c "One GPU for another"): a variant that only
 * puts a larger GPU into a build already made takes that build with the
 * GPU's figures put in instead of being built. For every such variant the
 * notes' searches try on the examples and on every golden file, the
 * variant is also built the full way (the shortcut's check hook) and the
 * two outcomes (fits, the device total, what the GPU has left) must be the
 * same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <glob.h>

#include <cmocka.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/fit_impl.h"

/* `memc check` of every file matching @pattern, its diagnostics dropped;
 * how many files there were. */
static size_t check_all(const char *pattern)
{
	glob_t g;
	size_t n = 0;

	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *files[1] = { g.gl_pathv[i] };
		struct driver_opts o = { .command = DRIVER_CHECK, .stdlib_dir = "stdlib", .files = files,
					 .nfiles = 1, .argv0 = "memc" };

		driver_compile_all(&o);
		n++;
	}
	globfree(&g);
	return n;
}

static void shortcut_is_the_full_build(void **state)
{
	int saved = dup(2), null = open("/dev/null", O_WRONLY);
	size_t n;

	(void)state;
	assert_true(saved >= 0 && null >= 0);
	fit_gpu_shortcut = (struct fit_gpu_shortcut_stats){ .check = true };
	dup2(null, 2);		/* the warnings are not what is tested */
	n = check_all("examples/*.mem") + check_all("tests/*/*.mem");
	fflush(stderr);
	dup2(saved, 2);
	close(null);
	close(saved);
	print_message("%zu files, %lu GPU-only variants, %lu differ\n", n, fit_gpu_shortcut.taken,
		      fit_gpu_shortcut.mismatches);
	assert_true(n > 100);
	/* does-not-fit.mem alone has 16 */
	assert_true(fit_gpu_shortcut.taken >= 16);
	assert_int_equal(fit_gpu_shortcut.mismatches, 0);
}

/* A variant's figures from the shortcut are the ones a build gives: one
 * example by itself, so that a failure names it. */
static void does_not_fit_example(void **state)
{
	(void)state;
	fit_gpu_shortcut = (struct fit_gpu_shortcut_stats){ .check = true };
	int saved = dup(2), null = open("/dev/null", O_WRONLY);

	dup2(null, 2);
	check_all("examples/does-not-fit.mem");
	fflush(stderr);
	dup2(saved, 2);
	close(null);
	close(saved);
	print_message("does-not-fit: %lu GPU-only variants, %lu differ\n", fit_gpu_shortcut.taken,
		      fit_gpu_shortcut.mismatches);
	/* its 16 GPU variants (docs/performance.md): the larger GPU alone,
	 * then with checkpoint = selective or full, paged_adamw_8bit, the
	 * optimizer offloaded, QLoRA and their pairs */
	assert_int_equal(fit_gpu_shortcut.taken, 16);
	assert_int_equal(fit_gpu_shortcut.mismatches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(does_not_fit_example),
		cmocka_unit_test(shortcut_is_the_full_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
