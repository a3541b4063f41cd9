/* SPDX-License-Identifier: MIT */
/*
 * source.c - loading source files and mapping byte offsets to lines and
 * columns.
 *
 * A file is read in one go into the arena (files are small and the lexer
 * wants contiguous text), validated once with memchr() and u8_check(), and
 * indexed, when a line is first asked for, by a line table so that line
 * lookup is a binary search. Columns
 * are counted in code points from the start of the line when they are
 * needed, which is only when a diagnostic is printed.
 */
/* realpath() is XSI, not in the _POSIX_C_SOURCE set the Makefile selects. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include "lang/source.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unistr.h>

#include "lang/arena.h"
#include "lang/diag.h"

static void add_file(struct src_table *t, struct src_file *f)
{
	if (t->nfiles == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		struct src_file **files = ARENA_NEW_ARRAY(t->arena, struct src_file *, cap);

		if (t->nfiles)
			memcpy(files, t->files, t->nfiles * sizeof(*files));
		t->files = files;	/* the old array is abandoned in the arena */
		t->cap = cap;
	}
	f->id = t->nfiles;
	t->files[t->nfiles++] = f;
}

struct src_table *src_table_new(struct arena *a)
{
	struct src_table *t = ARENA_NEW(a, struct src_table);
	struct src_file *builtin = ARENA_NEW(a, struct src_file);

	t->arena = a;
	builtin->display_name = "<builtin>";
	builtin->text = "";
	builtin->line_table = ARENA_NEW(a, uint32_t);
	builtin->line_count = 1;
	builtin->valid = true;
	builtin->state = SRC_DONE;
	add_file(t, builtin);
	return t;
}

struct src_file *src_get(const struct src_table *t, uint32_t id)
{
	assert(id < t->nfiles);
	return t->files[id];
}

struct src_file *src_find_real(const struct src_table *t, const char *real_path)
{
	for (uint32_t i = 1; i < t->nfiles; i++) {
		const char *rp = t->files[i]->real_path;

		if (rp && strcmp(rp, real_path) == 0)
			return t->files[i];
	}
	return NULL;
}

/* Whether text[i] is the last byte of a line end: "\n", or a "\r" that
 * is not the first half of "\r\n". The lexer splits lines the same way,
 * so a file saved with old Mac line ends reads as lines, not as one long
 * comment. */
static bool ends_line(const char *text, uint32_t len, uint32_t i)
{
	return text[i] == '\n' || (text[i] == '\r' && (i + 1 == len || text[i + 1] != '\n'));
}

/* Line starts of a file without CR: memchr finds each LF at memory speed
 * (every imported stdlib file is loaded on every run). */
static void build_lf_table(struct arena *a, struct src_file *f)
{
	const char *p, *end = f->text + f->len;
	uint32_t n = 1;

	for (p = f->text; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		n++;
	f->line_table = ARENA_NEW_ARRAY(a, uint32_t, n);
	f->line_count = n;
	n = 1;
	for (p = f->text; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		f->line_table[n++] = (uint32_t)(p - f->text) + 1;
}

static void build_line_table(struct arena *a, struct src_file *f)
{
	uint32_t n = 1;

	if (!memchr(f->text, '\r', f->len)) {
		build_lf_table(a, f);
		return;
	}

	for (uint32_t i = 0; i < f->len; i++)
		n += ends_line(f->text, f->len, i);
	f->line_table = ARENA_NEW_ARRAY(a, uint32_t, n);
	f->line_count = n;
	n = 1;
	for (uint32_t i = 0; i < f->len; i++)
		if (ends_line(f->text, f->len, i))
			f->line_table[n++] = i + 1;
}

/*
 * Check that the text is UTF-8 without NUL bytes, and report the first
 * offending byte, whichever kind comes first. The lexer can then assume
 * clean input.
 */
size_t src_ascii_prefix(const char *s, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, sizeof w);
		if (w & 0x8080808080808080u)
			break;
	}
	while (i < n && (unsigned char)s[i] < 0x80)
		i++;
	return i;
}

