"""Compaction planning (dashfloat/context.py), pure: the estimate and its calibration, stubs
first, the summary's request and structure, units never split, a summary not smaller
rejected, the fallback, the cuts that make a request fit, the ops replayed, and the window
an endpoint states."""

from __future__ import annotations

import json
import random

import pytest

from dashfloat import context as C
from dashfloat import conversation
from dashfloat.tools.catalogue import TOOLS


def user(text):
    return {"role": "user", "content": text}


def say(text):
    return {"role": "assistant", "content": text}


def calls(*pairs):
    """An assistant message with calls and their results: pairs of (id, name, args, result dict)."""
    msg = {"role": "assistant", "content": "", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args, _r in pairs]}
    return [msg] + [{"role": "tool", "tool_call_id": cid, "content": json.dumps(r)} for cid, _n, _a, r in pairs]


def read(cid, path, size):
    return calls((cid, "read_file", {"path": path}, {"ok": True, "path": path, "content": "y = 1\n" * (size // 6),
                                                     "lines": size // 6, "size": size}))


def manager(window=8000, threshold=0.8):
    m = C.ContextManager(window, threshold)
    m.system = {"role": "system", "content": "SYSTEM " * 50}
    return m


# ---- the estimate ----------------------------------------------------------------------------


def test_the_estimate_counts_text_calls_and_tools():
    assert C.estimate_tokens([user("a" * 350)]) == 3 + 4 + 100
    assert C.estimate_tokens([user("é" * 100)]) == 3 + 4 + 100  # a token per character not ASCII
    with_call = calls(("c1", "read_file", {"path": "a" * 340}, {"ok": True}))
    assert C.estimate_tokens(with_call) > C.estimate_tokens([user("")]) + 100
    assert C.estimate_tokens([user("x")], TOOLS) - C.estimate_tokens([user("x")]) == int(
        len(json.dumps(TOOLS, ensure_ascii=False)) / C.CHARS_PER_TOKEN)


def test_each_part_of_a_message_counts_exactly():
    """4 tokens a message, 3.5 ASCII characters or one other character a token; a call adds
    8 and its name and arguments; a tool result 4 for its id; parts are counted as their
    JSON (not escaped); no content counts nothing."""
    assert C.message_tokens({"role": "assistant", "content": None}) == 4
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "function": {"name": "abcdefg", "arguments": "x" * 35}}, {"id": "c2"}]}
    assert C.message_tokens(call) == 4 + (8 + 2 + 10) + 8
    assert C.message_tokens({"role": "tool", "tool_call_id": "c1", "content": "a" * 7}) == 4 + 2 + 4
    parts = [{"type": "text", "text": "é"}]
    assert C.message_tokens({"role": "user", "content": parts}) == 4 + 30 / 3.5 + 1
    assert C.tools_tokens([{"d": "é"}]) == 11 / 3.5 + 1  # [{"d": "é"}]: 11 ASCII characters and é


def test_the_tools_estimate_is_kept_for_the_last_tools_list_only():
    first, second = [{"name": "a"}], [{"name": "b"}]
    assert C.tools_tokens(first) == C.tools_tokens(first) == len(json.dumps(first)) / 3.5
    C.tools_tokens(second)
    assert list(C._TOOLS_CACHE.values()) == [(second, len(json.dumps(second)) / 3.5)]


@pytest.mark.parametrize("n, shown", [(0, "0"), (999, "999"), (1000, "1.0k"), (31234, "31.2k")])
def test_a_token_count_is_shown_short(n, shown):
    assert C.short(n) == shown


def test_calls_without_an_id_are_not_indexed_and_a_missing_call_is_named_plainly():
    assert C._calls_by_id([{"role": "assistant", "tool_calls": [{"function": {}}, "junk", {"id": "c1"}]}]) == {
        "c1": {"id": "c1"}}
    assert C._call_text(None) == "a tool call"


def test_the_estimate_is_calibrated_by_the_reported_usage_within_bounds():
    m = manager()
    msgs = [user("word " * 700)]
    raw = m.raw(msgs)
    assert m.estimate(msgs) == raw
    m.observe(raw, {"prompt_tokens": raw * 2, "completion_tokens": 5})
    assert m.estimate(msgs) == pytest.approx(raw * 2, abs=2)
    m.observe(raw, {"prompt_tokens": raw * 10})  # absurd: bounded
    assert m.ratio == 2.5
    before = m.ratio
    for bad in (None, {}, {"prompt_tokens": 0}, {"prompt_tokens": True}, {"prompt_tokens": "9"}):
        m.observe(raw, bad)
    assert m.ratio == before


# ---- units -------------------------------------------------------------------------------------


def test_a_call_and_its_results_are_one_unit():
    msgs = [user("q"), *read("c1", "a", 100), say("ok"), *calls(("c2", "x", {}, {}), ("c3", "y", {}, {})), user("n")]
    assert C.units(msgs) == [(0, 1), (1, 3), (3, 4), (4, 7), (7, 8)]


# ---- stubs first -------------------------------------------------------------------------------


def test_old_tool_outputs_become_stubs_first_and_no_summary_is_needed_when_that_fits():
    m = manager(window=8000)
    msgs = [user("first request")]
    for i in range(6):
        msgs += [user(f"read file {i}"), *read(f"c{i}", f"f{i}.py", 4000), say(f"read {i}")]
    msgs += [user("and now?"), *read("last", "last.py", 3000)]  # the model has not read this one yet
    assert m.estimate(msgs) > m.limit
    plan = m.plan(msgs)
    assert plan.request is None, "stubs were enough: no summary request"
    assert plan.stubbed >= 4
    out = m.finish(plan, None)
    assert out.how == "stubs" and not out.failed and out.after <= m.limit
    by_id = {x.get("tool_call_id"): x for x in out.messages if x["role"] == "tool"}
    stub = json.loads(by_id["c0"]["content"])
    assert stub["ok"] is True and stub["path"] == "f0.py" and stub["lines"] == 666
    assert "read_file" in stub["stub"] and "f0.py" in stub["stub"] and "content: 3,996 characters" in stub["stub"]
    assert not C.is_stub(by_id["last"]["content"]), "an output the model has not read is never a stub"
    assert out.text.startswith(f"context compacted: {C.short(out.before)} → {C.short(out.after)} tokens (")
    assert "old tool outputs replaced by stubs" in out.text and "dropped nothing" in out.text
    assert C.apply_ops(msgs, out.ops) == out.messages


# ---- the summary -------------------------------------------------------------------------------


def long_conversation(turns=30):
    msgs = [user("FIRST: build the parser")]
    for i in range(turns):
        msgs += [user(f"step {i}: " + "detail " * 60), *read(f"c{i}", f"f{i}.py", 700), say(f"done step {i} " * 20)]
    return msgs


def test_still_over_after_stubs_a_summary_request_without_tools_in_the_fixed_structure():
    m = manager(window=8000)
    msgs = long_conversation()
    plan = m.plan(msgs)
    assert plan.request is not None and plan.middle
    system, ask = plan.request
    assert system["role"] == "system" and "memory of a coding session" in system["content"]
    for heading in C.SUMMARY_HEADINGS:
        assert f"## {heading}" in ask["content"]
    assert "step 0:" in ask["content"], "the oldest turns are what is summarised"
    assert "FIRST: build the parser" not in ask["content"], "the pinned first request is not summarised"
    # the summariser's request fits the window with room for its answer
    assert C.estimate_tokens(plan.request) < m.hard - C.SUMMARY_MAX
    summary = "\n".join(f"## {h}\nsomething" for h in C.SUMMARY_HEADINGS)
    out = m.finish(plan, summary)
    assert out.how == "summary" and not out.failed and out.after <= m.limit
    assert out.messages[0] == user("FIRST: build the parser"), "the first request is pinned"
    assert out.messages[1]["role"] == "user" and out.messages[1]["content"].startswith(C.SUMMARY_PREFIX)
    assert out.messages[1]["content"].endswith(summary)
    assert plan.tail > 0 and out.messages[2:] == plan.messages[len(plan.messages) - plan.tail:], \
        "the most recent turns are kept verbatim"
    assert out.messages[2]["role"] == "user", "the recent part starts at a unit"
    assert out.summarised == len(plan.middle)
    assert f"summarised {C.describe(plan.middle)}" in out.text and "dropped nothing" in out.text
    assert conversation.check(out.messages) == []


def test_the_summariser_reads_as_much_of_a_long_transcript_as_its_own_request_has_room_for():
    """The hard bound less room for the longest summary (2,000 tokens) and 600 tokens more: with a
    window of 8,000 (hard bound 7,000) the transcript shown is 4,400 tokens' worth of characters
    (3 a token), its two ends, and what is left out between them is counted."""
    m = manager(window=8000)
    msgs = long_conversation()
    plan = m.plan(msgs)
    text = C.render(msgs[plan.head:len(msgs) - plan.tail], 150)  # even the shortest outputs are too long
    assert m.hard == 7000 and len(text) > 13_200
    keep = 13_200 // 2
    shown = text[:keep] + f"\n\n[… {len(text) - 2 * keep:,} characters of the transcript left out …]\n\n" + text[-keep:]
    assert f"<transcript>\n{shown}\n</transcript>" in plan.request[1]["content"]


def test_a_summary_not_smaller_than_what_it_replaces_is_rejected_and_the_fallback_drops_with_a_marker():
    m = manager(window=8000)
    msgs = long_conversation()
    plan = m.plan(msgs)
    huge = "padding " * 20000
    out = m.finish(plan, huge)
    assert out.how == "dropped" and "was not smaller than what it replaces" in out.failed
    marker = out.messages[1]["content"]
    assert marker.startswith(C.DROPPED_PREFIX) and "without a summary" in marker and "padding" not in marker
    assert out.after <= m.limit and out.fits
    assert "dropped " in out.text and "without a summary" in out.text


@pytest.mark.parametrize("summary, why", [(None, "the summary request failed: HTTP 500"), ("   ", "")])
def test_a_failed_or_empty_summary_falls_back_and_keeps_an_earlier_summary(summary, why):
    m = manager(window=8000)
    msgs = long_conversation()
    earlier = C.summary_message("## Goal\nREMEMBER the blue key", "10 earlier messages")
    msgs = [msgs[0], user(earlier)] + msgs[1:]
    plan = m.plan(msgs)
    assert any(x["content"] == earlier for x in plan.middle if x["role"] == "user")
    out = m.finish(plan, summary, why)
    assert out.how == "dropped" and out.failed
    assert "REMEMBER the blue key" in out.messages[1]["content"], "the earlier summary survives the fallback"
    assert out.after <= m.limit


@pytest.mark.parametrize("marker", [C.summary_message("## Goal\nthe parser", "11 earlier messages"),
                                    C.dropped_message("11 earlier messages", "the summary request failed", [])])
def test_compact_again_with_only_an_earlier_compactions_message_before_the_last_turn_does_nothing(marker):
    m = manager(window=8000)
    msgs = [user("FIRST: build the parser"), user(marker), user("hello"), say("hi")]
    plan = m.plan(msgs, reason="/compact")
    assert plan.request is None and not plan.middle, "summarising a summary again gains nothing"
    out = m.finish(plan, None)
    assert out.ops == [] and out.messages == msgs and not out.failed


def test_a_huge_unread_output_is_cut_so_the_request_fits_and_stays_json():
    m = manager(window=8000)
    msgs = [user("read the big file"), *read("big", "big.txt", 64 * 1024)]
    plan = m.plan(msgs)
    assert plan.request is None, "nothing to summarise: the first request and the unread result"
    out = m.finish(plan, None)
    assert out.how == "cut" and out.fits and out.after <= m.limit and not out.failed
    result = json.loads(out.messages[-1]["content"])
    assert "cut to fit the context window" in result["cut_by_dashfloat"] and result["path"] == "big.txt"
    assert C.apply_ops(msgs, out.ops) == out.messages


def write(cid, path, size):
    return calls((cid, "write_file", {"path": path, "content": "w" * size}, {"ok": True, "path": path, "bytes": size}))


def test_the_long_arguments_of_old_calls_become_notes_with_their_outputs():
    m = manager(window=8000)
    msgs = [user("first"), *write("w1", "big.txt", 30000), say("written"), user("next"), *read("r1", "a", 900)]
    plan = m.plan(msgs)
    assert plan.stubbed == 1 and plan.request is None
    args = json.loads(plan.messages[1]["tool_calls"][0]["function"]["arguments"])
    assert args == {"path": "big.txt", "content": "[DashFloat: 30,000 characters (1 lines) left out to save context]"}
    assert C.apply_ops(msgs, plan.ops) == plan.messages


def test_a_huge_call_the_model_just_made_is_cut_so_the_request_fits():
    """A write_file of 200 KB in the last unit: nothing to summarise, its result not read
    yet; its arguments are what is cut, and they stay JSON."""
    m = manager(window=32768)
    msgs = [user("write an odd file"), *write("w1", "odd.txt", 200_000)]
    out = m.finish(m.plan(msgs), None)
    assert out.fits and out.after <= m.limit and not out.failed and out.how == "cut"
    args = json.loads(out.messages[1]["tool_calls"][0]["function"]["arguments"])
    assert args["path"] == "odd.txt" and "cut to fit the context window" in args["content"]
    assert C.apply_ops(msgs, out.ops) == out.messages


def test_a_first_request_larger_than_the_window_is_cut_too():
    m = manager(window=4000)
    out = m.finish(m.plan([user("paste " * 10000)]), None)
    assert out.fits and "cut to fit the context window" in out.messages[0]["content"]


def test_random_conversations_never_split_a_call_from_its_results():
    rnd = random.Random(7)
    for trial in range(60):
        msgs = [user("first")]
        for i in range(rnd.randint(1, 40)):
            r = rnd.random()
            if r < 0.3:
                msgs.append(user("u" * rnd.randint(10, 3000)))
            elif r < 0.5:
                msgs.append(say("a" * rnd.randint(10, 3000)))
            else:
                n = rnd.randint(1, 3)
                msgs += calls(*[(f"t{trial}-{i}-{k}", "read_file", {"path": "p"},
                                 {"ok": True, "content": "z" * rnd.randint(10, 9000)}) for k in range(n)])
        m = manager(window=rnd.choice([4000, 8000, 16000]))
        plan = m.plan(msgs, reason=rnd.choice(["auto", "/compact"]))
        if plan.request is not None:
            assert not plan.middle[0].get("role") == "tool"
        summary = rnd.choice([None, "## Goal\nshort", "long " * 30000])
        out = m.finish(plan, summary)
        assert conversation.check(out.messages) == [], (trial, out.ops)
        assert out.fits and out.after <= m.hard
        assert C.apply_ops(msgs, out.ops) == out.messages


# ---- the window ---------------------------------------------------------------------------------


@pytest.mark.parametrize("entry, tokens", [
    ({"id": "m", "object": "model", "owned_by": "vllm", "max_model_len": 32768}, 32768),  # vLLM
    ({"id": "m", "meta": {"vocab_type": 2, "n_ctx_train": 131072, "n_embd": 4096}}, 131072),  # llama.cpp
    ({"id": "m", "meta": {"n_ctx": 8192, "n_ctx_train": 131072}}, 8192),  # a build that says n_ctx
    ({"id": "m", "context_length": 200000, "top_provider": {"context_length": 64000}}, 200000),  # OpenRouter
    ({"id": "m", "top_provider": {"context_length": 64000}}, 64000),
    ({"id": "m", "context_window": 131072, "owned_by": "Meta"}, 131072),  # Groq
    ({"id": "m", "max_context_length": 32768, "loaded_context_length": 4096}, 4096),  # LM Studio v0
    ({"key": "m", "max_context_length": 32768, "loaded_instances": [{"id": "m", "config": {"context_length": 8192}}]},
     8192),  # LM Studio 0.4
    ({"id": "m", "owned_by": "library"}, None),  # Ollama says nothing
    ({"id": "m", "context_length": True}, None),
    ({"id": "m", "context_length": 10**12}, None),
])
def test_the_window_a_model_list_entry_states(entry, tokens):
    assert C.window_of(entry) == tokens
    assert C.windows_of({"data": [entry]}) == ({"m": tokens} if tokens else {})


@pytest.mark.parametrize("text, tokens", [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens", 8192),
    ("request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it", 4096),
    ("This endpoint's maximum context length is 163,840 tokens.", 163840),
    ("Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with "
     "context length of only 4096 tokens", 4096),
    ("the conversation is too long", None),
])
def test_the_window_an_overflow_error_names(text, tokens):
    assert C.window_from_error(text) == tokens


@pytest.mark.parametrize("text, tokens", [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9,412 tokens.", 9412),
    ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4500 in the "
     "messages, 500 in the completion).", 4500),
    ("request (9000 tokens) exceeds the available context size (4096 tokens)", 9000),
    ("input length (5000 tokens) exceeds the model's maximum context length (4096 tokens)", 5000),
    ("prompt is too long: 210000 tokens > 200000 maximum", 210000),
    ("too long", None),
])
def test_the_count_an_overflow_error_names(text, tokens):
    assert C.count_from_error(text) == tokens


