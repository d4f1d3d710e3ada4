"""A bytecode cache for running from dashfloat.pyz.

Python's zipimport never writes bytecode, so from a zip every module is compiled again at
every start: about a second and a half more before the app answers. The pyz's __main__
installs this importer for the paths inside the zip: it reads and writes compiled modules in
$XDG_CACHE_HOME/dashfloat/pyc (default ~/.cache/dashfloat/pyc), one file per module and Python
version, checked against a hash of the source in the zip (a new pyz needs no cleaning up, and
a stale file is never used). Where that directory cannot be written (a read-only home), or
with `python3 -B`, modules are compiled as zipimport would: slower, nothing else changes.
"""

from __future__ import annotations

import _imp
import importlib.util
import marshal
import os
import sys
import zipimport

FLAGS_CHECKED_HASH = (0b11).to_bytes(4, "little")  # PEP 552: hash-based, checked


def cache_dir(environ) -> str:
    value = environ.get("XDG_CACHE_HOME", "")
    if not (value and os.path.isabs(value)):  # the XDG spec: a relative path is ignored
        value = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(value, "dashfloat", "pyc")


def pyc_bytes(code, source_hash: bytes) -> bytes:
    return importlib.util.MAGIC_NUMBER + FLAGS_CHECKED_HASH + source_hash + marshal.dumps(code)


def code_from_pyc(blob: bytes, source_hash: bytes):
    """The code in `blob` if it was compiled by this Python from the source with this hash;
    else None."""
    if (blob[:4] != importlib.util.MAGIC_NUMBER or blob[4:8] != FLAGS_CHECKED_HASH
            or blob[8:16] != source_hash):
        return None
    try:
        return marshal.loads(blob[16:])
    except (EOFError, ValueError, TypeError):
        return None


class CachingZipImporter(zipimport.zipimporter):
    """zipimport with its compiled modules kept in `directory` (get_code is what
    exec_module calls; resources and sources stay zipimport's). get_filename too: zipimport's
    compiles the module to learn its file name, and find_spec asks for it, so every module
    would be compiled even with a cache."""

    directory = ""

    def _source_path(self, fullname: str) -> str:
        tail = fullname.rpartition(".")[2]
        inner = self.prefix + (tail + "/__init__.py" if self.is_package(fullname) else tail + ".py")
        return os.path.join(self.archive, inner)

    def get_filename(self, fullname):
        path = self._source_path(fullname)
        if self._holds(path[len(self.archive) + 1:]):
            return path
        return super().get_filename(fullname)

    def _holds(self, inner: str) -> bool:
        """Whether the zip has the file `inner`, from zipimport's table of contents (a private
        one: 3.11 and 3.12 keep it in _files, 3.13 behind _get_files); else by reading it."""
        try:
            files = self._get_files() if hasattr(self, "_get_files") else self._files
            return inner in files
        except Exception:
            try:
                self.get_data(os.path.join(self.archive, inner))
                return True
            except OSError:
                return False

    def get_code(self, fullname):
        path = self._source_path(fullname)
        try:
            data = self.get_data(path)
        except OSError:  # not a .py source (zipimport knows what else it is)
            return super().get_code(fullname)
        key = importlib.util.source_hash(data)
        cached = os.path.join(self.directory, f"{fullname}.{sys.implementation.cache_tag}.pyc")
        try:
            with open(cached, "rb") as f:
                code = code_from_pyc(f.read(), key)
        except OSError:
            code = None
        if code is not None:
            _imp._fix_co_filename(code, path)  # the zip may have moved since
            return code
        code = compile(importlib.util.decode_source(data), path, "exec", dont_inherit=True)
        if not sys.dont_write_bytecode:
            _write(cached, pyc_bytes(code, key))
        return code

    def exec_module(self, module) -> None:
        super().exec_module(module)
        if module.__name__ == "certifi.core":
            robust_where(module)


def robust_where(core) -> None:
    """certifi.where() unpacks the CA bundle from the zip into a temporary file, and requests
    calls it when it is imported: with no writable temporary directory DashFloat could not
    start at all. Then the system's bundle is used instead (an https request says so if
    there is none; plain http needs none)."""
    unpack = core.where

    def where() -> str:
        try:
            return unpack()
        except OSError:
            import ssl

            paths = ssl.get_default_verify_paths()
            return paths.cafile or paths.capath or paths.openssl_cafile

    core.where = where


def _write(path: str, blob: bytes) -> None:
    """Write `blob` to `path` whole or not at all (another start may be reading it), private
    as every file DashFloat keeps for itself (0600 in directories of 0700, whatever the umask:
    dashfloat/private.py, which cannot be imported here: it may be the module being cached)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        _private_dirs(os.path.dirname(path))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _private_dirs(path: str) -> None:
    """Create `path` and its missing parents with mode 0700."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass


def install(archive: str, environ=None) -> None:
    """Import what lies inside `archive` (the pyz) through CachingZipImporter from now on.
    Paths are compared made absolute and normal: Python puts the pyz on sys.path as it was
    typed (`/home/me/./dashfloat.pyz` for `./dashfloat.pyz`)."""
    directory = cache_dir(os.environ if environ is None else environ)
    root = os.path.abspath(archive)

    class Importer(CachingZipImporter):
        pass

    Importer.directory = directory

    def inside(path: str) -> bool:
        try:
            path = os.path.abspath(path)
        except (TypeError, ValueError):
            return False
        return path == root or path.startswith(root + os.sep)

    def hook(path: str):
        if inside(path):
            return Importer(path)
        raise ImportError("not inside the pyz")

    sys.path_hooks.insert(0, hook)
    for path in list(sys.path_importer_cache):
        if inside(path):
            del sys.path_importer_cache[path]
