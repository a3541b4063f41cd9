/* SPDX-License-Identifier: MIT */
/*
 * confusable.c - -Wconfusable and -Wmixed-script over the declared names
 * of a program (see confusable.h for the rules).
 *
 * Every declared name is collected with its skeleton, the entries are
 * sorted by (skeleton, name, order) so that look-alikes and repeats of
 * one name sit together, each group picks the name the others are
 * compared with, and the warnings are then emitted in declaration order.
 * ASCII names, nearly all of them, are their own skeleton and cost a
 * strlen.
 */
#include "lang/confusable.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unictype.h>
#include <uniname.h>
#include <uninorm.h>
#include <unistr.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/strbuf.h"

/*
 * Letters drawn like an ASCII letter in common fonts, from Unicode TR39's
 * confusables.txt: the Cyrillic and Greek capitals and small letters that
 * match a Latin one, and a few Latin variants. Sorted by code point.
 */
static const struct lookalike {
	uint32_t cp;
	char ascii;
} lookalikes[] = {
	{ 0x0131, 'i' }, { 0x0251, 'a' }, { 0x0261, 'g' },
	{ 0x0391, 'A' }, { 0x0392, 'B' }, { 0x0395, 'E' }, { 0x0396, 'Z' }, { 0x0397, 'H' },
	{ 0x0399, 'I' }, { 0x039A, 'K' }, { 0x039C, 'M' }, { 0x039D, 'N' }, { 0x039F, 'O' },
	{ 0x03A1, 'P' }, { 0x03A4, 'T' }, { 0x03A5, 'Y' }, { 0x03A7, 'X' },
	{ 0x03B1, 'a' }, { 0x03B9, 'i' }, { 0x03BA, 'k' }, { 0x03BD, 'v' }, { 0x03BF, 'o' },
	{ 0x03C1, 'p' }, { 0x03C5, 'u' }, { 0x03F2, 'c' }, { 0x03F3, 'j' },
	{ 0x0405, 'S' }, { 0x0406, 'I' }, { 0x0408, 'J' },
	{ 0x0410, 'A' }, { 0x0412, 'B' }, { 0x0415, 'E' }, { 0x041A, 'K' }, { 0x041C, 'M' },
	{ 0x041D, 'H' }, { 0x041E, 'O' }, { 0x0420, 'P' }, { 0x0421, 'C' }, { 0x0422, 'T' },
	{ 0x0425, 'X' },
	{ 0x0430, 'a' }, { 0x0435, 'e' }, { 0x043E, 'o' }, { 0x0440, 'p' }, { 0x0441, 'c' },
	{ 0x0443, 'y' }, { 0x0445, 'x' }, { 0x0455, 's' }, { 0x0456, 'i' }, { 0x0458, 'j' },
	{ 0x04AE, 'Y' }, { 0x04BB, 'h' }, { 0x04C0, 'I' }, { 0x04CF, 'l' }, { 0x0501, 'd' },
	{ 0x051A, 'Q' }, { 0x051B, 'q' }, { 0x051C, 'W' }, { 0x051D, 'w' },
};

static int cmp_lookalike(const void *key, const void *elem)
{
	uint32_t cp = *(const uint32_t *)key, e = ((const struct lookalike *)elem)->cp;

	return cp < e ? -1 : cp > e;
}

