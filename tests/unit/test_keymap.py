"""The keymap table, the theme table and the man page generated from them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dashfloat import manpage
from dashfloat.ui import keymap, markdown, theme

ROOT = Path(__file__).resolve().parents[2]
MAN = ROOT / "man" / "dashfloat.1"


def test_no_key_bound_twice_in_one_context():
    seen = {}
    for b in keymap.KEYMAP:
        for k in b.keys:
            assert (b.context, k) not in seen, f"{k!r} bound twice in {b.context}"
            seen[(b.context, k)] = b.command


def test_every_binding_has_context_help_and_a_handled_command():
    from dashfloat.ui import app, confirmgate, confirming

    # the App (and its confirmation half) dispatch commands; the gate names the decisions
    source = "".join(Path(m.__file__).read_text() for m in (app, confirming, confirmgate))
    for b in keymap.KEYMAP:
        assert b.context in keymap.CONTEXTS
        assert b.help.endswith("."), b
        assert b.keys
        handled = (
            f'"{b.command}"' in source
            or (b.command.startswith("scroll_") and 'cmd.startswith("scroll_")' in source)
        )
        assert handled, f"command {b.command} has no handler in ui/app.py or ui/confirming.py"


def test_every_key_name_is_one_urwid_decodes():
    """Each key must be a name urwid really produces for some byte sequence."""
    from urwid.display import escape

    produced = set()
    seqs = {
        "enter": b"\r", "meta enter": b"\x1b\r", "esc": b"\x1b", "up": b"\x1b[A", "down": b"\x1b[B",
        "page up": b"\x1b[5~", "page down": b"\x1b[6~", "home": b"\x1b[H", "end": b"\x1b[F",
        "tab": b"\t", "meta up": b"\x1b[1;3A", "meta down": b"\x1b[1;3B", "f1": b"\x1bOP", "q": b"q", "y": b"y", "n": b"n", "a": b"a", "v": b"v",
    }
    for name, seq in seqs.items():
        keys, _rest = escape.process_keyqueue(list(seq), more_available=False)
        produced.update(keys)
        assert name in keys, (name, keys)
    for letter in "acdeglutz":
        keys, _ = escape.process_keyqueue([ord(letter) - 96], more_available=False)
        produced.update(keys)
    for b in keymap.KEYMAP:
        for k in b.keys:
            assert k in produced, f"{k!r} is not a key name urwid produces"


@pytest.mark.parametrize(
    "key,label",
    [("meta enter", "Alt-Enter"), ("ctrl c", "Ctrl-C"), ("page up", "PgUp"), ("f1", "F1"),
     ("esc", "Esc"), ("q", "q"), ("meta down", "Alt-Down")],
)
def test_key_labels(key, label):
    assert keymap.key_label(key) == label


def test_dispatch_prefers_the_first_context():
    assert keymap.lookup(("help", "global"), "esc") == "close_help"
    assert keymap.lookup(("global", "prompt"), "esc") == "cancel"
    assert keymap.lookup(("global", "transcript", "prompt"), "enter") == "submit"
    assert keymap.lookup(("global",), "x") is None


def test_hints_come_from_the_table():
    assert keymap.hint_for("cancel") == "Esc cancel"
    assert keymap.hint_for("help") == "F1 help"


def test_man_page_is_in_sync_with_the_tables():
    assert MAN.read_text(encoding="utf-8") == manpage.generate(), "run `make man`"


def test_man_keybindings_lists_every_binding():
    text = keymap.man_keybindings_section()
    for b in keymap.KEYMAP:
        assert keymap._groff_escape(keymap.keys_label(b)) in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings():
    proc = subprocess.run(
        ["groff", "-ww", "-man", "-Tutf8", "-P-cbou", str(MAN)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert "KEYBINDINGS" in proc.stdout


def test_theme_defines_every_markdown_attr_and_all_depths():
    missing = markdown.ATTRS - set(theme.STYLES) - {""}
    assert not missing, missing
    for depth in theme.DEPTHS:
        pal = theme.palette(depth)
        assert len(pal) == len(theme.STYLES)


LOW_BACKGROUNDS = {"default", "black", "dark red", "dark green", "brown", "dark blue", "dark magenta",
                   "dark cyan", "light gray"}


def test_16_colour_parts_use_only_standard_names():
    import urwid

    for name, (mono, fg16, bg16, fg256, bg256) in theme.STYLES.items():
        urwid.AttrSpec(fg16, bg16, colors=16)  # raises on an invalid 16-colour name
        urwid.AttrSpec(fg256, bg256, colors=256)
        urwid.AttrSpec(mono, "default", colors=1)
        assert bg16 in LOW_BACKGROUNDS, f"{name}: a bright background blinks on a Linux console"


@pytest.mark.parametrize(
    "env,setting,expected",
    [
        ({"LANG": "C.UTF-8", "TERM": "linux"}, "auto", False),
        ({"LANG": "C", "TERM": "linux"}, "auto", True),
        ({"TERM": "vt100"}, "auto", True),
        ({"LANG": "C", "TERM": "xterm-256color"}, "auto", False),
        ({"LC_ALL": "en_US.UTF-8", "LANG": "C", "TERM": "vt220"}, "auto", False),
        ({"LANG": "C.UTF-8"}, "on", True),
        ({"TERM": "vt100"}, "off", False),
    ],
)
def test_ascii_choice(env, setting, expected):
    assert theme.choose_ascii(setting, env) is expected


@pytest.mark.parametrize(
    "setting,detected,expected",
    [("auto", 1, 1), ("auto", 16, 16), ("auto", 88, 16), ("auto", 256, 256), ("auto", 2**24, 256),
     ("16", 256, 16), ("1", 256, 1), ("256", 16, 256)],
)
def test_depth_choice(setting, detected, expected):
    assert theme.choose_depth(setting, detected) == expected
