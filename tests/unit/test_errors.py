"""classify_http (pure table) and classify_exception (real exception objects, built the way
requests/urllib3 chain them)."""

from __future__ import annotations

import errno
import json
import socket
import ssl

import pytest
import requests
import urllib3
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool

from dashfloat.llm import errors
from dashfloat.llm.errors import ChatError, classify_exception, classify_http

BASE = "https://api.example.com/v1"
URL = BASE + "/chat/completions"


def http(status, body=b"", headers=None, *, key_set=True, model="gpt-x", default=False, base=BASE):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
    return classify_http(
        status,
        headers or {},
        body,
        base_url=base,
        model=model,
        api_key_env="MY_KEY",
        key_set=key_set,
        default_endpoint=default,
    )


# ---- the shape of a ChatError ---------------------------------------------------------


def test_chat_error_str_is_one_line_message_then_hint():
    e = ChatError("server", "it broke\nbadly.", "try\tagain", status=500)
    assert str(e) == "it broke badly. Try again"
    assert "\n" not in str(e)
    d = e.as_dict()
    assert d == {
        "kind": "server",
        "message": "it broke badly.",
        "hint": "try again",
        "status": 500,
        "retry_after": None,
        "partial": False,
    }
    json.dumps(d)


# ---- provider message shapes ----------------------------------------------------------


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}},
         "Invalid value for 'temperature'"),
        ({"error": "model 'llama9' not found, try pulling it first"},
         "model 'llama9' not found, try pulling it first"),
        ({"message": "Invalid model: foo", "object": "error"}, "Invalid model: foo"),
        ({"detail": "Not authenticated"}, "Not authenticated"),
        ({"detail": [{"loc": ["body", "messages"], "msg": "field required", "type": "missing"}]},
         "body.messages: field required"),
        ([{"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}],
         "API key not valid"),
        ({"error": {"message": "Provider returned error", "code": 400,
                    "metadata": {"raw": "context too long", "provider_name": "Foo"}}},
         "Provider returned error (Foo: context too long)"),
    ],
)
def test_400_carries_the_provider_message_in_every_body_shape(body, expected):
    e = http(400, body)
    assert e.kind == "bad_request"
    assert e.status == 400
    assert expected in e.message
    assert e.hint


def test_provider_text_is_escaped_and_shortened():
    evil = "\x1b]0;pwned\x07" + "x" * 1000 + "\nsecond line"
    e = http(400, {"error": {"message": evil}})
    assert "\x1b" not in e.message and "\x07" not in e.message
    assert "\\e" in e.message
    assert "\n" not in e.message
    detail = e.message.split(": ", 1)[1]
    assert len(detail) <= errors.PROVIDER_TEXT_MAX


def test_plain_text_error_body_is_used_as_the_message():
    e = http(400, b"bad things happened", {"Content-Type": "text/plain"})
    assert "bad things happened" in e.message


# ---- the table ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status, kind",
    [
        (301, "http"),
        (400, "bad_request"),
        (401, "auth"),
        (402, "http"),
        (403, "auth"),
        (404, "not_found"),
        (405, "http"),
        (408, "http"),
        (413, "bad_request"),
        (418, "http"),
        (422, "bad_request"),
        (429, "rate_limit"),
        (500, "server"),
        (502, "server"),
        (503, "server"),
        (504, "server"),
        (599, "server"),
        (200, "http"),
    ],
)
def test_every_status_class_maps_to_a_kind_with_a_hint(status, kind):
    e = http(status, {"error": {"message": "provider says no"}})
    assert e.kind == kind
    assert e.status == status
    assert e.message and e.hint
    assert "\n" not in str(e)
    if status != 200 and not 300 <= status < 400:
        assert "provider says no" in e.message


def test_401_without_key_says_to_set_the_variable():
    e = http(401, {"error": {"message": "Missing bearer"}}, key_set=False)
    assert e.kind == "auth"
    assert "none is set" in e.message
    assert "Missing bearer" in e.message
    assert "set MY_KEY" in e.hint


def test_401_with_key_says_the_key_was_rejected():
    e = http(401, {"error": {"message": "Incorrect API key provided"}}, key_set=True)
    assert e.kind == "auth"
    assert "the key in $MY_KEY was rejected" in e.message
    assert "Incorrect API key provided" in e.message
    assert "$MY_KEY" in e.hint


