/* SPDX-License-Identifier: MIT */
/*
 * main.c - the memc command line: options, one compilation per input
 * file, phase order and exit status.
 *
 *   memc check FILE...    parse, resolve, type-check and analyse; diagnostics only
 *   memc report FILE...   the same, plus the per-device report on stdout
 *   memc list [FILE...]   the declarations visible from FILEs (or the stdlib)
 *   memc fmt FILE...      print or rewrite FILEs in the canonical layout
 *   memc fit FILE         what fits, and the smallest changes that make it fit
 *   memc search FILE      the fastest layouts that fit, as train blocks
 *   memc compare FILE SNAPSHOT  prediction against a PyTorch memory snapshot
 *   memc help [COMMAND]   the usage of memc or of one command
 *
 * Options may come before or after the files; "--" ends them and a lone
 * "-" is standard input. Every list (-I, -W, files, MEMC_PATH) is sized
 * to what it can hold, option values are checked strictly, and a
 * single-valued option given twice with two values is an error: a CI
 * gate must not run with settings other than the ones written.
 *
 * Exit status: 0 no errors; 1 errors (or warnings under -Werror); 2 usage
 * errors or an unreadable input file. Each phase runs only if the ones
 * before it succeeded; diagnostics are flushed after every phase, so
 * stderr is in phase order and then in source order.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/cmd/compare.h"
#include "analyzer/cmd/fit_cmd.h"
#include "analyzer/cmd/search_cmd.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/fmt/fmt.h"
#include "analyzer/import/import_cmd.h"
#include "analyzer/lsp/lsp.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

enum memc_exit { MEMC_OK = 0, MEMC_ERRORS = 1, MEMC_USAGE = 2 };

static const char usage_text[] =
	"usage: memc <command> [options] [--] FILE...\n"
	"\n"
	"commands:\n"
	"  check FILE...       type-check and analyse; print diagnostics only\n"
	"  report FILE...      also print the per-device memory report\n"
	"  list [FILE...]      list models, GPUs, layers, optimizers and precisions\n"
	"  import [--name NAME] [-o FILE] CONFIG...\n"
	"                      print .mem text from a config.json, DeepSpeed JSON,\n"
	"                      Megatron args, torchtitan TOML or training YAML\n"
	"  fmt FILE...         print FILEs in the canonical layout (--check, -w)\n"
	"  fit [--job NAME] FILE\n"
	"                      the largest micro_batch and seq_len, the fewest GPUs,\n"
	"                      and the smallest changes that make a job fit\n"
	"  search [--job NAME] [--gpus N,...] [--top K] [--format text|json|csv] FILE\n"
	"                      the fastest layouts that fit, ranked by a step-time\n"
	"                      model, as train blocks to paste\n"
	"  lsp                 a Language Server Protocol server on stdin/stdout\n"
	"  compare [--job NAME] FILE SNAPSHOT\n"
	"                      predicted against measured memory, per phase and\n"
	"                      category, from a torch.cuda.memory._snapshot() JSON\n"
	"  help [COMMAND]      this text, or what COMMAND does (also COMMAND --help)\n"
	"\n"
	"options:\n"
	"  --format text|json  report and list format (default text)\n"
	"  --format html       report: one self-contained page with a chart per rank class\n"
	"  --format json|sarif|github\n"
	"                      check: the diagnostics as JSON, SARIF 2.1.0 or\n"
	"                      GitHub workflow commands on stdout\n"
	"  --explain           report: show each component's formula and inputs\n"
	"  -I DIR              add DIR to the import search path (MEMC_PATH too)\n"
	"  --stdlib DIR        use DIR as the standard library\n"
	"  -W<name>, -Wno-<name>, -Werror, -Werror=<name>, -w\n"
	"                      switch warnings (see --list-diagnostics)\n"
	"  --max-errors=N      stop after N errors (default 20; 0: no limit)\n"
	"  --color=auto|always|never\n"
	"                      colour the diagnostics on stderr (default auto:\n"
	"                      on a terminal, unless NO_COLOR is set)\n"
	"  --dump-ast          print the syntax tree of each FILE and stop\n"
	"  --list-diagnostics  print every diagnostic name and exit\n"
	"  --help, --version\n"
	"  --                  end of options: what follows are FILEs\n"
	"\n"
	"A FILE of '-' is standard input, named <stdin>; its imports are looked up\n"
	"from the current folder.\n";

/* Arguments are escaped like diagnostics: an argument holding a newline
 * must not print a line of its own. */
