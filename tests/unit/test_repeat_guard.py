"""The repeat guard (issue 10 section 3): a pre-execute stage after the others, so it can only
tighten what they decided (tools/pipeline.py, stage_repeat)."""

from __future__ import annotations

import pytest

from dashfloat.tools import guard, pipeline
from dashfloat.tools.permissions import Policy
from dashfloat.tools.rules import parse_rule


def gate(tmp_path, name, args, repeats, policy=None):
    ctx = pipeline.CallContext(call_id="c", name=name, raw={"id": "c", "name": name, "args": args},
                               root=str(tmp_path), policy=policy or Policy(), repeats=repeats)
    return pipeline.pre_execute(ctx), ctx


def test_it_is_the_last_stage_of_the_chain():
    assert pipeline.PRE_EXECUTE[-1] is pipeline.stage_repeat and pipeline.REPEAT_LIMIT == 3


@pytest.mark.parametrize("repeats, kind", [(0, "run"), (1, "run"), (2, "ask"), (7, "ask")])
def test_the_third_identical_call_in_a_row_asks(tmp_path, repeats, kind):
    (verdict, prepared), ctx = gate(tmp_path, "list_directory", {}, repeats)
    assert verdict == kind
    if kind == "ask":
        assert ctx.guard.decided_by == pipeline.REPEAT_WHO and "times in a row" in ctx.reason
        assert ("marker", f"asks: the same call with the same arguments {repeats + 1} times in a row in this "
                          "turn (a loop?)") in prepared.preview
        assert ctx.rule_decision.always_asks  # the a key adds no session rule


def test_it_asks_in_the_unrestricted_mode_too(tmp_path):
    (verdict, _), _ = gate(tmp_path, "execute_command", {"command": "true"}, 2, Policy(mode="unrestricted"))
    assert verdict == "ask"
    (verdict, _), _ = gate(tmp_path, "execute_command", {"command": "true"}, 1, Policy(mode="unrestricted"))
    assert verdict == "run"


def test_a_deny_stays_a_deny_and_an_ask_keeps_its_reason_with_the_note(tmp_path):
    policy = Policy([("user config", [parse_rule("read_file(secret)", "deny", "user config")])])
    (verdict, result), ctx = gate(tmp_path, "read_file", {"path": "secret"}, 5, policy)
    assert verdict == "done" and result["code"] == "denied"
    assert ctx.guard.decision == guard.DENY
    (verdict, prepared), ctx = gate(tmp_path, "write_file", {"path": "a.txt", "content": "x"}, 2)
    assert verdict == "ask" and ctx.guard.decided_by == "built-in default"  # it asked anyway
    assert any("times in a row" in text for _kind, text in prepared.preview)
