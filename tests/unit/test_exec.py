"""Tests for dashfloat.tools.exec: real processes, process-group hygiene, bounds, cancel.

No fixed sleeps: every wait is a condition polled against a deadline. Leak checks scan /proc
for live (non-zombie) processes in the command's session or carrying a unique marker argument.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dashfloat.tools import exec as ex
from dashfloat.tools import reaper
from dashfloat.tools.results import CODES
from tests.procs import (
    ESCAPES,
    escape_command,
    escaped_pids,
    gone,
    live_with_marker,
    stat_of,
    wait_for,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

_counter = itertools.count(1)


def marker() -> str:
    """A unique `sleep` duration: its cmdline identifies this test's processes in /proc."""
    return f"1000.{os.getpid()}{next(_counter):04d}"


def live_in_session(sid: int) -> list[int]:
    """Pids of live (not zombie) processes whose session id is `sid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        info = stat_of(int(name))
        if info and info[2] == sid and info[0] not in ("Z", "X"):
            found.append(int(name))
    return found


def live_sleeps(mark: str) -> list[int]:
    """Pids of live `sleep MARK` processes (not the shells whose command line names the mark)."""
    found = []
    for pid in live_with_marker(mark):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"sleep" and argv[1:2] == [mark.encode()]:
            found.append(pid)
    return found


def assert_no_leak(mark: str, sid: int | None = None) -> None:
    assert wait_for(lambda: not live_with_marker(mark)), f"leaked: {live_with_marker(mark)}"
    if sid is not None:
        assert wait_for(lambda: not live_in_session(sid)), f"leaked: {live_in_session(sid)}"


class Background:
    """run_command on a thread; the result lands in .result."""

    def __init__(self, command: str, cwd: str, **kwargs) -> None:
        self.result: dict | None = None
        self.chunks: list[str] = []
        self.seen = threading.Condition()
        kwargs.setdefault("on_output", self._on_output)
        self.thread = threading.Thread(target=self._run, args=(command, cwd), kwargs=kwargs, daemon=True)
        self.thread.start()

    def _on_output(self, text: str) -> None:
        with self.seen:
            self.chunks.append(text)
            self.seen.notify_all()

    def _run(self, command, cwd, **kwargs) -> None:
        self.result = ex.run_command(command, cwd, **kwargs)

    def text(self) -> str:
        with self.seen:
            return "".join(self.chunks)

    def wait_output(self, needle: str, timeout: float = 3.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.seen:
            while needle not in "".join(self.chunks):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.seen.wait(left)
            return True

    def join(self, timeout: float = 5.0) -> dict:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "run_command did not return"
        assert self.result is not None
        return self.result


@pytest.fixture(autouse=True)
def _no_stray_commands():
    """Even a failing test leaves no running command behind."""
    yield
    ex.kill_all()


@pytest.fixture
def cwd(tmp_path: Path) -> str:
    return str(tmp_path)


# -- ordinary runs -------------------------------------------------------------------------------


def test_echo_exit_zero(cwd):
    result = ex.run_command("echo hello", cwd)
    assert result == {"ok": True, "exit_code": 0, "output": "hello\n", "truncated": False, "bytes": 6}


def test_nonzero_exit_is_an_error_with_the_status(cwd):
    result = ex.run_command("echo partial; exit 3", cwd)
    assert result["ok"] is False
    assert result["code"] == "exit_status" and "exit_status" in CODES
    assert result["exit_code"] == 3
    assert result["error"] == "exited with status 3"
    assert result["output"] == "partial\n"
    assert "signal" not in result


def test_stderr_is_merged_in_order(cwd):
    result = ex.run_command("echo one; echo two >&2; echo three", cwd)
    assert result["ok"] is True
    assert result["output"] == "one\ntwo\nthree\n"


def test_killed_by_signal_reports_the_signal(cwd):
    result = ex.run_command("ulimit -c 0; echo before; kill -SEGV $$", cwd)
    assert result["ok"] is False
    assert result["code"] == "exit_status"
    assert result["signal"] == "SIGSEGV"
    assert result["exit_code"] is None
    assert "SIGSEGV" in result["error"]
    assert result["output"] == "before\n"


def test_chained_commands_and_builtins(cwd):
    result = ex.run_command("cd /; pwd; X=1; export X; echo x=$X && true || echo no; type cd >/dev/null; echo end", cwd)
    assert result["ok"] is True
    assert result["output"] == "/\nx=1\nend\n"


def test_runs_in_the_given_cwd(tmp_path):
    result = ex.run_command("pwd", str(tmp_path))
    assert os.path.realpath(result["output"].strip()) == os.path.realpath(tmp_path)


def test_stdin_is_dev_null(cwd):
    started = time.monotonic()
    result = ex.run_command("cat; read line; echo rc=$?", cwd, timeout=5)
    assert time.monotonic() - started < 1.0
    assert result["ok"] is True
    assert result["output"] == "rc=1\n"


def test_environment_has_no_pager_or_prompt(cwd):
    result = ex.run_command('echo "$TERM $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $NO_COLOR"', cwd)
    assert result["output"] == "dumb cat cat 0 1\n"


def test_own_session_and_process_group(cwd):
    # fields 5 and 6 of /proc/PID/stat are pgrp and session; the shell leads both
    result = ex.run_command("echo $$; cut -d' ' -f5,6 /proc/$$/stat", cwd)
    pid, ids = result["output"].splitlines()
    assert ids.split() == [pid, pid]
    assert os.getsid(0) != int(pid)


def test_cannot_start_is_exec_failed(tmp_path):
    result = ex.run_command("echo hi", str(tmp_path / "missing"))
    assert result["ok"] is False
    assert result["code"] == "exec_failed"
    assert "output" not in result


def test_non_utf8_output_is_replaced(cwd):
    result = ex.run_command(r"printf 'a\377b\n'", cwd)
    assert result["output"] == "a\ufffdb\n"
    assert result["bytes"] == 4


# -- bounds ----------------------------------------------------------------------------------------


def test_output_capped_with_total_named(cwd):
    forwarded: list[str] = []
    result = ex.run_command(r"head -c 1048576 /dev/zero | tr '\0' a", cwd, on_output=forwarded.append)
    assert result["ok"] is True
    assert result["truncated"] is True
    assert result["bytes"] == 1048576
    head, marker_line = result["output"].rsplit("\n", 1)
    assert head == "a" * 32768
    assert marker_line == "[output truncated: 32768 of 1048576 bytes shown]"
    # the live view is bounded as well
    assert sum(len(t.encode()) for t in forwarded) <= 32768
    assert "".join(forwarded) == "a" * 32768


def test_large_output_keeps_memory_bounded_and_child_unblocked(cwd):
    # 16 MiB through a 64 KiB pipe: finishes only if the reader keeps discarding past the cap
    result = ex.run_command("head -c 16777216 /dev/zero", cwd, timeout=10, max_output=1024)
    assert result["ok"] is True
    assert result["bytes"] == 16777216
    assert len(result["output"]) < 1024 + 100


def test_cap_does_not_split_a_utf8_character(cwd):
    result = ex.run_command("printf 'ééé'", cwd, max_output=5)  # 6 bytes; the cap cuts the 3rd
    assert result["truncated"] is True
    assert result["output"] == "éé\n[output truncated: 4 of 6 bytes shown]"


# -- timeout, cancel, kill_all, leaks --------------------------------------------------------------


def test_timeout_keeps_partial_output(cwd):
    started = time.monotonic()
    result = ex.run_command("echo start; sleep 10", cwd, timeout=0.5)
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 1.5
    assert result["ok"] is False
    assert result["code"] == "timeout"
    assert result["error"] == "timed out after 0.5s"
    assert result["output"] == "start\n"
    assert result["truncated"] is False


@pytest.mark.parametrize("shape", ["sh -c 'sleep {m} & sleep {m}'", "(sleep {m} &) ; sleep {m}"])
def test_timeout_leaves_no_process(cwd, shape):
    mark = marker()
    result = ex.run_command("echo $$; " + shape.format(m=mark), cwd, timeout=0.5)
    assert result["code"] == "timeout"
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)


@pytest.mark.parametrize("shape", ["sh -c 'sleep {m} & sleep {m}'", "(sleep {m} &) ; sleep {m}"])
def test_cancel_returns_quickly_with_partial_output_and_leaves_no_process(cwd, shape):
    mark = marker()
    cancel = ex.Cancel()
    run = Background("echo $$; " + shape.format(m=mark), cwd, timeout=30, cancel=cancel)
    assert run.wait_output("\n")
    assert wait_for(lambda: len(live_sleeps(mark)) == 2), "both sleeps should be running"
    assert run.thread.is_alive()
    started = time.monotonic()
    cancel.cancel()
    result = run.join()
    assert time.monotonic() - started < 0.3
    assert cancel.cancelled
    assert result["ok"] is False and result["cancelled"] is True
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)


def waiting_in_wait(thread: threading.Thread) -> bool:
    """Whether `thread` is blocked on its wake-up event inside exec._wait."""
    frame = sys._current_frames().get(thread.ident)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return "_wait" in names and names[0] == "wait"


def test_cancel_does_not_wait_for_the_next_census(cwd, monkeypatch):
    """Esc wakes the runner at once: for a large tree a census comes only every second (here:
    never within the test), and the cancel must not wait for it."""
    monkeypatch.setattr(ex, "_CENSUS_INTERVAL", 30.0)
    monkeypatch.setattr(ex, "_CENSUS_MAX_INTERVAL", 30.0)
    mark = marker()
    cancel = ex.Cancel()
    run = Background(f"echo started; sleep {mark}", cwd, timeout=60, cancel=cancel)
    assert run.wait_output("started")
    # the output can come before the runner waits; a cancel then is seen by its first check
    assert wait_for(lambda: waiting_in_wait(run.thread))
    started = time.monotonic()
    cancel.cancel()
    result = run.join()
    assert time.monotonic() - started < 1.0
    assert result["cancelled"] is True
    assert wait_for(lambda: not live_sleeps(mark))


def test_cancel_before_start_runs_nothing(cwd, tmp_path):
    cancel = ex.Cancel()
    cancel.cancel()
    result = ex.run_command("touch ran", cwd, cancel=cancel)
    assert result == {"ok": False, "cancelled": True, "output": "", "truncated": False, "bytes": 0}
    assert not (tmp_path / "ran").exists()


def test_grandchild_holding_the_pipe_does_not_block(cwd):
    mark = marker()
    started = time.monotonic()
    result = ex.run_command(f"sleep {mark} & echo done", cwd, timeout=10)
    assert time.monotonic() - started < 1.5
    assert result["ok"] is True
    assert result["output"] == "done\n"
    assert_no_leak(mark)


def test_background_job_killed_after_normal_exit_and_counted(cwd):
    mark = marker()
    result = ex.run_command(f"echo $$; sleep {mark} >/dev/null 2>&1 & echo bg", cwd)
    assert result["ok"] is True
    assert result["stopped_processes"] == 1
    assert result["note"].startswith("1 process that the command left running (a background job or daemon) "
                                     "was stopped when it exited")
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)


def test_nothing_left_means_no_count_and_no_note(cwd):
    result = ex.run_command("sleep 0.01 & wait; echo waited", cwd, timeout=10)
    assert result == {"ok": True, "exit_code": 0, "output": "waited\n", "truncated": False, "bytes": 7}


def test_kill_all_from_another_thread(cwd):
    mark = marker()
    run = Background(f"echo $$; sleep {mark} & sleep {mark}", cwd, timeout=30)
    assert run.wait_output("\n")
    assert wait_for(lambda: len(live_sleeps(mark)) == 2)
    started = time.monotonic()
    ex.kill_all()
    result = run.join()
    assert time.monotonic() - started < 0.5
    assert result["ok"] is False and result["cancelled"] is True
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)
    assert not ex._registry


def test_registry_is_empty_after_each_completion(cwd):
    ex.run_command("true", cwd)
    ex.run_command("exit 1", cwd)
    ex.run_command("sleep 5", cwd, timeout=0.2)
    assert not ex._registry


def test_on_output_is_live(tmp_path):
    flag = tmp_path / "go"
    run = Background("echo ready; while [ ! -e go ]; do sleep 0.01; done; echo after", str(tmp_path), timeout=10)
    assert run.wait_output("ready\n")
    assert run.thread.is_alive(), "output must arrive before the command ends"
    flag.touch()
    result = run.join()
    assert result["ok"] is True
    assert result["output"] == "ready\nafter\n"
    assert run.text() == "ready\nafter\n"


def test_failing_on_output_does_not_break_the_run(cwd):
    def boom(text: str) -> None:
        raise RuntimeError("ui bug")

    result = ex.run_command("echo a; echo b", cwd, on_output=boom)
    assert result["ok"] is True
    assert result["output"] == "a\nb\n"


def test_cancel_is_thread_safe_and_idempotent():
    cancel = ex.Cancel()
    assert not cancel.cancelled
    threads = [threading.Thread(target=cancel.cancel) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cancel.cancelled


# -- stdin_data ----------------------------------------------------------------------------------


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("exec-write-")]


def test_stdin_data_is_fed_then_closed(cwd):
    result = ex.run_command("cat; echo; read line; echo rc=$?", cwd, timeout=5, stdin_data=b"hello\nworld")
    assert result["ok"] is True
    assert result["output"] == "hello\nworld\nrc=1\n"
    assert wait_for(lambda: not writer_threads())


def test_empty_stdin_data_is_an_immediate_eof(cwd):
    started = time.monotonic()
    result = ex.run_command("cat; echo end", cwd, timeout=5, stdin_data=b"")
    assert time.monotonic() - started < 1.0
    assert result["output"] == "end\n"


def test_large_stdin_data_is_delivered_whole(cwd):
    data = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe holds
    result = ex.run_command("wc -c", cwd, timeout=10, stdin_data=data)
    assert result["ok"] is True
    assert result["output"].strip() == str(len(data))


def test_a_child_that_does_not_read_stdin_does_not_block(cwd):
    data = b"x" * (8 * 1024 * 1024)
    started = time.monotonic()
    result = ex.run_command("echo done", cwd, timeout=10, stdin_data=data)
    assert time.monotonic() - started < 1.5
    assert result == {"ok": True, "exit_code": 0, "output": "done\n", "truncated": False, "bytes": 5}
    assert wait_for(lambda: not writer_threads())


def test_a_background_job_holding_unread_stdin_is_killed_and_does_not_block(cwd):
    mark = marker()
    data = b"x" * (4 * 1024 * 1024)
    started = time.monotonic()
    result = ex.run_command(f"echo $$; sleep {mark} & echo bg", cwd, timeout=10, stdin_data=data)
    assert time.monotonic() - started < 1.5
    assert result["ok"] is True
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)
    assert wait_for(lambda: not writer_threads())


def test_stdin_data_with_a_timeout_kills_the_group(cwd):
    mark = marker()
    started = time.monotonic()
    result = ex.run_command(f"echo $$; sleep {mark}", cwd, timeout=0.3, stdin_data=b"y" * (1024 * 1024))
    assert time.monotonic() - started < 1.5
    assert result["code"] == "timeout"
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)
    assert wait_for(lambda: not writer_threads())
    assert not ex._registry


def test_stdin_data_with_cancel(cwd):
    mark = marker()
    cancel = ex.Cancel()
    run = Background(f"echo $$; sleep {mark}", cwd, timeout=30, cancel=cancel, stdin_data=b"z" * 100000)
    assert run.wait_output("\n")
    cancel.cancel()
    result = run.join()
    assert result["cancelled"] is True
    assert_no_leak(mark, int(result["output"].split()[0]))
    assert wait_for(lambda: not writer_threads())


def test_stdin_data_cannot_start_is_exec_failed(tmp_path):
    result = ex.run_command("cat", str(tmp_path / "missing"), stdin_data=b"data")
    assert result["ok"] is False and result["code"] == "exec_failed"


# -- processes that detach: setsid, nohup, double fork, daemons (issue 8 section 3) ---------------

ALL_ESCAPES = list(ESCAPES)
# how many processes each escape leaves running once detached: the sleep, and for the forking
# ones perhaps a middle process that has not finished exiting yet (on a busy machine)
LEFT_BEHIND = {name: range(1, 2) for name in ESCAPES} | {"double_fork": range(1, 3), "daemon": range(1, 3)}


def detach(names, mark: str, cwd: str) -> str:
    return escape_command(names, mark, cwd, sys.executable)


def assert_killed_and_reaped(names, mark: str, cwd: str) -> None:
    """Every escaped `sleep MARK` is dead and no zombie of it is left (DashFloat reaped it)."""
    pids = escaped_pids(names, cwd)
    assert wait_for(lambda: not live_with_marker(mark)), f"leaked: {live_with_marker(mark)}"
    assert wait_for(lambda: all(gone(pid, mark) for pid in pids.values())), {
        name: stat_of(pid) for name, pid in pids.items()
    }


@pytest.mark.parametrize("name", ALL_ESCAPES)
def test_a_detached_process_is_stopped_when_the_shell_exits(cwd, name):
    mark = marker()
    started = time.monotonic()
    result = ex.run_command(detach([name], mark, cwd) + "echo detached", cwd, timeout=10)
    assert result["ok"] is True, result
    assert result["output"] == "detached\n"
    assert result["stopped_processes"] in LEFT_BEHIND[name], result
    assert "stopped when it exited" in result["note"]
    # the call ends when the shell exits, even if the detached process holds the output pipe
    assert time.monotonic() - started < 5.0
    assert_killed_and_reaped([name], mark, cwd)


def test_a_detached_process_holding_the_pipe_does_not_hold_up_the_call(cwd):
    mark = marker()
    started = time.monotonic()
    result = ex.run_command(f"setsid sleep {mark} & echo bg", cwd, timeout=10)
    elapsed = time.monotonic() - started
    assert result["ok"] is True and result["output"] == "bg\n"
    assert elapsed < ex._DRAIN_GRACE, f"waited {elapsed:.2f}s for a pipe the call should have closed"
    assert wait_for(lambda: not live_with_marker(mark)), f"leaked: {live_with_marker(mark)}"


@pytest.mark.parametrize("name", ALL_ESCAPES)
def test_a_detached_process_is_stopped_on_cancel(cwd, name):
    mark = marker()
    cancel = ex.Cancel()
    run = Background(detach([name], mark, cwd) + f"echo ready; sleep {mark}", cwd, timeout=30, cancel=cancel)
    assert run.wait_output("ready\n", timeout=10)
    cancel.cancel()
    result = run.join()
    assert result["cancelled"] is True
    assert_killed_and_reaped([name], mark, cwd)


@pytest.mark.parametrize("name", ALL_ESCAPES)
def test_a_detached_process_is_stopped_by_kill_all(cwd, name):
    mark = marker()
    run = Background(detach([name], mark, cwd) + f"echo ready; sleep {mark}", cwd, timeout=30)
    assert run.wait_output("ready\n", timeout=10)
    ex.kill_all()
    result = run.join()
    assert result["cancelled"] is True
    assert_killed_and_reaped([name], mark, cwd)
    assert not ex._registry


def test_detached_processes_are_stopped_on_timeout(cwd):
    mark = marker()
    # the timeout leaves time for every escape to detach first; the shell then hangs
    result = ex.run_command(detach(ALL_ESCAPES, mark, cwd) + f"echo ready; sleep {mark}", cwd, timeout=3)
    assert result["code"] == "timeout"
    assert result["output"] == "ready\n", "every escape detached before the timeout"
    assert_killed_and_reaped(ALL_ESCAPES, mark, cwd)


def test_a_hooks_detached_process_holding_only_its_stdin_is_stopped(cwd):
    # stdout and stderr elsewhere, environment cleared, new session: only the stdin pipe tells
    mark = marker()
    # (a background job's stdin is /dev/null unless redirected: hand it the pipe through fd 3)
    command = (f"exec 3<&0; setsid env -i /bin/sh -c 'echo $$ >{cwd}/x.tmp && mv {cwd}/x.tmp {cwd}/x.pid && "
               f"exec sleep {mark}' <&3 3<&- >/dev/null 2>&1 & while [ ! -e x.pid ]; do sleep 0.01; done")
    result = ex.run_command(command, cwd, timeout=10, stdin_data=b"{}")
    assert result["ok"] is True and result["stopped_processes"] == 1, result
    pid = int(open(os.path.join(cwd, "x.pid")).read())
    assert wait_for(lambda: gone(pid, mark)), stat_of(pid)


def test_a_process_stuck_ignoring_term_in_a_stopped_state_is_killed(cwd):
    # stopped (SIGSTOP) and ignoring SIGTERM: only SIGKILL ends it
    mark = marker()
    command = detach(["ignores_term"], mark, cwd) + "kill -STOP $(cat ignores_term.pid); echo stopped"
    result = ex.run_command(command, cwd, timeout=10)
    assert result["stopped_processes"] == 1, result
    assert_killed_and_reaped(["ignores_term"], mark, cwd)


def test_a_forked_process_that_orphans_many_levels_deep_is_stopped(cwd):
    # a chain of five shells, each leaving a child in a new session and exiting at once
    mark = marker()
    inner = f"echo $$ >{cwd}/deep.tmp && mv {cwd}/deep.tmp {cwd}/deep.pid && exec sleep {mark}"
    for _ in range(5):
        inner = f"setsid sh -c {shell_quote(inner)} &"
    command = inner + " while [ ! -e deep.pid ]; do sleep 0.01; done; echo deep"
    result = ex.run_command(command, cwd, timeout=10)
    assert result["output"] == "deep\n" and 1 <= result["stopped_processes"] <= 6, result
    assert_killed_and_reaped(["deep"], mark, cwd)


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- DashFloat's other children are not touched ---------------------------------------------------


def test_another_child_of_dashfloat_keeps_running_and_keeps_its_exit_status(cwd):
    # like the Ctrl-G editor: a child of ours, not of the command, in a session of its own
    other = subprocess.Popen(["/bin/sh", "-c", "read line; exit 7"], stdin=subprocess.PIPE,
                             start_new_session=True)
    try:
        mark = marker()
        result = ex.run_command(detach(["double_fork"], mark, cwd) + "echo ok", cwd, timeout=10)
        assert result["stopped_processes"] in LEFT_BEHIND["double_fork"]
        assert other.poll() is None, "a child that is not the command's was killed"
    finally:
        other.stdin.close()
    assert other.wait(timeout=5) == 7


def _ticks_now() -> int:
    """Clock ticks since boot now (what /proc/PID/stat's start time counts in)."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def test_a_zombie_child_of_dashfloat_is_left_for_its_own_wait(cwd):
    other = subprocess.Popen(["/bin/sh", "-c", "exit 9"], start_new_session=True)
    assert wait_for(lambda: (stat_of(other.pid) or ("?",))[0] == "Z"), "the other child should be a zombie"
    # started in a clock tick before the call's: within one tick the reaper can only go by pid
    # order, which a pid wrap-around (pid_max is 32768 here, and the suite forks thousands)
    # reverses, and the other zombie would count as the call's
    born = reaper.read_proc(other.pid).start
    assert wait_for(lambda: _ticks_now() > born)
    mark = marker()
    result = ex.run_command(detach(["setsid"], mark, cwd) + "echo ok", cwd, timeout=10)
    assert result["stopped_processes"] == 1
    assert other.wait(timeout=5) == 9, "its exit status was taken by a stray waitpid"


def test_an_orphan_of_the_command_is_reparented_to_dashfloat(cwd):
    mark = marker()
    run = Background(detach(["double_fork"], mark, cwd) + f"echo ready; sleep {mark}", cwd, timeout=30)
    assert run.wait_output("ready\n", timeout=10)
    pid = escaped_pids(["double_fork"], cwd)["double_fork"]
    try:
        state = stat_of(pid)
        assert state is not None and state[1] == os.getpid(), f"parent of the orphan: {state}, we are {os.getpid()}"
    finally:
        ex.kill_all()
    assert run.join()["cancelled"] is True
    assert_killed_and_reaped(["double_fork"], mark, cwd)


# -- the process budget -----------------------------------------------------------------------------

FORK_BOMB = "i=0; while [ $i -lt 2000 ]; do sleep {m} & i=$((i+1)); done; echo started $i; wait"


def test_a_fork_bomb_is_stopped_by_the_census_whatever_the_user(cwd, monkeypatch):
    # without the kernel's limit (as for root) the census alone must stop it
    monkeypatch.setattr(reaper, "child_limit", lambda budget: None)
    mark = marker()
    started = time.monotonic()
    result = ex.run_command(FORK_BOMB.format(m=mark), cwd, timeout=30, max_processes=64)
    assert time.monotonic() - started < 10
    assert result["ok"] is False and result["code"] == "process_limit", result
    assert "process_limit" in CODES
    assert "more than 64 processes and threads" in result["error"]
    assert "started 2000" not in result["output"]
    assert wait_for(lambda: not live_with_marker(mark)), f"leaked: {len(live_with_marker(mark))}"


def test_threads_count_against_the_budget(cwd, monkeypatch):
    monkeypatch.setattr(reaper, "child_limit", lambda budget: None)
    mark = marker()
    code = ("import threading, time; [threading.Thread(target=time.sleep, args=(60,), daemon=True).start() "
            "for _ in range(80)]; print(len(threading.enumerate()), flush=True); time.sleep(60)")
    result = ex.run_command(f"{sys.executable} -S -c '{code}' {mark}", cwd, timeout=30, max_processes=64)
    assert result["code"] == "process_limit", result
    assert wait_for(lambda: not live_with_marker(mark))


def test_the_budget_allows_what_it_allows(cwd):
    mark = marker()
    result = ex.run_command(f"for i in 1 2 3 4 5 6 7 8; do sleep {mark} & done; echo eight", cwd,
                            timeout=10, max_processes=32)
    assert result["ok"] is True and result["stopped_processes"] == 8, result
    assert "note" in result and "near its limit" not in result["note"]


def _run_as_nobody(command: str, budget: int) -> dict:
    """run_command in a forked child that became user nobody (root is exempt from the
    kernel's limit); the result comes back as JSON through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            result = ex.run_command(command, "/", timeout=30, max_processes=budget)
            os.write(write_end, json.dumps(result).encode())
        except BaseException as exc:
            os.write(write_end, json.dumps({"child_failed": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    deadline = time.monotonic() + 60
    with os.fdopen(read_end, "rb", buffering=0) as f:
        while time.monotonic() < deadline:
            if select.select([f], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = f.read(65536)
                if not chunk:
                    break
                data += chunk
        else:  # pragma: no cover - a hung child must not hang the suite
            os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return json.loads(data)


def test_a_fork_bomb_hits_the_kernel_limit_for_a_user(cwd):
    mark = marker()
    command = FORK_BOMB.format(m=mark)
    if os.getuid() == 0:
        import ctypes  # noqa: F401 - the modules exec imports lazily, imported while the
        import resource  # noqa: F401 - standard library is still readable (nobody cannot read it)

        result = _run_as_nobody(command, 64)
    else:
        result = ex.run_command(command, cwd, timeout=30, max_processes=64)
    # the kernel refused the 65th fork: the shell fails with its own message, in good time
    assert "child_failed" not in result, result
    assert result["ok"] is False, result
    assert "fork" in result["output"].lower(), result
    assert "started 2000" not in result["output"]
    assert 32 <= result["stopped_processes"] <= 64, result
    assert "near its limit of 64 (exec_max_processes)" in result["note"]
    assert wait_for(lambda: not live_with_marker(mark)), f"leaked: {len(live_with_marker(mark))}"


def test_child_limit_is_the_users_tasks_plus_the_budget(monkeypatch):
    import resource

    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(reaper, "user_tasks", lambda uid: 300)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert reaper.child_limit(512) == (812, 812)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (500, 4000))
    assert reaper.child_limit(512) == (500, 812), "a lower limit of the user's own is kept"
    monkeypatch.setattr(os, "getuid", lambda: 0)
    assert reaper.child_limit(512) is None, "the kernel does not apply it to root"


# -- where the kernel has less -------------------------------------------------------------------


def test_without_children_files_a_proc_scan_finds_the_same(cwd, monkeypatch):
    monkeypatch.setattr(reaper, "_children_files", False)
    mark = marker()
    result = ex.run_command(detach(ALL_ESCAPES, mark, cwd) + "echo detached", cwd, timeout=10)
    assert len(ALL_ESCAPES) <= result["stopped_processes"] <= len(ALL_ESCAPES) + 2, result
    assert_killed_and_reaped(ALL_ESCAPES, mark, cwd)


def test_without_proc_the_process_group_is_still_killed(cwd, monkeypatch):
    monkeypatch.setattr(reaper, "read_proc", lambda pid: None)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: [])
    mark = marker()
    cancel = ex.Cancel()
    run = Background(f"echo $$; sleep {mark} & sleep {mark}", cwd, timeout=30, cancel=cancel)
    assert run.wait_output("\n")
    assert wait_for(lambda: len(live_sleeps(mark)) == 2)
    cancel.cancel()
    result = run.join()
    assert result["cancelled"] is True
    assert_no_leak(mark, int(result["output"].split()[0]))


def test_an_orphan_caught_mid_execve_is_looked_at_again(cwd, monkeypatch):
    # /proc shows an empty environment while a process is inside execve (or exiting): the
    # first read of each orphan's environment comes back empty here, as it did in a real run
    real_read = reaper._read
    read_once: set[str] = set()

    def mid_execve(path: str):
        if path.endswith("/environ") and path not in read_once:
            read_once.add(path)
            return b""
        return real_read(path)

    monkeypatch.setattr(reaper, "_read", mid_execve)
    mark = marker()
    result = ex.run_command(detach(["daemon"], mark, cwd) + "echo ok", cwd, timeout=10)
    assert result["stopped_processes"] in LEFT_BEHIND["daemon"], result
    assert_killed_and_reaped(["daemon"], mark, cwd)


def test_waiting_for_an_orphan_that_cannot_be_judged_is_bounded(cwd):
    # the known gap: a new session, an empty environment, no pipe, orphaned at once (unless a
    # census saw it first, it is not recognised and runs on); its empty environment looks like
    # one read mid-execve, and waiting for it to become recognisable is bounded
    mark = marker()
    command = (f"setsid sh -c 'echo $$ >{cwd}/g.tmp && mv {cwd}/g.tmp {cwd}/g.pid && exec env -i sleep {mark}'"
               " </dev/null >/dev/null 2>&1 & while [ ! -e g.pid ]; do sleep 0.01; done")
    started = time.monotonic()
    result = ex.run_command(command, cwd, timeout=10)
    elapsed = time.monotonic() - started
    pid = int(open(os.path.join(cwd, "g.pid")).read())
    try:
        assert result["ok"] is True
        assert elapsed < reaper._UNSURE_FOR + 1.0, f"took {elapsed:.2f}s"
        if stat_of(pid) is not None and stat_of(pid)[1] == os.getpid():  # it runs on as our child:
            started = time.monotonic()  # the next command does not wait for it again
            assert ex.run_command("true", cwd)["ok"] is True
            assert time.monotonic() - started < reaper._UNSURE_FOR / 2
    finally:  # the test started it: end it, and reap it if it came to us
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def our_zombies() -> set[int]:
    """Zombie children of this process (the test runner is DashFloat here)."""
    found = set()
    for pid in reaper._children_from_files(os.getpid()):
        state = stat_of(pid)
        if state is not None and state[0] == "Z":
            found.add(pid)
    return found


def test_the_middle_processes_of_a_double_fork_do_not_pile_up_as_zombies(cwd):
    # the middle processes leave the session and die at once, before anything sees them alive
    before = our_zombies()
    for _ in range(3):
        mark = marker()
        if os.path.exists(os.path.join(cwd, "daemon.pid")):
            os.unlink(os.path.join(cwd, "daemon.pid"))
        result = ex.run_command(detach(["daemon"], mark, cwd) + "echo ok", cwd, timeout=10)
        assert result["ok"] is True
        assert_killed_and_reaped(["daemon"], mark, cwd)
    # and a chain of five shells, each in a new session, each gone once it started the next
    mark = marker()
    inner = f"echo $$ >{cwd}/chain.tmp && mv {cwd}/chain.tmp {cwd}/chain.pid && exec sleep {mark}"
    for _ in range(5):
        inner = f"setsid sh -c {shell_quote(inner)} &"
    result = ex.run_command(inner + " while [ ! -e chain.pid ]; do sleep 0.01; done", cwd, timeout=10)
    assert result["ok"] is True
    assert_killed_and_reaped(["chain"], mark, cwd)
    assert wait_for(lambda: not (our_zombies() - before)), {p: stat_of(p) for p in our_zombies() - before}


def test_a_long_command_that_keeps_daemonising_leaves_no_zombies_meanwhile(cwd):
    # five daemons, each dead at once: the census reaps their middle processes while it runs
    before = our_zombies()
    mark = marker()
    daemon = ESCAPES["daemon"].format(d=cwd, n="d", m="0", py=sys.executable)
    command = f"for i in 1 2 3 4 5; do {daemon}; done; echo ready; sleep {mark}"
    cancel = ex.Cancel()
    run = Background(command, cwd, timeout=30, cancel=cancel)
    assert run.wait_output("ready\n", timeout=10)
    try:
        assert wait_for(lambda: not (our_zombies() - before)), {p: stat_of(p) for p in our_zombies() - before}
    finally:
        cancel.cancel()
    assert run.join()["cancelled"] is True


# -- the parts, one at a time (found by `make mutation`) -----------------------------------------


def test_cancel_wakes_every_subscriber_at_once_and_only_while_subscribed():
    cancel = ex.Cancel()
    early, late, left = threading.Event(), threading.Event(), threading.Event()
    cancel._subscribe(early)
    cancel._subscribe(left)
    cancel._unsubscribe(left)
    cancel._unsubscribe(threading.Event())   # never subscribed: nothing happens
    assert not early.is_set()
    cancel.cancel()
    assert early.is_set() and not left.is_set()
    cancel._subscribe(late)   # subscribing after the cancel wakes at once
    assert late.is_set()


def test_a_run_leaves_no_subscription_behind(cwd):
    cancel = ex.Cancel()
    ex.run_command("true", cwd, cancel=cancel)
    assert cancel._wakers == []


def test_if_the_proc_walk_fails_the_group_is_still_killed_and_nothing_is_counted(cwd, monkeypatch):
    mark = marker()

    def broken_kill(self, others=frozenset()):
        raise RuntimeError("a bug in the /proc walk")

    monkeypatch.setattr(reaper.Call, "kill", broken_kill)
    result = ex.run_command(f"echo $$; sleep {mark}", cwd, timeout=0.3)
    assert result["code"] == "timeout" and "stopped_processes" not in result
    assert_no_leak(mark, int(result["output"].split()[0]))
    result = ex.run_command("echo done", cwd)
    assert result == {"ok": True, "exit_code": 0, "output": "done\n", "truncated": False, "bytes": 5}


def test_an_interpreter_that_exits_while_a_command_runs_kills_it(cwd):
    mark = marker()
    script = (
        "import threading, time\n"
        "from dashfloat.tools import exec as ex\n"
        f"threading.Thread(target=ex.run_command, args=('sleep {mark}', {cwd!r}), daemon=True).start()\n"
        "deadline = time.monotonic() + 5\n"
        "while not ex._registry and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print(len(ex._registry), flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "1", done.stderr
    assert wait_for(lambda: not live_sleeps(mark)), f"leaked: {live_sleeps(mark)}"


class Collected:
    """An on_output callback that records what it is given."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.event = threading.Event()

    def __call__(self, text: str) -> None:
        self.texts.append(text)
        self.event.set()


def test_output_is_capped_at_exactly_max_output_bytes_live_and_in_the_result():
    live = Collected()
    out = ex._Output(-1, 10, live)
    out._take(b"123456789")
    out._take(b"abc")
    out._flush(final=True)
    assert bytes(out.head) == b"123456789a" and out.total == 12
    assert "".join(live.texts) == "123456789a"
    assert out.snapshot() == ("123456789a\n[output truncated: 10 of 12 bytes shown]", True, 12)


def test_a_zero_cap_shows_only_the_marker(cwd):
    result = ex.run_command("printf 'abc'", cwd, max_output=0)
    assert result["output"] == "[output truncated: 0 of 3 bytes shown]"
    assert result["truncated"] is True and result["bytes"] == 3


def test_live_output_is_due_at_once_past_the_byte_threshold_and_within_the_interval_below():
    out = ex._Output(-1, 1 << 20, Collected())
    assert out._flush_due() is None
    out._take(b"x")
    assert out._flush_due() == 0.0   # nothing forwarded yet: the first output goes at once
    out._flush()
    assert out._flush_due() is None
    out._take(b"y" * (ex._FLUSH_BYTES - 1))
    assert 0.0 < out._flush_due() <= ex._FLUSH_INTERVAL   # coalesced: due within the interval
    out._take(b"y")
    assert out._flush_due() == 0.0   # the byte threshold: at once
    out._flush()
    out._take(b"z" * 10)
    assert 0.0 < out._flush_due() <= ex._FLUSH_INTERVAL


def test_a_character_split_between_two_reads_is_forwarded_whole():
    live = Collected()
    out = ex._Output(-1, 100, live)
    out._take("é".encode()[:1])
    out._flush()
    out._take("é".encode()[1:] + b"!")
    out._flush(final=True)
    assert "".join(live.texts) == "é!"


def test_a_character_cut_by_the_end_of_the_output_is_forwarded_replaced():
    live = Collected()
    out = ex._Output(-1, 100, live)
    out._take(b"ok\xc3")
    out._flush(final=True)
    assert "".join(live.texts) == "ok\ufffd"


def test_live_output_ending_inside_a_character(cwd):
    live = Collected()
    result = ex.run_command(r"printf 'ok\303'", cwd, on_output=live)
    assert result["output"] == "ok\ufffd"
    assert "".join(live.texts) == "ok\ufffd"


def test_a_failing_on_output_is_called_once_then_disabled():
    calls = []

    def boom(text: str) -> None:
        calls.append(text)
        raise RuntimeError("ui bug")

    out = ex._Output(-1, 100, boom)
    for piece in (b"a", b"b"):
        out._take(piece)
        out._flush()
    assert calls == ["a"] and out.on_output is None


def test_told_to_stop_the_reader_takes_what_is_already_in_the_pipe():
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"tail of the output")   # the write end stays open: no EOF
        out = ex._Output(read_end, 100, None)
        out.stop.set()
        reader = threading.Thread(target=out.run, daemon=True)
        reader.start()
        reader.join(2)
        assert not reader.is_alive()
        assert bytes(out.head) == b"tail of the output"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_output_written_just_after_a_flush_is_forwarded_while_the_command_is_quiet():
    read_end, write_end = os.pipe()
    live = Collected()
    out = ex._Output(read_end, 100, live)
    reader = threading.Thread(target=out.run, daemon=True)
    reader.start()
    try:
        os.write(write_end, b"one\n")
        assert live.event.wait(3)
        live.event.clear()
        os.write(write_end, b"two\n")   # within the coalescing interval: pending, then due
        assert live.event.wait(3), "pending output waited for more output"
        assert "".join(live.texts) == "one\ntwo\n"
    finally:
        os.close(write_end)
        reader.join(3)
        os.close(read_end)


