/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - the per-device report (analyzer/out/report.c): byte and count
 * formatting, the text table (fits, exceeds, not analysed, --explain, several
 * pipeline stages) and the JSON document (exact integers, escaping, nulls,
 * diagnostics with notes) and the HTML page (escaping, the chart's series,
 * a failed job). Output goes to open_memstream buffers.
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/memory/memory.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/source.h"

#define GIB (UINT64_C(1) << 30)

/* A tiny model: embedding, 4 body repeats of one block, a loss layer. */
struct tiny {
	struct mem_param emb, blk[2];
	struct mem_layer pre, body, loss;
	struct mem_block blocks[3];
	struct mem_job job;
	struct mem_result res;
	struct report_job rj;
};

static void set_param(struct mem_param *p, const char *name, uint64_t numel)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->numel = numel;
	p->weight_bytes = 2 * numel;
	p->grad_bytes = 2 * numel;
	p->master_bytes = 4 * numel;
	p->state_bytes = 8 * numel;
	p->trainable = true;
}

static void tiny_layers(struct tiny *t)
{
	set_param(&t->emb, "embed", 32000 * 1024);
	set_param(&t->blk[0], "attn", 4 * 1024 * 1024);
	set_param(&t->blk[1], "mlp", 12 * 1024 * 1024);
	t->pre = (struct mem_layer){ .name = "embedding", .params = &t->emb, .nparams = 1 };
	t->body = (struct mem_layer){ .name = "block", .params = t->blk, .nparams = 2,
				      .saves_bytes = 64 << 20, .input_bytes = 8 << 20,
				      .temp_fwd_bytes = 16 << 20, .temp_bwd_bytes = 32 << 20 };
	t->loss = (struct mem_layer){ .name = "loss", .saves_bytes = 250 << 20,
				      .temp_fwd_bytes = 250 << 20, .loss_region = true };
	t->blocks[0] = (struct mem_block){ &t->pre, 1, 1, false };
	t->blocks[1] = (struct mem_block){ &t->body, 1, 4, true };
	t->blocks[2] = (struct mem_block){ &t->loss, 1, 1, false };
}

static void tiny_report_job(struct tiny *t)
{
	t->rj = (struct report_job){
		.name = "sft", .file = "tiny.mem", .line = 7, .model = "tiny_llama",
		.gpu = "A100_80GB", .gpus = 8, .nodes = 1, .precision = "bf16_mixed",
		.optimizer = "adamw", .sharding = "DDP", .recompute = "none", .finetune = "full",
		.dp = 8, .tp = 1, .pp = 1, .cp = 1, .ep = 1, .vp = 1, .micro_batch = 4,
		.seq_len = 4096, .grad_accum = 1, .weights_dtype = "bf16", .grads_dtype = "bf16",
		.state_dtype = "fp32", .act_dtype = "bf16", .job = &t->job, .result = &t->res,
	};
}

/* Analyse with @capacity bytes of device memory and @pp stages. */
static struct tiny *tiny_new(uint64_t capacity, uint32_t pp)
{
	struct tiny *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	tiny_layers(t);
	t->job = (struct mem_job){ .blocks = t->blocks, .nblocks = 3, .dp = 8, .tp = 1,
				   .pp = pp, .cp = 1, .ep = 1, .vp = 1, .micro_batches = 1,
				   .sharding = MEM_SHARD_DDP, .frag_factor = 1.0,
				   .cuda_context_bytes = 500 << 20, .nccl_bytes_per_comm = 1 << 20,
				   .capacity_bytes = capacity };
	assert_int_equal(mem_analyze(&t->job, &t->res), MEM_OK);
	tiny_report_job(t);
	t->rj.pp = pp;
	t->rj.params_total = t->res.params_total;
	t->rj.params_trainable = t->res.params_trainable;
	t->rj.analysed = true;
	return t;
}

static void tiny_free(struct tiny *t)
{
	mem_result_free(&t->res);
	free(t);
}

/* Everything @print writes, as a NUL-terminated heap string. */
static char *capture_text(const struct report_job *j, bool explain)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_text(f, j, explain);
	fclose(f);
	return buf;
}

