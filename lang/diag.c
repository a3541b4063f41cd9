/* SPDX-License-Identifier: MIT */
/*
 * diag.c - the diagnostics engine.
 *
 * Records are created by diag_error()/diag_warn()/diag_emit(), which
 * consult the per-engine flag state (from -W options), count them and
 * append them to a queue. diag_flush() renders the records queued since
 * the last flush, GCC style:
 *
 *	In file included from main.mem:1:1:
 *	lib.mem:3:12: error: cannot add bytes and count [unit-mismatch]
 *	    3 |   memory = 80 GiB + 3
 *	      |            ^~~~~~~~~~
 *	main.mem:2:3: note: used here
 *
 * Nothing is printed from anywhere else, and nothing here depends on the
 * locale: widths come from libunistring with a fixed "UTF-8" encoding.
 */
#include "lang/diag.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>
#include <unictype.h>
#include <uniwidth.h>

#include "lang/arena.h"
#include "lang/strbuf.h"

static const struct diag_info {
	const char *name;
	enum diag_kind kind;
	bool default_on;
	const char *summary;
} diag_table[DIAG__COUNT] = {
#define DIAG(id, name, kind, on, summary) \
	[DIAG_##id] = { name, DIAG_KIND_##kind, on, summary },
#include "lang/diag.def"
#undef DIAG
};

/* Per-name -Werror state: -Wno-error=name beats a global -Werror. */
enum werror_state {
	WERROR_DEFAULT,
	WERROR_ON,
	WERROR_OFF,
};

struct diag_state {
	bool enabled;
	enum werror_state werror;
};

struct diag_engine {
	struct arena *arena;
	const struct src_table *sources;	/* loc -> file, line, col */
	FILE *out;				/* NULL: keep records, print nothing */
	bool color;
	struct diag_state state[DIAG__COUNT];
	bool werror;				/* -Werror */
	bool suppress_warnings;			/* -w */
	bool too_many;				/* the error limit was hit */
	unsigned max_errors;			/* 0: no limit */
	unsigned nerrors, nwarnings;
	struct diag *head, **tail;		/* every record, in emission order */
	struct diag **unprinted;		/* link to the first record not yet flushed */
	uint32_t last_file;			/* file of the last printed location */
	struct diag sink;			/* returned for dropped diagnostics */
};

enum { DIAG_DEFAULT_MAX_ERRORS = 20 };

/* ---- the table ---------------------------------------------------------- */

const char *diag_name(enum diag_id id)
{
	assert(id < DIAG__COUNT);
	return diag_table[id].name;
}

enum diag_kind diag_kind_of(enum diag_id id)
{
	assert(id < DIAG__COUNT);
	return diag_table[id].kind;
}

const char *diag_kind_str(enum diag_id id)
{
	return diag_kind_of(id) == DIAG_KIND_ERROR ? "error" : "warning";
}

bool diag_default_on(enum diag_id id)
{
	assert(id < DIAG__COUNT);
	return diag_table[id].default_on;
}

const char *diag_summary(enum diag_id id)
{
	assert(id < DIAG__COUNT);
	return diag_table[id].summary;
}

int diag_find_name(const char *name)
{
	for (int i = 0; i < DIAG__COUNT; i++)	/* linear: the table is small */
		if (strcmp(diag_table[i].name, name) == 0)
			return i;
	return -1;
}

void diag_list_print(FILE *out)
{
	int w = 0;

	for (int i = 0; i < DIAG__COUNT; i++) {
		int n = (int)strlen(diag_table[i].name);

		w = n > w ? n : w;
	}
	for (int i = 0; i < DIAG__COUNT; i++) {
		const struct diag_info *d = &diag_table[i];

		fprintf(out, "%-*s  %-7s  %-3s  %s\n", w, d->name,
			d->kind == DIAG_KIND_ERROR ? "error" : "warning",
			d->kind == DIAG_KIND_ERROR || d->default_on ? "on" : "off", d->summary);
	}
}

/* ---- the engine --------------------------------------------------------- */

struct diag_engine *diag_new(struct arena *a, struct src_table *sources, FILE *out)
{
	struct diag_engine *de = ARENA_NEW(a, struct diag_engine);

	de->arena = a;
	de->sources = sources;
	de->out = out;
	for (int i = 0; i < DIAG__COUNT; i++)
		de->state[i].enabled = diag_table[i].kind == DIAG_KIND_ERROR ||
				       diag_table[i].default_on;
	de->max_errors = DIAG_DEFAULT_MAX_ERRORS;
	de->tail = &de->head;
	de->unprinted = &de->head;
	de->sink.notes_tail = &de->sink.notes;
	return de;
}

void diag_set_output(struct diag_engine *de, FILE *out)
{
	de->out = out;
}

void diag_set_color(struct diag_engine *de, bool on)
{
	de->color = on;
}

void diag_suppress_warnings(struct diag_engine *de)
{
	de->suppress_warnings = true;
}

void diag_set_max_errors(struct diag_engine *de, unsigned n)
{
	de->max_errors = n;
}

bool diag_too_many(const struct diag_engine *de)
{
	return de->too_many;
}

bool diag_is_enabled(const struct diag_engine *de, enum diag_id id)
{
	if (diag_table[id].kind == DIAG_KIND_ERROR)
		return true;
	return de->state[id].enabled && !de->suppress_warnings;
}

unsigned diag_error_count(const struct diag_engine *de)
{
	return de->nerrors;
}

unsigned diag_warning_count(const struct diag_engine *de)
{
	return de->nwarnings;
}

/* ---- creating records --------------------------------------------------- */

static void queue(struct diag_engine *de, struct diag *d)
{
	*de->tail = d;
	de->tail = &d->next;
}

static struct diag *new_record(struct diag_engine *de, enum diag_id id,
			       enum diag_severity sev, struct loc loc, const char *msg)
{
	struct diag *d = ARENA_NEW(de->arena, struct diag);

	d->id = id;
	d->sev = sev;
	d->loc = loc;
	d->msg = msg;
	d->notes_tail = &d->notes;
	d->engine = de;
	return d;
}

/*
 * Whether one more error may be recorded. The first error past the limit
 * is replaced by a single too-many-errors record (Clang's behaviour); from
 * then on everything is dropped, warnings included.
 */
static bool admit(struct diag_engine *de, enum diag_severity sev)
{
	if (de->too_many)
		return false;
	if (sev != DIAG_SEV_ERROR || !de->max_errors || de->nerrors < de->max_errors)
		return true;
	de->too_many = true;
	queue(de, new_record(de, DIAG_TOO_MANY_ERRORS, DIAG_SEV_ERROR, NO_LOC,
			     "too many errors emitted, stopping now"));
	return false;
}

static bool is_promoted(const struct diag_engine *de, enum diag_id id)
{
	enum werror_state w = de->state[id].werror;

	return w == WERROR_ON || (w == WERROR_DEFAULT && de->werror);
}

struct diag *diag_vemit(struct diag_engine *de, enum diag_id id, struct loc loc,
			const char *fmt, va_list ap)
{
	enum diag_severity sev = DIAG_SEV_ERROR;
	bool promoted = false;

	assert(id < DIAG__COUNT);
	if (diag_table[id].kind == DIAG_KIND_WARNING) {
		if (!diag_is_enabled(de, id))
			return &de->sink;
		promoted = is_promoted(de, id);
		sev = promoted ? DIAG_SEV_ERROR : DIAG_SEV_WARNING;
	}
	if (!admit(de, sev))
		return &de->sink;

	struct diag *d = new_record(de, id, sev, loc, arena_vprintf(de->arena, fmt, ap));
	d->promoted = promoted;
	if (sev == DIAG_SEV_ERROR)
		de->nerrors++;
	else
		de->nwarnings++;
	queue(de, d);
	return d;
}

struct diag *diag_emit(struct diag_engine *de, enum diag_id id, struct loc loc,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	struct diag *d = diag_vemit(de, id, loc, fmt, ap);
	va_end(ap);
	return d;
}

struct diag *diag_error(struct diag_engine *de, enum diag_id id, struct loc loc,
			const char *fmt, ...)
{
	va_list ap;

	assert(diag_kind_of(id) == DIAG_KIND_ERROR);
	va_start(ap, fmt);
	struct diag *d = diag_vemit(de, id, loc, fmt, ap);
	va_end(ap);
	return d;
}

struct diag *diag_warn(struct diag_engine *de, enum diag_id id, struct loc loc,
		       const char *fmt, ...)
{
	va_list ap;

	assert(diag_kind_of(id) == DIAG_KIND_WARNING);
	va_start(ap, fmt);
	struct diag *d = diag_vemit(de, id, loc, fmt, ap);
	va_end(ap);
	return d;
}

bool diag_fail(struct diag_engine *de, enum diag_id id, struct loc loc, const char *fmt, ...)
{
	va_list ap;

	assert(diag_kind_of(id) == DIAG_KIND_ERROR);
	va_start(ap, fmt);
	diag_vemit(de, id, loc, fmt, ap);
	va_end(ap);
	return false;
}

struct diag *diag_sink(struct diag_engine *de)
{
	return &de->sink;
}

static struct diag_note *add_note(struct diag *d, struct loc loc, const char *fmt, va_list ap)
{
	struct diag_note *n = ARENA_NEW(d->engine->arena, struct diag_note);

	n->msg = arena_vprintf(d->engine->arena, fmt, ap);
	n->loc = loc;
	*d->notes_tail = n;
	d->notes_tail = &n->next;
	return n;
}

void diag_note(struct diag *d, struct loc loc, const char *fmt, ...)
{
	if (!d->engine)
		return;	/* the sink: the diagnostic was dropped */

	va_list ap;

	va_start(ap, fmt);
	add_note(d, loc, fmt, ap);
	va_end(ap);
}

void diag_note_fix(struct diag *d, struct loc loc, const char *replacement, const char *fmt, ...)
{
	if (!d->engine)
		return;

	struct diag_fix *fix = ARENA_NEW(d->engine->arena, struct diag_fix);
	va_list ap;

	fix->loc = loc;
	fix->text = arena_strdup(d->engine->arena, replacement);
	va_start(ap, fmt);
	add_note(d, loc, fmt, ap)->fix = fix;
	va_end(ap);
}

/* ---- -W flags ----------------------------------------------------------- */

enum { SUGGEST_MAX_LEN = 64 };

/*
 * Optimal-string-alignment distance: Levenshtein plus adjacent
 * transpositions, the commonest typo ("lwo-headroom"). Three rolling rows
 * of a fixed size; longer strings get SIZE_MAX (no suggestion).
 */
static size_t edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	size_t rows[3][SUGGEST_MAX_LEN + 1];

	if (na > SUGGEST_MAX_LEN || nb > SUGGEST_MAX_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= nb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *pp = rows[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = prev[j - 1] + cost;

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			cur[j] = best;
		}
	}
	return rows[na % 3][nb];
}

