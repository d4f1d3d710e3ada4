"""User hooks: ``pre_tool_use`` and ``post_tool_use`` commands from the user's config file.

Issue 4 section 5. A hook is a shell command line run like execute_command (``/bin/sh -c`` in
its own session via `exec.run_command`: the same environment, output cap, timeout, cancel,
and every process it started killed on every path). It gets the call as one JSON object on stdin::

    {"event": "pre_tool_use", "tool": "execute_command",
     "arguments": {"command": "git push"}, "id": "call_1", "cwd": "/home/me/proj"}

(a post hook also gets ``"result"``: the tool result dict the model will read). It need not
read it. Standard output and standard error come back merged (as for execute_command), so a
hook that answers in JSON should write nothing else.

Pre hook protocol
-----------------
- exit 0, no output (only blanks): no opinion (``decision`` None);
- exit 0, a JSON object ``{"decision": "deny"|"ask"|"allow", "reason": "..."}`` (``reason``
  optional): that decision;
- exit 2: deny, the output (stripped, bounded) is the reason;
- anything else (another exit status, killed by a signal, a timeout, cancelled, cannot start,
  output that is not a JSON object, an unknown decision, a non-string reason, more than
  `MAX_OUTPUT` bytes of output): ``failed=True`` and decision ``"ask"``, fail closed: a broken
  hook never lets a call through without a question. The reason names the hook and the problem.

A hook's decision only goes to the monotonic guard, which lets it tighten and never relax:
an ``allow`` from a hook is recorded and ignored when a rule said deny or ask.

Post hook protocol
------------------
- exit 0: the output (stripped) is a note for the model; if it is a JSON object, its string
  ``"note"`` is the note instead (no ``note``: no note). The note is kept raw (the UI escapes it
  on display) but bounded to `MAX_NOTE` bytes of UTF-8, a truncation marker included;
- anything else: ``failed=True`` with a reason. A post hook never changes the result.

Neither function raises: an unexpected error becomes a failed result (logged).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from dashfloat.tools import exec as _exec

log = logging.getLogger(__name__)

PRE_TOOL_USE = "pre_tool_use"
POST_TOOL_USE = "post_tool_use"
DEFAULT_TIMEOUT = 10.0
MAX_OUTPUT = 64 * 1024  # what is read of a hook's output (stdout and stderr merged)
MAX_NOTE = 4 * 1024  # a post hook's note, in UTF-8 bytes, marker included
MAX_REASON = 1024  # a reason taken from a hook's output, in UTF-8 bytes, marker included
HOOK_DECISIONS: tuple[str, ...] = ("deny", "ask", "allow")
DENY_EXIT_STATUS = 2


@dataclass(frozen=True)
class HookResult:
    """What one hook run said.

    decision: "deny", "ask", "allow" or None (no opinion; always None for a post hook).
    reason: the hook's reason for its decision, or, when ``failed``, what went wrong (naming
        the hook); "" otherwise.
    note: a post hook's note for the model ("" if none).
    failed: the hook did not follow the protocol (a pre hook's decision is then "ask").
    who: 'pre_tool_use hook "<command>"' (or post_tool_use), for the guard and the audit.
    """

    decision: str | None
    reason: str
    note: str
    failed: bool
    who: str


def _who(event: str, command: str) -> str:
    return f'{event} hook "{command}"'


def _bound(text: str, limit: int, what: str, total: int | None = None) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, a marker included when it is cut.

    `total` is the size of the whole text when `text` is already only its head.
    """
    data = text.encode("utf-8", errors="replace")
    total = max(total or 0, len(data))
    if total <= limit and len(data) == total:
        return text
    marker = f"\n[{what} truncated: {total} bytes]"
    room = max(0, limit - len(marker.encode("utf-8")))
    head = _exec._cut_utf8(data[:room]).decode("utf-8", errors="replace")
    return head + marker


def _payload(event: str, call: dict, cwd: str, result: dict | None) -> bytes:
    body: dict = {
        "event": event,
        "tool": call.get("tool"),
        "arguments": call.get("arguments"),
        "id": call.get("id"),
        "cwd": cwd,
    }
    if result is not None:
        body["result"] = result
    text = json.dumps(body, ensure_ascii=False, default=str) + "\n"
    return text.encode("utf-8", errors="replace")


def _run(command: str, payload: bytes, cwd: str, timeout: float, cancel) -> dict:
    return _exec.run_command(
        command,
        cwd,
        timeout=timeout,
        cancel=cancel,
        max_output=MAX_OUTPUT,
        stdin_data=payload,
    )


def _first_line(text: str) -> str:
    """A short excerpt of a hook's output for an error message ("" if it wrote nothing)."""
    text = text.strip()
    if not text:
        return ""
    line = text.splitlines()[0]
    if len(line) > 200:
        line = line[:197] + "..."
    return line


def _run_problem(who: str, run: dict, timeout: float) -> str | None:
    """Why a finished run is not a protocol answer at all (None if it exited 0)."""
    if run.get("ok"):
        if run.get("truncated"):
            return f"{who} wrote more than {MAX_OUTPUT // 1024} KiB of output"
        return None
    if run.get("cancelled"):
        return f"{who} was cancelled"
    code = run.get("code")
    if code == "timeout":
        return (f"{who} did not finish within {timeout:g}s and was killed with its "
                "process group")
    if code == "exec_failed":
        return f"{who} could not be started: {run.get('error', 'unknown error')}"
    if code == "exit_status":
        excerpt = _first_line(run.get("output", ""))
        tail = f": {excerpt}" if excerpt else ""
        if run.get("signal"):
            return f"{who} was killed by signal {run['signal']}{tail}"
        return f"{who} exited with status {run.get('exit_code')}{tail}"
    return f"{who} failed: {run.get('error', 'unknown error')}"


def _fail_pre(who: str, reason: str) -> HookResult:
    return HookResult(decision="ask", reason=reason, note="", failed=True, who=who)


def run_pre_hook(
    command: str,
    call: dict,
    *,
    cwd: str,
    timeout: float = DEFAULT_TIMEOUT,
    cancel: _exec.Cancel | None = None,
) -> HookResult:
    """Run one pre_tool_use hook for `call` ({"tool", "arguments", "id"}); never raises.

    See the module docstring for the protocol. Any failure is ``failed=True``, decision "ask".
    """
    who = _who(PRE_TOOL_USE, command)
    try:
        run = _run(command, _payload(PRE_TOOL_USE, call, cwd, None), cwd, timeout, cancel)
        if run.get("code") == "exit_status" and run.get("exit_code") == DENY_EXIT_STATUS:
            text = run.get("output", "").strip()
            reason = _bound(text, MAX_REASON, "reason") if text else f"{who} denied the call"
            return HookResult(decision="deny", reason=reason, note="", failed=False, who=who)
        problem = _run_problem(who, run, timeout)
        if problem is not None:
            return _fail_pre(who, problem + "; asking instead")
        text = run.get("output", "").strip()
        if not text:
            return HookResult(decision=None, reason="", note="", failed=False, who=who)
        try:
            answer = json.loads(text)
        except ValueError:
            excerpt = _first_line(text)
            return _fail_pre(who, f"{who} printed something that is not JSON ({excerpt}); "
                                  'expected {"decision": "deny"|"ask"|"allow", "reason": "..."} '
                                  "or nothing; asking instead")
        if not isinstance(answer, dict):
            return _fail_pre(who, f"{who} printed JSON that is not an object; expected "
                                  '{"decision": "deny"|"ask"|"allow", "reason": "..."}; '
                                  "asking instead")
        if "decision" not in answer:
            return _fail_pre(who, f'{who} printed a JSON object without "decision"; expected '
                                  '{"decision": "deny"|"ask"|"allow", "reason": "..."} or '
                                  "nothing; asking instead")
        decision = answer["decision"]
        if not isinstance(decision, str) or decision not in HOOK_DECISIONS:
            shown = json.dumps(decision, ensure_ascii=False)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            return _fail_pre(who, f"{who} answered an unknown decision {shown}; expected "
                                  '"deny", "ask" or "allow"; asking instead')
        reason = answer.get("reason", "")
        if reason is None:
            reason = ""
        if not isinstance(reason, str):
            return _fail_pre(who, f'{who} answered a "reason" that is not a string; asking '
                                  "instead")
        reason = _bound(reason.strip(), MAX_REASON, "reason")
        return HookResult(decision=decision, reason=reason, note="", failed=False, who=who)
    except Exception as exc:  # never raise: a bug here must not let the call through
        log.exception("hooks: %s failed unexpectedly", who)
        return _fail_pre(who, f"{who} could not be run ({type(exc).__name__}); asking instead")


def run_post_hook(
    command: str,
    call: dict,
    result: dict,
    *,
    cwd: str,
    timeout: float = DEFAULT_TIMEOUT,
    cancel: _exec.Cancel | None = None,
) -> HookResult:
    """Run one post_tool_use hook for `call` and its `result`; never raises.

    Success gives ``note`` (maybe ""); failure ``failed=True`` and a reason. Never changes
    `result`.
    """
    who = _who(POST_TOOL_USE, command)

    def fail(reason: str) -> HookResult:
        return HookResult(decision=None, reason=reason, note="", failed=True, who=who)

    try:
        run = _run(command, _payload(POST_TOOL_USE, call, cwd, result), cwd, timeout, cancel)
        truncated = bool(run.get("ok") and run.get("truncated"))
        if not truncated:  # a long plain note is only cut (below)
            problem = _run_problem(who, run, timeout)
            if problem is not None:
                return fail(problem)
        text = run.get("output", "").strip()
        note = text
        if text.startswith("{") and not truncated:
            try:
                answer = json.loads(text)
            except ValueError:
                answer = None  # not JSON after all: the text is the note
            if isinstance(answer, dict):
                note = answer.get("note", "")
                if note is None:
                    note = ""
                if not isinstance(note, str):
                    return fail(f'{who} answered a "note" that is not a string')
                note = note.strip()
        total = int(run.get("bytes") or 0) if truncated else None
        note = _bound(note, MAX_NOTE, "note", total)
        return HookResult(decision=None, reason="", note=note, failed=False, who=who)
    except Exception as exc:  # never raise: the result stands whatever a hook does
        log.exception("hooks: %s failed unexpectedly", who)
        return fail(f"{who} could not be run ({type(exc).__name__})")
