#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `memc report --format html` (make check-html; docs/testing.md):
#   - the page is self-contained (no script, nothing fetched) and the same
#     bytes on every run;
#   - one chart per rank class of the JSON report, each chart's geometry
#     agrees with its bytes (tests/html/geometry.awk), and its columns with
#     the JSON's peak and phase_peaks;
#   - the formulas of --explain are behind a <details>, a failed job says
#     it was not analysed;
#   - headless chromium renders it: the screenshot is not blank, and the
#     bars measured in its pixels are as wide and as tall as the SVG says.
# The browser part is skipped, and said so, where chromium cannot start;
# the tiny PNG reader (tests/html/pngstat.c) needs zlib.
# Prints failures, then "html: N passed, N failed[, N skipped]"; appends
# "html N F" to $MEMC_COUNTS if set.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin html ../..
memc=${1:-build/memc}
work=$(cd "$(dirname "$memc")" && pwd)/html-check
rm -rf "$work" && mkdir -p "$work" || exit 2
example=examples/llama2-70b-3d.mem
html=$work/report.html
"$memc" report --format html "$example" >"$html" 2>"$work/err"
expect_ok "report --format html exits 0" "$([ $? -eq 0 ] || cat "$work/err")"
"$memc" report --format html "$example" 2>/dev/null | cmp -s - "$html"
expect_ok "the page is the same on a second run" "$([ $? -eq 0 ] || echo differs)"
# The SVG namespace is a name, not a fetch.
expect_ok "the page is self-contained" "$(sed 's|xmlns="http://www.w3.org/2000/svg"||' "$html" |
	grep -noiE '<script|<link|<img|<iframe|src=|@import|url\(|https?:|//[a-z]')"
expect_ok "the page is one HTML document" "$(head -c 15 "$html" | grep -qx '<!DOCTYPE html>' || echo 'no doctype'
	[ "$(tail -n 1 "$html")" = "</html>" ] || echo 'does not end with </html>')"

"$memc" report --format json "$example" >"$work/report.json" 2>/dev/null
awk -f tests/html/geometry.awk "$html" >"$work/geometry"
expect_ok "the SVG geometry matches its bytes" "$(grep '^FAIL' "$work/geometry")"
expect_ok "one chart per rank class" "$(want=$(jq '[.files[].jobs[].rank_classes[]] | length' "$work/report.json")
	got=$(grep -c '^svg ' "$work/geometry"); [ "$want" -gt 0 ] && [ "$want" = "$got" ] ||
	echo "$got charts for $want rank classes")"
# The peak's column is the report's peak; each phase's tallest column is its phase_peaks.
expect_ok "the columns are the JSON's peaks" "$(diff <(jq -r '[.files[].jobs[].rank_classes[]] | to_entries[]
		| "\(.key) \(.value.peak_allocated_bytes) \(.value.device_total_bytes)",
		  (.key as $k | .value.phase_peaks | to_entries[] | select(.value)
		   | "\($k) \(.key) \(.value)")' "$work/report.json") \
	<(awk '$1 == "col" && $6 == 1 { print $2, $4, $5 }
		$1 == "col" && $4 > max[$2 " " $3] { max[$2 " " $3] = $4 }
		$1 == "col" && !(($2 " " $3) in seen) { seen[$2 " " $3] = 1; order[++n] = $2 " " $3 }
		END { for (i = 1; i <= n; i++) print order[i], max[order[i]] }' "$work/geometry" |
	  sort -k1,1n -s))"
expect_ok "capacity lines at the JSON's capacity" "$(diff <(jq -r '[.files[].jobs[].rank_classes[]] | to_entries[]
	| select(.value.capacity_bytes) | "\(.key) \(.value.capacity_bytes)"' "$work/report.json") \
	<(awk '$1 == "capacity" { print $2, $3 }' "$work/geometry"))"
expect_ok "the formulas are behind a click" "$(n=$(grep -c '<details><summary>Formulas' "$html")
	[ "$n" -eq "$(grep -c '^svg ' "$work/geometry")" ] || echo "$n <details> blocks"
	"$memc" report --explain "$example" 2>/dev/null | sed -n 's/^        \(weights = .*\)/\1/p' |
	while IFS= read -r f; do grep -qF "<code>$f</code>" "$html" || echo "missing: $f"; done)"

