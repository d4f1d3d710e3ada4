"""What DashFloat loads at rest (issue 16: memory at rest is a figure): urwid imports asyncio
for an event loop DashFloat does not use, http.client imports ssl for HTTPS connections a
plain http endpoint never makes, wcwidth imports secrets (and with it hashlib and
libcrypto) for an id DashFloat never asks; each is loaded only when something uses it."""

from __future__ import annotations

import os
import subprocess
import sys

_PROBE = """
import sys
import dashfloat.ui.app, dashfloat.ui.widgets, dashfloat.ui.screen
import dashfloat.agent, dashfloat.llm.client, dashfloat.llm.transport, dashfloat.journal
import dashfloat.tools.undo, dashfloat.tools.permissions, dashfloat.tools.pipeline
import urwid
heavy = ("_asyncio", "asyncio.base_events", "concurrent.futures", "_ssl", "_hashlib", "hmac")
loaded = sorted(m for m in heavy if m in sys.modules)
print("loaded at rest:", loaded)
from dashfloat import journal, sha
import hashlib
assert journal.sha256(b"abc") == hashlib.sha256(b"abc").hexdigest() == sha.sha256_hex(b"abc")
import ssl
assert ssl.PROTOCOL_TLS_CLIENT and isinstance(ssl.SSLError("x"), OSError)
import http.client
assert http.client.HTTPSConnection("localhost")._context is not None  # ssl through the stand-in
import asyncio
async def answer():
    return 42
assert asyncio.run(answer()) == 42
assert type(sys.modules["asyncio"]).__name__ == "module"
import asyncio.events
from asyncio import events
assert events is sys.modules["asyncio.events"]
loop = urwid.AsyncioEventLoop()  # urwid's own use of it still works
del loop
print("ok")
"""


def test_the_ui_loads_asyncio_only_when_it_is_used():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "loaded at rest: []" in out.stdout and out.stdout.rstrip().endswith("ok"), out.stdout
    assert out.stderr == "", out.stderr


def test_a_deferred_module_already_loaded_is_left_alone():
    import json

    from dashfloat.ui import Deferred, defer

    defer("json")
    assert sys.modules["json"] is json
    stand_in = Deferred("colorsys")
    sys.modules.pop("colorsys", None)
    sys.modules["colorsys"] = stand_in
    try:
        import colorsys

        assert colorsys is stand_in
        assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0)[0] == 0.0  # the real module, loaded now
        assert type(sys.modules["colorsys"]).__name__ == "module"
    finally:
        sys.modules.pop("colorsys", None)


_THREADS_PROBE = """
import sys, threading
first = {}
class Tracer:
    def find_spec(self, name, path=None, target=None):
        first.setdefault(name, threading.current_thread().name)
sys.meta_path.insert(0, Tracer())
from dashfloat import cli
try:
    cli.main(["-p", "hi", "--base-url", sys.argv[1], "--model", "test-model", "--no-journal"])
except SystemExit:
    pass
print("typing imported by:", first.get("typing"))
"""


def test_typing_is_imported_on_the_main_thread_before_a_worker_needs_it(tmp_path):
    """A worker's lazy import of typing while the main thread makes a dataclass gives the
    dataclass a half-made typing ("has no attribute 'ClassVar'"): a headless run died of it
    now and then. typing is imported before any worker starts."""
    from tests.fakeserver import ScriptedServer, sse_reply

    server = ScriptedServer().start()
    try:
        server.push(sse_reply(["Hello."]))
        done = subprocess.run([sys.executable, "-c", _THREADS_PROBE, server.url], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    finally:
        server.stop()
    assert done.stdout.splitlines() == ["Hello.", "typing imported by: MainThread"], done.stderr
