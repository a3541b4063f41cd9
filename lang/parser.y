/* SPDX-License-Identifier: MIT */
/*
 * parser.y - the grammar of .mem files (docs/language.md §2).
 *
 * Actions build AST nodes and nothing else. Newlines reach the grammar as
 * EOL tokens only where they can end an item; the wrapper in parse.c drops
 * the others and folds runs of blank lines. Error recovery happens at
 * three levels (declaration, field, statement): the `error` token in each
 * list skips to the next separator, and yyerrok lets the next mistake be
 * reported at once.
 */
%require "3.8"
%define api.pure full
%define api.location.type {struct loc}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {struct parse_ctx *pc}

%code requires {
#include "lang/ast.h"
#include "lang/parse_impl.h"

/* A parent spans its first child's start to its last child's end; an
 * empty rule is an empty range at the end of what came before. */
#define YYLLOC_DEFAULT(cur, rhs, n)                                  \
	do {                                                         \
		if (n) {                                             \
			(cur).file = YYRHSLOC(rhs, 1).file;          \
			(cur).start = YYRHSLOC(rhs, 1).start;        \
			(cur).end = YYRHSLOC(rhs, n).end;            \
		} else {                                             \
			(cur) = YYRHSLOC(rhs, 0);                    \
			(cur).start = (cur).end;                     \
		}                                                    \
	} while (0)
}

%code {
#include <string.h>

#include "lang/arena.h"
#include "lang/diag.h"
#include "lang/parse_build.h"

static void yyerror(struct loc *loc, struct parse_ctx *pc, const char *msg);

static int yylex(YYSTYPE *lval, struct loc *lloc, struct parse_ctx *pc)
{
	return parse_next_token(lval, lloc, pc);
}
}

%union {
	const char *text;
	struct expr *expr;
	struct arg *arg;
	struct item *item;
	struct field *field;
	struct param *param;
	struct attr *attr;
	struct stmt *stmt;
	struct decl *decl;
	struct type_build *type;
	int tkind;
}

/* Keywords carry their text so that they can also name fields and
 * arguments (`model = llama2_7b` in a train block). */
%token <text> IMPORT "import" LET "let" GPU "gpu" PRECISION "precision" TRAIN "train"
%token <text> LAYER "layer" MODEL "model" OPTIMIZER "optimizer"
%token <text> PARAM "param" SAVES "saves" TEMP "temp" STATE "state" INPUT "input"
%token <text> REPEAT "repeat" IF "if" ELSE "else" TRUE "true" FALSE "false" WARN "warn"
%token EQ "==" NE "!=" LE "<=" GE ">=" AND "&&" OR "||"
%token EOL "end of line"
%token <text> NUMBER "number" NAME "name" STRING "string"

%type <expr> expr primary postfix list_lit shape
%type <item> items items1
%type <arg> args args1 arg opt_args
%type <field> fields field fields_open fields_full
%type <param> params param_list param
%type <type> type
%type <attr> attrs attr
%type <stmt> body stmt stmts_open stmts_full tensor if_stmt else_part
%type <decl> decl record_decl template_decl
%type <tkind> record_kw template_kw tensor_kw
%type <text> opt_base key

%left OR
%left AND
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/'
%precedence UNARY

%%

/*
 * Lists of items separated by newlines, ';' or ','. Each list uses two
 * nonterminals: *_open ends in a separator (or is empty) and may take an
 * item; *_full ends in an item and must see a separator next. This admits
 * leading, trailing and repeated separators without conflicts, and it
 * keeps `tp = 1 pp = 1` an error rather than a quantity `1 pp`.
 */
file
	: decls_open
	| decls_full
	;

/* Recovery consumes the separator, so the next mistake is reported at
 * once (yyerrok) without the parser looping on the same lookahead. */
decls_open
	: %empty
	| decls_open sep
	| decls_full sep
	| decls_open error line_end		{ yyerrok; }
	;

decls_full
	: decls_open decl		{ parse_add_decl(pc, $2); }
	;

sep	: EOL | ';' | ',' ;

/* Recovery resynchronises at a line end only: a ',' may sit inside the
 * broken item (a list, a call) and would resume too early. */
line_end : EOL | ';' ;

/* import "models/llama" · let d = 128 · gpu A100 { ... } · layer mlp(h: count) { ... } */
decl
	: IMPORT STRING			{ $$ = parse_import(pc, @$, $2, @2); }
	| LET NAME '=' expr		{ $$ = parse_let(pc, @$, $2, @2, $4); }
	| record_decl
	| template_decl
	;

record_kw
	: GPU				{ $$ = DECL_GPU; }
	| PRECISION			{ $$ = DECL_PRECISION; }
	| TRAIN				{ $$ = DECL_TRAIN; }
	;

/* gpu H100_94GB : H100_SXM_80GB { memory = 95830 MiB } */
record_decl
	: record_kw NAME opt_base fields
		{ $$ = parse_record(pc, $1, @$, $2, @2, $3, @3, $4); }
	;

