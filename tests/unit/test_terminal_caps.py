"""What the terminal can show: colours from terminfo, the locale as the user set it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dashfloat.ui import theme


@pytest.mark.parametrize("setting, detected, term_colors, expected", [
    ("auto", 16, 0, 1),  # vt100: urwid says 16 by its name, its entry has no colours
    ("auto", 256, 0, 1),
    ("auto", 16, 8, 16),  # xterm, linux
    ("auto", 256, 256, 256),
    ("auto", 16, None, 16),  # no entry to read: urwid's guess stands
    ("16", 16, 0, 16),  # --colors wins
])
def test_a_terminal_without_colours_gets_none(setting, detected, term_colors, expected):
    assert theme.choose_depth(setting, detected, term_colors) == expected


def _colors_in_a_fresh_process(term: str):
    # curses loads one terminfo entry per process: ask each in its own
    code = f"from dashfloat.ui import theme; print(theme.terminfo_colors({term!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=True).stdout.strip()


def test_terminfo_colors():
    assert _colors_in_a_fresh_process("vt100") == "0"
    assert _colors_in_a_fresh_process("vt420") == "0"  # the table, if the entry is missing
    assert _colors_in_a_fresh_process("no-such-terminal-xyz") == "None"
    xterm = _colors_in_a_fresh_process("xterm-256color")
    assert xterm in ("256", "None")


def test_the_locale_as_started_not_as_python_coerced_it():
    coerced = {"LANG": "C", "LC_CTYPE": "C.UTF-8", "TERM": "linux", "HOME": "/h"}
    env = theme.startup_environ(coerced, proc_environ=b"LANG=C\0TERM=linux\0HOME=/h\0")
    assert env == {"LANG": "C", "TERM": "linux", "HOME": "/h"}
    assert not theme.utf8_locale(env)
    assert theme.choose_ascii("auto", env) is True
    env = theme.startup_environ(coerced, proc_environ=b"LANG=C\0LC_CTYPE=en_US.UTF-8\0")
    assert theme.utf8_locale(env)


def test_startup_environ_of_this_process_has_what_exec_passed():
    code = ("import os; from dashfloat.ui import theme; "
            "print(os.environ.get('LC_CTYPE'), theme.startup_environ().get('LC_CTYPE'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"LANG": "C", "PATH": "/usr/bin:/bin"}).stdout.split()
    if out[0] == "None":
        pytest.skip("this Python does not coerce the C locale")
    assert out == ["C.UTF-8", "None"]
