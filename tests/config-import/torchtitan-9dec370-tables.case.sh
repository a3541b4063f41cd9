# Each torchtitan-9dec370-*.toml (the benchmark's tables as TOML edits)
# imported and completed as docs/writing-rows.md §4.1 says: the model the
# import names in its `// model = ...` comment, the cluster of the TOML's
# `# ... cluster:` comment, the 96 GB H100 defined. Prints the layout memc
# reads (no memory figure: those are the validation suite's) or the
# errors a user would meet.
for toml in tests/config-import/torchtitan-9dec370-*.toml; do
	name=$(basename "$toml" .toml)
	cluster=$(sed -n 's/^#.*cluster: \(.*\)$/\1/p' "$toml")
	[ -z "$cluster" ] && continue	# not a table's row
	$MEMC import -o "$SCRATCH/$name.imp" "$toml" || { echo "$name: import failed"; continue; }
	model=$(sed -n 's|^  // model = \([a-z0-9_]*\) (import "\([^"]*\)").*|\1 \2|p' "$SCRATCH/$name.imp")
	{
		printf 'import "gpus/nvidia"\nimport "%s"\n' "${model#* }"
		printf 'gpu H100_96GB : H100_SXM_80GB {\n  memory = 96 GB\n}\n'
		sed "s|^train job {|train job {\n  model = ${model% *}\n  cluster = $cluster|" "$SCRATCH/$name.imp"
	} >"$SCRATCH/$name.mem"
	echo "$name: ${model% *} on $cluster"
	$MEMC report "$SCRATCH/$name.mem" 2>&1 | grep -E '^  layout:|error' | sed "s|$SCRATCH/||"
done
