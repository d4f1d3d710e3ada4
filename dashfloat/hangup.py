"""Whether an exception is the terminal going away (an ssh drop, a closed window), which
DashFloat answers with the man page's quiet exit, not a crash: shared by the app's loop and
the command line."""

from __future__ import annotations

import errno


def hung_up(exc: BaseException, tty_fd: int) -> bool:
    """Whether `exc` is the terminal going away, not a bug: urwid's InputClosedError (stdin
    read EOF), or an I/O error on a terminal that no longer answers (after a hangup every
    tty call fails with EIO), anywhere in the exception's chain."""
    seen = set()
    todo: list[BaseException | None] = [exc]
    io_error = False
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if type(e).__name__ == "InputClosedError":
            return True
        if isinstance(e, OSError) and e.errno in (errno.EIO, errno.ENXIO, errno.EPIPE, errno.EBADF):
            io_error = True
        todo += [e.__cause__, e.__context__]
    if not io_error:
        return False
    import termios

    try:
        termios.tcgetattr(tty_fd)
    except (termios.error, OSError):
        return True
    return False
