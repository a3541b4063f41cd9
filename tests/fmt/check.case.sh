# --check prints the names of the files that would change and nothing
# else, and exits 1; with every file formatted it prints nothing, exits 0.
cd "$SCRATCH" || exit 2
printf 'let a = 1\n' >ok.mem
printf 'let  b = 2\n' >messy.mem
printf 'let c  =  3\n' >messy2.mem
$MEMC fmt --check ok.mem messy.mem messy2.mem
echo "rc: $?"
$MEMC fmt --check ok.mem
echo "rc: $?"
$MEMC fmt --check - <messy.mem
echo "rc: $?"
cat messy.mem
