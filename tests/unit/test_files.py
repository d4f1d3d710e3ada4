"""Tests for dashfloat.tools.files: read_file, write_file, list_directory, atomic_write."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
import traceback
from pathlib import Path

import pytest

from dashfloat.tools import files, results
from dashfloat.tools.files import (
    LIST_MAX,
    READ_MAX_BYTES,
    READ_MAX_LINES,
    STREAM_ABOVE,
    atomic_write,
    is_binary,
    list_directory,
    read_file,
    write_file,
)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    (tmp_path / "outside").mkdir()
    return r


def numbered(n: int, width: int = 0) -> bytes:
    return b"".join(b"line %d%s\n" % (i, b"x" * width) for i in range(1, n + 1))


def encodable(result: dict) -> None:
    results.encode(result).encode("utf-8")


def no_temps(directory) -> None:
    assert [p for p in os.listdir(directory) if p.endswith(".dftmp")] == []


# -- read_file ----------------------------------------------------------------------------


def test_read_whole_small_file(root):
    (root / "a.txt").write_bytes(b"one\ntwo\nthree\n")
    got = read_file(root, "a.txt")
    assert got == {
        "ok": True,
        "path": "a.txt",
        "content": "one\ntwo\nthree\n",
        "lines": 3,
        "size": 14,
        "offset": 1,
        "truncated": False,
    }


def test_read_window(root):
    (root / "a.txt").write_bytes(numbered(10))
    got = read_file(root, "a.txt", offset=3, limit=2)
    assert got["content"] == "line 3\nline 4\n"
    assert got["truncated"] is True and got["next_offset"] == 5
    assert got["lines"] == 10 and got["offset"] == 3
    assert "lines 3-4 of 10" in got["note"]
    tail = read_file(root, "a.txt", offset=9, limit=5)
    assert tail["content"] == "line 9\nline 10\n" and tail["truncated"] is False
    assert "note" not in tail


def test_last_line_without_newline(root):
    (root / "a.txt").write_bytes(b"a\nb")
    got = read_file(root, "a.txt")
    assert got["content"] == "a\nb" and got["lines"] == 2 and got["truncated"] is False
    assert read_file(root, "a.txt", offset=2)["content"] == "b"


def test_crlf_kept(root):
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    got = read_file(root, "w.txt")
    assert got["content"] == "a\r\nb\r\n" and got["lines"] == 2
    assert read_file(root, "w.txt", offset=2)["content"] == "b\r\n"


def test_only_newline_splits_lines(root):
    (root / "ff.txt").write_bytes(b"a\x0cb\x1cc\xe2\x80\xa8d\ne\n")
    got = read_file(root, "ff.txt", limit=1)
    assert got["content"] == "a\x0cb\x1cc\u2028d\n" and got["lines"] == 2


def test_2000_line_cap_reports_both_totals(root):
    data = numbered(2500)
    (root / "big.txt").write_bytes(data)
    for limit in (2000, 5000, 10_000):
        got = read_file(root, "big.txt", limit=limit)
        assert got["content"].count("\n") == READ_MAX_LINES
        assert got["truncated"] is True and got["next_offset"] == 2001
        assert got["lines"] == 2500 and got["size"] == len(data)
        assert "of 2500 lines" in got["note"] and f"of {len(data)} bytes" in got["note"]
        assert "offset=2001" in got["note"]
    assert "at most 2000 lines" in read_file(root, "big.txt", limit=5000)["note"]
    rest = read_file(root, "big.txt", offset=2001)
    assert rest["content"].startswith("line 2001\n") and rest["truncated"] is False


def test_exactly_2000_lines_is_not_truncated(root):
    (root / "f.txt").write_bytes(numbered(2000))
    got = read_file(root, "f.txt")
    assert got["truncated"] is False and got["lines"] == 2000 and "note" not in got


def test_64k_cap_whole_lines_with_both_totals(root):
    data = numbered(1000, width=100)  # about 108 KiB, below the streaming threshold
    (root / "wide.txt").write_bytes(data)
    got = read_file(root, "wide.txt")
    raw = got["content"].encode()
    assert len(raw) <= READ_MAX_BYTES
    assert raw.endswith(b"\n")  # whole lines only
    n = raw.count(b"\n")
    assert n < 1000 and got["next_offset"] == n + 1
    assert got["truncated"] is True
    assert "of 1000 lines" in got["note"] and f"of {len(data)} bytes" in got["note"]
    assert f"at most {READ_MAX_BYTES} bytes" in got["note"]
    # continuing from next_offset picks up exactly where the reply stopped
    nxt = read_file(root, "wide.txt", offset=got["next_offset"])
    assert nxt["content"].startswith(f"line {n + 1}x")


def test_single_line_longer_than_64k_is_cut(root):
    line = ("é" * 40_000 + "\n").encode()  # 80,001 bytes, two-byte characters
    (root / "min.js").write_bytes(line + b"next\n")
    got = read_file(root, "min.js")
    assert got["truncated"] is True and got["next_offset"] == 2
    assert set(got["content"]) == {"é"}  # cut at a character boundary, no U+FFFD
    assert len(got["content"].encode()) <= READ_MAX_BYTES
    assert "encoding_errors" not in got
    assert "longer than" in got["note"]
    assert read_file(root, "min.js", offset=2)["content"] == "next\n"


def test_large_file_streams_only_the_window(root, monkeypatch):
    data = numbered(40_000)  # about 400 KiB
    assert len(data) > STREAM_ABOVE
    (root / "log.txt").write_bytes(data)
    monkeypatch.setattr(
        files, "read_bytes_bounded", lambda *a: pytest.fail("a large file was read whole")
    )
    got = read_file(root, "log.txt", offset=30_000, limit=3)
    assert got["content"] == "line 30000\nline 30001\nline 30002\n"
    assert got["lines"] is None and got["size"] == len(data)
    assert got["truncated"] is True and got["next_offset"] == 30_003
    assert "not counted" in got["note"]
    # the probe past the window: the window ends exactly at the end of the file
    end = read_file(root, "log.txt", offset=39_998, limit=3)
    assert end["content"] == "line 39998\nline 39999\nline 40000\n"
    assert end["truncated"] is False and "note" not in end
    past = read_file(root, "log.txt", offset=40_001)
    assert past["content"] == "" and past["truncated"] is False and "past the end" in past["note"]


def test_large_file_memory_is_bounded(root, monkeypatch):
    (root / "huge.txt").write_bytes(numbered(60_000, width=10))
    seen = []
    real_reader = files.io.BufferedReader

    class Spy(real_reader):
        def readline(self, size=-1):
            assert 0 < size <= READ_MAX_BYTES + 1 or size == files._CHUNK
            line = super().readline(size)
            seen.append(len(line))
            return line

    monkeypatch.setattr(files.io, "BufferedReader", Spy)
    got = read_file(root, "huge.txt", offset=50_000, limit=2)
    assert got["content"].startswith("line 50000x")
    assert seen and max(seen) <= READ_MAX_BYTES + 1


def test_binary_is_reported_not_dumped(root):
    blob = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10
    (root / "a.out").write_bytes(blob)
    got = read_file(root, "a.out")
    assert got["ok"] is False and got["code"] == "binary" and got["size"] == len(blob)
    assert "content" not in got
    assert "a.out" in got["error"]


def test_binary_without_nul(root):
    blob = bytes((i * 7919 + 13) % 255 + 1 for i in range(8192))  # no zero byte
    (root / "blob.bin").write_bytes(blob)
    assert read_file(root, "blob.bin")["code"] == "binary"


def test_non_utf8_text_is_replaced_and_flagged(root):
    (root / "latin1.txt").write_bytes("café, naïve, résumé\n".encode("latin-1"))
    got = read_file(root, "latin1.txt")
    assert got["ok"] is True and got["encoding_errors"] is True
    assert got["content"] == "caf\ufffd, na\ufffdve, r\ufffdsum\ufffd\n"
    encodable(got)


def test_empty_file(root):
    (root / "empty").write_bytes(b"")
    got = read_file(root, "empty")
    assert got["ok"] is True and got["content"] == "" and got["lines"] == 0
    assert got["truncated"] is False and "empty" in got["note"]


def test_offset_past_the_end(root):
    (root / "a.txt").write_bytes(b"1\n2\n")
    got = read_file(root, "a.txt", offset=50)
    assert got["ok"] is True and got["content"] == "" and got["truncated"] is False
    assert "past the end" in got["note"] and "2 lines" in got["note"]
    assert read_file(root, "a.txt", offset=3)["content"] == ""


@pytest.mark.parametrize(
    ("offset", "limit"), [(0, 10), (-1, 10), (1, 0), (1, 10_001), ("1", 5), (1, True), (1.5, 2)]
)
def test_read_bad_window(root, offset, limit):
    (root / "a.txt").write_text("x\n")
    assert read_file(root, "a.txt", offset=offset, limit=limit)["code"] == "bad_arguments"


def test_read_errors(root, tmp_path):
    (root / "d").mkdir()
    (tmp_path / "outside" / "s.txt").write_text("secret")
    assert read_file(root, "d")["code"] == "not_a_file"
    assert read_file(root, "nope.txt")["code"] == "not_found"
    assert read_file(root, "../outside/s.txt")["code"] == "path_escape"
    os.symlink("../outside/s.txt", root / "l")
    assert read_file(root, "l")["code"] == "path_escape"


def test_a_missing_path_is_named_as_given(root):
    (root / "sub").mkdir()
    msg = "no such file or directory: sub/../missing.py"
    assert read_file(root, "sub/../missing.py") == {"ok": False, "code": "not_found", "error": msg}
    assert list_directory(root, "sub/../missing.py") == {"ok": False, "code": "not_found", "error": msg}


def test_read_through_inside_link(root):
    (root / "t.txt").write_text("t\n")
    os.symlink("t.txt", root / "l")
    got = read_file(root, "l")
    assert got["content"] == "t\n" and got["path"] == "l"


def test_read_non_utf8_name(root):
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"x\n")
    got = read_file(root, os.fsdecode(b"caf\xe9.txt"))
    assert got["ok"] and got["path"] == "caf\\xe9.txt"
    assert got["names_escaped"] == files.names.NOTE
    (root / "plain.txt").write_bytes(b"x\n")
    assert "names_escaped" not in read_file(root, "plain.txt")
    encodable(got)


def test_is_binary():
    assert not is_binary(b"")
    assert not is_binary(b"plain text\n\ttabbed\r\n")
    assert not is_binary("ünïcödé ✓\n".encode())
    assert not is_binary("café\n".encode("latin-1"))
    assert not is_binary(b"\x1b[31mred\x1b[0m\n")
    assert not is_binary("é".encode() * 4000 + b"\xc3")  # cut inside a character
    assert is_binary(b"text\0more")
    assert is_binary(bytes(range(1, 32)) * 20)
    assert is_binary(bytes(range(128, 256)) * 20)


# -- write_file / atomic_write ------------------------------------------------------------


def test_write_creates_parents(root):
    got = write_file(root, "a/b/c.txt", "hi\n")
    assert got == {"ok": True, "path": "a/b/c.txt", "bytes": 3, "created": True}
    assert (root / "a" / "b" / "c.txt").read_bytes() == b"hi\n"
    no_temps(root / "a" / "b")


def test_write_overwrites(root):
    (root / "x.txt").write_text("old")
    got = write_file(root, "x.txt", "new ✓")
    assert got == {"ok": True, "path": "x.txt", "bytes": len("new ✓".encode()), "created": False}
    assert (root / "x.txt").read_text() == "new ✓"
    no_temps(root)


@pytest.mark.parametrize("mode", [0o600, 0o755, 0o640, 0o444])
def test_mode_kept(root, mode):
    p = root / "m.sh"
    p.write_text("old")
    os.chmod(p, mode)
    assert write_file(root, "m.sh", "new")["ok"]
    assert stat.S_IMODE(os.stat(p).st_mode) == mode
    assert p.read_text() == "new"


def test_setuid_bit_not_kept(root):
    p = root / "s"
    p.write_text("old")
    os.chmod(p, 0o4755)
    atomic_write(str(p), b"new")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o755


def test_new_file_mode_follows_umask(root):
    old = os.umask(0o027)
    try:
        write_file(root, "n.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(root / "n.txt").st_mode) == 0o640


def test_failed_replace_leaves_original(root, monkeypatch):
    p = root / "keep.txt"
    p.write_text("original")
    os.chmod(p, 0o600)

    def boom(src, dst, **dir_fds):
        raise OSError(errno.EIO, "simulated I/O error")

    monkeypatch.setattr(files.os, "replace", boom)
    got = write_file(root, "keep.txt", "replacement")
    assert got["ok"] is False and got["code"] == "io_error"
    assert "simulated I/O error" in got["error"]
    assert p.read_text() == "original"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    no_temps(root)


def test_failed_write_leaves_original(root, monkeypatch):
    p = root / "keep.txt"
    p.write_text("original")
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data[:3]))  # a short write first
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "write", full_disk)
    got = write_file(root, "keep.txt", "replacement")
    assert got["code"] == "io_error" and "No space left" in got["error"]
    assert p.read_text() == "original"
    no_temps(root)


def test_failed_fsync_leaves_original(root, monkeypatch):
    p = root / "keep.txt"
    p.write_text("original")

    def bad_fsync(fd):
        raise OSError(errno.EIO, "fsync failed")

    monkeypatch.setattr(files.os, "fsync", bad_fsync)
    assert write_file(root, "keep.txt", "x")["ok"] is False
    assert p.read_text() == "original"
    no_temps(root)


def test_read_only_directory_simulated(root, monkeypatch):
    """Tests run as root, so chmod cannot deny; refuse the O_EXCL create like EACCES would."""
    p = root / "keep.txt"
    p.write_text("original")
    real_open = os.open

    def deny_create(path, flags, *args, **kw):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(files.os, "open", deny_create)
    got = write_file(root, "keep.txt", "new")
    assert got["code"] == "permission_denied"
    assert p.read_text() == "original"
    no_temps(root)


def test_temp_in_target_dir_random_and_exclusive(root, tmp_path, monkeypatch):
    (root / "d").mkdir()
    target = root / "d" / "t.txt"
    target.write_text("old")
    secret = tmp_path / "outside" / "victim"
    secret.write_text("untouched")
    tokens = iter(["a" * 16, "b" * 16])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(tokens))
    # an attacker pre-places a symlink at the first temp name
    trap = root / "d" / (".t.txt." + "a" * 16 + ".dftmp")
    os.symlink(secret, trap)
    seen = []
    real_replace = os.replace

    def spy(src, dst, *, src_dir_fd, dst_dir_fd):
        seen.append((src, dst, os.readlink(f"/proc/self/fd/{src_dir_fd}"), src_dir_fd == dst_dir_fd))
        return real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(files.os, "replace", spy)
    atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert secret.read_text() == "untouched" and os.path.islink(trap)
    (src, dst, directory, same), = seen
    assert directory == str(root / "d") and same  # created and renamed in the target's directory
    assert b"b" * 16 in src and dst == b"t.txt"


def test_temp_names_differ():
    names = {files._temp_name(b"/x/y.txt")[1] for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith(b"/x/.y.txt.") for n in names)
    long = files._temp_name(b"/x/" + b"n" * 255)[1]
    assert len(os.path.basename(long)) <= 255


def test_write_refuses_directory_and_escape(root, tmp_path):
    (root / "d").mkdir()
    assert write_file(root, "d", "x")["code"] == "not_a_file"
    assert write_file(root, ".", "x")["code"] == "not_a_file"
    assert write_file(root, "../outside/new.txt", "x")["code"] == "path_escape"
    os.symlink("../outside", root / "out")
    assert write_file(root, "out/new/x.txt", "x")["code"] == "path_escape"
    assert not (tmp_path / "outside" / "new").exists()
    assert os.listdir(tmp_path / "outside") == []


def test_write_under_a_file_parent(root):
    (root / "f").write_text("x")
    got = write_file(root, "f/g.txt", "x")
    assert got["ok"] is False and got["code"] in ("not_found", "not_a_directory")
    assert (root / "f").read_text() == "x"


def test_write_through_inside_link_updates_target(root):
    (root / "t.txt").write_text("old")
    os.symlink("t.txt", root / "l")
    got = write_file(root, "l", "new")
    assert got["ok"] and got["created"] is False
    assert os.path.islink(root / "l") and (root / "t.txt").read_text() == "new"


def test_write_to_dangling_inside_link_creates_target(root):
    os.symlink("sub/new.txt", root / "dl")
    got = write_file(root, "dl", "x")
    assert got["ok"] and got["created"] is True
    assert (root / "sub" / "new.txt").read_text() == "x"


def test_write_bad_content(root):
    assert write_file(root, "a", 3)["code"] == "bad_arguments"
    assert write_file(root, "a", "x\ud800")["code"] == "bad_arguments"
    assert not (root / "a").exists()


def test_parent_created_dirs_rechecked(root, tmp_path, monkeypatch):
    """A directory swapped for an outside link right after mkdir is caught by the re-check."""
    real_mkdir = os.mkdir

    def racing_mkdir(path, *a, dir_fd=None, **kw):
        real_mkdir(path, *a, dir_fd=dir_fd, **kw)
        if os.path.basename(os.fsdecode(path)) == "a":
            os.rmdir(path, dir_fd=dir_fd)
            os.symlink(tmp_path / "outside", path, dir_fd=dir_fd)

    monkeypatch.setattr(files.os, "mkdir", racing_mkdir)
    got = write_file(root, "a/b/c.txt", "x")
    assert got["code"] == "path_escape"
    assert os.listdir(tmp_path / "outside") == []


# -- list_directory -----------------------------------------------------------------------


def test_list_directory(root):
    (root / "b.txt").write_bytes(b"12345")
    (root / "a_dir").mkdir()
    os.symlink("a_dir", root / "c_link")
    os.symlink("/etc", root / "d_out")
    os.mkfifo(root / "e_fifo")
    got = list_directory(root)
    assert got["ok"] and got["path"] == "." and got["total"] == 5 and got["truncated"] is False
    assert got["entries"] == [
        {"name": "a_dir", "type": "dir"},
        {"name": "b.txt", "type": "file", "size": 5},
        {"name": "c_link", "type": "link", "target": "a_dir"},
        {"name": "d_out", "type": "link", "target": "/etc"},
        {"name": "e_fifo", "type": "other"},
    ]


def test_list_subdirectory_and_errors(root):
    (root / "s").mkdir()
    (root / "s" / "x").write_text("x")
    (root / "f").write_text("x")
    assert list_directory(root, "s")["entries"] == [{"name": "x", "type": "file", "size": 1}]
    assert list_directory(root, "s")["path"] == "s"
    assert list_directory(root, "f")["code"] == "not_a_directory"
    assert list_directory(root, "nope")["code"] == "not_found"
    assert list_directory(root, "..")["code"] == "path_escape"
    os.symlink("/etc", root / "out")
    assert list_directory(root, "out")["code"] == "path_escape"


def test_list_cap_501_sorted_head(root, monkeypatch):
    d = root / "many"
    d.mkdir()
    names = [f"f{i:04d}" for i in range(600)]
    for name in reversed(names):
        (d / name).write_bytes(b"")
    base = os.fsencode(str(d))
    statted = []
    real_lstat = os.lstat

    def spy(path, *a, **kw):
        if os.path.dirname(os.fsencode(path)) == base:
            statted.append(path)
        return real_lstat(path, *a, **kw)

    monkeypatch.setattr(files.os, "lstat", spy)
    got = list_directory(root, "many")
    assert got["truncated"] is True and got["total"] == 600
    assert len(got["entries"]) == LIST_MAX == 501
    assert [e["name"] for e in got["entries"]] == names[:501]
    assert len(statted) <= LIST_MAX


def test_list_exactly_501_not_truncated(root):
    for i in range(501):
        (root / f"{i:03d}").write_bytes(b"")
    got = list_directory(root)
    assert got["truncated"] is False and got["total"] == 501 and len(got["entries"]) == 501


def test_list_sorts_by_bytes_and_writes_names_to_give_back(root):
    """Valid UTF-8 names go as they are (JSON carries a newline or an ESC; the screen escapes
    them itself); a name that is not UTF-8 is written with \\xNN and flagged."""
    for raw in (b"caf\xe9.txt", b"Zeta", b"alpha", b"\xc3\xa9t\xc3\xa9", b"a\x1b[31mred", b"nl\nx"):
        with open(os.path.join(os.fsencode(str(root)), raw), "wb"):
            pass
    got = list_directory(root)
    encodable(got)
    by_name = {e["name"]: e for e in got["entries"]}
    assert [e["name"] for e in got["entries"]] == [
        "Zeta",
        "a\x1b[31mred",
        "alpha",
        "caf\\xe9.txt",
        "nl\nx",
        "été",
    ]
    assert by_name["caf\\xe9.txt"]["escaped"] is True
    assert [n for n, e in by_name.items() if e.get("escaped")] == ["caf\\xe9.txt"]
    assert "\\xNN" in got["names_escaped"]


def test_list_without_escaped_names_has_no_note(root):
    (root / "plain.txt").write_text("")
    got = list_directory(root)
    assert "names_escaped" not in got and "escaped" not in got["entries"][0]


def test_list_non_utf8_directory(root):
    d = os.path.join(os.fsencode(str(root)), b"d\xff")
    os.mkdir(d)
    open(os.path.join(d, b"x"), "wb").close()
    got = list_directory(root, os.fsdecode(b"d\xff"))
    assert got["ok"] and got["path"] == "d\\xff" and got["entries"][0]["name"] == "x"
    encodable(got)


# -- edges and error paths (found by `make mutation`) -----------------------------------------

TEXT_CONTROLS = (7, 8, 9, 10, 11, 12, 13, 27)   # BEL BS TAB LF VT FF CR ESC


def test_is_binary_answers_a_bool():
    assert is_binary(b"") is False
    assert is_binary(b"text\n") is False
    assert is_binary(b"\0") is True


@pytest.mark.parametrize("byte", range(0x20))
def test_only_the_usual_controls_count_as_text(byte):
    sample = bytes([byte]) + b"a"   # half control bytes
    assert is_binary(sample * 50) is (byte not in TEXT_CONTROLS)


def test_delete_counts_as_a_non_text_control():
    assert is_binary(b"\x7fa" * 50) is True


def test_more_than_ten_percent_control_bytes_is_binary():
    assert is_binary(b"\x01" * 10 + b"a" * 90) is False   # exactly 10 %
    assert is_binary(b"\x01" * 11 + b"a" * 89) is True


def test_more_than_thirty_percent_undecodable_is_binary():
    assert is_binary(b"\xff" * 30 + b"a" * 70) is False   # exactly 30 %
    assert is_binary(b"\xff" * 31 + b"a" * 69) is True


def test_a_character_cut_by_the_end_of_the_sample_is_not_evidence():
    assert is_binary(b"ab\xe2\x9c") is False   # the start of a three-byte check mark


def test_a_nul_in_the_first_byte_is_binary(root):
    (root / "z").write_bytes(b"\0" + b"text\n" * 10)
    assert read_file(root, "z")["code"] == "binary"


def test_a_line_cut_inside_a_character_is_cut_before_it(root):
    (root / "min.js").write_bytes(b"a" + "é".encode() * 40_000 + b"\n")   # the cap falls inside an é
    got = read_file(root, "min.js")
    assert got["content"] == "a" + "é" * ((READ_MAX_BYTES - 1) // 2)
    assert "encoding_errors" not in got


def test_a_cut_line_with_invalid_bytes_is_flagged_and_still_cut_cleanly(root):
    (root / "min.js").write_bytes(b"\xff" + "é".encode() * 40_000 + b"\n")
    got = read_file(root, "min.js")
    assert got["encoding_errors"] is True
    assert got["content"] == "\ufffd" + "é" * ((READ_MAX_BYTES - 1) // 2)


def test_a_file_ending_inside_a_character_shows_it_replaced(root):
    (root / "a.txt").write_bytes(b"ok\n\xc3")
    got = read_file(root, "a.txt")
    assert got["content"] == "ok\n\ufffd" and got["encoding_errors"] is True
    assert read_file(root, "a.txt", offset=2)["content"] == "\ufffd"


def test_a_last_line_without_newline_is_not_past_the_end(root):
    (root / "a.txt").write_bytes(b"a\nb")
    for offset in (1, 2):
        got = read_file(root, "a.txt", offset=offset)
        assert "note" not in got and got["truncated"] is False


def test_a_file_of_exactly_the_streaming_threshold_is_counted(root):
    data = b"x" * (STREAM_ABOVE - 1) + b"\n"
    (root / "edge.txt").write_bytes(data)
    got = read_file(root, "edge.txt", limit=1)
    assert got["lines"] == 1 and got["size"] == STREAM_ABOVE
    assert got["truncated"] is True   # the line is longer than a reply
    assert got["content"] == "x" * READ_MAX_BYTES


def test_the_first_line_of_a_large_file(root):
    (root / "log.txt").write_bytes(numbered(40_000))
    got = read_file(root, "log.txt", limit=2)
    assert got["content"] == "line 1\nline 2\n" and got["lines"] is None


def test_a_file_that_grows_past_the_threshold_while_read_is_streamed_from_its_start(root, monkeypatch):
    p = root / "log.txt"
    p.write_bytes(numbered(20_000))   # under 256 KiB
    assert p.stat().st_size < STREAM_ABOVE
    real_pread = os.pread

    def sample_then_grow(fd, n, offset):  # after the size was taken, before the content is read
        result = real_pread(fd, n, offset)
        with open(p, "ab") as fh:
            fh.write(numbered(20_000))
        return result

    monkeypatch.setattr(os, "pread", sample_then_grow)
    got = read_file(root, "log.txt", limit=2)
    assert got["content"] == "line 1\nline 2\n"
    assert got["lines"] is None   # streamed: the total is no longer known
    assert got["size"] == p.stat().st_size  # its real size, not the one it had before the read


def test_a_file_that_grew_while_read_never_shows_more_bytes_than_its_size(root, monkeypatch):
    p = root / "log.txt"
    p.write_bytes(b"a" * 100)
    real_pread = os.pread

    def sample_then_grow(fd, n, offset):
        result = real_pread(fd, n, offset)
        with open(p, "ab") as fh:
            fh.write((b"x" * 99 + b"\n") * 10_000)
        return result

    monkeypatch.setattr(os, "pread", sample_then_grow)
    got = read_file(root, "log.txt")
    assert got["size"] == 1_000_100 == p.stat().st_size
    assert f"{len(got['content'])} of 1000100 bytes" in got["note"]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_read_error_is_a_result(root, monkeypatch):
    (root / "a.txt").write_text("x\n")

    def failing_pread(fd, n, offset):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "pread", failing_pread)
    assert read_file(root, "a.txt") == {"ok": False, "code": "io_error", "error": "cannot read a.txt: Input/output error"}


def test_the_note_names_the_requested_limit_when_it_cut_the_reply(root):
    (root / "a.txt").write_bytes(numbered(5))
    got = read_file(root, "a.txt", limit=2)
    assert "(the requested limit of 2 lines)" in got["note"]


def test_read_bytes_bounded_stops_at_the_limit_across_chunks(root):
    (root / "big").write_bytes(b"z" * (2 * files._CHUNK + 10))
    fd = os.open(root / "big", os.O_RDONLY)
    try:
        assert len(files.read_bytes_bounded(fd, files._CHUNK + 1)) == files._CHUNK + 1
    finally:
        os.close(fd)


def test_atomic_write_survives_short_writes(root, monkeypatch):
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:3])))
    atomic_write(str(root / "a"), b"0123456789")
    assert (root / "a").read_bytes() == b"0123456789"


def test_a_replacement_is_private_until_it_gets_the_old_mode(root, monkeypatch):
    p = root / "a"
    p.write_text("old")
    os.chmod(p, 0o644)
    modes = []
    real_write = os.write

    def spy(fd, data):
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    atomic_write(str(p), b"new")
    assert modes == [0o600]
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o644


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_new_file_gets_0666_less_the_umask(root, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write(str(root / "n"), b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(root / "n").st_mode) == mode


def test_the_file_then_its_directory_are_fsynced(root, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def spy(fd):
        st = os.fstat(fd)
        synced.append((stat.S_ISDIR(st.st_mode), st.st_ino))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    (root / "d").mkdir()
    atomic_write(str(root / "d" / "a"), b"x")
    assert synced == [(False, os.stat(root / "d" / "a").st_ino), (True, os.stat(root / "d").st_ino)]


def test_the_temp_file_of_a_bare_name_is_in_the_current_directory():
    directory, tmp = files._temp_name(b"name.txt")
    assert directory == b"." and tmp.startswith(b".name.txt.") and tmp.endswith(b".dftmp")
    assert files._temp_name(b"/x/y/name.txt")[0] == b"/x/y"


def test_atomic_write_refuses_what_is_not_a_regular_file(root, tmp_path):
    (root / "d").mkdir()
    os.symlink(tmp_path / "outside" / "v", root / "l")
    for name in ("d", "l"):
        with pytest.raises(files.NotRegularFile):
            atomic_write(str(root / name), b"x")
    assert not (tmp_path / "outside" / "v").exists() and os.path.islink(root / "l")
    no_temps(root)


def test_atomic_write_gives_up_when_every_temp_name_is_taken(root, monkeypatch):
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: "a" * 16)
    (root / ".t.aaaaaaaaaaaaaaaa.dftmp").write_text("someone's")
    with pytest.raises(FileExistsError):
        atomic_write(str(root / "t"), b"x")
    assert not (root / "t").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files away")
def test_root_keeps_the_owner_and_group_of_a_replaced_file(root):
    theirs = root / "theirs"
    theirs.write_text("old")
    os.chown(theirs, 12345, 12346)
    shared = root / "shared"
    shared.write_text("old")
    os.chown(shared, 0, 12346)
    for p in (theirs, shared):
        atomic_write(str(p), b"new")
    assert (os.stat(theirs).st_uid, os.stat(theirs).st_gid) == (12345, 12346)
    assert (os.stat(shared).st_uid, os.stat(shared).st_gid) == (0, 12346)


def as_user(uid: int, groups: list[int], fn) -> None:
    """Run `fn` in a child process with the identity of `uid` (and `groups`); fail the test
    with the child's traceback if it raises."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        code = 1
        try:
            os.close(read_end)
            os.setgroups(groups)
            os.setgid(uid)
            os.setuid(uid)
            fn()
            code = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        report = fh.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report


