/* SPDX-License-Identifier: MIT */
/*
 * units.c - dimension arithmetic, the unit and prefix tables, spelling
 * lookup with did-you-mean, dimension names and quantity formatting.
 *
 * The spelling table is built by the preprocessor: every units.def row is
 * expanded against every prefix by string-literal concatenation ("Gi" "B"),
 * so all spellings exist as static strings without any start-up work or
 * mutable state. Rows whose prefix class the unit does not accept stay in
 * the array and are skipped by spelling_ok(); that costs a few dozen
 * entries and keeps the expansion a plain cross product. Lookups are a
 * linear scan over about 150 entries, cheap next to everything else done
 * per literal.
 */
#include "lang/str.h"
#include "lang/units.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lang/intern.h"

enum pfx_class {
	PFX_NONE = 0,		/* the empty prefix; every unit accepts it */
	PFX_SI = 1 << 0,	/* k M G T P E */
	PFX_SI_SUB = 1 << 1,	/* m u n µ */
	PFX_IEC = 1 << 2,	/* Ki Mi Gi Ti Pi Ei */
};

/*
 * PREFIXES(P, sym, uid): P(id, text, class, factor_num, factor_den, sym, uid)
 * The order here is the order of unit_list(). "u" is the ASCII spelling of
 * micro; "\xc2\xb5" is U+00B5 MICRO SIGN in UTF-8, for when the lexer
 * accepts non-ASCII identifiers.
 */
#define PREFIXES(P, sym, uid)							\
	P(NONE,  "",         PFX_NONE,   1,                   1,          sym, uid) \
	P(KILO,  "k",        PFX_SI,     1000,                1,          sym, uid) \
	P(MEGA,  "M",        PFX_SI,     1000000,             1,          sym, uid) \
	P(GIGA,  "G",        PFX_SI,     1000000000,          1,          sym, uid) \
	P(TERA,  "T",        PFX_SI,     1000000000000,       1,          sym, uid) \
	P(PETA,  "P",        PFX_SI,     1000000000000000,    1,          sym, uid) \
	P(EXA,   "E",        PFX_SI,     1000000000000000000, 1,          sym, uid) \
	P(MILLI, "m",        PFX_SI_SUB, 1,                   1000,       sym, uid) \
	P(MICRO, "u",        PFX_SI_SUB, 1,                   1000000,    sym, uid) \
	P(NANO,  "n",        PFX_SI_SUB, 1,                   1000000000, sym, uid) \
	P(MICRO_SIGN, "\xc2\xb5", PFX_SI_SUB, 1,              1000000,    sym, uid) \
	P(KIBI,  "Ki",       PFX_IEC,    INT64_C(1) << 10,    1,          sym, uid) \
	P(MEBI,  "Mi",       PFX_IEC,    INT64_C(1) << 20,    1,          sym, uid) \
	P(GIBI,  "Gi",       PFX_IEC,    INT64_C(1) << 30,    1,          sym, uid) \
	P(TEBI,  "Ti",       PFX_IEC,    INT64_C(1) << 40,    1,          sym, uid) \
	P(PEBI,  "Pi",       PFX_IEC,    INT64_C(1) << 50,    1,          sym, uid) \
	P(EXBI,  "Ei",       PFX_IEC,    INT64_C(1) << 60,    1,          sym, uid)

enum prefix_id {
#define P(id, text, cls, fn, fd, sym, uid) PREFIX_##id,
	PREFIXES(P, , )
#undef P
	PREFIX__COUNT
};

enum unit_id {
#define UNIT(id, sym, name, i, t, o, fn, fd, pfx) UNIT_##id,
#include "lang/units.def"
#undef UNIT
	UNIT__COUNT
};

struct prefix_row {
	const char *text;
	unsigned cls;		/* enum pfx_class; PFX_NONE = always allowed */
	struct num factor;	/* exact, in lowest terms (checked by unit_table_check) */
};

struct unit_row {
	const char *symbol, *long_name;
	int8_t e[DIM__COUNT];
	struct num factor;
	unsigned prefixes;	/* OR of enum pfx_class */
};

