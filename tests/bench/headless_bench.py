"""The headless figures of issue 11: the time from exec to the first request in `-p` mode
(target <= 0.15 s), with the whole run and its CPU beside it, and `dashfloat --version`
for the floor (Python and the entry point alone).

    .venv/bin/python tests/bench/headless_bench.py [--runs 10]

Each run is a fresh `dashfloat -p PROMPT --model M` process (no tty, TERM=dumb, stdin
/dev/null, its session journalled as by default) against the scripted server in a thread
of this process; the server stamps each request with time.monotonic() when it has read it.
One warm-up run first (page cache, bytecode), not counted.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchtable import HEAD, print_rows  # noqa: E402

from tests.fakeserver import ScriptedServer, sse_reply  # noqa: E402

TARGET = 0.15
BIN = Path(sys.executable).parent / "dashfloat"


def _env(home: Path) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"), "TERM": "dumb", "LANG": "C.UTF-8"}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_of(pid: int) -> float:
    """CPU seconds (on-CPU time of every thread, /proc/PID/task/*/schedstat) of a live process."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def one_run(server: ScriptedServer, home: Path, project: Path) -> dict:
    """One `dashfloat -p`: exec -> first request (wall, and the process's CPU by then),
    exec -> exit, CPU of the whole run."""
    hold = threading.Event()
    server.push(sse_reply(["ok"], hold_headers=hold))  # the process waits while its CPU is read
    before = len(server.requests)
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    proc = subprocess.Popen([str(BIN), "-p", "say ok", "--model", "bench-model", "--base-url", server.url, "-C",
                             str(project)], env=_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        server.wait_requests(before + 1, timeout=30)
        cpu_first = _cpu_of(proc.pid)
    finally:
        hold.set()
    out, err = proc.communicate(timeout=60)
    t_exit = time.monotonic() - t0
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0 or out != b"ok\n":
        raise RuntimeError(f"dashfloat -p failed ({proc.returncode}): {err.decode()[-500:]}")
    req = server.requests[before]
    return {"first_request": req["time"] - t0, "cpu_first": cpu_first, "exit": t_exit, "cpu": cpu}


def version_run(home: Path) -> float:
    t0 = time.monotonic()
    subprocess.run([str(BIN), "--version"], env=_env(home), stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=60, check=True)
    return time.monotonic() - t0


def run(runs: int = 10) -> list[tuple[str, str, str, str]]:
    base = Path(tempfile.mkdtemp(prefix="df-headless-"))
    home, project = base / "home", base / "project"
    home.mkdir()
    project.mkdir()
    with ScriptedServer(models=["bench-model"]) as server:
        one_run(server, home, project)  # warm-up
        figures = [one_run(server, home, project) for _ in range(runs)]
    versions = [version_run(home) for _ in range(runs)]
    first = [f["first_request"] for f in figures]
    med = statistics.median(first)
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    return [
        (f"exec -> first request, dashfloat -p (median of {runs})", f"{med:.3f} s", f"<= {TARGET} s",
         "ok" if med <= TARGET else "OVER"),
        ("  fastest / slowest", f"{min(first):.3f} / {max(first):.3f} s", "-", "-"),
        ("  CPU the process used by then, all threads (median)",
         f"{statistics.median(f['cpu_first'] for f in figures):.3f} s", "-", "-"),
        ("exec -> exit, a one-line answer (median; includes the wait above)", f"{statistics.median(f['exit'] for f in figures):.3f} s", "-", "-"),
        ("CPU of that run, user + system (median)", f"{statistics.median(f['cpu'] for f in figures):.3f} s", "-", "-"),
        ("for scale: exec -> exit of dashfloat --version (median)", f"{statistics.median(versions):.3f} s", "-", "-"),
    ]


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    print(f"headless figures: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    missed = print_rows([HEAD, *run(args.runs)])
    print(f"headless figures missing their target: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
