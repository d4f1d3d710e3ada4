"""tools/repocheck.py on its own: which keys name programs, the environment that neutralises
the fixed ones (the user's own values kept), and when a git command must ask (issue 14 §5).
Real git repositories in tmp dirs; the attacks through the agent are in
tests/test_repository_programs.py."""

from __future__ import annotations

import os
import shutil
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
    ("difftool.vimdiff.path", "./.tool.sh", True),  # git difftool runs it
    ("mergetool.vimdiff.path", "./.tool.sh", True),
    ("diff.tool", "../../../tmp/evil", True),  # git-mergetool--lib sources $dir/$tool
    ("merge.guitool", "x/../../evil", True),
    ("diff.tool", "vimdiff", False),  # a tool git knows by name
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
    for command in ("cd sub && git status", "git -C sub status", "git -C x -C ../sub status",
                    # wrappers that change directory are a cd too (env -C was not: a hole)
                    "env -C sub git status", "env --chdir=sub git status", "env --chdir sub git status",
                    "env -Csub git status", "env -i -u X -C sub git status", "nice env -C sub timeout 5 git status",
                    "sudo -D sub git status", "sudo --chdir=sub git status", "sudo -u me -D sub git status"):
        assert "filter.x.clean" in repocheck.describe(repocheck.check(command, str(root), str(root)).reasons), command
    for command in ("env X=1 git status", "nice -n 5 git status", "timeout 5 git status", "sudo -u me git status",
                    "env -u HOME git status"):
        assert repocheck.check(command, str(root), str(root)).reasons == (), command


@pytest.mark.parametrize("command", [
    "sudo -i git status", "sudo -iu root git status", "sudo --login git status", "sudo -R /x git status",
    "su - root -c 'git status'", "su -l root -c 'git status'", "runuser -l me -c 'git status'",
    "chroot /x git status", "systemd-run git status", "nsenter -t 1 --wd=/x git status",
    "unshare --wd /x git status", "firejail git status",
])
def test_a_wrapper_that_runs_git_where_the_check_cannot_follow_asks(tmp_path, command):
    root = make_repo(tmp_path / "r")
    assert "cannot follow" in repocheck.describe(repocheck.check(command, str(root), str(root)).reasons)


def test_wrapper_directories():
    wd = repocheck._wrapper_dir
    assert wd(["env", "-C", "a", "git", "status"]) == ("a", None)
    assert wd(["env", "-C", "a", "--chdir=b", "git"]) == ("a/b", None)
    assert wd(["/usr/bin/env", "-i", "X=1", "git"]) == (None, None)
    assert wd(["env", "-u", "-C", "git"]) == (None, None)  # -u's value, not an option
    assert wd(["env", "git", "-C", "x"]) == (None, None)  # git's own -C: not env's
    assert wd(["sudo", "-EDdir", "git"]) == ("dir", None)
    assert wd(["sudo", "-u", "-D", "git"]) == (None, None)
    assert wd(["env", "-C"]) == (None, None)
    assert wd(["sudo", "-i"])[1] is not None and wd(["chroot", "/x", "git"])[1] is not None
    # long options: with or without their value attached, which may be the last word
    assert wd(["env", "--ignore-environment", "-C", "a", "git"]) == ("a", None)
    assert wd(["env", "--unset", "-C", "git"]) == (None, None)  # --unset's value
    assert wd(["env", "--chdir", "a"]) == ("a", None) and wd(["env", "-C", "a"]) == ("a", None)
    assert wd(["env", "--chdir"]) == (None, None)
    assert wd(["env", "-i"]) == (None, None) and wd(["sudo", "-E"]) == (None, None)
    # env takes no option after -, --, or NAME=VALUE: `env - -C a git` runs a program "-C"
    for argv in (["env", "-", "-C", "a", "git"], ["env", "X=1", "-C", "a", "git"],
                 ["env", "--", "-C", "a", "git"], ["sudo", "X=1", "-D", "a", "git"]):
        assert wd(argv) == (None, None), argv


def test_su_and_runuser_take_their_options_after_the_users_name_too():
    """Their getopt permutes: `su root -l -c 'git status'` runs git in root's home (a hole)."""
    wd = repocheck._wrapper_dir
    for argv, option in ((["su", "root", "-l", "-c", "git status"], "-l"),
                         (["su", "-c", "git status", "root", "--login"], "--login"),
                         (["runuser", "me", "-", "-c", "git status"], "-"),
                         (["su", "root", "-s", "/bin/sh", "-lc", "git status"], "-lc")):
        assert wd(argv) == (None, f"{argv[0]} {option} runs its command somewhere the repository "
                                  "check cannot follow"), argv
    # "--" ends them: what follows goes to the shell
    assert wd(["su", "root", "-c", "git status", "--", "-l"]) == (None, None)
    assert wd(["runuser", "-u", "me", "--", "git", "log", "-l"]) == (None, None)


def test_su_with_a_login_after_the_users_name_asks(tmp_path):
    root = make_repo(tmp_path / "r")
    assert "su -l runs its command somewhere the repository check cannot follow" in repocheck.describe(
        reasons_of("su root -l -c 'git status'", root))
    assert reasons_of("su root -c 'git status'", root) == ()


def test_an_enclosing_repository_counts(tmp_path):
    """The working directory inside a repository: git uses the enclosing one's config."""
    top = make_repo(tmp_path / "top")
    config(top, "diff.t.textconv", "evil")
    (top / "docs").mkdir()
    assert "diff.t.textconv" in repocheck.describe(
        repocheck.check("git status", str(top / "docs"), str(top / "docs")).reasons)


def submodule_git_dir(top: Path, name: str, config_text: str) -> Path:
    d = top / ".git" / "modules" / name
    d.mkdir(parents=True)
    (d / "HEAD").write_text("ref: refs/heads/main\n")
    (d / "config").write_text(config_text)
    return d


def test_submodules_not_checked_out_or_not_in_the_index_are_checked(tmp_path):
    """`git log -p` runs git in every submodule its history changes, with that submodule's
    config: its git dir under .git/modules when it is not checked out, or a nested repository
    that is no longer in the index (a review ran diff.external and textconv this way)."""
    top = make_repo(tmp_path / "t")
    submodule_git_dir(top, "sub", "[diff]\n\texternal = evil\n")
    reasons = repocheck.describe(repocheck.check("git log -p", str(top), str(top)).reasons)
    assert "a submodule's config" in reasons and "diff.external = evil" in reasons
    other = make_repo(tmp_path / "u")
    nested = make_repo(other / "vendor")  # a repository of its own, not in other's index
    config(nested, "diff.t.textconv", "evil")
    assert "diff.t.textconv = evil (in vendor/.git/config)" in repocheck.describe(
        repocheck.check("git log -p", str(other), str(other)).reasons)
    clean = make_repo(tmp_path / "c")
    make_repo(clean / "vendor")
    assert repocheck.check("git log -p", str(clean), str(clean)).reasons == ()


def test_an_include_is_read_whatever_its_condition_and_one_the_command_may_write_asks(tmp_path):
    """`includeIf.onbranch:x.path` is off until a command switches branch (a review's
    `git worktree add wt evil` ran its smudge filter); an included file that is in the work
    tree, or does not exist yet, may be written by the command before a git child reads it
    (`git stash pop` restored one naming a clean filter, then ran it)."""
    top = make_repo(tmp_path / "t")
    (top / ".git" / "evil.cfg").write_text('[filter "x"]\n\tsmudge = evil\n')
    config(top, "includeIf.onbranch:evil.path", "evil.cfg")
    assert "filter.x.smudge = evil" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)
    other = make_repo(tmp_path / "u")
    config(other, "include.path", "../cfg.inc")  # not there yet: `git stash pop` may bring it
    may_write = "includes ../cfg.inc, a file the command itself may write"
    assert may_write in repocheck.describe(repocheck.check("git stash pop", str(other), str(other)).reasons)
    assert repocheck.check("git log -p", str(other), str(other)).reasons == ()  # it writes nothing


def test_a_push_to_a_repository_on_this_machine_asks(tmp_path):
    """Its receive-pack runs that repository's hooks (a review's pre-receive hook ran), where
    the environment's core.hooksPath does not reach."""
    top = make_repo(tmp_path / "t")
    local = "a repository on this machine"
    assert local in repocheck.describe(repocheck.check("git push ../r.git main", str(top), str(top)).reasons)
    assert repocheck.check("git push origin feature/x", str(top), str(top)).reasons == ()  # a refspec
    git(top, "remote", "add", "origin", str(tmp_path / "r.git"))
    assert local in repocheck.describe(repocheck.check("git push origin main", str(top), str(top)).reasons)
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    git(top, "remote", "set-url", "origin", "git@example.invalid:x/y.git")
    assert repocheck.check("git push origin main", str(top), str(top)).reasons == ()
    # --repo= names the repository too (a directory "a=b" is a path like any other)
    assert local in repocheck.describe(repocheck.check("git push --repo=a=b/r.git", str(top), str(top)).reasons)
    assert repocheck.check("git push --repo=origin", str(top), str(top)).reasons == ()


@pytest.mark.parametrize("word, local", [
    ("file:///srv/r.git", True), ("../r.git", True), ("/srv/r.git", True), ("~/r.git", True),
    ("./a:b", True),  # a path whose name holds ":" (the host part is before the first "/")
    ("https://example.invalid/r.git", False), ("ssh://h/r", False), ("a/b://c", False),
    ("git@example.invalid:x/y.git", False), ("host:path/r", False), ("origin", False),
    ("-x/y", False), ("main", False),
])
def test_which_remote_urls_are_on_this_machine(word, local):
    assert repocheck._is_local_url(word) is local


