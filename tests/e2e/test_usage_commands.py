"""End to end (issue 10 sections 3 and 5): the usage figure and a budget in the status bar,
/usage, a budget that stops a turn, Tab completing a command's name, /quit."""

from __future__ import annotations

from tests.fakeserver import sse_reply
from tests.test_agent_tools import calls_reply


def test_usage_in_the_status_bar_then_usage_command_and_tab_completion(dash, server):
    server.push(sse_reply(["Hello."], usage={"prompt_tokens": 12_000, "completion_tokens": 345}))
    t = dash("--max-tokens", "100000", cols=120)
    t.wait_for(lambda t: "used 0/100k tok" in t.status(), what="the budget in the status bar")
    t.type("hi")
    t.send("\r")
    t.wait_text("Hello.")
    t.wait_for(lambda t: "used 12.3k/100k tok" in t.status(), what="the tokens used in the status bar")
    t.wait_status("idle")
    t.type("/us")
    t.send("\t")
    t.wait_for(lambda t: "/usage" in "".join(t.prompt_lines()), what="/us completed to /usage")
    t.send("\r")
    t.wait_flat("Usage since DashFloat started (1 request to the model):")
    t.wait_flat("input 12,000 tokens")
    t.wait_flat("Budgets: max_tokens 12.3k of 100k tokens (12%).")


def test_a_budget_stops_the_turn_with_an_entry_and_quit_leaves(dash, server):
    server.push(calls_reply(("c1", "list_directory", {}), usage={"prompt_tokens": 10, "completion_tokens": 5}),
                sse_reply(["never shown"]))
    t = dash("--max-turns", "1", cols=120)
    t.type("look")
    t.send("\r")
    t.wait_flat("Budget reached: 1 of 1 requests to the model (max_turns). The turn is stopped.")
    t.wait_status("idle")
    assert "never shown" not in t.flat
    assert len([r for r in server.requests if r["method"] == "POST"]) == 1
    t.type("/quit")
    t.send("\r")
    assert t.wait_exit() == 0
