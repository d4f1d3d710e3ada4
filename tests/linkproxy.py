"""A loopback TCP proxy that plays a network link between a client and a server (ssh and sshd).

Standard library only, one file: copy it as it is. Threads, no asyncio.

    from tests.linkproxy import LinkProxy

    with LinkProxy(target_port, delay=0.05, rate=4000) as link:   # 50 ms each way, 32 kbit/s
        connect_to("127.0.0.1", link.port)
        ...
        link.up, link.down      # bytes delivered client->server, server->client
        link.set(delay=0.0, rate=None)   # change the link while it runs
        link.cut()              # abortive cut: RST on both sides, nothing more delivered

`LinkProxy(target_port, *, target_host="127.0.0.1", delay=0.0, rate=None, window=16384)`
listens on 127.0.0.1 at a free port (`.port`) and relays every accepted connection to the
target. Each direction of each connection is one link:
- `delay`: one-way delay in seconds, added to every byte;
- `rate`: bandwidth cap in bytes per second (None: unlimited); bytes leave one after another
  at that rate (a chunk of n bytes occupies the link for n/rate seconds), then take `delay`;
- `window`: at most this many bytes are in flight per direction (read from one side, not yet
  written to the other). When the window is full the proxy stops reading, so the sender's
  socket fills and its writes block: a capped link pushes back, as TCP's window does, instead
  of buffering without limit. The sockets' receive buffers are kept small (`window`) for the
  same reason, and so are their send buffers (else the kernel would buffer megabytes
on the proxy's behalf).

`.up` / `.down` count the bytes delivered (written to the far side) over all connections,
`.connections` the connections accepted so far, `.wait_connections(n, timeout)` waits for
that many. `.cut()` ends every open connection abortively: no byte is delivered after the
call, and both sockets are closed with SO_LINGER 0, so each peer gets a RST (not a FIN). The
proxy keeps listening: a new connection after a cut works (a reconnect). `.close()` (or
leaving the `with` block) cuts and stops listening.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
import time

_TICK = 0.05  # how often a blocked thread looks at the cut flag (bounds the cut's latency)
_CHUNK = 1024  # largest piece read at once on a capped link, so the rate is smooth


_KEEP = object()


class _Conn:
    """One relayed connection: two sockets, two directions, four threads."""

    def __init__(self, proxy: LinkProxy, client: socket.socket, server: socket.socket):
        self.proxy = proxy
        self.socks = (client, server)
        self.dead = threading.Event()
        self.lock = threading.Lock()
        self.ended = False
        self.finished = 0  # directions that ended with a clean EOF
        self.threads: list[threading.Thread] = []
        for src, dst, name in ((client, server, "up"), (server, client, "down")):
            pipe = _Pipe(self, src, dst, name)
            self.threads += [
                threading.Thread(target=pipe.read_loop, daemon=True, name=f"linkproxy-{name}-read"),
                threading.Thread(target=pipe.write_loop, daemon=True, name=f"linkproxy-{name}-write"),
            ]
        for t in self.threads:
            t.start()

    def end(self, abort: bool) -> None:
        """Stop relaying; close both sockets (RST if `abort`, else FIN). Idempotent."""
        self.dead.set()
        with self.lock:
            if self.ended:
                return
            self.ended = True
        self.proxy._forget(self)
        me = threading.current_thread()
        for t in self.threads:
            if t is not me:
                t.join()
        for s in self.socks:
            try:
                if abort:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass

    def half_close(self, dst: socket.socket) -> None:
        """One side said FIN and all its bytes were delivered: pass the FIN on."""
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with self.lock:
            self.finished += 1
            both = self.finished == 2
        if both:
            self.abort_later(False)

    def abort_later(self, abort: bool = True) -> None:
        """End from a pipe's own thread (end() joins the others)."""
        threading.Thread(target=self.end, args=(abort,), daemon=True).start()


