"""Helpers for `run_bench.py`: the answers, /proc readings, and a timing pty terminal.

Nothing here is collected by pytest (no test_*.py names). Linux only: CPU, context
switches and peak RSS come from /proc/<pid>.
"""

from __future__ import annotations

import os
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.e2e.harness import Term, clean_env, dashfloat_bin  # noqa: E402
from tests.fakeserver import markdown_answer, sse_reply  # noqa: E402

__all__ = [
    "BenchTerm",
    "MeasureError",
    "Pacer",
    "ProcSample",
    "ROOT",
    "ThreadTracker",
    "vm_kib",
    "settled_rss_mib",
    "answer_pieces",
    "clean_env",
    "dashfloat_bin",
    "fill_pieces",
    "MARKER",
    "FILL_MARKER",
]

MARKER = "Zq9EndOfAnswer"  # the last token of the benchmark answer: unique on any screen
FILL_MARKER = "Fillq7Complete"
CLK_TCK = os.sysconf("SC_CLK_TCK")

_FENCE = re.compile(r"^\s*(```|~~~)", re.M)

_FILLER = (
    " That is the whole loader: read the file, merge the environment, apply the flags,"
    " and validate once before the first request so a mistake shows up at start-up"
    " rather than in the middle of a long answer about something else entirely."
).split(" ")


def answer_pieces(tokens: int = 2000, marker: str = MARKER) -> list[str]:
    """Exactly `tokens` pieces of realistic Markdown (tests/fakeserver.markdown_answer:
    headings, bold and code spans, bullet and numbered lists, python/bash/json fences, a
    table, a quote), cut at the last block boundary outside a fence, topped up with a
    closing prose paragraph, and ending with a unique marker word as the last token."""
    base = markdown_answer(tokens)
    cut = 0
    text = ""
    for i, piece in enumerate(base[: tokens - 1]):
        text += piece
        if text.endswith("\n\n") and len(_FENCE.findall(text)) % 2 == 0:
            cut = i + 1
    pieces = list(base[:cut])
    filler = [" " + w for w in _FILLER if w]
    k = 0
    while len(pieces) < tokens - 1:
        pieces.append(filler[k % len(filler)])
        k += 1
    pieces.append(" " + marker)
    assert len(pieces) == tokens
    joined = "".join(pieces)
    assert joined.count(marker) == 1 and len(_FENCE.findall(joined)) % 2 == 0
    return pieces


def fill_pieces(lines: int = 50_000, per_piece: int = 1000) -> list[str]:
    """An answer of `lines` short lines (one fenced text block, like a long log), sent in
    big pieces, followed by a one-line paragraph with FILL_MARKER."""
    rows = [f"{i:06d} ok\n" for i in range(lines)]
    out = ["```text\n"]
    out += ["".join(rows[i : i + per_piece]) for i in range(0, lines, per_piece)]
    out += ["```\n\n", f"{FILL_MARKER}: {lines} lines."]
    return out


