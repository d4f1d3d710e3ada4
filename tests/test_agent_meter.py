"""Metering, budgets, the repeat guard and the slash commands of issue 10 (sections 3 and 5),
with the real Agent against the scripted HTTP server (real SSE usage chunks) and a real
session journal."""

from __future__ import annotations

import json
import threading

import pytest

from dashfloat import context, metering
from dashfloat import messages as M
from dashfloat import sessions as S
from dashfloat.agent import Agent, sessions_text
from dashfloat.journal import Journal
from dashfloat.metering import Budgets, Price
from dashfloat.tools.permissions import Policy
from dashfloat.tools.rules import parse_rule
from tests.fakeserver import json_reply
from tests.test_agent_tools import MODEL, answer, calls_reply, result_of, sse_reply

U1 = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
      "prompt_tokens_details": {"cached_tokens": 800}}
U2 = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}


def journal_for(rig, sid="00112233aabbccdd") -> Journal:
    path = rig.root.parent / "state" / "sessions" / S.project_key(str(rig.root)) / f"{sid}.jsonl"
    return Journal(path, {"id": sid, "cwd": str(rig.root), "model": MODEL})


def events(journal: Journal, type_: str) -> list[dict]:
    journal.sync()
    out = []
    for line in journal.path.read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") == type_:
            out.append(ev)
    return out


def meters(rig, since=0) -> list[dict]:
    return [m[1] for m in rig.out.of(M.METER, since)]


# ---- metering -------------------------------------------------------------------------------------


def test_every_request_is_metered_and_the_ui_context_figure_stays_the_final_episodes(rig):
    (rig.root / "a.txt").write_text("x\n")
    rig.server.push(calls_reply(("c1", "read_file", {"path": "a.txt"}), usage=U1), answer("Done.", usage=U2))
    j = journal_for(rig)
    rig.start(journal=j, prices={MODEL: Price(input=1.0, output=2.0, cached_input=0.1)})
    t = rig.prompt("read it")
    rig.wait_idle(t)
    assert rig.out.of(M.USAGE, t) == [(M.USAGE, U2)]  # the display rule of ADR 0007 §5 is kept
    first, last = meters(rig, t)
    assert first["requests"] == 1 and first["tokens"] == 1050 and first["estimated"] is False
    assert last["requests"] == 2 and last["tokens"] == 1050 + 1230
    cost1 = (200 * 1.0 + 800 * 0.1 + 50 * 2.0) / 1e6
    cost2 = (1200 * 1.0 + 30 * 2.0) / 1e6
    assert last["cost"] == pytest.approx(cost1 + cost2)
    (u1, u2) = events(j, "usage")
    assert (u1["prompt"], u1["cached"], u1["completion"], u1["turn"]) == (1000, 800, 50, 1)
    assert u1["cost"] == pytest.approx(cost1) and "estimated" not in u1
    assert (u2["prompt"], u2["completion"]) == (1200, 30)
    # a resumed session sums them back (shown by /usage, not counted by the budgets)
    loaded = S.load(j.path)
    assert loaded.meter["requests"] == 2 and loaded.meter["prompt"] == 2200 and loaded.meter["cached"] == 800
    assert loaded.meter["cost"] == pytest.approx(cost1 + cost2)
    again = Agent(rig.agent.endpoint, MODEL, lambda m: None, root=str(rig.root), resumed=loaded,
                  budgets=Budgets(max_turns=2))
    assert again.meter.earlier.requests == 2 and again.meter.earlier.cost == pytest.approx(cost1 + cost2)
    assert again.meter.check(MODEL) is None  # the budgets count this run only
    assert "Before this run (the resumed session): 2 requests, 2,280 tokens" in again.meter.report(MODEL)


def test_a_provider_without_usage_is_estimated_and_marked(rig):
    rig.server.push(answer("x" * 400))  # no usage chunk at all
    j = journal_for(rig)
    rig.start(journal=j)
    t = rig.prompt("y" * 4000)
    rig.wait_idle(t)
    (m,) = meters(rig, t)
    assert m["estimated"] is True and m["requests"] == 1
    (body,) = rig.bodies()  # the estimate of what went (system message and tools array) and of the answer
    sent = context.estimate_tokens(body["messages"], body["tools"])
    # the agent adds the system message to the rest's estimate, rounded down apart: one token less at
    # most, as the length of the root's path in the system message falls
    assert sent - 1 <= m["tokens"] - metering.estimate_text("x" * 400) <= sent
    (u,) = events(j, "usage")
    assert u["estimated"] is True and u["completion"] == metering.estimate_text("x" * 400) == 114


