#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Ratio against replay on every validation row (docs/accuracy.md,
# "Reserved memory from the allocator replay").
#
#   modes.sh [--memc PATH] [--shapes] [OUTDIR]
#
# Copies every row file twice into OUTDIR (default build/modes), once with
# `alloc { replay = false }` and once with `alloc { replay = true }` as the
# first line of its train block (a row file's own `alloc { replay = ... }`
# line is dropped), runs validate.sh --rows on each set and prints, per row,
# the signed error of both modes and the replayed reserved/allocated, then
# the summaries of both sets per metric. --shapes: the replayed copies
# also say `data { padding = longest }` where the row's notes say its
# batches are "padded to longest" and its file has no `data` record
# (memory-model.md §5.4 "Batch shapes"; the ratio ignores it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
memc="$root/build/memc"
shapes=0
while [ $# -gt 0 ]; do
	case "$1" in
	--memc) memc=$2; shift 2 ;;
	--shapes) shapes=1; shift ;;
	*) break ;;
	esac
done
out=${1:-$root/build/modes}
mkdir -p "$out/false" "$out/true"
cd "$root" || exit 1
for mode in false true; do
	rows="$out/$mode/rows.tsv"
	: > "$rows"
	grep -v '^#' tests/validation/rows.tsv | while IFS="$(printf '\t')" read -r id src metric meas flag file; do
		[ -n "$id" ] || continue
		copy="$out/$mode/$(basename "$file")"
		extra=
		if [ $shapes = 1 ] && [ $mode = true ] && grep -q '^// Row notes:.*padded to longest' "$file" &&
		   ! grep -q '^[[:space:]]*data[[:space:]]*{' "$file"; then
			extra='\n  data { padding = longest }'
		fi
		sed -e '/^[[:space:]]*alloc[[:space:]]*{[[:space:]]*replay[[:space:]]*=[[:space:]]*[a-z]*[[:space:]]*}[[:space:]]*$/d' \
		    -e "s/^\(train[[:space:]].*{\)[[:space:]]*\$/\1\n  alloc { replay = $mode }$extra/" "$file" > "$copy"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$src" "$metric" "$meas" "$flag" "$copy" >> "$rows"
	done
	"$here/validate.sh" --memc "$memc" --rows "$rows" > "$out/$mode/validate.out" 2>&1
done
# Per row: id metric measured ratio-error replay-error replay reserved/allocated.
{
printf 'row\tmetric\tmeasured\tratio\treplay\treplay_res/alloc\n'
grep -v '^#' tests/validation/rows.tsv | while IFS="$(printf '\t')" read -r id src metric meas flag file; do
	[ -n "$id" ] || continue
	e0=$(awk -v id="$id" '$1 == id { print $7 }' "$out/false/validate.out")
	e1=$(awk -v id="$id" '$1 == id { print $7 }' "$out/true/validate.out")
	ratio=$("$memc" report --format json "$out/true/$(basename "$file")" 2>/dev/null | tr ',' '\n' |
		awk -F: '/"peak_allocated_bytes"/ && !a { a = $2 } /"peak_reserved_bytes"/ && !r { r = $2 }
		     END { if (a > 0) printf "%.3f", r / a; else print "n/a" }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$metric" "$meas" "$e0" "$e1" "$ratio"
done
} > "$out/rows.tsv"
cat "$out/rows.tsv"
# Per metric and mode: n, median, p90 (nearest rank), max of |error|, how
# many below the measurement and how many more than 5 % below.
echo
printf 'metric\tmode\tn\tmedian\tp90\tmax\tbelow\tbelow5\n'
for m in reserved device allocated; do
	for col in 4 5; do
		awk -F'\t' -v m="$m" -v c="$col" 'NR > 1 && $2 == m { v = $c; sub(/%/, "", v); v += 0; print (v < 0 ? -v : v), v }' "$out/rows.tsv" |
		sort -g | awk -v m="$m" -v mode="$([ $col = 4 ] && echo ratio || echo replay)" '
		{ a[NR] = $1 + 0; if ($2 < 0) b++; if ($2 < -5) b5++ }
		END { n = NR; if (!n) exit
		      med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		      k = int(0.9 * n + 0.999999); if (k < 1) k = 1
		      printf "%s\t%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t%d\t%d\n", m, mode, n, med, a[k], a[n], b, b5 }'
	done
done
