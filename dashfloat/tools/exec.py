"""execute_command: run a shell command line in its own session, bounded and killable.

ADR 0007 section 2, issue 3 section 3 and issue 8 section 3. The command runs as
``["/bin/sh", "-c", command]`` in a new session (so its own process group), stdin from
/dev/null, stdout and stderr merged into one pipe, with an environment that keeps tools from
waiting on a pager or a prompt and that marks the call (``DASHFLOAT_CALL=<id>``).

With ``stdin_data`` (hooks use it) stdin is a pipe instead: a writer thread feeds it the bytes
without blocking (a child that never reads cannot hold up the runner: the writer gives up when
the command is killed, at the latest) and then closes it, so the child sees EOF.

Nothing the command started outlives the call. DashFloat is a child subreaper, so a process
that detaches (``setsid``, ``nohup``, a double fork) is reparented to DashFloat, not to init;
:mod:`dashfloat.tools.reaper` says which processes belong to the call. Every completion path
(the shell's exit, timeout, cancel, :func:`kill_all`, an exception here) SIGKILLs all of them
before the shell is reaped, and reaps what became DashFloat's zombies. The call ends when the
shell exits: what it left running (a ``cmd &`` job, a daemon) is killed then, and the result
says how many (``stopped_processes``), so the model knows a server it started is gone. The
shell is waited for with ``waitid(WNOWAIT)``: it stays a zombie until everything is killed, so
its pid (the session and group id) cannot be reused by an unrelated process in between.

The process budget (``max_processes``, config key ``exec_max_processes``): a command starts
with RLIMIT_NPROC at the user's current task count plus the budget (the kernel refuses forks
past it; not for root, whom the kernel exempts), and a census every 0.1 s stops a command
whose processes and threads exceed the budget (``process_limit``), for root too.

Output is read on a reader thread, head-capped at ``max_output`` bytes (the rest is read and
discarded so the child never blocks on a full pipe) and optionally forwarded live, coalesced and
bounded, to ``on_output``. All ``on_output`` calls happen before :func:`run_command` returns.
"""

from __future__ import annotations

import atexit
import codecs
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping

from dashfloat.tools import reaper
from dashfloat.tools.results import cancelled, error, ok

log = logging.getLogger(__name__)

SHELL = "/bin/sh"
DEFAULT_TIMEOUT = 30.0
MAX_OUTPUT = 32 * 1024
MAX_PROCESSES = reaper.DEFAULT_MAX_PROCESSES

# Environment overrides: no pager, no colour, no credential prompt, a dumb terminal.
ENV_OVERRIDES: dict[str, str] = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
}

_READ_SIZE = 64 * 1024
_FLUSH_INTERVAL = 0.05  # live output: forward at most every 50 ms ...
_FLUSH_BYTES = 4 * 1024  # ... or as soon as 4 KiB are pending
_IDLE_POLL = 0.1  # the reader re-checks its stop flag this often when idle
_DRAIN_GRACE = 0.5  # after the group is killed, wait at most this long for EOF
_REAP_TIMEOUT = 5.0  # a SIGKILLed leader that does not die within this is left alone (logged)
_WRITE_POLL = 0.1  # the stdin writer re-checks its stop flag this often while the pipe is full
_CENSUS_INTERVAL = 0.1  # while a command runs, its processes are looked at this often ...
_CENSUS_SHARE = 20  # ... or less often for a large tree: a census takes at most 1/20 of the time
_CENSUS_MAX_INTERVAL = 1.0


class Cancel:
    """A cancellation flag shared between the UI and a running command; thread-safe.

    ``cancel()`` may be called from any thread, before or during the run; a running
    :func:`run_command` notices it at once (it blocks on an event this sets).
    """

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.RLock()
        self._wakers: list[threading.Event] = []

    def cancel(self) -> None:
        with self._lock:
            self._flag.set()
            wakers = list(self._wakers)
        for waker in wakers:
            waker.set()

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()

    def _subscribe(self, waker: threading.Event) -> None:
        with self._lock:
            self._wakers.append(waker)
            if self._flag.is_set():
                waker.set()

    def _unsubscribe(self, waker: threading.Event) -> None:
        with self._lock:
            try:
                self._wakers.remove(waker)
            except ValueError:
                pass


