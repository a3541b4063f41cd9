/* SPDX-License-Identifier: MIT */
/*
 * report_html.c - `memc report --format html`: one self-contained page
 * (inline CSS and SVG, no script, nothing fetched) that a person opens in
 * a browser. Per rank class: a stacked chart of the step, the component
 * table, the capacity line and --explain's formulas in <details>.
 *
 * The chart's geometry is written with fixed decimals from the exact byte
 * counts, and every shape carries its bytes (data-bytes), so that a test
 * can check the picture against the numbers. No date, no locale: the page
 * is byte-for-byte reproducible like the other formats.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/out/report.h"

/* Chart layout (px): the plot's box inside the SVG, the legend to its right. */
#define SVG_W 760
#define SVG_H 330
#define PLOT_X 80
#define PLOT_Y 30
#define PLOT_W 500
#define PLOT_H 240
#define LEGEND_X 600
#define NCOLS_MAX (2 * MEM_PHASE__COUNT)

static const char *const component_class[MEM_C__COUNT] = {
	"weights", "gradients", "optimizer", "activations", "logits", "buffers", "overhead",
};

/* Text into HTML: the five characters that could end an element or an
 * attribute are escaped; everything else is UTF-8 validated at load. */
static void html_text(FILE *out, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*p, out);
		}
	}
}

/* What a report.c printer writes, escaped: the text report's wording is
 * kept in one place. */
static void html_where(FILE *out, const struct mem_where *w)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	if (!m)
		return;
	report_where(m, w);
	if (fclose(m) == 0)
		html_text(out, buf);
	free(buf);
}

static void html_capacity(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	if (!m)
		return;
	report_capacity(m, j, k);
	if (fclose(m) == 0)
		html_text(out, buf);
	free(buf);
}

static const char style[] =
	"body{font-family:sans-serif;margin:2em;color:#222;background:#fff}"
	"h1{font-size:1.4em}h2{font-size:1.2em;margin-top:2em}h3{font-size:1em}"
	"table{border-collapse:collapse;margin:.5em 0}"
	"td,th{padding:.15em .8em;border-bottom:1px solid #ddd;text-align:left}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"p.fits{color:#1a7f37}p.exceeds{color:#c62828;font-weight:bold}"
	"code{font-size:.9em}details{margin:.5em 0 1.5em}"
	"svg text{font-size:11px;fill:#333}svg text.group{font-weight:bold}"
	".c-weights{fill:#4e79a7}.c-gradients{fill:#f28e2b}.c-optimizer{fill:#e15759}"
	".c-activations{fill:#76b7b2}.c-logits{fill:#59a14f}.c-buffers{fill:#edc948}"
	".c-overhead{fill:#bab0ac}.axis{stroke:#333}.grid{stroke:#ddd}"
	".capacity{stroke:#c62828;stroke-width:2;stroke-dasharray:6 3}"
	".peak-mark{fill:#c62828}\n";

void report_html_begin(FILE *out)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>memc report</title>\n<style>\n", out);
	fputs(style, out);
	fputs("</style>\n</head>\n<body>\n<h1>memc report</h1>\n", out);
}

void report_html_end(FILE *out)
{
	fputs("</body>\n</html>\n", out);
}

/* ---- the chart ------------------------------------------------------- */

/* One column of the chart: the highest instant of a phase of one kind of
 * micro-batch (mem_class.series). */
struct html_col {
	const struct mem_phase_point *pt;
	unsigned micro_batch;	/* 1, or 2 for "2 and later" */
	bool peak;		/* the step's peak: overhead stacked on top */
};

/* Forward, loss and backward of the first micro-batch, then of a later one
 * (accumulating gradients), then the optimizer step. */
static size_t html_columns(const struct mem_class *k, struct html_col cols[NCOLS_MAX])
{
	static const enum mem_phase order[3] = { MEM_PHASE_FORWARD, MEM_PHASE_LOSS,
						 MEM_PHASE_BACKWARD };
	size_t n = 0;
	bool marked = false;

	for (int a = 0; a < 2; a++)
		for (int i = 0; i < 3; i++)
			if (k->series[a][order[i]].allocated)
				cols[n++] = (struct html_col){ &k->series[a][order[i]],
							       (unsigned)a + 1, false };
	for (int a = 0; a < 2; a++)
		if (k->series[a][MEM_PHASE_OPTIMIZER].allocated)
			cols[n++] = (struct html_col){ &k->series[a][MEM_PHASE_OPTIMIZER],
						       (unsigned)a + 1, false };
	/* the first column that reaches the step's peak, as consider() keeps it */
	for (size_t i = 0; i < n && !marked; i++)
		if (cols[i].pt->allocated == k->peak_allocated &&
		    cols[i].pt->where.phase == k->peak.phase)
			cols[i].peak = marked = true;
	return n;
}

