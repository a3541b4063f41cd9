/* SPDX-License-Identifier: MIT */
/*
 * test_parse.c - the parser: every declaration kind becomes the right
 * nodes with the right fields, locations are byte ranges of the text they
 * came from, syntax errors are reported once each at their own line with
 * recovery, an unclosed block is reported at the end of the file with a
 * note at its bracket, and the newline rules of docs/language.md §1.
 * Diagnostics are kept in the engine (NULL output), never printed.
 */
#include "lang_fixture.h"

/* Parse @text as "t.mem" (fx->f); diagnostics are left for the test. */
static struct file_ast *parse(struct fixture *fx, const char *text)
{
	return fx_parse(fx, "t.mem", text);
}

#define assert_loc(fx, l, s) assert_string_equal(fx_text_of_last((fx), (l)), (s))

static unsigned line_of(struct fixture *fx, const struct diag *d)
{
	return diag_loc_line(fx->de, d->loc);
}

static const struct decl *nth_decl(const struct file_ast *f, unsigned n)
{
	const struct decl *d = f->decls;

	while (d && n--)
		d = d->next;
	assert_non_null(d);
	return d;
}

static const struct stmt *nth_stmt(const struct stmt *s, unsigned n)
{
	while (s && n--)
		s = s->next;
	assert_non_null(s);
	return s;
}

static const struct expr *nth_item(const struct expr *list, unsigned n)
{
	assert_int_equal(list->kind, EXPR_LIST);
	const struct item *it = list->list.items;

	while (it && n--)
		it = it->next;
	assert_non_null(it);
	return it->value;
}

