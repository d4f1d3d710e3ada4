"""Configuration: where every setting comes from, validated strictly.

Precedence, highest first:

  1. command line   (the `cli` dict: --base-url, --model, --colors, --ascii,
                     --connect-timeout, --read-timeout, -C DIR)
  2. environment    (OPENAI_BASE_URL, DASHFLOAT_MODEL, DASHFLOAT_API_KEY_ENV, NO_COLOR)
  3. project file   (<root>/.dashfloat/config.toml, at the root only: no walking up)
  4. user file      ($XDG_CONFIG_HOME/dashfloat/config.toml, default ~/.config/...)
  5. defaults

The API key is only ever read from the environment variable named by `api_key_env`.
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
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dashfloat.textsafe import visible

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
    except ValueError:
        port_ok = False
        parts = None
    if parts is None or not port_ok:
        raise _expected(desc + " with a valid port", value)
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


def _parse_seconds(value: object, from_text: bool) -> float:
    desc = "a number of seconds > 0"
    number: float
    if isinstance(value, bool):
        raise _expected(desc, value)
    if isinstance(value, (int, float)):
        number = float(value)
    elif from_text and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _expected(desc, value) from None
    else:
        raise _expected(desc, value)
    if not math.isfinite(number) or number <= 0:
        raise _expected(desc, value)
    if number > MAX_SECONDS:
        raise _expected(f"{desc} and at most {MAX_SECONDS:g}", value)
    return number


def _int_parser(low: int, high: int) -> Callable[[object, bool], int]:
    desc = f"a whole number from {low} to {high}"

    def parse(value: object, from_text: bool) -> int:
        if isinstance(value, bool):
            raise _expected(desc, value)
        if isinstance(value, int):
            number = value
        elif from_text and isinstance(value, str):
            try:
                number = int(value.strip())
            except ValueError:
                raise _expected(desc, value) from None
        else:
            raise _expected(desc, value)
        if not low <= number <= high:
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
        headers[name] = header_value
    return headers


# ---- the key table ------------------------------------------------------------------


@dataclass(frozen=True)
class KeySpec:
    name: str
    type_description: str
    default_description: str
    env_var: str | None
    flag: str | None
    help: str
    parse: Callable[[object, bool], object] = field(
        default=lambda value, from_text: value, repr=False, compare=False
    )
    default: object = field(default=None, repr=False, compare=False)


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
        "exec_timeout",
        "a number of seconds > 0",
        "30",
        None,
        None,
        "How long a command run by the agent may take before it is stopped.",
        _parse_seconds,
        30.0,
    ),
]

_BY_NAME = {spec.name: spec for spec in KEYS}
_CLI_KEYS = ("base_url", "model", "colors", "ascii", "connect_timeout", "read_timeout")
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


@dataclass(frozen=True)
class Config:
    """The merged settings. Defaults mirror `KEYS` so tests can build one directly."""

    base_url: str = DEFAULT_BASE_URL
    model: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict)
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    colors: str = "auto"
    ascii: str = "auto"
    max_episodes: int = 50
    exec_timeout: float = 30.0
    root: Path = field(default_factory=Path.cwd)
    base_url_is_default: bool = True
    sources: dict[str, str] = field(default_factory=dict)

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
            f"exec_timeout={self.exec_timeout!r}",
            f"root={self.root!r}",
            f"base_url_is_default={self.base_url_is_default!r}",
            f"sources={self.sources!r}",
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
        if path.is_dir():
            raise ConfigError(f"{where}: is a directory; expected a TOML config file")
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


# Keys that decide where the API key is sent: only the user may set them, never a
# repository's own .dashfloat/config.toml.
PROJECT_FORBIDDEN = frozenset({"base_url", "api_key_env", "headers"})


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
            raise ConfigError(f"{where}: key {shown}: {exc}") from None
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
    model, colors, ascii, connect_timeout, read_timeout and root are ignored, so a whole
    argparse namespace may be passed. Raises ConfigError with a complete message.
    """
    root, root_source = _resolve_root(cli, cwd)

    values: dict[str, object] = {spec.name: spec.default for spec in KEYS}
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
    project = root / PROJECT_CONFIG_RELPATH
    if not layers or layers[0][1] != project:
        layers.append(("project file", project))
    for label, path in layers:
        data = _read_toml(path)
        if data is None:
            continue
        for key, value in _check_file(data, path, provisional_key_env).items():
            if label == "project file" and key in PROJECT_FORBIDDEN:
                raise ConfigError(
                    f"{visible(str(path))}: key {_show(key)} is not allowed in a project file: "
                    "a cloned repository could send your API key to a server of its choosing; "
                    f"set it in {visible(str(user_config_path(environ)))}, the environment or "
                    "on the command line instead"
                )
            values[key] = value
            sources[key] = f"{label} {path}"

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
        exec_timeout=float(values["exec_timeout"]),  # type: ignore[arg-type]
        root=root,
        base_url_is_default=sources["base_url"] == "default",
        sources=sources,
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
        ("exec_timeout", _format_seconds(config.exec_timeout)),
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
            "that sets a key wins. Files are TOML with the keys below at the top level. "
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
