/* SPDX-License-Identifier: MIT */
/*
 * report.c - the per-device report: a text table for people and one
 * versioned JSON document for tools.
 *
 * Everything printed is derived from integers (bytes, counts) with integer
 * arithmetic, except the headroom fraction the memory model computes; no
 * locale is ever set, so the output is byte-for-byte reproducible.  The JSON
 * is written by hand: a tiny writer tracks nesting and commas so that every
 * caller only says "key, value".
 */
#include "analyzer/out/report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyzer/memory/offload.h"
#include "analyzer/out/diag_out.h"
#include "lang/diag.h"
#include "lang/source.h"

#define GIB_SHIFT 30
/* The smallest byte count report_bytes() rounds up to "0.01 GiB". */
#define GIB_HUNDREDTH_HALF ((UINT64_C(1) << GIB_SHIFT) / 200 + 1)

const char *report_bytes(uint64_t b, char *buf, size_t n)
{
	/* Integer rounding (half up) keeps the last digit exact for any size,
	 * where a double would drift above 2^53 bytes. */
	uint64_t whole = b >> GIB_SHIFT;
	uint64_t frac = b & ((UINT64_C(1) << GIB_SHIFT) - 1);
	uint64_t cents = (frac * 100 + (UINT64_C(1) << (GIB_SHIFT - 1))) >> GIB_SHIFT;

	if (cents == 100) {
		whole++;
		cents = 0;
	}
	snprintf(buf, n, "%" PRIu64 ".%02" PRIu64 " GiB", whole, cents);
	return buf;
}

/* 13015864320 -> "13,015,864,320": exact counts people can still read. */
static const char *fmt_count(uint64_t v, char *buf, size_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < len && o + 1 < n; i++) {
		if (i > 0 && (len - i) % 3 == 0 && o + 2 < n)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static const char *or_unknown(const char *s)
{
	return s && *s ? s : "?";
}

/* ---- text ------------------------------------------------------------- */

/* Column layout of the table: 4 indent + name + dtype, then the value
 * right-aligned so that the decimal points line up. */
#define COL_NAME 15
#define COL_DTYPE 8
#define COL_VALUE 12
#define TABLE_WIDTH (4 + COL_NAME + COL_DTYPE + COL_VALUE)

static void text_header(FILE *out, const struct report_job *j)
{
	char tot[32], tr[32];

	fprintf(out, "%s: %s", or_unknown(j->name), or_unknown(j->model));
	if (j->params_total)
		fprintf(out, " (%s params, %s trainable)", fmt_count(j->params_total, tot, sizeof(tot)),
			fmt_count(j->params_trainable, tr, sizeof(tr)));
	if (j->gpus)
		fprintf(out, " on %" PRIu64 " x %s", j->gpus, or_unknown(j->gpu));
	else	/* a cluster that could not be counted: no made-up 0 */
		fprintf(out, " on ? x %s", or_unknown(j->gpu));
	if (j->nodes > 1)
		fprintf(out, " (%" PRIu64 " nodes)", j->nodes);
	fputc('\n', out);
}

static void text_layout(FILE *out, const struct report_job *j)
{
	fprintf(out, "  layout: dp %" PRIu32 ", tp %" PRIu32 ", pp %" PRIu32 ", cp %" PRIu32
		", ep %" PRIu32, j->dp, j->tp, j->pp, j->cp, j->ep);
	if (j->vp > 1)
		fprintf(out, ", vp %" PRIu32, j->vp);
	if (j->sequence_parallel)
		fputs(", sequence parallel", out);
	fprintf(out, "; %s; %s; %s", or_unknown(j->sharding), or_unknown(j->precision),
		or_unknown(j->optimizer));
	/* Full fine-tuning is the default and not worth a column; adapters are. */
	if (j->finetune && strcmp(j->finetune, "full") != 0)
		fprintf(out, "; %s", j->finetune);
	if (j->rl)
		fprintf(out, "; %s", j->rl);
	if (j->recompute && strcmp(j->recompute, "none") != 0)
		fprintf(out, "; %s recompute", j->recompute);
	else
		fputs("; no recompute", out);
	fprintf(out, "; micro_batch %" PRIu64 ", seq_len %" PRIu64 ", grad_accum %" PRIu64 "\n",
		j->micro_batch, j->seq_len, j->grad_accum);
}

static void text_row(FILE *out, const char *name, const char *dtype, uint64_t bytes)
{
	char b[40];

	fprintf(out, "    %-*s%-*s%*s", COL_NAME, name, COL_DTYPE, dtype ? dtype : "", COL_VALUE,
		report_bytes(bytes, b, sizeof(b)));
}

/* " (name 1.00 GiB, ...)" listing only the non-zero parts, so a DDP job is
 * not padded with four zero ZeRO buffers. */
static void text_parts(FILE *out, const char *const *names, const uint64_t *v, size_t n)
{
	char b[40];
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		if (!v[i])
			continue;
		/* A real but tiny part (NCCL's few MiB) must not read as zero. */
		if (v[i] < GIB_HUNDREDTH_HALF)
			snprintf(b, sizeof(b), "< 0.01 GiB");
		else
			report_bytes(v[i], b, sizeof(b));
		fprintf(out, "%s%s %s", any ? ", " : "   (", names[i], b);
		any = true;
	}
	if (any)
		fputc(')', out);
}

