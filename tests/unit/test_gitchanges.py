"""Which files a command changed (tools/gitchanges.py): snapshots of `git status` around it,
read from real repositories, and the note the call's row shows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dashfloat.tools import exec as exec_tool
from dashfloat.tools import gitchanges
from dashfloat.tools.gitchanges import Snapshot, report, shown_changes, snapshot
from tests.test_repository_programs import config, git, make_repo

NOTE = "/undo does not cover changes made by commands"


def around(top: Path, change, root: Path | None = None) -> str | None:
    """The report for `change()` run between two snapshots of `root` (default: `top`)."""
    before = snapshot(str(root or top))
    change()
    return report(before, snapshot(str(root or top)))


def test_outside_a_work_tree_or_without_git_there_is_nothing_to_report(tmp_path):
    assert gitchanges.work_tree_top(str(tmp_path)) is None
    assert snapshot(str(tmp_path)) is None
    top = make_repo(tmp_path / "t")
    assert snapshot(str(top), environ={**os.environ, "PATH": str(tmp_path / "nowhere")}) is None
    assert report(None, None) is None and report(snapshot(str(top)), None) is None
    assert report(None, snapshot(str(top))) is None


def test_each_kind_of_change_is_named(tmp_path):
    top = make_repo(tmp_path / "t")
    (top / "b.txt").write_text("b\n")
    (top / "c.txt").write_text("c\n")
    git(top, "add", "b.txt", "c.txt")
    git(top, "commit", "-qm", "more")

    def change():
        (top / "new.txt").write_text("n\n")
        (top / "a.txt").write_text("changed\n")
        (top / "b.txt").unlink()

    assert around(top, change) == (
        "git status: the command changed 3 files: a.txt (modified), b.txt (deleted), new.txt (new). "
        f"{NOTE}.")
    # a file already changed before and changed again is named; one changed back is now clean
    assert around(top, lambda: (top / "a.txt").write_text("again, longer\n")) == (
        f"git status: the command changed 1 file: a.txt (modified). {NOTE}.")
    assert around(top, lambda: (top / "a.txt").write_text("hello\n")) == (
        f"git status: the command changed 1 file: a.txt (now clean). {NOTE}.")
    assert around(top, lambda: (top / "new.txt").unlink()) == (
        f"git status: the command changed 1 file: new.txt (removed). {NOTE}.")
    assert around(top, lambda: git(top, "rm", "-q", "c.txt")) == (
        f"git status: the command changed 1 file: c.txt (deleted). {NOTE}.")
    git(top, "reset", "-q", "--hard")
    assert around(top, lambda: None) is None


def test_a_file_modified_before_and_deleted_by_the_command_is_deleted(tmp_path):
    top = make_repo(tmp_path / "t")
    (top / "a.txt").write_text("modified first\n")
    assert around(top, lambda: (top / "a.txt").unlink()) == (
        f"git status: the command changed 1 file: a.txt (deleted). {NOTE}.")


def test_a_rename_is_one_entry_its_source_not_another(tmp_path):
    """`git status -z` gives a rename as `R  new\\0old\\0`: the source is skipped."""
    top = make_repo(tmp_path / "t")
    (top / "z.txt").write_text("z\n")
    git(top, "add", "z.txt")
    git(top, "commit", "-qm", "z")
    first = snapshot(str(top))
    git(top, "mv", "z.txt", "y.txt")
    after = snapshot(str(top))
    assert isinstance(after, Snapshot)
    assert list(after.entries) == ["y.txt"] and after.entries["y.txt"][0] == "R "
    assert shown_changes(first, after) == [("y.txt", "renamed")]
    assert report(first, after) == f"git status: the command changed 1 file: y.txt (renamed from z.txt). {NOTE}."


def test_records_are_read_from_the_raw_status(tmp_path):
    """Status records: `XY path`, a one-letter path included; a rename's source skipped."""
    (tmp_path / "x").write_text("1")
    out = b"?? x\0 M ab\0R  new\0old\0?? c\0"
    entries = gitchanges._entries(out, str(tmp_path))
    assert list(entries) == ["x", " M ab"[3:], "new", "c"]
    assert entries["x"][0] == "??" and entries["x"][1][0] == 1  # its size
    assert entries["ab"] == (" M", None)  # no such file here: no metadata


