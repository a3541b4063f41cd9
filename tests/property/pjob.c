/* SPDX-License-Identifier: MIT */
/*
 * pjob.c - train jobs as editable text (see pjob.h).
 *
 * The scanner knows just enough of the lexical rules (docs/language.md §1)
 * to find train blocks and split their fields: comments (`//`, `#`,
 * block comments), strings, bracket depth and the separators (newline, `;`, `,`).
 * A value is kept as text with comments removed and lines joined, so it
 * can be written back in any layout.
 */
#include "tests/property/pjob.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/strbuf.h"

/* Past a comment starting at p, or p itself. */
static const char *skip_comment(const char *p)
{
	if (p[0] == '/' && p[1] == '*') {
		const char *e = strstr(p + 2, "*/");

		return e ? e + 2 : p + strlen(p);
	}
	if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
		while (*p && *p != '\n')
			p++;
	}
	return p;
}

/* Spaces and comments; newlines too when @nl. */
static const char *skip_space(const char *p, bool nl)
{
	for (;;) {
		const char *q = skip_comment(p);

		if (q != p)
			p = q;
		else if (*p == ' ' || *p == '\t' || *p == '\r' || (nl && *p == '\n'))
			p++;
		else
			return p;
	}
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *read_ident(struct arena *a, const char **pp)
{
	const char *s = *pp, *p = s;

	while (ident_char(*p))
		p++;
	*pp = p;
	return p == s ? NULL : arena_strndup(a, s, (size_t)(p - s));
}

static void field_push(struct arena *a, struct pjob_field **v, size_t *n, size_t *cap,
		       struct pjob_field f)
{
	if (*n == *cap)
		ARENA_GROW(a, *v, *n, *cap);
	(*v)[(*n)++] = f;
}

/* A value up to a separator at depth 0, comments dropped, lines joined. */
static const char *read_value(struct arena *a, const char **pp)
{
	struct strbuf sb;
	const char *p = skip_space(*pp, true);
	int depth = 0;

	strbuf_init(&sb);
	while (*p) {
		const char *q = skip_comment(p);

		if (q != p) {
			p = q;
			continue;
		}
		if (depth == 0 && (*p == '\n' || *p == ';' || *p == ',' || *p == '}'))
			break;
		if (*p == '"') {
			const char *e = p + 1;

			while (*e && *e != '"')
				e += (*e == '\\' && e[1]) ? 2 : 1;
			strbuf_add(&sb, p, (size_t)(e - p) + (*e == '"'));
			p = *e ? e + 1 : e;
			continue;
		}
		depth += (*p == '(' || *p == '[' || *p == '{') - (*p == ')' || *p == ']' || *p == '}');
		strbuf_addch(&sb, *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p);
		p++;
	}
	*pp = p;
	while (sb.len && sb.buf[sb.len - 1] == ' ')
		strbuf_setlen(&sb, sb.len - 1);
	char *out = arena_strdup(a, sb.len ? sb.buf : "");

	strbuf_release(&sb);
	return out;
}

/* Fields after a '{' up to and past the matching '}'. */
static bool read_fields(struct arena *a, const char **pp, struct pjob_field **v, size_t *n,
			size_t *cap)
{
	const char *p = *pp;

	for (;;) {
		p = skip_space(p, true);
		while (*p == ';' || *p == ',')
			p = skip_space(p + 1, true);
		if (*p == '}') {
			*pp = p + 1;
			return true;
		}
		struct pjob_field f = { .key = read_ident(a, &p) };

		if (!f.key)
			return false;
		p = skip_space(p, false);
		if (*p == '=') {
			p++;
			f.value = read_value(a, &p);
			if (!*f.value)
				return false;
		} else if (*p == '{') {
			p++;
			if (!read_fields(a, &p, &f.sub, &f.nsub, &f.capsub))
				return false;
		} else {
			return false;
		}
		field_push(a, v, n, cap, f);
	}
}

/* A train block at p ("train NAME {"): parse it, return the end or NULL. */
static const char *read_train(struct arena *a, const char *p, struct pjob *j)
{
	p = skip_space(p + 5, true);
	j->name = read_ident(a, &p);
	p = skip_space(p, true);
	if (!j->name || *p != '{')
		return NULL;
	p++;
	return read_fields(a, &p, &j->f, &j->nf, &j->capf) ? p : NULL;
}

static bool at_train(const char *text, const char *p)
{
	return strncmp(p, "train", 5) == 0 && !ident_char(p[5]) &&
	       (p == text || !ident_char(p[-1]));
}

/* Top-level train blocks: their starts and ends into @starts/@ends. */
static size_t find_trains(const char *text, const char **starts, size_t max)
{
	size_t n = 0;

	for (const char *p = text; *p && n < max;) {
		const char *q = skip_comment(p);

		if (q != p) {
			p = q;
		} else if (*p == '"') {
			for (p++; *p && *p != '"' && *p != '\n'; p += (*p == '\\' && p[1]) ? 2 : 1)
				;
			p += *p == '"';
		} else if (at_train(text, p)) {
			starts[n++] = p;
			p += 5;
		} else {
			p++;
		}
	}
	return n;
}

size_t pjob_parse_all(struct arena *a, const char *origin, const char *text, struct pjob *out,
		      size_t max)
{
	const char **starts = ARENA_NEW_ARRAY(a, const char *, max ? max : 1);
	const char **ends = ARENA_NEW_ARRAY(a, const char *, max ? max : 1);
	size_t n = find_trains(text, starts, max), k = 0;
	struct strbuf pre;

	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		ends[i] = read_train(a, starts[i], &out[i]);
		if (!ends[i])
			return 0;
	}
	/* the prelude is the file without any train block */
	strbuf_init(&pre);
	for (size_t i = 0; i <= n; i++) {
		const char *from = i ? ends[i - 1] : text, *to = i < n ? starts[i] : text + strlen(text);

		strbuf_add(&pre, from, (size_t)(to - from));
	}
	for (k = 0; k < n; k++) {
		out[k].origin = origin;
		out[k].prelude = arena_strdup(a, pre.len ? pre.buf : "");
	}
	strbuf_release(&pre);
	return n;
}

