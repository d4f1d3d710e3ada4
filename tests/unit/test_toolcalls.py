"""Tests for dashfloat.llm.toolcalls: assembling streamed tool calls from real providers."""

from __future__ import annotations

import json
import random

import pytest

from dashfloat.llm import toolcalls


def run(*chunks) -> list[dict]:
    """Feed each chunk (one `delta.tool_calls` list per SSE event) and finish."""
    acc = toolcalls.new()
    for chunk in chunks:
        acc = toolcalls.feed(acc, chunk)
    return toolcalls.finish(acc)


def call(id_, name, args, error=None) -> dict:
    return {"id": id_, "name": name, "args": args, "error": error}


def frag(index=None, id=None, name=None, arguments=None, type="function", **extra):
    """A delta fragment with only the given keys (None = key absent)."""
    d: dict = dict(extra)
    if index is not None:
        d["index"] = index
    if id is not None:
        d["id"] = id
    if type is not None and (id is not None or name is not None):
        d["type"] = type
    fn = {}
    if name is not None:
        fn["name"] = name
    if arguments is not None:
        fn["arguments"] = arguments
    if fn:
        d["function"] = fn
    return d


# -- recorded-style provider streams -------------------------------------------------------
# Each case: the sequence of `choices[0].delta.tool_calls` lists, one per SSE event.

