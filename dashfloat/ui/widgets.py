"""urwid widgets: the transcript pane, the prompt editor, the status bar and the help.

They only ever run on the main thread. The transcript is a pane of lines, each laid out
once into rows and cached (never one giant Text), so a long session costs the same per
frame as a short one.
"""

from __future__ import annotations

import array
import bisect
import collections
import collections.abc
import functools
import re

import urwid
from urwid import text_layout
from urwid.str_util import calc_width

from dashfloat import commands
from dashfloat.ui import keymap
from dashfloat.ui.theme import Glyphs
from dashfloat.ui.transcript import Entry, Line, LineChain, segments

_UTF8 = urwid.util.get_encoding() == "utf-8"


# A line whose first segment (after its blank indent) has one of these attributes hangs
# it: the prefix (the answer's glyph, a bullet, a quote bar, a system entry's dot) sits on
# the first row and the text wraps under the text, not under the prefix (a tool row's gear
# too). A quote bar is
# repeated on every row.
HANGING = frozenset(("assistant_prefix", "user_prefix", "md_bullet", "md_quote", "tool",
                     "system_info", "system_warn", "system_error", "system_note"))
REPEATED = frozenset(("md_quote",))
MIN_TEXT = 2  # columns the text needs beside a hanging prefix, else the prefix wraps with it


class IndentText(urwid.Text):
    """A Text that wraps under its own indent (one widget, not a Padding around a Text:
    a transcript holds one of these per line, so the extra layer would cost per row)."""

    def __init__(self, markup, indent: int):
        super().__init__(markup)
        self.indent = indent

    def rows(self, size, focus=False):
        return super().rows((max(1, size[0] - self.indent),), focus)

    def render(self, size, focus=False):
        (maxcol,) = size
        inner = max(1, maxcol - self.indent)
        canvas = urwid.CompositeCanvas(super().render((inner,), focus))
        canvas.pad_trim_left_right(maxcol - inner, 0)
        return canvas


def _split_indent(line: Line) -> tuple[int, Line]:
    """(indent, the rest): a leading all-blank segment is the line's indent, so a long
    line wraps under it instead of at column 0."""
    if line and line[0][1] and not line[0][1].strip() and len(line) > 1:
        return len(line[0][1]), line[1:]
    return 0, line


def _split_hang(line: Line, width: int) -> tuple[int, tuple | None, Line]:
    """(indent, hanging prefix or None, the rest) of a line laid out `width` wide: the
    indent counts the prefix, which takes the first row's last indent columns."""
    indent, line = _split_indent(line)
    if len(line) > 1 and line[0][0] in HANGING and line[0][1]:
        hang_width = calc_width(line[0][1], 0, len(line[0][1]))
        if width - indent - hang_width >= MIN_TEXT:
            return indent + hang_width, line[0], line[1:]
    return indent, None, line


def _hang_rows(rows: list, indent: int, hang: tuple) -> list:
    """Rows laid out under `indent` (each starting with its blank pad run) with the
    hanging prefix put into the pad of the first row (of every row for a quote bar)."""
    attr, text = hang
    data = text.encode()
    lead = indent - calc_width(text, 0, len(text))
    prefix = ([(None, None, b" " * lead)] if lead else []) + [(attr or None, None, data)]
    out = []
    for i, row in enumerate(rows):
        if i == 0 or attr in REPEATED:
            row = prefix + row[1:]
        out.append(row)
    return out


def _widget(indent: int, line: Line) -> urwid.Widget:
    return IndentText(_markup(line), indent) if indent else urwid.Text(_markup(line))