def test_an_answer_without_usage_counts_its_calls_in_the_estimate_of_its_output(rig):
    rig.server.push(calls_reply(("c1", "list_directory", {"path": "."})), answer("x"))
    j = journal_for(rig)
    rig.start(journal=j)
    rig.wait_idle(rig.prompt("look"))
    first = events(j, "usage")[0]
    assert first["estimated"] is True
    assert first["completion"] == metering.estimate_text('list_directory{"path": "."}')


def test_the_journal_keeps_a_requests_cost_to_eight_decimals(rig):
    rig.server.push(answer("x", usage={"prompt_tokens": 1000, "completion_tokens": 0}))
    j = journal_for(rig)
    rig.start(journal=j, prices={MODEL: Price(input=0.123456789, output=0.0)})
    rig.wait_idle(rig.prompt("a"))
    (u,) = events(j, "usage")
    assert u["cost"] == 0.00012346  # 1,000 tokens at 0.123456789 per million: 0.000123456789


def held_reply() -> tuple[threading.Event, list]:
    """A reply that sends the role chunk and one piece, then waits for the event."""
    gate = threading.Event()
    return gate, sse_reply(["partial "] * 3, waits={2: gate})


def cancelled_turn(rig, gate: threading.Event, text: str) -> int:
    """A prompt whose held reply is cancelled after its first piece: the turn's mark."""
    try:
        t = rig.prompt(text)
        rig.out.wait_kind(M.TOKEN, since=t)
        rig.agent.send((M.CANCEL,))
        rig.wait_idle(t)
    finally:
        gate.set()
    return t


def test_a_cancelled_stream_is_still_metered_as_an_estimate(rig):
    gate, held = held_reply()
    rig.server.push(held)
    rig.start()
    t = cancelled_turn(rig, gate, "go")
    (m,) = meters(rig, t)
    assert m["requests"] == 1 and m["estimated"] is True


def test_a_request_that_fails_after_only_reasoning_came_is_metered_and_its_reasoning_journaled(rig):
    """The provider answered part (reasoning, no content yet) before the stream broke: the
    request is paid, its output estimated from that reasoning, which the journal keeps."""
    thought = "Let me think about the files first. " * 10
    rig.server.push(sse_reply([], reasoning=[thought], finish_reason=None, done=False, abort=True))
    j = journal_for(rig)
    rig.start(journal=j)
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert rig.out.of(M.ASSISTANT_END, t) == [(M.ASSISTANT_END, "error")]
    (m,) = meters(rig, t)
    assert m["requests"] == 1 and m["estimated"] is True
    (u,) = events(j, "usage")
    assert u["completion"] == metering.estimate_text(thought)
    (r,) = events(j, "reasoning")
    assert r["text"] == thought


def test_a_request_refused_before_any_answer_is_not_metered_nor_is_an_earlier_episodes_usage_shown(rig):
    rig.server.push(calls_reply(("c1", "list_directory", {}), usage=U1),
                    json_reply(503, {"error": {"message": "overloaded"}}))
    rig.start()
    t = rig.prompt("look")
    rig.wait_idle(t)
    assert rig.system(t, "error") and len(rig.bodies()) == 2
    assert [m["requests"] for m in meters(rig, t)] == [1]  # the first request only: the refused one costs nothing
    assert rig.out.of(M.USAGE, t) == []  # the failed final episode reported none: U1 is not the turn's


def test_an_earlier_episodes_estimate_is_not_the_turns_when_its_last_request_fails(rig):
    rig.server.push(calls_reply(("c1", "list_directory", {})), json_reply(503, {"error": {"message": "overloaded"}}))
    j = journal_for(rig)
    rig.start(journal=j)
    t = rig.prompt("look")
    rig.wait_idle(t)
    assert [m["estimated"] for m in meters(rig, t)] == [True]  # the first request, estimated
    assert rig.out.of(M.USAGE, t) == []  # but the turn's last request reported nothing
    (end,) = events(j, "turn_end")
    assert "tokens" not in end and "tokens_estimated" not in end


def test_a_cancelled_turn_shows_no_size_again_after_an_estimated_one(rig):
    gate, held = held_reply()
    rig.server.push(answer("first"), held)
    rig.start()
    t1 = rig.prompt("one")  # (the held reply is the second request's: nothing waits on the gate yet)
    rig.wait_idle(t1)
    ((_, first),) = rig.out.of(M.USAGE, t1)
    assert first["estimated"] is True
    t2 = cancelled_turn(rig, gate, "two")
    assert rig.out.of(M.USAGE, t2) == []  # the first turn's estimate is not the second's


