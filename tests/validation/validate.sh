#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Compare memc's predictions with published measurements.
#
#   validate.sh [--memc PATH] [--rows FILE] [--doc FILE] [--write] [--check]
#
# For every row of tests/validation/rows.tsv (id, source, metric, measured
# GiB, TEST flag, file) it runs `memc report --format json FILE`, takes the
# predicted bytes of the row's metric from the rank class with the largest
# device_total_bytes (the most-loaded rank), and prints the signed error
# (pred - meas) / meas. Metrics: allocated -> peak_allocated_bytes,
# reserved -> peak_reserved_bytes, device -> device_total_bytes.
# A row whose job memc does not analyse (no output, a crash, "analysed":
# false, no rank class) is `n/a` and left out of the statistics.
#
# Summary: median, 90th percentile (nearest rank) and maximum of the absolute
# error, and how many predictions fell below the measurement: for all rows,
# TEST=yes rows, TEST=partial rows and per source.
#
# --write  also rewrite the generated section of docs/accuracy.md (between the
#          BEGIN/END GENERATED markers; text outside them is kept) including
#          the guard line `<!-- guard: median=M p90=P n=N -->` (TEST=yes rows).
# --check  the `make check` guard: every row file must pass `memc check`
#          (exit 0), and the TEST=yes median and p90 must not be worse than
#          the guard line in the doc. With no row analysed, or no figures
#          recorded yet, the guard passes and says so. Appends
#          "validation PASSED FAILED" to $MEMC_COUNTS when that is set.
#
# Needs only bash and a POSIX awk (no jq).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
memc="$root/build/memc"
rows="$here/rows.tsv"
doc="$root/docs/accuracy.md"
write=0
check=0
while [ $# -gt 0 ]; do
	case "$1" in
	--memc) memc=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	--doc) doc=$2; shift 2 ;;
	--write) write=1; shift ;;
	--check) check=1; shift ;;
	-h|--help) sed -n '3,31p' "$0"; exit 0 ;;
	*) echo "validate.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

if [ ! -x "$memc" ]; then
	echo "validate.sh: $memc is not built (run make)" >&2
	[ -n "${MEMC_COUNTS:-}" ] && [ $check -eq 1 ] && echo "validation 0 1" >> "$MEMC_COUNTS"
	exit 1
fi

cd "$root" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memc-validate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

run_limit=()
command -v timeout >/dev/null 2>&1 && run_limit=(timeout 120)

# Predicted bytes for metric $1 from the JSON report on stdin, or "n/a".
# A small tokenizer and a container stack, so the layout of the JSON
# (pretty-printed or on one line, key order) does not matter.
extract() {
	awk -v metric="$1" '
	{ buf = buf $0 "\n" }
	END {
		n = 0; i = 1; L = length(buf)
		while (i <= L) {
			c = substr(buf, i, 1)
			if (c == " " || c == "\t" || c == "\r" || c == "\n") { i++; continue }
			if (c == "\"") {
				j = i + 1; s = ""
				while (j <= L) {
					d = substr(buf, j, 1)
					if (d == "\\") { s = s substr(buf, j, 2); j += 2; continue }
					if (d == "\"") break
					s = s d; j++
				}
				tok[++n] = "S" s; i = j + 1; continue
			}
			if (index("{}[]:,", c)) { tok[++n] = c; i++; continue }
			j = i
			while (j <= L && index(" \t\r\n{}[]:,", substr(buf, j, 1)) == 0) j++
			tok[++n] = "V" substr(buf, i, j - i); i = j
		}
		depth = 0; wantkey = 0; rc = 0; analysed = 0; unanalysed = 0
		for (k = 1; k <= n; k++) {
			t = tok[k]
			if (t == "{" || t == "[") {
				pk = ""
				if (depth > 0) pk = (type[depth] == "{") ? cur[depth] : key[depth] "[]"
				depth++; type[depth] = t; key[depth] = pk; cur[depth] = ""
				inrc[depth] = 0
				if (t == "{" && pk == "rank_classes[]") inrc[depth] = ++rc
				wantkey = (t == "{")
				continue
			}
			if (t == "}" || t == "]") { if (depth > 0) depth--; wantkey = 0; continue }
			if (t == ",") { wantkey = (depth > 0 && type[depth] == "{"); continue }
			if (t == ":") { wantkey = 0; continue }
			if (depth > 0 && type[depth] == "{" && wantkey) { cur[depth] = substr(t, 2); wantkey = 0; continue }
			if (depth == 0 || type[depth] != "{") continue
			v = substr(t, 2)
			if (inrc[depth]) val[inrc[depth], cur[depth]] = v
			if (cur[depth] == "analysed") { if (v == "true") analysed = 1; else unanalysed = 1 }
		}
		field = metric == "allocated" ? "peak_allocated_bytes" : \
			metric == "reserved" ? "peak_reserved_bytes" : \
			metric == "device" ? "device_total_bytes" : ""
		if (field == "" || unanalysed || !analysed || rc == 0) { print "n/a"; exit }
		best = 0; bestdev = -1
		for (r = 1; r <= rc; r++) {
			d = val[r, "device_total_bytes"]
			if (d !~ /^[0-9]+$/) continue
			if (d + 0 > bestdev) { bestdev = d + 0; best = r }
		}
		if (best == 0 || val[best, field] !~ /^[0-9]+$/) { print "n/a"; exit }
		print val[best, field]
	}'
}

