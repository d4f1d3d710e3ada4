"""The terminal screen: urwid's raw screen, plus what DashFloat needs from it.

1. Ctrl-C, Ctrl-Z, Ctrl-S/Q and Ctrl-\\ arrive as keys: the tty's signal characters are
   freed after every start (also after a resume from Ctrl-Z); urwid's stop() restores the
   settings it saved at the first start.

2. A frame costs what changed on it, not what urwid would repaint. urwid diffs frames by
   whole rows, repeats full SGR sequences and knows no scroll regions: following a
   streaming answer would re-send every transcript row for each new line (~24 terminal
   bytes per byte of answer). `draw_screen` takes the rendered rows once, then:

   * scrolls: it finds the shift k that lines up the previous frame's transcript rows
     with the new ones and, if that spares rows, scrolls the region by k line feeds at
     its bottom margin (DECSTBM margins, set once and kept; VT100-safe);
   * writes every changed row itself (render_rows, pure): from the column where the row
     changed, with the shortest SGR step, a line feed instead of a cursor address to the
     next row, an erase only over old content. The last row is ours only while its last
     cell is blank (the prompt as it is typed: no echo waits for urwid's whole-frame pass);
   * leaves urwid's own draw for frames whose last row fills its last cell (the
     bottom-right-cell trick stays urwid's) or that use a charset, after updating urwid's
     record of the screen so it re-sends nothing already there.

   Correct for any frame: the record always matches the terminal (tests/widget and the
   Ctrl-L comparison in tests/e2e/test_drawing.py check it cell by cell, colours too).

3. Frames are self-clocked (ui/frameclock.py): a frame carries a cursor-position question
   (in the same write), the answer is taken out of the input here (never a key), and
   DashLoop holds the next frame while the question is outstanding. Before the screen
   stops, an outstanding answer is waited for (briefly) so that it does not land in the
   shell's input after DashFloat has left.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import select
import signal
import time

import urwid
from urwid.display import _raw_display_base
from urwid.display.common import UNPRINTABLE_C1_TRANS_TABLE, UNPRINTABLE_TRANS_TABLE
from urwid.str_util import calc_width

from dashfloat.ui.frameclock import QUERY, QUERY_OFF_ROW_1, FrameClock

# urwid's own table (colour depth -> AttrSpec slot), as its draw_screen uses it
_ATTRSPEC_INDEX_BY_COLORS = _raw_display_base._ATTRSPEC_INDEX_BY_COLORS
log = logging.getLogger("dashfloat.ui.screen")

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
            col += _width(n[2])
            continue
        if o[0] != n[0] or o[1] != n[1]:
            return col, new[i:]
        a, b = o[2], n[2]
        k, m = 0, min(len(a), len(b))
        while k < m and a[k] == b[k]:
            k += 1
        while k and (b[k - 1] >= 0x80 or (k < len(b) and b[k] >= 0x80)):
            k -= 1
        return col + _width(b[:k]), [(n[0], n[1], b[k:])] + new[i + 1 :]
    return col, new[len(old) :]


def _sgr_groups(seq: str) -> list[str] | None:
    """The parameter groups of an SGR `ESC[0;...m` after its reset (38/48 keep their
    arguments: `38;5;N`, `38;2;R;G;B`), or None for any other shape."""
    if not (seq.startswith("\x1b[0;") and seq.endswith("m")) or "\x1b" in seq[1:]:
        return None
    params = seq[4:-1].split(";")
    groups, i = [], 0
    while i < len(params):
        width = {"5": 3, "2": 5}.get(params[i + 1], 1) if params[i] in ("38", "48") and i + 1 < len(params) else 1
        groups.append(";".join(params[i : i + width]))
        i += width
    return groups


def compact_sgr(seq: str) -> str:
    """urwid's SGR for an attribute, without what its leading reset already implies.

    urwid writes every attribute as a full `ESC[0;<fg>;<style>;<bg>m`, default colours
    included (`ESC[0;39;49m`). After the `0` reset, `39` and `49` say nothing: dropping
    them makes the commonest sequences 4-8 bytes shorter, a third of a streamed answer's
    terminal bytes; the plain reset is `ESC[m` (an empty parameter is 0, VT100 on), the
    commonest of all. Anything not of that shape is returned as it is.
    """
    groups = _sgr_groups(seq)
    if groups is None:
        return RESET if seq == "\x1b[0m" else seq
    kept = [g for g in groups if g not in ("39", "49")]
    return "\x1b[" + ";".join(["0", *kept]) + "m" if kept else RESET


def _colour(group: str) -> str:
    """"fg" or "bg" for a colour group, "" for a style (bold, underline...)."""
    if group.startswith("38") or (len(group) == 2 and group[0] in "39"):
        return "fg"
    if group.startswith("48") or (len(group) == 2 and group[0] == "4") or (len(group) == 3 and group[:2] == "10"):
        return "bg"
    return ""


@functools.lru_cache(maxsize=4096)
def sgr_step(state: str, seq: str) -> str:
    """The shortest SGR that takes the terminal from rendition `state` to `seq` (both
    in compact_sgr form). Between renditions of colours only the reset is not needed
    (`ESC[93m` for `ESC[0;93m`, with `39`/`49` when a colour returns to the default);
    with a style (bold, underline...) in force, the full sequence resets it. From the
    default rendition nothing needs resetting at all."""
    old = [] if state == RESET else _sgr_groups(state)
    new = _sgr_groups(seq)
    if seq == RESET or old is None or new is None:
        return seq
    kinds_old = [_colour(g) for g in old]
    kinds_new = [_colour(g) for g in new]
    if not (all(kinds_old) and (all(kinds_new) or not old)):  # from RESET, styles add freely
        return seq
    params = list(new)
    for kind, default in (("fg", "39"), ("bg", "49")):
        if kind in kinds_old and kind not in kinds_new:
            params.append(default)
    step = "\x1b[" + ";".join(params) + "m"
    return step if len(step) < len(seq) else seq


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
        self.fallbacks = 0  # frames whose incremental drawing failed (a bug: the tests count them)
        self.early_input = b""  # bytes typed before the screen started (ui/early.py)
        self._last_canvas = None
        self._pending: tuple[str, str] | None = None  # (output, SGR state) for the next frame
        self._pending_rows = 0  # the rows that output writes (a scroll counts as one)
        self._all_ours = False  # _before_draw wrote every changed row it was given
        self._reset_known = False  # the terminal is in the default rendition (our last write)
        self._margins = None  # (bottom margin, screen size) while scrolling margins are set
        self._cursor_at = None  # where the last frame left the (shown) cursor
        self._frame_written = False  # urwid wrote a frame in the draw under way
        self.newline = "\r\n"  # to the start of the next row; "\n" when the tty adds the CR
        self.utf8 = urwid.util.get_encoding() == "utf-8"
        self.clock = FrameClock()
        self.monotonic = time.monotonic  # the clock's time source (tests pass their own)
        self._query_at = None  # where the frame being drawn leaves the cursor ((): unknown; None: ask nothing)

    def _attrspec_to_escape(self, a) -> str:
        return compact_sgr(super()._attrspec_to_escape(a))

    def _start(self, *args, **kwargs):
        super()._start(*args, **kwargs)
        self._margins = self._cursor_at = None
        self.clock.forget()  # answers to questions of an earlier start were flushed with its input
        self._reset_known = False
        fd = self._input_fileno()
        if fd is not None and os.isatty(fd):
            self.tty_signal_keys("undefined", "undefined", "undefined", "undefined", "undefined", fd)
        self.newline = _newline(self._term_output_file)
        if self.early_input:  # keys typed on the early frame, replayed as if typed now
            self._partial_codes = list(self.early_input) + self._partial_codes
            self.early_input = b""
            self._wake_input_loop()

    def suspend(self) -> None:
        """Ctrl-Z: the terminal restored, then the whole process group stopped, as the
        terminal's own Ctrl-Z would stop it. urwid's suspend stops this process alone, so a
        parent that waits for it in the same job (the single executable's bootloader, a
        wrapper script) runs on, the shell never sees the job stop and never takes the
        terminal back. On `fg` the screen starts again and is drawn whole, at its size now."""
        if not self.started:
            os.killpg(os.getpgrp(), signal.SIGTSTP)
            return
        self.stop()  # restores the terminal and the default SIGTSTP disposition
        try:
            os.killpg(os.getpgrp(), signal.SIGTSTP)
        finally:
            self.start()
            # the size may have changed meanwhile: a resize, as urwid's own suspend records
            # it, and the loop woken to handle it. urwid draws nothing while a resize is
            # unhandled, and an idle loop wakes only for input: without the wake-up the
            # screen stayed blank after `fg` until a key was pressed
            self._sigwinch_handler()
            self.clear()

    def _stop(self, *args, **kwargs):
        self.reset_margins()
        self._await_answer()
        return super()._stop(*args, **kwargs)

    def _await_answer(self) -> None:
        """Read (and drop) input until the outstanding question's answer came, for at most
        the clock's wait and 1 s: else it would arrive after the screen stopped and be typed
        into the shell (`^[[24;3R`). Keys read meanwhile are dropped, as urwid's stop drops
        pending input anyway. Only for a terminal that has answered before."""
        clock = self.clock
        if clock.sent_at is None or not clock.answers:
            return
        fd = self._input_fileno()
        if fd is None:
            return
        deadline = self.monotonic() + min(1.0, clock.timeout())
        data = bytes(self._partial_codes)
        self._partial_codes = []
        try:
            while not _ANSWER.search(data):
                left = deadline - self.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    break
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data = data[-32:] + chunk
        except OSError:
            pass
        clock.forget()

    def _apply_terminal_reports(self, decoded_codes):
        """urwid's query replies, then ours: every cursor-position report is taken out of
        the input (the answer to the frame clock's question, or a late one): never a key.
        A report for row 1 decodes as a function key (ESC[1;5R is Ctrl-F3): asked from row 2
        on it cannot be one, unless a resize moved the cursor meanwhile, so while an answer
        may still come an F3 with modifiers is one too (F3 is bound to nothing)."""
        keys = super()._apply_terminal_reports(decoded_codes)
        expected = self.clock.expects_answer(self.monotonic())
        if not any(_is_report(k, expected) for k in keys):
            return keys
        out = []
        for k in keys:
            if isinstance(k, tuple) and k and k[0] == "cursor position":
                self.clock.answer(self.monotonic(), (k[1], k[2]))
            elif not _is_report(k, expected):
                out.append(k)
            else:  # an F3 look-alike is dropped without answering: its position is not known
                self.clock.dropped()
        return out

    def frame_wait(self) -> float:
        """Seconds the next frame must wait for the terminal (0: draw now); DashLoop asks."""
        if not self.started:
            return 0.0
        wait = self.clock.wait(self.monotonic())
        if wait:
            self.clock.held += 1
        return wait

    def _question(self) -> str:
        """The cursor-position question for the frame being written ("" when the clock asks
        none). Asked from the frame's cursor row unless that is row 1 (or unknown)."""
        at, self._query_at = self._query_at, None
        if at is None:
            return ""
        if at and at[1] >= 1:
            return QUERY if self.clock.ask(self.monotonic(), at) else ""
        return QUERY_OFF_ROW_1 if self.clock.ask(self.monotonic(), (0, 1)) else ""

    def reset_margins(self) -> None:
        """Full-screen scrolling margins again (before anything else uses the terminal)."""
        if self._margins is not None:
            self._margins = None
            try:
                self.write("\x1b[r")
                self.flush()
            except OSError:
                pass

    def draw_screen(self, size, canvas):
        if self.screen_buf and canvas is self._last_canvas:
            return None  # nothing changed (urwid's own check, kept for the wrapper below)
        self._last_canvas = canvas
        frame = canvas
        # where the frame leaves the cursor: its question is asked there (none on a 1-row screen)
        self._query_at = (tuple(canvas.cursor) if canvas.cursor is not None else ()) if size[1] >= 2 else None
        try:
            rows = list(canvas.content())  # once: our passes and urwid's diff share it
            frame = _Frame(rows, canvas.cursor)
            self._before_draw(size, rows)
            if self._pending is not None and self._all_ours and self.screen_buf and rows[-1] == self.screen_buf[-1]:
                return self._draw_alone(frame)  # every changed row is ours: no urwid pass
        except OSError:  # the terminal itself failed (a hangup: EIO): no repaint can help
            raise
        except Exception:  # an optimisation must never cost a frame: urwid redraws it all
            log.exception("incremental drawing failed; repainting the whole screen")
            self.fallbacks += 1
            self._pending = None
            self.screen_buf = None
        self._frame_written = False
        try:
            return super().draw_screen(size, frame)
        finally:
            self._query_at = None
            self._flush_pending()
            # urwid's frame ends with the cursor put where the canvas wants it; anything
            # else (no frame, ours alone, a failure) leaves it somewhere unknown
            self._cursor_at = frame.cursor if self._frame_written and self.screen_buf else None

    def _draw_alone(self, frame: _Frame) -> None:
        """Finish a frame whose changed rows _before_draw has all written: the cursor,
        and urwid's record of what is on screen (as its own draw_screen would leave it)."""
        pre, state = self._pending
        self._pending = None
        # the cursor stays where it was (the prompt): saved and restored (DECSC/DECRC,
        # 4 bytes) instead of addressed again (7-8 bytes, every frame). It is not hidden
        # meanwhile (12 bytes a frame): the frame is one write, which a terminal takes whole
        # before it paints; a frame that moves it elsewhere hides it as urwid's do
        back = frame.cursor is not None and frame.cursor == self._cursor_at
        out = [] if back else [HIDE]
        if not self._reset_known:
            out.append(RESET)
        if back:
            out.append(SAVE)
        out.append(pre)
        if state != RESET:
            out.append(RESET)
        if back:
            out.append(RESTORE)  # restores the default rendition saved with it
        elif frame.cursor is not None:
            x, y = frame.cursor
            out.append(f"\x1b[{y + 1};{x + 1}H{SHOW}")
            self._cy = y
        if self.modes.synchronized_output and self._pending_rows > 1:
            # more than one row: painted at once where the terminal confirmed it can
            # (as urwid's frames are), never half a frame in a slow link's first packet
            out.insert(0, SYNC_BEGIN)
            out.append(SYNC_END)
        out.append(self._question())
        self.write("".join(out))
        self.flush()
        self._reset_known = True  # our frames end in the default rendition
        self._cursor_at = frame.cursor
        self.screen_buf = frame.content()
        self._screen_buf_canvas = frame

    def _before_draw(self, size, rows: list) -> None:
        self._all_ours = False
        if not self.screen_buf:
            # a full repaint (first frame, resize, Ctrl-L, resume): margins set for another
            # size or layout are reset first (DECSTBM homes the cursor; urwid's frame
            # addresses every row absolutely)
            if self._margins is not None:
                self._margins = None
                self._pending = ("\x1b[r", RESET)
            return
        if self._resized or self._rows_used is not None:
            return
        maxcol, maxrow = size
        old, drawn = self.screen_buf, self._drawn_rows
        if len(old) != maxrow or not drawn or len(drawn) != maxrow or len(rows) != maxrow:
            return
        out: list[str] = []
        region = min(int(self.scroll_region_rows()), maxrow - 1) if self.scroll_region_rows else 0
        k = best_shift(old, rows, region) if region >= 4 and self.scroll_optimisation else 0
        if k:
            # margins = the transcript rows; a line feed at the bottom margin scrolls them up
            # and brings in blank rows (default colours: the SGR was reset just before).
            # The margins stay set between frames (urwid addresses every row absolutely);
            # they are set again after any change of size and reset when the screen stops.
            if self._margins != (region, size):
                out.append(f"\x1b[1;{region}r")
                self._margins = (region, size)
            blank = [(None, None, b" " * maxcol)]
            drawn_blank = [(self._attr_to_escape(None), None, b" " * maxcol)]
            old[:] = old[k:region] + [blank] * k + old[region:]
            drawn[:] = drawn[k:region] + [drawn_blank] * k + drawn[region:]
            self.scrolled_rows += k
        state = RESET
        done: list[int] = []
        if k:
            # like `cat`: the rows that come in at the bottom are written there, each after a
            # line feed on the bottom margin, which scrolls the region by one (no move to the
            # margin, no line feeds of their own, no move back up to write them)
            run = [(y, old[y], rows[y]) for y in range(region - 1 - k, region)]
            text = render_scrolling_rows(run, k, self._attr_to_escape, self.newline) if self.utf8 else None
            if text is not None:
                out.append(text)
                done = [y for y, _o, _n in run]
            else:  # urwid writes the rows (a charset, not UTF-8): the scroll alone first
                out.append(f"\x1b[{region}H" + "\n" * k)
        if self.utf8:
            # every changed row; the last only while nothing is written in its last cell
            # (a character there is urwid's: its bottom-right-cell trick)
            ours = set(done)
            last = maxrow - 1 if _ends_blank(rows[-1], maxcol, self._attr_to_escape) else maxrow - 2
            changes = [(y, old[y], rows[y]) for y in range(last + 1) if y not in ours and old[y] != rows[y]]
            bottom = self._margins[0] - 1 if self._margins is not None else None
            text, state, drawn_now = render_rows(changes, self._attr_to_escape, self.newline, bottom)
            out.append(text)
            self._all_ours = len(drawn_now) == len(changes)
            for y in done + drawn_now:
                old[y] = rows[y]
                drawn[y] = [(self._attr_to_escape(a), cs, run) for a, cs, run in rows[y]]
        if out:
            self._pending = ("".join(out), state)
            self._pending_rows = (1 if k else 0) + len(done) + (len(drawn_now) if self.utf8 else 0)

    def write(self, data: str) -> None:
        """urwid's frame, with what _before_draw prepared put inside it: one write, one
        hidden-cursor span (inside urwid's synchronized-update bracket when the terminal
        has one), and without the cursor-home urwid sends before its first move."""
        self._reset_known = False  # urwid's output may leave any rendition in force
        sync = SYNC_BEGIN if data.startswith(SYNC_BEGIN) else ""
        body = data[len(sync) :]
        self._frame_written = body.startswith(HIDE)
        pending = self._pending
        if pending is not None and self._frame_written:
            self._pending = None
            pre, state = pending
            rest = body[len(HIDE) :]
            if state == RESET:
                rest = rest.removeprefix(RESET)  # urwid resets what is reset already
            data = sync + HIDE + RESET + pre + _REDUNDANT_HOME.sub(r"\1", rest, count=1)
        if self._frame_written and self._query_at is not None:
            data += self._question()  # in the frame's own write: no extra packet on an ssh link
        super().write(data)

    def _flush_pending(self) -> None:
        if self._pending is not None:  # urwid wrote no frame (a resize): ours goes alone
            pre, _state = self._pending
            self._pending = None
            super().write(HIDE + RESET + pre + RESET)
            self.flush()


_F3 = frozenset(" ".join((*mods, "f3")) for mods in (
    (), ("shift",), ("meta",), ("ctrl",), ("shift", "meta"), ("shift", "ctrl"), ("meta", "ctrl"),
    ("shift", "meta", "ctrl")))


def _is_report(key, outstanding: bool) -> bool:
    """A cursor-position report (or, while an answer may come, one for row 1 that urwid
    decoded as F3 with modifiers)."""
    if isinstance(key, tuple):
        return bool(key) and key[0] == "cursor position"
    return outstanding and key in _F3


def _newline(out) -> str:
    """"\n" if the tty turns LF into CR LF (OPOST and ONLCR: one byte less per row on
    the wire), else "\r\n"."""
    try:
        import termios

        oflag = termios.tcgetattr(out.fileno())[1]
        return "\n" if oflag & termios.OPOST and oflag & termios.ONLCR else "\r\n"
    except (OSError, ValueError, AttributeError, ImportError):
        return "\r\n"


HIDE = "\x1b[?25l"
SHOW = "\x1b[?25h"
SAVE, RESTORE = "\x1b7", "\x1b8"
SYNC_BEGIN = "\x1b[?2026h"  # urwid brackets its frames so when the terminal confirmed it
SYNC_END = "\x1b[?2026l"
RESET = "\x1b[m"  # the default rendition (no parameter: 0)
_ANSWER = re.compile(rb"\x1b\[\d+;\d+R")  # a cursor-position report
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


def _ends_blank(row: list, cols: int, escape_of) -> bool:
    """Whether the row's last cell (of `cols`) is a space in the default rendition:
    writing the row leaves it alone, so the cursor never reaches the bottom-right corner."""
    return _trim_blank_end(row, escape_of)[1] < cols


def render_rows(changes: list, escape_of, newline: str = "\r\n",
                bottom_margin: int | None = None) -> tuple[str, str, list[int]]:
    """Terminal output that turns rows `old` into rows `new`, for (y, old, new) in
    ascending y. Pure, given `escape_of(attr) -> SGR string`.

    Returns (output, the SGR state it leaves, the rows it drew). It starts from the
    default rendition (RESET), writes a row from the first column where it changed
    (row_divergence), goes to the next row with `newline` (plus the row's blank indent)
    instead of a cursor address when that is shorter, erases to the end of the row only
    when the old row had something there, and changes the SGR only as much as needed
    (sgr_step). `newline` is what moves to the start of the next row: "\n" where the tty
    adds the CR itself (ONLCR), else "\r\n". `bottom_margin` is the row of the scrolling
    region's bottom margin while one is set: a line feed there would scroll the region, so
    the row below it is always addressed. Rows with a charset (DEC graphics) are left to
    urwid.
    """
    out: list[str] = []
    state = RESET
    drawn: list[int] = []
    cy = -2  # the row the cursor is on after the last write (-2: unknown)
    for y, old, new in changes:
        if any(cs is not None for _a, cs, _r in new):
            cy = -2
            continue
        col, rest, new_end, old_end = _row_change(old, new, escape_of)
        drawn.append(y)
        if not rest and old_end <= new_end:
            continue  # nothing visible changed (runs split differently, trailing blanks)
        move, skip = _move(y, col), _skip_to(col)
        if (cy == y - 1 and cy != bottom_margin and len(newline) + len(skip) < len(move)
                and _blank_start(new, col, escape_of)):
            if col and state != RESET:
                out.append(RESET)
                state = RESET
            out.append(newline + skip)
        else:
            out.append(move)
        state = _write_runs(out, rest, col, old_end, state, escape_of)
        state = _erase_rest(out, state, old_end, new_end)
        cy = y
    return "".join(out), state, drawn


def render_scrolling_rows(run: list, k: int, escape_of, newline: str = "\r\n") -> str | None:
    """Terminal output that scrolls a region up by `k` rows the way `cat` does, writing the
    rows that come in as it goes. Pure, given `escape_of(attr) -> SGR string`.

    `run` is the k + 1 rows (y, old, new) at the bottom of the region, in the coordinates
    after the scroll: first the row that was the bottom one (its `old` as it was there),
    then the k rows that come in blank. Its first row is written where it is before the
    scroll, on the bottom margin (`y + k`); each of the others after one line feed, which on
    the bottom margin scrolls the region by one row and leaves the cursor there. The
    output starts and ends in the default rendition (a line feed that scrolls fills the
    new row with the current background on most terminals). None when a row has a
    charset (urwid writes those).
    """
    if any(cs is not None for _y, _old, new in run for _a, cs, _r in new):
        return None
    out: list[str] = []
    state = RESET
    for i, (y, old, new) in enumerate(run):
        col, rest, new_end, old_end = _row_change(old, new, escape_of)
        if i == 0:
            out.append(_move(y + k, col if rest or old_end > new_end else 0))
        else:
            if state != RESET:
                out.append(RESET)
                state = RESET
            if not rest:
                out.append(newline)
                continue
            out.append(newline + _skip_to(col))
        state = _write_runs(out, rest, col, old_end if i == 0 else 0, state, escape_of)
        state = _erase_rest(out, state, old_end, new_end)
    if state != RESET:
        out.append(RESET)
    return "".join(out)


def _row_change(old: list, new: list, escape_of) -> tuple[int, list, int, int]:
    """(column where `new` departs from `old`, its runs from there without trailing blanks,
    the column where new's last non-blank cell ends, the same for old)."""
    col, rest = row_divergence(old, new)
    rest, new_end = _trim_blank_end(rest, escape_of)
    _old_runs, old_end = _trim_blank_end(old, escape_of)
    return col, rest, col + new_end, old_end


def _erase_rest(out: list, state: str, old_end: int, new_end: int) -> str:
    """Erase to the end of the row (in the default rendition) when the old row had
    something beyond the new one's end; the SGR state after."""
    if old_end <= new_end:
        return state
    if state != RESET:
        out.append(RESET)
    out.append("\x1b[K")
    return RESET


_GAP = re.compile(rb" {5,}")  # a run of spaces a cursor move (4+ bytes) is shorter than


def _write_runs(out: list, rest: list, col: int, blank_from: int, state: str, escape_of) -> str:
    """Append the text of `rest` (runs from column `col`) with the SGR steps it needs; the
    SGR state it leaves. Cells from column `blank_from` on are blank in the default
    rendition on the terminal already: a run of spaces there, in that rendition, is skipped
    with a cursor move (CUF) instead of written (a code block's indent, a table's padding)."""
    for a, _cs, run in rest:
        if not run:
            continue
        esc = escape_of(a)
        width = len(run) if run.isascii() else _width(run)
        pieces = [run]
        if esc == RESET and col + width > blank_from and width == len(run) and b"     " in run:
            pieces, pos = [], 0
            for m in _GAP.finditer(run):
                if col + m.start() < blank_from:
                    continue
                pieces += [run[pos : m.start()], f"\x1b[{m.end() - m.start()}C"]
                pos = m.end()
            pieces.append(run[pos:])
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)  # a move over blank cells: no rendition needed
                continue
            if not piece:
                continue
            if esc != state:
                out.append(sgr_step(state, esc))
                state = esc
            text = piece.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
            out.append(text if text.isascii() else text.translate(UNPRINTABLE_C1_TRANS_TABLE))
        col += width
    return state


def _skip_to(col: int) -> str:
    """From the start of a row whose first `col` cells are blank already, to column `col`:
    spaces, or a cursor move (CHA) where that is shorter."""
    move = f"\x1b[{col + 1}G"
    return " " * col if col <= len(move) else move


def _move(y: int, col: int) -> str:
    """The cursor address of row `y`, column `col` (0-based): `ESC[5H` for column 0."""
    return f"\x1b[{y + 1}H" if col == 0 else f"\x1b[{y + 1};{col + 1}H"


def _blank_start(row: list, col: int, escape_of) -> bool:
    """Whether the row's first `col` cells are spaces in the default rendition."""
    if not col:
        return True
    a, _cs, run = row[0]
    return escape_of(a) == RESET and run[:col] == b" " * col


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