class _Run:
    """One running command: its processes and the event its runner blocks on."""

    def __init__(self, proc: subprocess.Popen, marker: str) -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the shell leads its own session and group
        pipes = (reaper.pipe_link(f.fileno()) for f in (proc.stdout, proc.stdin) if f is not None)
        self.procs = reaper.Call(proc.pid, marker, frozenset(link for link in pipes if link))
        self.wake = threading.Event()
        self.exited = False  # set by the waiter thread (leader exited, not yet reaped)
        self.killed_by_app = False  # set by kill_all()


# pgid -> run. An entry stays registered until after its group is killed and just before its
# leader is reaped, so kill_all() never signals a pgid that could have been reused.
_registry: dict[int, _Run] = {}
_registry_lock = threading.RLock()  # reentrant: kill_all() may run in a signal handler


def _others(run: _Run) -> frozenset[int]:
    """The shells of the other running commands (never counted as this command's processes)."""
    with _registry_lock:
        return frozenset(pgid for pgid in _registry if pgid != run.pgid)


def _kill_run(run: _Run) -> int:
    """SIGKILL every process of the command (see reaper); how many besides the shell."""
    try:
        return run.procs.kill(_others(run))
    except Exception:  # pragma: no cover - a bug in the /proc walk must not spare the group
        log.exception("exec: killing the processes of %d failed", run.pgid)
        try:
            os.killpg(run.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return 0


def kill_all() -> None:
    """SIGKILL every process of every running command (the app calls this on quit, SIGHUP and
    SIGTERM). Runners of the killed commands return ``cancelled`` results.
    """
    with _registry_lock:
        for run in list(_registry.values()):
            run.killed_by_app = True
            _kill_run(run)
            run.wake.set()


# A safety net for an interpreter that exits normally while a command runs (a worker thread
# dies with the interpreter, its cleanup never runs). The app still calls kill_all() itself.
atexit.register(kill_all)


class _Output:
    """The reader side: head-capped capture plus coalesced, bounded live forwarding."""

    def __init__(self, fd: int, max_output: int, on_output: Callable[[str], None] | None) -> None:
        self.fd = fd
        self.max_output = max(0, max_output)
        self.on_output = on_output
        self.lock = threading.Lock()
        self.head = bytearray()
        self.total = 0
        self.stop = threading.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._forwarded = 0
        self._last_flush = 0.0

    # -- capture ------------------------------------------------------------------------------

    def _take(self, data: bytes) -> None:
        with self.lock:
            room = self.max_output - len(self.head)
            if room > 0:
                self.head += data[:room]
            self.total += len(data)
        if self.on_output is not None:
            room = self.max_output - self._forwarded
            if room > 0:
                piece = data[:room]
                self._forwarded += len(piece)
                text = self._decoder.decode(piece)
                if text:
                    self._pending.append(text)
                    self._pending_bytes += len(piece)

    def _flush(self, final: bool = False) -> None:
        if self.on_output is None:
            return
        if final and self._forwarded:
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._pending.append(tail)
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        try:
            self.on_output(text)
        except Exception:
            log.exception("exec: on_output failed; live output disabled for this command")
            self.on_output = None

    def _flush_due(self) -> float | None:
        """Seconds until pending live output must be forwarded (None: nothing pending)."""
        if not self._pending:
            return None
        if self._pending_bytes >= _FLUSH_BYTES:
            return 0.0
        return max(0.0, self._last_flush + _FLUSH_INTERVAL - time.monotonic())

    # -- the thread ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._loop()
        except Exception:  # pragma: no cover - a bug here must not hang the runner
            log.exception("exec: output reader failed")
        finally:
            try:
                self._flush(final=True)
            except Exception:  # pragma: no cover
                log.exception("exec: final output flush failed")

    def _loop(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while True:
            if self.stop.is_set():
                self._drain_available(poller)
                return
            due = self._flush_due()
            if due == 0.0:
                self._flush()
                continue
            wait = _IDLE_POLL if due is None else min(due, _IDLE_POLL)
            if not poller.poll(int(wait * 1000) + 1):
                continue
            data = os.read(self.fd, _READ_SIZE)
            if not data:
                return  # EOF: every writer is gone
            self._take(data)
            if time.monotonic() - self._last_flush >= _FLUSH_INTERVAL:
                self._flush()

    def _drain_available(self, poller: select.poll) -> None:
        """Told to stop: take what is already in the pipe without blocking, bounded."""
        for _ in range(64):
            if not poller.poll(0):
                return
            data = os.read(self.fd, _READ_SIZE)
            if not data:
                return
            self._take(data)

    # -- the result ---------------------------------------------------------------------------

    def snapshot(self) -> tuple[str, bool, int]:
        """(text, truncated, total bytes): the head decoded, with the marker when truncated."""
        with self.lock:
            head = bytes(self.head)
            total = self.total
        truncated = total > len(head)
        if truncated:
            head = _cut_utf8(head)
        text = head.decode("utf-8", errors="replace")
        if truncated:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"[output truncated: {len(head)} of {total} bytes shown]"
        return text, truncated, total


class _Input:
    """The stdin writer: feeds ``data`` to the child's stdin pipe, then closes it.

    Non-blocking writes polled against a stop flag, so a child that does not read (or a writer
    that escaped the session holding the pipe) never blocks this thread past ``stop``. A child
    that exits without reading makes the write fail with EPIPE: that is not an error.
    """

    def __init__(self, pipe, data: bytes) -> None:
        self.pipe = pipe
        self.data = memoryview(bytes(data))
        self.written = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            self._loop()
        except Exception:  # pragma: no cover - a bug here must not hang the runner
            log.exception("exec: stdin writer failed")
        finally:
            try:
                self.pipe.close()
            except OSError:
                pass

    def _loop(self) -> None:
        fd = self.pipe.fileno()
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, select.POLLOUT | select.POLLERR)
        while self.written < len(self.data) and not self.stop.is_set():
            if not poller.poll(int(_WRITE_POLL * 1000)):
                continue
            try:
                self.written += os.write(fd, self.data[self.written : self.written + _READ_SIZE])
            except BlockingIOError:
                continue
            except OSError:  # EPIPE: the child is gone or closed its stdin; nothing to do
                return


def _cut_utf8(data: bytes) -> bytes:
    """Drop an incomplete UTF-8 sequence that a byte cap cut off at the end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if back < need:
                return data[:-back]
        return data
    return data


def _waiter(run: _Run) -> None:
    """Block until the group leader exits, WITHOUT reaping it, then wake the runner."""
    try:
        if hasattr(os, "waitid"):
            os.waitid(os.P_PID, run.pgid, os.WEXITED | os.WNOWAIT)
        else:  # pragma: no cover - macOS has no waitid; reaping here is the best available
            run.proc.wait()
    except ChildProcessError:
        pass
    except Exception:  # pragma: no cover
        log.exception("exec: waiting for the child failed")
    run.exited = True
    run.wake.set()


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _child_env(marker: str, changes: Mapping[str, str | None] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ENV_OVERRIDES)
    for name, value in (changes or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env[reaper.MARKER_VAR] = marker
    return env


def _limit_processes(limit: tuple[int, int] | None):
    """A preexec_fn that sets RLIMIT_NPROC in the child, or None (no limit to set: then Popen
    keeps its fast spawn path)."""
    if limit is None:
        return None
    import resource

    setrlimit, which = resource.setrlimit, resource.RLIMIT_NPROC

    def apply() -> None:  # runs in the child between fork and exec: no locks, no imports
        setrlimit(which, limit)

    return apply


def _enter(cwd: str, cwd_fd: int | None, preexec):
    """(the ``cwd`` for Popen, the preexec_fn): the directory the descriptor holds when there is
    one. Through /proc the child's own chdir follows the descriptor (a magic link), keeping
    Popen's fast path; without /proc a preexec_fn fchdirs (before the fds are closed)."""
    if cwd_fd is None:
        return cwd, preexec
    if os.path.isdir("/proc/self/fd"):
        return f"/proc/self/fd/{cwd_fd}", preexec
    fchdir = os.fchdir

    def enter() -> None:  # runs in the child between fork and exec
        fchdir(cwd_fd)
        if preexec is not None:
            preexec()

    return None, enter


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}s"


