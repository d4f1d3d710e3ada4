"""The whole message vocabulary: every tuple that crosses a thread boundary.

Threads never share objects that change; they hand each other plain tuples whose first
element is the kind. Every tuple a front end sees (agent -> UI) is JSON-serialisable, so the
same stream can later be written to a session journal or a headless JSON event stream;
T_GATE, inside the agent, carries the prepared plan of a call (the exact bytes to write).

The agent journals what it posts (dashfloat/journal.py), so a resumed session draws its
transcript again through the same messages.

Directions:
  UI -> agent       (the agent's inbox)
  streamer -> agent (the agent's inbox, tagged with the episode number)
  agent -> UI       (the UI's outbox, drained on the main thread; the headless front end's
                    queue, where each kind becomes events: dashfloat/headless.py EVENTS)
  headless threads -> the headless main loop (signals, the approver's answers)
"""

from __future__ import annotations

# ---- UI -> agent -------------------------------------------------------------------
PROMPT = "prompt"  # ("prompt", text)
CANCEL = "cancel"  # ("cancel",)               Esc / Ctrl-C while a turn runs
QUIT = "quit"  # ("quit",) or ("quit", why)  the app is leaving: stop everything (why: "hangup", "signal")
PREPARE = "prepare"  # ("prepare",)  a person has started typing: load what a turn needs now
CONFIRM_DECISION = "confirm_decision"  # ("confirm_decision", ref, "approved"|"always"|"rejected"[, by])
#   by (a front end without a person: dashfloat/headless.py): {"who": who decided, for the audit,
#   "shown": the row's text, "reason": what the model is told when the call is not run}

# ---- streamer -> agent (episode = int, so stale events of a cancelled stream are dropped).
# Streamed text itself goes from the streamer straight to the front end as TOKEN and
# REASONING (see Agent._start_episode), ordered against a cancel by the episode lock.
S_DONE = "s_done"  # ("s_done", episode, result_dict)  see llm.client.StreamResult.as_dict
S_FAILED = "s_failed"  # ("s_failed", episode, error_dict) see llm.errors.ChatError.as_dict
MODELS = "models"  # ("models", ok, payload)   answer to the model discovery request
MODEL_CHECK = "model_check"  # ("model_check", ref, name, ok, payload)  the model list, for /model NAME

# ---- tool workers -> agent (tagged with the episode number too)
T_OUTPUT = "t_output"  # ("t_output", episode, call_id, text)  live output of a running command
T_DONE = "t_done"  # ("t_done", episode, call_id, result_dict)
T_GATE = "t_gate"  # ("t_gate", episode, call_id, (kind, payload), notes)  a call's pre-execute verdict
T_NOTE = "t_note"  # ("t_note", episode, call_id, text)  a note for a call's row (post-execute)
T_GIT = "t_git"  # ("t_git", episode, call_id, text|None, files)  after a command: git status's report
#                  (None: nothing to say) and the files it changed [{"path", "change"}]; always sent
U_DONE = "u_done"  # ("u_done", ref, payload)   an /undo step finished on its worker (tools/undo.py)
C_DONE = "c_done"  # ("c_done", ref, ok, payload)  the summary request of a compaction (dashfloat/context.py)
#                    ended: ok and StreamResult.as_dict, or not ok and ChatError.as_dict
WINDOW = "window"  # ("window", model, tokens or None, source)  the context window the endpoint states
CMD_DONE = "cmd_done"  # ("cmd_done", command, level, text)  a slash command's worker finished: its entry

