/* SPDX-License-Identifier: MIT */
/*
 * test_memo.c - unit and dtype lookups through the intern memo
 * (unit_lookup_in, dtype_find_in) answer exactly as the plain lookups,
 * the first time and every time after, for interned names and for equal
 * strings that are not the interned copy.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/dtypes.h"
#include "lang/intern.h"
#include "lang/num.h"
#include "lang/units.h"

static const char *const names[] = {
	"GiB", "ms", "TFLOPS", "kmin", "B", "bf16", "fp32", "nf4_dq", "int8",
	"fp8", "llama2_13b", "hidden_size", "a", "x", "GIB", "MiB", "averyveryverylongname",
};

static void same_answers_as_plain_lookups(void **state)
{
	struct arena a = { 0 };
	struct interner *in = interner_new(&a);

	(void)state;
	for (int round = 0; round < 2; round++)	/* the second answers from the memo */
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
			const char *name = intern_cstr(in, names[i]);
			char copy[64];
			struct unit_ref u1, u2, u3;

			strcpy(copy, names[i]);		/* equal, not interned: no memo */
			bool plain = unit_lookup(names[i], &u1);

			assert_int_equal(unit_lookup_in(in, name, &u2), plain);
			assert_int_equal(unit_lookup_in(in, copy, &u3), plain);
			if (plain) {
				assert_string_equal(u2.spelling, u1.spelling);
				assert_string_equal(u3.spelling, u1.spelling);
				assert_true(num_eq(u2.factor, u1.factor));
			}
			assert_ptr_equal(dtype_find_in(in, name), dtype_find(names[i]));
			assert_ptr_equal(dtype_find_in(in, copy), dtype_find(names[i]));
		}
	assert_null(intern_memo(in, "never interned"));
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_answers_as_plain_lookups),
	};

	return cmocka_run_group_tests_name("memo", tests, NULL, NULL);
}
