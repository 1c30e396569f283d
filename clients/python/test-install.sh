#!/usr/bin/env bash
# Installs the Python client as a user would, from the artifacts package.sh builds, and runs
# programs with it against a live server. From a scratch folder outside the repository, with a
# fresh HOME, for each Python (pyenv's 3.9 and 3.13, Debian's /usr/bin/python3):
#   python -m venv venv; venv/bin/pip install holdfast-0.1.0-py3-none-any.whl
# with grpcio and protobuf from PyPI; then README.md's first program (its block between the
# first-program markers) and examples/async_example.py run, and the import must come from that
# venv (a negative control shows the check sees a holdfast from the checkout put first). Also: the
# sdist installed once (pip builds it), the wheel once with the lowest grpcio and
# protobuf it declares (3.9), then its `signed` extra there with the lowest cryptography it declares
# (a signed fence of clients/conformance/signed-fence.json verifies, a forged one does not), and
# `pip install "<wheel>[redis,postgres,signed]"` once, running examples/fenced_storage.py demo and
# the same check.
#   test-install.sh HOST:PORT      (a running holdfast server)
# PIP_CACHE_DIR is shared in the cache outside the repository (registry downloads only).
set -euo pipefail
addr="${1:?usage: test-install.sh HOST:PORT (a running holdfast server)}"
source "$(dirname "$0")/venvs.sh"
repo="$(cd "$client_dir/../.." && pwd)"
say() { echo "test-install: $*" >&2; }
die() { say "$*"; exit 1; }

python39="$(pyenv_python 3.9)" python313="$(pyenv_python 3.13)" debian=/usr/bin/python3
[ -x "$debian" ] || die "$debian is missing (Debian's python3, with python3-venv)"
scratch="$(mktemp -d)"
# pip keeps the wheel it builds from the sdist in its cache: the shared cache keeps registry
# downloads only.
trap 'rm -rf "$scratch"; find "$py_cache/pip" -name "holdfast-*.whl" -delete 2>/dev/null || true' EXIT
case "$scratch/" in "$repo"/*) die "the scratch folder $scratch is inside the repository" ;; esac

bash "$client_dir/package.sh" "$scratch/dist"
version="$(node -p 'require(process.argv[1]).version' "$client_dir/../../package.json")"
wheel="$scratch/dist/holdfast-$version-py3-none-any.whl" sdist="$scratch/dist/holdfast-$version.tar.gz"
[ -f "$wheel" ] && [ -f "$sdist" ] || die "package.sh did not write $wheel and $sdist"
awk '/<!-- first-program -->/ { on = 1; next } /<!-- \/first-program -->/ { on = 0 } on && !/^```/' \
  "$client_dir/README.md" >"$scratch/first_program.py"
grep -q holdfast "$scratch/first_program.py" || die "README.md has no first-program block"
cp "$client_dir/examples/async_example.py" "$client_dir/examples/fenced_storage.py" "$scratch/"
cp "$repo/clients/conformance/signed-fence.json" "$scratch/"  # data for the check below
cat >"$scratch/verify_signed.py" <<'EOF'
import json, sys
import cryptography
from holdfast import fencing
vectors = json.load(open("signed-fence.json"))
ring = fencing.KeyRing.from_jwks(json.dumps(vectors["keys"]["ring"]))
good = next(case for case in vectors["verify"] if "expect" in case)
ring.verify(fencing.parse_signed(good["fence"]))
forged = next(case for case in vectors["verify"] if case.get("error") == "bad_signature")
try:
    ring.verify(fencing.parse_signed(forged["fence"]))
    sys.exit("test-install: a forged signed fence verified")
except fencing.BadFenceSignature:
    pass
print(f"test-install: signed fences verify with cryptography {cryptography.__version__}")
EOF
# The lowest versions the wheel allows, read from its metadata: "grpcio==1.72.1 protobuf==6.30.0",
# and its `signed` extra's cryptography floor ("42").
metadata="$("$python39" - "$wheel" "$version" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    print(wheel.read(f"holdfast-{sys.argv[2]}.dist-info/METADATA").decode())
EOF
)"
read -r -a floors <<<"$(sed -n 's/^Requires-Dist: \([^>;[:space:]]*\)>=\([^;,[:space:]]*\)$/\1==\2/p' <<<"$metadata" | tr '\n' ' ')"
[ "${#floors[@]}" = 2 ] || die "could not read the wheel's grpcio and protobuf floors (got: ${floors[*]})"
crypto_floor="$(sed -n "s/^Requires-Dist: cryptography>=\([^;[:space:]]*\); extra == 'signed'$/\1/p" <<<"$metadata")"
[ -n "$crypto_floor" ] || die "could not read the wheel's cryptography floor (the signed extra)"

# The machine's own pip settings (/etc/pip.conf: the certificate authority its network needs,
# which pip older than 24.2 has no other way to learn) stay, as for any user of this machine; the
# user's own are the fresh HOME's (none), and no local wheel folder or index switch passes through.
export PIP_CACHE_DIR="$py_cache/pip" HOME="$scratch/home" PIP_DISABLE_PIP_VERSION_CHECK=1
unset PIP_FIND_LINKS PIP_NO_INDEX PIP_INDEX_URL PIP_EXTRA_INDEX_URL PYTHONPATH
mkdir -p "$HOME"
cd "$scratch"
name="pyinst-$RANDOM$RANDOM"

# from_venv VENV: whether VENV's python imports holdfast from VENV's site-packages ($where: from where).
from_venv() {
  where="$("$1/bin/python" -c 'import holdfast, pathlib; print(pathlib.Path(holdfast.__file__).resolve())')"
  case "$where" in "$1"/lib/python3.*/site-packages/holdfast/__init__.py) return 0 ;; esac
  return 1
}

