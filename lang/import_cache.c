/* SPDX-License-Identifier: MIT */
/*
 * import_cache.c - the parsed declarations of verified stdlib files,
 * kept across the compilations of one process (import.h).
 *
 * A declaration of a file that checked clean when memc was built is
 * named by its entry in the build's index: that entry stands for the
 * file's path and digest, so its bytes, and with the same file id and
 * interner what parse_file_range_clean() makes of them, are the same in
 * every compilation. Only the top-level node is copied per compilation:
 * the loader links the nodes of each file into a list of its own.
 */
#include <string.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/import.h"
#include "lang/parse.h"
#include "lang/source.h"
#include "lang/strmap.h"
#include "lang/u64map.h"

struct import_cache {
	struct arena *arena;
	struct interner *in;
	struct u64map parsed;	/* by key_of(): the parsed list, a struct decl */
	struct u64map origins;	/* by interior(): each parsed top-level node */
	void *slots[IMPORT_CACHE_SLOTS];
	struct strmap files;	/* real path -> struct kept_file */
	struct strmap dirs;	/* a folder -> its realpath() ("" when it failed) */
	struct strmap paths;	/* a path tried for an import -> "y" or "n" (it exists) */
	unsigned loads;		/* import_load()s through the cache so far */
	unsigned long hits, misses;
};

/* A stdlib file as read and validated once (import_cache_keep_file). */
struct kept_file {
	const char *text;
	size_t len;
	uint64_t digest;
};

struct import_cache *import_cache_new(struct arena *a, struct interner *in)
{
	struct import_cache *c = ARENA_NEW(a, struct import_cache);

	memset(c, 0, sizeof *c);
	c->arena = a;
	c->in = in;
	return c;
}

struct interner *import_cache_interner(const struct import_cache *c)
{
	return c->in;
}

void import_cache_stats(const struct import_cache *c, unsigned long *hits, unsigned long *misses)
{
	*hits = c->hits;
	*misses = c->misses;
}

/* A user-space address has its top 16 bits clear (x86-64, AArch64, with
 * 48-bit addresses): the file id goes there; 0 when it does not fit. */
static uint64_t key_of(const struct stdlib_decl *x, uint32_t file)
{
	uint64_t p = (uint64_t)(uintptr_t)x;

	return file < (1u << 16) && !(p >> 48) ? p | (uint64_t)file << 48 : 0;
}

/* What a copy of a top-level node shares with its original: the node
 * under it (its body, parameters, value or fields), which no other
 * declaration holds; 0 for a declaration with none. */
static uint64_t interior(const struct decl *d)
{
	const void *p = NULL;

	switch (d->kind) {
	case DECL_LET: p = d->let.value; break;
	case DECL_GPU: case DECL_PRECISION: case DECL_TRAIN: p = d->record.fields; break;
	case DECL_LAYER: case DECL_MODEL: case DECL_OPTIMIZER:
		p = d->templ.body ? (const void *)d->templ.body : d->templ.params ? (const void *)d->templ.params :
		    (const void *)d->templ.alias;
		break;
	case DECL_IMPORT: case DECL__COUNT: break;
	}
	return (uint64_t)(uintptr_t)p;
}

const struct decl *import_cache_origin(const struct import_cache *c, const struct decl *d)
{
	uint64_t k = c && d ? interior(d) : 0;
	const struct decl *o = k ? u64map_get(&c->origins, k) : NULL;

	return o && o->kind == d->kind && o->name == d->name && o->loc.file == d->loc.file &&
	       o->loc.start == d->loc.start ? o : NULL;
}

struct arena *import_cache_arena(struct import_cache *c)
{
	return c->arena;
}

void **import_cache_slot(struct import_cache *c, unsigned which)
{
	return which < IMPORT_CACHE_SLOTS ? &c->slots[which] : NULL;
}

/* The nodes of @src, each top-level one copied into @a. */
static struct decl *copy_list(struct arena *a, const struct decl *src)
{
	struct decl *out = NULL, **tail = &out;

	for (; src; src = src->next) {
		struct decl *d = ARENA_NEW(a, struct decl);

		*d = *src;
		d->next = NULL;
		*tail = d;
		tail = &d->next;
	}
	return out;
}

struct decl *import_cache_parse(struct import_cache *c, struct arena *a, struct interner *in,
				struct diag_engine *de, const struct src_file *f,
				const struct stdlib_decl *x, uint32_t start, uint32_t end, unsigned *nerrors)
{
	uint64_t key = c && c->in == in && x ? key_of(x, f->id) : 0;
	const struct decl *got = key ? u64map_get(&c->parsed, key) : NULL;

	*nerrors = 0;
	if (got) {
		c->hits++;
		return copy_list(a, got);
	}
	struct file_ast *one = parse_file_range_clean(key ? c->arena : a, in, de, f, start, end);

	*nerrors = one->nerrors;
	if (!key || one->nerrors || !one->decls)
		return one->decls;
	c->misses++;
	u64map_put(&c->parsed, c->arena, key, one->decls);
	for (struct decl *d = one->decls; d; d = d->next)
		if (interior(d))
			u64map_put(&c->origins, c->arena, interior(d), d);
	return copy_list(a, one->decls);
}

bool import_cache_file(const struct import_cache *c, const char *real_path, const char **text, size_t *len,
		       uint64_t *digest)
{
	const struct kept_file *k = c && real_path ? strmap_get(&c->files, real_path, strlen(real_path)) : NULL;

	if (!k)
		return false;
	*text = k->text;
	*len = k->len;
	*digest = k->digest;
	return true;
}

void import_cache_keep_file(struct import_cache *c, const struct src_file *f, uint64_t digest)
{
	if (!c || !f->real_path || strmap_get(&c->files, f->real_path, strlen(f->real_path)))
		return;
	struct kept_file *k = ARENA_NEW(c->arena, struct kept_file);

	/* the text as read lives as long as the cache when it is in the same
	 * arena (memc check's own load): no copy for a run without a search */
	k->text = f->arena == c->arena ? f->text : arena_strndup(c->arena, f->text, f->len);
	k->len = f->len;
	k->digest = digest;
	strmap_put(&c->files, c->arena, f->real_path, strlen(f->real_path), k);
}

bool import_cache_real_dir(const struct import_cache *c, const char *dir, const char **real)
{
	const char *r = c ? strmap_get(&c->dirs, dir, strlen(dir)) : NULL;

	if (!r)
		return false;
	*real = *r ? r : NULL;
	return true;
}

void import_cache_keep_real_dir(struct import_cache *c, const char *dir, const char *real)
{
	if (c && !strmap_get(&c->dirs, dir, strlen(dir)))
		strmap_put(&c->dirs, c->arena, dir, strlen(dir), arena_strdup(c->arena, real ? real : ""));
}

void import_cache_count_load(struct import_cache *c)
{
	if (c)
		c->loads++;
}

/* Paths are kept from the second load on: a run of one compilation (most
 * runs) would only pay for keeping them. */
bool import_cache_exists(const struct import_cache *c, const char *path, bool *yes)
{
	const char *r = c && c->loads > 1 ? strmap_get(&c->paths, path, strlen(path)) : NULL;

	if (r)
		*yes = *r == 'y';
	return r != NULL;
}

void import_cache_keep_exists(struct import_cache *c, const char *path, bool yes)
{
	if (c && c->loads > 1 && !strmap_get(&c->paths, path, strlen(path)))
		strmap_put(&c->paths, c->arena, path, strlen(path), (void *)(uintptr_t)(yes ? "y" : "n"));
}
