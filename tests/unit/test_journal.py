"""The session journal as a file: what goes in comes back exactly; a kill at any point, a
torn or NUL-filled tail, lose only the event being written; private modes; no secret in
it; long texts stored once; one writer, one DashFloat per session; the listing."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from dashfloat import journal as J
from dashfloat import messages as M
from dashfloat import sessions as S

KEY = "sk-test-0123456789abcdef"
SECRETS = [(KEY, "[redacted: API key]")]


def new(tmp_path: Path, sid: str = "0123456789abcdef", cwd: str = "/work/p", **kw) -> J.Journal:
    path = tmp_path / "state" / "sessions" / S.project_key(cwd) / f"{sid}.jsonl"
    return J.Journal(path, {"id": sid, "cwd": cwd, "model": "m"}, secrets=kw.pop("secrets", SECRETS), **kw)


def one_turn(j: J.Journal, turn: int, text: str, answer: str = "ok", *, tokens: int = 10) -> None:
    j.event("prompt", turn=turn, text=text)
    j.event("answer", status="done", content=answer)
    j.event("turn_end", turn=turn, usage={"total_tokens": tokens}, tokens=tokens)


STRINGS = [
    "plain", "caf\udce9 (a name that is not UTF-8)", "\ud800 alone", "line\u2028sep\u2029para",
    "nul\x00inside", "emoji 😀 and CJK 漢字", "cr\rlf\n", "\x1b[31mescape\x1b[0m", "",
]


def test_every_string_comes_back_exactly(tmp_path):
    j = new(tmp_path)
    j.begin(title="t")
    for i, text in enumerate(STRINGS, 1):
        j.event("prompt", turn=i, text=text)
        j.event("answer", status="done", content=text + "!", calls=[{"id": f"c{i}", "name": "read_file",
                                                                      "arguments": json.dumps({"path": text})}])
        j.event("result", id=f"c{i}", tool="read_file", content=json.dumps({"ok": True, "content": text}))
    j.close()
    loaded = S.load(j.path)
    users = [m["content"] for m in loaded.conversation if m["role"] == "user"]
    assert users == STRINGS
    answers = [m["content"] for m in loaded.conversation if m["role"] == "assistant"]
    assert answers == [s + "!" for s in STRINGS]
    assert [json.loads(m["content"])["content"] for m in loaded.conversation if m["role"] == "tool"] == STRINGS
    raw = j.path.read_bytes()
    raw.decode("utf-8")  # the file itself is valid UTF-8
    assert raw.count(b"\n") == len(raw.split(b"\n")) - 1 == loaded.lines


def test_private_modes_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        j = new(tmp_path)
        j.begin()
        j.event("result", id="c", tool="read_file", content="x" * (J.BIG + 1))
        sha, why = j.keep(b"previous bytes")
        assert sha and not why
        j.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(j.path.stat().st_mode) == 0o600
    for d in (j.path.parent, j.path.parent.parent, j.store.path, j.store.path / "text", j.store.path / "files"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in [*(j.store.path / "text").iterdir(), *(j.store.path / "files").iterdir()]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_the_key_never_reaches_the_journal_or_its_store(tmp_path):
    j = new(tmp_path)
    j.begin(title=f"use {KEY} please")
    j.event("prompt", turn=1, text=f"my key is {KEY}")
    j.event("answer", status="done", content=f"echo {KEY}", calls=[{"id": "c", "name": "execute_command",
                                                                   "arguments": json.dumps({"command": f"echo {KEY}"})}])
    j.event("result", id="c", tool="execute_command", content=json.dumps({"ok": True, "output": (KEY + "\n") * 1000}))
    j.ui((M.SYSTEM, "error", f"401 for key {KEY[:12]}"))  # cut short: masked too
    j.close()
    for path in [j.path, *j.store.path.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data and KEY[:12].encode() not in data, path
    assert b"[redacted: API key]" in j.path.read_bytes()


def test_a_long_text_is_stored_once_and_the_line_stays_short(tmp_path):
    j = new(tmp_path)
    j.begin()
    output = json.dumps({"ok": True, "content": "abc\n" * 5000})
    for i in range(3):  # the same file read three times
        j.event("result", id=f"c{i}", tool="read_file", content=output)
    j.close()
    blobs = list((j.store.path / "text").iterdir())
    assert len(blobs) == 1 and blobs[0].read_bytes().decode() == output
    assert j.path.stat().st_size < 2000
    loaded = S.load(j.path)
    assert [m["content"] for m in loaded.conversation] == [output] * 3


def test_a_missing_side_file_is_a_note_not_a_lost_session(tmp_path):
    j = new(tmp_path)
    j.begin()
    one_turn(j, 1, "first")
    j.event("result", id="c", tool="read_file", content="y" * (J.BIG + 1))
    one_turn(j, 2, "second")
    j.close()
    for blob in (j.store.path / "text").iterdir():
        blob.unlink()
    loaded = S.load(j.path)
    assert loaded.turns == 2 and "gone" in loaded.conversation[2]["content"]
    assert any("missing" in n for n in loaded.notes)


def test_nothing_is_written_before_the_first_prompt_and_then_all_of_it(tmp_path):
    j = new(tmp_path)
    j.ui((M.MODEL, "m"))
    j.ui((M.SYSTEM, "info", "hello"))
    j.ui((M.TOKEN, "streamed text is implied by the answer"))
    assert not j.path.exists()
    j.begin(title="first prompt", model="m2")
    j.event("prompt", turn=1, text="first prompt")
    j.close()
    lines = [json.loads(x) for x in j.path.read_bytes().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["title"] == "first prompt" and lines[0]["model"] == "m2"
    assert [x["type"] for x in lines[1:]] == ["ui", "ui", "prompt", "end"]
    assert [x["seq"] for x in lines] == list(range(len(lines)))
    never = new(tmp_path, sid="fedcba9876543210")
    never.ui((M.SYSTEM, "info", "x"))
    never.close()
    assert not never.path.exists()


def test_a_torn_last_line_is_skipped_with_a_note_and_the_next_run_appends_after_it(tmp_path):
    j = new(tmp_path)
    j.begin()
    one_turn(j, 1, "kept")
    j.close()
    data = j.path.read_bytes()
    j.path.write_bytes(data + b'{"seq":99,"time":1,"type":"prompt","turn":2,"text":"cut of')  # a kill mid-write
    loaded = S.load(j.path)
    assert loaded.turns == 1 and loaded.conversation[0]["content"] == "kept"
    assert len(loaded.notes) == 1 and "cut off" in loaded.notes[0] and "last line" in loaded.notes[0]
    again = J.Journal(j.path, {"id": j.id}, existing=True, next_seq=loaded.next_seq)
    again.event("prompt", turn=2, text="after the tear")
    again.close()
    reloaded = S.load(j.path)
    assert [m["content"] for m in reloaded.conversation if m["role"] == "user"] == ["kept", "after the tear"]
    assert len(reloaded.notes) == 1 and "damaged" in reloaded.notes[0]


def test_a_nul_filled_tail_is_skipped_with_a_note(tmp_path):
    j = new(tmp_path)
    j.begin()
    one_turn(j, 1, "before the crash")
    j.close()
    with open(j.path, "ab") as f:
        f.write(b"\0" * 4096)
    loaded = S.load(j.path)
    assert loaded.conversation[0]["content"] == "before the crash"
    assert len(loaded.notes) == 1 and "4096 zero bytes" in loaded.notes[0]
    info = S.read_info(j.path)
    assert info.turns == 1 and info.tokens == 10


def test_a_damaged_line_in_the_middle_hides_nothing_else(tmp_path):
    j = new(tmp_path)
    j.begin()
    one_turn(j, 1, "one")
    one_turn(j, 2, "two")
    j.close()
    lines = j.path.read_bytes().split(b"\n")
    lines[3] = lines[3][:10] + b"\xff\xfe garbage"
    j.path.write_bytes(b"\n".join(lines))
    loaded = S.load(j.path)
    assert [m["content"] for m in loaded.conversation if m["role"] == "user"] == ["one", "two"]
    assert len(loaded.notes) == 1 and "line 4" in loaded.notes[0]


WRITER = textwrap.dedent("""
    import sys, json
    sys.path.insert(0, {root!r})
    from dashfloat.journal import Journal
    from pathlib import Path
    j = Journal(Path({path!r}), {{"id": "k"}})
    j.begin()
    print("started", flush=True)
    i = 0
    while True:
        i += 1
        j.event("prompt", turn=i, text="x" * (i % 3000) + "€" * (i % 50))
