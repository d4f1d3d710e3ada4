"""The agent thread, driven through its inbox with a scripted stream function (no HTTP)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time

import pytest

from dashfloat import messages as M
from dashfloat.agent import Agent
from dashfloat.llm.client import CancelToken, Endpoint, StreamResult
from dashfloat.llm.errors import ChatError
from tests.test_agent_tools import crash_on, wait_until

ENDPOINT = Endpoint(base_url="http://127.0.0.1:9/v1")


class Outbox:
    """Collects what the agent posts; wait() blocks until a matching message arrives."""

    def __init__(self):
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.seen: list[tuple] = []

    def post(self, msg):
        self.q.put(msg)

    def wait(self, pred, timeout=5.0):
        while True:
            for m in self.seen:
                if pred(m):
                    return m
            try:
                self.seen.append(self.q.get(timeout=timeout))
            except queue.Empty:
                raise AssertionError(f"no matching message; seen {self.seen}") from None

    def wait_idle_after_end(self, timeout=5.0):
        """Until a ("phase", "idle") arrives after an assistant_end."""
        while True:
            ends = [i for i, m in enumerate(self.seen) if m[0] == M.ASSISTANT_END]
            if ends and (M.PHASE, "idle") in self.seen[ends[-1] :]:
                return
            try:
                self.seen.append(self.q.get(timeout=timeout))
            except queue.Empty:
                raise AssertionError(f"turn never went idle; seen {self.seen}") from None

    def wait_kind(self, kind, *args):
        return self.wait(lambda m: m[0] == kind and m[1 : 1 + len(args)] == args)

    def kinds(self):
        return [m[0] for m in self.seen]


def result(content="", **kw):
    base = dict(content=content, reasoning="", tool_calls=[], finish_reason="stop", usage=None, cancelled=False)
    base.update(kw)
    return StreamResult(**base)


def start(stream_fn, model="m", list_models_fn=None, **extra):
    out = Outbox()
    kwargs = {"stream_fn": stream_fn, **extra}
    if list_models_fn:
        kwargs["list_models_fn"] = list_models_fn
    agent = Agent(ENDPOINT, model, out.post, **kwargs)
    agent.start()
    return agent, out


def test_a_turn_streams_tokens_then_ends_idle_with_usage():
    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        assert messages[0]["role"] == "system"  # the built-in prompt, then the conversation
        assert messages[1:] == [{"role": "user", "content": "hi"}]
        on_event(("reasoning", "hmm"))
        on_event(("content", "Hel"))
        on_event(("content", "lo"))
        return result("Hello", usage={"total_tokens": 12})

    agent, out = start(stream)
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.ASSISTANT_END, "done")
    out.wait_idle_after_end()
    tokens = [m[1] for m in out.seen if m[0] == M.TOKEN]
    assert tokens == ["Hel", "lo"]
    assert (M.REASONING, "hmm") in out.seen
    # streaming is said once, with the first piece (here the reasoning), not with every piece
    assert [m[1] for m in out.seen if m[0] == M.PHASE][-3:] == ["waiting", "streaming", "idle"]
    assert out.seen.index((M.PHASE, "streaming")) == out.seen.index((M.REASONING, "hmm")) - 1
    assert (M.USAGE, {"total_tokens": 12}) in out.seen
    assert out.kinds().index(M.USAGE) < len(out.kinds()) - 1  # usage before the phase change
    assert agent.messages[-1] == {"role": "assistant", "content": "Hello"}
    agent.send((M.QUIT,))
    agent.join(2)
    assert not agent.alive


def test_cancel_ends_the_turn_at_once_and_drops_late_events():
    release = threading.Event()
    got_cancel = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel: CancelToken, **kw):
        on_event(("content", "part"))
        while not cancel.cancelled:
            release.wait(0.01)
        got_cancel.set()
        on_event(("content", " LATE"))  # arrives after the cancel: must not be shown
        return result("part LATE", cancelled=True)

    agent, out = start(stream)
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TOKEN, "part")
    agent.send((M.CANCEL,))
    out.wait_kind(M.ASSISTANT_END, "cancelled")
    assert got_cancel.wait(2)
    # a following turn works and the late token never showed up
    agent._stream_fn = lambda *a, **k: result("next")
    agent.send((M.PROMPT, "again"))
    out.wait(lambda m: m == (M.ASSISTANT_END, "done"))
    assert (M.TOKEN, " LATE") not in out.seen
    assert {"role": "assistant", "content": "part"} in agent.messages
    agent.send((M.QUIT,))


def test_a_failure_is_a_system_entry_and_keeps_the_partial_answer():
    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("content", "half"))
        raise ChatError("stream_error", "the provider reported an error: overloaded", "try again later",
                        partial=True)

    agent, out = start(stream)
    agent.send((M.PROMPT, "x"))
    out.wait_kind(M.ASSISTANT_END, "error")
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert "overloaded" in err[2] and "Try again later" in err[2] and "incomplete" in err[2]
    out.wait_idle_after_end()
    assert agent.messages[-1] == {"role": "assistant", "content": "half"}


def test_a_crashing_streamer_is_an_error_entry_not_a_hang():
    def stream(*a, **k):
        raise RuntimeError("bug")

    agent, out = start(stream)
    agent.send((M.PROMPT, "x"))
    out.wait_kind(M.ASSISTANT_END, "error")
    assert "the stream crashed" in out.wait(lambda m: m[0] == M.SYSTEM)[2]


def test_an_empty_answer_says_so():
    agent, out = start(lambda *a, **k: result(""))
    agent.send((M.PROMPT, "x"))
    out.wait_kind(M.ASSISTANT_END, "empty")
    assert out.wait(lambda m: m[0] == M.SYSTEM)[2] == "[model returned nothing]"


@pytest.mark.parametrize(
    "reason, needle",
    [("content_filter", "content filter blocked"), ("length", "output token limit")],
)
def test_an_empty_answer_names_the_finish_reason_that_explains_it(reason, needle):
    agent, out = start(lambda *a, **k: result("", finish_reason=reason))
    agent.send((M.PROMPT, "x"))
    out.wait_kind(M.ASSISTANT_END, "empty")
    line = out.wait(lambda m: m[0] == M.SYSTEM)[2]
    assert needle in line and reason in line


@pytest.mark.parametrize(
    "reason, needle",
    [("content_filter", "content filter cut the answer short"), ("length", "cut short")],
)
def test_an_answer_cut_by_the_provider_says_so(reason, needle):
    agent, out = start(lambda *a, **k: result("Half an", finish_reason=reason))
    agent.send((M.PROMPT, "x"))
    out.wait_kind(M.ASSISTANT_END, "done")
    assert needle in out.wait(lambda m: m[0] == M.SYSTEM)[2]
    out.wait_idle_after_end()
    assert not [m for m in out.seen if m[0] == M.SYSTEM and "returned nothing" in m[2]]


def test_a_prompt_during_a_turn_is_refused_politely():
    gate = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        gate.wait(5)
        return result("ok")

    agent, out = start(stream)
    agent.send((M.PROMPT, "one"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.PROMPT, "two"))
    assert "still running" in out.wait(lambda m: m[0] == M.SYSTEM)[2]
    gate.set()
    out.wait_kind(M.ASSISTANT_END, "done")
    assert [m["content"] for m in agent.messages if m["role"] == "user"] == ["one"]


def test_the_only_model_is_used():
    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=lambda ep: ["solo"])
    out.wait_kind(M.MODEL, "solo")
    assert agent.model == "solo"


def test_several_models_are_listed_with_how_to_choose_then_model_command():
    seen_models = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        seen_models.append(model)
        return result("ok")

    agent, out = start(stream, model=None, list_models_fn=lambda ep: ["a", "b", "c"])
    warn = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "warn")
    assert "3 models: a, b, c" in warn[2] and "/model NAME" in warn[2] and "--model" in warn[2]
    agent.send((M.PROMPT, "/model b"))
    out.wait_kind(M.MODEL, "b")
    agent.send((M.PROMPT, "hello"))
    out.wait_kind(M.ASSISTANT_END, "done")
    assert seen_models == ["b"]


def test_unreachable_endpoint_at_discovery_is_an_error_entry():
    def fail(ep):
        raise ChatError("refused", "no server at http://localhost:11434/v1", "start Ollama or use --base-url")

    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=fail)
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert "no server" in err[2] and "--base-url" in err[2]
    # a prompt now retries discovery and ends the turn cleanly when it fails again
    agent.send((M.PROMPT, "hi"))
    out.wait(lambda m: m[0] == M.SYSTEM and out.seen.count(m) == 2)
    out.wait(lambda m: m == (M.PHASE, "idle") and out.seen[-1] == m and len(out.seen) > 4)
    assert not agent._busy


def test_tool_calls_without_tools_are_reported_not_dangling():
    calls = [{"id": "c1", "name": "read_file", "args": {"path": "x"}, "error": None}]
    agent, out = start(lambda *a, **k: result("", tool_calls=calls), tools_enabled=False)
    agent.send((M.PROMPT, "x"))
    assert "1 tool call(s) (read_file); tools are off" in out.wait(lambda m: m[0] == M.SYSTEM)[2]
    assert all("tool_calls" not in m for m in agent.messages)


def test_the_episode_limit_ends_a_turn_that_keeps_calling_tools(tmp_path):
    requests = []

    def stream(endpoint, model, messages, *, on_event, cancel, tools=None):
        requests.append(messages)
        n = len(requests)
        # a different directory each time: the same call three times in a row would ask (the repeat guard)
        return result("", tool_calls=[{"id": f"c{n}", "name": "list_directory", "args": {"path": f"d{n}"},
                                       "error": None}])

    for n in (1, 2, 3):
        (tmp_path / f"d{n}").mkdir()
    agent, out = start(stream, root=str(tmp_path), max_episodes=3)
    agent.send((M.PROMPT, "loop"))
    warn = out.wait(lambda m: m[0] == M.SYSTEM and "episodes" in m[2])
    assert "Stopped after 3 episodes" in warn[2]
    out.wait_idle_after_end()
    assert len(requests) == 3
    # every call got its result, in order, before the limit ended the turn
    tool_ids = [m["tool_call_id"] for m in agent.messages if m["role"] == "tool"]
    assert tool_ids == ["c1", "c2", "c3"]


def test_the_episode_limit_counts_the_episodes_of_one_turn(tmp_path):
    stream, requests = tools_then_answer(one_call("c1"), "first done", one_call("c2"), "second done")
    agent, out = start(stream, root=str(tmp_path), max_episodes=2)
    assert command(agent, out, "one")[-1] == (M.TURN_END, "done")
    said = command(agent, out, "two")  # two episodes again: the first turn's are not counted
    assert said[-1] == (M.TURN_END, "done") and (M.TOKEN, "second done") in said
    assert len(requests) == 4
    quit_(agent)


def test_esc_during_compact_stops_its_summary_request():
    from dashfloat import context

    asked, stopped = threading.Event(), threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        if messages[0]["content"] != context.SUMMARISER_SYSTEM:
            return result("an answer")
        asked.set()
        wait_until(lambda: cancel.cancelled, "the summary request stopped")
        stopped.set()
        return result("", cancelled=True)

    agent, out = start(stream)
    command(agent, out, "one")
    command(agent, out, "two")
    agent.send((M.PROMPT, "/compact"))
    assert asked.wait(5)
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    assert stopped.wait(5), "the summary request was left running"
    quit_(agent)


# ---- supervision: every way a thread can end reaches the UI ----------------------------


class Custom(BaseException):
    """A BaseException no handler expects."""


DEATHS = [SystemExit(3), KeyboardInterrupt(), GeneratorExit(), Custom("odd"), RuntimeError("bug")]


def ids(exc):
    return type(exc).__name__


def turn_ends_idle(out, since=0):
    """Until a ("phase", "idle") arrives after `since` messages."""
    out.wait(lambda m: m == (M.PHASE, "idle") and len(out.seen) > since and m in out.seen[since:])


@pytest.mark.parametrize("death", DEATHS, ids=ids)
def test_a_streamer_killed_by_any_exception_fails_the_turn_and_the_next_prompt_works(death):
    calls = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        calls.append(messages)
        if len(calls) == 1:
            on_event(("content", "half an ans"))
            raise death
        return result("second answer")

    agent, out = start(stream)
    agent.send((M.PROMPT, "one"))
    out.wait_kind(M.ASSISTANT_END, "error")
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert f"the stream crashed: {type(death).__name__}" in err[2]
    assert "incomplete" in err[2]  # the partial text above is marked as such
    out.wait_idle_after_end()
    assert agent.messages[-1] == {"role": "assistant", "content": "half an ans"}
    mark = len(out.seen)
    agent.send((M.PROMPT, "two"))
    out.wait(lambda m: m == (M.ASSISTANT_END, "done") and m in out.seen[mark:])
    assert agent.alive and not any(m[0] == M.AGENT_DOWN for m in out.seen)
    assert calls[1][-1] == {"role": "user", "content": "two"}


@pytest.mark.parametrize("death", [SystemExit(0), Custom("odd")], ids=ids)
def test_model_discovery_killed_by_any_exception_is_an_error_entry(death):
    def models(ep):
        raise death

    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=models)
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert f"the model list failed: {type(death).__name__}" in err[2]
    agent.send((M.PROMPT, "hi"))  # the pending prompt is not left waiting either
    out.wait(lambda m: m[0] == M.SYSTEM and out.seen.count(m) == 2)
    out.wait(lambda m: m == (M.PHASE, "idle") and out.seen[-1] == m and not agent._busy)


def one_call(call_id="c1", name="list_directory", args=None):
    return [{"id": call_id, "name": name, "args": args if args is not None else {}, "error": None}]


def tools_then_answer(*episodes):
    """A stream function: each element of `episodes` is one episode's tool calls (a list) or
    its final text (a str). Records the messages of every request."""
    requests = []

    def stream(endpoint, model, messages, *, on_event, cancel, tools=None):
        requests.append([dict(m) for m in messages])
        step = episodes[min(len(requests), len(episodes)) - 1]
        if isinstance(step, str):
            on_event(("content", step))
            return result(step)
        return result("", tool_calls=step)

    return stream, requests


@pytest.mark.parametrize("death", DEATHS, ids=ids)
def test_a_tool_killed_by_any_exception_is_an_error_result_and_the_turn_goes_on(tmp_path, monkeypatch, caplog, death):
    from dashfloat.tools import runner

    def execute(*a, **k):
        raise death

    monkeypatch.setattr(runner, "execute", execute)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent.send((M.PROMPT, "list"))
        row = out.wait_kind(M.TOOL_RESULT)[1]
    record = next(r for r in caplog.records if r.getMessage() == "tool list_directory crashed")
    assert record.exc_info is not None and record.exc_info[0] is type(death)
    assert row["status"] == "error" and type(death).__name__ in row["text"]
    out.wait_kind(M.ASSISTANT_END, "done")
    out.wait_idle_after_end()
    tool = requests[1][-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "c1" and type(death).__name__ in tool["content"]


@pytest.mark.parametrize("death", [SystemExit(1), KeyboardInterrupt(), Custom("odd")], ids=ids)
def test_a_gate_killed_by_any_exception_is_an_error_result(tmp_path, monkeypatch, caplog, death):
    from dashfloat.tools import pipeline

    def pre_execute(ctx):
        raise death

    monkeypatch.setattr(pipeline, "pre_execute", pre_execute)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent.send((M.PROMPT, "list"))
        row = out.wait_kind(M.TOOL_RESULT)[1]
    assert row["status"] == "error" and f"checking list_directory failed: {type(death).__name__}" in row["text"]
    out.wait_kind(M.TOKEN, "noted")
    out.wait_idle_after_end()
    assert requests[1][-1]["tool_call_id"] == "c1"
    record = next(r for r in caplog.records if r.getMessage() == "gate for list_directory failed")
    assert record.exc_info is not None and record.exc_info[0] is type(death)


def notes_that_raise(monkeypatch, death: BaseException) -> None:
    """After post_execute, the call's notes raise `death` when the worker reads them: a
    death inside the worker but beyond its own handlers."""
    from dashfloat.tools import pipeline

    class Notes:
        def __iter__(self):
            raise death

    real = pipeline.post_execute

    def post_execute(ctx, res):
        out_ = real(ctx, res)
        ctx.notes = Notes()
        return out_

    monkeypatch.setattr(pipeline, "post_execute", post_execute)


@pytest.mark.parametrize("death", [SystemExit(1), Custom("odd")], ids=ids)
def test_a_worker_thread_that_dies_beyond_its_own_handlers_still_answers(tmp_path, monkeypatch, death):
    """post_execute's handler and the notes loop are inside the worker; a death there (here:
    the call's context, whose notes the worker reads) is still one T_DONE."""
    notes_that_raise(monkeypatch, death)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    row = out.wait_kind(M.TOOL_RESULT)[1]
    assert row["status"] == "error" and type(death).__name__ in row["text"]
    out.wait_kind(M.TOKEN, "noted")
    out.wait_idle_after_end()
    assert requests[1][-1]["tool_call_id"] == "c1"


