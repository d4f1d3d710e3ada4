"""The numbers the man page, --help and the README state are the code's numbers.

The page's bounds and defaults are generated from the constants (manpage.numbers()); these
tests check that no number is written by hand into the page's text where a constant
belongs, spot-check the generated page against the code, and check the places that repeat
a default (the Config dataclass, the modules' own defaults, --help, the README)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from dashfloat import agent, cli, config, history, manpage, masking
from dashfloat.config import KEYS
from dashfloat.llm import client
from dashfloat.tools import exec as exec_tool
from dashfloat.tools import files, hooks, runner
from dashfloat.ui import app

ROOT = Path(__file__).resolve().parents[2]
PAGE = manpage.generate()
DEFAULT = {spec.name: spec.default for spec in KEYS}

# a number with a unit, or a bound or default said in words: these must come from numbers()
HAND_WRITTEN = re.compile(
    r"\b\d+(?:\.\d+)?\s*(?:KiB|MiB|GiB|bytes|ms|s|seconds|lines|entries|calls|characters|prompts)\b"
    r"|\bdefault\s+\d|\bat most\s+\d|\(\s*(?:ten|twenty|thirty|fifty|hundred)\b|\bmode\s+0[0-7]{3}"
)


@pytest.mark.parametrize("name", ["HEAD", "MIDDLE", "TAIL"])
def test_no_bound_or_default_is_written_by_hand_into_the_page(name):
    text = getattr(manpage, name)
    found = [m.group(0) for m in HAND_WRITTEN.finditer(text)]
    assert not found, f"write these as @name@ placeholders filled by manpage.numbers(): {found}"


def test_every_placeholder_is_filled():
    assert "@" not in PAGE.replace("\\(at", "")


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("phrase", [
    f"every {app.TICK * 1000:g} ms",
    f"at most every {app.STREAM_FRAME * 1000:g} ms",
    f"default the first {files.READ_MAX_LINES}; at most {files.READ_MAX_LINES} lines and "
    f"{files.READ_MAX_BYTES >> 10} KiB",
    f"Files above {files.STREAM_ABOVE >> 10} KiB",
    f"at most {files.LIST_MAX} of them",
    f"files above {files.EDIT_MAX_BYTES >> 20} MiB are refused",
    f"kept up to {exec_tool.MAX_OUTPUT >> 10} KiB",
    f"({agent.READ_POOL} at most)",
    f"at most {runner.EXCERPT_LINES} lines of output",
    f"at most {inspect.signature(client.stream_chat).parameters['max_calls'].default} tool calls and "
    f"{inspect.signature(client.stream_chat).parameters['max_episode_bytes'].default >> 20} MiB",
    f"(at most {hooks.MAX_OUTPUT >> 10} KiB)",
    f"A note is kept to {hooks.MAX_NOTE >> 10} KiB",
    f"shorter than {masking.MIN_LENGTH} characters",
    f"the last {history.LIMIT} prompts",
    f"(default {DEFAULT['connect_timeout']:g}).",
    f"(default {DEFAULT['read_timeout']:g}).",
    f"seconds (default {DEFAULT['exec_timeout']:g})",
    f"model requests (default {DEFAULT['max_episodes']})",
    f"(seconds, default {DEFAULT['hook_timeout']:g})",
    f".B {cli.EXIT_PIPE}",
])
def test_the_page_states_the_code_numbers(phrase):
    assert flat(phrase) in flat(PAGE)


def test_the_numbers_are_what_the_spec_says():
    """ADR 0007's bounds, as the page now states them (a change here is a spec change)."""
    n = manpage.numbers()
    assert (n["read_max_lines"], n["read_max_bytes"], n["list_max"], n["exec_output"]) == (
        "2000", "64 KiB", "501", "32 KiB")
    assert (n["edit_max"], n["episode_bytes"], n["max_calls"]) == ("8 MiB", "4 MiB", "64")
    assert (n["exec_timeout"], n["max_episodes"], n["read_timeout"], n["connect_timeout"]) == (
        "30", "50", "120", "10")


def test_every_place_that_repeats_a_default_agrees():
    cfg = config.Config()
    for name in ("connect_timeout", "read_timeout", "max_episodes", "exec_timeout", "hook_timeout",
                 "colors", "ascii", "permission_mode", "base_url", "api_key_env"):
        assert getattr(cfg, name) == DEFAULT[name], name
    for spec in KEYS:
        if isinstance(spec.default, (int, float)) and not isinstance(spec.default, bool):
            assert spec.default_description == f"{spec.default:g}", spec.name
    params = inspect.signature(agent.Agent).parameters
    assert params["max_episodes"].default == DEFAULT["max_episodes"]
    assert params["exec_timeout"].default == DEFAULT["exec_timeout"]
    assert params["hook_timeout"].default == DEFAULT["hook_timeout"]
    assert exec_tool.DEFAULT_TIMEOUT == DEFAULT["exec_timeout"]
    assert hooks.DEFAULT_TIMEOUT == DEFAULT["hook_timeout"]
    ep = inspect.signature(client.Endpoint).parameters
    assert ep["connect_timeout"].default == DEFAULT["connect_timeout"]
    assert ep["read_timeout"].default == DEFAULT["read_timeout"]


def test_help_states_the_defaults(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = flat(capsys.readouterr().out)
    assert f"connect timeout (default {DEFAULT['connect_timeout']:g})" in out
    assert f"streaming (default {DEFAULT['read_timeout']:g})" in out


def test_the_readme_states_the_defaults():
    readme = (ROOT / "README.md").read_text()
    row = {line.split("|")[1].strip(): line for line in readme.splitlines() if line.startswith("| ")}
    assert f"{DEFAULT['connect_timeout']:g} s, {DEFAULT['read_timeout']:g} s" in row["timeouts"]
    assert f"| {DEFAULT['exec_timeout']:g} s |" in row["command timeout"]
    assert f"| {DEFAULT['max_episodes']} |" in row["model requests per prompt"]
    assert config.DEFAULT_BASE_URL in row["endpoint"]