""")


def test_kill_9_during_writes_loses_at_most_the_event_being_written(tmp_path):
    path = tmp_path / "k.jsonl"
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen([sys.executable, "-c", WRITER.format(root=root, path=str(path))],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 10
        while path.stat().st_size < 2_000_000:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    loaded = S.load(path)
    turns = [m for m in loaded.conversation if m["role"] == "user"]
    assert len(turns) == loaded.turns > 100
    # every event before the kill is there, in order: seq 1..n with no gap
    assert len(loaded.notes) <= 1
    assert loaded.next_seq == len(turns) + 1


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from dashfloat.journal import Journal
    from pathlib import Path
    j = Journal(Path({path!r}), {{"id": "k"}}, existing=True)
    print("locked", flush=True)
    sys.stdin.readline()
""")


def test_two_processes_never_append_to_one_session(tmp_path):
    j = new(tmp_path)
    j.begin()
    one_turn(j, 1, "mine")
    with pytest.raises(J.Busy):  # the same process, another open of it: refused too
        J.Journal(j.path, {"id": j.id}, existing=True)
    j.close()
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=root, path=str(j.path))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(J.Busy, match="open in another DashFloat") as busy:
            J.Journal(j.path, {"id": j.id}, existing=True)
        # which one, and how to end it when a dropped connection left it behind
        assert f"(process {proc.pid})" in str(busy.value) and f"`kill {proc.pid}`" in str(busy.value)
    finally:
        proc.stdin.close()
        proc.wait(10)
    J.Journal(j.path, {"id": j.id}, existing=True).close()  # free again once it has gone


