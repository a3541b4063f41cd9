/* SPDX-License-Identifier: MIT */
/*
 * props.c - the properties (issue 10). Each takes the base job, makes the
 * related jobs by editing its text (or through the fit search's
 * struct build_override) and compares their predictions:
 *
 *   mono-*     raising micro_batch, seq_len or grad_accum lowers no figure
 *   zero       a higher ZeRO stage never raises per-device model states
 *   zero3-dp   doubling dp under ZeRO-3 halves the sharded states
 *   tp         raising tp (on twice the GPUs) never raises per-device states
 *   recompute  full <= selective <= none and full <= selective_op <= none
 *              (peak and every phase peak)
 *   lora       LoRA and QLoRA never use more than full fine-tuning
 *   fp32       fp32 weights are never smaller than bf16 weights
 *   sums       the components add up to the totals (model and JSON)
 *   text-json  the text report shows the JSON numbers
 *   layout     whitespace, comments, field and declaration order change nothing
 *   override   a fit-search override gives what the edited source gives
 *
 * "Figures" are compared per rank class when both jobs have the same class
 * layout, and as the maximum over classes (the worst GPU) always.
 * Components at the peak are compared only when the peak is at the same
 * instant: otherwise the peak moved and its breakdown is another instant's.
 */
#include "tests/property/property.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/alloc/alloc.h"
#include "analyzer/out/report.h"

struct side {
	struct prun r;
	const char *text;
};

/* ---- comparing two predictions ----------------------------------------- */

static bool same_layout(const struct prun *a, const struct prun *b)
{
	if (a->nclasses != b->nclasses)
		return false;
	for (size_t i = 0; i < a->nclasses; i++)
		if (a->classes[i].stage != b->classes[i].stage ||
		    a->classes[i].nstages != b->classes[i].nstages)
			return false;
	return true;
}

static bool same_instant(const struct mem_where *x, const struct mem_where *y)
{
	return x->phase == y->phase && x->backward_pass == y->backward_pass &&
	       x->recompute == y->recompute && x->accumulating == y->accumulating &&
	       x->block == y->block && x->iteration == y->iteration && x->layer == y->layer;
}

/* One figure of one class; f < 0 selects the named totals. */
enum fig { F_ALLOC = -1, F_RESERVED = -2, F_DEVICE = -3 };

static uint64_t fig_of(const struct mem_class *k, int kind, int i)
{
	switch (kind) {
	case 0: return i == F_ALLOC ? k->peak_allocated : i == F_RESERVED ? k->peak_reserved :
		       k->device_total;
	case 1: return k->persistent[i];
	case 2: return k->phase_peak[i];
	default: return k->at_peak[i];
	}
}

static const char *fig_name(int kind, int i)
{
	static const char *const kinds[] = { "", "persistent ", "phase peak ", "at peak " };

	if (kind == 0)
		return i == F_ALLOC ? "peak allocated" : i == F_RESERVED ? "peak reserved" :
		       "device total";
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s%s", kinds[kind],
		 kind == 2 ? mem_phase_name((enum mem_phase)i) : mem_component_name((enum mem_component)i));
	return buf;
}

static bool replayed(const struct side *s)
{
	for (size_t c = 0; c < s->r.nclasses; c++)
		if (s->r.classes[c].replayed)
			return true;
	return false;
}

/* What the caching allocator's replay decides (torch FSDP's default,
 * memory.h mem_replays_by_default): reserved, the device total over it
 * and the overhead holding the cache. Best fit and segment rounding do not
 * grow with the requests: a larger step can pack into fewer segments. */
static bool replay_decides(const struct side *lo, const struct side *hi, int kind, int i)
{
	bool fig = kind == 0 ? i != F_ALLOC : kind != 2 && i == MEM_C_OVERHEAD;

	return fig && (replayed(lo) || replayed(hi));
}

