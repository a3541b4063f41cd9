/* SPDX-License-Identifier: MIT */
/*
 * search_block.c - a layout as the train block the user pastes, and its
 * verification: the file with the job's block replaced by that text,
 * compiled, checked, built and analysed from scratch in an arena of its
 * own, as `memc check` would. What is printed is what was verified.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/search_impl.h"
#include "analyzer/cmd/search_pick.h"
#include "analyzer/cmd/search_split.h"
#include "analyzer/fmt/fmt_impl.h"
#include "analyzer/memory/memory.h"
#include "analyzer/memory/phases.h"
#include "analyzer/cmd/stdlib_digests.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/source.h"
#include "lang/strbuf.h"

/* The keys a layout writes; every other key of the job is copied. */
static const char *const managed[] = { "cluster", "micro_batch", "grad_accum", "checkpoint", "zero",
				       "parallel", "offload" };
static const char *const managed_sub[] = { "tp", "pp", "vp", "cp", "ep", "sequence_parallel", "schedule" };

static bool in_list(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

static void field_text(const struct search_ctx *c, const struct field *f, struct strbuf *sb)
{
	const struct src_file *sf = src_get(c->src, f->loc.file);

	strbuf_add(sb, sf->text + f->loc.start, f->loc.end - f->loc.start);
}

static void degree(struct strbuf *sb, const char *name, uint32_t v)
{
	if (v > 1)
		strbuf_addf(sb, "    %s = %u\n", name, (unsigned)v);
}

bool search_drops_split(const struct search_ctx *c, const struct search_layout *l)
{
	return c->nshapes && search_split_dropped(&c->shapes[0]->bd.job, l->pp, l->vp);
}

/* parallel { }: the job's other sub-keys (less a stated split the layout
 * drops), then the layout's degrees. */
static void parallel_record(const struct search_ctx *c, const struct field *f, const struct search_layout *l,
			    struct strbuf *sb)
{
	bool drop = search_drops_split(c, l);
	struct strbuf in;

	strbuf_init(&in);
	for (const struct field *s = f ? f->sub : NULL; s; s = s->next)
		if (s->name && !in_list(managed_sub, sizeof managed_sub / sizeof managed_sub[0], s->name) &&
		    !(drop && search_split_is_key(s->name))) {
			strbuf_addstr(&in, "    ");
			field_text(c, s, &in);
			strbuf_addch(&in, '\n');
		}
	degree(&in, "tp", l->tp);
	degree(&in, "pp", l->pp);
	degree(&in, "vp", l->vp);
	degree(&in, "cp", l->cp);
	degree(&in, "ep", l->ep);
	if (l->tp > 1)
		strbuf_addstr(&in, "    sequence_parallel = true\n");
	if (l->vp > 1)
		strbuf_addstr(&in, "    schedule = \"interleaved\"\n");
	if (in.len)
		strbuf_addf(sb, "  parallel {\n%s  }\n", in.buf);
	strbuf_release(&in);
}

static void managed_key(const struct search_ctx *c, const char *k, const struct field *f,
			const struct search_layout *l, struct strbuf *sb)
{
	if (!strcmp(k, "cluster")) {
		const char *gpu = c->job->cluster.decl->name;

		if (l->gpus > l->per_node)
			strbuf_addf(sb, "  cluster = %u x %u x %s\n", (unsigned)(l->gpus / l->per_node),
				    (unsigned)l->per_node, gpu);
		else
			strbuf_addf(sb, "  cluster = %u x %s\n", (unsigned)l->gpus, gpu);
	} else if (!strcmp(k, "micro_batch")) {
		strbuf_addf(sb, "  micro_batch = %llu\n", (unsigned long long)l->micro_batch);
	} else if (!strcmp(k, "grad_accum")) {
		strbuf_addf(sb, "  grad_accum = %llu\n", (unsigned long long)l->grad_accum);
	} else if (!strcmp(k, "checkpoint")) {
		strbuf_addf(sb, "  checkpoint = %s\n", search_ckpt_name(l->ckpt));
	} else if (!strcmp(k, "zero")) {
		if (l->zero > 0)
			strbuf_addf(sb, "  zero = %d\n", l->zero);
		else if (l->zero < 0 && f)	/* FSDP as written */
			strbuf_addstr(sb, "  "), field_text(c, f, sb), strbuf_addch(sb, '\n');
	} else if (!strcmp(k, "parallel")) {
		parallel_record(c, f, l, sb);
	} else if (l->offload) {
		strbuf_addstr(sb, "  offload { optimizer = cpu }\n");
	}
}

char *search_render(const struct search_ctx *c, const struct search_layout *l, const char *name)
{
	bool done[sizeof managed / sizeof managed[0]] = { false };
	struct strbuf sb;
	size_t n = sizeof managed / sizeof managed[0];

	strbuf_init(&sb);
	strbuf_addf(&sb, "train %s {\n", name);
	for (const struct field *f = c->job->block; f; f = f->next) {
		size_t k = 0;

		while (k < n && (!f->name || strcmp(managed[k], f->name)))
			k++;
		if (k < n) {
			if (!done[k])
				managed_key(c, managed[k], f, l, &sb);
			done[k] = true;
			continue;
		}
		strbuf_addstr(&sb, "  ");
		field_text(c, f, &sb);
		strbuf_addch(&sb, '\n');
	}
	for (size_t k = 0; k < n; k++)
		if (!done[k])
			managed_key(c, managed[k], NULL, l, &sb);
	strbuf_addstr(&sb, "}\n");

	/* in memc fmt's canonical layout: what `memc fmt --check` accepts */
	size_t len;
	char *s = fmt_layout(sb.buf, sb.len, &len);
	char *out = arena_strdup(c->arena, s);

	free(s);
	strbuf_release(&sb);
	return out;
}

/* The worst class and phase of the verified job. */
static bool judge(struct arena *a, struct build *bd, uint64_t *total)
{
	struct mem_result res;
	struct phase_result run;
	bool fits = true;

	if (mem_analyze(&bd->job, &res) != MEM_OK)
		return false;
	bool phases = phases_analyze(a, &bd->job, &res, &bd->run_in, &run);

	*total = 0;
	for (size_t i = 0; i < res.nclasses; i++) {
		uint64_t t = res.classes[i].device_total;

		fits &= res.classes[i].fits_headroom;
		if (phases && i < run.nclasses) {
			t = run.classes[i].run_device > t ? run.classes[i].run_device : t;
			fits &= run.classes[i].run_fits;
		}
		*total = t > *total ? t : *total;
	}
	mem_result_free(&res);
	return fits;
}

static bool analyse(const struct search_ctx *c, struct arena *a, struct diag_engine *de, struct check_result *cr,
		    uint64_t *total)
{
	struct build_override none = { .zero = -1 };
	struct build *bd = ARENA_NEW(a, struct build);
	const struct check_job *j = cr->jobs;

	while (j && strcmp(j->decl->name, c->job->decl->name) != 0)
		j = j->next;
	if (!j || !j->ok || cr->shared_errors || diag_error_count(de) ||
	    !build_job(cr->ev, a, j, &none, false, bd))
		return false;
	if (diag_error_count(de) || diag_warning_count(de) > c->base_warnings)
		return false;
	return judge(a, bd, total);
}

bool search_verify(const struct search_ctx *c, const char *block, uint64_t *total)
{
	const struct decl *d = c->job->decl;
	struct arena a = { 0 };
	/* the base's interner and its parsed stdlib (lang/import_cache.c):
	 * a verification parses only the user's file */
	struct interner *in = c->cache ? import_cache_interner(c->cache) : interner_new(&a);
	struct src_table *src = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, src, NULL);
	struct import_opts io = { .dirs = c->dopts->dirs, .ndirs = c->dopts->ndirs, .stdlib_dir = c->stdlib,
				  .verified = memc_stdlib_digests, .nverified = memc_stdlib_ndigests,
				  .cache = c->cache };
	struct strbuf sb;
	bool ok = false;

	strbuf_init(&sb);
	strbuf_add(&sb, c->text, d->loc.start);
	strbuf_addstr(&sb, block);
	strbuf_add(&sb, c->text + d->loc.end, c->len - d->loc.end);
	src_set_overlay(src, c->path, sb.buf, sb.len);
	struct program *p = import_load(&a, in, src, de, c->path, &io);

	if (p->root && !diag_error_count(de))
		ok = analyse(c, &a, de, check_program(&a, in, de, src, p), total);
	arena_free(&a);
	strbuf_release(&sb);
	return ok;
}