uint64_t src_digest(const char *s, size_t n)
{
	uint64_t h = 0x243F6A8885A308D3u ^ n, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, sizeof w);
		h = (h ^ w) * 0x9E3779B97F4A7C15u;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001B3u;
	return h ^ (h >> 32);
}

/* u8_check() by runs: ASCII is valid UTF-8, so only each non-ASCII
 * character goes to libunistring, whose verdict on one character does
 * not depend on its neighbours. Comments in the stdlib use "x" signs and
 * dashes, so a file is rarely ASCII to its end. */
static const uint8_t *first_bad_utf8(const char *text, size_t n)
{
	const uint8_t *s = (const uint8_t *)text;
	size_t i = 0;

	for (;;) {
		i += src_ascii_prefix(text + i, n - i);
		if (i == n)
			return NULL;
		const uint8_t *bad = u8_check(s + i, n - i < 4 ? n - i : 4);

		if (bad == s + i)
			return bad;
		i += (size_t)u8_mblen(s + i, n - i);
	}
}

static bool validate(struct diag_engine *de, struct src_file *f)
{
	const char *nul = memchr(f->text, '\0', f->len);
	size_t checked = nul ? (size_t)(nul - f->text) : f->len;
	const uint8_t *bad = first_bad_utf8(f->text, checked);

	if (bad) {
		uint32_t off = (uint32_t)((const char *)bad - f->text);

		diag_error(de, DIAG_INVALID_UTF8, (struct loc){ f->id, off, off + 1 },
			   "invalid UTF-8 byte 0x%02x", *bad);
		return false;
	}
	if (nul) {
		uint32_t off = (uint32_t)checked;

		diag_error(de, DIAG_NUL_BYTE, (struct loc){ f->id, off, off + 1 },
			   "NUL byte in source file");
		return false;
	}
	return true;
}

/* Register @text (already NUL-terminated, in the arena) and validate it.
 * A leading UTF-8 byte order mark is dropped here, before anything counts
 * offsets, so it is neither a token nor a column. */
static struct src_file *add_text(struct src_table *t, struct diag_engine *de,
				 const char *display_name, char *text, size_t len)
{
	struct src_file *f = ARENA_NEW(t->arena, struct src_file);

	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
		text += 3;
		len -= 3;
	}
	f->display_name = arena_strdup(t->arena, display_name);
	f->text = text;
	f->len = (uint32_t)len;
	f->arena = t->arena;
	add_file(t, f);
	f->valid = validate(de, f);
	return f;
}

struct src_file *src_add_loaded(struct src_table *t, const char *display_name, const char *text, size_t len,
				const char *real_path, struct loc site)
{
	struct src_file *f = ARENA_NEW(t->arena, struct src_file);

	f->display_name = arena_strdup(t->arena, display_name);
	f->text = text;
	f->len = (uint32_t)len;
	f->arena = t->arena;
	f->real_path = arena_strdup(t->arena, real_path);
	f->included_from = site;
	f->valid = true;
	add_file(t, f);
	return f;
}

struct src_file *src_add_string(struct src_table *t, struct diag_engine *de,
				const char *display_name, const char *text, size_t len)
{
	if (len > SRC_MAX_SIZE) {
		diag_error(de, DIAG_FILE_TOO_LARGE, NO_LOC,
			   "'%s' is %zu bytes, more than the limit of %u MiB",
			   display_name, len, SRC_MAX_SIZE >> 20);
		return NULL;
	}
	struct src_file *f = add_text(t, de, display_name, arena_strndup(t->arena, text, len), len);

	return f->valid ? f : NULL;
}

/*
 * Open @path without blocking and check it is a regular file no larger
 * than the limit; -1 after reporting why not. O_NONBLOCK matters for a
 * FIFO, whose open() would otherwise wait for a writer for ever; a
 * directory opens fine and would only fail on read; devices and FIFOs
 * have no size to check in advance.
 */
