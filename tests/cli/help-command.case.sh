# `memc help CMD` and `memc CMD --help` print what CMD does (stdout, exit
# 0), import included although it parses its own options; `memc help` alone
# is the general usage; an unknown CMD is a usage error.
$MEMC help check | head -n 4
$MEMC help check >/dev/null; echo "rc: $?"
$MEMC report --help | head -n 1
$MEMC list --help | head -n 1
$MEMC help fmt | head -n 1
$MEMC fmt --help | head -n 1
$MEMC check --help | cmp -s - <($MEMC help check) && echo "check --help = help check"
$MEMC help | head -n 1
$MEMC help import | head -n 1
$MEMC import --help | head -n 1
$MEMC import --help >/dev/null; echo "rc: $?"
$MEMC help nope; echo "rc: $?"
