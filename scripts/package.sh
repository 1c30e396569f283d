#!/usr/bin/env bash
# Builds every client's release artifacts into one folder, with a checksums file:
#   npm run package [-- OUTDIR]        (default dist/packages)
# the npm tarball of @holdfast/client, the Python wheel and sdist, the Maven jar and pom, the Go
# modules' zips (and a GOPROXY file-system layout of them under goproxy/), and the Rust crate, all
# at one version: the root package.json's, which `holdfast --version` prints
# (scripts/check-versions.mjs checks that every package states it). Each language's own
# clients/LANGUAGE/package.sh builds its part with its ecosystem's tool.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist/packages}"
node scripts/check-versions.mjs
rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

(cd clients/ts && npm pack --silent --pack-destination "$out" >/dev/null) # prepack builds dist/
for language in python go java rust; do
  echo "package: $language" >&2
  bash "clients/$language/package.sh" "$out"
done
# Checksums of the artifacts themselves (the goproxy/ tree repeats the Go zips under their proxy names).
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs sha256sum >SHA256SUMS)
echo "package: $(wc -l <"$out/SHA256SUMS") artifacts in $out (SHA256SUMS)" >&2
cat "$out/SHA256SUMS"
