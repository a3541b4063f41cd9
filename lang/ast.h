/* SPDX-License-Identifier: MIT */
/*
 * ast.h - the syntax tree of a .mem file.
 *
 * The parser builds these nodes and nothing else: no lookups, no
 * evaluation. Every node carries the byte range it was read from; names
 * are interned, so two equal names compare equal by pointer. All nodes live
 * in the compilation's arena and are never freed one by one.
 *
 * Lists (fields, args, statements, list items) are singly linked in source
 * order, because order is what reports and golden tests print.
 */
#ifndef MEMC_LANG_AST_H
#define MEMC_LANG_AST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lang/source.h"

struct arena;
struct stdlib_decl;

enum expr_kind {
#define EXPR(kind, example) EXPR_##kind,
#include "lang/ast.def"
#undef EXPR
	EXPR__COUNT
};

enum decl_kind {
#define DECL(kind, keyword) DECL_##kind,
#include "lang/ast.def"
#undef DECL
	DECL__COUNT
};

enum stmt_kind {
#define STMT(kind, example) STMT_##kind,
#include "lang/ast.def"
#undef STMT
	STMT__COUNT
};

enum tensor_kind {
#define TENSOR(kind, keyword) TENSOR_##kind,
#include "lang/ast.def"
#undef TENSOR
	TENSOR__COUNT
};

enum ast_unop { AST_NEG, AST_NOT };
enum ast_binop {
	AST_ADD, AST_SUB, AST_MUL, AST_DIV,
	AST_EQ, AST_NE, AST_LT, AST_LE, AST_GT, AST_GE,
	AST_AND, AST_OR,
};

struct expr;

/* One argument of a call: `name = value`, or positional when name is NULL. */
struct arg {
	const char *name;
	struct loc name_loc;
	struct expr *value;
	struct arg *next;
};

/* One item of a list or shape. */
struct item {
	struct expr *value;
	struct item *next;
};

struct expr {
	enum expr_kind kind;
	struct loc loc;
	/* Nodes on the longest path down to a leaf, this one included (a leaf
	 * is 1). The parser keeps every tree within PARSE_MAX_EXPR_DEPTH
	 * (lang/parse.h) so that the recursive walkers are bounded by that
	 * limit and not by the C stack; a node it put in place of a cut
	 * subtree is marked with a depth past the limit. Nodes built outside
	 * the parser may leave it 0. */
	unsigned depth;
	union {
		struct { const char *text; } number;		/* digits as written */
		struct { struct expr *number; const char *unit; struct loc unit_loc; } quantity;
		struct { struct expr *number; } percent;
		struct { const char *value; } string;		/* escapes resolved */
		struct { bool value; } boolean;
		struct { const char *name; } name;
		struct { struct expr *object; const char *field; struct loc field_loc; } member;
		struct { enum ast_unop op; struct expr *operand; } unary;
		struct { enum ast_binop op; struct loc op_loc; struct expr *lhs, *rhs; } binary;
		struct { struct expr *callee; struct arg *args; } call;
		struct { struct item *items; unsigned count; } list;
		/* nodes x gpus x GPU: nodes is NULL for the short form */
		struct { struct expr *nodes, *gpus; const char *gpu; struct loc gpu_loc; } cluster;
	};
};

/* `name = value`, or a nested record `name { fields }` (value NULL). */
struct field {
	const char *name;
	struct loc name_loc;
	struct loc loc;
	struct expr *value;
	struct field *sub;
	struct field *next;
};

/* A template parameter: `name: type = default`. An enum type has nalts > 1. */
struct param {
	const char *name;
	struct loc name_loc;
	const char **type_alts;		/* names as written: {"count"} or {"foreach","fused"} */
	struct loc *type_locs;
	unsigned nalts;
	struct loc type_loc;		/* the whole type */
	struct expr *def;		/* default value, or NULL */
	struct param *next;
};

/* A tensor attribute: a name, optionally with arguments (`for_grad(q, k)`). */
struct attr {
	const char *name;
	struct loc loc;
	struct arg *args;
	bool has_parens;
	struct attr *next;
};

struct stmt {
	enum stmt_kind kind;
	struct loc loc;
	union {
		struct {
			enum tensor_kind kind;
			const char *name;
			struct loc name_loc;
			struct expr *shape;	/* EXPR_LIST */
			struct attr *attrs;
		} tensor;
		struct { struct expr *call; } instance;	/* EXPR_CALL */
		/* `repeat i in n { ... }` binds index (NULL for `repeat n`) */
		struct { struct expr *count; struct stmt *body; const char *index; struct loc index_loc; } repeat;
		struct { struct expr *cond; struct stmt *then_body, *else_body; } if_;
		struct { const char *name; struct loc name_loc; struct expr *value; } let;
		struct { const char *message; struct loc message_loc; } warn;	/* {name} interpolates */
	};
	struct stmt *next;
};

struct decl {
	enum decl_kind kind;
	struct loc loc;			/* the whole declaration */
	const char *name;		/* NULL for import */
	struct loc name_loc;
	union {
		struct { const char *path; struct loc path_loc; } import;
		struct { struct expr *value; } let;
		/* gpu, precision, train */
		struct { const char *base; struct loc base_loc; struct field *fields; } record;
		/* layer, model, optimizer: either a template or an alias */
		struct {
			struct param *params;
			bool has_params;
			struct stmt *body;
			struct expr *alias;	/* `model x = Llama(...)`; body NULL then */
		} templ;
	};
	struct decl *next;
};

/* One parsed file. */
struct file_ast {
	uint32_t file;			/* source id */
	struct decl *decls;
	unsigned nerrors;		/* syntax errors reported while parsing it */
	bool stdlib;			/* found in the stdlib: its names yield to the user's
					   (scope.h); set by the checker before the scope */
	bool verified;			/* byte for byte a stdlib file that checked clean
					   when memc was built (import.h); set by the importer */
	const struct stdlib_decl *index;	/* then its build-time prescan, one entry
						   per declaration in order (import.h) */
};

extern const char *const ast_expr_kind_name[EXPR__COUNT];
extern const char *const ast_decl_keyword[DECL__COUNT];
extern const char *const ast_tensor_keyword[TENSOR__COUNT];
const char *ast_binop_spelling(enum ast_binop op);

/* Constructors: allocate in @a and fill; they never check anything. */
struct expr *ast_new_expr(struct arena *a, enum expr_kind kind, struct loc loc);
struct expr *ast_new_binary(struct arena *a, enum ast_binop op, struct loc op_loc,
			    struct expr *lhs, struct expr *rhs);
struct expr *ast_new_name(struct arena *a, struct loc loc, const char *name);
/* Count @child (which may be NULL) in @e's depth. */
void ast_add_child_depth(struct expr *e, const struct expr *child);
struct stmt *ast_new_stmt(struct arena *a, enum stmt_kind kind, struct loc loc);
struct decl *ast_new_decl(struct arena *a, enum decl_kind kind, struct loc loc);

/* Print the tree in a stable, indented form (memc --dump-ast). */
void ast_dump(FILE *out, const struct file_ast *f);

#endif
