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

MIN_SAVED_ROWS = 3  # scrolling costs ~10 bytes; only worth it when it spares rows


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
        try:
            self._scroll_before_draw(size, canvas)
        except Exception:  # an optimisation must never cost a frame
            self.screen_buf = None
        return super().draw_screen(size, canvas)

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
