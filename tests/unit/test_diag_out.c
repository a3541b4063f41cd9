/* SPDX-License-Identifier: MIT */
/*
 * test_diag_out.c - the machine formats (analyzer/out/): JSON string
 * escaping, GitHub's escaping and column rules, SARIF rule indices in
 * order of first use, the fix a note carries, end positions, and the
 * help text generated from docs/diagnostics.md. The writers print into
 * an open_memstream buffer.
 */
#include "analyzer/out/diag_out.h"
#include "analyzer/out/jsonw.h"
#include "lang_fixture.h"

/* What the @format writer makes of the fixture's engine, as one file. */
static char *write_doc(struct fixture *fx, enum diag_out_format format)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct diag_out w;

	assert_non_null(out);
	diag_out_begin(&w, out, format);
	diag_out_file(&w, "a.mem", fx->de);
	diag_out_end(&w);
	fclose(out);
	return buf;
}

static void json_string_escapes(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	(void)state;
	jsonw_string(out, "q\"b\\n\n\t\x01\x7f\xff \xe2\x80\xae \xc3\xa9\xe6\x97\xa5");
	fclose(out);
	assert_string_equal(buf, "\"q\\\"b\\\\n\\n\\t\\u0001\\u007F\\uFFFD \\u202E \xc3\xa9\xe6\x97\xa5\"");
	free(buf);
}

static void end_positions_are_exclusive(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "a.mem", "let \xc3\xa9t\xc3\xa9 = 1\nlet b = 2\n");
	struct loc word = fx_at(f, "\xc3\xa9t\xc3\xa9");
	struct loc two_lines = { f->id, word.start, fx_at(f, "b =").end };

	assert_int_equal(diag_loc_col(fx->de, word), 5);
	assert_int_equal(diag_loc_end_col(fx->de, word), 8);	/* code points, not bytes */
	assert_int_equal(diag_loc_end_line(fx->de, two_lines), 2);
	assert_int_equal(diag_loc_end_col(fx->de, two_lines), 8);
	struct loc empty = { f->id, word.start, word.start };
	assert_int_equal(diag_loc_end_col(fx->de, empty), 5);
	assert_int_equal(diag_loc_end_line(fx->de, NO_LOC), 0);
}

/* The fix goes to the record, not to the text: the printed note is the
 * same as diag_note()'s. */
static void note_fix_keeps_text_output(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "a.mem", "train t {\n  micro_batch = 8\n}\n");
	struct loc field = fx_at(f, "micro_batch = 8");
	char what[] = "micro_batch = 1";
	struct diag *d = diag_warn(fx->de, DIAG_CAPACITY, field, "too big");

	diag_note_fix(d, field, what, "%s fits", what);
	what[0] = 'X';	/* the engine keeps its own copy */
	assert_non_null(d->notes->fix);
	assert_string_equal(d->notes->fix->text, "micro_batch = 1");
	assert_int_equal(d->notes->fix->loc.start, field.start);
	assert_non_null(strstr(fx_output(fx), "a.mem:2:3: note: micro_batch = 1 fits\n"));
	diag_note_fix(diag_sink(fx->de), field, "x", "dropped");	/* no-op on the sink */
}

static void json_fix_and_nulls(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "a.mem", "train t {\n  zero = 1\n}\n");
	struct diag *d = diag_warn(fx->de, DIAG_CAPACITY, fx_at(f, "zero = 1"), "too big");

	diag_note(d, NO_LOC, "the largest part");
	diag_note_fix(d, fx_at(f, "zero = 1"), "zero = 2", "zero = 2 fits");
	char *doc = write_doc(fx, DIAG_OUT_JSON);

	assert_non_null(strstr(doc, "\"schema\": \"" DIAG_OUT_JSON_SCHEMA "\""));
	assert_non_null(strstr(doc, "\"file\": null,\n"));
	assert_non_null(strstr(doc, "\"fix\": {\n"));
	assert_non_null(strstr(doc, "\"replacement\": \"zero = 2\"\n"));
	assert_non_null(strstr(doc, "\"end_column\": 11,\n"));
	assert_non_null(strstr(doc, "  \"warnings\": 1\n}\n"));
	free(doc);
}

static void github_escapes_and_columns(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "50%,x:y.mem", "let a = 1\nlet b = 2\n");
	struct loc two_lines = { f->id, fx_at(f, "a =").start, fx_at(f, "b =").end };

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "a = 1"), "100%% sure\r\nreally, yes: %s", "ok");
	diag_error(fx->de, DIAG_SYNTAX, two_lines, "spans");
	char *doc = write_doc(fx, DIAG_OUT_GITHUB);

	assert_string_equal(doc,
		"::error file=50%25%2Cx%3Ay.mem,line=1,col=5,endLine=1,endColumn=9,title=syntax::"
		"100%25 sure%0D%0Areally, yes: ok\n"
		"::error file=50%25%2Cx%3Ay.mem,line=1,endLine=2,title=syntax::spans\n");
	free(doc);
}

/* Rules are listed in order of first use, and ruleIndex points there. */
static void sarif_rules_in_first_use_order(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = fx_add(fx, "dir/a b.mem", "let a = 1\n");

	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "a"), "first");
	diag_error(fx->de, DIAG_BAD_ARGUMENT, NO_LOC, "second");
	diag_error(fx->de, DIAG_SYNTAX, fx_at(f, "1"), "third");
	char *doc = write_doc(fx, DIAG_OUT_SARIF);
	const char *syntax = strstr(doc, "\"id\": \"syntax\"");
	const char *bad = strstr(doc, "\"id\": \"bad-argument\"");

	assert_non_null(syntax);
	assert_non_null(bad);
	assert_true(syntax < bad);
	assert_non_null(strstr(doc, "\"ruleId\": \"bad-argument\",\n          \"ruleIndex\": 1,"));
	assert_null(strstr(doc, "\"ruleIndex\": 2"));
	assert_non_null(strstr(doc, "\"uri\": \"dir/a%20b.mem\""));
	assert_non_null(strstr(doc, "\"locations\": []"));	/* no position */
	free(doc);
}

static void help_text_for_every_row(void **state)
{
	(void)state;
	for (int i = 0; i < DIAG__COUNT; i++) {
		if (!diag_help_text[i] || !diag_help_text[i][0])
			fail_msg("no help text for %s", diag_name(i));
		assert_null(strchr(diag_help_text[i], '\n'));	/* lines joined */
	}
	assert_true(strncmp(diag_help_text[DIAG_BAD_ESCAPE],
			    "A string contains a backslash escape other than `\\\"`", 52) == 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup_printing, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_string_escapes),
		T(end_positions_are_exclusive),
		T(note_fix_keeps_text_output),
		T(json_fix_and_nulls),
		T(github_escapes_and_columns),
		T(sarif_rules_in_first_use_order),
		cmocka_unit_test(help_text_for_every_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
