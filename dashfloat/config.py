"""Configuration: where every setting comes from, validated strictly.

Precedence, highest first:

  1. command line   (the `cli` dict: --base-url, --model, --colors, --ascii,
                     --connect-timeout, --read-timeout, --permission-mode, -C DIR)
  2. environment    (OPENAI_BASE_URL, DASHFLOAT_MODEL, DASHFLOAT_API_KEY_ENV, NO_COLOR,
                     DASHFLOAT_PERMISSION_MODE)
  3. project file   (<root>/.dashfloat/config.toml, at the root only: no walking up)
  4. user file      ($XDG_CONFIG_HOME/dashfloat/config.toml, default ~/.config/...)
  5. defaults

The API key is only ever read from the environment variable named by `api_key_env`.

Permission rules are not "first place wins": the `[permissions]` tables of the user and the
project file and the command line's --allow/--ask/--deny each form one layer of
`Config.permissions` (lowest first), and `rules.evaluate` takes the strictest decision over all
of them. A project file comes with a cloned repository, so it may only tighten: `allow` rules
and a relaxing `permission_mode` (accept-edits, unrestricted) there are errors, and a project
mode weaker than the user file's does not replace it.
Everything here is pure: functions take the environment mapping and paths as arguments;
only `load_config_from_os()` looks at the real process environment.

`KEYS` is the single table that drives validation, `--show-config` and the man page.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from dashfloat.frozen import Frozen
from dashfloat.textsafe import visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~2 ms of every start)
if TYPE_CHECKING:
    from dashfloat.tools.rules import Rule

DEFAULT_BASE_URL = "http://localhost:11434/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
PROJECT_CONFIG_RELPATH = Path(".dashfloat") / "config.toml"
MAX_SECONDS = 86400.0  # larger timeouts overflow the platform's time_t in socket code


class ConfigError(Exception):
    """A configuration problem; str() is a complete message naming where and what."""


class _Invalid(Exception):
    """Raised by a value parser; the message follows a "<where>: " prefix."""


# ---- value rendering ----------------------------------------------------------------


def _show(value: object) -> str:
    """A short, terminal-safe rendering of a bad value for an error message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 80 else value[:77] + "..."
        return visible(json.dumps(text, ensure_ascii=False))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    name = type(value).__name__
    return {"datetime": "a date-time", "date": "a date", "time": "a time"}.get(
        name, name
    )


def _expected(description: str, value: object) -> _Invalid:
    return _Invalid(f"expected {description}, got {_show(value)}")


# ---- value parsers: parse(value, from_text) -> normalized value ---------------------
# from_text is True for command-line and environment values (always strings there);
# file values must already have the right TOML type (a quoted "5" is not a number).

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _parse_url(value: object, from_text: bool) -> str:
    desc = f'an http:// or https:// base URL such as "{DEFAULT_BASE_URL}"'
    if not isinstance(value, str):
        raise _expected(desc, value)
    url = value.strip()
    if not url or _CONTROL.search(url) or " " in url:
        raise _expected(desc + " (no spaces or control characters)", value)
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port
    except ValueError:  # a port that is no number or past 65535, a broken [IPv6] host
        port_ok = False
    if not port_ok:
        raise _expected(desc + " with a valid host and port", value)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise _expected(desc, value)
    if parts.username is not None or parts.password is not None:
        raise _Invalid(
            "the URL must not contain a user name or password; put the API key in the "
            "environment variable named by api_key_env instead"
        )
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise _expected(desc + " without a query (?...) or fragment (#...)", value)
    url = url.removesuffix("/")
    suffix = "/chat/completions"
    if url.lower().rstrip("/").endswith(suffix):
        base = url.rstrip("/")[: -len(suffix)]
        raise _Invalid(
            f'expected the base URL of the API, e.g. "{visible(base)}", not the full '
            f"chat-completions endpoint {_show(value)} (DashFloat appends {suffix} itself)"
        )
    return url


def _parse_model(value: object, from_text: bool) -> str:
    desc = "a non-empty model name"
    if not isinstance(value, str) or not value.strip() or _CONTROL.search(value):
        raise _expected(desc, value)
    return value.strip()


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _parse_env_name(value: object, from_text: bool) -> str:
    desc = "an environment variable name (letters, digits and _, not starting with a digit)"
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value.strip()):
        raise _expected(desc, value)
    return value.strip()


def _number(value: object, from_text: bool, desc: str, kinds: tuple, convert):
    """`value` as a number (an int or float of `kinds`, or, from the command line or the
    environment, text `convert` reads); never a bool. Raises the "expected" error."""
    if isinstance(value, bool):
        raise _expected(desc, value)
    if isinstance(value, kinds):
        return convert(value)
    if from_text and isinstance(value, str):
        try:
            return convert(value.strip())
        except ValueError:
            pass
    raise _expected(desc, value)


def _parse_seconds(value: object, from_text: bool) -> float:
    desc = "a number of seconds > 0"
    number = _number(value, from_text, desc, (int, float), float)
    if not math.isfinite(number) or number <= 0:
        raise _expected(desc, value)
    if number > MAX_SECONDS:
        raise _expected(f"{desc} and at most {MAX_SECONDS:g}", value)
    return number


def _int_parser(low: int, high: int) -> Callable[[object, bool], int]:
    desc = f"a whole number from {low} to {high}"

    def parse(value: object, from_text: bool) -> int:
        number = _number(value, from_text, desc, (int,), int)
        if not low <= number <= high:
            raise _expected(desc, value)
        return number

    return parse


def _fraction_parser(low: float, high: float) -> Callable[[object, bool], float]:
    desc = f"a number from {low:g} to {high:g}"

    def parse(value: object, from_text: bool) -> float:
        number = _number(value, from_text, desc, (int, float), float)
        if not math.isfinite(number) or not low <= number <= high:
            raise _expected(desc, value)
        return number

    return parse


def _choice_parser(
    choices: tuple[str, ...], aliases: Mapping[object, str]
) -> Callable[[object, bool], str]:
    desc = "one of " + ", ".join(f'"{c}"' for c in choices)

    def parse(value: object, from_text: bool) -> str:
        # bool first: True == 1 would otherwise match an int alias
        for alias, target in aliases.items():
            if type(alias) is type(value) and alias == value:
                return target
        if isinstance(value, str) and value.strip().lower() in choices:
            return value.strip().lower()
        raise _expected(desc, value)

    return parse


