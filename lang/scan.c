/* SPDX-License-Identifier: MIT */
/*
 * scan.c - the work behind lexer.l's rules: keywords, identifier
 * validation (Unicode XID, NFC), underscores in numbers, string escapes,
 * bracket nesting and the scanner's own diagnostics.
 *
 * Identifiers are NFC-normalised before interning so that two spellings
 * of the same text are one name. Bidirectional control characters are
 * rejected everywhere (identifiers, strings, comments): they make source
 * read differently from how it parses ("Trojan Source", CVE-2021-42574).
 */
#include <stdlib.h>
#include <string.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/intern.h"
#include "lang/lex_helpers.h"
#include "lang/parser.tab.h"
#include "lang/source.h"

/*
 * Keywords by a perfect hash of (length, first byte, last byte): one
 * memcmp per identifier instead of probing all 19, and identifiers are a
 * third of the tokens of every stdlib file a job imports. A collision of
 * two designators is a compile error (-Woverride-init, from -Wextra), so
 * a new keyword that does not fit makes the build fail, not the lookup.
 */
#define KW_HASH(len, first, last) \
	((((unsigned)(len)) * 29u + (unsigned char)(first) + (unsigned char)(last) * 8u) & 31u)
#define KW(len, first, last, word, tok) [KW_HASH(len, first, last)] = { word, len, tok }

static const struct keyword {
	const char *word;
	size_t len;
	int token;
} keywords[32] = {
	KW(6, 'i', 't', "import", IMPORT), KW(3, 'l', 't', "let", LET),
	KW(3, 'g', 'u', "gpu", GPU), KW(9, 'p', 'n', "precision", PRECISION),
	KW(5, 't', 'n', "train", TRAIN), KW(5, 'l', 'r', "layer", LAYER),
	KW(5, 'm', 'l', "model", MODEL), KW(9, 'o', 'r', "optimizer", OPTIMIZER),
	KW(5, 'p', 'm', "param", PARAM), KW(5, 's', 's', "saves", SAVES),
	KW(4, 't', 'p', "temp", TEMP), KW(5, 's', 'e', "state", STATE),
	KW(5, 'i', 't', "input", INPUT), KW(6, 'r', 't', "repeat", REPEAT),
	KW(2, 'i', 'f', "if", IF), KW(4, 'e', 'e', "else", ELSE),
	KW(4, 'w', 'n', "warn", WARN), KW(4, 't', 'e', "true", TRUE),
	KW(5, 'f', 'e', "false", FALSE),
};

/* The token of keyword text[0, len), or 0 for a plain name. */
static int keyword_token(const char *text, size_t len)
{
	const struct keyword *k = &keywords[KW_HASH(len, text[0], text[len - 1])];

	return k->len == len && memcmp(k->word, text, len) == 0 ? k->token : 0;
}

struct loc lex_head(struct loc l, uint32_t n)
{
	if (l.end - l.start > n)
		l.end = l.start + n;
	return l;
}

void lex_error(struct lex_state *ls, enum diag_id id, struct loc loc, const char *msg)
{
	diag_error(ls->diag, id, loc, "%s", msg);
}

static bool is_bidi_control(ucs4_t c)
{
	return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||
	       c == 0x200E || c == 0x200F || c == 0x061C;
}

/* Report the first bidi control character in text[0, len), if any. */
static bool check_bidi(struct lex_state *ls, struct loc loc, const char *text, size_t len,
		       const char *where)
{
	const uint8_t *p = (const uint8_t *)text, *end = p + len;

	while (p < end) {
		ucs4_t c;
		int n;

		if (*p < 0x80) {	/* ASCII holds no bidi control: skip the decoder */
			p += src_ascii_prefix((const char *)p, (size_t)(end - p));
			continue;
		}
		n = u8_mbtouc(&c, p, (size_t)(end - p));
		if (is_bidi_control(c)) {
			struct loc at = { loc.file, loc.start + (uint32_t)(p - (const uint8_t *)text), 0 };

			at.end = at.start + (uint32_t)n;
			diag_error(ls->diag, DIAG_BIDI_CONTROL, at,
				   "bidirectional control character U+%04X in %s", (unsigned)c, where);
			return true;
		}
		p += n;
	}
	return false;
}

