"""Approvals without a person: parsing the answers a wrapper writes on stdin, and running an
approval program (`--approvals cmd:PROGRAM`). Pure functions and one blocking call; the
headless front end (dashfloat/headless.py) decides what to do with what they return.

Nothing here ever approves by accident: an answer that is not exactly understood is an
error, and a program that fails, is slow, or says anything but a well-formed "approve"
rejects.

Answers on stdin are JSON lines: {"id": "<approval_id>", "decision": "approve"|"reject"}
(an optional string "reason" is passed on to the model when it rejects).

A program is run like a hook (tools/hooks.py): `/bin/sh -c PROGRAM` in the working
directory, in its own session, every process it started killed when it ends or times out.
It gets the approval.requested event as one JSON line on stdin and must exit 0 after
printing one JSON object, {"decision": "approve"|"reject", "reason": "..."} ("id", if
given, must be the request's). Its standard error is merged with its output (as for
hooks), so it must write nothing else.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

DECISIONS = ("approve", "reject")
LINE_MAX = 1024 * 1024  # bytes of one answer line
PROGRAM_OUTPUT_MAX = 64 * 1024
REASON_MAX = 1000  # characters of a reason passed on to the model
SHOWN_MAX = 80  # characters of a bad value quoted in an error


class ModeError(ValueError):
    """An --approvals or --approval-timeout value that cannot be used."""


def parse_mode(text: str | None) -> tuple[str, str | None]:
    """--approvals VALUE -> ("none", None) | ("stdin", None) | ("program", PROGRAM)."""
    if text is None or text == "none":
        return "none", None
    if text == "stdin":
        return "stdin", None
    if text.startswith("cmd:"):
        program = text[4:].strip()
        if not program:
            raise ModeError("--approvals cmd:PROGRAM needs a program after cmd:, e.g. "
                            "--approvals 'cmd:./approve.sh'")
        return "program", program
    raise ModeError(f"--approvals takes none, stdin or cmd:PROGRAM, not {_shown(text)}")


def parse_timeout(value: float | None) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise ModeError(f"--approval-timeout takes a number of seconds above 0, not {value:g}")
    return value


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 3] + "..."


def _reason(value) -> tuple[str, str | None]:
    """A reason from an answer: (text, error)."""
    if value is None:
        return "", None
    if not isinstance(value, str):
        return "", '"reason" must be a string'
    value = value.strip()
    return (value if len(value) <= REASON_MAX else value[:REASON_MAX] + "..."), None


@dataclass(frozen=True)
class Answer:
    """One line of answers. `error` set: the line was not understood (stderr says so); then
    `id` is set only when the line named a request (which is then rejected, never left
    waiting and never approved)."""

    id: str | None
    decision: str | None
    reason: str
    error: str | None


def parse_answer(line: bytes) -> Answer | None:
    """One line from stdin; None for a blank line (ignored)."""
    if len(line) > LINE_MAX:
        return Answer(None, None, "", f"an answer line longer than {LINE_MAX // 1024} KiB")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Answer(None, None, "", f"an answer that is not UTF-8 (byte {exc.start})")
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return Answer(None, None, "", f"an answer that is not JSON: {_shown(text.strip())}; expected "
                                      '{"id": "...", "decision": "approve"|"reject"}')
    if not isinstance(obj, dict):
        return Answer(None, None, "", f"an answer that is not a JSON object: {_shown(obj)}")
    aid = obj.get("id")
    if not isinstance(aid, str) or not aid:
        return Answer(None, None, "", f'an answer without a string "id": {_shown(obj)}')
    decision = obj.get("decision")
    if decision not in DECISIONS:
        return Answer(aid, None, "", f'an answer to {aid} with an unknown "decision" {_shown(decision)} '
                                     '(approve or reject): rejected')
    reason, problem = _reason(obj.get("reason"))
    if problem:
        return Answer(aid, None, "", f"an answer to {aid}: {problem}: rejected")
    unknown = sorted(set(obj) - {"id", "decision", "reason"})
    if unknown:
        return Answer(aid, None, "", f"an answer to {aid} with unknown keys {', '.join(unknown)}: rejected")
    return Answer(aid, decision, reason, None)


def program_verdict(run: dict, approval_id: str, timeout: float) -> tuple[str, str, str | None]:
    """What an approval program's run (exec.run_command's result) says:
    (decision, reason, error); error set means it failed and the decision is reject."""
    if run.get("cancelled"):
        return "reject", "", "the approval program was stopped"
    if run.get("code") == "timeout":
        return "reject", "", f"the approval program did not answer within {timeout:g}s (killed)"
    if run.get("code") == "exec_failed":
        return "reject", "", f"the approval program could not be started: {run.get('error', '?')}"
    output = (run.get("output") or "").strip()
    if not run.get("ok"):
        status = f"signal {run['signal']}" if run.get("signal") else f"status {run.get('exit_code')}"
        said = f": {_shown(output.splitlines()[0])}" if output else ""
        return "reject", "", f"the approval program exited with {status}{said}"
    if run.get("truncated"):
        return "reject", "", f"the approval program wrote more than {PROGRAM_OUTPUT_MAX // 1024} KiB"
    try:
        obj = json.loads(output)
    except ValueError:
        return "reject", "", (f"the approval program printed something that is not JSON: {_shown(output)}; "
                              'expected {"decision": "approve"|"reject"}')
    if not isinstance(obj, dict):
        return "reject", "", f"the approval program printed JSON that is not an object: {_shown(obj)}"
    if "id" in obj and obj["id"] != approval_id:
        return "reject", "", f"the approval program answered id {_shown(obj['id'])}, not {approval_id}"
    decision = obj.get("decision")
    if decision not in DECISIONS:
        return "reject", "", f'the approval program answered an unknown "decision" {_shown(decision)}'
    reason, problem = _reason(obj.get("reason"))
    if problem:
        return "reject", "", f"the approval program's answer: {problem}"
    return decision, reason, None


def run_program(program: str, request: dict, cwd: str, timeout: float, cancel) -> tuple[str, str, str | None]:
    """Ask the program about one request; blocks (run it on a worker thread). Never raises."""
    from dashfloat.journal import encode_line
    from dashfloat.tools import exec as _exec

    try:
        run = _exec.run_command(program, cwd, timeout=timeout, cancel=cancel, max_output=PROGRAM_OUTPUT_MAX,
                                stdin_data=encode_line(request))
    except Exception as exc:  # run_command never raises; a bug must still reject
        return "reject", "", f"the approval program could not be run: {type(exc).__name__}: {exc}"
    return program_verdict(run, request.get("approval_id", ""), timeout)
