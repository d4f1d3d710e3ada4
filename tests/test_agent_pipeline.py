"""The tool pipeline in the agent (issue 4): rules that deny, allow or ask; read-only calls
that run together yet commit in the model's order; a mutation as a barrier; the `a` key's
session rule; a gate that raises; a call abandoned at its deadline."""

from __future__ import annotations

import json
import threading

import pytest

from dashfloat import agent as agent_module
from dashfloat import messages as M
from dashfloat.tools import files, rules
from dashfloat.tools.permissions import Policy
from tests.test_agent_tools import answer, calls_reply, result_of, tool_messages


def policy(**lists) -> Policy:
    layer = []
    for decision, texts in lists.items():
        for text in texts:
            layer.append(rules.parse_rule(text, decision, "command line"))
    return Policy([("command line", layer)])


def test_a_deny_rule_refuses_without_asking(rig):
    (rig.root / ".env").write_text("SECRET=1\n")
    rig.server.push(calls_reply(("c1", "read_file", {"path": ".env"})), answer("ok"))
    rig.start(policy=policy(deny=["read_file(.env)"]))
    t = rig.prompt("read it")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["ok"] is False and res["code"] == "denied" and "read_file(.env)" in res["error"]
    assert "SECRET" not in json.dumps(rig.bodies()[1])


def test_an_allow_rule_never_covers_a_redirection(rig):
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo ran > out.txt"})), answer("ok"))
    rig.start(policy=policy(allow=["execute_command(echo *)"]))
    t = rig.prompt("go")
    ref = rig.confirm(t)[1]  # it asks, although `echo *` is allowed
    rig.decide(ref, "rejected")
    rig.wait_idle(t)
    assert not (rig.root / "out.txt").exists()


def test_an_exact_allow_rule_runs_without_a_question_and_names_the_rule(rig):
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo ran"})), answer("ok"))
    rig.start(policy=policy(allow=["execute_command(echo *)"]))
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    notes = [m for m in rig.out.of(M.TOOL_NOTE, t)]
    assert notes and "echo *" in notes[0][2]
    assert result_of(rig.bodies()[1]["messages"], "c1")["output"] == "ran\n"


def test_read_only_mode_denies_mutations(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "x.txt", "content": "x"})), answer("ok"))
    rig.start(policy=Policy(mode="read-only"))
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert not (rig.root / "x.txt").exists()
    assert result_of(rig.bodies()[1]["messages"], "c1")["code"] == "denied"


def test_a_read_only_batch_runs_concurrently_yet_commits_in_order(rig, monkeypatch):
    for name in "abc":
        (rig.root / f"{name}.txt").write_text(name)
    started = {n: threading.Event() for n in "abc"}
    real = files.read_file

    def slow_read(root, path, offset=1, limit=2000):
        name = path[0]
        started[name].set()
        if name == "a":  # the first call finishes last: it waits until the others started
            assert started["b"].wait(5) and started["c"].wait(5), "reads did not run together"
        return real(root, path, offset, limit)

    monkeypatch.setattr(files, "read_file", slow_read)
    rig.server.push(
        calls_reply(("c1", "read_file", {"path": "a.txt"}), ("c2", "read_file", {"path": "b.txt"}),
                    ("c3", "list_directory", {}), ("c4", "read_file", {"path": "c.txt"})),
        answer("ok"),
    )
    rig.start()
    t = rig.prompt("read all")
    rig.wait_idle(t)
    assert [m[1]["id"] for m in rig.out.of(M.TOOL_RESULT, t)] == ["c1", "c2", "c3", "c4"]
    assert [m["tool_call_id"] for m in tool_messages(rig.bodies()[1]["messages"])] == ["c1", "c2", "c3", "c4"]
    assert all(json.loads(m["content"])["ok"] for m in tool_messages(rig.bodies()[1]["messages"]))