class Pacer:
    """A streamed reply whose content pieces leave on an absolute schedule: piece k
    (1-based) at t0 + k/rate, t0 being the moment the request reached the server.

    The fake server's own `rate` sleeps a fixed interval after each chunk, so its
    overheads add up (about 11.5 s instead of 10 s for 2,000 pieces at 200/s); here a
    thread of ours releases each piece through the Reply's `waits` events instead."""

    def __init__(self, server, pieces: list[str], rate: float, **kw):
        self.server = server
        self.rate = rate
        self.events = [threading.Event() for _ in pieces]
        # chunk 0 is the role delta; chunk k is content piece k
        self.reply = sse_reply(pieces, waits={k + 1: ev for k, ev in enumerate(self.events)}, **kw)
        self.stopped = threading.Event()
        self.t0: float | None = None
        self.lag = 0.0  # the most a piece left behind its schedule (s)

    def start(self) -> None:
        """Call before the request is sent: pacing starts when it arrives."""
        n = len(self.server.requests)
        threading.Thread(target=self._run, args=(n + 1,), name="pacer", daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()
        for ev in self.events:
            ev.set()

    def _run(self, n: int) -> None:
        try:
            self.server.wait_requests(n, timeout=60)
        except TimeoutError:
            return
        self.t0 = t0 = time.monotonic()
        for k, ev in enumerate(self.events, 1):
            due = t0 + k / self.rate
            delay = due - time.monotonic()
            if delay > 0 and self.stopped.wait(delay):
                return
            self.lag = max(self.lag, time.monotonic() - due)
            ev.set()


# ---- /proc readings --------------------------------------------------------------------


def _stat_times(path: str) -> tuple[int, int]:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (clock ticks)


def schedstat_ns(pid: int, tid: int | None = None) -> int:
    """A thread's CPU time in nanoseconds (/proc/PID/task/TID/schedstat, first field): exact,
    where /proc/PID/stat counts 10-ms ticks."""
    with open(f"/proc/{pid}/task/{tid or pid}/schedstat") as f:
        return int(f.read().split()[0])


def _ctxt(path: str) -> int:
    n = 0
    with open(path) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                n += int(line.split()[1])
    return n


def vm_kib(pid: int, key: str = "VmHWM") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


def settled_rss_mib(pid: int, step: float = 0.3, timeout: float = 10.0) -> float:
    """VmRSS (MiB) once it stopped moving (three readings `step` apart within 64 KiB):
    the work start-up leaves for after the first frame (the agent thread, warming the
    Markdown imports) is counted whether or not it was done 0.5 s after that frame."""
    readings = [vm_kib(pid, "VmRSS")]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(step)
        readings.append(vm_kib(pid, "VmRSS"))
        if len(readings) >= 3 and max(readings[-3:]) - min(readings[-3:]) <= 64:
            break
    return readings[-1] / 1024


@dataclass
class ProcSample:
    """One snapshot of a process: CPU (all threads, dead ones included), the main
    thread's CPU, and the context switches of every live thread. `cpu` and `tcpu` are in
    clock ticks (10 ms: a difference of two is off by up to 20 ms, a seventh of a 10-s
    stream's CPU); `tns` is each live thread's CPU from schedstat, in nanoseconds, exact
    but blind to threads that have ended."""

    t: float
    cpu: float
    cpu_main: float
    ctxt: dict[int, int] = field(default_factory=dict)

    tcpu: dict[int, float] = field(default_factory=dict)  # per thread (live ones)
    tns: dict[int, int] = field(default_factory=dict)  # per thread (live ones), schedstat ns

    @property
    def live_cpu(self) -> float:
        """The CPU seconds of the live threads, exact (schedstat)."""
        return sum(self.tns.values()) / 1e9

    @classmethod
    def take(cls, pid: int) -> ProcSample:
        t = time.monotonic()
        u, s = _stat_times(f"/proc/{pid}/stat")
        mu, ms = _stat_times(f"/proc/{pid}/task/{pid}/stat")
        ctxt, tcpu, tns = {}, {}, {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                ctxt[int(tid)] = _ctxt(f"/proc/{pid}/task/{tid}/status")
                tu, ts = _stat_times(f"/proc/{pid}/task/{tid}/stat")
                tcpu[int(tid)] = (tu + ts) / CLK_TCK
                tns[int(tid)] = schedstat_ns(pid, int(tid))
            except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
                pass  # a thread that just ended
        return cls(t, (u + s) / CLK_TCK, (mu + ms) / CLK_TCK, ctxt, tcpu, tns)

    def wakeups_since(self, earlier: ProcSample) -> int:
        """Context switches since `earlier`, over threads alive at the end (a thread
        born in between counts from zero; one that died is not seen: none do at idle)."""
        return sum(n - earlier.ctxt.get(tid, 0) for tid, n in self.ctxt.items())


class ThreadTracker:
    """Per-thread CPU and context switches over an interval, sampled every 0.2 s so a
    thread that ends before the interval does (the streamer) is still counted, up to
    its last sample (`exact`, `ROLE_exact`: the same from schedstat, in nanoseconds). Roles:
    the main (UI) thread; threads alive at the start (the agent); threads born during the
    interval (the HTTP streamer, the history writer)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.first = ProcSample.take(pid)
        self.last_cpu: dict[int, float] = dict(self.first.tcpu)
        self.last_ns: dict[int, int] = dict(self.first.tns)
        self.last_ctxt: dict[int, int] = dict(self.first.ctxt)
        self._t = self.first.t

    def poll(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._t < 0.2:
            return
        try:
            s = ProcSample.take(self.pid)
        except (FileNotFoundError, ProcessLookupError):
            return
        self._t = s.t
        self.last_cpu.update(s.tcpu)
        self.last_ns.update(s.tns)
        self.last_ctxt.update(s.ctxt)

    def _role(self, tid: int) -> str:
        return "main" if tid == self.pid else "agent" if tid in self.first.ctxt else "new"

    def report(self) -> dict:
        self.poll(force=True)
        f = self.first
        out = {"main": 0.0, "agent": 0.0, "new": 0.0, "main_ctxt": 0, "all_ctxt": 0, "exact": 0.0}
        for tid, c in self.last_cpu.items():
            out[self._role(tid)] += c - f.tcpu.get(tid, 0.0)
        # exact: every thread's schedstat from its first sample (0 for one born since) to
        # its last; a thread that ended loses what it used after its last sample (0.2 s
        # apart: the streamer of a 200 tok/s stream uses ~5 ms a second)
        for tid, n in self.last_ns.items():
            d = (n - f.tns.get(tid, 0)) / 1e9
            key = self._role(tid) + "_exact"
            out[key] = out.get(key, 0.0) + d
            out["exact"] += d
        for tid, n in self.last_ctxt.items():
            d = n - f.ctxt.get(tid, 0)
            out["all_ctxt"] += d
            if tid == self.pid:
                out["main_ctxt"] += d
        return out


# ---- the terminal ----------------------------------------------------------------------


class BenchTerm(Term):
    """A Term that counts the bytes read from the pty, timestamps every read, and can
    feed pyte lazily (so a burst is not slowed by the emulator sharing our GIL with the
    server thread).

    A thread of its own reads the pty and stamps each read with the moment it returned,
    so a read is not stamped late while this thread feeds pyte the last one (a frame of
    a huge answer takes pyte 5-10 ms: a time measured from its end would be the bench's).
    run_bench sets a 0.5 ms switch interval, so the stamp waits at most that for the GIL.

    `wait_screen(pred)` returns the monotonic time of the read that brought the screen
    state that first satisfied `pred`: the moment the bytes reached the terminal, not the
    moment pyte finished parsing them.
    """

    def __init__(self, argv, env, *, cols, rows):
        self.t_exec = time.monotonic()
        super().__init__(argv, env, cols=cols, rows=rows)
        # pexpect sleeps delaybeforesend (50 ms) before every send: it would land inside
        # every time measured from a keystroke
        self.child.delaybeforesend = None
        self.pid = self.child.pid
        self.nbytes = 0
        self.t_last_read = self.t_exec
        self.pending = bytearray()
        self._reads: queue.SimpleQueue = queue.SimpleQueue()  # (time, bytes); b"" at the end
        # the reader has its own descriptor: pexpect's may be closed (and its number reused)
        # while the reader still waits in read()
        fd = os.dup(self.child.child_fd)
        threading.Thread(target=self._reader, args=(fd,), name="bench-pty-reader", daemon=True).start()

    def _reader(self, fd: int) -> None:
        try:
            while True:
                try:
                    data = os.read(fd, 1 << 20)
                except OSError:  # EIO: the pty's other side is closed
                    data = b""
                self._reads.put((time.monotonic(), data))
                if not data:
                    return
        finally:
            os.close(fd)

    def read(self, timeout: float) -> int:
        """One read of the reader thread's (waiting up to `timeout` for it): its bytes."""
        if self.eof:
            return 0
        try:
            t, data = self._reads.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return 0
        if not data:
            self.eof = True
            return 0
        self.t_last_read = t
        self.nbytes += len(data)
        self.raw += data
        self.pending += data
        return len(data)

    def sync(self) -> None:
        if self.pending:
            data = bytes(self.pending)
            self.pending.clear()
            self.stream.feed(data)

    def pump(self, timeout: float = 0.05) -> int:  # the harness's wait_* use this
        n = self.read(timeout)
        self.sync()
        return n

    def wait_screen(self, pred, timeout: float = 30.0, what: str = "condition",
                    raw_hint: bytes | None = None, tick=None, fail=None) -> float:
        """Pump until pred(self) holds on the emulated screen; return the time of the
        last read before it held. With raw_hint, pyte is fed only when the hint shows up
        in the raw bytes, when output pauses for 10 ms, or every 512 KiB."""
        deadline = time.monotonic() + timeout
        self.sync()
        if pred(self):
            return self.t_last_read
        scan_from = len(self.raw)
        while True:
            n = self.read(0.01 if raw_hint else 0.02)
            if tick is not None:
                tick()
            if raw_hint is None:
                check = n > 0
            elif n:
                start = max(0, scan_from - len(raw_hint))
                hit = self.raw.find(raw_hint, start) >= 0
                scan_from = len(self.raw)
                check = hit or len(self.pending) > (512 << 10)
            else:
                check = bool(self.pending)
            if check:
                t = self.t_last_read
                self.sync()
                if pred(self):
                    return t
                if fail is not None and fail(self):
                    raise MeasureError(f"gave up waiting for {what}; screen:\n{self.dump()}")
            if self.eof:
                self.sync()
                if pred(self):
                    return self.t_last_read
                raise MeasureError(f"dashfloat ended while waiting for {what}; screen:\n{self.dump()}")
            if time.monotonic() > deadline:
                self.sync()
                raise MeasureError(f"timed out waiting for {what}; screen:\n{self.dump()}")

    def quiet(self, quiet: float = 0.3, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() - last < quiet:
            if time.monotonic() > deadline:
                raise MeasureError("the output never went quiet")
            if self.read(0.05):
                last = time.monotonic()
            if self.eof:
                break
        self.sync()

    # screen predicates
    def status_has(self, word: str) -> bool:
        return f" {word} " in self.status()

    def prompt_row(self) -> str:
        lines = self.lines
        for i in range(len(lines) - 1, -1, -1):
            if any(p in lines[i] for p in (" idle ", " waiting ", " streaming ", " agent down ")):
                return lines[i + 1] if i + 1 < len(lines) else ""
        return ""

    def quit(self, timeout: float = 10.0) -> int | None:
        """Ctrl-D on an empty prompt (a clean exit, so a cProfile run writes its file)."""
        try:
            self.send("\x15")  # Ctrl-U: empty the prompt (the cursor is at its end)
            self.send("\x04")
            return self.wait_exit(timeout)
        except AssertionError:
            self.close()
            return None


class MeasureError(RuntimeError):
    """A figure could not be measured (timeout, crash)."""
