/* SPDX-License-Identifier: MIT */
/*
 * test_diag.c - the diagnostics engine: exact output format (carets under
 * tabs, CJK and emoji, gutters, notes, include chains, long lines), -W flag
 * parsing with did-you-mean, the sink, -Werror, the error limit and the
 * tally. Output goes to an open_memstream buffer, never to stderr.
 *
 * Warning behaviour is tested on whichever WARNING rows diag.def has; the
 * rows belong to other modules, so no particular name is assumed.
 */
#include "lang/strbuf.h"
#include "lang_fixture.h"

/* The first WARNING row that is on (or off) by default, or -1. */
static int find_warning(bool default_on)
{
	for (int i = 0; i < DIAG__COUNT; i++)
		if (diag_kind_of(i) == DIAG_KIND_WARNING && diag_default_on(i) == default_on)
			return i;
	return -1;
}

static void error_with_range(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "a.mem", "gpu X {\n  memory = 80 GiB + 3\n}\n");

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "80 GiB + 3"), "cannot add %s and %s", "bytes",
		   "count");
	assert_string_equal(fx_output(fx),
			    "a.mem:2:12: error: cannot add bytes and count [syntax]\n"
			    "    2 |   memory = 80 GiB + 3\n"
			    "      |            ^~~~~~~~~~\n");
}

static void gutter_grows_with_line_number(void **state)
{
	struct fixture *fx = *state;
	struct strbuf sb;

	strbuf_init(&sb);
	strbuf_addchars(&sb, '\n', 12344);
	strbuf_addstr(&sb, "oops\n");
	struct src_file *f = fx_add(fx, "long.mem", sb.buf);
	strbuf_release(&sb);

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "oops"), "bad");
	assert_string_equal(fx_output(fx),
			    "long.mem:12345:1: error: bad [syntax]\n"
			    " 12345 | oops\n"
			    "       | ^~~~\n");
}

/* Tabs are copied, CJK and emoji take two columns each. */
static void caret_under_tabs_cjk_emoji(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "u.mem", "\tname = \"日本🙂\" + y\n");

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "y"), "here");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "日本"), "wide");
	assert_string_equal(fx_output(fx),
			    "u.mem:1:17: error: here [syntax]\n"
			    "    1 | \tname = \"日本🙂\" + y\n"
			    "      | \t                  ^\n"
			    "u.mem:1:10: error: wide [syntax]\n"
			    "    1 | \tname = \"日本🙂\" + y\n"
			    "      | \t        ^~~~\n");
}

static void empty_and_multiline_ranges(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "r.mem", "abc def\nghi\n");
	struct loc empty = { f->id, 4, 4 };
	struct loc two_lines = { f->id, 4, 11 };

	diag_error(fx->de, DIAG_SYNTAX, empty, "empty");
	diag_error(fx->de, DIAG_SYNTAX, two_lines, "spans");
	assert_string_equal(fx_output(fx),
			    "r.mem:1:5: error: empty [syntax]\n"
			    "    1 | abc def\n"
			    "      |     ^\n"
			    "r.mem:1:5: error: spans [syntax]\n"
			    "    1 | abc def\n"
			    "      |     ^~~\n");
}

/* A caret at the end of the file points just past the last line's text. */
static void caret_at_end_of_file(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "eof.mem", "gpu X {");
	struct loc eof = { f->id, f->len, f->len };

	diag_error(fx->de, DIAG_SYNTAX, eof, "unexpected end of file");
	assert_string_equal(fx_output(fx),
			    "eof.mem:1:8: error: unexpected end of file [syntax]\n"
			    "    1 | gpu X {\n"
			    "      |        ^\n");
}

