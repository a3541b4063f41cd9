#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The machine formats' goldens are well-formed, not just unchanged
# (make check-output-schema; docs/diagnostics.md, Machine formats):
#   - tests/output/json-*.out validate against docs/diagnostics.schema.json;
#   - every report --format json golden (tests/*/*.out) validates against
#     docs/report.schema.json, and its "diagnostics" against
#     diagnostics.schema.json#/$defs/diagnostic, the object both share;
#   - tests/output/sarif-*.out (and, with $MEMC set, memc's SARIF for
#     every example and for a file that does not parse) validate against
#     the SARIF 2.1.0 schema as OASIS published it, with ajv
#     (fetch-sarif-schema.sh puts both into build/sarif-official once; when
#     they cannot be fetched that check says SKIP and the goldens are held
#     to the subset below only);
#   - tests/output/sarif-*.out also validate against sarif-subset.schema.json,
#     memc's own stricter profile (columnKind, no <stdlib> URIs), and every
#     result's ruleIndex names the rule of its ruleId;
#   - every line of tests/output/github-*.out is a workflow command whose
#     properties are escaped;
#   - every memc search --format json golden validates against
#     docs/search.schema.json.
# Then mutated copies that must be rejected, so that the checks can fail.
# The validator is tests/output/validate.jq (jq is in tools/install-deps.sh).
# Prints failures, then "output-schema: N passed, N failed"; appends
# "output-schema N F" to $MEMC_COUNTS if set.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
export LC_ALL=C.UTF-8

schema=docs/diagnostics.schema.json
report_schema=docs/report.schema.json
sarif=tests/output/sarif-subset.schema.json
validator=tests/output/validate.jq
official=${SARIF_SCHEMA_DIR:-build/sarif-official}
pass=0
fail=0
skipped=
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

report() {
	[ -n "$skipped" ] && echo "SKIP: $skipped"
	echo "output-schema: $pass passed, $fail failed${skipped:+ (1 check skipped)}"
	[ -n "${MEMC_COUNTS:-}" ] && echo "output-schema $pass $fail" >>"$MEMC_COUNTS"
	[ $fail -eq 0 ]
}

if ! command -v jq >/dev/null; then
	echo "check-schema: jq is missing (make deps installs it)"
	fail=1
	report
	exit
fi

# Violations of schema $1 (optionally at $3, a "#/$defs/..." ref) by file $2.
violations() {
	jq -r --slurpfile schema "$1" ${3:+--arg ref "$3"} -f "$validator" "$2" 2>&1
}

# Broken references between ruleIndex and the rules array of SARIF file $1.
rule_mismatches() {
	jq -r '.runs[] | .tool.driver.rules as $r | .results[]
		| select($r[.ruleIndex].id != .ruleId) | "ruleIndex \(.ruleIndex) is not \(.ruleId)"' "$1" 2>&1
	jq -r '.runs[] | [.tool.driver.rules[].id] | select(length != (unique | length))
		| "a rule is listed twice"' "$1" 2>&1
}

prop='[^,:%[:cntrl:]]*(%(25|0D|0A|3A|2C)[^,:%[:cntrl:]]*)*'
msg='[^%[:cntrl:]]*(%(25|0D|0A)[^%[:cntrl:]]*)*'
github_re="^::(error|warning|notice) (file=$prop,line=[0-9]+,(col=[0-9]+,endLine=[0-9]+,endColumn=[0-9]+|endLine=[0-9]+),)?title=$prop::$msg\$"

# Lines of github-format file $1 that are not well-formed commands, or
# that give columns on a range of several lines (GitHub refuses them).
github_bad() {
	grep -nvE "$github_re" "$1"
	awk '/,col=/ { l = $0; e = $0
		sub(/.*,line=/, "", l); sub(/,.*/, "", l); sub(/.*,endLine=/, "", e); sub(/,.*/, "", e)
		if (l != e) print FILENAME ":" NR ": columns on lines " l "-" e }' "$1"
}

# $1: what, $2: the problems found (empty: fine).
expect_ok() {
	if [ -z "$2" ]; then pass=$((pass + 1)); else
		echo "FAIL: $1"; sed 's/^/    /' <<<"$2"; fail=$((fail + 1)); fi
}

expect_rejected() {
	if [ -n "$2" ]; then pass=$((pass + 1)); else
		echo "FAIL: $1: a broken document was accepted"; fail=$((fail + 1)); fi
}

shopt -s nullglob
for f in tests/output/json-*.out; do
	expect_ok "$f" "$(violations "$schema" "$f")"
done
for f in tests/*/*.out tests/*/*/expect.out; do
	grep -q '"memc_report_version"' "$f" || continue
	expect_ok "$f (report)" "$(violations "$report_schema" "$f")"
	jq '[.files[].diagnostics[]]' "$f" >"$tmp/diags.json" 2>/dev/null || {
		expect_ok "$f" "not JSON"; continue; }
	expect_ok "$f (diagnostics)" "$(jq -c '.[]' "$tmp/diags.json" | while IFS= read -r d; do
			printf '%s\n' "$d" >"$tmp/one.json"
			violations "$schema" "$tmp/one.json" '#/$defs/diagnostic'
		done)"
