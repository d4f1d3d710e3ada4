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
  agent -> UI       (the UI's outbox, drained on the main thread)
"""

from __future__ import annotations

# ---- UI -> agent -------------------------------------------------------------------
PROMPT = "prompt"  # ("prompt", text)
CANCEL = "cancel"  # ("cancel",)               Esc / Ctrl-C while a turn runs
QUIT = "quit"  # ("quit",) or ("quit", why)  the app is leaving: stop everything (why: "hangup", "signal")
CONFIRM_DECISION = "confirm_decision"  # ("confirm_decision", ref, "approved"|"always"|"rejected")

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
T_NOTE = "t_note"  # ("t_note", episode, call_id, text)  a note for a call's row (post-execute, git status)
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
METER = "meter"  # ("meter", view_dict)      totals since start and the budgets (metering.Meter.view):
#                      {"tokens", "estimated", "requests", "cost", "max_tokens", "max_cost", "max_turns"}
STOPPED = "stopped"  # ("stopped", reason, detail)  the turn ended for a reason a front end acts on;
#                      reason "budget": detail {"budget", "limit", "used", "why", "text"} (metering.Stop);
#                      headless mode exits with its own status for it. Posted before the idle phase.
LEAVE = "leave"  # ("leave",)                the user asked to quit (/quit): the front end leaves
SYSTEM = "system"  # ("system", level, text)   level: "info"|"warn"|"error", or "note" (dim: e.g. which
#                    instruction files were loaded)
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

PHASES = ("idle", "waiting", "streaming", "running", "confirming")
ACTIVE_PHASES = frozenset(("waiting", "streaming", "running", "confirming"))
ASSISTANT_STATUSES = ("done", "cancelled", "error", "empty")
SYSTEM_LEVELS = ("info", "warn", "error", "note")

UI_TO_AGENT = frozenset((PROMPT, CANCEL, QUIT, CONFIRM_DECISION))
STREAM_TO_AGENT = frozenset((S_DONE, S_FAILED, MODELS, MODEL_CHECK, T_OUTPUT, T_DONE, T_GATE, T_NOTE, U_DONE,
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
        SYSTEM,
        TOOL_CALL,
        TOOL_OUTPUT,
        TOOL_NOTE,
        TOOL_RESULT,
        CONFIRM,
        DECIDED,
        CRASH,
        AGENT_DOWN,
    )
)
KINDS = UI_TO_AGENT | STREAM_TO_AGENT | AGENT_TO_UI


def system(level: str, text: str) -> tuple:
    """A system entry for the transcript."""
    assert level in SYSTEM_LEVELS, level
    return (SYSTEM, level, text)


def phase(name: str) -> tuple:
    assert name in PHASES, name
    return (PHASE, name)
