"""The pyz figures (issue 15, section 3): the size of dist/dashfloat.pyz and how long it takes
to build, and its start-up beside the venv install's.

    .venv/bin/python tests/bench/pyz_bench.py [--runs 5]

Start-up is measured in a pty (80x24) against the scripted server, each run a fresh process:
exec -> the first frame (the status bar's " idle ": the early frame, painted before urwid
loads), and exec -> the app running (urwid's loop started: it turns bracketed paste on; a key
typed before is replayed then). Three ways:
the venv's `dashfloat`; `python3 -I -S dashfloat.pyz` with its bytecode cache filled (every
start after the first); and the first start of a pyz, with an empty cache (each module
compiled, as every start would be without the cache). One warm-up run each, not counted; the
runs go round robin.
-S because the interpreter here is not bare: its site-packages hold packages a server would
not have (trio, which urwid imports when it can find it), and -S leaves them out as a bare
server would. The second venv row (WCWIDTH_PYTHON=1: wcwidth's Python form, as in the pyz)
tells the cost of the pure-Python dependencies from the cost of the zip.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, BenchTerm, clean_env, dashfloat_bin  # noqa: E402
from benchtable import HEAD, print_rows  # noqa: E402

from tests import pyzbuild  # noqa: E402
from tests.fakeserver import ScriptedServer  # noqa: E402

SIZE_TARGET = pyzbuild.MAX_BYTES


def _python() -> str:
    """A Python >= 3.11 outside the venv (the venv's base interpreter)."""
    return os.path.realpath(sys.executable)


def startup(argv: list[str], env: dict) -> tuple[float, float]:
    term = BenchTerm(argv, env, cols=80, rows=24)
    try:
        t_frame = term.wait_screen(lambda s: s.status_has("idle"), 60, "the first full frame")
        # urwid turns bracketed paste on when its loop starts: the full app is running
        t_ready = term.wait_screen(lambda s: b"\x1b[?2004h" in s.raw, 60, "the app running")
        return t_frame - term.t_exec, t_ready - term.t_exec
    finally:
        term.close()


def run(runs: int = 5) -> list[tuple[str, str, str, str]]:
    base = Path(tempfile.mkdtemp(prefix="df-pyz-"))
    try:
        t0 = time.monotonic()
        pyz = pyzbuild.build_pyz(base / "dashfloat.pyz")
        build = time.monotonic() - t0
        size = pyz.stat().st_size
        (base / "home").mkdir()
        python = _python()
        with ScriptedServer(models=["bench-model"]) as server:
            args = ["--base-url", server.url, "--model", "bench-model"]
            env = clean_env(base, PATH=f"{os.path.dirname(python)}:/usr/bin:/bin",
                            XDG_CACHE_HOME=str(base / "cache"))

            def fresh_cache() -> dict:
                shutil.rmtree(base / "cold", ignore_errors=True)
                return dict(env, XDG_CACHE_HOME=str(base / "cold"))

            cases = {
                "venv install": lambda: startup([dashfloat_bin(), *args], env),
                "venv, wcwidth without its C extension": lambda: startup([dashfloat_bin(), *args],
                                                                         dict(env, WCWIDTH_PYTHON="1")),
                "pyz, bytecode cached": lambda: startup([python, "-I", "-S", str(pyz), *args], env),
                "pyz, first start (empty cache)": lambda: startup([python, "-I", "-S", str(pyz), *args],
                                                                  fresh_cache()),
            }
            figures: dict = {name: [] for name in cases}
            for case in cases.values():
                case()  # warm-up: page cache, and the pyz's bytecode cache for the cached case
            for _ in range(runs):  # round robin: a busy moment of the machine hits every case
                for name, case in cases.items():
                    figures[name].append(case())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = [
        ("size of dist/dashfloat.pyz", f"{size:,} bytes ({size / 1e6:.2f} MB)", f"<= {SIZE_TARGET / 1e6:g} MB",
         "ok" if size <= SIZE_TARGET else "OVER"),
        ("time to build it (make pyz)", f"{build:.2f} s", "-", "-"),
    ]
    for name, values in figures.items():
        frame = statistics.median(v[0] for v in values)
        echo = statistics.median(v[1] for v in values)
        rows.append((f"{name}: exec -> first frame / -> app running (median of {runs})",
                     f"{frame:.3f} / {echo:.3f} s", "-", "-"))
    return rows


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"pyz figures: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {ROOT}")
    missed = print_rows([HEAD, *run(args.runs)])
    print(f"pyz figures missing their target: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
