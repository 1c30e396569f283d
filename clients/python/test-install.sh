#!/usr/bin/env bash
# Installs the Python client as a user would on a clean Debian machine, and runs examples with it:
# from a scratch directory outside the repository, a venv made from /usr/bin/python3 with
# --system-site-packages (it sees Debian's python3-grpcio and python3-protobuf), a wheel built
# from clients/python and installed with no index (nothing is downloaded), then the asyncio
# example and the fencing example (examples/fenced_storage.py demo), copied next to the venv.
#   test-install.sh HOST:PORT      (a running holdfast server)
# Needs python3-venv, python3-grpcio, python3-protobuf.
set -euo pipefail
addr="${1:?usage: test-install.sh HOST:PORT (a running holdfast server)}"
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-/usr/bin/python3}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1

"$python" -m venv --system-site-packages venv
venv/bin/pip wheel --quiet --no-deps --no-index --wheel-dir wheels "$here"
venv/bin/pip install --quiet --no-deps --no-index wheels/holdfast-*.whl
cp "$here/examples/async_example.py" "$here/examples/fenced_storage.py" .

where="$(venv/bin/python -c 'import holdfast.fencing.redis_store as m, pathlib; print(pathlib.Path(m.__file__).parents[2])')"
case "$where" in
"$scratch"/venv/*) ;;
*) echo "test-install: holdfast was imported from $where, not from the venv" >&2; exit 1 ;;
esac
name="pyinst-$RANDOM$RANDOM"
venv/bin/python async_example.py --addr "$addr" "$name"
venv/bin/python fenced_storage.py demo --addr "$addr" "$name-fenced"
echo "test-install: the wheel installed into a fresh venv from $python, and its examples ran"