struct spelling {
	const char *text;	/* prefix text immediately followed by the symbol */
	uint8_t unit;		/* enum unit_id */
	uint8_t prefix;		/* enum prefix_id */
};

static const struct prefix_row prefix_table[] = {
#define P(id, text, cls, fn, fd, sym, uid) { text, cls, { fn, fd } },
	PREFIXES(P, , )
#undef P
};

static const struct unit_row unit_table[] = {
#define UNIT(id, sym, name, i, t, o, fn, fd, pfx) { sym, name, { i, t, o }, { fn, fd }, pfx },
#include "lang/units.def"
#undef UNIT
};

static const struct spelling spelling_table[] = {
#define P(pid, text, cls, fn, fd, sym, uid) { text sym, UNIT_##uid, PREFIX_##pid },
#define UNIT(id, sym, name, i, t, o, fn, fd, pfx) PREFIXES(P, sym, id)
#include "lang/units.def"
#undef UNIT
#undef P
};

#define SPELLING_COUNT (sizeof spelling_table / sizeof spelling_table[0])

/* ---- dimensions ------------------------------------------------------- */

bool dim_is_valid(struct dim a)
{
	for (int i = 0; i < DIM__COUNT; i++)
		if (a.e[i] > DIM_EXP_MAX || a.e[i] < -DIM_EXP_MAX)
			return false;
	return true;
}

struct dim dim_mul(struct dim a, struct dim b)
{
	/* |a + b| <= 2 * DIM_EXP_MAX fits int8_t, so nothing wraps */
	assert(dim_is_valid(a) && dim_is_valid(b));
	for (int i = 0; i < DIM__COUNT; i++)
		a.e[i] = (int8_t)(a.e[i] + b.e[i]);
	return a;
}

struct dim dim_inv(struct dim a)
{
	assert(dim_is_valid(a));
	for (int i = 0; i < DIM__COUNT; i++)
		a.e[i] = (int8_t)-a.e[i];
	return a;
}

struct dim dim_div(struct dim a, struct dim b)
{
	return dim_mul(a, dim_inv(b));
}

bool dim_pow(struct dim a, int k, struct dim *out)
{
	struct dim r;

	assert(dim_is_valid(a));
	for (int i = 0; i < DIM__COUNT; i++) {
		long long v = (long long)a.e[i] * k;

		if (v > DIM_EXP_MAX || v < -DIM_EXP_MAX)
			return false;
		r.e[i] = (int8_t)v;
	}
	*out = r;
	return true;
}

bool dim_eq(struct dim a, struct dim b)
{
	return memcmp(a.e, b.e, sizeof a.e) == 0;
}

bool dim_is_scalar(struct dim a)
{
	return dim_eq(a, DIM_SCALAR);
}

bool dim_single_factor(struct dim a, int *base, int *power)
{
	int found = -1;

	for (int i = 0; i < DIM__COUNT; i++) {
		if (a.e[i] == 0)
			continue;
		if (found >= 0)
			return false;
		found = i;
	}
	if (found < 0)
		return false;
	*base = found;
	*power = a.e[found];
	return true;
}

const char *dim_base_name(int base)
{
	static const char *const names[DIM__COUNT] = { "bytes", "seconds", "flop" };

	assert(base >= 0 && base < DIM__COUNT);
	return names[base];
}

const char *dim_base_symbol(int base)
{
	static const char *const symbols[DIM__COUNT] = { "B", "s", "FLOP" };

	assert(base >= 0 && base < DIM__COUNT);
	return symbols[base];
}

/* ---- describing dimensions -------------------------------------------- */

/* Bounded appender: keeps writing into @buf as snprintf would, remembering
 * how much fits. */
struct out {
	char *buf;
	size_t n, len;
};

__attribute__((format(printf, 2, 3)))
static void out_add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (o->n == 0)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->buf + o->len, o->n - o->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->len += (size_t)k < o->n - o->len ? (size_t)k : o->n - o->len - 1;
}

/* "B^2*s" for the bases whose exponent has sign @sign; returns the count. */
static int add_factors(struct out *o, struct dim d, int sign)
{
	int count = 0;

	for (int i = 0; i < DIM__COUNT; i++) {
		int p = d.e[i] * sign;

		if (p <= 0)
			continue;
		out_add(o, "%s%s", count++ ? "*" : "", dim_base_symbol(i));
		if (p > 1)
			out_add(o, "^%d", p);
	}
	return count;
}

