#!/usr/bin/env bash
# Writes the crate's release artifact, OUTDIR/holdfast-VERSION.crate (cargo package: the sources,
# a copy of proto/holdfast/v1 and of clients/conformance/fence-record-1.lua, the README; cargo builds it from the packed files alone before writing it).
# Its version must be the root package.json's.
#   clients/rust/package.sh OUTDIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
out="${1:?usage: clients/rust/package.sh OUTDIR}"
version="$(node -p 'require(process.argv[1]).version' "$repo/package.json")"
crate_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$here/Cargo.toml" | head -n 1)"
[ "$crate_version" = "$version" ] || {
  echo "package.sh: clients/rust/Cargo.toml has version $crate_version, package.json $version: make them equal" >&2
  exit 1
}
# The packed crate must build on its own: it carries a copy of proto/holdfast/v1, made here and
# removed again (build.rs reads the repository's own proto/ whenever it builds in the checkout).
mkdir -p "$here/proto/holdfast/v1"
trap 'rm -rf "$here/proto" "$here/fence-record-1.lua"' EXIT
cp "$repo"/proto/holdfast/v1/*.proto "$here/proto/holdfast/v1/"
cp "$repo/clients/conformance/fence-record-1.lua" "$here/"
# --allow-dirty: like npm pack, it packs the files as they are (cargo notes it in the crate).
"$here/cargo.sh" package --quiet --allow-dirty
target="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/holdfast-dev/rust-target}"
mkdir -p "$out"
cp "$target/package/holdfast-$version.crate" "$out/"
echo "package.sh: wrote $out/holdfast-$version.crate" >&2
