"""Huge answers (issue 16): DashFloat beside the floor client, as a user meets them.

Four answers, each sent as fast as the scripted server can (64-byte content deltas; the server
runs in a process of its own, tests/bench/server_process.py, so that the bench's reads of the
terminal never wait for the GIL behind it):
  one line    1 MB on one line (base64: no blank to wrap at), then the marker word
  words       1 MB of words in one paragraph
  lines       50,000 short lines (about 1.5 MB)
  code        10,000 lines of one fenced python block
For each, in one dashfloat process in a pty (pyte reads the screen):
  rest RSS        VmRSS after the first frame, before any answer, once it stopped moving
                  (the agent and the warmed imports start after that frame)
  complete        Enter -> the marker (the answer's last word) on screen, and the same
                  after the server wrote the answer's last byte
  echo            while that answer streams: an "x" typed, time to its echo on the prompt
                  row, then its backspace (every probe counts; median and worst)
  Esc             the same answer again, trickled at 4,000 deltas/s: echo probes for 3 s,
                  then Esc; time from Esc to the idle status
  RSS after       VmRSS after the first answer (and peak VmHWM at the end)
and an answer over the 4 MiB cap (4.5 MB on one line): Enter -> the error entry, echo
meanwhile, RSS after and peak (goal: peak <= 100 MiB),
and the floor client (tests/bench/floor_client.py: http.client, each delta written to the
tty) on the same answer: the marker in its output after the last byte, its VmRSS after.

    .venv/bin/python tests/bench/run_bench.py --huge-only [--huge-runs 3] [--huge-mb 1]
        [--huge-cases one_line,words,lines,code]

Where a slow echo's time went: tests/bench/trace_huge.py CASE runs one case with the app
traced (tests/bench/apptrace/sitecustomize.py) and lines each probe up with what the app did.
"""

from __future__ import annotations

import base64
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    BenchTerm,
    MeasureError,
    clean_env,
    dashfloat_bin,
    settled_rss_mib,
    vm_kib,
)

HERE = Path(__file__).resolve().parent
MARK = "Hq7HugeDone"
PIECE = 64  # bytes per content delta
TRICKLE = 4000.0  # deltas per second of the Esc turn
ESC_AFTER = 3.0  # seconds into the trickle
ECHO_TIMEOUT = 10.0  # an echo later than this counts as this (a frozen screen)
COMPLETE_TIMEOUT = 240.0
SIZE = (120, 40)
CASES = ("one_line", "words", "lines", "code")
LABELS = {
    "one_line": "1 MB on one line",
    "words": "1 MB of words, one paragraph",
    "lines": "50,000 short lines",
    "code": "10,000 lines of one code block",
}
_WORDS = ("the loader reads the file then merges the environment and applies the flags "
          "before it validates everything once so that a mistake shows up early").split()


def answer(case: str, mb: float = 1.0) -> str:
    """The answer text of `case`, ending with MARK (a word of its own)."""
    n = int(mb * 1_000_000)
    if case == "one_line":
        rng = random.Random(16)
        blob = base64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode()[:n]
        return blob + " " + MARK
    if case == "words":
        rng = random.Random(17)
        out, size = [], 0
        while size < n:
            w = rng.choice(_WORDS)
            out.append(w)
            size += len(w) + 1
        return " ".join(out) + " " + MARK
    if case == "lines":
        lines = 50_000 if mb == 1.0 else int(50_000 * mb)
        return "".join(f"line {i:05d}: the quick brown fox jumps\n" for i in range(lines)) + MARK
    if case == "code":
        lines = 10_000 if mb == 1.0 else int(10_000 * mb)
        body = "".join(f"    value_{i} = compute({i}, 'step')  # step {i} of the loop\n" for i in range(lines))
        return "```python\ndef run():\n" + body + "```\n\n" + MARK
    raise ValueError(case)


