"""The whole preview's title row (ui/pager.py title_row): at any width the way back (q) and
where the view is stay on screen; the paging keys give way before the title is cut short."""

from __future__ import annotations

import pytest
import urwid

from dashfloat.ui.pager import title_row

LONG = "write_file src/dashfloat/very/long/path/to/the/module.py (12.4 KB)"
WHERE = " lines 1-20 of 2,000 · row 126/250"


@pytest.mark.parametrize(("title", "cols", "expected"), [
    ("edit_file a.py", 120, "edit_file a.py · lines 1-20 of 2,000 · row 126/250 · PgUp/PgDn Home/End · q back "),
    ("edit_file a.py", 80, "edit_file a.py · lines 1-20 of 2,000 · row 126/250 · PgUp/PgDn · q back "),
    ("edit_file a.py", 60, "edit_file a.py · lines 1-20 of 2,000 · row 126/250 · q back "),
    (LONG, 120, "write_file src/dashfloat/very/long/path/to/the/modul… · lines 1-20 of 2,000 · row 126/250"
                " · PgUp/PgDn Home/End · q back "),
    (LONG, 80, "write_file src/dashfloat/very/lon… · lines 1-20 of 2,000 · row 126/250 · q back "),
    (LONG, 60, "write_file sr… · lines 1-20 of 2,000 · row 126/250 · q back "),
])
def test_the_title_row_keeps_the_way_back(title, cols, expected):
    row = title_row(title, WHERE, cols)
    assert row == expected
    assert urwid.calc_width(row, 0, len(row)) <= cols


def test_wide_characters_are_measured_in_columns():
    title = "写入 文件 很长的 名字 在这里 真的 很长 非常 长的 路径.py"
    for cols in (120, 80, 60):
        row = title_row(title, WHERE, cols)
        assert " · row 126/250 · " in row and row.endswith(" q back ") and urwid.calc_width(row, 0, len(row)) <= cols


def test_too_narrow_for_where_and_the_way_back_the_row_is_whole_for_urwid_to_end_in_an_ellipsis():
    assert title_row(LONG, WHERE, 40) == f"{LONG} ·{WHERE} · q back "
