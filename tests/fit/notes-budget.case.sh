# The -Wcapacity notes of one file search the first 8 distinct train
# blocks that do not fit (analyzer/fit/fit.c FIT_FILE_MAX_SEARCHES; and 2000
# variants at most, FIT_FILE_MAX_BUILDS): 12 distinct blocks get fixes on
# the first 8 (t0..t7), then notes that say no fix was searched and how
# to search one (t8..t11); the warnings themselves are all there. A block
# that reads as one searched before (t12, t0's text) is that job: its
# fixes are noted though the budget is spent, so 9 blocks have fixes.
set -u
{
	printf 'import "gpus/nvidia"\nimport "models/llama"\nimport "optimizers"\nimport "precision"\n'
	for ((i = 0; i < 13; i++)); do
		printf 'train t%d {\n  model = llama2_7b\n  cluster = 8 x A100_80GB\n  precision = bf16_mixed\n' "$i"
		printf '  optimizer = adamw\n  micro_batch = 1\n  seq_len = %d\n  zero = 0\n}\n' $((2048 + 128 * (i % 12)))
	done
} >"$SCRATCH/many.mem"
$MEMC check "$SCRATCH/many.mem" 2>"$SCRATCH/err"
echo "rc $?"
echo "warnings: $(grep -c 'warning: device total' "$SCRATCH/err")"
echo "blocks with a fix noted: $(grep -B1 -E 'note: .*fits? \(device total' "$SCRATCH/err" | grep -c 'note: the largest part')"
echo "blocks not searched: $(grep -c 'note: no fix searched' "$SCRATCH/err")"
grep 'note: no fix searched' "$SCRATCH/err" | sed 's|[^ ]*/many.mem|many.mem|'
$MEMC check -Wno-capacity "$SCRATCH/many.mem" 2>&1
echo "rc $?"