void lex_check_comment(struct lex_state *ls, struct loc loc, const char *text, size_t len)
{
	check_bidi(ls, loc, text, len, "a comment");
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Report a malformed numeral, quoting at most 40 characters of it. */
static void bad_number(struct lex_state *ls, struct loc loc, const char *text, size_t len,
		       const char *why)
{
	int shown = len > 40 ? 40 : (int)len;

	diag_error(ls->diag, DIAG_BAD_NUMBER, loc, "malformed number '%.*s%s': %s", shown, text,
		   (size_t)shown < len ? "..." : "", why);
}

/* The rule admits underscores anywhere after the first digit; lang/num.c
 * reads them only between two digits of the mantissa. Report the numeral
 * once if any other is there. */
static void check_underscores(struct lex_state *ls, struct loc loc, const char *text, size_t len)
{
	bool exponent = false;

	for (size_t i = 0; i < len; i++) {
		if (text[i] == 'e' || text[i] == 'E')
			exponent = true;
		if (text[i] != '_')
			continue;
		if (exponent) {
			bad_number(ls, loc, text, len, "an exponent has no underscores");
			return;
		}
		if (i == 0 || i + 1 == len || !is_digit(text[i - 1]) || !is_digit(text[i + 1])) {
			bad_number(ls, loc, text, len, "underscores go between digits");
			return;
		}
	}
}

int lex_number(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len)
{
	check_underscores(ls, loc, text, len);
	if (len > PARSE_MAX_TOKEN) {
		diag_error(ls->diag, DIAG_TOKEN_TOO_LONG, lex_head(loc, 16),
			   "number is %zu characters long; the limit is %d", len, PARSE_MAX_TOKEN);
		len = PARSE_MAX_TOKEN;
	}
	lval->text = arena_strndup(ls->arena, text, len);
	return NUMBER;
}

/* Check every code point against XID_Start / XID_Continue. */
static bool valid_ident(struct lex_state *ls, struct loc loc, const char *text, size_t len)
{
	const uint8_t *s = (const uint8_t *)text, *p = s, *end = s + len;

	while (p < end) {
		ucs4_t c;
		int n = u8_mbtouc(&c, p, (size_t)(end - p));
		bool first = p == s;
		bool ok = c == '_' || (first ? uc_is_property_xid_start(c) : uc_is_property_xid_continue(c));

		if (!ok) {
			struct loc at = { loc.file, loc.start + (uint32_t)(p - s), 0 };

			at.end = at.start + (uint32_t)n;
			if (is_bidi_control(c))
				diag_error(ls->diag, DIAG_BIDI_CONTROL, at,
					   "bidirectional control character U+%04X in an identifier",
					   (unsigned)c);
			else
				diag_error(ls->diag, DIAG_INVALID_CHARACTER, at,
					   "character U+%04X cannot %s an identifier", (unsigned)c,
					   first ? "start" : "appear in");
			return false;
		}
		p += n;
	}
	return true;
}

bool lex_is_keyword(const char *text, size_t len)
{
	return len > 0 && keyword_token(text, len) != 0;
}

static bool is_ascii(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] >= 0x80)
			return false;
	return true;
}

/* The rule admits only [A-Za-z_][A-Za-z0-9_]* in ASCII, which is valid
 * XID and already NFC, so only a name with a non-ASCII byte pays for the
 * Unicode checks and the malloc'd normalisation. */
int lex_ident(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len)
{
	if (len > PARSE_MAX_TOKEN) {
		diag_error(ls->diag, DIAG_TOKEN_TOO_LONG, lex_head(loc, 16),
			   "identifier is %zu bytes long; the limit is %d", len, PARSE_MAX_TOKEN);
		lval->text = intern(ls->interner, text, PARSE_MAX_TOKEN);
		return NAME;
	}
	int kw = keyword_token(text, len);

	if (kw != 0 || is_ascii(text, len)) {
		lval->text = intern(ls->interner, text, len);
		return kw != 0 ? kw : NAME;
	}
	if (!valid_ident(ls, loc, text, len)) {
		lval->text = intern(ls->interner, text, len);
		return NAME;
	}
	size_t nlen = 0;
	uint8_t *nfc = u8_normalize(UNINORM_NFC, (const uint8_t *)text, len, NULL, &nlen);

	if (!nfc) {
		lval->text = intern(ls->interner, text, len);
		return NAME;
	}
	lval->text = intern(ls->interner, (const char *)nfc, nlen);
	free(nfc);
	return NAME;
}