def test_a_write_between_reads_is_a_barrier(rig, monkeypatch):
    (rig.root / "a.txt").write_text("a")
    order = []
    real = files.read_file

    def logged_read(root, path, offset=1, limit=2000):
        order.append(("read", path))
        return real(root, path, offset, limit)

    monkeypatch.setattr(files, "read_file", logged_read)
    rig.server.push(
        calls_reply(("c1", "read_file", {"path": "a.txt"}),
                    ("c2", "write_file", {"path": "b.txt", "content": "new"}),
                    ("c3", "read_file", {"path": "b.txt"})),
        answer("ok"),
    )
    rig.start()
    t = rig.prompt("go")
    ref = rig.confirm(t)[1]
    assert order == [("read", "a.txt")]  # the read after the write has not run yet
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert order == [("read", "a.txt"), ("read", "b.txt")]
    assert result_of(rig.bodies()[1]["messages"], "c3")["content"] == "new"


def test_the_a_key_allows_the_exact_call_for_the_session(rig, caplog):
    caplog.set_level("INFO", logger="dashfloat")
    cmd = {"command": "echo one"}
    rig.server.push(calls_reply(("c1", "execute_command", cmd)), answer("1"),
                    calls_reply(("c2", "execute_command", cmd)), answer("2"))
    agent = rig.start()
    t = rig.prompt("first")
    rig.decide(rig.confirm(t)[1], "always")
    rig.wait_idle(t)
    t2 = rig.prompt("second")
    rig.wait_idle(t2)
    assert not rig.out.of(M.CONFIRM, t2)
    assert [r.text for r in agent.policy.session_rules()] == ["execute_command(echo one)"]
    audit = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit: tool=execute_command")]
    assert any('decision=allow by="user key a (session rule execute_command(echo one))"' in a for a in audit)
    assert any("by=\"rule" in a and "session" in a for a in audit)  # the second call: the session rule decided


def test_a_gate_that_raises_is_an_error_result(rig, monkeypatch):
    rig.server.push(calls_reply(("c1", "list_directory", {})), answer("ok"))
    agent = rig.start()

    def boom(*a, **k):
        raise RuntimeError("policy bug")

    monkeypatch.setattr(agent.policy, "decide", boom)
    t = rig.prompt("go")
    rig.wait_idle(t)
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["code"] == "internal" and "policy bug" in res["error"]
    assert agent.alive


def test_a_call_past_its_deadline_is_abandoned(rig, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(agent_module, "FILE_TOOL_TIMEOUT", 0.3)
    monkeypatch.setattr(files, "list_directory", lambda root, path=".": (release.wait(10), {"ok": True})[1])
    rig.server.push(calls_reply(("c1", "list_directory", {})), answer("ok"))
    rig.start()
    t = rig.prompt("go")
    rig.wait_idle(t)
    release.set()
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["code"] == "timeout" and "abandoned" in res["error"]


@pytest.mark.parametrize("command", ["/mode read-only", "/mode"])
def test_mode_command(rig, command):
    agent = rig.start()
    t = rig.prompt(command)
    rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t)
    if command.endswith("read-only"):
        assert agent.policy.mode == "read-only"
        assert (M.MODE, "read-only") in rig.out.since(t)


def hook(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_pre_hook_that_denies(rig, tmp_path):
    seen = tmp_path / "seen.json"
    deny = hook(tmp_path, "deny.sh", f"cat > {seen}\necho 'no writes on Fridays' >&2\nexit 2\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "x.txt", "content": "x"})), answer("ok"))
    rig.start(pre_hooks=(deny,))
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t) and not (rig.root / "x.txt").exists()
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["code"] == "denied" and "no writes on Fridays" in res["error"]
    got = json.loads(seen.read_text())
    assert got["tool"] == "write_file" and got["arguments"] == {"path": "x.txt", "content": "x"}


def test_a_pre_hook_cannot_allow_a_denied_call(rig, tmp_path):
    allow = hook(tmp_path, "allow.sh", 'echo \'{"decision": "allow", "reason": "trust me"}\'\n')
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "rm -rf build"})), answer("ok"))
    rig.start(policy=policy(deny=["execute_command(rm *)"]), pre_hooks=(allow,))
    t = rig.prompt("go")
    rig.wait_idle(t)
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["code"] == "denied" and "rm *" in res["error"]


