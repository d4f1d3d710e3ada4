"""End to end: `dashfloat -p` against the scripted server, as scripts and CI run it (no tty,
TERM=dumb, stdin closed or a pipe). Every format; every event of every stream-json run
validated against schema/dashfloat-events.schema.json; approvals over stdin and through a
program; the exit statuses; SIGTERM in the middle of a command; a headless session resumed
in the full-screen UI."""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from dashfloat import events as E
from dashfloat import sessions as S
from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env, dashfloat_bin
from tests.e2e.test_tools import (
    call,
    calls_reply,
    chat_posts,
    check_pairing,
    wait_posts,
)
from tests.fakeserver import json_reply, sse_reply
from tests.procs import kill_a_worker_thread, live_with_marker, wait_for
from tests.schema_check import check_stream, errors

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / E.SCHEMA_FILE).read_text())
TIMEOUT = 30


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    return p


def env_for(tmp_path, **extra):
    return clean_env(tmp_path, TERM="dumb", **extra)


def argv(server, project, *args, model="test-model"):
    out = [dashfloat_bin(), "--base-url", server.url, "-C", str(project)]
    if model:
        out += ["--model", model]
    return out + list(args)


class Done:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr.decode("utf-8", "replace")

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines()]

    def result(self) -> dict:
        """The stream's result, after checking every event against the schema."""
        return check_stream(self.events(), SCHEMA)


def run(server, tmp_path, project, *args, stdin=subprocess.DEVNULL, data=None, env=None, model="test-model"):
    kw = {"input": data} if data is not None else {"stdin": stdin}
    proc = subprocess.run(argv(server, project, *args, model=model), capture_output=True,
                          env=env or env_for(tmp_path), timeout=TIMEOUT, **kw)
    return Done(proc)


class Live:
    """A headless run whose events are read as they come and whose stdin can be written."""

    def __init__(self, server, tmp_path, project, *args, env=None):
        self.proc = subprocess.Popen(argv(server, project, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env or env_for(tmp_path))
        self.events: list[dict] = []
        self.buf = b""
        self.err = b""
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_err(self):
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self.err += chunk

    def next(self, pred, timeout: float = 10.0) -> dict:
        """The first event (seen or coming) that matches."""
        for ev in self.events:
            if pred(ev):
                return ev
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                ev = json.loads(line)
                self.events.append(ev)
                if pred(ev):
                    return ev
            left = deadline - time.monotonic()
            assert left > 0, f"no matching event; seen {[e['type'] for e in self.events]}; stderr {self.err!r}"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                assert chunk, f"stdout ended; seen {[e['type'] for e in self.events]}; stderr {self.err!r}"
                self.buf += chunk

    def answer(self, obj) -> None:
        self.proc.stdin.write((obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, dict]:
        code = self.proc.wait(timeout)
        rest = self.proc.stdout.read()
        self.buf += rest
        self.next(lambda e: e["type"] == "result")
        return code, check_stream(self.events, SCHEMA)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def live(server, tmp_path, project):
    runs: list[Live] = []

    def start(*args, **kw) -> Live:
        r = Live(server, tmp_path, project, *args, **kw)
        runs.append(r)
        return r

    yield start
    for r in runs:
        r.close()


def write_reply(path="a.txt", content="x\n", call_id="call_1"):
    return calls_reply(call("write_file", {"path": path, "content": content}, call_id=call_id), text=["Writing."])


# ---- formats -------------------------------------------------------------------------------------


def test_text_prints_the_answer_only_with_no_tty_term_dumb_and_stdin_closed(server, tmp_path, project):
    server.push(sse_reply(["Hello", " from", " the model."]))
    cmd = " ".join(shlex.quote(a) for a in argv(server, project, "-p", "say hello")) + " <&-"
    proc = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, env=env_for(tmp_path), timeout=TIMEOUT)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"Hello from the model.\n", b"")
    (post,) = chat_posts(server)
    system, *rest = post["json"]["messages"]
    assert system["role"] == "system" and rest == [{"role": "user", "content": "say hello"}]


