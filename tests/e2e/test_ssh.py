"""End to end through a real ssh link: OpenSSH's sshd on 127.0.0.1 (tests/sshd.py), `ssh -tt`
in a pty read through pyte, and a LinkProxy (tests/linkproxy.py) between them that counts the
bytes and cuts the link (RST). "The server" is this machine: DashFloat runs there from this
checkout's venv, with the test's own XDG directories and a marker variable in its environment
by which everything it started is found in /proc, whatever detached."""

from __future__ import annotations

import json
import os
import shlex
import shutil
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
            rows: int = 24, cols: int = 80, unset: tuple[str, ...] = (), utf8: bool = True,
            **env: str) -> Term:
        """`ssh -tt` through the link running `argv` on the server, in a pty with pyte on it
        (a UTF-8 terminal unless `utf8` is False, whatever the locale)."""
        command = remote_command(argv, env=self.env(**env), unset=unset, cwd=str(self.tmp))
        t = Term(self.sshd.ssh_argv(command, port=self.link.port), self.client_env(term, lang),
                 rows=rows, cols=cols, utf8=utf8)
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


def cells(t: Term) -> list[tuple]:
    """The screen as pyte holds it: every cell's character and attributes, and the cursor."""
    rows = []
    for y in range(t.screen.lines):
        line = t.screen.buffer[y]
        rows.append(tuple((c.data, c.fg, c.bg, c.bold, c.reverse, c.underscore)
                          for c in (line[x] for x in range(t.screen.columns))))
    return [*rows, (t.screen.cursor.x, t.screen.cursor.y)]


def assert_repaint_identical(t: Term) -> None:
    """Ctrl-L (a full repaint) leaves the screen exactly as the frames before it made it."""
    t.wait_quiet(0.3)
    before = cells(t)
    text = t.dump()
    size = len(t.raw)
    t.send("\x0c")
    t.wait_for(lambda t: len(t.raw) > size, what="the repaint")
    t.wait_quiet(0.3)
    assert cells(t) == before, f"Ctrl-L changed the screen; before:\n{text}\nafter:\n{t.dump()}"


WORDS = [f"w{i:03d}" for i in range(1, 91)]


def word_answer(words=WORDS) -> list[str]:
    """An answer of short distinct words in three paragraphs, one piece per word."""
    pieces = []
    for i, w in enumerate(words):
        pieces.append(("\n\n" if i and i % 30 == 0 else " " if i else "") + w)
    return pieces


def test_a_stream_shows_every_word_and_ctrl_l_repaints_the_same(remote, server):
    server.push(sse_reply(word_answer(), rate=150))
    t = remote.dash()
    t.type("words\r")
    t.wait_status("streaming")
    t.wait_status("idle")
    missing_words = [w for w in WORDS if w not in t.text]
    assert not missing_words, f"not on screen: {missing_words}\n{t.dump()}"
    assert_repaint_identical(t)


def test_a_resize_through_ssh_mid_stream(remote, server):
    pieces = word_answer()
    hold = threading.Event()
    server.push(sse_reply(pieces, waits={45: hold}, rate=300))
    t = remote.dash()
    t.type("words\r")
    t.wait_text("w040")
    t.resize(30, 100)  # ssh sends a window-change; sshd resizes the server's pty
    t.wait_for(lambda t: t.status_row() == 28 and len(t.status().rstrip()) > 80, what="the layout at 100x30")
    hold.set()
    t.wait_status("idle")
    assert all(w in t.text for w in WORDS), t.dump()
    assert_repaint_identical(t)
    t.resize(12, 50)
    t.wait_for(lambda t: t.status_row() == 10 and "w090" in t.text, what="the layout at 50x12")
    assert_repaint_identical(t)


STYLED = ["# A heading\n\n", "Some **bold**, *em* and `code`.\n\n",
          "```python\ndef f(x):\n    return x + 1  # one\n```\n\n", "> quoted\n"]


def colour_codes(raw: bytes) -> set[int]:
    """The SGR parameters in `raw` that set a colour, and 256-colour ones as 38/48."""
    import re

    out = set()
    for params in re.findall(rb"\x1b\[([0-9;:]*)m", raw):
        codes = [int(p) for p in re.split(rb"[;:]", params) if p]
        out |= {c for c in codes if 30 <= c <= 49 or 90 <= c <= 107}
    return out