def test_a_commondir_outside_the_working_directory_asks(tmp_path):
    """A `.git` directory inside, whose `commondir` file makes git read the refs, objects and
    config of a repository outside (`git show HEAD:secret` read it, allowed)."""
    outside = make_repo(tmp_path / "outside")
    root = tmp_path / "root"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "commondir").write_text(str(outside / ".git") + "\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert "(commondir)" in repocheck.describe(repocheck.check("git show HEAD", str(root), str(root)).reasons)
    # a linked worktree of a repository inside the working directory is its own: no reason
    main = make_repo(tmp_path / "r")
    git(main, "commit", "-q", "--allow-empty", "-m", "x")
    git(main, "worktree", "add", "-q", str(main / "wt"))
    assert repocheck.check("git status", str(main / "wt"), str(main)).reasons == ()


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
    # a submodule's git directory whose config git cannot read: its programs are unknown
    top = make_repo(tmp_path / "t")
    modules = submodule_git_dir(top, "sub", "[broken\n")
    reasons = repocheck.describe(repocheck.check("git status", str(top), str(top)).reasons)
    assert f"git cannot read the config {modules / 'config'}: fatal: bad config" in reasons


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


# -- the parts on their own (found by `make mutation`) --------------------------------------

E = repocheck._Entry
HOME_CFG = "/home/me/.gitconfig"


def own(key: str, value: str | None, scope: str = "global") -> repocheck._Entry:
    """An entry of the user's own config file (outside every working directory here)."""
    return E(scope, f"file:{HOME_CFG}", key, value, HOME_CFG)


def repo_entry(key: str, value: str | None, root: str = "/w/proj") -> repocheck._Entry:
    path = f"{root}/.git/config"
    return E("local", f"file:{path}", key, value, path)


@pytest.mark.parametrize("count", ["x", "-3", ""])
def test_config_env_starts_at_zero_after_a_bogus_count(count):
    env = repocheck.config_env([("k.a", "v")], {"GIT_CONFIG_COUNT": count})
    assert env == {"GIT_CONFIG_KEY_0": "k.a", "GIT_CONFIG_VALUE_0": "v", "GIT_CONFIG_COUNT": "1"}


def test_neutral_env_values_without_user_config():
    env = repocheck.neutral_env([], "/w/proj", {})
    pairs = pairs_of(env)
    assert pairs[0] == ("safe.barerepository", "explicit")
    assert ("core.fsmonitor", "false") in pairs and ("core.hookspath", os.devnull) in pairs
    assert ("core.askpass", "") in pairs  # no SSH_ASKPASS either: no askpass program at all
    assert ("credential.helper", "") in pairs
    keys = [k for k, _ in pairs]
    # no value runs nothing for these: left unset (a repository setting one makes the call ask)
    assert "diff.external" not in keys and "gpg.ssh.defaultkeycommand" not in keys
    assert "GIT_SSH_COMMAND" not in env
    assert len(keys) == len(set(keys))  # one value each


def test_neutral_env_keeps_the_users_own_values_and_only_theirs():
    entries = [
        own("core.sshCommand", "myssh"),
        own("diff.external", "difft"),
        own("core.askPass", "/usr/bin/mypass"),
        own("credential.helper", ""),  # (an empty value of the user's resets their list)
        own("credential.helper", "store"),
        own("core.editor", "vi"), own("core.editor", "nano"),  # the last one wins, as in git
        own("core.pager", None),  # a key without a value is no value
        E("command", "command line:", "core.fsmonitor", "/usr/bin/watchman-hook", None),
        E("command", "command line:", "safe.bareRepository", "all", None),  # (the probe's own)
        repo_entry("gpg.program", "evil"),
        E("global", "file:/w/proj/home/.gitconfig", "core.hooksPath", "evil", "/w/proj/home/.gitconfig"),
        E("global", "blob:abc", "gpg.x509.program", "evil", None),
    ]
    env = repocheck.neutral_env(entries, "/w/proj", {"GIT_SSH": "/opt/ssh", "SSH_ASKPASS": "/x"})
    pairs = pairs_of(env)
    got = dict(pairs)
    assert got["core.sshcommand"] == "myssh" and "GIT_SSH_COMMAND" not in env
    assert got["diff.external"] == "difft"
    assert got["core.askpass"] == "/usr/bin/mypass"
    assert got["core.editor"] == "nano"
    assert got["core.pager"] == "cat"
    assert got["core.fsmonitor"] == "/usr/bin/watchman-hook"
    assert got["safe.barerepository"] == "explicit"
    assert got["gpg.program"] == "gpg" and got["core.hookspath"] == os.devnull
    assert got["gpg.x509.program"] == "gpgsm"
    assert [v for k, v in pairs if k == "credential.helper"] == ["", "store"]


def test_git_ssh_command_of_the_user_beats_git_ssh():
    env = repocheck.neutral_env([], "/w/proj", {"GIT_SSH": "/opt/ssh", "GIT_SSH_COMMAND": "ssh -v"})
    assert env["GIT_SSH_COMMAND"] == "ssh -v"
    assert "core.sshcommand" not in dict(pairs_of(env))


def test_unneutralised_keys_need_the_repository_to_set_them():
    root = "/w/proj"
    gitdir = f"{root}/.git"
    external = repo_entry("diff.external", "evil")
    keycmd = repo_entry("gpg.ssh.defaultKeyCommand", "evil")
    assert repocheck._unneutralised([external, keycmd], root, {}, gitdir) == [
        "diff.external = evil (in .git/config)", "gpg.ssh.defaultKeyCommand = evil (in .git/config)"]
    # the user's own value, or GIT_EXTERNAL_DIFF, decides instead
    assert repocheck._unneutralised([own("diff.external", "difft"), external], root, {}, gitdir) == []
    assert repocheck._unneutralised([external], root, {"GIT_EXTERNAL_DIFF": "x"}, gitdir) == []
    assert repocheck._unneutralised([own("gpg.ssh.defaultKeyCommand", "k")], root, {}, gitdir) == []
    assert repocheck._unneutralised([repo_entry("core.fsmonitor", "evil")], root, {}, gitdir) == []
    # a "global" file inside the repository being checked is the repository's
    inside = E("global", f"file:{gitdir}/x", "diff.external", "evil", f"{gitdir}/x")
    assert len(repocheck._unneutralised([inside], root, {}, gitdir)) == 1


def test_what_counts_as_the_users_own():
    root = "/w/proj"
    assert repocheck._trusted(own("a.b", "v"), root, ())
    assert repocheck._trusted(own("a.b", "v", scope="system"), root, ())
    assert not repocheck._trusted(own("a.b", "v", scope="local"), root, ())
    assert not repocheck._trusted(own("a.b", "v", scope="worktree"), root, ())
    assert not repocheck._trusted(E("global", "blob:x", "a.b", "v", None), root, ())
    assert repocheck._trusted(E("command", "command line:", "a.b", "v", None), root, ())
    assert not repocheck._trusted(E("command", "command line:", "safe.bareRepository", "all", None), root, ())
    inside = E("global", "file:/w/proj/h/.gitconfig", "a.b", "v", "/w/proj/h/.gitconfig")
    assert not repocheck._trusted(inside, root, ())
    assert repocheck._trusted(own("a.b", "v"), root, ("/elsewhere",))
    assert not repocheck._trusted(own("a.b", "v"), root, ("/home/me",))
    assert not repocheck._trusted(E("global", "file:/w/proj", "a.b", "v", "/w/proj"), root, ())
    assert repocheck._trusted(E("global", "file:/w/project", "a.b", "v", "/w/project"), root, ())


@pytest.mark.parametrize("key, value, named", [
    ("filter.x.clean", None, True),  # (a key given without a value)
    ("core.bare", None, False),
    ("user.name", "  !bob", True),
    ("user.name", "bo!b", False),
    ("safe.bareRepository", "all", False),
    ("filter.lfs.smudge", "git-lfs smudge -- %f", False),
    ("filter.lfs.process", "git-lfs filter-process", False),
    ("filter.lfs.process", "git-lfs smudge -- %f", True),
])
def test_which_keys_name_a_program_more(key, value, named):
    assert repocheck.untrusted_program(key, value) is named


def test_a_finding_shows_the_value_bounded_and_on_one_line():
    root = "/w/proj"
    assert repocheck._finding(E("local", "blob:abc", "filter.x.clean", None, None), root) == \
        "filter.x.clean = (no value) (in blob:abc)"
    long = "x" * 100
    assert repocheck._finding(repo_entry("diff.t.textconv", long), root) == \
        f"diff.t.textconv = {long} (in .git/config)"
    assert repocheck._finding(repo_entry("diff.t.textconv", long + "y"), root) == \
        f"diff.t.textconv = {long}… (in .git/config)"
    assert repocheck._finding(repo_entry("diff.t.textconv", "a\nb"), root) == \
        "diff.t.textconv = a\\nb (in .git/config)"
    outside = E("local", "file:/else/config", "diff.t.textconv", "v", "/else/config")
    assert repocheck._finding(outside, root) == "diff.t.textconv = v (in /else/config)"


def test_inside_and_shown():
    assert repocheck._inside("/w/proj", "/w/proj") and repocheck._inside("/w/proj/a", "/w/proj/")
    assert not repocheck._inside("/w/project", "/w/proj") and not repocheck._inside("/w", "/w/proj")
    assert repocheck._inside("/anything", "/")
    assert repocheck._shown("/w/proj", "/w/proj") == "."
    assert repocheck._shown("/w/proj/a/b", "/w/proj") == "a/b"
    assert repocheck._shown("/w/other", "/w/proj") == "/w/other"


def test_parse_config_reads_scope_origin_key_and_value(tmp_path):
    out = (b"global\0file:/h/.gitconfig\0user.name\nt\0"
           b"local\0file:.git/config\0core.bare\0"
           b"command\0command line:\0a.b\nx\ny\0")
    entries = repocheck._parse_config(out, str(tmp_path))
    assert entries == [
        E("global", "file:/h/.gitconfig", "user.name", "t", "/h/.gitconfig"),
        E("local", "file:.git/config", "core.bare", None, str(tmp_path / ".git" / "config")),
        E("command", "command line:", "a.b", "x\ny", None),
    ]
    assert repocheck._parse_config(b"", str(tmp_path)) == []
    # (git ends every record with NUL; a last one without it still counts)
    assert repocheck._parse_config(b"global\0file:/h\0a.b\nv", str(tmp_path)) == [
        E("global", "file:/h", "a.b", "v", "/h")]
    with pytest.raises(repocheck._Unreadable):
        repocheck._parse_config(b"global\0file:/h\0", str(tmp_path))


def test_git_options_read_the_words_before_the_command():
    opts = repocheck._git_options
    assert opts(["git"]) == ([], None, None)
    assert opts(["git", "-C"]) == ([], None, None)
    assert opts(["git", "-C", "a"]) == (["a"], None, None)
    assert opts(["git", "-C", "a", "-c", "x.y=z", "--no-pager", "-C", "b", "lg", "-C", "c"]) == \
        (["a", "b"], "lg", None)
    assert opts(["git", "--git-dir=/x", "status"])[2] == "it names another git directory or work tree (--git-dir=/x)"
    assert opts(["/usr/bin/git", "-p", "log"]) == ([], "log", None)


def test_cd_targets_are_where_the_command_goes():
    cd = lambda command, environ={"HOME": "/h"}: repocheck._cd_targets(  # noqa: E731
        rules.analyze_command(command), "/w", environ)
    assert cd("cd sub && git status") == (["/w/sub"], None)
    assert cd("cd -P -- sub; pushd /abs; cd") == (["/w/sub", "/abs", "/h"], None)
    assert cd("cd", {}) == ([], "it changes to a directory known only when it runs")
    assert cd("cd", {"HOME": ""})[1] is not None
    for command in ("cd -", "pushd +1", "popd; cd -2"):
        assert cd(command)[1] == "it changes to a directory known only when it runs", command
    assert cd("cd a; cd -; cd b") == (["/w/a"], "it changes to a directory known only when it runs")
    # a wrapper's directory, and the cd after it; a path whose directory is named like a wrapper
    assert cd("sudo -D a true; env X=1 true; cd b") == (["/w/a", "/w/b"], None)
    assert cd("env/run; sudo/x; cd b") == (["/w/b"], None)


def test_which_commands_run_git():
    assert repocheck.runs_git("git status") and repocheck.runs_git("/usr/bin/git log")
    assert repocheck.runs_git("git-upload-pack .") and repocheck.runs_git("xargs git lg")
    assert repocheck.runs_git("git lg $(")  # unparsable: its loose words count
    assert not repocheck.runs_git("ls -la") and not repocheck.runs_git("gitk")
    assert not repocheck.runs_git("echo git")
    # a program in a directory named like git is not git (its basename decides)
    assert not repocheck.runs_git("git-tools/run status") and not repocheck.runs_git("./git/run")


def reasons_of(command: str, cwd: Path, root: Path | None = None, **kw) -> tuple[str, ...]:
    return repocheck.check(command, str(cwd), str(root or cwd), **kw).reasons


def test_git_answers_are_bounded_in_size(tmp_path):
    probe = repocheck._Probe("git", os.environ)
    status, out, _ = probe.run(["--version"], str(tmp_path))
    assert status == 0 and out.startswith(b"git version ")
    assert probe.run(["--version"], str(tmp_path), limit=len(out))[1] == out
    with pytest.raises(repocheck._Unreadable, match="too large"):
        probe.run(["--version"], str(tmp_path), limit=len(out) - 1)


def test_the_submodules_of_a_large_index_are_all_found(tmp_path):
    """ls-files' records arrive in chunks of the pipe: a record cut between two chunks counts."""
    root = make_repo(tmp_path / "r")
    commit = git(root, "rev-parse", "HEAD").strip()
    blob = git(root, "rev-parse", "HEAD:a.txt").strip()
    subs = [f"d/sub-{i:05d}-{'x' * 40}" for i in range(3000)]
    lines = [f"100644 {blob}\td/0-file", f"100644 {blob}\tz-file"] + [f"160000 {commit}\t{p}" for p in subs]
    subprocess.run(["git", "update-index", "--index-info"], cwd=root, check=True,
                   input="\n".join(lines) + "\n", text=True)
    probe = repocheck._Probe("git", os.environ)
    assert repocheck._gitlinks(probe, str(root)) == subs


def test_what_git_is_is_asked_once(tmp_path, monkeypatch):
    import shutil
    git_path = shutil.which("git")
    monkeypatch.setattr(repocheck, "_ABOUT", {})
    probe = repocheck._Probe(git_path, os.environ)
    about = probe.about()
    shown = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[2]
    assert about.version == tuple(int(n) for n in shown.split(".")[:2])
    assert {"status", "log", "diff"} <= about.builtins and "lg" not in about.builtins

    def no_git(*args, **kw):
        raise AssertionError("git run again")

    monkeypatch.setattr(probe, "run", no_git)
    assert probe.about() is about
    link = tmp_path / "git"
    link.symlink_to(git_path)  # another path: asked again, and only that one is kept
    other = repocheck._Probe(str(link), os.environ).about()
    assert other == about and list(repocheck._ABOUT) == [(str(link), *list(repocheck._ABOUT)[0][1:])]


def test_no_answer_from_git_is_no_version(tmp_path, monkeypatch):
    monkeypatch.setattr(repocheck, "_ABOUT", {})
    fake = tmp_path / "git"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert repocheck._Probe(str(fake), os.environ).about() == repocheck._About((0, 0), frozenset())


def test_at_most_so_many_repositories_are_read(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for i in range(17):
        git(root, "init", "-q", f"r{i}")
    command = lambda n: "; ".join(f"git -C r{i} status" for i in range(n))  # noqa: E731
    assert reasons_of(command(16), root) == ()  # (MAX_REPOSITORIES)
    assert reasons_of(command(17), root) == (
        "it has more nested repositories than DashFloat checks",)
    # the same repository seen from many directories is read once
    repo = make_repo(tmp_path / "one")
    for i in range(17):
        (repo / f"d{i}").mkdir()
    many = "; ".join(f"git -C d{i} status" for i in range(17))
    assert reasons_of(many, repo) == ()


def nested_chain(root: Path, levels: int) -> Path:
    """A repository with a submodule with a submodule... `levels` below it; the innermost."""
    paths = [root / "/".join(["s"] * n) if n else root for n in range(levels + 1)]
    make_repo(paths[-1])
    for parent, child in zip(reversed(paths[:-1]), reversed(paths[1:]), strict=True):
        make_repo(parent)
        git(parent, "add", child.name)
        git(parent, "commit", "-qm", "sub")
    return paths[-1]


def test_submodules_are_read_so_deep(tmp_path):
    fine = tmp_path / "fine"
    inner = nested_chain(fine, 3)  # (MAX_DEPTH is 4)
    assert reasons_of("git status", fine) == ()
    config(inner, "filter.x.clean", "evil")  # the innermost is read
    assert "filter.x.clean = evil (in s/s/s/.git/config)" in repocheck.describe(reasons_of("git status", fine))
    deep = tmp_path / "deep"
    nested_chain(deep, 4)
    assert reasons_of("git status", deep) == ("its submodules are nested deeper than DashFloat checks",)


def test_the_first_bad_submodule_ends_the_check(tmp_path):
    root = make_repo(tmp_path / "r")
    for name in ("a", "b"):
        config(make_repo(root / name), "filter.x.clean", "evil")
        git(root, "add", name)
    git(root, "commit", "-qm", "subs")
    assert reasons_of("git status", root) == (
        "git would run what the repository's config names: filter.x.clean = evil (in a/.git/config)",)


def test_unpopulated_submodules_are_skipped(tmp_path):
    """A clone without --recursive: gitlinks whose directory is empty or missing."""
    root = make_repo(tmp_path / "r")
    commit = git(root, "rev-parse", "HEAD").strip()
    for name in ("empty", "missing"):
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{commit},{name}")
    (root / "empty").mkdir()
    assert reasons_of("git status", root) == ()


def test_findings_beyond_a_few_are_counted(tmp_path):
    root = make_repo(tmp_path / "r")
    for n in range(3):  # (MAX_SHOWN)
        config(root, f"filter.f{n}.clean", "evil")
    assert reasons_of("git status", root)[0].endswith("filter.f2.clean = evil (in .git/config)")
    config(root, "diff.t.textconv", "evil")
    config(root, "merge.m.driver", "evil")
    assert reasons_of("git status", root) == (
        "git would run what the repository's config names: filter.f0.clean = evil (in .git/config); "
        "filter.f1.clean = evil (in .git/config); filter.f2.clean = evil (in .git/config) and 2 more",)


def test_a_git_symlink_to_another_repository_asks(tmp_path):
    elsewhere = make_repo(tmp_path / "elsewhere")
    root = tmp_path / "root"
    root.mkdir()
    (root / ".git").symlink_to(elsewhere / ".git")
    reasons = repocheck.describe(reasons_of("git status", root))
    assert f"the repository's .git points outside the working directory, to {elsewhere / '.git'}" in reasons


def test_a_repository_git_cannot_read_asks(tmp_path):
    root = make_repo(tmp_path / "r")
    assert reasons_of("cd .git && git status", root) == ()  # (git refuses a bare repository: so does the command's)
    config(root, "core.repositoryformatversion", "99")
    assert reasons_of("git status", root) == (
        "git cannot read the repository at .: fatal: Expected git repo version <= 1, found 99",)


def test_a_submodules_own_directory_as_the_working_directory(tmp_path):
    """Its git directory is in the enclosing repository's .git/modules: not a redirection."""
    upstream = make_repo(tmp_path / "upstream")
    top = make_repo(tmp_path / "top")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    assert (top / "sub" / ".git").is_file()
    assert reasons_of("git status", top / "sub") == ()
    assert reasons_of("git status", top) == ()


def test_cd_home_checks_the_home_repository(tmp_path):
    root = make_repo(tmp_path / "r")
    home = make_repo(tmp_path / "home2")
    config(home, "filter.x.clean", "evil")
    environ = {**os.environ, "HOME": str(home)}
    assert "filter.x.clean" in repocheck.describe(reasons_of("cd && git status", root, environ=environ))
    environ.pop("HOME")
    assert "known only when it runs" in repocheck.describe(reasons_of("cd && git status", root, environ=environ))


@pytest.mark.parametrize("version, older", [((2, 37), True), ((2, 38), False), ((1, 99), True), ((3, 0), False)])
def test_the_oldest_git_that_keeps_the_settings(tmp_path, monkeypatch, version, older):
    root = make_repo(tmp_path / "r")
    monkeypatch.setattr(repocheck._Probe, "about", lambda self: repocheck._About(version, frozenset({"status"})))
    assert bool(reasons_of("git status", root)) is older


def test_a_config_listing_above_4_mib_is_not_read(tmp_path):
    root = make_repo(tmp_path / "r")
    probe = repocheck._Probe("git", os.environ)
    args = ["config", "--list", "-z", "--show-scope", "--show-origin"]

    def listing_of(value_size: int) -> int:
        (root / ".git" / "big.cfg").write_text(f"[x]\n\ty = {'a' * value_size}\n")
        return len(probe.run(args, str(root), env=probe.config_env, limit=1 << 30)[1])

    git(root, "config", "include.path", "big.cfg")
    size = 4 * 1024 * 1024 + 1 - listing_of(0)
    assert listing_of(size) == 4 * 1024 * 1024 + 1
    with pytest.raises(repocheck._Unreadable, match="too large"):
        probe.config(str(root))
    listing_of(size - 1)
    assert ("x.y", "a" * (size - 1)) in [(e.key, e.value) for e in probe.config(str(root))]


def test_a_repository_path_with_a_newline_cannot_be_read(tmp_path):
    root = tmp_path / "x\ny"
    root.mkdir()
    git(root, "init", "-q")
    assert reasons_of("git status", root) == ("git does not see a work tree at .",)


def test_an_index_git_cannot_list_asks(tmp_path):
    root = make_repo(tmp_path / "r")
    (root / ".git" / "index").write_bytes(b"garbage")
    assert reasons_of("git status", root) == (
        "git cannot list the repository's files: fatal: .git/index: index file smaller than expected",)


def fake_git(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fakegit" / "git"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("body", ["exec sleep {mark}", "exec >&- 2>&-; exec sleep {mark}"])
def test_a_git_that_hangs_is_killed_at_the_deadline(tmp_path, body):
    """Whether it hangs writing nothing, or after closing its output."""
    from tests.procs import live_with_marker, wait_for

    mark = f"7.{os.getpid()}{len(body)}"
    probe = repocheck._Probe(fake_git(tmp_path, body.format(mark=mark)), os.environ, timeout=0.5)
    with pytest.raises(repocheck._Unreadable, match="git took too long to read the repository"):
        probe.run(["status"], str(tmp_path))
    assert wait_for(lambda: not live_with_marker(mark)), live_with_marker(mark)


def test_a_git_that_cannot_start(tmp_path):
    path = tmp_path / "git"
    path.write_text("#!/bin/sh\n")  # not executable
    with pytest.raises(repocheck._Unreadable, match="could not run git: Permission denied"):
        repocheck._Probe(str(path), os.environ).run(["--version"], str(tmp_path))


def test_what_a_git_says_on_failure(tmp_path):
    probe = repocheck._Probe(fake_git(tmp_path, "echo out; echo 'first' >&2; echo 'second' >&2; exit 3"),
                             os.environ)
    assert probe.run(["x"], str(tmp_path)) == (3, b"out\n", "first")
    with pytest.raises(repocheck._Unreadable, match="^git cannot read the config: first$"):
        probe.config(str(tmp_path))
    quiet = repocheck._Probe(fake_git(tmp_path, "exit 4"), os.environ)
    with pytest.raises(repocheck._Unreadable, match="^git cannot read the config: exit status 4$"):
        quiet.config(str(tmp_path))
    with pytest.raises(repocheck._Unreadable, match="^git cannot list the repository's files: exit status 4$"):
        repocheck._gitlinks(quiet, str(tmp_path))
    long = repocheck._Probe(fake_git(tmp_path, "head -c 5000 /dev/zero | tr '\\0' e >&2; exit 1"), os.environ)
    assert long.run(["x"], str(tmp_path))[2] == "e" * 4096  # the first 4 KiB of what git says


def test_verdicts_and_entries_are_frozen(tmp_path):
    import dataclasses

    verdict = repocheck.check("ls", str(tmp_path), str(tmp_path))
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.reasons = ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        own("a.b", "v").value = "w"
    with pytest.raises(dataclasses.FrozenInstanceError):
        repocheck._About((2, 40), frozenset()).version = (3, 0)  # (shared through the cache)


def test_a_spent_time_budget_starts_no_git(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(repocheck.subprocess, "Popen", lambda *a, **kw: started.append(a))
    probe = repocheck._Probe("git", os.environ, timeout=0.0)
    with pytest.raises(repocheck._Unreadable, match="too long"):
        probe.run(["--version"], str(tmp_path))
    assert started == []


def test_a_budget_under_a_second_is_still_used(tmp_path):
    probe = repocheck._Probe("git", os.environ, timeout=0.8)
    assert probe.run(["--version"], str(tmp_path))[1].startswith(b"git version ")


def test_git_runs_in_its_own_session_without_our_descriptors(tmp_path):
    read, write = os.pipe()
    high = os.dup2(read, 97, inheritable=True)
    try:
        probe = repocheck._Probe(fake_git(tmp_path, "cut -d' ' -f6 /proc/$$/stat; echo $$; ls /proc/$$/fd"),
                                 os.environ)
        out = probe.run(["x"], str(tmp_path))[1].decode().split()
    finally:
        os.close(high)
        os.close(read)
        os.close(write)
    assert out[0] == out[1]  # a session leader: the session id is its own pid
    assert str(high) not in out[2:]


def test_a_killed_git_is_reaped(tmp_path):
    pidfile = tmp_path / "pid"
    probe = repocheck._Probe(fake_git(tmp_path, f"echo $$ > '{pidfile}'; exec sleep 30"), os.environ, timeout=0.5)
    with pytest.raises(repocheck._Unreadable, match="too long"):
        probe.run(["x"], str(tmp_path))
    pid = int(pidfile.read_text())
    assert not os.path.exists(f"/proc/{pid}")  # not even a zombie


def test_the_last_record_may_lack_its_nul(tmp_path):
    sub = repocheck._Probe(fake_git(tmp_path, "printf '100644 x 0\\tfile\\000160000 x 0\\tsub'"), os.environ)
    assert repocheck._gitlinks(sub, str(tmp_path)) == ["sub"]
    file = repocheck._Probe(fake_git(tmp_path, "printf '160000 x 0\\tsub\\000100644 x 0\\tfile'"), os.environ)
    assert repocheck._gitlinks(file, str(tmp_path)) == ["sub"]


def test_git_is_read_in_english_whatever_the_users_language(tmp_path):
    """The probe recognises git's "not a git repository" (and reasons quote git in English)."""
    environ = {**os.environ, "LANGUAGE": "de", "LC_ALL": "C.UTF-8"}
    assert reasons_of("git status", tmp_path, environ=environ) == ()
    root = make_repo(tmp_path / "r")
    with (root / ".git" / "config").open("a") as f:
        f.write("[broken\n")
    assert reasons_of("git status", root, environ=environ)[0].startswith(
        "git cannot read the config: fatal: bad config line ")


def test_a_bare_lookalike_is_not_read_even_for_its_config(tmp_path):
    """git refuses it (safe.bareRepository=explicit), so a broken config in it is no reason."""
    root = tmp_path / "root"
    for sub in ("objects", "refs"):
        (root / sub).mkdir(parents=True)
    (root / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "config").write_text("[core]\n\tbare = true\n[broken\n")
    assert reasons_of("git status", root) == ()


def test_a_full_path_to_git_in_an_unparsable_command_runs_git():
    assert repocheck.runs_git("/usr/bin/git lg $(") and repocheck.runs_git("/opt/git-2/bin/git-lg $(")
    assert not repocheck.runs_git("/usr/bin/gitk $(")


def test_a_submodule_path_may_hold_a_tab(tmp_path):
    probe = repocheck._Probe(fake_git(tmp_path, "printf '160000 x 0\\ta\\tb\\000'"), os.environ)
    assert repocheck._gitlinks(probe, str(tmp_path)) == ["a\tb"]


def test_a_gitlink_that_is_a_symlink_to_a_directory_is_not_followed(tmp_path):
    """git does not enter it either: a link to a directory of another repository is no submodule."""
    other = make_repo(tmp_path / "other")
    config(other, "filter.x.clean", "evil")
    (other / "dir").mkdir()
    root = make_repo(tmp_path / "r")
    commit = git(root, "rev-parse", "HEAD").strip()
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{commit},sub")
    (root / "sub").symlink_to(other / "dir")
    assert reasons_of("git status", root) == ()


def test_cd_with_two_operands_goes_to_the_first(tmp_path):
    """/bin/sh (dash) changes to the first operand and ignores the rest."""
    root = tmp_path / "root"
    root.mkdir()
    config(make_repo(root / "sub"), "filter.x.clean", "evil")
    for command in ("cd sub x && git status", "cd sub - && git status", "cd sub +1 && git status"):
        assert "filter.x.clean" in repocheck.describe(reasons_of(command, root)), command


def test_submodule_git_dirs_are_read_up_to_the_limit_and_named_in_order(tmp_path):
    top = make_repo(tmp_path / "t")
    for i in range(repocheck.MAX_REPOSITORIES):
        submodule_git_dir(top, f"m{i:02}", "[core]\n\tbare = false\n")
    assert repocheck.check("git log -p", str(top), str(top)).reasons == ()
    submodule_git_dir(top, "m99", "[core]\n\tbare = false\n")
    assert repocheck.describe(repocheck.check("git log -p", str(top), str(top)).reasons) == \
        "it has more submodules than DashFloat checks"
    # the findings in the order of the names, whatever order the directory lists them in
    other = make_repo(tmp_path / "u")
    names = ["a", "b", "c", "d", "e", "f"]
    for name in names:
        submodule_git_dir(other, name, f"[diff]\n\texternal = evil-{name}\n")
    reasons = repocheck.describe(repocheck.check("git log -p", str(other), str(other)).reasons)
    shown = [n for n in names if f"evil-{n} (in " in reasons]
    assert len(shown) == repocheck.MAX_SHOWN and shown == names[:repocheck.MAX_SHOWN], reasons


def test_which_keys_are_includes_and_which_included_files_ask(tmp_path):
    """An include the command may write (in the work tree, or not there yet) asks before a
    command that writes; one outside that exists is read; a key that merely ends in `.path`
    (a submodule's path) is no include."""
    top = make_repo(tmp_path / "t")
    config(top, "submodule.vendor.path", "vendor")
    assert repocheck.check("git stash pop", str(top), str(top)).reasons == ()
    config(top, "includeIf.gitdir:/nowhere/.path", str(tmp_path / "outside.cfg"))  # not there yet
    may_write = "a file the command itself may write"
    assert may_write in repocheck.describe(repocheck.check("git stash pop", str(top), str(top)).reasons)
    (tmp_path / "outside.cfg").write_text("[core]\n\tbare = false\n")  # there, outside, harmless
    assert repocheck.check("git stash pop", str(top), str(top)).reasons == ()
    (top / "inside.cfg").write_text("[core]\n\tbare = false\n")  # harmless, but in the work tree
    config(top, "include.path", "../inside.cfg")
    assert may_write in repocheck.describe(repocheck.check("git stash pop", str(top), str(top)).reasons)


def test_an_include_in_the_work_tree_asks_only_before_a_command_that_writes_the_work_tree(tmp_path):
    """A team's shared config in the work tree (`include.path = ../.gitconfig`) made every
    git add and commit ask; only a command that writes the work tree may rewrite it before
    a git child reads it. One in the git directory asks before any command that writes."""
    top = make_repo(tmp_path / "t")
    (top / ".gitconfig").write_text('[alias]\n\tst = status\n')
    config(top, "include.path", "../.gitconfig")
    may_write = "includes ../.gitconfig, a file the command itself may write"
    for command in ("git add a", "git commit -m x", "git tag v1", "git branch b", "git fetch", "git status"):
        assert repocheck.check(command, str(top), str(top)).reasons == (), command
    for command in ("git checkout -b z", "git stash", "git merge b", "git reset --hard", "git restore a",
                    "git pull", "git commit -m x && git checkout main"):
        assert may_write in repocheck.describe(repocheck.check(command, str(top), str(top)).reasons), command
    config(top, "--unset", "include.path")
    config(top, "include.path", "COMMIT_EDITMSG")  # in the git directory: commit writes it
    in_git = "includes COMMIT_EDITMSG, a file the command itself may write"
    assert in_git in repocheck.describe(repocheck.check("git commit -m x", str(top), str(top)).reasons)
    assert repocheck.check("git log", str(top), str(top)).reasons == ()


def test_a_work_tree_git_cannot_list_asks(tmp_path, monkeypatch):
    top = make_repo(tmp_path / "t")
    real = repocheck._Probe.run

    def run(self, argv, cwd, **kw):
        if argv[:2] == ["ls-files", "-z"] and "--others" in argv:
            return 128, b"", "fatal: index file corrupt"
        return real(self, argv, cwd, **kw)

    monkeypatch.setattr(repocheck._Probe, "run", run)
    assert repocheck.describe(repocheck.check("git status", str(top), str(top)).reasons) == \
        "git cannot list the repository's files: fatal: index file corrupt"


def test_a_rebase_in_progress_asks_for_what_it_would_run_and_only_that(tmp_path):
    top = make_repo(tmp_path / "t")
    state = top / ".git" / "rebase-merge"
    state.mkdir()
    (state / "git-rebase-todo").write_text("# a comment\npick 1234 one\nbreak\n")
    (state / "strategy").write_text("ort\n")
    assert repocheck.check("git rebase --continue", str(top), str(top)).reasons == ()
    (state / "git-rebase-todo").write_text("pick 1234 one\n  x make test\nexec\n")
    (state / "strategy").write_text("evil\n")
    assert repocheck.describe(repocheck.check("git rebase --continue", str(top), str(top)).reasons) == \
        "a rebase or cherry-pick in progress would run: exec make test; exec ; strategy evil"
    other = make_repo(tmp_path / "u")  # a cherry-pick's options: a config file
    (other / ".git" / "sequencer").mkdir()
    (other / ".git" / "sequencer" / "opts").write_text("[options]\n\tstrategy = evil\n")
    assert "strategy evil" in repocheck.describe(repocheck.check("git cherry-pick --continue", str(other), str(other)).reasons)
    (other / ".git" / "sequencer" / "opts").write_text("[options]\n\tstrategy = recursive\n")
    assert repocheck.check("git cherry-pick --continue", str(other), str(other)).reasons == ()
    # git reads the strategy file whole, less its line end: "ort x" is no built-in strategy
    (state / "git-rebase-todo").write_text("pick 1234 one\n")
    for text, named in [("ort\r\n", None), ("ort x\n", "ort x"), ("ort\nx\n", "ort\\nx")]:
        (state / "strategy").write_bytes(text.encode())
        found = repocheck.describe(repocheck.check("git rebase --continue", str(top), str(top)).reasons)
        assert found == ("" if named is None else f"a rebase or cherry-pick in progress would run: strategy {named}")


def test_the_aliases_git_runs_itself_are_found_whatever_the_command(tmp_path):
    top = make_repo(tmp_path / "t")
    config(top, "alias.lg", "log --oneline")  # looked up only for `git lg`
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    for name in ("remote-x", "merge-evil", "credential-store2"):
        config(top, f"alias.{name}", "!evil")
        assert f"alias.{name} = !evil" in repocheck.describe(repocheck.check("git status", str(top), str(top)).reasons)
        git(top, "config", "--unset", f"alias.{name}")


def test_a_remote_that_is_a_directory_here_asks_and_one_that_is_a_name_does_not(tmp_path):
    """git takes a word for a path when no remote has that name (`git push evil.git`)."""
    top = make_repo(tmp_path / "t")
    (top / "origin").mkdir()
    (top / "mirror").mkdir()
    config(top, "remote.origin.url", "https://example.invalid/x.git")
    assert repocheck.check("git push origin main", str(top), str(top)).reasons == ()
    assert repocheck.check("git fetch", str(top), str(top)).reasons == ()
    assert "git push talks to a repository on this machine (mirror)" in repocheck.describe(
        repocheck.check("git push mirror main", str(top), str(top)).reasons)
    assert "git fetch talks to a repository on this machine (mirror)" in repocheck.describe(
        repocheck.check("git -C . fetch mirror", str(top), str(top)).reasons)
    assert "git ls-remote talks to" in repocheck.describe(
        repocheck.check("git ls-remote file:///srv/x.git", str(top), str(top)).reasons)
    assert repocheck.check("git archive --format=tar HEAD mirror", str(top), str(top)).reasons == ()  # a path
    assert "git archive talks to" in repocheck.describe(
        repocheck.check("git archive --remote ../t HEAD", str(top), str(top)).reasons)
    config(top, "url.https://example.invalid/.insteadOf", "gh:")  # a rewrite to elsewhere: fine
    assert repocheck.check("git fetch", str(top), str(top)).reasons == ()
    config(top, "url.file:///srv/.insteadOf", "ex:")
    assert "rewrites URLs to a repository on this machine (file:///srv/)" in repocheck.describe(
        repocheck.check("git fetch", str(top), str(top)).reasons)
    assert repocheck.check("git status", str(top), str(top)).reasons == ()  # talks to no repository


def test_links_out_of_the_git_directory_ask_and_links_inside_it_or_hooks_do_not(tmp_path):
    """git reads and writes through a link: one to a file outside (a reflog appended to an rc
    file), to the work tree (a config a command rewrites mid-command), into another
    repository's objects (gc rewrote its pack)."""
    top = make_repo(tmp_path / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(top / ".git" / "HEAD", top / ".git" / "info" / "inside-link")  # inside the git dir
    (top / ".git" / "hooks").rename(top / ".git" / "hooks-real")
    os.symlink(outside, top / ".git" / "hooks")  # shared hooks: core.hooksPath keeps them from running
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    os.symlink(outside / "x", top / ".git" / "refs" / "heads" / "evil")
    assert f".git/refs/heads/evil -> {outside / 'x'}" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)
    other = make_repo(tmp_path / "u")
    store = tmp_path / "store"
    (other / ".git" / "objects").rename(store)
    os.symlink(store, other / ".git" / "objects")
    assert f".git/objects -> {store}" in repocheck.describe(repocheck.check("git status", str(other), str(other)).reasons)
    for name, target in (("config", "cfg"), ("logs", "stuff/logs")):  # into the work tree
        repo = make_repo(tmp_path / f"w-{name}")
        (repo / target).parent.mkdir(parents=True, exist_ok=True)
        (repo / ".git" / name).rename(repo / target)
        os.symlink(repo / target, repo / ".git" / name)
        assert f".git/{name} -> {repo / target}" in repocheck.describe(
            repocheck.check("git status", str(repo), str(repo)).reasons)
    shared = make_repo(tmp_path / "p")  # a pack directory of another repository's
    (shared / ".git" / "objects" / "pack").rmdir()
    os.symlink(other / ".git" / "objects" / "pack", shared / ".git" / "objects" / "pack")
    assert ".git/objects/pack ->" in repocheck.describe(repocheck.check("git gc", str(shared), str(shared)).reasons)


def test_state_too_long_to_read_asks(tmp_path, monkeypatch):
    monkeypatch.setattr(repocheck, "MAX_STATE_BYTES", 100)
    top = make_repo(tmp_path / "t")
    (top / ".git" / "rebase-merge").mkdir()
    (top / ".git" / "rebase-merge" / "git-rebase-todo").write_text("# padding\n" * 10 + "exec evil\n")
    assert repocheck.describe(repocheck.check("git rebase --continue", str(top), str(top)).reasons) == \
        "its rebase todo list is longer than DashFloat reads"
    other = make_repo(tmp_path / "u")
    (other / ".git" / "objects" / "info" / "alternates").write_text("#\n" * 60 + "/srv/x/objects\n")
    assert "objects/info/alternates is longer" in repocheck.describe(
        repocheck.check("git status", str(other), str(other)).reasons)


def test_a_state_file_of_one_mib_is_read_and_one_byte_more_asks(tmp_path):
    """The bound is 1 MiB exactly: a todo list of that size is read to its last line."""
    top = make_repo(tmp_path / "t")
    (top / ".git" / "rebase-merge").mkdir()
    todo = top / ".git" / "rebase-merge" / "git-rebase-todo"
    tail = "exec evil\n"
    todo.write_text("#" * ((1 << 20) - len(tail) - 1) + "\n" + tail)
    assert todo.stat().st_size == 1 << 20
    assert "would run: exec evil" in repocheck.describe(
        repocheck.check("git rebase --continue", str(top), str(top)).reasons)
    todo.write_text("#" * ((1 << 20) - len(tail)) + "\n" + tail)
    assert repocheck.describe(repocheck.check("git rebase --continue", str(top), str(top)).reasons) == \
        "its rebase todo list is longer than DashFloat reads"


def test_alternates_are_followed_as_deep_as_git_follows_them(tmp_path):
    """git reads a repository's alternates and theirs, six object stores in a chain, and
    ignores the seventh ("nesting too deep"); a cycle ends there too."""
    root = tmp_path / "root"
    secret = make_repo(tmp_path / "secret")
    top = make_repo(root / "t")

    def chain(length: int) -> None:  # top -> s1 -> ... -> s<length>, the last one outside
        stores = [root / f"s{k}" / "objects" for k in range(1, length)] + [secret / ".git" / "objects"]
        (top / ".git" / "objects" / "info" / "alternates").write_text(f"{stores[0]}\n")
        for here, nxt in zip(stores, stores[1:], strict=False):
            (here / "info").mkdir(parents=True, exist_ok=True)
            (here / "info" / "alternates").write_text(f"{nxt}\n")

    chain(6)
    assert f"{secret}/.git/objects (objects/info/alternates)" in repocheck.describe(
        repocheck.check("git status", str(top), str(root)).reasons)
    chain(7)  # git ignores the seventh store: nothing outside is read
    assert repocheck.check("git status", str(top), str(root)).reasons == ()
    (root / "s1" / "objects" / "info" / "alternates").write_text(f"{top}/.git/objects\n")  # a cycle
    assert repocheck.check("git status", str(top), str(root)).reasons == ()


def test_alternates_are_unquoted_and_followed_as_git_does(tmp_path):
    root = tmp_path / "root"
    secret = make_repo(tmp_path / "secret")
    top = make_repo(root / "t")
    (top / ".git" / "objects" / "info" / "alternates").write_text(f'"{secret}/.git/obj\\145cts"\n')
    assert f"{secret}/.git/objects (objects/info/alternates)" in repocheck.describe(
        repocheck.check("git status", str(top), str(root)).reasons)
    chain = make_repo(root / "c")  # inside, but its own alternates lead outside
    (root / "stuff" / "objects" / "info").mkdir(parents=True)
    (root / "stuff" / "objects" / "info" / "alternates").write_text(f"{secret}/.git/objects\n")
    (chain / ".git" / "objects" / "info" / "alternates").write_text("../../../stuff/objects\n")
    assert f"{secret}/.git/objects (objects/info/alternates)" in repocheck.describe(
        repocheck.check("git status", str(chain), str(root)).reasons)


def test_alternates_inside_the_working_directory_do_not_ask(tmp_path):
    root = tmp_path / "root"
    shared = make_repo(root / "shared")
    top = make_repo(root / "t")
    (top / ".git" / "objects" / "info" / "alternates").write_text(
        f"# a comment\n\n{os.path.relpath(shared / '.git' / 'objects', top / '.git' / 'objects')}\n")
    assert repocheck.check("git status", str(top), str(root)).reasons == ()
    assert "(objects/info/alternates)" in repocheck.describe(repocheck.check("git status", str(top), str(top)).reasons)


def test_git_worktree_asks_for_linked_worktrees_outside_but_lists_them(tmp_path):
    top = make_repo(tmp_path / "t")
    git(top, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert repocheck.check("git worktree list", str(top), str(top)).reasons == ()
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    assert f"linked worktrees outside the working directory: {tmp_path / 'wt'}" in repocheck.describe(
        repocheck.check("git worktree remove wt", str(top), str(top)).reasons)
    assert repocheck.check("git worktree prune", str(tmp_path), str(tmp_path)).reasons == ()  # no repository
    inside = make_repo(tmp_path / "r")
    git(inside, "worktree", "add", "-q", str(inside / "wt"))
    assert repocheck.check("git worktree remove wt", str(inside), str(inside)).reasons == ()


def test_the_repositorys_own_connection_settings_ask_before_it_talks_to_a_remote(tmp_path, monkeypatch):
    """http.proxy with http.sslVerify false (or a CA of the repository's) would hand the
    token your credential helper gives for the real host to the proxy."""
    top = make_repo(tmp_path / "t")
    config(top, "remote.origin.url", "https://example.invalid/x.git")
    config(top, "http.https://example.invalid/.proxy", "http://attacker.invalid:8080")
    config(top, "http.sslVerify", "false")
    reasons = repocheck.describe(repocheck.check("git fetch", str(top), str(top)).reasons)
    assert "sets how git connects" in reasons and "http.sslverify = false (in .git/config)" in reasons
    assert "http.https://example.invalid/.proxy = http://attacker.invalid:8080" in reasons
    assert repocheck.check("git status", str(top), str(top)).reasons == ()  # talks to no one
    other = make_repo(tmp_path / "u")
    config(other, "remote.origin.proxy", "http://attacker.invalid:8080")
    assert "remote.origin.proxy" in repocheck.describe(repocheck.check("git pull", str(other), str(other)).reasons)
    # the user's own proxy is theirs
    home_cfg = tmp_path / "home.gitconfig"
    mine = make_repo(tmp_path / "m")
    home_cfg.write_text("[http]\n\tproxy = http://proxy.corp.invalid:3128\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home_cfg))
    assert repocheck.check("git fetch", str(mine), str(mine)).reasons == ()


def test_a_local_repository_is_found_as_git_finds_it(tmp_path):
    """git opens X, X.git, X/.git or a gitdir file X; an option's value is not the repository;
    a branch's remote, remote.pushDefault and the legacy remotes/ and branches/ files name
    one too (a review's pre-receive hook ran behind each)."""
    top = make_repo(tmp_path / "t")
    git(top, "init", "-q", "--bare", "evil.git")
    local = "a repository on this machine"
    for command in ("git push evil main", "git push -o x evil.git main",
                    "git push --recurse-submodules no evil.git main", "git fetch --depth 1 evil",
                    "git archive --remote=evil --format=tar HEAD"):
        assert local in repocheck.describe(repocheck.check(command, str(top), str(top)).reasons), command
    (top / "hidden").write_text("gitdir: evil.git\n")
    assert local in repocheck.describe(repocheck.check("git push hidden main", str(top), str(top)).reasons)
    assert local in repocheck.describe(repocheck.check("git push origin evil", str(top), str(top)).reasons)
    assert repocheck.check("git push origin feature/x", str(top), str(top)).reasons == ()  # a refspec
    for key, value in (("branch.main.remote", "evil.git"), ("branch.main.pushRemote", "evil.git"),
                       ("remote.pushDefault", "evil.git")):
        repo = make_repo(tmp_path / key)
        git(repo, "init", "-q", "--bare", "evil.git")
        config(repo, key, value)
        assert "a branch's remote is a repository on this machine (evil.git)" in repocheck.describe(
            repocheck.check("git push", str(repo), str(repo)).reasons), key
    named = make_repo(tmp_path / "named")
    config(named, "remote.origin.url", "https://example.invalid/x.git")
    config(named, "branch.main.remote", "origin")  # a remote's name: its URL decides
    assert repocheck.check("git push", str(named), str(named)).reasons == ()
    for sub, text in (("remotes", f"URL: {top / 'evil.git'}\nPush: refs/heads/main\n"),
                      ("branches", f"{top / 'evil.git'}#main\n")):
        repo = make_repo(tmp_path / sub)
        (repo / ".git" / sub).mkdir(exist_ok=True)
        (repo / ".git" / sub / "origin").write_text(text)
        assert "(.git/remotes or .git/branches: origin) is a repository on this machine" in repocheck.describe(
            repocheck.check("git push origin", str(repo), str(repo)).reasons), sub


def test_a_work_tree_around_the_working_directory_asks(tmp_path):
    """core.worktree = ../.. with the git dir inside: git diff read a file of the tree outside,
    git reset --hard wrote there."""
    outer = tmp_path / "w"
    outer.mkdir()
    git(outer, "init", "-q")
    proj = make_repo(outer / "proj")
    config(proj, "core.worktree", "../..")
    assert "work tree is outside the working directory" in repocheck.describe(
        repocheck.check("git diff", str(proj), str(proj)).reasons)
    # the working directory inside a repository's tree, its git dir above: that is the user's
    sub = make_repo(tmp_path / "r")
    (sub / "docs").mkdir()
    assert repocheck.check("git diff", str(sub / "docs"), str(sub / "docs")).reasons == ()


def test_config_that_names_a_file_outside_asks(tmp_path):
    top = make_repo(tmp_path / "t")
    config(top, "commit.template", "notes/template.txt")  # inside: fine
    config(top, "format.outputDirectory", "patches")
    assert repocheck.check("git format-patch -1", str(top), str(top)).reasons == ()
    for key, value in (("format.outputDirectory", str(tmp_path / "out")), ("commit.template", "~/.ssh/id_rsa"),
                       ("format.signatureFile", "../../secret.txt"), ("mailmap.file", "/etc/passwd")):
        config(top, key, value)
        assert f"names files outside the working directory, which git reads or writes: {key.lower()} = {value}" in \
            repocheck.describe(repocheck.check("git format-patch -1", str(top), str(top)).reasons), key
        git(top, "config", "--unset", key)


def test_init_and_clone_into_a_directory_outside_ask(tmp_path):
    root = make_repo(tmp_path / "root")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "vendor")
    for command in ("git -C vendor init", "git init vendor", "git init --separate-git-dir=../g x",
                    "git clone https://example.invalid/x.git ../copy", "git init -b main ../elsewhere"):
        assert "writes a repository outside the working directory" in repocheck.describe(
            repocheck.check(command, str(root), str(root)).reasons), command
    for command in ("git init sub", "git init", "git clone https://example.invalid/x.git",
                    "git clone -b main https://example.invalid/x.git dest"):
        assert repocheck.check(command, str(root), str(root)).reasons == (), command


def test_a_local_repository_behind_an_option_a_top_relative_name_or_another_command_asks(tmp_path):
    """A review ran a bare repository's post-receive hook through an allowed `git push *`:
    `push -u DIR` (-u takes no value in push), `--signed DIR`, `--rep=DIR` (git takes a unique
    abbreviation), a name git resolves from the work tree's top while the call runs in a
    subdirectory; and read a repository outside through `fetch --recurse-submodules DIR`,
    `clone -s DIR`, `subtree push`, `maintenance run` (prefetch), `submodule update --remote`,
    a remote group (remotes.<group>), a partial clone's promisor remote (any command fetches
    missing objects from it); `worktree add` checked a tree out outside."""
    top = make_repo(tmp_path / "t")
    (top / "sub").mkdir()
    git(top, "init", "-q", "--bare", "deploy")
    outside = make_repo(tmp_path / "outside")
    local = "a repository on this machine"

    def asks(command, cwd=top):
        return local in repocheck.describe(repocheck.check(command, str(cwd), str(top)).reasons)

    for command in ("git push -u ./deploy main", "git push --signed ./deploy main", "git push --rep=./deploy",
                    "git push --re ./deploy", "git push -o x --signed ./deploy main",
                    f"git fetch --recurse-submodules {outside}", f"git clone -s {outside} copy",
                    "git fetch -u deploy"):
        assert asks(command), command
    assert asks("git push deploy main", top / "sub")  # git looks for deploy at the top
    assert "writes a repository outside" in repocheck.describe(
        repocheck.check(f"git clone -s https://example.invalid/x.git {tmp_path / 'copy'}", str(top), str(top)).reasons)
    config(top, "remote.origin.url", str(outside))
    for command in ("git subtree push --prefix=sub origin main", "git maintenance run",
                    "git submodule update --remote"):
        assert asks(command), command
    assert not asks("git log")
    config(top, "remote.origin.promisor", "true")
    assert asks("git show HEAD:f")
    git(top, "config", "--unset", "remote.origin.promisor")
    config(top, "remote.origin.url", "https://example.invalid/x.git")
    config(top, "remotes.grp", f"origin {outside}")
    assert "a remote group (remotes.*) names a repository on this machine" in repocheck.describe(
        repocheck.check("git fetch grp", str(top), str(top)).reasons)
    assert "writes a repository outside the working directory" in repocheck.describe(
        repocheck.check("git worktree add ../wt", str(top), str(top)).reasons)
    git(top, "config", "--unset", "remotes.grp")
    (top / "docs").mkdir()  # a refspec or a remote that is also a directory's name does not ask
    for command in ("git push -u origin main", "git push -u origin docs", "git push --signed origin docs",
                    "git fetch origin", "git worktree add wt", "git clone -s https://example.invalid/x.git c"):
        assert repocheck.check(command, str(top), str(top)).reasons == (), command


def test_object_stores_are_not_walked_file_by_file(tmp_path, monkeypatch):
    """A git-lfs cache (.git/lfs/objects) or a submodule's loose objects made every git
    command ask once they passed the limit of files walked; their own entries are still
    looked at, and other directories still count."""
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 100)
    top = make_repo(tmp_path / "t")
    for store in (".git/lfs/objects/ab/cd", ".git/modules/s/objects/ab", ".git/modules/s/modules/t/objects/cd"):
        (top / store).mkdir(parents=True)
        for k in range(150):
            (top / store / f"{k:038x}").write_text("x")
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, top / ".git" / "lfs" / "objects" / "ef")
    assert "git directory has symbolic links out of it" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)
    os.unlink(top / ".git" / "lfs" / "objects" / "ef")
    many = top / ".git" / "refs" / "heads" / "objects"
    many.mkdir()
    for k in range(150):
        (many / f"b{k}").write_text("0" * 40 + "\n")
    assert "more files than DashFloat checks" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)


@pytest.mark.parametrize("text, expected", [
    ('"abc"', "abc"),
    ('"a\\tb"', "a\tb"),  # escapes go on after one
    ('"a\\t"', "a\t"),  # one at the very end
    ('"\\303\\251"', "é"),  # octal bytes, decoded as UTF-8
    ('"\\101x"', "Ax"),
    ('"\\0123"', "\n3"),  # three digits at most
    ('"\\1a"', "1a"),  # not three octal digits: the character itself
    ('"\\4"', "4"),
    ('"a\\\\b\\"c"', 'a\\b"c'),
    ('"a\\"', "a\\"),  # a backslash with nothing after it stays
    ('""', ""),
    ('"abc', "abc"),  # no closing quote: all of the rest
])
def test_c_quoted_paths_are_unquoted_as_git_does(text, expected):
    assert repocheck._unquote_c(text) == expected


def test_which_words_name_a_repository_on_this_machine(tmp_path):
    """_is_dir: a word git takes for a local repository where a repository is expected;
    _is_repository: one named where a refspec might be (stricter)."""
    top = make_repo(tmp_path / "t")
    git(top, "init", "-q", "--bare", "evil.git")
    (top / "hidden").write_text("gitdir: evil.git\n")
    (top / "plain").write_text("gitdir:evil.git\n")  # not a gitdir file: no blank after the colon
    (top / "docs").mkdir()
    (top / "h:p").mkdir()
    git(top / "h:p", "init", "-q")
    base = str(top)
    assert repocheck._is_dir(base, [], "") is False
    assert repocheck._is_dir(base, [], "https://example.invalid/x") is False
    assert repocheck._is_dir(base, [], "evil") is True and repocheck._is_dir(base, [], "docs") is True
    assert repocheck._is_dir(base, [], "missing") is False
    for word, expected in (("", False), ("https://example.invalid/x", False), ("h:p", False),
                           ("evil", True), ("evil.git", True), ("hidden", True), ("plain", False),
                           ("docs", False), ("missing", False), (".", True)):
        assert repocheck._is_repository(base, [], word) is expected, word


def test_legacy_remotes_are_read_as_git_reads_them_and_too_many_ask(tmp_path, monkeypatch):
    """branches/<name>: a URL and `#branch`; remotes/<name>: `URL:` lines (a URL holds colons
    of its own). Past the number read, an unread file could name a repository here: ask
    (and likewise for linked worktrees)."""
    repo = make_repo(tmp_path / "r")
    git(repo, "init", "-q", "--bare", "evil.git")
    for sub, text in (("branches", "evil.git#main\n"), ("remotes", f"URL: file://{repo / 'evil.git'}\n")):
        (repo / ".git" / sub).mkdir(exist_ok=True)
        (repo / ".git" / sub / "origin").write_text(text)
        assert "(.git/remotes or .git/branches: origin) is a repository on this machine" in repocheck.describe(
            repocheck.check("git push origin", str(repo), str(repo)).reasons), sub
        (repo / ".git" / sub / "origin").unlink()
    monkeypatch.setattr(repocheck, "MAX_REPOSITORIES", 2)
    for k in range(9):
        (repo / ".git" / "remotes" / f"r{k}").write_text("URL: https://example.invalid/x.git\n")
    assert "more .git/remotes files than DashFloat checks" in repocheck.describe(
        repocheck.check("git push r0", str(repo), str(repo)).reasons)
    for k in range(9):
        (repo / ".git" / "remotes" / f"r{k}").unlink()
    for k in range(9):
        (repo / ".git" / "worktrees" / f"w{k}").mkdir(parents=True)
    assert "more linked worktrees than DashFloat checks" in repocheck.describe(
        repocheck.check("git worktree prune", str(repo), str(repo)).reasons)


def test_the_words_of_a_transport_that_name_its_repository():
    named = repocheck._named_repositories
    assert named(["git", "push", "./deploy", "main"], "push") == (["./deploy"], ["main"])
    assert named(["git", "push", "--", "./deploy", "main"], "push") == (["./deploy"], ["main"])
    assert named(["git", "fetch", "-v", "--", "../r", "x"], "fetch") == (["../r"], ["x"])
    # (git blocks a repository that starts with "-": "strange pathname")
    assert named(["git", "push", "--repo", "../r", "main"], "push") == (["../r", "main"], [])
    # git takes any unique abbreviation, one letter included (archive has one --r option)
    assert repocheck._option_values(["--r=../x", "HEAD"], "--remote") == ["../x"]
    assert repocheck._option_values(["--rem", "../x"], "--remote") == ["../x"]
    assert repocheck._option_values(["--", "x", "-", "y"], "--remote") == []


def _entries_looked_at(gitdir) -> int:
    """What the walk of _links_out counts, read independently: every name under the git
    directory but the hooks directory's and an object store's fan-out."""
    n = 0
    for dirpath, dirs, files in os.walk(gitdir):
        rel = os.path.relpath(dirpath, gitdir)
        if rel == ".":
            dirs.remove("hooks")
        n += len(dirs) + len(files)
        if rel == "objects":
            dirs[:] = [d for d in dirs if d in ("pack", "info")]
    return n


def test_the_git_directory_is_walked_up_to_its_bound_exactly(tmp_path, monkeypatch):
    top = make_repo(tmp_path / "t")
    many = top / ".git" / "modules" / "a" / "refs" / "objects"  # no object store: counted
    many.mkdir(parents=True)
    for k in range(30):
        (many / f"b{k}").write_text("0" * 40 + "\n")
    (top / ".git" / "modules" / "objects").mkdir()  # a submodule named "objects"
    (top / ".git" / "modules" / "objects" / "HEAD").write_text("ref: refs/heads/main\n")
    n = _entries_looked_at(top / ".git")
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", n)
    assert repocheck.check("git status", str(top), str(top)).reasons == ()
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", n - 1)
    assert "more files than DashFloat checks" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 10_000)
    for k in range(300):  # an object store's own entries count: its listing is bounded too
        (top / ".git" / "objects" / f"x{k}").mkdir()
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 200)
    assert "more files than DashFloat checks" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)