const char *dim_symbol(struct dim d, char *buf, size_t n)
{
	struct out o = { buf, n, 0 };
	struct out probe = { NULL, 0, 0 };
	int num, den;

	if (n > 0)
		buf[0] = '\0';
	num = add_factors(&o, d, 1);
	den = add_factors(&probe, d, -1);	/* count only */
	if (num == 0)
		out_add(&o, "1");
	if (den > 0) {
		out_add(&o, den > 1 ? "/(" : "/");
		add_factors(&o, d, -1);
		if (den > 1)
			out_add(&o, ")");
	}
	return buf;
}

/* Print-only names of derived dimensions (Numbat's derived entries). */
static const struct {
	int8_t e[DIM__COUNT];	/* info, time, ops */
	const char *name;
} dim_names[] = {
	{ { 0, 0, 0 }, "count" },
	{ { 1, 0, 0 }, "bytes" },
	{ { 0, 1, 0 }, "seconds" },
	{ { 0, 0, 1 }, "flop" },
	{ { 1, -1, 0 }, "bytes/s (bandwidth)" },
	{ { 0, -1, 1 }, "flop/s (throughput)" },
	{ { -1, 0, 1 }, "flop/byte (arithmetic intensity)" },
	{ { 0, -1, 0 }, "1/s (rate)" },
};

const char *dim_describe(struct dim d, char *buf, size_t n)
{
	for (size_t i = 0; i < sizeof dim_names / sizeof dim_names[0]; i++) {
		if (memcmp(dim_names[i].e, d.e, sizeof d.e) == 0) {
			snprintf(buf, n, "%s", dim_names[i].name);
			return buf;
		}
	}
	return dim_symbol(d, buf, n);
}

/* ---- hints ------------------------------------------------------------ */

/* Wording for "want/got is base^+-1", indexed [base][power > 0]. */
static const char *const factor_hints[DIM__COUNT][2] = {
	[DIM_INFO] = { "divide by a size in bytes", "multiply by a dtype size (e.g. bf16.size)" },
	[DIM_TIME] = { "divide by a duration (e.g. / s)", "multiply by a duration (e.g. a time in s)" },
	[DIM_OPS] = { "divide by a flop count", "multiply by a flop count" },
};

const char *dim_fix_hint(struct dim want, struct dim got, char *buf, size_t n)
{
	struct dim delta;
	int base, power;

	if (dim_eq(want, got))
		return NULL;
	if (!dim_is_scalar(want) && dim_eq(got, dim_inv(want))) {
		snprintf(buf, n, "the expression looks inverted");
		return buf;
	}
	delta = dim_div(want, got);
	if (!dim_is_valid(delta) || !dim_single_factor(delta, &base, &power))
		return NULL;
	if (power == 1 || power == -1) {
		snprintf(buf, n, "%s", factor_hints[base][power > 0]);
	} else {
		struct dim mag = DIM_SCALAR;
		char sym[32];

		mag.e[base] = (int8_t)(power > 0 ? power : -power);
		snprintf(buf, n, "%s by %s", power > 0 ? "multiply" : "divide",
			 dim_symbol(mag, sym, sizeof sym));
	}
	return buf;
}

const char *dim_literal_hint(struct dim want, char *buf, size_t n)
{
	static const struct {
		int8_t e[DIM__COUNT];	/* info, time, ops */
		const char *example;
	} examples[] = {
		{ { 1, 0, 0 }, "GiB" },
		{ { 1, -1, 0 }, "TB/s" },
		{ { 0, -1, 1 }, "TFLOPS" },
		{ { 0, 1, 0 }, "s" },
		{ { 0, 0, 1 }, "FLOP" },
	};
	char sym[64];

	if (dim_is_scalar(want))
		return NULL;
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
		if (memcmp(want.e, examples[i].e, sizeof want.e) == 0) {
			snprintf(buf, n, "add a unit such as %s", examples[i].example);
			return buf;
		}
	}
	snprintf(buf, n, "add a unit such as %s", dim_symbol(want, sym, sizeof sym));
	return buf;
}

