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
    tokens_estimated: bool = False,
    position: tuple[int, int] | None,
    notice: str,
    width: int,
    mode: str = "ask",
    sep: str,
    dot: str = "·",
    session_rule: bool = True,
    meter: dict | None = None,
    ready: bool = True,
) -> list:
    """Pure: the status bar's markup for the current state (tested without a screen).
    `session_rule`: the pending question can become a session rule (a a); not for a call
    that always asks. `meter`: the totals and budgets (metering.Meter.view), shown once a
    request was made or a budget is set. `ready`: a y or n would count now (ui/confirmgate.py);
    until then a confirmation's bar offers Esc only, as its question reads "Wait"."""
    left: list = []
    active = phase != "idle"
    left.append(("status_phase", f" {spinner if active else ' '} {phase} "))
    left.append(("status", sep))
    left.append(("status_model", f" {model or 'no model'} "))
    if tokens is not None:
        left.append(("status", f"{sep} ctx {'~' if tokens_estimated else ''}{tokens:,} tok "))
    if position is not None:
        row, total = position
        left.append(("status", f"{sep} line {row}/{total} "))
    if mode == "unrestricted":  # a permanent warning: nothing asks any more
        left.append(("status_error", f"{sep} UNRESTRICTED: no confirmations "))
    elif mode != "ask":
        left.append(("status", f"{sep} mode {mode} "))
    if notice:
        left.append(("status_error", f"{sep} {notice} "))
    figure = meter_text(meter)  # after the warnings: at 80 columns it is what the ellipsis cuts
    if figure:
        left.append(("status_error" if meter_near(meter) else "status", f"{sep} {figure} "))
    if phase == "confirming" and not ready:
        hints = [keymap.hint_for("stop_turn")]
    elif phase == "confirming":
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


def meter_text(meter: dict | None) -> str:
    """`used 12.3k tok $0.0042`, with the budgets as limits (`used ~12.3k/100k tok`,
    `$0.04/$0.50`, `3/20 req`); ~ when some usage was estimated; "" before any request when
    no budget is set."""
    if not meter:  # before any request: metering is not loaded for the first frame
        return ""
    from dashfloat.metering import money, tokens_text

    budgets = [meter.get(k) for k in ("max_tokens", "max_cost", "max_turns")]
    requests = meter.get("requests") or 0
    if not requests and not any(b is not None for b in budgets):
        return ""
    approx = "~" if meter.get("estimated") else ""
    text = f"used {approx}{tokens_text(meter.get('tokens') or 0)}"
    if meter.get("max_tokens") is not None:
        text += f"/{tokens_text(meter['max_tokens'])}"
    text += " tok"
    cost = meter.get("cost")
    if cost is not None or meter.get("max_cost") is not None:
        text += f" {money(cost or 0.0)}"
        if meter.get("max_cost") is not None:
            text += f"/{money(meter['max_cost'])}"
    if meter.get("max_turns") is not None:
        text += f" {requests}/{meter['max_turns']} req"
    return text


def meter_near(meter: dict | None) -> bool:
    """Whether a budget is 80 % used or more (the figure is then shown as a warning)."""
    if not meter:
        return False
    from dashfloat.metering import WARN_AT

    for used, limit in ((meter.get("tokens"), meter.get("max_tokens")), (meter.get("cost"), meter.get("max_cost")),
                        (meter.get("requests"), meter.get("max_turns"))):
        if limit and (used or 0) >= limit * WARN_AT:
            return True
    return False
