"""The real Agent and its context (issue 10, sections 1, 2 and 6): the system message and the
AGENTS.md instructions on the wire, compaction (threshold, stubs first, the summary request,
the fallback, three failures, /compact, /clear, a refused request), the journal event and a
resume that rebuilds the compacted conversation, and a long scripted session against a server
that counts tokens its own way. Real HTTP to the scripted server, real tools in tmp_path."""

from __future__ import annotations

import json
import logging
import re

import pytest

from dashfloat import context as C
from dashfloat import conversation
from dashfloat import messages as M
from dashfloat import sessions as S
from tests.fakeserver import json_reply, sse_reply
from tests.test_agent_sessions import journal_for, quit_agent, restart, start, sync_spy
from tests.test_agent_tools import answer, calls_reply, crash_on, wait_until

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def prose(n_words: int, seed: int = 0) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words))


def is_summary(req: dict) -> bool:
    body = req["json"] or {}
    msgs = body.get("messages") or []
    return "tools" not in body and bool(msgs) and msgs[0]["content"] == C.SUMMARISER_SYSTEM


def chat_bodies(rig) -> list[dict]:
    """The requests of turns (the summary requests left out)."""
    return [r["json"] for r in rig.server.requests if r["method"] == "POST" and not is_summary(r)]


def summary_bodies(rig) -> list[dict]:
    return [r["json"] for r in rig.server.requests if r["method"] == "POST" and is_summary(r)]


def remembered(text: str) -> list[str]:
    return sorted(set(re.findall(r"REMEMBER: [\w-]+ = [\w-]+", text)))


def summariser(req: dict):
    """A model that summarises: the fixed headings, what it was told to remember, and a line."""
    text = req["json"]["messages"][-1]["content"]
    facts = remembered(text)
    body = "\n\n".join(f"## {h}\n" + ("\n".join(facts) if h == "Decisions" and facts else "none")
                       for h in C.SUMMARY_HEADINGS)
    return sse_reply([body], usage={"prompt_tokens": 100, "completion_tokens": 50})


def events(j) -> list[dict]:
    return [json.loads(x) for x in j.path.read_bytes().splitlines()]


def home(rig):
    return rig.root.parent / "home"


# ---- 1. the system message and the instructions ---------------------------------------------------


def test_every_request_starts_with_the_system_message_and_the_instructions_in_order(rig):
    (home(rig) / ".config" / "dashfloat").mkdir(parents=True)
    (home(rig) / ".config" / "dashfloat" / "AGENTS.md").write_text("USER: answer in English.\n")
    (rig.root / "AGENTS.md").write_text("PROJECT: run make test after a change.\n")
    (rig.root / "notes.txt").write_text("hello\n")
    rig.server.push(calls_reply(("c1", "read_file", {"path": "notes.txt"})), answer("It says hello."), answer("ok"))
    start(rig)
    note = rig.out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "note")
    assert note[2].startswith("Instructions loaded: ~/.config/dashfloat/AGENTS.md (") and "AGENTS.md (" in note[2]
    rig.wait_idle(rig.prompt("what is in notes.txt?"))
    rig.wait_idle(rig.prompt("thanks"))
    bodies = rig.bodies()
    assert len(bodies) == 3
    system = bodies[0]["messages"][0]
    assert system["role"] == "system"
    text = system["content"]
    assert f"Working directory: {rig.root}" in text and "Today: " in text
    assert text.index("USER: answer in English.") < text.index("PROJECT: run make test")
    assert all(b["messages"][0] == system for b in bodies), "the same system message on every request"
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "tool"]


# ---- 2. compaction -------------------------------------------------------------------------------


def test_stubs_come_first_when_they_are_enough_no_summary_is_asked(rig):
    for i in range(4):
        (rig.root / f"f{i}.txt").write_text(prose(900, i) + "\n")
    script = []
    for i in range(4):
        script += [calls_reply((f"r{i}", "read_file", {"path": f"f{i}.txt"})), answer(f"read f{i}")]
    rig.server.push(*script, answer("fine"))
    j = journal_for(rig)
    start(rig, j, context_window=8000)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"read f{i}.txt"))
    t = rig.prompt("and now?")
    rig.wait_idle(t)
    assert summary_bodies(rig) == [], "no summary request: stubs were enough"
    entries = [m[2] for m in rig.out.of(M.SYSTEM) if m[2].startswith("context compacted:")]
    assert entries and "old tool outputs replaced by stubs; dropped nothing" in entries[0]
    last = rig.messages_of(len(rig.bodies()))
    stubs = [m for m in last if m["role"] == "tool" and C.is_stub(m["content"])]
    assert stubs and "read_file" in json.loads(stubs[0]["content"])["stub"]
    quit_agent(rig)
    (ev,) = [e for e in events(j) if e["type"] == "compact"][:1]
    assert ev["how"] == "stubs" and ev["before"] > 6400 >= ev["after"] and ev["reason"] == "auto"
    assert entries[0].startswith(f"context compacted: {C.short(ev['before'])} → {C.short(ev['after'])} tokens")


