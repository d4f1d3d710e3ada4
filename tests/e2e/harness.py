"""Drive the installed `dashfloat` in a pty and read its screen through a VT emulator.

Tests wait for screen states, never for fixed times: `wait_for(pred)` pumps the pty into
pyte until the predicate holds, and on timeout fails with a dump of the screen.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pexpect
import pyte

from tests.xterm import XTerm

BIN_DIR = Path(sys.executable).parent
PHASE_WORDS = (" idle ", " waiting ", " streaming ", " running ", " confirming ", " agent down ")


def dashfloat_bin() -> str:
    path = BIN_DIR / "dashfloat"
    if path.exists():
        return str(path)
    found = shutil.which("dashfloat")
    if not found:
        raise RuntimeError("the dashfloat command is not installed: run `make test`")
    return found


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A minimal environment with private XDG dirs, so no user config or history leaks in."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "EDITOR": "true",
    }
    (tmp / "home").mkdir(exist_ok=True)
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


class Term:
    """One dashfloat (or shell) process in a pty, with its screen emulated."""

    def __init__(self, argv: list[str], env: dict[str, str], *, cols: int = 80, rows: int = 24,
                 cwd: str | None = None, utf8: bool = True, modes: dict[int, int] | None = None,
                 answers: bool = False, read_rate: float | None = None):
        self.cols, self.rows = cols, rows
        self.screen = XTerm(cols, rows)
        # answers: the terminal answers a cursor-position question (DSR, ESC[6n) when it
        # processes it, as real terminals do (pyte computes the answer; it is written to the
        # pty at once). read_rate: the terminal reads at most this many bytes a second (a
        # slow link: the pty's buffer fills and pushes back on the writer)
        self.answers = 0
        if answers:
            self.screen.write_process_input = self._answer
        self.read_rate = read_rate
        self._bucket, self._bucket_at = 0.0, time.monotonic()  # bytes the rate allows now
        # DEC private modes this terminal reports to a DECRQM query (ESC[?N$p), e.g.
        # {2026: 2}: synchronized output supported and reset; unlisted modes get no answer
        self.modes = dict(modes or {})
        self.stream = pyte.ByteStream(self.screen)
        self.stream.use_utf8 = utf8
        self.raw = bytearray()
        self.env = env
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(rows, cols), echo=False, cwd=cwd)
        self.eof = False

    # ---- reading ----------------------------------------------------------------------
    def pump(self, timeout: float = 0.05) -> int:
        if self.eof:
            return 0
        size = 65536
        if self.read_rate:  # a token bucket: at most 50 ms of the rate at once
            now = time.monotonic()
            cap = max(256.0, self.read_rate * 0.05)
            self._bucket = min(cap, self._bucket + (now - self._bucket_at) * self.read_rate)
            self._bucket_at = now
            if self._bucket < 64:
                time.sleep(min(timeout, (64 - self._bucket) / self.read_rate))
                return 0
            size = int(self._bucket)
        try:
            data = self.child.read_nonblocking(size, timeout=timeout)
        except pexpect.TIMEOUT:
            return 0
        except pexpect.EOF:
            self.eof = True
            return 0
        if self.read_rate:
            self._bucket -= len(data)
        self.raw += data
        self.stream.feed(data)
        if self.modes and b"$p" in data:
            self._answer_queries(data)
        return len(data)

    def drain(self, quiet: float = 0.01) -> None:
        """Read on until nothing more comes within `quiet`: a frame is one write, but the
        pty hands it over in pieces, and a condition tested between two pieces sees the new
        frame's first rows over the old frame's last (a pager's title over a question that
        read "Apply?", which the test then answered while the app showed "Wait")."""
        while self.pump(timeout=quiet):
            pass

    def _answer(self, data: str) -> None:
        self.answers += 1
        os.write(self.child.child_fd, data.encode())  # not send(): it sleeps 50 ms first

    def _answer_queries(self, data: bytes) -> None:
        import re

        for m in re.finditer(rb"\x1b\[\?(\d+)\$p", data):
            mode = int(m.group(1))
            if mode in self.modes:
                self.child.send(f"\x1b[?{mode};{self.modes[mode]}$y")

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def dump(self) -> str:
        return "\n".join(f"{i:2}|{line}" for i, line in enumerate(self.screen.display))

    def wait_for(self, pred, timeout: float = 10.0, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while True:
            result = pred(self)
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.dump()}{self.log_tail()}")
            if self.eof:
                result = pred(self)
                if result:
                    return result
                raise AssertionError(f"process ended while waiting for {what}; screen:\n{self.dump()}")
            if self.pump():
                self.drain()

    def log_tail(self, lines: int = 15) -> str:
        """The end of this dashfloat's log (for a failure's report), if it has one."""
        state = self.env.get("XDG_STATE_HOME")
        if not state:
            return ""
        try:
            with open(os.path.join(state, "dashfloat", "dashfloat.log"), encoding="utf-8", errors="replace") as f:
                tail = f.readlines()[-lines:]
        except OSError:
            return ""
        return "\nlog:\n" + "".join(tail)

    def wait_text(self, text: str, timeout: float = 10.0) -> None:
        self.wait_for(lambda t: text in t.text, timeout, repr(text))

    def wait_gone(self, text: str, timeout: float = 10.0) -> None:
        self.wait_for(lambda t: text not in t.text, timeout, f"{text!r} to disappear")

    def status(self) -> str:
        """The status bar: the row just above the prompt (found by the phase word)."""
        for line in reversed(self.lines):
            if any(p in line for p in PHASE_WORDS):
                return line
        return ""

    def wait_status(self, word: str, timeout: float = 10.0) -> None:
        self.wait_for(lambda t: f" {word} " in t.status(), timeout, f"status {word!r}")

    def wait_quiet(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Until no output arrived for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() - last < quiet:
            if time.monotonic() > deadline:
                raise AssertionError("output never went quiet")
            if self.pump(timeout=0.05):
                last = time.monotonic()
            if self.eof:
                return

    # ---- writing ----------------------------------------------------------------------
    def send(self, data: str | bytes) -> None:
        self.child.send(data)

    def type(self, text: str) -> None:
        self.child.send(text)

    def resize(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.screen.resize(rows, cols)
        self.child.setwinsize(rows, cols)

    def wait_exit(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while not self.eof:
            if time.monotonic() > deadline:
                raise AssertionError(f"process did not exit; screen:\n{self.dump()}")
            self.pump(0.1)
        while self.child.isalive():  # the pty reached EOF: the exit status follows at once
            if time.monotonic() > deadline:
                raise AssertionError("the pty closed but the process did not exit")
            time.sleep(0.01)
        self.child.ptyproc.delayafterclose = 0.0
        self.child.close()
        if self.child.signalstatus is not None:
            return -self.child.signalstatus
        return self.child.exitstatus

    def left_alternate_screen(self) -> bool:
        return self.raw.rfind(b"\x1b[?1049l") > self.raw.rfind(b"\x1b[?1049h") >= 0

    def margins_reset(self) -> bool:
        """Scrolling margins (DECSTBM), if ever set, were reset to the full screen after."""
        import re

        sets = [m.end() for m in re.finditer(rb"\x1b\[\d+;\d+r", self.raw)]
        return not sets or self.raw.rfind(b"\x1b[r") > sets[-1]

    def bracketed_paste_off(self) -> bool:
        """Bracketed paste was turned on, and turned off again after the last time."""
        return self.raw.rfind(b"\x1b[?2004l") > self.raw.rfind(b"\x1b[?2004h") >= 0

    # ---- screen regions -----------------------------------------------------------------
    @property
    def flat(self) -> str:
        """The whole screen as one line, runs of whitespace collapsed: a message that the
        app word-wrapped over several rows is found again as one string."""
        return " ".join(" ".join(self.lines).split())

    def wait_flat(self, text: str, timeout: float = 10.0) -> None:
        self.wait_for(lambda t: text in t.flat, timeout, f"{text!r} (wrapped)")

    def status_row(self) -> int | None:
        for i in range(len(self.lines) - 1, -1, -1):
            if any(p in self.lines[i] for p in PHASE_WORDS):
                return i
        return None

    def transcript(self) -> list[str]:
        """The rows above the status bar."""
        row = self.status_row()
        return self.lines[: row if row is not None else len(self.lines)]

    def prompt_lines(self) -> list[str]:
        """The rows below the status bar (the prompt editor)."""
        row = self.status_row()
        return [] if row is None else self.lines[row + 1 :]

    def close(self) -> None:
        """End the child (SIGHUP, as when a terminal closes; SIGKILL if it lingers) and
        close the pty. Polls instead of pexpect's fixed 0.1 s sleeps."""
        child = self.child
        try:
            if child.isalive():
                child.kill(signal.SIGHUP)
                deadline = time.monotonic() + 3.0
                while child.isalive() and time.monotonic() < deadline:
                    self.pump(0.02)
        except Exception:
            pass
        try:
            child.ptyproc.delayafterclose = 0.0
            child.close(force=True)
        except Exception:
            pass


def child_pids(ppid: int) -> list[int]:
    """The pids whose parent is `ppid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: split after the last ")"
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            out.append(int(entry))
    return out