def test_links_out_are_named_in_order_and_alternates_once(tmp_path):
    root = tmp_path / "root"
    top = make_repo(root / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    for sub in ("refs/zz", "logs/aa", "info/mm"):
        (top / ".git" / sub).mkdir(parents=True, exist_ok=True)
        os.symlink(outside, top / ".git" / sub / "l")
    found = repocheck.describe(repocheck.check("git status", str(top), str(root)).reasons)
    assert found.index("info/mm/l") < found.index("logs/aa/l") < found.index("refs/zz/l")
    for k in (1, 2):
        make_repo(tmp_path / f"s{k}")
    (top / ".git" / "objects" / "info" / "alternates").write_text(
        f"{tmp_path / 's1' / '.git' / 'objects'}\n{tmp_path / 's2' / '.git' / 'objects'}\n")
    found = repocheck.describe(repocheck.check("git log", str(top), str(root)).reasons)
    assert found.count("(objects/info/alternates)") == 1  # the first one says it


def test_a_config_file_named_inside_the_work_tree_or_the_working_directory_does_not_ask(tmp_path):
    """Started in a subdirectory, a file elsewhere in the work tree is the repository's own;
    started above it, a file beside the repository is in the working directory."""
    top = make_repo(tmp_path / "t")
    (top / "sub").mkdir()
    config(top, "core.excludesFile", "extra-ignore")
    assert repocheck.check("git status", str(top / "sub"), str(top / "sub")).reasons == ()
    config(top, "core.excludesFile", "../beside-ignore")
    assert repocheck.check("git status", str(top), str(tmp_path)).reasons == ()
    assert "names files outside the working directory" in repocheck.describe(
        repocheck.check("git status", str(top), str(top)).reasons)


def test_remote_entries_are_read_past_an_empty_value_and_only_url_rewrites_count(tmp_path):
    top = make_repo(tmp_path / "t")
    git(tmp_path, "init", "-q", "--bare", "deploy.git")
    config(top, "core.empty", "")
    config(top, f"url.{tmp_path / 'deploy.git'}.other", "x")  # a url.* key, but no rewrite
    assert repocheck.check("git fetch", str(top), str(top)).reasons == ()
    config(top, "remote.d.url", str(tmp_path / "deploy.git"))
    assert "a remote's URL is a repository on this machine" in repocheck.describe(
        repocheck.check("git fetch", str(top), str(top)).reasons)


def test_a_legacy_remote_is_a_remote_name_not_a_directory(tmp_path):
    top = make_repo(tmp_path / "t")
    (top / "docs").mkdir()
    git(top, "init", "-q", "--bare", "docs/x.git")
    (top / ".git" / "remotes").mkdir()
    (top / ".git" / "remotes" / "docs").write_text("URL: https://example.invalid/x.git\n")
    assert repocheck.check("git push docs main", str(top), str(top)).reasons == ()


def test_legacy_remotes_and_worktrees_are_read_up_to_their_bound_exactly(tmp_path, monkeypatch):
    monkeypatch.setattr(repocheck, "MAX_REPOSITORIES", 2)  # read: 8 of each
    top = make_repo(tmp_path / "t")
    (top / ".git" / "remotes").mkdir()
    for k in range(8):
        (top / ".git" / "remotes" / f"r{k}").write_text("URL: https://example.invalid/x.git\n")
    assert repocheck.check("git push r0", str(top), str(top)).reasons == ()
    (top / ".git" / "remotes" / "r8").write_text("URL: https://example.invalid/x.git\n")
    assert "more .git/remotes files" in repocheck.describe(repocheck.check("git push r0", str(top), str(top)).reasons)
    other = make_repo(tmp_path / "u")
    away = tmp_path / "away"
    for k in range(8):
        (other / ".git" / "worktrees" / f"w{k}").mkdir(parents=True)
    (other / ".git" / "worktrees" / "w7" / "gitdir").write_text(f"{away / '.git'}\n")  # w0..w6: unreadable
    assert f"linked worktrees outside the working directory: {away}" in repocheck.describe(
        repocheck.check("git worktree prune", str(other), str(other)).reasons)
    (other / ".git" / "worktrees" / "w8").mkdir()
    assert "more linked worktrees" in repocheck.describe(
        repocheck.check("git worktree prune", str(other), str(other)).reasons)


def test_a_submodule_config_including_a_file_of_its_superprojects_git_directory_asks(tmp_path):
    """A review: `.git/modules/sub/config` included `../../COMMIT_EDITMSG`; `git commit
    --amend` wrote the message (a filter's config) there, then ran `git status` in the
    submodule, which ran the filter. A file in any git directory around the repository counts
    as one the command may write; so do includes of submodules that are not checked out."""
    upstream = make_repo(tmp_path / "upstream")
    top = make_repo(tmp_path / "top")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(top, "commit", "-qm", "sub")
    config(top / "sub", "include.path", "../../COMMIT_EDITMSG")  # .git/modules/sub/config
    may_write = "includes ../../COMMIT_EDITMSG, a file the command itself may write"
    assert may_write in repocheck.describe(reasons_of("git commit --amend", top))
    assert reasons_of("git log", top) == ()  # writes nothing
    git(top, "submodule", "deinit", "-q", "-f", "sub")  # its git directory stays in .git/modules
    assert may_write in repocheck.describe(reasons_of("git commit --amend", top))


def test_nested_includes_are_read_whatever_their_conditions(tmp_path):
    """A review: an include whose condition is false now (hasconfig:remote.*.url) was not
    read; `git remote add -f` made it true for the fetch it starts, which ran the
    uploadpack it named. Every include is followed, at any depth, conditions aside."""
    top = make_repo(tmp_path / "t")
    config(top, "includeIf.hasconfig:remote.*.url:https://**.path", "../a.cfg")
    (top / "a.cfg").write_text('[includeIf "hasconfig:remote.*.url:https://**"]\n\tpath = b.cfg\n')
    (top / "b.cfg").write_text('[remote "up"]\n\tuploadpack = "touch M; git-upload-pack"\n')
    git(top, "add", "a.cfg", "b.cfg")
    git(top, "commit", "-qm", "cfg")
    found = repocheck.describe(reasons_of("git remote add -f up https://example.invalid/x", top))
    assert "remote.up.uploadpack = touch M; git-upload-pack (in b.cfg)" in found
    (top / "b.cfg").write_text('[includeIf "gitdir:/nowhere/"]\n\tpath = a.cfg\n')  # a cycle ends
    assert reasons_of("git status", top) == ()


def test_a_remote_added_with_a_local_url_asks(tmp_path):
    top = make_repo(tmp_path / "t")
    assert "talks to a repository on this machine (file:///srv/x)" in repocheck.describe(
        reasons_of("git remote add -f up file:///srv/x", top))
    assert reasons_of("git remote add up https://example.invalid/x.git", top) == ()


@pytest.mark.parametrize("command, asks", [
    ("git --shallow-file log -c alias.x=!touch x", True),  # log is --shallow-file's value
    ("git --frob status", True), ("git --no-pager -P --literal-pathspecs log", False),
    ("git --no-literal-pathspecs status", False),
    ("git --namespace=n log", False), ("git --namespace n log", False),
])
def test_git_options_before_the_command_are_known_or_ask(tmp_path, command, asks):
    top = make_repo(tmp_path / "t")
    found = repocheck.describe(reasons_of(command, top))
    assert ("is not one DashFloat knows" in found) == (command == "git --frob status")
    assert repocheck.unknown_git_option(command.split()) == ("--frob" if "frob" in command else None)
    assert bool(rules.dangerous_argument(command.split())) == asks


def test_includes_nested_past_the_depth_read_ask(tmp_path, monkeypatch):
    """A review: at the depth limit the rest was dropped silently (and the file marked read,
    so a shallower include of it was skipped too)."""
    monkeypatch.setattr(repocheck, "MAX_INCLUDE_DEPTH", 3)
    top = make_repo(tmp_path / "t")
    for k in range(1, 4):
        (top / f"c{k}.cfg").write_text(f"[include]\n\tpath = c{k + 1}.cfg\n")
    (top / "c4.cfg").write_text("[diff]\n\texternal = touch M\n")
    git(top, "add", ".")
    git(top, "commit", "-qm", "cfg")
    config(top, "includeIf.onbranch:a.path", "../c1.cfg")
    assert "nested deeper than DashFloat reads" in repocheck.describe(reasons_of("git status", top))
    monkeypatch.setattr(repocheck, "MAX_INCLUDE_DEPTH", 10)
    assert "diff.external = touch M" in repocheck.describe(reasons_of("git status", top))


@pytest.mark.parametrize("sub, text", [
    ("branches", "evil.git\nhttps://example.invalid/x.git\n"),  # the first line only
    ("branches", " \tevil.git\x0b#main \r\n"),  # git's blanks are " \t\n\r": "\v" stays
    ("remotes", "Pull: x\nURL:  evil.git\x0b \r\nurl: https://example.invalid/x.git\n"),
])
def test_legacy_remote_files_are_read_byte_for_byte_as_git_reads_them(tmp_path, sub, text):
    """A review of the mutants: the files were trimmed of Python's blanks and read whole, so
    a URL git reads as `evil.git\\v` (a directory of that name) or from the first line was
    another word to the check. git itself is the oracle."""
    top = make_repo(tmp_path / "t")
    name = "evil.git\x0b" if "\x0b" in text else "evil.git"
    git(top, "init", "-q", "--bare", name)
    (top / ".git" / sub).mkdir(exist_ok=True)
    (top / ".git" / sub / "origin").write_text(text, newline="")
    assert subprocess.run(["git", "remote", "get-url", "origin"], cwd=top, capture_output=True,
                          text=True).stdout == name + "\n"
    assert "(.git/remotes or .git/branches: origin) is a repository on this machine" in repocheck.describe(
        reasons_of("git fetch origin", top))
    (top / ".git" / sub / "origin").write_text(text.replace("evil.git", "https://example.invalid/e.git"), newline="")
    assert reasons_of("git fetch origin", top) == ()


def test_alternates_lines_keep_their_blanks_and_carriage_returns(tmp_path):
    """git takes an alternates line whole up to its "\\n": `objs \\r` is a directory of that
    name, not `objs` (the check stripped the line, and judged another directory). git is the
    oracle: it finds the object through the link."""
    root = tmp_path / "root"
    secret = make_repo(tmp_path / "secret")
    (secret / "f").write_text("secret\n")
    git(secret, "add", "f")
    git(secret, "commit", "-qm", "s")
    blob = git(secret, "rev-parse", "HEAD:f").strip()
    top = make_repo(root / "t")
    store = top / ".git" / "objects"
    (store / "objs").mkdir()  # inside, and empty
    os.symlink(secret / ".git" / "objects", store / "objs \r")
    (store / "info" / "alternates").write_bytes(b"objs \r\n")
    assert git(top, "cat-file", "-p", blob) == "secret\n"
    assert "(objects/info/alternates)" in repocheck.describe(reasons_of("git status", top, root))


@pytest.mark.parametrize("text, named", [("ort\r", "ort\\r"), ("ort\r\n", None), ("ours\n", None)])
def test_a_strategy_file_is_read_with_its_line_end_as_git_reads_it(tmp_path, text, named):
    """git drops one "\\n" (and a "\\r" before it); a lone "\\r" stays part of the name, which
    is then no built-in strategy (the file was read with Python's newline translation)."""
    top = make_repo(tmp_path / "t")
    state = top / ".git" / "rebase-merge"
    state.mkdir()
    (state / "git-rebase-todo").write_text("pick 1234 one\n")
    (state / "strategy").write_bytes(text.encode())
    found = repocheck.describe(reasons_of("git rebase --continue", top))
    assert found == ("" if named is None else f"a rebase or cherry-pick in progress would run: strategy {named}")


def test_includes_are_read_exactly_as_deep_as_git_reads_them(tmp_path):
    """git reads a chain of ten includes and refuses the eleventh ("exceeded maximum include
    depth (10)"): the check reads the tenth file's keys, and asks at an eleventh."""
    top = make_repo(tmp_path / "t")
    for k in range(1, 12):
        (top / f"c{k}.cfg").write_text(f"[include]\n\tpath = c{k + 1}.cfg\n")
    (top / "c10.cfg").write_text("[diff]\n\texternal = touch M\n")
    config(top, "include.path", "../c1.cfg")
    assert git(top, "config", "diff.external") == "touch M\n"  # git reads it
    found = repocheck.describe(reasons_of("git status", top))
    assert "diff.external = touch M" in found and "nested deeper" not in found
    git(top, "config", "--unset", "include.path")  # now behind a condition git does not meet
    config(top, "includeIf.onbranch:other.path", "../c1.cfg")
    (top / "c10.cfg").write_text("[include]\n\tpath = c11.cfg\n")
    (top / "c11.cfg").write_text("[diff]\n\texternal = touch M\n")
    found = repocheck.describe(reasons_of("git status", top))
    assert "nested deeper than DashFloat reads (c11.cfg)" in found and "diff.external" not in found
    git(top, "checkout", "-qb", "other")  # where git meets it, it refuses the chain
    assert "exceeded maximum include depth (10)" in subprocess.run(
        ["git", "config", "diff.external"], cwd=top, capture_output=True, text=True).stderr


def test_an_object_stores_own_entries_are_counted_to_the_bound_exactly(tmp_path, monkeypatch):
    """The store's listing is the last thing walked here, so nothing after it raises for it."""
    gitdir = tmp_path / "g"
    for k in range(300):
        (gitdir / "objects" / f"x{k}").mkdir(parents=True)
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 301)  # "objects", then its 300
    assert repocheck._links_out(str(gitdir), str(gitdir)) == []
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 300)
    with pytest.raises(repocheck._Unreadable, match="more files than DashFloat checks"):
        repocheck._links_out(str(gitdir), str(gitdir))


