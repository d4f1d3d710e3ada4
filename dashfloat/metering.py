"""Metering and budgets: what each request to the model used, the totals, and the limits.

Pure: no I/O, no threads. The agent feeds it one `Usage` per request (every episode of a turn,
though the UI's context figure still shows only the final episode's usage, ADR 0007 §5) and
posts what it answers.

- Per request: prompt, cached and completion tokens from the provider's usage chunk (the
  request asks for it: `stream_options.include_usage`), read in the shapes providers send
  (`normalize`). When none comes (a server that ignores the option, a cancelled or broken
  stream), an estimate from the request's and the answer's text, marked `estimated` (shown
  with `~`).
- Cost: from an optional price table (`prices` in the user config: a model name or glob
  pattern -> input, output and cached_input prices per million tokens); a model without a
  price has no cost (and a cost budget cannot be kept for it: the turn stops, see `check`).
- Totals: this run's (`run`, what budgets count), the current turn's (`turn`), and the session's
  earlier ones (`earlier`, from the journal of a resumed session: shown by /usage, not counted).
- Budgets (`Budgets`): `max_turns` (requests to the model: what Claude Code and Goose call
  agentic turns; one prompt may take several), `max_tokens` (input and output tokens of every
  request, cached input included: each request sends the whole conversation again), `max_cost`.
  `check` says whether the next request may go (a budget reached, or the next request's input
  alone would pass it); `warnings` says once per budget when 80 % of it is used.

Token counts are estimated in one place, dashfloat/context.py (calibrated by reported usage): the
agent hands `check` the next request's estimate. Only an answer's output without a usage chunk is
estimated here (`estimate_text`, context.text_tokens).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase

WARN_AT = 0.8  # the share of a budget at which the warning entry comes
BUDGET_NAMES = ("max_turns", "max_tokens", "max_cost")


# ---- estimating ---------------------------------------------------------------------------------


def estimate_text(text: str) -> int:
    """The output tokens of an answer that came without usage (context.text_tokens)."""
    from dashfloat.context import text_tokens

    return int(text_tokens(text))


# ---- usage ------------------------------------------------------------------------------------


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class Usage:
    """One request's tokens. `cached` is part of `prompt` (the input served from a cache)."""

    prompt: int = 0
    cached: int = 0
    completion: int = 0
    estimated: bool = False


def normalize(raw) -> Usage | None:
    """A provider's usage object as a Usage; None when it says nothing usable.

    OpenAI (prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens),
    the Responses-style names (input_tokens, output_tokens, input_tokens_details), DeepSeek
    (prompt_cache_hit_tokens), Anthropic-style gateways (cache_read_input_tokens); a missing
    completion count is what the total leaves."""
    if not isinstance(raw, dict):
        return None
    prompt = _int(raw.get("prompt_tokens"))
    if prompt is None:
        prompt = _int(raw.get("input_tokens"))
    completion = _int(raw.get("completion_tokens"))
    if completion is None:
        completion = _int(raw.get("output_tokens"))
    total = _int(raw.get("total_tokens"))
    if completion is None and total is not None and prompt is not None:
        completion = max(0, total - prompt)
    if prompt is None and total is not None and completion is not None:
        prompt = max(0, total - completion)
    if prompt is None and completion is None:
        return None
    cached = None
    for key in ("prompt_tokens_details", "input_tokens_details"):
        details = raw.get(key)
        if isinstance(details, dict):
            cached = _int(details.get("cached_tokens"))
            if cached is not None:
                break
    if cached is None:
        cached = _int(raw.get("prompt_cache_hit_tokens"))
    if cached is None:
        cached = _int(raw.get("cache_read_input_tokens"))
    prompt = prompt or 0
    return Usage(prompt=prompt, cached=min(cached or 0, prompt), completion=completion or 0)


# ---- prices ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """Prices per million tokens; cached input at the input price unless given."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((usage.prompt - usage.cached) * self.input + usage.cached * cached_rate
                + usage.completion * self.output) / 1_000_000


def price_for(model: str | None, prices: dict[str, Price]) -> Price | None:
    """The price of `model`: its exact entry, else the first glob pattern that matches it."""
    if not model or not prices:
        return None
    if model in prices:
        return prices[model]
    for pattern, price in prices.items():
        if any(c in pattern for c in "*?[") and fnmatchcase(model, pattern):
            return price
    return None


# ---- totals and budgets ---------------------------------------------------------------------------


