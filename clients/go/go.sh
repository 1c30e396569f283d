#!/usr/bin/env bash
# Runs the go command on this client with Debian's Go packages and no network:
# GOPATH mode over /usr/share/gocode (golang-google-grpc-dev, golang-google-protobuf-dev),
# with this folder linked in at its module path. Example: clients/go/go.sh test ./...
set -euo pipefail
# grpc 1.33 decodes through github.com/golang/protobuf; the 1.3 package cannot decode
# protoc-gen-go 1.28 messages (it panics), so Debian's 1.5 package must be the one installed.
if [ -e /usr/share/gocode/src/github.com/golang/protobuf/proto/table_unmarshal.go ]; then
  echo "go.sh: github.com/golang/protobuf is 1.3: apt-get install golang-github-golang-protobuf-1-5-dev" >&2
  exit 1
fi
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
module="$(sed -n 's/^module //p' "$here/go.mod")"
mkdir -p "$(dirname "$work/src/$module")"
ln -s "$here" "$work/src/$module"
cd "$work/src/$module"
export PWD="$work/src/$module"
export HOLDFAST_REPO_ROOT="$(dirname "$(dirname "$here")")"
export GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$work:/usr/share/gocode"
export GOCACHE="${GOCACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/go-build}"
go "$@"
