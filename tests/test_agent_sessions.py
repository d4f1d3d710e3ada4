"""The real Agent with its journal (issue 9): a whole session written and read back equal, the
transcript drawn again as it was, a resume after a kill in the middle of a turn, /undo of
DashFloat's own file changes (clean, changed since, never recorded), and the git status report
after a command. Real tools in a tmp_path root, the scripted HTTP server as the model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time

import pytest
from urwid.testing import render_text

from dashfloat import conversation
from dashfloat import messages as M
from dashfloat import sessions as S
from dashfloat.agent import INTERRUPTED_NOTE, Agent
from dashfloat.history import History
from dashfloat.journal import Journal
from dashfloat.tools.permissions import Policy
from dashfloat.ui.app import App
from dashfloat.ui.bridge import Outbox as UIOutbox
from tests.test_agent_tools import (
    MODEL,
    WAIT,
    Outbox,
    answer,
    calls_reply,
    crash_on,
    result_of,
)

KEY = "sk-live-abcdef0123456789"


def journal_for(rig, sid="00112233aabbccdd", **kw) -> Journal:
    path = rig.root.parent / "state" / "sessions" / S.project_key(str(rig.root)) / f"{sid}.jsonl"
    return Journal(path, {"id": sid, "cwd": str(rig.root), "model": MODEL}, secrets=[(KEY, "[redacted: API key]")],
                   **kw)


def start(rig, journal=None, **kw):
    kw.setdefault("policy", Policy(mode="accept-edits"))
    kw.setdefault("git_report", False)
    return rig.start(journal=journal, **kw)


def quit_agent(rig) -> None:
    rig.agent.send((M.QUIT,))
    rig.agent.join(3)
    assert not rig.agent.alive


def restart(rig, journal_path, **kw) -> Agent:
    """A new agent on the same session, as `dashfloat --continue` makes it."""
    loaded = S.load(journal_path)
    j = Journal(journal_path, {"id": journal_path.stem}, existing=True, next_seq=loaded.next_seq)
    rig.out = Outbox()
    agent = start(rig, j, resumed=loaded, **kw)
    rig.out.wait(lambda m: m[0] == M.SYSTEM and "Resumed session" in m[2])
    return agent


def app_screen(msgs, *, replay: bool, rows: int = 120) -> list[str]:
    class Silent:
        def send(self, msg):
            pass

    app = App(agent=Silent(), outbox=UIOutbox(), model_name=MODEL, ascii=False, depth=256, history=History(None))
    if replay:
        app.replay(msgs)
    else:
        for m in msgs:
            app.apply(m)
            if m[0] == M.CONFIRM:
                app._end_confirm()  # decided: the live app's key did this
        app.refresh()
    return [r.rstrip() for r in render_text(app.root, (80, rows))][: rows - 2]


# ---- 1. a whole session, written and read back -----------------------------------------------


def test_a_full_session_with_tools_is_read_back_equal_and_drawn_again_as_it_was(rig):
    (rig.root / "a.py").write_text("x = 1\n")
    rig.server.push(
        calls_reply(("c1", "read_file", {"path": "a.py"}), ("c2", "list_directory", {"path": "."})),
        calls_reply(("c3", "edit_file", {"path": "a.py", "search_block": "x = 1", "replace_block": "x = 2"}),
                    ("c4", "write_file", {"path": "new.txt", "content": f"key {KEY}\n" + "line\n" * 2000})),
        calls_reply(("c5", "execute_command", {"command": "echo ran; cat new.txt | head -3"})),
        answer("All done, café ☕.", usage={"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}),
        answer("Second turn answer."),
    )
    j = journal_for(rig)
    start(rig, j)
    t = rig.prompt("change a.py please")
    ref = rig.confirm(t)[1]  # the command asks
    rig.decide(ref, "approved")
    rig.wait_idle(t)
    t2 = rig.prompt("thanks")
    rig.wait_idle(t2)
    live = list(rig.out.seen)
    messages = [dict(m) for m in rig.agent.messages]
    quit_agent(rig)

    assert j.foreign_writes == 0, "only the agent thread writes"
    loaded = S.load(j.path)
    assert loaded.notes == []
    expected = json.loads(json.dumps(messages).replace(KEY, "[redacted: API key]"))
    assert loaded.conversation == expected
    assert conversation.check(loaded.conversation) == []
    assert loaded.turns == 2 and not loaded.open_turn
    # the second turn's answer reported no usage: its size is DashFloat's estimate, marked so
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    last_usage = [e for e in events if e["type"] == "usage"][-1]
    assert last_usage["estimated"] is True
    assert (loaded.tokens, loaded.tokens_estimated) == (last_usage["prompt"] + last_usage["completion"], True)
    ends = [e for e in events if e["type"] == "turn_end"]
    assert [(e["tokens"], e.get("tokens_estimated")) for e in ends] == [(100, None), (loaded.tokens, True)]
    info = S.read_info(j.path)
    assert (info.tokens, info.tokens_estimated) == (loaded.tokens, True)
    assert f"~{loaded.tokens} " in S.format_listing([info], with_dirs=False)
    # the status bar had it live, and has it again on a resume
    assert [m for m in live if m[0] == M.USAGE][-1] == (M.USAGE, {"total_tokens": loaded.tokens, "estimated": True})
    assert KEY.encode() not in j.path.read_bytes()
    live_screen = app_screen(live, replay=False)
    replayed = app_screen(S.ui_messages(loaded), replay=True)
    assert replayed == [line.replace(KEY, "[redacted: API key]") for line in live_screen]
    # the usage the first turn ended with comes back with it, and the second turn's estimate
    assert [m for m in S.ui_messages(loaded) if m[0] == M.USAGE] == [
        (M.USAGE, {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}),
        (M.USAGE, {"total_tokens": loaded.tokens, "estimated": True})]
    assert any("approved by you" in line for line in replayed)
    # the audit trail: structured decisions, the rule or key that decided
    decisions = [e for e in events if e["type"] == "decision"]
    assert {d["id"] for d in decisions} == {"c1", "c2", "c3", "c4", "c5"}
    assert [d["by"] for d in decisions if d["id"] == "c5"][-1] == "user key y"
    assert all(len(d["args_sha256"]) == 64 for d in decisions)
    # a turn of this session stays small: the 12 KB file went to the store once
    turn2 = [e for e in events if e["seq"] >= next(x["seq"] for x in events if x.get("text") == "thanks")]
    assert sum(len(json.dumps(e)) for e in turn2) < 2000


def sync_spy(j: Journal) -> list[str]:
    """The type of the journal's last event at each of its syncs, from now on."""
    synced = []
    real_sync = j.sync

    def sync():
        synced.append([json.loads(x)["type"] for x in j.path.read_bytes().splitlines()][-1])
        real_sync()

    j.sync = sync
    return synced


