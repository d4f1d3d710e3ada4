"""Builds dist/dashfloat-<arch>: DashFloat, its dependencies and Python itself in one
executable (PyInstaller --onefile), for a Linux server that has no Python 3.11.

`make exe` runs this file (after installing the pinned PyInstaller into the venv); the tests
call build_exe(dest). Why it is built this way:

- One file, no Python needed: the bootloader unpacks the interpreter and the compiled
  modules into a fresh private directory under $TMPDIR at each start and removes it at exit
  (PyInstaller's own mkdtemp-style _MEIxxxxxx, mode 700: nothing shared between users or
  runs). That unpacking is most of what the executable's start costs beyond an installed
  DashFloat, so what is unpacked is kept small: the shared libraries are stripped (libpython
  alone goes from 23 MB to 6), and standard modules DashFloat never loads are left out
  (EXCLUDES: those that bring an extension module or a runtime hook with them first). No UPX:
  it packs the libraries again, so each start would unpack them twice.
- Lazy imports: PyInstaller follows `import` statements, including those inside functions,
  but not names built at run time (urwid.display imports its submodules through
  importlib.util.find_spec at import time, wcwidth its per-terminal tables by a computed
  name). So every module of dashfloat and of each runtime dependency (those the pyz ships,
  tests/pyzbuild.py) is collected whatever the analysis finds, as in the pyz: a future lazy
  import cannot be missed. tests/e2e/test_exe.py drives a session through the executable.
- The entry point (tests/exe_main.py) takes the bootloader's LD_LIBRARY_PATH and _PYI_*
  variables back out of the environment before DashFloat starts, so the commands it runs
  see the server's own libraries.
- Reproducible: a fixed hash seed, SOURCE_DATE_EPOCH (the commit's time), a fresh work
  directory: two builds of one tree with one PyInstaller, Python and dependency versions
  are byte-identical (tests/e2e/test_exe.py checks the archive's entries; `make exe` prints
  the digest).
- It needs the glibc of the machine that built it, or newer: required_glibc() reads the
  versions its binaries ask for, and `make exe` prints it with the size. Built on Debian 12
  (glibc 2.36) it needs 2.35 (libpython's own requirement); build on an older system for older servers.
- dist/dashfloat-<arch>.inputs records a digest of what the executable was built from;
  the tests use the executable in dist/ when it matches the working tree, and build their
  own otherwise.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = Path(__file__).resolve().parent / "exe_main.py"
ARCH = platform.machine()
NAME = f"dashfloat-{ARCH}"
# the pinned version: the Makefile installs it (make exe), the tests skip without it
PYINSTALLER = "6.22.3"
# standard modules DashFloat and its dependencies never import at run time: each brings an
# extension module, a shared library or a start-up hook (multiprocessing's) that every
# start would unpack or run. Imported by accident, one fails with ModuleNotFoundError:
# tests/e2e/test_exe.py goes through a session (tools, help, pager, Markdown, man page).
EXCLUDES = (
    "tkinter", "unittest", "doctest", "pdb", "pydoc", "cmd", "code", "readline", "xmlrpc",
    "multiprocessing", "decimal", "_decimal", "fractions", "statistics", "lib2to3", "pydoc_data",
    "curses.panel", "sqlite3", "dbm", "ensurepip", "venv", "idlelib", "turtle", "turtledemo",
)
GLIBC = re.compile(rb"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\x00")


class BuildError(Exception):
    pass


def pyinstaller_version() -> str | None:
    try:
        return metadata.version("pyinstaller")
    except metadata.PackageNotFoundError:
        return None


def source_date_epoch(root: Path = ROOT) -> str:
    """The time of the checkout's last commit (0 outside git): the date inside the build."""
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%ct"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out if out.isdigit() else "0"


