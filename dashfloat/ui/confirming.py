"""The question on a preview, for the App: which keys decide it (by confirmgate's rules),
what the status bar and the question line say meanwhile, and the whole preview's pager.

A mixin of App (dashfloat/ui/app.py): it uses the App's model, agent, gate, notice and
frame, and keeps the App's file to the app's life cycle, messages and prompt.
"""

from __future__ import annotations

import logging

from dashfloat import messages as M
from dashfloat.ui import keymap
from dashfloat.ui.confirmgate import DECISIONS, HOLD

log = logging.getLogger("dashfloat.ui")

HELD_NOTICES = {"approve": "approving", "reject": "rejecting", "approve_always": "allowing for the session"}


class Confirming:
    """The confirmation half of App (see the module docstring)."""

    def _confirm_key(self, key: str, at: float, alone: bool, contexts=("confirm", "transcript", "global")):
        """While a call waits for a decision only y, n, a, Esc, v and scrolling mean
        anything, and y, n and a only when pressed on their own (confirmgate.py): typing
        decides nothing, lands nowhere, and is shown under the question as unused."""
        cmd = keymap.lookup(contexts, key)
        before = (self.gate.shown_at, self.gate.last_key_at)
        verdict, cancelled = self.gate.key(cmd, key, at, alone)
        if cancelled is not None:  # the held letter began a word: it was typing
            log.info("confirmation: the held %r was not taken: %r followed it within %g s",
                     self._held_key, key, HOLD)
            self._unused(self._held_key)
            self._held_key = ""
        if verdict.action == "explain" and verdict.command in DECISIONS:
            # the audit trail says why a decision key did not decide (the screen says it
            # only until the next pause)
            shown_at, last_key_at = before
            log.info("confirmation: %r not taken (%s): %s after the preview was drawn, %.2f s after "
                     "the last key, %s", key, verdict.reason,
                     "not drawn yet" if shown_at is None else f"{at - shown_at:.2f} s",
                     at - last_key_at, "alone in its read" if alone else "with other keys in its read")
        action = verdict.action
        if action == "pass":
            self.command(cmd)
            return None
        if action == "ignore":
            return None
        if action == "decide":
            self._decide(verdict.command)
        elif action == "hold":
            self._held_key = key
            self._set_always(False)
            self._gate_says("hold", HELD_NOTICES[verdict.command] + self.glyphs.ellipsis)
        elif action == "step":
            self._set_always(True)
            entry = self.model.tools.get(self.confirm[1]) if self.confirm is not None else None
            if entry is not None and entry.always_asks:
                self._gate_says("step", "a again approves it once: this call always asks")
            else:
                self._gate_says("step", "a again, after a pause, allows it for the session")
        elif action == "view" and verdict.command == "view_preview":
            self._open_view()
        else:  # explain
            self._set_always(False)
            if len(key) == 1:
                self._unused(key)
            self._gate_says("explain", verdict.notice)
        if self.confirm is not None:
            self._sync_ready(at)
        return None

    def _gate_says(self, about: str, notice: str) -> None:
        self.notice = notice
        self._gate_notice = about
        self.refresh()

    def _unused(self, text: str) -> None:
        if self.confirm is not None and text:
            self.model.tool(self.confirm[1]).add_unused(text)

    def _set_always(self, on: bool) -> None:
        if self.confirm is not None:
            entry = self.model.tools.get(self.confirm[1])
            if entry is not None and entry.asking_always != on:
                self.model.tool(entry.id).ask_always(on)

    def _confirm_tick(self, now: float) -> None:
        """Time passes on a pending question: a held letter acts once HOLD passed, and a
        first a that got no second one lapses."""
        command = self.gate.due(now)
        if command is not None:
            self._decide(command)
            return
        if self.gate.step_at is not None and not self.gate.stepping(now):
            self.gate.step_at = None
            self._set_always(False)
            if self._gate_notice == "step":
                self._gate_notice = self.notice = ""
            self.refresh()
        self._sync_ready(now)

    def _sync_ready(self, now: float) -> None:
        """The question reads Apply? when a y or n now would count, else Wait; a notice
        that explained a key goes once one would."""
        ready = self.gate.ready(now)
        if self._gate_notice == "explain" and ready:
            self._gate_notice = self.notice = ""
        entry = self.model.tools.get(self.confirm[1])
        if entry is not None and entry.ready != ready:
            self.model.tool(entry.id).set_ready(ready)
            self.refresh()
        else:
            self.update_status()

    def _decide(self, cmd: str) -> None:
        ref, call_id = self.confirm
        entry = self.model.tool(call_id)
        if cmd == "approve":
            entry.decided("approved by you")
            self.agent.send((M.CONFIRM_DECISION, ref, "approved"))
        elif cmd == "approve_always" and entry.always_asks:
            entry.decided("approved by you, once (it always asks)")
            self.agent.send((M.CONFIRM_DECISION, ref, "always"))
        elif cmd == "approve_always":
            entry.decided("approved by you; allowed for the rest of the session")
            self.agent.send((M.CONFIRM_DECISION, ref, "always"))
        elif cmd == "reject":
            entry.decided("rejected by you")
            self.agent.send((M.CONFIRM_DECISION, ref, "rejected"))
        elif cmd == "stop_turn":
            entry.decided("rejected by you")
            self.agent.send((M.CANCEL,))
        else:
            raise ValueError(f"not a decision: {cmd!r}")
        self._end_confirm()
        self.notice = ""
        self.refresh()

    def _end_confirm(self) -> None:
        """No question is pending any more (decided, or the agent moved on)."""
        if self.confirm is not None:
            entry = self.model.tools.get(self.confirm[1])
            if entry is not None and entry.asking_always:
                self.model.tool(entry.id).ask_always(False)
        self.confirm = None
        self.gate.close()
        self._held_key = ""
        if self._gate_notice:
            self._gate_notice = self.notice = ""
        self._close_view()

    # ---- the whole preview ------------------------------------------------------------
    def _open_view(self) -> None:
        from dashfloat.textsafe import visible
        from dashfloat.ui.pager import PreviewView

        entry = self.model.tools.get(self.confirm[1])
        if entry is None:
            return
        self.view_widget = PreviewView(visible(entry.summary), entry.view_lines())
        self.frame.body = self.view_widget
        self._gate_notice = self.notice = ""
        self.update_status()

    def _close_view(self) -> None:
        if self.view_widget is not None:
            self.view_widget = None
            self.frame.body = self.view.listbox
            self.update_status()

    def _view_key(self, size, key: str, at: float, alone: bool):
        """Keys in the whole preview: scrolling and closing it; the question's own keys
        (y, n, a, Ctrl-C) decide here too, by the same rules."""
        cmd = keymap.lookup(("view",), key)
        if cmd == "view_scroll":
            self.view_widget.keypress(self.view_widget.last_size or self.view.listbox.last_size or size, key)
            return None
        if cmd == "close_view":  # like scrolling, not typing: y right after it counts
            self._close_view()
            return None
        return self._confirm_key(key, at, alone, contexts=("confirm", "global"))
