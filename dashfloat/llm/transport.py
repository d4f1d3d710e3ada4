"""One HTTP request to the endpoint, for llm/client.py: straight through http.client when
that is exactly what requests would do, else through requests (llm/viarequests.py).

Why: importing requests and urllib3 costs ~50-90 ms of CPU, and in `dashfloat -p` it is
paid before the first request (issue 11's figure: exec to the first request <= 0.15 s).
For a plain `http://` URL (a local Ollama, llama.cpp, vLLM, LM Studio, a gateway on the
LAN) with no proxy in the environment, requests sends the request over a new socket to
the host itself, with no TLS, no CA bundle and (auth=_NO_NETRC) no netrc: the direct path
here does the same with the same http.client that urllib3 drives underneath, the way
urllib3 drives it (the connect timeout for the connect and the send, the read timeout for
the answer; a broken pipe while sending still reads the answer; no redirect, no retry).
Everything else goes through requests as before: https (its CA bundle: certifi,
REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE), any HTTP_PROXY/ALL_PROXY (with NO_PROXY), a URL
requests would rewrite (percent-encoding, IDNA, user:password@), a header it would refuse
or replace (Content-Length, Transfer-Encoding): see `direct_ok`. tests/test_client.py runs
its scripted-server tests through both paths.

A Response holds the status, the headers (case-insensitive .get and .items), read() (the
body's payload, b"" at the end; bodyreader for the framing) and whether one read returns
everything that has arrived (`batched`). Errors are what the socket, http.client or
requests raise, plus ConnectTimeout (the connect itself timed out; errors.py names it),
so errors.classify_exception maps both paths alike.
"""

from __future__ import annotations

import errno
import http.client
import os
import re
import socket
import sys
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

__all__ = ["ConnectTimeout", "Response", "direct_ok", "is_net_error", "open_request"]

# What requests' check_header_validity accepts (requests/_internal_utils.py): a header it
# would refuse (InvalidHeader) goes through requests, so the error stays its.
_HEADER_NAME = re.compile(r"[^:\s][^:\r\n]*")
_HEADER_VALUE = re.compile(r"\S[^\r\n]*|")
# Path and query characters that requests' requote_uri leaves as they are (no %: it
# would decode %XX of an unreserved character).
_URL_SAFE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,/:;=@?]*")
_HOST = re.compile(r"[A-Za-z0-9\-._]+|\[[0-9A-Fa-f:.]+\]")  # ASCII names, IPv4, [IPv6]: no IDNA


class ConnectTimeout(OSError):
    """The TCP connect did not finish within connect_timeout (the direct path; requests
    raises its ConnectTimeout). A read timeout stays the socket's TimeoutError."""