PROVIDERS = {
    "openai-single-call": (
        [
            [
                {
                    "index": 0,
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ""},
                }
            ],
            [{"index": 0, "function": {"arguments": '{"pa'}}],
            [{"index": 0, "function": {"arguments": 'th":"lib/'}}],
            [{"index": 0, "function": {"arguments": 'foo.py"}'}}],
        ],
        [call("call_abc", "read_file", {"path": "lib/foo.py"})],
    ),
    "openai-parallel-sequential": (
        [
            [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ""},
                }
            ],
            [{"index": 0, "function": {"arguments": '{"path": "a.py"}'}}],
            [
                {
                    "index": 1,
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "list_directory", "arguments": ""},
                }
            ],
            [{"index": 1, "function": {"arguments": '{"path": "."}'}}],
        ],
        [
            call("call_1", "read_file", {"path": "a.py"}),
            call("call_2", "list_directory", {"path": "."}),
        ],
    ),
    "openai-interleaved": (
        [
            [
                {
                    "index": 0,
                    "id": "call_A",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": '{"path":'},
                },
                {
                    "index": 1,
                    "id": "call_B",
                    "type": "function",
                    "function": {"name": "execute_command", "arguments": '{"comm'},
                },
            ],
            [{"index": 1, "function": {"arguments": 'and":"ls"}'}}],
            [{"index": 0, "function": {"arguments": '"x.txt","content":"hé 🙂"}'}}],
        ],
        [
            call("call_A", "write_file", {"path": "x.txt", "content": "hé 🙂"}),
            call("call_B", "execute_command", {"command": "ls"}),
        ],
    ),
    "ollama-whole-calls-one-chunk": (
        [
            [
                {
                    "id": "call_x1",
                    "index": 0,
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "arguments": '{"path":"README.md"}',
                    },
                },
                {
                    "id": "call_x2",
                    "index": 1,
                    "type": "function",
                    "function": {"name": "list_directory", "arguments": "{}"},
                },
            ],
        ],
        [
            call("call_x1", "read_file", {"path": "README.md"}),
            call("call_x2", "list_directory", {}),
        ],
    ),
    "llama.cpp-whole-call-then-empty-continuations": (
        [
            [
                {
                    "index": 0,
                    "id": "Kq3vW",
                    "type": "function",
                    "function": {
                        "name": "execute_command",
                        "arguments": '{"command":"pwd"}',
                    },
                }
            ],
            [{"index": 0, "function": {"arguments": ""}}],
            [{"index": 0}],
        ],
        [call("Kq3vW", "execute_command", {"command": "pwd"})],
    ),
    "vllm-no-arguments-key-on-first-fragment": (
        [
            [
                {
                    "id": "chatcmpl-tool-9f2",
                    "type": "function",
                    "index": 0,
                    "function": {"name": "edit_file"},
                }
            ],
            [{"index": 0, "function": {"arguments": '{"path": "a.py", '}}],
            [{"index": 0, "function": {"arguments": '"search_block": "x", '}}],
            [{"index": 0, "function": {"arguments": '"replace_block": "y"}'}}],
        ],
        [
            call(
                "chatcmpl-tool-9f2",
                "edit_file",
                {"path": "a.py", "search_block": "x", "replace_block": "y"},
            )
        ],
    ),
    "groq-whole-call-with-index": (
        [
            [
                {
                    "id": "call_gq",
                    "type": "function",
                    "index": 0,
                    "function": {
                        "name": "list_directory",
                        "arguments": '{"path":"src"}',
                    },
                }
            ],
        ],
        [call("call_gq", "list_directory", {"path": "src"})],
    ),
    "mistral-no-index-no-type": (
        [
            [
                {
                    "id": "D681PevKs",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                },
                {
                    "id": "xQ2bLm9Ra",
                    "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
                },
            ],
        ],
        [
            call("D681PevKs", "read_file", {"path": "a.py"}),
            call("xQ2bLm9Ra", "read_file", {"path": "b.py"}),
        ],
    ),
    "mistral-no-index-fragments-continue-last": (
        [
            [
                {
                    "id": "abcdefghi",
                    "function": {"name": "read_file", "arguments": '{"pa'},
                }
            ],
            [{"function": {"arguments": 'th": "z.py"}'}}],
            [
                {
                    "id": "jklmnopqr",
                    "function": {"name": "list_directory", "arguments": ""},
                }
            ],
            [{"function": {"arguments": "{}"}}],
        ],
        [
            call("abcdefghi", "read_file", {"path": "z.py"}),
            call("jklmnopqr", "list_directory", {}),
        ],
    ),
    "gemini-id-changes-on-every-fragment-indexed": (
        [
            [
                {
                    "index": 0,
                    "id": "function-call-111",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":'},
                }
            ],
            [
                {
                    "index": 0,
                    "id": "function-call-222",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '"g.py"}'},
                }
            ],
        ],
        [call("function-call-111", "read_file", {"path": "g.py"})],
    ),
    "gemini-no-index-id-changes-no-name-on-continuation": (
        [
            [
                {
                    "id": "function-call-1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path"'},
                }
            ],
            [
                {
                    "id": "function-call-2",
                    "type": "function",
                    "function": {"arguments": ':"h.py"}'},
                }
            ],
        ],
        [call("function-call-1", "read_file", {"path": "h.py"})],
    ),
    "gemini-null-index-empty-id-metadata-only-delta": (
        [
            [
                {
                    "index": None,
                    "id": "",
                    "type": "function",
                    "function": {"name": "list_directory", "arguments": '{"path":"."}'},
                    "extra_content": {"google": {"thought_signature": "c2ln"}},
                }
            ],
            [{"extra_content": {"google": {"thought_signature": "c2ln"}}}],
        ],
        [call("call_df_1", "list_directory", {"path": "."})],
    ),
    "gemini-no-index-parallel-whole-calls": (
        [
            [
                {
                    "id": "function-call-a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"1"}'},
                },
                {
                    "id": "function-call-b",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"2"}'},
                },
            ],
        ],
        [
            call("function-call-a", "read_file", {"path": "1"}),
            call("function-call-b", "read_file", {"path": "2"}),
        ],
    ),
}


@pytest.mark.parametrize("chunks,expected", PROVIDERS.values(), ids=PROVIDERS.keys())
def test_provider_streams(chunks, expected):
    assert run(*chunks) == expected


@pytest.mark.parametrize("chunks,expected", PROVIDERS.values(), ids=PROVIDERS.keys())
def test_provider_streams_fed_all_at_once_or_one_fragment_per_feed(chunks, expected):
    flat = [d for chunk in chunks for d in chunk]
    assert run(flat) == expected
    assert run(*[[d] for d in flat]) == expected


# -- the individual rules ------------------------------------------------------------------


def test_whole_call_in_one_chunk():
    assert run([frag(0, "c1", "read_file", '{"path":"a"}')]) == [
        call("c1", "read_file", {"path": "a"})
    ]


def test_type_omitted_is_fine():
    assert run([frag(0, "c1", "list_directory", "{}", type=None)]) == [
        call("c1", "list_directory", {})
    ]


def test_type_other_than_function_is_not_inspected():
    assert run([frag(0, "c1", "list_directory", "{}", type="weird")]) == [
        call("c1", "list_directory", {})
    ]


