"""The tool pipeline's stages, each on its own, and the one place that orders them."""

from __future__ import annotations

import pytest

from dashfloat.tools import pipeline, rules
from dashfloat.tools.permissions import Policy

SECRET = "sk-test-0123456789abcdef"


def ctx(tmp_path, name, args, *, policy=None, raw_error=None, **kw) -> pipeline.CallContext:
    raw = {"id": "c1", "name": name, "args": args, "error": raw_error}
    return pipeline.CallContext(call_id="c1", name=name, raw=raw, root=str(tmp_path),
                                policy=policy or Policy(), **kw)


def test_the_order_of_the_chains_is_fixed_here():
    assert [s.__name__ for s in pipeline.PRE_EXECUTE] == [
        "stage_validate", "stage_path_policy", "stage_rules", "stage_hooks", "stage_repository", "stage_repeat"]
    assert [s.__name__ for s in pipeline.POST_EXECUTE] == ["stage_redact", "stage_post_hooks"]


def test_validation_ends_a_call_with_bad_arguments(tmp_path):
    c = ctx(tmp_path, "read_file", {"path": "a", "limit": 0})
    verdict = pipeline.pre_execute(c)
    assert verdict[0] == "done" and verdict[1]["code"] == "bad_arguments"
    assert c.guard.decision is None  # no rule was even asked


def test_the_path_policy_ends_a_call_before_the_rules(tmp_path):
    c = ctx(tmp_path, "list_directory", {"path": "../.."})
    verdict = pipeline.pre_execute(c)
    assert verdict == ("done", verdict[1]) and verdict[1]["code"] == "path_escape"
    assert c.rule_decision is None


@pytest.mark.parametrize(
    "name,args,expected",
    [
        ("read_file", {"path": "a.txt"}, "run"),
        ("list_directory", {}, "run"),
        ("write_file", {"path": "a.txt", "content": "x"}, "ask"),
        ("execute_command", {"command": "ls"}, "ask"),
    ],
)
def test_built_in_defaults(tmp_path, name, args, expected):
    (tmp_path / "a.txt").write_text("a")
    assert pipeline.pre_execute(ctx(tmp_path, name, args))[0] == expected


def test_a_deny_rule_is_a_denied_result_naming_the_rule(tmp_path):
    policy = Policy([("user config", [rules.parse_rule("read_file(.env)", "deny", "user config")])])
    verdict = pipeline.pre_execute(ctx(tmp_path, "read_file", {"path": ".env"}, policy=policy))
    assert verdict[0] == "done" and verdict[1]["code"] == "denied"
    assert verdict[1]["error"] == 'denied by rule "read_file(.env)" in user config: a deny rule matches'


@pytest.mark.parametrize("spelled", ["\udcc3\udca9.env", "\u00e9.env", "./\u00e9.env"])
def test_a_deny_rule_on_a_non_ascii_name_holds_however_the_model_spells_it(tmp_path, spelled):
    """The model's surrogate escapes \\udcc3\\udca9 are the bytes of é: the rules must see
    é.env, the file the tool would read (issue 14 §3: one text per file)."""
    (tmp_path / "\u00e9.env").write_text("SECRET=1")
    policy = Policy([("user config", [rules.parse_rule("read_file(\u00e9.env)", "deny", "user config")])])
    c = ctx(tmp_path, "read_file", {"path": spelled}, policy=policy)
    verdict = pipeline.pre_execute(c)
    assert verdict[0] == "done" and verdict[1]["code"] == "denied", verdict


def test_the_rules_hooks_and_tool_see_the_written_form_of_a_name(tmp_path):
    c = ctx(tmp_path, "read_file", {"path": "caf\udce9.txt"})
    pipeline.pre_execute(c)
    assert c.args["path"] == "caf\\xe9.txt"


