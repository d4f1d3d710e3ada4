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

import os

import urwid
from urwid.display import _raw_display_base
from urwid.display.common import UNPRINTABLE_C1_TRANS_TABLE, UNPRINTABLE_TRANS_TABLE
from urwid.str_util import calc_width

# urwid's own table (colour depth -> AttrSpec slot), as its draw_screen uses it
_ATTRSPEC_INDEX_BY_COLORS = _raw_display_base._ATTRSPEC_INDEX_BY_COLORS

MIN_SAVED_ROWS = 3  # scrolling costs ~10 bytes; only worth it when it spares rows
MIN_SPAN_COL = 6  # moving the cursor into a row costs ~8 bytes; a shorter prefix is re-sent


def row_divergence(old: list, new: list) -> tuple[int, list]:
    """(column, runs of `new` from that column) where canvas row `new` first differs
    from `old`; rows are lists of (attr, charset, bytes) runs in one UTF-8 encoding.

    Pure. The split falls between two ASCII characters only, so a wide or combining
    character is never cut or separated from what it modifies (the column count of
    ASCII is its length). Rows with a charset (DEC graphics) are not split at all.
    """
    col = 0
    for i, (o, n) in enumerate(zip(old, new)):
        if n[1] is not None:
            return 0, new
        if o == n:
            b = n[2]
            col += len(b) if b.isascii() else calc_width(b, 0, len(b))
            continue
        if o[0] != n[0] or o[1] != n[1]:
            return col, new[i:]
        a, b = o[2], n[2]
        k, m = 0, min(len(a), len(b))
        while k < m and a[k] == b[k]:
            k += 1
        while k and (b[k - 1] >= 0x80 or (k < len(b) and b[k] >= 0x80)):
            k -= 1
        head = b[:k]
        col += len(head) if head.isascii() else calc_width(head, 0, len(head))
        return col, [(n[0], n[1], b[k:])] + new[i + 1 :]
    return col, new[len(old) :]


def compact_sgr(seq: str) -> str:
    """urwid's SGR for an attribute, without what its leading reset already implies.

    urwid writes every attribute as a full `ESC[0;<fg>;<style>;<bg>m`, default colours
    included (`ESC[0;39;49m`). After the `0` reset, `39` and `49` say nothing: dropping
    them makes the commonest sequences 4-8 bytes shorter, a third of a streamed answer's
    terminal bytes. Anything not of that shape is returned as it is.
    """
    if not (seq.startswith("\x1b[0;") and seq.endswith("m")) or "\x1b" in seq[1:]:
        return seq
    params = seq[4:-1].split(";")
    groups, i = [], 0
    while i < len(params):  # 38/48 take their arguments along: 38;5;N and 38;2;R;G;B
        width = {"5": 3, "2": 5}.get(params[i + 1], 1) if params[i] in ("38", "48") and i + 1 < len(params) else 1
        groups.append(";".join(params[i : i + width]))
        i += width
    params = [g for g in groups if g not in ("39", "49")]
    return "\x1b[" + ";".join(["0", *params]) + "m"


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


class DashScreen(urwid.display.raw.Screen):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scroll_region_rows = None  # callable -> rows at the top that scroll together
        self.scroll_optimisation = True
        self.scrolled_rows = 0  # statistics for benchmarks and tests
        self.early_input = b""  # bytes typed before the screen started (ui/early.py)
        self._last_canvas = None
        self.utf8 = urwid.util.get_encoding() == "utf-8"

    def _attrspec_to_escape(self, a) -> str:
        return compact_sgr(super()._attrspec_to_escape(a))

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
        if self.screen_buf and canvas is self._last_canvas:
            return None  # nothing changed (urwid's own check, kept for the wrapper below)
        self._last_canvas = canvas
        frame = canvas
        try:
            rows = list(canvas.content())  # once: our passes and urwid's diff share it
            frame = _Frame(rows, canvas.cursor)
            self._before_draw(size, rows)
        except Exception:  # an optimisation must never cost a frame: urwid redraws it all
            self.screen_buf = None
        return super().draw_screen(size, frame)

    def _before_draw(self, size, rows: list) -> None:
        if not (self.scroll_optimisation and self.screen_buf):
            return
        if self._resized or self._rows_used is not None:
            return
        maxcol, maxrow = size
        old, drawn = self.screen_buf, self._drawn_rows
        if len(old) != maxrow or not drawn or len(drawn) != maxrow or len(rows) != maxrow:
            return
        out: list[str] = []
        region = min(int(self.scroll_region_rows()), maxrow - 1) if self.scroll_region_rows else 0
        k = best_shift(old, rows, region) if region >= 4 else 0
        if k:
            # margins = the transcript rows; a line feed at the bottom margin scrolls them up
            out.append(f"\x1b[1;{region}r\x1b[{region};1H" + "\n" * k + "\x1b[r")
            stale = [[("stale", None, b"")]]  # never equal to a real row: urwid redraws it
            drawn[:] = drawn[k:region] + stale * k + drawn[region:]
            old[:] = old[k:region] + stale * k + old[region:]
            self.scrolled_rows += k
        if self.utf8:
            for y in range(maxrow - 1):  # not the last row: urwid's bottom-right-cell trick
                new = rows[y]
                if old[y] != new:
                    self._span(out, y, old[y], new)
        if out:
            self.write("\x1b[?25l\x1b[0m" + "".join(out))

    def _span(self, out: list[str], y: int, old: list, new: list) -> None:
        """Write only the part of row y from the first column where it changed (the
        growing last line of a streamed answer is otherwise re-sent whole every frame)."""
        col, rest = row_divergence(old, new)
        if col < MIN_SPAN_COL or not rest:
            return
        a, cs, run = rest[-1]
        erase = False
        if run[-1:] == b" " and self.back_color_erase:
            spec = self.resolve_attr(a, _ATTRSPEC_INDEX_BY_COLORS[self.colors])
            if not (spec.standout or spec.underline):
                rest = [*rest[:-1], (a, cs, run.rstrip(b" "))]
                erase = True
        out.append(f"\x1b[{y + 1};{col + 1}H")
        for a, _cs, run in rest:
            out.append(self._attr_to_escape(a))
            text = run.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
            out.append(text if text.isascii() else text.translate(UNPRINTABLE_C1_TRANS_TABLE))
        if erase:
            out.append("\x1b[K")
        self.screen_buf[y] = new
        self._drawn_rows[y] = [(self._attr_to_escape(a), cs, run) for a, cs, run in new]


class _Frame:
    """A rendered canvas's rows, materialised once; what urwid's draw_screen reads of a
    canvas (rows(), content(), cursor)."""

    __slots__ = ("_rows", "cursor")

    def __init__(self, rows: list, cursor):
        self._rows, self.cursor = rows, cursor

    def rows(self) -> int:
        return len(self._rows)

    def content(self):
        return self._rows
