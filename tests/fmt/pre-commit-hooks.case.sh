# The hooks of .pre-commit-hooks.yaml run as pre-commit runs them: entry,
# then args, then the staged files (one named like an option among them).
hooks=.pre-commit-hooks.yaml
printf 'let  a = 1\n' >"$SCRATCH/-odd.mem"
printf 'let b = 2\n' >"$SCRATCH/ok.mem"
for id in memc-fmt memc-check; do
	entry=$(sed -n "/^- id: $id\$/,/^- id:/s/^  entry: memc //p" "$hooks")
	args=$(sed -n "/^- id: $id\$/,/^- id:/s/^  args: \[\(.*\)\]\$/\1/p" "$hooks" | tr -d ,)
	echo "$id: memc $entry $args FILES"
	(cd "$SCRATCH" && $MEMC $entry $args -odd.mem ok.mem)
	echo "rc: $?"
done
cat "$SCRATCH/-odd.mem"
