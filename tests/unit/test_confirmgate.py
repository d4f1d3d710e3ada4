"""The rules that make a key on a confirmation a decision: pure tables, exact times."""

from __future__ import annotations

import math

import pytest

from dashfloat.ui import keymap
from dashfloat.ui.confirmgate import (
    ALWAYS_WINDOW,
    GRACE,
    HOLD,
    QUIET,
    ConfirmGate,
    judge,
)

NEVER = -math.inf


def cmd(key: str) -> str | None:
    return keymap.lookup(("confirm", "transcript", "global"), key)


def verdict(key, now=10.0, shown_at=5.0, last_key_at=NEVER, alone=True, step_at=None):
    v = judge(cmd(key), key, now=now, shown_at=shown_at, last_key_at=last_key_at, alone=alone, step_at=step_at)
    return (v.action, v.command, v.reason)


@pytest.mark.parametrize(
    "key,kw,expected",
    [
        # a person who read the preview and answers
        ("y", {}, ("hold", "approve", "")),
        ("n", {}, ("hold", "reject", "")),
        ("esc", {}, ("decide", "stop_turn", "")),
        ("ctrl c", {}, ("decide", "stop_turn", "")),
        ("v", {}, ("view", "view_preview", "")),
        ("a", {}, ("step", "approve_always", "")),
        ("a", {"step_at": 8.0}, ("hold", "approve_always", "")),  # the second a, after a pause
        ("a", {"step_at": 10.0 - ALWAYS_WINDOW - 0.01}, ("step", "approve_always", "")),  # too late: asks again
        # rule 1: not drawn yet, or drawn a moment ago
        ("y", {"shown_at": None}, ("explain", "approve", "not_shown")),
        ("esc", {"shown_at": None}, ("explain", "stop_turn", "not_shown")),
        ("y", {"shown_at": 10.0 - GRACE + 0.01}, ("explain", "approve", "grace")),
        ("n", {"shown_at": 10.0}, ("explain", "reject", "grace")),
        ("esc", {"shown_at": 10.0 - GRACE + 0.01}, ("explain", "stop_turn", "grace")),
        ("y", {"shown_at": 10.0 - GRACE - 0.001}, ("hold", "approve", "")),
        ("v", {"shown_at": 10.0}, ("view", "view_preview", "")),  # looking is never too soon
        # rule 2: keys that came together (a paste, a terminal reply, fast typing)
        ("y", {"alone": False}, ("explain", "approve", "together")),
        ("esc", {"alone": False}, ("explain", "stop_turn", "together")),
        ("v", {"alone": False}, ("explain", "view_preview", "together")),
        ("x", {"alone": False}, ("explain", None, "together")),
        # rule 3: a letter right after typing
        ("y", {"last_key_at": 10.0 - QUIET + 0.01}, ("explain", "approve", "typing")),
        ("a", {"last_key_at": 9.9, "step_at": 9.9}, ("explain", "approve_always", "typing")),
        ("v", {"last_key_at": 9.9}, ("explain", "view_preview", "typing")),
        ("y", {"last_key_at": 10.0 - QUIET - 0.001}, ("hold", "approve", "")),
        ("esc", {"last_key_at": 9.99}, ("decide", "stop_turn", "")),  # stopping is never typing
        # other keys
        ("x", {}, ("explain", None, "other")),
        ("x", {"last_key_at": 9.9}, ("explain", None, "typing")),
        ("enter", {}, ("explain", None, "other")),
        ("page up", {"alone": False, "shown_at": None}, ("pass", "scroll_page_up", "")),
        ("f1", {}, ("pass", "help", "")),
        ("focus in", {}, ("ignore", None, "")),
        ("focus out", {"alone": False}, ("ignore", None, "")),
    ],
)
def test_judge(key, kw, expected):
    assert verdict(key, **kw) == expected


class Typist:
    """A gate fed keys at given times, as the App does."""

    def __init__(self, shown_at=0.0):
        self.gate = ConfirmGate()
        self.gate.open()
        if shown_at is not None:
            self.gate.shown(shown_at)
        self.decided: list[tuple[str, float]] = []
        self.cancelled: list[str] = []

    def key(self, key: str, at: float, alone: bool = True) -> str:
        self.commit(at)
        v, cancelled = self.gate.key(cmd(key), key, at, alone)
        if cancelled:
            self.cancelled.append(cancelled)
        if v.action == "decide":
            self.decided.append((v.command, at))
        return v.action

    def commit(self, now: float) -> None:
        done = self.gate.due(now)
        if done:
            self.decided.append((done, now))

    def type(self, text: str, start: float, gap: float) -> float:
        t = start
        for ch in text:
            self.key(ch, t)
            t += gap
        return t


@pytest.mark.parametrize("gap", [0.05, 0.1, 0.2, 0.3, 0.45])
def test_typing_a_sentence_decides_nothing(gap):
    """5-20 keys a second, starting well after the preview: none of "can you stop" (nor
    the y of "you", nor the n of "can", nor the a) decides."""
    t = Typist(shown_at=0.0)
    end = t.type("can you stop", start=3.0, gap=gap)
    t.commit(end + 10)
    assert t.decided == []


