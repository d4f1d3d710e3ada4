"""Tests for dashfloat.tools.edit: locate, edit plans, write plans, changed-since-preview."""

from __future__ import annotations

import builtins
import os
import stat
import threading

import pytest

from dashfloat.tools import edit, files, safeopen
from dashfloat.tools.edit import (
    EditPlan,
    WritePlan,
    apply_edit,
    apply_write,
    locate,
    plan_edit,
    plan_write,
)
from dashfloat.tools.files import EDIT_MAX_BYTES, read_file


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    (tmp_path / "outside").mkdir()
    return r


@pytest.mark.parametrize(
    "data, search, count",
    [
        (b"abc", b"x", 0),
        (b"abc", b"b", 1),
        (b"aaa", b"a", 3),
        (b"aaa", b"aa", 2),  # overlapping: positions 0 and 1
        (b"aaaa", b"aa", 3),  # str.count would say 2
        (b"xx\nxx\nxx\n", b"xx\nxx\n", 2),  # the case: lines 1-2 and 2-3
        (b"abab", b"abab", 1),
        (b"ababab", b"abab", 2),  # overlapping by two bytes
        (b"abcabc", b"abc", 2),  # side by side, not overlapping
        (b"def f():\n    pass\n", b"    pass\n", 1),
        (b"x\r\ny\r\n", b"x\ny", 0),  # exact bytes: line endings matter
        (b"caf\xe9 caf\xe9", b"caf\xe9", 2),
        (b"Abc", b"abc", 0),  # no case folding
        (b"}\n}\n}\n", b"}\n}\n", 2),
        (b"", b"a", 0),
    ],
)
def test_locate_counts_every_occurrence_overlapping_ones_included(data, search, count):
    assert locate(data, search) == count
    assert len(edit.occurrences(data, search)) == count


def test_locate_stops_counting_at_its_cap_on_pathological_input():
    data = b"a" * EDIT_MAX_BYTES
    assert locate(data, b"a") == edit.LOCATE_CAP == 1000
    assert locate(data, b"a" * 100) == 1000


def test_occurrences_are_the_start_offsets():
    assert edit.occurrences(b"xx\nxx\nxx\n", b"xx\nxx\n") == [0, 3]
    assert edit.occurrences(b"abcabc", b"abc") == [0, 3]


def test_unique_match_applies(root):
    p = root / "m.py"
    p.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    plan = plan_edit(root, "m.py", "    return 2\n", "    return 3\n")
    assert isinstance(plan, EditPlan)
    assert plan.rel == "m.py" and plan.line == 5
    assert plan.old == p.read_bytes()
    assert plan.new == b"def f():\n    return 1\n\ndef g():\n    return 3\n"
    assert plan.size == len(plan.old) and plan.mode == stat.S_IMODE(os.stat(p).st_mode)
    got = apply_edit(plan)
    assert got == {"ok": True, "path": "m.py", "bytes": len(plan.new), "line": 5}
    assert p.read_bytes() == plan.new  # byte-identical to what was previewed
    assert [n for n in os.listdir(root) if n.endswith(".dftmp")] == []


def test_crlf_and_non_utf8_bytes_preserved(root):
    p = root / "w.txt"
    before = b"caf\xe9\r\nline two\r\n\xff\xfeend\r\n"
    p.write_bytes(before)
    plan = plan_edit(root, "w.txt", "line two", "line 2")
    assert isinstance(plan, EditPlan)
    assert apply_edit(plan)["ok"]
    assert p.read_bytes() == b"caf\xe9\r\nline 2\r\n\xff\xfeend\r\n"


def test_crlf_search_must_match_exactly(root):
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    assert plan_edit(root, "w.txt", "a\nb", "x")["code"] == "search_not_found"
    assert isinstance(plan_edit(root, "w.txt", "a\r\nb", "x"), EditPlan)


def test_empty_search(root):
    (root / "a").write_text("x")
    got = plan_edit(root, "a", "", "y")
    assert got["ok"] is False and got["code"] == "empty_search"


def test_no_change(root):
    (root / "a").write_text("x")
    assert plan_edit(root, "a", "x", "x")["code"] == "no_change"


