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
 * The optimizer is not in the key's hash: the walk evaluates its body
 * per trainable tensor (build_param.c train_bytes), and those states are
 * the only bytes of the walk it decides, so a job whose walk was made
 * under another optimizer takes it with the states evaluated again from
 * what the walk recorded of each tensor (rederive: its layers copied on
 * write); one that would report or fail there is walked instead. An entry
 * keeps the walk's optimizer apart, and a job with that one takes the
 * entry as walked.
 *
 * Only a walk that failed nothing and asked for no report is kept; RL
 * jobs, which walk more than one model, are not. A hit copies the array
 * of blocks into the job's arena (build_job merges and drops blocks in
 * it) and shares their layers, which nothing writes after the walk (the
 * compiled model and Megatron's tied copy make copies of their own), and
 * restores the walk's results into struct bld.
 *
 * As the checker's walks (lang/walk_cache.c), a walk is also kept for
 * every compilation that shares the program's import cache (struct
 * bld_store, in the cache's arena): its key's declarations replaced by the
 * nodes the cache parsed (walk_key_canonical), and only if each layer of
 * its blocks is one of those too, which then stands for it as the layer's
 * origin (the same name and location in every such compilation; a
 * parameter's origin, its tensor statement, lies under that node).
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/eval.h"
#include "lang/import.h"
#include "lang/source.h"
#include "lang/walk_cache.h"

struct bld_cache_entry {
	uint64_t hash;
	struct bld image;		/* before the walk, job's fields cleared */
	struct walk_key values;
	struct walk_key opt;		/* the optimizer the walk evaluated (not in the hash) */
	struct bld after;		/* after the walk: its results */
	/* each trainable tensor of after's blocks in order, with what its
	 * states were evaluated from; rederivable: the two were checked to
	 * line up (new_entry), so another optimizer's states can be put in */
	const struct bld_opt_use *uses;
	size_t nuses;
	bool rederivable;
	struct bld_cache_entry *next;
};

struct bld_cache {
	struct arena *perm;
	struct bld_cache_entry *by_hash[256];
	struct walk_key key;		/* the job being built: its values ... */
	struct walk_key opt;		/* ... its optimizer ... */
	struct bld image;		/* ... and its image */
	uint64_t hash;
	bool key_ok;
	size_t entries;
	bool off;			/* build_cache_enable(false): every walk made */
	unsigned long hits, misses, rederived;
};

/* The walks kept for the compilations that share an import cache. */
struct bld_store {
	struct arena *arena;
	struct bld_cache_entry *by_hash[256];
	struct walk_key key;		/* the canonical key being looked up (reused) */
	struct walk_key opt;		/* and its optimizer's */
	uint64_t hash;
	size_t entries;
	unsigned long hits, misses, rederived;
};

/* Past this many lowerings a walk is made again and not kept: a file of
 * thousands of distinct shapes keeps its memory bounded (docs/limits.md).
 * The store shared by one file's compilations keeps as many. */
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
	memset(&img->train_layers, 0, sizeof img->train_layers);
	memset(&img->modules_to_save, 0, sizeof img->modules_to_save);
	memset(&img->skip_modules, 0, sizeof img->skip_modules);
	memset(&img->optimizer, 0, sizeof img->optimizer);
	img->opt_uses = NULL;
	img->nopt_uses = img->capopt_uses = 0;
}

static void make_key(struct bld_cache *c, const struct bld *b, struct arena *a)
{
	struct walk_key *k = &c->key;
	unsigned level = 0;

	walk_key_clear(k, a);
	walk_key_value(k, NULL, &b->cj->model);
	walk_key_value(k, NULL, &b->recompute_modules);
	walk_key_value(k, NULL, &b->targets);
	walk_key_value(k, NULL, &b->freeze);
	walk_key_value(k, NULL, &b->train_layers);
	walk_key_value(k, NULL, &b->modules_to_save);
	walk_key_value(k, NULL, &b->skip_modules);
	/* each frame after a marker of its depth: shadowing is part of the key */
	for (const struct env *e = b->bindings; e; e = env_parent(e)) {
		walk_key_value(k, NULL, &(struct value){ .kind = VAL_NONE, .nitems = ++level });
		walk_key_env(k, e);
	}
	/* apart: a walk under another optimizer is this one's with the states
	 * evaluated again (rederive) */
	walk_key_clear(&c->opt, a);
	walk_key_value(&c->opt, NULL, &b->optimizer);
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
 * its arena, and those are not kept); with @ic, each layer's origin is the
 * node @ic parsed it from (layers_shared). */
static struct mem_layer *copy_layers(struct arena *a, const struct mem_layer *src, size_t n,
				     const struct import_cache *ic)
{
	struct mem_layer *l = ARENA_NEW_ARRAY(a, struct mem_layer, n ? n : 1);

	for (size_t i = 0; i < n; i++) {
		struct mem_param *p = ARENA_NEW_ARRAY(a, struct mem_param, src[i].nparams ? src[i].nparams : 1);

		l[i] = src[i];
		if (src[i].nparams)
			memcpy(p, src[i].params, src[i].nparams * sizeof *p);
		l[i].params = p;
		if (ic && l[i].origin)
			l[i].origin = import_cache_origin(ic, l[i].origin);
		l[i].save_parts = copy_u64s(a, src[i].save_parts, src[i].nsave_parts);
		l[i].temp_fwd_parts = copy_u64s(a, src[i].temp_fwd_parts, src[i].ntemp_fwd_parts);
		l[i].temp_bwd_parts = copy_u64s(a, src[i].temp_bwd_parts, src[i].ntemp_bwd_parts);
	}
	return l;
}

static struct mem_block *copy_blocks(struct arena *a, const struct mem_block *src, size_t n,
				     const struct import_cache *ic)
{
	struct mem_block *b = ARENA_NEW_ARRAY(a, struct mem_block, n ? n : 1);

	for (size_t i = 0; i < n; i++) {
		b[i] = src[i];
		b[i].layers = copy_layers(a, src[i].layers, src[i].nlayers, ic);
	}
	return b;
}

static struct bld_store *store_of(struct eval *ev)
{
	struct import_cache *ic = eval_import_cache(ev);
	void **slot = ic ? import_cache_slot(ic, IMPORT_CACHE_BUILDS) : NULL;

	if (slot && !*slot) {
		struct bld_store *s = ARENA_NEW(import_cache_arena(ic), struct bld_store);

		s->arena = import_cache_arena(ic);
		*slot = s;
	}
	return slot ? *slot : NULL;
}

/* The store's key for the job bld_cache_find() keyed last; false if it
 * names a declaration the import cache did not parse. */
static bool store_key(struct bld_store *s, const struct bld_cache *c, struct eval *ev)
{
	if (!c->key_ok || !walk_key_canonical(&s->key, &c->key, s->arena, eval_import_cache(ev)))
		return s->key.ok = false;
	/* a user's optimizer has no canonical form: no walk of the store is
	 * then its own, but any can have its states evaluated again */
	walk_key_canonical(&s->opt, &c->opt, s->arena, eval_import_cache(ev));
	s->hash = walk_key_hash(&s->key, src_digest((const char *)&c->image, sizeof c->image));
	return true;
}

/* The entry of @list for the walk keyed @hash, @image and @values under
 * the optimizer @opt (*exact), else one whose states can be evaluated
 * again under it; NULL: none. */
static const struct bld_cache_entry *find_in(const struct bld_cache_entry *list, uint64_t hash,
					     const struct bld *image, const struct walk_key *values,
					     const struct walk_key *opt, bool *exact)
{
	const struct bld_cache_entry *other = NULL;

	*exact = false;
	for (const struct bld_cache_entry *e = list; e; e = e->next) {
		if (e->hash != hash || memcmp(&e->image, image, sizeof *image) || !walk_key_equal(&e->values, values))
			continue;
		if (opt->ok && e->opt.ok && walk_key_equal(&e->opt, opt))
			return *exact = true, e;
		if (!other && e->rederivable)
			other = e;
	}
	return other;
}

static const struct bld_cache_entry *store_find(struct bld_store *s, const struct bld_cache *c, bool *exact)
{
	return find_in(s->by_hash[s->hash & 255], s->hash, &c->image, &s->key, &s->opt, exact);
}

static bool cacheable(const struct bld *b)
{
	return b->rl == BLD_RL_NONE && !b->rl_ops && b->cj->model.kind == VAL_INSTANCE;
}

/* The walk of entry @e, into the job @b. */
static void restore(struct bld *b, const struct bld_cache_entry *e)
{
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
	b->train_layers = cur.train_layers;
	b->modules_to_save = cur.modules_to_save;
	b->skip_modules = cur.skip_modules;
	b->optimizer = cur.optimizer;
	b->memo = cur.memo;
	b->nmemo = cur.nmemo;
	b->capmemo = cur.capmemo;
	b->reps = cur.reps;
	b->nreps = cur.nreps;
	b->capreps = cur.capreps;
	b->blocks = ARENA_NEW_ARRAY(b->arena, struct mem_block, e->after.nblocks ? e->after.nblocks : 1);
	if (e->after.nblocks)
		memcpy(b->blocks, e->after.blocks, e->after.nblocks * sizeof *b->blocks);
	b->capblocks = b->nblocks;
	/* the walk leaves the instance's frame parented to the bindings */
	env_set_parent(b->cj->model.args, b->bindings);
}

/* The states of @blk's trainable tensors, the next of @uses from *@u on,
 * under b->optimizer. The layers are the entry's, shared: a layer whose
 * states change is copied into the job's arena first, with its block's
 * array of layers (copy on write). */
static bool rederive_block(struct bld *b, struct mem_block *blk, const struct bld_opt_use *uses, size_t n,
			   size_t *u)
{
	struct mem_layer *own = NULL;

	for (size_t k = 0; k < blk->nlayers; k++) {
		struct mem_param *params = NULL;

		for (size_t j = 0; j < blk->layers[k].nparams; j++) {
			const struct mem_param *was = &blk->layers[k].params[j];
			struct mem_param p = *was;

			if (!p.trainable)
				continue;
			if (*u >= n || !bld_opt_states(b, &uses[(*u)++], &p))
				return false;
			if (p.state_bytes == was->state_bytes && p.paged_state_bytes == was->paged_state_bytes &&
			    p.step_temp_bytes == was->step_temp_bytes && p.step_temp_grouped == was->step_temp_grouped)
				continue;
			if (!own) {
				own = ARENA_NEW_ARRAY(b->arena, struct mem_layer, blk->nlayers);
				memcpy(own, blk->layers, blk->nlayers * sizeof *own);
				blk->layers = own;
			}
			if (!params) {
				params = ARENA_NEW_ARRAY(b->arena, struct mem_param, own[k].nparams);
				memcpy(params, own[k].params, own[k].nparams * sizeof *params);
				own[k].params = params;
			}
			params[j].state_bytes = p.state_bytes;
			params[j].paged_state_bytes = p.paged_state_bytes;
			params[j].step_temp_bytes = p.step_temp_bytes;
			params[j].step_temp_grouped = p.step_temp_grouped;
		}
	}
	return true;
}

/* The job's optimizer states in @e's walk, just restored into @b: its
 * body evaluated per distinct tensor as the walk would have (the same
 * opt_eval, memoised per job), quietly. Anything it would report, or a
 * failure, and the job walks instead (false), saying it there. */
static bool rederive(struct bld *b, const struct bld_cache_entry *e)
{
	bool quiet = b->quiet, ok = true;
	unsigned long reports = eval_reports(b->ev);
	size_t u = 0;

	b->quiet = true;
	eval_set_quiet(b->ev, true);
	for (size_t i = 0; ok && i < b->nblocks; i++)
		ok = rederive_block(b, &b->blocks[i], e->uses, e->nuses, &u);
	eval_set_quiet(b->ev, quiet);
	b->quiet = quiet;
	return ok && u == e->nuses && !b->failed && eval_reports(b->ev) == reports && !eval_walks_stopped(b->ev);
}

/* @e into @b, as walked (@exact) or with the job's optimizer's states
 * put in; false, @b as it was, if those could not be evaluated. */
static bool take(struct bld *b, const struct bld_cache_entry *e, bool exact)
{
	struct bld before = *b;

	if (!exact && b->memo)
		return false;	/* never so: the memo is the job's, made by its walk */
	restore(b, e);
	if (exact || rederive(b, e))
		return true;
	free(b->memo);
	*b = before;
	return false;
}

/* Store entry @e, just restored for the job keyed last, kept in this
 * compilation's cache too: the next job with that key is a local hit,
 * not a canonical key made and looked up again (each -Wcapacity variant
 * is such a job). It shares @e's walk, which lives in the import cache's
 * arena, longer than this compilation. */
static void keep_local(struct bld_cache *c, const struct bld_cache_entry *e, bool exact)
{
	if (c->entries >= BLD_CACHE_MAX)
		return;
	struct bld_cache_entry *l = ARENA_NEW(c->perm, struct bld_cache_entry);

	l->hash = c->hash;
	l->image = c->image;
	walk_key_copy(&l->values, &c->key, c->perm);
	/* e's optimizer in this compilation's terms is the job's only if it
	 * was the job's; else the local entry is never taken as walked */
	walk_key_copy(&l->opt, &c->opt, c->perm);
	l->opt.ok &= exact;
	l->after = e->after;
	l->uses = e->uses;
	l->nuses = e->nuses;
	l->rederivable = e->rederivable;
	l->next = c->by_hash[c->hash & 255];
	c->by_hash[c->hash & 255] = l;
	c->entries++;
}

bool bld_cache_find(struct bld *b)
{
	struct bld_cache *c = cache_of(b->ev);

	if (c->off || !cacheable(b) || eval_walks_stopped(b->ev))
		return false;
	make_key(c, b, c->perm);
	bool exact;
	const struct bld_cache_entry *e = c->key_ok ? find_in(c->by_hash[c->hash & 255], c->hash, &c->image,
							      &c->key, &c->opt, &exact) : NULL;

	if (e && take(b, e, exact)) {
		exact ? c->hits++ : c->rederived++;
		return true;
	}
	c->misses++;
	struct bld_store *s = store_of(b->ev);
	bool keyed = s && store_key(s, c, b->ev);

	e = keyed ? store_find(s, c, &exact) : NULL;
	if (e && take(b, e, exact)) {
		exact ? s->hits++ : s->rederived++;
		keep_local(c, e, exact);
		return true;
	}
	if (keyed)
		s->misses++;
	return false;
}

/* What the walk just made of @b, for an entry in @a: nothing of the job's
 * scratch arena or heap stays in it. */
/* Whether @b's trainable tensors, in block, layer and parameter order,
 * are its uses in walk order: each has the states its use recorded, and
 * there are as many. */
static bool uses_line_up(const struct bld *b)
{
	size_t u = 0;

	for (size_t i = 0; i < b->nblocks; i++)
		for (size_t k = 0; k < b->blocks[i].nlayers; k++)
			for (size_t j = 0; j < b->blocks[i].layers[k].nparams; j++) {
				const struct mem_param *p = &b->blocks[i].layers[k].params[j];
				const struct bld_opt_use *x;

				if (!p->trainable)
					continue;
				if (u >= b->nopt_uses)
					return false;
				x = &b->opt_uses[u++];
				if (p->state_bytes != x->state ||
				    p->paged_state_bytes != x->paged || p->step_temp_bytes != x->temp ||
				    p->step_temp_grouped != x->grouped)
					return false;
			}
	return u == b->nopt_uses;
}

static struct bld_cache_entry *new_entry(struct arena *a, const struct bld *b, uint64_t hash,
					 const struct bld *image, const struct walk_key *values,
					 const struct walk_key *opt, const struct import_cache *ic)
{
	struct bld_cache_entry *e = ARENA_NEW(a, struct bld_cache_entry);
	/* every element written below */
	struct bld_opt_use *uses = arena_alloc_raw(a, arena_array_size(sizeof *uses, b->nopt_uses ? b->nopt_uses : 1));

	e->hash = hash;
	e->image = *image;
	walk_key_copy(&e->values, values, a);
	walk_key_copy(&e->opt, opt, a);
	if (b->nopt_uses)
		memcpy(uses, b->opt_uses, b->nopt_uses * sizeof *uses);
	e->uses = uses;
	e->nuses = b->nopt_uses;
	e->rederivable = uses_line_up(b);
	e->after = *b;
	e->after.blocks = copy_blocks(a, b->blocks, b->nblocks, ic);
	e->after.capblocks = b->nblocks;
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
	e->after.opt_uses = NULL;
	e->after.nopt_uses = e->after.capopt_uses = 0;
	return e;
}

/* Every layer's origin is a declaration the import cache parsed (or
 * none): then the store's copy names those nodes instead. */
static bool layers_shared(const struct import_cache *ic, const struct bld *b)
{
	for (size_t i = 0; i < b->nblocks; i++)
		for (size_t k = 0; k < b->blocks[i].nlayers; k++) {
			const struct decl *d = b->blocks[i].layers[k].origin;

			if (d && !import_cache_origin(ic, d))
				return false;
		}
	return true;
}

static void store_put(const struct bld *b, const struct bld_cache *c)
{
	struct bld_store *s = store_of(b->ev);
	const struct import_cache *ic = eval_import_cache(b->ev);

	/* s->key and s->hash are the job's: bld_cache_find made them */
	bool exact;

	if (!s || s->entries >= BLD_CACHE_MAX || !s->key.ok || !layers_shared(ic, b) ||
	    (store_find(s, c, &exact) && exact))
		return;
	struct bld_cache_entry *e = new_entry(s->arena, b, s->hash, &c->image, &s->key, &s->opt, ic);

	e->after.tie_srcs = NULL;	/* read only while walking (tied layers) */
	e->after.ntie_srcs = e->after.captie_srcs = 0;
	e->next = s->by_hash[s->hash & 255];
	s->by_hash[s->hash & 255] = e;
	s->entries++;
}

/* Keep what the walk just made of the job bld_cache_find() keyed last. */
void bld_cache_put(const struct bld *b)
{
	struct bld_cache *c = cache_of(b->ev);

	if (c->off || !cacheable(b) || !c->key_ok || eval_walks_stopped(b->ev))
		return;
	if (c->entries < BLD_CACHE_MAX) {
		struct bld_cache_entry *e = new_entry(c->perm, b, c->hash, &c->image, &c->key, &c->opt, NULL);

		e->next = c->by_hash[c->hash & 255];
		c->by_hash[c->hash & 255] = e;
		c->entries++;
	}
	store_put(b, c);
}

void build_cache_stats(struct eval *ev, unsigned long *hits, unsigned long *misses)
{
	struct bld_cache *c = *eval_build_cache(ev);

	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
}

void build_cache_rederived(struct eval *ev, unsigned long *local, unsigned long *store)
{
	const struct bld_cache *c = *eval_build_cache(ev);
	const struct bld_store *s = store_of(ev);

	*local = c ? c->rederived : 0;
	*store = s ? s->rederived : 0;
}

void build_store_stats(struct eval *ev, unsigned long *hits, unsigned long *misses)
{
	const struct bld_store *s = store_of(ev);

	*hits = s ? s->hits : 0;
	*misses = s ? s->misses : 0;
}

void build_cache_enable(struct eval *ev, bool on)
{
	cache_of(ev)->off = !on;
}
