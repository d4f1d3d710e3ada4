"""dashfloat/metering.py: reading the usage providers send, prices, totals, the budgets'
checks and their 80 % warnings, the figures the status bar and /usage show. Pure."""

from __future__ import annotations

import pytest

from dashfloat import metering
from dashfloat.metering import Budgets, Meter, Price, Usage, normalize
from dashfloat.ui.statusline import meter_near, meter_text, status_markup


@pytest.mark.parametrize("raw, expected", [
    ({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}, Usage(100, 0, 20)),
    ({"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 64}},
     Usage(100, 64, 20)),  # OpenAI
    ({"prompt_tokens": 100, "completion_tokens": 20, "prompt_cache_hit_tokens": 30,
      "prompt_cache_miss_tokens": 70}, Usage(100, 30, 20)),  # DeepSeek
    ({"prompt_tokens": 100, "completion_tokens": 20, "cache_read_input_tokens": 10}, Usage(100, 10, 20)),
    ({"input_tokens": 50, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 8}}, Usage(50, 8, 5)),
    ({"prompt_tokens": 100, "total_tokens": 130}, Usage(100, 0, 30)),  # no completion count: the rest
    ({"completion_tokens": 7, "total_tokens": 30}, Usage(23, 0, 7)),
    ({"prompt_tokens": 100, "total_tokens": 90}, Usage(100, 0, 0)),  # a total below a count: the rest is none
    ({"completion_tokens": 50, "total_tokens": 30}, Usage(0, 0, 50)),
    ({"prompt_tokens": 100}, Usage(100, 0, 0)),  # one count alone
    ({"completion_tokens": 7}, Usage(0, 0, 7)),
    ({"prompt_tokens": 0, "completion_tokens": 0}, Usage(0, 0, 0)),  # zero is a count, not "no usage"
    ({"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {},
      "input_tokens_details": {"cached_tokens": 8}}, Usage(100, 8, 20)),
    ({"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 3},
      "input_tokens_details": {"cached_tokens": 8}}, Usage(100, 3, 20)),  # the first that says
    ({"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 99}},
     Usage(10, 10, 1)),  # a cache count above the input is capped
    ({"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": None}, Usage(10, 0, 1)),
    ({"prompt_tokens": True, "completion_tokens": -1}, None),
    ({"total_tokens": 12}, None),
    ({}, None),
    (None, None),
    ("12", None),
])
def test_usage_in_the_shapes_providers_send(raw, expected):
    assert normalize(raw) == expected


def test_price_and_cost_with_cached_input():
    p = Price(input=2.0, output=8.0, cached_input=0.5)
    assert p.cost(Usage(prompt=1_000_000, cached=400_000, completion=100_000)) == pytest.approx(
        (600_000 * 2.0 + 400_000 * 0.5 + 100_000 * 8.0) / 1e6)
    assert Price(1.0, 2.0).cost(Usage(1_000_000, 500_000, 0)) == pytest.approx(1.0)  # cached at the input price


def test_a_price_by_exact_name_first_then_the_first_matching_pattern():
    prices = {"deepseek-*": Price(1, 1), "deepseek-chat": Price(2, 2), "*": Price(3, 3)}
    assert metering.price_for("deepseek-chat", prices) == Price(2, 2)
    assert metering.price_for("deepseek-coder", prices) == Price(1, 1)
    assert metering.price_for("gpt-4o", prices) == Price(3, 3)
    assert metering.price_for("gpt-4o", {"gpt-4o-mini": Price(1, 1)}) is None
    assert metering.price_for(None, prices) is None
    assert metering.price_for("qwen3-32b", {"qwen?-[0-9]*b": Price(1, 1)}) == Price(1, 1)  # every glob character


def test_totals_count_every_request_and_the_turn_apart():
    m = Meter(prices={"m": Price(1.0, 2.0)})
    m.begin_turn()
    assert m.record(Usage(1000, 0, 100), "m") == pytest.approx(0.0012)
    m.record(Usage(2000, 500, 10, estimated=True), "other")  # no price: no cost
    assert (m.run.requests, m.run.prompt, m.run.cached, m.run.completion) == (2, 3000, 500, 110)
    assert m.run.tokens == 3110 and m.run.estimated == 1 and m.run.priced == 1
    assert m.run.cost == pytest.approx(0.0012)
    m.begin_turn()
    m.record(Usage(10, 0, 1), "m")
    assert m.turn.requests == 1 and m.run.requests == 3


def test_an_estimated_usage_has_nothing_cached():
    m = Meter(prices={"m": Price(1.0, 2.0, cached_input=0.0)})
    assert m.record(Usage(prompt=1000, completion=100, estimated=True), "m") == pytest.approx(0.0012)
    assert "input  1,000 tokens\n" in m.report("m")  # no "(... of them cached)"


def test_budgets_stop_when_reached_or_when_the_next_input_would_pass():
    m = Meter(Budgets(max_turns=2))
    assert m.check("m") is None
    m.record(Usage(1, 0, 1), "m")
    m.record(Usage(1, 0, 1), "m")
    stop = m.check("m")
    assert stop.budget == "max_turns" and stop.why == "reached" and "2 of 2 requests" in stop.text
    assert stop.text.endswith("The turn is stopped. Budgets count from the start of DashFloat: quit and run dashfloat "
                              "--continue --max-turns N (or set the config key) to go on with this session.")

    m = Meter(Budgets(max_tokens=1000))
    m.record(Usage(700, 0, 100), "m")
    assert m.check("m") is None
    stop = m.check("m", next_input=300)
    assert stop.budget == "max_tokens" and stop.why == "next_request" and "about 300 tokens of input" in stop.text
    assert m.check("m", next_input=200) is None
    m.record(Usage(150, 0, 50), "m")
    assert m.check("m").why == "reached"

    m = Meter(Budgets(max_cost=0.01), {"m": Price(10.0, 10.0)})
    m.record(Usage(900, 0, 0), "m")  # $0.009
    assert m.check("m") is None
    assert m.check("m", next_input=200).why == "next_request"
    m.record(Usage(100, 0, 0), "m")
    stop = m.check("m")
    assert stop.budget == "max_cost" and stop.why == "reached" and "$0.0100 of $0.0100" in stop.text

    m = Meter(Budgets(max_cost=0.01), {"m": Price(10.0, 1000.0)})  # the next input alone, no output in it
    assert "(about 2,000 tokens, $0.0200) would pass max_cost" in m.check("m", next_input=2000).text

    m = Meter(Budgets(max_cost=0.01), {"m": Price(1000.0, 0.0)})
    m.record(Usage(5, 0, 0), "m")  # $0.005
    assert m.check("m", next_input=5) is None  # $0.005 more reaches the budget, does not pass it
    assert m.check("m", next_input=6).why == "next_request"
    m = Meter(Budgets(max_cost=0.00905), {"m": Price(1000.0, 0.0)})
    m.record(Usage(9, 0, 0), "m")  # $0.009: one token more would pass, but no next input is counted
    assert m.check("m") is None
    m.run.cost = 0.00905 * (1 - 1e-9)  # within the rounding of float sums: reached
    assert m.check("m").why == "reached"


def test_a_cost_budget_cannot_be_kept_for_a_model_without_a_price():
    m = Meter(Budgets(max_cost=1.0), {"known": Price(1, 1)})
    stop = m.check("unknown", next_input=10)
    assert stop.why == "unpriced" and "no price for model unknown" in stop.text and "[prices]" in stop.text
    assert m.check("known", next_input=10) is None


def test_the_80_percent_warning_comes_once_per_budget_and_not_with_the_stop():
    m = Meter(Budgets(max_tokens=1000, max_turns=10))
    m.record(Usage(700, 0, 0), "m")
    assert m.warnings() == []
    m.record(Usage(100, 0, 0), "m")
    (w,) = m.warnings()
    assert w.budget == "max_tokens" and w.text.startswith("80% of the max_tokens budget used: 800 of 1,000 tokens")
    assert m.warnings() == []  # once
    m2 = Meter(Budgets(max_tokens=1000))
    m2.record(Usage(1200, 0, 0), "m")  # straight past it: the stop says it, no warning
    assert m2.warnings() == []
    m3 = Meter(Budgets(max_turns=1, max_tokens=1000))
    m3.record(Usage(800, 0, 0), "m")  # the request budget reached, the token budget at 80 %
    assert [w.budget for w in m3.warnings()] == ["max_tokens"]


def test_the_warnings_of_the_request_and_cost_budgets():
    m = Meter(Budgets(max_turns=5, max_cost=1.0), {"m": Price(200.0, 0.0)})
    for _ in range(3):
        m.record(Usage(1000, 0, 0), "m")  # $0.20 each
    assert m.warnings() == []
    m.record(Usage(1000, 0, 0), "m")
    assert [w.text for w in m.warnings()] == [
        "80% of the max_turns budget used: 4 of 5 requests. The turn stops when it is reached.",
        "80% of the max_cost budget used: $0.80 of $1.00. The turn stops when it is reached."]
    report = m.report("m")
    assert "Budgets: max_turns 4 of 5 requests (80%); max_cost $0.80 of $1.00 (80%)." in report
    assert "price of m: input 200, output 0 per million tokens" in report  # no cached price: none shown


def test_usage_report_of_one_request_and_of_requests_without_a_price():
    m = Meter(prices={"m": Price(1.0, 1.0)})
    m.begin_turn()
    m.record(Usage(1000, 0, 0), "m")
    m.record(Usage(1000, 0, 0), "other")
    text = m.report(None)
    assert "cost   $0.0010 (1 requests without a price)" in text
    assert "no price for the model in [prices]" in text
    unpriced = Meter(prices={"m": Price(1.0, 1.0)})
    unpriced.record(Usage(1000, 0, 0), "other")
    assert "cost   " not in unpriced.report("other")  # no request with a price: no cost line
    one = Meter()
    one.record(Usage(10, 0, 0), "m")
    assert "(1 request to the model)" in one.report("m") and "last turn: 1 request, 10 tokens\n" in one.report("m")


def test_totals_round_trip_through_the_journal_shape():
    t = metering.Totals(requests=3, prompt=10, cached=2, completion=5, cost=0.5, priced=2, estimated=1)
    assert metering.Totals.from_dict(t.as_dict()) == t
    assert metering.Totals.from_dict({"requests": "x", "prompt": -1, "cost": True}) == metering.Totals()
    assert metering.Totals.from_dict({"cost": -0.5}) == metering.Totals()


def test_output_without_usage_is_estimated_by_the_context_modules_rule():
    assert metering.estimate_text("x" * 350) == 100
    assert metering.estimate_text("é" * 10) == 10  # a token per character not ASCII, as context.py counts


def test_token_and_money_texts():
    assert [metering.tokens_text(n) for n in (0, 9_999, 10_000, 12_345, 100_000, 999_949, 999_950, 1_000_000,
                                              1_234_567)] == [
        "0", "9,999", "10k", "12.3k", "100k", "999.9k", "1M", "1M", "1.23M"]  # never "1000k"
    assert [metering.money(x) for x in (0, 0.0042, 0.1, 12.5)] == ["$0.0000", "$0.0042", "$0.10", "$12.50"]


def test_the_status_bar_figure():
    assert meter_text(None) == ""
    assert meter_text(Meter().view()) == ""  # nothing used, no budget: nothing shown
    m = Meter(Budgets(max_tokens=100_000, max_cost=0.5, max_turns=20), {"m": Price(1.0, 1.0)})
    assert meter_text(m.view()) == "used 0/100k tok $0.0000/$0.50 0/20 req"
    m.record(Usage(48_000, 0, 200, estimated=True), "m")
    assert meter_text(m.view()) == "used ~48.2k/100k tok $0.0482/$0.50 1/20 req"
    assert not meter_near(m.view())
    m.record(Usage(40_000, 0, 0), "m")
    assert meter_near(m.view())
    priced = Meter(prices={"m": Price(0.123456789, 0.0)})
    priced.record(Usage(1000, 0, 0), "m")
    assert priced.view()["cost"] == 0.00012346  # what the headless result reports: to 8 decimals
    plain = Meter()
    plain.record(Usage(1234, 0, 5), "m")
    assert meter_text(plain.view()) == "used 1,239 tok"
    bar = status_markup(phase="idle", spinner=" ", model="m", tokens=1239, position=None, notice="", width=100,
                        sep="|", meter=m.view())
    text = "".join(t for _a, t in bar)
    assert "| used ~88.2k/100k tok $0.0882/$0.50 2/20 req " in text
    assert ("status_error", "| used ~88.2k/100k tok $0.0882/$0.50 2/20 req ") in bar  # past 80 %


def test_usage_report_lists_totals_last_turn_price_and_budgets():
    m = Meter(Budgets(max_tokens=20_000), {"m": Price(1.0, 4.0, 0.25)})
    m.earlier = metering.Totals(requests=4, prompt=900, completion=100, cost=0.002, priced=4)
    m.begin_turn()
    m.record(Usage(3000, 1000, 200), "m")  # 2,000 + 250 + 800 millionths
    m.record(Usage(3550, 0, 100, estimated=True), "m")  # 3,550 + 400
    text = m.report("m")
    assert "Usage since DashFloat started (2 requests to the model):" in text
    assert "input  6,550 tokens (1,000 of them cached)" in text and "output 300 tokens" in text
    assert "total  6,850 tokens" in text and "cost   $0.0070" in text
    assert "last turn: 2 requests, 6,850 tokens, $0.0070" in text
    assert "price of m: input 1, output 4, cached input 0.25 per million tokens" in text
    assert "~ 1 request reported no usage" in text
    assert "Budgets: max_tokens 6,850 of 20k tokens (34%)." in text
    assert "Before this run (the resumed session): 4 requests, 1,000 tokens, $0.0020 (not counted" in text
    assert "no [prices] table" in Meter().report("m")
    assert "Budgets: none (--max-turns" in Meter().report("m")
    assert "no price for x" in Meter(prices={"m": Price(1, 1)}).report("x")