static void text_explain(FILE *out, const char *s, bool explain)
{
	if (explain && s && *s)
		fprintf(out, "        %s\n", s);
}

static void text_components(FILE *out, const struct report_job *j, const struct mem_class *k,
			    bool explain)
{
	const char *dtypes[MEM_C__COUNT] = { j->weights_dtype, j->grads_dtype, j->state_dtype,
					     j->act_dtype, NULL, NULL, NULL };
	const char *bufs[MEM_B__COUNT];
	static const char *const ovh[4] = { "CUDA context", "cuBLAS", "NCCL", "fragmentation" };
	const uint64_t ovv[4] = { k->overhead_context, k->overhead_cublas, k->overhead_nccl,
				  k->overhead_frag };

	for (int b = 0; b < MEM_B__COUNT; b++)
		bufs[b] = mem_buffer_name((enum mem_buffer)b);
	fprintf(out, "%*s\n", TABLE_WIDTH, "per device");
	for (int c = 0; c < MEM_C__COUNT; c++) {
		text_row(out, mem_component_name((enum mem_component)c), dtypes[c], k->at_peak[c]);
		if (c == MEM_C_BUFFERS)
			text_parts(out, bufs, k->buffers_at_peak, MEM_B__COUNT);
		else if (c == MEM_C_OVERHEAD)
			text_parts(out, ovh, ovv, 4);
		fputc('\n', out);
		text_explain(out, k->explain[c], explain);
	}
}

/* "of 80.00 GiB: fits, 12% headroom" or "of 80.00 GiB: exceeds by 3.20 GiB". */
static void text_capacity(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	char cap[40], over[40];

	if (!k->capacity) {
		fputs("; capacity unknown", out);
		return;
	}
	fprintf(out, " of %s: ", report_bytes(k->capacity, cap, sizeof(cap)));
	if (!k->fits) {
		fprintf(out, "exceeds by %s",
			report_bytes(k->device_total - k->capacity, over, sizeof(over)));
		return;
	}
	if (k->paged_evicted) {
		fprintf(out, "fits with %s of paged states evicted to the host",
			report_bytes(k->paged_evicted, over, sizeof(over)));
		return;
	}
	fprintf(out, "fits, %.0f%% headroom", floor(k->headroom * 100.0));
	if (!k->fits_headroom && j->job)
		fprintf(out, " (below the requested %.0f%%)", j->job->headroom * 100.0);
}

/* "backward, layer 40 (block), recomputing", "loss (forward)", "optimizer step". */
static void text_where(FILE *out, const struct mem_where *p)
{
	fputs(mem_phase_name(p->phase), out);
	if (p->phase == MEM_PHASE_LOSS)
		fputs(p->backward_pass ? " (backward)" : " (forward)", out);
	if (p->phase != MEM_PHASE_OPTIMIZER) {
		if (p->unit)
			fprintf(out, ", layer %" PRIu64, p->unit);
		/* "loss (forward), loss" would say nothing twice. */
		if (p->layer_name && strcmp(p->layer_name, mem_phase_name(p->phase)) != 0)
			fprintf(out, p->unit ? " (%s)" : ", %s", p->layer_name);
	}
	if (p->recompute)
		fputs(", recomputing", out);
}