# ---- predictions ------------------------------------------------------------

: > "$tmp/results"
nrows=0
check_pass=0
check_fail=0
while IFS=$'\t' read -r id src metric meas flag file; do
	case "$id" in ''|'#'*) continue ;; esac
	nrows=$((nrows + 1))
	if [ ! -f "$file" ]; then
		echo "validate.sh: $id: $file does not exist" >&2
		pred=n/a
		check_fail=$((check_fail + 1))
	else
		if [ $check -eq 1 ]; then
			if "${run_limit[@]}" "$memc" check "$file" >"$tmp/check.out" 2>&1; then
				check_pass=$((check_pass + 1))
			else
				echo "FAIL: memc check $file"; head -20 "$tmp/check.out"
				check_fail=$((check_fail + 1))
			fi
		fi
		"${run_limit[@]}" "$memc" report --format json "$file" >"$tmp/report.json" 2>"$tmp/report.err"
		pred=$(extract "$metric" < "$tmp/report.json")
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$src" "$flag" "$metric" "$meas" "$pred" >> "$tmp/results"
done < "$rows"

# ---- table and statistics -----------------------------------------------------

# Prints the table (format "text" or "md") and the summary; the last line of
# the "guard" format is "median p90 n" for TEST=yes rows ("n/a n/a 0" if none).
stats() {
	awk -F '\t' -v fmt="$1" '
	function absv(x) { return x < 0 ? -x : x }
	function add(g, e) {
		if (!(g in cnt)) { groups[++ng] = g; cnt[g] = 0; below[g] = 0 }
		cnt[g]++; v[g, cnt[g]] = absv(e); if (e < 0) below[g]++
	}
	function summarise(g,    m, i, j, t, med, p90, idx) {
		m = cnt[g]
		for (i = 2; i <= m; i++) {          # insertion sort, m is small
			t = v[g, i]
			for (j = i - 1; j >= 1 && v[g, j] > t; j--) v[g, j + 1] = v[g, j]
			v[g, j + 1] = t
		}
		med = (m % 2) ? v[g, (m + 1) / 2] : (v[g, m / 2] + v[g, m / 2 + 1]) / 2
		idx = int(0.9 * m); if (idx < 0.9 * m) idx++; if (idx < 1) idx = 1
		p90 = v[g, idx]
		S_med[g] = med; S_p90[g] = p90; S_max[g] = v[g, m]
	}
	{
		id = $1; src = $2; flag = $3; metric = $4; meas = $5 + 0; pred = $6
		nall++
		if (pred == "n/a") {
			pg = "n/a"; es = "n/a"; nna++
		} else {
			p = pred / 1073741824; e = (p - meas) / meas * 100
			pg = sprintf("%.2f", p); es = sprintf("%+.1f%%", e)
			add("all", e); add("TEST=" flag, e); add("source " src, e)
		}
		line[nall] = sprintf("%s\t%s\t%s\t%s\t%.2f\t%s\t%s", id, src, flag, metric, meas, pg, es)
	}
	END {
		if (fmt == "guard") {
			g = "TEST=yes"
			if (g in cnt) { summarise(g); printf "%.1f %.1f %d\n", S_med[g], S_p90[g], cnt[g] }
			else print "n/a n/a 0"
			exit
		}
		if (fmt == "md") {
			print "| row | source | TEST | metric | measured GiB | predicted GiB | error |"
			print "|---|---|---|---|---:|---:|---:|"
		} else
			printf "%-9s %-22s %-7s %-9s %9s %9s %8s\n", "row", "source", "TEST", "metric", "measured", "predicted", "error"
		for (i = 1; i <= nall; i++) {
			split(line[i], f, "\t")
			if (fmt == "md") printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7]
			else printf "%-9s %-22s %-7s %-9s %9s %9s %8s\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7]
		}
		print ""
		na = nall - nna
		if (fmt == "md")
			printf "%d rows, %d analysed, %d not analysed (n/a, left out). Absolute error |pred - meas| / meas.\n\n", nall, na, nna
		else
			printf "%d rows, %d analysed, %d not analysed (n/a, left out)\n\n", nall, na, nna
		if (na == 0) { print (fmt == "md" ? "No row is analysed yet: no statistics." : "0 rows analysed: no statistics."); exit }
		if (fmt == "md") {
			print "| rows | n | median | p90 | max | below measurement |"
			print "|---|---:|---:|---:|---:|---:|"
		} else
			printf "%-34s %4s %8s %8s %8s %6s\n", "rows", "n", "median", "p90", "max", "below"
		order[1] = "all"; order[2] = "TEST=yes"; order[3] = "TEST=partial"; no = 3
		for (i = 1; i <= ng; i++) if (groups[i] ~ /^source /) order[++no] = groups[i]
		for (i = 1; i <= no; i++) {
			g = order[i]
			if (!(g in cnt)) continue
			summarise(g)
			if (fmt == "md")
				printf "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %d of %d |\n", g, cnt[g], S_med[g], S_p90[g], S_max[g], below[g], cnt[g]
			else
				printf "%-34s %4d %7.1f%% %7.1f%% %7.1f%% %6d\n", g, cnt[g], S_med[g], S_p90[g], S_max[g], below[g]
		}
	}' "$tmp/results"
}

