"""The HTTP/stream error taxonomy: every failure of a chat request becomes one ChatError.

A ChatError names what happened and the cause (`message`) and how to fix it (`hint`), on
one line each, so the UI can show it as a transcript entry and the agent can pass it on as
a plain dict (`as_dict()`). Provider text (error bodies, stream error objects) is
untrusted: it goes through `textsafe.visible()`, whitespace is collapsed to one line and
it is shortened to 300 characters. Every text is masked (`masking.mask`, the process's
registered secrets) before it is shortened, so a provider that echoes the key, or a URL
with a token in its query, never shows it, not even cut in half.

Kinds:
  refused, dns, tls, connect_timeout, idle_timeout, connection   -> classify_exception
  bad_request, auth, not_found, rate_limit, server, http, html   -> classify_http
  context_length                                                 -> classify_http, stream_error
  stream_error, empty_stream, bad_json, bound                    -> raised by the client

A conversation that no longer fits the model's context window is its own kind wherever
the provider says so (an HTTP 4xx/5xx body or an error inside a 200 stream): every later
request of the same conversation fails the same way, so its hint says what the user can
do about the conversation, not "check the model name".

`classify_http` is pure (status, headers, body in; ChatError out). `classify_exception`
maps what requests/urllib3/socket/ssl raise, walking the whole exception chain (requests
wraps urllib3's MaxRetryError, which wraps NewConnectionError, which wraps the OSError).
"""

from __future__ import annotations

import errno
import json
import re
import socket
import ssl
from collections.abc import Mapping
from http import HTTPStatus
from urllib.parse import urlsplit

from dashfloat.masking import mask
from dashfloat.textsafe import visible

DEFAULT_BASE_URL = "http://localhost:11434/v1"  # the default endpoint: a local Ollama
PROVIDER_TEXT_MAX = 300
_CONFIG_WAYS = "--base-url, OPENAI_BASE_URL or base_url in .dashfloat/config.toml"

KINDS = (
    "refused",
    "dns",
    "tls",
    "connect_timeout",
    "idle_timeout",
    "connection",
    "bad_request",
    "auth",
    "not_found",
    "rate_limit",
    "server",
    "http",
    "html",
    "context_length",
    "stream_error",
    "empty_stream",
    "bad_json",
    "bound",
)


class ChatError(Exception):
    """One failed chat (or model-list) request. `str(e)` is "message. hint", one line."""

    def __init__(
        self,
        kind: str,
        message: str,
        hint: str = "",
        *,
        status: int | None = None,
        retry_after: str | None = None,
        partial: bool = False,
    ):
        assert kind in KINDS, kind
        self.kind = kind
        self.message = mask(_one_line(message))
        self.hint = mask(_one_line(hint))
        self.status = status
        self.retry_after = retry_after
        self.partial = partial
        super().__init__(self.message)

    def __str__(self) -> str:
        msg = self.message.rstrip(". ")
        if not self.hint:
            return msg
        return f"{msg}. {self.hint[:1].upper()}{self.hint[1:]}"

    def __repr__(self) -> str:
        return f"ChatError({self.kind!r}, {str(self)!r}, status={self.status!r}, partial={self.partial!r})"

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "status": self.status,
            "retry_after": self.retry_after,
            "partial": self.partial,
        }


# ---- text helpers ------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def clean(text, limit: int = PROVIDER_TEXT_MAX) -> str:
    """Untrusted text made safe and short: secrets masked, visible escapes, one line,
    <= limit chars."""
    text = _one_line(mask(visible(str(text))))
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    name = name.lower()
    for k, v in headers.items():
        if str(k).lower() == name:
            return str(v)
    return None


def _host(base_url: str) -> str:
    try:
        parts = urlsplit(base_url)
        if parts.hostname:
            host = parts.hostname
            return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        pass
    return base_url


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _status_text(status: int) -> str:
    phrase = _phrase(status)
    return f"HTTP {status} {phrase}" if phrase else f"HTTP {status}"


def looks_like_html(body: bytes, content_type: str | None = None) -> bool:
    if content_type and "html" in content_type.lower():
        return True
    head = body[:64].lstrip().lower()
    return head.startswith(b"<")