@pytest.mark.parametrize("text", ["you should not", "no wait", "yes", "never mind"])
def test_a_sentence_that_starts_with_a_decision_letter_decides_nothing(text):
    """The first letter comes after a pause, so rules 1-3 let it through; the next letter
    within HOLD makes it the start of a word."""
    t = Typist(shown_at=0.0)
    end = t.type(text, start=5.0, gap=HOLD * 0.8)
    t.commit(end + 10)
    assert t.decided == [] and t.cancelled


def test_a_sentence_typed_before_the_preview_was_drawn_decides_nothing():
    t = Typist(shown_at=None)
    t.type("can you stop", start=0.0, gap=0.1)
    t.gate.shown(1.25)
    t.type(" yyy", start=1.3, gap=0.1)  # typed on, right after it appeared
    t.commit(100)
    assert t.decided == []


def test_a_paste_or_a_terminal_reply_decides_nothing():
    t = Typist(shown_at=0.0)
    for i, key in enumerate(["meta ]", "1", "1", ";", "r", "g", "b", "y", "n", "a", "meta \\"]):
        assert t.key(key, 5.0, alone=False) == "explain", i
    t.commit(100)
    assert t.decided == []


def test_after_typing_the_gate_rearms_after_a_pause():
    t = Typist(shown_at=0.0)
    t.type("hmm", start=2.0, gap=0.1)  # last key at 2.2
    assert not t.gate.ready(2.2 + QUIET - 0.01)
    assert t.key("y", 2.2 + QUIET - 0.01) == "explain"  # too soon: and it re-starts the wait
    y_at = 2.2 + 2 * QUIET + 0.001
    assert t.gate.ready(y_at)
    assert t.key("y", y_at) == "hold"
    t.commit(y_at + HOLD - 0.01)
    assert t.decided == []
    t.commit(y_at + HOLD + 0.001)
    assert t.decided == [("approve", y_at + HOLD + 0.001)]


def test_a_deliberate_y_n_or_esc_decides_with_one_key():
    for key, command in (("y", "approve"), ("n", "reject"), ("esc", "stop_turn"), ("ctrl c", "stop_turn")):
        t = Typist(shown_at=0.0)
        t.key(key, 1.0)
        t.commit(1.5)
        assert t.decided == [(command, 1.0 if command == "stop_turn" else 1.5)], key


def test_scrolling_is_not_typing_and_does_not_cancel_a_held_y():
    t = Typist(shown_at=0.0)
    assert t.key("page up", 2.0) == "pass"
    assert t.key("y", 2.05) == "hold"
    assert t.key("page down", 2.1) == "pass"
    t.commit(2.5)
    assert t.decided == [("approve", 2.5)]


def test_esc_right_after_a_y_stops_instead():
    t = Typist(shown_at=0.0)
    t.key("y", 2.0)
    assert t.key("esc", 2.1) == "decide"
    t.commit(10)
    assert t.decided == [("stop_turn", 2.1)] and t.cancelled == ["approve"]


def test_always_needs_a_then_a_after_a_pause():
    t = Typist(shown_at=0.0)
    assert t.key("a", 2.0) == "step"
    assert t.gate.stepping(2.0 + ALWAYS_WINDOW) and not t.gate.stepping(2.0 + ALWAYS_WINDOW + 0.01)
    assert t.key("a", 2.1) == "explain"  # "aa" typed fast is typing; it also ends the step
    assert t.key("a", 3.0) == "step"  # so this a starts over
    assert t.key("a", 4.0) == "hold"
    t.commit(4.5)
    assert t.decided == [("approve_always", 4.5)]


def test_a_then_another_key_forgets_the_a():
    t = Typist(shown_at=0.0)
    t.key("a", 2.0)
    t.key("x", 3.0)
    assert t.key("a", 4.0) == "step"
    t.key("a", 4.0 + ALWAYS_WINDOW + 0.1)  # too late for the second a: it asks again
    t.commit(100)
    assert t.decided == []


def test_y_after_a_approves_once():
    t = Typist(shown_at=0.0)
    t.key("a", 2.0)
    assert t.key("y", 3.0) == "hold"
    t.commit(10)
    assert t.decided == [("approve", 10)]


def test_keys_before_a_confirmation_count_as_typing():
    gate = ConfirmGate()
    gate.typed(1.0)  # typing in the prompt while the answer streams
    gate.open()
    gate.shown(1.0)
    v, _ = gate.key("approve", "y", 1.5, True)
    assert (v.action, v.reason) == ("explain", "typing")
    assert not gate.ready(1.5 + QUIET - 0.01) and gate.ready(1.5 + QUIET + 0.01)


def test_notices_name_the_keys_that_decide():
    for key, kw in (("x", {}), ("x", {"last_key_at": 9.9}), ("y", {"shown_at": 9.9}), ("y", {"alone": False})):
        v = judge(cmd(key), key, now=10.0, shown_at=kw.get("shown_at", 5.0),
                  last_key_at=kw.get("last_key_at", NEVER), alone=kw.get("alone", True))
        assert "y" in v.notice and "n" in v.notice, v
