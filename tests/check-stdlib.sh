#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Whole-corpus checks: every stdlib file checks on its own with no
# diagnostic under -Werror, and so does every ```mem code block of docs/
# (a block that is a fragment says so with a first line "// fragment").
# Prints "stdlib: N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/./lib/suite.sh"
suite_begin stdlib ..
memc=${1:-build/memc}

check_one() {	# $1: file to check, $2: name to print
	local out
	if out=$("$memc" check -Werror "$1" 2>&1) && [ -z "$out" ]; then
		suite_pass
	else
		suite_fail "$2" "$out"
	fi
}

while IFS= read -r f; do
	check_one "$f" "$f"
done < <(find stdlib -name '*.mem' | sort)

# Code blocks: write each to its own file next to nothing, so imports
# resolve through the stdlib only.
for doc in docs/*.md; do
	awk -v dir="$tmp" -v base="$(basename "$doc" .md)" '
		/^```mem[[:space:]]*$/ { n++; f = sprintf("%s/%s-%02d.mem", dir, base, n); inblk = 1; next }
		/^```/ && inblk { inblk = 0; close(f); next }
		inblk { print > f }
	' "$doc"
done
for f in "$tmp"/*.mem; do
	[ -f "$f" ] || continue
	head -n 1 "$f" | grep -q '^// fragment' && continue
	check_one "$f" "docs code block $(basename "$f" .mem)"
done

suite_report
