/* SPDX-License-Identifier: MIT */
/*
 * alloc_replay.c - allocation traces and their replay through the caching
 * allocator's simulation (alloc.c; memory-model.md §5.4).
 *
 * A replay under a device limit that runs out of memory is followed by the
 * job as written, the same trace without the limit (memory.c): the two
 * agree event for event until the limited one first comes near the limit,
 * so the second starts from a copy of the first taken there instead of
 * from the trace's start.
 */
#include "analyzer/alloc/alloc.h"

#include <stdlib.h>
#include <string.h>

void alloc_trace_free(struct alloc_trace *t)
{
	free(t->ev);
	free(t->marks);
	memset(t, 0, sizeof(*t));
}

static void push_event(struct alloc_trace *t, struct alloc_event e)
{
	if (t->nomem || !alloc_grow((void **)&t->ev, &t->cap, t->n, sizeof(*t->ev))) {
		t->nomem = true;
		return;
	}
	t->ev[t->n++] = e;
}

uint32_t alloc_trace_alloc(struct alloc_trace *t, uint64_t n, uint32_t stream)
{
	struct alloc_event e = { n ? n : 1, t->what, t->nids, stream, ALLOC_OP_FREE };

	if (t->nids == UINT32_MAX) {
		t->nomem = true;
		return UINT32_MAX;
	}
	t->nids++;
	push_event(t, e);
	return e.id;
}

static void push_free(struct alloc_trace *t, uint32_t id, enum alloc_op op)
{
	struct alloc_event e = { 0, t->what, id, 0, op };

	if (id < t->nids)
		push_event(t, e);
}

void alloc_trace_release(struct alloc_trace *t, uint32_t id)
{
	push_free(t, id, ALLOC_OP_FREE);
}

void alloc_trace_release_recorded(struct alloc_trace *t, uint32_t id)
{
	push_free(t, id, ALLOC_OP_FREE_RECORDED);
}

void alloc_trace_complete(struct alloc_trace *t, uint32_t id)
{
	push_free(t, id, ALLOC_OP_COMPLETE);
}

void alloc_trace_empty_cache(struct alloc_trace *t)
{
	struct alloc_event e = { 0, t->what, 0, 0, ALLOC_OP_EMPTY_CACHE };

	push_event(t, e);
}

void alloc_trace_mark(struct alloc_trace *t)
{
	if (t->nomem || !alloc_grow((void **)&t->marks, &t->marks_cap, t->nmarks, sizeof(*t->marks))) {
		t->nomem = true;
		return;
	}
	t->marks[t->nmarks++] = t->n;
}

bool alloc_trace_step_peak(const struct alloc_trace *t, uint64_t *peak)
{
	uint64_t *size = t->nids ? calloc(t->nids, sizeof(*size)) : NULL, live = 0;
	size_t m = 0;

	*peak = 0;
	if (t->nomem || (t->nids && !size))
		return false;
	for (size_t i = 0; i <= t->n; i++) {
		const struct alloc_event *e;

		while (m < t->nmarks && t->marks[m] <= i)
			m++;
		if (m && live > *peak)
			*peak = live;	/* what a step starts with counts */
		if (i == t->n)
			break;
		e = &t->ev[i];
		if (e->size) {
			size[e->id] = alloc_round_size(e->size);
			if (__builtin_add_overflow(live, size[e->id], &live))
				live = UINT64_MAX;	/* the analysis has flagged it already */
		} else if (e->op != ALLOC_OP_COMPLETE && e->op != ALLOC_OP_EMPTY_CACHE) {
			live -= size[e->id];
			size[e->id] = 0;
		}
	}
	free(size);
	return true;
}

/* At mark k >= 2: did step k - 1 leave peak reserved unchanged? */
static bool steady(const struct alloc_trace *t, size_t i, size_t *k, uint64_t *at, uint64_t peak,
		   struct alloc_replay *out)
{
	bool stop = false;

	while (*k < t->nmarks && t->marks[*k] == i) {
		if (*k == 0 && peak > out->setup_reserved)
			out->setup_reserved = peak;
		stop |= !t->varies && *k >= 2 && peak == *at;
		*at = peak;
		++*k;
	}
	return stop;
}