@pytest.fixture
def world_dir():
    """A directory another user can reach (pytest's tmp_path is private to root)."""
    path = tempfile.mkdtemp(prefix="dashfloat-test-", dir="/tmp")
    os.chmod(path, 0o755)
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_user_keeps_the_group_of_a_group_shared_file(world_dir):
    """A user editing a file of the group "devs" (mode 0660) must not hand it to their own
    group: the rest of devs would lose it."""
    nobody, devs = 65534, 12347
    shared = world_dir / "shared"
    shared.mkdir()
    os.chown(shared, nobody, devs)
    os.chmod(shared, 0o775)
    mine = shared / "mine"   # owned by the user, group devs
    mine.write_text("old")
    os.chown(mine, nobody, devs)
    os.chmod(mine, 0o660)
    colleague = shared / "colleague"   # a colleague's, group-writable
    colleague.write_text("old")
    os.chown(colleague, 12345, devs)
    os.chmod(colleague, 0o664)
    as_user(nobody, [devs], lambda: (atomic_write(str(mine), b"new"), atomic_write(str(colleague), b"new")))
    assert mine.read_text() == "new" and colleague.read_text() == "new"
    assert (os.stat(mine).st_uid, os.stat(mine).st_gid) == (nobody, devs)
    assert stat.S_IMODE(os.stat(mine).st_mode) == 0o660
    # the owner cannot be kept without root; the group can
    assert (os.stat(colleague).st_uid, os.stat(colleague).st_gid) == (nobody, devs)