def test_continuation_omitting_id():
    assert run(
        [frag(0, "c1", "read_file", '{"path":')], [frag(0, arguments='"a"}')]
    ) == [call("c1", "read_file", {"path": "a"})]


def test_continuation_repeating_id():
    assert run(
        [frag(0, "c1", "read_file", '{"path":')], [frag(0, "c1", arguments='"a"}')]
    ) == [call("c1", "read_file", {"path": "a"})]


def test_continuation_changing_id_keeps_the_first():
    assert run(
        [frag(0, "c1", "read_file", '{"path":')], [frag(0, "c2", arguments='"a"}')]
    ) == [call("c1", "read_file", {"path": "a"})]


def test_id_arriving_after_first_fragment_is_used():
    assert run(
        [frag(0, name="read_file", arguments='{"path":')],
        [frag(0, "late", arguments='"a"}')],
    ) == [call("late", "read_file", {"path": "a"})]


def test_repeated_name_is_not_concatenated():
    result = run(
        [frag(0, "c1", "read_file", '{"path":')],
        [frag(0, name="read_file", arguments='"a"}')],
    )
    assert result == [call("c1", "read_file", {"path": "a"})]


def test_empty_name_on_later_fragments_is_ignored():
    result = run([frag(0, "c1", "read_file", "")], [frag(0, name="", arguments="{}")])
    assert result == [call("c1", "read_file", {})]


def test_changed_name_on_later_fragment_keeps_the_first():
    result = run([frag(0, "c1", "read_file", "{}")], [frag(0, name="write_file")])
    assert result[0]["name"] == "read_file"


def test_name_arriving_after_an_empty_name_is_used():
    result = run(
        [frag(0, "c1", "", "")], [frag(0, name="list_directory", arguments="{}")]
    )
    assert result == [call("c1", "list_directory", {})]


@pytest.mark.parametrize("arguments", ["", None, "   ", "\n"], ids=repr)
def test_no_parameters_gives_empty_args(arguments):
    assert run([frag(0, "c1", "list_directory", arguments)]) == [
        call("c1", "list_directory", {})
    ]


def test_arguments_as_dict_are_accepted():
    result = run([frag(0, "c1", "read_file", {"path": "a.py", "limit": 5})])
    assert result == [call("c1", "read_file", {"path": "a.py", "limit": 5})]


def test_arguments_as_dict_without_index():
    result = run(
        [{"id": "c1", "function": {"name": "list_directory", "arguments": {}}}]
    )
    assert result == [call("c1", "list_directory", {})]


def test_arguments_dict_mixed_with_string_fragments_is_an_error():
    result = run(
        [frag(0, "c1", "read_file", '{"path":"a"}')], [frag(0, arguments={"x": 1})]
    )
    assert result == [
        call(
            "c1",
            "read_file",
            None,
            "arguments mixed a JSON object with string fragments",
        )
    ]


def test_indices_not_starting_at_zero():
    result = run(
        [frag(1, "c1", "read_file", '{"path":"a"}')],
        [frag(2, "c2", "read_file", '{"path":"b"}')],
    )
    assert [c["id"] for c in result] == ["c1", "c2"]


def test_sparse_indices_come_out_in_index_order():
    result = run(
        [frag(7, "c7", "list_directory", "{}")],
        [frag(3, "c3", "list_directory", "{}")],
        [frag(12, "c12", "list_directory", "{}")],
    )
    assert [c["id"] for c in result] == ["c3", "c7", "c12"]


def test_interleaved_calls_many_fragments():
    args = {0: '{"path":"zero.py"}', 1: '{"command":"echo 1"}', 2: "{}"}
    names = {0: "read_file", 1: "execute_command", 2: "list_directory"}
    chunks = [[frag(i, f"id{i}", names[i], "")] for i in args]
    pos = dict.fromkeys(args, 0)
    rng = random.Random(3)
    while any(pos[i] < len(args[i]) for i in args):
        i = rng.choice([i for i in args if pos[i] < len(args[i])])
        n = rng.randint(1, 4)
        chunks.append([frag(i, arguments=args[i][pos[i] : pos[i] + n])])
        pos[i] += n
    assert run(*chunks) == [
        call("id0", "read_file", {"path": "zero.py"}),
        call("id1", "execute_command", {"command": "echo 1"}),
        call("id2", "list_directory", {}),
    ]


