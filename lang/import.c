/* SPDX-License-Identifier: MIT */
/*
 * import.c - resolve imports along the search path, load each file once,
 * find cycles (see import.h for the rules).
 *
 * Each loaded file remembers two folders: the real one, used to open the
 * files it imports, and the displayed one, used to name them in
 * diagnostics, so that "<stdlib>/models/llama.mem" imports
 * "<stdlib>/layers/norm.mem" and no absolute path is ever printed.
 */
/* realpath() is XSI, not in the _POSIX_C_SOURCE set the Makefile selects. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/arena.h"
#include "lang/confusable.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/lazy.h"
#include "lang/parse.h"
#include "lang/source.h"

struct loader {
	struct arena *arena;
	struct interner *interner;
	struct src_table *src;
	struct diag_engine *diag;
	const struct import_opts *opts;
	struct file_ast **files;
	size_t nfiles, cap;
	unsigned depth;
	bool depth_reported;
	bool lazy;			/* prescan stdlib imports (lang/lazy.h) */
	struct real_dir *real_dirs;	/* folders already resolved by real_path() */
	struct file_ast **prescanned;
	size_t nprescanned, capprescanned;
	size_t nstdlib, nverified;	/* stdlib files loaded; those import_opts.verified vouches for */
};

/* A folder and its realpath(), for real_path(). */
struct real_dir {
	const char *dir, *real;		/* real NULL: realpath() failed */
	struct real_dir *next;
};

/* What import.c keeps per loaded file, hung on src_file.user. */
struct file_info {
	const char *dir;		/* folder on disk, for opening imports */
	const char *display_dir;	/* folder as shown, for naming them */
	struct file_ast *ast;
};

static const char *dir_of(struct arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return arena_strndup(a, path, (size_t)(slash - path));
}

static const char *join(struct arena *a, const char *dir, const char *name)
{
	if (strcmp(dir, ".") == 0)
		return arena_strdup(a, name);
	return arena_concat(a, dir, "/", name, (char *)NULL);
}

/* Whether @path names anything at all. A FIFO, device or directory found
 * here is the file the import means: src_load() then refuses it at the
 * import, without blocking, rather than the search going on silently to
 * a same-named file further down the path (the stdlib's, say). */
/* Whether @path exists: asked once per run for the compilations sharing
 * an import cache (each import tries the same folders in each). */
static bool exists(const struct loader *ld, const char *path)
{
	struct import_cache *c = ld->opts ? ld->opts->cache : NULL;
	struct stat st;
	bool yes;

	if (import_cache_exists(c, path, &yes))
		return yes;
	yes = stat(path, &st) == 0;
	import_cache_keep_exists(c, path, yes);
	return yes;
}

/* Each folder resolved once per compilation, and once per run for the
 * compilations sharing an import cache (a -Wcapacity search's context
 * and verifications resolve the stdlib's folders again otherwise). */
static const char *real_dir_of(struct loader *ld, const char *dir)
{
	struct import_cache *c = ld->opts ? ld->opts->cache : NULL;
	struct real_dir *r;
	const char *kept;

	for (r = ld->real_dirs; r; r = r->next)
		if (strcmp(r->dir, dir) == 0)
			return r->real;
	char *rp = NULL;

	if (!import_cache_real_dir(c, dir, &kept))
		kept = rp = realpath(dir, NULL);
	r = ARENA_NEW(ld->arena, struct real_dir);
	r->dir = arena_strdup(ld->arena, dir);
	r->real = kept ? arena_strdup(ld->arena, kept) : NULL;
	r->next = ld->real_dirs;
	ld->real_dirs = r;
	import_cache_keep_real_dir(c, dir, r->real);
	free(rp);
	return r->real;
}

/*
 * realpath(@path), in the arena, or NULL. realpath() pays a readlink per
 * component, twice per file with src_load's; a job's dozen imports share
 * a few folders, so each folder is resolved once and the file itself
 * only lstat()ed: a final component that is not a symlink, "." or ".."
 * resolves to the real folder joined with it, as realpath() would.
 */
