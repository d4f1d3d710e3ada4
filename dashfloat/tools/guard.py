"""The monotonic guard: the last line between the policy chain and execution.

A tool call's permission is one of three decisions, ordered by strictness
``deny > ask > allow``. Every stage of the pre-execute chain (argument validation, path
policy, permission rules, user hooks) reports its decision to one `MonotonicGuard`:

- the first decision is always taken;
- a later decision may only keep or tighten it (``allow -> ask``, ``allow -> deny``,
  ``ask -> deny``);
- an attempt to relax it (``deny -> ask``, ``deny -> allow``, ``ask -> allow``) is refused:
  `update` returns False, the attempt is recorded in `relax_attempts` as
  ``(from, to, who)`` (the pipeline reports it as an error), and the stricter decision stands.
  Fail closed.

`decided_by` names the stage that set the current decision (a later stage that merely repeats
it does not take the credit). `history` keeps every update, accepted or not, in order, for the
audit log. `final` is the decision the pipeline must act on: `DENY` when nothing decided at all
(no decision is not permission).

A decision that is not one of the three strings is a programming error and raises ValueError;
it is never treated as a runtime input.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

DENY = "deny"
ASK = "ask"
ALLOW = "allow"

DECISIONS: tuple[str, ...] = (ALLOW, ASK, DENY)
STRICTNESS: dict[str, int] = {ALLOW: 0, ASK: 1, DENY: 2}


def check_decision(decision: object) -> str:
    """`decision` itself if it is "allow", "ask" or "deny"; ValueError otherwise."""
    if not isinstance(decision, str) or decision not in STRICTNESS:
        raise ValueError(f"not a permission decision: {decision!r} (expected allow, ask or deny)")
    return decision


def stricter(a: str, b: str) -> str:
    """The stricter of two decisions (`a` on a tie)."""
    return b if STRICTNESS[check_decision(b)] > STRICTNESS[check_decision(a)] else a


def strictest(decisions: Iterable[str], default: str = DENY) -> str:
    """The strictest of `decisions`; `default` (fail closed: deny) when there are none."""
    out: str | None = None
    for decision in decisions:
        out = check_decision(decision) if out is None else stricter(out, decision)
    return check_decision(default) if out is None else out


class Update(NamedTuple):
    """One `MonotonicGuard.update` call as recorded in `history`."""

    decision: str
    who: str
    accepted: bool  # False: a refused relax attempt


class RelaxAttempt(NamedTuple):
    """A refused attempt to relax the decision: ``(from, to, who)``."""

    from_: str
    to: str
    who: str


class MonotonicGuard:
    """Collects one call's decisions; they may only tighten (module docstring)."""

    __slots__ = ("decision", "decided_by", "history", "relax_attempts")

    def __init__(self) -> None:
        self.decision: str | None = None
        self.decided_by: str | None = None
        self.history: list[Update] = []
        self.relax_attempts: list[RelaxAttempt] = []

    def update(self, decision: str, who: str) -> bool:
        """Offer a decision from `who`. True if it stands (first, same or stricter).

        False for an attempt to relax: recorded in `relax_attempts`, the decision is kept.
        """
        check_decision(decision)
        if not isinstance(who, str):
            raise TypeError(f"who must be a str, got {type(who).__name__}")
        current = self.decision
        if current is not None and STRICTNESS[decision] < STRICTNESS[current]:
            self.history.append(Update(decision, who, False))
            self.relax_attempts.append(RelaxAttempt(current, decision, who))
            return False
        self.history.append(Update(decision, who, True))
        if current is None or STRICTNESS[decision] > STRICTNESS[current]:
            self.decision = decision
            self.decided_by = who
        return True

    @property
    def final(self) -> str:
        """The decision to act on: the current one, or DENY if nothing decided (fail closed)."""
        return self.decision if self.decision is not None else DENY

    @property
    def relaxed(self) -> bool:
        """Whether any stage tried to relax the decision (an error to report)."""
        return bool(self.relax_attempts)

    def __repr__(self) -> str:
        return (
            f"MonotonicGuard(decision={self.decision!r}, decided_by={self.decided_by!r}, "
            f"relax_attempts={len(self.relax_attempts)})"
        )
