/* SPDX-License-Identifier: MIT */
/*
 * fmt.c - the canonical layout of a .mem file (docs/fmt.md).
 *
 * The engine works on lines of tokens and only ever rewrites the blanks
 * between tokens: every line end outside a comment stays where it is
 * (they separate items, so moving one could change the program), every
 * token is copied byte for byte. Hence a formatted file has the same
 * number of lines, apart from collapsed and trailing blank lines, and the
 * line numbers of diagnostics into it do not move.
 *
 * Three passes: classify each line (a record field `name = ...`, a tensor
 * `kind name : [...]` or anything else) and size the alignment of runs of
 * alike lines; lay out each line's code (indentation from the brackets
 * open at its start, one space or none between tokens); then place
 * trailing comments, which depend on the final width of the code.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/fmt/fmt_impl.h"
#include "lang/arena.h"
#include "lang/strbuf.h"

/* A record key or tensor name longer than this is not padded to, so one
 * long name (cublas_workspace, sequence_parallel) does not push a whole
 * block to the right; it keeps one space before its `=` or `:`. */
enum { FMT_ALIGN_MAX = 14, FMT_INDENT = 2, FMT_CONTINUE = 4 };

#define NO_TOK ((size_t)-1)

enum line_kind { LK_OTHER, LK_KEY, LK_TENSOR };

struct fmt_line {
	size_t first, n;	/* tokens [first, first + n), line end excluded */
	size_t depth;		/* brackets open at its start */
	enum line_kind kind;
	uint32_t pad1, pad2;	/* key: name column; tensor: kind and name columns */
	size_t code_off, code_len;	/* its code in layout.code */
	uint32_t code_w;
	size_t comment;		/* trailing comment token, or NO_TOK */
	uint32_t comment_col;
};

/* An open bracket: where its closing line goes (base) and where the
 * lines inside it start (content). */
struct open {
	char ch;
	uint32_t base, content;
};

struct layout {
	const char *text;
	struct fmt_toks toks;
	struct fmt_line *lines;
	size_t nlines, lines_cap;
	struct open *stack;
	size_t depth, stack_cap;
	struct strbuf code;
	bool cont;		/* the last code line ended in an operator */
};

static const char *const keywords[] = {
	"import", "let", "gpu", "precision", "layer", "model", "optimizer", "train", "param",
	"saves", "temp", "state", "input", "repeat", "if", "else", "warn",
};
static const char *const tensor_kinds[] = { "param", "saves", "temp", "state", "input" };

static bool tok_is(const struct layout *l, const struct fmt_tok *t, const char *s)
{
	size_t n = strlen(s);

	return t->end - t->start == n && memcmp(l->text + t->start, s, n) == 0;
}

static bool tok_in(const struct layout *l, const struct fmt_tok *t, const char *const *set,
		   size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (tok_is(l, t, set[i]))
			return true;
	return false;
}

/* true and false are values, not keywords, for spacing: `true - x`. */
static bool is_keyword(const struct layout *l, const struct fmt_tok *t)
{
	return t->kind == FT_WORD && tok_in(l, t, keywords, sizeof keywords / sizeof keywords[0]);
}

static bool is_punct(const struct layout *l, const struct fmt_tok *t, const char *s)
{
	return t->kind == FT_PUNCT && tok_is(l, t, s);
}

static char opener(const struct layout *l, const struct fmt_tok *t)
{
	if (t->kind != FT_PUNCT || t->end - t->start != 1)
		return 0;
	char c = l->text[t->start];

	return c == '{' || c == '(' || c == '[' ? c : 0;
}

static char closer(const struct layout *l, const struct fmt_tok *t)
{
	if (t->kind != FT_PUNCT || t->end - t->start != 1)
		return 0;
	char c = l->text[t->start];

	return c == '}' || c == ')' || c == ']' ? c : 0;
}

static bool is_comment(const struct fmt_tok *t)
{
	return t->kind == FT_LCOMMENT || t->kind == FT_BCOMMENT;
}

static struct fmt_tok *line_tok(const struct layout *l, const struct fmt_line *ln, size_t k)
{
	return &l->toks.v[ln->first + k];
}

static void split_lines(struct layout *l)
{
	size_t first = 0;

	for (size_t i = 0; i <= l->toks.n; i++) {
		if (i < l->toks.n && l->toks.v[i].kind != FT_EOL)
			continue;
		if (l->nlines == l->lines_cap) {
			l->lines_cap = l->lines_cap ? l->lines_cap * 2 : 128;
			l->lines = xrealloc(l->lines, arena_array_size(sizeof *l->lines, l->lines_cap));
		}
		l->lines[l->nlines++] = (struct fmt_line){ .first = first, .n = i - first,
							    .comment = NO_TOK };
		first = i + 1;
	}
}