static char lookalike_of(uint32_t cp)
{
	const struct lookalike *l = bsearch(&cp, lookalikes, sizeof lookalikes / sizeof lookalikes[0],
					    sizeof lookalikes[0], cmp_lookalike);

	return l ? l->ascii : 0;
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

const char *confusable_skeleton(struct arena *a, const char *name)
{
	size_t n = 0;
	uint8_t *d;

	if (is_ascii(name) ||
	    !(d = u8_normalize(UNINORM_NFKD, (const uint8_t *)name, strlen(name), NULL, &n)))
		return name;	/* NULL: out of memory, or not UTF-8; then it is itself */

	struct strbuf sb;

	strbuf_init(&sb);
	for (size_t i = 0; i < n;) {
		ucs4_t cp;
		int len = u8_mbtouc(&cp, d + i, n - i);
		char ascii = lookalike_of(cp);

		if (ascii)
			strbuf_addch(&sb, ascii);
		else
			strbuf_add(&sb, d + i, (size_t)len);
		i += (size_t)len;
	}
	free(d);

	const char *res = strcmp(sb.buf, name) == 0 ? name : arena_strndup(a, sb.buf, sb.len);
	strbuf_release(&sb);
	return res;
}

/* ---- scripts ------------------------------------------------------------ */

/* Scripts that may mix with Latin and each other in the combinations of
 * allowed_mix() (TR39 "highly restrictive"): Japanese, Chinese, Korean. */
enum { S_LATIN, S_HAN, S_HIRAGANA, S_KATAKANA, S_BOPOMOFO, S_HANGUL, S__COUNT };

static const char *const cjk_names[S__COUNT] = {
	"Latin", "Han", "Hiragana", "Katakana", "Bopomofo", "Hangul",
};

static bool allowed_mix(unsigned mask)
{
	unsigned base = 1u << S_LATIN | 1u << S_HAN;
	unsigned japanese = base | 1u << S_HIRAGANA | 1u << S_KATAKANA;

	return (mask & (mask - 1)) == 0 || (mask & ~japanese) == 0 ||
	       (mask & ~(base | 1u << S_BOPOMOFO)) == 0 || (mask & ~(base | 1u << S_HANGUL)) == 0;
}

/* The two scripts met first in a name, with their letter counts. */
struct script_seen {
	const uc_script_t *s;
	unsigned n;
	unsigned first_cp;
};

static void tally(struct script_seen t[2], const uc_script_t *s, unsigned cp)
{
	for (int i = 0; i < 2; i++) {
		if (t[i].s && t[i].s != s)
			continue;
		if (!t[i].s)
			t[i] = (struct script_seen){ s, 0, cp };
		t[i].n++;
		return;
	}
}

static int cjk_index(const uc_script_t *s)
{
	for (int i = 0; i < S__COUNT; i++)
		if (s == uc_script_byname(cjk_names[i]))
			return i;
	return -1;
}

bool confusable_mixed_script(const char *name, const char **first, const char **second,
			     unsigned *cp)
{
	const uc_script_t *common = uc_script_byname("Common"), *inherited = uc_script_byname("Inherited");
	const uc_script_t *other = NULL;
	struct script_seen t[2] = { { 0 } };
	unsigned mask = 0;
	bool two_others = false;
	const uint8_t *p = (const uint8_t *)name, *end = p + strlen(name);

	if (is_ascii(name))
		return false;	/* Latin and Common only */
	while (p < end) {
		ucs4_t c;
		int len = u8_mbtouc(&c, p, (size_t)(end - p));
		const uc_script_t *s = uc_script(c);
		int k = s && s != common && s != inherited ? cjk_index(s) : -2;

		p += len;
		if (k == -2)
			continue;	/* digits, "_", combining marks: any script */
		tally(t, s, c);
		if (k >= 0)
			mask |= 1u << k;
		else if (!other)
			other = s;
		else if (other != s)
			two_others = true;
	}
	if (!two_others && !(other && mask) && allowed_mix(mask))
		return false;
	*first = t[0].s->name;
	*second = t[1].s->name;
	*cp = t[0].n < t[1].n ? t[0].first_cp : t[1].first_cp;
	return true;
}

/* ---- collecting declared names ------------------------------------------ */

struct name_entry {
	const char *name, *skel;
	struct loc loc;
	size_t order;				/* declaration order in the program */
	const struct name_entry *other;		/* the look-alike to warn about, or NULL */
	bool first;				/* first declaration of this name */
};

struct collector {
	struct arena *a;
	struct name_entry *v;
	size_t n, cap;
	bool ascii_too;		/* false: only names with a non-ASCII letter */
};

static void add_name(struct collector *c, const char *name, struct loc loc)
{
	if (!name || (!c->ascii_too && is_ascii(name)))
		return;
	ARENA_GROW(c->a, c->v, c->n, c->cap);
	c->v[c->n] = (struct name_entry){ name, confusable_skeleton(c->a, name), loc, c->n, NULL,
					  false };
	c->n++;
}

/* Bodies nest at most PARSE_MAX_DEPTH deep, which bounds the recursion. */
static void add_stmts(struct collector *c, const struct stmt *s)
{
	for (; s; s = s->next) {
		if (s->kind == STMT_TENSOR)
			add_name(c, s->tensor.name, s->tensor.name_loc);
		else if (s->kind == STMT_LET)
			add_name(c, s->let.name, s->let.name_loc);
		else if (s->kind == STMT_REPEAT)
			add_stmts(c, s->repeat.body);
		else if (s->kind == STMT_IF) {
			add_stmts(c, s->if_.then_body);
			add_stmts(c, s->if_.else_body);
		}
	}
}

static void add_decl(struct collector *c, const struct decl *d)
{
	if (d->kind == DECL_IMPORT)
		return;
	add_name(c, d->name, d->name_loc);
	if (d->kind != DECL_LAYER && d->kind != DECL_MODEL && d->kind != DECL_OPTIMIZER)
		return;
	for (const struct param *p = d->templ.params; p; p = p->next)
		add_name(c, p->name, p->name_loc);
	add_stmts(c, d->templ.body);
}

/* ---- grouping and reporting --------------------------------------------- */

static int cmp_entry(const void *x, const void *y)
{
	const struct name_entry *a = *(struct name_entry *const *)x, *b = *(struct name_entry *const *)y;
	int c = strcmp(a->skel, b->skel);

	if (!c)
		c = strcmp(a->name, b->name);
	return c ? c : (a->order > b->order) - (a->order < b->order);
}

static bool better_reference(const struct name_entry *e, const struct name_entry *ref)
{
	bool plain = e->name == e->skel, ref_plain = ref->name == ref->skel;

	return plain != ref_plain ? plain : e->order < ref->order;
}

/*
 * One group of equal skeletons, [g, end) of the sorted array: mark the
 * first declaration of each name, and point every name but one at that
 * one: the name that is its own skeleton (plain ASCII, usually the one
 * meant), else the one declared first.
 */
static void resolve_group(struct name_entry **g, struct name_entry **end)
{
	struct name_entry *ref = NULL;

	for (struct name_entry **e = g; e < end; e++) {
		if (e != g && (*e)->name == e[-1]->name)
			continue;	/* a repeat: sorted after that name's first */
		(*e)->first = true;
		if (!ref || better_reference(*e, ref))
			ref = *e;
	}
	for (struct name_entry **e = g; e < end; e++)
		if ((*e)->first && (*e)->name != ref->name)
			(*e)->other = ref;
}

/* "U+0410 CYRILLIC CAPITAL LETTER A", into @buf. */
static const char *describe(unsigned cp, char buf[UNINAME_MAX + 16])
{
	char name[UNINAME_MAX];
	const char *n = unicode_character_name(cp, name);

	snprintf(buf, UNINAME_MAX + 16, "U+%04X%s%s", cp, n ? " " : "", n ? n : "");
	return buf;
}

/* The first code point of @a that differs from the one at the same place
 * in @b (names that look alike have the same length in letters, mostly). */
static unsigned first_difference(const char *a, const char *b)
{
	const uint8_t *p = (const uint8_t *)a, *pe = p + strlen(a);
	const uint8_t *q = (const uint8_t *)b, *qe = q + strlen(b);
	ucs4_t ca = 0, cb;

	while (p < pe) {
		p += u8_mbtouc(&ca, p, (size_t)(pe - p));
		cb = 0;
		if (q < qe)
			q += u8_mbtouc(&cb, q, (size_t)(qe - q));
		if (ca != cb)
			break;
	}
	return ca;
}

static void report(struct diag_engine *de, const struct name_entry *e)
{
	char buf[UNINAME_MAX + 16];
	const char *s1, *s2;
	unsigned cp;

	if (e->other) {
		struct diag *d = diag_warn(de, DIAG_CONFUSABLE, e->loc,
					   "'%s' looks like '%s' but is a different name (%s)", e->name,
					   e->other->name, describe(first_difference(e->name, e->other->name), buf));

		diag_note(d, e->other->loc, "'%s' is declared here", e->other->name);
	} else if (confusable_mixed_script(e->name, &s1, &s2, &cp)) {
		diag_warn(de, DIAG_MIXED_SCRIPT, e->loc, "'%s' mixes %s and %s letters (%s is %s)",
			  e->name, s1, s2, describe(cp, buf), uc_script(cp)->name);
	}
}

void confusable_check(struct arena *a, struct diag_engine *de, const struct program *p)
{
	struct collector c = { .a = a };

	if (!diag_is_enabled(de, DIAG_CONFUSABLE) && !diag_is_enabled(de, DIAG_MIXED_SCRIPT))
		return;
	/* Both warnings need a name with a non-ASCII letter (distinct ASCII
	 * names have distinct skeletons), so an ASCII-only program, nearly
	 * every one, costs one walk and no table. */
	for (int pass = 0; pass < 2; pass++) {
		c.ascii_too = pass == 1;
		c.n = 0;
		for (size_t i = 0; i < p->nfiles; i++)
			for (const struct decl *d = p->files[i]->decls; d; d = d->next)
				add_decl(&c, d);
		if (!c.n)
			return;
	}

	struct name_entry **by = ARENA_NEW_ARRAY(a, struct name_entry *, c.n);

	for (size_t i = 0; i < c.n; i++)
		by[i] = &c.v[i];
	qsort(by, c.n, sizeof *by, cmp_entry);
	for (size_t i = 0, j; i < c.n; i = j) {
		for (j = i + 1; j < c.n && strcmp(by[j]->skel, by[i]->skel) == 0; j++)
			;
		resolve_group(by + i, by + j);
	}
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].first)
			report(de, &c.v[i]);
}
