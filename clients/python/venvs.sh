# The Pythons and venvs of the client's scripts (sourced by generate.sh, dev-venv.sh,
# package.sh, test-install.sh). Every venv lives in a cache outside the repository and is made
# again only when what it was made from changes; pip fills it from PyPI.
#   HOLDFAST_PY_CACHE   the cache (default ${XDG_CACHE_HOME:-~/.cache}/holdfast-dev)
#   HOLDFAST_PYTHON     the Python of the dev and generator venvs (default pyenv's 3.9, the
#                       oldest the package supports, so the tests run on it)

py_cache="${HOLDFAST_PY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/holdfast-dev}"
client_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# pyenv_python 3.9: the newest 3.9.x pyenv has installed.
pyenv_python() {
  local root="${PYENV_ROOT:-$HOME/.pyenv}" found
  found="$(find "$root/versions" -maxdepth 1 -name "$1.*" -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)"
  if [ -z "$found" ] || [ ! -x "$root/versions/$found/bin/python3" ]; then
    echo "venvs.sh: no Python $1 under $root/versions (install it: pyenv install $1)" >&2
    return 1
  fi
  echo "$root/versions/$found/bin/python3"
}

dev_python() {
  if [ -n "${HOLDFAST_PYTHON:-}" ]; then echo "$HOLDFAST_PYTHON"; else pyenv_python 3.9; fi
}

# cached_venv NAME PYTHON INSTALL STAMP...: the path of venv $py_cache/NAME, made from PYTHON and
# filled by the shell function INSTALL (called with the venv's path), unless it was already made
# from the same Python and STAMP (the pip arguments, a hash of the files they read, ...).
cached_venv() {
  local venv="$py_cache/$1" python="$2" install="$3" stamp
  shift 3
  stamp="$("$python" -c 'import sys; print(sys.version.replace("\n", " "))') $*"
  if [ ! -f "$venv/.holdfast-stamp" ] || [ "$(cat "$venv/.holdfast-stamp")" != "$stamp" ]; then
    echo "venvs.sh: making $venv from $python" >&2
    rm -rf "$venv"
    mkdir -p "$py_cache"
    "$python" -m venv "$venv" >&2
    "$install" "$venv" >&2
    echo "$stamp" >"$venv/.holdfast-stamp"
  fi
  echo "$venv"
}

# quiet_pip VENV ARGS...: pip install in VENV, quiet unless it fails.
quiet_pip() {
  local venv="$1"
  shift
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