static enum line_kind kind_of(struct layout *l, const struct fmt_line *ln)
{
	const struct fmt_tok *t = line_tok(l, ln, 0);

	if (ln->n >= 3 && t[0].kind == FT_WORD && t[1].kind == FT_WORD && is_punct(l, &t[2], ":") &&
	    tok_in(l, &t[0], tensor_kinds, sizeof tensor_kinds / sizeof tensor_kinds[0]))
		return LK_TENSOR;
	/* Directly in a block, `name =` is a record field even when the name
	 * is a keyword (`model = llama2_7b` in a train block). */
	if (ln->n >= 2 && t[0].kind == FT_WORD && is_punct(l, &t[1], "="))
		return LK_KEY;
	return LK_OTHER;
}

/* A line is aligned with its neighbours only if it sits directly in a
 * block and does not close it (`x = 1 }`). A value may run onto the next
 * lines; those are inside its brackets, deeper than the run. */
static void classify(struct layout *l)
{
	char *st = NULL;
	size_t d = 0, cap = 0;

	for (size_t i = 0; i < l->nlines; i++) {
		struct fmt_line *ln = &l->lines[i];
		size_t d0 = d, low = d;
		bool in_block = d > 0 && st[d - 1] == '{';

		ln->depth = d;
		for (size_t k = 0; k < ln->n; k++) {
			const struct fmt_tok *t = line_tok(l, ln, k);

			if (opener(l, t)) {
				if (d == cap)
					st = xrealloc(st, cap = cap ? cap * 2 : 64);
				st[d++] = opener(l, t);
			} else if (closer(l, t) && d > 0) {
				d--;
				low = d < low ? d : low;
			}
		}
		if (in_block && low == d0)
			ln->kind = kind_of(l, ln);
	}
	free(st);
}

static uint32_t tok_width(const struct layout *l, const struct fmt_line *ln, size_t k)
{
	return l->toks.v[ln->first + k].width;
}

static uint32_t widest(const struct layout *l, size_t from, size_t to, size_t k,
		       enum line_kind kind, uint32_t max)
{
	uint32_t w = 0;

	for (size_t i = from; i < to; i++) {
		if (l->lines[i].kind != kind)
			continue;
		uint32_t tw = tok_width(l, &l->lines[i], k);

		if (tw <= max && tw > w)
			w = tw;
	}
	return w;
}

static bool comment_only(const struct layout *l, const struct fmt_line *ln)
{
	for (size_t k = 0; k < ln->n; k++)
		if (!is_comment(&l->toks.v[ln->first + k]))
			return false;
	return ln->n > 0;
}

/* The end of the run that starts at line @i: lines of its kind at its
 * depth, with nothing between them but comment lines and the rest of a
 * value that spans lines (a blank line or any other line ends it). */
static size_t run_end(const struct layout *l, size_t i)
{
	const struct fmt_line *a = &l->lines[i];
	size_t end = i + 1;

	for (size_t j = i + 1; j < l->nlines; j++) {
		const struct fmt_line *b = &l->lines[j];

		if (b->kind == a->kind && b->depth == a->depth)
			end = j + 1;
		else if (b->n == 0 || (b->depth <= a->depth && !comment_only(l, b)))
			break;
	}
	return end;
}

/* Runs of alike lines at one depth share their columns. */
static void align_runs(struct layout *l)
{
	size_t i = 0;

	while (i < l->nlines) {
		enum line_kind kind = l->lines[i].kind;

		if (kind == LK_OTHER) {
			i++;
			continue;
		}
		size_t j = run_end(l, i);
		uint32_t p1 = widest(l, i, j, 0, kind, kind == LK_KEY ? FMT_ALIGN_MAX : UINT32_MAX);
		uint32_t p2 = kind == LK_TENSOR ? widest(l, i, j, 1, kind, FMT_ALIGN_MAX) : 0;

		for (; i < j; i++) {
			l->lines[i].pad1 = p1;
			l->lines[i].pad2 = p2;
		}
	}
}

/* A `-` is unary where an operand cannot end: at the start, after an
 * operator or opening bracket, after a keyword (`if -x`). */
static bool is_unary(const struct layout *l, const struct fmt_tok *prev, const struct fmt_tok *t)
{
	if (is_punct(l, t, "!"))
		return true;
	if (!is_punct(l, t, "-"))
		return false;
	if (!prev)
		return true;
	if (prev->kind == FT_PUNCT)
		return !closer(l, prev) && !is_punct(l, prev, "%");
	return is_keyword(l, prev);
}

/* What a `(` right after it calls: a name, or a call's or a list's end. */
static bool is_callee(const struct layout *l, const struct fmt_tok *t)
{
	if (t->kind == FT_WORD)
		return !is_keyword(l, t);
	return is_punct(l, t, ")") || is_punct(l, t, "]");
}