def _parse_amount(value: object, from_text: bool) -> float:
    desc = "an amount > 0 (in the currency of the price table, e.g. 2.50)"
    number = _number(value, from_text, desc, (int, float), lambda v: float(v.lstrip("$") if isinstance(v, str) else v))
    if not math.isfinite(number) or number <= 0:
        raise _expected(desc, value)
    return number


_PRICE_KEYS = ("input", "output", "cached_input")


def _parse_prices(value: object, from_text: bool) -> dict:
    """A [prices] table: model name (or glob pattern) -> { input, output[, cached_input] },
    prices per million tokens."""
    from dashfloat.metering import Price

    example = '[prices] "gpt-4o-mini" = { input = 0.15, output = 0.60, cached_input = 0.075 }'
    if not isinstance(value, dict):
        raise _expected(f"a table of model names to prices per million tokens, e.g. {example}", value)
    out: dict = {}
    for model, entry in value.items():
        shown = _show(model)
        if not model.strip() or _CONTROL.search(model):
            raise _Invalid(f"the model name {shown} is empty or has control characters")
        if not isinstance(entry, dict):
            raise _Invalid(f"{shown}: expected a table {{ input = ..., output = ... }} of prices per "
                           f"million tokens, got {_show(entry)}")
        for key in entry:
            if key not in _PRICE_KEYS:
                raise _Invalid(f"{shown}: unknown key {_show(key)}; allowed keys are: "
                               + ", ".join(_PRICE_KEYS))
        numbers: dict[str, float] = {}
        for key in _PRICE_KEYS:
            if key not in entry:
                if key != "cached_input":
                    raise _Invalid(f"{shown}: {key} is missing (the price per million {key} tokens)")
                continue
            raw = entry[key]
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw < 0:
                raise _Invalid(f"{shown}: {key}: expected a number >= 0 (per million tokens), "
                               f"got {_show(raw)}")
            numbers[key] = float(raw)
        out[model] = Price(numbers["input"], numbers["output"], numbers.get("cached_input"))
    return out


def _parse_bool(value: object, from_text: bool) -> bool:
    if isinstance(value, bool):
        return value
    if from_text and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _expected("true or false", value)


# RFC 9110 token characters
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _parse_headers(value: object, from_text: bool) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _expected(
            'a table of header names to string values, e.g. { "X-Title" = "me" }', value
        )
    headers: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name, header_value in value.items():
        shown = _show(name)
        if not _HEADER_NAME.fullmatch(name):
            raise _Invalid(
                f"header name {shown} is not valid: expected letters, digits and "
                "!#$%&'*+-.^_`|~ only"
            )
        if name.lower() in seen:
            raise _Invalid(
                f"header {shown} is given twice (as {_show(seen[name.lower()])})"
            )
        seen[name.lower()] = name
        if not isinstance(header_value, str):
            raise _Invalid(
                f"header {shown}: expected a string value, got {_show(header_value)}"
            )
        if any(c in header_value for c in "\r\n\x00"):
            raise _Invalid(
                f"header {shown}: the value must not contain CR, LF or NUL characters"
            )
        if header_value != header_value.strip(" \t"):
            # HTTP trims it, and requests refuses it on every request (quoting the value)
            raise _Invalid(f"header {shown}: the value must not start or end with spaces or tabs")
        if any(ord(c) > 0xFF for c in header_value):
            raise _Invalid(
                f"header {shown}: the value has characters HTTP headers cannot carry "
                "(only Latin-1: encode it, e.g. percent-encoding)"
            )
        headers[name] = header_value
    return headers


# ---- permissions ----------------------------------------------------------------------

# The permission modes: the same tuple as `rules.MODES` (a test keeps them equal); spelled out
# here so that loading a configuration without rules never imports the rules engine.
PERMISSION_MODES: tuple[str, ...] = ("ask", "accept-edits", "read-only", "unrestricted")
# How strict each mode is (higher: stricter). A project file may not relax the mode.
MODE_STRICTNESS: dict[str, int] = {
    "unrestricted": 0, "accept-edits": 1, "ask": 2, "read-only": 3,
}
# Modes a project file may not set: they let calls run without asking.
PROJECT_FORBIDDEN_MODES = frozenset({"accept-edits", "unrestricted"})
# The lists of a [permissions] table, and the keys of an inline-table entry.
PERMISSION_LISTS: tuple[str, ...] = ("allow", "ask", "deny")
_ENTRY_KEYS: tuple[str, ...] = ("rule", "match", "not_match")
_ENTRY_EXAMPLE = (
    'a rule string such as "execute_command(git status)" or an inline table '
    '{ rule = "...", match = [...], not_match = [...] }'
)


def _rule_problem(text: object, exc: Exception) -> str:
    message = str(exc)
    if not message.startswith("rule "):
        message = f"rule {_show(text)}: {message}"
    return visible(message)


