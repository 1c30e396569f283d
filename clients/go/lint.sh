#!/usr/bin/env bash
# gofmt -l, go vet and go mod tidy -diff over every Go module in clients/go (each folder with a
# go.mod); CI runs it from clients/go/steps.sh.
set -euo pipefail
cd "$(dirname "$0")"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "lint.sh: not gofmt-formatted (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi
# The client module's end-to-end test of signed fences builds only with its tag (steps.sh).
go vet -tags signedlive .
for module in $(find . -name go.mod -printf '%h\n' | sort); do
  go -C "$module" vet ./...
  go -C "$module" mod tidy -diff || {
    echo "lint.sh: clients/go${module#.}: go.mod or go.sum is not what go mod tidy writes (run it there)" >&2
    exit 1
  }
done
