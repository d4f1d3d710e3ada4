"""The test link (tests/linkproxy.py) without ssh: relay, counts, delay, rate, push-back, cut."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.linkproxy import LinkProxy


class Server:
    """A one-connection TCP server on 127.0.0.1 whose accepted socket the test drives."""

    def __init__(self, rcvbuf: int | None = None):
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]

    def accept(self) -> socket.socket:
        self.sock.settimeout(5)
        conn, _ = self.sock.accept()
        conn.settimeout(5)
        return conn

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def wait_until(pred, timeout: float = 5.0):
    """The proxy counts a write just after it; the reader may see the bytes first."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def connect(port: int) -> socket.socket:
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    return c


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def test_relays_both_ways_and_counts_delivered_bytes(server):
    with LinkProxy(server.port) as link:
        c = connect(link.port)
        s = server.accept()
        c.sendall(b"hello server")
        assert recv_exactly(s, 12) == b"hello server"
        s.sendall(b"x" * 100_000)
        assert recv_exactly(c, 100_000) == b"x" * 100_000
        wait_until(lambda: link.up == 12 and link.down == 100_000)
        assert link.connections == 1


def test_a_clean_close_passes_the_fin_on(server):
    with LinkProxy(server.port) as link:
        c = connect(link.port)
        s = server.accept()
        c.sendall(b"last words")
        c.shutdown(socket.SHUT_WR)
        assert recv_exactly(s, 100) == b"last words"  # then EOF, not a reset
        s.sendall(b"reply")
        s.close()
        assert recv_exactly(c, 100) == b"reply"


def test_one_way_delay_applies_to_each_direction(server):
    with LinkProxy(server.port, delay=0.15) as link:
        c = connect(link.port)
        s = server.accept()
        t0 = time.monotonic()
        c.sendall(b"ping")
        assert recv_exactly(s, 4) == b"ping"
        one_way = time.monotonic() - t0
        s.sendall(b"pong")
        assert recv_exactly(c, 4) == b"pong"
        round_trip = time.monotonic() - t0
        assert 0.15 <= one_way < 0.5
        assert 0.30 <= round_trip < 0.8


def test_rate_cap_spaces_the_bytes(server):
    with LinkProxy(server.port, rate=20_000) as link:
        c = connect(link.port)
        s = server.accept()
        t0 = time.monotonic()
        s.sendall(b"y" * 6_000)
        assert recv_exactly(c, 6_000) == b"y" * 6_000
        took = time.monotonic() - t0
        assert 0.28 <= took < 1.5  # 6,000 bytes at 20,000 B/s is 0.3 s
        link.set(rate=None)
        t0 = time.monotonic()
        s.sendall(b"z" * 60_000)
        assert recv_exactly(c, 60_000) == b"z" * 60_000
        assert time.monotonic() - t0 < 0.5


def test_a_full_window_pushes_back_on_the_sender():
    """A receiver that does not read: the sender's writes stop, the proxy does not soak it all up."""
    srv = Server(rcvbuf=4096)
    try:
        with LinkProxy(srv.port, window=8192) as link:
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
            c.connect(("127.0.0.1", link.port))
            s = srv.accept()
            c.setblocking(False)
            sent, idle_since = 0, None
            block = b"q" * 4096
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    sent += c.send(block)
                    idle_since = None
                except BlockingIOError:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 0.5:  # stayed blocked: pushed back
                        break
                    time.sleep(0.01)
            assert idle_since is not None, "the sender never blocked"
            # kernel buffers on both sides plus one window; far below what was offered
            assert sent < 200_000, sent
            assert link.up <= sent
            # and once the receiver reads, everything arrives
            got = 0
            c.setblocking(True)
            c.shutdown(socket.SHUT_WR)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += len(chunk)
            assert got == sent
            wait_until(lambda: link.up == sent)
    finally:
        srv.close()


def test_cut_resets_both_sides_and_delivers_nothing_more(server):
    with LinkProxy(server.port, delay=0.4) as link:
        c = connect(link.port)
        s = server.accept()
        c.sendall(b"in flight")  # due in 0.4 s: the cut comes first
        s.sendall(b"also in flight")
        time.sleep(0.05)
        link.cut()
        with pytest.raises(ConnectionResetError):
            data = s.recv(100)
            assert data == b"", data  # a FIN would read b"": fail loudly instead
            raise AssertionError("server saw a clean EOF, not a reset")
        with pytest.raises(ConnectionResetError):
            data = c.recv(100)
            raise AssertionError(f"client read {data!r}, not a reset")
        assert link.up == 0 and link.down == 0


def test_a_new_connection_after_a_cut_works(server):
    with LinkProxy(server.port) as link:
        connect(link.port)
        server.accept()
        assert link.wait_connections(1, 5)
        link.cut()
        c = connect(link.port)
        s = server.accept()
        assert link.wait_connections(2, 5)
        c.sendall(b"again")
        assert recv_exactly(s, 5) == b"again"


def test_cut_is_prompt_while_a_capped_link_is_busy(server):
    with LinkProxy(server.port, rate=2_000, window=4096) as link:
        c = connect(link.port)
        s = server.accept()
        writer = threading.Thread(target=lambda: _swallow(s.sendall, b"w" * 200_000), daemon=True)
        writer.start()
        assert recv_exactly(c, 100)
        t0 = time.monotonic()
        link.cut()
        assert time.monotonic() - t0 < 0.5
        delivered = link.down
        time.sleep(0.2)
        assert link.down == delivered
        writer.join(5)
        assert not writer.is_alive()  # the server's blocked write ended with the reset


def _swallow(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass
