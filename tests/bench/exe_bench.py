"""The single executable's figures (issue 15, section 3): the size of dist/dashfloat-<arch>
(make exe) and its start-up beside the pyz's and the venv install's.

    .venv/bin/python tests/bench/exe_bench.py [--runs 7]

Measured only when dist/ holds an executable built from this working tree (`make exe`; a
build takes ~30 s, too long to hide inside the bench): otherwise the section says so in one
line. Start-up as pyz_bench.py measures it, in a pty (80x24) against the scripted server,
each run a fresh process: exec -> the first frame (the status bar's " idle ") and exec ->
the app running (urwid's loop started); and exec -> exit of `--version`. Three ways, round
robin after one warm-up run each: the venv's `dashfloat`, `python3 -I -S dashfloat.pyz`
(bytecode cached) and the executable, which unpacks Python into a fresh directory under
$TMPDIR at every start and removes it at exit: most of what it costs beyond the others.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, clean_env, dashfloat_bin  # noqa: E402
from benchtable import HEAD, print_rows  # noqa: E402
from pyz_bench import startup  # noqa: E402

from tests import exebuild, pyzbuild  # noqa: E402
from tests.fakeserver import ScriptedServer  # noqa: E402

EXE = ROOT / "dist" / exebuild.NAME


def missing() -> str | None:
    """Why the figures cannot be measured (one line), or None."""
    if not EXE.is_file():
        return f"dist/{exebuild.NAME} is not built (make exe)"
    if not exebuild.is_fresh(EXE):
        return f"dist/{exebuild.NAME} was not built from this working tree (make exe)"
    return None


def version_time(argv: list[str], env: dict) -> float:
    t0 = time.monotonic()
    done = subprocess.run([*argv, "--version"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    took = time.monotonic() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} --version failed ({done.returncode}): {done.stderr.decode()[-300:]}")
    return took


def run(runs: int = 7) -> list[tuple[str, str, str, str]]:
    base = Path(tempfile.mkdtemp(prefix="df-exe-"))
    try:
        pyz = pyzbuild.build_pyz(base / "dashfloat.pyz")
        (base / "home").mkdir()
        python = os.path.realpath(sys.executable)
        size, pyz_size = EXE.stat().st_size, pyz.stat().st_size
        with ScriptedServer(models=["bench-model"]) as server:
            args = ["--base-url", server.url, "--model", "bench-model"]
            env = clean_env(base, PATH=f"{os.path.dirname(python)}:/usr/bin:/bin", XDG_CACHE_HOME=str(base / "cache"))
            ways = {
                "venv install": [dashfloat_bin()],
                "pyz, bytecode cached": [python, "-I", "-S", str(pyz)],
                f"executable ({exebuild.NAME})": [str(EXE)],
            }
            frames: dict = {name: [] for name in ways}
            versions: dict = {name: [] for name in ways}
            for argv in ways.values():  # warm-up: page cache, the pyz's bytecode cache
                startup([*argv, *args], env)
                version_time(argv, env)
            for _ in range(runs):  # round robin: a busy moment of the machine hits every way
                for name, argv in ways.items():
                    frames[name].append(startup([*argv, *args], env))
                    versions[name].append(version_time(argv, env))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = [
        (f"size of dist/{exebuild.NAME} (the pyz: {pyz_size / 1e6:.1f} MB)",
         f"{size:,} bytes ({size / 1e6:.1f} MB)", "-", "-"),
        ("glibc it needs", ".".join(map(str, exebuild.required_glibc(EXE))), "-", "-"),
    ]
    for name in ways:
        frame = statistics.median(v[0] for v in frames[name])
        ready = statistics.median(v[1] for v in frames[name])
        version = statistics.median(versions[name])
        rows.append((f"{name}: exec -> first frame / -> app running / --version (median of {runs})",
                     f"{frame:.3f} / {ready:.3f} / {version:.3f} s", "-", "-"))
    return rows


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    why = missing()
    if why:
        print(f"executable figures skipped: {why}")
        return 0
    print(f"executable figures: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {ROOT}")
    missed = print_rows([HEAD, *run(args.runs)])
    print(f"executable figures missing their target: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
