"""Files DashFloat keeps for itself are private: 0600, in directories of mode 0700.

The log holds the audit trail and the history holds what was typed (a pasted secret
too), so neither may be readable by others, whatever the umask. A file or directory that
already exists with a wider mode is tightened when DashFloat opens it, if the user owns it;
each change is returned as a note for the log (the log may not be open yet when the first
one happens).
"""

from __future__ import annotations

import errno
import os
import stat

FILE_MODE = 0o600
DIR_MODE = 0o700


def describe(exc: OSError) -> str:
    """An OSError for a person: what went wrong and on which path ("Read-only file system:
    /home/me/.local/state/dashfloat")."""
    why = exc.strerror or str(exc) or type(exc).__name__
    return f"{why}: {exc.filename}" if exc.filename else why


def ensure_dir(path: str | os.PathLike) -> list[str]:
    """Create `path` (and missing parents) with mode 0700; tighten `path` itself if it
    exists with group or other bits. Returns notes; raises OSError if it cannot be made."""
    path = os.fspath(path)
    notes: list[str] = []
    missing = []
    head = path
    while head and not os.path.isdir(head):
        missing.append(head)
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)  # umask only removes bits: never wider than 0700
        except FileExistsError:
            if not os.path.isdir(directory):  # a file where a directory must be
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory) from None
    if not missing:
        note = tighten(path, DIR_MODE, os.stat(path))
        if note:
            notes.append(note)
    return notes


def open_private(path: str | os.PathLike, flags: int) -> tuple[int, list[str]]:
    """os.open(path, flags | O_CREAT) creating it 0600; an existing file of the user's with
    a wider mode is tightened to 0600. Returns (fd, notes)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        note = tighten(os.fspath(path), FILE_MODE, os.fstat(fd), fd=fd)
    except OSError:
        os.close(fd)
        raise
    return fd, [note] if note else []


def tighten(path: str, mode: int, st: os.stat_result, *, fd: int | None = None) -> str | None:
    """chmod `path` to `mode` when its group/other bits are set and the user owns it.
    Returns a note saying what changed (or why it could not), None when it was private."""
    current = stat.S_IMODE(st.st_mode)
    if not current & 0o077:
        return None
    if st.st_uid != os.geteuid():
        return f"{path} is mode {current:04o} and belongs to another user: left as it is"
    try:
        if fd is not None:
            os.fchmod(fd, current & mode)
        else:
            os.chmod(path, current & mode)
    except OSError as exc:
        return f"{path} is mode {current:04o} and could not be made private: {exc.strerror or exc}"
    return f"{path} was mode {current:04o} (readable by others): now {current & mode:04o}"