@dataclass
class Totals:
    requests: int = 0
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    cost: float = 0.0  # of the priced requests
    priced: int = 0  # requests with a price
    estimated: int = 0  # requests whose usage was estimated

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    def add(self, usage: Usage, cost: float | None) -> None:
        self.requests += 1
        self.prompt += usage.prompt
        self.cached += usage.cached
        self.completion += usage.completion
        if usage.estimated:
            self.estimated += 1
        if cost is not None:
            self.cost += cost
            self.priced += 1

    def as_dict(self) -> dict:
        out = asdict(self)
        out["cost"] = round(self.cost, 8)
        return out

    @classmethod
    def from_dict(cls, data) -> Totals:
        t = cls()
        if isinstance(data, dict):
            for name in ("requests", "prompt", "cached", "completion", "priced", "estimated"):
                value = _int(data.get(name))
                if value is not None:
                    setattr(t, name, value)
            cost = data.get("cost")
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
                t.cost = float(cost)
        return t


@dataclass(frozen=True)
class Budgets:
    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None

    def any(self) -> bool:
        return any(getattr(self, n) is not None for n in BUDGET_NAMES)


@dataclass(frozen=True)
class Stop:
    """Why the next request may not go: the budget, its limit, what is used, what happened
    (`what`) and what the user can do (`hint`)."""

    budget: str  # max_turns | max_tokens | max_cost
    limit: float
    used: float
    what: str
    hint: str
    why: str = "reached"  # reached | next_request | unpriced

    @property
    def text(self) -> str:
        """The entry when the turn is stopped."""
        return f"{self.what} The turn is stopped. {self.hint}"

    @property
    def after_answer(self) -> str:
        """The entry when a whole answer used the budget up."""
        return f"{self.what} No further request will go to the model. {self.hint}"

    def as_dict(self) -> dict:
        return {"budget": self.budget, "limit": self.limit, "used": self.used, "why": self.why, "text": self.text}


@dataclass(frozen=True)
class BudgetWarning:
    budget: str
    limit: float
    used: float
    text: str


