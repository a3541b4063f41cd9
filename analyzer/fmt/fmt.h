/* SPDX-License-Identifier: MIT */
/*
 * fmt.h - `memc fmt`: print or rewrite .mem files in the canonical layout
 * (docs/fmt.md). main.c hands it the whole command line.
 */
#ifndef MEMC_ANALYZER_FMT_H
#define MEMC_ANALYZER_FMT_H

#include <stdbool.h>
#include <stddef.h>

struct diag_engine;

extern const char fmt_usage_text[];

/* memc fmt [--check] [-w] [--] FILE...; argv[1] is "fmt". Returns the
 * exit status: 0, 1 (a file would change under --check, or could not be
 * formatted) or 2 (usage, unreadable file). */
int fmt_main(int argc, char **argv);

/*
 * Replace @path by @len bytes of @text: written to a temporary file in
 * the same folder with @path's mode, then renamed over it, so a reader
 * (or a crash) never sees half a file. False, with a fmt-write-failed
 * error in @de, when it could not.
 */
bool fmt_write_file(struct diag_engine *de, const char *path, const char *text, size_t len);

#endif
