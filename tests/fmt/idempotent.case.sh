# Formatting the expected output of every layout case again changes
# nothing, and the expected outputs all pass --check.
cd tests/fmt || exit 2
for out in *.out; do
	mem=${out%.out}.mem
	[ -f "$mem" ] || continue
	$MEMC fmt - <"$out" | cmp -s - "$out" && echo "same: $out" || echo "CHANGED: $out"
done
for out in *.out; do
	[ -f "${out%.out}.mem" ] && cp -- "$out" "$SCRATCH/${out%.out}.mem"
done
$MEMC fmt --check "$SCRATCH"/*.mem
echo "check: $?"
