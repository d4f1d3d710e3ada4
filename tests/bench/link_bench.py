"""The slow-and-far-link figures of issue 15 §2: DashFloat through a real ssh link.

    .venv/bin/python tests/bench/link_bench.py [--runs 3]     (or: make bench, --link-only)

Each run starts DashFloat over `ssh -tt` to a throwaway sshd on 127.0.0.1 (tests/sshd.py),
through a TCP proxy that plays the link (tests/linkproxy.py: one-way delay, a bandwidth cap
with at most 16 KiB in flight per direction, byte counts each way). The terminal is pyte
(tests/e2e/harness.py), which answers the cursor-position question as real terminals do;
the scripted server (tests/fakeserver.py) runs in this process. 80x24, TERM=xterm-256color.
Every figure is measured twice per run: with the frame clock (ui/frameclock.py) and with
DASHFLOAT_NO_FRAME_CLOCK=1 (frames as fast as they come: the code before the clock).

  32 kbit/s  PgUp held for 1 s (40 presses, 25 ms apart) after a long answer: last key ->
             the last byte of the screen's changes (the screen settled; goal <= 1.0 s);
             Esc 2 s into a 200 tok/s stream -> " idle " on screen (goal <= 1.0 s).
  256 kbit/s, 100 ms round trip: the 2,000-token answer at 200 tokens/s: the server's last
             token -> the last token on screen (goal <= 0.5 s).
  100 ms round trip (no cap): a key typed on an idle prompt -> the key on screen, 20 keys
             0.2-0.3 s apart, median (goal <= round trip + 10 ms), beside the same keys
             echoed by `cat` in a raw remote pty: the floor of the link and ssh.
  unlimited: bytes on the ssh link (server -> client) per byte of the 200 tok/s answer's
             content, from Enter to the end (goal <= 1.8), beside `cat` of the same text
             over the same link (its bytes less those of an empty session).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import MARKER, Pacer, answer_pieces, dashfloat_bin  # noqa: E402

from tests import sshd as sshd_mod  # noqa: E402
from tests.e2e.harness import Term  # noqa: E402
from tests.fakeserver import ScriptedServer, markdown_answer, sse_reply  # noqa: E402
from tests.linkproxy import LinkProxy  # noqa: E402

TOKENS, RATE = 2000, 200.0
PIECES = answer_pieces(TOKENS)
CONTENT = "".join(PIECES)
CONTENT_BYTES = len(CONTENT.encode())
USAGE = {"prompt_tokens": 20, "completion_tokens": TOKENS, "total_tokens": TOKENS + 20}
KBIT32, KBIT256 = 4000, 32000  # bytes per second
COLS, ROWS = 80, 24


class MeasureError(Exception):
    pass


class Remote:
    """DashFloat over ssh through a LinkProxy, in a pyte terminal that answers questions."""

    def __init__(self, sshd, server, link: LinkProxy, base: Path, clock: bool):
        self.base = base
        home = base / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(base / "config"), "XDG_STATE_HOME": str(base / "state"),
               "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
        if not clock:
            env["DASHFLOAT_NO_FRAME_CLOCK"] = "1"
        argv = [dashfloat_bin(), "--base-url", server.url, "--model", "bench-model"]
        command = sshd_mod.remote_command(argv, env=env, cwd=str(base))
        client_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                      "TERM": "xterm-256color", "LANG": "C.UTF-8"}
        self.link = link
        self.t = Term(sshd.ssh_argv(command, port=link.port), client_env, cols=COLS, rows=ROWS, answers=True)
        self.t.child.delaybeforesend = None
        self.t.wait_for(lambda t: " idle " in t.status() and " bench-model " in t.status()
                        and b"\x1b[?2004h" in t.raw, 30, "the first frame over ssh")
        self.t.wait_quiet(0.3)

    def close(self) -> None:
        self.t.close()

    def pump_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.t.pump(0.005)

    def wait_for(self, pred, timeout: float, what: str) -> float:
        """Pump until pred holds; the time of the read that made it hold."""
        self.t.wait_for(pred, timeout, what)
        return time.monotonic()


def _session(ctx, clock: bool, *, delay: float = 0.0, rate: float | None = None) -> Remote:
    link = LinkProxy(ctx["sshd"].port, delay=delay, rate=rate)
    base = Path(tempfile.mkdtemp(prefix="dashfloat-link-", dir=ctx["tmp"]))
    try:
        r = Remote(ctx["sshd"], ctx["server"], link, base, clock)
    except BaseException:
        link.close()
        raise
    return r


def _end(r: Remote) -> None:
    r.close()
    r.link.close()


def case_pgup(ctx, clock: bool) -> float:
    """32 kbit/s: a long answer, then PgUp held 1 s; last key -> the screen settled."""
    r = _session(ctx, clock)
    try:
        ctx["server"].push(sse_reply(markdown_answer(3000), model="bench-model"))
        r.t.type("go\r")
        r.wait_for(lambda t: " idle " in t.status() and "tok" in t.status(), 60, "the long answer")
        r.t.wait_quiet(0.3)
        r.link.set(rate=KBIT32)
        for _ in range(40):
            r.t.send("\x1b[5~")
            r.pump_for(0.025)
        last_key = last = time.monotonic()
        while time.monotonic() - last < 2.0:  # the screen settled: 2 s without a byte
            if r.t.pump(0.02):
                last = time.monotonic()
            if time.monotonic() - last_key > 60:
                raise MeasureError("the screen never settled after PgUp")
        if " line " not in r.t.status():
            raise MeasureError("PgUp did not scroll: " + r.t.status())
        return last - last_key
    finally:
        _end(r)


def case_esc(ctx, clock: bool) -> float:
    """32 kbit/s: Esc 2 s into a 200 tok/s stream -> idle on screen."""
    r = _session(ctx, clock, rate=KBIT32)
    try:
        pacer = Pacer(ctx["server"], PIECES, RATE, usage=USAGE, model="bench-model")
        ctx["server"].push(pacer.reply)
        pacer.start()
        try:
            r.t.type("explain\r")
            r.wait_for(lambda t: " streaming " in t.status(), 30, "the stream")
            r.pump_for(2.0)
            sent = time.monotonic()
            r.t.send("\x1b")
            seen = r.wait_for(lambda t: " idle " in t.status(), 60, "idle after Esc")
        finally:
            pacer.stop()
        return seen - sent
    finally:
        _end(r)


def case_stream_far(ctx, clock: bool) -> float:
    """256 kbit/s, 100 ms round trip: the server's last token -> on screen."""
    r = _session(ctx, clock, delay=0.05, rate=KBIT256)
    try:
        pacer = Pacer(ctx["server"], PIECES, RATE, usage=USAGE, model="bench-model")
        ctx["server"].push(pacer.reply)
        pacer.start()
        try:
            r.t.type("explain\r")
            seen = r.wait_for(lambda t: MARKER in t.text, 120, "the last token")
        finally:
            pacer.stop()
        if pacer.t0 is None:
            raise MeasureError("the stream never started")
        last_token = pacer.t0 + len(PIECES) / RATE + pacer.lag
        return seen - last_token
    finally:
        _end(r)


