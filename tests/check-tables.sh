#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Meta-test over lang/diag.def: every diagnostic name must have
#   - a "## <name>" section in docs/diagnostics.md, and
#   - at least one golden case whose expected stderr or stdout
#     (tests/*/*.err|.out, tests/*/*/expect.err|.out) contains "[<name>]",
#     "[-W<name>]" or "[-Werror=<name>]".
# A name passes when it has both. The few names listed in unit_only cannot
# have a golden case (a 16 MiB input cannot live in the repository, and a
# failed rename cannot be staged when the tests run as root); for
# them an expected "[<name>]" in a tests/unit/*.c file counts instead. Prints what is missing, then
# "tables: N passed, N failed"; appends "tables N F" to $MEMC_COUNTS if set.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
export LC_ALL=C

def=lang/diag.def
doc=docs/diagnostics.md

# Names are the second field of DIAG(...) rows: DIAG(ID, "name", ...).
mapfile -t names < <(sed -n 's/^DIAG([^,]*, *"\([^"]*\)".*/\1/p' "$def")

shopt -s nullglob
expect_files=(tests/*/*.err tests/*/*.out tests/*/*/expect.err tests/*/*/expect.out)
unit_files=(tests/unit/*.c)
unit_only=" file-too-large fmt-write-failed "

# Whether any of the files after $1 expects diagnostic $1.
expects() {
	local name=$1
	shift
	[ $# -gt 0 ] && grep -qF -e "[$name]" -e "[-W$name]" -e "[-Werror=$name]" "$@"
}

pass=0
fail=0
prev=
for name in "${names[@]}"; do
	ok=1
	if [[ -n $prev && ! $prev < $name ]]; then
		echo "check-tables: $def: '$name' is not in sorted order (after '$prev')"
		ok=0
	fi
	prev=$name
	if [ ! -f "$doc" ] || ! grep -qxF "## $name" "$doc"; then
		echo "check-tables: $name: no '## $name' section in $doc"
		ok=0
	fi
	if ! expects "$name" "${expect_files[@]}"; then
		if [[ $unit_only == *" $name "* ]] && expects "$name" "${unit_files[@]}"; then
			:	# covered by a unit test, see unit_only
		else
			echo "check-tables: $name: no golden case expects [$name] or [-W$name]"
			ok=0
		fi
	fi
	if [ $ok -eq 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done

# Docs sections that no longer match a row (a renamed or retired name).
if [ -f "$doc" ]; then
	while IFS= read -r sect; do
		found=0
		for name in "${names[@]}"; do [ "$name" = "$sect" ] && found=1 && break; done
		if [ $found -eq 0 ]; then
			echo "check-tables: $doc: section '## $sect' has no row in $def"
			fail=$((fail + 1))
		fi
	done < <(sed -n 's/^## \([a-z0-9-]*\)$/\1/p' "$doc")
fi

echo "tables: $pass passed, $fail failed"
[ -n "${MEMC_COUNTS:-}" ] && echo "tables $pass $fail" >>"$MEMC_COUNTS"
[ $fail -eq 0 ]