def test_checked_after_every_tool_result_a_turn_compacts_between_its_requests(rig):
    """One turn only: the model reads file after file. The estimate is checked before each
    request of the turn, not only when the user sends a prompt, and never while calls are
    pending: the compaction comes between two requests, and every request fits."""
    for i in range(8):
        (rig.root / f"f{i}.txt").write_text(prose(1200, i) + "\n")
    rig.server.push(*[calls_reply((f"r{i}", "read_file", {"path": f"f{i}.txt"})) for i in range(8)],
                    answer("read them all"))
    rig.server.responder = summariser
    start(rig, context_window=8000)
    t = rig.prompt("read f0..f7 one by one")
    rig.wait_idle(t, timeout=20)
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)][-1] == "done"
    assert len(rig.out.of(M.USER, t)) == 1, "one turn"
    assert any(m[2].startswith("context compacted:") for m in rig.out.of(M.SYSTEM, t))
    for body in chat_bodies(rig):
        assert C.estimate_tokens(body["messages"], body.get("tools")) <= 8000
        assert conversation.check(body["messages"][1:]) == []
    final = chat_bodies(rig)[-1]["messages"]
    assert final[1] == {"role": "user", "content": "read f0..f7 one by one"}, "the first request is pinned"


def test_a_summary_in_the_fixed_structure_replaces_the_older_turns_and_the_journal_has_both_figures(rig):
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("noted: " + prose(300))
    j = journal_for(rig)
    start(rig, j, context_window=8000)
    rig.wait_idle(rig.prompt("REMEMBER: colour = teal. " + prose(200)))
    for i in range(12):
        t = rig.prompt(f"step {i}: REMEMBER: step{i} = done{i}. " + prose(300, i))
        rig.wait_idle(t, timeout=20)
    (asked, *_rest) = summary_bodies(rig)
    assert "tools" not in asked
    for h in C.SUMMARY_HEADINGS:
        assert f"## {h}" in asked["messages"][1]["content"]
    last = rig.messages_of(len(rig.bodies()))
    assert last[0]["content"].startswith("REMEMBER: colour = teal."), "the first request stays first, verbatim"
    assert last[1]["content"].startswith(C.SUMMARY_PREFIX) and "## Exact next steps" in last[1]["content"]
    assert "REMEMBER: step0 = done0" in last[1]["content"], "what the summary kept"
    rig.server.responder = None
    quit_agent(rig)
    compacts = [e for e in events(j) if e["type"] == "compact"]
    assert compacts and all(e["after"] < e["before"] for e in compacts)
    summary = next(e for e in compacts if e["how"] == "summary")
    assert summary["summarised"] > 0 and summary["usage"] == {"prompt_tokens": 100, "completion_tokens": 50}
    shown = [m[2] for m in rig.out.seen if m[0] == M.SYSTEM and m[2].startswith("context compacted:")]
    assert f"context compacted: {C.short(summary['before'])} → {C.short(summary['after'])} tokens (summarised " \
        in "\n".join(shown)
    # a resume rebuilds the compacted conversation, and the journal holds the history once
    loaded = S.load(j.path)
    assert loaded.notes == []
    assert loaded.conversation == json.loads(json.dumps(rig.agent.messages))
    raw = j.path.read_bytes()
    assert raw.count(b"REMEMBER: step0 = done0") == 1 + sum(1 for e in compacts if e["how"] == "summary"), \
        "the prompt once, and each summary that carried it: never the conversation again"


def test_when_the_summariser_fails_the_oldest_turns_are_dropped_with_a_marker_and_the_request_fits(rig):
    rig.server.responder = lambda req: (json_reply(500, {"error": {"message": "summariser down"}}) if is_summary(req)
                                        else answer("ok " + prose(400)))
    j = journal_for(rig)
    start(rig, j, context_window=8000)
    for i in range(6):
        rig.wait_idle(rig.prompt(f"turn {i} " + prose(300, i)), timeout=20)
    assert summary_bodies(rig), "a summary was asked for"
    warn = [m[2] for m in rig.out.of(M.SYSTEM) if m[1] == "warn" and m[2].startswith("context compacted:")]
    assert warn and "without a summary: the summary request failed: " in warn[0] and "summariser down" in warn[0]
    last = rig.messages_of(len(rig.bodies()))
    assert last[1]["content"].startswith(C.DROPPED_PREFIX)
    for body in chat_bodies(rig):
        assert C.estimate_tokens(body["messages"], body.get("tools")) <= 8000 * 0.8 + 500
    assert rig.out.of(M.ASSISTANT_END)[-1][1] == "done", "the turn went on"
    rig.server.responder = None
    quit_agent(rig)
    (ev, *_more) = [e for e in events(j) if e["type"] == "compact"]
    assert ev["how"] == "dropped" and "summariser down" in ev["failed"] and ev["after"] < ev["before"]


def prompt_until_an_error(rig, turns: int) -> tuple[int, str] | None:
    """Prompt turn after turn (each a little longer conversation) until one ends with an error
    entry: (its mark, the first error's text), or None after `turns` turns."""
    for i in range(turns):
        t = rig.prompt(f"turn {i} " + prose(100, i))
        rig.wait_idle(t, timeout=20)
        errors = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]
        if errors:
            return t, errors[0]
    return None


def test_three_failed_compactions_in_a_row_stop_the_turn_with_a_clear_entry(rig):
    rig.server.responder = lambda req: (json_reply(500, {"error": {"message": "no"}}) if is_summary(req)
                                        else answer("ok " + prose(600)))
    start(rig, context_window=8000)
    stopped = prompt_until_an_error(rig, 20)
    assert stopped is not None, "three failures never stopped a turn"
    t, text = stopped
    assert text.startswith("Context compaction failed 3 times in a row (last: the summary request failed")
    assert "/compact tries again, /clear starts a fresh conversation" in text
    assert rig.out.of(M.ASSISTANT_START, t) == [], "the stopped turn sent no request"
    assert len([m for m in rig.out.seen if m[0] == M.SYSTEM and m[2].startswith("context compacted:")]) == 3


