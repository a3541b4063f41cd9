/* SPDX-License-Identifier: MIT */
/*
 * fmt_cmd.c - the `memc fmt` command: options, one file at a time, and
 * the check that formatting never changes a program.
 *
 * A file is formatted only if it parses without an error. The formatted
 * text is then parsed again and both syntax trees are printed with
 * ast_dump(), which shows no locations; if the two dumps differ (or the
 * new text does not parse) nothing is printed or written and the file is
 * an fmt-changed-meaning error. So a bug in the layout engine can cost a
 * refusal, never a changed report.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700	/* realpath() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/fmt/fmt.h"
#include "analyzer/fmt/fmt_impl.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"
#include "lang/intern.h"
#include "lang/parse.h"
#include "lang/source.h"
#include "lang/strbuf.h"

enum { FMT_OK = 0, FMT_ERRORS = 1, FMT_USAGE = 2 };
enum fmt_mode { FMT_PRINT, FMT_CHECK, FMT_WRITE };

const char fmt_usage_text[] =
	"usage: memc fmt [--check | -w] [--] FILE...\n"
	"\n"
	"Print each FILE in the canonical layout (docs/fmt.md) on standard output.\n"
	"A file that does not parse is not formatted: its errors are printed.\n"
	"\n"
	"options:\n"
	"  --check   print nothing but the names of the FILEs that are not in the\n"
	"            canonical layout; exit 1 if there is any\n"
	"  -w        rewrite each FILE that is not in the canonical layout, in place\n"
	"  --help    this text\n"
	"\n"
	"A FILE of '-' is standard input (not with -w). Exit status: 0 done (or,\n"
	"with --check, every FILE formatted); 1 a FILE would change (--check), has\n"
	"errors or could not be formatted; 2 usage errors or an unreadable FILE.\n";

/* @arg is escaped like diagnostics: it must not start a line of its own. */
static int fmt_usage_error(const char *msg, const char *arg)
{
	struct strbuf sb;

	strbuf_init(&sb);
	if (arg)
		diag_escape(&sb, arg);
	fprintf(stderr, "memc: %s%s%s%s\nTry 'memc fmt --help' for more information.\n", msg,
		arg ? " '" : "", sb.buf, arg ? "'" : "");
	strbuf_release(&sb);
	return FMT_USAGE;
}

/* The location-free dump of @f's text, or NULL if it has syntax errors. */
static char *dump_tree(struct arena *a, struct interner *in, struct diag_engine *de,
		       const struct src_file *f)
{
	unsigned before = diag_error_count(de);
	struct file_ast *ast = parse_file(a, in, de, f);
	char *buf = NULL;
	size_t len = 0;

	if (ast->nerrors || diag_error_count(de) != before)
		return NULL;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		xdie_oom();
	ast_dump(mem, ast);
	if (fclose(mem) != 0)
		xdie_oom();
	return buf;
}

/* Where the texts first differ, at the start of that line: what a reader
 * looks at when the formatter refuses a file. */
static uint32_t first_change(const struct src_file *f, const char *text, size_t len)
{
	uint32_t i = 0;

	while (i < f->len && i < len && f->text[i] == text[i])
		i++;
	while (i > 0 && f->text[i - 1] != '\n' && f->text[i - 1] != '\r')
		i--;
	return i;
}

/* The formatted text of @f, malloc'd, after checking it means the same;
 * NULL (with an error in @de) if it does not. */
static char *format_checked(struct arena *a, struct interner *in, struct diag_engine *de,
			    const struct src_file *f, char *orig_dump, size_t *len)
{
	char *text = fmt_layout(f->text, f->len, len);
	struct src_table *t = src_table_new(a);
	struct diag_engine *quiet = diag_new(a, t, NULL);
	const struct src_file *g = src_add_string(t, quiet, f->display_name, text, *len);
	char *dump = g ? dump_tree(a, in, quiet, g) : NULL;
	bool same = dump && strcmp(dump, orig_dump) == 0;

	free(dump);
	if (same)
		return text;
	uint32_t at = first_change(f, text, *len);

	diag_note(diag_error(de, DIAG_FMT_CHANGED_MEANING, (struct loc){ f->id, at, at },
			     "formatting '%s' would change its syntax tree; it is left as it is",
			     f->display_name),
		  NO_LOC, "see fmt-changed-meaning in docs/diagnostics.md");
	free(text);
	return NULL;
}

static bool write_failed(struct diag_engine *de, const char *path, int err)
{
	diag_error(de, DIAG_FMT_WRITE_FAILED, NO_LOC, "cannot write '%s': %s", path, strerror(err));
	return false;
}

static bool write_all(int fd, const char *text, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		text += n;
		len -= (size_t)n;
	}
	return true;
}

/* The temporary file goes next to the real file (a symlink is followed,
 * not replaced), so that rename() stays within one file system; it is
 * synced first, so that a crash leaves the old text or the new one. */