def test_stdin_data_waits_for_a_child_that_reads_late(cwd):
    data = b"x" * (512 * 1024)   # more than the pipe holds: the writer must wait for room
    result = ex.run_command("sleep 0.4; wc -c", cwd, timeout=10, stdin_data=data)
    assert result["ok"] is True and result["output"].strip() == str(len(data))


CUT_CASES = ["\u0080", "\u07ff", "\u0800", "\uffff", "\U00010000", "\U0010ffff", "é", "€", "😀"]


@pytest.mark.parametrize("char", CUT_CASES)
def test_cut_utf8_drops_only_an_incomplete_last_character(char):
    whole = char.encode()
    for prefix in (b"", b"a"):
        assert ex._cut_utf8(prefix + whole) == prefix + whole
        assert ex._cut_utf8(prefix + whole + b"z") == prefix + whole + b"z"
        for cut in range(1, len(whole)):
            assert ex._cut_utf8(prefix + whole[:cut]) == prefix, (prefix, whole[:cut])


def test_cut_utf8_leaves_what_is_not_a_cut_character():
    assert ex._cut_utf8(b"") == b""
    assert ex._cut_utf8(b"abc") == b"abc"
    assert ex._cut_utf8(b"\x80") == b"\x80"   # a stray continuation byte: not ours to judge
    assert ex._cut_utf8(b"\x80\x80\x80\x80\x80") == b"\x80\x80\x80\x80\x80"


