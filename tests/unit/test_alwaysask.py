"""Files that run code later always ask (dashfloat/tools/alwaysask.py and its use in rules.py).

The security review found `.envrc` and `.vscode/tasks.json` written without a question under
accept-edits, though each runs code when the person next enters the directory or opens the
editor. Every entry of the table is tried here with every way a write could otherwise be
allowed: accept-edits, unrestricted, a blanket allow rule, a session rule from the `a` key.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashfloat import cli
from dashfloat.tools import alwaysask, rules
from dashfloat.tools.permissions import SESSION_LAYER, Policy
from dashfloat.tools.rules import ALLOW, ASK, DENY, evaluate, exact_rule, parse_rule

ROOT = "/work/proj"

# One real-world file for every pattern of the table: a pattern without a sample fails
# test_every_pattern_has_a_sample, so an entry cannot be added untested.
SAMPLES: dict[str, str] = {
    ".dashfloat/**": ".dashfloat/config.toml",
    ".config/dashfloat/**": ".config/dashfloat/config.toml",
    ".git/hooks/**": ".git/hooks/pre-commit",
    ".git/config": ".git/config",
    ".gitconfig": ".gitconfig",
    ".config/git/**": ".config/git/config",
    ".git/**": ".git/info/attributes",
    ".gitattributes": ".gitattributes",
    ".gitmodules": ".gitmodules",
    ".hg/hgrc": ".hg/hgrc",
    ".envrc": ".envrc",
    ".config/direnv/**": ".config/direnv/direnvrc",
    ".vscode/**": ".vscode/tasks.json",
    ".devcontainer/**": ".devcontainer/devcontainer.json",
    ".idea/**": ".idea/workspace.xml",
    ".exrc": ".exrc",
    ".vimrc": ".vimrc",
    ".gvimrc": ".gvimrc",
    ".nvimrc": ".nvimrc",
    ".nvim.lua": ".nvim.lua",
    ".vim/**": ".vim/plugin/x.vim",
    ".config/nvim/**": ".config/nvim/init.lua",
    ".dir-locals.el": ".dir-locals.el",
    ".dir-locals-2.el": ".dir-locals-2.el",
    ".emacs": ".emacs",
    ".emacs.el": ".emacs.el",
    ".emacs.d/**": ".emacs.d/init.el",
    ".config/emacs/**": ".config/emacs/init.el",
    ".bashrc": ".bashrc",
    ".bash_profile": ".bash_profile",
    ".bash_login": ".bash_login",
    ".bash_logout": ".bash_logout",
    ".bash_aliases": ".bash_aliases",
    ".profile": ".profile",
    ".zshrc": ".zshrc",
    ".zshenv": ".zshenv",
    ".zprofile": ".zprofile",
    ".zlogin": ".zlogin",
    ".zlogout": ".zlogout",
    ".kshrc": ".kshrc",
    ".mkshrc": ".mkshrc",
    ".cshrc": ".cshrc",
    ".tcshrc": ".tcshrc",
    ".login": ".login",
    ".logout": ".logout",
    ".config/fish/**": ".config/fish/config.fish",
    ".inputrc": ".inputrc",
    ".xprofile": ".xprofile",
    ".xinitrc": ".xinitrc",
    ".xsession": ".xsession",
    ".xsessionrc": ".xsessionrc",
    ".config/autostart/**": ".config/autostart/x.desktop",
    ".config/systemd/user/**": ".config/systemd/user/x.service",
    ".ssh/**": ".ssh/config",
    ".github/workflows/**": ".github/workflows/x.yml",
    ".github/actions/**": ".github/actions/setup/action.yml",
    ".gitlab-ci.yml": ".gitlab-ci.yml",
    ".circleci/**": ".circleci/config.yml",
    ".travis.yml": ".travis.yml",
    ".drone.yml": ".drone.yml",
    ".woodpecker.yml": ".woodpecker.yml",
    ".woodpecker/**": ".woodpecker/build.yml",
    ".buildkite/**": ".buildkite/pipeline.yml",
    "azure-pipelines.yml": "azure-pipelines.yml",
    "bitbucket-pipelines.yml": "bitbucket-pipelines.yml",
    "Jenkinsfile": "Jenkinsfile",
    ".forgejo/workflows/**": ".forgejo/workflows/ci.yml",
    ".gitea/workflows/**": ".gitea/workflows/ci.yml",
    ".pre-commit-config.yaml": ".pre-commit-config.yaml",
    ".husky/**": ".husky/pre-commit",
    "lefthook.yml": "lefthook.yml",
    ".lefthook.yml": ".lefthook.yml",
    "lefthook-local.yml": "lefthook-local.yml",
    "package.json": "package.json",
    ".npmrc": ".npmrc",
    ".yarnrc": ".yarnrc",
    ".yarnrc.yml": ".yarnrc.yml",
    ".pnpmfile.cjs": ".pnpmfile.cjs",
    "bunfig.toml": "bunfig.toml",
    "mise.toml": "mise.toml",
    ".mise.toml": ".mise.toml",
    "mise.local.toml": "mise.local.toml",
    ".mise.local.toml": ".mise.local.toml",
    ".mise/**": ".mise/config.toml",
    ".config/mise/**": ".config/mise/config.toml",
    ".tool-versions": ".tool-versions",
}

# Ordinary files: accept-edits applies them without a question (the list must not grow
# into "everything asks", which would teach the user to press y without reading).
ORDINARY = ["src/app.py", "README.md", ".env", "Makefile", "setup.py", "pyproject.toml",
            "conftest.py", "tests/conftest.py", ".editorconfig", ".gitignore",
            ".github/ISSUE_TEMPLATE/bug.md", "docs/vscode/tasks.json", "envrc", "my.bashrc.txt",
            "package-lock.json", "notes/.github-workflows.md"]

BLANKET = [("command line", [parse_rule("write_file(**)", ALLOW, "command line"),
                             parse_rule("edit_file", ALLOW, "command line")])]


def _reason(pattern: str) -> str:
    return next(e.reason for e in alwaysask.TABLE if pattern in e.patterns)


def _first_reason(path: str) -> str:
    """The reason of the first pattern that matches (table order: specific before general)."""
    for pattern, reason in alwaysask.patterns():
        rule = parse_rule(f"write_file(**/{pattern})", ASK)
        if rules.rule_matches(rule, "write_file", {"path": path}, root=ROOT):
            return reason
    raise AssertionError(f"{path} matches no entry")


def _decide(layers, tool, path, mode):
    return evaluate(layers, tool, {"path": path}, root=ROOT, mode=mode)


def test_every_pattern_has_a_sample_and_every_entry_a_reason():
    patterns = [p for p, _ in alwaysask.patterns()]
    assert len(patterns) == len(set(patterns)), "a pattern is listed twice"
    assert set(patterns) == set(SAMPLES), "every pattern needs a sample here (and no stale ones)"
    for entry in alwaysask.TABLE:
        assert entry.patterns and entry.reason and "\n" not in entry.reason
        assert len(entry.reason) <= 90, f"one short line for the question: {entry.reason!r}"
        for pattern in entry.patterns:
            parse_rule(f"write_file(**/{pattern})", ASK)  # valid rule-language patterns


@pytest.mark.parametrize("pattern", list(SAMPLES))
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_each_entry_asks_whatever_would_allow_it(pattern, tool):
    path = SAMPLES[pattern]
    why = _first_reason(path)
    assert why == _reason(pattern) or pattern in (".git/**",) or path.startswith(".git/")
    session = [(SESSION_LAYER, [exact_rule(tool, {"path": path})])]
    for layers, mode in [([], "accept-edits"), ([], "unrestricted"), (BLANKET, "ask"),
                         (BLANKET, "accept-edits"), (BLANKET, "unrestricted"),
                         (session, "accept-edits"), (session, "unrestricted")]:
        for where in (path, f"sub/dir/{path}", f"./{path}", f"{ROOT}/{path}"):
            d = _decide(layers, tool, where, mode)
            assert d.decision == ASK, (where, mode, layers, d)
            assert d.always_asks == why, (where, d)
            assert d.who.startswith("built-in protection ") and why in d.reason
    # a deny rule is still stricter
    deny = [("user config u", [parse_rule(f"{tool}(**)", DENY, "user config u")])]
    assert _decide(deny, tool, path, "unrestricted").decision == DENY
    # and reading it is nothing special
    assert _decide([], "read_file", path, "ask").decision == ALLOW


def test_specific_entries_give_their_own_reason():
    assert _decide([], "write_file", ".git/hooks/post-checkout", "accept-edits").always_asks == \
        "git runs these hooks on commit, merge, checkout and push"
    assert "core.fsmonitor" in _decide([], "write_file", ".git/config", "accept-edits").always_asks
    assert _decide([], "write_file", ".git/info/attributes", "accept-edits").always_asks == \
        _reason(".git/**")
    assert _decide([], "write_file", ".envrc", "accept-edits").always_asks == \
        "direnv runs it when you next cd here"


@pytest.mark.parametrize("path", [".ENVRC", ".VSCode/tasks.json", ".git\u200b/config",
                                  ".envrc.", "PACKAGE.JSON", ".github/Workflows/x.yml"])
def test_folded_names_ask_too(path):
    d = _decide(BLANKET, "write_file", path, "unrestricted")
    assert d.decision == ASK and d.always_asks


@pytest.mark.parametrize("path", ORDINARY)
def test_ordinary_files_are_still_applied_under_accept_edits(path):
    d = _decide([], "write_file", path, "accept-edits")
    assert (d.decision, d.who, d.always_asks) == (ALLOW, "mode accept-edits", "")
    assert _decide(BLANKET, "edit_file", path, "ask").decision == ALLOW


def test_an_explicit_ask_rule_keeps_its_name_and_gets_the_reason():
    layers = [("user config u", [parse_rule("write_file(.envrc)", ASK, "user config u")])]
    d = _decide(layers, "write_file", ".envrc", "accept-edits")
    assert d.decision == ASK and d.who.startswith('rule "write_file(.envrc)"')
    assert d.always_asks == "direnv runs it when you next cd here"
    layers = [("user config u", [parse_rule("write_file(x)", ASK, "user config u")])]
    assert _decide(layers, "write_file", "x", "accept-edits").always_asks == ""


def test_a_command_naming_git_internals_says_why_too():
    d = evaluate([], "execute_command", {"command": "cat x > .git/hooks/pre-commit"}, root=ROOT,
                 mode="unrestricted")
    assert d.decision == ASK and "names .git" in d.always_asks


# ---- through the session policy: symlinks, the a key -----------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def test_a_symlink_to_one_of_them_asks(root: Path):
    (root / ".envrc").write_text("")
    os.symlink(".envrc", root / "notes.txt")
    (root / ".vscode").mkdir()
    os.symlink(".vscode", root / "cfg")
    policy = Policy(mode="accept-edits")
    assert policy.decide("write_file", {"path": "notes.txt"}, root).always_asks == \
        "direnv runs it when you next cd here"
    assert policy.decide("edit_file", {"path": "cfg/tasks.json"}, root).decision == ASK
    assert policy.decide("write_file", {"path": "plain.txt"}, root).decision == ALLOW


def test_a_session_rule_from_a_never_stops_the_question(root: Path):
    policy = Policy(mode="accept-edits")
    policy.allow_exact("write_file", {"path": ".github/workflows/x.yml"})
    policy.allow_exact("write_file", {"path": "notes.md"})
    assert policy.decide("write_file", {"path": ".github/workflows/x.yml"}, root).decision == ASK
    assert policy.decide("write_file", {"path": ".github/workflows/y.yml"}, root).decision == ASK
    assert policy.decide("write_file", {"path": "notes.md"}, root).decision == ALLOW


# ---- dashfloat policy check / list -------------------------------------------------------


@pytest.fixture
def cli_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "cliproj"
    path.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "DASHFLOAT_PERMISSION_MODE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(path)
    return path


def test_policy_check_prints_ask_and_the_reason_for_every_entry(cli_root: Path, capsys):
    calls = [f"write_file({path})" for path in SAMPLES.values()]
    code = cli.main(["policy", "check", *calls, "--permission-mode", "accept-edits",
                     "--allow", "write_file(**)"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    blocks = out.split("  mode: accept-edits\n")
    assert blocks.pop() == "" and len(blocks) == len(calls)
    for call, path, block in zip(calls, SAMPLES.values(), blocks, strict=True):
        lines = block.strip("\n").splitlines()
        assert lines[0] == f"ask    {call}", block
        assert lines[1].startswith('  decided by: built-in protection "write_file(**/'), block
        assert lines[2] == f"  reason: {_first_reason(path)} (writes here always ask)", block


def test_policy_list_shows_every_path_with_its_reason(cli_root: Path, capsys):
    assert cli.main(["policy", "list"]) == 0
    out = capsys.readouterr().out
    for entry in alwaysask.TABLE:
        assert f"  ask    {', '.join(entry.patterns)}   ({entry.reason})" in out.splitlines()


def test_the_man_page_lists_every_entry_from_the_table():
    from dashfloat import manpage

    page = manpage.generate()
    for entry in alwaysask.TABLE:
        names = ", ".join(f"\\fB\\%{p.replace('-', chr(92) + '-')}\\fR" for p in entry.patterns)
        assert f".TP\n{names}\n\\&{entry.reason.replace('-', chr(92) + '-')}.\n" in page, entry
