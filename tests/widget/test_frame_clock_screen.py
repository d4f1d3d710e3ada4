"""DashScreen's side of the frame clock (ui/frameclock.py, ui/screen.py): the question goes
out with a frame, the answer never reaches the app as a key, and an answer still on its way
when the screen stops is waited for, so it does not land in the shell's input."""

from __future__ import annotations

import os
import threading
import time

from dashfloat.ui.screen import DashScreen


class _Out:
    def __init__(self):
        self.data = []

    def write(self, s):
        self.data.append(s)

    def flush(self):
        pass


def _screen():
    r, w = os.pipe()
    screen = DashScreen(input=os.fdopen(r, "rb", buffering=0), output=_Out())
    return screen, w


def _asked(screen, now: float) -> None:
    """The clock as after a frame that carried a question, the terminal known to answer."""
    screen.clock.ask(now - 1)
    screen.clock.answer(now - 0.99)
    assert screen.clock.ask(now)


def test_an_answer_on_its_way_when_the_screen_stops_is_read_and_dropped():
    screen, w = _screen()
    _asked(screen, time.monotonic())
    timer = threading.Timer(0.15, os.write, (w, b"\x1b[24;3R"))
    timer.start()
    start = time.monotonic()
    screen._await_answer()
    took = time.monotonic() - start
    assert 0.1 <= took < 0.5, took  # waited for it, no longer
    assert screen.clock.sent_at is None
    os.write(w, b"x")  # nothing of the answer is left to read: the next byte is the next one
    assert os.read(screen._input_fileno(), 16) == b"x"
    os.close(w)


def test_no_answer_waits_at_most_the_clocks_wait_and_a_silent_terminal_not_at_all():
    screen, w = _screen()
    _asked(screen, time.monotonic())
    start = time.monotonic()
    screen._await_answer()
    assert time.monotonic() - start < min(1.0, screen.clock.timeout()) + 0.3
    never, w2 = _screen()
    never.clock.ask(time.monotonic())  # asked, but no answer ever came: no wait
    start = time.monotonic()
    never._await_answer()
    assert time.monotonic() - start < 0.05
    os.close(w)
    os.close(w2)


def test_answers_are_taken_out_of_the_input_keys_stay():
    screen, w = _screen()
    screen.clock.ask(time.monotonic(), (2, 22))
    # a report for row 1 (ESC[1;5R, decoded as Ctrl-F3) while an answer may come is dropped,
    # and so is a report from elsewhere than the question was asked: neither answers it
    assert screen._apply_terminal_reports(["a", "ctrl f3", ("cursor position", 4, 11), "b"]) == ["a", "b"]
    assert screen.clock.answers == 0 and screen.clock.sent_at is not None
    assert screen._apply_terminal_reports([("cursor position", 2, 22), "y"]) == ["y"]
    assert screen.clock.answers == 1 and screen.clock.sent_at is None
    late = screen._apply_terminal_reports([("cursor position", 0, 5), "y"])
    assert late == ["y"]  # a late answer is never a key (nor a decision)
    assert screen._apply_terminal_reports(["ctrl f3"]) == ["ctrl f3"]  # no answer due: a key
    os.close(w)
