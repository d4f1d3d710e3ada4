"""Reading sessions at their edges: the listing's figures from a long file's tail, headers
that lack fields or are not headers, the bounds of what a listing reads and of what a resumed
session shows. (test_journal.py has the main properties; these are the cases `make mutation`
found untested.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dashfloat import journal as J
from dashfloat import messages as M
from dashfloat import sessions as S


def journal(tmp_path: Path, sid: str = "0123456789abcdef", **header) -> J.Journal:
    path = tmp_path / f"{sid}.jsonl"
    return J.Journal(path, {"id": sid, "cwd": "/work/p", "model": "m", **header})


def one_turn(j: J.Journal, turn: int, *, tokens: int) -> None:
    j.event("prompt", turn=turn, text=f"prompt {turn}")
    j.event("answer", status="done", content=f"answer {turn}")
    j.event("turn_end", turn=turn, usage={"total_tokens": tokens}, tokens=tokens)


def test_the_bounds():
    assert S.HEAD_MAX == 64 * 1024
    assert S.TAIL_MAX == 256 * 1024
    assert S.UI_TAIL_TURNS == 100
    assert S.UI_TAIL_BYTES == 4 * 1024 * 1024


def test_a_long_sessions_listing_has_the_figures_of_its_last_turn(tmp_path):
    j = journal(tmp_path)
    j.begin(title="long")
    for t in range(1, 201):  # ~40 KB: the listing reads its end, not its start
        one_turn(j, t, tokens=10 * t)
    j.close()
    assert j.path.stat().st_size > 4 * S.TAIL_READ
    info = S.read_info(j.path)
    assert (info.turns, info.tokens, info.title) == (200, 2000, "long")


def test_a_turn_cut_short_lists_its_number_and_the_tokens_of_the_turn_before(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=123)
    j.event("prompt", turn=2, text="killed in this turn")  # a turn, no tokens yet
    j.event("answer", status="streaming", content="par")  # no end event: the process was killed
    info = S.read_info(j.path)
    assert (info.turns, info.tokens) == (2, 123)


def test_figures_further_from_the_end_than_the_listing_reads_are_unknown(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=5)
    chunk = "x" * (J.BIG - 100)  # long lines that stay in the journal (not the store)
    n = S.TAIL_MAX // len(chunk) + 2
    for _ in range(n):
        j.ui((M.SYSTEM, "info", chunk))
    j.close()
    info = S.read_info(j.path)
    assert (info.turns, info.tokens) == (None, None)
    assert "?" in S.format_listing([info], with_dirs=False).splitlines()[1]

    k = journal(tmp_path, sid="1111111111111111")
    k.begin()
    one_turn(k, 1, tokens=5)
    for _ in range(n - 6):  # within what it reads
        k.ui((M.SYSTEM, "info", chunk))
    k.close()
    assert (S.read_info(k.path).turns, S.read_info(k.path).tokens) == (1, 5)


def test_an_estimated_size_is_listed_with_a_tilde_and_a_counted_one_after_it_without(tmp_path):
    j = journal(tmp_path)
    j.begin(title="local model")
    j.event("prompt", turn=1, text="first")  # nothing counted yet: no size, and no mark
    assert (S.read_info(j.path).tokens, S.read_info(j.path).tokens_estimated) == (None, False)
    assert (S.load(j.path).tokens, S.load(j.path).tokens_estimated) == (None, False)
    j.event("turn_end", turn=1, status="done", tokens=4321, tokens_estimated=True)  # no usage came
    info = S.read_info(j.path)
    assert (info.turns, info.tokens, info.tokens_estimated) == (1, 4321, True)
    assert S.format_listing([info], with_dirs=False).splitlines()[1].split()[-4:] == ["1", "~4321", "local", "model"]
    loaded = S.load(j.path)
    assert (loaded.tokens, loaded.tokens_estimated) == (4321, True)

    j.event("turn_end", turn=2, status="done", usage={"total_tokens": 5000}, tokens=5000)  # the provider counted
    info = S.read_info(j.path)
    assert (info.turns, info.tokens, info.tokens_estimated) == (2, 5000, False)
    assert S.format_listing([info], with_dirs=False).splitlines()[1].split()[-4:] == ["2", "5000", "local", "model"]
    loaded = S.load(j.path)
    assert (loaded.tokens, loaded.tokens_estimated) == (5000, False)

    j.event("turn_end", turn=3, status="done", tokens=6000, tokens_estimated="yes")  # only true is true
    assert S.read_info(j.path).tokens_estimated is False and S.load(j.path).tokens_estimated is False
    j.close()


def test_the_screen_shows_an_estimate_again_only_when_the_journal_holds_a_number(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="a")
    j.event("turn_end", turn=1, status="done", tokens=700, tokens_estimated=True)
    j.event("prompt", turn=2, text="b")
    j.event("turn_end", turn=2, status="done", tokens="800", tokens_estimated=True)  # damaged: no number
    j.event("prompt", turn=3, text="c")
    j.event("turn_end", turn=3, status="done", tokens_estimated=True)  # damaged: none at all
    j.close()
    usages = [m for m in S.ui_messages(S.load(j.path)) if m[0] == M.USAGE]
    assert usages == [(M.USAGE, {"total_tokens": 700, "estimated": True})]


def test_a_header_with_only_what_makes_it_one_lists_with_defaults(tmp_path):
    p = tmp_path / "feedface00000000.jsonl"
    p.write_text('{"seq":0,"type":"session","format":1}\n')
    info = S.read_info(p)
    assert (info.id, info.cwd, info.start, info.title, info.model, info.turns, info.tokens) == (
        "feedface00000000", "", 0.0, "", "", None, None)
    assert "?" in S.format_listing([info], with_dirs=False)


@pytest.mark.parametrize("first", [
    '{"seq":0,"type":"prompt","format":1}',  # not a header
    '{"seq":0,"type":"session","format":"1"}',  # a format that is not a number
    '["session"]',
    "",
])
def test_a_file_whose_first_line_is_not_a_header_is_not_listed(tmp_path, first):
    p = tmp_path / "abc.jsonl"
    p.write_text(first + '\n{"seq":1,"type":"turn_end","turn":3,"tokens":9}\n')
    assert S.read_info(p) is None


def test_a_header_line_is_read_up_to_its_bound(tmp_path):
    def header_of(length: int) -> str:
        base = '{"seq":0,"type":"session","format":1,"title":""}'
        line = base[:-2] + "t" * (length - len(base)) + '"}'
        assert len(line) == length
        return line

    p = tmp_path / "abc.jsonl"
    p.write_text(header_of(S.HEAD_MAX) + "\n")
    assert S.read_info(p).title == "t" * (S.HEAD_MAX - 48)
    p.write_text(header_of(S.HEAD_MAX + 1) + "\n")
    assert S.read_info(p) is None


def test_a_resume_shows_at_most_its_last_hundred_turns(tmp_path):
    j = journal(tmp_path)
    j.begin()
    for t in range(1, 103):
        one_turn(j, t, tokens=t)
    j.close()
    loaded = S.load(j.path)
    users = [m[1] for m in S.ui_messages(loaded) if m[0] == M.USER]
    assert users == [f"prompt {t}" for t in range(3, 103)]
    assert loaded.hidden_turns == 2 and len(loaded.conversation) == 204


# ---- loading: the state of the last turn ---------------------------------------------------


def _call(cid: str, name: str = "write_file") -> dict:
    return {"id": cid, "name": name, "arguments": "{}"}


def test_the_question_on_screen_when_the_session_stopped_is_found_again(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="go")
    j.event("answer", status="tool_calls", content="", calls=[_call("c1"), _call("c2"), _call("c3")])
    j.ui((M.CONFIRM, 1, {"id": "c1", "lines": []}))
    j.ui((M.DECIDED, 1, "approved"))  # the ref of the question, not its call id: c1 stays
    j.ui((M.DECIDED, "c1", "approved"))  # answered
    j.result("c1", "write_file", '{"ok":true}')
    j.event("run", id="c2")
    j.ui((M.CONFIRM, 2, {"id": "c3", "lines": []}))
    j.ui((M.DECIDED, "c2", "approved"))  # another call's decision: c3's question stays open
    j.ui((M.CONFIRM,))  # malformed: changes nothing
    j.ui((M.MODEL,))
    j.close()
    loaded = S.load(j.path)
    assert loaded.open_turn and loaded.pending_confirm == "c3"
    assert loaded.open_calls == [{"id": "c2", "name": "write_file", "started": True},
                                 {"id": "c3", "name": "write_file", "started": False}]
    assert loaded.model is None

    k = journal(tmp_path, sid="1111111111111111")
    k.begin()
    k.event("prompt", turn=1, text="go")
    k.event("answer", status="tool_calls", content="", calls=[_call("c1")])
    k.ui((M.CONFIRM, 1, {"id": "c1", "lines": []}))
    k.ui((M.MODEL, "other-model"))
    k.event("prompt", turn=2, text="a new prompt closes the question")  # (Esc, then a prompt)
    k.close()
    loaded = S.load(k.path)
    assert loaded.pending_confirm is None and loaded.open_turn and loaded.model == "other-model"

    m = journal(tmp_path, sid="2222222222222222")
    m.begin()
    m.event("prompt", turn=1, text="go")
    m.event("answer", status="tool_calls", content="", calls=[_call("c1")])
    m.ui((M.CONFIRM, 1, {"id": "c1", "lines": []}))
    m.event("turn_end", turn=1, status="cancelled")
    m.close()
    loaded = S.load(m.path)
    assert loaded.pending_confirm is None and not loaded.open_turn and loaded.open_calls == []

    d = journal(tmp_path, sid="3333333333333333")
    d.begin()
    d.event("prompt", turn=1, text="go")
    d.event("answer", status="tool_calls", content="", calls=[_call("c1")])
    d.ui((M.CONFIRM, 1, {"id": "c1", "lines": []}))
    d.ui((M.CONFIRM, 2))  # malformed: nothing to read, no failure
    d.ui((M.DECIDED,))
    assert S.load(d.path).pending_confirm == "c1"
    d.ui((M.DECIDED, "c1"))  # answered (the reader needs no more than the call), and the
    d.close()  # session stopped before its result
    assert S.load(d.path).pending_confirm is None


def test_a_fresh_load_result_holds_nothing_yet():
    fresh = S.Loaded(header={}, path=Path("x"))
    assert (fresh.next_seq, fresh.turns, fresh.open_turn, fresh.size, fresh.lines) == (1, 0, False, 0, 0)


def test_turns_count_prompts_that_do_not_say_their_number(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=7, text="numbered")
    j.event("prompt", text="not numbered")
    j.event("prompt", text="nor this")
    j.close()
    assert S.load(j.path).turns == 9


def test_next_seq_follows_the_last_good_line(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=3)
    j.close()
    last = events_of(j.path)[-1]["seq"]
    assert S.load(j.path).next_seq == last + 1
    with open(j.path, "ab") as f:
        f.write(b'{"seq":99,"time":1,"type":"prompt","te')  # torn
    loaded = S.load(j.path)
    assert loaded.next_seq == last + 1 and loaded.lines == last + 2
    p = tmp_path / "only.jsonl"
    p.write_text('{"type":"session","format":1}\n')
    assert S.load(p).next_seq == 1


def events_of(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def test_the_outcome_of_each_changed_files_call_is_read_from_its_result(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="go")
    j.event("answer", status="tool_calls", content="", calls=[_call(f"c{i}") for i in range(5)])
    contents = ['{"ok":true,"path":"a"}', '{"ok":false,"error":"x"}', '{"ok": true, "spaced": 1}',
                '{"ok": false}', "not json"]
    for i, content in enumerate(contents):
        j.event("change", turn=1, id=f"c{i}", path=f"f{i}")
        j.event("result", id=f"c{i}", tool="write_file", content=content)
    j.event("result", id="other", tool="read_file", content='{"ok":true}')  # changed nothing
    j.close()
    loaded = S.load(j.path)
    assert loaded.outcomes == {"c0": True, "c1": False, "c2": True, "c3": False, "c4": False}
    assert [c["id"] for c in loaded.changes] == [f"c{i}" for i in range(5)]


def test_a_file_that_cannot_be_read_is_a_session_error(tmp_path):
    with pytest.raises(S.SessionError, match="cannot read .*missing.jsonl"):
        S.load(tmp_path / "missing.jsonl")


# ---- loading: damaged lines --------------------------------------------------------------------


def test_damaged_lines_of_any_kind_are_noted_and_skipped(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=1)
    j.close()
    good = j.path.read_bytes()
    head, rest = good.split(b"\n", 1)
    damaged = [
        b'{"seq":50,"time":1,"type":"decision","id":"c","decision":"allow"',  # a kind not parsed, torn
        b'{"seq":51,"time":1,"type":"prompt","turn":2,"text":"x"}x',  # one character after the object
        b'{"seq":52,"time":1,"type":"result","clen":5,"id":"c","content":{"ok":true}}',  # a wrong length
        b'{"seq":53,"time":1,"type":"result","clen":11,"id":"c","content":["ok",true]}',  # not an object
        b'{"seq":54,"time":1,"type":"note","text":"\x00"}',
    ]
    j.path.write_bytes(head + b"\n" + b"\n".join(damaged) + b"\n" + rest)
    loaded = S.load(j.path)
    noted = [n.split(" of the journal")[0] for n in loaded.notes]
    assert noted == [f"line {i}" for i in range(2, 7)]
    assert loaded.turns == 1 and [m["role"] for m in loaded.conversation] == ["user", "assistant"]


def test_a_kept_line_of_the_tail_that_no_longer_parses_is_left_out_and_the_rest_shown(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="go")
    j.ui((M.SYSTEM, "info", "before"))
    j.ui((M.SYSTEM, "info", "x" * (J.BIG + 1)))  # in the store
    j.ui((M.SYSTEM, "info", "after"))
    j.close()
    lines = j.path.read_bytes().split(b"\n")
    lines[2] = lines[2][:-1] + b"\\u12}"  # ends like a line, is not JSON
    j.path.write_bytes(b"\n".join(lines))
    texts = [m[2] for m in S.ui_messages(S.load(j.path)) if m[0] == M.SYSTEM]
    assert texts == ["x" * (J.BIG + 1), "after"]


# ---- loading: what the screen shows again ----------------------------------------------------


def _turn_of(j: J.Journal, t: int) -> None:
    j.event("prompt", turn=t, text=f"prompt {t:03d}")
    j.event("answer", status="done", content=f"answer {t:03d}")
    j.event("turn_end", turn=t, status="done", usage={"total_tokens": 100 + t}, tokens=100 + t)


def _nine_turns(tmp_path: Path) -> tuple[Path, dict[int, int]]:
    """A journal of nine like turns and the bytes of each turn's lines, which the screen's
    tail counts (the lines' times are not all of one length: each turn is measured)."""
    j = journal(tmp_path)
    j.begin()
    for t in range(1, 10):
        _turn_of(j, t)
    j.close()
    sizes = dict.fromkeys(range(1, 10), 0)
    for line in j.path.read_bytes().split(b"\n")[1:]:
        ev = json.loads(line) if line else {}
        t = ev.get("turn") or (int(ev["content"][-3:]) if ev.get("type") == "answer" else None)
        if t:
            sizes[t] += len(line) + 1
    assert all(sizes.values())
    return j.path, sizes


def _last(sizes: dict[int, int], n: int) -> int:
    """The bytes of the last `n` turns."""
    return sum(sizes[t] for t in range(10 - n, 10))


@pytest.mark.parametrize("turns_kept, extra", [(3, 0), (2, -1)])
def test_the_tail_keeps_whole_turns_within_its_bytes(tmp_path, turns_kept, extra):
    path, sizes = _nine_turns(tmp_path)
    loaded = S.load(path, tail_bytes=_last(sizes, 3) + extra)
    users = [m[1] for m in S.ui_messages(loaded) if m[0] == M.USER]
    assert users == [f"prompt {t:03d}" for t in range(10 - turns_kept, 10)]
    assert loaded.hidden_turns == 9 - turns_kept


def test_the_tail_bounded_by_turns_counts_its_bytes_right_for_the_byte_bound(tmp_path):
    path, sizes = _nine_turns(tmp_path)
    loaded = S.load(path, tail_turns=4, tail_bytes=_last(sizes, 4))
    assert [m[1] for m in S.ui_messages(loaded) if m[0] == M.USER] == [f"prompt {t:03d}" for t in range(6, 10)]
    assert loaded.hidden_turns == 5
    one = S.load(path, tail_turns=8)
    msgs = S.ui_messages(one)
    assert msgs[0] == M.system("info", "1 earlier turn of this session is not shown; the conversation holds them all.")


def test_the_screen_is_drawn_again_as_it_was(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.ui((M.SYSTEM, "info", "before the first prompt"))
    j.event("prompt", turn=1, text="go")
    j.event("reasoning", text="thinking it over")
    j.event("answer", status="tool_calls", content="Reading.", calls=[_call("c1", "read_file")])
    j.event("result", id="c1", tool="read_file", content='{"ok":true,"content":"x = 1\\n","lines":1}',
            details={"shown": 1})
    j.event("result", id="c2", tool="read_file", content='["not", "an object"]')
    j.event("answer", content="Done.", reasoning="its own reasoning")
    j.event("answer", status="done", content="")
    j.ui(("not a kind",))
    j.event("usage", turn=1, model="m", prompt=10, cached=0, completion=5)
    j.event("turn_end", turn=1, status="done", usage={"prompt_tokens": 10, "completion_tokens": 5}, tokens=15)
    j.event("prompt", turn=2, text="again")
    j.event("turn_end", turn=2, status="done")
    j.close()
    msgs = S.ui_messages(S.load(j.path))
    kinds = [m[0] for m in msgs]
    assert msgs[0] == (M.SYSTEM, "info", "before the first prompt")
    assert msgs[1] == (M.USER, "go")
    assert msgs[2:6] == [(M.ASSISTANT_START,), (M.REASONING, "thinking it over"), (M.TOKEN, "Reading."),
                         (M.ASSISTANT_END, "tool_calls")]
    ok_row, bad_row = msgs[6][1], msgs[7][1]
    assert ok_row["status"] == "ok" and ok_row["details"] == {"shown": 1}
    assert bad_row["status"] == "error" and "could not be read back" in bad_row["text"]
    assert msgs[8:12] == [(M.ASSISTANT_START,), (M.REASONING, "its own reasoning"), (M.TOKEN, "Done."),
                          (M.ASSISTANT_END, "done")]
    assert msgs[12:14] == [(M.ASSISTANT_START,), (M.ASSISTANT_END, "done")]  # no reasoning, no text
    assert msgs[14] == (M.USAGE, {"prompt_tokens": 10, "completion_tokens": 5})
    assert msgs[15:] == [(M.USER, "again")]
    assert "not a kind" not in kinds


def test_reasoning_belongs_to_the_answer_after_it_and_no_other(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("prompt", turn=1, text="go")
    j.event("reasoning", text="left by a cancel")
    j.event("prompt", turn=2, text="again")
    j.event("answer", status="done", content="fresh")
    j.close()
    assert M.REASONING not in [m[0] for m in S.ui_messages(S.load(j.path))]


def test_the_meter_sums_the_requests_usage(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.event("usage", turn=1, prompt=100, cached=40, completion=10, cost=0.5)
    j.event("usage", turn=1, prompt=200, cached=0, completion=20, estimated=True)
    j.event("usage", turn=2, prompt=-5, cached=True, completion="7", cost=0.25)  # nonsense counts nothing
    j.event("usage", turn=2, prompt=1.5, completion=0)
    j.event("usage", turn=2, prompt=0, completion=-1)
    j.close()
    assert S.load(j.path).meter == {"requests": 5, "prompt": 301, "cached": 40, "completion": 30,
                                    "cost": 0.75, "priced": 2, "estimated": 1}


def test_a_compaction_that_does_not_fit_what_was_read_is_noted(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=1)
    j.event("compact", reason="auto", length=5, ops=[])
    j.event("compact", reason="auto", ops=[{"op": "no such op"}])
    j.close()
    notes = S.load(j.path).notes
    assert notes[0] == "line 5 of the journal compacted a conversation of 5 messages, but 2 were read before it"
    assert notes[1] == "line 6 of the journal (a compaction) could not be applied"


# ---- listing ------------------------------------------------------------------------------------


def test_shown_ids_grow_until_they_differ(tmp_path):
    def info(sid):
        return S.Info(id=sid, path=Path(sid), cwd="", start=0, last=0)

    ids = ["abcdef0123456789", "abcdef0123999999", "abcdef01", "12345678ffffffff"]
    assert S.shown_ids([info(i) for i in ids]) == {
        "abcdef0123456789": "abcdef01234", "abcdef0123999999": "abcdef01239",
        "abcdef01": "abcdef01", "12345678ffffffff": "12345678"}


def test_the_listing_is_a_table(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    try:
        rows = [S.Info(id="abcdef0123456789", path=Path("a"), cwd="/w/a", start=86400.0, last=90000.0,
                       title="fix it\nsecond line", turns=12, tokens=34567),
                S.Info(id="1234567800000000", path=Path("b"), cwd="/w/b", start=0, last=100.0, title="",
                       turns=None, tokens=None)]
        assert S.format_listing(rows, with_dirs=False).splitlines() == [
            "ID        STARTED           LAST ACTIVITY     TURNS  TOKENS  FIRST PROMPT",
            "abcdef01  1970-01-02 00:00  1970-01-02 01:00     12   34567  fix it",
            "12345678  ?                 1970-01-01 00:01      ?       -  -",
        ]
        assert S.format_listing(rows, with_dirs=True).splitlines()[1].endswith("fix it  (/w/a)")
        assert S.format_listing(rows[1:], with_dirs=False).splitlines() == [
            "ID        STARTED  LAST ACTIVITY     TURNS  TOKENS  FIRST PROMPT",
            "12345678  ?        1970-01-01 00:01      ?       -  -",
        ]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_find_names_five_of_many_matches(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    for i in range(6):
        sid = f"ab{i:02d}" + "0" * 12
        j = J.Journal(S.project_dir(env, "/p") / f"{sid}.jsonl", {"id": sid, "cwd": "/p"})
        j.begin()
        j.close()
    with pytest.raises(S.SessionError) as many:
        S.find(env, "ab")
    assert str(many.value).startswith("6 sessions start with ab (ab00" + "0" * 12 + ", ") and ", ...)" in str(many.value)
    assert str(many.value).count("ab0") == 5
    os.unlink(S.project_dir(env, "/p") / ("ab05" + "0" * 12 + ".jsonl"))
    with pytest.raises(S.SessionError) as five:
        S.find(env, "ab")
    assert "..." not in str(five.value) and str(five.value).count("ab0") == 5


def test_only_journal_files_of_the_directory_asked_for_are_listed(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    j = J.Journal(S.project_dir(env, "/p") / ("a" * 16 + ".jsonl"), {"id": "a" * 16, "cwd": "/p"})
    j.begin()
    j.close()
    (S.project_dir(env, "/p") / "dir.jsonl").mkdir()  # not a file
    (S.project_dir(env, "/p") / "notes.txt").write_text('{"type":"session","format":1}\n')
    stray = J.Journal(S.project_dir(env, "/p") / ("b" * 16 + ".jsonl"), {"id": "b" * 16, "cwd": "/q"})
    stray.begin()
    stray.close()
    assert [i.id for i in S.list_sessions(env, "/p")] == ["a" * 16]
    assert sorted(i.id for i in S.list_sessions(env)) == ["a" * 16, "b" * 16]
    assert S._mtime(tmp_path / "gone") == 0.0


def test_what_came_before_the_first_prompt_is_no_turn_when_the_tail_drops_it(tmp_path):
    j = journal(tmp_path)
    j.begin()
    j.ui((M.SYSTEM, "info", "before the first prompt"))
    for t in range(1, 6):
        _turn_of(j, t)
    j.close()
    loaded = S.load(j.path, tail_turns=2)
    msgs = S.ui_messages(loaded)
    assert loaded.hidden_turns == 3 and (M.SYSTEM, "info", "before the first prompt") not in msgs
    assert [m[1] for m in msgs if m[0] == M.USER] == ["prompt 004", "prompt 005"]


def test_a_last_turn_bigger_than_the_tail_is_shown_all_the_same(tmp_path):
    j = journal(tmp_path)
    j.begin()
    for t in range(1, 6):
        _turn_of(j, t)
    j.close()
    loaded = S.load(j.path, tail_bytes=10)
    assert [m[1] for m in S.ui_messages(loaded) if m[0] == M.USER] == ["prompt 005"]
    assert loaded.hidden_turns == 4


def test_turns_dropped_for_bytes_count_against_the_turns_bound_too(tmp_path):
    path, sizes = _nine_turns(tmp_path)
    loaded = S.load(path, tail_turns=4, tail_bytes=_last(sizes, 3))
    assert [m[1] for m in S.ui_messages(loaded) if m[0] == M.USER] == [f"prompt {t:03d}" for t in range(7, 10)]
    assert loaded.hidden_turns == 6


def test_the_listing_takes_each_figure_from_the_last_event_that_has_it(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=5)
    for _ in range(3):  # past the first window the listing reads
        j.ui((M.SYSTEM, "info", "w" * (J.BIG - 100)))
    j.event("clear", messages=2, tokens=0)  # tokens, no turn
    j.close()
    with open(j.path, "ab") as f:
        f.write(b'["turn"]\n')  # not an event
        f.write(b'{"seq":99,"time":1,"type":"prompt","turn":2,"te')  # torn
    info = S.read_info(j.path)
    assert (info.turns, info.tokens) == (1, 0)


def test_a_turn_cut_short_far_from_the_last_tokens_lists_both(tmp_path):
    j = journal(tmp_path)
    j.begin()
    one_turn(j, 1, tokens=77)
    for _ in range(3):  # the last tokens are past the first window the listing reads
        j.ui((M.SYSTEM, "info", "w" * (J.BIG - 100)))
    j.event("prompt", turn=2, text="killed in this turn")
    info = S.read_info(j.path)
    assert (info.turns, info.tokens) == (2, 77)
