#!/usr/bin/env bash
# Installs the SDK as a user would: packs @holdfast/client, installs the tarball into an empty
# project outside the repository (its dependencies from the npm registry), type-checks
# install-test/take-lock.ts there against the installed .d.ts files, runs it (compiled to
# CommonJS: `require`) and install-test/take-lock.mjs (`import`) against the live server at
# HOLDFAST_ADDR (each takes and releases a lock), with HOLDFAST_SIGNED_ADDR and
# HOLDFAST_FENCE_KEYS_URL install-test/guard-signed.mjs (the installed guard against a server that
# signs fences), and prints what the install weighs.
#   HOLDFAST_ADDR=127.0.0.1:50051 bash clients/ts/test-install.sh
# Needs node_modules of the repository (typescript, @types/node) and the registry.
set -euo pipefail
cd "$(dirname "$0")"
sdk="$PWD"
repo="$(cd ../.. && pwd)"
addr="${HOLDFAST_ADDR:?set HOLDFAST_ADDR to host:port of a live holdfast server}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
say() { echo "test-install: $*"; }

tarball="$work/$(npm pack --silent --pack-destination "$work" | tail -n 1)" # prepack builds dist/
say "packed $(basename "$tarball") ($(du -k "$tarball" | cut -f1) kB)"

project="$work/app"
case "$project/" in "$repo"/*) say "$project is inside the repository"; exit 1 ;; esac
mkdir -p "$project" "$work/home"
cd "$project"
# A fresh HOME: no npm settings of this machine's user; npm's download cache is kept (registry
# files only), so a warm run does not fetch every package again.
export npm_config_cache="$(npm config get cache)" HOME="$work/home"
npm init -y >/dev/null
# --prefer-offline: packages already in npm's cache are not fetched again; the rest retry a
# registry that answers slowly instead of failing the run on one dropped request.
npm install --no-audit --no-fund --loglevel=error --prefer-offline --fetch-retries=5 "$tarball" >/dev/null
# node_modules/.package-lock.json lists every package npm placed in node_modules.
packages="$(node -p 'Object.keys(require("./node_modules/.package-lock.json").packages).length')"
say "installed into an empty project: $packages packages, $(du -sk node_modules | cut -f1) kB in node_modules"
# The SDK's weight is part of its promise: 35 packages (itself, @grpc/grpc-js, @bufbuild/protobuf
# and what they bring) when this was written. A new dependency must raise this on purpose.
max_packages=35
((packages <= max_packages)) || { say "the SDK now installs $packages packages, more than $max_packages"; exit 1; }

cp "$sdk/install-test/take-lock.ts" .
node "$repo/node_modules/typescript/bin/tsc" --strict --target ES2022 --module commonjs --moduleResolution node \
  --types node --typeRoots "$repo/node_modules/@types" take-lock.ts
name="install-test-$RANDOM$RANDOM"
node take-lock.js "$addr" "$name" | tee "$work/out"
# The same program as an ES module: `import` of the CommonJS package's named exports.
cp "$sdk/install-test/take-lock.mjs" .
node take-lock.mjs "$addr" "$name-esm" | tee -a "$work/out"
# Against a server that signs fences (clients/test-clients.sh starts one): the installed guard.
if [ -n "${HOLDFAST_SIGNED_ADDR:-}" ] && [ -n "${HOLDFAST_FENCE_KEYS_URL:-}" ]; then
  cp "$sdk/install-test/guard-signed.mjs" .
  node guard-signed.mjs "$HOLDFAST_SIGNED_ADDR" "$HOLDFAST_FENCE_KEYS_URL" "$name-signed" | tee -a "$work/out"
  grep -q '^signed: ' "$work/out" || { say "the signed fence guard check did not pass"; exit 1; }
else
  say "no HOLDFAST_SIGNED_ADDR and HOLDFAST_FENCE_KEYS_URL: the signed fence guard is not checked (clients/test-clients.sh sets them)"
fi
for way in "" "imported: "; do
  grep -q "^${way}released .*SDK loaded from $project/node_modules/@holdfast/client/" "$work/out" || {
    say "the SDK was not loaded from the project's node_modules (${way:-required: })"
    exit 1
  }
done
say "ok"
