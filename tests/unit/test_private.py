"""Files DashFloat keeps for itself (dashfloat/private.py): 0600 in 0700, whatever the umask."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from dashfloat import cli, private


@pytest.fixture
def umask0():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_ensure_dir_creates_every_missing_level_0700(tmp_path, umask0):
    target = tmp_path / "a" / "b" / "dashfloat"
    assert private.ensure_dir(target) == []
    for path in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert mode(path) == 0o700


def test_ensure_dir_tightens_an_existing_dir_and_says_so(tmp_path):
    target = tmp_path / "d"
    target.mkdir()
    os.chmod(target, 0o775)
    assert private.ensure_dir(target) == [f"{target} was mode 0775 (readable by others): now 0700"]
    assert mode(target) == 0o700
    assert private.ensure_dir(target) == []  # private already: nothing to say


def test_open_private_creates_0600_and_tightens_an_existing_file(tmp_path, umask0):
    fd, notes = private.open_private(tmp_path / "f", os.O_WRONLY)
    os.close(fd)
    assert (mode(tmp_path / "f"), notes) == (0o600, [])
    os.chmod(tmp_path / "f", 0o666)
    fd, notes = private.open_private(tmp_path / "f", os.O_WRONLY)
    os.close(fd)
    assert mode(tmp_path / "f") == 0o600
    assert notes == [f"{tmp_path / 'f'} was mode 0666 (readable by others): now 0600"]


def test_a_file_of_another_user_is_left_alone(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_text("x")
    os.chmod(path, 0o644)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(path).st_uid + 1)
    note = private.tighten(str(path), 0o600, os.stat(path))
    assert note == f"{path} is mode 0644 and belongs to another user: left as it is"
    assert mode(path) == 0o644


def test_the_log_is_0600_in_a_0700_directory_with_umask_0(tmp_path, umask0):
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        path = cli.setup_logging(tmp_path / "state" / "dashfloat")
        logging.getLogger("dashfloat").info("hello")
        assert path == str(tmp_path / "state" / "dashfloat" / "dashfloat.log")
        assert mode(path) == 0o600
        assert mode(tmp_path / "state") == 0o700
        assert mode(tmp_path / "state" / "dashfloat") == 0o700
        assert "hello" in open(path).read()
    finally:
        for h in root.handlers[:]:
            root.removeHandler(h)
            h.close()
        root.handlers[:], root.level = saved[0], saved[1]


def test_the_history_file_is_private_with_umask_0(tmp_path, umask0):
    from dashfloat.history import History

    h = History(tmp_path / "state" / "dashfloat" / "history")  # both levels missing
    h.add("one")
    assert mode(tmp_path / "state") == 0o700
    assert mode(tmp_path / "state" / "dashfloat") == 0o700
    assert mode(tmp_path / "state" / "dashfloat" / "history") == 0o600
