"""The terminal screen: urwid's raw screen, plus two things DashFloat needs from it.

1. Ctrl-C, Ctrl-Z, Ctrl-S/Q and Ctrl-\\ arrive as keys: the tty's signal characters are
   freed after every start (also after a resume from Ctrl-Z); urwid's stop() restores the
   settings it saved at the first start.

2. Scrolling costs the new rows, not the whole screen. urwid diffs frames row by row and
   knows no scroll regions, so following a streaming answer repaints every transcript row
   for each new line (~3 KB a time at 120x40). Before urwid diffs a frame, `draw_screen`
   looks for the shift k that makes the previous frame's transcript rows line up with the
   new ones; if shifting saves rows, it scrolls that region of the terminal by k lines
   (DECSTBM margins plus line feeds at the bottom margin, VT100-safe) and shifts urwid's
   record of what is on screen the same way. urwid's own diff then writes only what still
   differs. Correct for any k: the record always matches the terminal.
"""

from __future__ import annotations

import logging
import os

import urwid
from urwid.display._raw_display_base import _ATTRSPEC_INDEX_BY_COLORS
from urwid.display.common import UNPRINTABLE_TRANS_TABLE

log = logging.getLogger("dashfloat.screen")

MIN_SAVED_ROWS = 3  # scrolling costs ~10 bytes; only worth it when it spares rows


def best_shift(old: list, new: list, region: int) -> int:
    """The upward shift k (0 = none) of rows [0, region) that leaves the most rows equal.

    Pure: rows are compared with ==. Candidate shifts are those that align the first new
    row with some old row, which keeps this O(region) comparisons per candidate.
    """
    region = min(region, len(old), len(new))
    if region < 2:
        return 0
    base = sum(1 for i in range(region) if old[i] == new[i])
    best_k, best_gain = 0, 0
    first = new[0]
    for k in range(1, region):
        if old[k] != first:
            continue
        same = 0
        for i in range(region - k):
            if old[i + k] == new[i]:
                same += 1
        gain = same - base
        if gain > best_gain:
            best_k, best_gain = k, gain
    return best_k if best_gain >= MIN_SAVED_ROWS else 0


def _cells(row) -> list[tuple] | None:
    """A canvas row as cells (attr, text, width): a character with its zero-width marks,
    or None for what this drawing path does not handle (other charsets)."""
    import wcwidth

    cells: list[list] = []
    for attr, cs, run in row:
        if cs is not None:
            return None
        text = run.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
        if not text.isascii():
            text = text.translate(_C1)
        for ch in text:
            w = wcwidth.wcwidth(ch) if not ch.isascii() else 1
            if w <= 0 and cells:
                cells[-1][1] += ch  # a combining mark stays with its character
                continue
            cells.append([attr, ch, max(w, 0)])
    return [tuple(c) for c in cells]


_C1 = {c: "?" for c in range(0x80, 0xA0)}
_UNSET = object()


