"""LineChain (dashfloat/ui/transcript.py): lists one after another read like the one list
they stand for, and a list that grows after the chain was made does not change it."""

from __future__ import annotations

import random

import pytest

from dashfloat.ui.transcript import LineChain


@pytest.mark.parametrize("seed", range(5))
def test_it_reads_like_the_list_it_stands_for(seed):
    rng = random.Random(seed)
    parts = [[f"{p}.{i}" for i in range(rng.randrange(0, 6))] for p in range(rng.randrange(0, 7))]
    whole = [line for part in parts for line in part]
    chain = LineChain(parts)
    assert len(chain) == len(whole) and list(chain) == whole and chain == whole and whole == chain
    for k in range(-len(whole), len(whole)):
        assert chain[k] == whole[k]
    for _ in range(100):
        a, b = rng.randrange(-3, len(whole) + 3), rng.randrange(-3, len(whole) + 3)
        assert chain[a:b] == whole[a:b] and chain[a:] == whole[a:] and chain[::2] == whole[::2]
    for k in (len(whole), -len(whole) - 1):
        with pytest.raises(IndexError):
            chain[k]
    head = chain.with_head("head")
    assert list(head) == ["head", *whole] and head[0] == "head" and len(head) == len(whole) + 1


def test_a_part_that_grows_later_is_not_this_chains():
    done = ["a", "b"]
    chain = LineChain([done, ["tail"]])
    done.append("c")  # the answer's finished lines grew after the chain was made
    assert list(chain) == ["a", "b", "tail"] and chain[2] == "tail" and chain[1:] == ["b", "tail"]
    assert LineChain([done, ["tail"]]) != chain and len(LineChain([done])) == 3


def test_it_is_not_equal_to_a_string_or_a_shorter_list():
    chain = LineChain([["x"]])
    assert chain != "x" and chain != [] and chain != ["x", "y"] and chain == ("x",)
