"""The first frame, painted with plain escape sequences before urwid is imported.

Importing urwid costs ~0.15-0.2 s on a small server; the person at the keyboard should not
wait for it. The early frame shows the app's initial screen (the status bar and the prompt)
at once and keeps the terminal in cbreak mode, so what is typed meanwhile is neither echoed
nor lost: `finish()` collects it (DashScreen replays it as input) and restores the terminal exactly as it was, just before
urwid takes over (urwid saves the settings it finds and restores them at exit, so they
must be the original ones). No urwid import here.
"""

from __future__ import annotations

import os
import select
import signal
import termios

from dashfloat.textsafe import visible


class EarlyFrame:
    def __init__(self, fd_in: int, fd_out: int):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.saved = None
        self._old_handlers: dict = {}

    def show(self, status: str, prompt: str) -> None:
        """Enter the alternate screen and paint the status bar and the prompt."""
        self.saved = termios.tcgetattr(self.fd_in)
        mode = termios.tcgetattr(self.fd_in)
        mode[3] &= ~(termios.ICANON | termios.ECHO)
        termios.tcsetattr(self.fd_in, termios.TCSANOW, mode)
        for sig in (signal.SIGTERM, signal.SIGHUP):  # leaving now must leave a clean terminal
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        cols, rows = os.get_terminal_size(self.fd_out)
        bar = visible(status)[:cols].ljust(cols)
        frame = (
            "\x1b[?1049h\x1b[H\x1b[2J"
            f"\x1b[{max(1, rows - 1)};1H\x1b[7m{bar}\x1b[0m"
            f"\x1b[{rows};1H{prompt} "
        )
        os.write(self.fd_out, frame.encode("utf-8", "replace"))

    def typed(self) -> bytes:
        data = b""
        while len(data) < 65536 and select.select([self.fd_in], [], [], 0)[0]:
            chunk = os.read(self.fd_in, 4096)
            if not chunk:
                break
            data += chunk
        return data

    def finish(self) -> bytes:
        """Hand over to urwid: the bytes typed so far (the screen replays them as input, so
        keys mean what they would have meant), with the terminal settings restored."""
        data = self.typed()
        self._restore_settings()
        return data

    def abort(self) -> None:
        """Leave the alternate screen and restore the terminal (start-up failed)."""
        self._restore_settings()
        try:
            os.write(self.fd_out, b"\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1006l\x1b[0m\x1b[?1049l\x1b[?25h")
        except OSError:
            pass

    def _restore_settings(self) -> None:
        if self.saved is not None:
            try:
                termios.tcsetattr(self.fd_in, termios.TCSANOW, self.saved)
            except termios.error:
                pass
            self.saved = None
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers = {}

    def _on_signal(self, signum, frame):
        self.abort()
        raise SystemExit(0)
