"""A terminal that goes away mid-frame is a hangup, never a crash (issue 8 §7): the write
that meets it is not an optimisation's failure, the agent is told "hangup", and a tools
module the agent is still importing does not break the exit."""

from __future__ import annotations

import errno
import logging
import os
import sys
import types

import pytest

from dashfloat import messages as M
from dashfloat.hangup import hung_up
from dashfloat.history import History
from dashfloat.ui.app import App
from dashfloat.ui.bridge import Outbox
from tests.screen_oracle import FakeAgent, OracleSession


def run_app(raising: BaseException | None):
    """App.run around a loop whose run() raises `raising`; the agent's messages."""
    agent = FakeAgent()
    app = App(agent=agent, outbox=Outbox(), model_name="m", ascii=False, depth=256, history=History(None))

    class Loop:
        after_first_frame = None

        def run(self):
            if raising is not None:
                raise raising

    app.loop = Loop()
    r, w = os.pipe()
    app._sig_fd = w
    try:
        app.run()
    finally:
        os.close(r)
        os.close(w)
    return app, agent.sent


@pytest.fixture
def stdin_is_no_tty(monkeypatch):
    """(hung_up asks the terminal: here stdin is a pipe, which answers no tty call)"""
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(r))
    yield
    os.close(w)


def test_an_io_error_from_a_gone_terminal_is_a_hangup(stdin_is_no_tty):
    app, sent = run_app(OSError(errno.EIO, "Input/output error"))
    assert app.quit_reason == "hangup"
    assert (M.QUIT, "hangup") in sent


def test_another_os_error_is_not_taken_for_a_hangup(stdin_is_no_tty):
    with pytest.raises(OSError, match="No space"):
        run_app(OSError(errno.ENOSPC, "No space left on device"))


def test_a_tools_module_still_being_imported_does_not_break_the_exit(monkeypatch):
    """A hangup 0.2 s after start, while the agent imports its tools: the exit looked for
    kill_all on the half-made module (AttributeError: "dashfloat crashed", status 1)."""
    monkeypatch.setitem(sys.modules, "dashfloat.tools.exec", types.ModuleType("dashfloat.tools.exec"))
    app, sent = run_app(None)
    assert sent[-1] == (M.QUIT,)


def test_a_frame_written_to_a_gone_terminal_raises_without_a_fallback(caplog):
    s = OracleSession(40, 8)
    try:
        s.app.model.system("info", "first")
        s.app.refresh()
        s.draw()

        def gone(_data):
            raise OSError(errno.EIO, "Input/output error")

        s.out.write = gone
        s.app.model.system("info", "second")
        s.app.refresh()
        with caplog.at_level(logging.ERROR), pytest.raises(OSError):
            s.draw()
        assert s.screen.fallbacks == 0, "a terminal's failure was taken for the optimisation's"
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        s.out.write = lambda data: None
        s.close()


def test_hung_up_reads_the_whole_chain(stdin_is_no_tty):
    fd = sys.stdin.fileno()
    try:
        try:
            raise OSError(errno.EIO, "gone")
        except OSError as inner:
            raise RuntimeError("while drawing") from inner
    except RuntimeError as outer:
        assert hung_up(outer, fd)
    assert not hung_up(ValueError("bug"), fd)
    assert not hung_up(OSError(errno.ENOSPC, "full"), fd)
