"""The requests path of the transport (llm/viarequests.py): what it leaves behind. Every
socket it opened is closed once the response is (or once the request failed), and the
thread keeps no cancel token of a finished request."""

from __future__ import annotations

import pytest

from dashfloat.llm import viarequests
from dashfloat.llm.client import CancelToken
from tests.fakeserver import ScriptedServer, sse_reply


def opened(token: CancelToken) -> list:
    """The sockets the request's connections reported to its token (each one it opened)."""
    return list(token._socks)


def post(server: ScriptedServer, token: CancelToken):
    return viarequests.open_request("POST", server.url + "/chat/completions", {"Content-Type": "application/json"},
                                    b'{"model": "m", "messages": [], "stream": true}', connect_timeout=5,
                                    read_timeout=5, cancel=token, read_size=65536)


def test_the_response_and_its_connection_close_and_the_thread_forgets_the_token():
    with ScriptedServer() as server:
        for _ in range(3):
            server.push(sse_reply(["hi"]))
            token = CancelToken()
            resp = post(server, token)
            assert resp.status_code == 200 and opened(token)
            assert viarequests._current.token is None  # not the finished request's any more
            while resp.read():
                pass
            resp.close()
            assert all(sock.fileno() == -1 for sock in opened(token))  # closed


def test_a_request_that_fails_after_connecting_leaves_no_socket_open(monkeypatch):
    def broken(resp, size):
        raise RuntimeError("the reader broke")

    monkeypatch.setattr(viarequests, "_reader", broken)
    with ScriptedServer() as server:
        server.push(sse_reply(["hi"]))
        token = CancelToken()
        with pytest.raises(RuntimeError, match="the reader broke"):
            try:
                post(server, token)
            except RuntimeError:  # closed before the error goes on, not at collection
                assert opened(token) and all(sock.fileno() == -1 for sock in opened(token))
                raise
        assert viarequests._current.token is None
