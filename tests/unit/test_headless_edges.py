"""The headless front end's edges, in-process and fast: the writes to stdout and stderr
(short, interrupted, a reader gone), the defaults the man page states, the text format on
a terminal and with -v, every field of the events and of the result (time and duration,
tokens, errors, calls, denials, files), the approval paths (a program's thread and its
deadline, stdin's end, a question the agent answered itself, a signal), the main loop
(a broken message, a timeout, an abandoned turn), read_answers, install_signals, and
headless.run itself with a real Agent against the scripted server (masking, the session id,
the quit message, the signals restored, status 141 when stdout is gone).

`make mutation` (tests/mutation/run_mutation.py) found these cases untested: the e2e tests
spawn the real CLI and covered them, the fast suite did not."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from dashfloat import approvals, headless, masking, storage
from dashfloat import messages as M
from dashfloat.agent import Agent
from dashfloat.config import Config
from dashfloat.tools.exec import Cancel
from tests.schema_check import errors
from tests.test_agent_tools import answer
from tests.unit import test_headless
from tests.unit.test_headless import SCHEMA, FakeAgent, confirm

ROOT = Path(__file__).resolve().parents[2]
MAN = re.sub(r"\s+", " ", (ROOT / "man" / "dashfloat.1").read_text())
SID = "0123456789abcdef"


def man_number(pattern: str) -> float:
    """A number the man page states (the page is generated from the constants; these tests
    hold the code to what the user reads)."""
    found = re.search(pattern, MAN)
    assert found, pattern
    return float(found.group(1))


class Clock:
    """headless.time, under the test's control."""

    def __init__(self, mono: float = 1000.0, wall: float = 1_700_000_000.0):
        self.mono, self.wall = mono, wall

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall


class Harness(test_headless.Harness):
    """test_headless.py's harness, started by hand (session.start is the test's to emit)."""

    def __init__(self, *args, start=False, **kw):
        super().__init__(*args, start=start, **kw)

    def result(self) -> dict:
        evs = self.events
        for ev in evs:
            assert errors(ev, SCHEMA) == [], (ev, errors(ev, SCHEMA))
        assert evs[-1]["type"] == "result"
        return evs[-1]


def strip(ev: dict) -> dict:
    return {k: v for k, v in ev.items() if k not in ("seq", "time", "session_id")}


# ---- writing ---------------------------------------------------------------------------------


def test_write_all_retries_an_interrupted_write_and_writes_the_rest_of_a_short_one(monkeypatch):
    written = bytearray()
    calls = []

    def write(fd, data):
        calls.append(fd)
        assert len(calls) < 100, "write_all does not end"
        if len(calls) == 1:
            raise InterruptedError
        piece = bytes(data[:3])
        written.extend(piece)
        return len(piece)

    monkeypatch.setattr(headless, "os", SimpleNamespace(write=write))
    headless.write_all(7, b"hello world")
    assert bytes(written) == b"hello world"
    assert set(calls) == {7} and len(calls) == 1 + 4


def test_write_all_to_a_pipe_and_to_a_pipe_nobody_reads():
    r, w = os.pipe()
    os.set_blocking(w, False)  # a write_all that never ends fails (EAGAIN), not hangs
    try:
        headless.write_all(w, b"one event\n")
        os.close(w)
        assert os.read(r, 100) == b"one event\n"
    finally:
        os.close(r)
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(headless.OutputGone) as gone:  # SIGPIPE is ignored: EPIPE
            headless.write_all(w, b"x")
        assert str(gone.value) == "Broken pipe"
    finally:
        os.close(w)


def test_say_writes_escaped_lines_to_stderr(capfd):
    headless.say("one\ntwo \x1b[31mred")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "one\ntwo \\e[31mred\n")


def test_events_go_to_stdout_when_no_writer_is_given(capfd):
    h = Harness(out=None).start()
    out, err = capfd.readouterr()
    assert err == "" and h.lines == []
    (line,) = out.splitlines()
    assert json.loads(line)["type"] == "session.start"


# ---- the defaults the man page states ------------------------------------------------------------


def test_the_approval_timeouts_and_the_grace_are_the_man_pages():
    stdin_default = man_number(r"default (\d+) s on standard input")
    program_default = man_number(r"standard input, (\d+) s for a program")
    assert headless.Options("p", approvals="stdin").approval_timeout == stdin_default
    assert headless.Options("p", approvals="program", program="./ok.sh").approval_timeout == program_default
    assert headless.Options("p", approvals="stdin", approval_timeout=7.0).approval_timeout == 7.0
    opts = headless.Options("the prompt")
    assert (opts.prompt, opts.output_format, opts.verbose, opts.approvals) == ("the prompt", "text", False, "none")
    h = Harness("program", program="./ok.sh").start()
    h.run._ask_program = lambda p, request: None
    h.feed(confirm(1))
    assert h.of("approval.requested")[0]["timeout_s"] == program_default


def test_after_a_signal_the_turn_has_the_grace_the_man_page_states(monkeypatch):
    grace = man_number(r"a turn that has not ended (\d+) s after the first")
    clock = Clock()
    monkeypatch.setattr(headless, "time", clock)
    h = Harness().start()
    assert h.run._next_deadline() is None  # nothing to wait for: get() blocks
    h.feed((M.H_SIGNAL, signal.SIGTERM))
    assert h.run._next_deadline() == grace
    clock.mono += grace - 0.001
    h.run._on_time()
    assert h.run.finished is None
    clock.mono += 0.001  # exactly the grace
    h.run._on_time()
    result = h.result()
    assert (result["stop_reason"], result["exit_status"], result["signal"]) == ("abandoned", 130, "SIGTERM")
    assert result["errors"] == [(f"the turn did not end within {grace:g}s of SIGTERM; "
                                "the run ended without waiting for it")]