def test_search_not_found(root):
    (root / "a").write_text("hello")
    got = plan_edit(root, "a", "bye", "x")
    assert got["code"] == "search_not_found"
    assert got["error"].startswith("search block not found")


def test_search_ambiguous_names_the_count(root):
    (root / "a").write_text("x = 1\nx = 1\nx = 1\n")
    got = plan_edit(root, "a", "x = 1\n", "x = 2\n")
    assert got["code"] == "search_ambiguous" and got["matches"] == 3
    assert "3 times" in got["error"]
    assert (root / "a").read_text() == "x = 1\nx = 1\nx = 1\n"


@pytest.mark.parametrize(
    "text, search, count, overlapping",
    [
        ("xx\nxx\nxx\n", "xx\nxx\n", 2, True),  # applied at the first position before the fix
        ("zzzzzz\nxx\nxx\nxx\n", "xx\nxx\n", 2, True),  # overlapping further into the file
        ("aaaa", "aa", 3, True),
        ("}\n}\n}\n", "}\n}\n", 2, True),
        ("f()\nf()\n", "f()", 2, False),
        ("a;a;a;", "a;", 3, False),
    ],
)
def test_an_ambiguous_search_block_is_refused_with_the_count(root, text, search, count, overlapping):
    (root / "a").write_text(text)
    got = plan_edit(root, "a", search, "y")
    assert got["ok"] is False and got["code"] == "search_ambiguous"
    assert got["matches"] == count and got["overlapping"] is overlapping
    assert f"found {count} times in a" in got["error"]
    assert ("overlapping" in got["error"]) is overlapping
    assert "it must match exactly once" in got["error"]
    assert (root / "a").read_text() == text


def test_an_ambiguous_search_block_beyond_the_cap_says_at_least(root):
    (root / "a").write_bytes(b"a" * 5000)
    got = plan_edit(root, "a", "aa", "b")
    assert got["code"] == "search_ambiguous" and got["matches"] == 1000
    assert "found at least 1000 times" in got["error"]


def test_the_preview_path_refuses_an_overlapping_match_too(root):
    """runner.prepare builds the preview from plan_edit, so it cannot show (or approve) a
    first-position edit that the count refuses."""
    from dashfloat.tools import runner

    (root / "a").write_text("xx\nxx\nxx\n")
    got = runner.prepare("edit_file", {"path": "a", "search_block": "xx\nxx\n", "replace_block": "y\n"}, str(root))
    assert isinstance(got, dict) and got["code"] == "search_ambiguous" and got["matches"] == 2


def test_path_errors(root, tmp_path):
    (root / "d").mkdir()
    (tmp_path / "outside" / "s").write_text("secret")
    os.symlink("../outside/s", root / "out")
    assert plan_edit(root, "nope", "a", "b")["code"] == "not_found"
    assert plan_edit(root, "d", "a", "b")["code"] == "not_a_file"
    assert plan_edit(root, "../outside/s", "secret", "x")["code"] == "path_escape"
    assert plan_edit(root, "out", "secret", "x")["code"] == "path_escape"
    assert plan_edit(root, "a\0", "a", "b")["code"] == "bad_arguments"
    assert plan_edit(root, "x", 1, "b")["code"] == "bad_arguments"
    assert plan_edit(root, "x", "a", None)["code"] == "bad_arguments"


def test_binary_refused(root):
    (root / "b").write_bytes(b"abc\0def")
    got = plan_edit(root, "b", "abc", "x")
    assert got["code"] == "binary"


def test_fifo_refused_without_blocking(root):
    os.mkfifo(root / "p")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=plan_edit(root, "p", "a", "b")), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "plan_edit blocked on a FIFO"
    assert out["r"]["code"] == "special_file"