static void long_line_is_clipped(void **state)
{
	struct fixture *fx = *state;
	struct strbuf sb;

	strbuf_init(&sb);
	strbuf_addchars(&sb, 'a', 100000);
	strbuf_addstr(&sb, "XYZ");
	strbuf_addchars(&sb, 'b', 100000);
	struct src_file *f = fx_add(fx, "wide.mem", sb.buf);
	strbuf_release(&sb);

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "XYZ"), "here");
	const char *out = fx_output(fx);
	const char *src = strstr(out, "\n    1 | ...");
	assert_non_null(src);
	const char *caret_line = strchr(src + 1, '\n') + 1;
	assert_true(strlen(out) < 600);
	assert_true(caret_line - src < 300);
	/* The caret sits under the X. */
	const char *x = strchr(src, 'X');
	const char *caret = strchr(caret_line, '^');
	assert_int_equal(x - (src + 1), caret - caret_line);
	assert_string_equal(caret, "^~~\n");
	assert_non_null(strstr(src, "b...\n"));
}

static void escapes_keep_the_line_readable(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "bidi.mem", "s = \"\xe2\x80\xae" "abc\" + \x1b" "z\n");

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "z"), "here");
	assert_string_equal(fx_output(fx),
			    "bidi.mem:1:15: error: here [syntax]\n"
			    "    1 | s = \"<U+202E>abc\" + <1b>z\n"
			    "      |                         ^\n");
}

static void notes_and_no_location(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "n.mem", "a = 1\nb = a + x\n");
	struct diag *d = diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "x"), "unknown name '%s'", "x");

	diag_note(d, fx_at(f, "a +"), "on the same line: no second snippet");
	diag_note(d, fx_at(f, "a = 1"), "declared here");
	diag_note(d, NO_LOC, "see docs/diagnostics.md#%s", "syntax");
	diag_error(fx->de, DIAG_BAD_FLAG, NO_LOC, "nowhere");
	assert_string_equal(fx_output(fx),
			    "n.mem:2:9: error: unknown name 'x' [syntax]\n"
			    "    2 | b = a + x\n"
			    "      |         ^\n"
			    "n.mem:2:5: note: on the same line: no second snippet\n"
			    "n.mem:1:1: note: declared here\n"
			    "    1 | a = 1\n"
			    "      | ^~~~~\n"
			    "memc: note: see docs/diagnostics.md#syntax\n"
			    "memc: error: nowhere [bad-flag]\n");
}

/* c.mem is included from b.mem, which is included from a.mem. */
static void include_chain_before_first_diagnostic(void **state)
{
	struct fixture *fx = *state;
	struct src_file *a = fx_add(fx, "a.mem", "x = 1\nimport \"b.mem\"\n");
	struct src_file *b = fx_add(fx, "b.mem", "import \"c.mem\"\n");
	struct src_file *c = fx_add(fx, "c.mem", "bad bad\n");

	b->included_from = fx_at(a, "import");
	c->included_from = fx_at(b, "import");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(c, "bad"), "one");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(c, "bad"), "two");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(a, "x"), "three");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(b, "import"), "four");
	assert_string_equal(fx_output(fx),
			    "In file included from b.mem:1:1,\n"
			    "                 from a.mem:2:1:\n"
			    "c.mem:1:1: error: one [syntax]\n"
			    "    1 | bad bad\n"
			    "      | ^~~\n"
			    "c.mem:1:1: error: two [syntax]\n"
			    "    1 | bad bad\n"
			    "      | ^~~\n"
			    "a.mem:1:1: error: three [syntax]\n"
			    "    1 | x = 1\n"
			    "      | ^\n"
			    "In file included from a.mem:2:1:\n"
			    "b.mem:1:1: error: four [syntax]\n"
			    "    1 | import \"c.mem\"\n"
			    "      | ^~~~~~\n");
}

static void flag_parsing(void **state)
{
	struct fixture *fx = *state;

	assert_true(diag_apply_flag(fx->de, "error"));
	assert_true(diag_apply_flag(fx->de, "no-error"));
	assert_true(diag_apply_flag(fx->de, "syntax"));		/* already an error */
	assert_true(diag_apply_flag(fx->de, "error=syntax"));
	assert_int_equal(diag_error_count(fx->de), 0);

	assert_false(diag_apply_flag(fx->de, "eror"));
	assert_false(diag_apply_flag(fx->de, "no-erorr"));
	assert_false(diag_apply_flag(fx->de, "frobnicate"));
	assert_false(diag_apply_flag(fx->de, "no-syntax"));
	assert_false(diag_apply_flag(fx->de, "no-error=syntax"));
	assert_false(diag_apply_flag(fx->de, ""));
	assert_int_equal(diag_error_count(fx->de), 6);
	assert_string_equal(fx_output(fx),
			    "memc: error: unknown warning option '-Weror'; did you mean '-Werror'? [bad-flag]\n"
			    "memc: error: unknown warning option '-Wno-erorr'; did you mean '-Wno-error'? [bad-flag]\n"
			    "memc: error: unknown warning option '-Wfrobnicate' [bad-flag]\n"
			    "memc: error: 'syntax' is an error and cannot be disabled [bad-flag]\n"
			    "memc: error: 'syntax' is an error and cannot be downgraded to a warning [bad-flag]\n"
			    "memc: error: unknown warning option '-W' [bad-flag]\n");
}