def test_a_post_execute_that_fails_is_an_error_result_in_the_log_and_its_notes_are_shown(tmp_path, monkeypatch,
                                                                                         caplog):
    from dashfloat.tools import pipeline

    def post_execute(ctx, res):  # a post_tool_use hook said something, then the stage broke
        ctx.notes.append("post hook: looked at it")
        raise ValueError("bad hook output")

    monkeypatch.setattr(pipeline, "post_execute", post_execute)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent.send((M.PROMPT, "list"))
        row = out.wait_kind(M.TOOL_RESULT)[1]
        out.wait(lambda m: m == (M.TOOL_NOTE, "c1", "post hook: looked at it"))
    assert row["status"] == "error" and "post-processing failed: ValueError" in row["text"]
    record = next(r for r in caplog.records if r.getMessage() == "post-execute of list_directory failed")
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    out.wait_idle_after_end()


def test_a_command_whose_worker_dies_before_gits_report_ends_its_turn_without_waiting_for_it(tmp_path, monkeypatch):
    """The worker sends the T_GIT its report thread would have sent: the turn's end, which
    waits for git's report, does not wait for one that will never come (here the clock
    stands still: it would wait for ever)."""
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions, runner

    monkeypatch.setattr(agent_module, "time", FakeClock())
    monkeypatch.setattr(runner, "execute", lambda *a, **k: {"ok": True, "exit_code": 0, "output": ""})
    notes_that_raise(monkeypatch, Custom("odd"))
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent, out = start(stream, root=str(tmp_path), git_report=True, policy=permissions.Policy(mode="unrestricted"))
    agent.send((M.PROMPT, "go"))
    row = out.wait_kind(M.TOOL_RESULT)[1]
    assert row["status"] == "error" and "Custom" in row["text"]
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "done")


def test_spawn_puts_exactly_one_terminal_message_however_the_work_ends():
    from dashfloat.agent import _spawn

    for body, expect in [
        (lambda: ("ok",), ("ok",)),
        (lambda: None, ("failed", "it ended without a result")),
        (lambda: (_ for _ in ()).throw(SystemExit(2)), ("failed", "SystemExit: 2")),
        (lambda: (_ for _ in ()).throw(Custom()), ("failed", "Custom")),
    ]:
        got: queue.SimpleQueue = queue.SimpleQueue()
        _spawn("t", got.put, body, lambda why: ("failed", why))
        assert got.get(timeout=5) == expect
        with pytest.raises(queue.Empty):
            got.get(timeout=0.2)


@pytest.mark.parametrize("death", DEATHS, ids=ids)
def test_a_message_whose_handling_raises_ends_the_turn_and_the_agent_goes_on(death):
    seen = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        seen.append(messages)
        on_event(("content", "an answer"))
        return result("an answer")

    agent, out = start(stream)
    real = agent._on_done
    state = {"n": 0}

    def on_done(res):
        state["n"] += 1
        if state["n"] == 1:
            raise death
        return real(res)

    agent._on_done = on_done
    agent.send((M.PROMPT, "one"))
    out.wait_kind(M.ASSISTANT_END, "error")
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert f"internal error while handling 's_done': {type(death).__name__}" in err[2]
    out.wait_idle_after_end()
    assert agent.messages[-1] == {"role": "assistant", "content": "an answer"}  # the partial answer is kept
    mark = len(out.seen)
    agent.send((M.PROMPT, "two"))
    out.wait(lambda m: m == (M.ASSISTANT_END, "done") and m in out.seen[mark:])
    assert agent.alive and not any(m[0] == M.AGENT_DOWN for m in out.seen)


def test_a_crash_between_tool_calls_answers_every_announced_call(tmp_path):
    # a write after the listing: it is gated only once the listing has its result
    stream, requests = tools_then_answer(one_call("c1") + one_call("c2", "write_file", {"path": "a", "content": "x"}),
                                         "after")
    agent, out = start(stream, root=str(tmp_path))
    real = agent._next_call
    crashed = []

    def next_call():
        calls = agent._calls
        if not crashed and len(calls) == 2 and calls[0].result is not None and calls[1].result is None:
            crashed.append(True)  # the first call has its result, the second has not run
            raise KeyboardInterrupt
        return real()

    agent._next_call = next_call
    agent.send((M.PROMPT, "list twice"))
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error" and "KeyboardInterrupt" in m[2])
    out.wait(lambda m: m == (M.PHASE, "idle") and not agent._busy)
    tools = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["c1", "c2"]
    ran, not_run = (json.loads(m["content"]) for m in tools)
    assert "not run" not in ran.get("error", "")  # the call that ran keeps its own result
    assert not_run["error"].startswith("not run: internal error while handling") and "KeyboardInterrupt" in not_run["error"]
    mark = len(out.seen)
    agent.send((M.PROMPT, "go on"))
    out.wait(lambda m: m == (M.ASSISTANT_END, "done") and m in out.seen[mark:])
    from dashfloat import conversation

    assert conversation.check(requests[-1]) == []


def test_an_agent_that_keeps_failing_posts_agent_down_once_and_stops():
    agent, out = start(lambda *a, **k: result("ok"))
    agent.handle = None  # every message now makes the loop raise
    for _ in range(3):
        agent.send((M.PROMPT, "x"))
    assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1].startswith("TypeError")
    agent.join(2)
    assert not agent.alive
    assert [m[0] for m in out.seen].count(M.AGENT_DOWN) == 1


@pytest.mark.parametrize("death", [SystemExit(0), KeyboardInterrupt(), Custom("odd")], ids=ids)
def test_an_agent_whose_recovery_fails_posts_agent_down(death):
    agent, out = start(lambda *a, **k: result("ok"))

    def boom(*a):
        raise death

    agent.handle = boom
    agent._recover = boom
    agent.send((M.PROMPT, "x"))
    assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1].startswith(type(death).__name__)
    agent.join(2)
    assert not agent.alive


def test_an_agent_that_cannot_start_posts_agent_down():
    agent = Agent(ENDPOINT, "m", Outbox().post, stream_fn=lambda *a, **k: result("ok"))
    out = Outbox()
    agent.post = out.post

    def fail():
        raise SystemExit("no tools")

    agent._load_modules = fail
    agent.start()
    assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1] == "SystemExit: no tools"