/* One event of the trace; an out-of-memory is noted in `out`. */
static enum alloc_status replay_event(struct alloc_sim *sim, const struct alloc_trace *t, size_t i,
				      size_t *handle, struct alloc_replay *out)
{
	const struct alloc_event *e = &t->ev[i];
	enum alloc_status st;

	if (!e->size) {
		if (e->op == ALLOC_OP_EMPTY_CACHE) {
			/* the peak statistics restart from what is left
			 * (fsdp_qlora: reset_peak_memory_stats() before the
			 * loop, nothing emptied between); loading's own peak
			 * stays the setup figure */
			if (sim->peak_reserved > out->setup_reserved)
				out->setup_reserved = sim->peak_reserved;
			alloc_sim_empty_cache(sim);
			sim->peak_reserved = sim->reserved;
			sim->peak_allocated = sim->allocated;
		} else if (e->op == ALLOC_OP_FREE_RECORDED)
			alloc_sim_release_recorded(sim, handle[e->id]);
		else if (e->op == ALLOC_OP_COMPLETE) {
			/* empty_cache may have completed it, and its slot serve another */
			if (handle[e->id] < sim->nblocks && sim->blocks[handle[e->id]].owner == e->id)
				alloc_sim_complete(sim, handle[e->id]);
		}
		else
			alloc_sim_release(sim, handle[e->id]);
		return ALLOC_OK;
	}
	st = alloc_sim_malloc_on(sim, e->size, e->stream, &handle[e->id]);
	if (st == ALLOC_OK)
		sim->blocks[handle[e->id]].owner = e->id;
	if (st == ALLOC_OOM) {
		out->oom = true;
		out->oom_request = sim->oom_request;
		out->oom_event = i;
		out->oom_what = e->what;
	}
	return st;
}

/* A replay in progress: the simulation, the block of each trace id, the
 * next event and mark, peak reserved at the last mark. */
struct run {
	struct alloc_sim sim;
	size_t *handle;
	size_t nhandle;		/* ids *handle has room for */
	size_t i, k;
	uint64_t at;
	struct alloc_replay out;
};

static bool run_init(struct run *r, const struct alloc_trace *t, const struct alloc_config *cfg)
{
	memset(r, 0, sizeof(*r));
	r->handle = t->nids ? malloc((size_t)t->nids * sizeof(size_t)) : NULL;
	r->nhandle = r->handle ? t->nids : 0;
	alloc_sim_init_cfg(&r->sim, cfg);
	return !t->nomem && (!t->nids || r->handle);
}

static void run_free(struct run *r)
{
	alloc_sim_free(&r->sim);
	free(r->handle);
	r->handle = NULL;
}

/* Reserved bytes from which a request could act differently under the
 * limit than without it: one that may need a new segment taking reserved
 * past the limit (cudaMalloc fails, the cache is freed), or one made above
 * the garbage collection threshold.  Below it, a request that finds a
 * cached block, a new segment, a free and empty_cache do the same either
 * way.  The largest request of the trace bounds what any one maps: a new
 * segment (alloc_segment_size), or an expandable segment's pages (the
 * request rounded up to a page). */
static uint64_t fork_at(const struct alloc_trace *t, const struct alloc_config *c)
{
	uint64_t big = 0, need, at, gc;

	if (!c->limit)
		return UINT64_MAX;
	for (size_t i = 0; i < t->n; i++)
		big = t->ev[i].size > big ? t->ev[i].size : big;
	need = alloc_segment_size(alloc_round_size_cfg(c, big));
	need = need > UINT64_MAX - ALLOC_LARGE_BUF ? UINT64_MAX : need + ALLOC_LARGE_BUF;
	at = need >= c->limit ? 0 : c->limit - need + 1;
	gc = (uint64_t)(c->gc_threshold * (double)c->limit);
	if (c->gc_threshold > 0.0 && gc < at)
		at = gc + 1;
	return at;
}

/* The replay without the limit, from where r stands. */
static bool run_fork(const struct run *r, const struct alloc_trace *t, struct run *f)
{
	*f = *r;
	f->handle = t->nids ? malloc((size_t)t->nids * sizeof(size_t)) : NULL;
	if ((t->nids && !f->handle) || !alloc_sim_clone(&f->sim, &r->sim)) {
		free(f->handle);
		f->handle = NULL;
		alloc_sim_init(&f->sim);
		return false;
	}
	f->nhandle = f->handle ? t->nids : 0;
	if (t->nids)
		memcpy(f->handle, r->handle, (size_t)t->nids * sizeof(size_t));
	f->sim.cfg.limit = 0;
	return true;
}

/* Room in r->handle for every id of the trace: it grows while a replay
 * runs (alloc_replay_steps), and a fork copies the ids of its time. */
