"""A PEP 517 build backend for this one pure-Python package, so that `pip install ./clients/python`
works offline: setuptools or flit would have to be downloaded into pip's isolated build
environment. It packs holdfast/ (with the generated stubs and the .lua script) into a py3-none-any wheel whose
metadata comes from pyproject.toml's [project] table; nothing else is supported.
"""

import base64
import hashlib
import io
import pathlib
import tarfile
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = "holdfast"


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"License: {project['license']['text']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {dependency}" for dependency in project["dependencies"]]
    readme = ROOT / project["readme"]
    body = readme.read_text(encoding="utf-8") if readme.exists() else ""
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", body])


def _sources():
    # The Python modules and the fencing store's Lua script (read with importlib.resources).
    paths = [*(ROOT / PACKAGE).rglob("*.py"), *(ROOT / PACKAGE).rglob("*.lua")]
    for path in sorted(paths):
        yield path.relative_to(ROOT).as_posix(), path.read_bytes()


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    tag = f"{project['name']}-{project['version']}"
    dist_info = f"{tag}.dist-info"
    files = list(_sources()) + [
        (f"{dist_info}/METADATA", _metadata(project).encode()),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: holdfast_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(name, data) for name, data in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{tag}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / filename, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files:
            wheel.writestr(name, data)
    return filename


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    tag = f"{project['name']}-{project['version']}"
    files = list(_sources()) + [(name, (ROOT / name).read_bytes())
                                for name in ("pyproject.toml", "README.md", "build_backend/holdfast_build.py")]
    files.append(("PKG-INFO", _metadata(project).encode()))
    filename = f"{tag}.tar.gz"
    with tarfile.open(pathlib.Path(sdist_directory) / filename, "w:gz") as sdist:
        for name, data in files:
            info = tarfile.TarInfo(f"{tag}/{name}")
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
    return filename
