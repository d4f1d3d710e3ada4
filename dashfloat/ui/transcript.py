"""The transcript model: entries, and the pure functions that turn them into lines.

No urwid here. An entry changes as messages arrive (at once, per token); the view asks an
entry for its lines only when it flushes (every 50-100 ms while streaming). Markdown is
rendered once per COMPLETED block and cached; the unfinished tail is rendered the same
way, as far as markdown.stable_prefix says it will stay (so its rows are final when they
first reach the terminal), and an open code block grows by its new lines only.
"""

from __future__ import annotations

import bisect
import collections.abc
import itertools
import re
from dataclasses import dataclass, field

from dashfloat.textsafe import visible
from dashfloat.ui import markdown
from dashfloat.ui.longtext import LongText
from dashfloat.ui.theme import Glyphs

# A line is a list or a tuple of (attr, text) segments (an answer keeps tuples: the garbage
# collector stops tracking them, see AssistantEntry._decorate). A finished line of a big
# block (BIG_BLOCK: the lines of a huge answer, 50,000 of them) is kept in a smaller form
# that segments() turns back into segments: its bare text (a str: plain, under INDENT and
# its own leading blanks), or (lead, attr, text) for (lead, (attr, text)). A container per
# line and a tuple per segment cost ~128 bytes beside the text; a long transcript is
# mostly these lines.
Line = list[tuple[str, str]] | tuple[tuple[str, str], ...]

INDENT = "  "
_BLANK: Line = ()  # the blank line between blocks: one shared object (never changed)
BIG_BLOCK = 16 << 10  # characters: a bigger block is shown line by line, plain (Markdown of 16 KiB: ~25 ms)
BIG_PIECE = 32 << 10  # characters of a big block's new lines made into lines at once
FRAME_BUDGET = 64 << 10  # characters of a big block's new lines one lines() call takes (~5-10 ms)
MARKDOWN_BUDGET = 8 << 10  # characters of completed blocks one lines() call renders (~20 ms)
# characters one lines() call scans for block boundaries (at least; to the end of a line):
# text that came all at once (400 KB between two frames of a fast server) is scanned a
# window a call, not whole (~250 ns a character: 100 ms for 400 KB, held from a key)
SCAN_WINDOW = BIG_BLOCK + MARKDOWN_BUDGET
TABLE_HELD_ROWS = 40  # source lines of a streaming table held back (one pending line) before it shows them
# a blank line (spaces, tabs, CR only): at the start, or after a newline. Two patterns, not one
# with a look-behind, which tries every position (7 ms for a 64 KiB part; this: 0.16 ms)
_BLANK_AT_START = re.compile(r"[ \t\r]*\n")
_BLANK_AFTER_NEWLINE = re.compile(r"\n[ \t\r]*\n")


def blank_line(src: str) -> tuple[int, int] | None:
    """(start, end) of the first blank line of `src` (which starts at a line's start)."""
    m = _BLANK_AT_START.match(src)
    if m is not None:
        return 0, m.end()
    m = _BLANK_AFTER_NEWLINE.search(src)
    return (m.start() + 1, m.end()) if m is not None else None


@dataclass
class Entry:
    """Base: a transcript entry knows how to draw itself as lines."""

    kind: str = "entry"
    version: int = 0  # bumps on every change; the view re-draws entries whose version moved
    # (start, count): lines()[start:start + count] are the very objects the call before
    # returned at those positions (a long answer's finished lines): the view need not
    # compare them
    kept: tuple = (0, 0)

    def lines(self, glyphs: Glyphs, show_reasoning: bool) -> list[Line]:
        """A new list each call (the view keeps it and puts the blank row above it in)."""
        raise NotImplementedError


@dataclass
class UserEntry(Entry):
    text: str = ""
    kind: str = "user"

    def lines(self, glyphs, show_reasoning):
        out: list[Line] = []
        for i, raw in enumerate(self.text.split("\n")):
            prefix = (glyphs.user + " ") if i == 0 else INDENT
            out.append([("user_prefix", prefix), ("user", visible(raw))])
        return out


@dataclass
class SystemEntry(Entry):
    level: str = "info"
    text: str = ""
    kind: str = "system"

    def lines(self, glyphs, show_reasoning):
        attr = "system_" + self.level
        out: list[Line] = []
        for i, raw in enumerate(self.text.split("\n")):
            if i == 0:  # the dot hangs: a long first line wraps under its text
                out.append([(attr, glyphs.system + " "), (attr, visible(raw))])
                continue
            body = visible(raw)
            rest = body.lstrip(" ")
            # the indent as its own blank segment: a long line wraps under it (widgets._split_indent)
            out.append([(attr, INDENT + body[: len(body) - len(rest)]), (attr, rest)] if rest else [(attr, INDENT)])
        return out


