"""End to end: resizing, quitting, the terminal left clean after signals, and refusing to
start where a full-screen program cannot run."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import termios
import threading
import time

import pytest

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import Term, child_pids, clean_env, dashfloat_bin
from tests.fakeserver import sse_reply
from tests.procs import worker_threads

# ---- resize ------------------------------------------------------------------------------


def test_resize_larger_moves_the_status_bar(dash, server):
    server.push(sse_reply(["An answer ", "before the resize."]))
    t = dash()
    t.type("hi\r")
    t.wait_text("before the resize.")
    t.wait_status("idle")
    assert t.status_row() == 22

    t.resize(30, 100)
    t.wait_for(lambda t: t.status_row() == 28 and t.lines[29].startswith("❯"), what="status bar on row 28 of 30")
    # the hints are right-aligned to the new width
    t.wait_for(lambda t: len(t.lines[28]) > 90 and t.lines[28].endswith("F1 help"), what="status bar 100 wide")
    assert "before the resize." in "\n".join(t.transcript())
    assert not any(" idle " in t.lines[i] for i in range(28)), "no stale status bar left above"

    t.type("typed after resize")
    t.wait_for(lambda t: "typed after resize" in t.lines[29], what="prompt on the last row")


def test_resize_small_does_not_crash_and_shows_the_prompt(dash, server):
    t = dash()
    t.resize(12, 40)
    t.wait_for(lambda t: t.status_row() == 10 and t.lines[11].startswith("❯"), what="status bar on row 10 of 12")
    t.type("narrow")
    t.wait_for(lambda t: "narrow" in t.lines[11], what="typing in a narrow prompt")
    server.push(sse_reply(["Still ", "alive ", "at forty ", "columns."]))
    t.send("\r")
    t.wait_flat("Still alive at forty columns.")
    t.wait_status("idle")
    assert not t.eof
    assert "Traceback" not in t.text


# ---- quitting ----------------------------------------------------------------------------


def test_ctrl_d_on_empty_prompt_quits_cleanly(dash):
    t = dash()
    t.send("\x04")
    assert t.wait_exit() == 0
    assert t.left_alternate_screen()
    assert t.bracketed_paste_off()
    assert b"Traceback" not in t.raw


def test_ctrl_d_on_non_empty_prompt_does_not_quit(dash):
    t = dash()
    t.type("abc")
    t.wait_for(lambda t: "abc" in "".join(t.prompt_lines()), what="abc")
    t.send("\x01\x04")  # Ctrl-A, Ctrl-D: deletes the 'a'
    t.wait_for(lambda t: "bc" in "".join(t.prompt_lines()) and "abc" not in "".join(t.prompt_lines()),
               what="'a' deleted")
    assert not t.eof


def test_ctrl_c_twice_quits(dash):
    t = dash()
    t.type("some text")
    t.wait_for(lambda t: "some text" in "".join(t.prompt_lines()), what="typed text")
    t.send("\x03")
    t.wait_for(lambda t: "Ctrl-C again quits" in t.status() and "some text" not in "".join(t.prompt_lines()),
               what="first Ctrl-C clears the prompt and warns")
    assert not t.eof
    t.send("\x03")
    assert t.wait_exit() == 0
    assert t.left_alternate_screen()
    assert t.bracketed_paste_off()


# ---- signals: the terminal is restored ----------------------------------------------------


def _wrapped(spawn, server, tmp_path) -> tuple[Term, int]:
    """dashfloat under `sh -c`, with the tty settings saved before and after it; returns
    the Term (of the shell) and dashfloat's pid, past the first frame."""
    argv = [dashfloat_bin(), "--base-url", server.url, "--model", "test-model"]
    script = (
        f"stty -g > {tmp_path}/before; "
        f"{shlex.join(argv)}; echo $? > {tmp_path}/rc; "
        f"stty -g > {tmp_path}/after"
    )
    t = spawn(["/bin/sh", "-c", script], env=clean_env(tmp_path))
    wait_ready(t)
    shell = t.child.pid
    pids = t.wait_for(lambda t: child_pids(shell), what="dashfloat's pid")
    assert len(pids) == 1
    lflag = termios.tcgetattr(t.child.child_fd)[3]
    assert not lflag & termios.ICANON, "dashfloat runs the tty in raw/cbreak mode"
    return t, pids[0]


