"""DashFloat performance figures, in one run (`make bench`, options via BENCH_ARGS).

Spawns the installed `dashfloat` in a pty (120x40 and 80x24) against the scripted
OpenAI-compatible server (tests/fakeserver.py, in a thread of this process), reads the
screen through pyte, and prints medians over repeated runs as a table against the targets
of the performance issue. It never fails on a missed target (exit 0); it exits 1 when a
figure could not be measured (a crash, a timeout).

    .venv/bin/python tests/bench/run_bench.py [--quick] [--sizes 120x40,80x24]
        [--runs 5] [--stream-runs 3] [--fill-runs 2] [--diag-runs 1] [--idle 3]
        [--json FILE] [--profile DIR]

What is measured (medians over the runs; CPU, context switches and peak RSS from /proc):
  start-up      exec -> the status bar's " idle " on screen (first full frame); exec ->
                an "x" typed right after that frame echoed on the prompt row.
  burst         the 2,000-token answer as fast as the server sends it: Enter -> the last
                token (a unique word) on the pyte screen, timed at the pty read that
                brought it; then the same again in the same process (nothing left to load).
  stream        the answer at 200 tokens/s, one SSE event per token, paced on an absolute
                schedule: CPU (utime+stime, all threads) and pty bytes from Enter to the
                idle status + 0.3 s of silence; bytes / content byte = those bytes over
                the UTF-8 size of the answer's text. Per-thread CPU: the main (UI) thread,
                the agent thread, threads born during the turn (the HTTP streamer).
  diagnostic    the same tokens 16 to an event (12.5 events/s): what per-event wake-ups cost.
  50,000 lines  an answer of 50,000 short lines (a fenced block sent in 1,000-line pieces)
                first, then the stream: CPU per token against a fresh process.
  idle          3 s after start-up, after an answer, with 50,000 lines: pty bytes/s and
                context switches/s of every thread (voluntary + involuntary).
  peak RSS      VmHWM after the stream (and after 50,000 lines + the stream).
  sessions      in-process (tests/bench/sessions_bench.py): journal bytes per turn of 12 real
                turns, resume of a 10 MB and a 100 MB journal, listing 1,000 sessions.
                --sessions-only runs just this section; --no-sessions leaves it out.
  search        in-process (tests/bench/search_bench.py): search_workspace over 10,000 files
                with each backend (ripgrep, git grep, the Python walker; < 1 s each): a rare
                literal, a common one (the bounds and the counts), a regular expression.
                --search-only runs just this section; --no-search leaves it out.
  huge          tests/bench/huge_bench.py (issue 16): answers of 1 MB on one line, 1 MB of
                words, 50,000 lines, 10,000 lines of code, sent as fast as the server can:
                shown complete after the last byte, key echo during the stream, Esc to
                idle (3 s into the same answer trickled at 4,000 deltas/s), RSS, beside
                the floor client (tests/bench/floor_client.py). --huge-only runs just this
                section (--huge-runs N, --huge-mb M, --huge-cases a,b); --no-huge leaves
                it out.
  headless      tests/bench/headless_bench.py: exec -> the first request of `dashfloat -p`
                (fresh processes, no tty), the CPU used by then, the whole run, and
                `dashfloat --version` for the floor. --headless-only runs just this
                section; --no-headless leaves it out.
  pyz           tests/bench/pyz_bench.py: the size of dist/dashfloat.pyz, its build time, and
                exec -> first frame / -> app running from the pyz (bytecode cached, and a
                first start) beside the venv install. --pyz-only runs just this section;
                --no-pyz leaves it out.
  executable    tests/bench/exe_bench.py: the size of dist/dashfloat-<arch> (make exe) and the glibc
                it needs, exec -> first frame / -> app running / --version from it beside the
                pyz and the venv install. Only when dist/ holds one built from this tree (else
                one line says why). --exe-only runs just this section; --no-exe leaves it out.
  link          tests/bench/link_bench.py: through real ssh (tests/sshd.py) and a proxy that plays
                the link (tests/linkproxy.py), with the frame clock and without it: PgUp held
                and Esc in a stream at 32 kbit/s, the last token at 256 kbit/s and 100 ms, a
                key at 100 ms, link bytes per content byte beside `cat` (issue 15 §2).
                --link-only runs just this section; --no-link leaves it out.
  long day      tests/bench/longday_bench.py (issue 16 §2): 300 turns in one process, each with
                tool calls (reads run at once, a write or a command every 10th turn answered
                with y) and an answer of ~330 rows, so the transcript reaches ~100,000 lines;
                echo, PgUp and Enter -> first token (and the CPU of a turn, RSS) at turn 1,
                a quarter, half, three quarters and the last, against turn 1 (goal: within
                10%), and the last turn beside a fresh session's first, measured in
                alternation (the same load on both). --longday-only runs just this section (--longday-turns N, 300);
                --no-longday leaves it out.

--profile DIR runs the burst, the 200 tok/s stream (also 16 tokens per event) and the
50,000-line case once each at the first size under `python -m cProfile -o DIR/<case>.prof -m dashfloat ...` (still in
the pty) and prints the top functions of each profile instead of the table. cProfile sees
the main (UI) thread only; the table's "main thread" row says how much that is.

Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    FILL_MARKER,
    MARKER,
    ROOT,
    BenchTerm,
    MeasureError,
    Pacer,
    ProcSample,
    ThreadTracker,
    answer_pieces,
    clean_env,
    dashfloat_bin,
    fill_pieces,
    vm_kib,
)

from tests.fakeserver import ScriptedServer, sse_reply  # noqa: E402, I001

TOKENS = 2000
RATE = 200.0  # tokens per second for the paced stream
GROUP = 16  # tokens per SSE event in the diagnostic stream (12.5 events/s, one per UI tick)
FILL_LINES = 50_000
PROMPT = "Explain the configuration loader."
FILL_PROMPT = "Show me the whole log."
CUP = re.compile(rb"\x1b\[(\d+);(\d+)H")
NO_SCROLL_ENV = "DASHFLOAT_NO_SCROLL_REGIONS"

PIECES = answer_pieces(TOKENS)
MARKER2 = "Zq9SecondAnswer"
PIECES2 = answer_pieces(TOKENS, MARKER2)  # for a second answer in the same process
CONTENT_BYTES = len("".join(PIECES).encode())
USAGE = {"prompt_tokens": 20, "completion_tokens": TOKENS, "total_tokens": TOKENS + 20}


# ---- one dashfloat process -------------------------------------------------------------


class Session:
    """A dashfloat process in a pty with private XDG dirs, pointed at `server`."""

    def __init__(self, server: ScriptedServer, size: tuple[int, int], *, profile: Path | None = None,
                 env_extra: dict | None = None):
        cols, rows = size
        self.tmp = tempfile.TemporaryDirectory(prefix="dashfloat-bench-")
        env = clean_env(Path(self.tmp.name), **(env_extra or {}))
        # a window the 50,000-line answer fits in: no compaction (issue 10) before the
        # stream that follows it, whose request would take the scripted reply
        conf = Path(self.tmp.name) / "config" / "dashfloat" / "config.toml"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text("context_window = 10000000\n")
        args = ["--base-url", server.url, "--model", "bench-model"]
        if profile is not None:
            argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "dashfloat", *args]
        else:
            argv = [dashfloat_bin(), *args]
        self.server = server
        self.t = BenchTerm(argv, env, cols=cols, rows=rows)
        self.pid = self.t.pid

    # startup --------------------------------------------------------------------------
    def startup(self) -> dict:
        t = self.t
        t_frame = t.wait_screen(lambda s: s.status_has("idle"), 20, "the first full frame")
        cpu_at_frame = ProcSample.take(self.pid).live_cpu  # (schedstat: exact; no thread has ended yet)
        t.send("x")
        t_echo = t.wait_screen(lambda s: s.prompt_row().endswith("x"), 20, "the typed x on the prompt")
        t.send("\x7f")
        t.wait_screen(lambda s: not s.prompt_row().endswith("x"), 20, "the x to be erased")
        t.quiet(0.5)  # whatever start-up left for later is done by now
        t_key = time.monotonic()
        t.send("y")
        t_idle_echo = t.wait_screen(lambda s: s.prompt_row().endswith("y"), 20, "the typed y on the prompt")
        t.send("\x7f")
        t.wait_screen(lambda s: not s.prompt_row().endswith("y"), 20, "the y to be erased")
        t.quiet(0.3)
        return {"first_frame": t_frame - t.t_exec, "prompt_echo": t_echo - t.t_exec,
                "echo_idle": t_idle_echo - t_key, "startup_cpu": cpu_at_frame}

    # one turn ---------------------------------------------------------------------------
    def status_row_bytes(self, out: bytes) -> int:
        """Bytes written to the status row (the row above the prompt): from each cursor
        move to that row up to the next cursor move."""
        row = self.t.rows - 1
        moves = list(CUP.finditer(out))
        n = 0
        for i, m in enumerate(moves):
            if int(m.group(1)) == row:
                end = moves[i + 1].start() if i + 1 < len(moves) else len(out)
                n += end - m.start()
        return n

    def turn(self, prompt: str, reply, marker: str, timeout: float = 120.0) -> dict:
        """Type the prompt, press Enter, wait for `marker` on screen, then for the idle
        status and 0.3 s of silence. CPU and bytes are counted from Enter to that point."""
        t = self.t
        t.send(prompt)
        t.wait_screen(lambda s: prompt[-12:] in s.prompt_row(), 20, "the prompt text")
        t.quiet(0.2)
        self.server.push(reply)
        s0 = ProcSample.take(self.pid)
        threads = ThreadTracker(self.pid)
        b0 = len(t.raw)
        t.sync()
        scrolls0 = t.screen.region_scrolls  # line feeds on the bottom margin (tests/xterm.py)
        t_enter = time.monotonic()
        t.send("\r")
        t_mark = t.wait_screen(lambda s: marker in s.text, timeout, f"{marker} on screen",
                               raw_hint=marker.encode(), tick=threads.poll,
                               fail=lambda s: s.status_has("agent down"))
        t.wait_screen(lambda s: s.status_has("idle"), 30, "the idle status after the answer")
        t.quiet(0.3)
        s1 = ProcSample.take(self.pid)
        th = threads.report()
        t.sync()
        out = bytes(t.raw[b0:])
        return {
            "cpu_agent": th["agent"],
            "cpu_new_threads": th["new"],
            "main_wakeups": th["main_ctxt"],
            "all_wakeups": th["all_ctxt"],
            "enter_to_marker": t_mark - t_enter,
            "cpu": s1.cpu - s0.cpu,
            "cpu_main": s1.cpu_main - s0.cpu_main,
            # schedstat, exact (ticks are 10 ms; the streamer's last 0.2 s at most unseen)
            "cpu_exact": th["exact"],
            "cpu_main_exact": th.get("main_exact", 0.0),
            "cpu_agent_exact": th.get("agent_exact", 0.0),
            "cpu_new_exact": th.get("new_exact", 0.0),
            "bytes": len(out),
            "status_bytes": self.status_row_bytes(out),
            "scrolls": t.screen.region_scrolls - scrolls0,
        }

    def idle(self, seconds: float) -> dict:
        t = self.t
        t.quiet(0.5)
        s0 = ProcSample.take(self.pid)
        b0 = t.nbytes
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t.read(min(0.1, max(0.0, end - time.monotonic())))
            if t.eof:
                raise MeasureError("dashfloat ended while idle")
        s1 = ProcSample.take(self.pid)
        t.sync()
        dt = s1.t - s0.t
        return {
            "wakeups_per_s": s1.wakeups_since(s0) / dt,
            "bytes_per_s": (t.nbytes - b0) / dt,
            "cpu": s1.cpu - s0.cpu,
        }

    def peak_rss_mib(self) -> float:
        return vm_kib(self.pid, "VmHWM") / 1024

    def close(self) -> None:
        rc = self.t.quit()
        self.tmp.cleanup()
        if rc not in (0, None):
            raise MeasureError(f"dashfloat exited with status {rc}; screen:\n{self.t.dump()}")
        if rc is None:
            raise MeasureError("dashfloat did not quit on Ctrl-D")


def paced_reply(server, group: int = 1) -> Pacer:
    """The answer at RATE tokens/s: one SSE event per token, or (group > 1, a diagnostic)
    the same tokens `group` to an event at RATE/group events per second."""
    pieces = PIECES if group == 1 else ["".join(PIECES[i : i + group]) for i in range(0, len(PIECES), group)]
    return Pacer(server, pieces, RATE / group, usage=USAGE, model="bench-model")


class FloorServer:
    """The bench's own server as huge_bench.floor_stream_cpu drives it (push_paced,
    pacer_stop...), so that the floor client's paced stream runs on the same server as
    DashFloat's, run for run in turn. Measured apart (the floor's runs back to back, on a
    server process of its own) the floor client's CPU for this stream ranged from 0.065 to
    0.157 s; in turn with DashFloat's runs, on either server, it is 0.06-0.08 s."""

    def __init__(self, server: ScriptedServer):
        self.server = server
        self.url = server.url
        self.pacer: Pacer | None = None

    def n_requests(self) -> int:
        return len(self.server.requests)

    def wait_requests(self, n: int, timeout: float) -> None:
        self.server.wait_requests(n, timeout=timeout)

    def push_paced(self, pieces: list[str], rate: float, **kw) -> None:
        self.pacer = Pacer(self.server, pieces, rate, **kw)
        self.server.push(self.pacer.reply)
        self.pacer.start()

    def pacer_stop(self) -> None:
        if self.pacer is not None:
            self.pacer.stop()