/* lo <= hi + slack for one figure, per class and as the maximum. */
static void le_fig(struct prop_ctx *pc, const char *prop, const struct side *lo,
		   const struct side *hi, int kind, int i, uint64_t slack)
{
	uint64_t ml = 0, mh = 0;

	if (replay_decides(lo, hi, kind, i))
		return;

	for (size_t c = 0; c < lo->r.nclasses; c++)
		ml = fig_of(&lo->r.classes[c], kind, i) > ml ? fig_of(&lo->r.classes[c], kind, i) : ml;
	for (size_t c = 0; c < hi->r.nclasses; c++)
		mh = fig_of(&hi->r.classes[c], kind, i) > mh ? fig_of(&hi->r.classes[c], kind, i) : mh;
	if (kind != 3 && ml > mh + slack) {
		prop_fail(pc, prop, lo->text, hi->text, "%s (largest over rank classes): A %" PRIu64
			  " > B %" PRIu64, fig_name(kind, i), ml, mh);
		return;
	}
	if (!same_layout(&lo->r, &hi->r))
		return;
	for (size_t c = 0; c < lo->r.nclasses; c++) {
		const struct mem_class *x = &lo->r.classes[c], *y = &hi->r.classes[c];

		if (kind == 3 && !same_instant(&x->peak, &y->peak))
			continue;
		if (fig_of(x, kind, i) > fig_of(y, kind, i) + slack) {
			prop_fail(pc, prop, lo->text, hi->text, "%s of stage %" PRIu32 ": A %" PRIu64
				  " > B %" PRIu64, fig_name(kind, i), x->stage, fig_of(x, kind, i),
				  fig_of(y, kind, i));
			return;
		}
	}
}

static void le_totals(struct prop_ctx *pc, const char *prop, const struct side *lo,
		      const struct side *hi)
{
	le_fig(pc, prop, lo, hi, 0, F_ALLOC, 0);
	le_fig(pc, prop, lo, hi, 0, F_RESERVED, 0);
	le_fig(pc, prop, lo, hi, 0, F_DEVICE, 0);
}

/* bitsandbytes optimizers choose fp32, 8-bit or paged (unified, invisible)
 * states per tensor by its size (min_8bit_size, page_min): a smaller shard
 * can need more device bytes, so their states are not compared. */
static bool size_dependent_states(const struct pjob *j)
{
	const char *o = pjob_get(j, "optimizer");

	return o && (strstr(o, "8bit") || strstr(o, "paged"));
}

static void le_states(struct prop_ctx *pc, const char *prop, const struct pjob *j,
		      const struct side *lo, const struct side *hi)
{
	for (int c = MEM_C_WEIGHTS; c <= MEM_C_OPTIMIZER; c++)
		if (c != MEM_C_OPTIMIZER || !size_dependent_states(j))
			le_fig(pc, prop, lo, hi, 1, c, 0);
}

/* Every figure of @lo is at most @hi's (the fragmentation part of the
 * overhead may shrink by one 2 MiB segment as the allocation grows). */
static void le_all(struct prop_ctx *pc, const char *prop, const struct side *lo,
		   const struct side *hi)
{
	le_totals(pc, prop, lo, hi);
	for (int c = 0; c < MEM_C__COUNT; c++) {
		le_fig(pc, prop, lo, hi, 1, c, 0);
		le_fig(pc, prop, lo, hi, 3, c, c == MEM_C_OVERHEAD ? ALLOC_ROUND_LARGE : 0);
	}
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		le_fig(pc, prop, lo, hi, 2, p, 0);
}

/* Identical predictions; the first difference goes into @why. */
static bool same_figures(const struct prun *a, const struct prun *b, char *why, size_t n)
{
	if (!same_layout(a, b)) {
		snprintf(why, n, "rank classes differ (%zu vs %zu)", a->nclasses, b->nclasses);
		return false;
	}
	for (size_t c = 0; c < a->nclasses; c++) {
		for (int kind = 0; kind < 4; kind++) {
			int lo = kind == 0 ? F_DEVICE : 0;
			int hi = kind == 0 ? F_ALLOC : kind == 2 ? MEM_PHASE__COUNT - 1 : MEM_C__COUNT - 1;

			for (int i = lo; i <= hi; i++) {
				uint64_t x = fig_of(&a->classes[c], kind, i), y = fig_of(&b->classes[c], kind, i);

				if (x != y) {
					snprintf(why, n, "%s of class %zu: A %" PRIu64 ", B %" PRIu64,
						 fig_name(kind, i), c, x, y);
					return false;
				}
			}
		}
	}
	return true;
}

