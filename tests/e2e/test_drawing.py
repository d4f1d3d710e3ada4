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
    assert b"\x1b[1;" in term.raw and not term.margins_reset(), "margins stay set while running"
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
