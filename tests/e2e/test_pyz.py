"""End to end: dist/dashfloat.pyz on "a server that has Python and nothing else".

The pyz is built once per session (tests/pyzbuild.py, a second or two), copied into an empty
directory that is then made read-only, and run from there with a PATH that holds no venv,
with `python3 -I` (and `-I -S` where it matters: no site-packages at all, so every dependency
must come from the zip), HOME and the XDG directories in the test's tmp directory.
"""

from __future__ import annotations

import glob
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import pyzbuild
from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env
from tests.fakeserver import sse_reply

TIMEOUT = 60


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None


def _bare_python() -> str:
    """A Python >= 3.11 outside any venv: the system's python3, else the one the venv of the
    tests was made from."""
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system and (_version(system) or (0, 0)) >= (3, 11):
        return system
    return os.path.realpath(sys.executable)


PYTHON = _bare_python()


@pytest.fixture(scope="session")
def built_pyz(tmp_path_factory) -> Path:
    """The pyz of the working tree, built once per session."""
    return pyzbuild.build_pyz(tmp_path_factory.mktemp("pyzbuild") / "dashfloat.pyz")


@pytest.fixture
def server_dir(built_pyz, tmp_path):
    """An empty directory holding only a copy of the pyz, read-only (as on a read-only system)."""
    where = tmp_path / "srv"
    where.mkdir()
    shutil.copy2(built_pyz, where / "dashfloat.pyz")
    where.chmod(0o555)
    yield where
    where.chmod(0o755)


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """PATH: the bare Python's directory and the system's; no venv."""
    values = {"PATH": f"{os.path.dirname(PYTHON)}:/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache"),
              "PYTHONUNBUFFERED": None, **extra}
    env = clean_env(tmp_path, **values)
    assert ".venv" not in env["PATH"] and "VIRTUAL_ENV" not in env
    return env


def run(argv, env, cwd, **kw):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL, **kw)


def test_two_builds_are_identical_small_and_hold_no_compiled_code(built_pyz, tmp_path):
    again = pyzbuild.build_pyz(tmp_path / "again.pyz")
    data = built_pyz.read_bytes()
    assert again.read_bytes() == data
    assert len(data) <= 5_000_000, f"{len(data):,} bytes"
    assert data.startswith(b"#!/usr/bin/env python3\n")
    assert built_pyz.stat().st_mode & stat.S_IXUSR
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
    assert names == sorted(names)
    assert not [n for n in names if re.search(r"\.(so|pyd|dylib|dll)$|\.so\.|\.pyc$", n)]
    assert "__main__.py" in names and "dashfloat/cli.py" in names
    for module in ("urwid", "requests", "urllib3", "pygments", "markdown_it", "mdurl", "wcwidth",
                   "charset_normalizer", "idna", "certifi"):
        assert f"{module}/__init__.py" in names, module


def test_it_runs_with_python3_with_python3_I_and_as_a_program(server_dir, tmp_path):
    env = bare_env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    pyz = str(server_dir / "dashfloat.pyz")
    for argv in ([PYTHON, pyz], [PYTHON, "-I", pyz], [PYTHON, "-I", "-S", pyz], [pyz]):
        done = run([*argv, "--version"], env, work)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"dashfloat {pyzbuild_version()}\n", ""), argv
    # ./dashfloat.pyz, relative, as the README says; its bytecode is cached all the same
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache2")
    done = run(["./dashfloat.pyz", "--show-config"], env, server_dir)
    assert done.returncode == 0 and "base_url" in done.stdout, done.stderr
    assert [p for p in (tmp_path / "cache2" / "dashfloat" / "pyc").iterdir() if p.name.startswith("dashfloat.cli.")]


