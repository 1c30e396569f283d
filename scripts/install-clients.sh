#!/usr/bin/env bash
# Installs every client's dependencies through its own ecosystem's package tool, from its
# registry (nothing from Debian's gRPC packages): `npm run install:clients`.
#   Go      go mod download, in every module under clients/go
#   Python  the dev venv (clients/python/dev-venv.sh: pip, in ~/.cache/holdfast-dev)
#   Java    Maven: the build's plugins and dependencies, then `mvn install` (no tests): the client
#           in the local Maven repository as dev.holdfast:holdfast-client, for other builds here
#   Rust    cargo fetch
# The TypeScript SDK's come with the server's (`npm ci`). Safe to run again: each tool skips
# what it already has.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "install-clients: $*" >&2; }
need() { command -v "$1" >/dev/null || { say "$1 is missing: $2"; exit 1; }; }
need go "install Go 1.25 or newer"
need mvn "install Maven 3.8 or newer and a JDK 17"
need cargo "install Rust with rustup"
need python3 "install CPython 3.9 or newer"

say "go: go mod download"
while read -r module; do
  (cd "$(dirname "$module")" && go mod download)
done < <(find clients/go -name go.mod | sort)
say "python: the dev venv (pip)"
bash clients/python/dev-venv.sh >/dev/null
say "java: mvn install (dependencies and plugins, then the client without its tests)"
mvn -B -q -f clients/java/pom.xml -DskipTests install >/dev/null
say "rust: cargo fetch"
cargo fetch --quiet --manifest-path clients/rust/Cargo.toml
say "done"
