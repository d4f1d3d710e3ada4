"""/copy's edges (dashfloat/copyout.py), exact to the character: /copy 1, the error entry's
wording, a parser that fails, /copy list's first lines at the 60-character edge and its
counts, the out-of-range entries, the base64 length and the documented 100,000-character
bound, GNU screen's 500-character pieces, the sizes, every entry report() writes, the copy
file written in short writes and on a full disk (no temporary file, no descriptor left), and
`tmux load-buffer -w -` run for real through a stand-in tmux (taken, refused, missing, hung).

`make mutation` (tests/mutation/run_mutation.py) found these cases untested."""

from __future__ import annotations

import dataclasses
import errno
import os
import stat

import pytest

from dashfloat import copyout
from dashfloat.copyout import Block, Request
from tests.unit.test_copyout import b64


def test_a_block_and_a_request_cannot_be_changed():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Block("sh", "ls").text = "rm"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Request("block", 1).n = 2
    assert len({Block("sh", "ls"), Block("sh", "ls"), Request("list")}) == 2  # hashable


def test_copy_1_is_the_first_block_and_a_bad_argument_says_how():
    assert copyout.parse_args("1") == Request("block", 1)
    assert copyout.parse_args(" 12 ") == Request("block", 12)
    assert copyout.parse_args("x y") == (
        "/copy takes a code block's number or list, not 'x y': /copy copies the last answer, /copy N its "
        "Nth code block, /copy list shows its code blocks.")


def test_a_parser_that_fails_finds_no_blocks(monkeypatch):
    from dashfloat import mdparse

    class Broken:
        def parse(self, text):
            raise RecursionError("too deep")

    monkeypatch.setattr(mdparse, "parser", lambda: Broken())
    assert copyout.code_blocks("```\nx\n```") == []


def test_blocks_across_messages_and_blank_messages_left_out():
    assert copyout.answer_blocks(["```a\n1\n```", "no code", "    2\n"]) == [Block("a", "1"), Block("", "2")]
    assert copyout.answer_blocks([]) == []
    assert copyout.answer_text(["\n\nfirst\n", "  ", "second  \n\n"]) == "first\n\nsecond"


def test_list_shows_the_first_line_whole_up_to_60_characters():
    blocks = [Block("", "y" * 60), Block("", "z" * 61 + "\nmore"), Block("py", "  \n  indented  \n")]
    assert copyout.list_text(blocks).splitlines() == [
        "Code blocks of the last answer (3; /copy N copies one):",
        "  1. 1 line: " + "y" * 60,
        "  2. 2 lines: " + "z" * 57 + "...",
        "  3. py, 2 lines: indented",
    ]
    assert copyout.list_text([Block("", "a")]).splitlines()[0] == "Code blocks of the last answer (1; /copy N copies one):"
    assert copyout.list_text([]) == "The last answer has no code block: /copy copies the whole answer."


def test_out_of_range_entries_exactly():
    assert copyout.out_of_range(2, [Block("", "a")]) == (
        "The last answer has 1 code block, not 2: /copy 1 (/copy list shows them).")
    assert copyout.out_of_range(1, []) == (
        "The last answer has no code block 1: it has none (/copy copies the whole answer).")


@pytest.mark.parametrize(("text", "n"), [("", 0), ("a", 4), ("ab", 4), ("abc", 4), ("abcd", 8), ("é", 4),
                                         ("\udcff", 4)])
def test_b64_len_is_the_length_of_the_base64(text, n):
    assert copyout.b64_len(text) == n
    assert n == len(base64_of(text))


def base64_of(text):
    import base64

    return base64.b64encode(text.encode("utf-8", "surrogatepass"))


def test_the_documented_bound_is_100000_characters_of_base64():
    assert copyout.fits("a" * 75_000)  # 100,000 characters of base64
    assert not copyout.fits("a" * 75_001)  # 100,004
    assert copyout.osc52("a" * 75_000, {}) == f"\x1b]52;c;{b64('a' * 75_000)}\x07"


