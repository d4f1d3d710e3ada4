"""The screen oracle (tests/screen_oracle.py): after every frame of a session, the terminal
DashFloat's bytes produce equals a full repaint of the same canvas, characters, renditions
and cursor. Scenarios from real use first, then randomised sessions in four terminals:
CR LF rows, LF rows (ONLCR), synchronized output (DECRQM 2026 confirmed), a terminal
that keeps the scrolling margins across a resize, and one that answers the frame clock's
questions over a link that is behind (frames held and skipped)."""

from __future__ import annotations

import os

import pytest

from dashfloat import messages as M
from tests.fakeserver import markdown_answer
from tests.screen_oracle import OracleSession, random_session

TERMINALS = {
    "crlf": {},
    "onlcr": {"newline": "\n"},
    "sync": {"sync": True},
    "sticky-margins": {"keep_margins_on_resize": True},
    "answering-link": {"answers": True},
}


def answer(s: OracleSession, tokens: int = 400, per_frame: int = 12) -> None:
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    pieces = markdown_answer(tokens)
    for i in range(0, len(pieces), per_frame):
        s.do("tokens", pieces[i : i + per_frame])
    s.do("msg", (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))


@pytest.mark.parametrize("terminal", TERMINALS)
def test_a_prompt_after_the_transcript_scrolled_leaves_no_status_bar_copy(terminal):
    """The issue's case: each prompt after a scrolled answer left a copy of the status bar
    in the transcript (a line feed on the region's bottom margin scrolled it)."""
    s = OracleSession(80, 24, **TERMINALS[terminal])
    s.draw()
    for _ in range(3):
        answer(s)
        s.do("key", *"again")
        s.do("key", "enter")
        s.do("msg", (M.USER, "again"), (M.PHASE, "waiting"))
        assert sum(" waiting " in line or " idle " in line for line in s.term.display) == 1
        s.do("msg", (M.ASSISTANT_START,), (M.ASSISTANT_END, "cancelled"), (M.PHASE, "idle"))
    s.close()


@pytest.mark.parametrize("terminal", TERMINALS)
def test_a_multi_line_prompt_on_a_full_screen(terminal):
    s = OracleSession(80, 24, **TERMINALS[terminal])
    s.draw()
    answer(s)
    for word in ("one", "two", "three", "four"):
        s.do("key", *word, "meta enter")
    s.do("paste", "pasted\nlines\nhere\n")
    s.do("key", "ctrl u")
    s.do("key", "backspace")
    answer(s, tokens=100)
    s.close()


@pytest.mark.parametrize("terminal", TERMINALS)
def test_a_prompt_typed_into_the_bottom_right_cell_and_past_it(terminal):
    """The prompt is the last row: while its last cell stays blank, DashFloat's own writer
    draws each key; the key that fills the bottom-right cell is urwid's (its corner trick),
    then the prompt wraps. Every frame equals a full repaint, typed and erased again."""
    s = OracleSession(40, 12, **TERMINALS[terminal])
    s.draw()
    answer(s, tokens=60)
    for ch in "x" * 90:
        s.do("key", ch)
    assert s.term.display[-1].startswith("  xxx")  # wrapped onto a row of its own
    for _ in range(90):
        s.do("key", "backspace")
    s.close()


