#!/usr/bin/env bash
# Fails when the committed stubs differ from what clients/generate.sh makes now.
set -euo pipefail
cd "$(dirname "$0")/.."

generated=(gen clients/python/holdfast/v1 clients/go/gen)
clients/generate.sh
untracked=$(git ls-files --others --exclude-standard -- "${generated[@]}")
if [ -n "$untracked" ]; then
  echo "check-generated.sh: generated files not committed:" >&2
  echo "$untracked" >&2
  exit 1
fi
git diff --exit-code -- "${generated[@]}" || {
  echo "check-generated.sh: generated code is stale: run clients/generate.sh and commit" >&2
  exit 1
}
echo "check-generated.sh: generated code is current"