def test_screen_gets_pieces_of_500_characters_in_order():
    text = "x" * 3000
    plain = f"\x1b]52;c;{b64(text)}\x07"
    seq = copyout.osc52(text, {"STY": "1.s"})
    pieces = seq.split("\x1b\\")[:-1]
    assert [len(p) for p in pieces] == [502] * (len(plain) // 500) + [2 + len(plain) % 500]
    assert pieces[0] == "\x1bP" + plain[:500]
    assert seq == "".join(f"\x1bP{plain[i:i + 500]}\x1b\\" for i in range(0, len(plain), 500))


def test_tmux_wins_over_screen():
    seq = copyout.osc52("hi", {"TMUX": "t", "STY": "s"})
    assert seq == f"\x1b]52;c;{b64('hi')}\x07\x1bPtmux;\x1b\x1b]52;c;{b64('hi')}\x07\x1b\\"


@pytest.mark.parametrize(("text", "size"), [
    ("", "0 characters, 1 line"),
    ("a", "1 character, 1 line"),
    ("a\nb", "3 characters, 2 lines"),
    ("x" * 1234 + "\n" * 1000, "2,234 characters, 1,000 lines"),
])
def test_size_text(text, size):
    assert copyout.size_text(text) == size


BIG = "é" * 40_000  # 80,000 bytes: 78 KiB


@pytest.mark.parametrize(("text", "kw", "want"), [
    ("hello", {"clipboard": "osc52", "file_error": None},
     ("info", "Copied the last answer (5 characters, 1 line) to the terminal's clipboard (OSC 52) and to "
              "/s/copy.txt (for a terminal that ignores OSC 52).")),
    ("hello", {"clipboard": "tmux", "file_error": None},
     ("info", "Copied the last answer (5 characters, 1 line) to tmux's paste buffer and the terminal's "
              "clipboard (tmux load-buffer -w) and to /s/copy.txt.")),
    ("hello", {"clipboard": "tmux", "file_error": "EROFS"},
     ("info", "Copied the last answer (5 characters, 1 line) to tmux's paste buffer and the terminal's "
              "clipboard (tmux load-buffer -w). /s/copy.txt could not be written (EROFS).")),
    (BIG, {"clipboard": "too_big", "file_error": None},
     ("info", "Copied the last answer (40,000 characters, 1 line) to /s/copy.txt. It is too long for the "
              "terminal's clipboard (78 KiB; OSC 52 carries at most 73 KiB): the file has it whole.")),
    (BIG, {"clipboard": "too_big", "file_error": "No space left on device"},
     ("error", "Nothing copied of the last answer (40,000 characters, 1 line). It is too long for the "
               "terminal's clipboard (78 KiB; OSC 52 carries at most 73 KiB). /s/copy.txt could not be "
               "written (No space left on device).")),
    ("hello", {"clipboard": "osc52", "file_error": "EROFS", "streaming": True},
     ("info", "Copied the last answer (5 characters, 1 line) to the terminal's clipboard (OSC 52). "
              "/s/copy.txt could not be written (EROFS). The answer being written now is not in it: "
              "/copy again when it ends.")),
    ("hello", {"clipboard": "none", "file_error": "EROFS", "streaming": True, "lang": "sh"},
     ("error", "Nothing copied of the last answer (sh, 5 characters, 1 line). /s/copy.txt could not be "
               "written (EROFS). The answer being written now is not in it: /copy again when it ends.")),
])
def test_report_exactly(text, kw, want):
    assert copyout.report("the last answer", text, path="/s/copy.txt", **kw) == want


@pytest.mark.parametrize(("n", "kib"), [(80_383, "78"), (80_385, "79"), (1_048_576, "1,024")])
def test_too_long_says_the_size_in_kib_rounded(n, kib):
    _level, text = copyout.report("it", "a" * n, clipboard="too_big", path="/p", file_error=None)
    assert f"too long for the terminal's clipboard ({kib} KiB; OSC 52 carries at most 73 KiB)" in text


# ---- the copy file ----------------------------------------------------------------------------


def _fds():
    return sorted(os.listdir("/proc/self/fd"))


def test_the_copy_file_is_written_whole_through_short_writes(tmp_path, monkeypatch):
    path = tmp_path / "copy.txt"
    real_write = os.write
    sizes = []

    def short(fd, data):
        sizes.append(len(data))
        return real_write(fd, bytes(data[:3]))

    before = _fds()
    monkeypatch.setattr(os, "write", short)
    copyout.write_file(path, "0123456789 ✓")
    monkeypatch.undo()
    assert path.read_text() == "0123456789 ✓"
    assert sizes == [14, 11, 8, 5, 2]
    assert _fds() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_full_disk_leaves_the_old_file_no_temporary_and_no_descriptor(tmp_path, monkeypatch):
    path = tmp_path / "copy.txt"
    copyout.write_file(path, "old")
    before = _fds()

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as info:
        copyout.write_file(path, "new")
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["copy.txt"]
    assert _fds() == before


def test_a_temporary_already_gone_still_reports_the_write_error(tmp_path, monkeypatch):
    path = tmp_path / "copy.txt"

    def full(fd, data):
        os.unlink(f"{path}.{os.getpid()}.tmp")
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as info:
        copyout.write_file(path, "new")
    assert info.value.errno == errno.EIO
    assert list(tmp_path.iterdir()) == []


# ---- tmux load-buffer -------------------------------------------------------------------------


def fake_tmux(tmp_path, body: str) -> dict[str, str]:
    """An environment inside tmux whose PATH finds a stand-in `tmux` running `body` first."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tmux = bin_dir / "tmux"
    tmux.write_text("#!/bin/sh\n" + body + "\n")
    tmux.chmod(0o755)
    return {"TMUX": "/tmp/tmux-0/default,1,0", "PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_tmux_load_hands_the_text_to_load_buffer_w(tmp_path):
    got = tmp_path / "got"
    env = fake_tmux(tmp_path, f'echo "$@" > {got}.args; cat > {got}')
    assert copyout.tmux_load("héllo ✓\n", env) is None
    assert got.read_text() == "héllo ✓\n"
    assert (tmp_path / "got.args").read_text() == "load-buffer -w -\n"


def test_tmux_load_says_why_tmux_refused(tmp_path):
    env = fake_tmux(tmp_path, 'cat >/dev/null; echo "  no server running on /tmp/x  " >&2; exit 1')
    assert copyout.tmux_load("x", env) == "no server running on /tmp/x"


def test_tmux_load_without_a_word_gives_the_exit_status(tmp_path):
    env = fake_tmux(tmp_path, "cat >/dev/null; exit 3")
    assert copyout.tmux_load("x", env) == "exit status 3"


def test_tmux_load_without_tmux_or_when_it_hangs(tmp_path):
    assert copyout.tmux_load("x", {"TMUX": "t", "PATH": str(tmp_path)}) == (
        "[Errno 2] No such file or directory: 'tmux'")
    env = fake_tmux(tmp_path, "exec sleep 30")
    assert copyout.tmux_load("x", env, timeout=0.2) == (
        "Command '['tmux', 'load-buffer', '-w', '-']' timed out after 0.2 seconds")
