"""LongText (dashfloat/ui/longtext.py) at its edges: the store's pieces and tail as appends
arrive (PIECE made tiny), slices and searches that end exactly on a piece's edge, texts that
do not start at the store's start (after lstrip) or end before its end (older snapshots),
and equality, hashing and grew_from between texts of one store and of two."""

from __future__ import annotations

import pytest

from dashfloat.ui import longtext
from dashfloat.ui.longtext import LongText, _Store


@pytest.fixture
def tiny(monkeypatch):
    """Pieces of 4 characters: every few appends cross one."""
    monkeypatch.setattr(longtext, "PIECE", 4)


def state(store: _Store) -> tuple:
    return store.pieces, store.starts, store.tail, store.size, store.joined


def joined(parts: list[str]) -> LongText:
    """The text of `parts` appended one by one, its pieces all joined (none left in the tail)."""
    text = LongText()
    for part in parts:
        text = text + part
    text._store.flush()
    return text


# ---- the store --------------------------------------------------------------------------------


def test_appends_wait_in_the_tail_until_a_piece_is_full(tiny):
    store = _Store()
    assert state(store) == ([], [], [], 0, 0)
    store.append("ab")
    store.append("c")
    assert state(store) == ([], [], ["ab", "c"], 3, 0)
    store.append("d")  # 4 characters not joined: exactly a piece
    assert state(store) == (["abcd"], [0], [], 4, 4)
    store.append("e")  # one more, counted from what is joined already
    assert state(store) == (["abcd"], [0], ["e"], 5, 4)


def test_a_flush_joins_into_the_last_piece_while_it_is_small(tiny):
    store = _Store()
    store.append("ab")
    store.flush()
    assert state(store) == (["ab"], [0], [], 2, 2)
    store.append("c")
    store.flush()  # "ab" is below a piece: it grows
    assert state(store) == (["abc"], [0], [], 3, 3)
    store.append("d")
    store.flush()
    store.append("ef")
    store.flush()  # "abcd" is a whole piece: a new one starts
    assert state(store) == (["abcd", "ef"], [0, 4], [], 6, 6)
    store.flush()  # nothing in the tail: nothing changes
    assert state(store) == (["abcd", "ef"], [0, 4], [], 6, 6)
    store.append("g")
    store.flush()  # the last piece grows, not the first
    assert state(store) == (["abcd", "efg"], [0, 4], [], 7, 7)


def test_a_read_of_the_joined_part_leaves_the_tail_alone(tiny):
    """Only a read past what is joined joins the tail (the appends of a frame stay cheap)."""
    store = _Store()
    for part in ("abcd", "e"):
        store.append(part)
    assert store.slice(1, 4) == "bcd" and list(store.spans(0, 4)) == [(0, "abcd")]
    assert store.tail == ["e"]
    assert store.slice(3, 5) == "de" and store.tail == [] and store.pieces == ["abcd", "e"]


@pytest.mark.parametrize("a, b, out", [
    (0, 4, "abcd"), (4, 14, "efghijklmn"), (4, 6, "ef"), (5, 14, "fghijklmn"), (3, 5, "de"),
    (0, 14, "abcdefghijklmn"), (6, 6, ""), (14, 14, ""), (6, 4, ""),
])
def test_slices_of_a_short_and_a_long_piece(tiny, a, b, out):
    store = _Store()
    for part in ("abcd", "efghijklmn"):  # one append longer than a piece is one piece
        store.append(part)
    assert store.pieces == ["abcd", "efghijklmn"] and store.starts == [0, 4]
    assert store.slice(a, b) == out


def test_a_slice_of_a_whole_piece_is_that_piece(tiny):
    store = _Store()
    store.append("abcdef")
    assert store.slice(0, 6) is store.pieces[0]


def test_whole_keeps_the_text_as_one_piece(tiny):
    text = joined(["ab", "cd", "ef", "gh", "ij"])
    assert len(text._store.pieces) > 2
    assert str(text) == "abcdefghij"
    assert text._store.pieces == ["abcdefghij"] and text._store.starts == [0]
    assert str(text) is text._store.pieces[0]  # the next str() is free
    assert [text[i : i + 3] for i in range(0, 10, 3)] == ["abc", "def", "ghi", "j"]
    assert text.find("a") == 0 and text.find("e", 2) == 4 and text.rfind("j") == 9