/* Keep @cand in *best if it is closer than anything so far and close enough. */
static void consider(const char *arg, const char *cand, const char **best, size_t *best_d)
{
	size_t d = edit_distance(arg, cand);
	size_t la = strlen(arg), lc = strlen(cand);
	size_t limit = ((la > lc ? la : lc) + 2) / 3;

	if (d <= limit && d < *best_d) {
		*best = cand;
		*best_d = d;
	}
}

/*
 * The closest flag name to @arg: a warning name, or the word "error" when
 * it would fit the position. Ties go to the earlier (alphabetical) row.
 */
static const char *suggest(const char *arg, bool error_allowed)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;

	if (error_allowed)
		consider(arg, "error", &best, &best_d);
	for (int i = 0; i < DIAG__COUNT; i++)
		if (diag_table[i].kind == DIAG_KIND_WARNING)
			consider(arg, diag_table[i].name, &best, &best_d);
	return best;
}

static bool unknown_flag(struct diag_engine *de, const char *prefix, const char *name,
			 bool error_allowed)
{
	const char *s = name[0] ? suggest(name, error_allowed) : NULL;

	if (s)
		return diag_fail(de, DIAG_BAD_FLAG, NO_LOC,
				 "unknown warning option '-W%s%s'; did you mean '-W%s%s'?",
				 prefix, name, prefix, s);
	return diag_fail(de, DIAG_BAD_FLAG, NO_LOC, "unknown warning option '-W%s%s'",
			 prefix, name);
}

