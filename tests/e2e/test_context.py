"""End to end: the instructions entry at start, the system message on the wire, /compact and
/clear in the real program (issue 10, sections 1 and 2)."""

from __future__ import annotations

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import dashfloat_bin
from tests.fakeserver import sse_reply


def posts(server) -> list[dict]:
    return [r for r in server.requests if r["method"] == "POST"]


def test_instructions_entry_compact_and_clear(spawn, server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("Always answer in haiku.\n")
    config = tmp_path / "config" / "dashfloat"
    config.mkdir(parents=True)
    (config / "AGENTS.md").write_text("I prefer short answers.\n")

    def reply(req):
        body = req["json"]
        if "tools" not in body:  # the summariser
            return sse_reply(["## Goal\nsay hello\n## Decisions\nnone\n## Files touched\nnone\n"
                              "## Commands that worked or failed\nnone\n## Open problems\nnone\n"
                              "## Exact next steps\nnone"])
        return sse_reply(["Answer " + "words " * 150])

    server.responder = reply
    t = spawn([dashfloat_bin(), "--base-url", server.url, "--model", "test-model"], cwd=str(work))
    wait_ready(t)
    t.wait_flat("Instructions loaded: ")
    t.wait_flat("config/dashfloat/AGENTS.md (24 B), AGENTS.md (24 B).")
    def answered(t, i: int) -> bool:
        """Question i is in the transcript with an answer after it, and the turn is over.
        (Not "one more request and idle": the bar can still read idle from before the
        question while the request is already at the server, and the next question's
        Enter then came during the turn and was refused.)"""
        rows = t.lines[:-2]
        at = next((k for k, row in enumerate(rows) if row.startswith(f"❯ question {i}")), None)
        return (at is not None and any(row.startswith("● Answer") for row in rows[at + 1:])
                and " idle " in t.status() and len(posts(server)) == i + 1)

    for i in range(3):
        t.type(f"question {i}\r")
        t.wait_for(lambda t, i=i: answered(t, i), what=f"answer {i}")
    system = posts(server)[0]["json"]["messages"][0]
    assert system["role"] == "system"
    assert "I prefer short answers." in system["content"] and "Always answer in haiku." in system["content"]
    t.type("/compact\r")
    t.wait_flat("context compacted:")
    t.wait_status("idle")
    # the first question is pinned; its answer and the second turn are summarised, the third kept
    assert "tokens (summarised 3 earlier messages (1 prompt, 0 tool calls); dropped nothing)" in t.flat, t.dump()
    t.type("/clear\r")
    t.wait_flat("Started a fresh conversation")
    t.type("fresh start\r")
    t.wait_for(lambda t: len([p for p in posts(server) if "tools" in p["json"]]) == 4 and " idle " in t.status(),
               what="the first answer after /clear")
    last = posts(server)[-1]["json"]["messages"]
    assert [m["role"] for m in last] == ["system", "user"] and last[1]["content"] == "fresh start"
