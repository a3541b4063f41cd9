/* SPDX-License-Identifier: MIT */
/*
 * report.h - print what the analyzer found for each train job: text for
 * people, versioned JSON for tools. Diagnostics are not printed here
 * (lang/diag.c does that); the JSON document embeds them.
 */
#ifndef MEMC_ANALYZER_REPORT_H
#define MEMC_ANALYZER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/memory/memory.h"
#include "analyzer/memory/phases.h"

struct diag_engine;

/* Everything the report needs about one analysed train job. */
struct report_job {
	const char *name;		/* the train block's name */
	const char *file;		/* display name of its file */
	unsigned line;			/* line of `train NAME` */
	const char *model;		/* model name (alias or template) */
	uint64_t params_total;		/* exact, tp = ep = 1, tied counted once */
	uint64_t params_trainable;	/* exact: full fine-tuning = total; LoRA = adapters */
	const char *gpu;		/* GPU declaration name */
	uint64_t gpus;			/* total GPUs in the cluster */
	uint64_t nodes;
	const char *precision;		/* precision policy name */
	const char *optimizer;		/* optimizer name */
	const char *sharding;		/* "DDP", "ZeRO-3", "FSDP full_shard", "none" */
	const char *recompute;		/* "none", "selective", "full" */
	const char *finetune;		/* "full", "lora r=16", "qlora r=64 nf4_dq" */
	const char *rl;			/* "dpo, reference copy"; NULL: not a preference/RL job */
	uint32_t dp, tp, pp, cp, ep, vp;
	bool sequence_parallel;
	uint64_t micro_batch, seq_len, grad_accum;
	/* dtype names per component, for the table's dtype column */
	const char *weights_dtype, *grads_dtype, *state_dtype, *act_dtype;
	const struct mem_job *job;
	const struct mem_result *result;
	const struct phase_result *run;	/* the run's phases; NULL: not formed */
	bool analysed;			/* false: the job had errors; only the header is known */
};

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_HTML };

/* Text report of one job on @out (stdout). With @explain, each component's
 * formula and inputs follow its row. */
void report_text(FILE *out, const struct report_job *j, bool explain);

/* JSON: memc prints one document per invocation:
 *   { "memc_report_version": 1, "files": [ { "file": ..., "jobs": [...],
 *     "diagnostics": [...] }, ... ] }
 * report_json_begin/end frame it; report_json_file writes one file's part. */
void report_json_begin(FILE *out);
void report_json_file(FILE *out, const char *file, const struct report_job *jobs, size_t njobs,
		      const struct diag_engine *de, bool first_file);
void report_json_end(FILE *out);

/* The same file part written one job at a time, so that no job has to be
 * kept until the end of its file: begin, each job, end (the diagnostics). */
enum { REPORT_JW_MAX_DEPTH = 16 };
struct report_jw {
	FILE *out;
	unsigned depth;
	bool first[REPORT_JW_MAX_DEPTH];
};
void report_json_file_begin(struct report_jw *w, FILE *out, const char *file, bool first_file);
void report_json_job(struct report_jw *w, const struct report_job *j);
void report_json_file_end(struct report_jw *w, const struct diag_engine *de);

/* Stable keys of enum mem_phase ("forward", "loss", "backward", "optimizer"),
 * the members of "phase_peaks" in the JSON (docs/report.schema.json). */
extern const char *const report_phase_keys[MEM_PHASE__COUNT];

/* HTML (analyzer/out/report_html.c): one self-contained page per
 * invocation, no script and nothing fetched: per rank class a stacked SVG
 * of the step, the component table, the capacity line and the formulas in
 * <details>. Deterministic like the other formats. */
void report_html_begin(FILE *out);
void report_html_job(FILE *out, const struct report_job *j);
void report_html_end(FILE *out);

/* The text report's wording, for the other formats: where the peak is
 * ("backward, layer 40 (block)") and the capacity clause (" of 80.00 GiB:
 * fits, 12% headroom", "; capacity unknown"). */
void report_where(FILE *out, const struct mem_where *p);
void report_capacity(FILE *out, const struct report_job *j, const struct mem_class *k);

/* Bytes as "13.48 GiB" (IEC, two decimals), deterministic. */
const char *report_bytes(uint64_t b, char *buf, size_t n);

#endif
