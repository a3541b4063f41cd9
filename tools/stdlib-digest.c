/* SPDX-License-Identifier: MIT */
/*
 * stdlib-digest.c - the entries of build/gen/stdlib_digests.c (import.h
 * struct stdlib_digest) for the stdlib files that checked clean:
 *
 *   build/stdlib-digest DIR NAME...
 *
 * prints, for each file DIR/NAME, the C initializer of its entry:
 * src_digest() of its text as the importer loads it (a leading byte order
 * mark dropped), the declarations lazy_prescan() finds in it, and for each
 * the words of its text (reach_each_word) that name a declaration of any
 * of the files, so that memc need not prescan those bytes or scan them
 * for names again. A file the prescan gives up on gets no declarations
 * (it is parsed in full). A gpu declaration also gets its `memory` in
 * bytes, its file loaded and checked alone as memc would (the builder's
 * build_gpu_u64, analyzer/lower/build_job.c: the field floored to a
 * whole number of bytes), which tests/unit/test_fit_gpus.c compares with
 * that function for every entry.
 */
#include <stdio.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/diag.h"
#include "lang/eval.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/lazy.h"
#include "lang/num.h"
#include "lang/parse.h"
#include "lang/reach.h"
#include "lang/source.h"

struct refs {
	const struct interner *names;	/* every declared name of the files */
	const char *seen[512];		/* this declaration's, printed once each */
	unsigned n;
	int full;
};

/* Words are interned forms, so a found name is one pointer per name. */
static void add_ref(void *ctx, const char *w, size_t len)
{
	struct refs *r = ctx;
	const char *name = intern_find(r->names, w, len);

	if (!name)
		return;
	for (unsigned i = 0; i < r->n; i++)
		if (r->seen[i] == name)
			return;
	if (r->n == sizeof r->seen / sizeof r->seen[0]) {
		r->full = 1;	/* never silently short: the caller refuses */
		return;
	}
	r->seen[r->n++] = name;
}

/* The checked program of DIR/NAME alone, as `memc check` loads it; NULL
 * if it has errors (such a file is not in the table anyway). */
static struct check_result *load_checked(struct arena *a, const char *dir, const char *path,
					 const struct program **out)
{
	struct interner *in = interner_new(a);
	struct src_table *src = src_table_new(a);
	struct diag_engine *de = diag_new(a, src, NULL);
	struct import_opts io = { .stdlib_dir = dir };
	struct program *p = import_load(a, in, src, de, path, &io);
	struct check_result *cr = p->root && !diag_error_count(de) ? check_program_decls(a, in, de, src, p) : NULL;

	*out = p;
	return cr && !diag_error_count(de) ? cr : NULL;
}

/* The `memory` of the gpu declared at @start in @cr's root file, as
 * build_gpu_u64 reads it; 0 if it is not a whole number of bytes. */
static unsigned long long gpu_memory(struct check_result *cr, const struct program *p, uint32_t start)
{
	for (const struct decl *d = p->root->decls; d; d = d->next)
		if (d->kind == DECL_GPU && d->loc.start == start) {
			const struct field *f = eval_record_field(eval_scope(cr->ev), d, "memory");
			struct value v = f ? eval_expr(cr->ev, NULL, f->value) : val_error(NO_LOC);
			uint64_t u;

			return v.kind == VAL_NUM && !v.unknown && num_to_u64(num_floor(v.num), &u) ? u : 0;
		}
	return 0;
}

/* The prefix of one declaration's initializer; 0 if its words overflow. */
static int print_decl(const struct interner *names, const struct src_file *f, const struct decl *d,
		      unsigned long long memory)
{
	struct loc at = d->kind == DECL_IMPORT ? d->import.path_loc : d->name_loc;
	struct refs r = { .names = names };

	if (d->kind != DECL_IMPORT)
		reach_each_word(f->text, d->loc.start, d->loc.end < f->len ? d->loc.end : f->len, add_ref, &r);
	if (r.full)
		return 0;
	/* the prescan takes only ASCII word names: no escaping needed */
	printf("\t\t{ %d, %u, %u, %s%s%s, %u, %u, ", (int)d->kind, d->loc.start, d->loc.end,
	       d->name ? "\"" : "", d->name ? d->name : "NULL", d->name ? "\"" : "", at.start, at.end);
	if (r.n) {
		printf("(const char *const[]){");
		for (unsigned i = 0; i < r.n; i++)
			printf(" \"%s\",", r.seen[i]);
		printf(" }, %u, %llu },\n", r.n, memory);
	} else {
		printf("NULL, 0, %llu },\n", memory);
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: stdlib-digest DIR NAME...\n", stderr);
		return 2;
	}
	struct arena a = { 0 };
	struct src_table *t = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, t, stderr);
	struct interner *names = interner_new(&a);
	int nfiles = argc - 2, rc = 0;
	const struct src_file **files = ARENA_NEW_ARRAY(&a, const struct src_file *, (size_t)nfiles + 1);
	struct file_ast **asts = ARENA_NEW_ARRAY(&a, struct file_ast *, (size_t)nfiles + 1);

	for (int i = 0; i < nfiles; i++) {
		const char *path = arena_printf(&a, "%s/%s", argv[1], argv[i + 2]);

		if (!(files[i] = src_load(t, de, path, path, NO_LOC))) {
			diag_flush(de);
			return 1;
		}
		/* interns every declared name; a file the prescan gives up on is
		 * parsed, so that its names are among them too */
		if (!(asts[i] = lazy_prescan(&a, names, files[i])))
			parse_file(&a, names, de, files[i]);
	}
	for (int i = 0; i < nfiles && rc == 0; i++) {
		printf("\t{ \"%s\", 0x%016llxull, ", argv[i + 2],
		       (unsigned long long)src_digest(files[i]->text, files[i]->len));
		/* C has no empty array: an empty file is prescanned at run time */
		if (asts[i] && asts[i]->decls) {
			size_t n = 0;
			struct arena fa = { 0 };
			const struct program *p = NULL;
			struct check_result *cr = NULL;

			for (const struct decl *d = asts[i]->decls; d && !p; d = d->next)
				if (d->kind == DECL_GPU)
					cr = load_checked(&fa, argv[1], arena_printf(&fa, "%s/%s", argv[1], argv[i + 2]), &p);
			printf("(const struct stdlib_decl[]){\n");
			for (const struct decl *d = asts[i]->decls; d && rc == 0; d = d->next, n++)
				rc = print_decl(names, files[i], d, cr && d->kind == DECL_GPU ?
						gpu_memory(cr, p, d->loc.start) : 0) ? 0 : 1;
			printf("\t}, %zu },\n", n);
			arena_free(&fa);
		} else {
			printf("NULL, 0 },\n");
		}
	}
	diag_flush(de);
	arena_free(&a);
	return rc;
}
