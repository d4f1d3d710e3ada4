"""ADR 0007's numbers, pinned as numbers, each with the behaviour at its edge.

The ADR (docs/decisions/0007, "Boundaries") makes these bounds requirements: 64 KiB and
2 000 lines per read_file reply (the marker reports both totals), read_file's limit
1..10 000 (default 2 000), list_directory at most 501 entries, execute_command output
head-capped at 32 KiB with the total, a 30 s command timeout by default, edit_file refusing
files over 8 MiB by stat before reading, previews capped at 50 lines, result excerpts at
30 lines, one stream aborted at 4 MiB or at the 65th distinct tool call, and a 1 MiB bound
on one server-sent event. Every literal here is the ADR's, written out on purpose: a change
of a constant (65536 -> 65537) must fail a test, and so must a bound that stops being used.
"""

from __future__ import annotations

import inspect
import sys

import pytest

from dashfloat import config
from dashfloat.agent import Agent
from dashfloat.llm import client, sse
from dashfloat.llm.client import CancelToken, Endpoint, stream_chat
from dashfloat.llm.errors import ChatError
from dashfloat.tools import catalogue, edit, files, preview, runner
from dashfloat.tools import exec as exec_tool
from tests.fakeserver import sse_reply

KiB = 1024
MiB = 1024 * 1024


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    return r


# ---- the constants ----------------------------------------------------------------------


def test_the_constants_are_the_adr_numbers():
    assert files.READ_MAX_BYTES == 65536
    assert files.READ_MAX_LINES == 2000
    assert files.READ_LIMIT_MAX == 10000
    assert files.STREAM_ABOVE == 262144  # files above 256 KiB are streamed
    assert files.LIST_MAX == 501
    assert files.EDIT_MAX_BYTES == 8388608
    assert edit.EDIT_MAX_BYTES == 8388608  # the name edit_file's stat check uses
    assert exec_tool.MAX_OUTPUT == 32768
    assert exec_tool.DEFAULT_TIMEOUT == 30.0
    assert preview.PREVIEW_MAX_LINES == 50
    assert preview.EXCERPT_MAX_LINES == 30
    assert runner.EXCERPT_LINES == 30


def defaults(fn) -> dict:
    return {k: p.default for k, p in inspect.signature(fn).parameters.items() if p.default is not p.empty}


def test_the_defaults_that_carry_the_numbers_are_the_adr_numbers():
    assert defaults(stream_chat)["max_episode_bytes"] == 4194304
    assert defaults(stream_chat)["max_calls"] == 64
    assert defaults(stream_chat)["max_event_bytes"] == 1048576
    assert defaults(sse.SSEParser.__init__)["max_event_bytes"] == 1048576
    assert defaults(exec_tool.run_command)["timeout"] == 30.0
    assert defaults(exec_tool.run_command)["max_output"] == 32768
    assert defaults(runner.execute)["exec_timeout"] == 30.0
    assert defaults(Agent.__init__)["exec_timeout"] == 30.0
    assert defaults(config.Config.__init__)["exec_timeout"] == 30.0
    assert config.Config().exec_timeout == 30.0
    assert defaults(files.read_file)["limit"] == 2000
    assert defaults(files.read_file)["offset"] == 1
    assert defaults(preview.diff_lines)["max_lines"] == 50
    assert defaults(preview.command_lines)["max_lines"] == 50
    assert defaults(preview.excerpt)["max_lines"] == 30


def test_the_catalogue_states_the_numbers_to_the_model():
    tools = {t["function"]["name"]: t["function"] for t in catalogue.TOOLS}
    limit = tools["read_file"]["parameters"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 10000, 2000)
    offset = tools["read_file"]["parameters"]["properties"]["offset"]
    assert (offset["minimum"], offset["default"]) == (1, 1)
    assert "2,000 lines and 64 KiB" in tools["read_file"]["description"]
    assert "8 MiB" in tools["edit_file"]["description"]


# ---- read_file: 64 KiB, 2 000 lines, limit 1..10 000 ----------------------------------------


