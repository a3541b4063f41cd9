/* SPDX-License-Identifier: MIT */
/*
 * toml_config.c - torchtitan's TOML into the flat key list (its keys
 * become train settings in titan_config.c).
 *
 * Debian 12 has no C TOML library (see docs/import.md), so this reads the
 * subset torchtitan configs use: [table] and [[table]] headers, bare,
 * quoted and dotted keys, strings, integers (with _), floats, booleans,
 * arrays (which may span lines) and # comments. Anything else is a located
 * syntax error rather than a silent misread.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"
#include "lang/strmap.h"

/* The line without its comment and trailing blanks (a # inside a string stays). */
static size_t content_len(const char *p, size_t len)
{
	char quote = 0;

	for (size_t i = 0; i < len; i++) {
		if (quote && p[i] == quote)
			quote = 0;
		else if (!quote && (p[i] == '"' || p[i] == '\''))
			quote = p[i];
		else if (!quote && p[i] == '#') {
			len = i;
			break;
		}
	}
	while (len && isspace((unsigned char)p[len - 1]))
		len--;
	return len;
}

static const char *trim_ws(struct arena *a, const char *p, size_t len, bool unquote)
{
	while (len && isspace((unsigned char)*p))
		p++, len--;
	while (len && isspace((unsigned char)p[len - 1]))
		len--;
	if (unquote && len >= 2 && (p[0] == '"' || p[0] == '\'') && p[len - 1] == p[0])
		p++, len -= 2;
	return arena_strndup(a, p, len);
}

static const char *trim(struct arena *a, const char *p, size_t len)
{
	return trim_ws(a, p, len, true);
}

/* TOML's underscores stand between two digits (of the base: 0xdead_beef). */
static bool toml_digits_ok(const char *v, bool hex)
{
	for (const char *p = v; *p; p++)
		if (*p == '_' && (p == v || !(hex ? isxdigit((unsigned char)p[-1]) : isdigit((unsigned char)p[-1])) ||
				  !(hex ? isxdigit((unsigned char)p[1]) : isdigit((unsigned char)p[1]))))
			return false;
	return true;
}

/* A value's kind and its canonical text, or false for a number TOML does
 * not allow (1__0, 010) or one memc cannot hold (0x in more than 63 bits):
 * TOML's integers are 64-bit and an error past that (toml.io v1.0.0,
 * "Integer"). 0x, 0o and 0b become decimal; inf and nan are reals, which
 * no count takes. */
static bool value_kind(struct arena *a, const char *v, enum cfg_kind *kind, const char **text)
{
	size_t n = strlen(v);
	const char *p = v + (*v == '+' || *v == '-');

	*kind = CFG_STR;
	*text = v;
	if (n >= 2 && (v[0] == '"' || v[0] == '\''))
		return *text = arena_strndup(a, v + 1, n - 2), true;
	if (!strcmp(v, "true") || !strcmp(v, "false"))
		return *kind = CFG_BOOL, true;
	if (!strcmp(p, "inf") || !strcmp(p, "nan"))
		return *kind = CFG_REAL, true;
	if (!isdigit((unsigned char)*p))
		return true;	/* a bare word: read as the string it spells */
	bool hex = p[0] == '0' && p[1] == 'x', based = p[0] == '0' && (hex || p[1] == 'o' || p[1] == 'b');
	char *digits = arena_strdup(a, v), *w = digits;

	if (!toml_digits_ok(v, hex))
		return false;
	for (const char *q = v; *q; q++)
		if (*q != '_')
			*w++ = *q;
	*w = '\0';
	*text = digits;
	if (based) {
		char *end;

		errno = 0;
		unsigned long long u = strtoull(digits + 2, &end, hex ? 16 : p[1] == 'o' ? 8 : 2);

		if (p != v || !digits[2] || *end || errno == ERANGE || u > LLONG_MAX)
			return false;
		return *kind = CFG_INT, *text = arena_printf(a, "%llu", u), true;
	}
	*kind = cfg_number_kind(digits);
	/* a leading zero: 010 is not TOML; a date (1979-05-27) stays a string */
	return !(*kind != CFG_STR && p[0] == '0' && isdigit((unsigned char)p[1]));
}

/* "[a, 'b', 3]" -> "a,b,3". */
static const char *array_text(struct arena *a, const char *v)
{
	struct strbuf sb;
	const char *p = v + 1, *end = v + strlen(v) - 1;

	strbuf_init(&sb);
	while (p < end) {
		size_t len = strcspn(p, ",");

		if (p + len > end)
			len = (size_t)(end - p);
		const char *e = trim(a, p, len);

		if (*e)
			strbuf_addf(&sb, "%s%s", sb.len ? "," : "", e);
		p += len + 1;
	}
	const char *t = arena_strdup(a, sb.buf);

	strbuf_release(&sb);
	return t;
}

/* A multi-line array being read: its key, located, and its text so far
 * (appended to, line by line: copying it whole per line was quadratic). */
struct toml_pending {
	const char *path;	/* NULL: none open */
	struct loc loc;
	struct strbuf val;
};

static bool toml_pair(struct cfg *c, const char *table, const char *line, size_t len, size_t off,
		      struct toml_pending *pending)
{
	const char *eq = memchr(line, '=', len);

