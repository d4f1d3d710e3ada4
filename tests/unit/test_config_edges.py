"""Configuration at its edges: every bound a key's help states is the bound its parser keeps
(at it and one past it), the values a file, the environment and the command line give in
their own shapes (a bool, text), bad values shown short and terminal-safe, the files that
cannot be read (a directory, no permission, a loop of links, bad UTF-8 on a line after an
empty one), a home that cannot be found, -C that is not a directory name, the layering of a
project file under the user file (a budget and a mode the project may not loosen; the keys
after one it may not change still count), and what `dashfloat --show-config` says.
(test_config.py has the main properties; `make mutation` found these cases untested.)"""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path

import pytest

from dashfloat import config as C
from dashfloat.config import KEYS, Config, ConfigError, describe, load_config
from tests.unit.test_config import env_for, project_file, user_file


def load(home: Path, root: Path, cli: dict | None = None, **env: str) -> Config:
    return load_config(cli or {}, env_for(home, **env), root)


def refused(home: Path, root: Path, cli: dict | None = None, **env: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load(home, root, cli, **env)
    return str(exc.value)


# ---- the bounds the help states are the bounds kept -------------------------------------------

RANGED = [spec for spec in KEYS if re.search(r"from [0-9.]+ to [0-9.]+$", spec.type_description)]


def test_every_ranged_key_is_found():
    assert [s.name for s in RANGED] == ["max_episodes", "context_window", "compact_threshold", "max_turns",
                                        "max_tokens", "exec_max_processes", "undo_store_mb"]


@pytest.mark.parametrize("spec", RANGED, ids=lambda s: s.name)
def test_a_keys_stated_range_is_what_its_parser_accepts(spec):
    low, high = (float(x) for x in re.search(r"from ([0-9.]+) to ([0-9.]+)$", spec.type_description).groups())
    whole = spec.type_description.startswith("a whole number")
    step = 1 if whole else 0.01
    kind = int if whole else float
    for ok in (low, high):
        assert spec.parse(kind(ok), False) == ok
    for bad in (low - step, high + step):
        with pytest.raises(C._Invalid, match=re.escape(f"expected {spec.type_description.replace(' of tokens', '')}")):
            spec.parse(kind(bad), False)


def test_a_fraction_is_finite():
    spec = C._BY_NAME["compact_threshold"]
    for bad in (math.nan, math.inf):
        with pytest.raises(C._Invalid, match="expected a number from 0.1 to 0.95"):
            spec.parse(bad, False)


def test_seconds_reach_their_stated_most_and_no_further():
    assert C._parse_seconds(C.MAX_SECONDS, False) == C.MAX_SECONDS
    with pytest.raises(C._Invalid, match="and at most 86400"):
        C._parse_seconds(C.MAX_SECONDS + 0.5, False)


@pytest.mark.parametrize("value", [0, 0.0, -0.5, math.nan, math.inf])
def test_an_amount_is_more_than_nothing(value):
    with pytest.raises(C._Invalid, match="expected an amount > 0"):
        C._parse_amount(value, False)
    assert C._parse_amount(0.01, False) == 0.01


def test_text_that_is_no_number_is_refused_with_what_was_expected(home, root):
    assert refused(home, root, {"read_timeout": "soon"}) == (
        'command line --read-timeout: expected a number of seconds > 0, got "soon"')
    assert load(home, root, {"read_timeout": " 2.5 "}).read_timeout == 2.5


# ---- values in their own shapes -----------------------------------------------------------------


def test_colors_as_toml_numbers(home, root):
    for number, text in ((1, "1"), (16, "16"), (256, "256")):
        user_file(home, f"colors = {number}\n")
        assert load(home, root).colors == text
    user_file(home, "colors = 2\n")
    assert 'expected one of "auto", "1", "16", "256", got 2' in refused(home, root)


def test_journal_from_a_file_and_from_text(home, root):
    user_file(home, "journal = true\n")
    assert load(home, root).journal is True
    user_file(home, "journal = false\n")
    assert load(home, root).journal is False
    user_file(home, "")
    assert load(home, root, {"journal": " FALSE "}).journal is False
    assert load(home, root, {"journal": "True"}).journal is True
    assert refused(home, root, {"journal": "yes"}) == "command line --no-journal: expected true or false, got \"yes\""
    user_file(home, 'journal = "true"\n')  # a file's value must be a TOML boolean
    assert 'key "journal": expected true or false, got "true"' in refused(home, root)


def test_a_header_value_may_be_latin_1_and_no_more(home, root):
    user_file(home, '[headers]\n"X-Title" = "caf\u00e9 \u00ff"\n')
    assert load(home, root).headers == {"X-Title": "caf\u00e9 \u00ff"}
    user_file(home, '[headers]\n"X-Title" = "\u0100"\n')
    assert "the value has characters HTTP headers cannot carry" in refused(home, root)


def test_prices_edges(home, root):
    user_file(home, '[prices]\n" " = { input = 1, output = 2 }\n')
    assert '[prices] the model name " " is empty or has control characters' in refused(home, root)
    user_file(home, '[prices]\n"m\\u0007" = { input = 1, output = 2 }\n')
    assert "is empty or has control characters" in refused(home, root)
    user_file(home, '[prices]\n"m" = { input = -0.5, output = 2 }\n')
    assert '"m": input: expected a number >= 0 (per million tokens), got -0.5' in refused(home, root)
    user_file(home, '[prices]\n"m" = { input = 0, output = 0 }\n')
    price = load(home, root).prices["m"]
    assert (price.input, price.output, price.cached_input) == (0.0, 0.0, None)


# ---- base URLs -------------------------------------------------------------------------------


@pytest.mark.parametrize("url, why", [
    ("http://h:0/v1", "with a valid host and port"),
    ("http://h:99999/v1", "with a valid host and port"),
    ("http://user@h/v1", "must not contain a user name or password"),
    ("http://:pw@h/v1", "must not contain a user name or password"),
    ("http://[::1/v1", "with a valid host and port"),
])
def test_a_base_url_needs_a_port_that_is_one_and_no_credentials(home, root, url, why):
    assert why in refused(home, root, {"base_url": url})


def test_the_ports_at_the_ends_are_ports(home, root):
    assert load(home, root, {"base_url": "http://h:1/v1"}).base_url == "http://h:1/v1"
    assert load(home, root, {"base_url": "http://h:65535/v1"}).base_url == "http://h:65535/v1"


def test_a_base_url_in_a_file_must_be_text(home, root):
    user_file(home, "base_url = 8080\n")
    assert refused(home, root).endswith('key "base_url": expected an http:// or https:// base URL such as '
                                        f'"{C.DEFAULT_BASE_URL}", got 8080')


# ---- bad values, shown -----------------------------------------------------------------------------


def test_a_bad_value_is_shown_short_and_as_typed():
    assert C._show("x" * 80) == '"' + "x" * 80 + '"'
    assert C._show("x" * 81) == '"' + "x" * 77 + '..."'
    assert C._show("caf\u00e9") == '"caf\u00e9"'
    assert C._show({"a": 1}) == "a table"
    assert C._show([1]) == "an array"
    assert C._show(datetime.datetime(2026, 1, 1)) == "a date-time"
    assert C._show(datetime.date(2026, 1, 1)) == "a date"
    assert C._show(datetime.time(1, 2)) == "a time"
    assert C._show(None) == "NoneType"


# ---- files that cannot be read ---------------------------------------------------------------------


def test_a_directory_where_the_file_should_be(home, root):
    path = home / ".config" / "dashfloat" / "config.toml"
    path.mkdir(parents=True)
    assert refused(home, root) == f"{path}: is a directory; expected a TOML config file"


def test_a_file_that_may_not_be_read(home, root, monkeypatch):
    path = user_file(home, "model = 'm'\n")

    def denied(self):  # as chmod 0 does for anyone but root (the tests may run as root)
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(C.Path, "read_bytes", denied)
    assert refused(home, root) == f"{path}: cannot read the file: permission denied"


def test_a_loop_of_links_is_named_by_its_reason(home, root):
    path = home / ".config" / "dashfloat" / "config.toml"
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    assert refused(home, root) == f"{path}: cannot read the file: Too many levels of symbolic links"


def test_bad_utf8_names_its_line_counting_from_the_first(home, root):
    user_file(home, b"\nmodel = 'caf\xe9'\n")
    assert refused(home, root).endswith("(bad byte 0xe9 on line 2); TOML files must be saved as UTF-8")


# ---- no home ------------------------------------------------------------------------------------------


@pytest.fixture
def no_home(monkeypatch):
    """No HOME, and the password database has no entry either."""
    import pwd

    def missing(uid):
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", missing)


def test_without_a_home_there_is_no_user_file_and_the_project_file_still_counts(root, no_home):
    project_file(root, 'model = "from-project"\n')
    config = load_config({}, {}, root)
    assert config.model == "from-project"
    with pytest.raises(ConfigError, match="cannot find your home directory: HOME is not set"):
        C.user_config_path({})
    with pytest.raises(ConfigError, match="cannot find your home directory"):
        C.history_path({})
    project_file(root, 'base_url = "http://x/v1"\n')
    with pytest.raises(ConfigError) as exc:
        load_config({}, {}, root)
    assert str(exc.value).endswith("set it in your user config file, the environment or on the command line instead")


def test_the_history_lives_in_the_state_directory(home):
    assert C.history_path(env_for(home)) == home / ".local" / "state" / "dashfloat" / "history"
    assert C.history_path({"XDG_STATE_HOME": "/s", "HOME": str(home)}) == Path("/s/dashfloat/history")


# ---- -C ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given, message", [
    (5, "command line -C: expected a directory, got 5"),
    ("", 'command line -C: expected a directory, got ""'),
])
def test_dash_c_must_name_a_directory(home, root, given, message):
    assert refused(home, root, {"root": given}) == message


