"""conversation.repair (the tool-pairing invariant) and the canonical assistant/tool messages."""

from __future__ import annotations

import copy
import json

import pytest

from dashfloat import conversation

# ---- builders ---------------------------------------------------------------------------


def user(text="hi"):
    return {"role": "user", "content": text}


def asst(*ids, content=None):
    """An assistant message in the canonical shape, with one read_file call per id."""
    msg = {"role": "assistant", "content": content}
    if ids:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": i})}}
            for i in ids
        ]
    return msg


def tool(call_id, tag="ok"):
    """A tool message; `tag` makes two results for the same id tell apart."""
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"ok": True, "tag": tag})}


def interrupted(call_id):
    """What repair synthesises for a call without a result."""
    return ("interrupted", call_id)


def shape(messages):
    """Compare conversations while letting a synthesised result be matched loosely."""
    out = []
    for m in messages:
        if m.get("role") == "tool":
            content = json.loads(m["content"])
            if content.get("code") == "interrupted":
                out.append(interrupted(m["tool_call_id"]))
                continue
        out.append(m)
    return out


# ---- repair -----------------------------------------------------------------------------

# Stands for "whatever repair says about putting results back in call order": the wording is
# not pinned here (and whether such a note exists is test_check_reports_out_of_order_results).
REORDERED = "<reordered>"


def assert_notes(got, expected):
    exact = [n for n in expected if n != REORDERED]
    assert [n for n in got if n in exact] == exact, got
    extra = [n for n in got if n not in exact]
    if REORDERED in expected:
        assert len(extra) <= 1, got
    else:
        assert extra == [], got

REPAIR_CASES = [
    pytest.param(
        [user(), asst("a", "b"), tool("a")],
        [user(), asst("a", "b"), tool("a"), interrupted("b")],
        ["added a missing result for call 'b'"],
        id="missing-second-result",
    ),
    pytest.param(
        [user(), asst("a", "b")],
        [user(), asst("a", "b"), interrupted("a"), interrupted("b")],
        ["added a missing result for call 'a'", "added a missing result for call 'b'"],
        id="missing-all-results-at-the-end",
    ),
    pytest.param(
        [user(), asst("a"), user("next")],
        [user(), asst("a"), interrupted("a"), user("next")],
        ["added a missing result for call 'a'"],
        id="missing-result-before-a-user-message",
    ),
    pytest.param(
        [user(), tool("x")],
        [user()],
        ["dropped a tool result for unknown call 'x'"],
        id="orphan-after-user",
    ),
    pytest.param(
        [tool("x"), user()],
        [user()],
        ["dropped a tool result for unknown call 'x'"],
        id="orphan-first",
    ),
    pytest.param(
        [user(), asst("a"), tool("a"), tool("z")],
        [user(), asst("a"), tool("a")],
        ["dropped a tool result for unknown call 'z'"],
        id="orphan-in-the-result-run",
    ),
    pytest.param(
        [user(), asst(content="plain"), tool("a")],
        [user(), asst(content="plain")],
        ["dropped a tool result for unknown call 'a'"],
        id="orphan-after-an-assistant-without-calls",
    ),
    pytest.param(
        [user(), asst("a"), tool("a", "first"), tool("a", "second")],
        [user(), asst("a"), tool("a", "first")],
        ["dropped a second result for call 'a'"],
        id="duplicate-keeps-the-first",
    ),
    pytest.param(
        [user(), asst("a", "b"), tool("b"), tool("a", "A"), tool("b", "again")],
        [user(), asst("a", "b"), tool("a", "A"), tool("b")],
        ["dropped a second result for call 'b'", REORDERED],
        id="duplicate-and-out-of-order",
    ),
    pytest.param(
        [user(), asst("a", "b", "c"), tool("c"), tool("a"), tool("b")],
        [user(), asst("a", "b", "c"), tool("a"), tool("b"), tool("c")],
        [REORDERED],
        id="out-of-order-put-in-call-order",
    ),
    pytest.param(
        [user(), asst("a"), user("between"), tool("a")],
        [user(), asst("a"), interrupted("a"), user("between")],
        ["added a missing result for call 'a'", "dropped a tool result for unknown call 'a'"],
        id="user-message-between-call-and-result",
    ),
    pytest.param(
        [user(), asst("a"), tool("a"), asst("b", "c"), tool("c"), user("more")],
        [user(), asst("a"), tool("a"), asst("b", "c"), interrupted("b"), tool("c"), user("more")],
        ["added a missing result for call 'b'"],
        id="several-assistant-messages",
    ),
    pytest.param(
        [user(), asst("a"), asst("b"), tool("a"), tool("b")],
        [user(), asst("a"), interrupted("a"), asst("b"), tool("b")],
        ["added a missing result for call 'a'", "dropped a tool result for unknown call 'a'"],
        id="result-of-an-earlier-assistant-message-is-an-orphan",
    ),
    pytest.param(
        [user(), asst("a"), tool("a"), asst("b"), tool("a"), tool("b")],
        [user(), asst("a"), tool("a"), asst("b"), tool("b")],
        ["dropped a tool result for unknown call 'a'"],
        id="a-stale-result-under-a-later-call",
    ),
    pytest.param(
        [user(), {"role": "assistant", "content": "x", "tool_calls": []}, user("y")],
        [user(), {"role": "assistant", "content": "x", "tool_calls": []}, user("y")],
        [],
        id="empty-tool-calls-list-is-no-calls",
    ),
    pytest.param(
        [{"role": "system", "content": "s"}, user(), asst("a"), tool("a"), asst(content="done")],
        [{"role": "system", "content": "s"}, user(), asst("a"), tool("a"), asst(content="done")],
        [],
        id="valid-with-system-message",
    ),
    pytest.param(
        [user(), asst("a", "b"), tool("a"), tool("b"), asst("c"), tool("c"), asst(content="end"), user("2")],
        [user(), asst("a", "b"), tool("a"), tool("b"), asst("c"), tool("c"), asst(content="end"), user("2")],
        [],
        id="valid-multi-episode",
    ),
    pytest.param([], [], [], id="empty"),
]