opt_base
	: %empty			{ $$ = NULL; }
	| ':' NAME			{ $$ = $2; @$ = @2; }
	;

/* { memory = 80 GiB, parallel { tp = 8 } } */
fields
	: '{' fields_open '}'		{ $$ = parse_close_fields($2); }
	| '{' fields_full '}'		{ $$ = parse_close_fields($2); }
	| '{' fields_open error '}'	{ $$ = parse_close_fields($2); yyerrok; }
	;

fields_open
	: %empty			{ $$ = NULL; }
	| fields_open sep		{ $$ = $1; }
	| fields_full sep		{ $$ = $1; }
	| fields_open error line_end		{ $$ = $1; yyerrok; }
	;

fields_full
	: fields_open field		{ $$ = parse_append_field($1, $2); }
	;

field
	: key '=' expr			{ $$ = parse_field(pc, @$, $1, @1, $3, NULL); }
	| key fields			{ $$ = parse_field(pc, @$, $1, @1, NULL, $2); }
	;

template_kw
	: LAYER				{ $$ = DECL_LAYER; }
	| MODEL				{ $$ = DECL_MODEL; }
	| OPTIMIZER			{ $$ = DECL_OPTIMIZER; }
	;

/* layer rmsnorm(hidden: count) { ... } · model llama2_7b = Llama(layers = 32, ...) */
template_decl
	: template_kw NAME params body
		{ $$ = parse_template(pc, $1, @$, $2, @2, $3, true, $4); }
	| template_kw NAME body
		{ $$ = parse_template(pc, $1, @$, $2, @2, NULL, false, $3); }
	| template_kw NAME '=' expr
		{ $$ = parse_alias(pc, $1, @$, $2, @2, $4); }
	;

/* (hidden: count, kv_heads: count = heads, impl: foreach | fused = foreach) */
params
	: '(' ')'			{ $$ = NULL; }
	| '(' param_list ')'		{ $$ = parse_close_params($2); }
	;

param_list
	: param				{ $$ = parse_append_param(NULL, $1); }
	| param_list ',' param		{ $$ = parse_append_param($1, $3); }
	;

param
	: NAME ':' type			{ $$ = parse_param(pc, $1, @1, $3, @3, NULL); }
	| NAME ':' type '=' expr	{ $$ = parse_param(pc, $1, @1, $3, @3, $5); }
	;

type
	: NAME				{ $$ = parse_type_new(pc, $1, @1); }
	| type '|' NAME			{ $$ = parse_type_add(pc, $1, $3, @3); }
	;

/* { statements } */
body
	: '{' stmts_open '}'		{ $$ = parse_close_stmts($2); }
	| '{' stmts_full '}'		{ $$ = parse_close_stmts($2); }
	| '{' stmts_open error '}'	{ $$ = parse_close_stmts($2); yyerrok; }
	;

stmts_open
	: %empty			{ $$ = NULL; }
	| stmts_open sep		{ $$ = $1; }
	| stmts_full sep		{ $$ = $1; }
	| stmts_open error line_end		{ $$ = $1; yyerrok; }
	;

stmts_full
	: stmts_open stmt		{ $$ = parse_append_stmt($1, $2); }
	;

stmt
	: tensor
	| NAME '(' opt_args ')'
		{ $$ = parse_instance(pc, @$, ast_new_name(pc->arena, @1, $1), $3); }
	| REPEAT expr body		{ $$ = parse_repeat(pc, @$, $2, $3); }
	| REPEAT NAME NAME expr body
		{ $$ = parse_repeat_index(pc, @$, $2, @2, $3, @3, $4, $5); }
	| if_stmt
	| LET NAME '=' expr		{ $$ = parse_stmt_let(pc, @$, $2, @2, $4); }
	| WARN STRING			{ $$ = parse_warn(pc, @$, $2, @2); }
	;

/* if attention == eager { ... } else if ... { ... } else { ... } */
if_stmt
	: IF expr body else_part	{ $$ = parse_if(pc, @$, $2, $3, $4); }
	;

else_part
	: %empty			{ $$ = NULL; }
	| ELSE body			{ $$ = parse_else_body(pc, @2, $2); }
	| ELSE if_stmt			{ $$ = $2; }
	;

tensor_kw
	: PARAM				{ $$ = TENSOR_PARAM; }
	| SAVES				{ $$ = TENSOR_SAVES; }
	| TEMP				{ $$ = TENSOR_TEMP; }
	| STATE				{ $$ = TENSOR_STATE; }
	| INPUT				{ $$ = TENSOR_INPUT; }
	;

/* param w_up : [hidden, ffn / tp] linear */
tensor
	: tensor_kw NAME ':' shape attrs
		{ $$ = parse_tensor(pc, @$, $1, $2, @2, $4, parse_close_attrs($5)); }
	;

shape
	: list_lit
	;

