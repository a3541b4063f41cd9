/* `memc check` over files, as the fit search's guard tests run it: each
 * file compiled alone, stderr silenced while it runs (the warnings are
 * not what those tests assert).  Included after cmocka.h. */
#ifndef MEMC_TESTS_CHECK_FILES_H
#define MEMC_TESTS_CHECK_FILES_H

#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <unistd.h>

#include "analyzer/cmd/driver.h"

/* `memc check` of every file matching @pattern, its diagnostics dropped;
 * how many files there were. */
static size_t check_all(const char *pattern)
{
	glob_t g;
	size_t n = 0;
	int saved = dup(2), null = open("/dev/null", O_WRONLY);

	assert_true(saved >= 0 && null >= 0);
	dup2(null, 2);		/* the warnings are not what is tested */
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *files[1] = { g.gl_pathv[i] };
			struct driver_opts o = { .command = DRIVER_CHECK, .stdlib_dir = "stdlib", .files = files,
						 .nfiles = 1, .argv0 = "memc" };

			driver_compile_all(&o);
			n++;
		}
		globfree(&g);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(null);
	close(saved);
	return n;
}

#endif
