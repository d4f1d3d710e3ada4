"""Issue 14 section 5: a repository must not run programs behind a command that runs without a
question. Each test builds a real git repository in a tmp dir with one attack of the class
(a program named by the repository: core.fsmonitor, a hook, a filter driver named in
.gitattributes, diff.external, textconv, an alias, gpg.program, a `.git` file that points
elsewhere, an embedded bare repository, a nested repository, an included config file, ...),
lets the user's allow rule cover the command a careful user allows (`git status`,
`git diff`, `git log *`...), and runs the call through the real agent (the pipeline, the
runner, /bin/sh) and through `policy check`'s judge. The program must never run without a
question: either it is neutralised (the command runs, the marker is not created) or the call
asks and its preview names the reason.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dashfloat import messages as M
from dashfloat.tools import pipeline, repocheck, rules
from dashfloat.tools.permissions import Policy
from tests.test_agent_tools import answer, calls_reply, result_of

NEUTRALISED = "neutralised"
ASKS = "asks"


pytestmark = pytest.mark.usefixtures("git_home")  # (tests/conftest.py)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    (path / "a.txt").write_text("hello\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "init")
    return path


def touch(marker: Path) -> str:
    """A shell command that creates the marker (what every attack runs)."""
    return f"touch '{marker}'"


def config(repo: Path, key: str, value: str) -> None:
    git(repo, "config", key, value)


def racy_change(repo: Path) -> None:
    """Change a.txt without changing its size, with the index's mtime: `git status` must
    read it through the clean filter to know whether it changed."""
    (repo / "a.txt").write_text("HELLO\n")
    index = (repo / ".git" / "index").stat()
    os.utime(repo / "a.txt", ns=(index.st_atime_ns, index.st_mtime_ns))


def stat_change(repo: Path) -> None:
    """Give a.txt a new mtime, same content: `git status` refreshes the entry and writes the
    index (the post-index-change hook's moment)."""
    later = (repo / ".git" / "index").stat().st_mtime_ns + 2_000_000_000
    os.utime(repo / "a.txt", ns=(later, later))


# ---- the attacks: setup(root, marker) -> cwd relative to the root --------------------------


def fsmonitor(root, marker):
    make_repo(root)
    config(root, "core.fsmonitor", f"{touch(marker)}; false")
    (root / "a.txt").write_text("changed\n")


def index_hook(root, marker):
    make_repo(root)
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\n{touch(marker)}\n")
    hook.chmod(0o755)
    stat_change(root)


def hooks_path(root, marker):
    make_repo(root)
    hooks = root / ".githooks"
    hooks.mkdir()
    (hooks / "post-index-change").write_text(f"#!/bin/sh\n{touch(marker)}\n")
    (hooks / "post-index-change").chmod(0o755)
    config(root, "core.hooksPath", ".githooks")
    stat_change(root)


def clean_filter(root, marker):
    make_repo(root)
    (root / ".gitattributes").write_text("*.txt filter=x\n")
    config(root, "filter.x.clean", f"sh -c \"{touch(marker)}; cat\"")
    racy_change(root)


def process_filter(root, marker):
    make_repo(root)
    (root / ".gitattributes").write_text("*.txt filter=x\n")
    config(root, "filter.x.process", touch(marker))
    (root / "a.txt").write_text("changed\n")


def external_diff(root, marker):
    make_repo(root)
    config(root, "diff.external", f"sh -c \"{touch(marker)}\"")
    (root / "a.txt").write_text("changed\n")


def textconv(root, marker):
    make_repo(root)
    (root / ".gitattributes").write_text("*.txt diff=t\n")
    git(root, "add", ".gitattributes")
    (root / "a.txt").write_text("changed\n")
    git(root, "commit", "-qam", "two")
    config(root, "diff.t.textconv", f"sh -c '{touch(marker)}; cat \"$0\"'")


def diff_command(root, marker):
    make_repo(root)
    (root / ".gitattributes").write_text("*.txt diff=t\n")
    config(root, "diff.t.command", f"sh -c \"{touch(marker)}\"")
    (root / "a.txt").write_text("changed\n")


def shell_alias(root, marker):
    make_repo(root)
    config(root, "alias.lg", f"!{touch(marker)}")


def config_alias(root, marker):
    make_repo(root)  # an alias that is not a shell one may still set config: -c
    config(root, "alias.lg", f"-c core.fsmonitor=\"{touch(marker)}; false\" status")
    (root / "a.txt").write_text("changed\n")


def included_filter(root, marker):
    make_repo(root)
    (root / "tools").mkdir()
    (root / "tools" / "git.cfg").write_text(f"[filter \"x\"]\n\tclean = \"{touch(marker)}; cat\"\n")
    (root / ".gitattributes").write_text("*.txt filter=x\n")
    config(root, "include.path", "../tools/git.cfg")
    racy_change(root)


def included_fsmonitor(root, marker):
    make_repo(root)
    (root / "tools").mkdir()
    (root / "tools" / "git.cfg").write_text(f"[core]\n\tfsmonitor = \"{touch(marker)}; false\"\n")
    config(root, "include.path", "../tools/git.cfg")
    (root / "a.txt").write_text("changed\n")


def gitdir_outside(root, marker):
    elsewhere = make_repo(root.parent / "elsewhere")
    config(elsewhere, "core.fsmonitor", f"{touch(marker)}; false")
    root.mkdir(exist_ok=True)
    (root / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    (root / "a.txt").write_text("changed\n")


def worktree_elsewhere(root, marker):
    make_repo(root)
    outside = root.parent / "outside-tree"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the working directory\n")
    config(root, "core.worktree", str(outside))


def bare_lookalike(root, marker):
    """A directory that looks like a bare repository (as the model could write one with
    write_file under accept-edits): git would take its config."""
    make_repo(root)
    evil = root / "evil"
    for sub in ("objects", "refs"):
        (evil / sub).mkdir(parents=True)
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text(f"[core]\n\tbare = true\n[alias]\n\tlg = \"!{touch(marker)}\"\n")
    return "evil"


def nested_fsmonitor(root, marker):
    make_repo(root)
    nested = make_repo(root / "nested")
    git(root, "add", "nested")
    git(root, "commit", "-qm", "nested")
    config(nested, "core.fsmonitor", f"{touch(marker)}; false")
    (nested / "a.txt").write_text("changed\n")


def nested_filter(root, marker):
    make_repo(root)
    nested = make_repo(root / "nested")
    git(root, "add", "nested")
    git(root, "commit", "-qm", "nested")
    (nested / ".gitattributes").write_text("*.txt filter=x\n")
    config(nested, "filter.x.clean", f"sh -c \"{touch(marker)}; cat\"")
    racy_change(nested)


def signed_log(root, marker):
    """log.showSignature makes `git log` run gpg.program on a signed commit."""
    make_repo(root)
    raw = git(root, "cat-file", "commit", "HEAD")
    head, body = raw.split("\n\n", 1)
    sig = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    (root.parent / "commit.txt").write_text(f"{head}\n{sig}\n\n{body}")
    sha = git(root, "hash-object", "-t", "commit", "-w", str(root.parent / "commit.txt")).strip()
    git(root, "update-ref", "HEAD", sha)
    script = root / ".gpg.sh"
    script.write_text(f"#!/bin/sh\n{touch(marker)}\n")
    script.chmod(0o755)
    config(root, "log.showSignature", "true")
    config(root, "gpg.program", str(script))


def upload_pack(root, marker):
    make_repo(root)
    upstream = make_repo(root.parent / "upstream")
    config(root, "remote.origin.url", str(upstream))
    config(root, "remote.origin.uploadpack", f"{touch(marker)}; git-upload-pack")


def makefile_shell(root, marker):
    root.mkdir(exist_ok=True)
    (root / "Makefile").write_text(f"X := $(shell {touch(marker)})\nall:\n\techo hi\n")


def dash_c_outside(root, marker):
    make_repo(root)
    elsewhere = make_repo(root.parent / "elsewhere")
    config(elsewhere, "core.fsmonitor", f"{touch(marker)}; false")
    (elsewhere / "a.txt").write_text("changed\n")


def rebase_exec(root, marker):
    """A rebase stopped at `break`, its todo list's next line an exec (a review ran it)."""
    make_repo(root)
    (root / "a.txt").write_text("two\n")
    git(root, "commit", "-qam", "two")
    git(root, "checkout", "-qb", "side", "HEAD~1")
    (root / "c.txt").write_text("c\n")
    git(root, "add", "c.txt")
    git(root, "commit", "-qm", "side")
    editor = f"sed -i '1i break\\nexec {touch(marker)}'"
    subprocess.run(["git", "rebase", "-q", "-i", "main"], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "GIT_SEQUENCE_EDITOR": editor})
    assert (root / ".git" / "rebase-merge" / "git-rebase-todo").exists()


def remote_vcs(root, marker):
    """remote.<name>.vcs runs git-remote-<vcs>: `/../evil.sh` reaches a file of the work tree."""
    make_repo(root)
    config(root, "remote.origin.url", "https://example.invalid/x")
    config(root, "remote.origin.vcs", "/../evil.sh")
    (root / "git-remote-").mkdir()
    (root / "git-remote-" / ".keep").write_text("")
    (root / "evil.sh").write_text(f"#!/bin/sh\n{touch(marker)}\n")
    (root / "evil.sh").chmod(0o755)


def helper_alias(root, marker):
    """A URL `x::...` runs `git remote-x`, which an alias answers, whatever command runs."""
    make_repo(root)
    config(root, "remote.origin.url", "x::foo")
    config(root, "alias.remote-x", f"!{touch(marker)}; false")


def bare_work_tree(root, marker):
    """A work tree whose files make it a bare repository too: `git --bare` uses them."""
    make_repo(root)
    (root / ".gitattributes").write_text("* diff=t\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attrs")
    bare = root.parent / "bare-src"
    git(root.parent, "clone", "-q", "--bare", str(root), str(bare))
    for name in ("HEAD", "objects", "refs", "packed-refs"):
        if (bare / name).exists():
            os.rename(bare / name, root / name)
    (root / "config").write_text(f"[diff \"t\"]\n\ttextconv = \"{touch(marker)}; cat\"\n")
    (root / "info").mkdir()
    (root / "info" / "attributes").write_text("* diff=t\n")


def local_push(root, marker):
    """A remote whose URL is a directory's name: git pushes there and runs its pre-receive."""
    make_repo(root)
    git(root, "init", "-q", "--bare", "evil.git")
    hook = root / "evil.git" / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n{touch(marker)}\n")
    hook.chmod(0o755)
    config(root, "remote.origin.url", "evil.git")


def rewritten_push(root, marker):
    local_push(root, marker)
    config(root, "remote.origin.url", "https://example.invalid/repo")
    config(root, f"url.{root / 'evil.git'}.pushInsteadOf", "https://example.invalid/repo")


def archive_remote(root, marker):
    """git archive --remote=<a bare repository in the tree> runs its tar.<format>.command."""
    make_repo(root)
    git(root, "clone", "-q", "--bare", ".", "evil.git")
    config(root / "evil.git", "tar.foo.command", f"{touch(marker)}; cat >/dev/null")
    config(root / "evil.git", "tar.foo.remote", "true")


def reflog_link(root, marker):
    """.git/logs/HEAD a link to a file outside: a commit appends its reflog line there."""
    make_repo(root)
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "bashrc").write_text("")
    os.remove(root / ".git" / "logs" / "HEAD")
    os.symlink(outside / "bashrc", root / ".git" / "logs" / "HEAD")