@pytest.mark.parametrize("usage", [{"prompt_tokens": 900, "completion_tokens": 300, "total_tokens": 1200}, None],
                         ids=["counted", "estimated"])
def test_compact_on_demand_with_a_focus_then_clear_starts_a_fresh_conversation(rig, usage):
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer(
        "answer " + prose(200), usage=usage)
    j = journal_for(rig)
    synced = sync_spy(j)
    start(rig, j, context_window=16000)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(200, i)))
    before = len(rig.agent.messages)
    t = rig.prompt("/compact keep the parser's API")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("context compacted:"), since=t)
    rig.wait_idle(t)
    (asked,) = summary_bodies(rig)
    assert "pay special attention to: keep the parser's API" in asked["messages"][1]["content"]
    assert len(rig.agent.messages) < before and rig.agent.messages[1]["content"].startswith(C.SUMMARY_PREFIX)
    assert not rig.out.of(M.USER, t), "/compact is not a prompt"
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["done"]
    assert not rig.out.of(M.USAGE, t), "the last turn's usage is not shown again"
    ((_, c),) = rig.out.of(M.COMPACTED, t)  # what a headless run's compaction event says
    assert c["reason"] == "/compact" and c["how"] == "summary" and c["after"] < c["before"] and c["failed"] is None
    assert rig.agent.meter.run.requests == 5, "the summary request is metered like the four turns"
    t = rig.prompt("/clear")
    cleared = rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("Started a fresh conversation"), since=t)
    assert "no longer sees the earlier" in cleared[2]
    rig.out.wait_kind(M.TURN_END, since=t)
    types = [json.loads(x)["type"] for x in j.path.read_bytes().splitlines()]
    assert "clear" in types and synced[-1] == types[-1], "synced with the clear in it"
    rig.wait_idle(rig.prompt("new topic"))
    assert rig.messages_of(len(rig.bodies())) == [{"role": "user", "content": "new topic"}]
    rig.server.responder = None
    quit_agent(rig)
    loaded = S.load(j.path)
    assert loaded.conversation == json.loads(json.dumps(rig.agent.messages))
    assert loaded.conversation[0] == {"role": "user", "content": "new topic"}
    assert [e["reason"] for e in events(j) if e["type"] == "compact"] == ["/compact"]
    assert loaded.turns == 5, "the session's turns go on after /clear"


def held_summary(rig):
    """Four turns in a small window, the summary request's answer held back: (the event
    that releases it, the conversation before /compact)."""
    import threading

    held = threading.Event()
    rig.server.responder = lambda req: (sse_reply(["## never used"], hold=held) if is_summary(req)
                                        else answer("answer " + prose(300)))
    start(rig, context_window=8000)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(300, i)))
    return held, [dict(m) for m in rig.agent.messages]


def test_esc_during_the_summary_request_leaves_the_conversation_as_it_was(rig):
    held, before = held_summary(rig)
    t = rig.prompt("/compact")
    wait_until(lambda: summary_bodies(rig), "the summary request")
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    # no turn of the model's was stopped: /compact's own
    assert "Compaction cancelled: the conversation is as it was." in rig.system(t, "info")
    assert rig.agent.messages == before
    held.set()
    rig.server.responder = None


def test_a_crash_during_the_summary_request_ends_that_turn_and_leaves_the_conversation_as_it_was(rig):
    held, before = held_summary(rig)
    crash_on(rig.agent, M.T_NOTE)
    t = rig.prompt("/compact")
    wait_until(lambda: summary_bodies(rig), "the summary request")
    rig.agent.send((M.T_NOTE, 0, "x", "y"))
    rig.out.wait_kind(M.TURN_END, "error", since=t)
    assert rig.agent.alive and not rig.out.of(M.AGENT_DOWN)
    assert rig.agent.messages == before
    held.set()
    rig.server.responder = None
    rig.server.push(answer("still here"))
    t = rig.prompt("go on")
    rig.out.wait_kind(M.TURN_END, "done", since=t)
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "still here"}
    assert not rig.out.of(M.COMPACTED), "the summary that came after the crash was not used"


def test_a_crash_just_after_an_automatic_compaction_leaves_the_next_prompt_checked_against_the_window(
        rig, monkeypatch):
    """A bug between the compaction and the request it made room for ends that turn: the next
    prompt's request is checked again, not sent as one that was just compacted for."""
    crashed = []
    real = conversation.repair

    def repair(messages):
        if summary_bodies(rig) and not crashed:  # the request after the summary
            crashed.append(True)
            raise RuntimeError("boom")
        return real(messages)

    monkeypatch.setattr(conversation, "repair", repair)
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("answer " + prose(300))
    start(rig, context_window=8000)
    for i in range(20):
        t = rig.prompt(f"turn {i}: " + prose(300, i))
        rig.out.wait_kind(M.TURN_END, since=t)
        if crashed:
            break
    assert crashed, "an automatic compaction, then the crash"
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["error"]
    t = rig.prompt("and now this: " + prose(4500))  # over the window with what the compaction left
    rig.out.wait_kind(M.TURN_END, since=t)
    for body in chat_bodies(rig):
        assert C.estimate_tokens(body["messages"], body.get("tools")) <= 8000
    rig.server.responder = None


