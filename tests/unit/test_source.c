/* SPDX-License-Identifier: MIT */
/*
 * test_source.c - loading (files, descriptors), validation, and offset ->
 * line/column mapping with tabs, CJK, emoji and every kind of line end.
 */
#include <fcntl.h>
#include <unistd.h>

#include "lang_fixture.h"

static struct src_file *add(struct fixture *fx, const char *name, const char *text)
{
	return src_add_string(fx->t, fx->de, name, text, strlen(text));
}

static void builtin_is_file_zero(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = src_get(fx->t, 0);

	assert_string_equal(f->display_name, "<builtin>");
	assert_int_equal(src_nlines(f), 1);
	struct src_file *g = add(fx, "a.mem", "x");
	assert_int_equal(g->id, 1);
	assert_ptr_equal(src_get(fx->t, 1), g);
	assert_null(g->real_path);
	assert_int_equal(g->included_from.file, 0);
}

static void lines_and_columns(void **state)
{
	struct fixture *fx = *state;
	/* line 2: tab = 1 column; line 3: 2 CJK code points of 3 bytes each;
	 * line 4: a 4-byte emoji. */
	const char *text = "ab\n\tx = 1\n日本 y\n🙂z\n";
	struct src_file *f = add(fx, "t.mem", text);

	assert_non_null(f);
	assert_int_equal(src_nlines(f), 5);
	assert_int_equal(src_line_of(f, 0), 1);
	assert_int_equal(src_col_of(f, 1), 2);
	assert_int_equal(src_line_of(f, 2), 1);		/* the '\n' ends line 1 */
	assert_int_equal(src_line_of(f, 3), 2);
	assert_int_equal(src_col_of(f, 4), 2);		/* 'x' after the tab */

	uint32_t y = (uint32_t)(strstr(text, "y") - text);
	assert_int_equal(src_line_of(f, y), 3);
	assert_int_equal(src_col_of(f, y), 4);		/* 日, 本, space, y */

	uint32_t z = (uint32_t)(strstr(text, "z") - text);
	assert_int_equal(src_line_of(f, z), 4);
	assert_int_equal(src_col_of(f, z), 2);

	assert_int_equal(src_line_of(f, f->len), 5);	/* EOF: the empty last line */
	assert_int_equal(src_col_of(f, f->len), 1);
	assert_int_equal(src_line_of(f, f->len + 100), 5);
}

static void line_text_strips_newline_and_cr(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = add(fx, "crlf.mem", "one\r\ntwo\n\nlast");
	size_t n;

	assert_memory_equal(src_line_text(f, 1, &n), "one", 3);
	assert_int_equal(n, 3);
	assert_memory_equal(src_line_text(f, 2, &n), "two", 3);
	assert_int_equal(n, 3);
	src_line_text(f, 3, &n);
	assert_int_equal(n, 0);
	assert_memory_equal(src_line_text(f, 4, &n), "last", 4);
	assert_int_equal(n, 4);
}

/* CR, LF and CRLF each end one line, in any mix; "\n\r" is two. */
static void every_line_end_counts(void **state)
{
	struct fixture *fx = *state;
	const char *text = "a\rbb\r\nc\n\rd\r\r";
	struct src_file *f = add(fx, "mix.mem", text);
	size_t n;

	assert_non_null(f);
	assert_int_equal(src_nlines(f), 7);
	assert_int_equal(src_line_of(f, 2), 2);			/* 'b' after a lone CR */
	assert_int_equal(src_col_of(f, 3), 2);
	assert_memory_equal(src_line_text(f, 2, &n), "bb", 2);
	assert_int_equal(n, 2);
	assert_int_equal(src_line_of(f, 6), 3);			/* 'c' after CRLF */
	assert_int_equal(src_line_of(f, 8), 4);			/* the empty line between \n and \r */
	src_line_text(f, 4, &n);
	assert_int_equal(n, 0);
	assert_int_equal(src_line_of(f, 9), 5);			/* 'd' */
	assert_memory_equal(src_line_text(f, 5, &n), "d", 1);
	assert_int_equal(n, 1);
	src_line_text(f, 6, &n);
	assert_int_equal(n, 0);
	assert_int_equal(src_line_of(f, f->len), 7);

	struct src_file *g = add(fx, "crcrlf.mem", "x\r\r\ny");	/* CR, then CRLF */

	assert_int_equal(src_nlines(g), 3);
	src_line_text(g, 2, &n);
	assert_int_equal(n, 0);
	assert_int_equal(src_line_of(g, 4), 3);
	assert_int_equal(src_col_of(g, 4), 1);
}