void report_where(FILE *out, const struct mem_where *p)
{
	text_where(out, p);
}

void report_capacity(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	text_capacity(out, j, k);
}

static void text_figures(FILE *out, const struct report_job *j, const struct mem_class *k,
			 bool explain)
{
	text_row(out, "peak allocated", NULL, k->peak_allocated);
	fputs("   (torch.cuda.max_memory_allocated)\n", out);
	text_row(out, "peak reserved", NULL, k->peak_reserved);
	/* the class whose reserved figure the ratio is measured worst on
	 * says so where the number is read: ZeRO-3, which keeps the ratio by
	 * default, and FSDP with `replay = false` (mem_replays_by_default) */
	if (!k->replayed && j->job && mem_shards_weights(j->job->sharding))
		fprintf(out, "   (torch.cuda.max_memory_reserved; allocated x %.2f: "
			"`alloc { replay = true }` replays the sharded job's streams)\n",
			mem_frag_factor(j->job));
	else
		fputs("   (torch.cuda.max_memory_reserved)\n", out);
	if (k->paged_bytes) {	/* only then, so other reports stay as they were */
		text_row(out, "paged (unified)", NULL, k->paged_bytes);
		fputs("   (paged optimizer states, outside the allocator)\n", out);
	}
	if (k->engine_bytes) {
		text_row(out, "vLLM engine", NULL, k->engine_bytes);
		fputs("   (gpu_memory_utilization of the GPU, outside the trainer's allocator)\n", out);
	}
	text_row(out, "device total", NULL, k->device_total);
	fputs("   (nvidia-smi)", out);
	text_capacity(out, j, k);
	fputs("\n    peak at: ", out);
	text_where(out, &k->peak);
	fputc('\n', out);
	text_explain(out, k->explain_peak, explain);
}

/* The run around the step (phases.h), printed only when the job asks for
 * a phase or one exceeds the step: the run peak and its phase, then one
 * row per modelled phase, allocated bytes and device total. */
static void text_run(FILE *out, const struct report_job *j, size_t i)
{
	const struct phase_class *c;
	char dev[40], label[40];

	if (!j->run || !j->run->shown || i >= j->run->nclasses)
		return;
	c = &j->run->classes[i];
	text_row(out, "run peak", NULL, c->run_alloc);
	fprintf(out, "   (device total %s) at %s", report_bytes(c->run_device, dev, sizeof dev),
		phase_name(c->run));
	if (j->result->classes[i].capacity && !c->run_fits)
		fputs(": exceeds the GPU", out);
	fputc('\n', out);
	for (int p = PHASE_STEP; p < PHASE__COUNT; p++) {
		if (!c->alloc[p])
			continue;
		snprintf(label, sizeof label, "  %s", phase_name((enum phase_id)p));
		text_row(out, label, NULL, c->alloc[p]);
		fprintf(out, "   (device total %s)\n", report_bytes(c->device[p], dev, sizeof dev));
	}
}

/* memory-model.md §7: the host side of offload, per node, with the node's
 * RAM from the GPU record (host_memory) when it is known. */
static void text_host(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	uint64_t node = offload_per_node(j, k->host_bytes), cap = j->job->host_capacity_bytes;
	uint64_t ds = offload_deepspeed_host(j);
	char b[40], c[40];

	text_row(out, "host RAM/node", NULL, node);
	fprintf(out, "   (%" PRIu64 " ranks x %s", offload_ranks_per_node(j),
		report_bytes(k->host_bytes, b, sizeof b));
	if (cap)
		fprintf(out, "; of %s: %s", report_bytes(cap, c, sizeof c), node <= cap ? "fits" : "exceeds");
	fputs(")\n", out);
	if (k->nvme_bytes) {
		text_row(out, "NVMe/node", NULL, offload_per_node(j, k->nvme_bytes));
		fprintf(out, "   (%" PRIu64 " ranks x %s)\n", offload_ranks_per_node(j),
			report_bytes(k->nvme_bytes, b, sizeof b));
	}
	if (ds) {
		text_row(out, "DeepSpeed est.", NULL, ds);
		fputs("   (host RAM per node, its x1.5 buffer factor)\n", out);
	}
}