def test_a_directory_named_objects_in_a_submodules_refs_is_walked_whole(tmp_path):
    """Only an object store's fan-out is skipped: `modules/<name>/objects` (nested through
    `modules/`), not any `objects` under a submodule's git directory, whose files git writes."""
    gitdir = tmp_path / "g"
    outside = tmp_path / "outside"
    outside.mkdir()
    (gitdir / "modules" / "a" / "refs" / "objects" / "ab").mkdir(parents=True)
    os.symlink(outside, gitdir / "modules" / "a" / "refs" / "objects" / "ab" / "cd")
    assert repocheck._links_out(str(gitdir), str(gitdir)) == [
        f"{gitdir}/modules/a/refs/objects/ab/cd -> {outside}"]
    assert not repocheck._is_object_store("modules/a/refs/objects")
    assert repocheck._is_object_store("modules/a/objects") and repocheck._is_object_store("modules/a/modules/b/objects")


def test_git_worktree_judges_its_own_linked_worktrees_not_a_submodules(tmp_path):
    """`git worktree prune` in the superproject acts on its linked worktrees only; a
    submodule's, elsewhere, are no reason to ask (in the submodule itself they are)."""
    upstream = make_repo(tmp_path / "upstream")
    top = make_repo(tmp_path / "top")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(top / "sub", "worktree", "add", "-q", str(tmp_path / "away"))
    assert reasons_of("git worktree prune", top) == ()
    assert "linked worktrees outside the working directory" in repocheck.describe(
        reasons_of("git worktree prune", top / "sub"))


