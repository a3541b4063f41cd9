#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every stdlib architecture's total parameter count, as `memc list` computes
# it from the .mem files, must equal the published count exactly
# (tests/report/published-counts.txt: validation README Table 3,
# memory-model.md §1, and the Hugging Face checkpoints cited in each
# stdlib/models file), and every stdlib GPU's memory must equal the total its
# driver reports, in MiB (tests/report/published-gpu-memory.txt, cited in
# stdlib/gpus). A listed model instance or GPU without a published row fails
# too, so nothing is added unchecked. Prints "counts: N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/lib/suite.sh"
# suite_begin unsets MEMC_PATH: without a file `memc list` lists the whole
# stdlib, so a new stdlib model file is checked without being registered anywhere.
suite_begin counts ..
memc=${1:-build/memc}
got=$("$memc" list --format json |
	sed -n 's/.*"name": "\([^"]*\)", "params_total": \([0-9][0-9]*\).*/\1 \2/p')
gpus=$("$memc" list --format json |
	sed -n 's/.*"name": "\([^"]*\)", "memory_bytes": \([0-9][0-9]*\).*/\1 \2/p')

while read -r name want; do
	have=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$got")
	if [ "$have" = "$want" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: $name: memc says '${have:-missing}', published $want"
		fail=$((fail + 1))
	fi
done <tests/report/published-counts.txt
while read -r name mib; do
	have=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$gpus")
	if [ -n "$have" ] && [ "$have" = "$((mib * 1048576))" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: GPU $name: memc says '${have:-missing}' B, driver reports $mib MiB"
		fail=$((fail + 1))
	fi
done < <(grep -v '^#' tests/report/published-gpu-memory.txt)
unlisted() {	# $1: memc's "name value" lines, $2: the published file
	while read -r name _; do
		if ! grep -q "^$name " "$2"; then
			echo "FAIL: $name is in the stdlib but has no row in $2"
			fail=$((fail + 1))
		fi
	done <<<"$1"
}
unlisted "$got" tests/report/published-counts.txt
unlisted "$gpus" tests/report/published-gpu-memory.txt
suite_report
