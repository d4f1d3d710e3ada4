"""stream_chat / list_models against the scripted server: real HTTP, real SSE bytes.

No fixed sleeps: tests wait for conditions (events, recorded requests, thread ends) with
generous timeouts, and assert on measured durations only as upper bounds.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest

import dashfloat.llm.client as client
from dashfloat.llm import transport
from dashfloat.llm.client import (
    CancelToken,
    Endpoint,
    build_request,
    list_models,
    stream_chat,
)
from dashfloat.llm.errors import ChatError
from tests.fakeserver import (
    Reply,
    ScriptedServer,
    json_reply,
    markdown_answer,
    raw_reply,
    sse_chunks,
    sse_reply,
)
from tests.unit.test_priority import CountingFree

MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(params=["direct", "via-requests"])
def fake_server(request, monkeypatch):
    """The scripted server, each test run twice: a plain http:// URL goes straight through
    http.client (llm/transport.py), and once more through requests (llm/viarequests.py,
    what https and proxies use), so the two paths cannot drift apart."""
    if request.param == "via-requests":
        monkeypatch.setattr(transport, "direct_ok", lambda url, headers, environ=None: False)
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


def ev(obj) -> bytes:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


def chunk(delta=None, *, finish=None, **extra) -> dict:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    obj.update(extra)
    return obj


def endpoint(server, **kw) -> Endpoint:
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("read_timeout", 5.0)
    return Endpoint(server.url, **kw)


def run(server, *, model="test-model", messages=MSGS, tools=None, cancel=None, on_event=None, ep=None, **kw):
    events: list[tuple] = []
    result = stream_chat(
        ep or endpoint(server),
        model,
        messages,
        on_event=on_event or events.append,
        cancel=cancel or CancelToken(),
        tools=tools,
        **kw,
    )
    return result, events


def merged(events: list[tuple]) -> list[tuple]:
    """The events with consecutive text deltas of one kind joined: what a stream delivers
    whichever way its reads happened to batch the events."""
    out: list[tuple] = []
    for e in events:
        if out and e[0] in ("content", "reasoning") and out[-1][0] == e[0]:
            out[-1] = (e[0], out[-1][1] + e[1])
        else:
            out.append(e)
    return out


def fail(server, **kw) -> tuple[ChatError, list]:
    events: list[tuple] = []
    with pytest.raises(ChatError) as info:
        run(server, on_event=events.append, **kw)
    err = info.value
    assert "\n" not in str(err) and err.hint
    return err, events


class Worker(threading.Thread):
    """Runs stream_chat in a thread, as the app does; keeps the result or the error."""

    def __init__(self, server, **kw):
        super().__init__(daemon=True)
        self.server, self.kw = server, kw
        self.result = self.error = None
        self.finished_at = None

    def run(self):
        try:
            self.result = run(self.server, **self.kw)[0]
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc
        finally:
            self.finished_at = time.monotonic()


# ---- deltas ----------------------------------------------------------------------------


def test_the_stream_steps_aside_while_the_ui_is_awake(fake_server, monkeypatch):
    """dashfloat/priority.py: while the UI thread works (a key, a frame) the streamer
    parses nothing; when it sleeps again the stream goes on, and nothing is lost."""
    from dashfloat import priority

    monkeypatch.setattr(priority, "MAX_WAIT", 30.0)
    fake_server.push(sse_reply([f"piece {i} " for i in range(50)]))
    got = []
    priority.busy()
    try:
        worker = Worker(fake_server, on_event=got.append)
        worker.start()
        worker.join(0.3)
        assert worker.is_alive() and got == []  # waiting at its first event
    finally:
        priority.done()
    worker.join(10)
    assert worker.error is None and not worker.is_alive()
    assert "".join(e[1] for e in got if e[0] == "content") == "".join(f"piece {i} " for i in range(50))


class _UiDoneAtOnce(CountingFree):
    """priority._free whose wait() says the UI is done at once (never blocks) and counts each
    wait, busy() or not; `first` is set at the first one."""

    def __init__(self):
        super().__init__(ready=True)
        self.first = threading.Event()

    def wait(self, timeout=None) -> bool:
        self.first.set()
        return super().wait(timeout)

    def clear(self) -> None:
        pass


def test_the_stream_steps_aside_before_each_read_and_each_event(fake_server, monkeypatch):
    """While the UI is awake the streamer steps aside before it parses a read, even one that
    completes no event (a keep-alive), and again before each event of a read that holds
    many. The server sends the events only once the streamer has stepped aside for the
    keep-alive: a streamer that parsed it without stepping aside would wait for them until
    its read timeout."""
    from dashfloat import priority

    spy = _UiDoneAtOnce()
    monkeypatch.setattr(priority, "_free", spy)
    monkeypatch.setattr(priority, "_run_until", 0.0)
    events = sse_chunks([f"piece {i} " for i in range(10)])
    fake_server.push(Reply(headers={"Content-Type": "text/event-stream"},
                           chunks=[b": keep-alive\n\n", b"".join(events)], waits={1: spy.first}))
    priority.busy()
    try:
        result, _ = run(fake_server, ep=endpoint(fake_server, read_timeout=2.0))
    finally:
        priority.done()
    assert result.content == "".join(f"piece {i} " for i in range(10))
    assert spy.waits >= len(events) + 1, spy.waits  # the keep-alive's read, then every event



def test_content_and_reasoning_are_separate_and_in_order(fake_server):
    fake_server.push(
        sse_reply(["Hel", "lo", " world"], reasoning=["Let me ", "think."], usage={"total_tokens": 9})
    )
    result, events = run(fake_server)
    # deltas of one kind may come coalesced (one per read), never mixed or reordered
    assert merged(events) == [
        ("reasoning", "Let me think."),
        ("content", "Hello world"),
        ("usage", {"total_tokens": 9}),
    ]
    assert result.content == "Hello world"
    assert result.reasoning == "Let me think."
    assert result.finish_reason == "stop"
    assert result.usage == {"total_tokens": 9}
    assert result.cancelled is False and result.tool_calls == []
    assert json.loads(json.dumps(result.as_dict())) == result.as_dict()


def test_reasoning_field_openrouter_ollama_style(fake_server):
    fake_server.push(sse_reply(["ok"], reasoning=["hmm"], reasoning_field="reasoning"))
    result, events = run(fake_server)
    assert result.reasoning == "hmm" and result.content == "ok"
    assert ("reasoning", "hmm") in events


def test_reasoning_sent_under_both_names_is_not_doubled(fake_server):
    # vLLM's compatibility mode fills reasoning and reasoning_content with the same text
    fake_server.push(
        Reply(chunks=[ev(chunk({"reasoning": "a", "reasoning_content": "a"})), ev(chunk({"content": "b"})), ev("[DONE]")])
    )
    result, events = run(fake_server)
    assert result.reasoning == "a" and result.content == "b"
    assert events == [("reasoning", "a"), ("content", "b")]


def test_usage_with_empty_choices_missing_choices_and_x_groq(fake_server):
    fake_server.push(
        Reply(
            chunks=[
                ev(chunk({"role": "assistant", "content": ""}, usage=None)),
                ev(chunk({"content": "x"}, usage=None)),
                ev({"id": "c1", "choices": []}),  # no usage: ignored
                ev({"id": "c1", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
                ev("[DONE]"),
            ]
        ),
        Reply(chunks=[ev(chunk({"content": "y"})), ev({"usage": {"total_tokens": 3}}), ev("[DONE]")]),
        Reply(
            chunks=[
                ev(chunk({"content": "z"})),
                ev(chunk({}, finish="stop", x_groq={"id": "req_1", "usage": {"total_tokens": 4}})),
                ev("[DONE]"),
            ]
        ),
    )
    result, events = run(fake_server)
    assert events == [("content", "x"), ("usage", {"prompt_tokens": 1, "completion_tokens": 1})]
    assert result.usage == {"prompt_tokens": 1, "completion_tokens": 1}
    result, _ = run(fake_server)
    assert result.content == "y" and result.usage == {"total_tokens": 3}
    result, _ = run(fake_server)
    assert result.content == "z" and result.usage == {"total_tokens": 4}
    assert result.finish_reason == "stop"


def test_tool_call_fragments_are_assembled(fake_server):
    fake_server.push(
        sse_reply(
            [],
            tool_calls=[
                [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}],
                [{"index": 0, "function": {"arguments": '{"pa'}}],
                [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}],
                [{"index": 0, "function": {"arguments": 'th": "a.py"}'}}],
            ],
            finish_reason="tool_calls",
        )
    )
    result, events = run(fake_server)
    assert events == []
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == [
        {"id": "call_a", "name": "read_file", "args": {"path": "a.py"}, "error": None},
        {"id": "call_b", "name": "list_directory", "args": {}, "error": None},
    ]


def test_stream_without_done_is_fine(fake_server):
    fake_server.push(sse_reply(["a", "b"], done=False))
    result, _ = run(fake_server)
    assert result.content == "ab" and result.finish_reason == "stop"


def test_last_event_without_blank_line_is_kept(fake_server):
    last = b'data: {"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}]}'
    fake_server.push(Reply(chunks=[ev(chunk({"content": "a"})), last]))
    result, _ = run(fake_server)
    assert result.content == "ab" and result.finish_reason == "stop"


def test_crlf_stream(fake_server):
    fake_server.push(sse_reply(["one", " two"], crlf=True, usage={"total_tokens": 2}))
    result, _ = run(fake_server)
    assert result.content == "one two" and result.usage == {"total_tokens": 2}


def test_comments_and_named_events_are_ignored(fake_server):
    fake_server.push(
        Reply(chunks=[b": OPENROUTER PROCESSING\n\n", b"event: ping\ndata: {}\n\n", ev(chunk({"content": "x"})), ev("[DONE]")])
    )
    result, _ = run(fake_server)
    assert result.content == "x"


def test_one_byte_chunks(fake_server):
    body = b"".join(sse_chunks(["héllo", " wörld ", "日本"], reasoning=["r"], crlf=True))
    fake_server.push(Reply(chunks=[body[i : i + 1] for i in range(len(body))]))
    result, _ = run(fake_server)
    assert result.content == "héllo wörld 日本" and result.reasoning == "r"


def test_utf8_split_across_chunks(fake_server):
    body = ev(chunk({"content": "→ 日本語 🎉"}))
    cut = body.index("本".encode()) + 1  # inside the 3-byte sequence
    emoji = body.index("🎉".encode()) + 2
    fake_server.push(Reply(chunks=[body[:cut], body[cut:emoji], body[emoji:], ev("[DONE]")]))
    result, _ = run(fake_server)
    assert result.content == "→ 日本語 🎉"


def test_connection_close_body_without_chunking(fake_server):
    fake_server.push(sse_reply(["a", "b"], chunked=False))
    result, _ = run(fake_server)
    assert result.content == "ab"


def test_gzip_stream(fake_server):
    fake_server.push(sse_reply(["a", "b"], gzip=True, usage={"total_tokens": 1}))
    result, _ = run(fake_server)
    assert result.content == "ab" and result.usage == {"total_tokens": 1}


def test_sse_labelled_text_plain_still_parses(fake_server):
    fake_server.push(Reply(headers={"Content-Type": "text/plain"}, chunks=sse_chunks(["ok"])))
    result, _ = run(fake_server)
    assert result.content == "ok"


def test_json_reply_when_the_server_ignores_stream(fake_server):
    fake_server.push(
        json_reply(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": "whole answer",
                            "reasoning_content": "thought",
                            "tool_calls": [
                                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            },
        )
    )
    result, events = run(fake_server)
    assert events == [
        ("reasoning", "thought"),
        ("content", "whole answer"),
        ("usage", {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
    ]
    assert result.tool_calls == [{"id": "call_1", "name": "read_file", "args": {"path": "x"}, "error": None}]
    assert result.finish_reason == "tool_calls"


def test_mistral_content_parts(fake_server):
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}, {"type": "text", "text": "ok"}]
    fake_server.push(Reply(chunks=[ev(chunk({"content": parts})), ev("[DONE]")]))
    result, _ = run(fake_server)
    assert result.reasoning == "hm" and result.content == "ok"


# ---- errors inside a 200 ---------------------------------------------------------------


def test_error_object_mid_stream_is_partial(fake_server):
    fake_server.push(
        Reply(
            chunks=[
                ev(chunk({"content": "start"})),
                ev({"error": {"message": "Upstream overloaded", "code": 502}, "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]}),
                ev(chunk({"content": "never"})),
            ]
        )
    )
    err, events = fail(fake_server)
    assert err.kind == "stream_error" and err.partial is True
    assert "Upstream overloaded" in err.message
    assert events == [("content", "start")]


def test_error_string_before_any_content_is_not_partial(fake_server):
    fake_server.push(Reply(chunks=[ev({"error": "thinking_budget is not supported"})]))
    err, _ = fail(fake_server)
    assert err.kind == "stream_error" and err.partial is False
    assert "thinking_budget" in err.message


def test_event_error(fake_server):
    fake_server.push(Reply(chunks=[ev(chunk({"content": "a"})), b'event: error\ndata: {"message": "model crashed"}\n\n']))
    err, _ = fail(fake_server)
    assert err.kind == "stream_error" and err.partial and "model crashed" in err.message


# Each server's own way of failing inside a 200, byte for byte from its source:
#  llama.cpp tools/server (server_sent_event(sink, "error", ...) in older builds; newer ones
#    answer the first failure with an HTTP error and later ones with data: {"error": ...}
#    and no [DONE]); its overflow error carries type exceed_context_size_error and n_ctx.
#  llama-cpp-python (llama_cpp/server/app.py + errors.py): the stream's 200 goes out before
#    the model runs; a failure then leaves a body of sse-starlette pings, or no body at all.
#  Ollama (middleware/openai.go): a failure after the first token is written to the
#    OpenAI layer as one more chunk with an empty delta, then the body ends (no
#    finish_reason, no [DONE]).
#  vLLM (serving_chat.py create_streaming_error_response): data: {"error": {...}} then
#    [DONE]; older versions {"object": "error", "message": ...}.
#  OpenRouter: ": OPENROUTER PROCESSING" comments, then an error with finish_reason "error".

LLAMACPP_OVERFLOW = {
    "code": 400,
    "message": "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
    "type": "exceed_context_size_error",
    "n_prompt_tokens": 9412,
    "n_ctx": 8192,
}


def test_llamacpp_error_field_mid_stream_is_a_stream_error_with_its_message(fake_server):
    err_line = b'error: {"code":500,"message":"Failed to decode the batch: KV cache is full","type":"server_error"}\n\n'
    fake_server.push(Reply(chunks=[ev(chunk({"content": "half an ans"})), err_line, ev("[DONE]")]))
    err, events = fail(fake_server)
    assert err.kind == "stream_error" and err.partial and err.status == 500
    assert "KV cache is full" in err.message
    assert events == [("content", "half an ans")]


def test_llamacpp_error_field_before_any_text_says_the_context_is_too_small(fake_server):
    """Older llama.cpp: the overflow comes as an `error:` line in a 200 stream, then [DONE]."""
    line = (
        b'error: {"code":400,"message":"the request exceeds the available context size, try increasing '
        b'the context size or enable context shift","type":"invalid_request_error"}\n\n'
    )
    fake_server.push(Reply(chunks=[line, ev("[DONE]")]))
    err, events = fail(fake_server)
    assert err.kind == "context_length" and not err.partial and events == []
    assert "exceeds the available context size" in err.message
    assert "context window" in err.message and "check the model name" not in err.hint
    assert "new conversation" in err.hint and "/model" in err.hint


def test_llamacpp_overflow_as_http_400_has_the_context_hint(fake_server):
    fake_server.push(json_reply(400, {"error": LLAMACPP_OVERFLOW}))
    err, _ = fail(fake_server)
    assert err.kind == "context_length" and err.status == 400
    assert "9412 tokens" in err.message and "8192 tokens" in err.message
    assert "model name" not in err.hint and "new conversation" in err.hint


def test_llamacpp_data_error_without_done_after_text(fake_server):
    """Newer llama.cpp: data: {"error": {...}} and the body ends (no [DONE])."""
    err_obj = {"error": {"code": 500, "message": "Compute error.", "type": "server_error"}}
    fake_server.push(Reply(chunks=[ev(chunk({"content": "so far"})), ev(err_obj)]))
    err, events = fail(fake_server)
    assert err.kind == "stream_error" and err.partial and "Compute error." in err.message
    assert events == [("content", "so far")]


def test_llamacpp_overflow_inside_the_stream_is_recognised_by_n_ctx(fake_server):
    fake_server.push(Reply(chunks=[ev({"error": dict(LLAMACPP_OVERFLOW, message="context full")})]))
    err, _ = fail(fake_server)
    assert err.kind == "context_length" and not err.partial and "context full" in err.message


def test_ollama_failure_after_the_first_token_is_an_incomplete_answer(fake_server):
    empty = {
        "id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "llama3.2",
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
    }
    fake_server.push(Reply(chunks=[ev(chunk({"role": "assistant", "content": "The answ"})), ev(empty)]))
    err, events = fail(fake_server)
    assert err.kind == "connection" and err.partial
    assert "in the middle of the answer" in err.message and "Ollama" in err.hint
    assert events == [("content", "The answ")]


def test_a_stream_cut_before_any_text_is_not_an_empty_answer(fake_server):
    fake_server.push(Reply(chunks=[ev(chunk({"role": "assistant", "content": ""}))]))
    err, events = fail(fake_server)
    assert err.kind == "connection" and not err.partial and events == []
    assert "before the answer began" in err.message


@pytest.mark.parametrize(
    "obj, needle, kind",
    [
        pytest.param({"object": "error", "message": "Sampling failed", "type": "BadRequestError", "param": None,
                      "code": 400}, "Sampling failed", "stream_error", id="vllm-object-error"),
        pytest.param({"error": {"message": "This model's maximum context length is 4096 tokens. However, you "
                                "requested 5000 tokens (4000 in the messages, 1000 in the completion).",
                                "type": "BadRequestError", "param": None, "code": 400}},
                     "maximum context length is 4096", "context_length", id="vllm-overflow"),
        pytest.param({"error_type": "context_length_exceeded", "error_message": "prompt too long for this model"},
                     "prompt too long", "context_length", id="error_type-error_message"),
        pytest.param({"error_message": "the upstream provider timed out"}, "upstream provider timed out",
                     "stream_error", id="error_message-alone"),
        pytest.param({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                     "Overloaded", "stream_error", id="anthropic-style-data"),
        pytest.param({"error": "an error was encountered while running the model: unexpected EOF"},
                     "unexpected EOF", "stream_error", id="ollama-string"),
    ],
)
def test_in_stream_error_shapes(fake_server, obj, needle, kind):
    fake_server.push(Reply(chunks=[ev(chunk({"content": "x"})), ev(obj), ev("[DONE]")]))
    err, events = fail(fake_server)
    assert err.kind == kind and err.partial and needle in err.message
    assert events == [("content", "x")]


def test_openrouter_mid_stream_error_with_a_string_code(fake_server):
    err_chunk = chunk({"content": ""}, finish="error", error={"code": "server_error", "message": "Provider disconnected"})
    fake_server.push(Reply(chunks=[b": OPENROUTER PROCESSING\n\n", ev(chunk({"content": "Hi"})), ev(err_chunk)]))
    err, events = fail(fake_server)
    assert err.kind == "stream_error" and err.partial and "Provider disconnected" in err.message
    assert events == [("content", "Hi")]


def test_finish_reason_error_without_an_error_object(fake_server):
    fake_server.push(Reply(chunks=[ev(chunk({"content": "a"})), ev(chunk(finish="error")), ev("[DONE]")]))
    err, _ = fail(fake_server)
    assert err.kind == "stream_error" and err.partial and 'finish_reason "error"' in err.message


def test_provider_text_in_a_stream_error_is_escaped(fake_server):
    fake_server.push(Reply(chunks=[ev({"error": {"message": "bad \x1b[31mred\x1b[0m\nthing"}})]))
    err, _ = fail(fake_server)
    assert "\x1b" not in str(err) and "\n" not in str(err) and "red" in err.message


def test_a_keep_alive_does_not_hide_the_events_that_follow_it_in_the_same_read(fake_server):
    """Keep-alives (named pings, empty `data:`) are skipped one by one: the deltas that
    arrive with one in the same read are all delivered."""
    body = (b"event: ping\ndata: {}\n\n" + ev(chunk({"content": "hel"})) + b"data:\n\n"
            + ev(chunk({"content": "lo"})) + ev(chunk(finish="stop")) + ev("[DONE]"))
    fake_server.push(Reply(chunks=[body]))
    result, events = run(fake_server)
    assert result.content == "hello" and merged(events) == [("content", "hello")]


# ---- a 200 with nothing in it ------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(raw_reply(200, b"", "text/event-stream"), id="no-bytes"),
        pytest.param(Reply(chunks=[]), id="no-bytes-chunked"),
        pytest.param(Reply(chunks=[b": ping - 2025-06-01 12:00:00.000000+00:00\n\n"] * 2 + [b"\r\n\n"]),
                     id="sse-starlette-pings-only"),
        pytest.param(Reply(chunks=[b"data:\n\n", b"event: ping\ndata: {}\n\n"]), id="empty-data-and-pings"),
        pytest.param(raw_reply(200, b"", "application/json"), id="empty-json"),
        pytest.param(Reply(headers={"Content-Type": "text/plain"}, chunks=[b"\n\n"]), id="blank-text"),
    ],
)
def test_an_empty_200_is_a_server_failure_not_an_empty_answer(fake_server, reply):
    fake_server.push(reply)
    err, events = fail(fake_server)
    assert err.kind == "empty_stream" and not err.partial and events == []
    assert "without sending anything" in err.message
    assert "log" in err.hint


def test_a_body_that_breaks_off_before_its_first_event(fake_server):
    """llama-cpp-python: the handler raised after the status line; the chunked body ends
    without its terminator."""
    fake_server.push(Reply(chunks=[b": ping - 2025-06-01 12:00:00.000000+00:00\n\n"], abort=True))
    err, events = fail(fake_server)
    assert err.kind == "empty_stream" and events == []
    assert "without sending anything" in err.message


def test_bare_json_error_body_labelled_as_a_stream(fake_server):
    """A proxy (lemonade) that forwards the upstream's error body into an SSE response."""
    body = json.dumps({"error": LLAMACPP_OVERFLOW}).encode()
    fake_server.push(Reply(headers={"Content-Type": "text/event-stream"}, chunks=[body]))
    err, _ = fail(fake_server)
    assert err.kind == "context_length" and "9412 tokens" in err.message


