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
import re

import urwid
from urwid.display import _raw_display_base
from urwid.display.common import UNPRINTABLE_C1_TRANS_TABLE, UNPRINTABLE_TRANS_TABLE
from urwid.str_util import calc_width

# urwid's own table (colour depth -> AttrSpec slot), as its draw_screen uses it
_ATTRSPEC_INDEX_BY_COLORS = _raw_display_base._ATTRSPEC_INDEX_BY_COLORS

MIN_SAVED_ROWS = 3  # scrolling costs ~10 bytes; only worth it when it spares rows


def row_divergence(old: list, new: list) -> tuple[int, list]:
    """(column, runs of `new` from that column) where canvas row `new` first differs
    from `old`; rows are lists of (attr, charset, bytes) runs in one UTF-8 encoding.

    Pure. The split falls between two ASCII characters only, so a wide or combining
    character is never cut or separated from what it modifies (the column count of
    ASCII is its length). Rows with a charset (DEC graphics) are not split at all.
    """
    col = 0
    for i, (o, n) in enumerate(zip(old, new, strict=False)):
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
        self._pending: tuple[str, str] | None = None  # (output, SGR state) for the next frame
        self._all_ours = False  # _before_draw wrote every changed row but the last
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
            if self._pending is not None and self._all_ours and rows[-1] == self.screen_buf[-1]:
                return self._draw_alone(frame)  # every changed row is ours: no urwid pass
        except Exception:  # an optimisation must never cost a frame: urwid redraws it all
            self._pending = None
            self.screen_buf = None
        try:
            return super().draw_screen(size, frame)
        finally:
            self._flush_pending()

    def _draw_alone(self, frame: _Frame) -> None:
        """Finish a frame whose changed rows _before_draw has all written: the cursor,
        and urwid's record of what is on screen (as its own draw_screen would leave it)."""
        pre, state = self._pending
        self._pending = None
        out = [HIDE, RESET, pre]
        if state != RESET:
            out.append(RESET)
        if frame.cursor is not None:
            x, y = frame.cursor
            out.append(f"\x1b[{y + 1};{x + 1}H{SHOW}")
            self._cy = y
        self.write("".join(out))
        self.flush()
        self.screen_buf = frame.content()
        self._screen_buf_canvas = frame

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
            # and brings in blank rows (default colours: the SGR was reset just before)
            out.append(f"\x1b[1;{region}r\x1b[{region};1H" + "\n" * k + "\x1b[r")
            blank = [(None, None, b" " * maxcol)]
            drawn_blank = [(self._attr_to_escape(None), None, b" " * maxcol)]
            old[:] = old[k:region] + [blank] * k + old[region:]
            drawn[:] = drawn[k:region] + [drawn_blank] * k + drawn[region:]
            self.scrolled_rows += k
        state = RESET
        self._all_ours = False
        if self.utf8:
            # every changed row but the last (urwid's bottom-right-cell trick stays urwid's)
            changes = [(y, old[y], rows[y]) for y in range(maxrow - 1) if old[y] != rows[y]]
            text, state, done = render_rows(changes, self._attr_to_escape)
            out.append(text)
            self._all_ours = len(done) == len(changes)
            for y in done:
                old[y] = rows[y]
                drawn[y] = [(self._attr_to_escape(a), cs, run) for a, cs, run in rows[y]]
        if out:
            self._pending = ("".join(out), state)

    def write(self, data: str) -> None:
        """urwid's frame, with what _before_draw prepared put inside it: one write, one
        hidden-cursor span, and without the cursor-home urwid sends before its first move."""
        pending = self._pending
        if pending is not None and data.startswith(HIDE):
            self._pending = None
            pre, state = pending
            rest = data[len(HIDE) :]
            if state == RESET:
                rest = rest.removeprefix(RESET)  # urwid resets what is reset already
            data = HIDE + RESET + pre + _REDUNDANT_HOME.sub("", rest, count=1)
        super().write(data)

    def _flush_pending(self) -> None:
        if self._pending is not None:  # urwid wrote no frame (a resize): ours goes alone
            pre, _state = self._pending
            self._pending = None
            super().write(HIDE + RESET + pre + RESET)
            self.flush()


HIDE = "\x1b[?25l"
SHOW = "\x1b[?25h"
RESET = "\x1b[0m"
# urwid's frame starts with a cursor-home and a move to 1;1; both are redundant when a
# move to a row follows at once (row 1 itself is written without a move)
_REDUNDANT_HOME = re.compile(r"^((?:\x1b\[[0-9;]*m)?)\x1b\[H\x1b\[1;1H(?=\x1b\[\d+;\d+H)")


def _width(b: bytes) -> int:
    return len(b) if b.isascii() else calc_width(b, 0, len(b))


def _trim_blank_end(row: list, escape_of) -> tuple[list, int]:
    """The row without its trailing blank cells (spaces in the default rendition), and
    the column where its last non-blank cell ends."""
    runs = list(row)
    while runs:
        a, cs, run = runs[-1]
        if escape_of(a) != RESET:
            break
        stripped = run.rstrip(b" ")
        if stripped:
            runs[-1] = (a, cs, stripped)
            break
        runs.pop()
    return runs, sum(_width(r[2]) for r in runs)


def render_rows(changes: list, escape_of) -> tuple[str, str, list[int]]:
    """Terminal output that turns rows `old` into rows `new`, for (y, old, new) in
    ascending y. Pure, given `escape_of(attr) -> SGR string`.

    Returns (output, the SGR state it leaves, the rows it drew). It starts from the
    default rendition (RESET), writes a row from the first column where it changed
    (row_divergence), moves with CR LF to the start of the next row instead of a cursor
    address when it can, erases to the end of the row only when the old row had
    something there, and repeats no SGR that is already in force. Rows with a charset
    (DEC graphics) are left to urwid.
    """
    out: list[str] = []
    state = RESET
    drawn: list[int] = []
    cy = -2  # the row the cursor is on after the last write (-2: unknown)
    for y, old, new in changes:
        if any(cs is not None for _a, cs, _r in new):
            cy = -2
            continue
        col, rest = row_divergence(old, new)
        rest, new_end = _trim_blank_end(rest, escape_of)
        new_end += col
        _old_runs, old_end = _trim_blank_end(old, escape_of)
        drawn.append(y)
        if not rest and old_end <= new_end:
            continue  # nothing visible changed (runs split differently, trailing blanks)
        if col == 0 and cy == y - 1:
            out.append("\r\n")
        else:
            out.append(f"\x1b[{y + 1};{col + 1}H")
        for a, _cs, run in rest:
            esc = escape_of(a)
            if esc != state:
                out.append(esc)
                state = esc
            text = run.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
            out.append(text if text.isascii() else text.translate(UNPRINTABLE_C1_TRANS_TABLE))
        if old_end > new_end:
            if state != RESET:
                out.append(RESET)
                state = RESET
            out.append("\x1b[K")
        cy = y
    return "".join(out), state, drawn


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