/* ---- edits ---------------------------------------------------------------- */

static struct pjob *edit(struct prop_ctx *pc, const struct pjob *base, const char *key,
			 const char *value)
{
	struct pjob *j = pjob_copy(&pc->var, base);

	pjob_set(&pc->var, j, key, value);
	return j;
}

/* "8 x A100" -> "16 x A100", "2 x 8 x H100" -> "4 x 8 x H100". */
static const char *double_cluster(struct prop_ctx *pc, const char *cl)
{
	char *end;
	unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;

	if (!n)
		return NULL;
	return arena_printf(&pc->var, "%llu%s", 2 * n, end);
}

static bool run(struct prop_ctx *pc, const struct pjob *j, struct side *s)
{
	return prop_run(pc, j, PJOB_PLAIN, NULL, &s->r, &s->text);
}

/* ---- the properties ------------------------------------------------------ */

static bool p_mono(struct prop_ctx *pc, const struct pjob *base, const struct side *b,
		   const char *key, uint64_t dflt)
{
	uint64_t v = pjob_get_u64(base, key, dflt);
	struct pjob *j = pjob_copy(&pc->var, base);
	struct side s;

	if (!v)
		return false;
	pjob_set_u64(&pc->var, j, key, prop_pick(pc, 2) ? 2 * v : v + 1);
	if (!run(pc, j, &s))
		return false;
	le_all(pc, arena_printf(&pc->var, "mono-%s", key), b, &s);
	return true;
}

static bool p_zero(struct prop_ctx *pc, const struct pjob *base)
{
	struct side s[4];
	struct pjob *j = edit(pc, base, "fsdp", NULL);
	/* ZeRO-2/3 do not combine with pp > 1 (bad-layout): compare 0 and 1 */
	int n = pjob_get_u64(j, "parallel.pp", 1) > 1 ? 2 : 4;

	for (int k = 0; k < n; k++) {
		pjob_set_u64(&pc->var, j, "zero", (uint64_t)k);
		if (!run(pc, j, &s[k]))
			return false;
	}
	for (int k = 0; k < n - 1; k++)
		le_states(pc, "zero", base, &s[k + 1], &s[k]);
	return true;
}

/* |2 * half - full| within the per-tensor rounding and the replicated weights. */
static void halves(struct prop_ctx *pc, const struct side *full, const struct side *half, int c)
{
	uint64_t slack = 2048 * full->r.tensors + full->r.replicated_bytes;

	for (size_t i = 0; i < full->r.nclasses && same_layout(&full->r, &half->r); i++) {
		uint64_t a = full->r.classes[i].persistent[c], b2 = 2 * half->r.classes[i].persistent[c];

		if (b2 > a + slack || a > b2 + slack)
			prop_fail(pc, "zero3-dp", full->text, half->text,
				  "persistent %s of stage %" PRIu32 ": dp %" PRIu32 " has %" PRIu64
				  ", dp %" PRIu32 " has %" PRIu64 " (not half, slack %" PRIu64 ")",
				  mem_component_name((enum mem_component)c), full->r.classes[i].stage,
				  full->r.dp, a, half->r.dp, b2 / 2, slack);
	}
}

static bool p_zero3_dp(struct prop_ctx *pc, const struct pjob *base)
{
	struct side a, b;
	struct pjob *j = edit(pc, base, "fsdp", NULL);
	const char *big = double_cluster(pc, pjob_get(base, "cluster"));

	pjob_set(&pc->var, j, "zero", "3");
	if (!big || !run(pc, j, &a))
		return false;
	pjob_set(&pc->var, j, "cluster", big);
	if (!run(pc, j, &b) || b.r.dp != 2 * a.r.dp)
		return false;
	for (int c = MEM_C_WEIGHTS; c <= MEM_C_OPTIMIZER; c++)
		halves(pc, &a, &b, c);
	return true;
}