def test_urwid_is_never_imported(server, tmp_path, project):
    server.push(sse_reply(["ok"]))
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "dashfloat", *argv(server, project, "-p", "hi")[1:]],
                          capture_output=True, env=env_for(tmp_path), timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and proc.stdout == b"ok\n", proc.stderr[-2000:]
    assert b"dashfloat.agent" in proc.stderr, "importtime saw nothing"
    assert b"urwid" not in proc.stderr and b"dashfloat.ui" not in proc.stderr


def test_stream_json_every_event_valid_and_each_line_written_as_it_happens(server, tmp_path, project, live):
    go = threading.Event()
    server.push(sse_reply(["first ", "second"], waits={2: go}))  # the second piece waits for the test
    r = live("-p", "go", "--output-format", "stream-json")
    delta = r.next(lambda e: e["type"] == "message.delta")
    assert delta["text"] == "first ", "a piped line waited for more output before it was written"
    go.set()
    code, result = r.finish()
    assert code == 0 and result["answer"] == "first second" and result["outcome"] == "completed"
    types = [e["type"] for e in r.events]
    assert types[:4] == ["session.start", "model", "prompt", "message.start"], types
    start = r.events[0]
    assert start["schema_version"] == E.SCHEMA_VERSION and start["cwd"] == str(project.resolve())
    assert Path(start["journal"]).is_file() and start["journal"].endswith(f"{start['session_id']}.jsonl")


def test_json_prints_one_result_object(server, tmp_path, project):
    server.push(write_reply(), sse_reply(["All done."], usage={"prompt_tokens": 9, "completion_tokens": 3,
                                                               "total_tokens": 12}))
    done = run(server, tmp_path, project, "-p", "write", "--output-format", "json", "--permission-mode",
               "accept-edits")
    assert done.code == 0, done.err
    (result,) = done.events()
    assert errors(result, SCHEMA) == [] and result["type"] == "result"
    assert result["schema_version"] == E.SCHEMA_VERSION
    assert result["answer"] == "All done." and result["usage"]["total_tokens"] == 12 and result["cost"] is None
    assert result["files_changed"] == [{"path": "a.txt", "change": "created", "call_id": "call_1", "source": "tool"}]
    assert [c["status"] for c in result["calls"]] == ["ok"]
    assert (project / "a.txt").read_text() == "x\n"


def test_verbose_text_shows_tool_rows_on_stderr(server, tmp_path, project):
    server.push(calls_reply(call("execute_command", {"command": "echo live-line"})), sse_reply(["ok"]))
    done = run(server, tmp_path, project, "-p", "run", "-v", "--allow", "execute_command(echo *)")
    assert done.code == 0 and done.out == b"ok\n", done.err
    assert "[tool] execute_command echo live-line" in done.err and "  | live-line" in done.err
    assert "[tool] execute_command: ok: exit 0" in done.err


def test_the_prompt_can_come_on_stdin(server, tmp_path, project):
    server.push(sse_reply(["read it"]))
    done = run(server, tmp_path, project, "-p", "--output-format", "stream-json",
               data=b"Review this:\n+added line\n")
    assert done.code == 0, done.err
    assert done.result()["answer"] == "read it"
    assert chat_posts(server)[0]["json"]["messages"][1]["content"] == "Review this:\n+added line\n"


# ---- exit statuses -------------------------------------------------------------------------------


def test_a_provider_error_exits_1_with_the_error(server, tmp_path, project):
    server.push(json_reply(401, {"error": {"message": "Incorrect API key provided"}}))
    done = run(server, tmp_path, project, "-p", "hi", "--output-format", "stream-json")
    assert done.code == 1
    result = done.result()
    assert (result["outcome"], result["stop_reason"], result["answer"]) == ("error", "error", None)
    assert any("API key" in e for e in result["errors"])
    assert [e["source"] for e in done.events() if e["type"] == "error"] == ["agent"]
    text = run(server, tmp_path, project, "-p", "hi")  # text: the error on stderr, nothing on stdout
    assert text.code == 1 and text.out == b"" and text.err.startswith("dashfloat: error: ")


