"""The headless front end without processes: its mapping of the agent's messages to events
(every kind mapped, every event in the schema), the schema file and its validator, the
events a scripted run emits (each valid, seq without gaps, one result last), the exit
status, and the approvals: policy, stdin answers (malformed, unknown, EOF, timeout) and a
program's verdicts."""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path

import pytest

from dashfloat import approvals, headless
from dashfloat import events as E
from dashfloat import messages as M
from tests.schema_check import errors

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / E.SCHEMA_FILE).read_text())


# ---- the table, the schema and the validator ----------------------------------------------------


def test_every_message_the_agent_posts_has_a_mapping():
    assert set(headless.EVENTS_OF) == set(M.AGENT_TO_UI), (
        "a message kind without a mapping to events: add it to headless.EVENTS_OF (and the schema)")


def test_every_mapped_event_is_in_the_schema_and_every_schema_event_is_made():
    made = {t for types in headless.EVENTS_OF.values() for t in types} | set(headless.OWN_EVENTS)
    assert made <= set(E.EVENTS), made - set(E.EVENTS)
    assert set(E.EVENTS) == made


def test_the_schema_file_is_the_one_events_py_makes():
    assert E.main(["--check", str(ROOT / E.SCHEMA_FILE)]) == 0, "run make man"
    assert SCHEMA["x-schema-version"] == E.SCHEMA_VERSION
    assert f"{headless.LIVE_MAX:,} characters" == E.LIVE_MAX_TEXT


def test_the_validator_rejects_what_the_schema_forbids():
    good = {"type": "notice", "seq": 1, "time": 1.5, "session_id": "ab", "level": "warn", "text": "x"}
    assert errors(good, SCHEMA) == []
    for bad, why in [
        ({**good, "seq": 0}, "below 1"),
        ({**good, "level": "debug"}, "not one of"),
        ({**good, "extra": 1}, "not allowed"),
        ({k: v for k, v in good.items() if k != "session_id"}, "missing"),
        ({**good, "seq": True}, "is not integer"),
        ({**good, "type": "no.such"}, "oneOf"),
        ({**good, "text": None}, "is not string"),
    ]:
        found = errors(bad, SCHEMA)
        assert any(why in e for e in found), (bad, found)
    with pytest.raises(ValueError):
        errors({}, {"type": "object", "unevaluatedProperties": False})


# ---- a scripted run -------------------------------------------------------------------------------


class FakeAgent:
    def __init__(self):
        self.sent: list[tuple] = []

    def send(self, msg):
        self.sent.append(msg)


class Harness:
    """A Run fed by hand; out and err are kept in lists unless given (None: the Run's own)."""

    def __init__(self, approvals_mode="none", program=None, timeout=None, fmt="stream-json", verbose=False,
                 journal_path="/tmp/j.jsonl", out="list", err="list", agent=None, start=True):
        self.agent = agent or FakeAgent()
        self.lines: list[bytes] = []
        self.err: list[str] = []
        self.opts = headless.Options("do it", output_format=fmt, verbose=verbose, approvals=approvals_mode,
                                     program=program, approval_timeout=timeout)
        self.run = headless.Run(self.agent, self.opts, session_id="0123456789abcdef", cwd="/tmp/p", model="m",
                                mode="ask", journal_path=journal_path, resumed=False, inbox=queue.SimpleQueue(),
                                out=self.lines.append if out == "list" else out,
                                err=self.err.append if err == "list" else err)
        if start:
            self.start()

    def start(self):
        self.run.emit("session.start", **self.run.start_fields)
        return self

    def feed(self, *msgs):
        for m in msgs:
            self.run.handle(m)

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in b"".join(self.lines).splitlines()]

    def of(self, type_):
        return [e for e in self.events if e["type"] == type_]

    def check(self) -> list[dict]:
        """Every event valid; seq 1..n; one result, last; schema_version on the first and last."""
        evs = self.events
        for ev in evs:
            assert errors(ev, SCHEMA) == [], (ev, errors(ev, SCHEMA))
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
        assert [e["type"] for e in evs].count("result") == 1 and evs[-1]["type"] == "result"
        assert evs[0]["type"] == "session.start" and evs[0]["schema_version"] == E.SCHEMA_VERSION
        assert {e["session_id"] for e in evs} == {"0123456789abcdef"}
        return evs


