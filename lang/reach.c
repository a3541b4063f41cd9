/* SPDX-License-Identifier: MIT */
/*
 * reach.c - the stdlib declarations a program reaches by name (reach.h).
 *
 * A worklist over declaration source texts: scanning a declaration's
 * bytes for words is independent of the AST's shape, so a new kind of
 * expression or statement can never make a used declaration look unused.
 * Words are found with intern_find(): a word the lexer never interned
 * cannot be a declared name, and nothing new is interned.
 */
#include "lang/reach.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uninorm.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"

struct reach {
	const struct decl **lazy;	/* every declaration of an imported stdlib file */
	/* lazy[i]'s entry in the build's index, when every stdlib file is
	 * verified: its words that name stdlib declarations, found at build
	 * time; else NULL (the text is scanned) */
	const struct stdlib_decl **index;
	size_t *next_same_name;		/* chain through lazy[] by name; SIZE_MAX ends */
	bool *wanted;
	size_t nlazy;
	size_t *by_name, *by_decl;	/* open addressing: index + 1, 0 is empty */
	size_t mask;
	size_t *work;			/* lazy[] indices whose text is still to scan */
	size_t nwork;
};

static size_t hash_ptr(const void *p)
{
	uintptr_t h = (uintptr_t)p;

	h ^= h >> 17;
	h *= (uintptr_t)0x9E3779B97F4A7C15u;
	return (size_t)(h ^ (h >> 29));
}

/* The first lazy index named @name (SIZE_MAX: none). */
static size_t first_named(const struct reach *r, const char *name)
{
	for (size_t j = hash_ptr(name) & r->mask; r->by_name[j]; j = (j + 1) & r->mask)
		if (r->lazy[r->by_name[j] - 1]->name == name)
			return r->by_name[j] - 1;
	return SIZE_MAX;
}

static void index_decl(struct reach *r, size_t i)
{
	const struct decl *d = r->lazy[i];
	size_t j;

	for (j = hash_ptr(d) & r->mask; r->by_decl[j]; j = (j + 1) & r->mask)
		;
	r->by_decl[j] = i + 1;
	r->next_same_name[i] = SIZE_MAX;
	if (!d->name)
		return;
	size_t first = first_named(r, d->name);

	if (first != SIZE_MAX) {	/* same name, another kind or file: chain it */
		r->next_same_name[i] = r->next_same_name[first];
		r->next_same_name[first] = i;
		return;
	}
	for (j = hash_ptr(d->name) & r->mask; r->by_name[j]; j = (j + 1) & r->mask)
		;
	r->by_name[j] = i + 1;
}

/* An imported (not root) file found in the stdlib folder. */
static bool is_lazy_file(const struct src_table *src, const struct file_ast *f)
{
	const struct src_file *sf = src_get(src, f->file);

	return sf->included_from.file != 0 && import_is_stdlib_name(sf->display_name);
}

static size_t count_lazy(const struct src_table *src, const struct program *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nfiles; i++)
		if (is_lazy_file(src, p->files[i]))
			for (const struct decl *d = p->files[i]->decls; d; d = d->next)
				n++;
	return n;
}

static struct reach *reach_new(struct arena *a, size_t n)
{
	struct reach *r = ARENA_NEW(a, struct reach);
	size_t slots = 16;

	while (slots < 2 * n)
		slots *= 2;
	r->lazy = ARENA_NEW_ARRAY(a, const struct decl *, n);
	r->index = ARENA_NEW_ARRAY(a, const struct stdlib_decl *, n);
	r->next_same_name = ARENA_NEW_ARRAY(a, size_t, n);
	r->wanted = ARENA_NEW_ARRAY(a, bool, n);
	r->work = ARENA_NEW_ARRAY(a, size_t, n);
	r->by_name = ARENA_NEW_ARRAY(a, size_t, slots);
	r->by_decl = ARENA_NEW_ARRAY(a, size_t, slots);
	r->mask = slots - 1;
	return r;
}

/* Mark every lazy declaration named @name (interned, or NULL). */
static void mark_name(struct reach *r, const char *name)
{
	for (size_t i = name ? first_named(r, name) : SIZE_MAX; i != SIZE_MAX; i = r->next_same_name[i])
		if (!r->wanted[i]) {
			r->wanted[i] = true;
			r->work[r->nwork++] = i;
		}
}

/* Hand @fn the word text[0, len) as the lexer interns it: NFC when it is
 * not ASCII. */
static void each_form(const char *text, size_t len, bool ascii, reach_word_fn *fn, void *ctx)
{
	if (ascii) {
		fn(ctx, text, len);
		return;
	}
	size_t nlen = 0;
	uint8_t *nfc = u8_normalize(UNINORM_NFC, (const uint8_t *)text, len, NULL, &nlen);

	if (nfc)
		fn(ctx, (const char *)nfc, nlen);
	else
		fn(ctx, text, len);
	free(nfc);
}

/* Byte classes of identifiers, as the lexer's rule: 1 can start a word
 * (letters, '_', any byte of a UTF-8 sequence), 2 only continue one. */
#define R4(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1
#define R16(c) R4(c), R4(c + 4), R4(c + 8), R4(c + 12)
static const unsigned char word_class[256] = {
	['0'] = 2, ['1'] = 2, ['2'] = 2, ['3'] = 2, ['4'] = 2,
	['5'] = 2, ['6'] = 2, ['7'] = 2, ['8'] = 2, ['9'] = 2,
	R16('A'), R4('A' + 16), R4('A' + 20), ['Y'] = 1, ['Z'] = 1, ['_'] = 1,
	R16('a'), R4('a' + 16), R4('a' + 20), ['y'] = 1, ['z'] = 1,
	R16(0x80), R16(0x90), R16(0xA0), R16(0xB0), R16(0xC0), R16(0xD0), R16(0xE0), R16(0xF0),
};
#undef R16
#undef R4

