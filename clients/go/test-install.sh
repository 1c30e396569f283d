#!/usr/bin/env bash
# Installs the Go client the ways its README says, in scratch modules in a folder made outside the
# repository, as a user with a fresh HOME and no Go settings, and runs the README's program
# against the server at $HOLDFAST_ADDR, where it takes a lock and prints its fencing token:
#   1. the release route: clients/go/package.sh writes the release folder; the README's
#      install-from-release block (GOPROXY=file://...) gets the client from it;
#   2. the checkout route: the README's install-from-checkout block (go mod edit -replace) points
#      at an unpacked copy of the client's module zip (what a checkout's clients/go releases);
#   3. a module that gets the Redis fence store from the release folder.
# Modules 1 and 2 must name no database or Redis driver in go.mod or go.sum; module 3 must name
# redigo (the negative control of that check). README blocks are found by the markers before them.
# The scratch folder has a Go module cache of its own, so nothing of holdfast can come from a
# cache; the developer's download cache stands in front of the module proxy, so only what it lacks
# is downloaded (and grpc and the rest are still checked against the checksum database).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
readme="$here/README.md"
module=github.com/holdfast/holdfast/clients/go
: "${HOLDFAST_ADDR:?HOLDFAST_ADDR must name a running holdfast server}"
die() { echo "test-install.sh: $*" >&2; exit 1; }

# The fenced block that follows the line <!-- $1 --> in the README.
block() {
  awk -v marker="<!-- $1 -->" '$0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    found && inside { print }' "$readme"
}
from_release="$(block install-from-release)"
from_checkout="$(block install-from-checkout)"
program="$(block install-program)"
[ -n "$from_release" ] && [ -n "$from_checkout" ] && [ -n "$program" ] || die "a marked block of README.md is missing"
version="v$(node -p 'require(process.argv[1]).version' "$repo/package.json")"
other="$(grep -o "$module[a-z/]*@v[0-9][0-9.]*" "$readme" | grep -v "@$version\$" || true)"
[ -z "$other" ] || die "README.md names a version other than $version: $other"

scratch="$(mktemp -d)"
modcache="$scratch/gomodcache"
trap 'GOMODCACHE="$modcache" go clean -modcache 2>/dev/null; rm -rf "$scratch"' EXIT
case "$scratch/" in "$repo"/*) die "$scratch is inside the repository" ;; esac
mkdir -p "$scratch/home"

# The release folder; package.sh prints each module's go.sum line.
bash "$here/package.sh" "$scratch/release" | tee "$scratch/sums"
# released_sum PATH: the go.sum line of the module PATH's released zip.
released_sum() { grep "^$1 $version h1:" "$scratch/sums" || die "package.sh released no $1"; }
proxy="$(go env GOPROXY)"
downloads="$(go env GOMODCACHE)/cache/download"
[ ! -d "$downloads" ] || proxy="file://$downloads,$proxy"
cache="$(go env GOCACHE)"

# as_user DIR SCRIPT: runs SCRIPT with bash in DIR as a user with a fresh HOME and no Go settings
# but the caches above (and this machine's way to the network: its CA and proxy variables).
as_user() {
  local name passed=()
  for name in SSL_CERT_FILE SSL_CERT_DIR HTTPS_PROXY https_proxy HTTP_PROXY http_proxy NO_PROXY no_proxy; do
    [ -z "${!name:-}" ] || passed+=("$name=${!name}")
  done
  (cd "$1" && env -i "${passed[@]}" PATH="$PATH" HOME="$scratch/home" GOMODCACHE="$modcache" \
    GOCACHE="$cache" GOPROXY="$proxy" HOLDFAST_RELEASE="$scratch/release" HOLDFAST_SRC="$scratch/src" \
    HOLDFAST_ADDR="$HOLDFAST_ADDR" bash -euo pipefail -c "$2")
}
# new_module NAME GO_SOURCE: a module example.com/NAME in the scratch folder with GO_SOURCE as main.go.
new_module() {
  mkdir "$scratch/$1"
  printf '%s\n' "$2" >"$scratch/$1/main.go"
  as_user "$scratch/$1" "go mod init example.com/$1"
}
drivers() { cat "$scratch/$1/go.mod" "$scratch/$1/go.sum" | grep -Eo 'github.com/(lib/pq|gomodule/redigo|jackc/pgx|redis/go-redis)' | sort -u || true; }
# takes_lock NAME: the module's program, built, takes a lock and prints its fencing token.
takes_lock() {
  local lock="go-install-$1-$RANDOM$RANDOM"
  as_user "$scratch/$1" "go build -o lockdemo . && ./lockdemo $lock" | tee "$scratch/$1.out"
  grep -q "^holding $lock with fencing token [1-9]" "$scratch/$1.out" || die "$1: the program printed no fencing token"
  [ -z "$(drivers "$1")" ] || die "$1: go.mod or go.sum names a driver: $(drivers "$1")"
}

echo "== 1. the release route"
new_module lockdemo "$program"
as_user "$scratch/lockdemo" "$from_release"
sum="$(released_sum "$module")"
grep -qxF "$sum" "$scratch/lockdemo/go.sum" || die "lockdemo: go.sum does not hold the released zip's hash"
takes_lock lockdemo

echo "== 2. the checkout route (an unpacked copy of the client's module zip)"
mkdir -p "$scratch/src/clients"
cp -R "$modcache/$module@$version" "$scratch/src/clients/go"
chmod -R u+w "$scratch/src"
new_module lockdemo-checkout "$program"
as_user "$scratch/lockdemo-checkout" "$from_checkout"
grep -qF "=> $scratch/src/clients/go" "$scratch/lockdemo-checkout/go.mod" || die "lockdemo-checkout: go.mod has no replace to the copy"
takes_lock lockdemo-checkout

echo "== 3. the Redis fence store from the release folder"
new_module fencedemo "package main

import \"github.com/holdfast/holdfast/clients/go/fencing/fenceredis\"

func main() { _ = fenceredis.New }"
as_user "$scratch/fencedemo" "${from_release//"$module@"/"$module/fencing/fenceredis@"} && go build ./..."
[ "$(drivers fencedemo)" = github.com/gomodule/redigo ] || die "fencedemo: go.mod and go.sum should name redigo, and only it: $(drivers fencedemo)"
sum="$(released_sum "$module/fencing/fenceredis")"
grep -qxF "$sum" "$scratch/fencedemo/go.sum" || die "fencedemo: go.sum does not hold the released zip's hash"
echo "test-install.sh: the Go client installs from its release folder and from a checkout"