_END_MARKERS = {
    "cancelled": "[cancelled: the answer above is partial]",
    "error": "[stopped by an error: the answer above is incomplete]",
}
_EMPTY_MARKERS = {"cancelled": "[cancelled before the answer began]"}


@dataclass
class AssistantEntry(Entry):
    """An answer, streaming or finished, with its reasoning shown apart."""

    kind: str = "assistant"
    # the answer's text as it came, in pieces (a 4 MiB answer is not copied whole when a
    # frame's few tokens come: a big block reads just what it has not taken yet)
    _src: LongText = field(default_factory=LongText)
    reasoning: list[str] = field(default_factory=list)
    status: str = "streaming"  # streaming | done | cancelled | error | empty
    ascii: bool = False
    # cache of rendered completed blocks
    _done_upto: int = 0
    _done_lines: list = field(default_factory=list)
    settled: bool = False  # no text for a tick: nothing is held back
    # cache of the rendered streaming tail
    _tail_src: str = ""
    _tail_base: int = -1
    _tail_lines: list = field(default_factory=list)
    _tail_fence: tuple | None = None  # (run, language) while the tail is one open code block
    # the offset of a streaming table shown as its source lines (the stream went quiet, or
    # it grew past TABLE_HELD_ROWS); any other streaming table is one pending_table line
    _raw_table: int = -1
    _tail_held: bool = False  # the tail shows a table held back (pending_table)
    # a block too big to render as Markdown (BIG_BLOCK): "plain" (its lines as they are,
    # up to a blank line) or "fence" (an open code block, unhighlighted, up to its
    # closing fence), rendered line by line as they arrive and kept as they are
    _big: str = ""
    _big_fence: tuple | None = None
    _big_lines: list = field(default_factory=list)
    _big_pos: int = 0  # offset of the first source line not in _big_lines
    # (source length, visible text) of the unfinished line: a LongText, so a line that
    # grows by a frame's bytes costs those bytes, not its length (it is a str once complete)
    _big_partial: tuple = (0, "")
    # lines() took FRAME_BUDGET of a big block's new lines and more wait: the front end asks
    # again soon (App._catch_up) and keys are answered between the parts
    behind: bool = False
    _kept_done: tuple = (0, 0)  # (lines above the body, finished lines) at the last lines()
    _stable: int = 0  # leading lines of the body that only grow (finished blocks, big lines)
    # the answer ended and all of it is in _done_lines: its source is let go (the agent
    # keeps the text for the conversation; the screen needs only the lines)
    _finished: bool = False

    def add_content(self, text: str) -> None:
        self._src = self._src + text
        self.settled = False
        self.version += 1

    def settle(self) -> bool:
        """The stream went quiet: show what stable_prefix holds back (the word being
        typed, an unclosed span) until more text comes. True if that changed anything."""
        if self.settled or self.status != "streaming":
            return False
        self.settled = True
        self.version += 1
        return True

    def add_reasoning(self, text: str) -> None:
        self.reasoning.append(text)
        self.version += 1

    def shown_mark(self) -> tuple:
        """What the rows of this answer show, in a few numbers: a frame that leaves them as
        they were showed none of the text that came (the word being typed is held back)."""
        return (len(self._done_lines), self._tail_base, len(self._tail_src), len(self._big_lines),
                self._big_partial[0], bool(self.reasoning), self.status)

    def end(self, status: str) -> None:
        self.status = status
        self.version += 1

    @property
    def text(self) -> str:
        return str(self._src)

    def _markdown_lines(self, glyphs: Glyphs) -> list[Line]:
        """Decorated body lines, as LineChain parts. Completed blocks are rendered and
        decorated once and kept (the same list objects every call, so the view skips them
        by identity); the tail is rendered again only when what it shows grew."""
        done = self._done_lines
        if self._finished:
            self._stable = len(done)
            return [done]
        self._complete_blocks(glyphs)
        done = self._done_lines
        self._stable = len(done)
        if self._big:
            return self._big_view(glyphs)
        if self.behind:  # blocks wait to be rendered: the tail after them, once they are
            return [done]
        shown = self._shown_tail()
        if not shown or shown.isspace():
            return [done]
        if shown != self._tail_src or self._tail_base != len(done) or (
                self.settled and self._tail_held):  # quiet: a held table shows its rows
            self._render_tail(shown, glyphs)
        if not done:
            return [self._tail_lines]
        return [done, _BLANK_PART, self._tail_lines]

    def _complete_blocks(self, glyphs: Glyphs) -> None:
        """Render the blocks completed since the last call into _done_lines; a block
        that grows past BIG_BLOCK is taken line by line instead (_big_advance). At most
        MARKDOWN_BUDGET of completed blocks a call, scanned in a SCAN_WINDOW (`behind`: the
        rest at the next)."""
        self.behind = False
        while True:
            if self._big:
                self._big_advance(glyphs)
                if self._big:
                    return
            # the done part ends on a block boundary, so only the rest needs scanning, and
            # of that a window at a time: `text` is that window (offsets from `base`), read
            # from the pieces (the whole answer joined would cost its size every frame)
            src, base = self._src, self._done_upto
            left = len(src) - base
            stop = len(src)
            if left > SCAN_WINDOW:
                stop = src.find("\n", base + SCAN_WINDOW) + 1 or stop
            text = src[base:stop]
            end = len(text)
            upto = markdown.completed_prefix(text, end=end)
            big = self._big_block(text, upto, end)
            if big >= 0:  # a block over BIG_BLOCK, open or completed: line by line
                self._render_done(text, big, glyphs, base)
                self._enter_big(text, big, glyphs, base)
                continue
            if upto > MARKDOWN_BUDGET:  # many blocks came at once: a frame's worth now
                cut = pos = 0
                while pos <= MARKDOWN_BUDGET:
                    cut = pos
                    pos = markdown.completed_prefix(text, start=pos, first=True, end=end)
                    if pos <= cut or pos > upto:
                        break
                cut = cut or pos  # at least one block
                if cut < upto:
                    self._render_done(text, cut, glyphs, base)
                    self.behind = True
                    return
            if end < left:  # the window's blocks now, the text after it at the next call
                self._render_done(text, upto, glyphs, base)
                self.behind = True
                return
            if self.status != "streaming":
                upto = end
            self._render_done(text, upto, glyphs, base)
            return

    @staticmethod
    def _big_block(text: str, upto: int, end: int) -> int:
        """Where the first block over BIG_BLOCK starts in text[:end] (the completed
        blocks up to `upto`, then the open rest), or -1: a block is taken line by line
        whether it arrived a little at a time or at once, so the screen does not depend
        on how the answer was cut into frames (nor on the scan's window: an open block
        over BIG_BLOCK inside it is over BIG_BLOCK in the whole text too)."""
        if end - upto > BIG_BLOCK:
            limit = upto  # the open block is big; a completed one before it may be too
        elif upto > BIG_BLOCK:
            limit = upto
        else:
            return -1
        pos = 0
        while pos < limit:
            stop = markdown.completed_prefix(text, start=pos, first=True, end=limit)
            if stop <= pos or stop > limit:
                break
            if stop - pos > BIG_BLOCK:
                return pos
            pos = stop
        return upto if end - upto > BIG_BLOCK else -1

    def _render_done(self, text: str, upto: int, glyphs: Glyphs, base: int) -> None:
        """Render the completed blocks text[:upto] (text is the answer from `base`)."""
        if upto <= 0:
            return
        block_lines = markdown.render(text[:upto], ascii=self.ascii)
        if block_lines and self._done_lines:
            self._done_lines.append(_BLANK)
        for line in block_lines:
            self._done_lines.append(self._decorate(line, glyphs))
        self._done_upto = base + upto

    # ---- a block too big for Markdown ----------------------------------------------------
    def _enter_big(self, text: str, at: int, glyphs: Glyphs, base: int) -> None:
        """The block at `at` is over BIG_BLOCK and still open: from now on it is shown line
        by line, plain (a code block: unhighlighted), and finished as it was shown, so a
        frame's work depends on the text that arrived, not on the size of the block.
        (`text` is the answer from `base`, at least to the end of the block's first line.)"""
        tail = text[at:]
        head = tail[: tail.rfind("\n") + 1]
        fence = markdown.open_fence(head.partition("\n")[0] + "\n") if head else None
        self._big, self._big_fence, self._big_lines = ("fence" if fence else "plain"), fence, []
        self._big_pos, self._big_partial = base + at, (0, "")
        self._tail_src, self._tail_base, self._tail_lines, self._tail_fence = "", -1, [], None
        if fence is not None:
            self._big_pos = base + at + len(head.partition("\n")[0]) + 1
            if fence[1]:
                self._big_add([[("md_code_lang", visible(fence[1]))]], glyphs)

    def _big_add(self, lines: list, glyphs: Glyphs) -> None:
        """Append `lines` (Lines, or the bare text of plain ones) to the big block, each in
        its smallest form (see Line)."""
        first = not self._done_lines and not self._big_lines
        out = self._big_lines
        for line in lines:
            if type(line) is str:
                if not first and line.strip(" "):
                    out.append(line)  # no list, no tuple: 50,000 lines of them
                    continue
                line = [("", line)]
            out.append(_flat(self._decorate(line, glyphs, first=first)))
            first = False

    def _big_source(self, src: str) -> list:
        """The lines of complete source lines `src` (each ends with a newline): code
        lines, or the text of plain ones (_big_add)."""
        if self._big == "fence":
            return markdown.code_lines(src, "")
        return visible(src[:-1].replace("\r\n", "\n")).split("\n")

    def _big_advance(self, glyphs: Glyphs) -> None:
        """Take the complete lines that arrived into the big block; finish it at its end
        (a blank line, the closing fence, the end of the answer)."""
        text, pos = self._src, self._big_pos
        # complete lines: text[pos:stop]; the partial has no newline, so the search starts
        # after it (a line of megabytes costs what came since the last call, not its length)
        stop = text.rfind("\n", pos + self._big_partial[0]) + 1
        self.behind = False
        if stop - pos > FRAME_BUDGET:  # a frame takes so much (its key waits for no more)
            cut = text.rfind("\n", pos, pos + FRAME_BUDGET) + 1
            if cut > pos:
                stop, self.behind = cut, True
            elif self._long_line(text, pos, glyphs):
                return
        end = -1  # where the block ends, when it does
        if stop > pos:
            src = text[pos:stop]
            if self._big == "fence":
                if markdown.closes_fence(src, self._big_fence[0]):
                    k = 0
                    for line in src.split("\n"):
                        if markdown.closes_fence(line, self._big_fence[0]):
                            end = pos + k + len(line) + 1
                            break
                        k += len(line) + 1
                    src = src[:k]
            else:
                found = blank_line(src)
                if found is not None:
                    end = pos + found[1]
                    src = src[: found[0]]
            start = 0
            while start < len(src):  # a piece at a time: its lines' temporaries go before the next
                cut = src.find("\n", start + BIG_PIECE) + 1 or len(src)
                self._big_add(self._big_source(src[start:cut]), glyphs)
                start = cut
            self._big_pos = pos = stop if end < 0 else end
            self._big_partial = (0, "")
        if end < 0 and (self.status == "streaming" or self.behind):
            return  # (behind: more lines wait; the next lines() takes the next part)
        if end < 0 and not self._partial_upto(text, pos, len(text)):
            self.behind = True  # the last line is made visible a frame's budget a call
            return
        self.behind = False
        if end < 0:  # the answer ended inside the block: its last line too
            if text[pos:].strip():
                self._big_add([self._partial_line()], glyphs)
            end = len(text)
        if self._done_lines and self._big_lines:
            self._done_lines.append(_BLANK)
        self._done_lines.extend(self._big_lines)
        self._done_upto = end
        self._big, self._big_lines, self._big_partial = "", [], (0, "")

    def _partial_upto(self, text: LongText, pos: int, upto: int) -> bool:
        """Make more of text[pos:upto] (part of one line) visible into _big_partial, at
        most FRAME_BUDGET characters a call (visible() of a megabyte that came at once is
        ~40 ms, held from a key typed then): True once it covers upto."""
        n, shown = self._big_partial
        if n < upto - pos:
            take = min(upto - pos, n + FRAME_BUDGET)
            self._big_partial = (take, (shown or LongText()) + visible(text[pos + n : pos + take]))
        return self._big_partial[0] >= upto - pos

    def _partial_line(self) -> list | str:
        """The line the partial is, as _big_source makes a complete line (it has been
        made visible already: a plain line is its text, a code line its one segment)."""
        shown = str(self._big_partial[1])
        return markdown.visible_code_line(shown) if self._big == "fence" else shown

    def _long_line(self, text: LongText, pos: int, glyphs: Glyphs) -> bool:
        """The big block's next complete line is longer than a frame takes: make it
        visible a budget a call (as the unfinished line is), then take it: True if this
        call did that part (`behind`: the rest at the next call). False for a line that
        could end the block (all blanks, or all fence characters): taken the usual way."""
        can_end = " \t\r" if self._big == "plain" else " " + self._big_fence[0][0]
        if not text[pos : pos + FRAME_BUDGET].strip(can_end):
            return False
        self.behind = True
        nl = text.find("\n", pos + self._big_partial[0])  # (the partial has none)
        if self._partial_upto(text, pos, nl):
            self._big_add([self._partial_line()], glyphs)
            self._big_pos, self._big_partial = nl + 1, (0, "")
        return True

    def _big_view(self, glyphs: Glyphs) -> list[list[Line]]:
        """The lines of a big block in progress: its complete lines, and the unfinished
        one as far as it came (made visible a piece at a time, at most FRAME_BUDGET a
        call: a megabyte on one line costs per frame what arrived, up to that)."""
        text, pos = self._src, self._big_pos
        # behind: complete lines are still to come, and the partial is empty, or it is
        # the start of a long one of them, made visible so far (_long_line)
        if not self.behind and not self._partial_upto(text, pos, len(text)):
            self.behind = True  # the rest of what came at the next call
        shown = self._big_partial[1]
        lines = self._big_lines
        partial: list[Line] = []
        if shown and not shown.isspace():  # (strip() would copy a megabyte line)
            first = not self._done_lines and not lines
            body = [markdown.visible_code_line(shown)] if self._big == "fence" else [[("", shown)]]
            partial = [self._decorate(line, glyphs, first=first) for line in body]
        if not self._done_lines:
            self._stable = len(lines)
            return [lines, partial]
        self._stable = len(self._done_lines) + 1 + len(lines)
        return [self._done_lines, _BLANK_PART, lines, partial]

    def _shown_tail(self) -> str:
        """What of the unfinished tail to show: stable_prefix's part (all of it once the
        stream is quiet), and never less than is on screen already."""
        tail = self._src[self._done_upto :]
        shown = tail if self.settled else markdown.stable_prefix(tail)
        prev = self._tail_src
        if len(prev) > len(shown) and self._tail_base == len(self._done_lines) and tail.startswith(prev):
            shown = prev  # a word shown while the stream was quiet is not taken back
        return shown

    def _render_tail(self, shown: str, glyphs: Glyphs) -> None:
        """The tail renders like the block it will become, so its rows stay as they are
        when the block completes."""
        prev, fence = self._tail_src, self._tail_fence
        grew = self._tail_base == len(self._done_lines) and prev and shown.startswith(prev)
        self._tail_src, self._tail_base = shown, len(self._done_lines)
        first = not self._done_lines
        added = shown[len(prev) :]
        if grew and fence is not None and added.endswith("\n") and not markdown.closes_fence(added, fence[0]):
            # an open code block grew by whole lines: render just those (the block is
            # rendered whole, context and all, when it completes; its \r\n read as \n)
            lines = self._tail_lines
            self._tail_lines = lines + [
                self._decorate(line, glyphs, first=first and not lines and i == 0)
                for i, line in enumerate(markdown.code_lines(markdown.parsed_newlines(added), fence[1]))]
            return
        self._tail_fence = markdown.open_fence(shown)
        self._tail_held = False
        table = markdown.streaming_table(shown)
        if table < 0:
            body = markdown.render(shown, ascii=self.ascii)
        else:
            body = markdown.render(shown[:table], ascii=self.ascii)
            rows, at = shown[table:].strip("\n"), self._done_upto + table
            if self._raw_table != at and (self.settled or rows.count("\n") >= TABLE_HELD_ROWS):
                self._raw_table = at  # shown as its source from now on: never taken back
            self._tail_held = self._raw_table != at
            body += [[]] * bool(body) + (markdown.pending_table(self.ascii) if self._tail_held
                                         else markdown.plain_lines(rows))
        self._tail_lines = [self._decorate(line, glyphs, first=first and i == 0) for i, line in enumerate(body)]

    def _decorate(self, line: Line, glyphs: Glyphs, first: bool | None = None) -> Line:
        """The line as the answer keeps it: a tuple of tuples of strings, which the garbage
        collector stops tracking, so a full collection does not walk a long day's
        transcript (a list per line kept 100,000 lines in every one: a stall that grew
        with the transcript)."""
        if first is None:
            first = not self._done_lines
        if not line:
            return _BLANK
        if first:
            return (("assistant_prefix", glyphs.assistant + " "), *line)
        return _indented(line)

    def _finish(self) -> None:
        """The answer ended: once every block of it is in _done_lines, keep just those
        (memory grows with what is kept: a 4 MiB answer is not held as text beside its
        lines). Reasoning stays: Ctrl-T shows it again."""
        if self._big or self._done_upto < len(self._src):
            return
        self._finished = True
        self._src = LongText()
        self._tail_src, self._tail_lines, self._tail_fence, self._big_partial = "", [], None, (0, "")

    def _reasoning_lines(self, glyphs: Glyphs, show: bool) -> list[Line]:
        if not self.reasoning:
            return []
        text = "".join(self.reasoning).strip("\n")
        self.reasoning[:] = [text]
        raw_lines = text.split("\n") if text else []
        n = len(raw_lines)
        active = self.status == "streaming" and not self._src
        verb = "thinking" if active else "thought"
        if not show:
            head = f"{glyphs.collapsed} {verb}{glyphs.ellipsis if active else ''} ({n} line{'s' if n != 1 else ''}, Ctrl-T shows)"
            return [[("reasoning_head", head)]]
        out: list[Line] = [[("reasoning_head", f"{glyphs.expanded} {verb} (Ctrl-T hides)")]]
        out.extend([("reasoning", INDENT + visible(r))] for r in raw_lines)
        return out

    def lines(self, glyphs, show_reasoning):
        """A LineChain: the body's lists are not copied (a block of 200,000 lines would
        cost its length every frame); its finished lists only grow, and the chain keeps
        how many of each are its own."""
        out: list[Line] = self._reasoning_lines(glyphs, show_reasoning)
        before = self._kept_done
        body = self._markdown_lines(glyphs)
        # the finished lines of the call before (those of a big block in progress too)
        # are still there, the same objects, at the same place when the reasoning above
        # them kept its length: they only ever grow
        n = self._stable
        self.kept = (len(out), min(before[1], n)) if before[0] == len(out) else (0, 0)
        self._kept_done = (len(out), n)
        if self.status != "streaming" and not self._finished:
            self._finish()
        if not any(body) and not self.reasoning:  # (waiting for the first token: the status bar says so)
            marker = _EMPTY_MARKERS.get(self.status)  # nothing above to call partial
            return [[("marker", marker)]] if marker else []
        marker = _END_MARKERS.get(self.status)
        return LineChain([out, *body, [[("marker", INDENT + marker)]] if marker else []])


