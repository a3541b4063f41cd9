/* SPDX-License-Identifier: MIT */
/*
 * build_cache.c - the builder's walk of a model (its blocks, layers and
 * parameter bytes), once per compilation for each set of what it reads.
 *
 * build_job() sets the job's precision, fine-tuning, optimizer, fp8 and
 * recompute choices into struct bld, then walks the model under the job's
 * bindings (those the checker gave it, a what-if override on top). The
 * walk reads nothing else: jobs that differ only in what is applied after
 * it (grad_accum, zero's sharding, offload, headroom, the cluster's
 * memory) lower the model alike. The key is the struct bld as the walk
 * finds it, with the fields that are the job's own cleared (its pointers,
 * the values with their lines: those are compared as values, as the
 * checker's walk cache compares bindings, lang/walk_cache.h), the model
 * and every frame of the bindings. Comparing the whole image means a field
 * added to struct bld is in the key unless it is cleared here: the cache
 * can miss, never answer for a walk it did not make.
 *
 * Only a walk that failed nothing and asked for no report is kept; RL
 * jobs, which walk more than one model, are not. A hit copies the blocks
 * into the job's arena (the compiled model rewrites its copy's activation
 * bytes) and restores the walk's results into struct bld.
 */
#include <string.h>

#include "analyzer/build_impl.h"
#include "lang/arena.h"
#include "lang/eval.h"
#include "lang/source.h"
#include "lang/walk_cache.h"

struct bld_cache_entry {
	uint64_t hash;
	struct bld image;		/* before the walk, job's fields cleared */
	struct walk_key values;
	struct bld after;		/* after the walk: its results */
	struct bld_cache_entry *next;
};

struct bld_cache {
	struct arena *perm;
	struct bld_cache_entry *by_hash[256];
	struct walk_key key;		/* the job being built: its values ... */
	struct bld image;		/* ... and its image */
	uint64_t hash;
	bool key_ok;
	size_t entries;
	bool off;			/* build_cache_enable(false): every walk made */
	unsigned long hits, misses;
};

/* Past this many lowerings a walk is made again and not kept: a file of
 * thousands of distinct shapes keeps its memory bounded (docs/limits.md). */
enum { BLD_CACHE_MAX = 512 };

static struct bld_cache *cache_of(struct eval *ev)
{
	void **slot = eval_build_cache(ev);

	if (!*slot) {
		struct bld_cache *c = ARENA_NEW(eval_perm(ev), struct bld_cache);

		c->perm = eval_perm(ev);
		*slot = c;
	}
	return *slot;
}

/* @b with what is the job's own cleared: where it is built and reported,
 * and the values whose lines differ (compared in the key's values). */
static void image_of(const struct bld *b, struct bld *img)
{
	memcpy(img, b, sizeof *img);
	img->ev = NULL;
	img->arena = NULL;
	img->cj = NULL;
	img->bindings = NULL;
	img->out = NULL;
	img->quiet = false;
	img->tensor = NULL;
	memset(&img->recompute_modules, 0, sizeof img->recompute_modules);
	memset(&img->targets, 0, sizeof img->targets);
	memset(&img->freeze, 0, sizeof img->freeze);
	memset(&img->modules_to_save, 0, sizeof img->modules_to_save);
	memset(&img->skip_modules, 0, sizeof img->skip_modules);
	memset(&img->optimizer, 0, sizeof img->optimizer);
}

static void make_key(struct bld_cache *c, const struct bld *b, struct arena *a)
{
	struct walk_key *k = &c->key;
	unsigned level = 0;

	walk_key_clear(k, a);
	walk_key_value(k, NULL, &b->cj->model);
	walk_key_value(k, NULL, &b->optimizer);
	walk_key_value(k, NULL, &b->recompute_modules);
	walk_key_value(k, NULL, &b->targets);
	walk_key_value(k, NULL, &b->freeze);
	walk_key_value(k, NULL, &b->modules_to_save);
	walk_key_value(k, NULL, &b->skip_modules);
	/* each frame after a marker of its depth: shadowing is part of the key */
	for (const struct env *e = b->bindings; e; e = env_parent(e)) {
		walk_key_value(k, NULL, &(struct value){ .kind = VAL_NONE, .nitems = ++level });
		walk_key_env(k, e);
	}
	image_of(b, &c->image);
	c->key_ok = k->ok;
	c->hash = walk_key_hash(k, src_digest((const char *)&c->image, sizeof c->image));
}

static const uint64_t *copy_u64s(struct arena *a, const uint64_t *v, size_t n)
{
	uint64_t *w;

	if (!v || !n)
		return v;
	w = ARENA_NEW_ARRAY(a, uint64_t, n);
	memcpy(w, v, n * sizeof *v);
	return w;
}

/* @n layers and the arrays they point to, in @a. Names and origins stay
 * shared: they are the declarations' (only an RL job's are printed into
 * its arena, and those are not kept). */
