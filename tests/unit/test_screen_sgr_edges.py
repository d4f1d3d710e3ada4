"""The screen's pure helpers at their edges: where two canvas rows part (attribute or
charset changes, rows of different lengths, bytes at 0x7f/0x80 around the cut), the
SGR parameter groups (truncated 38/48, 38;5 without its index), every kind of colour
group, the SGR steps between colours and styles, and a scroll that spares exactly the
minimum number of rows."""

from __future__ import annotations

import pytest

from dashfloat.ui.screen import (
    RESET,
    _colour,
    _sgr_groups,
    best_shift,
    compact_sgr,
    row_divergence,
    sgr_step,
)

A_GRAVE = "\u00c0"  # UTF-8 c3 80: a character that ends on the byte 0x80
Y_ABC, Y_ABD = ("y", None, b"abc"), ("y", None, b"abd")


@pytest.mark.parametrize("old, new, expected", [
    # same attribute, other text: the cut is in the run and the run keeps its attribute
    ([Y_ABC], [Y_ABD], (2, [("y", None, b"d")])),
    # same bytes, the charset dropped: the whole run is rewritten
    ([(None, "0", b"qq")], [(None, None, b"qq")], (0, [(None, None, b"qq")])),
    # a charset anywhere in the new row: the whole row, from column 0
    ([(None, None, b"ab"), (None, None, b"cd")], [(None, None, b"ab"), (None, "0", b"qq")],
     (0, [(None, None, b"ab"), (None, "0", b"qq")])),
    # the new row has more runs: exactly those beyond the old ones
    ([(None, None, b"ab")], [(None, None, b"ab"), ("y", None, b"cd")], (2, [("y", None, b"cd")])),
    ([(None, None, b"ab"), ("y", None, b"cd")], [(None, None, b"ab")], (2, [])),
    # a character ending on 0x80 before the cut is not left behind
    ([(None, None, f"a{A_GRAVE}x".encode())], [(None, None, f"a{A_GRAVE}y".encode())],
     (0, [(None, None, f"a{A_GRAVE}y".encode())])),
    # DEL is ASCII: a cut right after it or right before it is fine
    ([(None, None, b"a\x7fx")], [(None, None, b"a\x7fy")], (2, [(None, None, b"y")])),
    ([(None, None, b"ab")], [(None, None, b"a\x7f")], (1, [(None, None, b"\x7f")])),
    # a stray 0x80 (not UTF-8; written as U+FFFD) stays with what precedes it too
    ([(None, None, b"ab")], [(None, None, b"a\x80")], (0, [(None, None, b"a\x80")])),
])
def test_row_divergence_edges(old, new, expected):
    """Only the bytes after the cut are rewritten, with the attribute and charset they had."""
    assert row_divergence(old, new) == expected


@pytest.mark.parametrize("seq, expected", [
    ("\x1b[0;38;5;196;48;2;1;2;3;1m", ["38;5;196", "48;2;1;2;3", "1"]),
    ("\x1b[0;4;5m", ["4", "5"]),  # a 5 after a style is blink, not a 256-colour index
    ("\x1b[0;93;38m", ["93", "38"]),  # a 38 cut off at the end
    ("\x1b[0;48m", ["48"]),
    ("\x1b[0;38;5m", ["38;5"]),  # the index missing: the group is what there is
    ("\x1b[0;38;1m", ["38", "1"]),  # 38 without 5 or 2 takes no arguments
    ("\x1b[0;93m\x1b[0;1m", None),  # two sequences
    ("\x1b[93m", None),  # no reset to build on
    ("\x1b[0;93H", None),
])
def test_sgr_groups(seq, expected):
    """sgr_step compares groups: a colour's arguments must never be read as styles."""
    assert _sgr_groups(seq) == expected


@pytest.mark.parametrize("group, kind", [
    *[(str(n), "fg") for n in (30, 37, 39, 90, 97)],
    ("38;5;196", "fg"), ("38;2;1;2;3", "fg"),
    *[(str(n), "bg") for n in (40, 41, 47, 49, 100, 107)],
    ("48;5;17", "bg"), ("48;2;1;2;3", "bg"),
    # styles: underline 4 is no background, 22 and 10 are no colours at all
    *[(str(n), "") for n in (1, 4, 5, 7, 9, 10, 22)],
])
def test_colour_kind_of_every_group(group, kind):
    """Only colours may be changed without a reset; a style taken for one would stick."""
    assert _colour(group) == kind


@pytest.mark.parametrize("seq, expected", [
    ("\x1b[0;39;1;49m", "\x1b[0;1m"),
    ("\x1b[0;38;5;39;48;5;49m", "\x1b[0;38;5;39;48;5;49m"),  # 39/49 as indexes stay
    ("\x1b[0;39;49m", RESET),
    ("\x1b[1m", "\x1b[1m"),  # not urwid's shape: as it is
])
def test_compact_sgr_edges(seq, expected):
    """Default colours go, a 256-colour index that reads 39 or 49 does not."""
    assert compact_sgr(seq) == expected


@pytest.mark.parametrize("state, seq, expected", [
    (RESET, "\x1b[0;1;4m", "\x1b[1;4m"),  # styles add freely to the default rendition
    ("\x1b[0;93;41m", "\x1b[0;95;42m", "\x1b[95;42m"),  # a background replaces a background
    ("\x1b[0;100m", "\x1b[0;107m", "\x1b[107m"),
    ("\x1b[0;48;5;17m", "\x1b[0;48;5;18m", "\x1b[48;5;18m"),
    ("\x1b[0;4m", "\x1b[0;44m", "\x1b[0;44m"),  # underline 4 must be reset, background 44 not
    ("\x1b[0;44m", "\x1b[0;4m", "\x1b[0;4m"),
    ("\x1b[0;93m", "\x1b[0;41m", "\x1b[0;41m"),  # 41;39 is longer than the reset
    ("\x1b[0;93m", "\x1b[1m", "\x1b[1m"),  # not urwid's shape: as it is
])
def test_sgr_step_between_colours_and_styles(state, seq, expected):
    """The step leaves the terminal in `seq`'s rendition, never longer than `seq`."""
    assert sgr_step(state, seq) == expected


def test_a_scroll_that_spares_exactly_the_minimum_is_taken():
    """Shifting by one makes three rows equal that were not: just worth the scroll."""
    assert best_shift(list("abcdx"), list("bcdyz"), 5) == 1
    assert best_shift(list("abcxx"), list("bcyzz"), 5) == 0  # two only
