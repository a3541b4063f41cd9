/* SPDX-License-Identifier: MIT */
/*
 * stdlib-digest.c - one entry of build/gen/stdlib_digests.c (import.h
 * struct stdlib_digest) for a stdlib file:
 *
 *   build/stdlib-digest NAME PATH
 *
 * prints the C initializer of the file PATH, shown as NAME under the
 * stdlib: src_digest() of its text as the importer loads it (a leading
 * byte order mark dropped) and the declarations lazy_prescan() finds in
 * it, so that memc need not prescan those bytes again. A file the prescan
 * gives up on gets no declarations (it is parsed in full).
 */
#include <stdio.h>

#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/diag.h"
#include "lang/intern.h"
#include "lang/lazy.h"
#include "lang/source.h"

static void print_decls(const struct file_ast *ast)
{
	size_t n = 0;

	printf("(const struct stdlib_decl[]){\n");
	for (const struct decl *d = ast->decls; d; d = d->next, n++) {
		struct loc at = d->kind == DECL_IMPORT ? d->import.path_loc : d->name_loc;

		/* the prescan takes only ASCII word names: no escaping needed */
		printf("\t\t{ %d, %u, %u, %s%s%s, %u, %u },\n", (int)d->kind, d->loc.start, d->loc.end,
		       d->name ? "\"" : "", d->name ? d->name : "NULL", d->name ? "\"" : "", at.start, at.end);
	}
	printf("\t}, %zu", n);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fputs("usage: stdlib-digest NAME PATH\n", stderr);
		return 2;
	}
	struct arena a = { 0 };
	struct src_table *t = src_table_new(&a);
	struct diag_engine *de = diag_new(&a, t, stderr);
	struct src_file *f = src_load(t, de, argv[2], argv[2], NO_LOC);
	int rc = 1;

	if (f) {
		struct file_ast *ast = lazy_prescan(&a, interner_new(&a), f);

		printf("\t{ \"%s\", 0x%016llxull, ", argv[1], (unsigned long long)src_digest(f->text, f->len));
		if (ast && ast->decls)	/* C has no empty array: an empty file is prescanned */
			print_decls(ast);
		else
			printf("NULL, 0");
		printf(" },\n");
		rc = 0;
	}
	diag_flush(de);
	arena_free(&a);
	return rc;
}
