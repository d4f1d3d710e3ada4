"""Tool result objects: the JSON the model reads in a `role: "tool"` message.

Shapes follow ADR 0007: `{"ok": true, ...}`, `{"ok": false, "error": text, "code": code}`,
`{"ok": false, "rejected": true}`, `{"ok": false, "cancelled": true}`. Every error carries a
short stable machine-readable `code` beside the human `error` text. A failure is always a
result, never an exception that escapes.
"""

from __future__ import annotations

from dashfloat import wire

# code -> what it means (documentation; the man page and tests read this table)
CODES: dict[str, str] = {
    "unknown_tool": "the tool name is not in the catalogue",
    "denied": "a deny rule, the read-only mode or a hook refused the call",
    "bad_arguments": "arguments missing, extra, mistyped, out of range, or not valid JSON",
    "path_escape": "the path resolves outside the working directory",
    "name_too_long": "a path component is above 255 bytes or the path above 4095 (NAME_MAX, PATH_MAX)",
    "path_changed": "a directory on the path kept changing (swapped with a link) while it was opened; nothing was used",
    "not_found": "no such file or directory",
    "not_a_file": "the path is not a regular file",
    "not_a_directory": "the path is not a directory",
    "special_file": "a FIFO, socket or device, refused without opening it",
    "binary": "the file is binary; its content is not returned",
    "too_large": "the file is above the size a tool accepts",
    "permission_denied": "the operating system refused access",
    "io_error": "another operating-system error",
    "search_not_found": "edit_file: the search block does not occur in the file",
    "search_ambiguous": "edit_file: the search block occurs more than once",
    "empty_search": "edit_file: the search block is empty",
    "no_change": "edit_file: the search and replace blocks are the same",
    "changed_since_preview": "the file changed between the preview and the approval; nothing written",
    "timeout": "the command ran past its timeout and was killed with every process it started",
    "process_limit": "the command had more processes and threads than exec_max_processes; all were killed",
    "exec_failed": "the command could not be started",
    "exit_status": "the command exited with a non-zero status",
    "episode_limit": "the turn reached its episode limit before this call ran",
    "interrupted": "the turn ended (stream failure, error) before this call ran",
    "budget": "a budget (max_turns, max_tokens, max_cost) was reached before this call ran",
    "search_failed": "search_workspace: the search program (rg, git grep) failed",
    "internal": "a bug in DashFloat; details in the log",
}


def ok(**fields) -> dict:
    return {"ok": True, **fields}


def error(code: str, message: str, **fields) -> dict:
    assert code in CODES, code
    return {"ok": False, "error": message, "code": code, **fields}


def rejected(**fields) -> dict:
    """Not run: the user said no (or, with `error`, why no one could say yes)."""
    return {"ok": False, "rejected": True, **fields}


def cancelled(**fields) -> dict:
    return {"ok": False, "cancelled": True, **fields}


def status(result: dict) -> str:
    """One word for the UI's outcome row: ok, rejected, cancelled or error."""
    if result.get("ok"):
        return "ok"
    if result.get("rejected"):
        return "rejected"
    if result.get("cancelled"):
        return "cancelled"
    return "error"


def encode(result: dict) -> str:
    """The tool message content: compact JSON, non-ASCII kept as is, always encodable
    (`wire.dumps`)."""
    return wire.dumps(result, separators=(",", ":"))
