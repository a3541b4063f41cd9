/* SPDX-License-Identifier: MIT */
/*
 * test_import.c - loading a root file and its imports from a real folder
 * tree made with mkdtemp (and removed again by the teardown): the search
 * order (importer's folder, then the -I / MEMC_PATH folders in order,
 * then the stdlib), the optional ".mem", "./x" looked up next to the
 * importer only, include-once by real path, cycles, missing files and the
 * nesting cap. Diagnostics are kept in the engine, never printed.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "lang/check.h"
#include "lang/import.h"

enum { MAX_CREATED = 256 };

/* root: the mkdtemp folder; created: files and folders made, in order. */
#define FX_FIELDS                        \
	char root[256];                  \
	char *created[MAX_CREATED];      \
	unsigned ncreated;               \
	const char *dirs[4];             \
	struct import_opts opts;
#include "lang_fixture.h"

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	if (fx_setup(state))
		return -1;
	struct fixture *fx = *state;

	snprintf(fx->root, sizeof fx->root, "%s/memc-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->root)) {
		fx_teardown(state);
		return -1;
	}
	return 0;
}

/* Remove what the test made, newest first (files before their folders). */
static int teardown(void **state)
{
	struct fixture *fx = *state;
	int rc = 0;

	while (fx->ncreated) {
		char *p = fx->created[--fx->ncreated];
		struct stat st;

		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rc |= rmdir(p);
		else
			rc |= unlink(p);
		free(p);
	}
	rc |= rmdir(fx->root);
	fx_teardown(state);
	return rc ? -1 : 0;
}

static const char *path_of(struct fixture *fx, const char *rel)
{
	return arena_printf(&fx->arena, "%s/%s", fx->root, rel);
}

static void remember(struct fixture *fx, const char *abs)
{
	assert_true(fx->ncreated < MAX_CREATED);
	fx->created[fx->ncreated++] = strdup(abs);
}