def test_only_the_first_writing_thread_writes(tmp_path):
    j = new(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="owner")
    t = threading.Thread(target=lambda: j.event("prompt", turn=2, text="intruder"))
    t.start()
    t.join()
    j.close()
    assert j.foreign_writes == 1
    assert b"intruder" not in j.path.read_bytes()


def test_a_failed_write_is_reported_once_and_the_session_goes_on(tmp_path, monkeypatch):
    j = new(tmp_path)
    j.begin()
    reports = []
    j.on_error = reports.append
    real = os.write

    def full(fd, data):
        if fd == j._fd:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    j.event("prompt", turn=1, text="lost")
    j.event("prompt", turn=2, text="lost too")
    j.sync()
    assert len(reports) == 1 and "No space left on device" in reports[0]
    assert j.failed


def test_the_undo_store_is_bounded_and_drops_the_least_recently_used(tmp_path):
    j = new(tmp_path, undo_max=2500)
    j.begin()
    a, _ = j.keep(b"a" * 1000)
    b, _ = j.keep(b"b" * 1000)
    os.utime(j.store.path / "files" / a, (1, 1))  # a is the oldest...
    os.utime(j.store.path / "files" / b, (2, 2))
    assert j.keep(b"a" * 1000)[0] == a  # ... until it is used again
    c, _ = j.keep(b"c" * 1000)
    assert c and j.kept(c) == b"c" * 1000 and j.kept(a) == b"a" * 1000
    assert j.kept(b) is None, "b was the least recently used"
    big, why = j.keep(b"d" * 3000)
    assert big is None and "undo_store_mb" in why
    j.close()


# ---- listing -------------------------------------------------------------------------------