def test_the_estimate_of_a_request_learns_from_the_providers_count_of_the_last_one(rig):
    """The provider counted far more input than the estimate (here 2.5 times, the bound): the
    next request without usage is metered with the calibrated estimate of what it sent."""
    rig.server.push(answer("one", usage={"prompt_tokens": 10_000_000, "completion_tokens": 3}), answer("two"))
    j = journal_for(rig)
    rig.start(journal=j)
    rig.wait_idle(rig.prompt("a"))
    rig.wait_idle(rig.prompt("b"))
    body = rig.bodies()[1]
    sent = context.estimate_tokens(body["messages"], body["tools"])
    (_u1, u2) = events(j, "usage")
    assert u2["estimated"] is True
    assert int((sent - 1) * 2.5) <= u2["prompt"] <= int(sent * 2.5)


# ---- budgets ---------------------------------------------------------------------------------------


def test_max_turns_reached_after_a_request_runs_none_of_its_calls_and_stops_the_turn(rig):
    (rig.root / "f").write_text("x\n")
    rig.server.push(calls_reply(("c1", "read_file", {"path": "f"}), usage=U1),
                    calls_reply(("c2", "read_file", {"path": "f"}), ("c3", "list_directory", {}), usage=U1),
                    answer("never"))
    j = journal_for(rig)
    rig.start(journal=j, budgets=Budgets(max_turns=2))
    t = rig.prompt("loop")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 2
    stopped = rig.out.of(M.STOPPED, t)
    assert len(stopped) == 1 and stopped[0][1] == "budget"
    detail = stopped[0][2]
    assert (detail["budget"], detail["limit"], detail["used"], detail["why"]) == ("max_turns", 2, 2, "reached")
    errors = rig.system(t, "error")
    assert any("Budget reached: 2 of 2 requests to the model (max_turns). The turn is stopped." in e for e in errors)
    rows = {r["id"]: r for r in rig.results(t)}
    assert rows["c2"]["status"] == "error" and "not run: Budget reached" in rows["c2"]["text"]
    assert result_of(rig.agent.messages, "c3")["code"] == "budget"  # every call answered: pairing holds
    posted = rig.out.since(t)
    assert (M.PHASE, "idle") in posted[posted.index(stopped[0]):]  # before the turn's end
    (ev,) = events(j, "budget")
    assert ev["what"] == "stop" and ev["budget"] == "max_turns" and ev["why"] == "reached"
    # the next prompt does not reach the model either
    t2 = rig.prompt("more")
    rig.wait_idle(t2)
    assert len(rig.bodies()) == 2 and rig.out.of(M.STOPPED, t2)


def test_max_tokens_counts_input_and_stops_before_a_request_whose_input_would_pass_it(rig):
    rig.server.push(answer("hi"))
    rig.start(budgets=Budgets(max_tokens=3000))
    t = rig.prompt("z" * 8000)  # about 2,000 tokens, and the tools array: more than the whole budget
    rig.wait_idle(t)
    assert rig.bodies() == []
    ((_, reason, detail),) = rig.out.of(M.STOPPED, t)
    assert reason == "budget" and detail["budget"] == "max_tokens" and detail["why"] == "next_request"
    assert detail["used"] == 0
    assert any("would send about" in e for e in rig.system(t, "error"))


def test_the_80_percent_warning_then_a_whole_answer_reaching_the_budget_then_the_stop(rig):
    rig.server.push(answer("one", usage={"prompt_tokens": 3000, "completion_tokens": 400}),
                    answer("two", usage={"prompt_tokens": 3500, "completion_tokens": 1200}),
                    answer("never"))
    j = journal_for(rig)
    rig.start(journal=j, budgets=Budgets(max_tokens=10_000))
    t = rig.prompt("a")
    rig.wait_idle(t)
    assert rig.system(t, "warn") == []  # 34 %
    t = rig.prompt("b")
    rig.wait_idle(t)  # 8,100 of 10,000: 81 %
    (warn,) = rig.system(t, "warn")
    assert warn.startswith("81% of the max_tokens budget used: 8,100 of 10k tokens")
    assert not rig.out.of(M.STOPPED, t)
    (ev,) = events(j, "budget")
    assert ev["what"] == "warning" and ev["used"] == 8100
    t = rig.prompt("c" * 8000)  # its own input (the conversation again, and this) would pass the budget
    rig.wait_idle(t)
    assert len(rig.bodies()) == 2 and rig.out.of(M.STOPPED, t)


