"""Streaming client for any OpenAI-compatible /chat/completions endpoint (no SDK).

`stream_chat()` runs in the streamer thread: it POSTs the request, parses the SSE body as
it arrives and reports deltas through `on_event`, then returns a StreamResult. Every
failure is a ChatError (see errors.py); a cancel is never an error.

Transport (llm/transport.py): a plain http:// request with no proxy in the environment goes
straight through http.client, anything else (https, proxies, URLs or headers requests would
rewrite) through requests (llm/viarequests.py), which then loads: requests and urllib3 are
not imported before the first request to a local server.

Reading: for a body without Content-Encoding, bodyreader reads http.client's buffered socket
file with read1(64 KiB), one recv of whatever has arrived, and decodes the chunked framing
itself (a Content-Length body stops at its length, one with neither ends at EOF). Anything
else (gzip, or urllib3/http.client internals that are not as expected) goes through urllib3's
`read1(64 KiB, decode_content=True)`, which hands over every flush as it arrives but returns
at most one HTTP chunk per call. `iter_content(None)` and `raw.stream(n)` block until EOF
(or n bytes) on a Connection: close body, and requests leaves `raw.decode_content` False,
hence the explicit `decode_content=True`. Verified with urllib3 2.8; without read1 (urllib3
< 2.2) the requests path falls back to `iter_content(None)`, which is prompt for chunked
bodies only.

Coalescing: the streamer's cost is per wake-up, not per byte. After a small read (< 8 KiB)
of a stream read by plain_reader, it pauses before reading again (12.5 ms, doubling up to
COALESCE_S = 50 ms) so that one read gathers several events, and the deltas of one read
reach on_event as one per kind. Big reads never pause: a burst is read in 64 KiB pieces and
pays at most a short pause after a small first read. Measured on a 2-CPU VM, 2,000 events
of ~214 bytes at 200/s over loopback, one per HTTP chunk, CPU of the streamer thread
(median of 3): 0.71-0.74 s reading each event through urllib3 as it came, 0.60 s through
plain_reader without pauses, 0.20 s with 25 ms pauses, ~0.13 s with 50 ms (~200 reads);
run_bench's "HTTP streamer" row went from 0.66 s to 0.12 s. On that machine a wake-up
costs ~0.4 ms (the sleep, the recv, and the parsing code running cold after it), while
parsing the 2,000 events back to back takes ~25-45 ms.

Failures inside a 200 (see errors.py for the kinds): an error object in a `data:` event
in any of the shapes servers use (`_in_band_error`), llama.cpp's `error:` lines (the SSE
parser dispatches them as error events), finish_reason "error", a body with no event at
all (empty_stream: llama-cpp-python fails that way), and a stream that ends without
finish_reason or [DONE] (Ollama's OpenAI layer fails that way mid-answer) are all errors;
text that had arrived is delivered first and the error says it is partial. A body that is
one JSON object (a server that ignored stream: true, or a proxy that forwarded an error
body) is read as a completion or an error, whatever its content type.

Connections: a new one per call, closed in a finally (never pooled, never reused): cancel
works by shutting down THIS call's socket, and nothing is left in a shared pool in a
half-read state. The cost (one handshake per request) is small next to a model's time to
first token.

Cancel: CancelToken.cancel() (from any thread) sets the flag and shuts down (SHUT_RDWR)
the call's socket, which wakes a read blocked in another thread at once. The socket is
registered with the token as soon as it is connected, so a cancel also interrupts the wait
for the response headers (a server loading a model can take a long time to answer). A cancel during a coalescing pause takes
effect when the pause ends (at most COALESCE_S): the flag is checked then, before any
further read or delivery. The response object itself is closed by
the streamer thread in its finally: urllib3/http.client objects are not thread-safe, the
OS-level shutdown is. A cancel during DNS resolution or the TCP connect itself takes
effect when that returns (bounded by connect_timeout); the TLS handshake is interrupted.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from dashfloat import __version__, masking, wire
from dashfloat.llm import errors, toolcalls, transport
from dashfloat.llm.endpoint import Endpoint
from dashfloat.llm.errors import ChatError
from dashfloat.llm.sse import SSEError, SSEParser
from dashfloat.priority import step_aside

__all__ = [
    "CancelToken",
    "Endpoint",
    "StreamResult",
    "build_request",
    "context_window",
    "list_models",
    "stream_chat",
]

ERROR_BODY_MAX = 64 << 10  # bytes of an error body read for classify_http
MODELS_BODY_MAX = 8 << 20
READ_SIZE = 64 << 10  # per read1 call; read1 returns what has arrived, up to this
COALESCE_S = 0.05
"""The pause before reading again after a small read of a stream, so that one read picks
up several events: the streamer's cost is per wake-up (a sleep, a recv, a parse, a
delivery to on_event), not per byte. The UI copies text to the screen every 100 ms at
most, so a pause of half that is not seen, and it turns 200 wake-ups a second (one per
event at 200 tokens/s) into 20. 25 ms pauses were measured too: 40 wake-ups a second,
0.20 s of streamer CPU for the 10-s stream instead of ~0.12 s (see the module docstring)."""
FIRST_PAUSE_S = COALESCE_S / 4
"""The first pause after a big read or at the start, doubled after each small read up to
COALESCE_S: a burst whose first read was small (what came with the headers) loses 12.5 ms,
not 50."""
SMALL_READ = 8 << 10  # a read below this was not a burst: pause before the next one


class CancelToken:
    """Thread-safe cancel flag for one request; cancel() may come from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._socks: list[socket.socket] = []

    def cancel(self) -> None:
        """Set the flag and shut down the in-flight socket so a blocked read returns now."""
        with self._lock:
            self._cancelled = True
            socks, self._socks = self._socks, []
        for sock in socks:
            _shutdown(sock)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def _attach(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._cancelled:
                self._socks.append(sock)
                return
        _shutdown(sock)  # cancelled before the socket existed

    def _detach_all(self) -> None:
        with self._lock:
            self._socks = []


def _shutdown(sock) -> None:
    try:
        # The base-class method: on an SSLSocket it shuts the fd down without touching
        # the TLS object another thread may be reading through.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        pass


# ---- request -------------------------------------------------------------------------------


def _register_secrets(endpoint: Endpoint) -> None:
    """The key and secret header values this request sends are masked in every error text
    and log line from now on (the CLI registered them already; another front end may not)."""
    masking.register(masking.collect(endpoint.api_key, endpoint.headers))


def _headers(endpoint: Endpoint, accept: str) -> dict:
    headers = {
        "Content-Type": "application/json",
        "Accept": accept,
        # identity: nothing between the server and us buffers the stream to compress it
        # (a gzip body is still decoded if a server sends one anyway)
        "Accept-Encoding": "identity",
        "User-Agent": f"dashfloat/{__version__}",
    }
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    headers.update(endpoint.headers or {})
    return headers


def build_request(endpoint: Endpoint, model: str, messages, tools=None) -> tuple[str, dict, dict]:
    """(url, headers, json_body) of a streamed chat completion. PURE.

    No tool_choice and no parallel_tool_calls (provider defaults, ADR 0007); `tools` only
    when given (an empty list is left out: some servers reject `"tools": []`)."""
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    body: dict = {
        "model": model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = list(tools)
    return url, _headers(endpoint, "text/event-stream"), body


_NULL_CONTENT: set[str] = set()
"""Base URLs that refused `"content": ""` beside tool_calls (Bedrock's OpenAI-compatible
endpoint with Anthropic models): later requests to them go out with null at once."""


def _null_content_body(body: dict) -> bytes | None:
    """The request body with `"content": null` in every assistant message that has
    tool_calls and empty content; None when there is no such message. PURE."""
    messages = body.get("messages") or []
    if not any(_tool_only(m) for m in messages):
        return None
    fixed = [dict(m, content=None) if _tool_only(m) else m for m in messages]
    return wire.body(dict(body, messages=fixed))


def _tool_only(msg) -> bool:
    return (
        isinstance(msg, dict)
        and msg.get("role") == "assistant"
        and bool(msg.get("tool_calls"))
        and msg.get("content") == ""
    )


# ---- result --------------------------------------------------------------------------------


@dataclass
class StreamResult:
    content: str
    reasoning: str
    tool_calls: list[dict]
    finish_reason: str | None
    usage: dict | None
    cancelled: bool

    def as_dict(self) -> dict:
        return asdict(self)


class _Cancelled(Exception):
    pass


class _Episode:
    """What one stream has produced so far, with the episode bounds."""

    def __init__(self, on_event, cancel, max_episode_bytes, max_calls):
        self.on_event = on_event
        self.cancel = cancel
        self.max_bytes = max_episode_bytes
        self.max_calls = max_calls
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.acc = toolcalls.new()
        self.text_bytes = 0
        self.finish_reason: str | None = None
        self.usage: dict | None = None
        # Text waiting for flush(): consecutive deltas of one kind, handed to on_event as
        # one (per read, see _consume_sse). content/reasoning hold delivered text only.
        self.pending: list[str] = []
        self.pending_kind = ""
        # content or reasoning was accepted; it reaches on_event at the next flush, which
        # every way out of stream_chat but a cancel makes
        self.delivered = False
        self.events = 0  # stream events seen (data, [DONE], error): 0 at EOF = empty body

    # -- bounds
    def _over(self, extra: int = 0) -> bool:
        return self.text_bytes + extra + toolcalls.size(self.acc) > self.max_bytes

    def _bound_bytes(self) -> ChatError:
        return errors.bound(
            f"the answer exceeded {errors.human_size(self.max_bytes)} (content, reasoning "
            "and tool-call arguments together); the stream was closed",
            "ask for a shorter answer or split the task into smaller steps",
            partial=self.delivered,
        )

    # -- deltas
    def text(self, kind: str, text) -> None:
        if not isinstance(text, str) or not text:
            return
        n = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if self._over(n):
            raise self._bound_bytes()
        if self.cancel.cancelled:
            raise _Cancelled
        self.text_bytes += n
        if kind != self.pending_kind:
            self.flush()  # coalesce same-kind deltas only: the order of kinds is kept
            self.pending_kind = kind
        self.pending.append(text)
        self.delivered = True

    def flush(self) -> None:
        """Hand the pending text to on_event as one delta. After a cancel it is dropped:
        nothing is delivered after a cancel, and the result holds what was delivered."""
        if not self.pending:
            return
        text = "".join(self.pending)
        self.pending = []
        if self.cancel.cancelled:
            return
        kind = self.pending_kind
        (self.content if kind == "content" else self.reasoning).append(text)
        self.on_event((kind, text))

    def content_value(self, value) -> None:
        """`content` as a string, or as a list of parts (Mistral's thinking models send
        [{"type": "thinking", "thinking": [{"type": "text", "text": ...}]},
         {"type": "text", "text": ...}])."""
        if isinstance(value, str):
            self.text("content", value)
        elif isinstance(value, list):
            for part in value:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "thinking":
                    inner = part.get("thinking")
                    if isinstance(inner, str):
                        self.text("reasoning", inner)
                    elif isinstance(inner, list):
                        for p in inner:
                            if isinstance(p, dict):
                                self.text("reasoning", p.get("text"))
                elif part.get("type") in ("text", None):
                    self.text("content", part.get("text"))

    def reasoning_value(self, holder: dict) -> None:
        """`reasoning_content` (DeepSeek, llama.cpp, older vLLM) or `reasoning`
        (OpenRouter, Ollama, Groq, newer vLLM). One of the two, never both: vLLM's
        compatibility mode sends the same text under both names."""
        rc = holder.get("reasoning_content")
        if isinstance(rc, str) and rc:
            self.text("reasoning", rc)
        else:
            self.text("reasoning", holder.get("reasoning"))

    def tool_deltas(self, deltas) -> None:
        if not isinstance(deltas, list) or not deltas:
            return
        toolcalls.feed(self.acc, deltas)
        if toolcalls.count(self.acc) > self.max_calls:
            raise errors.bound(
                f"the model asked for more than {self.max_calls} tool calls in one answer; "
                "the stream was closed",
                "ask for fewer steps at a time",
                partial=self.delivered,
            )
        if self._over():
            raise self._bound_bytes()

    def set_usage(self, obj: dict) -> None:
        usage = obj.get("usage")
        if not isinstance(usage, dict) or not usage:
            xg = obj.get("x_groq")  # Groq's older streams: usage only under x_groq
            usage = xg.get("usage") if isinstance(xg, dict) else None
        if isinstance(usage, dict) and usage:
            if self.cancel.cancelled:
                raise _Cancelled
            self.usage = usage
            self.flush()  # the text before it first
            self.on_event(("usage", usage))

    def set_finish(self, choice: dict) -> None:
        fr = choice.get("finish_reason")
        if isinstance(fr, str) and fr:
            self.finish_reason = fr

    # -- a whole chunk / completion
    def chunk(self, obj: dict) -> None:
        choices = obj.get("choices")
        if isinstance(choices, list) and choices:
            choice = choices[0]
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:  # rare: search
                choice = next(
                    (c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0),
                    choice,
                )
            if isinstance(choice, dict):
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    self.reasoning_value(delta)
                    self.content_value(delta.get("content"))
                    self.tool_deltas(delta.get("tool_calls"))
                self.set_finish(choice)
        self.set_usage(obj)

    def completion(self, obj: dict) -> None:
        """A whole non-streamed chat.completion (a server that ignored stream: true)."""
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            choice = choices[0]
            msg = choice.get("message")
            if not isinstance(msg, dict):
                msg = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            self.reasoning_value(msg)
            self.content_value(msg.get("content"))
            calls = msg.get("tool_calls")
            if isinstance(calls, list):
                deltas = []
                for i, call in enumerate(calls):
                    if isinstance(call, dict):
                        d = dict(call)
                        d.setdefault("index", i)
                        deltas.append(d)
                self.tool_deltas(deltas)
            self.set_finish(choice)
        self.set_usage(obj)

    def result(self, cancelled: bool = False) -> StreamResult:
        """The outcome; pending text is delivered first (dropped after a cancel)."""
        if cancelled:
            self.pending = []
        else:
            self.flush()
        return StreamResult(
            content="".join(self.content),
            reasoning="".join(self.reasoning),
            tool_calls=toolcalls.finish(self.acc),
            finish_reason=self.finish_reason,
            usage=self.usage,
            cancelled=cancelled,
        )


_nap = time.sleep  # the pause between small reads (tests replace it)


def _coalescing(read: Callable[[], bytes], cancel: CancelToken) -> Callable[[], bytes]:
    """read() that pauses before each read that follows a small one (see COALESCE_S).
    Cancel is checked after the pause; the read timeout applies to the read after it."""
    pause = 0.0  # before the next read

    def coalesced() -> bytes:
        nonlocal pause
        if pause:
            _nap(pause)
            if cancel.cancelled:
                raise _Cancelled
        data = read()
        if len(data) >= SMALL_READ:
            pause = 0.0
        else:
            pause = min(2 * pause, COALESCE_S) if pause else FIRST_PAUSE_S
        return data

    return coalesced


def _read_capped(read: Callable[[], bytes], limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes (plus one read); True when there was more."""
    buf = bytearray()
    while len(buf) <= limit:
        data = read()
        if not data:
            return bytes(buf), False
        buf += data
    return bytes(buf[:limit]), True


def _read_error_body(read: Callable[[], bytes]) -> bytes:
    """At most 64 KiB of an error body; a body that breaks off still yields what came."""
    buf = bytearray()
    # best effort: the status already says it failed; a broken body keeps what came
    with contextlib.suppress(Exception):
        while len(buf) < ERROR_BODY_MAX:
            data = read()
            if not data:
                break
            buf += data
    return bytes(buf[:ERROR_BODY_MAX])


def _media_type(resp: transport.Response) -> str:
    return (resp.headers.get("content-type") or "").split(";", 1)[0].strip().lower()


# ---- streaming -----------------------------------------------------------------------------


def stream_chat(
    endpoint: Endpoint,
    model: str,
    messages,
    *,
    on_event: Callable[[tuple], None],
    cancel: CancelToken,
    tools=None,
    max_event_bytes: int = 1 << 20,
    max_episode_bytes: int = 4 << 20,
    max_calls: int = 64,
) -> StreamResult:
    """Stream one chat completion; see the module docstring.

    on_event receives ("content", text), ("reasoning", text) and ("usage", dict) in the
    calling (streamer) thread, coalesced per read: the consecutive deltas of one kind from
    the events of one read arrive as one (content and reasoning keep their order; the
    bounds are checked per delta, exactly). Returns the StreamResult (cancelled=True, with
    what was delivered, after a cancel); raises ChatError with .partial=True when content
    or reasoning had already been delivered. Never retries a failure; the one request it
    may send twice is one a server refused for `"content": ""` in a tool-only assistant
    message (see _null_content_body).
    """
    _register_secrets(endpoint)
    url, headers, body = build_request(endpoint, model, messages, tools)
    ep = _Episode(on_event, cancel, max_episode_bytes, max_calls)
    if cancel.cancelled:
        return ep.result(cancelled=True)
    data = wire.body(body)  # the one place a request becomes bytes: always encodable
    resp = None

    def failed(exc: BaseException, phase: str) -> ChatError:
        err = errors.classify_exception(
            exc,
            base_url=endpoint.base_url,
            default_endpoint=endpoint.is_default,
            phase=phase,
            read_timeout=endpoint.read_timeout,
            connect_timeout=endpoint.connect_timeout,
        )
        if phase == "stream" and not ep.events and err.kind == "connection":
            # the body broke off before its first event (llama-cpp-python when the model
            # fails after the status line): a server failure, not a network one
            err = errors.empty_stream(cause=err.message)
        err.partial = ep.delivered
        return err

    # The same conversation with null instead of "" in tool-only assistant messages, for
    # the servers that refuse "" (see conversation.assistant_message): sent at once to an
    # endpoint known to need it, else only after a 400 that says so.
    null_data = _null_content_body(body)
    if null_data is not None and endpoint.base_url in _NULL_CONTENT:
        data, null_data = null_data, None

    try:
        while True:
            try:
                resp = _open("POST", url, headers, data, endpoint, cancel)
            except Exception as exc:
                if cancel.cancelled:
                    return ep.result(cancelled=True)
                if transport.is_net_error(exc):
                    raise failed(exc, "connect") from exc
                raise
            if cancel.cancelled:
                return ep.result(cancelled=True)

            read, batched = resp.read, resp.batched
            status = resp.status_code
            mtype = _media_type(resp)
            if status < 300:
                break
            raw_body = _read_error_body(read)
            if cancel.cancelled:
                return ep.result(cancelled=True)
            if status == 400 and null_data is not None and errors.refuses_empty_content(raw_body):
                # nothing was generated: the request was refused for its form alone
                _NULL_CONTENT.add(endpoint.base_url)
                data, null_data = null_data, None
                _close(resp)
                resp = None
                continue
            raise errors.classify_http(
                status,
                resp.headers,
                raw_body,
                base_url=endpoint.base_url,
                model=model,
                api_key_env=endpoint.api_key_env,
                key_set=bool(endpoint.api_key),
                default_endpoint=endpoint.is_default,
            )
        try:
            _consume(resp, read, batched, mtype, ep, cancel, endpoint, model, max_event_bytes)
        except (_Cancelled, ChatError):
            raise
        except Exception as exc:
            # After a cancel the shut-down socket surfaces as whatever the read hit
            # (EOF mid-chunk, a closed file...): that is the cancel, not a failure.
            if cancel.cancelled:
                return ep.result(cancelled=True)
            if transport.is_net_error(exc):
                if ep.finish_reason is not None:
                    # The answer was complete (finish_reason came); only the usage chunk
                    # or [DONE] went missing when the connection broke or stalled.
                    return ep.result()
                raise failed(exc, "stream") from exc
            raise
        return ep.result(cancelled=cancel.cancelled)
    except _Cancelled:
        return ep.result(cancelled=True)
    except ChatError as err:
        if cancel.cancelled:
            return ep.result(cancelled=True)
        ep.flush()  # the text accepted before the failure is delivered, then the error
        err.partial = err.partial or ep.delivered
        raise
    finally:
        cancel._detach_all()
        _close(resp)


def _open(method: str, url: str, headers: dict, data: bytes | None, endpoint: Endpoint,
          cancel: CancelToken) -> transport.Response:
    return transport.open_request(method, url, headers, data, connect_timeout=endpoint.connect_timeout,
                                  read_timeout=endpoint.read_timeout, cancel=cancel, read_size=READ_SIZE)


def _close(resp) -> None:
    """Close the response and its connection (never back to a pool)."""
    # closing must never mask the real outcome
    if resp is not None:
        with contextlib.suppress(Exception):
            resp.close()


def _consume(
    resp, read, batched, mtype, ep: _Episode, cancel, endpoint, model, max_event_bytes
) -> None:
    """Read the 2xx body: SSE, a whole JSON completion, or something that is neither.
    Only an SSE stream read by plain_reader (`batched`) pauses between small reads."""
    first = b""
    if mtype not in ("text/event-stream",):
        # Unlabelled or mislabelled bodies: decide by the first non-blank byte.
        while not first.strip():
            more = read()
            if cancel.cancelled:
                raise _Cancelled
            if not more:
                break
            first += more
        lead = first.lstrip()[:1]
        if errors.looks_like_html(first, mtype) or lead == b"<":
            raise errors.classify_http(
                resp.status_code,
                resp.headers,
                first[: ERROR_BODY_MAX],
                base_url=endpoint.base_url,
                model=model,
                api_key_env=endpoint.api_key_env,
                key_set=bool(endpoint.api_key),
                default_endpoint=endpoint.is_default,
            )
        if mtype.endswith("json") or lead in (b"{", b"["):
            _consume_json(first, read, ep, cancel, max_event_bytes)
            return
    if batched:
        read = _coalescing(read, cancel)
    _consume_sse(first, read, ep, cancel, max_event_bytes)


def _consume_json(first: bytes, read, ep: _Episode, cancel, max_event_bytes: int) -> None:
    limit = ep.max_bytes + max_event_bytes  # the answer's bound plus room for the envelope
    rest, more = _read_capped(read, limit - len(first)) if len(first) <= limit else (b"", True)
    if cancel.cancelled:
        raise _Cancelled
    if more:
        raise errors.bound(
            f"the answer exceeded {errors.human_size(ep.max_bytes)} (a non-streamed reply); "
            "the connection was closed",
            "ask for a shorter answer or split the task into smaller steps",
        )
    if not (first + rest).strip():
        raise errors.empty_stream()
    text = (first + rest).decode("utf-8", "replace")
    try:
        obj = json.loads(text)
    except ValueError:
        raise errors.bad_json(text, where="a reply") from None
    _json_answer(obj, text, ep)


def _json_answer(obj, text: str, ep: _Episode) -> None:
    """A whole JSON body instead of a stream: a chat.completion (a server that ignored
    stream: true) or an error object inside a 200."""
    if isinstance(obj, list) and obj and isinstance(obj[0], dict) and _in_band_error(obj[0]):
        raise errors.stream_error(obj)  # [{"error": {...}}]: Gemini's shape
    if not isinstance(obj, dict):
        raise errors.bad_json(text, where="a reply")
    if _in_band_error(obj):
        raise errors.stream_error(obj)
    if not isinstance(obj.get("choices"), list):
        raise errors.bad_json(text, where="a 200 reply that is neither a chat completion nor an error")
    ep.events += 1
    ep.completion(obj)
    _check_finish(obj, ep)


def _in_band_error(obj: dict) -> bool:
    """An error reported inside a 200, in the shapes servers use: {"error": {...}} or
    {"error": "..."} (OpenAI, OpenRouter with choices[].finish_reason "error", vLLM,
    llama.cpp, Ollama, LiteLLM), {"object": "error", "message": ...} (older vLLM),
    {"type": "error", "error": {...}} (Anthropic-style), {"error_type", "error_message"}
    without choices (vLLM-based providers such as Venice)."""
    if obj.get("error"):
        return True
    if obj.get("object") == "error" or obj.get("type") == "error":
        return True
    return "choices" not in obj and ("error_message" in obj or "error_type" in obj)


def _check_finish(obj: dict, ep: _Episode) -> None:
    """finish_reason "error" (OpenRouter, vLLM) ends the answer as a failure even when the
    chunk carries no error object."""
    if ep.finish_reason == "error":
        raise errors.stream_error(
            obj, partial=ep.delivered,
            default='the answer ended with finish_reason "error" and no message',
        )


_SSE_FIELD = re.compile(rb"(?:data|event|id|retry)(?::|$)")
HEAD_MAX = 64 << 10  # bytes of a body kept until its first event, to name what it was


def _consume_sse(first: bytes, read, ep: _Episode, cancel, max_event_bytes: int) -> None:
    parser = SSEParser(max_event_bytes=max_event_bytes)
    data = first
    head = bytearray()  # the body until its first event, for a body that never has one
    while True:
        if cancel.cancelled:
            raise _Cancelled
        if data:
            if not ep.events and len(head) < HEAD_MAX:
                head += data[: HEAD_MAX - len(head)]
            step_aside()
            try:
                events = parser.feed(data)
            except SSEError as exc:
                raise _event_bound(exc, max_event_bytes, ep) from None
            done = _handle(events, ep, cancel)
            ep.flush()  # one delivery per kind per read
            if done:
                return
        data = read()
        if not data:
            break
    if cancel.cancelled:
        raise _Cancelled
    try:
        events = parser.finish()
    except SSEError as exc:
        raise _event_bound(exc, max_event_bytes, ep) from None
    _handle(events, ep, cancel)
    if not ep.events:
        _no_events(bytes(head), ep)
        return
    # A stream may end without [DONE] (several servers do) once finish_reason came. With
    # neither, the server stopped mid-answer (Ollama's way of failing after the first
    # token): the text is kept and marked incomplete, and tool calls from a cut stream are
    # never run (their arguments may be complete and still not the whole plan).
    if ep.finish_reason is None and toolcalls.count(ep.acc):
        raise ChatError(
            "connection",
            "the stream ended in the middle of the answer (no finish_reason, no [DONE]) "
            f"after {toolcalls.count(ep.acc)} tool call(s) had started; none of them was run",
            "try again; if it keeps happening, the server or a proxy is cutting long responses",
            partial=ep.delivered,
        )
    if ep.finish_reason is None:
        raise errors.cut_stream(partial=ep.delivered)


def _no_events(head: bytes, ep: _Episode) -> None:
    """A 200 body that ended without one stream event. Nothing, or only keep-alives
    (comments, blank lines, empty `data:`, named pings), is a server failure; a bare JSON
    object is an error or a whole completion sent with the stream's content type; anything
    else is not a stream."""
    lines = [ln for ln in head.replace(b"\r", b"\n").split(b"\n") if ln.strip() and not ln.startswith(b":")]
    if all(_SSE_FIELD.match(ln) for ln in lines):
        raise errors.empty_stream()
    text = head.decode("utf-8", "replace")
    if head.lstrip()[:1] in (b"{", b"["):
        try:
            obj = json.loads(text)
        except ValueError:
            raise errors.bad_json(text, where="a 200 body with no stream events") from None
        _json_answer(obj, text, ep)
        return
    raise errors.bad_json(text, where="a 200 body with no stream events")


def _event_bound(exc: SSEError, limit: int, ep: _Episode) -> ChatError:
    return errors.bound(
        f"one stream event exceeded {errors.human_size(limit)}; the stream was closed",
        "the server sent an oversized event; try again, or another model or server",
        partial=ep.delivered,
    )


def _handle(events, ep: _Episode, cancel) -> bool:
    """Apply parsed events; True at data: [DONE]."""
    for ev in events:
        if cancel.cancelled:
            raise _Cancelled
        step_aside()  # a key on its way to the screen goes first (dashfloat/priority.py)
        payload = ev.data
        ep.events += 1
        if ev.event == "error":
            try:
                obj = json.loads(payload)
            except ValueError:
                obj = payload
            raise errors.stream_error(obj, partial=ep.delivered)
        if ev.event not in ("message", ""):
            ep.events -= 1
            continue  # pings and other named events some servers add
        stripped = payload.strip()
        if not stripped:
            ep.events -= 1  # `data:` with nothing in it: a keep-alive, not an event
            continue
        if stripped == "[DONE]":
            return True
        try:
            obj = json.loads(payload)
        except ValueError:
            raise errors.bad_json(payload, partial=ep.delivered) from None
        if not isinstance(obj, dict):
            raise errors.bad_json(payload, partial=ep.delivered)
        if _in_band_error(obj):
            raise errors.stream_error(obj, partial=ep.delivered)
        ep.chunk(obj)
        _check_finish(obj, ep)
    return False


# ---- models --------------------------------------------------------------------------------


def list_models(endpoint: Endpoint) -> list[str]:
    """GET {base_url}/models: the sorted model ids. ChatError on failure (same taxonomy)."""
    return _model_ids(_get_json(endpoint, endpoint.base_url.rstrip("/") + "/models", "a model list"))


def context_window(endpoint: Endpoint, model: str) -> tuple[int, str] | None:
    """(tokens, where it came from) of `model`'s context window when the endpoint states it,
    else None. GET {base_url}/models (vLLM, llama.cpp, OpenRouter, Groq, Mistral, Together...:
    see context.window_of); LM Studio's OpenAI list says nothing, so for it (entries owned by
    "organization_owner") its own API is asked: /api/v1/models (0.4), then /api/v0/models/ID.
    ChatError when the model list itself fails."""
    from dashfloat import context

    base = endpoint.base_url.rstrip("/")
    obj = _get_json(endpoint, base + "/models", "a model list")
    windows = context.windows_of(obj)
    found = windows.get(model) or (windows.get(f"{model}:latest") if ":" not in model else None)
    if found:
        return found, "the endpoint's model list"
    items = obj.get("data") if isinstance(obj, dict) else None
    lmstudio = any(isinstance(i, dict) and i.get("owned_by") == "organization_owner" for i in items or ())
    if lmstudio and base.endswith("/v1"):
        root = base[: -len("/v1")]
        from urllib.parse import quote

        for url in (root + "/api/v1/models", root + "/api/v0/models/" + quote(model, safe="")):
            try:
                answer = _get_json(endpoint, url, "LM Studio's model list")
            except ChatError:
                continue
            found = context.windows_of(answer).get(model) if not (isinstance(answer, dict) and "id" in answer) \
                else context.window_of(answer)
            if found:
                return found, "LM Studio's model list"
    return None


def _get_json(endpoint: Endpoint, url: str, where: str):
    """GET `url` with the endpoint's headers: the parsed JSON. ChatError on failure."""
    _register_secrets(endpoint)
    headers = _headers(endpoint, "application/json")
    headers.pop("Content-Type", None)
    resp = None

    def http_error(status: int, body: bytes) -> ChatError:
        return errors.classify_http(
            status,
            resp.headers,
            body,
            base_url=endpoint.base_url,
            model="",
            api_key_env=endpoint.api_key_env,
            key_set=bool(endpoint.api_key),
            default_endpoint=endpoint.is_default,
            url=url,
        )

    try:
        try:
            resp = _open("GET", url, headers, None, endpoint, CancelToken())
            read = resp.read
            if resp.status_code >= 300:
                raise http_error(resp.status_code, _read_error_body(read))
            body, more = _read_capped(read, MODELS_BODY_MAX)
        except ChatError:
            raise
        except Exception as exc:
            if not transport.is_net_error(exc):
                raise
            raise errors.classify_exception(
                exc,
                base_url=endpoint.base_url,
                default_endpoint=endpoint.is_default,
                phase="connect" if resp is None else "stream",
                read_timeout=endpoint.read_timeout,
                connect_timeout=endpoint.connect_timeout,
            ) from exc
        if more:
            raise errors.bound(
                f"{where} exceeded {errors.human_size(MODELS_BODY_MAX)}",
                "check that base_url points at an OpenAI-compatible API",
            )
        if errors.looks_like_html(body, _media_type(resp)):
            raise http_error(resp.status_code, body[:ERROR_BODY_MAX])
        text = body.decode("utf-8", "replace")
        try:
            return json.loads(text)
        except ValueError:
            raise errors.bad_json(text, where=where) from None
    finally:
        _close(resp)


def _model_ids(obj) -> list[str]:
    items = obj
    if isinstance(obj, dict):
        items = obj.get("data")
        if not isinstance(items, list):
            items = obj.get("models")  # a few servers use "models"
    if not isinstance(items, list):
        raise errors.bad_json(json.dumps(obj)[:200], where="a model list without `data`")
    ids = set()
    for item in items:
        if isinstance(item, str):
            ids.add(item)
        elif isinstance(item, dict):
            for key in ("id", "name", "model"):
                if isinstance(item.get(key), str) and item[key]:
                    ids.add(item[key])
                    break
    return sorted(ids)