def burst_reply():
    return sse_reply(PIECES, usage=USAGE, model="bench-model")


# ---- the cases -------------------------------------------------------------------------


def case_startup_burst(server, size, profile=None) -> dict:
    s = Session(server, size, profile=profile)
    try:
        r = s.startup()
        turn = s.turn(PROMPT, burst_reply(), MARKER)
        r.update(burst=turn["enter_to_marker"], burst_cpu=turn["cpu"],
                 burst_bytes_per_content=turn["bytes"] / CONTENT_BYTES)
        again = s.turn(PROMPT, sse_reply(PIECES2, usage=USAGE, model="bench-model"), MARKER2)  # the same answer again: nothing left to load
        r.update(burst2=again["enter_to_marker"], burst2_cpu=again["cpu"], rss_burst=s.peak_rss_mib())
    except BaseException:
        s.t.close()
        raise
    s.close()
    return r


def case_stream(server, size, idle_s, profile=None, env_extra=None, fill=False, group=1) -> dict:
    s = Session(server, size, profile=profile, env_extra=env_extra)
    r: dict = {}
    try:
        r.update(s.startup())
        if fill:
            f = s.turn(FILL_PROMPT, sse_reply(fill_pieces(FILL_LINES), model="bench-model"),
                       FILL_MARKER, timeout=300)
            r.update(fill_time=f["enter_to_marker"], fill_cpu=f["cpu"], rss_fill=s.peak_rss_mib())
            rows = s.t.status()
            r["fill_status"] = rows.strip()
        if idle_s:
            i = s.idle(idle_s)
            key = "idle_fill" if fill else "idle_start"
            r.update({f"{key}_wakeups": i["wakeups_per_s"], f"{key}_bytes": i["bytes_per_s"]})
        pacer = paced_reply(server, group)
        pacer.start()
        try:
            st = s.turn(PROMPT, pacer.reply, MARKER)
        finally:
            pacer.stop()
        r["pacer_lag"] = pacer.lag
        r.update(stream_time=st["enter_to_marker"], stream_cpu=st["cpu_exact"], stream_cpu_ticks=st["cpu"],
                 stream_cpu_main=st["cpu_main_exact"], stream_cpu_agent=st["cpu_agent_exact"],
                 stream_cpu_streamer=st["cpu_new_exact"],
                 stream_main_wakeups=st["main_wakeups"], stream_all_wakeups=st["all_wakeups"],
                 stream_bytes_per_content=st["bytes"] / CONTENT_BYTES, stream_scrolls=st["scrolls"],
                 stream_status_bytes_per_content=st["status_bytes"] / CONTENT_BYTES,
                 cpu_per_token_ms=st["cpu_exact"] / TOKENS * 1000)
        if idle_s:
            i = s.idle(idle_s)
            r.update(idle_answer_wakeups=i["wakeups_per_s"], idle_answer_bytes=i["bytes_per_s"])
        r["rss_stream"] = s.peak_rss_mib()
    except BaseException:
        s.t.close()
        raise
    s.close()
    return r