def test_renamed_dashfloat_on_the_path_it_is_the_dashfloat_command(built_pyz, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(built_pyz, bin_dir / "dashfloat")
    env = bare_env(tmp_path)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = run(["dashfloat", "--help"], dict(env, MANPATH="/nonexistent"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "or dashfloat --man." in " ".join(done.stdout.split())


def pyzbuild_version() -> str:
    from dashfloat import __version__

    return __version__


def _pythons(newer: bool) -> list[str]:
    """One interpreter per version found on this machine: those older than 3.11, or those
    from 3.11 on (the test interpreter's own version included)."""
    found = {}
    candidates = glob.glob("/usr/bin/python[23].*[0-9]") + glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python"))
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in range(6, 16)]
    for path in candidates:
        if not path or not os.access(path, os.X_OK) or path.endswith("-config"):
            continue
        version = _version(path)
        if version and (version >= (3, 11)) == newer:
            found.setdefault(version, path)
    if newer:
        found.setdefault(_version(PYTHON), PYTHON)
    return [found[v] for v in sorted(found)]


OLD_PYTHONS = _pythons(newer=False)
NEW_PYTHONS = _pythons(newer=True)


@pytest.mark.skipif(not OLD_PYTHONS, reason="no Python older than 3.11 on this machine: "
                    "test_pyz_parts checks the version check and the entry point's syntax")
@pytest.mark.parametrize("python", OLD_PYTHONS)
def test_an_old_python_is_told_in_one_line_and_exit_2(server_dir, tmp_path, python):
    version = _version(python)
    done = run([python, str(server_dir / "dashfloat.pyz"), "--version"], bare_env(tmp_path), tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert re.search(rf"Python {version[0]}\.{version[1]}\.\d+;", lines[0]), lines[0]
    assert "needs Python 3.11 or later" in lines[0]


def _bin_without_man(tmp_path) -> Path:
    """A PATH directory with python3 and nothing else: no man, no pager."""
    path = tmp_path / "nomanbin"
    path.mkdir(exist_ok=True)
    if not (path / "python3").exists():
        (path / "python3").symlink_to(PYTHON)
    return path


def test_man_to_a_pipe_with_and_without_man(server_dir, tmp_path):
    from dashfloat import manpage, mantext

    pyz = str(server_dir / "dashfloat.pyz")
    env = bare_env(tmp_path, PATH=str(_bin_without_man(tmp_path)))
    done = run(["python3", "-I", pyz, "--man"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == mantext.render(manpage.generate())  # the text, rendered in the pyz
    assert "dashfloat.pyz" in done.stdout and "--man" in done.stdout
    if shutil.which("man"):
        done = run([PYTHON, "-I", pyz, "--man"], bare_env(tmp_path), tmp_path)
        assert done.returncode == 0, done.stderr
        assert "DASHFLOAT(1)" in done.stdout.splitlines()[0]
        assert "\b" not in done.stdout  # man formats for a pipe: plain text
        words = " ".join(done.stdout.split())
        assert "full-screen terminal coding agent" in words and "SEE ALSO" in words


@pytest.mark.skipif(not shutil.which("less"), reason="no less to page with")
@pytest.mark.parametrize("with_man", [False, True] if shutil.which("man") else [False])
def test_man_on_a_terminal_pages_and_quits(server_dir, tmp_path, spawn, with_man):
    """On a terminal: through man (its pager), or, without man, the text through less;
    q leaves it and the command exits 0."""
    bin_dir = _bin_without_man(tmp_path)
    if not (bin_dir / "less").exists():
        (bin_dir / "less").symlink_to(shutil.which("less"))
    path = f"{bin_dir}:/usr/bin:/bin" if with_man else str(bin_dir)
    env = bare_env(tmp_path, PATH=path, MANPAGER="less", PAGER="less")
    term = spawn(["python3", "-I", str(server_dir / "dashfloat.pyz"), "--man"], env=env, rows=24, cols=80)
    term.wait_for(lambda t: any(line.startswith("DASHFLOAT(1)") for line in t.lines), 30, "the page's header")
    term.wait_text("NAME")
    assert any(line.startswith("       dashfloat") for line in term.lines), term.dump()
    term.send(" ")  # a page further
    term.wait_for(lambda t: not any(line.startswith("DASHFLOAT(1)") for line in t.lines), 10, "the next page")
    term.send("q")
    assert term.wait_exit(timeout=15) == 0


def test_help_says_how_to_read_the_page_from_the_pyz(server_dir, tmp_path):
    done = run([PYTHON, "-I", "./dashfloat.pyz", "--help"], bare_env(tmp_path, MANPATH="/nonexistent"), server_dir)
    assert done.returncode == 0, done.stderr
    assert "or python3 ./dashfloat.pyz --man." in " ".join(done.stdout.split())


def test_a_headless_run_with_nothing_but_the_standard_library(server_dir, tmp_path, server):
    server.push(sse_reply(["Hello ", "from ", "the pyz."]))
    project = tmp_path / "proj"
    project.mkdir()
    env = bare_env(tmp_path)
    done = run([PYTHON, "-I", "-S", str(server_dir / "dashfloat.pyz"), "-p", "say hello", "--base-url", server.url,
                "--model", "test-model"], env, project)
    assert (done.returncode, done.stdout.strip()) == (0, "Hello from the pyz."), done.stderr
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert posts[-1]["json"]["messages"][-1] == {"role": "user", "content": "say hello"}
    # the journal went where an installed DashFloat puts it
    assert list((tmp_path / "state" / "dashfloat" / "sessions").rglob("*.jsonl"))
    # and its compiled modules were cached: a second run compiles nothing of the zip's
    cached = list((tmp_path / "cache" / "dashfloat" / "pyc").iterdir())
    assert any(p.name.startswith("dashfloat.cli.") for p in cached)
    server.push(sse_reply(["Again."]))
    before = {p.name: p.stat().st_mtime_ns for p in cached}
    done = run([PYTHON, "-I", "-S", str(server_dir / "dashfloat.pyz"), "-p", "again", "--base-url", server.url,
                "--model", "test-model"], env, project)
    assert (done.returncode, done.stdout.strip()) == (0, "Again."), done.stderr
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "cache" / "dashfloat" / "pyc").iterdir()}
    assert {k: v for k, v in after.items() if k in before} == before


def test_tools_run_from_the_pyz(server_dir, tmp_path, server):
    """The tools, the command runner (its reaper, its limits) and the permission rules, run
    from the zip: a file read, a command allowed by a rule, a write refused for want of an
    approver; each result goes back to the model."""
    from tests.e2e.test_tools import call, calls_reply, tool_messages

    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("pyz-notes-content\n")
    server.push(calls_reply(call("read_file", {"path": "notes.txt"}, "c1", 0),
                            call("execute_command", {"command": "echo ran-from-pyz"}, "c2", 1),
                            call("write_file", {"path": "new.txt", "content": "x"}, "c3", 2)),
                sse_reply(["All ", "done."]))
    done = run([PYTHON, "-I", "-S", str(server_dir / "dashfloat.pyz"), "-p", "go", "--base-url", server.url,
                "--model", "test-model", "--allow", "execute_command(echo *)"], bare_env(tmp_path), project)
    # 4: an approval was needed and not given (the write), as with an installed dashfloat
    assert (done.returncode, done.stdout.strip()) == (4, "All done."), done.stderr
    assert "not approved (policy): write_file new.txt" in done.stderr
    posts = [r for r in server.requests if r["method"] == "POST"]
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(posts[-1])}
    assert "pyz-notes-content" in results["c1"]
    assert "ran-from-pyz" in results["c2"]
    assert "needs approval" in results["c3"] and not (project / "new.txt").exists()


@pytest.mark.parametrize("python", NEW_PYTHONS)
def test_every_python_from_3_11_here_runs_it(server_dir, tmp_path, server, python):
    """The bytecode cache leans on zipimport internals that differ between versions."""
    project = tmp_path / "proj"
    project.mkdir()
    for n in range(2):  # compiled, then from the cache
        server.push(sse_reply([f"Run {n} ", "done."]))
        done = run([python, "-I", "-S", str(server_dir / "dashfloat.pyz"), "-p", "go", "--base-url", server.url,
                    "--model", "test-model"], bare_env(tmp_path), project)
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, f"Run {n} done.", "")
    major, minor = _version(python)
    tag = f"cpython-{major}{minor}"
    assert any(tag in p.name for p in (tmp_path / "cache" / "dashfloat" / "pyc").iterdir())


def test_a_home_that_cannot_be_written_only_costs_the_cache(server_dir, tmp_path, server):
    server.push(sse_reply(["Still ", "fine."]))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    env = bare_env(tmp_path, XDG_CACHE_HOME=str(blocked))
    done = run([PYTHON, "-I", str(server_dir / "dashfloat.pyz"), "-p", "hi", "--base-url", server.url,
                "--model", "test-model", "--no-journal"], env, tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "Still fine."), done.stderr


READ_ONLY = ('S=/usr/sbin:/usr/bin:/sbin:/bin; PATH=$S mount --bind "$0" "$0" && '
             'PATH=$S mount -o remount,ro,bind "$0" "$0" && '
             'if PATH=$S touch "$0/.probe" 2>/dev/null; then exit 97; fi && exec "$@"')
UNSHARE = shutil.which("unshare")


def on_read_only(directory: Path, argv: list[str]) -> list[str]:
    """argv run with `directory` mounted read-only (a private mount namespace: nothing else
    sees it): a real read-only file system, which root cannot write either."""
    return [UNSHARE or "unshare", "-m", "/bin/sh", "-c", READ_ONLY, str(directory), *argv]


def _can_mount_read_only() -> bool:
    if not UNSHARE:
        return False
    probe = Path(__import__("tempfile").mkdtemp(prefix="df-ro-"))
    try:
        done = subprocess.run(on_read_only(probe, ["true"]), capture_output=True, timeout=30)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


@pytest.mark.skipif(not _can_mount_read_only(), reason="cannot mount a read-only directory here (unshare -m needs "
                    "root or user namespaces): the chmod 555 directory of the other tests stands in")
def test_on_a_read_only_file_system(server_dir, tmp_path, server):
    """The pyz on a read-only mount, its bytecode cache on it too (so nothing can be cached):
    --version, --man and a headless run all work."""
    server.push(sse_reply(["Read-only ", "is fine."]))
    env = bare_env(tmp_path, XDG_CACHE_HOME=str(server_dir / "cache"))
    pyz = str(server_dir / "dashfloat.pyz")
    done = run(on_read_only(server_dir, [PYTHON, "-I", pyz, "--version"]), env, tmp_path)
    assert (done.returncode, done.stdout) == (0, f"dashfloat {pyzbuild_version()}\n"), done.stderr
    done = run(on_read_only(server_dir, [PYTHON, "-I", pyz, "--man"]), bare_env(tmp_path, PATH=str(_bin_without_man(tmp_path))),
               tmp_path)
    assert done.returncode == 0 and "SEE ALSO" in done.stdout, done.stderr
    done = run(on_read_only(server_dir, [PYTHON, "-I", pyz, "-p", "hi", "--base-url", server.url, "--model", "test-model"]),
               env, tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "Read-only is fine."), done.stderr
    assert not (server_dir / "cache").exists()


def test_configuration_is_read_as_an_installed_dashfloat_reads_it(server_dir, tmp_path):
    config = tmp_path / "config" / "dashfloat"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('model = "from-the-user-file"\n')
    done = run([PYTHON, "-I", str(server_dir / "dashfloat.pyz"), "--show-config"], bare_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.lstrip().startswith("model"))
    assert "from-the-user-file" in line and str(config / "config.toml") in line


SAMPLES = ["plain", "日本語の文", "👍🏽 ok", "e\u0301t\u00e9", "\u200bzero", "한국어", "🇫🇷 flag", "tab\there",
           "\x1b[1mbold\x1b[0m"]


def test_the_pure_python_forms_answer_as_the_compiled_ones(server_dir, tmp_path):
    """wcwidth (urwid's column widths) and charset_normalizer (requests' guess at a body's
    encoding) run from the zip without their extensions: same answers as the compiled
    ones installed in the venv."""
    import json

    import charset_normalizer
    import wcwidth

    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import wcwidth, charset_normalizer as cn; "
            "s = json.loads(sys.argv[2]); "
            "print(json.dumps([wcwidth.HAS_C_EXTENSION, [wcwidth.wcswidth(x) for x in s], [wcwidth.width(x) for x in s], "
            "cn.from_bytes('Grüße aus Köln, ça va très bien'.encode('latin-1')).best().encoding, "
            "cn.md.__file__.endswith('.py')]))")
    done = run([PYTHON, "-I", "-S", "-c", code, str(server_dir / "dashfloat.pyz"), json.dumps(SAMPLES)],
               bare_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    has_c, wcs, widths, encoding, pure_md = json.loads(done.stdout)
    assert (has_c, pure_md) == (False, True)
    assert wcs == [wcwidth.wcswidth(x) for x in SAMPLES]
    assert widths == [wcwidth.width(x) for x in SAMPLES]
    expected = charset_normalizer.from_bytes("Grüße aus Köln, ça va très bien".encode("latin-1")).best().encoding
    assert encoding == expected


def test_the_certificate_bundle_is_readable_from_the_zip(server_dir, tmp_path):
    code = ("import sys, os; sys.path.insert(0, sys.argv[1]); import requests.utils as u; "
            "p = u.DEFAULT_CA_BUNDLE_PATH; print(os.path.getsize(p) > 100000, '.pyz' not in p)")
    done = run([PYTHON, "-I", "-S", "-c", code, str(server_dir / "dashfloat.pyz")], bare_env(tmp_path), tmp_path)
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_without_a_writable_temporary_directory_requests_still_imports(server_dir, tmp_path):
    """certifi unpacks its bundle from the zip into a temporary file when requests is imported."""
    pyz = str(server_dir / "dashfloat.pyz")
    code = ("import sys, tempfile; tempfile.tempdir = '/proc/no/such/dir'; sys.path.insert(0, sys.argv[1]); "
            "from dashfloat import pyzimport; pyzimport.install(sys.argv[1]); import requests.utils as u; "
            "import ssl; print(u.DEFAULT_CA_BUNDLE_PATH == ssl.get_default_verify_paths().cafile)")
    done = run([PYTHON, "-I", "-S", "-c", code, pyz], bare_env(tmp_path), tmp_path)
    assert (done.stdout.strip(), done.stderr) == ("True", "")


@pytest.mark.parametrize("python", NEW_PYTHONS)
def test_the_full_screen_app_from_the_pyz(server_dir, tmp_path, server, spawn, python):
    server.push(sse_reply(["The ", "**pyz** ", "answers."]))
    project = tmp_path / "proj"
    project.mkdir()
    term = spawn([python, "-I", str(server_dir / "dashfloat.pyz"), "--base-url", server.url, "--model", "test-model"],
                 env=bare_env(tmp_path), cwd=str(project))
    wait_ready(term, timeout=60)
    assert " idle " in term.status() and " test-model " in term.status(), term.dump()
    term.type("hello from a bare server")
    term.wait_for(lambda t: "hello from a bare server" in "".join(t.prompt_lines()), what="the typed prompt")
    term.send("\r")
    term.wait_text("The pyz answers.", timeout=30)
    term.wait_status("idle")
    assert "**" not in "\n".join(term.transcript())
    term.send("\x03")
    term.wait_for(lambda t: "Ctrl-C again quits" in t.status(), what="the quit hint")
    term.send("\x03")
    assert term.wait_exit(timeout=15) == 0
    assert term.left_alternate_screen()