@pytest.mark.parametrize("kind", sorted(M.KINDS))
def test_every_message_kind_is_a_plain_string(kind):
    assert isinstance(kind, str) and kind == kind.lower()


def test_an_error_line_ends_its_hint_before_the_partial_note():
    from dashfloat.agent import _error_line

    line = _error_line({"message": "the stream broke", "hint": "check the provider's status", "partial": True})
    assert line == "the stream broke. Check the provider's status. (The text above is incomplete.)"
    assert _error_line({"message": "refused.", "hint": "see the log!"}) == "refused. See the log!"  # no stop added


@pytest.mark.parametrize("usage, total", [
    ({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 15}, 15),  # the provider's total as it is
    ({"prompt_tokens": 10, "completion_tokens": 2}, 12),
    ({"prompt_tokens": 0, "completion_tokens": 5}, 5),
    ({"prompt_tokens": 7}, 7),
    ({"completion_tokens": 7}, None),
    ({"total_tokens": "12"}, None),
    ({"total_tokens": True}, None),
])
def test_the_conversations_size_is_the_providers_total_else_its_input_and_output(usage, total):
    """What the journal's turn_end records as the conversation's tokens (and a resume shows)."""
    from dashfloat.agent import _total_tokens

    assert _total_tokens(usage) == total


def test_json_dumps_is_canonical_and_keeps_non_ascii_text_as_it_is():
    """The repeat guard's key (the same call whatever order the model wrote its arguments in)
    and the estimate of calls the provider did not count."""
    from dashfloat.agent import json_dumps

    assert json_dumps({"path": "café ☕", "a": 1}) == json_dumps({"a": 1, "path": "café ☕"}) == \
        '{"a": 1, "path": "café ☕"}'


def test_a_git_status_that_fails_is_logged_with_its_traceback_and_the_report_still_comes(monkeypatch, caplog):
    from dashfloat.agent import _git_report, _git_snapshot
    from dashfloat.tools import gitchanges

    def snapshot(root):
        raise OSError("git vanished")

    monkeypatch.setattr(gitchanges, "snapshot", snapshot)
    got = queue.SimpleQueue()
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        assert _git_snapshot("/nowhere") is None
        _git_report("/nowhere", object(), got, 3, "c1")
    assert got.get_nowait() == (M.T_GIT, 3, "c1", None, [])  # the turn's end waits for it
    for when in ("before", "after"):
        record = next(r for r in caplog.records if r.getMessage() == f"git status {when} a command failed")
        assert record.exc_info is not None and record.exc_info[0] is OSError


@pytest.mark.parametrize("how", ["done", "cancelled", "error"])
def test_an_ended_answer_keeps_no_copy_of_its_streamed_pieces(how):
    """Memory follows what is kept (issue 16): once an answer ended, its text is the
    conversation's one string, not that and the list of pieces it streamed in."""
    release = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("reasoning", "think"))
        for piece in ("a" * 1000, "b" * 1000):
            on_event(("content", piece))
        if how == "cancelled":
            while not cancel.cancelled:
                release.wait(0.01)
            return result("", cancelled=True)
        if how == "error":
            raise ChatError("stream_error", "overloaded", "try again", partial=True)
        return result("a" * 1000 + "b" * 1000, reasoning="think")

    agent, out = start(stream)
    agent.send((M.PROMPT, "go"))
    out.wait(lambda m: m == (M.TOKEN, "b" * 1000))
    if how == "cancelled":
        agent.send((M.CANCEL,))
    out.wait_kind(M.ASSISTANT_END, how)
    out.wait_idle_after_end()
    assert {"role": "assistant", "content": "a" * 1000 + "b" * 1000} in agent.messages
    assert agent._content == [] and agent._reasoning == []
    agent.send((M.QUIT,))
    agent.join(2)


# ---- the numbers the agent works by (found by make mutation) -----------------------------


def test_a_long_model_list_names_the_first_30_and_counts_the_rest():
    names = [f"model-{i:02}" for i in range(35)]
    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=lambda ep: names)
    warn = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "warn")[2]
    assert f"serves 35 models: {', '.join(names[:30])} and 5 more. Choose one" in warn


def test_a_list_of_exactly_30_models_names_them_all():
    names = [f"model-{i:02}" for i in range(30)]
    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=lambda ep: names)
    warn = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "warn")[2]
    assert f"serves 30 models: {', '.join(names)}. Choose one" in warn


def test_at_most_five_closest_model_names_are_offered():
    from dashfloat.agent import _closest_models

    similar = [f"llama3.{i}" for i in range(8)]
    assert len(_closest_models("llama3", similar)) == 5
    # names that contain it fill up to five as well (no spelling is close enough)
    long = [f"qwen2.5-coder-instruct-{i}-billion-parameters" for i in range(8)]
    assert _closest_models("qwen", long) == long[:5]


def crashing_agent(stream_fn=None, **extra):
    """An agent whose handling of the prompt "crash" (or of a tool note "crash", which a test
    sends in the middle of a turn) raises; a configured window, so no worker's answer (a
    success) comes between two crashes and resets their count."""
    agent, out = start(stream_fn or (lambda *a, **k: result("ok")), context_window=32768, **extra)
    crash_on(agent, M.PROMPT, M.T_NOTE, only=lambda msg: msg[-1] == "crash")
    return agent, out


def test_two_crashes_in_a_row_leave_the_agent_running_and_a_success_starts_the_count_again():
    agent, out = crashing_agent()

    def send(text):
        mark = len(out.seen)
        agent.send((M.PROMPT, text))
        return out.wait(lambda m: m[0] == M.SYSTEM and m in out.seen[mark:])

    for text in ("crash", "crash", "/help", "crash", "crash", "/help"):
        entry = send(text)
        assert ("RuntimeError: boom" in entry[2]) == (text == "crash")
    assert agent.alive and not any(m[0] == M.AGENT_DOWN for m in out.seen)
    agent.send((M.QUIT,))
    agent.join(2)


