"""The too-small notice (dashfloat/ui/toosmall.py): the longest wording that fits, centred."""

from __future__ import annotations

import pytest

from dashfloat.ui.toosmall import MIN_COLS, MIN_ROWS, notice_lines, too_small


@pytest.mark.parametrize(
    ("cols", "rows", "shown"),
    [
        (19, 4, ["terminal too small:", "19x4, need at least", "20x5"]),
        (60, 1, [f"terminal too small: 60x1, need at least {MIN_COLS}x{MIN_ROWS}"]),
        (10, 3, ["too small:", "10x3, need", "20x5"]),
        (19, 1, ["too small: 19x1"]),
        (5, 2, ["too", "small"]),
        (9, 1, ["too small"]),
        (3, 1, ["3x1"]),
        (2, 2, ["!"]),
        (1, 1, ["!"]),
    ],
)
def test_the_longest_wording_that_fits(cols, rows, shown):
    lines = notice_lines(cols, rows)
    assert len(lines) == rows and all(len(line) == cols for line in lines)
    assert [line.strip() for line in lines if line.strip()] == shown


def test_centred_both_ways():
    lines = notice_lines(30, 4)
    assert lines == ["                              ",
                     "terminal too small: 30x4, need",
                     "        at least 20x5         ",
                     "                              "]


@pytest.mark.parametrize(("cols", "rows"), [(0, 0), (0, 5), (40, 0)])
def test_no_cell_no_notice(cols, rows):
    assert notice_lines(cols, rows) == []


@pytest.mark.parametrize(("cols", "rows", "small"), [
    (MIN_COLS, MIN_ROWS, False), (MIN_COLS - 1, 24, True), (80, MIN_ROWS - 1, True), (1, 1, True), (0, 0, True),
    (200, 60, False),
])
def test_too_small(cols, rows, small):
    assert too_small(cols, rows) is small


def test_every_size_up_to_the_minimum_has_a_notice_that_fits():
    for cols in range(1, MIN_COLS + 1):
        for rows in range(1, MIN_ROWS + 1):
            lines = notice_lines(cols, rows)
            assert len(lines) == rows and all(len(line) == cols for line in lines), (cols, rows)
            assert any(line.strip() for line in lines), (cols, rows)
