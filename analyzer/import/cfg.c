/* SPDX-License-Identifier: MIT */
/*
 * cfg.c - the flat key list every config reader fills, and the table
 * engine that turns its keys into memc settings.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"

void cfg_set_scalar(struct cfg_item *it, enum cfg_kind kind, const char *text)
{
	char *end;

	it->kind = kind;
	it->text = text;
	if (kind == CFG_INT || kind == CFG_REAL) {
		it->r = strtod(text, &end);
		/* a real's whole part only where it has one: (long long) of
		 * 1e300, inf or nan is undefined, and i = 0 then tells a count
		 * that it is not whole (map_count compares r with i) */
		it->i = kind == CFG_INT ? strtoll(text, NULL, 10) :
			it->r > -0x1p63 && it->r < 0x1p63 ? (long long)it->r : 0;
	} else if (kind == CFG_BOOL) {
		it->i = !strcmp(text, "true");
	}
}

static size_t digits(const char *s)
{
	size_t n = 0;

	while (isdigit((unsigned char)s[n]))
		n++;
	return n;
}

/* Decimal only, as Python's int() and float() read a flag: "0x10", "inf",
 * "nan" and " 1" are strings (strtod would take each of them). */
enum cfg_kind cfg_number_kind(const char *v)
{
	const char *p = v + (*v == '-' || *v == '+');
	size_t whole = digits(p), frac = 0, exp = 1;
	bool real = false;

	p += whole;
	if (*p == '.')
		real = true, frac = digits(p + 1), p += 1 + frac;
	if (whole + frac && (*p == 'e' || *p == 'E')) {
		p += 1 + (p[1] == '-' || p[1] == '+');
		real = true, exp = digits(p), p += exp;
	}
	if (*p || !(whole + frac) || !exp)
		return CFG_STR;
	return real ? CFG_REAL : CFG_INT;
}

bool cfg_add(struct cfg *c, const char *path, enum cfg_kind kind, const char *text, struct loc loc)
{
	if (kind == CFG_INT) {
		errno = 0;
		(void)strtoll(text, NULL, 10);
		if (errno == ERANGE)
			return diag_fail(c->diag, DIAG_OUT_OF_RANGE, loc, "'%s' = %s does not fit in a "
					 "64-bit integer", path, text);
	}
	ARENA_GROW(c->arena, c->items, c->n, c->cap);
	struct cfg_item *it = &c->items[c->n++];

	memset(it, 0, sizeof *it);
	it->path = arena_strdup(c->arena, path);
	it->loc = loc;
	it->block_loc = loc;
	cfg_set_scalar(it, kind, arena_strdup(c->arena, text));
	return true;
}

/* The last: a command line may give a flag twice, and argparse (Megatron,
 * fastcore) keeps the later value, as the map rows do ("overrides"); the
 * other formats refuse a key given twice. */
const struct cfg_item *cfg_find(const struct cfg *c, const char *path)
{
	for (size_t i = c->n; i-- > 0;)
		if (!strcmp(c->items[i].path, path))
			return &c->items[i];
	return NULL;
}

struct loc cfg_loc(const struct cfg *c, size_t start, size_t len)
{
	size_t max = c->file->len;

	if (start > max)
		start = max;
	if (len > max - start)
		len = max - start;
	return (struct loc){ c->file->id, (uint32_t)start, (uint32_t)(start + len) };
}

struct imp_setting *imp_find(const struct imp_out *o, const char *dst)
{
	for (size_t i = 0; dst && i < o->n; i++)
		if (o->set[i].dst && o->set[i].value && !strcmp(o->set[i].dst, dst))
			return &o->set[i];
	return NULL;
}

void imp_set(struct imp_out *o, const char *dst, const char *value, const char *src, const char *note)
{
	/* A later config overrides an earlier one's setting of the same key;
	 * the comment keeps what it replaced, so the conflict stays visible. */
	struct imp_setting *s = value ? imp_find(o, dst) : NULL;

	if (s) {
		const struct imp_setting old = *s;

		if (old.value[0] && strcmp(old.value, value) && old.src)
			note = arena_printf(o->arena, "overrides %s = %s", old.src, old.value);
		*s = (struct imp_setting){ dst, value, src, note };
		return;
	}
	ARENA_GROW(o->arena, o->set, o->n, o->cap);
	o->set[o->n++] = (struct imp_setting){ dst, value, src, note };
}

const struct map_row *map_find(const struct map_row *rows, const char *path)
{
	for (const struct map_row *r = rows; r->src; r++) {
		size_t n = strlen(r->src);

		if (!strcmp(r->src, path))
			return r;
		if (n >= 2 && !strcmp(r->src + n - 2, ".*") && !strncmp(r->src, path, n - 1))
			return r;
	}
	return NULL;
}

