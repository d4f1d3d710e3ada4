"""Every string that goes to the model as JSON passes here: nothing can make a request
unencodable.

A Python str can hold what UTF-8 cannot: lone surrogates. They come from names and bytes kept
with ``errors="surrogateescape"`` and from the model itself (``"\\ud800"`` in JSON decodes to
one). ``json.dumps(..., ensure_ascii=False)`` keeps them, and the ``.encode("utf-8")`` of the
request body then raises: the turn died with "the stream crashed: UnicodeEncodeError".
``json.dumps`` also writes NaN and Infinity, which are not JSON.

``clean`` makes any JSON-like value safe: a lone surrogate U+DC80..U+DCFF (the byte NN kept by
surrogateescape) becomes the text ``\\xNN``, the form ``tools/names`` writes file names in,
so the model's ``caf\\udce9`` comes back to it as ``caf\\xe9``, the name that finds that file;
any other lone surrogate becomes U+FFFD; a non-finite float becomes its name as a string.
A string that holds JSON text (a call's ``arguments``, a tool message's ``content``) is
cleaned as JSON, so it stays valid JSON. ``dumps`` is the one encoder for everything that
becomes JSON text for a request (tool results, re-encoded arguments, the request body).
"""

from __future__ import annotations

import json
import math
import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace(match: re.Match) -> str:
    code = ord(match.group(0))
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return "\ufffd"


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced (see the module docstring)."""
    return _SURROGATE.sub(_replace, text) if _SURROGATE.search(text) else text


def _clean_str(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    head = text.lstrip()[:1]
    if head in ("{", "["):  # JSON text: a replacement must stay inside its string literals
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            pass
        else:
            return json.dumps(clean(value), ensure_ascii=False, allow_nan=False)
    return clean_text(text)


def clean(value):
    """A copy of a JSON-like value (dicts, lists, tuples, strings, numbers, None) in which
    every string is UTF-8-encodable and every number is JSON. Other objects are kept."""
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, dict):
        return {(_clean_str(k) if isinstance(k, str) else k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def dumps(value, **kw) -> str:
    """``json.dumps(value, ensure_ascii=False)``, always valid JSON that encodes as UTF-8.

    The common case costs one dumps and one scan; ``clean`` runs only when needed."""
    kw.setdefault("ensure_ascii", False)
    try:
        text = json.dumps(value, allow_nan=False, **kw)
    except ValueError:  # NaN or Infinity somewhere
        text = None
    if text is None or _SURROGATE.search(text):
        text = json.dumps(clean(value), allow_nan=False, **kw)
    return text


def body(value) -> bytes:
    """A request body: ``dumps`` encoded as UTF-8 (never raises UnicodeEncodeError).

    The encode is the check here (no extra scan): 4 MB of conversation costs what a plain
    ``json.dumps(...).encode()`` costs."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):  # UnicodeEncodeError is a ValueError too
        return json.dumps(clean(value), ensure_ascii=False, allow_nan=False).encode("utf-8")