def _examples(value: object, list_name: str, index: int, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Invalid(
            f"{list_name} entry {index}: {key} must be an array of strings (commands or "
            f"paths the rule must or must not match), got {_show(value)}"
        )
    return tuple(value)


def _in_layer(rule, layer: str):
    """The rule (a tools.rules.Rule, a dataclass) labelled with its layer."""
    import dataclasses  # (tools.rules, which made the rule, has imported it already)

    return dataclasses.replace(rule, layer=layer)


def parse_rule_list(
    value: object, decision: str, where: str, layer: str = ""
) -> list[Rule]:
    """One `allow`/`ask`/`deny` list (from a file or the command line) as `Rule`s.

    Entries are rule strings or inline tables ``{ rule, match, not_match }``; examples are
    checked here. `where` names the list in messages ("deny", "--deny"). Raises _Invalid.
    """
    from dashfloat.tools import rules

    if not isinstance(value, list):
        raise _Invalid(f"{where}: expected an array of rules, each {_ENTRY_EXAMPLE}; got "
                       f"{_show(value)}")
    out: list[Rule] = []
    for index, entry in enumerate(value, 1):
        match: tuple[str, ...] = ()
        not_match: tuple[str, ...] = ()
        if isinstance(entry, dict):
            for key in entry:
                if key not in _ENTRY_KEYS:
                    raise _Invalid(
                        f"{where} entry {index}: unknown key {_show(key)} in the inline "
                        f"table; allowed keys are: {', '.join(_ENTRY_KEYS)}"
                    )
            text = entry.get("rule")
            if not isinstance(text, str):
                raise _Invalid(
                    f"{where} entry {index}: the inline table needs a rule string "
                    f'(rule = "execute_command(git status)"), got '
                    f"{'nothing' if text is None else _show(text)}"
                )
            if "match" in entry:
                match = _examples(entry["match"], where, index, "match")
            if "not_match" in entry:
                not_match = _examples(entry["not_match"], where, index, "not_match")
        elif isinstance(entry, str):
            text = entry
        else:
            raise _Invalid(f"{where} entry {index}: expected {_ENTRY_EXAMPLE}, got "
                           f"{_show(entry)}")
        try:
            rule = rules.parse_rule(text, decision, "", match=match, not_match=not_match)
        except rules.RuleError as exc:
            raise _Invalid(f"{where}: {_rule_problem(text, exc)}") from None
        failures = rules.check_examples(rule)
        if failures:
            raise _Invalid(f"{where}: " + visible("; ".join(failures)))
        out.append(_in_layer(rule, layer) if layer else rule)
    return out


def _parse_permissions(value: object, from_text: bool) -> list[Rule]:
    """A [permissions] table: its rules in the order of the table (layer not yet set)."""
    if not isinstance(value, dict):
        raise _expected(
            "a table with allow, ask and deny arrays of rules "
            '(e.g. [permissions] deny = ["execute_command(rm *)"])',
            value,
        )
    out: list[Rule] = []
    for key, items in value.items():
        if key not in PERMISSION_LISTS:
            import difflib

            if key in ("permission_mode", "mode"):
                hint = (
                    " (permission_mode is a top-level key: put it above the [permissions] "
                    "header, or TOML reads it as part of the table)"
                )
            else:
                close = difflib.get_close_matches(key, PERMISSION_LISTS, n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise _Invalid(
                f"unknown key {_show(key)}{hint}; allowed keys are: "
                + ", ".join(PERMISSION_LISTS)
            )
        out.extend(parse_rule_list(items, key, key))
    return out


# ---- hooks ----------------------------------------------------------------------------

# The lists of a [hooks] table (the events); hook_timeout is a top-level key.
HOOK_EVENTS: tuple[str, ...] = ("pre_tool_use", "post_tool_use")


def _parse_hooks(value: object, from_text: bool) -> dict[str, tuple[str, ...]]:
    """A [hooks] table: {event: (command, ...)} for both events (missing ones empty)."""
    if not isinstance(value, dict):
        raise _expected(
            "a table with pre_tool_use and post_tool_use arrays of shell commands "
            '(e.g. [hooks] pre_tool_use = ["~/bin/check-call"])',
            value,
        )
    out: dict[str, tuple[str, ...]] = {event: () for event in HOOK_EVENTS}
    for key, items in value.items():
        if key not in HOOK_EVENTS:
            import difflib

            if key in ("hook_timeout", "timeout"):
                hint = (
                    " (hook_timeout is a top-level key: put it above the [hooks] header, or "
                    "TOML reads it as part of the table)"
                )
            else:
                close = difflib.get_close_matches(key, HOOK_EVENTS, n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise _Invalid(
                f"unknown key {_show(key)}{hint}; allowed keys are: " + ", ".join(HOOK_EVENTS)
            )
        if not isinstance(items, list):
            raise _Invalid(
                f"{key}: expected an array of shell commands, e.g. "
                f'{key} = ["~/bin/hook"], got {_show(items)}'
            )
        commands: list[str] = []
        for index, command in enumerate(items, 1):
            if not isinstance(command, str):
                raise _Invalid(
                    f"{key} entry {index}: expected a shell command string, got "
                    f"{_show(command)}"
                )
            if not command.strip():
                raise _Invalid(f"{key} entry {index}: the command is empty")
            if "\x00" in command:
                raise _Invalid(
                    f"{key} entry {index}: the command {_show(command)} contains a NUL "
                    "character"
                )
            commands.append(command)
        out[key] = tuple(commands)
    return out


# ---- the key table ------------------------------------------------------------------


def _as_given(value, from_text):
    return value


class KeySpec(Frozen):
    """One configuration key: its name, what it takes and its default (as help shows
    them), its environment variable and flag, its help text, the parser that checks and
    normalizes a value (parse(value, from_text)) and the default value itself."""

    __slots__ = ("name", "type_description", "default_description", "env_var", "flag", "help", "parse",
                 "default")
    _repr_skip = ("parse", "default")

    def __init__(self, name: str, type_description: str, default_description: str, env_var: str | None,
                 flag: str | None, help: str, parse: Callable[[object, bool], object] = _as_given,
                 default: object = None):
        self._set(name=name, type_description=type_description, default_description=default_description,
                  env_var=env_var, flag=flag, help=help, parse=parse, default=default)


KEYS: list[KeySpec] = [
    KeySpec(
        "base_url",
        "an http:// or https:// URL (the API base, without /chat/completions)",
        DEFAULT_BASE_URL,
        "OPENAI_BASE_URL",
        "--base-url",
        "Base URL of the OpenAI-compatible API; DashFloat appends /chat/completions "
        "and /models to it.",
        _parse_url,
        DEFAULT_BASE_URL,
    ),
    KeySpec(
        "model",
        "a model name",
        "not set",
        "DASHFLOAT_MODEL",
        "--model",
        "Model to request.",
        _parse_model,
        None,
    ),
    KeySpec(
        "api_key_env",
        "an environment variable name",
        DEFAULT_API_KEY_ENV,
        "DASHFLOAT_API_KEY_ENV",
        None,
        "Name of the environment variable that holds the API key. The key itself is "
        "only ever read from the environment, never from a file or the command line.",
        _parse_env_name,
        DEFAULT_API_KEY_ENV,
    ),
    KeySpec(
        "headers",
        "a table of header names to string values",
        "none",
        None,
        None,
        "Extra HTTP headers sent with every request, e.g. "
        'headers = { "X-Title" = "DashFloat" }.',
        _parse_headers,
        None,
    ),
    KeySpec(
        "connect_timeout",
        "a number of seconds > 0",
        "10",
        None,
        "--connect-timeout",
        "How long to wait for the connection to the API to be established.",
        _parse_seconds,
        10.0,
    ),
    KeySpec(
        "read_timeout",
        "a number of seconds > 0",
        "120",
        None,
        "--read-timeout",
        "How long a response may stay silent (no bytes received) before it is abandoned.",
        _parse_seconds,
        120.0,
    ),
    KeySpec(
        "colors",
        'one of "auto", "1", "16", "256"',
        "auto",
        "NO_COLOR",
        "--colors",
        "Number of colors to use; auto detects the terminal. A non-empty NO_COLOR "
        "environment variable selects 1 unless --colors is given.",
        _choice_parser(("auto", "1", "16", "256"), {1: "1", 16: "16", 256: "256"}),
        "auto",
    ),
    KeySpec(
        "ascii",
        'one of "auto", "on", "off"',
        "auto",
        None,
        "--ascii",
        "Draw with plain ASCII instead of Unicode box and symbol characters; auto "
        "detects what the terminal can show.",
        _choice_parser(("auto", "on", "off"), {True: "on", False: "off"}),
        "auto",
    ),
    KeySpec(
        "max_episodes",
        "a whole number from 1 to 1000",
        "50",
        None,
        None,
        "Most model requests the agent makes for one prompt before it stops.",
        _int_parser(1, 1000),
        50,
    ),
    KeySpec(
        "context_window",
        "a whole number of tokens from 1024 to 10000000",
        "what the endpoint states, else 32768",
        None,
        None,
        "The model's context window in tokens. When it is not set, DashFloat asks the endpoint's "
        "model list (vLLM, llama.cpp, LM Studio, OpenRouter, Groq, Mistral state it) and uses "
        "32768 when it says nothing; set it for Ollama (its num_ctx) and other servers that do "
        "not say. A refused request that names the real window lowers it for the session. See "
        "CONTEXT.",
        _int_parser(1024, 10_000_000),
        None,
    ),
    KeySpec(
        "compact_threshold",
        "a number from 0.1 to 0.95",
        "0.8",
        None,
        None,
        "Compact the conversation when the next request would take more than this share of "
        "context_window (see CONTEXT).",
        _fraction_parser(0.1, 0.95),
        0.8,
    ),
    KeySpec(
        "max_turns",
        "a whole number from 1 to 1000000",
        "none",
        None,
        "--max-turns",
        "Budget: most requests to the model (agentic turns: one prompt may take several) from the "
        "start of DashFloat (see USAGE AND BUDGETS). A project file may lower it, never raise it.",
        _int_parser(1, 1_000_000),
        None,
    ),
    KeySpec(
        "max_tokens",
        "a whole number from 1 to 1000000000000",
        "none",
        None,
        "--max-tokens",
        "Budget: most tokens, input and output of every request (cached input included: each "
        "request sends the conversation again), from the start of DashFloat. A project file may "
        "lower it, never raise it.",
        _int_parser(1, 10**12),
        None,
    ),
    KeySpec(
        "max_cost",
        "an amount > 0",
        "none",
        None,
        "--max-cost",
        "Budget: most cost, by the prices table, from the start of DashFloat; a model without a "
        "price cannot be used while it is set. A project file may lower it, never raise it.",
        _parse_amount,
        None,
    ),
    KeySpec(
        "prices",
        "a table of model names (or glob patterns) to { input, output, cached_input }",
        "none",
        None,
        None,
        "What the models cost, per million tokens, for /usage, the status bar and max_cost, e.g. "
        '[prices] "gpt-4o-mini" = { input = 0.15, output = 0.60, cached_input = 0.075 } '
        '"deepseek-*" = { input = 0.27, output = 1.10 }: an exact name first, then the first '
        "pattern that matches; cached input costs the input price unless given. Only the user "
        "file may set it (a project could make requests look cheaper than they are).",
        _parse_prices,
        None,
    ),
    KeySpec(
        "exec_timeout",
        "a number of seconds > 0",
        "30",
        None,
        None,
        "How long a command run by the agent may take before it is stopped.",
        _parse_seconds,
        30.0,
    ),
    KeySpec(
        "exec_max_processes",
        "a whole number from 16 to 100000",
        "1024",
        None,
        None,
        "Most processes and threads a command run by the agent may have at once, so a fork "
        "bomb cannot take the machine down: the command starts with a per-user process limit "
        "of what the user runs now plus this many (the kernel then refuses further forks; it "
        "exempts root), and a command found above it (checked every 0.1 s; up to 1 s for a "
        "very large tree) is stopped with everything it started.",
        _int_parser(16, 100000),
        1024,
    ),
    KeySpec(
        "permission_mode",
        'one of "ask", "accept-edits", "read-only", "unrestricted"',
        "ask",
        "DASHFLOAT_PERMISSION_MODE",
        "--permission-mode",
        "How calls that no rule decides are handled: ask (writes, edits and commands "
        "ask first), accept-edits (writes and edits inside the working directory are "
        "allowed, commands ask), read-only (every write, edit and command is denied) or "
        "unrestricted (everything that no deny or ask rule matches is allowed). Deny "
        "rules hold in every mode (see PERMISSIONS). A project file may only set ask or "
        "read-only, and cannot relax the mode set in the user file.",
        _choice_parser(PERMISSION_MODES, {}),
        "ask",
    ),
    KeySpec(
        "permissions",
        "a table with allow, ask and deny arrays of rules",
        "none (the built-in defaults)",
        None,
        None,
        "Permission rules, e.g. [permissions] deny = [\"execute_command(rm *)\"]; each "
        "entry is a rule string or an inline table { rule = \"...\", match = [...], "
        "not_match = [...] } whose examples are checked when the file loads. A project "
        "file may not have allow rules. On the command line: --allow, --ask and --deny "
        "RULE (see PERMISSIONS).",
        _parse_permissions,
        None,
    ),
    KeySpec(
        "hooks",
        "a table with pre_tool_use and post_tool_use arrays of shell commands",
        "none",
        None,
        None,
        "Commands run with /bin/sh -c around every tool call, without asking, e.g. "
        "[hooks] pre_tool_use = [\"~/bin/check-call\"]; each gets the call as JSON on its "
        "standard input. A pre_tool_use hook may deny a call or make it ask; a "
        "post_tool_use hook may add a note for the model (see HOOKS). Only the user file "
        "may set it: a project file with [hooks] is an error.",
        _parse_hooks,
        None,
    ),
    KeySpec(
        "hook_timeout",
        "a number of seconds > 0",
        "10",
        None,
        None,
        "How long one hook may run before it is killed with every process it started (a pre_tool_use "
        "hook that times out makes the call ask). Only the user file may set it.",
        _parse_seconds,
        10.0,
    ),
    KeySpec(
        "journal",
        "true or false",
        "true",
        None,
        "--no-journal",
        "Keep a journal of each session under $XDG_STATE_HOME/dashfloat/sessions/ (see "
        "SESSIONS): what --continue, --resume and /undo work from, and the audit trail of "
        "every permission decision. With false (or --no-journal for one run) nothing is "
        "recorded, /undo is off, and the decisions go to the log. Only the user file, or "
        "the command line, may turn it off.",
        _parse_bool,
        True,
    ),
    KeySpec(
        "undo_store_mb",
        "a whole number from 0 to 65536",
        "256",
        None,
        None,
        "Most space, in MiB, that the previous contents of files kept for /undo may take in "
        "one session's store; past it the least recently used go first (an /undo that "
        "needs one says so), and 0 keeps none.",
        _int_parser(0, 65536),
        256,
    ),
]

_BY_NAME = {spec.name: spec for spec in KEYS}
_CLI_KEYS = (
    "base_url", "model", "colors", "ascii", "connect_timeout", "read_timeout", "permission_mode",
    "journal", "max_turns", "max_tokens", "max_cost",
)
# Budgets: a project file may lower them (a stricter value wins), never raise them.
BUDGET_KEYS = ("max_turns", "max_tokens", "max_cost")
# keys that look like an attempt to store the secret in a file
_SECRET_KEYS = {"api_key", "apikey", "openai_api_key", "key", "token", "api_token"}


# ---- the config -----------------------------------------------------------------------

_SENSITIVE_HEADER = re.compile(
    r"auth|key|token|secret|cookie|session|passw|signature|credential", re.IGNORECASE
)


def _masked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        name: ("<hidden>" if _SENSITIVE_HEADER.search(name) else value)
        for name, value in headers.items()
    }


class Config(Frozen):
    """The merged settings. Defaults mirror `KEYS` so tests can build one directly."""

    __slots__ = ("base_url", "model", "api_key_env", "api_key", "headers", "connect_timeout",
                 "read_timeout", "colors", "ascii", "max_episodes", "context_window", "compact_threshold",
                 "exec_timeout", "exec_max_processes", "root", "base_url_is_default", "sources",
                 "permission_mode", "permissions", "pre_tool_use", "post_tool_use", "hook_timeout",
                 "journal", "undo_store_mb", "max_turns", "max_tokens", "max_cost", "prices")

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        model: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        colors: str = "auto",
        ascii: str = "auto",
        max_episodes: int = 50,
        context_window: int | None = None,
        compact_threshold: float = 0.8,
        exec_timeout: float = 30.0,
        exec_max_processes: int = 1024,
        root: Path | None = None,  # None: the current directory
        base_url_is_default: bool = True,
        sources: dict[str, str] | None = None,
        permission_mode: str = "ask",
        # The explicit permission layers, lowest first: ("user config <path>", rules),
        # ("project config <path>", rules), ("command line", rules); each Rule's layer is its
        # label. The built-in defaults are not included (rules.evaluate adds them).
        permissions: list[tuple[str, list[Rule]]] | None = None,
        # The user file's [hooks] (a project file may not set them) and their timeout.
        pre_tool_use: tuple[str, ...] = (),
        post_tool_use: tuple[str, ...] = (),
        hook_timeout: float = 10.0,
        journal: bool = True,
        undo_store_mb: int = 256,
        max_turns: int | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        prices: dict | None = None,  # model or pattern -> metering.Price
    ):
        self._set(
            base_url=base_url, model=model, api_key_env=api_key_env, api_key=api_key,
            headers={} if headers is None else headers, connect_timeout=connect_timeout,
            read_timeout=read_timeout, colors=colors, ascii=ascii, max_episodes=max_episodes,
            context_window=context_window, compact_threshold=compact_threshold, exec_timeout=exec_timeout,
            exec_max_processes=exec_max_processes, root=Path.cwd() if root is None else root,
            base_url_is_default=base_url_is_default, sources={} if sources is None else sources,
            permission_mode=permission_mode, permissions=[] if permissions is None else permissions,
            pre_tool_use=pre_tool_use, post_tool_use=post_tool_use, hook_timeout=hook_timeout,
            journal=journal, undo_store_mb=undo_store_mb, max_turns=max_turns, max_tokens=max_tokens,
            max_cost=max_cost, prices={} if prices is None else prices,
        )

    def __repr__(self) -> str:
        # Hand-written so that neither the key nor secret-looking header values appear.
        parts = [
            f"base_url={self.base_url!r}",
            f"model={self.model!r}",
            f"api_key_env={self.api_key_env!r}",
            f"api_key={'<set>' if self.api_key else None}",
            f"headers={_masked_headers(self.headers)!r}",
            f"connect_timeout={self.connect_timeout!r}",
            f"read_timeout={self.read_timeout!r}",
            f"colors={self.colors!r}",
            f"ascii={self.ascii!r}",
            f"max_episodes={self.max_episodes!r}",
            f"context_window={self.context_window!r}",
            f"compact_threshold={self.compact_threshold!r}",
            f"exec_timeout={self.exec_timeout!r}",
            f"exec_max_processes={self.exec_max_processes!r}",
            f"root={self.root!r}",
            f"base_url_is_default={self.base_url_is_default!r}",
            f"sources={self.sources!r}",
            f"permission_mode={self.permission_mode!r}",
            "permissions=" + repr([
                (label, [f"{r.decision} {r.text}" for r in rules])
                for label, rules in self.permissions
            ]),
            f"pre_tool_use={self.pre_tool_use!r}",
            f"post_tool_use={self.post_tool_use!r}",
            f"hook_timeout={self.hook_timeout!r}",
            f"journal={self.journal!r}",
            f"undo_store_mb={self.undo_store_mb!r}",
            f"max_turns={self.max_turns!r}",
            f"max_tokens={self.max_tokens!r}",
            f"max_cost={self.max_cost!r}",
            f"prices={sorted(self.prices)!r}",
        ]
        return f"Config({', '.join(parts)})"

    __str__ = __repr__


# ---- paths ----------------------------------------------------------------------------


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME", "")
    if home:
        return Path(home)
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError) as exc:
        raise ConfigError("cannot find your home directory: HOME is not set") from exc


