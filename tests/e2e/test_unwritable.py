"""A remote home that cannot be written (issue 15 §4): HOME and the XDG directories under a
file (ENOTDIR: works as root too), a read-only bind mount, a state directory on a full
tmpfs (ENOSPC). DashFloat runs, says once what it could not write, and keeps what it
can: the history in memory (and the old one read), /undo from memory, /copy's clipboard."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import uuid

import pytest

from tests.e2e.harness import clean_env, dashfloat_bin
from tests.e2e.test_tools import call, calls_reply, wait_confirming
from tests.fakeserver import sse_reply

NOTICE = "DashFloat cannot write in"


def under_a_file(tmp_path):
    (tmp_path / "afile").write_text("not a directory")
    base = tmp_path / "afile"
    return clean_env(tmp_path, HOME=str(base / "home"), XDG_STATE_HOME=str(base / "state"),
                     XDG_CONFIG_HOME=str(base / "config"))


def wait_squeezed(t, text: str) -> None:
    """Until `text` is on screen, however it was wrapped (a long path wraps mid-word)."""
    want = "".join(text.split())
    t.wait_for(lambda t: want in "".join(t.flat.split()), what=repr(text))


def mount(*args) -> str | None:
    """Run mount; None when it worked, else why not (not root, no permission...)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting needs root"
    done = subprocess.run(["mount", *args], capture_output=True, timeout=10)
    return None if done.returncode == 0 else (done.stderr.decode(errors="replace").strip() or "mount failed")


def umount(path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)


def undo_a_write(t, project) -> None:
    """write_file approved, then /undo: the file is gone again (its undo came from memory
    when the store could not be written)."""
    t.type("write it\r")
    wait_confirming(t)
    t.type("y")
    t.wait_text("Written.")
    t.wait_status("idle")
    assert (project / "f.txt").read_text() == "new\n"
    t.type("/undo\r")
    t.wait_flat("f.txt: restored")
    assert (project / "f.txt").read_text() == "old\n"


def test_home_and_xdg_dirs_under_a_file(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "f.txt").write_text("old\n")
    server.push(sse_reply(["First ", "answer."]),
                calls_reply(call("write_file", {"path": "f.txt", "content": "new\n"})), sse_reply(["Written."]))
    t = dash("-C", str(project), env=under_a_file(tmp_path), rows=60)
    wait_squeezed(t, f"{NOTICE} {tmp_path}/afile/state/dashfloat (Not a directory: {tmp_path}/afile)")
    t.type("hello\r")
    t.wait_text("First answer.")
    t.wait_status("idle")
    undo_a_write(t, project)
    t.type("/copy\r")  # the clipboard still works; the file cannot be written, and it says so
    t.wait_flat("copy.txt could not be written (Not a directory")
    assert b"\x1b]52;c;" + base64.b64encode(b"Written.") in t.raw
    t.send("\x1b[A")  # Up: this session's prompts are kept in memory
    t.wait_for(lambda t: t.lines[-1].startswith("❯ /copy"), what="the last prompt on Up")
    t.send("\x15")  # Ctrl-U
    assert t.flat.count(NOTICE) == 1, t.dump()
    assert "could not be written (Not a directory" in t.flat  # /copy's own answer only
    assert "journal could not" not in t.flat and "log" not in t.flat.split(NOTICE)[1].split("Set XDG")[1]
    t.send("\x04")
    assert t.wait_exit() == 0
    assert "Traceback" not in t.raw.decode(errors="replace")


