"""Make untrusted text safe to put on a terminal: what the user reads is what is there.

Model output, tool output, file names and provider error bodies may carry control
characters, ANSI/OSC escape sequences, bidi overrides or zero-width characters. None of
them may reach the terminal raw (they could move the cursor, retitle the window, hide text
or reorder it). `visible()` replaces each with a short, visibly escaped form.
"""

from __future__ import annotations

import re

# Bidi controls and invisible formatting characters that can hide or reorder text.
_INVISIBLE = (
    "\u200b\u200c\u200d\u200e\u200f"  # zero-width space/non-joiner/joiner, LRM, RLM
    "\u202a\u202b\u202c\u202d\u202e"  # LRE RLE PDF LRO RLO
    "\u2060\u2061\u2062\u2063\u2064"  # word joiner, invisible operators
    "\u2066\u2067\u2068\u2069"  # LRI RLI FSI PDI
    "\u206a\u206b\u206c\u206d\u206e\u206f"
    "\ufeff"  # BOM / zero-width no-break space
    "\u00ad"  # soft hyphen
    "\u061c"  # Arabic letter mark
    "\u2028\u2029"  # line and paragraph separators
    "\u034f\u115f\u1160\u180e\u3164\ufff9\ufffa\ufffb"  # invisible fillers and annotations
)

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f" + re.escape(_INVISIBLE) + "\U000e0000-\U000e007f\ud800-\udfff]"
)

_NAMED = {"\x1b": "\\e", "\r": "\\r", "\x00": "\\0", "\x07": "\\a", "\x08": "\\b"}


def _escape(match: re.Match) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte kept by errors="surrogateescape"
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\u{code:04x}"


def visible(text: str, *, tab_width: int = 4) -> str:
    """Return `text` with every terminal-unsafe character shown as an escape.

    Newlines are kept (callers split lines); tabs become spaces so layout is stable.
    """
    if "\t" in text:
        text = text.replace("\t", " " * tab_width)
    return _UNSAFE.sub(_escape, text)


def is_clean(text: str) -> bool:
    """True when `visible(text)` would change nothing but tabs."""
    return _UNSAFE.search(text) is None
