"""Names that are not UTF-8, and strings JSON cannot carry (issue 14 §3).

tools/names: the written form of a file name and the way back to its bytes (one text per
file, no two files with one text). wire: every string that becomes JSON for a request is
encodable, whatever bytes it came from.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from dashfloat import conversation, wire
from dashfloat.tools import names, results

ALL_HIGH = bytes(range(0x80, 0x100))
INVALID = [b"\x80", b"\xc0\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"\xff\xfe", b"\xf8\x88\x80\x80\x80", b"caf\xe9", b"\xef\xbb\xbf\xff"]


# -- names.written / names.to_bytes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"plain.txt", "plain.txt"),
        ("été".encode(), "été"),
        (b"caf\xe9.txt", "caf\\xe9.txt"),
        (b"\xff\xfe", "\\xff\\xfe"),
        (b"nl\nx", "nl\nx"),  # valid UTF-8: JSON carries the newline
        (b"a\\b", "a\\b"),  # a lone backslash is no escape: as it is
        (b"a\\xff", "a\\\\xff"),  # could be read as an escape: written with \\
        (b"a\\\\b", "a\\\\\\\\b"),
        (b"x\\y\xff", "x\\\\y\\xff"),
        (b"a\\b/caf\xe9", "a\\b/caf\\xe9"),  # per component
        (b"~", "~"),
    ],
)
def test_written_forms(raw, text):
    assert names.written(raw) == text
    assert names.to_bytes(text) == raw
    assert names.is_written(raw) is (text != raw.decode("utf-8", "replace"))
    text.encode("utf-8")


def test_every_single_byte_and_every_invalid_sequence_round_trips():
    for b in range(1, 256):
        if b == 0x2F:
            continue
        for raw in (bytes([b]), b"x" + bytes([b]) + b"y", bytes([b, b])):
            text = names.written(raw)
            text.encode("utf-8")
            assert names.to_bytes(text) == raw, raw
    for raw in INVALID + [ALL_HIGH]:
        text = names.written(raw)
        assert names.to_bytes(text) == raw and names.is_written(raw), raw


def test_random_names_round_trip_and_no_two_share_a_text():
    rng = random.Random(14)
    alphabet = b"ab\\x9f~." + ALL_HIGH[:8] + "é".encode()
    seen: dict[str, bytes] = {}
    for _ in range(5000):
        raw = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        text = names.written(raw)
        assert names.to_bytes(text) == raw, raw
        assert seen.setdefault(text, raw) == raw, (text, raw, seen[text])


def test_the_ascii_name_and_the_byte_name_are_different_files():
    """b"a\\xff" (a, then the byte 0xff) and the ASCII name a\\xff (a, backslash, x, f, f):
    each has its own text, and each text finds its own file."""
    byte_name, ascii_name = b"a\xff", b"a\\xff"
    assert names.written(byte_name) == "a\\xff"
    assert names.written(ascii_name) == "a\\\\xff"
    assert names.to_bytes("a\\xff") == byte_name
    assert names.to_bytes("a\\\\xff") == ascii_name


def test_a_text_that_is_no_written_form_is_taken_literally():
    # the bytes c3 a9 are valid UTF-8 (é): their written form is "é", so this is a literal name
    assert names.to_bytes("caf\\xc3\\xa9") == b"caf\\xc3\\xa9"
    assert names.canonical("caf\\xc3\\xa9") == "caf\\\\xc3\\\\xa9"
    assert names.to_bytes("a\\x41") == b"a\\x41"  # an ASCII byte is never escaped
    assert names.to_bytes("a\\XFF") == b"a\\XFF"  # nor written in capitals
    assert names.to_bytes("C:\\new") == b"C:\\new"


def test_the_models_surrogate_escapes_are_bytes_and_canonical():
    assert names.to_bytes("caf\udce9") == b"caf\xe9"
    assert names.canonical("caf\udce9") == "caf\\xe9"
    # surrogate escapes that spell valid UTF-8 are that valid name: a rule about é.txt holds
    assert names.canonical("\udcc3\udca9.txt") == "é.txt"
    assert names.to_bytes("x\ud800") is None and names.canonical("x\udc41") is None
    assert names.stray_surrogate("ok\udfff") == "\\udfff"


def test_the_note_explains_the_form():
    assert "\\xNN" in names.NOTE and "\\\\" in names.NOTE and "as written" in names.NOTE


# -- wire: what becomes JSON for a request ----------------------------------------------------


def _strings_that_json_cannot_carry() -> list[str]:
    out = [chr(c) for c in range(0xD800, 0xE000, 7)] + ["\udcff", "\ud800", "\udfff"]
    out += [raw.decode("utf-8", "surrogateescape") for raw in INVALID + [ALL_HIGH]]
    out += ["a\x00b", "\ud83d\ude00 (a pair written as two)", "\ud83d"]
    return out


@pytest.mark.parametrize("text", _strings_that_json_cannot_carry())
def test_dumps_is_always_valid_utf8_json(text):
    value = {"role": "tool", "content": text, text: [text, {"k": text}], "n": 1}
    out = wire.body(value)
    out.decode("utf-8")  # strict
    back = json.loads(out)
    assert back["n"] == 1
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(back, ensure_ascii=False))


def test_a_byte_kept_by_surrogateescape_becomes_its_written_form():
    assert wire.clean_text("caf\udce9") == "caf\\xe9"
    assert wire.clean_text("x\ud800y") == "x\ufffdy"
    assert wire.clean(["ok", 1, None, True]) == ["ok", 1, None, True]


def test_json_text_stays_json_when_cleaned():
    """A call's arguments and a tool message's content are JSON inside a string: a cleaned
    surrogate must not become an invalid escape in them."""
    raw_args = '{"path": "caf\udce9.txt", "n": 2}'
    body = json.loads(wire.body({"arguments": raw_args}))
    assert json.loads(body["arguments"]) == {"path": "caf\\xe9.txt", "n": 2}


def test_non_finite_numbers_are_not_written_as_invalid_json():
    out = wire.dumps({"a": math.nan, "b": [math.inf, -math.inf]})
    assert json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON")) == {
        "a": "NaN", "b": ["Infinity", "-Infinity"]}


def test_tool_results_and_assistant_messages_are_encodable():
    result = results.error("not_found", "no such file: caf\udce9 \ud800")
    content = results.encode(result)
    content.encode("utf-8")
    assert json.loads(content)["error"] == "no such file: caf\\xe9 \ufffd"
    msg = conversation.assistant_message("said \ud800", [
        {"id": "c\ud800", "name": "read_file", "args": {"path": "caf\udce9", "x": math.nan}}])
    args = msg["tool_calls"][0]["function"]["arguments"]
    args.encode("utf-8")
    assert json.loads(args) == {"path": "caf\\xe9", "x": "NaN"}


def test_the_common_case_is_one_dumps():
    value = {"messages": [{"role": "user", "content": "héllo " * 1000}]}
    assert wire.dumps(value) == json.dumps(value, ensure_ascii=False)
