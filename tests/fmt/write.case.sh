# -w rewrites in place through a temporary file renamed over the original:
# the mode is kept, a symlink is followed (not replaced), no temporary file
# is left behind, and an already formatted file is not touched.
cd "$SCRATCH" || exit 2
printf 'gpu G {\n  memory=1 GiB\n    bf16 = 2 TFLOPS\n}\n' >g.mem
chmod 640 g.mem
ln -s g.mem link.mem
printf 'let a = 1\n' >ok.mem
touch -d '2001-01-01 00:00:00' ok.mem
$MEMC fmt -w link.mem ok.mem
echo "rc: $?"
cat g.mem
stat -c '%a %F' g.mem
stat -c '%F' link.mem
stat -c '%y' ok.mem | cut -c1-10
ls -A
