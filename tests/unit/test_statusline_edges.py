"""The status bar's markup (dashfloat/ui/statusline.py) entry by entry: what each piece of
state adds, which key hints each phase offers, how the padding fills the width exactly (the
hints only while one column or more is left over), and meter_near at its bounds."""

from __future__ import annotations

import pytest

from dashfloat.ui.statusline import meter_near, status_markup

SUBMIT = "Enter send · Alt-Enter newline · F1 help "


def bar(**state) -> list:
    """status_markup with a quiet idle state, overridden by `state`."""
    base = dict(phase="idle", spinner="*", model="m", tokens=None, position=None, notice="", width=120, sep="|")
    return status_markup(**{**base, **state})


def entries(markup: list) -> list:
    """The markup less its padding and hints (the entries the state adds)."""
    return [e for e in markup if e[0] != "status_hint" and e[1].strip()]


def hints(markup: list) -> str | None:
    found = [t for a, t in markup if a == "status_hint"]
    return found[0] if found else None


def test_an_idle_bar_exactly():
    """Only phase, separator and model, then the padding that makes the width, then the hints."""
    markup = bar(width=60)
    used = len("   idle ") + len("|") + len(" m ")
    assert markup == [("status_phase", "   idle "), ("status", "|"), ("status_model", " m "),
                      ("status", " " * (60 - used - len(SUBMIT))), ("status_hint", SUBMIT)]


@pytest.mark.parametrize("phase, spinner, shown", [
    ("idle", "*", "   idle "),  # the spinner only turns while something happens
    ("streaming", "*", " * streaming "),
    ("confirming", "/", " / confirming "),
])
def test_the_phase_entry(phase, spinner, shown):
    assert bar(phase=phase, spinner=spinner)[0] == ("status_phase", shown)


@pytest.mark.parametrize("state, added", [
    ({"model": None}, [("status_model", " no model ")]),
    ({"tokens": 12345}, [("status_model", " m "), ("status", "| ctx 12,345 tok ")]),  # not estimated by default
    ({"tokens": 7, "tokens_estimated": True}, [("status_model", " m "), ("status", "| ctx ~7 tok ")]),
    ({"position": (3, 10)}, [("status_model", " m "), ("status", "| line 3/10 ")]),
    ({"mode": "unrestricted"}, [("status_model", " m "), ("status_error", "| UNRESTRICTED: no confirmations ")]),
    ({"mode": "ask"}, [("status_model", " m ")]),
    ({"mode": "auto"}, [("status_model", " m "), ("status", "| mode auto ")]),
    ({"notice": "disk full"}, [("status_model", " m "), ("status_error", "| disk full ")]),
])
def test_what_each_piece_of_state_adds(state, added):
    assert entries(bar(**state)) == [("status_phase", "   idle "), ("status", "|"), *added]


def test_the_entries_come_in_order():
    markup = entries(bar(tokens=5, position=(1, 2), mode="plan", notice="n"))
    assert [t for _a, t in markup][3:] == ["| ctx 5 tok ", "| line 1/2 ", "| mode plan ", "| n "]


@pytest.mark.parametrize("state, shown", [
    ({"phase": "confirming"}, "y approve · a a always · n reject · Esc stop "),  # ready and session_rule by default
    ({"phase": "confirming", "session_rule": False}, "y approve · n reject · Esc stop "),
    ({"phase": "confirming", "ready": False}, "Esc stop "),  # a y or n would not count yet
    ({"phase": "confirming", "ready": False, "session_rule": False}, "Esc stop "),
    ({"phase": "waiting"}, "Esc cancel "),
    ({"phase": "streaming"}, "Esc cancel "),
    ({"phase": "running"}, "Esc cancel "),
    ({"phase": "running", "ready": False}, "Esc cancel "),  # `ready` is about a confirmation only
    ({"phase": "idle", "ready": False}, SUBMIT),
    ({"phase": "idle", "position": (4, 9)}, "End follow · F1 help "),  # scrolled back
    ({"phase": "idle"}, SUBMIT),
    ({"phase": "compacting"}, SUBMIT),
])
def test_the_hints_of_each_phase(state, shown):
    assert hints(bar(**state)) == shown


def test_the_hints_use_the_dot_given():
    assert hints(bar(dot="+")) == "Enter send + Alt-Enter newline + F1 help "


def used_by(**state) -> int:
    """The columns the entries take (the width at which nothing is left for padding)."""
    return sum(len(t) for _a, t in entries(bar(**state)))


@pytest.mark.parametrize("spare, padding, shown", [
    (10, 10, True),
    (1, 1, True),  # one column to spare: the hints, after one space
    (0, None, False),  # no column to spare: the hints would touch the entries
    (-1, None, False),
])
def test_the_hints_need_a_column_to_spare(spare, padding, shown):
    width = used_by() + len(SUBMIT) + spare
    markup = bar(width=width)
    assert (hints(markup) is not None) is shown
    assert sum(len(t) for _a, t in markup) == width  # the bar fills the width exactly
    if shown:
        assert markup[-2:] == [("status", " " * padding), ("status_hint", SUBMIT)]
    else:
        assert markup[-1] == ("status", " " * (width - used_by()))


@pytest.mark.parametrize("short", [0, 1, 5])
def test_a_bar_wider_than_the_screen_gets_no_padding(short):
    width = used_by(notice="a long notice") - short
    markup = bar(width=width, notice="a long notice")
    assert markup[-1] == ("status", "") and hints(markup) is None


@pytest.mark.parametrize("meter, near", [
    (None, False),
    ({}, False),
    ({"tokens": 79, "max_tokens": 100, "requests": 1}, False),
    ({"tokens": 80, "max_tokens": 100, "requests": 1}, True),  # exactly 80 %: the warning
    ({"cost": 0.4, "max_cost": 0.5, "requests": 1}, True),
    ({"cost": None, "max_cost": 0.5, "requests": 1}, False),  # no price yet: nothing used
    ({"requests": 0, "max_turns": 1}, False),  # a budget of one request, none made
    ({"requests": None, "max_turns": 1}, False),
    ({"requests": 1, "max_turns": 1}, True),
    ({"tokens": 10**6, "requests": 3}, False),  # no budget: never near
])
def test_meter_near(meter, near):
    assert meter_near(meter) is near


def test_a_near_budget_shows_as_a_warning_after_the_notice():
    meter = {"tokens": 80, "max_tokens": 100, "requests": 1, "cost": None}
    markup = entries(bar(meter=meter, notice="x"))
    assert markup[-2:] == [("status_error", "| x "), ("status_error", "| used 80/100 tok ")]
    assert entries(bar(meter={**meter, "tokens": 79}))[-1] == ("status", "| used 79/100 tok ")