/* A `/` written without blanks on either side (`3.35 TB/s`, the way
 * units are written) is kept that way. The tokens of a line are
 * neighbours in l->toks, and never line ends or comments here. */
static bool tight_slash(const struct layout *l, const struct fmt_tok *t)
{
	const struct fmt_tok *v = l->toks.v;

	if (!is_punct(l, t, "/") || t == v || t + 1 == v + l->toks.n)
		return false;
	return t[-1].end == t->start && t[1].start == t->end && t[-1].kind != FT_EOL &&
	       t[1].kind != FT_EOL && !is_comment(&t[-1]) && !is_comment(&t[1]);
}

/* Blanks between @prev and @t on one line: none inside brackets, before
 * `,` `;`, around `.` and a tight `/`, after a unary operator, between a
 * callee and its `(`, between a number and its `%`, before the `:` of a
 * parameter; one everywhere else. */
static uint32_t gap_before(const struct layout *l, const struct fmt_tok *prev,
			   const struct fmt_tok *t, bool prev_unary)
{
	if (is_comment(t) || is_comment(prev))
		return 1;
	if (is_punct(l, t, ",") || is_punct(l, t, ";") || is_punct(l, t, ")") || is_punct(l, t, "]"))
		return 0;
	if (is_punct(l, prev, "(") || is_punct(l, prev, "[") || is_punct(l, prev, ".") || prev_unary)
		return 0;
	if (is_punct(l, t, ".") || tight_slash(l, t) || tight_slash(l, prev))
		return 0;
	if (is_punct(l, t, "(") && is_callee(l, prev))
		return 0;
	if (is_punct(l, t, "%") && prev->kind == FT_NUMBER)
		return 0;
	if (is_punct(l, t, "}") && is_punct(l, prev, "{"))
		return 0;
	if (is_punct(l, t, ":") && l->depth > 0 && l->stack[l->depth - 1].ch == '(')
		return 0;
	return 1;
}

/* The padding that aligns a run's `=` or tensor names and `:`. */
static uint32_t align_gap(const struct layout *l, const struct fmt_line *ln, size_t k)
{
	uint32_t w = tok_width(l, ln, k - 1);
	uint32_t pad = ln->kind == LK_KEY || k == 1 ? ln->pad1 : ln->pad2;

	return pad > w ? pad - w + 1 : 1;
}

static void push(struct layout *l, char ch, uint32_t base, uint32_t content)
{
	if (l->depth == l->stack_cap) {
		l->stack_cap = l->stack_cap ? l->stack_cap * 2 : 64;
		l->stack = xrealloc(l->stack, arena_array_size(sizeof *l->stack, l->stack_cap));
	}
	l->stack[l->depth++] = (struct open){ ch, base, content };
}

/* Braces nest by FMT_INDENT from the enclosing brace, whatever line they
 * open on; `(` and `[` continue at the column after them (or one level
 * in when nothing follows them on their line). */
static void open_bracket(struct layout *l, char ch, uint32_t indent, uint32_t col, bool hanging)
{
	uint32_t base = 0;

	if (ch == '{') {
		for (size_t i = l->depth; i-- > 0;)
			if (l->stack[i].ch == '{') {
				base = l->stack[i].content;
				break;
			}
		push(l, ch, base, base + FMT_INDENT);
		return;
	}
	push(l, ch, indent, hanging ? indent + FMT_INDENT : col);
}

static uint32_t line_indent(const struct layout *l, const struct fmt_tok *first)
{
	const struct open *top = l->depth ? &l->stack[l->depth - 1] : NULL;

	if (!top)
		return l->cont ? FMT_CONTINUE : 0;
	if (closer(l, first))
		return top->base;
	if (top->ch == '{' && l->cont)
		return top->content + FMT_CONTINUE;
	return top->content;
}

/* Comment text without trailing blanks, line ends inside a block comment
 * made LF; its other bytes are the author's. */
static void add_comment(struct strbuf *sb, const char *s, size_t n)
{
	size_t keep = sb->len;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' || s[i] == '\n') {
			strbuf_setlen(sb, keep);
			strbuf_addch(sb, '\n');
			i += s[i] == '\r' && i + 1 < n && s[i + 1] == '\n';
		} else {
			strbuf_addch(sb, s[i]);
		}
		if (s[i] != ' ' && s[i] != '\t')
			keep = sb->len;
	}
	strbuf_setlen(sb, keep);
}

static void add_token(struct layout *l, const struct fmt_tok *t)
{
	if (is_comment(t))
		add_comment(&l->code, l->text + t->start, t->end - t->start);
	else
		strbuf_add(&l->code, l->text + t->start, t->end - t->start);
}