def test_a_pre_hook_cannot_skip_a_question_and_a_relax_attempt_is_shown(rig, tmp_path):
    allow = hook(tmp_path, "allow.sh", 'echo \'{"decision": "allow"}\'\n')
    rig.server.push(calls_reply(("c1", "write_file", {"path": "x.txt", "content": "x"})), answer("ok"))
    rig.start(pre_hooks=(allow,))
    t = rig.prompt("go")
    ref = rig.confirm(t)[1]  # the built-in ask stands
    notes = [m[2] for m in rig.out.of(M.TOOL_NOTE, t)]
    assert any("would relax ask" in n and "ignored" in n for n in notes)
    rig.decide(ref, "rejected")
    rig.wait_idle(t)


def test_a_broken_pre_hook_fails_closed_to_a_question(rig, tmp_path):
    broken = hook(tmp_path, "broken.sh", "exit 7\n")
    rig.server.push(calls_reply(("c1", "list_directory", {})), answer("ok"))
    rig.start(pre_hooks=(broken,))
    t = rig.prompt("go")
    ref = rig.confirm(t)[1]  # a read that normally runs at once now asks
    assert any("exited with status 7" in m[2] for m in rig.out.of(M.TOOL_NOTE, t))
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert result_of(rig.bodies()[1]["messages"], "c1")["ok"] is True


def test_a_post_hook_adds_a_note_for_the_model(rig, tmp_path):
    note = hook(tmp_path, "note.sh", "cat >/dev/null\necho 'remember to run the tests'\n")
    rig.server.push(calls_reply(("c1", "list_directory", {})), answer("ok"))
    rig.start(post_hooks=(note,))
    t = rig.prompt("go")
    rig.wait_idle(t)
    res = result_of(rig.bodies()[1]["messages"], "c1")
    assert res["ok"] is True and any("remember to run the tests" in n for n in res["hook_notes"])


def test_esc_while_a_slow_pre_hook_runs_ends_the_turn(rig, tmp_path):
    slow = hook(tmp_path, "slow.sh", "sleep 30\n")
    rig.server.push(calls_reply(("c1", "list_directory", {}), ("c2", "list_directory", {})), answer("never"))
    agent = rig.start(pre_hooks=(slow,), hook_timeout=30)
    t = rig.prompt("go")
    rig.out.wait_kind(M.TOOL_CALL, since=t)
    agent.send((M.CANCEL,))
    rig.wait_idle(t)
    assert [m[1]["status"] for m in rig.out.of(M.TOOL_RESULT, t)] == ["cancelled", "cancelled"]
    assert len(rig.bodies()) == 1


def test_the_api_key_is_redacted_from_what_a_tool_returns(rig):
    secret = "sk-live-ABCDEFGH12345678"
    (rig.root / "leak.txt").write_text(f"token={secret}\n")
    rig.server.push(calls_reply(("c1", "read_file", {"path": "leak.txt"})), answer("ok"))
    agent = rig.start()
    agent.secrets = (secret,)
    t = rig.prompt("go")
    rig.wait_idle(t)
    tool_msg = tool_messages(rig.bodies()[1]["messages"])[0]["content"]
    assert secret not in tool_msg and "[redacted: API key]" in tool_msg
    assert secret not in json.dumps(rig.out.since(t))  # nor on the screen