/* A stated split: the layers of each model chunk the rank holds, in its
 * order (7 + 8: stages r and r + pp of an interleaved pp). */
static void text_stage_layers(FILE *out, const struct mem_job *job, uint32_t stage)
{
	const char *sep = "; layers ";

	if (!job || !mem_pp_stated_split(job))
		return;
	for (uint64_t c = 0; c < mem_pp_model_chunks(job); c++) {
		uint32_t r[2];
		unsigned n = mem_pp_chunk_ranks(job, c, r);

		if (r[0] == stage || (n > 1 && r[1] == stage)) {
			fprintf(out, "%s%" PRIu64, sep, mem_pp_chunk_layers(job, c));
			sep = " + ";
		}
	}
}

static void text_class(FILE *out, const struct report_job *j, const struct mem_class *k,
		       bool explain)
{
	uint32_t stages = j->job ? j->job->pp : j->pp;

	if (k->nstages > 1)
		fprintf(out, "  rank class: stages %" PRIu32 "-%" PRIu32, k->stage,
			k->stage + k->nstages - 1);
	else
		fprintf(out, "  rank class: stage %" PRIu32, k->stage);
	fprintf(out, " of %" PRIu32 ", %" PRIu64 " ranks", stages, k->ranks);
	text_stage_layers(out, j->job, k->stage);
	fputc('\n', out);
	text_components(out, j, k, explain);
	text_figures(out, j, k, explain);
	if (offload_active(j->job))
		text_host(out, j, k);
	text_run(out, j, (size_t)(k - j->result->classes));
}

void report_text(FILE *out, const struct report_job *j, bool explain)
{
	text_header(out, j);
	if (!j->analysed || !j->result) {
		fputs("  not analysed: see the errors above\n", out);
		return;
	}
	text_layout(out, j);
	for (size_t i = 0; i < j->result->nclasses; i++)
		text_class(out, j, &j->result->classes[i], explain);
}

/* ---- JSON --------------------------------------------------------------- */

/* Nesting state of the hand-written JSON (struct report_jw, report.h):
 * whether the current object or array has had a member yet decides the
 * comma; depth decides the indent. */
#define JW_MAX_DEPTH REPORT_JW_MAX_DEPTH

/* A JSON string: quote, backslash and control characters escaped; all other
 * bytes (UTF-8 included, the sources were validated on load) copied. */
static void json_string(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20)
			fprintf(out, "\\u%04X", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* Start a member (@key) or an array element (@key NULL) at the current level. */
static void jw_member(struct report_jw *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->out);
	w->first[w->depth] = false;
	fprintf(w->out, "\n%*s", (int)(2 * w->depth), "");
	if (key) {
		json_string(w->out, key);
		fputs(": ", w->out);
	}
}