	if (!eq)
		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, off, len ? len : 1),
				 "expected 'key = value' or a [table] header");
	const char *key = trim(c->arena, line, (size_t)(eq - line));
	const char *val = trim_ws(c->arena, eq + 1, len - (size_t)(eq + 1 - line), false);
	size_t lead = strspn(line, " \t");
	const char *path = *table ? arena_printf(c->arena, "%s.%s", table, key) : key;
	struct loc loc = cfg_loc(c, off + lead, (size_t)(eq - line) - lead);

	if (val[0] == '[' && val[strlen(val) - 1] != ']') {
		pending->path = path;
		pending->loc = loc;
		strbuf_setlen(&pending->val, 0);
		strbuf_addstr(&pending->val, val);
		return true;
	}
	if (!*key)
		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, off, len), "a value without a key");
	if (!*val)
		return diag_fail(c->diag, DIAG_SYNTAX, loc, "'%s' has no value", key);
	if (val[0] == '[') {
		cfg_add(c, path, CFG_LIST, array_text(c->arena, val), loc);
		return true;
	}
	const char *text;
	enum cfg_kind k;

	if (val[0] == '{')
		return diag_fail(c->diag, DIAG_SYNTAX, loc, "'%s' is an inline table, which memc import "
				 "does not read: write its keys under a [%s] header", path, path);
	if ((val[0] == '"' || val[0] == '\'') && (strlen(val) < 2 || val[strlen(val) - 1] != val[0] ||
						  !strncmp(val, "\"\"\"", 3) || !strncmp(val, "'''", 3)))
		return diag_fail(c->diag, DIAG_SYNTAX, loc, "'%s' has a string that does not end on "
				 "its line (memc import reads one-line strings)", path);
	if (!value_kind(c->arena, val, &k, &text))
		return diag_fail(c->diag, DIAG_OUT_OF_RANGE, loc, "'%s' = %s is not a TOML number memc "
				 "import can hold (64-bit integers, no leading zero, '_' between digits)",
				 path, val);
	return cfg_add(c, path, k, text, loc);
}

/* A multi-line array: lines are appended until the closing bracket. */
static bool toml_continue(struct cfg *c, struct toml_pending *p, const char *line, size_t len)
{
	bool ok = true;

	strbuf_addch(&p->val, ' ');
	strbuf_add(&p->val, line, len);
	if (len && line[len - 1] == ']') {
		ok = cfg_add(c, p->path, CFG_LIST, array_text(c->arena, trim(c->arena, p->val.buf, p->val.len)),
			     p->loc);
		p->path = NULL;
	}
	return ok;
}

/* "[table]" or "[[table]]": its name, or an error for a header without
 * its closing brackets or a name (the name was cut by one byte once). */
static bool toml_header(struct cfg *c, const char *line, size_t n, size_t off, const char **table,
			struct strmap *arrays)
{
	size_t br = n > 1 && line[1] == '[' ? 2 : 1;
	const char *name = n >= 2 * br && !strncmp(line + n - br, "]]", br) ? trim(c->arena, line + br, n - 2 * br) : "";

	if (!*name || strpbrk(name, "[]"))
		return diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, off, n), "expected a table header, "
				 "%s", br == 2 ? "[[name]]" : "[name]");
	*table = name;
	if (br == 2 && !strmap_get(arrays, name, strlen(name)))
		strmap_put(arrays, c->arena, name, strlen(name), (void *)name);
	return true;
}

/* Whether @path is in an array of tables ([[name]]), where keys repeat. */
static bool in_array_table(const struct strmap *arrays, const char *path)
{
	for (const char *dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.'))
		if (strmap_get(arrays, path, (size_t)(dot - path)))
			return true;
	return false;
}

/* TOML defines a key once (toml.io v1.0.0, "Keys"); [[table]] repeats
 * are arrays of tables, whose keys memc import does not address apart. */
static bool toml_unique(struct cfg *c, const struct strmap *arrays)
{
	struct strmap seen = { 0 };
	bool ok = true;

	for (size_t i = 0; i < c->n; i++) {
		const struct cfg_item *it = &c->items[i];
		const struct loc *first = strmap_get(&seen, it->path, strlen(it->path));

		if (in_array_table(arrays, it->path))
			continue;
		if (first) {
			diag_note(diag_error(c->diag, DIAG_DUPLICATE_FIELD, it->loc, "'%s' is defined twice",
					     it->path), *first, "first defined here");
			ok = false;
			continue;
		}
		strmap_put(&seen, c->arena, it->path, strlen(it->path), (void *)&it->loc);
	}
	return ok;
}

bool cfg_read_toml(struct cfg *c)
{
	const char *t = c->file->text, *table = "";
	struct strmap arrays = { 0 };	/* the [[name]] tables */
	struct toml_pending pending = { .path = NULL };
	bool ok = true;

	strbuf_init(&pending.val);
	for (size_t off = 0; off < c->file->len;) {
		size_t full = strcspn(t + off, "\n"), len = content_len(t + off, full);
		const char *line = t + off;
		size_t lead = strspn(line, " \t");

		if (lead > len)
			lead = len;	/* a line of blanks and a comment */
		if (pending.path)
			ok &= toml_continue(c, &pending, line + lead, len - lead);
		else if (len > lead && line[lead] == '[')
			ok &= toml_header(c, line + lead, len - lead, off + lead, &table, &arrays);
		else if (len > lead)
			ok &= toml_pair(c, table, line, len, off, &pending);
		off += full + 1;
	}
	if (pending.path)
		ok = diag_fail(c->diag, DIAG_SYNTAX, cfg_loc(c, c->file->len, 0), "an array is not closed");
	strbuf_release(&pending.val);
	return toml_unique(c, &arrays) && ok;
}