# ---- the terminal, -v and the text format ------------------------------------------------------


def turn_with(text):
    return [(M.ASSISTANT_START,), (M.TOKEN, text), (M.ASSISTANT_END, "done"), (M.TURN_END, "done")]


def test_the_answer_is_escaped_when_stdout_is_a_terminal(monkeypatch, capfd):
    monkeypatch.setattr(headless, "_isatty", lambda fd: fd == 1)
    h = Harness(fmt="text", out=None)
    h.feed(*turn_with("a\x1b[31mb"))
    assert capfd.readouterr().out == "a\\e[31mb\n"


def test_the_answer_is_as_written_to_a_writer_given_and_stderr_given_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(headless, "_isatty", lambda fd: True)
    h = Harness(fmt="text")
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "list_directory", "summary": "list_directory ."}),
           *turn_with("a\x1b[31mb\n"))
    assert h.lines == [b"a\x1b[31mb\n"]
    assert h.err == []  # no progress: -v not given, and the stderr given is no terminal


def test_progress_goes_to_stderr_when_it_is_a_terminal(monkeypatch, capfd):
    monkeypatch.setattr(headless, "_isatty", lambda fd: fd == 2)
    h = Harness(fmt="text", err=None)
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "list_directory", "summary": "list_directory ."}))
    assert capfd.readouterr().err == "[tool] list_directory .\n"
    assert h.lines == []


def test_isatty():
    primary, secondary = os.openpty()
    r, w = os.pipe()
    try:
        assert headless._isatty(secondary) is True
        assert headless._isatty(r) is False
    finally:
        for fd in (primary, secondary, r, w):
            os.close(fd)


def test_verbose_text_says_every_step_on_stderr_and_only_the_answer_on_stdout():
    h = Harness("stdin", fmt="text", verbose=True)
    long_line = "b" * headless.LIVE_MAX
    h.feed(
        (M.TOOL_CALL, {"id": "c1", "name": "execute_command", "summary": "execute_command make"}),
        (M.TOOL_OUTPUT, "c1", "one\ntw"),
        (M.TOOL_NOTE, "c1", "allowed by rule execute_command(make)"),
        (M.TOOL_RESULT, {"id": "c1", "name": "execute_command", "status": "ok", "text": "ok: exit 0"}),
        (M.FILES, "c1", [{"path": "a.o", "change": "new"}, {"path": "b.o", "change": "modified"}], "git"),
        (M.TOOL_CALL, {"id": "c2", "name": "write_file", "summary": "write_file a.txt"}),
        confirm(1, "c2"),
        (M.H_LINE, b'{"id": "ap-1", "decision": "approve"}\n'),
        (M.DECIDED, "c2", "approved (stdin)"),
        (M.SYSTEM, "warn", "careful"),
        (M.SYSTEM, "info", "fyi"),
        (M.SYSTEM, "error", "the server said no"),
        (M.USAGE, {"total_tokens": 12345}),
        (M.USAGE, {"total_tokens": "many"}),
        (M.TOOL_CALL, {"id": "c3", "name": "execute_command", "summary": "execute_command yes"}),
        (M.TOOL_OUTPUT, "c3", "a\n" + long_line),
        (M.TOOL_OUTPUT, "c3", "more\n"),
        (M.TOOL_CALL, {"id": "c4", "name": "execute_command", "summary": "execute_command echo"}),
        (M.TOOL_OUTPUT, "c4", "no newline"),
        (M.ASSISTANT_START,), (M.TOKEN, "Done."), (M.ASSISTANT_END, "done"),
        (M.TURN_END, "done"),
    )
    assert h.err == [
        "[tool] execute_command make", "  | one",
        "[note] allowed by rule execute_command(make)",
        "  | tw", "[tool] execute_command: ok: exit 0",
        "[files] a.o (new), b.o (modified)",
        "[tool] write_file a.txt",
        "[approval] write_file a.txt: asking (stdin)",
        "[approval] approved (stdin)",
        "dashfloat: warning: careful",
        "[info] fyi",
        "dashfloat: error: the server said no",
        "[usage] 12,345 tokens",
        "[tool] execute_command yes", "  | a", "  | " + long_line[:-2],
        "  | [live output truncated; the result has the output]",
        "[tool] execute_command echo",
        "  | no newline",  # what was left of a line, at the end
    ]
    assert h.lines == [b"Done.\n"]


def test_verbose_text_without_an_approver_says_only_the_refusal():
    h = Harness(fmt="text", verbose=True)
    h.feed(confirm(1), (M.DECIDED, "c1", "x"))
    assert h.err == [("dashfloat: not approved (policy): write_file a.txt: approval required, and this run has "
                     "no approver (--approvals none)")]


def test_a_signal_is_said_on_stderr_in_text_only_and_never_for_a_gone_reader():
    for fmt, expected in [("text", ["dashfloat: interrupted by SIGTERM"]), ("json", [])]:
        h = Harness(fmt=fmt)
        h.feed((M.H_SIGNAL, signal.SIGTERM), (M.TURN_END, "cancelled"))
        assert h.err == expected and h.run.finished == 130
    h = Harness(fmt="text")
    h.run.signal = "SIGPIPE"
    h.feed((M.TURN_END, "cancelled"))
    assert h.err == [] and h.run.finished == 130