attrs
	: %empty			{ $$ = NULL; }
	| attrs attr			{ $$ = parse_append_attr($1, $2); }
	;

attr
	: NAME				{ $$ = parse_attr(pc, @$, $1, NULL, false); }
	| NAME '(' opt_args ')'		{ $$ = parse_attr(pc, @$, $1, $3, true); }
	;

/* Expressions, loosest first: || && comparisons + - * / unary postfix.
 * The builders keep each tree within PARSE_MAX_EXPR_DEPTH, because a
 * chain of left-associative operators or postfixes needs no brackets and
 * PARSE_MAX_DEPTH alone would not bound it. */
expr
	: expr OR expr			{ $$ = parse_binary(pc, AST_OR, @2, $1, $3); }
	| expr AND expr			{ $$ = parse_binary(pc, AST_AND, @2, $1, $3); }
	| expr EQ expr			{ $$ = parse_binary(pc, AST_EQ, @2, $1, $3); }
	| expr NE expr			{ $$ = parse_binary(pc, AST_NE, @2, $1, $3); }
	| expr '<' expr			{ $$ = parse_binary(pc, AST_LT, @2, $1, $3); }
	| expr LE expr			{ $$ = parse_binary(pc, AST_LE, @2, $1, $3); }
	| expr '>' expr			{ $$ = parse_binary(pc, AST_GT, @2, $1, $3); }
	| expr GE expr			{ $$ = parse_binary(pc, AST_GE, @2, $1, $3); }
	| expr '+' expr			{ $$ = parse_binary(pc, AST_ADD, @2, $1, $3); }
	| expr '-' expr			{ $$ = parse_binary(pc, AST_SUB, @2, $1, $3); }
	| expr '*' expr			{ $$ = parse_binary(pc, AST_MUL, @2, $1, $3); }
	| expr '/' expr			{ $$ = parse_binary(pc, AST_DIV, @2, $1, $3); }
	| '-' expr %prec UNARY		{ $$ = parse_unary(pc, @$, AST_NEG, $2); }
	| '!' expr %prec UNARY		{ $$ = parse_unary(pc, @$, AST_NOT, $2); }
	| postfix
	;

postfix
	: primary
	| postfix '.' NAME		{ $$ = parse_member(pc, @$, $1, $3, @3); }
	| postfix '(' opt_args ')'	{ $$ = parse_call(pc, @$, $1, $3); }
	;

/* 80 · 80 GiB · 10% · 8 x A100_80GB · 2 x 8 x H100_SXM_80GB · "s" · true · name · (e) · [a, b] */
primary
	: NUMBER			{ $$ = parse_number(pc, @$, $1); }
	| NUMBER NAME			{ $$ = parse_quantity(pc, @$, $1, @1, $2, @2); }
	| NUMBER '%'			{ $$ = parse_percent(pc, @$, $1, @1); }
	| NUMBER NAME NAME		{ $$ = parse_cluster(pc, @$, NULL, $1, @1, $2, @2, $3, @3); }
	| NUMBER NAME NUMBER NAME NAME
		{ $$ = parse_cluster(pc, @$, parse_cluster_nodes(pc, $1, @1, $2, @2), $3, @3, $4, @4, $5, @5); }
	| STRING			{ $$ = parse_string_lit(pc, @$, $1); }
	| TRUE				{ $$ = parse_bool(pc, @$, true); }
	| FALSE				{ $$ = parse_bool(pc, @$, false); }
	| NAME				{ $$ = ast_new_name(pc->arena, @$, $1); }
	| '(' expr ')'			{ $$ = $2; }
	| list_lit
	;

list_lit
	: '[' items ']'			{ $$ = parse_list(pc, @$, parse_close_items($2)); }
	;

items
	: %empty			{ $$ = NULL; }
	| items1			{ $$ = $1; }
	| items1 ','			{ $$ = $1; }
	;

items1
	: expr				{ $$ = parse_append_item(NULL, parse_item(pc, $1)); }
	| items1 ',' expr		{ $$ = parse_append_item($1, parse_item(pc, $3)); }
	;

opt_args
	: %empty			{ $$ = NULL; }
	| args
	;

args
	: args1				{ $$ = parse_close_args($1); }
	| args1 ','			{ $$ = parse_close_args($1); }
	;

args1
	: arg				{ $$ = parse_append_arg(NULL, $1); }
	| args1 ',' arg			{ $$ = parse_append_arg($1, $3); }
	;

arg
	: expr				{ $$ = parse_arg(pc, NULL, @1, $1); }
	| key '=' expr			{ $$ = parse_arg(pc, $1, @1, $3); }
	;

/* A field or argument name: a name, or a keyword used as one. */
key
	: NAME | IMPORT | LET | GPU | PRECISION | TRAIN | LAYER | MODEL | OPTIMIZER
	| PARAM | SAVES | TEMP | STATE | INPUT | REPEAT | IF | ELSE | WARN
	;

%%

#include "lang/parse_errors.inc"