static const struct field *field_named(const struct field *f, const char *name)
{
	for (; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	fail_msg("no field '%s'", name);
	return NULL;
}

static unsigned count_decls(const struct file_ast *f)
{
	unsigned n = 0;

	for (const struct decl *d = f->decls; d; d = d->next)
		n++;
	return n;
}

/* ---- every declaration kind ---- */

static const char every_decl[] =
	"import \"gpus/nvidia\"\n"					/* 0 */
	"let d = 128\n"							/* 1 */
	"gpu G {\n"							/* 2 */
	"  memory = 80 GiB\n"
	"  bandwidth = 3.35 TB/s\n"
	"}\n"
	"gpu G2 : G { memory = 95830 MiB }\n"				/* 3 */
	"precision mixed { weights = bf16; grads = bf16; compute = bf16; master = fp32 }\n" /* 4 */
	"layer mlp(hidden: count, impl: foreach | fused | for_loop = foreach) {\n" /* 5 */
	"  input x : [batch, seq, hidden]\n"
	"  param w : [hidden, hidden / tp] linear fp32\n"
	"  saves s : [batch] for_grad(w, q)\n"
	"  repeat 4 { temp t : [hidden] backward }\n"
	"  if impl == foreach { temp a : [1] } else if impl == fused { temp b : [2] } else { temp c : [3] }\n"
	"  let k = hidden * 2\n"
	"  norm(hidden, eps = 1)\n"
	"}\n"
	"model M = Llama(layers = 32)\n"				/* 6 */
	"optimizer o { state m : [numel] }\n"				/* 7 */
	"train job {\n"							/* 8 */
	"  model = M\n"
	"  cluster = 2 x 8 x G\n"
	"  short = 8 x G\n"
	"  headroom = 10%\n"
	"  freeze = [a, b, c]\n"
	"  parallel { tp = 8 }\n"
	"  flag = !true\n"
	"  neg = -d\n"
	"  size = bf16.size\n"
	"}\n";

static void every_declaration_kind(void **state)
{
	struct fixture *fx = *state;
	const struct file_ast *f = parse(fx, every_decl);

	fx_assert_no_diags(fx);
	assert_int_equal(f->nerrors, 0);
	assert_int_equal(count_decls(f), 9);

	static const enum decl_kind kinds[] = { DECL_IMPORT, DECL_LET, DECL_GPU, DECL_GPU, DECL_PRECISION,
						DECL_LAYER, DECL_MODEL, DECL_OPTIMIZER, DECL_TRAIN };
	for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		assert_int_equal(nth_decl(f, i)->kind, kinds[i]);

	const struct decl *imp = nth_decl(f, 0);
	assert_null(imp->name);
	assert_string_equal(imp->import.path, "gpus/nvidia");
	assert_loc(fx, imp->import.path_loc, "\"gpus/nvidia\"");
	assert_loc(fx, imp->loc, "import \"gpus/nvidia\"");

	const struct decl *let = nth_decl(f, 1);
	assert_string_equal(let->name, "d");
	assert_loc(fx, let->name_loc, "d");
	assert_loc(fx, let->loc, "let d = 128");
	assert_int_equal(let->let.value->kind, EXPR_NUMBER);
	assert_string_equal(let->let.value->number.text, "128");

	const struct decl *gpu = nth_decl(f, 2);
	assert_string_equal(gpu->name, "G");
	assert_null(gpu->record.base);
	assert_loc(fx, gpu->loc, "gpu G {\n  memory = 80 GiB\n  bandwidth = 3.35 TB/s\n}");
	const struct field *mem = field_named(gpu->record.fields, "memory");
	assert_ptr_equal(gpu->record.fields, mem);	/* source order */
	assert_loc(fx, mem->name_loc, "memory");
	assert_loc(fx, mem->loc, "memory = 80 GiB");
	assert_int_equal(mem->value->kind, EXPR_QUANTITY);
	assert_string_equal(mem->value->quantity.unit, "GiB");
	assert_string_equal(mem->value->quantity.number->number.text, "80");
	assert_loc(fx, mem->value->loc, "80 GiB");
	assert_loc(fx, mem->value->quantity.unit_loc, "GiB");
	/* 3.35 TB/s is (3.35 TB) / s */
	const struct expr *bw = field_named(gpu->record.fields, "bandwidth")->value;
	assert_int_equal(bw->kind, EXPR_BINARY);
	assert_int_equal(bw->binary.op, AST_DIV);
	assert_loc(fx, bw->loc, "3.35 TB/s");
	assert_loc(fx, bw->binary.op_loc, "/");
	assert_int_equal(bw->binary.lhs->kind, EXPR_QUANTITY);
	assert_string_equal(bw->binary.lhs->quantity.number->number.text, "3.35");
	assert_int_equal(bw->binary.rhs->kind, EXPR_NAME);
	assert_string_equal(bw->binary.rhs->name.name, "s");
	assert_null(mem->next->next);

	const struct decl *g2 = nth_decl(f, 3);
	assert_string_equal(g2->record.base, "G");
	assert_loc(fx, g2->record.base_loc, "G");
	/* interned: the base and the first gpu's name are one pointer */
	assert_ptr_equal(g2->record.base, gpu->name);

	const struct decl *prec = nth_decl(f, 4);
	unsigned nf = 0;
	for (const struct field *x = prec->record.fields; x; x = x->next)
		nf++;
	assert_int_equal(nf, 4);
	assert_string_equal(field_named(prec->record.fields, "master")->value->name.name, "fp32");

	const struct decl *layer = nth_decl(f, 5);
	assert_string_equal(layer->name, "mlp");
	assert_true(layer->templ.has_params);
	assert_null(layer->templ.alias);
	const struct param *p1 = layer->templ.params;
	assert_non_null(p1);
	assert_string_equal(p1->name, "hidden");
	assert_int_equal(p1->nalts, 1);
	assert_string_equal(p1->type_alts[0], "count");
	assert_null(p1->def);
	const struct param *p2 = p1->next;
	assert_non_null(p2);
	assert_null(p2->next);
	assert_string_equal(p2->name, "impl");
	assert_int_equal(p2->nalts, 3);
	assert_string_equal(p2->type_alts[0], "foreach");
	assert_string_equal(p2->type_alts[1], "fused");
	assert_string_equal(p2->type_alts[2], "for_loop");
	assert_loc(fx, p2->type_locs[2], "for_loop");
	assert_loc(fx, p2->type_loc, "foreach | fused | for_loop");
	assert_non_null(p2->def);
	assert_string_equal(p2->def->name.name, "foreach");

	const struct stmt *body = layer->templ.body;
	const struct stmt *in = nth_stmt(body, 0);
	assert_int_equal(in->kind, STMT_TENSOR);
	assert_int_equal(in->tensor.kind, TENSOR_INPUT);
	assert_int_equal(in->tensor.shape->list.count, 3);
	assert_loc(fx, in->tensor.shape->loc, "[batch, seq, hidden]");
	assert_loc(fx, in->loc, "input x : [batch, seq, hidden]");

	const struct stmt *w = nth_stmt(body, 1);
	assert_int_equal(w->tensor.kind, TENSOR_PARAM);
	assert_string_equal(w->tensor.name, "w");
	assert_loc(fx, w->tensor.name_loc, "w");
	const struct expr *ax = nth_item(w->tensor.shape, 1);
	assert_int_equal(ax->kind, EXPR_BINARY);
	assert_int_equal(ax->binary.op, AST_DIV);
	assert_loc(fx, ax->loc, "hidden / tp");
	const struct attr *a1 = w->tensor.attrs;
	assert_non_null(a1);
	assert_string_equal(a1->name, "linear");
	assert_false(a1->has_parens);
	assert_non_null(a1->next);
	assert_string_equal(a1->next->name, "fp32");
	assert_null(a1->next->next);

	const struct stmt *s = nth_stmt(body, 2);
	assert_int_equal(s->tensor.kind, TENSOR_SAVES);
	const struct attr *fg = s->tensor.attrs;
	assert_string_equal(fg->name, "for_grad");
	assert_true(fg->has_parens);
	assert_loc(fx, fg->loc, "for_grad(w, q)");
	assert_null(fg->args->name);
	assert_string_equal(fg->args->value->name.name, "w");
	assert_string_equal(fg->args->next->value->name.name, "q");
	assert_null(fg->args->next->next);

	const struct stmt *rep = nth_stmt(body, 3);
	assert_int_equal(rep->kind, STMT_REPEAT);
	assert_string_equal(rep->repeat.count->number.text, "4");
	assert_int_equal(rep->repeat.body->kind, STMT_TENSOR);
	assert_int_equal(rep->repeat.body->tensor.kind, TENSOR_TEMP);
	assert_string_equal(rep->repeat.body->tensor.attrs->name, "backward");

	/* if / else if / else: the else-if is an IF statement in else_body */
	const struct stmt *iff = nth_stmt(body, 4);
	assert_int_equal(iff->kind, STMT_IF);
	assert_int_equal(iff->if_.cond->kind, EXPR_BINARY);
	assert_int_equal(iff->if_.cond->binary.op, AST_EQ);
	assert_string_equal(iff->if_.then_body->tensor.name, "a");
	const struct stmt *elif = iff->if_.else_body;
	assert_non_null(elif);
	assert_int_equal(elif->kind, STMT_IF);
	assert_null(elif->next);
	assert_string_equal(elif->if_.then_body->tensor.name, "b");
	assert_non_null(elif->if_.else_body);
	assert_int_equal(elif->if_.else_body->kind, STMT_TENSOR);
	assert_string_equal(elif->if_.else_body->tensor.name, "c");

	const struct stmt *lt = nth_stmt(body, 5);
	assert_int_equal(lt->kind, STMT_LET);
	assert_string_equal(lt->let.name, "k");
	assert_int_equal(lt->let.value->binary.op, AST_MUL);

	const struct stmt *inst = nth_stmt(body, 6);
	assert_int_equal(inst->kind, STMT_INSTANCE);
	assert_null(inst->next);
	const struct expr *call = inst->instance.call;
	assert_int_equal(call->kind, EXPR_CALL);
	assert_string_equal(call->call.callee->name.name, "norm");
	assert_null(call->call.args->name);
	assert_string_equal(call->call.args->next->name, "eps");
	assert_loc(fx, call->call.args->next->name_loc, "eps");
	assert_loc(fx, inst->loc, "norm(hidden, eps = 1)");

	const struct decl *model = nth_decl(f, 6);
	assert_non_null(model->templ.alias);
	assert_null(model->templ.body);
	assert_false(model->templ.has_params);
	assert_int_equal(model->templ.alias->kind, EXPR_CALL);
	assert_string_equal(model->templ.alias->call.args->name, "layers");

	const struct decl *opt = nth_decl(f, 7);
	assert_false(opt->templ.has_params);
	assert_null(opt->templ.params);
	assert_int_equal(opt->templ.body->tensor.kind, TENSOR_STATE);

	const struct decl *tr = nth_decl(f, 8);
	assert_string_equal(tr->name, "job");
	const struct expr *cl = field_named(tr->record.fields, "cluster")->value;
	assert_int_equal(cl->kind, EXPR_CLUSTER);
	assert_non_null(cl->cluster.nodes);
	assert_string_equal(cl->cluster.nodes->number.text, "2");
	assert_string_equal(cl->cluster.gpus->number.text, "8");
	assert_string_equal(cl->cluster.gpu, "G");
	assert_loc(fx, cl->cluster.gpu_loc, "G");
	assert_loc(fx, cl->loc, "2 x 8 x G");
	const struct expr *sh = field_named(tr->record.fields, "short")->value;
	assert_int_equal(sh->kind, EXPR_CLUSTER);
	assert_null(sh->cluster.nodes);
	assert_string_equal(sh->cluster.gpus->number.text, "8");
	const struct expr *pc = field_named(tr->record.fields, "headroom")->value;
	assert_int_equal(pc->kind, EXPR_PERCENT);
	assert_string_equal(pc->percent.number->number.text, "10");
	assert_loc(fx, pc->loc, "10%");
	const struct expr *fr = field_named(tr->record.fields, "freeze")->value;
	assert_int_equal(fr->kind, EXPR_LIST);
	assert_int_equal(fr->list.count, 3);
	assert_string_equal(nth_item(fr, 2)->name.name, "c");
	const struct field *par = field_named(tr->record.fields, "parallel");
	assert_null(par->value);
	assert_non_null(par->sub);
	assert_string_equal(par->sub->name, "tp");
	assert_loc(fx, par->loc, "parallel { tp = 8 }");
	const struct expr *nt = field_named(tr->record.fields, "flag")->value;
	assert_int_equal(nt->kind, EXPR_UNARY);
	assert_int_equal(nt->unary.op, AST_NOT);
	assert_int_equal(nt->unary.operand->kind, EXPR_BOOL);
	assert_true(nt->unary.operand->boolean.value);
	assert_int_equal(field_named(tr->record.fields, "neg")->value->unary.op, AST_NEG);
	const struct expr *mb = field_named(tr->record.fields, "size")->value;
	assert_int_equal(mb->kind, EXPR_MEMBER);
	assert_string_equal(mb->member.field, "size");
	assert_loc(fx, mb->loc, "bf16.size");
}

static void precedence_and_strings(void **state)
{
	struct fixture *fx = *state;
	const struct file_ast *f = parse(fx, "let a = 1 + 2 * 3 == 7 && !false || \"s\\t\\\"q\\\"\" != x\n");

	fx_assert_no_diags(fx);
	const struct expr *e = f->decls->let.value;
	/* ((1 + (2 * 3)) == 7 && !false) || ("..." != x) */
	assert_int_equal(e->binary.op, AST_OR);
	const struct expr *and = e->binary.lhs;
	assert_int_equal(and->binary.op, AST_AND);
	const struct expr *eq = and->binary.lhs;
	assert_int_equal(eq->binary.op, AST_EQ);
	assert_int_equal(eq->binary.lhs->binary.op, AST_ADD);
	assert_int_equal(eq->binary.lhs->binary.rhs->binary.op, AST_MUL);
	assert_loc(fx, eq->binary.lhs->loc, "1 + 2 * 3");
	const struct expr *ne = e->binary.rhs;
	assert_int_equal(ne->binary.op, AST_NE);
	assert_int_equal(ne->binary.lhs->kind, EXPR_STRING);
	assert_string_equal(ne->binary.lhs->string.value, "s\t\"q\"");
	/* depth: or -> and -> eq -> add -> mul -> number */
	assert_int_equal(e->depth, 6);
}

/* ---- syntax errors and recovery ---- */

static void three_errors_three_diagnostics(void **state)
{
	struct fixture *fx = *state;
	const struct file_ast *f = parse(fx,
		"let a = 1\n"
		"let b = = 2\n"				/* line 2 */
		"let ok = 3\n"
		"gpu X { memory 80 GiB }\n"		/* line 4 */
		"let c = 4\n"
		"layer l { param w : [1] ) }\n"		/* line 6 */
		"let e = 5\n");

	assert_int_equal(fx_count_diags(fx), 3);
	static const unsigned lines[] = { 2, 4, 6 };
	unsigned i = 0;

	for (const struct diag *d = diag_first(fx->de); d; d = d->next, i++) {
		assert_string_equal(diag_name(d->id), "syntax");
		assert_int_equal(line_of(fx, d), lines[i]);
	}
	assert_int_equal(f->nerrors, 3);
	const struct diag *d = diag_first(fx->de);
	assert_int_equal(diag_loc_col(fx->de, d->loc), 9);
	assert_non_null(strstr(diag_message(d), "unexpected '='"));
	/* the field without '=' gets a hint */
	assert_non_null(d->next->notes);
	assert_non_null(strstr(d->next->notes->msg, "name = value"));
	/* recovery kept the good declarations around the bad ones */
	bool saw_ok = false, saw_e = false;
	for (const struct decl *x = f->decls; x; x = x->next) {
		saw_ok |= x->name && !strcmp(x->name, "ok");
		saw_e |= x->name && !strcmp(x->name, "e");
	}
	assert_true(saw_ok);
	assert_true(saw_e);
}

static void one_error_per_line(void **state)
{
	struct fixture *fx = *state;

	parse(fx, "let a = = = = 1 ) ] ( (\nlet b = 2\n");
	assert_int_equal(fx_count_diags(fx), 1);
	assert_int_equal(line_of(fx, diag_first(fx->de)), 1);
}

static void unclosed_block_at_eof(void **state)
{
	struct fixture *fx = *state;
	const struct file_ast *f = parse(fx, "let a = 1\nlayer l {\n  param w : [1]\n");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "syntax");
	assert_non_null(strstr(diag_message(d), "end of file"));
	assert_int_equal(line_of(fx, d), 4);	/* the empty line after the last newline */
	assert_int_equal(d->loc.start, fx->f->len);
	assert_non_null(d->notes);
	assert_loc(fx, d->notes->loc, "{");
	assert_int_equal(diag_loc_line(fx->de, d->notes->loc), 2);
	assert_non_null(strstr(d->notes->msg, "not closed"));
	assert_string_equal(f->decls->name, "a");
}