class DashScreen(urwid.display.raw.Screen):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scroll_region_rows = None  # callable -> rows at the top that scroll together
        self.scroll_optimisation = True
        self.scrolled_rows = 0  # statistics for benchmarks and tests
        self.early_input = b""  # bytes typed before the screen started (ui/early.py)
        self.span_diff = True
        self.span_rows = 0  # frames drawn by _draw_spans (statistics for tests)

    def _start(self, *args, **kwargs):
        super()._start(*args, **kwargs)
        fd = self._input_fileno()
        if fd is not None and os.isatty(fd):
            self.tty_signal_keys("undefined", "undefined", "undefined", "undefined", "undefined", fd)
        if self.early_input:  # keys typed on the early frame, replayed as if typed now
            self._partial_codes = list(self.early_input) + self._partial_codes
            self.early_input = b""
            self._wake_input_loop()

    def draw_screen(self, size, canvas):
        try:
            self._scroll_before_draw(size, canvas)
            if self.span_diff and self._draw_spans(size, canvas):
                return None
        except Exception:  # an optimisation must never cost a frame
            log.debug("span drawing failed; full rows instead", exc_info=True)
            self.screen_buf = None
        return super().draw_screen(size, canvas)

    def _draw_spans(self, size, canvas) -> bool:
        """Draw only the changed span of each changed row (urwid rewrites whole rows: the
        line growing at the bottom of a streamed answer would be re-sent on every tick).
        Handles the common case (UTF-8, the alternate screen, plain charsets, no
        hyperlinks); returns False to let urwid draw anything else."""
        if not self.screen_buf or self._resized or self._rows_used is not None or self.hyperlinks:
            return False
        if canvas is self._screen_buf_canvas:
            return True
        if urwid.util.get_encoding() != "utf-8":
            return False
        maxcol, maxrow = size
        old_rows = self.screen_buf
        if len(old_rows) != maxrow:
            return False
        rows = list(canvas.content())
        if len(rows) != maxrow:
            return False
        out: list[str] = ["\x1b[?25l"]
        attr_now: object = _UNSET  # the terminal's current attributes are not known
        drawn = list(self._drawn_rows) if self._drawn_rows and len(self._drawn_rows) == maxrow else [None] * maxrow
        for y, row in enumerate(rows):
            if y < len(old_rows) and old_rows[y] == row:
                continue
            new_cells = _cells(row)
            if new_cells is None:
                return False
            old_cells = _cells(old_rows[y]) if old_rows[y] and old_rows[y][0][0] != "stale" else None
            start = 0
            if old_cells:
                limit = min(len(old_cells), len(new_cells))
                while start < limit and old_cells[start] == new_cells[start]:
                    start += 1
            col = sum(c[2] for c in new_cells[:start])
            tail = new_cells[start:]
            # trailing blanks become an erase-to-end, as urwid does with back-colour-erase
            end = len(tail)
            while end > 0 and tail[end - 1][1] == " ":
                end -= 1
            has_blank = end < len(tail)
            blank_attr = tail[end][0] if has_blank else None
            if has_blank and not self.back_color_erase:
                return False
            if y == maxrow - 1 and end == len(tail) and col + sum(c[2] for c in tail) >= maxcol:
                return False  # the bottom-right cell: writing it would scroll; urwid knows how
            out.append(f"\x1b[{y + 1};{col + 1}H")
            for attr, text, _w in tail[:end]:
                if attr != attr_now:
                    out.append(self._attr_to_escape(attr))
                    attr_now = attr
                out.append(text)
            if has_blank:
                spec = self.resolve_attr(blank_attr, _ATTRSPEC_INDEX_BY_COLORS[self.colors])
                if spec.standout or spec.underline:
                    return False  # erase-to-end would not draw those: urwid writes the spaces
                if blank_attr != attr_now:
                    out.append(self._attr_to_escape(blank_attr))
                    attr_now = blank_attr
                out.append("\x1b[K")
            drawn[y] = None  # urwid's own record of this row is stale now
        if canvas.cursor is not None:
            x, y = canvas.cursor
            out.append(f"\x1b[{y + 1};{x + 1}H\x1b[?25h")
            self._cy = y
        frame = "".join(out)
        if self.modes.synchronized_output:
            frame = "\x1b[?2026h" + frame + "\x1b[?2026l"
        self.write(frame)
        self.flush()
        self.screen_buf = rows
        self._drawn_rows = [
            d if d is not None else [(self._attr_to_escape(a), cs, run) for a, cs, run in r]
            for d, r in zip(drawn, rows, strict=True)
        ]
        self._screen_buf_canvas = canvas
        self.span_rows += 1
        return True

    def _scroll_before_draw(self, size, canvas) -> None:
        if not (self.scroll_optimisation and self.scroll_region_rows and self.screen_buf):
            return
        if self._resized or self._rows_used is not None or canvas is self._screen_buf_canvas:
            return
        old = self.screen_buf  # the rows urwid drew last, as (attr, charset, bytes) runs
        drawn = self._drawn_rows
        _maxcol, maxrow = size
        if not old or len(old) != maxrow or not drawn or len(drawn) != maxrow:
            return
        region = min(int(self.scroll_region_rows()), maxrow - 1)
        if region < 4:
            return
        new = []
        for row in canvas.content():
            new.append(row)
            if len(new) >= region:
                break
        k = best_shift(old, new, region)
        if not k:
            return
        # margins = the transcript rows; a line feed at the bottom margin scrolls them up
        seq = "\x1b[?25l\x1b[0m" + f"\x1b[1;{region}r\x1b[{region};1H" + "\n" * k + "\x1b[r"
        self.write(seq)
        stale = [[("stale", None, b"")]]  # never equal to a real row: urwid redraws it
        self._drawn_rows = drawn[k:region] + stale * k + drawn[region:]
        self.screen_buf = old[k:region] + stale * k + old[region:]
        self.scrolled_rows += k
