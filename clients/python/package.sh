#!/usr/bin/env bash
# Builds the Python client's release artifacts into OUTDIR with PyPA's `build` (from PyPI, into a
# venv in the cache, see venvs.sh): the sdist, then the wheel built from that sdist, so the sdist
# is known to hold everything the wheel needs.
#   package.sh OUTDIR   -> OUTDIR/holdfast-0.1.0.tar.gz, OUTDIR/holdfast-0.1.0-py3-none-any.whl
# The build backend (hatchling, pinned in pyproject.toml) makes the same bytes from the same
# commit; `npm run package` (scripts/package.sh) calls this and writes the checksums.
set -euo pipefail
out="${1:?usage: package.sh OUTDIR}"
source "$(dirname "$0")/venvs.sh"

install() { quiet_pip "$1" build==1.4.4; }
venv="$(cached_venv py-build "$(dev_python)" install build==1.4.4)"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# From a copy of the tracked files and the stubs only: no __pycache__ or stray file of a working
# tree can reach the artifacts.
git -C "$client_dir" ls-files -z --cached --others --exclude-standard . | (cd "$client_dir" && xargs -0 cp --parents -t "$work")
"$venv/bin/python" -m build --outdir "$work/dist" "$work" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  exit 1
}
cp "$work"/dist/holdfast-*.whl "$work"/dist/holdfast-*.tar.gz "$out"/
