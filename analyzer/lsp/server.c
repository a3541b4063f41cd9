/* SPDX-License-Identifier: MIT */
/*
 * server.c - the memc lsp loop: read a message, dispatch it, answer.
 *
 * Lifecycle as the LSP specification has it: requests before initialize
 * get ServerNotInitialized (-32002) and notifications are dropped;
 * after shutdown only exit is served; exit ends with 0 after shutdown
 * and 1 otherwise (end of input too). Unknown requests get
 * MethodNotFound (-32601); unknown notifications ("$/cancelRequest",
 * "workspace/didChangeConfiguration", ...) are ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/lsp/lsp.h"
#include "analyzer/lsp/lsp_impl.h"

static struct lsp_doc *doc_find(struct lsp_server *s, const char *uri)
{
	for (struct lsp_doc *d = s->docs; d; d = d->next)
		if (strcmp(d->uri, uri) == 0)
			return d;
	return NULL;
}

static void doc_free(struct lsp_doc *d)
{
	free(d->uri);
	free(d->path);
	free(d->text);
	free(d);
}

/* A new document, not yet in the list; NULL when out of memory. */
static struct lsp_doc *doc_new(const char *uri)
{
	struct lsp_doc *d = calloc(1, sizeof *d);

	if (!d)
		return NULL;
	d->uri = strdup(uri);
	d->path = lsp_uri_to_path(uri);
	if (!d->path)	/* untitled: and the like: imports from the current folder */
		d->path = strdup(uri);
	if (!d->uri || !d->path)
		return doc_free(d), NULL;
	return d;
}

/* Open or replace @uri's text; NULL when out of memory. */
static struct lsp_doc *doc_set(struct lsp_server *s, const char *uri, const char *text, size_t len)
{
	struct lsp_doc *d = doc_find(s, uri);
	char *copy = malloc(len + 1);

	if (!copy)
		return NULL;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (!d) {
		d = doc_new(uri);
		if (!d)
			return free(copy), NULL;
		d->next = s->docs;
		s->docs = d;
	}
	free(d->text);
	d->text = copy;
	d->len = len;
	return d;
}

static void doc_close(struct lsp_server *s, const char *uri)
{
	for (struct lsp_doc **p = &s->docs; *p; p = &(*p)->next) {
		if (strcmp((*p)->uri, uri) == 0) {
			struct lsp_doc *d = *p;

			*p = d->next;
			doc_free(d);
			return;
		}
	}
}

static const char *param_uri(json_t *params)
{
	return json_string_value(json_object_get(json_object_get(params, "textDocument"), "uri"));
}

static void publish(struct lsp_server *s, const struct lsp_doc *d)
{
	if (d)
		rpc_notify(s->out, "textDocument/publishDiagnostics", lsp_diagnostics(s, d));
}

/* ---- notifications ---- */

static void did_open(struct lsp_server *s, json_t *params)
{
	const char *uri = param_uri(params);
	json_t *text = json_object_get(json_object_get(params, "textDocument"), "text");

	if (uri && json_is_string(text))
		publish(s, doc_set(s, uri, json_string_value(text), json_string_length(text)));
}

/* Full sync (textDocumentSync.change = 1): the last change is the text. */
static void did_change(struct lsp_server *s, json_t *params)
{
	const char *uri = param_uri(params);
	json_t *changes = json_object_get(params, "contentChanges");
	json_t *text = json_object_get(json_array_get(changes, json_array_size(changes) - 1), "text");

	if (uri && json_is_string(text))
		publish(s, doc_set(s, uri, json_string_value(text), json_string_length(text)));
}

static void did_close(struct lsp_server *s, json_t *params)
{
	const char *uri = param_uri(params);

	if (!uri)
		return;
	doc_close(s, uri);
	rpc_notify(s->out, "textDocument/publishDiagnostics",
		   json_pack("{s:s, s:[]}", "uri", uri, "diagnostics"));
}

/* ---- requests: each returns its result, or NULL after replying with an
 * error itself ---- */

static json_t *initialize(struct lsp_server *s, json_t *params)
{
	(void)params;
	s->initialized = true;
	return json_pack("{s:{s:{s:b, s:i}, s:b, s:b, s:{s:[]}}, s:{s:s, s:s}}", "capabilities",
			 "textDocumentSync", "openClose", 1, "change", 1, "hoverProvider", 1,
			 "definitionProvider", 1, "completionProvider", "triggerCharacters",
			 "serverInfo", "name", "memc", "version", MEMC_VERSION);
}

static json_t *shutdown_request(struct lsp_server *s, json_t *params)
{
	(void)params;
	s->shutdown = true;
	return json_null();
}

/* The open document and position a textDocument request names. */
static const struct lsp_doc *doc_position(struct lsp_server *s, json_t *params, json_int_t *line,
					  json_int_t *ch)
{
	const char *uri = param_uri(params);
	json_t *pos = json_object_get(params, "position");
	json_t *l = json_object_get(pos, "line"), *c = json_object_get(pos, "character");

	if (!uri || !json_is_integer(l) || !json_is_integer(c))
		return NULL;
	*line = json_integer_value(l);
	*ch = json_integer_value(c);
	return doc_find(s, uri);
}

