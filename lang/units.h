/* SPDX-License-Identifier: MIT */
/*
 * units.h - dimensions, units and prefixes, and quantity formatting.
 *
 * A dimension is a vector of small integer exponents over three base
 * dimensions: information (bytes), time (seconds) and operations (FLOP).
 * All zeros is Scalar: counts, ratios and percentages are dimensionless, so
 * that `12 * layers * hidden^2` is a plain number. Bandwidth is B/s and
 * throughput FLOP/s; their names exist only for printing.
 *
 * Units come from the constant table in units.def, expanded with SI and IEC
 * prefixes at compile time. Looking up a spelling ("GiB", "ms", "TFLOPS")
 * gives its dimension and its exact size in base units. This module has no
 * state: unit_table_init() only verifies the table, it allocates nothing.
 *
 * What it does not do: parse unit expressions ("TB/s" is `TB / s`, handled
 * by the parser and checker), or decide which diagnostic to emit; it only
 * supplies dimension names and short hints.
 *
 * Invariant: a struct dim handed to any function here is valid, i.e. every
 * exponent is within +-DIM_EXP_MAX (asserted). Results of dim_mul/dim_div
 * may leave that range (never wrap); check them with dim_is_valid().
 */
#ifndef MEMC_LANG_UNITS_H
#define MEMC_LANG_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/num.h"

enum base_dim { DIM_INFO, DIM_TIME, DIM_OPS, DIM__COUNT };

/* Larger exponents are rejected with a located error by the checker. */
#define DIM_EXP_MAX 8

/* Exponents over the base dimensions. A value type: copy it, compare it
 * with dim_eq(). */
struct dim {
	int8_t e[DIM__COUNT];
};

#define DIM_SCALAR	((struct dim){ .e = { 0 } })
#define DIM_OF(base)	((struct dim){ .e = { [DIM_##base] = 1 } })
#define DIM_BYTES	DIM_OF(INFO)
#define DIM_SECONDS	DIM_OF(TIME)
#define DIM_FLOP	DIM_OF(OPS)
#define DIM_BANDWIDTH	((struct dim){ .e = { [DIM_INFO] = 1, [DIM_TIME] = -1 } })
#define DIM_THROUGHPUT	((struct dim){ .e = { [DIM_OPS] = 1, [DIM_TIME] = -1 } })

struct dim dim_mul(struct dim a, struct dim b);
struct dim dim_div(struct dim a, struct dim b);
struct dim dim_inv(struct dim a);
/* a^k; false (and *out untouched) if an exponent would leave +-DIM_EXP_MAX. */
bool dim_pow(struct dim a, int k, struct dim *out);
bool dim_eq(struct dim a, struct dim b);
bool dim_is_scalar(struct dim a);
bool dim_is_valid(struct dim a);
/* True if @a is base^power for exactly one base (power != 0). */
bool dim_single_factor(struct dim a, int *base, int *power);
/* "bytes", "seconds", "flop" for DIM_INFO, DIM_TIME, DIM_OPS. */
const char *dim_base_name(int base);
/* "B", "s", "FLOP". */
const char *dim_base_symbol(int base);

/*
 * Human name of @d, written to @buf (size @n) and returned:
 *   count, bytes, seconds, flop, bytes/s (bandwidth), flop/s (throughput),
 *   flop/byte (arithmetic intensity), 1/s (rate)
 * and otherwise a composed symbol string such as "B^2/s", "B*s",
 * "1/(B*s)", "FLOP/s^2" (base order B, s, FLOP).
 */
const char *dim_describe(struct dim d, char *buf, size_t n);
/* Always the composed form: "B/s", "FLOP/s", "1" for Scalar. */
const char *dim_symbol(struct dim d, char *buf, size_t n);

/*
 * A short hint for an expression of dimension @got where @want is needed,
 * or NULL when nothing simple fits (or want == got). Written to @buf:
 *   "the expression looks inverted"                  got == 1/want
 *   "multiply by a dtype size (e.g. bf16.size)"      want/got == B
 *   "divide by a size in bytes"                      want/got == 1/B
 *   "multiply by a duration (e.g. a time in s)"      want/got == s
 *   "divide by a duration (e.g. / s)"                want/got == 1/s
 *   "multiply by a flop count"                       want/got == FLOP
 *   "divide by a flop count"                         want/got == 1/FLOP
 *   "multiply by B^2"                                other single-base deltas
 * The checker words the note, e.g. "did you forget to %s?".
 */