def worktree_outside(root, marker):
    """A linked worktree's record pointing outside: `git worktree repair` writes its .git there."""
    make_repo(root)
    victim = root.parent / "victim"
    victim.mkdir()
    admin = root / ".git" / "worktrees" / "victim"
    admin.mkdir(parents=True)
    (admin / "gitdir").write_text(f"{victim / '.git'}\n")
    (admin / "HEAD").write_text(git(root, "rev-parse", "HEAD"))
    (admin / "commondir").write_text("../..\n")


def alternates_outside(root, marker):
    """objects/info/alternates naming another repository's objects: git reads them."""
    make_repo(root)
    secret = make_repo(root.parent / "secret")
    (root / ".git" / "objects" / "info" / "alternates").write_text(f"{secret / '.git' / 'objects'}\n")


# (id, setup, command, the user's allow rule, expected, what the preview names / the output has)
CASES = [
    ("fsmonitor", fsmonitor, "git status", "git status", NEUTRALISED, "a.txt"),
    ("index-hook", index_hook, "git status", "git status", NEUTRALISED, "working tree clean"),
    ("hooks-path", hooks_path, "git status", "git status", NEUTRALISED, ".githooks/"),
    ("clean-filter", clean_filter, "git status", "git status", ASKS, "filter.x.clean"),
    ("clean-filter-diff", clean_filter, "git diff", "git diff *", ASKS, "filter.x.clean"),
    ("process-filter", process_filter, "git diff", "git diff *", ASKS, "filter.x.process"),
    ("diff-external", external_diff, "git diff", "git diff *", ASKS, "diff.external"),
    ("textconv", textconv, "git log -p", "git log *", ASKS, "diff.t.textconv"),
    ("diff-command", diff_command, "git diff", "git diff *", ASKS, "diff.t.command"),
    ("shell-alias", shell_alias, "git lg", "git lg", ASKS, "alias.lg"),
    ("config-alias", config_alias, "git lg", "git lg", ASKS, "alias.lg"),
    ("included-filter", included_filter, "git status", "git status", ASKS, "tools/git.cfg"),
    ("included-fsmonitor", included_fsmonitor, "git status", "git status", NEUTRALISED, "a.txt"),
    ("gitdir-outside", gitdir_outside, "git status", "git status", ASKS, "points outside"),
    ("core-worktree", worktree_elsewhere, "git status", "git status", ASKS, "core.worktree"),
    ("bare-lookalike", bare_lookalike, "git lg", "git lg", NEUTRALISED, "not a git command"),
    ("nested-fsmonitor", nested_fsmonitor, "git status", "git status", NEUTRALISED, "nested"),
    ("nested-filter", nested_filter, "git status", "git status", ASKS, "filter.x.clean"),
    ("signed-log", signed_log, "git log", "git log *", NEUTRALISED, "init"),
    ("upload-pack", upload_pack, "git fetch origin", "git fetch *", ASKS, "remote.origin.uploadpack"),
    ("make-n", makefile_shell, "make -n", "make -n", ASKS, "can run programs"),
    ("dash-c-outside", dash_c_outside, "git -C ../elsewhere status", "git *", ASKS, "points outside"),
    ("rebase-exec", rebase_exec, "git rebase --continue", "git rebase *", ASKS, "exec touch"),
    ("remote-vcs", remote_vcs, "git fetch", "git fetch *", ASKS, "remote.origin.vcs"),
    ("helper-alias", helper_alias, "git fetch", "git fetch *", ASKS, "alias.remote-x"),
    ("bare-work-tree", bare_work_tree, "git --bare log -p", "git *", ASKS, "(--bare)"),
    ("local-push", local_push, "git push origin main", "git push *", ASKS, "(evil.git)"),
    ("rewritten-push", rewritten_push, "git push origin main", "git push *", ASKS, "rewrites URLs"),
    ("archive-remote", archive_remote, "git archive --remote=evil.git --format=foo HEAD", "git archive *", ASKS,
     "git archive talks to a repository on this machine (evil.git)"),
    ("reflog-link", reflog_link, "git commit -q --allow-empty -m x", "git commit *", ASKS, "logs/HEAD ->"),
    ("worktree-outside", worktree_outside, "git worktree repair", "git *", ASKS, "linked worktrees outside"),
    ("alternates", alternates_outside, "git cat-file --batch-all-objects --batch-check", "git *", ASKS,
     "(objects/info/alternates)"),
]


def user_policy(*allow: str) -> Policy:
    layer = [rules.parse_rule(f"execute_command({a})", rules.ALLOW, "user config") for a in allow]
    return Policy([("user config", layer)])


def run_call(rig, command: str, cwd: str, policy: Policy):
    """The call through the real agent: ("asks", preview text) after rejecting the question,
    or ("ran", the tool result)."""
    args = {"command": command} if cwd == "." else {"command": command, "cwd": cwd}
    rig.server.push(calls_reply(("c1", "execute_command", args)), answer("done"))
    rig.start(policy=policy)
    t = rig.prompt("go")
    first = rig.out.wait(lambda m: m[0] == M.CONFIRM or m[0] == M.TOOL_RESULT, t)
    if first[0] == M.CONFIRM:
        text = "\n".join(line for _, line in first[2]["lines"])
        rig.decide(first[1], "rejected")
        rig.wait_idle(t)
        return ASKS, text
    rig.wait_idle(t)
    return "ran", result_of(rig.bodies()[1]["messages"], "c1")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_repository_never_runs_a_program_behind_an_allowed_command(rig, tmp_path, case):
    _, setup, command, allow, expected, shown = case
    marker = tmp_path / "MARKER"
    cwd = setup(rig.root, marker) or "."
    policy = user_policy(allow)

    decision = pipeline.judge("execute_command", {"command": command, "cwd": cwd}, str(rig.root), policy)
    assert not marker.exists(), "policy check ran the program"
    outcome, seen = run_call(rig, command, cwd, policy)
    assert not marker.exists(), f"{command!r} ran the repository's program without a question"
    if expected == ASKS:
        assert decision.decision == rules.ASK, decision
        assert outcome == ASKS, seen
        assert shown in decision.reason
        if decision.who == repocheck.WHO:  # the question says why
            assert f"asks: {decision.reason}" in seen
        else:
            assert decision.who == 'dangerous argument "-n" (make)'
    else:
        assert decision.decision == rules.ALLOW, decision
        assert outcome == "ran"
        assert shown in seen["output"], seen


