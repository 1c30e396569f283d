#!/usr/bin/env bash
# pyflakes over the Python client, its tests, examples and build backend (CI runs it from
# clients/test-clients.sh). The generated stubs (holdfast/v1/*_pb2*.py, clients/generate.sh) are left out.
# Needs Debian's python3-pyflakes for $PYTHON (default /usr/bin/python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-/usr/bin/python3}"
if ! "$python" -m pyflakes --version >/dev/null 2>&1; then
  echo "lint.sh: $python cannot run pyflakes: install python3-pyflakes" >&2
  exit 1
fi
mapfile -t files < <(find "$here" -name '*.py' -not -path '*/__pycache__/*' -not -name '*_pb2.py' -not -name '*_pb2_grpc.py' | sort)
"$python" -m pyflakes "${files[@]}"
