"""The scripted server in a process of its own, for benches whose server writes as fast as it can.

In the bench's own process, a server thread writing 16,000 SSE events shares the GIL with the
thread that reads the terminal and timestamps each read. Traced: of a 20 ms echo during a huge
answer, 17 ms passed between DashFloat's write of the frame and the bench's read of it, the
reader waiting for the GIL. A figure of the bench, not of DashFloat. Here the server has an
interpreter of its own and takes commands over a pipe; its clock (time.monotonic) is the
system's monotonic clock, the same in both processes.
"""

from __future__ import annotations

import multiprocessing


def _serve(conn, models: list[str]) -> None:
    """The child: a ScriptedServer and, for a paced reply, its Pacer; one command a message."""
    from benchlib import Pacer

    from tests.fakeserver import ScriptedServer, sse_reply

    server = ScriptedServer(models=models).start()
    pacer = None
    conn.send(server.url)
    try:
        while True:
            try:
                op, args, kw = conn.recv()
            except EOFError:
                return
            out = None
            if op == "wait_requests":
                try:
                    server.wait_requests(*args, **kw)
                except TimeoutError as e:
                    out = str(e) or "timed out"
            elif op == "n_requests":
                out = len(server.requests)
            elif op == "push":
                server.push(sse_reply(*args, **kw))
            elif op == "paced":
                pacer = Pacer(server, *args, **kw)
                server.push(pacer.reply)
                pacer.start()
            elif op == "pacer_t0":
                out = pacer.t0 if pacer is not None else None
            elif op == "pacer_stop":
                if pacer is not None:
                    pacer.stop()
            elif op == "served_at":
                out = list(server.served_at)
            elif op == "stop":
                conn.send(None)
                return
            conn.send(out)
    finally:
        server.stop()


class ServerProcess:
    """What the huge bench asks of a server, answered by a ScriptedServer in a child process."""

    def __init__(self, models: list[str]):
        self.models = models
        self.url = ""
        self._proc = None
        self._conn = None

    def start(self) -> ServerProcess:
        # fork: the child needs nothing the bench has not imported, and starts in milliseconds
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.models), name="bench-server", daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(30):
            raise RuntimeError("the bench's server process did not start")
        self.url = parent.recv()
        return self

    def _call(self, op: str, *args, **kw):
        self._conn.send((op, args, kw))
        if not self._conn.poll(30):
            raise RuntimeError(f"the bench's server process did not answer {op!r}")
        return self._conn.recv()

    def n_requests(self) -> int:
        return self._call("n_requests")

    def wait_requests(self, n: int, timeout: float) -> None:
        """Until the server has read n requests; TimeoutError after `timeout` seconds."""
        self._conn.send(("wait_requests", (n,), {"timeout": timeout}))
        if not self._conn.poll(timeout + 30):
            raise RuntimeError("the bench's server process did not answer 'wait_requests'")
        err = self._conn.recv()
        if err is not None:
            raise TimeoutError(err)

    def push_sse(self, pieces: list[str], **kw) -> None:
        """Queue an SSE reply of these content pieces (sse_reply's keywords)."""
        self._call("push", pieces, **kw)

    def push_paced(self, pieces: list[str], rate: float, **kw) -> None:
        """Queue a reply whose pieces leave at `rate` a second from its request (a Pacer)."""
        self._call("paced", pieces, rate, **kw)

    def pacer_t0(self) -> float | None:
        """When the paced reply's request arrived (None before)."""
        return self._call("pacer_t0")

    def pacer_stop(self) -> None:
        self._call("pacer_stop")

    @property
    def served_at(self) -> list[float]:
        """time.monotonic() when each response was written to its end."""
        return self._call("served_at")

    def stop(self) -> None:
        if self._proc is None:
            return
        try:
            self._call("stop")
        except (OSError, EOFError, RuntimeError):
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