__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	struct strbuf msg, out;
	va_list ap;

	strbuf_init(&msg);
	strbuf_init(&out);
	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	diag_escape(&out, msg.buf);
	fprintf(stderr, "memc: %s\nTry 'memc --help' for more information.\n", out.buf);
	strbuf_release(&msg);
	strbuf_release(&out);
	return MEMC_USAGE;
}

/* `memc help CMD` and `memc CMD --help`: what CMD does, then the options
 * (shared by check, report and list; fmt has its own). */
static const struct cmd_help {
	const char *name, *text;
	bool options;		/* takes the options of usage_text */
} command_helps[] = {
	{ "check", "usage: memc check [options] [--] FILE...\n\n"
		"Parse, resolve, type-check and analyse each FILE, then print its diagnostics\n"
		"(nothing if it is fine). Exit status 0: no errors; 1: errors; 2: usage.\n",
	  true },
	{ "report", "usage: memc report [options] [--] FILE...\n\n"
		"Check each FILE like 'memc check', then print the per-GPU memory report of\n"
		"each train block on standard output (--format json: as JSON).\n", true },
	{ "list", "usage: memc list [options] [--] [FILE...]\n\n"
		"List the models, GPUs, layers, optimizers and precisions visible from the\n"
		"FILEs, or from the whole stdlib without FILEs.\n", true },
	{ "import", "usage: memc import [--name NAME] [-o FILE] CONFIG...\n\n"
		"Print .mem text from a Hugging Face config.json, DeepSpeed JSON, Megatron\n"
		"arguments, an fsdp_qlora train.py command line, a torchtitan TOML or a\n"
		"training YAML config (docs/import.md).\n",
	  false },
	{ "lsp", "usage: memc lsp\n\n"
		"Serve the Language Server Protocol (JSON-RPC over stdin and stdout) for an\n"
		"editor: diagnostics as you type, hover, go-to-definition, completion\n"
		"(docs/editors.md).\n", false },
	{ "compare", "usage: memc compare [--job NAME] [--stage N] [--device N] [--format text|json]\n"
		"                    [-I DIR] [--stdlib DIR] [-W...] [--] FILE SNAPSHOT\n\n"
		"Analyse one train block of FILE (--job: which one; --stage: which pipeline\n"
		"stage) and print, beside what a PyTorch memory snapshot measured (the JSON of\n"
		"torch.cuda.memory._snapshot(); --device: which GPU's trace), the peak\n"
		"allocated and reserved bytes per phase and the bytes per category at the\n"
		"peak, the largest differences first (docs/compare.md).\n", false },
};

/* Print the usage of command @name; false for a command without its own. */
static bool print_command_help(const char *name)
{
	if (strcmp(name, "fmt") == 0)
		return fputs(fmt_usage_text, stdout), true;
	if (strcmp(name, "fit") == 0)
		return fputs(fit_usage_text, stdout), true;
	if (strcmp(name, "search") == 0)
		return fputs(search_usage_text, stdout), true;
	for (size_t i = 0; i < sizeof command_helps / sizeof command_helps[0]; i++)
		if (strcmp(name, command_helps[i].name) == 0) {
			fputs(command_helps[i].text, stdout);
			if (command_helps[i].options)
				printf("\n%s", strstr(usage_text, "options:"));
			return true;
		}
	return false;
}