def _answer_lines() -> list:
    """The bench answer's rendered lines (urwid markup), every block rendered."""
    from dashfloat.ui.theme import UNICODE
    from dashfloat.ui.transcript import AssistantEntry

    entry = AssistantEntry()
    for piece in PIECES:
        entry.add_content(piece)
    lines = entry.lines(UNICODE, False)
    while entry.behind:  # a call renders a budget of blocks (transcript.MARKDOWN_BUDGET)
        lines = entry.lines(UNICODE, False)
    return lines


def rendered_text_bytes(cols: int) -> int:
    """The UTF-8 bytes of the bench answer's rendered rows at `cols` columns, trailing blanks
    cut: what any frame-by-frame writer must send at least, before colours and moves."""
    from dashfloat.ui.widgets import make_row

    return sum(len(row.rstrip()) for line in _answer_lines() for row in make_row(line).render((cols,)).text)


def rendered_ansi_bytes(cols: int, depth: int = 256) -> int:
    """The bytes of the bench answer's rendered rows written once, top to bottom, with their
    colours, as the app's own row writer writes them (shortest SGR steps, a line feed between
    rows, trailing blanks cut): the floor of this look, colours included. What a stream writes
    beyond it is its own cost (the tail written again, moves, the status bar)."""
    from dashfloat.ui import theme
    from dashfloat.ui.screen import DashScreen, render_rows
    from dashfloat.ui.widgets import make_row

    screen = DashScreen()
    screen.set_terminal_properties(colors=depth)
    screen.register_palette(theme.palette(depth))
    rows = [row for line in _answer_lines() for row in make_row(line).render((cols,)).content()]
    blank = [(None, None, b" " * cols)]
    text, _state, _drawn = render_rows([(y, blank, row) for y, row in enumerate(rows)],
                                       screen._attr_to_escape, "\r\n")
    return len(text.encode("utf-8", "surrogateescape"))


