/* SPDX-License-Identifier: MIT */
/*
 * check.h - the type-and-unit checker.
 *
 * Binds every name (lang/scope.c), then checks each declaration: record
 * fields against their tables (gpu, precision, train), template parameter
 * types, and every template body, evaluated with unknown parameters so
 * that units, types and attributes are checked even where no job uses the
 * template. Each `train` block of the root file is then evaluated for
 * real: its keys, its layout against the cluster, and the model's shapes
 * under its bindings, so `heads / tp` that leaves a remainder is an error
 * at the division with a note at the line that set `tp`.
 */
#ifndef MEMC_LANG_CHECK_H
#define MEMC_LANG_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/eval.h"

struct program;
struct src_table;

/* A train block's settings after checking; the analyzer starts here. */
struct check_job {
	const struct decl *decl;
	const struct field *block;	/* its keys, those of `train b : a` inherited included */
	struct env *bindings;		/* batch, seq, tp, ... for eval_walk */
	struct value model, cluster, precision, optimizer, finetune;
	struct value *fields;		/* every key by name, see check_job_field */
	const char **names;
	unsigned nfields, capfields;	/* grown in the arena: no key is ever dropped */
	uint64_t key_filter[4];		/* the keys' first bytes (lang/check_job.c) */
	bool ok;			/* no error in this job */
	struct check_job *next;
};

struct check_result {
	struct eval *ev;
	const struct scope *scope;
	struct check_job *jobs;		/* the root file's train blocks, in order */
	unsigned shared_errors;		/* errors outside every train block: all jobs suspect */
	bool jobs_follow;		/* the declarations checked through: train blocks are next */
};

struct check_result *check_program(struct arena *a, struct interner *in, struct diag_engine *de,
				   const struct src_table *src, const struct program *p);
/* The same in two steps, so that a caller can check and analyse one job at
 * a time, each in an arena of its own (eval_use_arena): the declarations,
 * then each train block of the root file, in order, while jobs_follow. */
struct check_result *check_program_decls(struct arena *a, struct interner *in, struct diag_engine *de,
					 const struct src_table *src, const struct program *p);
struct check_job *check_program_job(struct check_result *r, const struct decl *train);

/* Whether `param` tensor @s is called @name: its own name or one of its
 * hf(...) names (Hugging Face / PEFT module names such as q_proj). */
bool check_tensor_answers_to(const struct stmt *s, const char *name);
/* The @i-th key a train block takes (for editors' completion), or NULL
 * past the last. */
const char *check_train_key(size_t i);
/* The value of @key in @job, or false if it was not given. */
bool check_job_scan(const struct check_job *job, const char *key, struct value *out);

/* The bit of @key in check_job.key_filter: its first three bytes (fewer
 * for a shorter key). Inline, so that for a literal key it is a constant
 * and a key the block does not write costs a test, not a call. */
static inline unsigned check_key_bit(const char *key)
{
	unsigned b0 = (unsigned char)key[0], b1 = b0 ? (unsigned char)key[1] : 0;

	return (b0 * 97u + b1 * 31u + (b1 ? (unsigned char)key[2] : 0u)) & 255u;
}

static inline bool check_job_field(const struct check_job *job, const char *key, struct value *out)
{
	unsigned bit = check_key_bit(key);

	return ((job->key_filter[bit >> 6] >> (bit & 63)) & 1u) && check_job_scan(job, key, out);
}
/* Whether @job writes a key of its record @record (`fsdp2 { ... }`): one
 * test instead of a list of the record's keys to keep in step. */
bool check_job_record(const struct check_job *job, const char *record);
/* Whether the job's tensor-parallel Linears save their gathered input (the
 * `sp_in` binding is 1 then): torch's DTensor plan, a job with fsdp2 keys. */
bool check_tp_saves_gathered(const struct check_job *job);
/* What seq_len must be a multiple of under context parallelism @cp (2cp
 * chunks, 1 without cp), and whether @seq_len is one: the checker's rule,
 * which `memc fit` and `memc search` generate their candidates by. */
uint64_t check_cp_seq_multiple(uint64_t cp);
bool check_cp_splits_seq(uint64_t seq_len, uint64_t cp);
/* fp8 { }: whether the job has it; "transformer_engine" or "torchao"; the
 * recipe, defaults applied. */
bool check_fp8_on(const struct check_job *job);
const char *check_fp8_library(const struct check_job *job);
const char *check_fp8_recipe(const struct check_job *job);

#endif