static struct mem_layer *copy_layers(struct arena *a, const struct mem_layer *src, size_t n)
{
	struct mem_layer *l = ARENA_NEW_ARRAY(a, struct mem_layer, n ? n : 1);

	for (size_t i = 0; i < n; i++) {
		struct mem_param *p = ARENA_NEW_ARRAY(a, struct mem_param, src[i].nparams ? src[i].nparams : 1);

		l[i] = src[i];
		if (src[i].nparams)
			memcpy(p, src[i].params, src[i].nparams * sizeof *p);
		l[i].params = p;
		l[i].save_parts = copy_u64s(a, src[i].save_parts, src[i].nsave_parts);
		l[i].temp_fwd_parts = copy_u64s(a, src[i].temp_fwd_parts, src[i].ntemp_fwd_parts);
		l[i].temp_bwd_parts = copy_u64s(a, src[i].temp_bwd_parts, src[i].ntemp_bwd_parts);
	}
	return l;
}

static struct mem_block *copy_blocks(struct arena *a, const struct mem_block *src, size_t n)
{
	struct mem_block *b = ARENA_NEW_ARRAY(a, struct mem_block, n ? n : 1);

	for (size_t i = 0; i < n; i++) {
		b[i] = src[i];
		b[i].layers = copy_layers(a, src[i].layers, src[i].nlayers);
	}
	return b;
}

static bool cacheable(const struct bld *b)
{
	return b->rl == BLD_RL_NONE && !b->rl_ops && b->cj->model.kind == VAL_INSTANCE;
}

bool bld_cache_find(struct bld *b)
{
	struct bld_cache *c = cache_of(b->ev);

	if (c->off || !cacheable(b) || eval_walks_stopped(b->ev))
		return false;
	make_key(c, b, c->perm);
	for (const struct bld_cache_entry *e = c->key_ok ? c->by_hash[c->hash & 255] : NULL; e; e = e->next) {
		if (e->hash != c->hash || memcmp(&e->image, &c->image, sizeof c->image) ||
		    !walk_key_equal(&e->values, &c->key))
			continue;
		struct bld cur = *b;

		*b = e->after;
		b->ev = cur.ev;
		b->arena = cur.arena;
		b->cj = cur.cj;
		b->bindings = cur.bindings;
		b->out = cur.out;
		b->quiet = cur.quiet;
		b->failed = cur.failed;
		b->reported = cur.reported;
		b->tensor = NULL;
		b->recompute_modules = cur.recompute_modules;
		b->targets = cur.targets;
		b->freeze = cur.freeze;
		b->modules_to_save = cur.modules_to_save;
		b->skip_modules = cur.skip_modules;
		b->optimizer = cur.optimizer;
		b->memo = cur.memo;
		b->nmemo = cur.nmemo;
		b->capmemo = cur.capmemo;
		b->reps = cur.reps;
		b->nreps = cur.nreps;
		b->capreps = cur.capreps;
		b->blocks = copy_blocks(b->arena, e->after.blocks, e->after.nblocks);
		b->capblocks = b->nblocks;
		/* the walk leaves the instance's frame parented to the bindings */
		env_set_parent(b->cj->model.args, b->bindings);
		c->hits++;
		return true;
	}
	c->misses++;
	return false;
}

/* Keep what the walk just made of the job bld_cache_find() keyed last. */
void bld_cache_put(const struct bld *b)
{
	struct bld_cache *c = cache_of(b->ev);

	if (c->off || !cacheable(b) || !c->key_ok || c->entries >= BLD_CACHE_MAX ||
	    eval_walks_stopped(b->ev))
		return;
	struct bld_cache_entry *e = ARENA_NEW(c->perm, struct bld_cache_entry);

	e->hash = c->hash;
	e->image = c->image;
	walk_key_copy(&e->values, &c->key, c->perm);
	e->after = *b;
	e->after.blocks = copy_blocks(c->perm, b->blocks, b->nblocks);
	e->after.capblocks = b->nblocks;
	/* nothing of the job's scratch arena or heap stays in the entry */
	e->after.frame = NULL;
	e->after.params = NULL;
	e->after.nparams = e->after.capparams = 0;
	e->after.save_parts = NULL;
	e->after.nsave_parts = e->after.capsave_parts = 0;
	e->after.layers = NULL;
	e->after.nlayers = e->after.caplayers = 0;
	e->after.memo = NULL;
	e->after.nmemo = e->after.capmemo = 0;
	e->after.reps = NULL;
	e->after.nreps = e->after.capreps = 0;
	e->next = c->by_hash[c->hash & 255];
	c->by_hash[c->hash & 255] = e;
	c->entries++;
}

void build_cache_stats(struct eval *ev, unsigned long *hits, unsigned long *misses)
{
	struct bld_cache *c = *eval_build_cache(ev);

	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
}

void build_cache_enable(struct eval *ev, bool on)
{
	cache_of(ev)->off = !on;
}
