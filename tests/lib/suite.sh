# SPDX-License-Identifier: MIT
# The frame every shell suite of `make check` shares: sourced, never run.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
#   suite_begin NAME UP	# UP: ".." or "../.." from the script to the root
#   ... pass/fail through suite_pass, suite_fail, expect_ok, expect_caught
#   suite_report		# "NAME: N passed, N failed[, N skipped]"; its status
#
# suite_report appends "NAME PASS FAIL" to $MEMC_COUNTS when that is set
# (the make check tally), and returns non-zero when anything failed, so a
# script can end with it. A scratch folder $tmp lives until the script exits.

suite_begin() {	# $1: suite name, $2: the repository root relative to the script
	set -uo pipefail
	suite_name=$1
	cd "$(dirname "${BASH_SOURCE[1]}")/$2" || exit 2
	export LC_ALL=C.UTF-8
	unset MEMC_PATH
	pass=0 fail=0 skipped=0
	tmp=$(mktemp -d) || exit 2
	trap 'rm -rf "$tmp"' EXIT
}

suite_pass() { pass=$((pass + 1)); }

suite_fail() {	# $1: what failed, $2: the details, if any, printed indented under it
	echo "FAIL: $1"
	[ -n "${2:-}" ] && sed 's/^/    /' <<<"$2"
	fail=$((fail + 1))
}

# $1: what, $2: the problems found (empty: fine), $3: at most this many lines of them.
expect_ok() {
	if [ -z "$2" ]; then suite_pass; else suite_fail "$1" "$(head -n "${3:-40}" <<<"$2")"; fi
}

# $1: a broken input, $2: what the check said of it (empty: it was accepted).
expect_caught() {
	if [ -n "$2" ]; then suite_pass; else suite_fail "$1: a broken input was accepted"; fi
}

# Stop at once when a tool the suite needs is missing: one failure, not a crash.
suite_need() {	# $@: commands
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null && continue
		suite_fail "$suite_name: $tool is missing (make deps installs it)"
		suite_report
		exit
	done
}

suite_report() {
	local line="$suite_name: $pass passed, $fail failed"
	[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
	echo "$line"
	[ -n "${MEMC_COUNTS:-}" ] && echo "$suite_name $pass $fail" >>"$MEMC_COUNTS"
	[ "$fail" -eq 0 ]
}
