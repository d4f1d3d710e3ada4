"""Confirmation previews and output excerpts: pure functions from bytes/text to display lines.

No file I/O here: callers read the file (through the path policy) and pass the bytes in.
Every line returned has passed through `safe()` (dashfloat.textsafe.visible plus a few
extras), so escape sequences, bidi controls and zero-width characters in file contents,
commands or output are shown escaped: what the user reads is what runs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import NamedTuple

from dashfloat.textsafe import visible

PREVIEW_MAX_LINES = 50  # diff (or command) lines in the window shown in the transcript (ADR 0007)
EXCERPT_MAX_LINES = 30
DIFF_LINE_CHARS = 500  # a diff line longer than this shows its head and tail in the window (~7 rows at 80 columns)
FULL_LINE_CHARS = 20_000  # and in the whole preview (v on a confirmation)
FULL_MAX_LINES = 20_000  # the whole preview holds at most this many lines
FULL_MAX_CHARS = 1_000_000  # and this much text, then a marker: bounded for any file
BLANK_RUN = 3  # this many blank diff lines in a row, or more, show as one marker line

# Beyond textsafe.visible: line/paragraph separators (some renderers break lines on them),
# invisible fillers, invisible format controls (shorthand, musical) and Unicode tag
# characters (invisible "ASCII smuggling").
_EXTRA = re.compile(
    "[\n\u2028\u2029\u034f\u115f\u1160\u180e\u3164\ufff9-\ufffb\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _extra(match: re.Match) -> str:
    ch = match.group(0)
    if ch == "\n":
        return "\\n"
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _surrogate(match: re.Match) -> str:
    code = ord(match.group(0))
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape, e.g. os.fsdecode)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def safe(text: str) -> str:
    """One display line: `textsafe.visible(text)` with newlines and a few more invisible
    characters escaped too, and undecodable bytes (lone surrogates) shown as `\\xNN`."""
    text = visible(text)
    text = _EXTRA.sub(_extra, text)
    return _SURROGATE.sub(_surrogate, text)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [{len(text) - limit:,} more chars]"


def _clip_middle(text: str, limit: int) -> str:
    """A long line as its head and its tail around a count of what is between: the end of a
    line (where `; curl … | sh` hides after thousands of spaces) is always shown."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail]} … [{len(text) - limit:,} more chars] … {text[len(text) - tail :]}"


def human_size(nbytes: int) -> str:
    """`512 B`, `1.2 KiB`, `3.4 MiB`."""
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1024 * 1024:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes / (1024 * 1024):.1f} MiB"


# -- diffs -----------------------------------------------------------------------------


def _split(text: str) -> list[str]:
    """Lines with their '\\n' kept; only '\\n' ends a line (a '\\r' stays visible)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _decode(data: bytes) -> tuple[str, bool]:
    """Decode losslessly (surrogateescape keeps distinct bytes distinct for the diff)."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape"), False


def _shown(line: str, limit: int) -> str:
    """Display form of one diff line: undecodable bytes as U+FFFD (errors="replace")."""
    if _SURROGATE.search(line):
        line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return safe(_clip_middle(line, limit))


_NO_NEWLINE = "\\ No newline at end of file"
_KIND = {"+": "add", "-": "del", " ": "ctx"}


def _diff_events(old_lines: list[str], new_lines: list[str], rel: str, is_new: bool):
    """(kind, raw_text) diff lines, raw text unescaped and without its line end."""
    fromfile = "/dev/null" if is_new else f"a/{rel}"
    tofile = f"b/{rel}"
    diff = difflib.unified_diff(
        old_lines, new_lines, fromfile=fromfile, tofile=tofile, n=3, lineterm=""
    )
    for number, line in enumerate(diff):
        if number < 2:  # difflib starts with exactly one ---/+++ pair
            yield "header", line
        elif line.startswith("@@"):
            yield "hunk", line
        else:
            kind = _KIND.get(line[:1], "ctx")
            if line.endswith("\n"):
                yield kind, line[:-1]
            else:
                yield kind, line
                yield "marker", _NO_NEWLINE


def _is_blank(kind: str, raw: str) -> bool:
    return kind in ("add", "del", "ctx") and not raw[1:].strip(" \t")


