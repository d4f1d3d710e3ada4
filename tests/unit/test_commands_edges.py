"""The slash-command table's pure edges (dashfloat/commands.py), exact to the character:
lookup and usage, "did you mean" with one, two or no names, Tab completion at every cursor
(one name, several with their common prefix, the bare slash, a path, inside or after the
word), /help's padded list and /help NAME however it is spelled, and the man page's groff
(escapes, a line that starts with a dot, bold words and italic placeholders).

`make mutation` (tests/mutation/run_mutation.py) found these cases untested."""

from __future__ import annotations

import dataclasses

import pytest

from dashfloat import commands
from dashfloat.commands import Completion

ALL = tuple("/" + c.name for c in commands.COMMANDS)


def test_lookup_ignores_case_and_usage_shows_the_arguments():
    assert commands.lookup("HeLp") is commands.COMMANDS[0]
    assert commands.lookup("nope") is None
    assert commands.usage(commands.lookup("permissions")) == "/permissions [revoke N]"
    assert commands.usage(commands.lookup("clear")) == "/clear"


def test_the_table_and_a_completion_cannot_be_changed():
    with pytest.raises(dataclasses.FrozenInstanceError):
        commands.COMMANDS[0].name = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        commands.complete("/us", 3).text = "x"
    assert len({*commands.COMMANDS, Completion("/", 1)}) == len(commands.COMMANDS) + 1  # hashable


def test_only_copy_also_runs_while_a_turn_runs():
    assert [c.name for c in commands.COMMANDS if c.anytime] == ["copy"]


def test_the_rest_after_the_name_is_stripped_whatever_space_follows():
    assert commands.parse("/undo\t3 ") == ("undo", "3")
    assert commands.parse("/undo") == ("undo", "")


@pytest.mark.parametrize(("typed", "says"), [
    ("mod", " Did you mean /mode or /model?"),
    ("moage", " Did you mean /mode or /usage?"),  # two at most
    ("QIT", " Did you mean /quit?"),
    ("zzz", ""),
])
def test_unknown_text_suggests_at_most_two_close_names(typed, says):
    assert commands.unknown_text(typed) == (f"Unknown command /{typed}; /help lists them.{says} "
                                            "(To send a prompt that starts with /, begin it with a space.)")


@pytest.mark.parametrize(("text", "cursor", "want"), [
    ("/us", 3, Completion("/usage ", 7)),
    ("/US", 3, Completion("/usage ", 7)),
    ("/us x", 3, Completion("/usage x", 6)),  # a space after the word: none added
    ("/us\tx", 3, Completion("/usage\tx", 6)),
    ("/usx y", 3, None),  # inside the word
    ("/us x y", 3, Completion("/usage x y", 6)),  # the first space ends the word
    ("/q", 2, Completion("/quit ", 6)),
    ("/mo", 3, Completion("/mode", 5, ("/model", "/mode"))),  # their common start
    ("/mo arg", 3, Completion("/mode arg", 5, ("/model", "/mode"))),
    ("/co", 3, Completion("/co", 3, ("/compact", "/copy"))),
    ("/c", 2, Completion("/c", 2, ("/clear", "/compact", "/copy"))),
    ("/", 1, Completion("/", 1, ALL)),
    ("/x", 2, None),
    ("/etc/", 5, None),
    ("/1", 2, None),
    ("/us", 2, None),
    ("/us ", 4, None),
    ("/us", 0, None),
    ("/us", 4, None),
    ("us", 2, None),
    ("", 0, None),
])
def test_tab_completes_the_first_word_only_at_its_end(text, cursor, want):
    assert commands.complete(text, cursor) == want


def test_help_rows_are_the_table_in_order():
    assert commands.help_rows() == [(commands.usage(c), c.help) for c in commands.COMMANDS]
    assert commands.help_rows()[0] == ("/help [NAME]",
                                       "List the commands, a line each; with NAME, tell that one in full.")


def test_the_help_list_pads_every_usage_to_the_longest():
    lines = commands.help_text().split("\n")
    assert lines[0] == "Commands (typed at the start of a prompt; anything else goes to the model):"
    assert lines[1] == "  /help [NAME]             list the commands; /help NAME tells one in full"
    assert lines[7] == "  /permissions [revoke N]  the permission rules; revoke a session rule"
    assert lines[11] == "  /quit                    leave DashFloat"
    assert lines[-1] == ("/help NAME tells one in full; Tab completes a name; F1 shows the keys; a prompt "
                         "that starts with a space is sent as it is.")


def test_help_name_in_full_however_it_is_spelled():
    want = "/mode [NAME]\n    " + commands.lookup("mode").help
    assert commands.help_text("mode") == want
    assert commands.help_text(" /MODE ") == want
    assert commands.help_text(" /nope ").split("\n")[0] == "No command /nope."


@pytest.mark.parametrize(("text", "groff"), [
    ("a-b", "a\\-b"),
    ("back\\slash", "back\\eslash"),
    (".start", "\\&.start"),
    ("'quote", "\\&'quote"),
    ("x.y", "x.y"),
    ("", ""),
])
def test_groff_escapes(text, groff):
    assert commands._groff(text) == groff


@pytest.mark.parametrize(("args", "groff"), [
    ("[revoke N]", "[\\fBrevoke\\fR \\fIN\\fR]"),
    ("[NAME]", "[\\fINAME\\fR]"),
    ("[a-b X]", "[\\fBa\\-b\\fR \\fIX\\fR]"),
])
def test_groff_args_bold_words_italic_placeholders(args, groff):
    assert commands._groff_args(args) == groff


def test_the_man_section_has_a_tagged_paragraph_per_command():
    lines = commands.man_section().split("\n")
    assert lines[-1] == ""
    start = lines.index(".TP")
    assert lines[:start][-1] == "that fit)."
    tagged = lines[start:-1]
    assert len(tagged) == 3 * len(commands.COMMANDS)
    assert tagged[:3] == [".TP", "\\fB/help\\fR [\\fINAME\\fR]",
                          "List the commands, a line each; with NAME, tell that one in full."]
    perms = tagged.index("\\fB/permissions\\fR [\\fBrevoke\\fR \\fIN\\fR]")
    assert tagged[perms - 1] == ".TP" and tagged[perms + 1] == commands._groff(commands.lookup("permissions").help)
    assert tagged[-2:] == ["\\fB/quit\\fR", "Leave DashFloat (also while a turn runs: it is stopped first)."]
