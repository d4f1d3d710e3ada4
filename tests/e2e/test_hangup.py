"""End to end: an ssh drop (the pty's master closed, or SIGHUP) ends DashFloat quietly, as
the man page says: status 0, one "terminal closed (hangup)" line in the log, no crash entry
and no traceback, and no command left running."""

from __future__ import annotations

import json
import os
import platform
import signal
import threading
import time
import uuid

import pytest

from tests.e2e.harness import clean_env
from tests.fakeserver import markdown_answer, sse_reply
from tests.procs import live_with_marker, wait_for
from tests.test_agent_tools import calls_reply


def drop(t, timeout: float = 10.0) -> int:
    """Close the pty's master, as sshd does when the connection drops; returns the exit
    status (negative: the signal that ended it)."""
    pid = t.child.pid
    os.close(t.child.child_fd)
    t.eof = True
    t.child.ptyproc.closed = True  # the fixture's close() must not close the fd again
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            t.child.ptyproc.terminated = True
            return os.waitstatus_to_exitcode(status)
        assert time.monotonic() < deadline, "dashfloat did not exit after its terminal closed"
        time.sleep(0.02)


def log_of(tmp_path) -> str:
    return (tmp_path / "state" / "dashfloat" / "dashfloat.log").read_text()


def assert_quiet_hangup(tmp_path, journal: bool = False) -> None:
    log = log_of(tmp_path)
    assert log.count("terminal closed (hangup)") == 1, log
    assert "Traceback" not in log and "crashed" not in log and "ERROR" not in log, log
    if journal:  # a session was recorded: it ends with the hangup, whichever came first (EOF or SIGHUP)
        (path,) = (tmp_path / "state" / "dashfloat" / "sessions").glob("*/*.jsonl")
        end = json.loads(path.read_text().splitlines()[-1])
        assert end["type"] == "end" and end["reason"] == "hangup", end


def test_closed_pty_when_idle(dash, tmp_path):
    t = dash()
    assert drop(t) == 0
    assert_quiet_hangup(tmp_path)


def test_closed_pty_while_streaming(dash, server, tmp_path):
    pieces = markdown_answer(3000)
    hold = threading.Event()
    server.push(sse_reply([*pieces, "HeldBackEnd"], waits={len(pieces) + 1: hold}, rate=300))
    t = dash()
    t.type("go\r")
    t.wait_status("streaming")
    assert drop(t) == 0
    assert_quiet_hangup(tmp_path, journal=True)
    assert not hold.is_set()


WRITE_SYSCALL = {"x86_64": 1, "aarch64": 64}.get(platform.machine())


def in_write(pid: int) -> bool:
    """Whether the main thread of `pid` is blocked in write(2) (a full terminal)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/syscall") as f:
            return f.read().split()[0] == str(WRITE_SYSCALL)
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(WRITE_SYSCALL is None, reason="write(2)'s number on this machine is not known to the test")
def test_closed_pty_while_a_write_to_it_blocks(dash, server, tmp_path):
    """A terminal that stopped reading (a stalled ssh link): DashFloat's write blocks, and the
    hangup comes to it as EIO from that write, not as EOF on stdin. The same quiet exit, and
    the journal says hangup."""
    server.push(sse_reply(markdown_answer(60000), rate=2000))
    # without the frame clock, which holds frames while the terminal does not answer (a
    # terminal that stopped reading never does): the write must block for this test. A large
    # screen, so the frames (five a second) fill the pty's buffer in a few seconds
    t = dash(env=clean_env(tmp_path, DASHFLOAT_NO_FRAME_CLOCK="1"), rows=60, cols=200)
    t.type("go\r")
    t.wait_status("streaming")
    pid = t.child.pid
    assert wait_for(lambda: in_write(pid) and in_write(pid), timeout=25), "the write never blocked"
    assert drop(t) == 0
    assert_quiet_hangup(tmp_path, journal=True)


@pytest.mark.parametrize("how", ["closed pty", "SIGHUP"])
def test_a_hangup_while_a_command_runs_kills_it(how, dash, server, tmp_path):
    marker = f"41.{uuid.uuid4().int % 10**6:06d}"
    command = f"sleep {marker}"
    server.push(calls_reply(("c1", "execute_command", {"command": command})))
    t = dash("--allow", f"execute_command({command})")
    t.type("sleep\r")
    t.wait_status("running")
    assert wait_for(lambda: live_with_marker(marker), timeout=5), "the command never started"
    if how == "SIGHUP":
        t.child.kill(signal.SIGHUP)
        assert t.wait_exit() == 0
    else:
        assert drop(t) == 0
    left = wait_for(lambda: not live_with_marker(marker), timeout=5)
    assert left, f"the command outlived the app: {live_with_marker(marker)}"
    assert_quiet_hangup(tmp_path, journal=True)


def test_sighup_logs_the_hangup(dash, tmp_path):
    t = dash(env=clean_env(tmp_path))
    t.child.kill(signal.SIGHUP)
    assert t.wait_exit() == 0
    assert_quiet_hangup(tmp_path)
