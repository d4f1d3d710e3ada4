"""One huge answer of the huge bench with DashFloat traced (apptrace/sitecustomize.py), and
each echo probe lined up with what the app did meanwhile: where a slow echo's time went.

    .venv/bin/python tests/bench/trace_huge.py one_line|words|lines|code|cap [log]

Prints the case's figures, the worst probes with the app's events around them (times in ms
from the keystroke: `in` the key read, `cb` a callback and its CPU, `fl` a frame written,
`sel` a select that returned), the PROFILE tables are in the log, and a table of the worst
echoes split into keystroke -> key read -> next frame written -> bench's read of it.
"""

from __future__ import annotations

import bisect
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import huge_bench as hb  # noqa: E402
from server_process import ServerProcess  # noqa: E402


def main() -> None:
    case = sys.argv[1] if len(sys.argv) > 1 else "lines"
    log = Path(sys.argv[2] if len(sys.argv) > 2 else f"/tmp/dashfloat-trace-{case}.log")
    log.write_text("")
    sys.setswitchinterval(0.0005)  # as run_bench: the pty reader stamps its reads at once
    clean_env = hb.clean_env

    def traced_env(tmp, **extra):
        env = clean_env(tmp, **extra)
        env["PYTHONPATH"] = str(HERE / "apptrace")
        env["DF_TRACE"] = str(log)
        return env

    hb.clean_env = traced_env
    probes = []
    echo = hb.HugeSession.echo

    def timed_echo(self, ch, shown):
        t0 = time.monotonic()
        d = echo(self, ch, shown)
        probes.append((t0, d, ch))
        return d

    hb.HugeSession.echo = timed_echo
    with ServerProcess(models=["bench-model"]) as server:
        r = hb.case_cap(server) if case == "cap" else hb.case_dashfloat(server, case, 1.0)
    print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    events, ins, flushed = [], [], []
    for line in log.read_text().splitlines():
        p = line.split()
        if p and p[0] in ("it", "sel", "fl", "cb", "in"):
            events.append((float(p[1]), p))
            if p[0] == "in":
                ins.append(float(p[1]))
            elif p[0] == "fl":
                flushed.append(float(p[2]))
    events.sort(key=lambda e: e[0])
    times = [e[0] for e in events]
    for t0, d, ch in sorted(probes, key=lambda p: -p[1])[:6]:
        print(f"--- probe {ch!r}: echo {d * 1000:.1f} ms")
        i = bisect.bisect_left(times, t0 - 0.06)
        while i < len(events) and events[i][0] < t0 + d + 0.005:
            p = events[i][1]
            rel = (float(p[1]) - t0) * 1000
            rest = " ".join(p[2:]) if p[0] == "in" else f"-> {(float(p[2]) - t0) * 1000:7.1f}  " + " ".join(p[3:])
            print(f"   {p[0]:4} {rel:7.1f} {rest}")
            i += 1
    rows = []
    for t0, d, _ch in probes:
        i = bisect.bisect_left(ins, t0)
        j = bisect.bisect_left(flushed, ins[i]) if i < len(ins) else len(flushed)
        if j < len(flushed):
            rows.append((d, ins[i] - t0, flushed[j] - ins[i], t0 + d - flushed[j]))
    print(f"echo ms | keystroke -> read | read -> next frame | frame -> bench read   (worst 12 of {len(rows)})")
    for row in sorted(rows, reverse=True)[:12]:
        print("  " + " | ".join(f"{x * 1000:6.1f}" for x in row))
    print(f"log: {log}")


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()
