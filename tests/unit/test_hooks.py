"""Tests for dashfloat.tools.hooks: real shell hooks written to tmp_path.

No fixed sleeps: waits are conditions polled against a deadline. A timed-out hook is checked
for leftovers in /proc by a unique marker argument.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from dashfloat.tools import exec as ex
from dashfloat.tools import hooks
from dashfloat.tools.guard import ASK, DENY, MonotonicGuard
from dashfloat.tools.hooks import HookResult, run_post_hook, run_pre_hook
from tests.procs import live_with_marker, wait_for

CALL = {"tool": "execute_command", "arguments": {"command": "git push"}, "id": "call_1"}
RESULT = {"ok": True, "exit_code": 0, "output": "pushed\n", "truncated": False, "bytes": 7}

_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _no_stray_commands():
    yield
    ex.kill_all()


def script(tmp_path: Path, body: str, name: str | None = None) -> str:
    """A hook script in tmp_path; returns the command line that runs it."""
    path = tmp_path / (name or f"hook{next(_counter)}.sh")
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def pre(tmp_path: Path, body: str, **kwargs) -> HookResult:
    command = script(tmp_path, body)
    kwargs.setdefault("cwd", str(tmp_path))
    return run_pre_hook(command, CALL, **kwargs)


def post(tmp_path: Path, body: str, result: dict | None = None, **kwargs) -> HookResult:
    command = script(tmp_path, body)
    kwargs.setdefault("cwd", str(tmp_path))
    return run_post_hook(command, CALL, RESULT if result is None else result, **kwargs)


def assert_ask_failure(result: HookResult, *words: str) -> None:
    assert result.failed is True
    assert result.decision == ASK
    assert result.who in result.reason  # the reason names the hook
    for word in words:
        assert word in result.reason, result.reason


# ---- pre_tool_use: answers ---------------------------------------------------------------


def test_exit_zero_without_output_is_no_opinion(tmp_path):
    result = pre(tmp_path, "exit 0")
    assert result == HookResult(decision=None, reason="", note="", failed=False, who=result.who)


def test_blank_output_is_no_opinion(tmp_path):
    assert pre(tmp_path, "printf '\\n  \\n'").decision is None


def test_who_names_the_event_and_command(tmp_path):
    result = run_pre_hook("true", CALL, cwd=str(tmp_path))
    assert result.who == 'pre_tool_use hook "true"'
    assert run_post_hook("true", CALL, RESULT, cwd=str(tmp_path)).who == 'post_tool_use hook "true"'


@pytest.mark.parametrize("decision", ["deny", "ask", "allow"])
def test_json_decision(tmp_path, decision):
    body = f"""echo '{{"decision": "{decision}", "reason": "policy says {decision}"}}'"""
    result = pre(tmp_path, body)
    assert result.decision == decision
    assert result.reason == f"policy says {decision}"
    assert result.failed is False


def test_json_decision_without_reason(tmp_path):
    result = pre(tmp_path, """echo '{"decision": "deny"}'""")
    assert (result.decision, result.reason, result.failed) == ("deny", "", False)


def test_exit_2_denies_with_the_output_as_reason(tmp_path):
    result = pre(tmp_path, "echo 'pushing is not allowed on Fridays' >&2; exit 2")
    assert result.decision == DENY
    assert result.reason == "pushing is not allowed on Fridays"
    assert result.failed is False


def test_exit_2_without_output_still_denies(tmp_path):
    result = pre(tmp_path, "exit 2")
    assert result.decision == DENY and not result.failed
    assert result.who in result.reason


def test_exit_2_reason_is_bounded(tmp_path):
    result = pre(tmp_path, "head -c 50000 /dev/zero | tr '\\0' r; exit 2")
    assert result.decision == DENY
    assert len(result.reason.encode()) <= hooks.MAX_REASON
    assert "truncated" in result.reason


# ---- pre_tool_use: failures fail closed ---------------------------------------------------


def test_exit_1_fails_closed(tmp_path):
    result = pre(tmp_path, "echo 'oops: no such thing' >&2; exit 1")
    assert_ask_failure(result, "exited with status 1", "oops: no such thing")


def test_killed_by_a_signal_fails_closed(tmp_path):
    assert_ask_failure(run_pre_hook("kill -9 $$", CALL, cwd=str(tmp_path)), "killed by signal SIGKILL")


def test_timeout_fails_closed_and_leaves_no_process(tmp_path):
    mark = f"5.{os.getpid()}{next(_counter):04d}"
    started = time.monotonic()
    result = pre(tmp_path, f"sleep {mark} & sleep {mark}", timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert_ask_failure(result, "0.3s", "killed")
    assert wait_for(lambda: not live_with_marker(mark)), live_with_marker(mark)
    assert not ex._registry


def test_plain_sleep_5_times_out(tmp_path):
    started = time.monotonic()
    result = run_pre_hook("sleep 5", CALL, cwd=str(tmp_path), timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert_ask_failure(result, "did not finish within 0.3s")
    assert wait_for(lambda: not ex._registry)


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("this is not json", ["not JSON", "this is not json"]),
        ('{"decision": "deny"', ["not JSON"]),
        ('["deny"]', ["not an object"]),
        ('"deny"', ["not an object"]),
        ('{"decision": "maybe"}', ['unknown decision "maybe"']),
        ('{"decision": "DENY"}', ['unknown decision "DENY"']),
        ('{"decision": null}', ["unknown decision null"]),
        ('{"decision": 2}', ["unknown decision 2"]),
        ('{"reason": "no decision"}', ['without "decision"']),
        ('{"decision": "deny", "reason": 5}', ['"reason" that is not a string']),
        ('{"decision": "allow"} trailing', ["not JSON"]),
    ],
)
def test_bad_answers_fail_closed(tmp_path, output, words):
    path = tmp_path / "answer.txt"
    path.write_text(output, encoding="utf-8")
    assert_ask_failure(pre(tmp_path, f"cat '{path}'"), *words)


def test_too_much_output_fails_closed(tmp_path):
    result = pre(tmp_path, "head -c 100000 /dev/zero | tr '\\0' ' '; echo '{\"decision\": \"allow\"}'")
    assert_ask_failure(result, "more than 64 KiB")


def test_a_hook_that_cannot_start_fails_closed(tmp_path):
    result = run_pre_hook("true", CALL, cwd=str(tmp_path / "missing"))
    assert_ask_failure(result, "could not be started")


def test_command_not_found_fails_closed(tmp_path):
    result = run_pre_hook(str(tmp_path / "no-such-hook"), CALL, cwd=str(tmp_path))
    assert_ask_failure(result, "exited with status 127")


def test_cancel_fails_closed(tmp_path):
    cancel = ex.Cancel()
    box: list[HookResult] = []
    command = script(tmp_path, "echo started > started; sleep 30")
    thread = threading.Thread(
        target=lambda: box.append(run_pre_hook(command, CALL, cwd=str(tmp_path), timeout=30, cancel=cancel))
    )
    thread.start()
    assert wait_for(lambda: (tmp_path / "started").exists())
    cancel.cancel()
    thread.join(3)
    assert not thread.is_alive()
    assert_ask_failure(box[0], "cancelled")


def test_never_raises_on_arguments_that_cannot_be_encoded(tmp_path):
    circular: dict = {}
    circular["self"] = circular
    call = {"tool": "write_file", "arguments": circular, "id": "c"}
    result = run_pre_hook("true", call, cwd=str(tmp_path))
    assert_ask_failure(result, "could not be run")
    note = run_post_hook("true", call, RESULT, cwd=str(tmp_path))
    assert note.failed is True and note.decision is None


def test_unusual_argument_values_are_sent_as_text(tmp_path):
    copy = tmp_path / "got.json"
    call = {"tool": "read_file", "arguments": {"path": Path("a.txt")}, "id": "c"}
    result = run_pre_hook(f"cat > '{copy}'", call, cwd=str(tmp_path))
    assert result.decision is None and not result.failed
    assert json.loads(copy.read_text())["arguments"] == {"path": "a.txt"}


# ---- what a hook gets -----------------------------------------------------------------------


def test_pre_hook_gets_the_call_as_json_on_stdin(tmp_path):
    copy = tmp_path / "got.json"
    call = {"tool": "write_file", "arguments": {"path": "ü.txt", "content": "a\nb\x1b[31m"}, "id": "call_9"}
    result = run_pre_hook(f"cat > '{copy}'", call, cwd=str(tmp_path))
    assert result.decision is None and not result.failed
    got = json.loads(copy.read_bytes().decode("utf-8"))
    assert got == {
        "event": "pre_tool_use",
        "tool": "write_file",
        "arguments": {"path": "ü.txt", "content": "a\nb\x1b[31m"},
        "id": "call_9",
        "cwd": str(tmp_path),
    }


def test_post_hook_gets_the_call_and_result(tmp_path):
    copy = tmp_path / "got.json"
    result = run_post_hook(f"cat > '{copy}'", CALL, RESULT, cwd=str(tmp_path))
    assert result == HookResult(decision=None, reason="", note="", failed=False, who=result.who)
    got = json.loads(copy.read_text())
    assert got == {"event": "post_tool_use", **CALL, "cwd": str(tmp_path), "result": RESULT}


def test_hook_runs_in_cwd_with_the_exec_environment(tmp_path):
    result = post(tmp_path, 'echo "$(pwd) $TERM $PAGER"')
    assert result.note == f"{os.path.realpath(tmp_path)} dumb cat"


def test_a_hook_that_does_not_read_stdin(tmp_path):
    big = {**RESULT, "output": "x" * (4 * 1024 * 1024)}
    started = time.monotonic()
    result = post(tmp_path, "echo fine", result=big)
    assert time.monotonic() - started < 1.5
    assert result.note == "fine" and not result.failed
    started = time.monotonic()
    call = {"tool": "write_file", "arguments": {"path": "a", "content": "y" * (2 * 1024 * 1024)}, "id": "c"}
    answer = run_pre_hook("""echo '{"decision": "ask", "reason": "big write"}'""", call, cwd=str(tmp_path))
    assert time.monotonic() - started < 1.5
    assert (answer.decision, answer.reason) == ("ask", "big write")
    assert wait_for(lambda: not [t for t in threading.enumerate() if t.name.startswith("exec-write-")])


def test_a_hook_that_reads_part_of_stdin(tmp_path):
    big = {**RESULT, "output": "x" * (1024 * 1024)}
    result = post(tmp_path, "head -c 10 >/dev/null; echo read some", result=big)
    assert result.note == "read some"


# ---- post_tool_use -------------------------------------------------------------------------


def test_post_plain_note(tmp_path):
    result = post(tmp_path, "echo 'lint: 2 warnings'; echo 'line 3: unused import'")
    assert result.note == "lint: 2 warnings\nline 3: unused import"
    assert (result.failed, result.decision, result.reason) == (False, None, "")


def test_post_json_note(tmp_path):
    result = post(tmp_path, """echo '{"note": "formatted with black"}'""")
    assert result.note == "formatted with black"


def test_post_json_without_note_is_no_note(tmp_path):
    result = post(tmp_path, """echo '{"other": 1}'""")
    assert result.note == "" and not result.failed


def test_post_json_with_a_non_string_note_fails(tmp_path):
    result = post(tmp_path, """echo '{"note": 3}'""")
    assert result.failed is True and result.note == ""
    assert result.who in result.reason and "not a string" in result.reason


def test_post_text_that_only_looks_like_json_is_the_note(tmp_path):
    result = post(tmp_path, "echo '{not json'")
    assert result.note == "{not json"


def test_post_no_output_is_no_note(tmp_path):
    result = post(tmp_path, "true")
    assert result.note == "" and not result.failed


def test_post_note_is_raw_but_bounded(tmp_path):
    result = post(tmp_path, r"printf 'a\033[31mb\n'; i=0; while [ $i -lt 3000 ]; do printf 'é'; i=$((i+1)); done")
    assert result.note.startswith("a\x1b[31mb")  # raw: the UI escapes it on display
    assert len(result.note.encode("utf-8")) <= hooks.MAX_NOTE
    assert result.note.endswith("\n[note truncated: 6008 bytes]")
    assert "\ufffd" not in result.note  # cut between characters, not inside one


def test_post_huge_output_is_cut_not_failed(tmp_path):
    result = post(tmp_path, "head -c 200000 /dev/zero | tr '\\0' n")
    assert not result.failed
    assert len(result.note.encode()) <= hooks.MAX_NOTE
    assert result.note.endswith("[note truncated: 200000 bytes]")


def test_post_failure_never_changes_the_result(tmp_path):
    result_dict = dict(RESULT)
    result = post(tmp_path, "echo broken >&2; exit 3", result=result_dict)
    assert result.failed is True and result.decision is None and result.note == ""
    assert "exited with status 3" in result.reason and "broken" in result.reason
    assert result.who in result.reason
    assert result_dict == RESULT


def test_post_exit_2_is_a_failure_too(tmp_path):
    result = post(tmp_path, "exit 2")
    assert result.failed is True and result.decision is None


def test_post_timeout(tmp_path):
    started = time.monotonic()
    result = run_post_hook("sleep 5", CALL, RESULT, cwd=str(tmp_path), timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert result.failed is True and "did not finish within 0.3s" in result.reason


# ---- through the guard ---------------------------------------------------------------------


def test_a_hook_allow_cannot_relax_a_rule_deny(tmp_path):
    guard = MonotonicGuard()
    guard.update(DENY, 'rule "execute_command(git push)" in user config')
    answer = pre(tmp_path, """echo '{"decision": "allow"}'""")
    assert answer.decision == "allow"
    assert guard.update(answer.decision, answer.who) is False
    assert guard.final == DENY
    assert guard.relax_attempts[0].who == answer.who


def test_a_failed_hook_tightens_an_allow_to_ask(tmp_path):
    guard = MonotonicGuard()
    guard.update("allow", "built-in default")
    answer = pre(tmp_path, "exit 7")
    assert guard.update(answer.decision, answer.who) is True
    assert guard.final == ASK and guard.decided_by == answer.who


# ---- the parts on their own (found by `make mutation`) --------------------------------------


def test_bound_keeps_what_fits_and_cuts_with_a_marker():
    assert hooks._bound("a" * 40, 40, "x") == "a" * 40
    marker = "\n[x truncated: 41 bytes]"
    assert hooks._bound("a" * 41, 40, "x") == "a" * (40 - len(marker)) + marker
    # only the head of a longer text: the marker says the whole size
    assert hooks._bound("abc", 100, "note", total=500) == "abc\n[note truncated: 500 bytes]"
    assert hooks._bound("abc", 100, "note", total=3) == "abc"
    assert hooks._bound("abc", 100, "note", total=1) == "abc"  # (a total below the text's own size)
    assert hooks._bound("abcdef", 5, "x") == "\n[x truncated: 6 bytes]"  # no room left but the marker


def test_first_line_of_a_hooks_output():
    assert hooks._first_line("  \n") == ""
    assert hooks._first_line("\n  first \nsecond") == "first "
    assert hooks._first_line("x" * 200) == "x" * 200
    assert hooks._first_line("x" * 201) == "x" * 197 + "..."


@pytest.mark.parametrize("run, problem", [
    ({"ok": True}, None),
    ({"ok": True, "truncated": True}, "H wrote more than 64 KiB of output"),
    ({"ok": False, "cancelled": True, "code": "timeout"}, "H was cancelled"),
    ({"ok": False, "code": "timeout"}, "H did not finish within 2.5s and was killed with its process group"),
    ({"ok": False, "code": "exec_failed", "error": "No such file"}, "H could not be started: No such file"),
    ({"ok": False, "code": "exec_failed"}, "H could not be started: unknown error"),
    ({"ok": False, "code": "exit_status", "exit_code": 3, "output": "\n"}, "H exited with status 3"),
    ({"ok": False, "code": "exit_status", "exit_code": 3, "output": "bad\nworse"}, "H exited with status 3: bad"),
    ({"ok": False, "code": "exit_status", "signal": "SIGTERM", "output": ""}, "H was killed by signal SIGTERM"),
    ({"ok": False, "code": "exit_status", "signal": "SIGTERM", "output": "x"}, "H was killed by signal SIGTERM: x"),
    ({"ok": False, "code": "io_error", "error": "EIO"}, "H failed: EIO"),
    ({"ok": False}, "H failed: unknown error"),
])
def test_why_a_run_is_no_answer(run, problem):
    assert hooks._run_problem("H", run, 2.5) == problem


def test_exact_bounds_of_reasons_and_notes(tmp_path):
    """MAX_REASON and MAX_NOTE are 1 KiB and 4 KiB of UTF-8, the marker included."""
    reason = pre(tmp_path, "head -c 50000 /dev/zero | tr '\\0' r; exit 2").reason
    assert len(reason.encode()) == 1024 and reason.endswith("\n[reason truncated: 50000 bytes]")
    note = post(tmp_path, "head -c 200000 /dev/zero | tr '\\0' n").note
    assert len(note.encode()) == 4096


def test_a_json_reason_is_stripped_and_bounded(tmp_path):
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"decision": "ask", "reason": "  because \n"}))
    assert pre(tmp_path, f"cat '{path}'").reason == "because"
    path.write_text(json.dumps({"decision": "ask", "reason": "w" * 5000}))
    assert pre(tmp_path, f"cat '{path}'").reason.endswith("\n[reason truncated: 5000 bytes]")
    path.write_text(json.dumps({"decision": "deny", "reason": None}))
    result = pre(tmp_path, f"cat '{path}'")
    assert (result.decision, result.reason, result.failed) == ("deny", "", False)


def test_an_unknown_decision_is_shown_short_and_as_written(tmp_path):
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"decision": "é" * 100}, ensure_ascii=False))
    shown = '"' + "é" * 76 + "..."
    assert pre(tmp_path, f"cat '{path}'").reason.endswith(
        f"answered an unknown decision {shown}; expected \"deny\", \"ask\" or \"allow\"; asking instead")
    path.write_text(json.dumps({"decision": "é" * 78}, ensure_ascii=False))  # 80 characters shown: whole
    assert f"unknown decision \"{'é' * 78}\";" in pre(tmp_path, f"cat '{path}'").reason
    path.write_text(json.dumps({"decision": "é" * 79}, ensure_ascii=False))  # 81: cut
    assert f"unknown decision \"{'é' * 76}...;" in pre(tmp_path, f"cat '{path}'").reason


def test_exit_2_with_only_blanks_denies_in_the_hooks_name(tmp_path):
    result = pre(tmp_path, "echo '   '; exit 2")
    assert (result.decision, result.reason) == ("deny", f"{result.who} denied the call")


def test_the_call_arrives_as_utf8_json_on_one_line(tmp_path):
    copy = tmp_path / "got.json"
    call = {"tool": "write_file", "arguments": {"path": "ü.txt"}, "id": "c"}
    run_pre_hook(f"cat > '{copy}'", call, cwd=str(tmp_path))
    raw = copy.read_bytes()
    assert "ü.txt".encode() in raw and raw.endswith(b"}\n") and raw.count(b"\n") == 1


def test_an_unexpected_error_fails_closed_and_is_logged(tmp_path, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(hooks, "_run", broken)
    caplog.set_level("ERROR", logger="dashfloat.tools.hooks")
    result = run_pre_hook("true", CALL, cwd=str(tmp_path))
    assert [(r.getMessage(), r.exc_info[0]) for r in caplog.records] == [
        ('hooks: pre_tool_use hook "true" failed unexpectedly', RuntimeError)]
    caplog.clear()
    assert result == HookResult(decision="ask", failed=True, note="", who=result.who,
                                reason=f"{result.who} could not be run (RuntimeError); asking instead")
    note = run_post_hook("true", CALL, RESULT, cwd=str(tmp_path))
    assert note == HookResult(decision=None, failed=True, note="", who=note.who,
                              reason=f"{note.who} could not be run (RuntimeError)")
    assert [(r.getMessage(), r.exc_info[0]) for r in caplog.records] == [
        ('hooks: post_tool_use hook "true" failed unexpectedly', RuntimeError)]


def test_post_json_note_null_is_no_note_and_a_note_is_stripped(tmp_path):
    result = post(tmp_path, """echo '{"note": null}'""")
    assert (result.note, result.failed, result.reason) == ("", False, "")
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"note": "  tidy \n"}))
    assert post(tmp_path, f"cat '{path}'").note == "tidy"


def test_post_json_that_is_not_an_object_is_the_note(tmp_path):
    assert post(tmp_path, """echo '{"a": 1} and more'""").note == '{"a": 1} and more'


def test_post_huge_json_is_cut_as_text_not_parsed(tmp_path):
    result = post(tmp_path, """printf '{"note": "'; head -c 100000 /dev/zero | tr '\\0' n; printf '"}'""")
    assert not result.failed
    assert result.note.startswith('{"note": "nnn')
    assert result.note.endswith("\n[note truncated: 100012 bytes]")


def test_post_failure_with_huge_output_is_a_failure(tmp_path):
    result = post(tmp_path, "head -c 100000 /dev/zero | tr '\\0' n; exit 1")
    assert result.failed and "exited with status 1" in result.reason and result.note == ""


def test_a_hook_result_cannot_be_changed_after_the_fact(tmp_path):
    import dataclasses

    result = pre(tmp_path, "exit 7")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.decision = "allow"  # (the guard and the audit see what the hook said)
