"""The early frame: the initial screen is painted before urwid loads, and what is typed
on it is replayed into the real UI, never echoed raw and never lost."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.harness import clean_env
from tests.fakeserver import sse_reply


def test_keys_typed_on_the_early_frame_are_replayed(dash, server):
    server.push(sse_reply(["Replayed ", "fine."]))
    term = dash(wait=False)
    term.wait_status("idle")  # the first frame: usually still the early one
    early = b"\x1b[?2004h" not in term.raw
    term.type("hello early\r")
    term.wait_text("Replayed fine.")
    body = [r for r in server.requests if r["method"] == "POST"][0]["json"]  # (a GET asks the window)
    assert body["messages"][-1] == {"role": "user", "content": "hello early"}
    head = term.raw.split(b"\x1b[?2004h")[0].decode("utf-8", "replace")
    # before urwid runs, the text may only appear as the early frame's own echo on the prompt
    assert head.count("hello early") == head.count("❯ hello early"), "echoed raw by the tty"
    if early:  # the early frame came first and was replaced by the real UI
        assert term.raw.index(b"\x1b[7m") < term.raw.index(b"\x1b[?2004h")


def test_the_early_frame_shows_the_status_bar_before_urwid_starts(dash):
    term = dash(wait=False)
    term.wait_status("idle")
    term.wait_for(lambda t: b"\x1b[?2004h" in t.raw, what="urwid to start")
    head = term.raw.split(b"\x1b[?2004h")[0]
    assert b"\x1b[?1049h" in head and b" idle " in head and b"test-model" in head


_SITE = """
import os, sys
sys.path.insert(0, {bench!r})
import posthook

def _hook(mod):
    show = mod.EarlyFrame.show

    def shown(self, *a, **k):
        out = show(self, *a, **k)
        with open({out!r}, "w") as f:
            f.write("\\n".join(sorted(sys.modules)))
        return out

    mod.EarlyFrame.show = shown

posthook.install({{"dashfloat.ui.early": _hook}})
"""


def test_the_early_frame_is_painted_before_dataclasses_and_inspect_load(dash, tmp_path):
    """The CPU before the early frame is a figure (issue 16): `dataclasses` and the
    `inspect` it imports are ~6 ms of it, and the modules that frame needs make their value
    classes without them (dashfloat/frozen.py). A configuration file is read (tomllib)."""
    site, out = tmp_path / "site", tmp_path / "modules.txt"
    site.mkdir()
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    (site / "sitecustomize.py").write_text(_SITE.format(bench=bench, out=str(out)))
    env = clean_env(tmp_path, PYTHONPATH=str(site))
    conf = Path(env["XDG_CONFIG_HOME"]) / "dashfloat" / "config.toml"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text('context_window = 100000\nheaders = { "X-Team" = "a" }\n')
    dash(env=env)  # (past the early frame: urwid runs)
    loaded = set(out.read_text().split("\n"))
    assert {"dashfloat.ui.early", "dashfloat.config", "tomllib"} <= loaded  # it did run there
    assert "urwid" not in loaded
    assert not loaded & {"dataclasses", "inspect"}, sorted(loaded & {"dataclasses", "inspect"})