def test_the_word_after_a_remote_option_is_its_value_and_no_more(tmp_path):
    """`git archive --remote URL HEAD`: HEAD is the tree-ish, here also a directory's name."""
    top = make_repo(tmp_path / "t")
    (top / "HEAD").mkdir()
    assert reasons_of("git archive --remote https://example.invalid/x.git HEAD", top) == ()
    assert "talks to a repository on this machine" in repocheck.describe(
        reasons_of("git archive --remote HEAD main", top))


def test_git_init_again_in_a_repository_with_links_out_of_its_git_directory_asks(tmp_path):
    """git init in a repository that exists writes what its git directory lacks (sample
    hooks, info/exclude), through links: the hooks directory is otherwise left out of the
    links check (no command but init writes it). git is the oracle: it wrote there."""
    root = tmp_path / "root"
    out = tmp_path / "out"
    out.mkdir()
    top = make_repo(root / "r")
    assert reasons_of("git init r", root) == () and reasons_of("git init fresh", root) == ()
    shutil.rmtree(top / ".git" / "hooks")
    os.symlink(out, top / ".git" / "hooks")
    found = repocheck.describe(reasons_of("git init r", root))
    assert f"git init writes the repository's git directory again, through symbolic links out of it: " \
           f"{top}/.git/hooks -> {out}" in found
    assert "hooks" in repocheck.describe(reasons_of("git init", top))
    assert reasons_of("git status", top) == ()  # the hooks directory is no reason for others
    git(root, "init", "-q", "r")
    assert any(n.endswith(".sample") for n in os.listdir(out))
    bare = root / "b.git"
    git(root, "init", "-q", "--bare", "b.git")
    shutil.rmtree(bare / "info")
    os.symlink(out, bare / "info")
    assert f"{bare}/info -> {out}" in repocheck.describe(reasons_of("git init --bare b.git", root))
    away = make_repo(tmp_path / "away")
    (root / "s").mkdir()
    (root / "s" / ".git").write_text(f"gitdir: {away / '.git'}\n")
    assert "git init writes the repository's git directory outside the working directory" in repocheck.describe(
        reasons_of("git init s", root))