static void jw_open(struct report_jw *w, const char *key, char bracket)
{
	jw_member(w, key);
	fputc(bracket, w->out);
	if (w->depth + 1 < JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

/* Empty containers stay on one line: "[]". */
static void jw_close(struct report_jw *w, char bracket)
{
	bool empty = w->first[w->depth];

	w->depth--;
	if (!empty)
		fprintf(w->out, "\n%*s", (int)(2 * w->depth), "");
	fputc(bracket, w->out);
}

static void jw_str(struct report_jw *w, const char *key, const char *s)
{
	jw_member(w, key);
	json_string(w->out, s);
}

static void jw_u64(struct report_jw *w, const char *key, uint64_t v)
{
	jw_member(w, key);
	fprintf(w->out, "%" PRIu64, v);
}

static void jw_bool(struct report_jw *w, const char *key, bool v)
{
	jw_member(w, key);
	fputs(v ? "true" : "false", w->out);
}

static void jw_null(struct report_jw *w, const char *key)
{
	jw_member(w, key);
	fputs("null", w->out);
}

/* 0 means "unknown" for line, column and capacity: JSON says null. */
static void jw_u64_or_null(struct report_jw *w, const char *key, uint64_t v)
{
	if (v)
		jw_u64(w, key, v);
	else
		jw_null(w, key);
}

/* Four decimals, and never "-0.0000", nan or inf (which JSON cannot hold). */
static void jw_fraction(struct report_jw *w, const char *key, double v)
{
	if (!isfinite(v)) {
		jw_null(w, key);
		return;
	}
	if (fabs(v) < 0.00005)
		v = 0.0;
	jw_member(w, key);
	fprintf(w->out, "%.4f", v);
}

/* A job that was not analysed has no layout: its degrees and batch are
 * null, not 0 (which a tool would read as a value). */
static void jw_known_u64(struct report_jw *w, const char *key, uint64_t v, bool known)
{
	if (known)
		jw_u64(w, key, v);
	else
		jw_null(w, key);
}

static void json_layout(struct report_jw *w, const struct report_job *j)
{
	bool k = j->analysed && j->result;

	jw_open(w, "layout", '{');
	jw_known_u64(w, "dp", j->dp, k);
	jw_known_u64(w, "tp", j->tp, k);
	jw_known_u64(w, "pp", j->pp, k);
	jw_known_u64(w, "cp", j->cp, k);
	jw_known_u64(w, "ep", j->ep, k);
	jw_known_u64(w, "vp", j->vp, k);
	if (k)
		jw_bool(w, "sequence_parallel", j->sequence_parallel);
	else
		jw_null(w, "sequence_parallel");
	jw_str(w, "sharding", j->sharding);
	jw_str(w, "recompute", j->recompute);
	jw_str(w, "precision", j->precision);
	jw_str(w, "optimizer", j->optimizer);
	jw_str(w, "finetune", j->finetune);
	jw_known_u64(w, "micro_batch", j->micro_batch, k);
	jw_known_u64(w, "seq_len", j->seq_len, k);
	jw_known_u64(w, "grad_accum", j->grad_accum, k);
	jw_close(w, '}');
}

/* Stable snake_case keys: the display names ("logits+loss", "gathered
 * params") are for people and may change; these may not. */
static const char *const json_component_keys[MEM_C__COUNT] = {
	"weights", "gradients", "optimizer", "activations", "logits", "buffers", "overhead",
};
static const char *const json_buffer_keys[MEM_B__COUNT] = {
	"gathered_params", "unsharded_grads", "buckets", "casts", "step_temps",
};

static void json_components(struct report_jw *w, const struct mem_class *k)
{
	jw_open(w, "components", '{');
	for (int c = 0; c < MEM_C__COUNT; c++)
		jw_u64(w, json_component_keys[c], k->at_peak[c]);
	jw_close(w, '}');
	/* resident across steps: what the ZeRO/FSDP formulas of memory-model.md §3 give */
	jw_open(w, "persistent", '{');
	for (int c = 0; c < MEM_C__COUNT; c++)
		jw_u64(w, json_component_keys[c], k->persistent[c]);
	jw_close(w, '}');
	jw_open(w, "buffers_detail", '{');
	for (int b = 0; b < MEM_B__COUNT; b++)
		jw_u64(w, json_buffer_keys[b], k->buffers_at_peak[b]);
	jw_close(w, '}');
	jw_open(w, "overhead_detail", '{');
	jw_u64(w, "cuda_context", k->overhead_context);
	jw_u64(w, "cublas", k->overhead_cublas);
	jw_u64(w, "nccl", k->overhead_nccl);
	jw_u64(w, "fragmentation", k->overhead_frag);
	jw_close(w, '}');
}

/* Stable keys of enum mem_phase, for "phase_peaks" (JSON and HTML). */
const char *const report_phase_keys[MEM_PHASE__COUNT] = { "forward", "loss", "backward", "optimizer" };

/* The highest allocated bytes of each phase of the step; null for a phase
 * this class never runs (the loss on a pipeline's first stage). */
static void json_phase_peaks(struct report_jw *w, const struct mem_class *k)
{
	jw_open(w, "phase_peaks", '{');
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		jw_u64_or_null(w, report_phase_keys[p], k->phase_peak[p]);
	jw_close(w, '}');
}

/* What forward keeps for backward, whatever the phase of the peak: at an
 * optimizer-step peak "activations" is 0 although these existed. */
static void json_stored(struct report_jw *w, const struct mem_class *k)
{
	jw_open(w, "stored_activations", '{');
	jw_u64(w, "per_micro_batch_bytes", k->stored_act);
	jw_u64(w, "logits_per_micro_batch_bytes", k->stored_logits);
	jw_u64(w, "chunks_in_flight", k->chunks_in_flight);
	jw_u64(w, "in_flight_bytes", k->stored_act_in_flight);
	jw_u64(w, "logits_in_flight_bytes", k->stored_logits_in_flight);
	jw_close(w, '}');
}

/* "run": { "peak_allocated_bytes", "device_total_bytes", "phase", "fits",
 * "phases": { name: { "allocated_bytes", "device_total_bytes" } } }, only
 * where the text report prints the run. */
static void json_run(struct report_jw *w, const struct report_job *j, size_t i)
{
	static const char *const keys[PHASE__COUNT] = { "step", "loading", "prepare_kbit", "eval", "save",
							 "ref_forward", "generate", "update" };
	const struct phase_class *c;

	if (!j->run || !j->run->shown || i >= j->run->nclasses)
		return;
	c = &j->run->classes[i];
	jw_open(w, "run", '{');
	jw_u64(w, "peak_allocated_bytes", c->run_alloc);
	jw_u64(w, "device_total_bytes", c->run_device);
	jw_str(w, "phase", keys[c->run]);
	jw_bool(w, "fits", c->run_fits);
	jw_open(w, "phases", '{');
	for (int p = PHASE_STEP; p < PHASE__COUNT; p++) {
		if (!c->alloc[p])
			continue;
		jw_open(w, keys[p], '{');
		jw_u64(w, "allocated_bytes", c->alloc[p]);
		jw_u64(w, "device_total_bytes", c->device[p]);
		jw_close(w, '}');
	}
	jw_close(w, '}');
	jw_close(w, '}');
}

/* A stated split only (text_stage_layers), so every other document stays
 * as it was: the layers of each model chunk the class's first rank holds. */
static void json_stage_layers(struct report_jw *w, const struct mem_job *job, uint32_t stage)
{
	if (!job || !mem_pp_stated_split(job))
		return;
	jw_open(w, "stage_layers", '[');
	for (uint64_t c = 0; c < mem_pp_model_chunks(job); c++) {
		uint32_t r[2];
		unsigned n = mem_pp_chunk_ranks(job, c, r);

		if (r[0] == stage || (n > 1 && r[1] == stage))
			jw_u64(w, NULL, mem_pp_chunk_layers(job, c));
	}
	jw_close(w, ']');
}

/* Only for a job that offloads, so every other document stays as it was. */
static void json_host(struct report_jw *w, const struct report_job *j, const struct mem_class *k)
{
	uint64_t cap = j->job->host_capacity_bytes, node = offload_per_node(j, k->host_bytes);

	jw_open(w, "offload", '{');
	jw_u64(w, "ranks_per_node", offload_ranks_per_node(j));
	jw_u64(w, "host_bytes_per_rank", k->host_bytes);
	jw_u64(w, "host_bytes_per_node", node);
	jw_u64(w, "nvme_bytes_per_rank", k->nvme_bytes);
	jw_u64(w, "nvme_bytes_per_node", offload_per_node(j, k->nvme_bytes));
	jw_u64_or_null(w, "host_capacity_bytes", cap);
	if (cap)
		jw_bool(w, "host_fits", node <= cap);
	else
		jw_null(w, "host_fits");
	jw_u64_or_null(w, "deepspeed_host_estimate_bytes", offload_deepspeed_host(j));
	jw_close(w, '}');
}

static void json_class(struct report_jw *w, const struct report_job *j, const struct mem_class *k)
{
	jw_open(w, NULL, '{');
	jw_u64(w, "stage", k->stage);
	jw_u64(w, "stages", k->nstages);
	jw_u64(w, "pipeline_stages", j->job ? j->job->pp : j->pp);
	jw_u64(w, "ranks", k->ranks);
	json_stage_layers(w, j->job, k->stage);
	json_components(w, k);
	jw_u64(w, "peak_allocated_bytes", k->peak_allocated);
	jw_u64(w, "peak_reserved_bytes", k->peak_reserved);
	if (k->paged_bytes)
		jw_u64(w, "paged_unified_bytes", k->paged_bytes);
	jw_u64(w, "device_total_bytes", k->device_total);
	json_phase_peaks(w, k);
	json_stored(w, k);
	jw_str(w, "peak_phase", mem_phase_name(k->peak.phase));
	jw_u64_or_null(w, "peak_layer", k->peak.unit);
	jw_str(w, "peak_layer_name", k->peak.layer_name);
	jw_u64_or_null(w, "capacity_bytes", k->capacity);
	jw_bool(w, "fits", k->fits);
	jw_bool(w, "fits_headroom", k->fits_headroom);
	if (k->capacity)
		jw_fraction(w, "headroom", k->headroom);
	else
		jw_null(w, "headroom");
	if (offload_active(j->job))
		json_host(w, j, k);
	json_run(w, j, (size_t)(k - j->result->classes));
	jw_close(w, '}');
}

static void json_job(struct report_jw *w, const struct report_job *j)
{
	jw_open(w, NULL, '{');
	jw_str(w, "name", j->name);
	jw_u64_or_null(w, "line", j->line);
	jw_str(w, "model", j->model);
	jw_known_u64(w, "params_total", j->params_total, j->analysed && j->result);
	jw_known_u64(w, "params_trainable", j->params_trainable, j->analysed && j->result);
	jw_open(w, "cluster", '{');
	jw_str(w, "gpu", j->gpu);
	jw_u64_or_null(w, "gpus", j->gpus);	/* a cluster that could not be counted */
	jw_u64_or_null(w, "nodes", j->nodes);
	jw_close(w, '}');
	json_layout(w, j);
	jw_bool(w, "analysed", j->analysed && j->result);
	jw_open(w, "rank_classes", '[');
	for (size_t i = 0; j->analysed && j->result && i < j->result->nclasses; i++)
		json_class(w, j, &j->result->classes[i]);
	jw_close(w, ']');
	jw_close(w, '}');
}

/* The same object as in `check --format json` (analyzer/out/diag_json.c),
 * so one schema describes both. */
static void json_diag(struct report_jw *w, const struct diag_engine *de, const struct diag *d)
{
	jw_member(w, NULL);
	diag_out_json_record(w->out, w->depth, de, d);
}

void report_json_begin(FILE *out)
{
	fputs("{\n  \"schema\": \"memc-report/1\",\n  \"memc_report_version\": 1,\n  \"files\": [", out);
}

void report_json_file_begin(struct report_jw *w, FILE *out, const char *file, bool first_file)
{
	memset(w, 0, sizeof *w);
	w->out = out;
	w->depth = 2;
	w->first[2] = first_file;
	jw_open(w, NULL, '{');
	jw_str(w, "file", file);
	jw_open(w, "jobs", '[');
}

void report_json_job(struct report_jw *w, const struct report_job *j)
{
	json_job(w, j);
}

void report_json_file_end(struct report_jw *w, const struct diag_engine *de)
{
	/* The engine belongs to this file's compilation: every record in it,
	 * imported files' included, is this file's business. */
	jw_close(w, ']');
	jw_open(w, "diagnostics", '[');
	for (const struct diag *d = de ? diag_first(de) : NULL; d; d = d->next)
		json_diag(w, de, d);
	jw_close(w, ']');
	jw_close(w, '}');
}

void report_json_file(FILE *out, const char *file, const struct report_job *jobs, size_t njobs,
		      const struct diag_engine *de, bool first_file)
{
	struct report_jw w;

	report_json_file_begin(&w, out, file, first_file);
	for (size_t i = 0; i < njobs; i++)
		report_json_job(&w, &jobs[i]);
	report_json_file_end(&w, de);
}

void report_json_end(FILE *out)
{
	fputs("\n  ]\n}\n", out);
}