def test_fragment_without_index_or_id_continues_last_touched_call():
    result = run(
        [
            frag(0, "c0", "read_file", '{"path":'),
            frag(1, "c1", "read_file", '{"path":'),
        ],
        [frag(0, arguments='"a"}')],
        [frag(arguments="")],
        [frag(1, arguments='"b"}')],
    )
    assert [c["args"] for c in result] == [{"path": "a"}, {"path": "b"}]


def test_no_index_first_fragment_without_id_starts_a_call():
    result = run([{"function": {"name": "list_directory", "arguments": "{}"}}])
    assert result == [call("call_df_1", "list_directory", {})]


def test_no_index_known_id_continues_that_call():
    result = run(
        [
            {"id": "a", "function": {"name": "read_file", "arguments": '{"path":'}},
            {"id": "b", "function": {"name": "read_file", "arguments": '{"path":'}},
        ],
        [{"id": "a", "function": {"arguments": '"1"}'}}],
        [{"id": "b", "function": {"arguments": '"2"}'}}],
    )
    assert result == [
        call("a", "read_file", {"path": "1"}),
        call("b", "read_file", {"path": "2"}),
    ]


def test_no_index_new_id_with_name_starts_a_new_call():
    result = run(
        [{"id": "a", "function": {"name": "list_directory", "arguments": "{}"}}],
        [{"id": "b", "function": {"name": "list_directory", "arguments": "{}"}}],
    )
    assert [c["id"] for c in result] == ["a", "b"]


def test_no_index_new_id_without_name_on_first_fragment_is_a_nameless_call():
    result = run([{"id": "a", "function": {"arguments": "{}"}}])
    assert result == [call("a", "", {}, "tool call has no function name")]


def test_contentless_fragments_create_no_call():
    acc = toolcalls.feed(
        toolcalls.new(),
        [
            {"index": 0},
            {},
            {"index": 5, "function": {}},
            {"type": "function"},
            frag(2, arguments=""),
        ],
    )
    assert toolcalls.count(acc) == 0
    assert toolcalls.finish(acc) == []


def test_index_as_wrong_type_is_treated_as_omitted():
    result = run(
        [
            {
                "index": "0",
                "id": "a",
                "function": {"name": "read_file", "arguments": '{"path":'},
            }
        ],
        [{"index": True, "function": {"arguments": '"x"}'}}],
        [{"index": 1.0, "function": {"arguments": ""}}],
    )
    assert result == [call("a", "read_file", {"path": "x"})]


def test_negative_index_is_just_another_key():
    result = run(
        [frag(-1, "m", "list_directory", "{}")], [frag(0, "z", "list_directory", "{}")]
    )
    assert [c["id"] for c in result] == ["m", "z"]


# -- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [None, "", 42, ["x"], {"a": 1}], ids=repr)
def test_unusable_id_gets_synthetic_id(bad_id):
    d = {"index": 0, "function": {"name": "list_directory", "arguments": "{}"}}
    if bad_id is not None:
        d["id"] = bad_id
    assert run([d]) == [call("call_df_1", "list_directory", {})]


def test_synthetic_ids_are_unique_and_in_call_order():
    result = run(
        [
            frag(1, name="list_directory"),
            frag(0, name="list_directory"),
            frag(2, "real", "list_directory"),
        ]
    )
    assert [c["id"] for c in result] == ["call_df_1", "call_df_2", "real"]


def test_synthetic_id_never_collides_with_a_provider_id():
    result = run(
        [
            frag(0, name="list_directory"),
            frag(1, "call_df_1", "list_directory"),
            frag(2, name="list_directory"),
        ]
    )
    ids = [c["id"] for c in result]
    assert ids == ["call_df_2", "call_df_1", "call_df_3"]


def test_duplicate_provider_id_across_calls_gets_synthetic_id():
    result = run(
        [frag(0, "dup", "list_directory", "{}"), frag(1, "dup", "read_file", "{}")]
    )
    assert [c["id"] for c in result] == ["dup", "call_df_1"]
    assert len({c["id"] for c in result}) == 2