static bool p_tp(struct prop_ctx *pc, const struct pjob *base, const struct side *b)
{
	struct side s;
	struct pjob *j = pjob_copy(&pc->var, base);
	const char *big = double_cluster(pc, pjob_get(base, "cluster"));

	if (!big)
		return false;
	pjob_set_u64(&pc->var, j, "parallel.tp", 2 * b->r.tp);
	pjob_set(&pc->var, j, "cluster", big);
	if (!run(pc, j, &s) || s.r.dp != b->r.dp)
		return false;
	le_states(pc, "tp", base, &s, b);
	return true;
}

/* Op-level SAC (selective_op) keeps a superset of what full keeps and
 * re-materialises the rest of the running repeat as full does: full <=
 * selective_op. Against none it keeps fewer tensors, except the stored input
 * (as full) and the mm outputs only it declares (one repeat's extra saves). */
static bool p_recompute_op(struct prop_ctx *pc, const struct pjob *base, const struct side s[3])
{
	struct side op;

	if (!run(pc, edit(pc, base, "checkpoint", "selective_op"), &op))
		return false;
	uint64_t extra = op.r.repeat_saves > s[0].r.repeat_saves ?
			 op.r.repeat_saves - s[0].r.repeat_saves : 0;
	uint64_t slack = op.r.ckpt_extra + extra;

	for (int t = F_DEVICE; t <= F_ALLOC; t++) {
		le_fig(pc, "recompute (full <= selective_op)", &s[2], &op, 0, t,
		       t == F_ALLOC ? 0 : ALLOC_ROUND_LARGE);
		le_fig(pc, "recompute (selective_op <= none)", &op, &s[0], 0, t,
		       t == F_ALLOC ? slack : slack + ALLOC_ROUND_LARGE + slack / 5);
	}
	for (int p = 0; p < MEM_PHASE__COUNT; p++) {
		le_fig(pc, "recompute (full <= selective_op)", &s[2], &op, 2, p, 0);
		le_fig(pc, "recompute (selective_op <= none)", &op, &s[0], 2, p, slack);
	}
	return true;
}

static bool p_recompute(struct prop_ctx *pc, const struct pjob *base)
{
	static const char *const modes[3] = { "none", "selective", "full" };
	struct side s[3];

	for (int m = 0; m < 3; m++)
		if (!run(pc, edit(pc, base, "checkpoint", modes[m]), &s[m]))
			return false;
	for (int lo = 1; lo < 3; lo++) {
		for (int hi = 0; hi < lo; hi++) {
			const char *name = arena_printf(&pc->var, "recompute (%s <= %s)", modes[lo],
							modes[hi]);

			/* Full may hold one stored input that none freed (see prun.h);
			 * and, in the stage's first repeat, the re-run block's core
			 * attention tensors through the backward of the layers after
			 * it, which selective rebuilds only in attention's own backward. */
			uint64_t slack = lo == 2 ? s[lo].r.ckpt_extra : 0;

			if (lo == 2 && hi == 1)
				slack += s[0].r.repeat_saves > s[1].r.repeat_saves ?
					 s[0].r.repeat_saves - s[1].r.repeat_saves : 0;

			for (int t = F_DEVICE; t <= F_ALLOC; t++)
				le_fig(pc, name, &s[lo], &s[hi], 0, t, t == F_ALLOC ? slack :
				       slack + ALLOC_ROUND_LARGE + slack / 5);
			for (int p = 0; p < MEM_PHASE__COUNT; p++)
				le_fig(pc, name, &s[lo], &s[hi], 2, p, slack);
		}
	}
	return p_recompute_op(pc, base, s);
}