/* Make the folders of @rel (relative to the root), then the file. */
static void put(struct fixture *fx, const char *rel, const char *text)
{
	char buf[512];
	struct stat st;

	snprintf(buf, sizeof buf, "%s/%s", fx->root, rel);
	for (char *s = buf + strlen(fx->root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (stat(buf, &st) != 0) {
			assert_int_equal(mkdir(buf, 0700), 0);
			remember(fx, buf);
		}
		*s = '/';
	}
	FILE *f = fopen(buf, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	remember(fx, buf);
}

static void set_dirs(struct fixture *fx, unsigned n, const char *const *rel, bool with_stdlib)
{
	for (unsigned i = 0; i < n; i++)
		fx->dirs[i] = path_of(fx, rel[i]);
	fx->opts.dirs = fx->dirs;
	fx->opts.ndirs = n;
	fx->opts.stdlib_dir = with_stdlib ? path_of(fx, "std") : NULL;
}

static struct program *load(struct fixture *fx, const char *rel_root)
{
	struct program *p = import_load(&fx->arena, fx->in, fx->t, fx->de, path_of(fx, rel_root), &fx->opts);

	assert_non_null(p);
	return p;
}

/* The display name of the file that declares @name, or NULL. */
static const char *file_declaring(struct fixture *fx, const struct program *p, const char *name)
{
	for (size_t i = 0; i < p->nfiles; i++)
		for (const struct decl *d = p->files[i]->decls; d; d = d->next)
			if (d->name && !strcmp(d->name, name))
				return src_get(fx->t, p->files[i]->file)->display_name;
	return NULL;
}

static unsigned count_notes(const struct diag *d)
{
	unsigned n = 0;

	for (const struct diag_note *x = d->notes; x; x = x->next)
		n++;
	return n;
}

/* ---- resolution order ---- */

static void search_order(void **state)
{
	struct fixture *fx = *state;
	static const char *const dirs[] = { "inc", "mpath" };

	/* each folder holds its own version of the files; the let inside says
	 * which folder it came from */
	put(fx, "proj/main.mem",
	    "import \"all\"\nimport \"lib/two\"\nimport \"three\"\nimport \"only_std\"\n");
	put(fx, "proj/all.mem", "let all_local = 1\n");
	put(fx, "inc/all.mem", "let all_inc = 1\n");
	put(fx, "mpath/all.mem", "let all_mpath = 1\n");
	put(fx, "std/all.mem", "let all_std = 1\n");
	put(fx, "inc/lib/two.mem", "let two_inc = 1\n");
	put(fx, "mpath/lib/two.mem", "let two_mpath = 1\n");
	put(fx, "std/lib/two.mem", "let two_std = 1\n");
	put(fx, "mpath/three.mem", "let three_mpath = 1\n");
	put(fx, "std/three.mem", "let three_std = 1\n");
	put(fx, "std/only_std.mem", "import \"sibling\"\nlet only_std = 1\n");
	put(fx, "std/sibling.mem", "let sibling_std = 1\n");
	put(fx, "proj/sibling.mem", "let sibling_local = 1\n");	/* not the stdlib file's folder */
	set_dirs(fx, 2, dirs, true);

	struct program *p = load(fx, "proj/main.mem");

	fx_assert_no_diags(fx);
	assert_int_equal(p->nfiles, 6);
	assert_non_null(p->root);
	assert_ptr_equal(p->files[p->nfiles - 1], p->root);	/* dependencies first */
	assert_non_null(file_declaring(fx, p, "all_local"));
	assert_null(file_declaring(fx, p, "all_inc"));
	assert_non_null(file_declaring(fx, p, "two_inc"));
	assert_null(file_declaring(fx, p, "two_mpath"));
	assert_non_null(file_declaring(fx, p, "three_mpath"));
	assert_null(file_declaring(fx, p, "three_std"));
	/* stdlib files are shown as <stdlib>/..., and their own imports are
	 * looked up next to them first */
	assert_string_equal(file_declaring(fx, p, "only_std"), "<stdlib>/only_std.mem");
	assert_string_equal(file_declaring(fx, p, "sibling_std"), "<stdlib>/sibling.mem");
	assert_null(file_declaring(fx, p, "sibling_local"));
	assert_string_equal(file_declaring(fx, p, "two_inc"), arena_printf(&fx->arena, "%s/lib/two.mem", fx->dirs[0]));
}

static void extension_is_optional(void **state)
{
	struct fixture *fx = *state;

	put(fx, "main.mem", "import \"a\"\nimport \"b.mem\"\n");
	put(fx, "a.mem", "let a = 1\n");
	put(fx, "b.mem", "let b = 1\n");
	set_dirs(fx, 0, NULL, false);

	struct program *p = load(fx, "main.mem");

	fx_assert_no_diags(fx);
	assert_int_equal(p->nfiles, 3);
	assert_non_null(file_declaring(fx, p, "a"));
	assert_non_null(file_declaring(fx, p, "b"));
}

static void dot_slash_is_local_only(void **state)
{
	struct fixture *fx = *state;
	static const char *const dirs[] = { "inc" };

	put(fx, "proj/main.mem", "import \"./elsewhere\"\nimport \"./here\"\n");
	put(fx, "proj/here.mem", "let here = 1\n");
	put(fx, "inc/elsewhere.mem", "let elsewhere = 1\n");
	put(fx, "std/elsewhere.mem", "let elsewhere_std = 1\n");
	set_dirs(fx, 1, dirs, true);

	struct program *p = load(fx, "proj/main.mem");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "import-not-found");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 1);
	assert_non_null(strstr(diag_message(d), "elsewhere"));
	/* the note lists only the importer's folder */
	assert_int_equal(count_notes(d), 1);
	assert_null(strstr(d->notes->msg, fx->dirs[0]));
	assert_null(strstr(d->notes->msg, "<stdlib>"));
	assert_non_null(strstr(d->notes->msg, "/proj"));
	assert_int_equal(p->nfiles, 2);
	assert_non_null(file_declaring(fx, p, "here"));
}

/* ---- include-once ---- */

static void same_file_loads_once(void **state)
{
	struct fixture *fx = *state;
	static const char *const dirs[] = { "proj/lib" };

	put(fx, "proj/main.mem",
	    "import \"lib/common\"\n"
	    "import \"./lib/common.mem\"\n"
	    "import \"lib/../lib/common\"\n"
	    "import \"common\"\n"		/* through -I proj/lib */
	    "import \"user\"\n");
	put(fx, "proj/lib/common.mem", "let common = 1\n");
	put(fx, "proj/user.mem", "import \"lib/common\"\nlet user = 1\n");
	set_dirs(fx, 1, dirs, false);

	struct program *p = load(fx, "proj/main.mem");

	fx_assert_no_diags(fx);
	assert_int_equal(p->nfiles, 3);
	unsigned ncommon = 0;
	for (size_t i = 0; i < p->nfiles; i++)
		ncommon += p->files[i]->decls && p->files[i]->decls->name &&
			   !strcmp(p->files[i]->decls->name, "common");
	assert_int_equal(ncommon, 1);
	/* dependencies before the files that import them */
	assert_string_equal(p->files[0]->decls->name, "common");
	assert_ptr_equal(p->files[2], p->root);
}

static void symlink_is_the_same_file(void **state)
{
	struct fixture *fx = *state;

	put(fx, "main.mem", "import \"real\"\nimport \"link\"\n");
	put(fx, "real.mem", "let real = 1\n");
	assert_int_equal(symlink(path_of(fx, "real.mem"), path_of(fx, "link.mem")), 0);
	remember(fx, path_of(fx, "link.mem"));
	set_dirs(fx, 0, NULL, false);

	struct program *p = load(fx, "main.mem");

	fx_assert_no_diags(fx);
	assert_int_equal(p->nfiles, 2);
}

