"""urwid's select loop, with one selector kept for as long as the watched files stay the same.

urwid's SelectEventLoop builds a new epoll selector for every pass of the loop: create it,
register each watched descriptor, select, close. That is ~20 us of CPU a pass, and four
more system calls that each let the GIL go: while a streamer thread parses a fast server's
SSE, each is a chance for it to take the GIL and keep it for a switch interval, before the
key that woke the loop is even read. Here the selector is made once and made again only
when a watch is added, replaced or removed (every change goes through watch_file and
remove_watch_file), so a pass is one select. The pass itself is urwid 5's, unchanged:
alarms, idle callbacks, a watch removed by an earlier callback of the same pass; and
around the select the loop tells dashfloat/priority.py when it sleeps and when it wakes,
so that the stream's parsing steps aside while the UI thread works.
"""

from __future__ import annotations

import heapq
import selectors
import time
import typing

import urwid
from urwid._selectors import read_selector

from dashfloat import priority


class KeptSelectorEventLoop(urwid.SelectEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._selector: selectors.BaseSelector | None = None
        self.selectors_made = 0  # (for the tests: how many times the selector was built)

    def watch_file(self, fd, callback):
        self._drop_selector()
        return super().watch_file(fd, callback)

    def remove_watch_file(self, handle) -> bool:
        self._drop_selector()
        return super().remove_watch_file(handle)

    def _drop_selector(self) -> None:
        if self._selector is not None:
            self._selector.close()
            self._selector = None

    def run(self) -> None:
        try:
            super().run()
        finally:
            self._drop_selector()
            priority.done()  # a loop that has stopped holds nobody back

    def _loop(self) -> None:
        """One pass of the loop: urwid 5.1's SelectEventLoop._loop with the kept selector."""
        entering_idle = False
        ready: list[selectors.SelectorKey] = []
        if self._watch_files and self._selector is None:
            self._selector = read_selector(self._watch_files.items())
            self.selectors_made += 1
        selector = self._selector

        if self._alarms or self._did_something:
            timeout = 0.0
            if self._alarms:
                timeout = max(timeout, self._alarms[0][0] - time.monotonic())
            if self._did_something and (not self._alarms or timeout > 0):
                timeout = 0.0
                entering_idle = True
            if timeout > 0:
                priority.done()  # asleep: the stream's parsing may have the interpreter
            if selector is not None:
                ready = [event for event, _ in selector.select(timeout)]
            else:
                time.sleep(timeout)
        elif selector is not None:
            priority.done()
            ready = [event for event, _ in selector.select()]
        priority.busy()  # awake for a key, a message, an alarm or a frame: it goes first

        if not ready and entering_idle:
            self._entering_idle()
            self._did_something = False

        for record in ready:
            # an earlier callback of this pass may have removed or replaced the watch (and
            # closed its descriptor): looked up by the registered object, as urwid does
            watch_callback = self._watch_files.get(typing.cast("int", record.fileobj))
            if watch_callback is None or watch_callback is not record.data:
                continue
            watch_callback()
            self._did_something = True

        # a continuously readable descriptor must not keep expired alarms from running
        if self._alarms and self._alarms[0][0] <= time.monotonic():
            _alarm_time, _tie_break, alarm_callback = heapq.heappop(self._alarms)
            alarm_callback()
            self._did_something = True