bool pjob_parse(struct arena *a, const char *origin, const char *text, struct pjob *out)
{
	struct pjob all[16];
	size_t n = pjob_parse_all(a, origin, text, all, 16);

	if (n == 0)
		return false;
	*out = all[0];
	return true;
}

static struct pjob_field *copy_fields(struct arena *a, const struct pjob_field *f, size_t n,
				      size_t *cap)
{
	struct pjob_field *v = ARENA_NEW_ARRAY(a, struct pjob_field, n ? n : 1);

	for (size_t i = 0; i < n; i++) {
		v[i] = f[i];
		if (f[i].sub)
			v[i].sub = copy_fields(a, f[i].sub, f[i].nsub, &v[i].capsub);
	}
	*cap = n ? n : 1;
	return v;
}

struct pjob *pjob_copy(struct arena *a, const struct pjob *j)
{
	struct pjob *c = ARENA_NEW(a, struct pjob);

	*c = *j;
	c->f = copy_fields(a, j->f, j->nf, &c->capf);
	return c;
}

static struct pjob_field *find(struct pjob_field *v, size_t n, const char *key, size_t klen)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(v[i].key) == klen && strncmp(v[i].key, key, klen) == 0)
			return &v[i];
	return NULL;
}

const char *pjob_get(const struct pjob *j, const char *key)
{
	const char *dot = strchr(key, '.');
	struct pjob_field *f = find(j->f, j->nf, key, dot ? (size_t)(dot - key) : strlen(key));

	if (f && dot)
		f = f->sub ? find(f->sub, f->nsub, dot + 1, strlen(dot + 1)) : NULL;
	return f ? f->value : NULL;
}

static void remove_at(struct pjob_field *v, size_t *n, struct pjob_field *f)
{
	size_t i = (size_t)(f - v);

	memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
	(*n)--;
}

/* Set @key (length @klen) among @v to @value, adding or removing it. */
static void set_in(struct arena *a, struct pjob_field **v, size_t *n, size_t *cap,
		   const char *key, size_t klen, const char *value)
{
	struct pjob_field *f = find(*v, *n, key, klen);

	if (!value) {
		if (f)
			remove_at(*v, n, f);
		return;
	}
	if (f) {
		f->value = arena_strdup(a, value);
		return;
	}
	struct pjob_field nf = { .key = arena_strndup(a, key, klen), .value = arena_strdup(a, value) };

	field_push(a, v, n, cap, nf);
}

void pjob_set(struct arena *a, struct pjob *j, const char *key, const char *value)
{
	const char *dot = strchr(key, '.');
	struct pjob_field *rec;

	if (!dot) {
		set_in(a, &j->f, &j->nf, &j->capf, key, strlen(key), value);
		return;
	}
	rec = find(j->f, j->nf, key, (size_t)(dot - key));
	if (!rec || rec->value) {
		if (!value)
			return;
		struct pjob_field nf = { .key = arena_strndup(a, key, (size_t)(dot - key)) };

		if (rec)
			remove_at(j->f, &j->nf, rec);
		field_push(a, &j->f, &j->nf, &j->capf, nf);
		rec = &j->f[j->nf - 1];
	}
	set_in(a, &rec->sub, &rec->nsub, &rec->capsub, dot + 1, strlen(dot + 1), value);
}

