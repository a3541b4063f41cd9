/* SPDX-License-Identifier: MIT */
/*
 * test_units.c - dimensions, the unit table and its spellings, hints, and
 * quantity formatting.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "lang/units.h"

/* Verify the spelling table once for the group. It fails (non-zero) if two
 * prefix+unit spellings collide, and then no test in the group runs. */
static int setup_units(void **state)
{
	(void)state;
	return unit_table_init();
}

static struct unit_ref lookup(const char *spelling)
{
	struct unit_ref u;

	assert_true(unit_lookup(spelling, &u));
	assert_string_equal(u.spelling, spelling);
	return u;
}

static void assert_factor(const char *spelling, int64_t n, int64_t d)
{
	struct unit_ref u = lookup(spelling);

	assert_int_equal(u.factor.n, n);
	assert_int_equal(u.factor.d, d);
}

static void gib_is_two_to_the_thirty_bytes(void **state)
{
	struct unit_ref u = lookup("GiB");
	(void)state;

	assert_true(dim_eq(u.dim, DIM_OF(INFO)));
	assert_true(num_eq(u.factor, num_from_int(INT64_C(1) << 30)));
	assert_string_equal(u.prefix, "Gi");
	assert_string_equal(u.unit, "B");
	assert_string_equal(u.long_name, "byte");
}

static void factors_are_exact(void **state)
{
	(void)state;
	assert_factor("B", 1, 1);
	assert_factor("kB", 1000, 1);
	assert_factor("GB", 1000000000, 1);
	assert_factor("EB", 1000000000000000000, 1);
	assert_factor("KiB", 1024, 1);
	assert_factor("EiB", INT64_C(1) << 60, 1);
	assert_factor("bit", 1, 8);
	assert_factor("kbit", 125, 1);
	assert_factor("Gibit", INT64_C(1) << 27, 1);
	assert_factor("s", 1, 1);
	assert_factor("ms", 1, 1000);
	assert_factor("us", 1, 1000000);
	assert_factor("\xc2\xb5s", 1, 1000000);
	assert_factor("ns", 1, 1000000000);
	assert_factor("min", 60, 1);
	assert_factor("h", 3600, 1);
	assert_factor("TFLOP", 1000000000000, 1);
	assert_factor("Pflop", 1000000000000000, 1);
	assert_factor("TFLOPS", 1000000000000, 1);
	assert_true(dim_eq(lookup("TFLOPS").dim, DIM_THROUGHPUT));
	assert_true(dim_eq(lookup("EFLOP").dim, DIM_FLOP));
	assert_true(dim_eq(lookup("h").dim, DIM_SECONDS));
	assert_true(dim_eq(lookup("Mbit").dim, DIM_BYTES));
}

static void disallowed_prefixes_are_unknown(void **state)
{
	static const char *const bad[] = {
		"kmin", "Gh", "ks", "Ms", "mB", "nB", "KiFLOP", "mFLOPS", "KB",
		"gb", "b", "Kbit", "flops", "FLOPs", "", "GiBs",
	};
	struct unit_ref u;
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(unit_lookup(bad[i], &u));
}

static void every_unit_reduces_to_base_units(void **state)
{
	(void)state;
	/* factors positive and exact, dimensions in range: like `units --check` */
	assert_int_equal(unit_table_check(), 0);
}

struct listing {
	int count;
	bool saw_gibit, saw_kmin;
};

static void visit(const struct unit_ref *ref, void *ctx)
{
	struct listing *l = ctx;
	struct unit_ref again;

	l->count++;
	l->saw_gibit |= strcmp(ref->spelling, "Gibit") == 0;
	l->saw_kmin |= strcmp(ref->spelling, "kmin") == 0;
	/* every listed spelling looks up to itself */
	assert_true(unit_lookup(ref->spelling, &again));
	assert_ptr_equal(again.spelling, ref->spelling);
	assert_true(num_eq(again.factor, ref->factor));
}

static void listing_covers_every_spelling(void **state)
{
	struct listing l = { 0, false, false };
	(void)state;

	unit_list(visit, &l);
	/* B, bit: 13 each; s: 5; min, h: 1 each; FLOP, flop, FLOPS: 7 each */
	assert_int_equal(l.count, 13 * 2 + 5 + 2 + 7 * 3);
	assert_true(l.saw_gibit);
	assert_false(l.saw_kmin);
}