class FakeClock:
    """time.monotonic for the agent module: it moves only when a test says so."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def __getattr__(self, name):  # strftime, localtime...: the real ones
        import time

        return getattr(time, name)


def test_a_turn_end_held_for_gits_report_comes_by_itself_when_the_report_never_does(tmp_path, monkeypatch):
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions

    monkeypatch.setattr(agent_module, "REPORT_WAIT", 0.2)
    monkeypatch.setattr(agent_module, "_git_report", lambda *a: None)  # a report that never comes
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent, out = start(stream, root=str(tmp_path), git_report=True, policy=permissions.Policy(mode="unrestricted"))
    agent.send((M.PROMPT, "go"))
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "done")  # no message wakes the agent: its own timeout does
    agent.send((M.QUIT,))
    agent.join(2)


@pytest.mark.parametrize("name, args, limit", [
    ("list_directory", {}, 60),  # a file tool: FILE_TOOL_TIMEOUT
    ("execute_command", {"command": "sleep 1000"}, 37),  # its own timeout (32 s here) and 5 s more
], ids=["file-tool", "command"])
def test_a_call_is_abandoned_exactly_at_its_deadline(tmp_path, monkeypatch, caplog, name, args, limit):
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions, runner

    clock = FakeClock()
    monkeypatch.setattr(agent_module, "time", clock)
    release = threading.Event()
    started = threading.Event()

    cancels = []

    def execute(*a, cancel, **k):
        cancels.append(cancel)
        started.set()
        release.wait(10)
        return {"ok": True}

    monkeypatch.setattr(runner, "execute", execute)
    stream, requests = tools_then_answer(one_call(name=name, args=args), "noted")
    agent, out = start(stream, root=str(tmp_path), exec_timeout=32.0, git_report=True,
                       policy=permissions.Policy(mode="unrestricted"))
    caplog.set_level("WARNING", logger="dashfloat.agent")
    try:
        agent.send((M.PROMPT, "go"))
        assert started.wait(5)
        clock.now += limit - 0.5
        agent.send(("deadline",))  # what the inbox's timeout makes
        agent.send((M.T_NOTE, 0, "c1", "marker"))  # handled after it: the call is still running then
        out.wait(lambda m: m == (M.TOOL_NOTE, "c1", "marker"))
        assert not any(m[0] == M.TOOL_RESULT for m in out.seen)
        clock.now += 0.5
        agent.send(("deadline",))
        row = out.wait_kind(M.TOOL_RESULT)[1]
        assert row["status"] == "error" and f"did not finish within {limit}s; abandoned" in row["text"]
        assert cancels[0].cancelled  # the abandoned work is told to stop
        assert any(r.getMessage() == f"abandoned {name} after {float(limit)}s" for r in caplog.records)
        out.wait_kind(M.ASSISTANT_END, "done")
        out.wait_kind(M.TURN_END, "done")  # a stuck command's git report is not waited for
    finally:
        release.set()
    out.wait_idle_after_end()
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_turn_end_waits_ten_seconds_at_most_for_gits_report(tmp_path, monkeypatch, caplog):
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions

    clock = FakeClock()
    monkeypatch.setattr(agent_module, "time", clock)
    monkeypatch.setattr(agent_module, "_git_report", lambda *a: None)  # a report that never comes
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent, out = start(stream, root=str(tmp_path), git_report=True, policy=permissions.Policy(mode="unrestricted"))
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.ASSISTANT_END, "done")
    out.wait(lambda m: m == (M.ASSISTANT_END, "done") and out.seen.count(m) == 2)
    out.wait_idle_after_end()
    clock.now += 9.5
    agent.send(("deadline",))
    agent.send((M.T_NOTE, 0, "c1", "marker"))
    out.wait(lambda m: m == (M.TOOL_NOTE, "c1", "marker"))
    assert not any(m[0] == M.TURN_END for m in out.seen)
    clock.now += 0.5
    caplog.set_level("WARNING", logger="dashfloat.agent")
    agent.send(("deadline",))
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "done")
    assert any(r.getMessage() == f"git status reports still missing after {agent_module.REPORT_WAIT}s: ['c1']"
               for r in caplog.records)
    # the missing report holds no later turn: the next one ends at once (the clock stands still)
    assert command(agent, out, "and now?")[-1] == (M.TURN_END, "done")
    agent.send((M.QUIT,))
    agent.join(2)


def test_an_agent_takes_every_option_from_the_configuration(tmp_path):
    from dashfloat import agent as agent_module
    from dashfloat.config import load_config
    from tests.unit.test_config import env_for, user_file

    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    root.mkdir()
    user_file(home, 'max_episodes = 7\nexec_timeout = 12\nexec_max_processes = 99\nhook_timeout = 3\n'
                    'context_window = 50000\ncompact_threshold = 0.5\nmax_turns = 4\nmax_tokens = 900\n'
                    'max_cost = 2\n[hooks]\npre_tool_use = ["pre-check"]\npost_tool_use = ["post-check"]\n'
                    '[prices]\n"m" = { input = 1.0, output = 2.0 }\n')
    config = load_config({"root": str(root)}, env_for(home), root)
    agent = Agent(ENDPOINT, "m", Outbox().post, **agent_module.options_from(config))
    assert (agent.root, agent.max_episodes, agent.exec_timeout, agent.exec_max_processes, agent.hook_timeout) == \
        (str(root), 7, 12, 99, 3)
    assert agent.pre_hooks == ("pre-check",) and agent.post_hooks == ("post-check",)
    assert (agent._ctx.window, agent._ctx.threshold) == (50000, 0.5)
    assert agent.meter.budgets == config_budgets(config) and "m" in agent.meter.prices
    assert agent.policy.mode == config.permission_mode


def config_budgets(config):
    from dashfloat import metering

    return metering.Budgets(config.max_turns, config.max_tokens, config.max_cost)


def test_an_agent_not_started_is_not_alive_and_join_returns():
    agent = Agent(ENDPOINT, "m", Outbox().post)
    assert not agent.alive
    agent.join(0)


def test_quit_before_any_prompt_is_a_clean_exit():
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    agent.send((M.QUIT,))
    agent.join(2)
    assert not agent.alive and not any(m[0] == M.AGENT_DOWN for m in out.seen + drain(out))


def drain(out):
    got = []
    while True:
        try:
            got.append(out.q.get_nowait())
        except queue.Empty:
            return got


def slow_model_list(release, served=("m1", "m2"), asked=None):
    """A model list that answers `served` once `release` is set; each ask is counted in `asked`."""

    def models(ep):
        if asked is not None:
            asked.append(1)
        release.wait(5)
        return list(served)

    return models


def test_esc_while_the_first_prompt_waits_for_the_model_list_ends_the_turn_cancelled():
    release = threading.Event()
    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=slow_model_list(release))
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.CANCEL,))
    out.wait_kind(M.ASSISTANT_END, "cancelled")
    out.wait_kind(M.TURN_END, "cancelled")
    release.set()
    assert not any(m[0] == M.SYSTEM and m[1] == "error" for m in out.seen), out.seen
    assert agent.alive and not agent._busy
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_prompt_cancelled_while_it_waited_for_the_model_list_is_not_sent_when_the_list_comes():
    release = threading.Event()
    asked = []

    def stream(*a, **k):
        asked.append(1)
        return result("ok")

    agent, out = start(stream, model=None, list_models_fn=slow_model_list(release, served=("m1",)))
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    release.set()
    model = out.wait_kind(M.MODEL, "m1")  # the list came: the only model is taken
    agent.send((M.T_NOTE, 0, "x", "marker"))
    out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"))
    after = out.seen[out.seen.index(model):]
    assert not any(m[0] in (M.ASSISTANT_START, M.TURN_END) for m in after) and asked == [], after
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_cancel_that_fails_is_logged_with_its_traceback_and_the_turn_still_ends(monkeypatch, caplog):
    release = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("content", "part"))
        release.wait(5)
        return result("part")

    agent, out = start(stream)
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TOKEN, "part")

    def broken(self):
        raise OSError("the socket is gone")

    monkeypatch.setattr(CancelToken, "cancel", broken)
    try:
        with caplog.at_level("ERROR", logger="dashfloat.agent"):
            agent.send((M.CANCEL,))
            out.wait_kind(M.TURN_END, "cancelled")
    finally:
        release.set()
    record = next(r for r in caplog.records if r.getMessage() == "cancel failed")
    assert record.exc_info is not None and record.exc_info[0] is OSError
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_crash_while_a_model_name_is_checked_ends_that_turn_and_the_late_answer_changes_nothing():
    release = threading.Event()
    agent, out = crashing_agent(list_models_fn=slow_model_list(release, served=("m", "other")))
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model other"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.T_NOTE, 0, "x", "crash"))
    out.wait_kind(M.TURN_END, "error")
    release.set()
    wait_until(lambda: not any(t.name == "model-check" for t in threading.enumerate()), "the check's answer sent")
    command(agent, out, "/usage")  # handled after that answer
    assert agent.model == "m" and (M.MODEL, "other") not in out.seen
    assert [m[1] for m in out.seen[mark:] if m[0] == M.TURN_END] == ["error", "done"]
    quit_(agent)


@pytest.mark.parametrize("stage", ["gate", "run"])
def test_a_crash_while_a_call_is_checked_or_runs_leaves_the_next_turns_calls_free_to_run(tmp_path, monkeypatch,
                                                                                        stage):
    """The crashed turn's call goes with it: the next turn's call is checked and run, not kept
    waiting behind one that no longer belongs to a turn."""
    from dashfloat.tools import pipeline, runner

    entered, release = threading.Event(), threading.Event()
    module, name = (pipeline, "pre_execute") if stage == "gate" else (runner, "execute")
    real = getattr(module, name)

    def held(*args, **kwargs):
        if not entered.is_set():
            entered.set()
            release.wait(5)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, held)
    stream, _requests = tools_then_answer(one_call(), one_call("c2"), "listed")
    agent, out = crashing_agent(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    assert entered.wait(5)
    agent.send((M.T_NOTE, 0, "c1", "crash"))
    out.wait_kind(M.TURN_END, "error")
    release.set()
    said = command(agent, out, "list again")
    assert [m[1]["id"] for m in said if m[0] == M.TOOL_RESULT] == ["c2"]
    assert (M.TOKEN, "listed") in said and said[-1] == (M.TURN_END, "done")
    quit_(agent)


def test_a_crash_while_the_first_prompt_waits_for_the_model_list_ends_that_turn_only():
    release = threading.Event()
    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=slow_model_list(release))
    crash_on(agent, M.T_NOTE)
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.T_NOTE, 0, "x", "y"))
    assert "The turn stopped on an internal error" in out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")[2]
    out.wait_kind(M.TURN_END, "error")
    release.set()
    assert agent.alive and not any(m[0] == M.AGENT_DOWN for m in out.seen)
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_worker_that_dies_is_logged_with_its_traceback(caplog):
    from dashfloat.agent import _spawn

    got = queue.SimpleQueue()

    def body():
        raise RuntimeError("the worker's bug")

    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        _spawn("sessions", got.put, body, lambda why: ("failed", why))
        assert got.get(timeout=5) == ("failed", "RuntimeError: the worker's bug")
    record = next(r for r in caplog.records if r.getMessage() == "thread sessions ended by RuntimeError")
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_a_worker_never_keeps_the_process_from_exiting():
    from dashfloat.agent import _spawn

    release = threading.Event()
    got = queue.SimpleQueue()
    _spawn("hung-tool", got.put, lambda: (release.wait(5), ("done",))[1], lambda why: ("failed", why))
    try:
        thread = next(t for t in threading.enumerate() if t.name == "hung-tool")
        assert thread.daemon
    finally:
        release.set()
    assert got.get(timeout=5) == ("done",)


def test_a_call_whose_context_cannot_be_made_is_an_error_result_and_the_turn_goes_on(tmp_path, monkeypatch):
    from dashfloat.tools import pipeline

    def context(**kw):
        raise RuntimeError("no context")

    monkeypatch.setattr(pipeline, "CallContext", context)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    row = out.wait_kind(M.TOOL_RESULT)[1]
    assert row["status"] == "error" and "checking list_directory failed: RuntimeError: no context" in row["text"]
    out.wait_kind(M.TURN_END, "done")
    assert requests[1][-1]["tool_call_id"] == "c1"
    assert not any(m[0] == M.SYSTEM and m[1] == "error" for m in out.seen)


def test_ten_read_only_calls_run_at_once_and_the_eleventh_waits(tmp_path, monkeypatch):
    from dashfloat.tools import runner

    release = threading.Event()
    started = queue.SimpleQueue()
    real = runner.execute

    def execute(name, *a, **k):
        started.put(name)
        release.wait(5)
        return real(name, *a, **k)

    monkeypatch.setattr(runner, "execute", execute)
    from dashfloat.tools import pipeline

    gated = []
    real_gate = pipeline.pre_execute

    def pre_execute(ctx):  # a pre_tool_use hook would run here: for the eleventh, only after the ten ran
        gated.append(ctx.call_id)
        return real_gate(ctx)

    monkeypatch.setattr(pipeline, "pre_execute", pre_execute)
    calls = [{"id": f"c{i:02}", "name": "list_directory", "args": {"path": f"d{i}"}, "error": None} for i in range(12)]
    for c in calls:  # each a different directory: the same call thrice in a row would ask (the repeat guard)
        (tmp_path / c["args"]["path"]).mkdir()
    stream, requests = tools_then_answer(calls, "noted")
    agent, out = start(stream, root=str(tmp_path))
    try:
        agent.send((M.PROMPT, "list"))
        for _ in range(10):
            started.get(timeout=5)
        agent.send((M.T_NOTE, 0, "c00", "marker"))  # handled after every start of the batch
        out.wait(lambda m: m == (M.TOOL_NOTE, "c00", "marker"))
        assert sorted(agent._running) == [c["id"] for c in calls[:10]]
        assert sorted(gated) == [c["id"] for c in calls[:10]]
    finally:
        release.set()
    out.wait_kind(M.TURN_END, "done")
    assert [m["tool_call_id"] for m in requests[1] if m["role"] == "tool"] == [c["id"] for c in calls]


def test_a_command_runs_with_the_default_limits_when_none_are_configured(tmp_path, monkeypatch):
    from dashfloat.tools import permissions, runner

    seen = []

    def execute(name, args, root, prepared, **kw):
        seen.append(kw)
        return {"ok": True, "exit_code": 0, "stdout": "", "stderr": ""}

    monkeypatch.setattr(runner, "execute", execute)
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent = Agent(ENDPOINT, "m", Outbox().post, stream_fn=stream, root=str(tmp_path), git_report=False,
                  policy=permissions.Policy(mode="unrestricted"))
    out = Outbox()
    agent._ui_post = out.post
    agent.start()
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TURN_END, "done")
    assert (seen[0]["exec_timeout"], seen[0]["exec_max_processes"]) == (30.0, 1024)
    agent.send((M.QUIT,))
    agent.join(2)


def test_copy_before_any_answer_says_there_is_none_yet():
    agent, out = start(lambda *a, **k: result("ok"))
    agent.send((M.PROMPT, "/copy"))
    assert out.wait(lambda m: m[0] == M.SYSTEM)[1:] == ("error", "Nothing to copy: no answer yet in this session.")
    agent.send((M.QUIT,))
    agent.join(2)


def test_copy_puts_the_answer_on_the_terminals_clipboard_by_default(tmp_path):
    environ = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    agent, out = start(lambda *a, **k: result("the answer"), environ=environ)
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.TURN_END, "done")
    agent.send((M.PROMPT, "/copy"))
    assert out.wait_kind(M.CLIPBOARD) == (M.CLIPBOARD, "the answer")
    out.wait(lambda m: m[0] == M.SYSTEM and "Copied" in m[2])
    assert (tmp_path / "state" / "dashfloat" / "copy.txt").read_text() == "the answer"
    agent.send((M.QUIT,))
    agent.join(2)


def test_copy_takes_the_last_turns_answer_only(tmp_path):
    environ = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    answers = iter(["the first", "the second"])
    agent, out = start(lambda *a, **k: result(next(answers)), environ=environ)
    for prompt in ("one", "two"):
        mark = len(out.seen)
        agent.send((M.PROMPT, prompt))
        out.wait(lambda m, mark=mark: m[0] == M.TURN_END and m in out.seen[mark:])
    agent.send((M.PROMPT, "/copy"))
    assert out.wait_kind(M.CLIPBOARD) == (M.CLIPBOARD, "the second")
    agent.send((M.QUIT,))
    agent.join(2)


def test_copy_takes_a_code_block_by_number_lists_them_and_refuses_what_is_not_there(tmp_path):
    from dashfloat import copyout

    environ = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    text = "Two blocks:\n```python\nfirst()\n```\nand\n```sh\nsecond\n```\nand a blank one:\n```\n   \n```\n"
    agent, out = start(lambda *a, **k: result(text), environ=environ)
    command(agent, out, "hi")
    blocks = copyout.answer_blocks([text])
    assert [b.text for b in blocks] == ["first()", "second", "   "]
    assert (M.CLIPBOARD, "first()") in command(agent, out, "/copy 1")
    assert (M.CLIPBOARD, "second") in command(agent, out, "/copy 2")
    assert systems(command(agent, out, "/copy 3"), "error") == ["Nothing to copy: code block 3 is empty."]
    assert systems(command(agent, out, "/copy 4"), "error") == [copyout.out_of_range(4, blocks)]
    assert systems(command(agent, out, "/copy list"), "info") == [copyout.list_text(blocks)]
    assert systems(command(agent, out, "/copy a b"), "error") == [copyout.parse_args("a b")]
    (said,) = systems(command(agent, out, "/sessions all"), "error")
    assert said.startswith("/sessions takes no arguments, not 'all'")
    quit_(agent)


@pytest.mark.parametrize("success_first", [False, True], ids=["from start-up", "after a success"])
def test_the_third_crash_in_a_row_stops_the_agent(success_first):
    agent, out = crashing_agent()
    if success_first:
        agent.send((M.PROMPT, "/help"))
        out.wait(lambda m: m[0] == M.SYSTEM)
    for _ in range(2):
        mark = len(out.seen)
        agent.send((M.PROMPT, "crash"))
        out.wait(lambda m, mark=mark: m[0] == M.SYSTEM and m in out.seen[mark:])
    agent.send((M.PROMPT, "crash"))
    assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1] == "RuntimeError: boom"
    agent.join(2)
    assert not agent.alive


def test_a_crash_outside_a_turn_says_so_and_leaves_the_prompt_ready():
    agent, out = crashing_agent()
    mark = len(out.seen)
    agent.send((M.PROMPT, "crash"))
    err = out.wait(lambda m: m[0] == M.SYSTEM and m in out.seen[mark:])
    assert err == (M.SYSTEM, "error", "internal error while handling 'prompt': RuntimeError: boom (details in the log).")
    at = out.seen.index(err)
    out.wait(lambda m: m == (M.PHASE, "idle") and m in out.seen[at:])
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_log_has_each_crash_with_its_traceback_and_not_the_prompts_text(caplog):
    """The log file is what a bug report carries: every failed handling and the crash that
    stopped the agent, each with its traceback; of a message only its kind (a prompt's text
    is the user's)."""
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent, out = crashing_agent()
        for _ in range(3):
            agent.send((M.PROMPT, "crash"))
        out.wait(lambda m: m[0] == M.AGENT_DOWN)
        agent.join(2)
    records = [r for r in caplog.records if r.name == "dashfloat.agent"]
    assert [r.getMessage() for r in records] == ["agent failed handling ('prompt',)"] * 2 + ["agent thread crashed"]
    for r in records:
        assert r.exc_info is not None and r.exc_info[0] is RuntimeError and str(r.exc_info[1]) == "boom"


def test_a_shutdown_that_fails_after_a_crash_is_logged_and_the_agent_still_reports_down(caplog):
    agent, out = crashing_agent()

    def shutdown():
        raise OSError("kill_all broke")

    agent._shutdown = shutdown
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        for _ in range(3):
            agent.send((M.PROMPT, "crash"))
        assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1] == "RuntimeError: boom"
        agent.join(2)
    record = next(r for r in caplog.records if r.getMessage() == "shutdown after the crash failed")
    assert record.exc_info is not None and record.exc_info[0] is OSError