# ---- the table -------------------------------------------------------------------------

# (key, label, format, target text, predicate on the median or None)
ROWS = [
    ("first_frame", "exec -> first full frame (s)", "{:.3f}", "-", None),
    ("prompt_echo", "exec -> prompt accepts input (s)", "{:.3f}", "<= 0.20", lambda v: v <= 0.20),
    ("startup_cpu", "  CPU used by the first full frame (s, schedstat)", "{:.3f}", "-", None),
    ("echo_idle", "  key -> echo on an idle, started app (s)", "{:.3f}", "-", None),
    ("burst", "burst: Enter -> last token on screen (s)", "{:.3f}", "<= 0.30", lambda v: v <= 0.30),
    ("burst_cpu", "burst: CPU Enter -> idle (s)", "{:.2f}", "-", None),
    ("burst_bytes_per_content", "burst: terminal bytes / content byte", "{:.2f}", "-", None),
    ("burst2", "  2nd burst, same process: Enter -> last token (s)", "{:.3f}", "-", None),
    ("burst2_cpu", "  2nd burst, same process: CPU (s)", "{:.2f}", "-", None),
    ("stream_time", "200 tok/s: Enter -> last token (s)", "{:.2f}", "10.0 (paced)", None),
    ("stream_cpu", "200 tok/s: CPU of the stream (s, schedstat)", "{:.3f}", "<= 0.50", lambda v: v <= 0.50),
    ("stream_cpu_main", "  of which the main (UI) thread (s)", "{:.3f}", "-", None),
    ("stream_cpu_agent", "  the agent thread (s)", "{:.3f}", "-", None),
    ("stream_cpu_streamer", "  threads started by the turn: HTTP streamer... (s)", "{:.3f}", "-", None),
    ("stream_main_wakeups", "200 tok/s: main-thread context switches", "{:.0f}", "-", None),
    ("stream_all_wakeups", "200 tok/s: context switches, all threads", "{:.0f}", "-", None),
    ("group_cpu", "  diagnostic: same stream, 16 tokens per event (s)", "{:.3f}", "-", None),
    ("group_main_wakeups", "  diagnostic: its main-thread context switches", "{:.0f}", "-", None),
    ("stream_bytes_per_content", "200 tok/s: terminal bytes / content byte", "{:.2f}", "<= 1.3 (#16)",
     lambda v: v <= 1.3),
    ("stream_status_bytes_per_content", "  of which the status-bar row", "{:.2f}", "-", None),
    ("stream_scrolls", "200 tok/s: rows scrolled inside the margins", "{:.0f}", "-", None),
    ("cpu_per_token_ms", "CPU per token, empty transcript (ms)", "{:.3f}", "-", None),
    ("fill_cpu_per_token_ms", "CPU per token, 50,000 lines before (ms)", "{:.3f}", "-", None),
    ("fill_ratio", "  ratio 50,000 lines / empty", "{:.2f}", "<= 1.25 (*)", lambda v: v <= 1.25),
    ("fill_stream_cpu", "  CPU of the stream after 50,000 lines (s)", "{:.3f}", "<= 0.50", lambda v: v <= 0.50),
    ("fill_time", "  filling 50,000 lines: Enter -> shown (s)", "{:.2f}", "-", None),
    ("fill_cpu", "  filling 50,000 lines: CPU (s)", "{:.2f}", "-", None),
    ("idle_start_wakeups", "idle after start-up: wake-ups/s", "{:.2f}", "0", lambda v: v == 0),
    ("idle_start_bytes", "idle after start-up: bytes/s", "{:.1f}", "0", lambda v: v == 0),
    ("idle_answer_wakeups", "idle after an answer: wake-ups/s", "{:.2f}", "0", lambda v: v == 0),
    ("idle_answer_bytes", "idle after an answer: bytes/s", "{:.1f}", "0", lambda v: v == 0),
    ("idle_fill_wakeups", "idle with 50,000 lines: wake-ups/s", "{:.2f}", "0", lambda v: v == 0),
    ("rss_stream", "peak RSS after the stream (MiB)", "{:.1f}", "<= 50", lambda v: v <= 50),
    ("rss_fill_stream", "peak RSS, 50,000 lines + stream (MiB)", "{:.1f}", "<= 50 (**)", lambda v: v <= 50),
]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def collect(results: dict, size: str) -> dict:
    """Medians per figure for one size, from the per-case run lists."""
    sb = results[size].get("startup_burst", [])
    st = results[size].get("stream", [])
    fl = results[size].get("fill", [])
    m = {}
    for key in ("first_frame", "prompt_echo", "startup_cpu", "echo_idle", "burst", "burst_cpu", "burst_bytes_per_content", "burst2", "burst2_cpu"):
        m[key] = median(r.get(key) for r in sb)
    for key in ("stream_time", "stream_cpu", "stream_cpu_main", "stream_cpu_agent", "stream_cpu_streamer",
                "stream_main_wakeups", "stream_all_wakeups", "stream_bytes_per_content", "stream_status_bytes_per_content", "stream_scrolls",
                "cpu_per_token_ms", "idle_start_wakeups", "idle_start_bytes", "idle_answer_wakeups",
                "idle_answer_bytes", "rss_stream"):
        m[key] = median(r.get(key) for r in st)
    fc = results[size].get("floor", [])
    m["floor_stream_cpu"] = median(r.get("floor_stream_cpu") for r in fc)
    m["floor_startup_cpu"] = median(r.get("floor_startup_cpu") for r in fc)
    gr = results[size].get("group", [])
    m["group_cpu"] = median(r.get("stream_cpu") for r in gr)
    m["group_main_wakeups"] = median(r.get("stream_main_wakeups") for r in gr)
    m["fill_cpu_per_token_ms"] = median(r.get("cpu_per_token_ms") for r in fl)
    m["fill_stream_cpu"] = median(r.get("stream_cpu") for r in fl)
    m["fill_time"] = median(r.get("fill_time") for r in fl)
    m["fill_cpu"] = median(r.get("fill_cpu") for r in fl)
    m["idle_fill_wakeups"] = median(r.get("idle_fill_wakeups") for r in fl)
    m["rss_fill_stream"] = median(r.get("rss_stream") for r in fl)
    if m["fill_cpu_per_token_ms"] is not None and m["cpu_per_token_ms"]:
        m["fill_ratio"] = m["fill_cpu_per_token_ms"] / m["cpu_per_token_ms"]
    else:
        m["fill_ratio"] = None
    return m


