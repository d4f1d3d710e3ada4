"""The tool pipeline: every call goes through the same stages, in one fixed order.

    pre-execute (PRE_EXECUTE, in order) -> monotonic guard -> [ask: the user's key]
      -> execute -> post-execute (POST_EXECUTE, in order) -> result

A pre-execute stage may end the call with a result (bad arguments, a path outside the
root), or give a decision (allow / ask / deny) that the monotonic guard takes only if it
tightens: a later stage (a hook) can never relax what an earlier one (a deny rule)
decided. The order of the stages is set here and nowhere else. Stages are small
functions of a CallContext, each tested on its own; none raises (the runner turns a bug
into an error result). No urwid, no agent state: the agent runs `pre_execute` and
`post_execute` on the call's own thread.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from dashfloat import masking
from dashfloat.tools import (
    cargocheck,
    hooks,
    pathpolicy,
    preview,
    repocheck,
    results,
    rules,
    runner,
)
from dashfloat.tools import guard as guard_module

log = logging.getLogger("dashfloat.pipeline")

PATH_ARGS = {"read_file": "path", "write_file": "path", "edit_file": "path", "list_directory": "path",
             "execute_command": "cwd", "search_workspace": "path"}


@dataclass
class CallContext:
    """Everything the stages of one call read and write."""

    call_id: str
    name: str
    raw: dict  # {"id", "name", "args", "error"} from the tool-call accumulator
    root: str
    policy: object  # tools.permissions.Policy
    pre_hooks: tuple[str, ...] = ()
    post_hooks: tuple[str, ...] = ()
    hook_timeout: float = 10.0
    secrets: tuple = ()  # values (or masking pairs) redacted from whatever a tool returns
    cancel: object = None
    args: dict | None = None
    guard: guard_module.MonotonicGuard = field(default_factory=guard_module.MonotonicGuard)
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    rule_decision: object = None  # the rules.Decision of the rules stage
    audit: object = None  # the final rules.Decision (decision, who, reason): the agent records it
    exec_env: dict | None = None  # environment changes for a command that runs unasked
    preview_notes: list[str] = field(default_factory=list)  # lines added to the question
    repeats: int = 0  # identical calls (same tool, same arguments) just before this one in the turn


# ---- pre-execute stages: each returns an error result to end the call, or None --------


def stage_validate(ctx: CallContext) -> dict | None:
    """Arguments against the catalogue: unknown tool, missing, extra, mistyped, NUL."""
    args, error = runner.validate_call(ctx.raw)
    if error is not None:
        return error
    ctx.args = args
    return None


def stage_path_policy(ctx: CallContext) -> dict | None:
    """The path argument resolves inside the root (lexically and through symlinks)."""
    key = PATH_ARGS.get(ctx.name)
    if key is None:
        return None
    resolved = pathpolicy.resolve(ctx.root, ctx.args.get(key, "."))
    return resolved if isinstance(resolved, dict) else None


def stage_rules(ctx: CallContext) -> dict | None:
    """The permission rules of every layer and the mode: the first decision."""
    decision = ctx.policy.decide(ctx.name, ctx.args, ctx.root)
    ctx.rule_decision = decision
    ctx.guard.update(decision.decision, decision.who)
    ctx.reason = decision.reason
    return None


def stage_hooks(ctx: CallContext) -> dict | None:
    """The user's pre_tool_use hooks: they may tighten (deny, ask), never relax."""
    for command in ctx.pre_hooks:
        if ctx.guard.decision == guard_module.DENY:
            break
        hook = hooks.run_pre_hook(command, {"tool": ctx.name, "arguments": ctx.args, "id": ctx.call_id},
                                  cwd=ctx.root, timeout=ctx.hook_timeout, cancel=ctx.cancel)
        if hook.failed:
            ctx.notes.append(hook.reason)  # it names the hook and what went wrong
        if hook.decision is None:
            continue
        if not ctx.guard.update(hook.decision, hook.who):
            ctx.notes.append(f"{hook.who} answered {hook.decision}, which would relax "
                             f"{ctx.guard.decision} by {ctx.guard.decided_by}: ignored")
            log.warning("audit: %s tried to relax %s to %s", hook.who, ctx.guard.decision, hook.decision)
        elif ctx.guard.decided_by == hook.who:
            ctx.reason = hook.reason or f"it answered {hook.decision}"
    return None


