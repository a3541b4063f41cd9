/* SPDX-License-Identifier: MIT */
/*
 * yaml_config.c - YAML configs (libyaml) into the flat key list, and the
 * three YAML dialects memc import maps: Hugging Face TrainingArguments,
 * accelerate and torchtune.
 *
 * Mappings nest into dotted paths; a sequence is one list value (keys
 * inside its elements are not addressed). A plain scalar is typed as YAML
 * 1.1 would (true/false, null, numbers); a quoted one is always a string.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/parse.h"
#include "lang/strbuf.h"
#include "lang/strmap.h"

/* A mapping being read. */
struct yframe {
	const char *prefix;
	const char *key;	/* NULL: expecting a key */
	struct loc key_loc;
	size_t anchor;		/* its anchor's index, SIZE_MAX: none */
	size_t *merges;		/* the anchors `<<` merges in, highest precedence first */
	size_t nmerges;
	struct loc merge_loc;
	bool merging;		/* the key is a plain `<<` */
};

/* An anchor (&name): a value's kind and text, or a mapping's items. */
struct yanchor {
	const char *name;
	const char *prefix;	/* a mapping's path; NULL: a value */
	enum cfg_kind kind;
	const char *text;
	size_t first, last;	/* a mapping's items: c->items[first, last) */
	bool open;		/* not ended yet: an alias to it is inside it */
	bool opaque;		/* inside a list, whose insides memc import does not read */
};

struct yreader {
	struct cfg *c;
	yaml_parser_t parser;
	struct loc top_loc;	/* the last top-level key */
	struct yframe *stack;
	size_t depth, cap;
	struct yanchor *anchors;
	size_t nanchors, anchors_cap;
	struct strmap keys;	/* every path written: a key given twice is an error */
	struct strmap names;	/* anchor name -> its latest index (a size_t) */
	size_t copied;		/* items and list bytes that aliases copied: bounded */
	unsigned documents;
	bool failed;		/* an error was reported: stop */
	struct diag *last;	/* that error, for its notes */
	bool refused;		/* a value no item holds (cfg_add said why) */
	size_t mark_line, mark_col, mark_off;	/* the last mark_offset() */
};

/* An alias copies what its anchor holds: a file of nested aliases (each
 * level twice the one before) would grow without end. */
enum { YAML_MAX_COPIED = 1 << 16 };

/* libyaml marks count lines and code points; memc locations are bytes.
 * The walk goes on from the last mark on the same line (events come in
 * order): from the line's start each time, a 1 MB line of flow keys took
 * minutes. */
static size_t mark_offset(struct yreader *y, yaml_mark_t m)
{
	const struct src_file *f = y->c->file;
	size_t n = src_nlines(f), line = m.line < n ? m.line : n - 1, off = src_line_starts(f)[line], col = 0;

	if (y->mark_line == line && y->mark_col <= m.column)
		off = y->mark_off, col = y->mark_col;
	for (; col < m.column && off < f->len; col++) {
		uint32_t cp;

		off += src_decode(f->text + off, f->text + f->len, &cp);
	}
	y->mark_line = line, y->mark_col = col, y->mark_off = off;
	return off;
}

static struct loc event_loc(struct yreader *y, const yaml_event_t *e)
{
	size_t a = mark_offset(y, e->start_mark), b = mark_offset(y, e->end_mark);

	return cfg_loc(y->c, a, b > a ? b - a : 1);
}

__attribute__((format(printf, 4, 5)))
static bool yfail(struct yreader *y, enum diag_id id, struct loc at, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	y->last = diag_vemit(y->c->diag, id, at, fmt, ap);
	va_end(ap);
	y->failed = true;
	return false;
}

/* 0x1F, 0b101 and 0017 as PyYAML's YAML 1.1 reads them (resolver.py's
 * int pattern, constructor.py construct_yaml_int: a leading 0 is octal),
 * in decimal; false where the digits do not fit that base or 64 bits. */