def test_the_waiter_wakes_the_runner_and_leaves_the_shell_unreaped():
    proc = subprocess.Popen(["true"], start_new_session=True)
    try:
        run = ex._Run(proc, "m")
        ex._waiter(run)
        assert run.exited and run.wake.is_set()
        assert stat_of(proc.pid)[0] == "Z"   # a zombie: its pid cannot be reused yet
    finally:
        proc.wait()


def test_an_unknown_signal_is_named_by_its_number():
    assert ex._signal_name(9) == "SIGKILL"
    assert ex._signal_name(99) == "signal 99"


def test_a_signal_numbered_one_is_a_signal_too(cwd):
    # the shell itself may have SIGHUP ignored from birth (nohup); a fresh interpreter resets it
    kill_self = "import os, signal; signal.signal(signal.SIGHUP, signal.SIG_DFL); os.kill(os.getpid(), signal.SIGHUP)"
    result = ex.run_command(f"exec {sys.executable} -c '{kill_self}'", cwd)
    assert result["signal"] == "SIGHUP" and result["error"] == "killed by signal SIGHUP"


def test_the_command_inherits_no_descriptor_of_dashfloat(cwd):
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        result = ex.run_command(f"if [ -e /proc/self/fd/{write_end} ]; then echo leaked; else echo clean; fi", cwd)
        assert result["output"] == "clean\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_cannot_start_names_the_reason(tmp_path):
    result = ex.run_command("echo hi", str(tmp_path / "missing"))
    assert result["error"] == "could not start the command: No such file or directory"