def test_too_large_refused_by_stat_without_reading(root, monkeypatch):
    p = root / "big.log"
    with open(p, "wb") as f:
        f.truncate(EDIT_MAX_BYTES + 1)  # sparse: cheap
    opened = []
    real_open, real_beneath = os.open, safeopen.Root.open

    def spy_os_open(path, flags, *a, **kw):
        opened.append((path, flags))
        return real_open(path, flags, *a, **kw)

    def spy_beneath(self, rel, flags, *a, **kw):  # openat2 opens are not os.open calls
        opened.append((rel, flags))
        return real_beneath(self, rel, flags, *a, **kw)

    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setattr(safeopen.Root, "open", spy_beneath)
    monkeypatch.setattr(builtins, "open", lambda *a, **k: pytest.fail("open() called"))
    got = plan_edit(root, "big.log", "a", "b")
    assert got["code"] == "too_large" and got["size"] == EDIT_MAX_BYTES + 1
    got = plan_write(root, "big.log", "x")
    assert got["code"] == "too_large"
    # only directories were opened (the root, the walk): never the file itself
    assert opened and all(flags & os.O_DIRECTORY for _path, flags in opened), opened


def test_exactly_8_mib_is_allowed(root):
    p = root / "edge"
    p.write_bytes(b"needle" + b"." * (EDIT_MAX_BYTES - 6))
    plan = plan_edit(root, "edge", "needle", "pin")
    assert isinstance(plan, EditPlan) and plan.size == EDIT_MAX_BYTES


def test_changed_since_preview_refuses(root):
    p = root / "a.py"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")
    p.write_text("x = 1\ny = 9\n")  # someone else edited it
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview"
    assert "nothing was written" in got["error"]
    assert p.read_text() == "x = 1\ny = 9\n"


def test_changed_since_preview_same_size(root):
    p = root / "a.py"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")
    p.write_text("z = 1\n")
    assert apply_edit(plan)["code"] == "changed_since_preview"
    assert p.read_text() == "z = 1\n"


def test_changed_since_preview_removed(root):
    p = root / "a.py"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")
    p.unlink()
    assert apply_edit(plan)["code"] == "changed_since_preview"
    assert not p.exists()


def test_changed_since_preview_now_a_link_elsewhere(root):
    p = root / "a.py"
    p.write_text("x = 1\n")
    (root / "other.py").write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")
    p.unlink()
    os.symlink("other.py", p)
    assert apply_edit(plan)["code"] == "changed_since_preview"
    assert (root / "other.py").read_text() == "x = 1\n"


def test_changed_since_preview_now_outside(root, tmp_path):
    (root / "d").mkdir()
    (root / "d" / "a.py").write_text("x = 1\n")
    plan = plan_edit(root, "d/a.py", "x = 1", "x = 2")
    os.rename(root / "d", tmp_path / "outside" / "d")
    os.symlink(tmp_path / "outside" / "d", root / "d")
    assert apply_edit(plan)["code"] == "path_escape"
    assert (tmp_path / "outside" / "d" / "a.py").read_text() == "x = 1\n"


def test_touch_without_change_still_applies(root):
    p = root / "a.py"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")
    os.utime(p, ns=(1, 1))
    assert apply_edit(plan)["ok"]
    assert p.read_text() == "x = 2\n"


def test_edit_keeps_mode(root):
    p = root / "run.sh"
    p.write_text("echo hi\n")
    os.chmod(p, 0o755)
    assert apply_edit(plan_edit(root, "run.sh", "hi", "there"))["ok"]
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o755


def test_failed_edit_leaves_original(root, monkeypatch):
    p = root / "a.py"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a.py", "x = 1", "x = 2")

    def boom(src, dst, **dir_fds):
        raise OSError(5, "simulated")

    monkeypatch.setattr(files.os, "replace", boom)
    got = apply_edit(plan)
    assert got["ok"] is False and got["code"] == "io_error"
    assert p.read_text() == "x = 1\n"
    assert [n for n in os.listdir(root) if n.endswith(".dftmp")] == []


def test_edit_through_inside_link(root):
    (root / "t.txt").write_text("old\n")
    os.symlink("t.txt", root / "l")
    plan = plan_edit(root, "l", "old", "new")
    assert plan.rel == "l"
    assert apply_edit(plan)["ok"]
    assert os.path.islink(root / "l") and (root / "t.txt").read_text() == "new\n"