def test_whole_completion_labelled_as_a_stream(fake_server):
    body = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "all"},
                                                      "finish_reason": "stop"}]}
    fake_server.push(Reply(headers={"Content-Type": "text/event-stream"}, chunks=[json.dumps(body).encode()]))
    result, events = run(fake_server)
    assert result.content == "all" and result.finish_reason == "stop" and events == [("content", "all")]


@pytest.mark.parametrize(
    "reply, needle",
    [
        pytest.param(raw_reply(200, b"{}", "application/json"), "neither a chat completion", id="json-without-choices"),
        pytest.param(Reply(chunks=[b"Internal Server Error"]), "Internal Server Error", id="plain-text-as-sse"),
    ],
)
def test_a_200_body_that_is_neither_stream_nor_completion(fake_server, reply, needle):
    fake_server.push(reply)
    err, _ = fail(fake_server)
    assert err.kind == "bad_json" and needle in err.message


@pytest.mark.parametrize("after", [[], [{}], [None]], ids=["alone", "then-an-object", "then-null"])
def test_a_json_array_error_in_a_200(fake_server, after):
    """Gemini's shape: the error is the array's first element, whatever follows it."""
    fake_server.push(json_reply(200, [{"error": {"code": 503, "message": "The model is overloaded.",
                                                 "status": "UNAVAILABLE"}}, *after]))
    err, _ = fail(fake_server)
    assert err.kind == "stream_error" and err.status == 503 and "overloaded" in err.message


