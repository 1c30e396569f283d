#!/usr/bin/env bash
# Runs the install recipe of clients/go/README.md as written, from a scratch directory outside the
# repository: the README's Debian packages must be installed, then its recipe copies the client into
# a GOPATH of its own, builds the README's program offline (GOPROXY=off) and runs it against the
# server at $HOLDFAST_ADDR, where it takes a lock. Blocks are found by the markers before them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
readme="$here/README.md"
: "${HOLDFAST_ADDR:?HOLDFAST_ADDR must name a running holdfast server}"

# The fenced block that follows the line <!-- $1 --> in the README.
block() {
  awk -v marker="<!-- $1 -->" '$0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    found && inside { print }' "$readme"
}
packages="$(block install-packages | sed -n 's/.*apt-get install -y //p')"
recipe="$(block install-recipe)"
program="$(block install-program)"
[ -n "$packages" ] && [ -n "$recipe" ] && [ -n "$program" ] || { echo "test-install.sh: a marked block of README.md is missing" >&2; exit 1; }
for package in $packages; do
  dpkg -s "$package" >/dev/null 2>&1 || { echo "test-install.sh: the README's package $package is not installed" >&2; exit 1; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
case "$scratch/" in "$repo"/*) echo "test-install.sh: $scratch is inside the repository" >&2; exit 1 ;; esac
mkdir -p "$scratch/home" "$scratch/lockdemo"
printf '%s\n' "$program" >"$scratch/lockdemo/main.go"
cd "$scratch"
# A clean user: no Go settings from this shell; the build cache is kept (it never changes results).
cache="$(go env GOCACHE)"
env -u GOPATH -u GOFLAGS -u GO111MODULE -u GOPROXY HOME="$scratch/home" GOCACHE="$cache" \
  HOLDFAST_SRC="$repo" bash -euo pipefail -c "$recipe" | tee "$scratch/out"
grep -q "^holding reports with fencing token [1-9]" "$scratch/out"