def print_table(results: dict, sizes: list[str]) -> int:
    med = {size: collect(results, size) for size in sizes}
    head = ["figure", *sizes, "target", "verdict"]
    body = []
    missed = 0
    for key, label, fmt, target, ok in ROWS:
        cells = [label]
        verdict = "-" if ok is None else "ok"
        for size in sizes:
            v = med[size].get(key)
            if v is None:
                cells.append("n/a")
                if ok is not None:
                    verdict = "n/a"
            else:
                cells.append(fmt.format(v))
                if ok is not None and not ok(v):
                    verdict = "OVER"
        if verdict == "OVER":
            missed += 1
        body.append([*cells, target, verdict])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) if i <= len(sizes) else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))) + " |"

    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in body:
        print(line(r))
    return missed


# ---- main ------------------------------------------------------------------------------


def parse_size(text: str) -> tuple[int, int]:
    cols, rows = text.lower().split("x")
    return int(cols), int(rows)


def app_supports_no_scroll() -> bool:
    for path in (ROOT / "dashfloat").rglob("*.py"):
        if NO_SCROLL_ENV in path.read_text(encoding="utf-8", errors="replace"):
            return True
    return False


def run_profiles(server, size, outdir: Path, idle_s: float) -> None:
    import pstats

    outdir.mkdir(parents=True, exist_ok=True)
    cases = [
        ("burst", lambda p: case_startup_burst(server, size, profile=p)),
        ("stream", lambda p: case_stream(server, size, 0, profile=p)),
        ("stream_16_per_event", lambda p: case_stream(server, size, 0, profile=p, group=GROUP)),
        ("fill_stream", lambda p: case_stream(server, size, 0, profile=p, fill=True)),
    ]
    for name, fn in cases:
        path = outdir / f"{name}.prof"
        r = fn(path)
        print(f"\n=== {name} at {size[0]}x{size[1]} (cProfile of the main thread; figures of this run: "
              + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()) + ")")
        for _ in range(50):
            if path.exists() and path.stat().st_size:
                break
            time.sleep(0.1)
        st = pstats.Stats(str(path))
        st.sort_stats("tottime").print_stats(25)
        st.sort_stats("cumulative").print_stats(30)
        print(f"profile written to {path}")


