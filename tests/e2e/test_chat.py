"""End to end: a prompt, its streamed and rendered answer, cancelling, reasoning, a long
answer and scrolling back through it."""

from __future__ import annotations

import re
import threading

from tests.fakeserver import markdown_answer, sse_reply

PGUP, END = "\x1b[5~", "\x1b[F"


def chat_posts(server) -> list[dict]:
    return [r for r in server.requests if r["method"] == "POST"]


def test_first_frame_prompt_stream_render_and_usage(dash, server):
    server.push(
        sse_reply(
            ["# Big", " Title\n\n", "Some **bold", " words** and", " `code`", " here.\n"],
            usage={"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234},
        )
    )
    t = dash()
    status = t.status()
    assert " idle " in status and " test-model " in status, t.dump()
    assert t.status_row() == 22, t.dump()  # the status bar sits just above the one-row prompt
    assert t.lines[23].startswith("❯"), t.dump()

    t.type("hello model")
    t.wait_for(lambda t: "hello model" in "".join(t.prompt_lines()), what="typed prompt")
    t.send("\r")
    t.wait_text("here.")
    t.wait_for(lambda t: re.search(r"ctx 1,?234 tok", t.status()), what="ctx tokens in the status bar")
    t.wait_status("idle")

    transcript = "\n".join(t.transcript())
    assert "❯ hello model" in transcript
    assert "Big Title" in transcript and "#" not in transcript, transcript
    assert "Some bold words and code here." in transcript, transcript
    assert "**" not in transcript and "`" not in transcript, transcript
    assert "hello model" not in "".join(t.prompt_lines()), "the prompt is cleared after sending"

    posts = chat_posts(server)
    assert len(posts) == 1
    req = posts[0]
    assert req["path"] == "/v1/chat/completions"
    body = req["json"]
    assert body["stream"] is True
    assert body["stream_options"]["include_usage"] is True
    assert body["model"] == "test-model"
    assert body["messages"][-1] == {"role": "user", "content": "hello model"}
    assert "authorization" not in req["headers"], "no key is set: no Authorization header"


def _held_stream(server):
    """A stream that sends 'Partial answer text' and then waits (until the test ends)."""
    hold = threading.Event()
    server.push(sse_reply(["Partial ", "answer ", "text", " NEVERSHOWN", " tail"], waits={4: hold}))
    return hold


def test_cancel_with_esc_keeps_partial_text(dash, server):
    hold = _held_stream(server)
    t = dash()
    t.type("tell me a story\r")
    t.wait_text("Partial answer text")
    t.wait_status("streaming")
    t.send("\x1b")
    t.wait_text("[cancelled")
    t.wait_status("idle")
    hold.set()  # the rest of the old stream must never be shown
    assert "Partial answer text" in t.text
    assert "NEVERSHOWN" not in t.text

    # still usable: the next prompt gets its answer
    server.push(sse_reply(["Second ", "answer."]))
    t.type("next\r")
    t.wait_text("Second answer.")
    t.wait_status("idle")
    assert "NEVERSHOWN" not in t.text
    assert len(chat_posts(server)) == 2


def test_cancel_with_ctrl_c_keeps_partial_text_and_does_not_quit(dash, server):
    _held_stream(server)
    t = dash()
    t.type("tell me a story\r")
    t.wait_text("Partial answer text")
    t.wait_status("streaming")
    t.send("\x03")  # a key, not a signal: dashfloat frees Ctrl-C from the tty
    t.wait_text("[cancelled")
    t.wait_status("idle")
    assert "Partial answer text" in t.text
    assert "NEVERSHOWN" not in t.text
    assert not t.eof, "one Ctrl-C while streaming cancels; it must not quit"
    # the Ctrl-C that cancelled does not count towards the double Ctrl-C that quits
    t.send("\x03")
    t.wait_text("Ctrl-C again quits")
    assert not t.eof


def test_reasoning_collapsed_then_expanded_with_ctrl_t(dash, server):
    hold = threading.Event()
    # chunks: 0 role, 1-2 reasoning, 3 content...: hold before the content
    server.push(
        sse_reply(
            ["The answer", " is 42."],
            reasoning=["Let me think about SECRETSTEP one.\n", "Then SECRETSTEP two."],
            waits={3: hold},
        )
    )
    t = dash()
    t.type("what is it?\r")
    t.wait_for(lambda t: any("thinking" in line for line in t.transcript()), what="a 'thinking' line")
    assert "SECRETSTEP" not in t.text, "reasoning is collapsed by default"
    hold.set()
    t.wait_text("The answer is 42.")
    t.wait_status("idle")
    head = [line for line in t.transcript() if "thought" in line]
    assert head, t.dump()
    assert "SECRETSTEP" not in t.text

    t.send("\x14")  # Ctrl-T
    t.wait_text("SECRETSTEP two")
    assert "Let me think about SECRETSTEP one." in t.text
    assert "The answer is 42." in t.text

    t.send("\x14")
    t.wait_gone("SECRETSTEP")
    assert "The answer is 42." in t.text


def test_long_answer_arrives_whole_then_scrollback_and_end(dash, server):
    pieces = markdown_answer(2000)
    last_section = max(int(m) for m in re.findall(r'"section": (\d+)', "".join(pieces)))
    server.push(sse_reply(pieces))
    t = dash()
    t.type("explain the configuration\r")

    note = "a missing /v1 is not."
    # the last blocks of an answer that came at once are drawn a budget a frame (catch-up),
    # so idle may be on screen a few ms before they are: wait for both
    t.wait_for(lambda t: " idle " in t.status() and note in t.text and f'"section": {last_section}' in t.text,
               timeout=20, what="the end of the answer (the last section's JSON block), idle")
    assert not re.search(r"line \d+/\d+", t.status()), "following the end: no position indicator"

    t.send(PGUP)
    m = t.wait_for(lambda t: re.search(r"line (\d+)/(\d+)", t.status()), what="a 'line N/M' indicator")
    row, total = int(m.group(1)), int(m.group(2))
    assert 0 < row < total, t.status()
    assert total > 100, "2000 tokens of Markdown make well over 100 rows"
    t.wait_gone(note)

    t.send(END)
    t.wait_for(lambda t: not re.search(r"line \d+/\d+", t.status()) and note in t.text, what="End: back at the end, following")


def test_cancel_while_waiting_for_headers(dash, server):
    """Esc before the server has even answered (a model still loading)."""
    loading = threading.Event()
    reply = sse_reply(["Too ", "late."])
    reply.hold_headers = loading
    server.push(reply)
    t = dash()
    t.type("are you loading?\r")
    t.wait_status("waiting")
    server.wait_requests(1)
    t.send("\x1b")
    t.wait_text("[cancelled")
    t.wait_status("idle")
    loading.set()
    server.push(sse_reply(["Fresh ", "answer."]))
    t.type("again\r")
    t.wait_text("Fresh answer.")
    t.wait_status("idle")
    assert "Too late." not in t.text, "the cancelled request's answer is never shown"


def test_enter_while_streaming_does_not_send(dash, server):
    hold = _held_stream(server)
    t = dash()
    t.type("first\r")
    t.wait_text("Partial answer text")
    t.type("second\r")
    t.wait_for(lambda t: "a turn is running" in t.status(), what="a notice in the status bar")
    assert "second" in "".join(t.prompt_lines()), "the prompt keeps the unsent text"
    assert len(chat_posts(server)) == 1
    server.push(sse_reply(["Second ", "reply."]))
    hold.set()
    t.wait_text("NEVERSHOWN tail")
    t.wait_status("idle")
    t.send("\r")
    t.wait_text("Second reply.")
    assert len(chat_posts(server)) == 2
    assert chat_posts(server)[1]["json"]["messages"][-1]["content"] == "second"
