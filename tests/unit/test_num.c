/* SPDX-License-Identifier: MIT */
/*
 * test_num.c - exact rationals: arithmetic, overflow detection, literal
 * parsing and deterministic formatting.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "lang/num.h"

static struct num q(int64_t n, int64_t d)
{
	struct num r;

	assert_int_equal(num_make(n, d, &r), NUM_OK);
	return r;
}

static struct num parse(const char *s)
{
	struct num r;

	assert_int_equal(num_parse(s, strlen(s), &r), NUM_OK);
	return r;
}

static void assert_num(struct num a, int64_t n, int64_t d)
{
	assert_int_equal(a.n, n);
	assert_int_equal(a.d, d);
}

static void make_normalises(void **state)
{
	struct num r;
	(void)state;

	assert_num(q(6, -4), -3, 2);
	assert_num(q(0, -7), 0, 1);
	assert_int_equal(num_make(1, 0, &r), NUM_DIV_ZERO);
	/* INT64_MIN cannot be represented (negation must never overflow) */
	assert_int_equal(num_make(INT64_MIN, 1, &r), NUM_OVERFLOW);
	assert_num(q(INT64_MIN, 2), INT64_MIN / 2, 1);
}

static void third_plus_sixth_is_half(void **state)
{
	struct num r;
	(void)state;

	assert_int_equal(num_add(q(1, 3), q(1, 6), &r), NUM_OK);
	assert_num(r, 1, 2);
	assert_int_equal(num_sub(q(1, 3), q(1, 2), &r), NUM_OK);
	assert_num(r, -1, 6);
	assert_int_equal(num_sub(q(5, 7), q(5, 7), &r), NUM_OK);
	assert_num(r, 0, 1);
}

static void add_avoids_spurious_overflow(void **state)
{
	/* Denominators near 2^62 share a large gcd: Knuth's method keeps the
	 * intermediates small, a naive cross-multiplication would overflow. */
	int64_t big = (int64_t)1 << 62;
	struct num r;
	(void)state;

	assert_int_equal(num_add(q(1, big), q(1, big), &r), NUM_OK);
	assert_num(r, 1, big / 2);
	assert_int_equal(num_add(q(INT64_MAX, 1), q(1, 1), &r), NUM_OVERFLOW);
	assert_int_equal(num_sub(q(-INT64_MAX, 1), q(1, 1), &r), NUM_OVERFLOW);
}

static void decimal_gb_equals_binary_gib(void **state)
{
	/* 85.899345920 GB == 80 GiB exactly: the literal is exact, not 85.9 */
	struct num gb = parse("85.899345920"), r, gib;
	(void)state;

	assert_int_equal(num_mul(gb, num_from_int(1000000000), &r), NUM_OK);
	assert_int_equal(num_pow_int(num_from_int(2), 30, &gib), NUM_OK);
	assert_int_equal(num_mul(gib, num_from_int(80), &gib), NUM_OK);
	assert_true(num_eq(r, gib));
	assert_num(r, 85899345920, 1);
}

static void multiply_overflow_is_detected(void **state)
{
	struct num r, p62;
	(void)state;

	assert_int_equal(num_pow_int(num_from_int(2), 62, &p62), NUM_OK);
	assert_int_equal(num_mul(p62, num_from_int(2), &r), NUM_OVERFLOW);
	assert_int_equal(num_pow_int(num_from_int(2), 63, &r), NUM_OVERFLOW);
	assert_int_equal(num_pow_int(num_from_int(2), -62, &r), NUM_OK);
	assert_num(r, 1, p62.n);
	/* cross-cancellation: (2^62 / 3) * (3 / 2^61) == 2 */
	assert_int_equal(num_mul(q(p62.n, 3), q(3, p62.n / 2), &r), NUM_OK);
	assert_num(r, 2, 1);
}

static void division(void **state)
{
	struct num r;
	(void)state;

	assert_int_equal(num_div(q(3, 4), q(-3, 8), &r), NUM_OK);
	assert_num(r, -2, 1);
	assert_int_equal(num_div(q(3, 4), num_from_int(0), &r), NUM_DIV_ZERO);
	assert_int_equal(num_pow_int(num_from_int(0), -1, &r), NUM_DIV_ZERO);
	assert_int_equal(num_pow_int(q(-2, 3), 3, &r), NUM_OK);
	assert_num(r, -8, 27);
	assert_int_equal(num_pow_int(q(5, 1), 0, &r), NUM_OK);
	assert_num(r, 1, 1);
}

