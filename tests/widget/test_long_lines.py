"""Long lines (issue 16): laid out in time proportional to what changed, with the rows
urwid's own layout gives.

The fast path (widgets._ascii_layout, row by row for printable ASCII) and the piecewise,
incremental layout of a growing line (widgets.long_line_rows) are shortcuts; these tests
hold them to urwid's StandardTextLayout and to make_row's rendering."""

from __future__ import annotations

import random
import time

import pytest
from urwid import text_layout

from dashfloat.ui import widgets as W


@pytest.mark.parametrize("seed", range(4))
def test_ascii_layout_is_urwids_space_wrap(seed):
    rng = random.Random(seed)
    for _ in range(3000):
        width = rng.choice([1, 2, 3, 4, 5, 7, 10, 20])
        alphabet = rng.choice(["ab ", "a  ", "abc d", "aaaa ", " ", "xy"])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        if width < 2 and not text:
            continue
        want = text_layout.default_layout.layout(text, width, "left", "space")
        assert W._ascii_layout(text, width) == [list(map(tuple, row)) for row in want], (width, text)


def _runs(rows):
    return [[(a, b) for a, _cs, b in row] for row in rows]


@pytest.mark.parametrize("seed", range(3))
def test_a_growing_long_line_is_laid_out_like_the_whole_line(seed, monkeypatch):
    """Grown step by step, with the layout of the step before as the hint, every step's
    rows equal make_row's rendering of the whole line (pieces made small so that the
    piecewise path runs on short text: also wide characters, blanks, long words)."""
    monkeypatch.setattr(W, "LAYOUT_PIECE", 64)
    monkeypatch.setattr(W, "LONG_LINE", 50)
    rng = random.Random(seed)
    words = ["a", "bb", "ccc", "dddd", "x" * 30, "y" * 90, " ", "  ", "é", "漢字", "word"]
    for _ in range(60):
        width = rng.choice([3, 5, 10, 20, 40, 80])
        text, prev = "", None
        for _step in range(rng.randint(1, 25)):
            if len(text) > 3000:  # 47 pieces: more only makes the oracle (urwid's layout) slower
                break
            text += "".join(rng.choice(words) + rng.choice([" ", "", "  "]) for _ in range(rng.randint(1, 40)))
            line = [("", "    "), ("md_strong", text[:10]), ("", text[10:])] if len(text) > 10 \
                else [("", "    "), ("md_strong", text)]
            rows, prev = W.long_line_rows(line, width, prev)
            assert _runs(rows) == _runs(W.make_row(line).render((width,)).content()), (width, text)