def test_a_status_cut_after_a_rename_gives_it_no_source(tmp_path):
    """git ends every -z field with NUL; an output that does not (cut short) still reads,
    and its last rename has no source rather than another record's."""
    sources: dict = {}
    entries = gitchanges._entries(b"R  new\0old\0 M x\0R  part", str(tmp_path), sources)
    assert list(entries) == ["new", "x", "part"] and sources == {"new": "old"}


def test_paths_are_shown_relative_to_the_working_directory(tmp_path):
    top = make_repo(tmp_path / "t")
    (top / "sub").mkdir()
    # the working directory new as a whole: git names the directory (it was shown as ".")
    assert around(top, lambda: (top / "sub" / "n.txt").write_text("n\n"), root=top / "sub") == (
        f"git status: the command changed 1 file: ./ (new). {NOTE}.")
    git(top, "add", "sub")
    git(top, "commit", "-qm", "sub")
    assert around(top, lambda: [(top / "sub" / n).mkdir() or (top / "sub" / n / "f").write_text("x")
                                for n in ("d", "e")] and (top / "sub" / "m.txt").write_text("m\n"),
                  root=top / "sub") == (
        f"git status: the command changed 3 files: d/ (new), e/ (new), m.txt (new). {NOTE}.")
    shot = Snapshot(top=str(top), root=str(top / "sub"), entries={})
    assert gitchanges._shown(shot, "x") == str(top / "x")  # not beneath: absolute
    assert gitchanges._shown(shot, "subx/y") == str(top / "subx" / "y")  # a name sharing the prefix
    assert gitchanges._shown(shot, "sub/a/b") == "a/b" and gitchanges._shown(shot, "sub/a/") == "a/"


def test_the_report_names_a_few_and_counts_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(gitchanges, "MAX_NAMED", 2)
    top = make_repo(tmp_path / "t")

    def make(*names):
        return lambda: [(top / n).write_text("x\n") for n in names]

    assert around(top, make("n1", "n2")) == (
        f"git status: the command changed 2 files: n1 (new), n2 (new). {NOTE}.")
    assert around(top, make("n3", "n4", "n5")) == (
        f"git status: the command changed 3 files: n3 (new), n4 (new) and 1 more. {NOTE}.")


def test_only_the_first_files_are_compared_by_their_metadata(tmp_path, monkeypatch):
    monkeypatch.setattr(gitchanges, "MAX_STATS", 2)
    top = make_repo(tmp_path / "t")
    for name in ("p", "q", "r"):
        (top / name).write_text("x\n")
    shot = snapshot(str(top))
    assert [meta is not None for _xy, meta in shot.entries.values()] == [True, True, False]


def test_a_repository_git_would_run_a_program_in_is_not_read(tmp_path):
    top = make_repo(tmp_path / "t")
    (top / ".gitattributes").write_text("*.txt filter=x\n")
    config(top, "filter.x.clean", "touch pwned; cat")
    before = snapshot(str(top))
    assert isinstance(before, str) and before.startswith("not read: git would run")
    assert not (top / "pwned").exists()
    assert report(before, before) == (
        f"git status {before}: which files the command changed is unknown ({NOTE})")
    good = make_repo(tmp_path / "g")
    assert report(snapshot(str(good)), before).startswith(f"git status {before}:")
    assert shown_changes(before, snapshot(str(good))) == []
    assert shown_changes(snapshot(str(good)), before) == []