bool diag_apply_flag(struct diag_engine *de, const char *arg)
{
	bool on = true, as_error = false;

	if (strncmp(arg, "no-", 3) == 0) {
		on = false;
		arg += 3;
	}
	if (strcmp(arg, "error") == 0) {	/* -Werror, -Wno-error */
		de->werror = on;
		return true;
	}
	if (strncmp(arg, "error=", 6) == 0) {
		as_error = true;
		arg += 6;
	}

	const char *prefix = on ? (as_error ? "error=" : "") : (as_error ? "no-error=" : "no-");
	int id = diag_find_name(arg);
	if (id < 0)
		return unknown_flag(de, prefix, arg, !as_error);
	if (diag_table[id].kind == DIAG_KIND_ERROR) {
		if (on)
			return true;	/* it already is an error */
		return diag_fail(de, DIAG_BAD_FLAG, NO_LOC, "'%s' is an error and cannot be %s",
				 arg, as_error ? "downgraded to a warning" : "disabled");
	}
	if (as_error) {
		de->state[id].werror = on ? WERROR_ON : WERROR_OFF;
		if (on)
			de->state[id].enabled = true;	/* -Werror=x implies -Wx, as in GCC */
	} else {
		de->state[id].enabled = on;
	}
	return true;
}

/* ---- rendering ---------------------------------------------------------- */

