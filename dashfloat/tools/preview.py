"""Confirmation previews and output excerpts: pure functions from bytes/text to display lines.

No file I/O here: callers read the file (through the path policy) and pass the bytes in.
Every line returned has passed through `safe()` (dashfloat.textsafe.visible plus a few
extras), so escape sequences, bidi controls and zero-width characters in file contents,
commands or output are shown escaped: what the user reads is what runs.
"""

from __future__ import annotations

import difflib
import re

from dashfloat.textsafe import visible

PREVIEW_MAX_LINES = 50  # diff (or command) lines in the window shown in the transcript (ADR 0007)
EXCERPT_MAX_LINES = 30
DIFF_LINE_CHARS = 500  # a diff line longer than this is clipped in the window (~7 rows at 80 columns)
FULL_LINE_CHARS = 20_000  # and in the whole preview (v on a confirmation)
FULL_MAX_LINES = 20_000  # the whole preview holds at most this many lines
FULL_MAX_CHARS = 1_000_000  # and this much text, then a marker: bounded for any file
BLANK_RUN = 3  # this many blank diff lines in a row, or more, show as one marker line

# Beyond textsafe.visible: line/paragraph separators (some renderers break lines on them),
# invisible fillers, and Unicode tag characters (invisible "ASCII smuggling").
_EXTRA = re.compile(
    "[\n\u2028\u2029\u034f\u115f\u1160\u180e\u3164\ufff9-\ufffb\U000e0000-\U000e007f]"
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
    return safe(_clip(line, limit))


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


def command_view(
    command: str, cwd_rel: str, *, max_lines: int = PREVIEW_MAX_LINES
) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None]:
    """The exact command as (window, whole): every line of it escaped (kind "command",
    never clipped: what runs is what is shown), then "cwd: <rel>" (kind "cwd"). A command
    of several lines starts with a ("stat", totals) line; more than `max_lines` lines end
    the window in a marker with the total, and the whole (bounded) is the second part."""
    parts = command.split("\n")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # a final newline ends the last line; it adds no line to run
    cwd = ("cwd", f"cwd: {safe(cwd_rel)}")
    if command == "":
        return [("marker", "(empty command)"), cwd], None
    out: list[tuple[str, str]] = []
    if len(parts) > 1:
        size = human_size(len(command.encode("utf-8", "surrogatepass")))
        out.append(("stat", f"{len(parts):,} command lines · {size}"))
    head = out + [("command", safe(line)) for line in parts[:max_lines]]
    if len(parts) <= max_lines:
        return head + [cwd], None
    window = head + [("marker", f"… {len(parts) - max_lines:,} more command lines ({len(parts):,} in all)"), cwd]
    full = _Full()
    for kind, text in out:
        full.add(kind, text)
    for line in parts:
        full.add("command", safe(line))
    return window, [*full.end("command lines"), cwd]


def command_lines(
    command: str, cwd_rel: str, *, max_lines: int = PREVIEW_MAX_LINES
) -> list[tuple[str, str]]:
    """The window of `command_view`."""
    return command_view(command, cwd_rel, max_lines=max_lines)[0]


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
