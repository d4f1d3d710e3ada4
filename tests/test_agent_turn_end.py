"""What the agent tells a front end without a screen (issue 11): why each prompt ended
(exactly one TURN_END, the last message of its turn, after git's reports on its commands),
which files a call changed (FILES), and decisions made by a program rather than a key
(CONFIRM_DECISION's `by`, CANCEL's `why`). The real Agent against the scripted server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from dashfloat import messages as M
from dashfloat import sessions as S
from dashfloat.tools.permissions import Policy
from tests.fakeserver import Reply, json_reply
from tests.test_agent_sessions import journal_for
from tests.test_agent_tools import MODEL, answer, calls_reply, result_of, wait_until


def ends(rig, since: int = 0) -> list[str]:
    return [m[1] for m in rig.out.of(M.TURN_END, since)]


def wait_end(rig, since: int) -> str:
    """The turn's reason; and TURN_END is the last message of its turn."""
    rig.out.wait_kind(M.TURN_END, since=since)
    after = rig.out.since(since)
    i = next(i for i, m in enumerate(after) if m[0] == M.TURN_END)
    assert all(m[0] != M.PHASE or m[1] == "idle" for m in after[i + 1:]), after
    return after[i][1]


def test_an_answer_ends_done_and_turn_end_is_last_after_usage_and_idle(rig):
    rig.server.push(answer("Hi.", usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}))
    rig.start()
    t = rig.prompt("hello")
    assert wait_end(rig, t) == "done"
    kinds = [m[0] for m in rig.out.since(t)]
    assert kinds[-3:] == [M.USAGE, M.PHASE, M.TURN_END], kinds
    assert ends(rig, t) == ["done"]


def test_an_empty_answer_ends_empty(rig):
    rig.server.push(answer(""))
    rig.start()
    assert wait_end(rig, rig.prompt("hello")) == "empty"


def test_a_provider_error_ends_error(rig):
    rig.server.push(json_reply(500, {"error": {"message": "boom"}}))
    rig.start()
    assert wait_end(rig, rig.prompt("hello")) == "error"


def test_the_episode_limit_ends_limit(rig):
    rig.server.push(calls_reply(("c1", "read_file", {"path": "x"})))
    rig.start(max_episodes=1)
    t = rig.prompt("go")
    assert wait_end(rig, t) == "limit"
    assert any("Stopped after 1 episodes" in s for s in rig.system(t))


def test_a_turn_cancelled_before_its_answer_reports_no_usage_of_the_turn_before(rig):
    import threading

    hold = threading.Event()
    rig.server.push(answer("Hi.", usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}),
                    Reply(headers={"Content-Type": "text/event-stream"}, chunks=[b"data: {}\n\n"], hold=hold))
    rig.start()
    t1 = rig.prompt("hello")
    assert wait_end(rig, t1) == "done"
    assert [m[1]["total_tokens"] for m in rig.out.of(M.USAGE, t1)] == [4]
    t2 = rig.prompt("again")
    rig.server.wait_requests(2)
    rig.agent.send((M.CANCEL,))
    assert wait_end(rig, t2) == "cancelled"
    hold.set()
    assert rig.out.of(M.USAGE, t2) == []  # turn 1's 4 tokens are not this turn's


def test_a_cancel_ends_cancelled_and_the_journal_says_why(rig, tmp_path):
    import threading

    hold = threading.Event()
    rig.server.push(Reply(headers={"Content-Type": "text/event-stream"}, chunks=[b"data: {}\n\n"], hold=hold))
    journal = journal_for(rig)
    rig.start(journal=journal)
    t = rig.prompt("go")
    rig.out.wait_kind(M.PHASE, "waiting", since=t)
    rig.server.wait_requests(1)
    rig.agent.send((M.CANCEL, "SIGTERM"))
    assert wait_end(rig, t) == "cancelled"
    hold.set()
    rig.agent.send((M.QUIT,))
    rig.agent.join(3)
    events = [json.loads(line) for line in journal.path.read_text().splitlines()]
    assert {"type": "cancel", "by": "SIGTERM"}.items() <= next(e for e in events if e["type"] == "cancel").items()
    assert [e.get("status") for e in events if e["type"] == "turn_end"] == ["cancelled"]