def test_unicode_edit(root):
    p = root / "u.txt"
    p.write_text("naïve café ✓\n", encoding="utf-8")
    assert apply_edit(plan_edit(root, "u.txt", "café", "tea"))["ok"]
    assert p.read_text(encoding="utf-8") == "naïve tea ✓\n"


def test_edit_non_utf8_name(root):
    name = os.fsdecode(b"caf\xe9.txt")
    (root / name).write_text("a\n")
    plan = plan_edit(root, name, "a", "b")
    assert plan.rel == "caf\\xe9.txt"
    got = apply_edit(plan)
    assert {k: got[k] for k in ("ok", "path", "bytes", "line")} == {"ok": True, "path": "caf\\xe9.txt", "bytes": 2, "line": 1}
    assert "\\xNN" in got["names_escaped"]


# -- write plans --------------------------------------------------------------------------


def test_plan_write_new_file(root):
    plan = plan_write(root, "src/new.py", "print(1)\n")
    assert isinstance(plan, WritePlan)
    assert plan.old is None and plan.created is True and plan.new == b"print(1)\n"
    assert plan.old_binary is False
    assert plan.rel == "src/new.py"
    assert not (root / "src").exists()  # planning writes nothing
    got = apply_write(plan)
    assert got == {"ok": True, "path": "src/new.py", "bytes": 9, "created": True}
    assert (root / "src" / "new.py").read_bytes() == plan.new


def test_plan_write_existing(root):
    p = root / "a.txt"
    p.write_bytes(b"old\r\n")
    os.chmod(p, 0o600)
    plan = plan_write(root, "a.txt", "new\n")
    assert plan.old == b"old\r\n" and plan.created is False and plan.mode == 0o600
    assert plan.old_binary is False
    got = apply_write(plan)
    assert got == {"ok": True, "path": "a.txt", "bytes": 4, "created": False}
    assert p.read_bytes() == b"new\n" and stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_plan_write_binary_old(root):
    (root / "b").write_bytes(b"\0\1\2")
    plan = plan_write(root, "b", "text")
    assert plan.old_binary is True


def test_apply_write_changed_since_preview(root):
    p = root / "a.txt"
    p.write_text("old")
    plan = plan_write(root, "a.txt", "new")
    p.write_text("someone else")
    assert apply_write(plan)["code"] == "changed_since_preview"
    assert p.read_text() == "someone else"


def test_apply_write_file_appeared_since_preview(root):
    plan = plan_write(root, "n.txt", "mine")
    (root / "n.txt").write_text("theirs")
    got = apply_write(plan)
    assert got["code"] == "changed_since_preview"
    assert (root / "n.txt").read_text() == "theirs"


def test_plan_write_errors(root):
    (root / "d").mkdir()
    assert plan_write(root, "d", "x")["code"] == "not_a_file"
    assert plan_write(root, "../x", "x")["code"] == "path_escape"
    assert plan_write(root, "", "x")["code"] == "bad_arguments"
    assert plan_write(root, "a", 5)["code"] == "bad_arguments"
    os.mkfifo(root / "p")
    assert plan_write(root, "p", "x")["code"] == "special_file"


def test_edit_module_exports():
    for name in ("locate", "plan_edit", "apply_edit", "plan_write", "apply_write"):
        assert callable(getattr(edit, name))


def test_plan_survives_a_cwd_change_with_a_relative_root(root, tmp_path, monkeypatch):
    (root / "a.txt").write_text("x\n")
    monkeypatch.chdir(root.parent)
    plan = plan_edit("root", "a.txt", "x", "y")
    assert plan.root == str(root)
    monkeypatch.chdir(tmp_path / "outside")
    assert apply_edit(plan)["ok"]
    assert (root / "a.txt").read_text() == "y\n"


def test_plans_are_frozen(root):
    (root / "a.txt").write_text("x\n")
    plan = plan_edit(root, "a.txt", "x", "y")
    with pytest.raises(AttributeError):
        plan.new = b"something else"
    plan = plan_write(root, "a.txt", "y\n")
    with pytest.raises(AttributeError):
        plan.new = b"something else"


