/* SPDX-License-Identifier: MIT */
/*
 * check_model.c - what a job asks of its model: the pipeline split of the
 * model's body, and the names in `freeze` and LoRA `targets`.
 *
 * The checker's walk of a job records every distinct parameter tensor (its
 * statement, the layer that declares it) and the count of the model's
 * first `repeat`. A name that matches nothing, a target that is not a
 * Linear and a job that trains nothing are errors here: the analyzer
 * would otherwise report 0 trainable parameters and exit 0.
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/check_impl.h"
#include "lang/diag.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/strbuf.h"
#include "lang/units.h"

/* ---- the walk ---- */

static size_t param_slot(const struct stmt *s, const struct decl *layer, size_t cap)
{
	uintptr_t h = (uintptr_t)s ^ ((uintptr_t)layer << 1);

	h ^= h >> 17;
	h *= 0x9E3779B97F4A7C15u;
	return (size_t)(h >> 7) & (cap - 1);
}

/* Distinct (tensor, layer) pairs, found through an index: a generated
 * model may walk 20,000 distinct tensors. */
static void add_param(struct check_model *m, const struct stmt *s, const struct decl *layer)
{
	size_t i = m->capindex ? param_slot(s, layer, m->capindex) : 0;

	for (; m->capindex && m->index[i]; i = (i + 1) & (m->capindex - 1))
		if (m->params[m->index[i] - 1].stmt == s && m->params[m->index[i] - 1].layer == layer)
			return;
	ARENA_GROW(m->ev->arena, m->params, m->nparams, m->capparams);
	m->params[m->nparams++] = (struct check_param){ s, layer };
	if (2 * m->nparams > m->capindex) {
		m->capindex = m->capindex ? m->capindex * 2 : 64;
		m->index = ARENA_NEW_ARRAY(m->ev->arena, size_t, m->capindex);
		for (size_t k = 0; k < m->nparams; k++) {
			size_t j = param_slot(m->params[k].stmt, m->params[k].layer, m->capindex);

			while (m->index[j])
				j = (j + 1) & (m->capindex - 1);
			m->index[j] = k + 1;
		}
		return;
	}
	for (i = param_slot(s, layer, m->capindex); m->index[i]; i = (i + 1) & (m->capindex - 1))
		;
	m->index[i] = m->nparams;
}

void check_model_tensor(struct check_model *m, const struct walk_tensor *t)
{
	struct eval *ev = m->ev;

	if (t->stmt->tensor.kind == TENSOR_PARAM && ev->depth > 0)
		add_param(m, t->stmt, ev->layers[ev->depth - 1]);
}

/* The first repeat of the model's own body is the body of blocks that the
 * pipeline splits (the analyzer's rule, analyzer/lower/build_job.c). */
void check_model_repeat_enter(struct check_model *m, struct value count)
{
	if (m->ev->depth != 1 || m->open_repeats++ > 0 || m->have_body)
		return;
	m->have_body = true;
	m->body_known = count.kind == VAL_NUM && !count.unknown && num_to_u64(count.num, &m->body);
}

void check_model_repeat_leave(struct check_model *m)
{
	if (m->ev->depth == 1 && m->open_repeats)
		m->open_repeats--;
}

/* ---- names ---- */

bool check_tensor_answers_to(const struct stmt *s, const char *name)
{
	if (!strcmp(s->tensor.name, name))
		return true;
	for (const struct attr *a = s->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, "hf"))
			for (const struct arg *x = a->args; x; x = x->next)
				if (x->value->kind == EXPR_NAME && !strcmp(x->value->name.name, name))
					return true;
	return false;
}

static bool is_linear(const struct stmt *s)
{
	for (const struct attr *a = s->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, "linear"))
			return true;
	return false;
}

/* `adaptable`: an nn.Linear or nn.Embedding that LoRA can adapt when
 * `targets` names it, though QLoRA leaves it in 16 bit (the LM head, the
 * token embedding). */
static bool is_adaptable(const struct stmt *s)
{
	for (const struct attr *a = s->tensor.attrs; a; a = a->next)
		if (!strcmp(a->name, "adaptable"))
			return true;
	return is_linear(s);
}