class _LineWidget(urwid.Widget):
    """make_row's widget: lays its line out for the width it is given (whether a prefix
    hangs depends on the width), the way line_rows does, with urwid's own Text."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, line: Line):
        super().__init__()
        self.line = segments(line)

    def rows(self, size, focus=False):
        return self.render(size, focus).rows()

    def render(self, size, focus=False):
        (maxcol,) = size
        indent, hang, rest = _split_hang(self.line, maxcol)
        if hang is None:
            return _widget(indent, rest).render(size, focus)
        inner = _LineWidget([("", " " * indent), *rest] if rest else rest).render(size)
        return RowsCanvas(_hang_rows(list(inner.content()), indent, hang), maxcol)


def make_row(line: Line) -> urwid.Widget:
    """One transcript row as a widget (line_rows gives the same rows without one)."""
    return _LineWidget(line)


def line_rows(line: Line, width: int) -> list:
    """The canvas rows ((attr, None, bytes) runs, `width` columns) of one transcript line:
    exactly what make_row(line).render((width,)).content() gives, without building a
    widget and a canvas per line (the transcript lays out a line whenever it changes,
    the streaming one every frame). urwid's own layout decides the wrapping; anything
    but plain text segments in its layout (tabs) falls back to the widget."""
    return long_line_rows(line, width)[0]


LONG_LINE = 2000  # characters: a longer line is laid out piece by piece (long_line_rows)
LAYOUT_PIECE = 4096  # characters laid out by urwid at once in a long line


class LineLayout:
    """What long_line_rows keeps of a long line's layout, to lay it out again from its
    last rows when the line grows (an answer streaming into one long paragraph)."""

    __slots__ = ("width", "indent", "hang", "bounds", "text", "layout", "rows")

    def __init__(self, width, indent, hang, bounds, text, layout, rows):
        self.width, self.indent, self.hang, self.bounds = width, indent, hang, bounds
        self.text, self.layout, self.rows = text, layout, rows


def _row_start(row) -> int:
    part = row[0]
    return part[1]


class PackedLayout(collections.abc.Sequence):
    """The layout rows of a long line, kept small: a row of the usual shape (its text
    one column a character, then the blank it wrapped at, either one optional) is three
    integers in arrays, not a list of tuples (24 bytes instead of ~210: a 4 MiB line is
    35,000 rows at 120 columns); any other row is kept as it is. Indexing gives the row
    as urwid's layout has it."""

    __slots__ = ("_start", "_end", "_mark", "_other")

    def __init__(self):
        self._start, self._end, self._mark = array.array("q"), array.array("q"), array.array("q")
        self._other: dict = {}  # index -> a row of another shape

    def add(self, row: list, by: int = 0) -> None:
        """Append urwid layout `row`, its offsets moved by `by`."""
        s = e = m = -1
        if len(row) == 1 and len(row[0]) == 2 and row[0][0] == 0:
            m = row[0][1] + by
        elif 1 <= len(row) <= 2 and len(row[0]) == 3 and row[0][0] == row[0][2] - row[0][1] and (
                len(row) == 1 or (len(row[1]) == 2 and row[1][0] == 0)):
            s, e = row[0][1] + by, row[0][2] + by
            if len(row) == 2:
                m = row[1][1] + by
        else:
            self._other[len(self._start)] = _shift(row, by)
        self._start.append(s)
        self._end.append(e)
        self._mark.append(m)

    def truncate(self, n: int) -> PackedLayout:
        """Keep the first `n` rows, in place (to grow again from there: a copy would cost
        a frame the rows of the whole line, not the rows that changed)."""
        del self._start[n:], self._end[n:], self._mark[n:]
        for k in [k for k in self._other if k >= n]:
            del self._other[k]
        return self

    def __len__(self) -> int:
        return len(self._start)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self._start)))]
        if k < 0:
            k += len(self._start)
        other = self._other.get(k)
        if other is not None:
            return other
        s, e, m = self._start[k], self._end[k], self._mark[k]  # IndexError past the end
        row = [(e - s, s, e)] if s >= 0 else []
        if m >= 0:
            row.append((0, m))
        return row


def _layout_text(text: str, inner: int, start: int = 0, done: PackedLayout | None = None) -> PackedLayout:
    """urwid's layout rows of `text` (absolute offsets), `inner` columns, space wrap.

    A long text is laid out LAYOUT_PIECE characters at a time: of a piece's rows all but
    the last two are final (greedy wrapping from a row start does not depend on what
    came before; only the last rows can change with the text after them), and the next
    piece starts at the second last one. `done` are rows kept from an earlier layout of
    a prefix of `text`, `start` the offset of the row to lay out from (the first row
    not in `done`): the rows of a text that grew are its old rows but the last two plus
    the new ones, at a cost that depends on the new text only."""
    def layout(t, width, _align, _wrap):
        if _UNCLEAN_ASCII.search(t) is None:
            return _ascii_layout(t, width)
        return text_layout.default_layout.layout(t, width, "left", "space")

    out = done if done is not None else PackedLayout()
    n = len(text)
    piece = max(LAYOUT_PIECE, inner * 8)
    while True:
        end = start + piece
        if end >= n:
            for row in layout(text[start:], inner, "left", "space"):
                out.add(row, start)
            return out
        rows = layout(text[start:end], inner, "left", "space")
        if len(rows) < 3:
            piece *= 2  # a piece that is one or two rows (blanks): take more at once
            continue
        for row in rows[:-2]:
            out.add(row, start)
        start += _row_start(rows[-2])


_UNCLEAN_ASCII = re.compile(r"[^\x20-\x7e]")