def test_an_agent_that_goes_down_ends_its_journal_saying_why(tmp_path):
    from dashfloat.journal import Journal

    path = tmp_path / "0123456789abcdef.jsonl"
    journal = Journal(path, {"id": "0123456789abcdef", "cwd": str(tmp_path), "model": "m"})
    agent, out = crashing_agent(journal=journal)
    agent.send((M.PROMPT, "hi"))  # something to journal: nothing is written before a prompt
    out.wait_kind(M.TURN_END, "done")
    for _ in range(3):
        agent.send((M.PROMPT, "crash"))
    out.wait(lambda m: m[0] == M.AGENT_DOWN)
    agent.join(2)
    end = json.loads(path.read_bytes().splitlines()[-1])
    assert (end["type"], end["reason"], end["why"]) == ("end", "agent_down", "RuntimeError: boom")


def test_a_prompt_that_reads_deadline_is_answered_like_any_other():
    asked = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        asked.append(messages[-1])
        return result("ok")

    agent, out = start(stream)
    agent.send((M.PROMPT, "deadline"))
    out.wait_kind(M.TURN_END, "done")
    assert asked == [{"role": "user", "content": "deadline"}]
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_refused_read_between_two_running_ones_shows_its_row_as_soon_as_the_one_before_finishes(tmp_path,
                                                                                                   monkeypatch):
    from dashfloat.tools import runner

    release = {"d1": threading.Event(), "d3": threading.Event()}
    started = queue.SimpleQueue()
    real = runner.execute

    def execute(name, args, *a, **k):
        started.put(args["path"])
        release[args["path"]].wait(5)
        return real(name, args, *a, **k)

    monkeypatch.setattr(runner, "execute", execute)
    for d in ("d1", "d3"):
        (tmp_path / d).mkdir()
    calls = [{"id": "c1", "name": "list_directory", "args": {"path": "d1"}, "error": None},
             {"id": "c2", "name": "list_directory", "args": {"path": "../outside"}, "error": None},
             {"id": "c3", "name": "list_directory", "args": {"path": "d3"}, "error": None}]
    stream, requests = tools_then_answer(calls, "noted")
    agent, out = start(stream, root=str(tmp_path))
    try:
        agent.send((M.PROMPT, "list"))
        assert {started.get(timeout=5), started.get(timeout=5)} == {"d1", "d3"}  # the two reads run together
        release["d1"].set()
        out.wait(lambda m: m[0] == M.TOOL_RESULT and m[1]["id"] == "c1")
        agent.send((M.T_NOTE, 0, "c3", "marker"))  # handled after the first read's result
        out.wait(lambda m: m == (M.TOOL_NOTE, "c3", "marker"))
        rows = [m[1]["id"] for m in out.seen if m[0] == M.TOOL_RESULT]
        assert rows == ["c1", "c2"]  # the refusal is shown at once, not once the third read ends
    finally:
        release["d3"].set()
    out.wait_kind(M.TURN_END, "done")
    assert [m["tool_call_id"] for m in requests[1] if m["role"] == "tool"] == ["c1", "c2", "c3"]


def test_esc_while_two_reads_run_ends_the_turn_with_both_their_results(tmp_path, monkeypatch):
    """Esc stops what runs; each call's own (honest) result is kept, and the turn ends once
    the last one has come, not the first."""
    from dashfloat.tools import runner

    started = queue.SimpleQueue()
    late = threading.Event()

    def execute(name, args, *a, cancel, **k):
        started.put(args["path"])
        until(lambda: cancel.cancelled)
        if args["path"] == "d2":
            late.wait(5)
        return {"ok": True, "entries": [], "path": args["path"]}

    monkeypatch.setattr(runner, "execute", execute)
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
    calls = [{"id": f"c{i}", "name": "list_directory", "args": {"path": f"d{i}"}, "error": None} for i in (1, 2)]
    stream, requests = tools_then_answer(calls, "noted")
    agent, out = start(stream, root=str(tmp_path))
    try:
        agent.send((M.PROMPT, "list"))
        assert {started.get(timeout=5), started.get(timeout=5)} == {"d1", "d2"}
        agent.send((M.CANCEL,))
        assert until(lambda: list(agent._running) == ["c2"])  # the first has stopped, the second not yet
    finally:
        late.set()
    out.wait_kind(M.TURN_END, "cancelled")
    rows = {m[1]["id"]: m[1]["status"] for m in out.seen if m[0] == M.TOOL_RESULT}
    assert rows == {"c1": "ok", "c2": "ok"}
    tools = [json.loads(m["content"]) for m in agent.messages if m["role"] == "tool"]
    assert [t["path"] for t in tools] == ["d1", "d2"] and len(requests) == 1


def test_esc_while_two_calls_are_checked_ends_the_turn_once_both_checks_stopped(tmp_path, monkeypatch):
    """A check that stops late (a slow pre_tool_use hook, say) still answers before the turn
    ends: its notes are shown, and the turn ends after the last check, not the first."""
    from dashfloat.tools import pipeline

    started = queue.SimpleQueue()
    late = threading.Event()

    def pre_execute(ctx):
        started.put(ctx.call_id)
        until(lambda: ctx.cancel.cancelled)
        if ctx.call_id == "c2":
            late.wait(5)
        ctx.notes.append(f"{ctx.call_id} stopped")
        return ("done", {"ok": False, "error": {"code": "cancelled", "message": "stopped"}})

    monkeypatch.setattr(pipeline, "pre_execute", pre_execute)
    calls = [{"id": c, "name": "list_directory", "args": {"path": d}, "error": None} for c, d in (("c1", "."), ("c2", "x"))]
    stream, requests = tools_then_answer(calls, "noted")
    agent, out = start(stream, root=str(tmp_path))
    try:
        agent.send((M.PROMPT, "list"))
        assert {started.get(timeout=5), started.get(timeout=5)} == {"c1", "c2"}
        agent.send((M.CANCEL,))
        out.wait(lambda m: m == (M.TOOL_NOTE, "c1", "c1 stopped"))
    finally:
        late.set()
    end = out.wait_kind(M.TURN_END, "cancelled")
    assert out.seen.index((M.TOOL_NOTE, "c2", "c2 stopped")) < out.seen.index(end)
    assert len(requests) == 1 and [m.get("tool_call_id") for m in agent.messages if m["role"] == "tool"] == ["c1", "c2"]


# ---- what runs when a turn crashes or the agent stops ---------------------------------------------


def blocking_execute(monkeypatch, threads=None):
    """runner.execute that runs until its Cancel is cancelled, then prints a last line (a
    command's output as it stops); (started, cancelled) events. `threads` gets its thread."""
    from dashfloat.tools import runner

    started, cancelled = threading.Event(), threading.Event()

    def execute(*a, cancel, on_output, **k):
        if threads is not None:
            threads.append(threading.current_thread())
        started.set()
        if until(lambda: cancel.cancelled):
            cancelled.set()
        on_output("Terminated\n")
        return {"ok": True, "entries": []}

    monkeypatch.setattr(runner, "execute", execute)
    return started, cancelled


