#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# make bench-search: issue 15's speed target for memc search, over 10^5
# layouts/s end to end on examples/llama2-70b-3d.mem --top 5 (the best of
# five runs, from --stats), and the mem_analyze() rate of a memory sweep of
# every layout, for docs/search.md. Not part of make check: a shared
# machine's timings are not a test.
#
#   tests/search/bench.sh [MEMC]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
memc=${1:-build/memc}
ex=examples/llama2-70b-3d.mem
best=0
for _ in 1 2 3 4 5; do
	line=$("$memc" search --stats --top 5 "$ex" 2>&1 >/dev/null) || { echo "bench-search: memc search failed"; exit 1; }
	rate=$(sed -E 's/.* verified in [0-9.]+ s \(([0-9]+) layouts\/s\).*/\1/' <<<"$line")
	[ "$rate" -gt "$best" ] && best=$rate
done
echo "search --top 5 $ex: $best layouts/s (best of 5)"
"$memc" search --stats --top 100000 "$ex" 2>&1 >/dev/null | sed 's/^/memory sweep: /'
if [ "$best" -lt 100000 ]; then
	echo "bench-search: below the 10^5 layouts/s target"
	exit 1
fi