def test_a_refused_request_teaches_the_window_compacts_and_is_sent_once_more(rig):
    overflow = json_reply(400, {"error": {"message": "This model's maximum context length is 6000 tokens. However, "
                                                     "your messages resulted in 9100 tokens.",
                                          "type": "invalid_request_error", "code": "context_length_exceeded"}})
    rig.server.push(*[answer("ok " + prose(300)) for _ in range(4)], overflow)
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("after the refusal")
    start(rig)  # the endpoint states no window: 32,768 assumed
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(350, i)))
    t = rig.prompt("one more")
    rig.wait_idle(t, timeout=20)
    warns = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "warn"]
    assert any("refused the request as too long" in w and "its window is 6,000 tokens" in w for w in warns)
    assert rig.agent._ctx.window == 6000
    assert [m[1] for m in rig.out.of(M.ASSISTANT_END, t)] == ["error", "done"], "the refused answer ends as an error"
    assert [m[2] for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("Compacting the context")][0].startswith(
        "Compacting the context, the server refused the last request as too long; the window is 6,000 tokens "
        "(from the server's error)")
    final = chat_bodies(rig)[-1]
    assert C.estimate_tokens(final["messages"], final.get("tools")) <= 6000 * 0.8
    assert not [m for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]
    # every turn gets its own retry: a later refusal (a smaller window still) compacts again
    refuse = [json_reply(400, {"error": {"message": "This model's maximum context length is 5000 tokens. However, "
                                                    "your messages resulted in 5200 tokens.",
                                         "type": "invalid_request_error", "code": "context_length_exceeded"}})]

    def respond(req):
        if is_summary(req):
            return summariser(req)
        return refuse.pop() if refuse else answer("after the second refusal")

    rig.server.responder = respond
    t = rig.prompt("and one more")
    rig.wait_idle(t, timeout=20)
    assert not refuse and rig.agent._ctx.window == 5000
    assert rig.out.of(M.ASSISTANT_END, t)[-1][1] == "done"
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "after the second refusal"}
    assert not [m for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]


def test_a_refusal_with_nothing_to_compact_is_shown_not_sent_again(rig):
    """The first request itself is refused: the server's count calibrates the estimate, there
    is nothing to take out, so the same request is not sent again and the error is shown."""
    rig.server.push(json_reply(400, {"error": {"message": "request (9000 tokens) exceeds the available context "
                                                          "size (4096 tokens), try increasing it",
                                               "type": "exceed_context_size_error", "n_prompt_tokens": 9000,
                                               "n_ctx": 4096}}))
    start(rig)
    t = rig.prompt("hello")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 1, "not sent again"
    errors = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]
    assert errors and "too long for the model's context window" in errors[0] and "/clear" in errors[0]
    assert not [m for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("context compacted")], "no empty compaction"
    assert rig.agent._ctx.window == 4096 and rig.agent._ctx.ratio > 1


def test_the_window_comes_from_the_endpoints_model_list(rig):
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [
        {"id": "other", "max_model_len": 100000}, {"id": "test-model", "object": "model", "max_model_len": 12288}]})
    start(rig)
    wait_until(lambda: rig.agent._ctx.window == 12288, "the window from GET /models")
    assert rig.agent._ctx.source == "the endpoint's model list"


def test_another_model_gets_its_own_window(rig):
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [
        {"id": "other", "max_model_len": 100000}, {"id": "test-model", "max_model_len": 12288}]})
    start(rig)
    wait_until(lambda: rig.agent._ctx.window == 12288, "the first model's window")
    rig.agent._ctx.set_window(4096, "the server's error")  # as a refusal would have taught it
    rig.agent.send((M.PROMPT, "/model other"))
    wait_until(lambda: rig.agent._ctx.window == 100000, "the other model's window")


def test_lm_studio_is_asked_through_its_own_api(rig):
    """LM Studio's OpenAI list says nothing of the window; its own list says what the loaded
    instance has (4,096 by default, far less than the model's maximum)."""
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [
        {"id": "test-model", "object": "model", "owned_by": "organization_owner"}]})
    rig.server.routes["/api/v1/models"] = json_reply(200, {"models": [
        {"type": "llm", "key": "test-model", "max_context_length": 131072,
         "loaded_instances": [{"id": "test-model", "config": {"context_length": 4096}}]}]})
    start(rig)
    wait_until(lambda: rig.agent._ctx.window == 4096, "the loaded instance's window")
    assert rig.agent._ctx.source == "LM Studio's model list"


def test_an_older_lm_studio_is_asked_for_the_one_model(rig):
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [
        {"id": "test-model", "object": "model", "owned_by": "organization_owner"}]})
    rig.server.routes["/api/v0/models/test-model"] = json_reply(200, {
        "id": "test-model", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 8192})
    start(rig)
    wait_until(lambda: rig.agent._ctx.window == 8192, "the v0 answer's loaded window")
    paths = [r["path"] for r in rig.server.requests if r["method"] == "GET"]
    assert paths == ["/v1/models", "/api/v1/models", "/api/v0/models/test-model"]


def test_a_configured_window_is_not_asked_for(rig):
    start(rig, context_window=5000)
    t = rig.prompt("/help")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("Commands"), since=t)
    assert not [r for r in rig.server.requests if r["method"] == "GET"]
    assert rig.agent._ctx.window == 5000


