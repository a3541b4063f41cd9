/* SPDX-License-Identifier: MIT */
/*
 * fit.c - -Wcapacity and -Wheadroom (see fit.h). Every candidate fix is
 * re-built and re-analysed from the checked job with one override, under
 * the checker's rules for the edited file (build.c: tp x pp x cp divides
 * the cluster, ep divides dp x tp, every shape divides); a candidate that
 * breaks one is never printed.
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/fit.h"
#include "analyzer/memory.h"
#include "lang/arena.h"
#include "lang/diag.h"

/* One change that fits, found once per job and noted on each warning. */
struct fit_fix {
	struct loc at;
	bool edit;	/* @at is the key the block writes: @what replaces it */
	char what[64];
	uint64_t total;
};

/* The search's results: one per knob at most (micro_batch, checkpoint,
 * zero, tp), so four slots always suffice. */
struct fit_fixes {
	struct fit_fix v[4];
	size_t n;
	bool done;
};

/* Largest device total over the rank classes of @cj's job with @ov, or 0
 * if that variant cannot be built. The variant is built in its own arena,
 * freed here: a fit search costs no memory once it is over. */
static uint64_t try_variant(struct eval *ev, const struct check_job *cj, const struct build_override *ov,
			    bool *fits)
{
	struct arena tmp = { 0 };
	struct build b;
	struct mem_result r;
	uint64_t worst = 0;

	*fits = false;
	if (build_job(ev, &tmp, cj, ov, true, &b) && (b.job.no_explain = true) &&	/* never printed */
	    mem_analyze(&b.job, &r) == MEM_OK) {
		*fits = true;
		for (size_t i = 0; i < r.nclasses; i++) {
			if (r.classes[i].device_total > worst)
				worst = r.classes[i].device_total;
			*fits &= r.classes[i].fits;
		}
		mem_result_free(&r);
	}
	arena_free(&tmp);
	return worst;
}

static struct build_override no_override(void)
{
	return (struct build_override){ .zero = -1 };
}

/* The line of the knob that drives @c, or the train block's name. */
static struct loc blame(const struct build *bd, enum mem_component c)
{
	struct loc l = NO_LOC;

	switch (c) {
	case MEM_C_ACTIVATIONS: case MEM_C_LOGITS: l = bd->loc_micro_batch; break;
	case MEM_C_OPTIMIZER: case MEM_C_GRADIENTS: l = bd->loc_zero.file ? bd->loc_zero : bd->loc_optimizer; break;
	case MEM_C_WEIGHTS: l = bd->loc_model; break;
	case MEM_C_BUFFERS: l = bd->loc_zero.file ? bd->loc_zero : bd->loc_cluster; break;
	default: l = bd->loc_cluster; break;
	}
	return l.file ? l : bd->loc_train;
}

static enum mem_component largest(const struct mem_class *k)
{
	enum mem_component best = MEM_C_WEIGHTS;

	for (int c = 0; c < MEM_C__COUNT; c++)
		if (c != MEM_C_OVERHEAD && k->at_peak[c] > k->at_peak[best])
			best = (enum mem_component)c;
	return best;
}

/* "micro_batch = 1 fits (...)" at the field @what changes. A field the
 * block writes gets the edit too (@what replaces it, for JSON and SARIF);
 * a default has no text to replace, so the note sits on the train name. */
static void add_fix(struct fit_fixes *fx, const struct build *bd, struct loc field, const char *what,
		    uint64_t total)
{
	struct fit_fix *f = &fx->v[fx->n++];

	f->edit = field.file != 0;
	f->at = f->edit ? field : bd->loc_train;
	f->total = total;
	snprintf(f->what, sizeof f->what, "%s", what);
}

static uint64_t try_micro_batch(struct eval *ev, const struct check_job *cj, uint64_t mb, bool *fits)
{
	struct build_override ov = no_override();

	ov.micro_batch = mb;
	return try_variant(ev, cj, &ov, fits);
}

/* Largest micro_batch below the current one that fits: totals grow with it.
 * Galloping up from 1 first costs one build when even 1 does not fit (the
 * states alone are too big) and 2 log2(answer) builds otherwise, however
 * large the micro_batch as written. */
static void fix_micro_batch(struct eval *ev, const struct check_job *cj, const struct build *bd,
			    struct fit_fixes *fx)
{
	uint64_t lo = 0, hi = bd->micro_batch, best_total = 0, t;
	bool fits;

