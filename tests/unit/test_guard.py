"""Tests for dashfloat.tools.guard: the monotonic guard (decisions may only tighten)."""

from __future__ import annotations

import itertools

import pytest

from dashfloat.tools import guard
from dashfloat.tools.guard import (
    ALLOW,
    ASK,
    DECISIONS,
    DENY,
    STRICTNESS,
    MonotonicGuard,
    RelaxAttempt,
    Update,
    check_decision,
    stricter,
    strictest,
)


def test_the_three_decisions_and_their_order():
    assert (DENY, ASK, ALLOW) == ("deny", "ask", "allow")
    assert STRICTNESS[DENY] > STRICTNESS[ASK] > STRICTNESS[ALLOW]
    assert set(DECISIONS) == set(STRICTNESS) == {"deny", "ask", "allow"}


def test_a_new_guard_has_decided_nothing_and_fails_closed():
    g = MonotonicGuard()
    assert g.decision is None
    assert g.decided_by is None
    assert g.history == [] and g.relax_attempts == []
    assert g.final == DENY  # no decision is not permission
    assert not g.relaxed


@pytest.mark.parametrize("decision", DECISIONS)
def test_the_first_decision_is_always_taken(decision):
    g = MonotonicGuard()
    assert g.update(decision, "rules") is True
    assert g.decision == decision
    assert g.final == decision
    assert g.decided_by == "rules"
    assert g.history == [Update(decision, "rules", True)]
    assert g.relax_attempts == []


# every ordered pair of transitions: first -> second
PAIRS = list(itertools.product(DECISIONS, repeat=2))


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_every_pair_of_transitions(first, second):
    g = MonotonicGuard()
    assert g.update(first, "stage one")
    accepted = g.update(second, "stage two")
    tighten = STRICTNESS[second] > STRICTNESS[first]
    relax = STRICTNESS[second] < STRICTNESS[first]
    assert accepted is (not relax)
    # the stricter decision always stands (fail closed)
    assert g.decision == (second if tighten else first)
    assert g.final == g.decision
    # credit goes to the stage that set the current decision; a repeat does not take it
    assert g.decided_by == ("stage two" if tighten else "stage one")
    assert g.history == [Update(first, "stage one", True), Update(second, "stage two", not relax)]
    if relax:
        assert g.relax_attempts == [RelaxAttempt(first, second, "stage two")]
        assert g.relax_attempts[0] == (first, second, "stage two")  # a plain (from, to, who)
        assert g.relaxed
    else:
        assert g.relax_attempts == []
        assert not g.relaxed


@pytest.mark.parametrize(
    ("first", "relaxed_to"), [(DENY, ASK), (DENY, ALLOW), (ASK, ALLOW)]
)
def test_a_hook_cannot_relax_a_deny_or_an_ask(first, relaxed_to):
    g = MonotonicGuard()
    g.update(first, 'rule "execute_command(rm *)" in user config')
    assert g.update(relaxed_to, "hook pre_tool_use") is False
    assert g.decision == first
    assert g.decided_by == 'rule "execute_command(rm *)" in user config'
    assert g.relax_attempts == [(first, relaxed_to, "hook pre_tool_use")]


def test_all_three_in_every_order_end_strictest():
    for order in itertools.permutations(DECISIONS):
        g = MonotonicGuard()
        for k, d in enumerate(order):
            g.update(d, f"s{k}")
        assert g.decision == DENY
        assert g.decided_by == f"s{order.index(DENY)}"
        relaxes = sum(
            1 for k, d in enumerate(order)
            if k and STRICTNESS[d] < max(STRICTNESS[x] for x in order[:k])
        )
        assert len(g.relax_attempts) == relaxes
        assert len(g.history) == 3


def test_tighten_step_by_step_records_each_setter():
    g = MonotonicGuard()
    assert g.update(ALLOW, "built-in default")
    assert g.decided_by == "built-in default"
    assert g.update(ASK, "path policy")
    assert g.decided_by == "path policy"
    assert g.update(ASK, "hook")  # same: accepted, no credit
    assert g.decided_by == "path policy"
    assert g.update(DENY, "rule")
    assert g.decided_by == "rule"
    assert not g.update(ALLOW, "user key")
    assert g.decision == DENY and g.decided_by == "rule"
    assert [u.accepted for u in g.history] == [True, True, True, True, False]
    assert [u.who for u in g.history] == ["built-in default", "path policy", "hook", "rule",
                                          "user key"]


def test_repeated_relax_attempts_are_all_recorded():
    g = MonotonicGuard()
    g.update(DENY, "rule")
    for k in range(3):
        assert not g.update(ALLOW, f"hook {k}")
    assert [a.who for a in g.relax_attempts] == ["hook 0", "hook 1", "hook 2"]
    assert g.decision == DENY


@pytest.mark.parametrize("bad", ["Allow", "DENY", "", "yes", None, 1, True, b"allow", "allow "])
def test_an_unknown_decision_is_a_bug_and_raises(bad):
    g = MonotonicGuard()
    with pytest.raises(ValueError):
        g.update(bad, "x")
    # a raise changes nothing, before or after a real decision
    assert g.decision is None and g.history == []
    g.update(ASK, "rules")
    with pytest.raises(ValueError):
        g.update(bad, "x")
    assert g.decision == ASK and len(g.history) == 1


def test_who_must_be_a_string():
    g = MonotonicGuard()
    with pytest.raises(TypeError):
        g.update(ALLOW, None)
    assert g.decision is None


def test_helpers():
    assert check_decision("ask") == "ask"
    with pytest.raises(ValueError):
        check_decision("maybe")
    for a, b in PAIRS:
        s = stricter(a, b)
        assert STRICTNESS[s] == max(STRICTNESS[a], STRICTNESS[b])
    assert strictest([ALLOW, ASK]) == ASK
    assert strictest([ALLOW, DENY, ASK]) == DENY
    assert strictest([ALLOW]) == ALLOW
    assert strictest([]) == DENY  # fail closed
    assert strictest([], default=ASK) == ASK
    with pytest.raises(ValueError):
        strictest([ALLOW, "nope"])


def test_repr_is_informative():
    g = MonotonicGuard()
    g.update(DENY, "r")
    g.update(ALLOW, "h")
    text = repr(g)
    assert "deny" in text and "relax_attempts=1" in text


def test_module_has_no_ui_or_io_imports():
    src = open(guard.__file__, encoding="utf-8").read()
    assert "urwid" not in src and "import os" not in src