/* ---- spellings -------------------------------------------------------- */

static bool spelling_ok(const struct spelling *s)
{
	unsigned cls = prefix_table[s->prefix].cls;

	return cls == PFX_NONE || (unit_table[s->unit].prefixes & cls) != 0;
}

/* Fill @out for @s; false if the combined factor overflows (a table bug
 * that unit_table_check() reports). */
static bool spelling_ref(const struct spelling *s, struct unit_ref *out)
{
	const struct unit_row *u = &unit_table[s->unit];
	const struct prefix_row *p = &prefix_table[s->prefix];

	if (num_mul(u->factor, p->factor, &out->factor) != NUM_OK)
		return false;
	memcpy(out->dim.e, u->e, sizeof out->dim.e);
	out->spelling = s->text;
	out->prefix = p->text;
	out->unit = u->symbol;
	out->long_name = u->long_name;
	return true;
}

/* No spelling is longer (unit_table_check() holds the table to it). */
enum { UNIT_MAX_SPELLING = 8 };

/* The row of @spelling, or -1. Most names asked about are declarations'
 * and miss: the length rejects the long ones at once, the first byte
 * nearly all rows before a call to strcmp. */
static int spelling_index(const char *spelling)
{
	if (strnlen(spelling, UNIT_MAX_SPELLING + 1) > UNIT_MAX_SPELLING)
		return -1;
	for (size_t i = 0; i < SPELLING_COUNT; i++) {
		const struct spelling *s = &spelling_table[i];

		if (str_is(s->text, spelling) && spelling_ok(s))
			return (int)i;
	}
	return -1;
}

bool unit_lookup(const char *spelling, struct unit_ref *out)
{
	int i = spelling_index(spelling);

	return i >= 0 && spelling_ref(&spelling_table[i], out);
}

/* The memo holds the row + 1, or -1 for "not a unit". */
bool unit_lookup_in(const struct interner *in, const char *spelling, struct unit_ref *out)
{
	struct intern_memo *m = intern_memo(in, spelling);

	if (!m)
		return unit_lookup(spelling, out);
	if (m->unit == 0) {
		int i = spelling_index(spelling);

		m->unit = i >= 0 ? i + 1 : -1;
	}
	return m->unit > 0 && spelling_ref(&spelling_table[m->unit - 1], out);
}

void unit_list(unit_visit_fn *fn, void *ctx)
{
	/* Unit-major order, as in units.def, then prefix order. */
	for (size_t i = 0; i < SPELLING_COUNT; i++) {
		struct unit_ref ref;

		if (spelling_ok(&spelling_table[i]) && spelling_ref(&spelling_table[i], &ref))
			fn(&ref, ctx);
	}
}

/* ---- did you mean ----------------------------------------------------- */

/* Words people write for units that are not spellings (suggestions only). */
static const struct {
	const char *word, *spelling;
} unit_synonyms[] = {
	{ "byte", "B" }, { "bytes", "B" }, { "bits", "bit" },
	{ "sec", "s" }, { "secs", "s" }, { "second", "s" }, { "seconds", "s" },
	{ "msec", "ms" }, { "usec", "us" }, { "nsec", "ns" },
	{ "mins", "min" }, { "minute", "min" }, { "minutes", "min" },
	{ "hr", "h" }, { "hrs", "h" }, { "hour", "h" }, { "hours", "h" },
};

static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool same_char(char a, char b, bool fold)
{
	return fold ? ascii_lower((unsigned char)a) == ascii_lower((unsigned char)b) : a == b;
}

static bool same_ignoring_case(const char *a, const char *b)
{
	for (; *a && same_char(*a, *b, true); a++, b++)
		;
	return *a == '\0' && *b == '\0';
}

/* Optimal string alignment over three rolling rows of the matrix; @fold
 * compares ASCII letters ignoring case. */
static unsigned osa_distance(const char *a, const char *b, bool fold)
{
	unsigned rows[3][64], *prev2 = rows[0], *prev = rows[1], *cur = rows[2], *t;
	size_t la = strlen(a), lb = strlen(b);

	if (la >= 64 || lb >= 64)
		return UINT_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = prev[j - 1] + !same_char(a[i - 1], b[j - 1], fold);

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2], fold) &&
			    same_char(a[i - 2], b[j - 1], fold) && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

