# SPDX-License-Identifier: MIT
#
# The chart geometry of a `memc report --format html` page against the
# bytes it carries (tests/html/check-html.sh). For every <svg> of a rank
# class: each stacked rect is bytes x plot-height / top-bytes tall, the
# stack starts at the baseline with no gap or overlap, and its bytes add up
# to the column's total; the capacity line sits at its bytes. Prints
#   svg N TOP            per chart (N counts from 0)
#   col N PHASE ALLOCATED TOTAL PEAK   per column (PEAK: 1 for the peak's)
#   capacity N BYTES
# and "FAIL: ..." for each mismatch.

function attr(name,    m) {
	if (match($0, " " name "=\"[^\"]*\"") == 0)
		return ""
	m = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 4)
	return m
}
function off(a, b) { return a > b ? a - b : b - a }

/<svg xmlns=/ {
	n++; top = attr("data-top-bytes") + 0; py = attr("data-plot-y") + 0
	ph = attr("data-plot-height") + 0; base = py + ph
	printf "svg %d %.0f\n", n - 1, top
	if (top <= 0 || ph <= 0) print "FAIL: chart " n - 1 ": no scale"
}
/<g class="col"/ {
	incol = 1; sum = 0; below = base; rects = 0
	phase = attr("data-phase"); alloc = attr("data-allocated"); total = attr("data-total")
	peak = attr("data-peak") == "true" ? 1 : 0
}
incol && /<rect class="c-/ {
	b = attr("data-bytes") + 0; y = attr("y") + 0; h = attr("height") + 0
	want = b * ph / top
	if (off(h, want) > 0.0011)
		printf "FAIL: chart %d %s: %s is %s px, %.0f B make %.4f\n", n - 1, phase, attr("class"), h, b, want
	if (off(y + h, below) > 0.0021)
		print "FAIL: chart " n - 1 " " phase ": " attr("class") " does not sit on the one below"
	below = y; sum += b; rects++
}
incol && /<\/g>/ {
	incol = 0
	if (sum != total + 0)
		printf "FAIL: chart %d %s: rects hold %.0f B, the column says %s\n", n - 1, phase, sum, total
	if (rects == 0) print "FAIL: chart " n - 1 " " phase ": an empty column"
	print "col " n - 1 " " phase " " alloc " " total " " peak
}
/<line class="capacity"/ {
	b = attr("data-bytes") + 0; y = attr("y1") + 0
	if (off(y, base - b * ph / top) > 0.0011)
		printf "FAIL: chart %d: the capacity line is at %s, %.0f B make %.4f\n", n - 1, y, b, base - b * ph / top
	printf "capacity %d %.0f\n", n - 1, b
}