static bool cover_ids(const struct alloc_trace *t, struct run *r)
{
	size_t *h;

	if (t->nids <= r->nhandle)
		return true;
	h = realloc(r->handle, (size_t)t->nids * sizeof(*h));
	if (!h)
		return false;
	r->handle = h;
	r->nhandle = t->nids;
	return true;
}

/* At the trace's end (event i): its next step from `more`, unless
 * steady() would stop at that step's mark, where it is not replayed.
 * False with *st = ALLOC_NOMEM if the host ran out of memory. */
static bool more_events(const struct alloc_trace *t, struct run *r, size_t i,
			const struct alloc_more *more, enum alloc_status *st)
{
	if (!more || (!t->varies && r->k >= 2 && r->sim.peak_reserved == r->at))
		return false;
	if (more->next(more->ctx) && i < t->n && cover_ids(t, r))
		return true;
	if (t->nomem || t->nids > r->nhandle)
		*st = ALLOC_NOMEM;
	return false;
}

/* Replay from r->i to the end, an out-of-memory or a steady step; the
 * unlimited copy goes to `fork` at the first event with `at` bytes
 * reserved (fork_at). */
static enum alloc_status run_events(const struct alloc_trace *t, const struct alloc_more *more,
				    struct run *r, uint64_t at, struct run *fork, bool *forked)
{
	enum alloc_status st = cover_ids(t, r) ? ALLOC_OK : ALLOC_NOMEM;
	size_t i = r->i;

	for (; st == ALLOC_OK; i++) {
		if (i == t->n && !more_events(t, r, i, more, &st))
			break;
		if (steady(t, i, &r->k, &r->at, r->sim.peak_reserved, &r->out)) {
			r->k--;	/* the step at this mark is not replayed */
			break;
		}
		if (fork && !*forked && r->sim.reserved >= at) {
			r->i = i;
			if (!run_fork(r, t, fork))
				return ALLOC_NOMEM;
			*forked = true;
		}
		st = replay_event(&r->sim, t, i, r->handle, &r->out);
	}
	r->i = i;
	return st;
}

static void run_result(const struct run *r, uint64_t requested, struct alloc_replay *out)
{
	*out = r->out;
	out->steps = r->k;
	out->peak_allocated = r->sim.peak_allocated;
	out->step_requested = requested;
	out->peak_reserved = r->sim.peak_reserved;
	out->retries = r->sim.retries;
}

/* Without the limit from the start (the fork was not taken: a guard). */
static enum alloc_status replay_unlimited(const struct alloc_trace *t, const struct alloc_more *more,
					  const struct alloc_config *cfg, struct run *f)
{
	struct alloc_config c = *cfg;

	c.limit = 0;
	run_free(f);
	if (!run_init(f, t, &c))
		return ALLOC_NOMEM;
	return run_events(t, more, f, UINT64_MAX, NULL, NULL);
}

enum alloc_status alloc_replay_written(const struct alloc_trace *t, const struct alloc_config *cfg,
				       struct alloc_replay *out, struct alloc_replay *written)
{
	return alloc_replay_steps(t, NULL, cfg, out, written);
}

enum alloc_status alloc_replay_steps(const struct alloc_trace *t, const struct alloc_more *more,
				     const struct alloc_config *cfg, struct alloc_replay *out,
				     struct alloc_replay *written)
{
	struct run r, f;
	enum alloc_status st = ALLOC_NOMEM;
	bool forked = false;
	uint64_t requested = 0, at = written ? fork_at(t, cfg) : UINT64_MAX;

	memset(&f, 0, sizeof(f));
	memset(out, 0, sizeof(*out));
	if (written)
		memset(written, 0, sizeof(*written));
	if (run_init(&r, t, cfg))
		st = run_events(t, more, &r, at, &f, &forked);
	if (st != ALLOC_NOMEM && written && r.out.oom)
		st = forked ? run_events(t, more, &f, UINT64_MAX, NULL, NULL) :
			     replay_unlimited(t, more, cfg, &f);
	/* of the steps made: the replays' (every later one repeats them) */
	if (st != ALLOC_NOMEM && !alloc_trace_step_peak(t, &requested))
		st = ALLOC_NOMEM;
	if (st != ALLOC_NOMEM && written && r.out.oom)
		run_result(&f, requested, written);
	run_result(&r, requested, out);
	run_free(&r);
	run_free(&f);
	return st == ALLOC_NOMEM ? ALLOC_NOMEM : ALLOC_OK;
}

enum alloc_status alloc_replay(const struct alloc_trace *t, const struct alloc_config *cfg,
			       struct alloc_replay *out)
{
	return alloc_replay_written(t, cfg, out, NULL);
}
