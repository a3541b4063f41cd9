#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The editor files of contrib/ (make check-editors): the VS Code files are
# valid JSON, the TextMate grammar and the vim syntax file list exactly the
# language's keywords (docs/language.md, lang/scan.c), and, when vim is
# installed, the vim files load without errors and colour a sample file.
set -u
export LC_ALL=C
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
pass=0 fail=0 skip=0

check() {	# NAME COMMAND...
	if "${@:2}"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: editors: $1"; fi
}
words() { tr ' ' '\n' | grep . | sort | tr '\n' ' '; }

vs=contrib/vscode
for f in package.json language-configuration.json syntaxes/mem.tmLanguage.json; do
	check "$vs/$f is valid JSON" jq -e . "$vs/$f" >/dev/null
done
check "package.json names the grammar file" \
	test "$(jq -r '.contributes.grammars[0].path' $vs/package.json)" = ./syntaxes/mem.tmLanguage.json

spec=$(sed -n '/^\* \*\*Keywords\*\*/,/^\* \*\*Numbers/p' docs/language.md | sed '$d' \
	| sed 's/.*cannot name anything)://' | tr -d '`.\n' | words)
scan=$(sed -n '/^} keywords\[[0-9]*\] = {/,/^};/p' lang/scan.c | grep -o '"[a-z]*"' | tr -d '"' \
	| tr '\n' ' ' | words)
tm=$(jq -r '.repository.keywords.patterns[].match' $vs/syntaxes/mem.tmLanguage.json \
	| sed 's/\\\\b//g; s/\\b//g; s/[()]//g' | tr '|\n' '  ' | words)
vim_kw=$(grep '^syn keyword' contrib/vim/syntax/mem.vim | grep -v memTodo \
	| sed 's/nextgroup=.*//; s/^syn keyword *[A-Za-z]* *//' | tr '\n' ' ' | words)
check "docs/language.md lists keywords" test -n "$spec"
check "docs/language.md keywords are lang/scan.c's" test "$spec" = "$scan"
check "TextMate keywords are the language's ($tm)" test "$tm" = "$spec"
check "vim keywords are the language's ($vim_kw)" test "$vim_kw" = "$spec"

# Syntax group at LINE,COL of tests/lsp/session.mem must be GROUP.
if command -v vim >/dev/null 2>&1; then
	probe() {
		printf 'if synIDattr(synID(%d, %d, 1), "name") !=# "%s" | cquit | endif\n' "$@"
	}
	{
		echo 'set nocompatible'
		echo 'set rtp^=contrib/vim'
		echo 'filetype on'
		echo 'syntax on'
		echo 'edit tests/lsp/session.mem'
		echo 'if &filetype !=# "mem" | cquit | endif'
		probe 1 1 memComment
		probe 5 1 memDecl
		probe 5 8 memString
		probe 11 7 memDeclName
		probe 16 17 memNumber
		probe 24 3 memComment
		probe 13 17 memNumber
		probe 13 19 ""
		echo 'edit tests/lsp/extra.mem'
		probe 6 18 memUnit
		echo 'qall!'
	} > "${TMPDIR:-/tmp}/memc-editors.$$.vim"
	out=$(vim -Nu NONE -es -S "${TMPDIR:-/tmp}/memc-editors.$$.vim" 2>&1 </dev/null); rc=$?
	rm -f "${TMPDIR:-/tmp}/memc-editors.$$.vim"
	check "vim loads contrib/vim and colours session.mem (rc $rc) $out" test "$rc" -eq 0 -a -z "$out"
else
	echo "editors: vim not installed: the vim load test is skipped"
	skip=1
fi

[ "$skip" -eq 0 ] || echo "editors: (the vim test was skipped)"
echo "editors: $pass passed, $fail failed"
[ -z "${MEMC_COUNTS:-}" ] || echo "editors $pass $fail" >> "$MEMC_COUNTS"
[ "$fail" -eq 0 ]
