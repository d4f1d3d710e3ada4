"""LongText (dashfloat/ui/longtext.py): an append-only text in pieces reads exactly like
the str it stands for, whatever the pieces were, and an earlier snapshot keeps its length
while the text grows."""

from __future__ import annotations

import random

import pytest

from dashfloat.ui import longtext
from dashfloat.ui.longtext import LongText


def grown(parts: list[str]) -> tuple[LongText, list[LongText]]:
    text, snapshots = LongText(), []
    for part in parts:
        text = text + part
        snapshots.append(text)
    return text, snapshots


@pytest.mark.parametrize("seed", range(6))
def test_it_reads_like_the_str_it_stands_for(seed, monkeypatch):
    monkeypatch.setattr(longtext, "PIECE", 50)  # many pieces, small enough to cross
    rng = random.Random(seed)
    parts = ["".join(rng.choice(" ab\n") for _ in range(rng.randrange(0, 40))) for _ in range(60)]
    whole = "".join(parts)
    text, snapshots = grown(parts)
    assert len(text) == len(whole) and bool(text) == bool(whole)
    for _ in range(300):
        a, b = sorted(rng.randrange(-5, len(whole) + 5) for _ in range(2))
        assert text[a:b] == whole[a:b] and text[a:] == whole[a:] and text[:b] == whole[:b]
        a0, b0 = max(a, 0), max(b, 0)  # (offsets from the start only, as the callers use them)
        for ch in "\n a":
            assert text.find(ch, a0) == whole.find(ch, a0) and text.rfind(ch, a0) == whole.rfind(ch, a0)
            assert text.find(ch, a0, b0) == whole.find(ch, a0, b0)
            assert text.rfind(ch, a0, b0) == whole.rfind(ch, a0, b0)
    done = 0
    for part, snap in zip(parts, snapshots, strict=True):  # each snapshot is still the text it was
        done += len(part)
        assert len(snap) == done and str(snap) == whole[:done] and snap == whole[:done]
        assert text.grew_from(snap) and (snap.grew_from(text) is (done == len(whole)))
    assert str(text) == whole and text == LongText(whole) and text != whole + "x"


@pytest.mark.parametrize("parts, space", [
    ([], False), (["   "], True), ([" ", " \n", "\t"], True), (["  ", " x"], False), (["x"], False),
])
def test_isspace_is_str_isspace(parts, space):
    text, _ = grown(parts)
    assert text.isspace() is space is "".join(parts).isspace()


@pytest.mark.parametrize("parts", [["  ", "  ab"], ["ab"], ["    "], [" ", " ", "c d"], []])
def test_lstrip_is_str_lstrip(parts, monkeypatch):
    monkeypatch.setattr(longtext, "PIECE", 2)
    text, _ = grown(parts)
    stripped = text.lstrip(" ")
    assert str(stripped) == "".join(parts).lstrip(" ") and len(stripped) == len(str(stripped))
    assert (stripped is text) is (not parts or not "".join(parts).startswith(" "))


def test_an_older_snapshot_grown_again_goes_its_own_way():
    a = LongText("abc")
    b = a + "def"
    c = a + "XY"  # a is not the newest: its store is not appended to
    assert str(b) == "abcdef" and str(c) == "abcXY" and str(a) == "abc"
    assert not c.grew_from(b) and c.grew_from(a) and b.grew_from(a)


def test_slices_only():
    text = LongText("abc")
    with pytest.raises(TypeError):
        text[1]
    with pytest.raises(ValueError):
        text[::2]
    with pytest.raises(ValueError):
        text.find("ab")


def test_a_megabyte_grown_a_little_at_a_time_stays_in_few_pieces():
    text = LongText()
    for _ in range(20_000):
        text = text + "x" * 50
    assert text[0:1_000_000] == "x" * 1_000_000
    assert len(text._store.pieces) <= 1_000_000 // longtext.PIECE + 2