def test_the_users_own_programs_still_run_without_a_question(rig, tmp_path, git_home):
    """What the user's own config names is theirs: a filter driver and a hooks directory from
    the global config run for an allowed `git status` (only the repository's are refused)."""
    marker = tmp_path / "MARKER"
    hooks = git_home / "hooks"
    hooks.mkdir()
    (hooks / "post-index-change").write_text(f"#!/bin/sh\n{touch(marker)}-hook\n")
    (hooks / "post-index-change").chmod(0o755)
    with (git_home / ".gitconfig").open("a") as f:
        f.write(f"[core]\n\thooksPath = {hooks}\n"
                f"[filter \"mine\"]\n\tclean = \"{touch(marker)}-filter; cat\"\n")
    make_repo(rig.root)
    (rig.root / ".gitattributes").write_text("*.txt filter=mine\n")
    racy_change(rig.root)
    outcome, result = run_call(rig, "git status", ".", user_policy("git status"))
    assert outcome == "ran" and result["ok"], result
    assert Path(f"{marker}-hook").exists() and Path(f"{marker}-filter").exists()


def test_a_linked_worktree_and_a_subdirectory_of_a_repository_do_not_ask(tmp_path):
    """Their git directory is outside the working directory, and rightly so."""
    main = make_repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    (main / "sub").mkdir()
    policy = user_policy("git status")
    for root in (tmp_path / "wt", main / "sub"):
        decision = pipeline.judge("execute_command", {"command": "git status"}, str(root), policy)
        assert decision.decision == rules.ALLOW, (root, decision)