# ---- the numbers, at their boundaries ------------------------------------------------------


def test_a_long_argument_becomes_a_note_from_601_characters():
    assert C.stub_args(json.dumps({"path": "a", "content": "x" * 600})) is None
    stubbed = json.loads(C.stub_args(json.dumps({"path": "a", "content": "x" * 601})))
    assert stubbed["path"] == "a" and stubbed["content"] == C.ARGS_NOTE.format(n=601, lines=1)


def test_an_old_tool_output_is_stubbed_from_601_characters():
    msgs = calls(("c1", "read_file", {"path": "a"}, {"ok": True}))
    for size, stubbed in ((600, False), (601, True)):
        msgs[1]["content"] = "r" * size
        out = C.apply_ops(msgs, [("stub", ["c1"])])
        assert C.is_stub(out[1]["content"]) is stubbed, size


def test_the_summariser_reads_1500_characters_of_each_tool_output():
    msgs = calls(("c1", "read_file", {"path": "a"}, {}))
    for size, whole in ((1500, True), (1501, False)):
        msgs[1]["content"] = "z" * size
        text = C.render(msgs)
        assert ("z" * size in text) is whole, size
        assert ("…[1 more characters]" in text) is not whole
        assert "z" * 1500 in text


def test_a_cut_output_keeps_at_least_400_characters_of_its_longest_field():
    out = json.loads(C.cut_text(json.dumps({"ok": True, "content": "c" * 5000}), 10, tool=True))
    assert out["content"] == "c" * 400 and out["cut_by_dashfloat"].startswith("4,600 more characters")
    args = json.loads(C._cut_args(json.dumps({"content": "d" * 5000}), 10))
    assert args["content"].startswith("d" * 400 + "\n") and "d" * 401 not in args["content"]