def test_403_with_key_mentions_model_access():
    e = http(403, {"error": "forbidden"}, key_set=True)
    assert e.kind == "auth" and "rejected" in e.message and "model" in e.hint


def test_404_names_model_and_url_and_hints_models_and_v1():
    e = http(404, {"error": {"message": "The model `gpt-x` does not exist"}})
    assert e.kind == "not_found"
    assert "'gpt-x'" in e.message
    assert URL in e.message
    assert "does not exist" in e.message
    assert "--model" in e.hint and f"GET {BASE}/models" in e.hint and "/v1" in e.hint


def test_404_without_a_model_names_the_url():
    e = classify_http(
        404, {}, b"404 page not found", base_url="http://h:1", model="", api_key_env="K",
        key_set=False, default_endpoint=False, url="http://h:1/models",
    )
    assert e.kind == "not_found"
    assert "http://h:1/models" in e.message and "/v1" in e.hint


def test_429_includes_retry_after():
    e = http(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "20"})
    assert e.kind == "rate_limit"
    assert e.retry_after == "20"
    assert "retry after 20 s" in e.message
    assert "Rate limit reached" in e.message
    assert "wait 20 s" in e.hint


def test_429_without_retry_after():
    e = http(429, {"error": {"message": "You exceeded your current quota"}})
    assert e.retry_after is None
    assert "quota" in e.message and "wait" in e.hint


def test_headers_are_case_insensitive():
    e = http(503, b"", {"retry-after": "5"})
    assert e.retry_after == "5"
    assert e.kind == "server"


def test_5xx_on_the_default_endpoint_points_at_the_ollama_log():
    e = http(500, {"error": "llama runner process has terminated"}, default=True,
             base="http://localhost:11434/v1")
    assert e.kind == "server" and "terminated" in e.message and "Ollama" in e.hint


def test_3xx_names_the_location():
    e = http(301, b"", {"Location": "https://api.example.com/v1/chat/completions"})
    assert e.kind == "http" and "redirect" in e.message
    assert "https://api.example.com/v1/chat/completions" in e.message


@pytest.mark.parametrize(
    "status, headers, body",
    [
        (200, {"Content-Type": "text/html; charset=utf-8"}, b"<!doctype html><html><title>Open WebUI</title></html>"),
        (200, {}, b"  <html><body>hello</body></html>"),
        (404, {"Content-Type": "text/html"}, b"<html><head><title>404 Not Found</title></head></html>"),
        (405, {"Content-Type": "text/html"}, b"<html>Method Not Allowed</html>"),
    ],
)
def test_html_page_where_the_api_was_expected(status, headers, body):
    e = classify_http(status, headers, body, base_url="http://localhost:8080", model="m",
                      api_key_env="K", key_set=False, default_endpoint=False)
    assert e.kind == "html"
    assert "serves a web page, not the API" in e.message
    assert "/v1" in e.hint
    assert "http://localhost:8080/chat/completions" in e.message


def test_html_page_when_base_url_already_ends_with_v1():
    e = classify_http(200, {"Content-Type": "text/html"}, b"<html></html>", base_url="http://localhost:3000/v1",
                      model="m", api_key_env="K", key_set=False, default_endpoint=False)
    assert e.kind == "html" and "/v1/v1" not in e.hint and "web UI" in e.hint


def test_html_error_page_from_a_proxy_stays_a_server_error_with_its_title():
    body = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    e = http(502, body, {"Content-Type": "text/html"})
    assert e.kind == "server"
    assert "502 Bad Gateway" in e.message


def test_stream_error_and_bad_json_helpers():
    e = errors.stream_error({"error": {"message": "Internal error", "code": 502}}, partial=True)
    assert e.kind == "stream_error" and e.partial and e.status == 502
    assert "Internal error" in e.message
    e = errors.bad_json("{not json", partial=False)
    assert e.kind == "bad_json" and "{not json" in e.message and not e.partial


# ---- exceptions -----------------------------------------------------------------------

_POOL = HTTPConnectionPool("api.example.com", 443)


def _conn():
    return HTTPConnection("api.example.com", 443)


