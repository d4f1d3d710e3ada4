"""The session journal at its edges: the bounds exactly at and past their numbers, how a
call's result is written, what the UI's messages leave in it, what happens before the file
exists and after it is closed, partial writes, failures of the disk and of the lock, and
what the log says. (test_journal.py has the journal's main properties; these are the cases
`make mutation` found untested.)"""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest

from dashfloat import journal as J
from dashfloat import messages as M
from dashfloat import sessions as S


def new(tmp_path: Path, sid: str = "0123456789abcdef", **kw) -> J.Journal:
    path = tmp_path / "state" / "sessions" / "p" / f"{sid}.jsonl"
    return J.Journal(path, {"id": sid, "cwd": "/work/p", "model": "m"}, **kw)


def events(j: J.Journal) -> list[dict]:
    return [json.loads(line) for line in j.path.read_bytes().splitlines()]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def record_fsyncs(monkeypatch) -> list[int]:
    """The descriptors fsynced from now on (each is still fsynced)."""
    synced: list[int] = []
    real = os.fsync

    def fsync(fd):
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


# ---- the numbers ---------------------------------------------------------------------------


def test_the_format_and_the_default_bound_of_the_undo_store():
    assert J.FORMAT == 1  # the header's "format": what sessions.py reads (and refuses past)
    assert J.UNDO_STORE_MB == 256
    j = J.Journal(Path("/nonexistent/x.jsonl"), {"id": "x"})
    assert j.store.undo_max == 256 * 1024 * 1024


def test_the_header_says_format_1(tmp_path):
    j = new(tmp_path)
    j.begin(title="t")
    j.close()
    head = events(j)[0]
    assert head["type"] == "session" and head["format"] == 1 and head["seq"] == 0


def test_a_string_of_big_characters_stays_on_its_line_and_one_more_goes_to_the_store(tmp_path):
    assert J.BIG == 4096
    j = new(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="a" * J.BIG)
    j.event("prompt", turn=2, text="b" * (J.BIG + 1))
    j.close()
    first, second = events(j)[1:3]
    assert first["text"] == "a" * J.BIG
    assert set(second["text"]) == {"$blob", "size"} and second["text"]["size"] == J.BIG + 1
    assert [m["content"] for m in S.load(j.path).conversation] == ["a" * J.BIG, "b" * (J.BIG + 1)]


def test_a_user_object_that_merely_has_a_blob_key_is_not_taken_for_one(tmp_path):
    j = new(tmp_path)
    j.begin()
    j.event("ui", m=["system", "info", {"$blob": "0" * 64, "size": 3, "other": 1}])
    j.close()
    store = j.store
    back = J.internalize(events(j)[1]["m"], store, missing=lambda sha: "GONE")
    assert back[2] == {"$blob": "0" * 64, "size": 3, "other": 1}
    assert J.internalize({"$blob": "0" * 64, "size": 3}, store, missing=lambda sha: f"gone {sha[:4]}") == "gone 0000"


def test_time_is_kept_to_the_millisecond(tmp_path, monkeypatch):
    monkeypatch.setattr(J.time, "time", lambda: 1700000000.123456)
    assert J.now() == 1700000000.123
    j = new(tmp_path)
    j.begin()
    j.close()
    assert {e["time"] for e in events(j)} == {1700000000.123}


def test_new_ids_are_16_hex_digits_and_differ():
    ids = {J.new_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)


def test_project_keys_are_readable_short_and_never_empty():
    long = "/srv/" + "x" * 100
    key = J.project_key(long)
    name, digest = key.rsplit("-", 1)
    assert name == "x" * 40 and len(digest) == 12
    assert J.project_key("/").startswith("root-")
    assert J.project_key("/work/my project!").startswith("my_project_-")
    assert J.project_key("/a") != J.project_key("/b/a")  # the same name, two directories


def test_the_lock_holder_line_may_end_after_the_inode_and_a_short_line_is_skipped():
    dev = os.makedev(8, 1)
    six = "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234"  # no range: six fields
    assert J.holder_in(six, dev, 1234) == 4242
    assert J.holder_in("1: FLOCK  ADVISORY  WRITE 4242\n" + six, dev, 1234) == 4242  # five fields: skipped


# ---- a call's result ------------------------------------------------------------------------


RESULT = json.dumps({"ok": True, "content": "x = 1"})