def test_finish_is_stable():
    acc = toolcalls.feed(toolcalls.new(), [frag(0, name="a"), frag(1, name="b")])
    assert toolcalls.finish(acc) == toolcalls.finish(acc)


# -- errors --------------------------------------------------------------------------------


def test_invalid_json_arguments():
    result = run([frag(0, "c1", "read_file", '{"path": "a.py"')])
    assert result == [
        call(
            "c1",
            "read_file",
            None,
            "arguments are not valid JSON: Expecting ',' delimiter: char 15 (15 bytes)",
        )
    ]


def test_invalid_json_byte_count_is_utf8_bytes():
    text = '{"p": "é🙂'  # 9 characters, 13 UTF-8 bytes
    result = run([frag(0, "c1", "read_file", text)])
    assert result[0]["args"] is None
    assert result[0]["error"].startswith("arguments are not valid JSON: ")
    assert result[0]["error"].endswith("(13 bytes)")


def test_truncated_stream_leaves_invalid_json():
    result = run([frag(0, "c1", "write_file", '{"path":"a","content":"lo')])
    assert result[0]["args"] is None
    assert "not valid JSON" in result[0]["error"]


@pytest.mark.parametrize(
    "text,kind",
    [
        ("[1, 2]", "array"),
        ('"path"', "string"),
        ("3", "number"),
        ("1.5", "number"),
        ("true", "boolean"),
        ("null", "null"),
    ],
)
def test_arguments_that_are_not_an_object(text, kind):
    result = run([frag(0, "c1", "read_file", text)])
    assert result == [
        call(
            "c1",
            "read_file",
            None,
            f"arguments are not a JSON object: got {kind} ({len(text)} bytes)",
        )
    ]


def test_missing_name_is_an_error_but_args_still_parsed():
    result = run([frag(0, "c1", arguments='{"path":"a"}')])
    assert result == [call("c1", "", {"path": "a"}, "tool call has no function name")]


def test_missing_name_and_bad_arguments_report_both():
    result = run([frag(0, "c1", arguments="{")])
    assert result[0]["args"] is None
    assert result[0]["error"].startswith(
        "tool call has no function name; arguments are not"
    )


def test_deeply_nested_arguments_do_not_raise():
    text = "[" * 200_000 + "]" * 200_000
    result = run([frag(0, "c1", "read_file", text)])
    assert result[0]["args"] is None
    assert result[0]["error"].endswith(f"({len(text)} bytes)")


def test_huge_integer_literal_does_not_raise():
    text = '{"n": ' + "9" * 5000 + "}"
    result = run([frag(0, "c1", "read_file", text)])
    assert result[0]["args"] is None
    assert result[0]["error"].startswith("arguments are not valid JSON: ")


def test_error_reason_is_short():
    text = '{"n": ' + "9" * 50_000 + "}"
    result = run([frag(0, "c1", "read_file", text)])
    assert len(result[0]["error"]) < 200


# -- malformed deltas ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "deltas", [None, {}, {"index": 0}, "x", b"x", 5, 1.5, True], ids=repr
)
def test_non_list_deltas_are_ignored(deltas):
    acc = toolcalls.new()
    assert toolcalls.feed(acc, deltas) is acc
    assert toolcalls.count(acc) == 0
    assert toolcalls.finish(acc) == []


def test_non_dict_entries_are_skipped():
    result = run(
        [None, "x", 3, ["index", 0], frag(0, "c1", "list_directory", "{}"), b"z"]
    )
    assert result == [call("c1", "list_directory", {})]


def test_tuple_of_deltas_is_accepted():
    assert run((frag(0, "c1", "list_directory", "{}"),)) == [
        call("c1", "list_directory", {})
    ]


@pytest.mark.parametrize("function", [None, "read_file", ["read_file"], 7], ids=repr)
def test_function_of_wrong_type_is_ignored(function):
    result = run([{"index": 0, "id": "c1", "function": function}])
    assert result == [call("c1", "", {}, "tool call has no function name")]


@pytest.mark.parametrize("name", [None, 5, ["read_file"], {"x": 1}], ids=repr)
def test_name_of_wrong_type_is_ignored(name):
    result = run(
        [{"index": 0, "id": "c1", "function": {"name": name, "arguments": "{}"}}],
        [frag(0, name="list_directory")],
    )
    assert result == [call("c1", "list_directory", {})]


