"""dashfloat/priority.py: the stream's parsing steps aside while the UI thread is awake, for
at most MAX_WAIT, then runs at least MIN_RUN before it steps aside again."""

from __future__ import annotations

import threading
import time

import pytest

from dashfloat import priority


@pytest.fixture(autouse=True)
def calm(monkeypatch):
    priority.done()
    monkeypatch.setattr(priority, "_run_until", 0.0)
    yield
    priority.done()


def aside_in_thread():
    """step_aside() in a thread of its own; (returned event, [its answer])."""
    returned, answer = threading.Event(), []

    def run():
        answer.append(priority.step_aside())
        returned.set()

    threading.Thread(target=run, daemon=True).start()
    return returned, answer


class CountingFree:
    """priority._free that counts the waits (and never blocks): whether step_aside waited
    is then a count, not a time."""

    def __init__(self, ready: bool):
        self.waits, self.ready = 0, ready

    def wait(self, timeout=None) -> bool:
        self.waits += 1
        return self.ready

    def set(self) -> None:
        self.ready = True

    def clear(self) -> None:
        self.ready = False


def test_nothing_waits_while_the_ui_sleeps(monkeypatch):
    spy = CountingFree(ready=True)
    monkeypatch.setattr(priority, "_free", spy)
    assert priority.step_aside() is False
    assert spy.waits == 0


def test_the_stream_waits_until_the_ui_is_done(monkeypatch):
    monkeypatch.setattr(priority, "MAX_WAIT", 30.0)
    priority.busy()
    returned, answer = aside_in_thread()
    assert not returned.wait(0.2)  # still waiting: the UI is awake
    priority.done()
    assert returned.wait(5)
    assert answer == [True]


def test_a_ui_that_never_says_done_costs_one_wait_then_a_run(monkeypatch):
    monkeypatch.setattr(priority, "MAX_WAIT", 0.05)
    monkeypatch.setattr(priority, "MIN_RUN", 30.0)
    priority.busy()
    t0 = time.monotonic()
    assert priority.step_aside() is True
    assert 0.05 <= time.monotonic() - t0 < 5
    spy = CountingFree(ready=False)
    monkeypatch.setattr(priority, "_free", spy)
    for _ in range(1000):  # within MIN_RUN: no more waits, however many events
        assert priority.step_aside() is False
    assert spy.waits == 0
    assert priority.is_busy()  # the UI's own state is left as it said


def test_the_run_ends_and_the_stream_steps_aside_again(monkeypatch):
    monkeypatch.setattr(priority, "MAX_WAIT", 0.02)
    monkeypatch.setattr(priority, "MIN_RUN", 0.05)
    priority.busy()
    assert priority.step_aside() is True  # waited MAX_WAIT: a run of MIN_RUN begins
    end = priority._run_until
    assert priority.step_aside() is False
    while time.monotonic() < end:
        time.sleep(0.005)
    t0 = time.monotonic()
    assert priority.step_aside() is True
    assert time.monotonic() - t0 >= 0.02
