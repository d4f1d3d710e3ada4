"""The status bar's content, as a pure function of the UI state (no urwid), so the widget,
the early frame painted before urwid loads, and the tests all build it the same way."""

from __future__ import annotations

from dashfloat.ui import keymap


def status_markup(
    *,
    phase: str,
    spinner: str,
    model: str | None,
    tokens: int | None,
    position: tuple[int, int] | None,
    notice: str,
    width: int,
    mode: str = "ask",
    sep: str,
    dot: str = "·",
    session_rule: bool = True,
) -> list:
    """Pure: the status bar's markup for the current state (tested without a screen).
    `session_rule`: the pending question can become a session rule (a a); not for a call
    that always asks."""
    left: list = []
    active = phase != "idle"
    left.append(("status_phase", f" {spinner if active else ' '} {phase} "))
    left.append(("status", sep))
    left.append(("status_model", f" {model or 'no model'} "))
    if tokens is not None:
        left.append(("status", f"{sep} ctx {tokens:,} tok "))
    if position is not None:
        row, total = position
        left.append(("status", f"{sep} line {row}/{total} "))
    if mode == "unrestricted":  # a permanent warning: nothing asks any more
        left.append(("status_error", f"{sep} UNRESTRICTED: no confirmations "))
    elif mode != "ask":
        left.append(("status", f"{sep} mode {mode} "))
    if notice:
        left.append(("status_error", f"{sep} {notice} "))
    if phase == "confirming":
        hints = [keymap.hint_for("approve"), *([keymap.hint_for("approve_always")] if session_rule else []),
                 keymap.hint_for("reject"), keymap.hint_for("stop_turn")]
    elif phase in ("waiting", "streaming", "running"):
        hints = [keymap.hint_for("cancel")]
    elif position is not None:
        hints = [keymap.hint_for("scroll_bottom"), keymap.hint_for("help")]
    else:
        hints = [keymap.hint_for("submit"), keymap.hint_for("newline"), keymap.hint_for("help")]
    used = sum(len(t) for _a, t in left)
    hint_text = f" {dot} ".join(hints) + " "
    pad = width - used - len(hint_text)
    if pad >= 1:
        left.append(("status", " " * pad))
        left.append(("status_hint", hint_text))
    else:
        left.append(("status", " " * max(0, width - used)))
    return left
