/* SPDX-License-Identifier: MIT */
/*
 * json_read.c - a JSON config into the flat key list.
 *
 * jansson parses and validates (and rejects duplicate keys); it keeps no
 * positions of values, so a light scan of the already-valid text records
 * the byte offset of every object key by its dotted path first. Keys
 * inside arrays are not addressed: configs keep lists as values.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"
#include "lang/strmap.h"

struct key_pos {
	const char *path;
	size_t start, len;
};

struct key_scan {
	struct arena *arena;
	struct key_pos *keys;
	size_t n, cap;
	size_t *stack;		/* path length at each open container; SIZE_MAX: an array */
	size_t depth, stack_cap;
	struct strbuf path;
	struct strmap by_path;	/* path -> its first key's index (a size_t): a scan per key was
				 * quadratic, 15 s for 100,000 keys */
};

/* The end of the string literal starting at @p (its opening quote). */
static const char *string_end(const char *p, const char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\' && p + 1 < end)
			p++;
	return p < end ? p + 1 : end;
}

static bool in_object(const struct key_scan *s)
{
	for (size_t i = 0; i < s->depth; i++)
		if (s->stack[i] == (size_t)-1)
			return false;
	return s->depth > 0;
}

static void scan_key(struct key_scan *s, const char *base, const char *p, const char *q)
{
	s->path.len = s->stack[s->depth - 1];
	s->path.buf[s->path.len] = '\0';
	if (s->path.len)
		strbuf_addch(&s->path, '.');
	strbuf_add(&s->path, p + 1, (size_t)(q - p - 2));
	ARENA_GROW(s->arena, s->keys, s->n, s->cap);
	s->keys[s->n] = (struct key_pos){ arena_strdup(s->arena, s->path.buf), (size_t)(p - base),
					  (size_t)(q - p) };
	if (!strmap_get(&s->by_path, s->path.buf, s->path.len)) {
		size_t *at = ARENA_NEW(s->arena, size_t);

		*at = s->n;
		strmap_put(&s->by_path, s->arena, s->path.buf, s->path.len, at);
	}
	s->n++;
}

static void scan_open(struct key_scan *s, bool array)
{
	ARENA_GROW(s->arena, s->stack, s->depth, s->stack_cap);
	s->stack[s->depth++] = array ? (size_t)-1 : s->path.len;
}

static void scan_keys(struct key_scan *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	strbuf_init(&s->path);
	while (p < end) {
		if (*p == '"') {
			const char *q = string_end(p, end), *r = q;

			while (r < end && (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r'))
				r++;
			if (r < end && *r == ':' && in_object(s))
				scan_key(s, text, p, q);
			p = q;
			continue;
		}
		if (*p == '{' || *p == '[')
			scan_open(s, *p == '[');
		else if ((*p == '}' || *p == ']') && s->depth > 0)
			s->depth--;
		if ((*p == '}' || *p == ']') && s->depth > 0 && s->stack[s->depth - 1] != (size_t)-1)
			s->path.len = s->stack[s->depth - 1];
		p++;
	}
	strbuf_release(&s->path);
}

static struct loc key_loc(const struct cfg *c, const struct key_scan *s, const char *path)
{
	const size_t *i = strmap_get(&s->by_path, path, strlen(path));

	return i ? cfg_loc(c, s->keys[*i].start, s->keys[*i].len) : cfg_loc(c, 0, 0);
}

/* Shortest "%.*g" that reads back as the same double. */
static const char *real_text(struct arena *a, double d)
{
	char buf[64];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return arena_strdup(a, buf);
}

static const char *scalar_text(struct arena *a, json_t *v, enum cfg_kind *kind)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		*kind = CFG_INT;
		return arena_printf(a, "%lld", (long long)json_integer_value(v));
	case JSON_REAL:
		*kind = CFG_REAL;
		return real_text(a, json_real_value(v));
	case JSON_STRING:
		*kind = CFG_STR;
		return json_string_value(v);
	case JSON_TRUE:
	case JSON_FALSE:
		*kind = CFG_BOOL;
		return json_is_true(v) ? "true" : "false";
	case JSON_NULL:
		*kind = CFG_NULL;
		return "null";
	case JSON_ARRAY:
	case JSON_OBJECT:
		break;
	}
	*kind = CFG_LIST;
	return "...";
}

static const char *list_text(struct arena *a, json_t *arr)
{
	struct strbuf sb;
	size_t i;
	json_t *e;
	enum cfg_kind k;

	strbuf_init(&sb);
	json_array_foreach(arr, i, e) {
		if (i)
			strbuf_addch(&sb, ',');
		strbuf_addstr(&sb, scalar_text(a, e, &k));
	}
	const char *t = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return t;
}

/* @top: the location of the top-level key above @obj (NO_LOC at the top). */
static void flatten(struct cfg *c, const struct key_scan *s, json_t *obj, const char *prefix,
		    struct loc top)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		const char *path = *prefix ? arena_printf(c->arena, "%s.%s", prefix, key) : key;
		enum cfg_kind kind;

		struct loc here = key_loc(c, s, path), block = loc_is_none(top) ? here : top;

		/* {"zero_optimization.stage": 3} would read as the stage, which
		 * DeepSpeed never sees: a top-level key it ignores */
		if (strchr(key, '.')) {
			diag_error(c->diag, DIAG_SYNTAX, here, "key '%s' has a '.': memc import names a nested "
				   "key by its dotted path, so this would read as one", key);
			continue;
		}

		if (json_is_object(v) && json_object_size(v) > 0) {
			flatten(c, s, v, path, block);
			continue;
		}
		const char *text = scalar_text(c->arena, v, &kind);

		if (json_is_array(v))
			text = list_text(c->arena, v);
		else if (json_is_object(v))
			kind = CFG_NULL, text = "{}";
		if (cfg_add(c, path, kind, text, here))
			c->items[c->n - 1].block_loc = block;
	}
}

bool cfg_read_json(struct cfg *c)
{
	json_error_t err;
	json_t *root = json_loadb(c->file->text, c->file->len, JSON_REJECT_DUPLICATES, &err);

	if (!root) {
		size_t at = err.position > 0 ? (size_t)err.position - 1 : 0;

		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, at, 1), "invalid JSON: %s", err.text);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, 0, 1),
				 "a config file must hold one JSON object");
	}
	struct key_scan s = { .arena = c->arena };

	scan_keys(&s, c->file->text, c->file->len);
	flatten(c, &s, root, "", NO_LOC);
	json_decref(root);
	return true;
}