def until(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_quit_stops_a_tool_that_is_running(tmp_path, monkeypatch):
    started, cancelled = blocking_execute(monkeypatch)
    stream, _requests = tools_then_answer(one_call(), "noted")
    agent, out = start(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    assert started.wait(5)
    agent.send((M.QUIT,))
    assert cancelled.wait(5)
    agent.join(2)
    assert not agent.alive


def test_an_agent_that_goes_down_while_a_tool_runs_stops_it(tmp_path, monkeypatch):
    started, cancelled = blocking_execute(monkeypatch)
    stream, _requests = tools_then_answer(one_call(), "noted")
    agent, out = crashing_agent(stream, root=str(tmp_path))

    def recover(*a):  # the crash goes beyond the turn's recovery: the agent goes down
        raise RuntimeError("recovery broke")

    agent._recover = recover
    agent.send((M.PROMPT, "list"))
    assert started.wait(5)
    agent.send((M.T_NOTE, 0, "c1", "crash"))
    assert out.wait(lambda m: m[0] == M.AGENT_DOWN)[1] == "RuntimeError: recovery broke"
    assert cancelled.wait(5)


def test_a_crash_while_a_tool_runs_stops_it_and_answers_the_call(tmp_path, monkeypatch):
    threads = []
    started, cancelled = blocking_execute(monkeypatch, threads)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = crashing_agent(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    assert started.wait(5)
    agent.send((M.T_NOTE, 0, "c1", "crash"))
    ended = out.seen.index(out.wait_kind(M.TURN_END, "error"))
    assert cancelled.wait(5)
    assert [m["tool_call_id"] for m in agent.messages if m["role"] == "tool"] == ["c1"]
    threads[0].join(5)  # its last output and its result are in the inbox
    agent.send((M.T_NOTE, 0, "x", "marker"))
    out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"))
    assert not [m for m in out.seen[ended:] if m[0] in (M.TOOL_OUTPUT, M.TOOL_RESULT)], "the ended turn's row moved"
    assert agent.alive


def test_a_crash_while_a_call_is_checked_stops_the_check(tmp_path, monkeypatch):
    from dashfloat.tools import pipeline

    started, cancelled = threading.Event(), threading.Event()

    def pre_execute(ctx):  # a slow pre_tool_use hook, say: it stops when told to
        started.set()
        if until(lambda: ctx.cancel.cancelled):
            cancelled.set()
        return ("done", {"ok": False, "error": {"code": "cancelled", "message": "stopped"}})

    monkeypatch.setattr(pipeline, "pre_execute", pre_execute)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = crashing_agent(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "list"))
    assert started.wait(5)
    agent.send((M.T_NOTE, 0, "c1", "crash"))
    out.wait_kind(M.TURN_END, "error")
    assert cancelled.wait(5)


def test_a_crash_while_an_answer_streams_stops_the_stream():
    stopped = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("content", "half"))
        if until(lambda: cancel.cancelled):
            stopped.set()
        on_event(("content", " LATE"))
        return result("half LATE", cancelled=True)

    agent, out = crashing_agent(stream)
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TOKEN, "half")
    agent.send((M.T_NOTE, 0, "x", "crash"))
    out.wait_kind(M.TURN_END, "error")
    assert stopped.wait(5), "the request was left running"
    assert agent.messages[-1] == {"role": "assistant", "content": "half"}


def test_a_crash_while_the_first_prompt_waits_for_the_model_list_drops_that_prompt():
    release = threading.Event()

    def models(ep):
        release.wait(5)
        return ["solo"]  # the only model: a prompt still pending would be sent with it

    agent, out = crashing_agent(model=None, list_models_fn=models)
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.T_NOTE, 0, "x", "crash"))
    ended = out.seen.index(out.wait_kind(M.TURN_END, "error"))
    release.set()
    out.wait_kind(M.MODEL, "solo")
    agent.send((M.T_NOTE, 0, "x", "marker"))  # handled after the model list: the dropped prompt would have gone by then
    out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"))
    assert (M.PHASE, "waiting") not in out.seen[ended:] and not agent._busy
    agent.send((M.QUIT,))
    agent.join(2)


# ---- start-up: what the UI is told first, and the permission policy -----------------------------


def startup(agent, out):
    """The start-up messages a front end draws its status line from, in order."""
    out.wait_kind(M.MODEL)
    return [m for m in out.seen if m[0] in (M.PHASE, M.MODE, M.METER, M.MODEL)]


def test_start_up_tells_the_ui_its_phase_mode_meter_and_model_in_that_order():
    agent, out = start(lambda *a, **k: result("ok"))
    assert startup(agent, out) == [(M.PHASE, "idle"), (M.MODE, "ask"), (M.METER, agent.meter.view()), (M.MODEL, "m")]
    agent.send((M.QUIT,))
    agent.join(2)


def modes_config(tmp_path, mode):
    from dashfloat.config import Config

    return Config(root=tmp_path, permission_mode=mode)


@pytest.mark.parametrize("given, waiting, shown", [
    ({}, False, "ask"),
    ({}, True, "ask"),
    ({"config": "accept-edits"}, True, "accept-edits"),
    ({"config": "accept-edits"}, False, "accept-edits"),
    ({"config": "ask", "policy": "unrestricted"}, False, "unrestricted"),  # the policy given decides
], ids=["defaults", "defaults-prompt-waiting", "config-prompt-waiting", "config", "policy-and-config"])
def test_the_mode_shown_at_start_up_is_the_one_that_decides(tmp_path, given, waiting, shown):
    from dashfloat.tools.permissions import Policy

    kwargs = {"stream_fn": lambda *a, **k: result("ok")}
    if "config" in given:
        kwargs["policy_config"] = modes_config(tmp_path, given["config"])
    if "policy" in given:
        kwargs["policy"] = Policy(mode=given["policy"])
    out = Outbox()
    agent = Agent(ENDPOINT, "m", out.post, **kwargs)
    if waiting:  # dashfloat -p: the prompt is in the inbox before the thread starts
        agent.send((M.PROMPT, "hi"))
    agent.start()
    assert out.wait_kind(M.MODE) == (M.MODE, shown)
    out.wait_kind(M.TURN_END) if waiting else out.wait_kind(M.MODEL)
    assert agent.policy.mode == shown
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_policy_is_built_at_rest_and_not_before_a_waiting_prompt_is_sent(tmp_path):
    """Issue 16: a person has yet to type, so the policy is built now (not on the first
    call); a prompt already waiting (dashfloat -p) goes out first."""
    config = modes_config(tmp_path, "accept-edits")
    agent, out = start(lambda *a, **k: result("ok"), policy_config=config)
    out.wait_kind(M.MODEL)
    assert agent._policy is not None and agent._policy.mode == "accept-edits"
    agent.send((M.QUIT,))
    agent.join(2)

    built_when_asked = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        built_when_asked.append(agent._policy is not None)
        return result("ok")

    out = Outbox()
    agent = Agent(ENDPOINT, "m", out.post, stream_fn=stream, policy_config=config)
    agent.send((M.PROMPT, "hi"))
    agent.start()
    out.wait_kind(M.TURN_END, "done")
    assert built_when_asked == [False]
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_policy_set_on_the_agent_before_it_starts_is_the_one_used():
    from dashfloat.tools.permissions import Policy

    out = Outbox()
    agent = Agent(ENDPOINT, "m", out.post, stream_fn=lambda *a, **k: result("ok"))
    agent.policy = Policy(mode="read-only")
    agent.start()
    assert out.wait_kind(M.MODE) == (M.MODE, "read-only")
    agent.send((M.PROMPT, "/mode"))
    assert out.wait(lambda m: m[0] == M.SYSTEM)[2].startswith("Permission mode: read-only.")
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_crash_while_the_results_go_into_the_conversation_answers_each_call_once(tmp_path):
    stream, requests = tools_then_answer(one_call("c1") + one_call("c2", args={"path": "."}), "after")
    agent, out = start(stream, root=str(tmp_path))
    real = agent._append_result
    state = {"n": 0}

    def append_result(call):
        state["n"] += 1
        if state["n"] == 2:  # c1's result is in, c2's is not
            raise RuntimeError("boom")
        return real(call)

    agent._append_result = append_result
    agent.send((M.PROMPT, "list twice"))
    out.wait_kind(M.TURN_END, "error")
    assert [m["tool_call_id"] for m in agent.messages if m["role"] == "tool"] == ["c1", "c2"]


def test_the_answer_of_a_cancelled_request_that_comes_late_is_dropped():
    threads = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        threads.append(threading.current_thread())  # it puts the answer in the inbox, then ends
        on_event(("content", "part"))
        until(lambda: cancel.cancelled)
        return result("part LATE")  # a streamer that does not say it was cancelled

    agent, out = start(stream)
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TOKEN, "part")
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    threads[0].join(5)
    assert not threads[0].is_alive()
    agent.send((M.T_NOTE, 0, "x", "marker"))  # handled after the late answer
    out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"))
    assert agent.messages[-1] == {"role": "assistant", "content": "part"}
    assert [m for m in out.seen if m[0] == M.ASSISTANT_END] == [(M.ASSISTANT_END, "cancelled")]
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_late_answer_of_a_cancelled_request_is_not_taken_for_the_next_ones():
    late, threads = threading.Event(), []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        threads.append(threading.current_thread())
        if len(threads) == 1:
            until(lambda: cancel.cancelled)
            late.wait(5)  # it answers once the next request is on its way
            return result("LATE")
        until(lambda: not threads[0].is_alive())  # the late answer is in the inbox before this one
        return result("second")

    agent, out = start(stream)
    agent.send((M.PROMPT, "go"))
    assert until(lambda: threads)
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    agent.send((M.PROMPT, "again"))
    assert until(lambda: len(threads) == 2)
    late.set()
    out.wait_kind(M.TURN_END, "done")
    assert agent.messages[-1] == {"role": "assistant", "content": "second"}
    agent.send((M.QUIT,))
    agent.join(2)


def test_quit_on_an_open_question_leaves_the_turn_for_a_resume_to_close(tmp_path):
    """Only a streaming answer is stopped as Esc stops it on the way out; a question open at
    quit is not answered "rejected" here (a resume says it was never decided)."""
    stream, requests = tools_then_answer(one_call(name="write_file", args={"path": "a", "content": "x"}), "done")
    agent, out = start(stream, root=str(tmp_path))
    agent.send((M.PROMPT, "write"))
    out.wait_kind(M.CONFIRM)
    agent.send((M.QUIT,))
    agent.join(2)
    assert not agent.alive
    seen = out.seen + drain(out)
    assert not [m for m in seen if m[0] in (M.DECIDED, M.TURN_END, M.TOOL_RESULT)]


def test_quit_while_an_answer_streams_stops_it_even_when_keeping_it_fails(caplog):
    stopped = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("content", "half"))
        if until(lambda: cancel.cancelled):
            stopped.set()
        return result("half", cancelled=True)

    agent, out = start(stream)

    def on_cancel(why=""):
        raise RuntimeError("the record broke")

    agent._on_cancel = on_cancel
    agent.send((M.PROMPT, "go"))
    out.wait_kind(M.TOKEN, "half")
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent.send((M.QUIT,))
        agent.join(2)
    assert not agent.alive and stopped.wait(5)
    record = next(r for r in caplog.records if r.getMessage() == "keeping the streamed answer failed")
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert not any(m[0] == M.AGENT_DOWN for m in out.seen + drain(out))


@pytest.mark.parametrize("loaded", [True, False], ids=["tools-loaded", "tools-never-loaded"])
def test_quit_kills_every_command_the_runner_started_and_a_failure_there_is_logged(monkeypatch, caplog, loaded):
    from dashfloat.tools import runner

    killed = []

    def kill_all():
        killed.append(True)
        raise OSError("no such process group")

    monkeypatch.setattr(runner, "kill_all", kill_all)
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL)
    if loaded:
        agent.send((M.PREPARE,))  # a person started typing: the tools load
    with caplog.at_level("ERROR", logger="dashfloat.agent"):
        agent.send((M.QUIT,))
        agent.join(2)
    assert not agent.alive
    failed = [r for r in caplog.records if r.getMessage() == "kill_all failed"]
    if loaded:
        assert killed == [True] and len(failed) == 1 and failed[0].exc_info[0] is OSError
    else:  # nothing was loaded, so nothing was started: nothing to kill, nothing logged
        assert killed == [] and failed == []