def pieces_of(text: str, size: int = PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# ---- dashfloat ---------------------------------------------------------------------------


class HugeSession:
    def __init__(self, server, size=SIZE, profile: Path | None = None):
        self.tmp = tempfile.TemporaryDirectory(prefix="dashfloat-huge-")
        env = clean_env(Path(self.tmp.name))
        self.server = server
        args = ["--base-url", server.url, "--model", "bench-model"]
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "dashfloat", *args] \
            if profile is not None else [dashfloat_bin(), *args]
        self.t = BenchTerm(argv, env, cols=size[0], rows=size[1])
        self.pid = self.t.pid

    def start(self) -> float:
        t = self.t
        t.wait_screen(lambda s: s.status_has("idle"), 30, "the first full frame")
        t.quiet(0.5)
        return settled_rss_mib(self.pid)

    def enter(self, prompt: str) -> float:
        t = self.t
        t.send(prompt)
        t.wait_screen(lambda s: prompt[-10:] in s.prompt_row(), 20, "the prompt text")
        t.quiet(0.2)
        t.send("\r")
        return time.monotonic()

    def echo(self, ch: str, shown: bool) -> float:
        """Send `ch`; seconds until the prompt row shows (shown) or stops showing an x at
        its end, timed at the pty read that brought it; ECHO_TIMEOUT if never."""
        t = self.t
        t0 = time.monotonic()
        t.send(ch)
        try:
            t_read = t.wait_screen(lambda s: s.prompt_row().endswith("x") == shown, ECHO_TIMEOUT, "an echo")
        except MeasureError:
            if t.eof:
                raise
            return ECHO_TIMEOUT
        return max(0.0, t_read - t0)

    def probe_until(self, done, until: float | None = None, timeout: float = COMPLETE_TIMEOUT):
        """Echo probes (x, then backspace) until done(term) holds (or the clock passes
        `until`): (the echo latencies, the time of the read that made done() hold)."""
        t = self.t
        echoes: list[float] = []
        deadline = time.monotonic() + timeout
        while True:
            t.sync()
            if done(t):
                return echoes, t.t_last_read
            if until is not None and time.monotonic() >= until:
                return echoes, None
            if time.monotonic() > deadline:
                raise MeasureError(f"timed out; screen:\n{t.dump()}")
            echoes.append(self.echo("x", True))
            if done(t):  # seen with the x on the prompt: time it, then take the x back
                t_done = t.t_last_read
                echoes.append(self.echo("\x7f", False))
                return echoes, t_done
            echoes.append(self.echo("\x7f", False))
            t.read(0.05)

    def close(self) -> None:
        rc = self.t.quit()
        self.tmp.cleanup()
        if rc not in (0, None):
            raise MeasureError(f"dashfloat exited with status {rc}")


def on_screen(marker: str):
    return lambda s: marker in s.text


def case_dashfloat(server, case: str, mb: float, profile: Path | None = None) -> dict:
    text = answer(case, mb)
    pieces = pieces_of(text)
    s = HugeSession(server, profile=profile)
    r: dict = {}
    try:
        r["rss_rest"] = s.start()
        server.push_sse(pieces, model="bench-model")
        n_served = len(server.served_at)
        t_enter = s.enter("Send the huge answer.")
        echoes, t_done = s.probe_until(on_screen(MARK))
        served_at = server.served_at
        t_last = served_at[n_served] if len(served_at) > n_served else None
        r["enter_to_complete"] = t_done - t_enter
        r["complete_after_last_byte"] = t_done - t_last if t_last is not None else None
        r["echo_median"] = statistics.median(echoes) if echoes else None
        r["echo_max"] = max(echoes) if echoes else None
        r["echo_probes"] = len(echoes)
        s.t.wait_screen(lambda x: x.status_has("idle"), 60, "idle after the answer")
        s.t.quiet(0.5)
        r["rss_after"] = vm_kib(s.pid, "VmRSS") / 1024
        # the Esc turn: the same answer trickled, Esc 3 s in
        server.push_paced(pieces, TRICKLE, model="bench-model")
        try:
            s.enter("Again, slowly.")
            t_wait = time.monotonic() + 30
            while (pacer_t0 := server.pacer_t0()) is None:
                s.t.read(0.01)
                if time.monotonic() > t_wait:
                    raise MeasureError("the trickled answer was never asked for")
            # 3 s in, or halfway through a shorter trickle: the answer must still be coming
            esc_after = min(ESC_AFTER, 0.5 * len(pieces) / TRICKLE)
            trickle, _ = s.probe_until(lambda _t: False, until=pacer_t0 + esc_after)
            r["trickle_echo_max"] = max(trickle) if trickle else None
            s.t.sync()
            if s.t.status_has("idle"):
                raise MeasureError("the trickled answer ended before Esc")
            t_esc = time.monotonic()
            s.t.send("\x1b")
            t_idle = s.t.wait_screen(lambda x: x.status_has("idle"), 60, "idle after Esc")
            r["esc_to_idle"] = t_idle - t_esc
        finally:
            server.pacer_stop()
        s.t.quiet(0.3)
        r["rss_peak"] = vm_kib(s.pid, "VmHWM") / 1024
    except BaseException:
        s.t.close()
        s.tmp.cleanup()
        raise
    s.close()
    return r


