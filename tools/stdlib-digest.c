/* SPDX-License-Identifier: MIT */
/*
 * stdlib-digest.c - print src_digest() of each file's text, as the
 * importer loads it (a leading byte order mark dropped), one hex line per
 * file: tools/gen-stdlib-digests.sh writes them into the build.
 */
#include <stdio.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/source.h"

int main(int argc, char **argv)
{
	struct arena a = { 0 };
	struct src_table *t = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, t, stderr);
	int rc = 0;

	for (int i = 1; i < argc && rc == 0; i++) {
		struct src_file *f = src_load(t, de, argv[i], argv[i], NO_LOC);

		if (f)
			printf("%016llx\n", (unsigned long long)src_digest(f->text, f->len));
		else
			rc = 1;
	}
	diag_flush(de);
	arena_free(&a);
	return rc;
}