def test_a_resumed_session_rereads_the_instructions(rig):
    (rig.root / "AGENTS.md").write_text("OLD RULE\n")
    rig.server.push(answer("one"), answer("two"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("hi"))
    quit_agent(rig)
    (rig.root / "AGENTS.md").write_text("NEW RULE\n")
    restart(rig, j.path)
    rig.wait_idle(rig.prompt("again"))
    system = rig.bodies()[-1]["messages"][0]["content"]
    assert "NEW RULE" in system and "OLD RULE" not in system


# ---- 6. a long session -------------------------------------------------------------------------

_TOKEN = re.compile(r" ?[A-Za-z]{1,8}| ?\d{1,3}|\s+|[^\sA-Za-z\d]")


def server_count(body: dict) -> int:
    """The server's own token count of a request (a BPE-like split: a word up to 8 letters
    with its space, digits in threes, each punctuation mark), not DashFloat's estimate."""
    n = 0
    for m in body["messages"]:
        n += 4 + len(_TOKEN.findall(m.get("content") or ""))
        for c in m.get("tool_calls") or ():
            n += 8 + len(_TOKEN.findall(c["function"]["name"] + c["function"]["arguments"]))
    if body.get("tools"):
        n += len(_TOKEN.findall(json.dumps(body["tools"])))
    return n


@pytest.mark.parametrize("window, turns, every, lines", [
    (8000, 240, 3, 60),  # the case: a small window, a file read every third turn
    (32768, 120, 1, 250),  # a tool-heavy session: a 16 KB file read every turn
])
def test_a_long_session_never_sends_a_request_over_the_window_and_keeps_what_it_was_told(rig, window, turns, every,
                                                                                          lines):
    for i in range(12):
        (rig.root / f"src{i}.py").write_text("".join(f"def f{i}_{k}(x):\n    return x * {k}  # {prose(8, k)}\n"
                                                     for k in range(lines)))
    facts = {1: "REMEMBER: deploy-key = vault-slot-7", turns // 4: "REMEMBER: db-port = 6543",
             turns * 5 // 8: "REMEMBER: owner = ada", turns - 10: "REMEMBER: release = friday"}
    counts: list[int] = []

    def model(req):
        body = req["json"]
        count = server_count(body)
        counts.append(count)
        usage = {"prompt_tokens": count, "completion_tokens": 80}
        if count > window:
            return json_reply(400, {"error": {"message": f"This model's maximum context length is {window} tokens. "
                                                         f"However, your messages resulted in {count} tokens.",
                                              "code": "context_length_exceeded"}})
        if is_summary(req):
            return summariser(req)
        msgs = body["messages"]
        last = msgs[-1]
        if last["role"] == "user" and "what were you told to remember" in last["content"]:
            told = remembered("\n".join(m.get("content") or "" for m in msgs))
            return sse_reply(["; ".join(told)], usage=usage)
        turn = int(re.search(r"turn (\d+)", last["content"]).group(1)) if last["role"] == "user" else -1
        if last["role"] == "user" and turn % every == 0:
            return calls_reply((f"c{turn}", "read_file", {"path": f"src{turn % 12}.py"}), usage=usage)
        return sse_reply([f"Turn done. {prose(60, turn)}"], usage=usage)

    rig.server.responder = model
    j = journal_for(rig)
    start(rig, j, context_window=window)
    for turn in range(1, turns + 1):
        text = f"turn {turn}: {facts.get(turn, '')} please look at the next part. {prose(40, turn)}"
        rig.wait_idle(rig.prompt(text), timeout=20)
    t = rig.prompt("turn 0: what were you told to remember?")
    rig.wait_idle(t, timeout=20)
    reply = "".join(m[1] for m in rig.out.of(M.TOKEN, t))
    assert remembered(reply) == sorted(facts.values()), reply
    assert max(counts) <= window, f"a request of {max(counts)} tokens by the server's count"
    assert not [m for m in rig.out.seen if m[0] == M.SYSTEM and m[1] == "error"]
    rig.server.responder = None
    quit_agent(rig)
    compacts = [e for e in events(j) if e["type"] == "compact"]
    assert len(compacts) >= 10 and all(e["after"] < e["before"] for e in compacts)
    assert S.load(j.path).conversation == json.loads(json.dumps(rig.agent.messages))
    by_how: dict[str, list[float]] = {}
    for e in compacts:
        by_how.setdefault(e["how"], []).append(e["after"] / e["before"])
    figures = ", ".join(f"{how} {len(r)}x, after/before median {sorted(r)[len(r) // 2]:.2f} "
                        f"({min(r):.2f}-{max(r):.2f})" for how, r in sorted(by_how.items()))
    print(f"\n{len(compacts)} compactions over {turns} turns, {len(counts)} requests, the largest "
          f"{max(counts)} tokens by the server's count (window {window}): {figures}")


def test_a_long_summary_kept_apart_from_the_journal_comes_back_on_resume(rig):
    """A summary over the journal's BIG threshold goes to the store like any long string; the
    resume reads it back into the compacted conversation."""
    from dashfloat import journal as J

    j = journal_for(rig)
    j.begin(title="t")
    conv = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "a" * 9000},
            {"role": "user", "content": "second"}, {"role": "assistant", "content": "b"}]
    j.event("prompt", turn=1, text="first")
    j.event("answer", status="done", content="a" * 9000)
    j.event("turn_end", turn=1)
    j.event("prompt", turn=2, text="second")
    j.event("answer", status="done", content="b")
    summary = C.summary_message("## Goal\n" + "kept " * 1500, "1 earlier message")
    assert len(summary) > J.BIG
    ops = [["replace", 1, 2, summary]]
    j.event("compact", reason="auto", how="summary", before=9, after=3, window=8000, length=4, ops=ops)
    j.event("turn_end", turn=2)
    j.close()
    assert summary.encode() not in j.path.read_bytes(), "stored once, apart"
    loaded = S.load(j.path)
    assert loaded.notes == []
    assert loaded.conversation == C.apply_ops(conv, ops)
    assert loaded.conversation[1]["content"] == summary


