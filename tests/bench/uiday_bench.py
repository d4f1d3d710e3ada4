"""The long day's UI alone, in seconds: what makes PgUp slower after a long day (issue 16)?

    .venv/bin/python tests/bench/uiday_bench.py [--turns 300] [--runs 3]
                                                [--keep-rows | --keep-evicted | --no-relayout]

Three dashfloat processes in ptys (120x40) whose Agent is replaced by one that plays the long
day's answers at once (tests/bench/uiday/sitecustomize.py: no server, no tools, no
conversation): a day of `--turns` turns, a fresh session and a second fresh one (the control)
after five turns each, measured as the long day's bench measures (longday_bench.side_by_side:
echo probes, then PgUp cycles, who goes first taking turns): the main thread's CPU per PgUp
(schedstat), the PgUp times and the echo probes' CPU, day and control each against the fresh
session. --keep-rows keeps the rows of every line laid out (TranscriptPane.CACHE_LINES
unbounded) in all three; --keep-evicted keeps the cache as it is but never frees the rows it
drops (they are kept in a list); --no-relayout leaves a turn's rows where the stream laid them
out (TranscriptPane.lay_out_again, called when a turn ends, made a no-op).

What it showed on 2026-12-05 (300 turns, 109,907 lines, a day in ~5 s): the day x1.05-1.23
in CPU per key (median x1.12) against the control's x0.94-1.08, with the same work per key
(10,032 row look-ups and 109 layouts over 24 cycles in each process); with --keep-rows
x0.97-1.13 (median x1.03, RSS 83 instead of 65 MiB); with --keep-evicted x1.03-1.07 (PgUp
time x0.96-1.02); evicting half the row cache at once instead of a line at a time, or the
collector off during the probes: no change. So the day's keys do the same work on memory
laid out worse: the rows a key shows were laid out after ~22,000 evictions, in the holes the
freed rows left all over the heap.

Later the same day: keeping a line's rows packed (one bytes object and three small ones per
line, rows made when shown) moved nothing (x1.13 against x1.16, the fresh session slower);
dropping the rows when a turn ends, so that frames lay them out again together
(TranscriptPane.lay_out_again, now what DashFloat does), did: CPU per PgUp x1.00-1.04 and PgUp
time x1.00-1.03, against x1.02-1.14 and x1.07-1.14 with --no-relayout in the same alternation
of runs; echo CPU x0.99-1.04 against x1.04-1.07.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import longday_bench as lb  # noqa: E402
from benchlib import BenchTerm, clean_env, dashfloat_bin, vm_kib  # noqa: E402


class UIDay(lb.LongDay):
    """A LongDay whose answers the played Agent sends (no server)."""

    def __init__(self, tmp: Path, variant: str = ""):
        proj = tmp / "proj"
        lb.make_project(proj)
        env = clean_env(tmp)
        env.update(PYTHONPATH=str(HERE / "uiday"), DF_UIDAY="1")
        if variant:  # keep_rows, keep_evicted, no_relayout (uiday/sitecustomize.py)
            env[f"DF_UIDAY_{variant.upper()}"] = "1"
        self.keys_dir = None
        self.server = None
        argv = [dashfloat_bin(), "--base-url", "http://127.0.0.1:9/v1", "--model", "played", "-C", str(proj)]
        self.t = BenchTerm(argv, env, cols=lb.SIZE[0], rows=lb.SIZE[1])
        self.pid = self.t.pid
        self.lines = 0
        self.t.wait_screen(lambda s: s.status_has("idle"), 30, "the first full frame")
        self.t.quiet(0.3)

    def turn(self, n: int, _model=None) -> tuple[float, bool, float]:
        """Turn n (LongDay.turn's shape, for side_by_side; nothing is timed here)."""
        t = self.t
        prompt = f"[turn {n}] check the loader again"
        t.send(prompt)
        t.wait_screen(lambda s: prompt[-12:] in s.prompt_row(), 20, "the prompt text")
        t.send("\r")
        word = lb.end_word(n)
        t.wait_screen(lambda s: word in s.text and s.status_has("idle"), 60, f"the end of turn {n}")
        return 0.0, False, 0.0


def run(turns: int, variant: str = "") -> dict:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
            tempfile.TemporaryDirectory() as c:
        day = UIDay(Path(a), variant)
        t0 = time.monotonic()
        for n in range(1, turns + 1):
            day.turn(n)
        played = time.monotonic() - t0
        fresh, control = UIDay(Path(b), variant), UIDay(Path(c), variant)
        fresh.turn(1)
        control.turn(1001)
        m = lb.side_by_side(day, fresh, None, turns, control=control)  # the long day's own alternation
        out = {"played_s": played, "day_rss": vm_kib(day.pid, "VmRSS") / 1024,
               "fresh_rss": vm_kib(fresh.pid, "VmRSS") / 1024,
               **{f"{w}_cpu": v["pgup_cpu"] for w, v in m.items()}, **{f"{w}_pgup": v["pgup"] for w, v in m.items()},
               **{f"{w}_echo_cpu": v["echo_cpu"] for w, v in m.items()}}
        for s in (day, fresh, control):
            s.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--keep-rows", action="store_true", help="keep the rows of every line laid out")
    group.add_argument("--keep-evicted", action="store_true", help="free none of the rows the cache drops")
    group.add_argument("--no-relayout", action="store_true",
                       help="a turn's rows stay where the stream laid them out (TranscriptPane.lay_out_again off)")
    args = ap.parse_args(argv)
    for k in range(args.runs):
        variant = next((v for v in ("keep_rows", "keep_evicted", "no_relayout") if getattr(args, v)), "")
        r = run(args.turns, variant)
        f = r["fresh_cpu"]
        print(f"run {k + 1}: a day of {args.turns} turns played in {r['played_s']:.0f} s; main-thread CPU per "
              f"PgUp or End: fresh {f * 1000:.2f} ms, day x{r['day_cpu'] / f:.2f}, control x{r['control_cpu'] / f:.2f}; "
              f"PgUp time: day x{r['day_pgup'] / r['fresh_pgup']:.2f}, control x{r['control_pgup'] / r['fresh_pgup']:.2f}; "
              f"echo CPU: fresh {r['fresh_echo_cpu'] * 1000:.2f} ms, day x{r['day_echo_cpu'] / r['fresh_echo_cpu']:.2f}, "
              f"control x{r['control_echo_cpu'] / r['fresh_echo_cpu']:.2f}; "
              f"RSS day {r['day_rss']:.1f} MiB, fresh {r['fresh_rss']:.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