def case_cap(server) -> dict:
    """An answer over the 4 MiB cap (4.5 MB on one line, as fast as the server can): the
    error entry after the last byte the client read (the server's last chunk is cut off
    by the client: timed from Enter), echo meanwhile, RSS at the cap."""
    s = HugeSession(server)
    r: dict = {}
    try:
        r["rss_rest"] = s.start()
        server.push_sse(pieces_of("q" * 4_500_000, 4096), model="bench-model")
        t_enter = s.enter("More than the cap.")
        echoes, t_done = s.probe_until(lambda t: "exceeded 4 MiB" in t.flat)
        r["cap_enter_to_error"] = t_done - t_enter
        r["cap_echo_max"] = max(echoes) if echoes else None
        s.t.wait_screen(lambda x: x.status_has("idle"), 60, "idle after the cap")
        s.t.quiet(0.5)
        r["cap_rss_after"] = vm_kib(s.pid, "VmRSS") / 1024
        r["cap_rss_peak"] = vm_kib(s.pid, "VmHWM") / 1024
    except BaseException:
        s.t.close()
        s.tmp.cleanup()
        raise
    s.close()
    return r


def case_floor(server, case: str, mb: float) -> dict:
    text = answer(case, mb)
    server.push_sse(pieces_of(text), model="bench-model")
    n_served = len(server.served_at)
    with tempfile.TemporaryDirectory(prefix="dashfloat-floor-") as tmp:
        env = clean_env(Path(tmp))
        t = BenchTerm([sys.executable, str(HERE / "floor_client.py"), server.url, "bench-model", "Send it."],
                      env, cols=SIZE[0], rows=SIZE[1])
        try:
            t_start = time.monotonic()
            mark = MARK.encode()
            deadline = t_start + COMPLETE_TIMEOUT
            scan = 0
            while True:
                t.read(0.05)
                if t.raw.find(mark, max(0, scan - len(mark))) >= 0:
                    t_done = t.t_last_read
                    break
                scan = len(t.raw)
                if t.eof or time.monotonic() > deadline:
                    raise MeasureError("the floor client never showed the marker")
            while b"[floor: done]" not in t.raw[-64:]:
                t.read(0.05)
                if t.eof:
                    raise MeasureError("the floor client ended early")
            served_at = server.served_at
            t_last = served_at[n_served] if len(served_at) > n_served else None
            rss = vm_kib(t.pid, "VmRSS") / 1024
            t.send("\r")
            t.wait_exit(10)
        finally:
            t.close()
    return {"floor_complete_after_last_byte": (t_done - t_last) if t_last is not None else None,
            "floor_enter_to_complete": t_done - t_start, "floor_rss_after": rss}


def floor_stream_cpu(server) -> dict:
    """The floor client on the main bench's paced stream (2,000 tokens at 200 tokens/s,
    one SSE event each): its CPU from exec to the end of the answer, start-up included
    (the figure DashFloat's "200 tok/s: CPU of the stream" is held against), and its
    start-up alone (exec to its request)."""
    from benchlib import MARKER, answer_pieces, schedstat_ns

    n = server.n_requests()
    server.push_paced(answer_pieces(2000), 200.0, model="bench-model")
    with tempfile.TemporaryDirectory(prefix="dashfloat-floor-") as tmp:
        t = BenchTerm([sys.executable, str(HERE / "floor_client.py"), server.url, "bench-model", "Explain."],
                      clean_env(Path(tmp)), cols=SIZE[0], rows=SIZE[1])
        try:
            server.wait_requests(n + 1, timeout=30)
            start_cpu = schedstat_ns(t.pid) / 1e9  # (one thread: its schedstat is exact)
            deadline = time.monotonic() + 60
            while MARKER.encode() not in t.raw and b"[floor: done]" not in t.raw:
                t.read(0.05)
                if t.eof or time.monotonic() > deadline:
                    raise MeasureError("the floor client never finished the paced stream")
            while b"[floor: done]" not in t.raw[-64:]:
                t.read(0.05)
            cpu = schedstat_ns(t.pid) / 1e9
            t.send("\r")
            t.wait_exit(10)
        finally:
            server.pacer_stop()
            t.close()
    return {"floor_stream_cpu": cpu - start_cpu, "floor_startup_cpu": start_cpu}


# ---- the table ---------------------------------------------------------------------------

