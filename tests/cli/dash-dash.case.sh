# "--" ends the options (POSIX): a file whose name starts with "-" can be
# checked after it; before it, that name is an unknown option.
cd "$SCRATCH" || exit 99
printf 'gpu A { memory = = 80 GiB }\n' >-odd.mem
$MEMC check -odd.mem; echo "without --: $?"
$MEMC check -- -odd.mem; echo "after --: $?"
