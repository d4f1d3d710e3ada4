"""When a key on a confirmation counts as a decision: pure rules, every time passed in.

A person typing a sentence while a preview appears must not answer it by accident (the
"a" of "can you stop" once approved a write and added a session rule), and neither may a
paste or a terminal's answer to a query. The rules, documented in the man page's
CONFIRMATIONS section with these numbers:

1. No key decides before the preview was drawn, nor within GRACE after that: a key
   pressed then was meant for what was on screen before.
2. A key decides only when it came alone in its read from the terminal: a paste, a
   terminal's reply (ESC[?1;2c, ESC]11;rgb:...ESC\\, ESC[12;5R, focus events) and keys
   typed faster than the screen reads them arrive together.
3. A letter (y, n, a, v) counts only after QUIET without typing. Every key but
   scrolling and help is typing, the ones that decided nothing too, so after a stray key
   the confirmation re-arms only after a pause.
4. y, n and the second a act after HOLD, and only if no typing follows within it: a
   letter followed at once by another is the start of a word ("you ...").
5. a alone only asks: a second a, itself after a pause and within ALWAYS_WINDOW of the
   first, approves and allows the exact call for the rest of the session.
6. Esc and Ctrl-C (reject and stop the turn) need rules 1 and 2 only and act at once:
   they never occur in typed text, and stopping is always safe.
7. v (the whole preview in a pager) needs rules 2 and 3 only: it decides nothing.

No urwid here, no clock: `judge` is a pure function of the key and the times, and
`ConfirmGate` holds the few times it needs between keys. The App feeds it
time.monotonic(); tests feed exact numbers.
"""

from __future__ import annotations

import math

from dashfloat.frozen import Frozen

GRACE = 0.5  # s after the preview was first drawn in which no key decides (rule 1)
QUIET = 0.6  # s without typing before a letter counts (rule 3); typing runs 3-10 keys/s
HOLD = 0.3  # s a decision letter waits for a following key (rule 4)
ALWAYS_WINDOW = 5.0  # s in which the second a must follow the first (rule 5)

DECISIONS = frozenset(("approve", "approve_always", "reject", "stop_turn"))
LETTERS = frozenset(("approve", "approve_always", "reject", "view_preview"))  # rule 3 applies
# keys that only look: never typing, never a decision; they do what they do elsewhere
PASSING = frozenset(("scroll_page_up", "scroll_page_down", "scroll_line_up", "scroll_line_down",
                     "scroll_top", "scroll_bottom", "help", "redraw", "toggle_reasoning", "suspend"))
# terminal events that are nobody's typing
EVENTS = frozenset(("focus in", "focus out", "window resize"))

# why a key was not taken: the status bar says so, with the keys that do decide
NOTICES = {
    "not_shown": "the preview is not on screen yet",
    "grace": "too soon: read the preview, then y/n",
    "together": "keys that came at once never decide: y/n alone",
    "typing": "typing: pause, then y approves · n rejects",
    "other": "y approves · n rejects · a a always · Esc stops",
}


class Verdict(Frozen):
    """action: "decide" (act now), "hold" (act after HOLD unless typing follows), "step"
    (the first a: ask for the second), "view" (open the pager), "pass" (a scrolling or
    help key: do what it does), "explain" (not taken: show NOTICES[reason]) or "ignore"
    (not taken, nothing to say)."""

    __slots__ = ("action", "command", "reason")

    def __init__(self, action: str, command: str | None = None, reason: str = ""):
        self._set(action=action, command=command, reason=reason)

    @property
    def notice(self) -> str:
        return NOTICES.get(self.reason, "")


def judge(command: str | None, key: str, *, now: float, shown_at: float | None, last_key_at: float,
          alone: bool, step_at: float | None = None) -> Verdict:
    """The verdict on one key of a pending confirmation.

    command: what the keymap binds `key` to here (None: nothing); now: when the key was
    read; shown_at: when the preview was first drawn (None: not yet); last_key_at: when
    the last typing key before this one was read (-inf: never); alone: the key was the
    only one in its read; step_at: when a first `a` was taken (None: none pending).
    """
    if key in EVENTS:
        return Verdict("ignore")
    if command in PASSING:
        return Verdict("pass", command)
    letter = command in LETTERS
    if command not in DECISIONS and not letter:
        command = None
    if shown_at is None and command is not None:
        return Verdict("explain", command, "not_shown")
    if command != "view_preview" and command is not None and now - shown_at < GRACE:
        return Verdict("explain", command, "grace")
    if not alone:
        return Verdict("explain", command, "together")
    typing = now - last_key_at < QUIET
    if command is None:
        return Verdict("explain", None, "typing" if typing else "other")
    if letter and typing:
        return Verdict("explain", command, "typing")
    if command == "stop_turn":
        return Verdict("decide", command)
    if command == "view_preview":
        return Verdict("view", command)
    if command == "approve_always" and (step_at is None or now - step_at > ALWAYS_WINDOW):
        return Verdict("step", command)
    return Verdict("hold", command)


class ConfirmGate:
    """The times `judge` needs, kept between keys (one gate per App)."""

    def __init__(self):
        self.shown_at: float | None = None
        self.last_key_at = -math.inf  # the last typing key, inside a confirmation or not
        self.held: tuple[str, float] | None = None  # (command, when) of a letter waiting out HOLD
        self.step_at: float | None = None  # when the first a was taken

    def open(self) -> None:
        """A new confirmation: not drawn yet, nothing held."""
        self.shown_at = None
        self.held = None
        self.step_at = None

    close = open

    def shown(self, now: float) -> None:
        if self.shown_at is None:
            self.shown_at = now

    def typed(self, now: float) -> None:
        """A typing key outside a confirmation (a preview may appear right after it)."""
        self.last_key_at = now

    def key(self, command: str | None, key: str, now: float, alone: bool) -> tuple[Verdict, str | None]:
        """Judge one key and remember what it changes. Returns the verdict and the command
        of a held letter this key cancelled (it was the start of a word), if any."""
        verdict = judge(command, key, now=now, shown_at=self.shown_at, last_key_at=self.last_key_at,
                        alone=alone, step_at=self.step_at)
        if verdict.action in ("pass", "ignore"):
            return verdict, None
        cancelled = None
        if self.held is not None:
            cancelled = self.held[0]
            self.held = None
        self.step_at = now if verdict.action == "step" else None
        if verdict.action == "hold":
            self.held = (verdict.command, now)
        self.last_key_at = now
        return verdict, cancelled

    def due(self, now: float) -> str | None:
        """The held command once HOLD has passed without typing (then it is no longer held)."""
        if self.held is not None and now - self.held[1] >= HOLD:
            command, self.held = self.held[0], None
            return command
        return None

    def stepping(self, now: float) -> bool:
        """A first a waits for the second."""
        return self.step_at is not None and now - self.step_at <= ALWAYS_WINDOW

    def ready(self, now: float) -> bool:
        """y or n pressed now would count: the status bar shows the keys only then."""
        return (self.shown_at is not None and now - self.shown_at >= GRACE
                and now - self.last_key_at >= QUIET and self.held is None)