def stage_repository(ctx: CallContext) -> dict | None:
    """A command that would run without a question cannot run programs that a repository's
    git config names (tools/repocheck.py): it runs with them neutralised, or it asks, naming
    them. Only for an allow (not the unrestricted mode's): it can only tighten. A git command
    that asks anyway gets the findings as a note on its preview."""
    if ctx.name != "execute_command" or ctx.guard.decision == guard_module.DENY:
        return None
    if getattr(ctx.policy, "mode", None) == rules.MODE_UNRESTRICTED:
        return None  # everything runs anyway: the user's hooks too
    cwd = pathpolicy.resolve(ctx.root, ctx.args.get("cwd", "."))
    if isinstance(cwd, dict):
        return None  # (the path policy refused it already)
    a = rules.analyze_command(ctx.args["command"])
    rust = cargocheck.reasons([*a.simple, *a.candidates], cwd.abs, ctx.root)
    if ctx.guard.decision == guard_module.ASK:
        # it asks anyway, and runs as git normally would once approved: the question says
        # what the repository would make it run, so y is given knowing it
        reasons = repocheck.check(ctx.args["command"], cwd.abs, ctx.root).reasons \
            if repocheck.runs_git(ctx.args["command"]) else ()
        if reasons or rust:
            ctx.preview_notes.append(f"note: {repocheck.describe([*reasons, *rust])}")
        return None
    verdict = repocheck.check(ctx.args["command"], cwd.abs, ctx.root)
    ctx.exec_env = verdict.env
    if verdict.reasons or rust:
        reason = repocheck.describe([*verdict.reasons, *rust])
        who = repocheck.WHO if verdict.reasons else cargocheck.WHO
        ctx.guard.update(guard_module.ASK, who)
        ctx.reason = reason
        ctx.rule_decision = rules.Decision(guard_module.ASK, who, reason,
                                           getattr(ctx.rule_decision, "rule", None))
        # (the question's "asks:" note is made from ctx.reason by pre_execute)
    return None


REPEAT_LIMIT = 3  # the same call this many times in a row in one turn asks
REPEAT_WHO = "repeat guard"


def stage_repeat(ctx: CallContext) -> dict | None:
    """The same call with the same arguments REPEAT_LIMIT times in a row in one turn (the
    agent counts `ctx.repeats`) asks, with a note: a model in a loop waits for the user. Every
    mode (a loop is where an unrestricted session needs a brake); it can only tighten (a deny
    stays a deny), and the a key adds no session rule for it (this check comes after the
    rules, so such a rule would never be used)."""
    if ctx.repeats + 1 < REPEAT_LIMIT or ctx.guard.decision == guard_module.DENY:
        return None
    why = (f"the same call with the same arguments {ctx.repeats + 1} times in a row in this turn "
           "(a loop?)")
    ctx.guard.update(guard_module.ASK, REPEAT_WHO)
    if ctx.guard.decided_by == REPEAT_WHO:
        ctx.reason = why
    ctx.rule_decision = rules.Decision(guard_module.ASK, REPEAT_WHO, why,
                                       getattr(ctx.rule_decision, "rule", None), always_asks=why)
    ctx.preview_notes.append(f"asks: {why}")
    return None


# THE order of the pre-execute chain. Changing policy means changing this tuple.
PRE_EXECUTE: tuple[Callable[[CallContext], dict | None], ...] = (
    stage_validate,
    stage_path_policy,
    stage_rules,
    stage_hooks,
    stage_repository,
    stage_repeat,
)


def pre_execute(ctx: CallContext) -> tuple[str, object]:
    """Run the chain, then the guard's verdict: ("done", result) | ("ask", prepared) |
    ("run", prepared or None). A mutation (or a question) gets its preview here, built
    from the very plan execute() will apply."""
    for stage in PRE_EXECUTE:
        ended = stage(ctx)
        if ended is not None:
            return ("done", ended)
    decision = ctx.guard.final
    who = ctx.guard.decided_by
    ctx.audit = rules.Decision(decision, who, ctx.reason)  # the agent journals it (or logs it)
    if decision == guard_module.DENY:
        return ("done", results.error("denied", f"denied by {who}: {ctx.reason}"))
    prepared = None
    if runner.needs_confirmation(ctx.name) or decision == guard_module.ASK:
        prepared = runner.prepare(ctx.name, ctx.args, ctx.root)
        if isinstance(prepared, dict):  # refused before asking (bounds, not a file...)
            return ("done", prepared)
    if decision == guard_module.ALLOW:
        if prepared is not None:  # a mutation a rule or the mode allows: say which
            ctx.notes.append(f"allowed by {who}")
            if ctx.exec_env:
                prepared = dataclasses.replace(prepared, env=ctx.exec_env)
        return ("run", prepared)
    # why it asks, when a rule, a hook or a check made it (an allow rule that names the
    # command but for a dangerous argument or its shape, an ask rule...), not the default;
    # the protection says it next to the keys ("always asks")
    why = _why_it_asks(ctx, who)
    if why and why not in ctx.preview_notes:
        ctx.preview_notes.insert(0, why)
    if ctx.preview_notes and prepared is not None:
        notes = [("marker", preview.safe(note)) for note in ctx.preview_notes]
        prepared = dataclasses.replace(
            prepared, preview=[*prepared.preview, *notes],
            full=None if prepared.full is None else [*prepared.full, *notes])
    return ("ask", prepared)