def _ascii_layout(text: str, width: int) -> list:
    """urwid's StandardTextLayout "space" wrap of printable ASCII text without newlines
    (one column per character), row by row instead of character by character: the same
    rows (tests/widget check it against urwid on random text), a hundred times faster on
    a long line."""
    segments: list = []
    n = len(text)
    idx = 0
    while idx <= n:
        if n - idx <= width:
            segments.append([(n - idx, idx, n), (0, n)] if n > idx else [(0, n)])
            idx = n + 1
            continue
        pos = idx + width
        if text[pos] == " ":
            segments.append([(width, idx, pos), (0, pos)])
            idx = pos + 1
            continue
        prev = text.rfind(" ", idx, pos)
        if prev >= 0:
            cols = prev - idx
            segments.append([(cols, idx, prev), (0, prev)] if cols else [(0, prev)])
            idx = prev + 1
            continue
        if segments:  # urwid joins a word broken anyway to the row before it, when it can
            last = segments[-1]
            if len(last) == 2 or (len(last) == 1 and len(last[0]) == 2):
                if len(last) == 1:
                    ((h_sc, h_off),) = last
                    p_sc, p_off = 0, h_off
                else:
                    (p_sc, p_off, _p_end), (h_sc, h_off) = last
                jpos = min(p_off + width, n)
                if p_sc < width and h_sc == 0 and text[h_off] == " " and jpos > h_off:
                    del segments[-1]
                    segments.append([(jpos - p_off, p_off, jpos)])
                    idx = jpos
                    if idx < n and text[idx] == " ":
                        segments[-1].append((0, idx))
                        idx += 1
                    continue
        segments.append([(width, idx, pos)])
        idx = pos
    return segments


def _shift(row, by: int):
    if not by:
        return row
    return [(p[0], p[1] + by, p[2] + by) if len(p) == 3 else (p[0], p[1] + by) for p in row]


def long_line_rows(line: Line, width: int, prev: LineLayout | None = None) -> tuple[list, LineLayout | None]:
    """line_rows, and for a line longer than LONG_LINE the LineLayout that lets the next
    call lay out only what changed: given `prev` (the same line before it grew, at this
    width), rows that cannot change are reused."""
    indent, hang, line = _split_hang(segments(line), width)
    if hang is not None:
        rows, state = long_line_rows([("", " " * indent), *line] if line else line, width, prev)
        if isinstance(rows, LazyRows):
            return rows.hung(indent, hang), state
        return _hang_rows(rows, indent, hang), state
    inner = max(1, width - indent)
    segs = [(a or None, t) for a, t in line if t]
    # the text of one segment is taken as it is: a LongText (a line that grows a frame
    # at a time) is sliced, never copied whole
    text = segs[0][1] if len(segs) == 1 else "".join(str(t) for _a, t in segs)
    if type(text) is not str and len(text) <= LONG_LINE:
        text, line = str(text), [(a, str(t)) for a, t in line]
    if (type(text) is str and "\t" in text) or not _UTF8 or inner < 2:  # (a LongText is visible(): no tab)
        return _widget_rows(indent, line, width), None
    pad = [(None, None, b" " * (width - inner))] if width > inner else []
    if not text:
        return [pad + [(None, None, b" " * inner)]], None
    bounds, pos = [], 0  # (start, end, attr) of every segment in `text`
    for a, t in segs:
        bounds.append((pos, pos + len(t), a))
        pos += len(t)
    long = len(text) > LONG_LINE
    keep = 0  # rows of prev that stay
    if long and prev is not None and prev.width == width and prev.indent == indent and len(prev.layout) > 2 \
            and _grew_from(text, prev.text) and _bounds_extend(prev.bounds, bounds):
        # prev is a hint used once (TranscriptPane.set_line keeps it for the next layout):
        # its layout and made rows are taken over, not copied
        keep = len(prev.layout) - 2
        layout = _layout_text(text, inner, _row_start(prev.layout[keep]), prev.layout.truncate(keep))
    elif long:
        layout = _layout_text(text, inner)
    elif text.isascii() and len(text) <= inner:  # the common case: one row, no layout needed
        layout = [[(0, 0, len(text))]]
    else:
        layout = text_layout.default_layout.layout(text, inner, "left", "space")
    starts = [b[0] for b in bounds]
    if long:  # rows made when a frame shows them: a megabyte line is 8,000 rows or more
        out = LazyRows(layout, text, bounds, starts, inner, pad, prev.rows if keep else None, keep)
        return out, LineLayout(width, indent, None, bounds, text, layout, out)
    out = []
    for row in layout:
        runs = _row_runs(row, text, bounds, starts, inner)
        if runs is None:
            return _widget_rows(indent, line, width), None
        out.append(pad + runs)
    return out, None


