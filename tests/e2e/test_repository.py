"""End to end (issue 14 §5): with `git status` allowed in the user file, as a careful user
allows it, a repository's own config cannot run a program behind it. A repository whose
core.fsmonitor names a program: the call runs at once, and the program does not. One whose
filter driver (named by .gitattributes) does: the question comes up and says why."""

from __future__ import annotations

import os
import subprocess

from tests.e2e.harness import clean_env
from tests.e2e.test_tools import APPLY, call, calls_reply, wait_confirming, wait_posts
from tests.fakeserver import sse_reply


def repo(path, env):
    path.mkdir(parents=True)
    run = lambda *a: subprocess.run(["git", *a], cwd=path, env=env, check=True,  # noqa: E731
                                    capture_output=True, stdin=subprocess.DEVNULL)
    run("init", "-q")
    (path / "a.txt").write_text("hello\n")
    run("add", "a.txt")
    run("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "init")
    return run


def test_an_allowed_git_status_never_runs_the_repositorys_programs(dash, server, tmp_path):
    env = clean_env(tmp_path, GIT_CONFIG_NOSYSTEM="1")
    config = tmp_path / "config" / "dashfloat" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[permissions]\nallow = ["execute_command(git status)"]\n')
    marker = tmp_path / "MARKER"
    project = tmp_path / "proj"
    git = repo(project, env)
    (project / ".gitattributes").write_text("*.txt filter=x\n")
    git("config", "filter.x.clean", f"touch '{marker}'; cat")
    (project / "a.txt").write_text("HELLO\n")
    index = (project / ".git" / "index").stat()
    os.utime(project / "a.txt", ns=(index.st_atime_ns, index.st_mtime_ns))  # status must clean it
    other = repo(project / "other", env)  # a repository of its own (not in proj's index)
    other("config", "core.fsmonitor", f"touch '{marker}'; false")

    server.push(
        calls_reply(call("execute_command", {"command": "git status", "cwd": "other"}, "call_1")),
        sse_reply(["First done."]),
        calls_reply(call("execute_command", {"command": "git status"}, "call_2")),
        sse_reply(["Second done."]),
    )
    t = dash("-C", str(project), env=env)
    t.type("status of other\r")
    t.wait_text("First done.")  # ran without a question, fsmonitor neutralised
    t.wait_status("idle")
    assert APPLY not in t.text and "nothing to commit" in t.text
    assert not marker.exists()
    t.type("status here\r")
    wait_confirming(t)
    t.wait_flat("asks: git would run what the repository's config names: filter.x.clean")
    t.wait_flat("(in .git/config)")
    t.type("n")
    t.wait_text("Second done.")
    assert not marker.exists()
    assert len(wait_posts(server, 4)) == 4