def test_dash_c_that_the_system_cannot_even_look_up(home, root):
    name = "n" * 5000
    assert refused(home, root, {"root": name}) == f"command line -C {name}: File name too long"


def test_the_current_directory_gone(monkeypatch):
    def gone():
        raise FileNotFoundError

    monkeypatch.setattr(C.Path, "cwd", staticmethod(gone))
    with pytest.raises(ConfigError, match="^the current directory does not exist any more$"):
        C.load_config_from_os({})


def test_load_config_from_os_reads_this_process(home, root, monkeypatch):
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DASHFLOAT_MODEL", "from-env")
    config = C.load_config_from_os({})
    assert (config.model, config.root) == ("from-env", root.resolve())


# ---- layering ---------------------------------------------------------------------------------------------


def test_a_raised_budget_is_skipped_and_the_project_keys_after_it_still_count(home, root):
    user_file(home, "max_turns = 10\n")
    project_file(root, 'max_turns = 20\nmodel = "after-the-budget"\n')
    config = load(home, root)
    assert (config.max_turns, config.model) == (10, "after-the-budget")
    assert config.sources["max_turns"].startswith("user file ")


def test_the_tables_after_the_permissions_table_still_count(home, root):
    user_file(home, '[permissions]\ndeny = ["read_file(.env)"]\n[headers]\n"X-Title" = "me"\n')
    config = load(home, root)
    assert config.headers == {"X-Title": "me"}
    assert [r.text for _label, rules in config.permissions for r in rules] == ["read_file(.env)"]


