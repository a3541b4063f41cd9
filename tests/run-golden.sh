#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Golden-file test harness.
#
#   tests/run-golden.sh [MEMC] [SUITE_DIR...]
#
# MEMC defaults to build/memc; the suites default to every directory under
# tests/ except tests/unit and tests/validation. A case is either
#
#   SUITE/name.mem        with SUITE/name.{out,err,rc}
#   SUITE/name/main.mem   with SUITE/name/expect.{out,err,rc}   (multi-file)
#
#   SUITE/name.case       one line: the whole memc command line (arguments and
#                         files), with SUITE/name.{out,err,rc}; for checking
#                         files that live elsewhere (examples/)
#
#   SUITE/name.case.sh    a bash script, with SUITE/name.{out,err,rc}, for what
#                         a command line cannot say (a FIFO, standard input,
#                         the environment, 70 arguments). It runs from the
#                         repository root with $MEMC the memc command (use it
#                         unquoted: it may carry MEMC_WRAP) and $SCRATCH an
#                         empty folder of its own; its stdout, stderr and exit
#                         status are what is compared. (A plain .sh in a
#                         suite is a helper, not a case.)
#
# The first line of the .mem file may be "# ARGS: <args>": the memc
# arguments put before the file path (split on whitespace, no quoting).
# Without it the arguments are "check".
#
#   .err  expected stderr; absent means stderr must be empty
#   .out  expected stdout; absent means stdout is not compared
#   .rc   expected exit status; absent means 0
#
# Environment:
#   UPDATE=1         rewrite the expectations from the actual output
#                    (.out/.err only when non-empty, .rc only when non-zero;
#                    stale files are removed). Review `git diff` afterwards.
#   MEMC_WRAP        command put in front of memc (make valgrind uses it)
#   MEMC_COUNTS      file to append "<suite> <passed> <failed>" to
#   MEMC_SUITE_NAME  the <suite> word for MEMC_COUNTS (default: golden)
#
# Runs from the repository root with LC_ALL=C.UTF-8 and MEMC_PATH unset,
# so paths in the output are relative and identical on every machine.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
export LC_ALL=C.UTF-8
unset MEMC_PATH

memc=${1:-build/memc}
[ $# -gt 0 ] && shift
# .sh cases may change folder; give them a memc that works from anywhere.
memc_abs=$memc
[[ $memc == /* ]] || memc_abs=$PWD/$memc
suites=("$@")
if [ ${#suites[@]} -eq 0 ]; then
	for d in tests/*/; do
		d=${d%/}
		# tests/validation has its own suite (tests/validation.mk): its
		# files are scored against measurements, not golden output.
		[ "$d" = tests/unit ] || [ "$d" = tests/validation ] || suites+=("$d")
	done
fi

read -r -a wrap <<<"${MEMC_WRAP:-}"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0

# The memc arguments for case file $1, into the array "args".
case_args() {
	local first
	IFS= read -r first <"$1" || true
	if [[ $1 == *.case.sh ]]; then
		args=()
	elif [[ $1 == *.case ]]; then
		read -r -a args <<<"$first"
	elif [[ $first == "# ARGS:"* ]]; then
		read -r -a args <<<"${first#"# ARGS:"}"
	else
		args=(check)
	fi
}

# Compare expectation file $1 (may be absent) with actual output $2.
# $3: "empty" if an absent file means "must be empty", "skip" if it means
# "not compared".
compare() {
	local want=$1 got=$2 absent=$3
	if [ -f "$want" ]; then
		diff -u --label "$want" --label "actual" "$want" "$got" >>"$tmp/diff"
	elif [ "$absent" = empty ] && [ -s "$got" ]; then
		diff -u --label "$want (absent: empty)" --label "actual" /dev/null "$got" >>"$tmp/diff"
		return 1
	fi
}

# Write or remove an expectation file: keep it only when $2 is non-empty.
update_file() {
	local want=$1 got=$2
	if [ -s "$got" ]; then
		cp "$got" "$want"
	else
		rm -f "$want"
	fi
}

# Run one case: $1 the .mem file, $2 the expectation prefix.
run_case() {
	local mem=$1 exp=$2 rc=0 want_rc=0 ok=1
	case_args "$mem"
	: >"$tmp/diff"
	if [ ! -x "$memc" ]; then
		echo "FAIL: $mem ($memc is not built)"
		fail=$((fail + 1))
		return
	fi
	local files=("$mem")
	[[ $mem == *.case ]] && files=()
	if [[ $mem == *.case.sh ]]; then
		rm -rf "$tmp/scratch" && mkdir "$tmp/scratch"
		MEMC="${wrap[*]} $memc_abs" SCRATCH="$tmp/scratch" bash "$mem" \
			>"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	else
		"${wrap[@]}" "$memc" "${args[@]}" "${files[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	fi

	if [ "${UPDATE:-0}" = 1 ]; then
		update_file "$exp.err" "$tmp/err"
		[ -f "$exp.out" ] || [ -s "$tmp/out" ] && update_file "$exp.out" "$tmp/out"
		if [ $rc -ne 0 ]; then echo "$rc" >"$exp.rc"; else rm -f "$exp.rc"; fi
	fi

	[ -f "$exp.rc" ] && want_rc=$(<"$exp.rc")
	compare "$exp.err" "$tmp/err" empty || ok=0
	compare "$exp.out" "$tmp/out" skip || ok=0
	[ -s "$tmp/diff" ] && ok=0
	if [ "$rc" != "$want_rc" ]; then
		echo "exit status: expected $want_rc, got $rc" >>"$tmp/diff"
		ok=0
	fi
	if [ $ok -eq 1 ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: $mem (memc ${args[*]} ${files[*]})"
		sed 's/^/    /' "$tmp/diff"
		fail=$((fail + 1))
	fi
}

for suite in "${suites[@]}"; do
	[ -d "$suite" ] || { echo "run-golden: no suite directory '$suite'" >&2; exit 2; }
	for f in "$suite"/*.mem; do
		[ -f "$f" ] && run_case "$f" "${f%.mem}"
	done
	for f in "$suite"/*.case; do
		[ -f "$f" ] && run_case "$f" "${f%.case}"
	done
	for f in "$suite"/*.case.sh; do
		[ -f "$f" ] && run_case "$f" "${f%.case.sh}"
	done
	for d in "$suite"/*/; do
		[ -f "$d/main.mem" ] && run_case "${d}main.mem" "${d}expect"
	done
done

name=${MEMC_SUITE_NAME:-golden}
echo "$name: $pass passed, $fail failed"
[ -n "${MEMC_COUNTS:-}" ] && echo "$name $pass $fail" >>"$MEMC_COUNTS"
[ $fail -eq 0 ]
