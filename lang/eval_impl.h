/* SPDX-License-Identifier: MIT */
/*
 * eval_impl.h - the evaluator's state, shared by eval.c (values,
 * environments), eval_expr.c (expressions) and walk.c (templates).
 */
#ifndef MEMC_LANG_EVAL_IMPL_H
#define MEMC_LANG_EVAL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "lang/eval.h"
#include "lang/u64map.h"

struct src_table;

/* Evaluation state of one global `let` or alias: for memo and cycles. */
struct decl_memo {
	const struct decl *decl;
	int state;			/* 0 new, 1 active, 2 done */
	struct value v;
	struct loc use;			/* where it was first asked for */
	struct decl_memo *next;
};

struct eval {
	struct arena *arena;
	struct arena *perm;		/* the compilation's: what outlives a scratch arena */
	struct interner *interner;
	struct diag_engine *diag;
	const struct scope *scope;
	const struct src_table *src;	/* for quoting operands in messages */
	const char *none;
	struct u64map seen;		/* reported (file, offset, id, message) keys */
	uint64_t job_gen;		/* the job being checked (1, 2, ...), 0 before the jobs */
	uint64_t report_salt;		/* the job a warn fires for: one warning per job */
	struct u64map suggestions;	/* did-you-mean per (name, kind) */
	unsigned long suggestions_computed;	/* scans of the scope, for the unit tests */
	struct u64map memo;		/* struct decl_memo per decl pointer */
	struct decl_memo *active[2048];	/* the chain being evaluated, for cycles; deeper
					   than EVAL_MAX_EXPR_DEPTH cannot happen */
	unsigned nactive;
	bool in_shape;			/* divisions must be exact */
	unsigned depth;			/* instantiation depth */
	struct num divisible_seen[16][2];	/* not-divisible pairs already reported */
	unsigned ndivisible_seen;
	unsigned expr_depth;		/* eval_expr frames on the C stack */
	bool expr_depth_reported;
	unsigned long steps;
	unsigned long total_steps;	/* over the whole check: bounds many templates */		/* statements walked since the outermost eval_walk */
	bool steps_reported;
	const struct decl *layers[64];	/* the instances being walked, outermost first */
	struct loc layer_calls[64];
	bool quiet;			/* what-if evaluation: count errors, print none */
	unsigned quiet_errors;
	const struct walk_ops *walk_ops;	/* of the walk in progress, for trains() */
	void *walk_ctx;
	struct env *static_job;		/* unknown bindings for static checks */
	const char *stdlib_dir;		/* for "add import" notes (stdlib_index.c); may be NULL */
	struct stdlib_index *stdlib_index;	/* built on the first undefined name */
	struct env *warn_job;		/* the bindings whose walk fires `warn`: the checker's */
	const struct decl *warn_train;	/* ... and their train block */
	unsigned long reports;		/* eval_error calls, printed or not: a walk that
					   made none can be reused (walk_cache.c) */
	struct walk_cache *walk_cache;	/* the checker's walks, by model and bindings */
	void *build_cache;		/* the analyzer's (eval_build_cache) */
};

/* Limits (docs/limits.md): layers nested inside layers, and statements
 * walked per template or job, which bounds exponential fan-out such as
 * 40 levels of layers that each use the one below twice. */
enum { EVAL_MAX_DEPTH = 64, EVAL_MAX_STEPS = 20000,
       EVAL_MAX_TOTAL_STEPS = 2000000, EVAL_MAX_EXPR_DEPTH = 1500 };
/* Records of one `gpu A : B : ...` chain eval_record_field() reads; a longer
 * chain or a cycle is a definition-cycle (check.c check_base_chain). */
enum { EVAL_MAX_BASES = 64 };

const char *eval_type_name(const struct value *v, char *buf, size_t n);
const char *eval_describe(struct eval *ev, const struct value *v, char *buf, size_t n);
struct value eval_name(struct eval *ev, struct env *env, const struct expr *e);
struct value eval_call(struct eval *ev, struct env *env, const struct expr *e);

struct value undefined_name(struct eval *ev, const struct value *v);
/* The same, suggesting only declarations of @kind (DECL__COUNT: any). */
struct value undefined_name_of(struct eval *ev, const struct value *v, enum decl_kind kind);
/* scope_suggest(), computed once per distinct (name, kind) in a
 * compilation: a layer used 2^14 times under a fan-out asks 2^14 times. */
const char *eval_suggest(struct eval *ev, const char *name, enum decl_kind kind);
/* Notes for undefined @name of @kind (DECL__COUNT: any) on @d: a close
 * declared name, else the stdlib file that declares it (or a close name)
 * and the import to add. False if there was nothing to say. */
bool eval_note_undefined(struct eval *ev, struct diag *d, const char *name, enum decl_kind kind);
/* The same for a GPU name: variants of its family, nearest memory first
 * (never @except, the GPU that derives from @name). */
void eval_note_gpu(struct eval *ev, struct diag *d, const char *name, const char *except);

/* stdlib_index.c: the stdlib file ("models/llama") that declares @name
 * (interned) of @kind, or NULL; the closest stdlib name and its file. */
const char *eval_stdlib_import(struct eval *ev, const char *name, enum decl_kind kind);
const char *eval_stdlib_suggest(struct eval *ev, const char *name, enum decl_kind kind, const char **import);
/* The @i-th stdlib declaration, in sorted file order; false past the end. */
bool eval_stdlib_at(struct eval *ev, size_t i, const char **name, enum decl_kind *kind, const char **import);
bool eval_type_known(const char *type);

#endif
