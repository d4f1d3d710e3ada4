"""End to end against a real gateway: the LiteLLM proxy on 127.0.0.1 with scripted models
(`mock_response` for a text answer, the custom provider in litellm_mock.py for streamed
tool calls and failures, and the scripted server of tests/fakeserver.py as an
OpenAI-compatible upstream, where a llama.cpp or vLLM would be). DashFloat runs in a pty as
everywhere else; nothing leaves the machine.

Skipped when litellm (with its proxy extras) is not installed, or when the proxy does not
come up: `make test-litellm` installs it and runs this module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env, dashfloat_bin
from tests.fakeserver import ScriptedServer, sse_reply

HERE = Path(__file__).parent
PROXY_BIN = Path(sys.executable).parent / "litellm"
START_TIMEOUT = 120.0  # seconds: the proxy imports a lot; 10 s on a quiet 2-CPU machine

# `make test-litellm` sets this: there, a proxy that is missing or does not start is a
# failure, not a skip that would pass for a green run
REQUIRED = os.environ.get("DASHFLOAT_REQUIRE_LITELLM") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


if importlib.util.find_spec("litellm") is None or not PROXY_BIN.exists():
    _unavailable("litellm[proxy] is not installed in this venv (make test-litellm installs it)")

CONFIG = """\
model_list:
  - model_name: mock-text
    litellm_params:
      model: openai/mock-text
      api_key: unused
      mock_response: "Hello from the mock, through LiteLLM."
  - model_name: mock-tools
    litellm_params:
      model: dashmock/tools
  - model_name: upstream
    litellm_params:
      model: openai/test-model
      api_base: UPSTREAM_URL
      api_key: unused
litellm_settings:
  custom_provider_map:
    - {"provider": "dashmock", "custom_handler": litellm_mock.handler}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError):
        return False


class Proxy:
    def __init__(self, workdir: Path, upstream_url: str):
        self.dir = workdir
        self.port = _free_port()
        self.key = "sk-dashfloat-" + secrets.token_hex(16)
        self.log = workdir / "mock-requests.jsonl"
        self.out = workdir / "proxy.log"
        self.url = f"http://127.0.0.1:{self.port}/v1"
        shutil.copy(HERE / "litellm_mock.py", workdir / "litellm_mock.py")
        (workdir / "config.yaml").write_text(CONFIG.replace("UPSTREAM_URL", upstream_url))
        env = dict(os.environ)
        env.update(
            LITELLM_MASTER_KEY=self.key,
            LITELLM_LOCAL_MODEL_COST_MAP="True",  # no download of the model price list
            DASHFLOAT_MOCK_LOG=str(self.log),
            NO_PROXY="127.0.0.1,localhost",
        )
        self.proc = subprocess.Popen(
            [str(PROXY_BIN), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=workdir, env=env, stdout=self.out.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        health = f"http://127.0.0.1:{self.port}/health/readiness"
        while not _ready(health):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.out.read_text(errors="replace")[-1500:]
                self.stop()
                _unavailable(f"the LiteLLM proxy did not come up within {START_TIMEOUT:.0f} s:\n{tail}")
            time.sleep(0.2)  # polling a condition, with a deadline

    def requests(self) -> list[list[dict]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


@pytest.fixture(scope="module")
def upstream():
    """The scripted OpenAI-compatible server behind the proxy's `upstream` model."""
    srv = ScriptedServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def proxy(tmp_path_factory, upstream):
    p = Proxy(tmp_path_factory.mktemp("litellm"), upstream.url)
    try:
        p.wait_ready()
        yield p
    finally:
        p.stop()


@pytest.fixture
def dash_litellm(proxy, spawn, tmp_path):
    def _dash(model: str, root: Path | None = None):
        argv = [dashfloat_bin(), "--base-url", proxy.url, "--model", model]
        if root is not None:
            argv += ["-C", str(root)]
        t = spawn(argv, env=clean_env(tmp_path, OPENAI_API_KEY=proxy.key))
        wait_ready(t, model)
        return t

    return _dash


def _idle_with(t, *needles: str, timeout: float = 30.0) -> None:
    t.wait_for(lambda t: all(n in t.flat for n in needles) and " idle " in t.status(), timeout,
               f"{needles} and idle")
    for word in ("Traceback", 'File "'):
        assert word not in t.text, t.dump()
    assert "[model returned nothing]" not in t.flat, t.dump()


def test_plain_answer_through_litellm(dash_litellm):
    t = dash_litellm("mock-text")
    t.type("hello\r")
    _idle_with(t, "Hello from the mock, through LiteLLM.")


def test_tool_call_round_trip_is_accepted_by_litellm(dash_litellm, proxy, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("hi from a.txt\n")
    before = len(proxy.requests())
    t = dash_litellm("mock-tools", root)
    t.type("read a.txt please\r")
    _idle_with(t, "The file says:", "hi from a.txt")
    seen = proxy.requests()[before:]
    assert len(seen) == 2, seen
    second = seen[1]
    # what LiteLLM accepted and passed on: the call, then its result
    calls = [m for m in second if m.get("role") == "assistant" and m.get("tool_calls")]
    # "" reaches the model's server as "" (a null would arrive as a missing key)
    assert len(calls) == 1 and calls[0]["content"] == ""
    assert calls[0]["tool_calls"][0]["function"]["name"] == "read_file"
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.txt"}
    tool = second[-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == calls[0]["tool_calls"][0]["id"]
    assert "hi from a.txt" in tool["content"]


def test_upstream_failure_mid_stream_keeps_the_text_and_names_the_cause(dash_litellm):
    t = dash_litellm("mock-tools")
    t.type("please fail\r")
    _idle_with(t, "Partial answer,", "mock upstream exploded", "incomplete")


def test_context_overflow_behind_litellm_gets_the_context_hint(dash_litellm):
    t = dash_litellm("mock-tools")
    t.type("overflow\r")
    _idle_with(t, "context window", "new conversation")


def test_tool_round_trip_through_litellm_to_an_openai_compatible_server(dash_litellm, upstream, tmp_path):
    """LiteLLM in front of a llama.cpp-like server: the tool call streams back through the
    proxy, and the second request reaches the server with the assistant message's content
    as "" (LiteLLM drops a null content, and llama.cpp refuses a message without one)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "b.txt").write_text("upstream sees this\n")
    call = [{"index": 0, "id": "call_up_1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "b.txt"}'}}]
    upstream.push(sse_reply([], tool_calls=[call], finish_reason="tool_calls"),
                  sse_reply(["Upstream ", "read it."]))
    before = len(upstream.requests)
    t = dash_litellm("upstream", root)
    t.type("read b.txt\r")
    _idle_with(t, "Upstream read it.")
    first, second = upstream.wait_requests(before + 2)[before:]
    msgs = second["json"]["messages"]
    assistant = next(m for m in msgs if m["role"] == "assistant")
    assert "content" in assistant and assistant["content"] == "", assistant
    assert assistant["tool_calls"][0]["id"] == "call_up_1"
    assert msgs[-1]["role"] == "tool" and "upstream sees this" in msgs[-1]["content"]
