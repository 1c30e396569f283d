#!/usr/bin/env bash
# Runs cargo on this crate with its build output outside the repository, in a folder kept between
# runs (CARGO_TARGET_DIR, default ~/.cache/holdfast-dev/rust-target), so that a second run rebuilds
# only what changed. Example: clients/rust/cargo.sh test
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v cargo >/dev/null || { echo "cargo.sh: cargo is missing: install Rust (rustup) first" >&2; exit 1; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/holdfast-dev/rust-target}"
cd "$here"
exec cargo "$@"