/* ---- cycles, missing files, depth ---- */

static void three_file_cycle(void **state)
{
	struct fixture *fx = *state;

	put(fx, "a.mem", "import \"b\"\nlet a = 1\n");
	put(fx, "b.mem", "let b = 1\nimport \"c\"\n");
	put(fx, "c.mem", "\n\nimport \"a\"\nlet c = 1\n");
	set_dirs(fx, 0, NULL, false);

	struct program *p = load(fx, "a.mem");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "import-cycle");
	/* at the import that closes the cycle, in c.mem line 3 */
	assert_non_null(strstr(diag_loc_file(fx->de, d->loc), "c.mem"));
	assert_int_equal(diag_loc_line(fx->de, d->loc), 3);
	assert_int_equal(count_notes(d), 2);
	/* the chain: c is imported from b (line 2), b from a (line 1) */
	assert_non_null(strstr(diag_loc_file(fx->de, d->notes->loc), "b.mem"));
	assert_int_equal(diag_loc_line(fx->de, d->notes->loc), 2);
	assert_non_null(strstr(diag_loc_file(fx->de, d->notes->next->loc), "a.mem"));
	assert_int_equal(diag_loc_line(fx->de, d->notes->next->loc), 1);
	/* every file still loads, once */
	assert_int_equal(p->nfiles, 3);
}

static void self_import_is_a_cycle(void **state)
{
	struct fixture *fx = *state;

	put(fx, "self.mem", "import \"self\"\n");
	set_dirs(fx, 0, NULL, false);
	load(fx, "self.mem");

	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "import-cycle");
	assert_int_equal(count_notes(d), 0);
}

static void missing_import(void **state)
{
	struct fixture *fx = *state;
	static const char *const dirs[] = { "inc", "mpath" };

	put(fx, "proj/main.mem", "let x = 1\nimport \"models/nowhere\"\n");
	put(fx, "inc/keep.mem", "");
	put(fx, "mpath/keep.mem", "");
	put(fx, "std/keep.mem", "");
	set_dirs(fx, 2, dirs, true);

	struct program *p = load(fx, "proj/main.mem");
	const struct diag *d = diag_first(fx->de);

	assert_non_null(d);
	assert_null(d->next);
	assert_string_equal(diag_name(d->id), "import-not-found");
	assert_int_equal(diag_loc_line(fx->de, d->loc), 2);
	assert_non_null(strstr(diag_message(d), "'models/nowhere'"));
	assert_int_equal(count_notes(d), 1);
	/* every folder, in search order */
	const char *note = d->notes->msg;
	const char *at_proj = strstr(note, "/proj");
	const char *at_inc = strstr(note, fx->dirs[0]);
	const char *at_mpath = strstr(note, fx->dirs[1]);
	const char *at_std = strstr(note, "<stdlib>");
	assert_non_null(at_proj);
	assert_non_null(at_inc);
	assert_non_null(at_mpath);
	assert_non_null(at_std);
	assert_true(at_proj < at_inc && at_inc < at_mpath && at_mpath < at_std);
	/* the root itself still loads */
	assert_int_equal(p->nfiles, 1);
	assert_non_null(p->root);
}

static void missing_root(void **state)
{
	struct fixture *fx = *state;

	set_dirs(fx, 0, NULL, false);
	struct program *p = load(fx, "absent.mem");

	assert_null(p->root);
	assert_int_equal(p->nfiles, 0);
	assert_non_null(diag_first(fx->de));
	assert_string_equal(diag_name(diag_first(fx->de)->id), "file-not-found");
}

/* f0 imports f1 ... imports f<n-1>. */
static void chain(struct fixture *fx, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char name[32], text[64];

		snprintf(name, sizeof name, "f%u.mem", i);
		if (i + 1 < n)
			snprintf(text, sizeof text, "import \"f%u\"\nlet v%u = 1\n", i + 1, i);
		else
			snprintf(text, sizeof text, "let v%u = 1\n", i);
		put(fx, name, text);
	}
	set_dirs(fx, 0, NULL, false);
}

static void depth_cap_allows_the_limit(void **state)
{
	struct fixture *fx = *state;

	chain(fx, IMPORT_MAX_DEPTH);
	struct program *p = load(fx, "f0.mem");

	fx_assert_no_diags(fx);
	assert_int_equal(p->nfiles, IMPORT_MAX_DEPTH);
}