/*
 * U+FEFF after the start of the file (lang/source.c drops a leading one):
 * an editor shows nothing there, so report it once and let the caller
 * give the rest of the word back to the scanner. `gpu` after it is then
 * still the keyword, and there is no second, baffling syntax error.
 */
bool lex_stray_bom(struct lex_state *ls, struct loc loc, const char *text, size_t len)
{
	if (len < 3 || memcmp(text, "\xEF\xBB\xBF", 3) != 0)
		return false;
	diag_error(ls->diag, DIAG_INVALID_CHARACTER, (struct loc){ loc.file, loc.start, loc.start + 3 },
		   "byte order mark U+FEFF is only allowed at the start of a file");
	ls->offset = loc.start + 3;	/* the rule calls yyless(3) */
	return true;
}

/* docs/language.md §1: the only escapes. */
static bool valid_escape(char c)
{
	return c == '"' || c == '\\' || c == 'n' || c == 't';
}

/* Report the unknown escape at @p (a backslash, @off bytes into the
 * token at @loc), covering the whole character after it. */
static void bad_escape(struct lex_state *ls, struct loc loc, size_t off, const char *p,
		       size_t left)
{
	int n = u8_mblen((const uint8_t *)p + 1, left - 1);
	unsigned char c = (unsigned char)p[1];
	struct loc at = { loc.file, loc.start + (uint32_t)off, 0 };
	struct diag *d;

	if (n < 1)
		n = 1;
	at.end = at.start + 1 + (uint32_t)n;
	if (c < 0x20 || c == 0x7f)
		d = diag_error(ls->diag, DIAG_BAD_ESCAPE, at,
			       "unknown escape sequence: '\\' before control character 0x%02x", c);
	else
		d = diag_error(ls->diag, DIAG_BAD_ESCAPE, at, "unknown escape sequence '\\%.*s'",
			       n, p + 1);
	diag_note(d, NO_LOC, "the escapes are \\\" \\\\ \\n and \\t");
}

/* Resolve escapes into the arena. The rule guarantees a closing quote and
 * a character after every backslash; an unknown escape is reported and
 * stands for that character. */
int lex_string(struct lex_state *ls, union YYSTYPE *lval, struct loc loc, const char *text, size_t len)
{
	/* A bidi control is reported; the string is kept so parsing continues. */
	check_bidi(ls, loc, text, len, "a string");
	if (len > PARSE_MAX_STRING) {
		diag_error(ls->diag, DIAG_TOKEN_TOO_LONG, lex_head(loc, 16),
			   "string is %zu bytes long; the limit is %d", len, PARSE_MAX_STRING);
		len = PARSE_MAX_STRING;
	}
	char *out = arena_alloc(ls->arena, len + 1), *o = out;

	for (size_t i = 1; i + 1 < len; i++) {
		char c = text[i];

		if (c == '\\' && i + 2 < len) {
			if (!valid_escape(text[i + 1]))
				bad_escape(ls, loc, i, text + i, len - 1 - i);
			c = text[++i];
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
		}
		*o++ = c;
	}
	*o = '\0';
	lval->text = out;
	return STRING;
}

int lex_open(struct lex_state *ls, struct loc loc, char c)
{
	if (ls->stopped)
		return 0;
	if (ls->depth == PARSE_MAX_DEPTH) {
		diag_error(ls->diag, DIAG_NESTING_DEPTH, loc,
			   "brackets nested more than %d deep", PARSE_MAX_DEPTH);
		ls->stopped = true;
		return 0;	/* end of input: nothing after this can be trusted */
	}
	ls->open[ls->depth++] = loc;
	return c;
}

int lex_close(struct lex_state *ls, char c)
{
	if (ls->depth > 0)
		ls->depth--;
	return c;
}

void lex_bad_char(struct lex_state *ls, struct loc loc, const char *text, size_t len)
{
	unsigned char c = (unsigned char)text[0];

	(void)len;
	if (c < 0x20 || c == 0x7f)
		diag_error(ls->diag, DIAG_INVALID_CHARACTER, loc,
			   "control character 0x%02x is not allowed here", c);
	else
		diag_error(ls->diag, DIAG_INVALID_CHARACTER, loc,
			   "character '%c' is not allowed here", c);
}