static bool based_int(struct arena *a, const char *s, const char **text)
{
	bool neg = *s == '-';
	const char *p = s + (*s == '-' || *s == '+');
	int base = p[1] == 'x' ? 16 : p[1] == 'b' ? 2 : 8;
	const char *d = p + (base == 8 ? 1 : 2);
	char *end;

	if (!*d || !(isdigit((unsigned char)*d) || (base == 16 && isxdigit((unsigned char)*d))))
		return false;
	errno = 0;
	unsigned long long v = strtoull(d, &end, base);

	if (*end || errno == ERANGE || v > (unsigned long long)LLONG_MAX + neg)
		return false;
	*text = neg ? arena_printf(a, "-%llu", v) : arena_printf(a, "%llu", v);
	return true;
}

/* A plain scalar's type as YAML 1.1 (PyYAML) gives it: a 1.1 integer in
 * another base becomes decimal, .inf and .nan are reals (which no count
 * takes), and a decimal number is one as Python reads it. */
static enum cfg_kind plain_kind(struct arena *a, const char *s, const char **text)
{
	const char *p = s + (*s == '-' || *s == '+');

	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return *text = "true", CFG_BOOL;
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return *text = "false", CFG_BOOL;
	if (!*s || !strcmp(s, "null") || !strcmp(s, "~") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		return *text = "null", CFG_NULL;
	*text = s;
	if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF"))
		return *text = *s == '-' ? "-inf" : "inf", CFG_REAL;
	if (p == s && (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")))
		return *text = "nan", CFG_REAL;
	if (p[0] == '0' && p[1] && p[1] != '.' && p[1] != 'e' && p[1] != 'E')
		return based_int(a, s, text) ? CFG_INT : CFG_STR;
	if (strchr(p, '_') && p[0] >= '1' && p[0] <= '9' && strspn(p, "0123456789_") == strlen(p)) {
		char *d = arena_strdup(a, s), *w = d;	/* 1_000: the 1.1 int pattern's */

		for (const char *q = s; *q; q++)
			if (*q != '_')
				*w++ = *q;
		*w = '\0';
		return *text = d, CFG_INT;
	}
	return cfg_number_kind(s);
}

static const char *join_path(struct arena *a, const char *prefix, const char *key)
{
	return *prefix ? arena_printf(a, "%s.%s", prefix, key) : arena_strdup(a, key);
}

static const char *frame_path(struct yreader *y, const struct yframe *f)
{
	return join_path(y->c->arena, f->prefix, f->key);
}

static void push(struct yreader *y, const char *prefix)
{
	ARENA_GROW(y->c->arena, y->stack, y->depth, y->cap);
	y->stack[y->depth++] = (struct yframe){ .prefix = prefix, .anchor = SIZE_MAX };
}

/* The anchors by name, each to its latest index (YAML lets a name be
 * anchored again; an alias means the one before it): a scan per alias
 * took 28 s over 60,000 of each. */
static size_t add_anchor(struct yreader *y, const yaml_char_t *name, struct yanchor a)
{
	size_t len = strlen((const char *)name), *latest = strmap_get(&y->names, (const char *)name, len);

	ARENA_GROW(y->c->arena, y->anchors, y->nanchors, y->anchors_cap);
	a.name = arena_strdup(y->c->arena, (const char *)name);
	y->anchors[y->nanchors] = a;
	if (!latest) {
		latest = ARENA_NEW(y->c->arena, size_t);
		strmap_put(&y->names, y->c->arena, a.name, len, latest);
	}
	*latest = y->nanchors;
	return y->nanchors++;
}

static struct yanchor *find_anchor(struct yreader *y, const yaml_event_t *e)
{
	const char *name = (const char *)e->data.alias.anchor;
	const size_t *latest = strmap_get(&y->names, name, strlen(name));
	struct yanchor *a = latest ? &y->anchors[*latest] : NULL;

	if (!a)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "invalid YAML: alias '*%s' names no anchor "
			     "defined before it", name), NULL;
	if (a->open)
		return yfail(y, DIAG_DEFINITION_CYCLE, event_loc(y, e), "alias '*%s' is inside the node "
			     "'&%s' that it names: the config would contain itself", name, name), NULL;
	if (a->opaque)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "alias '*%s' names a node inside a list, "
			     "whose insides memc import does not read", name), NULL;
	return a;
}

/* A key of the mapping @f, once: PyYAML would keep the last silently. */
static bool new_key(struct yreader *y, const char *path, struct loc at)
{
	struct loc *first = strmap_get(&y->keys, path, strlen(path));

	if (first) {
		yfail(y, DIAG_DUPLICATE_FIELD, at, "'%s' is given twice; YAML keeps only the last", path);
		diag_note(y->last, *first, "first given here");
		return false;
	}
	struct loc *keep = ARENA_NEW(y->c->arena, struct loc);

	*keep = at;
	strmap_put(&y->keys, y->c->arena, path, strlen(path), keep);
	return true;
}

static bool spend(struct yreader *y, size_t n, struct loc at)
{
	if (n > YAML_MAX_COPIED - y->copied)
		return yfail(y, DIAG_INSTANTIATION_LIMIT, at, "the aliases of this YAML config copy more "
			     "than %d keys and list bytes", YAML_MAX_COPIED);
	y->copied += n;
	return true;
}

static bool add_item(struct yreader *y, const char *path, enum cfg_kind k, const char *text, struct loc at)
{
	if (!cfg_add(y->c, path, k, text, at))
		return y->refused = true;	/* said; the rest is read for more */
	y->c->items[y->c->n - 1].block_loc = y->top_loc;
	return true;
}

/* The items of mapping anchor @a under @path, each located at @at. A
 * merge (@merge, `<<: *a`) is shallow and never overrides: a key the
 * mapping has (its own, or a stronger merge's) keeps its whole value. */
static bool copy_mapping(struct yreader *y, const struct yanchor *a, const char *path, struct loc at,
			 bool merge)
{
	size_t skip = strlen(a->prefix) + (*a->prefix != '\0'), n0 = y->c->n;
	struct arena *ar = y->c->arena;

	if (!spend(y, a->last - a->first, at))
		return false;
	for (size_t i = a->first; i < a->last; i++) {
		const struct cfg_item it = y->c->items[i];	/* a copy: the array may move */
		const char *rel = it.path + skip;
		const char *top = join_path(ar, path, arena_strndup(ar, rel, strcspn(rel, ".")));

		if (merge && strmap_get(&y->keys, top, strlen(top)))
			continue;
		if (!add_item(y, join_path(ar, path, rel), it.kind, it.text, at))
			return false;
	}
	for (size_t i = n0; merge && i < y->c->n; i++) {
		const char *rel = y->c->items[i].path + strlen(path) + (*path != '\0');
		const char *top = join_path(ar, path, arena_strndup(ar, rel, strcspn(rel, ".")));

		if (!strmap_get(&y->keys, top, strlen(top)))
			new_key(y, top, at);
	}
	return true;
}

/* `<<` merges, applied when the mapping ends: its own keys are all known
 * then. PyYAML's flatten_mapping: a later `<<` wins over an earlier one,
 * and in `<<: [*a, *b]` a over b. */
static bool apply_merges(struct yreader *y, const struct yframe *f)
{
	for (size_t i = 0; i < f->nmerges && !y->failed; i++)
		copy_mapping(y, &y->anchors[f->merges[i]], f->prefix, f->merge_loc, true);
	return !y->failed;
}

static bool add_merge(struct yreader *y, struct yframe *f, size_t anchor, size_t at)
{
	size_t *m = arena_alloc(y->c->arena, arena_array_size(sizeof *m, f->nmerges + 1));

	/* a later `<<` key goes first; within one list, in list order (@at) */
	for (size_t i = 0; i < at; i++)
		m[i] = f->merges[i];
	m[at] = anchor;
	for (size_t i = at; i < f->nmerges; i++)
		m[i + 1] = f->merges[i];
	f->merges = m;
	f->nmerges++;
	return true;
}

static bool is_merge_key(const struct yframe *f)
{
	return f->key && f->merging;
}

/* A tag as yaml.safe_load takes it: !!str makes a string, !!int, !!float,
 * !!bool and !!null must agree with the text; any other (!!python/...,
 * a local !tag) SafeLoader refuses, and so does memc import. */
static bool scalar_tag(struct yreader *y, yaml_event_t *e, enum cfg_kind *k, const char **text)
{
	static const char std[] = "tag:yaml.org,2002:";
	static const struct { const char *name; enum cfg_kind kind; } tags[] = {
		{ "int", CFG_INT }, { "float", CFG_REAL }, { "bool", CFG_BOOL }, { "null", CFG_NULL },
	};
	const char *tag = (const char *)e->data.scalar.tag;

	if (!tag || e->data.scalar.plain_implicit || e->data.scalar.quoted_implicit)
		return true;
	if (!strcmp(tag, "tag:yaml.org,2002:str")) {
		*k = CFG_STR;
		*text = (const char *)e->data.scalar.value;
		return true;
	}
	for (size_t i = 0; !strncmp(tag, std, sizeof std - 1) && i < sizeof tags / sizeof *tags; i++)
		if (!strcmp(tag + sizeof std - 1, tags[i].name))
			return *k == tags[i].kind || (*k == CFG_INT && tags[i].kind == CFG_REAL) ||
			       yfail(y, DIAG_TYPE_MISMATCH, event_loc(y, e), "'%s' is not a YAML %s",
				     (const char *)e->data.scalar.value, tags[i].name);
	return yfail(y, DIAG_SYNTAX, event_loc(y, e), "tag '%s': memc import reads what yaml.safe_load "
		     "does, which refuses it", tag);
}

/* A mapping's or a list's tag: none, !!map or !!seq (yaml.safe_load's). */
static bool node_tag(struct yreader *y, yaml_event_t *e, const yaml_char_t *tag, bool implicit)
{
	const char *t = (const char *)tag;

	if (!t || implicit || !strcmp(t, "tag:yaml.org,2002:map") || !strcmp(t, "tag:yaml.org,2002:seq"))
		return true;
	return yfail(y, DIAG_SYNTAX, event_loc(y, e), "tag '%s': memc import reads what yaml.safe_load "
		     "does, which refuses it", t);
}

static bool on_key(struct yreader *y, struct yframe *f, yaml_event_t *e)
{
	f->key = arena_strdup(y->c->arena, (const char *)e->data.scalar.value);
	f->key_loc = event_loc(y, e);
	if (f == y->stack)
		y->top_loc = f->key_loc;
	if (strchr(f->key, '.'))	/* it would read as a key of the block before the dot */
		return yfail(y, DIAG_SYNTAX, f->key_loc, "key '%s' has a '.': memc import names a nested "
			     "key by its dotted path, so this would read as one", f->key);
	/* a quoted "<<" is a key like any other */
	f->merging = !strcmp(f->key, "<<") && e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (f->merging) {
		f->merge_loc = f->key_loc;
		return true;
	}
	return new_key(y, frame_path(y, f), f->key_loc);
}

static bool on_scalar(struct yreader *y, yaml_event_t *e)
{
	struct yframe *f = y->depth ? &y->stack[y->depth - 1] : NULL;
	const char *s = (const char *)e->data.scalar.value, *text = s;

	if (!f)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "a YAML config is a mapping of keys, not "
			     "a single value");
	if (!f->key)
		return on_key(y, f, e);
	if (is_merge_key(f))
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "'<<' merges a mapping (an alias '*name' "
			     "or a list of them), not a value");
	enum cfg_kind k = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_kind(y->c->arena, s, &text) :
			  CFG_STR;
	const char *path = frame_path(y, f);

	f->key = NULL;
	if (!scalar_tag(y, e, &k, &text))
		return false;
	if (e->data.scalar.anchor)
		add_anchor(y, e->data.scalar.anchor,
			   (struct yanchor){ .kind = k, .text = arena_strdup(y->c->arena, text) });
	return add_item(y, path, k, text, f->key_loc);
}