def test_headless_with_home_under_a_file(server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(sse_reply(["The ", "answer."]))
    env = under_a_file(tmp_path)
    env["TERM"] = "dumb"
    done = subprocess.run([dashfloat_bin(), "--base-url", server.url, "--model", "test-model", "-C", str(project),
                           "-p", "hello"], capture_output=True, env=env, timeout=30)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout == b"The answer.\n"
    assert err.count(NOTICE) == 1 and err.startswith(f"dashfloat: warning: {NOTICE}"), err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err


def test_a_read_only_home_keeps_the_old_history(dash, server, tmp_path):
    state = tmp_path / "state"
    (state / "dashfloat").mkdir(parents=True)
    (state / "dashfloat" / "history").write_text('"a prompt from last week"\n')
    ro = tmp_path / "ro-state"
    ro.mkdir()
    why = mount("--bind", str(state), str(ro))
    if why:
        pytest.skip(f"no bind mount here: {why}")
    try:
        why = mount("-o", "remount,bind,ro", str(ro))
        if why:
            pytest.skip(f"no read-only remount here: {why}")
        server.push(sse_reply(["Fine."]))
        t = dash(env=clean_env(tmp_path, XDG_STATE_HOME=str(ro)))
        wait_squeezed(t, f"{NOTICE} {ro}/dashfloat (Read-only file system")
        t.send("\x1b[A")  # the history on the read-only disk is still read
        t.wait_for(lambda t: t.lines[-1].startswith("❯ a prompt from last week"), what="the old prompt on Up")
        t.send("\x15")
        t.type("hello\r")
        t.wait_text("Fine.")
        t.wait_status("idle")
        assert t.flat.count(NOTICE) == 1
        t.send("\x04")
        assert t.wait_exit() == 0
        assert (state / "dashfloat" / "history").read_text() == '"a prompt from last week"\n'
    finally:
        umount(ro)


def fill(directory) -> None:
    """Fill the file system of `directory`: every write that needs a new block fails."""
    with open(directory / "filler", "wb", buffering=0) as f:
        for size in (65536, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


@pytest.fixture
def small_disk(tmp_path):
    state = tmp_path / "small"
    state.mkdir()
    why = mount("-t", "tmpfs", "-o", "size=256k,mode=0700", f"dashfloat-test-{uuid.uuid4().hex[:6]}", str(state))
    if why:
        pytest.skip(f"no tmpfs mount here: {why}")
    try:
        yield state
    finally:
        umount(state)


def test_a_full_disk_at_start_is_said_once_and_undo_works_from_memory(dash, server, tmp_path, small_disk):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "f.txt").write_text("old\n")
    fill(small_disk)
    server.push(calls_reply(call("write_file", {"path": "f.txt", "content": "new\n"})), sse_reply(["Written."]))
    t = dash("-C", str(project), env=clean_env(tmp_path, XDG_STATE_HOME=str(small_disk)), rows=60)
    wait_squeezed(t, f"{NOTICE} {small_disk}/dashfloat (No space left on device)")
    undo_a_write(t, project)
    assert t.flat.count("could not") == 0 and t.flat.count(NOTICE) == 1, t.dump()
    t.send("\x04")
    assert t.wait_exit() == 0


def test_a_disk_that_fills_meanwhile_is_said_once_per_file(dash, server, tmp_path, small_disk):
    """Started with room (the probe and the log passed), full before the first prompt:
    the journal and the history, created then, each say it once."""
    server.push(sse_reply(["One."]), sse_reply(["Two."]))
    t = dash(env=clean_env(tmp_path, XDG_STATE_HOME=str(small_disk)), rows=40)
    fill(small_disk)
    t.type("first\r")
    t.wait_text("One.")
    t.wait_status("idle")
    t.type("second\r")
    t.wait_text("Two.")
    t.wait_status("idle")
    t.wait_flat("The session journal could not be written (No space left on device)")
    t.wait_flat("could not be saved (No space left on device")
    flat = t.flat
    assert flat.count("The session journal could not be written") == 1, t.dump()
    assert flat.count("could not be saved (No space left on device") == 1, t.dump()  # the history
    assert NOTICE not in flat
    t.send("\x1b[A")  # the prompts are kept in memory
    t.wait_for(lambda t: t.lines[-1].startswith("❯ second"), what="the last prompt on Up")
    t.send("\x15\x04")
    assert t.wait_exit() == 0


def test_continue_on_a_read_only_home_resumes_unrecorded(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(sse_reply(["Remember ", "the blue door."]), sse_reply(["Still ", "blue."]))
    t = dash("-C", str(project))
    t.type("hello\r")
    t.wait_text("Remember the blue door.")
    t.wait_status("idle")
    t.send("\x04")
    assert t.wait_exit() == 0
    state = tmp_path / "state"
    before = {p: p.read_bytes() for p in state.rglob("*.jsonl")}
    ro = tmp_path / "ro-state"
    ro.mkdir()
    why = mount("--bind", str(state), str(ro))
    if why:
        pytest.skip(f"no bind mount here: {why}")
    try:
        why = mount("-o", "remount,bind,ro", str(ro))
        if why:
            pytest.skip(f"no read-only remount here: {why}")
        t2 = dash("-C", str(project), "--continue", env=clean_env(tmp_path, XDG_STATE_HOME=str(ro)), rows=40)
        t2.wait_text("Remember the blue door.")  # the transcript, from the journal it can only read
        wait_squeezed(t2, "cannot be written (Read-only file system")
        wait_squeezed(t2, f"{NOTICE} {ro}/dashfloat (Read-only file system")
        t2.type("and now?\r")
        t2.wait_text("Still blue.")
        t2.wait_status("idle")
        assert t2.flat.count("cannot be written (Read-only") == 1 and t2.flat.count(NOTICE) == 1, t2.dump()
        t2.send("\x04")
        assert t2.wait_exit() == 0
        assert {p: p.read_bytes() for p in state.rglob("*.jsonl")} == before
        request = [r for r in server.requests if r["method"] == "POST"][-1]["json"]["messages"]
        assert any(m.get("content") == "Remember the blue door." for m in request), "the model got the session"
    finally:
        umount(ro)