def confirm(ref, call_id="c1", name="write_file"):
    return (M.CONFIRM, ref, {"id": call_id, "name": name, "summary": f"{name} a.txt",
                             "lines": [("header", "+++ b/a.txt"), ("add", "+x")]})


def test_a_whole_turn_becomes_valid_events_with_every_type():
    h = Harness()
    h.feed(
        (M.PHASE, "idle"), (M.MODE, "ask"), (M.MODEL, "m"), (M.USER, "do it"), (M.PHASE, "waiting"),
        (M.ASSISTANT_START,), (M.REASONING, "hmm"), (M.TOKEN, "Let me "), (M.TOKEN, "look."),
        (M.ASSISTANT_END, "done"),
        (M.TOOL_CALL, {"id": "c0", "name": "execute_command", "summary": "execute_command make"}),
        (M.TOOL_OUTPUT, "c0", "building\n"), (M.TOOL_NOTE, "c0", "allowed by rule x"),
        (M.TOOL_RESULT, {"id": "c0", "name": "execute_command", "status": "ok", "text": "ok: exit 0",
                         "excerpt": ["building"]}),
        (M.FILES, "c0", [{"path": "out.o", "change": "new"}], "git"),
        (M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt"}),
        confirm(1),
    )
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "rejected")
    assert h.agent.sent[-1][3]["reason"] == headless.REFUSED
    h.feed(
        (M.DECIDED, "c1", "rejected (policy): approval required"),
        (M.TOOL_RESULT, {"id": "c1", "name": "write_file", "status": "rejected", "text": "rejected", "excerpt": []}),
        (M.TOOL_CALL, {"id": "c2", "name": "read_file", "summary": "read_file .env"}),
        (M.TOOL_RESULT, {"id": "c2", "name": "read_file", "status": "error", "code": "denied",
                         "text": "error: denied by rule read_file(.env)", "excerpt": []}),
        (M.SYSTEM, "info", "fyi"), (M.SYSTEM, "warn", "careful"), (M.CRASH, "thread x", "boom"),
        (M.ASSISTANT_START,), (M.TOKEN, "Final."), (M.ASSISTANT_END, "done"),
        (M.USAGE, {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}),
        (M.PHASE, "idle"), (M.TURN_END, "done"),
    )
    evs = h.check()
    types = {e["type"] for e in evs}
    assert types == set(E.EVENTS) - {"compaction"}, set(E.EVENTS) - types
    result = evs[-1]
    assert result["answer"] == "Final." and result["stop_reason"] == "done"
    assert result["usage"]["total_tokens"] == 4 and result["cost"] is None
    assert [c["call_id"] for c in result["calls"]] == ["c0", "c1", "c2"]
    assert [(d["call_id"], d["by"], d["approval_required"]) for d in result["permission_denials"]] == [
        ("c1", "policy", True), ("c2", "rule", False)]
    assert result["files_changed"] == [{"path": "out.o", "change": "new", "call_id": "c0", "source": "git"}]
    # a crash is an error: exit 1 beats the refused approval's 4
    assert (result["outcome"], result["exit_status"]) == ("error", 1)
    assert h.run.finished == 1
    decided = h.of("approval.decided")[0]
    assert (decided["approval_id"], decided["decision"], decided["by"]) == ("ap-1", "reject", "policy")
    assert h.of("message.end")[0]["text"] == "Let me look."


def test_dashfloats_own_estimate_is_no_usage_event_and_no_usage_of_the_result():
    h = Harness()
    h.feed((M.USER, "do it"), (M.ASSISTANT_START,), (M.TOKEN, "Hi."), (M.ASSISTANT_END, "done"),
           (M.USAGE, {"total_tokens": 2459, "estimated": True}),  # the provider sent none
           (M.PHASE, "idle"), (M.TURN_END, "done"))
    evs = h.check()
    assert h.of("usage") == [] and evs[-1]["usage"] is None
    assert (evs[-1]["outcome"], evs[-1]["answer"]) == ("completed", "Hi.")


