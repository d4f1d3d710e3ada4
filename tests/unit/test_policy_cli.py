"""`dashfloat policy check CALL...` / `dashfloat policy list` and the permission options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dashfloat import cli, manpage
from dashfloat.config import ConfigError, load_config


@pytest.fixture
def root(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "DASHFLOAT_PERMISSION_MODE", "OPENAI_BASE_URL",
                "DASHFLOAT_MODEL", "DASHFLOAT_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(path)
    return path


def user_file(home: Path, text: str) -> Path:
    path = home / ".config" / "dashfloat" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project_file(root: Path, text: str) -> Path:
    path = root / ".dashfloat" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- policy check ----------------------------------------------------------------------


def test_check_allow(root: Path, capsys) -> None:
    code, out, err = run(capsys, "--allow", "execute_command(git status)",
                         "policy", "check", "execute_command(git status)")
    assert (code, err) == (0, "")
    assert out == (
        "allow  execute_command(git status)\n"
        '  decided by: rule "execute_command(git status)" in command line\n'
        "  reason: an allow rule matches\n"
        "  mode: ask\n"
    )


def test_check_ask_for_a_list_names_the_shape(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "--allow", "execute_command(git status)",
                       "policy", "check", "execute_command(git status; rm -rf /)")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "ask    execute_command(git status; rm -rf /)"
    assert lines[1] == "  decided by: command shape: list"
    assert lines[2].startswith('  reason: rule "execute_command(git status)" in command line '
                               "names only part of the command")


def test_check_deny_names_rule_and_layer(root: Path, home: Path, capsys) -> None:
    upath = user_file(home, '[permissions]\ndeny = ["execute_command(rm *)"]\n')
    code, out, _ = run(capsys, "--allow", "execute_command(rm -rf build)", "policy", "check",
                       "execute_command(git status; rm -rf /)", "execute_command(rm -rf build)")
    assert code == 0
    blocks = out.split("\n  mode: ask\n")
    assert blocks[0] == (
        "deny   execute_command(git status; rm -rf /)\n"
        f'  decided by: rule "execute_command(rm *)" in user config {upath}\n'
        "  reason: a deny rule matches"
    )
    assert blocks[1].startswith("deny   execute_command(rm -rf build)\n")


def test_check_defaults_protection_and_modes(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "policy", "check", "read_file(src/a.py)", "write_file(a.txt)",
                       "write_file(.git/hooks/pre-commit)", "list_directory()")
    assert code == 0
    firsts = [line for line in out.splitlines() if not line.startswith(" ")]
    assert firsts == ["allow  read_file(src/a.py)", "ask    write_file(a.txt)",
                      "ask    write_file(.git/hooks/pre-commit)", "allow  list_directory()"]
    assert "  decided by: built-in default" in out
    assert '  decided by: built-in protection "write_file(**/.git/hooks/**)"' in out
    code, out, _ = run(capsys, "--permission-mode", "accept-edits", "policy", "check",
                       "write_file(a.txt)")
    assert out.splitlines()[:2] == ["allow  write_file(a.txt)",
                                    "  decided by: mode accept-edits"]
    assert out.splitlines()[-1] == "  mode: accept-edits"
    code, out, _ = run(capsys, "policy", "check", "--permission-mode", "read-only",
                       "execute_command(ls)")  # options may follow the words too
    assert out.splitlines()[:2] == ["deny   execute_command(ls)", "  decided by: mode read-only"]


def test_check_uses_the_project_file_and_the_environment(root: Path, capsys,
                                                         monkeypatch) -> None:
    ppath = project_file(root, '[permissions]\nask = ["read_file(**/.env)"]\n')
    code, out, _ = run(capsys, "policy", "check", "read_file(config/.env)")
    assert out.splitlines()[1] == (
        f'  decided by: rule "read_file(**/.env)" in project config {ppath}'
    )
    monkeypatch.setenv("DASHFLOAT_PERMISSION_MODE", "read-only")
    code, out, _ = run(capsys, "policy", "check", "edit_file(x)")
    assert out.startswith("deny   edit_file(x)\n")


def test_check_with_dash_c_judges_paths_against_that_root(root: Path, tmp_path: Path,
                                                          capsys) -> None:
    other = tmp_path / "other"
    (other / "secrets").mkdir(parents=True)
    (other / "link").symlink_to("secrets")
    code, out, _ = run(capsys, "-C", str(other), "--deny", "read_file(secrets/**)",
                       "policy", "check", "read_file(link/key)", f"read_file({other}/secrets/k)")
    assert code == 0
    firsts = [line for line in out.splitlines() if not line.startswith(" ")]
    assert firsts == ["deny   read_file(link/key)", f"deny   read_file({other}/secrets/k)"]


def test_check_never_executes_anything(root: Path, capsys) -> None:
    target = root / "created"
    command = f"touch {target}"
    code, out, _ = run(capsys, "--allow", f"execute_command({command})", "policy", "check",
                       f"execute_command({command})",
                       f"execute_command(sh -c 'echo x > {target}')",
                       f"write_file({target.name})", f"edit_file({target.name})")
    assert code == 0
    assert out.startswith(f"allow  execute_command({command})\n")
    code, out, _ = run(capsys, "--permission-mode", "unrestricted", "policy", "check",
                       f"execute_command({command})", f"write_file({target.name})")
    assert [line.split()[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "allow", "allow"]
    assert not target.exists()
    assert sorted(p.name for p in root.iterdir()) == []


def test_check_output_is_terminal_safe(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "policy", "check", "execute_command(printf '\x1b]0;x\x07'\nls)")
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert out.splitlines()[0] == "ask    execute_command(printf '\\e]0;x\\a'\\nls)"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("Bash(ls)", "unknown tool 'Bash'"),
        ("execute_command", "expected Tool(argument)"),
        ("read_file(a) extra", "unexpected text after the closing ')'"),
        ("nonsense", "expected Tool(argument)"),
    ],
)
def test_check_malformed_call_exits_2(root: Path, capsys, call: str, expected: str) -> None:
    code, out, err = run(capsys, "policy", "check", "read_file(a)", call)
    assert code == 2
    assert out == ""  # nothing is judged when one call is malformed
    assert err.startswith("dashfloat: policy check: ")
    assert expected in err


def test_bad_rules_and_config_exit_2(root: Path, capsys) -> None:
    code, out, err = run(capsys, "--deny", "Bash(rm *)", "policy", "check", "read_file(a)")
    assert (code, out) == (2, "")
    assert err.startswith("dashfloat: command line --deny: rule 'Bash(rm *)': unknown tool")
    assert "did you mean execute_command?" in err
    code, _, err = run(capsys, "--permission-mode", "yolo", "policy", "list")
    assert code == 2 and "command line --permission-mode: expected one of" in err
    ppath = project_file(root, '[permissions]\nallow = ["execute_command(make)"]\n')
    code, out, err = run(capsys, "policy", "check", "execute_command(make)")
    assert (code, out) == (2, "")
    assert err.startswith(f"dashfloat: {ppath}: [permissions] allow is not allowed in a "
                          "project file")


@pytest.mark.parametrize(
    "words",
    [["policy"], ["policy", "check"], ["policy", "list", "x"], ["polcy", "list"], ["chat"]],
)
def test_bad_command_words_are_usage_errors(root: Path, capsys, words: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(words)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: dashfloat" in err
    assert "policy" in err.splitlines()[-1]


def test_plain_dashfloat_still_needs_a_terminal(root: Path, capsys) -> None:
    # no words: the normal run, which stops at the tty check under pytest
    code, out, err = run(capsys)
    assert code == 2 and "interactive terminal" in err and out == ""
    code, out, err = run(capsys, "--deny", "edit_file")
    assert code == 2 and "interactive terminal" in err


def test_show_config_includes_the_permission_settings(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "--show-config", "--deny", "edit_file", "--permission-mode",
                       "read-only")
    assert code == 0
    assert re.search(r"^permission_mode += read-only   \(command line --permission-mode\)$",
                     out, re.M)
    assert re.search(r"^permissions +=  ?1 deny ", out, re.M)


# ---- policy list -----------------------------------------------------------------------


def test_list_prints_every_layer_and_the_mode(root: Path, home: Path, capsys) -> None:
    upath = user_file(home, 'permission_mode = "accept-edits"\n'
                            '[permissions]\nallow = ["execute_command(git status)"]\n')
    ppath = project_file(root, '[permissions]\ndeny = ["read_file(**/.env)"]\n')
    code, out, err = run(capsys, "--ask", "execute_command(make *)", "policy", "list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"mode: accept-edits   (user file {upath})"
    body = "\n".join(lines[3:])
    assert body.startswith("built-in:\n  allow  read_file\n  allow  list_directory\n")
    assert (
        f"user config {upath}:\n  allow  execute_command(git status)\n"
        f"project config {ppath}:\n  deny   read_file(**/.env)\n"
        "command line:\n  ask    execute_command(make *)\n"
        "session:\n  (no rules)"
    ) in body
    assert "  ask    .dashfloat/**, .config/dashfloat/**   (DashFloat's own configuration: " in body


def test_list_without_any_configuration(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "policy", "list")
    assert code == 0
    assert out.splitlines()[0] == "mode: ask   (default)"
    assert out.count("(no rules)") == 4  # user, project, command line, session


# ---- the man page's example configuration is valid -------------------------------------


def test_man_page_permissions_example_loads(root: Path, home: Path) -> None:
    text = manpage.generate()
    start = text.index(".nf\n[permissions]\n") + len(".nf\n")
    example = text[start:text.index(".fi\n", start)].replace("\\-", "-")
    user_file(home, example)
    config = load_config({}, {"HOME": str(home)}, root)
    decisions = [(r.decision, r.text) for r in config.permissions[0][1]]
    assert ("deny", "execute_command(rm *)") in decisions
    assert ("allow", "execute_command(git status)") in decisions
    project_file(root, example)
    with pytest.raises(ConfigError, match="allow is not allowed in a project file"):
        load_config({}, {"HOME": str(home)}, root)


# ---- the path policy comes first, as in a real run -----------------------------------------


@pytest.mark.parametrize("call, shown", [
    ("read_file(/etc/passwd)", "/etc/passwd"),
    ("list_directory(../..)", "../.."),
    ("write_file(sub/../../x)", "sub/../../x"),
])
def test_check_a_path_outside_the_root_is_refused_by_the_path_policy(root: Path, capsys, call, shown) -> None:
    code, out, err = run(capsys, "--permission-mode", "unrestricted", "policy", "check", call)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"deny   {call}"
    assert lines[1] == "  decided by: path policy"
    assert lines[2] == (f"  reason: refused: path escapes the working directory: {shown} "
                        "(only paths inside the working directory are allowed)")
    assert lines[3] == "  mode: unrestricted"


def test_check_a_symlink_leading_outside_is_refused(root: Path, capsys) -> None:
    (root / "etc").symlink_to("/etc")
    code, out, _ = run(capsys, "policy", "check", "read_file(etc/passwd)")
    assert code == 0
    assert out.splitlines()[:2] == ["deny   read_file(etc/passwd)", "  decided by: path policy"]
    assert "a symbolic link leads outside" in out


def test_check_a_path_inside_the_root_still_goes_to_the_rules(root: Path, capsys) -> None:
    code, out, _ = run(capsys, "policy", "check", "read_file(sub/../a.txt)")
    assert code == 0
    assert out.splitlines()[:2] == ["allow  read_file(sub/../a.txt)", "  decided by: built-in default"]