def _blank_run(kind: str, run: list[str]) -> str:
    """The marker line that stands for a run of blank diff lines, prefix kept."""
    what = "blank lines" if all(len(r) == 1 for r in run) else "blank lines (spaces or tabs only)"
    return f"{run[0][:1]}… {len(run):,} {what} …"


def _collapsed(events):
    """The diff events with every run of BLANK_RUN or more blank lines of one kind turned
    into one ("marker", "+… 3,000 blank lines …") line: thousands of empty rows would hide
    what is around them, and the count says exactly what is there."""
    run_kind, run = "", []

    def flush():
        if len(run) >= BLANK_RUN:
            yield "marker", _blank_run(run_kind, run)
        else:
            yield from ((run_kind, r) for r in run)

    for kind, raw in events:
        if _is_blank(kind, raw):
            if run and kind != run_kind:
                yield from flush()
                run = []
            run_kind = kind
            run.append(raw)
            continue
        if run:
            yield from flush()
            run = []
        yield kind, raw
    if run:
        yield from flush()


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _stat_line(old: bytes | None, new: bytes, new_text: str, added: int, removed: int) -> tuple[str, str]:
    """The totals, first line of a diff preview: lines and bytes of what will be there."""
    lines = _line_count(new_text)
    if old is None:
        return ("stat", f"new file · {lines:,} line{'s' * (lines != 1)} · {human_size(len(new))}")
    return ("stat", f"+{added:,} -{removed:,} lines · {lines:,} line{'s' * (lines != 1)}, "
                    f"{human_size(len(new))} (was {human_size(len(old))})")


class _Full:
    """The whole preview, bounded: FULL_MAX_LINES lines and FULL_MAX_CHARS of text."""

    def __init__(self):
        self.lines: list[tuple[str, str]] = []
        self.chars = 0
        self.dropped = 0

    def full(self) -> bool:
        """No more lines fit (count the rest with `dropped`, and skip building them)."""
        return bool(self.dropped) or len(self.lines) >= FULL_MAX_LINES

    def add(self, kind: str, text: str) -> None:
        if self.full() or self.chars + len(text) > FULL_MAX_CHARS:
            self.dropped += 1
            return
        self.lines.append((kind, text))
        self.chars += len(text)

    def end(self, what: str) -> list[tuple[str, str]]:
        if self.dropped:
            self.lines.append(("marker", f"… {self.dropped:,} more {what} not shown: the whole view holds "
                                         f"{FULL_MAX_LINES:,} lines or {FULL_MAX_CHARS // 1_000_000} MB of text"))
        return self.lines


def diff_view(
    rel_path: str, old: bytes | None, new: bytes, *, max_lines: int = PREVIEW_MAX_LINES
) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None]:
    """The preview of `old` → `new` (old None: a new file, every line `+`), as (window, whole).

    window: a ("stat", totals) line, then at most `max_lines` lines of the unified diff
    (kinds header / hunk / add / del / ctx / marker), then a marker with the totals of
    what it leaves out; lines clipped at DIFF_LINE_CHARS. whole: every line of the same
    diff (clipped at FULL_LINE_CHARS, bounded by FULL_MAX_LINES and FULL_MAX_CHARS), or
    None when the window already shows all of it. In both, runs of blank lines are one
    marker line with their count. Binary content (a NUL on either side) gives one marker
    instead of a diff; invalid UTF-8 is shown with U+FFFD and noted by a leading marker.
    """
    if b"\x00" in new or (old is not None and b"\x00" in old):
        text = f"binary file: {len(new)} bytes"
        if old is not None:
            text += f" (was {len(old)} bytes)"
        return [("marker", text)], None
    notes: list[tuple[str, str]] = []
    new_text, new_ok = _decode(new)
    old_text, old_ok = ("", True) if old is None else _decode(old)
    if not old_ok:
        notes.append(("marker", "the current file is not valid UTF-8: undecodable bytes shown as \ufffd"))
    if not new_ok:
        notes.append(("marker", "the new content is not valid UTF-8: undecodable bytes shown as \ufffd"))
    if old is not None and old == new:
        return notes + [("marker", "no changes: the content is identical")], None
    if old is None and not new:
        return notes + [("header", safe(f"+++ b/{rel_path}")), ("marker", "new empty file (0 bytes)")], None
    counts = {"add": 0, "del": 0}

    def counted(events):
        for kind, raw in events:
            if kind in counts:
                counts[kind] += 1
            yield kind, raw

    window: list[tuple[str, str]] = list(notes)
    full = _Full()
    for kind, text in notes:
        full.add(kind, text)
    shown = hidden = 0
    clipped = False
    events = counted(_diff_events(_split(old_text), _split(new_text), rel_path, old is None))
    for kind, raw in _collapsed(events):
        text = None
        if shown < max_lines:
            clipped |= len(raw) > DIFF_LINE_CHARS
            text = _shown(raw, DIFF_LINE_CHARS)
            window.append((kind, text))
            shown += 1
        else:
            hidden += 1
        if full.full():
            full.dropped += 1
        else:
            full.add(kind, text if text is not None and len(raw) <= DIFF_LINE_CHARS else _shown(raw, FULL_LINE_CHARS))
    added, removed = counts["add"], counts["del"]
    if hidden:
        window.append(("marker", f"… {hidden:,} more diff lines ({added:,} added, {removed:,} removed in all)"))
    stat = _stat_line(old, new, new_text, added, removed)
    window.insert(0, stat)
    if not hidden and not clipped:
        return window, None
    return window, [stat, *full.end("diff lines")]


