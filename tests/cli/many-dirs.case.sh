# -I is unlimited and order-independent: 70 of them, the one that holds the
# import last, work before the file and after it (64 before it used to be
# refused). 70 MEMC_PATH entries are all searched (past 64 they were dropped).
# A missing MEMC_PATH entry is an error, as a missing -I is.
src='import "cli_gpu"
let m = CliGPU.memory
'
dirs=()
for _ in $(seq 69); do dirs+=(-I docs); done
dirs+=(-I tests/cli/lib)
printf '%s' "$src" | $MEMC check "${dirs[@]}" -; echo "70 -I before: $?"
printf '%s' "$src" | $MEMC check - "${dirs[@]}"; echo "70 -I after: $?"
path=$(printf 'docs:%.0s' $(seq 69))tests/cli/lib
printf '%s' "$src" | MEMC_PATH=$path $MEMC check -; echo "70 MEMC_PATH entries: $?"
printf '%s' "$src" | MEMC_PATH=docs::tests/cli/lib: $MEMC check -; echo "empty entries skipped: $?"
printf '%s' "$src" | MEMC_PATH=docs:tests/cli/no-such-dir $MEMC check -; echo "missing entry: $?"