def test_with_synchronized_output_a_frame_of_many_rows_is_bracketed_and_an_echo_is_not():
    """Where the terminal confirmed synchronized output, a frame that writes more than one
    row is painted at once (as urwid's own frames are); a key's echo (one row) is not
    worth the 16 bytes."""
    s = OracleSession(80, 24, sync=True)
    s.draw()
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    s.do("tokens", ["First paragraph.\n\nSecond paragraph, ", "with more.\n\n- a\n- b\n"])
    frame = s.out.frames[-1]
    assert frame.startswith("\x1b[?2026h") and frame.count("\x1b[?2026l") == 1, frame
    s.do("msg", (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    s.do("key", "x")
    assert "\x1b[?2026" not in s.out.frames[-1] and "x" in s.out.frames[-1]
    s.close()


def test_a_key_typed_at_the_prompt_is_drawn_without_urwids_whole_frame(monkeypatch):
    """An echo is the frame a person waits for: it writes the one changed cell and the
    cursor, without urwid's pass over every row of the screen."""
    import urwid

    s = OracleSession(80, 24)
    s.draw()
    answer(s, tokens=60)
    whole = []
    base = urwid.display.raw.Screen.draw_screen
    monkeypatch.setattr(urwid.display.raw.Screen, "draw_screen",
                        lambda self, size, canvas: whole.append(size) or base(self, size, canvas))
    for ch in "make it so":
        s.do("key", ch)
        assert len(s.out.frames[-1]) <= 30, s.out.frames[-1]
    s.do("key", "backspace")
    assert not whole
    assert s.term.display[-1].startswith("❯ make it s ")
    s.close()


@pytest.mark.parametrize("terminal", TERMINALS)
@pytest.mark.parametrize("small", [(30, 8), (60, 6), (20, 5)])
def test_shrinking_during_a_stream_and_back(terminal, small):
    """Shrinking to 30x8 or 60x6 during a stream and back to 80x24 left wrong lines and
    no prompt until Ctrl-L."""
    s = OracleSession(80, 24, **TERMINALS[terminal])
    s.draw()
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    pieces = markdown_answer(600)
    for i in range(0, len(pieces), 10):
        s.do("tokens", pieces[i : i + 10])
        if i == 200:
            s.do("resize", *small)
        if i == 400:
            s.do("resize", 80, 24)
    s.do("msg", (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    assert s.term.display[-1].startswith("❯")
    s.close()


def test_scrolling_back_and_forth_while_streaming_and_suspending():
    s = OracleSession(80, 24)
    s.draw()
    answer(s, tokens=200)
    s.do("msg", (M.USER, "more"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    pieces = markdown_answer(300)
    keys = ["page up", "page up", "meta down", "page down", "home", "end", "f1", "esc", "meta up"]
    for i in range(0, len(pieces), 10):
        s.do("tokens", pieces[i : i + 10])
        s.do("key", keys[(i // 10) % len(keys)])
        if i % 100 == 0:
            s.do("suspend")
    s.close()


@pytest.mark.parametrize("terminal", ["crlf", "sync"])
@pytest.mark.parametrize("fenced", [False, True])
def test_a_long_line_that_arrives_at_once_is_drawn_exactly_in_parts(terminal, fenced):
    """200 KB on one line between two frames, then the lines after it, then the end: the
    line is made visible a FRAME_BUDGET at a time (issue 16), a frame after each part,
    with keys that scroll meanwhile; every frame equals a full repaint."""
    import base64
    import random

    rnd = random.Random(16)
    s = OracleSession(80, 24, **TERMINALS[terminal])
    s.draw()
    s.do("msg", (M.USER, "run"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    line = base64.b64encode(rnd.randbytes(150_000)).decode()
    s.do("tokens", ["```\n" * fenced + "A first line.\n" + line])
    keys = ["page up", "page down", "end"]
    parts = 0
    while s.app.model.current.behind:
        s.do("tokens", [])  # the next part (App._catch_up)
        s.do("key", keys[parts % 3])
        parts += 1
    s.do("tokens", ["x" * 100_000 + "\nafter\n" + "```\n" * fenced + "\nThe end."])
    while s.app.model.current.behind:
        s.do("tokens", [])
        parts += 1
    s.do("msg", (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    s.do("key", "end")
    assert parts >= 4
    assert "The end." in "".join(s.term.display)
    s.close()


# `make oracle` runs many more (DASHFLOAT_ORACLE_SEEDS=400: 2,000 sessions, ~570,000 frames)
SEEDS = int(os.environ.get("DASHFLOAT_ORACLE_SEEDS", "8"))


@pytest.mark.parametrize("terminal", TERMINALS)
@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_sessions_equal_a_full_repaint_after_every_frame(terminal, seed):
    s = random_session(seed * 7 + len(terminal), steps=150, **TERMINALS[terminal])
    assert s.frames + s.held > 150  # every step drew a frame, or the clock held it
    if s.answers:
        assert s.held > 0 and s.frames > 50  # frames were held and skipped, and drawn later


def test_frames_held_for_a_late_answer_are_skipped_and_the_next_one_is_whole():
    """PgUp held on a slow link: while the terminal has not answered, no frame is written;
    the frame after the answer draws the newest state (and equals a full repaint)."""
    s = OracleSession(80, 24, answers=True)
    s.draw()
    s.deliver()  # the terminal answers the first frame: the clock is on
    answer(s, tokens=600, per_frame=40)
    s.deliver()
    written, held = len(s.out.frames), s.held
    for _ in range(10):
        s.do("key", "page up")  # no answer yet: held, nothing written
    assert len(s.out.frames) == written + 1  # the first PgUp's frame alone
    assert s.held == held + 9
    s.deliver()
    s.draw()  # the answer came: the newest state in one frame
    assert len(s.out.frames) == written + 2
    s.now += 10  # an answer that never comes holds frames no longer than the clock's wait
    s.do("key", "page down")
    assert len(s.out.frames) == written + 3
    s.close()


def test_the_direct_reference_equals_the_emulators_full_paint():
    """expected_cells (the fast reference) leaves what pyte leaves for the same rows,
    wide characters, combining marks, control bytes and renditions included."""
    import random

    from pyte.screens import wcwidth
    from urwid.display.common import UNPRINTABLE_C1_TRANS_TABLE, UNPRINTABLE_TRANS_TABLE

    from tests.screen_oracle import buffer_cells, expected_cells, full_paint
    from tests.widget.test_screen_writer import ESCAPES, escape_of

    rnd = random.Random(5)
    alphabet = ["a", "b", " ", "─", "❯", "界", "e\u0301", "\x07", "\x9b", "é", "😀", "\t"]
    for _ in range(300):
        cols = rnd.randint(4, 30)
        rows = []
        for _y in range(3):
            runs, width = [], 0
            while True:
                text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 5)))
                shown = text.encode().translate(UNPRINTABLE_TRANS_TABLE).decode()
                w = sum(max(0, wcwidth(ch)) for ch in shown.translate(UNPRINTABLE_C1_TRANS_TABLE))
                if width + w > cols:
                    break
                runs.append((rnd.choice(list(ESCAPES)), None, text.encode()))
                width += w
            runs.append((None, None, b" " * (cols - width)))
            rows.append(runs)
        assert expected_cells(rows, cols, escape_of) == buffer_cells(full_paint(rows, cols, escape_of, None))


def test_a_closed_session_leaves_no_descriptor_open():
    """Hundreds of sessions run in one test process: each one's pipes and sockets (the
    loop's watch pipes, urwid's resize socket pair) are closed with it, or a later test's
    select() meets a descriptor over 1024."""
    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    OracleSession(80, 24).close()  # first-use imports and caches
    before = open_fds()
    for _ in range(3):
        s = OracleSession(80, 24)
        s.draw()
        s.close()
    assert open_fds() == before

