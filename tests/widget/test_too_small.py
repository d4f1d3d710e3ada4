"""A terminal too small for the layout (ui/toosmall.py), through the screen oracle: every
frame equals a full repaint, the notice is shown, nothing crashes, the layout comes back
whole when the terminal grows, and a question hidden by the notice decides nothing."""

from __future__ import annotations

import pytest

from dashfloat import messages as M
from tests.fakeserver import markdown_answer
from tests.screen_oracle import OracleSession

TINY = [(20, 4), (19, 6), (10, 3), (2, 2), (1, 1), (1, 24), (80, 1)]


def confirm(s: OracleSession) -> None:
    s.do("msg", (M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file f.txt (9 B)"}),
         (M.CONFIRM, 1, {"id": "c1", "name": "write_file", "summary": "write_file f.txt",
                         "lines": [("add", "+line")] * 8}),
         (M.PHASE, "confirming"))


def decisions(s: OracleSession) -> list:
    return [m for m in s.app.agent.sent if m[0] in (M.CONFIRM_DECISION, M.CANCEL)]


@pytest.mark.parametrize("size", TINY)
def test_a_stream_through_a_tiny_terminal_and_back(size):
    s = OracleSession(80, 24)
    s.draw()
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    pieces = markdown_answer(300)
    s.do("tokens", pieces[:100])
    s.do("resize", *size)
    assert s.app.too_small
    text = "".join(s.term.display)
    assert "!" in text or "small" in text or "x" in text
    s.do("tokens", pieces[100:200])  # the stream goes on unseen
    s.do("key", "x")  # typing blind goes nowhere
    s.do("resize", 80, 24)
    s.do("tokens", pieces[200:])
    s.do("msg", (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    assert not s.app.too_small
    assert s.term.display[-1].startswith("❯ ")
    assert s.app.prompt.edit_text == ""
    s.close()


def test_the_notice_names_the_size_and_the_minimum():
    s = OracleSession(80, 24)
    s.draw()
    s.do("resize", 19, 6)
    assert [line.strip() for line in s.term.display if line.strip()] == [
        "terminal too small:", "19x6, need at least", "20x5"]
    s.do("resize", 20, 6)  # the smallest layout: status bar and prompt
    assert "idle" in s.term.display[-2] and s.term.display[-1].startswith("❯")
    s.close()


def test_a_question_hidden_by_the_notice_decides_nothing():
    s = OracleSession(80, 24)
    s.draw()
    confirm(s)
    s.do("pause", 2.0)
    s.do("resize", 10, 3)
    for key in ("y", "a", "n", "esc", "ctrl c"):  # alone, after pauses: would decide if shown
        s.do("key", key)
        s.do("pause", 2.0)
    assert decisions(s) == []
    assert s.app.confirm is not None
    s.do("resize", 80, 24)
    s.do("key", "y")  # at once: the grace starts again when the question is on screen again
    s.do("pause", 1.0)
    assert decisions(s) == []
    s.do("pause", 1.0)
    s.do("key", "y")
    s.do("pause", 1.0)
    assert decisions(s) == [(M.CONFIRM_DECISION, 1, "approved")]
    s.close()


def test_a_held_y_does_not_act_once_the_question_is_hidden():
    s = OracleSession(80, 24)
    s.draw()
    confirm(s)
    s.do("pause", 2.0)
    s.do("key", "y")  # held for confirmgate.HOLD, then it would approve
    s.do("resize", 1, 1)
    s.do("pause", 2.0)
    assert decisions(s) == []
    s.do("resize", 80, 24)
    s.do("pause", 2.0)
    assert decisions(s) == [] and s.app.confirm is not None
    s.close()


def test_keys_that_are_safe_unseen_still_act():
    s = OracleSession(80, 24)
    s.draw()
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    s.do("resize", 5, 2)
    s.do("key", "esc")
    assert (M.CANCEL,) in s.app.agent.sent
    s.close()


def test_an_esc_that_comes_with_the_shrink_does_not_stop_the_turn():
    """The resize and a key in one read: the key is handled before the notice is drawn."""
    s = OracleSession(80, 24)
    s.draw()
    confirm(s)
    s.do("pause", 2.0)
    s.cols, s.rows = 10, 3
    s.term.resize(3, 10)
    s.loop.screen_size = (10, 3)
    s.screen.screen_buf = None
    s._key("window resize", "esc")
    s.draw()
    assert decisions(s) == [] and s.app.confirm is not None
    s.close()