def _wrapped(reason: Exception, outer=requests.exceptions.ConnectionError):
    """What requests raises: outer(MaxRetryError(reason=...)), chained."""
    mre = urllib3.exceptions.MaxRetryError(_POOL, "/v1/chat/completions", reason)
    mre.__cause__ = reason
    try:
        raise outer(mre)
    except outer as exc:
        return exc


def _new_conn_error(cause: OSError) -> urllib3.exceptions.NewConnectionError:
    e = urllib3.exceptions.NewConnectionError(
        _conn(), f"Failed to establish a new connection: {cause}"
    )
    e.__cause__ = cause
    return e


def classify(exc, *, default=False, phase="connect", base=BASE, **kw):
    return classify_exception(exc, base_url=base, default_endpoint=default, phase=phase, **kw)


def test_refused_on_the_default_endpoint_explains_ollama():
    exc = _wrapped(_new_conn_error(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")))
    e = classify(exc, default=True, base="http://localhost:11434/v1")
    assert e.kind == "refused"
    assert "no server at http://localhost:11434/v1" in e.message
    assert "Ollama" in e.message
    for way in ("--base-url", "OPENAI_BASE_URL", "base_url in .dashfloat/config.toml"):
        assert way in e.hint
    assert "start Ollama" in e.hint


def test_refused_elsewhere_names_the_url():
    exc = _wrapped(_new_conn_error(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")))
    e = classify(exc, base="http://10.0.0.5:8000/v1")
    assert e.kind == "refused"
    assert "10.0.0.5:8000" in e.message and "http://10.0.0.5:8000/v1" in e.message
    assert "--base-url" in e.hint


def test_dns_failure_names_the_host():
    gai = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    nre = urllib3.exceptions.NameResolutionError("api.exampel.com", _conn(), gai)
    nre.__cause__ = gai
    e = classify(_wrapped(nre), base="https://api.exampel.com/v1")
    assert e.kind == "dns"
    assert "'api.exampel.com'" in e.message
    assert "Name or service not known" in e.message


def test_bare_gaierror_is_dns():
    e = classify(socket.gaierror(-3, "Temporary failure in name resolution"))
    assert e.kind == "dns" and "api.example.com" in e.message


def test_tls_certificate_error():
    cert = ssl.SSLCertVerificationError(
        1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)"
    )
    u3 = urllib3.exceptions.SSLError(cert)
    u3.__cause__ = cert
    e = classify(_wrapped(u3, outer=requests.exceptions.SSLError))
    assert e.kind == "tls"
    assert "certificate" in e.message and "api.example.com" in e.message
    assert "REQUESTS_CA_BUNDLE" in e.hint


def test_tls_to_a_plain_http_port_hints_http():
    wrong = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)")
    e = classify(_wrapped(urllib3.exceptions.SSLError(wrong), outer=requests.exceptions.SSLError),
                 base="https://localhost:11434/v1")
    assert e.kind == "tls" and "http://" in e.hint
    assert "wrong version number" in e.message and "_ssl.c" not in e.message


def test_connect_timeout():
    cte = urllib3.exceptions.ConnectTimeoutError(
        _conn(), "Connection to api.example.com timed out. (connect timeout=10)"
    )
    e = classify(_wrapped(cte, outer=requests.exceptions.ConnectTimeout), connect_timeout=10.0)
    assert e.kind == "connect_timeout"
    assert "10 s" in e.message and "api.example.com" in e.message


def test_connect_timeout_value_read_from_the_message_when_not_given():
    cte = urllib3.exceptions.ConnectTimeoutError(_conn(), "timed out. (connect timeout=3.5)")
    e = classify(_wrapped(cte, outer=requests.exceptions.ConnectTimeout))
    assert e.kind == "connect_timeout" and "3.5 s" in e.message


def test_os_level_connect_timeout_is_a_connect_timeout():
    exc = _wrapped(_new_conn_error(TimeoutError(errno.ETIMEDOUT, "Connection timed out")))
    assert classify(exc).kind == "connect_timeout"


def test_idle_read_timeout_mid_stream():
    rte = urllib3.exceptions.ReadTimeoutError(_POOL, None, "Read timed out. (read timeout=0.3)")
    e = classify(rte, phase="stream", read_timeout=0.3)
    assert e.kind == "idle_timeout"
    assert "no data" in e.message and "0.3 s" in e.message
    assert "read_timeout" in e.hint


def test_read_timeout_waiting_for_headers():
    rte = urllib3.exceptions.ReadTimeoutError(_POOL, None, "Read timed out. (read timeout=120)")
    try:
        raise requests.exceptions.ReadTimeout(rte)
    except requests.exceptions.ReadTimeout as exc:
        e = classify(exc, phase="connect")
    assert e.kind == "idle_timeout" and "120 s" in e.message and "no response" in e.message


def test_bare_socket_timeout_is_idle():
    assert classify(TimeoutError("timed out"), phase="stream", read_timeout=5).kind == "idle_timeout"


def test_reset_mid_stream_is_a_connection_error():
    reset = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    pe = urllib3.exceptions.ProtocolError("Connection broken: ConnectionResetError(104, 'Connection reset by peer')", reset)
    pe.__cause__ = reset
    e = classify(pe, phase="stream")
    assert e.kind == "connection"
    assert "mid-stream" in e.message and "Connection reset by peer" in e.message


def test_incomplete_chunk_mid_stream_is_a_connection_error():
    pe = urllib3.exceptions.ProtocolError("Response ended prematurely")
    e = classify(pe, phase="stream")
    assert e.kind == "connection" and "ended prematurely" in e.message


def test_missing_scheme_in_base_url():
    with pytest.raises(requests.exceptions.RequestException) as info:
        # no network: requests finds no adapter for the "localhost:" scheme
        requests.Session().post("localhost:11434/v1/chat/completions")
    e = classify(info.value, base="localhost:11434/v1")
    assert e.kind == "connection"
    assert "http://" in e.hint


def test_every_classified_exception_is_one_line():
    samples = [
        ConnectionRefusedError(111, "Connection refused"),
        socket.gaierror(-2, "Name or service not known"),
        ssl.SSLError(1, "x"),
        TimeoutError("timed out"),
        ConnectionResetError(104, "reset\nwith newline"),
        RuntimeError("weird"),
    ]
    for exc in samples:
        e = classify(exc, phase="stream")
        assert e.kind in errors.KINDS
        assert "\n" not in str(e) and e.hint


# ---- a conversation longer than the context window ----------------------------------------

CONTEXT_BODIES = [
    pytest.param(400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, your "
                                            "messages resulted in 9000 tokens. Please reduce the length of the "
                                            "messages.", "type": "invalid_request_error", "param": "messages",
                                 "code": "context_length_exceeded"}}, id="openai"),
    pytest.param(400, {"error": {"code": 400, "message": "request (9412 tokens) exceeds the available context size "
                                                         "(8192 tokens), try increasing it",
                                 "type": "exceed_context_size_error", "n_prompt_tokens": 9412, "n_ctx": 8192}},
                 id="llama.cpp"),
    pytest.param(400, {"error": {"code": 400, "message": "input (9000 tokens) is larger than the max context size "
                                                         "(8192 tokens). skipping", "type": "invalid_request_error"}},
                 id="llama.cpp-older-wording"),
    pytest.param(500, b"Requested tokens (5000) exceed context window of 4096", id="llama-cpp-python-raw"),
    pytest.param(400, {"object": "error", "message": "The decoder prompt (length 9000) is longer than the maximum "
                                                     "model length of 8192. Make sure that `max_model_len` is no "
                                                     "smaller than the number of text tokens.",
                       "type": "BadRequestError", "param": None, "code": 400}, id="vllm"),
    pytest.param(400, {"error": {"message": "This endpoint's maximum context length is 131072 tokens. However, you "
                                            "requested about 140000 tokens", "code": 400}}, id="openrouter"),
    pytest.param(500, {"error": {"message": "input length (9000 tokens) exceeds the model's maximum context length "
                                            "(8192 tokens)", "type": "api_error"}}, id="ollama"),
    pytest.param(400, {"error": "Trying to keep the first 9000 tokens when context the overflows. However, the model "
                                "is loaded with context length of only 4096 tokens, which is not enough."},
                 id="lm-studio"),
    pytest.param(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
                 id="anthropic"),
    pytest.param(400, {"object": "error", "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for "
                                                     "model with 32768 maximum context length", "type":
                                                     "invalid_request_error"}, id="mistral"),
    pytest.param(400, {"error": {"message": "litellm.ContextWindowExceededError: litellm.BadRequestError: ...",
                                 "type": None, "param": None, "code": "400"}}, id="litellm"),
    pytest.param(413, {"error": {"message": "Input is too long for requested model."}}, id="bedrock"),
]


