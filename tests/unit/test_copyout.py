"""/copy's pure parts (dashfloat/copyout.py): arguments, code blocks as the screen numbers
them, the OSC 52 bytes for each multiplexer and their bound, the entry's wording."""

from __future__ import annotations

import base64
import os
import stat

import pytest

from dashfloat import copyout
from dashfloat.copyout import Block, Request
from dashfloat.ui import markdown


@pytest.mark.parametrize(("rest", "want"), [
    ("", Request("answer")),
    ("  ", Request("answer")),
    ("2", Request("block", 2)),
    ("list", Request("list")),
    ("LIST", Request("list")),
    ("0", str),
    ("-1", str),
    ("two", str),
    ("1 2", str),
    ("list 2", str),
])
def test_parse_args(rest, want):
    got = copyout.parse_args(rest)
    if want is str:
        assert isinstance(got, str) and "/copy list" in got and repr(rest) in got
    else:
        assert got == want


@pytest.mark.parametrize(("text", "blocks"), [
    ("no code here", []),
    ("```python\nx = 1\n```", [Block("python", "x = 1")]),
    ("```\nplain\n\n```", [Block("", "plain\n")]),  # only the last newline goes
    ("```sh title=x\nls\n```\n\n    indented\n", [Block("sh", "ls"), Block("", "indented")]),
    ("- item\n\n  ```js\n  a()\n  ```\n> ```\n> quoted\n> ```\n", [Block("js", "a()"), Block("", "quoted")]),
    ("~~~\nwith ``` inside\n~~~", [Block("", "with ``` inside")]),
    ("```python\nunclosed", [Block("python", "unclosed")]),  # the screen shows it as a block too
    ("`inline` is not a block", []),
])
def test_code_blocks(text, blocks):
    assert copyout.code_blocks(text) == blocks


def test_blocks_are_numbered_in_the_order_the_screen_shows_them():
    """Each block's code lines appear on the rendered screen in the same order."""
    text = ("Intro\n\n```python\nfirst()\n```\n\n1. step\n\n   ```sh\n   second\n   ```\n\n"
            "Then:\n\n    third_indented\n\n| a |\n|---|\n| b |\n\n```\nfourth\n```\n")
    blocks = copyout.code_blocks(text)
    assert [b.text for b in blocks] == ["first()", "second", "third_indented", "fourth"]
    shown = ["".join(seg for _attr, seg in line) for line in markdown.render(text)]
    rows = [next(i for i, row in enumerate(shown) if b.text in row) for b in blocks]
    assert rows == sorted(rows)


def test_an_answer_of_several_messages_numbers_on_across_them():
    texts = ["I will write it:\n\n```\none\n```", "Done. Check with:\n\n```sh\ntwo\n```"]
    assert [b.text for b in copyout.answer_blocks(texts)] == ["one", "two"]
    assert copyout.answer_text(texts) == texts[0] + "\n\n" + texts[1]
    assert copyout.answer_text(["a\n\n", "", "b\n"]) == "a\n\nb"


def test_list_text():
    blocks = [Block("python", "\n\ndef main():\n    pass"), Block("", "x" * 100), Block("sh", "")]
    assert copyout.list_text(blocks).splitlines() == [
        "Code blocks of the last answer (3; /copy N copies one):",
        "  1. python, 4 lines: def main():",
        "  2. 1 line: " + "x" * 57 + "...",
        "  3. sh, 0 lines: (empty)",
    ]
    assert "no code block" in copyout.list_text([])


def test_out_of_range():
    assert copyout.out_of_range(3, [Block("", "a")] * 2) == (
        "The last answer has 2 code blocks, not 3: /copy 1 to /copy 2 (/copy list shows them).")
    assert "/copy 1 " in copyout.out_of_range(2, [Block("", "a")])
    assert "has none" in copyout.out_of_range(1, [])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(("environ", "want"), [
    ({}, "\x1b]52;c;{b}\x07"),
    ({"TMUX": "/tmp/tmux-0/default,1,0"}, "\x1b]52;c;{b}\x07\x1bPtmux;\x1b\x1b]52;c;{b}\x07\x1b\\"),
    ({"TMUX": ""}, "\x1b]52;c;{b}\x07"),
    ({"STY": "123.pts-0.host"}, "\x1bP\x1b]52;c;{b}\x07\x1b\\"),
])
def test_osc52_for_each_multiplexer(environ, want):
    text = "héllo\nworld ✓"
    assert copyout.osc52(text, environ) == want.format(b=b64(text))


