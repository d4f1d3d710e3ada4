"""Every process a command started, found, counted and killed: DashFloat as a child subreaper.

A command that detaches (``setsid``, ``nohup ... &``, a double-forking daemon) leaves the process
group that exec kills, and its orphans would be reparented to init, out of reach. On Linux
DashFloat therefore makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, set
once, before the first command): a process whose parent dies is reparented to DashFloat instead,
so it stays findable in /proc, and DashFloat must reap it when it dies.

Which processes belong to a call (the rule, :meth:`Call.members`):

1. every descendant of the call's shell (``/proc/PID/task/*/children``);
2. every orphan, i.e. a child of DashFloat that is not the shell of another running call, that
   a. was seen as a member before (same pid and start time): while the command runs, exec
      takes a census every 0.1 s, or
   b. is in the call's session or process group (a background job after its shell exited), or
   c. carries ``DASHFLOAT_CALL=<this call's id>`` in its environment (exec sets it for the
      command; fork, exec, ``setsid`` and ``nohup`` all pass it on), or
   d. holds one of the call's pipes (its stdout, or the stdin of a hook) open, or
   e. is a zombie that started during the call, in a session other than DashFloat's (the
      middle process of a double fork that died before anyone saw it; only reaped);
3. every descendant of those.

Each piece of evidence survives what defeats another: leaving the session keeps the
environment and the pipe, ``env -i`` keeps the session and the pipe, a daemon that closes its
descriptors keeps its environment. Nothing else is touched: DashFloat's other children (the
Ctrl-G editor, a test's subprocess) match none of these, so they are neither killed nor reaped
and no stray ``waitpid`` steals an exit status that ``subprocess`` waits for. Zombies are reaped
by pid only, and only members (a pid cannot be reused while it is DashFloat's unreaped zombie).
The known gap: a process that leaves the session, clears its environment, closes the pipe and
is orphaned before the next census is not recognised; it runs on as DashFloat's child.

Ending a call (:meth:`Call.kill`, on every path) works in rounds: collect the whole member tree
first (killing a parent first would cut the links to its children), SIGKILL all of it, and
repeat until no live member is left. An orphan that cannot be judged yet is looked at again
for up to 0.5 s: one that is exiting (its environment and descriptors already gone; its
children come to DashFloat next), or whose environment reads empty (in the middle of an
execve, /proc shows an empty one). Then the members that ended as DashFloat's zombies are
reaped.

The process budget: :func:`child_limit` gives the RLIMIT_NPROC a command starts with (the
kernel then refuses its forks past the budget), and the census counts the call's tasks, so a
command past the budget is stopped even where the kernel does not apply the limit (root).
Without /proc (not Linux) every function here degrades to "nothing found"; exec still kills the
process group.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

MARKER_VAR = "DASHFLOAT_CALL"
DEFAULT_MAX_PROCESSES = 1024

_PR_SET_CHILD_SUBREAPER = 36
_PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit()
_KILL_ROUNDS_FOR = 3.0  # give up SIGKILLing after this long (a process stuck in the kernel)
_REAP_FOR = 1.0  # how long to wait for killed members to become zombies we can reap
_UNSURE_FOR = 0.5  # how long to wait for an orphan that cannot be judged yet (mid-exec, exiting)
_SEEN_CAP = 65536  # pids remembered per call (the census stops adding past this)

_subreaper: dict[int, bool] = {}  # pid -> whether it is a subreaper (a forked child is not)
_subreaper_lock = threading.Lock()
_ids = itertools.count(1)


def enable_subreaper() -> bool:
    """Make this process a child subreaper (once per process; Linux only). True if it is one."""
    pid = os.getpid()
    with _subreaper_lock:
        if pid not in _subreaper:
            _subreaper[pid] = _prctl_subreaper()
        return _subreaper[pid]


def _prctl_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            log.warning("exec: PR_SET_CHILD_SUBREAPER failed: %s", os.strerror(ctypes.get_errno()))
            return False
    except (OSError, AttributeError) as exc:
        log.warning("exec: cannot become a child subreaper: %s", exc)
        return False
    return True


def new_marker() -> str:
    """A call id unique on this machine while DashFloat runs: ``<DashFloat pid>-<n>``."""
    return f"{os.getpid()}-{next(_ids)}"


# -- /proc -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    """What /proc/PID/stat says about one process."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    sid: int
    flags: int
    threads: int
    start: int  # start time in clock ticks since boot: with the pid, identifies the process

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X", "x")

    @property
    def exiting(self) -> bool:
        """In exit() but not yet a zombie: its environment and descriptors may be gone."""
        return bool(self.flags & _PF_EXITING)