def test_text_output_that_cannot_be_written_is_output_gone():
    def gone(data):
        raise headless.OutputGone("Broken pipe")

    h = Harness(fmt="text", out=gone)
    h.feed(*turn_with("x"))
    assert h.run.output_gone is True and h.run.finished == 0


# ---- the events and the result ---------------------------------------------------------------------


def test_the_event_time_is_unix_seconds_to_the_millisecond_and_the_duration_too(monkeypatch):
    clock = Clock(mono=50.0, wall=1_700_000_000.123456)
    monkeypatch.setattr(headless, "time", clock)
    h = Harness().start()
    clock.mono = 52.3456789
    h.feed((M.TURN_END, "done"))
    assert [e["time"] for e in h.events] == [1_700_000_000.123] * 2
    assert h.result()["duration_s"] == 2.346


def test_a_completed_turn_reports_every_field():
    h = Harness(journal_path=None).start()
    compaction = {"reason": "auto", "how": "stubs", "text": "3 old tool outputs became stubs", "before": 9000,
                  "after": 4000, "window": 8192, "failed": None}
    h.feed((M.MODEL, "m2"), (M.USER, "do it"), (M.ASSISTANT_START,), (M.REASONING, "hmm"), (M.TOKEN, "Hel"),
           (M.TOKEN, "lo"), (M.ASSISTANT_END, "done"), (M.USAGE, {"prompt_tokens": 3, "total_tokens": 4}),
           (M.METER, {"tokens": 1234, "cost": 0.25}), (M.COMPACTED, compaction), (M.TURN_END, "done"))
    assert [strip(e) for e in h.events[1:-1]] == [
        {"type": "model", "model": "m2"},
        {"type": "prompt", "text": "do it"},
        {"type": "message.start"},
        {"type": "reasoning.delta", "text": "hmm"},
        {"type": "message.delta", "text": "Hel"},
        {"type": "message.delta", "text": "lo"},
        {"type": "message.end", "status": "done", "text": "Hello"},
        {"type": "usage", "usage": {"prompt_tokens": 3, "total_tokens": 4}},
        {"type": "compaction", "reason": "auto", "how": "stubs", "summary": "3 old tool outputs became stubs",
         "tokens_before": 9000, "tokens_after": 4000, "window": 8192, "failed": None},
    ]
    result = h.result()
    assert (result["outcome"], result["exit_status"], result["answer"]) == ("completed", 0, "Hello")
    assert (result["tokens"], result["cost"], result["resumable"]) == (1234, 0.25, False)
    assert result["errors"] == [] and result["usage"] == {"prompt_tokens": 3, "total_tokens": 4}
    assert Harness().start().run.resumable is True  # a journal: resumable


def test_a_meter_without_tokens_or_not_a_dict_reports_no_tokens():
    h = Harness()
    h.feed((M.METER, {"cost": None}), (M.USAGE, None), (M.TURN_END, "done"))
    assert h.of("usage")[0]["usage"] == {}
    result = h.result()
    assert (result["tokens"], result["cost"], result["usage"]) == (0, None, None)
    h = Harness()
    h.feed((M.METER, {"tokens": 5}), (M.METER, None), (M.TURN_END, "done"))
    assert h.result()["tokens"] == 0


def test_every_error_of_the_turn_is_an_error_event_and_in_the_result():
    h = Harness()
    h.feed((M.SYSTEM, "error", "the server said no"), (M.CRASH, "thread x", "boom"), (M.TURN_END, "done"))
    assert [(e["source"], e["message"]) for e in h.of("error")] == [
        ("agent", "the server said no"), ("crash", "thread x: boom (details in the log)")]
    result = h.result()
    assert result["errors"] == ["the server said no", "thread x: boom (details in the log)"]
    assert (result["outcome"], result["exit_status"]) == ("error", 1)
    for one in [(M.SYSTEM, "error", "x"), (M.CRASH, "t", "x")]:
        h = Harness()
        h.feed(one, (M.TURN_END, "done"))
        assert h.result()["exit_status"] == 1, one


def test_the_agent_going_down_ends_the_run():
    h = Harness()
    h.feed((M.AGENT_DOWN, "RuntimeError: x"))
    assert [(e["source"], e["message"]) for e in h.of("error")] == [
        ("agent_down", "the agent stopped: RuntimeError: x (details in the log)")]
    result = h.result()
    assert (result["stop_reason"], result["exit_status"]) == ("agent_down", 1)
    assert result["errors"] == ["the agent stopped: RuntimeError: x (details in the log)"]


@pytest.mark.parametrize("stop_reason, before, expected", [
    ("error", [], ["the turn failed"]),
    ("empty", [], ["the model returned nothing"]),
    ("error", [(M.SYSTEM, "error", "HTTP 500")], ["HTTP 500"]),
    ("done", [], []),
    ("cancelled", [], []),
])
def test_a_failed_turn_always_says_why(stop_reason, before, expected):
    h = Harness()
    h.feed(*before, (M.TURN_END, stop_reason))
    assert h.result()["errors"] == expected


