"""Prompt history: persistence, tolerance of damage, and Up/Down navigation."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from dashfloat.history import History


def fresh(path: Path, limit: int = 1000) -> History:
    history = History(path, limit)
    history.load()
    return history


def test_round_trip_with_multi_line_entries(tmp_path: Path) -> None:
    path = tmp_path / "state" / "dashfloat" / "history"
    history = fresh(path)
    entries = [
        "first",
        "two\nlines",
        'tabs\tand "quotes" and \\',
        "unicode: café ✓ \u2028 sep",
    ]
    for entry in entries:
        history.add(entry)
    assert history.entries == entries
    assert len(path.read_text(encoding="ascii").splitlines()) == len(entries)
    assert fresh(path).entries == entries


def test_file_and_directory_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "history"
    fresh(path).add("x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0


def test_blank_and_immediate_duplicates_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "history"
    history = fresh(path)
    for text in ["a", "a", "", "   \n\t", "b", "a", "a"]:
        history.add(text)
    assert history.entries == ["a", "b", "a"]
    assert fresh(path).entries == ["a", "b", "a"]


def test_missing_file_is_fine(tmp_path: Path) -> None:
    history = fresh(tmp_path / "nope" / "history")
    assert history.entries == []


def test_none_path_keeps_memory_only(tmp_path: Path) -> None:
    history = History(None)
    history.load()
    history.add("x")
    assert history.entries == ["x"]


def test_corrupt_lines_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "history"
    path.write_bytes(
        b'"good one"\n'
        b"not json\n"
        b"42\n"
        b'"\\ud800 lone surrogate"\n'
        b"\xff\xfe\n"
        b"\n"
        b'"unterminated\n'
        b'"good\\ntwo"\n'
    )
    with caplog.at_level(logging.WARNING, logger="dashfloat.history"):
        history = fresh(path)
    assert history.entries == ["good one", "good\ntwo"]
    assert "skipped 5 corrupt" in caplog.text


def test_limit_keeps_newest_in_memory_and_trims_file(tmp_path: Path) -> None:
    path = tmp_path / "history"
    history = fresh(path, limit=5)
    for i in range(30):
        history.add(f"p{i}")
    assert history.entries == [f"p{i}" for i in range(25, 30)]
    lines = path.read_text().splitlines()
    assert len(lines) <= 2 * 5  # trimmed occasionally, never far past the limit
    assert [json.loads(line) for line in lines][-5:] == history.entries
    assert fresh(path, limit=5).entries == history.entries
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["history"]  # no temp files left


def test_load_applies_limit(tmp_path: Path) -> None:
    path = tmp_path / "history"
    path.write_text("".join(json.dumps(f"e{i}") + "\n" for i in range(20)))
    assert fresh(path, limit=3).entries == ["e17", "e18", "e19"]


def test_trim_keeps_lines_appended_by_another_instance(tmp_path: Path) -> None:
    path = tmp_path / "history"
    one, two = fresh(path, limit=3), fresh(path, limit=3)
    for i in range(6):
        one.add(f"one{i}")
    two.add("from two")
    one.add("one6")  # `one` now counts 7 lines > 2 * limit: it trims
    kept = fresh(path, limit=3).entries
    assert kept == ["one5", "from two", "one6"]
    assert len(path.read_text().splitlines()) == 3


def test_unwritable_path_does_not_raise(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    history = fresh(blocker / "sub" / "history")  # parent "directory" is a file
    with caplog.at_level(logging.WARNING, logger="dashfloat.history"):
        history.add("hello")
        history.add("again")
    assert history.entries == ["hello", "again"]
    assert (
        caplog.text.count("could not be saved") == 1
    )  # warned once, not on every submit


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_directory_does_not_raise(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        history = fresh(ro / "history")
        history.add("x")
        assert history.entries == ["x"]
    finally:
        ro.chmod(0o700)


def test_unreadable_path_does_not_raise(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "history"
    path.mkdir()  # a directory where the file should be
    with caplog.at_level(logging.WARNING, logger="dashfloat.history"):
        history = fresh(path)
        history.add("x")
    assert history.entries == ["x"]
    assert "could not be read" in caplog.text


def test_write_failure_is_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    history = fresh(tmp_path / "history")
    history.add("x")
    assert history.entries == ["x"]


def test_navigation_older_newer_with_draft_restore() -> None:
    history = History(None)
    for text in ["one", "two", "three"]:
        history.add(text)
    assert history.newer() is None  # not navigating yet
    assert history.older("my draft") == "three"
    assert history.older("three") == "two"
    assert history.older("two") == "one"
    assert history.older("one") is None  # at the oldest: stay
    assert history.newer() == "two"
    assert history.newer() == "three"
    assert history.newer() == "my draft"  # past the newest: the draft comes back
    assert history.newer() is None
    assert history.older("new draft") == "three"  # a fresh navigation stashes again
    assert history.newer() == "new draft"


def test_navigation_resets_on_add_and_explicitly() -> None:
    history = History(None)
    history.add("a")
    history.add("b")
    assert history.older("d") == "b"
    assert history.older("b") == "a"
    history.add("c")
    assert history.older("") == "c"
    history.reset_navigation()
    assert history.newer() is None
    assert history.older("x") == "c"


def test_navigation_with_empty_history() -> None:
    history = History(None)
    assert history.older("draft") is None
    assert history.newer() is None
