#!/usr/bin/env bash
# Writes the Go modules' release files for version v<the root package.json's version> into OUTDIR:
# OUTDIR/goproxy, a GOPROXY folder (GOPROXY=file://OUTDIR/goproxy) holding the client module and
# the Redis fence store's module (fencing/fenceredis, released beside it at the same version),
# and a copy of each module zip in OUTDIR itself. Each zip holds the files git tracks in that
# module's folder, as they are in the working tree (clients/go/internal/modproxy, on
# golang.org/x/mod/zip).   clients/go/package.sh OUTDIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: clients/go/package.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
version="v$(node -p 'require(process.argv[1]).version' "$repo/package.json")"
stamp="$(git -C "$repo" log -1 --format=%cI HEAD)"

# The modproxy tool is built once, outside the modules it packs.
tool="$(mktemp -d)"
trap 'rm -rf "$tool"' EXIT
go -C "$here/internal/modproxy" build -buildvcs=false -o "$tool/modproxy" .

# module folder (relative to clients/go), name of its zip in OUTDIR
while read -r folder name; do
  git -C "$here/$folder" ls-files -z --cached -- . |
    (cd "$here/$folder" && "$tool/modproxy" -dir . -version "$version" -time "$stamp" \
      -proxy "$out/goproxy" -zip "$out/$name-$version.zip")
done <<'MODULES'
. holdfast-go-client
fencing/fenceredis holdfast-go-fenceredis
MODULES