const char *dim_fix_hint(struct dim want, struct dim got, char *buf, size_t n);
/*
 * The hint for a bare number where @want (not Scalar) is needed:
 * "add a unit such as GiB" (bytes), "... TB/s" (bandwidth), "... TFLOPS"
 * (throughput), "... s" (time), "... FLOP" (flop), otherwise "... <symbol>".
 * NULL when @want is Scalar.
 */
const char *dim_literal_hint(struct dim want, char *buf, size_t n);

/* What a unit spelling means. All strings have static storage. */
struct interner;

struct unit_ref {
	struct dim dim;
	struct num factor;	/* one of this unit in base units: GiB -> 2^30 */
	const char *spelling;	/* canonical spelling: "GiB" */
	const char *prefix;	/* "Gi", or "" */
	const char *unit;	/* the unprefixed symbol: "B" */
	const char *long_name;	/* "byte" */
};

/* Look up an exact (case-sensitive) spelling: "GiB", "ms", "TFLOPS".
 * False for unknown spellings and for disallowed prefixes ("kmin"). */
bool unit_lookup(const char *spelling, struct unit_ref *out);
/* unit_lookup() of an interned spelling, searching the table once per
 * name and compilation (struct intern_memo); any other string is looked
 * up as by unit_lookup(). */
bool unit_lookup_in(const struct interner *in, const char *spelling, struct unit_ref *out);
/*
 * Did-you-mean for an unknown spelling: a case-insensitive exact match
 * first ("GIB" -> "GiB", "gb" -> "GB"), then a few common words ("sec" ->
 * "s", "bytes" -> "B"), then the closest spelling within edit distance 2
 * (at most half the length of @spelling, so one-letter typos of one-letter
 * names do not produce noise). NULL if nothing is close. Static storage.
 */
const char *unit_suggest(const char *spelling);

/* Callback for unit_list(); @ref is only valid during the call. */
typedef void unit_visit_fn(const struct unit_ref *ref, void *ctx);
/* Visit every valid spelling in table order (units.def row order, then
 * prefix order: none, k M G T P E, m u n µ, Ki Mi Gi Ti Pi Ei). */
void unit_list(unit_visit_fn *fn, void *ctx);

/* Verify that every allowed spelling is unique. Returns the number of
 * clashing pairs (0 = fine). Keeps no state; main may call it at startup. */
int unit_table_init(void);
/* `units --check`: every unit and prefixed factor positive and exact,
 * every dimension valid. Returns the number of problems (0 = fine). */
int unit_table_check(void);

/*
 * Optimal-string-alignment distance (insertions, deletions, substitutions,
 * adjacent transpositions), the metric of the did-you-mean helpers here and
 * in dtypes.c. Strings longer than 63 bytes compare as "far" (UINT_MAX).
 */
unsigned unit_edit_distance(const char *a, const char *b);

/*
 * Format a quantity given in base units, deterministically:
 *   bytes       IEC, 2 decimals:  "80.00 GiB", "1.50 KiB", "512 B"
 *   bandwidth   SI:               "3.35 TB/s"
 *   throughput  SI:               "989.00 TFLOPS"
 *   flop        SI:               "5.04 EFLOP"
 *   seconds     s, ms, us, ns:    "1.50 ms", "12 s", "7200 s"
 *   Scalar      plainly, exact integers, else up to 6 decimals: "6476005376"
 *   other       "3 B^2/s"
 * The unprefixed unit prints an integer value without decimals ("512 B").
 * The prefix is the largest one not exceeding |value| after rounding to two
 * decimals (1023.999 KiB prints as "1.00 MiB"). Returns @buf.
 */
const char *qty_format(struct num value, struct dim d, char *buf, size_t n);
/* As qty_format(), but bytes use SI prefixes ("85.90 GB"): for --si. */
const char *qty_format_si(struct num value, struct dim d, char *buf, size_t n);

#endif
