# A FIFO as the root file is refused at once (exit 2), and one reached by
# an import is a located error (exit 1): the open does not block and fstat
# says it is not a regular file. Same for a directory or a device behind an
# import name, which must not let the search go on to a same-named file.
# `timeout` turns a regression (a hang) into a failure instead of a stall.
cd "$SCRATCH" || exit 99
mkfifo pipe.mem
mkdir dir.mem
ln -s /dev/zero zero.mem
printf 'import "pipe"\nimport "dir"\nimport "zero"\n' >main.mem
timeout 10 $MEMC check pipe.mem; echo "root fifo: $?"
timeout 10 $MEMC check main.mem; echo "imports: $?"
timeout 10 $MEMC check - <pipe.mem & : >pipe.mem; wait $!; echo "fifo on stdin, closed by its writer: $?"
