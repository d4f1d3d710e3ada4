"""End to end: `a` on a confirmation allows that exact call for the rest of the session."""

from __future__ import annotations

from tests.e2e.test_tools import APPLY, call, calls_reply, wait_confirming, wait_posts
from tests.fakeserver import sse_reply


def test_a_approves_and_the_same_command_then_runs_without_asking(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    command = "echo hi >> log.txt"
    server.push(
        calls_reply(call("execute_command", {"command": command}, "call_1")),
        sse_reply(["First done."]),
        calls_reply(call("execute_command", {"command": command}, "call_2")),
        sse_reply(["Second done."]),
        calls_reply(call("execute_command", {"command": command + " # changed"}, "call_3")),
        sse_reply(["Third done."]),
    )
    t = dash("-C", str(project))
    t.type("first\r")
    wait_confirming(t)
    t.type("a")
    t.wait_text("First done.")
    t.wait_text("allowed for the rest of the session")
    t.wait_status("idle")
    # the same command again: runs at once, with the session rule named in its row
    t.type("second\r")
    t.wait_text("Second done.")
    t.wait_status("idle")
    assert (project / "log.txt").read_text() == "hi\nhi\n"
    assert t.text.count(APPLY) == 0
    assert "allowed by" in t.text
    # a different command asks again: the rule is exact
    t.type("third\r")
    wait_confirming(t)
    t.type("n")
    t.wait_text("Third done.")
    assert (project / "log.txt").read_text() == "hi\nhi\n"
    assert len(wait_posts(server, 6)) == 6