@pytest.mark.parametrize(("status", "body"), CONTEXT_BODIES)
def test_context_overflow_gets_its_own_kind_and_hint(status, body):
    e = http(status, body)
    assert e.kind == "context_length", e
    assert e.status == status
    assert "context window" in e.message
    assert "model name" not in e.hint and "new conversation" in e.hint and "/model" in e.hint


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "Invalid 'messages[1].content': string too long", "type": "invalid_request_error"}},
        {"error": {"message": "model 'llama9' not found, try pulling it first"}},
        {"error": {"message": "tools are not supported by this model", "code": 400}},
        {"error": {"message": "max_tokens must be at least 1", "param": "max_tokens"}},
    ],
)
def test_other_bad_requests_keep_the_bad_request_hint(body):
    e = http(400, body)
    assert e.kind == "bad_request" and "model name" in e.hint


def test_context_overflow_in_a_stream_error_object():
    e = errors.stream_error({"error": {"message": "context full", "n_ctx": 4096, "code": 400}}, partial=True)
    assert e.kind == "context_length" and e.partial and e.status == 400 and "context full" in e.message


def test_stream_error_takes_a_numeric_string_code_as_the_status():
    e = errors.stream_error({"error": {"message": "upstream", "code": "502"}})
    assert e.kind == "stream_error" and e.status == 502


