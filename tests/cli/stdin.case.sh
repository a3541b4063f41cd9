# "-" is standard input: named <stdin> in diagnostics (line and column as
# for a file), imports looked up from the current folder, readable once.
# An endless pipe is refused one byte past the 16 MiB limit instead of being
# read for ever ("yes" is killed by SIGPIPE once memc stops reading).
printf 'import "./tests/cli/lib/cli_gpu"\ngpu X : CliGPU {\n  memory = = 1\n}\n' | $MEMC check -
echo "error on stdin: $?"
printf 'import "tests/cli/lib/cli_gpu"\nlet m = CliGPU.memory\n' | $MEMC check -- -
echo "valid, after --: $?"
$MEMC check - - </dev/null
echo "twice: $?"
yes 'let x = 1' | timeout 20 $MEMC check -
echo "endless: $?"
