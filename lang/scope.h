/* SPDX-License-Identifier: MIT */
/*
 * scope.h - the program's global names.
 *
 * Every declaration of every loaded file (gpu, precision, train, layer,
 * model, optimizer, let) is one name in a single global namespace: the
 * language is declarative, so order and file do not matter. A name that a
 * user file (any file not found in the stdlib) declares shadows the
 * stdlib's declaration of it: the user's files see theirs, the stdlib's
 * files keep seeing their own (`scope_find_in`), and -Wshadow-import (off
 * by default) says so. Two declarations of one name otherwise are an
 * error that points at both (`duplicate-definition`); a declaration whose name is a unit spelling
 * (`GiB`, `s`), a dtype (`bf16`) or a builtin (`batch`, `tp`, `none`, ...)
 * is an error too (`name-clash`), because every later use would be
 * ambiguous.
 *
 * Lookups compare interned pointers; listing walks declaration order
 * (files in import order, then source order), never hash order.
 */
#ifndef MEMC_LANG_SCOPE_H
#define MEMC_LANG_SCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/ast.h"

struct arena;
struct interner;
struct diag_engine;
struct program;

struct scope;

/* Build the global table; report duplicates and clashes. Never NULL. */
struct scope *scope_build(struct arena *a, struct interner *in, struct diag_engine *de,
			  const struct program *p);
/* The declaration named @name (interned), or NULL. */
const struct decl *scope_find(const struct scope *s, const char *name);
/* The declaration named @name of kind @kind, or NULL. */
const struct decl *scope_find_kind(const struct scope *s, const char *name, enum decl_kind kind);
/* What @name means where file @file uses it: as scope_find(), except that
 * a stdlib file keeps the stdlib declaration a user file shadows. */
const struct decl *scope_find_in(const struct scope *s, const char *name, uint32_t file);
const struct decl *scope_find_kind_in(const struct scope *s, const char *name, enum decl_kind kind,
				      uint32_t file);
/* All declarations in declaration order. */
size_t scope_count(const struct scope *s);
const struct decl *scope_at(const struct scope *s, size_t i);
/* Closest declared name to @name (edit distance), optionally of one kind
 * (DECL__COUNT: any), for did-you-mean notes; NULL if none is close. */
const char *scope_suggest(const struct scope *s, const char *name, enum decl_kind kind);

#endif