def test_empty_and_cut_stream_errors_are_one_line_with_hints():
    for e in (errors.empty_stream(), errors.empty_stream(cause="broke"), errors.cut_stream(partial=True),
              errors.cut_stream(partial=False)):
        assert e.message and e.hint and "\n" not in str(e)


def test_azure_content_filter_400_says_so_instead_of_blaming_the_model_name():
    body = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                                 "management policy.", "type": None, "param": "prompt", "code": "content_filter",
                      "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation",
                                                    "content_filter_result": {"hate": {"filtered": True}}}}}
    e = http(400, body)
    assert e.kind == "bad_request" and "content filter" in e.message and "content management policy" in e.message
    assert "model name" not in e.hint and "rephrase" in e.hint


# ---- edges (found by `make mutation`) -------------------------------------------------------


def test_a_timeout_whose_value_is_unknown_reads_as_a_sentence():
    cte = urllib3.exceptions.ConnectTimeoutError(_conn(), "timed out")
    assert classify(_wrapped(cte, outer=requests.exceptions.ConnectTimeout)).message == \
        "no connection to api.example.com within the connect timeout"
    assert classify(TimeoutError("timed out"), phase="stream").message == \
        "no data from api.example.com within the read timeout: the stream stalled (idle timeout)"
    assert classify(TimeoutError("timed out")).message == \
        "no response from api.example.com within the read timeout after sending the request (idle timeout)"
    assert classify(TimeoutError("timed out"), read_timeout=120.0).message == \
        "no response from api.example.com for 120 s after sending the request (idle timeout)"


def test_provider_text_is_cut_to_exactly_300_characters():
    assert errors.clean("a" * 300) == "a" * 300
    cut = errors.clean("a" * 301)
    assert len(cut) == 300 and cut == "a" * 299 + "…"


def test_a_chat_error_of_an_unknown_kind_is_a_bug_caught_at_once():
    with pytest.raises(AssertionError):
        ChatError("bogus", "m")


def test_str_and_repr_without_a_hint():
    e = ChatError("http", "it failed.")
    assert str(e) == "it failed"
    assert repr(e) == "ChatError('http', 'it failed', status=None, partial=False)"


@pytest.mark.parametrize(("base_url", "host"), [
    ("http://h:8080/v1", "h:8080"), ("https://api.example.com/v1", "api.example.com"), ("not a url", "not a url"),
    ("http://[::1/v1", "http://[::1/v1"),
])
def test_the_host_named_in_messages(base_url, host):
    assert errors._host(base_url) == host


def test_status_text_with_and_without_a_phrase():
    assert errors._status_text(404) == "HTTP 404 Not Found"
    assert errors._status_text(599) == "HTTP 599"