def test_a_turn_is_synced_before_a_side_effect_and_at_its_end(rig, monkeypatch):
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo hi"})), answer("ok"))
    j = journal_for(rig)
    synced = sync_spy(j)
    start(rig, j, policy=Policy(mode="unrestricted"))
    t = rig.prompt("run it")
    rig.wait_idle(t)
    assert synced[:2] == ["run", "turn_end"]
    rig.agent.send((M.QUIT, "hangup"))  # SIGHUP: the app says why it quits
    rig.agent.join(3)
    assert synced[-1] == "end"
    end = json.loads(j.path.read_bytes().splitlines()[-1])
    assert end["reason"] == "hangup" and end["turn"] == 1


@pytest.mark.parametrize("first, title", [
    ("  " + "x" * 99 + "yz\nthe second line", "x" * 99 + "y"),
    ("fix the build\nit fails since the upgrade\nsee the log", "fix the build"),
])
def test_the_title_is_the_first_line_of_the_first_prompt_at_most_100_characters(rig, first, title):
    rig.server.push(answer("ok"), answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt(first))
    rig.wait_idle(rig.prompt("a later prompt"))
    quit_agent(rig)
    assert json.loads(j.path.read_bytes().splitlines()[0])["title"] == title


def test_a_hangup_mid_stream_keeps_what_was_streamed(rig):
    """An ssh drop while an answer streams: the journal keeps the part the screen showed, as
    Esc does (cancel by hangup, the partial answer, the turn's end), then the end; a resume
    shows it, marked partial."""
    import threading

    from tests.fakeserver import sse_reply

    hold = threading.Event()
    rig.server.push(sse_reply(["First words ", "of the ", "answer. ", "NeverSent"], waits={4: hold}))  # 0: the role
    j = journal_for(rig)
    start(rig, j)
    rig.prompt("explain")
    rig.out.wait(lambda m: m[0] == M.TOKEN and "answer." in "".join(x[1] for x in rig.out.of(M.TOKEN)))
    rig.agent.send((M.QUIT, "hangup"))
    rig.agent.join(3)
    hold.set()
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    kept = [e for e in events if e["type"] in ("cancel", "answer", "turn_end", "end")]
    assert [e["type"] for e in kept] == ["cancel", "answer", "turn_end", "end"], events
    assert kept[0]["by"] == "hangup" and kept[2]["status"] == "cancelled" and kept[3]["reason"] == "hangup"
    assert kept[1] == {**kept[1], "status": "cancelled", "content": "First words of the answer. "}
    loaded = S.load(j.path)
    assert not loaded.open_turn
    assert loaded.conversation[-1] == {"role": "assistant", "content": "First words of the answer. "}


# ---- 2. resume after a kill in the middle of a turn -------------------------------------------


def interrupted_journal(rig, *, confirm: bool = False) -> Journal:
    """The journal a kill -9 leaves: a turn whose first call has its result, whose second
    (a command) started and whose third never ran."""
    j = journal_for(rig)
    j.begin(title="do three things")
    j.event("prompt", turn=1, text="do three things")
    calls = [("c1", "read_file", {"path": "a"}), ("c2", "execute_command", {"command": "make deploy"}),
             ("c3", "write_file", {"path": "b", "content": "x"})]
    j.event("answer", status="done", calls=[{"id": i, "name": n, "arguments": json.dumps(a)} for i, n, a in calls])
    for i, n, a in calls:
        j.ui((M.TOOL_CALL, {"id": i, "name": n, "summary": f"{n} {a}"}))
    j.event("result", id="c1", tool="read_file", content='{"ok":false,"error":"no such file: a","code":"not_found"}')
    if confirm:
        j.ui((M.CONFIRM, 7, {"id": "c2", "name": "execute_command", "summary": "make deploy",
                             "lines": [["command", "make deploy"]]}))
    else:
        j.event("run", id="c2", tool="execute_command")
    j.sync()
    os.close(j._fd)  # killed: no end event, the lock goes with the process
    return j