static void comparison_and_rounding(void **state)
{
	int64_t big = INT64_MAX;
	(void)state;

	assert_int_equal(num_cmp(q(1, 3), q(1, 2)), -1);
	assert_int_equal(num_cmp(q(-1, 3), q(-1, 2)), 1);
	assert_int_equal(num_cmp(q(2, 4), q(1, 2)), 0);
	/* these would overflow if cross-multiplied */
	assert_int_equal(num_cmp(q(big - 1, big), q(big - 2, big - 1)), 1);
	assert_int_equal(num_cmp(q(big - 2, big - 1), q(big - 1, big)), -1);
	assert_true(num_eq(num_min(q(1, 3), q(1, 4)), q(1, 4)));
	assert_true(num_eq(num_max(q(1, 3), q(1, 4)), q(1, 3)));
	assert_num(num_floor(q(7, 2)), 3, 1);
	assert_num(num_ceil(q(7, 2)), 4, 1);
	assert_num(num_floor(q(-7, 2)), -4, 1);
	assert_num(num_ceil(q(-7, 2)), -3, 1);
	assert_num(num_ceil(num_from_int(5)), 5, 1);
	assert_true(num_is_int(q(4, 2)));
	assert_false(num_is_int(q(1, 2)));
	assert_true(num_to_double(q(1, 4)) == 0.25);
	assert_num(num_neg(q(1, 2)), -1, 2);
	assert_num(num_abs(q(-1, 2)), 1, 2);
}

static void parse_every_literal_form(void **state)
{
	(void)state;

	assert_num(parse("80"), 80, 1);
	assert_num(parse("1_000_000"), 1000000, 1);
	assert_num(parse("3.35"), 67, 20);
	assert_num(parse("85.899345920"), 85899345920 / 2560, 1000000000 / 2560);
	assert_num(parse("70e9"), 70000000000, 1);
	assert_num(parse("1.5e-3"), 3, 2000);
	assert_num(parse("2.039E12"), 2039000000000, 1);
	assert_num(parse("2.5E+2"), 250, 1);
	assert_num(parse("0.000_1"), 1, 10000);
	assert_num(parse("1.000000000000000000000000"), 1, 1);
	assert_num(parse("0e99999"), 0, 1);
	assert_num(parse("007"), 7, 1);
	assert_num(parse("9223372036854775807"), INT64_MAX, 1);
}

static void parse_rejects_and_overflows(void **state)
{
	static const char *const bad[] = {
		"", "_1", "1_", "1__0", "1_.5", "1._5", ".5", "1.", "1e", "1e+",
		"-1", "1x", "0x10", "1.5.2", "1e_3", "1 ",
	};
	struct num r;
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(num_parse(bad[i], strlen(bad[i]), &r), NUM_INVALID);
	assert_int_equal(num_parse("9223372036854775808", 19, &r), NUM_OVERFLOW);
	assert_int_equal(num_parse("1e19", 4, &r), NUM_OVERFLOW);
	assert_int_equal(num_parse("1e-19", 5, &r), NUM_OVERFLOW);
	assert_int_equal(num_parse("1e99999999999", 13, &r), NUM_OVERFLOW);
	assert_int_equal(num_parse("99999999999999999999999", 23, &r), NUM_OVERFLOW);
	/* the length bounds the literal: "80" inside "80GiB" */
	assert_int_equal(num_parse("80GiB", 2, &r), NUM_OK);
	assert_num(r, 80, 1);
}

static void format_is_exact_and_trimmed(void **state)
{
	char buf[64];
	(void)state;

	assert_string_equal(num_format(num_from_int(6476005376), buf, sizeof buf, 2),
			    "6476005376");
	assert_string_equal(num_format(num_from_int(-3), buf, sizeof buf, 2), "-3");
	assert_string_equal(num_format(q(1, 3), buf, sizeof buf, 3), "0.333");
	assert_string_equal(num_format(q(2, 3), buf, sizeof buf, 3), "0.667");
	assert_string_equal(num_format(q(9, 2), buf, sizeof buf, 6), "4.5");
	assert_string_equal(num_format(q(-1, 8), buf, sizeof buf, 2), "-0.13");
	assert_string_equal(num_format(q(-1, 1000), buf, sizeof buf, 2), "0");
	assert_string_equal(num_format(q(1999, 1000), buf, sizeof buf, 2), "2");
	assert_string_equal(num_format(parse("3.35"), buf, sizeof buf, 0), "3");
	assert_string_equal(num_format_fixed(num_from_int(80), buf, sizeof buf, 2), "80.00");
	assert_string_equal(num_format_fixed(q(3, 2), buf, sizeof buf, 2), "1.50");
	assert_string_equal(num_format_fixed(q(1, INT64_MAX), buf, sizeof buf, 25),
			    "0.0000000000000000001084202");
	assert_string_equal(num_format(q(INT64_MAX, 2), buf, sizeof buf, 1),
			    "4611686018427387903.5");
	/* truncation follows snprintf */
	assert_string_equal(num_format(num_from_int(123456), buf, 4, 0), "123");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(make_normalises),
		cmocka_unit_test(third_plus_sixth_is_half),
		cmocka_unit_test(add_avoids_spurious_overflow),
		cmocka_unit_test(decimal_gb_equals_binary_gib),
		cmocka_unit_test(multiply_overflow_is_detected),
		cmocka_unit_test(division),
		cmocka_unit_test(comparison_and_rounding),
		cmocka_unit_test(parse_every_literal_form),
		cmocka_unit_test(parse_rejects_and_overflows),
		cmocka_unit_test(format_is_exact_and_trimmed),
	};
	return cmocka_run_group_tests_name("num", tests, NULL, NULL);
}
