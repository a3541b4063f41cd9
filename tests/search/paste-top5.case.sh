# The acceptance test of issue 15: each of the five train blocks that
# `memc search --top 5` prints for examples/llama2-70b-3d.mem checks clean
# under -Werror when pasted after the example's imports, and all five
# pasted together do too (their names differ). Each is in memc fmt's
# canonical layout.
ex=examples/llama2-70b-3d.mem
$MEMC search --top 5 "$ex" > "$SCRATCH/out" || { echo "search failed"; exit 1; }
grep '^import ' "$ex" > "$SCRATCH/imports"
awk -v dir="$SCRATCH" '/^train /{n++; f=dir "/block" n} f{print > f} /^}/{f=""}' "$SCRATCH/out"
n=0
for b in "$SCRATCH"/block*; do
	n=$((n + 1))
	cat "$SCRATCH/imports" "$b" > "$SCRATCH/pasted.mem"
	$MEMC check -Werror "$SCRATCH/pasted.mem" || echo "block $n: memc check -Werror failed"
	$MEMC fmt --check "$SCRATCH/pasted.mem" >/dev/null || echo "block $n: not in the canonical layout"
done
echo "$n blocks checked"
cat "$SCRATCH/imports" "$SCRATCH"/block* > "$SCRATCH/all.mem"
$MEMC check -Werror "$SCRATCH/all.mem" && echo "all five together: clean"
