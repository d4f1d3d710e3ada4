"""The parts of dist/dashfloat.pyz that can be tested without building it: the version check
of its __main__.py, the builder's choices, and the bytecode cache (dashfloat/pyzimport.py)."""

from __future__ import annotations

import ast
import importlib.util
import os
import stat
import sys
import zipfile

import pytest

from dashfloat import pyzimport
from tests import pyzbuild


def _main_module():
    spec = importlib.util.spec_from_file_location("pyz_main", pyzbuild.MAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("version", [(3, 6), (3, 4)])  # ast knows no older; e2e runs old Pythons
def test_the_entry_point_parses_on_old_pythons(version):
    ast.parse(pyzbuild.MAIN.read_text(), feature_version=version)


def test_the_version_check_names_the_version_found_and_the_one_needed():
    main = _main_module()
    assert main.version_problem((3, 11, 0, "final", 0)) is None
    assert main.version_problem((3, 13, 1)) is None
    line = main.version_problem((3, 9, 18, "final", 0))
    assert "Python 3.9.18" in line and "needs Python 3.11 or later" in line
    assert "\n" not in line
    assert main.version_problem((2, 7, 18)).startswith("dashfloat: this is Python 2.7.18;")


def test_the_entry_point_imports_nothing_before_the_check():
    tree = ast.parse(pyzbuild.MAIN.read_text())
    top_imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert [alias.name for node in top_imports for alias in node.names] == ["sys"]


def test_the_needed_version_is_the_packages():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(pyzbuild.ROOT / "setup.cfg")
    assert cfg["options"]["python_requires"] == ">=" + ".".join(map(str, _main_module().NEEDED))


def test_extensions_are_left_out_and_each_has_a_python_form():
    seen = {}
    for dist in pyzbuild.runtime_distributions():
        files = pyzbuild.distribution_files(dist)
        seen[dist.metadata["Name"].lower()] = files
        assert not [name for name in files if pyzbuild.EXTENSION.search(name)]
    assert "charset_normalizer/md.py" in seen["charset-normalizer"]
    assert "wcwidth/_width.py" in seen["wcwidth"]  # the Python form of _wcwidth_c
    assert {"urwid", "requests", "urllib3", "pygments", "markdown-it-py", "wcwidth"} <= set(seen)
    assert not {"pytest", "pexpect", "pyte", "ruff"} & set(seen)  # the test extra stays out
    # nothing that names this machine's platform or installation
    for files in seen.values():
        assert not [n for n in files if n.rsplit("/", 1)[-1] in ("WHEEL", "RECORD", "INSTALLER", "direct_url.json")]
    assert [n for n in seen["urwid"] if n.endswith(".dist-info/METADATA")]


def test_an_extension_without_a_python_form_fails_the_build(tmp_path, monkeypatch):
    class Entry:
        def __init__(self, name):
            self.name = name.rsplit("/", 1)[-1]
            self.parts = tuple(name.split("/"))
            self._name = name

        def as_posix(self):
            return self._name

        def locate(self):
            path = tmp_path / self._name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
            return path

    class Dist:
        metadata = {"Name": "fastthing"}
        files = [Entry("fastthing/__init__.py"), Entry("fastthing/core.cpython-311-x86_64-linux-gnu.so")]

    with pytest.raises(pyzbuild.BuildError, match="fastthing/core.py"):
        pyzbuild.distribution_files(Dist())
    Dist.files.append(Entry("fastthing/core.py"))
    assert sorted(pyzbuild.distribution_files(Dist())) == ["fastthing/__init__.py", "fastthing/core.py"]


def test_the_archive_depends_only_on_its_contents():
    files = {"b.py": b"x = 1\n", "a/__init__.py": b"", "__main__.py": b"import sys\n"}
    one = pyzbuild.archive(files)
    two = pyzbuild.archive(dict(reversed(list(files.items()))))
    assert one == two
    assert one.startswith(b"#!/usr/bin/env python3\n")
    import io

    with zipfile.ZipFile(io.BytesIO(one)) as zf:
        assert zf.namelist() == ["__main__.py", "a/__init__.py", "b.py"]
        assert {info.date_time for info in zf.infolist()} == {pyzbuild.DATE_TIME}


# --- the bytecode cache -----------------------------------------------------------------

def _zip_with(tmp_path, files):
    path = tmp_path / "app.pyz"
    path.write_bytes(pyzbuild.archive(files))
    return str(path)


@pytest.fixture
def isolated_imports():
    """sys.path, path hooks and modules restored after the test."""
    saved = (list(sys.path), list(sys.path_hooks), dict(sys.path_importer_cache), set(sys.modules))
    writes = sys.dont_write_bytecode
    sys.dont_write_bytecode = False  # PYTHONDONTWRITEBYTECODE may be set where tests run
    yield
    sys.dont_write_bytecode = writes
    sys.path[:], sys.path_hooks[:] = saved[0], saved[1]
    sys.path_importer_cache.clear()
    sys.path_importer_cache.update(saved[2])
    for name in set(sys.modules) - saved[3]:
        del sys.modules[name]


@pytest.fixture
def loose_umask():
    old = os.umask(0o002)
    yield
    os.umask(old)


def test_modules_from_the_zip_are_compiled_once_and_then_read_from_the_cache(tmp_path, isolated_imports, monkeypatch,
                                                                              loose_umask):
    archive = _zip_with(tmp_path, {"pyzpkg_a/__init__.py": b"", "pyzpkg_a/mod.py": b"VALUE = 41 + 1\n"})
    cache = tmp_path / "cache"
    sys.path.insert(0, archive)
    pyzimport.install(archive, {"XDG_CACHE_HOME": str(cache)})
    compiled = []
    real_compile = compile

    def counting(source, filename, *args, **kwargs):
        compiled.append(filename)
        return real_compile(source, filename, *args, **kwargs)

    monkeypatch.setattr("builtins.compile", counting)
    import pyzpkg_a.mod

    assert pyzpkg_a.mod.VALUE == 42
    assert pyzpkg_a.mod.__file__ == os.path.join(archive, "pyzpkg_a", "mod.py")
    tag = sys.implementation.cache_tag
    assert sorted(os.listdir(cache / "dashfloat" / "pyc")) == [f"pyzpkg_a.{tag}.pyc", f"pyzpkg_a.mod.{tag}.pyc"]
    assert sorted(compiled) == [os.path.join(archive, "pyzpkg_a", "__init__.py"), os.path.join(archive, "pyzpkg_a", "mod.py")]
    # private, as everything DashFloat keeps for itself, whatever the umask
    for directory in (cache / "dashfloat", cache / "dashfloat" / "pyc"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for path in (cache / "dashfloat" / "pyc").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

    # a second start: nothing compiled
    compiled.clear()
    for name in ("pyzpkg_a", "pyzpkg_a.mod"):
        del sys.modules[name]
    sys.path_importer_cache.clear()
    import pyzpkg_a.mod  # noqa: F811

    assert pyzpkg_a.mod.VALUE == 42
    assert compiled == []


def test_the_pyz_is_recognised_however_its_path_was_typed(tmp_path, isolated_imports, monkeypatch):
    """`./dashfloat.pyz` puts /cwd/./dashfloat.pyz on sys.path, and __main__'s __file__ lies
    under that spelling too."""
    archive = _zip_with(tmp_path, {"pyzpkg_e/__init__.py": b"", "pyzpkg_e/m.py": b"VALUE = 5\n"})
    monkeypatch.chdir(tmp_path)
    typed = os.path.join(str(tmp_path), ".", "app.pyz")
    sys.path.insert(0, typed)
    pyzimport.install("./app.pyz", {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    import pyzpkg_e.m

    assert pyzpkg_e.m.VALUE == 5
    assert isinstance(pyzpkg_e.m.__loader__, pyzimport.CachingZipImporter)
    assert (tmp_path / "cache" / "dashfloat" / "pyc" / f"pyzpkg_e.m.{sys.implementation.cache_tag}.pyc").exists()
    assert archive == str(tmp_path / "app.pyz")


def test_a_changed_source_is_compiled_again(tmp_path, isolated_imports):
    cache = tmp_path / "cache"
    first = _zip_with(tmp_path, {"pyzpkg_b.py": b"VALUE = 1\n"})
    sys.path.insert(0, first)
    pyzimport.install(first, {"XDG_CACHE_HOME": str(cache)})
    import pyzpkg_b

    assert pyzpkg_b.VALUE == 1
    del sys.modules["pyzpkg_b"]
    # a new pyz at the same place, the same module changed
    zipimport_cache = __import__("zipimport")._zip_directory_cache
    zipimport_cache.pop(first, None)
    _zip_with(tmp_path, {"pyzpkg_b.py": b"VALUE = 2\n"})
    sys.path_importer_cache.clear()
    import pyzpkg_b  # noqa: F811

    assert pyzpkg_b.VALUE == 2


def test_with_python_B_nothing_is_written(tmp_path, isolated_imports):
    sys.dont_write_bytecode = True
    archive = _zip_with(tmp_path, {"pyzpkg_d.py": b"VALUE = 4\n"})
    sys.path.insert(0, archive)
    pyzimport.install(archive, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    import pyzpkg_d

    assert pyzpkg_d.VALUE == 4
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_changes_nothing_but_speed(tmp_path, isolated_imports):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    archive = _zip_with(tmp_path, {"pyzpkg_c.py": b"VALUE = 3\n"})
    sys.path.insert(0, archive)
    pyzimport.install(archive, {"XDG_CACHE_HOME": str(blocked)})
    import pyzpkg_c

    assert pyzpkg_c.VALUE == 3


def test_a_damaged_or_foreign_cache_file_is_not_used():
    code = compile("X = 1", "x.py", "exec")
    key = importlib.util.source_hash(b"X = 1")
    blob = pyzimport.pyc_bytes(code, key)
    assert pyzimport.code_from_pyc(blob, key) is not None
    assert pyzimport.code_from_pyc(blob, importlib.util.source_hash(b"X = 2")) is None
    assert pyzimport.code_from_pyc(b"\0\0\0\0" + blob[4:], key) is None
    assert pyzimport.code_from_pyc(blob[:20], key) is None


def test_the_cache_follows_xdg(tmp_path):
    assert pyzimport.cache_dir({"XDG_CACHE_HOME": "/c"}) == "/c/dashfloat/pyc"
    home = os.path.expanduser("~")
    assert pyzimport.cache_dir({"XDG_CACHE_HOME": "relative"}) == os.path.join(home, ".cache", "dashfloat", "pyc")


def test_the_build_command_prints_the_size_and_the_versions(tmp_path, capsys):
    assert pyzbuild.main([str(tmp_path / "x.pyz")]) == 0
    out = capsys.readouterr().out
    size = (tmp_path / "x.pyz").stat().st_size
    assert f"{size:,} bytes" in out and "at most 5 MB" in out
    assert "urwid " in out and "requests " in out


def test_a_pyz_over_the_size_bound_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(pyzbuild, "MAX_BYTES", 1000)
    with pytest.raises(pyzbuild.BuildError, match="more than the 1,000 allowed"):
        pyzbuild.build_pyz(tmp_path / "big.pyz")
    assert not (tmp_path / "big.pyz").exists()