@pytest.mark.parametrize(("window", "words"), [(1_000, 210), (2_990, 210), (3_010, 210), (10_000, 700),
                                               (19_990, 1399), (20_010, 1400), (128_000, 1400)])
def test_a_summary_may_take_10_percent_of_the_window_between_300_and_2000_tokens(window, words):
    """Asked in words: 0.7 words a token."""
    m = manager(window=window)
    plan = m.plan(long_conversation(turns=30 if window <= 10_000 else 400))
    assert plan.request is not None
    assert f"At most {words} words." in plan.request[-1]["content"]


def test_without_a_configured_or_stated_window_it_is_32768_tokens():
    assert C.ContextManager().window == 32_768
    assert C.ContextManager(None).limit == int(32_768 * C.DEFAULT_THRESHOLD)


# ---- the helpers' exact output (review of surviving mutants) ------------------------------------


def _call(name, arguments, cid="c1"):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize("args, shown", [("a" * 160, "a" * 160), ("a" * 161, "a" * 150 + "…")])
def test_a_call_is_named_with_its_arguments_up_to_160_characters(args, shown):
    assert C._call_text(_call("grep", args)) == f"grep {shown}"
    assert C._call_text({"function": {}}) == "? "


def test_a_stub_keeps_the_small_fields_and_names_the_big_ones_with_their_sizes():
    big = {"ok": True, "n": 3, "x": 1.5, "none": None, "path": "é" * 200, "content": "l\n" * 150 + "é",
           "entries": list(range(1200)), "meta": {"k": "é" * 10}}
    said = json.loads(C.stub(json.dumps(big), _call("read_file", '{"path": "a"}')))
    assert said == {"ok": True, "n": 3, "x": 1.5, "none": None, "path": "é" * 200, "stub": (
        'the output of read_file {"path": "a"} was removed to save context (content: 301 characters, 151 lines; '
        "entries: 1,200 items; meta: 19 characters); call the tool again if you need it")}
    assert "é" in C.stub(json.dumps(big), None)  # not escaped: as long as it is
    assert json.loads(C.stub("x" * 1234, None))["stub"] == (
        "the output of a tool call was removed to save context (1,234 characters); call the tool again if you need it")
    assert C.stub(json.dumps({"path": "p" * 201}), None) == (
        '{"stub":"the output of a tool call was removed to save context (path: 201 characters, 1 lines); '
        'call the tool again if you need it"}')