@pytest.mark.parametrize("reason, signal, refused, errors_, expected", [
    ("done", None, 0, 0, ("completed", 0)),
    ("done", None, 1, 0, ("approval_required", 4)),
    ("limit", None, 1, 0, ("limit", 3)),
    ("budget", None, 0, 0, ("limit", 3)),
    ("error", None, 1, 0, ("error", 1)),
    ("empty", None, 0, 0, ("error", 1)),
    ("done", None, 0, 1, ("error", 1)),
    ("config", None, 0, 0, ("config_error", 2)),
    ("cancelled", "SIGTERM", 1, 1, ("interrupted", 130)),
    ("agent_down", None, 0, 0, ("error", 1)),
])
def test_the_exit_status_says_what_happened_first_things_first(reason, signal, refused, errors_, expected):
    h = Harness()
    h.run.signal, h.run.refused, h.run.agent_errors = signal, refused, errors_
    assert h.run.exit_status(reason) == expected


def test_live_output_is_bounded_per_call():
    h = Harness()
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "execute_command", "summary": "execute_command yes"}))
    chunk = "y\n" * 20_000
    for _ in range(4):
        h.feed((M.TOOL_OUTPUT, "c1", chunk))
    outs = h.of("tool.output")
    assert sum(len(e["text"]) for e in outs) == headless.LIVE_MAX
    assert [e["truncated"] for e in outs] == [False, True]


def test_text_format_writes_only_the_answer_to_stdout_and_refusals_to_stderr():
    h = Harness(fmt="text")
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt"}), confirm(1),
           (M.DECIDED, "c1", "x"), (M.ASSISTANT_START,), (M.TOKEN, "The answer."), (M.ASSISTANT_END, "done"),
           (M.TOOL_OUTPUT, "c9", "progress\n"), (M.SYSTEM, "info", "fyi"), (M.TURN_END, "done"))
    assert b"".join(h.lines) == b"The answer.\n"
    assert h.err == ["dashfloat: not approved (policy): write_file a.txt: approval required, and this run has "
                     "no approver (--approvals none)"]
    v = Harness(fmt="text", verbose=True)
    v.feed((M.TOOL_CALL, {"id": "c9", "name": "execute_command", "summary": "execute_command ls"}),
           (M.TOOL_OUTPUT, "c9", "one\ntw"), (M.TOOL_OUTPUT, "c9", "o\n"), (M.SYSTEM, "info", "fyi"))
    assert v.err == ["[tool] execute_command ls", "  | one", "  | two", "[info] fyi"]


def test_json_format_writes_the_result_alone():
    h = Harness(fmt="json")
    h.feed((M.ASSISTANT_START,), (M.TOKEN, "x"), (M.ASSISTANT_END, "done"), (M.TURN_END, "done"))
    (only,) = h.events
    assert only["type"] == "result" and only["schema_version"] == E.SCHEMA_VERSION and only["answer"] == "x"
    assert errors(only, SCHEMA) == []


# ---- approvals -----------------------------------------------------------------------------------


def test_stdin_approve_reject_and_a_reason_reach_the_agent():
    h = Harness("stdin")
    h.feed(confirm(1))
    assert h.agent.sent == []  # waiting for the answer
    h.feed((M.H_LINE, b'{"id": "ap-1", "decision": "approve"}\n'))
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "approved")
    h.feed((M.DECIDED, "c1", "approved (stdin)"), confirm(2, "c2"),
           (M.H_LINE, b'{"id": "ap-2", "decision": "reject", "reason": "not on main"}\n'))
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 2, "rejected")
    assert h.agent.sent[-1][3]["reason"] == "not run: not on main"
    h.feed((M.DECIDED, "c2", "rejected"), (M.TURN_END, "done"))
    result = h.check()[-1]
    assert [(e["decision"], e["by"]) for e in h.of("approval.decided")] == [("approve", "stdin"), ("reject", "stdin")]
    assert h.of("approval.requested")[0]["timeout_s"] == headless.STDIN_TIMEOUT
    assert result["exit_status"] == 4 and result["permission_denials"][0]["reason"] == "not on main"