@pytest.mark.parametrize("arguments", [5, ["a"], True, 1.5], ids=repr)
def test_arguments_of_wrong_type_are_ignored(arguments):
    result = run(
        [
            {
                "index": 0,
                "id": "c1",
                "function": {"name": "read_file", "arguments": arguments},
            }
        ],
        [frag(0, arguments='{"path":"a"}')],
    )
    assert result == [call("c1", "read_file", {"path": "a"})]


def test_non_json_serialisable_dict_arguments_are_ignored():
    result = run([frag(0, "c1", "list_directory", {"x": object()})])
    assert result == [call("c1", "list_directory", {})]


def test_lone_surrogates_do_not_raise():
    # json.loads("\"\\ud800\"") yields a lone surrogate; providers can send such text.
    acc = toolcalls.feed(
        toolcalls.new(), [frag(0, "id\ud800", "read_\udfff", '{"p":"\ud800"}')]
    )
    assert toolcalls.size(acc) > 0
    assert toolcalls.finish(acc) == [call("id\ud800", "read_\udfff", {"p": "\ud800"})]


def test_random_garbage_never_raises():
    rng = random.Random(11)
    atoms = [
        None,
        0,
        1,
        -1,
        2,
        True,
        1.5,
        "",
        "x",
        "{",
        "}",
        '{"a":1}',
        "call_1",
        [],
        {},
        [1],
        {"name": 1},
        {"arguments": "{}"},
        {"name": "read_file", "arguments": {}},
    ]
    keys = ["index", "id", "type", "function", "name", "arguments", "extra_content"]

    def junk(depth=0):
        r = rng.random()
        if depth < 2 and r < 0.4:
            return {rng.choice(keys): junk(depth + 1) for _ in range(rng.randint(0, 4))}
        if depth < 2 and r < 0.5:
            return [junk(depth + 1) for _ in range(rng.randint(0, 3))]
        return rng.choice(atoms)

    for _ in range(2000):
        acc = toolcalls.new()
        for _ in range(rng.randint(0, 6)):
            acc = toolcalls.feed(acc, junk())
            acc = toolcalls.feed(acc, [junk() for _ in range(rng.randint(0, 4))])
        out = toolcalls.finish(acc)
        assert len(out) == toolcalls.count(acc)
        assert len({c["id"] for c in out}) == len(out)
        for c in out:
            assert set(c) == {"id", "name", "args", "error"}
            assert isinstance(c["id"], str) and c["id"]
            assert isinstance(c["name"], str)
            assert c["args"] is None or isinstance(c["args"], dict)
            assert (c["args"] is None) <= (c["error"] is not None)
            assert c["error"] is None or isinstance(c["error"], str)
        json.dumps(out)  # canonical re-encoding for the assistant message must work


# -- count and size --------------------------------------------------------------------------


def test_count_is_distinct_calls_not_fragments():
    acc = toolcalls.new()
    toolcalls.feed(acc, [frag(0, "c1", "write_file", "")])
    for _ in range(1000):
        toolcalls.feed(acc, [frag(0, arguments=" ")])
    assert toolcalls.count(acc) == 1
    toolcalls.feed(
        acc, [frag(5, "c5", "read_file", "{}"), frag(2, "c2", "read_file", "{}")]
    )
    assert toolcalls.count(acc) == 3


def test_count_for_index_less_calls():
    acc = toolcalls.feed(
        toolcalls.new(),
        [
            {"id": "a", "function": {"name": "list_directory", "arguments": "{}"}},
            {"function": {"arguments": ""}},
            {"id": "b", "function": {"name": "list_directory", "arguments": "{}"}},
        ],
    )
    assert toolcalls.count(acc) == 2


def test_size_counts_every_fragment_in_utf8_bytes():
    acc = toolcalls.new()
    assert toolcalls.size(acc) == 0
    toolcalls.feed(acc, [frag(0, "call_1", "read_file", '{"p":"é')])  # 6 + 9 + 8
    assert toolcalls.size(acc) == 23
    toolcalls.feed(
        acc, [frag(0, "call_1", "read_file", '"}')]
    )  # repeated id/name counted
    assert toolcalls.size(acc) == 23 + 6 + 9 + 2
    toolcalls.feed(acc, [frag(0, "other", arguments="🙂")])  # changed id counted too
    assert toolcalls.size(acc) == 40 + 5 + 4


