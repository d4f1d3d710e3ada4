"""End to end through a real ssh link: OpenSSH's sshd on 127.0.0.1 (tests/sshd.py), `ssh -tt`
in a pty read through pyte, and a LinkProxy (tests/linkproxy.py) between them that counts the
bytes and cuts the link (RST). "The server" is this machine: DashFloat runs there from this
checkout's venv, with the test's own XDG directories and a marker variable in its environment
by which everything it started is found in /proc, whatever detached."""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import BIN_DIR, Term, dashfloat_bin
from tests.fakeserver import markdown_answer, sse_reply
from tests.linkproxy import LinkProxy
from tests.sshd import Sshd, marked, missing, remote_command, wait_until

MARK = "DASHFLOAT_SSH_MARK"

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    with Sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


class Remote:
    """How a test reaches "the server": ssh sessions through one link, all closed at the end."""

    def __init__(self, sshd: Sshd, link: LinkProxy, server, tmp: Path):
        self.sshd, self.link, self.server, self.tmp = sshd, link, server, tmp
        self.mark = uuid.uuid4().hex
        self.terms: list[Term] = []
        for d in ("home", "config", "state", "client"):
            (tmp / d).mkdir(exist_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment DashFloat gets on the server (beside TERM and LANG from ssh)."""
        env = {
            "PATH": f"{BIN_DIR}:/usr/bin:/bin",
            "HOME": str(self.tmp / "home"),
            "XDG_CONFIG_HOME": str(self.tmp / "config"),
            "XDG_STATE_HOME": str(self.tmp / "state"),
            "EDITOR": "true",
            MARK: self.mark,
        }
        env.update(extra)
        return env

    def client_env(self, term: str | None, lang: str | None) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.tmp / "client")}
        if term is not None:
            env["TERM"] = term
        if lang is not None:
            env["LANG"] = lang
        return env

    def ssh(self, argv: list[str], *, term: str | None = "xterm-256color", lang: str | None = "C.UTF-8",
            rows: int = 24, cols: int = 80, unset: tuple[str, ...] = (), **env: str) -> Term:
        """`ssh -tt` through the link running `argv` on the server, in a pty with pyte on it."""
        command = remote_command(argv, env=self.env(**env), unset=unset, cwd=str(self.tmp))
        t = Term(self.sshd.ssh_argv(command, port=self.link.port), self.client_env(term, lang),
                 rows=rows, cols=cols, utf8=lang is not None and "UTF-8" in lang)
        t.child.delaybeforesend = None
        self.terms.append(t)
        return t

    def dash(self, *args: str, wait: bool = True, **kw) -> Term:
        t = self.ssh([dashfloat_bin(), "--base-url", self.server.url, "--model", "test-model", *args], **kw)
        if wait:
            wait_ready(t)
        return t

    def alive(self) -> list[int]:
        """Every live process on the server that this test's sessions started."""
        return marked(MARK, self.mark)

    def log(self) -> str:
        path = self.tmp / "state" / "dashfloat" / "dashfloat.log"
        return path.read_text() if path.exists() else ""

    def journal(self) -> list[dict]:
        (path,) = (self.tmp / "state" / "dashfloat" / "sessions").glob("*/*.jsonl")
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        for t in self.terms:
            t.close()
        self.link.close()
        import signal

        for pid in self.alive():  # whatever a failed test left on the server
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def remote(sshd, server, tmp_path):
    r = Remote(sshd, LinkProxy(sshd.port), server, tmp_path)
    try:
        yield r
    finally:
        r.close()


# ---- the first frame and a stream --------------------------------------------------------


def test_first_frame(remote):
    t = remote.dash()
    assert remote.link.down > 0 and remote.link.up > 0
    assert remote.alive(), "nothing with the marker on the server: the env did not arrive"
    assert "test-model" in t.status()


# ---- the link cut ------------------------------------------------------------------------

from tests.e2e.test_tools import call, calls_reply, wait_confirming  # noqa: E402


def cut_and_check(remote, t) -> None:
    """Cut the link (RST); on the server everything the session started is gone within 2 s,
    and the log has the hangup without a crash or a traceback."""
    assert remote.alive()
    remote.link.cut()
    left = wait_until(lambda: not remote.alive(), timeout=2.0)
    assert left, f"still running on the server 2 s after the cut: {remote.alive()}\n{remote.log()}"
    log = remote.log()
    assert "terminal closed (hangup)" in log, log
    assert "Traceback" not in log and "crashed" not in log and "ERROR" not in log, log
    end = remote.journal()[-1]
    assert end["type"] == "end" and end["reason"] == "hangup", (end, log)


def reconnect_and_continue(remote) -> Term:
    """A new ssh (another terminal size) running `dashfloat --continue`: the session is back."""
    t = remote.dash("--continue", rows=30, cols=100)
    t.wait_flat("Resumed session")
    return t


def test_cut_during_a_stream(remote, server):
    pieces = markdown_answer(400)
    hold = threading.Event()
    server.push(sse_reply([*pieces, "HeldBackEnd"], waits={len(pieces) // 2: hold}))
    t = remote.dash()
    t.type("explain\r")
    t.wait_status("streaming")
    t.wait_for(lambda t: remote.link.down > 0 and server.requests, what="the stream")
    cut_and_check(remote, t)
    hold.set()
    t2 = reconnect_and_continue(remote)
    t2.wait_flat("The last turn was interrupted")
    assert "explain" in t2.text
    assert "HeldBackEnd" not in t2.text


def test_cut_during_a_confirmation(remote, server, tmp_path):
    server.push(calls_reply(call("write_file", {"path": "notes.txt", "content": "x\n"}, call_id="call_w")))
    t = remote.dash()
    t.type("write\r")
    wait_confirming(t)
    cut_and_check(remote, t)
    assert not (tmp_path / "notes.txt").exists()
    t2 = reconnect_and_continue(remote)
    t2.wait_flat("write_file notes.txt")
    t2.wait_flat("cancelled: DashFloat stopped before this call ran: it did not run")


def sleeps(remote) -> list[int]:
    out = []
    for pid in remote.alive():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:1] == [b"sleep"]:
                    out.append(pid)
        except OSError:
            pass
    return out


@pytest.mark.parametrize("detach", ["", "setsid sleep 300 & ", "nohup sleep 300 >/dev/null 2>&1 & "])
def test_cut_during_a_running_command(remote, server, detach):
    command = f"{detach}sleep 300"
    server.push(calls_reply(call("execute_command", {"command": command}, call_id="call_sleep")))
    t = remote.dash("--permission-mode", "unrestricted")
    t.type("sleep\r")
    t.wait_status("running")
    want = 2 if detach else 1
    assert wait_until(lambda: len(sleeps(remote)) == want, timeout=5), remote.alive()
    cut_and_check(remote, t)
    t2 = reconnect_and_continue(remote)
    t2.wait_flat(f"execute_command {command}")
    t2.wait_flat("cancelled: DashFloat stopped while this call was running")
