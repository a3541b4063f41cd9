#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
#   tests/fuzz/inline-imports.sh FILE
#
# Prints FILE with every import replaced by the imported file's text, each
# file once, dependencies first: a self-contained program. The fuzz harness
# does not follow imports (an input must not reach the file system), so
# without this every seed that uses the stdlib stops at its first undefined
# name and the fuzzer never reaches the builder and the analyzer with a
# real model. Lookup follows memc's first and last steps: next to the
# importing file, then stdlib/. An import that is found nowhere is kept as
# it is (the harness then reports it, as memc would).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
declare -A seen=()

resolve() { # importer-dir name
	local n="$2"
	case "$n" in *.mem) ;; *) n="$n.mem" ;; esac
	for d in "$1" "$root/stdlib"; do
		if [ -f "$d/$n" ]; then (cd "$(dirname "$d/$n")" && printf '%s/%s\n' "$(pwd -P)" "$(basename "$n")"); return 0; fi
	done
	return 1
}

emit() { # file
	local f="$1" dir line name dep
	[ -z "${seen[$f]+x}" ] || return 0
	seen[$f]=1
	dir="$(dirname "$f")"
	local body=()
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ "$line" =~ ^[[:space:]]*import[[:space:]]+\"([^\"]+)\"[[:space:]]*$ ]]; then
			name="${BASH_REMATCH[1]}"
			if dep="$(resolve "$dir" "$name")"; then emit "$dep"; continue; fi
		fi
		body+=("$line")
	done < "$f"
	printf '%s\n' "${body[@]+"${body[@]}"}"
}

[ $# -eq 1 ] || { echo "usage: $0 FILE" >&2; exit 2; }
start="$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")"
emit "$start"
