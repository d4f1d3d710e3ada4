"""Byte-level server-sent-events parser (WHATWG HTML "server-sent events" parsing rules).

Why byte-level: `requests.iter_lines()` splits on LF only, loses a CR that ends one chunk
while its LF starts the next, and decodes before splitting, which can tear a multi-byte
UTF-8 character in half. This parser is fed raw bytes exactly as they arrive, splits lines
on CR, LF and CRLF (even across chunk boundaries), and decodes each complete line as
UTF-8 with errors="replace" only after splitting.

WHATWG semantics kept:

* one leading UTF-8 BOM of the stream is skipped (even when split across chunks);
* lines starting with ":" are comments; "field:value", "field: value" (exactly one
  leading space removed) and "field" (no colon -> empty value); unknown fields ignored;
* `data` appends value + "\\n"; the final "\\n" is stripped when the event dispatches;
* an empty line dispatches; if no `data` line was seen the event is not dispatched, but
  the event type buffer is still reset and `id`/`retry` still take effect;
* `id` sets the last event id unless the value contains NUL; the last event id is sticky
  (every later event carries it) and "id:" with an empty value resets it to "";
* `retry` is honoured only when the value is non-empty and all ASCII digits.

Choices where the API differs from a browser EventSource:

* `Event.id` is None until the stream sends an `id` field (a browser reports "").
* `Event.retry` is the reconnection time in force when the event dispatched (sticky like
  the id, because WHATWG makes it connection state, not part of one event); None if the
  stream never sent a valid `retry`.
* DEVIATION: at `finish()` (EOF) a final line without a line terminator is processed as a
  line, and a pending event without its trailing blank line IS dispatched. WHATWG says to
  discard both, but real providers end streams that way and dropping the last event would
  lose the end of a reply.
* DEVIATION: an `error` field is not ignored (WHATWG ignores unknown fields). llama.cpp's
  server (server.cpp's `server_sent_event(sink, "error", ...)`, in builds up to late 2025;
  newer ones send `data: {"error": {...}}`) reports a failure inside a 200 stream as
  `error: {"code": 500, "message": ..., "type": ...}` and a blank line; the
  event carrying such a line is dispatched with type "error" and the `error` values as
  its data (they replace any `data` lines of that event).
* `max_event_bytes` bounds memory: the bytes of the line being assembled plus the data
  already buffered for the current event (each data value plus its newline). Exceeding
  it raises `SSEError`; the parser is then unusable (every later call raises again).
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Event:
    """One dispatched server-sent event."""

    event: str = "message"  # from `event:` (empty/absent -> "message")
    data: str = ""  # `data:` lines joined with "\n"
    id: str | None = (
        None  # last event id seen so far (WHATWG semantics; NUL ids ignored)
    )
    retry: int | None = (
        None  # reconnection time (ms) from `retry:` when all ASCII digits
    )


class SSEError(Exception):
    """Raised when one event exceeds the parser's size bound (a stream we must abort)."""


def _human_size(n: int) -> str:
    """Name a byte count the way a person would read it in an error message."""
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


