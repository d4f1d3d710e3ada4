"""The screen writer's pure parts, checked on an emulated terminal (pyte): whatever rows
were on screen, render_rows' output leaves exactly the new rows, text and renditions."""

from __future__ import annotations

import random

import pyte
import pytest

from dashfloat.ui.screen import (
    RESET,
    render_rows,
    render_scrolling_rows,
    row_divergence,
    sgr_step,
)
from tests.xterm import XTerm

ESCAPES = {None: RESET, "y": "\x1b[0;93m", "b": "\x1b[0;1m", "u": "\x1b[0;4m", "g": "\x1b[0;92;1m",
           "k": "\x1b[0;97;44m"}  # k: a background (a code block's), which a scroll must not spread
COLS, ROWS = 32, 6


def escape_of(attr):
    return ESCAPES[attr]


def blank_row(cols=COLS):
    return [(None, None, b" " * cols)]


def make_row(parts, cols=COLS):
    """(attr, text) parts, padded with blanks to the width (wide characters count 2)."""
    from urwid.str_util import calc_width

    runs = [(a, None, t.encode()) for a, t in parts if t]
    width = sum(calc_width(r[2], 0, len(r[2])) for r in runs)
    assert width <= cols
    if width < cols:
        runs.append((None, None, b" " * (cols - width)))
    return runs


def terminal(onlcr=False):
    screen = pyte.Screen(COLS, ROWS)
    if onlcr:  # a tty that adds CR to LF: pyte's new-line mode does the same
        screen.set_mode(pyte.modes.LNM)
    return screen, pyte.Stream(screen)


def cells(screen):
    return [[(c.data, c.fg, c.bold, c.underscore) for c in (screen.buffer[y][x] for x in range(COLS))]
            for y in range(ROWS)]


def paint(rows):
    """A naive full paint of `rows` on a fresh terminal: the reference."""
    screen, stream = terminal()
    for y, row in enumerate(rows):
        stream.feed(f"\x1b[{y + 1};1H")
        for a, _cs, run in row:
            stream.feed(escape_of(a) + run.decode())
        stream.feed(RESET)
    return cells(screen)


def apply_steps(steps, newline="\r\n"):
    screen, stream = terminal(onlcr=newline == "\n")
    old = [blank_row() for _ in range(ROWS)]
    for rows in steps:
        changes = [(y, old[y], rows[y]) for y in range(ROWS) if old[y] != rows[y]]
        text, state, drawn = render_rows(changes, escape_of, newline)
        stream.feed(text + ("" if state == RESET else RESET))
        assert sorted(drawn) == [y for y, _o, _n in changes]
        assert cells(screen) == paint(rows), text
        old = rows
    return screen


def test_a_growing_line_is_sent_as_its_new_end_only():
    a = make_row([(None, "  The loader reads")])
    b = make_row([(None, "  The loader reads the "), ("y", "file")])
    text, _state, _ = render_rows([(0, a, b)], escape_of)
    assert text == "\x1b[1;19H the \x1b[93mfile"
    apply_steps([[a] + [blank_row()] * 5, [b] + [blank_row()] * 5])


def test_consecutive_new_rows_move_with_cr_lf_and_need_no_erase():
    rows = [make_row([(None, f"row {i}")]) for i in range(3)] + [make_row([(None, "  indented")])]
    changes = [(y, blank_row(), rows[y]) for y in range(4)]
    text, _state, _ = render_rows(changes, escape_of)
    assert text == "\x1b[1Hrow 0\r\nrow 1\r\nrow 2\r\n  indented"
    text, _state, _ = render_rows(changes, escape_of, "\n")  # the tty adds the CR (ONLCR)
    assert text == "\x1b[1Hrow 0\nrow 1\nrow 2\n  indented"


@pytest.mark.parametrize(
    "state,seq,expected",
    [
        (RESET, "\x1b[0;93m", "\x1b[93m"),  # nothing to reset
        (RESET, "\x1b[0;95;1m", "\x1b[95;1m"),
        ("\x1b[0;93m", "\x1b[0;95m", "\x1b[95m"),  # colour to colour
        ("\x1b[0;93m", RESET, RESET),
        ("\x1b[0;93;41m", "\x1b[0;95m", "\x1b[0;95m"),  # 95;49 is no shorter than the reset
        ("\x1b[0;1m", "\x1b[0;93m", "\x1b[0;93m"),  # bold must be reset
        ("\x1b[0;93m", "\x1b[0;1m", "\x1b[0;1m"),
        ("\x1b[0;38;5;188;48;5;59m", "\x1b[0;93m", "\x1b[0;93m"),  # the full one is shorter
        ("\x1b[0;38;5;1m", "\x1b[0;38;2;1;2;3m", "\x1b[38;2;1;2;3m"),
    ],
)
def test_sgr_step(state, seq, expected):
    assert sgr_step(state, seq) == expected


