# Acceptance (issue 17): Gemma-3-12B written with the layer pattern predicts
# the activations of the same layers written flat, within 1% (the first rank
# class). Reads the JSON report of gemma3-12b-flat-vs-pattern.mem.
set -u
$MEMC report --format json tests/lang-patterns/gemma3-12b-flat-vs-pattern.mem 2>/dev/null |
awk '
	/"name": "/ { split($0, a, "\""); job = a[4] }
	/"activations": / && !(job in act) { gsub(/[^0-9]/, "", $2); act[job] = $2 }
	END {
		f = act["flat"]; p = act["pattern"]
		if (f == "" || p == "" || f == 0) { print "no activations read"; exit 1 }
		d = (p > f ? p - f : f - p) / f
		printf "activations: flat %.0f B, pattern %.0f B, differ by %.4f%%\n", f, p, 100 * d
		exit d <= 0.01 ? 0 : 1
	}'
