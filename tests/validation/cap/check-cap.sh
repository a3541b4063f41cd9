#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The capacity suite: configurations published as "OOM" or "fits" (the
# validation data's CAP rows, ../shared/validation/README.md section 4), one
# tests/validation/cap/CAP-NN.mem per row. Fails when memc puts one on the
# wrong side of its GPU's memory. One count per expectation.
#
#   check-cap.sh [--memc PATH] [--table] [FILE...]
#
# Every train block of a file has one or more expectation lines:
#
#   // EXPECT: JOB SIDE [METRIC OP VALUE UNIT] [xfail]
#
#   SIDE    oom   the most-loaded rank class's device total (reserved + CUDA
#                 context), less its paged optimizer states, which the
#                 driver evicts (what -Wcapacity compares), exceeds the GPU's
#                 memory
#           fits  it does not
#   METRIC  device | allocated | reserved (that class's figure, bytes),
#           unpaged (device less the paged states) or
#           aggregate_states (weights + gradients + optimizer states at the
#           peak, times the ranks, summed over the classes: the figure that
#           does not depend on the GPU count under full sharding)
#   OP      <= or >=;  UNIT  MiB, GiB, TiB, GB, TB
#   SIDE may be left out when a bound is given (an aggregate has no side).
#   xfail   memc is known to be on the wrong side (the file says why): the
#           case passes while it stays wrong and fails once it is right, so
#           the expectation and docs/accuracy.md get updated
#
# A file that does not analyse, a train block without an expectation, an
# expectation naming no train block, a JSON report whose `fits` disagrees
# with its bytes: each is a failure. --table prints the figures as the
# Markdown rows of docs/accuracy.md's capacity section instead of checking.
# The suite checks itself on broken copies of CAP-01 and CAP-09 (a flipped
# side, a missing expectation, an unmet bound, an xfail that holds).
# Appends "cap PASSED FAILED" to $MEMC_COUNTS when that is set.

. "$(dirname "${BASH_SOURCE[0]}")/../../lib/suite.sh"
suite_begin cap ../../..

memc=build/memc
table=0
files=()
while [ $# -gt 0 ]; do
	case "$1" in
	--memc) memc=$2; shift 2 ;;
	--table) table=1; shift ;;
	-h|--help) sed -n '3,35p' "$0"; exit 0 ;;
	*) files+=("$1"); shift ;;
	esac
