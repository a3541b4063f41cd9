#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the Debian packages memc needs to build and test, but only the
# missing ones. Silent when everything is present, so `make run` and
# `make check` can call it every time.
set -euo pipefail

# clang and its runtime build the libFuzzer harness that `make check` replays
# (tests/fuzz/fuzz.mk); without them that suite is skipped.
# jq validates the machine-readable output against its schemas
# (tests/output/check-schema.sh); libjansson-dev and libyaml-dev: `memc import`
# reads JSON and YAML configs. groff-base and man-db render the man pages
# (tests/cli-extra/check-man.sh). chromium renders the HTML report in
# tests/html/check-html.sh, whose PNG reader links zlib (zlib1g-dev); where
# chromium cannot start that suite skips its browser checks. nodejs and npm
# fetch and run the official SARIF 2.1.0 schema check (tests/output/
# fetch-sarif-schema.sh); a node from elsewhere (nodesource ships npm in
# its nodejs) is used as it is.
packages=(gcc make flex bison libunistring-dev libcmocka-dev pkg-config clang libclang-rt-dev jq libjansson-dev libyaml-dev groff-base man-db zlib1g-dev chromium)

command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg -s "$p" >/dev/null 2>&1; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: apt-get not found; install them with your package manager" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-deps: missing packages: ${missing[*]}; run as root or install sudo" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