static json_t *hover(struct lsp_server *s, json_t *params)
{
	json_int_t line, ch;
	const struct lsp_doc *d = doc_position(s, params, &line, &ch);

	return d ? lsp_hover(s, d, line, ch) : json_null();
}

static json_t *definition(struct lsp_server *s, json_t *params)
{
	json_int_t line, ch;
	const struct lsp_doc *d = doc_position(s, params, &line, &ch);

	return d ? lsp_definition(s, d, line, ch) : json_null();
}

static json_t *completion(struct lsp_server *s, json_t *params)
{
	json_int_t line, ch;
	const struct lsp_doc *d = doc_position(s, params, &line, &ch);

	return d ? lsp_completion(s, d, line, ch) : json_null();
}

struct method {
	const char *name;
	json_t *(*request)(struct lsp_server *s, json_t *params);
	void (*notification)(struct lsp_server *s, json_t *params);
};

static const struct method methods[] = {
	{ "initialize", initialize, NULL },
	{ "shutdown", shutdown_request, NULL },
	{ "textDocument/hover", hover, NULL },
	{ "textDocument/definition", definition, NULL },
	{ "textDocument/completion", completion, NULL },
	{ "textDocument/didOpen", NULL, did_open },
	{ "textDocument/didChange", NULL, did_change },
	{ "textDocument/didClose", NULL, did_close },
	{ "initialized", NULL, NULL },
};

static const struct method *method_find(const char *name)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

static void request(struct lsp_server *s, const struct method *m, json_t *id, json_t *params)
{
	if (!m || (!m->request && m->notification))
		return rpc_error(s->out, id, m ? LSP_INVALID_REQUEST : LSP_METHOD_NOT_FOUND,
				 m ? "this method is a notification, not a request"
				   : "unknown method");
	if (!s->initialized && m->request != initialize)
		return rpc_error(s->out, id, LSP_NOT_INITIALIZED, "initialize comes first");
	if (s->shutdown)
		return rpc_error(s->out, id, LSP_INVALID_REQUEST, "the server is shutting down");
	if (!m->request)	/* "initialized" sent with an id */
		return rpc_reply(s->out, id, NULL);
	rpc_reply(s->out, id, m->request(s, params));
}

/* One message; returns the exit status once it is "exit", else -1. */
static int dispatch(struct lsp_server *s, json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	const char *name = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");

	if (!json_is_object(msg) || !name) {
		/* A response to a request we never sent is dropped. */
		if (!json_is_object(msg) || !(json_object_get(msg, "result") || json_object_get(msg, "error")))
			rpc_error(s->out, id, LSP_INVALID_REQUEST, "not a JSON-RPC request or notification");
		return -1;
	}
	if (strcmp(name, "exit") == 0)
		return s->shutdown ? 0 : 1;
	const struct method *m = method_find(name);

	if (id)
		request(s, m, id, params);
	else if (m && m->notification && s->initialized && !s->shutdown)
		m->notification(s, params);
	return -1;
}

static int serve(struct lsp_server *s)
{
	for (;;) {
		char *body;
		size_t len;
		json_error_t err;

		switch (rpc_read(s->in, &body, &len)) {
		case RPC_EOF:
			return s->shutdown ? 0 : 1;
		case RPC_NO_LENGTH:
			rpc_error(s->out, NULL, LSP_PARSE_ERROR, "a message without Content-Length");
			continue;
		case RPC_TOO_LARGE:
			rpc_error(s->out, NULL, LSP_INVALID_REQUEST, "message larger than 32 MiB, skipped");
			continue;
		case RPC_OK:
			break;
		}
		json_t *msg = json_loadb(body, len, JSON_ALLOW_NUL, &err);

		free(body);
		if (!msg) {
			rpc_error(s->out, NULL, LSP_PARSE_ERROR, err.text);
			continue;
		}
		int rc = dispatch(s, msg);

		json_decref(msg);
		if (rc >= 0)
			return rc;
	}
}

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "memc lsp: %s%s\nusage: memc lsp [--stdio] [--stdlib DIR] [-I DIR]...\n",
		msg, arg);
	return 2;
}

/* --stdio is what editors pass; stdio is the only transport. */
static int parse_args(struct lsp_server *s, int argc, char **argv)
{
	s->opts.dirs = calloc((size_t)argc, sizeof *s->opts.dirs);
	if (!s->opts.dirs)
		return usage("out of memory", "");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--stdio") == 0)
			continue;
		if ((strcmp(a, "--stdlib") == 0 || strcmp(a, "-I") == 0) && i + 1 < argc) {
			if (a[1] == 'I')
				s->opts.dirs[s->opts.ndirs++] = argv[++i];
			else
				s->opts.stdlib_dir = argv[++i];
			continue;
		}
		return usage("unknown or incomplete option: ", a);
	}
	return -1;
}

int lsp_main(int argc, char **argv)
{
	struct lsp_server s = { .in = stdin, .out = stdout };

	s.opts.max_errors = 20;
	s.opts.argv0 = argv[0];
	int rc = parse_args(&s, argc, argv);

	if (rc < 0)
		rc = serve(&s);
	while (s.docs) {
		struct lsp_doc *d = s.docs;

		s.docs = d->next;
		doc_free(d);
	}
	free(s.opts.dirs);
	return rc;
}