static int command_help(const char *name)
{
	if (!print_command_help(name))
		fputs(usage_text, stdout);
	return MEMC_OK;
}

/* --help among the options of a command that parses its own (import):
 * answered here, so that every command takes it. */
static bool wants_help(int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

static int help_main(int argc, char **argv)
{
	if (argc < 3)
		return fputs(usage_text, stdout), MEMC_OK;
	if (print_command_help(argv[2]))
		return MEMC_OK;
	return usage_error("unknown command '%s' (check, report, list, import, fmt, fit, search, compare, lsp)", argv[2]);
}

/* What main.c needs beyond driver_opts: the single-valued options seen,
 * so that a second, different value is an error rather than a silent
 * override. */
struct cli {
	struct driver_opts *o;
	const char *format, *stdlib, *max_errors, *color;
	bool stdin_seen;
};

static bool parse_format(struct driver_opts *o, const char *v)
{
	if (strcmp(v, "text") == 0)
		o->format = DRIVER_FORMAT_TEXT;
	else if (strcmp(v, "json") == 0)
		o->format = DRIVER_FORMAT_JSON;
	else if (strcmp(v, "sarif") == 0)
		o->format = DRIVER_FORMAT_SARIF;
	else if (strcmp(v, "github") == 0)
		o->format = DRIVER_FORMAT_GITHUB;
	else if (strcmp(v, "html") == 0)
		o->format = DRIVER_FORMAT_HTML;
	else
		return false;
	return true;
}

/* A whole decimal number, 0 to UINT_MAX: no sign, no blanks, no suffix. */
static bool parse_count(const char *v, unsigned *out)
{
	unsigned long long n = 0;

	if (!*v)
		return false;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (unsigned)(*p - '0');
		if (n > UINT_MAX)
			return false;
	}
	*out = (unsigned)n;
	return true;
}

/*
 * A folder for the import search path (-I, MEMC_PATH) or --stdlib. A
 * missing one is an error, not skipped: a typo would otherwise let an
 * import resolve to a same-named file further down the path, such as
 * the stdlib's, and give a report for a model nobody wrote.
 */
static bool check_dir(const char *what, const char *dir)
{
	struct stat st;

	if (!*dir)
		return usage_error("%s: empty directory name", what), false;
	if (stat(dir, &st) != 0)
		return usage_error("%s '%s': %s", what, dir, strerror(errno)), false;
	if (!S_ISDIR(st.st_mode))
		return usage_error("%s '%s': %s", what, dir, strerror(ENOTDIR)), false;
	return true;
}

/*
 * A single-valued option: a second occurrence with another value is an
 * error (a script that appends "--format json" to a line that already
 * says "--format text" should hear about it). The same value twice is
 * harmless.
 */
static bool once(const char **seen, const char *name, const char *v)
{
	if (*seen && strcmp(*seen, v) != 0)
		return usage_error("%s given twice, as '%s' and as '%s'", name, *seen, v), false;
	*seen = v;
	return true;
}

/*
 * Options that take a value, as "--opt VALUE" or "--opt=VALUE" (and, for
 * -I, "-IDIR"). Sets *v and returns true when argv[*i] is @name; *v is
 * NULL when the value is missing.
 */
static bool option_value(int argc, char **argv, int *i, const char *name, bool glued,
			 const char **v)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return false;
	if (a[n] == '=' && !glued)
		*v = a + n + 1;
	else if (a[n] && glued)
		*v = a + n;
	else if (a[n])
		return false;
	else
		*v = *i + 1 < argc ? argv[++*i] : NULL;
	return true;
}

/* One option with a value; returns -1 when it was consumed, else an exit
 * status, or -2 when @a is none of them. */
