/* SPDX-License-Identifier: MIT */
/*
 * scope.c - the global name table (see scope.h).
 *
 * Names are interned, so the table is an array in declaration order plus
 * an open-addressing index keyed by the name pointer. The index is only
 * for lookups; listing and diagnostics walk the array, so nothing printed
 * depends on hash order.
 */
#include <stdint.h>
#include <string.h>

#include "lang/arena.h"
#include "lang/builtins.h"
#include "lang/diag.h"
#include "lang/dtypes.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/scope.h"
#include "lang/units.h"

struct scope {
	const struct decl **decls;	/* declaration order */
	size_t n, cap;
	const struct decl **index;	/* open addressing on the name pointer */
	size_t nindex;
	const struct decl **shadowed;	/* stdlib declarations a user file hides */
	size_t nshadowed, capshadowed;
	bool *stdlib_file;		/* by source id: the file is the stdlib's */
	uint32_t nfile_ids;
};

static size_t slot_of(const struct scope *s, const char *name)
{
	uintptr_t h = (uintptr_t)name;

	h ^= h >> 17;
	h *= 0x9E3779B97F4A7C15u;
	return (size_t)(h >> 7) & (s->nindex - 1);
}

const struct decl *scope_find(const struct scope *s, const char *name)
{
	if (!name || !s->nindex)
		return NULL;
	for (size_t i = slot_of(s, name);; i = (i + 1) & (s->nindex - 1)) {
		const struct decl *d = s->index[i];

		if (!d || d->name == name)
			return d;
	}
}

const struct decl *scope_find_kind(const struct scope *s, const char *name, enum decl_kind kind)
{
	const struct decl *d = scope_find(s, name);

	return d && d->kind == kind ? d : NULL;
}

static bool is_stdlib_file(const struct scope *s, uint32_t file)
{
	return file < s->nfile_ids && s->stdlib_file[file];
}

/* Few names are ever shadowed: a scan is enough. */
static const struct decl *shadowed_named(const struct scope *s, const char *name)
{
	for (size_t i = 0; i < s->nshadowed; i++)
		if (s->shadowed[i]->name == name)
			return s->shadowed[i];
	return NULL;
}

const struct decl *scope_find_in(const struct scope *s, const char *name, uint32_t file)
{
	bool in_stdlib = is_stdlib_file(s, file);
	const struct decl *d = s->nshadowed && in_stdlib ? shadowed_named(s, name) : NULL;

	if (d)
		return d;
	d = scope_find(s, name);
	/* The stdlib names only its own declarations: a user's `train eager`
	 * must not turn the stdlib's `attention == eager` into a comparison
	 * with a train block. */
	if (d && in_stdlib && !is_stdlib_file(s, d->name_loc.file))
		return NULL;
	return d;
}

const struct decl *scope_find_kind_in(const struct scope *s, const char *name, enum decl_kind kind,
				      uint32_t file)
{
	const struct decl *d = scope_find_in(s, name, file);

	return d && d->kind == kind ? d : NULL;
}

size_t scope_count(const struct scope *s)
{
	return s->n;
}

const struct decl *scope_at(const struct scope *s, size_t i)
{
	return s->decls[i];
}

const char *scope_suggest(const struct scope *s, const char *name, enum decl_kind kind)
{
	const char *best = NULL;
	unsigned best_d = (unsigned)strlen(name) / 2 + 1;

	if (best_d > 3)
		best_d = 3;
	for (size_t i = 0; i < s->n; i++) {
		const struct decl *d = s->decls[i];

		if (kind != DECL__COUNT && d->kind != kind)
			continue;
		unsigned dist = unit_edit_distance(name, d->name);

		if (dist < best_d) {
			best_d = dist;
			best = d->name;
		}
	}
	return best;
}

/* Why @name may not be declared, or NULL. */
static const char *clash_reason(const struct decl *d)
{
	const char *name = d->name;
	struct unit_ref u;

	if (unit_lookup(name, &u))
		return "a unit";
	/* `precision fp32` is how users name that policy; train blocks look
	 * precisions up by kind, so only other declarations clash. */
	if (dtype_find(name) && d->kind != DECL_PRECISION)
		return "a dtype";
	if (builtin_is_reserved(name))
		return "a name the train block binds";
	return NULL;
}