static void depth_cap(void **state)
{
	struct fixture *fx = *state;

	chain(fx, IMPORT_MAX_DEPTH + 3);
	struct program *p = load(fx, "f0.mem");

	assert_int_equal(fx_count_diags(fx), 1);
	const struct diag *d = diag_first(fx->de);
	assert_string_equal(diag_name(d->id), "import-depth");
	/* at the import of the first file past the limit */
	char want[32];
	snprintf(want, sizeof want, "f%u.mem", IMPORT_MAX_DEPTH - 1);
	assert_non_null(strstr(diag_loc_file(fx->de, d->loc), want));
	assert_int_equal(p->nfiles, IMPORT_MAX_DEPTH);
}

static void import_load_many_shares_files(void **state)
{
	struct fixture *fx = *state;

	put(fx, "x.mem", "import \"shared\"\nlet x = 1\n");
	put(fx, "y.mem", "import \"shared\"\nlet y = 1\n");
	put(fx, "shared.mem", "let shared = 1\n");
	set_dirs(fx, 0, NULL, false);

	const char *roots[] = { path_of(fx, "missing.mem"), path_of(fx, "x.mem"), path_of(fx, "y.mem") };
	struct program *p = import_load_many(&fx->arena, fx->in, fx->t, fx->de, roots, 3, &fx->opts);

	assert_int_equal(fx_count_diags(fx), 1);	/* missing.mem */
	assert_int_equal(p->nfiles, 3);
	assert_non_null(p->root);
	assert_string_equal(p->root->decls->next->name, "x");
}

/* ---- stdlib files verified at build time (import_opts.verified) ---- */

/* A template whose static walk (every branch, parameters unknown) finds a
 * typo the job's own walk does not reach. */
static const char broken_lib[] = "layer norm(hidden: count, wide: bool) {\n"
				 "  param w : [hidden]\n"
				 "  if wide {\n"
				 "    saves s : [hidden] fp33\n"
				 "  }\n"
				 "}\n";

/* Load a root that reaches std/lib.mem's template, with @digest as the
 * build's digest of lib.mem, and check its declarations: the number of
 * diagnostics, and whether the program counted as verified. */
static unsigned check_with_digest(struct fixture *fx, uint64_t digest, bool *verified)
{
	const struct stdlib_digest table[] = { { "lib.mem", digest, NULL, 0 } };

	put(fx, "std/lib.mem", broken_lib);
	put(fx, "main.mem", "import \"lib\"\nlet n = norm(hidden = 8, wide = false)\n");
	set_dirs(fx, 0, NULL, true);
	fx->opts.verified = table;
	fx->opts.nverified = 1;

	struct program *p = load(fx, "main.mem");

	*verified = p->stdlib_verified;
	check_program_decls(&fx->arena, fx->in, fx->de, fx->t, p);
	return fx_count_diags(fx);
}

static uint64_t digest_of(const char *text)
{
	return src_digest(text, strlen(text));
}

static void verified_stdlib_skips_the_static_walk(void **state)
{
	struct fixture *fx = *state;
	bool verified = false;

	/* a table only ever holds files that checked clean: this one is a lie,
	 * which is how the test sees that the walk is skipped */
	assert_int_equal(check_with_digest(fx, digest_of(broken_lib), &verified), 0);
	assert_true(verified);
}

static void edited_stdlib_is_checked_in_full(void **state)
{
	struct fixture *fx = *state;
	bool verified = true;

	assert_int_equal(check_with_digest(fx, digest_of(broken_lib) ^ 1, &verified), 1);
	assert_false(verified);
	fx_only_diag(fx, "undefined-name");
}

static void digest_follows_every_byte(void **state)
{
	(void)state;
	char a[] = "layer x(h: count) { param w : [h] }\n";
	uint64_t d = digest_of(a);

	for (size_t i = 0; a[i]; i++) {
		a[i] ^= 0x20;
		assert_true(digest_of(a) != d);
		a[i] ^= 0x20;
	}
	assert_true(src_digest(a, strlen(a) - 1) != d);
	assert_true(digest_of(a) == d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(search_order, setup, teardown),
		cmocka_unit_test_setup_teardown(extension_is_optional, setup, teardown),
		cmocka_unit_test_setup_teardown(dot_slash_is_local_only, setup, teardown),
		cmocka_unit_test_setup_teardown(same_file_loads_once, setup, teardown),
		cmocka_unit_test_setup_teardown(symlink_is_the_same_file, setup, teardown),
		cmocka_unit_test_setup_teardown(three_file_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(self_import_is_a_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_import, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_root, setup, teardown),
		cmocka_unit_test_setup_teardown(depth_cap_allows_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(depth_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(import_load_many_shares_files, setup, teardown),
		cmocka_unit_test_setup_teardown(verified_stdlib_skips_the_static_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(edited_stdlib_is_checked_in_full, setup, teardown),
		cmocka_unit_test(digest_follows_every_byte),
	};

	return cmocka_run_group_tests_name("import", tests, NULL, NULL);
}
