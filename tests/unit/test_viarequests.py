"""The requests path of the transport (llm/viarequests.py): what it leaves behind. Every
socket it opened is closed once the response is (or once the request failed), and the
thread keeps no cancel token of a finished request."""

from __future__ import annotations

import os

import pytest

from dashfloat.llm import viarequests
from dashfloat.llm.client import CancelToken
from tests.fakeserver import ScriptedServer, sse_reply


def sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def post(server: ScriptedServer, token: CancelToken):
    return viarequests.open_request("POST", server.url + "/chat/completions", {"Content-Type": "application/json"},
                                    b'{"model": "m", "messages": [], "stream": true}', connect_timeout=5,
                                    read_timeout=5, cancel=token, read_size=65536)


def test_the_response_and_its_connection_close_and_the_thread_forgets_the_token():
    with ScriptedServer() as server:
        base = sockets()
        for _ in range(3):
            server.push(sse_reply(["hi"]))
            resp = post(server, CancelToken())
            assert resp.status_code == 200
            assert viarequests._current.token is None  # not the finished request's any more
            while resp.read():
                pass
            resp.close()
            assert sockets() == base


def test_a_request_that_fails_after_connecting_leaves_no_socket_open(monkeypatch):
    def broken(resp, size):
        raise RuntimeError("the reader broke")

    monkeypatch.setattr(viarequests, "_reader", broken)
    with ScriptedServer() as server:
        base = sockets()
        server.push(sse_reply(["hi"]))
        with pytest.raises(RuntimeError, match="the reader broke"):
            try:
                post(server, CancelToken())
            except RuntimeError:
                assert sockets() == base  # closed before the error goes on, not at collection
                raise
        assert viarequests._current.token is None