def test_resume_answers_the_open_calls_and_tells_the_model(rig):
    j = interrupted_journal(rig)
    with open(j.path, "ab") as f:  # the kill came in the middle of the next event's write
        f.write(b'{"seq":9,"time":1,"type":"result","id":"c2","tool":"execute_command","content":"{\\"ok\\":tr')
    rig.server.push(answer("I will check the deploy first."))
    agent = restart(rig, j.path)
    assert any("cut off" in s and "skipped" in s for s in rig.system(level="warn"))
    rows = {r[1]["id"]: r[1] for r in rig.out.of(M.TOOL_RESULT)}
    assert rows["c2"]["status"] == "cancelled" and "unknown" in rows["c2"]["text"]
    assert rows["c3"]["status"] == "cancelled" and "did not run" in rows["c3"]["text"]
    assert ("The last turn was interrupted: DashFloat stopped before it ended. 2 calls it left open are marked "
            "cancelled. The model is told so with your next prompt, and checks before repeating anything."
            in rig.system(level="warn"))
    assert conversation.check(agent.messages) == [], "paired before the first request"
    t = rig.prompt("go on")
    rig.wait_idle(t)
    msgs = rig.messages_of(1)
    assert conversation.check(msgs) == []
    assert result_of(msgs, "c2")["cancelled"] is True and "unknown" in result_of(msgs, "c2")["error"]
    assert result_of(msgs, "c3")["error"].endswith("it did not run")
    assert msgs[-1] == {"role": "user", "content": f"{INTERRUPTED_NOTE}\n\ngo on"}
    quit_agent(rig)
    again = S.load(j.path)
    assert not again.open_turn and again.model_notes == [] and again.turns == 2
    assert again.conversation == json.loads(json.dumps(agent.messages))
    lines = j.path.read_bytes().splitlines()
    cut = next(i for i, x in enumerate(lines) if x.endswith(b'\\"ok\\":tr'))
    events = [json.loads(x) for x in lines[cut + 1 :]]  # the resume's, after the cut-off line
    assert [(e["id"], e["tool"]) for e in events if e["type"] == "result"] == [
        ("c2", "execute_command"), ("c3", "write_file")]
    (resume,) = [e for e in events if e["type"] == "resume"]
    assert resume["interrupted"] is True and resume["note"] == INTERRUPTED_NOTE
    assert [e["status"] for e in events if e["type"] == "turn_end"][0] == "interrupted"


def test_one_open_call_is_said_in_the_singular_and_the_tokens_known_go_with_the_interruption(rig):
    j = journal_for(rig)
    j.begin(title="one thing")
    j.event("prompt", turn=1, text="hello")
    j.event("answer", status="done", content="hi")
    j.event("turn_end", turn=1, status="done", tokens=4321)
    j.event("prompt", turn=2, text="run it")
    j.event("answer", status="done", calls=[{"id": "c1", "name": "execute_command",
                                              "arguments": json.dumps({"command": "make"})}])
    j.event("run", id="c1", tool="execute_command")
    j.sync()
    os.close(j._fd)  # killed
    restart(rig, j.path)
    assert [w for w in rig.system(level="warn") if w.startswith("The last turn")] == [
        "The last turn was interrupted: DashFloat stopped before it ended. 1 call it left open is marked "
        "cancelled. The model is told so with your next prompt, and checks before repeating anything."]
    quit_agent(rig)
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    (interrupted,) = [e for e in events if e["type"] == "turn_end" and e["status"] == "interrupted"]
    assert interrupted["turn"] == 2 and interrupted["tokens"] == 4321