static int parse_valued(struct cli *c, int argc, char **argv, int *i)
{
	struct driver_opts *o = c->o;
	const char *v;

	if (option_value(argc, argv, i, "-I", true, &v)) {
		if (!v)
			return usage_error("option '-I' needs a directory");
		if (!check_dir("-I", v))
			return MEMC_USAGE;
		o->dirs[o->ndirs++] = v;
	} else if (option_value(argc, argv, i, "--format", false, &v)) {
		if (!v)
			return usage_error("option '--format' needs a value (text, json, html, sarif, github)");
		if (!parse_format(o, v))
			return usage_error("unknown format '%s' (text, json, html, sarif, github)", v);
		if (!once(&c->format, "--format", v))
			return MEMC_USAGE;
	} else if (option_value(argc, argv, i, "--stdlib", false, &v)) {
		if (!v)
			return usage_error("option '--stdlib' needs a directory");
		if (!check_dir("--stdlib", v) || !once(&c->stdlib, "--stdlib", v))
			return MEMC_USAGE;
		o->stdlib_dir = v;
	} else if (option_value(argc, argv, i, "--color", false, &v)) {
		if (!v || (strcmp(v, "auto") && strcmp(v, "always") && strcmp(v, "never")))
			return usage_error("--color needs auto, always or never, not '%s'", v ? v : "");
		if (!once(&c->color, "--color", v))
			return MEMC_USAGE;
	} else if (option_value(argc, argv, i, "--max-errors", false, &v)) {
		if (!v || !parse_count(v, &o->max_errors))
			return usage_error("--max-errors needs a whole number from 0 to %u "
					   "(0: no limit), not '%s'", UINT_MAX, v ? v : "");
		if (!once(&c->max_errors, "--max-errors", v))
			return MEMC_USAGE;
	} else {
		return -2;
	}
	return -1;
}

/* One argument; returns -1 when it was consumed, else an exit status. */
static int parse_option(struct cli *c, int argc, char **argv, int *i)
{
	struct driver_opts *o = c->o;
	const char *a = argv[*i];
	int rc;

	if (strcmp(a, "--explain") == 0)
		o->explain = true;
	else if (strcmp(a, "--dump-ast") == 0)
		o->dump_ast = true;
	else if (strcmp(a, "-w") == 0)
		o->no_warnings = true;
	else if (strcmp(a, "--help") == 0)
		return command_help(argv[1]);
	else if (strcmp(a, "-W") == 0)
		return usage_error("option '-W' needs a warning name (see --list-diagnostics)");
	else if (strncmp(a, "-W", 2) == 0)
		o->wflags[o->nwflags++] = a + 2;
	else if ((rc = parse_valued(c, argc, argv, i)) != -2)
		return rc;
	else
		return usage_error("unknown option '%s'", a);
	return -1;
}

/* How many folders MEMC_PATH can add: one per separator, plus one. */
static size_t count_memc_path(void)
{
	const char *env = getenv("MEMC_PATH");
	size_t n = 1;

	for (const char *p = env ? env : ""; *p; p++)
		n += *p == ':';
	return n;
}

/* MEMC_PATH folders follow the -I folders, wherever the -I options were
 * on the line. The string lives as long as the process (getenv), so the
 * pieces are strdup'ed once. An empty piece ("a::b") is skipped. */
static bool add_memc_path(struct driver_opts *o)
{
	const char *env = getenv("MEMC_PATH");

	if (!env || !*env)
		return true;
	char *copy = strdup(env);

	if (!copy)
		return usage_error("out of memory"), false;
	o->env_path_copy = copy;
	for (char *tok = strtok(copy, ":"); tok; tok = strtok(NULL, ":")) {
		if (!check_dir("MEMC_PATH entry", tok))
			return false;
		o->dirs[o->ndirs++] = tok;
	}
	return true;
}

/* Room for every argument in each list: nothing is ever refused or
 * dropped for want of space. */