def run_command(
    command: str,
    cwd: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    cancel: Cancel | None = None,
    on_output: Callable[[str], None] | None = None,
    max_output: int = MAX_OUTPUT,
    stdin_data: bytes | None = None,
    max_processes: int = MAX_PROCESSES,
    cwd_fd: int | None = None,
    env: Mapping[str, str | None] | None = None,
) -> dict:
    """Run ``command`` with ``/bin/sh -c`` in ``cwd``; return a tool result dict (never raises).

    ``cwd_fd``: an open descriptor of that directory, already checked beneath the root: the
    child enters exactly that directory (``/proc/self/fd/N``, or ``fchdir`` where there is no
    /proc), never whatever the name ``cwd`` leads to by then.

    ``env``: changes to the environment (a value of None removes the variable), on top of
    DashFloat's own and `ENV_OVERRIDES` (a command that runs without a question gets
    tools/repocheck.py's).

    stdin is /dev/null, or with ``stdin_data`` a pipe fed with those bytes and then closed
    (the child need not read them: the run ends as it would without).

    Results (``output`` is the head-capped text, ``truncated`` whether bytes were dropped,
    ``bytes`` the total the command wrote):

    - exit 0: ``{"ok": true, "exit_code": 0, "output", "truncated", "bytes"}``
    - non-zero exit: ``{"ok": false, "error": "exited with status N", "code": "exit_status",
      "exit_code": N, "output", "truncated", "bytes"}``
    - killed by a signal: as above with ``"exit_code": null``, ``"signal": "SIGSEGV"`` and
      ``"error": "killed by signal SIGSEGV"``
    - after an exit, if the command left processes running (they are killed):
      ``"stopped_processes": N`` and a ``"note"`` saying so, added to either shape above
    - timeout: ``{"ok": false, "error": "timed out after 30s", "code": "timeout", "output", ...}``
    - more than ``max_processes`` processes and threads: ``{"ok": false, "code":
      "process_limit", "error": ..., "output", ...}``
    - cancelled (``cancel`` or :func:`kill_all`): ``{"ok": false, "cancelled": true, "output", ...}``
    - cannot start: ``{"ok": false, "error": ..., "code": "exec_failed"}``
    """
    if cancel is not None and cancel.cancelled:
        return cancelled(output="", truncated=False, bytes=0)
    reaper.enable_subreaper()  # before the first fork: orphans of the command come back to us
    marker = reaper.new_marker()
    try:
        preexec = _limit_processes(reaper.child_limit(max_processes))
        enter, preexec = _enter(cwd, cwd_fd, preexec)
        with _registry_lock:  # kill_all() cannot slip between the fork and the registration
            proc = subprocess.Popen(
                [SHELL, "-c", command],
                cwd=enter,
                stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                env=_child_env(marker, env),
                bufsize=0,
                preexec_fn=preexec,
            )
            run = _Run(proc, marker)
            _registry[run.pgid] = run
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return error("exec_failed", f"could not start the command: {reason}", cwd=cwd)
    deadline = time.monotonic() + timeout  # the clock starts when the process has started

    assert proc.stdout is not None
    output = _Output(proc.stdout.fileno(), max_output, on_output)
    reader = threading.Thread(target=output.run, name=f"exec-read-{run.pgid}", daemon=True)
    waiter = threading.Thread(target=_waiter, args=(run,), name=f"exec-wait-{run.pgid}", daemon=True)
    feeder: _Input | None = None
    writer: threading.Thread | None = None
    if stdin_data is not None and proc.stdin is not None:
        feeder = _Input(proc.stdin, stdin_data)
        writer = threading.Thread(target=feeder.run, name=f"exec-write-{run.pgid}", daemon=True)
    outcome = "internal"
    try:
        reader.start()
        waiter.start()
        if writer is not None:
            writer.start()
        if cancel is not None:
            cancel._subscribe(run.wake)
        outcome = _wait(run, cancel, deadline, max_processes)
    except Exception:
        log.exception("exec: runner failed for %r", command)
        outcome = "internal"
    finally:
        if cancel is not None:
            cancel._unsubscribe(run.wake)
        leftover = _finish(run, waiter, reader, output, deadline, writer, feeder)

    text, truncated, total = output.snapshot()
    fields: dict = {"output": text, "truncated": truncated, "bytes": total}
    if outcome == "cancelled":
        return cancelled(**fields)
    if outcome == "timeout":
        return error("timeout", f"timed out after {_format_seconds(timeout)}", **fields)
    if outcome == "process_limit":
        return error("process_limit", f"stopped: more than {max_processes} processes and threads "
                     "running at once (exec_max_processes); everything it started was killed", **fields)
    if outcome == "exited":
        note = []
        if leftover:
            fields["stopped_processes"] = leftover
            note.append(_leftover_note(leftover))
        if run.procs.peak * 10 >= max_processes * 9:
            note.append(f"it had up to {run.procs.peak} processes and threads at once, near its limit of "
                        f"{max_processes} (exec_max_processes): starting more fails")
        if note:
            fields["note"] = "; ".join(note)
        code = proc.returncode
        if code == 0:
            return ok(exit_code=0, **fields)
        if code is not None and code < 0:
            name = _signal_name(-code)
            return error("exit_status", f"killed by signal {name}", exit_code=None, signal=name, **fields)
        return error("exit_status", f"exited with status {code}", exit_code=code, **fields)
    return error("internal", "the command runner failed; the command was killed", **fields)