done
[ ${#files[@]} -gt 0 ] || files=(tests/validation/cap/CAP-*.mem)
suite_need jq
if [ ! -x "$memc" ]; then
	suite_fail "$memc is not built (run make)"
	suite_report
	exit
fi

# The figures of every job of report $1, one tab-separated line per job:
# name analysed device allocated reserved capacity fits aggregate_states paged.
figures() {
	jq -r '.files[0].jobs[] |
		(.rank_classes // []) as $rc |
		($rc | max_by(.device_total_bytes) // {}) as $k |
		[.name, .analysed,
		 ($k.device_total_bytes // "n/a"), ($k.peak_allocated_bytes // "n/a"),
		 ($k.peak_reserved_bytes // "n/a"), ($k.capacity_bytes // "n/a"), ($k.fits | tostring),
		 ([$rc[] | .ranks * (.components.weights + .components.gradients + .components.optimizer)] | add // "n/a"),
		 ($k.paged_unified_bytes // 0)]
		| map(tostring) | join("\t")' "$1"
}

gib() { awk -v b="$1" 'BEGIN { printf "%.2f GiB", b / 1073741824 }'; }

# Bytes of VALUE UNIT.
to_bytes() {
	awk -v v="$1" -v u="$2" 'BEGIN {
		m = u == "MiB" ? 2^20 : u == "GiB" ? 2^30 : u == "TiB" ? 2^40 : u == "GB" ? 1e9 : u == "TB" ? 1e12 : 0
		if (m == 0 || v !~ /^[0-9]+(\.[0-9]+)?$/) exit 1
		printf "%.0f", v * m }'
}

# Checks expectation $2 (the text after "EXPECT: ") of file $1 against the
# figures in $tmp/fig; prints one line, returns 1 when it does not hold.
check_expect() {
	local file=$1 job side metric op value unit xfail=0 got want ok=1 what
	read -r -a w <<<"$2"
	job=${w[0]}
	w=("${w[@]:1}")
	[ ${#w[@]} -gt 0 ] && [ "${w[-1]}" = xfail ] && { xfail=1; unset 'w[-1]'; }
	side=
	case "${w[0]:-}" in oom|fits) side=${w[0]}; w=("${w[@]:1}") ;; esac
	metric=${w[0]:-} op=${w[1]:-} value=${w[2]:-} unit=${w[3]:-}
	if [ ${#w[@]} -ne 0 ] && [ ${#w[@]} -ne 4 ] || [ -z "$side$metric" ]; then
		echo "bad expectation '$2'"; return 1
	fi
	local line
	line=$(awk -F '\t' -v j="$job" '$1 == j' "$tmp/fig")
	[ -n "$line" ] || { echo "$job: no such train block"; return 1; }
	IFS=$'\t' read -r _ analysed device alloc reserved cap fits agg paged <<<"$line"
	[ "$analysed" = true ] || { echo "$job: not analysed"; return 1; }
	what="$job"
	if [ -n "$side" ]; then
		local over=0
		[ $((device - paged)) -gt "$cap" ] && over=1
		if [ "$fits" != "$([ $over -eq 0 ] && echo true || echo false)" ]; then
			echo "$job: the report's fits=$fits disagrees with device $device of $cap"; return 1
		fi
		if { [ "$side" = oom ] && [ $over -eq 0 ]; } || { [ "$side" = fits ] && [ $over -eq 1 ]; }; then
			ok=0
		fi
		what="$what $side: device $(gib "$device") of $(gib "$cap")"
		[ "$paged" -gt 0 ] && what="$what ($(gib "$((device - paged))") without the paged states)"
	fi
	if [ -n "$metric" ]; then
		case "$metric" in
		device) got=$device ;; allocated) got=$alloc ;; reserved) got=$reserved ;;
		unpaged) got=$((device - paged)) ;;
		aggregate_states) got=$agg ;;
		*) echo "bad metric '$metric'"; return 1 ;;
		esac
		want=$(to_bytes "$value" "$unit") || { echo "bad value '$value $unit'"; return 1; }
		case "$op" in
		'<=') [ "$got" -le "$want" ] || ok=0 ;;
		'>=') [ "$got" -ge "$want" ] || ok=0 ;;
		*) echo "bad operator '$op'"; return 1 ;;
		esac
		what="$what; $metric $(gib "$got") $op $value $unit"
	fi
	if [ $xfail -eq 1 ]; then
		[ $ok -eq 0 ] && { echo "XFAIL $what (known wrong side)"; return 0; }
		echo "$what: expected to be wrong (xfail) but holds: update the expectation"; return 1
	fi
	[ $ok -eq 1 ] && { echo "ok $what"; return 0; }
	echo "$what: wrong side"; return 1
}

# Checks every expectation of file $1; prints one line per expectation
# ("PASS ..." or "FAIL ...", and a FAIL for a train block without one);
# returns the number of failures.
check_file() {
	local file=$1 nfail=0 job e out
	if ! "$memc" report --format json "$file" >"$tmp/r.json" 2>"$tmp/r.err"; then
		echo "FAIL $file: memc report failed: $(head -1 "$tmp/r.err")"; return 1
	fi
	figures "$tmp/r.json" >"$tmp/fig" || { echo "FAIL $file: unreadable report"; return 1; }
	mapfile -t exps < <(sed -n 's|^// EXPECT: *||p' "$file")
	[ ${#exps[@]} -gt 0 ] || { echo "FAIL $file: no EXPECT line"; return 1; }
	while IFS=$'\t' read -r job _; do
		printf '%s\n' "${exps[@]}" | awk -v j="$job" '$1 == j { f = 1 } END { exit !f }' ||
			{ echo "FAIL $file: train block $job has no EXPECT line"; nfail=$((nfail + 1)); }
	done <"$tmp/fig"
	for e in "${exps[@]}"; do
		if out=$(check_expect "$file" "$e"); then
			echo "PASS $file: $out"
		else
			echo "FAIL $file: $out"; nfail=$((nfail + 1))
		fi
	done
	return $nfail
}

# Markdown rows for docs/accuracy.md: per expectation, memc's device total
# less its paged states against the GPU's memory (the margin: capacity less
# that, negative when over), the bound if the expectation has one, and the
# verdict.
print_table() {
	local file e job side device cap agg paged bound verdict w
	echo "| row | train block | observed | memc device total | capacity | margin | bound | memc |"
	echo "|---|---|---|---:|---:|---:|---|---|"
	for file in "${files[@]}"; do
		"$memc" report --format json "$file" >"$tmp/r.json" 2>/dev/null
		figures "$tmp/r.json" >"$tmp/fig"
		while IFS= read -r e; do
			read -r -a w <<<"$e"
			job=${w[0]} side=- bound=
			case "${w[1]:-}" in oom|fits) side=${w[1]} ;; esac
			IFS=$'\t' read -r _ _ device _ _ cap _ agg paged <<<"$(awk -F '\t' -v j="$job" '$1 == j' "$tmp/fig")"
			out=$(check_expect "$file" "$e") && verdict=${out%% *} || verdict=WRONG
			[ "$verdict" = ok ] && verdict=right
			case "$out" in *'; '*) bound=${out#*; } ;; esac
			bound=${bound% (known wrong side)}
			if [ "$side" = - ]; then
				printf '| %s | %s | %s | - | - | - | %s | %s |\n' "$(basename "$file" .mem)" "$job" \
					"${e#"$job" }" "$bound" "$verdict"
				continue
			fi
			local shown
			shown=$(gib "$((device - paged))")
			[ "$paged" -gt 0 ] && shown="$shown (+ $(gib "$paged") paged)"
			printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(basename "$file" .mem)" "$job" \
				"$side" "$shown" "$(gib "$cap")" \
				"$(awk -v d="$((device - paged))" -v c="$cap" 'BEGIN { printf "%+.2f GiB (%+.1f%%)", (c - d) / 2^30, (c - d) / c * 100 }')" \
				"${bound:--}" "$verdict"
		done < <(sed -n 's|^// EXPECT: *||p' "$file")
	done
}

if [ $table -eq 1 ]; then
	print_table
	exit 0
fi

for f in "${files[@]}"; do
	while IFS= read -r line; do
		case "$line" in
		PASS*) suite_pass; echo "${line#PASS }" ;;
		*) suite_fail "${line#FAIL }" ;;
		esac
	done < <(check_file "$f")
done

# The suite must be able to fail: broken copies of CAP-01 and CAP-09.
cap01=tests/validation/cap/CAP-01.mem cap09=tests/validation/cap/CAP-09.mem
mkdir -p "$tmp/broken"
if [ -f "$cap01" ] && [ -f "$cap09" ]; then
	b=$tmp/broken/CAP-01.mem
	sed 's|^// EXPECT: CAP_01_mb4 oom|// EXPECT: CAP_01_mb4 fits|' "$cap01" >"$b"
	expect_caught "CAP-01 with mb 4 expected to fit" "$(check_file "$b" >/dev/null || echo caught)"
	sed '/^\/\/ EXPECT: CAP_01_mb2/d' "$cap01" >"$b"
	expect_caught "CAP-01 without the mb 2 expectation" "$(check_file "$b" >/dev/null || echo caught)"
	sed 's|^// EXPECT: CAP_01_mb4 oom|// EXPECT: CAP_01_mb4 oom xfail|' "$cap01" >"$b"
	expect_caught "CAP-01 with an xfail that holds" "$(check_file "$b" >/dev/null || echo caught)"
	b=$tmp/broken/CAP-09.mem
	sed 's|unpaged <= 44.7 GiB|unpaged <= 4.7 GiB|' "$cap09" >"$b"
	expect_caught "CAP-09 with a 4.7 GiB bound" "$(check_file "$b" >/dev/null || echo caught)"
else
	suite_fail "the self-checks need $cap01 and $cap09"
fi
suite_report