def test_a_target_that_became_a_directory_is_not_a_file(root):
    res = files.pathpolicy.resolve(root, "x")
    (root / "x").mkdir()
    assert files.write_resolved(res, b"data") == {"ok": False, "code": "not_a_file", "error": "not a regular file: x"}


def test_a_directory_that_cannot_be_listed_is_a_result(root, monkeypatch):
    def scandir(path):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "scandir", scandir)
    assert list_directory(root) == {"ok": False, "code": "permission_denied", "error": "permission denied: list ."}


# -- names from a listing go back into every tool (issue 14 §3) --------------------------------

# Each name, with the content its file holds. b"a\\xff" (ASCII) and b"a\xff" side by side: two
# files that a listing must not give the same text.
ROUND_TRIP = {
    b"caf\xe9.txt": b"latin-1 name\n",
    b"\xff\xfe": b"two bytes, neither UTF-8\n",
    b"nl\nname": b"a newline in the name\n",
    b"a\\xff": b"ASCII: a, backslash, x, f, f\n",
    b"a\xff": b"a and the byte 0xff\n",
    "é.txt".encode(): b"valid UTF-8\n",
    b"back\\slash": b"one backslash\n",
    b"sub\xe9": None,  # a directory
}


def _as_the_model_sends(name: str, **args) -> dict:
    """A listing's name as the model reads it (the tool message JSON) and sends it back (a
    call's arguments JSON)."""
    return json.loads(json.dumps({"path": name, **args}))