def test_a_git_file_that_only_mimics_a_worktree_still_asks(tmp_path):
    """A `.git` file pointing at another repository's worktree entry is not that worktree."""
    main = make_repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").write_text((tmp_path / "wt" / ".git").read_text())
    decision = pipeline.judge("execute_command", {"command": "git status"}, str(fake),
                              user_policy("git status"))
    assert decision.decision == rules.ASK and "points outside" in decision.reason


def test_less_runs_no_input_preprocessor_without_a_question(rig, tmp_path, monkeypatch):
    """LESSOPEN (from the user's environment: lesspipe) runs a program on the repository's
    file; an allowed `less` gets an environment without it."""
    marker = tmp_path / "MARKER"
    monkeypatch.setenv("LESSOPEN", f"|{touch(marker)}; cat %s")
    (rig.root / "a.txt").write_text("hello\n")
    outcome, result = run_call(rig, "less a.txt", ".", user_policy("less *"))
    assert outcome == "ran" and result["output"] == "hello\n", result
    assert not marker.exists()


def test_a_question_runs_the_approved_command_as_git_normally_would(rig, tmp_path):
    """Only what runs without a question is neutralised: a command the user approves at the
    preview runs with the repository's config (its hooks and filters) as git runs it."""
    marker = tmp_path / "MARKER"
    fsmonitor(rig.root, marker)
    rig.server.push(calls_reply(("c1", "execute_command", {"command": "git status"})), answer("done"))
    rig.start(policy=Policy())
    t = rig.prompt("go")
    rig.decide(rig.confirm(t)[1], "approved")
    rig.wait_idle(t)
    assert marker.exists()


