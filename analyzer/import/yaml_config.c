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
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "analyzer/import/import_impl.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/strbuf.h"

struct yframe {
	const char *prefix;
	const char *key;	/* NULL: expecting a key */
	struct loc key_loc;
};

struct yreader {
	struct cfg *c;
	yaml_parser_t parser;
	struct loc top_loc;	/* the last top-level key */
	struct yframe *stack;
	size_t depth, cap;
};

/* libyaml marks count lines and code points; memc locations are bytes. */
static size_t mark_offset(const struct cfg *c, yaml_mark_t m)
{
	const struct src_file *f = c->file;
	size_t n = src_nlines(f), line = m.line < n ? m.line : n - 1, off = src_line_starts(f)[line];

	for (size_t col = 0; col < m.column && off < f->len; col++) {
		uint32_t cp;

		off += src_decode(f->text + off, f->text + f->len, &cp);
	}
	return off;
}

static enum cfg_kind plain_kind(const char *s, const char **text)
{
	char *end;

	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return *text = "true", CFG_BOOL;
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return *text = "false", CFG_BOOL;
	if (!*s || !strcmp(s, "null") || !strcmp(s, "~") || !strcmp(s, "Null"))
		return *text = "null", CFG_NULL;
	*text = s;
	if (isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+') && isdigit((unsigned char)s[1]))) {
		(void)strtod(s, &end);
		if (!*end)
			return strpbrk(s, ".eE") ? CFG_REAL : CFG_INT;
	}
	return CFG_STR;
}

static const char *frame_path(struct yreader *y, const struct yframe *f)
{
	return *f->prefix ? arena_printf(y->c->arena, "%s.%s", f->prefix, f->key)
			  : arena_strdup(y->c->arena, f->key);
}

static void push(struct yreader *y, const char *prefix)
{
	ARENA_GROW(y->c->arena, y->stack, y->depth, y->cap);
	y->stack[y->depth++] = (struct yframe){ prefix, NULL, NO_LOC };
}

static void on_scalar(struct yreader *y, yaml_event_t *e)
{
	struct yframe *f = &y->stack[y->depth - 1];
	const char *s = (const char *)e->data.scalar.value, *text = s;

	if (!f->key) {
		size_t a = mark_offset(y->c, e->start_mark), b = mark_offset(y->c, e->end_mark);

		f->key = arena_strdup(y->c->arena, s);
		f->key_loc = cfg_loc(y->c, a, b > a ? b - a : 1);
		if (f == y->stack)
			y->top_loc = f->key_loc;
		return;
	}
	enum cfg_kind k = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_kind(s, &text) : CFG_STR;

	cfg_add(y->c, frame_path(y, f), k, text, f->key_loc);
	y->c->items[y->c->n - 1].block_loc = y->top_loc;
	f->key = NULL;
}

/* A sequence value: its top-level scalars, comma-separated. */
static bool read_sequence(struct yreader *y, struct strbuf *sb)
{
	size_t depth = 1;
	yaml_event_t e;

	while (depth > 0) {
		if (!yaml_parser_parse(&y->parser, &e))
			return false;
		if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT)
			depth--;
		else if (e.type == YAML_SCALAR_EVENT && depth == 1)
			strbuf_addf(sb, "%s%s", sb->len ? "," : "", (const char *)e.data.scalar.value);
		yaml_event_delete(&e);
	}
	return true;
}

static bool on_event(struct yreader *y, yaml_event_t *e, bool *done)
{
	struct yframe *f = y->depth ? &y->stack[y->depth - 1] : NULL;

	switch (e->type) {
	case YAML_MAPPING_START_EVENT:
		push(y, f && f->key ? frame_path(y, f) : "");
		if (f)
			f->key = NULL;
		return true;
	case YAML_MAPPING_END_EVENT:
		y->depth -= y->depth > 0;
		return true;
	case YAML_SCALAR_EVENT:
		if (f)
			on_scalar(y, e);
		return true;
	case YAML_SEQUENCE_START_EVENT: {
		struct strbuf sb;
		bool ok;

		strbuf_init(&sb);
		ok = read_sequence(y, &sb);
		if (ok && f && f->key)
			cfg_add(y->c, frame_path(y, f), CFG_LIST, sb.buf, f->key_loc), f->key = NULL;
		strbuf_release(&sb);
		return ok;
	}
	case YAML_STREAM_END_EVENT:
		*done = true;
		return true;
	default:
		return true;
	}
}

bool cfg_read_yaml(struct cfg *c)
{
	struct yreader y = { .c = c };
	bool done = false, ok = true;

	yaml_parser_initialize(&y.parser);
	yaml_parser_set_input_string(&y.parser, (const unsigned char *)c->file->text, c->file->len);
	while (ok && !done) {
		yaml_event_t e;

		if (!yaml_parser_parse(&y.parser, &e)) {
			ok = false;
			break;
		}
		ok = on_event(&y, &e, &done);
		yaml_event_delete(&e);
	}
	if (!ok) {
		size_t at = mark_offset(c, y.parser.problem_mark);

		diag_error(c->diag, DIAG_SYNTAX, cfg_loc(c, at, 1), "invalid YAML: %s",
			   y.parser.problem ? y.parser.problem : "parse error");
	}
	yaml_parser_delete(&y.parser);
	return ok;
}