/* An operator at the end of a line continues the item on the next one
 * (language.md §1); `,` and `;` end it. */
static bool continues(const struct layout *l, const struct fmt_tok *t)
{
	static const char *const ops[] = {
		"=", ":", "+", "-", "*", "/", "&&", "||", "==", "!=", "<", "<=", ">", ">=", "|",
	};

	return t && t->kind == FT_PUNCT && tok_in(l, t, ops, sizeof ops / sizeof ops[0]);
}

static void track_bracket(struct layout *l, const struct fmt_line *ln, size_t k,
			  uint32_t indent, uint32_t col)
{
	const struct fmt_tok *t = line_tok(l, ln, k);
	char ch = opener(l, t);

	if (ch) {
		bool hanging = k + 1 >= ln->n || is_comment(line_tok(l, ln, k + 1));

		open_bracket(l, ch, indent, col, hanging);
	} else if (closer(l, t) && l->depth > 0) {
		l->depth--;
	}
}

static void emit_line(struct layout *l, struct fmt_line *ln)
{
	const struct fmt_tok *prev = NULL, *last_code = NULL;
	bool prev_unary = false;
	uint32_t indent = line_indent(l, line_tok(l, ln, 0)), col = indent;

	ln->code_off = l->code.len;
	strbuf_addchars(&l->code, ' ', indent);
	for (size_t k = 0; k < ln->n; k++) {
		const struct fmt_tok *t = line_tok(l, ln, k);

		if (k > 0 && k == ln->n - 1 && is_comment(t) && !t->multiline) {
			ln->comment = ln->first + k;
			break;
		}
		if (prev) {
			uint32_t gap = ln->kind != LK_OTHER && (k == 1 || (k == 2 && ln->kind == LK_TENSOR))
				? align_gap(l, ln, k) : gap_before(l, prev, t, prev_unary);

			strbuf_addchars(&l->code, ' ', gap);
			col += gap;
		}
		add_token(l, t);
		col = t->multiline ? t->width : col + t->width;
		track_bracket(l, ln, k, indent, col);
		if (!is_comment(t)) {
			prev_unary = is_unary(l, last_code, t);
			last_code = t;
		}
		prev = t;
	}
	ln->code_len = l->code.len - ln->code_off;
	ln->code_w = col;
	if (last_code)
		l->cont = continues(l, last_code) &&
			(l->depth == 0 || l->stack[l->depth - 1].ch == '{');
}

/* Trailing comments keep their column while the code leaves room; lines
 * next to each other whose comments shared a column move right together,
 * so an aligned column stays aligned. Formatting twice changes nothing:
 * the column a group gets is one its code already leaves room for. */
static void place_comments(struct layout *l)
{
	size_t i = 0;

	while (i < l->nlines) {
		if (l->lines[i].comment == NO_TOK) {
			i++;
			continue;
		}
		uint32_t col = l->toks.v[l->lines[i].comment].col, want = col;
		size_t j = i;

		for (; j < l->nlines && l->lines[j].comment != NO_TOK &&
		       l->toks.v[l->lines[j].comment].col == col; j++)
			if (l->lines[j].code_w + 1 > want)
				want = l->lines[j].code_w + 1;
		for (; i < j; i++)
			l->lines[i].comment_col = want;
	}
}

/* Blank lines: none at the start or the end, never two in a row. */
static void assemble(struct layout *l, struct strbuf *out)
{
	bool blank = false;

	for (size_t i = 0; i < l->nlines; i++) {
		const struct fmt_line *ln = &l->lines[i];

		if (ln->n == 0) {
			blank = out->len > 0;
			continue;
		}
		if (blank)
			strbuf_addch(out, '\n');
		blank = false;
		strbuf_add(out, l->code.buf + ln->code_off, ln->code_len);
		if (ln->comment != NO_TOK) {
			const struct fmt_tok *c = &l->toks.v[ln->comment];

			strbuf_addchars(out, ' ', ln->comment_col - ln->code_w);
			add_comment(out, l->text + c->start, c->end - c->start);
		}
		strbuf_addch(out, '\n');
	}
}

char *fmt_layout(const char *text, size_t len, size_t *out_len)
{
	struct layout l = { .text = text };
	struct strbuf out;

	strbuf_init(&l.code);
	strbuf_init(&out);
	fmt_scan(text, len, &l.toks);
	split_lines(&l);
	classify(&l);
	align_runs(&l);
	for (size_t i = 0; i < l.nlines; i++)
		if (l.lines[i].n > 0)
			emit_line(&l, &l.lines[i]);
	place_comments(&l);
	assemble(&l, &out);
	free(l.toks.v);
	free(l.lines);
	free(l.stack);
	strbuf_release(&l.code);
	return strbuf_detach(&out, out_len);
}
