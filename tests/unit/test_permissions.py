"""The session policy (dashfloat/tools/permissions.py): layers, mode, session rules, aliases,
describe and the audit line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashfloat import config as config_module
from dashfloat.config import Config
from dashfloat.tools import rules
from dashfloat.tools.permissions import SESSION_LAYER, Policy, audit_line
from dashfloat.tools.rules import ALLOW, ASK, DENY, parse_rule


def layer(label: str, *specs: tuple[str, str]) -> tuple[str, list[rules.Rule]]:
    return label, [parse_rule(text, decision, label) for decision, text in specs]


def cmd(command: str) -> dict:
    return {"command": command}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


# ---- layers and mode ---------------------------------------------------------------


def test_modes_are_the_same_in_config_and_rules() -> None:
    assert config_module.PERMISSION_MODES == rules.MODES
    assert set(config_module.MODE_STRICTNESS) == set(rules.MODES)


def test_decide_uses_the_configured_layers(root: Path) -> None:
    policy = Policy([
        layer("user config u", (DENY, "execute_command(rm *)")),
        layer("command line", (ALLOW, "execute_command(git status)")),
    ])
    allowed = policy.decide("execute_command", cmd("git status"), root)
    assert allowed.decision == ALLOW
    assert allowed.who == 'rule "execute_command(git status)" in command line'
    denied = policy.decide("execute_command", cmd("git status; rm -rf /"), root)
    assert denied.decision == DENY
    assert denied.who == 'rule "execute_command(rm *)" in user config u'
    assert policy.decide("execute_command", cmd("make"), root).who == "built-in default"
    assert policy.decide("read_file", {"path": "a.txt"}, root).decision == ALLOW


def test_from_config_takes_layers_mode_and_its_source(root: Path) -> None:
    config = Config(
        root=root, permission_mode="read-only",
        permissions=[layer("command line", (ALLOW, "execute_command(ls)"))],
        sources={"permission_mode": "command line --permission-mode"},
    )
    policy = Policy.from_config(config)
    assert policy.mode == "read-only"
    assert policy.mode_source == "command line --permission-mode"
    assert [label for label, _ in policy.layers] == ["command line"]
    decision = policy.decide("execute_command", cmd("ls"), root)
    assert (decision.decision, decision.who) == (DENY, "mode read-only")


def test_mode_can_be_changed_and_is_checked(root: Path) -> None:
    policy = Policy()
    assert policy.mode == "ask"
    assert policy.decide("write_file", {"path": "a"}, root).decision == ASK
    policy.mode = "accept-edits"
    assert policy.decide("write_file", {"path": "a"}, root).decision == ALLOW
    assert policy.mode_source == "this session"
    with pytest.raises(ValueError, match="unknown permission mode"):
        policy.mode = "yolo"
    with pytest.raises(ValueError, match="unknown permission mode"):
        Policy(mode="everything")
    assert policy.mode == "accept-edits"


def test_reserved_layer_names_are_refused() -> None:
    for name in (rules.BUILTIN_LAYER, SESSION_LAYER):
        with pytest.raises(ValueError, match="reserved"):
            Policy([(name, [])])


# ---- the session layer ----------------------------------------------------------------


def test_allow_exact_allows_exactly_that_command(root: Path) -> None:
    policy = Policy()
    command = "git status; make test"
    assert policy.decide("execute_command", cmd(command), root).decision == ASK
    rule = policy.allow_exact("execute_command", cmd(command))
    assert rule.layer == SESSION_LAYER and rule.exact and rule.decision == ALLOW
    decision = policy.decide("execute_command", cmd(command), root)
    assert decision.decision == ALLOW
    assert decision.who == f'rule "execute_command({command})" in session'
    # anything else still asks
    assert policy.decide("execute_command", cmd(command + " "), root).decision == ASK
    assert policy.decide("execute_command", cmd("git status"), root).decision == ASK


def test_allow_exact_does_not_duplicate_and_revoke_removes(root: Path) -> None:
    policy = Policy()
    first = policy.allow_exact("execute_command", cmd("make"))
    assert policy.allow_exact("execute_command", cmd("make")) is first
    second = policy.allow_exact("write_file", {"path": "docs/a.md", "content": "x"})
    assert policy.session_rules() == [first, second]
    assert policy.all_layers()[-1] == (SESSION_LAYER, [first, second])
    assert policy.decide("write_file", {"path": "./docs//a.md"}, root).decision == ALLOW
    assert policy.decide("write_file", {"path": "docs/b.md"}, root).decision == ASK
    assert policy.revoke(0) is first
    assert policy.session_rules() == [second]
    assert policy.decide("execute_command", cmd("make"), root).decision == ASK
    with pytest.raises(IndexError):
        policy.revoke(1)
    with pytest.raises(IndexError):
        policy.revoke(-1)
    # the returned list is a copy
    policy.session_rules().clear()
    assert policy.session_rules() == [second]


def test_session_allow_never_beats_deny_mode_or_protection(root: Path) -> None:
    policy = Policy([layer("user config u", (DENY, "execute_command(rm *)"))])
    policy.allow_exact("execute_command", cmd("rm -rf build"))
    assert policy.decide("execute_command", cmd("rm -rf build"), root).decision == DENY
    policy.allow_exact("write_file", {"path": ".git/hooks/pre-commit"})
    assert policy.decide("write_file", {"path": ".git/hooks/pre-commit"}, root).decision == ASK
    policy.allow_exact("execute_command", cmd("make"))
    policy.mode = "read-only"
    assert policy.decide("execute_command", cmd("make"), root).decision == DENY


def test_allow_exact_refuses_a_call_without_a_main_argument() -> None:
    policy = Policy()
    with pytest.raises(rules.RuleError):
        policy.allow_exact("execute_command", {})
    with pytest.raises(rules.RuleError):
        policy.allow_exact("Bash", cmd("ls"))
    assert policy.session_rules() == []


# ---- symlink aliases -------------------------------------------------------------------


def test_a_deny_rule_also_holds_through_a_symlink(root: Path) -> None:
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("k")
    os.symlink("secrets", root / "innocent")
    policy = Policy([layer("user config u", (DENY, "read_file(secrets/**)"))])
    decision = policy.decide("read_file", {"path": "innocent/key"}, root)
    assert decision.decision == DENY
    assert policy.decide("read_file", {"path": "other.txt"}, root).decision == ALLOW
    # without the file system the engine alone cannot know
    assert rules.evaluate(policy.all_layers(), "read_file", {"path": "innocent/key"},
                          root=str(root)).decision == ALLOW


def test_an_allow_rule_must_hold_for_the_resolved_name_too(root: Path) -> None:
    (root / "private").mkdir()
    os.symlink("private", root / "docs")
    policy = Policy([layer("command line", (ALLOW, "write_file(docs/**)"))])
    assert policy.decide("write_file", {"path": "docs/a.md"}, root).decision == ASK
    os.unlink(root / "docs")
    (root / "docs").mkdir()
    assert policy.decide("write_file", {"path": "docs/a.md"}, root).decision == ALLOW


def test_protection_holds_through_a_symlink(root: Path) -> None:
    (root / ".git").mkdir()
    os.symlink(".git", root / "g")
    policy = Policy(mode="accept-edits")
    assert policy.decide("write_file", {"path": "g/config"}, root).decision == ASK
    assert policy.decide("write_file", {"path": "x/config"}, root).decision == ALLOW


def test_unresolvable_paths_just_have_no_alias(root: Path, tmp_path: Path) -> None:
    os.symlink(str(tmp_path), root / "out")
    os.symlink("loop", root / "loop")
    policy = Policy([layer("user config u", (DENY, "read_file(secrets/**)"))])
    for path in ("out/x", "loop/x", "../x", "", "a\x00b"):
        decision = policy.decide("read_file", {"path": path}, root)
        assert decision.decision in (ALLOW, ASK, DENY)
    assert policy.decide("read_file", {"path": 3}, root).decision == DENY  # fail closed
    assert policy.decide("list_directory", {}, root).decision == ALLOW
    assert policy.decide("read_file", {"path": "a"}, None).decision == ALLOW
    assert policy.decide("nope", {"path": "a"}, root).decision == DENY


# ---- describe and audit ----------------------------------------------------------------


def test_describe_lists_every_layer_lowest_first(root: Path) -> None:
    rule = parse_rule("execute_command(rm *)", DENY, "user config u", match=["rm x"])
    policy = Policy(
        [("user config u", [rule]), ("project config p", []),
         layer("command line", (ALLOW, "execute_command(git status)"))],
        "unrestricted", mode_source="environment DASHFLOAT_PERMISSION_MODE",
    )
    policy.allow_exact("execute_command", cmd("echo \x1b[31m\nmake"))
    lines = policy.describe()
    text = "\n".join(lines)
    assert lines[0] == "mode: unrestricted   (environment DASHFLOAT_PERMISSION_MODE)"
    assert "WARNING" in lines[1]
    assert lines[2].startswith("layers, lowest first")
    heads = [line for line in lines[3:] if line.endswith(":") and not line.startswith(" ")]
    assert heads == ["built-in:", "user config u:", "project config p:", "command line:",
                     "session:"]
    assert "  allow  read_file" in lines
    assert "  ask    .git/**   (git's own files: its config, hooks and attributes make git run programs)" in lines
    assert any(line.startswith("  protection: write_file and edit_file of these paths") for line in lines)
    assert "  deny   execute_command(rm *)   (1 example checked)" in lines
    assert "  allow  execute_command(git status)" in lines
    assert text.index("project config p:\n  (no rules)") > 0
    assert "  allow  execute_command(echo \\e[31m\\nmake)   (exact)" in lines
    assert "\x1b" not in text
    assert len(lines) == len(text.splitlines())


def test_audit_line_is_one_safe_line(root: Path) -> None:
    policy = Policy([layer("user config /h/c.toml", (DENY, "execute_command(rm *)"))])
    args = cmd("rm -rf /\n\x1b[2J")
    decision = policy.decide("execute_command", args, root)
    line = policy.audit_line("execute_command", args, decision)
    assert line == (
        f"tool=execute_command args_sha256={rules.args_hash('execute_command', args)} "
        'decision=deny by="rule \\"execute_command(rm *)\\" in user config /h/c.toml" '
        "mode=ask"
    )
    assert "\n" not in line and "\x1b" not in line and "rm -rf" not in line
    odd = audit_line("evil tool\n", {}, rules.Decision(DENY, "unknown tool", "x"))
    assert odd.startswith('tool="evil tool\\n" args_sha256=')
    assert "mode=" not in odd and "\n" not in odd


# ---- more of the same, found by `make mutation` -----------------------------------------


def test_session_rules_differ_by_tool_and_by_argument(root: Path) -> None:
    policy = Policy()
    make = policy.allow_exact("execute_command", cmd("make"))
    ls = policy.allow_exact("execute_command", cmd("ls"))
    write = policy.allow_exact("write_file", {"path": "a.txt"})
    edit = policy.allow_exact("edit_file", {"path": "a.txt"})
    assert policy.session_rules() == [make, ls, write, edit]
    assert policy.decide("edit_file", {"path": "a.txt"}, root).decision == ALLOW
    with pytest.raises(IndexError, match="no session rule number 4"):
        policy.revoke(4)
    assert policy.revoke(3) is edit


def test_allow_exact_with_the_root_names_a_path_as_decide_sees_it(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "docs").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    policy = Policy()
    rule = policy.allow_exact("write_file", {"path": str(real / "docs" / "a.md")}, root=link)
    assert rule.pattern == "docs/a.md"
    assert policy.decide("write_file", {"path": "docs/a.md"}, link).decision == ALLOW
    assert policy.decide("write_file", {"path": str(real / "docs" / "a.md")}, link).decision == ALLOW
    # a command is never a path, whatever it looks like
    command = policy.allow_exact("execute_command", cmd(str(real / "docs")), root=link)
    assert command.pattern == str(real / "docs")


def test_respelled_only_changes_an_absolute_path_inside_through_a_link(tmp_path: Path) -> None:
    from dashfloat.tools.permissions import _respelled
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    inside = {"path": str(real / "sub" / "x")}
    assert _respelled("read_file", inside, str(link)) == {"path": "sub/x"}
    assert _respelled("read_file", inside, None) is inside
    assert _respelled("read_file", inside, str(real)) is inside  # lexically inside already
    for args in ({"path": "sub/x"}, {"path": str(tmp_path / "elsewhere")}, {"path": 3}, {},
                 {"path": str(real / "sub") + "\x00x"}):
        assert _respelled("read_file", args, str(link)) is args
    assert _respelled("execute_command", {"command": str(real)}, str(link)) == {"command": str(real)}
    assert _respelled("nope", inside, str(link)) is inside
    assert _respelled("read_file", [str(real)], str(link)) == [str(real)]


def test_aliases_of_the_file_tools(tmp_path: Path) -> None:
    from dashfloat.tools.permissions import _aliases
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "alias").symlink_to("sub")
    assert _aliases("read_file", {"path": "alias/x"}, str(root)) == ("sub/x",)
    assert _aliases("list_directory", {"path": "alias"}, str(root)) == ("sub",)
    assert _aliases("search_workspace", {"path": "alias"}, str(root)) == ("sub",)
    assert _aliases("read_file", {"path": "sub/x"}, str(root)) == ()
    assert _aliases("read_file", {"path": "alias/x"}, None) == ()
    assert _aliases("execute_command", {"command": "alias"}, str(root)) == ()
    assert _aliases("read_file", ["alias/x"], str(root)) == ()
    assert _aliases("nope", {"path": "alias/x"}, str(root)) == ()
    for path in ("", "a\x00b", None, 3):
        assert _aliases("read_file", {"path": path}, str(root)) == ()


def test_describe_without_a_source_and_with_several_examples(root: Path) -> None:
    rule = parse_rule("execute_command(rm *)", DENY, "user config u", match=["rm x", "rm y"],
                      not_match=["ls"])
    lines = Policy([("user config u", [rule])]).describe()
    assert lines[:2] == ["mode: ask", "  calls that no rule allows ask first"]
    assert "  deny   execute_command(rm *)   (3 examples checked)" in lines
    assert lines[-2:] == ["session:", "  (no rules)"]
    policy = Policy(mode_source="x\ny")
    policy.mode = "read-only"
    assert policy.describe()[:2] == ["mode: read-only   (this session)",
                                     "  every write, edit and command is denied"]
    assert Policy(mode="accept-edits", mode_source="a\nb").describe()[0] == "mode: accept-edits   (a\\nb)"


def test_a_path_the_path_policy_cannot_resolve_has_no_alias(root: Path, monkeypatch) -> None:
    import types

    from dashfloat.tools import pathpolicy, permissions

    (root / "sub").mkdir()
    (root / "alias").symlink_to("sub")
    policy = Policy([layer("user config u", (DENY, "read_file(sub/**)"))])

    def unresolvable(*args, **kwargs):
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(pathpolicy, "resolve", unresolvable)
        assert permissions._aliases("read_file", {"path": "alias/x"}, str(root)) == ()
        # (no alias: the rules see the lexical name; the path policy refuses the read itself)
        assert policy.decide("read_file", {"path": "alias/x"}, root).decision == ALLOW
    no_relpath = types.SimpleNamespace(fspath=os.fspath, path=types.SimpleNamespace(
        relpath=lambda *a: (_ for _ in ()).throw(ValueError("path is on mount 'C:'"))))
    monkeypatch.setattr(permissions, "os", no_relpath)
    assert permissions._aliases("read_file", {"path": "alias/x"}, str(root)) == ()
    assert policy.decide("read_file", {"path": "alias/x"}, root).decision == ALLOW