# installed VENV PYTHON PIP-ARGS...: a new venv from PYTHON, `pip install PIP-ARGS` into it, then
# the first program and the asyncio example with the holdfast that venv imports.
installed() {
  local label="$1" venv="$scratch/$1" python="$2"
  shift 2
  say "$venv: $("$python" --version) -m venv; pip install ${*##*/}"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet "$@"
  from_venv "$venv" || die "holdfast was imported from $where, not from $venv"
  "$venv/bin/python" -c 'import grpc, google.protobuf as p; print(f"test-install: grpcio {grpc.__version__}, protobuf {p.__version__}")'
  HOLDFAST_ADDR="$addr" "$venv/bin/python" first_program.py
  "$venv/bin/python" async_example.py --addr "$addr" "$name-$label"
}

# Two lanes at once (pip mostly waits on unpacking and compiling); each lane's output is printed
# when both have ended.
(
  installed py39 "$python39" "$wheel"
  # Negative control: the check sees a holdfast from the checkout put before the venv's.
  if PYTHONPATH="$client_dir" from_venv "$scratch/py39"; then die "the import check missed $where"; fi
  installed py39-floors "$python39" "$wheel" "${floors[@]}"
  "$scratch/py39-floors/bin/pip" install --quiet "$wheel[signed]" "cryptography==$crypto_floor"
  "$scratch/py39-floors/bin/python" verify_signed.py
  installed py39-sdist "$python39" "$sdist"
) >"$scratch/lane-1.log" 2>&1 &
lane1=$!
(
  installed py313 "$python313" "$wheel"
  # The fencing kit's store extras, into the 3.13 venv: the stores import their drivers.
  "$scratch/py313/bin/pip" install --quiet "$wheel[redis,postgres,signed]"
  "$scratch/py313/bin/python" -c 'import redis, psycopg2, holdfast.fencing.postgres, holdfast.fencing.redis_store'
  "$scratch/py313/bin/python" fenced_storage.py demo --addr "$addr" "$name-fenced"
  "$scratch/py313/bin/python" verify_signed.py
  installed debian "$debian" "$wheel"
) >"$scratch/lane-2.log" 2>&1 &
lane2=$!
failed=0
wait "$lane1" || failed=1
wait "$lane2" || failed=1
cat "$scratch/lane-1.log" "$scratch/lane-2.log"
((failed == 0)) || die "an install or a program failed (above)"
say "the wheel installed into fresh venvs from Python 3.9, 3.13 and $debian, the sdist from 3.9, and the programs ran"