def test_search_and_replace_blocks_that_are_not_valid_text_are_bad_arguments(root):
    (root / "a").write_text("x\n")
    for search, replace, name in (("x\ud800", "y", "search_block"), ("x", "y\udcff", "replace_block")):
        got = plan_edit(root, "a", search, replace)
        assert got["code"] == "bad_arguments" and name in got["error"]
    assert (root / "a").read_text() == "x\n"


def test_the_line_of_a_match_counts_leading_blank_lines(root):
    (root / "a").write_text("\n\nx = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    assert plan.line == 3
    assert apply_edit(plan)["line"] == 3


@pytest.mark.parametrize("nul_at, binary", [(files.BINARY_SAMPLE - 1, True), (files.BINARY_SAMPLE, False)])
def test_binary_sniffing_looks_at_the_same_leading_bytes_as_read_file(root, nul_at, binary):
    data = b"a" * nul_at + b"\0" + b"\nneedle\n"
    (root / "f").write_bytes(data)
    assert (files.read_file(root, "f").get("code") == "binary") is binary
    got = plan_edit(root, "f", "needle", "pin")
    assert (isinstance(got, dict) and got["code"] == "binary") is binary
    assert plan_write(root, "f", "x").old_binary is binary


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_planning_and_applying_leave_no_file_open(root):
    (root / "a").write_text("x = 1\n")
    before = open_fds()
    assert apply_edit(plan_edit(root, "a", "x = 1", "x = 2"))["ok"]
    assert apply_write(plan_write(root, "a", "y\n"))["ok"]
    assert open_fds() == before


def after_stat(monkeypatch, path, n, action):
    """Run `action` (someone else changing the file) right after the `n`-th os.stat of
    `path`, before the caller sees the result: the races between check and use."""
    real_stat = os.stat
    target = os.path.realpath(path)
    calls = []

    def spy(p, *args, **kwargs):
        result = real_stat(p, *args, **kwargs)
        if isinstance(p, str) and p == target:
            calls.append(p)
            if len(calls) == n:
                action()
        return result

    monkeypatch.setattr(os, "stat", spy)


def io_error():
    raise OSError(5, "Input/output error")


def test_a_read_error_is_an_error_result(root, monkeypatch):
    (root / "a").write_text("x = 1\n")

    def failing_read(fd, limit):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files, "read_bytes_bounded", failing_read)
    assert plan_edit(root, "a", "x = 1", "x = 2") == {
        "ok": False, "code": "io_error", "error": "cannot read a: Input/output error"}


def test_a_file_that_became_a_fifo_since_the_preview_is_named_so(root):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    p.unlink()
    os.mkfifo(p)
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview" and "it is no longer a regular file" in got["error"]
    assert stat.S_ISFIFO(os.lstat(p).st_mode)


def test_apply_a_read_error_is_an_error_result(root, monkeypatch):
    (root / "a").write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")

    def failing_read(fd, limit):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files, "read_bytes_bounded", failing_read)
    assert apply_edit(plan) == {"ok": False, "code": "io_error", "error": "cannot read a: Input/output error"}


def test_apply_write_refuses_a_target_that_now_leads_outside(root, tmp_path):
    (root / "d").mkdir()
    (root / "d" / "a").write_text("old")
    plan = plan_write(root, "d/a", "new")
    os.rename(root / "d", tmp_path / "outside" / "d")
    os.symlink(tmp_path / "outside" / "d", root / "d")
    assert apply_write(plan)["code"] == "path_escape"
    assert (tmp_path / "outside" / "d" / "a").read_text() == "old"


def test_a_search_block_with_the_replacement_character_says_why_it_cannot_match(root):
    """read_file shows bytes that are not UTF-8 as U+FFFD; a search block copied from it
    matches nothing, and the error says why (issue 14 §3)."""
    (root / "latin.txt").write_bytes(b"caf\xe9 au lait\n")
    shown = read_file(root, "latin.txt")["content"]
    assert shown == "caf\ufffd au lait\n"
    got = plan_edit(root, "latin.txt", shown, "tea\n")
    assert got["code"] == "search_not_found" and "not valid UTF-8" in got["error"], got
    assert "not valid UTF-8" not in plan_edit(root, "latin.txt", "nothing", "x")["error"]
    assert plan_edit(root, "latin.txt", " au lait", " noir").new == b"caf\xe9 noir\n"


