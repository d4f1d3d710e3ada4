"""tools/repocheck.py on its own: which keys name programs, the environment that neutralises
the fixed ones (the user's own values kept), and when a git command must ask (issue 14 §5).
Real git repositories in tmp dirs; the attacks through the agent are in
tests/test_repository_programs.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dashfloat import cli
from dashfloat.tools import pipeline, repocheck, rules
from dashfloat.tools.permissions import Policy
from tests.test_repository_programs import config, git, make_repo, user_policy

pytestmark = pytest.mark.usefixtures("git_home")  # (tests/conftest.py)


@pytest.mark.parametrize("key, value, named", [
    ("filter.x.clean", "evil", True),
    ("filter.X.Smudge", "evil", True),  # (git prints subsections as written)
    ("filter.x.process", "evil", True),
    ("filter.x.required", "true", False),
    ("diff.t.textconv", "evil", True),
    ("diff.t.command", "evil", True),
    ("diff.t.xfuncname", "^x", False),
    ("merge.m.driver", "evil %A", True),
    ("remote.origin.uploadpack", "evil", True),
    ("remote.origin.url", "https://example.invalid/r.git", False),
    ("credential.https://example.invalid.helper", "evil", True),
    ("core.gitproxy", "evil", True),
    ("submodule.s.update", "!evil", True),
    ("user.name", "!bob", True),  # a "!" value runs a shell wherever git takes one
    ("tar.tgz.command", "evil", True),
    ("difftool.t.cmd", "evil", True),
    ("sendemail.smtpserver", "/usr/bin/evil", True),
    ("somefuture.newthing.command", "evil", True),  # unknown keys ending like a program: asked
    ("filter.lfs.clean", "git-lfs clean -- %f", False),  # `git lfs install --local`
    ("filter.lfs.clean", "git-lfs clean -- %f; evil", True),
    # neutralised in the environment instead: never a reason to ask
    ("core.fsmonitor", "evil", False),
    ("core.hookspath", ".githooks", False),
    ("core.pager", "evil", False),
    ("pager.diff", "evil", False),
    ("gpg.program", "evil", False),
    ("core.sshcommand", "evil", False),
    ("credential.helper", "evil", False),
    ("alias.lg", "!evil", False),  # (aliases are judged by the command they serve)
    ("core.autocrlf", "input", False),
    ("branch.main.remote", "origin", False),
])
def test_which_keys_name_a_program(key, value, named):
    assert repocheck.untrusted_program(key, value) is named


def test_config_env_comes_after_the_users_own():
    env = repocheck.config_env([("core.fsmonitor", "false")], {"GIT_CONFIG_COUNT": "2"})
    assert env == {"GIT_CONFIG_KEY_2": "core.fsmonitor", "GIT_CONFIG_VALUE_2": "false",
                   "GIT_CONFIG_COUNT": "3"}
    assert repocheck.config_env([], {})["GIT_CONFIG_COUNT"] == "0"


def pairs_of(env: dict) -> list[tuple[str, str]]:
    n = int(env["GIT_CONFIG_COUNT"])
    return [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(n)]


def run_with(env_changes: dict, cwd: Path, *args: str) -> str:
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True).stdout


def test_the_environment_overrides_the_repository_and_keeps_the_users_own(tmp_path, git_home):
    with (git_home / ".gitconfig").open("a") as f:
        f.write("[core]\n\thooksPath = /home/me/hooks\n[gpg]\n\tprogram = gpg2\n"
                "[credential]\n\thelper = store\n\thelper = cache\n")
    root = make_repo(tmp_path / "r")
    for key, value in [("core.fsmonitor", "evil"), ("core.hooksPath", ".githooks"),
                       ("gpg.program", "evil"), ("credential.helper", "evil"),
                       ("core.sshCommand", "evil"), ("protocol.allow", "always")]:
        config(root, key, value)
    verdict = repocheck.check("git status", str(root), str(root))
    assert verdict.reasons == ()
    env = verdict.env
    assert env["LESSOPEN"] is None and env["GIT_PAGER"] == "cat"
    got = lambda key: run_with(env, root, "config", "--get", key).split()  # noqa: E731  (the value git uses)
    assert got("core.fsmonitor") == ["false"]
    assert got("core.hookspath") == ["/home/me/hooks"]  # the user's own hooks
    assert got("gpg.program") == ["gpg2"] and got("gpg.openpgp.program") == ["gpg2"]
    assert got("core.sshcommand") == ["ssh"]
    assert got("safe.barerepository") == ["explicit"]
    assert got("protocol.ext.allow") == ["never"]
    # git takes the last value of a key, and an empty helper empties the list before it
    helpers = run_with(env, root, "config", "--get-all", "credential.helper").splitlines()
    assert helpers[helpers.index("") + 1:] == ["store", "cache"]


def test_git_ssh_and_ssh_askpass_of_the_user_are_kept(tmp_path):
    root = make_repo(tmp_path / "r")
    config(root, "core.sshCommand", "evil")
    config(root, "core.askPass", "evil")
    environ = {**os.environ, "GIT_SSH": "/opt/my ssh", "SSH_ASKPASS": "/usr/bin/ksshaskpass"}
    env = repocheck.check("git status", str(root), str(root), environ=environ).env
    assert env["GIT_SSH_COMMAND"] == "'/opt/my ssh'"  # beats any core.sshCommand
    assert ("core.askpass", "/usr/bin/ksshaskpass") in pairs_of(env)


def test_a_clean_repository_and_a_command_without_git_have_nothing_to_ask(tmp_path):
    root = make_repo(tmp_path / "r")
    git(root, "lfs", "install", "--local") if _has_lfs() else None
    for command in ("git status", "git diff --stat", "git log --oneline -5", "ls -la"):
        assert repocheck.check(command, str(root), str(root)).reasons == (), command
    config(root, "filter.x.clean", "evil")  # a command that does not run git is not asked
    assert repocheck.check("ls -la", str(root), str(root)).reasons == ()
    assert repocheck.check("git status", str(root), str(root)).reasons


def _has_lfs() -> bool:
    return subprocess.run(["git", "lfs", "version"], capture_output=True).returncode == 0


def test_an_alias_matters_only_for_a_command_that_is_not_built_in(tmp_path):
    root = make_repo(tmp_path / "r")
    config(root, "alias.lg", "!evil")
    assert repocheck.check("git status", str(root), str(root)).reasons == ()
    reasons = repocheck.check("git lg", str(root), str(root)).reasons
    assert reasons and "alias.lg = !evil (in .git/config)" in reasons[0]


def test_diff_external_is_fine_when_the_users_own_environment_decides(tmp_path):
    root = make_repo(tmp_path / "r")
    config(root, "diff.external", "evil")
    assert "diff.external" in repocheck.describe(repocheck.check("git diff", str(root), str(root)).reasons)
    environ = {**os.environ, "GIT_EXTERNAL_DIFF": "difft"}
    assert repocheck.check("git diff", str(root), str(root), environ=environ).reasons == ()


@pytest.mark.parametrize("command, why", [
    ("git log $X", "known only when it runs"),
    ("GIT_DIR=/tmp/x git status", "GIT_"),
    ("env GIT_DIR=/tmp/x git status", "GIT_"),
    ("git --git-dir=/tmp/x status", "--git-dir"),
    ("git --work-tree /tmp status", "--work-tree"),
    ("cd - && git status", "known only when it runs"),
    ("echo ok; git status", None),
    ("echo git status", None),
])
def test_commands_whose_repository_cannot_be_told_ask(tmp_path, command, why):
    """(Only an exact session rule can allow such commands; they ask all the same.)"""
    root = make_repo(tmp_path / "r")
    reasons = repocheck.describe(repocheck.check(command, str(root), str(root)).reasons)
    if why is None:
        assert reasons == ""
    else:
        assert why in reasons


def test_a_cd_target_and_a_dash_c_directory_are_checked(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    other = make_repo(root / "sub")
    config(other, "filter.x.clean", "evil")
    assert repocheck.check("git status", str(root), str(root)).reasons == ()
    for command in ("cd sub && git status", "git -C sub status", "git -C x -C ../sub status"):
        assert "filter.x.clean" in repocheck.describe(repocheck.check(command, str(root), str(root)).reasons)


def test_an_enclosing_repository_counts(tmp_path):
    """The working directory inside a repository: git uses the enclosing one's config."""
    top = make_repo(tmp_path / "top")
    config(top, "diff.t.textconv", "evil")
    (top / "docs").mkdir()
    assert "diff.t.textconv" in repocheck.describe(
        repocheck.check("git status", str(top / "docs"), str(top / "docs")).reasons)