def test_long_arguments_become_notes_and_non_ascii_stays_as_it_is():
    out = C.stub_args(json.dumps({"path": "é.txt", "content": "x\n" * 400}))
    assert out == '{"path": "é.txt", "content": "[DashFloat: 800 characters (401 lines) left out to save context]"}'


def test_only_the_calls_named_get_new_arguments_and_in_new_dicts():
    mine = _call("write_file", "old", "c1")
    msg = {"role": "assistant", "tool_calls": [mine, "junk", _call("x", "keep", "c2"), {"function": {}}]}
    C._with_args(msg, {"c1"}, lambda a, cid: a.upper())
    assert msg["tool_calls"][0]["function"]["arguments"] == "OLD" and mine["function"]["arguments"] == "old"
    assert msg["tool_calls"][1:] == ["junk", _call("x", "keep", "c2"), {"function": {}}]
    before = {"role": "assistant", "tool_calls": ["junk", {"function": {}}]}
    C._with_args(before, {"c1"}, lambda a, cid: "never")
    assert before == {"role": "assistant", "tool_calls": ["junk", {"function": {}}]}


def test_cut_arguments_keep_what_fits_with_a_note():
    args = json.dumps({"path": "é", "content": "y" * 1000})
    out = C._cut_args(args, 500)
    other = len(args) - 1000
    room = 500 - other
    assert out == json.dumps({"path": "é", "content": "y" * room + "\n" + CUT(1000 - room)}, ensure_ascii=False)
    assert C._cut_args(json.dumps({"content": "y" * 400}), 10) is None  # within CUT_MIN already
    assert C._cut_args(json.dumps({"content": "y" * 401}), 10) is not None