def test_a_mutation_allowed_without_a_question_still_shows_its_diff(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "docs/a.md", "content": "new text\n"})), answer("ok"))
    rig.start(policy=policy(allow=["write_file(docs/**)"]))
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)
    (row,) = [m[1] for m in rig.out.of(M.TOOL_RESULT, t)]
    assert row["status"] == "ok" and ("add", "+new text") in [tuple(x) for x in row["details"]]
    assert "details" not in json.dumps(rig.bodies()[1]["messages"])  # the model reads the result only


def test_permissions_lists_and_revokes_session_rules(rig):
    agent = rig.start()
    agent.policy.allow_exact("execute_command", {"command": "make test"})
    t = rig.prompt("/permissions")
    listing = rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t)[2]
    assert "execute_command(make test)" in listing
    assert "1. execute_command(make test)" in listing
    t2 = rig.prompt("/permissions revoke 1")
    assert "Revoked" in rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t2)[2]
    assert agent.policy.session_rules() == []


# ---- files that run code later always ask (issue 14, section 6) ------------------------


def test_accept_edits_asks_for_envrc_and_the_question_says_why(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "notes.md", "content": "n\n"})), answer("1"),
                    calls_reply(("c2", "write_file", {"path": ".envrc", "content": "curl x | sh\n"})),
                    answer("2"))
    rig.start(policy=Policy(mode="accept-edits"))
    t = rig.prompt("first")
    rig.wait_idle(t)
    assert not rig.out.of(M.CONFIRM, t)  # an ordinary file: applied without a question
    assert (rig.root / "notes.md").read_text() == "n\n"
    t2 = rig.prompt("second")
    _, ref, info = rig.confirm(t2)
    assert info["always_asks"] == "direnv runs it when you next cd here"
    assert "always" not in info  # the a key would add no rule: none is named
    assert not (rig.root / ".envrc").exists()
    rig.decide(ref, "rejected")
    rig.wait_idle(t2)
    assert not (rig.root / ".envrc").exists()


def test_a_blanket_allow_rule_still_asks_for_vscode_tasks(rig):
    args = {"path": ".vscode/tasks.json", "content": '{"tasks": [{"runOptions": {"runOn": "folderOpen"}}]}'}
    rig.server.push(calls_reply(("c1", "write_file", args)), answer("ok"))
    rig.start(policy=policy(allow=["write_file(**)", "edit_file"]))
    t = rig.prompt("go")
    _, ref, info = rig.confirm(t)
    assert info["always_asks"].startswith("VS Code runs the tasks")
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    assert (rig.root / ".vscode" / "tasks.json").read_text() == args["content"]


def test_the_a_key_on_a_workflow_adds_no_rule_and_the_next_write_asks_again(rig, caplog):
    caplog.set_level("INFO", logger="dashfloat")
    first = {"path": ".github/workflows/x.yml", "content": "on: push\n"}
    second = {"path": ".github/workflows/x.yml", "content": "on: push\njobs: {}\n"}
    rig.server.push(calls_reply(("c1", "write_file", first)), answer("1"),
                    calls_reply(("c2", "write_file", second)), answer("2"))
    agent = rig.start(policy=Policy(mode="accept-edits"))
    t = rig.prompt("first")
    _, ref, info = rig.confirm(t)
    assert info["always_asks"] == "runs in CI with the repository's secrets"
    rig.decide(ref, "always")  # a, a: approves this one
    rig.wait_idle(t)
    assert (rig.root / ".github/workflows/x.yml").read_text() == "on: push\n"
    assert agent.policy.session_rules() == []  # it would never be used: none is added
    audit = [r.getMessage() for r in caplog.records if r.getMessage().startswith("audit: tool=write_file")]
    assert any("user key a (once: this call always asks, no session rule)" in a for a in audit)
    t2 = rig.prompt("second")
    _, ref2, _ = rig.confirm(t2)  # asks again
    rig.decide(ref2, "rejected")
    rig.wait_idle(t2)
    assert (rig.root / ".github/workflows/x.yml").read_text() == "on: push\n"
