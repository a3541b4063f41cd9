# The -Wcapacity searches of one file compile 2000 variants at most
# (analyzer/fit.c FIT_FILE_MAX_BUILDS): a file of 200 distinct blocks that
# do not fit gets fixes on the first ones, then notes that say no fix was
# searched and how to search one; the warnings themselves are all there.
set -u
{
	printf 'import "gpus/nvidia"\nimport "models/llama"\nimport "optimizers"\nimport "precision"\n'
	for ((i = 0; i < 200; i++)); do
		printf 'train t%d {\n  model = llama2_7b\n  cluster = 8 x A100_80GB\n  precision = bf16_mixed\n' "$i"
		printf '  optimizer = adamw\n  micro_batch = 1\n  seq_len = %d\n  zero = 0\n}\n' $((2048 + 128 * i))
	done
} >"$SCRATCH/many.mem"
$MEMC check "$SCRATCH/many.mem" 2>"$SCRATCH/err"
echo "rc $?"
echo "warnings: $(grep -c 'warning: device total' "$SCRATCH/err")"
echo "blocks with a fix noted: $(grep -B1 -E 'note: .*fits? \(device total' "$SCRATCH/err" | grep -c 'note: the largest part')"
echo "blocks not searched: $(grep -c 'note: no fix searched' "$SCRATCH/err")"
grep -m1 'note: no fix searched' "$SCRATCH/err" | sed 's|[^ ]*/many.mem|many.mem|'
