"""How a file name travels to the model as JSON text and comes back to the same bytes.

A name on Linux is bytes; JSON carries text. A name that is valid UTF-8 goes as it is (a
newline, a control character or a bidi mark included: JSON carries them, and the screen
escapes them on its own). A name that is not valid UTF-8 is *written*: each byte that is not
UTF-8 as ``\\xNN`` (two lowercase hex digits), and each backslash of that name as ``\\\\``.
A valid name whose text could be read as such an escape (``a\\xff`` spelled with a backslash,
or one holding ``\\\\``) is written the same way, so no two names share a written form.

Going back (``to_bytes``) a component is decoded only when it is exactly the written form of
the bytes it decodes to (canonical); anything else is taken literally. So ``caf\\xe9.txt``
from a listing finds ``b"caf\\xe9.txt"``, ``a\\\\xff`` finds the ASCII name ``a\\xff``, and a
made-up ``caf\\xc3\\xa9`` (those bytes are valid UTF-8, written ``café``) stays the literal
name with backslashes: one text per file, so a rule about ``café.txt`` cannot be walked
around. Names are handled per ``/``-separated component. A lone surrogate U+DC80..U+DCFF (the
model's own ``\\udcNN``, or Python's surrogateescape) stands for the byte NN; any other lone
surrogate stands for no byte.
"""

from __future__ import annotations

import re

# What to_bytes decodes: a doubled backslash, or \x and a byte that cannot start valid UTF-8
# on its own (an ASCII byte is always written as itself).
_ESCAPE = re.compile(r"\\(?:\\|x[89a-f][0-9a-f])")
_BYTE_SURROGATE = re.compile("[\udc80-\udcff]")
_OTHER_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")

NOTE = (
    "a name that is not valid UTF-8 is written with \\xNN for each byte that is not "
    "(and \\\\ for each backslash in that name); pass the name back exactly as written and "
    "the tools use the same file. The shell does not read these escapes."
)
"""The explanation a result carries (``names_escaped``) when it holds such a name."""


def _component(raw: bytes) -> str:
    text = raw.decode("utf-8", "surrogateescape")
    if not _BYTE_SURROGATE.search(text) and not _ESCAPE.search(text):
        return text
    text = text.replace("\\", "\\\\")
    return _BYTE_SURROGATE.sub(lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}", text)


def _lenient_bytes(text: str) -> bytes:
    """``text`` as bytes: U+DC80..U+DCFF as the byte they stand for, other lone surrogates
    as U+FFFD (they stand for no byte)."""
    return _OTHER_SURROGATE.sub("\ufffd", text).encode("utf-8", "surrogateescape")


def written(name: str | bytes) -> str:
    """The text a name (or a path, component by component) is given to the model as.

    ``name``: bytes, or a str from ``os.fsdecode`` (undecodable bytes as surrogate escapes).
    The result is always UTF-8-encodable and ``to_bytes(written(b)) == b``.
    """
    raw = bytes(name) if isinstance(name, bytes | bytearray) else _lenient_bytes(name)
    return "/".join(_component(part) for part in raw.split(b"/"))


def is_written(name: str | bytes) -> bool:
    """True when ``written(name)`` uses escapes (the name is not the plain text of itself)."""
    raw = bytes(name) if isinstance(name, bytes | bytearray) else _lenient_bytes(name)
    text = raw.decode("utf-8", "surrogateescape")
    return bool(_BYTE_SURROGATE.search(text) or _ESCAPE.search(text))


def _unescape(text: str) -> bytes:
    out = bytearray()
    at = 0
    for m in _ESCAPE.finditer(text):
        out += text[at : m.start()].encode("utf-8", "surrogateescape")
        esc = m.group(0)
        out += b"\\" if esc == "\\\\" else bytes([int(esc[2:], 16)])
        at = m.end()
    out += text[at:].encode("utf-8", "surrogateescape")
    return bytes(out)


def _component_bytes(text: str) -> bytes:
    literal = text.encode("utf-8", "surrogateescape")
    if "\\" not in text:
        return literal
    decoded = _unescape(text)
    if decoded != literal and _component(decoded) == text:
        return decoded
    return literal


def to_bytes(text: str) -> bytes | None:
    """The bytes a path the model wrote stands for; None when it holds a lone surrogate that
    stands for no byte (anything but U+DC80..U+DCFF)."""
    if _OTHER_SURROGATE.search(text):
        return None
    return b"/".join(_component_bytes(part) for part in text.split("/"))


def canonical(text: str) -> str | None:
    """The one written form of the file ``text`` names (None as for ``to_bytes``).

    The model's ``caf\\udce9`` and ``caf\\xe9`` both become ``caf\\xe9``; a plain name stays
    as it is."""
    raw = to_bytes(text)
    return None if raw is None else written(raw)


def stray_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` that stands for no byte, as ``\\udXXX``."""
    m = _OTHER_SURROGATE.search(text)
    return None if m is None else f"\\u{ord(m.group(0)):04x}"
