/* A guard over memc's own sources, for the tests whose shortcut stands in
 * for a rule of the code (the fit search's GPU swap, the optimizer after
 * the walk): every line that @reads matches, in the files a glob pattern
 * names, must be one the test lists as "file: line", so the next reader
 * added to the code fails the test, naming its line, until the shortcut
 * is taught about it.  Included by the tests that use it (static). */
#ifndef MEMC_TESTS_SOURCE_GUARD_H
#define MEMC_TESTS_SOURCE_GUARD_H

#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct source_guard {
	const char *const *known;	/* "file: line", the line without its indent */
	size_t nknown;
	bool (*reads)(const char *line);
	const char *what;		/* "the GPU", "the optimizer": for the message */
};

static bool guard_listed(const struct source_guard *g, const char *file, const char *line)
{
	char want[512];

	snprintf(want, sizeof want, "%s: %s", file, line);
	for (size_t i = 0; i < g->nknown; i++)
		if (strcmp(want, g->known[i]) == 0)
			return true;
	return false;
}

/* The lines of the files matching @pattern that @g reads and does not
 * list, each printed; how many.  A pattern that matches nothing, or a
 * file that cannot be read, fails the test (the guard would be empty). */
static unsigned guard_unlisted(const struct source_guard *g, const char *pattern)
{
	glob_t gl;
	unsigned bad = 0;
	char line[1024];

	assert_int_equal(glob(pattern, 0, NULL, &gl), 0);
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		FILE *f = fopen(gl.gl_pathv[i], "r");
		const char *base = strrchr(gl.gl_pathv[i], '/') + 1;

		assert_non_null(f);
		while (fgets(line, sizeof line, f)) {
			char *t = line + strspn(line, " \t");

			t[strcspn(t, "\n")] = '\0';
			if (g->reads(t) && !guard_listed(g, base, t)) {
				print_message("%s: a new reader of %s: %s\n", gl.gl_pathv[i], g->what, t);
				bad++;
			}
		}
		fclose(f);
	}
	globfree(&gl);
	return bad;
}

#endif