def test_a_json_completion_with_finish_reason_error(fake_server):
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "error"}]}
    fake_server.push(json_reply(200, body))
    err, _ = fail(fake_server)
    assert err.kind == "stream_error"


# ---- llama-cpp-python's own bodies ---------------------------------------------------------


def test_llama_cpp_python_context_error_400(fake_server):
    body = {"error": {"message": "This model's maximum context length is 2048 tokens. However, you requested 2390 "
                                 "tokens (2390 in the messages, None in the completion). Please reduce the length "
                                 "of the messages or completion.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    fake_server.push(json_reply(400, body))
    err, _ = fail(fake_server)
    assert err.kind == "context_length" and "2048 tokens" in err.message


def test_llama_cpp_python_validation_500_shows_its_message(fake_server):
    """What llama-cpp-python answers to `"content": null` in an assistant message (its
    request model types content as str; RouteErrorHandler turns the validation error into
    a 500)."""
    msg = ("[{'type': 'string_type', 'loc': ('body', 'messages', 1, 'typed-dict', 'content'), "
           "'msg': 'Input should be a valid string', 'input': None}]")
    fake_server.push(json_reply(500, {"error": {"message": msg, "type": "internal_server_error", "param": None,
                                                "code": None}}))
    err, _ = fail(fake_server)
    assert err.kind == "server" and "Input should be a valid string" in err.message


# ---- "content": "" refused (Bedrock's OpenAI-compatible endpoint, Anthropic models) ---------

TOOL_ROUND = [
    {"role": "user", "content": "read a.txt"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
]
BEDROCK_400 = {"message": "messages: text content blocks must be non-empty"}


@pytest.fixture
def fresh_null_content(monkeypatch):
    monkeypatch.setattr(client, "_NULL_CONTENT", set())


def test_a_server_refusing_empty_content_gets_null_once_and_from_then_on(fake_server, fresh_null_content):
    fake_server.push(json_reply(400, BEDROCK_400), sse_reply(["read it"]), sse_reply(["again"]))
    result, _ = run(fake_server, messages=TOOL_ROUND)
    assert result.content == "read it"
    first, second = fake_server.wait_requests(2)
    assert first["json"]["messages"][1]["content"] == ""
    assert second["json"]["messages"][1]["content"] is None
    assert second["json"]["messages"][1]["tool_calls"] == TOOL_ROUND[1]["tool_calls"]
    assert [m["content"] for m in second["json"]["messages"]][::2] == ["read a.txt", '{"ok": true}']
    result, _ = run(fake_server, messages=TOOL_ROUND)  # the endpoint is known now: one request
    assert result.content == "again"
    assert len(fake_server.wait_requests(3)) == 3
    assert fake_server.requests[2]["json"]["messages"][1]["content"] is None


@pytest.mark.parametrize(
    "messages, reply",
    [
        pytest.param(MSGS, json_reply(400, BEDROCK_400), id="no-tool-only-message"),
        pytest.param(TOOL_ROUND, json_reply(400, {"error": {"message": "tools are not supported"}}), id="other-400"),
        pytest.param(TOOL_ROUND, json_reply(500, BEDROCK_400), id="not-a-400"),
    ],
)
def test_no_second_request_otherwise(fake_server, fresh_null_content, messages, reply):
    fake_server.push(reply, sse_reply(["never"]))
    err, _ = fail(fake_server, messages=messages)
    assert err.status == reply.status
    assert len(fake_server.requests) == 1 and not client._NULL_CONTENT


def test_null_retry_that_fails_again_reports_the_second_error(fake_server, fresh_null_content):
    fake_server.push(json_reply(400, BEDROCK_400), json_reply(400, {"error": {"message": "something else"}}))
    err, _ = fail(fake_server, messages=TOOL_ROUND)
    assert "something else" in err.message and len(fake_server.wait_requests(2)) == 2


def test_bad_json_mid_stream(fake_server):
    fake_server.push(Reply(chunks=[ev(chunk({"reasoning_content": "r"})), b"data: {oops, not json\n\n"]))
    err, _ = fail(fake_server)
    assert err.kind == "bad_json" and err.partial is True
    assert "{oops" in err.message


def test_bad_json_in_a_json_reply(fake_server):
    fake_server.push(raw_reply(200, b"{truncated", "application/json"))
    err, _ = fail(fake_server)
    assert err.kind == "bad_json" and not err.partial


def test_html_page_with_200(fake_server):
    fake_server.push(raw_reply(200, b"<!DOCTYPE html><html><head><title>Open WebUI</title></head></html>", "text/html"))
    err, _ = fail(fake_server)
    assert err.kind == "html"
    assert "not the API" in err.message and "Open WebUI" in err.message
    assert "base_url" in err.hint


def test_wrong_base_url_without_v1(fake_server):
    ep = Endpoint(fake_server.url[: -len("/v1")], connect_timeout=2, read_timeout=5)
    err, _ = fail(fake_server, ep=ep)
    assert err.kind == "not_found" and "/v1" in err.hint
    assert "/chat/completions" in err.message


# ---- HTTP statuses ---------------------------------------------------------------------


def test_401_without_key(fake_server):
    fake_server.push(json_reply(401, {"error": {"message": "You didn't provide an API key."}}))
    err, _ = fail(fake_server)
    assert err.kind == "auth" and err.status == 401
    assert "set OPENAI_API_KEY" in err.hint
    assert "didn't provide an API key" in err.message


def test_401_with_key(fake_server):
    fake_server.push(json_reply(401, {"error": {"message": "Incorrect API key provided"}}))
    ep = endpoint(fake_server, api_key="sk-bad", api_key_env="GROQ_API_KEY")
    err, _ = fail(fake_server, ep=ep)
    assert err.kind == "auth"
    assert "the key in $GROQ_API_KEY was rejected" in err.message
    assert "sk-bad" not in str(err)


def test_404_names_model_and_url(fake_server):
    fake_server.push(json_reply(404, {"error": {"message": 'model "llama9" not found, try pulling it first'}}))
    err, _ = fail(fake_server, model="llama9")
    assert err.kind == "not_found"
    assert "'llama9'" in err.message
    assert fake_server.url + "/chat/completions" in err.message
    assert "try pulling it first" in err.message
    assert "--model" in err.hint and "/models" in err.hint and "/v1" in err.hint


def test_429_with_retry_after(fake_server):
    fake_server.push(json_reply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"}))
    err, _ = fail(fake_server)
    assert err.kind == "rate_limit" and err.retry_after == "7" and err.status == 429
    assert "7" in err.message and "Rate limit reached" in err.message


def test_500(fake_server):
    fake_server.push(json_reply(500, {"error": {"message": "CUDA out of memory"}}))
    err, _ = fail(fake_server)
    assert err.kind == "server" and err.status == 500 and "CUDA out of memory" in err.message
    assert not err.partial


def test_empty_queue_is_a_500_from_the_fake_server(fake_server):
    err, _ = fail(fake_server)
    assert err.kind == "server" and "no scripted reply" in err.message


def test_huge_error_body_is_capped(fake_server):
    fake_server.push(raw_reply(500, b"x" * (1 << 20), "text/plain"))
    err, _ = fail(fake_server)
    assert err.kind == "server" and len(err.message) < 400


def test_redirect_is_not_followed(fake_server):
    fake_server.push(Reply(status=301, headers={"Location": "https://elsewhere/v1/chat/completions", "Content-Type": "text/plain"}, length=True))
    err, _ = fail(fake_server)
    assert err.kind == "http" and "https://elsewhere/v1/chat/completions" in err.message
    assert len(fake_server.requests) == 1


# ---- connection failures ----------------------------------------------------------------


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connection_refused_on_a_closed_port():
    ep = Endpoint(f"http://127.0.0.1:{_closed_port()}/v1", connect_timeout=2, read_timeout=2)
    with pytest.raises(ChatError) as info:
        stream_chat(ep, "m", MSGS, on_event=lambda e: None, cancel=CancelToken())
    err = info.value
    assert err.kind == "refused" and not err.partial
    assert "127.0.0.1" in err.message and "--base-url" in err.hint


def test_connection_refused_on_the_default_endpoint_mentions_ollama():
    ep = Endpoint(f"http://127.0.0.1:{_closed_port()}/v1", is_default=True, connect_timeout=2, read_timeout=2)
    with pytest.raises(ChatError) as info:
        stream_chat(ep, "m", MSGS, on_event=lambda e: None, cancel=CancelToken())
    assert "http://localhost:11434/v1" in info.value.message and "Ollama" in info.value.hint


def test_idle_timeout_after_partial_content(fake_server):
    fake_server.push(sse_reply(["a", "b", "c"], stall_after=2))  # role chunk + "a", then silence
    t0 = time.monotonic()
    err, events = fail(fake_server, ep=endpoint(fake_server, read_timeout=0.3))
    elapsed = time.monotonic() - t0
    assert err.kind == "idle_timeout" and err.partial is True
    assert "0.3 s" in err.message
    assert events == [("content", "a")]
    assert elapsed < 3


def test_connection_closed_mid_chunk_is_a_connection_error(fake_server):
    # The body promises more bytes than it sends, then the server closes: "broke mid-stream".
    body = ev(chunk({"content": "a"}))
    fake_server.push(Reply(chunks=[body, body[:10]], chunked=False, headers={"Content-Type": "text/event-stream", "Content-Length": str(len(body) * 3)}))
    err, events = fail(fake_server)
    assert err.kind == "connection" and err.partial
    assert events == [("content", "a")]


def test_break_after_finish_reason_keeps_the_complete_answer(fake_server):
    fake_server.push(sse_reply(["done"], done=False, stall_after=3))  # role, "done", finish
    result, _ = run(fake_server, ep=endpoint(fake_server, read_timeout=0.3))
    assert result.content == "done" and result.finish_reason == "stop" and not result.cancelled


def test_https_to_a_plain_http_server_is_a_tls_error(fake_server):
    ep = Endpoint(fake_server.url.replace("http://", "https://"), connect_timeout=2, read_timeout=2)
    err, _ = fail(fake_server, ep=ep)
    assert err.kind == "tls" and "http://" in err.hint


# ---- cancel -----------------------------------------------------------------------------


def test_cancel_while_blocked_in_a_read_returns_promptly(fake_server):
    seen = threading.Event()
    cancel = CancelToken()

    def on_event(e):
        if e == ("content", "first"):
            seen.set()

    # Role chunk and "first", then the server holds the stream open (30 s or until stop).
    fake_server.push(sse_reply(["first", "never"], stall_after=2))
    w = Worker(fake_server, cancel=cancel, on_event=on_event)
    w.start()
    assert seen.wait(5), "the first event never arrived"
    t0 = time.monotonic()
    cancel.cancel()
    w.join(2.0)
    assert not w.is_alive(), "stream_chat did not return within 2 s of cancel()"
    assert w.error is None, w.error
    assert w.result.cancelled is True
    assert w.result.content == "first"
    assert w.finished_at - t0 < 2.0
    t1 = time.monotonic()
    fake_server.stop()
    assert time.monotonic() - t1 < 2.0


def test_cancel_while_waiting_for_the_response_headers(fake_server):
    never = threading.Event()
    cancel = CancelToken()
    fake_server.push(sse_reply(["x"], hold_headers=never))
    w = Worker(fake_server, cancel=cancel)
    w.start()
    fake_server.wait_requests(1)
    t0 = time.monotonic()
    cancel.cancel()
    w.join(2.0)
    assert not w.is_alive() and w.error is None, w.error
    assert w.result.cancelled is True and w.result.content == ""
    assert w.finished_at - t0 < 2.0


def test_cancel_before_start_sends_nothing(fake_server):
    cancel = CancelToken()
    cancel.cancel()
    result, events = run(fake_server, cancel=cancel)
    assert result.cancelled and events == [] and fake_server.requests == []


def test_cancel_from_the_callback_stops_the_stream(fake_server):
    cancel = CancelToken()
    seen = []

    def on_event(e):
        seen.append(e)
        cancel.cancel()

    fake_server.push(sse_reply(["a", "b", "c"]))
    result, _ = run(fake_server, cancel=cancel, on_event=on_event)
    # nothing after the cancel; the result holds exactly what was delivered (the first
    # read's deltas, one delivery)
    assert result.cancelled and len(seen) == 1
    assert seen[0][0] == "content" and result.content == seen[0][1]
    assert "abc".startswith(result.content)


# ---- latency ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "framing",
    [{"chunked": True}, {"chunked": False}, {"chunked": True, "gzip": True}, {"chunked": False, "gzip": True}],
    ids=["chunked", "connection-close", "chunked-gzip", "close-gzip"],
)
def test_each_event_is_handed_over_before_the_next_is_sent(fake_server, framing):
    """The server sends one event, then waits until the client's callback saw it; a
    client that buffers would deadlock here (and fail on the wait)."""
    pieces = ["one", "two", "three"]
    chunks = sse_chunks(pieces)  # role, one, two, three, finish, [DONE]
    gates = {i: threading.Event() for i in (2, 3)}  # before "two" and "three"
    seen = {"one": gates[2], "two": gates[3]}
    latency: list[float] = []
    sent = {"t": time.monotonic()}

    def on_event(e):
        if e[0] == "content" and e[1] in seen:
            latency.append(time.monotonic() - sent["t"])
            sent["t"] = time.monotonic()
            seen[e[1]].set()

    fake_server.push(Reply(headers={"Content-Type": "text/event-stream"}, chunks=chunks, waits=gates, **framing))
    w = Worker(fake_server, on_event=on_event)
    w.start()
    assert gates[2].wait(5), "the first event was not delivered while the server waited"
    assert gates[3].wait(5), "the second event was not delivered while the server waited"
    w.join(5)
    assert w.error is None and w.result.content == "onetwothree"
    assert max(latency) < 1.0


# ---- coalescing -------------------------------------------------------------------------


def record(monkeypatch) -> list[tuple]:
    """Log the reads of streamed bodies ("read", size) and the pauses between them
    ("nap", seconds) in order; the pauses still sleep, so streams keep their timing."""
    log: list[tuple] = []
    real_sleep, real_coalescing = time.sleep, client._coalescing

    def nap(seconds):
        log.append(("nap", seconds))
        real_sleep(seconds)

    def coalescing(read, cancel):
        def logged():
            data = read()
            log.append(("read", len(data)))
            return data

        return real_coalescing(logged, cancel)

    monkeypatch.setattr(client, "_nap", nap)
    monkeypatch.setattr(client, "_coalescing", coalescing)
    return log


def test_pauses_follow_small_reads_only_and_ramp_up(monkeypatch):
    naps: list[float] = []
    monkeypatch.setattr(client, "_nap", naps.append)
    big, small = b"x" * client.SMALL_READ, b"x"
    script = [small, big, big, small, small, small, small, big, small]
    read = client._coalescing(iter(script).__next__, CancelToken())
    assert [read() for _ in script] == script
    f, c = client.FIRST_PAUSE_S, client.COALESCE_S
    assert naps == [f, f, min(2 * f, c), min(4 * f, c), c]
    assert c <= 0.1  # below the UI's frame interval


def test_a_cancel_during_a_pause_stops_before_the_next_read(monkeypatch):
    cancel = CancelToken()
    monkeypatch.setattr(client, "_nap", lambda s: cancel.cancel())
    reads = []
    read = client._coalescing(lambda: reads.append(1) or b"x", cancel)
    read()
    with pytest.raises(client._Cancelled):
        read()
    assert len(reads) == 1


def test_episode_coalesces_deltas_of_one_kind_and_keeps_the_order_of_kinds():
    events: list[tuple] = []
    ep = client._Episode(events.append, CancelToken(), 1000, 4)
    for kind, text in [("reasoning", "a"), ("reasoning", "b"), ("content", "c"), ("content", "d"), ("reasoning", "e")]:
        ep.text(kind, text)
    assert events == [("reasoning", "ab"), ("content", "cd")]  # "e" waits for a flush
    ep.set_usage({"usage": {"total_tokens": 1}})  # the text before it goes first
    assert events[2:] == [("reasoning", "e"), ("usage", {"total_tokens": 1})]
    result = ep.result()
    assert (result.reasoning, result.content) == ("abe", "cd")


def test_episode_bound_is_checked_per_delta():
    events: list[tuple] = []
    ep = client._Episode(events.append, CancelToken(), 5, 4)
    ep.text("content", "abc")
    ep.text("content", "é")  # 2 bytes: 5 in all, the limit
    with pytest.raises(ChatError) as info:
        ep.text("content", "f")
    assert info.value.kind == "bound" and info.value.partial
    ep.flush()  # stream_chat delivers what was accepted before it raises
    assert events == [("content", "abcé")]


def test_after_a_cancel_pending_text_is_dropped_and_the_result_is_what_was_delivered():
    cancel = CancelToken()
    events: list[tuple] = []
    ep = client._Episode(events.append, cancel, 1000, 4)
    ep.text("content", "a")
    ep.flush()
    ep.text("content", "b")
    cancel.cancel()
    ep.flush()
    assert events == [("content", "a")]
    assert ep.result(cancelled=True).content == "a"


def test_a_paced_stream_is_delivered_coalesced(fake_server, monkeypatch):
    log = record(monkeypatch)
    pieces = [f" w{i}" for i in range(40)]
    fake_server.push(sse_reply(pieces, rate=200, usage={"total_tokens": 40}))
    result, events = run(fake_server)
    content = [t for k, t in events if k == "content"]
    assert "".join(content) == "".join(pieces) == result.content
    assert len(content) <= len(pieces) // 2, content  # several events per read
    assert events[-1] == ("usage", {"total_tokens": 40})
    naps = [v for k, v in log if k == "nap"]
    assert naps and max(naps) == client.COALESCE_S


@pytest.mark.parametrize("pieces", [markdown_answer(2000), ["z" * 30_000] * 30], ids=["tokens", "big-events"])
def test_a_burst_is_not_paused_after_big_reads(fake_server, monkeypatch, pieces):
    log = record(monkeypatch)
    fake_server.push(sse_reply(pieces))
    t0 = time.monotonic()
    result, events = run(fake_server)
    assert result.content == "".join(pieces)
    assert time.monotonic() - t0 < 5
    assert any(k == "read" and n >= client.SMALL_READ for k, n in log)
    for before, entry in zip(log, log[1:], strict=False):
        if entry[0] == "nap":  # only ever after a small read
            assert before[0] == "read" and before[1] < client.SMALL_READ, log
    # reads come in 64 KiB: few deliveries, and a pause at most when a read was small
    assert len(events) <= sum(1 for k, _ in log if k == "read")


def test_a_gzip_stream_is_never_paused(fake_server, monkeypatch):
    # urllib3's reader (encoded bodies) returns one HTTP chunk per read: a pause there
    # would cap the stream at one event per pause
    log = record(monkeypatch)
    fake_server.push(sse_reply(list("abcdef"), gzip=True, rate=200))
    result, _ = run(fake_server)
    assert result.content == "abcdef"
    assert log == []


def test_cancel_from_another_thread_during_a_pause_returns_promptly(fake_server, monkeypatch):
    cancel = CancelToken()
    real_sleep = time.sleep

    def nap(seconds):
        threading.Thread(target=cancel.cancel).start()
        real_sleep(seconds)

    monkeypatch.setattr(client, "_nap", nap)
    pieces = [f"p{i} " for i in range(100)]
    fake_server.push(sse_reply(pieces, rate=100))
    events: list[tuple] = []
    t0 = time.monotonic()
    result = stream_chat(endpoint(fake_server), "m", MSGS, on_event=events.append, cancel=cancel)
    assert result.cancelled
    assert time.monotonic() - t0 < 0.5  # the stream would take 1 s
    delivered = "".join(t for k, t in events if k == "content")
    assert result.content == delivered and len(delivered) < len("".join(pieces))


def test_the_idle_timeout_still_fires_when_a_paced_stream_stalls(fake_server):
    fake_server.push(sse_reply(list("abcdefghij"), rate=100, stall_after=8))  # role + 7
    t0 = time.monotonic()
    err, events = fail(fake_server, ep=endpoint(fake_server, read_timeout=0.3))
    assert err.kind == "idle_timeout" and err.partial
    assert "".join(t for _, t in events) == "abcdefg"
    assert time.monotonic() - t0 < 3


# ---- bounds -----------------------------------------------------------------------------


def test_episode_bound_with_a_small_limit(fake_server):
    fake_server.push(sse_reply(["x" * 30] * 10))
    err, events = fail(fake_server, max_episode_bytes=100)
    assert err.kind == "bound" and err.partial
    assert "exceeded 100 bytes" in err.message
    assert sum(len(t) for _, t in events) <= 100


def test_tool_call_bytes_count_toward_the_episode_bound(fake_server):
    frag = [[{"index": 0, "id": "c", "function": {"name": "write_file", "arguments": ""}}]]
    frag += [[{"index": 0, "function": {"arguments": "y" * 50}}]] * 10
    fake_server.push(sse_reply([], tool_calls=frag))
    err, _ = fail(fake_server, max_episode_bytes=200)
    assert err.kind == "bound" and not err.partial


def test_call_bound_with_a_small_limit(fake_server):
    calls = [[{"index": i, "id": f"c{i}", "function": {"name": "read_file", "arguments": "{}"}}] for i in range(3)]
    fake_server.push(sse_reply([], tool_calls=calls))
    err, _ = fail(fake_server, max_calls=2)
    assert err.kind == "bound" and "more than 2 tool calls" in err.message


def test_64_call_default_bound(fake_server):
    ok = [[{"index": i, "id": f"c{i}", "function": {"name": "read_file", "arguments": "{}"}}] for i in range(64)]
    fake_server.push(sse_reply([], tool_calls=ok))
    result, _ = run(fake_server)
    assert len(result.tool_calls) == 64
    too_many = ok + [[{"index": 64, "id": "c64", "function": {"name": "read_file", "arguments": "{}"}}]]
    fake_server.push(sse_reply([], tool_calls=too_many))
    err, _ = fail(fake_server)
    assert err.kind == "bound" and "more than 64 tool calls" in err.message


def test_one_call_in_many_fragments_is_one_call(fake_server):
    frags = [[{"index": 0, "id": "c", "function": {"name": "write_file", "arguments": ""}}]]
    frags += [[{"index": 0, "function": {"arguments": '{"path": "a", "content": "'}}]]
    frags += [[{"index": 0, "function": {"arguments": "z"}}]] * 200
    frags += [[{"index": 0, "function": {"arguments": '"}'}}]]
    fake_server.push(sse_reply([], tool_calls=frags))
    result, _ = run(fake_server, max_calls=1)
    assert result.tool_calls[0]["args"] == {"path": "a", "content": "z" * 200}


def test_real_4_mib_default_bound(fake_server):
    piece = "abcdefgh" * 8192  # 64 KiB per event
    fake_server.push(sse_reply([piece] * 70))  # 4.375 MiB in total
    total = {"n": 0}

    def count(e):
        total["n"] += len(e[1])

    with pytest.raises(ChatError) as info:
        run(fake_server, on_event=count)
    err = info.value
    assert err.kind == "bound" and err.partial
    assert "the answer exceeded 4 MiB" in err.message
    assert total["n"] == 64 * len(piece)  # exactly 4 MiB delivered, not one byte more


def test_1_mib_event_bound(fake_server):
    fake_server.push(sse_reply(["ok", "z" * ((1 << 20) + 10)]))
    err, events = fail(fake_server)
    assert err.kind == "bound" and "1 MiB" in err.message
    assert err.partial and events == [("content", "ok")]


def test_an_oversized_event_stops_the_reading_at_once(fake_server):
    """The bound closes the stream as soon as it trips: a server that goes on holding the
    connection (or sending) after the oversized event is not read to its end."""
    fake_server.push(sse_reply(["ok", "z" * ((1 << 20) + 10), "more"], stall_after=3))
    t0 = time.monotonic()
    err, events = fail(fake_server, ep=endpoint(fake_server, read_timeout=20))
    assert err.kind == "bound" and "one stream event exceeded 1 MiB; the stream was closed" in err.message
    assert merged(events) == [("content", "ok")] and time.monotonic() - t0 < 10


def test_a_stream_cut_after_tool_calls_began_says_none_was_run(fake_server):
    """No finish_reason, no [DONE], and tool calls had started: the error says how many and
    that none of them was run (their arguments may be whole and the plan still not)."""
    fake_server.push(sse_reply([], tool_calls=[
        [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}],
        [{"index": 1, "id": "c2", "type": "function", "function": {"name": "write_file", "arguments": '{"pa'}}],
    ], finish_reason=None, done=False))
    err, events = fail(fake_server)
    assert err.kind == "connection" and events == []
    assert "after 2 tool call(s) had started; none of them was run" in err.message


def test_event_just_under_the_bound_passes(fake_server):
    fake_server.push(sse_reply(["z" * 900_000]))
    result, _ = run(fake_server)
    assert len(result.content) == 900_000


# ---- the request ------------------------------------------------------------------------


def test_request_body_and_headers_with_key_and_tools(fake_server):
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    fake_server.push(sse_reply(["ok"]))
    ep = endpoint(fake_server, api_key="sk-test", headers={"X-Title": "DashFloat", "HTTP-Referer": "https://x"})
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "héllo"}]
    run(fake_server, ep=ep, model="gpt-4o-mini", messages=msgs, tools=tools)
    (req,) = fake_server.wait_requests(1)
    assert req["method"] == "POST" and req["path"] == "/v1/chat/completions"
    body = req["json"]
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == msgs
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == tools
    assert "tool_choice" not in body and "parallel_tool_calls" not in body
    h = req["headers"]
    assert h["authorization"] == "Bearer sk-test"
    assert h["x-title"] == "DashFloat" and h["http-referer"] == "https://x"
    assert h["accept"] == "text/event-stream"
    assert h["content-type"] == "application/json"
    assert h["user-agent"].startswith("dashfloat/")