def test_the_first_request_of_a_resumed_session_is_checked_against_the_window(rig):
    for i in range(4):
        (rig.root / f"f{i}.txt").write_text(prose(900, i) + "\n")
    script = []
    for i in range(4):
        script += [calls_reply((f"r{i}", "read_file", {"path": f"f{i}.txt"})), answer(f"read f{i}")]
    rig.server.push(*script, answer("fine"))
    j = journal_for(rig)
    start(rig, j)  # the default window: nothing is compacted yet
    for i in range(4):
        rig.wait_idle(rig.prompt(f"read f{i}.txt"))
    assert not [m for m in rig.out.of(M.SYSTEM) if m[2].startswith("context compacted:")]
    quit_agent(rig)
    restart(rig, j.path, context_window=8000)
    t = rig.prompt("and now?")
    rig.wait_idle(t)
    assert [m for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("context compacted:")]
    assert C.estimate_tokens(chat_bodies(rig)[-1]["messages"]) <= 8000


# ---- the window's answer, the compaction's entries, the metering and a refusal without figures ----


def test_the_window_answer_is_logged_and_one_for_another_model_is_ignored(rig, caplog):
    caplog.set_level(logging.INFO, logger="dashfloat.agent")
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [{"id": "test-model", "max_model_len": 12288}]})
    start(rig)
    wait_until(lambda: rig.agent._ctx.window == 12288, "the window from GET /models")
    assert "context window of test-model: 12288 tokens (the endpoint's model list)" in caplog.text
    rig.agent.send((M.WINDOW, "other", 99999, "a list that came too late"))
    t = rig.prompt("/help")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("Commands"), since=t)
    assert rig.agent._ctx.window == 12288, "an answer for a model no longer in use changes nothing"
    # a later answer for this model that states no window: the default again, and said so
    rig.agent.send((M.WINDOW, "test-model", None, ""))
    wait_until(lambda: rig.agent._ctx.window == C.DEFAULT_WINDOW, "the default window")
    assert rig.agent._ctx.source == "default"
    assert (f"context window of test-model: not stated (the model list says nothing); {C.DEFAULT_WINDOW} assumed"
            in caplog.text)


def test_a_failing_model_list_is_logged_and_the_default_window_kept(rig, caplog):
    caplog.set_level(logging.INFO, logger="dashfloat.agent")
    rig.server.models_reply = json_reply(500, {"error": {"message": "the list is down"}})
    start(rig)
    wait_until(lambda: "the endpoint's model list gave no context window: " in caplog.text, "the log line")
    assert "the list is down" in caplog.text.split("the endpoint's model list gave no context window: ")[1]
    assert rig.agent._ctx.window == C.DEFAULT_WINDOW


def test_compact_says_why_and_the_window_and_nothing_to_compact_is_said(rig, caplog):
    caplog.set_level(logging.INFO, logger="dashfloat.agent")
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("answer " + prose(200))
    start(rig, context_window=16000)
    rig.wait_idle(rig.prompt("turn 0: " + prose(200)))
    t = rig.prompt("/compact")
    rig.wait_idle(t)
    infos = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "info"]
    (info,) = infos
    assert re.fullmatch(r"Nothing to compact: the conversation is its first request and its most recent turn "
                        r"\([\d.]+k tokens; the window is 16,000 tokens \(from the configuration\), compacted "
                        r"above 80%\)\.", info), info
    for i in range(1, 4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(200, i)))
    t = rig.prompt("/compact")
    rig.wait_idle(t)
    seen = rig.out.seen[t:]
    (compacting,) = [m for m in seen if m[0] == M.SYSTEM and m[2].startswith("Compacting the context")]
    assert compacting[1] == "info" and compacting[2].startswith(
        "Compacting the context, as asked (/compact); the window is 16,000 tokens (from the configuration), "
        "compacted above 80%. Summarising ")
    assert seen.index(M.phase("waiting")) < seen.index(compacting), "waiting for the summary is shown"
    (done,) = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("context compacted:")]
    assert done in caplog.text, "the log has the entry"


def test_a_crashed_summary_request_is_a_failed_one(rig):
    from dashfloat.llm import client

    def stream(endpoint, model, request, **kw):
        if request[0]["content"] == C.SUMMARISER_SYSTEM:
            raise RuntimeError("boom")
        return client.stream_chat(endpoint, model, request, **kw)

    rig.server.responder = lambda req: answer("answer " + prose(300))
    start(rig, context_window=8000, stream_fn=stream)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(300, i)))
    t = rig.prompt("/compact")
    rig.wait_idle(t)
    (entry,) = [m for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("context compacted:")]
    assert entry[1] == "warn" and "the summary request crashed: RuntimeError: boom" in entry[2]
    assert rig.agent.messages[1]["content"].startswith(C.DROPPED_PREFIX)