@pytest.mark.parametrize(("given", "expected", "notes"), REPAIR_CASES)
def test_repair(given, expected, notes):
    before = copy.deepcopy(given)
    fixed, got_notes = conversation.repair(given)
    assert shape(fixed) == expected
    assert_notes(got_notes, notes)
    assert given == before  # the input is never mutated
    # the repaired conversation is valid: repairing it again changes nothing
    again, again_notes = conversation.repair(fixed)
    assert again == fixed and again_notes == []
    assert conversation.check(fixed) == []


VALID = [case for case in REPAIR_CASES if case.values[0] == case.values[1]]


@pytest.mark.parametrize("given", [case.values[0] for case in VALID], ids=[case.id for case in VALID])
def test_repair_is_a_no_op_on_a_valid_conversation(given):
    fixed, notes = conversation.repair(given)
    assert fixed == given
    assert notes == []
    assert conversation.check(given) == []


def test_check_reports_out_of_order_results():
    """check() promises "the problems repair would fix (empty when the invariant holds)", and
    the invariant includes "in call order": results out of call order are a problem repair
    fixes (it reorders them), so check() must not call that conversation valid."""
    conv = [user(), asst("a", "b"), tool("b"), tool("a")]
    fixed, _ = conversation.repair(conv)
    assert fixed != conv  # repair does change it...
    assert conversation.check(conv) != []  # ...so check() must report something


def test_repair_keeps_valid_messages_identical_objects_content():
    conv = [user(), asst("a", content="thinking"), tool("a"), asst(content="answer")]
    fixed, notes = conversation.repair(conv)
    assert fixed == conv and notes == []


def test_synthesised_result_is_an_interrupted_error_object():
    fixed, _ = conversation.repair([user(), asst("call_1")])
    msg = fixed[-1]
    assert msg["role"] == "tool" and msg["tool_call_id"] == "call_1"
    body = json.loads(msg["content"])
    assert body["ok"] is False
    assert body["code"] == "interrupted"
    assert isinstance(body["error"], str) and body["error"]


# ---- assistant_message ------------------------------------------------------------------

ASSISTANT_CASES = [
    pytest.param(
        "",
        [{"id": "c1", "name": "read_file", "args": {"path": "a.txt"}, "error": None}],
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
            ],
        },
        id="one-call-content-empty-string",
    ),
    pytest.param(
        None,
        [{"id": "c1", "name": "list_directory", "args": None, "error": "arguments are not valid JSON"}],
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}],
        },
        id="args-none-becomes-empty-object",
    ),
    pytest.param(
        "Let me look.",
        [
            {"id": "a", "name": "read_file", "args": {"path": "x", "offset": 3}, "error": None},
            {"id": "b", "name": "list_directory", "args": {}, "error": None},
        ],
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x", "offset": 3}'}},
                {"id": "b", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}},
            ],
        },
        id="content-kept-with-calls-in-order",
    ),
    pytest.param(
        "",
        [{"id": "u", "name": "write_file", "args": {"path": "é.txt", "content": "naïve ✓\n"}, "error": None}],
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "u",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": '{"path": "é.txt", "content": "naïve ✓\\n"}'},
                }
            ],
        },
        id="non-ascii-kept",
    ),
    pytest.param(
        "",
        [{"id": "n", "args": {}, "error": "tool call has no function name"}],
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "n", "type": "function", "function": {"name": "", "arguments": "{}"}}],
        },
        id="missing-name-is-empty-string",
    ),
    pytest.param("Hello", [], {"role": "assistant", "content": "Hello"}, id="no-calls"),
    pytest.param("", [], {"role": "assistant", "content": ""}, id="no-calls-empty-content-is-empty-string"),
]


@pytest.mark.parametrize(("content", "calls", "expected"), ASSISTANT_CASES)
def test_assistant_message(content, calls, expected):
    msg = conversation.assistant_message(content, calls)
    assert msg == expected
    for c in msg.get("tool_calls", []):
        args = c["function"]["arguments"]
        assert isinstance(args, str)
        assert isinstance(json.loads(args), dict)  # a JSON object string, always
    # the message itself is JSON-serialisable (it goes into the request body)
    json.dumps(msg)


def test_assistant_message_arguments_round_trip_to_the_parsed_args():
    args = {"path": "src/x.py", "search_block": "a\n\tb", "replace_block": 'q"uote\\'}
    msg = conversation.assistant_message("", [{"id": "e", "name": "edit_file", "args": args, "error": None}])
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == args


# ---- tool_message -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [
        {"ok": True, "content": "héllo\n", "lines": 1},
        {"ok": False, "rejected": True},
        {"ok": False, "cancelled": True, "output": "x"},
        {"ok": False, "error": "boom", "code": "internal"},
    ],
)
def test_tool_message(result):
    msg = conversation.tool_message("call_9", result)
    assert msg["role"] == "tool" and msg["tool_call_id"] == "call_9"
    assert set(msg) == {"role", "tool_call_id", "content"}
    assert isinstance(msg["content"], str)
    assert json.loads(msg["content"]) == result
    assert msg["content"] == json.dumps(result, ensure_ascii=False, separators=(",", ":"))  # compact, raw UTF-8
