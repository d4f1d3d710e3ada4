"""End to end: sessions survive. Work, quit, `dashfloat --continue`: the transcript is back and
the next prompt carries the whole conversation; kill -9 in the middle of a command, then
`--continue`: the same, with the call answered (outcome unknown) and the model told; /undo
puts a written file back; `dashfloat sessions` lists them.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env, dashfloat_bin
from tests.e2e.test_tools import (
    call,
    calls_reply,
    chat_posts,
    check_pairing,
    tool_results,
    wait_confirming,
    wait_posts,
)
from tests.fakeserver import sse_reply
from tests.procs import live_with_marker


def quit_dash(t) -> None:
    t.send("\x04")  # Ctrl-D on the empty prompt
    assert t.wait_exit() == 0


def resume(dash, project, *args):
    return dash("-C", str(project), *args)


def test_work_quit_continue_the_transcript_is_back_and_the_next_prompt_works(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(
        calls_reply(call("write_file", {"path": "notes.txt", "content": "first line\n"}), text=["Writing notes."]),
        sse_reply(["The notes are written."]),
    )
    t = dash("-C", str(project))
    t.type("write my notes\r")
    wait_confirming(t)
    t.type("y")
    t.wait_text("The notes are written.")
    t.wait_status("idle")
    quit_dash(t)

    server.push(sse_reply(["Second answer."]))
    t2 = resume(dash, project, "--continue")
    t2.wait_text("The notes are written.")
    t2.wait_text("Resumed session")
    for seen in ("write my notes", "Writing notes.", "write_file notes.txt", "+first line",
                 "approved by you"):
        assert seen in t2.text, f"{seen!r} is not back:\n{t2.dump()}"
    t2.type("and now?\r")
    t2.wait_text("Second answer.")
    posts = wait_posts(server, 3)
    msgs = posts[2]["json"]["messages"]
    assert msgs[0]["role"] == "system"  # the system message is built again, never journalled
    msgs = msgs[1:]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant", "user"], msgs
    assert msgs[0]["content"] == "write my notes" and msgs[-1]["content"] == "and now?"
    assert msgs[1]["tool_calls"][0]["function"]["name"] == "write_file"
    assert json.loads(msgs[2]["content"])["ok"] is True
    assert msgs[3]["content"] == "The notes are written."
    check_pairing(posts[2])
    quit_dash(t2)

    # the listing names it, with its first prompt and two turns
    listing = dash_output(tmp_path, ["sessions", "-C", str(project)])
    assert "write my notes" in listing and " 2 " in listing, listing


def dash_output(tmp_path, args: list[str]) -> str:
    import subprocess

    out = subprocess.run([dashfloat_bin(), *args], env=clean_env(tmp_path), capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_kill_9_during_a_command_then_continue_answers_the_call_and_tells_the_model(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    marker = f"37.{uuid.uuid4().int % 10**6:06d}"
    server.push(calls_reply(call("execute_command", {"command": f"sleep {marker}"}, call_id="call_sleep")))
    t = dash("-C", str(project))
    t.type("wait a while\r")
    wait_confirming(t)
    t.type("y")
    t.wait_status("running")
    deadline = time.monotonic() + 5
    while not live_with_marker(marker):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    t.child.kill(signal.SIGKILL)
    t.wait_exit()
    for pid in live_with_marker(marker):  # orphaned by the kill: not DashFloat's to clean up any more
        os.kill(pid, signal.SIGKILL)

    server.push(sse_reply(["I will check first."]))
    t2 = resume(dash, project, "--continue")
    t2.wait_flat("The last turn was interrupted")
    assert "wait a while" in t2.text and f"execute_command sleep {marker}" in t2.text, t2.dump()
    t2.wait_flat("cancelled: DashFloat stopped while this call was running")
    t2.type("go on\r")
    t2.wait_text("I will check first.")
    posts = wait_posts(server, 2)
    check_pairing(posts[1])
    result = tool_results(posts[1])["call_sleep"]
    assert result["cancelled"] is True and "unknown" in result["error"], result
    last = posts[1]["json"]["messages"][-1]
    assert last["role"] == "user" and "interrupted" in last["content"] and last["content"].endswith("go on")
    quit_dash(t2)


def test_undo_puts_back_a_file_the_model_edited(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "app.py").write_text("x = 1\n")
    server.push(
        calls_reply(call("edit_file", {"path": "app.py", "search_block": "x = 1", "replace_block": "x = 2"})),
        sse_reply(["Edited."]),
    )
    t = dash("-C", str(project))
    t.type("bump x\r")
    wait_confirming(t)
    t.type("y")
    t.wait_text("Edited.")
    t.wait_status("idle")
    assert (project / "app.py").read_text() == "x = 2\n"
    t.type("/undo\r")
    t.wait_flat("app.py: restored")
    assert (project / "app.py").read_text() == "x = 1\n"
    assert len(chat_posts(server)) == 2, "/undo is not sent to the model"
    quit_dash(t)


def test_a_second_dashfloat_cannot_continue_an_open_session(dash, server, spawn, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(sse_reply(["Hi."]))
    t = dash("-C", str(project))
    t.type("hello\r")
    t.wait_text("Hi.")
    t.wait_status("idle")
    other = spawn([dashfloat_bin(), "--base-url", server.url, "--model", "test-model", "-C", str(project),
                   "--continue"])
    other.wait_for(lambda o: o.eof, what="the second DashFloat to refuse")
    assert other.wait_exit() == 2
    assert "open in another DashFloat (process" in other.text and "kill" in other.text, other.dump()
    quit_dash(t)
    # once the first has quit, it goes on: --resume with a prefix of its id, from another
    # directory (it runs in its own)
    (sid,) = [p.stem for p in (tmp_path / "state" / "dashfloat" / "sessions").glob("*/*.jsonl")]
    t3 = dash("--resume", sid[:6], cwd=str(tmp_path))
    t3.wait_text("Hi.")
    wait_ready(t3)
    server.push(calls_reply(call("list_directory", {"path": "."})), sse_reply(["Listed."]))
    (project / "only-here.txt").write_text("x")
    t3.type("list\r")
    t3.wait_text("Listed.")
    listing = json.loads(chat_posts(server)[-1]["json"]["messages"][-1]["content"])
    assert [e["name"] for e in listing["entries"]] == ["only-here.txt"], listing
    quit_dash(t3)
