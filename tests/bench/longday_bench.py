"""A long day (issue 16 §2): 300 turns with tool calls and a transcript of 100,000 lines;
echo, PgUp and the time to the first token of the next answer stay within 10% of turn 1.

One dashfloat process in a pty (120x40, confined to a scratch project with -C) against the
scripted server, whose responder plays a model that reads its conversation:
  every turn    a first episode with a short text (a word unique to the turn: its first
                token) and two calls that run without a question (read_file, list_directory);
                the calls are held until that word reached the terminal (else a fast turn
                scrolls it away before a frame shows it); then an answer of about 330 rows (a paragraph, a list of 60 items, a python
                block of 250 lines, a closing paragraph with the turn's end marker), sent in
                2 KB pieces as fast as the server can
  every 10th    (turns 5, 15, ...) a write_file, and (turns 10, 20, ...) an execute_command,
                each between the reads and the answer: its preview is answered with `y`
  compaction    the default 32,768-token window fills every few turns; a summary request (no
                tools) is answered with a short summary in the fixed headings
At checkpoints (turn 1, a quarter, half, three quarters, the last), once the turn is idle:
  echo          an "x" typed at the prompt -> its echo on the prompt row, then its backspace
                (20 probes each way; the median), timed at the pty read that brought it
  PgUp          PgUp -> the screen changed and then quiet for 100 ms (the time of the last
                read), three pages up then End, four times (the median of 12)
  RSS           VmRSS
  main CPU      the main (UI) thread's CPU over the echo probes and over the PgUps, per key:
                the work, which the load of a shared machine moves less than the times
and for every turn Enter -> the pty read that brought the turn's first word (first token)
and the CPU dashfloat used from Enter to idle; the figure at a checkpoint is the median
(CPU: the mean) of the nine turns ending there (the first: turns 1-9), turns that compacted
left out (their summary request comes first).
Last, a fresh session is started beside the long one and after its first turn both are
measured in alternation (fifteen turns each (their first token without the turns that compacted), then an echo probe each, 20 times, then a PgUp
cycle each, 12 times, who goes first taking turns): turn 1 against turn 300 at the same moment, so the load of a shared
machine, which moves over the minutes between turn 1 and turn 300, weighs on both alike. A
second fresh session is measured in the same rounds, a control: what two equal sessions
differ by here, the noise the day's ratio stands in.

    .venv/bin/python tests/bench/run_bench.py --longday-only [--longday-turns 300]
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

QUERY = b"\x1b[6n"  # the frame clock's question (dashfloat/ui/frameclock.py)

from benchlib import (  # noqa: E402
    BenchTerm,
    MeasureError,
    ProcSample,
    clean_env,
    dashfloat_bin,
    vm_kib,
)
from benchtable import HEAD, print_rows  # noqa: E402

from tests.fakeserver import sse_reply  # noqa: E402, I001

SIZE = (120, 40)
TURNS = 300
WINDOW = 9  # turns per first-token median
ECHO_PROBES = 20
PGUP_CYCLES = 4
PGUP_PER_CYCLE = 3
GOAL = 1.10  # a figure at the end over its turn-1 value
PGUP = "\x1b[5~"
END = "\x1b[4~"
APPLY = "Apply? y approve"
SUMMARY = "\n".join(f"## {h}\n- the work of the day so far, in one line." for h in (
    "Goal", "Decisions", "Files touched", "Commands that worked or failed", "Open problems", "Exact next steps"))

_WORDS = ("the loader reads each layer and keeps the first value it finds for every key while errors name "
          "the file and the key so that a user can fix them at once").split()


def start_word(n: int) -> str:
    return f"Begin{n}q"


def end_word(n: int) -> str:
    return f"Finish{n}z"


def answer_text(n: int) -> str:
    """About 330 rows at 120 columns: every source line is shorter than a row."""
    words = [_WORDS[(n + i) % len(_WORDS)] for i in range(40)]
    para = " ".join(words[:14]).capitalize() + "."
    items = "\n".join(f"- step {i} of turn {n}: {_WORDS[(n * 7 + i) % len(_WORDS)]} `key_{i}`" for i in range(60))
    code = "\n".join(f"    value_{i} = compute({n}, {i}, key='{_WORDS[(n + i) % len(_WORDS)]}')  # line {i}"
                     for i in range(250))
    return (f"Here is what turn {n} found. {para}\n\n{items}\n\n```python\ndef turn_{n}():\n{code}\n```\n\n"
            f"That is all for this turn: {end_word(n)}")


ANSWER_ROWS = len(answer_text(1).splitlines())


def pieces(text: str, size: int = 2048) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _call(cid: str, name: str, args: dict, index: int) -> list[dict]:
    return [{"index": index, "id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]


class Model:
    """The responder: reads the request to know the turn and the episode (stateless, so a
    compaction between episodes changes nothing); counts the summary requests."""

    def __init__(self):
        self.summaries = 0
        self.gates: dict[int, threading.Event] = {}  # turn -> set once its first word was seen

    def gate(self, n: int) -> threading.Event:
        return self.gates.setdefault(n, threading.Event())

    def __call__(self, req: dict):
        body = req["json"]
        if not body.get("tools"):  # the compaction's summary request
            self.summaries += 1
            return sse_reply([SUMMARY], model="bench-model", usage={"prompt_tokens": 9000, "completion_tokens": 120})
        msgs = body["messages"]
        k = max(i for i, m in enumerate(msgs) if m.get("role") == "user" and "[turn " in (m.get("content") or ""))
        n = int(msgs[k]["content"].split("[turn ", 1)[1].split("]", 1)[0])
        episode = sum(1 for m in msgs[k + 1:] if m.get("role") == "assistant")
        usage = {"prompt_tokens": 1000, "completion_tokens": 500}
        if episode == 0:
            calls = [_call(f"r{n}", "read_file", {"path": f"src/mod{n % 6}.py"}, 0),
                     _call(f"l{n}", "list_directory", {"path": "src"}, 1)]
            # the calls wait until the first word is on screen: else a fast turn would
            # scroll it away before a frame showed it
            return sse_reply([f"{start_word(n)} I will look at the code first."], tool_calls=calls,
                             finish_reason="tool_calls", model="bench-model", usage=usage,
                             waits={2: self.gate(n)})
        if episode == 1 and n % 10 == 5:
            return sse_reply([], tool_calls=[_call(f"w{n}", "write_file", {
                "path": f"notes/turn{n}.md", "content": f"# turn {n}\n\nchecked the loader.\n"}, 0)],
                finish_reason="tool_calls", model="bench-model", usage=usage)
        if episode == 1 and n % 10 == 0:
            return sse_reply([], tool_calls=[_call(f"x{n}", "execute_command", {"command": f"echo turn {n}"}, 0)],
                             finish_reason="tool_calls", model="bench-model", usage=usage)
        return sse_reply(pieces(answer_text(n)), model="bench-model", usage=usage)


def make_project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    for i in range(6):
        (root / "src" / f"mod{i}.py").write_text(
            "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(40 + 10 * i)))


class LongDay:
    def __init__(self, server, tmp: Path, profile: Path | None = None, keys_dir: Path | None = None):
        self.server = server
        proj = tmp / "proj"
        make_project(proj)
        env = clean_env(tmp)
        if keys_dir is not None:  # SIGUSR1/SIGUSR2 profile the main thread (apptrace/sitecustomize.py)
            env.update(PYTHONPATH=str(Path(__file__).resolve().parent / "apptrace"), DF_PROFILE_DIR=str(keys_dir))
        self.keys_dir = keys_dir
        args = ["--base-url", server.url, "--model", "bench-model", "-C", str(proj)]
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "dashfloat", *args] \
            if profile is not None else [dashfloat_bin(), *args]
        self.t = BenchTerm(argv, env, cols=SIZE[0], rows=SIZE[1])
        self.pid = self.t.pid
        self.lines = 0  # the transcript's lines, as the status bar says while scrolled
        self.t.wait_screen(lambda s: s.status_has("idle"), 30, "the first full frame")
        self.t.quiet(0.3)

    def turn(self, n: int, model: Model) -> tuple[float, bool, float]:
        """One turn: (Enter -> its first word on screen, whether it compacted first, the CPU
        seconds dashfloat used from Enter to idle, every thread)."""
        t = self.t
        before = model.summaries
        cpu0 = ProcSample.take(self.pid).cpu
        prompt = f"[turn {n}] check the loader again"
        t.send(prompt)
        t.wait_screen(lambda s: prompt[-12:] in s.prompt_row(), 20, "the prompt text")
        mark = len(t.raw)
        t_enter = time.monotonic()
        t.send("\r")
        try:
            t_first = self.raw_seen(start_word(n).encode(), mark, f"the first word of turn {n}")
        finally:
            model.gate(n).set()
            model.gates.pop(n - 1, None)
        if n % 10 in (0, 5):
            t.wait_screen(lambda s: APPLY in s.text and s.status_has("confirming"), 30, f"the question of turn {n}")
            t.send("y")
        self.raw_seen(end_word(n).encode(), mark, f"the end of turn {n}")
        t.wait_screen(lambda s: s.status_has("idle"), 60, f"idle after turn {n}")
        with self.server._cond:  # the recorded requests would keep every body of the day
            self.server.requests.clear()
        return max(0.0, t_first - t_enter), model.summaries > before, ProcSample.take(self.pid).cpu - cpu0

    def raw_seen(self, word: bytes, start: int, what: str, timeout: float = 60.0) -> float:
        """Read until `word` is in the bytes written since offset `start`: the time of the
        read that brought it (a fast turn scrolls it off the screen within that read)."""
        t = self.t
        deadline = time.monotonic() + timeout
        while True:
            if t.raw.find(word, start) >= 0:
                return t.t_last_read
            start = max(start, len(t.raw) - len(word))
            got = t.read(0.02)
            if t.pending and (not got or QUERY in t.pending):
                # keep the emulator up to date while output pauses, and let it answer the
                # frame clock's question at once, as a terminal does (else the next frame
                # waited for the 20 ms pause: some first tokens measured that)
                t.sync()
            if t.eof or time.monotonic() > deadline:
                t.sync()
                raise MeasureError(f"timed out waiting for {what}; screen:\n{t.dump()}")

    def main_cpu(self) -> float:
        """The main thread's CPU time: from schedstat (nanoseconds) where the kernel has
        it, else from the clock ticks (10 ms: coarse for 40 keys of a millisecond each)."""
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/schedstat") as f:
                return int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return ProcSample.take(self.pid).cpu_main

    def echo(self, probes: int = ECHO_PROBES, profiled: bool = False) -> list[float]:
        """`probes` times an x and its backspace: the latency of each echo (profiled: see
        _profiled)."""
        if profiled:
            return self._profiled(lambda: self.echo(probes))
        t = self.t
        out = []
        for _ in range(probes):
            for ch, shown in (("x", True), ("\x7f", False)):
                t0 = time.monotonic()
                t.send(ch)
                t_read = t.wait_screen(lambda s, shown=shown: s.prompt_row().endswith("x") == shown, 10, "an echo")
                out.append(max(0.0, t_read - t0))
            t.read(0.02)
        return out

    def _profiled(self, probe):
        """`probe()` under a cProfile of the main thread, when keys_dir is set (written to
        keys_dir/main-N.pstats, N counting the profiles of the process from 1)."""
        if self.keys_dir is None:
            return probe()
        t = self.t
        os.kill(self.pid, signal.SIGUSR1)
        try:
            return probe()
        finally:
            n = len(list(self.keys_dir.glob("main-*.pstats")))
            os.kill(self.pid, signal.SIGUSR2)
            deadline = time.monotonic() + 10
            while len(list(self.keys_dir.glob("main-*.pstats"))) <= n and time.monotonic() < deadline:
                t.read(0.02)

    def _settle(self, t0: float, quiet: float = 0.1, timeout: float = 10.0) -> float:
        """Read until `quiet` s pass without output; the time of the last read after t0."""
        t = self.t
        last = None
        start = time.monotonic()
        while True:
            if t.read(0.01):
                last = t.t_last_read
            elif time.monotonic() - (last or start) >= quiet:
                break
            if time.monotonic() - start > timeout:
                raise MeasureError("the screen never went quiet after a key")
        t.sync()
        return (last - t0) if last is not None else None

    def pgup(self, cycles: int = PGUP_CYCLES, profiled: bool = False) -> list[float]:
        """`cycles` times three PgUps then End: the time of each PgUp (profiled: see _profiled)."""
        if profiled:
            return self._profiled(lambda: self.pgup(cycles))
        t = self.t
        out = []
        for _ in range(cycles):
            for _ in range(PGUP_PER_CYCLE):
                t.sync()
                before = t.text
                t0 = time.monotonic()
                t.send(PGUP)
                dt = self._settle(t0)
                if dt is None or t.text == before:
                    raise MeasureError(f"PgUp changed nothing; screen:\n{t.dump()}")
                out.append(dt)
                m = re.search(r" line \d+/(\d+) ", t.status())
                if m:
                    self.lines = int(m.group(1))
            t.send(END)
            self._settle(time.monotonic(), 0.15)
        return out

    def close(self) -> None:
        rc = self.t.quit()
        if rc not in (0, None):
            raise MeasureError(f"dashfloat exited with status {rc}")


SIDE_PGUP_CYCLES = 12  # PgUp cycles each in alternation (36 PgUps; a round of 3 moves ~10 %)
SIDE_TURNS = 15  # turns each in alternation (with 7, two equal sessions' first tokens differed by up to 10 %)


def side_by_side(day: LongDay, fresh: LongDay, model: Model, turns: int, rounds: int = SIDE_TURNS,
                 control: LongDay | None = None) -> dict:
    """The long session at its end and a fresh one after its first turn, measured in
    alternation (a turn each, then an echo probe each, then a PgUp cycle each, who goes
    first taking turns), so the load of the machine, which moves over minutes, weighs on
    both alike. `control`, a second fresh session, is measured in the same rounds: fresh
    against control is what two equal sessions differ by here (the noise a ratio of day to
    fresh stands in)."""
    who_s = [("day", day, turns + 1), ("fresh", fresh, 2)] + ([("control", control, 1002)] if control else [])
    out = {who: {"echo": [], "pgup": [], "first": [], "pgup_cpu": [], "echo_cpu": []} for who, _s, _n in who_s}
    def turn_about(i: int) -> list:  # who goes first changes every round (no place favoured)
        return who_s[i % len(who_s):] + who_s[:i % len(who_s)]

    for k in range(rounds):
        for who, s, n in turn_about(k):
            first, compacted, _cpu = s.turn(n + k, model)
            if not compacted:  # as in the day's own figure: a compaction's request comes first
                out[who]["first"].append(first)
    for _who, s, _n in who_s:
        s.t.quiet(0.3)

    for i in range(ECHO_PROBES):
        for who, s, _n in turn_about(i):
            c0 = s.main_cpu()
            times = s.echo(1)
            out[who]["echo"] += times
            out[who]["echo_cpu"].append((s.main_cpu() - c0) / len(times))
    for i in range(SIDE_PGUP_CYCLES):
        for who, s, _n in turn_about(i):
            c0 = s.main_cpu()
            times = s.pgup(1)
            out[who]["pgup"] += times
            out[who]["pgup_cpu"].append((s.main_cpu() - c0) / (len(times) + 1))
    return {who: {k: statistics.median(v) for k, v in d.items()} for who, d in out.items()}


def checkpoints(turns: int) -> list[int]:
    return sorted({1, max(1, turns // 4), max(1, turns // 2), max(1, 3 * turns // 4), turns})


def run(turns: int = TURNS, server=None, log=print, profile: Path | None = None,
        keys_dir: Path | None = None) -> tuple[list, dict]:
    """(the table's rows, every figure)."""
    from tests.fakeserver import ScriptedServer

    own = server is None
    if own:
        server = ScriptedServer(models=["bench-model"]).start()
    model = Model()
    server.responder = model
    marks = checkpoints(turns)
    first: list[tuple[float, bool, float]] = []  # per turn: (first token, compacted, CPU)
    at: dict[int, dict] = {}
    t_start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="dashfloat-longday-") as tmp:
            day = LongDay(server, Path(tmp), profile, keys_dir)
            try:
                for n in range(1, turns + 1):
                    first.append(day.turn(n, model))
                    if n in marks:
                        day.t.quiet(0.3)
                        c0 = day.main_cpu()
                        echo = day.echo(profiled=True)
                        c1 = day.main_cpu()
                        pgup = day.pgup(profiled=True)
                        c2 = day.main_cpu()
                        rec = {"rss": vm_kib(day.pid, "VmRSS") / 1024, "echo": echo, "pgup": pgup,
                               "echo_cpu": (c1 - c0) / len(echo), "pgup_cpu": (c2 - c1) / (len(pgup) + PGUP_CYCLES),
                               "lines": day.lines, "load": os.getloadavg()[0],
                               "elapsed": time.monotonic() - t_start, "summaries": model.summaries}
                        at[n] = rec
                        log(f"  turn {n}: echo median {statistics.median(rec['echo']) * 1000:.1f} ms "
                            f"(max {max(rec['echo']) * 1000:.0f}), "
                            f"PgUp median {statistics.median(rec['pgup']) * 1000:.1f} ms (max {max(rec['pgup']) * 1000:.0f}), "
                            f"first token {first[-1][0] * 1000:.0f} ms, CPU of the turn {first[-1][2] * 1000:.0f} ms, "
                            f"RSS {rec['rss']:.1f} MiB, {rec['lines']:,} lines, {model.summaries} compactions, "
                            f"load {rec['load']:.2f} ({rec['elapsed']:.0f} s)")
                log("  a fresh session beside it: a turn each, then echo and PgUp probes in alternation")
                with tempfile.TemporaryDirectory(prefix="dashfloat-longday-fresh-") as tmp2, \
                        tempfile.TemporaryDirectory(prefix="dashfloat-longday-control-") as tmp3:
                    fresh = LongDay(server, Path(tmp2))
                    control = None
                    try:
                        fresh.turn(1, model)
                        control = LongDay(server, Path(tmp3))
                        control.turn(1001, model)  # (turn numbers of its own: the model gates each)
                        both = side_by_side(day, fresh, model, turns, control=control)
                    except BaseException:
                        fresh.t.close()
                        if control is not None:
                            control.t.close()
                        raise
                    fresh.close()
                    control.close()
            except BaseException:
                day.t.close()
                raise
            day.close()
    finally:
        server.responder = None
        if own:
            server.stop()
    return table(turns, marks, first, at, model.summaries, time.monotonic() - t_start, both)


