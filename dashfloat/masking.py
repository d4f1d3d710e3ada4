"""Secrets never reach the screen, the log or a file: one masking function for every sink.

`mask(text, secrets)` is pure. `secrets` are (value, label) pairs, built by `collect()`
from the configured API key and the values of configured headers whose names look secret
(Authorization, x-api-key, ...): each literal value is replaced by its label, e.g.
"[redacted: API key]". Values shorter than MIN_LENGTH are never secrets here (masking a
key of a few characters would mangle innocent text everywhere). A value cut off at the end
of a text (a message shortened to fit) or starting it (a stream split between two
deltas) is masked too, when at least MIN_LENGTH of its characters are there.

With `patterns=True` (the screen and the log, never what the model reads) credentials
that need no configuration are masked as well: the value of a key-like parameter of a URL
query (?key=, api_key=, access_token=, ...), the password of a URL's user info, and the
token after "Bearer".

The process registers its secrets once (`register`) so that sinks built far from the
configuration (the log handler, the HTTP error taxonomy) mask the same values; the sinks
call `mask(text)` with no secrets to use those.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MIN_LENGTH = 8
API_KEY_LABEL = "[redacted: API key]"
MASK = "[redacted]"

# header names whose values are credentials (the same test --show-config uses to hide them)
SENSITIVE_HEADER = re.compile(
    r"auth|key|token|secret|cookie|session|passw|signature|credential", re.IGNORECASE
)

_QUERY_NAMES = (
    r"key|api[-_]?key|apikey|x-api-key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|"
    r"auth|authorization|password|passwd|pwd|secret|client[-_]?secret|sig|signature|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential"
)
_PATTERNS = (
    # ?key=VALUE / &api_key=VALUE (also URL-encoded "&amp;" and ";" separators)
    re.compile(r"(?i)([?&;](?:" + _QUERY_NAMES + r")=)([^&#;\s'\"<>\\]+)"),
    # scheme://user:PASSWORD@host
    re.compile(r"(?i)([a-z][a-z0-9+.-]*://[^/@\s:'\"]*:)([^/@\s'\"]+)(?=@)"),
    # Authorization: Bearer TOKEN
    re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{" + str(MIN_LENGTH) + r",})"),
)

Secrets = tuple[tuple[str, str], ...]

_registered: Secrets = ()


def collect(api_key: str | None = None, headers: Mapping[str, str] | None = None) -> Secrets:
    """The (value, label) pairs of a configuration, longest value first (so "Bearer KEY"
    is masked whole before KEY alone)."""
    pairs: dict[str, str] = {}
    if api_key:
        _add(pairs, api_key.strip(), API_KEY_LABEL)
    for name, value in (headers or {}).items():
        if not isinstance(value, str) or not SENSITIVE_HEADER.search(str(name)):
            continue
        label = f"[redacted: {name} header]"
        _add(pairs, value.strip(), label)
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme:
            _add(pairs, credential.strip(), label)  # "Bearer X": X alone, too
    return tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))


def _add(pairs: dict[str, str], value: str, label: str) -> None:
    if len(value) < MIN_LENGTH:
        return
    pairs.setdefault(value, label)
    from urllib.parse import quote

    encoded = quote(value, safe="")  # as it appears in a URL or a form body
    if encoded != value:
        pairs.setdefault(encoded, label)


def normalize(secrets: Iterable) -> Secrets:
    """Pairs from pairs or bare values (a bare value is taken to be the API key)."""
    out: dict[str, str] = {}
    for item in secrets or ():
        if isinstance(item, str):
            _add(out, item, API_KEY_LABEL)
        elif item and len(item[0]) >= MIN_LENGTH:
            out.setdefault(item[0], item[1])
    return tuple(sorted(out.items(), key=lambda kv: -len(kv[0])))


def register(secrets: Iterable) -> None:
    """Add to the secrets of this process (what `mask(text)` without secrets uses)."""
    global _registered
    _registered = normalize([*_registered, *normalize(secrets)])


def registered() -> Secrets:
    return _registered


def mask(text: str, secrets: Secrets | None = None, *, patterns: bool = True) -> str:
    """`text` with every secret replaced by its label. PURE when `secrets` is given."""
    if not isinstance(text, str) or not text:
        return text
    if secrets is None:
        secrets = _registered
    for value, label in secrets:
        if value in text:
            text = text.replace(value, label)
        text = _edges(text, value, label)
    if patterns and ("=" in text or "@" in text or "earer" in text):
        for pattern in _PATTERNS:
            text = pattern.sub(_masked_group, text)
    return text


def _masked_group(match: re.Match) -> str:
    value = match.group(2)
    if value.startswith("[redacted"):
        return match.group(0)
    return match.group(1) + MASK


def _edges(text: str, value: str, label: str) -> str:
    """A value cut at either end of the text: its start ending the text (before an
    ellipsis), or its end starting it. A substring search rules most texts out at once
    (this runs for every streamed delta)."""
    stripped = text.rstrip("…. ")
    window = stripped[-(len(value) - 1):]
    at = window.find(value[:MIN_LENGTH])
    while at >= 0:
        if value.startswith(window[at:]):
            cut = len(window) - at
            text = stripped[:-cut] + label + text[len(stripped):]
            break
        at = window.find(value[:MIN_LENGTH], at + 1)
    head = text[:MIN_LENGTH]
    if len(head) == MIN_LENGTH:
        at = value.find(head, 1)
        while at >= 0:
            if text.startswith(value[at:]):
                text = label + text[len(value) - at:]
                break
            at = value.find(head, at + 1)
    return text


def mask_bytes(data: bytes, secrets: Secrets | None = None) -> bytes:
    """Literal secrets out of raw bytes (an HTTP body, before it is decoded and cut)."""
    if secrets is None:
        secrets = _registered
    for value, label in secrets:
        raw = value.encode("utf-8", "surrogateescape")
        if raw in data:
            data = data.replace(raw, label.encode())
    return data


def mask_deep(value, secrets: Secrets | None = None, *, patterns: bool = True):
    """Every string inside `value` (dicts, lists, tuples) masked; the shape is kept."""
    if isinstance(value, str):
        return mask(value, secrets, patterns=patterns)
    if isinstance(value, tuple):
        return tuple(mask_deep(v, secrets, patterns=patterns) for v in value)
    if isinstance(value, list):
        return [mask_deep(v, secrets, patterns=patterns) for v in value]
    if isinstance(value, dict):
        return {k: mask_deep(v, secrets, patterns=patterns) for k, v in value.items()}
    return value


class MaskingStream:
    """A text stream (sys.stderr while the UI runs) that masks what is written to it."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(mask(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)
