"""End to end: nothing a command starts escapes a call, whatever way the call ends.

The command runs a script that detaches one `sleep MARK` in each way tests/procs.py knows
(setsid, nohup, a double fork, a process that ignores SIGTERM, a daemon with every descriptor
closed, a cleared environment), then finishes, hangs until the timeout, is cancelled with Esc,
or dashfloat quits (Ctrl-D), is hung up on (SIGHUP) or terminated (SIGTERM). Afterwards no
process with the mark is alive, and none is left as a zombie of dashfloat (it reaped them).
A fork bomb meets exec_max_processes. No fixed sleeps: every wait polls a condition.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid

import pytest

from tests.e2e.test_tools import (
    call,
    calls_reply,
    tool_results,
    wait_confirming,
    wait_posts,
)
from tests.fakeserver import sse_reply
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

ESC = "\x1b"
NAMES = list(ESCAPES)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    return root


def new_mark() -> str:
    return f"40.{uuid.uuid4().int % 10**8:08d}"


def write_script(project, mark: str) -> None:
    """detach.sh: detach every escape and return once all have detached."""
    (project / "detach.sh").write_text(escape_command(NAMES, mark, str(project), sys.executable) + "\n")


def start(agent_fn, server, project, command: str, config: str = ""):
    """dashfloat with `config` as its project file; the model asks for `command`, y approves."""
    if config:
        (project / ".dashfloat").mkdir()
        (project / ".dashfloat" / "config.toml").write_text(config)
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["Done."]))
    t = agent_fn("-C", str(project))
    t.type("detach things\r")
    wait_confirming(t)
    t.type("y")
    return t


def wait_detached(project, t) -> dict[str, int]:
    deadline = time.monotonic() + 15
    while not all((project / f"{name}.pid").exists() for name in NAMES):
        assert time.monotonic() < deadline, f"the escapes never detached:\n{t.dump()}"
        t.pump(0.02)
    return escaped_pids(NAMES, str(project))


def assert_all_gone(mark: str, pids: dict[str, int]) -> None:
    assert wait_for(lambda: not live_with_marker(mark), timeout=5), f"leaked: {live_with_marker(mark)}"
    assert wait_for(lambda: all(gone(pid, mark) for pid in pids.values()), timeout=5), {
        name: stat_of(pid) for name, pid in pids.items()
    }


def test_what_a_command_left_running_is_stopped_when_it_exits_and_the_model_is_told(dash, server, project):
    mark = new_mark()
    write_script(project, mark)
    t = start(dash, server, project, "sh detach.sh; echo detached")
    t.wait_text("Done.", timeout=20)
    t.wait_status("idle")
    pids = escaped_pids(NAMES, str(project))
    assert any("→ ok: exit 0" in line and "leftover processes stopped" in line for line in t.lines), t.dump()
    result = tool_results(wait_posts(server, 2)[1])["call_1"]
    assert result["ok"] is True and result["output"] == "detached\n", result
    assert result["stopped_processes"] >= len(NAMES), result
    assert "stopped when it exited" in result["note"]
    # while dashfloat still runs: every escape is dead and reaped, not a zombie of dashfloat,
    # and so are the middle processes of the double forks
    assert_all_gone(mark, pids)
    assert wait_for(lambda: not zombie_children(t.child.pid)), zombie_children(t.child.pid)


def zombie_children(pid: int) -> list[int]:
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            found += [int(c) for c in f.read().split() if (stat_of(int(c)) or ("?",))[0] == "Z"]
    return found


def test_detached_processes_are_stopped_on_timeout(dash, server, project):
    mark = new_mark()
    write_script(project, mark)
    t = start(dash, server, project, f"sh detach.sh; echo ready; sleep {mark}", config="exec_timeout = 4\n")
    pids = wait_detached(project, t)
    t.wait_text("→ error: timed out after 4s", timeout=20)
    assert_all_gone(mark, pids)
    result = tool_results(wait_posts(server, 2)[1])["call_1"]
    assert result["code"] == "timeout" and result["output"] == "ready\n", result


def test_detached_processes_are_stopped_on_esc(dash, server, project):
    mark = new_mark()
    write_script(project, mark)
    t = start(dash, server, project, f"sh detach.sh; echo ready; sleep {mark}")
    pids = wait_detached(project, t)
    t.wait_status("running")
    t.send(ESC)
    t.wait_text("→ cancelled")
    t.wait_status("idle")
    assert_all_gone(mark, pids)


@pytest.mark.parametrize("how", ["ctrl-d", "SIGHUP", "SIGTERM"])
def test_detached_processes_do_not_outlive_dashfloat(dash, server, project, how):
    mark = new_mark()
    write_script(project, mark)
    t = start(dash, server, project, f"sh detach.sh; echo ready; sleep {mark}")
    pids = wait_detached(project, t)
    t.wait_status("running")
    if how == "ctrl-d":
        t.send("\x04")
    else:
        t.child.kill(getattr(signal, how))
    t.wait_exit()
    assert_all_gone(mark, pids)


def test_a_fork_bomb_meets_exec_max_processes(dash, server, project):
    mark = new_mark()
    command = f"i=0; while [ $i -lt 2000 ]; do sleep {mark} & i=$((i+1)); done; echo started $i; wait"
    t = start(dash, server, project, command, config="exec_max_processes = 64\n")
    t.wait_text("Done.", timeout=30)
    t.wait_status("idle")
    result = tool_results(wait_posts(server, 2)[1])["call_1"]
    assert result["ok"] is False, result
    assert "started 2000" not in result["output"]
    if os.getuid() == 0:  # root: the kernel's limit does not apply, the census stops it
        assert result["code"] == "process_limit", result
        assert any("→ error: stopped: more than 64 processes" in line for line in t.lines), t.dump()
    else:  # the kernel refused the forks past the budget
        assert "fork" in result["output"].lower() and "exec_max_processes" in result["note"], result
    assert wait_for(lambda: not live_with_marker(mark), timeout=5), f"leaked: {len(live_with_marker(mark))}"