/* Bytes to px on the chart's scale (@top bytes fill PLOT_H). */
static double px(uint64_t bytes, uint64_t top)
{
	return top ? (double)bytes * PLOT_H / (double)top : 0.0;
}

static void svg_rect(FILE *out, const char *cls, double x, double y, double w, double h,
		     uint64_t bytes, const char *what)
{
	char b[40];

	fprintf(out, "<rect class=\"c-%s\" x=\"%.3f\" y=\"%.3f\" width=\"%.3f\" height=\"%.3f\""
		" data-bytes=\"%" PRIu64 "\"><title>", cls, x, y, w, h, bytes);
	html_text(out, what);
	fprintf(out, " %s</title></rect>\n", report_bytes(bytes, b, sizeof b));
}

static void svg_label(FILE *out, const struct html_col *c, double cx)
{
	fprintf(out, "<text x=\"%.3f\" y=\"%d\" text-anchor=\"middle\">", cx, PLOT_Y + PLOT_H + 16);
	html_text(out, c->pt->where.phase == MEM_PHASE_OPTIMIZER ? "optimizer" :
		       mem_phase_name(c->pt->where.phase));
	fputs("</text>\n", out);
}

/* "micro-batch 1" under the first micro-batch's columns, "micro-batch 2+"
 * under a later one's (accumulating gradients): only when both are drawn. */
static void svg_groups(FILE *out, const struct html_col *cols, size_t n, double slot)
{
	for (unsigned mb = 1; mb <= 2; mb++) {
		size_t first = n, last = 0;

		for (size_t i = 0; i < n; i++)
			if (cols[i].micro_batch == mb && cols[i].pt->where.phase != MEM_PHASE_OPTIMIZER) {
				first = first < i ? first : i;
				last = i;
			}
		if (first == n)
			continue;
		fprintf(out, "<text class=\"group\" x=\"%.3f\" y=\"%d\" text-anchor=\"middle\">"
			"micro-batch %s</text>\n", PLOT_X + slot * (double)(first + last + 1) / 2.0,
			PLOT_Y + PLOT_H + 32, mb == 1 ? "1" : "2+");
	}
}

/* One stacked column, weights at the bottom; the peak's column also
 * stacks the overhead, so that its top is the device total. */
static void svg_column(FILE *out, const struct mem_class *k, const struct html_col *c,
		       double x, double w, uint64_t top)
{
	double y = PLOT_Y + PLOT_H;
	uint64_t total = c->peak ? k->device_total : c->pt->allocated;

	fprintf(out, "<g class=\"col\" data-phase=\"%s\" data-micro-batch=\"%u\" data-allocated=\"%"
		PRIu64 "\" data-total=\"%" PRIu64 "\"%s>\n", report_phase_keys[c->pt->where.phase],
		c->micro_batch, c->pt->allocated, total, c->peak ? " data-peak=\"true\"" : "");
	for (int i = 0; i < MEM_C__COUNT; i++) {
		uint64_t b = i == MEM_C_OVERHEAD ? (c->peak ? k->at_peak[i] : 0) : c->pt->c[i];
		double h = px(b, top);

		if (!b)
			continue;
		y -= h;
		svg_rect(out, component_class[i], x, y, w, h, b, mem_component_name((enum mem_component)i));
	}
	fputs("</g>\n", out);
}

/* The peak's marker: a triangle over its column and where it is. */
static void svg_peak(FILE *out, const struct mem_class *k, double cx, uint64_t top)
{
	double y = PLOT_Y + PLOT_H - px(k->device_total, top);

	fprintf(out, "<g class=\"peak\"><path class=\"peak-mark\" d=\"M%.3f %.3fl-5 -8h10z\"/>\n",
		cx, y - 2);
	fprintf(out, "<text x=\"%.3f\" y=\"%.3f\" text-anchor=\"middle\">peak: ", cx, y - 14);
	html_where(out, &k->peak);
	fputs("</text></g>\n", out);
}

