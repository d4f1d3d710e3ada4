"""A scripted OpenAI-compatible server for tests, benchmarks and end-to-end runs.

Real HTTP/1.1 on 127.0.0.1 (an ephemeral port), real SSE bytes, scripted chunking and
pacing, recorded requests. Nothing here needs the internet or an LLM.

    with ScriptedServer() as srv:
        srv.push(sse_reply(["Hel", "lo"], usage={"prompt_tokens": 3, "completion_tokens": 2}))
        ... point the client at srv.url ...
        srv.wait_requests(1)

Each POST to /v1/chat/completions takes the next queued `Reply` (FIFO); when the queue is
empty it asks `responder`, and without one answers 500 with a JSON error. A queued item or the
responder may be a callable: it gets the recorded request (the dict `requests` holds, with
its parsed `json`) and returns the Reply, so a script can answer what was asked (a model
that reads its conversation, a summariser, a server that counts tokens). GET /v1/models serves `models` (or
`models_reply`), and a path in `routes` its Reply (a server's own API beside the OpenAI one).
Any other path is a JSON 404, like a real server with a wrong base_url.

`stop()` returns promptly even while replies are held or stalled: every wait inside a
handler polls the server's stop flag and notices a client that went away, and the live
connection sockets are shut down.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

__all__ = [
    "Reply",
    "ScriptedServer",
    "json_reply",
    "markdown_answer",
    "raw_reply",
    "sse_chunks",
    "sse_reply",
]

_POLL = 0.02  # seconds between checks while holding or stalling


@dataclass
class Reply:
    """One scripted HTTP response.

    status, headers: the status line and headers (Content-Type defaults to
        text/event-stream; framing headers are added by the server).
    chunks: the body, written one `sendall` per element (so one TCP flush each).
    delay: seconds to wait before each chunk; rate: chunks per second (overrides delay).
    chunked: Transfer-Encoding: chunked (one HTTP chunk per element); when False the body
        has no length and ends when the server closes the connection (Connection: close).
    length: send Content-Length (the body's total size) instead; overrides `chunked`.
    hold: before the FIRST chunk (headers already sent), wait until this event is set.
    waits: {i: event}: before chunk i, wait until the event is set (hold == waits[0]).
    stall_after: after N chunks stop sending and keep the connection open until the
        client goes away or the server stops.
    gzip: Content-Encoding: gzip, each chunk compressed and sync-flushed on its own so
        every element still reaches the client as soon as it is sent.
    hold_headers: wait until this event is set before sending even the status line (a
        server still loading the model).
    abort: after the chunks, close the connection without ending the body (no chunked
        terminator): what a server whose handler raised after the status line sends.
    """

    status: int = 200
    headers: dict = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    delay: float = 0.0
    rate: float | None = None
    chunked: bool = True
    hold: threading.Event | None = None
    stall_after: int | None = None
    waits: dict[int, threading.Event] = field(default_factory=dict)
    length: bool = False
    gzip: bool = False
    hold_headers: threading.Event | None = None
    abort: bool = False


# ---- building replies ------------------------------------------------------------------


def _chunk_obj(delta: dict, *, model: str, finish_reason=None, n: int = 0) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1700000000 + n,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def _event(obj, nl: str) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}{nl}{nl}".encode()


def sse_chunks(
    pieces: list[str],
    *,
    reasoning: list[str] = (),
    tool_calls: list[list[dict]] = (),
    usage: dict | None = None,
    finish_reason: str | None = "stop",
    model: str = "test-model",
    done: bool = True,
    crlf: bool = False,
    reasoning_field: str = "reasoning_content",
) -> list[bytes]:
    """An OpenAI-style chat.completion.chunk stream, one SSE event (one list element) each:
    a role delta first, then one chunk per reasoning piece (in `reasoning_field`), one per
    content piece, one per tool_calls delta list, a finish chunk with `finish_reason` (none
    when it is None), a usage chunk with `choices: []` when `usage` is given, and
    `data: [DONE]` when `done`. `crlf` uses CRLF line endings."""
    nl = "\r\n" if crlf else "\n"
    out = [_event(_chunk_obj({"role": "assistant", "content": ""}, model=model), nl)]
    n = 1
    for r in reasoning:
        out.append(_event(_chunk_obj({reasoning_field: r}, model=model, n=n), nl))
        n += 1
    for p in pieces:
        out.append(_event(_chunk_obj({"content": p}, model=model, n=n), nl))
        n += 1
    for deltas in tool_calls:
        out.append(_event(_chunk_obj({"tool_calls": deltas}, model=model, n=n), nl))
        n += 1
    if finish_reason is not None:
        out.append(_event(_chunk_obj({}, model=model, finish_reason=finish_reason, n=n), nl))
    if usage is not None:
        out.append(
            _event(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 1700000000 + n,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                },
                nl,
            )
        )
    if done:
        out.append(_event("[DONE]", nl))
    return out


def sse_reply(pieces: list[str], **kw) -> Reply:
    """A 200 text/event-stream Reply of `sse_chunks(pieces, ...)`. Keyword arguments that
    are Reply fields (delay, rate, chunked, hold, stall_after, waits, gzip, headers,
    status) go to the Reply, the rest to `sse_chunks`."""
    reply_kw = {k: kw.pop(k) for k in list(kw) if k in _REPLY_FIELDS}
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    headers.update(reply_kw.pop("headers", {}) or {})
    return Reply(headers=headers, chunks=sse_chunks(pieces, **kw), **reply_kw)


def json_reply(status: int, obj, headers: dict | None = None) -> Reply:
    """A JSON body with Content-Length (how real servers send errors and non-streamed
    completions)."""
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return Reply(status=status, headers=h, chunks=[json.dumps(obj).encode()], length=True)


def raw_reply(status: int, body: bytes, content_type: str) -> Reply:
    """Any bytes with the given content type and a Content-Length."""
    return Reply(status=status, headers={"Content-Type": content_type}, chunks=[body], length=True)


_REPLY_FIELDS = {
    "status",
    "headers",
    "delay",
    "rate",
    "chunked",
    "hold",
    "stall_after",
    "waits",
    "length",
    "gzip",
    "hold_headers",
    "abort",
}


# ---- a realistic answer ----------------------------------------------------------------

_SECTION = """\
## {n}. Reading the configuration

The loader reads **`.dashfloat/config.toml`** first, then the environment. A value set in
`OPENAI_BASE_URL` wins over the file, and `--base-url` wins over both. This keeps the
*common case* short while the **unusual** one stays possible.

- Keys are validated before the first request, so a typo fails early.
- Unknown keys produce a warning, not an error.
- The `api_key_env` key names the variable that holds the key; the key itself never
  lives in the file.

1. Parse the file with `tomllib`.
2. Merge the environment on top.
3. Apply the command-line flags last.

```python
def load(path: Path) -> Config:
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    cfg = Config(**data.get("dashfloat", {{}}))
    for key, value in os.environ.items():
        if key.startswith("DASHFLOAT_"):
            cfg = cfg.with_env(key, value)
    return cfg
```

Run the checks from a shell to see what the loader decided:

```bash
export OPENAI_BASE_URL=http://localhost:11434/v1
dashfloat --print-config | grep -E 'base_url|model'
for f in .dashfloat/*.toml; do echo "$f"; done
```

| Setting | Source | Default |
| --- | --- | --- |
| `base_url` | file, env, flag | `http://localhost:11434/v1` |
| `model` | file, flag | `llama3.2` |
| `read_timeout` | file | `120` s |

The resolved settings, as the `--print-config` flag shows them:

```json
{{
  "base_url": "http://localhost:11434/v1",
  "model": "llama3.2",
  "timeouts": {{"connect": 10, "read": 120}},
  "section": {n}
}}
```

> Note: a trailing slash on `base_url` is harmless; a missing `/v1` is not.

"""


def markdown_answer(tokens: int = 2000) -> list[str]:
    """A deterministic, realistic Markdown answer split into about `tokens` pieces
    (each piece: leading whitespace plus one word, like a tokenizer's output). Always
    whole sections: headings, paragraphs with **bold** and `code`, bullet and numbered
    lists, three fenced code blocks (python, bash, json) and a table, so every fence
    closes whatever the size."""
    import re

    word = re.compile(r"\s*\S+|\s+$")
    pieces: list[str] = ["# Configuration, explained\n\n"]
    n = 1
    while len(pieces) < tokens:
        text = _SECTION.format(n=n)
        pieces.extend(word.findall(text))
        n += 1
    return pieces


# ---- the server ------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, owner: ScriptedServer):
        self.owner = owner
        self.conns: set[socket.socket] = set()
        self.conns_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)
        # poll() said a connection waits, then accept(): never a block that keeps stop()
        # (shutdown waits for serve_forever) waiting forever; a connection that is gone
        # by then is an OSError, which socketserver takes as nothing to accept (a CI run
        # hung in this accept once, in a test's teardown)
        self.socket.setblocking(False)

    def process_request(self, request, client_address):
        with self.conns_lock:
            self.conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.conns_lock:
            self.conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):  # a client hung up: not news
        pass


class _ClientGone(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeserver/1"
    # TCP_NODELAY, as the servers it plays set it (llama.cpp's, uvicorn's, Go's net/http):
    # with Nagle's algorithm on, a reply's first event waits for the client's delayed ACK of
    # the headers on every request of a kept-alive connection after the first: 44 ms here,
    # which every "first token" figure of the benches measured instead of DashFloat.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # keep test output clean
        pass

    @property
    def owner(self) -> ScriptedServer:
        return self.server.owner

    # -- request side
    def _record(self, body: bytes | None) -> dict:
        parsed = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
        req = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "json": parsed,
            "body": body or b"",
            "time": time.monotonic(),  # when it was read (the benchmark's time to first request)
        }
        self.owner._record(req)
        return req

    def _read_body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def do_POST(self):
        body = self._read_body()
        req = self._record(body)
        if self.path.rstrip("/").endswith("/v1/chat/completions"):
            reply = self.owner._next_reply(req)
        else:
            reply = _not_found(self.path)
        self._serve(reply)

    def do_GET(self):
        self._record(None)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in self.owner.routes:
            reply = self.owner.routes[path]
        elif path.endswith("/v1/models"):
            reply = self.owner.models_reply or json_reply(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "owned_by": "fake"} for m in self.owner.models
                    ],
                },
            )
        else:
            reply = _not_found(self.path)
        self._serve(reply)

    # -- response side
    def _gone(self) -> bool:
        """True when the client closed its end (EOF readable on the socket)."""
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if not r:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _wait(self, event: threading.Event | None = None, seconds: float | None = None) -> None:
        """Wait for `event` (or `seconds`), polling for server stop and client exit."""
        stopping = self.owner._stopping
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            if stopping.is_set() or self._gone():
                raise _ClientGone
            if event is not None and event.is_set():
                return
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                step = min(_POLL, left)
            else:
                step = _POLL
            if event is not None:
                event.wait(step)
            else:
                stopping.wait(step)

    def _serve(self, reply: Reply) -> None:
        try:
            self._serve_inner(reply)
        except (_ClientGone, BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _serve_inner(self, reply: Reply) -> None:
        if reply.hold_headers is not None:
            self._wait(reply.hold_headers)
        headers = dict(reply.headers)
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "text/event-stream"
        comp = None
        if reply.gzip:
            comp = zlib.compressobj(6, zlib.DEFLATED, 31)
            headers["Content-Encoding"] = "gzip"
        self.send_response(reply.status)
        for k, v in headers.items():
            self.send_header(k, str(v))
        if reply.length:
            total = b"".join(reply.chunks)
            if comp is not None:
                total = comp.compress(total) + comp.flush()
                comp = None
            self.send_header("Content-Length", str(len(total)))
            chunks, framing = [total], "length"
        elif reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
            chunks, framing = list(reply.chunks), "chunked"
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
            chunks, framing = list(reply.chunks), "close"
        self.end_headers()
        self.wfile.flush()

        interval = (1.0 / reply.rate) if reply.rate else reply.delay
        waits = dict(reply.waits)
        if reply.hold is not None:
            waits.setdefault(0, reply.hold)
        for i, chunk in enumerate(chunks):
            if reply.stall_after is not None and i >= reply.stall_after:
                break
            if i in waits:
                self._wait(waits[i])
            if interval > 0:
                self._wait(seconds=interval)
            if comp is not None:
                chunk = comp.compress(chunk) + comp.flush(zlib.Z_SYNC_FLUSH)
            self._write(chunk, framing)
        if reply.stall_after is not None:
            self._wait(threading.Event())  # until the client leaves or the server stops
        if comp is not None:
            self._write(comp.flush(), framing)
        if reply.abort:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif framing == "chunked":
            self.connection.sendall(b"0\r\n\r\n")
        self.owner._served()

    def _write(self, data: bytes, framing: str) -> None:
        if not data:
            return
        if framing == "chunked":
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self.connection.sendall(data)


def _not_found(path: str) -> Reply:
    return json_reply(
        404,
        {"error": {"message": f"fake server: no route for {path}", "type": "not_found"}},
    )


class ScriptedServer:
    """A threaded OpenAI-compatible server; a context manager (also start()/stop())."""

    def __init__(self, models: list[str] | None = None):
        self.models: list[str] = list(models) if models is not None else ["test-model"]
        self.models_reply: Reply | None = None
        self.routes: dict[str, Reply] = {}  # GET path (no query) -> Reply, before /v1/models
        # {"method", "path", "headers" (keys lower-cased), "json" (parsed body or None),
        #  "body" (raw bytes), "time" (time.monotonic() when read)}, in arrival order
        self.requests: list[dict] = []
        self._replies: list = []  # Reply, or callable(request) -> Reply
        self.responder = None  # callable(request) -> Reply, when nothing is queued
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.served = 0  # responses written to the end
        self.served_at: list[float] = []  # time.monotonic() when each was written to the end
        self.url = ""

    # -- lifecycle
    def start(self) -> Self:
        if self._server is not None:
            return self
        self._server = _Server(self)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fakeserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server = self._server
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with server.conns_lock:
            conns = list(server.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server = None
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    # -- scripting
    def push(self, *replies) -> None:
        """Queue replies: each a Reply, or a callable(request) -> Reply."""
        with self._cond:
            self._replies.extend(replies)

    def _next_reply(self, req: dict) -> Reply:
        with self._cond:
            item = self._replies.pop(0) if self._replies else self.responder
        if item is not None:
            if callable(item):
                try:
                    return item(req)
                except Exception as exc:  # a broken script: a 500 that says why, not a hang
                    return json_reply(500, {"error": {"message": f"fake server: the scripted reply failed: {exc!r}",
                                                      "type": "server_error"}})
            return item
        return json_reply(
            500,
            {"error": {"message": "fake server: no scripted reply", "type": "server_error"}},
        )

    def _record(self, req: dict) -> None:
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()

    def _served(self) -> None:
        with self._cond:
            self.served += 1
            self.served_at.append(time.monotonic())
            self._cond.notify_all()

    def wait_requests(self, n: int, timeout: float = 5.0) -> list[dict]:
        """Wait until at least `n` requests were received; return them all."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(
                    f"fake server: {len(self.requests)} request(s) after {timeout} s, wanted {n}"
                )
            return list(self.requests)