def _why_it_asks(ctx: CallContext, who: str) -> str:
    """The note of a question that a rule, a hook or a check made ask ("" for the default
    question, and for the protection, which says it next to the keys): the rule's reason
    names the allow rule and what stopped it; an ask rule and a hook are named."""
    if who == rules.BUILT_IN_DEFAULT or not ctx.reason \
            or ctx.reason == getattr(ctx.rule_decision, "always_asks", ""):
        return ""
    if who.startswith(f"{hooks.PRE_TOOL_USE} hook") and who not in ctx.reason:
        return f"asks: {who}: {ctx.reason}"
    if ctx.reason == rules.RULE_MATCHES.format(decision=guard_module.ASK):
        return f"asks: {who} matches"
    return f"asks: {ctx.reason}"


# Stages `dashfloat policy check` skips: a CALL names only the main argument (so the other
# required arguments are missing), and hooks run commands, which a check never does.
NOT_JUDGED = (stage_validate, stage_hooks)


def judge(name: str, args: dict, root: str, policy) -> rules.Decision:
    """The decision the pre-execute chain would reach for a call, without running anything:
    every stage of PRE_EXECUTE but those in NOT_JUDGED, in the same order, so a call the
    path policy refuses is reported refused, as a real run would refuse it."""
    ctx = CallContext(call_id="check", name=name, raw={"id": "check", "name": name, "args": args},
                      root=root, policy=policy)
    from dashfloat.tools.catalogue import _SCHEMAS

    required = _SCHEMAS.get(name, {}).get("required", ())
    # `list_directory()`: an optional argument left out, as the model would leave it out
    ctx.args = {k: v for k, v in args.items() if v != "" or k in required}
    for stage in PRE_EXECUTE:
        if stage in NOT_JUDGED:
            continue
        ended = stage(ctx)
        if ended is not None:
            return rules.Decision(guard_module.DENY, "path policy", f"refused: {ended.get('error', ended)}")
    return ctx.rule_decision


# ---- post-execute stages: each returns the (possibly changed) result --------------------


def stage_redact(ctx: CallContext, result: dict) -> dict:
    """The configured API key (and secret header values) never leave in a tool's result (a
    command that prints the environment, a file that holds the key)."""
    return redact(result, ctx.secrets)


def stage_post_hooks(ctx: CallContext, result: dict) -> dict:
    """post_tool_use hooks may add notes for the model; they never change the result."""
    for command in ctx.post_hooks:
        hook = hooks.run_post_hook(command, {"tool": ctx.name, "arguments": ctx.args, "id": ctx.call_id},
                                   result, cwd=ctx.root, timeout=ctx.hook_timeout, cancel=ctx.cancel)
        if hook.failed:
            ctx.notes.append(hook.reason)
        elif hook.note:
            note = redact(hook.note, ctx.secrets)
            result = {**result, "hook_notes": [*result.get("hook_notes", []), note]}
            ctx.notes.append(f"{hook.who}: {note}")
    return result


# THE order of the post-execute chain (bounds and truncation markers are applied by the
# tools themselves, where the data is read).
POST_EXECUTE: tuple[Callable[[CallContext, dict], dict], ...] = (
    stage_redact,
    stage_post_hooks,
)


def post_execute(ctx: CallContext, result: dict) -> dict:
    for stage in POST_EXECUTE:
        result = stage(ctx, result)
    return result


def redact(value, secrets):
    """`value` with every configured secret replaced, in every string inside. Only the
    literal secrets: what the model reads keeps URLs and tokens it may need to edit."""
    secrets = masking.normalize(secrets)
    return masking.mask_deep(value, secrets, patterns=False) if secrets else value