def window(turns: int, end: int) -> tuple[int, int]:
    """The turns whose median stands for checkpoint `end`: the nine ending there (the
    first checkpoint: turns 1-9)."""
    if end == 1:
        return 1, min(turns, WINDOW)
    return max(1, end - WINDOW + 1), end


def table(turns, marks, first, at, summaries, elapsed, both=None) -> tuple[list, dict]:
    def per_turn(end: int, k: int) -> tuple[float, str]:
        """The median of the window's turns (the mean for CPU: its clock ticks are 10 ms)."""
        lo, hi = window(turns, end)
        span = range(lo, hi + 1)
        vals = [first[i - 1][k] for i in span if not first[i - 1][1]] or [first[i - 1][k] for i in span]
        return (statistics.mean(vals) if k == 2 else statistics.median(vals)), f"{lo}-{hi}"

    figures = {"turns": turns, "summaries": summaries, "elapsed": elapsed, "at": {},
               "first_turn_alone": first[0][0]}
    for n in marks:
        f, span = per_turn(n, 0)
        cpu, _ = per_turn(n, 2)
        figures["at"][n] = {"echo": statistics.median(at[n]["echo"]), "pgup": statistics.median(at[n]["pgup"]),
                            "first": f, "span": span, "cpu": cpu, "rss": at[n]["rss"], "lines": at[n]["lines"],
                            "echo_max": max(at[n]["echo"]), "pgup_max": max(at[n]["pgup"]),
                            "echo_cpu": at[n]["echo_cpu"], "pgup_cpu": at[n]["pgup_cpu"],
                            "load": at[n]["load"]}
    a, z = figures["at"][marks[0]], figures["at"][marks[-1]]
    rows = []
    for key, label, goal in (
            ("echo", f"keystroke echo at the prompt (median of {2 * ECHO_PROBES})", True),
            ("echo_max", f"  the slowest of those {2 * ECHO_PROBES} echoes", False),
            ("echo_cpu", "  main-thread CPU per key (over the probes)", False),
            ("pgup", f"PgUp -> screen changed and quiet (median of {PGUP_CYCLES * PGUP_PER_CYCLE})", True),
            ("pgup_max", f"  the slowest of those {PGUP_CYCLES * PGUP_PER_CYCLE} PgUps", False),
            ("pgup_cpu", "  main-thread CPU per PgUp or End (over the probes)", False),
            ("first", f"Enter -> first token (median of turns {a['span']} -> {z['span']})", True),
            ("cpu", f"CPU of a turn, all threads (mean of turns {a['span']} -> {z['span']}; compactions left out)",
             False)):
        ratio = z[key] / a[key] if a[key] else float("inf")
        rows.append((f"{label}, turn 1 -> turn {turns}",
                     f"{a[key] * 1000:.1f} -> {z[key] * 1000:.1f} ms (x{ratio:.2f})",
                     f"<= x{GOAL:.2f}" if goal else "-", ("ok" if ratio <= GOAL else "OVER") if goal else "-"))
    if both is not None:
        figures["side_by_side"] = both
        f, d, c = both["fresh"], both["day"], both.get("control")
        for key, label, goal in (("echo", f"keystroke echo (median of {2 * ECHO_PROBES} each)", True),
                                 ("echo_cpu", f"  main-thread CPU per key (median of {ECHO_PROBES} probes each)", False),
                                 ("pgup", f"PgUp (median of {SIDE_PGUP_CYCLES * PGUP_PER_CYCLE} each)", True),
                                 ("pgup_cpu", "  main-thread CPU per PgUp or End (median of "
                                              f"{SIDE_PGUP_CYCLES} cycles each)", False),
                                 ("first", f"Enter -> first token (median of {SIDE_TURNS} turns each, compactions left out)", True)):
            ratio = d[key] / f[key] if f[key] else float("inf")
            rows.append((f"{label}: a fresh session's turn 1 -> this one's turn {turns}, in alternation",
                         f"{f[key] * 1000:.1f} -> {d[key] * 1000:.1f} ms (x{ratio:.2f})",
                         f"<= x{GOAL:.2f}" if goal else "-", ("ok" if ratio <= GOAL else "OVER") if goal else "-"))
            if c is not None and c[key]:
                rows.append(("    control: the same figure, a second fresh session against the first",
                             f"{f[key] * 1000:.1f} -> {c[key] * 1000:.1f} ms (x{c[key] / f[key]:.2f})", "-", "-"))
    rows.append((f"RSS, turn 1 -> turn {turns}", f"{a['rss']:.1f} -> {z['rss']:.1f} MiB", "-", "-"))
    rows.append(("transcript lines (the status bar's count), compactions of the context",
                 f"{a['lines']:,} -> {z['lines']:,}, {summaries}", "-", "-"))
    rows.append(("the whole day (wall clock)", f"{elapsed:.0f} s", "-", "-"))
    return rows, figures