def test_a_megabyte_line_grows_in_time_proportional_to_the_new_text():
    """1 MB on one line, then 1 KB more: the second layout reuses the first (generous
    bounds: the whole line took seconds per frame before)."""
    text = ("abcdefgh" * 125_000)
    line = [("", "  "), ("", text)]
    t0 = time.thread_time()
    rows, state = W.long_line_rows(line, 120)
    first = time.thread_time() - t0
    assert len(rows) == -(-len(text) // 118)
    grown = [("", "  "), ("", text + "ijklmnop" * 128)]
    t0 = time.thread_time()
    rows2, _ = W.long_line_rows(grown, 120, state)
    again = time.thread_time() - t0
    assert _runs(rows2[-3:]) == _runs(W.long_line_rows(grown, 120)[0][-3:])
    assert first < 1.0 and again < 0.05, (first, again)


def test_the_pane_keeps_a_long_lines_layout_when_it_grows():
    pane = W.TranscriptPane()
    text = "word " * 100_000
    pane.replace(0, 0, [[("", "  "), ("", text)]])
    pane.render((100, 30))
    t0 = time.thread_time()
    pane.set_line(0, [("", "  "), ("", text + "more words")])
    canvas = pane.render((100, 30))
    assert time.thread_time() - t0 < 0.05
    last = b"".join(r for _a, _c, r in list(canvas.content())[-1])
    assert b"more words" in last


def test_prepare_lays_out_what_changed_so_the_frame_only_gathers_rows(monkeypatch):
    """App.refresh calls prepare() after each catch-up part: the layout of what the part
    added is done then, and the frame a key waits for lays out nothing (it laid out
    every part taken since the frame before: 21 ms for 340 KB of a 4 MiB line)."""
    def frames(prepare: bool):
        pane = W.TranscriptPane()
        pane.replace(0, 0, [[("", "question")], [("", "  "), ("", "word " * 1000)]])
        out = [list(pane.render((100, 30)).content())]
        for k in range(2, 6):
            pane.set_line(1, [("", "  "), ("", "word " * 1000 * k)])
            pane.replace(len(pane.lines), len(pane.lines), [[("", f"added {k}")]])
            if prepare:
                pane.prepare()
                with monkeypatch.context() as m:
                    m.setattr(W, "long_line_rows", lambda *a: pytest.fail("laid out in the frame"))
                    out.append(list(pane.render((100, 30)).content()))
            else:
                out.append(list(pane.render((100, 30)).content()))
        return out

    assert frames(True) == frames(False)


def test_prepare_leaves_lines_off_screen_to_the_frame_that_shows_them(monkeypatch):
    pane = W.TranscriptPane()
    pane.replace(0, 0, [[("", f"line {i}")] for i in range(100)])
    pane.render((40, 10))
    pane.set_line(5, [("", "changed")])  # far above the 10 rows at the end
    pane.to_top()
    pane.following = False
    pane.set_line(6, [("", "changed too")])
    laid = []
    monkeypatch.setattr(W, "long_line_rows", lambda line, width, prev=None: laid.append(line) or ([], None))
    pane.prepare()
    assert laid == []  # scrolled back: the frame lays out what it shows
    pane.to_end()
    pane.set_line(5, [("", "changed again")])
    pane.prepare()
    assert laid == []  # following, but line 5 is not among the last 10


def test_the_pane_keeps_the_rows_of_a_bounded_number_of_lines(monkeypatch):
    """Scrolling through a long transcript lays out every line on the way, but the rows
    kept stay bounded (the markup of every line is what the transcript keeps)."""
    monkeypatch.setattr(W.TranscriptPane, "CACHE_LINES", 100)
    pane = W.TranscriptPane()
    pane.replace(0, 0, [[("", f"line {i}")] for i in range(2000)])
    pane.render((40, 20))
    pane.to_top()
    first = pane.render((40, 20))
    for _ in range(150):
        pane.scroll_rows(19)
        pane.render((40, 20))
    assert sum(c is not None for c in pane._cache) <= 100
    pane.to_top()
    again = pane.render((40, 20))
    assert list(again.content()) == list(first.content())  # laid out again, the same


def test_a_long_lines_rows_are_made_only_when_shown():
    """A megabyte on one line is 8,000 rows at 120 columns; a frame at its end makes the
    rows on screen (and scrolling back makes those it shows), not all of them."""
    pane = W.TranscriptPane()
    text = "abcdefgh " * 120_000
    pane.replace(0, 0, [[("", "  "), ("", text)]])
    canvas = pane.render((120, 30))
    rows = pane._cache[0][1]
    assert isinstance(rows, W.LazyRows) and len(rows) > 9000
    assert len(rows._made) <= 30
    pane.scroll_rows(-5000)
    again = pane.render((120, 30))
    assert len(rows._made) <= 60
    assert _runs(list(canvas.content())) == _runs(rows[-30:])
    assert _runs(list(again.content())) == _runs(W.long_line_rows([("", "  "), ("", text)], 120)[0][-5030:-5000])


def test_scrolling_through_a_long_line_keeps_a_bounded_number_of_its_rows(monkeypatch):
    """Memory grows with what is kept, not with what was shown (issue 16): paging through
    every row of a long line keeps at most LazyRows.MADE of them, and a row dropped is
    made again the same when it comes back."""
    monkeypatch.setattr(W.LazyRows, "MADE", 200)
    pane = W.TranscriptPane()
    text = "abcdefgh " * 60_000
    pane.replace(0, 0, [[("", "  "), ("", text)]])
    pane.render((120, 30))
    rows = pane._cache[0][1]
    assert len(rows) > 4000
    pane.to_top()
    first = pane.render((120, 30))
    while not pane.following:
        pane.scroll_rows(29)
        pane.render((120, 30))
    assert len(rows._made) <= 200
    pane.to_top()
    assert _runs(list(pane.render((120, 30)).content())) == _runs(list(first.content()))


def test_a_long_lines_layout_is_kept_small():
    """Memory grows with what is kept (issue 16): the layout kept for a megabyte on one
    line (9,000 rows at 120 columns, to lay it out again from its end when it grows) is
    a few integers a row, not a list of tuples (it was 1.9 MB for this line; a 4 MiB
    answer at the cap kept 7.5 MiB of it); its rows are urwid's all the same."""
    import gc
    import tracemalloc

    text = "abcdefgh " * 120_000 + "end"
    line = [("", "  "), ("", text)]
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        rows, state = W.long_line_rows(line, 120)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(rows) > 9000
    assert kept < 600_000, kept
    assert rows[0][-1][2].startswith(b"abcdefgh abcdefgh") and rows[-1][-1][2].rstrip().endswith(b"h end")


def test_a_turns_rows_are_laid_out_again_together_and_the_same():
    """lay_out_again (called when a turn ends) drops the rows of the short lines, which the
    next frame lays out anew, one screen at once, the same; a long line keeps its layout
    (laid out in pieces, it is never laid out whole again)."""
    pane = W.TranscriptPane()
    long_text = "abcdefgh " * 2000
    pane.replace(0, 0, [[("", f"line {i} " * (1 + i % 9))] for i in range(300)] + [[("", "  "), ("", long_text)]]
                 + [[("", f"tail {i}")] for i in range(5)])
    before = list(pane.render((60, 20)).content())
    pane.scroll_rows(-500)
    above = list(pane.render((60, 20)).content())
    pane.to_end()
    pane.render((60, 20))
    long_rows = pane._cache[300][1]
    short = [i for i, c in enumerate(pane._cache) if c is not None and c[2] is None]
    old = {i: pane._cache[i][1] for i in short}
    assert len(short) > 20 and isinstance(long_rows, W.LazyRows)
    pane.lay_out_again()
    assert pane._cache[300][1] is long_rows
    # the screen and three above it are laid out again at once: the long line's 300 rows
    # reach past them, so only the lines under it are
    assert all(pane._cache[i][1] is not old[i] and pane._cache[i][1] == old[i] for i in range(301, 306))
    assert all(pane._cache[i] is None for i in short if i < 300)  # the rest as frames show them
    assert sorted(pane._cached) == [300, 301, 302, 303, 304, 305]
    assert list(pane.render((60, 20)).content()) == before
    pane.scroll_rows(-500)
    assert list(pane.render((60, 20)).content()) == above


def test_the_pages_above_the_screen_are_laid_out_ahead_and_no_further():
    pane = W.TranscriptPane()
    pane.replace(0, 0, [[("", f"line {i}")] for i in range(500)])
    pane.render((40, 10))
    pane.scroll_rows(-100)
    pane.render((40, 10))
    pane.to_end()
    pane.render((40, 10))
    pane.lay_out_again()
    laid = [i for i, c in enumerate(pane._cache) if c is not None]
    assert laid == list(range(500 - W.AHEAD_PAGES * 10, 500))
    pane.scroll_rows(-200)  # not following: from the screen at the anchor up
    pane.render((40, 10))
    pane.lay_out_again()
    top = pane.anchor[0]
    laid = [i for i, c in enumerate(pane._cache) if c is not None]
    assert laid == list(range(top + 10 - W.AHEAD_PAGES * 10 + 1, top + 11)), (top, laid)