def main(argv=None) -> int:
    # the pty reader threads (BenchTerm) stamp a read when they get the GIL: at Python's
    # 5 ms interval, a read could wait that long behind pyte or the server thread
    sys.setswitchinterval(0.0005)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one run of everything (explicit counts win)")
    ap.add_argument("--sizes", default="120x40,80x24")
    ap.add_argument("--runs", type=int, help="runs of start-up + burst per size (5)")
    ap.add_argument("--stream-runs", type=int, help="runs of the 10-s stream per size (3)")
    ap.add_argument("--fill-runs", type=int, help="runs of the 50,000-line case per size (2)")
    ap.add_argument("--diag-runs", type=int,
                    help="runs of the diagnostic stream, the same tokens 16 to an SSE event (1)")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds per idle window")
    ap.add_argument("--json", metavar="FILE", help="also write every run's figures to FILE")
    ap.add_argument("--profile", metavar="DIR", help="profile the cases under cProfile instead")
    ap.add_argument("--sessions-only", action="store_true", help="only the session figures (journal, resume, listing)")
    ap.add_argument("--no-sessions", action="store_true", help="leave the session figures out")
    ap.add_argument("--search-only", action="store_true", help="only the search figures (10,000 files, each backend)")
    ap.add_argument("--no-search", action="store_true", help="leave the search figures out")
    ap.add_argument("--headless-only", action="store_true", help="only the headless figures (dashfloat -p)")
    ap.add_argument("--no-headless", action="store_true", help="leave the headless figures out")
    ap.add_argument("--pyz-only", action="store_true", help="only the pyz figures (size, start-up)")
    ap.add_argument("--no-pyz", action="store_true", help="leave the pyz figures out")
    ap.add_argument("--exe-only", action="store_true", help="only the single executable's figures (make exe first)")
    ap.add_argument("--no-exe", action="store_true", help="leave the single executable's figures out")
    ap.add_argument("--huge-only", action="store_true", help="only the huge-answer figures (issue 16)")
    ap.add_argument("--no-huge", action="store_true", help="leave the huge-answer figures out")
    ap.add_argument("--huge-runs", type=int, help="runs per huge answer (3; 1 with --quick)")
    ap.add_argument("--huge-mb", type=float, default=1.0, help="size of the huge answers in MB (1)")
    ap.add_argument("--huge-cases", default="one_line,words,lines,code", help="which huge answers")
    ap.add_argument("--link-only", action="store_true", help="only the slow-link figures (through ssh and a proxy)")
    ap.add_argument("--no-link", action="store_true", help="leave the slow-link figures out")
    ap.add_argument("--longday-only", action="store_true", help="only the long-day figures (300 turns, issue 16)")
    ap.add_argument("--no-longday", action="store_true", help="leave the long-day figures out")
    ap.add_argument("--longday-turns", type=int, default=300, help="turns of the long day (300)")
    args = ap.parse_args(argv)
    if args.sessions_only:
        return sessions_section(args)
    if args.search_only:
        return search_section(args)
    if args.headless_only:
        return headless_section(args)
    if args.pyz_only:
        return pyz_section(args)
    if args.exe_only:
        return exe_section(args)
    if args.huge_only:
        return huge_section(args)
    if args.link_only:
        return link_section(args)
    if args.longday_only:
        return longday_section(args)
    for name, default in (("runs", 5), ("stream_runs", 3), ("fill_runs", 2), ("diag_runs", 1)):
        if getattr(args, name) is None:
            setattr(args, name, 1 if args.quick else default)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]

    t_start = time.monotonic()
    errors: list[str] = []
    results: dict = {size: {"startup_burst": [], "stream": [], "floor": [], "group": [], "fill": []}
                     for size in sizes}
    no_scroll: dict = {}
    print(f"DashFloat benchmark: {TOKENS}-token Markdown answer ({CONTENT_BYTES} content bytes, "
          f"last token {MARKER!r}), paced stream {RATE:.0f} tok/s, transcript fill {FILL_LINES:,} lines.")
    print(f"runs per size: start-up/burst {args.runs}, stream {args.stream_runs}, "
          f"50,000 lines {args.fill_runs}; idle windows {args.idle:g} s. Python {sys.version.split()[0]}.")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start.")
    sys.stdout.flush()

    import huge_bench  # (the floor client's stream, in turn with DashFloat's)

    with ScriptedServer(models=["bench-model"]) as server:
        if args.profile:
            try:
                run_profiles(server, parse_size(sizes[0]), Path(args.profile), args.idle)
            except Exception:
                traceback.print_exc()
                return 1
            return 0

        def attempt(label, fn):
            try:
                return fn()
            except Exception as exc:
                errors.append(f"{label}: {exc}")
                print(f"  ! {label} could not be measured: {exc}", file=sys.stderr)
                if not isinstance(exc, MeasureError):
                    traceback.print_exc()
                return None

        # warm the page cache and the bytecode caches; not counted
        attempt("warm-up", lambda: case_startup_burst(server, parse_size(sizes[0])))

        for size in sizes:
            wh = parse_size(size)
            for i in range(args.runs):
                r = attempt(f"{size} start-up+burst #{i + 1}", lambda wh=wh: case_startup_burst(server, wh))
                if r:
                    results[size]["startup_burst"].append(r)
            print(f"  {size}: start-up and burst done ({time.monotonic() - t_start:.0f} s)", flush=True)
            for i in range(args.stream_runs):  # idle windows in the first run only
                r = attempt(f"{size} stream #{i + 1}",
                            lambda wh=wh, i=i: case_stream(server, wh, args.idle if i == 0 else 0))
                if r:
                    results[size]["stream"].append(r)
                f = attempt(f"{size} floor client's stream #{i + 1}",
                            lambda: huge_bench.floor_stream_cpu(FloorServer(server)))
                if f:
                    results[size]["floor"].append(f)
            for i in range(args.diag_runs):
                r = attempt(f"{size} grouped stream #{i + 1}",
                            lambda wh=wh: case_stream(server, wh, 0, group=GROUP))
                if r:
                    results[size]["group"].append(r)
            print(f"  {size}: 200 tok/s stream done ({time.monotonic() - t_start:.0f} s)", flush=True)
            for i in range(args.fill_runs):
                r = attempt(f"{size} 50,000 lines #{i + 1}",
                            lambda wh=wh, i=i: case_stream(server, wh, args.idle if i == 0 else 0, fill=True))
                if r:
                    results[size]["fill"].append(r)
            print(f"  {size}: 50,000-line case done ({time.monotonic() - t_start:.0f} s)", flush=True)

        supports = app_supports_no_scroll()
        if supports and args.stream_runs:
            wh = parse_size(sizes[0])
            r = attempt("stream without scroll regions",
                        lambda: case_stream(server, wh, 0, env_extra={NO_SCROLL_ENV: "1"}))
            if r:
                no_scroll = r

    print()
    missed = print_table(results, sizes)
    in_turn = {size: m for size in sizes if (m := collect(results, size)).get("floor_stream_cpu") is not None}
    if in_turn:
        missed += floor_verdicts(in_turn, {})
    print()
    print("(*) the issue gives no number for the 50,000-line ratio; the README promises the same cost "
          "per frame for a long session, so anything within 25% of the empty transcript passes.")
    print("(**) the issue's 50 MiB is for the session measured above; applied here to a 50,000-line one too.")
    if supports and no_scroll:
        m = collect(results, sizes[0])
        print(f"scroll optimisation, 200 tok/s stream at {sizes[0]} (one run without it vs the medians):\n"
              f"  with it:    {m['stream_bytes_per_content']:.2f} terminal B per content B, "
              f"{m['stream_cpu']:.2f} s CPU, {m['stream_scrolls']:.0f} rows scrolled in the margins\n"
              f"  without it: {no_scroll['stream_bytes_per_content']:.2f} terminal B per content B, "
              f"{no_scroll['stream_cpu']:.2f} s CPU, {no_scroll['stream_scrolls']} rows scrolled in the margins "
              f"({NO_SCROLL_ENV}=1)")
    elif supports:
        print(f"scroll optimisation on/off: not measured ({NO_SCROLL_ENV}=1 run skipped or failed).")
    else:
        print(f"scroll optimisation on/off: not measured, the app has no {NO_SCROLL_ENV} switch "
              f"(the 'rows scrolled inside the margins' row counts the line feeds on its DECSTBM bottom margin).")
    for size in sizes:
        cols = parse_size(size)[0]
        print(f"the floor of this look at {size}: the answer's rendered rows alone (their text, trailing blanks "
              f"cut; no colours, no moves, nothing written twice) are {rendered_text_bytes(cols) / CONTENT_BYTES:.2f} "
              "B per content B (indents, bullets, box-drawing rules); with this look's colours, "
              f"every row written once by the app's row writer: {rendered_ansi_bytes(cols) / CONTENT_BYTES:.2f} "
              f"(with --colors 1, bold, italic and underline only: {rendered_ansi_bytes(cols, 1) / CONTENT_BYTES:.2f})")
    print("for scale: llm 0.49 s start, 0.86 s CPU for the stream, 1.0 B/B, 70 MiB; "
          "aider 3.8 s burst, 4.9 s CPU, 25 B/B, 326 MiB.")
    load = os.getloadavg()[0]
    print(f"figures missing their target: {missed}. Whole run: {time.monotonic() - t_start:.0f} s; "
          f"load average {load:.2f} at the end on {os.cpu_count()} CPUs.")
    if load > (os.cpu_count() or 1) * 0.5:
        print("note: the machine was busy; times (not CPU seconds or bytes) are inflated by the load.")
    print()
    print("every run (for the medians above):")
    for size in sizes:
        for case, runs in results[size].items():
            for r in runs:
                print(f"  {size} {case}: " + ", ".join(
                    f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                    if k != "fill_status"))
    if not args.no_sessions:
        print()
        if sessions_section(args):
            errors.append("the session figures could not be measured")
    if not args.no_search:
        print()
        if search_section(args):
            errors.append("the search figures could not be measured")
    if not args.no_headless:
        print()
        if headless_section(args):
            errors.append("the headless figures could not be measured")
    if not args.no_pyz:
        print()
        if pyz_section(args):
            errors.append("the pyz figures could not be measured")
    if not args.no_exe:
        print()
        if exe_section(args):
            errors.append("the single executable's figures could not be measured")
    if not args.no_huge:
        print()
        if huge_section(args, {size: collect(results, size) for size in sizes}):
            errors.append("the huge-answer figures could not be measured")
    if not args.no_link:
        print()
        if link_section(args):
            errors.append("the slow-link figures could not be measured")
    if not args.no_longday:
        print()
        if longday_section(args):
            errors.append("the long-day figures could not be measured")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "no_scroll": no_scroll,
                                               "errors": errors}, indent=1))
    if errors:
        print("\ncould not measure:", *errors, sep="\n  ", file=sys.stderr)
        return 1
    return 0