def test_an_estimated_size_stays_marked_across_a_resume_until_the_provider_counts_one(rig):
    j = journal_for(rig)
    j.begin(title="local")
    j.event("prompt", turn=1, text="hello")
    j.event("answer", status="done", content="hi")
    j.event("turn_end", turn=1, status="done", tokens=4321, tokens_estimated=True)
    j.event("prompt", turn=2, text="again")
    j.sync()
    os.close(j._fd)  # killed in turn 2
    restart(rig, j.path)
    rig.server.push(answer("counted", usage={"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}))
    rig.wait_idle(rig.prompt("and now"))
    quit_agent(rig)
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    ends = [(e["type"], e.get("status") or e.get("reason"), e.get("tokens"), e.get("tokens_estimated"))
            for e in events if e["type"] in ("turn_end", "end")]
    assert ends == [("turn_end", "done", 4321, True), ("turn_end", "interrupted", 4321, True),
                    ("turn_end", "done", 55, None), ("end", "quit", 55, None)]


def one_turn_session(rig) -> Journal:
    """A session of one answered turn, ended: its journal."""
    rig.server.push(answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("hello"))
    quit_agent(rig)
    return j


def test_a_resume_says_when_the_session_started_and_journals_it_synced(rig):
    j = one_turn_session(rig)
    header = json.loads(j.path.read_bytes().splitlines()[0])
    loaded = S.load(j.path)
    j2 = Journal(j.path, {"id": j.path.stem}, existing=True, next_seq=loaded.next_seq)
    synced = []
    real_sync = j2.sync

    def sync():
        synced.append([json.loads(x)["type"] for x in j2.path.read_bytes().splitlines()])
        real_sync()

    j2.sync = sync
    rig.out = Outbox()
    start(rig, j2, resumed=loaded)
    said = rig.out.wait(lambda m: m[0] == M.SYSTEM and "Resumed session" in m[2])[2]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(header["time"]))
    assert said == f"Resumed session {j.path.stem}, started {when}: 1 turn so far."
    quit_agent(rig)
    assert synced[0][-2:] == ["resume", "ui"]  # on disk before the first prompt, then at the end
    assert synced[1][-1] == "end" and len(synced) == 2
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    assert [e for e in events if e["type"] == "resume"][0]["interrupted"] is False


def test_a_journal_whose_header_has_no_time_resumes_started_at_an_unknown_time(rig):
    j = one_turn_session(rig)
    lines = j.path.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["time"]
    j.path.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    restart(rig, j.path)
    said = [t for t in rig.system(level="info") if "Resumed session" in t]
    assert said == [f"Resumed session {j.path.stem}, started at an unknown time: 1 turn so far."]


def test_mode_and_revoke_are_audit_events_in_the_journal(rig, caplog):
    rig.server.push(answer("ok"))
    j = journal_for(rig)
    agent = start(rig, j)
    agent.policy.allow_exact("execute_command", {"command": "make test"})
    for text in ("/mode read-only", "/permissions revoke 1"):
        rig.out.wait_kind(M.TURN_END, since=rig.prompt(text))
    rig.wait_idle(rig.prompt("hello"))  # the journal begins with the first prompt, earlier events kept
    quit_agent(rig)
    audits = [{k: e[k] for k in e if k not in ("seq", "time", "type")}
              for e in map(json.loads, j.path.read_bytes().splitlines()) if e["type"] == "audit"]
    assert audits == [{"what": "mode", "mode": "read-only", "by": "user (/mode)"},
                      {"what": "revoke", "rule": "execute_command(make test)", "by": "user (/permissions revoke)"}]
    # the journal is the audit trail: the log does not repeat it
    assert not [r for r in caplog.records if r.getMessage().startswith("audit: permission mode")
                or r.getMessage().startswith("audit: session rule revoked")]


def test_the_a_keys_session_rule_is_an_audit_event_in_the_journal(rig):
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo hi"})), answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    t = rig.prompt("run it")
    rig.decide(rig.confirm(t)[1], "always")
    rig.wait_idle(t)
    quit_agent(rig)
    audits = [{k: e[k] for k in e if k not in ("seq", "time", "type")}
              for e in map(json.loads, j.path.read_bytes().splitlines()) if e["type"] == "audit"]
    assert audits == [{"what": "session_rule", "rule": "execute_command(echo hi)", "by": "user key a"}]


def test_calls_a_crash_answered_get_no_row_on_screen_after_a_resume_either(rig):
    """The calls of a turn that crashed are answered for the model ("not run") without a
    row on screen: a resumed session draws none for them either."""
    rig.server.push(calls_reply(("c1", "list_directory", {}), ("c2", "list_directory", {"path": "."})))
    j = journal_for(rig)
    start(rig, j)
    crash_on(rig.agent, M.T_DONE)
    t = rig.prompt("list")
    rig.wait_idle(t)
    quit_agent(rig)
    assert rig.out.of(M.TOOL_RESULT, t) == []
    loaded = S.load(j.path)
    tools = [m for m in loaded.conversation if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["c1", "c2"] and all("not run" in m["content"] for m in tools)
    assert [m for m in S.ui_messages(loaded) if m[0] == M.TOOL_RESULT] == []


def test_the_model_note_waits_for_a_prompt_across_resumes(rig):
    j = interrupted_journal(rig)
    restart(rig, j.path)
    quit_agent(rig)  # resumed, then left without a prompt
    loaded = S.load(j.path)
    assert not loaded.open_turn and loaded.model_notes == [INTERRUPTED_NOTE]
    rig.server.push(answer("ok"))
    restart(rig, j.path)
    assert not [m for m in rig.out.of(M.SYSTEM) if "interrupted" in m[2]], "answered once, not again"
    t = rig.prompt("next")
    rig.wait_idle(t)
    assert rig.messages_of(1)[-1]["content"] == f"{INTERRUPTED_NOTE}\n\nnext"


def test_a_question_open_at_the_kill_is_closed_on_screen(rig):
    j = interrupted_journal(rig, confirm=True)
    loaded = S.load(j.path)
    assert loaded.pending_confirm == "c2"
    restart(rig, j.path)
    decided = rig.out.of(M.DECIDED)
    assert decided and decided[0][1] == "c2" and "not decided" in decided[0][2]
    rows = {r[1]["id"]: r[1] for r in rig.out.of(M.TOOL_RESULT)}
    assert "did not run" in rows["c2"]["text"]
    screen = app_screen(S.ui_messages(loaded) + rig.out.seen, replay=True, rows=40)
    assert not any("Apply?" in line for line in screen), "no question waits after a resume"


# ---- 3. /undo ------------------------------------------------------------------------------------


def undo(rig, arg: str = "") -> list[str]:
    """/undo [arg] until its turn has ended (the report, the journal synced, idle): its entries."""
    t = rig.prompt("/undo" + (f" {arg}" if arg else ""))
    rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t)  # its first entry: the turn before it has ended
    rig.out.wait_kind(M.TURN_END, since=t + next(i for i, m in enumerate(rig.out.since(t)) if m[0] == M.SYSTEM))
    return rig.system(t)


def changed_since(rig, *names: str) -> None:
    """A turn in which the model wrote each of `names` (each held "original\\n"), then a change
    of the user's to each: an /undo asks about them, in this order."""
    for name in names:
        (rig.root / name).write_text("original\n")
    rig.server.push(calls_reply(*[(f"c{i}", "write_file", {"path": n, "content": "model\n"}) for i, n in enumerate(names)]),
                    answer("ok"))
    rig.wait_idle(rig.prompt("write"))
    for name in names:
        (rig.root / name).write_text("user\n")


def undo_report(rig, since: int) -> str:
    return rig.out.wait(lambda m: m[0] == M.SYSTEM and m[2].startswith("/undo of"), since=since)[2]


def test_undo_puts_back_the_last_turn_then_the_one_before_and_tells_the_model(rig):
    (rig.root / "a.txt").write_text("one\n")
    rig.server.push(
        calls_reply(("c1", "edit_file", {"path": "a.txt", "search_block": "one", "replace_block": "two"}),
                    ("c2", "write_file", {"path": "sub/new.txt", "content": "created\n"})),
        answer("turn 1 done"),
        calls_reply(("c3", "edit_file", {"path": "a.txt", "search_block": "two", "replace_block": "three"})),
        answer("turn 2 done"),
        answer("noted"),
        answer("and then"),
    )
    start(rig, journal_for(rig))
    for text in ("first", "second"):
        rig.wait_idle(rig.prompt(text))
    assert (rig.root / "a.txt").read_text() == "three\n"
    report = undo(rig)
    assert (rig.root / "a.txt").read_text() == "two\n" and (rig.root / "sub/new.txt").exists()
    assert "turn 2" in report[-1] and "a.txt: restored" in report[-1] and "not changes made by commands" in report[-1]
    report = undo(rig)
    assert (rig.root / "a.txt").read_text() == "one\n"
    assert not (rig.root / "sub/new.txt").exists()
    assert "sub/new.txt: removed (DashFloat had created it)" in report[-1]
    assert "Nothing to undo" in undo(rig)[-1]
    rig.wait_idle(rig.prompt("what now?"))
    last = rig.bodies()[-1]["messages"][-1]["content"]
    assert "ran /undo on the file changes of turn 2" in last and "turn 1" in last and last.endswith("what now?")
    assert len(rig.bodies()) == 5, "/undo itself is never sent to the model"
    rig.wait_idle(rig.prompt("and then?"))  # the note was said once: the next prompt goes alone
    assert rig.bodies()[-1]["messages"][-1] == {"role": "user", "content": "and then?"}


@pytest.mark.parametrize("count", [12, 10])
def test_undo_names_ten_files_and_counts_the_rest(rig, count):
    names = [f"f{i:02}.txt" for i in range(count)]
    rig.server.push(calls_reply(*[(f"c{i}", "write_file", {"path": n, "content": "x"}) for i, n in enumerate(names)]),
                    answer("ok"), answer("noted"))
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("write them"))
    report = undo(rig)[-1]
    for n in names[:10]:
        assert f"  {n}: removed (DashFloat had created it)" in report
    assert not [n for n in names[10:] if n in report]
    more = count - 10
    assert ("  and 2 more files\n" in report) if more else ("more files" not in report)
    t = rig.prompt("what now?")
    rig.out.wait_kind(M.ASSISTANT_END, "done", since=t)
    note = rig.bodies()[-1]["messages"][-1]["content"]
    assert f"Put back as they were before: {', '.join(names[:10])}{f' and {more} more' if more else ''}. " in note


def test_undo_n_takes_several_turns_at_once(rig):
    (rig.root / "a.txt").write_text("0")
    replies = []
    for i in range(3):
        replies += [calls_reply((f"c{i}", "write_file", {"path": "a.txt", "content": str(i + 1)})), answer("ok")]
    rig.server.push(*replies)
    start(rig, journal_for(rig))
    for i in range(3):
        rig.wait_idle(rig.prompt(f"turn {i}"))
    report = undo(rig, "2")
    assert (rig.root / "a.txt").read_text() == "1" and "turns 3, 2:\n" in report[-1]
    t = rig.prompt("/undo two")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "error", since=t)
    assert "/undo takes a number of turns" in rig.system(t, "error")[0]
    report = undo(rig, "3")  # one turn is left to undo: that one, and the report says it was all
    assert (rig.root / "a.txt").read_text() == "0" and "turn 1 (all the turns that changed files):\n" in report[-1]