def test_an_empty_answer_exits_1(server, tmp_path, project):
    server.push(sse_reply([]))
    done = run(server, tmp_path, project, "-p", "hi")
    assert done.code == 1 and done.out == b"" and "returned nothing" in done.err


@pytest.mark.parametrize("args, words", [
    (["-p", "hi", "--approvals", "maybe"], "none, stdin or cmd:PROGRAM"),
    (["-p", "hi", "--approval-timeout", "0"], "above 0"),
    (["-p", "   "], "the prompt is empty"),
    (["-p", "/nosuch"], "/nosuch"),
    (["-p", "hi", "policy", "list"], "-p runs a prompt"),
    (["--output-format", "json"], "with -p (headless mode)"),
    (["-p", "--approvals", "stdin"], "give the prompt as -p PROMPT"),
])
def test_usage_errors_exit_2_before_anything_runs(server, tmp_path, project, args, words):
    done = run(server, tmp_path, project, *args)
    assert done.code == 2 and words in done.err, done.err
    assert done.out == b"" and chat_posts(server) == []


def test_no_model_to_choose_exits_2_with_a_result(server, tmp_path, project):
    server.models = ["a", "b"]
    done = run(server, tmp_path, project, "-p", "hi", "--output-format", "stream-json", model=None)
    assert done.code == 2
    result = done.result()
    assert (result["outcome"], result["stop_reason"]) == ("config_error", "config")
    assert any(e["type"] == "notice" and "serves 2 models" in e["text"] for e in done.events())


def test_the_loop_limit_exits_3(server, tmp_path, project):
    cfg = tmp_path / "config" / "dashfloat"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("max_episodes = 1\n")
    server.push(calls_reply(call("list_directory", {"path": "."})))
    done = run(server, tmp_path, project, "-p", "look", "--output-format", "stream-json")
    assert done.code == 3, done.err
    result = done.result()
    assert (result["outcome"], result["stop_reason"]) == ("limit", "limit")


def test_a_budget_exits_3_and_the_result_has_the_runs_tokens_and_cost(server, tmp_path, project):
    cfg = tmp_path / "config" / "dashfloat"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('[prices]\n"test-model" = { input = 1.0, output = 2.0 }\n')
    server.push(calls_reply(call("list_directory", {"path": "."}),
                            usage={"prompt_tokens": 6000, "completion_tokens": 500, "total_tokens": 6500}),
                sse_reply(["never"]))
    done = run(server, tmp_path, project, "-p", "look", "--output-format", "stream-json", "--max-tokens", "5000")
    assert done.code == 3, done.err
    result = done.result()
    assert (result["outcome"], result["stop_reason"]) == ("limit", "budget")
    assert result["tokens"] == 6500 and result["cost"] == pytest.approx((6000 * 1.0 + 500 * 2.0) / 1e6)
    assert [c["status"] for c in result["calls"]] == ["error"], "no call runs once the budget is spent"
    assert len(chat_posts(server)) == 1
    assert any("max_tokens" in e or "budget" in e.lower() for e in result["errors"]), result["errors"]


def test_a_compaction_is_an_event(server, tmp_path, project):
    cfg = tmp_path / "config" / "dashfloat"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("context_window = 8192\n")
    big = "word " * 8000  # ~11,000 tokens of a tool output: the next request is over the window
    (project / "big.txt").write_text(big)
    server.push(calls_reply(call("read_file", {"path": "big.txt"})), sse_reply(["Read it."]))
    done = run(server, tmp_path, project, "-p", "read big.txt", "--output-format", "stream-json")
    assert done.code == 0, done.err
    done.result()  # every event valid
    (c,) = [e for e in done.events() if e["type"] == "compaction"]
    assert c["reason"] == "auto" and c["tokens_after"] < c["tokens_before"] and c["window"] == 8192
    assert c["failed"] is None and done.result()["answer"] == "Read it."
    assert c["summary"].startswith("context compacted:")