COLUMNS = [
    ("enter_to_complete", "Enter -> complete (s)", "{:.2f}"),
    ("complete_after_last_byte", "after last byte (s)", "{:.2f}"),
    ("echo_median", "echo med (ms)", "ms"),
    ("echo_max", "echo max (ms)", "ms"),
    ("trickle_echo_max", "echo max, trickle (ms)", "ms"),
    ("esc_to_idle", "Esc -> idle (ms)", "ms"),
    ("rss_rest", "RSS rest (MiB)", "{:.1f}"),
    ("rss_after", "RSS after (MiB)", "{:.1f}"),
    ("rss_peak", "peak (MiB)", "{:.1f}"),
    ("floor_complete_after_last_byte", "floor: after last byte (s)", "{:.2f}"),
    ("floor_rss_after", "floor: RSS (MiB)", "{:.1f}"),
]
GOALS = {"complete_after_last_byte": ("<= 1.0 s", lambda v: v <= 1.0),
         "echo_max": ("<= 20 ms", lambda v: v <= 0.020),
         "trickle_echo_max": ("<= 20 ms", lambda v: v <= 0.020),
         "esc_to_idle": ("<= 100 ms", lambda v: v <= 0.100)}


def _fmt(fmt: str, v) -> str:
    if v is None:
        return "n/a"
    if fmt == "ms":
        return f"{v * 1000:.0f}"
    return fmt.format(v)


def run(runs: int = 3, mb: float = 1.0, cases=CASES, server=None, log=print,
        extra=("cap", "floor_stream"), figures: dict | None = None) -> tuple[list, int]:
    """(rows of the table, figures over their goal); `figures` gets the floor client's
    medians on the main bench's stream (floor_stream_cpu, floor_startup_cpu), for the main
    table's CPU to be judged against them (run_bench.py)."""
    from server_process import ServerProcess

    own = server is None
    if own:
        server = ServerProcess(models=["bench-model"]).start()
    results: dict[str, list[dict]] = {c: [] for c in cases}
    try:
        for case in cases:
            for i in range(runs):
                t0 = time.monotonic()
                r = case_dashfloat(server, case, mb)
                r.update(case_floor(server, case, mb))
                results[case].append(r)
                log(f"  {case} #{i + 1} ({time.monotonic() - t0:.0f} s): " + ", ".join(
                    f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
        cap = [case_cap(server) for _ in range(runs)] if "cap" in extra else []
        floor = [floor_stream_cpu(server) for _ in range(runs)] if "floor_stream" in extra else []
    finally:
        if own:
            server.stop()
    for r in cap:
        log("  4 MiB cap: " + ", ".join(f"{k}={v:.3f}" for k, v in r.items() if v is not None))
    if floor:
        fc = statistics.median(r["floor_stream_cpu"] for r in floor)
        fs = statistics.median(r["floor_startup_cpu"] for r in floor)
        if figures is not None:
            figures.update(floor_stream_cpu=fc, floor_startup_cpu=fs)
        log(f"  floor client, the 200 tok/s stream of the main bench: CPU {fc:.3f} s from its request "
            f"to the end (start-up before it {fs:.3f} s); DashFloat's figure is the main table's "
            f"'200 tok/s: CPU of the stream' (goal <= 1.1 x {fc:.3f} = {1.1 * fc:.3f} s; judged below "
            "the table when the main table ran without floor client runs of its own)")
    head = [f"answer (median of {runs})", *[c[1] for c in COLUMNS]]
    rows = [head]
    over = 0
    for case in cases:
        cells = [LABELS[case]]
        for key, _label, fmt in COLUMNS:
            vals = [r.get(key) for r in results[case] if r.get(key) is not None]
            v = statistics.median(vals) if vals else None
            cell = _fmt(fmt, v)
            goal = GOALS.get(key)
            if goal and v is not None and not goal[1](v):
                cell += " OVER"
                over += 1
            cells.append(cell)
        rows.append(cells)
    if cap:
        def med(key):
            vals = [r[key] for r in cap if r.get(key) is not None]
            return statistics.median(vals) if vals else None

        cells = ["4.5 MB, cut at the 4 MiB cap", _fmt("{:.2f}", med("cap_enter_to_error")), "-", "-",
                 _fmt("ms", med("cap_echo_max")), "-", "-", _fmt("{:.1f}", med("rss_rest")),
                 _fmt("{:.1f}", med("cap_rss_after")), _fmt("{:.1f}", med("cap_rss_peak")), "-", "-"]
        if med("cap_rss_peak") is not None and med("cap_rss_peak") > 100:
            cells[9] += " OVER"
            over += 1
        rows.append(cells)
    return rows, over


def print_rows(rows) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, r in enumerate(rows):
        print("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("goals: " + "; ".join(f"{k} {g[0]}" for k, g in GOALS.items()))