def test_a_file_changed_since_is_shown_as_a_diff_and_asked_about(rig):
    target = rig.root / "a.txt"
    target.write_text("original\n")
    rig.server.push(
        calls_reply(("c1", "edit_file", {"path": "a.txt", "search_block": "original", "replace_block": "by the model"})),
        answer("ok"),
        answer("noted"),
    )
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("edit"))
    target.write_text("by the model\nand by the user\n")
    t = rig.prompt("/undo")
    confirm = rig.confirm(t)
    lines = [text for _kind, text in confirm[2]["lines"]]
    assert any("changed since" in x for x in lines) and "-and by the user" in lines and "+original" in lines
    assert confirm[2]["always_asks"]
    rig.decide(confirm[1], "rejected")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and "/undo" in m[2], since=t)
    assert target.read_text() == "by the model\nand by the user\n", "n leaves the user's change"
    assert "a.txt: left as it is (you said n)" in rig.system(t)[-1]
    assert (M.DECIDED, confirm[2]["id"], "rejected by you") in rig.out.since(t)
    assert "Nothing to undo" in undo(rig)[-1], "that turn is undone"
    rig.wait_idle(rig.prompt("next"))
    note = rig.bodies()[-1]["messages"][-1]["content"]
    assert note.startswith("[DashFloat: the user ran /undo on the file changes of turn 1. Left as they are: a.txt. "
                           "Read a file again before you change it.]")


def test_esc_on_an_undo_question_leaves_that_file_and_the_rest(rig):
    start(rig, journal_for(rig))
    changed_since(rig, "a.txt", "b.txt")
    t = rig.prompt("/undo")
    row = rig.confirm(t)[2]["id"]
    rig.agent.send((M.CANCEL,))
    rig.out.wait(lambda m: m[0] == M.SYSTEM and "/undo" in m[2], since=t)
    report = rig.system(t)[-1]
    assert "  a.txt: left as it is (Esc)\n  b.txt: left as it is (Esc)\n" in report, "in the order of the changes"
    assert (M.DECIDED, row, "rejected by you") in rig.out.since(t)
    assert rig.results(t) == [{"id": row, "name": "undo", "status": "rejected", "text": "left as it is", "excerpt": []}]
    assert (rig.root / "a.txt").read_text() == (rig.root / "b.txt").read_text() == "user\n"
    rig.out.wait_kind(M.PHASE, "idle", since=t)


def test_y_on_the_question_puts_the_earlier_content_back(rig):
    target = rig.root / "a.txt"
    target.write_text("original\n")
    rig.server.push(
        calls_reply(("c1", "write_file", {"path": "a.txt", "content": "model\n"})), answer("ok"))
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("write"))
    target.unlink()  # removed by the user since
    t = rig.prompt("/undo")
    confirm = rig.confirm(t)
    assert any("it was removed since" in text for _k, text in confirm[2]["lines"])
    rig.decide(confirm[1], "approved")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and "/undo" in m[2], since=t)
    assert target.read_text() == "original\n"
    assert "a.txt: restored (you said y)" in rig.system(t)[-1]


def test_each_question_of_an_undo_has_its_own_row_and_a_late_key_answers_none(rig):
    start(rig, journal_for(rig))
    changed_since(rig, "a.txt", "b.txt")
    t = rig.prompt("/undo")
    first = rig.confirm(t)
    assert first[2]["summary"] == "undo a.txt"
    assert rig.out.of(M.TOOL_CALL, t) == [(M.TOOL_CALL, {"id": first[2]["id"], "name": "undo", "summary": "undo a.txt"})]
    rig.decide(first[1], "approved")
    second = rig.confirm(t, 2)
    assert second[2]["summary"] == "undo b.txt"
    assert second[1] != first[1] and second[2]["id"] != first[2]["id"]
    rig.decide(first[1], "approved")  # a second key for the first question, come late
    rig.decide(second[1], "rejected")
    report = undo_report(rig, t)
    assert "  a.txt: restored (you said y)\n  b.txt: left as it is (you said n)\n" in report
    assert (rig.root / "a.txt").read_text() == "original\n" and (rig.root / "b.txt").read_text() == "user\n"
    seen = rig.out.since(t)
    assert (M.DECIDED, first[2]["id"], "approved by you") in seen and (M.DECIDED, second[2]["id"], "rejected by you") in seen
    assert (M.PHASE, "running") in seen[seen.index(first):seen.index(second)], "the restore runs: no question is open"
    assert rig.results(t) == [
        {"id": first[2]["id"], "name": "undo", "status": "ok", "text": "restored", "excerpt": []},
        {"id": second[2]["id"], "name": "undo", "status": "rejected", "text": "left as it is", "excerpt": []}]