def test_a_read_of_exactly_64_kib_is_whole(root):
    (root / "f").write_bytes(b"x" * 63 + b"\n" + (b"y" * 63 + b"\n") * 1023)  # 1024 lines, 65536 bytes
    got = files.read_file(root, "f")
    assert got["ok"] and got["truncated"] is False
    assert len(got["content"]) == 65536 and got["lines"] == 1024 and got["size"] == 65536


def test_a_read_of_64_kib_plus_one_byte_is_truncated_with_both_totals(root):
    (root / "f").write_bytes((b"y" * 63 + b"\n") * 1024 + b"z")  # 1025 lines, 65537 bytes
    got = files.read_file(root, "f")
    assert got["truncated"] is True and got["next_offset"] == 1025
    assert len(got["content"]) == 65536
    assert "lines 1-1024 of 1025 lines" in got["note"]
    assert "65536 of 65537 bytes" in got["note"]
    assert "at most 65536 bytes" in got["note"]


def test_a_single_line_above_64_kib_is_cut_at_64_kib(root):
    (root / "f").write_bytes(b"q" * 65537)
    got = files.read_file(root, "f")
    assert got["truncated"] is True and len(got["content"]) == 65536
    assert "longer than 65536 bytes" in got["note"] and "65537 bytes" in got["note"]


def test_2000_lines_are_whole_and_2001_are_truncated_with_both_totals(root):
    (root / "ok").write_text("l\n" * 2000)
    got = files.read_file(root, "ok")
    assert got["truncated"] is False and got["lines"] == 2000 and got["content"].count("\n") == 2000
    (root / "over").write_text("l\n" * 2001)
    got = files.read_file(root, "over")
    assert got["truncated"] is True and got["content"].count("\n") == 2000
    assert "lines 1-2000 of 2001 lines" in got["note"] and "4000 of 4002 bytes" in got["note"]
    # a larger limit does not lift the 2 000-line cap of one reply
    got = files.read_file(root, "over", limit=10000)
    assert got["truncated"] is True and got["content"].count("\n") == 2000
    assert "at most 2000 lines" in got["note"]


@pytest.mark.parametrize("limit, accepted", [(0, False), (1, True), (10000, True), (10001, False)])
def test_read_file_limit_is_1_to_10000(root, limit, accepted):
    (root / "f").write_text("a\nb\n")
    got = files.read_file(root, "f", limit=limit)
    assert got["ok"] is accepted, got
    if not accepted:
        assert "limit must be 1..10000" in got["error"]
    args, err = catalogue.validate_call({"id": "c", "name": "read_file", "args": {"path": "f", "limit": limit},
                                         "error": None})
    assert (err is None) is accepted, err


# ---- list_directory: 501 ----------------------------------------------------------------------


def test_list_directory_returns_501_entries_whole_and_502_truncated(root):
    d = root / "d"
    d.mkdir()
    for i in range(501):
        (d / f"e{i:04d}").touch()
    got = files.list_directory(root, "d")
    assert len(got["entries"]) == 501 and got["total"] == 501 and got["truncated"] is False
    (d / "e0501").touch()
    got = files.list_directory(root, "d")
    assert len(got["entries"]) == 501 and got["total"] == 502 and got["truncated"] is True
    assert got["entries"][-1]["name"] == "e0500"  # the alphabetical head


# ---- execute_command: 32 KiB, 30 s --------------------------------------------------------


def emit(n: int) -> str:
    return f"{sys.executable} -c 'import sys; sys.stdout.write(\"x\" * {n})'"


def test_exec_output_of_exactly_32_kib_is_whole(root):
    got = exec_tool.run_command(emit(32768), str(root))
    assert got["ok"] and got["truncated"] is False and got["bytes"] == 32768
    assert got["output"] == "x" * 32768


def test_exec_output_above_32_kib_is_head_capped_with_the_total(root):
    got = exec_tool.run_command(emit(32769), str(root))
    assert got["ok"] and got["truncated"] is True and got["bytes"] == 32769
    head, marker = got["output"].rsplit("\n", 1)
    assert head == "x" * 32768
    assert marker == "[output truncated: 32768 of 32769 bytes shown]"