def CUT(n):
    return C.CUT_NOTE.format(n=n)


def test_cut_text_keeps_its_bound_exactly_and_a_tool_output_stays_json():
    assert C.cut_text("abc", 3, tool=False) == "abc"
    assert C.cut_text("abcd", 3, tool=False) == "abc\n" + CUT(1)
    assert C.cut_text("é" * 10, 10, tool=True) == "é" * 10
    assert C.cut_text("é" * 11, 10, tool=True) == json.dumps({"cut": "é" * 10, "cut_by_dashfloat": CUT(1)},
                                                             ensure_ascii=False, separators=(",", ":"))
    content = json.dumps({"ok": True, "path": "é", "content": "z" * 2000}, ensure_ascii=False)
    other = len(content) - 2000
    out = json.loads(C.cut_text(content, 1000, tool=True))
    assert out["content"] == "z" * (1000 - other) and out["path"] == "é"
    assert out["cut_by_dashfloat"].startswith(f"{2000 - (1000 - other):,} more characters of content were cut")
    assert "é" in C.cut_text(content, 1000, tool=True)
    small = json.dumps({"a": "z" * 300, "b": "w" * 300})  # the longest field is within CUT_MIN
    assert json.loads(C.cut_text(small, 100, tool=True)) == {"cut": small[:100], "cut_by_dashfloat": CUT(len(small) - 100)}
    exactly = json.dumps({"a": "z" * 400, "b": "w"})  # the longest field is CUT_MIN long: nothing to cut in it
    assert json.loads(C.cut_text(exactly, 100, tool=True))["cut"] == exactly[:100]


def test_replace_clamps_its_tail_and_cut_applies_every_key_once():
    u = [user(f"u{k}") for k in range(3)]
    assert C.apply_ops(u, [["replace", 2, 5, "S"]]) == [u[0], u[1], user("S"), u[2]]
    msgs = [user("x" * 50), *calls(("c1", "write_file", {"content": "y" * 1000}, {"ok": True}))]
    msgs.append({"role": "tool", "tool_call_id": "c1", "content": "z" * 50})  # a second result, same id
    out = C.apply_ops(msgs, [["cut", {"args:c1": 500, "#0": 10, "c1": 20}]])
    assert out[0]["content"] == "x" * 10 + "\n" + CUT(40)
    assert len(out[1]["tool_calls"][0]["function"]["arguments"]) < 600
    assert out[2]["content"] == json.dumps({"ok": True}) and out[3]["content"] == "z" * 50  # short: as it is; the first only
    out = C.apply_ops(msgs[:1] + msgs[3:], [["cut", {"c1": 20}]])
    assert json.loads(out[1]["content"]) == {"cut": "z" * 20, "cut_by_dashfloat": CUT(30)}


def test_units_head_and_the_transcript_of_an_earlier_summary():
    assert C.units([say("no calls"), {"role": "tool", "tool_call_id": "c", "content": "x"}]) == [(0, 1), (1, 2)]
    assert C.head_len([]) == 0 and C.head_len([say("a")]) == 0 and C.head_len([user("a")]) == 1
    earlier = user(C.SUMMARY_PREFIX + " note]\n\nfirst\n\nsecond")
    assert C.render([earlier, user("plain\n\ntext")]) .startswith(
        "EARLIER SUMMARY (merge it into yours):\nfirst\n\nsecond\n\nUSER:\nplain\n\ntext")


def test_the_transcript_of_every_kind_of_message():
    """render(): each message as the summariser reads it; a result named after its call (or
    "tool" when the call, its function or its name is missing), an empty assistant message
    left out, an output exactly `shown` long kept whole and one character more cut."""
    msgs = [
        user("fix it"),
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "c2", "type": "function", "function": {"arguments": "{}"}},
            {"id": "c3", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 10},
        {"role": "tool", "tool_call_id": "c2", "content": "y" * 11},
        {"role": "tool", "tool_call_id": "c3", "content": "three"},
        {"role": "tool", "tool_call_id": "gone", "content": "four"},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": "Done."},
    ]
    assert C.render(msgs, 10) == "\n\n".join([
        "USER:\nfix it",
        "ASSISTANT:\nLooking.",
        'ASSISTANT CALLED: read_file {"path": "a"}',
        "ASSISTANT CALLED: ? {}",
        "ASSISTANT CALLED: ? ",
        "RESULT of read_file: " + "x" * 10,
        "RESULT of tool: " + "y" * 10 + " …[1 more characters]",
        "RESULT of tool: three",
        "RESULT of tool: four",
        "ASSISTANT:\nDone.",
    ])


def _transcript(request: list[dict]) -> str:
    ask = request[1]["content"]
    return ask[len("<transcript>\n"):ask.index("\n</transcript>")]