def test_a_check_that_ends_after_its_turn_crashed_runs_nothing(tmp_path, monkeypatch):
    """A gate that does not stop when told (a hook that ignores it) answers after the crash,
    while the next turn (a /model check) is busy: the crashed turn's call is not taken up."""
    from dashfloat.tools import pipeline

    gate_in, gate_out, models_out = threading.Event(), threading.Event(), threading.Event()

    threads = []

    def pre_execute(ctx):
        threads.append(threading.current_thread())  # it puts the verdict in the inbox, then ends
        gate_in.set()
        gate_out.wait(5)
        return ("done", {"ok": False, "error": "refused by a hook", "code": "denied"})

    def models(ep):
        models_out.wait(5)
        return ["m", "other"]

    monkeypatch.setattr(pipeline, "pre_execute", pre_execute)
    stream, requests = tools_then_answer(one_call(), "noted")
    agent, out = crashing_agent(stream, root=str(tmp_path), list_models_fn=models)
    agent.send((M.PROMPT, "list"))
    assert gate_in.wait(5)
    agent.send((M.T_NOTE, 0, "c1", "crash"))
    ended = out.seen.index(out.wait_kind(M.TURN_END, "error"))
    agent.send((M.PROMPT, "/model other"))  # busy until the model list comes
    out.wait(lambda m: m[0] == M.PHASE and m[1] != "idle" and m in out.seen[ended:])
    gate_out.set()
    threads[0].join(5)
    assert not threads[0].is_alive()
    agent.send((M.T_NOTE, 0, "x", "marker"))  # handled after the late gate
    out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"))
    models_out.set()
    out.wait_kind(M.MODEL, "other")
    assert not [m for m in out.seen[ended:] if m[0] == M.TOOL_RESULT]
    assert [m["tool_call_id"] for m in agent.messages if m["role"] == "tool"] == ["c1"] and len(requests) == 1


def test_a_slash_command_whose_worker_fails_ends_its_turn_as_an_error_and_the_next_one_ends(monkeypatch):
    from dashfloat import agent as agent_module

    def sessions_text(root, current):
        raise RuntimeError("unreadable state directory")

    monkeypatch.setattr(agent_module, "sessions_text", sessions_text)
    agent, out = start(lambda *a, **k: result("ok"))
    agent.send((M.PROMPT, "/sessions"))
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "error")
    assert "/sessions failed: RuntimeError: unreadable state directory" in out.wait(lambda m: m[0] == M.SYSTEM)[2]
    mark = len(out.seen)
    agent.send((M.PROMPT, "/help"))  # done at once: its end is not held for a worker any more
    assert out.wait(lambda m: m[0] == M.TURN_END and m in out.seen[mark:]) == (M.TURN_END, "done")
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_message_of_no_known_kind_is_logged_and_ignored(caplog):
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    with caplog.at_level(logging.WARNING, logger="dashfloat.agent"):
        agent.send(("no-such-kind", 1))
        agent.send((M.PROMPT, "hi"))  # handled after it: the warning is in by then
        out.wait_kind(M.TURN_END, "done")
    assert "agent ignored unknown message 'no-such-kind'" in caplog.text
    agent.send((M.QUIT,))
    agent.join(2)


def test_after_an_empty_answer_copy_says_there_is_no_answer_not_one_being_written():
    """An ended answer is no longer open: /copy does not say one is being written."""
    agent, out = start(lambda *a, **k: result(""))
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.TURN_END, "empty")
    agent.send((M.PROMPT, "/copy"))
    err = out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error" and "Nothing to copy" in m[2])
    assert "no answer yet in this session" in err[2], err
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_model_list_is_asked_once_while_it_is_being_asked():
    """/model while the start-up's model list is still coming asks nothing more: one
    request to the endpoint, and the listing's turn ends when that answer is in."""
    release = threading.Event()
    asked = []
    agent, out = start(lambda *a, **k: result("ok"), model=None,
                       list_models_fn=slow_model_list(release, asked=asked))
    out.wait_kind(M.PHASE, "idle")
    agent.send((M.PROMPT, "/model"))
    agent.send((M.PROMPT, "/help"))  # (handled after /model: its turn may not end before the list)
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "info" and "/model" in m[2])
    release.set()
    out.wait_kind(M.TURN_END, "done")
    assert len(asked) == 1
    agent.send((M.QUIT,))
    agent.join(2)


def test_after_a_model_listing_the_next_command_ends_its_turn():
    agent, out = start(lambda *a, **k: result("ok"), model="m", list_models_fn=lambda ep: ["m", "n"])
    out.wait_kind(M.MODEL, "m")
    agent.send((M.PROMPT, "/model"))
    out.wait_kind(M.TURN_END, "done")
    n = sum(1 for m in out.seen if m[0] == M.TURN_END)
    agent.send((M.PROMPT, "/help"))
    out.wait(lambda m: m[0] == M.TURN_END and sum(1 for x in out.seen if x[0] == M.TURN_END) > n)
    agent.send((M.QUIT,))
    agent.join(2)


def test_a_model_listing_that_fails_ends_its_turn_and_a_failing_start_up_list_ends_none():
    def fail(ep):
        raise ChatError("refused", "no server at http://localhost:11434/v1", "start Ollama or use --base-url")

    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=fail)
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    agent.send((M.PROMPT, "/help"))  # a mark: what came before it is the start-up's
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "info")
    before = out.seen[: out.seen.index(next(m for m in out.seen if m[0] == M.SYSTEM and m[1] == "info"))]
    assert not any(m[0] == M.TURN_END for m in before), before  # the start-up's list had no turn
    agent.send((M.PROMPT, "/model"))
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error" and sum(
        1 for x in out.seen if x[0] == M.SYSTEM and x[1] == "error") == 2)
    out.wait(lambda m: m[0] == M.TURN_END and sum(1 for x in out.seen if x[0] == M.TURN_END) == 2)
    agent.send((M.QUIT,))
    agent.join(2)


# ---- slash commands: what each one says, ends and records --------------------------------


def command(agent, out, text, timeout=5.0):
    """Send `text`; the messages posted up to and including the turn end it causes."""
    mark = len(out.seen)
    agent.send((M.PROMPT, text))
    end = out.wait(lambda m: m[0] == M.TURN_END and any(x is m for x in out.seen[mark:]), timeout=timeout)
    return out.seen[mark : next(i for i in range(mark, len(out.seen)) if out.seen[i] is end) + 1]


def systems(msgs, level=None):
    return [m[2] for m in msgs if m[0] == M.SYSTEM and (level is None or m[1] == level)]


def quit_(agent):
    agent.send((M.QUIT,))
    agent.join(2)


def test_copy_is_answered_while_a_turn_runs_and_does_not_end_it(tmp_path):
    gate = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        on_event(("content", "partial"))
        gate.wait(5)
        return result("partial")

    agent, out = start(stream, environ={"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")})
    agent.send((M.PROMPT, "hi"))
    out.wait_kind(M.TOKEN, "partial")
    agent.send((M.PROMPT, "/copy"))
    err = out.wait(lambda m: m[0] == M.SYSTEM)
    assert "still running" not in err[2] and "Nothing to copy" in err[2], err
    assert not any(m[0] == M.TURN_END for m in out.seen)  # /copy beside a turn ends nothing
    gate.set()
    out.wait_kind(M.TURN_END, "done")
    quit_(agent)


