"""The whole preview of a pending call, in the transcript's place (v on a confirmation).

The transcript shows a window of a long preview (50 lines, long lines clipped); this view
shows all of it (bounded by tools.preview), scrolled by rows. It lays out only the lines
it draws or scrolls over, one urwid Text each, so a 20,000-line diff opens at once.
The status bar and the prompt stay below it, so the question is still in sight.
"""

from __future__ import annotations

import urwid

Markup = list

HINTS = ("PgUp/PgDn Home/End", "PgUp/PgDn", "")  # the longest that fits; "q back" always
TITLE_KEPT = 24  # columns of the title kept before the paging keys give way


def title_row(title: str, where: str, cols: int, width=urwid.calc_width) -> str:
    """The title row: the preview's title, where the view is, the keys. What gives way at
    a narrow width: the title's end ("…") down to TITLE_KEPT columns, then the paging
    keys, then the title again; the way back (q) and where the view is stay. PURE
    (`width(text, start, end)` measures in columns)."""

    def fitted(keep: int, tail: str) -> str | None:
        room = cols - width(tail, 0, len(tail))
        if width(title, 0, len(title)) <= room:
            return title + tail
        cut = title
        while cut and width(cut, 0, len(cut)) > room - 1:
            cut = cut[:-1]
        return f"{cut}…{tail}" if width(cut, 0, len(cut)) >= keep else None

    tails = [f" ·{where} · {hints + ' · ' if hints else ''}q back " for hints in HINTS]
    for tail in tails:
        row = fitted(min(TITLE_KEPT, width(title, 0, len(title))), tail)
        if row is not None:
            return row
    # a narrow terminal: what of the title fits; at the very least the row ends in "…" (urwid)
    return fitted(4, tails[-1]) or title + tails[-1]


class PreviewView(urwid.Widget):
    """A title row over the lines, scrolled by rows from a (line, row) top."""

    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = True

    def __init__(self, title: str, lines: list[Markup]):
        super().__init__()
        self.title = title
        self.lines = lines
        self.top = (0, 0)  # first line shown, and how many of its rows are above the view
        self._texts: dict[int, urwid.Text] = {}
        self.last_size: tuple[int, int] | None = None

    # ---- layout -------------------------------------------------------------------------
    def _text(self, i: int) -> urwid.Text:
        text = self._texts.get(i)
        if text is None:
            if len(self._texts) > 2000:  # only what was drawn lately is kept
                self._texts.clear()
            text = self._texts[i] = urwid.Text(self.lines[i] or "", wrap="any")
        return text

    def _rows(self, i: int, cols: int) -> int:
        return self._text(i).rows((cols,))

    def _body(self, size) -> tuple[int, int]:
        cols, rows = size
        return cols, max(1, rows - 1)

    def scroll(self, rows: int, size) -> None:
        """Move the top by `rows` rows (negative: up), within the lines."""
        cols, height = self._body(size)
        i, skip = self.top
        if rows > 0:
            rows = min(rows, self._rows_below_top(cols, height))
            while rows > 0:
                left = self._rows(i, cols) - skip
                if rows < left:
                    skip += rows
                    break
                rows -= left
                i, skip = i + 1, 0
        else:
            rows = -rows
            while rows > 0:
                if skip >= rows:
                    skip -= rows
                    break
                rows -= skip
                if i == 0:
                    skip = 0
                    break
                i -= 1
                skip = self._rows(i, cols)
        self.top = (i, skip)

    def _rows_below_top(self, cols: int, height: int) -> int:
        """How far the view may move down: the last row stops at the bottom."""
        i, skip = self.top
        total = -skip
        for j in range(i, len(self.lines)):
            total += self._rows(j, cols)
            if total - height > 10_000:  # far from the end: no need to count it all
                break
        return max(0, total - height)

    def home(self) -> None:
        self.top = (0, 0)

    def end(self, size) -> None:
        cols, height = self._body(size)
        i, rows = len(self.lines), 0
        while i > 0 and rows < height:
            i -= 1
            rows += self._rows(i, cols)
        self.top = (i, max(0, rows - height))

    def keypress(self, size, key):
        _cols, height = self._body(size)
        if key == "up":
            self.scroll(-1, size)
        elif key == "down":
            self.scroll(1, size)
        elif key == "page up":
            self.scroll(-max(1, height - 1), size)
        elif key == "page down":
            self.scroll(max(1, height - 1), size)
        elif key == "home":
            self.home()
        elif key == "end":
            self.end(size)
        else:
            return key
        self._invalidate()
        return None

    def visible(self, size=None) -> tuple[int, int]:
        """(first, last) line numbers shown, from 1."""
        size = size or self.last_size or (80, 24)
        cols, height = self._body(size)
        i, skip = self.top
        rows = -skip
        last = i
        while last < len(self.lines) and rows < height:
            rows += self._rows(last, cols)
            last += 1
        return (min(i + 1, len(self.lines)), last)

    def _inside(self, cols: int, height: int) -> str:
        """Where the view is inside a line taller than itself (a 200 KB line is 250 rows
        at 80 columns, and every page of it looks alike): ' · row 126/250' of the first line shown."""
        i, skip = self.top
        if i >= len(self.lines):
            return ""
        rows = self._rows(i, cols)
        if rows <= height:
            return ""
        return f" · row {skip + 1:,}/{rows:,}"

    # ---- drawing ------------------------------------------------------------------------
    def render(self, size, focus=False):
        self.last_size = size
        cols, height = self._body(size)
        first, last = self.visible(size)
        where = f" lines {first:,}-{last:,} of {len(self.lines):,}" if self.lines else " empty"
        where += self._inside(cols, height)
        head = title_row(self.title, where, cols)
        title = urwid.Text(("diff_header", head), wrap="ellipsis").render((cols,))
        parts = [(title, None, False)]
        i, skip = self.top
        got = 0
        while got < height and i < len(self.lines):
            canvas = self._text(i).render((cols,))
            n = canvas.rows()
            if skip:
                canvas = urwid.CompositeCanvas(canvas)
                canvas.trim(skip)
                n -= skip
                skip = 0
            parts.append((canvas, None, False))
            got += n
            i += 1
        combined = urwid.CanvasCombine(parts)
        if got > height:
            combined.trim_end(got - height)
        elif got < height:
            combined.pad_trim_top_bottom(0, height - got)
        return combined