_BLANK_PART = (_BLANK,)  # the blank line between blocks, as a LineChain part


class LineChain(collections.abc.Sequence):
    """Lines that are lists one after another, not copied into one: an answer's finished
    lines (a list that only grows) and what follows them. The length of each list is
    taken when the chain is made: lines appended to it later are not this chain's (the
    view compares the chain it has with the next)."""

    __slots__ = ("_parts", "_ends")

    def __init__(self, parts) -> None:
        self._parts: list = []
        self._ends: list[int] = []
        total = 0
        for part in parts:
            if part:
                self._parts.append(part)
                total += len(part)
                self._ends.append(total)

    def with_head(self, line: Line) -> LineChain:
        """This chain after one more line."""
        out = LineChain(())
        out._parts = [(line,), *self._parts]
        out._ends = [1, *(e + 1 for e in self._ends)]
        return out

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, k):
        n = len(self)
        if isinstance(k, slice):
            a, b, step = k.indices(n)
            if step != 1:
                return list(self)[k]
            out: list = []
            i = bisect.bisect_right(self._ends, a)
            while a < b and i < len(self._parts):
                start = self._ends[i - 1] if i else 0
                out.extend(self._parts[i][a - start : min(b, self._ends[i]) - start])
                a = self._ends[i]
                i += 1
            return out
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(k)
        i = bisect.bisect_right(self._ends, k)
        return self._parts[i][k - (self._ends[i - 1] if i else 0)]

    def __iter__(self):
        start = 0
        for part, end in zip(self._parts, self._ends, strict=True):
            yield from itertools.islice(part, end - start)
            start = end

    def __eq__(self, other) -> bool:
        if not isinstance(other, collections.abc.Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LineChain({list(self)!r})"


def segments(line) -> Line:
    """The (attr, text) segments of a line in any of its forms (see Line)."""
    kind = type(line)
    if kind is list:
        return line
    if kind is str:
        stripped = line.lstrip(" ")
        return [_lead(len(INDENT) + len(line) - len(stripped)), ("", stripped)]
    if len(line) == 3 and type(line[1]) is str:  # (lead, attr, text)
        lead, attr, text = line
        return [lead, (attr, text)]
    return line  # a tuple of segments


def _flat(line: Line):
    """[lead, (attr, text)] as (lead, attr, text) (segments() gives the list back)."""
    if len(line) == 2 and line[0] is _LEADS.get(len(line[0][1])):
        return (line[0], *line[1])
    return line


_LEADS: dict[int, tuple[str, str]] = {}


def _lead(width: int) -> tuple[str, str]:
    """The leading blank segment of `width` columns, one shared tuple per width (a long
    transcript holds one per line: 50,000 lines would otherwise hold 50,000 copies)."""
    seg = _LEADS.get(width)
    if seg is None:
        seg = _LEADS[width] = ("", " " * width)
    return seg


def _indented(line: Line) -> Line:
    """INDENT plus the line, with the line's own leading blanks merged into one leading
    blank segment (the view turns it into a padding: wrapped rows keep the indent), as a
    tuple (see AssistantEntry._decorate)."""
    first_attr, first_text = line[0]
    stripped = first_text.lstrip(" ")
    lead = _lead(len(INDENT) + len(first_text) - len(stripped))
    if not stripped:
        return (lead, *line[1:])
    return (lead, (first_attr, stripped) if stripped is not first_text else line[0], *line[1:])


_MARKS = re.compile("(\u27e8[^\u27e8\u27e9]*\u27e9)")  # a count in a command (tools/preview.py)


def _marked(attr: str, text: str) -> Line:
    """`text` in `attr`, with the counts a command preview puts between ⟨ ⟩ (⟨4,000
    spaces⟩) in the marker style: a literal ⟨ in a command is shown escaped, so only
    DashFloat's own counts look like this."""
    if "\u27e8" not in text:
        return [(attr, text)]
    return [("marker" if k % 2 else attr, part) for k, part in enumerate(_MARKS.split(text)) if part]


_DIFF_ATTRS = {"stat": "diff_header", "add": "diff_add", "del": "diff_del", "hunk": "diff_hunk", "header": "diff_header",
               "ctx": "tool_text", "marker": "marker", "command": "diff_add", "cwd": "tool_text"}
_STATUS_ATTRS = {"ok": "tool_ok", "rejected": "system_warn", "cancelled": "system_warn", "error": "system_error"}
def _preview_line(kind: str, text: str) -> Line:
    attr = _DIFF_ATTRS.get(kind, "tool_text")
    return _marked(attr, visible(text)) if kind == "command" else [(attr, visible(text))]


LIVE_LINES = 8  # lines of a running command's output shown live in its row
LIVE_LINE_CHARS = 500  # and at most this much of each (the end: where progress is)
UNUSED_CHARS = 60  # keys typed on a confirmation that decided nothing: the last this many are shown


def _live_line(text: str) -> str:
    """What a terminal would show of one output line: the text after the last carriage
    return (progress bars redraw with \\r), clipped to its last LIVE_LINE_CHARS."""
    text = text.rstrip("\r")
    if "\r" in text:
        text = text[text.rindex("\r") + 1 :]
    if len(text) > LIVE_LINE_CHARS:
        text = "…" + text[-LIVE_LINE_CHARS:]
    return text


@dataclass
class ToolEntry(Entry):
    """A tool call's row, its preview while it waits for a decision, and its outcome."""

    kind: str = "tool"
    id: str = ""
    name: str = ""
    summary: str = ""
    preview: list = field(default_factory=list)  # [(kind, text)]
    full: list | None = None  # the whole preview when `preview` is a window of it
    always: str = ""  # the session rule the a key would add
    always_asks: str = ""  # why this call always asks (built-in protection): a adds no rule
    asking_always: bool = False  # a first a was taken: the Apply line asks for the second
    ready: bool = False  # a y or n now would count (else the question says Wait, dimmed)
    unused: str = ""  # keys typed on the confirmation that decided nothing (shown, never used)
    confirm: str = ""  # "" | "pending" | "approved" | "rejected"
    live: list = field(default_factory=list)  # last lines of live output
    _live_partial: str = ""
    status: str = ""  # "" while unresolved, else ok | rejected | cancelled | error
    text: str = ""
    excerpt: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add_output(self, text: str) -> None:
        data = self._live_partial + text
        parts = data.split("\n")
        self._live_partial = _live_line(parts.pop())
        self.live.extend(_live_line(p) for p in parts[-LIVE_LINES:])
        del self.live[:-LIVE_LINES]
        self.version += 1

    def set_preview(self, lines: list, full: list | None = None, always: str = "", *,
                    always_asks: str = "") -> None:
        self.preview = [tuple(x) for x in lines]
        self.full = [tuple(x) for x in full] if full else None
        self.always = always
        self.always_asks = always_asks
        self.ready = self.asking_always = False
        self.unused = ""
        self.confirm = "pending"
        self.version += 1

    def set_ready(self, ready: bool) -> None:
        if ready != self.ready:
            self.ready = ready
            self.version += 1

    def ask_always(self, on: bool) -> None:
        if on != self.asking_always:
            self.asking_always = on
            self.version += 1

    def add_unused(self, text: str) -> None:
        """Keys that decided nothing: shown under the question (the last UNUSED_CHARS)."""
        self.unused = (self.unused + text)[-UNUSED_CHARS:]
        self.version += 1

    def view_lines(self) -> list[Line]:
        """The whole preview as markup lines, for the pager."""
        return [_preview_line(kind, text) for kind, text in (self.full or self.preview)]

    def _question(self, glyphs) -> list[Line]:
        dot = glyphs.system
        attr = "confirm" if self.ready else "tool_text"
        # the same width ready or not, so the rows below do not move when it changes
        ask = "Apply? " if self.ready else f"Wait{glyphs.ellipsis}  "
        out: list[Line] = []
        if self.full:
            out.append([("", INDENT), ("confirm", f"{glyphs.collapsed} v views all {len(self.full):,} lines "
                                                  f"of the preview before you decide")])
        if self.always_asks:  # next to the keys: why this one asks whatever the mode or rules
            out.append([("", INDENT), ("system_warn", f"{glyphs.collapsed} always asks: {visible(self.always_asks)}")])
        if self.asking_always and self.always_asks:
            out.append([("", INDENT), (attr, f"{glyphs.collapsed} {ask}a again approves it once (no session rule: "
                                             f"it always asks) {dot} y once {dot} n reject")])
        elif self.asking_always:
            rule = visible(self.always) if self.always else "this exact call"
            if len(rule) > 200:
                rule = rule[:199] + glyphs.ellipsis
            out.append([("", INDENT), (attr, f"{glyphs.collapsed} {ask}a again allows {rule} for the session "
                                             f"{dot} y once {dot} n reject")])
        else:
            out.append([("", INDENT), (attr, f"{glyphs.collapsed} {ask}y approve {dot} "
                                             f"n reject {dot} Esc reject and stop the turn")])
        if self.unused:
            out.append([("", INDENT), ("tool_text", f"{glyphs.expanded} typed here, not used: {visible(self.unused)}")])
        return out

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.version += 1

    def decided(self, decision: str) -> None:
        self.confirm = decision
        self.version += 1

    def set_result(self, status: str, text: str, excerpt: list, details: list | None = None) -> None:
        """`details` are lines for the screen only (the diff of a write no one was asked
        about); the model reads the result, not these."""
        self.status, self.text, self.excerpt = status, text, list(excerpt)
        if details and not self.preview:
            self.preview = [tuple(x) for x in details]
        self.live, self._live_partial = [], ""
        self.version += 1

    def lines(self, glyphs, show_reasoning):
        name, _, rest = visible(self.summary).partition(" ")  # the summary is escaped already
        # a command's summary escapes a literal ⟨ (preview.command_summary): its counts are marked
        rest_line = _marked("tool_text", rest) if self.name == "execute_command" else [("tool_text", rest)]
        out: list[Line] = [[("tool", glyphs.tool + " "), ("tool_name", name + " "), *rest_line]]
        for kind, text in self.preview:
            out.append([("", INDENT), *_preview_line(kind, text)])
        if self.confirm == "pending":
            out.extend(self._question(glyphs))
        elif self.confirm and self.preview:
            out.append([("", INDENT), ("tool_text", f"{glyphs.expanded} {self.confirm}")])
        out.extend([("", INDENT), ("tool_text", f"{glyphs.expanded} {visible(n)}")] for n in self.notes)
        if not self.status:
            tail = self.live + ([self._live_partial] if self._live_partial else [])
            out.extend([("", INDENT + "  "), ("tool_text", visible(line))] for line in tail[-LIVE_LINES:])
            return out
        out.append([("", INDENT), (_STATUS_ATTRS.get(self.status, "tool_text"), f"→ {visible(self.text)}")])
        out.extend([("", INDENT + "  "), ("tool_text", visible(line))] for line in self.excerpt)
        return out


class TranscriptModel:
    """The ordered entries of a session; the UI applies agent messages here first.

    `touched` collects the entries changed since the view last synced, so the view
    redraws exactly those (a result for the first of five calls included)."""

    def __init__(self, ascii: bool = False):
        self.entries: list[Entry] = []
        self.ascii = ascii
        self.current: AssistantEntry | None = None
        self.tools: dict[str, ToolEntry] = {}
        self.touched: set[int] = set()  # id() of changed entries

    def add(self, entry: Entry) -> Entry:
        self.entries.append(entry)
        return entry

    def touch(self, entry: Entry) -> None:
        self.touched.add(id(entry))

    def tool_call(self, info: dict) -> ToolEntry:
        entry = ToolEntry(id=str(info.get("id")), name=str(info.get("name") or "?"),
                          summary=str(info.get("summary") or info.get("name") or "?"))
        self.tools[entry.id] = entry
        self.add(entry)
        return entry

    def tool(self, call_id: str) -> ToolEntry:
        entry = self.tools.get(call_id)
        if entry is None:  # a message for a call we never saw: show it anyway
            entry = self.tool_call({"id": call_id, "name": "?", "summary": "?"})
        self.touch(entry)
        return entry

    def user(self, text: str) -> None:
        self.add(UserEntry(text=text))

    def system(self, level: str, text: str) -> None:
        self.add(SystemEntry(level=level, text=text))

    def start_assistant(self) -> AssistantEntry:
        self.current = AssistantEntry(ascii=self.ascii)
        self.add(self.current)
        return self.current

    def token(self, text: str) -> None:
        if self.current is None:
            return  # text outside an answer (it ended): never start a stray entry
        self.current.add_content(text)
        self.touch(self.current)

    def reasoning(self, text: str) -> None:
        if self.current is None:
            return
        self.current.add_reasoning(text)
        self.touch(self.current)

    def end_assistant(self, status: str) -> None:
        if self.current is not None:
            self.current.end(status)
            self.touch(self.current)
            self.current = None