def test_a_failing_runner_is_an_internal_error_and_kills_the_command(cwd, monkeypatch):
    mark = marker()

    def broken_wait(*args):
        raise RuntimeError("a bug in the wait loop")

    monkeypatch.setattr(ex, "_wait", broken_wait)
    result = ex.run_command(f"sleep {mark}", cwd)
    assert result["ok"] is False and result["code"] == "internal"
    assert result["error"] == "the command runner failed; the command was killed"
    assert wait_for(lambda: not live_sleeps(mark))


def census_saying(monkeypatch, tasks: int) -> None:
    """Every census reports `tasks` processes and threads."""
    def census(self, others=frozenset()):
        self.peak = max(self.peak, tasks)
        return tasks

    monkeypatch.setattr(reaper.Call, "census", census)


@pytest.mark.parametrize(("tasks", "noted"), [(17, False), (18, True)])
def test_near_the_limit_means_ninety_percent_of_it(cwd, monkeypatch, tasks, noted):
    census_saying(monkeypatch, tasks)
    result = ex.run_command("sleep 0.3", cwd, max_processes=20)
    assert result["ok"] is True
    assert ("near its limit of 20" in result.get("note", "")) is noted, result


def test_exactly_the_budget_is_allowed_and_one_more_is_stopped(cwd, monkeypatch):
    census_saying(monkeypatch, 20)
    assert ex.run_command("sleep 0.3", cwd, max_processes=20)["ok"] is True
    census_saying(monkeypatch, 21)
    assert ex.run_command("sleep 5", cwd, max_processes=20)["code"] == "process_limit"