@pytest.mark.parametrize("term", ["xterm-256color", "screen-256color", "tmux-256color", "linux", "vt100"])
def test_terminal_types(remote, server, term):
    server.push(sse_reply(STYLED))
    t = remote.dash(term=term)
    t.type("hi\r")
    t.wait_text("return x + 1")
    t.wait_status("idle")
    for seen in ("A heading", "Some bold, em and code.", "def f(x):", "quoted"):
        assert seen in t.text, t.dump()
    codes = colour_codes(bytes(t.raw))
    if term == "vt100":
        assert not codes, sorted(codes)
    elif term == "linux":
        assert codes and not codes & {38, 48}, sorted(codes)  # 16 colours, never 256
    else:
        assert b"38;5;" in t.raw, "a 256-colour terminal without 256 colours"
    assert_repaint_identical(t)


@pytest.mark.parametrize("lang", ["C", None])
def test_c_locale_and_no_locale(remote, server, lang):
    """A server without locales (LANG=C, or nothing set) in a UTF-8 terminal."""
    server.push(sse_reply(["Caf\u00e9 na\u00efve ", "\u2192 done."]))
    unset = ("LANG", "LC_ALL", "LC_CTYPE", "LANGUAGE") if lang is None else ()
    t = remote.dash(lang=lang, unset=unset)
    t.type("caf\u00e9?\r")
    t.wait_text("Caf\u00e9 na\u00efve \u2192 done.")
    t.wait_status("idle")
    assert "caf\u00e9?" in t.text
    assert_repaint_identical(t)