def hook(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return str(p)


def test_a_hook_can_tighten_an_allow_to_deny(tmp_path):
    h = hook(tmp_path, "h.sh", "cat >/dev/null; echo nope; exit 2\n")
    verdict = pipeline.pre_execute(ctx(tmp_path, "list_directory", {}, pre_hooks=(h,)))
    assert verdict[0] == "done" and "nope" in verdict[1]["error"]


def test_a_hook_cannot_relax_and_the_attempt_is_noted(tmp_path, caplog):
    h = hook(tmp_path, "h.sh", "cat >/dev/null; echo '{\"decision\": \"allow\"}'\n")
    c = ctx(tmp_path, "execute_command", {"command": "ls"}, pre_hooks=(h,))
    with caplog.at_level("WARNING", logger="dashfloat.pipeline"):
        assert pipeline.pre_execute(c)[0] == "ask"
    assert any("would relax ask" in n for n in c.notes)
    assert c.guard.relax_attempts
    assert any("tried to relax ask to allow" in r.getMessage() for r in caplog.records)  # the audit log


def test_redaction_of_the_api_key_everywhere_in_a_result(tmp_path):
    c = ctx(tmp_path, "execute_command", {"command": "env"}, secrets=(SECRET,))
    result = {"ok": True, "output": f"OPENAI_API_KEY={SECRET}\n", "nested": [{"x": SECRET}], "n": 3}
    out = pipeline.post_execute(c, result)
    assert SECRET not in repr(out)
    assert out["output"] == "OPENAI_API_KEY=[redacted: API key]\n" and out["n"] == 3


def test_short_secrets_are_not_redacted_everywhere(tmp_path):
    c = ctx(tmp_path, "execute_command", {"command": "env"}, secrets=("ab",))
    assert pipeline.post_execute(c, {"ok": True, "output": "abc"})["output"] == "abc"


def test_post_hook_notes_are_added_and_redacted(tmp_path):
    h = hook(tmp_path, "h.sh", f"cat >/dev/null; echo 'key is {SECRET}'\n")
    c = ctx(tmp_path, "list_directory", {}, post_hooks=(h,), secrets=(SECRET,))
    c.args = {"path": "."}
    out = pipeline.post_execute(c, {"ok": True})
    assert out["hook_notes"] == ["key is [redacted: API key]"]


def test_a_hook_without_an_answer_leaves_the_question_to_the_next_hook(tmp_path):
    quiet = hook(tmp_path, "quiet.sh", "cat >/dev/null; exit 0\n")
    deny = hook(tmp_path, "deny.sh", "cat >/dev/null; echo no; exit 2\n")
    verdict = pipeline.pre_execute(ctx(tmp_path, "list_directory", {}, pre_hooks=(quiet, deny)))
    assert verdict[0] == "done" and verdict[1]["code"] == "denied"


def test_a_mutation_whose_preview_cannot_be_built_ends_before_the_question(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    args = {"path": "a.txt", "search_block": "not there", "replace_block": "y"}
    verdict = pipeline.pre_execute(ctx(tmp_path, "edit_file", args))
    assert verdict[0] == "done" and verdict[1]["code"] == "search_not_found"


def test_post_hook_notes_and_failures_reach_the_notes(tmp_path):
    good = hook(tmp_path, "good.sh", "cat >/dev/null; echo looked at it\n")
    bad = hook(tmp_path, "bad.sh", "cat >/dev/null; exit 3\n")
    c = ctx(tmp_path, "list_directory", {}, post_hooks=(good, bad))
    c.args = {"path": "."}
    pipeline.post_execute(c, {"ok": True})
    assert len(c.notes) == 2
    assert c.notes[0] == f'post_tool_use hook "{good}": looked at it'
    assert c.notes[1].startswith(f'post_tool_use hook "{bad}"')


def test_redaction_keeps_tokens_that_are_not_the_configured_secret(tmp_path):
    c = ctx(tmp_path, "read_file", {"path": "a"}, secrets=(SECRET,))
    text = "Authorization: Bearer abcdefghijklmnop0123 https://u:pw0123456789@example.com/?token=zzzzzzzz12345678"
    assert pipeline.post_execute(c, {"ok": True, "content": text})["content"] == text


def _asks_lines(prepared) -> list[str]:
    return [text for kind, text in prepared.preview if kind == "marker" and text.startswith("asks: ")]


def test_the_question_says_why_it_asks_when_a_rule_or_a_check_made_it_ask(tmp_path):
    """An allow rule that would have allowed the command but for what its script does, or an
    ask rule, is said on the preview, once; a default question says nothing more."""
    layer = [rules.parse_rule("execute_command(awk *)", "allow", "command line"),
             rules.parse_rule("execute_command(make *)", "ask", "command line")]
    policy = Policy([("command line", layer)])
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command",
                                              {"command": "awk '{ print > \"out\" }' f"}, policy=policy))
    assert kind == "ask" and _asks_lines(prepared) == [
        'asks: rule "execute_command(awk *)" in command line would allow it, but its awk script may '
        'write a file: a > redirection']
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command", {"command": "make x"}, policy=policy))
    assert kind == "ask" and _asks_lines(prepared) == ['asks: rule "execute_command(make *)" in command line matches']
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command", {"command": "ls"}, policy=policy))
    assert kind == "ask" and _asks_lines(prepared) == []  # the default: nothing to explain
    c = ctx(tmp_path, "execute_command", {"command": "awk 1 f"}, policy=policy, repeats=2)
    kind, prepared = pipeline.pre_execute(c)  # the repeat guard says it once
    assert kind == "ask" and len(_asks_lines(prepared)) == 1 and "times in a row" in _asks_lines(prepared)[0]


