#!/usr/bin/env bash
# cargo fmt --check and cargo clippy -D warnings over the crate, its tests and examples. A toolchain
# without rustfmt or clippy gets them from rustup; if rustup cannot add one, that lint is skipped
# with a message saying so (the other still runs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
status=0

# has COMPONENT CARGO-SUBCOMMAND: whether the component is there, added by rustup if it was not.
has() {
  cargo "$2" --version >/dev/null 2>&1 && return 0
  if command -v rustup >/dev/null && rustup component add "$1" >&2; then
    cargo "$2" --version >/dev/null 2>&1 && return 0
  fi
  echo "lint.sh: SKIPPED cargo $2: the $1 component is missing and rustup could not add it" >&2
  return 1
}

if has rustfmt fmt; then
  "$here/cargo.sh" fmt --check || { echo "lint.sh: cargo fmt --check found unformatted code: run clients/rust/cargo.sh fmt" >&2; status=1; }
fi
if has clippy clippy; then
  "$here/cargo.sh" clippy --all-targets --quiet -- -D warnings || status=1
fi
exit $status
