#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Shell completion (make check-completion): contrib/completion/memc.bash
# is sourced into a non-interactive bash and _memc is called with the
# COMP_WORDS bash would pass; COMPREPLY must be what a user expects
# (commands, options, --format and --color values, -W names from
# `memc --list-diagnostics`, .mem files and folders). The zsh and fish
# files are syntax-checked with `zsh -n` and `fish -n` when those shells
# are installed; a shell that is missing is reported as skipped and not
# counted. Prints failures, then "completion: N passed, N failed";
# appends "completion N F" to $MEMC_COUNTS if set.
#
#   tests/cli-extra/check-completion.sh [MEMC]
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin completion ../..
root=$PWD
memc=${1:-build/memc}
[[ $memc == /* ]] || memc=$root/$memc
[ -x "$memc" ] || { suite_fail "$memc is not built"; suite_report; exit; }

# A folder to complete file names in.
mkdir -p "$tmp/files/sub" && cd "$tmp/files" || exit 2
: >a.mem; : >b.mem; : >notes.txt

# The sorted COMPREPLY, one a line, for the words "$@" (the last one is
# the word being completed). COMP_WORDS[0] is the memc under test, as if
# the user typed its path.
complete_words() {
	bash --norc --noprofile -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_memc "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' \
		_ "$root/contrib/completion/memc.bash" "$memc" "$@" 2>&1
}

# $1: the expected replies, space-separated; the rest: the words after memc.
expect() {
	local want got
	want=$(tr ' ' '\n' <<<"$1" | sort)
	shift
	got=$(complete_words "$@")
	if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
		echo "FAIL: memc $* <TAB>"
		diff <(echo "$want") <(echo "$got") | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}

expect 'check report list import fmt fit search lsp compare help --help --version --list-diagnostics' ''
expect 'report' re
expect 'compare' comp
expect '--job' compare --jo
expect 'text json sarif github' check --format ''
expect 'text json html' report --format ''
expect 'text json' list --format ''
expect 'sarif' check --format = s
expect 'auto always never' check --color = ''
# Where COMP_WORDBREAKS has no "=", the option and its value are one word.
expect '--format=sarif' check --format=s
expect '-Werror=capacity -Werror=confusable' check -Werror=c
expect 'always' list a.mem --color al
expect '-Wcapacity' check -Wcap
expect '-Wno-headroom' check -Wno-head
expect '-Werror -Werror=' check -Werr
expect 'capacity confusable' check -Werror = c
expect 'layout' check -Wno-error = la
expect 'a.mem b.mem sub' check ''
expect 'a.mem b.mem sub' check -Werror ''
expect 'a.mem' report --explain a
expect 'sub' check -I ''
expect 'sub' check --stdlib s
expect '--max-errors=' check --max
expect '--name' import --n
expect '--job' fit --j
expect 'text json' fit --format ''
expect '--gpus' search --g
expect 'text json csv' search --format ''
expect 'a.mem b.mem notes.txt sub' import ''
expect 'a.mem b.mem sub' check -- ''
expect '' check -- -W
# -W names are memc's own: every warning of --list-diagnostics, twice.
n=$("$memc" --list-diagnostics | awk '$2 == "warning"' | wc -l)
expect_n=$(complete_words check -W | grep -c '^-W')
if [ "$n" -ge 5 ] && [ "$expect_n" -eq $((2 * n + 3)) ]; then pass=$((pass + 1)); else
	echo "FAIL: memc check -W<TAB>: $expect_n replies for $n warnings"; fail=$((fail + 1)); fi

# zsh and fish: syntax only, and only where the shell exists.
for sh in zsh fish; do
	f=$root/contrib/completion/$([ $sh = zsh ] && echo _memc || echo memc.fish)
	[ -f "$f" ] || { echo "FAIL: $f is missing"; fail=$((fail + 1)); continue; }
	if ! command -v $sh >/dev/null; then
		echo "completion: $sh is not installed; $f skipped"
		continue
	fi
	if out=$($sh -n "$f" 2>&1); then pass=$((pass + 1)); else
		echo "FAIL: $sh -n $f"; sed 's/^/    /' <<<"$out"; fail=$((fail + 1)); fi
done

suite_report