def print_key_profiles(keys_dir: Path, top: int = 25) -> None:
    """The functions whose own time (tottime) over the echo probes, then over the PgUps, grew most from the first
    checkpoint's profile to the last, per key, beside their call counts."""
    import pstats

    files = sorted(keys_dir.glob("main-*.pstats"), key=lambda p: int(p.stem.split("-")[1]))
    if len(files) < 4:
        print(f"key profiles: {len(files)} written in {keys_dir}, four are needed")
        return

    def own(path, keys):
        st = pstats.Stats(str(path)).stats
        return {f"{Path(f).name}:{line}({name})": (tt / keys, nc / keys) for (f, line, name), (_cc, nc, tt, _ct, _c) in st.items()}

    # at each checkpoint: the echo probes' profile, then the PgUps'
    for what, first, last, keys in (("echo", files[0], files[-2], 2 * ECHO_PROBES),
                                     ("PgUp/End", files[1], files[-1], PGUP_CYCLES * (PGUP_PER_CYCLE + 1))):
        a, z = own(first, keys), own(last, keys)
        total_a, total_z = sum(v[0] for v in a.values()), sum(v[0] for v in z.values())
        print(f"{what}: main thread under cProfile, per key: {total_a * 1000:.2f} ms ({first.name}) -> "
              f"{total_z * 1000:.2f} ms ({last.name}); the functions whose own time grew most:")
        grew = sorted(z, key=lambda k: z[k][0] - a.get(k, (0, 0))[0], reverse=True)[:top]
        for k in grew:
            ta, na = a.get(k, (0.0, 0.0))
            tz, nz = z[k]
            print(f"  {(tz - ta) * 1e6:+8.1f} us  {ta * 1e6:8.1f} -> {tz * 1e6:8.1f} us, calls {na:7.1f} -> {nz:7.1f}  {k}")


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=TURNS)
    ap.add_argument("--profile", metavar="FILE", help="run dashfloat under cProfile, writing FILE")
    ap.add_argument("--profile-keys", metavar="DIR",
                    help="profile the main thread over each checkpoint's echo and PgUp probes (DIR/main-N.pstats) and "
                         "print the functions whose time per key grew most from the first to the last (the "
                         "times of such a run are the profiler's)")
    args = ap.parse_args(argv)
    keys_dir = Path(args.profile_keys) if args.profile_keys else None
    if keys_dir is not None:
        keys_dir.mkdir(parents=True, exist_ok=True)
        for old in keys_dir.glob("main-*.pstats"):
            old.unlink()
    print(f"a long day: {args.turns} turns, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    rows, _ = run(args.turns, profile=Path(args.profile) if args.profile else None, keys_dir=keys_dir)
    missed = print_rows([HEAD, *rows])
    if keys_dir is not None:
        print_key_profiles(keys_dir)
    print(f"long-day figures missing their target: {missed}; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