def test_a_whole_answer_that_uses_the_budget_up_says_so_at_once(rig):
    rig.server.push(answer("done", usage={"prompt_tokens": 9000, "completion_tokens": 1500}))
    j = journal_for(rig)
    rig.start(journal=j, budgets=Budgets(max_tokens=10_000))
    t = rig.prompt("a")
    rig.wait_idle(t)
    (warn,) = rig.system(t, "warn")
    assert "Budget reached: 10.5k of 10k tokens" in warn and "No further request will go" in warn
    assert not rig.out.of(M.STOPPED, t)  # the turn itself was not cut short
    (ev,) = events(j, "budget")  # the journal says which budget, without the entry's text
    assert ev["what"] == "reached" and ev["budget"] == "max_tokens" and ev["used"] == 10_500
    assert ev["limit"] == 10_000 and ev["why"] == "reached" and "text" not in ev


def test_max_cost_needs_a_price_for_the_model_and_stops_when_spent(rig):
    rig.server.push(answer("a", usage={"prompt_tokens": 10_000, "completion_tokens": 10_000}), answer("never"))
    rig.start(budgets=Budgets(max_cost=0.5), prices={"other-*": Price(1.0, 1.0)})
    t = rig.prompt("x")
    rig.wait_idle(t)
    assert rig.bodies() == []
    ((_, _, detail),) = rig.out.of(M.STOPPED, t)
    assert detail["why"] == "unpriced" and f"no price for model {MODEL}" in detail["text"]
    # $0.60 per 20,000 tokens; the request's input (the system message, the tools array, "x") is
    # a few thousand tokens, so it goes
    rig.agent.meter.prices[MODEL] = Price(input=30.0, output=30.0)
    t = rig.prompt("x")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 1
    t = rig.prompt("y")
    rig.wait_idle(t)
    assert len(rig.bodies()) == 1
    ((_, _, detail),) = rig.out.of(M.STOPPED, t)
    assert detail["budget"] == "max_cost" and detail["why"] == "reached"


def test_usage_command_reports_the_totals_and_budgets(rig):
    rig.server.push(answer("a", usage=U1))
    rig.start(budgets=Budgets(max_turns=10), prices={MODEL: Price(1.0, 2.0)})
    t = rig.prompt("x")
    rig.wait_idle(t)
    t = rig.prompt("/usage")
    report = rig.out.wait(lambda m: m[0] == M.SYSTEM and "Usage since" in m[2], since=t)[2]
    assert "input  1,000 tokens (800 of them cached)" in report
    assert "Budgets: max_turns 1 of 10 requests (10%)." in report
    t = rig.prompt("/usage now")
    err = rig.out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error", since=t)[2]
    assert "/usage takes no arguments" in err


def test_usage_command_counts_the_last_turn_from_its_start(rig):
    rig.server.push(calls_reply(("c1", "list_directory", {}), usage=U1), answer("a", usage=U2), answer("b", usage=U1))
    rig.start()
    for text in ("two requests", "one request"):
        t = rig.prompt(text)
        rig.wait_idle(t)
    t = rig.prompt("/usage")
    report = rig.out.wait(lambda m: m[0] == M.SYSTEM and "Usage since" in m[2], since=t)[2]
    assert "  last turn: 1 request, 1,050 tokens" in report, report


# ---- the repeat guard ------------------------------------------------------------------------------


def test_the_same_call_three_times_in_a_row_asks_with_a_note_and_runs_once_approved(rig):
    rig.server.push(
        calls_reply(("r1", "list_directory", {})),
        calls_reply(("r2", "list_directory", {"path": "."})),  # the same call once validated
        calls_reply(("r3", "list_directory", {})),
        answer("ok"),
    )
    rig.start()
    t = rig.prompt("look")
    _, ref, info = rig.confirm(t)
    assert info["id"] == "r3"
    assert ("marker", "asks: the same call with the same arguments 3 times in a row in this turn (a loop?)") \
        in info["lines"]
    assert "always" not in info and "3 times in a row" in info["always_asks"]  # a a adds no rule
    assert [r["id"] for r in rig.results(t)] == ["r1", "r2"]  # the first two ran without asking
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert result_of(rig.agent.messages, "r3")["ok"] is True
    assert rig.agent.policy.session_rules() == []