@pytest.mark.parametrize("line, rejects", [
    (b"yes\n", False),
    (b"[1]\n", False),
    (b'{"decision": "approve"}\n', False),
    (b'{"id": "ap-9", "decision": "approve"}\n', False),  # no such request
    (b'{"id": "ap-1", "decision": "approved"}\n', True),  # a pending id, a bad decision: rejected
    (b'{"id": "ap-1", "decision": "approve", "reason": 5}\n', True),
    (b'{"id": "ap-1", "decision": "approve", "force": true}\n', True),
    (b'\xff\xfe{"id": "ap-1", "decision": "approve"}\n', False),
])
def test_a_malformed_or_unknown_answer_is_an_error_and_never_approves(line, rejects):
    h = Harness("stdin")
    h.feed(confirm(1), (M.H_LINE, line))
    assert not any(m[0] == M.CONFIRM_DECISION and m[2] == "approved" for m in h.agent.sent)
    assert h.of("error") and h.of("error")[-1]["source"] == "approvals"
    assert h.err and h.err[-1].startswith("dashfloat: approvals: ")
    if rejects:
        assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "rejected")
        assert "ap-1" not in h.run.pending
    else:
        assert "ap-1" in h.run.pending, "a line that names no pending request decides nothing"
    h.feed((M.H_LINE, b"\n"))  # a blank line is not an error
    assert len(h.of("error")) == 1


def test_eof_rejects_what_is_pending_and_every_later_question():
    h = Harness("stdin")
    h.feed(confirm(1), (M.H_EOF, ""))
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "rejected")
    h.feed((M.DECIDED, "c1", "x"), confirm(2, "c2"))
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 2, "rejected")
    h.feed((M.DECIDED, "c2", "x"))
    assert [e["by"] for e in h.of("approval.decided")] == ["eof", "eof"]


def test_an_unanswered_question_is_rejected_at_its_timeout():
    h = Harness("stdin", timeout=0.5)
    h.feed(confirm(1))
    wait = h.run._next_deadline()
    assert 0.3 < wait <= 0.5
    h.run.pending["ap-1"].deadline = time.monotonic() - 1  # as if the time had passed
    h.run._on_time()
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "rejected")
    assert h.agent.sent[-1][3]["reason"] == "not run: no approval came within 0.5s"
    h.feed((M.H_LINE, b'{"id": "ap-1", "decision": "approve"}\n'))  # too late
    assert h.of("error")[-1]["message"] == "an answer to ap-1, which was decided already: ignored"


def test_a_signal_rejects_the_question_cancels_the_turn_and_exits_130():
    import signal

    h = Harness("stdin")
    h.feed(confirm(1), (M.H_SIGNAL, signal.SIGTERM))
    assert h.agent.sent == [(M.CANCEL, "SIGTERM")]
    h.feed((M.DECIDED, "c1", "rejected: the turn was stopped (SIGTERM)"), (M.TURN_END, "cancelled"))
    result = h.check()[-1]
    assert (result["outcome"], result["exit_status"], result["signal"]) == ("interrupted", 130, "SIGTERM")
    assert h.of("approval.decided")[0]["by"] == "signal"


def test_a_turn_that_does_not_end_after_a_signal_is_abandoned():
    import signal

    h = Harness()
    h.feed((M.H_SIGNAL, signal.SIGINT), (M.H_SIGNAL, signal.SIGINT))
    result = h.check()[-1]
    assert (result["stop_reason"], result["exit_status"]) == ("abandoned", 130)


