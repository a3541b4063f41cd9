#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memc import` on each real config.json of tests/config-import/counts.txt:
# the generated .mem must pass `memc check -Werror`, and `memc list` must
# give the checkpoint's exact parameter count. Prints
# "config-import: N passed, N failed".
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin config-import ../..
memc=${1:-build/memc}
while read -r dir name want; do
	[[ -z $dir || $dir == \#* ]] && continue
	mem=$tmp/$dir.mem
	if ! "$memc" import -o "$mem" "tests/config-import/$dir/config.json" || [ ! -s "$mem" ]; then
		echo "FAIL: $dir: memc import failed"; fail=$((fail + 1)); continue
	fi
	if ! "$memc" check -Werror "$mem"; then
		echo "FAIL: $dir: the imported model does not check clean"; fail=$((fail + 1)); continue
	fi
	have=$("$memc" list --format json "$mem" |
		sed -n "s/.*\"name\": \"$name\", \"params_total\": \([0-9]*\).*/\1/p")
	if [ "$have" = "$want" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: $dir: $name has ${have:-no} params, the checkpoint $want"
		fail=$((fail + 1))
	fi
done <tests/config-import/counts.txt
suite_report