/* A leading byte order mark is not text: offsets and columns start after it. */
static void leading_bom_is_dropped(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = add(fx, "bom.mem", "\xEF\xBB\xBF" "ab\n\xEF\xBB\xBF");
	struct src_file *g = add(fx, "only.mem", "\xEF\xBB\xBF");
	struct src_file *h = add(fx, "short.mem", "\xEF\xBB");

	assert_non_null(f);
	assert_int_equal(f->len, 6);
	assert_memory_equal(f->text, "ab\n\xEF\xBB\xBF", 6);	/* a later one stays */
	assert_int_equal(src_col_of(f, 1), 2);
	assert_non_null(g);
	assert_int_equal(g->len, 0);
	assert_null(h);						/* truncated UTF-8 */
}

static void empty_file_has_one_line(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = add(fx, "empty.mem", "");
	size_t n;

	assert_non_null(f);
	assert_int_equal(src_nlines(f), 1);
	assert_int_equal(src_line_of(f, 0), 1);
	assert_int_equal(src_col_of(f, 0), 1);
	src_line_text(f, 1, &n);
	assert_int_equal(n, 0);
}

static void invalid_utf8_is_located(void **state)
{
	struct fixture *fx = *state;
	const char text[] = "ok\nab\xff" "cd\n";

	assert_null(add(fx, "bad.mem", text));
	assert_int_equal(diag_error_count(fx->de), 1);
	assert_string_equal(fx_output(fx),
			    "bad.mem:2:3: error: invalid UTF-8 byte 0xff [invalid-utf8]\n"
			    "    2 | ab<ff>cd\n"
			    "      |   ^~~~\n");
	/* The file stays registered (for the snippet) but is marked invalid. */
	assert_false(src_get(fx->t, 1)->valid);
}

/* A truncated sequence: the error names its first byte. */
static void truncated_utf8_is_located(void **state)
{
	struct fixture *fx = *state;

	assert_null(add(fx, "trunc.mem", "日本\xe6\x97"));
	assert_string_equal(fx_output(fx),
			    "trunc.mem:1:3: error: invalid UTF-8 byte 0xe6 [invalid-utf8]\n"
			    "    1 | 日本<e6><97>\n"
			    "      |     ^~~~\n");
}

static void nul_byte_is_located(void **state)
{
	struct fixture *fx = *state;
	const char text[] = "x = 1\ny = \0 2\n";

	assert_null(src_add_string(fx->t, fx->de, "nul.mem", text, sizeof(text) - 1));
	assert_string_equal(fx_output(fx),
			    "nul.mem:2:5: error: NUL byte in source file [nul-byte]\n"
			    "    2 | y = <00> 2\n"
			    "      |     ^~~~\n");
}

/* Whichever problem comes first is the one reported. */
static void first_problem_wins(void **state)
{
	struct fixture *fx = *state;
	const char text[] = "a\0b\xff";

	assert_null(src_add_string(fx->t, fx->de, "both.mem", text, sizeof(text) - 1));
	assert_non_null(strstr(fx_output(fx), "[nul-byte]"));
	assert_int_equal(diag_error_count(fx->de), 1);
}

static void missing_file_without_site(void **state)
{
	struct fixture *fx = *state;

	assert_null(src_load(fx->t, fx->de, "/nonexistent/x.mem", "x.mem", NO_LOC));
	assert_string_equal(fx_output(fx), "memc: error: cannot open 'x.mem': No such file or "
					"directory [file-not-found]\n");
}