@dataclass
class Meter:
    budgets: Budgets = field(default_factory=Budgets)
    prices: dict[str, Price] = field(default_factory=dict)
    earlier: Totals = field(default_factory=Totals)  # a resumed session's use before this run
    run: Totals = field(default_factory=Totals)
    turn: Totals = field(default_factory=Totals)
    warned: set[str] = field(default_factory=set)

    def begin_turn(self) -> None:
        self.turn = Totals()

    def record(self, usage: Usage, model: str | None) -> float | None:
        """Count one request; its cost (None: no price for the model)."""
        price = price_for(model, self.prices)
        cost = price.cost(usage) if price is not None else None
        self.run.add(usage, cost)
        self.turn.add(usage, cost)
        return cost

    # -- budgets
    def _used(self, budget: str) -> float:
        return {"max_turns": self.run.requests, "max_tokens": self.run.tokens, "max_cost": self.run.cost}[budget]

    def check(self, model: str | None, next_input: int = 0) -> Stop | None:
        """Whether the next request may go: None, or the Stop that says which budget keeps it
        (already reached, or the request's own input, `next_input` tokens estimated, would pass
        it; a cost budget for a model without a price cannot be kept)."""
        b = self.budgets
        if b.max_turns is not None and self.run.requests >= b.max_turns:
            return Stop("max_turns", b.max_turns, self.run.requests,
                        f"Budget reached: {self.run.requests:,} of {b.max_turns:,} requests to the model "
                        "(max_turns).", _hint("--max-turns"))
        if b.max_tokens is not None:
            used = self.run.tokens
            if used >= b.max_tokens:
                return Stop("max_tokens", b.max_tokens, used,
                            f"Budget reached: {tokens_text(used)} of {tokens_text(b.max_tokens)} tokens, input "
                            "and output (max_tokens).", _hint("--max-tokens"))
            if next_input and used + next_input > b.max_tokens:
                return Stop("max_tokens", b.max_tokens, used,
                            f"Budget: the next request would send about {tokens_text(next_input)} tokens of input, "
                            f"past max_tokens ({tokens_text(used)} of {tokens_text(b.max_tokens)} used).",
                            _hint("--max-tokens"), "next_request")
        if b.max_cost is not None:
            price = price_for(model, self.prices)
            if price is None:
                return Stop("max_cost", b.max_cost, self.run.cost,
                            f"Budget: max_cost is set, but the price table has no price for model {model or '?'}, "
                            "so what a request costs cannot be counted.",
                            "Add the model to [prices] in your config file, or start without --max-cost.",
                            "unpriced")
            used = self.run.cost
            if used >= b.max_cost * (1 - 1e-9):  # (sums of float prices: 0.009 + 0.001 reaches 0.01)
                return Stop("max_cost", b.max_cost, used,
                            f"Budget reached: {money(used)} of {money(b.max_cost)} (max_cost).", _hint("--max-cost"))
            ahead = price.cost(Usage(prompt=next_input)) if next_input else 0.0
            if ahead and used + ahead > b.max_cost:
                return Stop("max_cost", b.max_cost, used,
                            f"Budget: the next request's input alone (about {tokens_text(next_input)} tokens, "
                            f"{money(ahead)}) would pass max_cost ({money(used)} of {money(b.max_cost)} spent).",
                            _hint("--max-cost"), "next_request")
        return None

    def warnings(self) -> list[BudgetWarning]:
        """The budgets that passed WARN_AT of their limit since the last call (each once)."""
        out = []
        for name in BUDGET_NAMES:
            limit = getattr(self.budgets, name)
            if limit is None or name in self.warned:
                continue
            used = self._used(name)
            if used >= limit * WARN_AT:
                self.warned.add(name)
                if used >= limit:
                    continue  # reached: the stop says it
                share = f"{used / limit:.0%}"
                what = {"max_turns": f"{used:,} of {limit:,} requests", "max_tokens":
                        f"{tokens_text(used)} of {tokens_text(limit)} tokens", "max_cost":
                        f"{money(used)} of {money(limit)}"}[name]
                out.append(BudgetWarning(name, limit, used, f"{share} of the {name} budget used: {what}. "
                                                      "The turn stops when it is reached."))
        return out

    # -- what the front end shows
    def view(self) -> dict:
        """The status bar's figures (a plain dict: it crosses to the UI thread)."""
        return {"tokens": self.run.tokens, "estimated": bool(self.run.estimated), "requests": self.run.requests,
                "cost": round(self.run.cost, 8) if self.run.priced else None,
                "max_tokens": self.budgets.max_tokens, "max_cost": self.budgets.max_cost,
                "max_turns": self.budgets.max_turns}

    def report(self, model: str | None) -> str:
        """The /usage entry."""
        lines = [f"Usage since DashFloat started ({_requests(self.run.requests)} to the model):"]
        lines += _totals_lines(self.run, bool(self.prices))
        if self.turn.requests:
            lines.append(f"  last turn: {_requests(self.turn.requests)}, {tokens_text(self.turn.tokens)} tokens"
                         + (f", {money(self.turn.cost)}" if self.turn.priced else ""))
        price = price_for(model, self.prices)
        if price is not None:
            cached = "" if price.cached_input is None else f", cached input {price.cached_input:g}"
            lines.append(f"  price of {model}: input {price.input:g}, output {price.output:g}{cached} per million tokens")
        elif self.prices:
            lines.append(f"  no price for {model or 'the model'} in [prices]: its requests have no cost")
        else:
            lines.append("  cost: no [prices] table in the config file")
        if self.run.estimated:
            lines.append(f"  ~ {_requests(self.run.estimated)} reported no usage: estimated from the text")
        if self.budgets.any():
            parts = []
            for name in BUDGET_NAMES:
                limit = getattr(self.budgets, name)
                if limit is None:
                    continue
                used = self._used(name)
                shown = {"max_turns": f"{used:,} of {limit:,} requests", "max_tokens":
                         f"{tokens_text(used)} of {tokens_text(limit)} tokens",
                         "max_cost": f"{money(used)} of {money(limit)}"}[name]
                parts.append(f"{name} {shown} ({used / limit:.0%})")
            lines.append("Budgets: " + "; ".join(parts) + ".")
        else:
            lines.append("Budgets: none (--max-turns, --max-tokens, --max-cost or the config keys set them).")
        if self.earlier.requests:
            lines.append(f"Before this run (the resumed session): {_requests(self.earlier.requests)}, "
                         f"{tokens_text(self.earlier.tokens)} tokens"
                         + (f", {money(self.earlier.cost)}" if self.earlier.priced else "")
                         + " (not counted by the budgets).")
        return "\n".join(lines)


def _hint(flag: str) -> str:
    return (f"Budgets count from the start of DashFloat: quit and run dashfloat --continue {flag} N (or set "
            f"the config key) to go on with this session.")


def _requests(n: int) -> str:
    return f"{n:,} request{'s' if n != 1 else ''}"


def _totals_lines(t: Totals, priced: bool) -> list[str]:
    cached = f" ({t.cached:,} of them cached)" if t.cached else ""
    lines = [f"  input  {t.prompt:,} tokens{cached}",
             f"  output {t.completion:,} tokens",
             f"  total  {t.tokens:,} tokens"]
    if priced and t.priced:
        unpriced = t.requests - t.priced
        lines.append(f"  cost   {money(t.cost)}" + (f" ({unpriced:,} requests without a price)" if unpriced else ""))
    return lines


def tokens_text(n: float) -> str:
    """12,345 -> 12.3k; 100,000 -> 100k; 1,234,567 -> 1.23M; below 10,000 as it is."""
    n = int(n)
    if n < 10_000:
        return f"{n:,}"
    if n < 999_950:  # (from there it would round to "1000k")
        return f"{n / 1000:.1f}".removesuffix(".0") + "k"
    return f"{n / 1_000_000:.2f}".removesuffix(".00") + "M"


def money(x: float) -> str:
    """$0.0042, $0.042, $1.25, $12.50."""
    if x < 0.1:
        return f"${x:.4f}"
    return f"${x:.2f}"