def _read(path: str) -> bytes | None:
    """A small /proc file whole (plain os calls: a census reads thousands of them), or None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_proc(pid: int) -> Proc | None:
    """The process's stat line, parsed; None if it is gone (or /proc is missing)."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    # the command name is in parentheses and may hold anything: fields resume after the last ")"
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Proc(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[3]), int(rest[6]),
                    int(rest[17]), int(rest[19]))
    except (IndexError, ValueError):
        return None


_children_files: bool | None = None  # does this kernel have /proc/PID/task/TID/children?


def _have_children_files() -> bool:
    global _children_files
    if _children_files is None:
        _children_files = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
    return _children_files


class _Tree:
    """Child lookups for one collection: the kernel's children files, or, where the kernel has
    none, one scan of /proc for parent pids (made on first use)."""

    def __init__(self) -> None:
        self._by_parent: dict[int, list[int]] | None = None

    def children(self, pid: int, threads: int = 0) -> list[int]:
        if _have_children_files():
            return _children_from_files(pid, threads)
        if self._by_parent is None:
            self._by_parent = {}
            for name in _proc_pids():
                proc = read_proc(name)
                if proc is not None:
                    self._by_parent.setdefault(proc.ppid, []).append(name)
        return self._by_parent.get(pid, [])


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, parents before children (from /proc; [pid] without it)."""
    tree = _Tree()
    out = [pid]
    i = 0
    while i < len(out) and len(out) < _SEEN_CAP:
        out.extend(c for c in tree.children(out[i]) if c not in out)
        i += 1
    return out


def _children_from_files(pid: int, threads: int = 0) -> list[int]:
    """Children of every thread of `pid` (one file when it has a single thread)."""
    if threads == 1:
        tids = [str(pid)]
    else:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
    found: list[int] = []
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/children")
        if raw:
            found.extend(int(x) for x in raw.split())
    return found


def _proc_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def has_marker(pid: int, marker: str) -> bool | None:
    """Whether the process's environment holds ``DASHFLOAT_CALL=<marker>``: None if it reads
    empty (so during an execve or an exit, or if it was cleared: look again), False if it
    cannot be read."""
    env = _read(f"/proc/{pid}/environ")
    if env is None:
        return False
    if not env:
        return None
    return b"\0" + f"{MARKER_VAR}={marker}".encode() + b"\0" in b"\0" + env


def holds_any(pid: int, links: frozenset[str]) -> bool:
    """Whether the process has a descriptor open on one of `links` (e.g. ``pipe:[1234]``)."""
    if not links:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in links:
                return True
        except OSError:
            continue
    return False


def pipe_link(fd: int) -> str | None:
    """How /proc names the pipe behind `fd` (``pipe:[inode]``), or None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def user_tasks(uid: int) -> int:
    """Processes and threads of `uid` now: what RLIMIT_NPROC counts against."""
    total = 0
    for pid in _proc_pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        proc = read_proc(pid)
        if proc is not None and proc.alive:
            total += max(1, proc.threads)
    return total