def test_a_shorter_row_erases_what_the_old_one_had_beyond_it():
    a = make_row([(None, "a long old row here")])
    b = make_row([(None, "short")])
    text, _state, _ = render_rows([(0, a, b)], escape_of)
    assert text.endswith("\x1b[K")
    apply_steps([[a] * ROWS, [b] * ROWS])


def test_sgr_is_not_repeated_and_ends_reset_before_an_erase():
    a = make_row([("y", "yellow text that is long")])
    b = make_row([("y", "ye"), ("y", "llow")])
    text, state, _ = render_rows([(0, a, b)], escape_of)
    assert text.count("\x1b[0;93m") <= 1 and text.endswith(RESET + "\x1b[K")
    assert state == RESET


def test_rows_with_a_charset_are_left_to_urwid():
    row = [(None, "0", b"qqqq"), (None, None, b" " * (COLS - 4))]
    text, _state, drawn = render_rows([(0, blank_row(), row)], escape_of)
    assert text == "" and drawn == []


@pytest.mark.parametrize(
    "old,new,expected",
    [
        ([(None, None, b"abc   ")], [(None, None, b"abcdef")], (3, [(None, None, b"def")])),
        ([("y", None, b"ab"), (None, None, b"    ")], [("y", None, b"ab"), (None, None, b"cd  ")],
         (2, [(None, None, b"cd  ")])),
        ([("y", None, b"ab")], [("b", None, b"ab")], (0, [("b", None, b"ab")])),  # restyled
        # never split next to a non-ASCII character (a combining mark modifies the one before)
        ([(None, None, "ab\u00e9x".encode())], [(None, None, "ab\u00e9y".encode())],
         (1, [(None, None, "b\u00e9y".encode())])),
        ([(None, None, "\u4e16a".encode())], [(None, None, "\u4e16b".encode())], (0, [(None, None, "\u4e16b".encode())])),
        ([(None, None, "a\u4e16 x".encode())], [(None, None, "a\u4e16 y".encode())], (4, [(None, None, b"y")])),
    ],
)
def test_row_divergence(old, new, expected):
    assert row_divergence(old, new) == expected


WORDS = ["The", "loader", "reads", "é", "世界", "x", "config.toml", "", "  ", "a b"]


def random_row(rng):
    parts, width = [], 0
    for _ in range(rng.randrange(0, 6)):
        word = rng.choice(WORDS) + " "
        w = sum(2 if ord(ch) > 0x2E80 else 1 for ch in word)
        if width + w > COLS:
            break
        parts.append((rng.choice(list(ESCAPES)), word))
        width += w
    return make_row(parts)


def mutate(rng, row):
    """A likely next frame of a row: grown, cut, restyled or replaced."""
    choice = rng.randrange(4)
    text = [(a, r.decode()) for a, _cs, r in row]
    if choice == 0:
        return random_row(rng)
    body = [(a, t) for a, t in text if a is not None or t.strip()]
    if choice == 1 and body:
        body = body[:-1]
    elif choice == 2 and body:
        a, t = body[-1]
        body[-1] = (rng.choice(list(ESCAPES)), t)
    else:
        body.append((rng.choice(list(ESCAPES)), rng.choice(WORDS)))
    from urwid.str_util import calc_width

    out, width = [], 0
    for a, t in body:
        w = calc_width(t, 0, len(t))
        if width + w > COLS:
            break
        out.append((a, t))
        width += w
    return make_row(out)


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
@pytest.mark.parametrize("seed", range(40))
def test_random_frames_match_a_full_paint(seed, newline):
    rng = random.Random(seed)
    rows = [random_row(rng) for _ in range(ROWS)]
    steps = [rows]
    for _ in range(12):
        rows = [mutate(rng, r) if rng.random() < 0.5 else r for r in rows]
        steps.append(rows)
    apply_steps(steps, newline)


