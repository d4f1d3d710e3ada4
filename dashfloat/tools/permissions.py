"""The session's permission policy: the configured rule layers, the mode and the session layer.

`rules.py` is the pure engine; this module holds the state a running session needs around it:

- the explicit layers from the configuration (`Config.permissions`: user config, project
  config, command line; lowest first), the permission mode (`/mode` may change it), and
- the *session* layer: exact allow rules added by the confirmation's ``a`` key
  (`allow_exact`), listed by `/permissions` (`session_rules`, `describe`) and revocable there
  (`revoke`).

`decide` evaluates one call with `rules.evaluate`; for the file tools it also passes the
symlink-resolved name of the path as an alias, so a deny rule for ``secrets/**`` also catches
``link-to-secrets/key`` and an allow rule must hold for both names. `audit_line` formats one
decision for the log.

Thread safety: the session layer and the mode may be changed by the UI thread while tool
threads call `decide`; a lock guards them and `decide` works on a snapshot.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from dashfloat.textsafe import visible
from dashfloat.tools import alwaysask, pathpolicy, rules
from dashfloat.tools.rules import Decision, Rule

__all__ = ["SESSION_LAYER", "Policy", "audit_line", "one_line"]

SESSION_LAYER = "session"

_MODE_NOTES = {
    rules.MODE_ASK: "calls that no rule allows ask first",
    rules.MODE_ACCEPT_EDITS: "writes and edits inside the working directory are allowed; "
    "commands ask",
    rules.MODE_READ_ONLY: "every write, edit and command is denied",
    rules.MODE_UNRESTRICTED: "WARNING: everything is allowed except deny rules and the "
    "built-in protection",
}
_TOKEN = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def one_line(text: str) -> str:
    """`text` terminal-safe and on one line (newlines shown as \\n)."""
    return visible(text).replace("\n", "\\n")


class Policy:
    """The rule layers, the mode and the session layer of one session.

    `layers`: the explicit layers, lowest first, as ``(label, rules)`` (`Config.permissions`);
    the built-in defaults are always below them and the session layer above them.
    `mode`: one of `rules.MODES`; `mode_source`: where it came from, for `describe`.
    """

    def __init__(
        self,
        layers: Iterable[tuple[str, Sequence[Rule]]] = (),
        mode: str = rules.MODE_ASK,
        *,
        mode_source: str = "",
    ) -> None:
        self._layers: tuple[tuple[str, tuple[Rule, ...]], ...] = tuple(
            (str(label), tuple(layer_rules)) for label, layer_rules in layers
        )
        for label, _ in self._layers:
            if label in (rules.BUILTIN_LAYER, SESSION_LAYER):
                raise ValueError(f"layer name {label!r} is reserved")
        self._lock = threading.Lock()
        self._session: list[Rule] = []
        self._mode = self._check_mode(mode)
        self.mode_source = mode_source

    @classmethod
    def from_config(cls, config) -> Policy:
        """The policy a `dashfloat.config.Config` describes (no session rules yet)."""
        return cls(
            config.permissions,
            config.permission_mode,
            mode_source=config.sources.get("permission_mode", ""),
        )

    # -- state -------------------------------------------------------------------------

    @staticmethod
    def _check_mode(mode: str) -> str:
        if mode not in rules.MODES:
            raise ValueError(
                f"unknown permission mode {mode!r} (expected one of {', '.join(rules.MODES)})"
            )
        return mode

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        """Change the mode (the `/mode` command); ValueError for an unknown one."""
        mode = self._check_mode(mode)
        with self._lock:
            self._mode = mode
            self.mode_source = "this session"

    @property
    def layers(self) -> list[tuple[str, list[Rule]]]:
        """The explicit configured layers, lowest first (without built-in and session)."""
        return [(label, list(layer_rules)) for label, layer_rules in self._layers]

    def all_layers(self) -> list[tuple[str, list[Rule]]]:
        """The layers `decide` passes to `rules.evaluate`: configured ones, then the session."""
        with self._lock:
            session = list(self._session)
        return [*self.layers, (SESSION_LAYER, session)]

    def allow_exact(self, name: str, args: dict, root: str | Path | None = None) -> Rule:
        """Allow exactly this call's main argument for the rest of the session (the ``a`` key
        in a confirmation): this exact command string, or this exact file. Deny rules, the
        read-only mode and the built-in protection still win over it. Returns the rule (the
        existing one if the same rule is already there). RuleError if the call has no valid
        main argument or names an unknown tool. With ``root``, a path spelled through a link
        to the root becomes its name relative to the root (as ``decide`` sees it)."""
        if root is not None:
            args = _respelled(name, args, os.fspath(root))
        rule = rules.exact_rule(name, args, rules.ALLOW, layer=SESSION_LAYER)
        with self._lock:
            for existing in self._session:
                if existing.tool == rule.tool and existing.pattern == rule.pattern:
                    return existing
            self._session.append(rule)
        return rule

    def session_rules(self) -> list[Rule]:
        """The session's rules, oldest first; `revoke` takes an index into this list."""
        with self._lock:
            return list(self._session)

    def revoke(self, index: int) -> Rule:
        """Remove the session rule at `index` (0-based, as in `session_rules`) and return it;
        IndexError if there is none."""
        with self._lock:
            if not 0 <= index < len(self._session):
                raise IndexError(f"no session rule number {index}")
            return self._session.pop(index)

    # -- deciding ----------------------------------------------------------------------

    def decide(self, name: str, args: dict, root: str | Path | None) -> Decision:
        """The permission decision for one call (`rules.evaluate`, module docstring there).

        For the file tools the symlink-resolved path (relative to the resolved root) is passed
        as an alias when it differs from the lexical one; a path the path policy cannot resolve
        has no alias (the path policy refuses it on its own). An absolute path spelled through
        a link to the root (or through the root's real path) is judged by its name relative to
        the root, as the path policy resolves it.
        """
        with self._lock:
            session = list(self._session)
            mode = self._mode
        layers = [*self._layers, (SESSION_LAYER, session)]
        root_text = None if root is None else os.fspath(root)
        return rules.evaluate(
            layers, name, _respelled(name, args, root_text), root=root_text, mode=mode,
            aliases=_aliases(name, args, root_text),
        )

    def audit_line(self, name: str, args: object, decision: Decision) -> str:
        """`audit_line` with this policy's mode."""
        return audit_line(name, args, decision, mode=self.mode)

    # -- describing --------------------------------------------------------------------

    def describe(self) -> list[str]:
        """Human lines: the mode, then every rule by layer, lowest first (built-in defaults
        included, session last). Terminal-safe, one rule a line: for `policy list` and
        `/permissions`."""
        with self._lock:
            session = list(self._session)
            mode = self._mode
            source = self.mode_source
        lines = [f"mode: {mode}" + (f"   ({one_line(source)})" if source else "")]
        lines.append(f"  {_MODE_NOTES[mode]}")
        lines.append("layers, lowest first; the strictest matching rule wins "
                     "(deny > ask > allow):")
        builtin = rules.default_rules()
        lines.append(f"{rules.BUILTIN_LAYER}:")
        lines.extend(_rule_line(r) for r in builtin if not r.sticky)
        lines.append("  protection: write_file and edit_file of these paths, at any depth, always ask "
                     "(rules write_file(**/PATH), edit_file(**/PATH)); no mode and no allow rule "
                     "relaxes it")
        for entry in alwaysask.TABLE:  # one line per entry: its paths and why
            lines.append(f"  ask    {', '.join(entry.patterns)}   ({entry.reason})")
        for label, layer_rules in (*self._layers, (SESSION_LAYER, tuple(session))):
            lines.append(f"{one_line(label)}:")
            if not layer_rules:
                lines.append("  (no rules)")
            lines.extend(_rule_line(r) for r in layer_rules)
        return lines