def test_a_working_directory_that_is_gone(home, tmp_path):
    gone = tmp_path / "gone"
    with pytest.raises(ConfigError) as exc:
        load_config({}, env_for(home), gone)
    assert str(exc.value) == f"the current directory {gone} does not exist any more"


def test_an_equal_budget_is_the_project_files(home, root):
    user_file(home, "max_turns = 10\n")
    path = project_file(root, "max_turns = 10\n")
    config = load(home, root)
    assert (config.max_turns, config.sources["max_turns"]) == (10, f"project file {path}")


def test_a_looser_mode_is_skipped_and_the_project_keys_after_it_still_count(home, root):
    user_file(home, 'permission_mode = "read-only"\n')
    project_file(root, 'permission_mode = "ask"\nmodel = "after-the-mode"\n')
    config = load(home, root)
    assert (config.permission_mode, config.model) == ("read-only", "after-the-mode")


def test_an_equal_mode_is_the_project_files(home, root):
    user_file(home, 'permission_mode = "ask"\n')
    path = project_file(root, 'permission_mode = "ask"\n')
    assert load(home, root).sources["permission_mode"] == f"project file {path}"


def test_the_hooks_are_refused_before_their_value_and_say_where_they_belong(home, root):
    path = project_file(root, "hook_timeout = 5\n")
    user = home / ".config" / "dashfloat" / "config.toml"
    assert refused(home, root) == (
        f"{path}: key \"hook_timeout\" is not allowed in a project file: it belongs with the hooks, which "
        f"only your user file may set; set it in {user} instead")
    path = project_file(root, 'journal = false\n')
    assert refused(home, root) == (
        f"{path}: key \"journal\" is not allowed in a project file: the session journal is the record of what "
        f"ran and what changed, so a cloned repository could hide it; set it in {user}, the environment or on "
        "the command line instead")


def test_a_project_allow_list_is_named_by_its_first_rule(home, root):
    project_file(root, '[permissions]\nallow = ["read_file(a)", "read_file(b)"]\n')
    assert '[permissions] allow is not allowed in a project file (rule "read_file(a)")' in refused(home, root)


# ---- what --show-config says ------------------------------------------------------------------------------


def test_describe_counts_the_rules_of_every_layer_and_says_the_window_and_the_journal(home, root):
    user_file(home, '[permissions]\nallow = ["read_file(a)"]\ndeny = ["read_file(.env)", "execute_command(rm *)"]\n')
    project_file(root, '[permissions]\ndeny = ["read_file(secret)"]\n')
    lines = describe(load(home, root, {"allow": ["list_directory(*)"]}))
    (perm,) = [line for line in lines if line.startswith("permissions ")]
    assert "= 2 allow, 3 deny (dashfloat policy list shows them)" in perm
    (window,) = [line for line in lines if line.startswith("context_window ")]
    assert window.split("= ")[1] == "from the endpoint, else 32768   (default)"
    (journal,) = [line for line in lines if line.startswith("journal ")]
    assert journal.split("= ")[1] == "true   (default)"
    user_file(home, "context_window = 4096\njournal = false\n")
    project_file(root, "")
    lines = describe(load(home, root))
    assert [line.split("= ")[1].split("   ")[0] for line in lines
            if line.startswith(("context_window ", "journal "))] == ["4096", "false"]


def test_a_config_built_directly_has_the_documented_defaults(tmp_path):
    config = Config(root=tmp_path)
    for spec in KEYS:
        if spec.name in ("headers", "prices", "permissions", "hooks"):
            continue
        assert getattr(config, spec.name) == spec.default, spec.name
    assert config.base_url_is_default is True
