"""The real Agent with tools, against the scripted HTTP server (issue 3, sections 2 and 9).

Real llm.client.stream_chat over loopback HTTP, real tools in a tmp_path root. Each test
scripts the server's episodes, drives the agent through its inbox like a front end would,
and checks (a) what the agent posted, (b) the files on disk, (c) the recorded request
bodies: every request after an episode with calls carries the canonical assistant message
(arguments a JSON string) and then exactly one tool message per call, in call order.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from pathlib import Path

import pytest

from dashfloat import messages as M
from dashfloat.agent import Agent
from dashfloat.llm.endpoint import Endpoint
from dashfloat.tools import runner
from tests.fakeserver import Reply, ScriptedServer, sse_reply

MODEL = "test-model"
WAIT = 5.0  # the deadline of every wait (nothing here should take more than a fraction)


# ---- collecting what the agent posts -------------------------------------------------------


class Outbox:
    """Every message the agent posts, in order; waits with deadlines, never fixed sleeps."""

    def __init__(self):
        self.seen: list[tuple] = []
        self.cond = threading.Condition()

    def post(self, msg: tuple) -> None:
        with self.cond:
            self.seen.append(msg)
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.seen)

    def wait(self, pred, since: int = 0, timeout: float = WAIT) -> tuple:
        """The first message at or after `since` that matches `pred`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for m in self.seen[since:]:
                    if pred(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching message; seen since {since}: {self.seen[since:]}")
                self.cond.wait(left)

    def wait_kind(self, kind, *args, since: int = 0, timeout: float = WAIT) -> tuple:
        return self.wait(lambda m: m[0] == kind and m[1 : 1 + len(args)] == args, since, timeout)

    def since(self, start: int) -> list[tuple]:
        with self.cond:
            return list(self.seen[start:])

    def of(self, kind, start: int = 0) -> list[tuple]:
        return [m for m in self.since(start) if m[0] == kind]


def wait_until(cond, what: str, timeout: float = WAIT, step: float = 0.01):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)


# ---- the rig: server + agent + root ---------------------------------------------------------


class Rig:
    def __init__(self, server: ScriptedServer, root: Path):
        self.server = server
        self.root = root
        self.out = Outbox()
        self.agent: Agent | None = None

    def start(self, read_timeout: float | None = None, **kw) -> Agent:
        ep = Endpoint(base_url=self.server.url)
        if read_timeout is not None:
            ep = Endpoint(base_url=self.server.url, read_timeout=read_timeout)
        # no AGENTS.md of the developer's: a home of the test's own
        kw.setdefault("environ", {"HOME": str(self.root.parent / "home")})
        self.agent = Agent(ep, MODEL, self.out.post, root=str(self.root), **kw)
        self.agent.start()
        self.out.wait_kind(M.MODEL, MODEL)  # after the start-up ("phase", "idle")
        return self.agent

    # -- driving
    def prompt(self, text: str) -> int:
        """Send a prompt; returns the outbox mark the turn's messages start at."""
        mark = self.out.mark()
        self.agent.send((M.PROMPT, text))
        return mark

    def wait_idle(self, since: int, timeout: float = WAIT) -> None:
        """Until the turn started at `since` has ended (the only idle a turn posts)."""
        self.out.wait_kind(M.PHASE, "idle", since=since, timeout=timeout)

    def confirm(self, since: int, nth: int = 1) -> tuple:
        """The nth ("confirm", ref, {...}) posted since `since`."""
        self.out.wait(lambda m: m[0] == M.CONFIRM and len(self.out.of(M.CONFIRM, since)) >= nth, since)
        return self.out.of(M.CONFIRM, since)[nth - 1]

    def decide(self, ref: int, decision: str) -> None:
        self.agent.send((M.CONFIRM_DECISION, ref, decision))

    def results(self, since: int = 0) -> list[dict]:
        return [m[1] for m in self.out.of(M.TOOL_RESULT, since)]

    def wait_results(self, n: int, since: int = 0) -> list[dict]:
        self.out.wait(lambda m: m[0] == M.TOOL_RESULT and len(self.out.of(M.TOOL_RESULT, since)) >= n, since)
        return self.results(since)

    # -- the recorded requests
    def bodies(self) -> list[dict]:
        return [r["json"] for r in self.server.requests if r["method"] == "POST"]

    def messages_of(self, n: int) -> list[dict]:
        """The conversation the nth request (1-based) sent: its `messages` after the system
        message, which every request starts with (checked here)."""
        messages = self.bodies()[n - 1]["messages"]
        assert messages[0]["role"] == "system" and "You are DashFloat" in messages[0]["content"]
        return messages[1:]

    def system(self, since: int = 0, level: str | None = None) -> list[str]:
        return [m[2] for m in self.out.of(M.SYSTEM, since) if level is None or m[1] == level]


@pytest.fixture
def rig(tmp_path):
    server = ScriptedServer().start()
    root = tmp_path / "root"
    root.mkdir()
    r = Rig(server, root)
    try:
        yield r
    finally:
        if r.agent is not None:
            r.agent.send((M.QUIT,))
            r.agent.join(3)
        server.stop()
    # every request any test made keeps the pairing invariant; a body that is not JSON can
    # only be one a cancel cut short while it was being sent
    for req in server.requests:
        if req["method"] != "POST":
            continue
        if req["json"] is None:
            assert len(req["body"]) < int(req["headers"].get("content-length") or 0), req["body"][:200]
            continue
        assert_pairing(req["json"]["messages"])


# ---- scripting episodes ---------------------------------------------------------------------


def frag(index, id=None, name=None, args=None):
    """One tool_calls delta."""
    d: dict = {"index": index}
    if id is not None:
        d["id"] = id
        d["type"] = "function"
    fn = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    if fn:
        d["function"] = fn
    return d


def crash_on(agent, *kinds, only=None) -> None:
    """Make the agent's handling of messages of these kinds raise RuntimeError("boom")
    (of those `only(msg)` holds for, when given): a bug in the middle of its work."""
    real = agent.handle

    def handle(msg):
        if msg[0] in kinds and (only is None or only(msg)):
            raise RuntimeError("boom")
        return real(msg)

    agent.handle = handle


def calls_reply(*calls, content=(), usage=None, split=True, **kw) -> Reply:
    """An episode that announces `calls` ((id, name, args-dict-or-raw-string) each), every
    call as two fragments (name + the first half of its arguments, then the rest)."""
    chunks = []
    for i, (cid, name, args) in enumerate(calls):
        text = args if isinstance(args, str) else json.dumps(args)
        if split and len(text) > 1:
            half = len(text) // 2
            chunks.append([frag(i, cid, name, text[:half])])
            chunks.append([frag(i, args=text[half:])])
        else:
            chunks.append([frag(i, cid, name, text)])
    return sse_reply(list(content), tool_calls=chunks, finish_reason="tool_calls", usage=usage, **kw)


