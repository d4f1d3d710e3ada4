"""Read a response body straight from the connection's buffered socket file.

Why: on a paced stream (one small event per HTTP chunk, 200 a second) the streamer's cost
is per read, not per byte. Through `resp.raw.read1()` every read crosses urllib3 and
http.client, and http.client's read1 on a chunked body returns at most ONE HTTP chunk per
call however much is buffered, so a read could never pick up several events. Here a read
is one `fp.read1(n)` on http.client's BufferedReader (one recv of whatever has arrived, up
to n bytes) plus `ChunkedDecoder`, a small pure decoder of the chunked framing. Measured
(2-CPU VM, 2,000 events at 200/s over loopback, streamer-thread CPU): 0.74 s through
urllib3, 0.60 s through this module still reading each event as it comes, ~0.13 s once
reads gather several events (client.COALESCE_S).

`plain_reader()` only takes bodies it can frame exactly as http.client would (chunked,
Content-Length, or up to EOF) and without a Content-Encoding; for anything else it
returns None and the caller keeps urllib3's decoding reader.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Callable

__all__ = ["BodyError", "ChunkedDecoder", "plain_reader"]

MAX_LINE = 64 << 10  # a chunk-size or trailer line (http.client's _MAXLINE is the same)
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")  # 16 digits: any size a 64-bit server can send

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class BodyError(http.client.HTTPException):
    """Broken framing or a body that ended early: the connection broke mid-stream.

    An HTTPException, like http.client's own IncompleteRead, so callers that already
    treat those as a broken connection need nothing new."""


class ChunkedDecoder:
    """Transfer-Encoding: chunked framing -> payload bytes. PURE (no I/O).

    `feed()` takes the bytes exactly as they arrive (a boundary may fall anywhere, even
    inside a CRLF) and returns the payload they complete, possibly b"". `done` turns True
    after the last-chunk (size 0) and its trailer section; bytes after that are ignored
    (the connection is never reused). Chunk extensions and trailer fields are skipped; a
    bare LF is accepted where CRLF belongs, as http.client does. Malformed framing raises
    BodyError, and so does every later feed().
    """

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0  # payload bytes still due in the current chunk
        self._line = b""  # an unfinished framing line carried over from the last feed
        self._failed: BodyError | None = None

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> bytes:
        if self._failed is not None:
            raise self._failed
        try:
            return self._feed(data)
        except BodyError as exc:
            self._failed = exc
            raise

    def _feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        pos, n = 0, len(data)
        while pos < n and self._state != _DONE:
            if self._state == _DATA:
                end = min(n, pos + self._left)
                out.append(data[pos:end])
                self._left -= end - pos
                pos = end
                if not self._left:
                    self._state = _DATA_END
                    if data.startswith(b"\r\n", pos):  # the common case, without a line
                        pos += 2
                        self._state = _SIZE
                continue
            nl = data.find(b"\n", pos)
            if nl < 0:
                self._carry(data[pos:])
                break
            line = data[pos:nl]
            if self._line:
                line, self._line = self._line + line, b""
            pos = nl + 1
            self._framing_line(line[:-1] if line.endswith(b"\r") else line)
        return b"".join(out)

    def _carry(self, part: bytes) -> None:
        self._line += part
        if len(self._line) > MAX_LINE + 1:  # +1: its CR may be here already
            raise BodyError(f"a chunk-size or trailer line longer than {MAX_LINE >> 10} KiB")

    def _framing_line(self, line: bytes) -> None:
        if len(line) > MAX_LINE:
            raise BodyError(f"a chunk-size or trailer line longer than {MAX_LINE >> 10} KiB")
        if self._state == _DATA_END:
            if line:
                raise BodyError(f"no CRLF after a chunk's data (found {_show(line)})")
            self._state = _SIZE
        elif self._state == _SIZE:
            size = line.split(b";", 1)[0].strip(b" \t")
            if not _HEX.fullmatch(size):
                raise BodyError(f"bad chunk-size line {_show(line)}")
            self._left = int(size, 16)
            self._state = _DATA if self._left else _TRAILER
        elif not line:  # _TRAILER: an empty line ends the message
            self._state = _DONE


def _show(line: bytes) -> str:
    """A short, printable view of a bad framing line for an error message."""
    text = repr(line[:40])
    return text + ("..." if len(line) > 40 else "")


# ---- readers over the socket file ------------------------------------------------------


class _Chunked:
    def __init__(self, fp, size: int):
        self.fp, self.size = fp, size
        self.decoder = ChunkedDecoder()

    def __call__(self) -> bytes:
        """The payload of everything that has arrived; b"" only after the last chunk."""
        while not self.decoder.done:
            data = self.fp.read1(self.size)
            if not data:
                raise BodyError("the body ended before its last chunk (chunked encoding)")
            payload = self.decoder.feed(data)
            if payload:
                return payload
        return b""


class _Length:
    def __init__(self, fp, size: int, length: int):
        self.fp, self.size = fp, size
        self.length = self.left = length

    def __call__(self) -> bytes:
        if self.left <= 0:
            return b""
        data = self.fp.read1(min(self.size, self.left))
        if not data:
            raise BodyError(
                f"the body ended after {self.length - self.left} of the {self.length} bytes "
                "its Content-Length announced"
            )
        self.left -= len(data)
        return data


def plain_reader(resp, size: int) -> Callable[[], bytes] | None:
    """A read() for the untouched body of a requests Response opened with stream=True:
    each call returns the payload of what has arrived (blocking until something has, at
    most `size` bytes), b"" at the end. None when the body is encoded (gzip...) or
    urllib3/http.client do not look as expected: then use urllib3's own reader."""
    raw = getattr(resp, "raw", None)
    hr = getattr(raw, "_fp", None)  # urllib3's HTTPResponse wraps http.client's
    fp = getattr(hr, "fp", None)
    if not isinstance(hr, http.client.HTTPResponse) or not hasattr(fp, "read1"):
        return None
    if _encoded(resp.headers) or not _untouched(resp, raw, hr):
        return None
    return _framed(hr, fp, size)