def test_waiting_for_a_command_costs_no_cpu(cwd):
    started = time.thread_time()
    ex.run_command("sleep 0.5", cwd)
    assert time.thread_time() - started < 0.25


def test_descendants_lists_a_process_and_everything_below_it():
    """What the Ctrl-G editor's hangup is passed on to (reaper.descendants)."""
    from dashfloat.tools.reaper import descendants
    from tests.procs import wait_for

    proc = subprocess.Popen(["/bin/sh", "-c", "sh -c 'sleep 30; :' & sleep 30; :"])

    def names_below() -> list[bytes]:
        names = []
        for pid in descendants(proc.pid)[1:]:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    names.append(f.read().split(b"\0")[0])
            except OSError:
                pass
        return sorted(names)

    try:
        found = wait_for(lambda: len(descendants(proc.pid)) == 4 and descendants(proc.pid), timeout=5)
        assert found and found[0] == proc.pid, found
        # a child forked by a shell is "sh" until it has exec'd sleep: wait for that too
        assert wait_for(lambda: names_below() == [b"sh", b"sleep", b"sleep"], timeout=5), names_below()
    finally:
        for pid in reversed(descendants(proc.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()


# -- the reaper's pieces, one at a time (found by `make mutation`, i8 §5) ---------------------------

# /proc/PID/stat per proc(5), every field a different number: (3) state ... (5) pgrp (6) session
# (9) flags (20) num_threads (22) starttime; the command name holds ") (" and spaces
STAT_LINE = (b"4242 (a) b (c) S 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35\n")


def proc(pid=500, state="S", ppid=1, pgrp=500, sid=500, flags=0, threads=1, start=1000) -> reaper.Proc:
    return reaper.Proc(pid, state, ppid, pgrp, sid, flags, threads, start)


def test_read_proc_takes_each_field_from_its_place_after_the_last_parenthesis(monkeypatch):
    monkeypatch.setattr(reaper, "_read", lambda path: STAT_LINE if path == "/proc/4242/stat" else None)
    assert reaper.read_proc(4242) == reaper.Proc(pid=4242, state="S", ppid=12, pgrp=13, sid=14, flags=17,
                                                 threads=28, start=30)
    assert reaper.read_proc(4243) is None


@pytest.mark.parametrize("raw", [b"", b"4242 (sh) S 1 2", b"4242 (sh) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"])
def test_a_stat_line_that_cannot_be_parsed_is_no_process(monkeypatch, raw):
    monkeypatch.setattr(reaper, "_read", lambda path: raw)
    assert reaper.read_proc(4242) is None


def test_read_proc_of_a_real_process():
    child = subprocess.Popen([sys.executable, "-S", "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE, start_new_session=True)
    try:
        found = reaper.read_proc(child.pid)
        with open("/proc/uptime") as f:
            now = float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")
        assert found.pid == child.pid and found.ppid == os.getpid()
        assert found.pgrp == found.sid == child.pid
        assert found.alive and not found.exiting and found.threads == 1
        assert reaper.read_proc(os.getpid()).start <= found.start <= now + 1
    finally:
        child.stdin.close()
        child.wait()
    assert reaper.read_proc(child.pid) is None


@pytest.mark.parametrize(("state", "alive"), [("R", True), ("S", True), ("D", True), ("T", True),
                                               ("Z", False), ("X", False), ("x", False)])
def test_a_zombie_or_a_dead_process_is_not_alive(state, alive):
    assert proc(state=state).alive is alive


@pytest.mark.parametrize(("flags", "exiting"), [(0, False), (0x4, True), (0x400044, True), (0x400040, False),
                                               (0x1, False), (0x3, False)])
def test_exiting_is_the_pf_exiting_flag(flags, exiting):
    assert proc(flags=flags).exiting is exiting


def test_read_reads_a_file_longer_than_one_read_whole(tmp_path):
    data = bytes(range(256)) * 1000  # 256,000 bytes: several reads of 64 KiB
    (tmp_path / "f").write_bytes(data)
    assert reaper._read(str(tmp_path / "f")) == data
    (tmp_path / "empty").write_bytes(b"")
    assert reaper._read(str(tmp_path / "empty")) == b""
    assert reaper._read(str(tmp_path / "missing")) is None
    assert reaper._read(str(tmp_path)) is None  # a directory: the read fails


def test_read_leaves_no_descriptor_open(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(3):
        reaper._read(str(tmp_path / "f"))
        reaper._read(str(tmp_path))
    assert set(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{os.getpid()}/children"), reason="kernel without children files")
def test_the_kernels_children_files_are_found_and_remembered(monkeypatch):
    monkeypatch.setattr(reaper, "_children_files", None)
    assert reaper._have_children_files() is True
    monkeypatch.setattr(reaper, "_children_files", False)  # remembered: not looked for again
    assert reaper._have_children_files() is False


@pytest.mark.parametrize(("env", "found"), [
    (b"A=1\0DASHFLOAT_CALL=7-3\0B=2\0", True),
    (b"DASHFLOAT_CALL=7-3\0", True),  # the first variable
    (b"A=1\0DASHFLOAT_CALL=7-31\0", False),  # another call's id that starts the same
    (b"A=1\0XDASHFLOAT_CALL=7-3\0", False),
    (b"A=DASHFLOAT_CALL=7-3\0", False),
    (b"A=1\0", False),
    (b"", None),  # reads empty: mid-execve, exiting, or cleared: look again
    (None, False),  # cannot be read
])
def test_has_marker_matches_the_whole_variable(monkeypatch, env, found):
    monkeypatch.setattr(reaper, "_read", lambda path: env if path == "/proc/99/environ" else b"?")
    assert reaper.has_marker(99, "7-3") is found


def test_holds_any_finds_a_pipe_among_the_descriptors():
    r, w = os.pipe()
    other_r, other_w = os.pipe()
    try:
        link = reaper.pipe_link(w)
        assert link is not None and link.startswith("pipe:[")
        assert reaper.holds_any(os.getpid(), frozenset({link})) is True
        os.close(r)
        os.close(w)
        r = w = -1
        assert reaper.holds_any(os.getpid(), frozenset({link})) is False
        assert reaper.holds_any(os.getpid(), frozenset()) is False
        assert reaper.holds_any(2 ** 22 + 1, frozenset({reaper.pipe_link(other_r)})) is False  # no such pid
    finally:
        for fd in (r, w, other_r, other_w):
            if fd >= 0:
                os.close(fd)
    assert reaper.pipe_link(other_w) is None  # closed


def test_user_tasks_counts_the_threads_of_the_users_live_processes(monkeypatch):
    procs = {10: proc(pid=10, threads=3), 11: proc(pid=11, threads=0), 12: proc(pid=12, state="Z", threads=5),
             13: proc(pid=13, threads=2), 14: None}
    owners = {10: 1000, 11: 1000, 12: 1000, 13: 1001}
    monkeypatch.setattr(reaper, "_proc_pids", lambda: [15, 13, 10, 11, 12, 14])  # gone, someone else's first
    monkeypatch.setattr(reaper, "read_proc", lambda pid: procs.get(pid))

    class St:
        def __init__(self, uid):
            self.st_uid = uid

    real_stat = os.stat

    def fake_stat(path, *a, **kw):
        if isinstance(path, str) and path.startswith("/proc/"):
            pid = int(path.rsplit("/", 1)[1])
            if pid == 15:
                raise FileNotFoundError(path)
            return St(owners.get(pid, 1000))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", fake_stat)
    counted = reaper.user_tasks(1000), reaper.user_tasks(1001)
    monkeypatch.undo()
    assert counted == (3 + 1, 2)  # a zombie does not count; a process counts at least once


def test_proc_pids_lists_the_numeric_entries_of_proc():
    pids = reaper._proc_pids()
    assert os.getpid() in pids and all(isinstance(p, int) for p in pids)


def test_children_of_every_thread_are_found(monkeypatch):
    # a child started by a thread other than the main one is listed under that thread's tid
    children = []
    started = threading.Event()
    release = threading.Event()

    def spawn():
        children.append(subprocess.Popen(["sleep", "30"]))
        started.set()
        release.wait(10)

    t = threading.Thread(target=spawn)
    t.start()
    try:
        assert started.wait(10)
        pid = children[0].pid
        threads = reaper.read_proc(os.getpid()).threads
        assert threads >= 2
        assert pid in reaper._children_from_files(os.getpid(), threads)
        assert pid in reaper._children_from_files(os.getpid())
        assert pid in reaper._Tree().children(os.getpid())
        assert pid in reaper.descendants(os.getpid())
        assert reaper._children_from_files(2 ** 22 + 1) == []  # no such process
    finally:
        children[0].kill()
        children[0].wait()
        release.set()
        t.join()


_TWO_THREADS = """\
import subprocess, sys, threading
def work():
    child = subprocess.Popen(["sleep", "30"], process_group=0)
    print(child.pid, flush=True)
    child.wait()
threading.Thread(target=work, daemon=True).start()
sys.stdin.read()
"""


def test_a_call_finds_and_kills_the_child_of_a_second_thread_of_a_two_thread_process():
    """A command with exactly two threads whose second thread starts a program (here in a
    process group of its own, so the group kill does not reach it): the program is a member
    of the call, counted, and killed with it."""
    shell = subprocess.Popen([sys.executable, "-c", _TWO_THREADS], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, start_new_session=True)
    child = None
    try:
        child = int(shell.stdout.readline())
        assert wait_for(lambda: reaper.read_proc(shell.pid).threads == 2)  # the main thread and work()
        call = reaper.Call(shell.pid, reaper.new_marker())
        assert sorted(call.members()) == sorted([shell.pid, child])
        assert call.census() == 3  # two threads of the shell, and the program
        call.kill()
        assert wait_for(lambda: stat_of(child) is None or stat_of(child)[0] in ("Z", "X")), stat_of(child)
    finally:
        if child is not None and stat_of(child) is not None and stat_of(child)[0] not in ("Z", "X"):
            os.kill(child, signal.SIGKILL)
        shell.kill()
        shell.wait()
        shell.stdin.close()
        shell.stdout.close()


def test_descendants_stop_at_the_cap(monkeypatch):
    monkeypatch.setattr(reaper, "_SEEN_CAP", 5)
    monkeypatch.setattr(reaper, "_have_children_files", lambda: True)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: [pid * 10 + 1, pid * 10 + 2])
    assert reaper.descendants(1) == [1, 11, 12, 111, 112]


def test_descendants_list_a_child_once(monkeypatch):
    tree = {1: [2, 3], 2: [3], 3: [], 4: []}
    monkeypatch.setattr(reaper, "_have_children_files", lambda: True)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: tree[pid])
    assert reaper.descendants(1) == [1, 2, 3]
    assert reaper.descendants(4) == [4]


def test_without_children_files_the_tree_comes_from_one_scan_of_parents(monkeypatch):
    procs = {2: proc(pid=2, ppid=1), 3: proc(pid=3, ppid=2), 4: proc(pid=4, ppid=2), 5: None}
    scans = []
    monkeypatch.setattr(reaper, "_have_children_files", lambda: False)
    monkeypatch.setattr(reaper, "_proc_pids", lambda: scans.append(1) or [2, 3, 4, 5])
    monkeypatch.setattr(reaper, "read_proc", lambda pid: procs.get(pid))
    tree = reaper._Tree()
    assert tree.children(2) == [3, 4] and tree.children(1) == [2] and tree.children(3) == []
    assert scans == [1]


# -- Call: who belongs to a call -----------------------------------------------------------------


def a_call(monkeypatch, shell=700, since=5000, session=1) -> reaper.Call:
    monkeypatch.setattr(reaper, "read_proc", lambda pid: proc(pid=shell, start=since) if pid == shell else None)
    monkeypatch.setattr(os, "getsid", lambda pid: session if pid == 0 else -5)
    return reaper.Call(shell, "9-1", frozenset({"pipe:[77]"}))


def test_a_call_remembers_when_its_shell_started(monkeypatch):
    call = a_call(monkeypatch)
    assert call.since == 5000 and call.session == 1 and call.shell == 700
    assert call.peak == 0 and call.seen == {} and call.marker == "9-1" and call.pipes == frozenset({"pipe:[77]"})
    monkeypatch.setattr(reaper, "read_proc", lambda pid: None)
    assert reaper.Call(700, "9-1").since is None


@pytest.mark.parametrize(("orphan", "owned"), [
    (proc(pid=800, sid=700, pgrp=800), True),  # in the call's session
    (proc(pid=800, sid=800, pgrp=700), True),  # in its process group
    (proc(pid=800, sid=800, pgrp=800), "marker"),  # else the environment decides
])
def test_an_orphan_in_the_calls_session_or_group_is_a_member(monkeypatch, orphan, owned):
    call = a_call(monkeypatch)
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: False)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: "marker")
    assert call._owns(orphan) == owned


def test_an_orphan_seen_before_is_a_member_only_with_the_same_start_time(monkeypatch):
    call = a_call(monkeypatch)
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: False)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: False)
    call.seen[800] = 6000
    assert call._owns(proc(pid=800, sid=800, pgrp=800, start=6000)) is True
    assert call._owns(proc(pid=800, sid=800, pgrp=800, start=6001)) is False  # the pid was reused


