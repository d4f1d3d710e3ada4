"""The first frame, painted with plain escape sequences before urwid is imported.

Importing urwid costs ~0.15-0.2 s on a small server; the person at the keyboard should not
wait for it. The early frame shows the app's initial screen (the status bar and the prompt)
at once, and a small thread echoes what is typed onto the prompt row meanwhile (the
terminal is in cbreak mode, so nothing is echoed raw and nothing is lost). `finish()` stops
the thread, restores the terminal settings exactly as they were (urwid saves the settings
it finds and restores them at exit, so they must be the original ones) and returns the
bytes typed, which DashScreen replays as input: keys mean what they would have meant.
No urwid import here.
"""

from __future__ import annotations

import os
import select
import signal
import termios
import threading

from dashfloat.textsafe import visible

MAX_EARLY_INPUT = 65536


class EarlyFrame:
    def __init__(self, fd_in: int, fd_out: int):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.saved = None
        self._old_handlers: dict = {}
        self._typed = bytearray()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rows = self._cols = 0
        self._prompt = ""

    def show(self, status: str, prompt: str) -> None:
        """Enter the alternate screen, paint the status bar and the prompt, start echoing."""
        self.saved = termios.tcgetattr(self.fd_in)
        mode = termios.tcgetattr(self.fd_in)
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)  # Ctrl-C/Ctrl-Z become keys, replayed later
        termios.tcsetattr(self.fd_in, termios.TCSANOW, mode)
        for sig in (signal.SIGTERM, signal.SIGHUP):  # leaving now must leave a clean terminal
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        self._cols, self._rows = os.get_terminal_size(self.fd_out)
        self._prompt = prompt + " "
        bar = visible(status)[: self._cols].ljust(self._cols)
        frame = (
            "\x1b[?1049h\x1b[H\x1b[2J"
            f"\x1b[{max(1, self._rows - 1)};1H\x1b[7m{bar}\x1b[0m"
            f"\x1b[{self._rows};1H{self._prompt}"
        )
        os.write(self.fd_out, frame.encode("utf-8", "replace"))
        self._thread = threading.Thread(target=self._echo, name="early-echo", daemon=True)
        self._thread.start()

    def _echo(self) -> None:
        """Read keys as they come and show the printable ones on the prompt row."""
        shown = ""
        while not self._stop.is_set() and len(self._typed) < MAX_EARLY_INPUT:
            try:
                ready = select.select([self.fd_in], [], [], 0.02)[0]
                if not ready:
                    continue
                chunk = os.read(self.fd_in, 4096)
            except OSError:
                return
            if not chunk:
                return
            self._typed += chunk
            text = self._typed.decode("utf-8", "ignore")
            line = _echo_text(text)
            if line != shown:
                shown = line
                room = max(1, self._cols - len(self._prompt) - 1)
                tail = visible(line)[-room:]
                try:
                    os.write(self.fd_out, f"\x1b[{self._rows};1H{self._prompt}{tail}\x1b[K".encode("utf-8", "replace"))
                except OSError:
                    return

    def finish(self) -> bytes:
        """Hand over to urwid: stop echoing, restore the settings, return what was typed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        try:
            while len(self._typed) < MAX_EARLY_INPUT and select.select([self.fd_in], [], [], 0)[0]:
                chunk = os.read(self.fd_in, 4096)
                if not chunk:
                    break
                self._typed += chunk
        except OSError:
            pass
        self._restore_settings()
        return bytes(self._typed)

    def abort(self) -> None:
        """Leave the alternate screen and restore the terminal (start-up failed)."""
        self._stop.set()
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


def _echo_text(typed: str) -> str:
    """The prompt text the keys typed so far amount to, for the echo only (the real prompt
    gets the raw keys): printable characters, Backspace removing one; after an Enter or an
    escape sequence the echo stops changing (urwid will interpret those)."""
    out: list[str] = []
    for ch in typed:
        if ch in ("\x7f", "\x08"):
            if out:
                out.pop()
        elif ch in ("\r", "\n", "\x1b"):
            break
        elif ch.isprintable():
            out.append(ch)
    return "".join(out)