static int open_source(struct diag_engine *de, const char *path, const char *name,
		       struct loc site, size_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0) {
		diag_error(de, DIAG_FILE_NOT_FOUND, site, "cannot open '%s': %s", name,
			   strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		diag_error(de, DIAG_FILE_NOT_FOUND, site, "cannot read '%s': %s", name,
			   strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		diag_error(de, DIAG_FILE_NOT_FOUND, site, "cannot read '%s': %s", name,
			   S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
	} else if ((unsigned long long)st.st_size > SRC_MAX_SIZE) {
		diag_error(de, DIAG_FILE_TOO_LARGE, site,
			   "'%s' is %lld bytes, more than the limit of %u MiB", name,
			   (long long)st.st_size, SRC_MAX_SIZE >> 20);
	} else {
		*size = (size_t)st.st_size;
		return fd;
	}
	close(fd);
	return -1;
}

/*
 * Read up to @want bytes into @buf, retrying short reads and interrupts,
 * and waiting when a descriptor (a pipe on stdin) has nothing yet. Returns
 * the bytes read (fewer only at end of file), or -1 with errno set.
 */
static ssize_t read_full(int fd, char *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);

		if (n > 0) {
			got += (size_t)n;
		} else if (n == 0) {
			break;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -1;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	return (ssize_t)got;
}

/*
 * Read the whole file (@size bytes by fstat) into the arena; NULL after
 * reporting a read error. One byte more is asked for, so a file that grew
 * since fstat is an error and not a silently cut text.
 */
static char *read_all(struct src_table *t, struct diag_engine *de, int fd,
		      const char *name, struct loc site, size_t size)
{
	/* raw: the read fills the text, the two bytes after it are set below */
	char *buf = arena_alloc_raw(t->arena, size + 2);
	ssize_t got = read_full(fd, buf, size + 1);

	if (got < 0 || (size_t)got != size) {
		diag_error(de, DIAG_FILE_NOT_FOUND, site, "cannot read '%s': %s", name,
			   got < 0 ? strerror(errno) : "file changed while being read");
		return NULL;
	}
	buf[size] = buf[size + 1] = '\0';
	return buf;
}

static const char *real_path_of(struct arena *a, const char *path)
{
	char *rp = realpath(path, NULL);

	if (!rp)
		return arena_strdup(a, path);	/* cannot happen after a successful fopen */
	const char *res = arena_strdup(a, rp);
	free(rp);
	return res;
}

void src_set_overlay(struct src_table *t, const char *path, const char *text, size_t len)
{
	t->overlay_path = arena_strdup(t->arena, path);
	t->overlay_text = text;
	t->overlay_len = len;
}

/* The overlay's path is its identity: realpath() when the file exists on
 * disk (so an import of it is the same file), else the path itself. */
static struct src_file *load_overlay(struct src_table *t, struct diag_engine *de,
				     const char *name, struct loc site)
{
	struct src_file *f = src_add_string(t, de, name, t->overlay_text, t->overlay_len);

	if (!f)
		return NULL;
	f->real_path = real_path_of(t->arena, t->overlay_path);
	f->included_from = site;
	return f;
}

struct src_file *src_load(struct src_table *t, struct diag_engine *de, const char *path,
			  const char *display_name, struct loc site)
{
	return src_load_real(t, de, path, display_name, site, NULL);
}

struct src_file *src_load_real(struct src_table *t, struct diag_engine *de, const char *path,
			       const char *display_name, struct loc site, const char *real_path)
{
	const char *name = display_name ? display_name : path;
	size_t size = 0;

	if (t->overlay_path && strcmp(path, t->overlay_path) == 0)
		return load_overlay(t, de, name, site);
	int fd = open_source(de, path, name, site, &size);

	if (fd < 0)
		return NULL;
	char *text = read_all(t, de, fd, name, site, size);
	close(fd);
	if (!text)
		return NULL;

	struct src_file *f = add_text(t, de, name, text, size);
	f->real_path = real_path ? arena_strdup(t->arena, real_path) : real_path_of(t->arena, path);
	f->included_from = site;
	return f->valid ? f : NULL;
}

/*
 * Read @fd to its end into a heap buffer, in growing chunks and never past
 * one byte over the limit: a pipe has no size to check first, and
 * `yes | memc check -` must cost 16 MiB, not all of memory. Returns the
 * length, SRC_MAX_SIZE + 1 when over the limit, or -1 with errno set.
 */
static ssize_t read_bounded(int fd, char **out)
{
	size_t cap = 64 * 1024, len = 0;
	char *buf = malloc(cap);

	for (;;) {
		if (!buf)
			xdie_oom();
		size_t want = cap - len;
		ssize_t n = read_full(fd, buf + len, want);

		if (n < 0) {
			free(buf);
			return -1;
		}
		len += (size_t)n;
		if ((size_t)n < want || len > SRC_MAX_SIZE)
			break;	/* end of input, or one byte past the limit */
		cap = cap * 2 > SRC_MAX_SIZE + 1 ? SRC_MAX_SIZE + 1 : cap * 2;
		buf = realloc(buf, cap);	/* NULL: out of memory, above */
	}
	*out = buf;
	return (ssize_t)len;
}

struct src_file *src_load_fd(struct src_table *t, struct diag_engine *de, int fd,
			     const char *display_name)
{
	char *buf = NULL;
	ssize_t len = read_bounded(fd, &buf);

	if (len < 0) {
		diag_error(de, DIAG_FILE_NOT_FOUND, NO_LOC, "cannot read '%s': %s", display_name,
			   strerror(errno));
		return NULL;
	}
	if ((size_t)len > SRC_MAX_SIZE) {
		diag_error(de, DIAG_FILE_TOO_LARGE, NO_LOC, "'%s' is more than the limit of %u MiB",
			   display_name, SRC_MAX_SIZE >> 20);
		free(buf);
		return NULL;
	}
	char *text = arena_strndup(t->arena, buf, (size_t)len);
	struct src_file *f = add_text(t, de, display_name, text, (size_t)len);

	free(buf);
	return f->valid ? f : NULL;
}

/* Every src_file is made writable in the arena (add_text); the line table
 * is a cache filled through the const pointers that ask for it. */
const uint32_t *src_line_starts(const struct src_file *f)
{
	if (!f->line_table)
		build_line_table(f->arena, (struct src_file *)f);
	return f->line_table;
}

uint32_t src_nlines(const struct src_file *f)
{
	src_line_starts(f);
	return f->line_count;
}

uint32_t src_line_of(const struct src_file *f, uint32_t offset)
{
	const uint32_t *starts = src_line_starts(f);
	uint32_t lo = 0, hi = f->line_count;	/* invariant: starts[lo] <= offset */

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (starts[mid] <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return lo + 1;
}

size_t src_decode(const char *p, const char *end, uint32_t *cp)
{
	ucs4_t uc;
	int n = u8_mbtoucr(&uc, (const uint8_t *)p, (size_t)(end - p));

	if (n <= 0) {	/* -1 invalid, -2 truncated: consume one byte */
		*cp = SRC_BAD_CP;
		return 1;
	}
	*cp = uc;
	return (size_t)n;
}

uint32_t src_col_of(const struct src_file *f, uint32_t offset)
{
	if (offset > f->len)
		offset = f->len;
	const char *p = f->text + src_line_starts(f)[src_line_of(f, offset) - 1];
	const char *target = f->text + offset;
	uint32_t col = 1;

	while (p < target) {
		uint32_t cp;

		/* ASCII is one byte, one column: decode only the rest */
		p += (unsigned char)*p < 0x80 ? 1 : src_decode(p, f->text + f->len, &cp);
		col++;
	}
	return col;
}

const char *src_line_text(const struct src_file *f, uint32_t line, size_t *len)
{
	const uint32_t *starts = src_line_starts(f);

	assert(line >= 1 && line <= f->line_count);
	uint32_t start = starts[line - 1];
	uint32_t end = line < f->line_count ? starts[line] - 1 : f->len;

	/* The "\r" of a "\r\n"; a lone "\r" cannot come before the line's
	 * last byte, since it would have ended the line there. */
	if (end > start && f->text[end - 1] == '\r')
		end--;
	*len = end - start;
	return f->text + start;
}