void reach_each_word(const char *t, uint32_t start, uint32_t end, reach_word_fn *fn, void *ctx)
{
	uint32_t i = start;

	while (i < end) {
		while (i < end && word_class[(unsigned char)t[i]] != 1)
			i++;	/* a digit run is a number or a word's tail: skipped with the rest */
		if (i == end)
			break;
		uint32_t s = i;
		unsigned char high = 0;

		while (i < end && word_class[(unsigned char)t[i]])
			high |= (unsigned char)t[i++];
		each_form(t + s, i - s, high < 0x80, fn, ctx);
	}
}

struct scan_ctx {
	struct reach *r;
	const struct interner *in;
};

static void mark_word(void *ctx, const char *w, size_t n)
{
	struct scan_ctx *c = ctx;

	mark_name(c->r, intern_find(c->in, w, n));
}

static void scan_decl(struct reach *r, const struct interner *in, const struct src_table *src,
		      const struct decl *d)
{
	const struct src_file *f = src_get(src, d->loc.file);
	struct scan_ctx c = { r, in };

	reach_each_word(f->text, d->loc.start, d->loc.end < f->len ? d->loc.end : f->len, mark_word, &c);
}

/* Declaration @i's words, from the build's index when there is one. */
static void scan_lazy(struct reach *r, const struct interner *in, const struct src_table *src, size_t i)
{
	const struct stdlib_decl *x = r->index[i];

	if (!x) {
		scan_decl(r, in, src, r->lazy[i]);
		return;
	}
	for (size_t k = 0; k < x->nrefs; k++)
		mark_name(r, intern_find(in, x->refs[k], strlen(x->refs[k])));
}

static void mark_word_text(struct reach *r, const struct interner *in, const char *t)
{
	struct scan_ctx c = { r, in };

	reach_each_word(t, 0, (uint32_t)strlen(t), mark_word, &c);
}

/* The names @like reached (by their bytes: it may come from another
 * interner), and with @x->gpus every gpu. */
static void mark_extra(struct reach *r, const struct interner *in, const struct reach_extra *x)
{
	for (size_t i = 0; x->like && i < x->like->nlazy; i++) {
		const char *name = x->like->lazy[i]->name;

		if (x->like->wanted[i] && name)
			mark_name(r, intern_find(in, name, strlen(name)));
	}
	for (size_t i = 0; x->gpus && i < r->nlazy; i++)
		if (r->lazy[i]->kind == DECL_GPU && !r->wanted[i]) {
			r->wanted[i] = true;
			r->work[r->nwork++] = i;
		}
	if (x->words)
		mark_word_text(r, in, x->words);
}

const struct reach *reach_compute(struct arena *a, const struct interner *in,
				  const struct src_table *src, const struct program *p,
				  const struct reach_extra *extra)
{
	size_t n = count_lazy(src, p);

	if (n == 0)
		return NULL;
	struct reach *r = reach_new(a, n);

	for (size_t i = 0; i < p->nfiles; i++) {
		const struct file_ast *f = p->files[i];
		/* all stdlib files verified: no name outside the build's stdlib
		 * can be declared, so the build's list of words is complete */
		const struct stdlib_decl *x = p->stdlib_verified ? f->index : NULL;

		if (!is_lazy_file(src, f))
			continue;
		for (const struct decl *d = f->decls; d; d = d->next, x = x ? x + 1 : NULL) {
			r->index[r->nlazy] = x;
			r->lazy[r->nlazy++] = d;
		}
	}
	for (size_t i = 0; i < r->nlazy; i++) {
		index_decl(r, i);
		/* Precision policies are a handful of small records, and a job
		 * that names a dtype where a policy goes is told every policy
		 * that uses it (check_train.c): they are always reached. */
		if (r->lazy[i]->kind == DECL_PRECISION && !r->wanted[i]) {
			r->wanted[i] = true;
			r->work[r->nwork++] = i;
		}
	}
	for (size_t i = 0; i < p->nfiles; i++)
		if (!is_lazy_file(src, p->files[i]))
			for (const struct decl *d = p->files[i]->decls; d; d = d->next)
				scan_decl(r, in, src, d);
	if (extra)
		mark_extra(r, in, extra);
	while (r->nwork > 0)
		scan_lazy(r, in, src, r->work[--r->nwork]);
	return r;
}

bool reach_wants(const struct reach *r, const struct decl *d)
{
	if (!r)
		return true;
	for (size_t j = hash_ptr(d) & r->mask; r->by_decl[j]; j = (j + 1) & r->mask)
		if (r->lazy[r->by_decl[j] - 1] == d)
			return r->wanted[r->by_decl[j] - 1];
	return true;
}

struct miss_ctx {
	const struct reach *r;
	const struct interner *in;
	bool missed;
};

static void miss_word(void *ctx, const char *w, size_t n)
{
	struct miss_ctx *c = ctx;
	const char *name = c->missed ? NULL : intern_find(c->in, w, n);

	for (size_t i = name ? first_named(c->r, name) : SIZE_MAX; i != SIZE_MAX; i = c->r->next_same_name[i])
		c->missed |= !c->r->wanted[i];
}

bool reach_misses(const struct reach *r, const struct interner *in, const char *t, uint32_t start,
		  uint32_t end)
{
	struct miss_ctx c = { r, in, false };

	if (r)
		reach_each_word(t, start, end, miss_word, &c);
	return c.missed;
}