static void unclosed_bracket_without_newline(void **state)
{
	struct fixture *fx = *state;

	parse(fx, "let a = f(1, [2");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_non_null(d->notes);
	assert_loc(fx, d->notes->loc, "[");	/* the innermost open bracket */
}

static void cluster_needs_x(void **state)
{
	struct fixture *fx = *state;

	parse(fx, "train t { cluster = 2 y 8 x G }\n");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_string_equal(diag_name(d->id), "syntax");
	assert_loc(fx, d->loc, "y");
	assert_null(d->next);
}

static void two_fields_on_one_line_is_an_error(void **state)
{
	struct fixture *fx = *state;

	/* `1 pp` must not read as a quantity with unit pp */
	parse(fx, "train t { parallel { tp = 1 pp = 1 } }\n");
	assert_int_equal(fx_count_diags(fx), 1);
	assert_string_equal(diag_name(diag_first(fx->de)->id), "syntax");
}

/* ---- newline rules ---- */

static void newlines_continue_and_separate(void **state)
{
	struct fixture *fx = *state;
	const struct file_ast *f = parse(fx,
		"let a =\n"
		"  1 +\n"
		"  2 *\n"
		"  3\n"
		"let b = f(1,\n"
		"  x = 2\n"
		")\n"
		"let c = [\n"
		"  1,\n"
		"  2\n"
		"]\n"
		"let d = 1 ==\n"
		"  2 &&\n"
		"  true\n"
		"layer l(h: count,\n"
		"        k: count) {\n"
		"  if h > 1 {\n"
		"    temp a : [1]\n"
		"  }\n"
		"  else if h > 2 {\n"
		"    temp b : [2]\n"
		"  }\n"
		"  else {\n"
		"    temp c : [3]\n"
		"  }\n"
		"\n\n\n"
		"  temp z : [h]\n"
		"}\n"
		"gpu G { memory = 1 GiB; bandwidth = 1 GB/s, family = \"x\" }\n");

	fx_assert_no_diags(fx);
	assert_int_equal(count_decls(f), 6);
	const struct expr *a = nth_decl(f, 0)->let.value;
	assert_int_equal(a->binary.op, AST_ADD);
	assert_int_equal(a->binary.rhs->binary.op, AST_MUL);
	const struct expr *b = nth_decl(f, 1)->let.value;
	assert_int_equal(b->kind, EXPR_CALL);
	assert_string_equal(b->call.args->next->name, "x");
	assert_int_equal(nth_decl(f, 2)->let.value->list.count, 2);
	assert_int_equal(nth_decl(f, 3)->let.value->binary.op, AST_AND);
	const struct decl *l = nth_decl(f, 4);
	assert_string_equal(l->templ.params->next->name, "k");
	const struct stmt *iff = l->templ.body;
	assert_int_equal(iff->kind, STMT_IF);
	assert_int_equal(iff->if_.else_body->kind, STMT_IF);
	assert_string_equal(iff->if_.else_body->if_.else_body->tensor.name, "c");
	/* blank lines fold: the tensor after them is the if's sibling */
	assert_non_null(iff->next);
	assert_string_equal(iff->next->tensor.name, "z");
	assert_null(iff->next->next);
	unsigned nf = 0;
	for (const struct field *x = nth_decl(f, 5)->record.fields; x; x = x->next)
		nf++;
	assert_int_equal(nf, 3);
}

static void newline_ends_an_item(void **state)
{
	struct fixture *fx = *state;
	/* a newline after a complete expression ends it: `- 2` is then a
	 * declaration that cannot start with '-' */
	const struct file_ast *f = parse(fx, "let a = 1\n- 2\nlet b = 3\n");

	assert_int_equal(fx_count_diags(fx), 1);
	assert_int_equal(line_of(fx, diag_first(fx->de)), 2);
	assert_string_equal(nth_decl(f, 0)->let.value->number.text, "1");
	assert_string_equal(nth_decl(f, 1)->name, "b");
}

static void empty_and_comment_only_files(void **state)
{
	struct fixture *fx = *state;

	assert_null(parse(fx, "")->decls);
	assert_null(parse(fx, "\n\n// nothing\n# here\n/* or\n here */\n")->decls);
	fx_assert_no_diags(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_declaration_kind, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(precedence_and_strings, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(three_errors_three_diagnostics, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(one_error_per_line, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(unclosed_block_at_eof, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(unclosed_bracket_without_newline, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(cluster_needs_x, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(two_fields_on_one_line_is_an_error, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(newlines_continue_and_separate, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(newline_ends_an_item, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(empty_and_comment_only_files, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