@pytest.mark.parametrize("content, raw", [
    (RESULT, True),  # a JSON object on one line: written as it is, after its length
    ('{"ok": true, "content": "' + "y" * (J.BIG - 27) + '"}', True),  # BIG characters exactly
    ('{"ok": true, "content": "' + "y" * (J.BIG - 26) + '"}', False),  # one more: the ordinary way
    ('{"ok": true,\n "content": "two lines"}', False),
    ('["not an object"]', False),
    ('{"ok": true} trailing', False),
    ('not json {}', False),
    ('{"name": "caf\udce9"}', False),  # a lone surrogate: not UTF-8 as it is
])
def test_a_result_is_written_raw_only_when_it_is_one_short_json_object(tmp_path, content, raw):
    j = new(tmp_path)
    j.begin()
    j.result("c1", "read_file", content, extra="kept")
    j.close()
    line = j.path.read_bytes().splitlines()[1]
    ev = json.loads(line)
    if raw:
        assert ev["clen"] == len(content) and line.endswith(b',"content":' + content.encode() + b"}")
        assert list(ev)[-1] == "content" and ev["content"] == json.loads(content)
    else:
        assert "clen" not in ev
    assert ev["id"] == "c1" and ev["tool"] == "read_file" and ev["extra"] == "kept"
    assert [m["content"] for m in S.load(j.path).conversation] == [content]


def test_every_result_comes_back_exactly_through_a_resume(tmp_path):
    j = new(tmp_path)
    j.begin()
    contents = [RESULT, '{"ok": true,\n "x": 1}', '["list"]', '{"name": "caf\udce9"}', "{" + "z" * J.BIG + "}"]
    j.event("prompt", turn=1, text="go")
    j.event("answer", status="tool_calls", content="", calls=[
        {"id": f"c{i}", "name": "read_file", "arguments": "{}"} for i in range(len(contents))])
    for i, content in enumerate(contents):
        j.result(f"c{i}", "read_file", content)
    j.close()
    back = [m["content"] for m in S.load(j.path).conversation if m["role"] == "tool"]
    assert back == contents


# ---- the UI's messages --------------------------------------------------------------------


def test_ui_messages_other_events_imply_are_left_out_and_a_questions_whole_preview_too(tmp_path):
    j = new(tmp_path)
    j.begin()
    j.ui((M.TOKEN, "streamed"))
    j.ui((M.PHASE, "waiting"))
    j.ui((M.CONFIRM, 7, {"id": "c1", "lines": ["+ new"], "full": ["+ every", "+ line"]}))
    j.ui((M.CONFIRM, 8, {"id": "c2", "lines": ["+ short"]}))
    j.ui((M.SYSTEM, "info", "hello"))
    j.close()
    ms = [e["m"] for e in events(j) if e["type"] == "ui"]
    assert ms == [
        [M.CONFIRM, 7, {"id": "c1", "lines": ["+ new"]}],
        [M.CONFIRM, 8, {"id": "c2", "lines": ["+ short"]}],
        [M.SYSTEM, "info", "hello"],
    ]


# ---- before the file, after the close --------------------------------------------------------


def test_events_before_the_first_prompt_wait_up_to_their_bound_and_the_oldest_go_first(tmp_path, monkeypatch):
    assert J.PENDING_MAX == 2000
    monkeypatch.setattr(J, "PENDING_MAX", 5)
    j = new(tmp_path)
    for i in range(5):
        j.ui((M.SYSTEM, "info", f"early {i}"))
    j.begin()
    j.close()
    texts = [e["m"][2] for e in events(j) if e["type"] == "ui"]
    assert texts == [f"early {i}" for i in range(5)]  # exactly the bound: all kept, no note
    assert not [e for e in events(j) if e["type"] == "note"]

    j = new(tmp_path, sid="fedcba9876543210")
    for i in range(8):
        j.ui((M.SYSTEM, "info", f"early {i}"))
    j.begin()
    j.close()
    evs = events(j)
    assert [e["m"][2] for e in evs if e["type"] == "ui"] == [f"early {i}" for i in range(3, 8)]
    assert [e["text"] for e in evs if e["type"] == "note"] == ["3 events before the first prompt were not kept"]
    assert [e["seq"] for e in evs] == list(range(len(evs)))