class SSEParser:
    """Incremental SSE parser: `feed()` raw bytes as they arrive, `finish()` at EOF.

    Work is linear in the input: each chunk is split once with C-level bytes operations,
    and an unterminated line is kept in a bytearray that is only appended to, so a long
    line trickling in byte by byte is never re-scanned.
    """

    def __init__(self, max_event_bytes: int = 1 << 20):
        if isinstance(max_event_bytes, bool) or not isinstance(max_event_bytes, int):
            raise TypeError("max_event_bytes must be an int")
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        # Connection-level state (survives finish(), like EventSource across reconnects).
        self._last_id: str | None = None
        self._retry: int | None = None
        self._failed: SSEError | None = None
        self._reset_stream()

    def _reset_stream(self) -> None:
        """Forget everything that belongs to one stream (called at start and by finish)."""
        self._head = b""  # bytes held back while we cannot yet tell whether a BOM leads
        self._started = False  # BOM decision made
        self._after_cr = (
            False  # the previous chunk ended with CR: a leading LF is its pair
        )
        self._pending = bytearray()  # unterminated line
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        self._error: list[str] = []  # `error:` lines (llama.cpp), see the module docstring

    # -- public API --------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Event]:
        """Consume raw bytes; return the events completed by this chunk, in order."""
        self._check_usable()
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"feed() takes bytes, not {type(chunk).__name__}")
        chunk = bytes(chunk)
        if not self._started:
            chunk = self._strip_bom(chunk, eof=False)
            if chunk is None:
                return []
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]  # second half of a CRLF split across chunks
        if not chunk:
            return []
        # A trailing CR ends a line now; remember it so a leading LF next time is not a
        # second (empty, dispatching) line.
        self._after_cr = chunk[-1:] == b"\r"
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        tail = lines.pop()
        events: list[Event] = []
        if lines:
            if self._pending:
                self._pending += lines[0]
                lines[0] = bytes(self._pending)
                self._pending = bytearray()
            for line in lines:
                event = self._process_line(line)
                if event is not None:
                    events.append(event)
        self._pending += tail
        self._check_size(len(self._pending))
        return events

    def finish(self) -> list[Event]:
        """End of stream: flush the unterminated last line and the pending event.

        DEVIATION from WHATWG (which discards both): providers often close the stream
        right after the last `data:` line, without the blank line, and that event must not
        be lost. Afterwards the parser is ready for a new stream (e.g. a reconnection); the
        last event id and retry value persist, as in EventSource.
        """
        self._check_usable()
        events: list[Event] = []
        if not self._started:
            head = self._strip_bom(b"", eof=True) or b""
            if head:
                events.extend(self.feed(head))
        if self._pending:
            line = bytes(self._pending)
            self._pending = bytearray()
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        self._reset_stream()
        return events

    # -- internals ---------------------------------------------------------------------

    def _check_usable(self) -> None:
        """A parser that hit its bound stays failed: the stream is already corrupt."""
        if self._failed is not None:
            raise SSEError(str(self._failed))

    def _check_size(self, line_bytes: int) -> None:
        """Enforce the per-event bound on line buffer + data buffer."""
        if line_bytes + self._data_size > self._max:
            self._pending = bytearray()
            self._data = []
            self._error = []
            self._data_size = 0
            self._failed = SSEError(
                f"one server-sent event exceeded {_human_size(self._max)}"
            )
            raise self._failed

    def _strip_bom(self, chunk: bytes, eof: bool) -> bytes | None:
        """Drop one leading UTF-8 BOM; hold back bytes while they could still be one.

        Returns the bytes to parse, or None when more input is needed to decide.
        """
        head = self._head + chunk
        if not eof and len(head) < len(_BOM) and _BOM.startswith(head):
            self._head = head
            return None
        self._head = b""
        self._started = True
        return head.removeprefix(_BOM)

    def _process_line(self, line: bytes) -> Event | None:
        """Apply one complete line (without its terminator) per the WHATWG field rules."""
        self._check_size(len(line))
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None  # comment (keep-alive)
        colon = line.find(b":")
        if colon < 0:
            field, value = line, b""
        else:
            field, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if field == b"data":
            self._data.append(value.decode("utf-8", "replace"))
            self._data_size += len(value) + 1
        elif field == b"error":
            self._error.append(value.decode("utf-8", "replace"))
            self._data_size += len(value) + 1
        elif field == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif field == b"id" and b"\x00" not in value:
            self._last_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():  # bytes: ASCII only; b"" is False
            self._retry = int(value)
        return None

    def _dispatch(self) -> Event | None:
        """Blank line: emit the buffered event, unless no data line was seen."""
        data, event_type = self._data, self._event_type
        if self._error:
            data, event_type = self._error, "error"
        self._data, self._data_size, self._event_type, self._error = [], 0, "", []
        if not data:
            return None
        return Event(
            event=event_type or "message",
            data="\n".join(data),
            id=self._last_id,
            retry=self._retry,
        )
