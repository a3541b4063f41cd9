/* SPDX-License-Identifier: MIT */
/*
 * rpc.c - JSON-RPC 2.0 messages framed by Content-Length headers, as LSP
 * sends them over stdio.
 *
 * A header block is lines ending in "\r\n" (a bare "\n" is accepted too)
 * up to an empty line. Only Content-Length matters. A peer that lost
 * sync (a body without headers) is resynchronised on the next line that
 * holds "Content-Length:", so one bad message costs one error reply, not
 * the session.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyzer/lsp/lsp_impl.h"

/* Header lines are read through a window: a line longer than this keeps
 * its last half, which is where a resynchronising header would be. */
enum { HEADER_WINDOW = 256 };

struct header_line {
	char buf[HEADER_WINDOW + 1];
	size_t n;
};

/* One line without its "\r\n"; false at end of input. */
static bool read_line(FILE *in, struct header_line *l)
{
	int c;

	l->n = 0;
	while ((c = getc(in)) != EOF && c != '\n') {
		if (l->n == HEADER_WINDOW) {
			memmove(l->buf, l->buf + HEADER_WINDOW / 2, HEADER_WINDOW / 2);
			l->n = HEADER_WINDOW / 2;
		}
		l->buf[l->n++] = (char)c;
	}
	if (l->n && l->buf[l->n - 1] == '\r')
		l->n--;
	l->buf[l->n] = '\0';
	return c != EOF || l->n;
}

/* The value of a Content-Length header in @l, saturated just above the
 * cap; -1 when @l holds none. */
static long long content_length(const struct header_line *l)
{
	static const char key[] = "content-length:";
	const char *p = NULL;

	for (const char *q = l->buf; *q; q++)
		if (strncasecmp(q, key, sizeof key - 1) == 0)
			p = q + sizeof key - 1;
	if (!p)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!isdigit((unsigned char)*p))
		return -1;
	long long n = 0;

	for (; isdigit((unsigned char)*p); p++)
		if (n <= (long long)LSP_MAX_MESSAGE)
			n = n * 10 + (*p - '0');
	return n;
}

static void skip_bytes(FILE *in, long long n)
{
	char buf[4096];

	while (n > 0) {
		size_t want = n > (long long)sizeof buf ? sizeof buf : (size_t)n;
		size_t got = fread(buf, 1, want, in);

		if (got == 0)
			return;
		n -= (long long)got;
	}
}

enum rpc_status rpc_read(FILE *in, char **body, size_t *len)
{
	struct header_line l;
	long long n = -1;

	*body = NULL;
	for (;;) {
		if (!read_line(in, &l))
			return RPC_EOF;
		if (l.n == 0)
			break;
		long long v = content_length(&l);

		if (v >= 0)
			n = v;
	}
	if (n < 0)
		return RPC_NO_LENGTH;
	if (n > (long long)LSP_MAX_MESSAGE)
		return skip_bytes(in, n), RPC_TOO_LARGE;
	char *b = malloc((size_t)n + 1);

	if (!b || fread(b, 1, (size_t)n, in) != (size_t)n) {
		free(b);
		return RPC_EOF;
	}
	b[n] = '\0';
	*body = b;
	*len = (size_t)n;
	return RPC_OK;
}

void rpc_send(FILE *out, json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(msg);
	if (!text)
		return;
	fprintf(out, "Content-Length: %zu\r\n\r\n%s", strlen(text), text);
	fflush(out);
	free(text);
}

void rpc_reply(FILE *out, json_t *id, json_t *result)
{
	rpc_send(out, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
				"result", result ? result : json_null()));
}

void rpc_error(FILE *out, json_t *id, int code, const char *message)
{
	rpc_send(out, json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
				id ? id : json_null(), "error", "code", code, "message", message));
}

void rpc_notify(FILE *out, const char *method, json_t *params)
{
	rpc_send(out, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method,
				"params", params));
}