/* Did-you-mean over warning names, when there are any. */
static void flag_suggests_warning_names(void **state)
{
	struct fixture *fx = *state;
	int w = find_warning(true) >= 0 ? find_warning(true) : find_warning(false);

	if (w < 0)
		return;	/* no WARNING rows yet */
	char typo[128];
	snprintf(typo, sizeof(typo), "no-%sx", diag_name(w));
	assert_false(diag_apply_flag(fx->de, typo));
	char want[512];
	snprintf(want, sizeof(want),
		 "memc: error: unknown warning option '-W%s'; did you mean '-Wno-%s'? [bad-flag]\n",
		 typo, diag_name(w));
	assert_string_equal(fx_output(fx), want);
}

static void warning_flags(void **state)
{
	struct fixture *fx = *state;
	int w = find_warning(true);

	if (w < 0)
		return;	/* no default-on WARNING rows yet */
	struct src_file *f = fx_add(fx, "w.mem", "x\n");
	const char *name = diag_name(w);
	char want[1024];

	diag_warn(fx->de, w, fx_at(f, "x"), "plain");
	snprintf(want, sizeof(want),
		 "w.mem:1:1: warning: plain [-W%s]\n    1 | x\n      | ^\n", name);
	assert_string_equal(fx_output(fx), want);
	assert_int_equal(diag_warning_count(fx->de), 1);

	/* Disabled: the sink swallows the note too. */
	char flag[128];
	snprintf(flag, sizeof(flag), "no-%s", name);
	assert_true(diag_apply_flag(fx->de, flag));
	assert_false(diag_is_enabled(fx->de, w));
	struct diag *d = diag_warn(fx->de, w, fx_at(f, "x"), "hidden");
	diag_note(d, NO_LOC, "also hidden");
	assert_null(d->notes);
	assert_int_equal(diag_warning_count(fx->de), 1);

	/* -Werror=name re-enables it and promotes it. */
	snprintf(flag, sizeof(flag), "error=%s", name);
	assert_true(diag_apply_flag(fx->de, flag));
	diag_warn(fx->de, w, NO_LOC, "promoted");
	snprintf(want + strlen(want), sizeof(want) - strlen(want),
		 "memc: error: promoted [-Werror=%s]\n", name);
	assert_string_equal(fx_output(fx), want);
	assert_int_equal(diag_error_count(fx->de), 1);
	assert_int_equal(diag_warning_count(fx->de), 1);
}

static void werror_and_its_exception(void **state)
{
	struct fixture *fx = *state;
	int w = find_warning(true);

	if (w < 0)
		return;
	char flag[128];

	assert_true(diag_apply_flag(fx->de, "error"));
	diag_warn(fx->de, w, NO_LOC, "a");
	snprintf(flag, sizeof(flag), "no-error=%s", diag_name(w));
	assert_true(diag_apply_flag(fx->de, flag));
	diag_warn(fx->de, w, NO_LOC, "b");
	assert_int_equal(diag_error_count(fx->de), 1);
	assert_int_equal(diag_warning_count(fx->de), 1);
	const struct diag *d = diag_first(fx->de);
	assert_true(d->promoted);
	assert_string_equal(diag_severity_str(d), "error");
	assert_false(d->next->promoted);

	diag_suppress_warnings(fx->de);	/* -w beats everything */
	diag_warn(fx->de, w, NO_LOC, "c");
	assert_int_equal(diag_warning_count(fx->de), 1);
	assert_int_equal(diag_error_count(fx->de), 1);
}

