/* SPDX-License-Identifier: MIT */
/*
 * eval.h - evaluate expressions and walk template bodies.
 *
 * One evaluator serves the checker and the analyzer. Names resolve, in
 * order, through the local frames (a template's parameters and lets), the
 * job's bindings (batch, seq, tp, ...), the global declarations, the unit
 * table, the dtype table and the builtin functions. A name found nowhere
 * evaluates to an enum symbol, which is what `attention == eager` or
 * `targets = [q, v]` need; where a number is required instead, it is
 * reported as undefined with a did-you-mean.
 *
 * Errors are reported once per source location, however many times a
 * layer is instantiated, and the value that failed becomes VAL_ERROR, which
 * every later operation passes on silently.
 */
#ifndef MEMC_LANG_EVAL_H
#define MEMC_LANG_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/value.h"

struct arena;
struct interner;
struct diag_engine;
struct scope;
struct diag;
struct import_cache;

struct eval;
struct env;

struct eval *eval_new(struct arena *a, struct interner *in, struct diag_engine *de,
		      const struct scope *scope);
struct diag_engine *eval_diag(struct eval *ev);
struct interner *eval_interner(struct eval *ev);
const struct scope *eval_scope(struct eval *ev);
/* The compilation's arena, for what outlives a job's scratch arena. */
struct arena *eval_perm(struct eval *ev);
/* Reports asked for so far (printed, deduplicated or quiet): a walk that
 * asked for none can be reused by a job that reads the same values. */
unsigned long eval_reports(const struct eval *ev);
/* A walk went past EVAL_MAX_STEPS: every later walk returns at once. */
bool eval_walks_stopped(const struct eval *ev);
/* A pointer the analyzer keeps per compilation (its builder's cache,
 * analyzer/model/build_cache.c); NULL until set. */
void **eval_build_cache(struct eval *ev);
/* The import cache of the program checked (lang/import.h), when it
 * shares the evaluator's interner; else NULL. */
struct import_cache *eval_import_cache(const struct eval *ev);

struct binding;

struct env *env_new(struct eval *ev, struct env *parent);
void env_set_parent(struct env *e, struct env *parent);
struct env *env_parent(const struct env *e);
void env_bind(struct env *e, const char *name, struct value v);
bool env_lookup(const struct env *e, const char *name, struct value *out);
/* Whether a lookup has found @name's binding (the innermost) since it was
 * bound: a job key that no layer of the model reads changes no figure. */
bool env_was_read(const struct env *e, const char *name);
/* The first binding of a frame, in binding order, for listing arguments. */
const char *env_name_at(const struct env *e, unsigned i, struct value *out);
/* The binding of frame @e after @prev (NULL: its first), in binding order;
 * NULL past the last. *name and *v point into it: a walk of a frame is
 * linear, where env_name_at from 0 to n is quadratic. */
const struct binding *env_next_binding(const struct env *e, const struct binding *prev, const char **name,
				       const struct value **v);

struct value eval_expr(struct eval *ev, struct env *env, const struct expr *e);
struct value val_error(struct loc loc);
struct value val_unknown_num(struct dim d, struct loc loc);
struct value val_count(uint64_t n, struct loc loc);
struct value val_symbol(struct eval *ev, const char *s, struct loc loc);

/* A declaration referenced by name, evaluated: a let's value, an alias's
 * instance, a parameterless template's instance, or VAL_DECL. */
struct value eval_decl_value(struct eval *ev, const struct decl *d, struct loc use);

/* The field @name of record declaration @d (gpu, precision), following
 * `: Base` derivation; NULL if neither it nor a base sets it. */
const struct field *eval_record_field(const struct scope *scope, const struct decl *d, const char *name);

/* Bind @args to the parameters of template @d (reporting missing,
 * unknown and mistyped arguments at the call, with a note at the
 * parameter). */
struct value eval_instantiate(struct eval *ev, struct env *env, const struct decl *d,
			      const struct arg *args, struct loc call);
/* The same with every parameter unknown of its declared type (defaults
 * evaluated when they exist): how the checker sees an unused template. */
struct value eval_instantiate_unknown(struct eval *ev, const struct decl *d);

/* Whether @v is of the parameter type @type, without reporting: the cheap
 * test before a caller formats the @what of eval_is_type(). */
bool eval_matches_type(const struct value *v, const char *type);
/* Type checks with reporting; @what names the thing ("'memory'"). */
bool eval_is_type(struct eval *ev, struct value v, const char *type, const char *what, struct loc at);
bool eval_to_u64(struct eval *ev, struct value v, const char *what, uint64_t *out);
bool eval_to_bool(struct eval *ev, struct value v, const char *what, bool *out);

/* Report once per location (the severity, error or warning, comes from
 * the diagnostics table); return the sink if already reported. */
struct diag *eval_error(struct eval *ev, int id, struct loc loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Quiet mode: errors are counted, not reported (the analyzer's fit search
 * evaluates variants of a job that may not divide). */
void eval_set_quiet(struct eval *ev, bool quiet);
unsigned eval_quiet_errors(const struct eval *ev);

/* Allocate environments and values from @a until the next call; returns
 * the arena used before. For quiet walks that keep nothing (the analyzer's
 * per-job scratch, freed after the job's report). The memo of global lets
 * and aliases and the once-per-location list stay in the compilation's
 * arena, and a value first computed under a scratch arena is not memoised,
 * so nothing long-lived points into @a. */
struct arena *eval_use_arena(struct eval *ev, struct arena *a);

/*
 * Walking a template body. The walker evaluates shapes and conditions and
 * calls back for every tensor with its evaluated dimensions, and around
 * every nested instance and repeat. Unknown conditions walk both
 * branches; unknown repeat counts walk the body once, and so does a
 * plain `repeat n` (it multiplies); `repeat i in n` walks it n times.
 */
struct walk_tensor {
	const struct stmt *stmt;	/* STMT_TENSOR */
	const struct value *dims;	/* evaluated axes */
	unsigned ndims;
	struct env *env;		/* to evaluate attributes */
};

struct walk_ops {
	void (*tensor)(void *ctx, const struct walk_tensor *t);
	void (*enter)(void *ctx, const struct decl *layer, struct env *env, struct loc call);
	void (*leave)(void *ctx, const struct decl *layer);
	void (*repeat_enter)(void *ctx, const struct stmt *s, struct value count);
	void (*repeat_leave)(void *ctx, const struct stmt *s);
	/* `repeat i in n` with a known n walks its body n times, between one
	 * repeat_enter (count n) and one repeat_leave; this is called before
	 * every pass but the first, so that each pass can be its own layer. */
	void (*repeat_next)(void *ctx, const struct stmt *s);
	/* true: walk this plain `repeat n` (known n) pass by pass, as `repeat
	 * i in n` is, so that its layers can differ (a job's train_layers);
	 * asked before repeat_enter. NULL: never. */
	bool (*passes)(void *ctx, const struct stmt *s);
	/* `trains(p)`: 1 if parameter @param of the innermost layer trains (or
	 * carries an adapter), 0 if it is frozen, -1 if unknown. NULL: unknown. */
	int (*trains)(void *ctx, const char *param);
};

/* Walk @inst (VAL_INSTANCE) with @job as the frame of train bindings. */
void eval_walk(struct eval *ev, struct value inst, struct env *job, const struct walk_ops *ops,
	       void *ctx);

#endif