def test_an_object_store_s_own_entries_are_bounded_to_the_entry(tmp_path, monkeypatch):
    """The bound counts an object store's entries as they are listed: as many as the bound
    are looked at, one more is too many (nothing walked after it to catch it)."""
    home = tmp_path / "g"
    for k in range(30):
        (home / "objects" / f"{k:02x}").mkdir(parents=True)
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 31)  # objects/ and its 30 entries
    assert repocheck._links_out(str(home), str(home)) == []
    monkeypatch.setattr(repocheck, "MAX_GIT_DIR_ENTRIES", 30)
    with pytest.raises(repocheck._Unreadable, match="more files than DashFloat checks"):
        repocheck._links_out(str(home), str(home))


def test_a_directory_named_objects_deep_in_a_submodule_s_git_directory_is_walked(tmp_path):
    """Only `modules/<name>/objects` (nested: `.../modules/<name>/objects`) is an object
    store, whose fan-out is skipped; a branch directory named objects is walked whole."""
    home = tmp_path / "g"
    deep = home / "modules" / "s" / "refs" / "heads" / "objects" / "x"
    deep.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, deep / "l")
    assert repocheck._links_out(str(home), str(home)) == [f"{deep / 'l'} -> {outside}"]
    assert not repocheck._is_object_store(os.path.join("modules", "s", "x", "objects"))
    assert repocheck._is_object_store(os.path.join("modules", "s", "modules", "t", "objects"))


