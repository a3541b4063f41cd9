/* SPDX-License-Identifier: MIT */
/*
 * test_fmt.c - the formatter's layout engine on strings (what the golden
 * cases in tests/fmt/ cannot spell: empty input, lone CRs, a file with no
 * final newline, deep nesting) and the atomic rewrite's failure path.
 */
#include "analyzer/fmt/fmt.h"
#include "analyzer/fmt/fmt_impl.h"
#include "lang_fixture.h"

/* fmt_layout(@in) is @want, and formatting @want again changes nothing. */
static void expect_layout(const char *in, const char *want)
{
	size_t len, len2;
	char *got = fmt_layout(in, strlen(in), &len);

	assert_string_equal(got, want);
	assert_int_equal(len, strlen(want));
	char *again = fmt_layout(got, len, &len2);

	assert_string_equal(again, want);
	free(got);
	free(again);
}

static void empty_and_blank_inputs_give_nothing(void **state)
{
	(void)state;
	expect_layout("", "");
	expect_layout("\n\n\r\n  \t \n", "");
}

static void final_newline_added_and_blank_lines_collapsed(void **state)
{
	(void)state;
	expect_layout("\n\nlet a = 1\n\n\n\nlet b = 2", "let a = 1\n\nlet b = 2\n");
	expect_layout("let a = 1   \n\n\n", "let a = 1\n");
}

static void lone_cr_and_crlf_become_lf(void **state)
{
	(void)state;
	expect_layout("let a=1\rlet b=2\r\nlet c=3\n", "let a = 1\nlet b = 2\nlet c = 3\n");
	/* inside a block comment too, with the blanks before each line end */
	expect_layout("/* a  \r\n b */\n", "/* a\n b */\n");
}

static void tokens_are_never_glued(void **state)
{
	(void)state;
	/* a unit after a number, a negative exponent, a string with spaces */
	expect_layout("let a = 80GiB\n", "let a = 80 GiB\n");
	expect_layout("let a = 1.5e-3*2\n", "let a = 1.5e-3 * 2\n");
	expect_layout("warn   \"a  b\"\n", "warn \"a  b\"\n");
	expect_layout("let a = b - -c\n", "let a = b - -c\n");
	expect_layout("let a = (b)-c\n", "let a = (b) - c\n");
}

static void deep_nesting_indents_by_two(void **state)
{
	(void)state;
	expect_layout("layer l {\nif a {\nif b {\nif c {\nsaves x : [1]\n}\n}\n}\n}\n",
		      "layer l {\n  if a {\n    if b {\n      if c {\n        saves x : [1]\n"
		      "      }\n    }\n  }\n}\n");
}

static void continuation_after_an_operator(void **state)
{
	(void)state;
	expect_layout("layer l {\nlet a = b +\nc\nlet d = 1\n}\n",
		      "layer l {\n  let a = b +\n      c\n  let d = 1\n}\n");
}

static void write_into_a_missing_folder_fails(void **state)
{
	struct fixture *fx = *state;

	assert_false(fmt_write_file(fx->de, "no-such-folder/x.mem", "x", 1));
	assert_string_equal(fx_output(fx),
			    "memc: error: cannot write 'no-such-folder/x.mem': No such file or "
			    "directory [fmt-write-failed]\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_and_blank_inputs_give_nothing),
		cmocka_unit_test(final_newline_added_and_blank_lines_collapsed),
		cmocka_unit_test(lone_cr_and_crlf_become_lf),
		cmocka_unit_test(tokens_are_never_glued),
		cmocka_unit_test(deep_nesting_indents_by_two),
		cmocka_unit_test(continuation_after_an_operator),
		cmocka_unit_test_setup_teardown(write_into_a_missing_folder_fails,
						fx_setup_printing, fx_teardown),
	};
	return cmocka_run_group_tests_name("fmt", tests, NULL, NULL);
}
