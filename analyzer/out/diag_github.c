/* SPDX-License-Identifier: MIT */
/*
 * diag_github.c - `memc check --format github`: one GitHub Actions
 * workflow command per diagnostic, which the runner turns into an
 * annotation on the file and line:
 *
 *   ::warning file=a.mem,line=19,col=3,endLine=19,endColumn=17,title=capacity::device total ...
 *
 * The notes follow the message on lines of their own ("note: a.mem:19:3:
 * micro_batch = 1 fits ..."), as GitHub shows only one annotation per
 * command. GitHub annotates files of the repository only: a diagnostic
 * inside the standard library goes on the import, in the user's file,
 * that brought that file in, and its message starts with where it really
 * is. GitHub takes columns only on a one-line range and reads
 * endColumn as the last column of the range (inclusive), so a multi-line
 * range gives line and endLine only. Escaping is GitHub's: '%', CR and LF
 * in the message, and also ':' and ',' in property values.
 */
#include <string.h>

#include "analyzer/out/diag_out.h"

static bool in_stdlib(const struct diag_engine *de, struct loc loc)
{
	return loc.file && strncmp(diag_loc_file(de, loc), "<stdlib>/", 9) == 0;
}

static void put_escaped(FILE *out, const char *s, bool property)
{
	for (; *s; s++) {
		if (*s == '%')
			fputs("%25", out);
		else if (*s == '\r')
			fputs("%0D", out);
		else if (*s == '\n')
			fputs("%0A", out);
		else if (property && *s == ':')
			fputs("%3A", out);
		else if (property && *s == ',')
			fputs("%2C", out);
		else
			fputc(*s, out);
	}
}

/* "file=F,line=L,col=C,endLine=EL,endColumn=EC," for a located record. */
static void put_position(FILE *out, const struct diag_engine *de, struct loc loc)
{
	unsigned line = diag_loc_line(de, loc), end_line = diag_loc_end_line(de, loc);
	unsigned col = diag_loc_col(de, loc), end_col = diag_loc_end_col(de, loc);

	fputs("file=", out);
	put_escaped(out, diag_loc_file(de, loc), true);
	fprintf(out, ",line=%u,", line);
	if (end_line == line)
		fprintf(out, "col=%u,endLine=%u,endColumn=%u,", col, end_line,
			end_col > col ? end_col - 1 : col);
	else
		fprintf(out, "endLine=%u,", end_line);
}

/* "file:line:col: " */
static void put_locus(FILE *out, const struct diag_engine *de, struct loc loc)
{
	put_escaped(out, diag_loc_file(de, loc), false);
	fprintf(out, ":%u:%u: ", diag_loc_line(de, loc), diag_loc_col(de, loc));
}

static void put_note(FILE *out, const struct diag_engine *de, const struct diag_note *n)
{
	fputs("%0Anote: ", out);
	if (n->loc.file)
		put_locus(out, de, n->loc);
	put_escaped(out, n->msg, false);
}

static void put_command(FILE *out, const struct diag_engine *de, const struct diag *d)
{
	struct loc at = d->loc;

	/* A stdlib file is never a root, so the chain ends in the user's file
	 * (import chains cannot loop: a file is loaded once). */
	while (in_stdlib(de, at))
		at = diag_loc_import_site(de, at);
	fprintf(out, "::%s ", diag_severity_str(d));
	if (at.file)
		put_position(out, de, at);
	fputs("title=", out);
	put_escaped(out, diag_name(d->id), true);
	fputs("::", out);
	if (at.file != d->loc.file)
		put_locus(out, de, d->loc);
	put_escaped(out, diag_message(d), false);
	for (const struct diag_note *n = d->notes; n; n = n->next)
		put_note(out, de, n);
	fputc('\n', out);
}

void diag_github_file(struct diag_out *w, const struct diag_engine *de)
{
	for (const struct diag *d = diag_first(de); d; d = d->next)
		put_command(w->out, de, d);
}
