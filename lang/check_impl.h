/* SPDX-License-Identifier: MIT */
/*
 * check_impl.h - shared by check.c (records, templates) and check_train.c
 * (train blocks, template bodies).
 */
#ifndef MEMC_LANG_CHECK_IMPL_H
#define MEMC_LANG_CHECK_IMPL_H

#include "lang/check.h"

/* The values a numeric key allows (checked at its line: `out-of-range`). */
enum check_range {
	RANGE_ANY,
	RANGE_POSITIVE,			/* > 0 */
	RANGE_NONNEG,			/* >= 0 */
	RANGE_FRACTION,			/* 0 <= x < 1: headroom, dropout */
	RANGE_PERCENT,			/* 0 <= x <= 1: fragmentation */
	RANGE_AT_LEAST_1,		/* counts of things */
	RANGE_POSITIVE_BYTES,		/* > 0 and whole bytes */
	RANGE_NONNEG_BYTES,		/* >= 0 and whole bytes */
	RANGE_NCCL_CHANNELS,		/* 1 to NCCL's MAXCHANNELS (64) */
	RANGE_POWER_OF_2,		/* 1, 2, 4, ... 2^30 */
	RANGE_PERCENT_ABOVE_0,		/* 0 < x <= 1 */
	RANGE_FRACTION_ABOVE_0,		/* 0 < x < 1 */
	RANGE_SPLIT_MB,			/* >= 20: PyTorch's max_split_size_mb */
};

struct field_spec {
	const char *name;
	const char *type;		/* an eval type name, "dtype?" (or none), "enum:a|b", "record" */
	bool required;
};

struct range_spec {
	const char *key;		/* "headroom", "overhead.fragmentation" */
	enum check_range range;
};

/* Index key @name, just kept among @j's fields, for check_job_field
 * (check_job.c). */
void check_job_index_key(struct check_job *j, const char *name);

/* The range of @key in @t; RANGE_ANY if it is not listed. */
enum check_range check_range_of(const struct range_spec *t, const char *key);

/* Report (out-of-range, at @v) a known number outside @r; false then. */
bool check_range(struct eval *ev, struct value v, enum check_range r, const char *what);
/* The job's cluster has 1 to CHECK_MAX_GPUS GPUs, whole numbers. */
enum { CHECK_MAX_GPUS = 1 << 20 };

bool check_duplicate_field(struct eval *ev, const struct field *first, const struct field *f);
void check_list_add(char *buf, size_t n, const char *name);
const struct field_spec *check_spec_find(const struct field_spec *specs, const char *name);
void check_unknown_field(struct eval *ev, const struct field_spec *specs, const struct field *f,
			 const char *what);
bool check_value_type(struct eval *ev, struct value v, const char *type, const char *what);
void check_body_static(struct eval *ev, const struct decl *d);
/* A tensor statement's attributes (check_attrs.c), in templates and jobs alike. */
struct walk_tensor;
void check_tensor_attrs(struct eval *ev, const struct walk_tensor *t);
/* One of Megatron's --recompute-modules names. */
bool check_is_recompute_module(const char *name);
/* The fp8 { } record (check_fp8.c): its keys, library and recipe. */
bool check_fp8_ok(struct eval *ev, const struct check_job *j);
void check_fp8_capability(struct eval *ev, const struct check_job *j, double cc);
struct check_job *check_train(struct eval *ev, const struct decl *d);
/* check_train_keys.c: the train block's keys, its records' keys, ranges. */
extern const struct field_spec check_train_fields[];
extern const struct range_spec check_train_ranges[];
const struct field_spec *check_train_sub_specs(const char *name);
/* check_train.c helpers the other train-block files share. */
uint64_t check_count_key(struct eval *ev, const struct check_job *j, const char *key, uint64_t def,
			 struct value *v);
struct loc check_key_loc(const struct check_job *j, const char *key);
bool check_sym_is(const struct check_job *j, const char *key, const char *sym);
const char *check_list_word(const struct value *v);
/* check_lora.c: lora()/qlora() arguments. */
bool check_finetune(struct eval *ev, const struct check_job *j);
/* check_layout.c: the job's bindings for the model walk, capabilities. */
struct env *check_job_bindings(struct eval *ev, struct check_job *j);
void check_capabilities(struct eval *ev, const struct check_job *j);
/* check_fsdp2.c: whether the job has an fsdp2 { } key, and its rules. */
bool check_fsdp2_present(const struct check_job *j);
bool check_fsdp2(struct eval *ev, const struct check_job *j);

/* What the checker's walk of one job saw of its model (check_model.c). */
struct check_param {
	const struct stmt *stmt;	/* a `param` tensor */
	const struct decl *layer;	/* the layer (or model) that declares it */
};

struct check_model {
	struct eval *ev;
	struct check_param *params;	/* distinct (tensor, layer) pairs, in walk order */
	size_t nparams, capparams;
	size_t *index;			/* open addressing: 1 + position in params, 0 empty */
	size_t capindex;
	unsigned open_repeats;		/* at model level */
	bool have_body, body_known;	/* the model's first repeat, and its count */
	uint64_t body;
	bool rope_read;			/* a layer read train.rope_cache (hf_rotary_cache) */
	bool tt_rope_read;		/* one read torchtune.rope_cache (torchtune_rotary_cache) */
};

void check_model_tensor(struct check_model *m, const struct walk_tensor *t);
void check_model_repeat_enter(struct check_model *m, struct value count);
void check_model_repeat_leave(struct check_model *m);
/* `freeze` and LoRA `targets` name what the model has; something trains. */
bool check_model_names(struct eval *ev, const struct check_model *m, const struct check_job *j);
/* pp (x vp when @interleaved) divides the model's blocks. */
bool check_model_split(struct eval *ev, const struct check_model *m, const struct check_job *j,
		       struct value pp, struct value vp, bool interleaved);

#endif