static void default_off_warning_needs_flag(void **state)
{
	struct fixture *fx = *state;
	int w = find_warning(false);

	if (w < 0)
		return;
	assert_false(diag_is_enabled(fx->de, w));
	diag_warn(fx->de, w, NO_LOC, "off");
	assert_int_equal(diag_warning_count(fx->de), 0);
	assert_true(diag_apply_flag(fx->de, diag_name(w)));
	diag_warn(fx->de, w, NO_LOC, "on");
	assert_int_equal(diag_warning_count(fx->de), 1);
}

static void error_limit(void **state)
{
	struct fixture *fx = *state;

	diag_set_max_errors(fx->de, 3);
	for (int i = 1; i <= 5; i++)
		diag_note(diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "error %d", i), NO_LOC, "n%d", i);
	assert_true(diag_too_many(fx->de));
	assert_int_equal(diag_error_count(fx->de), 3);
	assert_string_equal(fx_output(fx),
			    "memc: error: error 1 [syntax]\n"
			    "memc: note: n1\n"
			    "memc: error: error 2 [syntax]\n"
			    "memc: note: n2\n"
			    "memc: error: error 3 [syntax]\n"
			    "memc: note: n3\n"
			    "memc: error: too many errors emitted, stopping now [too-many-errors]\n");
}

static void no_limit_when_zero(void **state)
{
	struct fixture *fx = *state;

	diag_set_max_errors(fx->de, 0);
	for (int i = 0; i < 100; i++)
		diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "e");
	assert_false(diag_too_many(fx->de));
	assert_int_equal(diag_error_count(fx->de), 100);
}

static void default_limit_is_twenty(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < 25; i++)
		diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "e");
	assert_int_equal(diag_error_count(fx->de), 20);
	assert_true(diag_too_many(fx->de));
}

static const char *tally(struct fixture *fx, unsigned errors, unsigned warnings)
{
	int w = find_warning(true);

	for (unsigned i = 0; i < errors; i++)
		diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "e");
	for (unsigned i = 0; i < warnings && w >= 0; i++)
		diag_warn(fx->de, w, NO_LOC, "w");
	fflush(fx->out);
	rewind(fx->out);
	diag_print_tally(fx->de, fx->out);
	fputc('\0', fx->out);	/* end the string where the tally ends */
	fflush(fx->out);
	return fx->buf;
}

static void tally_line(void **state)
{
	struct fixture *fx = *state;

	assert_string_equal(tally(fx, 0, 0), "");
	assert_string_equal(tally(fx, 1, 0), "memc: 1 error\n");
	assert_string_equal(tally(fx, 1, 0), "memc: 2 errors\n");
	if (find_warning(true) < 0)
		return;
	assert_string_equal(tally(fx, 0, 1), "memc: 2 errors, 1 warning\n");
	assert_string_equal(tally(fx, 0, 1), "memc: 2 errors, 2 warnings\n");
}

static void tally_warnings_only(void **state)
{
	struct fixture *fx = *state;

	if (find_warning(true) < 0)
		return;
	assert_string_equal(tally(fx, 0, 1), "memc: 1 warning\n");
}

static void records_are_kept_for_readers(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "k.mem", "one\n\t日 two\n");

	diag_set_output(fx->de, NULL);	/* --format=json: keep, don't print */
	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "two"), "first");
	diag_flush(fx->de);
	diag_error(fx->de, DIAG_BAD_FLAG, NO_LOC, "second");
	diag_flush(fx->de);
	assert_string_equal(fx_output(fx), "");

	const struct diag *d = diag_first(fx->de);
	assert_non_null(d);
	assert_string_equal(diag_loc_file(fx->de, d->loc), "k.mem");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 2);
	assert_int_equal(diag_loc_col(fx->de, d->loc), 4);	/* tab, 日, space */
	assert_string_equal(diag_severity_str(d), "error");
	assert_string_equal(diag_name(d->id), "syntax");
	assert_string_equal(diag_message(d), "first");
	d = d->next;
	assert_non_null(d);
	assert_null(diag_loc_file(fx->de, d->loc));
	assert_int_equal(diag_loc_line(fx->de, d->loc), 0);
	assert_string_equal(diag_message(d), "second");
	assert_null(d->next);
}