static const char *real_path(struct loader *ld, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	struct stat st;

	if (slash && *base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0 &&
	    lstat(path, &st) == 0 && !S_ISLNK(st.st_mode)) {
		const char *dir = slash == path ? "/" : arena_strndup(ld->arena, path, (size_t)(slash - path));
		const char *real = real_dir_of(ld, dir);

		if (real)
			return arena_concat(ld->arena, real, strcmp(real, "/") ? "/" : "", base, (char *)NULL);
	}
	char *rp = realpath(path, NULL);
	const char *res = rp ? arena_strdup(ld->arena, rp) : NULL;

	free(rp);
	return res;
}

static const char *with_extension(struct arena *a, const char *name)
{
	const char *base = strrchr(name, '/');
	const char *dot = strrchr(base ? base : name, '.');

	return dot && strcmp(dot, ".mem") == 0 ? name : arena_concat(a, name, ".mem", (char *)NULL);
}

/* One candidate folder: on success fill *path and *display. */
static bool try_dir(struct loader *ld, const char *dir, const char *display_dir, const char *name,
		    const char **path, const char **display)
{
	const char *p = join(ld->arena, dir, name);

	if (!exists(ld, p))
		return false;
	*path = p;
	*display = join(ld->arena, display_dir, name);
	return true;
}

static void report_not_found(struct loader *ld, const struct file_info *from, const char *name,
			     struct loc site, bool local_only)
{
	struct diag *d = diag_error(ld->diag, DIAG_IMPORT_NOT_FOUND, site, "cannot find '%s'", name);
	struct strbuf_lite { char buf[2048]; size_t n; } sb = { .n = 0 };

#define ADD(...) (sb.n += (size_t)snprintf(sb.buf + sb.n, sb.n < sizeof sb.buf ? sizeof sb.buf - sb.n : 0, __VA_ARGS__))
	ADD("searched %s", from ? from->display_dir : ".");
	if (!local_only) {
		for (size_t i = 0; i < ld->opts->ndirs; i++)
			ADD(", %s", ld->opts->dirs[i]);
		if (ld->opts->stdlib_dir)
			ADD(", <stdlib>");
	}
#undef ADD
	diag_note(d, NO_LOC, "%s", sb.buf);
}

static bool resolve(struct loader *ld, const struct file_info *from, const char *raw, struct loc site,
		    const char **path, const char **display)
{
	const char *name = with_extension(ld->arena, raw);
	const char *dir = from ? from->dir : ".", *ddir = from ? from->display_dir : ".";

	if (name[0] == '/') {
		if (!exists(ld, name))
			return report_not_found(ld, from, name, site, true), false;
		*path = *display = name;
		return true;
	}
	bool local_only = strncmp(name, "./", 2) == 0 || strncmp(name, "../", 3) == 0;

	if (try_dir(ld, dir, ddir, name, path, display))
		return true;
	for (size_t i = 0; !local_only && i < ld->opts->ndirs; i++)
		if (try_dir(ld, ld->opts->dirs[i], ld->opts->dirs[i], name, path, display))
			return true;
	if (!local_only && ld->opts->stdlib_dir &&
	    try_dir(ld, ld->opts->stdlib_dir, IMPORT_STDLIB_DISPLAY, name, path, display))
		return true;
	report_not_found(ld, from, raw, site, local_only);
	return false;
}

/* @f is ACTIVE further up; @site is the import that reached it again. */
static void report_cycle(struct loader *ld, struct src_file *f, struct loc site)
{
	struct diag *d = diag_error(ld->diag, DIAG_IMPORT_CYCLE, site,
				    "'%s' imports itself through this import", f->display_name);
	unsigned guard = 0;

	for (struct loc at = site; at.file && guard++ <= IMPORT_MAX_DEPTH;) {
		struct src_file *g = src_get(ld->src, at.file);

		if (g == f)
			break;
		diag_note(d, g->included_from, "'%s' is imported from here", g->display_name);
		at = g->included_from;
	}
}

