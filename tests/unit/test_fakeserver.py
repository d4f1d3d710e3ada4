"""The scripted server behaves like the servers it plays where a figure depends on it."""

import json
import socket

from tests.fakeserver import ScriptedServer, sse_reply


def _ask(sock: socket.socket, port: int) -> bytes:
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (port, len(body), body))
    got = b""
    while not got.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection; got {got!r}"
        got += chunk
    return got


def test_replies_go_out_without_nagles_delay_on_a_kept_alive_connection():
    # with Nagle's algorithm on, the second reply's first event waited ~44 ms for the
    # client's delayed ACK of its headers: every bench's first token measured that
    with ScriptedServer(models=["m"]) as srv:
        srv.responder = lambda req: sse_reply(["hello ", "world"])
        port = int(srv.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            for _ in range(2):
                assert b"hello" in _ask(sock, port)
            with srv._server.conns_lock:
                conns = list(srv._server.conns)
            assert len(conns) == 1
            assert conns[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