def git_whose_status(tmp_path: Path, does: str) -> dict:
    """An environment whose git runs `does` (shell) before its status (and only there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "git").write_text(f'#!/bin/sh\ncase "$*" in *porcelain=v1*) {does};; esac\nexec {real} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_git_status_that_fails_or_says_too_much_is_said(tmp_path, monkeypatch):
    top = make_repo(tmp_path / "t")
    shot = snapshot(str(top), environ=git_whose_status(tmp_path, "echo boom >&2; exit 3"))
    assert shot == "not read: git status failed: boom"
    top2 = make_repo(tmp_path / "u")
    for k in range(50):
        (top2 / f"file{k}").write_text("x")
    monkeypatch.setattr(gitchanges, "MAX_OUTPUT", 100)
    shot = snapshot(str(top2))
    assert isinstance(shot, str) and shot.startswith("not read: ") and "git status failed" not in shot


def test_git_runs_with_the_overrides_and_the_check_s_changes(tmp_path):
    env = gitchanges._env({"KEEP": "1", "DROP": "2", "LC_ALL": "fr_FR"}, {"DROP": None, "ADDED": "3"})
    assert env["KEEP"] == "1" and "DROP" not in env and env["ADDED"] == "3"
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["LC_ALL"] == "C" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert all(env[k] == v for k, v in exec_tool.ENV_OVERRIDES.items())
    # and the status really runs so (GIT_OPTIONAL_LOCKS=0): it leaves a stale index as it is,
    # where a plain git status refreshes and rewrites it
    top = make_repo(tmp_path / "t")
    index = top / ".git" / "index"
    stamp = index.stat().st_mtime_ns
    os.utime(top / "a.txt", ns=(stamp + 10**9, stamp + 10**9))  # newer stat data, same content
    assert isinstance(snapshot(str(top)), Snapshot)
    assert index.stat().st_mtime_ns == stamp
    subprocess.run(["git", "status"], cwd=top, capture_output=True, check=True)
    assert index.stat().st_mtime_ns != stamp


@pytest.mark.parametrize("before_xy, after, what", [
    (" M", None, "now clean"), ("??", None, "removed"), ("M ", None, "now clean"),
])
def test_a_file_gone_from_the_status_is_clean_or_removed(before_xy, after, what):
    a = Snapshot(top="/t", root="/t", entries={"f": (before_xy, (1, 2, 3))})
    b = Snapshot(top="/t", root="/t", entries={})
    assert gitchanges.changed(a, b) == [("f", what)]


@pytest.mark.parametrize("after_xy, what", [(" D", "deleted"), ("D ", "deleted"), ("MM", "modified"), ("AM", "modified")])
def test_a_file_still_in_the_status_is_deleted_or_modified(after_xy, what):
    a = Snapshot(top="/t", root="/t", entries={"f": (" M", (1, 2, 3))})
    b = Snapshot(top="/t", root="/t", entries={"f": (after_xy, (1, 2, 4))})
    assert gitchanges.changed(a, b) == [("f", what)]


def test_a_copy_is_named_with_its_source():
    a = Snapshot(top="/t", root="/t", entries={})
    b = Snapshot(top="/t", root="/t", entries={"c": ("C ", None), "d/e": ("R ", None)}, sources={"c": "o", "d/e": "f"})
    assert gitchanges.changed(a, b) == [("c", "copied"), ("d/e", "renamed")]
    assert report(a, b) == f"git status: the command changed 2 files: c (copied from o), d/e (renamed from f). {NOTE}."


def test_the_status_gets_what_is_left_of_the_time_budget(tmp_path):
    """A status that takes 0.4 s is read within the 3 s of a snapshot (the check's git runs
    took a little of it), and not within 0.3 s."""
    top = make_repo(tmp_path / "t")
    slow = git_whose_status(tmp_path, "sleep 0.4")
    assert isinstance(snapshot(str(top), environ=slow), Snapshot)
    shot = snapshot(str(top), environ=slow, timeout=0.3)
    assert isinstance(shot, str) and shot.startswith("not read: ")