uint64_t pjob_get_u64(const struct pjob *j, const char *key, uint64_t dflt)
{
	const char *v = pjob_get(j, key);
	char *end;
	unsigned long long x;

	if (!v || !isdigit((unsigned char)*v))
		return dflt;
	x = strtoull(v, &end, 10);
	return *end ? dflt : (uint64_t)x;
}

void pjob_set_u64(struct arena *a, struct pjob *j, const char *key, uint64_t v)
{
	pjob_set(a, j, key, arena_printf(a, "%" PRIu64, v));
}

/* ---- rendering ---------------------------------------------------------- */

static void render_fields(struct strbuf *sb, const struct pjob_field *f, size_t n,
			  enum pjob_style st, int depth);

static void render_field(struct strbuf *sb, const struct pjob_field *f, enum pjob_style st,
			 int depth)
{
	const char *ind = st == PJOB_NOISY ? "\t\t\t" : "      ";
	int w = st == PJOB_NOISY ? depth : 2 * depth;

	if (st == PJOB_REORDERED && depth > 1) {
		strbuf_addf(sb, " %s = %s", f->key, f->value);
		return;
	}
	if (st != PJOB_REORDERED)
		strbuf_addf(sb, "%.*s", w, ind);
	if (f->value && st == PJOB_NOISY)
		strbuf_addf(sb, "%-12s =   /* was %s */\n%.*s%s   // value\n\n", f->key, f->key,
			       w + 1, ind, f->value);
	else if (f->value)
		strbuf_addf(sb, "%s = %s%s", f->key, f->value, st == PJOB_REORDERED ? "; " : "\n");
	else {
		strbuf_addf(sb, "%s {%s", f->key, st == PJOB_NOISY ? "   # record\n\n" :
						    st == PJOB_REORDERED ? "" : "\n");
		render_fields(sb, f->sub, f->nsub, st, depth + 1);
		if (st != PJOB_REORDERED)
			strbuf_addf(sb, "%.*s", w, ind);
		strbuf_addstr(sb, st == PJOB_REORDERED ? " }; " : "}\n");
	}
}

static void render_fields(struct strbuf *sb, const struct pjob_field *f, size_t n,
			  enum pjob_style st, int depth)
{
	for (size_t i = 0; i < n; i++) {
		size_t k = st == PJOB_REORDERED ? n - 1 - i : i;

		if (st == PJOB_REORDERED && depth > 1 && i)
			strbuf_addch(sb, ',');
		render_field(sb, &f[k], st, depth);
	}
}

/* Import lines in reverse order when the prelude is only imports and line
 * comments (declaration order must not matter); otherwise as written. */
static void render_prelude(struct arena *a, struct strbuf *sb, const char *pre, bool reverse)
{
	size_t n = 0, cap = 8;
	const char **lines = ARENA_NEW_ARRAY(a, const char *, cap);
	char *copy = arena_strdup(a, pre);

	for (char *s = strtok(copy, "\n"); s; s = strtok(NULL, "\n")) {
		const char *t = s + strspn(s, " \t");

		if (*t && strncmp(t, "//", 2) != 0 && strncmp(t, "import ", 7) != 0)
			reverse = false;
		if (n == cap)
			ARENA_GROW(a, lines, n, cap);
		lines[n++] = s;
	}
	for (size_t i = 0; i < n; i++)
		strbuf_addf(sb, "%s\n", lines[reverse ? n - 1 - i : i]);
}

char *pjob_render(struct arena *a, const struct pjob *j, enum pjob_style style)
{
	struct strbuf sb;
	char *out;

	strbuf_init(&sb);
	if (style == PJOB_NOISY)
		strbuf_addstr(&sb, "// property suite: the same job in another layout\n\n");
	if (style != PJOB_REORDERED)
		render_prelude(a, &sb, j->prelude, false);
	if (style == PJOB_NOISY)
		strbuf_addf(&sb, "/* train block\n   follows */\ntrain\t%s\t{  // open\n\n", j->name);
	else
		strbuf_addf(&sb, "\ntrain %s {%s", j->name, style == PJOB_REORDERED ? " " : "\n");
	render_fields(&sb, j->f, j->nf, style, 1);
	strbuf_addstr(&sb, "}\n");
	if (style == PJOB_REORDERED)
		render_prelude(a, &sb, j->prelude, true);
	out = arena_strdup(a, sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	return out;
}
