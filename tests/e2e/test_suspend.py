"""Ctrl-Z suspends to the shell with the terminal restored; `fg` brings the screen back."""

from __future__ import annotations

import shutil

import pytest

from tests.e2e.harness import Term, clean_env, dashfloat_bin
from tests.fakeserver import ScriptedServer

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for job control")


def test_ctrl_z_suspends_and_fg_restores(tmp_path):
    with ScriptedServer(models=["m"]) as server:
        env = clean_env(tmp_path, PS1="SHELL$ ")
        term = Term(["bash", "--norc", "--noprofile", "-i"], env)
        try:
            term.wait_text("SHELL$")
            term.type(f"stty -g > {tmp_path}/before; {dashfloat_bin()} --base-url {server.url} --model m\r")
            term.wait_status("idle")
            term.type("draft text")
            term.wait_text("draft text")
            mark = len(term.raw)
            term.send("\x1a")  # Ctrl-Z: a key for dashfloat, which then suspends itself
            term.wait_for(lambda t: b"Stopped" in t.raw[mark:] or "Stopped" in t.text, what="the job to stop")
            tail = bytes(term.raw[mark:])
            assert tail.rfind(b"\x1b[?1049l") >= 0, "the alternate screen was not left on suspend"
            resumed = len(term.raw)
            term.type(f"stty -g > {tmp_path}/during; fg\r")
            during = tmp_path / "during"  # the shell creates it before stty writes its line
            term.wait_for(lambda t: during.exists() and during.read_text().endswith("\n"), what="stty during suspend")
            # drawn again, without a key: the emulator keeps the old screen through the
            # alternate-screen switch (pyte has none), so the bytes after fg are what counts
            # (the screen once stayed blank until a key was pressed)
            term.wait_for(lambda t: b" idle " in t.raw[resumed:] and b"draft text" in t.raw[resumed:],
                          what="the screen drawn again after fg")
            term.wait_status("idle")
            term.wait_text("draft text")  # the prompt survived the suspend
            assert (tmp_path / "during").read_text() == (tmp_path / "before").read_text()
            term.send("\x03")  # Ctrl-C clears the prompt
            term.wait_gone("draft text")
            mark = len(term.raw)
            term.send("\x04")  # Ctrl-D on the empty prompt quits
            term.wait_for(lambda t: b"SHELL$" in t.raw[mark:], what="the shell prompt after quitting")
            assert term.left_alternate_screen()
            term.type(f"stty -g > {tmp_path}/after; exit\r")
            term.wait_exit()
            assert (tmp_path / "after").read_text() == (tmp_path / "before").read_text()
        finally:
            term.close()


def test_ctrl_z_stops_a_wrapper_that_waits_for_dashfloat_too(tmp_path):
    """A script that runs dashfloat and waits for it is in the same job (as the single
    executable's bootloader is): Ctrl-Z must stop the whole job, as the terminal's Ctrl-Z
    would, or the shell never sees it stop and never takes the terminal back."""
    with ScriptedServer(models=["m"]) as server:
        term = Term(["bash", "--norc", "--noprofile", "-i"], clean_env(tmp_path, PS1="SHELL$ "))
        try:
            term.wait_text("SHELL$")
            mark = len(term.raw)
            term.type(f"sh -c '{dashfloat_bin()} --base-url {server.url} --model m; echo wrapper-done'\r")
            term.wait_for(lambda t: b"\x1b[?2004h" in t.raw[mark:] and " idle " in t.status(), what="the app running")
            mark = len(term.raw)
            term.send("\x1a")
            term.wait_for(lambda t: b"Stopped" in t.raw[mark:], what="the job to stop")
            assert term.raw.rfind(b"\x1b[?1049l") > mark, "the terminal was not restored before the stop"
            mark = len(term.raw)
            term.type("fg\r")
            term.wait_for(lambda t: b"\x1b[?2004h" in t.raw[mark:], what="the app running again")
            term.wait_status("idle")
            term.send("\x04")  # Ctrl-D on the empty prompt quits
            term.wait_for(lambda t: b"wrapper-done" in t.raw[mark:], what="the wrapper going on")
        finally:
            term.close()