def _run(root, tool: str, args: dict) -> dict:
    from dashfloat.tools import catalogue, runner

    args, bad = catalogue.validate(tool, args)
    assert bad is None, bad
    prepared = runner.prepare(tool, args, str(root)) if runner.needs_confirmation(tool) else None
    if isinstance(prepared, dict):
        return prepared
    return json.loads(results.encode(runner.execute(tool, args, str(root), prepared)))


@pytest.fixture
def odd_names(root):
    base = os.fsencode(str(root))
    for raw, data in ROUND_TRIP.items():
        if data is None:
            os.mkdir(os.path.join(base, raw))
            with open(os.path.join(base, raw, b"in\xff.txt"), "wb") as fh:
                fh.write(b"inside\n")
        else:
            with open(os.path.join(base, raw), "wb") as fh:
                fh.write(data)
    return root


def _listed(root, path: str = ".") -> dict[bytes, str]:
    """{the name on disk: the text the listing gives for it}, through the JSON the model reads."""
    got = json.loads(results.encode(list_directory(root, path)))
    assert got["ok"], got
    texts = [e["name"] for e in got["entries"]]
    assert len(set(texts)) == len(texts), f"two names share a text: {texts}"
    base = os.fsencode(os.path.join(str(root), path))
    on_disk = sorted(os.listdir(base))
    assert len(texts) == len(on_disk)
    assert "\\xNN" in got["names_escaped"]
    return dict(zip(on_disk, texts, strict=True))