def _plain_env(ctx) -> dict[str, str]:
    """The ssh client's environment for a plain program at the other end (the floors)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": ctx["tmp"], "TERM": "xterm-256color",
            "LANG": "C.UTF-8"}


def _echo_times(t: Term, keys: int, typed: str, seen) -> list[float]:
    """Type `keys` keys 0.2-0.3 s apart after `typed`; each one's time until `seen(t, typed)`."""
    rnd = random.Random(1)
    times = []
    for i in range(keys):
        typed += "abcdefghijklmnopqrstuvwxyz"[i % 26]
        sent = time.monotonic()
        t.send(typed[-1])
        t.wait_for(lambda t, want=typed: seen(t, want), 10, f"key {i}")
        times.append(time.monotonic() - sent)
        end = time.monotonic() + rnd.uniform(0.2, 0.3)
        while time.monotonic() < end:
            t.pump(0.005)
    return times


def case_keys(ctx, clock: bool, keys: int = 20) -> float:
    """100 ms round trip: key -> on screen, median of `keys` keys on an idle prompt."""
    r = _session(ctx, clock, delay=0.05)
    try:
        return statistics.median(_echo_times(r.t, keys, "", lambda t, want: t.lines[-1].rstrip().endswith(want)))
    finally:
        _end(r)


def case_keys_floor(ctx, keys: int = 20) -> float:
    """The same keys over the same link to `cat` in a raw remote pty (`stty raw -echo`: each
    key read and written back at once, the least a full-screen program can do): the floor
    of key -> on screen for any program at the end of this ssh link."""
    with LinkProxy(ctx["sshd"].port, delay=0.05) as link:
        t = Term(ctx["sshd"].ssh_argv("stty raw -echo && exec cat", port=link.port), _plain_env(ctx),
                 cols=COLS, rows=ROWS)
        t.child.delaybeforesend = None
        try:
            t.send("-")  # the session is up once its echo is back (not counted)
            t.wait_for(lambda t: "-" in t.text, 30, "cat's first echo over ssh")
            return statistics.median(_echo_times(t, keys, "-", lambda t, want: want in t.text))
        finally:
            t.close()


def case_bytes(ctx, clock: bool) -> tuple[float, float]:
    """Unlimited link: (down, up) link bytes per content byte of the 200 tok/s answer."""
    r = _session(ctx, clock)
    try:
        pacer = Pacer(ctx["server"], PIECES, RATE, usage=USAGE, model="bench-model")
        ctx["server"].push(pacer.reply)
        pacer.start()
        down0, up0, raw0 = r.link.down, r.link.up, len(r.t.raw)
        try:
            r.t.type("explain\r")
            r.wait_for(lambda t: MARKER in t.text and " idle " in t.status(), 120, "the answer, then idle")
        finally:
            pacer.stop()
        r.t.wait_quiet(0.5)
        r.terminal_bytes = len(r.t.raw) - raw0
        ctx["last_terminal_bytes"] = r.terminal_bytes / CONTENT_BYTES
        return (r.link.down - down0) / CONTENT_BYTES, (r.link.up - up0) / CONTENT_BYTES
    finally:
        _end(r)