/* "a=b|c=d" -> "a, c": the values a message can name. */
static const char *enum_keys(struct arena *a, const char *table)
{
	char *out = arena_strdup(a, table), *w = out;

	for (const char *p = table; *p; p++) {
		if (*p == '=') {
			while (p[1] && p[1] != '|')
				p++;
			continue;
		}
		if (*p == '|') {
			*w++ = ',';
			*w++ = ' ';
			continue;
		}
		*w++ = *p;
	}
	*w = '\0';
	return out;
}

/* "a=b|c=d": the b for @v (case-insensitive), or NULL. */
static const char *enum_lookup(struct arena *a, const char *table, const char *v)
{
	const char *p = table;

	while (*p) {
		const char *eq = strchr(p, '='), *bar = strchr(p, '|');
		size_t klen = (size_t)(eq - p), vlen = bar ? (size_t)(bar - eq - 1) : strlen(eq + 1);

		if (strlen(v) == klen && !strncasecmp(p, v, klen))
			return arena_strndup(a, eq + 1, vlen);
		if (!bar)
			break;
		p = bar + 1;
	}
	return NULL;
}

static bool must_match(const char *allowed, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = allowed; p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, v, n))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

static bool bad_value(struct cfg *c, const struct cfg_item *it, const char *want)
{
	/* a quoted "false" in JSON or YAML, or a value after a Megatron
	 * store_true flag (argparse: "unrecognized arguments: false") */
	if (!strcmp(want, "true or false") && it->kind == CFG_STR &&
	    (!strcmp(it->text, "true") || !strcmp(it->text, "false")))
		return diag_fail(c->diag, DIAG_TYPE_MISMATCH, it->loc, "'%s' is the text '%s', not a boolean: "
				 "unquote it in a config file; a command-line flag that is on takes no value "
				 "(leave it out for off)", it->path, it->text);
	diag_error(c->diag, DIAG_TYPE_MISMATCH, it->loc, "'%s' is '%s'; memc import needs %s here",
		   it->path, it->text, want);
	return false;
}

bool cfg_whole_at_least(struct cfg *c, const struct cfg_item *it, long long min)
{
	if (it->kind != CFG_INT && !(it->kind == CFG_REAL && it->r == (double)it->i))
		return bad_value(c, it, "a whole number");
	if (it->i < min)
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, it->loc, "'%s' is %s; memc import needs %lld or "
				 "more here", it->path, it->text, min);
	return true;
}

bool cfg_number_in(struct cfg *c, const struct cfg_item *it, double lo, double hi, const char *range)
{
	if (it->kind != CFG_INT && it->kind != CFG_REAL)
		return bad_value(c, it, "a number");
	if (!(it->r >= lo && it->r < hi))	/* nan too */
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, it->loc, "'%s' is %s; memc import needs %s here",
				 it->path, it->text, range);
	return true;
}

/* The least value of a count row: its own (config.json's model counts),
 * else 1 for the job's counts whatever the reader (a DeepSpeed, Megatron,
 * LitGPT, torchtitan or fsdp_qlora micro-batch, length or accumulation of
 * 0 is refused at its key, not written out for memc check to refuse). */
static const char *count_min(const struct map_row *r)
{
	static const char *const job[] = { "micro_batch", "seq_len", "grad_accum" };

	if (r->arg)
		return r->arg;
	for (size_t i = 0; i < sizeof(job) / sizeof(job[0]); i++)
		if (!strcmp(r->dst, job[i]))
			return "1";
	return NULL;
}

static bool map_count(struct cfg *c, const struct cfg_item *it, const struct map_row *r, struct imp_out *o)
{
	const char *min = count_min(r);

	if (it->kind == CFG_STR && !strcmp(it->text, "auto")) {
		imp_set(o, NULL, NULL, it->path,
			arena_printf(c->arena, "%s = \"auto\": the launcher fills it in; set %s yourself",
				     it->path, r->dst));
		return true;
	}
	if (it->kind == CFG_NULL) {	/* null: the framework default, which the template shares */
		imp_set(o, r->dst, "", it->path, NULL);
		return true;
	}
	/* the least value the model or the job can be built with, so that
	 * `"hidden_size": -4096` is refused at its key, not after the output
	 * is written */
	if (min && !cfg_whole_at_least(c, it, strtoll(min, NULL, 10)))
		return false;
	if (it->kind != CFG_INT && !(it->kind == CFG_REAL && it->r == (double)it->i))
		return bad_value(c, it, "a whole number");
	imp_set(o, r->dst, arena_printf(c->arena, "%lld", it->i), it->path, NULL);
	return true;
}