static void svg_axis(FILE *out, uint64_t top)
{
	char b[40];

	fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", PLOT_X,
		PLOT_Y, PLOT_X, PLOT_Y + PLOT_H);
	for (int q = 0; q <= 4; q++) {
		uint64_t v = top / 4 * (uint64_t)q + (q == 4 ? top % 4 : 0);
		double y = PLOT_Y + PLOT_H - px(v, top);

		fprintf(out, "<line class=\"grid\" x1=\"%d\" y1=\"%.3f\" x2=\"%d\" y2=\"%.3f\"/>\n",
			PLOT_X, y, PLOT_X + PLOT_W, y);
		fprintf(out, "<text x=\"%d\" y=\"%.3f\" text-anchor=\"end\">%s</text>\n", PLOT_X - 6,
			y + 4, report_bytes(v, b, sizeof b));
	}
}

static void svg_capacity(FILE *out, const struct mem_class *k, uint64_t top)
{
	char b[40];
	double y;

	if (!k->capacity)
		return;
	y = PLOT_Y + PLOT_H - px(k->capacity, top);
	fprintf(out, "<line class=\"capacity\" x1=\"%d\" y1=\"%.3f\" x2=\"%d\" y2=\"%.3f\" "
		"data-bytes=\"%" PRIu64 "\"/>\n", PLOT_X, y, PLOT_X + PLOT_W, y, k->capacity);
	fprintf(out, "<text x=\"%d\" y=\"%.3f\" text-anchor=\"end\">capacity %s</text>\n",
		PLOT_X + PLOT_W, y - 4, report_bytes(k->capacity, b, sizeof b));
}

static void svg_legend(FILE *out)
{
	for (int i = 0; i < MEM_C__COUNT; i++) {
		int y = PLOT_Y + 18 * i;

		fprintf(out, "<rect class=\"c-%s\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\"/>"
			"<text x=\"%d\" y=\"%d\">", component_class[i], LEGEND_X, y, LEGEND_X + 18,
			y + 10);
		html_text(out, mem_component_name((enum mem_component)i));
		fputs("</text>\n", out);
	}
}

/* The chart's scale: the device total or the capacity, whichever is
 * higher, so that the capacity line is always inside the plot. */
static void html_chart(FILE *out, const struct mem_class *k)
{
	struct html_col cols[NCOLS_MAX];
	size_t n = html_columns(k, cols);
	uint64_t top = k->device_total > k->capacity ? k->device_total : k->capacity;
	double slot = n ? (double)PLOT_W / (double)n : 0.0;
	bool two = false;

	for (size_t i = 0; i < n; i++)
		two |= cols[i].micro_batch > 1;
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\" data-top-bytes=\"%" PRIu64 "\" data-plot-y=\"%d\" "
		"data-plot-height=\"%d\">\n", SVG_W, SVG_H, SVG_W, SVG_H, top, PLOT_Y, PLOT_H);
	svg_axis(out, top);
	for (size_t i = 0; i < n; i++) {
		double x = PLOT_X + slot * (double)i + slot * 0.15;

		svg_column(out, k, &cols[i], x, slot * 0.7, top);
		svg_label(out, &cols[i], x + slot * 0.35);
		if (cols[i].peak)
			svg_peak(out, k, x + slot * 0.35, top);
	}
	if (two)
		svg_groups(out, cols, n, slot);
	svg_capacity(out, k, top);
	svg_legend(out);
	fputs("</svg>\n", out);
}

/* ---- the tables ------------------------------------------------------- */

static void html_row(FILE *out, const char *name, const char *dtype, uint64_t bytes,
		     const char *cls)
{
	char b[40];

	fputs("<tr>", out);
	if (cls)
		fprintf(out, "<td><svg width=\"10\" height=\"10\"><rect class=\"c-%s\" width=\"10\" "
			"height=\"10\"/></svg> ", cls);
	else
		fputs("<td>", out);
	html_text(out, name);
	fputs("</td><td>", out);
	html_text(out, dtype);
	fprintf(out, "</td><td class=\"n\">%s</td><td class=\"n\">%" PRIu64 "</td></tr>\n",
		report_bytes(bytes, b, sizeof b), bytes);
}