def test_the_summary_request_shortens_outputs_then_leaves_the_middle_out():
    """Tool outputs are shown at 1,500 characters, then 500, then 150, the first that fits the
    budget (a transcript exactly the budget fits); past 150 the middle is left out, keeping
    half the budget at each end, 1,000 characters at least."""
    msgs = [user("go")] + calls(("c1", "read_file", {"path": "a"}, {}))
    msgs[2]["content"] = "o" * 3000
    at = {shown: C.render(msgs, shown) for shown in (C.RESULT_SHOWN, 500, 150)}
    assert len(at[1500]) > len(at[500]) > len(at[150])
    for shown, text in at.items():
        assert _transcript(C.summary_request(msgs, words=100, budget_chars=len(text))) == text, shown
    assert _transcript(C.summary_request(msgs, words=100, budget_chars=len(at[500]) - 1)) == at[150]
    long = [user("go")] + calls(*[(f"c{i}", "read_file", {"path": "a"}, {}) for i in range(30)])
    for m in long[2:]:
        m["content"] = "p" * 400
    whole = C.render(long, 150)
    for budget, keep in ((300, 1000), (3000, 1500)):
        assert len(whole) > budget
        assert _transcript(C.summary_request(long, words=100, budget_chars=budget)) == (
            whole[:keep] + f"\n\n[… {len(whole) - 2 * keep:,} characters of the transcript left out …]\n\n"
            + whole[-keep:]), budget


def test_describe_counts_prompts_calls_and_earlier_summaries():
    summary = user(C.SUMMARY_PREFIX + " x]\n\nold")
    dropped = user(C.DROPPED_PREFIX + " y]")
    two = {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]}
    assert C.describe([user("a")]) == "1 earlier message (1 prompt, 0 tool calls)"
    assert C.describe([user("a"), say("b"), user("c")]) == "3 earlier messages (2 prompts, 0 tool calls)"
    assert C.describe([summary, dropped, two, {"role": "user", "content": None}]) == (
        "4 earlier messages (1 prompt, 2 tool calls, 1 earlier summary)")
    assert C.describe([summary, summary, {"role": "assistant", "tool_calls": [{"id": "a"}]}, say("x")]) == (
        "4 earlier messages (0 prompts, 1 tool call, 2 earlier summaries)")
    assert C.describe([say(C.SUMMARY_PREFIX)]) == "1 earlier message (0 prompts, 0 tool calls, 1 earlier summary)"


def test_a_new_manager_has_no_system_message_and_the_hard_bound_leaves_room_for_the_answer():
    m = C.ContextManager(8000)
    msgs = [user("hello"), say("hi")]
    assert m.request(msgs) == msgs and m.request(msgs)[0] is not msgs[0]
    assert m.raw(msgs) == int(C.estimate_tokens(msgs)) and m.estimate(msgs) == m.raw(msgs)
    assert [C.ContextManager(w).hard for w in (8000, 32768, 40000)] == [7000, 28672, 35904]


def test_a_compaction_that_stubbed_nothing_says_nothing_of_stubs():
    """/compact of short messages (no output long enough to stub): a summary, no stub op, and
    neither the outcome nor its entry mentions stubs."""
    m = manager(window=8000)
    msgs = [user("FIRST"), say("a " * 200), user("second"), say("b " * 200), user("now"), say("ok")]
    plan = m.plan(msgs, reason="/compact")
    assert plan.stubbed == 0 and plan.ops == [] and plan.request is not None
    out = m.finish(plan, "## Goal\nshort")
    assert out.how == "summary" and out.stubbed == 0 and "stub" not in out.text
    assert out.text.endswith("(summarised 3 earlier messages (1 prompt, 0 tool calls); dropped nothing)")


# ---- edges the mutation run found untested -------------------------------------------------------


def test_calibration_ignores_a_request_too_small_to_tell_and_is_bounded_below():
    """Under 50 tokens of raw estimate, a figure says little (and a server's fixed overhead
    dominates): ignored. One prompt token for 50 is absurd: bounded at 0.5x."""
    m = manager()
    m.observe(49, {"prompt_tokens": 98})
    assert m.ratio == 1.0
    m.observe(50, {"prompt_tokens": 100})
    assert m.ratio == 2.0
    m.observe(50, {"prompt_tokens": 1})
    assert m.ratio == 0.5


@pytest.mark.parametrize(("value", "window"), [
    (255, None), (256, 256), (100_000_000, 100_000_000), (100_000_001, None), (True, None), (8192.0, None)])
def test_a_reported_window_is_believed_from_256_to_100_million_tokens(value, window):
    assert C.window_of({"context_length": value}) == window
    assert C.window_of({"loaded_instances": [{"config": {"context_length": value}}]}) == window


def test_a_loaded_instance_without_a_config_is_passed_over():
    assert C.window_of({"loaded_instances": [{"config": None}, {"id": "x"}, "junk",
                                             {"config": {"context_length": 4096}}]}) == 4096


@pytest.mark.parametrize(("threshold", "share"), [(0.8, 0.6), (0.5, 0.3), (0.3, 0.15)])
def test_free_stubbing_stops_well_under_the_threshold(threshold, share):
    """The target: 20 points under the threshold, but never under half of it."""
    assert manager(window=10_000, threshold=threshold).target == int(10_000 * share)


def _stub_oracle(m, msgs, ids):
    """The fewest of `ids` (oldest first) whose stubs bring the estimate to the target, found
    by estimating each candidate conversation whole."""
    for j in range(len(ids) + 1):
        if m.estimate(C.apply_ops(msgs, [["stub", ids[:j]]] if j else [])) <= m.target:
            return j
    return len(ids)


