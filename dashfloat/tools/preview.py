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

PREVIEW_MAX_LINES = 50
EXCERPT_MAX_LINES = 30
DIFF_LINE_CHARS = 2000  # a diff line longer than this is clipped with a marker

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
    return f"{text[:limit]} … [{len(text) - limit} more chars]"


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


def _shown(line: str) -> str:
    """Display form of one diff line: undecodable bytes as U+FFFD (errors="replace")."""
    if _SURROGATE.search(line):
        line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return safe(_clip(line, DIFF_LINE_CHARS))


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


def diff_lines(
    rel_path: str, old: bytes | None, new: bytes, *, max_lines: int = PREVIEW_MAX_LINES
) -> list[tuple[str, str]]:
    """A unified diff of `old` → `new` (old None: a new file, every line `+`).

    Returns (kind, text) pairs, kind one of header / hunk / add / del / ctx / marker, at
    most `max_lines` diff lines then a marker with the totals. Binary content (a NUL on
    either side) gives one marker instead of a diff; invalid UTF-8 is shown with U+FFFD and
    noted by a leading marker.
    """
    if b"\x00" in new or (old is not None and b"\x00" in old):
        text = f"binary file: {len(new)} bytes"
        if old is not None:
            text += f" (was {len(old)} bytes)"
        return [("marker", text)]
    out: list[tuple[str, str]] = []
    new_text, new_ok = _decode(new)
    old_text, old_ok = ("", True) if old is None else _decode(old)
    if not old_ok:
        out.append(("marker", "the current file is not valid UTF-8: undecodable bytes shown as \ufffd"))
    if not new_ok:
        out.append(("marker", "the new content is not valid UTF-8: undecodable bytes shown as \ufffd"))
    if old is not None and old == new:
        out.append(("marker", "no changes: the content is identical"))
        return out
    if old is None and not new:
        out.append(("header", safe(f"+++ b/{rel_path}")))
        out.append(("marker", "new empty file (0 bytes)"))
        return out
    shown = added = removed = hidden = 0
    for kind, raw in _diff_events(_split(old_text), _split(new_text), rel_path, old is None):
        if kind == "add":
            added += 1
        elif kind == "del":
            removed += 1
        if shown < max_lines:
            out.append((kind, _shown(raw)))
            shown += 1
        else:
            hidden += 1
    if hidden:
        out.append(
            ("marker", f"… {hidden} more diff lines ({added} added, {removed} removed in all)")
        )
    return out


# -- commands --------------------------------------------------------------------------


def command_lines(
    command: str, cwd_rel: str, *, max_lines: int = PREVIEW_MAX_LINES
) -> list[tuple[str, str]]:
    """The exact command, every line of it escaped (kind "command"), then "cwd: <rel>"
    (kind "cwd"); more than `max_lines` command lines end in a marker with the total."""
    parts = command.split("\n")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # a final newline ends the last line; it adds no line to run
    out: list[tuple[str, str]] = []
    if command == "":
        out.append(("marker", "(empty command)"))
    else:
        for line in parts[:max_lines]:
            out.append(("command", safe(line)))
        if len(parts) > max_lines:
            out.append(
                ("marker", f"… {len(parts) - max_lines} more command lines ({len(parts)} in all)")
            )
    out.append(("cwd", f"cwd: {safe(cwd_rel)}"))
    return out


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
