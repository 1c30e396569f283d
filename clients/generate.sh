#!/usr/bin/env bash
# Regenerates every committed client stub from proto/: the TypeScript stubs with buf and ts-proto
# (buf.gen.yaml), then each client's own generate.sh (clients/*/generate.sh), which installs its
# pinned generators through its ecosystem's package tool into a cache outside the repository.
# Java and Rust generate their stubs in their builds (mvn, cargo) and commit none.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node_modules/.bin/buf node_modules/.bin/protoc-gen-ts_proto; do
  [ -x "$tool" ] || { echo "generate.sh: $tool is missing: run npm ci" >&2; exit 1; }
done
node_modules/.bin/buf generate
for generator in clients/*/generate.sh; do
  bash "$generator"
done
