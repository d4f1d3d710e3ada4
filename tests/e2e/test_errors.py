"""End to end: every failed request becomes a transcript entry (never a traceback, never a
dead UI), and the next prompt still works."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.harness import Term, clean_env
from tests.fakeserver import Reply, json_reply, raw_reply, sse_chunks, sse_reply


def _stream_error_reply() -> Reply:
    """A 200 stream that sends some content, then an error object, then ends."""
    chunks = sse_chunks(["Partial ", "content ", "before the failure"], finish_reason=None, done=False)
    err = {"error": {"message": "upstream overloaded, giving up", "type": "server_error", "code": 503}}
    chunks.append(f"data: {json.dumps(err)}\n\n".encode())
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=chunks)


def _llamacpp_error_field_reply() -> Reply:
    """llama.cpp's server (older builds): some text, then its failure as an `error:` line
    that a plain SSE parser ignores, then [DONE]."""
    chunks = sse_chunks(["Half of ", "the answer"], finish_reason=None, done=False)
    chunks.append(b'error: {"code":500,"message":"Failed to decode the batch: KV cache is full",'
                  b'"type":"server_error"}\n\n')
    chunks.append(b"data: [DONE]\n\n")
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=chunks)


def _empty_reply() -> Reply:
    """llama-cpp-python when the model fails after the 200: keep-alive pings, no data."""
    return Reply(headers={"Content-Type": "text/event-stream"},
                 chunks=[b": ping - 2025-06-01 12:00:00.000000+00:00\n\n"])


LLAMACPP_OVERFLOW = {"error": {"code": 400, "message": "request (9412 tokens) exceeds the available context "
                               "size (8192 tokens), try increasing it", "type": "exceed_context_size_error",
                               "n_prompt_tokens": 9412, "n_ctx": 8192}}

HTML = (b"<!DOCTYPE html><html><head><title>Open WebUI Login</title></head>"
        b"<body><h1>Sign in</h1></body></html>")

# id: (reply, extra environment, strings the error entry must hold (found across wraps))
CASES = {
    "401-no-key": (
        lambda: json_reply(401, {"error": {"message": "Missing bearer token", "type": "auth"}}),
        {},
        ["requires an API key", "OPENAI_API_KEY"],
    ),
    "401-key-set": (
        lambda: json_reply(401, {"error": {"message": "Incorrect API key provided", "type": "auth"}}),
        {"OPENAI_API_KEY": "sk-e2e-secret-value"},
        ["rejected", "OPENAI_API_KEY"],
    ),
    "429-retry-after": (
        lambda: json_reply(429, {"error": {"message": "Too many requests", "type": "rate_limit"}},
                           headers={"Retry-After": "17"}),
        {},
        ["rate limited", "17 s"],
    ),
    "404-model": (
        lambda: json_reply(404, {"error": {"message": "no such model here", "type": "not_found"}}),
        {},
        ["'test-model'", "{url}/chat/completions", "not found"],
    ),
    "html-page": (
        lambda: raw_reply(200, HTML, "text/html; charset=utf-8"),
        {},
        ["HTML page", "Open WebUI Login"],
    ),
    "error-in-stream": (
        _stream_error_reply,
        {},
        ["Partial content before the failure", "[stopped by an error",
         "upstream overloaded, giving up", "incomplete"],
    ),
    "llamacpp-error-field": (
        _llamacpp_error_field_reply,
        {},
        ["Half of the answer", "[stopped by an error", "KV cache is full", "incomplete"],
    ),
    "empty-200": (
        _empty_reply,
        {},
        ["closed the stream without sending anything", "log"],
    ),
    "context-overflow": (
        lambda: json_reply(400, LLAMACPP_OVERFLOW),
        {},
        ["too long for the model's context window", "9412 tokens", "new conversation"],
    ),
}


def _no_traceback(t: Term) -> None:
    for word in ("Traceback", "Error:", 'File "'):
        assert word not in t.text, f"{word!r} on screen:\n{t.dump()}"


@pytest.mark.parametrize("case", list(CASES))
def test_error_is_a_chat_entry_and_app_stays_usable(case, dash, server, tmp_path):
    make_reply, extra_env, expected = CASES[case]
    server.push(make_reply())
    t = dash(env=clean_env(tmp_path, **extra_env))
    t.type("first question\r")
    expected = [e.replace("{url}", server.url) for e in expected]
    t.wait_for(lambda t: all(e in t.flat for e in expected) and " idle " in t.status(),
               what=f"the error entry {expected} and idle")
    _no_traceback(t)
    assert "[model returned nothing]" not in t.flat, t.dump()
    if "OPENAI_API_KEY" in extra_env:
        assert server.requests[0]["headers"].get("authorization") == "Bearer sk-e2e-secret-value"
        assert "sk-e2e-secret-value" not in t.flat, "the key itself is never shown"

    server.push(sse_reply(["Recovered ", "just fine."]))
    t.type("second question\r")
    t.wait_text("Recovered just fine.")
    t.wait_status("idle")
    _no_traceback(t)
    assert all(e in t.flat for e in expected), "the error entry stays in the transcript"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connection_refused_is_a_chat_entry(dash, tmp_path):
    port = _closed_port()
    t = dash(base_url=f"http://127.0.0.1:{port}/v1")
    t.type("anyone there?\r")
    t.wait_for(lambda t: "connection refused" in t.flat and " idle " in t.status(), what="refused entry, idle")
    assert f"127.0.0.1:{port}" in t.flat
    _no_traceback(t)
    # usable afterwards: a second prompt is sent and fails the same way, as a second entry
    t.type("still there?\r")
    t.wait_for(lambda t: t.flat.count("connection refused") >= 2 and " idle " in t.status(),
               what="a second refused entry")
    assert "still there?" in t.text
    _no_traceback(t)


def test_error_before_any_answer_does_not_claim_a_partial_answer(dash, server):
    """A request that fails before any answer text (here a 401) has no answer to call
    incomplete: the transcript should show the error entry, not a marker saying 'the
    answer above is incomplete' under an empty answer."""
    server.push(json_reply(401, {"error": {"message": "Missing bearer token", "type": "auth"}}))
    t = dash()
    t.type("hello\r")
    t.wait_for(lambda t: "requires an API key" in t.flat and " idle " in t.status(), what="the 401 entry")
    transcript = "\n".join(t.transcript())
    assert "the answer above is incomplete" not in transcript, transcript


def test_error_entry_hint_starts_a_sentence(dash, server):
    """The hint after the error's first sentence starts with a capital letter, as
    ChatError's own str() writes it ("... none is set: Missing bearer token. Set
    OPENAI_API_KEY ..."), not "... token. set OPENAI_API_KEY"."""
    server.push(json_reply(401, {"error": {"message": "Missing bearer token", "type": "auth"}}))
    t = dash()
    t.type("hello\r")
    t.wait_for(lambda t: "requires an API key" in t.flat and " idle " in t.status(), what="the 401 entry")
    assert "Missing bearer token. Set OPENAI_API_KEY" in t.flat, t.dump()