def test_the_command_timeout_is_30_s_unless_configured(root, monkeypatch):
    seen = {}

    def fake_run(command, cwd, **kw):
        seen.update(kw)
        return {"ok": True, "exit_code": 0, "output": "", "truncated": False, "bytes": 0}

    monkeypatch.setattr(runner, "run_command", fake_run)
    prepared = runner.prepare("execute_command", {"command": "true"}, str(root))
    runner.execute("execute_command", {"command": "true"}, str(root), prepared)
    assert seen["timeout"] == 30.0
    assert exec_tool._format_seconds(30.0) == "30s"  # "timed out after 30s", as the ADR shows


# ---- edit_file: 8 MiB by stat -------------------------------------------------------------


def test_edit_file_refuses_8_mib_plus_one_by_stat_before_opening(root, monkeypatch):
    big = root / "big"
    with open(big, "wb") as f:
        f.truncate(8388609)  # sparse: nothing to read, only a size

    def never(*a, **k):
        raise AssertionError("a file above 8 MiB was opened")

    monkeypatch.setattr(files, "open_regular", never)
    got = edit.plan_edit(root, "big", "a", "b")
    assert got["code"] == "too_large" and got["size"] == 8388609
    assert "above 8388608 bytes" in got["error"]
    got = edit.plan_write(root, "big", "x")
    assert got["code"] == "too_large" and got["size"] == 8388609


def test_edit_file_accepts_exactly_8_mib(root):
    (root / "f").write_bytes(b"a" * (8388608 - 7) + b"needle\n")
    plan = edit.plan_edit(root, "f", "needle", "pin")
    assert isinstance(plan, edit.EditPlan) and plan.size == 8388608


# ---- previews: 50 lines; excerpts: 30 ------------------------------------------------------


@pytest.mark.parametrize("n, hidden", [(47, 0), (48, 1), (200, 153)])
def test_a_write_preview_shows_50_diff_lines_then_a_marker(n, hidden):
    """A new file of n lines is n + 3 diff lines (two headers, one hunk line), under a
    totals line."""
    new = "".join(f"line {i}\n" for i in range(n)).encode()
    lines = preview.diff_lines("new.txt", None, new)
    assert lines[0][0] == "stat" and f"{n} lines" in lines[0][1]
    body = [ln for ln in lines if ln[0] not in ("marker", "stat")]
    assert len(body) == n + 3 - hidden
    assert len(body) <= 50
    markers = [t for k, t in lines if k == "marker"]
    assert markers == ([f"… {hidden} more diff lines ({n} added, 0 removed in all)"] if hidden else [])


def test_an_edit_preview_is_capped_at_50_lines_too(root):
    old = "".join(f"old {i}\n" for i in range(100))
    (root / "f").write_text(old)
    plan = edit.plan_edit(root, "f", old, "".join(f"new {i}\n" for i in range(100)))
    prepared = runner.prepare("edit_file", {"path": "f", "search_block": old,
                                            "replace_block": "".join(f"new {i}\n" for i in range(100))}, str(root))
    assert isinstance(plan, edit.EditPlan)
    body = [ln for ln in prepared.preview if ln[0] not in ("marker", "stat")]
    assert len(body) == 50
    assert prepared.preview[-1][0] == "marker" and "100 added, 100 removed in all" in prepared.preview[-1][1]


def test_a_command_preview_is_capped_at_50_lines(root):
    assert len(preview.command_lines("\n".join(f"echo {i}" for i in range(50)), ".")) == 52  # totals, cwd
    lines = preview.command_lines("\n".join(f"echo {i}" for i in range(51)), ".")
    assert [k for k, _ in lines].count("command") == 50
    assert lines[26] == ("marker", "… 1 more command line (line 26 of 51; v shows them) …")
    assert lines[-2:] == [("command", "echo 50"), ("cwd", "cwd: .")]  # the end is in the window


def test_a_result_excerpt_is_at_most_30_lines():
    assert len(preview.excerpt("\n".join(str(i) for i in range(30)))) == 30
    shown = preview.excerpt("\n".join(str(i) for i in range(31)))
    assert len(shown) == 30 and shown[-1] == "… 2 more lines"
    row = runner.result_row("c", "read_file", {"ok": True, "content": "x\n" * 100, "lines": 100})
    assert len(row["excerpt"]) == 30