/* GCC's default colours (GCC_COLORS). */
enum color { C_RESET, C_LOCUS, C_ERROR, C_WARNING, C_NOTE, C_CARET };

static const char *color(const struct diag_engine *de, enum color c)
{
	static const char *const seq[] = {
		[C_RESET] = "\033[m\033[K",	  [C_LOCUS] = "\033[01m\033[K",
		[C_ERROR] = "\033[01;31m\033[K",  [C_WARNING] = "\033[01;35m\033[K",
		[C_NOTE] = "\033[01;36m\033[K",	  [C_CARET] = "\033[01;32m\033[K",
	};

	return de->color ? seq[c] : "";
}

/*
 * Snippets are at most SNIPPET_COLS code points wide, starting at most
 * SNIPPET_BEFORE code points before the caret, so that a 10 MB one-line
 * file does not turn into a 10 MB diagnostic.
 */
enum { SNIPPET_COLS = 200, SNIPPET_BEFORE = 100 };

/*
 * Message text, notes and file names are escaped when printed (the
 * records keep the raw text for the JSON reporter): a newline or an
 * escape sequence there could start a line of its own, such as a forged
 * "file:1:1: error:" in a run that exits 0, or recolour the terminal.
 * Backslashes are left alone: a message quoting a backslash and an "n"
 * reads like one that held a newline, which is ambiguous but forges
 * nothing, and keeps the many messages that quote escapes readable.
 */
static bool must_escape(uint32_t cp)
{
	if (cp < 0x20 || cp == 0x7f)
		return true;
	if (cp < 0x80)
		return false;
	/* C1 controls, format characters (bidi controls among them),
	 * surrogates, private use, unassigned, and the two Unicode line
	 * and paragraph separators. */
	return uc_is_general_category(cp, UC_CATEGORY_C) ||
	       uc_is_general_category(cp, UC_CATEGORY_Zl) ||
	       uc_is_general_category(cp, UC_CATEGORY_Zp) || uc_is_property_bidi_control(cp);
}

/*
 * How the snippet shows one code point: NULL means as itself; otherwise
 * the escape written into @buf. Invalid bytes and control characters are
 * shown as "<ff>"; invisible, format (bidi controls, U+FEFF) and
 * unassigned code points as "<U+202E>", so that the echoed line is
 * readable, cannot reorder or hide itself on screen (Trojan Source) and
 * keeps the caret aligned. Tabs are kept.
 */
