/* SPDX-License-Identifier: MIT */
/*
 * stdlib_index.c - which stdlib file declares a name, for the note on an
 * undefined name ("'bf16_mixed' is declared in \"precision\": add import
 * \"precision\"").
 *
 * Built lazily, the first time a name is undefined: a correct program
 * never reads the stdlib folder beyond what it imports. The scan is
 * lexical (a line that starts with a declaration keyword and a name), not
 * a parse: the stdlib is ours and formatted that way, and a wrong entry
 * costs only a misleading note, never a wrong number. Files are visited
 * in sorted order, so the first declaring file is the same on every
 * machine.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/arena.h"
#include "lang/eval_impl.h"
#include "lang/intern.h"
#include "lang/source.h"
#include "lang/strbuf.h"
#include "lang/units.h"

struct stdlib_entry {
	const char *name;		/* interned */
	const char *import;		/* "models/llama" */
	enum decl_kind kind;
};

struct stdlib_index {
	struct stdlib_entry *e;
	size_t n, cap;
};

enum { STDLIB_MAX_DEPTH = 8 };

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *const decl_words[] = { [DECL_GPU] = "gpu", [DECL_PRECISION] = "precision",
					  [DECL_LAYER] = "layer", [DECL_MODEL] = "model",
					  [DECL_OPTIMIZER] = "optimizer", [DECL_LET] = "let" };

/* "layer swiglu_mlp(" -> DECL_LAYER and "swiglu_mlp". */
static void scan_line(struct eval *ev, struct stdlib_index *ix, const char *line, size_t len,
		      const char *import)
{
	for (size_t k = 0; k < sizeof decl_words / sizeof decl_words[0]; k++) {
		size_t w = decl_words[k] ? strlen(decl_words[k]) : 0;

		if (!w || len <= w + 1 || memcmp(line, decl_words[k], w) || line[w] != ' ')
			continue;
		size_t a = w + 1, b = a;

		while (b < len && (line[b] == '_' || (line[b] >= 'a' && line[b] <= 'z') ||
				   (line[b] >= 'A' && line[b] <= 'Z') || (line[b] >= '0' && line[b] <= '9')))
			b++;
		if (b == a)
			return;
		ARENA_GROW(ev->perm, ix->e, ix->n, ix->cap);
		ix->e[ix->n++] = (struct stdlib_entry){ intern(ev->interner, line + a, b - a), import,
							(enum decl_kind)k };
		return;
	}
}

static void scan_file(struct eval *ev, struct stdlib_index *ix, const char *path, const char *import)
{
	FILE *f = fopen(path, "rb");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f)
		return;
	while ((len = getline(&line, &cap, f)) > 0)
		scan_line(ev, ix, line, (size_t)len, import);
	free(line);
	fclose(f);
}

/* The *.mem files under @dir (recursively), sorted; @rel is the import
 * prefix ("models/"). */
static void scan_dir(struct eval *ev, struct stdlib_index *ix, const char *dir, const char *rel,
		     unsigned depth)
{
	DIR *d = depth < STDLIB_MAX_DEPTH ? opendir(dir) : NULL;
	const char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			ARENA_GROW(ev->perm, names, n, cap);
			names[n++] = arena_printf(ev->perm, "%s", de->d_name);
		}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		const char *path = arena_printf(ev->perm, "%s/%s", dir, names[i]);
		size_t len = strlen(names[i]);
		struct stat st;

		if (stat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			scan_dir(ev, ix, path, arena_printf(ev->perm, "%s%s/", rel, names[i]), depth + 1);
		else if (S_ISREG(st.st_mode) && len > 4 && !strcmp(names[i] + len - 4, ".mem"))
			scan_file(ev, ix, path, arena_printf(ev->perm, "%s%.*s", rel, (int)(len - 4), names[i]));
	}
}

static struct stdlib_index *index_of(struct eval *ev)
{
	if (!ev->stdlib_index) {
		ev->stdlib_index = ARENA_NEW(ev->perm, struct stdlib_index);
		if (ev->stdlib_dir)
			scan_dir(ev, ev->stdlib_index, ev->stdlib_dir, "", 0);
	}
	return ev->stdlib_index;
}

const char *eval_stdlib_import(struct eval *ev, const char *name, enum decl_kind kind)
{
	struct stdlib_index *ix = index_of(ev);

	for (size_t i = 0; i < ix->n; i++)
		if (ix->e[i].name == name && (kind == DECL__COUNT || ix->e[i].kind == kind))
			return ix->e[i].import;
	return NULL;
}

const char *eval_stdlib_suggest(struct eval *ev, const char *name, enum decl_kind kind, const char **import)
{
	struct stdlib_index *ix = index_of(ev);
	unsigned best_d = (unsigned)strlen(name) / 2 + 1;
	const char *best = NULL;

	best_d = best_d > 3 ? 3 : best_d;
	for (size_t i = 0; i < ix->n; i++) {
		unsigned dist;

		if (kind != DECL__COUNT && ix->e[i].kind != kind)
			continue;
		dist = unit_edit_distance(name, ix->e[i].name);
		if (dist < best_d) {
			best_d = dist;
			best = ix->e[i].name;
			*import = ix->e[i].import;
		}
	}
	return best;
}

bool eval_stdlib_at(struct eval *ev, size_t i, const char **name, enum decl_kind *kind, const char **import)
{
	struct stdlib_index *ix = index_of(ev);

	if (i >= ix->n)
		return false;
	*name = ix->e[i].name;
	*kind = ix->e[i].kind;
	*import = ix->e[i].import;
	return true;
}
