#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The stdlib and the examples are in the canonical layout (docs/fmt.md):
# `memc fmt --check` lists none of them, and each one with CRLF line ends,
# blanks at the ends of its lines and extra blank lines around it formats
# back to itself. One case per file; prints "fmt: N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/./lib/suite.sh"
suite_begin fmt ..
memc=${1:-build/memc}

mapfile -t files < <(find stdlib examples -name '*.mem' | sort)
rc=0
"$memc" fmt --check "${files[@]}" >"$tmp/listed" 2>"$tmp/err" || rc=$?
if [ $rc -gt 1 ] || [ -s "$tmp/err" ]; then
	echo "FAIL: memc fmt --check exited $rc"
	sed 's/^/    /' "$tmp/err"
	fail=$((fail + 1))
fi

for f in "${files[@]}"; do
	if grep -qxF -- "$f" "$tmp/listed"; then
		echo "FAIL: $f is not in the canonical layout (run: memc fmt -w $f)"
		"$memc" fmt "$f" | diff -u --label "$f" --label "memc fmt $f" "$f" - | sed 's/^/    /'
		fail=$((fail + 1))
		continue
	fi
	{ printf '\r\n\r\n'; sed 's/$/  \r/' "$f"; printf '\r\n\r\n'; } >"$tmp/messy.mem"
	if "$memc" fmt - <"$tmp/messy.mem" 2>&1 | cmp -s - "$f"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $f with CRLF line ends does not format back to itself"
		fail=$((fail + 1))
	fi
done

suite_report