static char *capture_json(const struct report_job *jobs, size_t n, const struct diag_engine *de)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_json_begin(f);
	report_json_file(f, "tiny.mem", jobs, n, de, true);
	report_json_file(f, "other.mem", NULL, 0, NULL, false);
	report_json_end(f);
	fclose(f);
	return buf;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void bytes_format(void **state)
{
	char b[40];

	(void)state;
	assert_string_equal(report_bytes(0, b, sizeof(b)), "0.00 GiB");
	assert_string_equal(report_bytes(GIB, b, sizeof(b)), "1.00 GiB");
	assert_string_equal(report_bytes(80 * GIB, b, sizeof(b)), "80.00 GiB");
	/* 3.125 GiB rounds half up, a byte less rounds down. */
	assert_string_equal(report_bytes(3 * GIB + GIB / 8, b, sizeof(b)), "3.13 GiB");
	assert_string_equal(report_bytes(3 * GIB + GIB / 8 - 1, b, sizeof(b)), "3.12 GiB");
	assert_string_equal(report_bytes(GIB / 250, b, sizeof(b)), "0.00 GiB");
	assert_string_equal(report_bytes(2 * GIB - 1, b, sizeof(b)), "2.00 GiB");
	assert_string_equal(report_bytes(UINT64_MAX, b, sizeof(b)), "17179869184.00 GiB");
}

static void text_fits(void **state)
{
	struct tiny *t = tiny_new(80 * GIB, 1);
	char *s;

	(void)state;
	t->rj.params_total = 13015864320u;
	t->rj.params_trainable = 13015864320u;
	s = capture_text(&t->rj, false);
	assert_contains(s, "sft: tiny_llama (13,015,864,320 params, 13,015,864,320 trainable) "
			   "on 8 x A100_80GB\n");
	assert_contains(s, "  layout: dp 8, tp 1, pp 1, cp 1, ep 1; DDP; bf16_mixed; adamw; "
			   "no recompute; micro_batch 4, seq_len 4096, grad_accum 1\n");
	assert_contains(s, "  rank class: stage 0 of 1, 8 ranks\n");
	assert_contains(s, "per device\n");
	assert_contains(s, "    weights        bf16   ");
	assert_contains(s, "    optimizer      fp32   ");
	assert_contains(s, "    logits+loss    ");
	assert_contains(s, "(torch.cuda.max_memory_allocated)\n");
	assert_contains(s, "(nvidia-smi) of 80.00 GiB: fits, ");
	assert_contains(s, "% headroom\n");
	/* Zero parts are left out; a tiny one does not read as zero. */
	assert_contains(s, "(CUDA context 0.49 GiB, NCCL < 0.01 GiB)\n");
	assert_contains(s, "    peak at: ");
	assert_null(strstr(s, "exceeds"));
	/* Without --explain no formula lines. */
	assert_null(strstr(s, "weights = "));
	free(s);
	tiny_free(t);
}

static void text_exceeds(void **state)
{
	struct tiny *t = tiny_new(GIB, 1);
	char want[80], b[40];
	char *s;

	(void)state;
	assert_false(t->res.classes[0].fits);
	s = capture_text(&t->rj, false);
	snprintf(want, sizeof(want), "of 1.00 GiB: exceeds by %s\n",
		 report_bytes(t->res.classes[0].device_total - GIB, b, sizeof(b)));
	assert_contains(s, want);
	assert_null(strstr(s, "fits"));
	free(s);
	tiny_free(t);
}

static void text_not_analysed(void **state)
{
	struct report_job j = { .name = "broken", .model = "m", .gpu = "H100", .gpus = 16,
				.nodes = 2 };
	char *s;

	(void)state;
	s = capture_text(&j, true);
	assert_string_equal(s, "broken: m on 16 x H100 (2 nodes)\n"
			       "  not analysed: see the errors above\n");
	free(s);
}

static void text_explain_and_stages(void **state)
{
	struct tiny *t = tiny_new(0, 2);
	char *s;

	(void)state;
	t->rj.sequence_parallel = true;
	t->rj.recompute = "full";
	t->rj.finetune = "lora r=16";
	s = capture_text(&t->rj, true);
	assert_contains(s, "pp 2, cp 1, ep 1, sequence parallel; DDP; bf16_mixed; adamw; "
			   "lora r=16; full recompute;");
	assert_contains(s, "(nvidia-smi); capacity unknown\n");
	assert_contains(s, t->res.classes[0].explain[MEM_C_WEIGHTS]);
	assert_contains(s, t->res.classes[0].explain_peak);
	if (t->res.nclasses == 2) {
		assert_contains(s, "  rank class: stage 0 of 2, 8 ranks\n");
		assert_contains(s, "  rank class: stage 1 of 2, 8 ranks\n");
	} else {
		assert_contains(s, "  rank class: stages 0-1 of 2, 16 ranks\n");
	}
	free(s);
	tiny_free(t);
}

