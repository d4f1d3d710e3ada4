"""The request through requests, for what the direct path does not take (llm/transport.py):
https (requests' CA bundle: certifi, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE), proxies from the
environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY), URLs and headers requests
rewrites or refuses. Loaded only then: requests and urllib3 cost ~50-90 ms to import.

Sessions: one `requests.Session` per call, closed with the response. A shared session
would save a TCP/TLS handshake per episode, but requests does not promise that a Session
is thread-safe, and cancel works by shutting down THIS call's socket: with a private
session and pool, the socket cancel() shuts down can only be this call's, and nothing is
left in a shared pool in a half-read state. The cost (one handshake per request) is small
next to a model's time to first token.

Cancel: the socket is registered when it connects (a pool connection class that reports to
the token of the current thread), so a cancel also interrupts the wait for the response
headers and the TLS handshake.
"""

from __future__ import annotations

import contextlib
import threading

import requests
import requests.auth
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from dashfloat.llm import bodyreader
from dashfloat.llm.transport import Response

_current = threading.local()  # .token: the CancelToken of the request this thread is making


class _Registering:
    """Report the TCP socket (before a TLS handshake) and the final socket (after it) to
    the CancelToken of the current thread."""

    def _new_conn(self):
        sock = super()._new_conn()  # type: ignore[misc]
        token = getattr(_current, "token", None)
        if token is not None:
            token._attach(sock)
        return sock

    def connect(self):
        super().connect()  # type: ignore[misc]
        token = getattr(_current, "token", None)
        sock = getattr(self, "sock", None)
        if token is not None and sock is not None:
            token._attach(sock)


class _HTTPConn(_Registering, HTTPConnection):
    pass


class _HTTPSConn(_Registering, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConn


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConn


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class _Adapter(HTTPAdapter):
    """An HTTPAdapter whose connections report their socket to the current CancelToken."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if getattr(manager, "pool_classes_by_scheme", None) == {
            "http": HTTPConnectionPool,
            "https": HTTPSConnectionPool,
        }:  # not for SOCKS managers, which bring their own classes
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


class _HeadersOnly(requests.auth.AuthBase):
    """Passed as `auth` so requests never looks up ~/.netrc: a netrc entry for the host
    would replace our `Authorization: Bearer` header with Basic auth. Proxy and CA-bundle
    environment variables still apply."""

    def __call__(self, r):
        return r


_NO_NETRC = _HeadersOnly()


def _session() -> requests.Session:
    s = requests.Session()
    adapter = _Adapter(max_retries=0)  # never retry
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


def _reader(resp: requests.Response, size: int):
    """(read, batched): read() returns the next body bytes, b"" at the end; batched when
    one read returns everything that has arrived (the only case where pausing between
    reads gathers several events: urllib3's read1 returns one HTTP chunk per call)."""
    plain = bodyreader.plain_reader(resp, size)
    if plain is not None:
        return plain, True
    raw = resp.raw
    if hasattr(raw, "read1"):
        return lambda: raw.read1(size, decode_content=True) or b"", False
    it = resp.iter_content(chunk_size=None)  # urllib3 < 2.2: prompt for chunked only
    return lambda: next(it, b""), False


def open_request(method: str, url: str, headers: dict, data: bytes | None, *, connect_timeout: float,
                 read_timeout: float, cancel, read_size: int) -> Response:
    """transport.open_request through requests: stream=True, no redirects, no retries, no
    netrc; the environment's proxies and CA bundle apply."""
    session = _session()
    resp = None

    def close() -> None:
        # closing must never mask the real outcome
        if resp is not None:
            with contextlib.suppress(Exception):
                resp.close()
        with contextlib.suppress(Exception):
            session.close()

    _current.token = cancel
    try:
        resp = session.request(method, url, data=data, headers=headers, stream=True,
                               timeout=(connect_timeout, read_timeout), allow_redirects=False, auth=_NO_NETRC)
        read, batched = _reader(resp, read_size)
    except BaseException:
        close()
        raise
    finally:
        _current.token = None
    return Response(resp.status_code, resp.headers, read, batched, close)
