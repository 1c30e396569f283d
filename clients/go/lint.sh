#!/usr/bin/env bash
# gofmt and go vet over the Go client (CI runs it from clients/test-clients.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
unformatted="$(gofmt -l "$here")"
if [ -n "$unformatted" ]; then
  echo "lint.sh: not gofmt-formatted (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi
"$here/go.sh" vet ./...