static void json_job_fields(void **state)
{
	struct tiny *t = tiny_new(GIB, 1);
	const struct mem_class *k = &t->res.classes[0];
	char want[96];
	char *s;

	(void)state;
	t->rj.name = "say \"hi\"\\\tnow\x01";
	t->rj.params_total = 13015864320u;
	t->rj.params_trainable = 6553600u;
	s = capture_json(&t->rj, 1, NULL);
	assert_true(strncmp(s, "{\n  \"schema\": \"memc-report/1\",\n  \"memc_report_version\": 1,\n"
			    "  \"files\": [", 71) == 0);
	assert_contains(s, "\"name\": \"say \\\"hi\\\"\\\\\\tnow\\u0001\"");
	assert_contains(s, "\"params_total\": 13015864320,");
	assert_contains(s, "\"params_trainable\": 6553600,");
	assert_contains(s, "\"cluster\": {\n            \"gpu\": \"A100_80GB\",");
	assert_contains(s, "\"sequence_parallel\": false,");
	assert_contains(s, "\"analysed\": true,");
	snprintf(want, sizeof(want), "\"device_total_bytes\": %llu,",
		 (unsigned long long)k->device_total);
	assert_contains(s, want);
	snprintf(want, sizeof(want), "\"weights\": %llu,",
		 (unsigned long long)k->at_peak[MEM_C_WEIGHTS]);
	assert_contains(s, want);
	snprintf(want, sizeof(want), "\"phase_peaks\": {\n                \"forward\": %llu,",
		 (unsigned long long)k->phase_peak[MEM_PHASE_FORWARD]);
	assert_contains(s, want);
	snprintf(want, sizeof(want), "\"per_micro_batch_bytes\": %llu,",
		 (unsigned long long)k->stored_act);
	assert_contains(s, want);
	assert_contains(s, "\"capacity_bytes\": 1073741824,");
	assert_contains(s, "\"fits\": false,");
	assert_contains(s, "\"headroom\": -");
	assert_contains(s, "\"diagnostics\": []");
	assert_contains(s, "{\n      \"file\": \"other.mem\",\n      \"jobs\": [],");
	assert_true(strcmp(s + strlen(s) - 7, "\n  ]\n}\n") == 0);
	free(s);
	tiny_free(t);
}

static void json_not_analysed_nulls(void **state)
{
	struct report_job j = { .name = "broken", .gpus = 1, .nodes = 1 };
	char *s;

	(void)state;
	s = capture_json(&j, 1, NULL);
	assert_contains(s, "\"model\": null,");
	assert_contains(s, "\"line\": null,");
	/* no made-up 0 for what a failed job never had */
	assert_contains(s, "\"params_total\": null,");
	assert_contains(s, "\"dp\": null,");
	assert_contains(s, "\"sequence_parallel\": null,");
	assert_contains(s, "\"grad_accum\": null\n");
	assert_contains(s, "\"analysed\": false,\n          \"rank_classes\": []");
	free(s);
}

