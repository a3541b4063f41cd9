# CRLF, lone CR and a byte order mark: the output has LF line ends and no
# BOM, the lines stay the lines they were, and --check sees the difference.
printf '\xef\xbb\xbfgpu G {\r\n  memory=1 GiB\r\n  bf16 = 2 TFLOPS  // c\r\n}\r\n' >"$SCRATCH/crlf.mem"
printf 'let a=1\rlet bb = 2\r' >"$SCRATCH/cr.mem"
cd "$SCRATCH" || exit 2
$MEMC fmt crlf.mem | od -c | sed 's/  */ /g'
$MEMC fmt - <cr.mem
$MEMC fmt crlf.mem >lf.mem
$MEMC fmt --check crlf.mem lf.mem
echo "check: $?"
