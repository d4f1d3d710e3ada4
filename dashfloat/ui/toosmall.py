"""A terminal too small for DashFloat's layout: what is shown instead, and when.

Below MIN_COLS x MIN_ROWS the transcript, the status bar and the prompt cannot all be
read (and urwid's Frame fails outright at two columns), so the whole screen is a short
notice instead, centred, in the longest wording that fits. Nothing is lost meanwhile: the
transcript goes on being kept and is drawn again, whole, when the terminal grows. Keys
that would act unseen (a decision on a confirmation, text typed blind into the prompt)
do nothing while the notice is shown (ui/app.py). Pure, but for `canvas`.
"""

from __future__ import annotations

import textwrap

MIN_COLS = 20
MIN_ROWS = 5


def too_small(cols: int, rows: int) -> bool:
    return cols < MIN_COLS or rows < MIN_ROWS


def notice_lines(cols: int, rows: int) -> list[str]:
    """The notice for a `cols` x `rows` terminal: at most `rows` lines of at most `cols`
    characters (ASCII), centred both ways and padded to the full size; the longest of
    the wordings below that fits whole, [] when there is no cell at all."""
    if cols < 1 or rows < 1:
        return []
    need = f"{MIN_COLS}x{MIN_ROWS}"
    have = f"{cols}x{rows}"
    for text in (
        f"terminal too small: {have}, need at least {need}",
        f"too small: {have}, need {need}",
        f"too small: {have}",
        "too small",
        have,
        "!",
    ):
        lines = textwrap.wrap(text, cols, break_long_words=False, break_on_hyphens=False)
        if len(lines) <= rows and all(len(line) <= cols for line in lines):
            break
    else:  # unreachable: "!" fits one cell
        lines = []
    top = (rows - len(lines)) // 2
    body = [line.center(cols) for line in lines]
    blank = " " * cols
    return [blank] * top + body + [blank] * (rows - top - len(body))


def canvas(cols: int, rows: int):
    """The notice as an urwid canvas of exactly `cols` x `rows`."""
    import urwid

    if cols < 1 or rows < 1:
        return urwid.SolidCanvas(" ", max(0, cols), max(0, rows))
    return urwid.TextCanvas([line.encode("ascii") for line in notice_lines(cols, rows)], maxcol=cols)