static void html_table(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	const char *dtypes[MEM_C__COUNT] = { j->weights_dtype, j->grads_dtype, j->state_dtype,
					     j->act_dtype, NULL, NULL, NULL };

	fputs("<table class=\"components\">\n<tr><th>at the peak</th><th>dtype</th>"
	      "<th>GiB</th><th>bytes</th></tr>\n", out);
	for (int c = 0; c < MEM_C__COUNT; c++)
		html_row(out, mem_component_name((enum mem_component)c), dtypes[c], k->at_peak[c],
			 component_class[c]);
	html_row(out, "peak allocated (torch.cuda.max_memory_allocated)", NULL, k->peak_allocated,
		 NULL);
	html_row(out, "peak reserved (torch.cuda.max_memory_reserved)", NULL, k->peak_reserved,
		 NULL);
	html_row(out, "device total (nvidia-smi)", NULL, k->device_total, NULL);
	/* present even where the peak is past them (the optimizer step) */
	html_row(out, "stored activations, in flight", NULL, k->stored_act_in_flight, NULL);
	fputs("</table>\n", out);
}

static void html_explain(FILE *out, const struct mem_class *k)
{
	fputs("<details><summary>Formulas (--explain)</summary>\n<ul>\n", out);
	for (int c = 0; c < MEM_C__COUNT; c++) {
		if (!k->explain[c][0])
			continue;
		fputs("<li><code>", out);
		html_text(out, k->explain[c]);
		fputs("</code></li>\n", out);
	}
	if (k->explain_peak[0]) {
		fputs("<li><code>", out);
		html_text(out, k->explain_peak);
		fputs("</code></li>\n", out);
	}
	fputs("</ul>\n</details>\n", out);
}

static void html_class(FILE *out, const struct report_job *j, const struct mem_class *k)
{
	uint32_t stages = j->job ? j->job->pp : j->pp;
	char b[40];

	fprintf(out, "<section class=\"rank-class\" data-stage=\"%" PRIu32 "\">\n<h3>rank class: ",
		k->stage);
	if (k->nstages > 1)
		fprintf(out, "stages %" PRIu32 "-%" PRIu32, k->stage, k->stage + k->nstages - 1);
	else
		fprintf(out, "stage %" PRIu32, k->stage);
	fprintf(out, " of %" PRIu32 ", %" PRIu64 " ranks</h3>\n", stages, k->ranks);
	html_chart(out, k);
	fprintf(out, "<p class=\"capacity %s\">device total %s", k->fits ? "fits" : "exceeds",
		report_bytes(k->device_total, b, sizeof b));
	html_capacity(out, j, k);
	fputs("; peak at ", out);
	html_where(out, &k->peak);
	fputs("</p>\n", out);
	html_table(out, j, k);
	html_explain(out, k);
	fputs("</section>\n", out);
}

static void html_header(FILE *out, const struct report_job *j)
{
	fputs("<section class=\"job\">\n<h2>", out);
	html_text(out, j->name ? j->name : "?");
	fputs(": ", out);
	html_text(out, j->model ? j->model : "?");
	fputs("</h2>\n<p class=\"where\">", out);
	html_text(out, j->file);
	fprintf(out, ":%u", j->line);
	if (j->gpus) {
		fprintf(out, "; %" PRIu64 " x ", j->gpus);
		html_text(out, j->gpu);
	}
	fputs("</p>\n", out);
}

static void html_layout(FILE *out, const struct report_job *j)
{
	fprintf(out, "<p class=\"layout\">dp %" PRIu32 ", tp %" PRIu32 ", pp %" PRIu32 ", cp %" PRIu32
		", ep %" PRIu32 "; ", j->dp, j->tp, j->pp, j->cp, j->ep);
	html_text(out, j->sharding);
	fputs("; ", out);
	html_text(out, j->precision);
	fputs("; ", out);
	html_text(out, j->optimizer);
	fprintf(out, "; %s recompute; micro_batch %" PRIu64 ", seq_len %" PRIu64 ", grad_accum %"
		PRIu64 "</p>\n", j->recompute ? j->recompute : "no", j->micro_batch, j->seq_len,
		j->grad_accum);
}

void report_html_job(FILE *out, const struct report_job *j)
{
	html_header(out, j);
	if (!j->analysed || !j->result) {
		fputs("<p class=\"not-analysed\">not analysed: see the errors memc printed</p>\n"
		      "</section>\n", out);
		return;
	}
	html_layout(out, j);
	for (size_t i = 0; i < j->result->nclasses; i++)
		html_class(out, j, &j->result->classes[i]);
	fputs("</section>\n", out);
}
