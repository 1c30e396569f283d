#!/usr/bin/env bash
# pyflakes over the Python client, its tests and examples, from the dev venv (dev-venv.sh: pyflakes
# from PyPI at the version pyproject.toml's `lint` group pins, on the oldest Python the package
# supports, so 3.10+ syntax is an error too). The generated stubs (holdfast/v1, generate.sh) are
# left out. CI runs it from clients/test-clients.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$(bash "$here/dev-venv.sh")"
mapfile -t files < <(find "$here" -name '*.py' -not -path '*/__pycache__/*' -not -name '*_pb2.py' -not -name '*_pb2_grpc.py' | sort)
"$venv/bin/python" -m pyflakes "${files[@]}"
