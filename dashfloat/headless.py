"""Headless mode, `dashfloat -p PROMPT`: the second front end, for scripts, CI and cron.

The same Agent, permission pipeline and session journal as the full-screen UI; no urwid.
The agent posts its plain messages (dashfloat/messages.py) to a queue; the main thread
reads them, turns each into events (EVENTS_OF: one table, message kind -> event types of
dashfloat/events.py), answers the agent's questions by policy (refused: nobody is there),
from stdin, or by asking a program (dashfloat/approvals.py), and when the agent says the
turn ended (TURN_END) writes the `result` event and chooses the exit status.

Output (`--output-format`): text (the final answer on stdout; errors and refusals on stderr,
progress too with -v or when stderr is a terminal), json (the result event, one object),
stream-json (every event, one JSON line each, written with one write(2) as it happens).

Signals: SIGINT, SIGTERM and SIGHUP cancel the turn like Esc (a question is rejected, a
running command is killed with its processes, every call is answered, the journal is
flushed), then the result event is written and the exit status is 130. A second signal, or
a turn that has not ended CANCEL_GRACE seconds after the first, ends the run at once.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
import time

from dashfloat import events as E
from dashfloat import messages as M

log = logging.getLogger("dashfloat.headless")

# The mapping: every agent -> front end message kind, and the events it becomes (none: the
# reason is the comment). A kind missing here fails tests/unit/test_headless.py.
EVENTS_OF: dict[str, tuple[str, ...]] = {
    M.PHASE: (),  # the state of the moment: the events say what happens
    M.MODEL: ("model",),
    M.MODE: (),  # the mode is set before the run: session.start has it
    M.USER: ("prompt",),
    M.ASSISTANT_START: ("message.start",),
    M.TOKEN: ("message.delta",),
    M.REASONING: ("reasoning.delta",),
    M.ASSISTANT_END: ("message.end",),
    M.USAGE: ("usage",),
    M.METER: (),  # the run's totals: the result's tokens and cost
    M.STOPPED: (),  # a budget: the error entry came with it, the result's stop_reason is budget
    M.LEAVE: (),  # /quit: a headless run ends with its turn anyway
    M.CLIPBOARD: (),  # /copy: no terminal here; the notice names the file that has the text
    M.COMPACTED: ("compaction",),
    M.SYSTEM: ("notice", "error"),  # info and warn, or error
    M.TOOL_CALL: ("tool.call",),
    M.TOOL_OUTPUT: ("tool.output",),
    M.TOOL_NOTE: ("tool.note",),
    M.TOOL_RESULT: ("tool.result",),
    M.CONFIRM: ("approval.requested", "approval.decided"),  # refused at once when nobody can answer
    M.DECIDED: ("approval.decided",),
    M.CRASH: ("error",),
    M.AGENT_DOWN: ("error", "result"),
    M.FILES: ("files.changed",),
    M.TURN_END: ("result",),
}
# events the front end makes on its own: the first, and the approver's errors
OWN_EVENTS = ("session.start", "error")

LIVE_MAX = 64 * 1024  # characters of live output per call in the event stream
CANCEL_GRACE = 5.0  # seconds a signalled turn has to end before the run is ended anyway
STDIN_TIMEOUT = 300.0  # default --approval-timeout for answers on stdin
PROGRAM_TIMEOUT = 30.0  # ... and for an approval program
PROGRAM_GRACE = 5.0  # past its timeout, a program's answer is not waited for any more
JOIN_TIMEOUT = 5.0  # the agent's thread, to close the journal, when the run ends
FORMATS = ("text", "json", "stream-json")

REFUSED = ("not run: this call needs approval, and nobody can give it in this run (DashFloat runs "
           "headless, without an approver). Do not try it again; finish without it, and say what it "
           "would have done.")


class OutputGone(Exception):
    """The reader of stdout went away (EPIPE)."""


def write_all(fd: int, data: bytes) -> None:
    """Write everything, retrying short writes; EPIPE and other errors -> OutputGone."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as exc:
            raise OutputGone(exc.strerror or str(exc)) from None
        view = view[n:]