def _report(label: str, print_rows, rows) -> int:
    """A section's table (its heading row first) and the count of figures that missed."""
    missed = print_rows([("figure", "value", "target", "verdict"), *rows])
    print(f"{label} figures missing their target: {missed}")
    return 0


def sessions_section(args) -> int:
    """The session figures (issue 9): 1 when they could not be measured."""
    import sessions_bench

    runs = 1 if args.quick else 3
    print(f"session figures (median of {runs} fresh processes per resume; load average "
          f"{os.getloadavg()[0]:.2f}):")
    try:
        rows = sessions_bench.run(runs)
    except Exception:
        traceback.print_exc()
        return 1
    return _report("session", sessions_bench.print_rows, rows)


def search_section(args) -> int:
    """The search figures (issue 10): 1 when they could not be measured."""
    import search_bench

    runs = 1 if args.quick else 3
    print(f"search figures (10,000 files, median of {runs}; load average {os.getloadavg()[0]:.2f}):")
    try:
        rows = search_bench.run(runs)
    except Exception:
        traceback.print_exc()
        return 1
    return _report("search", search_bench.print_rows, rows)


def headless_section(args) -> int:
    """The headless figures (issue 11): 1 when they could not be measured."""
    import headless_bench

    runs = 3 if args.quick else 10
    print(f"headless figures (median of {runs} fresh processes; load average {os.getloadavg()[0]:.2f}):")
    try:
        rows = headless_bench.run(runs)
    except Exception:
        traceback.print_exc()
        return 1
    return _report("headless", headless_bench.print_rows, rows)


def pyz_section(args) -> int:
    """The pyz figures (issue 15): 1 when they could not be measured."""
    import pyz_bench

    runs = 3 if args.quick else 7
    print(f"pyz figures (median of {runs} fresh processes, round robin; load average {os.getloadavg()[0]:.2f}):")
    try:
        rows = pyz_bench.run(runs)
    except Exception:
        traceback.print_exc()
        return 1
    return _report("pyz", pyz_bench.print_rows, rows)


