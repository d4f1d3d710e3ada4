"""Looking for processes in /proc: what the leak tests use to prove nothing was left."""

from __future__ import annotations

import os
import time


def wait_for(condition, timeout: float = 3.0, interval: float = 0.005):
    """Poll `condition` until it is truthy or `timeout` passes; returns its last value
    (so `assert wait_for(...)` fails with the state it saw)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def live_with_marker(mark: str) -> list[int]:
    """Pids of live (not zombie) processes, other than this one, whose command line
    contains `mark`."""
    needle = mark.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: the state follows the last ")"
        state = raw[raw.rfind(b")") + 2 :].split()[:1]
        if needle in cmdline and state not in ([b"Z"], [b"X"]):
            found.append(int(name))
    return found
