/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - read a PyTorch CUDA memory snapshot and replay one device.
 *
 * The schema is torch.cuda.memory._snapshot()'s (c10/cuda/
 * CUDACachingAllocator.h SnapshotInfo, read by torch/cuda/_memory_viz.py):
 * "segments", each with device, total_size, allocated_size and blocks;
 * "device_traces", per device a list of events with action, addr, size and
 * frames. The trace is a ring buffer that may start after the first
 * allocation, so what was live before its first event is the segments'
 * totals minus the trace's net change (category "untraced").
 *
 * Each allocation gets a phase and a category from its frames
 * (frame_class) and from where its free falls (a block freed in the phase
 * that allocated it is a temporary); docs/compare.md lists the rules.
 */
#include <jansson.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/cmd/compare_impl.h"

enum ev_action { EV_ALLOC, EV_FREE, EV_SEG_ALLOC, EV_SEG_FREE, EV_OOM, EV_OTHER, EV_UNKNOWN };

/* In priority order: the highest class any frame matches wins. */
enum frame_class { FR_NONE, FR_PLAIN, FR_FORWARD, FR_WEIGHTS, FR_BACKWARD, FR_LOSS, FR_DIST,
		   FR_OPTIM };

struct ev {
	uint64_t addr, size;
	size_t mate;		/* alloc <-> its free_completed; SIZE_MAX: none in the trace */
	size_t run;		/* index of the phase run (consecutive events of one phase) */
	enum ev_action action;
	enum frame_class fc;
	enum snap_phase phase;
	enum snap_cat cat;
};

/* A block live when the snapshot was taken. */
struct blk {
	uint64_t addr, size;
	enum frame_class fc;
};

struct replay {
	struct ev *ev;
	size_t n;
	struct blk *blk;
	size_t nblk, blk_cap;
	struct snap_measure *m;
	struct snap_error *err;
};

static const char *const cat_names[SNAP_C__COUNT] = {
	"weights", "gradients", "optimizer", "activations", "logits+loss", "buffers", "other",
	"untraced",
};
static const char *const phase_names[SNAP_P__COUNT] = {
	"setup", "forward", "loss", "backward", "optimizer step",
};

const char *snap_cat_name(enum snap_cat c) { return cat_names[c]; }
const char *snap_phase_name(enum snap_phase p) { return phase_names[p]; }