# ---- agent -> UI -------------------------------------------------------------------
PHASE = "phase"  # ("phase", "idle"|"waiting"|"streaming"|"running"|"confirming")
MODEL = "model"  # ("model", name)           the model requests go to
MODE = "mode"  # ("mode", name)            the permission mode (ask, accept-edits, read-only, unrestricted)
USER = "user"  # ("user", text)            a prompt the agent accepted
ASSISTANT_START = "assistant_start"  # ("assistant_start",)
TOKEN = "token"  # ("token", text)           answer content delta
REASONING = "reasoning"  # ("reasoning", text)       reasoning delta, shown apart
ASSISTANT_END = "assistant_end"  # ("assistant_end", status)  "done"|"cancelled"|"error"|"empty"
USAGE = "usage"  # ("usage", usage_dict)     prompt/completion/total tokens of the turn (its final request)
#                  as the provider counted them, or {"total_tokens": N, "estimated": True}: DashFloat's
#                  estimate when the provider sent none (the status bar's "ctx ~N"; not a headless usage event)
METER = "meter"  # ("meter", view_dict)      totals since start and the budgets (metering.Meter.view):
#                      {"tokens", "estimated", "requests", "cost", "max_tokens", "max_cost", "max_turns"}
STOPPED = "stopped"  # ("stopped", reason, detail)  the turn ended for a reason a front end acts on;
#                      reason "budget": detail {"budget", "limit", "used", "why", "text"} (metering.Stop);
#                      headless mode exits with its own status for it. Posted before the idle phase.
LEAVE = "leave"  # ("leave",)                the user asked to quit (/quit): the front end leaves
CLIPBOARD = "clipboard"  # ("clipboard", text)  /copy: put text on the terminal's clipboard (OSC 52,
#                  dashfloat/copyout.py); only a front end with a terminal acts on it; never journaled
SYSTEM = "system"  # ("system", level, text)   level: "info"|"warn"|"error", or "note" (dim: e.g. which
#                    instruction files were loaded)
COMPACTED = "compacted"  # ("compacted", {"reason", "how", "before", "after", "window", "text", "failed"})
#                  the conversation was compacted (dashfloat/context.py): reason auto|overflow|/compact,
#                  how stubs|summary|dropped|cut, tokens of the next request before and after; the
#                  SYSTEM entry with `text` comes with it (the screen shows that one)
TOOL_CALL = "tool_call"  # ("tool_call", {"id", "name", "summary"})   a row per announced call
TOOL_OUTPUT = "tool_output"  # ("tool_output", call_id, text)   live output while a command runs
TOOL_NOTE = "tool_note"  # ("tool_note", call_id, text)   e.g. which rule allowed it without asking
TOOL_RESULT = "tool_result"  # ("tool_result", {"id", "name", "status", "text", "excerpt", ["details"]})
CONFIRM = "confirm"  # ("confirm", ref, {"id", "name", "summary", "lines": [(kind, text)], ["full": [(kind, text)]],
#                      ["always": rule text], ["always_asks": reason]})  lines: the preview's window (50 lines);
#                      full: the whole preview, bounded, when the window leaves some out; always: the session
#                      rule the a key would add; always_asks: why this call always asks (the built-in
#                      protection: a file that runs code later), then the a key adds no rule
DECIDED = "decided"  # ("decided", call_id, text)  how a question was answered ("approved by you", ...)
CRASH = "crash"  # ("crash", where, summary) an exception in a thread, already logged
AGENT_DOWN = "agent_down"  # ("agent_down", reason)    the agent thread has stopped
FILES = "files"  # ("files", call_id, [{"path", "change"}], source)  files a call changed: source "tool"
#                  (write_file/edit_file; change created|modified), "git" (a command, from git status)
#                  or "undo" (/undo put them back: restored|removed; call_id "undo-N")
TURN_END = "turn_end"  # ("turn_end", reason)  the agent has finished with a prompt; reason (TURN_REASONS):
#                  done (answered), empty (the model returned nothing), cancelled, error (provider or
#                  internal), limit (max_episodes), budget (a budget stopped it), config (no model to use).
#                  Last of its turn: after the usage, and after git's reports on the turn's commands.

# ---- headless front end: its own threads -> its main loop (dashfloat/headless.py)
H_SIGNAL = "h_signal"  # ("h_signal", signum)        SIGINT, SIGTERM or SIGHUP arrived
H_LINE = "h_line"  # ("h_line", bytes)              one line of the approver's answers (--approvals stdin)
H_EOF = "h_eof"  # ("h_eof", why)                  the approver's input ended ("" at EOF, else the error)
H_VERDICT = "h_verdict"  # ("h_verdict", approval_id, decision, reason)  an approval program's answer

PHASES = ("idle", "waiting", "streaming", "running", "confirming")
ACTIVE_PHASES = frozenset(("waiting", "streaming", "running", "confirming"))
ASSISTANT_STATUSES = ("done", "cancelled", "error", "empty")
TURN_REASONS = ("done", "empty", "cancelled", "error", "limit", "budget", "config")
SYSTEM_LEVELS = ("info", "warn", "error", "note")

UI_TO_AGENT = frozenset((PROMPT, CANCEL, QUIT, CONFIRM_DECISION))
STREAM_TO_AGENT = frozenset((S_DONE, S_FAILED, MODELS, MODEL_CHECK, T_OUTPUT, T_DONE, T_GATE, T_NOTE, T_GIT, U_DONE,
                             C_DONE, WINDOW, CMD_DONE))
AGENT_TO_UI = frozenset(
    (
        PHASE,
        MODEL,
        MODE,
        USER,
        ASSISTANT_START,
        TOKEN,
        REASONING,
        ASSISTANT_END,
        USAGE,
        METER,
        STOPPED,
        LEAVE,
        CLIPBOARD,
        SYSTEM,
        COMPACTED,
        TOOL_CALL,
        TOOL_OUTPUT,
        TOOL_NOTE,
        TOOL_RESULT,
        CONFIRM,
        DECIDED,
        CRASH,
        AGENT_DOWN,
        FILES,
        TURN_END,
    )
)
HEADLESS = frozenset((H_SIGNAL, H_LINE, H_EOF, H_VERDICT))
KINDS = UI_TO_AGENT | STREAM_TO_AGENT | AGENT_TO_UI | HEADLESS


def system(level: str, text: str) -> tuple:
    """A system entry for the transcript."""
    assert level in SYSTEM_LEVELS, level
    return (SYSTEM, level, text)


def turn_end(reason: str) -> tuple:
    assert reason in TURN_REASONS, reason
    return (TURN_END, reason)


def phase(name: str) -> tuple:
    assert name in PHASES, name
    return (PHASE, name)
