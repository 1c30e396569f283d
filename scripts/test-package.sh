#!/usr/bin/env bash
# Checks `npm run package` as a release would use it: into a scratch folder, every client's
# artifact at the server's version is there, SHA256SUMS lists each one and verifies, and the Go
# folder is a GOPROXY layout of the client module. Run by clients/test-clients.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(node -p 'require("./package.json").version')"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npm run --silent package -- "$out" >/dev/null

expected=(
  "holdfast-client-$version.tgz"            # npm: @holdfast/client
  "holdfast-$version-py3-none-any.whl"      # Python wheel
  "holdfast-$version.tar.gz"                # Python sdist
  "holdfast-client-$version.jar"            # Maven jar
  "holdfast-client-$version.pom"            # and its pom
  "holdfast-go-client-v$version.zip"        # the Go module
  "holdfast-$version.crate"                 # Rust
)
missing=0
for file in "${expected[@]}"; do
  grep -q "  $file\$" "$out/SHA256SUMS" || { echo "test-package: $file is not in SHA256SUMS" >&2; missing=1; }
done
[ -f "$out/goproxy/github.com/holdfast/holdfast/clients/go/@v/v$version.zip" ] ||
  { echo "test-package: no GOPROXY layout of the Go client at v$version" >&2; missing=1; }
((missing == 0))
(cd "$out" && sha256sum --quiet -c SHA256SUMS)
echo "test-package: $(wc -l <"$out/SHA256SUMS") artifacts at $version, SHA256SUMS verifies"
