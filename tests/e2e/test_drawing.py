"""Incremental drawing (scroll-region shifts, rows written from where they changed, CR LF
moves, erases only where needed, SGR not repeated) leaves on screen exactly what a full
repaint draws, text and colours: after a long streamed answer, Ctrl-L must change nothing."""

from __future__ import annotations

import pytest

from tests.fakeserver import markdown_answer, sse_reply


@pytest.mark.parametrize("size", [(24, 80), (40, 120)])
def test_screen_after_streaming_equals_a_full_repaint(dash, server, size):
    rows, cols = size
    pieces = markdown_answer(600) + ["\n\nEndMarkerWord"]
    server.push(sse_reply(pieces, rate=400))
    term = dash(rows=rows, cols=cols)
    term.type("go\r")
    term.wait_text("EndMarkerWord", timeout=20)
    term.wait_status("idle")
    term.wait_quiet()
    incremental = cells(term.screen)
    mark = len(term.raw)
    term.send("\x0c")  # Ctrl-L: urwid clears and repaints every row
    term.wait_for(lambda t: len(t.raw) - mark > rows * 10, what="the full repaint")
    term.wait_quiet()
    assert cells(term.screen) == incremental
    before = bytes(term.raw[:mark])
    assert b"\x1b[1;" in before and before.rfind(b"\x1b[r") < before.rfind(b"\x1b[1;"), \
        "margins stay set while streaming (a full repaint resets them)"
    term.send("\x04")  # Ctrl-D on the empty prompt: quit
    assert term.wait_exit() == 0
    assert term.margins_reset() and term.left_alternate_screen()


def cells(screen) -> list[list[tuple]]:
    """Every cell's character and rendition (colours, bold, italics, underline, reverse)."""
    return [
        [(c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse, c.strikethrough)
         for c in (screen.buffer[y][x] for x in range(screen.columns))]
        for y in range(screen.lines)
    ]


def assert_equals_repaint(term) -> None:
    """What is on screen now equals what a Ctrl-L full repaint draws."""
    term.wait_quiet()
    incremental = cells(term.screen)
    mark = len(term.raw)
    term.send("\x0c")
    term.wait_for(lambda t: len(t.raw) - mark > t.rows * 5, what="the full repaint")
    term.wait_quiet()
    assert cells(term.screen) == incremental, term.dump()


def status_rows(term) -> int:
    return sum(any(w in line for w in (" idle ", " waiting ", " streaming ")) for line in term.lines)


SYNC = {2026: 2}  # a terminal that confirms synchronized output (kitty, foot, WezTerm, tmux 3.4...)


@pytest.mark.parametrize("modes", [None, SYNC], ids=["plain", "sync"])
def test_prompts_after_a_scrolled_answer_leave_no_copy_of_the_status_bar(dash, server, modes):
    """Each prompt after the transcript scrolled left a copy of the status bar in it."""
    for i in range(3):
        server.push(sse_reply(markdown_answer(150) + [f"\n\nDone{i}"], rate=2000))
    term = dash(modes=modes)
    for i in range(3):
        term.type(f"prompt {i}")
        term.wait_for(lambda t, i=i: f"prompt {i}" in "".join(t.prompt_lines()), what="typed prompt")
        term.send("\r")
        term.wait_text(f"Done{i}", timeout=20)
        term.wait_status("idle")
        term.wait_quiet()
        assert status_rows(term) == 1, term.dump()
    if modes:
        assert b"\x1b[?2026h" in term.raw, "the terminal's answer turned synchronized output on"
    assert_equals_repaint(term)


@pytest.mark.parametrize("modes", [None, SYNC], ids=["plain", "sync"])
def test_a_multi_line_prompt_on_a_full_screen_draws_cleanly(dash, server, modes):
    server.push(sse_reply(markdown_answer(150) + ["\n\nDone"], rate=2000))
    term = dash(modes=modes)
    term.type("go\r")
    term.wait_text("Done", timeout=20)
    term.wait_status("idle")
    for word in ("line one", "line two", "line three"):
        term.type(word)
        term.send("\x1b\r")  # Alt-Enter: a newline in the prompt
    term.send("\x1b[200~pasted\nmore\n\x1b[201~")
    term.wait_for(lambda t: "more" in "\n".join(t.prompt_lines()), what="the pasted lines")
    assert status_rows(term) == 1, term.dump()
    prompt = term.prompt_lines()
    assert prompt[0].startswith("❯ line one") and any("line three" in x for x in prompt), term.dump()
    assert_equals_repaint(term)


@pytest.mark.parametrize("terminal", ["plain", "sync", "sticky-margins"])
def test_shrinking_during_streams_and_back_needs_no_ctrl_l(dash, server, terminal):
    """Shrinking to 30x8, then to 60x6, during two streams and back to 80x24 each time
    left wrong lines and no prompt until Ctrl-L (seen in tmux)."""
    for i in range(2):
        server.push(sse_reply(markdown_answer(400) + [f"\n\nEndWord{i}"], rate=200))
    term = dash(modes=SYNC if terminal == "sync" else None)
    term.screen.keep_margins_on_resize = terminal == "sticky-margins"
    for i, (rows, cols) in enumerate([(8, 30), (6, 60)]):
        term.type(f"prompt {i}\r")
        term.wait_status("streaming")
        term.resize(rows, cols)
        term.wait_for(lambda t, r=rows: t.status_row() == r - 2, what="the small frame")
        term.resize(24, 80)
        term.wait_for(lambda t: t.status_row() == 22, what="the frame at 80x24 again")
        term.wait_text(f"EndWord{i}", timeout=20)
        term.wait_status("idle")
        term.wait_quiet()
        assert term.lines[-1].startswith("❯"), term.dump()
        assert status_rows(term) == 1, term.dump()
        assert_equals_repaint(term)
