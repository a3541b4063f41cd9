#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
#   tests/output/fetch-sarif-schema.sh DIR
#
# Puts the SARIF 2.1.0 JSON schema as OASIS published it
# (sarif-2.1.0-rtm.5.json, draft-04) and a JSON-Schema validator (ajv 6,
# the one that schema's draft needs) into DIR, once: a later call finds
# them there. The schema comes from Microsoft's @microsoft/jest-sarif
# package (the schema its SARIF matcher validates against), the validator
# from npm's ajv; the package versions and the schema's SHA-256 are pinned,
# so a changed upstream file fails here instead of moving the goalposts.
# Exit status 0: DIR/sarif-2.1.0-rtm.5.json and DIR/node_modules/ajv are
# there; else 1, with the reason on stderr (no node or npm, no network).
set -uo pipefail

dir=$1
jest_sarif=@microsoft/jest-sarif@1.0.0-beta.0
ajv=ajv@6.12.6
schema=sarif-2.1.0-rtm.5.json
sha=2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8
stamp="$dir/.fetched-$sha"

[ -f "$stamp" ] && [ -f "$dir/$schema" ] && [ -d "$dir/node_modules/ajv" ] && exit 0
for tool in node npm tar sha256sum; do
	command -v "$tool" >/dev/null || { echo "fetch-sarif-schema: $tool is missing" >&2; exit 1; }
done
mkdir -p "$dir" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

npm_quiet() { timeout 120 npm --no-audit --no-fund --loglevel=error "$@" >"$tmp/npm.log" 2>&1; }
why() { grep -m1 -E 'npm (error|ERR!) (code|network|[a-z])' "$tmp/npm.log" || tail -1 "$tmp/npm.log"; }
if ! (cd "$tmp" && npm_quiet pack "$jest_sarif"); then
	echo "fetch-sarif-schema: npm pack $jest_sarif failed: $(why)" >&2
	exit 1
fi
tar -xzf "$tmp"/microsoft-jest-sarif-*.tgz -C "$tmp" "package/lib/schemas/$schema" || exit 1
if [ "$(sha256sum <"$tmp/package/lib/schemas/$schema" | cut -d' ' -f1)" != "$sha" ]; then
	echo "fetch-sarif-schema: $schema in $jest_sarif is not the pinned file" >&2
	exit 1
fi
if ! npm_quiet install --no-save --no-package-lock --prefix "$dir" "$ajv"; then
	echo "fetch-sarif-schema: npm install $ajv failed: $(why)" >&2
	exit 1
fi
cp "$tmp/package/lib/schemas/$schema" "$dir/$schema" && touch "$stamp"
