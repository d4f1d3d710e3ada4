"""The only way from a worker thread into the UI: a queue plus a one-byte doorbell.

Workers call `post(msg)`: the tuple goes on a SimpleQueue, and one byte is written to a
pipe that urwid's loop watches (`watch_pipe`), but only when no wake-up is pending, so the
pipe is never continuously readable and never fills. The UI callback clears the pending
flag first, then drains; the race between the two costs at most one spare wake-up.

Everything posted is masked here (`masking.mask_deep`): this is the one door from the
workers to the screen, so no secret (the API key, a token in a URL) gets past it, whichever
worker produced the text.
"""

from __future__ import annotations

import os
import queue
import time

from dashfloat import masking


class Outbox:
    """`quiet_kinds` are messages the UI collects on its own timer while `quiet` is set
    (streamed text while the tick runs): they are queued without ringing, so a 200 token/s
    stream costs the UI ten wake-ups a second, not two hundred."""

    def __init__(self, quiet_kinds: frozenset = frozenset(), secrets=None) -> None:
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self._pending = False
        self._fd: int | None = None
        self.closed = False
        self.quiet = False
        self.quiet_kinds = quiet_kinds
        self.secrets = secrets  # masking pairs; None: the process's registered secrets

    def attach(self, fd: int) -> None:
        """Attach the write end of the watch_pipe; messages posted before are delivered then."""
        self._fd = fd
        self._ring()

    def post(self, msg: tuple) -> None:
        """Thread-safe: queue a message (masked) and ring the doorbell if nobody has yet."""
        msg = (msg[0], *masking.mask_deep(msg[1:], self.secrets))
        self.queue.put(msg)
        if not self._pending and not (self.quiet and msg[0] in self.quiet_kinds):
            self._ring()

    def ring(self) -> None:
        """Ask for another wake-up (a drain that stopped on its budget)."""
        self._ring()

    def _ring(self) -> None:
        if self._fd is None or self.closed:
            return
        self._pending = True
        try:
            os.write(self._fd, b"!")
        except OSError:  # the UI is gone or the watch was removed: nothing to wake
            pass

    def drain(self, budget_s: float = 0.005, max_items: int = 5000) -> tuple[list[tuple], bool]:
        """Messages waiting now, bounded by time and count so input stays responsive.

        Returns (messages, more): `more` means the budget ran out with messages left.
        """
        self._pending = False
        out: list[tuple] = []
        deadline = time.monotonic() + budget_s
        while len(out) < max_items:
            try:
                out.append(self.queue.get_nowait())
            except queue.Empty:
                return out, False
            if len(out) % 64 == 0 and time.monotonic() > deadline:
                break
        return out, not self.queue.empty()

    def close(self) -> None:
        self.closed = True
