/* SPDX-License-Identifier: MIT */
/*
 * fit_impl.h - memc fit's search (fit_search.c) and its output
 * (fit_cmd.c). A variant is the user's file with some keys of one train
 * block rewritten as text, compiled and analysed from scratch like
 * `memc check` would: what is verified is exactly what the user pastes.
 * The -Wcapacity notes check only the rewritten block, among the file's
 * declarations checked once, and verify what they print by the text
 * (fit_variant.c, docs/fit.md "Verified").
 */
#ifndef MEMC_ANALYZER_CMD_FIT_IMPL_H
#define MEMC_ANALYZER_CMD_FIT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/arena.h"
#include "lang/strmap.h"

/* The largest micro_batch and seq_len searched (docs/fit.md). */
enum { FIT_MB_LIMIT = 1 << 20, FIT_SEQ_LIMIT = 1 << 24 };

struct driver_opts;
struct eval;
struct check_job;
struct check_result;
struct decl;
struct src_table;
struct program;

/* One key written as the user would: `top = value`, or with @sub set,
 * `top { sub = value }` merged into the block's own record. */
struct fit_set {
	const char *top, *sub, *value;
	const char *caveat;	/* NULL, or what the change costs besides memory (printed with it) */
	/* its record's line drops more than it sets (a stated pipeline
	 * split, search_split.h): the key alone is no edit */
	bool whole_record;
};

struct fit_kept;

struct fit_change {
	struct fit_set *v;
	size_t n;
};

struct fit_outcome {
	bool ok;		/* checked and analysed without an error */
	bool fits;		/* every rank class within the headroom, every phase on the GPU */
	uint64_t total;		/* largest device total over the classes and phases */
	bool on_gpu;		/* ok, and fits except for the headroom: every class and phase on the GPU */
	uint64_t spare;		/* on_gpu: the least the GPU has left over the classes and phases */
	uint64_t capacity;	/* the memory of the GPU that has it */
	/* ok: the largest over the classes of what its peak instant holds of
	 * weights, activations and logits (a floor of that class's device
	 * total that no optimizer, optimizer offload or GPU changes: "Only
	 * whether it fits", fit_variant.c) */
	uint64_t floor;
	bool unbuilt;		/* not built: only known not to fit (c->only_fits) */
};

struct fit_fix {
	struct fit_change change;
	char **lines;		/* the paste-able lines, one per top key */
	size_t nlines;
	uint64_t total;
	uint64_t spare, capacity;	/* what the GPU has left (a tight one's), of its memory */
	bool on_gpu;		/* as its outcome's */
};

/* A GPU the larger-GPU fixes may choose: its name and memory in bytes. */
struct fit_gpu {
	const char *name;
	uint64_t memory;
};

/* A byte range of the file's text that every variant keeps. */
struct fit_range {
	uint32_t start, end;
};

struct diag_engine;
struct reach;
struct import_cache;
struct interner;

/* The job as written, kept for the whole search. */
struct fit_ctx {
	struct arena arena;	/* the base compilation and every result */
	const struct driver_opts *opts;
	const char *path, *stdlib;
	const char *text;
	size_t len;
	/* nkeep 0: a variant is the whole text; else only these ranges (in
	 * order, the job's block among them): the other train blocks of a
	 * file are no part of this job, and compiling them per variant would
	 * make a search cost the whole file */
	const struct fit_range *keep;
	size_t nkeep;
	const struct src_table *src;	/* the job's keys' text */
	const struct program *prog;	/* every GPU the file can name, parsed */
	/* ... or, with ngpus, those GPUs by the build's index (the stdlib's
	 * own, analyzer/fit/fit.c index_gpus): prog has parsed only the ones
	 * fit_gpu_choices() picks */
	const struct fit_gpu *gpus;
	size_t ngpus;
	struct check_result *cr;
	struct eval *ev, *gpu_ev;	/* the job's, and the one prog's GPUs evaluate in */
	const struct check_job *job;
	const char *job_name;
	double job_headroom;
	unsigned base_warnings;	/* the checker's, which a variant must not add to */
	bool have_base;
	unsigned long builds, max_builds;
	size_t max_fixes;	/* 0: as many as memc fit lists */
	bool truncated;		/* max_builds reached */
	/* Set by the search while only whether a variant fits is read of it
	 * (fit_search.c probe): then one that cannot fit by a kept build's
	 * floor is not built (fit_variant.c "Only whether it fits"). */
	bool only_fits;
	/* The block path (fit_variant.c, docs/fit.md "Verified"): the file
	 * without its train blocks, checked once; a variant parses and checks
	 * only its block in it. NULL: each variant compiles the whole text. */
	struct check_result *ctx;
	struct src_table *ctx_src;
	struct interner *ctx_in;
	struct diag_engine *ctx_de;	/* no error limit: its counts are exact */
	const struct reach *ctx_reach;	/* what it parsed of the stdlib (lang/reach.h) */
	struct arena *ctx_arena;	/* the blocks' ASTs, kept: no address is reused */
	/* NULL, or the parsed stdlib declarations a whole-text variant takes
	 * instead of parsing them again, with the interner they need
	 * (lang/import.h import_cache_new) */
	struct import_cache *cache;
	/* outcomes by the lines of their change: the mildest tuple of a
	 * combination is often one tried before */
	struct strmap seen;
	/* The block path's builds of variants that keep the job's GPU, by
	 * the lines of their change (at most FIT_KEPT_MAX, struct fit_kept in
	 * fit_variant.c): a variant that only adds a larger GPU to one of
	 * them is that build with the GPU's figures put in, not built again
	 * (fit_variant.c "One GPU for another", docs/fit.md). */
	struct strmap kept;
	struct fit_kept *kept_list;
	size_t nkept;
};

