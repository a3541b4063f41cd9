/* SPDX-License-Identifier: MIT */
/*
 * lsp_impl.h - what the pieces of memc lsp share: framing (rpc.c),
 * positions and URIs (pos.c), the analyses (analysis.c) and the server
 * loop (server.c).
 *
 * Each request that needs the program compiles the document text afresh
 * in its own arena, freed before the reply is sent: documents are small
 * and a compilation takes milliseconds, so nothing is cached across
 * messages and no state can go stale.
 */
#ifndef MEMC_ANALYZER_LSP_IMPL_H
#define MEMC_ANALYZER_LSP_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "analyzer/cmd/driver.h"
#include "lang/source.h"

/* A message body larger than this is refused unread: room for a document
 * at the file limit (SRC_MAX_SIZE) with its JSON string escapes. */
#define LSP_MAX_MESSAGE (2u * SRC_MAX_SIZE)

/* JSON-RPC and LSP error codes. */
enum {
	LSP_PARSE_ERROR = -32700,
	LSP_INVALID_REQUEST = -32600,
	LSP_METHOD_NOT_FOUND = -32601,
	LSP_INVALID_PARAMS = -32602,
	LSP_NOT_INITIALIZED = -32002,
};

struct lsp_doc {
	char *uri;
	char *path;			/* file system path of a file: URI, else the URI */
	char *text;
	size_t len;
	struct lsp_doc *next;
};

struct lsp_server {
	FILE *in, *out;
	bool initialized, shutdown;
	struct lsp_doc *docs;
	struct driver_opts opts;	/* stdlib_dir and -I folders */
};

/* ---- rpc.c ---- */
enum rpc_status {
	RPC_OK,
	RPC_EOF,		/* end of input (or a read error) */
	RPC_NO_LENGTH,		/* a header block without Content-Length */
	RPC_TOO_LARGE,		/* Content-Length over LSP_MAX_MESSAGE: body skipped */
};
/* One framed message; on RPC_OK *body is malloc'ed and NUL-terminated. */
enum rpc_status rpc_read(FILE *in, char **body, size_t *len);
/* Frame and write @msg, then release it. */
void rpc_send(FILE *out, json_t *msg);
void rpc_reply(FILE *out, json_t *id, json_t *result);
void rpc_error(FILE *out, json_t *id, int code, const char *message);
void rpc_notify(FILE *out, const char *method, json_t *params);

/* ---- pos.c ---- */
/* The path a file: URI names (percent-decoded), or NULL for another scheme. */
char *lsp_uri_to_path(const char *uri);
/* A file: URI for absolute @path; malloc'ed. */
char *lsp_path_to_uri(const char *path);
/* LSP Position (0-based line, UTF-16 code units) of byte @offset of @f.
 * @bom: the editor's text had a byte order mark that @f dropped. */
json_t *lsp_position(const struct src_file *f, uint32_t offset, bool bom);
json_t *lsp_range(const struct src_file *f, struct loc l, bool bom);
/* The byte offset in @f of an LSP position, clamped to its line. */
uint32_t lsp_offset(const struct src_file *f, json_int_t line, json_int_t character, bool bom);

/* ---- analysis.c ---- */
/* The publishDiagnostics params for @d. */
json_t *lsp_diagnostics(const struct lsp_server *s, const struct lsp_doc *d);
/* Results of textDocument/hover, definition and completion (json null
 * when there is nothing to show). */
json_t *lsp_hover(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		  json_int_t character);
json_t *lsp_definition(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		       json_int_t character);
json_t *lsp_completion(const struct lsp_server *s, const struct lsp_doc *d, json_int_t line,
		       json_int_t character);

#endif
