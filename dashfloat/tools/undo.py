"""/undo: put back the files DashFloat's own tools changed, and nothing else.

Before write_file or edit_file changes a file, the agent keeps the file's previous bytes in
the session's store (by hash, bounded) and journals a `change` event: the path, the hashes
before and after. `plan` turns the changes of the turns being undone into one `Item` per file
(the earliest previous content, the latest content DashFloat wrote); `inspect` reads what the
file holds now; `restore` writes the previous content back (or removes a file DashFloat
created) only while the file still holds exactly what was checked, through a descriptor
beneath the root (`safeopen`), in the directory it checks in, like the tools themselves.

A file that holds what DashFloat wrote is restored. A file that changed since (by the user
or a command) is never overwritten on the strength of the journal: the agent shows the diff
from what it holds now to what /undo would put back, and asks. A path that now leads
somewhere else (a directory swapped for a link) is left alone. No I/O on the agent thread:
these run on a worker, like the tools.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from dashfloat.sha import sha256
from dashfloat.tools import files, pathpolicy, preview
from dashfloat.tools.files import EDIT_MAX_BYTES


@dataclass(frozen=True)
class Item:
    """One file to put back: `path` relative to the root (raw, surrogate escapes kept),
    `shown` for messages, `real` where it was, `before` the hash of the content to put back
    (None: DashFloat created the file, so /undo removes it), `after` the hash of what
    DashFloat last wrote there, `data` the bytes to put back (None when removing, or when
    the store no longer has them: `lost` says why)."""

    path: str
    shown: str
    real: str
    before: str | None
    after: str
    data: bytes | None = None
    lost: str = ""


def plan(changes: list[dict], outcomes: dict[str, bool]) -> list[dict]:
    """Per file, in the order first changed: the earliest change's `before` and the latest
    change's `after`, over the changes that happened (a call whose result was an error
    changed nothing; one without a result may have: the hash check decides)."""
    by_path: dict[str, dict] = {}
    for ch in changes:
        if outcomes.get(ch.get("id")) is False:
            continue
        path = ch.get("path")
        if not isinstance(path, str):
            continue
        if path not in by_path:
            by_path[path] = dict(ch)
        else:
            first = by_path[path]
            first["after"] = ch.get("after")
            first["real"] = ch.get("real", first.get("real"))
    return list(by_path.values())


def item(change: dict, kept) -> Item:
    """The Item for one planned change; `kept(sha)` gives the previous bytes from the store
    (None when they are gone)."""
    before = change.get("before")
    data = None
    lost = ""
    if before is not None:
        data = None if change.get("lost") else kept(before)
        if data is None:
            lost = ("its previous content was not kept when it changed" if change.get("lost") else
                    "its previous content is no longer kept (the undo store's bound, undo_store_mb)")
    return Item(path=change["path"], shown=str(change.get("shown") or change["path"]),
                real=str(change.get("real") or ""), before=before, after=str(change.get("after")),
                data=data, lost=lost)


def sha(data: bytes) -> str:
    return sha256(data).hexdigest()


@dataclass(frozen=True)
class Now:
    """What a recorded file holds now: `data` (None: no file there), or `problem` when it
    cannot be read as a regular file (a directory, a link, too large, the path moved)."""

    data: bytes | None = None
    problem: str = ""

    @property
    def digest(self) -> str | None:
        return None if self.data is None else sha(self.data)


def _resolve(root: str, item: Item):
    res = pathpolicy.resolve(root, os.fsencode(item.path))
    if isinstance(res, dict):
        return None, res.get("error") or "the path is refused"
    if item.real and res.real != item.real:
        return None, "the path now leads somewhere else (a directory was moved or replaced by a link)"
    return res, ""


_KINDS = {"dir": "a directory", "link": "a symbolic link", "fifo": "a FIFO", "socket": "a socket",
          "char_device": "a device", "block_device": "a device"}


def _read_at(dir_fd: int, name: bytes) -> Now:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return Now(None)
    if not stat.S_ISREG(st.st_mode):
        return Now(problem=f"it is now {_KINDS.get(pathpolicy.kind(st.st_mode), 'something else')}, not a file")
    if st.st_size > EDIT_MAX_BYTES:
        return Now(problem=f"it is now {st.st_size} bytes, above the {EDIT_MAX_BYTES} /undo compares")
    # what was checked may be swapped between the stat and the open: a link is not followed,
    # a FIFO cannot block the open, and the descriptor must be the file that was checked
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dir_fd)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(opened.st_mode):
            return Now(problem="it changed while /undo read it")
        data = files.read_bytes_bounded(fd, EDIT_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > EDIT_MAX_BYTES:
        return Now(problem=f"it grew above the {EDIT_MAX_BYTES} bytes /undo compares")
    return Now(data)


def inspect(root: str, item: Item) -> Now:
    """What the file holds now (read beneath the root)."""
    res, why = _resolve(root, item)
    if res is None:
        return Now(problem=why)
    beneath = files.open_root(res)
    if isinstance(beneath, dict):
        return Now(problem=beneath.get("error", "the working directory cannot be opened"))
    with beneath:
        try:
            dir_fd, name = beneath.parent(res.rel)
        except FileNotFoundError:
            return Now(None)  # its directory is gone too
        except OSError as exc:
            return Now(problem=f"cannot open its directory: {exc.strerror or exc}")
    try:
        return _read_at(dir_fd, name)
    except OSError as exc:
        return Now(problem=f"cannot read it: {exc.strerror or exc}")
    finally:
        os.close(dir_fd)


def restore(root: str, item: Item, expect: str | None) -> str:
    """Put `item.data` back (remove the file when `item.before` is None), provided the file
    holds content of hash `expect` (None: no file) at the moment of writing, checked in the
    directory descriptor the write uses. Returns "" when done, else why not."""
    if item.before is not None and item.data is None:
        return item.lost or "its previous content is not kept"
    res, why = _resolve(root, item)
    if res is None:
        return why
    beneath = files.open_root(res)
    if isinstance(beneath, dict):
        return beneath.get("error", "the working directory cannot be opened")
    with beneath:
        try:
            dir_fd, name = beneath.parent(res.rel, make_parents=item.before is not None)
        except FileNotFoundError as exc:
            if item.before is None:  # a file DashFloat created, gone with its directory
                return "" if expect is None else "it changed again meanwhile"
            return f"cannot open its directory: {exc.strerror or exc}"
        except OSError as exc:
            return f"cannot open its directory: {exc.strerror or exc}"
    try:
        now = _read_at(dir_fd, name)
        if now.problem:
            return now.problem
        if now.digest != expect:
            return "it changed again meanwhile"
        if item.before is None:
            if now.data is not None:
                os.unlink(name, dir_fd=dir_fd)
        else:
            files.atomic_write_at(dir_fd, name, item.data)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    finally:
        os.close(dir_fd)
    return ""


def question(item: Item, now: Now) -> tuple[list, list | None]:
    """The preview for a file that changed since: the diff from what it holds now to what
    /undo would leave (no file, for one DashFloat created)."""
    if item.before is None:
        lines, full = preview.diff_view(item.shown, now.data, b"")
        head = ("marker", f"/undo would remove {preview.safe(item.shown)} (DashFloat created it), "
                          "but it changed since:")
    else:
        lines, full = preview.diff_view(item.shown, now.data, item.data or b"")
        what = "it was removed since" if now.data is None else "it changed since DashFloat wrote it"
        head = ("marker", f"/undo would put back the content {preview.safe(item.shown)} had before, but {what}:")
    return [head, *lines], None if full is None else [head, *full]