def html_title(body: bytes) -> str | None:
    m = re.search(rb"<title[^>]*>(.*?)</title>", body[:65536], re.IGNORECASE | re.DOTALL)
    if not m:
        return None
    # An HTML error page is rare: not loaded before the first request. Imported as
    # html.entities, not html: the streamer thread gets here while the UI's warm-up thread
    # may be importing html.entities (markdown-it does), and `import html` takes the two
    # module locks in the other order (html, then html.entities for html/__init__), which
    # Python answers with a _DeadlockError in one thread: "the stream crashed".
    import html.entities  # noqa: F401 - binds `html` with unescape, locks in markdown-it's order

    text = html.unescape(m.group(1).decode("utf-8", "replace")).strip()
    return clean(text) if text else None


def _message_from(obj, depth: int = 0) -> str | None:
    """The human message inside a parsed provider error object, in the shapes seen in the
    wild: {"error": {"message": ...}} (OpenAI, vLLM, OpenRouter, Ollama), {"error": "..."}
    (llama.cpp, Ollama, LM Studio), {"message": ...} (Mistral), {"detail": ...} (FastAPI:
    a string or a list of validation errors), [{"error": {...}}] (Gemini)."""
    if depth > 4:
        return None
    if isinstance(obj, str):
        return obj.strip() or None
    if isinstance(obj, list):
        for item in obj[:3]:
            msg = _message_from(item, depth + 1)
            if msg:
                return msg
        return None
    if not isinstance(obj, dict):
        return None
    err = obj.get("error")
    if isinstance(err, (dict, list)):
        msg = _message_from(err, depth + 1)
        if msg:
            return msg
    elif isinstance(err, str) and err.strip():
        return err.strip()
    for key in ("message", "msg", "error_message", "detail", "title"):
        val = obj.get(key)
        if isinstance(val, str) and val.strip():
            msg = val.strip()
            meta = obj.get("metadata")
            if isinstance(meta, dict):  # OpenRouter: the upstream provider's own words
                raw, who = meta.get("raw"), meta.get("provider_name")
                if isinstance(raw, str) and raw.strip():
                    msg = f"{msg} ({who}: {raw.strip()})" if isinstance(who, str) else f"{msg} ({raw.strip()})"
            return msg
        if key == "detail" and isinstance(val, list):  # FastAPI validation errors
            parts = []
            for item in val[:3]:
                if isinstance(item, dict) and isinstance(item.get("msg"), str):
                    loc = item.get("loc")
                    where = ".".join(str(x) for x in loc) if isinstance(loc, list) else ""
                    parts.append(f"{where}: {item['msg']}" if where else item["msg"])
            if parts:
                return "; ".join(parts)
        if isinstance(val, dict):
            msg = _message_from(val, depth + 1)
            if msg:
                return msg
    return None


def provider_message(body, content_type: str | None = None) -> str | None:
    """The provider's error text from a response body (bytes, str or parsed JSON), made
    safe and short; None when there is none worth showing."""
    if isinstance(body, (bytes, bytearray)):
        if not body.strip():
            return None
        if looks_like_html(bytes(body), content_type):
            return html_title(bytes(body))
        text = bytes(body).decode("utf-8", "replace")
        try:
            obj = json.loads(text)
        except ValueError:
            return clean(text) if text.strip() else None
    elif isinstance(body, str):
        try:
            obj = json.loads(body)
        except ValueError:
            return clean(body) if body.strip() else None
    else:
        obj = body
    msg = _message_from(obj)
    return clean(msg) if msg else None


def _with(text: str, detail: str | None) -> str:
    return f"{text}: {detail}" if detail else text


# ---- a conversation longer than the context window -------------------------------------