def test_a_nested_repository_s_worktrees_are_not_what_the_command_acts_on(tmp_path):
    """git worktree acts on the repository's own linked worktrees: a nested repository's,
    outside the working directory, make no question (its other findings still do)."""
    root = tmp_path / "root"
    top = make_repo(root / "t")
    sub = make_repo(top / "sub")
    git(sub, "worktree", "add", "-q", str(tmp_path / "elsewhere"))
    for command in ("git status", "git worktree prune"):
        assert repocheck.check(command, str(top), str(root)).reasons == ()
    git(top, "worktree", "add", "-q", str(tmp_path / "mine"))
    assert repocheck.describe(repocheck.check("git worktree prune", str(top), str(root)).reasons) == (
        f"git worktree acts on linked worktrees outside the working directory: {tmp_path / 'mine'}")


@pytest.mark.parametrize("text", [
    "URL: one.git\r\nURL:two.git  \nPush: x\n",  # CR LF, no blank after "URL:", blanks after
    "URL:\tone.git\nURL: two.git",  # a tab; no line end at the end
    "Pull: y\nURL: one.git\r\n\nURL:two.git\r\n",
])
def test_a_legacy_remotes_file_gives_the_urls_git_reads(tmp_path, text):
    """git is the oracle: `git remote get-url --all` prints the URLs of a remotes/ file."""
    top = make_repo(tmp_path / "t")
    (top / ".git" / "remotes").mkdir()
    (top / ".git" / "remotes" / "o").write_bytes(text.encode())
    urls = git(top, "remote", "get-url", "--all", "o").splitlines()
    assert urls == ["one.git", "two.git"]
    assert repocheck._legacy_remotes(str(top / ".git")) == [("o", u) for u in urls]