static bool map_enum(struct cfg *c, const struct cfg_item *it, const struct map_row *r, struct imp_out *o)
{
	const char *v = enum_lookup(c->arena, r->arg, it->text);

	if (!v && it->kind == CFG_STR && !strcmp(it->text, "auto")) {
		imp_set(o, NULL, NULL, it->path,
			arena_printf(c->arena, "%s = \"auto\": the launcher decides; set %s yourself",
				     it->path, r->dst));
		return true;
	}
	if (!v)
		return diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, it->loc,
				 "'%s' = '%s' has no memc equivalent (memc import knows %s)",
				 it->path, it->text, enum_keys(c->arena, r->arg));
	if (*v)
		imp_set(o, r->dst, v, it->path, NULL);
	return true;
}

static bool map_if_true(struct cfg *c, const struct cfg_item *it, const struct map_row *r,
			struct imp_out *o)
{
	if (it->kind == CFG_STR && !strcmp(it->text, "auto")) {
		imp_set(o, NULL, NULL, it->path,
			arena_printf(c->arena, "%s = \"auto\": the launcher decides; %s = %s if it is on",
				     it->path, r->dst, r->arg));
		return true;
	}
	if (it->kind != CFG_BOOL)
		return bad_value(c, it, "true or false");
	if (it->i)
		imp_set(o, r->dst, r->arg, it->path, NULL);
	return true;
}

bool map_item(struct cfg *c, const struct cfg_item *it, const struct map_row *r, struct imp_out *o)
{
	switch (r->conv) {
	case MAP_COUNT:
		return map_count(c, it, r, o);
	case MAP_BOOL:
		if (it->kind != CFG_BOOL)
			return bad_value(c, it, "true or false");
		imp_set(o, r->dst, it->text, it->path, NULL);
		return true;
	case MAP_NONZERO:
		if (it->kind != CFG_INT && it->kind != CFG_REAL)
			return bad_value(c, it, "a number");
		imp_set(o, r->dst, it->r != 0 ? "true" : "false", it->path, NULL);
		return true;
	case MAP_ENUM:
		return map_enum(c, it, r, o);
	case MAP_IF_TRUE:
		return map_if_true(c, it, r, o);
	case MAP_MUST:
		return must_match(r->arg, it->text) ||
		       diag_fail(c->diag, DIAG_IMPORT_UNUSED_KEY, it->loc,
				 "'%s' = %s changes memory and memc import cannot express it "
				 "(only %s is supported)", it->path, it->text, r->arg);
	case MAP_NOTE:
		imp_set(o, NULL, NULL, it->path,
			arena_printf(c->arena, "%s = %s: %s", it->path, it->text, r->arg));
		return true;
	case MAP_IGNORE:
		return true;
	case MAP_RATIO:	/* written as `!(0 <= r <= 1)`, so that nan is refused too */
		if ((it->kind != CFG_INT && it->kind != CFG_REAL) || !(it->r >= 0 && it->r <= 1))
			return bad_value(c, it, "a number from 0 to 1");
		imp_set(o, r->dst, it->text, it->path, NULL);
		return true;
	case MAP_IMPLIES:
		if (!(it->kind == CFG_BOOL && !it->i))
			imp_set(o, r->dst, r->arg, it->path, NULL);
		return true;
	}
	return true;
}

bool map_block_known(const struct map_row *rows, const char *path)
{
	size_t top = strcspn(path, ".");

	for (const struct map_row *r = rows; path[top] && r->src; r++)
		if (!strncmp(r->src, path, top + 1))
			return true;
	return false;
}

/* One error per unknown block: quantization_config's four keys are one
 * mistake. A key of a block the tables know ("training.foo" beside
 * training.seq_len) is a mistake of its own: the error names the key. */
bool cfg_unknown_key(struct cfg *c, const struct cfg_item *it, const char *what, bool known_block)
{
	size_t top = strcspn(it->path, ".");

	if (!known_block && c->reported_block && strlen(c->reported_block) == top &&
	    !strncmp(c->reported_block, it->path, top))
		return false;
	if (it->path[top] && !known_block) {
		c->reported_block = arena_strndup(c->arena, it->path, top);
		diag_error(c->diag, DIAG_IMPORT_UNUSED_KEY, it->block_loc,
			   "'%s' is not a block %s; it may change memory", c->reported_block, what);
		return false;
	}
	diag_error(c->diag, DIAG_IMPORT_UNUSED_KEY, it->loc,
		   "'%s' is not a key %s; it may change memory", it->path, what);
	return false;
}

bool map_apply(struct cfg *c, const struct map_row *rows, struct imp_out *o)
{
	bool ok = true;

	for (size_t i = 0; i < c->n; i++) {
		const struct cfg_item *it = &c->items[i];
		const struct map_row *r = map_find(rows, it->path);

		if (!r) {
			ok = cfg_unknown_key(c, it, "memc import maps or knows to be harmless",
					     map_block_known(rows, it->path));
			continue;
		}
		ok &= map_item(c, it, r, o);
		for (const struct map_row *n = r + 1; n->src && !strcmp(n->src, r->src); n++)
			ok &= map_item(c, it, n, o);
	}
	return ok;
}