static void add_program_file(struct loader *ld, struct file_ast *ast)
{
	ARENA_GROW(ld->arena, ld->files, ld->nfiles, ld->cap);
	ld->files[ld->nfiles++] = ast;
}

static struct file_ast *load_file(struct loader *ld, const char *path, const char *display,
				  const char *display_dir, struct loc site);

static void load_imports(struct loader *ld, struct src_file *f, struct file_info *info)
{
	for (struct decl *d = info->ast->decls; d; d = d->next) {
		const char *path, *display;

		if (d->kind != DECL_IMPORT || diag_too_many(ld->diag))
			continue;
		if (resolve(ld, info, d->import.path, d->import.path_loc, &path, &display))
			load_file(ld, path, display, dir_of(ld->arena, display), d->import.path_loc);
	}
	(void)f;
}

/* A root named "-" is standard input, shown as <stdin>; it has no folder
 * of its own, so its imports are looked up from the current one. */
static struct src_file *load_source(struct loader *ld, const char *path, const char *display,
				    struct loc site, const char *real)
{
	if (site.file == 0 && strcmp(path, "-") == 0)
		return src_load_fd(ld->src, ld->diag, 0, IMPORT_STDIN_NAME);
	return src_load_real(ld->src, ld->diag, path, display, site, real);
}

/* The entry of the stdlib file @f, shown as @display, if it is one that
 * checked clean when memc was built: same path under the stdlib, same
 * bytes; else NULL. */
