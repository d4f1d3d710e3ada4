"""Append-only text kept in pieces, for an answer or a line that grows a frame at a time.

A Python str cannot grow in place: `shown + new` copies all of `shown`, so a 4 MiB line
that grows every frame cost 4 MiB of copying per frame, more as it grew (issue 16 §1: a
frame's work depends on what arrived, not on the size of one line). A LongText is an
immutable snapshot of a shared, append-only store: `text + new` stores `new` and gives
the longer snapshot; a slice joins just the pieces it covers. The text as one str
(`str(text)`) is built only where it is wanted whole (a line that is complete).
"""

from __future__ import annotations

import bisect

PIECE = 64 << 10  # small appends are joined into pieces of about this many characters


class _Store:
    """The pieces a family of LongTexts share: joined pieces, then the appends not joined
    yet (the tail). Only ever appended to (or its pieces joined: the same text)."""

    __slots__ = ("pieces", "starts", "tail", "size", "joined")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.starts: list[int] = []  # the offset of each piece
        self.tail: list[str] = []
        self.size = 0  # characters in pieces and tail
        self.joined = 0  # characters in pieces

    def append(self, s: str) -> None:
        self.tail.append(s)
        self.size += len(s)
        if self.size - self.joined >= PIECE:
            self.flush()

    def flush(self) -> None:
        """Join the tail into the pieces (into the last one while it is small: a frame's
        few appends do not make a piece each)."""
        if not self.tail:
            return
        new = "".join(self.tail)
        self.tail = []
        if self.pieces and len(self.pieces[-1]) < PIECE:
            self.pieces[-1] += new
        else:
            self.pieces.append(new)
            self.starts.append(self.joined)
        self.joined = self.size

    def slice(self, a: int, b: int) -> str:
        """Characters a:b (0 <= a <= b <= size) as one str."""
        if b > self.joined:
            self.flush()
        if a >= b:
            return ""
        pieces, starts = self.pieces, self.starts
        i = bisect.bisect_right(starts, a) - 1
        s = starts[i]
        piece = pieces[i]
        if b - s <= len(piece):  # within one piece
            return piece if (a == s and b - s == len(piece)) else piece[a - s : b - s]
        out = [piece[a - s :]]
        i += 1
        while i < len(pieces) and starts[i] < b:
            out.append(pieces[i][: b - starts[i]])
            i += 1
        return "".join(out)

    def whole(self) -> str:
        """All of it as one str, kept as the only piece (the next whole() is free)."""
        self.flush()
        if len(self.pieces) > 1:
            self.pieces, self.starts = ["".join(self.pieces)], [0]
        return self.pieces[0] if self.pieces else ""

    def spans(self, a: int, b: int):
        """(offset, piece) of the pieces that overlap a:b, in order."""
        if b > self.joined:
            self.flush()
        if a >= b:
            return
        i = bisect.bisect_right(self.starts, a) - 1
        while i < len(self.pieces) and self.starts[i] < b:
            yield self.starts[i], self.pieces[i]
            i += 1


class LongText:
    """Characters start:end of a store, as far as a line's layout needs a str: len(),
    slices (each a str), bool, equality, isspace(), lstrip(), find()/rfind() of one
    character, and str() for the whole. `text + s` appends to the store (shared with
    the snapshots before, which keep their length)."""

    __slots__ = ("_store", "_start", "_end")

    def __init__(self, text: str = "", *, _store: _Store | None = None, _start: int = 0, _end: int = 0):
        if _store is None:
            _store = _Store()
            if text:
                _store.append(text)
            _start, _end = 0, len(text)
        self._store, self._start, self._end = _store, _start, _end

    def __len__(self) -> int:
        return self._end - self._start

    def __bool__(self) -> bool:
        return self._end > self._start

    def __add__(self, s: str) -> LongText:
        if not s:
            return self
        store = self._store
        if self._end != store.size:  # not the newest snapshot: this one goes its own way
            return LongText(str(self) + s)
        store.append(s)
        return LongText(_store=store, _start=self._start, _end=store.size)

    def __getitem__(self, key: slice) -> str:
        if not isinstance(key, slice):
            raise TypeError("LongText takes slices only")
        a, b, step = key.indices(self._end - self._start)
        if step != 1:
            raise ValueError("LongText slices have no step")
        return self._store.slice(self._start + a, self._start + max(a, b))

    def __str__(self) -> str:
        store = self._store
        if self._start == 0 and self._end == store.size:
            return store.whole()
        return store.slice(self._start, self._end)

    def __eq__(self, other) -> bool:
        if isinstance(other, LongText):
            if other._store is self._store and other._start == self._start:
                return other._end == self._end
            return len(other) == len(self) and str(other) == str(self)
        if isinstance(other, str):
            return len(other) == len(self) and other == str(self)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"LongText({len(self)} characters)"

    def grew_from(self, old) -> bool:
        """Whether `old` (a LongText or a str) is a prefix of this text: at once for an
        earlier snapshot of the same store."""
        if isinstance(old, LongText) and old._store is self._store and old._start == self._start:
            return old._end <= self._end
        return len(old) <= len(self) and self[: len(old)] == str(old)

    def isspace(self) -> bool:
        if not self:
            return False
        return all(piece[max(0, self._start - s) : self._end - s].isspace()
                   for s, piece in self._store.spans(self._start, self._end))

    def lstrip(self, chars: str) -> LongText:
        k = self._start
        for s, piece in self._store.spans(self._start, self._end):
            part = piece[max(0, k - s) : self._end - s]
            rest = part.lstrip(chars)
            k += len(part) - len(rest)
            if rest:
                break
        return self if k == self._start else LongText(_store=self._store, _start=k, _end=self._end)

    def find(self, ch: str, a: int = 0, b: int | None = None) -> int:
        """The first offset of character `ch` in [a, b), or -1."""
        a, b = self._range(ch, a, b)
        for s, piece in self._store.spans(a, b):
            at = piece.find(ch, max(0, a - s), b - s)
            if at >= 0:
                return s + at - self._start
        return -1

    def rfind(self, ch: str, a: int = 0, b: int | None = None) -> int:
        """The last offset of character `ch` in [a, b), or -1 (the pieces from the end:
        what it costs is what lies after the character found)."""
        a, b = self._range(ch, a, b)
        for s, piece in reversed(list(self._store.spans(a, b))):
            at = piece.rfind(ch, max(0, a - s), b - s)
            if at >= 0:
                return s + at - self._start
        return -1

    def _range(self, ch: str, a: int, b: int | None) -> tuple[int, int]:
        if len(ch) != 1:
            raise ValueError("LongText finds one character")
        n = self._end - self._start
        b = n if b is None else min(b, n)
        return self._start + min(max(a, 0), n), self._start + max(b, 0)
