"""`make test`: the whole suite as two pytest runs side by side, the end-to-end tests and the rest.

The end-to-end tests (tests/e2e: six minutes) mostly wait: on a pty, on a DashFloat child,
on a scripted server. The rest (five minutes) is CPU in this process. One after the other
they took ten minutes on CI's two CPUs; side by side they take the longer of the two. No
plugin: two processes, and never two end-to-end tests at once (their timings stay those of
a machine with one test's load beside them, as every e2e test is written for).

    python tests/run_suite.py [PYTEST ARGS ...]

Arguments go to both runs (-k, -x, --durations...). Arguments that name tests (a path, a
node id) make it one plain pytest run of those. Each run's output is printed whole when it
ends (the e2e run's first if both end together), with a line a minute meanwhile; the exit
status is the first failing run's (no tests collected in one run is not a failure when the
other ran some).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEARTBEAT = 60.0  # s between "still running" lines (CI logs that stay silent look hung)
NO_TESTS = 5  # pytest's exit status when it collected nothing


def names_tests(arg: str) -> bool:
    return not arg.startswith("-") and (ROOT / arg.split("::")[0]).exists()


def main(argv: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest"]
    if any(names_tests(a) for a in argv):
        return subprocess.call([*pytest, *argv], cwd=ROOT)
    work = Path(tempfile.mkdtemp(prefix="dashfloat-suite-"))
    groups = {
        "end-to-end tests (tests/e2e)": ["tests/e2e"],
        "the rest": ["tests", "--ignore=tests/e2e"],
    }
    runs = {}
    for n, (name, paths) in enumerate(groups.items()):
        out = (work / f"out{n}").open("w+b")
        args = [*pytest, *argv, "--basetemp", str(work / f"tmp{n}"), "-o", f"cache_dir=.pytest_cache/{n}", *paths]
        runs[name] = (subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT), out)
        print(f"started: {name}", flush=True)
    started = time.monotonic()
    statuses: dict[str, int] = {}
    try:
        next_beat = started + HEARTBEAT
        while len(statuses) < len(runs):
            for name, (proc, out) in runs.items():
                if name not in statuses and proc.poll() is not None:
                    statuses[name] = proc.returncode
                    out.seek(0)
                    print(f"\n===== {name}: exit status {proc.returncode} after "
                          f"{time.monotonic() - started:.0f} s =====", flush=True)
                    sys.stdout.buffer.write(out.read())
                    sys.stdout.flush()
            if time.monotonic() >= next_beat:
                left = ", ".join(n for n in runs if n not in statuses)
                print(f"still running after {time.monotonic() - started:.0f} s: {left}", flush=True)
                next_beat += HEARTBEAT
            time.sleep(0.2)
    finally:
        for proc, out in runs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
            out.close()
    print(f"\nthe whole suite: {time.monotonic() - started:.0f} s; "
          + "; ".join(f"{name}: {'passed' if s == 0 else f'exit status {s}'}" for name, s in statuses.items()))
    status = overall(list(statuses.values()))
    if status == 0:
        shutil.rmtree(work, ignore_errors=True)  # kept after a failure: its tmp_path dirs
    return status


def overall(statuses: list[int]) -> int:
    """The suite's exit status from its runs' (in the order they ended)."""
    failed = [s for s in statuses if s not in (0, NO_TESTS)]
    if failed:
        return failed[0]
    if all(s == NO_TESTS for s in statuses):
        return NO_TESTS
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