# ---- the stream: 4 MiB, 64 calls, 1 MiB per event -----------------------------------------


def run_stream(server):
    events: list[tuple] = []
    ep = Endpoint(base_url=server.url)
    result = stream_chat(ep, "m", [{"role": "user", "content": "hi"}], on_event=events.append, cancel=CancelToken())
    return result, events


PIECE = "abcdefgh" * 8192  # 64 KiB per event


def test_a_stream_of_exactly_4_mib_is_whole(fake_server):
    fake_server.push(sse_reply([PIECE] * 64))
    result, _ = run_stream(fake_server)
    assert len(result.content) == 4194304


def test_a_stream_of_4_mib_plus_one_byte_aborts(fake_server):
    fake_server.push(sse_reply([PIECE] * 64 + ["!"]))
    with pytest.raises(ChatError) as info:
        run_stream(fake_server)
    assert info.value.kind == "bound" and "the answer exceeded 4 MiB" in info.value.message


def call_chunks(n: int) -> list:
    return [[{"index": i, "id": f"c{i}", "function": {"name": "list_directory", "arguments": "{}"}}]
            for i in range(n)]


def test_64_tool_calls_are_accepted_and_the_65th_aborts(fake_server):
    fake_server.push(sse_reply([], tool_calls=call_chunks(64), finish_reason="tool_calls"))
    result, _ = run_stream(fake_server)
    assert len(result.tool_calls) == 64
    fake_server.push(sse_reply([], tool_calls=call_chunks(65), finish_reason="tool_calls"))
    with pytest.raises(ChatError) as info:
        run_stream(fake_server)
    assert info.value.kind == "bound" and "more than 64 tool calls" in info.value.message


def test_one_server_sent_event_may_hold_1_mib_and_not_a_byte_more():
    prefix = len(b"data: ")
    ok = b"data: " + b"x" * (1048576 - prefix) + b"\n\n"
    assert len(sse.SSEParser().feed(ok)) == 1
    with pytest.raises(sse.SSEError, match="exceeded 1 MiB"):
        sse.SSEParser().feed(b"data: " + b"x" * (1048576 - prefix + 1) + b"\n\n")


def test_the_stream_applies_the_1_mib_event_bound(fake_server):
    fake_server.push(sse_reply(["ok", "z" * 1048576]))  # the JSON around it puts the event above 1 MiB
    with pytest.raises(ChatError) as info:
        run_stream(fake_server)
    assert info.value.kind == "bound" and "1 MiB" in info.value.message


def test_the_agent_passes_the_30_s_default_to_execute_command(tmp_path, monkeypatch):
    """The agent's default exec_timeout reaches the runner (the config default is pinned above)."""
    import queue

    seen: queue.SimpleQueue = queue.SimpleQueue()

    def execute(name, args, root, prepared, **kw):
        seen.put(kw.get("exec_timeout"))
        return {"ok": True, "exit_code": 0, "output": "", "truncated": False, "bytes": 0}

    monkeypatch.setattr(runner, "execute", execute)
    calls = [{"id": "c1", "name": "execute_command", "args": {"command": "true"}, "error": None}]
    episodes = iter([client.StreamResult(content="", reasoning="", tool_calls=calls, finish_reason="tool_calls",
                                         usage=None, cancelled=False)])

    def stream(*a, **k):
        return next(episodes, client.StreamResult(content="done", reasoning="", tool_calls=[],
                                                  finish_reason="stop", usage=None, cancelled=False))

    from dashfloat import messages as M
    from dashfloat.tools.permissions import Policy

    out: queue.SimpleQueue = queue.SimpleQueue()
    agent = Agent(Endpoint(base_url="http://127.0.0.1:9/v1"), "m", out.put, root=str(tmp_path), stream_fn=stream,
                  policy=Policy(mode="unrestricted"))
    agent.start()
    try:
        agent.send((M.PROMPT, "run true"))
        assert seen.get(timeout=5) == 30.0
    finally:
        agent.send((M.QUIT,))
        agent.join(2)