def test_copy_ends_its_own_turn_after_its_answer_and_beside_a_turn_ends_nothing(tmp_path):
    """/copy's answer comes from its worker: alone, its turn ends after that answer; beside a
    running turn it copies the last finished answer and that turn still ends once, by itself."""
    gate = threading.Event()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        if len(messages) > 2:  # the second prompt's answer streams until the test lets it end
            on_event(("content", "partial"))
            gate.wait(5)
            return result("partial")
        return result("the first")

    agent, out = start(stream, environ={"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "s")})
    command(agent, out, "one")
    alone = command(agent, out, "/copy")
    assert [m[0] for m in alone[-2:]] == [M.SYSTEM, M.TURN_END], alone
    assert alone[-2][2].startswith("Copied the last answer") and alone[-1] == (M.TURN_END, "done")
    mark = len(out.seen)
    agent.send((M.PROMPT, "two"))
    out.wait_kind(M.TOKEN, "partial")
    agent.send((M.PROMPT, "/copy"))
    out.wait(lambda m: m[0] == M.SYSTEM and "Copied" in m[2] and any(x is m for x in out.seen[mark:]))
    assert (M.CLIPBOARD, "the first") in out.seen[mark:]
    gate.set()

    def ended() -> bool:
        after = out.seen[mark:]
        return any(m[0] == M.TURN_END and (M.ASSISTANT_END, "done") in after[:i] for i, m in enumerate(after))

    out.wait(lambda m: ended())
    assert [m[1] for m in out.seen[mark:] if m[0] == M.TURN_END] == ["done"]
    quit_(agent)


def test_a_copy_file_that_cannot_be_written_is_said_and_logged(tmp_path, caplog):
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    agent, out = start(lambda *a, **k: result("the answer"),
                       environ={"HOME": str(tmp_path), "XDG_STATE_HOME": str(blocker)})
    command(agent, out, "hi")
    caplog.set_level("WARNING", logger="dashfloat.agent")
    (said,) = systems(command(agent, out, "/copy"), "info")
    path = blocker / "dashfloat" / "copy.txt"
    assert f"{path} could not be written (Not a directory" in said
    assert any(r.levelname == "WARNING" and r.getMessage().startswith(f"/copy: {path} could not be written: ")
               for r in caplog.records), caplog.records
    quit_(agent)


def test_a_model_listing_ends_its_turn_after_the_list_is_shown():
    release = threading.Event()
    agent, out = start(lambda *a, **k: result("ok"), model="m",
                       list_models_fn=slow_model_list(release, served=("m", "n")))
    out.wait_kind(M.MODEL, "m")
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model"))
    assert out.wait(lambda m: m[0] == M.SYSTEM)[1:] == ("info", "Model: m. /model NAME switches.")
    assert not any(m[0] == M.TURN_END for m in out.seen[mark:])  # not before the list is in
    release.set()
    end = out.wait_kind(M.TURN_END, "done")
    after = out.seen[mark : out.seen.index(end)]
    assert any(m[0] == M.SYSTEM and m[1] == "warn" and "2 models: m, n" in m[2] for m in after), after
    quit_(agent)


def test_model_name_with_the_list_unavailable_is_set_unchecked_and_says_why():
    def fail(ep):
        raise ChatError("refused", "no server at http://127.0.0.1:9/v1", "start it")

    agent, out = start(lambda *a, **k: result("ok"), model="m", list_models_fn=fail)
    out.wait_kind(M.MODEL, "m")
    msgs = command(agent, out, "/model other")
    assert (M.MODEL, "other") in msgs and agent.model == "other"
    assert systems(msgs, "warn") == [
        "Model set to other, unchecked: the endpoint's model list is not available "
        "(no server at http://127.0.0.1:9/v1. Start it)."]
    assert msgs[-1] == (M.TURN_END, "done")
    quit_(agent)


def test_a_model_check_cancelled_by_esc_changes_nothing_when_its_answer_comes_late():
    release = threading.Event()
    asked = []
    agent, out = start(lambda *a, **k: result("ok"), model="m")
    out.wait_kind(M.MODEL, "m")
    agent._list_models_fn = slow_model_list(release, served=("m", "late"), asked=asked)
    agent.send((M.PROMPT, "/model late"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    release.set()
    # a later command's turn end is the mark: the late answer was handled before it
    msgs = command(agent, out, "/help")
    assert agent.model == "m" and (M.MODEL, "late") not in out.seen, out.seen
    assert asked == [1] and msgs[-1] == (M.TURN_END, "done")
    quit_(agent)


def test_a_model_check_answered_after_a_newer_one_started_is_ignored():
    """Each /model NAME's check carries its own number: the answer of one that was cancelled
    never decides the next one's."""
    gates = [threading.Event(), threading.Event()]
    calls = []
    workers = []

    def models(ep):
        n = len(calls)
        calls.append(n)
        workers.append(threading.current_thread())
        gates[n].wait(5)
        return ["m", "first"] if n == 0 else ["m", "second"]

    agent, out = start(lambda *a, **k: result("ok"), model="m")
    out.wait_kind(M.MODEL, "m")
    agent._list_models_fn = models
    agent.send((M.PROMPT, "/model first"))
    out.wait_kind(M.PHASE, "waiting")
    agent.send((M.CANCEL,))
    out.wait_kind(M.TURN_END, "cancelled")
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model second"))
    out.wait(lambda m: m == (M.PHASE, "waiting") and any(x is m for x in out.seen[mark:]))
    assert until(lambda: len(calls) == 2)
    gates[0].set()  # the cancelled check answers first: "first" is listed, yet it is not asked now
    workers[0].join(5)  # its answer is in the inbox (put before the thread ends), before the newer one's
    assert not workers[0].is_alive()
    gates[1].set()
    out.wait(lambda m: m[0] == M.TURN_END and any(x is m for x in out.seen[mark:]))
    assert agent.model == "second" and (M.MODEL, "first") not in out.seen
    quit_(agent)


def test_mode_says_the_mode_switches_it_and_refuses_a_wrong_name(caplog):
    caplog.set_level(logging.INFO, logger="dashfloat")
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    assert systems(command(agent, out, "/mode"), "info") == [
        "Permission mode: ask. /mode NAME switches (ask, accept-edits, read-only, unrestricted)."]
    msgs = command(agent, out, "/mode sideways")
    assert len(systems(msgs, "error")) == 1 and "sideways" in systems(msgs, "error")[0]
    assert agent.policy.mode == "ask" and not any(m[0] == M.MODE for m in msgs)
    msgs = command(agent, out, "/mode read-only")
    assert (M.MODE, "read-only") in msgs and systems(msgs, "info") == ["Permission mode set to read-only."]
    audit = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit:")]
    assert audit == ["audit: permission mode set to read-only by the user (/mode)"]
    quit_(agent)


def test_permissions_numbers_the_session_rules_or_says_there_are_none():
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    listing = systems(command(agent, out, "/permissions"), "info")[0]
    assert listing.splitlines()[-1] == "No session rules yet: the a key on a confirmation adds one."
    agent.policy.allow_exact("execute_command", {"command": "make test"})
    agent.policy.allow_exact("execute_command", {"command": "make lint"})
    listing = systems(command(agent, out, "/permissions"), "info")[0].splitlines()
    assert listing[-3:] == ["Session rules, by number (/permissions revoke N removes one):",
                            "  1. execute_command(make test)", "  2. execute_command(make lint)"]
    quit_(agent)


def test_permissions_revoke_of_a_rule_revoked_meanwhile_says_so(monkeypatch):
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    agent.policy.allow_exact("execute_command", {"command": "make test"})

    def gone(index):
        raise IndexError(index)

    monkeypatch.setattr(agent.policy, "revoke", gone)
    msgs = command(agent, out, "/permissions revoke 1")
    assert systems(msgs) == ["There is no session rule 1 any more (see /permissions)."]
    assert systems(msgs, "error") == systems(msgs)
    quit_(agent)


def test_permissions_revoke_is_in_the_audit_log_without_a_journal(caplog):
    caplog.set_level(logging.INFO, logger="dashfloat")
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    agent.policy.allow_exact("execute_command", {"command": "make test"})
    assert systems(command(agent, out, "/permissions revoke 1")) == [
        "Revoked session rule 1: execute_command(make test)"]
    audit = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit:")]
    assert audit == ["audit: session rule revoked by the user: execute_command(make test)"]
    quit_(agent)


@pytest.mark.parametrize("stamp, shown", [
    (None, "started at an unknown time"),
    ("soon", "started at an unknown time"),
    (float("nan"), "started at an unknown time"),
    (1e300, "started at an unknown time"),
    (0, "started " + time.strftime("%Y-%m-%d %H:%M", time.localtime(0))),
    (1764000000.5, "started " + time.strftime("%Y-%m-%d %H:%M", time.localtime(1764000000.5))),
])
def test_when_a_resumed_session_started_reads_its_header_time_or_says_it_is_unknown(stamp, shown):
    from dashfloat.agent import _started_text

    assert _started_text(stamp) == shown


def test_instructions_that_fail_to_load_leave_the_prompt_a_note_and_a_traceback_in_the_log(monkeypatch, caplog):
    from dashfloat import prompt

    def broken(root, environ):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(prompt, "load_instructions", broken)
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    (rec,) = [r for r in caplog.records if r.getMessage() == "loading the instructions failed"]
    assert rec.levelno == logging.ERROR and rec.exc_info and "disk on fire" in str(rec.exc_info[1])
    assert agent._ctx.system["role"] == "system"  # the built-in prompt is still sent
    quit_(agent)


def test_a_journal_that_fails_to_close_is_logged_with_its_traceback(tmp_path, caplog):
    from dashfloat.journal import Journal

    journal = Journal(tmp_path / "s.jsonl", {"id": "s"})

    def close(reason, **fields):
        raise OSError("no space left on device")

    journal.close = close
    agent, out = start(lambda *a, **k: result("ok"), journal=journal)
    out.wait_kind(M.MODEL, "m")
    quit_(agent)
    (rec,) = [r for r in caplog.records if r.getMessage() == "closing the journal failed"]
    assert rec.exc_info and "no space left" in str(rec.exc_info[1])
    assert not agent.alive


def test_a_prompt_while_the_last_turn_end_waits_for_gits_report_ends_that_turn_first(tmp_path, monkeypatch):
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions

    monkeypatch.setattr(agent_module, "_git_report", lambda *a: None)  # a report that never comes
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent, out = start(stream, root=str(tmp_path), git_report=True, policy=permissions.Policy(mode="unrestricted"))
    agent.send((M.PROMPT, "go"))
    out.wait_idle_after_end()
    assert not any(m[0] == M.TURN_END for m in out.seen)  # held for git's report
    agent.send((M.PROMPT, "/help"))
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "info")
    ends = out.wait(lambda m: sum(1 for x in out.seen if x[0] == M.TURN_END) == 2 and m[0] == M.TURN_END)
    kinds = [m[0] for m in out.seen]
    first_end = kinds.index(M.TURN_END)
    help_at = next(i for i, m in enumerate(out.seen) if m[0] == M.SYSTEM and m[1] == "info")
    assert first_end < help_at and ends == (M.TURN_END, "done")  # the go turn's end, then /help's
    quit_(agent)


def test_a_model_switch_after_an_answer_reports_no_usage_of_that_answer():
    agent, out = start(lambda *a, **k: result("ok", usage={"total_tokens": 12}), model="m",
                       list_models_fn=lambda ep: ["m", "other"])
    out.wait_kind(M.MODEL, "m")
    assert (M.USAGE, {"total_tokens": 12}) in command(agent, out, "hi")
    msgs = command(agent, out, "/model other")
    assert (M.MODEL, "other") in msgs and not [m for m in msgs if m[0] == M.USAGE], msgs
    quit_(agent)


@pytest.mark.parametrize("text, says", [
    ("/undo 0", "takes a number"), ("/undo 1 2", "takes a number"), ("/undo x", "takes a number"),
    ("/undo 1", "needs the session journal"), ("/undo 2", "needs the session journal"),
    ("/undo", "needs the session journal"),
])
def test_undo_takes_one_number_of_turns_from_1(text, says):
    agent, out = start(lambda *a, **k: result("ok"))
    out.wait_kind(M.MODEL, "m")
    (err,) = systems(command(agent, out, text), "error")
    assert says in err, err
    quit_(agent)


def test_clear_refuses_words_says_when_empty_and_starts_afresh_with_the_instructions_as_they_are(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    agent, out = start(lambda *a, **k: result("ok"), root=str(tmp_path), environ={"HOME": str(home)})
    out.wait_kind(M.MODEL, "m")
    assert systems(command(agent, out, "/clear")) == ["The conversation is already empty."]
    command(agent, out, "hi")
    assert systems(command(agent, out, "/clear all"), "error") == ["/clear takes nothing, not 'all'."]
    assert len(agent.messages) == 2
    (tmp_path / "AGENTS.md").write_text("Always answer in French.\n")
    agent._ctx.failures = 2
    said = systems(command(agent, out, "/clear"), "info")
    assert said and said[0].startswith("Started a fresh conversation: the model no longer sees the earlier 2 messages")
    assert agent.messages == [] and agent._ctx.failures == 0
    assert "Always answer in French." in json.dumps(agent._ctx.system)
    quit_(agent)


def test_compact_says_why_it_has_nothing_to_do_or_cannot_without_a_model():
    def fail(ep):
        raise ChatError("refused", "no server at http://127.0.0.1:9/v1", "start it")

    agent, out = start(lambda *a, **k: result("ok"), model=None, list_models_fn=fail)
    out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error")
    assert systems(command(agent, out, "/compact")) == ["Nothing to compact: the conversation is empty."]
    agent.messages.append({"role": "user", "content": "an earlier question"})  # (idle: the agent reads it next)
    assert systems(command(agent, out, "/compact")) == [
        "/compact needs a model to write the summary: choose one with /model NAME."]
    quit_(agent)


def test_gits_report_runs_on_a_thread_that_never_keeps_the_process_from_exiting(tmp_path, monkeypatch):
    """git can hang (a network file system, a lock): its report must not keep DashFloat from exiting."""
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions

    daemons = []
    real = agent_module._git_report

    def report(*a):
        daemons.append(threading.current_thread().daemon)
        real(*a)

    monkeypatch.setattr(agent_module, "_git_report", report)
    stream, requests = tools_then_answer(one_call(name="execute_command", args={"command": "true"}), "noted")
    agent, out = start(stream, root=str(tmp_path), git_report=True, policy=permissions.Policy(mode="unrestricted"))
    agent.send((M.PROMPT, "go"))
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "done")
    assert daemons == [True]
    agent.send((M.QUIT,))
    agent.join(2)


def test_the_deadline_of_a_command_that_finished_does_not_drop_gits_report_on_it(tmp_path, monkeypatch):
    """A command ends; the next request takes longer than the command's own deadline: when that
    deadline passes, nothing is abandoned, and the turn's end still waits for git's report."""
    from dashfloat import agent as agent_module
    from dashfloat.tools import permissions

    clock = FakeClock()
    monkeypatch.setattr(agent_module, "time", clock)
    reported, answer_now = threading.Event(), threading.Event()
    real = agent_module._git_report

    def report(*a):
        reported.wait(5)
        real(*a)

    monkeypatch.setattr(agent_module, "_git_report", report)
    asked = []

    def stream(endpoint, model, messages, *, on_event, cancel, tools=None):
        asked.append(1)
        if len(asked) == 1:
            return result("", tool_calls=one_call(name="execute_command", args={"command": "true"}))
        answer_now.wait(5)
        on_event(("content", "noted"))
        return result("noted")

    agent, out = start(stream, root=str(tmp_path), exec_timeout=32.0, git_report=True,
                       policy=permissions.Policy(mode="unrestricted"))
    try:
        agent.send((M.PROMPT, "go"))
        assert out.wait_kind(M.TOOL_RESULT)[1]["status"] == "ok"
        clock.now += 60  # past the command's deadline (32 s and 5 s more) while the answer is on its way
        agent.send(("deadline",))
        answer_now.set()
        out.wait(lambda m: m == (M.ASSISTANT_END, "done") and out.seen.count(m) == 2)
        agent.send((M.T_NOTE, 0, "c1", "marker"))
        out.wait(lambda m: m == (M.TOOL_NOTE, "c1", "marker"))
        assert not any(m[0] == M.TURN_END for m in out.seen)  # still waiting for git
    finally:
        answer_now.set()
        reported.set()
    assert out.wait_kind(M.TURN_END) == (M.TURN_END, "done")
    agent.send((M.QUIT,))
    agent.join(2)