static bool on_alias(struct yreader *y, yaml_event_t *e)
{
	struct yframe *f = y->depth ? &y->stack[y->depth - 1] : NULL;
	struct yanchor *a;

	if (!f || !f->key)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "an alias as %s: memc import reads a "
			     "mapping of plain keys", f ? "a key" : "the whole config");
	if (!(a = find_anchor(y, e)))
		return false;
	const char *path = frame_path(y, f);
	bool merge = is_merge_key(f);

	f->key = NULL;
	if (merge && !a->prefix)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "'<<' merges a mapping, and '*%s' is a value",
			     a->name);
	if (merge)
		return add_merge(y, f, (size_t)(a - y->anchors), 0);
	if (a->prefix)
		return copy_mapping(y, a, path, f->key_loc, false);
	return spend(y, strlen(a->text), f->key_loc) && add_item(y, path, a->kind, a->text, f->key_loc);
}

/* A sequence value: its top-level scalars, comma-separated (an alias to a
 * value is its text). Anchors inside it are not read (opaque). */
static bool read_sequence(struct yreader *y, struct strbuf *sb, size_t self)
{
	size_t depth = 1;
	yaml_event_t e;

	while (depth > 0 && !y->failed) {
		if (!yaml_parser_parse(&y->parser, &e))
			return false;
		const yaml_char_t *anchor = e.type == YAML_SCALAR_EVENT ? e.data.scalar.anchor :
			e.type == YAML_SEQUENCE_START_EVENT ? e.data.sequence_start.anchor :
			e.type == YAML_MAPPING_START_EVENT ? e.data.mapping_start.anchor : NULL;

		if (anchor)
			add_anchor(y, anchor, (struct yanchor){ .opaque = true });
		if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT)
			depth--;
		else if (e.type == YAML_SCALAR_EVENT && depth == 1)
			strbuf_addf(sb, "%s%s", sb->len ? "," : "", (const char *)e.data.scalar.value);
		else if (e.type == YAML_ALIAS_EVENT) {
			struct yanchor *a = find_anchor(y, &e);

			if (a && !a->prefix && depth == 1 && spend(y, strlen(a->text) + 1, event_loc(y, &e)))
				strbuf_addf(sb, "%s%s", sb->len ? "," : "", a->text);
		}
		yaml_event_delete(&e);
	}
	if (self != SIZE_MAX)
		y->anchors[self].open = false;
	return true;
}