def say(text: str) -> None:
    """A line on stderr (escaped; never fails)."""
    from dashfloat.masking import mask
    from dashfloat.textsafe import visible

    lines = [visible(line) for line in mask(text).split("\n")]
    try:
        write_all(2, ("\n".join(lines) + "\n").encode("utf-8", "replace"))
    except OutputGone:
        pass


class Options:
    def __init__(self, prompt: str, output_format: str = "text", verbose: bool = False, approvals: str = "none",
                 program: str | None = None, approval_timeout: float | None = None):
        self.prompt = prompt
        self.output_format = output_format
        self.verbose = verbose
        self.approvals = approvals  # none | stdin | program
        self.program = program
        default = STDIN_TIMEOUT if approvals == "stdin" else PROGRAM_TIMEOUT
        self.approval_timeout = approval_timeout if approval_timeout is not None else default


class Pending:
    """A question the agent asked, until it is answered."""

    def __init__(self, approval_id: str, ref: int, info: dict, deadline: float | None):
        self.approval_id = approval_id
        self.ref = ref
        self.info = info
        self.call_id = info.get("id", "")
        self.deadline = deadline
        self.cancel = None  # an approval program's exec.Cancel


class Run:
    """One headless run: the agent's messages in, events out, the exit status at the end."""

    def __init__(self, agent, opts: Options, *, session_id: str, cwd: str, model: str | None, mode: str,
                 journal_path: str | None, resumed: bool, inbox: queue.SimpleQueue, out=None, err=None):
        self.agent = agent
        self.out = out or (lambda data: write_all(1, data))  # bytes to stdout (OutputGone when it went away)
        self.say = err or say  # a line for stderr
        self.opts = opts
        self.q = inbox
        self.sid = session_id
        self.seq = 0
        self.started = time.monotonic()
        self.start_fields = {"schema_version": E.SCHEMA_VERSION, "dashfloat": _version(), "cwd": cwd,
                             "model": model, "permission_mode": mode, "approvals": opts.approvals,
                             "resumed": resumed, "journal": journal_path}
        self.resumable = journal_path is not None
        self.stdout_tty = out is None and _isatty(1)
        self.progress = opts.verbose or (err is None and _isatty(2))
        # what the result event reports
        self.answer_parts: list[str] = []
        self.answer: str | None = None
        self.usage: dict | None = None
        self.meter: dict = {}  # the latest metering view (messages.METER): the result's tokens and cost
        self.calls: dict[str, dict] = {}
        self.denials: list[dict] = []
        self.files: dict[str, dict] = {}
        self.errors: list[str] = []
        self.agent_errors = 0
        self.refused = 0  # approvals asked and not given
        # questions
        self.pending: dict[str, Pending] = {}
        self.decided: dict[str, tuple] = {}  # call id -> (approval id, decision, by, reason)
        self.stdin_done = False
        self.stdin_why = ""
        # live output per call: characters sent, and a partial line for stderr
        self.live: dict[str, int] = {}
        self.partial: dict[str, str] = {}
        # the end
        self.signal: str | None = None
        self.give_up_at: float | None = None
        self.finished: int | None = None
        self.output_gone = False

    # ---- events ---------------------------------------------------------------------------
    def emit(self, type_: str, **fields) -> dict:
        self.seq += 1
        ev = {"type": type_, "seq": self.seq, "time": round(time.time(), 3), "session_id": self.sid, **fields}
        fmt = self.opts.output_format
        if fmt == "stream-json" or (fmt == "json" and type_ == "result"):
            self._write_event(ev)
        if fmt == "text":
            self._text(ev)
        return ev

    def _write_event(self, ev: dict) -> None:
        if self.output_gone:
            return
        from dashfloat.journal import encode_line

        try:
            self.out(encode_line(ev))
        except OutputGone as exc:
            self.output_gone = True
            log.info("stdout went away (%s): stopping the run", exc)
            if self.finished is None and self.signal is None:
                self.signal = "SIGPIPE"
                self._stop("output")

    def _text(self, ev: dict) -> None:
        """--output-format text: the answer on stdout at the end; on stderr, errors, warnings
        and refused approvals always, the rest with -v (or when stderr is a terminal)."""
        t = ev["type"]
        if t == "result":
            answer = ev.get("answer")
            if answer:
                if self.stdout_tty:  # untrusted text reaches a terminal escaped, as on the screen
                    from dashfloat.textsafe import visible

                    answer = visible(answer)
                data = (answer if answer.endswith("\n") else answer + "\n").encode("utf-8", "surrogateescape")
                try:
                    self.out(data)
                except OutputGone:
                    self.output_gone = True
            return
        if t == "error":
            self.say(f"dashfloat: error: {ev['message']}")
        elif t == "notice" and ev["level"] == "warn":
            self.say(f"dashfloat: warning: {ev['text']}")
        elif t == "approval.decided" and ev["decision"] == "reject":
            call = self.calls.get(ev["call_id"], {})
            self.say(f"dashfloat: not approved ({ev['by']}): {call.get('summary') or ev['call_id']}: {ev['reason']}")
        if not self.progress:
            return
        if t == "tool.call":
            self.say(f"[tool] {ev['summary']}")
        elif t == "tool.result":
            self._flush_partial(ev["call_id"])
            self.say(f"[tool] {ev['name']}: {ev['text']}")
        elif t == "tool.note":
            self.say(f"[note] {ev['text']}")
        elif t == "tool.output":
            self._live_lines(ev["call_id"], ev["text"], ev["truncated"])
        elif t == "notice" and ev["level"] == "info":
            self.say(f"[info] {ev['text']}")
        elif t == "approval.requested" and self.opts.approvals != "none":
            self.say(f"[approval] {ev['summary']}: asking ({self.opts.approvals})")
        elif t == "approval.decided" and ev["decision"] == "approve":
            self.say(f"[approval] approved ({ev['by']})")
        elif t == "files.changed":
            self.say("[files] " + ", ".join(f"{f['path']} ({f['change']})" for f in ev["files"]))
        elif t == "usage":
            total = (ev["usage"] or {}).get("total_tokens")
            if isinstance(total, int):
                self.say(f"[usage] {total:,} tokens")

    def _live_lines(self, call_id: str, text: str, truncated: bool) -> None:
        buf = self.partial.get(call_id, "") + text
        *lines, rest = buf.split("\n")
        for line in lines:
            self.say(f"  | {line}")
        self.partial[call_id] = rest
        if truncated:
            self._flush_partial(call_id)
            self.say("  | [live output truncated; the result has the output]")

    def _flush_partial(self, call_id: str) -> None:
        rest = self.partial.pop(call_id, "")
        if rest:
            self.say(f"  | {rest}")

    # ---- the loop ---------------------------------------------------------------------------
    def run(self, start_agent=None) -> int:
        """The loop, until the result is written; returns the exit status. The prompt is in
        the agent's inbox before its thread starts, so it is the first thing it does."""
        self.emit("session.start", **self.start_fields)
        self.agent.send((M.PROMPT, self.opts.prompt))
        if start_agent is not None:
            start_agent()
        if self.opts.approvals == "stdin":
            threading.Thread(target=read_answers, args=(0, self.q.put), name="answers", daemon=True).start()
        while self.finished is None:
            wait = self._next_deadline()
            try:
                msg = self.q.get(timeout=wait)
            except queue.Empty:
                self._on_time()
                continue
            try:
                self.handle(msg)
            except Exception:  # a bug here must still end the run with a result
                log.exception("headless: handling %r failed", msg[:1])
                self.errors.append(f"internal error handling {msg[0]!r} (details in the log)")
                self.agent_errors += 1
                self._stop("crash")
        return self.finished

    def _next_deadline(self) -> float | None:
        due = [p.deadline for p in self.pending.values() if p.deadline is not None]
        if self.give_up_at is not None:
            due.append(self.give_up_at)
        if not due:
            return None
        return max(0.0, min(due) - time.monotonic())

    def _on_time(self) -> None:
        now = time.monotonic()
        if self.give_up_at is not None and now >= self.give_up_at:
            log.warning("the turn did not end within %ss of %s: ending the run", CANCEL_GRACE, self.signal)
            self.finish("abandoned")
            return
        for p in list(self.pending.values()):
            if p.deadline is not None and now >= p.deadline:
                if p.cancel is not None:
                    p.cancel.cancel()
                self.decide(p.approval_id, "reject", "timeout",
                            f"no approval came within {self.opts.approval_timeout:g}s")

    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == M.H_SIGNAL:
            self.on_signal(msg[1])
        elif kind == M.H_LINE:
            self.on_answer_line(msg[1])
        elif kind == M.H_EOF:
            self.on_answers_end(msg[1])
        elif kind == M.H_VERDICT:
            self.on_verdict(msg[1], msg[2], msg[3], msg[4])
        elif kind in EVENTS_OF:
            self.on_agent(msg)
        else:
            log.warning("headless ignored unknown message %r", kind)

    # ---- the agent's messages -------------------------------------------------------------------
    def on_agent(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == M.MODEL:
            self.emit("model", model=msg[1])
        elif kind == M.USER:
            self.emit("prompt", text=msg[1])
        elif kind == M.ASSISTANT_START:
            self.answer_parts = []
            self.emit("message.start")
        elif kind == M.TOKEN:
            self.answer_parts.append(msg[1])
            self.emit("message.delta", text=msg[1])
        elif kind == M.REASONING:
            self.emit("reasoning.delta", text=msg[1])
        elif kind == M.ASSISTANT_END:
            text = "".join(self.answer_parts)
            self.answer_parts = []
            if msg[1] == "done":
                self.answer = text  # the final answer, unless it asks for tools now
            self.emit("message.end", status=msg[1], text=text)
        elif kind == M.USAGE:
            if isinstance(msg[1], dict) and msg[1].get("estimated"):
                return  # the status bar's estimate: a usage event is what the provider counted
            self.usage = msg[1] if isinstance(msg[1], dict) else None
            self.emit("usage", usage=self.usage or {})
        elif kind == M.SYSTEM:
            if msg[1] == "error":
                self.errors.append(msg[2])
                self.agent_errors += 1
                self.emit("error", source="agent", message=msg[2])
            else:
                self.emit("notice", level=msg[1], text=msg[2])
        elif kind == M.TOOL_CALL:
            self.answer = None  # the answer before it asked for tools was not its final one
            info = msg[1]
            self.calls[info["id"]] = {"call_id": info["id"], "name": info.get("name") or "",
                                      "summary": info.get("summary") or "", "status": None, "code": None}
            self.emit("tool.call", call_id=info["id"], name=info.get("name") or "", summary=info.get("summary") or "")
        elif kind == M.TOOL_OUTPUT:
            self.on_output(msg[1], msg[2])
        elif kind == M.TOOL_NOTE:
            self.emit("tool.note", call_id=msg[1], text=msg[2])
        elif kind == M.TOOL_RESULT:
            self.on_result(msg[1])
        elif kind == M.CONFIRM:
            self.on_confirm(msg[1], msg[2])
        elif kind == M.DECIDED:
            self.on_decided(msg[1], msg[2])
        elif kind == M.FILES:
            self.on_files(msg[1], msg[2], msg[3])
        elif kind == M.CRASH:
            text = f"{msg[1]}: {msg[2]} (details in the log)"
            self.errors.append(text)
            self.agent_errors += 1
            self.emit("error", source="crash", message=text)
        elif kind == M.AGENT_DOWN:
            text = f"the agent stopped: {msg[1]} (details in the log)"
            self.errors.append(text)
            self.agent_errors += 1
            self.emit("error", source="agent_down", message=text)
            self.finish("agent_down")
        elif kind == M.METER:
            self.meter = msg[1] if isinstance(msg[1], dict) else {}
        elif kind == M.COMPACTED:
            c = msg[1]
            self.emit("compaction", reason=c["reason"], how=c["how"], summary=c["text"], tokens_before=c["before"],
                      tokens_after=c["after"], window=c["window"], failed=c.get("failed"))
        elif kind == M.TURN_END:
            self.finish(msg[1])
        # PHASE, MODE, STOPPED, LEAVE: nothing (EVENTS_OF says why)

    def on_output(self, call_id: str, text: str) -> None:
        sent = self.live.get(call_id, 0)
        if sent >= LIVE_MAX:
            return
        piece = text[: LIVE_MAX - sent]
        self.live[call_id] = sent + len(piece)
        self.emit("tool.output", call_id=call_id, text=piece, truncated=self.live[call_id] >= LIVE_MAX)

    def on_result(self, row: dict) -> None:
        call_id = row.get("id", "")
        status, code = row.get("status"), row.get("code")
        call = self.calls.setdefault(call_id, {"call_id": call_id, "name": row.get("name") or "", "summary": "",
                                               "status": None, "code": None})
        call["status"], call["code"] = status, code
        if code == "denied":
            self.denials.append({"call_id": call_id, "tool": call["name"], "summary": call["summary"], "by": "rule",
                                 "reason": str(row.get("text") or ""), "approval_required": False})
        self.emit("tool.result", call_id=call_id, name=row.get("name") or "", status=status, text=row.get("text") or "",
                  code=code, excerpt=list(row.get("excerpt") or []))

    def on_files(self, call_id: str, files: list, source: str) -> None:
        for f in files:
            self.files.pop(f["path"], None)  # its last change, in the order of that change
            self.files[f["path"]] = {"path": f["path"], "change": f["change"], "call_id": call_id, "source": source}
        self.emit("files.changed", call_id=call_id, source=source,
                  files=[{"path": f["path"], "change": f["change"]} for f in files])

    # ---- questions ------------------------------------------------------------------------------
    def on_confirm(self, ref: int, info: dict) -> None:
        aid = f"ap-{ref}"
        mode = self.opts.approvals
        timeout = None if mode == "none" else self.opts.approval_timeout
        lines = info.get("full") or info.get("lines") or []
        request = self.emit("approval.requested", approval_id=aid, call_id=info.get("id", ""),
                            tool=info.get("name") or "", summary=info.get("summary") or "",
                            preview=[{"kind": str(k), "text": str(t)} for k, t in lines],
                            always_asks=info.get("always_asks") or None, timeout_s=timeout)
        if info.get("id") and info["id"] not in self.calls:  # a question without a tool.call before it (the agent posts one for every call and /undo question; kept for any that comes alone)
            self.calls[info["id"]] = {"call_id": info["id"], "name": info.get("name") or "",
                                      "summary": info.get("summary") or "", "status": None, "code": None}
        deadline = None if timeout is None else time.monotonic() + timeout
        if mode == "program":
            deadline = time.monotonic() + timeout + PROGRAM_GRACE  # the program's own timeout comes first
        p = self.pending[aid] = Pending(aid, ref, info, deadline)
        if self.signal is not None:
            self.decide(aid, "reject", "signal", f"the run was stopped ({self.signal})")
        elif mode == "none":
            self.decide(aid, "reject", "policy", "approval required, and this run has no approver (--approvals none)")
        elif mode == "stdin" and self.stdin_done:
            self.decide(aid, "reject", "eof", self._eof_reason())
        elif mode == "program":
            from dashfloat.tools.exec import Cancel

            p.cancel = Cancel()
            self._ask_program(p, request)

    def _ask_program(self, p: Pending, request: dict) -> None:
        from dashfloat import approvals

        program, cwd, timeout, put = self.opts.program, self.start_fields["cwd"], self.opts.approval_timeout, self.q.put
        aid = p.approval_id

        def work() -> None:
            verdict = ("reject", "", "the approval program's thread failed")
            try:
                verdict = approvals.run_program(program, request, cwd, timeout, p.cancel)
            except BaseException:  # a verdict must come whatever happens
                log.exception("approval program failed")
            finally:
                put((M.H_VERDICT, aid, verdict[0], verdict[1], verdict[2]))

        threading.Thread(target=work, name="approval-program", daemon=True).start()

    def on_verdict(self, aid: str, decision: str, reason: str, error: str | None) -> None:
        if aid not in self.pending:
            return  # decided meanwhile (a timeout, a signal)
        if error:
            self.approvals_error(f"{aid}: {error}")
            self.decide(aid, "reject", "error", error)
            return
        self.decide(aid, decision, "program", reason or ("approved" if decision == "approve" else "rejected by the "
                                                                                                    "approval program"))

    def on_answer_line(self, line: bytes) -> None:
        from dashfloat import approvals

        answer = approvals.parse_answer(line)
        if answer is None:
            return
        if answer.id is not None and answer.id not in self.pending:
            done = any(d[0] == answer.id for d in self.decided.values())
            self.approvals_error(f"an answer to {answer.id}, which " + (
                "was decided already: ignored" if done else "is not a pending request: ignored"))
            return
        if answer.error:
            self.approvals_error(answer.error)
            if answer.id is not None:
                self.decide(answer.id, "reject", "error", "the approver's answer was not understood")
            return
        reason = answer.reason or ("approved" if answer.decision == "approve" else "rejected by the approver")
        self.decide(answer.id, answer.decision, "stdin", reason)

    def on_answers_end(self, why: str) -> None:
        self.stdin_done = True
        self.stdin_why = why
        if why:
            self.approvals_error(f"reading answers from stdin failed: {why}")
        for aid in list(self.pending):
            self.decide(aid, "reject", "eof", self._eof_reason())

    def _eof_reason(self) -> str:
        return "the approver's input (stdin) ended before it answered"

    def approvals_error(self, text: str) -> None:
        self.errors.append(f"approvals: {text}")
        self.emit("error", source="approvals", message=text)
        if self.opts.output_format != "text":  # text prints every error event already
            self.say(f"dashfloat: approvals: {text}")

    def decide(self, aid: str, decision: str, by: str, reason: str) -> None:
        p = self.pending.pop(aid, None)
        if p is None:
            return
        self.decided[p.call_id] = (aid, decision, by, reason)
        who = {"policy": "headless: no approver (refused)", "stdin": "headless: the approver on stdin",
               "program": f"headless: approval program {self.opts.program}", "timeout": "headless: no answer in time",
               "eof": "headless: the approver's input ended", "signal": f"headless: {self.signal}",
               "error": "headless: an answer that was not understood"}[by]
        if decision == "approve":
            self.agent.send((M.CONFIRM_DECISION, p.ref, "approved", {"who": who, "shown": f"approved ({by})"}))
            return
        self.refused += 1
        call = self.calls.get(p.call_id, {})
        self.denials.append({"call_id": p.call_id, "tool": p.info.get("name") or "",
                             "summary": call.get("summary") or p.info.get("summary") or "", "by": by,
                             "reason": reason, "approval_required": True})
        if by == "signal":
            return  # the cancel answers it (and stops the turn)
        told = REFUSED if by == "policy" else f"not run: {reason}"
        self.agent.send((M.CONFIRM_DECISION, p.ref, "rejected",
                         {"who": who, "shown": f"rejected ({by}): approval required", "reason": told}))

    def on_decided(self, call_id: str, text: str) -> None:
        record = self.decided.get(call_id)
        if record is None:  # answered by the agent itself (a cancel)
            pending = next((p for p in self.pending.values() if p.call_id == call_id), None)
            if pending is not None:
                self.pending.pop(pending.approval_id)
                record = (pending.approval_id, "reject", "signal" if self.signal else "error", text)
                self.decided[call_id] = record
            else:
                return
        aid, decision, by, reason = record
        self.emit("approval.decided", approval_id=aid, call_id=call_id, decision=decision, by=by, reason=reason)

    # ---- the end ----------------------------------------------------------------------------------
    def on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.signal is not None:  # the second: do not wait any longer
            log.info("second signal %s: ending the run now", name)
            self.finish("abandoned")
            return
        log.info("signal %s: cancelling the turn", name)
        self.signal = name
        self._stop(name)

    def _stop(self, why: str) -> None:
        """Cancel the turn (a signal, the output gone): questions rejected, the agent told."""
        for p in list(self.pending.values()):
            if p.cancel is not None:
                p.cancel.cancel()
            self.decide(p.approval_id, "reject", "signal", f"the run was stopped ({self.signal or why})")
        self.agent.send((M.CANCEL, self.signal or why))
        self.give_up_at = time.monotonic() + CANCEL_GRACE

    def exit_status(self, stop_reason: str) -> tuple[str, int]:
        if self.signal is not None:
            outcome = "interrupted"
        elif stop_reason == "config":
            outcome = "config_error"
        elif stop_reason in ("error", "empty", "agent_down", "abandoned"):
            outcome = "error"
        elif stop_reason in ("limit", "budget"):  # a budget's stop came with its own error entry
            outcome = "limit"
        elif self.agent_errors:
            outcome = "error"
        elif self.refused:
            outcome = "approval_required"
        else:
            outcome = "completed"
        return outcome, E.OUTCOMES[outcome]

    def finish(self, stop_reason: str) -> None:
        if self.finished is not None:
            return
        for call_id in list(self.partial):
            self._flush_partial(call_id)
        outcome, status = self.exit_status(stop_reason)
        if stop_reason in ("error", "empty") and not self.errors:
            self.errors.append("the model returned nothing" if stop_reason == "empty" else "the turn failed")
        if stop_reason == "abandoned":
            self.errors.append(f"the turn did not end within {CANCEL_GRACE:g}s of {self.signal or 'the stop'}; "
                               "the run ended without waiting for it")
        self.emit("result", schema_version=E.SCHEMA_VERSION, outcome=outcome, exit_status=status,
                  stop_reason=stop_reason, signal=self.signal if self.signal != "SIGPIPE" else None,
                  answer=self.answer, usage=self.usage, cost=self.meter.get("cost"),
                  tokens=int(self.meter.get("tokens") or 0), calls=list(self.calls.values()),
                  permission_denials=self.denials, files_changed=list(self.files.values()), errors=self.errors,
                  duration_s=round(time.monotonic() - self.started, 3), resumable=self.resumable)
        if self.opts.output_format == "text" and self.signal and self.signal != "SIGPIPE":
            self.say(f"dashfloat: interrupted by {self.signal}")
        self.finished = status


def read_answers(fd: int, put) -> None:
    """The approver's answers, a line at a time, onto the main loop's queue; then EOF."""
    from dashfloat.approvals import LINE_MAX

    try:
        f = open(fd, "rb", closefd=False)  # noqa: SIM115 - lives as long as the thread
        while True:
            line = f.readline(LINE_MAX + 1)
            if not line:
                break
            if len(line) > LINE_MAX and not line.endswith(b"\n"):
                while True:  # skip the rest of the too-long line
                    more = f.readline(LINE_MAX)
                    if not more or more.endswith(b"\n"):
                        break
            put((M.H_LINE, line))
        put((M.H_EOF, ""))
    except (OSError, ValueError) as exc:
        put((M.H_EOF, str(getattr(exc, "strerror", None) or exc)))


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _version() -> str:
    from dashfloat import __version__

    return __version__


def install_signals(put):
    """SIGINT, SIGTERM, SIGHUP: a message for the main loop; returns `restore`.

    Not put by the Python-level handler: Python runs it on the main thread only, between
    bytecodes, and the kernel gives a signal sent to the process to any one of its threads.
    When a worker thread takes it, the main thread, asleep in the queue's get(), is not
    woken, and the handler waits for the next message: a SIGTERM during a quiet command was
    handled 30 s late, when the command's time limit ended it (seen in CI). CPython's C-level
    handler, on whichever thread it runs, writes the signal's number to the wake-up fd
    (signal.set_wakeup_fd): a thread of ours reads that pipe and puts the message, one per
    byte. The Python-level handler only replaces the default action (dying).
    SIGPIPE stays ignored (Python's default): a gone reader is EPIPE."""
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    r, w = os.pipe()
    os.set_blocking(w, False)  # a full pipe drops a byte, never stalls a handler
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    old = {sig: signal.signal(sig, _signal_noted) for sig in signals}

    def reader() -> None:
        while True:
            try:
                data = os.read(r, 512)
            except OSError:
                break
            if not data:  # restore() closed the write end
                break
            for signum in data:
                if signum in signals:
                    put((M.H_SIGNAL, signum))
        os.close(r)

    threading.Thread(target=reader, name="signals", daemon=True).start()

    def restore() -> None:
        for sig, handler in old.items():
            try:
                signal.signal(sig, handler)
            except (OSError, ValueError, TypeError):
                pass
        signal.set_wakeup_fd(old_fd)
        os.close(w)

    return restore


def _signal_noted(signum, frame) -> None:
    """The Python-level handler of install_signals: the wake-up byte has told the loop."""


def run(config, opts: Options, *, journal=None, resumed=None) -> int:
    """Run one prompt headless; the exit status (see dashfloat.events.OUTCOMES)."""
    from dashfloat import masking
    from dashfloat.agent import Agent, options_from
    from dashfloat.llm.endpoint import Endpoint

    inbox: queue.SimpleQueue = queue.SimpleQueue()
    secrets = masking.registered()

    def post(msg: tuple) -> None:  # the one door from the agent's threads: masked, as the UI's
        inbox.put((msg[0], *masking.mask_deep(msg[1:], secrets)))

    endpoint = Endpoint(base_url=config.base_url, api_key=config.api_key, api_key_env=config.api_key_env,
                        headers=dict(config.headers), connect_timeout=config.connect_timeout,
                        read_timeout=config.read_timeout, is_default=config.base_url_is_default)
    # the policy is built on the agent's thread when the first call needs it: the first request
    # does not wait for the rules engine (the configuration has checked the rules already)
    agent = Agent(endpoint, config.model, post, journal=journal, resumed=resumed, **options_from(config))
    agent.clipboard = False  # no terminal here: /copy writes its file only
    if journal is not None:
        sid = str(journal.header.get("id") or journal.path.stem)
        journal_path = str(journal.path)
    else:
        from dashfloat.journal import new_id

        sid, journal_path = new_id(), None
    r = Run(agent, opts, session_id=sid, cwd=os.path.realpath(str(config.root)), model=config.model,
            mode=config.permission_mode, journal_path=journal_path, resumed=resumed is not None, inbox=inbox)
    from dashfloat import storage

    storage.attach(lambda text: inbox.put(M.system("warn", text)))  # what could not be written: once each
    restore_signals = install_signals(inbox.put)
    status = E.OUTCOMES["error"]
    try:
        status = r.run(agent.start)
    finally:
        why = "signal" if r.signal not in (None, "SIGPIPE") else "quit"
        agent.send((M.QUIT, why) if why != "quit" else (M.QUIT,))
        agent.join(JOIN_TIMEOUT)  # it closes the journal (fsync) on its way out
        if agent.alive:
            log.warning("the agent thread did not stop within %ss; the journal may lack its end", JOIN_TIMEOUT)
        exec_module = sys.modules.get("dashfloat.tools.exec")
        if exec_module is not None:  # no command outlives the run, whatever the agent is doing
            exec_module.kill_all()
        restore_signals()
    if r.output_gone:
        from dashfloat.cli import EXIT_PIPE

        return EXIT_PIPE
    return status