static const struct stdlib_digest *verified_entry(const struct import_opts *o, const char *display,
						  uint64_t digest)
{
	const char *name = display + strlen(IMPORT_STDLIB_DISPLAY) + 1;
	size_t lo = 0, hi = o ? o->nverified : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(o->verified[mid].name, name);

		if (c == 0)
			return o->verified[mid].digest == digest ? &o->verified[mid] : NULL;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The cache shared with other compilations, for stdlib file @path (not
 * one whose text comes from memory); NULL: none. */
static struct import_cache *file_cache(const struct loader *ld, const char *path)
{
	const char *over = ld->src->overlay_path;

	return ld->opts && (!over || strcmp(path, over) != 0) ? ld->opts->cache : NULL;
}

/* A stdlib file: as another compilation sharing the import cache read it
 * (the same run of memc), else from disk, then kept for the next; its
 * digest in *digest. */
static struct src_file *load_stdlib(struct loader *ld, const char *path, const char *display,
				    struct loc site, const char *real, uint64_t *digest)
{
	struct import_cache *c = real ? file_cache(ld, path) : NULL;
	const char *text;
	size_t len;

	if (import_cache_file(c, real, &text, &len, digest))
		return src_add_loaded(ld->src, display, text, len, real, site);
	struct src_file *f = load_source(ld, path, display, site, real);

	if (f) {
		*digest = src_digest(f->text, f->len);
		import_cache_keep_file(c, f, *digest);
	}
	return f;
}

static struct file_ast *load_file(struct loader *ld, const char *path, const char *display,
				  const char *display_dir, struct loc site)
{
	bool is_stdin = site.file == 0 && strcmp(path, "-") == 0;
	const char *rp = is_stdin ? NULL : real_path(ld, path);
	struct src_file *f = rp ? src_find_real(ld->src, rp) : NULL;

	if (f) {
		if (f->state == SRC_ACTIVE)
			report_cycle(ld, f, site);
		return f->user ? ((struct file_info *)f->user)->ast : NULL;
	}
	if (ld->depth == IMPORT_MAX_DEPTH) {
		if (!ld->depth_reported)
			diag_error(ld->diag, DIAG_IMPORT_DEPTH, site,
				   "imports are nested more than %d files deep", IMPORT_MAX_DEPTH);
		ld->depth_reported = true;
		return NULL;
	}
	bool in_stdlib = site.file != 0 && import_is_stdlib_name(display);
	uint64_t digest = 0;

	f = in_stdlib ? load_stdlib(ld, path, display, site, rp, &digest) : load_source(ld, path, display, site, rp);
	if (!f)
		return NULL;

	struct file_info *info = ARENA_NEW(ld->arena, struct file_info);

	info->dir = dir_of(ld->arena, path);
	info->display_dir = display_dir;
	info->ast = NULL;
	const struct stdlib_digest *v = in_stdlib ? verified_entry(ld->opts, display, digest) : NULL;

	ld->nstdlib += in_stdlib;
	ld->nverified += v != NULL;
	if (ld->lazy && v && v->decls) {	/* prescanned when memc was built */
		info->ast = lazy_from_index(ld->arena, ld->interner, f, v->decls, v->ndecls);
		info->ast->index = v->decls;
	}
	if (ld->lazy && in_stdlib && (info->ast || (info->ast = lazy_prescan(ld->arena, ld->interner, f)))) {
		ARENA_GROW(ld->arena, ld->prescanned, ld->nprescanned, ld->capprescanned);
		ld->prescanned[ld->nprescanned++] = info->ast;
	}
	if (!info->ast)
		info->ast = parse_file(ld->arena, ld->interner, ld->diag, f);
	info->ast->verified = v != NULL;
	f->user = info;
	f->state = SRC_ACTIVE;
	ld->depth++;
	load_imports(ld, f, info);
	ld->depth--;
	f->state = SRC_DONE;
	add_program_file(ld, info->ast);
	return info->ast;
}

static struct program *load_program(struct arena *a, struct interner *in, struct src_table *src,
				    struct diag_engine *de, const char *const *roots, size_t nroots,
				    const struct import_opts *opts, bool lazy)
{
	struct loader ld = { .arena = a, .interner = in, .src = src, .diag = de, .opts = opts,
			     .lazy = lazy };
	struct program *p = ARENA_NEW(a, struct program);

	import_cache_count_load(opts ? opts->cache : NULL);
	for (size_t i = 0; i < nroots; i++) {
		struct file_ast *f = load_file(&ld, roots[i], roots[i], dir_of(a, roots[i]), NO_LOC);

		if (!p->root)
			p->root = f;
	}
	p->files = ld.files;
	p->nfiles = ld.nfiles;
	p->stdlib_dir = opts ? opts->stdlib_dir : NULL;
	p->stdlib_verified = lazy && ld.nstdlib > 0 && ld.nverified == ld.nstdlib;
	p->cache = opts ? opts->cache : NULL;
	if (ld.nprescanned && !diag_error_count(de))
		lazy_parse_reached(a, in, de, src, p, ld.prescanned, ld.nprescanned,
				   opts ? opts->reach_extra : NULL);
	/* Here, where the whole program is first seen, for every command. */
	confusable_check(a, de, p);
	return p;
}

/* memc list shows every declaration in scope, reached or not: no stubs. */
struct program *import_load_many(struct arena *a, struct interner *in, struct src_table *src,
				 struct diag_engine *de, const char *const *roots, size_t nroots,
				 const struct import_opts *opts)
{
	return load_program(a, in, src, de, roots, nroots, opts, false);
}

struct program *import_load(struct arena *a, struct interner *in, struct src_table *src,
			    struct diag_engine *de, const char *root_path,
			    const struct import_opts *opts)
{
	return load_program(a, in, src, de, &root_path, 1, opts, true);
}

bool import_is_stdlib_name(const char *display_name)
{
	size_t n = strlen(IMPORT_STDLIB_DISPLAY);

	return strncmp(display_name, IMPORT_STDLIB_DISPLAY, n) == 0 && display_name[n] == '/';
}