def test_a_config_file_inside_the_working_directory_is_the_repositorys_whatever_its_scope(tmp_path, monkeypatch):
    """HOME inside the working directory: its .gitconfig is a file the model may write."""
    root = make_repo(tmp_path / "r")
    (root / "home").mkdir()
    (root / "home" / ".gitconfig").write_text("[filter \"x\"]\n\tclean = evil\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(root / "home" / ".gitconfig"))
    assert "filter.x.clean = evil (in home/.gitconfig)" in repocheck.describe(
        repocheck.check("git status", str(root), str(root)).reasons)


def test_what_git_cannot_read_asks(tmp_path):
    root = make_repo(tmp_path / "r")
    with (root / ".git" / "config").open("a") as f:
        f.write("[broken\n")
    reasons = repocheck.describe(repocheck.check("git status", str(root), str(root)).reasons)
    assert "git cannot read" in reasons and "bad config" in reasons
    assert repocheck.check("ls", str(root), str(root)).reasons == ()


def test_an_old_git_asks(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    real = repocheck._Probe.about
    monkeypatch.setattr(repocheck._Probe, "about",
                        lambda self: repocheck._About((2, 30), real(self).builtins))
    assert "older than 2.38" in repocheck.describe(repocheck.check("git status", str(root), str(root)).reasons)


def test_no_git_on_the_path(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    verdict = repocheck.check("git status", str(root), str(root), environ={"PATH": str(tmp_path)})
    assert verdict.reasons == () and ("safe.barerepository", "explicit") in pairs_of(verdict.env)


def test_a_slow_git_is_a_reason_to_ask(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    monkeypatch.setattr(repocheck, "PROBE_TIMEOUT", 0.0)
    assert "too long" in repocheck.describe(repocheck.check("git status", str(root), str(root)).reasons)


def test_the_stage_leaves_asks_and_the_unrestricted_mode_alone(tmp_path):
    root = make_repo(tmp_path / "r")
    config(root, "filter.x.clean", "evil")
    call = {"command": "git status"}
    assert pipeline.judge("execute_command", call, str(root), Policy()).who == "built-in default"
    unrestricted = Policy(mode=rules.MODE_UNRESTRICTED)
    assert pipeline.judge("execute_command", call, str(root), unrestricted).decision == rules.ALLOW
    decision = pipeline.judge("execute_command", call, str(root), user_policy("git status"))
    assert (decision.decision, decision.who) == (rules.ASK, repocheck.WHO)


def test_policy_check_names_the_repository_and_the_program(tmp_path, git_home, monkeypatch, capsys):
    root = make_repo(tmp_path / "proj")
    (root / ".gitattributes").write_text("*.txt filter=x\n")
    config(root, "filter.x.clean", "./x.sh")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(root)
    code = cli.main(["--allow", "execute_command(git status)", "policy", "check",
                     "execute_command(git status)", "execute_command(ls)"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[:3] == [
        "ask    execute_command(git status)",
        f"  decided by: {repocheck.WHO}",
        "  reason: git would run what the repository's config names: filter.x.clean = ./x.sh "
        "(in .git/config)",
    ]
