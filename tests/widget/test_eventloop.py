"""The kept selector (ui/eventloop.py): one selector for many passes of the loop, made again
whenever the watched files change, and the pass otherwise urwid's."""

from __future__ import annotations

import os

import pytest
import urwid

from dashfloat.ui.eventloop import KeptSelectorEventLoop


@pytest.fixture
def pipes():
    made = []

    def make():
        r, w = os.pipe()
        made.extend((r, w))
        return r, w

    yield make
    for fd in made:
        try:
            os.close(fd)
        except OSError:
            pass


def test_many_passes_share_one_selector(pipes):
    loop = KeptSelectorEventLoop()
    r, w = pipes()
    seen = []

    def readable():
        seen.append(os.read(r, 100))
        if len(seen) == 50:
            raise urwid.ExitMainLoop
        os.write(w, b"x")  # readable again at the next pass

    loop.watch_file(r, readable)
    os.write(w, b"x")
    loop.run()
    assert len(seen) == 50
    assert loop.selectors_made == 1  # (urwid's own loop makes one a pass: 50)


def test_a_descriptor_number_reused_by_a_new_pipe_is_watched(pipes):
    """A watch removed, its pipe closed, a new pipe with the same number watched: the kept
    selector must not be the old one (epoll forgot the closed file; the new one would
    never wake the loop)."""
    loop = KeptSelectorEventLoop()
    r1, w1 = pipes()
    got = []

    def first():
        os.read(r1, 10)
        loop.remove_watch_file(r1)
        os.close(r1)
        os.close(w1)
        r2, w2 = pipes()
        assert r2 == r1  # the lowest free number: the one just closed

        def second():
            got.append(os.read(r2, 10))
            raise urwid.ExitMainLoop

        loop.watch_file(r2, second)
        os.write(w2, b"second")

    def never():
        raise AssertionError("the new pipe never woke the loop")

    loop.watch_file(r1, first)
    os.write(w1, b"first")
    loop.alarm(5, never)
    loop.run()
    assert got == [b"second"]
    assert loop.selectors_made == 2


def test_a_replaced_callback_is_the_one_called(pipes):
    loop = KeptSelectorEventLoop()
    r, w = pipes()
    calls = []

    def old():
        calls.append("old")
        loop.watch_file(r, new)  # same descriptor, another callback

    def new():
        calls.append("new")
        raise urwid.ExitMainLoop

    def never():
        raise AssertionError(f"the new callback was never called: {calls}")

    loop.watch_file(r, old)
    os.write(w, b"x")
    loop.alarm(5, never)
    loop.run()
    assert calls == ["old", "new"]


def test_a_removed_watch_leaves_the_loop_quiet(pipes):
    """A watch removed while its pipe stays readable: a selector kept with it would wake
    every pass for nothing (the loop spinning at full CPU until the next change)."""
    loop = KeptSelectorEventLoop()
    r, w = pipes()
    os.write(w, b"x")  # readable, never read
    loop.watch_file(r, lambda: loop.remove_watch_file(r))
    passes = []
    one_pass = loop._loop

    def counted():
        passes.append(1)
        one_pass()

    loop._loop = counted

    def done():
        raise urwid.ExitMainLoop

    loop.alarm(0.05, done)
    loop.run()
    assert len(passes) < 10, len(passes)


def test_alarms_run_beside_a_descriptor_that_stays_readable(pipes):
    loop = KeptSelectorEventLoop()
    r, w = pipes()
    os.write(w, b"x" * 10)  # never read: readable at every pass
    reads = []
    loop.watch_file(r, lambda: reads.append(1))
    order = []

    def second():
        order.append(2)
        raise urwid.ExitMainLoop

    loop.alarm(0, lambda: order.append(1))
    loop.alarm(0.01, second)
    loop.run()
    assert order == [1, 2] and reads


def test_idle_callbacks_run_when_nothing_is_ready():
    loop = KeptSelectorEventLoop()
    idle = []

    def on_idle():
        idle.append(1)
        if len(idle) == 3:
            raise urwid.ExitMainLoop
        loop.alarm(0.001, lambda: None)  # something to do, then idle again

    loop.enter_idle(on_idle)
    loop.alarm(0, lambda: None)
    loop.run()
    assert len(idle) == 3


def test_the_pass_it_copies_is_urwids_own():
    """KeptSelectorEventLoop._loop is a copy of urwid's SelectEventLoop._loop (the same in
    5.0.1 and 5.1.0, the versions setup.cfg allows today) with the selector kept. If an
    urwid release changes that pass, this fails: copy the new one into ui/eventloop.py,
    keep the selector, and put the new digest here."""
    import hashlib
    import inspect
    import textwrap

    source = textwrap.dedent(inspect.getsource(urwid.SelectEventLoop._loop))
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == "b828a9f999f06e31", urwid.__version__


def test_the_loop_is_busy_while_awake_and_done_while_it_sleeps(pipes):
    """dashfloat/priority.py: the stream's parsing steps aside while the UI thread works,
    and only then: the loop says busy when select returns and done before it sleeps."""
    import threading
    import time

    from dashfloat import priority

    loop = KeptSelectorEventLoop()
    r, w = pipes()
    seen = []

    def wake_it():  # once the loop sleeps in its select, a byte wakes it
        deadline = time.monotonic() + 10
        while priority.is_busy() and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append(("asleep", not priority.is_busy()))
        os.write(w, b"x")

    def readable():
        os.read(r, 10)
        seen.append(("awake", priority.is_busy()))
        raise urwid.ExitMainLoop

    def first_alarm():
        seen.append(("alarm", priority.is_busy()))
        threading.Thread(target=wake_it, daemon=True).start()

    loop.watch_file(r, readable)
    loop.alarm(0, first_alarm)
    priority.done()
    try:
        loop.run()
    finally:
        priority.done()
    assert seen == [("alarm", True), ("asleep", True), ("awake", True)]