class LazyRows(collections.abc.Sequence):
    """The rows of a long line, each made from its layout row when first asked for (a
    frame asks for the rows on screen only); those of `prev` below `keep` are reused.
    At most MADE rows are kept, the oldest made dropped first: scrolling through a 4 MiB
    line (35,000 rows) keeps what a few screens show, not every row it passed."""

    __slots__ = ("_layout", "_text", "_bounds", "_starts", "_inner", "_pad", "_made", "_hang")
    MADE = 1024

    def __init__(self, layout, text, bounds, starts, inner, pad, prev=None, keep=0, hang=None):
        self._layout, self._text, self._bounds, self._starts = layout, text, bounds, starts
        self._inner, self._pad, self._hang = inner, pad, hang
        self._made: dict = {}
        if prev is not None:  # its rows below `keep` stay (taken over: prev is not used again)
            made = self._made = prev._made
            for k in [k for k in made if k >= keep]:
                del made[k]

    def hung(self, indent: int, hang: tuple) -> LazyRows:
        """The same rows with a hanging prefix (_hang_rows), made on demand too."""
        out = LazyRows(self._layout, self._text, self._bounds, self._starts, self._inner, self._pad,
                       hang=(indent, hang))
        out._made = self._made  # the rows without the prefix are shared
        return out

    def __len__(self) -> int:
        return len(self._layout)

    def _row(self, k: int) -> list:
        row = self._made.get(k)
        if row is None:
            runs = _row_runs(self._layout[k], self._text, self._bounds, self._starts, self._inner)
            if runs is None:  # a layout part line_rows leaves to urwid: the widget's row
                runs = list(urwid.Text(str(self._text)).render((self._inner,)).content())[k]
            made = self._made
            if len(made) >= self.MADE:
                del made[next(iter(made))]
            row = made[k] = self._pad + runs
        if self._hang is not None and (k == 0 or self._hang[1][0] in REPEATED):
            row = _hang_rows([row], *self._hang)[0]
        return row

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._row(i) for i in range(*k.indices(len(self._layout)))]
        if k < 0:
            k += len(self._layout)
        if not 0 <= k < len(self._layout):
            raise IndexError(k)
        return self._row(k)


def _grew_from(text, old) -> bool:
    """Whether `old` is a prefix of `text` (str or LongText: an earlier snapshot of the
    same LongText is one at once)."""
    if type(text) is str:
        return type(old) is str and text.startswith(old)
    return text.grew_from(old)


def _bounds_extend(old: list, new: list) -> bool:
    """Whether segments `new` are segments `old` with text added to the last one, or
    after it (the same attributes where the old text was)."""
    if len(new) < len(old):
        return False
    k = len(old) - 1
    return old[:k] == new[:k] and old[k][0] == new[k][0] and old[k][2] == new[k][2] and new[k][1] >= old[k][1]


def _row_runs(row, text: str, bounds: list, starts: list, inner: int):
    """The (attr, None, bytes) runs of one layout row, padded to `inner` columns; None
    for a layout part line_rows does not handle (the widget does)."""
    runs: list = []
    used = 0
    for part in row:
        if len(part) == 2:
            if part[0]:
                return None
            continue
        if len(part) != 3 or not isinstance(part[2], int):
            return None
        cols, start, end = part
        used += cols if cols or start == end else calc_width(text[start:end], 0, end - start)
        k = max(0, bisect.bisect_right(starts, start) - 1)
        while k < len(bounds) and bounds[k][0] < end:
            b0, b1, a = bounds[k]
            k += 1
            if b1 <= start:
                continue
            chunk = text[max(b0, start) : min(b1, end)].encode()
            if runs and runs[-1][0] == a:
                runs[-1] = (a, None, runs[-1][2] + chunk)
            else:
                runs.append((a, None, chunk))
    if used < inner:
        if runs and runs[-1][0] is None:
            runs[-1] = (None, None, runs[-1][2] + b" " * (inner - used))
        else:
            runs.append((None, None, b" " * (inner - used)))
    return runs


def _widget_rows(indent: int, line: Line, width: int) -> list:
    return list(_widget(indent, line).render((width,)).content())


def _markup(line: Line):
    segs = [(a, str(t)) if a else str(t) for a, t in line if t]
    if not segs:
        return ""
    if len(segs) == 1 and isinstance(segs[0], str):
        return segs[0]
    return segs


class RowsCanvas(urwid.Canvas):
    """A canvas that is a list of ready rows ((attr, charset, bytes) runs, full width):
    the transcript's visible rows, taken from a per-line cache, handed to the screen as
    they are (no per-row shards, no re-layout of lines that did not change)."""

    def __init__(self, rows: list, maxcol: int):
        super().__init__()
        self._rows, self._maxcol = rows, maxcol

    def rows(self) -> int:
        return len(self._rows)

    def cols(self) -> int:
        return self._maxcol

    def content(self, trim_left=0, trim_top=0, cols=0, rows=0, attr=None):
        rows = rows or len(self._rows) - trim_top
        cols = cols or self._maxcol - trim_left
        if trim_left or cols != self._maxcol:  # partly covered (an overlay): the general path
            return self._as_text_canvas().content(trim_left, trim_top, cols, rows, attr)
        out = self._rows[trim_top : trim_top + rows]
        if attr:
            out = [[(attr.get(a, a), cs, run) for a, cs, run in row] for row in out]
        return iter(out)

    def content_delta(self, other):
        return self.content()

    def _as_text_canvas(self) -> urwid.TextCanvas:
        text, attrs, css = [], [], []
        for row in self._rows:
            text.append(b"".join(run for _a, _cs, run in row))
            attrs.append([(a, len(run)) for a, _cs, run in row])
            css.append([(cs, len(run)) for _a, cs, run in row])
        return urwid.TextCanvas(text, attrs, css, maxcol=self._maxcol, check_width=False)