def test_html_title_ignores_case_and_line_breaks():
    assert errors.html_title(b"<HTML><TITLE>\n502 Bad\nGateway\n</TITLE>") == "502 Bad Gateway"
    assert errors.html_title(b'<title lang="en">It &amp; broke</title>') == "It & broke"


def nested(kind: str, levels: int, leaf):
    """`leaf` wrapped `levels` times in the shape `kind` (each wrap is one level deeper)."""
    obj = leaf
    for _ in range(levels):
        obj = {"error": obj} if kind == "error" else [obj] if kind == "list" else {"detail": obj}
    return obj


@pytest.mark.parametrize("kind", ["error", "list", "detail"])
def test_a_message_is_looked_for_four_levels_deep_and_no_deeper(kind):
    assert errors.provider_message(nested(kind, 4, {"message": "deep"})) == "deep"
    assert errors.provider_message(nested(kind, 5, {"message": "too deep"})) is None
    assert errors.provider_message(nested(kind, 3000, {"message": "far"})) is None   # no RecursionError


def test_context_fields_are_looked_for_three_levels_deep_and_no_deeper():
    assert errors.context_overflow(nested("error", 3, {"n_ctx": 4096}))
    assert not errors.context_overflow(nested("error", 4, {"n_ctx": 4096}))
    assert not errors.context_overflow(nested("error", 3000, {"n_ctx": 4096}))


@pytest.mark.parametrize(("body", "message"), [
    (b'"just a string"', "just a string"),
    ("plain text from a proxy", "plain text from a proxy"),
    ("   ", None),
    ({"detail": {"message": "nested detail"}}, "nested detail"),
    ({"detail": ["not a dict", {"loc": ["body", "model"], "msg": "field required"}]}, "body.model: field required"),
    ({"error": {"message": "Provider returned error", "metadata": {"provider_name": "X", "raw": None}}},
     "Provider returned error"),
])
def test_provider_message_shapes(body, message):
    assert errors.provider_message(body) == message


def test_a_plain_text_body_can_say_context_overflow():
    assert errors.context_overflow("Requested tokens (5000) exceed context window of 4096")


CONTEXT = {"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}


@pytest.mark.parametrize(("status", "kind"), [
    (200, "http"), (401, "auth"), (402, "http"), (403, "auth"), (404, "not_found"), (405, "http"), (429, "rate_limit"),
])
def test_statuses_that_say_something_else_are_never_context_overflow(status, kind):
    assert http(status, CONTEXT).kind == kind


def test_a_context_overflow_over_http_is_not_partial_nor_mid_stream():
    e = http(400, CONTEXT)
    assert e.kind == "context_length" and e.partial is False
    assert e.message.startswith("the conversation is too long")
    e = errors.stream_error(CONTEXT)
    assert e.message.startswith("the server said mid-stream that the conversation is too long")


def test_an_html_page_with_a_client_error_status_is_that_error():
    page = b"<html><head><title>Bad Request</title></head></html>"
    assert http(400, page, {"Content-Type": "text/html"}).kind == "bad_request"
    assert http(404, b"Not Found", {"Content-Type": "text/html; charset=utf-8"}).kind == "html"


@pytest.mark.parametrize(("status", "start"), [
    (300, "https://api.example.com/v1/chat/completions answered HTTP 300 Multiple Choices, a redirect"),
    (200, "https://api.example.com/v1/chat/completions answered HTTP 200 OK but not with a chat completion"),
    (204, "https://api.example.com/v1/chat/completions answered HTTP 204 No Content but not with a chat completion"),
    (299, "https://api.example.com/v1/chat/completions answered HTTP 299 but not with a chat completion"),
    (102, "https://api.example.com/v1/chat/completions answered HTTP 102 Processing:"),
    (199, "https://api.example.com/v1/chat/completions answered HTTP 199:"),
    (413, "the request is too large (HTTP 413"),
    (402, "api.example.com refused the request: payment required (HTTP 402"),
    (405, "https://api.example.com/v1/chat/completions does not accept this request (HTTP 405"),
    (429, "rate limited by api.example.com (HTTP 429"),
    (499, "https://api.example.com/v1/chat/completions answered HTTP 499:"),
    (500, "api.example.com failed (HTTP 500"),
])
def test_the_message_of_each_status(status, start):
    e = http(status, {"error": {"message": "no"}})
    assert e.message.startswith(start), e.message


def test_404_without_a_model_is_the_url_not_the_model():
    e = http(404, {"error": {"message": "no"}}, model="")
    assert e.message == f"{URL} not found (HTTP 404 Not Found): no"


def test_the_local_server_and_retry_after_in_server_errors():
    assert http(500, b"", default=True, base="http://localhost:11434/v1").message.startswith("the local server failed")
    assert "(after 30 s)" in http(503, b"", {"Retry-After": "30"}).hint


def test_a_400_whose_error_is_a_string_is_not_the_content_filter():
    e = http(400, {"error": "bad thing"})
    assert e.kind == "bad_request" and "content filter" not in e.message


@pytest.mark.parametrize(("code", "status"), [
    (99, None), (100, 100), (599, 599), (600, None), ("abc", None), (True, None), ("503", 503),
])
def test_the_status_a_stream_error_names(code, status):
    e = errors.stream_error({"error": {"message": "x", "code": code}})
    assert e.status == status and e.partial is False


def test_the_status_of_a_list_of_stream_errors_is_the_first_ones():
    assert errors.stream_error([{"error": {"message": "a", "code": 502}}, {"error": {"code": 503}}]).status == 502


@pytest.mark.parametrize("body", [
    b"text content blocks must be non-empty",
    "text content blocks must be non-empty",
    b'{"message": "messages.1.content.0: text content blocks must be non-empty"}',
])
def test_a_refused_empty_content_is_recognised_in_every_body_form(body):
    assert errors.refuses_empty_content(body)


def test_bad_json_of_whitespace_is_empty():
    assert errors.bad_json("   ").message.endswith("that is not valid JSON: (empty)")


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1536 bytes"), (1 << 20, "1 MiB"), (3 << 19, "1536 KiB"),
    ((1 << 20) - 1024, "1023 KiB"), (2 << 20, "2 MiB"),
])
def test_human_size(n, text):
    assert errors.human_size(n) == text