def test_begin_twice_or_after_close_changes_nothing(tmp_path):
    j = new(tmp_path)
    j.begin(title="first")
    j.event("prompt", turn=1, text="one")
    j.begin(title="again")
    assert not j.failed
    j.close()
    before = j.path.read_bytes()
    j.begin(title="after")
    j.event("prompt", turn=2, text="after close")
    j.sync()
    j.close()
    assert j.path.read_bytes() == before and not j.failed
    assert [e["type"] for e in events(j)] == ["session", "prompt", "end"]
    assert j.closed


def test_close_writes_one_end_releases_the_file_and_syncs_nothing_after(tmp_path, monkeypatch):
    j = new(tmp_path)
    reports = []
    j.on_error = reports.append
    j.begin()
    synced = record_fsyncs(monkeypatch)
    fd = j._fd
    j.close("hangup", turn=3)
    assert synced == [fd]
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    j.close()
    j.sync()
    assert synced == [fd] and not reports and j._fd is None
    assert [(e["type"], e.get("reason"), e.get("turn")) for e in events(j)][-1] == ("end", "hangup", 3)
    J.Journal(j.path, {"id": j.id}, existing=True).close()  # the lock went with it


def test_sync_before_the_file_exists_does_nothing(tmp_path, monkeypatch):
    j = new(tmp_path)
    reports = []
    j.on_error = reports.append
    calls = []
    monkeypatch.setattr(os, "fsync", calls.append)
    j.sync()
    assert calls == [] and not reports and not j.failed


def test_sync_fsyncs_the_journal_and_a_failure_stops_it(tmp_path, monkeypatch):
    j = new(tmp_path)
    reports = []
    j.on_error = reports.append
    j.begin()
    calls = []

    def failing(fd):
        calls.append(fd)
        raise OSError(errno.EIO, "Input/output error", str(j.path))

    monkeypatch.setattr(os, "fsync", failing)
    j.sync()
    assert calls == [j._fd]
    assert j.failed == f"Input/output error: {j.path}"
    assert len(reports) == 1 and f"(Input/output error: {j.path})" in reports[0]
    j.sync()
    assert len(calls) == 1  # failed: nothing more


def test_a_failure_without_a_listener_or_with_a_broken_one_is_logged_not_raised(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="dashfloat.journal")
    j = new(tmp_path)
    j.begin()
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error")))
    j.sync()  # no on_error: nothing to call
    assert j.failed == "Input/output error"
    assert "the session is no longer recorded" in caplog.text

    k = new(tmp_path, sid="1111111111111111")
    k.begin()
    k.on_error = lambda text: 1 / 0
    k.sync()
    assert k.failed and "reporting the journal failure failed" in caplog.text
    k._fail(ValueError("not an OSError"))  # the first failure stands
    assert k.failed == "Input/output error"
    m = new(tmp_path, sid="2222222222222222")
    m._fail(ValueError("a reason of its own"))
    assert m.failed == "a reason of its own"


def test_a_store_that_cannot_be_written_stops_the_journal_with_a_report(tmp_path, monkeypatch):
    j = new(tmp_path)
    reports = []
    j.on_error = reports.append
    j.begin()
    monkeypatch.setattr(J, "_write_private", lambda target, data: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, "No space left on device", str(target))))
    j.event("prompt", turn=1, text="z" * (J.BIG + 1))
    assert j.failed and j.failed.startswith("No space left on device: ")
    assert len(reports) == 1
    j.close()
    assert [e["type"] for e in events(j)] == ["session"]


def test_bytes_written_counts_every_byte_of_the_file(tmp_path):
    j = new(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="hello")
    j.result("c", "read_file", RESULT)
    j.close()
    assert j.bytes_written == j.path.stat().st_size > 0


# ---- partial writes and torn tails ---------------------------------------------------------


def test_a_write_the_kernel_takes_in_parts_is_written_whole(tmp_path, monkeypatch):
    j = new(tmp_path)
    j.begin()
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real(fd, bytes(data[:7])))
    j.event("prompt", turn=1, text="written seven bytes at a time")
    j.event("prompt", turn=2, text="s" * (J.BIG + 10))  # its side file too
    monkeypatch.setattr(os, "write", real)
    j.close()
    assert [e.get("text") for e in events(j)][1] == "written seven bytes at a time"
    assert [m["content"] for m in S.load(j.path).conversation] == ["written seven bytes at a time",
                                                                   "s" * (J.BIG + 10)]
    assert j.bytes_written == j.path.stat().st_size