def test_tool_events_carry_their_call_and_the_result_lists_the_calls():
    h = Harness()
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "execute_command", "summary": "execute_command make"}),
           (M.TOOL_OUTPUT, "c1", "building\n"), (M.TOOL_NOTE, "c1", "allowed by rule x"),
           (M.TOOL_RESULT, {"id": "c1", "name": "execute_command", "status": "ok", "text": "ok: exit 0",
                            "excerpt": ["building"]}),
           (M.TOOL_CALL, {"id": "c2"}),
           (M.TOOL_RESULT, {"id": "c2", "status": "error", "code": "bad_arguments"}),
           (M.TURN_END, "done"))
    assert [strip(e) for e in h.events[:-1]] == [
        {"type": "tool.call", "call_id": "c1", "name": "execute_command", "summary": "execute_command make"},
        {"type": "tool.output", "call_id": "c1", "text": "building\n", "truncated": False},
        {"type": "tool.note", "call_id": "c1", "text": "allowed by rule x"},
        {"type": "tool.result", "call_id": "c1", "name": "execute_command", "status": "ok", "text": "ok: exit 0",
         "code": None, "excerpt": ["building"]},
        {"type": "tool.call", "call_id": "c2", "name": "", "summary": ""},
        {"type": "tool.result", "call_id": "c2", "name": "", "status": "error", "text": "", "code": "bad_arguments",
         "excerpt": []},
    ]
    assert h.result()["calls"] == [
        {"call_id": "c1", "name": "execute_command", "summary": "execute_command make", "status": "ok", "code": None},
        {"call_id": "c2", "name": "", "summary": "", "status": "error", "code": "bad_arguments"}]


def test_a_denied_result_without_its_call_is_a_call_and_a_denial():
    h = Harness()
    h.feed((M.TOOL_RESULT, {"id": "c5", "name": "read_file", "status": "error", "code": "denied",
                            "text": "error: denied by rule read_file(.env)"}), (M.TURN_END, "done"))
    result = h.result()
    assert result["calls"] == [{"call_id": "c5", "name": "read_file", "summary": "", "status": "error",
                                "code": "denied"}]
    assert result["permission_denials"] == [{"call_id": "c5", "tool": "read_file", "summary": "", "by": "rule",
                                             "reason": "error: denied by rule read_file(.env)",
                                             "approval_required": False}]
    h = Harness()
    h.feed((M.TOOL_RESULT, {"id": "c6", "status": "error", "code": "denied"}), (M.TURN_END, "done"))
    assert h.result()["permission_denials"][0]["reason"] == ""


def test_files_changed_lists_each_file_once_in_the_order_of_its_last_change():
    h = Harness()
    h.feed((M.FILES, "c1", [{"path": "a.txt", "change": "new"}, {"path": "b.txt", "change": "modified"}], "tool"),
           (M.FILES, "c2", [{"path": "a.txt", "change": "modified"}], "git"), (M.TURN_END, "done"))
    assert h.result()["files_changed"] == [
        {"path": "b.txt", "change": "modified", "call_id": "c1", "source": "tool"},
        {"path": "a.txt", "change": "modified", "call_id": "c2", "source": "git"}]


def test_an_unknown_message_is_logged_and_ignored(caplog):
    h = Harness()
    with caplog.at_level(logging.WARNING, logger="dashfloat.headless"):
        h.feed(("no_such_kind", 1))
    assert h.lines == []
    assert "headless ignored unknown message 'no_such_kind'" in caplog.messages


# ---- a reader that goes away ---------------------------------------------------------------------


class Flaky:
    def __init__(self):
        self.lines: list[bytes] = []
        self.fail = False
        self.tries = 0

    def __call__(self, data):
        self.tries += 1
        if self.fail:
            raise headless.OutputGone("Broken pipe")
        self.lines.append(data)


def test_a_reader_that_goes_away_cancels_the_turn_quietly(caplog):
    out = Flaky()
    h = Harness(out=out).start()
    h.feed((M.ASSISTANT_START,))
    out.fail = True
    with caplog.at_level(logging.INFO, logger="dashfloat.headless"):
        h.feed((M.TOKEN, "x"))
    assert h.run.output_gone is True and h.run.signal == "SIGPIPE"
    assert h.agent.sent == [(M.CANCEL, "SIGPIPE")]
    assert h.run.give_up_at is not None
    assert "stdout went away (Broken pipe): stopping the run" in caplog.messages
    tries = out.tries
    h.feed((M.TOKEN, "y"), (M.ASSISTANT_END, "cancelled"), (M.TURN_END, "cancelled"))
    assert out.tries == tries  # nothing more is written
    assert h.run.finished == 130 and h.err == []
    assert [json.loads(x)["type"] for x in out.lines] == ["session.start", "message.start"]


def test_a_reader_gone_after_a_signal_does_not_cancel_twice():
    out = Flaky()
    h = Harness(out=out).start()
    h.feed((M.H_SIGNAL, signal.SIGINT))
    out.fail = True
    h.feed((M.TOKEN, "x"))
    assert h.agent.sent == [(M.CANCEL, "SIGINT")] and h.run.signal == "SIGINT"


# ---- approvals -------------------------------------------------------------------------------------