def _xdg_dir(environ: Mapping[str, str], var: str, fallback: tuple[str, ...]) -> Path:
    value = environ.get(var, "")
    # The XDG spec says relative paths are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return _home(environ).joinpath(*fallback)


def user_config_path(environ: Mapping[str, str]) -> Path:
    """$XDG_CONFIG_HOME/dashfloat/config.toml, default ~/.config/dashfloat/config.toml."""
    return (
        _xdg_dir(environ, "XDG_CONFIG_HOME", (".config",)) / "dashfloat" / "config.toml"
    )


def state_dir(environ: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME/dashfloat, default ~/.local/state/dashfloat."""
    return _xdg_dir(environ, "XDG_STATE_HOME", (".local", "state")) / "dashfloat"


def history_path(environ: Mapping[str, str]) -> Path:
    """Where the prompt history lives: <state_dir>/history."""
    return state_dir(environ) / "history"


# ---- reading files --------------------------------------------------------------------


def _read_toml(path: Path) -> dict | None:
    """The parsed file, or None when there is no file at `path`."""
    where = visible(str(path))
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError:
        raise ConfigError(f"{where}: cannot read the file: permission denied") from None
    except IsADirectoryError:
        raise ConfigError(
            f"{where}: is a directory; expected a TOML config file"
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{where}: cannot read the file: {reason}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{where}: the file is not valid UTF-8 text (bad byte 0x{data[exc.start]:02x} "
            f"on line {line}); TOML files must be saved as UTF-8"
        ) from None
    import tomllib  # only once a file exists to parse: start-up stays light

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line L, column C)"
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None


# Keys only the user may set, never a repository's own .dashfloat/config.toml, with why: those
# that decide where the API key is sent, and the hooks (commands run without a confirmation).
_PROJECT_FORBIDDEN_WHY: dict[str, str] = {
    "base_url": "a cloned repository could send your API key to a server of its choosing",
    "api_key_env": "a cloned repository could send your API key to a server of its choosing",
    "headers": "a cloned repository could send your API key to a server of its choosing",
    "hooks": "hooks run commands without asking, so a cloned repository could run any "
             "command on your machine",
    "hook_timeout": "it belongs with the hooks, which only your user file may set",
    "journal": "the session journal is the record of what ran and what changed, so a cloned "
               "repository could hide it",
    "prices": "a cloned repository could make requests look cheaper than they are and so defeat "
              "max_cost",
}
PROJECT_FORBIDDEN = frozenset(_PROJECT_FORBIDDEN_WHY)


def _check_file(data: dict, path: Path, api_key_env: str) -> dict[str, object]:
    where = visible(str(path))
    values: dict[str, object] = {}
    for key, raw in data.items():
        shown = _show(key)
        if key.lower().replace("-", "_") in _SECRET_KEYS:
            var = (
                data.get("api_key_env")
                if isinstance(data.get("api_key_env"), str)
                else None
            )
            var = var or api_key_env
            raise ConfigError(
                f"{where}: key {shown}: the API key must not be stored in a config file; "
                f"remove it and put the key in the environment variable {visible(var)} "
                "instead (set api_key_env to use a different variable)"
            )
        if key == "root":
            raise ConfigError(
                f"{where}: key {shown}: the working directory cannot be set in a config "
                "file; use -C DIR on the command line"
            )
        spec = _BY_NAME.get(key)
        if spec is None:
            import difflib

            close = difflib.get_close_matches(key, list(_BY_NAME), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            allowed = ", ".join(_BY_NAME)
            raise ConfigError(
                f"{where}: unknown key {shown}{hint}; allowed keys are: {allowed}"
            )
        try:
            values[key] = spec.parse(raw, False)
        except _Invalid as exc:
            what = f"[{key}]" if key in ("permissions", "hooks", "prices") else f"key {shown}:"
            raise ConfigError(f"{where}: {what} {exc}") from None
    return values


# ---- loading --------------------------------------------------------------------------


def _resolve_root(cli: Mapping[str, object], cwd: Path) -> tuple[Path, str]:
    given = cli.get("root")
    if given is None:
        base = Path(cwd)
        if not base.is_dir():
            raise ConfigError(
                f"the current directory {visible(str(base))} does not exist any more"
            )
        return base.resolve(), "current directory"
    if not isinstance(given, (str, os.PathLike)) or str(given) == "":
        raise ConfigError(f"command line -C: expected a directory, got {_show(given)}")
    shown = visible(str(given))
    path = Path(cwd) / Path(given)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as exc:
        raise ConfigError(f"command line -C {shown}: {exc.strerror or exc}") from None
    if not exists:
        raise ConfigError(f"command line -C {shown}: no such directory")
    if not is_dir:
        raise ConfigError(f"command line -C {shown}: not a directory")
    return path.resolve(), "command line -C"


def load_config(
    cli: Mapping[str, object], environ: Mapping[str, str], cwd: Path
) -> Config:
    """Merge command line > environment > project file > user file > defaults.

    `cli` maps key names to values, None meaning "not given"; keys other than base_url,
    model, colors, ascii, connect_timeout, read_timeout, permission_mode, root and the rule
    lists allow, ask and deny (lists of rule strings: the "command line" permission layer)
    are ignored, so a whole argparse namespace may be passed. Raises ConfigError with a
    complete message.
    """
    root, root_source = _resolve_root(cli, cwd)

    values: dict[str, object] = {spec.name: spec.default for spec in KEYS}
    values["pre_tool_use"] = values["post_tool_use"] = ()
    sources: dict[str, str] = {spec.name: "default" for spec in KEYS}

    def env_value(var: str) -> str | None:
        value = environ.get(var)
        return value if value else None  # empty = not set

    # api_key_env first, so an `api_key` mistake in a file can name the right variable
    provisional_key_env = env_value("DASHFLOAT_API_KEY_ENV") or DEFAULT_API_KEY_ENV

    # layers 4 and 3: user file, then project file (later wins)
    layers: list[tuple[str, Path]] = []
    try:
        layers.append(("user file", user_config_path(environ)))
    except ConfigError:
        pass  # no home directory: there is simply no user file
    layers.append(("project file", root / PROJECT_CONFIG_RELPATH))  # never the user file: .dashfloat/ is not dashfloat/
    permissions: list[tuple[str, list[Rule]]] = []
    for label, path in layers:
        layer = f"{label.split()[0]} config {visible(str(path))}"
        file_rules: list[Rule] = []
        data = _read_toml(path)
        if label == "project file" and data:
            _check_project_forbidden(data, path, environ)
            _check_project_permissions(data, path, environ)
        for key, value in _check_file(data or {}, path, provisional_key_env).items():
            if label == "project file" and key in PROJECT_FORBIDDEN:
                _forbidden_in_project(key, path, environ)
            if key == "hooks":
                hooks = value  # type: ignore[assignment]
                values["pre_tool_use"] = hooks["pre_tool_use"]  # type: ignore[index]
                values["post_tool_use"] = hooks["post_tool_use"]  # type: ignore[index]
            if key == "permissions":
                file_rules = [_in_layer(rule, layer) for rule in value]  # type: ignore[attr-defined]
                if file_rules:
                    sources[key] = "; ".join(filter(None, (
                        sources[key] if sources[key] != "default" else "", f"{label} {path}"
                    )))
                continue
            if key in BUDGET_KEYS and label == "project file" and values[key] is not None \
                    and value > values[key]:  # type: ignore[operator]
                continue  # a project file may lower a budget of the user file, never raise it
            if key == "permission_mode" and label == "project file":
                if value in PROJECT_FORBIDDEN_MODES:
                    raise ConfigError(
                        f"{visible(str(path))}: key \"permission_mode\" = {_show(value)} is not "
                        "allowed in a project file: a cloned repository could let the agent "
                        "change files or run commands without asking; set it in "
                        f"{_user_file_hint(environ)}, with DASHFLOAT_PERMISSION_MODE or with "
                        "--permission-mode instead (a project file may only set ask or "
                        "read-only)"
                    )
                if MODE_STRICTNESS[value] < MODE_STRICTNESS[values[key]]:  # type: ignore[index]
                    continue  # the user file's stricter mode stands
            values[key] = value
            sources[key] = f"{label} {path}"
        permissions.append((layer, file_rules))

    # layer 2: environment
    for spec in KEYS:
        if spec.env_var is None or spec.name == "colors":
            continue
        raw = env_value(spec.env_var)
        if raw is None:
            continue
        try:
            values[spec.name] = spec.parse(raw, True)
        except _Invalid as exc:
            raise ConfigError(f"environment variable {spec.env_var}: {exc}") from None
        sources[spec.name] = f"environment {spec.env_var}"
    if env_value("NO_COLOR") is not None:
        values["colors"] = "1"
        sources["colors"] = "environment NO_COLOR"

    # layer 1: command line
    for name in _CLI_KEYS:
        raw = cli.get(name)
        if raw is None:
            continue
        spec = _BY_NAME[name]
        try:
            values[name] = spec.parse(raw, isinstance(raw, str))
        except _Invalid as exc:
            raise ConfigError(f"command line {spec.flag}: {exc}") from None
        sources[name] = f"command line {spec.flag}"
    cli_rules: list[Rule] = []
    for decision in PERMISSION_LISTS:
        given = cli.get(decision)
        if given is None:
            continue
        if isinstance(given, (str, tuple)):
            given = [given] if isinstance(given, str) else list(given)
        try:
            cli_rules.extend(parse_rule_list(given, decision, f"--{decision}", "command line"))
        except _Invalid as exc:
            raise ConfigError(f"command line {exc}") from None
    if cli_rules:
        sources["permissions"] = "; ".join(filter(None, (
            sources["permissions"] if sources["permissions"] != "default" else "",
            "command line",
        )))
    permissions.append(("command line", cli_rules))

    api_key_env = str(values["api_key_env"])
    api_key = (environ.get(api_key_env) or "").strip() or None
    if api_key is not None and _CONTROL.search(api_key):
        # never show the value: it is a secret
        raise ConfigError(
            f"environment variable {api_key_env}: the API key contains a line break or "
            "another control character; set it to the bare key"
        )
    sources["api_key"] = f"environment {api_key_env}" if api_key else "not set"
    sources["root"] = root_source

    return Config(
        base_url=str(values["base_url"]),
        model=values["model"],  # type: ignore[arg-type]
        api_key_env=api_key_env,
        api_key=api_key,
        headers=dict(values["headers"] or {}),  # type: ignore[call-overload]
        connect_timeout=float(values["connect_timeout"]),  # type: ignore[arg-type]
        read_timeout=float(values["read_timeout"]),  # type: ignore[arg-type]
        colors=str(values["colors"]),
        ascii=str(values["ascii"]),
        max_episodes=int(values["max_episodes"]),  # type: ignore[call-overload]
        context_window=None if values["context_window"] is None else int(values["context_window"]),  # type: ignore[call-overload]
        compact_threshold=float(values["compact_threshold"]),  # type: ignore[arg-type]
        exec_timeout=float(values["exec_timeout"]),  # type: ignore[arg-type]
        exec_max_processes=int(values["exec_max_processes"]),  # type: ignore[call-overload]
        root=root,
        base_url_is_default=sources["base_url"] == "default",
        sources=sources,
        permission_mode=str(values["permission_mode"]),
        permissions=permissions,
        pre_tool_use=tuple(values["pre_tool_use"]),  # type: ignore[arg-type]
        post_tool_use=tuple(values["post_tool_use"]),  # type: ignore[arg-type]
        hook_timeout=float(values["hook_timeout"]),  # type: ignore[arg-type]
        journal=bool(values["journal"]),
        undo_store_mb=int(values["undo_store_mb"]),  # type: ignore[call-overload]
        max_turns=values["max_turns"],  # type: ignore[arg-type]
        max_tokens=values["max_tokens"],  # type: ignore[arg-type]
        max_cost=values["max_cost"],  # type: ignore[arg-type]
        prices=dict(values["prices"] or {}),  # type: ignore[call-overload]
    )


def _user_file_hint(environ: Mapping[str, str]) -> str:
    try:
        return visible(str(user_config_path(environ)))
    except ConfigError:
        return "your user config file"


# Checked before a project file's values are parsed, so that the message is about the key,
# whatever its value; the other forbidden keys are checked after (their values first).
_PROJECT_FORBIDDEN_EARLY: tuple[str, ...] = ("hooks", "hook_timeout")


def _check_project_forbidden(data: dict, path: Path, environ: Mapping[str, str]) -> None:
    for key in _PROJECT_FORBIDDEN_EARLY:
        if key in data:
            _forbidden_in_project(key, path, environ)


def _forbidden_in_project(key: str, path: Path, environ: Mapping[str, str]) -> None:
    """Raise the error for a PROJECT_FORBIDDEN `key` found in the project file `path`."""
    if key in _PROJECT_FORBIDDEN_EARLY:
        elsewhere = f"set it in {_user_file_hint(environ)} instead"
    else:
        elsewhere = (f"set it in {_user_file_hint(environ)}, the environment or on the "
                     "command line instead")
    raise ConfigError(
        f"{visible(str(path))}: key {_show(key)} is not allowed in a project file: "
        f"{_PROJECT_FORBIDDEN_WHY[key]}; {elsewhere}"
    )


def _check_project_permissions(data: dict, path: Path, environ: Mapping[str, str]) -> None:
    """A project file's [permissions] may not allow anything (checked before the rules are
    parsed: whatever the allow list holds, it has no place there)."""
    table = data.get("permissions")
    allow = table.get("allow") if isinstance(table, dict) else None
    if not allow:
        return
    first = allow[0] if isinstance(allow, list) else allow
    if isinstance(first, dict):
        first = first.get("rule")
    shown = f" (rule {_show(first)})" if isinstance(first, str) else ""
    raise ConfigError(
        f"{visible(str(path))}: [permissions] allow is not allowed in a project file{shown}: "
        "a cloned repository could let commands run or files change without asking; move "
        f"allow rules to {_user_file_hint(environ)} or give them on the command line with "
        "--allow RULE (a project file may add ask and deny rules)"
    )


def load_config_from_os(cli: Mapping[str, object]) -> Config:
    """Convenience wrapper: `load_config` with the real environment and directory."""
    try:
        cwd = Path.cwd()
    except FileNotFoundError:
        raise ConfigError("the current directory does not exist any more") from None
    return load_config(cli, os.environ, cwd)


# ---- describing -----------------------------------------------------------------------


def _format_seconds(value: float) -> str:
    return f"{value:g}"


def _rules_summary(config: Config) -> str:
    counts = {decision: 0 for decision in PERMISSION_LISTS}
    for _label, rules in config.permissions:
        for rule in rules:
            counts[rule.decision] = counts.get(rule.decision, 0) + 1
    if not any(counts.values()):
        return "built-in defaults only (dashfloat policy list shows them)"
    parts = ", ".join(f"{n} {decision}" for decision, n in counts.items() if n)
    return f"{parts} (dashfloat policy list shows them)"


def _hooks_summary(config: Config) -> str:
    parts = [
        f"{event} {json.dumps(list(commands), ensure_ascii=False)}"
        for event, commands in (
            ("pre_tool_use", config.pre_tool_use), ("post_tool_use", config.post_tool_use),
        )
        if commands
    ]
    return "; ".join(parts) if parts else "none"


def _prices_summary(config: Config) -> str:
    if not config.prices:
        return "none"
    parts = []
    for model, price in config.prices.items():
        cached = "" if price.cached_input is None else f", cached_input {price.cached_input:g}"
        parts.append(f"{model} (input {price.input:g}, output {price.output:g}{cached})")
    return "; ".join(parts) + " per million tokens"


def describe(config: Config) -> list[str]:
    """Human lines "key = value   (source)" for `dashfloat --show-config`; no secrets."""
    if config.api_key:
        key_text = f"set, from {config.api_key_env}"
    else:
        key_text = f"not set ({config.api_key_env} is unset or empty)"
    if config.headers:
        headers_text = ", ".join(
            f"{name}: {value}"
            for name, value in _masked_headers(config.headers).items()
        )
    else:
        headers_text = "none"
    rows = [
        ("base_url", config.base_url),
        ("model", config.model if config.model is not None else "not set"),
        ("api_key_env", config.api_key_env),
        ("api_key", key_text),
        ("headers", headers_text),
        ("connect_timeout", _format_seconds(config.connect_timeout)),
        ("read_timeout", _format_seconds(config.read_timeout)),
        ("colors", config.colors),
        ("ascii", config.ascii),
        ("max_episodes", str(config.max_episodes)),
        ("context_window", "from the endpoint, else 32768" if config.context_window is None
         else str(config.context_window)),
        ("compact_threshold", f"{config.compact_threshold:g}"),
        ("exec_timeout", _format_seconds(config.exec_timeout)),
        ("exec_max_processes", str(config.exec_max_processes)),
        ("permission_mode", config.permission_mode),
        ("permissions", _rules_summary(config)),
        ("hooks", _hooks_summary(config)),
        ("hook_timeout", _format_seconds(config.hook_timeout)),
        ("journal", "true" if config.journal else "false"),
        ("undo_store_mb", str(config.undo_store_mb)),
        ("max_turns", "none" if config.max_turns is None else str(config.max_turns)),
        ("max_tokens", "none" if config.max_tokens is None else str(config.max_tokens)),
        ("max_cost", "none" if config.max_cost is None else f"{config.max_cost:g}"),
        ("prices", _prices_summary(config)),
        ("root", str(config.root)),
    ]
    width = max(len(name) for name, _ in rows)
    lines = []
    for name, value in rows:
        line = f"{name.ljust(width)} = {visible(value)}"
        source = config.sources.get(name)
        if source and name != "api_key":
            line += f"   ({visible(source)})"
        lines.append(line)
    return lines


# ---- man page -------------------------------------------------------------------------


def _groff(text: str) -> str:
    """Escape text for groff: backslashes, and control characters at line starts."""
    text = text.replace("\\", "\\e")
    return "\n".join(
        "\\&" + line if line.startswith((".", "'")) else line
        for line in text.split("\n")
    )


def _groff_option(flag: str) -> str:
    return _groff(flag).replace("-", "\\-")


def man_configuration_section() -> str:
    """groff lines (no .SH header) documenting every key of `KEYS`."""
    out = [
        _groff(
            "Settings are read from the command line, then the environment, then the "
            "project file .dashfloat/config.toml in the working directory, then the user "
            "file $XDG_CONFIG_HOME/dashfloat/config.toml (default "
            "~/.config/dashfloat/config.toml), then built-in defaults; the first place "
            "that sets a key wins (permission rules are different: every layer counts, see "
            "PERMISSIONS; and a budget of the project file counts only when it is lower than "
            "the user file's). Files are TOML with the keys below at the top level, except "
            "permissions, hooks and prices, which are [permissions], [hooks] and [prices] tables after them. "
            "The API key is only read from the environment variable named by "
            "api_key_env; it cannot be put in a file or on the command line."
        ),
    ]
    for spec in KEYS:
        out.append(".TP")
        out.append(".B " + _groff(spec.name))
        out.append(_groff(spec.help))
        out.append(".br")
        out.append(
            _groff(
                f"Type: {spec.type_description}. Default: {spec.default_description}."
            )
        )
        extras = []
        if spec.flag:
            extras.append("Option: \\fB" + _groff_option(spec.flag) + "\\fR.")
        if spec.env_var:
            extras.append("Environment: \\fB" + _groff(spec.env_var) + "\\fR.")
        if extras:
            out.append(".br")
            out.append(" ".join(extras))
    return "\n".join(out) + "\n"