def test_a_bound_is_not_partial_unless_said():
    assert errors.bound("m", "h").partial is False


def test_an_errno_in_the_text_of_a_wrapper_gives_the_reason():
    e = classify(RuntimeError("HTTPSConnectionPool(host='x'): [Errno 113] No route to host"))
    assert e.message == "the connection to api.example.com failed: No route to host"


def test_a_tls_error_known_only_to_requests_is_tls():
    assert classify(requests.exceptions.SSLError("bad handshake")).kind == "tls"


def test_a_certificate_problem_named_in_the_text_gets_the_certificate_hint():
    e = classify(ssl.SSLError(1, "[SSL: CERTIFICATE_REQUIRED] certificate required"))
    assert e.kind == "tls" and "certificate is not trusted" in e.hint


def test_an_unresolvable_host_is_named_without_its_port():
    e = classify(socket.gaierror(-2, "Name or service not known"), base="https://api.example.com:8443/v1")
    assert e.message.startswith("cannot resolve host 'api.example.com':")


def test_a_refused_connection_in_other_words_is_still_refused():
    assert classify(ConnectionRefusedError(errno.ECONNREFUSED, "Verbindung verweigert")).kind == "refused"
    assert classify(ConnectionRefusedError()).kind == "refused"
    # mid-stream, words alone do not make a refusal: the connection broke
    assert classify(RuntimeError("connection refused"), phase="stream").kind == "connection"


def test_a_failing_proxy_is_named():
    e = classify(requests.exceptions.ProxyError("Cannot connect to proxy"))
    assert e.kind == "connection" and e.message.startswith("the proxy in front of api.example.com failed")


def test_the_reason_is_the_innermost_cause():
    try:
        try:
            raise ValueError("the inner cause")
        except ValueError as inner:
            raise RuntimeError("the wrapper") from inner
    except RuntimeError as exc:
        assert classify(exc).message == "the connection to api.example.com failed: the inner cause"
    outer = OSError(errno.EIO, "Input/output error")
    outer.__cause__ = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    wrapper = RuntimeError("wrapped")
    wrapper.__cause__ = outer
    assert classify(wrapper, phase="stream").message == \
        "the connection to api.example.com broke mid-stream: Connection reset by peer"