/* Test hook of the GPU shortcut (tests/unit/test_fit_gpus.c): with check
 * set, each variant it answers is also compiled the full way and the two
 * outcomes compared; it counts both. Off, the counts still count. */
struct fit_gpu_shortcut_stats {
	bool check;
	unsigned long taken, mismatches;
};
extern struct fit_gpu_shortcut_stats fit_gpu_shortcut;

/* Test hook of the floor (tests/unit/test_fit_floor.c): with check set,
 * every variant with a floor is also compiled, and a floor above its
 * device total, or a variant not built that fits, counted. */
struct fit_floor_stats {
	bool check;
	unsigned long floors, taken, above, fitted;
};
extern struct fit_floor_stats fit_floor;

struct fit_answer {
	struct fit_outcome as_written;
	uint64_t capacity;
	double headroom;
	const char *gpu;
	uint64_t max_micro_batch, max_seq_len, min_gpus;	/* 0: none */
	uint64_t mb_total, seq_total, gpus_total;
	struct fit_fix *fixes;
	size_t nfixes;
	struct fit_fix closest;	/* nlines 0: none was analysed */
	/* What fits the GPU but not inside the headroom (docs/fit.md "Under
	 * the headroom"): the values (0: none, or the same as above), and a
	 * change with no more knobs than the fewest of any fix (nlines 0:
	 * none), with what it leaves of the GPU */
	uint64_t tight_micro_batch, tight_seq_len, tight_gpus;
	uint64_t tight_mb_spare, tight_seq_spare, tight_gpus_spare;	/* of `capacity` */
	uint64_t tight_mb_total, tight_seq_total, tight_gpus_total;
	struct fit_fix tight;
};

/* The words the fixes write besides the block's own text and GPU names
 * (fit_search.c), for what the block path's context parses. */
extern const char fit_knob_words[];

/* The larger GPUs a fix tries for a job on one of @capacity bytes, in the
 * order tried: @g filtered, sorted and one per memory size, in place;
 * their count. */
size_t fit_gpu_choices(struct fit_gpu *g, size_t n, uint64_t capacity);

/* Evaluate the file with @ch applied to the job (@ch NULL: as written). */
void fit_try(struct fit_ctx *c, const struct fit_change *ch, struct fit_outcome *out);
/* The lines @ch writes into the train block. */
void fit_lines(struct fit_ctx *c, const struct fit_change *ch, char ***lines, size_t *n);
/* The whole search for c->job. */
void fit_search(struct fit_ctx *c, struct fit_answer *ans);
/* Only the job as written and, if it does not fit, the fixes and the
 * closest (the -Wcapacity notes, analyzer/fit/fit.c). */
void fit_search_fixes(struct fit_ctx *c, struct fit_answer *ans);
/* Whether @ch's outcome by the block path, @got, is what compiling the
 * whole text with @ch written in gives (not counted in c->builds). */
bool fit_verify(struct fit_ctx *c, const struct fit_change *ch, const struct fit_outcome *got);
/* Free what fit_try keeps between variants (not c->arena). */
void fit_ctx_release(struct fit_ctx *c);

#endif