def test_an_orphan_holding_a_pipe_of_the_call_is_a_member(monkeypatch):
    call = a_call(monkeypatch)
    held = []
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: held.append((pid, links)) or True)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: False)
    assert call._owns(proc(pid=800, sid=800, pgrp=800)) is True
    assert held == [(800, frozenset({"pipe:[77]"}))]


def test_an_exiting_orphan_cannot_be_judged_yet_unless_it_was_undecided_before(monkeypatch):
    call = a_call(monkeypatch)
    asked = []
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: False)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: asked.append((pid, marker)) or True)
    exiting = proc(pid=800, sid=800, pgrp=800, flags=0x4, start=6000)
    assert call._owns(exiting) is None and asked == []
    monkeypatch.setattr(reaper, "_undecided", {(800, 6000)})
    assert call._owns(exiting) is False
    assert call._owns(proc(pid=800, sid=800, pgrp=800, start=6000)) is False  # not even asked
    assert asked == []
    assert call._owns(proc(pid=800, sid=800, pgrp=800, start=6001)) is True  # another process
    assert asked == [(800, "9-1")]


@pytest.mark.parametrize(("zombie", "stray"), [
    (proc(pid=800, state="Z", sid=900, start=5001), True),  # started after the shell
    (proc(pid=800, state="Z", sid=900, start=4999), False),  # before
    (proc(pid=800, state="Z", sid=900, start=5000), True),  # in the shell's tick, a later pid
    (proc(pid=600, state="Z", sid=900, start=5000), False),  # in the shell's tick, an earlier pid
    (proc(pid=700 + 1, state="Z", sid=900, start=5000), True),
    (proc(pid=700, state="Z", sid=900, start=5000), False),
    (proc(pid=800, state="Z", sid=1, start=5001), False),  # in DashFloat's own session
])
def test_a_zombie_orphan_is_a_member_when_it_started_during_the_call_in_another_session(monkeypatch, zombie, stray):
    call = a_call(monkeypatch)
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: True)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: True)
    assert call._owns(zombie) is stray


def test_without_the_shells_start_no_zombie_is_taken_for_the_calls(monkeypatch):
    call = a_call(monkeypatch)
    call.since = None
    assert call._stray_zombie(proc(pid=800, state="Z", sid=900, start=9999)) is False


def test_count_counts_live_tasks_and_keeps_the_peak(monkeypatch):
    call = a_call(monkeypatch)
    found = {1: proc(pid=1, threads=3), 2: proc(pid=2, threads=0), 3: proc(pid=3, state="Z", threads=4)}
    assert call._count(found) == 4 and call.peak == 4
    assert call._count({1: proc(pid=1, threads=2)}) == 2 and call.peak == 4
    assert call._count({}) == 0 and call.peak == 4


def test_reap_zombies_waits_for_our_zombie_members_only(monkeypatch):
    call = a_call(monkeypatch)
    me = os.getpid()
    waited = []

    def waitpid(pid, options):
        waited.append((pid, options))
        if pid == 803:
            raise ChildProcessError(pid)
        return pid, 0

    monkeypatch.setattr(os, "waitpid", waitpid)
    found = {700: proc(pid=700, state="Z", ppid=me),  # the shell: its Popen reaps it
             801: proc(pid=801, state="Z", ppid=me),
             802: proc(pid=802, state="Z", ppid=5),  # not our child
             803: proc(pid=803, state="Z", ppid=me)}
    assert call._reap_zombies(found) is False
    assert waited == [(801, os.WNOHANG), (803, os.WNOHANG)]
    found[804] = proc(pid=804, ppid=me)
    found[805] = proc(pid=805, ppid=5)
    assert call._reap_zombies(found) is True  # a member child of ours is still alive
    assert call._reap_zombies({805: proc(pid=805, ppid=5)}) is False


def test_remember_undecided_forgets_the_gone_ones_when_full(monkeypatch):
    monkeypatch.setattr(reaper, "_UNDECIDED_CAP", 4)
    monkeypatch.setattr(reaper, "_undecided", {(1, 10), (2, 20), (3, 30)})
    live = {1: proc(pid=1, start=10), 2: proc(pid=2, start=21), 4: proc(pid=4, start=40),  # 2 is another
            5: proc(pid=5, start=50)}  # process now, 3 is gone
    monkeypatch.setattr(reaper, "read_proc", lambda pid: live.get(pid))
    reaper._remember_undecided({(4, 40)})
    assert reaper._undecided == {(1, 10), (2, 20), (3, 30), (4, 40)}, "room left: nothing looked at"
    reaper._remember_undecided({(5, 50)})
    assert reaper._undecided == {(1, 10), (4, 40), (5, 50)}
    reaper._remember_undecided({(6, 60), (7, 70)})  # no room even after forgetting: not kept
    assert reaper._undecided == {(1, 10), (4, 40), (5, 50)}
    reaper._remember_undecided({(6, 60)})  # exactly full
    assert reaper._undecided == {(1, 10), (4, 40), (5, 50), (6, 60)}