def diff_lines(
    rel_path: str, old: bytes | None, new: bytes, *, max_lines: int = PREVIEW_MAX_LINES
) -> list[tuple[str, str]]:
    """The window of `diff_view`: what the transcript shows under the call's row."""
    return diff_view(rel_path, old, new, max_lines=max_lines)[0]


# -- commands --------------------------------------------------------------------------
#
# What the user approves is what runs, so a command's preview must not let any part of it
# sit out of sight while y is offered: 4,000 spaces (or tabs, or U+3000, or U+2800) before
# `; touch x` wrap into a screen of nothing, and 3,000 blank lines push the end out of the
# window. The preview only *displays* differently (the command runs byte for byte):
#
# - a run of BLANK_RUN_CHARS or more spaces and tabs, or of invisible characters, and any
#   run that holds a character that looks blank but is not a space (U+00A0, U+2000-U+200A,
#   U+3000, U+2800, U+FFA0...), shows as a count between ⟨ ⟩: ⟨4,000 spaces⟩, ⟨2,000 ×
#   U+3000⟩ (a ⟨ or ⟩ in the command itself is shown escaped, so a marker cannot be faked);
# - BLANK_RUN or more blank lines in a row show as one ⟨2,999 blank lines⟩ line;
# - a line still longer than COMMAND_LINE_CHARS shows its head and its tail around a count;
# - more than `max_lines` lines show the first and the last half of the window around a
#   marker that says which lines are between, so the end is always in the window;
# - the totals line says what was counted or left out, and `v` shows every line.

BLANK_RUN_CHARS = 16  # this many spaces/tabs (or invisible characters) in a row show as a count
COMMAND_LINE_CHARS = DIFF_LINE_CHARS  # a longer command line shows its head and tail in the window
MARK_OPEN, MARK_CLOSE = "\u27e8", "\u27e9"  # ⟨ ⟩: only DashFloat's counts use them unescaped