@pytest.mark.parametrize("existing, expected", [
    (b"", b""),  # an empty file: nothing to end
    (b"{", b"{\n"),  # a one-byte torn line
    (b'{"seq":0}\n{"se', b'{"seq":0}\n{"se\n'),
    (b'{"seq":0}\n', b'{"seq":0}\n'),
])
def test_a_torn_tail_is_ended_once_before_the_first_append(tmp_path, existing, expected):
    path = tmp_path / "s.jsonl"
    path.write_bytes(existing)
    j = J.Journal(path, {"id": "s"}, existing=True, next_seq=5)
    j.event("prompt", turn=1, text="one")
    j.event("prompt", turn=2, text="two")
    j.close()
    data = path.read_bytes()
    assert data.startswith(expected)
    rest = data[len(expected):].splitlines()
    assert [json.loads(x)["seq"] for x in rest] == [5, 6, 7]


# ---- the lock ---------------------------------------------------------------------------------


def test_busy_without_a_known_holder_names_no_process_and_leaks_no_descriptor(tmp_path, monkeypatch):
    j = new(tmp_path)
    j.begin()
    monkeypatch.setattr(J, "lock_holder", lambda path: None)
    before = open_fds()
    with pytest.raises(J.Busy) as busy:
        J.Journal(j.path, {"id": j.id}, existing=True)
    assert str(busy.value) == f"session {j.id} is open in another DashFloat"
    assert open_fds() == before
    j.close()