def test_read_file_by_the_name_the_listing_gave(odd_names):
    for raw, text in _listed(odd_names).items():
        if ROUND_TRIP[raw] is None:
            continue
        got = _run(odd_names, "read_file", _as_the_model_sends(text))
        assert got["ok"], (raw, text, got)
        assert got["content"] == ROUND_TRIP[raw].decode(), (raw, text)
        assert got["path"] == text
    listed = _listed(odd_names)
    inner = _listed(odd_names, os.fsdecode(b"sub\xe9"))
    got = _run(odd_names, "read_file", _as_the_model_sends(listed[b"sub\xe9"] + "/" + inner[b"in\xff.txt"]))
    assert got["ok"] and got["content"] == "inside\n", got


def test_write_file_by_the_name_the_listing_gave_overwrites_that_file(odd_names):
    before = sorted(os.listdir(os.fsencode(str(odd_names))))
    for raw, text in _listed(odd_names).items():
        if ROUND_TRIP[raw] is None:
            continue
        got = _run(odd_names, "write_file", _as_the_model_sends(text, content=f"new {text!r}\n"))
        assert got["ok"] and got["created"] is False, (raw, text, got)
        with open(os.path.join(os.fsencode(str(odd_names)), raw), "rb") as fh:
            assert fh.read() == f"new {text!r}\n".encode(), raw
    assert sorted(os.listdir(os.fsencode(str(odd_names)))) == before, "a differently named file appeared"