static void insert(struct arena *a, struct scope *s, const struct decl *d)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		const struct decl **nd = ARENA_NEW_ARRAY(a, const struct decl *, s->cap);

		if (s->n)
			memcpy(nd, s->decls, s->n * sizeof *nd);
		s->decls = nd;
		s->nindex = s->cap * 2;
		s->index = ARENA_NEW_ARRAY(a, const struct decl *, s->nindex);
		for (size_t i = 0; i < s->n; i++) {
			size_t j = slot_of(s, s->decls[i]->name);

			while (s->index[j])
				j = (j + 1) & (s->nindex - 1);
			s->index[j] = s->decls[i];
		}
	}
	s->decls[s->n++] = d;
	size_t j = slot_of(s, d->name);

	while (s->index[j])
		j = (j + 1) & (s->nindex - 1);
	s->index[j] = d;
}

/* -Wshadow-import at the user's declaration; @std stays for the stdlib's
 * own files (scope_find_in). */
static void note_shadow(struct arena *a, struct diag_engine *de, struct scope *s, const struct decl *user,
			const struct decl *std)
{
	struct diag *g = diag_warn(de, DIAG_SHADOW_IMPORT, user->name_loc,
				   "%s '%s' shadows the stdlib's %s '%s'", ast_decl_keyword[user->kind],
				   user->name, ast_decl_keyword[std->kind], std->name);

	diag_note(g, std->name_loc, "the stdlib's '%s' is declared here; the stdlib's own files still use it",
		  std->name);
	ARENA_GROW(a, s->shadowed, s->nshadowed, s->capshadowed);
	s->shadowed[s->nshadowed++] = std;
}

/* A user file's declaration against a stdlib one of the same name: the
 * user's wins, whichever was loaded first. False: a real duplicate. */
static bool try_shadow(struct arena *a, struct diag_engine *de, struct scope *s, const struct decl *d,
		       const struct decl *prev)
{
	bool d_std = is_stdlib_file(s, d->name_loc.file), prev_std = is_stdlib_file(s, prev->name_loc.file);

	if (d_std == prev_std || shadowed_named(s, d->name))
		return false;
	if (d_std) {	/* the user's declaration came first: it stays */
		note_shadow(a, de, s, prev, d);
		return true;
	}
	note_shadow(a, de, s, d, prev);
	for (size_t i = 0; i < s->nindex; i++)
		if (s->index[i] == prev)
			s->index[i] = d;
	for (size_t i = 0; i < s->n; i++)
		if (s->decls[i] == prev) {	/* the user's moves to the end: declaration order */
			memmove(&s->decls[i], &s->decls[i + 1], (s->n - i - 1) * sizeof *s->decls);
			s->decls[s->n - 1] = d;
			break;
		}
	return true;
}

static void add_decl(struct arena *a, struct diag_engine *de, struct scope *s, const struct decl *d)
{
	const struct decl *prev = scope_find(s, d->name);
	const char *why = clash_reason(d);

	if (prev && !why && try_shadow(a, de, s, d, prev))
		return;
	if (prev) {
		struct diag *g = diag_error(de, DIAG_DUPLICATE_DEFINITION, d->name_loc,
					    "'%s' is already defined", d->name);

		diag_note(g, prev->name_loc, "previous definition of '%s' is here", d->name);
		return;
	}
	if (why) {
		diag_error(de, DIAG_NAME_CLASH, d->name_loc,
			   "'%s' cannot be declared: it is %s", d->name, why);
		return;
	}
	insert(a, s, d);
}

struct scope *scope_build(struct arena *a, struct interner *in, struct diag_engine *de,
			  const struct program *p)
{
	struct scope *s = ARENA_NEW(a, struct scope);

	(void)in;
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->files[i]->file >= s->nfile_ids)
			s->nfile_ids = p->files[i]->file + 1;
	s->stdlib_file = ARENA_NEW_ARRAY(a, bool, s->nfile_ids ? s->nfile_ids : 1);
	for (size_t i = 0; i < p->nfiles; i++)
		s->stdlib_file[p->files[i]->file] = p->files[i]->stdlib;
	for (size_t i = 0; i < p->nfiles; i++)
		for (const struct decl *d = p->files[i]->decls; d; d = d->next)
			if (d->kind != DECL_IMPORT && d->name)
				add_decl(a, de, s, d);
	return s;
}