def test_rows_coming_in_at_the_bottom_are_written_there_after_each_line_feed():
    """A streamed answer's new rows: no move to the margin and back (cat's bytes)."""
    old = [make_row([(None, f"  row {i}")]) for i in range(5)]
    grown = make_row([(None, "  row 4 and more")])
    new_rows = [make_row([(None, "  next "), ("y", "code")]), blank_row(), make_row([(None, "  last")])]
    blank = blank_row()
    run = [(1, old[4], grown), (2, blank, new_rows[0]), (3, blank, new_rows[1]), (4, blank, new_rows[2])]
    text = render_scrolling_rows(run, 3, escape_of, "\n")
    assert text == "\x1b[5;8H and more\n  next \x1b[93mcode\x1b[m\n\n  last"
    unchanged = [(1, old[4], old[4])] + run[1:]  # the bottom row as it was: the cursor goes there
    assert render_scrolling_rows(unchanged, 3, escape_of, "\n").startswith("\x1b[5H\n  next ")


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
@pytest.mark.parametrize("seed", range(60))
def test_random_scrolls_like_cat_match_a_full_paint(seed, newline):
    """Inside scrolling margins (rows 1-5 of 6, the last row outside them), with renditions
    and backgrounds, on a terminal that fills scrolled-in rows with the current background
    (XTerm's bce): a scroll by k written as line feeds on the bottom margin leaves the
    rows a full paint leaves."""
    rng = random.Random(seed)
    region = ROWS - 1
    screen = XTerm(COLS, ROWS)
    if newline == "\n":
        screen.set_mode(pyte.modes.LNM)
    stream = pyte.Stream(screen)
    old = [random_row(rng) for _ in range(ROWS)]
    for y, row in enumerate(old):
        stream.feed(f"\x1b[{y + 1};1H" + "".join(escape_of(a) + r.decode() for a, _cs, r in row) + RESET)
    stream.feed(f"\x1b[1;{region}r")
    k = rng.randrange(1, region)
    shifted = old[k:region] + [blank_row()] * k + old[region:]
    new = list(shifted)
    y0 = region - 1 - k
    new[y0] = mutate(rng, shifted[y0]) if rng.random() < 0.8 else shifted[y0]
    for y in range(y0 + 1, region):
        new[y] = random_row(rng) if rng.random() < 0.8 else blank_row()
    run = [(y, shifted[y], new[y]) for y in range(y0, region)]
    stream.feed(render_scrolling_rows(run, k, escape_of, newline))
    assert [[(c.data, c.fg, c.bg, c.bold, c.underscore) for c in (screen.buffer[y][x] for x in range(COLS))]
            for y in range(ROWS)] == paint_bg(new)


def paint_bg(rows):
    screen, stream = terminal()
    for y, row in enumerate(rows):
        stream.feed(f"\x1b[{y + 1};1H" + "".join(escape_of(a) + r.decode() for a, _cs, r in row) + RESET)
    return [[(c.data, c.fg, c.bg, c.bold, c.underscore) for c in (screen.buffer[y][x] for x in range(COLS))]
            for y in range(ROWS)]


def test_runs_of_spaces_over_blank_cells_are_skipped_with_a_cursor_move():
    """A code block's indent and a table's padding, on cells that are blank already: CUF
    (4 bytes) instead of the spaces; over old text the spaces are written (they erase it)."""
    new = make_row([(None, "  key"), (None, "        "), ("y", "value")])
    text, _state, _ = render_rows([(0, blank_row(), new)], escape_of)
    assert text == "\x1b[1;3Hkey\x1b[8C\x1b[93mvalue"
    old = make_row([(None, "  key xxxxxxxxxxxxx")])
    text, _state, _ = render_rows([(0, old, new)], escape_of)
    assert text == "\x1b[1;6H        \x1b[93mvalue\x1b[m\x1b[K"  # the spaces erase the old x's
    grown = make_row([(None, "  key xxyy"), (None, "        "), ("y", "value")])  # the gap is on blank cells
    text, _state, _ = render_rows([(0, make_row([(None, "  key xx")]), grown)], escape_of)
    assert text == "\x1b[1;9Hyy\x1b[8C\x1b[93mvalue"
    straddles = make_row([(None, "  key      yy"), ("y", "value")])  # starts over old text: written
    text, _state, _ = render_rows([(0, make_row([(None, "  key xx")]), straddles)], escape_of)
    assert text == "\x1b[1;7H     yy\x1b[93mvalue"
    apply_steps([[old] + [blank_row()] * 5, [new] + [blank_row()] * 5, [grown] + [blank_row()] * 5,
                 [blank_row()] + [new] * 5])


def test_a_deep_indent_after_a_line_feed_is_a_column_move():
    rows = [make_row([(None, "  def f():")]), make_row([(None, "            return 1")])]
    text, _state, _ = render_rows([(0, blank_row(), rows[0]), (1, blank_row(), rows[1])], escape_of, "\n")
    assert text == "\x1b[1;3Hdef f():\n\x1b[13Greturn 1"


def test_the_emulator_has_an_alternate_screen_like_xterm():
    """The tests' terminal (tests/xterm.py) keeps the shell's screen aside while a program
    shows the alternate one, and brings it back when the program leaves: what a test reads
    after dashfloat left is the shell's screen, never dashfloat's last frame. A sequence
    split between two reads counts too."""
    screen = XTerm(20, 4)
    stream = pyte.ByteStream(screen)
    stream.feed(b"SHELL$ dashfloat\r\n")
    stream.feed(b"\x1b[?10")
    stream.feed(b"49h\x1b[HAPP FRAME")
    assert [row.rstrip() for row in screen.display] == ["APP FRAME", "", "", ""]
    stream.feed(b"\x1b[?1049h")  # entered twice (the early frame, then urwid): still one aside
    stream.feed(b"\x1b[2;1Hmore\x1b[?1049l")
    assert [row.rstrip() for row in screen.display] == ["SHELL$ dashfloat", "", "", ""]
    assert (screen.cursor.x, screen.cursor.y) == (0, 1)  # 1049 restores the cursor too