def test_kill_says_whether_the_system_refused(monkeypatch, caplog):
    sent = []

    def kill(pid, sig):
        sent.append((pid, sig))
        if pid == 2:
            raise ProcessLookupError(pid)
        if pid == 3:
            raise PermissionError(pid)

    monkeypatch.setattr(os, "kill", kill)
    with caplog.at_level("WARNING", logger="dashfloat.tools.reaper"):
        assert reaper._kill(1) is True and reaper._kill(2) is True and reaper._kill(3) is False
    assert [r.getMessage() for r in caplog.records] == ["exec: no permission to kill process 3"]
    assert sent == [(1, signal.SIGKILL), (2, signal.SIGKILL), (3, signal.SIGKILL)]


def test_new_markers_are_unique_and_name_this_process():
    a, b = reaper.new_marker(), reaper.new_marker()
    assert a != b and a.startswith(f"{os.getpid()}-") and b.startswith(f"{os.getpid()}-")


def test_holds_any_looks_past_a_descriptor_that_closed_meanwhile(monkeypatch):
    monkeypatch.setattr(os, "listdir", lambda path: ["3", "4", "5"])

    def readlink(path):
        if path.endswith("/3"):
            raise FileNotFoundError(path)  # closed between the listing and the look
        return "pipe:[5]" if path.endswith("/5") else "/dev/null"

    monkeypatch.setattr(os, "readlink", readlink)
    assert reaper.holds_any(123, frozenset({"pipe:[5]"})) is True
    assert reaper.holds_any(123, frozenset({"pipe:[6]"})) is False


def test_collect_takes_the_shells_tree_and_the_orphans_that_belong(monkeypatch):
    me = os.getpid()
    procs = {
        700: proc(pid=700, ppid=me, sid=700, pgrp=700, start=5000),  # the shell
        701: proc(pid=701, ppid=700, sid=700, pgrp=700), 702: proc(pid=702, state="Z", ppid=701, sid=700),
        710: proc(pid=710, ppid=me, sid=710, pgrp=710),  # another call's shell
        800: proc(pid=800, ppid=me, sid=700, pgrp=800),  # an orphan in the call's session
        805: proc(pid=805, ppid=800, sid=805, pgrp=805),  # its child, in a session of its own
        801: proc(pid=801, ppid=me, sid=801, pgrp=801),  # someone else's: the editor
        802: proc(pid=802, ppid=me, sid=802, pgrp=802, flags=0x4, start=6002),  # exiting: unsure
        804: proc(pid=804, state="Z", ppid=me, sid=804, pgrp=804, start=6004),  # a stray zombie
        711: proc(pid=711, ppid=710, sid=710, pgrp=710),
    }
    tree = {me: [700, 710, 800, 801, 802, 803, 804], 700: [701], 701: [702, 805], 702: [799], 710: [711],
            711: [], 800: [805], 805: [], 801: [], 802: [], 804: []}
    monkeypatch.setattr(reaper, "read_proc", lambda pid: procs.get(pid))
    monkeypatch.setattr(reaper, "_have_children_files", lambda: True)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: tree[pid])
    # the other call's shell looks like one of ours (it holds the pipe): only `others` keeps it out
    monkeypatch.setattr(reaper, "holds_any", lambda pid, links: pid == 710)
    monkeypatch.setattr(reaper, "has_marker", lambda pid, marker: False)
    monkeypatch.setattr(reaper, "_undecided", set())
    monkeypatch.setattr(os, "getsid", lambda pid: 1)
    reaped = []
    monkeypatch.setattr(os, "waitpid", lambda pid, options: reaped.append(pid) or (pid, 0))
    call = reaper.Call(700, "9-1")
    found, unsure = call._collect(frozenset({710}))
    assert sorted(found) == [700, 701, 702, 800, 804, 805]
    assert unsure is True and call._pending == {(802, 6002)}
    assert call.seen == {pid: procs[pid].start for pid in found}
    assert call.members(frozenset({710})) == found
    assert call.census(frozenset({710})) == 4  # the live ones, a task each
    assert reaped == [804]  # our zombie child; the shell is left to its Popen
    assert sorted(call.members()) == [700, 701, 702, 710, 711, 800, 804, 805]
    procs[802] = proc(pid=802, ppid=me, sid=802, pgrp=802, start=6002)  # judged now: not ours
    call = reaper.Call(700, "9-1")
    monkeypatch.setattr(reaper, "_SEEN_CAP", 2)
    found, unsure = call._collect(frozenset({710}))
    assert unsure is False and len(found) == 6 and len(call.seen) == 2  # remembered up to the cap


def test_prctl_failures_are_logged_and_mean_no_subreaper(monkeypatch, caplog):
    import ctypes

    class Libc:
        def __init__(self, answer):
            self.answer = answer
            self.calls = []
            self.use_errno = False

        def prctl(self, *args):
            self.calls.append(args)
            if self.answer != 0 and self.use_errno:  # as ctypes: the call's errno is kept only then
                ctypes.set_errno(errno.EINVAL)
            return self.answer

    libc = Libc(0)

    def cdll(name, use_errno=False):
        libc.use_errno = use_errno
        return libc

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    assert reaper._prctl_subreaper() is True
    assert libc.calls == [(36, 1, 0, 0, 0)]  # PR_SET_CHILD_SUBREAPER, on
    libc.answer = -1
    ctypes.set_errno(0)
    with caplog.at_level("WARNING", logger="dashfloat.tools.reaper"):
        assert reaper._prctl_subreaper() is False
    assert "PR_SET_CHILD_SUBREAPER failed: Invalid argument" in caplog.text  # the kernel's reason

    def no_libc(name, use_errno=False):
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    caplog.clear()
    with caplog.at_level("WARNING", logger="dashfloat.tools.reaper"):
        assert reaper._prctl_subreaper() is False
    assert "cannot become a child subreaper: no libc" in caplog.text
    monkeypatch.setattr(sys, "platform", "darwin")
    assert reaper._prctl_subreaper() is False


def test_enable_subreaper_asks_once_per_process(monkeypatch):
    asked = []
    monkeypatch.setattr(reaper, "_subreaper", {})
    monkeypatch.setattr(reaper, "_prctl_subreaper", lambda: asked.append(1) or True)
    assert reaper.enable_subreaper() is True and reaper.enable_subreaper() is True
    assert asked == [1]
    monkeypatch.setattr(os, "getpid", lambda: -7)  # a forked child: it asks for itself
    assert reaper.enable_subreaper() is True and asked == [1, 1]


# -- Call.kill and Call._reap, round by round (a scripted /proc and a fake clock) -------------------


class FakeTime:
    def __init__(self, step=0.0):
        self.now = 100.0
        self.step = step  # every look at the clock moves it on this much
        self.sleeps: list[float] = []

    def monotonic(self):
        self.now += self.step
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def scripted_call(monkeypatch, rounds, clock, refused=()):
    """A Call whose _collect answers `rounds` in turn (the last one again and again)."""
    monkeypatch.setattr(reaper, "read_proc", lambda pid: None)
    monkeypatch.setattr(reaper, "time", clock)
    call = reaper.Call(700, "9-1")
    answers = list(rounds)
    collected = []

    def collect(others):
        collected.append(others)
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(call, "_collect", collect)
    signals = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: signals.append(("group", pgid, sig)))
    monkeypatch.setattr(reaper, "_kill", lambda pid: signals.append(("one", pid)) or pid not in refused)
    reaps = []
    monkeypatch.setattr(call, "_reap", lambda others: reaps.append(others))
    return call, signals, reaps, collected


def live(*pids, threads=1):
    return {pid: proc(pid=pid, threads=threads) for pid in pids}


def test_kill_kills_every_live_member_and_counts_the_ones_besides_the_shell(monkeypatch):
    clock = FakeTime()
    rounds = [(live(700, 800, 801, threads=2), False), (live(801), False), ({}, False)]
    call, signals, reaps, collected = scripted_call(monkeypatch, rounds, clock, refused={801})
    assert call.kill(frozenset({710})) == 1  # 800; the shell is not counted, 801 refused the signal
    assert signals == [("group", 700, signal.SIGKILL), ("one", 700), ("one", 800), ("one", 801),
                       ("group", 700, signal.SIGKILL)]  # 801 refused: not tried again; the group at the end
    assert clock.sleeps == [0.0005]
    assert call.peak == 6  # counted before the first signal
    assert reaps == [frozenset({710})] and collected == [frozenset({710})] * 2


def test_kill_looks_again_with_growing_pauses_until_none_is_left(monkeypatch):
    clock = FakeTime()
    rounds = [(live(800), False)] * 8 + [({800: proc(pid=800, state="Z")}, False)]
    call, signals, _, _ = scripted_call(monkeypatch, rounds, clock)
    assert call.kill() == 1
    assert clock.sleeps == [0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.02, 0.02]
    assert signals.count(("one", 800)) == 8 and call.peak == 1


def test_kill_gives_up_on_a_process_that_does_not_die_after_3_s(monkeypatch, caplog):
    clock = FakeTime(step=0.25)
    call, signals, reaps, _ = scripted_call(monkeypatch, [(live(800), False)], clock)
    with caplog.at_level("ERROR", logger="dashfloat.tools.reaper"):
        assert call.kill() == 1
    assert "did not die: [800]" in caplog.text
    started = 100.25
    assert 2.9 < clock.now - started < 3.6
    assert reaps == [frozenset()]


def test_kill_waits_half_a_second_for_an_orphan_that_cannot_be_judged(monkeypatch):
    clock = FakeTime(step=0.01)
    monkeypatch.setattr(reaper, "_undecided", set())
    call, signals, _, _ = scripted_call(monkeypatch, [({}, True)], clock)
    call._pending = {(900, 9000)}
    assert call.kill() == 0
    assert 0.5 < clock.now - 100.0 < 0.6
    assert reaper._undecided == {(900, 9000)}  # the next call does not wait for it
    assert signals == [("group", 700, signal.SIGKILL)]  # nothing live: only the final group signal


