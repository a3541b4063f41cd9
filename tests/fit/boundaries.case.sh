# The largest micro_batch and seq_len fit is exact: that value pasted in
# checks clean under -Werror, one step more does not (seq_len's step is
# 128 here, docs/fit.md); the fewest GPUs likewise, one step fewer not.
set -u
put() {	# FILE KEY VALUE: FILE with KEY's line set to VALUE, into fixed.mem
	awk -v k="$2" -v v="$3" '$0 ~ "^ *" k " *=" { sub(/=.*/, "= " v) } { print }' "$1" >"$SCRATCH/fixed.mem"
}
verdict() {
	if $MEMC check -Werror "$SCRATCH/fixed.mem" >/dev/null 2>&1; then echo clean; else echo refused; fi
}
for f in examples/bert-finetune.mem examples/llama2-7b-qlora-4090.mem examples/llama2-13b-zero3.mem; do
	json=$($MEMC fit --format json "$f")
	mb=$(jq '.jobs[0].max_micro_batch' <<<"$json")
	seq=$(jq '.jobs[0].max_seq_len' <<<"$json")
	gpus=$(jq '.jobs[0].min_gpus' <<<"$json")
	gpu=$(jq -r '.jobs[0].gpu' <<<"$json")
	put "$f" micro_batch "$mb"; echo "$f: micro_batch = $mb $(verdict)"
	put "$f" micro_batch $((mb + 1)); echo "$f: micro_batch = $((mb + 1)) $(verdict)"
	put "$f" seq_len "$seq"; echo "$f: seq_len = $seq $(verdict)"
	put "$f" seq_len $((seq + 128)); echo "$f: seq_len = $((seq + 128)) $(verdict)"
	put "$f" cluster "$gpus x $gpu"; echo "$f: cluster = $gpus x $gpu $(verdict)"
	if [ "$gpus" -gt 1 ]; then
		put "$f" cluster "$((gpus - 1)) x $gpu"; echo "$f: cluster = $((gpus - 1)) x $gpu $(verdict)"
	fi
done
# Under cp = 3 the step is lcm(4, 2 x 3) = 12 (tests/fit/cp-seq-step.mem):
# the length found checks clean and is a multiple of 12; 12 more does not.
f=tests/fit/cp-seq-step.mem
seq=$($MEMC fit --format json "$f" | jq '.jobs[0].max_seq_len')
put "$f" seq_len "$seq"; echo "$f: seq_len = $seq $(verdict), mod 12 = $((seq % 12))"
put "$f" seq_len $((seq + 12)); echo "$f: seq_len = $((seq + 12)) $(verdict)"