static void suggestions(void **state)
{
	(void)state;
	assert_string_equal(unit_suggest("GIB"), "GiB");
	assert_string_equal(unit_suggest("gib"), "GiB");
	assert_string_equal(unit_suggest("gb"), "GB");
	assert_string_equal(unit_suggest("KB"), "kB");
	assert_string_equal(unit_suggest("tflops"), "TFLOPS");
	assert_string_equal(unit_suggest("sec"), "s");
	assert_string_equal(unit_suggest("bytes"), "B");
	assert_string_equal(unit_suggest("Hours"), "h");
	assert_string_equal(unit_suggest("GiBs"), "GiB");
	assert_string_equal(unit_suggest("GIBs"), "GiB");
	assert_string_equal(unit_suggest("MIb"), "MiB");
	assert_string_equal(unit_suggest("TFLPOS"), "TFLOPS");
	assert_null(unit_suggest("x"));
	assert_null(unit_suggest("hidden"));
	assert_null(unit_suggest("layers"));
	assert_int_equal(unit_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(unit_edit_distance("ab", "ba"), 1);
	assert_int_equal(unit_edit_distance("", "abc"), 3);
}

static void dimension_arithmetic(void **state)
{
	struct dim d = DIM_BYTES, r;
	int base, power;
	(void)state;

	assert_true(dim_eq(dim_div(DIM_BYTES, DIM_SECONDS), DIM_BANDWIDTH));
	assert_true(dim_eq(dim_mul(DIM_BANDWIDTH, DIM_SECONDS), DIM_BYTES));
	assert_true(dim_is_scalar(dim_div(DIM_THROUGHPUT, DIM_THROUGHPUT)));
	assert_true(dim_eq(dim_inv(DIM_SECONDS), dim_div(DIM_SCALAR, DIM_SECONDS)));
	assert_true(dim_pow(d, 8, &r));
	assert_int_equal(r.e[DIM_INFO], 8);
	assert_false(dim_pow(d, 9, &r));
	assert_false(dim_pow(d, -9, &r));
	assert_true(dim_pow(DIM_BANDWIDTH, -2, &r));
	assert_int_equal(r.e[DIM_TIME], 2);
	r = DIM_SCALAR;
	r.e[DIM_OPS] = 8;
	assert_false(dim_is_valid(dim_mul(r, DIM_FLOP)));
	assert_true(dim_single_factor(DIM_SECONDS, &base, &power));
	assert_int_equal(base, DIM_TIME);
	assert_int_equal(power, 1);
	assert_false(dim_single_factor(DIM_BANDWIDTH, &base, &power));
	assert_false(dim_single_factor(DIM_SCALAR, &base, &power));
}

static void dimension_names(void **state)
{
	char buf[64];
	struct dim d = DIM_SCALAR;
	(void)state;

	assert_string_equal(dim_describe(DIM_SCALAR, buf, sizeof buf), "count");
	assert_string_equal(dim_describe(DIM_BYTES, buf, sizeof buf), "bytes");
	assert_string_equal(dim_describe(DIM_SECONDS, buf, sizeof buf), "seconds");
	assert_string_equal(dim_describe(DIM_FLOP, buf, sizeof buf), "flop");
	assert_string_equal(dim_describe(DIM_BANDWIDTH, buf, sizeof buf), "bytes/s (bandwidth)");
	assert_string_equal(dim_describe(DIM_THROUGHPUT, buf, sizeof buf), "flop/s (throughput)");
	d.e[DIM_INFO] = 2;
	d.e[DIM_TIME] = -1;
	assert_string_equal(dim_describe(d, buf, sizeof buf), "B^2/s");
	d.e[DIM_INFO] = -1;
	assert_string_equal(dim_describe(d, buf, sizeof buf), "1/(B*s)");
	d.e[DIM_INFO] = 1;
	d.e[DIM_TIME] = 1;
	assert_string_equal(dim_describe(d, buf, sizeof buf), "B*s");
	d.e[DIM_OPS] = -3;
	assert_string_equal(dim_describe(d, buf, sizeof buf), "B*s/FLOP^3");
	assert_string_equal(dim_symbol(DIM_SCALAR, buf, sizeof buf), "1");
	assert_string_equal(dim_symbol(DIM_BANDWIDTH, buf, sizeof buf), "B/s");
	/* truncation keeps the buffer terminated */
	assert_string_equal(dim_describe(DIM_BANDWIDTH, buf, 6), "bytes");
}

static void hints(void **state)
{
	char buf[96];
	struct dim b2 = DIM_SCALAR;
	(void)state;

	assert_string_equal(dim_fix_hint(DIM_BYTES, DIM_SCALAR, buf, sizeof buf),
			    "multiply by a dtype size (e.g. bf16.size)");
	assert_string_equal(dim_fix_hint(DIM_BANDWIDTH, DIM_BYTES, buf, sizeof buf),
			    "divide by a duration (e.g. / s)");
	assert_string_equal(dim_fix_hint(DIM_BYTES, DIM_BANDWIDTH, buf, sizeof buf),
			    "multiply by a duration (e.g. a time in s)");
	assert_string_equal(dim_fix_hint(DIM_SCALAR, DIM_BYTES, buf, sizeof buf),
			    "divide by a size in bytes");
	assert_string_equal(dim_fix_hint(DIM_SECONDS, dim_inv(DIM_SECONDS), buf, sizeof buf),
			    "the expression looks inverted");
	assert_string_equal(dim_fix_hint(DIM_THROUGHPUT, DIM_FLOP, buf, sizeof buf),
			    "divide by a duration (e.g. / s)");
	b2.e[DIM_INFO] = 2;
	assert_string_equal(dim_fix_hint(b2, DIM_SCALAR, buf, sizeof buf), "multiply by B^2");
	assert_null(dim_fix_hint(DIM_BYTES, DIM_BYTES, buf, sizeof buf));
	assert_null(dim_fix_hint(DIM_BYTES, DIM_THROUGHPUT, buf, sizeof buf));
	assert_string_equal(dim_literal_hint(DIM_BYTES, buf, sizeof buf), "add a unit such as GiB");
	assert_string_equal(dim_literal_hint(DIM_BANDWIDTH, buf, sizeof buf),
			    "add a unit such as TB/s");
	assert_string_equal(dim_literal_hint(b2, buf, sizeof buf), "add a unit such as B^2");
	assert_null(dim_literal_hint(DIM_SCALAR, buf, sizeof buf));
}

static const char *fmt(int64_t n, int64_t d, struct dim dim, char *buf, size_t size)
{
	struct num v;

	assert_int_equal(num_make(n, d, &v), NUM_OK);
	return qty_format(v, dim, buf, size);
}

static void formatting(void **state)
{
	char buf[64];
	struct num v;
	struct dim b2 = DIM_SCALAR;
	(void)state;

	assert_string_equal(fmt(INT64_C(80) << 30, 1, DIM_BYTES, buf, sizeof buf), "80.00 GiB");
	assert_string_equal(fmt(512, 1, DIM_BYTES, buf, sizeof buf), "512 B");
	assert_string_equal(fmt(1, 2, DIM_BYTES, buf, sizeof buf), "0.50 B");
	assert_string_equal(fmt(0, 1, DIM_BYTES, buf, sizeof buf), "0 B");
	assert_string_equal(fmt(1536, 1, DIM_BYTES, buf, sizeof buf), "1.50 KiB");
	assert_string_equal(fmt(-1536, 1, DIM_BYTES, buf, sizeof buf), "-1.50 KiB");
	assert_string_equal(fmt(1023, 1, DIM_BYTES, buf, sizeof buf), "1023 B");
	assert_string_equal(fmt(1020 * 1024, 1, DIM_BYTES, buf, sizeof buf), "1020.00 KiB");
	assert_string_equal(fmt(1024 * 1024 - 1, 1, DIM_BYTES, buf, sizeof buf), "1.00 MiB");
	assert_string_equal(fmt(3340771328, 1, DIM_BYTES, buf, sizeof buf), "3.11 GiB");
	assert_string_equal(fmt(3350000000000, 1, DIM_BANDWIDTH, buf, sizeof buf), "3.35 TB/s");
	assert_string_equal(fmt(989000000000000, 1, DIM_THROUGHPUT, buf, sizeof buf),
			    "989.00 TFLOPS");
	assert_string_equal(fmt(INT64_MAX, 1, DIM_BYTES, buf, sizeof buf), "8.00 EiB");
	assert_string_equal(fmt(5040000000000000000, 1, DIM_FLOP, buf, sizeof buf), "5.04 EFLOP");
	assert_string_equal(fmt(3, 2000, DIM_SECONDS, buf, sizeof buf), "1.50 ms");
	assert_string_equal(fmt(-1, 3, DIM_SECONDS, buf, sizeof buf), "-333.33 ms");
	assert_string_equal(fmt(12, 1, DIM_SECONDS, buf, sizeof buf), "12 s");
	assert_string_equal(fmt(7200, 1, DIM_SECONDS, buf, sizeof buf), "7200 s");
	assert_string_equal(fmt(0, 1, DIM_SECONDS, buf, sizeof buf), "0 s");
	assert_string_equal(fmt(1, 4000000000, DIM_SECONDS, buf, sizeof buf), "0.25 ns");
	assert_string_equal(fmt(6476005376, 1, DIM_SCALAR, buf, sizeof buf), "6476005376");
	assert_string_equal(fmt(1, 10, DIM_SCALAR, buf, sizeof buf), "0.1");
	b2.e[DIM_INFO] = 2;
	b2.e[DIM_TIME] = -1;
	assert_string_equal(fmt(3, 1, b2, buf, sizeof buf), "3 B^2/s");
	assert_int_equal(num_make(INT64_C(80) << 30, 1, &v), NUM_OK);
	assert_string_equal(qty_format_si(v, DIM_BYTES, buf, sizeof buf), "85.90 GB");
	assert_string_equal(qty_format_si(v, DIM_BANDWIDTH, buf, sizeof buf), "85.90 GB/s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gib_is_two_to_the_thirty_bytes),
		cmocka_unit_test(factors_are_exact),
		cmocka_unit_test(disallowed_prefixes_are_unknown),
		cmocka_unit_test(every_unit_reduces_to_base_units),
		cmocka_unit_test(listing_covers_every_spelling),
		cmocka_unit_test(suggestions),
		cmocka_unit_test(dimension_arithmetic),
		cmocka_unit_test(dimension_names),
		cmocka_unit_test(hints),
		cmocka_unit_test(formatting),
	};
	return cmocka_run_group_tests_name("units", tests, setup_units, NULL);
}
