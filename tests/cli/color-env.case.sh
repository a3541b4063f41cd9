# --color=auto (the default) colours stderr only when it is a terminal
# (script(1) gives it one), NO_COLOR is unset or empty and TERM is not
# "dumb"; --color=always wins over NO_COLOR, --color=never over a terminal.
# stderr and stdout share the terminal, so everything below is on stdout.
unset NO_COLOR
export TERM=xterm
f=tests/cli/color-never.mem
tty() { script -qec "$1" /dev/null </dev/null | tr -d '\r'; }
echo "== terminal, auto"
tty "$MEMC check $f"
echo "== terminal, NO_COLOR=1"
NO_COLOR=1 tty "$MEMC check $f"
echo "== terminal, NO_COLOR empty"
NO_COLOR= tty "$MEMC check $f"
echo "== terminal, TERM=dumb"
TERM=dumb tty "$MEMC check $f"
echo "== terminal, --color=never"
tty "$MEMC check --color=never $f"
echo "== file, NO_COLOR=1 --color=always (list)"
NO_COLOR=1 $MEMC list --color=always $f 2>&1
echo "rc $?"
echo "== file, auto"
$MEMC report $f 2>&1
echo "rc $?"
