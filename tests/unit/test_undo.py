"""/undo's parts (tools/undo.py), without the agent: the plan over journaled changes, the
items it makes, what a file holds now and the restore that checks it at the moment of
writing."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from dashfloat.tools import undo
from dashfloat.tools.files import EDIT_MAX_BYTES
from dashfloat.tools.undo import Item, Now, inspect, plan, restore, sha


def test_the_plan_keeps_the_earliest_before_and_the_latest_after_of_the_changes_that_happened():
    changes = [
        {"id": "c1", "path": "a", "before": "h0", "after": "h1", "real": "/r/a"},
        {"id": "bad", "path": "a", "before": "h1", "after": "hX"},  # its call failed: nothing changed
        {"id": "c2", "path": 7, "before": "h0", "after": "h1"},  # no path: skipped, the rest read
        {"id": "c3", "path": "b", "before": None, "after": "k1"},
        {"id": "c4", "path": "a", "before": "h1", "after": "h2", "real": "/r/moved/a"},
        {"id": "c5", "path": "b", "before": "k1", "after": "k2"},  # no real: the first's kept
    ]
    out = plan(changes, {"bad": False, "c1": True})
    assert out == [
        {"id": "c1", "path": "a", "before": "h0", "after": "h2", "real": "/r/moved/a"},
        {"id": "c3", "path": "b", "before": None, "after": "k2", "real": None},
    ]
    assert changes[0]["after"] == "h1"  # the journal's records are not changed


def test_an_item_carries_the_kept_bytes_or_says_why_they_are_gone():
    kept = {"h0": b"old"}.get
    it = undo.item({"path": "a", "shown": "a (shown)", "real": "/r/a", "before": "h0", "after": "h1"}, kept)
    assert it == Item(path="a", shown="a (shown)", real="/r/a", before="h0", after="h1", data=b"old", lost="")
    gone = undo.item({"path": "a", "before": "hZ", "after": "h1"}, kept)
    assert gone.data is None and gone.shown == "a" and gone.real == ""
    assert gone.lost == "its previous content is no longer kept (the undo store's bound, undo_store_mb)"
    never = undo.item({"path": "a", "before": "h0", "after": "h1", "lost": True}, kept)
    assert never.data is None and never.lost == "its previous content was not kept when it changed"
    created = undo.item({"path": "n", "shown": "", "before": None, "after": "h1"}, kept)
    assert created.data is None and created.lost == "" and created.shown == "n"


def make(tmp_path, name="f.txt", data=b"new\n", before="h0", real=True) -> Item:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        path.write_bytes(data)
    return Item(path=name, shown=name, real=str(path) if real else "", before=before, after=sha(data or b""),
                data=b"old\n" if before else None)


def test_restore_puts_back_what_was_there_only_while_the_file_holds_what_was_checked(tmp_path):
    it = make(tmp_path)
    now = inspect(str(tmp_path), it)
    assert now == Now(b"new\n") and now.digest == sha(b"new\n")
    assert restore(str(tmp_path), it, sha(b"other")) == "it changed again meanwhile"
    assert (tmp_path / "f.txt").read_bytes() == b"new\n"
    assert restore(str(tmp_path), it, now.digest) == ""
    assert (tmp_path / "f.txt").read_bytes() == b"old\n"


def test_restore_removes_a_file_dashfloat_created_and_puts_back_a_removed_one(tmp_path):
    created = make(tmp_path, "made.txt", before=None)
    assert restore(str(tmp_path), created, sha(b"new\n")) == ""
    assert not (tmp_path / "made.txt").exists()
    assert restore(str(tmp_path), created, None) == ""  # already gone: nothing to do
    removed = make(tmp_path, "sub/dir/gone.txt", data=None)
    assert inspect(str(tmp_path), removed) == Now(None)
    assert restore(str(tmp_path), removed, None) == ""
    assert (tmp_path / "sub" / "dir" / "gone.txt").read_bytes() == b"old\n"


def test_a_removed_directory_is_made_again_only_to_put_content_back(tmp_path):
    it = make(tmp_path, "d/e/f.txt", data=None)
    (tmp_path / "d" / "e").rmdir()
    assert inspect(str(tmp_path), it) == Now(None)  # its directory is gone too
    assert restore(str(tmp_path), it, None) == "" and (tmp_path / "d" / "e" / "f.txt").read_bytes() == b"old\n"
    created = make(tmp_path, "x/y/z.txt", data=None, before=None)
    (tmp_path / "x" / "y").rmdir()
    assert restore(str(tmp_path), created, None) == ""  # already gone with its directory: done
    assert restore(str(tmp_path), created, sha(b"new\n")) == "it changed again meanwhile"
    assert not (tmp_path / "x" / "y").exists()  # not made again to remove nothing


def test_lost_content_is_said_before_anything_is_touched(tmp_path):
    it = Item(path="f.txt", shown="f.txt", real="", before="h0", after="h1", data=None, lost="gone for good")
    assert restore(str(tmp_path), it, None) == "gone for good"
    bare = Item(path="f.txt", shown="f.txt", real="", before="h0", after="h1")
    assert restore(str(tmp_path), bare, None) == "its previous content is not kept"


@pytest.mark.parametrize("kind, said", [("dir", "it is now a directory, not a file"),
                                        ("link", "the path now leads somewhere else (a directory was moved "
                                                 "or replaced by a link)"),
                                        ("fifo", "it is now a FIFO, not a file")])
def test_what_is_not_a_file_any_more_is_left_alone(tmp_path, kind, said):
    it = make(tmp_path, data=None)
    target = tmp_path / "f.txt"
    if kind == "dir":
        target.mkdir()
    elif kind == "link":
        (tmp_path / "elsewhere.txt").write_bytes(b"new\n")
        target.symlink_to("elsewhere.txt")
    else:
        os.mkfifo(target)
    assert inspect(str(tmp_path), it) == Now(problem=said)  # (a FIFO is never opened: no hang)
    assert restore(str(tmp_path), it, sha(b"new\n")) == said
    if kind == "link":
        assert (tmp_path / "elsewhere.txt").read_bytes() == b"new\n"


def test_a_file_above_the_bound_is_not_read(tmp_path):
    it = make(tmp_path, data=None)
    with open(tmp_path / "f.txt", "wb") as f:
        f.truncate(EDIT_MAX_BYTES + 1)
    assert inspect(str(tmp_path), it) == Now(problem=f"it is now {EDIT_MAX_BYTES + 1} bytes, above the "
                                                     f"{EDIT_MAX_BYTES} /undo compares")
    with open(tmp_path / "f.txt", "wb") as f:
        f.truncate(EDIT_MAX_BYTES)  # at the bound: read
    assert inspect(str(tmp_path), it).data == b"\0" * EDIT_MAX_BYTES


def test_a_file_that_grows_past_the_bound_while_read_is_not_compared(tmp_path, monkeypatch):
    it = make(tmp_path)
    real_read = undo.files.read_bytes_bounded

    def grown(fd, limit):
        assert limit == EDIT_MAX_BYTES + 1
        return real_read(fd, limit) + b"x" * EDIT_MAX_BYTES
    monkeypatch.setattr(undo.files, "read_bytes_bounded", grown)
    assert inspect(str(tmp_path), it) == Now(problem=f"it grew above the {EDIT_MAX_BYTES} bytes /undo compares")


def test_a_path_that_now_leads_elsewhere_or_is_refused_is_left_alone(tmp_path):
    (tmp_path / "d").mkdir()
    it = make(tmp_path, "d/f.txt")
    os.rename(tmp_path / "d", tmp_path / "d2")
    (tmp_path / "d").symlink_to("d2")
    said = "the path now leads somewhere else (a directory was moved or replaced by a link)"
    assert inspect(str(tmp_path), it) == Now(problem=said)
    assert restore(str(tmp_path), it, sha(b"new\n")) == said
    assert (tmp_path / "d2" / "f.txt").read_bytes() == b"new\n"
    outside = Item(path="../x", shown="../x", real="", before="h0", after="h1", data=b"old")
    assert "escapes the working directory" in inspect(str(tmp_path), outside).problem
    assert "escapes the working directory" in restore(str(tmp_path), outside, None)


def test_no_descriptor_is_left_open(tmp_path):
    it = make(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        inspect(str(tmp_path), it)
        restore(str(tmp_path), it, sha(b"nope"))
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_question_shows_the_diff_to_what_undo_would_leave():
    it = Item(path="f", shown="f", real="", before="h0", after="h1", data=b"old\n")
    lines, full = undo.question(it, Now(b"mine\n"))
    assert lines[0] == ("marker", "/undo would put back the content f had before, but it changed since DashFloat wrote it:")
    assert any("old" in str(x) for x in lines) and any("mine" in str(x) for x in lines)
    lines, _ = undo.question(it, Now(None))
    assert lines[0][1].endswith("but it was removed since:")
    made = Item(path="f", shown="f", real="", before=None, after="h1")
    lines, _ = undo.question(made, Now(b"mine\n"))
    assert lines[0] == ("marker", "/undo would remove f (DashFloat created it), but it changed since:")


def test_a_link_swapped_in_after_the_path_was_checked_is_not_followed(tmp_path):
    (tmp_path / "secret").write_bytes(b"s")
    (tmp_path / "f.txt").symlink_to("secret")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert undo._read_at(fd, b"f.txt") == Now(problem="it is now a symbolic link, not a file")
        assert undo._read_at(fd, b"secret") == Now(b"s")
        assert undo._read_at(fd, b"none") == Now(None)
    finally:
        os.close(fd)


# Races: the tree changes between /undo's check of the path and its use. Each test makes the
# change at that moment (right after the check, or right after the root is opened) and asks
# that the answer is a plain problem, never a followed link, a blocked open or a crash.

def change_after(monkeypatch, where: str, change) -> None:
    """Run `change` right after undo's path check (`where="check"`) or right after it opens
    the working directory (`where="root"`)."""
    if where == "check":
        real = undo._resolve

        def resolved(root, item):
            out = real(root, item)
            change()
            return out
        monkeypatch.setattr(undo, "_resolve", resolved)
    else:
        real_open = undo.files.open_root

        def opened(res):
            out = real_open(res)
            change()
            return out
        monkeypatch.setattr(undo.files, "open_root", opened)


def test_a_directory_gone_with_the_file_means_no_file(tmp_path):
    it = make(tmp_path, "d/f.txt")
    (tmp_path / "d" / "f.txt").unlink()
    (tmp_path / "d").rmdir()
    assert inspect(str(tmp_path), it) == Now(None)


def test_a_working_directory_removed_after_the_check_is_said(tmp_path, monkeypatch):
    import shutil
    it = make(tmp_path, "f.txt")
    change_after(monkeypatch, "check", lambda: shutil.rmtree(tmp_path))
    said = f"no such file or directory: {tmp_path}"
    assert inspect(str(tmp_path), it) == Now(problem=said)
    tmp_path.mkdir()
    it = make(tmp_path, "f.txt")
    assert restore(str(tmp_path), it, sha(b"new\n")) == said


def test_a_directory_replaced_by_a_file_after_the_check_is_said(tmp_path, monkeypatch):
    import shutil
    it = make(tmp_path, "d/f.txt")

    def swap():
        shutil.rmtree(tmp_path / "d")
        (tmp_path / "d").write_bytes(b"x")
    change_after(monkeypatch, "check", swap)
    assert inspect(str(tmp_path), it) == Now(problem="cannot open its directory: Not a directory")
    monkeypatch.undo()
    (tmp_path / "d").unlink()
    it = make(tmp_path, "d/f.txt")
    change_after(monkeypatch, "check", swap)
    assert restore(str(tmp_path), it, sha(b"new\n")) == "cannot open its directory: Not a directory"
    created = Item(path="d/f.txt", shown="d/f.txt", real="", before=None, after="h1")
    monkeypatch.undo()
    (tmp_path / "d").unlink()
    make(tmp_path, "d/f.txt")
    change_after(monkeypatch, "check", swap)
    assert restore(str(tmp_path), created, sha(b"new\n")) == "cannot open its directory: Not a directory"
    assert (tmp_path / "d").read_bytes() == b"x"


def test_a_directory_that_cannot_be_made_again_is_said(tmp_path, monkeypatch):
    import shutil
    root = tmp_path / "w"
    it = make(root, "d/f.txt")
    shutil.rmtree(root / "d")
    # the working directory goes after it was opened: its directories cannot be made again
    change_after(monkeypatch, "root", lambda: shutil.rmtree(root))
    assert restore(str(root), it, None) == "cannot open its directory: No such file or directory"


class _SwapAfterStat:
    """os for undo, but its stat of `name` swaps the file right after it: what /undo
    checked is no longer what its open finds."""

    def __init__(self, name: bytes, swap):
        self._name, self._swap = name, swap

    def __getattr__(self, attr):
        return getattr(os, attr)

    def stat(self, path, *, dir_fd=None, follow_symlinks=True):
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        if path == self._name:
            self._swap()
        return st


@contextlib.contextmanager
def _blocking_fails_after(seconds: float):
    """A call that blocks (an open of a FIFO with no writer) raises instead of hanging."""
    def hung(signum, frame):
        raise TimeoutError("the open blocked")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("swapped", ["fifo", "link", "other file"])
def test_a_name_swapped_between_the_stat_and_the_open_is_not_read(tmp_path, monkeypatch, swapped):
    target = tmp_path / "f.txt"
    (tmp_path / "secret").write_bytes(b"new\n")

    def swap():
        if os.path.lexists(target) and not target.is_symlink() and target.is_file() and not target.is_fifo():
            other = tmp_path / "other"   # made while the checked file exists: another inode
            if swapped == "fifo":
                os.mkfifo(other)
            elif swapped == "link":
                other.symlink_to("secret")
            else:
                other.write_bytes(b"new\n")
            os.replace(other, target)
    monkeypatch.setattr(undo, "os", _SwapAfterStat(b"f.txt", swap))
    answers = []
    for call in ("inspect", "restore"):
        if os.path.lexists(target):
            os.unlink(target)
        it = make(tmp_path, "f.txt")
        with _blocking_fails_after(5):
            answers.append(inspect(str(tmp_path), it) if call == "inspect"
                           else restore(str(tmp_path), it, sha(b"new\n")))
        assert (tmp_path / "secret").read_bytes() == b"new\n"
        assert os.path.lexists(target)
    if swapped == "link":   # O_NOFOLLOW refuses it
        assert answers == [Now(problem="cannot read it: Too many levels of symbolic links"),
                           "Too many levels of symbolic links"]
    else:
        assert answers == [Now(problem="it changed while /undo read it"), "it changed while /undo read it"]