# Characters that look like nothing on a terminal and that safe() does not escape.
_LOOK_BLANK = ("\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2800\uffa0\u17b4\u17b5")
# Invisible characters that safe() shows escaped (\u200b...): one by one they are visible,
# thousands of them are a wall of escapes.
_ESCAPED_BLANK = ("\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
                  "\u2066-\u206f\u3164\ufeff\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                  "\U000e0000-\U000e007f")
_BLANK_CHAR = re.compile(f"[ \t{_LOOK_BLANK}{_ESCAPED_BLANK}]")
_BLANK_RUN = re.compile(f"[ \t{_LOOK_BLANK}{_ESCAPED_BLANK}]+")
# where a run that collapses is: BLANK_RUN_CHARS blanks in a row, or one that looks blank
_COLLAPSIBLE = re.compile(f"[ \t{_ESCAPED_BLANK}]{{{BLANK_RUN_CHARS}}}|[{_LOOK_BLANK}]")
_NAMES = {" ": ("space", "spaces"), "\t": ("tab", "tabs")}


def _mark(text: str) -> str:
    return f"{MARK_OPEN}{text}{MARK_CLOSE}"


def _count_of(ch: str, n: int) -> str:
    if ch in _NAMES:
        return f"{n:,} {_NAMES[ch][n != 1]}"
    code = f"U+{ord(ch):04X}"
    return code if n == 1 else f"{n:,} \u00d7 {code}"


def run_marker(run: str) -> str:
    """The count a run of blank or invisible characters shows as: ⟨4,000 spaces⟩,
    ⟨U+3000⟩, ⟨2,000 × U+2800⟩, ⟨4,000 blanks: 2,000 spaces, 2,000 tabs⟩."""
    counts = {ch: run.count(ch) for ch in set(run)}  # str.count: a 4 MB run costs ~1 ms
    if len(counts) == 1:
        return _mark(_count_of(run[0], len(run)))
    kinds = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [_count_of(ch, n) for ch, n in kinds[:3]]
    if len(kinds) > 3:
        parts.append(f"{len(kinds) - 3} more kinds")
    return _mark(f"{len(run):,} blanks: {', '.join(parts)}")


def _text(raw: str) -> str:
    """Command text for display: safe(), and a literal ⟨ or ⟩ escaped (only counts use them)."""
    shown = safe(raw)
    if MARK_OPEN in shown or MARK_CLOSE in shown:
        shown = shown.replace(MARK_OPEN, "\\u27e8").replace(MARK_CLOSE, "\\u27e9")
    return shown


class _Piece(NamedTuple):
    """A part of a command: text (`mark` empty: shown with _text, may be cut) or a
    collapsed run (`mark`: its count, shown whole or not at all)."""

    raw: str
    mark: str = ""

    def shown(self) -> str:
        return self.mark or _text(self.raw)


def _pieces(line: str, budget: int, *, backwards: bool = False) -> Iterator[_Piece]:
    """A command line as text pieces and collapsed runs (the notes above say which runs),
    from its start, or from its end (backwards). Lazy and bounded: a text piece is cut
    after `budget` + 1 characters (whoever asks for at most `budget` characters of display
    stops there), so a 4 MB line costs only what is shown of it; a collapsed run is always
    whole (its count must be exact)."""
    text = line[::-1] if backwards else line
    at = 0  # where the current text piece starts
    while True:
        bound = min(len(text), at + budget + 1)
        m = _COLLAPSIBLE.search(text, at, bound)
        if m is None:
            if bound > at:
                seg = text[at:bound]
                yield _Piece(seg[::-1] if backwards else seg)
            return
        start = m.start()
        while start > at and _BLANK_CHAR.match(text, start - 1):
            start -= 1  # fewer than BLANK_RUN_CHARS: the search would have found more
        run = _BLANK_RUN.match(text, start).group(0)  # the whole run, past the bound
        if start > at:
            seg = text[at:start]
            yield _Piece(seg[::-1] if backwards else seg)
        yield _Piece(run, run_marker(run))
        at = start + len(run)


def _fit(raw: str, budget: int, *, tail: bool) -> str:
    """The longest prefix (tail: suffix) of `raw` whose display fits in `budget` characters."""
    lo, hi = 0, min(len(raw), budget)
    if len(_text(raw[len(raw) - hi:] if tail else raw[:hi])) <= budget:
        lo = hi  # no escapes: the usual case, one look
    while lo < hi:  # display is at least as long as the text: search the raw length
        mid = (lo + hi + 1) // 2
        piece = raw[len(raw) - mid:] if tail else raw[:mid]
        if len(_text(piece)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return raw[len(raw) - lo:] if tail else raw[:lo]


def _half(pieces: Iterable[_Piece], budget: int, *, tail: bool) -> tuple[str, int, bool, bool]:
    """(display, characters of the command it stands for, all of `pieces` fit, a count is
    in it) of the head of `pieces` (tail: they come from the end) within `budget` display
    characters; a count is never cut, text may be."""
    shown: list[str] = []
    covered = 0
    marked = False
    for piece in pieces:
        # a piece's display is at least as long as its text: a long one is never rendered whole
        text = piece.mark or ("" if len(piece.raw) > budget else _text(piece.raw))
        if len(piece.raw) > budget and not piece.mark or len(text) > budget:
            if not piece.mark:
                part = _fit(piece.raw, budget, tail=tail)
                shown.append(_text(part))
                covered += len(part)
            if tail:
                shown.reverse()
            return "".join(shown), covered, False, marked
        shown.append(text)
        budget -= len(text)
        covered += len(piece.raw)
        marked |= bool(piece.mark)
    if tail:
        shown.reverse()
    return "".join(shown), covered, True, marked


def _keep(pieces: Iterator[_Piece], into: list[_Piece]) -> Iterator[_Piece]:
    for piece in pieces:
        into.append(piece)
        yield piece


def _head_and_tail(forwards: Callable[[int], Iterator[_Piece]], backwards: Callable[[int], Iterator[_Piece]],
                   total: int, limit: int, *, short: bool = False) -> tuple[str, bool, bool]:
    """(display, clipped, a run shows as a count): all the pieces if they fit in `limit`
    characters, else the head and the tail around ⟨N more characters⟩ (N counts the
    command's own characters left out of `total`; short: a bare "…" for a one-row
    summary). `forwards(budget)` and `backwards(budget)` give the pieces from the start and
    from the end."""
    seen: list[_Piece] = []  # what the first look took: enough for the head too
    whole, _, fits, marked = _half(_keep(forwards(limit), seen), limit, tail=False)
    if fits:
        return whole, False, marked
    room = limit - (1 if short else len(_mark(f"{total:,} more characters")) + 2)
    head_room = room - room // 3 if short else room // 2  # a row: more head; a line: even
    head, head_raw, _, head_marked = _half(seen, head_room, tail=False)
    tail, tail_raw, _, tail_marked = _half(backwards(limit), room - head_room, tail=True)
    marked = head_marked or tail_marked
    if short:
        return f"{head}\u2026{tail}", True, marked
    return f"{head} {_mark(f'{total - head_raw - tail_raw:,} more characters')} {tail}", True, marked


def command_line(line: str, limit: int = COMMAND_LINE_CHARS) -> tuple[str, bool, bool]:
    """One command line for display: (text, clipped, a run shows as a count). Runs collapse
    into counts; a line still longer than `limit` shows its head and tail around a count of
    what is between."""
    return _head_and_tail(lambda budget: _pieces(line, budget),
                          lambda budget: _pieces(line, budget, backwards=True), len(line), limit)


def _is_blank_line(line: str) -> bool:
    return not line.strip(" \t")


def _blank_lines_marker(run: list[str]) -> str:
    n = len(run)
    what = "blank lines" if all(not r for r in run) else "blank lines (spaces or tabs only)"
    return _mark(f"{n:,} {what}")


def _groups(parts: list[str], *, backwards: bool = False) -> Iterator[tuple[int, int]]:
    """The display lines of a command's lines as [lo, hi) line ranges: one line each, but
    BLANK_RUN or more blank lines in a row are one; from the start or from the end."""
    n = len(parts)
    k = 0
    while k < n:
        j = k
        while j < n and _is_blank_line(parts[n - 1 - j if backwards else j]):
            j += 1
        if j - k < BLANK_RUN:
            j = k + 1
        yield (n - j, n - k) if backwards else (k, j)
        k = j


def _render(parts: list[str], group: tuple[int, int], limit: int) -> tuple[str, str, bool, bool]:
    """(kind, text, clipped, a run shows as a count) of one display line."""
    lo, hi = group
    if hi - lo > 1:
        return "marker", _blank_lines_marker(parts[lo:hi]), False, True
    return ("command", *command_line(parts[lo], limit))


def command_view(
    command: str, cwd_rel: str, *, max_lines: int = PREVIEW_MAX_LINES
) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None]:
    """The exact command as (window, whole): its lines escaped (kind "command"), blank
    runs counted (notes above), then "cwd: <rel>" (kind "cwd"). A command of several lines,
    or one shown other than character for character, starts with a ("stat", totals) line.
    More than `max_lines` display lines show the first and last halves of the window around
    a marker with the line numbers left out; the whole (every line, long ones unclipped up
    to FULL_MAX_CHARS / 2, bounded by FULL_MAX_LINES and FULL_MAX_CHARS) is the second part
    when the window leaves anything out."""
    parts = command.split("\n")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # a final newline ends the last line; it adds no line to run
    cwd = ("cwd", f"cwd: {safe(cwd_rel)}")
    if command == "":
        return [("marker", "(empty command)"), cwd], None
    n = len(parts)
    first = max_lines // 2
    head = list(islice(_groups(parts), max_lines + 1))
    if len(head) > max_lines:  # the first and the last half of the window: the end shows
        head = head[:first]
        tail = list(islice(_groups(parts, backwards=True), max_lines - first))[::-1]
        lo, hi = head[-1][1] + 1, tail[0][0]
        which = f"line {lo:,}" if lo == hi else f"lines {lo:,}\u2013{hi:,}"
        more = f"{hi - lo + 1:,} more command line{'s' * (hi != lo)}"
        gap = [("marker", f"\u2026 {more} ({which} of {n:,}; v shows them) \u2026")]
        window_notes = [f"{which} not in this window"]
    else:
        tail, gap, window_notes = [], [], []
    shown = [_render(parts, g, COMMAND_LINE_CHARS) for g in (*head, *tail)]
    collapsed = any(marked for _, _, _, marked in shown)
    if any(clipped for _, _, clipped, _ in shown):
        window_notes.append("long lines shown head and tail (v shows them whole)")
    totals = [f"{n:,} command line{'s' * (n != 1)}", human_size(len(command.encode("utf-8", "surrogatepass")))]
    if collapsed:
        totals.append(f"blank runs shown as {_mark('counts')}")
    lines = [(kind, text) for kind, text, _, _ in shown]
    lines[len(head):len(head)] = gap
    if n == 1 and not collapsed and not window_notes:
        return [*lines, cwd], None  # one line, shown character for character
    window = [("stat", " \u00b7 ".join(totals + window_notes)), *lines, cwd]
    if not window_notes:
        return window, None
    full = _Full()
    full.add("stat", " \u00b7 ".join(totals))
    for group in _groups(parts):
        if full.full():  # the rest is only counted, never rendered
            full.dropped += 1
            continue
        kind, text, _, _ = _render(parts, group, FULL_MAX_CHARS // 2)
        full.add(kind, text)
    return window, [*full.end("command lines"), cwd]


def command_lines(
    command: str, cwd_rel: str, *, max_lines: int = PREVIEW_MAX_LINES
) -> list[tuple[str, str]]:
    """The window of `command_view`."""
    return command_view(command, cwd_rel, max_lines=max_lines)[0]


def _summary_pieces(parts: list[str], budget: int, *, backwards: bool = False) -> Iterator[_Piece]:
    for k, (lo, hi) in enumerate(_groups(parts, backwards=backwards)):
        if k:
            yield _Piece("\n", "\u23ce")
        if hi - lo > 1:
            yield _Piece("\n" * (hi - lo - 1) + "".join(parts[lo:hi]), _blank_lines_marker(parts[lo:hi]))
        else:
            yield from _pieces(parts[lo], budget, backwards=backwards)


def command_summary(command: str, limit: int) -> str:
    """A command on one row of about `limit` characters (the tool row's summary): blank
    runs counted as in the preview, a line break shown as ⏎ (BLANK_RUN or more blank lines
    as one count), and, when it is still too long, its head and its tail around "…": the
    end of a command is where `; touch x` hides."""
    parts = command.rstrip("\n").split("\n")
    return _head_and_tail(lambda budget: _summary_pieces(parts, budget),
                          lambda budget: _summary_pieces(parts, budget, backwards=True),
                          len(command), limit, short=True)[0]


# -- output excerpts -------------------------------------------------------------------


def excerpt(text: str, max_lines: int = EXCERPT_MAX_LINES, max_line_chars: int = 500) -> list[str]:
    """A verbatim, escaped excerpt of a tool's output for the UI: at most `max_lines` lines
    in all, head first; when there are more, the last of them is "… N more lines". A line
    longer than `max_line_chars` is clipped with a marker."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    keep = parts if len(parts) <= max_lines else parts[: max(max_lines - 1, 0)]
    out = [safe(_clip(line, max_line_chars)) for line in keep]
    if len(keep) < len(parts):
        out.append(f"… {len(parts) - len(keep)} more lines")
    return out