def inputs_digest(root: Path = ROOT) -> str:
    """A digest of what the executable is made of: the dashfloat package of the working
    tree, this file and the entry point, and the versions of Python, PyInstaller and the
    runtime dependencies installed in the venv."""
    h = hashlib.sha256()
    files = [p for p in sorted((root / "dashfloat").rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")]
    for path in [*files, root / "tests" / "exebuild.py", root / "tests" / MAIN.name]:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"{sys.version}\0{ARCH}\0".encode())
    sys.path.insert(0, str(ROOT))
    from tests import pyzbuild

    versions = {d.metadata["Name"]: d.version for d in pyzbuild.runtime_distributions()}
    for name in ("pyinstaller", "pyinstaller-hooks-contrib"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "-"
    h.update(repr(sorted(versions.items())).encode())
    return h.hexdigest()


def stamp_path(exe: Path) -> Path:
    return exe.with_name(exe.name + ".inputs")


def is_fresh(exe: Path, root: Path = ROOT) -> bool:
    """True when `exe` exists and was built from this working tree and this venv."""
    try:
        return exe.is_file() and stamp_path(exe).read_text().strip() == inputs_digest(root)
    except OSError:
        return False


def runtime_packages() -> list[str]:
    """dashfloat and the top-level packages and modules of its runtime dependencies."""
    sys.path.insert(0, str(ROOT))
    from tests import pyzbuild

    names = {"dashfloat"}
    for dist in pyzbuild.runtime_distributions():
        for entry in dist.files or []:
            parts = entry.parts
            if len(parts) == 2 and parts[1] == "__init__.py":
                names.add(parts[0])
            elif len(parts) == 1 and entry.name.endswith(".py"):
                names.add(entry.name[:-3])
    return sorted(names)


def pyinstaller_args(dest: Path, work: Path) -> list[str]:
    args = ["--onefile", "--noconfirm", "--clean", "--log-level", "WARN", "--name", dest.name,
            "--distpath", str(work / "dist"), "--workpath", str(work / "build"), "--specpath", str(work),
            "--paths", str(ROOT), "--noupx"]
    if shutil.which("strip"):
        args.append("--strip")
    for name in runtime_packages():
        args += ["--collect-submodules", name]
    for name in EXCLUDES:
        args += ["--exclude-module", name]
    return [*args, str(MAIN)]


def build_exe(dest: str | os.PathLike, root: Path = ROOT, log=None) -> Path:
    """Build the executable at `dest` (written beside it, then renamed: a reader never sees
    half a file) and its .inputs stamp. Returns its path; BuildError says what went wrong."""
    dest = Path(dest)
    if pyinstaller_version() is None:
        raise BuildError(f"PyInstaller is not installed: `make exe` installs pyinstaller=={PYINSTALLER}")
    digest = inputs_digest(root)
    env = dict(os.environ, PYTHONHASHSEED="0", SOURCE_DATE_EPOCH=source_date_epoch(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="df-exe-") as tmp:
        work = Path(tmp)
        done = subprocess.run([sys.executable, "-m", "PyInstaller", *pyinstaller_args(dest, work)], cwd=work,
                              env=env, capture_output=True, text=True)
        if log is not None:
            log(done.stdout + done.stderr)
        built = work / "dist" / dest.name
        if done.returncode != 0 or not built.is_file():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise BuildError(f"PyInstaller failed (exit {done.returncode}):\n{tail}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp_dest = dest.with_name(dest.name + ".tmp")
        shutil.copyfile(built, tmp_dest)
        tmp_dest.chmod(0o755)
        tmp_dest.replace(dest)
    stamp_path(dest).write_text(digest + "\n")
    return dest


def bundle_binaries(exe: Path) -> dict[str, bytes]:
    """name -> bytes of every shared library and extension module inside the executable."""
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(exe))
    out = {}
    for name, entry in archive.toc.items():
        if entry[-1] in ("b", "e"):  # typecode: binary, extension
            out[name] = archive.extract(name)
    return out


def required_glibc(exe: Path) -> tuple[int, ...]:
    """The newest GLIBC_x.y symbol version the bootloader or a bundled library asks for
    (libc is never bundled: the server's is used)."""
    blobs = [exe.read_bytes(), *bundle_binaries(exe).values()]
    found = [tuple(int(g) for g in m.groups() if g is not None) for blob in blobs for m in GLIBC.finditer(blob)]
    if not found:
        raise BuildError(f"{exe}: no GLIBC symbol version found")
    return max(found)


def install_pinned() -> None:
    """pip-install the pinned PyInstaller into this interpreter's environment (the venv)
    unless it is there already."""
    if pyinstaller_version() != PYINSTALLER:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"pyinstaller=={PYINSTALLER}"], check=False)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--install"]:
        install_pinned()
        argv = argv[1:]
    dest = Path(argv[0] if argv else ROOT / "dist" / NAME)
    version = pyinstaller_version()
    if version != PYINSTALLER:
        print(f"exe: PyInstaller {version or 'is not installed'}; {PYINSTALLER} is pinned "
              f"(`make exe` installs it)", file=sys.stderr)
        return 1
    try:
        path = build_exe(dest)
        glibc = ".".join(map(str, required_glibc(path)))
    except BuildError as exc:
        print(f"exe: {exc}", file=sys.stderr)
        return 1
    size = path.stat().st_size
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    print(f"{shown}: {size:,} bytes ({size / 1e6:.1f} MB), sha256 {digest}...; Python "
          f"{platform.python_version()}, PyInstaller {version}, {ARCH}")
    print(f"needs Linux on {ARCH} with glibc {glibc} or newer (this machine: glibc {platform.libc_ver()[1]}); "
          "no Python")
    print(f"run it: scp {shown} host: && ssh -t host ./{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