	for (uint64_t mb = 1; mb < hi; mb = mb > UINT64_MAX / 2 ? hi : mb * 2) {
		t = try_micro_batch(ev, cj, mb, &fits);
		if (!fits) {
			hi = mb;
			break;
		}
		lo = mb;
		best_total = t;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		t = try_micro_batch(ev, cj, mid, &fits);
		if (fits) {
			lo = mid;
			best_total = t;
		} else {
			hi = mid;
		}
	}
	if (lo >= 1) {
		char what[64];

		snprintf(what, sizeof what, "micro_batch = %llu", (unsigned long long)lo);
		add_fix(fx, bd, bd->loc_micro_batch, what, best_total);
	}
}

static void fix_other(struct eval *ev, const struct check_job *cj, const struct build *bd,
		      struct fit_fixes *fx)
{
	struct build_override ov = no_override();
	bool fits;
	uint64_t t;

	if (!bd->full_recompute) {
		ov.checkpoint = "full";
		if ((t = try_variant(ev, cj, &ov, &fits)) && fits)
			add_fix(fx, bd, bd->loc_checkpoint, "checkpoint = full", t);
	}
	ov = no_override();
	/* under FSDP the zero key changes nothing: never offer it there */
	if (bd->job.dp > 1 && bd->zero >= 0 && bd->zero < 3 && bd->job.sharding <= MEM_SHARD_ZERO3) {
		char what[32];

		ov.zero = bd->zero + 1;
		snprintf(what, sizeof what, "zero = %d", ov.zero);
		if ((t = try_variant(ev, cj, &ov, &fits)) && fits)
			add_fix(fx, bd, bd->loc_zero, what, t);
	}
	ov = no_override();
	for (uint64_t tp = (uint64_t)bd->tp * 2; tp <= 8 && tp <= bd->gpus; tp *= 2) {
		char what[32];

		ov.tp = tp;
		snprintf(what, sizeof what, "tp = %llu", (unsigned long long)tp);
		if ((t = try_variant(ev, cj, &ov, &fits)) && fits) {
			add_fix(fx, bd, bd->loc_tp, what, t);
			break;
		}
	}
}

/* The search runs once per job, on the first warning that is printed: every
 * variant's total is the worst over all rank classes, so the fixes are the
 * same for each class. */
static void note_fixes(struct eval *ev, const struct check_job *cj, const struct build *bd, struct diag *d,
		       struct fit_fixes *fx)
{
	char buf[32];

	if (!fx->done) {
		if (bd->micro_batch > 1)
			fix_micro_batch(ev, cj, bd, fx);
		fix_other(ev, cj, bd, fx);
		fx->done = true;
	}
	for (size_t i = 0; i < fx->n; i++) {
		const struct fit_fix *f = &fx->v[i];

		report_bytes(f->total, buf, sizeof buf);
		if (f->edit)
			diag_note_fix(d, f->at, f->what, "%s fits (device total %s)", f->what, buf);
		else
			diag_note(d, f->at, "%s fits (device total %s)", f->what, buf);
	}
}

/* Classes blamed at the same line with the same warning print once. */
static bool seen_at(struct loc *seen, size_t *n, struct loc at)
{
	for (size_t i = 0; i < *n; i++)
		if (seen[i].file == at.file && seen[i].start == at.start)
			return true;
	seen[(*n)++] = at;
	return false;
}

static void capacity(struct eval *ev, const struct check_job *cj, const struct build *bd,
		     const struct mem_class *k, struct fit_fixes *fx, struct diag *d)
{
	char part[32];
	enum mem_component c = largest(k);

	if (d == diag_sink(eval_diag(ev)))
		return;		/* dropped (--max-errors): nothing to note on */
	if (bd->job.pp > 1)
		diag_note(d, NO_LOC, "on pipeline stage %u", (unsigned)k->stage);
	if (k->paged_bytes > k->at_peak[c])	/* unified memory, not a component */
		diag_note(d, NO_LOC, "the largest part is paged optimizer state in unified "
			  "memory (%s)", report_bytes(k->paged_bytes, part, sizeof part));
	else
		diag_note(d, NO_LOC, "the largest part is %s (%s)", mem_component_name(c),
			  report_bytes(k->at_peak[c], part, sizeof part));
	if (k->alloc_oom)	/* §5.4: where the replay, like PyTorch, runs out */
		diag_note(d, NO_LOC, "the caching allocator cannot satisfy a request of %s (%s) even "
			  "after freeing its cache; PyTorch raises OutOfMemoryError there",
			  report_bytes(k->alloc_oom_request, part, sizeof part),
			  k->alloc_oom_what ? k->alloc_oom_what : "?");
	note_fixes(ev, cj, bd, d, fx);
}

/* The line that asked for @p, or the train block's name. */
static struct loc phase_loc(const struct build *bd, enum phase_id p)
{
	struct loc l = p == PHASE_LOADING ? bd->loc_load : p == PHASE_EVAL ? bd->loc_eval :
		       p == PHASE_SAVE ? bd->loc_save : p >= PHASE_REF_FORWARD ? bd->loc_rl : NO_LOC;