def make_session(tmp_path, environ, cwd, sid, turns, *, last_big=0, mtime=None):
    path = S.project_dir(environ, cwd) / f"{sid}.jsonl"
    j = J.Journal(path, {"id": sid, "cwd": cwd, "model": "m"})
    j.begin(title=f"first prompt of {sid}")
    for t in range(1, turns + 1):
        one_turn(j, t, f"prompt {t}", tokens=100 * t)
    if last_big:
        j.ui((M.SYSTEM, "info", "z" * 100 + "\n" * last_big))  # a long last event, not a side file
    j.close()
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_listing_reads_header_and_tail_and_sorts_by_last_activity(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    here, there = "/work/here", "/work/there"
    for i in range(30):
        make_session(tmp_path, env, here if i % 3 else there, f"{i:02x}" + "a" * 14, turns=i % 5 + 1, mtime=1000 + i)
    make_session(tmp_path, env, here, "ff" + "b" * 14, turns=2, last_big=3000, mtime=5000)
    mine = S.list_sessions(env, here)
    assert len(mine) == 21 and all(i.cwd == here for i in mine)
    assert [i.last for i in mine] == sorted((i.last for i in mine), reverse=True)
    top = mine[0]
    assert top.id.startswith("ff") and top.turns == 2 and top.tokens == 200 and top.title == "first prompt of ff" + "b" * 14
    every = S.list_sessions(env)
    assert len(every) == 31
    text = S.format_listing(every, with_dirs=True)
    assert text.splitlines()[0].startswith("ID") and there in text and "first prompt of 00" in text


def test_find_takes_a_unique_prefix(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    make_session(tmp_path, env, "/a", "abcd000000000000", 1)
    make_session(tmp_path, env, "/b", "abce000000000000", 1)
    assert S.find(env, "abcd").cwd == "/a"
    with pytest.raises(S.SessionError, match="2 sessions start with abc"):
        S.find(env, "abc")
    with pytest.raises(S.SessionError, match="no session id starts with 99"):
        S.find(env, "99")
    with pytest.raises(S.SessionError, match="hex digits"):
        S.find(env, "../x")
    assert S.shown_ids(S.list_sessions(env)) == {"abcd000000000000": "abcd0000", "abce000000000000": "abce0000"}


def test_latest_is_the_last_active_session_of_this_very_directory(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    make_session(tmp_path, env, "/p", "1" * 16, 1, mtime=100)
    make_session(tmp_path, env, "/p", "2" * 16, 1, mtime=200)
    # a file in the same key directory whose header names another directory is not this one's
    stray = S.project_dir(env, "/p") / ("3" * 16 + ".jsonl")
    j = J.Journal(stray, {"id": "3" * 16, "cwd": "/elsewhere"})
    j.begin()
    j.close()
    os.utime(stray, (300, 300))
    assert S.latest(env, "/p").id == "2" * 16
    assert S.latest(env, "/nothing") is None


def test_a_resume_shows_the_last_turns_and_holds_the_whole_conversation(tmp_path):
    j = new(tmp_path)
    j.begin()
    for t in range(1, 151):
        one_turn(j, t, f"prompt {t}", answer=f"answer {t}")
    j.close()
    loaded = S.load(j.path, tail_turns=20)
    assert len(loaded.conversation) == 300 and loaded.turns == 150
    msgs = S.ui_messages(loaded)
    users = [m[1] for m in msgs if m[0] == M.USER]
    assert users == [f"prompt {t}" for t in range(131, 151)]
    assert msgs[0][0] == M.SYSTEM and "130 earlier turns" in msgs[0][2]
    by_bytes = S.load(j.path, tail_bytes=2000)
    assert 0 < len([m for m in S.ui_messages(by_bytes) if m[0] == M.USER]) < 20


def test_a_journal_of_a_newer_format_or_not_a_journal_is_refused(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"seq":0,"time":1,"type":"session","format":99,"id":"x"}\n')
    with pytest.raises(S.SessionError, match="newer DashFloat"):
        S.load(p)
    p.write_text("hello\n")
    with pytest.raises(S.SessionError, match="not a DashFloat session journal"):
        S.load(p)


def test_the_lock_holder_is_read_from_proc_locks_and_waiters_are_not_holders():
    dev = os.makedev(8, 1)
    text = ("1: POSIX  ADVISORY  WRITE 77 08:01:1234 0 EOF\n"
            "2: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF\n"
            "2: -> FLOCK  ADVISORY  WRITE 999 08:01:1234 0 EOF\n"
            "3: FLOCK  ADVISORY  WRITE 5 08:01:99 0 EOF\n")
    assert J.holder_in(text, dev, 1234) == 4242
    assert J.holder_in(text, dev, 4321) is None
    assert J.holder_in(text, os.makedev(8, 2), 1234) is None
    assert J.holder_in("2: FLOCK  ADVISORY  WRITE x 08:01:1234 0 EOF", dev, 1234) is None