def test_request_without_key_has_no_authorization_and_no_tools(fake_server):
    fake_server.push(sse_reply(["ok"]))
    run(fake_server)
    (req,) = fake_server.wait_requests(1)
    assert "authorization" not in req["headers"]
    assert "tools" not in req["json"]


def test_build_request_is_pure():
    ep = Endpoint("http://h:1/v1/", api_key="k", headers={"X": "1"})
    msgs = [{"role": "user", "content": "a"}]
    url, headers, body = build_request(ep, "m", msgs)
    assert url == "http://h:1/v1/chat/completions"
    assert headers["Authorization"] == "Bearer k" and headers["X"] == "1"
    assert body == {"model": "m", "messages": msgs, "stream": True, "stream_options": {"include_usage": True}}
    assert build_request(ep, "m", msgs) == (url, headers, body)
    assert "api_key=" not in repr(ep) and "'k'" not in repr(ep)


# ---- models -----------------------------------------------------------------------------


def test_list_models(fake_server):
    fake_server.models = ["b-model", "a-model"]
    assert list_models(endpoint(fake_server, api_key="k")) == ["a-model", "b-model"]
    (req,) = fake_server.wait_requests(1)
    assert req["method"] == "GET" and req["path"] == "/v1/models"
    assert req["headers"]["authorization"] == "Bearer k"