def child_limit(budget: int) -> tuple[int, int] | None:
    """The (soft, hard) RLIMIT_NPROC for a command that may start `budget` more tasks, or None
    where the kernel would not apply it (root, or no such limit)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    if not hasattr(resource, "RLIMIT_NPROC") or os.getuid() == 0:
        return None  # the kernel exempts root from RLIMIT_NPROC: the census is the bound there
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    limit = user_tasks(os.getuid()) + budget
    new_hard = limit if hard == resource.RLIM_INFINITY else min(hard, limit)
    new_soft = new_hard if soft == resource.RLIM_INFINITY else min(soft, new_hard)
    return new_soft, new_hard


# -- one call -----------------------------------------------------------------------------------


class Call:
    """The processes of one command: found, counted, killed, reaped. Thread-safe."""

    def __init__(self, shell: int, marker: str, pipes: frozenset[str] = frozenset()) -> None:
        self.shell = shell  # the shell leads its own session: its pid is the session and group id
        self.marker = marker
        self.pipes = pipes  # /proc names of the call's pipes (stdout, a hook's stdin)
        self.seen: dict[int, int] = {}  # pid -> start time of every member seen so far
        self.peak = 0  # most tasks (processes and threads) seen alive at once
        self._pending: set[tuple[int, int]] = set()  # orphans that could not be judged yet
        shell_proc = read_proc(shell)
        self.since = shell_proc.start if shell_proc is not None else None  # the call's start
        try:
            self.session = os.getsid(0)  # DashFloat's own session (the editor's, for one)
        except OSError:  # pragma: no cover
            self.session = -1
        self.lock = threading.RLock()

    def _owns(self, proc: Proc) -> bool | None:
        """Whether an orphan (a child of DashFloat other than a shell) belongs to this call;
        None if that cannot be told yet (it is exiting, or in the middle of an execve)."""
        if self.seen.get(proc.pid) == proc.start:
            return True
        if proc.sid == self.shell or proc.pgrp == self.shell:
            return True
        if not proc.alive:
            return self._stray_zombie(proc)
        if holds_any(proc.pid, self.pipes):
            return True
        if (proc.pid, proc.start) in _undecided:
            return False  # no call could judge it in time before: do not wait for it again
        if proc.exiting:  # its environment and descriptors are already gone
            return None
        return has_marker(proc.pid, self.marker)

    def _stray_zombie(self, proc: Proc) -> bool:
        """A zombie child of DashFloat that started during this call, in a session other than
        DashFloat's: the middle process of a double fork, dead before anyone saw it. DashFloat
        starts children in a new session only through exec (whose shells are never asked
        about), so no ``subprocess`` is waiting for it; unreaped, one would pile up per daemon."""
        if self.since is None or proc.sid == self.session:
            return False
        # start times tick at 100 Hz: within the shell's tick, a later pid is a later process
        return proc.start > self.since or (proc.start == self.since and proc.pid > self.shell)

    def _collect(self, others: frozenset[int]) -> tuple[dict[int, Proc], bool]:
        """(members, unsure): unsure if an orphan could not be judged yet."""
        tree = _Tree()
        roots: list[Proc] = []
        unsure = False
        shell = read_proc(self.shell)
        if shell is not None:
            roots.append(shell)
        for pid in tree.children(os.getpid()):
            if pid == self.shell or pid in others:
                continue
            proc = read_proc(pid)
            if proc is None:
                continue
            owns = self._owns(proc)
            if owns:
                roots.append(proc)
            elif owns is None:
                unsure = True
                self._pending.add((proc.pid, proc.start))
        found: dict[int, Proc] = {}
        queue = roots
        while queue:
            proc = queue.pop()
            if proc.pid in found:
                continue
            found[proc.pid] = proc
            if not proc.alive:
                continue  # a zombie has no children: they went to DashFloat when it exited
            for child in tree.children(proc.pid, proc.threads):
                if child not in found:
                    sub = read_proc(child)
                    if sub is not None:
                        queue.append(sub)
        for proc in found.values():
            if len(self.seen) >= _SEEN_CAP:
                break
            self.seen[proc.pid] = proc.start
        return found, unsure

    def members(self, others: frozenset[int] = frozenset()) -> dict[int, Proc]:
        """Every process of this call now, zombies included (the shell too while it is
        unreaped). `others`: the shells of other running calls (never members)."""
        with self.lock:
            return self._collect(others)[0]

    def census(self, others: frozenset[int] = frozenset()) -> int:
        """Record the members now, reap the ones that are our zombies already; return how
        many tasks (processes and threads) are alive."""
        with self.lock:
            found = self._collect(others)[0]
            self._reap_zombies(found)
            return self._count(found)

    def _reap_zombies(self, found: dict[int, Proc]) -> bool:
        """waitpid the members that are zombie children of ours (never the shell: its Popen
        reaps it); True if some of our member children are still alive."""
        me = os.getpid()
        alive = False
        for proc in found.values():
            if proc.pid == self.shell or proc.ppid != me:
                continue
            if proc.alive:
                alive = True
                continue
            try:
                os.waitpid(proc.pid, os.WNOHANG)
            except ChildProcessError:
                pass
        return alive

    def _count(self, found: dict[int, Proc]) -> int:
        tasks = sum(max(1, p.threads) for p in found.values() if p.alive)
        self.peak = max(self.peak, tasks)
        return tasks

    def kill(self, others: frozenset[int] = frozenset()) -> int:
        """SIGKILL every member until none is alive, then reap the ones that are our zombies.
        Returns how many live processes other than the shell it killed. Safe to call again (it
        then finds nothing)."""
        with self.lock:
            killed: dict[int, int] = {}
            refused: set[int] = set()  # no permission (a setuid program): not ours to kill
            give_up = time.monotonic() + _KILL_ROUNDS_FOR
            unsure_until: float | None = None
            pause = 0.0005
            while True:
                found, unsure = self._collect(others)
                if not killed:
                    self._count(found)
                live = [p for p in found.values() if p.alive and p.pid not in refused]
                if not live:
                    if not unsure:
                        break
                    # an orphan that cannot be judged yet: look again, but not for ever (an
                    # environment that reads empty may simply have been cleared)
                    if unsure_until is None:
                        unsure_until = time.monotonic() + _UNSURE_FOR
                    elif time.monotonic() > unsure_until:
                        _remember_undecided(self._pending)  # later calls do not wait for them
                        break
                if time.monotonic() > give_up:
                    log.error("exec: processes of call %s did not die: %s", self.marker, [p.pid for p in live])
                    break
                if live:
                    try:  # one signal for the whole first process group: quickest for a large one
                        os.killpg(self.shell, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                for proc in live:
                    if _kill(proc.pid):
                        killed[proc.pid] = proc.start
                    else:
                        refused.add(proc.pid)
                time.sleep(pause)  # let SIGKILL land (or an exiting orphan finish) before looking again
                pause = min(pause * 2, 0.02)
            try:  # and the group in any case: all there is where /proc is missing
                os.killpg(self.shell, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            count = sum(1 for pid in killed if pid != self.shell)
            self._reap(others)
            return count

    def _reap(self, others: frozenset[int]) -> None:
        """waitpid every member that is a zombie child of ours (never the shell: its Popen
        reaps it). Waits up to a second for killed members to turn into zombies."""
        deadline = time.monotonic() + _REAP_FOR
        pause = 0.0005
        while True:
            pending = self._reap_zombies(self._collect(others)[0])
            if not pending or time.monotonic() > deadline:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


_undecided: set[tuple[int, int]] = set()  # (pid, start) of orphans no call could judge in time
_UNDECIDED_CAP = 1024


def _remember_undecided(pending: set[tuple[int, int]]) -> None:
    if len(_undecided) + len(pending) > _UNDECIDED_CAP:  # forget the ones that are gone
        for pid, start in list(_undecided):
            proc = read_proc(pid)
            if proc is None or proc.start != start:
                _undecided.discard((pid, start))
    if len(_undecided) + len(pending) <= _UNDECIDED_CAP:
        _undecided.update(pending)


def _kill(pid: int) -> bool:
    """SIGKILL one process; False if the system refused (e.g. a setuid program it started)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        log.warning("exec: no permission to kill process %d", pid)
        return False
    return True
