#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A scripted memc lsp session (make check-lsp): initialize, didOpen of a
# document with an error at a known line, hover, definition, completion,
# didChange, didClose, shutdown, exit; plus the protocol's error paths.
# Every response's Content-Length must match its body.
#
#   tests/lsp/session.sh build/memc
set -u
export LC_ALL=C
MEMC=${1:-build/memc}
WRAP=${MEMC_WRAP:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() {	# NAME JQ-EXPR: the expression is true over the slurped responses
	if jq -e -s "$2" "$tmp/responses" >/dev/null 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "FAIL: lsp: $1"; echo "  expected: $2"
	fi
}
check() {	# NAME COMMAND...
	if "${@:2}"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: lsp: $1"; fi
}

frame() { printf 'Content-Length: %d\r\n\r\n%s' "${#1}" "$1"; }

# Split the server's output into one JSON body per line, checking each
# Content-Length against the bytes that follow the blank line.
split() {
	local line n body
	: > "$tmp/responses"
	framing=ok
	while IFS= read -r line; do
		n=${line#Content-Length: }; n=${n%$'\r'}
		IFS= read -r line	# the blank line
		if [ "$line" != $'\r' ] || ! IFS= read -r -N "$n" body || [ "${#body}" -ne "$n" ]; then
			framing=bad; return
		fi
		printf '%s\n' "$body" >> "$tmp/responses"
	done < "$1"
}

# run NAME: feed $tmp/in to the server; sets rc and $tmp/responses.
run() {
	rc=0
	$WRAP "$MEMC" lsp < "$tmp/in" > "$tmp/out" 2> "$tmp/err" || rc=$?
	split "$tmp/out"
	check "$1: framing" test "$framing" = ok
	check "$1: no crash (rc $rc)" test "$rc" -lt 2
}

doc="$here/session.mem"
uri="file://$doc"
text=$(jq -Rs . < "$doc")
fixed=$(sed 's/micro_btach/micro_batch/' "$doc" | jq -Rs .)
td="{\"uri\":\"$uri\"}"

# ---- session 1: the whole protocol -----------------------------------------
{
	frame '{"jsonrpc":"2.0","id":0,"method":"textDocument/hover","params":{}}'
	frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
	frame '{"jsonrpc":"2.0","method":"initialized","params":{}}'
	frame "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{\"textDocument\":{\"uri\":\"$uri\",\"languageId\":\"mem\",\"version\":1,\"text\":$text}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"textDocument/hover\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":10,\"character\":7}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"textDocument/definition\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":11,\"character\":18}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"textDocument/definition\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":12,\"character\":22}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"textDocument/completion\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":14,\"character\":2}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"textDocument/completion\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":12,\"character\":20}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"textDocument/completion\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":11,\"character\":16}}}"
	frame "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"textDocument/definition\",\"params\":{\"textDocument\":$td,\"position\":{\"line\":4,\"character\":10}}}"
	frame '{"jsonrpc":"2.0","id":7,"method":"workspace/frobnicate","params":{}}'
	frame '{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}'
	frame '{"jsonrpc":"2.0","id":8,"method":'
	printf 'X-Not-A-Length: 3\r\n\r\n'
	frame "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"$uri\",\"version\":2},\"contentChanges\":[{\"text\":$fixed}]}}"
	frame "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didClose\",\"params\":{\"textDocument\":$td}}"
	frame '{"jsonrpc":"2.0","id":9,"method":"shutdown"}'
	frame '{"jsonrpc":"2.0","id":10,"method":"textDocument/hover","params":{}}'
	frame '{"jsonrpc":"2.0","method":"exit"}'
} > "$tmp/in"
run session
check "exit after shutdown is 0 (rc $rc)" test "$rc" -eq 0

ok "request before initialize: -32002" '.[] | select(.id == 0) | .error.code == -32002'
ok "initialize: capabilities" '.[] | select(.id == 1) | .result.capabilities
	| .textDocumentSync.change == 1 and .hoverProvider and .definitionProvider
	  and (.completionProvider | type == "object")'
pub='[.[] | select(.method == "textDocument/publishDiagnostics")]'
ok "didOpen: one diagnostic, on the document" "$pub | .[0].params | .uri == \"$uri\" and (.diagnostics | length == 1)"
ok "didOpen: at 0-based line 23, UTF-16 characters 12-23" "$pub | .[0].params.diagnostics[0].range
	== {\"start\":{\"line\":23,\"character\":12},\"end\":{\"line\":23,\"character\":23}}"
ok "didOpen: error, code, source, note in the message" "$pub | .[0].params.diagnostics[0]
	| .severity == 1 and .code == \"unknown-field\" and .source == \"memc\"
	  and (.message | contains(\"did you mean 'micro_batch'\"))"
ok "hover on train ok: the per-device figures" '.[] | select(.id == 2) | .result
	| (.contents.value | contains("device total") and contains("rank class"))
	  and .range.start == {"line":10,"character":6}'
ok "definition of llama2_7b: into the stdlib" '.[] | select(.id == 3) | .result
	| (.uri | startswith("file:///") and endswith("/stdlib/models/llama.mem"))
	  and .range.start == {"line":21,"character":6}'
ok "definition of LSP_A100: the document's folder" '.[] | select(.id == 4) | .result
	| (.uri | endswith("/tests/lsp/extra.mem")) and .range.start.line == 4'
ok "definition of an import path: the file" '.[] | select(.id == 6) | .result
	| (.uri | endswith("/tests/lsp/extra.mem")) and .range.start == {"line":0,"character":0}'
ok "completion before '=': the train keys" '.[] | select(.id == 5) | .result.items
	| ([.[].label] | index("micro_batch")) and all(.kind == 10)'
ok "completion after 'cluster = 8 x': the GPUs in scope" '.[] | select(.id == 11) | .result.items
	| ([.[].label] | index("A100_80GB") and index("LSP_A100")) and all(.detail == "gpu")'
ok "completion after 'model =': the models in scope" '.[] | select(.id == 12) | .result.items
	| ([.[].label] | index("llama2_7b")) and all(.detail == "model")'
ok "unknown request: -32601" '.[] | select(.id == 7) | .error.code == -32601'
ok "unknown notification: no reply" '[.[] | select(.id == 2)] | length == 1'
ok "malformed JSON, missing Content-Length: -32700 each" '[.[] | select(.error.code == -32700 and .id == null)] | length == 2'
ok "didChange: the fixed text's capacity warning, its note as related" "$pub | .[1].params
	| .uri == \"$uri\" and (.diagnostics | length == 1) and (.diagnostics[0]
	| .severity == 2 and .code == \"capacity\" and .range.start == {\"line\":25,\"character\":2}
	  and .relatedInformation[0].location.uri == \"$uri\"
	  and .relatedInformation[0].location.range.start == {\"line\":20,\"character\":6}
	  and (.relatedInformation[0].message | startswith(\"zero = 1 fits\")))"
ok "didClose: clears the diagnostics" "$pub | length == 3 and .[2].params.diagnostics == []"
ok "shutdown: null result" '.[] | select(.id == 9) | has("result") and .result == null'
ok "request after shutdown: -32600" '.[] | select(.id == 10) | .error.code == -32600'

# The completion keys are the checker's check_train_fields (lang/check_train_keys.c).
keys=$(sed -n '/^const struct field_spec check_train_fields/,/^};/p' "$here/../../lang/check_train_keys.c" \
	| grep -o '{ "[a-z0-9_]*"' | sed 's/{ "//; s/"//' | sort | tr '\n' ' ')
got=$(jq -r -s '.[] | select(.id == 5) | .result.items[] | select(.kind == 10) | .label' \
	"$tmp/responses" | sort | tr '\n' ' ')
check "completion keys are lang/check_train_keys.c's check_train_fields" test -n "$keys" -a "$keys" = "$got"

# ---- session 2: an untitled document with a byte order mark; exit without
# shutdown --------------------------------------------------------------------
u2='{"uri":"untitled:Untitled-1"}'
{
	frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
	frame '{"jsonrpc":"2.0","method":"initialized","params":{}}'
	frame '{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"untitled:Untitled-1","languageId":"mem","version":1,"text":"\ufefftrain t { model = nope }\n"}}}'
	frame '{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///nonexistent-memc-lsp/dir%20x/new.mem","languageId":"mem","version":1,"text":"import \"./missing\"\n"}}}'
	frame "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"textDocument/hover\",\"params\":{\"textDocument\":$u2,\"position\":{\"line\":0,\"character\":21}}}"
	frame '{"jsonrpc":"2.0","method":"exit"}'
} > "$tmp/in"
run "exit without shutdown"
check "exit without shutdown is 1 (rc $rc)" test "$rc" -eq 1
ok "untitled: the byte order mark is character 0" "$pub | .[0].params | .uri == \"untitled:Untitled-1\"
	and .diagnostics[0].code == \"undefined-name\"
	and .diagnostics[0].range == {\"start\":{\"line\":0,\"character\":19},\"end\":{\"line\":0,\"character\":23}}"
ok "unsaved file: imports resolve from its URI's folder" "$pub | .[1].params
	| .uri == \"file:///nonexistent-memc-lsp/dir%20x/new.mem\" and (.diagnostics[0]
	| .code == \"import-not-found\" and .range.start == {\"line\":0,\"character\":7}
	  and (.message | contains(\"searched /nonexistent-memc-lsp/dir x\")))"
ok "hover on a job with errors: no figures" '.[] | select(.id == 2) | .result.contents.value | contains("no figures")'

# ---- session 3: a Content-Length over the cap is refused unread ------------
{
	frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
	printf 'Content-Length: 99999999999999999999\r\n\r\n{}'
} > "$tmp/in"
run "huge Content-Length"
ok "huge Content-Length: -32600, then end of input" '(.[1].error.code == -32600) and length == 2'
check "end of input without shutdown is 1 (rc $rc)" test "$rc" -eq 1

suite=${MEMC_SUITE_NAME:-lsp}
echo "$suite: $pass passed, $fail failed"
[ -z "${MEMC_COUNTS:-}" ] || echo "$suite $pass $fail" >> "$MEMC_COUNTS"
[ "$fail" -eq 0 ]