def test_list_models_errors_use_the_taxonomy(fake_server):
    fake_server.models_reply = json_reply(401, {"error": {"message": "bad key"}})
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server))
    assert info.value.kind == "auth"
    fake_server.models_reply = raw_reply(200, b"<html><title>x</title></html>", "text/html")
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server))
    assert info.value.kind == "html"
    with pytest.raises(ChatError) as info:
        list_models(Endpoint(f"http://127.0.0.1:{_closed_port()}/v1", connect_timeout=2, read_timeout=2))
    assert info.value.kind == "refused"


def test_a_model_list_names_each_model_once_by_its_id(fake_server):
    fake_server.models_reply = json_reply(200, {"data": [
        {"id": "llama3:8b", "name": "Llama 3 8B", "model": "llama3"}, {"name": "named-only"}, "bare-string"]})
    assert list_models(endpoint(fake_server)) == ["bare-string", "llama3:8b", "named-only"]


@pytest.mark.parametrize(("reply", "needle"), [
    (raw_reply(200, b"Not Found, try /api", "text/plain"), "a model list that is not valid JSON: Not Found, try /api"),
    (json_reply(200, {"object": "list"}), 'a model list without `data` that is not valid JSON: {"object": "list"}'),
])
def test_a_model_list_that_is_not_one_shows_what_came(fake_server, reply, needle):
    fake_server.models_reply = reply
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server))
    assert info.value.kind == "bad_json" and needle in info.value.message


def test_a_bug_while_reading_a_model_list_is_not_taken_for_a_network_failure(fake_server, monkeypatch):
    def broken(read, limit):
        raise RuntimeError("a bug, not the network")

    monkeypatch.setattr(client, "_read_capped", broken)
    with pytest.raises(RuntimeError, match="a bug, not the network"):
        list_models(endpoint(fake_server))


def _windows(fake_server, model, prefix="", **routes):
    fake_server.routes.update({prefix + path: reply for path, reply in routes.items()})
    ep = Endpoint(fake_server.url.replace("/v1", prefix + "/v1"), connect_timeout=2.0, read_timeout=5.0)
    got = client.context_window(ep, model)
    return got, [r["path"].removeprefix(prefix) for r in fake_server.requests if r["method"] == "GET"]


def test_the_context_window_of_an_ollama_model_named_without_its_tag(fake_server):
    fake_server.models_reply = json_reply(200, {"data": [{"id": "llama3:latest", "max_model_len": 8192}]})
    assert _windows(fake_server, "llama3") == ((8192, "the endpoint's model list"), ["/v1/models"])


def test_only_lm_studio_is_asked_through_its_own_api(fake_server):
    """A server whose list states no window (and lists bare names) is asked nothing more."""
    fake_server.models_reply = json_reply(200, {"data": ["test-model", {"id": "other", "owned_by": "someone"}]})
    assert _windows(fake_server, "test-model") == (None, ["/v1/models"])


@pytest.mark.parametrize("prefix", ["", "/lmstudio"], ids=["at-the-root", "behind-a-proxy-path"])
def test_an_lm_studio_without_its_newer_api_is_asked_for_the_one_model(fake_server, prefix):
    """LM Studio before 0.4 has no /api/v1/models (a 404): its /api/v0 answer is asked next,
    beside its /v1 (under the same path when a proxy puts it under one)."""
    fake_server.models_reply = json_reply(200, {"data": [{"id": "test-model", "owned_by": "organization_owner"}]})
    got = _windows(fake_server, "test-model", prefix, **{
        "/api/v1/models": json_reply(404, {"error": "Unexpected endpoint or method. (GET /api/v1/models)"}),
        "/api/v0/models/test-model": json_reply(200, {"id": "test-model", "max_context_length": 32768,
                                                      "loaded_context_length": 8192})})
    assert got == ((8192, "LM Studio's model list"), ["/v1/models", "/api/v1/models", "/api/v0/models/test-model"])


# ---- the fake server itself ------------------------------------------------------------


def test_markdown_answer_is_deterministic_and_complete():
    a = markdown_answer(2000)
    assert a == markdown_answer(2000)
    assert 2000 <= len(a) < 2400
    text = "".join(a)
    assert text.count("```") % 2 == 0
    for fence in ("```python", "```bash", "```json"):
        assert fence in text
    assert "| --- |" in text and "**" in text and "\n- " in text and "\n1. " in text
    assert "".join(markdown_answer(10)).count("```") % 2 == 0


def test_markdown_answer_streams_through_the_client(fake_server):
    pieces = markdown_answer(2000)
    fake_server.push(sse_reply(pieces, usage={"completion_tokens": len(pieces)}))
    result, events = run(fake_server)
    assert result.content == "".join(pieces)
    assert "".join(t for k, t in events if k == "content") == result.content
    assert len(events) <= len(pieces) + 1  # a burst: many events per read, one delivery


class _Reached(threading.Event):
    """A reply's hold that says when the server first looks at it: after the status line
    and the headers went out (the request being recorded comes before them)."""

    def __init__(self):
        super().__init__()
        self.reached = threading.Event()

    def is_set(self) -> bool:
        self.reached.set()
        return super().is_set()


def test_server_stop_releases_a_held_reply():
    srv = ScriptedServer().start()
    hold = _Reached()
    srv.push(sse_reply(["x"], hold=hold))
    w = Worker(srv, ep=Endpoint(srv.url, connect_timeout=2, read_timeout=10))
    w.start()
    assert hold.reached.wait(10), "the server never sent the headers"
    t0 = time.monotonic()
    srv.stop()
    w.join(3)
    assert time.monotonic() - t0 < 3 and not w.is_alive()
    # the status line had gone out, then the connection closed before any event
    assert isinstance(w.error, ChatError) and w.error.kind == "empty_stream"