# ---- found by `make mutation` -------------------------------------------------------------


def test_a_working_directory_gone_after_the_check_is_an_error_result(root, tmp_path, monkeypatch):
    from dashfloat.tools import pathpolicy

    (root / "a").write_text("x = 1\n")
    real_resolve = pathpolicy.resolve

    def resolve_then_move(*args, **kwargs):
        res = real_resolve(*args, **kwargs)
        os.rename(root, tmp_path / "moved")
        return res

    monkeypatch.setattr(pathpolicy, "resolve", resolve_then_move)
    got = plan_edit(root, "a", "x = 1", "x = 2")
    assert got == {"ok": False, "code": "not_found", "error": f"no such file or directory: {root}"}


def test_a_file_that_grows_past_the_limit_while_read_is_refused(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    real_open = files.open_regular

    def open_then_grow(beneath, rel):
        fd = real_open(beneath, rel)
        with open(p, "ab") as f:
            f.write(b"y" * (EDIT_MAX_BYTES + 1 - len("x = 1\n")))
        return fd

    monkeypatch.setattr(files, "open_regular", open_then_grow)
    got = plan_edit(root, "a", "x = 1", "x = 2")
    assert got == {"ok": False, "code": "too_large", "size": EDIT_MAX_BYTES + 1,
                   "error": f"edit_file refuses files above {EDIT_MAX_BYTES} bytes: a grew past it"}


def test_a_new_file_is_no_hard_link_to_break(root):
    from dashfloat.tools import runner

    prepared = runner.prepare("write_file", {"path": "new.txt", "content": "x\n"}, str(root))
    assert prepared.plan.created and prepared.plan.links == 1
    assert not [line for line in prepared.preview if line[0] == "marker"]


def race(monkeypatch, before=None, after_stat=None, stat_error=False):
    """Someone else acts in the last moments before the write: `before` just before the check
    that files.write_beneath runs in the directory it writes in, `after_stat` between that
    check's stat and its open; `stat_error`: that stat fails."""
    real = edit._still_as_planned

    def wrapped(rel, expected):
        check = real(rel, expected)

        def racing(dir_fd, name):
            if before:
                before()
            real_stat = os.stat

            def spy(*args, **kwargs):
                monkeypatch.setattr(os, "stat", real_stat)
                if stat_error:
                    raise OSError(5, "Input/output error")
                st = real_stat(*args, **kwargs)
                if after_stat:
                    after_stat()
                return st

            monkeypatch.setattr(os, "stat", spy)
            try:
                return check(dir_fd, name)
            finally:
                monkeypatch.setattr(os, "stat", real_stat)

        return racing

    monkeypatch.setattr(edit, "_still_as_planned", wrapped)


def to_link(p, target):
    target.write_bytes(p.read_bytes())
    p.unlink()
    os.symlink(target.name, p)


def test_a_file_removed_just_before_the_write_is_not_recreated(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    race(monkeypatch, before=p.unlink)
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview" and "it was removed" in got["error"]
    assert not p.exists()


def test_a_file_created_just_before_a_new_write_is_not_replaced(root, monkeypatch):
    p = root / "new"
    plan = plan_write(root, "new", "mine\n")
    race(monkeypatch, before=lambda: p.write_text("theirs\n"))
    got = apply_write(plan)
    assert got["code"] == "changed_since_preview" and "it exists now" in got["error"]
    assert p.read_text() == "theirs\n"


def test_the_last_check_failing_to_stat_writes_nothing(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    race(monkeypatch, stat_error=True)
    assert apply_edit(plan) == {"ok": False, "code": "io_error", "error": "cannot stat a: Input/output error"}
    assert p.read_text() == "x = 1\n"


def test_a_file_swapped_for_a_link_just_before_the_write(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    race(monkeypatch, before=lambda: to_link(p, root / "b"))
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview" and "it is no longer a regular file" in got["error"]
    assert p.is_symlink() and (root / "b").read_text() == "x = 1\n"


def test_a_file_swapped_for_a_link_between_the_last_stat_and_open(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")
    race(monkeypatch, after_stat=lambda: to_link(p, root / "b"))
    got = apply_edit(plan)
    assert got["ok"] is False and "cannot open a" in got["error"], got
    assert p.is_symlink() and (root / "b").read_text() == "x = 1\n"


def test_a_file_swapped_for_a_fifo_between_the_last_stat_and_open_does_not_block(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")

    def to_fifo():
        p.unlink()
        os.mkfifo(p)

    race(monkeypatch, after_stat=to_fifo)
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview" and "its content differs" in got["error"]
    assert stat.S_ISFIFO(os.lstat(p).st_mode)


def test_a_file_that_grows_between_the_last_stat_and_read(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    plan = plan_edit(root, "a", "x = 1", "x = 2")

    def grow():
        with open(p, "a") as f:
            f.write("more\n")

    race(monkeypatch, after_stat=grow)
    got = apply_edit(plan)
    assert got["code"] == "changed_since_preview" and "its content differs" in got["error"]
    assert p.read_text() == "x = 1\nmore\n"


def test_an_edit_never_recreates_a_directory_removed_before_the_write(root, monkeypatch):
    import shutil

    (root / "d").mkdir()
    (root / "d" / "a").write_text("x = 1\n")
    plan = plan_edit(root, "d/a", "x = 1", "x = 2")
    real_write = files.write_resolved

    def remove_then_write(*args, **kwargs):
        shutil.rmtree(root / "d")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(files, "write_resolved", remove_then_write)
    assert apply_edit(plan)["ok"] is False
    assert not (root / "d").exists()


def test_a_replacement_character_in_a_search_block_for_a_utf8_file_gets_no_hint(root):
    (root / "a").write_text("café\n")
    got = plan_edit(root, "a", "caf\ufffd", "tea")
    assert got["code"] == "search_not_found" and got["error"].endswith("including whitespace and line endings)")


def test_a_file_removed_since_a_write_preview_is_not_recreated(root):
    p = root / "a"
    p.write_text("old\n")
    plan = plan_write(root, "a", "new\n")
    p.unlink()
    got = apply_write(plan)
    assert got["code"] == "changed_since_preview" and "it was removed" in got["error"]
    assert not p.exists()


def test_a_missing_file_is_named_as_given_with_the_escape_hint(root):
    """edit_file resolves with must_exist: the error names the path as the model wrote it
    (not as the tool would open it) and says how its \\xNN escapes were read."""
    (root / "sub").mkdir()
    got = plan_edit(root, "sub/../missing.py", "a", "b")
    assert got == {"ok": False, "code": "not_found",
                   "error": "no such file or directory: sub/../missing.py"}
    got = plan_edit(root, "caf\\xe9.txt", "a", "b")
    assert got["code"] == "not_found" and "was read as a byte that is not UTF-8" in got["error"], got


def test_a_missing_command_cwd_is_named_as_given_with_the_escape_hint(root):
    """execute_command's preview resolves its cwd with must_exist too: the refusal names the
    cwd as the model wrote it and says how its \\xNN escapes were read."""
    from dashfloat.tools import runner

    (root / "sub").mkdir()
    got = runner.prepare("execute_command", {"command": "ls", "cwd": "sub/../gone"}, str(root))
    assert got == {"ok": False, "code": "not_found", "error": "no such file or directory: sub/../gone"}
    got = runner.prepare("execute_command", {"command": "ls", "cwd": "caf\\xe9"}, str(root))
    assert got["code"] == "not_found" and "was read as a byte that is not UTF-8" in got["error"], got


def test_a_file_that_grows_far_past_the_limit_while_read_reports_its_real_size(root, monkeypatch):
    p = root / "a"
    p.write_text("x = 1\n")
    real_open = files.open_regular
    grown = EDIT_MAX_BYTES + 4096

    def open_then_grow(beneath, rel):
        fd = real_open(beneath, rel)
        with open(p, "ab") as f:
            f.write(b"y" * (grown - len("x = 1\n")))
        return fd

    monkeypatch.setattr(files, "open_regular", open_then_grow)
    got = plan_edit(root, "a", "x = 1", "x = 2")
    assert got["code"] == "too_large" and got["size"] == grown, got