	return l.file ? l : p == PHASE_LOADING && bd->loc_model.file ? bd->loc_model : bd->loc_train;
}

/* Loading from_pretrained puts the whole model on every GPU before FSDP or
 * ZeRO-3 shards it: say what loading on the CPU (FSDP sync_module_states,
 * accelerate's cpu_ram_efficient_loading) would need instead. */
static void note_load(struct arena *a, const struct build *bd, size_t i, struct diag *d)
{
	struct phase_input in = bd->run_in;
	struct phase_result alt;
	char b[32];

	if (in.load != PHASE_LOAD_FROM_PRETRAINED || !bd->rep.result)
		return;
	in.load = PHASE_LOAD_RANK0_CPU;
	if (phases_analyze(a, &bd->job, bd->rep.result, &in, &alt) && i < alt.nclasses)
		diag_note(d, NO_LOC, "with load = rank0_cpu (FSDP sync_module_states, one unit at a time on "
			  "the GPU) loading needs %s", report_bytes(alt.classes[i].device[PHASE_LOADING], b, sizeof b));
}

/* The step fits but a phase around it does not (phases.h). */
static void run_capacity(struct eval *ev, struct arena *a, const struct build *bd, const struct mem_class *k,
			 size_t i, struct loc *seen, size_t *nseen)
{
	struct diag_engine *de = eval_diag(ev);
	const struct phase_class *c = bd->rep.run && i < bd->rep.run->nclasses ? &bd->rep.run->classes[i] : NULL;
	char got[32], cap[32], over[32], step[32];
	struct loc at;

	if (!c || c->run_fits || !diag_is_enabled(de, DIAG_CAPACITY))
		return;
	at = phase_loc(bd, c->run);
	if (seen_at(seen, nseen, at))
		return;
	struct diag *d = diag_emit(de, DIAG_CAPACITY, at, "device total %s per GPU at %s exceeds %s (%s) by %s",
				   report_bytes(c->run_device, got, sizeof got), phase_name(c->run), bd->rep.gpu,
				   report_bytes(k->capacity, cap, sizeof cap),
				   report_bytes(c->run_device - k->capacity, over, sizeof over));

	if (d == diag_sink(de))
		return;
	diag_note(d, NO_LOC, "the training step itself needs %s; the run's peak is %s",
		  report_bytes(k->device_total, step, sizeof step), phase_name(c->run));
	if (c->run == PHASE_LOADING)
		note_load(a, bd, i, d);
}

static void warn_class(struct eval *ev, const struct check_job *cj, const struct build *bd,
		       const struct mem_class *k, struct fit_fixes *fx, struct loc *seen[2], size_t nseen[2])
{
	struct diag_engine *de = eval_diag(ev);
	char got[32], cap[32], over[32], free_b[32];

	if (!k->fits) {
		struct loc at = blame(bd, largest(k));

		/* -Wno-capacity: no warning, so no search either */
		if (!diag_is_enabled(de, DIAG_CAPACITY) || seen_at(seen[0], &nseen[0], at))
			return;
		capacity(ev, cj, bd, k, fx,
			 diag_emit(de, DIAG_CAPACITY, at, "device total %s per GPU exceeds %s (%s) by %s",
				   report_bytes(k->device_total, got, sizeof got), bd->rep.gpu,
				   report_bytes(k->capacity, cap, sizeof cap),
				   report_bytes(k->device_total - k->capacity, over, sizeof over)));
	} else if (!k->fits_headroom && !seen_at(seen[1], &nseen[1], bd->loc_train)) {
		diag_emit(de, DIAG_HEADROOM, bd->loc_train,
			  "only %s (%.1f%%) of %s stays free; the job asks for %.0f%% headroom",
			  report_bytes(k->capacity - k->device_total, free_b, sizeof free_b),
			  k->headroom * 100, bd->rep.gpu, bd->job.headroom * 100);
	}
}

void fit_check(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build *bd)
{
	const struct mem_result *r = bd->rep.result;
	struct fit_fixes fx = { .n = 0 };

	if (!r || !r->nclasses)
		return;
	struct loc *seen[2] = { ARENA_NEW_ARRAY(a, struct loc, r->nclasses),
				ARENA_NEW_ARRAY(a, struct loc, r->nclasses) };
	size_t nseen[2] = { 0, 0 };

	for (size_t i = 0; i < r->nclasses; i++)
		if (r->classes[i].capacity) {
			warn_class(ev, cj, bd, &r->classes[i], &fx, seen, nseen);
			if (r->classes[i].fits)
				run_capacity(ev, a, bd, &r->classes[i], i, seen[0], &nseen[0]);
		}
}