bool fmt_write_file(struct diag_engine *de, const char *path, const char *text, size_t len)
{
	struct stat st;
	char *real = realpath(path, NULL);

	if (!real || stat(real, &st) != 0) {
		free(real);
		return write_failed(de, path, errno);
	}
	char *slash = strrchr(real, '/');
	struct strbuf tmp;

	strbuf_init(&tmp);
	strbuf_add(&tmp, real, slash ? (size_t)(slash - real) : 0);
	strbuf_addstr(&tmp, "/.memc-fmt-XXXXXX");
	int fd = mkstemp(tmp.buf);
	bool ok = fd >= 0 && write_all(fd, text, len) && fchmod(fd, st.st_mode & 07777) == 0 &&
		  fsync(fd) == 0;
	int err = errno;

	if (fd >= 0 && close(fd) != 0 && ok)
		ok = false, err = errno;
	if (ok && rename(tmp.buf, real) != 0)
		ok = false, err = errno;
	if (!ok && fd >= 0)
		unlink(tmp.buf);
	strbuf_release(&tmp);
	free(real);
	return ok || write_failed(de, path, err);
}

/* lang/source.c drops a leading byte order mark; the canonical layout has
 * none, so a file that starts with one is not formatted yet. */
static bool has_bom(const char *path)
{
	unsigned char b[3];
	FILE *fp = strcmp(path, "-") == 0 ? NULL : fopen(path, "rb");
	bool bom = fp && fread(b, 1, 3, fp) == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF;

	if (fp)
		fclose(fp);
	return bom;
}

static void print_name(const char *path)
{
	struct strbuf sb;

	strbuf_init(&sb);
	diag_escape(&sb, strcmp(path, "-") == 0 ? "<stdin>" : path);
	printf("%s\n", sb.buf);
	strbuf_release(&sb);
}

static int format_loaded(enum fmt_mode mode, struct arena *a, struct diag_engine *de,
			 const struct src_file *f, const char *path)
{
	struct interner *in = interner_new(a);
	char *orig = dump_tree(a, in, de, f);
	size_t len = 0;
	char *text = orig ? format_checked(a, in, de, f, orig, &len) : NULL;
	int rc = FMT_OK;

	free(orig);
	if (!text)
		return FMT_ERRORS;
	bool changed = len != f->len || memcmp(text, f->text, len) != 0 || has_bom(path);

	if (mode == FMT_PRINT)
		fwrite(text, 1, len, stdout);
	else if (mode == FMT_CHECK && changed)
		print_name(path), rc = FMT_ERRORS;
	else if (mode == FMT_WRITE && changed && !fmt_write_file(de, path, text, len))
		rc = FMT_ERRORS;
	free(text);
	return rc;
}

static int format_one(enum fmt_mode mode, const char *path)
{
	struct arena arena = { 0 };
	struct src_table *src = src_table_new(&arena);
	struct diag_engine *de = diag_new(&arena, src, stderr);
	bool is_stdin = strcmp(path, "-") == 0;
	struct src_file *f = is_stdin ? src_load_fd(src, de, STDIN_FILENO, "<stdin>")
				      : src_load(src, de, path, NULL, NO_LOC);
	int rc;

	if (!f)	/* read but invalid (UTF-8, NUL): a located error, 1 */
		rc = src->nfiles > 1 && src_get(src, 1)->text ? FMT_ERRORS : FMT_USAGE;
	else
		rc = format_loaded(mode, &arena, de, f, path);
	diag_flush(de);
	arena_free(&arena);
	return rc;
}

/* Options may come before or after the files, "--" ends them. Returns -1
 * when the line is fine, else the exit status. */
static int parse_fmt_args(int argc, char **argv, enum fmt_mode *mode, const char **files,
			  size_t *n)
{
	bool options = true, check = false, write = false, in = false;

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (options && strcmp(a, "--") == 0)
			options = false;
		else if (options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0))
			return fputs(fmt_usage_text, stdout), FMT_OK;
		else if (options && strcmp(a, "--check") == 0)
			check = true;
		else if (options && strcmp(a, "-w") == 0)
			write = true;
		else if (options && a[0] == '-' && a[1])
			return fmt_usage_error("unknown option", a);
		else if (strcmp(a, "-") == 0 && in)
			return fmt_usage_error("standard input ('-') can be read only once", NULL);
		else
			in |= strcmp(a, "-") == 0, files[(*n)++] = a;
	}
	if (check && write)
		return fmt_usage_error("--check and -w cannot be used together", NULL);
	if (*n == 0)
		return fmt_usage_error("'fmt' needs at least one FILE", NULL);
	if (write && in)
		return fmt_usage_error("-w cannot rewrite standard input ('-')", NULL);
	*mode = check ? FMT_CHECK : write ? FMT_WRITE : FMT_PRINT;
	return -1;
}

int fmt_main(int argc, char **argv)
{
	const char **files = xcalloc((size_t)argc, sizeof *files);
	enum fmt_mode mode = FMT_PRINT;
	size_t n = 0;
	int worst = parse_fmt_args(argc, argv, &mode, files, &n);

	if (worst < 0) {
		worst = FMT_OK;
		for (size_t i = 0; i < n; i++) {
			int rc = format_one(mode, files[i]);

			worst = rc > worst ? rc : worst;
		}
	}
	free(files);
	return worst;
}
