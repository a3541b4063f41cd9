/* SPDX-License-Identifier: MIT */
/*
 * driver.h - one compilation per input file: load and parse (with
 * imports), check, analyse, report. main.c only parses the command line.
 */
#ifndef MEMC_ANALYZER_DRIVER_H
#define MEMC_ANALYZER_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

enum driver_command { DRIVER_CHECK, DRIVER_REPORT, DRIVER_LIST };
/* sarif and github are for check only, html for report only (main.c
 * refuses them elsewhere). */
enum driver_format { DRIVER_FORMAT_TEXT, DRIVER_FORMAT_JSON, DRIVER_FORMAT_SARIF, DRIVER_FORMAT_GITHUB,
		     DRIVER_FORMAT_HTML };

struct driver_opts {
	enum driver_command command;
	enum driver_format format;
	bool explain, dump_ast, no_warnings;
	bool color;			/* --color, resolved by main.c for stderr */
	unsigned max_errors;
	const char *argv0;
	const char *stdlib_dir;		/* --stdlib, or NULL: found next to the binary */
	/* Sized by main.c to the argument count (and MEMC_PATH), so no
	 * argument can be dropped or refused for want of room. */
	const char **dirs;		/* -I folders, then MEMC_PATH folders */
	size_t ndirs;
	const char **wflags;
	size_t nwflags;
	const char **files;		/* "-" is standard input */
	size_t nfiles;
	char *env_path_copy;
};

/* Compile every file; return the exit status (0, 1 or 2). */
int driver_compile_all(struct driver_opts *o);
struct arena;
/* The stdlib folder: --stdlib, else next to the binary, else installed. */
const char *driver_stdlib_dir(struct arena *a, const struct driver_opts *o);
/* memc list. */
int driver_list(struct driver_opts *o);

/* The commands' shared option syntax: the value of option @name at
 * argv[*i] ("--opt V", "--opt=V", and for -I "-IDIR" as memc check takes
 * it); *hit says whether it was @name, NULL a missing value. */
const char *driver_option_value(int argc, char **argv, int *i, const char *name, bool *hit);
/* -I and --stdlib folders must exist: a typo would otherwise let an import
 * resolve to a same-named file further down the path. */
bool driver_is_dir(const char *p);
/* The command line of `memc CMD [OPTION]... FILE` from argv[2]: each
 * option goes to @option (-1: go on, else the exit status to return), the
 * one FILE (not standard input) to *@file. -1 when it parsed. */
int driver_parse_file_args(const char *command, int argc, char **argv, const char **file,
			   int (*option)(void *ctx, int argc, char **argv, int *i), void *ctx);
/* "memc: MSG ARG" and where to find help for @command; returns 2. */
int driver_usage(const char *command, const char *msg, const char *arg);

#endif
