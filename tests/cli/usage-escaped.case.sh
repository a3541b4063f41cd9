# A usage error quotes its argument escaped, as diagnostics do: an option
# holding a newline or an ESC cannot print a forged line of its own.
$MEMC check $'--x\nforged.mem:1:1: error: fake [syntax]\e[2K' tests/cli/repeat-same.mem
echo "bad option: $?"
$MEMC check -I $'no\ndir' tests/cli/repeat-same.mem
echo "bad -I: $?"
