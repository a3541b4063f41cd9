/* SPDX-License-Identifier: MIT */
/*
 * dtypes.c - the dtype table, name lookup with did-you-mean, and exact
 * byte counts for plain and block-quantized tensors.
 *
 * dtype_bytes() works in uint64_t with checked arithmetic: a Llama-sized
 * tensor is far from the limit, but a user's shape expression is not, and
 * a wrapped byte count would be silently wrong. Every level of scales is
 * rounded up per tensor, as bitsandbytes (quantize_4bit, then
 * quantize_blockwise of the absmax for double quantization) allocates it.
 */
#include "lang/dtypes.h"

#include <assert.h>
#include <string.h>

#include "lang/intern.h"
#include "lang/str.h"
#include "lang/units.h"

enum dtype_id {
#define DTYPE(id, name, kind, bits, blk, sb, blk2, sb2, tb, desc) DT_##id,
#define DTYPE_ALIAS(name, id, why)
#include "lang/dtypes.def"
#undef DTYPE_ALIAS
#undef DTYPE
	DT__COUNT
};

static const struct dtype dtype_table[] = {
#define DTYPE(id, name, kind, bits, blk, sb, blk2, sb2, tb, desc) \
	{ name, kind, bits, blk, sb, blk2, sb2, tb, desc },
#define DTYPE_ALIAS(name, id, why)
#include "lang/dtypes.def"
#undef DTYPE_ALIAS
#undef DTYPE
};

static const struct {
	const char *name;
	enum dtype_id target;
} alias_table[] = {
#define DTYPE(id, name, kind, bits, blk, sb, blk2, sb2, tb, desc)
#define DTYPE_ALIAS(name, id, why) { name, DT_##id },
#include "lang/dtypes.def"
#undef DTYPE_ALIAS
#undef DTYPE
};

#define ALIAS_COUNT (sizeof alias_table / sizeof alias_table[0])

/* Framework spellings that are not dtype names (suggestions only). */
static const struct {
	const char *word, *name;
} dtype_synonyms[] = {
	{ "float64", "fp64" }, { "double", "fp64" },
	{ "float32", "fp32" }, { "float", "fp32" },
	{ "float16", "fp16" }, { "half", "fp16" },
	{ "bfloat16", "bf16" },
	{ "float8_e4m3fn", "fp8_e4m3" }, { "e4m3", "fp8_e4m3" },
	{ "float8_e5m2", "fp8_e5m2" }, { "e5m2", "fp8_e5m2" },
	{ "long", "int64" }, { "int", "int32" }, { "short", "int16" },
	{ "byte", "uint8" }, { "boolean", "bool" },
};

static bool name_taken(const char *name, const struct dtype **out)
{
	/* the first byte first: most names asked about are not dtypes */
	for (size_t i = 0; i < DT__COUNT; i++) {
		if (str_is(dtype_table[i].name, name)) {
			*out = &dtype_table[i];
			return true;
		}
	}
	for (size_t i = 0; i < ALIAS_COUNT; i++) {
		if (str_is(alias_table[i].name, name)) {
			*out = &dtype_table[alias_table[i].target];
			return true;
		}
	}
	return false;
}

const struct dtype *dtype_find(const char *name)
{
	const struct dtype *dt;

	return name_taken(name, &dt) ? dt : NULL;
}

/* The memo holds the dtype's row + 1 (an alias's target), or -1. */
const struct dtype *dtype_find_in(const struct interner *in, const char *name)
{
	struct intern_memo *m = intern_memo(in, name);

	if (!m)
		return dtype_find(name);
	if (m->dtype == 0) {
		const struct dtype *dt = dtype_find(name);

		m->dtype = dt ? (int)(dt - dtype_table) + 1 : -1;
	}
	return m->dtype > 0 ? &dtype_table[m->dtype - 1] : NULL;
}

const char *dtype_name(const struct dtype *dt)
{
	return dt->name;
}

unsigned dtype_bits(const struct dtype *dt)
{
	return dt->bits;
}

bool dtype_is_block_scaled(const struct dtype *dt)
{
	return dt->block != 0;
}

struct num dtype_size(const struct dtype *dt)
{
	struct num r;
	enum num_status st = num_make(dt->bits, 8, &r);

	assert(st == NUM_OK);
	(void)st;
	return r;
}

struct num dtype_effective_bits(const struct dtype *dt)
{
	struct num r = num_from_int(dt->bits), t;
	bool ok = true;

	/* bits + scale_bits/block + scale2_bits/(block*block2): tiny terms */
	if (dt->block) {
		ok &= num_make(dt->scale_bits, dt->block, &t) == NUM_OK &&
		      num_add(r, t, &r) == NUM_OK;
	}
	if (dt->block && dt->block2) {
		ok &= num_make(dt->scale2_bits, (int64_t)dt->block * dt->block2, &t) == NUM_OK &&
		      num_add(r, t, &r) == NUM_OK;
	}
	assert(ok);
	(void)ok;
	return r;
}

/* ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b. */
static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* ceil(count * bits / 8), checked. Split count = 8q + r so that only a
 * result that does not fit overflows (count * bits alone could). */
static bool packed_bytes(uint64_t count, unsigned bits, uint64_t *out)
{
	uint64_t whole;

	if (__builtin_mul_overflow(count / 8, (uint64_t)bits, &whole) ||
	    __builtin_add_overflow(whole, ceil_div(count % 8 * bits, 8), out))
		return false;
	return true;
}

bool dtype_bytes(const struct dtype *dt, uint64_t numel, uint64_t *out)
{
	uint64_t codes, scales = 0, scales2 = 0, total;
	uint64_t blocks = dt->block ? ceil_div(numel, dt->block) : 0;

	if (numel == 0) {
		*out = 0;
		return true;
	}
	if (!packed_bytes(numel, dt->bits, &codes) ||
	    !packed_bytes(blocks, dt->scale_bits, &scales))
		return false;
	if (dt->block2 && !packed_bytes(ceil_div(blocks, dt->block2), dt->scale2_bits, &scales2))
		return false;
	if (__builtin_add_overflow(codes, scales, &total) ||
	    __builtin_add_overflow(total, scales2, &total) ||
	    __builtin_add_overflow(total, (uint64_t)dt->tensor_bytes, &total))
		return false;
	*out = total;
	return true;
}

/* ---- did you mean ----------------------------------------------------- */

static bool same_ignoring_case(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		int ca = *a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a;
		int cb = *b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b;

		if (ca != cb)
			return false;
	}
	return *a == '\0' && *b == '\0';
}

/* Every spelling that dtype_find() accepts, by index: names then aliases. */
static const char *spelling_at(size_t i)
{
	return i < DT__COUNT ? dtype_table[i].name : alias_table[i - DT__COUNT].name;
}

/* Names are lower case, so compare a lower-cased copy of @word. */
static const char *closest_name(const char *word)
{
	char lower[64];
	size_t len = strlen(word);
	unsigned limit = len / 2 < 2 ? (unsigned)(len / 2) : 2, best_d = limit + 1;
	const char *best = NULL;

	if (len >= sizeof lower)
		return NULL;
	for (size_t i = 0; i <= len; i++)
		lower[i] = (char)(word[i] >= 'A' && word[i] <= 'Z' ? word[i] - 'A' + 'a' : word[i]);
	for (size_t i = 0; i < DT__COUNT + ALIAS_COUNT; i++) {
		unsigned d = unit_edit_distance(lower, spelling_at(i));

		if (d < best_d) {
			best = spelling_at(i);
			best_d = d;
		}
	}
	return best;
}

const char *dtype_suggest(const char *name)
{
	for (size_t i = 0; i < DT__COUNT + ALIAS_COUNT; i++)
		if (same_ignoring_case(name, spelling_at(i)))
			return spelling_at(i);
	for (size_t i = 0; i < sizeof dtype_synonyms / sizeof dtype_synonyms[0]; i++)
		if (same_ignoring_case(name, dtype_synonyms[i].word))
			return dtype_synonyms[i].name;
	return closest_name(name);
}

/* ---- iteration and self-check ----------------------------------------- */

size_t dtype_count(void)
{
	return DT__COUNT;
}

const struct dtype *dtype_at(size_t i)
{
	return i < DT__COUNT ? &dtype_table[i] : NULL;
}

size_t dtype_alias_count(void)
{
	return ALIAS_COUNT;
}

const char *dtype_alias_at(size_t i, const struct dtype **target)
{
	if (i >= ALIAS_COUNT)
		return NULL;
	if (target)
		*target = &dtype_table[alias_table[i].target];
	return alias_table[i].name;
}

static int row_problems(const struct dtype *dt)
{
	return (dt->bits == 0) + ((dt->block == 0) != (dt->scale_bits == 0)) +
	       (dt->block2 != 0 && dt->block == 0) + ((dt->block2 == 0) != (dt->scale2_bits == 0)) +
	       (dt->description[0] == '\0');
}

int dtype_table_check(void)
{
	int problems = 0;
	size_t n = DT__COUNT + ALIAS_COUNT;
	struct unit_ref u;

	for (size_t i = 0; i < DT__COUNT; i++)
		problems += row_problems(&dtype_table[i]);
	for (size_t i = 0; i < n; i++) {
		/* dtypes and units share the global namespace of a .mem file */
		problems += unit_lookup(spelling_at(i), &u);
		for (size_t j = i + 1; j < n; j++)
			problems += strcmp(spelling_at(i), spelling_at(j)) == 0;
	}
	for (size_t i = 0; i < sizeof dtype_synonyms / sizeof dtype_synonyms[0]; i++)
		problems += dtype_find(dtype_synonyms[i].name) == NULL ||
			    dtype_find(dtype_synonyms[i].word) != NULL;
	return problems;
}
