"""sed and awk scripts that do more than filter text: an allow rule for the program must not
let its script run commands or write files (tools/scripts.py, rules.dangerous_script)."""

from __future__ import annotations

import pytest

from dashfloat.tools import pipeline, rules
from dashfloat.tools.permissions import Policy
from dashfloat.tools.scripts import awk_danger, sed_danger


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["sed", "-n", "1,20p", "f"], None),
        (["sed", "s/hello/there/g", "f"], None),
        (["sed", "/re/d;s|a|b|gI", "f"], None),
        (["sed", "y/abc/xyz/", "f"], None),
        (["sed", "$!N;P;D", "f"], None),
        (["sed", "-E", r"s/(x)+/\1/2g", "f"], None),
        (["sed", ":a;N;$!ba;s/\\n/ /g", "f"], None),
        (["sed", "a hello", "f"], None),
        (["sed", "r other.txt", "f"], None),  # reads, as cat would
        (["sed", "-n", "s/a/b/e", "f"], "runs a command: the e flag of s"),
        (["sed", "1e rm -rf x", "f"], "runs a command: the e command"),
        (["sed", "e", "f"], "runs a command: the e command"),
        (["sed", "w out.txt", "f"], "writes a file: the w command"),
        (["sed", "/x/W out.txt", "f"], "writes a file: the W command"),
        (["sed", "-e", "s/x/y/", "-e", "/foo/w leak", "f"], "writes a file: the w command"),
        (["sed", "--expression=s/x/y/w leak", "f"], "writes a file: the w flag of s"),
        (["sed", r"s/a\/b/c/w x", "f"], "writes a file: the w flag of s"),
        (["sed", "s/a/b/;e date", "f"], "runs a command: the e command"),
        (["sed", "-f", "script.sed", "f"], "its script is read from a file (-f)"),
        (["sed", "-nf", "script.sed", "f"], "its script is read from a file (-nf)"),
        (["sed", "s/unterminated", "f"], "a script it cannot read (it may run commands)"),
    ],
)
def test_sed_scripts(argv, expected):
    assert sed_danger(argv) == expected


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["awk", "{print $1}", "f"], None),
        (["awk", "-F:", "{print $1}", "/etc/passwd"], None),
        (["awk", "-v", "x=1", "{print x}"], None),
        (["awk", '{system("rm x")}'], "runs a command: system()"),
        (["awk", '{print | "sh"}'], "runs a command: a pipe"),
        (["awk", 'BEGIN{"date" | getline d}'], "reads a command's output or a file: getline"),
        (["awk", '{print > "out"}'], "may write a file: a > redirection (or a comparison)"),
        (["awk", "-f", "x.awk", "f"], "its script is read from a file or an extension (-f)"),
        (["gawk", "-l", "filefuncs", "{print}"], "its script is read from a file or an extension (-l)"),
    ],
)
def test_awk_scripts(argv, expected):
    assert awk_danger(argv) == expected


def _policy(*allow: str) -> Policy:
    layer = [rules.parse_rule(f"execute_command({a})", rules.ALLOW, "user config") for a in allow]
    return Policy([("user config", layer)])


@pytest.mark.parametrize(
    "command, allow",
    [
        ("sed -n '1e touch pwned' a.txt", "sed -n *"),
        ("sed 's/x/y/w /tmp/leak' a.txt", "sed *"),
        ("awk 'BEGIN{system(\"touch pwned\")}'", "awk *"),
        ("tree -o listing.txt", "tree *"),
    ],
)
def test_an_allow_rule_for_the_program_asks_for_a_script_that_runs_or_writes(tmp_path, command, allow):
    decision = pipeline.judge("execute_command", {"command": command}, str(tmp_path), _policy(allow))
    assert decision.decision == rules.ASK, decision
    assert "would allow it" in decision.reason


@pytest.mark.parametrize("command, allow", [("sed -n '1,5p' a.txt", "sed -n *"), ("awk '{print $1}' a.txt", "awk *")])
def test_an_allow_rule_still_allows_a_plain_filter(tmp_path, command, allow):
    decision = pipeline.judge("execute_command", {"command": command}, str(tmp_path), _policy(allow))
    assert decision.decision == rules.ALLOW, decision