def _rule_line(rule: Rule, note: str = "") -> str:
    line = f"  {rule.decision:<6} {one_line(rule.text)}"
    notes = [note] if note else []
    if rule.exact:
        notes.append("exact")
    examples = len(rule.examples_match) + len(rule.examples_not_match)
    if examples:
        notes.append(f"{examples} example{'s' if examples != 1 else ''} checked")
    if notes:
        line += f"   ({'; '.join(notes)})"
    return line


def _respelled(name: str, args: object, root: str | None) -> object:
    """``args`` with an absolute path that is lexically outside the root but inside it through
    a link (the root entered through a symlink, macOS /tmp) replaced by its name relative to the
    root, so rules see the name they are written for; ``args`` itself otherwise."""
    if root is None or not isinstance(args, dict):
        return args
    key = rules.MAIN_ARG.get(name)
    path = args.get(key) if key and name != "execute_command" else None
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return args
    if rules.normalize_path(path, root) is not None:
        return args
    resolved = pathpolicy.resolve(root, path)
    if not isinstance(resolved, pathpolicy.Resolved):
        return args
    return {**args, key: resolved.rel}


def _aliases(name: str, args: object, root: str | None) -> tuple[str, ...]:
    """The symlink-resolved name of a file tool's path, relative to the resolved root, when
    it differs from the lexical one; () otherwise (also when the path cannot be resolved)."""
    if root is None or name not in rules.MAIN_ARG or name == "execute_command":
        return ()
    if not isinstance(args, dict):
        return ()
    path = args.get(rules.MAIN_ARG[name])
    if path is None and name in ("list_directory", "search_workspace"):
        path = "."
    if not isinstance(path, str) or not path or "\x00" in path:
        return ()
    try:
        resolved = pathpolicy.resolve(root, path)
    except (OSError, ValueError):
        return ()
    if not isinstance(resolved, pathpolicy.Resolved) or not resolved.real_root:
        return ()
    try:
        real_rel = os.path.relpath(resolved.real, resolved.real_root)
    except ValueError:
        return ()
    if real_rel == resolved.rel:
        return ()
    return (real_rel,)


def _token(text: str) -> str:
    return text if _TOKEN.fullmatch(text) else json.dumps(text)


def audit_line(name: str, args: object, decision: Decision, *, mode: str | None = None) -> str:
    """One log line for a decision: ``tool=write_file args_sha256=<hex> decision=ask
    by="<who>" [mode=<mode>]``. The arguments are only hashed (`rules.args_hash`); values that
    are not plain tokens are JSON-quoted (ASCII only), so the line stays one safe line."""
    parts = [
        f"tool={_token(str(name))}",
        f"args_sha256={rules.args_hash(name, args)}",
        f"decision={_token(decision.decision)}",
        f"by={json.dumps(decision.who)}",
    ]
    if mode is not None:
        parts.append(f"mode={_token(mode)}")
    return " ".join(parts)
