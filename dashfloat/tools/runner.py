"""One entry point for the agent: validate, prepare (preview), execute, and describe a call.

The agent calls these on its own thread and on one worker thread per call; nothing here
touches the UI. A mutation is prepared first: its preview is built from the very plan that
execute() applies (the exact bytes for a write or edit, the exact command and cwd), so what
the user approved is what lands. Every failure is a result dict, never an exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dashfloat.tools import edit, files, pathpolicy, preview, results
from dashfloat.tools.catalogue import (
    MUTATING,
    READ_ONLY,
    TOOLS,
    human_size,
    summary,
    validate_call,
)
from dashfloat.tools.exec import Cancel, run_command
from dashfloat.tools.exec import kill_all as _kill_commands

__all__ = [
    "TOOLS", "READ_ONLY", "MUTATING", "Cancel", "kill_all", "summary", "validate_call",
    "needs_confirmation", "prepare", "execute", "result_row", "Prepared",
]

EXCERPT_LINES = 30  # the UI shows at most this many lines of a result


def kill_all() -> None:
    """Kill every running command and search program with everything they started (quit,
    SIGHUP, SIGTERM)."""
    _kill_commands()
    import sys

    search = sys.modules.get("dashfloat.tools.search")
    if search is not None:
        search.kill_all()


def needs_confirmation(name: str) -> bool:
    return name in MUTATING


@dataclass(frozen=True)
class Prepared:
    """A mutation ready to be shown and, once approved, applied exactly as shown."""

    name: str
    summary: str
    preview: list  # [(kind, text)]: the window shown in the transcript
    plan: object  # edit.WritePlan | edit.EditPlan | pathpolicy.Resolved (the command's cwd)
    full: list | None = None  # the whole preview (bounded), when the window does not show it all
    env: dict | None = None  # a command's environment changes (tools/repocheck.py), None: none


def prepare(name: str, args: dict, root: str) -> Prepared | dict:
    """Build the preview of a mutating call, or the error result that refuses it now."""
    if name == "write_file":
        plan = edit.plan_write(root, args["path"], args["content"])
        if isinstance(plan, dict):
            return plan
        lines, full = _with_links(plan, *preview.diff_view(plan.rel, plan.old, plan.new))
    elif name == "edit_file":
        plan = edit.plan_edit(root, args["path"], args["search_block"], args["replace_block"])
        if isinstance(plan, dict):
            return plan
        lines, full = _with_links(plan, *preview.diff_view(plan.rel, plan.old, plan.new))
    elif name == "execute_command":
        plan = pathpolicy.resolve(root, args.get("cwd", "."), must_exist=True)
        if isinstance(plan, dict):
            return plan
        refused = pathpolicy.check_directory(plan)
        if refused is not None:
            return refused
        lines, full = preview.command_view(args["command"], pathpolicy.shown(plan.rel))
    elif name in READ_ONLY:  # asked for by a rule (e.g. ask read_file(.env)): show what it reads
        lines, full = [("ctx", f"reads: {summary(name, args)}")], None
        plan = None
    else:
        return results.error("unknown_tool", f"unknown tool {name!r}")
    return Prepared(name=name, summary=summary(name, args), preview=lines, plan=plan, full=full)


def _with_links(plan, lines: list, full: list | None) -> tuple[list, list | None]:
    """A write or edit of a file with several hard links says, under the totals, that it
    breaks the link (the other names keep the old content)."""
    if plan.links <= 1:
        return lines, full

    def added(view: list) -> list:
        at = 1 if view and view[0][0] == "stat" else 0
        return [*view[:at], ("marker", files.hard_links_broken(plan.links)), *view[at:]]

    return added(lines), None if full is None else added(full)


def execute(name: str, args: dict, root: str, prepared: Prepared | None, *, cancel: Cancel | None = None,
            on_output=None, exec_timeout: float = 30.0, exec_max_processes: int = 1024, policy=None) -> dict:
    """Run a validated call (a mutation only with its approved plan). `policy`: the permission
    policy, so search_workspace leaves out the files read_file may not read unasked."""
    if name == "search_workspace":
        from dashfloat.tools import search

        return search.search_workspace(root, args, cancel=cancel, readable=readable_by(policy, root))
    if name == "read_file":
        return files.read_file(root, args["path"], args.get("offset", 1), args.get("limit", files.READ_MAX_LINES))
    if name == "list_directory":
        return files.list_directory(root, args.get("path", "."))
    if prepared is None:
        return results.error("internal", f"{name} ran without an approved preview")
    if name == "write_file":
        return edit.apply_write(prepared.plan)
    if name == "edit_file":
        return edit.apply_edit(prepared.plan)
    if name == "execute_command":
        return _run_in(prepared.plan, args["command"], timeout=exec_timeout, cancel=cancel,
                       on_output=on_output, max_processes=exec_max_processes, env=prepared.env)
    return results.error("unknown_tool", f"unknown tool {name!r}")


def readable_by(policy, root: str):
    """A predicate: may read_file read this path (relative to the root) without asking? None
    (everything) when no rule of any layer could say otherwise: the common case costs nothing."""
    if policy is None:
        return None
    from dashfloat.tools import rules

    strict = any(r.tool == "read_file" and r.decision != rules.ALLOW
                 for _layer, layer_rules in policy.all_layers() for r in layer_rules)
    if not strict:
        return None

    def readable(rel: str) -> bool:
        return policy.decide("read_file", {"path": rel}, root).decision == rules.ALLOW

    return readable


def _run_in(cwd: pathpolicy.Resolved, command: str, **kw) -> dict:
    """Run the approved command in its cwd, opened beneath the root now: the command runs in
    a directory inside the root even if the name was swapped for a link since the preview."""
    beneath = files.open_root(cwd)
    if isinstance(beneath, dict):
        return beneath
    with beneath:
        try:
            dir_fd = beneath.open_dir(cwd.rel)
        except OSError as exc:
            return files._os_error(exc, "enter", pathpolicy.shown(cwd.rel))
    try:
        return run_command(command, cwd.abs, cwd_fd=dir_fd, **kw)
    finally:
        os.close(dir_fd)


def _links_text(name: str, result: dict) -> str:
    """", 2 hard links" on a read; ", hard link broken: 1 other name keeps the old content"
    on a write or edit of a file that had several names."""
    links = result.get("hard_links")
    if not isinstance(links, int) or isinstance(links, bool) or links <= 1:
        return ""
    if name == "read_file":
        return f", {links} hard links"
    others = links - 1
    return (f", hard link broken: {others} other name{'s' * (others != 1)} "
            f"keep{'s' * (others == 1)} the old content")


def _ok_text(name: str, result: dict) -> str:
    if name == "read_file":
        lines = result.get("lines")
        text = f"ok: {lines} lines" if isinstance(lines, int) else "ok"
        return text + (", truncated" if result.get("truncated") else "") + _links_text(name, result)
    if name == "list_directory":
        n = result.get("total", len(result.get("entries") or []))
        return f"ok: {n} entries" + (", truncated" if result.get("truncated") else "")
    if name == "search_workspace":
        from dashfloat.tools.search import shown_count

        text = f"ok: {shown_count(result)}" + (", incomplete" if result.get("complete") is False else "")
        if n := result.get("not_searched"):  # (counts search.py sets only when over 0)
            text += f", {n} not readable"
        if n := result.get("lines_searched_in_part"):
            text += f", {n} long line{'s' * (n != 1)} searched in part"
        return text
    if name == "write_file":
        size = result.get("bytes")
        verb = "created" if result.get("created") else "wrote"
        text = f"ok: {verb} {human_size(size)}" if isinstance(size, int) else "ok"
        return text + _links_text(name, result)
    if name == "edit_file":
        return "ok: edited" + _links_text(name, result)
    if name == "execute_command":
        return "ok: exit 0" + (", output truncated" if result.get("truncated") else "") + _stopped_text(result)
    return "ok"


def _stopped_text(result: dict) -> str:
    """", 2 leftover processes stopped" when a command left processes running at its exit."""
    n = result.get("stopped_processes")
    if not isinstance(n, int) or n <= 0:
        return ""
    return f", {n} leftover process{'' if n == 1 else 'es'} stopped"


def _excerpt_source(name: str, result: dict) -> str:
    if name == "execute_command":
        return result.get("output") or ""
    if name == "read_file" and result.get("ok"):
        return result.get("content") or ""
    if name == "search_workspace" and result.get("ok"):
        return result.get("matches") or ""
    if name == "list_directory" and result.get("ok"):
        # one row per entry: a newline in a name is shown escaped, never as a second entry
        return "\n".join(
            (preview.safe(str(e.get("name", "?"))) + ("/" if e.get("type") == "dir" else ""))
            for e in result.get("entries") or []
        )
    return ""


def result_row(call_id: str, name: str, result: dict) -> dict:
    """What the UI's outcome row shows: status, one line of text, a bounded verbatim excerpt."""
    status = results.status(result)
    if status == "ok":
        text = _ok_text(name, result)
    elif status in ("rejected", "cancelled"):
        text = status
        if result.get("error"):
            text += f": {result['error']}"
    else:
        text = "error: " + str(result.get("error") or "failed")
        if name == "execute_command":
            text += _stopped_text(result)
    excerpt = preview.excerpt(_excerpt_source(name, result), max_lines=EXCERPT_LINES)
    row = {"id": call_id, "name": name, "status": status, "text": text, "excerpt": excerpt}
    if isinstance(result.get("code"), str):
        row["code"] = result["code"]  # results.CODES: a machine-readable why (headless events)
    return row
