#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# make install and uninstall (make check-install): a fresh build with
# PREFIX=/usr installed under a DESTDIR puts the binary, the stdlib, both
# man pages, the three shell completions and the problem matcher where
# distributions look for them; the installed memc finds its installed
# stdlib, man finds the pages through MANPATH, the installed bash
# completion completes; uninstall leaves no file behind. The build goes
# to a folder of its own, so build/ is untouched. Prints failures, then
# "install: N passed, N failed"; appends "install N F" to $MEMC_COUNTS.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin install ../..
# Not the jobserver of a `make check` that runs this script.
unset MAKEFLAGS MFLAGS MAKELEVEL
dest=$tmp/dest

make_in() {
	make -s -j2 B="$tmp/build" PREFIX=/usr DESTDIR="$dest" "$@" 2>&1 >"$tmp/make.log" ||
		{ echo "make $* failed:"; tail -n 20 "$tmp/make.log"; }
}

expect_ok "make install DESTDIR=... PREFIX=/usr" "$(make_in install)"

# installed path = source file
files="usr/share/man/man1/memc.1=docs/man/memc.1
usr/share/man/man5/memc.5=docs/man/memc.5
usr/share/bash-completion/completions/memc=contrib/completion/memc.bash
usr/share/zsh/vendor-completions/_memc=contrib/completion/_memc
usr/share/fish/vendor_completions.d/memc.fish=contrib/completion/memc.fish
usr/share/memc/memc-problem-matcher.json=contrib/github/memc-problem-matcher.json
usr/share/vim/vimfiles/syntax/mem.vim=contrib/vim/syntax/mem.vim
usr/share/vim/vimfiles/ftdetect/mem.vim=contrib/vim/ftdetect/mem.vim
usr/share/memc/stdlib/gpus/nvidia.mem=stdlib/gpus/nvidia.mem"
while IFS== read -r to from; do
	expect_ok "$to" "$(cmp "$from" "$dest/$to" 2>&1)"
done <<<"$files"
expect_ok "usr/bin/memc" "$( [ -x "$dest/usr/bin/memc" ] || echo "not installed or not executable")"

# The installed binary reads the installed stdlib (next to it, ../share).
expect_ok "installed memc uses its stdlib" "$("$dest/usr/bin/memc" list >"$tmp/list" 2>&1
	grep -q 'llama2_7b' "$tmp/list" || { echo "memc list does not show llama2_7b:"; head -5 "$tmp/list"; })"
expect_ok "man finds memc(1) and memc(5)" "$(for s in 1 5; do
		p=$(MANPATH="$dest/usr/share/man" man -w $s memc 2>&1)
		[ "$p" = "$dest/usr/share/man/man$s/memc.$s" ] || echo "man -w $s memc: $p"
	done)"
expect_ok "installed bash completion" "$(bash --norc --noprofile -c '
	source "$1"; COMP_WORDS=("$2" rep); COMP_CWORD=1; _memc
	[ "${COMPREPLY[*]}" = report ] || echo "memc rep<TAB>: ${COMPREPLY[*]}"' _ \
	"$dest/usr/share/bash-completion/completions/memc" "$dest/usr/bin/memc" 2>&1)"

expect_ok "make uninstall" "$(make_in uninstall)"
expect_ok "uninstall removes every file" "$(cd "$dest" && find . -type f | sort)"

suite_report