def test_a_summary_request_without_usage_is_metered_by_the_estimate_of_what_it_sent_and_got(rig):
    from dashfloat import metering

    body = "\n\n".join(f"## {h}\nnone" for h in C.SUMMARY_HEADINGS)
    rig.server.responder = lambda req: (sse_reply([body], reasoning=["thinking it over " * 20]) if is_summary(req)
                                        else answer("answer " + prose(300)))
    j = journal_for(rig)
    start(rig, j, context_window=8000)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(300, i)))
    t = rig.prompt("/compact")
    rig.wait_idle(t)
    assert rig.agent.messages[1]["content"].startswith(C.SUMMARY_PREFIX)
    rig.server.responder = None
    quit_agent(rig)
    (asked,) = summary_bodies(rig)
    usage = [e for e in events(j) if e["type"] == "usage"][-1]
    assert usage["estimated"] is True
    assert usage["prompt"] == C.estimate_tokens(asked["messages"])
    assert usage["completion"] == metering.estimate_text(body) + metering.estimate_text("thinking it over " * 20)


def test_esc_during_an_automatic_compaction_stops_the_turn_and_says_so(rig):
    """The compaction before a turn's request is that turn's: cancelling it stops the turn,
    and the entry says both (the conversation as it was, and the turn stopped)."""
    import threading

    held = threading.Event()
    rig.server.responder = lambda req: (sse_reply(["## never used"], hold=held) if is_summary(req)
                                        else answer("answer " + prose(300)))
    start(rig, context_window=8000)
    for i in range(20):
        t = rig.prompt(f"turn {i}: " + prose(300, i))
        rig.out.wait(lambda m: (m[0] == M.PHASE and m[1] == "idle") or summary_bodies(rig), since=t)
        if summary_bodies(rig):
            break
    assert summary_bodies(rig), "an automatic compaction"
    before = [dict(m) for m in rig.agent.messages]
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    held.set()
    assert ("Compaction cancelled: the conversation is as it was. Turn stopped. Say what to do instead."
            in rig.system(t, "info"))
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["cancelled"]
    assert rig.agent.messages == before
    rig.server.responder = None


def test_esc_on_the_request_after_an_automatic_compaction_stops_that_request(rig):
    import threading

    held = threading.Event()

    def respond(req):
        if is_summary(req):
            return summariser(req)
        if summary_bodies(rig):
            return answer("never shown", hold=held)
        return answer("answer " + prose(300))

    rig.server.responder = respond
    start(rig, context_window=8000)
    for i in range(20):
        t = rig.prompt(f"turn {i}: " + prose(300, i))
        rig.out.wait(lambda m: (m[0] == M.PHASE and m[1] == "idle") or m[0] == M.ASSISTANT_START, since=t)
        if summary_bodies(rig):
            break
        rig.wait_idle(t)
    assert summary_bodies(rig), "an automatic compaction"
    rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("context compacted:"), since=t)
    wait_until(lambda: rig.out.of(M.ASSISTANT_START, t), "the request after it")
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    held.set()
    assert not [m for m in rig.out.of(M.SYSTEM, t) if m[2].startswith("Compaction cancelled")]
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["cancelled"]
    rig.server.responder = None


def test_a_compaction_that_succeeds_resets_the_count_of_failures(rig):
    asked = []

    def respond(req):
        if is_summary(req):
            asked.append(req)
            return summariser(req) if len(asked) == 3 else json_reply(500, {"error": {"message": "no"}})
        return answer("ok " + prose(600))

    rig.server.responder = respond
    start(rig, context_window=8000)
    stopped = prompt_until_an_error(rig, 40)
    assert stopped is not None and stopped[1].startswith("Context compaction failed 3 times in a row")
    entries = [m for m in rig.out.seen if m[0] == M.SYSTEM and m[2].startswith("context compacted:")]
    assert [m[1] for m in entries] == ["warn", "warn", "info", "warn", "warn", "warn"], \
        "failed, failed, summarised: the count starts again, and the third failure after it stops"
    rig.server.responder = None


def test_a_conversation_that_does_not_fit_even_compacted_ends_the_turn_unsent(rig):
    """A window smaller than the system message and the tools: the first turns go (nothing to
    take out), the one after a turn that can be summarised stops unsent, with the entry."""
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("ok " + prose(50))
    start(rig, context_window=2000)
    errors: list = []
    for i in range(5):
        sent = len(chat_bodies(rig))
        t = rig.prompt(f"turn {i}: " + prose(50, i))
        end = rig.out.wait(lambda m: m[0] == M.TURN_END, since=t)
        errors = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]
        if errors:
            break
    assert end[1] == "error" and i >= 1
    assert errors[0].startswith("The conversation does not fit the context window even compacted: ")
    assert "/clear starts a fresh conversation" in errors[0] and "raise context_window" in errors[0]
    assert len(chat_bodies(rig)) == sent, "nothing sent"
    rig.server.responder = None


def test_a_request_exactly_at_the_threshold_goes_as_it_is(rig):
    for i in range(2):
        (rig.root / f"f{i}.txt").write_text(prose(900, i) + "\n")
    rig.server.push(calls_reply(("r0", "read_file", {"path": "f0.txt"})), answer("read f0"),
                    calls_reply(("r1", "read_file", {"path": "f1.txt"})), answer("read f1"), answer("fine"))
    start(rig, context_window=10**6, compact_threshold=1.0)
    for i in range(2):
        rig.wait_idle(rig.prompt(f"read f{i}.txt"))
    agent, prompt = rig.agent, {"role": "user", "content": "and now?"}
    agent._ctx.set_window(agent._ctx.estimate(agent.messages + [prompt], agent._tools()), "test")  # at rest
    nxt = chat_bodies(rig)[-1]["messages"] + [{"role": "assistant", "content": "read f1"}, prompt]
    t = rig.prompt("and now?")
    rig.wait_idle(t)
    assert chat_bodies(rig)[-1]["messages"] == nxt and rig.system(t) == [], "sent as it was: nothing compacted"


