/* SPDX-License-Identifier: MIT */
/*
 * fit.c - -Wcapacity and -Wheadroom (see fit.h). Every candidate fix is
 * re-built and re-analysed from the checked job with one override; a
 * candidate that does not divide the model is skipped silently.
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/fit.h"
#include "analyzer/memory.h"
#include "lang/diag.h"

/* Largest device total over the rank classes of @bd's job with @ov, or 0
 * if that variant cannot be built. */
static uint64_t try_variant(struct eval *ev, struct arena *a, const struct check_job *cj,
			    const struct build_override *ov, bool *fits)
{
	struct build b;
	struct mem_result r;
	uint64_t worst = 0;

	*fits = false;
	if (!build_job(ev, a, cj, ov, true, &b) || mem_analyze(&b.job, &r) != MEM_OK)
		return 0;
	*fits = true;
	for (size_t i = 0; i < r.nclasses; i++) {
		if (r.classes[i].device_total > worst)
			worst = r.classes[i].device_total;
		*fits &= r.classes[i].fits;
	}
	mem_result_free(&r);
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
static void note_fix(struct diag *d, const struct build *bd, struct loc field, const char *what,
		     uint64_t total)
{
	char buf[32];

	report_bytes(total, buf, sizeof buf);
	if (field.file)
		diag_note_fix(d, field, what, "%s fits (device total %s)", what, buf);
	else
		diag_note(d, bd->loc_train, "%s fits (device total %s)", what, buf);
}

/* Largest micro_batch below the current one that fits: totals grow with it. */
static void fix_micro_batch(struct eval *ev, struct arena *a, const struct check_job *cj,
			    const struct build *bd, struct diag *d)
{
	uint64_t lo = 0, hi = bd->micro_batch, best_total = 0;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct build_override ov = no_override();
		bool fits;

		ov.micro_batch = mid;
		uint64_t t = try_variant(ev, a, cj, &ov, &fits);

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
		note_fix(d, bd, bd->loc_micro_batch, what, best_total);
	}
}

static void fix_other(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build *bd,
		      struct diag *d)
{
	struct build_override ov = no_override();
	bool fits;
	uint64_t t;

	if (!bd->full_recompute) {
		ov.checkpoint = "full";
		if ((t = try_variant(ev, a, cj, &ov, &fits)) && fits)
			note_fix(d, bd, bd->loc_checkpoint, "checkpoint = full", t);
	}
	ov = no_override();
	if (bd->job.dp > 1 && bd->zero >= 0 && bd->zero < 3) {
		char what[32];

		ov.zero = bd->zero + 1;
		snprintf(what, sizeof what, "zero = %d", ov.zero);
		if ((t = try_variant(ev, a, cj, &ov, &fits)) && fits)
			note_fix(d, bd, bd->loc_zero, what, t);
	}
	ov = no_override();
	for (uint64_t tp = (uint64_t)bd->tp * 2; tp <= 8 && tp <= bd->gpus; tp *= 2) {
		char what[32];

		ov.tp = tp;
		snprintf(what, sizeof what, "tp = %llu", (unsigned long long)tp);
		if ((t = try_variant(ev, a, cj, &ov, &fits)) && fits) {
			note_fix(d, bd, bd->loc_tp, what, t);
			break;
		}
	}
}

static void capacity(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build *bd,
		     const struct mem_class *k)
{
	char got[32], cap[32], over[32], part[32];
	enum mem_component c = largest(k);
	struct diag *d = eval_error(ev, DIAG_CAPACITY, blame(bd, c),
				   "device total %s per GPU exceeds %s (%s) by %s",
				   report_bytes(k->device_total, got, sizeof got), bd->rep.gpu,
				   report_bytes(k->capacity, cap, sizeof cap),
				   report_bytes(k->device_total - k->capacity, over, sizeof over));

	if (bd->job.pp > 1)
		diag_note(d, NO_LOC, "on pipeline stage %u", (unsigned)k->stage);
	diag_note(d, NO_LOC, "the largest part is %s (%s)", mem_component_name(c),
		  report_bytes(k->at_peak[c], part, sizeof part));
	if (bd->micro_batch > 1)
		fix_micro_batch(ev, a, cj, bd, d);
	fix_other(ev, a, cj, bd, d);
}

void fit_check(struct eval *ev, struct arena *a, const struct check_job *cj, const struct build *bd)
{
	const struct mem_result *r = bd->rep.result;

	for (size_t i = 0; r && i < r->nclasses; i++) {
		const struct mem_class *k = &r->classes[i];

		if (!k->capacity)
			continue;
		if (!k->fits) {
			capacity(ev, a, cj, bd, k);
		} else if (!k->fits_headroom) {
			char free_b[32];

			eval_error(ev, DIAG_HEADROOM, bd->loc_train,
				  "only %s (%.1f%%) of %s stays free; the job asks for %.0f%% headroom",
				  report_bytes(k->capacity - k->device_total, free_b, sizeof free_b),
				  k->headroom * 100, bd->rep.gpu, bd->job.headroom * 100);
		}
	}
}
