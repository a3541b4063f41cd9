# The -Wcapacity notes are memc fit's search (analyzer/fit/fit.c): each note's
# device total is that of the same fix of `memc fit`, in the same order;
# and every note that carries an edit (JSON "fix"), applied to its line as
# an editor would, checks clean under -Werror, while the file as written
# does not.
set -u
fix_line() {	# FILE LINE COL END_COL TEXT: replace [COL, END_COL) on LINE
	awk -v n="$2" -v c="$3" -v e="$4" -v t="$5" \
		'NR == n { $0 = substr($0, 1, c - 1) t substr($0, e) } { print }' "$1"
}
for f in examples/does-not-fit.mem tests/fit/full-13b-4090.mem tests/fit/sharded.mem \
	tests/report/tv08.mem tests/output/src/capacity.mem tests/sharding/mixtral-zero3-ep8.mem \
	tests/fit/stage-layers.mem; do
	$MEMC check -Werror "$f" >/dev/null 2>&1 && echo "$f: checks clean as written"
	$MEMC check --format json "$f" 2>/dev/null >"$SCRATCH/diags.json"
	jq -r '.files[0].diagnostics[] | select(.name == "capacity") | .notes[].message' "$SCRATCH/diags.json" \
		>"$SCRATCH/messages"
	grep -v '^a smaller change' "$SCRATCH/messages" | sed -n 's/.*(device total \([^)]*\)).*/\1/p' \
		>"$SCRATCH/notes"
	$MEMC fit "$f" >"$SCRATCH/fit.out"
	sed -n 's/^  fix [0-9]* (\(.*\)):$/\1/p' "$SCRATCH/fit.out" | head -n "$(wc -l <"$SCRATCH/notes")" \
		>"$SCRATCH/fit"
	if cmp -s "$SCRATCH/notes" "$SCRATCH/fit"; then
		echo "$f: $(wc -l <"$SCRATCH/notes") notes, as memc fit"
	else
		echo "$f: notes differ from memc fit"; diff "$SCRATCH/notes" "$SCRATCH/fit"
	fi
	# the smaller change under the headroom, where the notes have one, is memc fit's too
	grep '^a smaller change' "$SCRATCH/messages" | sed -n 's/.*(device total \([^)]*\)).*/\1/p' \
		>"$SCRATCH/tight"
	sed -n 's/^  fits the GPU (\([^)]*\)) with .*:$/\1/p' "$SCRATCH/fit.out" | head -n "$(wc -l <"$SCRATCH/tight")" \
		>"$SCRATCH/fit-tight"
	if [ -s "$SCRATCH/tight" ] && cmp -s "$SCRATCH/tight" "$SCRATCH/fit-tight"; then
		echo "$f: a smaller change under the headroom ($(cat "$SCRATCH/tight")), as memc fit"
	elif [ -s "$SCRATCH/tight" ]; then
		echo "$f: the note under the headroom differs from memc fit"; diff "$SCRATCH/tight" "$SCRATCH/fit-tight"
	fi
	jq -r '.files[0].diagnostics[] | select(.name == "capacity") | .notes[] | select(.fix) |
		[.fix.line, .fix.column, .fix.end_column, .fix.replacement] | @tsv' "$SCRATCH/diags.json" |
	while IFS=$'\t' read -r line col end text; do
		fix_line "$f" "$line" "$col" "$end" "$text" >"$SCRATCH/fixed.mem"
		if $MEMC check -Werror "$SCRATCH/fixed.mem" 2>"$SCRATCH/err" >/dev/null; then
			echo "  $line: $text: clean"
		else
			echo "  $line: $text: NOT clean"; cat "$SCRATCH/err"
		fi
	done
done