def test_a_refused_approval_exits_4_and_is_listed(server, tmp_path, project):
    server.push(write_reply(), sse_reply(["I could not write it."]))
    done = run(server, tmp_path, project, "-p", "write", "--output-format", "stream-json")
    assert done.code == 4
    result = done.result()
    assert result["outcome"] == "approval_required" and result["answer"] == "I could not write it."
    (denial,) = result["permission_denials"]
    assert denial["approval_required"] and denial["by"] == "policy" and denial["summary"].startswith("write_file a.txt")
    assert not (project / "a.txt").exists()
    told = json.loads(wait_posts(server, 2)[1]["json"]["messages"][-1]["content"])
    assert told["rejected"] is True and "nobody can give it" in told["error"]
    # text output says so on stderr, never a silent 0
    server.push(write_reply(), sse_reply(["no"]))
    text = run(server, tmp_path, project, "-p", "write")
    assert text.code == 4 and "not approved (policy): write_file a.txt" in text.err


def test_sigint_while_streaming_exits_130_with_a_result(server, tmp_path, project, live):
    hold = threading.Event()
    server.push(sse_reply(["partial ", "rest"], waits={2: hold}))
    r = live("-p", "go", "--output-format", "stream-json")
    r.next(lambda e: e["type"] == "message.delta")
    r.proc.send_signal(signal.SIGINT)
    code, result = r.finish()
    hold.set()
    assert code == 130
    assert (result["outcome"], result["stop_reason"], result["signal"]) == ("interrupted", "cancelled", "SIGINT")
    assert [e["status"] for e in r.events if e["type"] == "message.end"] == ["cancelled"]


