"""End to end: the prompt editor: bracketed paste, Alt-Enter, history (also across runs),
the help overlay and the external editor."""

from __future__ import annotations

import os

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import Term, clean_env
from tests.fakeserver import sse_reply

UP = "\x1b[A"
F1 = "\x1bOP"


def prompt_text(t: Term) -> str:
    return "\n".join(t.prompt_lines())


def test_bracketed_paste_does_not_submit_then_enter_sends_both_lines(dash, server):
    t = dash()
    t.send("\x1b[200~line1\rline2\r\x1b[201~")
    t.wait_for(lambda t: "line1" in prompt_text(t) and "line2" in prompt_text(t), what="both lines in the prompt")
    rows = t.prompt_lines()
    assert any("line1" in r for r in rows) and any("line2" in r for r in rows)
    assert not any("line1" in r and "line2" in r for r in rows), "two rows, not one"
    assert "line1" not in "\n".join(t.transcript()), "nothing was submitted"
    assert [r for r in server.requests if r["method"] == "POST"] == [], "no request for a paste"

    server.push(sse_reply(["Got ", "both."]))
    t.send("\r")
    t.wait_text("Got both.")
    t.wait_status("idle")
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert len(posts) == 1, "one message, not one per pasted line"
    content = posts[0]["json"]["messages"][-1]["content"]
    assert content.strip() == "line1\nline2", repr(content)


def test_alt_enter_inserts_a_newline(dash, server):
    t = dash()
    t.type("first")
    t.wait_for(lambda t: "first" in prompt_text(t), what="first")
    t.send("\x1b\r")
    t.type("second")
    t.wait_for(lambda t: "second" in prompt_text(t), what="second")
    rows = [r for r in t.prompt_lines() if r.strip()]
    assert len(rows) == 2 and "first" in rows[0] and "second" in rows[1], t.dump()
    assert [r for r in server.requests if r["method"] == "POST"] == [], "Alt-Enter does not send"

    server.push(sse_reply(["Two ", "lines ", "received."]))
    t.send("\r")
    t.wait_text("Two lines received.")
    body = [r for r in server.requests if r["method"] == "POST"][-1]["json"]
    assert body["messages"][-1]["content"] == "first\nsecond"


def test_history_up_recalls_and_persists_across_runs(dash, server, tmp_path):
    server.push(sse_reply(["Noted."]))
    t = dash()
    t.type("remember this prompt\r")
    t.wait_text("Noted.")
    t.wait_status("idle")
    assert "remember this prompt" not in prompt_text(t)
    t.send(UP)
    t.wait_for(lambda t: "remember this prompt" in prompt_text(t), what="Up recalls the last prompt")
    t.send("\x15")  # Ctrl-U: clear the line
    t.wait_for(lambda t: "remember this prompt" not in prompt_text(t), what="prompt cleared")
    t.send("\x04")
    assert t.wait_exit() == 0

    history = tmp_path / "state" / "dashfloat" / "history"
    assert history.exists(), "history lives in $XDG_STATE_HOME/dashfloat/history"

    t2 = dash()  # same tmp_path: same XDG_STATE_HOME
    assert "remember this prompt" not in t2.text
    t2.send(UP)
    t2.wait_for(lambda t: "remember this prompt" in prompt_text(t), what="Up recalls the previous run's prompt")


def test_f1_help_overlay_and_esc_closes_it(dash):
    t = dash()
    t.send(F1)
    # wait for the whole overlay (its bottom border), not just its first rows
    t.wait_for(lambda t: "DashFloat keys" in t.text and any("└" in r and "┘" in r for r in t.lines),
               what="the help overlay")
    assert "Cancel the answer being streamed" in t.text
    t.send("\x1b")
    t.wait_gone("DashFloat keys")
    t.wait_for(lambda t: not any("┘" in r for r in t.lines), what="overlay border gone")
    # keys reach the prompt again
    t.type("after help")
    t.wait_for(lambda t: "after help" in prompt_text(t), what="typing after the help closed")


def test_ctrl_g_edits_the_prompt_in_editor(dash, tmp_path):
    seen = tmp_path / "seen.txt"
    script = tmp_path / "fake-editor.sh"
    script.write_text(f'#!/bin/sh\ncp "$1" "{seen}"\nprintf "from editor\\n" > "$1"\n')
    os.chmod(script, 0o755)
    t = dash(env=clean_env(tmp_path, EDITOR=str(script), VISUAL=None))
    t.type("draft text")
    t.wait_for(lambda t: "draft text" in prompt_text(t), what="draft")
    t.send("\x07")  # Ctrl-G
    wait_ready(t)  # the screen comes back after the editor
    t.wait_for(lambda t: "from editor" in prompt_text(t), what="the editor's text in the prompt")
    assert "draft text" not in prompt_text(t)
    assert seen.read_text().strip() == "draft text", "the editor got the prompt's text"


def test_backslash_enter_inserts_a_newline(dash, server):
    t = dash()
    t.type("one\\")
    t.wait_for(lambda t: "one\\" in prompt_text(t), what="one\\")
    t.send("\r")
    t.wait_for(lambda t: "one\\" not in prompt_text(t) and "one" in prompt_text(t), what="the backslash consumed")
    t.type("two")
    t.wait_for(lambda t: "two" in prompt_text(t), what="two")
    rows = [r for r in t.prompt_lines() if r.strip()]
    assert len(rows) == 2 and "one" in rows[0] and "two" in rows[1], t.dump()
    assert [r for r in server.requests if r["method"] == "POST"] == []  # (a GET asks the context window)
    server.push(sse_reply(["ok."]))
    t.send("\r")
    t.wait_text("ok.")
    assert server.requests[-1]["json"]["messages"][-1]["content"] == "one\ntwo"