/* The name a list item gives: `q`, "q", or a declaration such as a layer. */
static const char *item_name(const struct value *v)
{
	if (v->kind == VAL_SYMBOL || v->kind == VAL_STRING)
		return v->str;
	if ((v->kind == VAL_DECL || v->kind == VAL_INSTANCE) && v->decl)
		return v->decl->name;
	return NULL;
}

/* Add @name to @sb once ("a, b, c"). */
static void add_unique(struct strbuf *sb, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = sb->len ? strstr(sb->buf, name) : NULL; p; p = strstr(p + 1, name))
		if ((p == sb->buf || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return;
	strbuf_addf(sb, "%s%s", sb->len ? ", " : "", name);
}

static void consider(const char *want, const char *cand, const char **best, unsigned *bd)
{
	unsigned d = unit_edit_distance(want, cand);

	if (d < *bd) {
		*bd = d;
		*best = cand;
	}
}

/* The closest name of the model to @want: parameters (and their hf()
 * names), or only Linears; layers too when @layers. */
static const char *closest(const struct check_model *m, const char *want, bool linear_only, bool layers)
{
	const char *best = NULL;
	unsigned bd = (unsigned)strlen(want) / 2 + 1;

	bd = bd > 3 ? 3 : bd;
	for (size_t i = 0; i < m->nparams; i++) {
		const struct stmt *s = m->params[i].stmt;

		if (linear_only && !is_linear(s))
			continue;
		consider(want, s->tensor.name, &best, &bd);
		for (const struct attr *a = s->tensor.attrs; a; a = a->next)
			for (const struct arg *x = !strcmp(a->name, "hf") ? a->args : NULL; x; x = x->next)
				if (x->value->kind == EXPR_NAME)
					consider(want, x->value->name.name, &best, &bd);
		if (layers && m->params[i].layer)
			consider(want, m->params[i].layer->name, &best, &bd);
	}
	return best;
}

/* "q, k, v, o, gate, up, down" (Linears) or every parameter and layer. */
static void what_it_has(const struct check_model *m, struct strbuf *sb, bool linear_only, bool layers)
{
	struct strbuf ls;

	for (size_t i = 0; i < m->nparams; i++)
		if (!linear_only || is_linear(m->params[i].stmt))
			add_unique(sb, m->params[i].stmt->tensor.name);
	if (!layers)
		return;
	strbuf_init(&ls);
	for (size_t i = 0; i < m->nparams; i++)
		if (m->params[i].layer)
			add_unique(&ls, m->params[i].layer->name);
	strbuf_addf(sb, "; layers: %s", ls.buf);
	strbuf_release(&ls);
}

static void note_has(struct diag *d, const struct check_model *m, const char *model, bool linear_only)
{
	struct strbuf sb;

	strbuf_init(&sb);
	what_it_has(m, &sb, linear_only, !linear_only);
	diag_note(d, NO_LOC, "%s %s: %s", model, linear_only ? "has these Linears" : "has these parameters",
		  sb.buf);
	strbuf_release(&sb);
}

static struct diag *no_match(struct eval *ev, const struct check_model *m, const struct value *it,
			     const char *name, const char *what, const char *model, bool linear_only)
{
	struct diag *d = eval_error(ev, DIAG_UNDEFINED_NAME, it->loc, "%s '%s' matches nothing in %s", what,
				    name, model);
	const char *s = closest(m, name, linear_only, !linear_only);

	if (s)
		diag_note(d, NO_LOC, "did you mean '%s'?", s);
	note_has(d, m, model, linear_only);
	return d;
}

/* ---- freeze ---- */

static bool frozen(const struct check_param *p, const struct value *freeze)
{
	for (unsigned i = 0; i < freeze->nitems; i++) {
		const char *n = item_name(&freeze->items[i]);

		if (n && (check_tensor_answers_to(p->stmt, n) || (p->layer && !strcmp(p->layer->name, n))))
			return true;
	}
	return false;
}

/* @key: freeze, or lora()'s modules_to_save; both name parameters or layers. */
static bool check_freeze(struct eval *ev, const struct check_model *m, const struct value *freeze,
			 const char *model, const char *key)
{
	bool ok = true;

	for (unsigned i = 0; i < freeze->nitems; i++) {
		const struct value *it = &freeze->items[i];
		const char *n = item_name(it);
		bool hit = false;

		if (it->kind == VAL_ERROR)
			continue;
		if (!n) {
			eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'%s' lists parameter or layer names", key);
			ok = false;
			continue;
		}
		for (size_t k = 0; k < m->nparams && !hit; k++)
			hit = check_tensor_answers_to(m->params[k].stmt, n) ||
			      (m->params[k].layer && !strcmp(m->params[k].layer->name, n));
		if (!hit) {
			no_match(ev, m, it, n, arena_printf(ev->arena, "'%s' name", key), model, false);
			ok = false;
		}
	}
	return ok;
}

/* ---- train_layers ---- */

/* Each item names one layer of the model's body by index, 0 to its count
 * less one, once (Llama-Pro's new blocks, fsdp_qlora train.py). */
static bool check_train_layers(struct eval *ev, const struct check_model *m, const struct check_job *j,
			       const struct value *l)
{
	const char *model = j->model.label ? j->model.label : "the model";
	bool ok = true;

	if (!m->have_body) {
		eval_error(ev, DIAG_BAD_LAYOUT, l->origin.file ? l->origin : l->loc, "'train_layers' names "
			   "layers of the model's body, and %s has no 'repeat' of layers", model);
		return false;
	}
	for (unsigned i = 0; i < l->nitems; i++) {
		const struct value *x = &l->items[i];
		struct loc at = x->loc.file ? x->loc : l->origin;
		uint64_t u = 0;

		if (x->kind == VAL_ERROR)
			continue;
		if (x->kind != VAL_NUM || !dim_is_scalar(x->dim) || !num_is_int(x->num) || !num_to_u64(x->num, &u)) {
			eval_error(ev, DIAG_TYPE_MISMATCH, at, "a 'train_layers' item is a layer index "
				   "(a whole number from 0)");
			ok = false;
			continue;
		}
		if (m->body_known && u >= m->body) {
			eval_error(ev, DIAG_OUT_OF_RANGE, at, "'train_layers' item %llu is past the last layer "
				   "of %s: its body has %llu layers, 0 to %llu", (unsigned long long)u, model,
				   (unsigned long long)m->body, (unsigned long long)m->body - 1);
			ok = false;
			continue;
		}
		for (unsigned k = 0; k < i; k++) {
			uint64_t w;

			if (l->items[k].kind == VAL_NUM && num_to_u64(l->items[k].num, &w) && w == u) {
				eval_error(ev, DIAG_BAD_ARGUMENT, at, "'train_layers' names layer %llu twice",
					   (unsigned long long)u);
				ok = false;
				break;
			}
		}
	}
	if (ok && !l->nitems) {
		eval_error(ev, DIAG_BAD_ARGUMENT, l->origin.file ? l->origin : l->loc,
			   "'train_layers' is empty: the job would train nothing");
		ok = false;
	}
	return ok;
}

/* ---- LoRA targets ---- */

static bool check_target(struct eval *ev, const struct check_model *m, const struct value *it,
			 const char *model)
{
	const char *n = item_name(it);
	const struct check_param *plain = NULL;

	if (it->kind == VAL_ERROR)
		return false;
	if (!n) {
		eval_error(ev, DIAG_TYPE_MISMATCH, it->loc, "'targets' lists names of Linear parameters");
		return false;
	}
	for (size_t k = 0; k < m->nparams; k++)
		if (check_tensor_answers_to(m->params[k].stmt, n)) {
			if (is_adaptable(m->params[k].stmt))
				return true;
			plain = &m->params[k];
		}
	if (!plain) {
		no_match(ev, m, it, n, "LoRA target", model, true);
		return false;
	}
	struct diag *d = eval_error(ev, DIAG_TYPE_MISMATCH, it->loc,
				    "LoRA target '%s' of layer '%s' is not a Linear: only 'linear' and "
				    "'adaptable' parameters carry adapters", n, plain->layer ? plain->layer->name : model);

	note_has(d, m, model, true);
	return false;
}

static bool check_targets(struct eval *ev, const struct check_model *m, const struct value *ft,
			  const char *model)
{
	struct value targets;
	bool ok = true;

	if (!env_lookup(ft->args, intern_cstr(ev->interner, "targets"), &targets) ||
	    (targets.kind == VAL_LIST && targets.nitems == 0)) {
		struct diag *d = eval_error(ev, DIAG_MISSING_FIELD, ft->loc,
					    "%s(...) without targets trains nothing: name the Linears to adapt",
					    ft->str);

		note_has(d, m, model, true);
		return false;
	}
	if (targets.kind != VAL_LIST)
		return true;	/* the argument check reported it */
	for (unsigned i = 0; i < targets.nitems; i++)
		ok &= check_target(ev, m, &targets.items[i], model);
	return ok;
}

static bool is_adapter(const struct value *ft)
{
	return (ft->kind == VAL_SYMBOL || ft->kind == VAL_CALL) &&
	       (!strcmp(ft->str, "adapter") || !strcmp(ft->str, "adapter_v2"));
}

/* finetune = adapter trains the model's `adapter` params only: a model
 * without any (every model but the stdlib's LitGPT) would train nothing. */
static bool check_adapter_params(struct eval *ev, const struct check_model *m, const struct check_job *j,
				 const char *model)
{
	for (size_t i = 0; i < m->nparams; i++)
		for (const struct attr *a = m->params[i].stmt->tensor.attrs; a; a = a->next)
			if (!strcmp(a->name, "adapter"))
				return true;
	diag_note(eval_error(ev, DIAG_BAD_ARGUMENT, j->finetune.loc, "finetune = %s trains the model's "
			     "'adapter' params, and %s has none: the job trains nothing", j->finetune.str, model),
		  NO_LOC, "LitGPT's LLaMA-Adapter: use a LitGPT model (import \"models/litgpt\")");
	return false;
}

bool check_model_names(struct eval *ev, const struct check_model *m, const struct check_job *j)
{
	struct value freeze = { .kind = VAL_ERROR };
	const char *model = j->model.label ? j->model.label : "the model";
	bool has_freeze = check_job_field(j, "freeze", &freeze) && freeze.kind == VAL_LIST;
	struct value picks = { .kind = VAL_ERROR };
	bool has_picks = check_job_field(j, "train_layers", &picks) && picks.kind == VAL_LIST;

	if (has_freeze && !check_freeze(ev, m, &freeze, model, "freeze"))
		return false;
	if (has_picks && !check_train_layers(ev, m, j, &picks))
		return false;
	if (has_picks && is_adapter(&j->finetune)) {
		/* no framework trains whole layers beside LitGPT's adapters */
		eval_error(ev, DIAG_IGNORED_SETTING, picks.origin.file ? picks.origin : picks.loc,
			   "'train_layers' (Llama-Pro: the named layers train whole) means nothing beside "
			   "finetune = %s, which trains only its adapter's parameters: drop one", j->finetune.str);
		return false;
	}
	if (j->finetune.kind == VAL_CALL) {
		struct value mts;

		if (env_lookup(j->finetune.args, intern_cstr(ev->interner, "modules_to_save"), &mts) &&
		    mts.kind == VAL_LIST && !check_freeze(ev, m, &mts, model, "modules_to_save"))
			return false;
		if (env_lookup(j->finetune.args, intern_cstr(ev->interner, "skip_modules"), &mts) &&
		    mts.kind == VAL_LIST && !check_freeze(ev, m, &mts, model, "skip_modules"))
			return false;
		if (is_adapter(&j->finetune))
			return check_adapter_params(ev, m, j, model);
		/* with train_layers the named layers train: adapters are optional */
		struct value tg;

		if (has_picks && !env_lookup(j->finetune.args, intern_cstr(ev->interner, "targets"), &tg))
			return true;
		return check_targets(ev, m, &j->finetune, model);
	}
	if (is_adapter(&j->finetune))
		return check_adapter_params(ev, m, j, model);
	if (has_picks)
		return true;
	size_t trainable = 0;

	for (size_t i = 0; i < m->nparams; i++)
		trainable += !has_freeze || !frozen(&m->params[i], &freeze);
	if (!m->nparams) {
		eval_error(ev, DIAG_BAD_ARGUMENT, j->model.origin.file ? j->model.origin : j->decl->name_loc,
			   "%s has no parameters: the job trains nothing", model);
		return false;
	}
	if (!trainable) {
		eval_error(ev, DIAG_BAD_ARGUMENT, freeze.loc,
			   "'freeze' freezes every parameter of %s: the job trains nothing", model);
		return false;
	}
	return true;
}

/* ---- the pipeline split ---- */

/* "1, 2, 4, 8": the divisors of @n that also divide @room (the GPUs a
 * pp degree can take), or, with @room 0, every divisor up to 2^20 and
 * "..." past it. */
static void divisors(struct strbuf *sb, uint64_t n, uint64_t room)
{
	uint64_t last = room ? room : n;

	for (uint64_t d = 1; d <= n && d <= last; d++) {
		if (!room && d > (1u << 20)) {
			strbuf_addstr(sb, ", ...");
			return;
		}
		if (n % d == 0 && (!room || room % d == 0))
			strbuf_addf(sb, "%s%llu", sb->len ? ", " : "", (unsigned long long)d);
	}
}

/* dp x pp: the GPUs left for the pipeline once tp and cp are taken. */
static uint64_t pipeline_room(struct eval *ev, const struct check_job *j)
{
	struct value dp, pp;
	uint64_t d = 0, p = 0;

	if (!env_lookup(j->bindings, intern_cstr(ev->interner, "dp"), &dp) ||
	    !env_lookup(j->bindings, intern_cstr(ev->interner, "pp"), &pp) || !num_to_u64(dp.num, &d) ||
	    !num_to_u64(pp.num, &p) || __builtin_mul_overflow(d, p, &d))
		return 0;
	return d;
}

bool check_model_split(struct eval *ev, const struct check_model *m, const struct check_job *j,
		       struct value pp, struct value vp, bool interleaved)
{
	uint64_t p = 1, v = 1;
	struct strbuf sb;

	num_to_u64(pp.num, &p);
	num_to_u64(vp.num, &v);
	v = interleaved ? v : 1;
	if (p <= 1 || !m->body_known || (m->have_body && m->body % p == 0 && (m->body / p) % v == 0))
		return true;
	const char *model = j->model.label ? j->model.label : "the model";

	if (!m->have_body) {
		eval_error(ev, DIAG_BAD_LAYOUT, pp.origin.file ? pp.origin : j->decl->name_loc,
			   "%s has no repeated blocks ('repeat') to split over pp = %llu stages", model,
			   (unsigned long long)p);
		return false;
	}
	bool by_vp = m->body % p == 0;
	struct value at = by_vp ? vp : pp;
	struct diag *d = eval_error(ev, DIAG_BAD_LAYOUT, at.origin.file ? at.origin : j->decl->name_loc,
				    by_vp ? "the %llu blocks of %s do not split evenly into pp = %llu stages "
					    "of vp = %llu chunks" :
					    "the %llu blocks of %s do not split evenly over pp = %llu stages",
				    (unsigned long long)m->body, model, (unsigned long long)p,
				    (unsigned long long)v);

	uint64_t room = pipeline_room(ev, j);

	strbuf_init(&sb);
	divisors(&sb, by_vp ? m->body / p : m->body, by_vp ? 0 : room);
	if (by_vp)
		diag_note(d, NO_LOC, "with pp = %llu, vp values that divide the %llu blocks: %s",
			  (unsigned long long)p, (unsigned long long)m->body, sb.buf);
	else if (room)
		diag_note(d, NO_LOC, "pp values that divide the %llu blocks and the %llu GPUs left by tp x cp: %s",
			  (unsigned long long)m->body, (unsigned long long)room, sb.buf);
	else
		diag_note(d, NO_LOC, "pp values that divide %llu: %s", (unsigned long long)m->body, sb.buf);
	strbuf_release(&sb);
	return false;
}