AHEAD_PAGES = 4  # screens laid out again at the end of a turn: the one shown and three above


class TranscriptPane(urwid.Widget):
    """The transcript's box: a list of lines (markup), drawn from the bottom while
    following, else from a top anchor (line, row within it).

    Each line is laid out once per width (line_rows) and kept as rows; a frame only
    gathers the cached rows of the lines on screen, so a long session costs the same per
    frame as a short one, and a line costs memory as markup, not as a widget. Scrolling
    is by rows, not by lines.
    """

    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = False

    CACHE_LINES = 2048  # lines whose rows are kept; the oldest laid out are dropped beyond

    def __init__(self):
        super().__init__()
        self.lines: list[Line] = []
        self._cache: list = []  # per line: (width, rows, LineLayout or None) or None
        self._cached: collections.deque = collections.deque()  # line indexes, as laid out
        self.following = True
        self.anchor = (0, 0)  # top (line, row) while not following
        self.last_size: tuple[int, int] = (80, 20)
        self._changed: set[int] = set()  # lines changed since the last prepare() or frame

    # ---- lines ------------------------------------------------------------------------
    def replace(self, start: int, stop: int, lines: list[Line]) -> None:
        """lines[start:stop] = lines (the only way lines change)."""
        at_end = stop == len(self.lines)
        self.lines[start:stop] = lines
        self._cache[start:stop] = [None] * len(lines)
        if at_end:  # the last of them (prepare() lays out a screen's worth at most); lines
            # inserted above others shift indexes: not remembered
            self._changed.update(range(max(start, start + len(lines) - 512), start + len(lines)))
        line, row = self.anchor
        if not self.following and line >= stop:
            self.anchor = (line + len(lines) - (stop - start), row)
        self._invalidate()

    def set_line(self, i: int, line: Line) -> None:
        self.lines[i] = line
        old = self._cache[i]
        # a long line's layout is kept as a hint: when the line only grew, its rows are
        # laid out again from its last two (long_line_rows), not from its start
        self._cache[i] = (None, None, old[2]) if old is not None and old[2] is not None else None
        self._changed.add(i)
        self._invalidate()

    def prepare(self) -> None:
        """Lay out the lines changed since the last call, at the last frame's width, now
        (while following the end: the lines a frame would lay out). A catch-up part
        (App._catch_up) then carries its own layout, and the frame a key waits for
        gathers rows instead of laying out every part taken since the frame before."""
        changed, self._changed = self._changed, set()
        if not self.following:
            return
        width, height = self.last_size
        first = len(self.lines) - height  # a line above the screen's rows is laid out when shown
        for i in changed:
            if first <= i < len(self.lines):
                self._rows(i, width)

    def _rows(self, i: int, width: int) -> list:
        cached = self._cache[i]
        if cached is not None and cached[0] == width:
            return cached[1]
        rows, state = long_line_rows(self.lines[i], width, cached[2] if cached is not None else None)
        self._cache[i] = (width, rows, state)
        self._cached.append(i)
        if len(self._cached) > self.CACHE_LINES:
            # memory follows what is kept (markup), not what was ever shown: rows of a
            # line scrolled far away are laid out again if it comes back (an index that
            # moved since only drops another line's rows: they are laid out again too)
            j = self._cached.popleft()
            if j < len(self._cache) and j != i:
                self._cache[j] = None
        return rows

    def lay_out_again(self) -> None:
        """Drop the rows of the short lines laid out so far and lay out again, at once, those
        of the screen and AHEAD_PAGES - 1 screens above it; the rest are laid out as frames
        show them (a long line's layout stays: it is laid out in pieces).

        Called after a turn's last frame. The rows of an answer are laid out a frame at a time while
        it streams, between everything else the stream allocates and, late in a long day,
        into the holes that thousands of dropped rows left all over the heap; laid out again
        at once, a screen's rows lie together, and a key that shows them touches less
        memory. Turn 300 of a long day against a fresh session, in alternation
        (tests/bench/uiday_bench.py, 11-12 runs each): CPU per PgUp x1.13 (x1.02-1.22)
        without this, x1.03 (x1.00-1.11) with it; PgUp time x1.11 against x1.00 (laid out
        lazily; laid out ahead as now, the first PgUps after a turn, reading its answer, find
        their pages ready). The cost: ~2-4 ms at the end of a turn."""
        kept: collections.deque = collections.deque()
        cache = self._cache
        for i in self._cached:
            cached = cache[i] if i < len(cache) else None
            if cached is None:
                continue
            if cached[2] is None:
                cache[i] = None
            else:
                kept.append(i)
        self._cached = kept
        # the screen and the pages above it, laid out now, together: the first PgUps after
        # a turn (reading its answer) find them laid out
        width, height = self.last_size
        line = len(self.lines) - 1 if self.following else min(self.anchor[0] + height, len(self.lines) - 1)
        rows = 0
        while line >= 0 and rows < AHEAD_PAGES * height:
            rows += len(self._rows(line, width))
            line -= 1
        self._invalidate()

    # ---- drawing ----------------------------------------------------------------------
    def render(self, size, focus=False):
        maxcol, maxrow = size
        self.last_size = size
        self._changed.clear()  # (laid out here if they are on screen)
        if self.following or not self.lines:
            out = self._from_bottom(maxcol, maxrow)
        else:
            out = self._from_anchor(maxcol, maxrow)
        if len(out) < maxrow:
            out = out + [[(None, None, b" " * maxcol)]] * (maxrow - len(out))
        return RowsCanvas(out, maxcol)

    def _from_bottom(self, maxcol: int, maxrow: int) -> list:
        chunks, n, i = [], 0, len(self.lines) - 1
        while i >= 0 and n < maxrow:
            rows = self._rows(i, maxcol)
            chunks.append(rows)
            n += len(rows)
            i -= 1
        extra = max(0, n - maxrow)
        out: list = []
        for k, rows in enumerate(reversed(chunks)):
            out.extend(rows[extra:] if k == 0 and extra else rows)  # of a long line: its last rows
        self.anchor = (i + 1, extra)
        return out

    def _from_anchor(self, maxcol: int, maxrow: int) -> list:
        line, skip = self.anchor
        line = min(max(0, line), len(self.lines) - 1)
        first = self._rows(line, maxcol)
        skip = min(skip, len(first) - 1)
        out: list = list(first[skip : skip + maxrow])  # of a long line: the rows on screen only
        i = line + 1
        while i < len(self.lines) and len(out) < maxrow:
            out.extend(self._rows(i, maxcol)[: maxrow - len(out)])
            i += 1
        if len(out) < maxrow:  # the anchor is too close to the end: show the end
            self.following = True
            return self._from_bottom(maxcol, maxrow)
        self.anchor = (line, skip)
        return out

    # ---- scrolling --------------------------------------------------------------------
    def scroll_rows(self, delta: int) -> None:
        """Move the view `delta` rows (negative: up). Reaching the end follows again."""
        if not self.lines:
            return
        maxcol, maxrow = self.last_size
        if self.following:
            self._from_bottom(maxcol, maxrow)  # sets the anchor where the bottom view starts
            self.following = False
        line, row = self.anchor
        row += delta
        while row < 0 and line > 0:
            line -= 1
            row += len(self._rows(line, maxcol))
        row = max(0, row)
        while line < len(self.lines) - 1 and row >= len(self._rows(line, maxcol)):
            row -= len(self._rows(line, maxcol))
            line += 1
        self.anchor = (line, row)
        if delta > 0 and self._walk(line, row, maxcol, maxrow + 1)[1] <= maxrow:
            self.following = True
        self._invalidate()

    def _walk(self, line: int, row: int, maxcol: int, limit: int) -> tuple[int, int]:
        """From row `row` of `line` down: (the line where `limit` rows are reached or the
        last line, the rows counted up to there)."""
        n, last = -row, len(self.lines) - 1
        line = min(max(0, line), last)
        while True:
            n += len(self._rows(line, maxcol))
            if n >= limit or line == last:
                return line, n
            line += 1

    def to_top(self) -> None:
        self.following = False
        self.anchor = (0, 0)
        self._invalidate()

    def to_end(self) -> None:
        self.following = True
        self._invalidate()

    def position(self) -> tuple[int, int]:
        """(1-based last line on screen, total lines), from the scroll state itself (the
        status bar asks before the next frame is drawn)."""
        total = len(self.lines)
        if not total:
            return (0, 0)
        if self.following:
            return (total, total)
        maxcol, maxrow = self.last_size
        line, _rows = self._walk(*self.anchor, maxcol, maxrow)
        return (line + 1, total)