static void json_diagnostics(void **state)
{
	struct arena arena = { 0 };
	struct src_table *t = src_table_new(&arena);
	struct diag_engine *de = diag_new(&arena, t, NULL);
	const char *text = "gpu X {\n  memory = 80 GiB + 3\n}\n";
	struct src_file *f = src_add_string(t, de, "a\"b.mem", text, strlen(text));
	uint32_t at = (uint32_t)(strstr(text, "80") - text);
	struct diag *d;
	char *s;

	(void)state;
	assert_non_null(f);
	d = diag_error(de, DIAG_UNIT_MISMATCH, (struct loc){ f->id, at, at + 10 },
		       "cannot add %s and %s", "bytes", "count");
	diag_note(d, (struct loc){ f->id, 0, 3 }, "declared here");
	diag_note(d, NO_LOC, "write \"3 GiB\"");
	s = capture_json(NULL, 0, de);
	assert_contains(s, "\"file\": \"a\\\"b.mem\",\n"
			   "          \"line\": 2,\n"
			   "          \"column\": 12,\n"
			   "          \"end_line\": 2,\n"
			   "          \"end_column\": 22,\n"
			   "          \"severity\": \"error\",\n"
			   "          \"promoted\": false,\n"
			   "          \"name\": \"unit-mismatch\",\n"
			   "          \"message\": \"cannot add bytes and count\",\n"
			   "          \"notes\": [");
	assert_contains(s, "\"line\": 1,\n              \"column\": 1,\n"
			   "              \"end_line\": 1,\n              \"end_column\": 4,\n"
			   "              \"message\": \"declared here\"");
	assert_contains(s, "\"file\": null,\n              \"line\": null,\n"
			   "              \"column\": null,\n"
			   "              \"end_line\": null,\n              \"end_column\": null,\n"
			   "              \"message\": \"write \\\"3 GiB\\\"\"");
	free(s);
	arena_free(&arena);
}

static char *capture_html(const struct report_job *j)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	report_html_begin(f);
	report_html_job(f, j);
	report_html_end(f);
	fclose(f);
	return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The chart's series is filled only when asked, and then it is the
 * per-phase peaks with their components. */
static void html_series(void **state)
{
	struct tiny *t = tiny_new(GIB, 1);
	const struct mem_class *k = &t->res.classes[0];
	uint64_t sum = 0;

	(void)state;
	assert_int_equal(k->series[0][MEM_PHASE_FORWARD].allocated, 0);
	mem_result_free(&t->res);
	t->job.phase_series = true;
	assert_int_equal(mem_analyze(&t->job, &t->res), MEM_OK);
	t->rj.result = &t->res;
	k = &t->res.classes[0];
	for (int p = 0; p < MEM_PHASE__COUNT; p++)
		assert_int_equal(k->series[0][p].allocated, k->phase_peak[p]);
	for (int c = 0; c < MEM_C__COUNT; c++)
		sum += k->series[0][MEM_PHASE_BACKWARD].c[c];
	assert_int_equal(sum, k->phase_peak[MEM_PHASE_BACKWARD]);
	assert_int_equal(k->series[1][MEM_PHASE_FORWARD].allocated, 0);	/* one micro-batch */
	tiny_free(t);
}

static void html_page(void **state)
{
	struct tiny *t = tiny_new(GIB, 1);
	char *s;

	(void)state;
	mem_result_free(&t->res);
	t->job.phase_series = true;
	assert_int_equal(mem_analyze(&t->job, &t->res), MEM_OK);
	t->rj.result = &t->res;
	t->rj.name = "<b>&\"x'";
	s = capture_html(&t->rj);
	assert_true(strncmp(s, "<!DOCTYPE html>\n", 16) == 0);
	assert_contains(s, "<h2>&lt;b&gt;&amp;&quot;x&#39;: ");
	assert_int_equal(count_of(s, "<svg xmlns"), 1);
	assert_int_equal(count_of(s, "data-peak=\"true\""), 1);
	assert_int_equal(count_of(s, "<script"), 0);
	assert_contains(s, "<details><summary>Formulas (--explain)</summary>");
	assert_contains(s, "<line class=\"capacity\"");
	assert_true(strcmp(s + strlen(s) - 8, "</html>\n") == 0);
	free(s);
	tiny_free(t);
}

static void html_not_analysed(void **state)
{
	struct report_job j = { .name = "broken", .file = "a.mem", .line = 3 };
	char *s;

	(void)state;
	s = capture_html(&j);
	assert_contains(s, "<p class=\"not-analysed\">");
	assert_int_equal(count_of(s, "<svg"), 0);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_format),
		cmocka_unit_test(text_fits),
		cmocka_unit_test(text_exceeds),
		cmocka_unit_test(text_not_analysed),
		cmocka_unit_test(text_explain_and_stages),
		cmocka_unit_test(json_job_fields),
		cmocka_unit_test(json_not_analysed_nulls),
		cmocka_unit_test(json_diagnostics),
		cmocka_unit_test(html_series),
		cmocka_unit_test(html_page),
		cmocka_unit_test(html_not_analysed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
