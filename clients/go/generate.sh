#!/usr/bin/env bash
# Regenerates the Go stubs (clients/go/gen) from proto/ with buf (node_modules/.bin/buf) and the
# template clients/go/buf.gen.yaml. The plugins are installed by `go install module@version` into
# a cache outside the repository: protoc-gen-go at the protobuf version clients/go/go.mod requires,
# protoc-gen-go-grpc at the release below (its code needs grpc 1.64 or later; go.mod requires more).
# clients/generate.sh calls this; clients/check-generated.sh checks the result is committed.
set -euo pipefail
cd "$(dirname "$0")/../.."

protobuf="$(go -C clients/go list -m -f '{{.Version}}' google.golang.org/protobuf)"
bin="${XDG_CACHE_HOME:-$HOME/.cache}/holdfast-dev/go-bin"
for generator in google.golang.org/protobuf/cmd/protoc-gen-go@"$protobuf" \
  google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2; do
  GOBIN="$bin" go install "$generator"
done
rm -rf clients/go/gen
PATH="$bin:$PATH" node_modules/.bin/buf generate --template clients/go/buf.gen.yaml