def test_a_lock_that_fails_otherwise_is_a_failure_not_a_lock(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")

    def broken(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(J.fcntl, "flock", broken)
    before = open_fds()
    with pytest.raises(OSError, match="No locks available"):
        J.Journal(path, {"id": "s"}, existing=True)
    assert open_fds() == before
    k = new(tmp_path)
    reports = []
    k.on_error = reports.append
    k.begin()
    assert k.failed == "No locks available" and len(reports) == 1 and not k.started


# ---- the store ----------------------------------------------------------------------------------


def test_the_undo_store_takes_exactly_its_bound(tmp_path):
    j = new(tmp_path, undo_max=3000)
    j.begin()
    whole, why = j.keep(b"w" * 3000)
    assert whole and not why and j.kept(whole) == b"w" * 3000
    over, why = j.keep(b"o" * 3001)
    assert over is None and why == "larger than the undo store's bound (0.00286102 MiB, undo_store_mb)"
    j.close()

    k = new(tmp_path, sid="4444444444444444", undo_max=3000)
    k.begin()
    a, _ = k.keep(b"a" * 1000)
    b, _ = k.keep(b"b" * 1000)
    c, _ = k.keep(b"c" * 1000)  # 3000 in all: nothing goes
    assert all(k.kept(x) is not None for x in (a, b, c))
    os.utime(k.store.path / "files" / a, (1, 1))
    os.utime(k.store.path / "files" / b, (2, 2))
    d, _ = k.keep(b"d" * 2000)  # two must go, the oldest first
    assert k.kept(a) is None and k.kept(b) is None and k.kept(c) == b"c" * 1000 and k.kept(d) == b"d" * 2000
    k.close()


def test_an_eviction_goes_on_past_a_file_it_cannot_remove(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="dashfloat.journal")
    j = new(tmp_path, undo_max=2000)
    j.begin()
    a, _ = j.keep(b"a" * 1000)
    b, _ = j.keep(b"b" * 1000)
    os.utime(j.store.path / "files" / a, (1, 1))
    os.utime(j.store.path / "files" / b, (2, 2))
    real = os.unlink

    def unlink(path, *args, **kw):
        if Path(path).name == a:
            raise FileNotFoundError(errno.ENOENT, "gone meanwhile", str(path))
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "unlink", unlink)
    c, _ = j.keep(b"c" * 1000)
    assert j.kept(b) is None and j.kept(c) == b"c" * 1000
    assert f"undo store: dropped {b} (1000 bytes) to stay within 0.00190735 MiB" in caplog.text
    j.close()


def test_side_files_are_fsynced_and_their_descriptors_closed(tmp_path, monkeypatch):
    j = new(tmp_path)
    j.begin()
    synced = record_fsyncs(monkeypatch)
    before = open_fds()
    sha, _ = j.keep(b"previous bytes")
    j.event("prompt", turn=1, text="t" * (J.BIG + 1))
    assert len(synced) == 2
    assert open_fds() == before
    j.close()


def test_in_memory_undo_keeps_its_bound_exactly_and_a_reused_text_is_the_newest(tmp_path, monkeypatch, caplog):
    j = new(tmp_path, undo_max=3000)
    j.begin()
    monkeypatch.setattr(j.store, "put_file", lambda data: (_ for _ in ()).throw(OSError(errno.EROFS, "Read-only")))
    a, _ = j.keep(b"a" * 1000)
    assert "keeping previous contents in memory" in caplog.text
    b, _ = j.keep(b"b" * 1000)
    c, _ = j.keep(b"c" * 1000)
    assert [j.kept(x) for x in (a, b, c)] == [b"a" * 1000, b"b" * 1000, b"c" * 1000]  # 3000: all stay
    assert j._memory_total == 3000
    assert j.keep(b"a" * 1000)[0] == a  # used again: now the newest
    d, _ = j.keep(b"d" * 1000)
    assert j.kept(b) is None and j.kept(a) == b"a" * 1000 and j.kept(d) == b"d" * 1000
    whole, why = j.keep(b"w" * 3000)
    assert whole and j._memory_total == 3000 and j.kept(whole) == b"w" * 3000
    assert j.keep(b"o" * 3001) == (None, "larger than the undo store's bound (0.00286102 MiB, undo_store_mb)")
    j.close()


def test_a_fresh_journal_holds_nothing_in_memory(tmp_path):
    j = new(tmp_path)
    assert j._memory_total == 0 and j.bytes_written == 0 and j.on_error is None


# ---- identity, masking, the log ----------------------------------------------------------------


def test_the_id_is_the_headers_or_else_the_files_name(tmp_path):
    assert J.Journal(tmp_path / "abc.jsonl", {"id": "given"}).id == "given"
    assert J.Journal(tmp_path / "abc.jsonl", {}).id == "abc"
    assert J.Journal(tmp_path / "abc.jsonl", {"id": ""}).id == "abc"


def test_only_the_secrets_are_masked_not_what_merely_looks_like_one(tmp_path):
    # a file's text with a token-like URL must come back exactly (an edit, /undo)
    looks = "see https://user:hunter2@example.com/x?token=abcdef123456 and Bearer abcdefghijklmnop1234"
    j = new(tmp_path, secrets=[("sk-real-secret-0123456789", "[redacted: API key]")])
    j.begin(title=looks)
    j.event("prompt", turn=1, text=looks + " sk-real-secret-0123456789")
    j.close()
    evs = events(j)
    assert evs[0]["title"] == looks
    assert evs[1]["text"] == looks + " [redacted: API key]"


def test_a_foreign_write_and_fixed_modes_are_logged(tmp_path, caplog):
    import threading

    caplog.set_level(logging.INFO, logger="dashfloat.journal")
    (tmp_path / "state" / "sessions" / "p").mkdir(parents=True, mode=0o755)
    os.chmod(tmp_path / "state" / "sessions" / "p", 0o755)
    j = new(tmp_path)
    j.begin()
    assert "private files: " in caplog.text
    caplog.clear()
    j.event("prompt", turn=1, text="the agent's thread writes first")
    t = threading.Thread(target=lambda: j.event("prompt", turn=2, text="intruder"), name="intruder-thread")
    t.start()
    t.join()
    assert "a prompt event from thread intruder-thread refused" in caplog.text
    j.close()
    caplog.clear()
    os.chmod(j.path, 0o644)
    J.Journal(j.path, {"id": j.id}, existing=True).close()
    assert "private files: " in caplog.text


def _strict(line: bytes) -> dict:
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def test_lines_are_strict_json_in_utf8_even_with_numbers_json_has_not(tmp_path):
    j = new(tmp_path)
    j.begin()
    j.event("usage", turn=1, cost=float("nan"), limit=float("inf"), note="漢字 é")
    j.event("prompt", turn=1, text="漢字 é")
    j.close()
    lines = j.path.read_bytes().splitlines()
    usage, prompt = _strict(lines[1]), _strict(lines[2])
    assert (usage["cost"], usage["limit"], usage["note"]) == ("NaN", "Infinity", "漢字 é")
    assert "漢字 é".encode() in lines[1] and "漢字 é".encode() in lines[2]  # UTF-8, not \u escapes
    assert prompt["text"] == "漢字 é"
