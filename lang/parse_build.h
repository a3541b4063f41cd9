/* SPDX-License-Identifier: MIT */
/*
 * parse_build.h - node builders called from the grammar actions of
 * parser.y. Private to the parser. Each one only allocates and links
 * nodes; the exceptions are parse_cluster*, which check that the word
 * between the counts is `x`, because the grammar cannot say that, and the
 * expression builders, which keep trees within PARSE_MAX_EXPR_DEPTH.
 */
#ifndef MEMC_LANG_PARSE_BUILD_H
#define MEMC_LANG_PARSE_BUILD_H

#include "lang/parse_impl.h"

void parse_add_decl(struct parse_ctx *pc, struct decl *d);
struct decl *parse_import(struct parse_ctx *pc, struct loc loc, const char *path, struct loc path_loc);
struct decl *parse_let(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
		       struct expr *value);
struct decl *parse_record(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			  struct loc name_loc, const char *base, struct loc base_loc,
			  struct field *fields);
struct decl *parse_template(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			    struct loc name_loc, struct param *params, bool has_params,
			    struct stmt *body);
struct decl *parse_alias(struct parse_ctx *pc, int kind, struct loc loc, const char *name,
			 struct loc name_loc, struct expr *value);

struct field *parse_field(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
			  struct expr *value, struct field *sub);
struct field *parse_append_field(struct field *list, struct field *f);

struct param *parse_param(struct parse_ctx *pc, const char *name, struct loc name_loc,
			  struct type_build *type, struct loc type_loc, struct expr *def);
struct param *parse_append_param(struct param *list, struct param *p);
struct type_build *parse_type_new(struct parse_ctx *pc, const char *name, struct loc loc);
struct type_build *parse_type_add(struct parse_ctx *pc, struct type_build *t, const char *name,
				  struct loc loc);

struct stmt *parse_append_stmt(struct stmt *list, struct stmt *s);
struct stmt *parse_instance(struct parse_ctx *pc, struct loc loc, struct expr *callee, struct arg *args);
struct stmt *parse_repeat(struct parse_ctx *pc, struct loc loc, struct expr *count, struct stmt *body);
struct stmt *parse_repeat_index(struct parse_ctx *pc, struct loc loc, const char *index, struct loc index_loc,
				const char *in, struct loc in_loc, struct expr *count, struct stmt *body);
struct stmt *parse_if(struct parse_ctx *pc, struct loc loc, struct expr *cond, struct stmt *then_body,
		      struct stmt *else_part);
struct stmt *parse_else_body(struct parse_ctx *pc, struct loc loc, struct stmt *body);
struct stmt *parse_warn(struct parse_ctx *pc, struct loc loc, const char *message, struct loc message_loc);
struct stmt *parse_stmt_let(struct parse_ctx *pc, struct loc loc, const char *name, struct loc name_loc,
			    struct expr *value);
struct stmt *parse_tensor(struct parse_ctx *pc, struct loc loc, int kind, const char *name,
			  struct loc name_loc, struct expr *shape, struct attr *attrs);
struct attr *parse_attr(struct parse_ctx *pc, struct loc loc, const char *name, struct arg *args,
			bool has_parens);
struct attr *parse_append_attr(struct attr *list, struct attr *a);

/* Past PARSE_MAX_EXPR_DEPTH these report nesting-depth and return a
 * shallower node in place of the new one (parse_stmt.c). */
struct expr *parse_binary(struct parse_ctx *pc, int op, struct loc op_loc, struct expr *lhs,
			  struct expr *rhs);
struct expr *parse_unary(struct parse_ctx *pc, struct loc loc, int op, struct expr *operand);
struct expr *parse_member(struct parse_ctx *pc, struct loc loc, struct expr *obj, const char *field,
			  struct loc field_loc);
struct expr *parse_call(struct parse_ctx *pc, struct loc loc, struct expr *callee, struct arg *args);
struct expr *parse_number(struct parse_ctx *pc, struct loc loc, const char *text);
struct expr *parse_quantity(struct parse_ctx *pc, struct loc loc, const char *num, struct loc num_loc,
			    const char *unit, struct loc unit_loc);
struct expr *parse_percent(struct parse_ctx *pc, struct loc loc, const char *num, struct loc num_loc);
struct expr *parse_cluster_nodes(struct parse_ctx *pc, const char *num, struct loc num_loc,
				 const char *x, struct loc x_loc);
struct expr *parse_cluster(struct parse_ctx *pc, struct loc loc, struct expr *nodes, const char *num,
			   struct loc num_loc, const char *x, struct loc x_loc, const char *gpu,
			   struct loc gpu_loc);
struct expr *parse_string_lit(struct parse_ctx *pc, struct loc loc, const char *value);
struct expr *parse_bool(struct parse_ctx *pc, struct loc loc, bool value);
struct expr *parse_list(struct parse_ctx *pc, struct loc loc, struct item *items);
struct item *parse_item(struct parse_ctx *pc, struct expr *e);
struct item *parse_append_item(struct item *list, struct item *it);
struct arg *parse_arg(struct parse_ctx *pc, const char *name, struct loc name_loc, struct expr *value);
struct arg *parse_append_arg(struct arg *list, struct arg *a);

/* Lists are built in O(1) per item as a circular list whose handle is
 * the last element (last->next is the first); parse_close_* cuts the
 * circle and returns the first element. NULL items (from error
 * recovery) are skipped. */
struct field *parse_close_fields(struct field *last);
struct param *parse_close_params(struct param *last);
struct stmt *parse_close_stmts(struct stmt *last);
struct attr *parse_close_attrs(struct attr *last);
struct item *parse_close_items(struct item *last);
struct arg *parse_close_args(struct arg *last);

#endif