def test_a_question_with_no_tool_call_before_it_is_one_of_the_calls():
    h = Harness()
    info = {"id": "undo-1-1", "name": "undo", "summary": "undo a.txt", "lines": [("del", "-x")],
            "always_asks": "it changed since DashFloat wrote it"}
    h.feed((M.CONFIRM, 1, info), (M.DECIDED, "undo-1-1", "x"), (M.CONFIRM, 2, {"lines": []}), (M.TURN_END, "done"))
    requested = [strip(e) for e in h.of("approval.requested")]
    assert requested[0] == {"type": "approval.requested", "approval_id": "ap-1", "call_id": "undo-1-1",
                            "tool": "undo", "summary": "undo a.txt", "preview": [{"kind": "del", "text": "-x"}],
                            "always_asks": "it changed since DashFloat wrote it", "timeout_s": None}
    assert (requested[1]["tool"], requested[1]["summary"], requested[1]["always_asks"]) == ("", "", None)
    result = h.result()
    assert result["calls"] == [{"call_id": "undo-1-1", "name": "undo", "summary": "undo a.txt", "status": None,
                                "code": None}]  # a question without a call id adds no call
    assert [(d["call_id"], d["tool"], d["summary"]) for d in result["permission_denials"]] == [
        ("undo-1-1", "undo", "undo a.txt"), ("", "", "")]


def test_a_refusal_names_the_question_s_summary_when_the_call_had_none():
    h = Harness()
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "write_file"}), confirm(1), (M.TURN_END, "done"))
    assert h.result()["permission_denials"][0]["summary"] == "write_file a.txt"