def test_a_reader_that_goes_away_ends_the_run_quietly(server, tmp_path, project):
    hold = threading.Event()
    server.push(sse_reply(["one ", "two ", "three"], waits={2: hold}))
    cmd = " ".join(shlex.quote(a) for a in argv(server, project, "-p", "go", "--output-format", "stream-json"))
    proc = subprocess.Popen(["/bin/sh", "-c", f"{cmd}; echo status=$? >&2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(tmp_path))
    proc.stdout.readline()  # session.start
    proc.stdout.close()  # the reader leaves: the next event cannot be written
    try:
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        hold.set()
    assert err.strip().splitlines()[-1] == b"status=141", err
    assert b"Traceback" not in err


# ---- approvals over stdin ---------------------------------------------------------------------------


def test_stdin_approve_then_reject(server, tmp_path, project, live):
    server.push(write_reply("a.txt", "A\n", "call_1"), write_reply("b.txt", "B\n", "call_2"), sse_reply(["done"]))
    r = live("-p", "write both", "--output-format", "stream-json", "--approvals", "stdin")
    req = r.next(lambda e: e["type"] == "approval.requested")
    assert req["tool"] == "write_file" and req["timeout_s"] == 300
    assert {"kind": "add", "text": "+A"} in req["preview"]
    r.answer({"id": req["approval_id"], "decision": "approve"})
    req2 = r.next(lambda e: e["type"] == "approval.requested" and e["approval_id"] != req["approval_id"])
    r.answer({"id": req2["approval_id"], "decision": "reject", "reason": "b is generated"})
    code, result = r.finish()
    assert code == 4
    assert (project / "a.txt").read_text() == "A\n" and not (project / "b.txt").exists()
    assert [(e["decision"], e["by"]) for e in r.events if e["type"] == "approval.decided"] == [
        ("approve", "stdin"), ("reject", "stdin")]
    assert [d["reason"] for d in result["permission_denials"]] == ["b is generated"]


def test_stdin_approving_everything_exits_0(server, tmp_path, project, live):
    server.push(write_reply(), sse_reply(["done"]))
    r = live("-p", "write", "--output-format", "stream-json", "--approvals", "stdin")
    req = r.next(lambda e: e["type"] == "approval.requested")
    r.answer({"id": req["approval_id"], "decision": "approve"})
    code, result = r.finish()
    assert code == 0 and result["permission_denials"] == [] and (project / "a.txt").exists()


def test_stdin_malformed_answers_are_errors_and_eof_rejects(server, tmp_path, project, live):
    server.push(write_reply(), sse_reply(["ok"]))
    r = live("-p", "write", "--output-format", "stream-json", "--approvals", "stdin")
    req = r.next(lambda e: e["type"] == "approval.requested")
    r.answer(b"approve please")
    r.answer({"id": "ap-999", "decision": "approve"})
    r.answer({"decision": "approve"})
    r.next(lambda e: e["type"] == "error" and "without a string" in e["message"])
    r.proc.stdin.close()  # EOF: what is pending is rejected
    code, result = r.finish()
    assert code == 4 and not (project / "a.txt").exists()
    decided = [e for e in r.events if e["type"] == "approval.decided"]
    assert [(e["approval_id"], e["by"]) for e in decided] == [(req["approval_id"], "eof")]
    assert [e["source"] for e in r.events if e["type"] == "error"] == ["approvals"] * 3
    err = r.err.decode()
    assert "dashfloat: approvals: an answer that is not JSON" in err and "ap-999" in err


def test_stdin_timeout_rejects_and_reports(server, tmp_path, project, live):
    server.push(write_reply(), sse_reply(["ok"]))
    r = live("-p", "write", "--output-format", "stream-json", "--approvals", "stdin", "--approval-timeout", "0.5")
    start = time.monotonic()
    code, result = r.finish()
    assert code == 4 and time.monotonic() - start < 10
    (decided,) = [e for e in r.events if e["type"] == "approval.decided"]
    assert (decided["by"], decided["reason"]) == ("timeout", "no approval came within 0.5s")


# ---- approvals by a program ----------------------------------------------------------------------------


def program(tmp_path, body: str) -> str:
    path = tmp_path / f"approve-{uuid.uuid4().hex[:6]}.py"
    path.write_text(f"import json, sys, time\nreq = json.loads(sys.stdin.readline())\n{body}\n")
    return f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.mark.parametrize("body, code, by", [
    ('print(json.dumps({"id": req["approval_id"], "decision": "approve" if req["tool"] == "write_file" '
     'and req["preview"] else "reject"}))', 0, "program"),
    ('print(json.dumps({"decision": "reject", "reason": "not today"}))', 4, "program"),
    ('print("approve")', 4, "error"),
    ('sys.exit(3)', 4, "error"),
])
def test_an_approval_program_decides(server, tmp_path, project, body, code, by):
    server.push(write_reply(), sse_reply(["ok"]))
    done = run(server, tmp_path, project, "-p", "write", "--output-format", "stream-json",
               "--approvals", program(tmp_path, body))
    assert done.code == code, done.err
    done.result()
    (decided,) = [e for e in done.events() if e["type"] == "approval.decided"]
    assert decided["by"] == by
    assert (project / "a.txt").exists() == (code == 0)


def test_a_slow_program_is_killed_and_rejects(server, tmp_path, project):
    marker = f"55.{uuid.uuid4().int % 10**6:06d}"
    server.push(write_reply(), sse_reply(["ok"]))
    slow = program(tmp_path, f"import subprocess\nsubprocess.run(['sleep', '{marker}'])")
    start = time.monotonic()
    done = run(server, tmp_path, project, "-p", "write", "--output-format", "stream-json",
               "--approvals", slow, "--approval-timeout", "1")
    assert done.code == 4 and time.monotonic() - start < 15
    (decided,) = [e for e in done.events() if e["type"] == "approval.decided"]
    assert decided["by"] == "error" and "did not answer within 1s" in decided["reason"]
    assert live_with_marker(marker) == [], "the approval program's process outlived it"


# ---- signals, the journal, resuming ----------------------------------------------------------------


@pytest.mark.parametrize("to", ["process", "worker thread"])
def test_sigterm_in_the_middle_of_a_command_leaves_no_process_and_a_complete_journal(to, server, tmp_path, project,
                                                                                      live):
    """`to`: kill(2) of the pid, or of a worker thread's id (the process's signal, taken by
    that thread: a kill the kernel hands to a thread other than the main one, which once left
    the run waiting for the command's own time limit)."""
    marker = f"47.{uuid.uuid4().int % 10**6:06d}"
    server.push(calls_reply(call("execute_command", {"command": f"sleep {marker} & sleep {marker}"})))
    r = live("-p", "hang", "--output-format", "stream-json", "--permission-mode", "unrestricted")
    r.next(lambda e: e["type"] == "tool.call")
    assert wait_for(lambda: len(live_with_marker(marker)) >= 2, 10), "the command never started"
    if to == "process":
        r.proc.send_signal(signal.SIGTERM)
    else:
        kill_a_worker_thread(r.proc.pid, signal.SIGTERM)
    code, result = r.finish()
    assert code == 130
    assert (result["outcome"], result["signal"], result["stop_reason"]) == ("interrupted", "SIGTERM", "cancelled")
    assert [c["status"] for c in result["calls"]] == ["cancelled"]
    assert {"type": "notice", "level": "info", "text": "Turn stopped (SIGTERM)."}.items() <= next(
        e for e in r.events if e["type"] == "notice").items()  # nobody is asked what to do instead
    assert wait_for(lambda: live_with_marker(marker) == [], 5), live_with_marker(marker)
    journal = Path(r.events[0]["journal"])
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    types = [e["type"] for e in lines]
    assert types[-1] == "end" and lines[-1]["reason"] == "signal", types[-5:]
    assert {"type": "cancel", "by": "SIGTERM"}.items() <= next(e for e in lines if e["type"] == "cancel").items()
    assert next(e for e in lines if e["type"] == "turn_end")["status"] == "cancelled"
    assert next(e for e in lines if e["type"] == "result")["content"]["cancelled"] is True
    loaded = S.load(journal)
    assert not loaded.open_turn and loaded.notes == []


def test_continue_and_resume_work_headless(server, tmp_path, project):
    server.push(sse_reply(["First answer."]), sse_reply(["Second answer."]), sse_reply(["Third."]))
    one = run(server, tmp_path, project, "-p", "first", "--output-format", "stream-json")
    sid = one.result()["session_id"]
    assert one.result()["resumable"] is True
    two = run(server, tmp_path, project, "-p", "second", "--continue", "--output-format", "stream-json")
    assert two.code == 0
    start = two.events()[0]
    assert start["resumed"] is True and start["session_id"] == sid
    assert [m["content"] for m in chat_posts(server)[1]["json"]["messages"][1:]] == ["first", "First answer.", "second"]
    three = run(server, tmp_path, project, "-p", "third", "--resume", sid[:6], "--output-format", "json")
    assert three.code == 0 and three.events()[0]["session_id"] == sid
    assert len(chat_posts(server)[2]["json"]["messages"]) == 6  # the system message, then five


def test_a_headless_session_resumed_in_the_ui(server, tmp_path, project, dash):
    server.push(write_reply("notes.txt", "from CI\n"), sse_reply(["Wrote the notes headless."]))
    done = run(server, tmp_path, project, "-p", "write my notes", "--permission-mode", "accept-edits",
               env=clean_env(tmp_path, TERM="dumb"))
    assert done.code == 0 and done.out == b"Wrote the notes headless.\n", done.err
    server.push(sse_reply(["Back in the UI."]))
    t = dash("-C", str(project), "--continue", wait=False)
    wait_ready(t)
    t.wait_text("Wrote the notes headless.")
    t.wait_text("Resumed session")
    for seen in ("write my notes", "Writing.", "write_file notes.txt", "+from CI"):
        assert seen in t.text, f"{seen!r} is not back:\n{t.dump()}"
    t.type("and now?\r")
    t.wait_text("Back in the UI.")
    posts = wait_posts(server, 3)
    msgs = posts[2]["json"]["messages"][1:]  # after the system message
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant", "user"], msgs
    check_pairing(posts[2])
    t.send("\x04")
    assert t.wait_exit() == 0
