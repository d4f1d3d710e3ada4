"""The screen first: while the UI thread is awake (a key, a message, a frame), the stream's
parsing steps aside.

A stream sent as fast as a server can (16,000 events a second) keeps the streamer thread
busy parsing, and Python's threads share one interpreter lock: the UI thread got the lock a
switch interval at a time and waited as long for it again, so a frame took twice its CPU
and a key typed meanwhile waited for that frame and then for its own (issue 16). Now the
UI's loop says when it wakes (`busy`) and when it goes back to sleep (`done`); between the
two the streamer, at its next event, waits (`step_aside`) instead of competing.

The wait is bounded: at most MAX_WAIT, after which the streamer runs for at least MIN_RUN
before it steps aside again. A UI that stays awake (catching up with a huge block part by
part) slows the stream to a sixth, never stops it.

Nothing here knows the UI or the stream: two events and four calls. A process without a
UI (headless) never sets them, and `step_aside` then costs one attribute read.
"""

from __future__ import annotations

import threading
import time

MAX_WAIT = 0.05  # s the streamer waits at most for the UI thread
MIN_RUN = 0.01  # s the streamer then runs before it steps aside again

_busy = threading.Event()  # set while the UI thread is awake
_free = threading.Event()  # the opposite, for waiting on
_free.set()
_run_until = 0.0  # monotonic time before which step_aside does not wait (after a MAX_WAIT)


def busy() -> None:
    """The UI thread is awake: background parsing steps aside."""
    _free.clear()
    _busy.set()


def done() -> None:
    """The UI thread sleeps: background parsing goes on."""
    _busy.clear()
    _free.set()


def is_busy() -> bool:
    return _busy.is_set()


def step_aside() -> bool:
    """In a background thread, between two pieces of work: wait while the UI thread is
    awake (see the module docstring for the bounds). True when it waited."""
    global _run_until
    if not _busy.is_set():
        return False
    now = time.monotonic()
    if now < _run_until:
        return False
    if not _free.wait(MAX_WAIT):
        _run_until = time.monotonic() + MIN_RUN
    return True
