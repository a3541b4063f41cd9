/* SPDX-License-Identifier: MIT */
/*
 * test_scan.c - the scanner's identifier path (lang/scan.c): every keyword
 * is found by its perfect hash, names that share a keyword's hash slot
 * (same length, first and last byte) stay names, pure-ASCII names skip
 * normalisation and non-ASCII ones are still NFC-normalised and checked.
 */
#include "lang_fixture.h"

static const char *const keywords[] = {
	"import", "let", "gpu", "precision", "train", "layer", "model",
	"optimizer", "param", "saves", "temp", "state", "input", "repeat",
	"if", "else", "warn", "true", "false",
};

/* `let NAME = 1` parses only when NAME is not a keyword. */
static const char *let_name(struct fixture *fx, const char *name)
{
	char text[64];

	snprintf(text, sizeof text, "let %s = 1\n", name);
	struct file_ast *f = fx_parse(fx, "t.mem", text);

	return fx_count_diags(fx) != 0 || !f->decls ? NULL : f->decls->name;
}

static void every_keyword_is_a_keyword(void **state)
{
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
		unsigned before = fx_count_diags(fx);

		assert_null(let_name(fx, keywords[i]));
		assert_true(fx_count_diags(fx) > before);
	}
}

/* Each shares its slot with a keyword: the hash alone must not decide. */
static void same_slot_names_are_names(void **state)
{
	static const char *const near[] = {
		"impart", "lat", "gnu", "prevision", "taxin", "lover", "motel",
		"organizer", "prism", "slabs", "trip", "slope", "inlet", "resist", "edge",
		"worn", "tree", "frame", "iff", "Let", "LET", "letx", "_if", "if_", "true1",
	};

	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
		const char *got = let_name(fx, near[i]);

		assert_non_null(got);
		assert_string_equal(got, near[i]);
	}
}

static void non_ascii_names_are_nfc(void **state)
{
	struct fixture *fx = *state;

	/* e + U+0301 COMBINING ACUTE is U+00E9 after NFC */
	const char *a = let_name(fx, "caf\x65\xcc\x81");
	const char *b = let_name(fx, "caf\xc3\xa9");

	assert_non_null(a);
	assert_string_equal(a, "caf\xc3\xa9");
	assert_ptr_equal(a, b);
	assert_null(let_name(fx, "a\xe2\x80\xa0"));	/* U+2020 DAGGER is not XID */
	assert_non_null(fx_only_diag(fx, "invalid-character"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_keyword_is_a_keyword, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(same_slot_names_are_names, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(non_ascii_names_are_nfc, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("scan", tests, NULL, NULL);
}