@pytest.mark.parametrize("ratio", [1.0, 1.7])
def test_stubs_are_the_oldest_and_no_more_than_bring_the_estimate_to_the_target(ratio):
    """Stage 1 stubs tool outputs (and long arguments) oldest first and stops as soon as its
    running estimate is at the target: exactly as many as a whole re-estimate needs. Calls
    without an id, and outputs too short to stub, are passed over and never counted."""
    m = manager()
    m.ratio = ratio
    msgs = [user("start")]
    ids = []
    for k in range(12):
        cid = f"c{k}"
        msgs += read(cid, f"f{k}.py", 3000 + 200 * k)
        ids.append(cid)
        if k == 2:  # no id (then one with an id, in the same message), and a short output
            two = calls(("c2b", "read_file", {"path": "b.py"}, {"ok": True, "content": "b = 3\n" * 500}))
            two[0]["tool_calls"].insert(0, {"type": "function", "function": {"name": "read_file", "arguments": "{}"}})
            msgs += two + read("short", "s.py", 60)
            ids.append("c2b")
        if k == 0:  # long arguments and a short output: the arguments are shortened
            many = {f"part{i}": "z" * (C.STUB_MIN + 1) for i in range(40)}  # what is left of them counts
            msgs += calls(("w1", "write_file", many, {"ok": True}))
            ids.append("w1")
        if k == 6:  # an output and arguments of exactly STUB_MIN characters: too short
            edge = calls(("e1", "read_file", {"path": "e.py"}, {}), ("e2", "write_file", {}, {"ok": True}))
            edge[1]["content"] = "e" * C.STUB_MIN
            edge[0]["tool_calls"][1]["function"]["arguments"] = json.dumps({"path": "w", "content": "w" * (
                C.STUB_MIN - len(json.dumps({"path": "w", "content": ""})))})
            assert len(edge[0]["tool_calls"][1]["function"]["arguments"]) == C.STUB_MIN
            msgs += edge
    msgs += [user("go on"), *read("last", "l.py", 3000)]
    full, least = m.estimate(msgs), m.estimate(C.apply_ops(msgs, [["stub", ids]]))
    m.window = int((full - 0.6 * (full - least)) / 0.6)  # the target: 60 % of what all stubs save
    p = m.plan(msgs)
    want = _stub_oracle(m, msgs, ids)
    assert 0 < want < len(ids)
    assert p.ops == [["stub", ids[:want]]] and p.stubbed == want  # (the stubs were enough)
    assert p.after <= m.target < m.estimate(C.apply_ops(msgs, [["stub", ids[:want - 1]]]))
    m.window = int((full - 0.85 * (full - least)) / 0.6)  # a smaller one: more, never the same again
    again = m.plan(p.messages)
    more = _stub_oracle(m, p.messages, ids[want:])
    assert 0 < more < len(ids) - want, (want, more, ids)
    assert again.ops == [["stub", ids[want:want + more]]]