def test_whole_of_two_pieces(tiny):
    text = joined(["abcd", "ef"])
    assert text._store.pieces == ["abcd", "ef"]
    assert str(text) == "abcdef"


def test_a_megabyte_in_small_appends_is_in_few_pieces():
    """A piece is about 64 KiB: a slice of a frame's width joins one or two of them, and a
    megabyte is held in at most 16 (not the thousands of a piece per append)."""
    text = LongText()
    for _ in range(20_000):
        text = text + "x" * 50
    text._store.flush()
    assert len(text._store.pieces) <= 16


# ---- snapshots --------------------------------------------------------------------------------


def test_the_newest_snapshot_grows_in_its_store():
    a = LongText("abc")
    b = a + "de"
    assert b._store is a._store and (len(a), len(b)) == (3, 5)
    assert (b + "")._store is a._store and b + "" is b
    c = a + "X"  # a is older than b: its own store
    assert c._store is not a._store and str(c) == "abcX"
    empty = LongText()
    assert (empty + "z")._store is empty._store


def test_str_of_a_stripped_text_leaves_out_what_was_stripped():
    text = LongText("  ab").lstrip(" ")
    assert str(text) == "ab" and text == "ab" and len(text) == 2


@pytest.mark.parametrize("key, out", [
    (slice(-1, None), "d"), (slice(-3, -1), "bc"), (slice(None, -2), "ab"), (slice(1, 99), "bcd"),
    (slice(-99, 2), "ab"), (slice(3, 1), ""),
])
def test_slices_count_from_the_stripped_start(key, out):
    stripped = LongText("xxabcd").lstrip("x")
    assert stripped[key] == out == "abcd"[key]
    assert (stripped + "e")[key] == "abcde"[key]


# ---- equality, hash, repr ---------------------------------------------------------------------


def test_equality_within_one_store():
    a = LongText("  ab")
    b = a + "c"
    stripped = a.lstrip(" ")
    assert (a == a) is True and (a == b) is False and (b == a) is False
    assert (a == stripped) is False and (stripped == a) is False  # same store and end, not the same start
    assert (b.lstrip(" ") == "abc") is True


@pytest.mark.parametrize("left, right, equal", [
    ("ab", "ab", True), ("ab", "cd", False), ("ab", "abc", False), ("", "", True), ("a", "", False),
])
def test_equality_across_stores_and_with_str(left, right, equal):
    assert (LongText(left) == LongText(right)) is equal
    assert (LongText(left) == right) is equal and (LongText(right) == left) is equal


def test_not_equal_to_other_types():
    assert (LongText("1") == 1) is False and (LongText("a") != ["a"]) is True
    assert LongText("a").__eq__(1) is NotImplemented


def test_hash_and_repr():
    assert hash(LongText("ab") + "c") == hash("abc")
    assert {LongText("abc"): 1}["abc"] == 1
    assert repr(LongText("abc") + "de") == "LongText(5 characters)"


# ---- grew_from --------------------------------------------------------------------------------


@pytest.mark.parametrize("old, grew", [
    ("ab", True), ("a", True), ("", True), ("abc", False), ("x", False), ("ba", False), ("abx", False),
])
def test_grew_from_a_str_or_another_store(old, grew):
    text = LongText("ab")
    assert text.grew_from(old) is grew and text.grew_from(LongText(old)) is grew


def test_grew_from_within_one_store():
    a = LongText("  a")
    b = a + "b"
    stripped = b.lstrip(" ")
    assert b.grew_from(a) is True and a.grew_from(b) is False and a.grew_from(a) is True
    assert b.grew_from(stripped) is False and stripped.grew_from(a.lstrip(" ")) is True
    assert a.grew_from(stripped) is False  # "ab" is not how "  a" starts


# ---- isspace, lstrip, find, rfind on pieces ---------------------------------------------------