def answer(text="Done.", usage=None, **kw) -> Reply:
    return sse_reply([text] if text else [], usage=usage, **kw)


def tool_messages(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["role"] == "tool"]


def result_of(messages: list[dict], call_id: str) -> dict:
    (m,) = [m for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id]
    return json.loads(m["content"])


def assert_pairing(messages: list[dict]) -> None:
    """Every assistant message with tool_calls is followed by exactly one tool message per
    call, in call order, echoing the ids; arguments are JSON object strings; tool contents
    are JSON result objects; no tool message anywhere else."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"orphaned tool message at {i}: {m}"
        i += 1
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        ids = []
        for c in m["tool_calls"]:
            assert c["type"] == "function"
            assert isinstance(c["function"]["arguments"], str), c
            assert isinstance(json.loads(c["function"]["arguments"]), dict), c
            ids.append(c["id"])
        got = messages[i : i + len(ids)]
        assert [t["role"] for t in got] == ["tool"] * len(ids), f"calls {ids} not answered: {got}"
        assert [t["tool_call_id"] for t in got] == ids
        for t in got:
            body = json.loads(t["content"])
            assert isinstance(body, dict) and isinstance(body.get("ok"), bool), body
            if not body["ok"] and not body.get("rejected") and not body.get("cancelled"):
                assert isinstance(body.get("error"), str) and isinstance(body.get("code"), str), body
        i += len(ids)


def canonical(call_id, name, args) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def proc_cmdlines_with(marker: str) -> list[str]:
    """Live (non-zombie) processes whose command line contains `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{pid}: {cmd}")
    return found


def unique_sleep() -> str:
    """A sleep duration no other process on the machine has on its command line."""
    return f"{30 + random.random():.7f}"


# ---- the round trip -------------------------------------------------------------------------


def test_read_file_round_trip_then_a_final_answer(rig):
    (rig.root / "notes.txt").write_text("hello\nworld\n")
    rig.server.push(
        calls_reply(("call_R1", "read_file", {"path": "notes.txt"}), content=["Let me read it."]),
        answer("It says hello world."),
    )
    rig.start()
    t = rig.prompt("what is in notes.txt?")
    rig.wait_idle(t)

    posted = rig.out.since(t)
    assert not rig.out.of(M.CONFIRM, t)  # read_file never asks
    assert (M.TOOL_CALL, {"id": "call_R1", "name": "read_file", "summary": "read_file notes.txt"}) in posted
    (row,) = rig.results(t)
    assert row["id"] == "call_R1" and row["status"] == "ok" and "hello" in row["excerpt"]
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["done", "done"]
    assert "".join(m[1] for m in rig.out.of(M.TOKEN, t)) == "Let me read it.It says hello world."
    assert M.SYSTEM not in [m[0] for m in posted]

    first, second = rig.bodies()
    assert first["model"] == MODEL and first["stream"] is True
    assert [t["function"]["name"] for t in first["tools"]] == [t["function"]["name"] for t in runner.TOOLS]
    assert "tool_choice" not in first and "parallel_tool_calls" not in first
    assert first["messages"][1:] == [{"role": "user", "content": "what is in notes.txt?"}]
    msgs = rig.messages_of(2)
    assert msgs[:2] == [
        {"role": "user", "content": "what is in notes.txt?"},
        {"role": "assistant", "content": "Let me read it.",
         "tool_calls": [canonical("call_R1", "read_file", {"path": "notes.txt"})]},
    ]
    assert len(msgs) == 3 and msgs[2]["role"] == "tool" and msgs[2]["tool_call_id"] == "call_R1"
    res = json.loads(msgs[2]["content"])
    assert res["ok"] is True and res["content"] == "hello\nworld\n" and res["path"] == "notes.txt"
    assert res["lines"] == 2 and res["truncated"] is False
    assert "tools" in second
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "It says hello world."}


def test_write_file_confirm_with_diff_then_approve(rig):
    rig.server.push(
        calls_reply(("call_W1", "write_file", {"path": "sub/new.txt", "content": "alpha\nbeta\n"})),
        answer("Written."),
    )
    rig.start()
    t = rig.prompt("write it")
    _, ref, info = rig.confirm(t)
    assert info["id"] == "call_W1" and info["name"] == "write_file"
    assert info["summary"].startswith("write_file sub/new.txt")
    lines = info["lines"]
    assert ("add", "+alpha") in lines and ("add", "+beta") in lines
    assert not any(kind == "del" for kind, _ in lines)  # a new file is all "+"
    assert "full" not in info  # the window shows it all
    assert info["always"] == "write_file(sub/new.txt)"  # the session rule the a key would add
    assert rig.out.wait_kind(M.PHASE, "confirming", since=t)
    assert not (rig.root / "sub").exists()  # nothing before the decision
    assert len(rig.bodies()) == 1

    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert (rig.root / "sub" / "new.txt").read_text() == "alpha\nbeta\n"
    (row,) = rig.results(t)
    assert row["status"] == "ok" and row["id"] == "call_W1"
    msgs = rig.messages_of(2)
    assert msgs[1]["tool_calls"] == [canonical("call_W1", "write_file", {"path": "sub/new.txt", "content": "alpha\nbeta\n"})]
    assert msgs[1]["content"] == ""  # a string, never null: llama-cpp-python and LM Studio reject null
    assert result_of(msgs, "call_W1") == {"ok": True, "path": "sub/new.txt", "bytes": 11, "created": True}
    assert len(rig.out.of(M.CONFIRM, t)) == 1


def test_a_question_whose_preview_the_window_cuts_carries_the_whole_preview(rig):
    content = "".join(f"line {i}\n" for i in range(120))
    rig.server.push(calls_reply(("call_W2", "write_file", {"path": "long.txt", "content": content})), answer("ok"))
    rig.start()
    t = rig.prompt("write it")
    _, ref, info = rig.confirm(t)
    assert len(info["full"]) > len(info["lines"]) and ("add", "+line 119") in info["full"]
    assert ("add", "+line 119") not in info["lines"]
    rig.decide(ref, "rejected")
    rig.wait_idle(t)


def test_write_file_rejected_is_not_written_and_the_turn_goes_on(rig):
    (rig.root / "keep.txt").write_text("original\n")
    rig.server.push(
        calls_reply(("call_W2", "write_file", {"path": "keep.txt", "content": "clobbered\n"})),
        answer("OK, I left it alone."),
    )
    rig.start()
    t = rig.prompt("overwrite keep.txt")
    _, ref, info = rig.confirm(t)
    assert ("del", "-original") in info["lines"] and ("add", "+clobbered") in info["lines"]
    rig.decide(ref, "rejected")
    rig.wait_idle(t)
    assert (rig.root / "keep.txt").read_text() == "original\n"
    (row,) = rig.results(t)
    assert row["status"] == "rejected"
    assert len(rig.bodies()) == 2  # the turn went on: the model saw the rejection
    msgs = rig.messages_of(2)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert json.loads(msgs[2]["content"]) == {"ok": False, "rejected": True}
    assert msgs[2]["tool_call_id"] == "call_W2"
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["done", "done"]
    assert not any("Turn stopped" in s for s in rig.system(t))


def test_esc_during_a_confirmation_rejects_every_pending_call_and_ends_the_turn(rig):
    rig.server.push(
        calls_reply(
            ("call_E1", "write_file", {"path": "one.txt", "content": "1\n"}),
            ("call_E2", "write_file", {"path": "two.txt", "content": "2\n"}),
        ),
        answer("Understood."),
    )
    rig.start()
    t = rig.prompt("make two files")
    _, ref, info = rig.confirm(t)
    assert info["id"] == "call_E1"
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    rows = rig.results(t)
    assert [(r["id"], r["status"]) for r in rows] == [("call_E1", "rejected"), ("call_E2", "rejected")]
    assert len(rig.out.of(M.CONFIRM, t)) == 1  # the second call never asked
    assert not (rig.root / "one.txt").exists() and not (rig.root / "two.txt").exists()
    assert len(rig.bodies()) == 1  # the turn ended: no request with the rejections yet
    assert rig.agent._phase == "idle"
    # a late decision for the dead confirmation does nothing
    rig.decide(ref, "approved")

    t2 = rig.prompt("no, just one file called both.txt")
    rig.wait_idle(t2)
    assert not (rig.root / "one.txt").exists()
    msgs = rig.messages_of(2)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in msgs[2:4]] == ["call_E1", "call_E2"]
    assert [json.loads(m["content"]) for m in msgs[2:4]] == [{"ok": False, "rejected": True}] * 2
    assert msgs[4] == {"role": "user", "content": "no, just one file called both.txt"}


def test_two_interleaved_calls_run_in_call_order(rig):
    """Fragments of index 1 start first and the two calls' arguments interleave; the call
    order is the index order: the write (index 0) lands before the read (index 1) runs."""
    write_args = json.dumps({"path": "order.txt", "content": "written first\n"})
    read_args = json.dumps({"path": "order.txt"})
    chunks = [
        [frag(1, "call_I_read", "read_file", "")],
        [frag(0, "call_I_write", "write_file", write_args[:10])],
        [frag(1, args=read_args[:7])],
        [frag(0, args=write_args[10:25])],
        [frag(1, args=read_args[7:]), frag(0, args=write_args[25:])],
    ]
    rig.server.push(sse_reply([], tool_calls=chunks, finish_reason="tool_calls"), answer("Both done."))
    rig.start()
    t = rig.prompt("write then read")
    rig.out.wait(lambda m: len(rig.out.of(M.TOOL_CALL, t)) >= 2, t)
    calls = rig.out.of(M.TOOL_CALL, t)
    assert [c[1]["id"] for c in calls] == ["call_I_write", "call_I_read"]
    _, ref, info = rig.confirm(t)
    assert info["id"] == "call_I_write"
    assert not rig.results(t)  # the read waits for the write's decision
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    rows = rig.results(t)
    assert [(r["id"], r["status"]) for r in rows] == [("call_I_write", "ok"), ("call_I_read", "ok")]
    msgs = rig.messages_of(2)
    assert msgs[1]["tool_calls"] == [
        canonical("call_I_write", "write_file", json.loads(write_args)),
        canonical("call_I_read", "read_file", json.loads(read_args)),
    ]
    assert [m["tool_call_id"] for m in tool_messages(msgs)] == ["call_I_write", "call_I_read"]
    assert result_of(msgs, "call_I_read")["content"] == "written first\n"


# ---- execute_command ------------------------------------------------------------------------


def test_execute_command_timeout_keeps_the_partial_output(rig):
    nap = unique_sleep()
    command = f"echo start; sleep {nap}; echo never"
    rig.server.push(calls_reply(("call_X1", "execute_command", {"command": command})), answer("It hung."))
    rig.start(exec_timeout=0.5)
    t = rig.prompt("run it")
    _, ref, info = rig.confirm(t)
    assert any(command in text for _, text in info["lines"])  # the exact command is shown
    started = time.monotonic()
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert time.monotonic() - started < 4
    (row,) = rig.results(t)
    assert row["status"] == "error" and "timed out" in row["text"]
    res = result_of(rig.messages_of(2), "call_X1")
    assert res["ok"] is False and res["code"] == "timeout"
    assert res["output"].startswith("start") and "never" not in res["output"]
    assert "timed out after 0.5s" in res["error"]
    wait_until(lambda: not proc_cmdlines_with(nap), f"no process left with {nap}")


def test_cancel_during_a_running_command_cancels_the_rest_and_ends_the_turn(rig):
    nap = unique_sleep()
    command = f"echo started; sleep {nap} & sleep {nap}"
    rig.server.push(
        calls_reply(
            ("call_C1", "execute_command", {"command": command}),
            ("call_C2", "write_file", {"path": "after.txt", "content": "x"}),
        ),
        answer("Stopped, as asked."),
    )
    rig.start()
    t = rig.prompt("run the long thing")
    _, ref, _ = rig.confirm(t)
    rig.decide(ref, "approved")
    rig.out.wait_kind(M.PHASE, "running", since=t)
    rig.out.wait(lambda m: m[0] == M.TOOL_OUTPUT and m[1] == "call_C1" and "started" in m[2], t)
    wait_until(lambda: len(proc_cmdlines_with(nap)) >= 2, "both sleeps running")
    started = time.monotonic()
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    assert time.monotonic() - started < 3
    rows = rig.results(t)
    assert [(r["id"], r["status"]) for r in rows] == [("call_C1", "cancelled"), ("call_C2", "cancelled")]
    assert len(rig.out.of(M.CONFIRM, t)) == 1  # the write never asked
    assert not (rig.root / "after.txt").exists()
    assert len(rig.bodies()) == 1
    wait_until(lambda: not proc_cmdlines_with(nap), f"no sleep {nap} left running")

    t2 = rig.prompt("thanks")
    rig.wait_idle(t2)
    msgs = rig.messages_of(2)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user"]
    first = result_of(msgs, "call_C1")
    assert first["ok"] is False and first["cancelled"] is True and first["output"].startswith("started")
    second = result_of(msgs, "call_C2")
    assert second["ok"] is False and second["cancelled"] is True


# ---- streams that fail ----------------------------------------------------------------------


def assert_no_dangling_calls(agent: Agent) -> None:
    assert not any(m.get("tool_calls") for m in agent.messages), agent.messages
    assert not any(m["role"] == "tool" for m in agent.messages), agent.messages


def test_a_stream_that_stalls_mid_call_is_an_error_and_runs_nothing(rig):
    args = json.dumps({"path": "half.txt", "content": "complete arguments"})
    reply = sse_reply(
        ["Writing now."],
        tool_calls=[
            [frag(0, "call_S1", "write_file", args)],  # a whole, valid call...
            [frag(1, "call_S2", "read_file", '{"pa')],  # ...and half of another
        ],
        finish_reason="tool_calls",
        stall_after=4,  # role, content, call 1, call 2 fragment; then silence
    )
    rig.server.push(reply, answer("Second try."))
    rig.start(read_timeout=0.4)
    t = rig.prompt("write half.txt")
    rig.wait_idle(t)
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error"]
    assert rig.system(t, "error"), rig.out.since(t)
    assert not rig.out.of(M.TOOL_CALL, t) and not rig.out.of(M.CONFIRM, t) and not rig.results(t)
    assert not (rig.root / "half.txt").exists()
    assert_no_dangling_calls(rig.agent)
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "Writing now."}

    t2 = rig.prompt("again")
    rig.wait_idle(t2)
    assert rig.messages_of(2) == [
        {"role": "user", "content": "write half.txt"},
        {"role": "assistant", "content": "Writing now."},
        {"role": "user", "content": "again"},
    ]


def test_a_connection_closed_after_partial_tool_call_fragments(rig):
    """Connection: close framing, the body ends after the fragments of one complete call and
    half of a second one: no finish_reason, no [DONE]. That is a cut-off answer, not a
    finished one: an error entry, nothing executed, nothing dangling."""
    (rig.root / "a.txt").write_text("secret\n")
    chunks = sse_reply(
        [],
        tool_calls=[
            [frag(0, "call_K1", "read_file", json.dumps({"path": "a.txt"}))],
            [frag(1, "call_K2", "write_file", '{"path": "b.txt", "con')],
        ],
        finish_reason=None,
        done=False,
        chunked=False,
    )
    rig.server.push(chunks)
    rig.start()
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 1, "a cut-off stream must not lead to a further request"
    assert not rig.results(t), f"no tool may run from a cut-off stream: {rig.results(t)}"
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error"]
    assert rig.system(t, "error")
    assert_no_dangling_calls(rig.agent)


def test_more_than_64_calls_is_an_error_and_nothing_runs(rig):
    chunks = [
        [frag(i, f"call_B{i}", "write_file", json.dumps({"path": f"f{i}.txt", "content": "x"}))] for i in range(65)
    ]
    rig.server.push(sse_reply([], tool_calls=chunks, finish_reason="tool_calls"))
    rig.start()
    t = rig.prompt("make 65 files")
    rig.wait_idle(t)
    errors = rig.system(t, "error")
    assert any("more than 64 tool calls" in e for e in errors), errors
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error"]
    assert not rig.out.of(M.TOOL_CALL, t) and not rig.out.of(M.CONFIRM, t) and not rig.results(t)
    assert list(rig.root.iterdir()) == []
    assert len(rig.bodies()) == 1
    assert_no_dangling_calls(rig.agent)


def test_the_4_mib_cap_cuts_a_call_whose_arguments_it_cut_and_runs_nothing(rig):
    """Issue 16 / ADR 0007: one streamed answer is capped at 4 MiB (text and tool-call
    arguments together). A first call complete and a second whose arguments cross the
    cap: the stream is cut with an error entry, and neither call is run, repaired or
    sent back (a cut call is not the model's whole plan, so its complete sibling is not
    run either); the text before is kept."""
    big = "y" * (64 << 10)
    whole = json.dumps({"path": "whole.txt", "content": "fine"})
    chunks = [[frag(0, "call_W", "write_file", whole)],
              [frag(1, "call_C", "write_file", '{"path": "cut.txt", "content": "')]]
    chunks += [[frag(1, args=big)] for _ in range(70)]  # 4.4 MiB of arguments
    chunks += [[frag(1, args='"}')]]
    rig.server.push(sse_reply(["About to write."], tool_calls=chunks, finish_reason="tool_calls"),
                    answer("After the cap."))
    rig.start()
    t = rig.prompt("write a lot")
    rig.wait_idle(t, timeout=30)
    errors = rig.system(t, "error")
    assert any("exceeded 4 MiB" in e for e in errors), errors
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error"]
    assert not rig.out.of(M.TOOL_CALL, t) and not rig.out.of(M.CONFIRM, t) and not rig.results(t)
    assert list(rig.root.iterdir()) == []
    assert_no_dangling_calls(rig.agent)
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "About to write."}
    t2 = rig.prompt("again")
    rig.wait_idle(t2)
    sent = rig.messages_of(2)
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in sent), sent
    assert len(json.dumps(sent)) < 10_000  # nothing of the cut arguments went back


def test_the_4_mib_cap_cuts_a_text_answer_with_what_came_kept(rig):
    piece = "z" * (64 << 10)
    rig.server.push(sse_reply([piece] * 70))  # 4.4 MiB of text
    rig.start()
    t = rig.prompt("say a lot")
    rig.wait_idle(t, timeout=30)
    assert any("exceeded 4 MiB" in e for e in rig.system(t, "error"))
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error"]
    shown = "".join(m[1] for m in rig.out.of(M.TOKEN, t))
    assert len(shown) == 4 << 20 and set(shown) == {"z"}  # all the cap lets through, no more
    assert rig.agent.messages[-1] == {"role": "assistant", "content": shown}


def test_exactly_64_calls_are_accepted_and_all_answered_in_order(rig):
    for i in range(64):  # a directory each: the same call three times in a row would ask (the repeat guard)
        (rig.root / f"d{i}").mkdir()
    chunks = [[frag(i, f"call_L{i}", "list_directory", json.dumps({"path": f"d{i}"}))] for i in range(64)]
    rig.server.push(sse_reply([], tool_calls=chunks, finish_reason="tool_calls"), answer("Listed."))
    rig.start()
    t = rig.prompt("list 64 times")
    rig.wait_idle(t)
    assert len(rig.results(t)) == 64
    msgs = rig.messages_of(2)
    assert [m["tool_call_id"] for m in tool_messages(msgs)] == [f"call_L{i}" for i in range(64)]


# ---- calls refused before anything happens --------------------------------------------------


def test_invalid_arguments_json_is_bad_arguments_without_a_confirmation(rig):
    rig.server.push(
        calls_reply(("call_J1", "write_file", '{"path": "j.txt", "content": "unterminated}')),
        answer("Sorry."),
    )
    rig.start()
    t = rig.prompt("write j")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    assert not (rig.root / "j.txt").exists()
    (row,) = rig.results(t)
    assert row["status"] == "error"
    msgs = rig.messages_of(2)
    # the canonical message re-encodes unparseable arguments as "{}"
    assert msgs[1]["tool_calls"] == [{"id": "call_J1", "type": "function",
                                      "function": {"name": "write_file", "arguments": "{}"}}]
    res = result_of(msgs, "call_J1")
    assert res["ok"] is False and res["code"] == "bad_arguments" and "not valid JSON" in res["error"]


def test_schema_violation_is_bad_arguments_naming_the_problem(rig):
    rig.server.push(
        calls_reply(("call_J2", "read_file", {"path": "x", "limit": 0, "colour": "red"})),
        answer("Fixed."),
    )
    rig.start()
    t = rig.prompt("read")
    rig.wait_idle(t)
    res = result_of(rig.messages_of(2), "call_J2")
    assert res["code"] == "bad_arguments"
    assert "limit" in res["error"] and "colour" in res["error"]


def test_unknown_tool_is_an_error_result(rig):
    rig.server.push(calls_reply(("call_U1", "delete_everything", {"path": "."})), answer("Never mind."))
    rig.start()
    t = rig.prompt("clean up")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    res = result_of(rig.messages_of(2), "call_U1")
    assert res["ok"] is False and res["code"] == "unknown_tool" and "delete_everything" in res["error"]
    assert list(rig.root.iterdir()) == []


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/dashfloat-escape-{}.txt", "sub/../../escape.txt"])
def test_a_path_escape_in_write_file_is_refused_without_a_confirmation(rig, path):
    path = path.format(os.getpid())
    rig.server.push(calls_reply(("call_P1", "write_file", {"path": path, "content": "out"})), answer("OK."))
    rig.start()
    t = rig.prompt("write outside")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    (row,) = rig.results(t)
    assert row["status"] == "error"
    res = result_of(rig.messages_of(2), "call_P1")
    assert res["ok"] is False and res["code"] == "path_escape"
    assert not (rig.root.parent / "escape.txt").exists()
    assert not os.path.exists(path)


@pytest.mark.parametrize(
    ("tool", "args", "code", "words"),
    [
        ("write_file", {"path": "~/.bashrc", "content": "x"}, "bad_arguments", "~ is not expanded"),
        ("write_file", {"path": "$HOME/.profile", "content": "x"}, "bad_arguments", "$VARIABLES"),
        ("execute_command", {"command": "ls", "cwd": "~"}, "bad_arguments", "~ is not expanded"),
        ("write_file", {"path": "notes/", "content": "x"}, "bad_arguments", "ends in /"),
        ("write_file", {"path": "a.txt/", "content": "x"}, "not_a_directory", "not a directory: a.txt/"),
        ("edit_file", {"path": "a.txt/", "search_block": "a", "replace_block": "b"}, "not_a_directory",
         "not a directory"),
        ("write_file", {"path": "n" * 256, "content": "x"}, "name_too_long", "255 bytes (NAME_MAX)"),
    ],
)
def test_a_shell_style_path_is_refused_without_a_confirmation(rig, tool, args, code, words):
    """Issue 14 §4: write_file ~/.bashrc used to ask, then create a directory named ~ in the
    project (a trap for a later rm -rf ~); a trailing slash wrote the file without it."""
    (rig.root / "a.txt").write_text("a\n")
    rig.server.push(calls_reply(("call_S1", tool, args)), answer("OK."))
    rig.start()
    t = rig.prompt("do it")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    res = result_of(rig.messages_of(2), "call_S1")
    assert res["ok"] is False and res["code"] == code and words in res["error"], res
    assert sorted(p.name for p in rig.root.iterdir()) == ["a.txt"]
    assert (rig.root / "a.txt").read_text() == "a\n"


# ---- edit_file ------------------------------------------------------------------------------


def test_edit_file_preview_then_apply(rig):
    (rig.root / "app.py").write_text("x = 1\ny = 2\n")
    args = {"path": "app.py", "search_block": "y = 2", "replace_block": "y = 20"}
    rig.server.push(calls_reply(("call_D1", "edit_file", args)), answer("Edited."))
    rig.start()
    t = rig.prompt("edit")
    _, ref, info = rig.confirm(t)
    assert ("del", "-y = 2") in info["lines"] and ("add", "+y = 20") in info["lines"]
    assert (rig.root / "app.py").read_text() == "x = 1\ny = 2\n"
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert (rig.root / "app.py").read_text() == "x = 1\ny = 20\n"
    res = result_of(rig.messages_of(2), "call_D1")
    assert res == {"ok": True, "path": "app.py", "bytes": 13, "line": 2}


def test_edit_file_changed_between_preview_and_approval_writes_nothing(rig):
    target = rig.root / "app.py"
    target.write_text("x = 1\ny = 2\n")
    args = {"path": "app.py", "search_block": "x = 1", "replace_block": "x = 10"}
    rig.server.push(calls_reply(("call_D2", "edit_file", args)), answer("It changed under me."))
    rig.start()
    t = rig.prompt("edit")
    _, ref, info = rig.confirm(t)
    assert ("del", "-x = 1") in info["lines"] and ("add", "+x = 10") in info["lines"]
    target.write_text("x = 1\ny = 3\n")  # someone else edits the file meanwhile
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert target.read_text() == "x = 1\ny = 3\n"  # the other change kept, ours not applied
    (row,) = rig.results(t)
    assert row["status"] == "error"
    res = result_of(rig.messages_of(2), "call_D2")
    assert res["ok"] is False and res["code"] == "changed_since_preview"


# ---- the pairing invariant is checked before every request ---------------------------------


def broken_conversation() -> list[dict]:
    """What a crash, a resume or a bug could leave: call_X1 unanswered, call_X2 answered,
    an orphaned result, a duplicate result."""
    return [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": None, "tool_calls": [canonical("call_X1", "read_file", {"path": "a"}),
                                                             canonical("call_X2", "list_directory", {})]},
        {"role": "tool", "tool_call_id": "call_X2", "content": json.dumps({"ok": True, "entries": []})},
        {"role": "tool", "tool_call_id": "call_X2", "content": json.dumps({"ok": True, "entries": []})},
        {"role": "tool", "tool_call_id": "call_ZZ", "content": json.dumps({"ok": True})},
        {"role": "assistant", "content": "I was interrupted."},
    ]


def test_a_broken_conversation_is_repaired_before_the_request_and_said_so(rig, caplog):
    rig.server.push(answer("Carrying on."))
    rig.start()
    rig.agent.messages = broken_conversation()  # as if resumed after a crash
    t = rig.prompt("go on")
    rig.wait_idle(t)
    msgs = rig.messages_of(1)
    assert_pairing(msgs)
    assert [m["tool_call_id"] for m in tool_messages(msgs)] == ["call_X1", "call_X2"]
    assert result_of(msgs, "call_X1")["code"] == "interrupted"
    assert msgs[-1] == {"role": "user", "content": "go on"}
    assert any("Repaired the conversation before sending it" in w for w in rig.system(t, "warn"))
    assert "conversation repaired before a request: " in caplog.text
    assert rig.agent.messages[: len(msgs)] == msgs  # the repair is kept, not redone each time


def test_the_repair_runs_before_every_request_of_a_turn_not_only_the_first(rig, monkeypatch):
    """A result that goes missing between two episodes of one turn (here a bug drops the
    previous turn's tool message while the call runs) is repaired before the next request."""
    (rig.root / "a.txt").write_text("A\n")
    real = runner.execute

    def corrupting(name, args, root, prepared, **kw):
        msgs = rig.agent.messages
        for i, m in enumerate(msgs):
            if m.get("role") == "tool" and m.get("tool_call_id") == "call_R1":
                del msgs[i]
                break
        return real(name, args, root, prepared, **kw)

    rig.server.push(calls_reply(("call_R1", "read_file", {"path": "a.txt"})), answer("First."),
                    calls_reply(("call_R2", "read_file", {"path": "a.txt"})), answer("Second."))
    rig.start()
    rig.wait_idle(rig.prompt("one"))
    monkeypatch.setattr(runner, "execute", corrupting)
    t = rig.prompt("two")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 4
    msgs = rig.messages_of(4)
    assert_pairing(msgs)
    assert result_of(msgs, "call_R1")["code"] == "interrupted"
    assert result_of(msgs, "call_R2")["content"] == "A\n"


# ---- agent robustness -----------------------------------------------------------------------


@pytest.mark.parametrize("death", [RuntimeError, SystemExit, KeyboardInterrupt])
def test_a_tool_that_raises_is_an_internal_error_and_the_turn_goes_on(rig, monkeypatch, death):
    """Any exception, BaseException included (a library that calls sys.exit): an error
    result for that call, the others run, the turn goes on."""
    (rig.root / "a.txt").write_text("A\n")
    real = runner.execute

    def flaky(name, args, root, prepared, **kw):
        if name == "read_file" and args.get("path") == "boom.txt":
            raise death("disk on fire")
        return real(name, args, root, prepared, **kw)

    monkeypatch.setattr(runner, "execute", flaky)
    rig.server.push(
        calls_reply(("call_T1", "read_file", {"path": "boom.txt"}), ("call_T2", "read_file", {"path": "a.txt"})),
        answer("One worked."),
    )
    rig.start()
    t = rig.prompt("read both")
    rig.wait_idle(t)
    rows = rig.results(t)
    assert [(r["id"], r["status"]) for r in rows] == [("call_T1", "error"), ("call_T2", "ok")]
    msgs = rig.messages_of(2)
    bad = result_of(msgs, "call_T1")
    assert bad["ok"] is False and bad["code"] == "internal" and "disk on fire" in bad["error"]
    assert result_of(msgs, "call_T2")["content"] == "A\n"
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "One worked."}
    assert not rig.out.of(M.AGENT_DOWN)


def test_only_the_final_episodes_usage_reaches_the_ui(rig):
    u1 = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    u2 = {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
    u3 = {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}
    u4 = {"prompt_tokens": 70, "completion_tokens": 1, "total_tokens": 71}
    rig.server.push(
        calls_reply(("call_G1", "list_directory", {}), usage=u1),
        calls_reply(("call_G2", "list_directory", {}), usage=u2),
        answer("Three episodes.", usage=u3),
        answer("Second turn.", usage=u4),
    )
    rig.start()
    t = rig.prompt("look around")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 3
    assert rig.out.of(M.USAGE, t) == [(M.USAGE, u3)]
    # the usage arrives before the turn's idle
    posted = rig.out.since(t)
    assert posted.index((M.USAGE, u3)) < posted.index((M.PHASE, "idle"))
    t2 = rig.prompt("again")
    rig.wait_idle(t2)
    assert rig.out.of(M.USAGE, t2) == [(M.USAGE, u4)]


def test_an_empty_final_episode_says_model_returned_nothing(rig):
    rig.server.push(calls_reply(("call_N1", "list_directory", {})), answer(""), answer("Now something."))
    rig.start()
    t = rig.prompt("list")
    rig.wait_idle(t)
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["done", "empty"]
    assert "[model returned nothing]" in rig.system(t)
    assert len(rig.bodies()) == 2
    # the conversation stays valid: the next prompt follows the tool result
    t2 = rig.prompt("hello?")
    rig.wait_idle(t2)
    assert [m["role"] for m in rig.messages_of(3)] == ["user", "assistant", "tool", "user"]


def test_a_stale_confirm_decision_is_ignored(rig):
    rig.server.push(
        calls_reply(
            ("call_Q1", "write_file", {"path": "q1.txt", "content": "1"}),
            ("call_Q2", "write_file", {"path": "q2.txt", "content": "2"}),
        ),
        answer("Done."),
    )
    rig.start()
    t = rig.prompt("two writes")
    _, ref1, info1 = rig.confirm(t)
    assert info1["id"] == "call_Q1"
    # wrong refs first (FIFO inbox): if either counted, q1 would be written
    rig.decide(ref1 + 7, "approved")
    rig.decide(ref1 - 1, "approved")
    rig.decide(ref1, "rejected")
    _, ref2, info2 = rig.confirm(t, nth=2)
    assert info2["id"] == "call_Q2" and ref2 != ref1
    # a repeat of the first decision's ref must not approve the second call
    rig.decide(ref1, "approved")
    rig.decide(ref2, "rejected")
    rig.wait_idle(t)
    assert not (rig.root / "q1.txt").exists() and not (rig.root / "q2.txt").exists()
    assert [r["status"] for r in rig.results(t)] == ["rejected", "rejected"]
    msgs = rig.messages_of(2)
    assert [json.loads(m["content"]) for m in tool_messages(msgs)] == [{"ok": False, "rejected": True}] * 2
    # a decision with no confirmation pending at all is ignored too
    rig.decide(ref2, "approved")
    rig.server.push(answer("fine"))
    t2 = rig.prompt("ok")
    rig.wait_idle(t2)
    assert not (rig.root / "q2.txt").exists()


def test_a_repeated_key_while_the_next_call_is_checked_decides_nothing_for_it(rig):
    """A key sent twice (the second before the agent has taken the first): the repeat comes
    while the next call is still being checked, the question answered but no other asked
    yet. It must not be taken for a decision on that next call, which was never shown."""
    rig.server.push(
        calls_reply(("call_R1", "write_file", {"path": "r1.txt", "content": "1"}),
                    ("call_R2", "write_file", {"path": "r2.txt", "content": "2"})),
        answer("Done."),
    )
    rig.start()
    t = rig.prompt("two writes")
    _, ref1, info1 = rig.confirm(t)
    assert info1["id"] == "call_R1"
    rig.decide(ref1, "rejected")
    rig.decide(ref1, "approved")  # queued before the second call's check can answer
    _, ref2, info2 = rig.confirm(t, nth=2)  # the second call is asked about all the same
    assert info2["id"] == "call_R2"
    assert [m[1:] for m in rig.out.of(M.DECIDED, t)] == [("call_R1", "rejected by you")]
    rig.decide(ref2, "rejected")
    rig.wait_idle(t)
    assert not (rig.root / "r1.txt").exists() and not (rig.root / "r2.txt").exists()
    assert [r["status"] for r in rig.results(t)] == ["rejected", "rejected"]


def test_esc_on_a_later_confirmation_keeps_earlier_results_and_rejects_the_rest(rig):
    (rig.root / "a.txt").write_text("A\n")
    rig.server.push(
        calls_reply(
            ("call_F1", "read_file", {"path": "a.txt"}),
            ("call_F2", "edit_file", {"path": "a.txt", "search_block": "A", "replace_block": "B"}),
            ("call_F3", "execute_command", {"command": "touch ran.txt"}),
        ),
        answer("OK."),
    )
    rig.start()
    t = rig.prompt("read, edit, run")
    _, ref, info = rig.confirm(t)
    assert info["id"] == "call_F2"
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    assert [(r["id"], r["status"]) for r in rig.results(t)] == [
        ("call_F1", "ok"), ("call_F2", "rejected"), ("call_F3", "rejected")]
    assert (rig.root / "a.txt").read_text() == "A\n" and not (rig.root / "ran.txt").exists()
    assert "Turn stopped. Say what to do instead." in rig.system(t)
    t2 = rig.prompt("stop there")
    rig.wait_idle(t2)
    msgs = rig.messages_of(2)
    assert [m["tool_call_id"] for m in tool_messages(msgs)] == ["call_F1", "call_F2", "call_F3"]
    assert result_of(msgs, "call_F1")["content"] == "A\n"
    assert result_of(msgs, "call_F3") == {"ok": False, "rejected": True}


def test_a_turn_stopped_by_a_signal_invites_nobody_and_the_next_one_does(rig):
    """A front end that stops a turn for a reason of its own (SIGTERM: the process ends) is
    told so, not "Say what to do instead."; the reason belongs to that turn only."""
    edit = ("call_S1", "edit_file", {"path": "a.txt", "search_block": "A", "replace_block": "B"})
    (rig.root / "a.txt").write_text("A\n")
    rig.server.push(calls_reply(edit), calls_reply(edit))
    rig.start()
    t = rig.prompt("edit")
    rig.confirm(t)
    rig.agent.send((M.CANCEL, "SIGTERM"))
    rig.wait_idle(t)
    assert [m[1:] for m in rig.out.of(M.DECIDED, t)] == [("call_S1", "rejected: the turn was stopped (SIGTERM)")]
    assert "Turn stopped (SIGTERM)." in rig.system(t)
    assert not any("Say what to do" in s for s in rig.system(t))
    t2 = rig.prompt("edit again")
    rig.confirm(t2)
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t2)
    assert "Turn stopped. Say what to do instead." in rig.system(t2)
    assert (rig.root / "a.txt").read_text() == "A\n"


def test_provider_variants_ids_are_echoed_and_missing_ones_synthesised(rig):
    """A whole call in one chunk without id or type, a second call without index (a
    Mistral-style id only) and `arguments: ""`, and finish_reason "stop" after tool calls."""
    (rig.root / "a.txt").write_text("A\n")
    chunks = [
        [{"index": 0, "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}],
        [{"id": "mistral_2", "function": {"name": "list_directory", "arguments": ""}}],
    ]
    rig.server.push(sse_reply([], tool_calls=chunks, finish_reason="stop"), answer("Seen."))
    rig.start()
    t = rig.prompt("look")
    rig.wait_idle(t)
    msgs = rig.messages_of(2)
    ids = [c["id"] for c in msgs[1]["tool_calls"]]
    assert ids[1] == "mistral_2" and ids[0] and ids[0] != "mistral_2"
    assert msgs[1]["tool_calls"][1]["function"] == {"name": "list_directory", "arguments": "{}"}
    assert [m["tool_call_id"] for m in tool_messages(msgs)] == ids
    assert result_of(msgs, ids[0])["content"] == "A\n"
    assert [e["name"] for e in result_of(msgs, "mistral_2")["entries"]] == ["a.txt"]


def test_an_execute_command_cwd_outside_the_root_is_refused_without_a_confirmation(rig):
    rig.server.push(calls_reply(("call_P2", "execute_command", {"command": "touch x", "cwd": ".."})), answer("OK."))
    rig.start()
    t = rig.prompt("run outside")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    assert result_of(rig.messages_of(2), "call_P2")["code"] == "path_escape"
    assert not (rig.root.parent / "x").exists()


def test_a_final_episode_without_usage_does_not_show_an_earlier_episodes_usage(rig):
    """Only the final episode's usage reaches the UI: when the final episode reports none,
    the first episode's (smaller) numbers must not be shown as the turn's."""
    u1 = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    rig.server.push(calls_reply(("call_V1", "list_directory", {}), usage=u1), answer("No usage here."))
    rig.start()
    t = rig.prompt("look")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 2
    assert (M.USAGE, u1) not in rig.out.since(t)


def test_cancel_while_a_call_is_still_streaming_runs_nothing(rig):
    never = threading.Event()
    reply = sse_reply(
        ["Planning."],
        tool_calls=[[frag(0, "call_Z1", "write_file", json.dumps({"path": "z.txt", "content": "z"}))]],
        finish_reason="tool_calls",
        waits={3: never},  # role, content, the call; then the finish chunk never comes
    )
    rig.server.push(reply, answer("OK."))
    rig.start()
    t = rig.prompt("write z")
    rig.out.wait_kind(M.TOKEN, "Planning.", since=t)
    rig.server.wait_requests(1)
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["cancelled"]
    assert not rig.out.of(M.TOOL_CALL, t) and not rig.out.of(M.CONFIRM, t) and not rig.results(t)
    assert_no_dangling_calls(rig.agent)
    t2 = rig.prompt("never mind")
    rig.wait_idle(t2)
    assert [m["role"] for m in rig.messages_of(2)] == ["user", "assistant", "user"]
    assert not (rig.root / "z.txt").exists()


def test_the_outcome_row_says_how_many_leftover_processes_were_stopped():
    base = {"output": "", "truncated": False, "bytes": 0}
    row = runner.result_row("c1", "execute_command", {"ok": True, "exit_code": 0, **base, "stopped_processes": 1})
    assert row["text"] == "ok: exit 0, 1 leftover process stopped"
    failed = {"ok": False, "error": "exited with status 3", "code": "exit_status", "exit_code": 3, **base,
              "stopped_processes": 4}
    assert runner.result_row("c1", "execute_command", failed)["text"] == \
        "error: exited with status 3, 4 leftover processes stopped"
    assert runner.result_row("c1", "execute_command", {"ok": True, "exit_code": 0, **base})["text"] == "ok: exit 0"


# ---- the runner's edges (found by `make mutation`) ----------------------------------------


@pytest.mark.parametrize(("name", "result", "text", "excerpt"), [
    ("read_file", {"ok": True, "content": "a\nb\n", "lines": 2, "truncated": True}, "ok: 2 lines, truncated", ["a", "b"]),
    ("read_file", {"ok": True, "content": "a\n", "lines": None, "truncated": False}, "ok", ["a"]),
    ("read_file", {"ok": False, "error": "no such file or directory: x", "code": "not_found"},
     "error: no such file or directory: x", []),
    ("list_directory", {"ok": True, "entries": [{"name": "a", "type": "file"}, {"name": "d", "type": "dir"}],
                        "total": 7, "truncated": True}, "ok: 7 entries, truncated", ["a", "d/"]),
    ("list_directory", {"ok": True, "entries": [{"name": "a", "type": "file"}]}, "ok: 1 entries", ["a"]),
    ("write_file", {"ok": True, "bytes": 12, "created": True}, "ok: created 12 B", []),
    ("write_file", {"ok": True, "bytes": 12, "created": False}, "ok: wrote 12 B", []),
    ("write_file", {"ok": True}, "ok", []),
    ("edit_file", {"ok": True, "bytes": 3, "line": 1}, "ok: edited", []),
    ("execute_command", {"ok": True, "exit_code": 0, "output": "hi\n", "truncated": True, "bytes": 3,
                         "stopped_processes": 0}, "ok: exit 0, output truncated", ["hi"]),
    ("execute_command", {"ok": False, "cancelled": True, "error": "stopped by Esc", "output": None},
     "cancelled: stopped by Esc", []),
    ("search_workspace", {"ok": True, "matches": "a.py:1: x", "total_matches": 1, "total_files": 1},
     "ok: 1 matching line in 1 file", ["a.py:1: x"]),
    ("search_workspace", {"ok": True, "matches": "a.py:1: x", "total_matches": 1, "total_files": 1,
                          "complete": False}, "ok: 1 matching line in 1 file, incomplete", ["a.py:1: x"]),
    ("some_tool", {"ok": True}, "ok", []),
])
def test_the_outcome_row_of_every_tool(name, result, text, excerpt):
    row = runner.result_row("c1", name, result)
    assert (row["text"], row["excerpt"]) == (text, excerpt)
    # the machine-readable why (headless events): a failure's code, and only a failure has one
    assert row.get("code") == result.get("code")


def test_prepare_refuses_what_cannot_be_previewed(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    assert runner.prepare("write_file", {"path": "d", "content": "x"}, str(tmp_path))["code"] == "not_a_file"
    assert runner.prepare("execute_command", {"command": "ls", "cwd": "nope"}, str(tmp_path))["code"] == "not_found"
    assert runner.prepare("execute_command", {"command": "ls", "cwd": "f"}, str(tmp_path))["code"] == "not_a_directory"
    assert runner.prepare("frobnicate", {}, str(tmp_path)) == {
        "ok": False, "error": "unknown tool 'frobnicate'", "code": "unknown_tool"}


def test_an_approved_preview_cannot_be_altered(tmp_path):
    prepared = runner.prepare("write_file", {"path": "a", "content": "x"}, str(tmp_path))
    with pytest.raises(AttributeError):
        prepared.plan = None


def test_execute_refuses_a_mutation_without_its_preview_and_an_unknown_tool(tmp_path):
    assert runner.execute("write_file", {"path": "a", "content": "x"}, str(tmp_path), None) == {
        "ok": False, "error": "write_file ran without an approved preview", "code": "internal"}
    assert not (tmp_path / "a").exists()
    prepared = runner.prepare("write_file", {"path": "a", "content": "x"}, str(tmp_path))
    assert runner.execute("frobnicate", {}, str(tmp_path), prepared)["code"] == "unknown_tool"


def _until(predicate, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_tools_load_when_a_person_starts_typing_not_at_rest(rig):
    """Memory at rest (issue 16): the runner and the pipeline are not loaded by start-up;
    PREPARE (the front end's first key) loads them, before any prompt."""
    agent = rig.start()
    assert agent._pipeline_mod is None and agent._runner_mod is None
    agent.send((M.PREPARE,))
    assert _until(lambda: agent._pipeline_mod is not None and agent._runner_mod is not None)


def test_without_prepare_the_tools_load_once_the_first_request_is_on_its_way(rig):
    rig.server.push(answer("Hi."))
    agent = rig.start()
    rig.wait_idle(rig.prompt("hello"))
    assert agent._pipeline_mod is not None
    assert [r["path"] for r in rig.server.requests if r["method"] == "POST"] == ["/v1/chat/completions"]


def test_a_repeated_key_never_answers_a_read_whose_question_waits_for_its_group(rig):
    """Reads are checked together. One that asks (.env, by a rule) can be checked while the other is
    still being checked, so its question is not shown yet: a repeated key of the question
    before must not answer it."""
    (rig.root / ".env").write_text("KEY=1\n")
    (rig.root / "a.txt").write_text("A\n")
    rig.server.push(
        calls_reply(("call_W", "write_file", {"path": "w.txt", "content": "w"}),
                    ("call_E", "read_file", {"path": ".env"}),
                    ("call_A", "read_file", {"path": "a.txt"})),
        answer("Done."),
    )
    from dashfloat.tools.permissions import Policy
    from dashfloat.tools.rules import parse_rule

    agent = rig.start(policy=Policy([("user config", [parse_rule("read_file(.env)", "ask", "user config")])]))
    hold = threading.Event()
    gate = agent._gate

    def held(call, cancel):  # call_A's check waits until the repeated key is in
        out = gate(call, cancel)
        if call.id == "call_A":
            hold.wait(WAIT)
        return out

    agent._gate = held
    t = rig.prompt("write, then read two")
    _, ref1, info1 = rig.confirm(t)
    assert info1["id"] == "call_W"
    rig.decide(ref1, "rejected")
    call_e = next(c for c in agent._calls if c.id == "call_E")
    deadline = time.monotonic() + WAIT
    while call_e.gate is None and time.monotonic() < deadline:  # checked: it asks, not shown yet
        time.sleep(0.01)
    assert call_e.gate is not None and call_e.gate[0] == "ask"
    rig.decide(ref1, "approved")  # the repeat, taken before call_A's check comes back
    hold.set()
    _, ref2, info2 = rig.confirm(t, nth=2)
    assert info2["id"] == "call_E"
    rig.decide(ref2, "rejected")
    rig.wait_idle(t)
    assert [(r["id"], r["status"]) for r in rig.results(t)] == [
        ("call_W", "rejected"), ("call_E", "rejected"), ("call_A", "ok")]