class TranscriptView:
    """Keeps the pane's lines in step with the model's entries.

    Each entry owns a contiguous range of lines. Only entries whose version moved are
    re-drawn, and only the lines that differ are replaced, so streaming into the last
    entry touches the last few lines, never the whole list.
    """

    def __init__(self, glyphs: Glyphs):
        self.glyphs = glyphs
        self.show_reasoning = False
        self.listbox = self.pane = TranscriptPane()
        self._entries: list[Entry] = []
        self._starts: list[int] = []
        self._lines: list[list[Line]] = []
        self._versions: list[int] = []
        self._index: dict[int, int] = {}  # id(entry) -> its position in _entries
        self._last_entry_len = 0  # how many lines the last entry.lines() gave

    @property
    def following(self) -> bool:
        return self.pane.following

    @following.setter
    def following(self, value: bool) -> None:
        if value:
            self.pane.to_end()
        else:
            self.pane.following = False

    # ---- model -> lines ---------------------------------------------------------------
    def sync(self, entries: list[Entry], touched: set[int] | None = None) -> bool:
        """Bring lines up to date with `entries`; True if anything changed.

        `touched` holds id() of entries changed since the last sync (the model collects
        them); without it the last few entries are checked by version.
        """
        changed = False
        n_known = len(self._entries)
        if touched:
            candidates = [self._index[t] for t in touched if t in self._index]
        else:
            candidates = range(max(0, n_known - 3), n_known)
        for i in sorted(candidates):
            if self._entries[i].version != self._versions[i]:
                self._redraw(i)
                changed = True
        if touched is not None:
            touched.clear()
        for entry in entries[n_known:]:
            self._append(entry)
            changed = True
        return changed

    def _entry_rows(self, entry: Entry, first: bool) -> list[Line]:
        lines = entry.lines(self.glyphs, self.show_reasoning)
        self._last_entry_len = len(lines)
        if lines and not first:  # one blank row between entries
            if isinstance(lines, LineChain):
                return lines.with_head([])
            lines.insert(0, [])  # (lines() gives a new list)
        return lines

    def _append(self, entry: Entry) -> None:
        pane = self.pane
        lines = self._entry_rows(entry, first=len(pane.lines) == 0)
        self._index[id(entry)] = len(self._entries)
        self._entries.append(entry)
        self._starts.append(len(pane.lines))
        self._lines.append(lines)
        self._versions.append(entry.version)
        pane.replace(len(pane.lines), len(pane.lines), lines)

    def _redraw(self, i: int) -> None:
        entry = self._entries[i]
        new = self._entry_rows(entry, first=self._starts[i] == 0)
        old = self._lines[i]
        start = self._starts[i]
        common = min(len(old), len(new))
        k0, kn = entry.kept
        k0 += len(new) - self._last_entry_len
        if not (kn and k0 + kn <= common and old[k0] is new[k0] and old[k0 + kn - 1] is new[k0 + kn - 1]):
            k0 = kn = 0  # no usable hint: compare them all
        for j in (*range(k0), *range(k0 + kn, common)) if kn else range(common):
            if old[j] is not new[j] and old[j] != new[j]:
                self.pane.set_line(start + j, new[j])
        delta = len(new) - len(old)
        if delta > 0:
            pos = start + len(old)
            self.pane.replace(pos, pos, new[len(old) :])
        elif delta < 0:
            self.pane.replace(start + len(new), start + len(old), [])
        if delta:
            for k in range(i + 1, len(self._starts)):
                self._starts[k] += delta
        self._lines[i] = new
        self._versions[i] = entry.version

    def rebuild(self) -> None:
        """Re-draw every entry (after a display option such as reasoning visibility changed)."""
        entries = self._entries
        self._entries, self._starts, self._lines, self._versions = [], [], [], []
        self._index = {}
        self.pane.replace(0, len(self.pane.lines), [])
        for entry in entries:
            self._append(entry)

    # ---- scrolling --------------------------------------------------------------------
    def scroll_to_end(self) -> None:
        self.pane.to_end()

    def scroll(self, command: str) -> None:
        pane = self.pane
        if not pane.lines:
            return
        page = max(1, pane.last_size[1] - 1)
        if command == "scroll_top":
            pane.to_top()
        elif command == "scroll_bottom":
            pane.to_end()
        else:
            delta = {"scroll_page_up": -page, "scroll_page_down": page,
                     "scroll_line_up": -1, "scroll_line_down": 1}[command]
            pane.scroll_rows(delta)

    def position(self) -> tuple[int, int]:
        """(1-based last line shown, total lines) for the status bar's indicator."""
        return self.pane.position()