__attribute__((format(printf, 3, 4)))
static bool fail(struct snap_error *err, const char *path, const char *fmt, ...)
{
	va_list ap;

	snprintf(err->path, sizeof err->path, "%s", path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return false;
}

static bool has(const char *s, const char *sub)
{
	return s && strstr(s, sub);
}

static bool is_any(const char *s, const char *const *names)
{
	for (; s && *names; names++)
		if (strcmp(s, *names) == 0)
			return true;
	return false;
}

/* One frame's class. Names are matched as Python and C++ frames spell
 * them; the autograd engine's worker thread has no Python frames at all,
 * which is why FR_NONE is a class of its own. */
static enum frame_class one_frame(const char *file, const char *name)
{
	static const char *const weights[] = { "_apply", "_load_from_state_dict", "load_state_dict",
					       "from_pretrained", "reset_parameters", "_init_weights",
					       NULL };

	if (has(file, "/optim/"))
		return FR_OPTIM;
	if (has(file, "torch/distributed/") || has(file, "deepspeed/") || has(name, "all_gather") ||
	    has(name, "reduce_scatter") || has(name, "all_reduce"))
		return FR_DIST;
	if (has(file, "torch/nn/modules/loss.py") || has(name, "cross_entropy") ||
	    has(name, "nll_loss") || has(name, "loss_function") || has(name, "ForCausalLMLoss"))
		return FR_LOSS;
	if (has(name, "backward") || has(file, "torch/autograd/") ||
	    has(file, "torch/utils/checkpoint.py") || has(name, "autograd::Engine"))
		return FR_BACKWARD;
	if (is_any(name, weights) || has(file, "torch/nn/init.py"))
		return FR_WEIGHTS;
	if (is_any(name, (const char *const[]){ "forward", "_call_impl", NULL }) ||
	    has(file, "torch/nn/modules/") || has(file, "torch/nn/functional.py"))
		return FR_FORWARD;
	return FR_PLAIN;
}

static enum frame_class frames_class(json_t *frames)
{
	enum frame_class best = FR_NONE;
	size_t i;
	json_t *f;

	json_array_foreach(frames, i, f) {
		enum frame_class c = one_frame(json_string_value(json_object_get(f, "filename")),
					       json_string_value(json_object_get(f, "name")));

		best = c > best ? c : best;
	}
	return best;
}

/* frames: a list of objects (filename, line, name), as
 * _memory_viz.py reads them; anything else would read as no frames. */
static bool frames_ok(json_t *frames, const char *where, struct snap_error *err)
{
	size_t i;
	json_t *f;

	if (frames && !json_is_array(frames))
		return fail(err, where, "'frames' must be a list");
	json_array_foreach(frames, i, f)
		if (!json_is_object(f))
			return fail(err, where, "frame %zu must be an object (filename, line, name)", i);
	return true;
}

/* A whole byte count of @obj, 0 or more. */
static bool get_size(json_t *obj, const char *key, const char *where, uint64_t *out,
		     struct snap_error *err)
{
	json_t *v = json_object_get(obj, key);
	char path[96];

	snprintf(path, sizeof path, "%s.%s", where, key);
	if (!v)
		return fail(err, path, "missing '%s'", key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return fail(err, path, "'%s' must be a whole number of bytes, 0 or more", key);
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static bool add_to(uint64_t *sum, uint64_t v, struct snap_error *err, const char *path)
{
	if (__builtin_add_overflow(*sum, v, sum))
		return fail(err, path, "the byte counts add up to more than 2^64 - 1");
	return true;
}

static bool push_block(struct replay *r, uint64_t addr, uint64_t size, json_t *frames)
{
	if (r->nblk == r->blk_cap) {
		size_t cap = r->blk_cap ? 2 * r->blk_cap : 64;
		struct blk *b = cap > SIZE_MAX / sizeof *b ? NULL : realloc(r->blk, cap * sizeof *b);

		if (!b)
			return fail(r->err, "segments", "out of memory");
		r->blk = b;
		r->blk_cap = cap;
	}
	r->blk[r->nblk++] = (struct blk){ addr, size, frames_class(frames) };
	return true;
}

/* The live blocks of one segment, at addresses counted from its start as
 * _memory_viz.py does; a segment without an address has none known. */
static bool read_blocks(struct replay *r, json_t *seg, const char *where, uint64_t total)
{
	json_t *addr = json_object_get(seg, "address"), *blocks = json_object_get(seg, "blocks"), *b;
	uint64_t at = json_is_integer(addr) ? (uint64_t)json_integer_value(addr) : 0, size;
	size_t i;
	char path[96];

	/* torch's segmentInfoToDict always writes the list: without it the
	 * segment's live blocks, which the trace may not show, are unknown */
	if (!json_is_array(blocks))
		return fail(r->err, where, blocks ? "'blocks' must be a list" : "missing 'blocks' (the segment's "
			    "blocks, which torch.cuda.memory._snapshot() writes)");
	json_array_foreach(blocks, i, b) {
		const char *state = json_string_value(json_object_get(b, "state"));

		snprintf(path, sizeof path, "%s.blocks[%zu]", where, i);
		if (!json_is_object(b))
			return fail(r->err, path, "a block must be an object");
		if (!get_size(b, "size", path, &size, r->err) || !frames_ok(json_object_get(b, "frames"), path, r->err))
			return false;
		if (json_is_integer(addr) && state && strncmp(state, "active", 6) == 0 &&
		    !push_block(r, at, size, json_object_get(b, "frames")))
			return false;
		if (__builtin_add_overflow(at, size, &at))
			return fail(r->err, path, "the blocks run past the end of the address space");
		if (size > total)
			return fail(r->err, path, "the blocks are larger than the segment's 'total_size'");
		total -= size;
	}
	return true;
}

static bool read_segments(json_t *root, struct replay *r)
{
	json_t *segs = json_object_get(root, "segments"), *s;
	struct snap_measure *m = r->m;
	struct snap_error *err = r->err;
	size_t i;
	char where[48];

	if (!json_is_array(segs))
		return fail(err, "segments", segs ? "'segments' must be a list" :
			    "missing 'segments': is this a torch.cuda.memory._snapshot()?");
	json_array_foreach(segs, i, s) {
		uint64_t total, allocated;
		json_t *dev = json_object_get(s, "device");

		snprintf(where, sizeof where, "segments[%zu]", i);
		if (!json_is_object(s))
			return fail(err, where, "a segment must be an object");
		if (!json_is_integer(dev) || json_integer_value(dev) < 0 ||
		    json_integer_value(dev) > SNAP_MAX_DEVICE)
			return fail(err, where, "'device' must be a device index, 0 to %d",
				    SNAP_MAX_DEVICE);
		if (!get_size(s, "total_size", where, &total, err) ||
		    !get_size(s, "allocated_size", where, &allocated, err))
			return false;
		if (allocated > total)	/* the segment's blocks tile it */
			return fail(err, where, "'allocated_size' %llu is more than 'total_size' %llu",
				    (unsigned long long)allocated, (unsigned long long)total);
		if (json_integer_value(dev) != m->device)
			continue;
		m->nsegments++;
		if (!add_to(&m->final_reserved, total, err, where) ||
		    !add_to(&m->final_allocated, allocated, err, where) || !read_blocks(r, s, where, total))
			return false;
	}
	return true;
}

static enum ev_action action_of(const char *a)
{
	static const struct { const char *name; enum ev_action act; } map[] = {
		{ "alloc", EV_ALLOC }, { "free_completed", EV_FREE },
		{ "segment_alloc", EV_SEG_ALLOC }, { "segment_map", EV_SEG_ALLOC },
		{ "segment_free", EV_SEG_FREE }, { "segment_unmap", EV_SEG_FREE },
		{ "oom", EV_OOM }, { "free_requested", EV_OTHER }, { "snapshot", EV_OTHER },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(a, map[i].name) == 0)
			return map[i].act;
	/* torch/cuda/memory.py _snapshot lists these nine: another would be
	 * an event whose bytes the replay cannot place */
	return EV_UNKNOWN;
}

static bool read_event(json_t *e, size_t dev, size_t i, struct ev *out, struct snap_error *err)
{
	char where[64];
	json_t *act = json_object_get(e, "action"), *frames = json_object_get(e, "frames");

	snprintf(where, sizeof where, "device_traces[%zu][%zu]", dev, i);
	if (!json_is_object(e))
		return fail(err, where, "an event must be an object");
	if (!json_is_string(act))
		return fail(err, where, "missing 'action' (alloc, free_completed, segment_alloc, ...)");
	*out = (struct ev){ .mate = SIZE_MAX, .action = action_of(json_string_value(act)) };
	if (out->action == EV_UNKNOWN)
		return fail(err, where, "unknown action '%.40s': torch writes alloc, free_requested, free_completed, "
			    "segment_alloc, segment_free, segment_map, segment_unmap, snapshot or oom",
			    json_string_value(act));
	if (out->action == EV_OOM || out->action == EV_OTHER)
		return true;
	if (!frames_ok(frames, where, err))
		return false;
	out->fc = frames_class(frames);
	return get_size(e, "addr", where, &out->addr, err) &&
	       get_size(e, "size", where, &out->size, err);
}

/* The device's trace; -1 picks the first device that has events. */
static bool read_trace(json_t *root, struct replay *r)
{
	json_t *traces = json_object_get(root, "device_traces"), *list = NULL, *e;
	size_t i, dev = 0;

	r->m->no_traces_key = !traces;
	if (!traces)
		return true;
	if (!json_is_array(traces))
		return fail(r->err, "device_traces", "'device_traces' must be a list (one per device)");
	if (json_array_size(traces) > (size_t)SNAP_MAX_DEVICE + 1)
		return fail(r->err, "device_traces", "%zu traces: a device index is at most %d",
			    json_array_size(traces), SNAP_MAX_DEVICE);
	json_array_foreach(traces, i, e)
		if (!json_is_array(e))
			return fail(r->err, "device_traces", "each device's trace must be a list of events");
	for (i = 0; r->m->device < 0 && i < json_array_size(traces); i++)
		if (json_array_size(json_array_get(traces, i)))
			r->m->device = (int)i;
	if (r->m->device >= 0 && (size_t)r->m->device < json_array_size(traces))
		list = json_array_get(traces, dev = (size_t)r->m->device);
	r->n = json_array_size(list);
	r->m->nevents = r->n;
	r->m->traced = r->n > 0;
	r->ev = r->n ? calloc(r->n, sizeof *r->ev) : NULL;
	if (r->n && !r->ev)
		return fail(r->err, "device_traces", "out of memory");
	json_array_foreach(list, i, e)
		if (!read_event(e, dev, i, &r->ev[i], r->err))
			return false;
	return true;
}

/* Pair each alloc with the free_completed of its address that follows it:
 * sorted by (address, position), an address's events alternate. */
struct addr_pos {
	uint64_t addr;
	size_t pos;
};

static int by_addr(const void *a, const void *b)
{
	const struct addr_pos *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Two events in a row at one address: an alloc and its free, or a free
 * and the next alloc. The trace is a window with nothing missing inside
 * (a ring buffer drops its oldest), so anything else is no trace of a
 * real allocator and would replay to numbers it never had. */
static bool mates(struct replay *r, const struct ev *a, const struct ev *f, size_t at)
{
	char where[64];

	snprintf(where, sizeof where, "device_traces[%d][%zu]", r->m->device, at);
	if (a->action == f->action)
		return fail(r->err, where, "%s at address %llu again, with no %s between",
			    a->action == EV_ALLOC ? "alloc" : "free_completed", (unsigned long long)a->addr,
			    a->action == EV_ALLOC ? "free_completed" : "alloc");
	if (a->action == EV_ALLOC && a->size != f->size)
		return fail(r->err, where, "free_completed of %llu bytes at address %llu, allocated with "
			    "%llu", (unsigned long long)f->size, (unsigned long long)a->addr,
			    (unsigned long long)a->size);
	return true;
}

static bool pair_frees(struct replay *r)
{
	struct addr_pos *idx = calloc(r->n ? r->n : 1, sizeof *idx);
	size_t k = 0;

	if (!idx)
		return fail(r->err, "device_traces", "out of memory");
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].action == EV_ALLOC || r->ev[i].action == EV_FREE)
			idx[k++] = (struct addr_pos){ r->ev[i].addr, i };
	qsort(idx, k, sizeof *idx, by_addr);
	bool ok = true;

	for (size_t i = 0; i + 1 < k && ok; i++) {
		struct ev *a = &r->ev[idx[i].pos], *f = &r->ev[idx[i + 1].pos];

		if (a->addr != f->addr)
			continue;
		ok = mates(r, a, f, idx[i + 1].pos);
		if (ok && a->action == EV_ALLOC) {
			a->mate = idx[i + 1].pos;
			f->mate = idx[i].pos;
		}
	}
	free(idx);
	return ok;
}

/* The phase after an allocation of frame class @fc in phase @ph (only
 * allocations move it, and segment_alloc, whose frames are those of the
 * allocation that needed the segment); counts a step each time a forward follows the
 * setup or an optimizer step. */
static enum snap_phase next_phase(enum snap_phase ph, enum frame_class fc, uint64_t *steps)
{
	switch (fc) {
	case FR_OPTIM:
		return SNAP_P_OPTIMIZER;
	case FR_BACKWARD:
		return SNAP_P_BACKWARD;
	case FR_LOSS:
		*steps += ph == SNAP_P_SETUP;
		return ph <= SNAP_P_FORWARD ? SNAP_P_LOSS : ph;
	case FR_FORWARD:
		*steps += ph == SNAP_P_SETUP || ph == SNAP_P_OPTIMIZER;
		return ph == SNAP_P_LOSS ? ph : SNAP_P_FORWARD;	/* after backward: next micro-batch */
	case FR_NONE:	/* the autograd engine's thread: no Python frames (the main
			 * thread's allocations always have some) */
		return ph == SNAP_P_LOSS || ph == SNAP_P_FORWARD ? SNAP_P_BACKWARD : ph;
	case FR_PLAIN:
	case FR_WEIGHTS:
	case FR_DIST:
		break;
	}
	return ph;
}

/* A trace recorded without Python stacks has no frames anywhere: its
 * phases and categories cannot be told, and everything stays in setup. */
static void assign_phases(struct replay *r)
{
	enum snap_phase ph = SNAP_P_SETUP;
	size_t run = 0;

	for (size_t i = 0; i < r->n; i++)
		r->m->framed |= r->ev[i].action == EV_ALLOC && r->ev[i].fc != FR_NONE;
	for (size_t i = 0; i < r->n && r->m->framed; i++) {
		enum snap_phase was = ph;

		if (r->ev[i].action == EV_ALLOC || r->ev[i].action == EV_SEG_ALLOC)
			ph = next_phase(ph, r->ev[i].fc, &r->m->steps);
		run += i && ph != was;
		r->ev[i].phase = ph;
		r->ev[i].run = run;
	}
}

/* Freed in the run of phases that allocated it: a temporary. */
static bool temporary(const struct replay *r, const struct ev *e)
{
	return e->mate != SIZE_MAX && r->ev[e->mate].run == e->run;
}

static enum snap_cat by_phase(const struct replay *r, const struct ev *e)
{
	static const enum snap_cat plain[SNAP_P__COUNT] = {
		[SNAP_P_SETUP] = SNAP_C_WEIGHTS, [SNAP_P_FORWARD] = SNAP_C_ACTIVATIONS,
		[SNAP_P_LOSS] = SNAP_C_LOGITS,
	};
	bool temp = temporary(r, e);

	if (e->phase == SNAP_P_BACKWARD)
		return temp ? SNAP_C_ACTIVATIONS : SNAP_C_GRADIENTS;
	if (e->phase == SNAP_P_OPTIMIZER)
		return temp ? SNAP_C_BUFFERS : SNAP_C_OPTIMIZER;
	return plain[e->phase];
}

static enum snap_cat category(const struct replay *r, const struct ev *e)
{
	switch (e->fc) {
	case FR_OPTIM:
	case FR_BACKWARD:
	case FR_NONE:
		return by_phase(r, e);
	case FR_DIST:
		return SNAP_C_BUFFERS;
	case FR_LOSS:
		return SNAP_C_LOGITS;
	case FR_WEIGHTS:
		return SNAP_C_WEIGHTS;
	case FR_FORWARD:
		return e->phase == SNAP_P_LOSS ? SNAP_C_LOGITS : SNAP_C_ACTIVATIONS;
	case FR_PLAIN:
		break;
	}
	return SNAP_C_OTHER;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* What was live before the first event: the end state minus the net change. */
static bool baseline(struct replay *r)
{
	uint64_t alloc = 0, freed = 0, seg = 0, segfree = 0;
	bool ok = true;

	for (size_t i = 0; i < r->n && ok; i++) {
		const struct ev *e = &r->ev[i];
		uint64_t *sum = e->action == EV_ALLOC ? &alloc : e->action == EV_FREE ? &freed :
				e->action == EV_SEG_ALLOC ? &seg : e->action == EV_SEG_FREE ? &segfree : NULL;

		if (sum)
			ok = add_to(sum, e->size, r->err, "device_traces");
	}
	if (!ok || !add_to(&freed, r->m->final_allocated, r->err, "segments") ||
	    !add_to(&segfree, r->m->final_reserved, r->err, "segments"))
		return false;
	r->m->base_allocated = sub_sat(freed, alloc);
	r->m->base_reserved = sub_sat(segfree, seg);
	return true;
}

static void step_event(struct replay *r, const struct ev *e, uint64_t *live, uint64_t *allocated,
		       uint64_t *reserved)
{
	struct snap_measure *m = r->m;

	if (e->action == EV_ALLOC) {
		*allocated += e->size;	/* below final_allocated + frees: checked by baseline() */
		live[e->cat] += e->size;
	} else if (e->action == EV_FREE) {
		enum snap_cat c = e->mate != SIZE_MAX ? r->ev[e->mate].cat : SNAP_C_UNTRACED;

		*allocated = sub_sat(*allocated, e->size);
		live[c] = sub_sat(live[c], e->size);
	} else if (e->action == EV_SEG_ALLOC) {
		*reserved += e->size;
	} else if (e->action == EV_SEG_FREE) {
		*reserved = sub_sat(*reserved, e->size);
	}
	m->ooms += e->action == EV_OOM;
	m->phase_seen[e->phase] = true;
	if (*allocated > m->phase_allocated[e->phase])
		m->phase_allocated[e->phase] = *allocated;
	if (*reserved > m->phase_reserved[e->phase])
		m->phase_reserved[e->phase] = *reserved;
	if (*allocated > m->peak_allocated) {
		m->peak_allocated = *allocated;
		memcpy(m->cat_at_peak, live, sizeof m->cat_at_peak);
	}
	if (*reserved > m->peak_reserved)
		m->peak_reserved = *reserved;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A block live before the trace began, by its own frames: it is in no
 * phase, so only the frames speak. */
static enum snap_cat block_cat(enum frame_class fc)
{
	static const enum snap_cat map[] = {
		[FR_NONE] = SNAP_C_UNTRACED, [FR_PLAIN] = SNAP_C_OTHER,
		[FR_FORWARD] = SNAP_C_ACTIVATIONS, [FR_WEIGHTS] = SNAP_C_WEIGHTS,
		[FR_BACKWARD] = SNAP_C_GRADIENTS, [FR_LOSS] = SNAP_C_LOGITS,
		[FR_DIST] = SNAP_C_BUFFERS, [FR_OPTIM] = SNAP_C_OPTIMIZER,
	};

	return map[fc];
}

/* What was live before the first event, by category: the blocks live at
 * the end that no allocation of the trace made; the rest is "untraced". */
static bool baseline_cats(struct replay *r, uint64_t *live)
{
	uint64_t *made = malloc((r->n ? r->n : 1) * sizeof *made), left = r->m->base_allocated;
	size_t k = 0;

	if (!made)
		return fail(r->err, "device_traces", "out of memory");
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].action == EV_ALLOC && r->ev[i].mate == SIZE_MAX)
			made[k++] = r->ev[i].addr;
	qsort(made, k, sizeof *made, by_u64);
	for (size_t i = 0; i < r->nblk && left; i++) {
		uint64_t take = r->blk[i].size < left ? r->blk[i].size : left;

		if (bsearch(&r->blk[i].addr, made, k, sizeof *made, by_u64))
			continue;
		live[block_cat(r->blk[i].fc)] += take;
		left -= take;
	}
	live[SNAP_C_UNTRACED] += left;
	free(made);
	return true;
}

static bool replay(struct replay *r)
{
	uint64_t live[SNAP_C__COUNT] = { 0 };
	uint64_t allocated = r->m->base_allocated, reserved = r->m->base_reserved;

	for (size_t i = 0; i < r->n; i++)
		r->ev[i].cat = r->ev[i].action == EV_ALLOC ? category(r, &r->ev[i]) : SNAP_C_OTHER;
	if (!baseline_cats(r, live))
		return false;
	r->m->peak_allocated = allocated;
	r->m->peak_reserved = reserved;
	memcpy(r->m->cat_at_peak, live, sizeof live);
	for (size_t i = 0; i < r->n; i++)
		step_event(r, &r->ev[i], live, &allocated, &reserved);
	return true;
}

static json_t *parsed(json_t *root, const json_error_t *je, struct snap_error *err);

static json_t *load(const char *file, struct snap_error *err)
{
	json_error_t je;
	FILE *f = fopen(file, "rb");
	int c;

	if (!f) {
		err->unreadable = true;
		return fail(err, "", "cannot open: %s", strerror(errno)), NULL;
	}
	c = getc(f);
	fclose(f);
	if (c == 0x80)	/* pickle protocol 2+: torch.cuda.memory._dump_snapshot() */
		return fail(err, "", "this is a pickle from _dump_snapshot(); convert it to JSON "
			    "first (docs/compare.md)"), NULL;
	return parsed(json_load_file(file, JSON_REJECT_DUPLICATES, &je), &je, err);
}

static json_t *parsed(json_t *root, const json_error_t *je, struct snap_error *err)
{
	if (!root) {
		err->line = je->line > 0 ? (unsigned)je->line : 1;
		err->col = je->column > 0 ? (unsigned)je->column : 1;
		fail(err, "", "invalid JSON: %s", je->text);
	} else if (!json_is_object(root)) {
		json_decref(root);
		return fail(err, "", "a snapshot is a JSON object with 'segments' and "
			    "'device_traces'"), NULL;
	}
	return root;
}

static bool measure(json_t *root, int device, struct snap_measure *m, struct snap_error *err)
{
	struct replay r = { .m = m, .err = err };
	bool ok;

	memset(m, 0, sizeof *m);
	m->device = device;
	if (!root)
		return false;
	/* The trace picks the device, then the segments are summed for it. */
	ok = read_trace(root, &r);
	if (ok && m->device < 0) {
		json_t *s0 = json_array_get(json_object_get(root, "segments"), 0);

		json_int_t d = json_integer_value(json_object_get(s0, "device"));

		m->device = d >= 0 && d <= SNAP_MAX_DEVICE ? (int)d : 0;
	}
	ok = ok && read_segments(root, &r) && pair_frees(&r);
	if (ok) {
		assign_phases(&r);
		ok = baseline(&r);
	}
	ok = ok && replay(&r);
	free(r.ev);
	free(r.blk);
	json_decref(root);
	return ok;
}

bool snap_measure(const char *file, int device, struct snap_measure *m, struct snap_error *err)
{
	return measure(load(file, err), device, m, err);
}

bool snap_measure_text(const char *text, size_t len, int device, struct snap_measure *m,
		       struct snap_error *err)
{
	json_error_t je;

	return measure(parsed(json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), &je, err), device, m, err);
}