def test_edit_file_by_the_name_the_listing_gave(odd_names):
    for raw, text in _listed(odd_names).items():
        if ROUND_TRIP[raw] is None:
            continue
        old = ROUND_TRIP[raw].decode()
        got = _run(odd_names, "edit_file", _as_the_model_sends(text, search_block=old, replace_block="edited\n"))
        assert got["ok"], (raw, text, got)
        with open(os.path.join(os.fsencode(str(odd_names)), raw), "rb") as fh:
            assert fh.read() == b"edited\n", raw


def test_list_and_cwd_by_the_name_the_listing_gave(odd_names):
    text = _listed(odd_names)[b"sub\xe9"]
    got = _run(odd_names, "list_directory", _as_the_model_sends(text))
    assert got["ok"] and got["path"] == text and [e["name"] for e in got["entries"]] == ["in\\xff.txt"]
    got = _run(odd_names, "execute_command", {"command": "pwd", "cwd": text})
    assert got["ok"] and got["output"].rstrip("\n").endswith("sub\ufffd"), got  # the shell's bytes, replaced


def test_a_missing_escaped_name_says_how_it_was_read(root):
    got = read_file(root, "nothing\\xff.txt")
    assert got["code"] == "not_found" and "read as a byte" in got["error"], got
    assert got["error"].startswith("no such file or directory: nothing\\xff.txt ("), got
    got = read_file(root, "caf\\xc3\\xa9")  # no written form (é is written as é): literal
    assert got["error"].startswith("no such file or directory: caf\\\\xc3\\\\xa9"), got
    assert "read as" not in read_file(root, "nothing.txt")["error"]