def test_a_late_key_for_an_earlier_undos_question_answers_no_later_one(rig):
    start(rig, journal_for(rig))
    changed_since(rig, "a.txt")
    t = rig.prompt("/undo")
    old = rig.confirm(t)
    rig.decide(old[1], "rejected")
    rig.wait_idle(t)
    rig.server.push(calls_reply(("c3", "execute_command", {"command": "true"}),
                                ("c4", "write_file", {"path": "b.txt", "content": "model\n"})), answer("ok"))
    t = rig.prompt("run and write")
    rig.decide(rig.confirm(t)[1], "approved")  # a question of a call between the two /undo's
    rig.wait_idle(t)
    (rig.root / "b.txt").write_text("user\n")
    t = rig.prompt("/undo")
    new = rig.confirm(t)
    rig.decide(old[1], "approved")
    rig.decide(new[1], "rejected")
    assert "b.txt: left as it is (you said n)" in undo_report(rig, t)
    assert (rig.root / "b.txt").read_text() == "user\n"


def test_a_long_difference_is_asked_about_with_its_whole_diff_and_a_short_one_without(rig):
    start(rig, journal_for(rig))
    changed_since(rig, "a.txt", "b.txt")
    (rig.root / "b.txt").write_text("".join(f"line {i}\n" for i in range(80)))
    t = rig.prompt("/undo")
    short = rig.confirm(t)[2]
    rig.decide(rig.confirm(t)[1], "rejected")
    long = rig.confirm(t, 2)[2]
    assert "full" not in short
    assert len(long["full"]) > len(long["lines"]) and "-line 79" in [text for _kind, text in long["full"]]
    rig.agent.send((M.CANCEL,))
    undo_report(rig, t)


def test_esc_while_an_approved_restore_runs_leaves_the_questions_not_yet_asked(rig, monkeypatch):
    from dashfloat.tools import undo as U

    real, entered, release = U.restore, threading.Event(), threading.Event()

    def restore(*a, **k):
        entered.set()
        release.wait(WAIT)
        return real(*a, **k)

    monkeypatch.setattr(U, "restore", restore)
    start(rig, journal_for(rig))
    changed_since(rig, "a.txt", "b.txt")
    t = rig.prompt("/undo")
    first = rig.confirm(t)
    rig.decide(first[1], "approved")
    assert entered.wait(WAIT)
    rig.agent.send((M.CANCEL,))  # before the restore's answer: that one is kept
    release.set()
    report = undo_report(rig, t)
    assert "  a.txt: restored (you said y)\n  b.txt: left as it is (Esc)\n" in report
    assert len(rig.out.of(M.CONFIRM, t)) == 1
    assert rig.out.of(M.DECIDED, t) == [(M.DECIDED, first[2]["id"], "approved by you")]
    assert (rig.root / "a.txt").read_text() == "original\n" and (rig.root / "b.txt").read_text() == "user\n"


def test_a_file_put_back_by_hand_is_said_to_be_as_it_was_and_the_model_is_told_nothing(rig):
    (rig.root / "a.txt").write_text("original\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "model\n"})), answer("ok"),
                    answer("fine"))
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("write"))
    (rig.root / "a.txt").write_text("original\n")
    t = rig.out.mark()
    report = undo(rig)[-1]
    assert report.startswith("/undo of the file changes of turn 1:\n  a.txt: already as it was before\n")
    assert (M.PHASE, "running") in rig.out.since(t)
    rig.wait_idle(rig.prompt("next"))
    assert rig.bodies()[-1]["messages"][-1] == {"role": "user", "content": "next"}


def test_an_undo_whose_look_at_the_files_fails_says_so_and_leaves_the_turn_to_undo(rig, monkeypatch):
    from dashfloat.tools import undo as U

    real, looked = U.inspect, []

    def inspect(root, item):
        looked.append(item.path)
        if len(looked) == 1:
            raise OSError("the disk went away")
        return real(root, item)

    monkeypatch.setattr(U, "inspect", inspect)
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "a\n"})), answer("ok"),
                    calls_reply(("c2", "execute_command", {"command": "true"})), answer("ran it"))
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("write"))
    t = rig.prompt("/undo")
    rig.out.wait_kind(M.TURN_END, "error", since=t)
    assert rig.system(t) == ["/undo failed: OSError: the disk went away (details in the log)."]
    assert rig.out.of(M.PHASE, t)[-1] == (M.PHASE, "idle")
    t = rig.prompt("run true")  # the next turn's question is its own, not the failed /undo's
    rig.decide(rig.confirm(t)[1], "approved")
    rig.out.wait_kind(M.TURN_END, "done", since=t)
    assert "a.txt: removed (DashFloat had created it)" in undo(rig)[-1], "tried again, it is undone"
    assert not (rig.root / "a.txt").exists()


def test_an_undo_is_synced_and_what_the_model_is_told_survives_a_resume(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "a\n"})), answer("ok"),
                    answer("noted"))
    j = journal_for(rig)
    synced = sync_spy(j)
    start(rig, j)
    rig.wait_idle(rig.prompt("go"))
    undo(rig)
    types = [json.loads(x)["type"] for x in j.path.read_bytes().splitlines()]
    assert "undo" in types and synced[-1] == types[-1], "synced with the undo and its report in it"
    quit_agent(rig)
    restart(rig, j.path)
    rig.wait_idle(rig.prompt("next"))
    assert rig.bodies()[-1]["messages"][-1]["content"] == (
        "[DashFloat: the user ran /undo on the file changes of turn 1. Put back as they were before: a.txt. "
        "Read a file again before you change it.]\n\nnext")


