"""A terminal emulator for the tests: pyte, corrected where it departs from xterm in what
DashFloat's screen writer relies on (scrolling margins, line feeds, saved cursor)."""

from __future__ import annotations

import pyte
from pyte.screens import Margins, wcwidth  # wcwidth: pyte's own, lru-cached


class XTerm(pyte.Screen):
    """pyte with xterm's rules where pyte departs from them, in what DashFloat uses:

    * a line feed (and CUD/CUU) moves within the scrolling region only when the cursor is
      inside it; below the bottom margin it moves down to the last line, and only a line
      feed ON the bottom margin scrolls the region (pyte clamps the cursor to the margin);
    * a row scrolled in by a line feed takes the current background colour (xterm's bce),
      as pyte's erases do already;
    * DECSTBM, also the reset `ESC[r`, moves the cursor home;
    * DECRC restores the saved row as it was (pyte clamps it into the margins);
    * a combining character after the last column joins the last cell (pyte wraps first);
    * the alternate screen (?1049h/l, ?1047, ?47): the normal screen is kept aside and comes
      back when the program leaves (pyte has none: the program's last frame stayed on
      screen after it left, and a test could read a frame that was no longer there);
    * `keep_margins_on_resize`: a terminal that keeps the margins across a resize,
      clamped to the smaller size and still clamped after it grows back (the worst case;
      pyte and xterm reset them).
    """

    keep_margins_on_resize = False
    region_scrolls = 0
    ALTERNATE = frozenset((1049, 1047, 47))
    _normal = None  # the normal screen (cells, cursor) while the alternate one is shown

    def set_mode(self, *modes, **kwargs) -> None:
        if kwargs.get("private") and self.ALTERNATE.intersection(modes):
            self._enter_alternate(1049 in modes)
            modes = tuple(m for m in modes if m not in self.ALTERNATE)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes, **kwargs) -> None:
        if kwargs.get("private") and self.ALTERNATE.intersection(modes):
            self._leave_alternate(1049 in modes)
            modes = tuple(m for m in modes if m not in self.ALTERNATE)
        super().reset_mode(*modes, **kwargs)

    def _enter_alternate(self, save_cursor: bool) -> None:
        if self._normal is not None:
            return
        self._normal = ({y: dict(line) for y, line in self.buffer.items()},
                        (self.cursor.x, self.cursor.y) if save_cursor else None)
        self.erase_in_display(2)

    def _leave_alternate(self, restore_cursor: bool) -> None:
        if self._normal is None:
            return
        cells, at = self._normal
        self._normal = None
        self.buffer.clear()
        for y, line in cells.items():
            if y < self.lines:
                self.buffer[y].update({x: c for x, c in line.items() if x < self.columns})
        self.dirty.update(range(self.lines))
        if restore_cursor and at is not None:
            self.cursor.x, self.cursor.y = min(at[0], self.columns), min(at[1], self.lines - 1)

    def _inside(self) -> Margins | None:
        m = self.margins
        if m is not None and m.top <= self.cursor.y <= m.bottom:
            return m
        return None

    def index(self) -> None:
        m = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == m.bottom:
            super().index()
            if self.margins is not None:
                self.region_scrolls += 1  # for the benchmarks: scrolls inside DECSTBM margins
            bg = self.cursor.attrs.bg
            if bg != "default":  # xterm's bce: the row scrolled in takes the current background
                line = self.buffer[m.bottom]
                for x in range(self.columns):
                    line[x] = self.default_char._replace(bg=bg)
        elif self.cursor.y < self.lines - 1:
            self.cursor.y += 1

    def cursor_down(self, count=None) -> None:
        m = self._inside()
        bottom = m.bottom if m else self.lines - 1
        self.cursor.y = min(self.cursor.y + (count or 1), bottom)

    def cursor_up(self, count=None) -> None:
        m = self._inside()
        top = m.top if m else 0
        self.cursor.y = max(self.cursor.y - (count or 1), top)

    def draw(self, data: str) -> None:
        if data.isascii():
            return super().draw(data)
        for ch in data:  # a combining character on the pending-wrap column joins the last
            if self.cursor.x == self.columns and wcwidth(ch) == 0 and self.columns:  # cell
                line = self.buffer[self.cursor.y]
                last = line[self.columns - 1]
                line[self.columns - 1] = last._replace(data=last.data + ch)
            else:
                super().draw(ch)

    def restore_cursor(self) -> None:
        y = self.savepoints[-1].cursor.y if self.savepoints else None
        super().restore_cursor()
        if y is not None and pyte.modes.DECOM not in self.mode:  # pyte clamps to the margins
            self.cursor.y = min(y, self.lines - 1)

    def set_margins(self, top=None, bottom=None) -> None:
        super().set_margins(top, bottom)
        self.cursor_position()

    def resize(self, lines=None, columns=None) -> None:
        margins = self.margins
        super().resize(lines, columns)
        if self.keep_margins_on_resize and margins is not None:  # kept, clamped to the new size
            top, bottom = min(margins.top, self.lines - 1), min(margins.bottom, self.lines - 1)
            self.margins = Margins(top, bottom) if bottom > top else None


def cells(screen: pyte.Screen) -> list[list[tuple]]:
    """Every cell's character and rendition."""
    return [
        [(c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse, c.strikethrough)
         for c in (screen.buffer[y][x] for x in range(screen.columns))]
        for y in range(screen.lines)
    ]


