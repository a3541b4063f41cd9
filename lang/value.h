/* SPDX-License-Identifier: MIT */
/*
 * value.h - what an expression evaluates to.
 *
 * Numbers are exact rationals with a dimension (counts and ratios are
 * dimensionless). A value may be `unknown`: its type is known but not its
 * magnitude. The checker evaluates templates that no job instantiates with
 * unknown parameters, so one evaluator does both the static type-and-unit
 * check and the instantiation under a train block; arithmetic on an
 * unknown yields an unknown of the right dimension.
 *
 * Every value remembers where it came from (`origin`, `label`) so that an
 * error deep in a shape can point back at the line that bound a name
 * ("heads (40) is not divisible by tp (3)", note at `tp = 3`).
 */
#ifndef MEMC_LANG_VALUE_H
#define MEMC_LANG_VALUE_H

#include <stdbool.h>

#include "lang/ast.h"
#include "lang/num.h"
#include "lang/source.h"
#include "lang/units.h"

struct dtype;

enum val_kind {
	VAL_ERROR,	/* already reported: silences everything downstream */
	VAL_NUM,	/* count, ratio or quantity */
	VAL_BOOL,
	VAL_STRING,
	VAL_DTYPE,
	VAL_SYMBOL,	/* an enum word: flash, full, foreach, ... */
	VAL_NONE,	/* `none` */
	VAL_LIST,
	VAL_DECL,	/* a reference to a declaration (gpu, model, ...) */
	VAL_INSTANCE,	/* a template with its arguments bound: Llama(layers = 32) */
	VAL_CALL,	/* a builtin record call: lora(r = 16, ...) */
	VAL_CLUSTER,	/* nodes x gpus x GPU */
};

struct env;

struct value {
	enum val_kind kind;
	bool unknown;			/* magnitude unknown (static check) */
	struct loc loc;			/* the expression that produced it */
	struct loc origin;		/* where the name it came from was bound, or loc */
	const char *label;		/* that name, for messages; NULL: use the source text */
	struct num num;			/* VAL_NUM */
	struct dim dim;			/* VAL_NUM */
	bool b;				/* VAL_BOOL */
	const char *str;		/* VAL_STRING, VAL_SYMBOL (interned), VAL_CALL name */
	const struct dtype *dtype;	/* VAL_DTYPE */
	struct value *items;		/* VAL_LIST */
	unsigned nitems;
	const struct decl *decl;	/* VAL_DECL, VAL_INSTANCE, VAL_CLUSTER (the gpu) */
	struct env *args;		/* VAL_INSTANCE: its parameters; VAL_CALL: named args */
	struct num nodes, gpus;		/* VAL_CLUSTER */
};

#endif