def test_no_model_to_use_ends_config(rig):
    rig.server.models = ["a", "b"]
    ep_agent = rig.start()
    ep_agent.model = None
    t = rig.prompt("hello")
    assert wait_end(rig, t) == "config"
    assert any("serves 2 models" in s for s in rig.system(t))


def test_with_no_model_named_the_only_one_served_is_used_and_the_prompt_goes_to_it(rig):
    agent = rig.start()
    rig.server.models_reply = json_reply(200, {"object": "list", "data": [{"id": "solo", "max_model_len": 12288}]})
    rig.server.push(answer("Hi from solo."))
    agent.model = None
    t = rig.prompt("hello")
    assert wait_end(rig, t) == "done"
    assert (M.MODEL, "solo") in rig.out.since(t)
    assert f"Using model solo, the only one {rig.server.url} serves." in rig.system(t, "info")
    body = rig.bodies()[-1]
    assert body["model"] == "solo" and body["messages"][-1] == {"role": "user", "content": "hello"}
    assert "".join(m[1] for m in rig.out.of(M.TOKEN, t)) == "Hi from solo."
    wait_until(lambda: agent._ctx.window == 12288, "the window of the model it chose (asked on a worker)")


def test_a_slash_command_ends_done_at_once_and_model_lists_first(rig):
    rig.start()
    t = rig.prompt("/help")
    assert wait_end(rig, t) == "done"
    t = rig.prompt("/model")
    assert wait_end(rig, t) == "done"
    # the list (the endpoint's answer) came before the end
    before_end = rig.out.since(t)
    i = next(i for i, m in enumerate(before_end) if m[0] == M.TURN_END)
    assert any(m[0] == M.SYSTEM and MODEL in m[2] for m in before_end[:i]), before_end


def test_sessions_ends_after_its_listing_from_its_worker(rig):
    rig.start()
    t = rig.prompt("/sessions")
    assert wait_end(rig, t) == "done"
    after = rig.out.since(t)
    i = next(i for i, m in enumerate(after) if m[0] == M.TURN_END)
    assert any(m[0] == M.SYSTEM and "session" in m[2] for m in after[:i]), after
    assert ends(rig, t) == ["done"]


def test_a_write_posts_the_file_it_changed(rig):
    (rig.root / "old.txt").write_text("a\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "new.txt", "content": "x\n"}),
                                ("c2", "edit_file", {"path": "old.txt", "search_block": "a", "replace_block": "b"})),
                    answer("ok"))
    rig.start(policy=Policy(mode="accept-edits"))
    t = rig.prompt("go")
    assert wait_end(rig, t) == "done"
    assert [m[1:] for m in rig.out.of(M.FILES, t)] == [
        ("c1", [{"path": "new.txt", "change": "created"}], "tool"),
        ("c2", [{"path": "old.txt", "change": "modified"}], "tool"),
    ]


def test_a_decision_by_a_program_tells_the_model_why_and_adds_no_rule(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "x"}),
                                ("c2", "write_file", {"path": "b.txt", "content": "y"}),
                                ("c3", "write_file", {"path": "c.txt", "content": "z"})),
                    answer("ok"))
    journal = journal_for(rig)
    rig.start(journal=journal)
    t = rig.prompt("go")
    ref = rig.confirm(t)[1]
    by = {"who": "approvals stdin", "shown": "rejected: approval required", "reason": "no one could approve it"}
    rig.agent.send((M.CONFIRM_DECISION, ref, "rejected", by))
    ref2 = rig.confirm(t, 2)[1]
    rig.agent.send((M.CONFIRM_DECISION, ref2, "always", {"who": "approvals program x", "shown": "approved"}))
    ref3 = rig.confirm(t, 3)[1]
    rig.agent.send((M.CONFIRM_DECISION, ref3, "rejected", {"who": "approvals program x", "shown": "rejected"}))
    assert wait_end(rig, t) == "done"
    assert rig.out.of(M.DECIDED, t) == [(M.DECIDED, "c1", "rejected: approval required"),
                                        (M.DECIDED, "c2", "approved"), (M.DECIDED, "c3", "rejected")]
    msgs = rig.messages_of(2)
    assert result_of(msgs, "c1") == {"ok": False, "rejected": True, "error": "no one could approve it"}
    assert result_of(msgs, "c3") == {"ok": False, "rejected": True}  # no reason given: none told
    assert result_of(msgs, "c2")["ok"] is True
    assert not (rig.root / "a.txt").exists() and (rig.root / "b.txt").read_text() == "y"
    assert rig.agent.policy.session_rules() == [], "a program's approval added a session rule"
    rig.agent.send((M.QUIT,))
    rig.agent.join(3)
    decisions = [json.loads(line) for line in journal.path.read_text().splitlines()]
    answers = [(e["id"], e["decision"], e["by"]) for e in decisions
               if e["type"] == "decision" and e["decision"] != "ask"]
    assert answers == [("c1", "deny", "approvals stdin"), ("c2", "allow", "approvals program x"),
                       ("c3", "deny", "approvals program x")], answers
    # the rule's decision to ask says why; an answer by a person or a program has no reason of its own
    asked = [e for e in decisions if e["type"] == "decision" and e["decision"] == "ask"]
    assert len(asked) == 3 and all(e["reason"] for e in asked), asked
    assert not [e for e in decisions if e["type"] == "decision" and e["decision"] != "ask" and "reason" in e]


