/* SPDX-License-Identifier: MIT */
/*
 * num.h - exact rational numbers with checked arithmetic.
 *
 * memc's parameter counts and byte totals must be exact, and an overflow must
 * be reported, never wrapped. A struct num is a fraction n/d of two int64_t.
 *
 * Invariants of every struct num produced by this module:
 *  - d > 0 and gcd(|n|, d) == 1, so equal values have equal representations;
 *    zero is 0/1.
 *  - n != INT64_MIN, so negation and absolute values never overflow. The
 *    representable range is therefore +-(2^63 - 1).
 *
 * Checked operations return enum num_status; NUM_OK is 0, so test with
 * `if (num_add(a, b, &r) != NUM_OK)`. On failure *out is left unchanged.
 * Nothing here allocates or keeps state.
 */
#ifndef MEMC_LANG_NUM_H
#define MEMC_LANG_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct num {
	int64_t n;	/* numerator, carries the sign */
	int64_t d;	/* denominator, always > 0 */
};

enum num_status {
	NUM_OK = 0,
	NUM_OVERFLOW,	/* the exact result does not fit in int64_t/int64_t */
	NUM_DIV_ZERO,	/* division by zero, or zero to a negative power */
	NUM_INVALID,	/* num_parse(): not a decimal literal */
};

/* "ok", "overflow", "division by zero", "invalid number". */
const char *num_status_str(enum num_status st);

/* @v must not be INT64_MIN (asserted). */
struct num num_from_int(int64_t v);
/* n/d reduced to lowest terms; NUM_DIV_ZERO if d == 0. */
enum num_status num_make(int64_t n, int64_t d, struct num *out);
enum num_status num_from_u64(uint64_t v, struct num *out);

enum num_status num_add(struct num a, struct num b, struct num *out);
enum num_status num_sub(struct num a, struct num b, struct num *out);
enum num_status num_mul(struct num a, struct num b, struct num *out);
enum num_status num_div(struct num a, struct num b, struct num *out);
/* Never fails, thanks to the INT64_MIN invariant. */
struct num num_neg(struct num a);
struct num num_abs(struct num a);
/* base^exp for any int exponent; a negative one takes the reciprocal. */
enum num_status num_pow_int(struct num base, int exp, struct num *out);

/* -1, 0 or 1. Exact (no cross-multiplication, so it cannot overflow). */
int num_cmp(struct num a, struct num b);
bool num_eq(struct num a, struct num b);
bool num_is_int(struct num a);
bool num_is_zero(struct num a);
int num_sign(struct num a);
struct num num_min(struct num a, struct num b);
struct num num_max(struct num a, struct num b);
/* Rounding to an integer; the result always fits. */
struct num num_floor(struct num a);
struct num num_ceil(struct num a);
/* The integer value, if @a is an integer. */
bool num_to_int(struct num a, int64_t *out);
/* The integer value, if @a is a non-negative integer. */
bool num_to_u64(struct num a, uint64_t *out);
/* Nearest double (may round; for reports and ratios only). */
double num_to_double(struct num a);

/*
 * Parse a decimal literal of exactly @len bytes at @text:
 *   digits ["." digits] [("e"|"E") ["+"|"-"] digits]
 * where a single "_" may separate two digits of the integer or fraction part
 * ("1_000_000"). Examples: 80, 3.35, 85.899345920, 70e9, 1.5e-3, 2.039E12.
 * No sign, no hex, no leading or trailing ".". NUM_INVALID on bad syntax,
 * NUM_OVERFLOW when the exact value (numerator or denominator in lowest
 * terms) does not fit.
 */
enum num_status num_parse(const char *text, size_t len, struct num *out);

/*
 * Format @a into @buf (snprintf truncation rules; always NUL-terminated when
 * @n > 0) and return @buf.
 *
 * num_format():       integers exactly ("6476005376", "-3"); other values
 *                     rounded half away from zero to at most @max_decimals
 *                     digits with trailing zeros trimmed ("0.333", "4.5").
 * num_format_fixed(): exactly @decimals digits ("80.00", "3.35", "2").
 * Uses integer arithmetic only, so the output never depends on locale or
 * floating-point rounding. A value that rounds to zero prints as "0", never
 * "-0". @max_decimals / @decimals are clamped to 0..30.
 */
char *num_format(struct num a, char *buf, size_t n, int max_decimals);
char *num_format_fixed(struct num a, char *buf, size_t n, int decimals);

/* The greatest common divisor; gcd(0, b) = b. */
uint64_t num_gcd_u64(uint64_t a, uint64_t b);

#endif