class Prompt(urwid.Edit):
    """The multi-line prompt editor. Keys with a meaning beyond typing are taken by the
    root widget from the keymap first; what reaches here is plain editing."""

    def __init__(self, caption_glyph: str = ""):
        # no caption: the PromptBox draws the glyph beside the text (lines align under it)
        super().__init__(multiline=True, allow_tab=False)

    def insert_newline(self) -> None:
        self.insert_text("\n")

    def on_first_line(self) -> bool:
        return "\n" not in self.edit_text[: self.edit_pos]

    def on_last_line(self) -> bool:
        return "\n" not in self.edit_text[self.edit_pos :]

    def line_start(self) -> None:
        self.set_edit_pos(self.edit_text.rfind("\n", 0, self.edit_pos) + 1)

    def line_end(self) -> None:
        end = self.edit_text.find("\n", self.edit_pos)
        self.set_edit_pos(len(self.edit_text) if end < 0 else end)

    def kill_line(self) -> None:
        start = self.edit_text.rfind("\n", 0, self.edit_pos) + 1
        text = self.edit_text
        self.set_edit_text(text[:start] + text[self.edit_pos :])
        self.set_edit_pos(start)

    def delete_forward(self) -> None:
        pos = self.edit_pos
        text = self.edit_text
        if pos < len(text):
            self.set_edit_text(text[:pos] + text[pos + 1 :])
            self.set_edit_pos(pos)

    def replace(self, text: str) -> None:
        self.set_edit_text(text)
        self.set_edit_pos(len(text))


