"""The budget keys (max_turns, max_tokens, max_cost) and the price table: options, files,
validation, and what a project file may do with them (lower a budget, never raise it; no
prices)."""

from __future__ import annotations

import pytest

from dashfloat.cli import build_parser
from dashfloat.config import ConfigError, describe, load_config
from dashfloat.metering import Price
from tests.unit.test_config import env_for, project_file, user_file


def load(home, root, cli=None):
    return load_config({"root": str(root), **(cli or {})}, env_for(home), root)


def test_no_budget_and_no_prices_by_default(home, root):
    c = load(home, root)
    assert (c.max_turns, c.max_tokens, c.max_cost, c.prices) == (None, None, None, {})
    rows = {line.split("=", 1)[0].strip(): line.split("=", 1)[1].split("(", 1)[0].strip() for line in describe(c)}
    assert rows["max_turns"] == rows["max_tokens"] == rows["max_cost"] == rows["prices"] == "none"


def test_budgets_from_the_user_file_and_the_command_line_wins(home, root):
    user_file(home, "max_turns = 40\nmax_tokens = 200000\nmax_cost = 1.5\n")
    c = load(home, root)
    assert (c.max_turns, c.max_tokens, c.max_cost) == (40, 200_000, 1.5)
    c = load(home, root, {"max_turns": "100", "max_tokens": "5000", "max_cost": "$0.25"})
    assert (c.max_turns, c.max_tokens, c.max_cost) == (100, 5000, 0.25)
    assert c.sources["max_cost"] == "command line --max-cost"


def test_a_project_file_may_lower_a_budget_but_not_raise_it(home, root):
    user_file(home, "max_turns = 40\nmax_cost = 1.0\n")
    project_file(root, "max_turns = 80\nmax_cost = 0.5\nmax_tokens = 9000\n")
    c = load(home, root)
    assert c.max_turns == 40 and c.sources["max_turns"].startswith("user file")  # raising: ignored
    assert c.max_cost == 0.5 and c.sources["max_cost"].startswith("project file")  # lowering: kept
    assert c.max_tokens == 9000  # the user file set none: the project's is stricter


@pytest.mark.parametrize("text, needle", [
    ("max_turns = 0", "a whole number from 1 to 1000000"),
    ('max_turns = "5"', "a whole number"),
    ("max_cost = -1", "an amount > 0"),
    ("max_cost = true", "an amount > 0"),
    ("max_tokens = 1.5", "a whole number"),
    ('prices = { "m" = { input = 1 } }', '"m": output is missing'),
    ('prices = { "m" = { input = 1, output = -2 } }', "output: expected a number >= 0"),
    ('prices = { "m" = { input = 1, output = 2, cache = 1 } }', 'unknown key "cache"'),
    ('prices = { "m" = 3 }', "expected a table"),
    ("prices = 3", "a table of model names"),
])
def test_bad_values_are_clear_errors(home, root, text, needle):
    user_file(home, text + "\n")
    with pytest.raises(ConfigError) as err:
        load(home, root)
    assert needle in str(err.value)


def test_bad_budgets_on_the_command_line(home, root):
    for cli, needle in (({"max_cost": "free"}, "--max-cost: expected an amount > 0"),
                        ({"max_turns": "-3"}, "--max-turns: expected a whole number")):
        with pytest.raises(ConfigError) as err:
            load(home, root, cli)
        assert needle in str(err.value)


def test_prices_in_the_user_file(home, root):
    user_file(home, '[prices]\n"gpt-4o-mini" = { input = 0.15, output = 0.60, cached_input = 0.075 }\n'
                    '"deepseek-*" = { input = 0.27, output = 1.1 }\n')
    c = load(home, root)
    assert c.prices == {"gpt-4o-mini": Price(0.15, 0.6, 0.075), "deepseek-*": Price(0.27, 1.1)}
    shown = "\n".join(describe(c))
    assert "gpt-4o-mini (input 0.15, output 0.6, cached_input 0.075)" in shown


def test_a_project_file_may_not_set_prices(home, root):
    project_file(root, '[prices]\n"m" = { input = 0, output = 0 }\n')
    with pytest.raises(ConfigError) as err:
        load(home, root)
    assert 'key "prices" is not allowed in a project file' in str(err.value)
    assert "cheaper" in str(err.value)


def test_the_options_reach_the_config():
    args = build_parser().parse_args(["--max-turns", "7", "--max-tokens", "1000", "--max-cost", "2"])
    assert (args.max_turns, args.max_tokens, args.max_cost) == ("7", "1000", "2")