def test_a_program_gets_the_request_and_has_a_grace_past_its_timeout(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(headless, "time", clock)
    h = Harness("program", program="./ok.sh", timeout=2.0).start()
    asked = []
    h.run._ask_program = lambda p, request: asked.append((p, request))
    h.feed(confirm(1))
    ((p, request),) = asked
    assert request == h.of("approval.requested")[0]
    assert isinstance(p.cancel, Cancel) and not p.cancel.cancelled
    assert h.run._next_deadline() == 2.0 + headless.PROGRAM_GRACE
    assert headless.PROGRAM_GRACE > 0  # the program's own timeout (it is killed) comes first
    s = Harness("stdin", timeout=2.0)
    s.run._ask_program = lambda p, request: asked.append((p, request))
    s.feed(confirm(1))
    assert len(asked) == 1 and s.run.pending["ap-1"].cancel is None


def test_a_question_at_its_deadline_is_rejected_and_its_program_stopped(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(headless, "time", clock)
    h = Harness("program", program="./ok.sh", timeout=2.0).start()
    h.run._ask_program = lambda p, request: None
    h.feed(confirm(1))
    first = h.run.pending["ap-1"]
    clock.mono += 1.0
    h.feed(confirm(2, "c2"))
    second = h.run.pending["ap-2"]
    clock.mono += 1.0 + headless.PROGRAM_GRACE  # exactly the first one's deadline
    h.run._on_time()
    assert first.cancel.cancelled and not second.cancel.cancelled
    assert list(h.run.pending) == ["ap-2"]
    assert h.agent.sent == [(M.CONFIRM_DECISION, 1, "rejected",
                             {"who": "headless: no answer in time", "shown": "rejected (timeout): approval required",
                              "reason": "not run: no approval came within 2s"})]


def test_a_signal_stops_the_program_rejects_every_question_and_lists_them(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(headless, "time", clock)
    h = Harness("program", program="./ok.sh").start()
    h.run._ask_program = lambda p, request: None
    h.feed(confirm(1))
    p = h.run.pending["ap-1"]
    h.feed((M.H_SIGNAL, signal.SIGTERM))
    assert p.cancel.cancelled and h.run.pending == {}
    assert h.agent.sent == [(M.CANCEL, "SIGTERM")]  # the cancel answers the question
    h.feed(confirm(2, "c2"))  # asked while the turn stops: rejected at once
    assert h.run.pending == {} and h.agent.sent == [(M.CANCEL, "SIGTERM")]
    h.feed((M.DECIDED, "c1", "x"), (M.DECIDED, "c2", "x"), (M.TURN_END, "cancelled"))
    result = h.result()
    assert [(d["call_id"], d["by"], d["reason"]) for d in result["permission_denials"]] == [
        ("c1", "signal", "the run was stopped (SIGTERM)"), ("c2", "signal", "the run was stopped (SIGTERM)")]
    assert [(e["by"], e["reason"]) for e in h.of("approval.decided")] == [
        ("signal", "the run was stopped (SIGTERM)")] * 2
    assert result["exit_status"] == 130


def test_a_program_s_verdicts(caplog):
    h = Harness("program", program="./ok.sh").start()
    h.run._ask_program = lambda p, request: None
    h.feed(confirm(1), (M.H_VERDICT, "ap-1", "approve", "fine by me", None), (M.DECIDED, "c1", "x"))
    assert h.agent.sent[-1] == (M.CONFIRM_DECISION, 1, "approved",
                                {"who": "headless: approval program ./ok.sh", "shown": "approved (program)"})
    h.feed(confirm(2, "c2"), (M.H_VERDICT, "ap-2", "approve", "", None), (M.DECIDED, "c2", "x"))
    h.feed(confirm(3, "c3"), (M.H_VERDICT, "ap-3", "reject", "", None), (M.DECIDED, "c3", "x"))
    assert h.agent.sent[-1][3]["reason"] == "not run: rejected by the approval program"
    h.feed((M.H_VERDICT, "ap-3", "approve", "", None))  # late: decided already
    assert h.agent.sent[-1][2] == "rejected"
    assert [(e["decision"], e["by"], e["reason"]) for e in h.of("approval.decided")] == [
        ("approve", "program", "fine by me"), ("approve", "program", "approved"),
        ("reject", "program", "rejected by the approval program")]
    assert h.of("error") == []


def test_the_approval_program_runs_on_a_thread_that_always_answers(monkeypatch, caplog):
    h = Harness("program", program="./ok.sh", timeout=3.0).start()
    seen = []

    def run_program(program, request, cwd, timeout, cancel):
        me = threading.current_thread()
        seen.append((program, request["approval_id"], cwd, timeout, cancel, me.name, me.daemon))
        if request["approval_id"] == "ap-2":
            raise RuntimeError("no fork")
        return ("approve", "looks fine", None)

    monkeypatch.setattr(approvals, "run_program", run_program)
    h.feed(confirm(1))
    assert h.run.q.get(timeout=5) == (M.H_VERDICT, "ap-1", "approve", "looks fine", None)
    assert seen == [("./ok.sh", "ap-1", "/tmp/p", 3.0, h.run.pending["ap-1"].cancel, "approval-program", True)]
    with caplog.at_level(logging.ERROR, logger="dashfloat.headless"):
        h.feed(confirm(2, "c2"))
        assert h.run.q.get(timeout=5) == (M.H_VERDICT, "ap-2", "reject", "", "the approval program's thread failed")
    assert "approval program failed" in caplog.messages


def test_stdin_answers_without_a_reason_get_one():
    h = Harness("stdin").start()
    h.feed(confirm(1), (M.H_LINE, b'{"id": "ap-1", "decision": "approve"}\n'), (M.DECIDED, "c1", "x"),
           confirm(2, "c2"), (M.H_LINE, b'{"id": "ap-2", "decision": "reject"}\n'), (M.DECIDED, "c2", "x"))
    assert h.agent.sent[-1] == (M.CONFIRM_DECISION, 2, "rejected",
                                {"who": "headless: the approver on stdin", "shown": "rejected (stdin): approval required",
                                 "reason": "not run: rejected by the approver"})
    assert [(e["decision"], e["reason"]) for e in h.of("approval.decided")] == [
        ("approve", "approved"), ("reject", "rejected by the approver")]


def test_the_end_of_stdin_rejects_with_its_reason_and_a_read_error_is_an_error():
    eof = "the approver's input (stdin) ended before it answered"
    h = Harness("stdin").start()
    h.feed(confirm(1), (M.H_EOF, ""), (M.DECIDED, "c1", "x"), (M.TURN_END, "done"))
    assert h.agent.sent[-1][3]["reason"] == f"not run: {eof}"
    result = h.result()
    assert h.of("error") == [] and result["errors"] == []
    assert [(d["by"], d["reason"]) for d in result["permission_denials"]] == [("eof", eof)]
    h = Harness("stdin").start()
    h.feed((M.H_EOF, "Input/output error"), (M.TURN_END, "done"))
    assert [e["message"] for e in h.of("error")] == ["reading answers from stdin failed: Input/output error"]
    assert h.result()["errors"] == ["approvals: reading answers from stdin failed: Input/output error"]
    assert h.err == ["dashfloat: approvals: reading answers from stdin failed: Input/output error"]


def test_a_question_the_agent_answered_itself_is_decided_once():
    h = Harness("stdin").start()
    h.feed((M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt"}), confirm(1),
           (M.TOOL_CALL, {"id": "c2", "name": "write_file", "summary": "write_file b.txt"}), confirm(2, "c2"),
           (M.DECIDED, "c1", "rejected: the turn was cancelled"), (M.DECIDED, "c9", "nobody asked"))
    assert [strip(e) for e in h.of("approval.decided")] == [
        {"type": "approval.decided", "approval_id": "ap-1", "call_id": "c1", "decision": "reject", "by": "error",
         "reason": "rejected: the turn was cancelled"}]
    assert list(h.run.pending) == ["ap-2"]
    h.feed((M.H_LINE, b'{"id": "ap-1", "decision": "approve"}\n'))
    assert h.agent.sent == []
    assert h.of("error")[-1]["message"] == "an answer to ap-1, which was decided already: ignored"


# ---- the loop --------------------------------------------------------------------------------------


class LoopAgent(FakeAgent):
    """Answers like the real agent: a cancel ends the turn; a decision is followed by the
    DECIDED message and the end of the turn; `start` posts the script."""

    def __init__(self, script=()):
        super().__init__()
        self.script = list(script)
        self.q = None
        self.started = 0

    def start(self):
        self.started += 1
        for m in self.script:
            self.q.put(m)

    def send(self, msg):
        super().send(msg)
        if msg[0] == M.CANCEL:
            self.q.put((M.TURN_END, "cancelled"))
        elif msg[0] == M.CONFIRM_DECISION:
            self.q.put((M.DECIDED, "c1", msg[2]))
            self.q.put((M.TURN_END, "done"))


def loop(agent, **kw) -> Harness:
    h = Harness(agent=agent, **kw)
    agent.q = h.run.q
    return h


def run_loop(h: Harness) -> int:
    """Run.run on a thread of its own: a loop that never ends fails the test, not hangs it."""
    status = []
    t = threading.Thread(target=lambda: status.append(h.run.run(h.agent.start)), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "the loop did not end"
    return status[0]


def test_a_message_that_breaks_the_loop_still_ends_with_a_result(caplog):
    agent = LoopAgent([(M.SYSTEM, "error", "first"), (M.TOOL_CALL, {"name": "no id"})])
    h = loop(agent)
    with caplog.at_level(logging.ERROR, logger="dashfloat.headless"):
        status = run_loop(h)
    assert status == 1 and agent.started == 1
    assert agent.sent == [(M.PROMPT, "do it"), (M.CANCEL, "crash")]
    assert h.events[0]["type"] == "session.start"
    result = h.result()
    assert result["errors"] == ["first", "internal error handling 'tool_call' (details in the log)"]
    assert (result["outcome"], result["stop_reason"]) == ("error", "cancelled")
    assert "headless: handling ('tool_call',) failed" in caplog.messages
    agent = LoopAgent([(M.TOOL_CALL, {"name": "no id"})])
    h = loop(agent)
    assert run_loop(h) == 1  # the internal error alone is an error


def test_the_loop_rejects_a_question_at_its_timeout(monkeypatch):
    monkeypatch.setattr(headless, "PROGRAM_GRACE", 0.0)
    agent = LoopAgent([confirm(1)])
    h = loop(agent, approvals_mode="program", program="./slow.sh", timeout=0.01)
    h.run._ask_program = lambda p, request: None  # a program that never answers
    assert run_loop(h) == 4
    assert [(e["by"], e["reason"]) for e in h.of("approval.decided")] == [("timeout", "no approval came within 0.01s")]


def test_a_turn_that_ignores_the_cancel_is_abandoned_after_the_grace(monkeypatch, caplog):
    monkeypatch.setattr(headless, "CANCEL_GRACE", 0.01)

    class Deaf(LoopAgent):
        def send(self, msg):
            FakeAgent.send(self, msg)

    agent = Deaf([(M.H_SIGNAL, signal.SIGTERM)])
    h = loop(agent)
    with caplog.at_level(logging.INFO, logger="dashfloat.headless"):
        assert run_loop(h) == 130
    result = h.result()
    assert (result["stop_reason"], result["signal"]) == ("abandoned", "SIGTERM")
    assert "signal SIGTERM: cancelling the turn" in caplog.messages
    assert "the turn did not end within 0.01s of SIGTERM: ending the run" in caplog.messages
    h = Harness()
    with caplog.at_level(logging.INFO, logger="dashfloat.headless"):
        h.feed((M.H_SIGNAL, signal.SIGINT), (M.H_SIGNAL, signal.SIGINT))
    assert "second signal SIGINT: ending the run now" in caplog.messages


@pytest.fixture
def stdin_pipe():
    """fd 0 is a pipe of the test's (its write end returned) while the test runs."""
    saved = os.dup(0)
    r, w = os.pipe()
    os.dup2(r, 0)
    os.close(r)
    try:
        yield w
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        try:
            os.close(w)
        except OSError:
            pass


def test_answers_on_stdin_reach_the_loop_and_their_reader_never_keeps_the_process(stdin_pipe):
    agent = LoopAgent([confirm(1)])
    h = loop(agent, approvals_mode="stdin")
    os.write(stdin_pipe, b'{"id": "ap-1", "decision": "approve"}\n')
    assert run_loop(h) == 0
    assert [(e["by"], e["decision"]) for e in h.of("approval.decided")] == [("stdin", "approve")]
    (reader,) = [t for t in threading.enumerate() if t.name == "answers"]
    assert reader.daemon  # still reading: stdin is open, and the run is over
    os.close(stdin_pipe)
    reader.join(5)
    assert not reader.is_alive()


# ---- read_answers and install_signals ------------------------------------------------------------------


def read_all(fd) -> list[tuple]:
    got = []
    t = threading.Thread(target=headless.read_answers, args=(fd, got.append), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "read_answers did not end at the end of its input"
    return got


def test_read_answers_gives_each_line_and_cuts_a_too_long_one(tmp_path):
    limit = approvals.LINE_MAX
    path = tmp_path / "answers"
    path.write_bytes(b'{"a": 1}\n' + b"x" * limit + b"\n" + b"y" * (2 * limit + 5) + b"\n" + b"last")
    with open(path, "rb") as f:
        got = read_all(f.fileno())
        os.fstat(f.fileno())  # still open: the reader does not close what it was given
    assert [(kind, len(data), data[:1], data[-1:]) for kind, data in got] == [
        (M.H_LINE, 9, b"{", b"\n"),
        (M.H_LINE, limit + 1, b"x", b"\n"),
        (M.H_LINE, limit + 1, b"y", b"y"),  # too long: its first LINE_MAX + 1 bytes (an error), the rest skipped
        (M.H_LINE, 4, b"l", b"t"),
        (M.H_EOF, 0, "", ""),
    ]


def test_read_answers_that_cannot_read_says_why():
    r, w = os.pipe()
    os.close(w)
    os.close(r)
    assert read_all(r) == [(M.H_EOF, "Bad file descriptor")]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_restoring_the_signals_ends_their_reader_and_closes_its_pipe():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")
    before_threads = set(threading.enumerate())
    before = open_fds()
    restore = headless.install_signals(lambda msg: None)
    (reader,) = [t for t in threading.enumerate() if t not in before_threads and t.name == "signals"]
    try:
        assert reader.daemon
    finally:
        restore()
    reader.join(5)
    assert not reader.is_alive()
    assert open_fds() == before


# ---- headless.run, with a real agent -------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch, fake_server):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "p"
    root.mkdir()
    config = Config(base_url=fake_server.url, model="test-model", root=root, journal=False,
                    base_url_is_default=False)
    agents: list[tuple] = []
    real_send = Agent.send

    def send(self, msg):
        agents.append((self, msg))
        real_send(self, msg)

    monkeypatch.setattr(Agent, "send", send)
    # a run that never ends fails its test, not hangs it: two signals end any run
    puts = []
    real_install = headless.install_signals

    def install(put):
        puts.append(put)
        return real_install(put)

    monkeypatch.setattr(headless, "install_signals", install)
    watchdog = threading.Timer(5, lambda: [put((M.H_SIGNAL, signal.SIGTERM)) for put in puts for _ in "12"])
    watchdog.daemon = True
    watchdog.start()
    try:
        yield SimpleNamespace(server=fake_server, root=root, config=config, sent=agents)
    finally:
        watchdog.cancel()


def stream_of(out: str) -> list[dict]:
    evs = [json.loads(line) for line in out.splitlines()]
    for ev in evs:
        assert errors(ev, SCHEMA) == [], ev
    return evs


def test_run_masks_what_the_agent_posts_and_cleans_up(project, capfd, caplog, monkeypatch):
    from dashfloat.tools import exec as exec_tool

    masking.register([("zq-private-token-4242", "[redacted: test]")])
    storage.report("probe", "the state directory cannot be written")
    killed = []
    real_kill_all = exec_tool.kill_all
    monkeypatch.setattr(exec_tool, "kill_all", lambda: (killed.append(1), real_kill_all())[1])
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    project.server.push(answer("the token is zq-private-token-4242"))
    with caplog.at_level(logging.WARNING, logger="dashfloat.headless"):
        status = headless.run(project.config, headless.Options("hi", output_format="stream-json"))
    assert status == 0
    evs = stream_of(capfd.readouterr().out)
    start, result = evs[0], evs[-1]
    assert (start["type"], start["resumed"], start["journal"], start["cwd"]) == (
        "session.start", False, None, os.path.realpath(project.root))
    assert (result["outcome"], result["answer"], result["resumable"]) == (
        "completed", "the token is [redacted: test]", False)
    assert [e["text"] for e in evs if e["type"] == "notice" and e["level"] == "warn"] == [
        "the state directory cannot be written"]
    agent = project.sent[0][0]
    assert [m for a, m in project.sent] == [(M.PROMPT, "hi"), (M.QUIT,)]
    assert agent.clipboard is False and not agent.alive
    assert killed == [1]
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert not [r for r in caplog.records if r.name == "dashfloat.headless"]


def test_run_names_the_session_after_its_journal(project, capfd, tmp_path):
    from dashfloat.journal import Journal

    for header, sid in [({"id": SID}, SID), ({}, "other")]:
        journal = Journal(tmp_path / "sessions" / "other.jsonl", header)
        project.server.push(answer("ok"))
        assert headless.run(project.config, headless.Options("hi", output_format="stream-json"),
                            journal=journal) == 0
        evs = stream_of(capfd.readouterr().out)
        assert {e["session_id"] for e in evs} == {sid}
        assert evs[0]["journal"] == str(journal.path) and evs[-1]["resumable"] is True


def test_run_stopped_by_a_signal_tells_the_agent_why_it_quits(project, capfd, monkeypatch):
    puts = []
    restored = []

    def install(put):
        puts.append(put)
        return lambda: restored.append(1)

    monkeypatch.setattr(headless, "install_signals", install)

    def respond(request):
        puts[0]((M.H_SIGNAL, signal.SIGTERM))  # while the request is out
        return answer("never", stall_after=0)

    project.server.push(respond)
    assert headless.run(project.config, headless.Options("hi", output_format="json")) == 130
    (result,) = stream_of(capfd.readouterr().out)
    assert (result["outcome"], result["signal"]) == ("interrupted", "SIGTERM")
    assert [m for a, m in project.sent] == [(M.PROMPT, "hi"), (M.CANCEL, "SIGTERM"), (M.QUIT, "signal")]
    assert restored == [1]


def test_run_says_when_the_agent_does_not_stop_in_time(project, capfd, monkeypatch, caplog):
    monkeypatch.setattr(headless, "JOIN_TIMEOUT", 0.01)
    gate = threading.Event()
    real_shutdown = Agent._shutdown

    def slow_shutdown(self):  # an agent that takes its time to quit
        gate.wait(5)
        real_shutdown(self)

    monkeypatch.setattr(Agent, "_shutdown", slow_shutdown)
    project.server.push(answer("ok"))
    try:
        with caplog.at_level(logging.WARNING, logger="dashfloat.headless"):
            assert headless.run(project.config, headless.Options("hi", output_format="json")) == 0
    finally:
        gate.set()
    agent = project.sent[0][0]
    agent.join(5)
    assert not agent.alive
    assert "the agent thread did not stop within 0.01s; the journal may lack its end" in caplog.messages


def test_run_ends_with_141_when_stdout_is_gone(project):
    from dashfloat.cli import EXIT_PIPE

    project.server.push(answer("ok"))
    saved = os.dup(1)
    r, w = os.pipe()
    os.close(r)
    os.dup2(w, 1)
    os.close(w)
    try:
        status = headless.run(project.config, headless.Options("hi", output_format="stream-json"))
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert status == EXIT_PIPE == 141
    assert [m for a, m in project.sent][:2] == [(M.CANCEL, "SIGPIPE"), (M.PROMPT, "hi")]
    assert [m for a, m in project.sent][-1] == (M.QUIT,)  # a gone reader is no signal to the journal