def test_a_hook_that_asks_is_named_on_the_question(tmp_path):
    """(over an allow rule: a hook that asks where the default asks anyway decides nothing)"""
    policy = Policy([("command line", [rules.parse_rule("execute_command(ls)", "allow", "command line")])])
    h = hook(tmp_path, "h.sh", "cat >/dev/null; echo '{\"decision\": \"ask\", \"reason\": \"deploys need a look\"}'\n")
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command", {"command": "ls"}, pre_hooks=(h,),
                                              policy=policy))
    assert kind == "ask" and _asks_lines(prepared) == [f'asks: pre_tool_use hook "{h}": deploys need a look']
    quiet = hook(tmp_path, "q.sh", "cat >/dev/null; echo '{\"decision\": \"ask\"}'\n")
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command", {"command": "ls"}, pre_hooks=(quiet,),
                                              policy=policy))
    assert _asks_lines(prepared) == [f'asks: pre_tool_use hook "{quiet}": it answered ask']


def test_the_reason_it_asks_comes_first_and_a_default_question_adds_no_note(tmp_path):
    """The rule's reason goes before the notes of later stages (the repository's, the repeat
    guard's); the default question's preview has no note at all (not an empty one)."""
    from tests.test_repository_programs import config, make_repo

    top = make_repo(tmp_path / "t")
    (top / ".gitattributes").write_text("*.txt filter=x\n")
    config(top, "filter.x.clean", "touch pwned; cat")
    policy = Policy([("command line", [rules.parse_rule("execute_command(git *)", "ask", "command line")])])
    kind, prepared = pipeline.pre_execute(ctx(top, "execute_command", {"command": "git status"}, policy=policy,
                                              repeats=2))
    markers = [text for k, text in prepared.preview if k == "marker"]
    assert kind == "ask" and [m.split(":")[0] for m in markers] == ["asks", "note", "asks"]
    assert markers[0] == 'asks: rule "execute_command(git *)" in command line matches'
    assert markers[1].startswith("note: git would run") and "times in a row" in markers[2]
    kind, prepared = pipeline.pre_execute(ctx(tmp_path, "execute_command", {"command": "ls"}))
    assert kind == "ask" and [k for k, _ in prepared.preview].count("marker") == 0


def test_a_command_is_analysed_once_per_call(tmp_path, monkeypatch):
    """The rules, the repository check and the cargo check all read the command: the text is
    analysed once (a 100 KB line cost 4 analyses, 130 ms, before), and the memo is exact:
    another text is analysed anew, and a call answers as the uncached analysis would."""
    from dashfloat.tools import repocheck

    seen = []
    real = rules._analyze_uncached
    monkeypatch.setattr(rules, "_analyze_uncached", lambda text: seen.append(text) or real(text))
    policy = Policy([("command line", [rules.parse_rule("execute_command(git *)", "allow", "command line")])])
    for command in ("git status --short", "git log -1", "git status --short"):
        c = ctx(tmp_path, "execute_command", {"command": command}, policy=policy)
        pipeline.pre_execute(c)
        assert c.guard.decision == "allow"
    assert seen == ["git status --short", "git log -1", "git status --short"]
    first = rules.analyze_command("ls; rm -rf /")
    assert rules.analyze_command("ls; rm -rf /") is first
    assert rules.analyze_command("ls; rm -rf x").simple == [["ls"], ["rm", "-rf", "x"]]
    assert rules.analyze_command("ls; rm -rf /").simple == first.simple  # analysed anew, equal
    assert repocheck.runs_git("echo a; git status") and not repocheck.runs_git("echo git-ish; ls")