def test_size_counts_dict_arguments():
    acc = toolcalls.feed(toolcalls.new(), [frag(0, "c", "n", {"path": "a"})])
    assert toolcalls.size(acc) == 1 + 1 + len(json.dumps({"path": "a"}))


def test_size_ignores_values_of_wrong_type():
    acc = toolcalls.feed(
        toolcalls.new(),
        [{"index": 0, "id": 12345, "function": {"name": ["x"], "arguments": 99}}],
    )
    assert toolcalls.size(acc) == 0


def test_feed_returns_the_accumulator():
    acc = toolcalls.new()
    assert toolcalls.feed(acc, [frag(0, "c", "n", "{}")]) is acc


def test_new_accumulators_are_independent():
    a, b = toolcalls.new(), toolcalls.new()
    toolcalls.feed(a, [frag(0, "c", "list_directory", "{}")])
    assert toolcalls.count(b) == 0 and toolcalls.finish(b) == []


ARGS_TEXT = '{"path": "src/é/🙂.py", "content": "a\\nb \\"quoted\\" \\\\ end"}'


@pytest.mark.parametrize("cut", range(len(ARGS_TEXT) + 1))
def test_arguments_split_at_every_offset_assemble_the_same_call(cut):
    """Two fragments, cut at every character offset, give exactly the one-chunk result."""
    first = {"index": 0, "id": "call_x", "type": "function",
             "function": {"name": "write_file", "arguments": ARGS_TEXT[:cut]}}
    rest = {"index": 0, "function": {"arguments": ARGS_TEXT[cut:]}}
    acc = toolcalls.feed(toolcalls.new(), [first])
    acc = toolcalls.feed(acc, [rest])
    whole = toolcalls.feed(toolcalls.new(), [{**first, "function": {"name": "write_file", "arguments": ARGS_TEXT}}])
    assert toolcalls.finish(acc) == toolcalls.finish(whole)
    assert toolcalls.finish(acc)[0]["args"]["path"] == "src/é/🙂.py"


# -- edges (found by `make mutation`) -------------------------------------------------------


def names(calls: list[dict]) -> list[str]:
    return [c["name"] for c in calls]


def test_a_call_without_index_goes_after_the_indexed_calls_seen_before_it():
    got = run([frag(0, "a", "one", "{}")], [frag(1, "b", "two", "{}")], [frag(None, "x", "loose", "{}")])
    assert names(got) == ["one", "two", "loose"]


def test_a_call_without_index_goes_before_indexed_calls_that_follow_it():
    got = run([frag(0, "a", "one", "{}")], [frag(None, "x", "loose", "{}")], [frag(1, "b", "two", "{}")])
    assert names(got) == ["one", "loose", "two"]
    got = run([frag(None, "x", "loose", "{}")], [frag(0, "a", "one", "{}")])
    assert names(got) == ["loose", "one"]


def test_an_unparseable_huge_number_is_named_briefly():
    digits = "1" * 5000
    text = '{"n": ' + digits + "}"
    try:
        int(digits)
    except ValueError as exc:
        reason = str(exc)
    else:  # pragma: no cover - an interpreter without the digit limit
        pytest.skip("no integer digit limit here")
    got = run([frag(0, "a", "f", text)])[0]
    short = reason[: toolcalls._REASON_MAX]
    assert short.startswith("Exceeds the limit") and len(short) < len(reason)
    assert got["error"] == f"arguments are not valid JSON: {short} ({len(text)} bytes)"


def test_the_http_client_loads_no_typing_before_the_first_request():
    """issue 11: exec to the first request is a figure, and importing typing costs ~2 ms:
    the client and everything it imports (toolcalls, errors, sse, transport...) name types
    without it (TYPE_CHECKING = False, a plain constant)."""
    import subprocess
    import sys

    probe = "import sys, dashfloat.llm.client, dashfloat.llm.toolcalls; print(sorted(m for m in sys.modules if m == 'typing'))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_an_index_less_first_call_sorts_at_position_0_so_a_later_negative_index_goes_before_it():
    # index order: the first call without index takes position 0, and -1 < 0
    got = run([frag(None, "x", "loose", "{}")], [frag(-1, "m", "neg", "{}")])
    assert names(got) == ["neg", "loose"]
