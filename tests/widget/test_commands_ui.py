"""Slash commands in the front end (issue 10 section 5): Tab completion of a command's name, a
pure function of the prompt's text and the command table, then the key in the app; /quit at
once, even while a turn runs; ("leave",) from the agent; the metering figure in the status bar."""

from __future__ import annotations

import pytest
import urwid
from urwid.testing import press

from dashfloat import commands
from dashfloat import messages as M
from dashfloat.ui import keymap
from tests.widget.test_app_widgets import feed, make_app, screen

NAMES = [c.name for c in commands.COMMANDS]


@pytest.mark.parametrize("text, cursor, expected", [
    ("/us", 3, commands.Completion("/usage ", 7)),
    ("/Us", 3, commands.Completion("/usage ", 7)),
    ("/u", 2, commands.Completion("/u", 2, ("/usage", "/undo"))),
    ("/qu", 3, commands.Completion("/quit ", 6)),
    ("/perm x", 5, commands.Completion("/permissions x", 12)),  # the rest is kept, its space too
    ("/mo", 3, commands.Completion("/mode", 5, ("/model", "/mode"))),  # their common start
    ("/mode", 5, commands.Completion("/mode", 5, ("/model", "/mode"))),  # both still fit: listed
    ("/model", 6, commands.Completion("/model ", 7)),
    ("/", 1, commands.Completion("/", 1, tuple("/" + n for n in NAMES))),
])
def test_completion_is_a_function_of_the_text_and_the_table(text, cursor, expected):
    assert commands.complete(text, cursor) == expected


@pytest.mark.parametrize("text, cursor", [
    ("hello", 5),  # not a command
    (" /us", 4),  # a leading space: a prompt
    ("/xyz", 4),  # no command starts so
    ("/etc/ho", 7),  # a path
    ("/us", 2),  # inside the word
    ("/usage now", 10),  # after the first word
    ("", 0),
    ("/1", 2),
])
def test_nothing_to_complete(text, cursor):
    assert commands.complete(text, cursor) is None


def test_tab_in_the_prompt_completes_and_lists_the_choices():
    assert keymap.lookup(("prompt",), "tab") == "complete"
    app = make_app()
    press(app.root, (80, 24), "/", "u", "s", "tab")
    assert app.prompt.edit_text == "/usage " and app.prompt.edit_pos == 7
    press(app.root, (80, 24), "enter")
    assert app.agent.sent == [(M.PROMPT, "/usage ")]
    app.prompt.replace("")
    press(app.root, (80, 24), "/", "m", "o", "tab")
    assert app.prompt.edit_text == "/mode"
    assert "/model  /mode" in screen(app)[-2]  # the names that fit, in the status bar
    press(app.root, (80, 24), "l", "tab")
    assert app.prompt.edit_text == "/model " and "/model  /mode" not in screen(app)[-2]


def test_tab_with_nothing_to_complete_changes_nothing():
    app = make_app()
    press(app.root, (80, 24), *"hello", "tab")
    assert app.prompt.edit_text == "hello"


def test_quit_command_leaves_at_once_even_while_a_turn_runs():
    app = make_app()
    feed(app, (M.PHASE, "streaming"))
    with pytest.raises(urwid.ExitMainLoop):
        press(app.root, (80, 24), *"/quit", "enter")
    assert app.agent.sent == [(M.QUIT,)]


def test_the_agents_leave_message_ends_the_loop():
    app = make_app()
    with pytest.raises(urwid.ExitMainLoop):
        app.apply((M.LEAVE,))


def test_the_status_bar_shows_the_totals_and_budgets():
    app = make_app()
    feed(app, (M.METER, {"tokens": 48_200, "estimated": False, "requests": 3, "cost": 0.031,
                         "max_tokens": 100_000, "max_cost": 0.5, "max_turns": None}))
    assert "used 48.2k/100k tok $0.0310/$0.50" in screen(app, (120, 24))[-2]
    feed(app, (M.STOPPED, "budget", {"budget": "max_tokens"}))  # applied quietly: its entry says it
