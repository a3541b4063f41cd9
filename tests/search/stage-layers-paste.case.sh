# Each block `memc search --top 6` prints for a job with a stated split
# (stage-layers.mem, first-last-layers.mem), pasted after the file's
# imports, checks clean under -Werror; each says its pp and vp and
# whether it keeps the split keys: only those with the written pp and vp
# do, and at least one has another pp (the search is not narrowed to the
# written layout).
for ex in tests/search/stage-layers.mem tests/search/first-last-layers.mem; do
	$MEMC search --top 6 "$ex" > "$SCRATCH/out" || { echo "$ex: search failed"; continue; }
	grep '^import ' "$ex" > "$SCRATCH/imports"
	rm -f "$SCRATCH"/block*
	awk -v dir="$SCRATCH" '/^train /{n++; f=dir "/block" n} f{print > f} /^}/{f=""}' "$SCRATCH/out"
	echo "$ex:"
	for b in $(ls "$SCRATCH"/block* | sort -V); do
		cat "$SCRATCH/imports" "$b" > "$SCRATCH/pasted.mem"
		pp=$(sed -n 's/^ *pp *= *\([0-9]*\)$/\1/p' "$b"); vp=$(sed -n 's/^ *vp *= *\([0-9]*\)$/\1/p' "$b")
		keys=$(grep -oE '^ *(stage_layers|first_stage_layers|last_stage_layers)' "$b" | tr -d ' ' | paste -sd ' ')
		if $MEMC check -Werror "$SCRATCH/pasted.mem" 2>"$SCRATCH/err"; then ok=clean; else ok="NOT clean"; fi
		echo "  ${b##*/}: pp ${pp:-1}, vp ${vp:-1}, split keys: ${keys:-none}; $ok"
	done
done
