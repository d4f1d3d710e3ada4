"""Putting `dashfloat` on PATH (make install-user) and finding the man page: the F1 help
and --help name a `man` command that works from where DashFloat runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dashfloat import manpage
from tests.e2e.harness import clean_env

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_PAGE = ROOT / "man" / "dashfloat.1"


def test_f1_help_names_the_checkout_page_when_no_page_is_installed(dash, tmp_path):
    t = dash(rows=60)
    t.send("\x1bOP")
    t.wait_text("DashFloat keys")
    t.send("\x1b[6~" * 6)  # PgDn to the help's end
    t.wait_for(lambda t: "for options and configuration" in t.flat, what="the help's last line")
    assert f"man {CHECKOUT_PAGE} for options and configuration" in t.flat


def _make_install_user(prefix: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "install-user", f"PREFIX={prefix}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_install_user_puts_dashfloat_and_its_page_where_they_are_found(tmp_path):
    prefix = tmp_path / "prefix"
    proc = _make_install_user(prefix)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "is not on your PATH" in proc.stdout  # and says how to put it there
    env = clean_env(tmp_path, PATH=f"{prefix / 'bin'}:/usr/bin:/bin")
    version = subprocess.run(["dashfloat", "--version"], env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=30)
    assert version.returncode == 0 and version.stdout.startswith("dashfloat ")
    helptext = subprocess.run(["dashfloat", "--help"], env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=30).stdout
    assert "or man dashfloat." in " ".join(helptext.split())  # installed: the short form
    if shutil.which("man"):
        where = subprocess.run(["man", "-w", "dashfloat"], env=env, capture_output=True, text=True,
                               timeout=30)
        assert where.stdout.strip() == str(CHECKOUT_PAGE), where.stderr
    # again: nothing to do; a file that is not ours is never replaced
    assert _make_install_user(prefix).returncode == 0
    (prefix / "bin" / "dashfloat").unlink()
    (prefix / "bin" / "dashfloat").write_text("#!/bin/sh\necho someone else's\n")
    proc = _make_install_user(prefix)
    assert proc.returncode != 0 and "is not this checkout's" in proc.stdout
    assert "someone else's" in (prefix / "bin" / "dashfloat").read_text()
    subprocess.run(["make", "-s", "uninstall-user", f"PREFIX={prefix}"], cwd=ROOT, check=True,
                   capture_output=True, timeout=60)
    assert (prefix / "bin" / "dashfloat").exists()  # not ours: left alone
    assert not (prefix / "share" / "man" / "man1" / "dashfloat.1").exists()


# ---- where man looks (pure) ------------------------------------------------------------------


def test_man_command_prefers_an_installed_page():
    env = {"PATH": "/home/me/.local/bin:/usr/bin"}
    pages = {"/home/me/.local/share/man/man1/dashfloat.1"}
    assert manpage.man_command(env, exists=pages.__contains__) == "man dashfloat"
    assert manpage.man_command(env, exists={"/usr/share/man/man1/dashfloat.1.gz"}.__contains__) == "man dashfloat"


def test_man_command_falls_back_to_the_checkout_page():
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(manpage.__file__))),
                            "man", "dashfloat.1")
    assert manpage.man_command({"PATH": "/usr/bin"}, exists={checkout}.__contains__) == f"man {checkout}"
    # no page anywhere: --man shows the one inside the program
    assert manpage.man_command({"PATH": "/usr/bin"}, exists=lambda p: False) == "dashfloat --man"


def test_manpath_follows_manpath_and_path():
    assert manpage.manpath({"MANPATH": "/opt/man", "PATH": "/x/bin"}) == ["/opt/man"]
    derived = manpage.manpath({"MANPATH": "/opt/man:", "PATH": "/x/bin"})
    assert derived[:3] == ["/opt/man", "/x/share/man", "/x/man"] and "/usr/share/man" in derived