unsigned unit_edit_distance(const char *a, const char *b)
{
	return osa_distance(a, b, false);
}

/* Case slips are the commonest typo, so rank by the case-folded distance
 * and break ties with the exact one ("GIBs" -> "GiB", not "GB"). */
static const char *closest_spelling(const char *word)
{
	size_t len = strlen(word);
	unsigned limit = len / 2 < 2 ? (unsigned)(len / 2) : 2;
	unsigned best_fold = UINT_MAX, best_exact = UINT_MAX;
	const char *best = NULL;

	for (size_t i = 0; i < SPELLING_COUNT; i++) {
		const char *text = spelling_table[i].text;
		unsigned fold, exact;

		if (!spelling_ok(&spelling_table[i]))
			continue;
		fold = osa_distance(word, text, true);
		exact = osa_distance(word, text, false);
		if (fold <= limit && (fold < best_fold || (fold == best_fold && exact < best_exact))) {
			best = text;
			best_fold = fold;
			best_exact = exact;
		}
	}
	return best;
}

const char *unit_suggest(const char *spelling)
{
	for (size_t i = 0; i < SPELLING_COUNT; i++)
		if (spelling_ok(&spelling_table[i]) &&
		    same_ignoring_case(spelling, spelling_table[i].text))
			return spelling_table[i].text;
	for (size_t i = 0; i < sizeof unit_synonyms / sizeof unit_synonyms[0]; i++)
		if (same_ignoring_case(spelling, unit_synonyms[i].word))
			return unit_synonyms[i].spelling;
	return closest_spelling(spelling);
}

/* ---- self checks ------------------------------------------------------ */

int unit_table_init(void)
{
	int clashes = 0;

	for (size_t i = 0; i < SPELLING_COUNT; i++) {
		if (!spelling_ok(&spelling_table[i]))
			continue;
		for (size_t j = i + 1; j < SPELLING_COUNT; j++)
			if (spelling_ok(&spelling_table[j]) &&
			    strcmp(spelling_table[i].text, spelling_table[j].text) == 0)
				clashes++;
	}
	return clashes;
}

static bool positive_fraction(struct num f)
{
	struct num r;

	/* positive, and already in lowest terms (num_make would change it) */
	return f.n > 0 && f.d > 0 && num_make(f.n, f.d, &r) == NUM_OK && num_eq(r, f);
}

int unit_table_check(void)
{
	int problems = 0;
	struct unit_ref ref;

	for (size_t i = 0; i < UNIT__COUNT; i++) {
		struct dim d;

		memcpy(d.e, unit_table[i].e, sizeof d.e);
		problems += !positive_fraction(unit_table[i].factor) || !dim_is_valid(d) ||
			    unit_table[i].long_name[0] == '\0' || unit_table[i].symbol[0] == '\0';
	}
	for (size_t i = 0; i < PREFIX__COUNT; i++)
		problems += !positive_fraction(prefix_table[i].factor);
	for (size_t i = 0; i < SPELLING_COUNT; i++)
		if (spelling_ok(&spelling_table[i]))
			problems += !spelling_ref(&spelling_table[i], &ref) ||
				    strlen(spelling_table[i].text) > UNIT_MAX_SPELLING;
	/* synonyms must lead to real spellings and must not shadow one */
	for (size_t i = 0; i < sizeof unit_synonyms / sizeof unit_synonyms[0]; i++)
		problems += !unit_lookup(unit_synonyms[i].spelling, &ref) ||
			    unit_lookup(unit_synonyms[i].word, &ref);
	return problems;
}

/* ---- quantity formatting ---------------------------------------------- */

/* A family of display units, each @base times the previous one, starting
 * at @bottom base units. */
struct ladder {
	int8_t e[DIM__COUNT];		/* the dimension: info, time, ops */
	int64_t base;
	struct num bottom;
	int one;			/* index of the unit worth exactly 1 */
	const char *names[7];		/* NULL-terminated when shorter */
};

