# Every fix `memc fit` prints, pasted into its file as a user would (a
# key the block writes is replaced on its line, any other goes before the
# block's closing brace), must check clean under -Werror; and the file as
# written must not (else there was nothing to fix).
set -u
apply() {	# FILE LINE: write LINE into the single train block of FILE
	local key=${2%% *}
	if grep -q "^ *$key[ ={]" "$1"; then
		awk -v k="$key" -v l="$2" '$0 ~ "^ *" k "[ ={]" { sub(/[^ ].*/, l) } { print }' "$1" >"$1.new"
	else
		awk -v l="  $2" '/^}/ { print l } { print }' "$1" >"$1.new"
	fi
	mv "$1.new" "$1"
}
for f in examples/does-not-fit.mem tests/fit/full-13b-4090.mem tests/fit/sharded.mem tests/fit/cp-chunks.mem; do
	$MEMC check -Werror "$f" >/dev/null 2>&1 && echo "$f: checks clean as written"
	n=$($MEMC fit --format json "$f" | jq '.jobs[0].fixes | length')
	echo "$f: $n fixes"
	for ((i = 0; i < n; i++)); do
		cp "$f" "$SCRATCH/fixed.mem"
		while IFS= read -r line; do
			apply "$SCRATCH/fixed.mem" "$line"
		done < <($MEMC fit --format json "$f" | jq -r ".jobs[0].fixes[$i].changes[]")
		if cmp -s "$f" "$SCRATCH/fixed.mem"; then
			echo "  fix $((i + 1)): changes nothing"
		elif $MEMC check -Werror "$SCRATCH/fixed.mem" 2>"$SCRATCH/err"; then
			echo "  fix $((i + 1)): clean"
		else
			echo "  fix $((i + 1)): NOT clean"; cat "$SCRATCH/err"
		fi
	done
done
# The smaller change under the headroom, pasted, is on the GPU: memc check
# warns about the headroom (-Wheadroom) and not about the capacity.
f=tests/fit/under-headroom.mem
cp "$f" "$SCRATCH/tight.mem"
while IFS= read -r line; do
	apply "$SCRATCH/tight.mem" "$line"
done < <($MEMC fit --format json "$f" | jq -r '.jobs[0].under_headroom.fix.changes[]')
$MEMC check "$SCRATCH/tight.mem" 2>&1 | grep -o '\[-W[a-z-]*\]' | sort | uniq -c | sed "s|^ *|$f, under the headroom: |"
