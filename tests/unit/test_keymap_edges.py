"""The keymap's edges: labels of modifiers alone and of keys that only look like function
keys, hints for commands without one, and groff escapes of text that starts a request."""

from __future__ import annotations

import pytest

from dashfloat.ui import keymap


@pytest.mark.parametrize("key, label", [
    ("ctrl", "ctrl"),  # a modifier's name alone is the key's whole name, not a modifier
    ("meta", "meta"),
    ("shift", "shift"),
    ("ctrl meta", "Ctrl-meta"),
    ("shift f5", "Shift-F5"),
    ("f12", "F12"),
    ("find", "find"),  # starts with f but is no function key
    ("x1", "x1"),
    ("f", "f"),
    ("ctrl f", "Ctrl-F"),
    ("meta ctrl x", "Alt-Ctrl-X"),
    ("shift tab", "Shift-Tab"),
    ("insert", "insert"),
    ("delete", "Delete"),
])
def test_key_label_edges(key, label):
    assert keymap.key_label(key) == label


@pytest.mark.parametrize("command", ["history_prev", "scroll_top", "no_such_command", ""])
def test_hint_for_a_command_without_a_hint_raises(command):
    with pytest.raises(KeyError) as exc:
        keymap.hint_for(command)
    assert exc.value.args == (command,)


@pytest.mark.parametrize("command, hint", [
    ("approve_always", "a a always"),  # the label, not the key's name
    ("stop_turn", "Esc stop"),  # the first of its keys
    ("newline", "Alt-Enter newline"),
    ("scroll_bottom", "End follow"),
])
def test_hint_for(command, hint):
    assert keymap.hint_for(command) == hint


@pytest.mark.parametrize("text, escaped", [
    (".B bold", "\\&.B bold"),  # a line starting with . or ' would be a groff request
    ("'quoted", "\\&'quoted"),
    (".", "\\&."),
    ("a.b", "a.b"),
    ("x 'y'", "x 'y'"),
    ("", ""),
    ("Ctrl-C", "Ctrl\\-C"),
    ("a\\b", "a\\eb"),
    ("-.x", "\\-.x"),
])
def test_groff_escape(text, escaped):
    assert keymap._groff_escape(text) == escaped


def test_lookup_without_contexts_finds_nothing():
    assert keymap.lookup((), "esc") is None
    assert keymap.lookup(("view", "confirm"), "v") == "close_view"
    assert keymap.lookup(("confirm", "view"), "v") == "view_preview"