done
for f in tests/output/sarif-*.out; do
	expect_ok "$f" "$(violations "$sarif" "$f"; rule_mismatches "$f")"
done
# memc search --format json (docs/search.schema.json)
for f in tests/*/*.out; do
	grep -q '"schema": "memc-search/1"' "$f" || continue
	expect_ok "$f (search)" "$(violations docs/search.schema.json "$f")"
done
for f in tests/output/github-*.out; do
	expect_ok "$f" "$(github_bad "$f")"
done

# Violations of the official SARIF 2.1.0 schema by files "$@".
official_violations() {
	node tests/output/validate-sarif.js "$official/node_modules" "$official/sarif-2.1.0-rtm.5.json" "$@" 2>&1
}

if tests/output/fetch-sarif-schema.sh "$official" 2>"$tmp/fetch.err"; then
	sarifs=(tests/output/sarif-*.out)
	if [ -n "${MEMC:-}" ]; then
		$MEMC check --format sarif examples/*.mem >"$tmp/examples.sarif" 2>/dev/null
		$MEMC check --format sarif tests/output/src/parse-error.mem >"$tmp/parse-error.sarif" 2>/dev/null
		sarifs+=("$tmp/examples.sarif" "$tmp/parse-error.sarif")
	fi
	for f in "${sarifs[@]}"; do
		expect_ok "$f (SARIF 2.1.0)" "$(official_violations "$f")"
	done
	for m in '.version = "2.0.0"' '.runs[0].results[0].level = "fatal"' \
		 '.runs[0].results[0].locations[0].physicalLocation.region.startLine = 0' \
		 '.runs[0].tool.driver.extra = 1' 'del(.runs[0].tool.driver.name)'; do
		jq "$m" tests/output/sarif-capacity.out >"$tmp/bad.sarif"
		expect_rejected "SARIF 2.1.0: $m" "$(official_violations "$tmp/bad.sarif")"
	done
else
	skipped="the official SARIF 2.1.0 schema: $(tail -1 "$tmp/fetch.err"); memc's SARIF was checked against tests/output/sarif-subset.schema.json only"
fi

# The controls: each mutation must be caught.
base=tests/output/json-capacity.out
for m in 'del(.schema)' '.schema = "memc-diagnostics/2"' '.files[0].extra = 1' \
	 '.files[0].diagnostics[0].severity = "fatal"' '.files[0].diagnostics[0].line = 0' \
	 '.files[0].diagnostics[0].notes[1].fix.replacement = 1' '.errors = "1"'; do
	jq "$m" "$base" >"$tmp/bad.json"
	expect_rejected "json: $m" "$(violations "$schema" "$tmp/bad.json")"
done
base=tests/report/independent-jobs-json.out
for m in 'del(.schema)' '.memc_report_version = 2' '.files[0].jobs[1].layout.dp = 0' \
	 '.files[0].jobs[1].params_total = 0' '.files[0].jobs[0].rank_classes[0].phase_peaks.optimizer = 0' \
	 'del(.files[0].jobs[0].rank_classes[0].stored_activations)' \
	 '.files[0].jobs[0].rank_classes[0].peak_phase = "optimizer"' '.files[0].jobs[0].extra = 1'; do
	jq "$m" "$base" >"$tmp/bad.json"
	expect_rejected "report: $m" "$(violations "$report_schema" "$tmp/bad.json")"
done
base=tests/search/json.out
for m in 'del(.schema)' '.jobs[0].results[0].tp = 0' '.jobs[0].results[0].checkpoint = "some"' \
	 'del(.jobs[0].as_written)' '.jobs[0].results[0].extra = 1'; do
	jq "$m" "$base" >"$tmp/bad.json"
	expect_rejected "search: $m" "$(violations docs/search.schema.json "$tmp/bad.json")"
done
base=tests/output/sarif-capacity.out
for m in '.runs[0].results[0].locations[0].physicalLocation.region.startColumn = 0' \
	 '.runs[0].results[0].level = "fatal"' 'del(.runs[0].columnKind)' \
	 '.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri = "<stdlib>/a.mem"' \
	 '.runs[0].results[0].ruleIndex = 1'; do
	jq "$m" "$base" >"$tmp/bad.json"
	expect_rejected "sarif: $m" "$(violations "$sarif" "$tmp/bad.json"; rule_mismatches "$tmp/bad.json")"
done
for line in '::warning file=a,b.mem,line=1,col=1,endLine=1,endColumn=2,title=x::m' \
	    '::error file=a.mem,line=1,title=x::m' '::error title=x::100% sure' \
	    '::error file=a.mem,line=2,col=1,endLine=3,endColumn=1,title=x::m'; do
	printf '%s\n' "$line" >"$tmp/bad.txt"
	expect_rejected "github: $line" "$(github_bad "$tmp/bad.txt")"
done

report
