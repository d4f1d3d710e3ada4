"""Builds dist/dashfloat.pyz: DashFloat and its runtime dependencies in one executable zip
(a zipapp: `python3 dashfloat.pyz`, or `./dashfloat.pyz` through its `#!/usr/bin/env python3`).

`make pyz` runs this file; the tests call build_pyz(dest). Why it is built this way:

- The dependencies are taken from the interpreter that runs this file (the checkout's .venv),
  following dashfloat's install_requires: no network, a build takes a second or two.
- No compiled code inside, so one file serves x86-64 and arm64: every extension module is left
  out, and the build fails unless the package works without it: either the extension is a
  compiled copy of a .py module shipped beside it (charset_normalizer's mypyc-built md and cd),
  or the package falls back to Python when it is missing (OPTIONAL_EXTENSIONS).
- Reproducible: entries sorted, one fixed timestamp and mode, fixed compression, no .pyc
  (bytecode is specific to one Python version anyway; dashfloat/pyzimport.py caches it on
  the server), no installer records or platform tags: two builds of the same tree with the
  same dependency versions are byte-identical, on any machine. The versions are those the
  venv resolved from setup.cfg: `make pyz` prints them.
- The zip's __main__.py (tests/pyz_main.py) parses on any Python and checks the version before
  it imports anything of DashFloat's.
"""

from __future__ import annotations

import io
import os
import re
import sys
import zipfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = Path(__file__).resolve().parent / "pyz_main.py"
SHEBANG = b"#!/usr/bin/env python3\n"
DATE_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say
MAX_BYTES = 5_000_000

# extension modules whose package runs without them (what it falls back to)
OPTIONAL_EXTENSIONS = {
    "wcwidth._wcwidth_c": "wcwidth uses its Python implementation when this import fails",
}
# the Python versions the pyz supports: a dependency needed on any of them goes in
TARGET_PYTHONS = ("3.11", "3.12", "3.13", "3.14", "3.15")
EXTENSION = re.compile(r"\.(so|pyd|dylib|dll)$|\.so\.")
# what an installer writes about one installation, not part of the package; and WHEEL, whose
# platform tags would make the pyz built on arm64 differ from the one built on x86-64
SKIP_METADATA = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "WHEEL")


class BuildError(Exception):
    pass


def _markers():
    try:
        from packaging.markers import Marker
        from packaging.requirements import Requirement
    except ImportError:  # pip vendors it
        from pip._vendor.packaging.markers import Marker  # type: ignore[no-redef]
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    return Marker, Requirement


def runtime_distributions(name: str = "dashfloat") -> list[metadata.Distribution]:
    """The installed distributions `name` needs at run time, on Linux with any supported
    Python, itself excluded, sorted by name. Extras are not followed."""
    _marker, requirement = _markers()
    found: dict[str, metadata.Distribution] = {}
    todo = list(metadata.requires(name) or [])
    while todo:
        req = requirement(todo.pop())
        if req.marker is not None:
            envs = [{"python_version": v, "python_full_version": v + ".0", "sys_platform": "linux",
                     "platform_system": "Linux", "os_name": "posix", "extra": ""} for v in TARGET_PYTHONS]
            if not any(req.marker.evaluate(env) for env in envs):
                continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in found:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise BuildError(f"{req.name} (needed by {name}) is not installed: run `make install`") from None
        if dist.version not in req.specifier:
            raise BuildError(f"{req.name} {dist.version} is installed, {req} is needed: run `make install`")
        found[key] = dist
        todo += dist.requires or []
    return [found[k] for k in sorted(found)]


def _module_name(path: str) -> str:
    """charset_normalizer/md.cpython-311-x86_64-linux-gnu.so -> charset_normalizer.md"""
    directory, _, filename = path.rpartition("/")
    stem = filename.split(".", 1)[0]
    return ".".join([*directory.split("/"), stem]) if directory else stem


def distribution_files(dist: metadata.Distribution) -> dict[str, bytes]:
    """arcname -> bytes of one installed distribution: its modules and data, its metadata
    (licences, entry points, so importlib.metadata works from the zip), no scripts, no
    bytecode, no compiled extension (BuildError when the package needs the one it ships)."""
    out: dict[str, bytes] = {}
    dropped: list[str] = []
    for entry in dist.files or []:
        name = entry.as_posix()
        if name.startswith("..") or "__pycache__" in entry.parts or name.endswith((".pyc", ".pyo")):
            continue
        if ".dist-info/" in name and entry.name in SKIP_METADATA:
            continue
        if EXTENSION.search(entry.name):
            dropped.append(name)
            continue
        out[name] = Path(entry.locate()).read_bytes()
    for name in dropped:
        module = _module_name(name)
        if module in OPTIONAL_EXTENSIONS:
            continue
        source = module.replace(".", "/") + ".py"
        if source not in out:
            raise BuildError(f"{dist.metadata['Name']} ships the extension {name} and no {source} to "
                             "run instead: a pure-Python form of it is needed (see OPTIONAL_EXTENSIONS)")
    return out


def package_files(root: Path = ROOT) -> dict[str, bytes]:
    """arcname -> bytes of the dashfloat package in the checkout (the working tree)."""
    out = {}
    for path in sorted((root / "dashfloat").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def contents(root: Path = ROOT) -> dict[str, bytes]:
    """Every entry of the pyz: arcname -> bytes."""
    files: dict[str, bytes] = {"__main__.py": MAIN.read_bytes()}
    for dist in runtime_distributions():
        for name, data in distribution_files(dist).items():
            if name in files:
                raise BuildError(f"{name} is in two distributions")
            files[name] = data
    own = package_files(root)
    clash = sorted(set(own) & set(files))
    if clash:
        raise BuildError(f"{clash[0]} is in dashfloat and in a dependency")
    files.update(own)
    return files


def archive(files: dict[str, bytes]) -> bytes:
    """The pyz bytes: the shebang, then a zip of `files` that depends on nothing but them."""
    buf = io.BytesIO()
    buf.write(SHEBANG)
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=DATE_TIME)
            info.create_system = 3  # unix, so the mode below is read
            info.external_attr = (0o100644 << 16)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name], compresslevel=9)
    return buf.getvalue()


def build_pyz(dest: str | os.PathLike, root: Path = ROOT) -> Path:
    """Build the pyz at `dest` (written beside it, then renamed: a reader never sees half a
    file), executable. Returns its path; BuildError says what is missing."""
    dest = Path(dest)
    data = archive(contents(root))
    if len(data) > MAX_BYTES:
        raise BuildError(f"{dest} would be {len(data):,} bytes, more than the {MAX_BYTES:,} allowed")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(dest)
    return dest


def main(argv: list[str]) -> int:
    dest = Path(argv[0] if argv else ROOT / "dist" / "dashfloat.pyz")
    try:
        path = build_pyz(dest)
    except BuildError as exc:
        print(f"pyz: {exc}", file=sys.stderr)
        return 1
    size = path.stat().st_size
    deps = ", ".join(f"{d.metadata['Name']} {d.version}" for d in runtime_distributions())
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    print(f"{shown}: {size:,} bytes ({size / 1e6:.2f} MB; at most {MAX_BYTES / 1e6:g} MB), with {deps}")
    print(f"run it: python3 {shown}  (Python >= 3.11, nothing else needed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
