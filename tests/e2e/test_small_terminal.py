"""A very small terminal, or one resized to one column, one row or no cell at all (issue 15
§4): no crash, a notice that says so, the layout back whole when it grows; a confirmation
hidden by the notice cannot be answered by keys typed meanwhile."""

from __future__ import annotations

import threading

from tests.e2e.test_tools import call, calls_reply, wait_confirming
from tests.fakeserver import sse_reply

NOTICE = "terminal too small:"


def shrink(t, rows: int, cols: int) -> None:
    t.resize(rows, cols)
    t.wait_quiet(0.3)


def test_idle_at_20x6_then_1_column_1_row_and_no_cell_and_back(dash, server):
    server.push(sse_reply(["An answer ", "kept ", "across ", "sizes."]))
    t = dash()
    t.type("hi\r")
    t.wait_text("An answer kept across sizes.")
    t.wait_status("idle")
    t.resize(6, 20)  # the smallest layout: still the status bar and the prompt
    t.wait_for(lambda t: " idle " in t.status() and t.lines[-1].startswith("❯"), what="the 20x6 layout")
    t.resize(6, 19)
    t.wait_for(lambda t: [line.strip() for line in t.lines if line.strip()]
               == [NOTICE, "19x6, need at least", "20x5"], what="the notice at 19x6")
    for rows, cols, shown in ((24, 1, "!"), (1, 80, "too small: 80x1"), (1, 1, "!")):
        t.resize(rows, cols)
        t.wait_for(lambda t, shown=shown: shown in t.text, what=f"the notice at {cols}x{rows}")
    t.child.setwinsize(0, 0)  # a pty with no cell at all: nothing is drawn, nothing fails
    t.wait_quiet(0.5)
    assert t.child.isalive()
    t.resize(24, 80)
    t.wait_for(lambda t: " idle " in t.status() and "An answer kept across sizes." in t.text,
               what="the whole layout back")
    assert t.lines[-1].startswith("❯")
    t.send("\x04")
    assert t.wait_exit() == 0
    log = (t.log_tail(200) or "")
    assert "crashed" not in log and "Traceback" not in log, log


def test_a_stream_goes_on_behind_the_notice(dash, server):
    go_on = threading.Event()
    words = [f"word{i} " for i in range(60)]
    server.push(sse_reply(words, waits={31: go_on}))  # chunk 0 is the role: 30 words, then a pause
    t = dash()
    t.type("stream\r")
    t.wait_text("word29")
    t.resize(3, 10)
    t.wait_text("too small:")
    go_on.set()  # the rest arrives while only the notice is shown
    t.wait_quiet(0.5)
    t.resize(24, 80)
    t.wait_status("idle")
    t.wait_text("word59")
    t.send("\x0c")  # Ctrl-L: the same screen, repainted whole
    before = t.lines
    t.wait_quiet(0.3)
    assert t.lines == before
    assert t.child.isalive()


def test_a_confirmation_behind_the_notice_cannot_be_answered(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(calls_reply(call("write_file", {"path": "f.txt", "content": "x\n"})), sse_reply(["Written."]))
    t = dash("-C", str(project))
    t.type("write it\r")
    wait_confirming(t)
    t.resize(4, 19)
    t.wait_text(NOTICE)
    for key in ("y", "a", "a", "n"):  # each alone, after a pause: on screen, y or n would decide
        t.type(key)
        t.wait_quiet(0.8)
    assert not (project / "f.txt").exists()
    t.resize(24, 80)
    t.wait_for(lambda t: " confirming " in t.status(), what="the question back on screen")
    assert "rejected" not in t.text and "approved" not in t.text, t.dump()
    wait_confirming(t)
    t.type("y")
    t.wait_text("Written.")
    assert (project / "f.txt").read_text() == "x\n"
