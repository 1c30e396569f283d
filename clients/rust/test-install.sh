#!/usr/bin/env bash
# Installs the crate the way clients/rust/README.md says, from the .crate that package.sh writes,
# in a scratch folder outside the repository with a fresh HOME and CARGO_HOME: runs the README's
# install recipe there, puts the README's first program in the new project, builds it and runs it
# against the server at HOST:PORT, where it takes a lock and prints its fencing token; then checks
# that the crate builds with the fencing kit's features (guard, redis-store, postgres-store).
#   clients/rust/test-install.sh HOST:PORT
# Shared with the developer's cargo, for speed only: the registry download cache (CARGO_HOME's
# registry/) and a build folder for the dependencies (holdfast itself builds from the unpacked
# crate, a source of its own). cargo rebuilds a dependency whose source path changed, and that path
# is under CARGO_HOME, so the scratch CARGO_HOME is one folder kept at the same place, emptied of
# everything but the registry link at each run, and its builds have a folder of their own (sharing
# cargo.sh's would make the two rebuild each other's dependencies).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
addr="${1:?usage: clients/rust/test-install.sh HOST:PORT}"
readme="$here/README.md"
die() { echo "test-install.sh: $*" >&2; exit 1; }

# The fenced block that follows the line starting <!-- $1 in the README.
block() {
  awk -v marker="<!-- $1" 'index($0, marker) == 1 { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    found && inside { print }' "$readme"
}
recipe="$(block install-recipe)"
program="$(block install-program)"
[ -n "$recipe" ] && [ -n "$program" ] || die "a marked block of README.md is missing"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
case "$scratch/" in "$repo"/*) die "$scratch is inside the repository" ;; esac

bash "$here/package.sh" "$scratch" >/dev/null
version="$(node -p 'require(process.argv[1]).version' "$repo/package.json")"
[ -f "$scratch/holdfast-$version.crate" ] || die "package.sh wrote no holdfast-$version.crate"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/holdfast-dev"
registry="${CARGO_HOME:-$HOME/.cargo}/registry"
install_home="$cache/rust-install-cargo-home"
mkdir -p "$scratch/home" "$install_home" "$registry"
find "$install_home" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
ln -s "$registry" "$install_home/registry"
deps_target="$cache/rust-install-target"
# rustup's toolchains stay where they are; nothing else of this shell's Rust settings is kept.
clean_env=(env -i PATH="$PATH" HOME="$scratch/home" CARGO_HOME="$install_home"
  RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_TARGET_DIR="$deps_target" TERM=dumb)
cd "$scratch"
"${clean_env[@]}" bash -euo pipefail -c "$recipe"
printf '%s\n' "$program" >"$scratch/lockdemo/src/main.rs"
grep -q "path = \"../holdfast-$version\"" "$scratch/lockdemo/Cargo.toml" || die "lockdemo does not depend on the unpacked crate by path"
cd "$scratch/lockdemo"
"${clean_env[@]}" HOLDFAST_ADDR="$addr" cargo run --quiet | tee "$scratch/out"
if grep -q "$repo" Cargo.toml Cargo.lock; then die "lockdemo names a path in the repository"; fi
grep -q "^holding reports with fencing token [1-9][0-9]*$" "$scratch/out" || die "the program did not print a fencing token"
# The fencing kit's features build from the packed crate too (its copy of fence-record-1.lua included).
"${clean_env[@]}" cargo check --quiet --features holdfast/guard,holdfast/redis-store,holdfast/postgres-store
