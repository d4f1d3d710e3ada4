"""The parts of dist/dashfloat-<arch> (make exe) that can be tested without building it: the
environment its entry point hands to DashFloat, the builder's options, its freshness stamp
and its glibc reading (tests/e2e/test_exe.py runs the built executable)."""

from __future__ import annotations

import importlib.util

from tests import exebuild

BUNDLE = "/tmp/_MEIabc123"


def _main_module():
    spec = importlib.util.spec_from_file_location("exe_main", exebuild.MAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bootloaders_library_path_and_variables_are_taken_out():
    restore = _main_module().restore_environment
    pyi = {"_PYI_ARCHIVE_FILE": "/srv/dashfloat-x86_64", "_PYI_APPLICATION_HOME_DIR": BUNDLE,
           "_PYI_PARENT_PROCESS_LEVEL": "1", "_MEIPASS2": BUNDLE}
    env = {"PATH": "/usr/bin", "LD_LIBRARY_PATH": BUNDLE, **pyi}
    restore(env, BUNDLE)
    assert env == {"PATH": "/usr/bin"}
    # the user's own value comes back, as it was
    env = {"LD_LIBRARY_PATH": f"{BUNDLE}:/opt/lib", "LD_LIBRARY_PATH_ORIG": "/opt/lib", **pyi}
    restore(env, BUNDLE)
    assert env == {"LD_LIBRARY_PATH": "/opt/lib"}
    env = {"LD_LIBRARY_PATH_ORIG": "", "LD_LIBRARY_PATH": BUNDLE}
    restore(env, BUNDLE)
    assert env == {"LD_LIBRARY_PATH": ""}
    # no _ORIG (an older bootloader): only the bundle's entry goes
    env = {"LD_LIBRARY_PATH": f"{BUNDLE}:/opt/lib"}
    restore(env, BUNDLE)
    assert env == {"LD_LIBRARY_PATH": "/opt/lib"}
    # not frozen: nothing to take out
    env = {"LD_LIBRARY_PATH": "/opt/lib"}
    restore(env, None)
    assert env == {"LD_LIBRARY_PATH": "/opt/lib"}


def test_every_runtime_package_is_collected_and_unused_modules_left_out(tmp_path):
    args = exebuild.pyinstaller_args(tmp_path / exebuild.NAME, tmp_path)
    collected = {args[i + 1] for i, a in enumerate(args) if a == "--collect-submodules"}
    assert {"dashfloat", "urwid", "pygments", "markdown_it", "wcwidth", "requests", "urllib3", "certifi",
            "charset_normalizer", "idna", "mdurl"} <= collected
    excluded = {args[i + 1] for i, a in enumerate(args) if a == "--exclude-module"}
    assert "multiprocessing" in excluded and "tkinter" in excluded
    # nothing DashFloat imports is left out (the modules it and its dependencies use)
    assert not excluded & {"curses", "ctypes", "ssl", "json", "tomllib", "difflib", "email", "http", "asyncio",
                           "concurrent", "unicodedata", "termios", "selectors", "importlib", "zipfile"}
    assert "--onefile" in args and "--noupx" in args and args[-1] == str(exebuild.MAIN)


def test_the_stamp_says_whether_dist_is_this_tree(tmp_path):
    exe = tmp_path / exebuild.NAME
    assert not exebuild.is_fresh(exe)
    exe.write_bytes(b"\x7fELF")
    assert not exebuild.is_fresh(exe)  # no stamp
    exebuild.stamp_path(exe).write_text(exebuild.inputs_digest() + "\n")
    assert exebuild.is_fresh(exe)
    exebuild.stamp_path(exe).write_text("0" * 64 + "\n")
    assert not exebuild.is_fresh(exe)


def test_the_stamp_changes_with_the_package(tmp_path):
    root = tmp_path / "tree"
    (root / "dashfloat").mkdir(parents=True)
    (root / "dashfloat" / "a.py").write_text("x = 1\n")
    for path in (exebuild.MAIN, exebuild.Path(exebuild.__file__)):
        target = root / path.relative_to(exebuild.ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    before = exebuild.inputs_digest(root)
    assert exebuild.inputs_digest(root) == before
    (root / "dashfloat" / "a.py").write_text("x = 2\n")
    assert exebuild.inputs_digest(root) != before


def test_the_glibc_needed_is_the_newest_version_asked_for(tmp_path, monkeypatch):
    exe = tmp_path / exebuild.NAME
    exe.write_bytes(b"\x7fELF...GLIBC_2.2.5\x00...GLIBC_2.14\x00GLIBC_PRIVATE\x00")
    monkeypatch.setattr(exebuild, "bundle_binaries", lambda path: {
        "libpython3.11.so.1.0": b"GLIBC_2.35\x00GLIBC_2.3\x00", "libz.so.1": b"GLIBC_2.14\x00"})
    assert exebuild.required_glibc(exe) == (2, 35)