static bool p_lora(struct prop_ctx *pc, const struct pjob *base)
{
	const char *model = pjob_get(base, "model");
	const char *t = model && (strstr(model, "gpt2") || strstr(model, "falcon") ||
				  strstr(model, "phi3")) ? "[qkv]" : "[q, v]";
	struct pjob *full = edit(pc, base, "finetune", NULL);
	struct side f, l;
	bool any = false;

	pjob_set(&pc->var, full, "freeze", NULL);
	if (!run(pc, full, &f))
		return false;
	for (int q = 0; q < 2; q++) {
		const char *ft = arena_printf(&pc->var, "%s(r = %u, alpha = 16, targets = %s, dropout = 0)",
					      q ? "qlora" : "lora", 8u << prop_pick(pc, 4), t);

		if (!run(pc, edit(pc, full, "finetune", ft), &l))
			continue;
		any = true;
		/* The adapters are extra weights: before any gradient exists (the
		 * loss of the first micro-batch) and with a stateless optimizer
		 * (plain SGD) they are all LoRA adds, at most 12 B a parameter
		 * (fp32 resident, fp32 gathered under ZeRO-3/FSDP, a 16-bit cast,
		 * 512-B rounding) and their small saved outputs. */
		uint64_t extra = 12 * l.r.params_trainable + 1024 * l.r.tensors;
		const char *loss = pjob_get(base, "loss");

		/* A frozen head under autocast with LitGPT's 128-token head calls
		 * saves one weight cast per chunk (stdlib lm_head, LGRT-40). */
		for (int k = F_DEVICE; k <= F_ALLOC && !(loss && !strcmp(loss, "chunked_kept")); k++)
			le_fig(pc, "lora", &l, &f, 0, k, k == F_ALLOC ? extra :
			       extra + extra / 5 + ALLOC_ROUND_LARGE);
		le_fig(pc, "lora", &l, &f, 1, MEM_C_GRADIENTS, 0);
		if (!size_dependent_states(base))
			le_fig(pc, "lora", &l, &f, 1, MEM_C_OPTIMIZER, 0);
	}
	return any;
}

static bool p_fp32(struct prop_ctx *pc, const struct pjob *base)
{
	struct side w, h;
	const char *half[2] = { "bf16_true", "bf16_mixed" };
	bool any = false;

	if (!run(pc, edit(pc, base, "precision", "fp32"), &w))
		return false;
	for (int i = 0; i < 2; i++) {
		if (!run(pc, edit(pc, base, "precision", half[i]), &h))
			continue;
		any = true;
		le_fig(pc, "fp32", &h, &w, 1, MEM_C_WEIGHTS, 0);
	}
	return any;
}

/* torch.compile's partitioner only recomputes what eager saves, and its
 * compiled norms and loss keep no fp32 transients: no figure grows
 * (memory-model.md "torch.compile"), but for the rstd (4 B a token a norm)
 * that the compiled profile saves and the eager HF profile leaves out. */
static bool p_compile(struct prop_ctx *pc, const struct pjob *base)
{
	struct side e, c;
	struct pjob *eager = edit(pc, base, "kernels", "hf");

	if (!run(pc, eager, &e) || !run(pc, edit(pc, eager, "compile", "true"), &c))
		return false;
	le_fig(pc, "compile", &c, &e, 0, F_ALLOC, ALLOC_ROUND_LARGE);
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		le_fig(pc, "compile", &c, &e, 2, p, ALLOC_ROUND_LARGE);
	return true;
}

/* Megatron's --recompute-modules turns saves into their layer's backward
 * transients: at no instant more than the default list (core_attn), both
 * Megatron-Core jobs (the record makes one). */
static bool p_recompute_modules(struct prop_ctx *pc, const struct pjob *base)
{
	struct side d, m;
	struct pjob *sel = edit(pc, edit(pc, base, "checkpoint", "selective"), "megatron.recompute_modules",
				"[\"core_attn\"]");

	if (!run(pc, sel, &d))
		return false;
	if (!run(pc, edit(pc, sel, "megatron.recompute_modules",
			  "[\"core_attn\", \"mlp\", \"moe\", \"layernorm\"]"), &m))
		return false;
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		le_fig(pc, "recompute-modules", &m, &d, 2, p, 0);
	return true;
}