def _check_restored(t: Term, tmp_path, signum: int) -> None:
    t.wait_exit(timeout=15)
    before = (tmp_path / "before").read_text().strip()
    after = (tmp_path / "after").read_text().strip()
    assert before and before == after, f"tty settings changed:\nbefore {before}\nafter  {after}"
    assert t.left_alternate_screen(), "the alternate screen was not left"
    assert t.bracketed_paste_off(), "bracketed paste was left on"
    assert t.margins_reset(), "scrolling margins were left set"
    rc = int((tmp_path / "rc").read_text())
    assert rc in (0, 128 + signum), f"dashfloat exited {rc}"
    assert b"Traceback" not in t.raw


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_restores_terminal_when_idle(signum, spawn, server, tmp_path):
    t, pid = _wrapped(spawn, server, tmp_path)
    os.kill(pid, signum)
    _check_restored(t, tmp_path, signum)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_restores_terminal_while_streaming(signum, spawn, server, tmp_path):
    hold = threading.Event()
    server.push(sse_reply(["Streaming ", "in ", "progress", " rest"], waits={4: hold}))
    t, pid = _wrapped(spawn, server, tmp_path)
    t.type("go\r")
    t.wait_text("Streaming in progress")
    t.wait_status("streaming")
    os.kill(pid, signum)
    _check_restored(t, tmp_path, signum)
    assert not hold.is_set()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_the_agent_thread_takes_still_ends_an_idle_app(signum, spawn, server, tmp_path):
    """kill(2) of a thread id sends the signal to the process, and that thread takes it: here
    the agent's, asleep on its inbox once its start-up request is done. Python runs the
    handler on the main thread only, and an idle loop has nothing to wake it: the app once
    stayed until the next key."""
    t, pid = _wrapped(spawn, server, tmp_path)
    t.wait_for(lambda t: "context window of" in t.log_tail(50), what="the agent's start-up request done")
    t.wait_quiet(0.5)  # and what it told the screen drawn: the loop asleep, nothing on its way to wake it
    (agent,) = t.wait_for(lambda t: worker_threads(pid), what="the agent's thread")
    os.kill(agent, signum)
    _check_restored(t, tmp_path, signum)


def test_sigterm_after_scrolling_resets_the_margins(spawn, server, tmp_path):
    """Scrolling margins stay set between frames; a signal must still reset them."""
    from tests.fakeserver import markdown_answer

    hold = threading.Event()
    pieces = markdown_answer(600)
    server.push(sse_reply([*pieces, "HeldBackEnd"], waits={len(pieces) + 1: hold}, rate=400))
    t, pid = _wrapped(spawn, server, tmp_path)
    t.type("go\r")
    t.wait_for(lambda t: re.search(rb"\x1b\[1;\d+r", t.raw), what="a scroll with margins")
    os.kill(pid, signal.SIGTERM)
    _check_restored(t, tmp_path, signal.SIGTERM)


# ---- refusing to start ------------------------------------------------------------------


def _run(args: list[str], tmp_path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [dashfloat_bin(), *args], stdin=subprocess.DEVNULL, capture_output=True,
        env=clean_env(tmp_path, **env), timeout=30,
    )


def test_not_a_terminal_exits_2(tmp_path):
    start = time.monotonic()
    proc = _run(["--model", "m", "--base-url", "http://127.0.0.1:9/v1"], tmp_path)
    assert proc.returncode == 2
    assert b"interactive terminal" in proc.stderr, proc.stderr
    assert proc.stdout == b"", "nothing written to a non-terminal stdout"
    assert time.monotonic() - start < 20


def test_stdin_not_a_tty_in_a_terminal_exits_2_without_touching_it(spawn, tmp_path):
    cmd = f"{shlex.quote(dashfloat_bin())} --model m < /dev/null"
    t = spawn(["/bin/sh", "-c", cmd])
    assert t.wait_exit() == 2
    assert b"interactive terminal" in t.raw
    assert b"\x1b[?1049h" not in t.raw, "the alternate screen was entered"


def test_term_dumb_exits_2(spawn, tmp_path):
    t = spawn([dashfloat_bin(), "--model", "m"], env=clean_env(tmp_path, TERM="dumb"))
    assert t.wait_exit() == 2
    assert b"TERM=dumb" in t.raw, bytes(t.raw)
    assert b"\x1b[?1049h" not in t.raw


@pytest.mark.parametrize(
    "content, key",
    [('read_timeout = "soon"\n', "read_timeout"), ('modle = "x"\n', "modle")],
    ids=["bad-value", "unknown-key"],
)
def test_bad_config_file_exits_2_naming_file_and_key(content, key, spawn, tmp_path):
    cfg = tmp_path / "config" / "dashfloat" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(content)
    t = spawn([dashfloat_bin(), "--model", "m"])
    assert t.wait_exit() == 2
    out = " ".join(bytes(t.raw).decode("utf-8", "replace").split())
    assert str(cfg) in out, out
    assert key in out, out
    assert "\x1b[?1049h" not in out


def test_version_and_help_exit_0(tmp_path):
    from dashfloat import __version__

    proc = _run(["--version"], tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == f"dashfloat {__version__}"

    proc = _run(["--help"], tmp_path)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith("usage: dashfloat")
    for opt in ("--base-url", "--model", "--ascii", "--reset-terminal"):
        assert opt in out


def test_reset_terminal_prints_the_sequence(tmp_path):
    proc = _run(["--reset-terminal"], tmp_path)
    assert proc.returncode == 0
    assert b"\x1b[?1049l" in proc.stdout
    assert b"\x1b[?2004l" in proc.stdout
    assert re.search(rb"\x1b\[\?25h", proc.stdout)


def test_resize_while_streaming(dash, server):
    hold = threading.Event()
    server.push(sse_reply(["Before ", "the resize,", " after the resize."], waits={3: hold}))
    t = dash()
    t.type("go\r")
    t.wait_text("Before the resize,")
    t.resize(30, 100)
    t.wait_for(lambda t: t.status_row() == 28 and " streaming " in t.status(), what="streaming status on row 28")
    hold.set()
    t.wait_text("Before the resize, after the resize.")
    t.wait_status("idle")
    assert t.status_row() == 28