def test_what_may_be_cut_is_tool_outputs_and_arguments_first_then_any_content():
    msgs = [user("question"),
            {"role": "assistant", "content": "thinking", "tool_calls": [
                {"type": "function", "function": {"arguments": "{}"}},  # no id: never cut
                "junk", {"id": "c1", "function": {"arguments": '{"a": 1}'}}, {"id": "c2"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "out1"},
            {"role": "tool", "content": "no id"},
            {"role": "tool", "tool_call_id": "c2", "content": None},
            say("answer")]
    assert list(C._cuttable(msgs, True)) == [("args:c1", '{"a": 1}'), ("args:c2", ""), ("c1", "out1")]
    assert list(C._cuttable(msgs, False)) == [("#0", "question"), ("#1", "thinking"), ("#3", "no id"),
                                              ("#5", "answer")]


def test_a_cut_keeps_all_it_can_less_a_200_character_margin_and_never_under_cut_min():
    """The longest output is cut to what the excess leaves of it, 200 characters under (so one
    cut is enough), and never below CUT_MIN characters."""
    m = manager(window=8000)
    for size in (30_000, 90_000):
        msgs = [user("q"), *calls(("c1", "read_file", {"path": "a"}, {})), user("next")]
        msgs[2]["content"] = "x" * size
        over = (m.estimate(msgs) - m.limit) * C.CHARS_PER_TOKEN / m.ratio
        cuts, out = m._fit(msgs, None)
        assert cuts == {"c1": max(C.CUT_MIN, int(size - over - 200))}
        assert m.estimate(out) <= m.limit


def test_the_first_of_the_longest_outputs_is_cut_and_one_of_800_characters_never():
    m = manager(window=16_000)
    msgs = [user("q"), *calls(*[(f"c{i}", "read_file", {"path": str(i)}, {}) for i in range(1, 5)]), user("next")]
    for i, size in enumerate((800, 30_000, 30_000, 1000)):
        msgs[2 + i]["content"] = "xyzw"[i] * size
    cuts, out = m._fit(msgs, None)
    assert list(cuts) == ["c2"] and m.estimate(out) <= m.limit
    m = manager(window=600)  # all cut to CUT_MIN and still over: the 800 characters stay
    cuts, out = m._fit(msgs, None)
    assert cuts == {"c2": C.CUT_MIN, "c3": C.CUT_MIN, "c4": C.CUT_MIN} and m.estimate(out) > m.limit


def test_compact_keeps_the_latest_request_verbatim_even_as_the_last_message():
    """/compact summarises everything before the latest request, also when that request is
    the very last message (no answer yet); with the first request the only one, there is
    nothing before it to summarise."""
    m = manager(window=8000)
    msgs = [user("FIRST"), *read("c1", "a.py", 900), say("done"), user("and now this")]
    plan = m.plan(msgs, reason="/compact")
    assert (plan.head, plan.tail) == (1, 1) and len(plan.middle) == 3 and plan.request is not None
    only = [user("FIRST"), *read("c1", "a.py", 9000), say("done"), *read("c2", "b.py", 300), say("ok")]
    assert C.ContextManager._recent_start(m, only, C.units(only), None) > 1  # (the default is later)
    plan = m.plan(only, reason="/compact")
    assert plan.middle == [] and plan.request is None


def test_a_failed_summary_keeps_the_latest_earlier_summary_whole_and_says_why():
    """When the summary request fails, what it would replace is dropped; an earlier
    compaction's summary among it is kept (the latest one only, its whole text, blank lines
    included), and the failure is said with its reason, or a plain one."""
    m = manager(window=8000)
    old1 = C.summary_message("## Goal\nfirst", "3 earlier messages")
    old2 = C.summary_message("## Goal\nsecond\n\nmore of it", "5 earlier messages")
    msgs = [user("FIRST"), user(old1), *read("c1", "a.py", 900), user(old2), say("ok"), user("latest"), say("hi")]
    plan = m.plan(msgs, reason="/compact")
    assert plan.request is not None
    for why, said in (("", "the summary request failed"), ("timeout", "timeout")):
        out = m.finish(plan, None, why)
        marker = out.messages[1]["content"]
        assert marker.startswith(C.DROPPED_PREFIX) and f"({said})" in marker
        assert marker.endswith("\n\n## Goal\nsecond\n\nmore of it") and "first" not in marker
        assert out.failed == said and out.how == "dropped" and out.dropped == len(plan.middle)


def _uncuttable_turn(n):
    """A conversation whose latest turn holds `n` outputs of 790 characters (under
    CUT_MIN * 2: never cut), which no stub touches (the last unit)."""
    tail = calls(*[(f"t{i}", "read_file", {"path": f"f{i}"}, {}) for i in range(n)])
    for t in tail[1:]:
        t["content"] = "x" * 790
    return [user("FIRST"), *read("c1", "a.py", 900), say("ok"), user("latest"), *tail]


def test_what_is_said_when_the_request_still_does_not_fit():
    """Over the threshold after compacting: said as a failure (but on /compact, which the
    user asked for); over the window itself even after cuts: that is the failure, unless an
    earlier one (the summary's) is already said."""
    m = manager(window=8000)
    for reason, failed in (("overflow", "the request still needs"), ("/compact", "")):
        plan = m.plan(_uncuttable_turn(26), reason=reason)
        out = m.finish(plan, "short")
        assert out.fits and m.limit < out.after <= m.hard and out.how == "summary"
        assert out.failed.startswith(failed) if failed else out.failed == ""
    plan = m.plan(_uncuttable_turn(30), reason="/compact")
    out = m.finish(plan, "short")
    assert not out.fits and out.after > m.hard and out.failed.startswith("even cut down, the request needs")
    out = m.finish(plan, None, "the server refused")
    assert not out.fits and out.failed == "the server refused"


@pytest.mark.parametrize(("window", "ratio", "keep"), [
    (8000, 1.0, 6600),   # (8000 - 1000 - 2000 - 600) tokens x 3 characters, half of it each side
    (8000, 2.0, 3300),   # a model that counts twice the tokens: half the characters
    (2000, 1.0, 1500),   # a small window: the summariser still reads 1000 tokens' worth
])
def test_the_summarisers_transcript_is_bounded_by_what_its_request_leaves(window, ratio, keep):
    m = manager(window=window)
    m.ratio = ratio
    msgs = [user("FIRST")] + [user(f"request {i} " + "q" * 3000) for i in range(30)] + [user("latest"), say("hi")]
    plan = m.plan(msgs, reason="/compact")
    transcript = plan.request[1]["content"].split("<transcript>\n", 1)[1].split("\n</transcript>", 1)[0]
    head, _, rest = transcript.partition("\n\n[… ")
    assert len(head) == keep and rest.endswith("characters of the transcript left out …]\n\n" + transcript[-keep:])


def test_the_outcome_says_a_cut_and_a_failed_summary_keeps_no_header_of_the_earlier_one():
    m = manager(window=8000)
    msgs = [user("FIRST"), say("ok"), user("latest"), *calls(("c1", "read_file", {"path": "a"}, {}))]
    msgs[-1]["content"] = "x" * 40_000
    out = m.finish(m.plan(msgs), None)
    assert out.cut == 1 and "cut 1 long message to fit" in out.text
    old = C.summary_message("## Goal\nsecond", "5 earlier messages")
    msgs = [user("FIRST"), user(old), say("ok"), user("latest"), say("hi")]
    out = m.finish(m.plan(msgs, reason="/compact"), None)
    assert out.messages[1]["content"].endswith("\n\n## Goal\nsecond")
    assert C.SUMMARY_PREFIX not in out.messages[1]["content"]


def test_the_stubs_stop_where_the_target_is_reached_to_within_a_few_tokens():
    """The running estimate of stage 1 follows the stubs' real savings: with the target 20
    tokens under the estimate after five stubs, a sixth is needed, and is the last."""
    m = manager()
    msgs = [user("start")]
    for k in range(12):
        msgs += read(f"c{k}", f"f{k}.py", 3000 + 200 * k)
    msgs += [user("go on"), *read("last", "l.py", 3000)]
    ids = [f"c{k}" for k in range(12)]
    five, six = (m.estimate(C.apply_ops(msgs, [["stub", ids[:n]]])) for n in (5, 6))
    goal = five - 20
    assert six < goal
    m.window = next(w for w in range(int(goal / 0.6) - 3, int(goal / 0.6) + 4) if m.__class__(w, 0.8).target == goal)
    assert m.target == goal
    assert m.plan(msgs).ops == [["stub", ids[:6]]]