def direct_ok(url: str, headers: Mapping[str, str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether requests would send this request as is, over a new plain socket to the
    URL's host: http, no proxy for it in the environment, a URL requests leaves as it is,
    headers it accepts. PURE but for reading `environ` (default os.environ)."""
    environ = os.environ if environ is None else environ
    if not url.startswith("http://"):
        return False
    # requests (urllib.request.getproxies_environment): any *_proxy variable, either case;
    # for an http URL the "http" and "all" ones apply. With one set, requests decides
    # (NO_PROXY included).
    for name, value in environ.items():
        if value and name.lower() in ("http_proxy", "all_proxy"):
            return False
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    if parts.username is not None or parts.password is not None or port == 0:
        return False
    host = parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc
    if not host or not _HOST.fullmatch(host) or parts.fragment or "#" in url:
        return False
    labels = host.split(".")
    if not host.startswith("[") and (any(not 0 < len(label) < 64 for label in labels[:-1]) or len(labels[-1]) > 63):
        return False  # what the idna codec refuses (urllib3: LocationParseError)
    if not _URL_SAFE.fullmatch(parts.path) or not _URL_SAFE.fullmatch(parts.query):
        return False
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            return False
        if name.lower() in ("content-length", "transfer-encoding"):
            return False  # requests sets the body's framing itself, whatever a header says
        if not _HEADER_NAME.fullmatch(name) or not _HEADER_VALUE.fullmatch(value):
            return False
        try:
            name.encode("latin-1")
            value.encode("latin-1")
        except UnicodeEncodeError:
            return False
    return True


_FOLD = re.compile(r"(?:(?<![ \t])[ \t]+)?\r\n[ \t]+")  # urllib3's obsolete line folding


class Headers(Mapping):
    """Response headers as requests hands them over: names case-insensitive, a repeated
    header's values joined with ", " (urllib3's HTTPHeaderDict), folded lines unfolded."""

    def __init__(self, items):
        self._d: dict[str, tuple[str, str]] = {}
        for name, value in items:
            if "\r\n" in value:
                value = _FOLD.sub(" ", value)
            key = name.lower()
            if key in self._d:
                first, old = self._d[key]
                value = f"{old}, {value}"
                name = first
            self._d[key] = (name, value)

    def __getitem__(self, name: str) -> str:
        return self._d[name.lower()][1]

    def __iter__(self):
        return (name for name, _ in self._d.values())

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name.lower() in self._d


class Response:
    """What client.py reads of a response; close() releases the connection."""

    def __init__(self, status: int, headers, read: Callable[[], bytes], batched: bool,
                 close: Callable[[], None]):
        self.status_code = status
        self.headers = headers
        self.read = read
        self.batched = batched
        self._close = close

    def close(self) -> None:
        self._close()


def is_net_error(exc: BaseException) -> bool:
    """What a broken or closed connection can raise: OSError (requests' own errors are
    OSErrors), http.client's, and urllib3's (only when requests was used: then loaded)."""
    if isinstance(exc, (OSError, http.client.HTTPException)):
        return True
    urllib3 = sys.modules.get("urllib3.exceptions")
    return urllib3 is not None and isinstance(exc, urllib3.HTTPError)


def open_request(method: str, url: str, headers: dict, data: bytes | None, *, connect_timeout: float,
                 read_timeout: float, cancel, read_size: int) -> Response:
    """Send the request and read the response headers; never follows a redirect, never
    retries. `cancel` (client.CancelToken) gets the socket as soon as it exists."""
    if direct_ok(url, headers):
        return _open_direct(method, url, headers, data, connect_timeout, read_timeout, cancel, read_size)
    from dashfloat.llm import viarequests

    return viarequests.open_request(method, url, headers, data, connect_timeout=connect_timeout,
                                    read_timeout=read_timeout, cancel=cancel, read_size=read_size)


class _Connection(http.client.HTTPConnection):
    """urllib3's connect: ConnectTimeout when the connect times out, TCP_NODELAY, and the
    socket reported to the request's CancelToken at once."""

    def __init__(self, host: str, port: int, connect_timeout: float, cancel):
        super().__init__(host, port, timeout=connect_timeout)
        self.cancel = cancel

    def connect(self) -> None:
        try:
            # bytes: the name is ASCII with labels the idna codec accepts (direct_ok), which
            # would encode it as is; a str would load that codec (~1.5 ms) to find so
            self.sock = socket.create_connection((self.host.encode("ascii"), self.port), self.timeout)
        except TimeoutError as exc:  # socket.timeout: the connect itself
            raise ConnectTimeout(f"connection to {self.host} timed out (connect timeout={self.timeout})") from exc
        self.cancel._attach(self.sock)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as urllib3 does


def _open_direct(method, url, headers, data, connect_timeout, read_timeout, cancel, read_size) -> Response:
    from dashfloat.llm import bodyreader

    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn = _Connection(parts.hostname, parts.port or 80, connect_timeout, cancel)
    resp = None

    def close() -> None:
        if resp is not None:
            resp.close()
        conn.close()

    try:
        conn.connect()
        try:
            conn.request(method, target, body=data, headers=headers)
        except BrokenPipeError:
            pass  # as urllib3: a server may answer (413, 401...) before it stops reading the body
        except OSError as exc:
            if exc.errno not in (errno.EPROTOTYPE, errno.ECONNRESET):
                raise
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout)  # the connect timeout while sending, as urllib3 does
        resp = conn.getresponse()
        got = Headers(resp.msg.items())
        read, batched = bodyreader.response_reader(resp, got, read_size, method, url)
    except BaseException:
        close()
        raise
    return Response(resp.status, got, read, batched, close)
