"""Tests for dashfloat.tools.catalogue: the tools array, argument validation, row summaries."""

from __future__ import annotations

import json

import pytest

from dashfloat.tools import catalogue, results
from dashfloat.tools.catalogue import (
    MUTATING,
    READ_ONLY,
    TOOLS,
    summary,
    validate,
    validate_call,
)

# -- the catalogue's shape --------------------------------------------------------------


def test_catalogue_is_valid_openai_tools_json():
    assert json.loads(json.dumps(TOOLS, allow_nan=False)) == TOOLS
    names = [t["function"]["name"] for t in TOOLS]
    assert names == ["read_file", "write_file", "edit_file", "execute_command", "list_directory",
                     "search_workspace"]
    for tool in TOOLS:
        assert set(tool) == {"type", "function"}
        assert tool["type"] == "function"
        fn = tool["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert isinstance(fn["description"], str) and 40 < len(fn["description"]) < 600
        params = fn["parameters"]
        assert params["type"] == "object"
        assert params["additionalProperties"] is False
        assert isinstance(params["properties"], dict) and params["properties"]
        assert isinstance(params["required"], list)
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in {"string", "integer", "boolean"}
            assert prop.get("description")
        # the defaults the schema declares are the ones validation fills in
        got, err = validate(fn["name"], _required_ok(fn["name"]))
        assert err is None
        for key, prop in params["properties"].items():
            if "default" in prop:
                assert got[key] == prop["default"]


def _required_ok(name: str) -> dict:
    return {
        "read_file": {"path": "a.txt"},
        "write_file": {"path": "a.txt", "content": "x"},
        "edit_file": {"path": "a.txt", "search_block": "a", "replace_block": "b"},
        "execute_command": {"command": "true"},
        "list_directory": {},
        "search_workspace": {"pattern": "x"},
    }[name]


def test_catalogue_required_and_ranges():
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    assert by_name["read_file"]["required"] == ["path"]
    assert by_name["write_file"]["required"] == ["path", "content"]
    assert by_name["edit_file"]["required"] == ["path", "search_block", "replace_block"]
    assert by_name["execute_command"]["required"] == ["command"]
    assert by_name["list_directory"]["required"] == []
    assert by_name["search_workspace"]["required"] == ["pattern"]
    sw = by_name["search_workspace"]["properties"]
    assert sw["path"]["default"] == "." and sw["regex"] == {**sw["regex"], "type": "boolean", "default": False}
    assert "default" not in sw["glob"]
    assert sw["max_results"] == {**sw["max_results"], "type": "integer", "minimum": 1, "maximum": 1000, "default": 100}
    rf = by_name["read_file"]["properties"]
    assert rf["offset"] == {**rf["offset"], "type": "integer", "minimum": 1, "default": 1}
    assert rf["limit"] == {**rf["limit"], "type": "integer", "minimum": 1, "maximum": 10000, "default": 2000}
    assert by_name["execute_command"]["properties"]["cwd"]["default"] == "."
    assert by_name["list_directory"]["properties"]["path"]["default"] == "."


def test_descriptions_state_the_bounds():
    text = {t["function"]["name"]: t["function"]["description"] for t in TOOLS}
    assert "2,000" in text["read_file"] and "64 KiB" in text["read_file"]
    assert "30 s" in text["execute_command"] and "32 KiB" in text["execute_command"]
    assert "exactly once" in text["edit_file"]
    for name in MUTATING:
        assert "approve" in text[name]
    for tool in TOOLS:
        params = tool["function"]["parameters"]["properties"]
        for key in ("path", "cwd"):
            if key in params:
                assert "relative to the working directory" in params[key]["description"]


def test_read_only_and_mutating_partition_the_catalogue():
    assert READ_ONLY == {"read_file", "list_directory", "search_workspace"}
    assert MUTATING == {"write_file", "edit_file", "execute_command"}
    assert READ_ONLY | MUTATING == {t["function"]["name"] for t in TOOLS}
    assert not READ_ONLY & MUTATING


# -- validation: accepted, with defaults --------------------------------------------------

OK_CASES = [
    ("read_file", {"path": "a.txt"}, {"path": "a.txt", "offset": 1, "limit": 2000}),
    ("read_file", {"path": "a", "offset": 5}, {"path": "a", "offset": 5, "limit": 2000}),
    ("read_file", {"path": "a", "limit": 1}, {"path": "a", "offset": 1, "limit": 1}),
    ("read_file", {"path": "a", "limit": 10000}, {"path": "a", "offset": 1, "limit": 10000}),
    ("read_file", {"path": "a", "offset": 10**12}, {"path": "a", "offset": 10**12, "limit": 2000}),
    ("write_file", {"path": "a", "content": ""}, {"path": "a", "content": ""}),
    ("write_file", {"path": "é/ü.txt", "content": "x\r\n"}, {"path": "é/ü.txt", "content": "x\r\n"}),
    (
        "edit_file",
        {"path": "a", "search_block": "x", "replace_block": ""},
        {"path": "a", "search_block": "x", "replace_block": ""},
    ),
    ("execute_command", {"command": "ls"}, {"command": "ls", "cwd": "."}),
    ("execute_command", {"command": "ls", "cwd": "src"}, {"command": "ls", "cwd": "src"}),
    ("list_directory", {}, {"path": "."}),
    ("list_directory", {"path": "src"}, {"path": "src"}),
]


@pytest.mark.parametrize("name,args,expected", OK_CASES)
def test_validate_accepts_and_fills_defaults(name, args, expected):
    before = dict(args)
    got, err = validate(name, args)
    assert err is None
    assert got == expected
    assert args == before  # the caller's dict is not mutated


# -- validation: rejected -------------------------------------------------------------------

BAD_CASES = [
    # read_file
    ("read_file", {}, "missing required parameter 'path'"),
    ("read_file", {"path": "a", "mode": "r"}, "unknown parameter \"mode\""),
    ("read_file", {"path": 7}, "parameter 'path' expected a string, got integer"),
    ("read_file", {"path": None}, "parameter 'path' expected a string, got null"),
    ("read_file", {"path": ["a"]}, "expected a string, got array"),
    ("read_file", {"path": "a", "offset": True}, "parameter 'offset' expected an integer, got boolean"),
    ("read_file", {"path": "a", "limit": False}, "parameter 'limit' expected an integer, got boolean"),
    ("read_file", {"path": "a", "offset": 2.0}, "parameter 'offset' expected an integer, got number 2.0"),
    ("read_file", {"path": "a", "limit": 50.5}, "parameter 'limit' expected an integer"),
    ("read_file", {"path": "a", "offset": "3"}, "parameter 'offset' expected an integer, got string"),
    ("read_file", {"path": "a", "offset": 0}, "parameter 'offset' out of range: 0 (allowed >= 1)"),
    ("read_file", {"path": "a", "offset": -5}, "out of range: -5 (allowed >= 1)"),
    ("read_file", {"path": "a", "limit": 0}, "parameter 'limit' out of range: 0 (allowed 1..10000)"),
    ("read_file", {"path": "a", "limit": 10001}, "parameter 'limit' out of range: 10001 (allowed 1..10000)"),
    ("read_file", {"path": "a\x00b"}, "parameter 'path' contains a NUL byte"),
    # write_file
    ("write_file", {"path": "a"}, "missing required parameter 'content'"),
    ("write_file", {"content": "x"}, "missing required parameter 'path'"),
    ("write_file", {"path": "a", "content": "x", "mode": 0o644}, "unknown parameter \"mode\""),
    ("write_file", {"path": "a", "content": 5}, "parameter 'content' expected a string, got integer"),
    ("write_file", {"path": "a", "content": {"x": 1}}, "expected a string, got object"),
    ("write_file", {"path": "a", "content": "x\x00y"}, "parameter 'content' contains a NUL byte"),
    ("write_file", {"path": True, "content": "x"}, "parameter 'path' expected a string, got boolean"),
    # edit_file
    ("edit_file", {"path": "a", "search_block": "x"}, "missing required parameter 'replace_block'"),
    ("edit_file", {"path": "a", "replace_block": "x"}, "missing required parameter 'search_block'"),
    (
        "edit_file",
        {"path": "a", "search_block": "x", "replace_block": "y", "count": 1},
        "unknown parameter \"count\"",
    ),
    ("edit_file", {"path": "a", "search_block": 1, "replace_block": "y"}, "'search_block' expected a string"),
    ("edit_file", {"path": "a", "search_block": "x", "replace_block": None}, "'replace_block' expected a string, got null"),
    ("edit_file", {"path": "a", "search_block": "x\x00", "replace_block": "y"}, "'search_block' contains a NUL byte"),
    ("edit_file", {"path": "a", "search_block": "x", "replace_block": "\x00"}, "'replace_block' contains a NUL byte"),
    # execute_command
    ("execute_command", {}, "missing required parameter 'command'"),
    ("execute_command", {"cwd": "."}, "missing required parameter 'command'"),
    ("execute_command", {"command": "ls", "timeout": 5}, "unknown parameter \"timeout\""),
    ("execute_command", {"command": ["ls", "-l"]}, "parameter 'command' expected a string, got array"),
    ("execute_command", {"command": "ls", "cwd": 1}, "parameter 'cwd' expected a string, got integer"),
    ("execute_command", {"command": "ls", "cwd": False}, "parameter 'cwd' expected a string, got boolean"),
    ("execute_command", {"command": "echo\x00"}, "parameter 'command' contains a NUL byte"),
    ("execute_command", {"command": "ls", "cwd": "a\x00"}, "parameter 'cwd' contains a NUL byte"),
    # list_directory
    ("list_directory", {"path": "src", "recursive": True}, "unknown parameter \"recursive\""),
    ("list_directory", {"path": 3.0}, "parameter 'path' expected a string, got number"),
    ("list_directory", {"path": "\x00"}, "parameter 'path' contains a NUL byte"),
    ("list_directory", {"dir": "src"}, "unknown parameter \"dir\" (allowed: path)"),
]


@pytest.mark.parametrize("name,args,needle", BAD_CASES)
def test_validate_rejects_with_a_named_problem(name, args, needle):
    got, err = validate(name, args)
    assert got is None
    assert err["ok"] is False and err["code"] == "bad_arguments"
    assert err["error"].startswith(f"{name}: ")
    assert needle in err["error"]
    json.dumps(err)  # always encodable for the tool message


@pytest.mark.parametrize("name", [t["function"]["name"] for t in TOOLS])
@pytest.mark.parametrize("args", [None, [], "path", 3, True])
def test_validate_rejects_non_object_args(name, args):
    got, err = validate(name, args)
    assert got is None and err["code"] == "bad_arguments"
    assert "arguments must be a JSON object" in err["error"]


def test_validate_reports_every_problem_at_once():
    _, err = validate("read_file", {"offset": 0, "limit": True, "x": 1})
    text = err["error"]
    assert "missing required parameter 'path'" in text
    assert "unknown parameter \"x\"" in text
    assert "'offset' out of range" in text
    assert "'limit' expected an integer, got boolean" in text


def test_validate_error_stays_short_on_hostile_args():
    args = {f"k{i}\x1b": i for i in range(5000)}
    args["path"] = "a"
    args["offset"] = 10**5000
    _, err = validate("read_file", args)
    assert err["code"] == "bad_arguments"
    assert len(err["error"]) < 1000
    assert "more problems" in err["error"]
    _, err = validate("read_file", {"path": "a", "offset": -(10**5000)})
    assert "out of range" in err["error"]


@pytest.mark.parametrize("name", ["run_shell", "READ_FILE", "read_file ", "", None, 3])
def test_unknown_tool_names_the_catalogue(name):
    got, err = validate(name, {"path": "a"})
    assert got is None
    assert err["code"] == "unknown_tool"
    for tool in ("read_file", "write_file", "edit_file", "execute_command", "list_directory"):
        assert tool in err["error"]


def test_unknown_tool_quotes_the_name_briefly():
    _, err = validate("x" * 500, {})
    assert "unknown tool" in err["error"]
    assert len(err["error"]) < 200


def test_accumulator_error_becomes_bad_arguments():
    reason = "arguments are not valid JSON: Unterminated string: char 9 (12 bytes)"
    got, err = validate("write_file", None, reason)
    assert got is None
    assert err == results.error("bad_arguments", f"write_file: {reason}")


def test_validate_call_with_accumulator_error():
    call = {"id": "c1", "name": "read_file", "args": None, "error": "arguments are not valid JSON: x"}
    got, err = validate_call(call)
    assert got is None
    assert err["code"] == "bad_arguments"
    assert "arguments are not valid JSON: x" in err["error"]


def test_validate_call_ok_and_defaults():
    got, err = validate_call({"id": "c1", "name": "list_directory", "args": {}, "error": None})
    assert err is None and got == {"path": "."}


def test_validate_call_without_name_is_unknown_tool():
    call = {"id": "c1", "name": "", "args": None,
            "error": "tool call has no function name; arguments are not valid JSON: x"}
    _, err = validate_call(call)
    assert err["code"] == "unknown_tool"
    assert err["error"].count("tool call has no function name") == 1
    assert "arguments are not valid JSON: x" in err["error"]


def test_validate_call_unknown_tool_wins_over_bad_json():
    _, err = validate_call({"id": "c", "name": "rm", "args": None, "error": "not JSON"})
    assert err["code"] == "unknown_tool" and "not JSON" in err["error"]


def test_validate_call_on_real_accumulator_output():
    from dashfloat.llm import toolcalls

    acc = toolcalls.feed(toolcalls.new(), [
        {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"path": "x", "off'}},
        {"index": 1, "id": "b", "function": {"name": "read_file", "arguments": '{"path": "y"}'}},
    ])
    first, second = toolcalls.finish(acc)
    assert validate_call(first)[1]["code"] == "bad_arguments"
    assert validate_call(second) == ({"path": "y", "offset": 1, "limit": 2000}, None)


def test_validation_is_driven_by_the_schemas(monkeypatch):
    schema = catalogue._SCHEMAS["read_file"]["properties"]["limit"]
    monkeypatch.setitem(schema, "maximum", 5)
    _, err = validate("read_file", {"path": "a", "limit": 6})
    assert "(allowed 1..5)" in err["error"]


# -- summaries --------------------------------------------------------------------------

SUMMARIES = [
    ("read_file", {"path": "lib/foo.ex"}, "read_file lib/foo.ex"),
    ("read_file", {"path": "lib/foo.ex", "offset": 1, "limit": 2000}, "read_file lib/foo.ex"),
    ("read_file", {"path": "lib/foo.ex", "offset": 120, "limit": 50}, "read_file lib/foo.ex:120+50"),
    ("read_file", {"path": "lib/foo.ex", "offset": 120}, "read_file lib/foo.ex:120"),
    ("read_file", {"path": "lib/foo.ex", "limit": 50}, "read_file lib/foo.ex:1+50"),
    ("write_file", {"path": "notes.md", "content": "x" * 1229}, "write_file notes.md (1.2 KiB)"),
    ("write_file", {"path": "a", "content": "é"}, "write_file a (2 B)"),
    ("write_file", {"path": "a", "content": "x" * (3 << 20)}, "write_file a (3.0 MiB)"),
    ("edit_file", {"path": "app.py", "search_block": "a", "replace_block": "b"}, "edit_file app.py"),
    ("execute_command", {"command": "pytest -q"}, "execute_command pytest -q"),
    ("execute_command", {"command": "pytest -q", "cwd": "."}, "execute_command pytest -q"),
    ("execute_command", {"command": "make", "cwd": "sub"}, "execute_command make (in sub)"),
    ("execute_command", {"command": "cd x\nmake"}, "execute_command cd x⏎make"),
    ("execute_command", {"command": "ls\n"}, "execute_command ls"),
    ("list_directory", {"path": "src"}, "list_directory src"),
    ("list_directory", {}, "list_directory ."),
]


@pytest.mark.parametrize("name,args,expected", SUMMARIES)
def test_summary(name, args, expected):
    assert summary(name, args) == expected


def test_summary_long_command_is_shortened():
    text = summary("execute_command", {"command": "echo " + "a" * 200 + "; touch x"})
    assert text.startswith("execute_command echo aaa")
    assert text.endswith("a; touch x") and "…" in text  # the head and the end: where the rest hides
    assert len(text) <= len("execute_command ") + 60


@pytest.mark.parametrize("pad, count", [(" " * 4000, "⟨4,000 spaces⟩"), ("\t" * 4000, "⟨4,000 tabs⟩"),
                                        ("\n" * 3000, "⏎⟨2,999 blank lines⟩⏎"),
                                        ("\u3000" * 2000, "⟨2,000 × U+3000⟩"),
                                        ("\u2800" * 2000, "⟨2,000 × U+2800⟩")])
def test_summary_counts_blank_runs_so_the_end_shows(pad, count):
    text = summary("execute_command", {"command": f"echo hi{pad}; touch /tmp/x"})
    assert text == f"execute_command echo hi{count}; touch /tmp/x"


def test_summary_escapes_control_sequences():
    text = summary("read_file", {"path": "\x1b[2Jevil\x1b]0;title\x07\u202etxt.exe\u200b"})
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\u200b" not in text
    assert "\\e[2Jevil" in text and "\\u202e" in text and "\\u200b" in text
    text = summary("execute_command", {"command": "printf '\x1b[31m'\r\nrm -rf x"})
    assert "\x1b" not in text and "\r" not in text and "\n" not in text
    assert text == "execute_command printf '\\e[31m'\\r⏎rm -rf x"
    assert "\n" not in summary("write_file", {"path": "a\nb", "content": ""})
    assert "\n" not in summary("list_directory", {"path": "a\u2028b"} ) and "\u2028" not in summary(
        "list_directory", {"path": "a\u2028b"}
    )


def test_summary_escapes_the_name():
    assert summary("evil\x1b[2J", {"a": 1}) == 'evil\\e[2J {"a": 1}'
    assert summary("x\u202e", None) == "x\\u202e"


@pytest.mark.parametrize(
    "name,args",
    [
        ("read_file", None),
        ("read_file", []),
        ("read_file", {}),
        ("read_file", {"path": None, "offset": "x", "limit": [1]}),
        ("write_file", {"path": 3, "content": 4}),
        ("write_file", {"content": "\ud800"}),
        ("execute_command", {"command": None}),
        ("execute_command", {"command": {"a": object()}}),
        ("list_directory", {"path": float("nan")}),
        (None, None),
        (None, {"x": 1}),
        (3, {}),
        ("", {}),
        ("unknown", {"k": object()}),
    ],
)
def test_summary_never_raises(name, args):
    text = summary(name, args)
    assert isinstance(text, str) and text
    assert "\x1b" not in text and "\n" not in text


def test_summary_without_args_is_the_name():
    for tool in TOOLS:
        name = tool["function"]["name"]
        assert summary(name, None) == name


def test_summary_long_path_keeps_the_file_name():
    text = summary("edit_file", {"path": "d/" * 100 + "target.py"})
    assert text.endswith("target.py") and "…" in text
    assert len(text) < 100
    # past the characters looked at before escaping (a path of 10,000 characters): the same
    assert summary("edit_file", {"path": "d/" * 5000 + "target.py"}) == "edit_file …" + ("/d" * 35)[1:] + "/target.py"


@pytest.mark.parametrize("args, expected", [
    ({"pattern": "a.b"}, "search_workspace 'a.b'"),
    ({"pattern": "a.b", "regex": False, "path": "."}, "search_workspace 'a.b'"),
    ({"pattern": "a.b", "regex": True}, "search_workspace /a.b/"),
    ({"pattern": "a.b", "path": "src"}, "search_workspace 'a.b' in src"),
    ({"pattern": "a.b", "regex": True, "path": "src", "glob": "*.py"}, "search_workspace /a.b/ in src (*.py)"),
])
def test_summary_of_a_search(args, expected):
    assert summary("search_workspace", args) == expected


def test_summary_of_a_command_that_is_not_a_string_shows_its_json():
    assert summary("execute_command", {"command": ["ls", "-l"]}) == 'execute_command ["ls", "-l"]'


# -- edges (found by `make mutation`) -------------------------------------------------------


def test_an_error_code_outside_the_documented_table_is_a_bug_caught_at_once():
    with pytest.raises(AssertionError):
        results.error("no_such_code", "x")


def test_a_quoted_value_is_cut_to_exactly_its_limit():
    limit = catalogue._SHOW_MAX
    assert catalogue._show("a" * (limit - 2)) == '"' + "a" * (limit - 2) + '"'   # exactly the limit
    cut = catalogue._show("a" * limit)
    assert len(cut) == limit and cut == '"' + "a" * (limit - 2) + "…"


def test_a_quoted_value_keeps_its_characters():
    assert catalogue._show("café ✓") == '"café ✓"'


def test_the_json_kind_of_a_value_outside_json_is_its_type():
    assert catalogue._json_kind({1}) == "set"


def test_a_validation_error_names_at_most_eight_problems_then_the_count():
    limit = catalogue._PROBLEMS_MAX
    args = {"path": "a", **{f"x{i}": 1 for i in range(limit)}}
    _, err = validate("read_file", args)
    assert err["error"].count("unknown parameter") == limit and "more problems" not in err["error"]
    _, err = validate("read_file", {**args, "extra": 1})
    assert err["error"].count("unknown parameter") == limit
    assert err["error"].endswith("; and 1 more problems")


def test_a_lone_surrogate_in_a_path_is_named_with_the_other_problems():
    """Every problem of a call in one answer: the model need not find them one retry at a time."""
    _, err = validate("read_file", {"path": "\ud800x", "limit": 0})
    assert "'limit' out of range" in err["error"] and "lone surrogate \\ud800" in err["error"], err


def test_validate_call_of_something_that_is_not_a_call():
    assert validate_call("read_file") == (None, {"ok": False, "error": "malformed tool call", "code": "bad_arguments"})


def test_clipping_keeps_exactly_the_limit():
    assert catalogue._clip_tail("abcde", 5) == "abcde" and catalogue._clip_tail("abcdef", 5) == "…cdef"
    assert catalogue._clip_head("abcde", 5) == "abcde" and catalogue._clip_head("abcdef", 5) == "abcd…"


def test_the_default_read_window_is_not_shown():
    assert summary("read_file", {"path": "a", "offset": 1, "limit": 2000}) == "read_file a"
    assert summary("read_file", {"path": "a", "offset": 120, "limit": 2000}) == "read_file a:120"
    assert summary("read_file", {"path": "a", "limit": 1999}) == "read_file a:1+1999"


def test_a_summary_survives_arguments_that_misbehave():
    class Weird:
        def __eq__(self, other):
            raise RuntimeError("no comparing me")

        __hash__ = object.__hash__

    assert summary("read_file", {"path": "a", "offset": Weird()}) == "read_file"


def test_a_null_path_is_shown_as_a_question_mark():
    assert summary("read_file", {"path": None}) == "read_file ?"


# -- names and shell-isms in path parameters (issue 14 §3, §4) --------------------------------


def test_every_path_parameter_tells_the_model_there_is_no_shell_and_how_names_are_written():
    for tool in catalogue.TOOLS:
        fn = tool["function"]
        key = catalogue.PATH_PARAMS[fn["name"]]
        text = fn["parameters"]["properties"][key]["description"]
        assert "relative to the working directory" in text and "~" in text and "not expanded" in text
        assert "\\xNN" in text and "as written" in text
    listing = next(t for t in catalogue.TOOLS if t["function"]["name"] == "list_directory")
    assert "\\xNN" in listing["function"]["description"]


@pytest.mark.parametrize(
    ("tool", "args", "key", "want"),
    [
        ("read_file", {"path": "caf\udce9.txt"}, "path", "caf\\xe9.txt"),
        ("write_file", {"path": "d\udcff/x", "content": "x"}, "path", "d\\xff/x"),
        ("edit_file", {"path": "\udcc3\udca9", "search_block": "a", "replace_block": "b"}, "path", "é"),
        ("list_directory", {"path": "caf\\xe9"}, "path", "caf\\xe9"),
        ("execute_command", {"command": "ls \udce9", "cwd": "d\udcff"}, "cwd", "d\\xff"),
        ("read_file", {"path": "plain/é.txt"}, "path", "plain/é.txt"),
    ],
)
def test_validate_gives_the_path_in_its_one_written_form(tool, args, key, want):
    out, bad = validate(tool, args)
    assert bad is None, bad
    assert out[key] == want
    if tool == "execute_command":
        assert out["command"] == "ls \udce9"  # a command is shell text: never rewritten


def test_a_lone_surrogate_that_is_no_byte_is_a_named_problem():
    out, bad = validate("read_file", {"path": "x\ud800"})
    assert out is None and bad["code"] == "bad_arguments"
    assert "\\ud800" in bad["error"] and "\\xNN" in bad["error"]
    results.encode(bad).encode("utf-8")
