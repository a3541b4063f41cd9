#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every stdlib architecture's total parameter count, as `memc list` computes
# it from the .mem files, must equal the published count exactly
# (tests/report/published-counts.txt: validation README Table 3,
# memory-model.md §1). Prints "counts: N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
memc=${1:-build/memc}
got=$("$memc" list --format json tests/report/list-models.mem |
	sed -n 's/.*"name": "\([^"]*\)", "params_total": \([0-9]*\).*/\1 \2/p')
pass=0 fail=0
while read -r name want; do
	have=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$got")
	if [ "$have" = "$want" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: $name: memc says '${have:-missing}', published $want"
		fail=$((fail + 1))
	fi
done <tests/report/published-counts.txt
echo "counts: $pass passed, $fail failed"
[ -n "${MEMC_COUNTS:-}" ] && echo "counts $pass $fail" >>"$MEMC_COUNTS"
[ $fail -eq 0 ]
