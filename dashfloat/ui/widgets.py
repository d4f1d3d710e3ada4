"""urwid widgets: the transcript list, the prompt editor, the status bar and the help.

They only ever run on the main thread. The transcript is a ListBox of one Text per line
(never one giant Text), so a long session costs the same per frame as a short one.
"""

from __future__ import annotations

import urwid

from dashfloat.ui import keymap
from dashfloat.ui.theme import Glyphs
from dashfloat.ui.transcript import Entry, Line


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


def make_row(line: Line) -> urwid.Widget:
    """One transcript row. A leading all-blank segment becomes the row's indent, so a long
    line wraps under it instead of at column 0."""
    if line and line[0][1] and not line[0][1].strip() and len(line) > 1:
        return IndentText(_markup(line[1:]), len(line[0][1]))
    return urwid.Text(_markup(line))


def _markup(line: Line):
    segs = [(a, t) if a else t for a, t in line if t]
    if not segs:
        return ""
    if len(segs) == 1 and isinstance(segs[0], str):
        return segs[0]
    return segs


class TranscriptBox(urwid.ListBox):
    """A ListBox that remembers its last size (for paging from the root widget)."""

    last_size: tuple[int, int] = (80, 20)

    def render(self, size, focus=False):
        self.last_size = size
        return super().render(size, focus)


class TranscriptView:
    """Keeps the ListBox rows in step with the model's entries.

    Each entry owns a contiguous range of rows. Only entries whose version moved are
    re-drawn, and only the rows that differ get `set_text`, so streaming into the last
    entry touches the last few rows, never the whole list.
    """

    def __init__(self, glyphs: Glyphs):
        self.glyphs = glyphs
        self.show_reasoning = False
        self.walker = urwid.SimpleFocusListWalker([])
        self.listbox = TranscriptBox(self.walker)
        self.following = True
        self._entries: list[Entry] = []
        self._starts: list[int] = []
        self._lines: list[list[Line]] = []
        self._versions: list[int] = []
        self._index: dict[int, int] = {}  # id(entry) -> its position in _entries

    # ---- model -> rows ----------------------------------------------------------------
    def sync(self, entries: list[Entry], touched: set[int] | None = None) -> bool:
        """Bring rows up to date with `entries`; True if anything changed.

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
        if changed and self.following:
            self.scroll_to_end()
        return changed

    def _entry_rows(self, entry: Entry, first: bool) -> list[Line]:
        lines = entry.lines(self.glyphs, self.show_reasoning)
        if lines and not first:
            lines = [[]] + lines  # one blank row between entries
        return lines

    def _append(self, entry: Entry) -> None:
        lines = self._entry_rows(entry, first=len(self.walker) == 0)
        self._index[id(entry)] = len(self._entries)
        self._entries.append(entry)
        self._starts.append(len(self.walker))
        self._lines.append(lines)
        self._versions.append(entry.version)
        self.walker.extend(make_row(line) for line in lines)

    def _redraw(self, i: int) -> None:
        entry = self._entries[i]
        new = self._entry_rows(entry, first=self._starts[i] == 0)
        old = self._lines[i]
        start = self._starts[i]
        common = min(len(old), len(new))
        for j in range(common):
            if old[j] is not new[j] and old[j] != new[j]:
                self.walker[start + j] = make_row(new[j])
        delta = len(new) - len(old)
        if delta > 0:
            pos = start + len(old)
            self.walker[pos:pos] = [make_row(line) for line in new[len(old) :]]
        elif delta < 0:
            del self.walker[start + len(new) : start + len(old)]
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
        del self.walker[:]
        for entry in entries:
            self._append(entry)
        if self.following:
            self.scroll_to_end()

    # ---- scrolling --------------------------------------------------------------------
    def scroll_to_end(self) -> None:
        self.following = True
        if len(self.walker):
            self.listbox.set_focus(len(self.walker) - 1)
            self.listbox.set_focus_valign("bottom")

    def scroll(self, command: str) -> None:
        if not len(self.walker):
            return
        size = self.listbox.last_size
        if command == "scroll_top":
            self.listbox.set_focus(0)
            self.listbox.set_focus_valign("top")
        elif command == "scroll_bottom":
            self.scroll_to_end()
            return
        else:
            key = {
                "scroll_page_up": "page up",
                "scroll_page_down": "page down",
                "scroll_line_up": "up",
                "scroll_line_down": "down",
            }[command]
            self._scroll_key(size, key)
        self.following = self._at_end(size)

    def _scroll_key(self, size, key: str) -> None:
        """Scroll by rows, not by focusable items (every row here is plain text)."""
        step = max(1, size[1] - 1) if key.startswith("page") else 1
        if key in ("page up", "up"):
            self.listbox.set_focus(max(0, self._edge_position(size, top=True) - step))
            self.listbox.set_focus_valign("top")
        else:
            self.listbox.set_focus(min(len(self.walker) - 1, self._edge_position(size, top=False) + step))
            self.listbox.set_focus_valign("bottom")

    def _edge_position(self, size, top: bool) -> int:
        """The walker position of the first (top=True) or last row on screen."""
        middle, above, below = self.listbox.calculate_visible(size)
        _trim, fill = above if top else below
        return fill[-1][1] if fill else middle[2]

    def _at_end(self, size) -> bool:
        try:
            return self._edge_position(size, top=False) >= len(self.walker) - 1
        except Exception:
            return True

    def position(self) -> tuple[int, int]:
        """(1-based bottom row shown, total rows) for the status bar's indicator."""
        total = len(self.walker)
        if not total:
            return (0, 0)
        try:
            pos = self._edge_position(self.listbox.last_size, top=False)
        except Exception:
            pos = self.listbox.focus_position
        return (pos + 1, total)


class Prompt(urwid.Edit):
    """The multi-line prompt editor. Keys with a meaning beyond typing are taken by the
    root widget from the keymap first; what reaches here is plain editing."""

    def __init__(self, caption_glyph: str):
        super().__init__(caption=[("prompt_prefix", caption_glyph + " ")], multiline=True, allow_tab=False)

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


class StatusBar(urwid.Text):
    """One row: spinner and phase, model, context tokens, position, hints."""

    def __init__(self):
        super().__init__("", wrap="ellipsis")


def help_widget(ascii: bool) -> urwid.Widget:
    """The F1 overlay, generated from the keymap table."""
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
    rows.append(urwid.Text(("dim", "man dashfloat for options and configuration. Esc closes."), align="center"))
    body = urwid.ListBox(urwid.SimpleFocusListWalker(rows))
    if ascii:
        box = urwid.LineBox(
            body, title="Help", tlcorner="+", tline="-", lline="|", trcorner="+", blcorner="+", rline="|",
            bline="-", brcorner="+",
        )
    else:
        box = urwid.LineBox(body, title="Help")
    return urwid.AttrMap(box, "help")