/* `<<: [*a, *b]`: each element an alias to a mapping. */
static bool read_merge_list(struct yreader *y, struct yframe *f)
{
	size_t at = 0;
	yaml_event_t e;

	for (;;) {
		if (!yaml_parser_parse(&y->parser, &e))
			return false;
		if (e.type == YAML_SEQUENCE_END_EVENT)
			break;
		struct yanchor *a = e.type == YAML_ALIAS_EVENT ? find_anchor(y, &e) : NULL;

		if (a && a->prefix)
			add_merge(y, f, (size_t)(a - y->anchors), at++);
		else if (!y->failed)
			yfail(y, DIAG_SYNTAX, event_loc(y, &e), "'<<' merges a list of aliases to mappings");
		yaml_event_delete(&e);
		if (y->failed)
			return true;
	}
	yaml_event_delete(&e);
	f->key = NULL;
	return true;
}

static bool on_sequence(struct yreader *y, yaml_event_t *e)
{
	struct yframe *f = y->depth ? &y->stack[y->depth - 1] : NULL;
	const yaml_char_t *anchor = e->data.sequence_start.anchor;
	struct strbuf sb;
	bool ok;

	if (!f || !f->key)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "a list as %s: memc import reads a mapping "
			     "of plain keys", f ? "a key" : "the whole config");
	if (!node_tag(y, e, e->data.sequence_start.tag, e->data.sequence_start.implicit))
		return false;
	if (is_merge_key(f))
		return read_merge_list(y, f);
	size_t self = anchor ? add_anchor(y, anchor, (struct yanchor){ .kind = CFG_LIST, .open = true }) : SIZE_MAX;

	strbuf_init(&sb);
	ok = read_sequence(y, &sb, self);
	if (ok && !y->failed) {
		if (self != SIZE_MAX)
			y->anchors[self].text = arena_strdup(y->c->arena, sb.buf);
		ok = add_item(y, frame_path(y, f), CFG_LIST, sb.buf, f->key_loc);
	}
	f->key = NULL;
	strbuf_release(&sb);
	return ok;
}

