"""The headless event schema: one table that the JSON Schema file, the man page and the
headless front end (dashfloat/headless.py) all read, so none of them can drift.

A run of `dashfloat -p` is a stream of events (JSON objects, one a line with
`--output-format stream-json`). Every event has `type`, `seq` (1, 2, ... in the run),
`time` (Unix seconds) and `session_id`; the first (`session.start`) and the last (`result`,
exactly one per run) carry `schema_version`. Versioning: MAJOR.MINOR. A new event type or a
new field is a minor version (a reader ignores what it does not know); removing or renaming
a field, or changing its meaning or type, is a major one.

`python -m dashfloat.events` prints the JSON Schema (draft 2020-12); `make man` writes it to
schema/dashfloat-events.schema.json and `make lint` checks that the committed file is current.
"""

from __future__ import annotations

import json
import sys

SCHEMA_VERSION = "1.1"  # 1.1: compaction emitted, notice level note, result tokens and cost
SCHEMA_FILE = "schema/dashfloat-events.schema.json"
LIVE_MAX_TEXT = "65,536 characters"  # headless.LIVE_MAX, as the descriptions say it (a test checks)

# ---- JSON Schema fragments ----------------------------------------------------------------
STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
ANY_OBJ = {"type": "object"}


def null(schema: dict) -> dict:
    """`schema` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def enum(*values) -> dict:
    return {"enum": list(values)}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def obj(props: dict, optional: tuple = ()) -> dict:
    """An object with exactly these properties, all required but `optional`."""
    return {"type": "object", "properties": {k: ({**v, "description": d} if d else v) for k, (v, d) in props.items()},
            "required": [k for k in props if k not in optional], "additionalProperties": False}


VERSION = {"type": "string", "pattern": r"^1\.[0-9]+$"}
CALL_STATUS = enum("ok", "error", "rejected", "cancelled")
DECIDERS = ("policy", "stdin", "program", "timeout", "eof", "signal", "error")
ASSISTANT_STATUSES = ("done", "cancelled", "error", "empty")
STOP_REASONS = ("done", "empty", "cancelled", "error", "limit", "budget", "config", "agent_down", "abandoned")
OUTCOMES = {  # outcome -> exit status
    "completed": 0,
    "error": 1,
    "config_error": 2,
    "limit": 3,
    "approval_required": 4,
    "interrupted": 130,
}

FILE = (obj({"path": (STR, "relative to the working directory when beneath it, else absolute"),
             "change": (STR, "created or modified (a write or edit); new, modified, deleted, removed, "
                             "now clean, renamed or copied (git status); restored or removed (/undo)")}),
        "")
USAGE = ({"type": "object", "properties": {k: null(INT) for k in ("prompt_tokens", "completion_tokens",
                                                                    "total_tokens")}},
         "the provider's usage object as it sent it (more keys may appear)")

# Common to every event: name -> (schema, description)
COMMON = {
    "type": (STR, "the event type"),
    "seq": ({"type": "integer", "minimum": 1}, "1, 2, 3 ... in the run, without gaps"),
    "time": (NUM, "Unix seconds, to the millisecond"),
    "session_id": (STR, "the session's id (dashfloat --resume ID resumes it)"),
}

# event type -> (description, {field: (schema, description)}, optional fields)
EVENTS: dict[str, tuple[str, dict, tuple]] = {
    "session.start": ("The first event of every run.", {
        "schema_version": (VERSION, f"this schema's version, {SCHEMA_VERSION}"),
        "dashfloat": (STR, "DashFloat's version"),
        "cwd": (STR, "the working directory (the root tools are confined to)"),
        "model": (null(STR), "the model, or null until the endpoint's only model is known"),
        "permission_mode": (STR, "ask, accept-edits, read-only or unrestricted"),
        "approvals": (enum("none", "stdin", "program"), "who answers a question: nobody (refused), "
                                                       "stdin, or a program"),
        "resumed": (BOOL, "the run continues an earlier session"),
        "journal": (null(STR), "the session journal's path; null with --no-journal (not resumable)"),
    }, ()),
    "prompt": ("The prompt the agent accepted.", {"text": (STR, "the prompt")}, ()),
    "model": ("The model requests go to, when it is chosen during the run.", {"model": (STR, "its name")}, ()),
    "message.start": ("The model starts an answer (one per request).", {}, ()),
    "message.delta": ("Answer text as it streams.", {"text": (STR, "the next piece")}, ()),
    "reasoning.delta": ("Reasoning the model streams apart from its answer.", {"text": (STR, "the next piece")}, ()),
    "message.end": ("An answer ended.", {
        "status": (enum(*ASSISTANT_STATUSES), "done, cancelled, error, or empty (the model returned nothing)"),
        "text": (STR, "the whole answer (the deltas joined)"),
    }, ()),
    "tool.call": ("The model asked for a tool call.", {
        "call_id": (STR, "the call's id"), "name": (STR, "the tool"),
        "summary": (STR, "one line: the tool and its main argument, escaped"),
    }, ()),
    "tool.output": ("Live output of a running command (at most @live_max@ per call; then one event with "
                    "truncated true and no more).", {
        "call_id": (STR, "the call"), "text": (STR, "the next piece"),
        "truncated": (BOOL, "the call's live output stops here (its result still has the output)"),
    }, ()),
    "tool.note": ("A note on a call: which rule allowed it, what a post hook said, which files a "
                  "command changed.", {"call_id": (STR, "the call"), "text": (STR, "the note")}, ()),
    "tool.result": ("A call's outcome.", {
        "call_id": (STR, "the call"), "name": (STR, "the tool"), "status": (CALL_STATUS, "ok, error, rejected or cancelled"),
        "text": (STR, "one line, e.g. ok: exit 0, or the error"),
        "code": (null(STR), "the error's code (the man page's TOOLS lists them), null when ok"),
        "excerpt": (arr(STR), "a bounded, escaped excerpt of the output or content"),
    }, ()),
    "files.changed": ("Files a call changed.", {
        "call_id": (STR, "the call"),
        "source": (enum("tool", "git", "undo"), "tool: write_file or edit_file; git: a command, from git "
                                                "status; undo: /undo put them back (call_id undo-N)"),
        "files": (arr(FILE[0]), "each file: path and change"),
    }, ()),
    "approval.requested": ("A call needs approval. Answer it (--approvals stdin) with "
                           "{\"id\": approval_id, \"decision\": \"approve\" or \"reject\"}.", {
        "approval_id": (STR, "the id to answer with"), "call_id": (STR, "the call"),
        "tool": (STR, "the tool (undo for a question of /undo)"), "summary": (STR, "one line, escaped"),
        "preview": (arr(obj({"kind": (STR, ""), "text": (STR, "")})),
                    "the exact preview a person would see, escaped: kind (header, hunk, add, del, ctx, "
                    "marker...) and text"),
        "always_asks": (null(STR), "why this call asks in every mode (a file that runs code later), or null"),
        "timeout_s": (null(NUM), "seconds until it is rejected unanswered; null when it is refused at once"),
    }, ()),
    "approval.decided": ("How a question was answered.", {
        "approval_id": (STR, "the question"), "call_id": (STR, "the call"),
        "decision": (enum("approve", "reject"), "approve or reject"),
        "by": (enum(*DECIDERS), "policy (no approver: refused), stdin, program, timeout, eof (the "
                                "approver's input ended), signal, or error (an answer that was not "
                                "understood, a program that failed)"),
        "reason": (STR, "why, in words (told to the model when it is not run)"),
    }, ()),
    "usage": ("Token usage, as the provider reported it for the turn's last request.",
              {"usage": USAGE}, ()),
    "compaction": ("The conversation was compacted to fit the context window (man dashfloat, CONTEXT).", {
        "reason": (enum("auto", "overflow", "/compact"), "auto (the next request was over the threshold), "
                                                         "overflow (the server refused a request as too long), "
                                                         "or /compact"),
        "how": (enum("stubs", "summary", "dropped", "cut"), "the last step that ran: old tool outputs became "
                                                            "stubs, a summary, messages dropped with a marker, "
                                                            "or long messages cut"),
        "summary": (STR, "what was done, in words (the entry the screen shows)"),
        "tokens_before": (INT, "the next request's estimated tokens before"),
        "tokens_after": (INT, "and after"),
        "window": (INT, "the context window, in tokens"),
        "failed": (null(STR), "why it counts as a failed compaction (a summary that could not be used, a "
                              "request that still does not fit), or null"),
    }, ()),
    "notice": ("Something the screen would show as an info or warning line.", {
        "level": (enum("info", "warn", "note"), "info, warn, or note (dim on the screen: which instruction "
                                                "files were read)"), "text": (STR, "the line"),
    }, ()),
    "error": ("An error: the provider's, DashFloat's, or the approver's.", {
        "source": (enum("agent", "crash", "agent_down", "approvals", "output"),
                   "agent (a provider or runtime error of the turn), crash, agent_down, approvals "
                   "(an answer not understood, a failing approval program), output"),
        "message": (STR, "what went wrong, in words"),
    }, ()),
    "result": ("The last event of every run, exactly one.", {
        "schema_version": (VERSION, "as in session.start"),
        "outcome": (enum(*OUTCOMES), "completed, error, config_error, limit, approval_required or interrupted"),
        "exit_status": (enum(*sorted(set(OUTCOMES.values()))), "the process's exit status (EXIT STATUS)"),
        "stop_reason": (enum(*STOP_REASONS), "why the turn ended: done, empty, cancelled, error, limit "
                                             "(max_episodes), budget, config (no model), agent_down, or "
                                             "abandoned (it did not end within the grace after a signal)"),
        "signal": (null(STR), "SIGINT, SIGTERM or SIGHUP when one stopped the run"),
        "answer": (null(STR), "the final answer: the last one the model completed without asking for "
                              "a tool; null if there is none (an error, the loop limit, a signal)"),
        "usage": (null(USAGE[0]), "as the last usage event"),
        "cost": (null(NUM), "what the run's requests cost by the prices table (USAGE AND BUDGETS); null when "
                            "the model has no price"),
        "tokens": (INT, "input and output tokens of every request of the run (estimated where the "
                        "provider reported none)"),
        "calls": (arr(obj({"call_id": (STR, ""), "name": (STR, ""), "summary": (STR, ""),
                           "status": (null(CALL_STATUS), ""), "code": (null(STR), "")})),
                  "every call the model made, in order: call_id, name, summary, status (as in tool.result; "
                  "null if it got none), code"),
        "permission_denials": (arr(obj({
            "call_id": (STR, ""), "tool": (STR, ""), "summary": (STR, ""),
            "by": (STR, "rule (a deny rule, the mode or a hook), or who refused the approval"),
            "reason": (STR, ""), "approval_required": (BOOL, "it needed approval, which was not given")})),
            "calls that were not allowed to run: call_id, tool, summary, by (rule: a deny rule, the mode or "
            "a hook; else who refused the approval, as in approval.decided), reason, approval_required"),
        "files_changed": (arr({**FILE[0], "properties": {**FILE[0]["properties"], "call_id": STR,
                                                         "source": enum("tool", "git", "undo")},
                               "required": ["path", "change", "call_id", "source"]}),
                          "every file the run changed, once (its last change), in order: path, change, "
                          "call_id, source (as in files.changed)"),
        "errors": (arr(STR), "the run's error messages"),
        "duration_s": (NUM, "from the start of the run"),
        "resumable": (BOOL, "the session is journalled (dashfloat --resume session_id)"),
    }, ()),
}


def event_schema(type_: str) -> dict:
    _desc, fields, optional = EVENTS[type_]
    props = {**COMMON, **fields}
    out = {"description": _desc.replace("@live_max@", f"{LIVE_MAX_TEXT}"), **obj(props, optional)}
    out["properties"]["type"] = {"const": type_}
    return out


def schema() -> dict:
    """The JSON Schema of one event (any type)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"DashFloat headless events, schema version {SCHEMA_VERSION}",
        "description": ("One event of `dashfloat -p --output-format stream-json` (one a line), or the "
                        "single object of --output-format json (a result event). See man dashfloat, "
                        "HEADLESS MODE."),
        "x-schema-version": SCHEMA_VERSION,
        "oneOf": [{"$ref": f"#/$defs/{t}"} for t in EVENTS],
        "$defs": {t: event_schema(t) for t in EVENTS},
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=1, ensure_ascii=False) + "\n"


def _roff(text: str) -> str:
    return text.replace("\\", "\\e").replace("-", "\\-").replace('"', "\\(dq")


def man_events(values: dict[str, str]) -> str:
    """The event list for the man page: each type, what it means, its fields."""
    lines = []
    for type_, (desc, fields, _optional) in EVENTS.items():
        for name, number in values.items():
            desc = desc.replace(f"@{name}@", number)
        lines.append(".TP")
        lines.append(f".B {_roff(type_)}")
        text = _roff(desc)
        if fields:
            text += " Fields: " + "; ".join(
                f"\\fB{_roff(name)}\\fP" + (f": {_roff(d)}" if d else "") for name, (_s, d) in fields.items())
            text += "."
        lines.append(text)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        path = argv[1] if len(argv) > 1 else SCHEMA_FILE
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except OSError as exc:
            print(f"{path}: {exc.strerror}", file=sys.stderr)
            return 1
        if current != schema_text():
            print(f"{path} is out of date with dashfloat/events.py: run `make man`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
