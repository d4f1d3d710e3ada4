"""Tests for dashfloat.tools.exec: real processes, process-group hygiene, bounds, cancel.

No fixed sleeps: every wait is a condition polled against a deadline. Leak checks scan /proc
for live (non-zombie) processes in the command's session or carrying a unique marker argument.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

import pytest

from dashfloat.tools import exec as ex
from dashfloat.tools.results import CODES
from tests.procs import live_with_marker, wait_for

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

_counter = itertools.count(1)


def marker() -> str:
    """A unique `sleep` duration: its cmdline identifies this test's processes in /proc."""
    return f"1000.{os.getpid()}{next(_counter):04d}"


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, session id) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[3])


def live_in_session(sid: int) -> list[int]:
    """Pids of live (not zombie) processes whose session id is `sid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        info = _stat(name)
        if info and info[1] == sid and info[0] not in ("Z", "X"):
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


def test_background_job_killed_after_normal_exit(cwd):
    mark = marker()
    result = ex.run_command(f"echo $$; sleep {mark} >/dev/null 2>&1 & echo bg", cwd)
    assert result["ok"] is True
    sid = int(result["output"].split()[0])
    assert_no_leak(mark, sid)


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