static void missing_file_at_include_site(void **state)
{
	struct fixture *fx = *state;
	struct src_file *f = add(fx, "main.mem", "import \"gone.mem\"\n");
	struct loc site = { f->id, 7, 17 };

	assert_null(src_load(fx->t, fx->de, "/nonexistent/gone.mem", "gone.mem", site));
	assert_string_equal(fx_output(fx),
			    "main.mem:1:8: error: cannot open 'gone.mem': No such file or "
			    "directory [file-not-found]\n"
			    "    1 | import \"gone.mem\"\n"
			    "      |        ^~~~~~~~~~\n");
}

static void directory_is_refused(void **state)
{
	struct fixture *fx = *state;

	assert_null(src_load(fx->t, fx->de, "/", NULL, NO_LOC));
	assert_string_equal(fx_output(fx),
			    "memc: error: cannot read '/': Is a directory [file-not-found]\n");
}

/* Write @text to a fresh temporary file; the caller unlinks @path. */
static void write_temp(char *path, const char *text, size_t n)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static void load_real_file(void **state)
{
	struct fixture *fx = *state;
	char path[] = "/tmp/memc-test-XXXXXX";

	write_temp(path, "gpu A {\n}\n", 10);
	struct src_file *f = src_load(fx->t, fx->de, path, "a.mem", NO_LOC);
	unlink(path);

	assert_non_null(f);
	assert_string_equal(f->display_name, "a.mem");
	assert_int_equal(f->len, 10);
	assert_int_equal(f->text[10], '\0');
	assert_int_equal(src_nlines(f), 3);
	assert_true(f->valid);
	assert_non_null(f->real_path);
	assert_ptr_equal(src_find_real(fx->t, f->real_path), f);
	assert_null(src_find_real(fx->t, "/no/such/file"));
	assert_string_equal(fx_output(fx) ? fx->buf : "", "");
}

static void too_large_file_is_refused(void **state)
{
	struct fixture *fx = *state;
	char path[] = "/tmp/memc-test-XXXXXX";

	write_temp(path, "", 0);
	assert_int_equal(truncate(path, SRC_MAX_SIZE + 1), 0);	/* sparse: no disk used */
	struct src_file *f = src_load(fx->t, fx->de, path, "huge.mem", NO_LOC);
	unlink(path);

	assert_null(f);
	assert_string_equal(fx_output(fx), "memc: error: 'huge.mem' is 16777217 bytes, more than "
					"the limit of 16 MiB [file-too-large]\n");
}

/* Standard input: read to its end, shown as given, no real path. */
static void descriptor_is_read_to_the_end(void **state)
{
	struct fixture *fx = *state;
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "gpu A {\r}\n", 10), 10);
	close(fds[1]);
	struct src_file *f = src_load_fd(fx->t, fx->de, fds[0], "<stdin>");
	close(fds[0]);

	assert_non_null(f);
	assert_string_equal(f->display_name, "<stdin>");
	assert_int_equal(f->len, 10);
	assert_int_equal(src_nlines(f), 3);
	assert_null(f->real_path);
	assert_string_equal(fx_output(fx) ? fx->buf : "", "");
}

/* Past the limit the descriptor is not read to its end (it may not have
 * one): the error comes one byte after 16 MiB, without a size. */
static void descriptor_past_limit_is_refused(void **state)
{
	struct fixture *fx = *state;
	char path[] = "/tmp/memc-test-XXXXXX";

	write_temp(path, "", 0);
	assert_int_equal(truncate(path, (off_t)SRC_MAX_SIZE * 4), 0);	/* sparse */
	int fd = open(path, O_RDONLY);
	unlink(path);
	assert_true(fd >= 0);
	struct src_file *f = src_load_fd(fx->t, fx->de, fd, "<stdin>");

	assert_int_equal(lseek(fd, 0, SEEK_CUR), SRC_MAX_SIZE + 1);
	close(fd);
	assert_null(f);
	assert_string_equal(fx_output(fx), "memc: error: '<stdin>' is more than the limit of "
					"16 MiB [file-too-large]\n");
}

