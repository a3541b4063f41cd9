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
#include "lang/u64map.h"

struct import_cache {
	struct arena *arena;
	struct interner *in;
	struct u64map parsed;	/* by key_of(): the parsed list, a struct decl */
	unsigned long hits, misses;
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
	return copy_list(a, one->decls);
}
