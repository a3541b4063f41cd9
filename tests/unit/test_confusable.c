/* SPDX-License-Identifier: MIT */
/*
 * test_confusable.c - skeletons, the mixed-script rule and the program
 * check behind -Wconfusable and -Wmixed-script.
 */
#include "lang/confusable.h"
#include "lang/import.h"
#include "lang_fixture.h"

static void ascii_is_its_own_skeleton(void **state)
{
	struct fixture *fx = *state;
	const char *name = "A100_80GB";

	assert_ptr_equal(confusable_skeleton(&fx->arena, name), name);
	/* Non-ASCII without look-alikes is itself too (same pointer). */
	const char *jp = "\xe9\x9a\xa0\xe3\x82\x8c";	/* 隠れ */
	assert_ptr_equal(confusable_skeleton(&fx->arena, jp), jp);
}

static void lookalikes_fold_to_ascii(void **state)
{
	struct fixture *fx = *state;

	/* Cyrillic А, Greek Ο, fullwidth Ｈ, Cyrillic і and е. */
	assert_string_equal(confusable_skeleton(&fx->arena, "\xd0\x90" "100"), "A100");
	assert_string_equal(confusable_skeleton(&fx->arena, "\xce\x9fPT"), "OPT");
	assert_string_equal(confusable_skeleton(&fx->arena, "\xef\xbc\xa8" "100"), "H100");
	assert_string_equal(confusable_skeleton(&fx->arena, "h\xd1\x96" "dd\xd0\xb5n"), "hidden");
	/* An accent stays (NFKD), so é and a Cyrillic е with the same accent meet. */
	assert_string_equal(confusable_skeleton(&fx->arena, "caf\xc3\xa9"), "cafe\xcc\x81");
	assert_string_equal(confusable_skeleton(&fx->arena, "caf\xd0\xb5\xcc\x81"), "cafe\xcc\x81");
	/* Cyrillic letters without a Latin twin are kept. */
	assert_string_equal(confusable_skeleton(&fx->arena, "\xd0\xb4"), "\xd0\xb4");
}

static bool mixed(const char *name)
{
	const char *a = NULL, *b = NULL;
	unsigned cp = 0;

	return confusable_mixed_script(name, &a, &b, &cp);
}

static void scripts_that_mix(void **state)
{
	const char *a = NULL, *b = NULL;
	unsigned cp = 0;

	(void)state;
	assert_true(confusable_mixed_script("k\xd0\xb0lman", &a, &b, &cp));	/* kаlman */
	assert_string_equal(a, "Latin");
	assert_string_equal(b, "Cyrillic");
	assert_int_equal(cp, 0x430);		/* the minority script's first letter */
	assert_true(confusable_mixed_script("\xd0\x90" "100_80GB", &a, &b, &cp));
	assert_string_equal(a, "Cyrillic");
	assert_int_equal(cp, 0x410);
	assert_true(mixed("\xce\xbc_scale"));				/* Greek and Latin */
	assert_true(mixed("\xce\xbb\xd0\xb4"));				/* Greek and Cyrillic */
	assert_true(mixed("\xed\x95\x9c\xe3\x81\x82"));			/* Hangul and Hiragana */
}

static void scripts_that_do_not(void **state)
{
	(void)state;
	assert_false(mixed("A100_80GB"));
	assert_false(mixed("gr\xc3\xb6\xc3\x9f" "e"));			/* größe */
	assert_false(mixed("\xd1\x80\xd0\xb0\xd0\xb7\xd0\xbc\xd0\xb5\xd1\x80_2"));	/* размер_2 */
	assert_false(mixed("batch_\xe3\x82\xb5\xe3\x82\xa4\xe3\x82\xba"));	/* Latin + Katakana */
	assert_false(mixed("\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf\xe9\x87\x8f"));	/* Katakana + Han */
	assert_false(mixed("x_\xed\x95\x9c\xea\xb8\x80\xe5\xad\x97"));	/* Latin, Hangul, Han */
	assert_false(mixed("e\xcc\x81"));				/* a combining mark is Inherited */
}

/* The program check: one warning per name, at its first declaration, in
 * declaration order, pointing at the look-alike and noting the other. */
static void program_check(void **state)
{
	struct fixture *fx = *state;
	struct file_ast *lib = fx_parse(fx, "lib.mem", "gpu A100 { memory = 80 GiB }\n");
	struct file_ast *root = fx_parse(fx, "main.mem",
					 "let k\xd0\xb0lman = 1\n"
					 "gpu \xd0\x90" "100 : A100 { memory = 40 GiB }\n"
					 "layer l(\xd0\x90" "100: count) { param w : [1] }\n");
	struct file_ast *files[] = { lib, root };
	struct program p = { .files = files, .nfiles = 2, .root = root };

	fx_assert_no_diags(fx);
	confusable_check(&fx->arena, fx->de, &p);

	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_string_equal(diag_name(d->id), "mixed-script");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 1);
	d = d->next;
	assert_non_null(d);
	assert_string_equal(diag_name(d->id), "confusable");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 2);
	assert_string_equal(diag_message(d), "'\xd0\x90" "100' looks like 'A100' but is a different "
					     "name (U+0410 CYRILLIC CAPITAL LETTER A)");
	assert_non_null(d->notes);
	assert_string_equal(diag_loc_file(fx->de, d->notes->loc), "lib.mem");
	assert_null(d->next);			/* the parameter А100 repeats the name */
}

static void switched_off(void **state)
{
	struct fixture *fx = *state;
	struct file_ast *root = fx_parse(fx, "main.mem", "let k\xd0\xb0lman = 1\nlet \xd0\x90 = 1\nlet A = 2\n");
	struct file_ast *files[] = { root };
	struct program p = { .files = files, .nfiles = 1, .root = root };

	assert_true(diag_apply_flag(fx->de, "no-confusable"));
	assert_true(diag_apply_flag(fx->de, "no-mixed-script"));
	confusable_check(&fx->arena, fx->de, &p);
	fx_assert_no_diags(fx);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(ascii_is_its_own_skeleton),
		T(lookalikes_fold_to_ascii),
		cmocka_unit_test(scripts_that_mix),
		cmocka_unit_test(scripts_that_do_not),
		T(program_check),
		T(switched_off),
	};
	return cmocka_run_group_tests_name("confusable", tests, NULL, NULL);
}