def test_the_listing_row_on_screen_has_one_line_per_entry(odd_names):
    """A newline in a name is shown escaped on the outcome row, not as a second entry; bytes
    that are not UTF-8 are shown as the model reads them."""
    from dashfloat.tools import runner

    row = runner.result_row("c1", "list_directory", list_directory(odd_names))
    assert row["text"] == f"ok: {len(ROUND_TRIP)} entries"
    assert len(row["excerpt"]) == len(ROUND_TRIP)
    assert "nl\\nname" in row["excerpt"] and "caf\\xe9.txt" in row["excerpt"] and "sub\\xe9/" in row["excerpt"]


# -- found by `make mutation` (i8 §5) ---------------------------------------------------------


@pytest.mark.parametrize("nul_at, code", [(8 * 1024 - 1, "binary"), (8 * 1024, None)])
def test_binary_sniffing_looks_at_the_first_8_kib(root, nul_at, code):
    # the sample is the first 8 KiB (read_file and edit_file share it): a NUL within it makes
    # the file binary; one past it is content, shown as it is
    (root / "f").write_bytes(b"a" * nul_at + b"\0\n")
    got = read_file(root, "f")
    assert got.get("code") == code
    if code is None:
        assert got["content"] == "a" * nul_at + "\0\n"


def test_decode_text_reports_an_incomplete_last_character_unless_told_the_bytes_were_cut():
    assert files.decode_text(b"ok\xc3") == ("ok\ufffd", True)
    assert files.decode_text(b"ok\xc3", cut=True) == ("ok", False)
    assert files.decode_text(b"\xffok\xc3", cut=True) == ("\ufffdok", True)


@pytest.mark.parametrize("taken, written", [(7, True), (8, False)])
def test_atomic_write_tries_eight_temp_names(root, monkeypatch, taken, written):
    # names already there (another writer's, or a leftover) are skipped: the eighth free
    # one is still used; after eight taken ones the write gives up and changes nothing
    tokens = iter(f"{i:016x}" for i in range(100))
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(tokens))
    for i in range(taken):
        (root / f".t.{i:016x}.dftmp").write_text("someone's")
    if written:
        atomic_write(str(root / "t"), b"x")
        assert (root / "t").read_bytes() == b"x"
    else:
        with pytest.raises(FileExistsError):
            atomic_write(str(root / "t"), b"x")
        assert not (root / "t").exists()


@pytest.mark.parametrize("exc, code, message", [
    (files.safeopen.Escape("a link leads outside"), "path_escape",
     f"path escapes the working directory: a.txt (a link leads outside; {files.pathpolicy.ALLOWED})"),
    (files.safeopen.Changed("a.txt"), "path_changed",
     "cannot open a.txt: a.txt kept changing while it was opened (a directory swapped with a "
     "symbolic link?); nothing was used, try again"),
    (PermissionError(errno.EACCES, "Permission denied"), "permission_denied", "permission denied: open a.txt"),
    (FileNotFoundError(errno.ENOENT, "No such file"), "not_found", "no such file or directory: a.txt"),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory"), "not_a_directory",
     "cannot open a.txt: not a directory (it, or a directory on its path, is something else now)"),
    (OSError(errno.ELOOP, "Too many levels"), "io_error",
     "cannot open a.txt: too many levels of symbolic links (a symlink loop?), or it turned into a "
     "symbolic link meanwhile"),
    (OSError(errno.EIO, "Input/output error"), "io_error", "cannot open a.txt: Input/output error"),
    (OSError("no errno at all"), "io_error", "cannot open a.txt: no errno at all"),
])
def test_each_failure_to_open_a_file_is_its_own_result(root, monkeypatch, exc, code, message):
    # what changed between the policy's check and the open (the file removed, a parent
    # swapped for a file or a link...) is told apart, never a traceback
    (root / "a.txt").write_text("x\n")

    real_open = files.safeopen.Root.open

    def failing_open(self, rel, flags, mode=0o666):
        if flags & os.O_NONBLOCK:  # read_file's open, after the policy's checks
            raise exc
        return real_open(self, rel, flags, mode)

    monkeypatch.setattr(files.safeopen.Root, "open", failing_open)
    assert read_file(root, "a.txt") == {"ok": False, "code": code, "error": message}


def test_a_file_that_stops_being_regular_after_the_check_is_refused_and_closed(root, monkeypatch):
    # the policy's check passed; what was opened is something else now: a directory, a FIFO
    (root / "d").mkdir()
    os.mkfifo(root / "p")
    monkeypatch.setattr(files.pathpolicy, "check_regular", lambda res, beneath=None: None)
    before = open_fds()
    assert read_file(root, "d") == {"ok": False, "code": "not_a_file", "error": "not a regular file: d"}
    got = read_file(root, "p")
    assert got["ok"] is False and got["code"] == "special_file" and "p" in got["error"]
    assert open_fds() == before