static const char *escape_of(uint32_t cp, unsigned char byte, char buf[16])
{
	if (cp == SRC_BAD_CP)
		snprintf(buf, 16, "<%02x>", byte);
	else if (cp == '\t')
		return NULL;
	else if (cp < 0x20 || cp == 0x7f)
		snprintf(buf, 16, "<%02x>", (unsigned)cp);
	else if (cp >= 0x80 && (uc_width(cp, "UTF-8") < 0 || must_escape(cp)))
		snprintf(buf, 16, "<U+%04X>", (unsigned)cp);
	else
		return NULL;
	return buf;
}

void diag_escape(struct strbuf *sb, const char *s)
{
	const char *end = s + strlen(s);

	while (s < end) {
		uint32_t cp;
		const char *run = s;

		/* printable ASCII is never escaped: a run of it goes in one copy */
		while (run < end && *run >= 0x20 && *run < 0x7f)
			run++;
		if (run > s) {
			strbuf_add(sb, s, (size_t)(run - s));
			s = run;
			continue;
		}
		size_t n = src_decode(s, end, &cp);

		if (cp == SRC_BAD_CP)
			strbuf_addf(sb, "\\x%02x", (unsigned char)*s);
		else if (cp == '\n' || cp == '\t' || cp == '\r')
			strbuf_addf(sb, "\\%c", cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
		else if (cp < 0x80 && must_escape(cp))
			strbuf_addf(sb, "\\x%02x", (unsigned)cp);
		else if (must_escape(cp))
			strbuf_addf(sb, "\\u{%x}", (unsigned)cp);
		else
			strbuf_add(sb, s, n);
		s += n;
	}
}

/* Screen columns of one code point as shown; tabs are handled by callers. */
static size_t cp_width(uint32_t cp, unsigned char byte)
{
	char buf[16];
	const char *esc = escape_of(cp, byte, buf);

	if (esc)
		return strlen(esc);
	int w = uc_width(cp, "UTF-8");	/* fixed encoding: never locale-dependent */
	return w > 0 ? (size_t)w : 0;
}

/* Echo source bytes [p, end) with escapes applied. */
static void put_text(struct strbuf *sb, const char *p, const char *end)
{
	while (p < end) {
		uint32_t cp;
		size_t n = src_decode(p, end, &cp);
		char buf[16];
		const char *esc = escape_of(cp, (unsigned char)*p, buf);

		if (esc)
			strbuf_addstr(sb, esc);
		else
			strbuf_add(sb, p, n);
		p += n;
	}
}

/*
 * Fill the columns taken by [p, end) with @fill: a tab stays a tab (the
 * terminal expands it exactly as in the echoed line above), anything else
 * adds as many @fill bytes as it is wide on screen.
 */
static void put_cols(struct strbuf *sb, const char *p, const char *end, int fill)
{
	while (p < end) {
		uint32_t cp;
		size_t n = src_decode(p, end, &cp);

		if (cp == '\t')
			strbuf_addch(sb, '\t');
		else
			strbuf_addchars(sb, fill, cp_width(cp, (unsigned char)*p));
		p += n;
	}
}

/* Advance from @p over up to @n code points, stopping at @end. */
static const char *skip_cps(const char *p, const char *end, size_t n)
{
	uint32_t cp;

	for (; n && p < end; n--)
		p += src_decode(p, end, &cp);
	return p;
}

/* The part [*ws, *we) of a line of @n bytes that is shown around @caret. */
static void clip_window(const char *line, size_t n, size_t caret, size_t *ws, size_t *we)
{
	const char *end = line + n;
	uint32_t cp;
	size_t before = 0;

	*ws = 0;
	*we = n;
	if (skip_cps(line, end, SNIPPET_COLS) == end)
		return;	/* short line: show it all */
	for (const char *p = line; p < line + caret; before++)
		p += src_decode(p, end, &cp);
	const char *s = skip_cps(line, end, before > SNIPPET_BEFORE ? before - SNIPPET_BEFORE : 0);
	*ws = (size_t)(s - line);
	*we = (size_t)(skip_cps(s, end, SNIPPET_COLS) - line);
}

static int gutter_width(uint32_t line)
{
	int w = 1;

	while (line >= 10) {
		line /= 10;
		w++;
	}
	return w < 4 ? 4 : w;
}

/*
 * The caret line: "^" under the first code point of the range, "~" under
 * the rest of it up to the end of the first line (clipped to the window).
 * An empty range is a bare "^".
 */
static void put_caret(struct diag_engine *de, struct strbuf *sb, const char *line,
		      size_t caret, size_t uend, size_t we)
{
	const char *end = line + we;

	strbuf_addstr(sb, color(de, C_CARET));
	strbuf_addch(sb, '^');
	if (uend > caret && caret < we) {
		uint32_t cp;
		size_t n = src_decode(line + caret, end, &cp);

		if (cp != '\t' && cp_width(cp, (unsigned char)line[caret]) > 1)
			strbuf_addchars(sb, '~', cp_width(cp, (unsigned char)line[caret]) - 1);
		put_cols(sb, line + caret + n, line + (uend < we ? uend : we), '~');
	}
	strbuf_addstr(sb, color(de, C_RESET));
}

/*
 * The source excerpt for @loc:
 *
 *	    3 |   memory = 80 GiB + 3
 *	      |            ^~~~~~~~~~
 *
 * The gutter is at least 4 digits wide and grows with the line number.
 * Lines longer than the window are cut and marked with "...".
 */
static void put_snippet(struct diag_engine *de, struct strbuf *sb, const struct src_file *f,
			struct loc loc)
{
	uint32_t lineno = src_line_of(f, loc.start);
	size_t n, ws, we;
	const char *line = src_line_text(f, lineno, &n);
	size_t bol = (size_t)(line - f->text);
	size_t caret = loc.start - bol < n ? loc.start - bol : n;
	size_t uend = loc.end > loc.start ? (loc.end - bol < n ? loc.end - bol : n) : caret;
	int gw = gutter_width(lineno);

	clip_window(line, n, caret, &ws, &we);
	strbuf_addf(sb, " %*u |", gw, (unsigned)lineno);
	if (n) {
		strbuf_addstr(sb, ws ? " ..." : " ");
		put_text(sb, line + ws, line + we);
		strbuf_addstr(sb, we < n ? "..." : "");
	}
	strbuf_addf(sb, "\n %*s | %s", gw, "", ws ? "   " : "");
	put_cols(sb, line + ws, line + caret, ' ');
	put_caret(de, sb, line, caret, uend, we);
	strbuf_addch(sb, '\n');
}

/* "file:line:col: " (bold), or "memc: " when there is no location. */
static void put_locus(struct diag_engine *de, struct strbuf *sb, struct loc loc)
{
	strbuf_addstr(sb, color(de, C_LOCUS));
	if (loc.file == 0)
		strbuf_addstr(sb, "memc:");
	else {
		diag_escape(sb, diag_loc_file(de, loc));
		strbuf_addf(sb, ":%u:%u:", diag_loc_line(de, loc), diag_loc_col(de, loc));
	}
	strbuf_addf(sb, "%s ", color(de, C_RESET));
}

/*
 * The include chain of a file, innermost first, as GCC prints it:
 *
 *	In file included from b.mem:1:1,
 *	                 from a.mem:3:1:
 */
static void put_include_chain(struct diag_engine *de, struct strbuf *sb,
			      const struct src_file *f)
{
	struct loc site = f->included_from;
	const char *lead = "In file included from";

	/* The chain cannot loop (a file is registered once), but cap it anyway. */
	for (int depth = 0; site.file != 0 && depth < 256; depth++) {
		strbuf_addf(sb, "%s ", lead);
		diag_escape(sb, diag_loc_file(de, site));
		strbuf_addf(sb, ":%u:%u", diag_loc_line(de, site), diag_loc_col(de, site));
		site = src_get(de->sources, site.file)->included_from;
		strbuf_addstr(sb, site.file ? ",\n" : ":\n");
		lead = "                 from";
	}
}

static void put_note(struct diag_engine *de, struct strbuf *sb, const struct diag *d,
		     const struct diag_note *n)
{
	put_locus(de, sb, n->loc);
	strbuf_addf(sb, "%snote:%s ", color(de, C_NOTE), color(de, C_RESET));
	diag_escape(sb, n->msg);
	strbuf_addch(sb, '\n');
	if (n->loc.file == 0)
		return;
	de->last_file = n->loc.file;
	/* A note on the primary line needs no second copy of that line. */
	bool same_line = n->loc.file == d->loc.file &&
			 diag_loc_line(de, n->loc) == diag_loc_line(de, d->loc);
	if (!same_line)
		put_snippet(de, sb, src_get(de->sources, n->loc.file), n->loc);
}

/* The bracketed option: "[name]", "[-Wname]" or "[-Werror=name]". */
static void put_option(struct strbuf *sb, const struct diag *d)
{
	const char *name = diag_table[d->id].name;

	if (d->promoted)
		strbuf_addf(sb, " [-Werror=%s]", name);
	else if (d->sev == DIAG_SEV_WARNING)
		strbuf_addf(sb, " [-W%s]", name);
	else
		strbuf_addf(sb, " [%s]", name);
}

static void render(struct diag_engine *de, struct strbuf *sb, const struct diag *d)
{
	const struct src_file *f = d->loc.file ? src_get(de->sources, d->loc.file) : NULL;
	bool err = d->sev == DIAG_SEV_ERROR;

	if (f && f->id != de->last_file && f->included_from.file != 0)
		put_include_chain(de, sb, f);
	put_locus(de, sb, d->loc);
	strbuf_addf(sb, "%s%s:%s ", color(de, err ? C_ERROR : C_WARNING),
		    diag_severity_str(d), color(de, C_RESET));
	diag_escape(sb, d->msg);
	put_option(sb, d);
	strbuf_addch(sb, '\n');
	if (f) {
		de->last_file = f->id;
		put_snippet(de, sb, f, d->loc);
	}
	for (const struct diag_note *n = d->notes; n; n = n->next)
		put_note(de, sb, d, n);
}

void diag_flush(struct diag_engine *de)
{
	struct strbuf sb;

	strbuf_init(&sb);
	for (struct diag *d = *de->unprinted; d; d = d->next) {
		if (!de->out)
			continue;
		strbuf_setlen(&sb, 0);
		render(de, &sb, d);
		fwrite(sb.buf, 1, sb.len, de->out);
	}
	de->unprinted = de->tail;
	strbuf_release(&sb);
	if (de->out)
		fflush(de->out);
}

void diag_print_tally(const struct diag_engine *de, FILE *out)
{
	unsigned e = de->nerrors, w = de->nwarnings;

	if (!e && !w)
		return;
	fputs("memc: ", out);
	if (e)
		fprintf(out, "%u error%s", e, e == 1 ? "" : "s");
	if (e && w)
		fputs(", ", out);
	if (w)
		fprintf(out, "%u warning%s", w, w == 1 ? "" : "s");
	fputc('\n', out);
}

/* ---- reading records back ----------------------------------------------- */

const struct diag *diag_first(const struct diag_engine *de)
{
	return de->head;
}

const char *diag_severity_str(const struct diag *d)
{
	return d->sev == DIAG_SEV_ERROR ? "error" : "warning";
}

const char *diag_message(const struct diag *d)
{
	return d->msg;
}

const char *diag_loc_file(const struct diag_engine *de, struct loc loc)
{
	return loc.file ? src_get(de->sources, loc.file)->display_name : NULL;
}

unsigned diag_loc_line(const struct diag_engine *de, struct loc loc)
{
	return loc.file ? src_line_of(src_get(de->sources, loc.file), loc.start) : 0;
}

unsigned diag_loc_col(const struct diag_engine *de, struct loc loc)
{
	return loc.file ? src_col_of(src_get(de->sources, loc.file), loc.start) : 0;
}

unsigned diag_loc_end_line(const struct diag_engine *de, struct loc loc)
{
	return diag_loc_line(de, loc.end > loc.start ? (struct loc){ loc.file, loc.end, loc.end } : loc);
}

unsigned diag_loc_end_col(const struct diag_engine *de, struct loc loc)
{
	return diag_loc_col(de, loc.end > loc.start ? (struct loc){ loc.file, loc.end, loc.end } : loc);
}

struct loc diag_loc_import_site(const struct diag_engine *de, struct loc loc)
{
	return loc.file ? src_get(de->sources, loc.file)->included_from : NO_LOC;
}