static const struct ladder ladder_table[] = {
	{ { 1, 0, 0 }, 1024, { 1, 1 }, 0, { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" } },
	{ { 1, -1, 0 }, 1000, { 1, 1 }, 0,
	  { "B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s" } },
	{ { 0, -1, 1 }, 1000, { 1, 1 }, 0,
	  { "FLOPS", "kFLOPS", "MFLOPS", "GFLOPS", "TFLOPS", "PFLOPS", "EFLOPS" } },
	{ { 0, 0, 1 }, 1000, { 1, 1 }, 0,
	  { "FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP" } },
	{ { 0, 1, 0 }, 1000, { 1, 1000000000 }, 3, { "ns", "us", "ms", "s" } },
};

static const struct ladder bytes_si = {
	{ 1, 0, 0 }, 1000, { 1, 1 }, 0, { "B", "kB", "MB", "GB", "TB", "PB", "EB" }
};

static int ladder_len(const struct ladder *l)
{
	int k = 0;

	while (k < 7 && l->names[k])
		k++;
	return k;
}

/* bottom * base^k, exact: the ladders stay far below 2^63. */
static struct num ladder_scale(const struct ladder *l, int k)
{
	struct num p = { 1, 1 }, s = { 1, 1 };
	bool ok = num_pow_int(num_from_int(l->base), k, &p) == NUM_OK &&
		  num_mul(l->bottom, p, &s) == NUM_OK;

	assert(ok);
	(void)ok;
	return s;
}

/* True if |v| / scale, rounded half up to two decimals, is at least
 * @limit, i.e. |v| / scale >= limit - 1/200. num_cmp() cannot overflow. */
static bool rounds_to_at_least(struct num v, struct num scale, int64_t limit)
{
	struct num s, threshold;

	if (num_div(num_abs(v), scale, &s) != NUM_OK ||
	    num_make(limit * 200 - 1, 200, &threshold) != NUM_OK)
		return false;
	return num_cmp(s, threshold) >= 0;
}

/* Climb while the value would print as @base or more on the current rung
 * ("1024.00 KiB" becomes "1.00 MiB"); zero prints in the unit worth 1. */
static int ladder_pick(const struct ladder *l, struct num v)
{
	int k = 0, len = ladder_len(l);

	if (num_is_zero(v))
		return l->one;
	while (k + 1 < len && rounds_to_at_least(v, ladder_scale(l, k), l->base))
		k++;
	return k;
}

static const char *ladder_format(const struct ladder *l, struct num v, char *buf, size_t n)
{
	int k = ladder_pick(l, v);
	struct num scale = ladder_scale(l, k), s;
	char digits[48];

	if (num_div(v, scale, &s) != NUM_OK) {
		/* only for values with huge denominators; doubles are fine there */
		snprintf(buf, n, "%.2f %s", num_to_double(v) / num_to_double(scale), l->names[k]);
		return buf;
	}
	if (k == l->one && num_is_int(s))
		num_format(s, digits, sizeof digits, 0);
	else
		num_format_fixed(s, digits, sizeof digits, 2);
	snprintf(buf, n, "%s %s", digits, l->names[k]);
	return buf;
}

static const char *format_plain(struct num v, struct dim d, char *buf, size_t n)
{
	char digits[48], sym[64];

	num_format(v, digits, sizeof digits, 6);
	if (dim_is_scalar(d))
		snprintf(buf, n, "%s", digits);
	else
		snprintf(buf, n, "%s %s", digits, dim_symbol(d, sym, sizeof sym));
	return buf;
}

const char *qty_format(struct num value, struct dim d, char *buf, size_t n)
{
	for (size_t i = 0; i < sizeof ladder_table / sizeof ladder_table[0]; i++)
		if (memcmp(d.e, ladder_table[i].e, sizeof d.e) == 0)
			return ladder_format(&ladder_table[i], value, buf, n);
	return format_plain(value, d, buf, n);
}

const char *qty_format_si(struct num value, struct dim d, char *buf, size_t n)
{
	if (dim_eq(d, DIM_BYTES))
		return ladder_format(&bytes_si, value, buf, n);
	return qty_format(value, d, buf, n);
}
