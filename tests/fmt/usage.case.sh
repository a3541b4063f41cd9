# Usage errors exit 2; --help prints the fmt usage.
$MEMC fmt; echo "rc: $?"
$MEMC fmt --check -w x.mem; echo "rc: $?"
$MEMC fmt -w -; echo "rc: $?"
$MEMC fmt --bogus x.mem; echo "rc: $?"
$MEMC fmt - -; echo "rc: $?"
$MEMC fmt no-such-file.mem; echo "rc: $?"
$MEMC fmt --help | head -n 1
$MEMC fmt --help >/dev/null; echo "rc: $?"