def refused(message: str):
    return json_reply(400, {"error": {"message": message, "type": "invalid_request_error",
                                      "code": "context_length_exceeded"}})


def test_a_refusal_that_names_no_window_takes_the_window_below_what_was_sent(rig):
    rig.server.push(*[answer("ok " + prose(300)) for _ in range(4)], refused("the prompt is too long for this model"))
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("after the refusal")
    start(rig)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(350, i)))
    t = rig.prompt("one more")
    rig.wait_idle(t, timeout=20)
    refused_body = chat_bodies(rig)[4]
    sent = C.estimate_tokens(refused_body["messages"], refused_body.get("tools"))
    window = rig.agent._ctx.window
    assert 0.9 * sent <= window <= 0.95 * sent, (window, sent)
    (warn,) = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "warn"]
    assert f"(the window is taken to be {window:,} tokens): compacting, then sending it once more." in warn
    assert rig.agent.messages[-1] == {"role": "assistant", "content": "after the refusal"}


def test_a_refusal_of_a_small_request_that_names_no_window_takes_at_least_1024(rig):
    rig.server.push(refused("the prompt is too long for this model"))
    start(rig, tools_enabled=False)
    t = rig.prompt("hello")
    rig.wait_idle(t)
    (warn,) = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "warn"]
    assert "(the window is taken to be 1,024 tokens)" in warn
    assert rig.agent._ctx.window == 1024 and rig.agent._ctx.source == "estimated after a refusal"


def test_a_refusal_naming_the_window_already_known_takes_it_below_what_was_sent(rig):
    """The estimate was too low, not the window wrong: the window is taken from what was sent."""
    rig.server.push(*[answer("ok " + prose(300)) for _ in range(2)],
                    refused("This model's maximum context length is 8000 tokens."))
    rig.server.responder = lambda req: summariser(req) if is_summary(req) else answer("after the refusal")
    start(rig, context_window=8000)
    for i in range(2):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(350, i)))
    t = rig.prompt("one more")
    rig.wait_idle(t, timeout=20)
    (warn,) = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "warn"]
    assert "(the window is taken to be " in warn and rig.agent._ctx.window < 8000
    assert rig.agent._ctx.source == "estimated after a refusal"


def test_a_second_refusal_in_the_same_turn_is_shown_not_retried_again(rig):
    windows = [3000, 6000]
    rig.server.push(*[answer("ok " + prose(300)) for _ in range(4)])

    def respond(req):
        if is_summary(req):
            return summariser(req)
        if windows:
            return refused(f"This model's maximum context length is {windows.pop()} tokens.")
        return answer("never asked")

    rig.server.responder = respond
    start(rig)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(350, i)))
    before = len(chat_bodies(rig))
    t = rig.prompt("one more")
    rig.wait_idle(t, timeout=20)
    assert len(chat_bodies(rig)) == before + 2, "sent, refused, compacted, sent once more, refused: shown"
    assert rig.agent._ctx.window == 6000
    errors = [m[2] for m in rig.out.of(M.SYSTEM, t) if m[1] == "error"]
    assert errors and "too long for the model's context window" in errors[0]
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["error"]
    rig.server.responder = None


def test_the_answer_of_a_cancelled_summary_request_is_not_taken_for_the_next_ones(rig):
    """/compact, Esc while the summary request is out (its worker goes on), /compact again:
    the first request's answer, coming in while the second is out, is not used."""
    import threading

    from dashfloat.llm import client

    gates = [threading.Event(), threading.Event()]
    entered: list = []

    def stream(endpoint, model, request, **kw):
        if request[0]["content"] != C.SUMMARISER_SYSTEM:
            return client.stream_chat(endpoint, model, request, **kw)
        n = len(entered)
        entered.append(threading.current_thread())
        assert gates[n].wait(10)
        return client.stream_chat(endpoint, model, request, on_event=kw["on_event"], cancel=client.CancelToken())

    numbered = []

    def respond(req):
        if not is_summary(req):
            return answer("answer " + prose(300))
        numbered.append(req)
        return sse_reply(["\n\n".join(f"## {h}\nsummary number {len(numbered)}" for h in C.SUMMARY_HEADINGS)])

    rig.server.responder = respond
    start(rig, context_window=8000, stream_fn=stream)
    for i in range(4):
        rig.wait_idle(rig.prompt(f"turn {i}: " + prose(300, i)))
    t = rig.prompt("/compact")
    wait_until(lambda: len(entered) == 1, "the first summary request")
    rig.agent.send((M.CANCEL,))
    rig.wait_idle(t)
    t = rig.prompt("/compact")
    wait_until(lambda: len(entered) == 2, "the second summary request")
    gates[0].set()
    entered[0].join(10)  # its answer is in the agent's inbox
    assert not entered[0].is_alive()
    gates[1].set()
    rig.wait_idle(t)
    assert [m[1] for m in rig.out.of(M.TURN_END, t)] == ["done"]
    assert len(numbered) == 2
    summary = rig.agent.messages[1]["content"]
    assert summary.startswith(C.SUMMARY_PREFIX) and "summary number 2" in summary and "number 1" not in summary
    rig.server.responder = None