def test_git_init_again_reads_the_gitdir_file_as_git_does(tmp_path, monkeypatch):
    """The gitdir file. One that leads out asks, even with no blank after "gitdir:" (which
    git refuses: the safe side); one that leads inside asks nothing (git writes there), nor
    one that leads to nothing or cannot be read (git fails: "not a git repository"); one
    longer than the 1 MiB git reads asks. The hooks link is named first, and one inside the
    git directory is no link out."""
    root = tmp_path / "root"
    away = make_repo(tmp_path / "away")
    inside = make_repo(root / "inner")
    (root / "s").mkdir(parents=True)
    (root / "s" / ".git").write_text(f"gitdir:{away / '.git'}\n")
    assert repocheck.describe(reasons_of("git init s", root)) == (
        f"git init writes the repository's git directory outside the working directory, in {away / '.git'}")
    (root / "s" / ".git").write_text(f"gitdir: {inside / '.git'}\n")
    assert reasons_of("git init s", root) == ()
    (root / "s" / ".git").write_text(f"gitdir: {root / 'none'}\n")
    assert reasons_of("git init s", root) == ()
    # a path of up to 4095 bytes after "gitdir: " (git reads the file whole) is read whole
    (root / "s" / ".git").write_text(f"gitdir: {away / '.git'}" + "\n" * 5000)
    assert "outside the working directory" in repocheck.describe(reasons_of("git init s", root))
    (root / "s" / ".git").write_text("gitdir: x" + "\n" * ((1 << 20) - 9))  # 1 MiB exactly: read
    assert reasons_of("git init s", root) == ()
    (root / "s" / ".git").write_text("gitdir: x" + "\n" * (1 << 20))
    assert repocheck.describe(reasons_of("git init s", root)) == (
        f"git init reads a gitdir file longer than DashFloat reads ({root / 's' / '.git'})")
    top = make_repo(root / "r")
    shutil.rmtree(top / ".git" / "hooks")
    (top / ".git" / "myhooks").mkdir()
    os.symlink(top / ".git" / "myhooks", top / ".git" / "hooks")  # inside: not out
    assert reasons_of("git init r", root) == ()
    out = tmp_path / "out"
    out.mkdir()
    os.unlink(top / ".git" / "hooks")
    for name in ("hooks", "info", "logs"):
        if (top / ".git" / name).is_dir() and not (top / ".git" / name).is_symlink():
            shutil.rmtree(top / ".git" / name)
        os.symlink(out, top / ".git" / name)
    said = repocheck.describe(reasons_of("git init r", root))
    assert said.index("/.git/hooks ->") < said.index("/.git/info ->") < said.index("/.git/logs ->"), said

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(repocheck, "open", unreadable, raising=False)
    assert repocheck._reinit_reasons(str(root / "s"), str(root)) == []
