"""Tests for dashfloat.llm.sse: WHATWG SSE parsing fed with raw bytes in any chunking."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from dashfloat.llm.sse import Event, SSEError, SSEParser

BOM = b"\xef\xbb\xbf"
MiB = 1 << 20


def parse(*chunks: bytes, max_event_bytes: int = MiB) -> list[Event]:
    """Feed every chunk, then finish; all events in order."""
    parser = SSEParser(max_event_bytes=max_event_bytes)
    events: list[Event] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.finish())
    return events


def datas(*chunks: bytes) -> list[str]:
    return [e.data for e in parse(*chunks)]


# -- line terminators --------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_each_line_terminator_splits_lines_and_blank_line_dispatches(eol):
    stream = b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    parser = SSEParser()
    assert parser.feed(stream) == [Event(data="a\nb"), Event(data="c")]
    assert parser.finish() == []


def test_mixed_terminators_in_one_stream():
    assert datas(b"data: a\rdata: b\ndata: c\r\n\r\ndata: d\n\r") == ["a\nb\nc", "d"]


def test_crlf_split_across_chunks_is_one_line_end_not_two():
    # If the lone CR and the LF counted separately, "a" would dispatch on its own.
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r") == [Event(data="a\nb")]
    assert parser.feed(b"\n") == []  # pairs with the CR before it: no second dispatch
    assert parser.finish() == []


def test_cr_at_chunk_end_then_non_lf_chunk():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\r") == [Event(data="a")]  # CR CR: line end + blank line
    assert parser.feed(b"data: b\r") == []
    assert parser.feed(b"data: c\r\r") == [Event(data="b\nc")]


def test_pending_cr_survives_empty_chunks():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\n") == [Event(data="a")]


def test_lf_after_crlf_pair_is_a_new_line_end():
    # "\r" | "\n" | "\n": the first LF completes the CRLF, the second is a blank line.
    parser = SSEParser()
    events = []
    for chunk in (b"data: a\r", b"\n", b"\n"):
        events.extend(parser.feed(chunk))
    assert events == [Event(data="a")]


def test_cr_dispatches_immediately_without_waiting_for_possible_lf():
    parser = SSEParser()
    assert parser.feed(b"data: a\r\n\r") == [Event(data="a")]


def test_event_returned_by_the_chunk_that_completes_it():
    parser = SSEParser()
    stream = b"data: one\n\ndata: two\n\n"
    seen = [(i, parser.feed(stream[i : i + 1])) for i in range(len(stream))]
    completed = [(i, evs) for i, evs in seen if evs]
    assert completed == [
        (stream.index(b"\n\n") + 1, [Event(data="one")]),
        (len(stream) - 1, [Event(data="two")]),
    ]


# -- BOM ---------------------------------------------------------------------------------


def test_leading_bom_is_skipped():
    assert parse(BOM + b"data: x\n\n") == [Event(data="x")]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_leading_bom_split_across_chunks_is_skipped(cut):
    stream = BOM + b"data: x\n\n"
    assert parse(stream[:cut], stream[cut:]) == [Event(data="x")]


def test_bom_fed_one_byte_at_a_time():
    assert parse(*[bytes([b]) for b in BOM + b"data: x\n\n"]) == [Event(data="x")]


def test_only_one_bom_is_skipped():
    # The second BOM becomes part of the field name "\ufeffdata": an unknown field.
    assert parse(BOM + BOM + b"data: x\n\ndata: y\n\n") == [Event(data="y")]


def test_bom_not_at_stream_start_is_not_skipped():
    assert parse(b"data: x\n\n" + BOM + b"data: y\n\n") == [Event(data="x")]
    assert parse(b"data: " + BOM + b"y\n\n") == [Event(data="\ufeffy")]


def test_partial_bom_prefix_that_is_not_a_bom_is_kept():
    # b"\xef\xbb" followed by something else is not a BOM; those bytes are line content.
    events = parse(b"\xef", b"\xbbdata: x\n\ndata: y\n\n")
    assert events == [Event(data="y")]  # first line's field is "\ufffd\ufffddata"


def test_stream_of_only_a_partial_bom():
    parser = SSEParser()
    assert parser.feed(b"\xef\xbb") == []
    assert parser.finish() == []


def test_stream_of_only_a_bom():
    assert parse(BOM) == []
    assert parse(BOM[:1], BOM[1:]) == []


def test_empty_chunk_before_bom_decision():
    assert parse(b"", b"\xef", b"", b"\xbb\xbf", b"data: x\n\n") == [Event(data="x")]


# -- fields ------------------------------------------------------------------------------


def test_comments_are_ignored_and_do_not_dispatch():
    events = parse(b": hello\n:\ndata: a\n: in the middle\ndata: b\n\n")
    assert events == [Event(data="a\nb")]


def test_comment_only_blocks_dispatch_nothing():
    assert parse(b": keep-alive\n\n: keep-alive\n\n") == []


def test_value_with_and_without_leading_space():
    assert datas(b"data:x\n\n", b"data: x\n\n") == ["x", "x"]


def test_only_one_leading_space_is_removed():
    assert datas(b"data:  x \n\n") == [" x "]


def test_tab_is_not_stripped():
    assert datas(b"data:\tx\n\n") == ["\tx"]


def test_colon_inside_value_is_kept():
    assert datas(b'data: {"a":"b:c"}\n\n') == ['{"a":"b:c"}']


def test_field_without_colon_has_empty_value():
    # "data" alone appends an empty line: the event dispatches with data "".
    assert datas(b"data\n\n") == [""]
    assert datas(b"data\ndata\n\n") == ["\n"]


def test_empty_data_value_still_dispatches():
    assert parse(b"data:\n\n") == [Event(data="")]


def test_only_the_final_newline_is_stripped():
    assert datas(b"data: a\ndata:\n\n") == ["a\n"]
    assert datas(b"data:\ndata:\ndata: z\n\n") == ["\n\nz"]


def test_blank_line_without_data_dispatches_nothing():
    assert parse(b"\n\n\n") == []
    assert parse(b"event: ping\n\n") == []


def test_event_type_resets_even_when_nothing_is_dispatched():
    assert parse(b"event: ping\n\ndata: x\n\n") == [Event(event="message", data="x")]


def test_event_type_set_and_reset_after_dispatch():
    events = parse(b"event: delta\ndata: a\n\ndata: b\n\n")
    assert events == [Event(event="delta", data="a"), Event(event="message", data="b")]


def test_empty_event_type_means_message():
    assert parse(b"event:\ndata: a\n\n") == [Event(event="message", data="a")]
    assert parse(b"event\ndata: a\n\n") == [Event(event="message", data="a")]


def test_last_event_type_line_wins():
    assert parse(b"event: a\nevent: b\ndata: x\n\n") == [Event(event="b", data="x")]


def test_unknown_fields_are_ignored():
    assert parse(b"foo: bar\ndata: x\nbaz\nDATA: y\nData: z\n\n") == [Event(data="x")]


def test_field_names_are_case_sensitive():
    assert parse(b"Data: x\n\n") == []


# -- id ----------------------------------------------------------------------------------


def test_id_is_none_until_sent():
    assert parse(b"data: x\n\n") == [Event(data="x", id=None)]


def test_id_is_sticky_across_events():
    events = parse(b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n")
    assert [e.id for e in events] == ["1", "1", "2"]


def test_id_set_by_a_block_without_data_still_applies():
    assert parse(b"id: 5\n\ndata: x\n\n") == [Event(data="x", id="5")]


def test_empty_id_resets_to_empty_string():
    events = parse(
        b"id: 1\ndata: a\n\nid\ndata: b\n\nid: 3\ndata: c\n\nid:\ndata: d\n\n"
    )
    assert [e.id for e in events] == ["1", "", "3", ""]


def test_id_containing_nul_is_ignored():
    events = parse(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert [e.id for e in events] == ["1", "1"]


def test_id_may_follow_data_within_the_event():
    assert parse(b"data: a\nid: 9\n\n") == [Event(data="a", id="9")]


# -- retry -------------------------------------------------------------------------------


def test_retry_ascii_digits_are_honoured_and_sticky():
    events = parse(b"retry: 2500\ndata: a\n\ndata: b\n\n")
    assert [e.retry for e in events] == [2500, 2500]


def test_retry_without_data_still_applies():
    assert parse(b"retry: 10\n\ndata: x\n\n") == [Event(data="x", retry=10)]


@pytest.mark.parametrize(
    "value",
    [b"", b"12a", b"-1", b"+5", b"1.5", b" 100", b"\xd9\xa1\xd9\xa2", b"1 ", b"0x10"],
    ids=repr,
)
def test_retry_not_all_ascii_digits_is_ignored(value):
    # " 100" arises from "retry:  100": only one space is removed. "\u0661\u0662" are
    # Arabic-Indic digits: digits to str.isdigit(), but not ASCII digits.
    events = parse(b"retry: 7\ndata: a\n\nretry: " + value + b"\ndata: b\n\n")
    assert [e.retry for e in events] == [7, 7]


def test_retry_none_until_sent():
    assert parse(b"data: x\n\n")[0].retry is None


def test_retry_leading_zeros_and_zero():
    assert [
        e.retry for e in parse(b"retry: 0\ndata: a\n\nretry:0042\ndata: b\n\n")
    ] == [0, 42]


# -- decoding ----------------------------------------------------------------------------


def test_utf8_decoded_after_line_splitting_across_chunks():
    payload = "data: café 🙂 naïve\n\n".encode()
    for cut in range(len(payload) + 1):
        assert datas(payload[:cut], payload[cut:]) == ["café 🙂 naïve"], cut


def test_invalid_utf8_is_replaced_not_raised():
    assert datas(b"data: a\xff\xfeb\n\n") == ["a\ufffd\ufffdb"]


def test_truncated_multibyte_at_line_end_is_replaced():
    # "🙂" is F0 9F 99 82; the line ends after two of its bytes.
    assert datas(b"data: x\xf0\x9f\ndata: y\n\n") == ["x\ufffd\ny"]


def test_event_and_id_values_are_decoded():
    events = parse("event: délta\nid: ïd\ndata: x\n\n".encode())
    assert events == [Event(event="délta", data="x", id="ïd")]


def test_accepts_bytearray_and_memoryview():
    parser = SSEParser()
    assert parser.feed(bytearray(b"data: a\n")) == []
    assert parser.feed(memoryview(b"\n")) == [Event(data="a")]


def test_rejects_str_input():
    with pytest.raises(TypeError):
        SSEParser().feed("data: a\n\n")  # type: ignore[arg-type]


# -- finish (documented deviation) -------------------------------------------------------


def test_finish_dispatches_event_without_trailing_blank_line():
    parser = SSEParser()
    assert parser.feed(b"data: a\n\ndata: b\n") == [Event(data="a")]
    assert parser.finish() == [Event(data="b")]


def test_finish_processes_final_line_without_terminator():
    parser = SSEParser()
    assert parser.feed(b"data: a\n\ndata: b") == [Event(data="a")]
    assert parser.finish() == [Event(data="b")]


def test_finish_joins_pending_data_lines():
    assert parse(b"data: a\ndata: b") == [Event(data="a\nb")]


def test_stream_ending_without_done_and_without_blank_line():
    stream = (
        b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
        b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}'
    )
    assert datas(stream) == [
        '{"choices":[{"delta":{"content":"Hel"}}]}',
        '{"choices":[{"delta":{"content":"lo"}}]}',
        '{"choices":[{"delta":{},"finish_reason":"stop"}]}',
    ]


def test_done_is_plain_data():
    assert datas(b"data: [DONE]\n\n") == ["[DONE]"]


def test_finish_with_nothing_pending():
    parser = SSEParser()
    assert parser.finish() == []
    parser.feed(b"data: a\n\n")
    assert parser.finish() == []


def test_finish_pending_line_without_data_dispatches_nothing():
    assert parse(b"event: x") == []
    assert parse(b": comment") == []


def test_finish_pending_id_line_applies_to_pending_event():
    assert parse(b"data: a\nid: 4") == [Event(data="a", id="4")]


def test_finish_after_trailing_cr_does_not_duplicate():
    assert parse(b"data: a\r\n\r") == [Event(data="a")]


def test_finish_resets_stream_state_but_keeps_id_and_retry():
    parser = SSEParser()
    parser.feed(b"id: 3\nretry: 9\nevent: e\ndata: a")
    assert parser.finish() == [Event(event="e", data="a", id="3", retry=9)]
    # A new stream (reconnection): BOM handled again, buffers empty, id/retry remembered.
    assert parser.feed(BOM + b"data: b\n\n") == [Event(data="b", id="3", retry=9)]


# -- size bound --------------------------------------------------------------------------

_PREFIX = len(b"data: ")


def test_default_bound_is_one_mib():
    ok = b"data: " + b"x" * (MiB - _PREFIX) + b"\n\n"
    assert parse(ok) == [Event(data="x" * (MiB - _PREFIX))]
    too_big = b"data: " + b"x" * (MiB - _PREFIX + 1) + b"\n\n"
    with pytest.raises(SSEError, match="^one server-sent event exceeded 1 MiB$"):
        parse(too_big)


@pytest.mark.parametrize("chunk_size", [1 << 16, 1000, 7])
def test_bound_is_identical_when_chunked(chunk_size):
    limit = 4096 if chunk_size == 7 else MiB
    ok = b"data: " + b"x" * (limit - _PREFIX) + b"\n\n"
    too_big = b"data: " + b"x" * (limit - _PREFIX + 1) + b"\n\n"

    def chunks(data: bytes) -> list[bytes]:
        return [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]

    assert len(parse(*chunks(ok), max_event_bytes=limit)) == 1
    with pytest.raises(SSEError):
        parse(*chunks(too_big), max_event_bytes=limit)


def test_bound_counts_line_buffer_plus_data_buffer():
    # First line buffers 1+1 data bytes ("a" + newline); the second line is 8 bytes.
    assert datas(b"data:a\ndata:bbb\n\n") == ["a\nbbb"]
    assert parse(b"data:a\ndata:bbb\n\n", max_event_bytes=10) == [Event(data="a\nbbb")]
    with pytest.raises(SSEError):
        parse(b"data:a\ndata:bbb\n\n", max_event_bytes=9)


def test_bound_is_per_event_not_per_stream():
    stream = b"".join(b"data: " + b"y" * 90 + b"\n\n" for _ in range(100))
    assert len(parse(stream, max_event_bytes=100)) == 100


def test_bound_trips_before_the_line_terminator_arrives():
    parser = SSEParser(max_event_bytes=100)
    parser.feed(b"data: " + b"z" * 94)  # exactly 100 bytes buffered: fine
    with pytest.raises(SSEError, match="exceeded 100 bytes"):
        parser.feed(b"z")


def test_bound_applies_to_long_comment_lines_too():
    with pytest.raises(SSEError):
        parse(b":" + b"c" * 200 + b"\n", max_event_bytes=100)


def test_bound_message_names_kib():
    with pytest.raises(SSEError, match="^one server-sent event exceeded 64 KiB$"):
        parse(b"data: " + b"x" * (1 << 16) + b"\n", max_event_bytes=1 << 16)


def test_parser_stays_failed_after_bound_error():
    parser = SSEParser(max_event_bytes=10)
    with pytest.raises(SSEError):
        parser.feed(b"data: 0123456789\n")
    with pytest.raises(SSEError):
        parser.feed(b"\n")
    with pytest.raises(SSEError):
        parser.finish()


@pytest.mark.parametrize("bad", [0, -1])
def test_rejects_non_positive_bound(bad):
    with pytest.raises(ValueError):
        SSEParser(max_event_bytes=bad)


def test_rejects_non_int_bound():
    with pytest.raises(TypeError):
        SSEParser(max_event_bytes=1.5)  # type: ignore[arg-type]


# -- every chunking gives the same events ------------------------------------------------

REALISTIC = (
    BOM
    + b": OPENROUTER PROCESSING\r\n"
    + b"retry: 2500\r\n"
    + b"id: 1\r\n"
    + 'data: {"delta":"café 🙂"}\r\n'.encode()
    + b"\r\n"
    + b"event: tool\r"
    + b"data: line one\r"
    + "data: line two 🙂\r".encode()
    + b"\r"
    + b":\n"
    + b"id\n"
    + b"data\n"
    + b"\n"
    + b"event: ignored-no-data\n\n"
    + b"data:no-space\r\ndata:  two-spaces\n\r\n"
    + b"id: 7\x00\n"
    + "data: é at end\r\n\r\n".encode()
    + b": trailing comment\r"
    + "data: last 🙂".encode()
)

REALISTIC_EVENTS = [
    Event(data='{"delta":"café 🙂"}', id="1", retry=2500),
    Event(event="tool", data="line one\nline two 🙂", id="1", retry=2500),
    Event(data="", id="", retry=2500),
    Event(data="no-space\n two-spaces", id="", retry=2500),
    Event(data="é at end", id="", retry=2500),
    Event(data="last 🙂", id="", retry=2500),
]


def test_realistic_stream_fed_whole():
    assert parse(REALISTIC) == REALISTIC_EVENTS


def test_realistic_stream_split_at_every_offset():
    for cut in range(len(REALISTIC) + 1):
        assert parse(REALISTIC[:cut], REALISTIC[cut:]) == REALISTIC_EVENTS, cut


def test_realistic_stream_fed_single_bytes():
    assert (
        parse(*[REALISTIC[i : i + 1] for i in range(len(REALISTIC))])
        == REALISTIC_EVENTS
    )


def test_realistic_stream_random_chunkings():
    rng = random.Random(7)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(REALISTIC)), rng.randint(1, 12)))
        bounds = [0, *cuts, len(REALISTIC)]
        chunks = [REALISTIC[a:b] for a, b in itertools.pairwise(bounds)]
        assert parse(*chunks) == REALISTIC_EVENTS, cuts


def test_realistic_stream_split_at_every_pair_of_offsets_near_crlf_and_bom():
    # Three-way splits around the spots where state crosses chunks (BOM, CR|LF, emoji).
    n = len(REALISTIC)
    hot = {0, 1, 2, 3, 4}
    for i in range(n - 1):
        if REALISTIC[i : i + 1] == b"\r" or REALISTIC[i] >= 0x80:
            hot.update({i, i + 1, i + 2})
    points = sorted(p for p in hot if 0 <= p <= n)
    for a in points:
        for b in points:
            if a <= b:
                got = parse(REALISTIC[:a], REALISTIC[a:b], REALISTIC[b:])
                assert got == REALISTIC_EVENTS, (a, b)


# -- efficiency --------------------------------------------------------------------------


def _openai_like_stream(n: int) -> bytes:
    frame = b'data: {"choices":[{"delta":{"content":"tok"}}]}\n\n'
    return frame * n + b"data: [DONE]\n\n"


def test_many_small_events_in_64k_chunks_is_fast():
    stream = _openai_like_stream(100_000)  # ~5 MB
    chunks = [stream[i : i + (1 << 16)] for i in range(0, len(stream), 1 << 16)]
    start = time.thread_time()
    events = parse(*chunks)
    elapsed = time.thread_time() - start
    assert len(events) == 100_001
    assert events[-1].data == "[DONE]"
    assert elapsed < 5.0, f"{elapsed:.2f}s: parsing must be linear in the input"


def test_long_line_trickled_in_small_chunks_is_not_quadratic():
    # 1 MiB line in 8-byte chunks: copying the buffer on every feed would move ~70 GB.
    line = b"data: " + b"x" * MiB + b"\n\n"
    chunks = [line[i : i + 8] for i in range(0, len(line), 8)]
    start = time.thread_time()
    events = parse(*chunks, max_event_bytes=2 * MiB)
    elapsed = time.thread_time() - start
    assert len(events) == 1 and len(events[0].data) == MiB
    assert elapsed < 5.0, f"{elapsed:.2f}s"


def test_cr_only_stream_in_64k_chunks():
    stream = _openai_like_stream(20_000).replace(b"\n", b"\r")
    chunks = [stream[i : i + (1 << 16)] for i in range(0, len(stream), 1 << 16)]
    assert len(parse(*chunks)) == 20_001


def test_event_is_frozen():
    with pytest.raises(AttributeError):
        Event().data = "x"  # type: ignore[misc]


# ---- the `error` field (llama.cpp's server, older builds) ---------------------------------


def test_error_field_is_dispatched_as_an_error_event():
    body = b'data: {"a":1}\n\nerror: {"code":500,"message":"boom"}\n\ndata: [DONE]\n\n'
    events = parse(body)
    assert [(e.event, e.data) for e in events] == [
        ("message", '{"a":1}'),
        ("error", '{"code":500,"message":"boom"}'),
        ("message", "[DONE]"),
    ]


def test_error_field_split_anywhere_and_without_its_blank_line_at_eof():
    body = b'error: {"message":"late"}'
    for cut in range(1, len(body)):
        events = parse(body[:cut], body[cut:])
        assert [(e.event, e.data) for e in events] == [("error", '{"message":"late"}')]


def test_error_field_counts_toward_the_event_bound():
    with pytest.raises(SSEError):
        parse(b"error: " + b"x" * 100 + b"\n" + b"error: " + b"y" * 100 + b"\n\n", max_event_bytes=150)


# -- edges (found by `make mutation`) -------------------------------------------------------


@pytest.mark.parametrize(("n", "text"), [
    (1, "1 bytes"), (1000, "1000 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1536 bytes"),
    (2048, "2 KiB"), (MiB - 1024, "1023 KiB"), (MiB, "1 MiB"), (3 * MiB // 2, "1536 KiB"), (2 * MiB, "2 MiB"),
])
def test_the_bound_is_named_as_a_person_would_read_it(n, text):
    from dashfloat.llm.sse import _human_size

    assert _human_size(n) == text


def test_a_bound_of_one_byte_is_allowed():
    assert parse(b":\n", max_event_bytes=1) == []


@pytest.mark.parametrize("chunk", ["data: x\n\n", 5, None])
def test_feed_takes_bytes_only(chunk):
    with pytest.raises(TypeError, match="^feed\\(\\) takes bytes"):
        SSEParser().feed(chunk)


def test_only_the_first_bom_of_a_stream_is_skipped():
    assert datas(b"data: a", BOM + b"b\n\n") == ["a\ufeffb"]


def test_error_lines_count_toward_the_bound_with_their_newline():
    # "error:abcd" buffers 4 + 1 bytes; the next line may then have 20 - 5 = 15 bytes
    assert [e.event for e in parse(b"error:abcd\nerror:" + b"x" * 9 + b"\n\n", max_event_bytes=20)] == ["error"]
    with pytest.raises(SSEError):
        parse(b"error:abcd\nerror:" + b"x" * 10 + b"\n\n", max_event_bytes=20)


def test_a_dispatched_event_gives_its_whole_budget_back():
    parser = SSEParser(max_event_bytes=10)
    assert parser.feed(b"data:a\n\n") == [Event(data="a")]
    assert parser.feed(b"data:abcde\n\n") == [Event(data="abcde")]   # exactly 10 bytes: fits
    with pytest.raises(SSEError):
        SSEParser(max_event_bytes=10).feed(b"data:a\n\ndata:abcdef\n")
