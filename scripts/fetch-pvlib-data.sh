#!/usr/bin/env bash
# The measured data bdp-bench storage loads (bench/storage_data.go): the
# BSRN station Payerne's one-minute radiation and weather records of June
# 2016 (global, direct, diffuse and longwave irradiance, air temperature,
# relative humidity, pressure), as pvlib ships them for its tests in the
# wheel on PyPI. pvlib 0.10.5 is the last release whose wheel carries
# pvlib/data/bsrn-pay0616.dat.gz; from 0.11 the test data left the wheel.
#
# Usage: scripts/fetch-pvlib-data.sh
#          download the wheel with pip (once), take the file out of it into
#          $BDP_PVLIB_CACHE (default ~/.cache/bdp/pvlib-<version>), check
#          its SHA-256 and print its path
#
# Environment: BDP_PVLIB_CACHE.
set -euo pipefail

PVLIB_VERSION=0.10.5
FILE=bsrn-pay0616.dat.gz
SHA256=4b30e5faacd06b9786d1547406667a17e392c2b926b29d16bc87b3f36b9f4e0c
CACHE="${BDP_PVLIB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bdp/pvlib-$PVLIB_VERSION}"

say() { printf 'fetch-pvlib-data: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

check() { echo "$SHA256  $1" | sha256sum --check --status; }

if [ -f "$CACHE/$FILE" ] && check "$CACHE/$FILE"; then
	echo "$CACHE/$FILE"
	exit 0
fi
command -v python3 >/dev/null 2>&1 || die "python3 is missing"
command -v unzip >/dev/null 2>&1 || die "unzip is missing"
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "downloading pvlib==$PVLIB_VERSION (wheel, no dependencies) from PyPI"
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	"pvlib==$PVLIB_VERSION" -d "$tmp" >&2 || die "pip download pvlib==$PVLIB_VERSION failed"
wheel=$(ls "$tmp"/pvlib-"$PVLIB_VERSION"-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || die "no pvlib wheel in $tmp"
unzip -q -j -o "$wheel" "pvlib/data/$FILE" -d "$tmp" || die "$FILE is not in $wheel"
check "$tmp/$FILE" || die "$FILE from $wheel does not have the SHA-256 $SHA256"
mv "$tmp/$FILE" "$CACHE/$FILE"
say "cached $CACHE/$FILE"
echo "$CACHE/$FILE"