def test_a_failing_stat_of_the_opened_file_is_a_result_and_closes_it(root, monkeypatch):
    (root / "a.txt").write_text("x\n")
    before = open_fds()

    def failing_fstat(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fstat", failing_fstat)
    got = read_file(root, "a.txt")
    monkeypatch.undo()
    assert got == {"ok": False, "code": "io_error", "error": "cannot stat a.txt: Input/output error"}
    assert open_fds() == before


def test_a_working_directory_that_cannot_be_opened_is_named_as_given(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("x\n")
    os.symlink("real", tmp_path / "link")

    def refuse(path):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(files.safeopen, "Root", refuse)
    for call in (lambda r: read_file(r, "a.txt"), lambda r: write_file(r, "a.txt", "y"),
                 lambda r: list_directory(r, ".")):
        assert call(tmp_path / "link") == {
            "ok": False, "code": "permission_denied",
            "error": f"permission denied: open the working directory {tmp_path / 'link'}"}


@pytest.mark.parametrize(("offset", "limit", "message"), [
    (0, 10, "offset must be >= 1, got 0"),
    (1, 0, "limit must be 1..10000, got 0"),
    (1, 10_001, "limit must be 1..10000, got 10001"),
    ("1", 5, "offset must be an integer"),
    (1, True, "limit must be an integer"),
])
def test_a_bad_window_says_what_is_allowed(root, offset, limit, message):
    (root / "a.txt").write_text("x\n")
    assert read_file(root, "a.txt", offset=offset, limit=limit) == {"ok": False, "code": "bad_arguments",
                                                                     "error": message}


def test_atomic_write_of_a_bare_name_writes_in_the_current_directory(root, monkeypatch):
    monkeypatch.chdir(root)
    before = open_fds()
    atomic_write("bare.txt", b"x")
    atomic_write(b"bare.txt", b"y")
    assert (root / "bare.txt").read_bytes() == b"y"
    assert open_fds() == before
    no_temps(root)


def test_writes_and_listings_leave_no_descriptor_open(root):
    (root / "d").mkdir()
    before = open_fds()
    assert write_file(root, "d/a.txt", "x")["ok"] is True
    assert write_file(root, "d/a.txt", "y")["ok"] is True
    assert write_file(root, "d", "y")["code"] == "not_a_file"
    assert list_directory(root, "d")["total"] == 1
    assert read_file(root, "d/a.txt")["content"] == "y"
    assert open_fds() == before


def test_an_entry_that_vanishes_before_its_stat_is_listed_as_other(root, monkeypatch):
    for name in ("a", "b", "c"):
        (root / name).write_text(name)
    real_stat = os.stat

    def stat_fails_for_b(path, *a, **kw):
        if path == b"b":
            raise FileNotFoundError(errno.ENOENT, "gone", path)
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat_fails_for_b)
    got = list_directory(root)
    assert got["entries"] == [{"name": "a", "type": "file", "size": 1}, {"name": "b", "type": "other"},
                              {"name": "c", "type": "file", "size": 1}]
    assert got["total"] == 3 and got["truncated"] is False


def test_a_link_whose_target_cannot_be_read_is_listed_without_one(root, monkeypatch):
    os.symlink("a", root / "l")
    os.symlink("b", root / "m")

    def readlink_fails_for_l(path, *a, **kw):
        if path == b"l":
            raise OSError(errno.EIO, "Input/output error")
        return os.fsencode("b")

    monkeypatch.setattr(os, "readlink", readlink_fails_for_l)
    assert list_directory(root)["entries"] == [{"name": "l", "type": "link"},
                                               {"name": "m", "type": "link", "target": "b"}]


def test_a_file_with_two_names_says_so(root):
    (root / "a").write_text("x\n")
    os.link(root / "a", root / "b")
    got = read_file(root, "a")
    assert got["hard_links"] == 2
    assert got["hard_links_note"] == "this file has 2 hard links: other names see the same content"


def test_reading_a_large_file_closes_its_descriptor_exactly_once(root):
    # a second close of the same number could close a file another thread opened meanwhile;
    # only a development-mode interpreter reports the failed second close, so ask one
    import subprocess
    import sys

    (root / "big").write_bytes(numbered(40_000))  # streamed
    (root / "small").write_bytes(numbered(10))
    assert read_file(root, "big", limit=2)["content"] == "line 1\nline 2\n"  # here too (so the tracer sees it)
    package_root = Path(files.__file__).resolve().parents[2]
    code = ("import sys\nseen = []\nsys.unraisablehook = lambda u: seen.append(repr(u.exc_value))\n"
            "from dashfloat.tools import files\n"
            "for name in ('big', 'small'):\n"
            "    assert files.read_file(sys.argv[1], name, limit=2)['content'] == 'line 1\\nline 2\\n'\n"
            "print(seen)\n")
    out = subprocess.run([sys.executable, "-X", "dev", "-c", code, str(root)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(package_root)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_atomic_write_under_a_file_names_the_parent_that_is_not_a_directory(root):
    (root / "f").write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        atomic_write(str(root / "f" / "a"), b"y")
    assert os.fsdecode(info.value.filename) == str(root / "f")
    assert (root / "f").read_text() == "x"


def test_write_beneath_refuses_the_root_itself(root):
    with files.safeopen.Root(str(root)) as beneath:
        assert files.write_beneath(beneath, ".", b"x") == {"ok": False, "code": "not_a_file",
                                                             "error": "not a regular file: ."}
    assert sorted(os.listdir(root)) == []


def test_a_directory_that_cannot_be_opened_for_listing_is_a_result(root, monkeypatch):
    (root / "d").mkdir()
    real_open_dir = files.safeopen.Root.open_dir

    def open_dir(self, rel, *, read=False):
        if read:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open_dir(self, rel, read=read)

    monkeypatch.setattr(files.safeopen.Root, "open_dir", open_dir)
    assert list_directory(root, "d") == {"ok": False, "code": "permission_denied", "error": "permission denied: list d"}


def test_write_resolved_without_a_working_directory_is_a_result(root, monkeypatch):
    res = files.pathpolicy.resolve(root, "a.txt")

    def refuse(path):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(files.safeopen, "Root", refuse)
    assert files.write_resolved(res, b"x") == {
        "ok": False, "code": "permission_denied", "error": f"permission denied: open the working directory {root}"}
    assert not (root / "a.txt").exists()


def test_a_replacement_keeps_the_group_when_the_owner_cannot_be_kept(root, monkeypatch):
    p = root / "shared"
    p.write_text("old")
    st = os.stat(p)
    calls = []

    def fchown(fd, uid, gid):
        calls.append((uid, gid))
        if uid != -1:
            raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", fchown)
    atomic_write(str(p), b"new")
    assert calls == [(st.st_uid, st.st_gid), (-1, st.st_gid)]
    assert p.read_bytes() == b"new"

    def never(fd, uid, gid):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", never)
    atomic_write(str(p), b"newer")  # neither can be kept: written all the same
    assert p.read_bytes() == b"newer"


def test_write_resolved_creates_missing_parents_unless_told_not_to(root):
    assert files.write_resolved(files.pathpolicy.resolve(root, "new/a.txt"), b"x")["ok"] is True
    assert (root / "new" / "a.txt").read_bytes() == b"x"
    got = files.write_resolved(files.pathpolicy.resolve(root, "other/a.txt"), b"x", make_parents=False)
    assert got["ok"] is False and not (root / "other").exists()


def test_a_link_target_that_is_not_utf8_is_written_with_escapes_and_said_so(root):
    os.symlink(b"caf\xe9", os.path.join(os.fsencode(root), b"l"))
    os.symlink("plain", root / "m")
    got = list_directory(root)
    assert got["entries"] == [{"name": "l", "type": "link", "target": "caf\\xe9"},
                              {"name": "m", "type": "link", "target": "plain"}]
    assert got["names_escaped"] == files.names.NOTE
    os.unlink(root / "l")
    assert "names_escaped" not in list_directory(root)
