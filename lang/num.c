/* SPDX-License-Identifier: MIT */
/*
 * num.c - exact rationals over int64_t with overflow detection.
 *
 * Every result goes through reduce(), which works on unsigned magnitudes so
 * that an intermediate INT64_MIN or a negative denominator cannot trap, and
 * which rejects any result whose terms do not fit. Addition follows Knuth
 * (TAOCP 4.5.1): divide out gcd(denominators) first, so that the
 * intermediate products stay as small as the exact answer allows.
 * Multiplication cross-cancels before multiplying for the same reason.
 * Comparison walks the continued fraction instead of cross-multiplying.
 * Overflow checks use the gcc/clang __builtin_*_overflow family.
 */
#include "lang/num.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define NUM_MAX_DECIMALS 30

uint64_t num_gcd_u64(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static uint64_t mag(int64_t v)
{
	/* Well defined for INT64_MIN too: the negation happens in uint64_t. */
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/* Build n/d (d != 0) in lowest terms with d > 0; both magnitudes must then
 * fit in [0, INT64_MAX]. */
static enum num_status reduce(uint64_t un, uint64_t ud, bool negative, struct num *out)
{
	uint64_t g;

	if (ud == 0)
		return NUM_DIV_ZERO;
	if (un == 0) {
		*out = (struct num){ 0, 1 };
		return NUM_OK;
	}
	g = num_gcd_u64(un, ud);
	un /= g;
	ud /= g;
	if (un > INT64_MAX || ud > INT64_MAX)
		return NUM_OVERFLOW;
	out->n = negative ? -(int64_t)un : (int64_t)un;
	out->d = (int64_t)ud;
	return NUM_OK;
}

const char *num_status_str(enum num_status st)
{
	switch (st) {
	case NUM_OK:		return "ok";
	case NUM_OVERFLOW:	return "overflow";
	case NUM_DIV_ZERO:	return "division by zero";
	case NUM_INVALID:	return "invalid number";
	}
	return "?";
}

struct num num_from_int(int64_t v)
{
	assert(v != INT64_MIN);
	return (struct num){ v, 1 };
}

enum num_status num_make(int64_t n, int64_t d, struct num *out)
{
	return reduce(mag(n), mag(d), (n < 0) != (d < 0), out);
}

enum num_status num_from_u64(uint64_t v, struct num *out)
{
	return reduce(v, 1, false, out);
}

enum num_status num_add(struct num a, struct num b, struct num *out)
{
	/* a.n/a.d + b.n/b.d with g = gcd(a.d, b.d):
	 * t = a.n*(b.d/g) + b.n*(a.d/g);  result = (t/g2) / ((a.d/g)*(b.d/g2))
	 * where g2 = gcd(t, g). */
	int64_t g = (int64_t)num_gcd_u64((uint64_t)a.d, (uint64_t)b.d);
	int64_t x, y, t, den;
	int64_t g2;

	if (__builtin_mul_overflow(a.n, b.d / g, &x) ||
	    __builtin_mul_overflow(b.n, a.d / g, &y) ||
	    __builtin_add_overflow(x, y, &t))
		return NUM_OVERFLOW;
	g2 = (int64_t)num_gcd_u64(mag(t), (uint64_t)g);	/* >= 1 since g >= 1 */
	if (__builtin_mul_overflow(a.d / g, b.d / g2, &den))
		return NUM_OVERFLOW;
	return reduce(mag(t / g2), (uint64_t)den, t < 0, out);
}

enum num_status num_sub(struct num a, struct num b, struct num *out)
{
	return num_add(a, num_neg(b), out);
}

enum num_status num_mul(struct num a, struct num b, struct num *out)
{
	/* Cross-cancel: (a.n/g1 * b.n/g2) / (a.d/g2 * b.d/g1). */
	uint64_t g1 = num_gcd_u64(mag(a.n), (uint64_t)b.d);
	uint64_t g2 = num_gcd_u64(mag(b.n), (uint64_t)a.d);
	uint64_t n, d;

	if (a.n == 0 || b.n == 0) {
		*out = (struct num){ 0, 1 };
		return NUM_OK;
	}
	if (__builtin_mul_overflow(mag(a.n) / g1, mag(b.n) / g2, &n) ||
	    __builtin_mul_overflow((uint64_t)a.d / g2, (uint64_t)b.d / g1, &d))
		return NUM_OVERFLOW;
	return reduce(n, d, (a.n < 0) != (b.n < 0), out);
}

static enum num_status reciprocal(struct num a, struct num *out)
{
	if (a.n == 0)
		return NUM_DIV_ZERO;
	*out = a.n < 0 ? (struct num){ -a.d, -a.n } : (struct num){ a.d, a.n };
	return NUM_OK;
}

enum num_status num_div(struct num a, struct num b, struct num *out)
{
	struct num r;
	enum num_status st = reciprocal(b, &r);

	return st != NUM_OK ? st : num_mul(a, r, out);
}

struct num num_neg(struct num a)
{
	return (struct num){ -a.n, a.d };
}

struct num num_abs(struct num a)
{
	return a.n < 0 ? num_neg(a) : a;
}

enum num_status num_pow_int(struct num base, int exp, struct num *out)
{
	struct num acc = { 1, 1 };
	long long e = exp;
	enum num_status st;

	if (e < 0) {
		if ((st = reciprocal(base, &base)) != NUM_OK)
			return st;
		e = -e;
	}
	/* Square and multiply; every step is checked. The final squaring is
	 * skipped so that it cannot report a spurious overflow. */
	while (e > 0) {
		if ((e & 1) && (st = num_mul(acc, base, &acc)) != NUM_OK)
			return st;
		e >>= 1;
		if (e > 0 && (st = num_mul(base, base, &base)) != NUM_OK)
			return st;
	}
	*out = acc;
	return NUM_OK;
}

/* Compare a/b with c/d for a, c >= 0 and b, d > 0 by comparing integer
 * parts, then the fractional parts through their reciprocals: the
 * continued-fraction expansion, with no products at all. */
static int cmp_nonneg(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	for (;;) {
		uint64_t qa = a / b, qc = c / d, ra = a % b, rc = c % d;

		if (qa != qc)
			return qa < qc ? -1 : 1;
		if (ra == 0 || rc == 0)
			return ra == rc ? 0 : (ra == 0 ? -1 : 1);
		/* ra/b < rc/d  <=>  b/ra > d/rc  <=>  d/rc < b/ra */
		a = d;
		c = b;
		b = rc;
		d = ra;
	}
}

int num_cmp(struct num a, struct num b)
{
	int sa = num_sign(a), sb = num_sign(b);

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (sa == 0)
		return 0;
	if (sa > 0)
		return cmp_nonneg(mag(a.n), (uint64_t)a.d, mag(b.n), (uint64_t)b.d);
	return -cmp_nonneg(mag(a.n), (uint64_t)a.d, mag(b.n), (uint64_t)b.d);
}

bool num_eq(struct num a, struct num b)
{
	return a.n == b.n && a.d == b.d;	/* representations are canonical */
}

bool num_is_int(struct num a)
{
	return a.d == 1;
}

bool num_is_zero(struct num a)
{
	return a.n == 0;
}

int num_sign(struct num a)
{
	return (a.n > 0) - (a.n < 0);
}

struct num num_min(struct num a, struct num b)
{
	return num_cmp(a, b) <= 0 ? a : b;
}

struct num num_max(struct num a, struct num b)
{
	return num_cmp(a, b) >= 0 ? a : b;
}

struct num num_floor(struct num a)
{
	int64_t q = a.n / a.d;	/* truncates toward zero */

	if (a.n < 0 && a.n % a.d != 0)
		q--;
	return (struct num){ q, 1 };
}

struct num num_ceil(struct num a)
{
	int64_t q = a.n / a.d;

	if (a.n > 0 && a.n % a.d != 0)
		q++;
	return (struct num){ q, 1 };
}

bool num_to_int(struct num a, int64_t *out)
{
	if (a.d != 1)
		return false;
	*out = a.n;
	return true;
}

bool num_to_u64(struct num a, uint64_t *out)
{
	if (a.d != 1 || a.n < 0)
		return false;
	*out = (uint64_t)a.n;
	return true;
}

double num_to_double(struct num a)
{
	return (double)a.n / (double)a.d;
}

/* ---- parsing ---------------------------------------------------------- */

/* Cursor over the literal being parsed. */
struct lit {
	const char *p, *end;
	uint64_t mant;		/* significant digits read so far */
	int64_t scale;		/* value = mant * 10^scale */
	int64_t zeros;		/* fraction zeros not yet folded into mant */
	bool overflow;
};

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Append one significant digit. */
static void push_digit(struct lit *l, int dig)
{
	l->overflow |= __builtin_mul_overflow(l->mant, 10, &l->mant) ||
		       __builtin_add_overflow(l->mant, (uint64_t)dig, &l->mant);
}

/* Read digits with single underscores between them. In the fraction (@frac)
 * each digit lowers the scale, but zeros are held back in l->zeros and only
 * folded in when a non-zero digit follows, so trailing zeros cost nothing
 * ("1.000000000000000000000" does not overflow). False on a syntax error. */
static bool read_digits(struct lit *l, bool frac)
{
	if (l->p == l->end || !is_digit(*l->p))
		return false;
	while (l->p < l->end && is_digit(*l->p)) {
		int dig = *l->p++ - '0';

		if (frac && dig == 0) {
			l->zeros++;
		} else {
			for (; l->zeros > 0; l->zeros--, l->scale--)
				push_digit(l, 0);
			push_digit(l, dig);
			l->scale -= frac;
		}
		if (l->p + 1 < l->end && *l->p == '_' && is_digit(l->p[1]))
			l->p++;
	}
	return true;
}

/* Read an exponent's digits (no underscores), saturating at a bound that is
 * far beyond any representable power of ten. */
static bool read_exponent(struct lit *l, int64_t *exp)
{
	bool neg = false;

	if (l->p < l->end && (*l->p == '+' || *l->p == '-'))
		neg = *l->p++ == '-';
	if (l->p == l->end || !is_digit(*l->p))
		return false;
	for (*exp = 0; l->p < l->end && is_digit(*l->p); l->p++)
		if (*exp < 100000)
			*exp = *exp * 10 + (*l->p - '0');
	if (neg)
		*exp = -*exp;
	return true;
}

/* mant * 10^scale as a reduced fraction. */
static enum num_status lit_value(const struct lit *l, struct num *out)
{
	struct num ten = { 10, 1 }, m, p;
	enum num_status st;

	if (l->overflow)
		return NUM_OVERFLOW;
	if (l->mant == 0) {
		*out = (struct num){ 0, 1 };
		return NUM_OK;
	}
	if (l->scale > 40 || l->scale < -40)
		return NUM_OVERFLOW;	/* 10^19 is already out of range */
	if ((st = num_from_u64(l->mant, &m)) != NUM_OK ||
	    (st = num_pow_int(ten, (int)l->scale, &p)) != NUM_OK)
		return st;
	return num_mul(m, p, out);
}

enum num_status num_parse(const char *text, size_t len, struct num *out)
{
	struct lit l = { .p = text, .end = text + len };
	int64_t exp = 0;

	if (!read_digits(&l, false))
		return NUM_INVALID;
	if (l.p < l.end && *l.p == '.') {
		l.p++;
		if (!read_digits(&l, true))
			return NUM_INVALID;
	}
	if (l.p < l.end && (*l.p == 'e' || *l.p == 'E')) {
		l.p++;
		if (!read_exponent(&l, &exp))
			return NUM_INVALID;
	}
	if (l.p != l.end)
		return NUM_INVALID;
	l.scale += exp;
	return lit_value(&l, out);
}

/* ---- formatting ------------------------------------------------------- */

/* Next decimal digit of r/d (r < d): returns floor(10r/d) and sets *r to
 * 10r mod d. Repeated addition keeps every intermediate below 2d < 2^64. */
static int next_digit(uint64_t *r, uint64_t d)
{
	uint64_t t = 0;
	int digit = 0;

	for (int k = 0; k < 10; k++) {
		t += *r;
		if (t >= d) {
			t -= d;
			digit++;
		}
	}
	*r = t;
	return digit;
}

/* |a| rounded half away from zero to @decimals digits: integer part in
 * *ip, fraction digits as ASCII in @frac (NUL-terminated). */
static void round_decimal(struct num a, int decimals, uint64_t *ip, char *frac)
{
	uint64_t d = (uint64_t)a.d, r = mag(a.n) % d;
	int i;

	*ip = mag(a.n) / d;
	for (i = 0; i < decimals; i++)
		frac[i] = (char)('0' + next_digit(&r, d));
	frac[decimals] = '\0';
	if (r < d - r)		/* remainder below one half: round down */
		return;
	for (i = decimals - 1; i >= 0; i--) {
		if (frac[i] != '9') {
			frac[i]++;
			return;
		}
		frac[i] = '0';
	}
	(*ip)++;		/* cannot wrap: *ip <= INT64_MAX */
}

static char *format_digits(struct num a, char *buf, size_t n, int decimals, bool trim)
{
	char frac[NUM_MAX_DECIMALS + 1];
	uint64_t ip;
	size_t len;
	bool zero;

	if (decimals < 0)
		decimals = 0;
	if (decimals > NUM_MAX_DECIMALS)
		decimals = NUM_MAX_DECIMALS;
	round_decimal(a, decimals, &ip, frac);
	len = (size_t)decimals;
	if (trim)
		while (len > 0 && frac[len - 1] == '0')
			len--;
	frac[len] = '\0';
	zero = ip == 0 && strspn(frac, "0") == len;
	snprintf(buf, n, "%s%llu%s%s", a.n < 0 && !zero ? "-" : "",
		 (unsigned long long)ip, len > 0 ? "." : "", frac);
	return buf;
}

char *num_format(struct num a, char *buf, size_t n, int max_decimals)
{
	return format_digits(a, buf, n, max_decimals, true);
}

char *num_format_fixed(struct num a, char *buf, size_t n, int decimals)
{
	return format_digits(a, buf, n, decimals, false);
}