def test_the_answer_of_an_undo_that_crashed_does_not_go_into_the_next_one(rig, monkeypatch):
    from dashfloat.tools import undo as U

    real, entered, release, threads = U.inspect, threading.Event(), threading.Event(), []

    def inspect(*a, **k):
        if not threads:  # the first /undo's look at the files waits
            threads.append(threading.current_thread())
            entered.set()
            release.wait(WAIT)
        return real(*a, **k)

    monkeypatch.setattr(U, "inspect", inspect)
    agent = start(rig, journal_for(rig))
    changed_since(rig, "a.txt")
    crash_on(agent, M.CANCEL)
    t = rig.prompt("/undo")
    assert entered.wait(WAIT)
    rig.agent.send((M.CANCEL,))  # its handling fails: the turn ends, and the /undo with it
    rig.out.wait_kind(M.TURN_END, "error", since=t)
    t = rig.prompt("/undo")
    confirm = rig.confirm(t)
    release.set()
    threads[0].join(WAIT)
    rig.agent.send((M.T_NOTE, 0, "x", "marker"))  # handled after the dead /undo's answer
    rig.out.wait(lambda m: m == (M.TOOL_NOTE, "x", "marker"), since=t)
    rig.decide(confirm[1], "rejected")
    assert undo_report(rig, t).count("a.txt:") == 1
    assert len(rig.out.of(M.CONFIRM, t)) == 1 and rig.system(t, "error") == []


def test_undo_never_touches_a_file_dashfloat_did_not_write(rig):
    (rig.root / "mine.txt").write_text("the user's\n")
    rig.server.push(
        calls_reply(("c1", "execute_command", {"command": "echo from-a-command > cmd.txt; echo more >> mine.txt"}),
                    ("c2", "write_file", {"path": "w.txt", "content": "w\n"})),
        answer("ok"),
    )
    start(rig, journal_for(rig), policy=Policy(mode="unrestricted"))
    rig.wait_idle(rig.prompt("go"))
    report = undo(rig)
    assert not (rig.root / "w.txt").exists()
    assert (rig.root / "cmd.txt").read_text() == "from-a-command\n"
    assert (rig.root / "mine.txt").read_text() == "the user's\nmore\n"
    assert "cmd.txt" not in report[-1] and "mine.txt" not in report[-1]


def test_a_path_that_now_leads_elsewhere_is_left_alone(rig):
    (rig.root / "d").mkdir()
    (rig.root / "d" / "f.txt").write_text("old\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "d/f.txt", "content": "new\n"})), answer("ok"))
    start(rig, journal_for(rig))
    rig.wait_idle(rig.prompt("go"))
    (rig.root / "d").rename(rig.root / "e")
    (rig.root / "other").mkdir()
    (rig.root / "other" / "f.txt").write_text("new\n")
    os.symlink("other", rig.root / "d")
    report = undo(rig)
    assert "d/f.txt: left as it is: the path now leads somewhere else" in report[-1]
    assert (rig.root / "other" / "f.txt").read_text() == "new\n" and (rig.root / "e" / "f.txt").read_text() == "new\n"


def test_a_previous_content_not_kept_is_said_so(rig):
    (rig.root / "a.txt").write_text("old\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "new\n"})), answer("ok"))
    start(rig, journal_for(rig, undo_max=0))
    t = rig.prompt("go")
    rig.wait_idle(t)
    assert any("/undo cannot restore this file" in m[2] for m in rig.out.of(M.TOOL_NOTE, t))
    report = undo(rig)
    assert "a.txt: not restored: its previous content was not kept" in report[-1]
    assert (rig.root / "a.txt").read_text() == "new\n"


def test_undo_without_a_journal_says_why(rig):
    start(rig, None)
    t = rig.prompt("/undo")
    rig.out.wait(lambda m: m[0] == M.SYSTEM, since=t)
    assert "journal" in rig.system(t, "error")[0]


def test_undo_works_after_a_resume(rig):
    (rig.root / "a.txt").write_text("before\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "after\n"})), answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("go"))
    quit_agent(rig)
    restart(rig, j.path)
    report = undo(rig)
    assert "a.txt: restored" in report[-1] and (rig.root / "a.txt").read_text() == "before\n"


def test_a_resumed_session_goes_on_from_its_undos_its_token_count_and_its_last_answer(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "a\n"})), answer("wrote a"),
                    calls_reply(("c2", "write_file", {"path": "b.txt", "content": "b\n"})),
                    answer("wrote b", usage={"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}))
    j = journal_for(rig)
    start(rig, j, environ={"HOME": str(rig.root.parent / "home"), "XDG_STATE_HOME": str(rig.root.parent / "xdg")})
    rig.wait_idle(rig.prompt("one"))
    rig.wait_idle(rig.prompt("two"))
    assert "turn 2" in undo(rig)[-1] and not (rig.root / "b.txt").exists()
    quit_agent(rig)
    restart(rig, j.path, environ={"HOME": str(rig.root.parent / "home"), "XDG_STATE_HOME": str(rig.root.parent / "xdg")})
    t = rig.prompt("/copy")
    rig.out.wait(lambda m: m[0] == M.SYSTEM and "Copied" in m[2], since=t)
    assert (rig.root.parent / "xdg" / "dashfloat" / "copy.txt").read_text() == "wrote b"
    report = undo(rig)[-1]  # turn 2 was undone before the resume: turn 1 is next
    assert "turn 1" in report and "a.txt: removed" in report and not (rig.root / "a.txt").exists()
    quit_agent(rig)
    end = json.loads(j.path.read_bytes().splitlines()[-1])
    assert end["type"] == "end" and end["tokens"] == 42


def test_a_journal_that_cannot_be_written_is_a_warning_on_screen(rig):
    rig.server.push(answer("ok"))
    blocker = rig.root.parent / "state"
    blocker.write_text("a file where the sessions directory should be")
    start(rig, journal_for(rig))
    t = rig.prompt("hello")
    warn = rig.out.wait(lambda m: m[0] == M.SYSTEM and m[1] == "warn", since=t)[2]
    assert warn.startswith("The session journal could not be written")


def test_only_a_prompt_ends_a_turn_in_the_journal(rig):
    rig.server.push(answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    t = rig.prompt(f"/model {MODEL}")  # checked on a worker: it ends as a turn does, but is none
    rig.out.wait_kind(M.TURN_END, since=t)
    rig.wait_idle(rig.prompt("hello"))
    quit_agent(rig)
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    assert [(e["turn"], e["status"]) for e in events if e["type"] == "turn_end"] == [(1, "done")]


def test_a_crash_during_undo_after_a_resume_ends_that_turn_only(rig):
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "after\n"})), answer("ok"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("go"))
    quit_agent(rig)
    agent = restart(rig, j.path)
    crash_on(agent, M.U_DONE)
    t = rig.prompt("/undo")
    assert "The turn stopped on an internal error" in rig.out.wait(
        lambda m: m[0] == M.SYSTEM and m[1] == "error", since=t)[2]
    rig.out.wait_kind(M.TURN_END, "error", since=t)
    assert agent.alive and not rig.out.of(M.AGENT_DOWN, t)
    # the next turn's question is this turn's, not the dead /undo's: y runs the command
    rig.server.push(calls_reply(("c2", "execute_command", {"command": "true"})), answer("ran it"))
    t = rig.prompt("run true")
    rig.decide(rig.confirm(t)[1], "approved")
    assert rig.out.wait_kind(M.TOOL_RESULT, since=t)[1]["status"] == "ok"
    rig.out.wait_kind(M.TURN_END, "done", since=t)


def test_a_write_that_failed_is_not_undone_after_a_resume_either(rig, monkeypatch):
    from dashfloat.tools import results, runner

    real = runner.execute

    def execute(name, *a, **k):  # the change is journaled before the write, which then fails
        return results.error("io_error", "No space left on device") if name == "write_file" else real(name, *a, **k)

    monkeypatch.setattr(runner, "execute", execute)
    (rig.root / "a.txt").write_text("mine\n")
    rig.server.push(calls_reply(("c1", "write_file", {"path": "a.txt", "content": "theirs\n"})), answer("it failed"))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("go"))
    assert "Nothing to undo" in undo(rig)[-1]
    quit_agent(rig)
    restart(rig, j.path)
    assert "Nothing to undo" in undo(rig)[-1]
    assert (rig.root / "a.txt").read_text() == "mine\n"