def _leftover_note(count: int) -> str:
    what = "1 process" if count == 1 else f"{count} processes"
    verb = "was" if count == 1 else "were"
    return (f"{what} that the command left running (a background job or daemon) {verb} stopped "
            "when it exited: nothing a command starts outlives it")


def _wait(run: _Run, cancel: Cancel | None, deadline: float, max_processes: int) -> str:
    """Block until the command exits, is cancelled or killed by kill_all(), times out, or
    has more processes than its budget (a census every 0.1 s, which also records them; for a
    tree so large that a census takes over 5 ms, less often, so it costs at most 5% of a CPU)."""
    next_census = time.monotonic() + _CENSUS_INTERVAL
    while True:
        run.wake.clear()  # clear first: a wake-up after this point makes the wait return at once
        if run.killed_by_app:
            return "cancelled"
        if run.exited:
            return "exited"
        if cancel is not None and cancel.cancelled:
            return "cancelled"
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            return "timeout"
        if now >= next_census:
            if run.procs.census(_others(run)) > max_processes:
                return "process_limit"
            took = time.monotonic() - now
            next_census = now + took + min(_CENSUS_MAX_INTERVAL, max(_CENSUS_INTERVAL, took * _CENSUS_SHARE))
        run.wake.wait(min(remaining, max(0.0, next_census - time.monotonic())))


