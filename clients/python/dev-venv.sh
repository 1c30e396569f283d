#!/usr/bin/env bash
# Makes (or finds up to date) the venv the client is worked on and tested in, in a cache outside
# the repository (venvs.sh), and prints its path: the package installed editable from this folder
# (`pip install -e`), its `redis`, `postgres` and `signed` extras (the drivers, cryptography), and the `test` and `lint`
# dependency groups of pyproject.toml (pytest, uvicorn, pyflakes), all from PyPI. Made again
# when pyproject.toml or the Python changes.
#   bash clients/python/dev-venv.sh      -> ~/.cache/holdfast-dev/py-dev
set -euo pipefail
source "$(dirname "$0")/venvs.sh"

install() {
  quiet_pip "$1" "pip>=25.1" # dependency groups (PEP 735)
  quiet_pip "$1" --editable "$client_dir[redis,postgres,signed]" --group "$client_dir/pyproject.toml:test" \
    --group "$client_dir/pyproject.toml:lint"
}
cached_venv py-dev "$(dev_python)" install "$(sha256sum <"$client_dir/pyproject.toml")" "$client_dir"