def test_kill_stops_looking_once_the_unsure_orphan_is_judged(monkeypatch):
    clock = FakeTime(step=0.01)
    monkeypatch.setattr(reaper, "_undecided", set())
    call, _, _, _ = scripted_call(monkeypatch, [({}, True), ({}, True), ({}, False)], clock)
    call._pending = {(900, 9000)}
    assert call.kill() == 0
    assert len(clock.sleeps) == 2 and reaper._undecided == set()


def test_kill_without_the_right_to_signal_the_group_goes_on(monkeypatch):
    clock = FakeTime()
    call, signals, _, _ = scripted_call(monkeypatch, [(live(800), False), ({}, False)], clock)

    def killpg(pgid, sig):
        raise PermissionError(pgid)

    monkeypatch.setattr(os, "killpg", killpg)
    assert call.kill() == 1 and signals == [("one", 800)]
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: (_ for _ in ()).throw(ProcessLookupError(pgid)))
    assert call.kill() == 0


def test_reap_waits_for_killed_members_to_become_zombies_for_up_to_a_second(monkeypatch):
    clock = FakeTime(step=0.05)
    monkeypatch.setattr(reaper, "time", clock)
    monkeypatch.setattr(reaper, "read_proc", lambda pid: None)
    call = reaper.Call(700, "9-1")
    answers = [True, True, False]
    monkeypatch.setattr(call, "_collect", lambda others: ({}, False))
    monkeypatch.setattr(call, "_reap_zombies", lambda found: answers.pop(0))
    call._reap(frozenset())
    assert clock.sleeps == [0.0005, 0.001] and answers == []
    monkeypatch.setattr(call, "_reap_zombies", lambda found: True)  # never: up to the deadline
    start = clock.now
    call._reap(frozenset())
    assert 1.0 <= clock.now - start < 1.3
    assert max(clock.sleeps) == 0.02


def test_a_call_remembers_at_most_65536_processes(monkeypatch):
    me = os.getpid()
    many = {pid: proc(pid=pid, ppid=me, sid=700) for pid in range(100_000, 100_000 + 65_537)}
    monkeypatch.setattr(reaper, "read_proc", lambda pid: many.get(pid))
    monkeypatch.setattr(reaper, "_have_children_files", lambda: True)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: list(many) if pid == me else [])
    monkeypatch.setattr(os, "getsid", lambda pid: 1)
    call = reaper.Call(700, "9-1")
    found, _ = call._collect(frozenset())
    assert len(found) == 65_537 and len(call.seen) == 65_536


def test_at_most_1024_undecided_orphans_are_remembered(monkeypatch):
    monkeypatch.setattr(reaper, "_undecided", {(pid, 1) for pid in range(1, 1023)})  # 1,022
    monkeypatch.setattr(reaper, "read_proc", lambda pid: proc(pid=pid, start=1))  # all still there
    reaper._remember_undecided({(5000, 1), (5001, 1)})
    assert len(reaper._undecided) == 1024
    reaper._remember_undecided({(5002, 1)})
    assert len(reaper._undecided) == 1024 and (5002, 1) not in reaper._undecided


def test_without_proc_no_pid_is_listed(monkeypatch):
    def no_proc(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "listdir", no_proc)
    assert reaper._proc_pids() == []
    assert reaper.user_tasks(os.getuid()) == 0


@pytest.mark.parametrize(("tasks", "stopped"), [(1024, False), (1025, True)])
def test_the_default_budget_is_1024_processes_and_threads(cwd, monkeypatch, tasks, stopped):
    census_saying(monkeypatch, tasks)
    result = ex.run_command("sleep 0.3", cwd)
    assert (result.get("code") == "process_limit") is stopped, result
    if stopped:
        assert "more than 1024 processes and threads" in result["error"]


def test_collect_takes_a_process_listed_twice_once_and_goes_on(monkeypatch):
    # 701 is listed under the shell and again under 703: popped twice, taken once, and what is
    # left to look at (704) is still looked at
    procs = {pid: proc(pid=pid, ppid=700, sid=700, pgrp=700) for pid in (700, 701, 702, 703, 704)}
    tree = {700: [704, 701, 703], 703: [701], 701: [702], 702: [], 704: [], os.getpid(): [700]}
    monkeypatch.setattr(reaper, "read_proc", lambda pid: procs.get(pid))
    monkeypatch.setattr(reaper, "_have_children_files", lambda: True)
    monkeypatch.setattr(reaper, "_children_from_files", lambda pid, threads=0: tree[pid])
    monkeypatch.setattr(os, "getsid", lambda pid: 1)
    found, unsure = reaper.Call(700, "9-1")._collect(frozenset())
    assert sorted(found) == [700, 701, 702, 703, 704] and unsure is False


def test_without_a_session_of_its_own_no_zombie_is_taken_for_dashfloats(monkeypatch):
    # os.getsid(0) failing (it does not, on Linux) leaves a session no process has
    def no_session(pid):
        raise OSError("no session")

    monkeypatch.setattr(reaper, "read_proc", lambda pid: proc(pid=700, start=5000) if pid == 700 else None)
    monkeypatch.setattr(os, "getsid", no_session)
    call = reaper.Call(700, "9-1")
    assert call.session == -1
    assert call._stray_zombie(proc(pid=800, state="Z", sid=0, start=5001)) is True
    assert call._stray_zombie(proc(pid=800, state="Z", sid=-2, start=5001)) is True


def test_reap_zombies_goes_on_past_a_live_member(monkeypatch):
    call = a_call(monkeypatch)
    me = os.getpid()
    waited = []
    monkeypatch.setattr(os, "waitpid", lambda pid, options: waited.append(pid) or (pid, 0))
    assert call._reap_zombies({804: proc(pid=804, ppid=me), 801: proc(pid=801, state="Z", ppid=me)}) is True
    assert waited == [801]


def test_an_orphan_that_cannot_be_judged_is_waited_for_more_than_half_a_second(monkeypatch):
    clock = FakeTime(step=0.25)  # every look at the clock: a quarter of a second (exact in binary)
    clock.sleep = lambda seconds: clock.sleeps.append(seconds)  # the pauses take no time here
    monkeypatch.setattr(reaper, "_undecided", set())
    call, _, _, collected = scripted_call(monkeypatch, [({}, True)], clock)
    call.kill()
    # looked at when the clock says 100.5 (until 101.0), again at exactly 101.0 (not past it yet),
    # and a last time at 101.5
    assert len(collected) == 3 and len(clock.sleeps) == 2


# -- the runner's execute_command ----------------------------------------------------------------


def test_the_runners_kill_all_stops_a_running_command(tmp_path):
    """Quitting (runner.kill_all) kills the commands as well as the searches."""
    from dashfloat.tools import runner

    mark = marker()
    args = {"command": f"echo started; sleep {mark}"}
    prepared = runner.prepare("execute_command", args, str(tmp_path))
    seen = threading.Event()
    box = {}
    thread = threading.Thread(target=lambda: box.update(r=runner.execute(
        "execute_command", args, str(tmp_path), prepared, exec_timeout=30,
        on_output=lambda text: seen.set())), daemon=True)
    thread.start()
    assert seen.wait(5) and wait_for(lambda: len(live_sleeps(mark)) == 1)
    runner.kill_all()
    thread.join(5)
    assert not thread.is_alive() and box["r"]["cancelled"] is True
    assert not live_sleeps(mark)


def test_a_working_directory_gone_since_the_preview_is_a_result(tmp_path):
    from dashfloat.tools import runner

    root = tmp_path / "root"
    root.mkdir()
    args = {"command": "true"}
    prepared = runner.prepare("execute_command", args, str(root))
    root.rmdir()
    got = runner.execute("execute_command", args, str(root), prepared)
    assert got["ok"] is False and got["code"] == "not_found", got
    assert got["error"] == f"no such file or directory: {root}"


def test_a_command_leaves_no_descriptor_open(tmp_path):
    from dashfloat.tools import runner

    (tmp_path / "sub").mkdir()
    args = {"command": "pwd", "cwd": "sub"}
    prepared = runner.prepare("execute_command", args, str(tmp_path))
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(3):
        got = runner.execute("execute_command", args, str(tmp_path), prepared)
        assert got["ok"] and got["output"].rstrip("\n").endswith("/sub"), got
    assert set(os.listdir("/proc/self/fd")) == before


# -- entering the checked directory ---------------------------------------------------------------


def test_with_proc_the_child_enters_through_it_and_popen_needs_no_preexec_fn(tmp_path):
    """/proc/self/fd/N keeps Popen's fast spawn path: no preexec_fn (which Python warns can
    deadlock in a program with threads) unless a process limit needs one."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc here")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ex._enter(str(tmp_path), fd, None) == (f"/proc/self/fd/{fd}", None)
        assert ex._enter(str(tmp_path), None, None) == (str(tmp_path), None)
    finally:
        os.close(fd)


@pytest.mark.parametrize("limit", [None, (3000, 3000)])
def test_without_proc_the_child_enters_the_held_directory_and_keeps_its_limit(tmp_path, monkeypatch, limit):
    """Where there is no /proc the child fchdirs to the descriptor (the directory that was
    checked, whatever its name leads to now) and the process limit is still set."""
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if p == "/proc/self/fd" else real_isdir(p))
    monkeypatch.setattr(reaper, "child_limit", lambda budget: limit)
    (tmp_path / "d").mkdir()
    fd = os.open(tmp_path / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rename(tmp_path / "d", tmp_path / "checked")
        (tmp_path / "d").mkdir()  # the name leads elsewhere now
        result = ex.run_command('pwd -P; grep "^Max processes" /proc/$$/limits', str(tmp_path / "d"), cwd_fd=fd)
    finally:
        os.close(fd)
    assert result["ok"], result
    where, limits = result["output"].splitlines()
    assert where == os.path.realpath(tmp_path / "checked")
    if limit is not None:
        assert limits.split()[2:4] == ["3000", "3000"], limits


def test_the_reader_keeps_reading_after_forwarding_output_that_came_due(cwd):
    """Output that arrived within 50 ms of a forward waits, is forwarded when due, and the
    reader goes on reading: what comes later is neither lost nor left in the pipe."""
    seen: list[str] = []
    cmd = "echo 1; sleep 0.01; echo 2; sleep 0.01; echo 3; sleep 0.3; echo end"
    result = ex.run_command(cmd, cwd, timeout=10, on_output=seen.append)
    assert result["output"] == "1\n2\n3\nend\n" and result["ok"] is True
    assert "".join(seen) == "1\n2\n3\nend\n"
