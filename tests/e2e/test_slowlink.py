"""End to end: a slow link. The terminal here reads the pty at a capped rate (the pty's
buffer fills and pushes back, as sshd's buffers do on a slow ssh link) and answers the
cursor-position question as real terminals do. Frames are self-clocked (ui/frameclock.py):
holding a key, pasting a long text or a tool printing a flood never leaves the screen
behind the input by more than a frame or two; without the clock each case below lags by
seconds (frames queue behind each other in the pty). The limits are generous: a frame at
these rates takes 0.1-0.7 s to cross. The last test goes through real ssh (tests/sshd.py)
and the link proxy (tests/linkproxy.py) instead, skipped where sshd is missing.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.e2e.test_tools import call, calls_reply, wait_confirming
from tests.fakeserver import markdown_answer, sse_reply

FLOOD = ('i=0; while [ ! -e stop ]; do i=$((i+1)); '
         'echo "flood line $i with a few more words to fill the row"; done')
SLOW = 1000  # bytes a second the terminal reads during the flood (8 kbit/s)
LAG = 1.5  # seconds the screen may trail the last key (unclocked: 4-10 s)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def agent(dash, project):
    """agent(**kw) -> Term: dashfloat confined to `project`, past its first frame."""
    return lambda **kw: dash("-C", str(project), **kw)


def pump_for(t, seconds: float) -> None:
    """Keep the terminal reading (at its rate) for `seconds`: the pacing of typed keys."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t.pump(0.005)


def settled_after(t, since: float, quiet: float = 1.0, timeout: float = 30.0) -> float:
    """Seconds from `since` to the last byte the terminal read before `quiet` seconds of
    silence: when the screen reached its final state."""
    last = since
    deadline = time.monotonic() + timeout
    while time.monotonic() - last < quiet:
        assert time.monotonic() < deadline, "the screen never settled"
        if t.pump(0.02):
            last = time.monotonic()
    return last - since


def start_flood(agent, server, project):
    """A command printing without end, approved, its live output on screen, then the
    terminal slowed: returns the Term once a backlog would have built up unclocked."""
    server.push(calls_reply(call("execute_command", {"command": FLOOD})), sse_reply(["Flooded."]))
    t = agent(answers=True)
    t.child.delaybeforesend = None
    t.type("flood\r")
    wait_confirming(t)
    t.type("y")
    t.wait_for(lambda t: " running " in t.status() and "flood line" in t.text, what="the flood on screen")
    t.read_rate = SLOW
    start = len(t.raw)
    t.wait_for(lambda t: len(t.raw) - start > 4 * SLOW, what="4 s of the flood read")
    return t


def end_flood(t, project) -> None:
    t.read_rate = None
    (project / "stop").touch()
    t.wait_text("Flooded.", timeout=20)


def test_a_key_held_during_a_flood_on_a_slow_terminal_is_shown_at_once(agent, server, project):
    t = start_flood(agent, server, project)
    for _ in range(45):  # a held key: 30 repeats a second
        t.send("x")
        pump_for(t, 1 / 30)
    last = time.monotonic()
    t.wait_for(lambda t: "x" * 45 in t.lines[-1], timeout=LAG + 10, what="the 45 x's on the prompt row")
    lag = time.monotonic() - last
    assert lag <= LAG, f"the prompt showed the held key {lag:.2f} s after the last repeat"
    assert t.answers > 0  # the clock was on (the terminal answered its questions)
    end_flood(t, project)


def test_a_long_paste_during_a_flood_on_a_slow_terminal_is_shown_at_once(agent, server, project):
    t = start_flood(agent, server, project)
    text = "\n".join(f"pasted line {i} of a long text" for i in range(1, 301)) + "\nTHE END"
    t.send("\x1b[200~" + text + "\x1b[201~")
    sent = time.monotonic()
    t.wait_for(lambda t: "THE END" in t.lines[-1], timeout=LAG + 10, what="the paste's last line")
    lag = time.monotonic() - sent
    assert lag <= LAG, f"the paste's end showed {lag:.2f} s after it was sent"
    end_flood(t, project)


def test_pgup_held_on_a_slow_terminal_settles_at_once_and_whole(dash, server):
    """The issue's case: PgUp held for about a second (40 presses) at 32 kbit/s."""
    server.push(sse_reply(markdown_answer(3000)))
    t = dash(answers=True)
    t.child.delaybeforesend = None
    t.type("go\r")
    t.wait_for(lambda t: " idle " in t.status() and "tok" in t.status(), timeout=60, what="the long answer")
    t.wait_quiet(0.3)
    t.read_rate = 4000  # 32 kbit/s
    for _ in range(40):
        t.send("\x1b[5~")
        pump_for(t, 0.025)
    settle = settled_after(t, time.monotonic())
    assert settle <= LAG, f"the screen kept changing {settle:.2f} s after the last PgUp"
    shown = t.text
    assert " line " in t.status(), t.dump()  # scrolled back: the position shows
    t.read_rate = None
    t.send("\x0c")  # Ctrl-L: a full repaint shows what the frames left
    t.wait_quiet(0.5)
    assert t.text == shown


def test_pgup_held_through_ssh_at_32_kbit_settles_at_once(tmp_path, server):
    """The same through a real ssh link (tests/sshd.py) capped at 32 kbit/s by the link
    proxy: sshd and the ssh channel buffer far more than the pty, so only the terminal's
    answers can tell DashFloat that the link is behind."""
    from tests import sshd as sshd_mod
    from tests.e2e.harness import Term, dashfloat_bin
    from tests.linkproxy import LinkProxy

    reason = sshd_mod.missing()
    if reason:
        pytest.skip(reason)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "LANG": "C.UTF-8"}
    command = sshd_mod.remote_command([dashfloat_bin(), "--base-url", server.url, "--model", "test-model"],
                                      env=env, cwd=str(tmp_path))
    client_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                  "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    server.push(sse_reply(markdown_answer(3000)))
    with sshd_mod.Sshd(tmp_path / "sshd") as sshd, LinkProxy(sshd.port) as link:
        t = Term(sshd.ssh_argv(command, port=link.port), client_env, answers=True)
        try:
            t.child.delaybeforesend = None
            t.wait_for(lambda t: " idle " in t.status() and b"\x1b[?2004h" in t.raw, 30, "the first frame")
            t.type("go\r")
            t.wait_for(lambda t: " idle " in t.status() and "tok" in t.status(), timeout=60, what="the long answer")
            t.wait_quiet(0.3)
            link.set(rate=4000)  # 32 kbit/s
            for _ in range(40):
                t.send("\x1b[5~")
                pump_for(t, 0.025)
            settle = settled_after(t, time.monotonic(), quiet=2.0, timeout=60)
            assert settle <= LAG, f"the screen kept changing {settle:.2f} s after the last PgUp"
            assert " line " in t.status(), t.dump()
            shown = t.text
            link.set(rate=None)
            t.send("\x0c")
            t.wait_quiet(0.5)
            assert t.text == shown
        finally:
            t.close()
