"""Files with more than one hard link (issue 14 §8): read_file says how many names the file
has (result and row); a write or an edit replaces this name only, so the other names keep the
old content, and the preview and the result say that the link is broken."""

from __future__ import annotations

import os

import pytest

from dashfloat.tools import files, runner


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    (r / "a.txt").write_text("one\ntwo\n")
    os.link(r / "a.txt", r / "b.txt")  # a second name inside
    (tmp_path / "elsewhere").mkdir()
    os.link(r / "a.txt", tmp_path / "elsewhere" / "c.txt")  # a third name outside the root
    (r / "single.txt").write_text("alone\n")
    return r


def test_read_file_reports_the_link_count(root):
    got = files.read_file(root, "a.txt")
    assert got["ok"] and got["content"] == "one\ntwo\n"
    assert got["hard_links"] == 3
    assert got["hard_links_note"] == "this file has 3 hard links: other names see the same content"
    assert runner.result_row("c1", "read_file", got)["text"] == "ok: 2 lines, 3 hard links"
    single = files.read_file(root, "single.txt")
    assert "hard_links" not in single and "hard_links_note" not in single
    assert runner.result_row("c1", "read_file", single)["text"] == "ok: 1 lines"


def test_write_file_replaces_this_name_only_and_says_so(root, tmp_path):
    prepared = runner.prepare("write_file", {"path": "a.txt", "content": "new\n"}, str(root))
    note = ("this file has 3 hard links: the write replaces this name only and breaks the link; "
            "the other 2 names keep the old content")
    assert prepared.preview[0][0] == "stat" and prepared.preview[1] == ("marker", note), prepared.preview
    got = runner.execute("write_file", {"path": "a.txt", "content": "new\n"}, str(root), prepared)
    assert got["ok"] and got["hard_links"] == 3 and got["hard_links_note"] == note, got
    assert (root / "a.txt").read_text() == "new\n"
    # the pin: atomic replace gives this name a new file; the others keep the old content
    assert (root / "b.txt").read_text() == "one\ntwo\n"
    assert (tmp_path / "elsewhere" / "c.txt").read_text() == "one\ntwo\n"
    assert os.stat(root / "a.txt").st_nlink == 1 and os.stat(root / "b.txt").st_nlink == 2
    assert runner.result_row("c1", "write_file", got)["text"] == (
        "ok: wrote 4 B, hard link broken: 2 other names keep the old content")


def test_edit_file_replaces_this_name_only_and_says_so(root, tmp_path):
    os.unlink(tmp_path / "elsewhere" / "c.txt")  # two names: a.txt, b.txt
    args = {"path": "b.txt", "search_block": "two", "replace_block": "TWO"}
    prepared = runner.prepare("edit_file", args, str(root))
    note = ("this file has 2 hard links: the write replaces this name only and breaks the link; "
            "the other name keeps the old content")
    assert ("marker", note) in prepared.preview, prepared.preview
    got = runner.execute("edit_file", args, str(root), prepared)
    assert got["ok"] and got["hard_links"] == 2 and got["hard_links_note"] == note, got
    assert (root / "b.txt").read_text() == "one\nTWO\n"
    assert (root / "a.txt").read_text() == "one\ntwo\n"
    assert runner.result_row("c1", "edit_file", got)["text"] == (
        "ok: edited, hard link broken: 1 other name keeps the old content")


def test_write_file_without_a_preview_also_keeps_the_other_names(root):
    got = files.write_file(root, "b.txt", "direct\n")
    assert got["ok"] and got["hard_links"] == 3
    assert (root / "a.txt").read_text() == "one\ntwo\n"
    assert (root / "b.txt").read_text() == "direct\n"


def test_a_single_name_gets_no_note(root):
    prepared = runner.prepare("write_file", {"path": "single.txt", "content": "x\n"}, str(root))
    assert not any(kind == "marker" and "hard link" in text for kind, text in prepared.preview)
    got = runner.execute("write_file", {"path": "single.txt", "content": "x\n"}, str(root), prepared)
    assert got == {"ok": True, "path": "single.txt", "bytes": 2, "created": False}
    assert runner.result_row("c1", "write_file", got)["text"] == "ok: wrote 2 B"


def test_the_note_goes_under_the_totals_and_the_diff_stays_whole(root):
    """The preview of a write to a linked file is the plain preview with the note added
    under its totals line: no diff line lost or repeated, in the window and the whole view."""
    from dashfloat.tools import preview

    note = ("marker", files.hard_links_broken(3))
    new = "".join(f"line {i}\n" for i in range(200))  # past the window: a whole view too
    prepared = runner.prepare("write_file", {"path": "a.txt", "content": new}, str(root))
    window, whole = preview.diff_view("a.txt", b"one\ntwo\n", new.encode())
    assert whole is not None and window[0][0] == "stat" and whole[0][0] == "stat"
    assert prepared.preview == [window[0], note, *window[1:]]
    assert prepared.full == [whole[0], note, *whole[1:]]


@pytest.mark.parametrize("content, after", [
    ("bin\0ary", ("marker", "binary file: 7 bytes (was 8 bytes)")),
    ("one\ntwo\n", ("marker", "no changes: the content is identical")),
])
def test_a_preview_without_totals_has_the_note_on_top(root, content, after):
    """A binary file, or content that does not change, has no totals line: the note is the
    first line, above what the preview says instead."""
    prepared = runner.prepare("write_file", {"path": "a.txt", "content": content}, str(root))
    assert prepared.preview == [("marker", files.hard_links_broken(3)), after], prepared.preview


@pytest.mark.parametrize("links", [1, 0, True, "3", None, 2.0])
def test_a_row_names_links_only_for_a_count_above_one(links):
    """One name is no news, and what is not a count is never shown as one."""
    for name, plain in (("read_file", "ok: 2 lines"), ("write_file", "ok: wrote 4 B")):
        result = {"ok": True, "lines": 2, "bytes": 4, "hard_links": links}
        assert runner.result_row("c1", name, result)["text"] == plain
