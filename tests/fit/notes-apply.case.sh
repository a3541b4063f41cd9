# The -Wcapacity notes are memc fit's search (analyzer/fit.c): each note's
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
	tests/report/tv08.mem tests/output/src/capacity.mem tests/sharding/mixtral-zero3-ep8.mem; do
	$MEMC check -Werror "$f" >/dev/null 2>&1 && echo "$f: checks clean as written"
	$MEMC check --format json "$f" 2>/dev/null >"$SCRATCH/diags.json"
	jq -r '.files[0].diagnostics[] | select(.name == "capacity") | .notes[].message' "$SCRATCH/diags.json" |
		sed -n 's/.*(device total \(.*\))$/\1/p' >"$SCRATCH/notes"
	$MEMC fit "$f" | sed -n 's/^  fix [0-9]* (\(.*\)):$/\1/p' | head -n "$(wc -l <"$SCRATCH/notes")" \
		>"$SCRATCH/fit"
	if cmp -s "$SCRATCH/notes" "$SCRATCH/fit"; then
		echo "$f: $(wc -l <"$SCRATCH/notes") notes, as memc fit"
	else
		echo "$f: notes differ from memc fit"; diff "$SCRATCH/notes" "$SCRATCH/fit"
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