/* Records flushed once are not printed again. */
static void flush_prints_each_record_once(void **state)
{
	struct fixture *fx = *state;

	diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "a");
	diag_flush(fx->de);
	diag_flush(fx->de);
	diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "b");
	assert_string_equal(fx_output(fx), "memc: error: a [syntax]\nmemc: error: b [syntax]\n");
}

static void color_output(void **state)
{
	struct fixture *fx = *state;

	diag_set_color(fx->de, true);
	diag_error(fx->de, DIAG_SYNTAX, NO_LOC, "red");
	assert_string_equal(fx_output(fx), "\033[01m\033[Kmemc:\033[m\033[K "
					"\033[01;31m\033[Kerror:\033[m\033[K red [syntax]\n");
}

static void table_is_sorted_and_searchable(void **state)
{
	(void)state;

	for (int i = 1; i < DIAG__COUNT; i++)
		assert_true(strcmp(diag_name(i - 1), diag_name(i)) < 0);
	for (int i = 0; i < DIAG__COUNT; i++) {
		assert_int_equal(diag_find_name(diag_name(i)), i);
		assert_true(diag_summary(i)[0] != '\0');
	}
	assert_int_equal(diag_find_name("syntax"), DIAG_SYNTAX);
	assert_int_equal(diag_find_name("no-such-thing"), -1);
	assert_int_equal(diag_kind_of(DIAG_SYNTAX), DIAG_KIND_ERROR);
	assert_string_equal(diag_kind_str(DIAG_BAD_FLAG), "error");

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	diag_list_print(f);
	fclose(f);
	assert_non_null(strstr(buf, "\nsyntax "));
	free(buf);
}

/* Message text, notes and file names cannot start a line or hide text:
 * controls, invalid bytes, bidi and format characters are escaped. */
static void message_text_is_escaped(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "x\n.mem", "a b\n");
	struct diag *d = diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "b"),
				    "m\nfake.mem:1:1: error: x\t\x1b[31m\r\x7f\xff");

	diag_note(d, NO_LOC, "n\xc2\x85\xe2\x80\xae\xe2\x80\xa8\xef\xbb\xbf\\n ok \xc3\xa9");
	assert_string_equal(fx_output(fx),
			    "x\\n.mem:1:3: error: m\\nfake.mem:1:1: error: x\\t\\x1b[31m\\r\\x7f\\xff [syntax]\n"
			    "    1 | a b\n"
			    "      |   ^\n"
			    "memc: note: n\\u{85}\\u{202e}\\u{2028}\\u{feff}\\n ok \xc3\xa9\n");

	struct strbuf sb;

	strbuf_init(&sb);
	diag_escape(&sb, "plain \xe6\x97\xa5\xe6\x9c\xac \\ \"q\"");
	assert_string_equal(sb.buf, "plain \xe6\x97\xa5\xe6\x9c\xac \\ \"q\"");
	strbuf_release(&sb);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup_printing, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(error_with_range),
		T(gutter_grows_with_line_number),
		T(caret_under_tabs_cjk_emoji),
		T(empty_and_multiline_ranges),
		T(caret_at_end_of_file),
		T(long_line_is_clipped),
		T(escapes_keep_the_line_readable),
		T(notes_and_no_location),
		T(include_chain_before_first_diagnostic),
		T(flag_parsing),
		T(flag_suggests_warning_names),
		T(warning_flags),
		T(werror_and_its_exception),
		T(default_off_warning_needs_flag),
		T(error_limit),
		T(no_limit_when_zero),
		T(default_limit_is_twenty),
		T(tally_line),
		T(tally_warnings_only),
		T(records_are_kept_for_readers),
		T(flush_prints_each_record_once),
		T(color_output),
		T(message_text_is_escaped),
		cmocka_unit_test(table_is_sorted_and_searchable),
	};
	return cmocka_run_group_tests_name("diag", tests, NULL, NULL);
}
