"""End to end: the configured key never reaches the screen, the log or any file DashFloat
writes, and the files it writes for itself are private whatever the umask."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env, dashfloat_bin
from tests.fakeserver import Reply, json_reply, sse_reply

KEY = "sk-e2e-LIVE-0123456789abcdefghij"


def _files(tmp_path: Path) -> dict[str, bytes]:
    """Every file under the XDG state dir and home (what DashFloat may have written)."""
    out = {}
    for top in (tmp_path / "state", tmp_path / "home"):
        for dirpath, _dirs, names in os.walk(top):
            for name in names:
                path = Path(dirpath) / name
                out[str(path)] = path.read_bytes()
    return out


def _no_key_anywhere(t, tmp_path: Path) -> None:
    for piece in (KEY, KEY[:14], KEY[-14:]):
        assert piece.encode() not in bytes(t.raw), f"{piece!r} reached the screen"
        for path, data in _files(tmp_path).items():
            assert piece.encode() not in data, f"{piece!r} is in {path}"


def _quit(t) -> None:
    t.send("\x04")
    assert t.wait_exit() == 0


def test_an_error_body_that_echoes_the_key_is_masked_on_screen_and_in_the_log(dash, server, tmp_path):
    server.push(json_reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}. See docs",
                                           "type": "invalid_request_error"}}))
    t = dash(env=clean_env(tmp_path, OPENAI_API_KEY=KEY))
    t.type(f"my key is {KEY} is that right\r")  # typed on purpose: still never written to a file
    t.wait_flat("Incorrect API key provided: [redacted: API key]")
    _quit(t)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"  # it was sent
    log = (tmp_path / "state" / "dashfloat" / "dashfloat.log").read_text()
    assert "starting dashfloat" in log
    _no_key_anywhere(t, tmp_path)


def test_a_redirect_to_a_url_with_the_key_in_its_query_is_masked(dash, server, tmp_path):
    server.push(Reply(status=307, headers={"Location": f"https://elsewhere.test/v1?key={KEY}&x=1"},
                      chunks=[b""], length=True))
    t = dash(env=clean_env(tmp_path, OPENAI_API_KEY=KEY))
    t.type("hello\r")
    t.wait_flat("a redirect to https://elsewhere.test/v1?key=")
    _quit(t)
    _no_key_anywhere(t, tmp_path)


def test_a_secret_header_value_http_cannot_carry_is_refused_at_start_without_showing_it(spawn, server, tmp_path):
    """A header value with leading blanks once reached requests, which refused it on every
    request and quoted the value in its exception text. The configuration now refuses it at
    start, naming the header and never the value (exception texts are masked too: tested in
    tests/unit/test_masking.py)."""
    from tests.e2e.harness import dashfloat_bin

    cfg = tmp_path / "config" / "dashfloat" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'headers = {{ "X-Api-Key" = " {KEY}" }}\n')
    t = spawn([dashfloat_bin(), "--base-url", server.url, "--model", "test-model"], env=clean_env(tmp_path))
    assert t.wait_exit() == 2
    message = b'header "X-Api-Key": the value must not start or end with spaces or tabs'
    assert message in bytes(t.raw), t.dump()
    assert server.requests == []
    _no_key_anywhere(t, tmp_path)


def test_a_tool_result_with_the_key_is_masked_on_screen_and_for_the_model(dash, server, tmp_path):
    from tests.test_agent_tools import calls_reply

    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "env.txt").write_text(f"OPENAI_API_KEY={KEY}\n")
    server.push(calls_reply(("c1", "read_file", {"path": "env.txt"})), sse_reply(["Done reading."]))
    t = dash("-C", str(tmp_path / "proj"), env=clean_env(tmp_path, OPENAI_API_KEY=KEY))
    t.type("read it\r")
    t.wait_text("Done reading.")
    _quit(t)
    assert KEY not in str(server.requests[1]["body"])
    _no_key_anywhere(t, tmp_path)


# ---- private files ---------------------------------------------------------------------------


def _umask0(spawn, server, tmp_path, *, script: str = ""):
    argv = [dashfloat_bin(), "--base-url", server.url, "--model", "test-model"]
    t = spawn(["/bin/sh", "-c", f"{script}umask 0; exec {shlex.join(argv)}"], env=clean_env(tmp_path))
    wait_ready(t)
    return t


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_log_and_history_are_private_with_a_umask_of_0(spawn, server, tmp_path):
    server.push(sse_reply(["ok"]))
    t = _umask0(spawn, server, tmp_path)
    t.type("remember this\r")
    t.wait_text("ok")
    _quit(t)
    state = tmp_path / "state" / "dashfloat"
    assert _mode(tmp_path / "state") == 0o700, "a state directory DashFloat created"
    assert _mode(state) == 0o700
    assert _mode(state / "dashfloat.log") == 0o600
    assert _mode(state / "history") == 0o600
    assert "remember this" in (state / "history").read_text()


def test_existing_wider_modes_are_tightened_and_the_log_says_so(spawn, server, tmp_path):
    state = tmp_path / "state" / "dashfloat"
    state.mkdir(parents=True)
    (state / "dashfloat.log").write_text("old line\n")
    (state / "history").write_text('"an old prompt"\n')
    os.chmod(state, 0o755)
    os.chmod(state / "dashfloat.log", 0o644)
    os.chmod(state / "history", 0o666)
    t = _umask0(spawn, server, tmp_path)
    _quit(t)
    assert _mode(state) == 0o700
    assert _mode(state / "dashfloat.log") == 0o600
    assert _mode(state / "history") == 0o600
    log = (state / "dashfloat.log").read_text()
    assert log.startswith("old line\n")
    assert f"{state} was mode 0755 (readable by others): now 0700" in log
    assert f"{state / 'dashfloat.log'} was mode 0644 (readable by others): now 0600" in log
    assert f"{state / 'history'} was mode 0666 (readable by others): now 0600" in log
