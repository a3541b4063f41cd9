# Megatron-Core's validate_layer_layout (pipeline_parallel_layer_layout.py)
# and argparse's int for --mtp-num-layers: each of these launches fails in
# Megatron, so memc import refuses it at the flag (bad-layout at the
# layout, type-mismatch / out-of-range at the count) instead of writing a
# job memc would analyse with the MTP layers somewhere else or not at all.
# Also --microbatch-group-size-per-virtual-pipeline-stage 0, which is no
# group (schedules.py reads only None as pp's default), and the value flags
# memc only notes (--num-layers, --global-batch-size) given alone.
for f in tests/config-import/bad/megatron-mtp-*.args tests/config-import/bad/megatron-group-zero.args \
	tests/config-import/bad/megatron-note-bare.args; do
	echo "== $f"
	$MEMC import "$f" 2>&1
	echo "rc=$?"
done