def _framed(hr: http.client.HTTPResponse, fp, size: int) -> Callable[[], bytes]:
    if hr.chunked:
        return _Chunked(fp, size)
    if isinstance(hr.length, int):  # http.client's own framing decision
        return _Length(fp, size, hr.length)
    return lambda: fp.read1(size)  # no length, not chunked: the body ends at EOF


def response_reader(hr: http.client.HTTPResponse, headers, size: int, method: str,
                    url: str) -> tuple[Callable[[], bytes], bool]:
    """(read, batched) for the body of an http.client response nothing has read yet (the
    direct path, llm/transport.py). A body without Content-Encoding is read as
    plain_reader reads it (batched: one read returns everything that has arrived); an
    encoded one (gzip...) is decoded by urllib3 exactly as on the requests path (its
    read1, one HTTP chunk per call; urllib3 loads only then)."""
    if not _encoded(headers):
        return _framed(hr, hr.fp, size), True
    from urllib3.response import HTTPResponse

    raw = HTTPResponse(body=hr, headers=list(headers.items()), status=hr.status, version=hr.version,
                       reason=hr.reason, preload_content=False, decode_content=True, original_response=hr,
                       request_method=method, request_url=url)
    return (lambda: raw.read1(size, decode_content=True) or b""), False


def _encoded(headers) -> bool:
    enc = (headers.get("content-encoding") or "").strip().lower()
    return enc not in ("", "identity")


def _untouched(resp, raw, hr) -> bool:
    """Nothing of the body was read yet through requests, urllib3 or http.client, and
    http.client's framing attributes are the ones this module knows."""
    if not isinstance(getattr(hr, "chunked", None), bool) or not hasattr(hr, "length"):
        return False
    return (
        getattr(resp, "_content_consumed", True) is False
        and getattr(raw, "_fp_bytes_read", None) == 0
        and getattr(raw, "chunk_left", 0) is None  # urllib3's own chunked reader
        and not (hr.chunked and getattr(hr, "chunk_left", 0) is not None)
        and not getattr(hr.fp, "closed", True)
    )