stats text
read -r cur_med cur_p90 cur_n <<< "$(stats guard)"

if [ $write -eq 1 ]; then
	begin='<!-- BEGIN GENERATED: make validate (tests/validation/validate.sh); edit outside the markers -->'
	end='<!-- END GENERATED -->'
	{
		echo "$begin"
		echo
		stats md
		echo
		echo "Guard (\`make check\`, TEST=yes rows): median and p90 absolute error must not exceed these."
		echo
		echo "<!-- guard: median=$cur_med p90=$cur_p90 n=$cur_n -->"
		echo
		echo "$end"
	} > "$tmp/generated"
	if [ ! -f "$doc" ]; then
		{
			echo "# Prediction accuracy"
			echo
			echo "memc's predictions against published per-GPU measurements"
			echo "(\`tests/validation/\`, one \`.mem\` file per row of"
			echo "\`../shared/validation/measured.csv\`). Regenerate with \`make validate\`."
			echo
			cat "$tmp/generated"
			echo
			echo "## Rows off by more than 10 %"
			echo
			echo "(hand-written explanations; kept across regeneration)"
		} > "$doc"
	elif grep -qF -- "$end" "$doc" && grep -q -- '<!-- BEGIN GENERATED' "$doc"; then
		awk -v gen="$tmp/generated" '
			/<!-- BEGIN GENERATED/ { while ((getline l < gen) > 0) print l; skip = 1; next }
			/<!-- END GENERATED -->/ { skip = 0; next }
			!skip { print }' "$doc" > "$tmp/doc" && cat "$tmp/doc" > "$doc"
	else
		{ echo; cat "$tmp/generated"; } >> "$doc"
	fi
	echo "validate.sh: wrote $doc (guard: median=$cur_med p90=$cur_p90 n=$cur_n)"
fi

[ $check -eq 1 ] || exit 0

# ---- the guard ------------------------------------------------------------------

guard=$(grep -o '<!-- guard: [^>]*-->' "$doc" 2>/dev/null | head -1)
rec_med=$(printf '%s' "$guard" | sed -n 's/.*median=\([^ ]*\).*/\1/p')
rec_p90=$(printf '%s' "$guard" | sed -n 's/.*p90=\([^ ]*\).*/\1/p')
rec_n=$(printf '%s' "$guard" | sed -n 's/.*n=\([0-9]*\).*/\1/p')
echo
if [ "$cur_n" = 0 ]; then
	echo "validation guard: 0 rows analysed (TEST=yes) -- nothing to compare; guard passes"
elif [ -z "$rec_med" ] || [ "$rec_med" = "n/a" ] || [ -z "$rec_p90" ] || [ "$rec_p90" = "n/a" ]; then
	echo "validation guard: $cur_n TEST=yes rows analysed (median $cur_med%, p90 $cur_p90%) but $doc"
	echo "validation guard: records no figures yet -- run 'make validate' to record them; guard passes"
else
	for what in median p90; do
		if [ $what = median ]; then c=$cur_med; r=$rec_med; else c=$cur_p90; r=$rec_p90; fi
		if awk -v c="$c" -v r="$r" 'BEGIN { exit !(c + 0 <= r + 0) }'; then
			echo "validation guard: TEST=yes $what |error| $c% <= recorded $r%"
			check_pass=$((check_pass + 1))
		else
			echo "FAIL: validation guard: TEST=yes $what |error| $c% is worse than the recorded $r% ($doc)"
			check_fail=$((check_fail + 1))
		fi
	done
	if [ -n "$rec_n" ] && [ "$cur_n" -lt "$rec_n" ]; then
		echo "validation guard: note: $cur_n TEST=yes rows analysed, $rec_n when the figures were recorded"
	fi
fi
echo "validation: $check_pass passed, $check_fail failed"
[ -n "${MEMC_COUNTS:-}" ] && echo "validation $check_pass $check_fail" >> "$MEMC_COUNTS"
[ $check_fail -eq 0 ]