def _finish(
    run: _Run,
    waiter: threading.Thread,
    reader: threading.Thread,
    output: _Output,
    deadline: float,
    writer: threading.Thread | None = None,
    feeder: _Input | None = None,
) -> int:
    """Kill everything the command started, stop writing and reading, unregister, reap the
    shell. Runs on every path; returns how many processes besides the shell were killed."""
    proc = run.proc
    leftover = 0
    try:
        leftover = _kill_run(run)  # the shell is unreaped (at worst a zombie): its ids are still ours
        if feeder is not None:
            feeder.stop.set()  # whatever the child did not take is dropped
        if writer is not None and writer.is_alive():
            writer.join(_REAP_TIMEOUT)  # one poll interval, normally
        if waiter.is_alive():
            waiter.join(_REAP_TIMEOUT)
        if reader.is_alive():
            # Everything the command started is dead, so EOF follows as soon as the pipe is
            # drained; a writer that escaped unrecognised could hold it open: wait a grace only.
            grace = min(_DRAIN_GRACE, max(0.05, deadline - time.monotonic()))
            reader.join(grace)
        output.stop.set()
        if reader.is_alive():
            reader.join(_REAP_TIMEOUT)  # one poll interval plus a bounded drain, normally
    finally:
        with _registry_lock:
            _registry.pop(run.pgid, None)
        try:
            proc.wait(timeout=_REAP_TIMEOUT)
        except subprocess.TimeoutExpired:  # pragma: no cover - a leader stuck in the kernel
            log.error("exec: process %d did not die after SIGKILL", run.pgid)
        if proc.stdout is not None and not reader.is_alive():
            proc.stdout.close()
        if proc.stdin is not None and not (writer is not None and writer.is_alive()):
            # the writer closes it itself; this covers a writer that never started
            try:
                proc.stdin.close()
            except OSError:
                pass
    return leftover