static void decode_consumes_every_byte(void **state)
{
	const char s[] = "a\xc3\xa9\xff\xf0\x9f\x99\x82";
	const char *end = s + sizeof(s) - 1;
	uint32_t cp;
	(void)state;

	assert_int_equal(src_decode(s, end, &cp), 1);
	assert_int_equal(cp, 'a');
	assert_int_equal(src_decode(s + 1, end, &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(src_decode(s + 3, end, &cp), 1);
	assert_int_equal(cp, SRC_BAD_CP);
	assert_int_equal(src_decode(s + 4, end, &cp), 4);
	assert_int_equal(cp, 0x1f642);
	assert_int_equal(src_decode(s + 4, s + 6, &cp), 1);	/* cut short */
	assert_int_equal(cp, SRC_BAD_CP);
}

static void loc_join_covers_both(void **state)
{
	struct loc a = { 1, 5, 8 }, b = { 1, 2, 6 }, other = { 2, 0, 1 };
	(void)state;

	struct loc j = loc_join(a, b);
	assert_int_equal(j.file, 1);
	assert_int_equal(j.start, 2);
	assert_int_equal(j.end, 8);
	j = loc_join(NO_LOC, b);
	assert_int_equal(j.start, 2);
	j = loc_join(a, other);
	assert_int_equal(j.start, 5);
	assert_true(loc_is_none(NO_LOC));
	assert_false(loc_is_none(a));
}

/* The last diagnostic so far (they accumulate in one engine). */
static const struct diag *last_diag(struct fixture *fx)
{
	const struct diag *d = diag_first(fx->de);

	while (d && d->next)
		d = d->next;
	assert_non_null(d);
	return d;
}

/* Validation skips ASCII eight bytes at a time and checks each other
 * character alone: the first bad byte is found whatever its alignment,
 * after a valid multi-byte character or at a truncated end. */
static void bad_byte_found_at_every_alignment(void **state)
{
	struct fixture *fx = *state;
	static const char *const bad[] = { "\xff", "\xed\xa0\x80", "\xc3", "\x80" };

	/* 18 files: the engine stops recording errors after 20 */
	for (unsigned k = 0; k < 18; k++) {
		char text[64];
		unsigned before = diag_error_count(fx->de);

		snprintf(text, sizeof text, "%.*s\xc3\xa9%s", (int)k, "aaaaaaaaaaaaaaaaaa",
			 bad[k % (sizeof bad / sizeof bad[0])]);
		assert_null(add(fx, "bad.mem", text));
		assert_int_equal(diag_error_count(fx->de), before + 1);
		assert_int_equal(last_diag(fx)->loc.start, k + 2);
	}
	assert_non_null(add(fx, "ok.mem", "aaaaaaaaa\xc3\xa9\xe6\x97\xa5\xf0\x9f\x99\x82" "aaaaaaaaaaaa\xc3\xa9"));
}

/* A file without CR takes the memchr path: the same table as the byte loop. */
static void lf_only_line_table(void **state)
{
	struct fixture *fx = *state;
	const char *text = "a\n\nbb\nccc\n\xc3\xa9\n";
	struct src_file *f = add(fx, "lf.mem", text);
	static const uint32_t starts[] = { 0, 2, 3, 6, 10, 13 };

	assert_non_null(f);
	assert_int_equal(src_nlines(f), 6);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(src_line_starts(f)[i], starts[i]);
	f = add(fx, "nolf.mem", "no line end");
	assert_int_equal(src_nlines(f), 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup_printing, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(builtin_is_file_zero),
		T(lines_and_columns),
		T(line_text_strips_newline_and_cr),
		T(every_line_end_counts),
		T(leading_bom_is_dropped),
		T(empty_file_has_one_line),
		T(invalid_utf8_is_located),
		T(truncated_utf8_is_located),
		T(nul_byte_is_located),
		T(first_problem_wins),
		T(bad_byte_found_at_every_alignment),
		T(lf_only_line_table),
		T(missing_file_without_site),
		T(missing_file_at_include_site),
		T(directory_is_refused),
		T(load_real_file),
		T(too_large_file_is_refused),
		T(descriptor_is_read_to_the_end),
		T(descriptor_past_limit_is_refused),
		cmocka_unit_test(decode_consumes_every_byte),
		cmocka_unit_test(loc_join_covers_both),
	};
	return cmocka_run_group_tests_name("source", tests, NULL, NULL);
}
