#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The man pages render and cannot drift from the program (make check-man):
#   - docs/man/memc.1 and memc.5 format with `groff -man -ww` without a
#     single warning, and `man -l` renders them with a NAME section;
#   - every option and command that `memc --help` prints is in memc.1;
#   - every train key of docs/language.md §3.7 and every keyword is in
#     memc.5.
# Then broken copies that must be caught, so that the checks can fail.
# Needs groff and man (groff-base, man-db: tools/install-deps.sh).
# Prints failures, then "man: N passed, N failed"; appends "man N F" to
# $MEMC_COUNTS if set.
#
#   tests/cli-extra/check-man.sh [MEMC]
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"
suite_begin man ../..
memc=${1:-build/memc}
suite_need groff man
[ -x "$memc" ] || { suite_fail "$memc is not built"; suite_report; exit; }

# groff's warnings for page $1 (all of them: -ww), and a failed run.
warnings() {
	groff -man -Tutf8 -ww -z "$1" 2>&1 || echo "groff failed on $1"
}

# What is wrong with `man -l $1`: an error, or no NAME section.
man_render() {
	local out
	out=$(MANWIDTH=80 man -l "$1" 2>&1) || { echo "man -l failed: $out"; return; }
	grep -q '^NAME$' <<<"$out" || echo "man -l $1: no NAME section"
}

# The page's source with the escapes that hide plain text removed.
plain() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e 's/\\(dq/"/g' "$1"
}

# The options of `memc --help` (e.g. --format, -I, -Werror=, -Wno-).
help_options() {
	"$memc" --help | grep -oE '(^|[][ ,|])--?[A-Za-z][A-Za-z-]*=?' | sed -E 's/^[][ ,|]//' | sort -u
}

# The commands of `memc --help`: the first word of each line of its
# "commands:" list.
help_commands() {
	"$memc" --help | awk '/^commands:/ { on = 1; next } /^$/ { on = 0 }
		on && /^  [a-z]/ { print $1 }'
}

# Each word of list $2 that page $1 does not mention. A word ending in
# "=" or "-" is a prefix (-Werror=name); any other must end there.
missing_words() {
	local page=$1 w end
	plain "$page" >"$tmp/plain"
	while IFS= read -r w; do
		[ -n "$w" ] || continue
		end='($|[^A-Za-z0-9_-])'
		[[ $w == *[=-] ]] && end=''
		grep -qE -- "(^|[^A-Za-z0-9_-])$w$end" "$tmp/plain" || echo "$page does not mention '$w'"
	done <<<"$2"
}

# The keys of the train-block table of docs/language.md, and the keywords.
train_keys() {
	awk '/^### 3.7/ { on = 1 } on && /^\| key \|/ { t = 1; next } t && !/^\|/ { exit }
		t && /^\| `/ { sub(/^\| `/, ""); sub(/`.*/, ""); print }' docs/language.md
}
keywords() {
	awk '/\*\*Keywords\*\*/ { on = 1 } on { printf "%s ", $0 } on && /`\.$/ { exit }' docs/language.md |
		grep -oE '`[a-z ]+`' | tr -d '`' | tr ' ' '\n' | grep -v '^$'
}

opts=$(help_options)
cmds=$(help_commands)
keys=$(train_keys)
kw=$(keywords)
expect_ok "memc --help lists options" "$( [ "$(wc -l <<<"$opts")" -ge 15 ] || echo "only: $opts")"
expect_ok "memc --help lists commands" "$( [ "$(wc -l <<<"$cmds")" -ge 4 ] || echo "only: $cmds")"
expect_ok "docs/language.md lists train keys" "$( [ "$(wc -l <<<"$keys")" -ge 20 ] || echo "only: $keys")"
expect_ok "docs/language.md lists keywords" "$( [ "$(wc -l <<<"$kw")" -ge 15 ] || echo "only: $kw")"
for page in docs/man/memc.1 docs/man/memc.5; do
	expect_ok "$page: groff warnings" "$(warnings "$page")"
	expect_ok "$page: man -l" "$(man_render "$page")"
done
expect_ok "memc.1: options of --help" "$(missing_words docs/man/memc.1 "$opts")"
expect_ok "memc.1: commands of --help" "$(missing_words docs/man/memc.1 "$cmds")"
expect_ok "memc.5: train keys" "$(missing_words docs/man/memc.5 "$keys")"
expect_ok "memc.5: keywords" "$(missing_words docs/man/memc.5 "$kw")"

# The controls: a page with an unknown macro, with an escape groff does
# not know, and without one option, must each be caught.
sed '0,/^\.SH DESCRIPTION/s//.SH DESCRIPTION\n.XB memc/' docs/man/memc.1 >"$tmp/m1.1"
expect_caught "unknown macro" "$(warnings "$tmp/m1.1")"
sed '0,/^\.PP/s//.PP\n\\(zz/' docs/man/memc.1 >"$tmp/m2.1"
expect_caught "unknown escape" "$(warnings "$tmp/m2.1")"
grep -v -e 'max\\-errors' docs/man/memc.1 >"$tmp/m3.1"
expect_caught "--max-errors left out" "$(missing_words "$tmp/m3.1" "$opts")"
grep -v -e '^\.B zero_grad' docs/man/memc.5 >"$tmp/m4.5"
expect_caught "zero_grad left out" "$(missing_words "$tmp/m4.5" "$keys")"

suite_report