# ---- 4. which files a command changed ------------------------------------------------------------


def git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_command_in_a_work_tree_says_which_files_it_changed(rig):
    git(rig.root, "init", "-q")
    (rig.root / "tracked.txt").write_text("v1\n")
    (rig.root / "dirty.txt").write_text("v1\n")
    git(rig.root, "add", ".")
    git(rig.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (rig.root / "dirty.txt").write_text("v2\n")  # modified before the command, and again by it
    rig.server.push(calls_reply(("c0", "write_file", {"path": "w.txt", "content": "w\n"}),
                                ("c1", "execute_command",
                                 {"command": "echo x > made.txt; echo v2 >> tracked.txt; echo v3 >> dirty.txt"})),
                    answer("ok"))
    start(rig, journal_for(rig), policy=Policy(mode="unrestricted"), git_report=True)
    t = rig.prompt("go")
    note = rig.out.wait(lambda m: m[0] == M.TOOL_NOTE and "git status" in m[2], since=t)[2]
    assert "changed 3 files" in note and "made.txt (new)" in note and "tracked.txt (modified)" in note
    assert "dirty.txt (modified)" in note and "/undo does not cover changes made by commands" in note
    rig.out.wait_kind(M.TURN_END, "done", since=t)
    # git is asked about commands only: DashFloat's own write is said by its row, not by git
    assert [m[1] for m in rig.out.of(M.TOOL_NOTE, t) if "git status" in m[2]] == ["c1"]
    assert [m[1:] for m in rig.out.of(M.FILES, t) if m[1] == "c0"] == [("c0", [{"path": "w.txt", "change": "created"}],
                                                                       "tool")]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_repository_that_names_a_filter_program_is_not_read(rig):
    git(rig.root, "init", "-q")
    marker = rig.root.parent / "filter-ran"
    git(rig.root, "config", "filter.x.clean", f"touch {marker}; cat")
    (rig.root / ".gitattributes").write_text("*.txt filter=x\n")
    (rig.root / "a.txt").write_text("a\n")
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "echo x > b.txt"})), answer("ok"))
    start(rig, journal_for(rig), policy=Policy(mode="unrestricted"), git_report=True)
    t = rig.prompt("go")
    note = rig.out.wait(lambda m: m[0] == M.TOOL_NOTE and "git status" in m[2], since=t)[2]
    assert "not read" in note and "filter.x.clean" in note and "/undo does not cover" in note
    assert not marker.exists(), "git ran the repository's filter"


def test_the_reasoning_shown_is_journaled_as_its_own_event_and_only_when_there_is_some(rig):
    """The reasoning an answer showed apart is a `reasoning` event before the answer's, so a
    resume can show it again; an answer without any writes none."""
    rig.server.push(answer("First.", reasoning=["Let me ", "think."]), answer("Second."))
    j = journal_for(rig)
    start(rig, j)
    rig.wait_idle(rig.prompt("one"))
    rig.wait_idle(rig.prompt("two"))
    quit_agent(rig)
    events = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    kinds = [e["type"] for e in events if e["type"] in ("prompt", "reasoning", "answer")]
    assert kinds == ["prompt", "reasoning", "answer", "prompt", "answer"], kinds
    assert next(e for e in events if e["type"] == "reasoning")["text"] == "Let me think."
