#!/usr/bin/env bash
# Fetches the browser UI's JavaScript libraries from npm into http/ui/lib/,
# where package http/ui embeds them (go:embed); the Swagger UI assets have
# their own script, scripts/fetch-swagger-ui.sh.
#
# Each library is pinned here to an exact version and the registry's
# integrity hash of its tarball, so every clone embeds the same bytes: a
# tarball whose sha512 differs from the pin is refused.
#
# Does nothing when the files are there at the pinned versions; FORCE=1
# fetches them anew.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

dest=http/ui/lib

# uPlot (MIT): the time-series plots. The IIFE build is the only minified
# one; it defines the global uPlot, which the UI's modules use.
uplot_version=1.6.32
uplot_integrity=sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
uplot_files=(dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE)

want="uplot@$uplot_version"
present=1
for f in "${uplot_files[@]}"; do
	[ -s "$dest/$(basename "$f")" ] || present=0
done
if [ "$present" = 1 ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$want" ] && [ "${FORCE:-0}" != 1 ]; then
	echo "ui: browser UI libraries present in $dest ($want)"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "ui: npm not found; installing it"
	bash scripts/install-deps.sh --npm
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "ui: fetching $want with npm"
# npm pack downloads the tarball without installing anything; its
# integrity is then checked against the pin above.
tarball="$(cd "$tmp" && npm pack --silent --no-fund --no-audit "$want" | tail -n 1)"
# node comes with npm, so it hashes (openssl may be missing).
got="$(node -e 'const fs = require("fs"), crypto = require("crypto");
process.stdout.write("sha512-" + crypto.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tmp/$tarball")"
if [ "$got" != "$uplot_integrity" ]; then
	echo "ui: $want tarball has integrity $got, pinned $uplot_integrity; refusing it" >&2
	exit 1
fi
tar -xzf "$tmp/$tarball" -C "$tmp"

mkdir -p "$dest"
# Each file is renamed into place, so none is ever seen half written.
for f in "${uplot_files[@]}"; do
	if [ ! -s "$tmp/package/$f" ]; then
		echo "ui: $want has no $f" >&2
		exit 1
	fi
	name="$(basename "$f")"
	cp "$tmp/package/$f" "$dest/$name.tmp"
	mv "$dest/$name.tmp" "$dest/$name"
done
echo "$want" >"$dest/VERSION"
echo "ui: installed $want into $dest"
