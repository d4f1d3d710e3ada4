"""A working directory reached through a symbolic link (issue 14 §2): a linked project
directory, macOS /tmp. Absolute paths spelled through the link or through the real path both
work for every tool and for execute_command's cwd, whichever of the two names the root was
given as; previews, results and permission rules use the name relative to the root."""

from __future__ import annotations

import os

import pytest

from dashfloat.tools import pipeline, runner
from dashfloat.tools.permissions import Policy
from dashfloat.tools.rules import ALLOW, ASK, DENY, MODE_ACCEPT_EDITS, parse_rule


@pytest.fixture
def names(tmp_path):
    """(link, real): tmp/link -> tmp/real, the project, with sub/a.txt and a secret."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "a.txt").write_text("alpha\n")
    (real / "secret.txt").write_text("s3cr3t\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    link = tmp_path / "link"
    os.symlink(real, link)
    return link, real


def spell(names, how: str, rel: str) -> str:
    link, real = names
    return {"link": str(link / rel), "real": str(real / rel), "relative": rel}[how]


def run(name: str, args: dict, root) -> tuple[object, dict]:
    """(the prepared preview or None, the result), as the agent runs a call."""
    if name in runner.READ_ONLY:
        return None, runner.execute(name, args, str(root), None)
    prepared = runner.prepare(name, args, str(root))
    if isinstance(prepared, dict):
        return None, prepared
    return prepared, runner.execute(name, args, str(root), prepared)


@pytest.mark.parametrize("root_as", ["link", "real"])
@pytest.mark.parametrize("path_as", ["link", "real", "relative"])
def test_every_tool_takes_paths_through_the_link_and_the_real_path(names, root_as, path_as):
    link, real = names
    root = link if root_as == "link" else real

    _, got = run("read_file", {"path": spell(names, path_as, "sub/a.txt")}, root)
    assert got["ok"] and got["path"] == "sub/a.txt" and got["content"] == "alpha\n", got

    _, got = run("list_directory", {"path": spell(names, path_as, "sub")}, root)
    assert got["ok"] and got["path"] == "sub" and [e["name"] for e in got["entries"]] == ["a.txt"], got

    prepared, got = run("write_file", {"path": spell(names, path_as, "sub/new/b.txt"), "content": "beta\n"}, root)
    assert ("header", "+++ b/sub/new/b.txt") in prepared.preview, prepared.preview
    assert got == {"ok": True, "path": "sub/new/b.txt", "bytes": 5, "created": True}
    assert (real / "sub" / "new" / "b.txt").read_text() == "beta\n"

    prepared, got = run("edit_file", {"path": spell(names, path_as, "sub/a.txt"), "search_block": "alpha",
                                      "replace_block": "ALPHA"}, root)
    assert ("header", "--- a/sub/a.txt") in prepared.preview, prepared.preview
    assert got["ok"] and got["path"] == "sub/a.txt", got
    assert (real / "sub" / "a.txt").read_text() == "ALPHA\n"

    prepared, got = run("execute_command", {"command": "pwd -P; cat a.txt", "cwd": spell(names, path_as, "sub")}, root)
    assert ("cwd", "cwd: sub") in prepared.preview, prepared.preview
    assert got["ok"] and got["output"] == f"{os.path.realpath(real / 'sub')}\nALPHA\n", got


@pytest.mark.parametrize("root_as", ["link", "real"])
def test_outside_stays_outside_through_either_name(names, root_as):
    link, real = names
    root = link if root_as == "link" else real
    for base in (link, real):
        for path in (str(base / ".." / "outside.txt"), str(base) + "-evil/x", str(base.parent)):
            _, got = run("read_file", {"path": path}, root)
            assert got["code"] == "path_escape", (path, got)
            _, got = run("write_file", {"path": path + "/new", "content": "x"}, root)
            assert got["code"] == "path_escape", (path, got)
        _, got = run("execute_command", {"command": "true", "cwd": str(base.parent)}, root)
        assert got["code"] == "path_escape", got
    assert sorted(os.listdir(real.parent)) == ["link", "outside.txt", "real"]


@pytest.mark.parametrize("root_as", ["link", "real"])
@pytest.mark.parametrize("path_as", ["link", "real"])
def test_rules_see_the_name_relative_to_the_root(names, root_as, path_as):
    """A deny rule holds, an allow rule and accept-edits apply, "always" sticks, for a path
    spelled through either name of the root."""
    link, real = names
    root = str(link if root_as == "link" else real)
    policy = Policy([("command line", [parse_rule("read_file(secret.txt)", DENY, "command line"),
                                       parse_rule("write_file(sub/*)", ALLOW, "command line")])])
    secret = {"path": spell(names, path_as, "secret.txt")}
    assert pipeline.judge("read_file", secret, root, policy).decision == DENY
    assert policy.decide("write_file", {"path": spell(names, path_as, "sub/x"), "content": ""}, root).decision == ALLOW
    other = {"path": spell(names, path_as, "other.txt"), "content": ""}
    assert policy.decide("write_file", other, root).decision == ASK
    policy.allow_exact("write_file", other, root)
    assert policy.decide("write_file", other, root).decision == ALLOW
    assert policy.decide("write_file", {"path": "other.txt", "content": ""}, root).decision == ALLOW
    accepting = Policy([], mode=MODE_ACCEPT_EDITS)
    edit = {"path": spell(names, path_as, "sub/a.txt"), "search_block": "a", "replace_block": "b"}
    assert accepting.decide("edit_file", edit, root).decision == ALLOW