def case_cat(ctx) -> float:
    """`cat` of the same text over the same (unlimited) link: link bytes per content byte,
    less the bytes of an empty session (the ssh handshake and teardown)."""
    path = Path(ctx["tmp"]) / "answer.txt"
    path.write_text(CONTENT)

    def session_bytes(command: str) -> int:
        with LinkProxy(ctx["sshd"].port) as link:
            t = Term(ctx["sshd"].ssh_argv(command, port=link.port), _plain_env(ctx), cols=COLS, rows=ROWS)
            try:
                t.wait_exit(30)
            finally:
                t.close()
            deadline = time.monotonic() + 2
            while link.connections and time.monotonic() < deadline and link._conns:
                time.sleep(0.01)
            return link.down

    empty = session_bytes("true")
    cat = session_bytes(f"cat {path}")
    return (cat - empty) / CONTENT_BYTES


# (key, label, format, goal text, predicate)
ROWS_TABLE = [
    ("pgup", "32 kbit/s: PgUp held 1 s, last key -> settled (s)", "{:.2f}", "<= 1.0", lambda v: v <= 1.0),
    ("esc", "32 kbit/s: Esc in a stream -> idle shown (s)", "{:.2f}", "<= 1.0", lambda v: v <= 1.0),
    ("far", "256 kbit/s 100 ms: last token -> on screen (s)", "{:.2f}", "<= 0.5", lambda v: v <= 0.5),
    ("keys", "100 ms round trip: key -> on screen (s)", "{:.3f}", "<= 0.110", lambda v: v <= 0.110),
    ("keys_floor", "  the floor: cat in a raw pty, same link", "{:.3f}", "-", None),
    ("down", "unlimited: link bytes / content byte (down)", "{:.2f}", "<= 1.8", lambda v: v <= 1.8),
    ("up", "  client -> server bytes / content byte", "{:.2f}", "-", None),
    ("cat", "  cat of the same text, same link", "{:.2f}", "-", None),
]


def run(runs: int = 3, out=print) -> list[tuple]:
    """The table rows: (label, with the clock, without it, goal, verdict)."""
    reason = sshd_mod.missing()
    if reason:
        raise MeasureError(reason)
    results: dict[str, dict[bool, list]] = {k: {True: [], False: []} for k, *_ in ROWS_TABLE}
    with tempfile.TemporaryDirectory(prefix="dashfloat-linkbench-") as tmp, \
            ScriptedServer(models=["bench-model"]) as server, sshd_mod.Sshd(Path(tmp) / "sshd") as sshd:
        ctx = {"sshd": sshd, "server": server, "tmp": tmp}
        _end(_session(ctx, True))  # warm-up: page cache, bytecode, sshd; not counted
        for i in range(runs):
            for clock in (True, False):
                results["pgup"][clock].append(case_pgup(ctx, clock))
                results["esc"][clock].append(case_esc(ctx, clock))
                results["far"][clock].append(case_stream_far(ctx, clock))
                results["keys"][clock].append(case_keys(ctx, clock))
                down, up = case_bytes(ctx, clock)
                results["down"][clock].append(down)
                results["up"][clock].append(up)
            results["cat"][True].append(case_cat(ctx))
            results["keys_floor"][True].append(case_keys_floor(ctx))
            out(f"  link run {i + 1}/{runs} done", flush=True)
    rows = []
    for key, label, fmt, goal, ok in ROWS_TABLE:
        on = statistics.median(results[key][True]) if results[key][True] else None
        off = statistics.median(results[key][False]) if results[key][False] else None
        verdict = "-" if ok is None or on is None else ("ok" if ok(on) else "MISSED")
        rows.append((label, fmt.format(on) if on is not None else "-", fmt.format(off) if off is not None else "-",
                     goal, verdict))
    rows.append(("(every run)", "", "", "", ""))
    for key, *_ in ROWS_TABLE:
        for clock in (True, False):
            if results[key][clock]:
                rows.append((f"  {key} {'clock' if clock else 'no clock'}",
                             " ".join(f"{v:.3f}" for v in results[key][clock]), "", "", ""))
    return rows


def print_rows(rows: list[tuple]) -> int:
    head = ("figure (median)", "clocked", "no clock", "goal", "verdict")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(5)]
    for r in [head, *rows]:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return sum(1 for r in rows if r[4] == "MISSED")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        rows = run(args.runs)
    except MeasureError as exc:
        print(f"link figures not measured: {exc}")
        return 1
    missed = print_rows(rows)
    print(f"link figures missing their goal: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