def test_netrc_does_not_replace_the_bearer_key(fake_server, tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login user password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    fake_server.push(sse_reply(["ok"]), sse_reply(["ok"]))
    run(fake_server, ep=endpoint(fake_server, api_key="sk-1"))
    run(fake_server)
    first, second = fake_server.wait_requests(2)
    assert first["headers"]["authorization"] == "Bearer sk-1"
    assert "authorization" not in second["headers"]


# ---- the transport: straight through http.client, or through requests --------------------


def _no_proxy_env(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_a_request_to_a_plain_http_server_does_not_load_requests(fake_server):
    """The figure of issue 11 (exec -> first request): requests and urllib3 cost ~50-90 ms
    to import; a local server's request must not wait for them."""
    import os
    import subprocess
    import sys

    fake_server.push(sse_reply(["ok"]))
    code = (
        "import sys\n"
        "from dashfloat.llm.client import CancelToken, Endpoint, stream_chat\n"
        f"r = stream_chat(Endpoint({fake_server.url!r}), 'm', [{{'role': 'user', 'content': 'x'}}],"
        " on_event=lambda e: None, cancel=CancelToken())\n"
        "print(r.content, sorted(m for m in ('requests', 'urllib3') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok []", out.stderr


@pytest.mark.parametrize("name", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_a_proxy_in_the_environment_is_used(fake_server, monkeypatch, name):
    """HTTP_PROXY / ALL_PROXY (either case) send the request to the proxy, with the full URL
    in the request line, as requests always did (the scripted server plays the proxy)."""
    _no_proxy_env(monkeypatch)
    monkeypatch.setenv(name, fake_server.url.rsplit("/v1", 1)[0])
    fake_server.push(sse_reply(["via the proxy"]))
    result, _ = run(fake_server, ep=Endpoint("http://model-host.invalid:8080/v1", connect_timeout=2, read_timeout=5))
    assert result.content == "via the proxy"
    assert fake_server.requests[0]["path"] == "http://model-host.invalid:8080/v1/chat/completions"


def test_no_proxy_sends_the_request_to_the_host_itself(fake_server, monkeypatch):
    _no_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", fake_server.url.rsplit("/v1", 1)[0])
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    ep = Endpoint(f"http://127.0.0.1:{_closed_port()}/v1", connect_timeout=2, read_timeout=2)
    err, _ = fail(fake_server, ep=ep)
    assert err.kind == "refused" and fake_server.requests == []


@pytest.fixture(params=["direct", "via-requests"])
def full_backlog(request, monkeypatch):
    """A port whose listen queue is full: a connect to it hangs until its timeout."""
    if request.param == "via-requests":
        monkeypatch.setattr(transport, "direct_ok", lambda url, headers, environ=None: False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    socks = [srv]
    try:
        for _ in range(8):  # fill the queue (Linux holds backlog + 1) until a connect hangs
            c = socket.socket()
            c.settimeout(0.3)
            socks.append(c)
            try:
                c.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            pytest.skip("this system accepts connections beyond the listen backlog")
        yield port
    finally:
        for s in socks:
            s.close()


def test_a_connect_that_times_out_is_a_connect_timeout(full_backlog):
    ep = Endpoint(f"http://127.0.0.1:{full_backlog}/v1", connect_timeout=0.5, read_timeout=30)
    t0 = time.monotonic()
    with pytest.raises(ChatError) as info:
        stream_chat(ep, "m", MSGS, on_event=lambda e: None, cancel=CancelToken())
    assert info.value.kind == "connect_timeout" and "within 0.5 s (connect timeout)" in info.value.message
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("url, headers, env, direct", [
    ("http://127.0.0.1:8080/v1/chat/completions", {}, {}, True),
    ("http://localhost/v1/models", {"Authorization": "Bearer sk-1", "X-Title": "me"}, {}, True),
    ("http://[::1]:11434/v1/models", {}, {}, True),
    ("https://api.example.com/v1/models", {}, {}, False),  # TLS and its CA bundle: requests
    ("HTTP://localhost/v1/models", {}, {}, False),
    ("http://localhost/v1/models", {}, {"HTTP_PROXY": "http://proxy:3128"}, False),
    ("http://localhost/v1/models", {}, {"all_proxy": "socks5://proxy:1080"}, False),
    ("http://localhost/v1/models", {}, {"HTTPS_PROXY": "http://proxy:3128"}, True),  # not for http
    ("http://localhost/v1/models", {}, {"HTTP_PROXY": ""}, True),
    ("http://user:pw@localhost/v1/models", {}, {}, False),
    ("http://b\u00fccher.example/v1/models", {}, {}, False),  # IDNA
    ("http://localhost/v1 x/models", {}, {}, False),  # requests percent-encodes it
    ("http://localhost/v1%2Fx/models", {}, {}, False),
    ("http://localhost:99999/v1/models", {}, {}, False),
    ("http://localhost/v1/models#frag", {}, {}, False),
    ("http:///v1/models", {}, {}, False),
    ("http://localhost./v1/models", {}, {}, True),
    ("http://a..b/v1/models", {}, {}, False),  # the idna codec refuses an empty label
    (f"http://{'a' * 64}.example/v1/models", {}, {}, False),  # and one over 63 characters
    (f"http://{'a' * 63}.example/v1/models", {}, {}, True),
    ("http://localhost/v1/models", {"X-Key": " padded"}, {}, False),  # requests refuses it
    ("http://localhost/v1/models", {"X-Key": "\u20ac"}, {}, False),  # not latin-1
    ("http://localhost/v1/models", {"content-length": "5"}, {}, False),  # requests replaces it
    ("http://localhost/v1/models", {"Transfer-Encoding": "chunked"}, {}, False),
    ("http://localhost/v1/models", {"Host": "model.example", "Connection": "close"}, {}, True),
    ("http://localhost/v1/models", {"X-Retries": 3}, {}, False),  # requests names the bad type
    ("http://localhost/v1/models", {b"X-Key": "v"}, {}, False),
    ("http://localhost/v1/models", {"X-\u20ac": "v"}, {}, False),  # a name http.client cannot encode
    ("http://user@localhost/v1/models", {}, {}, False),  # a user alone is credentials too
    ("http://:pw@localhost/v1/models", {}, {}, False),
    ("http://localhost:0/v1/models", {}, {}, False),
    ("http://localhost:1/v1/models", {}, {}, True),
    ("http://b\u00fccher.example:8080/v1/models", {}, {}, False),  # the host, not the port, is checked
    (f"http://example.{'a' * 64}/v1/models", {}, {}, False),  # the last label is bounded too
    (f"http://example.{'a' * 63}/v1/models", {}, {}, True),
])
def test_which_requests_go_straight_through_http_client(url, headers, env, direct):
    assert transport.direct_ok(url, headers, env) is direct


def test_direct_response_headers_read_as_requests_hands_them_over():
    """What client.py and errors.py read of a direct response's headers is what requests
    would give: names in any case, a repeated header's values joined, folded lines unfolded."""
    got = transport.Headers([("Content-Type", "text/event-stream"), ("Retry-After", "7"),
                             ("x-ratelimit-reset", "1s"), ("X-RateLimit-Reset", "2s"),
                             ("X-Note", "one \r\n\ttwo\r\n three")])
    assert got.get("content-type") == got["CONTENT-TYPE"] == "text/event-stream"
    assert "retry-after" in got and "Retry-After" in got and "Retry" not in got
    assert 7 not in got and None not in got  # not a name: not in it (no error)
    assert got["X-RATELIMIT-RESET"] == "1s, 2s"
    assert got["x-note"] == "one two three"
    assert list(got) == ["Content-Type", "Retry-After", "x-ratelimit-reset", "X-Note"] and len(got) == 4
    assert got.get("X-Missing") is None


@pytest.mark.parametrize("path", ["direct", "via-requests"])
def test_a_server_that_answers_before_reading_a_big_body_is_heard(monkeypatch, path):
    """A server (or a proxy) that refuses a request by its headers alone answers, and closes
    without reading the body: the send breaks, and the answer it sent is still what the
    error says (urllib3 reads it after a broken pipe; the direct path does the same)."""
    if path == "via-requests":
        monkeypatch.setattr(transport, "direct_ok", lambda url, headers, environ=None: False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    body = json.dumps({"error": {"message": "the request is larger than this server takes"}}).encode()

    def serve():
        conn, _ = srv.accept()
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        conn.shutdown(socket.SHUT_WR)
        time.sleep(0.2)  # the answer reaches the client before the reset
        conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    ep = Endpoint(f"http://127.0.0.1:{srv.getsockname()[1]}/v1", connect_timeout=2, read_timeout=5)
    big = [{"role": "user", "content": "x" * (16 << 20)}]
    try:
        with pytest.raises(ChatError) as info:
            stream_chat(ep, "m", big, on_event=lambda e: None, cancel=CancelToken())
    finally:
        th.join(5)
        srv.close()
    assert info.value.kind != "connection", info.value.message
    assert "larger than this server takes" in info.value.message


_SLOW_DOWN = json.dumps({"error": {"message": "slow down"}}).encode()


@pytest.mark.parametrize("path", ["direct", "via-requests"])
@pytest.mark.parametrize(("answer", "kind"), [
    (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
     + b"Content-Length: %d\r\n\r\n%s" % (len(_SLOW_DOWN), _SLOW_DOWN), "rate_limit"),
    # closed before its error body ends: only the first 64 KiB of it are read
    (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n"
     + b"Content-Length: %d\r\n\r\n%s" % (1 << 20, b"x" * (100 << 10)), "server"),
    (b"not HTTP at all\r\n\r\n", "connection"),  # the open itself fails: the status line
], ids=["error-status", "long-error-body", "bad-status-line"])
@pytest.mark.parametrize("call", [
    lambda ep: stream_chat(ep, "m", MSGS, on_event=lambda e: None, cancel=CancelToken()),
    list_models,
], ids=["chat", "models"])
def test_the_connection_is_closed_when_the_call_ends_even_while_its_error_is_kept(monkeypatch, path, answer, kind,
                                                                                  call):
    """A failed call closes its connection at once, whatever holds on to the ChatError (its
    traceback keeps the call's frames alive): a server that keeps connections alive (an
    error body with a Content-Length) must not have a slot held by an error on the screen."""
    if path == "via-requests":
        monkeypatch.setattr(transport, "direct_ok", lambda url, headers, environ=None: False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    seen = []

    def serve():
        conn, _ = srv.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            conn.sendall(answer)
            conn.settimeout(5)
            try:
                while conn.recv(65536):
                    pass
                seen.append("closed")
            except ConnectionResetError:
                seen.append("closed")
            except TimeoutError:
                seen.append("still open")

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    ep = Endpoint(f"http://127.0.0.1:{srv.getsockname()[1]}/v1", connect_timeout=2, read_timeout=5)
    try:
        with pytest.raises(ChatError) as info:
            call(ep)
        th.join(10)  # `info` (and the call's frames) are alive meanwhile
        assert info.value.kind == kind and seen == ["closed"]
    finally:
        srv.close()


def test_a_url_without_a_port_goes_to_port_80(monkeypatch):
    """As requests does: http://host/... is port 80 (the direct path opens the socket itself)."""
    tried = []

    def refuse(address, timeout=None, *args, **kw):
        tried.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(transport.socket, "create_connection", refuse)
    ep = Endpoint("http://model-host.example/v1", connect_timeout=2, read_timeout=5)
    with pytest.raises(ChatError) as info:
        stream_chat(ep, "m", MSGS, on_event=lambda e: None, cancel=CancelToken())
    assert info.value.kind == "refused" and tried == [(b"model-host.example", 80)]


def test_the_direct_path_turns_nagle_off_as_urllib3_does():
    """The request goes out as headers then body, two sends: with Nagle's algorithm on, the
    second waits for the server's delayed ACK (up to 40 ms on Linux) before it leaves."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    conn = transport._Connection("127.0.0.1", srv.getsockname()[1], 2.0, CancelToken())
    try:
        conn.connect()
        assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()
        srv.close()


def test_what_counts_as_a_broken_connection():
    """A ChatError (kind connection...) for what a broken or closed connection raises on
    either path; anything else is a bug and stays an exception."""
    import http.client

    import urllib3.exceptions

    assert transport.is_net_error(ConnectionResetError(104, "reset"))
    assert transport.is_net_error(http.client.IncompleteRead(b"ab", 10))
    assert transport.is_net_error(urllib3.exceptions.ProtocolError("Connection broken"))
    assert transport.is_net_error(urllib3.exceptions.ReadTimeoutError(None, "/v1", "read timed out"))
    assert not transport.is_net_error(ValueError("not a network failure"))
    assert not transport.is_net_error(KeyError("x"))


@pytest.mark.parametrize("path", ["direct", "via-requests"])
def test_a_send_that_stalls_gives_up_after_the_connect_timeout(monkeypatch, path):
    """A server that accepts and never reads: the request's body stops going out. urllib3
    waits the connect timeout for a send, the read timeout only for the answer; so does
    the direct path (not read_timeout, minutes by default)."""
    if path == "via-requests":
        monkeypatch.setattr(transport, "direct_ok", lambda url, headers, environ=None: False)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    accepted = []
    th = threading.Thread(target=lambda: accepted.append(srv.accept()[0]), daemon=True)
    th.start()
    ep = Endpoint(f"http://127.0.0.1:{srv.getsockname()[1]}/v1", connect_timeout=0.5, read_timeout=60)
    big = [{"role": "user", "content": "x" * (64 << 20)}]
    t0 = time.monotonic()
    try:
        with pytest.raises(ChatError) as info:
            stream_chat(ep, "m", big, on_event=lambda e: None, cancel=CancelToken())
    finally:
        th.join(5)
        for s in [srv, *accepted]:
            s.close()
    assert info.value.kind == "idle_timeout", info.value.message
    assert time.monotonic() - t0 < 20


# ---- found by `make mutation` (i8 §5): the episode, piece by piece ------------------------


def episode(max_bytes=1000, max_calls=4, cancel=None):
    events: list[tuple] = []
    return client._Episode(events.append, cancel or CancelToken(), max_bytes, max_calls), events


def cancelled_token() -> CancelToken:
    token = CancelToken()
    token.cancel()
    return token


def test_after_a_cancel_no_delta_and_no_usage_is_accepted():
    ep, events = episode(cancel=cancelled_token())
    with pytest.raises(client._Cancelled):
        ep.text("content", "late")
    with pytest.raises(client._Cancelled):
        ep.set_usage({"usage": {"total_tokens": 3}})
    assert events == [] and ep.usage is None and not ep.delivered
    assert ep.result(cancelled=True).content == ""


@pytest.mark.parametrize(("obj", "usage"), [
    ({"usage": {}, "x_groq": {"usage": {"total_tokens": 4}}}, {"total_tokens": 4}),  # an empty one is none
    ({"usage": None, "x_groq": {"usage": {"total_tokens": 4}}}, {"total_tokens": 4}),
    ({"usage": {"total_tokens": 2}, "x_groq": {"usage": {"total_tokens": 4}}}, {"total_tokens": 2}),
    ({"usage": {}}, None),
    ({"usage": {}, "x_groq": {"usage": {}}}, None),
    ({"x_groq": "?"}, None),
])
def test_usage_comes_from_usage_else_from_x_groq_and_an_empty_one_is_none(obj, usage):
    ep, events = episode()
    ep.set_usage(obj)
    assert ep.usage == usage
    assert events == ([("usage", usage)] if usage else [])


def test_content_parts_skip_what_is_not_a_part_and_take_thinking_as_a_string():
    ep, events = episode()
    ep.content_value(["junk", {"type": "thinking", "thinking": "hmm"}, 7, {"type": "text", "text": "A"},
                      {"text": "B"}, {"type": "image_url", "text": "no"},
                      {"type": "thinking", "thinking": [{"type": "text", "text": "more"}, "x"]}])
    result = ep.result()
    assert (result.reasoning, result.content) == ("hmmmore", "AB")
    assert events == [("reasoning", "hmm"), ("content", "AB"), ("reasoning", "more")]


@pytest.mark.parametrize(("holder", "reasoning"), [
    ({"reasoning_content": "", "reasoning": "r"}, "r"),  # an empty one is none: the other name
    ({"reasoning_content": None, "reasoning": "r"}, "r"),
    ({"reasoning_content": "rc", "reasoning": "rc"}, "rc"),  # the same text under both: once
    ({"reasoning_content": 5, "reasoning": "r"}, "r"),
])
def test_reasoning_comes_from_one_of_its_two_names(holder, reasoning):
    ep, _ = episode()
    ep.reasoning_value(holder)
    assert ep.result().reasoning == reasoning


@pytest.mark.parametrize(("finish", "kept"), [("stop", "stop"), ("", None), (None, None), (3, None)])
def test_only_a_non_empty_string_is_a_finish_reason(finish, kept):
    ep, _ = episode()
    ep.set_finish({"finish_reason": finish})
    assert ep.finish_reason == kept


def delta_choice(index, text, **extra):
    choice = {"delta": {"content": text}, **extra}
    if index is not None:
        choice["index"] = index
    return choice


@pytest.mark.parametrize(("choices", "content"), [
    ([delta_choice(1, "one"), delta_choice(0, "zero")], "zero"),  # the choice of index 0, wherever it is
    (["junk", delta_choice(0, "zero")], "zero"),
    ([delta_choice(None, "unnumbered"), delta_choice(1, "one")], "unnumbered"),  # no index: the first
    ([delta_choice(1, "one"), delta_choice(None, "unnumbered")], "unnumbered"),
    ([delta_choice(1, "one"), delta_choice(2, "two")], "one"),  # none has index 0: the first
    ([delta_choice(0, "zero"), delta_choice(1, "one")], "zero"),
    ([delta_choice(-1, "minus one"), delta_choice(0, "zero")], "zero"),
])
def test_a_chunk_takes_the_choice_of_index_zero(choices, content):
    ep, _ = episode()
    ep.chunk({"choices": choices})
    assert ep.result().content == content


def test_a_whole_completion_numbers_its_tool_calls_in_order():
    ep, _ = episode()
    calls = [{"type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": str(i)})}}
             for i in range(3)]  # no index, no id: their order numbers them
    ep.completion({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls},
                                "finish_reason": "tool_calls"}]})
    got = ep.result().tool_calls
    assert [c["args"] for c in got] == [{"path": "0"}, {"path": "1"}, {"path": "2"}]


@pytest.mark.parametrize(("obj", "content"), [
    ({"choices": [{"delta": {"content": "as a delta"}, "finish_reason": "stop"}]}, "as a delta"),
    ({"choices": [{"message": "?", "delta": {"content": "as a delta"}}]}, "as a delta"),
    ({"choices": [{"message": {"content": "first"}}, {"message": {"content": "second"}}]}, "first"),
    ({"choices": ["junk", {"message": {"content": "second"}}]}, ""),
    ({"choices": []}, ""),
    ({"choices": [{"message": {"content": "m"}, "delta": {"content": "d"}}]}, "m"),
])
def test_a_whole_completion_reads_the_first_choices_message(obj, content):
    ep, _ = episode()
    ep.completion(obj)
    assert ep.result().content == content


def test_tool_call_bytes_may_reach_the_bound_exactly():
    call = {"index": 0, "id": "c", "function": {"name": "n", "arguments": "x" * 8}}  # 10 bytes
    ep, _ = episode(max_bytes=10)
    ep.tool_deltas([call])
    assert client.toolcalls.size(ep.acc) == 10
    ep, _ = episode(max_bytes=9)
    with pytest.raises(ChatError) as info:
        ep.tool_deltas([call])
    assert info.value.kind == "bound"


# ---- reading helpers --------------------------------------------------------------------


def reads_of(*pieces):
    calls = []
    it = iter(pieces)

    def read():
        calls.append(1)
        return next(it, b"")

    return read, calls


@pytest.mark.parametrize(("pieces", "limit", "expected"), [
    ((b"abc", b"def"), 6, (b"abcdef", False)),  # exactly the limit: not more
    ((b"abc", b"defg"), 6, (b"abcdef", True)),
    ((b"abcdefgh",), 6, (b"abcdef", True)),
    ((), 6, (b"", False)),
])
def test_read_capped_says_whether_there_was_more(pieces, limit, expected):
    read, _ = reads_of(*pieces)
    assert client._read_capped(read, limit) == expected


def test_an_error_body_is_read_up_to_64_kib_and_no_further():
    read, calls = reads_of(b"x" * 70_000, b"y" * 1000, b"never")
    body = client._read_error_body(read)
    assert body == b"x" * (64 << 10) and len(calls) == 1  # the cap reached: no read more
    read, calls = reads_of(b"x" * 65535, b"yz", b"never")
    assert client._read_error_body(read) == b"x" * 65535 + b"y" and len(calls) == 2
    read, calls = reads_of(b"x" * 65536, b"never")
    assert client._read_error_body(read) == b"x" * 65536 and len(calls) == 1


def test_an_error_body_that_breaks_off_keeps_what_came():
    pieces = iter([b"partial ", b"body"])

    def read():
        piece = next(pieces, None)
        if piece is None:
            raise OSError("connection reset")
        return piece

    assert client._read_error_body(read) == b"partial body"


class StubResponse:
    def __init__(self, content_type=None, raw=None, chunks=()):
        import requests.structures

        self.headers = requests.structures.CaseInsensitiveDict()
        if content_type is not None:
            self.headers["Content-Type"] = content_type
        self.raw = raw
        self._chunks = list(chunks)

    def iter_content(self, chunk_size=None):
        assert chunk_size is None
        return iter(self._chunks)


@pytest.mark.parametrize(("content_type", "media"), [
    ("text/event-stream", "text/event-stream"),
    ("Text/Event-Stream; charset=utf-8", "text/event-stream"),
    (" application/json ;charset=utf-8; x=y", "application/json"),
    ("text/html;charset=utf-8", "text/html"),
    (None, ""),
    ("", ""),
])
def test_the_media_type_is_the_content_type_without_parameters(content_type, media):
    assert client._media_type(StubResponse(content_type)) == media


def test_without_read1_the_body_comes_from_iter_content(monkeypatch):
    from dashfloat.llm import viarequests

    monkeypatch.setattr(viarequests.bodyreader, "plain_reader", lambda resp, size: None)
    read, batched = viarequests._reader(StubResponse(raw=object(), chunks=[b"ab", b"cd"]), client.READ_SIZE)
    assert batched is False
    assert [read(), read(), read(), read()] == [b"ab", b"cd", b"", b""]


def test_with_read1_the_body_is_decoded_one_read_at_a_time(monkeypatch):
    class Raw:
        def __init__(self):
            self.pieces = [b"ab", None, b"cd"]
            self.calls = []

        def read1(self, n, decode_content=False):
            self.calls.append((n, decode_content))
            return self.pieces.pop(0) if self.pieces else b""

    from dashfloat.llm import viarequests

    raw = Raw()
    monkeypatch.setattr(viarequests.bodyreader, "plain_reader", lambda resp, size: None)
    read, batched = viarequests._reader(StubResponse(raw=raw), client.READ_SIZE)
    assert batched is False
    assert [read(), read(), read(), read()] == [b"ab", b"", b"cd", b""]
    assert raw.calls[0] == (client.READ_SIZE, True)


# ---- found by `make mutation` (i8 §5): through the server ---------------------------------


def test_a_failing_callback_is_not_taken_for_a_network_failure(fake_server):
    def on_event(e):
        raise RuntimeError("the UI broke")

    fake_server.push(sse_reply(["a"]))
    with pytest.raises(RuntimeError, match="the UI broke"):
        run(fake_server, on_event=on_event)


def test_an_unexpected_failure_of_the_request_is_not_swallowed(fake_server, monkeypatch):
    def open_request(*a, **kw):
        raise ValueError("a bug, not the network")

    monkeypatch.setattr(transport, "open_request", open_request)
    with pytest.raises(ValueError, match="a bug"):
        run(fake_server)


def test_a_cancel_as_the_headers_arrive_reads_nothing(fake_server, monkeypatch):
    cancel = CancelToken()
    real_open = transport.open_request

    def open_request(*a, **kw):
        resp = real_open(*a, **kw)
        cancel.cancel()
        return resp

    monkeypatch.setattr(transport, "open_request", open_request)
    fake_server.push(sse_reply(["never shown"]))
    result, events = run(fake_server, cancel=cancel)
    assert result.cancelled is True and result.content == "" and events == []


def test_a_cancel_while_an_error_body_is_read_is_a_cancel_not_an_error(fake_server, monkeypatch):
    cancel = CancelToken()
    real = client._read_error_body

    def read_then_cancel(read):
        body = real(read)
        cancel.cancel()
        return body

    monkeypatch.setattr(client, "_read_error_body", read_then_cancel)
    fake_server.push(json_reply(500, {"error": {"message": "boom"}}))
    result, events = run(fake_server, cancel=cancel)
    assert result.cancelled is True and events == []


@pytest.mark.parametrize("failure", [OSError("reset"), ChatError("bound", "too big", "smaller")])
def test_a_failure_after_a_cancel_is_the_cancel(fake_server, monkeypatch, failure):
    cancel = CancelToken()

    def consume(*a, **kw):
        cancel.cancel()
        raise failure

    monkeypatch.setattr(client, "_consume", consume)
    fake_server.push(sse_reply(["x"]))
    result, events = run(fake_server, cancel=cancel)
    assert result.cancelled is True and result.content == "" and events == []


def test_the_key_and_secret_headers_are_masked_in_errors_without_the_cli(fake_server):
    import uuid

    key, secret = "k" + uuid.uuid4().hex, "h" + uuid.uuid4().hex
    body = {"error": {"message": f"key {key} and header {secret} are not valid"}}
    fake_server.push(json_reply(401, body))
    err, _ = fail(fake_server, ep=endpoint(fake_server, api_key=key, headers={"X-Api-Key": secret}))
    assert key not in str(err) and secret not in str(err) and "are not valid" in str(err)
    key2 = "k" + uuid.uuid4().hex
    fake_server.models_reply = json_reply(401, {"error": {"message": f"key {key2} is not valid"}})
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server, api_key=key2))
    assert key2 not in str(info.value) and "is not valid" in str(info.value)


@pytest.mark.parametrize(("status", "ok"), [(200, True), (299, True), (300, False)])
def test_only_a_2xx_status_is_an_answer(fake_server, status, ok):
    fake_server.push(sse_reply(["fine"], status=status))
    if ok:
        assert run(fake_server)[0].content == "fine"
    else:
        err, events = fail(fake_server)
        assert err.status == status and events == []


@pytest.mark.parametrize("reply", [
    raw_reply(200, b"Bad gateway\n", "text/html; charset=utf-8"),  # says html, does not start with <
    raw_reply(200, b" " * 100 + b"<html><title>Proxy</title></html>", "text/plain"),  # < after 64 blanks
    raw_reply(200, b"\n" * 100 + b"<error>nope</error>", "application/octet-stream"),
])
def test_a_200_page_is_an_http_error_whatever_its_label(fake_server, reply):
    # a page (HTML, XML) instead of an answer: the reply of something that is not the API
    fake_server.push(reply)
    err, events = fail(fake_server)
    assert err.kind in ("html", "http") and err.status == 200 and events == []


def test_a_big_completion_labelled_text_plain_is_read_whole(fake_server):
    text = "x" * (100 << 10)  # past what is kept of a body while looking for a first event
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    fake_server.push(raw_reply(200, json.dumps(body).encode(), "text/plain"))
    result, _ = run(fake_server)
    assert result.content == text and result.finish_reason == "stop"


def completion_bytes(size: int) -> bytes:
    """A whole chat.completion of exactly `size` bytes (padded with blanks)."""
    body = json.dumps({"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}).encode()
    assert len(body) <= size
    return body + b" " * (size - len(body))


@pytest.mark.parametrize(("size", "split", "ok"), [
    (150, False, True), (151, False, False), (150, True, True), (151, True, False),
])
def test_a_whole_completion_is_bounded_by_the_answer_plus_one_event(fake_server, size, split, ok):
    # the bound: max_episode_bytes (100) + max_event_bytes (50) = 150 bytes
    body = completion_bytes(size)
    if split:  # the head first, the rest once the client read it
        reply = Reply(headers={"Content-Type": "application/json"}, chunks=[body[:20], body[20:]], delay=0.05)
    else:
        reply = raw_reply(200, body, "application/json")
    fake_server.push(reply)
    if ok:
        assert run(fake_server, max_episode_bytes=100, max_event_bytes=50)[0].content == "ok"
    else:
        err, events = fail(fake_server, max_episode_bytes=100, max_event_bytes=50)
        assert err.kind == "bound" and "a non-streamed reply" in err.message and events == []


def test_a_cancel_while_a_whole_completion_is_read_keeps_none_of_it(fake_server, monkeypatch):
    cancel = CancelToken()
    real = client._read_capped

    def read_then_cancel(read, limit):
        got = real(read, limit)
        cancel.cancel()
        return got

    monkeypatch.setattr(client, "_read_capped", read_then_cancel)
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
    fake_server.push(json_reply(200, {"choices": [{"index": 0, "message": {"content": None, "tool_calls": [call]},
                                                   "finish_reason": "tool_calls"}]}))
    result, events = run(fake_server, cancel=cancel)
    assert result.cancelled is True and result.tool_calls == [] and events == []


def test_requests_never_retries():
    from dashfloat.llm import viarequests

    session = viarequests._session()
    try:
        for url in ("http://h/v1", "https://h/v1"):
            adapter = session.get_adapter(url)
            assert isinstance(adapter, viarequests._Adapter)
            assert adapter.max_retries.total == 0
    finally:
        session.close()


# ---- found by `make mutation` (i8 §5): cancel reaches every socket ------------------------


def test_a_socket_that_connects_after_the_cancel_is_shut_down_at_once():
    token = CancelToken()
    token.cancel()
    ours, peer = socket.socketpair()
    try:
        token._attach(ours)
        peer.settimeout(2)
        assert peer.recv(1) == b""  # the peer sees the end at once
    finally:
        ours.close()
        peer.close()


class SilentListener:
    """A TCP listener that accepts connections and never says a word (a TLS server that does
    not answer the handshake, a proxy that does not answer)."""

    def __init__(self, wrap=None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.wrap = wrap
        self.accepted = threading.Event()
        self.conns: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.wrap is not None:
                try:
                    conn = self.wrap(conn)
                    conn.recv(65536)  # the request: read, never answered
                except OSError:
                    conn.close()
                    continue
            self.conns.append(conn)
            self.accepted.set()

    def close(self):
        with contextlib.suppress(OSError):  # wakes the thread's accept (a close alone does not)
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for c in self.conns:
            c.close()


def cancel_once_accepted(listener: SilentListener, ep: Endpoint):
    cancel = CancelToken()
    w = Worker(None, cancel=cancel, ep=ep)
    w.start()
    assert listener.accepted.wait(5), "the client never connected"
    t0 = time.monotonic()
    cancel.cancel()
    w.join(3.0)
    assert not w.is_alive(), "stream_chat did not return within 3 s of cancel()"
    assert w.error is None, w.error
    assert w.result.cancelled is True and w.finished_at - t0 < 3.0


def test_a_cancel_interrupts_the_tls_handshake():
    listener = SilentListener()
    try:
        cancel_once_accepted(listener, Endpoint(f"https://127.0.0.1:{listener.port}/v1",
                                                connect_timeout=20.0, read_timeout=20.0))
    finally:
        listener.close()


def test_a_cancel_interrupts_the_wait_for_headers_through_tls(tmp_path, monkeypatch):
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    listener = SilentListener(wrap=lambda conn: context.wrap_socket(conn, server_side=True))
    try:
        cancel_once_accepted(listener, Endpoint(f"https://127.0.0.1:{listener.port}/v1",
                                                connect_timeout=20.0, read_timeout=20.0))
    finally:
        listener.close()


def test_a_cancel_interrupts_the_wait_for_a_proxy(monkeypatch):
    listener = SilentListener()
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{listener.port}")
    try:
        cancel_once_accepted(listener, Endpoint("http://llm.invalid/v1", connect_timeout=20.0, read_timeout=20.0))
    finally:
        listener.close()


def test_a_finished_request_leaves_its_token_behind(fake_server):
    # the thread's next connection (a model list) is not the finished request's to cancel
    token = CancelToken()
    fake_server.push(sse_reply(["done"]))
    run(fake_server, cancel=token)
    release = threading.Event()
    fake_server.models_reply = Reply(headers={"Content-Type": "application/json"},
                                     chunks=[json.dumps({"data": [{"id": "m"}]}).encode()], hold=release)

    def cancel_then_release():
        fake_server.wait_requests(2)
        token.cancel()
        release.set()

    t = threading.Thread(target=cancel_then_release)
    t.start()
    try:
        assert list_models(endpoint(fake_server)) == ["m"]
    finally:
        release.set()
        t.join()


# ---- found by `make mutation` (i8 §5): model lists --------------------------------------


def test_a_model_list_is_asked_for_without_a_body_type(fake_server):
    assert list_models(endpoint(fake_server)) == ["test-model"]
    (req,) = fake_server.wait_requests(1)
    assert "content-type" not in req["headers"] and req["headers"]["accept"] == "application/json"


def test_a_model_list_answered_with_300_is_an_error(fake_server):
    fake_server.models_reply = json_reply(300, {"data": [{"id": "m"}]})
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server))
    assert info.value.status == 300


@pytest.mark.parametrize(("extra", "ok"), [(0, True), (1, False)])
def test_a_model_list_is_bounded_at_8_mib(fake_server, extra, ok):
    body = json.dumps({"data": [{"id": "m"}]}).encode()
    body += b" " * ((8 << 20) + extra - len(body))
    fake_server.models_reply = raw_reply(200, body, "application/json")
    if ok:
        assert list_models(endpoint(fake_server)) == ["m"]
    else:
        with pytest.raises(ChatError) as info:
            list_models(endpoint(fake_server))
        assert info.value.kind == "bound" and "a model list exceeded 8 MiB" in info.value.message


@pytest.mark.parametrize(("obj", "ids"), [
    ({"data": ["s", {"id": "a"}, {"name": "b"}, {"model": "c"}, {"id": "", "name": "d"}, {"id": 5, "model": "e"},
               {"id": "a"}, 7, {"other": "x"}]}, ["a", "b", "c", "d", "e", "s"]),
    ({"models": [{"name": "llama3:8b"}, {"model": "qwen"}]}, ["llama3:8b", "qwen"]),  # Ollama's /api/tags shape
    ({"data": "?", "models": [{"id": "x"}]}, ["x"]),
    ([{"id": "bare"}, "list"], ["bare", "list"]),
    ({"data": []}, []),
])
def test_model_ids_in_the_shapes_servers_use(obj, ids):
    assert client._model_ids(obj) == ids


@pytest.mark.parametrize("obj", [{"data": None}, {"object": "list"}, "text", 5])
def test_a_model_list_without_a_list_is_an_error(obj):
    with pytest.raises(ChatError) as info:
        client._model_ids(obj)
    assert info.value.kind == "bad_json"


@pytest.mark.parametrize(("size", "ok"), [(client.HEAD_MAX, True), (client.HEAD_MAX + 1, False)])
def test_a_bare_completion_labelled_as_a_stream_is_read_up_to_64_kib(fake_server, size, ok):
    # a body with no stream event is kept up to 64 KiB to tell what it was
    pad = "x" * (size - len(json.dumps({"choices": [{"index": 0, "message": {"content": ""}}]})))
    body = json.dumps({"choices": [{"index": 0, "message": {"content": pad}}]}).encode()
    assert len(body) == size and client.HEAD_MAX == 64 << 10
    fake_server.push(Reply(headers={"Content-Type": "text/event-stream"}, chunks=[body[:1000], body[1000:]]))
    if ok:
        assert run(fake_server)[0].content == pad
    else:
        err, _ = fail(fake_server)
        assert err.kind == "bad_json"


def test_a_read_below_8_kib_is_small_and_the_first_pause_is_12_5_ms(monkeypatch):
    naps: list[float] = []
    monkeypatch.setattr(client, "_nap", naps.append)
    script = [b"x" * 8192, b"x" * 8191, b"x" * 8192, b"x" * 100, b"x", b"x", b"x", b"x"]
    read = client._coalescing(iter(script).__next__, CancelToken())
    for _ in script:
        read()
    assert naps == [0.0125, 0.0125, 0.025, 0.05, 0.05]  # doubling up to 50 ms


def test_a_model_list_that_stalls_says_whether_the_headers_came(fake_server):
    never = threading.Event()
    fake_server.models_reply = Reply(headers={"Content-Type": "application/json"}, chunks=[b'{"data": [', b"]}"],
                                     stall_after=1)
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server, read_timeout=0.5))
    assert info.value.kind == "idle_timeout" and "the stream stalled" in info.value.message
    fake_server.models_reply = Reply(headers={"Content-Type": "application/json"}, chunks=[b"{}"], hold_headers=never)
    try:
        with pytest.raises(ChatError) as info:
            list_models(endpoint(fake_server, read_timeout=0.5))
    finally:
        never.set()
    assert info.value.kind == "idle_timeout" and "no response" in info.value.message


@pytest.mark.parametrize(("reply", "where"), [
    (json_reply(200, 5), "a reply"),  # JSON, but not an object
    (json_reply(200, [1, 2]), "a reply"),
    (Reply(chunks=[ev(chunk({"content": "x"})), b"data: [1, 2]\n\n"]), "x"),  # an event that is not an object
    (Reply(headers={"Content-Type": "text/event-stream"}, chunks=[b"{not json"]), "a 200 body with no stream events"),
])
def test_json_that_is_not_an_answer_is_bad_json(fake_server, reply, where):
    fake_server.push(reply)
    err, _ = fail(fake_server)
    assert err.kind == "bad_json"


def test_a_model_list_that_is_not_json_is_bad_json(fake_server):
    fake_server.models_reply = raw_reply(200, b"models: a, b", "application/json")
    with pytest.raises(ChatError) as info:
        list_models(endpoint(fake_server))
    assert info.value.kind == "bad_json" and "a model list" in info.value.message



def test_no_event_after_a_cancel_is_taken_not_even_a_tool_call(fake_server):
    # the cancel comes from the usage callback; the tool call behind it, in the same read, is dropped
    cancel = CancelToken()

    def on_event(e):
        if e[0] == "usage":
            cancel.cancel()

    usage = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [], "usage": {"total_tokens": 1}}
    call = [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]
    body = ev(usage) + ev(chunk({"tool_calls": call})) + ev(chunk(finish="tool_calls")) + ev("[DONE]")
    fake_server.push(Reply(chunks=[body]))
    result, _ = run(fake_server, cancel=cancel, on_event=on_event)
    assert result.cancelled is True and result.tool_calls == [] and result.finish_reason is None
