#!/usr/bin/env bash
# cargo fmt --check and cargo clippy -D warnings over the crate, its tests and examples (with every
# feature, and the client alone), and a check that the client alone has none of the kit's libraries. A toolchain
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
  # Every feature (the fencing kit and its stores, and their tests), then the client alone.
  "$here/cargo.sh" clippy --all-targets --all-features --quiet -- -D warnings || status=1
  "$here/cargo.sh" clippy --lib --quiet -- -D warnings || status=1
fi
# A holder-only build compiles none of the fencing kit's resource side.
if "$here/cargo.sh" tree --quiet -e normal --prefix none | grep -E '^(ed25519-dalek|redis|tokio-postgres) '; then
  echo "lint.sh: the crate without features depends on the fencing kit's libraries (above): keep them optional" >&2
  status=1
fi
exit $status