# The controls: a page whose picture disagrees with its numbers is caught.
expect_rejected() {
	if [ -n "$2" ]; then pass=$((pass + 1)); else
		echo "FAIL: $1: a wrong page was accepted"; fail=$((fail + 1)); fi
}
sed '0,/class="c-optimizer" x="\([^"]*\)" y="\([^"]*\)" width="\([^"]*\)" height="/s//&1/' "$html" >"$work/taller.html"
expect_rejected "a rect taller than its bytes" "$(awk -f tests/html/geometry.awk "$work/taller.html" | grep '^FAIL')"
sed '0,/data-bytes="\([0-9]*\)"><title>activations/s//data-bytes="1\1"><title>activations/' "$html" >"$work/bytes.html"
expect_rejected "a column whose rects do not add up" "$(awk -f tests/html/geometry.awk "$work/bytes.html" | grep '^FAIL')"

failed_job() {
	"$memc" report --format html tests/report/independent-jobs-json.mem >"$work/failed.html" 2>/dev/null
	[ $? -eq 1 ] || echo 'exit status is not 1'
	[ "$(grep -c 'class="not-analysed"' "$work/failed.html")" -eq 3 ] || echo 'not 3 failed jobs'
	[ "$(grep -c '<svg xmlns' "$work/failed.html")" -eq 2 ] || echo 'not 2 charts'
}
expect_ok "a failed job is shown as not analysed" "$(failed_job)"
html_elsewhere() {
	"$memc" check --format html "$example" >/dev/null 2>&1
	[ $? -eq 2 ] || echo 'check --format html was accepted'
	"$memc" list --format html >/dev/null 2>&1
	[ $? -eq 2 ] || echo 'list --format html was accepted'
}
expect_ok "html is for report only" "$(html_elsewhere)"

# ---- the browser -----------------------------------------------------------
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
shot=$work/shot.png
if [ -z "$browser" ] || ! cc -std=c11 -O1 -o "$work/pngstat" tests/html/pngstat.c -lz 2>"$work/cc.err"; then
	echo "html: chromium or zlib is missing; the browser checks are skipped"
	skipped=3
	suite_report
	exit
fi
# A page taller than the window would be cut: 3200 px holds every class of the example.
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$work/profile" --window-size=1000,3200 --screenshot="$shot" \
	"file://$html" >"$work/chromium.log" 2>&1
if [ ! -s "$shot" ]; then
	echo "html: chromium could not start here (see $work/chromium.log); the browser checks are skipped"
	skipped=3
	suite_report
	exit
fi
"$work/pngstat" "$shot" e15759 4e79a7 >"$work/shot.txt" 2>&1
expect_ok "the screenshot is a drawn page" "$(awk '$1 == "size" && ($2 != 1000 || $3 != 3200) { print "size " $2 "x" $3 }
	$1 == "colors" && $2 < 20 { print "only " $2 " colours" }
	$1 == "ink" && $2 < 100000 { print "blank: " $2 " pixels drawn" }
	$1 == "pngstat:" { print }' "$work/shot.txt")"
# The optimizer bars: their tallest rect and their width, in screen pixels.
want_h=$(grep -o 'class="c-optimizer" x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*"' "$html" |
	 sed 's/.*height="//; s/"//' | sort -g | tail -n 1)
want_w=$(grep -o 'class="c-optimizer" x="[^"]*" y="[^"]*" width="[^"]*"' "$html" |
	 sed 's/.*width="//; s/"//' | sort -g | tail -n 1)
bars_on_screen() {
	awk -v h="$want_h" -v w="$want_w" '$1 == "color" && $2 == "e15759" {
		if ($3 == 0) print "no optimizer bar on screen"
		if ($4 < h - 2 || $4 > h + 1) print "tallest bar " $4 " px, the SVG says " h
		if ($5 < w - 2 || $5 > w + 1) print "bar " $5 " px wide, the SVG says " w }' "$1"
}
expect_ok "the SVG's bars are on screen as tall and wide as its numbers" "$(bars_on_screen "$work/shot.txt")"
# The control: the same page with the optimizer bars not painted.
sed 's/\.c-optimizer{fill:#e15759}/.c-optimizer{fill:none}/' "$html" >"$work/unpainted.html"
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$work/profile" --window-size=1000,3200 --screenshot="$work/unpainted.png" \
	"file://$work/unpainted.html" >>"$work/chromium.log" 2>&1
"$work/pngstat" "$work/unpainted.png" e15759 >"$work/unpainted.txt" 2>&1
expect_rejected "a page whose bars are not drawn" "$(bars_on_screen "$work/unpainted.txt")"
suite_report
