/* SPDX-License-Identifier: MIT */
/*
 * main.c - the memc command line: options, one compilation per input
 * file, phase order and exit status.
 *
 *   memc check FILE...    parse, resolve, type-check and analyse; diagnostics only
 *   memc report FILE...   the same, plus the per-device report on stdout
 *   memc list [FILE...]   the declarations visible from FILEs (or the stdlib)
 *
 * Exit status: 0 no errors; 1 errors (or warnings under -Werror); 2 usage
 * errors or an unreadable input file. Each phase runs only if the ones
 * before it succeeded; diagnostics are flushed after every phase, so
 * stderr is in phase order and then in source order.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/driver.h"
#include "analyzer/import/import_cmd.h"
#include "lang/diag.h"

enum memc_exit { MEMC_OK = 0, MEMC_ERRORS = 1, MEMC_USAGE = 2 };

static const char usage_text[] =
	"usage: memc <command> [options] FILE...\n"
	"\n"
	"commands:\n"
	"  check FILE...       type-check and analyse; print diagnostics only\n"
	"  report FILE...      also print the per-device memory report\n"
	"  list [FILE...]      list models, GPUs, layers, optimizers and precisions\n"
	"  import [--name NAME] [-o FILE] CONFIG...\n"
	"                      print .mem text from a config.json, DeepSpeed JSON,\n"
	"                      Megatron args, torchtitan TOML or training YAML\n"
	"\n"
	"options:\n"
	"  --format text|json  report and list format (default text)\n"
	"  --explain           report: show each component's formula and inputs\n"
	"  -I DIR              add DIR to the import search path (MEMC_PATH too)\n"
	"  --stdlib DIR        use DIR as the standard library\n"
	"  -W<name>, -Wno-<name>, -Werror, -Werror=<name>, -w\n"
	"                      switch warnings (see --list-diagnostics)\n"
	"  --max-errors=N      stop after N errors (default 20; 0: no limit)\n"
	"  --dump-ast          print the syntax tree of each FILE and stop\n"
	"  --list-diagnostics  print every diagnostic name and exit\n"
	"  --help, --version\n";

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("memc: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'memc --help' for more information.\n", stderr);
	return MEMC_USAGE;
}

static bool parse_format(struct driver_opts *o, const char *v)
{
	if (strcmp(v, "text") == 0)
		o->format = DRIVER_FORMAT_TEXT;
	else if (strcmp(v, "json") == 0)
		o->format = DRIVER_FORMAT_JSON;
	else
		return false;
	return true;
}

/* Options that take a value, as "--opt VALUE" or "--opt=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/* One argument; returns -1 when it was consumed, else an exit status. */
static int parse_option(struct driver_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;

	if (strcmp(a, "--explain") == 0)
		o->explain = true;
	else if (strcmp(a, "--dump-ast") == 0)
		o->dump_ast = true;
	else if (strcmp(a, "-w") == 0)
		o->no_warnings = true;
	else if (strncmp(a, "-W", 2) == 0 && a[2])
		o->wflags[o->nwflags++] = a + 2;
	else if (strncmp(a, "-I", 2) == 0 && a[2])
		o->dirs[o->ndirs++] = a + 2;
	else if (strcmp(a, "-I") == 0 && *i + 1 < argc)
		o->dirs[o->ndirs++] = argv[++*i];
	else if ((v = option_value(argc, argv, i, "--format")))
		return parse_format(o, v) ? -1 : usage_error("unknown format '%s' (text, json)", v);
	else if ((v = option_value(argc, argv, i, "--stdlib")))
		o->stdlib_dir = v;
	else if ((v = option_value(argc, argv, i, "--max-errors")))
		o->max_errors = (unsigned)strtoul(v, NULL, 10);
	else
		return usage_error("unknown option '%s'", a);
	return -1;
}

/* MEMC_PATH folders follow the -I folders. The string lives as long as
 * the process (getenv), so the pieces are strdup'ed once. */
static void add_memc_path(struct driver_opts *o)
{
	const char *env = getenv("MEMC_PATH");

	if (!env || !*env)
		return;
	char *copy = strdup(env);

	o->env_path_copy = copy;
	for (char *tok = strtok(copy, ":"); tok && o->ndirs < DRIVER_MAX_DIRS; tok = strtok(NULL, ":"))
		if (*tok)
			o->dirs[o->ndirs++] = tok;
}

static int parse_args(struct driver_opts *o, int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		if (o->ndirs >= DRIVER_MAX_DIRS || o->nwflags >= DRIVER_MAX_FLAGS ||
		    o->nfiles >= DRIVER_MAX_FILES)
			return usage_error("too many arguments");
		if (argv[i][0] == '-' && argv[i][1]) {
			int rc = parse_option(o, argc, argv, &i);

			if (rc >= 0)
				return rc;
		} else {
			o->files[o->nfiles++] = argv[i];
		}
	}
	add_memc_path(o);
	return -1;
}

static int run_command(const char *cmd, struct driver_opts *o)
{
	if (strcmp(cmd, "list") == 0)
		return driver_list(o);
	if (o->nfiles == 0)
		return usage_error("'%s' needs at least one FILE", cmd);
	return driver_compile_all(o);
}

int main(int argc, char **argv)
{
	static struct driver_opts o;

	if (argc < 2)
		return fputs(usage_text, stderr), MEMC_USAGE;
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return fputs(usage_text, stdout), MEMC_OK;
	if (strcmp(argv[1], "--version") == 0)
		return printf("memc %s\n", MEMC_VERSION), MEMC_OK;
	if (strcmp(argv[1], "--list-diagnostics") == 0)
		return diag_list_print(stdout), MEMC_OK;
	if (strcmp(argv[1], "import") == 0)
		return import_main(argc, argv);
	if (strcmp(argv[1], "check") == 0)
		o.command = DRIVER_CHECK;
	else if (strcmp(argv[1], "report") == 0)
		o.command = DRIVER_REPORT;
	else if (strcmp(argv[1], "list") == 0)
		o.command = DRIVER_LIST;
	else
		return usage_error("unknown command '%s' (check, report, list, import)", argv[1]);
	o.max_errors = 20;
	o.argv0 = argv[0];

	int rc = parse_args(&o, argc, argv);

	if (rc < 0)
		rc = run_command(argv[1], &o);
	free(o.env_path_copy);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = MEMC_USAGE;
	return rc;
}