def test_a_signal_a_worker_thread_takes_reaches_a_loop_asleep_in_get_once():
    """The kernel may give the process's signal to any thread; Python runs its handler on
    the main thread only, when it next runs bytecode. pthread_kill makes a worker take it
    while this (main) thread sleeps in get(): the message must come all the same, once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")
    q: queue.SimpleQueue = queue.SimpleQueue()
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    restore = headless.install_signals(q.put)
    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=True)
    worker.start()
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.pthread_kill(worker.ident, signum)
            assert q.get(timeout=10) == (M.H_SIGNAL, signum)
    finally:
        release.set()
        restore()
    readers = [t for t in threading.enumerate() if t.name == "signals"]
    for t in readers:
        t.join(10)
    assert q.empty()  # one message a signal: the Python-level handler puts nothing
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # the wake-up fd was put back


@pytest.mark.parametrize("run, expected", [
    ({"ok": True, "output": '{"decision": "approve"}'}, ("approve", "", None)),
    ({"ok": True, "output": '{"decision": "reject", "reason": "no"}'}, ("reject", "no", None)),
    ({"ok": True, "output": '{"id": "ap-1", "decision": "approve"}'}, ("approve", "", None)),
    ({"ok": True, "output": '{"id": "ap-2", "decision": "approve"}'}, ("reject", "", "answered id")),
    ({"ok": True, "output": "yes"}, ("reject", "", "not JSON")),
    ({"ok": True, "output": ""}, ("reject", "", "not JSON")),
    ({"ok": True, "output": '{"decision": "maybe"}'}, ("reject", "", "unknown \"decision\"")),
    ({"ok": False, "code": "exit_status", "exit_code": 1, "output": '{"decision": "approve"}'},
     ("reject", "", "exited with status 1")),
    ({"ok": False, "code": "timeout"}, ("reject", "", "did not answer within 2s")),
    ({"ok": False, "cancelled": True}, ("reject", "", "stopped")),
    ({"ok": False, "code": "exec_failed", "error": "no such file"}, ("reject", "", "could not be started")),
    ({"ok": True, "truncated": True, "output": '{"decision": "approve"}'}, ("reject", "", "more than 64 KiB")),
])
def test_an_approval_program_approves_only_with_a_well_formed_answer(run, expected):
    decision, reason, error = approvals.program_verdict(run, "ap-1", 2.0)
    assert (decision, reason) == expected[:2]
    if expected[2] is None:
        assert error is None
    else:
        assert error is not None and expected[2] in error, error


def test_a_failing_program_is_an_error_and_a_rejection():
    h = Harness("program", program="./approve.sh")
    h.run._ask_program = lambda p, request: None  # its thread's answer comes as H_VERDICT
    h.feed(confirm(1), (M.H_VERDICT, "ap-1", "reject", "", "the approval program exited with status 3"))
    assert h.agent.sent[-1][:3] == (M.CONFIRM_DECISION, 1, "rejected")
    h.feed((M.DECIDED, "c1", "x"))
    assert h.of("approval.decided")[0]["by"] == "error"
    assert h.of("error")[0]["message"] == "ap-1: the approval program exited with status 3"


@pytest.mark.parametrize("text, expected", [
    (None, ("none", None)), ("none", ("none", None)), ("stdin", ("stdin", None)),
    ("cmd:./ok.sh --ci", ("program", "./ok.sh --ci")),
])
def test_approvals_modes(text, expected):
    assert approvals.parse_mode(text) == expected


@pytest.mark.parametrize("text", ["cmd:", "cmd:  ", "yes", "program:x", "STDIN"])
def test_bad_approvals_modes_say_what_is_accepted(text):
    with pytest.raises(approvals.ModeError, match="none, stdin or cmd:PROGRAM|needs a program"):
        approvals.parse_mode(text)


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_bad_timeouts_are_refused(value):
    with pytest.raises(approvals.ModeError):
        approvals.parse_timeout(value)


def test_text_before_tool_calls_is_not_the_final_answer():
    h = Harness()
    h.feed((M.ASSISTANT_START,), (M.TOKEN, "Let me look."), (M.ASSISTANT_END, "done"),
           (M.TOOL_CALL, {"id": "c1", "name": "list_directory", "summary": "list_directory ."}),
           (M.TOOL_RESULT, {"id": "c1", "name": "list_directory", "status": "ok", "text": "ok", "excerpt": []}),
           (M.SYSTEM, "warn", "Stopped after 1 episodes"), (M.TURN_END, "limit"))
    result = h.check()[-1]
    assert (result["answer"], result["exit_status"], result["stop_reason"]) == (None, 3, "limit")
