"""A turn full of bytes that are not UTF-8 completes, and every request stays valid UTF-8 JSON
(issue 14 §3).

The real Agent against the scripted server: file names, file content, command output and the
model's own output (content, reasoning, call ids, tool-call arguments) carry every byte
0x80-0xff, invalid sequences, lone surrogates and NUL. Before the fix the second request could
not be encoded and the turn ended with "the stream crashed: UnicodeEncodeError".
"""

from __future__ import annotations

import json
import os
import re

from dashfloat import messages as M
from tests.fakeserver import Reply
from tests.test_agent_tools import answer, assert_pairing, rig  # noqa: F401  (the fixture)

HIGH = bytes(range(0x80, 0x100))
INVALID = b"\xc0\x80 \xc3 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 \xff\xfe"
SURROGATE = re.compile("[\ud800-\udfff]")


def raw_sse(deltas: list[dict], finish: str = "tool_calls") -> Reply:
    """An SSE stream whose JSON is written with ASCII escapes, so a lone surrogate goes on the
    wire as the escape a real server sends (\\ud800), not as unencodable text."""
    def event(obj) -> bytes:
        return b"data: " + json.dumps(obj).encode("ascii") + b"\n\n"

    def chunk(delta, finish_reason=None):
        return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    chunks = [event(chunk({"role": "assistant", "content": ""}))]
    chunks += [event(chunk(d)) for d in deltas]
    chunks += [event(chunk({}, finish)), b"data: [DONE]\n\n"]
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=chunks)


def tool_delta(index: int, call_id: str, name: str, arguments: str) -> dict:
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}


def check_bodies(rig) -> None:  # noqa: F811
    """Every recorded request is strict UTF-8, valid JSON, with no lone-surrogate escape."""
    posts = [r for r in rig.server.requests if r["method"] == "POST"]
    for r in posts:
        text = r["body"].decode("utf-8")  # strict
        value = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))
        # no lone surrogate written as an escape either (servers in Rust or Go refuse or mangle it)
        again = json.dumps(value, ensure_ascii=False)
        assert not SURROGATE.search(again), again[SURROGATE.search(again).start() - 40:][:80]
        assert_pairing(r["json"]["messages"])


def test_a_turn_with_undecodable_bytes_everywhere_completes(rig):  # noqa: F811
    base = os.fsencode(str(rig.root))
    files = {
        b"caf\xe9.txt": b"".join(b"byte %02x: %c, text around it\n" % (b, b) for b in HIGH) + INVALID,
        b"\xff\xfe": b"plain text in a file whose name is two bytes\n",
        b"nul.bin": b"a\0b" + HIGH,
        b"ok.txt": "d\u00e9j\u00e0 vu\n".encode(),
    }
    for raw, data in files.items():
        with open(os.path.join(base, raw), "wb") as fh:
            fh.write(data)
    os.mkdir(os.path.join(base, b"d\xff"))
    # the printf prints every byte 0x80-0xff, invalid sequences and a NUL
    printf = "printf '" + "".join(f"\\{b:03o}" for b in HIGH + INVALID + b"\0") + "'; ls"
    calls = [
        ("c1", "list_directory", '{}'),
        ("c2", "read_file", '{"path": "caf\\udce9.txt"}'),  # the model's own surrogate escape
        ("c3", "read_file", '{"path": "\\udcff\\udcfe"}'),
        ("c4", "read_file", '{"path": "nul.bin"}'),
        ("c5", "read_file", '{"path": "x\\ud800"}'),  # a lone surrogate that is no byte
        ("c6\ud800", "list_directory", '{"path": "d\\udcff"}'),  # even the call id
        ("c7", "edit_file", json.dumps({"path": "ok.txt", "search_block": "d\u00e9j\u00e0",
                                        "replace_block": "\udce9\ud800"})),
        ("c8", "execute_command", json.dumps({"command": printf, "cwd": "d\udcff"})),
        ("c9", "read_file", '{"path": "bad\\x41escape"}'),  # not JSON: an invalid escape
    ]
    deltas = [{"reasoning_content": "thinking \ud800 \udce9"},
              {"content": "I see caf\udce9 and \ud800 and \udfff."}]
    deltas += [tool_delta(i, cid, name, args) for i, (cid, name, args) in enumerate(calls)]
    rig.server.push(raw_sse(deltas), answer("All read."))
    rig.start()
    mark = rig.prompt("read everything")
    ref = rig.confirm(mark)[1]  # the command (the edit was refused before asking)
    rig.decide(ref, "approved")
    rig.wait_idle(mark)

    assert not [s for s in rig.system(mark) if "crashed" in s or "Error" in s], rig.system(mark)
    assert len(rig.bodies()) == 2, "the turn did not reach its second request"
    check_bodies(rig)
    msgs = rig.messages_of(2)
    got = {m["tool_call_id"]: json.loads(m["content"]) for m in msgs if m["role"] == "tool"}
    listing = got["c1"]
    assert {e["name"] for e in listing["entries"]} >= {"caf\\xe9.txt", "\\xff\\xfe", "d\\xff"}
    assert "names_escaped" in listing
    assert got["c2"]["ok"] and got["c2"]["path"] == "caf\\xe9.txt" and got["c2"]["encoding_errors"]
    assert got["c3"]["ok"] and got["c3"]["path"] == "\\xff\\xfe"
    assert got["c4"]["code"] == "binary"
    assert got["c5"]["code"] == "bad_arguments" and "\\ud800" in got["c5"]["error"]
    assert got["c6\ufffd"]["ok"] and got["c6\ufffd"]["path"] == "d\\xff"
    assert got["c7"]["code"] == "bad_arguments" and "surrogate" in got["c7"]["error"]
    assert got["c8"]["ok"] and "\ufffd" in got["c8"]["output"] and "\x00" in got["c8"]["output"]
    assert got["c9"]["code"] == "bad_arguments"
    assistant = [m for m in msgs if m["role"] == "assistant" and m.get("tool_calls")][0]
    assert assistant["content"] == "I see caf\\xe9 and \ufffd and \ufffd."
    args = {c["id"]: json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]}
    assert args["c2"] == {"path": "caf\\xe9.txt"}  # echoed in the form that finds the file
    assert args["c5"] == {"path": "x\ufffd"}
    # nothing was written by the refused edit
    with open(os.path.join(base, b"ok.txt"), "rb") as fh:
        assert fh.read() == files[b"ok.txt"]
    assert rig.out.wait_kind(M.PHASE, "idle", since=mark)