static bool on_mapping(struct yreader *y, yaml_event_t *e)
{
	struct yframe *f = y->depth ? &y->stack[y->depth - 1] : NULL;
	const yaml_char_t *anchor = e->data.mapping_start.anchor;

	if (f && !f->key)
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "a mapping as a key: memc import reads "
			     "plain keys");
	if (!node_tag(y, e, e->data.mapping_start.tag, e->data.mapping_start.implicit))
		return false;
	if (f && is_merge_key(f))
		return yfail(y, DIAG_SYNTAX, event_loc(y, e), "'<<' with a mapping written in place: "
			     "write its keys in the mapping itself");
	push(y, f ? frame_path(y, f) : "");
	if (f)
		f->key = NULL;
	if (anchor)
		y->stack[y->depth - 1].anchor = add_anchor(y, anchor, (struct yanchor){
			.prefix = y->stack[y->depth - 1].prefix, .first = y->c->n, .open = true });
	return true;
}

static bool on_mapping_end(struct yreader *y)
{
	struct yframe *f = &y->stack[y->depth - 1];

	if (!apply_merges(y, f))
		return false;
	if (f->anchor != SIZE_MAX) {
		y->anchors[f->anchor].last = y->c->n;
		y->anchors[f->anchor].open = false;
	}
	y->depth--;
	return true;
}