def test_a_session_rule_does_not_silence_the_repository(rig, tmp_path):
    """`a` allows the exact command for the session; a repository that names a program still
    makes it ask (the rule is about the command, the check about the repository)."""
    marker = tmp_path / "MARKER"
    clean_filter(rig.root, marker)
    call = ("c1", "execute_command", {"command": "git status"})
    rig.server.push(calls_reply(call), answer("once"), calls_reply(("c2", *call[1:])), answer("twice"))
    rig.start(policy=Policy())
    t = rig.prompt("go")
    rig.decide(rig.confirm(t)[1], "rejected")  # asked by the built-in default
    rig.wait_idle(t)
    rig.agent.policy.allow_exact("execute_command", {"command": "git status"})
    t = rig.prompt("again")
    info = rig.confirm(t)[2]
    assert any("filter.x.clean" in line for _, line in info["lines"])
    rig.decide(rig.confirm(t)[1], "rejected")
    rig.wait_idle(t)
    assert not marker.exists()


def test_a_question_that_asks_anyway_says_what_the_repository_would_run(rig, tmp_path):
    """With no allow rule the command asks by default, and once approved runs as git
    normally would: the question names the repository's programs, so y is pressed knowing
    what it runs (a command that runs no git gets no note)."""
    marker = tmp_path / "MARKER"
    clean_filter(rig.root, marker)
    outcome, preview_text = run_call(rig, "git status", ".", Policy())
    assert outcome == ASKS and "note: " in preview_text and "filter.x.clean" in preview_text, preview_text
    assert not marker.exists()
    outcome, preview_text = run_call(rig, "ls", ".", Policy())
    assert outcome == ASKS and "note: " not in preview_text, preview_text


def test_the_audit_of_a_call_the_repository_makes_ask_gives_the_repository_s_reason(tmp_path):
    """The journal's audit of the decision (the agent records ctx.audit) says why it asked:
    the repository's program, not the allow rule that the check overruled."""
    clean_filter(tmp_path, tmp_path / "MARKER")
    args = {"command": "git status"}
    ctx = pipeline.CallContext(call_id="c1", name="execute_command", raw={"id": "c1", "name": "execute_command",
                               "args": args}, root=str(tmp_path), policy=user_policy("git status"))
    verdict, _ = pipeline.pre_execute(ctx)
    assert verdict == "ask"
    assert ctx.audit.decision == rules.ASK and ctx.audit.who == repocheck.WHO
    assert "filter.x.clean" in ctx.audit.reason and ctx.audit.reason == ctx.rule_decision.reason