def texts(parts: list[str], strip: str) -> list[tuple[LongText, str]]:
    """Each snapshot of `parts` grown one by one (joined as it grows), stripped of `strip`, with
    the str each stands for: texts that end before their store does and start after it."""
    out, text, whole = [], LongText(), ""
    for part in parts:
        text, whole = text + part, whole + part
        text._store.flush()
        out.append((text, whole))
    return [(t.lstrip(strip), w.lstrip(strip)) for t, w in out]


CASES = [
    (["  ", "  "], " "), (["  ", "a "], " "), (["xx", "  "], "x"), (["ya", " "], "y"),
    (["x", "   ", " x"], "x"), (["  ", "  x", " "], " "), (["ab", "  cd"], " "), (["  ", " ", "  ab", "x"], " "),
    (["x ", "  "], "x"), (["a", "b"], "a"), (["  ab ", " c"], " "), (["aaaa", "aaab", "a"], "a"),
    (["  ", "a "], "y"), (["  ", "x"], "y"), (["    ", " ", "x"], "y"), (["    ", " ", " x"], " "),
    (["    ", " ", " x"], "y"),
]


@pytest.mark.parametrize("piece", [1, 4])  # 1: a piece an append
@pytest.mark.parametrize("parts, strip", CASES)
def test_isspace_and_lstrip_are_the_str_ones(monkeypatch, piece, parts, strip):
    monkeypatch.setattr(longtext, "PIECE", piece)
    for text, whole in texts(parts, strip):
        assert text.isspace() is whole.isspace(), (text, whole)
        assert len(text) == len(whole) and str(text) == whole
        assert str(text.lstrip(" ")) == whole.lstrip(" ") and len(text.lstrip(" ")) == len(whole.lstrip(" "))


def test_isspace_of_a_text_ending_where_a_piece_starts(tiny):
    a = LongText("    ")
    b = a + "x"
    b._store.flush()
    assert b._store.pieces == ["    ", "x"]
    assert a.isspace() is True and b.isspace() is False


def test_lstrip_of_an_older_snapshot_stops_at_its_end():
    a = LongText("  ")
    b = a + " x"  # one piece, "   x"
    assert str(b) == "   x"
    assert len(a.lstrip(" ")) == 0 and not a.lstrip(" ") and str(b.lstrip(" ")) == "x"


@pytest.mark.parametrize("piece", [1, 4])
@pytest.mark.parametrize("parts, strip", CASES)
def test_find_and_rfind_are_the_str_ones(monkeypatch, piece, parts, strip):
    monkeypatch.setattr(longtext, "PIECE", piece)
    for text, whole in texts(parts, strip):
        n = len(whole)
        for ch in " axb":
            assert text.find(ch) == whole.find(ch) and text.rfind(ch) == whole.rfind(ch), (ch, whole)
            for a in range(n + 2):
                for b in range(a, n + 2):
                    assert text.find(ch, a, b) == whole.find(ch, a, b), (ch, a, b, whole)
                    assert text.rfind(ch, a, b) == whole.rfind(ch, a, b), (ch, a, b, whole)


@pytest.mark.parametrize("args, found, rfound", [
    ((), 0, 5), ((0, 0), -1, -1), ((0, 1), 0, 0), ((1,), 3, 5), ((4,), 5, 5), ((6,), -1, -1),
    ((-1,), 0, 5), ((-9, 2), 0, 0), ((0, -1), -1, -1), ((0, -5), -1, -1), ((2, 99), 3, 5), ((99,), -1, -1),
])
def test_find_bounds_are_clamped_to_the_text(tiny, args, found, rfound):
    """Unlike str.find, a negative bound counts as 0, not from the end (the callers only
    pass offsets from the start)."""
    text = joined(["abca", "za"])
    assert text._store.pieces == ["abca", "za"]
    assert text.find("a", *args) == found and text.rfind("a", *args) == rfound


def test_find_in_a_stripped_older_snapshot_sees_only_its_own_characters():
    a = LongText("  ab")
    stripped = a.lstrip(" ")
    b = a + "cab"
    assert str(b) == "  abcab"
    assert [stripped.find(ch) for ch in "abc"] == [0, 1, -1]
    assert [stripped.rfind(ch) for ch in "abc"] == [0, 1, -1]
    assert b.lstrip(" ").find("c") == 2 and b.lstrip(" ").rfind("a") == 3
