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


def worker_threads(pid: int) -> list[int]:
    """The thread ids of `pid` but its main thread."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid]
    except FileNotFoundError:
        return []


def kill_a_worker_thread(pid: int, signum: int) -> int:
    """kill(2) of one of `pid`'s threads but the main one: the process's signal, which that
    thread takes. Returns its id; a thread that ended meanwhile is passed over."""
    for tid in worker_threads(pid):
        try:
            os.kill(tid, signum)
        except ProcessLookupError:
            continue
        return tid
    raise AssertionError(f"{pid} has no thread beside its main one")


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


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, session id) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[3])


def gone(pid: int, mark: str) -> bool:
    """Whether the process `pid` (a `sleep MARK`) is dead and reaped: no /proc entry, or the pid
    now belongs to a live process without the mark. A zombie is not gone."""
    state = stat_of(pid)
    if state is None:
        return True
    if state[0] in ("Z", "X"):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return mark.encode() not in f.read()
    except OSError:
        return True


# Ways a command detaches a process from its process group (and so from a process-group kill),
# each a shell fragment that starts `sleep {m}` detached and writes that process's pid into
# {d}/{n}.pid once it has detached. {py} is a Python interpreter.
_PID = "echo $$ >{d}/{n}.tmp && mv {d}/{n}.tmp {d}/{n}.pid && exec sleep {m}"
ESCAPES: dict[str, str] = {
    # a new session (setsid(1))
    "setsid": f"setsid sh -c '{_PID}' &",
    # nohup and a new session, output away from the pipe
    "nohup": f"nohup setsid sh -c '{_PID}' >/dev/null 2>&1 &",
    # a double fork: the middle process exits at once, the grandchild is an orphan in a new session
    "double_fork": f"(setsid sh -c '{_PID}' &) &",
    # ignores SIGTERM and SIGHUP (sleep inherits the ignored signals through exec)
    "ignores_term": "setsid sh -c \"trap '' TERM HUP; " + _PID.replace("$$", "\\$\\$") + '" &',
    # a daemon: fork, setsid, fork, chdir /, every descriptor on /dev/null (only its environment
    # still tells where it came from)
    "daemon": (
        '{py} -S -c "import os, sys\n'
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "os.chdir('/')\n"
        "null = os.open(os.devnull, os.O_RDWR)\n"
        "[os.dup2(null, fd) for fd in (0, 1, 2)]\n"
        "os.closerange(3, 256)\n"
        "open('{d}/{n}.tmp', 'w').write(str(os.getpid()))\n"
        "os.rename('{d}/{n}.tmp', '{d}/{n}.pid')\n"
        "os.execvp('sleep', ['sleep', '{m}'])\""
    ),
    # a new session with a cleared environment (only the output pipe it holds tells)
    "cleared_env": f"setsid env -i /bin/sh -c '{_PID}' &",
}


def escape_command(names, mark: str, directory: str, py: str) -> str:
    """A shell fragment that detaches one `sleep MARK` per escape in `names` and returns only
    once all of them have detached (it waits for their pid files, polling); ends with "; "."""
    out = ""
    for name in names:
        escape = ESCAPES[name].format(d=directory, n=name, m=mark, py=py)
        out += escape + (" " if escape.endswith("&") else "; ")
        # the pid file, and its process runs sleep already: the mv that wrote the file has
        # exited (a busy machine counted it among the processes left behind)
        pid = f"{directory}/{name}.pid"
        out += (f"while [ ! -e {pid} ] || ! grep -qx sleep /proc/$(cat {pid})/comm 2>/dev/null; "
                "do sleep 0.01; done; ")
    return out


def escaped_pids(names, directory: str) -> dict[str, int]:
    """The pids the escapes wrote (after escape_command's fragment has run)."""
    found = {}
    for name in names:
        with open(os.path.join(directory, f"{name}.pid")) as f:
            found[name] = int(f.read().strip())
    return found