def exe_section(args) -> int:
    """The single executable's figures (issue 15): 1 when they could not be measured; a
    line saying why when dist/ holds no executable built from this tree."""
    import exe_bench

    why = exe_bench.missing()
    if why:
        print(f"executable figures skipped: {why}")
        return 0
    runs = 3 if args.quick else 7
    print(f"executable figures (median of {runs} fresh processes, round robin; load average "
          f"{os.getloadavg()[0]:.2f}):")
    try:
        rows = exe_bench.run(runs)
    except Exception:
        traceback.print_exc()
        return 1
    return _report("executable", exe_bench.print_rows, rows)


def huge_section(args, main: dict | None = None) -> int:
    """The huge-answer figures (issue 16): 1 when they could not be measured. Where `main`
    (the main table's medians per size) has no floor client's runs of its own (taken in turn
    with DashFloat's), the stream's CPU and the start-up's are judged against the floor
    client's measured here (issue 16 §2: <= 1.1 x the floor client); else it is not run here."""
    import huge_bench

    runs = args.huge_runs or (1 if args.quick else 3)
    cases = [c.strip() for c in args.huge_cases.split(",") if c.strip()]
    print(f"huge answers ({args.huge_mb:g} MB, sent as fast as the server can; median of {runs}; "
          f"load average {os.getloadavg()[0]:.2f}):", flush=True)
    pending = {size: m for size, m in (main or {}).items() if m.get("floor_stream_cpu") is None}
    judge_here = bool(pending) or not main
    try:
        floor: dict = {}
        rows, over = huge_bench.run(runs, args.huge_mb, cases, log=lambda m: print(m, flush=True),
                                    extra=("cap", "floor_stream") if judge_here else ("cap",), figures=floor)
    except Exception:
        traceback.print_exc()
        return 1
    huge_bench.print_rows(rows)
    if judge_here:
        over += floor_verdicts(pending, floor)
    print(f"huge-answer figures missing their target: {over}")
    return 0


def floor_verdicts(main: dict, floor: dict) -> int:
    """Print DashFloat's CPU beside the floor client's against issue 16's <= 1.1 x; the count
    of figures over it. The same answer at the same pace, the same clock (each thread's
    schedstat, in nanoseconds: /proc's 10-ms ticks made a ratio of two 0.1-s figures swing
    from x1.4 to x3) and, where the main table ran, the same server with the floor client's
    runs in turn with DashFloat's (its medians per size, `main[size]["floor_stream_cpu"]`);
    else the huge section's (`floor`: back to back on a server process of its own, a figure
    that ranged from 0.065 to 0.157 s run after run). Not quite the same window: DashFloat's
    runs from Enter to idle (its request built, 0.3 s of quiet after), the floor's from its
    request to the last byte."""
    if not main:
        print("against the floor client: not judged (the main table did not run in this bench)")
        return 0
    over = 0
    for size, m in main.items():
        in_turn = m.get("floor_stream_cpu") is not None
        where = "in turn, same server" if in_turn else "huge section"
        for key, fkey, label in (("stream_cpu", "floor_stream_cpu", "200 tok/s stream CPU (Enter -> idle)"),
                                 ("startup_cpu", "floor_startup_cpu", "CPU to the first frame (its request)")):
            ours, theirs = m.get(key), (m if in_turn else floor).get(fkey)
            if ours is None or not theirs:
                print(f"against the floor client, {size}: {label}: not measured")
                continue
            ok = ours <= 1.1 * theirs
            over += not ok
            print(f"against the floor client ({where}), {size}: {label}: {ours:.3f} s vs {theirs:.3f} s = "
                  f"x{ours / theirs:.2f} (<= x1.10, issue 16): {'ok' if ok else 'OVER'}")
            if key == "stream_cpu" and m.get("stream_cpu_streamer") is not None:
                # the floor client's work (read the stream, parse it, put its text out) is
                # DashFloat's streamer thread's; the main thread's is what the floor has not
                reading, ui = m["stream_cpu_streamer"], m.get("stream_cpu_main") or 0.0
                print(f"  of which the thread that reads the stream (the floor client's work): {reading:.3f} s = "
                      f"x{reading / theirs:.2f}; the main thread (Markdown, highlighting, frames): {ui:.3f} s")
    return over


def link_section(args) -> int:
    """The slow-link figures (issue 15 §2): 1 when they could not be measured."""
    import link_bench

    from tests import sshd

    reason = sshd.missing()
    if reason:  # a machine without OpenSSH: said, not an error
        print(f"slow-link figures: {reason}")
        return 0
    runs = 1 if args.quick else 3
    print(f"slow-link figures through ssh (80x24, median of {runs}; load average {os.getloadavg()[0]:.2f}):")
    try:
        rows = link_bench.run(runs)
    except link_bench.MeasureError as exc:
        print(f"  not measured: {exc}")
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    missed = link_bench.print_rows(rows)
    print(f"slow-link figures missing their goal: {missed}")
    return 0


def longday_section(args) -> int:
    """The long-day figures (issue 16 §2): 1 when they could not be measured."""
    import longday_bench

    turns = args.longday_turns
    print(f"a long day ({turns} turns with tool calls in one process, 120x40; load average "
          f"{os.getloadavg()[0]:.2f}):", flush=True)
    try:
        rows, _figures = longday_bench.run(turns, log=lambda m: print(m, flush=True))
    except Exception:
        traceback.print_exc()
        return 1
    _report("long-day", longday_bench.print_rows, rows)
    print(f"load average {os.getloadavg()[0]:.2f} at the end on {os.cpu_count()} CPUs; the times are medians, "
          f"each figure against its own value at turn 1 (first token: turns 1-9, turn 1 alone pays the imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
