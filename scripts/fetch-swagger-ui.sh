#!/usr/bin/env bash
# Fetches the Swagger UI assets from the npm package swagger-ui-dist into
# http/ui/dist/, where package http/ui embeds them (go:embed).
#
# Does nothing when they are already there; FORCE=1 fetches them anew.
# SWAGGER_UI_VERSION picks the npm version (default: the pinned major, 5).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

version="${SWAGGER_UI_VERSION:-5}"
dest=http/ui/dist
files=(
	swagger-ui-bundle.js
	swagger-ui-standalone-preset.js
	swagger-ui.css
	favicon-32x32.png
)

missing=0
for f in "${files[@]}"; do
	[ -s "$dest/$f" ] || missing=1
done
if [ "$missing" = 0 ] && [ "${FORCE:-0}" != 1 ]; then
	echo "ui: Swagger UI assets present in $dest ($(cat "$dest/VERSION" 2>/dev/null || echo 'version unknown'))"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "ui: npm not found; installing it"
	bash scripts/install-deps.sh --npm
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "ui: fetching swagger-ui-dist@$version with npm"
# npm pack downloads the package tarball (checked against the registry's
# integrity hash) without installing anything or writing node_modules.
tarball="$(cd "$tmp" && npm pack --silent --no-fund --no-audit "swagger-ui-dist@$version" | tail -n 1)"
tar -xzf "$tmp/$tarball" -C "$tmp"
pkg="$tmp/package"
got="$(node -p 'require(process.argv[1]).version' "$pkg/package.json" 2>/dev/null ||
	sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n 1)"

for f in "${files[@]}"; do
	if [ ! -s "$pkg/$f" ]; then
		echo "ui: swagger-ui-dist@$got has no $f" >&2
		exit 1
	fi
done

mkdir -p "$dest"
# Each file is renamed into place, so none is ever seen half written.
for f in "${files[@]}"; do
	cp "$pkg/$f" "$dest/$f.tmp"
	mv "$dest/$f.tmp" "$dest/$f"
done
echo "swagger-ui-dist@$got" >"$dest/VERSION"
echo "ui: installed swagger-ui-dist@$got into $dest"