static bool on_event(struct yreader *y, yaml_event_t *e, bool *done)
{
	switch (e->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++y->documents > 1)
			return yfail(y, DIAG_SYNTAX, event_loc(y, e), "a second YAML document: memc import "
				     "reads one config per file, as yaml.safe_load does");
		return true;
	case YAML_MAPPING_START_EVENT:
		return on_mapping(y, e);
	case YAML_MAPPING_END_EVENT:
		return y->depth && on_mapping_end(y);
	case YAML_SCALAR_EVENT:
		return on_scalar(y, e);
	case YAML_ALIAS_EVENT:
		return on_alias(y, e);
	case YAML_SEQUENCE_START_EVENT:
		return on_sequence(y, e);
	case YAML_STREAM_END_EVENT:
		*done = true;
		return true;
	default:
		return true;
	}
}

/* The offset of the first '[' or '{' nested deeper than PARSE_MAX_DEPTH,
 * or SIZE_MAX. libyaml's simple-key check walks every open flow level
 * for every token, so 100,000 brackets take it minutes; no config nests
 * its lists that deep. Quotes and comments are skipped; a ']' in a plain
 * scalar outside brackets cannot take the count below 0. */
static size_t too_deep(const char *t, size_t len)
{
	size_t depth = 0;

	for (size_t i = 0; i < len; i++) {
		char q = t[i];

		if (q == '"' || q == '\'') {
			while (++i < len && t[i] != q)
				i += q == '"' && t[i] == '\\';
		} else if (q == '#' && (!i || t[i - 1] == ' ' || t[i - 1] == '\t' || t[i - 1] == '\n')) {
			while (i < len && t[i] != '\n')
				i++;
		} else if ((q == '[' || q == '{') && ++depth > PARSE_MAX_DEPTH) {
			return i;
		} else if ((q == ']' || q == '}') && depth) {
			depth--;
		}
	}
	return SIZE_MAX;
}

bool cfg_read_yaml(struct cfg *c)
{
	struct yreader y = { .c = c };
	bool done = false, ok = true;
	size_t deep = too_deep(c->file->text, c->file->len);

	if (deep != SIZE_MAX)
		return diag_fail(c->diag, DIAG_NESTING_DEPTH, cfg_loc(c, deep, 1), "lists and mappings "
				 "nested deeper than %d", PARSE_MAX_DEPTH);

	yaml_parser_initialize(&y.parser);
	yaml_parser_set_input_string(&y.parser, (const unsigned char *)c->file->text, c->file->len);
	while (ok && !done && !y.failed) {
		yaml_event_t e;

		if (!yaml_parser_parse(&y.parser, &e)) {
			ok = false;
			break;
		}
		ok = on_event(&y, &e, &done);
		yaml_event_delete(&e);
	}
	if (!ok && !y.failed) {
		size_t at = mark_offset(&y, y.parser.problem_mark);

		diag_error(c->diag, DIAG_SYNTAX, cfg_loc(c, at, 1), "invalid YAML: %s",
			   y.parser.problem ? y.parser.problem : "parse error");
	}
	if (ok && !y.failed && !y.documents)
		ok = diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, 0, 1), "a YAML config is a mapping of "
			       "keys, and this file has none");
	yaml_parser_delete(&y.parser);
	return ok && !y.failed && !y.refused;
}