CONTEXT_HINT = (
    "every further request of this conversation will fail the same way: /compact shrinks it, "
    "/clear starts a new conversation, or switch with /model to a model with a larger context "
    "window (a local server may allow more: llama.cpp -c, Ollama num_ctx, LM Studio's context "
    "length)"
)
# `code`/`type` values that name the overflow, whatever the message says
_CONTEXT_CODES = frozenset(
    (
        "context_length_exceeded",  # OpenAI, Azure, Groq, OpenRouter, llama-cpp-python
        "exceed_context_size_error",  # llama.cpp's server (with n_prompt_tokens, n_ctx)
        "context_window_exceeded",
    )
)
# The providers' own words (matched in the first 300 characters of their message):
#  OpenAI, vLLM, DeepSeek, llama-cpp-python: "This model's maximum context length is N tokens"
#  OpenRouter: "This endpoint's maximum context length is N tokens"
#  llama.cpp: "request (N tokens) exceeds the available context size (M tokens)",
#             "exceeds context size", "is larger than the max context size", older builds
#             "the request exceeds the available context size, try increasing ..."
#  llama-cpp-python (raw): "Requested tokens (N) exceed context window of M"
#  vLLM: "... is longer than the maximum model length of M"
#  Ollama: "input length (N tokens) exceeds the model's maximum context length (M tokens)"
#  LM Studio: "Context size has been exceeded", "Input length N exceeds context length M",
#             "... the model is loaded with context length of only M tokens"
#  Anthropic: "prompt is too long: N tokens > M maximum", "input length and `max_tokens`
#             exceed context limit"; Mistral: "... too large for model with N maximum
#             context length"; Gemini: "exceeds the maximum number of tokens allowed";
#  Bedrock: "Input is too long for requested model"; LiteLLM: ContextWindowExceededError
_CONTEXT_TEXT = re.compile(
    r"context[_ ]?length[_ ]?exceeded|exceed_context_size|context[_ ]?window[_ ]?exceeded"
    r"|max(?:imum)? context (?:length|size|window)"
    r"|exceeds?\s+(?:the\s+)?(?:available\s+|model'?s\s+|maximum\s+|max\s+)*(?:context|n_ctx)"
    r"|context (?:length|size|window|limit) (?:has been |was |is )?exceeded"
    r"|(?:larger|longer) than the (?:max(?:imum)? )?(?:context|model length)"
    r"|context length of only|prompt is too long|input is too long|too large for model with"
    r"|exceeds the maximum number of tokens",
    re.IGNORECASE,
)


