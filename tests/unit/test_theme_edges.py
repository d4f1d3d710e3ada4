"""The theme's edges: palette shape at each depth, the depth chosen at the bounds of the
detection, the terminfo look-up (with a stand-in curses, never the real terminal), the
locale read when /proc cannot be, the glyph sets and the switch to ASCII."""

from __future__ import annotations

import sys
import types

import pytest

from dashfloat import config
from dashfloat.ui import theme


def test_depths_are_the_colors_settings_besides_auto():
    """Every depth with a palette is a --colors value (and a config file's int for it)."""
    assert theme.DEPTHS == (1, 16, 256)
    parse = next(spec.parse for spec in config.KEYS if spec.name == "colors")
    assert [parse(d, False) for d in theme.DEPTHS] == ["1", "16", "256"]
    assert [theme.choose_depth(parse(d, False), 16) for d in theme.DEPTHS] == [1, 16, 256]


@pytest.mark.parametrize("depth, width", [(1, 4), (16, 4), (88, 4), (255, 4), (256, 6), (257, 6), (2**24, 6)])
def test_palette_offers_the_high_colour_part_from_256_up(depth, width):
    pal = theme.palette(depth)
    assert {len(entry) for entry in pal} == {width}
    assert [entry[0] for entry in pal] == list(theme.STYLES)


def test_palette_entry_order_is_urwids():
    mono, fg16, bg16, fg256, bg256 = theme.STYLES["status"]
    assert ("status", fg16, bg16, mono, fg256, bg256) in theme.palette(256)
    assert ("status", fg16, bg16, mono) in theme.palette(16)


@pytest.mark.parametrize("detected, term_colors, expected", [
    (0, None, 1), (1, None, 1), (2, None, 16), (8, None, 16), (255, None, 16), (256, None, 256),
    (257, None, 256), (256, 7, 1), (16, 7, 1), (16, 8, 16), (256, 8, 256), (256, -1, 1),
])
def test_depth_at_the_bounds_of_detection(detected, term_colors, expected):
    assert theme.choose_depth("auto", detected, term_colors) == expected


class _FakeCurses(types.ModuleType):
    """Stands in for curses: records setupterm's arguments, answers tigetnum with `colors`
    (or raises when it is an exception)."""

    def __init__(self, colors):
        super().__init__("curses")
        self.colors = colors
        self.calls = []

    def setupterm(self, term, fd):
        self.calls.append((term, fd))
        if isinstance(self.colors, Exception):
            raise self.colors

    def tigetnum(self, name):
        assert self.calls, "setupterm must come first"
        assert name == "colors"
        return self.colors


def _colors(monkeypatch, term, colors):
    fake = _FakeCurses(colors)
    monkeypatch.setitem(sys.modules, "curses", fake)
    return theme.terminfo_colors(term), fake.calls


@pytest.mark.parametrize("colors, expected", [(256, 256), (8, 8), (0, 0), (-1, 0), (-2, 0)])
def test_terminfo_colors_reads_the_entry_of_term(monkeypatch, colors, expected):
    """Absent (-1) and cancelled (-2) capabilities count as no colours. fd -1: curses
    sends its initialization to sys.stdout, as it would for the screen."""
    assert _colors(monkeypatch, "xterm-256color", colors) == (expected, [("xterm-256color", -1)])


@pytest.mark.parametrize("term, expected", [
    ("xterm", None), ("vt52", 0), ("vt100", 0), ("vt220-8bit", 0), ("vt420.x", 0), ("vt525", None),
    ("vt1000", None), ("xterm-mono", 0), ("linux-m", 0), ("screen-m2", None),
])
def test_terminfo_colors_without_an_entry_goes_by_the_name(monkeypatch, term, expected):
    assert _colors(monkeypatch, term, OSError("no entry")) == (expected, [(term, -1)])


def test_terminfo_colors_without_a_term_asks_nothing(monkeypatch):
    assert _colors(monkeypatch, "", 256) == (None, [])


def test_startup_environ_without_proc_is_a_copy_of_environ(monkeypatch):
    def no_proc(*_args, **_kwargs):
        raise FileNotFoundError("/proc/self/environ")

    monkeypatch.setattr(theme, "open", no_proc, raising=False)
    environ = {"LANG": "C", "LC_CTYPE": "C.UTF-8", "TERM": "linux"}
    env = theme.startup_environ(environ)
    assert env == {"LANG": "C", "LC_CTYPE": "C.UTF-8", "TERM": "linux"}
    assert env is not environ


@pytest.mark.parametrize("environ, expected", [
    ({}, False), ({"LANG": ""}, False), ({"LANG": "C"}, False), ({"LANG": "en_US.utf8"}, True),
    ({"LC_ALL": "", "LANG": "de_DE.UTF-8"}, True), ({"LC_CTYPE": "C", "LANG": "de_DE.UTF-8"}, False),
])
def test_utf8_locale_the_first_variable_set_decides(environ, expected):
    assert theme.utf8_locale(environ) is expected


@pytest.mark.parametrize("glyphs, user, spinner_frames", [(theme.UNICODE, "❯", 10), (theme.ASCII, ">", 4)])
def test_glyph_sets(glyphs, user, spinner_frames):
    assert glyphs.user == user
    assert len(glyphs.spinner) == spinner_frames
    assert len({glyphs.collapsed, glyphs.expanded}) == 2


def test_ascii_glyphs_are_ascii():
    fields = theme.Glyphs.__slots__
    values = [getattr(theme.ASCII, f) for f in fields]
    assert all("".join(v).isascii() for v in values)
    assert (theme.ASCII.sep, theme.ASCII.ellipsis, theme.ASCII.tool) == ("|", "~", "#")


def test_use_ascii_encoding_sets_urwids_encoding_and_fallbacks(monkeypatch):
    import urwid

    calls = []
    monkeypatch.setattr(urwid, "set_encoding", lambda enc: calls.append(("encoding", enc)))
    monkeypatch.setattr(urwid, "set_ascii_fallbacks", lambda table: calls.append(("fallbacks", table)))
    theme.use_ascii_encoding()
    assert calls == [("encoding", "ascii"), ("fallbacks", theme.ASCII_FALLBACKS)]
    assert all(v.isascii() and len(v) == 1 for v in theme.ASCII_FALLBACKS.values())
