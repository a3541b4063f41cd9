/* SPDX-License-Identifier: MIT */
/*
 * import_cmd.h - `memc import [--name NAME] [-o FILE] CONFIG...`: framework
 * configs into .mem text (docs/import.md).
 */
#ifndef MEMC_ANALYZER_IMPORT_CMD_H
#define MEMC_ANALYZER_IMPORT_CMD_H

#include <stddef.h>
#include <stdio.h>

/* argv[1] is "import"; returns the exit status (0, 1 or 2). */
int import_main(int argc, char **argv);
/* One config's @len bytes read as the file @path (its name picks the
 * reader), imported as `memc import PATH` would, the text written to @out
 * and the diagnostics to @diag_out: the fuzz harness's entry
 * (tests/fuzz/fuzz_import.c). Returns the exit status. */
int import_text(const char *path, const char *text, size_t len, FILE *out, FILE *diag_out);

#endif
