#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The GitHub problem matcher (make check-problem-matcher):
# contrib/github/memc-problem-matcher.json is well-formed, and its regexp
# (read with jq, run with perl, whose syntax it shares with JavaScript's
# for these constructs) matches the first line of every error and warning
# in the golden .err files, with the right file, line, column, severity,
# message and name, and no other line: not a note, a source line, a caret
# or the tally. Prints failures, then "problem-matcher: N passed,
# N failed"; appends "problem-matcher N F" to $MEMC_COUNTS if set.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin problem-matcher ../..
matcher=contrib/github/memc-problem-matcher.json
suite_need jq perl

expect_ok "$matcher is a problem matcher" "$(jq -e '.problemMatcher | length == 1 and
	(.[0].owner | type == "string") and (.[0].pattern | length == 1) and
	(.[0].pattern[0] | (.regexp | type == "string") and .file == 1 and .line == 2 and
	 .column == 3 and .severity == 4 and .message == 5 and .code == 6)' "$matcher" >/dev/null 2>&1 ||
	echo "missing or misnumbered members")"
MATCHER_RE=$(jq -r '.problemMatcher[0].pattern[0].regexp' "$matcher") || exit 2
export MATCHER_RE

# "file|line|col|severity|message|code" for each line of stdin the matcher
# takes, or "-" for a line it does not.
captures() {
	perl -ne 'BEGIN { $re = qr/$ENV{MATCHER_RE}/ } chomp;
		print /$re/ ? "$1|$2|$3|$4|$5|$6\n" : "-\n"'
}

shopt -s nullglob
errs=(tests/*/*.err tests/*/*/expect.err)
expect_ok "golden .err files found" "$( [ ${#errs[@]} -ge 100 ] || echo "only ${#errs[@]}")"

# Every line of every golden: a diagnostic's first line is one with a
# position (no golden file name has a space) and "error:" or "warning:";
# exactly those must match.
diag='^[^ ][^ ]*:[0-9]+:[0-9]+: (error|warning): '
expect_ok "every error and warning line matches" "$(for f in "${errs[@]}"; do
		grep -E "$diag" "$f" | captures | grep -n '^-$' | sed "s|^|$f: line |"
	done)"
expect_ok "no other line matches" "$(for f in "${errs[@]}"; do
		grep -vE "$diag" "$f" | captures | grep -v '^-$' | sed "s|^|$f: |"
	done)"

# Exact captures: an error, a warning whose message holds a bracket and a
# forged locus, a promoted warning, a note and a located-nowhere error.
check_line() {
	local want=$1 line=$2 got
	got=$(printf '%s\n' "$line" | captures)
	expect_ok "captures of: $line" "$( [ "$got" = "$want" ] || echo "got: $got")"
}
check_line "tests/cli/color-never.mem|4|5|error|'G' is already defined|duplicate-definition" \
	"$(sed -n 1p tests/cli/color-never.err)"
check_line 'tests/bad/warn-forged-line.mem|8|3|warning|h = 8\nforged.mem:1:1: error: the job does not fit [capacity]\t\x1b[2K|layout' \
	"$(sed -n 1p tests/bad/warn-forged-line.err)"
check_line 'a b.mem|19|3|error|device total 90 GiB is more than 80 GiB|capacity' \
	'a b.mem:19:3: error: device total 90 GiB is more than 80 GiB [-Werror=capacity]'
check_line '-' 'tests/cli/color-never.mem:3:5: note: previous definition of '\''G'\'' is here'
check_line '-' 'memc: error: cannot read x.mem [file-not-found]'

suite_report