static bool alloc_lists(struct driver_opts *o, int argc)
{
	size_t n = (size_t)argc;

	o->dirs = calloc(n + count_memc_path(), sizeof *o->dirs);
	o->wflags = calloc(n, sizeof *o->wflags);
	o->files = calloc(n, sizeof *o->files);
	return o->dirs && o->wflags && o->files;
}

/*
 * --color=auto colours only a terminal, and honours NO_COLOR (set and not
 * empty, per no-color.org) and TERM=dumb, as GCC does; an explicit
 * --color=always wins over both, so a CI log viewer can still ask for it.
 */
static bool want_color(const char *when)
{
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

	if (when && strcmp(when, "auto") != 0)
		return strcmp(when, "always") == 0;
	if ((no_color && *no_color) || (term && strcmp(term, "dumb") == 0))
		return false;
	return isatty(STDERR_FILENO);
}

/* "--" ends the options (POSIX): what follows is a file even if it starts
 * with "-". A lone "-" is standard input, readable once. */
static int parse_args(struct driver_opts *o, int argc, char **argv)
{
	struct cli c = { .o = o };
	bool options = true;

	if (!alloc_lists(o, argc))
		return usage_error("out of memory");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (options && strcmp(a, "--") == 0) {
			options = false;
		} else if (options && a[0] == '-' && a[1]) {
			int rc = parse_option(&c, argc, argv, &i);

			if (rc >= 0)
				return rc;
		} else if (strcmp(a, "-") == 0 && c.stdin_seen) {
			return usage_error("standard input ('-') can be read only once");
		} else {
			c.stdin_seen |= strcmp(a, "-") == 0;
			o->files[o->nfiles++] = a;
		}
	}
	o->color = want_color(c.color);
	return add_memc_path(o) ? -1 : MEMC_USAGE;
}

static int run_command(const char *cmd, struct driver_opts *o)
{
	if ((o->format == DRIVER_FORMAT_SARIF || o->format == DRIVER_FORMAT_GITHUB) &&
	    o->command != DRIVER_CHECK)
		return usage_error("--format sarif and github are for 'check' only");
	if (o->format == DRIVER_FORMAT_HTML && o->command != DRIVER_REPORT)
		return usage_error("--format html is for 'report' only");
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
	if (strcmp(argv[1], "help") == 0)
		return help_main(argc, argv);
	if (strcmp(argv[1], "fmt") == 0) {
		int frc = fmt_main(argc, argv);

		return fflush(stdout) != 0 || ferror(stdout) ? MEMC_USAGE : frc;
	}
	if (strcmp(argv[1], "import") == 0)
		return wants_help(argc, argv) ? command_help(argv[1]) : import_main(argc, argv);
	if (strcmp(argv[1], "fit") == 0)
		return wants_help(argc, argv) ? command_help(argv[1]) : fit_main(argc, argv);
	if (strcmp(argv[1], "search") == 0)
		return wants_help(argc, argv) ? command_help(argv[1]) : search_main(argc, argv);
	if (strcmp(argv[1], "lsp") == 0)
		return wants_help(argc, argv) ? command_help(argv[1]) : lsp_main(argc, argv);
	if (strcmp(argv[1], "compare") == 0)
		return wants_help(argc, argv) ? command_help(argv[1]) : compare_main(argc, argv);
	if (strcmp(argv[1], "check") == 0)
		o.command = DRIVER_CHECK;
	else if (strcmp(argv[1], "report") == 0)
		o.command = DRIVER_REPORT;
	else if (strcmp(argv[1], "list") == 0)
		o.command = DRIVER_LIST;
	else
		return usage_error("unknown command '%s' (check, report, list, import, fmt, fit, search, compare, lsp, help)", argv[1]);
	o.max_errors = 20;
	o.argv0 = argv[0];

	int rc = parse_args(&o, argc, argv);

	if (rc < 0)
		rc = run_command(argv[1], &o);
	free(o.env_path_copy);
	free(o.dirs);
	free(o.wflags);
	free(o.files);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = MEMC_USAGE;
	return rc;
}