def _parse(body):
    """bytes/str -> the parsed JSON (None when it is not JSON); anything else as it is."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return None
    return body


def _context_fields(obj, depth: int = 0) -> bool:
    if depth > 3 or not isinstance(obj, dict):
        return False
    if "n_ctx" in obj:  # llama.cpp's overflow error carries the window size
        return True
    for key in ("code", "type", "error_type"):
        val = obj.get(key)
        if isinstance(val, str) and val.strip().lower() in _CONTEXT_CODES:
            return True
    return _context_fields(obj.get("error"), depth + 1)


def _content_filtered(body) -> bool:
    """Azure OpenAI's (and OpenAI's) refusal of a prompt by its content filter: error.code
    "content_filter" / "content_policy_violation", innererror "ResponsibleAIPolicyViolation"."""
    obj = _parse(body)
    err = obj.get("error") if isinstance(obj, dict) else None
    if not isinstance(err, dict):
        return False
    inner = err.get("innererror")
    codes = {err.get("code"), inner.get("code") if isinstance(inner, dict) else None}
    return bool(codes & {"content_filter", "content_policy_violation", "ResponsibleAIPolicyViolation"})


def context_overflow(body, message: str | None = None) -> bool:
    """True when a provider's error (a body as bytes/str, or parsed JSON; `message` if the
    caller already extracted it) says the conversation exceeds the context window. PURE."""
    obj = _parse(body)
    if _context_fields(obj):
        return True
    if message is None:
        message = _message_from(obj) if obj is not None else (
            bytes(body).decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else
            body if isinstance(body, str) else None
        )
    return bool(message) and bool(_CONTEXT_TEXT.search(str(message)[:PROVIDER_TEXT_MAX]))


def context_length(detail: str | None, *, status: int | None = None, retry_after=None,
                   partial: bool = False, mid_stream: bool = False) -> ChatError:
    where = "the server said mid-stream that " if mid_stream else ""
    return ChatError(
        "context_length",
        _with(f"{where}the conversation is too long for the model's context window", detail),
        CONTEXT_HINT,
        status=status,
        retry_after=retry_after,
        partial=partial,
    )


# ---- HTTP statuses ---------------------------------------------------------------------


def classify_http(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    base_url: str,
    model: str,
    api_key_env: str,
    key_set: bool,
    default_endpoint: bool,
    url: str | None = None,
) -> ChatError:
    """Map an HTTP response that is not a usable stream to a ChatError. PURE.

    `url` is the URL that was requested (default: base_url + "/chat/completions").
    Also used for a 2xx/3xx that turned out to be an HTML page (kind "html").
    """
    base = base_url.rstrip("/")
    url = url or f"{base}/chat/completions"
    s_url, s_base, s_model = clean(url, 200), clean(base, 200), clean(model, 120)
    host = clean(_host(base_url), 120)
    ctype = _header(headers, "content-type") or ""
    retry_after = _header(headers, "retry-after")
    retry_after = clean(retry_after, 40) if retry_after and retry_after.strip() else None
    is_html = looks_like_html(body, ctype)
    detail = provider_message(body, ctype)
    st = _status_text(status)
    kw = {"status": status, "retry_after": retry_after}

    if is_html and (status < 400 or status in (404, 405)):
        title = f" ({detail})" if detail else ""
        if base.endswith("/v1"):
            hint = (
                "check that base_url's host and port are the API server's, not a web UI's; "
                f"set it with {_CONFIG_WAYS}"
            )
        else:
            hint = f"base_url probably needs /v1 (e.g. {s_base}/v1); set it with {_CONFIG_WAYS}"
        return ChatError(
            "html",
            f"{s_url} answered {st} with an HTML page{title}: the URL serves a web page, not the API",
            hint,
            **kw,
        )
    if 300 <= status < 400:
        loc = _header(headers, "location")
        where = f" to {clean(loc, 200)}" if loc else ""
        return ChatError(
            "http",
            f"{s_url} answered {st}, a redirect{where}; POST requests are not followed",
            "use the final URL as base_url (often https:// instead of http://, or a different path)",
            **kw,
        )
    if (
        status >= 400
        and status not in (401, 402, 403, 404, 405, 429)
        and not is_html
        and context_overflow(body)
    ):
        return context_length(detail, **kw)
    if status == 400 and _content_filtered(body):
        return ChatError(
            "bad_request",
            _with(f"the provider's content filter refused the request ({st})", detail),
            "rephrase the request; the filter may also have matched a file or command output "
            "already in the conversation, which only a new conversation leaves behind",
            **kw,
        )
    if status in (400, 413, 422):
        what = "the request is too large" if status == 413 else "the server rejected the request"
        return ChatError(
            "bad_request",
            _with(f"{what} ({st})", detail),
            f"check the model name ({s_model}) and options; some models or servers do not "
            "support tools, and a long conversation can exceed the context window",
            **kw,
        )
    if status in (401, 403):
        if not key_set:
            return ChatError(
                "auth",
                _with(f"{host} requires an API key ({st}) and none is set", detail),
                f"set {api_key_env} (export {api_key_env}=...) or name another variable "
                "with api_key_env in .dashfloat/config.toml",
                **kw,
            )
        return ChatError(
            "auth",
            _with(f"the key in ${api_key_env} was rejected by {host} ({st})", detail),
            f"check that ${api_key_env} holds a valid key for this provider"
            + (" with access to this model" if status == 403 else ""),
            **kw,
        )
    if status == 402:
        return ChatError(
            "http",
            _with(f"{host} refused the request: payment required ({st})", detail),
            "check the credits or billing of your account with the provider",
            **kw,
        )
    if status == 404 and not model:
        return ChatError(
            "not_found",
            _with(f"{s_url} not found ({st})", detail),
            f"check that base_url ({s_base}) ends with /v1",
            **kw,
        )
    if status == 404:
        return ChatError(
            "not_found",
            _with(f"model {s_model!r} or URL {s_url} not found ({st})", detail),
            f"check --model (the server lists its models at GET {s_base}/models) "
            "and that base_url ends with /v1",
            **kw,
        )
    if status == 405:
        return ChatError(
            "http",
            _with(f"{s_url} does not accept this request ({st})", detail),
            f"base_url probably points at the wrong path: it usually ends with /v1; set it with {_CONFIG_WAYS}",
            **kw,
        )
    if status == 429:
        wait = f"; retry after {retry_after} s" if retry_after else ""
        return ChatError(
            "rate_limit",
            _with(f"rate limited by {host} ({st}{wait})", detail),
            (f"wait {retry_after} s and try again" if retry_after else "wait a moment and try again")
            + ", or check your plan's rate limits and quota",
            **kw,
        )
    if status >= 500:
        where = "the local server" if default_endpoint else host
        hint = (
            "the server had a problem; try again, and check the Ollama log if it persists"
            if default_endpoint
            else "the provider had a problem; try again later"
            + (f" (after {retry_after} s)" if retry_after else "")
            + " or check the server's logs"
        )
        return ChatError("server", _with(f"{where} failed ({st})", detail), hint, **kw)
    if 200 <= status < 300:
        return ChatError(
            "http",
            _with(f"{s_url} answered {st} but not with a chat completion", detail),
            "check that base_url points at an OpenAI-compatible API ending with /v1",
            **kw,
        )
    return ChatError(
        "http",
        _with(f"{s_url} answered {st}", detail),
        "check base_url, the model and the key; the provider's message above may say more",
        **kw,
    )


# ---- errors inside a 200 stream ---------------------------------------------------------


def stream_error(payload, *, partial: bool = False, default: str = "no message") -> ChatError:
    """An error object (or `event: error` data) inside a 200 stream: the provider's
    message, the status it names (`code`, an int or a string of digits), and the
    context-window hint when that is what it says."""
    detail = provider_message(payload)
    status = None
    first = payload[0] if isinstance(payload, list) and payload else payload  # [{"error": ...}]
    holder = first.get("error") if isinstance(first, dict) else None
    if not isinstance(holder, dict):
        holder = first if isinstance(first, dict) else {}
    code = holder.get("code")
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code < 600:
        status = code
    if context_overflow(payload, detail):
        return context_length(detail, status=status, partial=partial, mid_stream=True)
    detail = detail or default
    return ChatError(
        "stream_error",
        f"the server reported an error mid-stream: {detail}",
        "try again; if it persists, try another model or check the provider's status",
        status=status,
        partial=partial,
    )


# What a server says when it refuses `"content": ""` in an assistant message that has
# tool_calls (Anthropic models behind Bedrock's OpenAI-compatible endpoint, and Bedrock's
# Converse wording through gateways).
_EMPTY_CONTENT_REFUSED = re.compile(
    r"text content blocks must be non-empty"
    r"|text field in the ContentBlock object .{0,40}is blank"
    r"|content field in the Message object .{0,40}is empty",
    re.IGNORECASE,
)


def refuses_empty_content(body) -> bool:
    """True when a 400 body says the server refused an empty assistant content. PURE."""
    obj = _parse(body)
    text = _message_from(obj) if obj is not None else None
    if text is None and isinstance(body, (bytes, bytearray, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body
    return bool(text) and bool(_EMPTY_CONTENT_REFUSED.search(str(text)[:1000]))


def empty_stream(*, cause: str | None = None, partial: bool = False) -> ChatError:
    """A 200 whose body carried no event at all: no `data:`, no [DONE] (nothing, or only
    comments and blank lines), or broke off before its first one (`cause`). The server
    failed after it had sent the status line."""
    return ChatError(
        "empty_stream",
        _with("the server closed the stream without sending anything (HTTP 200, no data, no [DONE])", cause),
        "the server failed after accepting the request and its log says why (llama-cpp-python "
        "fails this way on a conversation longer than the context window, or on a message "
        "its chat template cannot render); try again",
        partial=partial,
    )


def cut_stream(*, partial: bool) -> ChatError:
    """Events came, but neither a finish_reason nor [DONE]: the server stopped mid-answer."""
    what = "in the middle of the answer" if partial else "before the answer began"
    return ChatError(
        "connection",
        f"the stream ended {what} (no finish_reason, no [DONE])",
        "the server stopped without saying why here (Ollama, for one, reports errors that "
        "happen after the first token only in its log); try again",
        partial=partial,
    )


def bad_json(text: str, *, partial: bool = False, where: str = "a stream event") -> ChatError:
    snippet = clean(text, 120) if text and text.strip() else "(empty)"
    return ChatError(
        "bad_json",
        f"the server sent {where} that is not valid JSON: {snippet}",
        "the endpoint is not speaking the OpenAI chat-completions format; check base_url "
        "and the server version",
        partial=partial,
    )


def human_size(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def bound(message: str, hint: str, *, partial: bool = False) -> ChatError:
    return ChatError("bound", message, hint, partial=partial)


# ---- exceptions from requests / urllib3 / socket / ssl -------------------------------------


def _chain(exc: BaseException) -> list[BaseException]:
    """exc and everything it wraps: __cause__, __context__, MaxRetryError.reason, and
    exceptions passed as args (requests wraps urllib3's errors that way)."""
    seen: set[int] = set()
    out: list[BaseException] = []
    todo = [exc]
    while todo and len(out) < 32:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        for nxt in (getattr(e, "reason", None), e.__cause__, e.__context__, *getattr(e, "args", ())):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return out


def _names(e: BaseException) -> set[str]:
    return {f"{cls.__module__}.{cls.__qualname__}" for cls in type(e).__mro__}


def _is(chain, names: tuple[str, ...], exclude: tuple[str, ...] = ()) -> BaseException | None:
    """First exception in the chain whose class (or a base) has one of these qualified
    names and none of `exclude`; matching by name keeps requests/urllib3 out of this
    module's imports."""
    for e in chain:
        mro = _names(e)
        if mro.intersection(names) and not mro.intersection(exclude):
            return e
    return None


def _reason(e: BaseException) -> str:
    """The root cause in a few words ("Connection refused", "certificate verify failed")."""
    if isinstance(e, ssl.SSLError):
        text = getattr(e, "verify_message", None) or str(e) or getattr(e, "reason", None)
        text = re.sub(r"\s*\(_ssl\.c:\d+\)", "", str(text))
        return clean(text, 160)
    if isinstance(e, OSError) and e.strerror:
        return clean(e.strerror, 160)
    text = str(e)
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if m:
        return clean(m.group(1), 160)
    text = re.sub(r"^[A-Za-z]+ConnectionPool\([^)]*\): ", "", text)
    text = re.sub(r"<urllib3\.[^>]*>: ", "", text)
    return clean(text or type(e).__name__, 160)


_CONNECT_TIMEOUT = (
    "requests.exceptions.ConnectTimeout",
    "urllib3.exceptions.ConnectTimeoutError",
    "dashfloat.llm.transport.ConnectTimeout",  # the direct path (llm/transport.py)
)
_READ_TIMEOUT = ("requests.exceptions.ReadTimeout", "urllib3.exceptions.ReadTimeoutError")
_TLS = ("requests.exceptions.SSLError", "urllib3.exceptions.SSLError")
_DNS = ("urllib3.exceptions.NameResolutionError",)
_BAD_URL = (
    "requests.exceptions.InvalidURL",
    "requests.exceptions.MissingSchema",
    "requests.exceptions.InvalidSchema",
    "urllib3.exceptions.LocationParseError",
)
_PROXY = ("requests.exceptions.ProxyError", "urllib3.exceptions.ProxyError")


def _timeout_value(chain, given: float | None) -> str | None:
    """The timeout in seconds as shown ("3.5"): the configured value, else the one the
    exception names; None when neither is known."""
    if given is not None:
        return f"{given:g}"
    for e in chain:
        m = re.search(r"(?:read|connect) timeout=([0-9.]+)", str(e))
        if m:
            return f"{float(m.group(1)):g}"
    return None


def classify_exception(
    exc: BaseException,
    *,
    base_url: str,
    default_endpoint: bool,
    phase: str,
    read_timeout: float | None = None,
    connect_timeout: float | None = None,
) -> ChatError:
    """Map a requests/urllib3/socket/ssl exception to a ChatError.

    phase: "connect" (before the response headers arrived) or "stream" (reading the body).
    read_timeout/connect_timeout: the configured values, named in timeout messages.
    """
    chain = _chain(exc)
    host = clean(_host(base_url), 120)
    s_base = clean(base_url, 200)
    mid = phase == "stream"

    # urllib3's NewConnectionError (refused, DNS...) subclasses ConnectTimeoutError.
    e = _is(chain, _CONNECT_TIMEOUT, exclude=("urllib3.exceptions.NewConnectionError",))
    if e is None:
        e = next(
            (x for x in chain if isinstance(x, TimeoutError) and x.errno == errno.ETIMEDOUT),
            None,
        )
    if e is not None:
        n = _timeout_value(chain, connect_timeout)
        return ChatError(
            "connect_timeout",
            f"no connection to {host} within {n} s (connect timeout)" if n
            else f"no connection to {host} within the connect timeout",
            "check that the server is up and reachable (firewall, VPN, proxy), or raise "
            "connect_timeout in .dashfloat/config.toml",
        )

    e = _is(chain, _READ_TIMEOUT) or next(
        (x for x in chain if isinstance(x, (TimeoutError, socket.timeout))), None
    )
    if e is not None:
        n = _timeout_value(chain, read_timeout)
        span = f"for {n} s" if n else "within the read timeout"
        what = (
            f"no data from {host} {span}: the stream stalled (idle timeout)"
            if mid
            else f"no response from {host} {span} after sending the request (idle timeout)"
        )
        return ChatError(
            "idle_timeout",
            what,
            "the model may be loading or overloaded; try again, or raise read_timeout in "
            ".dashfloat/config.toml",
        )

    e = _is(chain, _TLS) or next((x for x in chain if isinstance(x, ssl.SSLError)), None)
    if e is not None:
        root = next((x for x in chain if isinstance(x, ssl.SSLError)), e)
        reason = _reason(root)
        cert = isinstance(root, ssl.SSLCertVerificationError) or "certificate" in reason.lower()
        if cert:
            hint = (
                "the server's certificate is not trusted here: fix the certificate, or point "
                "REQUESTS_CA_BUNDLE at your CA bundle for a private CA"
            )
        else:
            hint = (
                "the server may not speak TLS on this port: use http:// for a local server, "
                "or check the port"
            )
        return ChatError("tls", f"TLS/certificate error talking to {host}: {reason}", hint)

    e = _is(chain, _DNS) or next((x for x in chain if isinstance(x, socket.gaierror)), None)
    if e is not None:
        root = next((x for x in chain if isinstance(x, socket.gaierror)), e)
        name = clean(urlsplit(base_url).hostname or host, 120)
        return ChatError(
            "dns",
            f"cannot resolve host {name!r}: {_reason(root)}",
            f"check the host name in base_url ({s_base}) and your network/DNS; set it with {_CONFIG_WAYS}",
        )

    refused = next(
        (
            x
            for x in chain
            if isinstance(x, ConnectionRefusedError)
            or (isinstance(x, OSError) and x.errno == errno.ECONNREFUSED)
        ),
        None,
    )
    if refused is None and not mid:
        refused = next((x for x in chain if "connection refused" in str(x).lower()), None)
    if refused is not None:
        if default_endpoint:
            return ChatError(
                "refused",
                f"no server at {DEFAULT_BASE_URL} (connection refused): that is the default, "
                "a local Ollama",
                f"start Ollama (ollama serve), or point elsewhere with {_CONFIG_WAYS}",
            )
        return ChatError(
            "refused",
            f"connection refused by {host}: nothing is listening at {s_base}",
            f"start the server, or fix the URL with {_CONFIG_WAYS}",
        )

    e = _is(chain, _BAD_URL)
    if e is not None:
        return ChatError(
            "connection",
            f"cannot use base_url {s_base}: {_reason(e)}",
            f"base_url must look like http://host:port/v1; set it with {_CONFIG_WAYS}",
        )

    e = _is(chain, _PROXY)
    if e is not None:
        return ChatError(
            "connection",
            f"the proxy in front of {host} failed: {_reason(chain[-1])}",
            "check HTTPS_PROXY/HTTP_PROXY/NO_PROXY, or the proxy itself",
        )

    root = chain[-1]
    for x in reversed(chain):
        if isinstance(x, OSError) and x.strerror:
            root = x
            break
    if mid:
        return ChatError(
            "connection",
            f"the connection to {host} broke mid-stream: {_reason(root)}",
            "try again; if it keeps happening, check the network or a proxy in between",
        )
    return ChatError(
        "connection",
        f"the connection to {host} failed: {_reason(root)}",
        "try again; if it keeps happening, check the network, base_url and any proxy",
    )