def test_the_repeat_guard_counts_within_one_answer_and_a_different_call_resets_it(rig):
    (rig.root / "a").write_text("1\n")
    rig.server.push(
        calls_reply(("s1", "read_file", {"path": "a"}), ("s2", "read_file", {"path": "a"}),
                    ("s3", "list_directory", {}), ("s4", "read_file", {"path": "a"}),
                    ("s5", "read_file", {"path": "a"}), ("s6", "read_file", {"path": "a"})),
        answer("ok"),
    )
    rig.start()
    t = rig.prompt("read")
    _, ref, info = rig.confirm(t)
    assert info["id"] == "s6"  # s4, s5, s6: the third in a row; s1, s2 were cut by s3
    rig.decide(ref, "rejected")
    rig.wait_idle(t)
    assert result_of(rig.agent.messages, "s6")["rejected"] is True
    assert all(result_of(rig.agent.messages, f"s{i}")["ok"] for i in range(1, 6))


def test_the_repeat_guard_only_tightens_a_deny_stays_a_deny(rig):
    rig.server.push(*(calls_reply((f"d{i}", "read_file", {"path": ".env"})) for i in range(3)), answer("ok"))
    rig.start(policy=Policy([("user config", [parse_rule("read_file(.env)", "deny", "user config")])]))
    t = rig.prompt("read")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    assert all(result_of(rig.agent.messages, f"d{i}")["code"] == "denied" for i in range(3))


def test_the_repeat_guard_starts_again_with_every_turn(rig):
    rig.server.push(calls_reply(("a1", "list_directory", {})), calls_reply(("a2", "list_directory", {})),
                    answer("ok"), calls_reply(("b1", "list_directory", {})), answer("ok"))
    rig.start()
    t = rig.prompt("one")
    rig.wait_idle(t)
    t = rig.prompt("two")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM)


# ---- search_workspace in a turn -------------------------------------------------------------------


def test_search_workspace_runs_with_the_reads_without_a_question(rig):
    (rig.root / "src").mkdir()
    (rig.root / "src" / "m.py").write_text("def needle():\n    pass\n")
    rig.server.push(calls_reply(("w1", "search_workspace", {"pattern": "needle"}),
                                ("w2", "read_file", {"path": "src/m.py"})), answer("found"))
    rig.start()
    t = rig.prompt("where is needle")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    rows = rig.results(t)
    assert [r["id"] for r in rows] == ["w1", "w2"]
    assert rows[0]["text"] == "ok: 1 matching line in 1 file" and rows[0]["excerpt"] == ["src/m.py:1: def needle():"]
    found = result_of(rig.agent.messages, "w1")
    assert found["files"] == {"src/m.py": 1}
    assert (M.TOOL_CALL, {"id": "w1", "name": "search_workspace", "summary": "search_workspace 'needle'"}) \
        in rig.out.since(t)


# ---- slash commands ----------------------------------------------------------------------------------


def test_quit_command_asks_the_front_end_to_leave(rig):
    rig.start()
    t = rig.prompt("/quit")
    rig.out.wait_kind(M.LEAVE, since=t)
    t = rig.prompt("/quit now")
    assert "/quit takes no arguments" in rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t)[2]


def test_sessions_command_lists_this_directorys_sessions_and_marks_this_one(rig, monkeypatch):
    state = rig.root.parent / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    assert "No recorded sessions" in sessions_text(str(rig.root), None)
    rig.server.push(answer("a"))
    other = Journal(S.project_dir({"XDG_STATE_HOME": str(state)}, str(rig.root.resolve())) / "ffee000011112222.jsonl",
                    {"id": "ffee000011112222", "cwd": str(rig.root.resolve()), "model": MODEL})
    other.begin(title="an older session")
    other.close()
    # this session is not recorded before its first prompt: listed without it, nothing marked
    before = sessions_text(str(rig.root), "0011223344556677")
    assert "an older session" in before and "this session" not in before
    assert before.endswith("--resume ID resumes one (after /quit).")
    j = Journal(S.project_dir({"XDG_STATE_HOME": str(state)}, str(rig.root.resolve())) / "0011223344556677.jsonl",
                {"id": "0011223344556677", "cwd": str(rig.root.resolve()), "model": MODEL})
    rig.start(journal=j)
    t = rig.prompt("hello there")
    rig.wait_idle(t)
    t = rig.prompt("/sessions")
    text = rig.out.wait(lambda m: m[0] == M.SYSTEM and "Sessions in" in m[2], since=t)[2]
    lines = text.split("\n")
    assert lines[1].startswith("  ID") and "DIRECTORY" not in lines[1], "this directory's: no directory column"
    mine = [ln for ln in lines if "hello there" in ln]
    theirs = [ln for ln in lines if "an older session" in ln]
    assert mine[0].startswith("* 00112233") and theirs[0].startswith("  ffee0000")
    assert "* this session (00112233)" in text
