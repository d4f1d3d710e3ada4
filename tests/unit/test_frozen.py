"""dashfloat/frozen.py: the value classes of the modules loaded before the first frame
behave as the frozen dataclasses they replace."""

from __future__ import annotations

from unittest import mock

import pytest

from dashfloat.frozen import Frozen, FrozenError


class Pair(Frozen):  # (module level: pickle finds it)
    __slots__ = ("left", "right", "secret")
    _repr_skip = ("secret",)

    def __init__(self, left, right=0, secret=None):
        if not isinstance(left, int):
            raise TypeError("left must be an int")
        self._set(left=left, right=right, secret=secret)


class Other(Frozen):
    __slots__ = ("left", "right", "secret")

    def __init__(self, left, right=0, secret=None):
        self._set(left=left, right=right, secret=secret)


def test_equal_by_class_and_fields_and_hashed_by_fields():
    assert Pair(1, 2) == Pair(1, 2) and hash(Pair(1, 2)) == hash(Pair(1, 2))
    assert Pair(1, 2) != Pair(1, 3) and Pair(1, 2) != Pair(1, 2, "s")
    assert Pair(1, 2) != Other(1, 2)  # the same fields, another class
    assert Pair(1, 2) != (1, 2, None) and {Pair(1, 2), Pair(1, 2)} == {Pair(1, 2)}
    assert (Pair(1, 2) == mock.ANY) is True  # another class gets its say (NotImplemented)


def test_fields_cannot_be_assigned_or_deleted():
    p = Pair(1, 2)
    with pytest.raises(FrozenError, match="'left'"):
        p.left = 5
    with pytest.raises(AttributeError):  # (as dataclasses.FrozenInstanceError is one)
        del p.right
    with pytest.raises(AttributeError):
        p.other = 1  # no such field either
    assert (p.left, p.right) == (1, 2)


def test_repr_names_the_fields_but_the_skipped_ones():
    assert repr(Pair(1, "x", secret="key")) == "Pair(left=1, right='x')"
    assert repr(Other(1)) == "Other(left=1, right=0, secret=None)"


def test_replace_makes_a_new_one_through_init():
    p = Pair(1, 2, "s")
    q = p.replace(right=3)
    assert q == Pair(1, 3, "s") and p == Pair(1, 2, "s")
    with pytest.raises(TypeError, match="left must be an int"):
        p.replace(left="x")  # __init__'s checks run, as with dataclasses.replace
    with pytest.raises(TypeError, match="no field 'middle'"):
        p.replace(middle=1)


def test_copied_deep_copied_and_pickled_as_they_are():
    import copy
    import pickle

    p = Pair(1, [2, 3], "s")
    assert copy.copy(p) == p and copy.copy(p).right is p.right
    deep = copy.deepcopy(p)
    assert deep == p and deep.right is not p.right
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(FrozenError):
        copy.copy(p).left = 2  # still frozen


def test_the_configuration_is_one():
    from dashfloat.config import Config

    c = Config(model="m")
    assert c.headers == {} and c.permissions == [] and c.root.is_absolute()
    assert Config().headers is not Config().headers  # a fresh dict each (no shared default)
    with pytest.raises(FrozenError):
        c.model = "other"
    d = c.replace(model="n")
    assert d.model == "n" and d.base_url == c.base_url and c.model == "m"
    assert c == Config(model="m", root=c.root) and c != d
    assert "api_key" in repr(c) and "secret" not in repr(Config(api_key="secret"))