def test_screen_gets_pieces_it_can_pass():
    text = "x" * 3000
    seq = copyout.osc52(text, {"STY": "1.s"})
    pieces = seq.split("\x1b\\")[:-1]
    assert all(p.startswith("\x1bP") and len(p) <= copyout.SCREEN_PIECE + 2 for p in pieces)
    assert "".join(p[2:] for p in pieces) == f"\x1b]52;c;{b64(text)}\x07"


def test_the_bound_is_on_the_base64_and_nothing_is_cut():
    limit_bytes = copyout.OSC52_MAX // 4 * 3
    assert copyout.fits("a" * limit_bytes)
    assert not copyout.fits("a" * (limit_bytes + 1))
    assert copyout.osc52("a" * (limit_bytes + 1), {}) == ""
    assert len(copyout.osc52("a" * limit_bytes, {})) == copyout.OSC52_MAX + len("\x1b]52;c;\x07")
    assert not copyout.fits("é" * (limit_bytes // 2 + 1))  # bytes, not characters


@pytest.mark.parametrize(("kw", "level", "says"), [
    ({"clipboard": "osc52", "file_error": None}, "info",
     ["Copied the last answer (5 characters, 1 line) to the terminal's clipboard (OSC 52) and to /s/copy.txt"]),
    ({"clipboard": "tmux", "file_error": None}, "info", ["tmux load-buffer -w", "and to /s/copy.txt."]),
    ({"clipboard": "too_big", "file_error": None}, "info",
     ["Copied the last answer (5 characters, 1 line) to /s/copy.txt.", "too long", "the file has it whole"]),
    ({"clipboard": "osc52", "file_error": "Read-only file system: /s"}, "info",
     ["(OSC 52).", "/s/copy.txt could not be written (Read-only file system: /s)."]),
    ({"clipboard": "too_big", "file_error": "No space left on device"}, "error",
     ["Nothing copied of the last answer", "No space left on device"]),
    ({"clipboard": "osc52", "file_error": None, "streaming": True}, "info", ["/copy again when it ends"]),
])
def test_report(kw, level, says):
    got_level, text = copyout.report("the last answer", "hello", path="/s/copy.txt", **kw)
    assert got_level == level
    for part in says:
        assert part in text, text


def test_report_names_the_language():
    _level, text = copyout.report("code block 2", "ls", clipboard="osc52", path="/p", file_error=None, lang="sh")
    assert text.startswith("Copied code block 2 (sh, 2 characters, 1 line) to")


def test_write_file_is_private_and_whole(tmp_path):
    path = tmp_path / "state" / "dashfloat" / "copy.txt"
    old = os.umask(0)
    try:
        copyout.write_file(path, "first\n")
        copyout.write_file(path, "second ✓")
    finally:
        os.umask(old)
    assert path.read_text() == "second ✓"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["copy.txt"]


def test_write_file_under_a_file_says_which_path_is_not_a_directory(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        copyout.write_file(tmp_path / "afile" / "state" / "copy.txt", "x")
    from dashfloat import private

    assert private.describe(info.value) == f"Not a directory: {tmp_path / 'afile'}"


def test_tmux_load_outside_tmux_does_nothing():
    assert copyout.tmux_load("x", {}) == "not in tmux"


def test_the_last_answer_after_a_resume_is_the_latest_turn_that_wrote():
    from dashfloat.agent import _last_answer

    conversation = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "I will look.", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "{}"},
        {"role": "assistant", "content": "Found it."},
        {"role": "user", "content": "three"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "d"}]},
        {"role": "tool", "tool_call_id": "d", "content": "{}"},
    ]
    assert _last_answer(conversation) == ["I will look.", "Found it."]
    assert _last_answer([]) == []


def test_without_a_terminal_the_file_alone_is_named():
    level, text = copyout.report("the last answer", "hello", clipboard="none", path="/s/copy.txt", file_error=None)
    assert (level, text) == ("info", "Copied the last answer (5 characters, 1 line) to /s/copy.txt.")
    level, text = copyout.report("the last answer", "hello", clipboard="none", path="/s/copy.txt",
                                 file_error="Read-only file system")
    assert level == "error" and "clipboard" not in text