def test_a_cancel_on_a_question_with_a_reason_says_so_on_its_row(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "x"})))
    rig.start()
    t = rig.prompt("go")
    rig.confirm(t)
    rig.agent.send((M.CANCEL, "SIGINT"))
    assert wait_end(rig, t) == "cancelled"
    assert rig.out.of(M.DECIDED, t) == [(M.DECIDED, "c1", "rejected: the turn was stopped (SIGINT)")]


def git(root, *args):
    import os

    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_turn_ends_after_gits_report_on_its_command(rig):
    git(rig.root, "init", "-q")
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo x > made.txt"})), answer("ok"))
    rig.start(policy=Policy(mode="unrestricted"), git_report=True)
    t = rig.prompt("go")
    assert wait_end(rig, t) == "done"
    msgs = rig.out.since(t)
    end = next(i for i, m in enumerate(msgs) if m[0] == M.TURN_END)
    files = [i for i, m in enumerate(msgs) if m[0] == M.FILES]
    assert files and files[0] < end, msgs
    assert msgs[files[0]][1:] == ("c1", [{"path": "made.txt", "change": "new"}], "git")


def test_gits_report_is_on_unless_a_front_end_turns_it_off(rig):
    git(rig.root, "init", "-q")
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo x > made.txt"})), answer("ok"))
    rig.start(policy=Policy(mode="unrestricted"))  # no git_report given
    t = rig.prompt("go")
    assert wait_end(rig, t) == "done"
    assert [m[1:] for m in rig.out.of(M.FILES, t)] == [("c1", [{"path": "made.txt", "change": "new"}], "git")]


def test_a_command_outside_a_work_tree_does_not_hold_the_end(rig):
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "true"})), answer("ok"))
    rig.start(policy=Policy(mode="unrestricted"), git_report=True)
    t = rig.prompt("go")
    assert wait_end(rig, t) == "done"
    assert rig.out.of(M.FILES, t) == []


def test_a_resumed_session_keeps_the_turn_end_status(rig):
    rig.server.push(answer("one"))
    journal = journal_for(rig)
    rig.start(journal=journal)
    assert wait_end(rig, rig.prompt("first")) == "done"
    rig.agent.send((M.QUIT,))
    rig.agent.join(3)
    loaded = S.load(journal.path)
    assert loaded.turns == 1 and not loaded.open_turn


def test_undo_posts_the_files_it_put_back_and_ends_done(rig):
    (rig.root / "old.txt").write_text("before\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "new.txt", "content": "x\n"}),
                                ("c2", "write_file", {"path": "old.txt", "content": "after\n"})),
                    answer("ok"))
    rig.start(journal=journal_for(rig), policy=Policy(mode="accept-edits"))
    assert wait_end(rig, rig.prompt("go")) == "done"
    t = rig.prompt("/undo")
    assert wait_end(rig, t) == "done"
    (files,) = rig.out.of(M.FILES, t)
    assert files[2:] == ([{"path": "new.txt", "change": "removed"}, {"path": "old.txt", "change": "restored"}],
                         "undo")
    assert not (rig.root / "new.txt").exists() and (rig.root / "old.txt").read_text() == "before\n"