def test_no_pty_is_one_clear_line_and_status_2(remote, sshd):
    """`ssh host dashfloat`: no pty, so no TERM either."""
    import subprocess

    command = remote_command([dashfloat_bin(), "--base-url", remote.server.url], env=remote.env(),
                             cwd=str(remote.tmp))
    out = subprocess.run(sshd.ssh_argv(command, port=remote.link.port, tty=False),
                         env=remote.client_env("xterm-256color", "C.UTF-8"), stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=30)
    lines = (out.stdout + out.stderr).decode().splitlines()
    assert out.returncode == 2 and len(lines) == 1, (out.returncode, lines)
    assert "interactive terminal" in lines[0] and "-p" in lines[0], lines


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
    assert log.count("terminal closed (hangup)") == 1, log
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
    t.wait_text("--print-config")
    cut_and_check(remote, t)
    hold.set()
    # what was streamed is kept, as Esc keeps it: the turn ends cancelled by the hangup
    events = [e for e in remote.journal() if e["type"] in ("prompt", "cancel", "answer", "turn_end", "end")]
    assert [e["type"] for e in events] == ["prompt", "cancel", "answer", "turn_end", "end"], events
    assert events[1]["by"] == "hangup" and events[3]["status"] == "cancelled", events
    kept = events[2]["content"]
    assert "--print-config" in kept and "".join(pieces[: len(pieces) // 2]).startswith(kept), kept[-200:]
    t2 = reconnect_and_continue(remote)
    last = kept.split()[-1]
    t2.wait_text(last)
    t2.wait_text("[cancelled: the answer above is partial]")
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


def test_cut_with_dashfloat_started_from_an_interactive_shell(remote, server):
    """`ssh host`, then `dashfloat` typed at bash's prompt (job control: DashFloat is a job in
    the foreground, bash leads the session and passes the hangup on)."""
    command = "nohup sleep 300 >/dev/null 2>&1 & sleep 300"
    server.push(calls_reply(call("execute_command", {"command": command}, call_id="call_sleep")))
    t = remote.ssh(["bash", "--norc", "--noprofile", "-i"], PS1="shell$ ")
    t.wait_text("shell$")
    t.type(shlex.join([dashfloat_bin(), "--base-url", server.url, "--model", "test-model",
                       "--permission-mode", "unrestricted"]) + "\r")
    wait_ready(t)
    t.type("sleep\r")
    t.wait_status("running")
    assert wait_until(lambda: len(sleeps(remote)) == 2, timeout=5), remote.alive()
    cut_and_check(remote, t)


def test_cut_while_the_prompt_is_open_in_the_editor(remote):
    """Ctrl-G runs $EDITOR in the foreground: the drop ends it, then DashFloat, as ever."""
    t = remote.dash(EDITOR="sleep 300; :")
    t.type("draft")
    t.send("\x07")  # Ctrl-G
    assert wait_until(lambda: len(sleeps(remote)) == 1, timeout=5), remote.alive()
    remote.link.cut()
    assert wait_until(lambda: not remote.alive(), timeout=2.0), remote.alive()
    log = remote.log()
    assert log.count("terminal closed (hangup)") == 1, log
    assert "Traceback" not in log and "crashed" not in log and "ERROR" not in log, log


# ---- tmux on the server --------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed; the tmux-over-ssh test skipped")
def test_tmux_keeps_the_stream_across_a_cut_and_a_reattach_at_another_size(remote, server):
    """`tmux new dashfloat` on the server, the link cut mid-stream, the stream goes on, a new
    ssh at another size attaches: the screen is whole and correct without Ctrl-L."""
    hold = threading.Event()
    server.push(sse_reply(word_answer(), waits={45: hold}, rate=300))
    tmux = ["tmux", "-L", "dashfloat-test", "-f", "/dev/null"]
    dash = [dashfloat_bin(), "--base-url", server.url, "--model", "test-model"]
    env = {"TMUX_TMPDIR": str(remote.tmp)}  # the socket lives in the test's directory
    t = remote.ssh([*tmux, "new-session", shlex.join(dash), ";", "set-option", "-g", "status", "off"], **env)
    wait_ready(t)
    t.type("words\r")
    t.wait_text("w040")
    remote.link.cut()
    hold.set()  # the rest streams while nobody is attached
    assert wait_until(lambda: any(e["type"] == "turn_end" for e in remote.journal()), timeout=10), \
        "the stream did not go on after the cut"
    t2 = remote.ssh([*tmux, "attach"], rows=30, cols=100, **env)
    t2.wait_for(lambda t: t.status_row() == 28 and " idle " in t.status() and "w090" in t.text,
                what="the reattached screen at 100x30, the answer complete")
    assert all(w in t2.text for w in WORDS), t2.dump()
    assert_repaint_identical(t2)


# ---- one file to copy (issue 15 §3) ----------------------------------------------------------


def test_the_pyz_copied_with_scp_runs_on_the_server_without_a_venv(remote, sshd, server, tmp_path):
    """What the README says: `scp dist/dashfloat.pyz host:` then `ssh -t host python3
    dashfloat.pyz`, into an empty directory, with a PATH that holds no venv."""
    import subprocess

    from tests import pyzbuild

    built = pyzbuild.build_pyz(tmp_path / "build" / "dashfloat.pyz")
    target = remote.tmp / "empty"
    target.mkdir()
    from tests.sshd import scp_argv

    before = remote.link.up
    done = subprocess.run(scp_argv(sshd, str(built), str(target), port=remote.link.port),
                          env=remote.client_env(None, None), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert remote.link.up - before > built.stat().st_size, "the copy went through the link"
    assert [p.name for p in target.iterdir()] == ["dashfloat.pyz"]
    assert (target / "dashfloat.pyz").read_bytes() == built.read_bytes()
    python = shutil.which("python3", path="/usr/bin:/bin")
    assert python, "no python3 in /usr/bin or /bin"
    server.push(sse_reply(["Hello from the pyz."]))
    command = remote_command([python, "dashfloat.pyz", "--base-url", server.url, "--model", "test-model"],
                             env=remote.env(PATH="/usr/bin:/bin", XDG_CACHE_HOME=str(remote.tmp / "cache")),
                             cwd=str(target))
    t = Term(sshd.ssh_argv(command, port=remote.link.port), remote.client_env("xterm-256color", "C.UTF-8"))
    t.child.delaybeforesend = None
    remote.terms.append(t)
    wait_ready(t)
    t.type("hi\r")
    t.wait_text("Hello from the pyz.")
    assert remote.alive() and not any(".venv" in path for path in _paths_of(remote.alive()))


def _paths_of(pids: list[int]) -> list[str]:
    """The PATH of each process (nothing of the venv may be on the server's)."""
    from tests.sshd import environ_of

    return [environ_of(pid).get("PATH", "") for pid in pids]
