"""What DashFloat writes for itself, and what happens when it cannot: it says so once.

Everything DashFloat keeps lives under the state directory ($XDG_STATE_HOME/dashfloat):
the log, the prompt history, the session journals with their stores (long texts, the
previous bytes /undo puts back) and the /copy file. It writes nothing else of its own (the
configuration is only read). On a remote home that is read-only or full, or with an XDG
directory that cannot be created, DashFloat still runs:

* at start, `probe` tries to create a file in the state directory; if it cannot, one
  notice (`unwritable`) says which directory, why, and what this session goes without
  (log, prompt history kept in memory only, journal, so no --continue); the history and
  the journal then do not try again, and /undo keeps the previous bytes in memory;
* a write that fails later (a full disk) is said once per kind (`report`: the log, the
  history, the journal its own way), and the rest goes on: the history and /undo keep in
  memory what the disk no longer takes.

The notices reach the front end through one sink (`attach`): the full-screen UI posts
them as entries, headless mode as warning notices (stderr, or events). A report made
before a front end attached waits for it. Thread-safe: the log fails on any thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

_lock = threading.Lock()
_sink: Callable[[str], None] | None = None
_waiting: list[str] = []
_said: set[str] = set()


def reset() -> None:
    """Forget the sink and what was said (a new run; tests)."""
    global _sink
    with _lock:
        _sink = None
        _waiting.clear()
        _said.clear()


def attach(sink: Callable[[str], None]) -> None:
    """Where notices go from now on; the ones made before go there at once."""
    global _sink
    with _lock:
        _sink = sink
        waiting = list(_waiting)
        _waiting.clear()
    for text in waiting:
        _deliver(sink, text)


def said(kind: str) -> bool:
    with _lock:
        return kind in _said


def report(kind: str, text: str, *, covers: tuple[str, ...] = ()) -> bool:
    """Say `text` unless a notice of `kind` was said already (then nothing: True only the
    first time). `covers`: kinds this notice speaks for too (they stay quiet after it)."""
    with _lock:
        if kind in _said:
            return False
        _said.add(kind)
        _said.update(covers)
        sink = _sink
        if sink is None:
            _waiting.append(text)
            return True
    _deliver(sink, text)
    return True


def _deliver(sink: Callable[[str], None], text: str) -> None:
    try:
        sink(text)
    except Exception:  # noqa: BLE001 - a notice must never break what failed to write
        pass


def describe(exc: BaseException) -> str:
    """An OSError for a person ("No space left on device: /path"), else its text."""
    if isinstance(exc, OSError):
        from dashfloat.private import describe as describe_oserror

        return describe_oserror(exc)
    return str(exc) or type(exc).__name__


def probe(state_dir: str | os.PathLike) -> str | None:
    """Whether DashFloat can write in its state directory: None, or why not. Creates the
    directory (0700) if missing, then a file in it with one byte, and removes it (a
    read-only file system says so only when something is created, a full one only when
    something is written)."""
    from dashfloat import private

    path = os.fspath(state_dir)
    test = os.path.join(path, f".probe-{os.getpid()}")
    try:
        if not os.path.isdir(path):  # an existing one is tightened by the log's set-up, which logs it
            private.ensure_dir(path)
        fd = os.open(test, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, private.FILE_MODE)
        try:
            os.write(fd, b"\n")
        finally:
            os.close(fd)
            os.unlink(test)
    except OSError as exc:
        return describe(exc)
    return None


STATE_KINDS = ("log", "history", "journal", "copy")


def unwritable(state_dir: str | os.PathLike, why: str, *, journal: bool) -> str:
    """The one notice for a state directory that cannot be written."""
    lost = "no log, no prompt history on disk (Up still has this session's prompts)"
    lost += ", no journal (no --continue; /undo works from memory)" if journal else ""
    return (f"DashFloat cannot write in {os.fspath(state_dir)} ({why}): this session keeps {lost}. "
            "Set XDG_STATE_HOME to a writable directory to keep them.")


class MaskingFormatter(logging.Formatter):
    """The log's formatter: the whole formatted record (message, arguments, exception and
    stack texts) goes through `masking.mask` with the registered secrets. Here, beside the
    handler, not in masking: the first frame needs masking, and logging loads after it."""

    def format(self, record: logging.LogRecord) -> str:
        from dashfloat.masking import mask

        return mask(super().format(record))


class LogHandler(logging.StreamHandler):
    """The log file's handler: a record it cannot write (a full disk) is dropped, never
    printed on the screen, and said once (`report("log")`)."""

    def __init__(self, stream, path: str):
        super().__init__(stream)
        self.path = path

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        import sys

        exc = sys.exc_info()[1]
        why = describe(exc) if exc is not None else "a write failed"
        report("log", f"The log {self.path} could not be written ({why}): from here on nothing is logged.")