class _Pipe:
    """One direction of a connection: a reader bounded by the window, a writer with the clock."""

    def __init__(self, conn: _Conn, src: socket.socket, dst: socket.socket, name: str):
        self.conn, self.src, self.dst, self.name = conn, src, dst, name
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()  # (due, data)
        self.inflight = 0
        self.eof = False
        self.cond = threading.Condition()
        self.link_free = 0.0  # when the link finishes sending what is queued (rate cap)

    def read_loop(self) -> None:
        proxy, dead = self.conn.proxy, self.conn.dead
        while not dead.is_set():
            with self.cond:
                while self.inflight >= proxy.window and not dead.is_set():
                    self.cond.wait(_TICK)
                room = proxy.window - self.inflight
            if dead.is_set():
                return
            size = min(room, _CHUNK if proxy.rate else 65536)
            try:
                data = self.src.recv(size)
            except TimeoutError:
                continue
            except OSError:  # a RST from this side: pass it on
                self.conn.abort_later()
                return
            now = time.monotonic()
            with self.cond:
                if not data:
                    self.eof = True
                    self.cond.notify_all()
                    return
                start = max(now, self.link_free)
                self.link_free = start + (len(data) / proxy.rate if proxy.rate else 0.0)
                self.queue.append((self.link_free + proxy.delay, data))
                self.inflight += len(data)
                self.cond.notify_all()

    def write_loop(self) -> None:
        proxy, dead = self.conn.proxy, self.conn.dead
        while True:
            with self.cond:
                while not self.queue and not self.eof and not dead.is_set():
                    self.cond.wait(_TICK)
                if dead.is_set():
                    return
                if not self.queue:  # eof and everything delivered: pass the FIN on
                    self.conn.half_close(self.dst)
                    return
                due, data = self.queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                dead.wait(min(wait, _TICK))
                continue
            sent = 0
            while sent < len(data) and not dead.is_set():
                try:
                    n = self.dst.send(data[sent:])
                except TimeoutError:
                    continue
                except OSError:
                    self.conn.abort_later()
                    return
                sent += n
                proxy._count(self.name, n)
            with self.cond:
                self.queue.popleft()
                if sent < len(data):  # cut mid-chunk: the rest is never delivered
                    return
                self.inflight -= len(data)
                self.cond.notify_all()


class LinkProxy:
    """A TCP link between 127.0.0.1:`port` and the target, with delay, a rate cap and a cut."""

    def __init__(self, target_port: int, *, target_host: str = "127.0.0.1", delay: float = 0.0,
                 rate: float | None = None, window: int = 16384):
        self.target = (target_host, target_port)
        self.delay, self.rate, self.window = delay, rate, window
        self.up = self.down = 0
        self.connections = 0
        self._lock = threading.Condition()
        self._conns: list[_Conn] = []
        self._closed = False
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):  # inherited on accept
            self._listener.setsockopt(socket.SOL_SOCKET, opt, window)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(_TICK)
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True, name="linkproxy-accept")
        self._acceptor.start()

    def set(self, *, delay: float | None = None, rate: object = _KEEP) -> None:
        """Change the link for bytes read from now on (`rate=None` lifts the cap)."""
        if delay is not None:
            self.delay = delay
        if rate is not _KEEP:
            self.rate = rate

    def _forget(self, conn: _Conn) -> None:
        with self._lock:
            if conn in self._conns:
                self._conns.remove(conn)

    def _count(self, name: str, n: int) -> None:
        with self._lock:
            if name == "up":
                self.up += n
            else:
                self.down += n

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):  # before connect
                server.setsockopt(socket.SOL_SOCKET, opt, self.window)
            try:
                server.connect(self.target)
            except OSError:
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                server.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(_TICK)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._conns.append(_Conn(self, client, server))
                self.connections += 1
                self._lock.notify_all()

    def wait_connections(self, n: int, timeout: float = 10.0) -> bool:
        """True once `n` connections were accepted in all (False on timeout)."""
        with self._lock:
            return self._lock.wait_for(lambda: self.connections >= n, timeout)

    def cut(self) -> None:
        """Cut every open connection abortively: nothing more is delivered, both peers get RST."""
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            c.dead.set()  # first stop every delivery, then close
        for c in conns:
            c.end(abort=True)

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._listener.close()
        self._acceptor.join()

    def __enter__(self) -> LinkProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