/* ---- the report ---------------------------------------------------------- */

/* The number after "key": at or after @from in @json; NULL if absent. */
static const char *json_u64(const char *from, const char *key, uint64_t *v)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = from ? strstr(from, pat) : NULL;
	if (!p)
		return NULL;
	*v = strtoull(p + strlen(pat), NULL, 10);
	return p + strlen(pat);
}

static void sums_class(struct prop_ctx *pc, const struct side *b, const struct mem_class *k)
{
	uint64_t alloc = 0, bufs = 0, top = 0;

	for (int c = 0; c < MEM_C_OVERHEAD; c++)
		alloc += k->at_peak[c];
	for (int i = 0; i < MEM_B__COUNT; i++)
		bufs += k->buffers_at_peak[i];
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		top = k->phase_peak[p] > top ? k->phase_peak[p] : top;
	/* paged optimizer states are outside the allocator, inside the device total */
	if (alloc != k->peak_allocated ||
	    alloc + k->at_peak[MEM_C_OVERHEAD] + k->paged_bytes != k->device_total)
		prop_fail(pc, "sums", b->text, NULL, "components %" PRIu64 " + overhead %" PRIu64
			  " + paged %" PRIu64 " vs allocated %" PRIu64 ", device %" PRIu64, alloc,
			  k->at_peak[MEM_C_OVERHEAD], k->paged_bytes, k->peak_allocated,
			  k->device_total);
	if (bufs != k->at_peak[MEM_C_BUFFERS])
		prop_fail(pc, "sums", b->text, NULL, "buffer parts %" PRIu64 " vs buffers %" PRIu64,
			  bufs, k->at_peak[MEM_C_BUFFERS]);
	if (k->overhead_context + k->overhead_cublas + k->overhead_nccl + k->overhead_frag !=
	    k->at_peak[MEM_C_OVERHEAD] || k->peak_reserved != k->peak_allocated + k->overhead_frag)
		prop_fail(pc, "sums", b->text, NULL, "overhead parts do not add up to %" PRIu64,
			  k->at_peak[MEM_C_OVERHEAD]);
	if (top != k->peak_allocated || k->phase_peak[k->peak.phase] != k->peak_allocated)
		prop_fail(pc, "sums", b->text, NULL, "phase peaks (max %" PRIu64 ") vs peak %" PRIu64,
			  top, k->peak_allocated);
}

/* The JSON of class @k (from @p on) holds the model's numbers. */
static const char *json_class(struct prop_ctx *pc, const struct side *b, const char *p,
			      const struct mem_class *k)
{
	static const char *const keys[MEM_C__COUNT] = { "weights", "gradients", "optimizer",
		"activations", "logits", "buffers", "overhead" };
	const uint64_t tot[3] = { k->peak_allocated, k->peak_reserved, k->device_total };
	static const char *const tkeys[3] = { "peak_allocated_bytes", "peak_reserved_bytes",
					      "device_total_bytes" };
	uint64_t v = 0;

	p = p ? strstr(p, "\"components\"") : NULL;
	for (int c = 0; c < MEM_C__COUNT && p; c++)
		if ((p = json_u64(p, keys[c], &v)) && v != k->at_peak[c])
			prop_fail(pc, "sums", b->text, NULL, "JSON %s %" PRIu64 " vs %" PRIu64, keys[c],
				  v, k->at_peak[c]);
	for (int t = 0; t < 3 && p; t++)
		if ((p = json_u64(p, tkeys[t], &v)) && v != tot[t])
			prop_fail(pc, "sums", b->text, NULL, "JSON %s %" PRIu64 " vs %" PRIu64, tkeys[t],
				  v, tot[t]);
	if (!p)
		prop_fail(pc, "sums", b->text, NULL, "JSON class at stage %" PRIu32 " is incomplete",
			  k->stage);
	return p;
}

/* Classes are contiguous runs of stages covering [0, pp), as the report
 * names them ("stages 1-2"). */
static void classes_cover(struct prop_ctx *pc, const struct side *b)
{
	uint32_t next = 0;

	for (size_t c = 0; c < b->r.nclasses; c++) {
		const struct mem_class *k = &b->r.classes[c];

		if (k->stage != next || k->nstages == 0)
			prop_fail(pc, "sums", b->text, NULL, "class %zu starts at stage %" PRIu32
				  ", expected %" PRIu32, c, k->stage, next);
		next = k->stage + k->nstages;
	}
	if (next != b->r.pp)
		prop_fail(pc, "sums", b->text, NULL, "classes cover %" PRIu32 " of %" PRIu32
			  " stages", next, b->r.pp);
}

static bool p_sums(struct prop_ctx *pc, const struct side *b)
{
	const char *p = b->r.json;
	uint64_t total = 0;

	classes_cover(pc, b);
	if (!json_u64(p, "params_total", &total) || total != b->r.params_total)
		prop_fail(pc, "sums", b->text, NULL, "JSON params_total %" PRIu64 " vs %" PRIu64, total,
			  b->r.params_total);
	for (size_t c = 0; c < b->r.nclasses; c++) {
		sums_class(pc, b, &b->r.classes[c]);
		p = json_class(pc, b, p, &b->r.classes[c]);
	}
	return true;
}

/* The "X.XX GiB" of the text row starting with @name, after @from. */
static const char *text_row(const char *from, const char *name, char *out, size_t n)
{
	char pat[48];
	const char *p, *g;

	snprintf(pat, sizeof(pat), "\n    %s ", name);
	p = from ? strstr(from, pat) : NULL;
	g = p ? strstr(p + 1, " GiB") : NULL;
	if (!g)
		return NULL;
	const char *s = g;

	while (s > p && s[-1] != ' ')
		s--;
	snprintf(out, n, "%.*s GiB", (int)(g - s), s);
	return g;
}

static bool p_text_json(struct prop_ctx *pc, const struct side *b)
{
	const char *p = b->r.text;

	for (size_t c = 0; c < b->r.nclasses && p; c++) {
		const struct mem_class *k = &b->r.classes[c];
		const uint64_t tot[3] = { k->peak_allocated, k->peak_reserved, k->device_total };
		static const char *const tn[3] = { "peak allocated", "peak reserved", "device total" };
		char got[48], want[48];

		p = strstr(p, "rank class:");
		for (int i = 0; i < MEM_C__COUNT + 3 && p; i++) {
			const char *name = i < MEM_C__COUNT ? mem_component_name((enum mem_component)i) :
				      tn[i - MEM_C__COUNT];

			report_bytes(i < MEM_C__COUNT ? k->at_peak[i] : tot[i - MEM_C__COUNT], want,
				     sizeof(want));
			p = text_row(p, name, got, sizeof(got));
			if (p && strcmp(got, want) != 0)
				prop_fail(pc, "text-json", b->text, NULL, "text %s shows %s, JSON has %s",
					  name, got, want);
		}
	}
	if (!p)
		prop_fail(pc, "text-json", b->text, NULL, "a text row is missing:\n%s", b->r.text);
	return true;
}

/* The JSON's jobs without their "line" entry and without the diagnostics,
 * whose locations a layout change moves. */
static const char *json_sans_line(struct prop_ctx *pc, const char *json)
{
	const char *p = strstr(json, "\"line\": ");
	const char *e = p ? strchr(p, '\n') : NULL;
	const char *d = e ? strstr(e, "\"diagnostics\"") : NULL;

	if (!d)
		return json;
	return arena_printf(&pc->var, "%.*s%.*s", (int)(p - json), json, (int)(d - e - 1), e + 1);
}