class PromptBox(urwid.WidgetWrap):
    """The prompt with its glyph on the first row and every line under its text (an
    Edit's caption would let the lines below start at column 0); at most `cap` rows of
    it, the window following the cursor."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, prompt: Prompt, glyph: str):
        super().__init__(prompt)
        self.prompt = prompt
        self.cap = 8
        self.glyph = glyph + " "
        self.gutter = calc_width(self.glyph, 0, len(self.glyph))

    def _inner(self, size) -> tuple[int]:
        return (max(1, size[0] - self.gutter),)

    def rows(self, size, focus=False):
        return min(self.cap, self.prompt.rows(self._inner(size), focus))

    def _top(self, rows: int, cursor_row: int) -> int:
        return max(0, min(cursor_row - self.cap + 1, rows - self.cap)) if rows > self.cap else 0

    def render(self, size, focus=False):
        inner = self._inner(size)
        canvas = self.prompt.render(inner, focus)
        rows = canvas.rows()
        cursor = canvas.cursor
        top = self._top(rows, cursor[1] if cursor else rows - 1)
        if top or rows > self.cap:
            canvas = urwid.CompositeCanvas(canvas)
            canvas.trim(top, min(self.cap, rows - top))
        shown = canvas.rows()
        width = size[0] - inner[0]
        first = urwid.Text([("prompt_prefix", self.glyph)] if top == 0 else "").render((width,))
        gutter = [(first, None, False)]
        if shown > 1:
            gutter.append((urwid.SolidCanvas(" ", width, shown - 1), None, False))
        return urwid.CanvasJoin([(urwid.CanvasCombine(gutter), None, False, width),
                                 (canvas, None, True, inner[0])])

    def get_cursor_coords(self, size):
        inner = self._inner(size)
        coords = self.prompt.get_cursor_coords(inner)
        if coords is None:
            return None
        x, y = coords
        return (x + size[0] - inner[0], y - self._top(self.prompt.rows(inner, True), y))

    def keypress(self, size, key):
        return self.prompt.keypress(self._inner(size), key)


class StatusBar(urwid.Text):
    """One row: spinner and phase, model, context tokens, position, hints."""

    def __init__(self):
        super().__init__("", wrap="ellipsis")


@functools.lru_cache(maxsize=1)
def _man_command() -> str:
    """`man dashfloat`, or the checkout's page when no installed one would be found."""
    from dashfloat.manpage import man_command

    return man_command()


def help_widget(ascii: bool) -> urwid.Widget:
    """The F1 overlay, generated from the keymap and slash-command tables."""
    rows: list[urwid.Widget] = [urwid.Text(("help_title", "DashFloat keys"), align="center"), urwid.Divider()]
    for title, entries in keymap.help_rows():
        rows.append(urwid.Text(("help_title", title)))
        for keys, text in entries:
            rows.append(
                urwid.Columns(
                    [(18, urwid.Text(("help_key", keys))), urwid.Text(text)],
                    dividechars=1,
                )
            )
        rows.append(urwid.Divider())
    rows.append(urwid.Text(("help_title", "Commands (at the start of a prompt)")))
    usages = commands.help_rows()
    width = max(18, *(len(u) for u, _ in usages))
    for usage, text in usages:
        rows.append(urwid.Columns([(width, urwid.Text(("help_key", usage))), urwid.Text(text)], dividechars=1))
    rows.append(urwid.Divider())
    rows.append(urwid.Text(("dim", f"{_man_command()} for options and configuration. Esc closes."),
                           align="center"))
    body = urwid.ListBox(urwid.SimpleFocusListWalker(rows))
    if ascii:
        box = urwid.LineBox(
            body, title="Help", tlcorner="+", tline="-", lline="|", trcorner="+", blcorner="+", rline="|",
            bline="-", brcorner="+",
        )
    else:
        box = urwid.LineBox(body, title="Help")
    return urwid.AttrMap(box, "help")
