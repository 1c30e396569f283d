#!/usr/bin/env bash
# Copies proto/holdfast/v1 into the crate (clients/rust/proto), so that the packaged crate builds
# on its own: its build.rs generates the stubs from that copy with protox. tests/conformance.rs
# fails while the copy differs from proto/. Run by clients/generate.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
rm -rf "$here/proto/holdfast/v1"
mkdir -p "$here/proto/holdfast/v1"
cp "$repo"/proto/holdfast/v1/*.proto "$here/proto/holdfast/v1/"