static bool p_layout(struct prop_ctx *pc, const struct pjob *base, const struct side *b)
{
	char why[160];

	for (int st = PJOB_NOISY; st < PJOB__STYLES; st++) {
		struct side s;

		if (!prop_run(pc, base, (enum pjob_style)st, NULL, &s.r, &s.text)) {
			prop_fail(pc, "layout", b->text, s.text, "the relaid job does not check:\n%s",
				  s.r.diags);
			continue;
		}
		if (!same_figures(&b->r, &s.r, why, sizeof(why)))
			prop_fail(pc, "layout", b->text, s.text, "%s", why);
		else if (strcmp(b->r.text, s.r.text) != 0 ||
			 strcmp(json_sans_line(pc, b->r.json), json_sans_line(pc, s.r.json)) != 0)
			prop_fail(pc, "layout", b->text, s.text, "the reports differ:\n%s\n%s", b->r.text,
				  s.r.text);
	}
	return true;
}

/* The override @ov on the base text against the edited text @j. */
static bool override_one(struct prop_ctx *pc, const struct pjob *base, const struct pjob *j,
			 const struct build_override *ov, const char *what)
{
	struct side o, t;
	char why[160];

	if (!prop_run(pc, base, PJOB_PLAIN, ov, &o.r, &o.text) || !run(pc, j, &t))
		return false;
	if (!same_figures(&o.r, &t.r, why, sizeof(why)))
		prop_fail(pc, "override", o.text, t.text, "%s as an override (A) and in the source (B): "
			  "%s\n%s%s", what, why, o.r.text, t.r.text);
	return true;
}

static bool p_override(struct prop_ctx *pc, const struct pjob *base, const struct side *b)
{
	uint64_t mb = 2 * pjob_get_u64(base, "micro_batch", 1);
	struct build_override ov = { .micro_batch = mb, .zero = -1 };
	bool any = override_one(pc, base, edit(pc, base, "micro_batch",
						arena_printf(&pc->var, "%" PRIu64, mb)), &ov, "micro_batch");

	ov = (struct build_override){ .checkpoint = "full", .zero = -1 };
	any |= override_one(pc, base, edit(pc, base, "checkpoint", "full"), &ov, "checkpoint = full");
	if (!pjob_get(base, "fsdp")) {
		ov = (struct build_override){ .zero = (int)prop_pick(pc, 4) };
		any |= override_one(pc, base, edit(pc, base, "zero", arena_printf(&pc->var, "%d", ov.zero)),
				    &ov, "zero");
	}
	ov = (struct build_override){ .tp = 2 * b->r.tp, .zero = -1 };
	any |= override_one(pc, base, edit(pc, base, "parallel.tp",
					   arena_printf(&pc->var, "%" PRIu32, 2 * b->r.tp)), &ov, "tp");
	return any;
}

/* ---- driver -------------------------------------------------------------- */

static void tally(struct prop_ctx *pc, bool ran)
{
	if (!ran)
		return;
	if (pc->failed_now)
		pc->failed++;
	else
		pc->passed++;
	pc->failed_now = 0;
}

void prop_check_all(struct prop_ctx *pc, const struct pjob *base)
{
	struct side b;

	if (!run(pc, base, &b)) {
		prop_fail(pc, "base", b.text, NULL, "the base job does not check:\n%s", b.r.diags);
		tally(pc, true);
		return;
	}
	tally(pc, p_sums(pc, &b));
	tally(pc, p_text_json(pc, &b));
	tally(pc, p_layout(pc, base, &b));
	tally(pc, p_mono(pc, base, &b, "micro_batch", 0));
	tally(pc, p_mono(pc, base, &b, "seq_len", 0));
	tally(pc, p_mono(pc, base, &b, "grad_accum", 1));
	tally(pc, p_zero(pc, base));
	tally(pc, p_zero3_dp(pc, base));
	tally(pc, p_tp(pc, base, &b));
	tally(pc, p_recompute(pc, base));
	tally(pc, p_lora(pc, base));
	tally(pc, p_fp32(pc, base));
	tally(pc, p_compile(pc, base));
	tally(pc, p_recompute_modules(pc, base));
	tally(pc, p_override(pc, base, &b));
}
