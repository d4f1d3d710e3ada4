"""End to end: tool calls in a pty. Diff previews and `y` / `n` / Esc on them, typeahead that
never decides, a command's live output and its cancel, read-only tools without a question,
escape sequences shown escaped, and a path that escapes the root refused before asking.

dashfloat runs with `-C <project>` so every tool is confined to a fresh directory; the
scripted server answers each request with the next queued reply and records the requests,
so the tool messages the model would read are checked too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import uuid

import pytest

from tests.fakeserver import Reply, sse_chunks, sse_reply
from tests.procs import live_with_marker

ESC = "\x1b"
APPLY = "Apply? y approve"


# ---- helpers -----------------------------------------------------------------------------


def call(name: str, args: dict, call_id: str = "call_1", index: int = 0) -> dict:
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


def calls_reply(*calls: dict, text: list[str] = (), **kw):
    """One episode that asks for `calls` (each sent whole in its own chunk)."""
    return sse_reply(list(text), tool_calls=[[c] for c in calls], finish_reason="tool_calls", **kw)


def chat_posts(server) -> list[dict]:
    return [r for r in server.requests if r["method"] == "POST"]


def wait_posts(server, n: int, timeout: float = 10.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while len(chat_posts(server)) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(chat_posts(server))} chat request(s), wanted {n}")
        time.sleep(0.01)
    return chat_posts(server)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["json"]["messages"] if m.get("role") == "tool"]


def tool_results(request: dict) -> dict[str, dict]:
    """{tool_call_id: parsed result} of the tool messages in one recorded request."""
    return {m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(request)}


def check_pairing(request: dict) -> None:
    """Every assistant tool call is answered by exactly one tool message right after it, in
    call order, and no tool message is orphaned."""
    msgs = request["json"]["messages"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        assert m.get("role") != "tool", f"orphaned tool message at {i}: {m}"
        ids = [c["id"] for c in m.get("tool_calls") or []]
        i += 1
        answered = []
        while i < len(msgs) and msgs[i].get("role") == "tool":
            answered.append(msgs[i]["tool_call_id"])
            i += 1
        assert answered == ids, f"calls {ids} answered by {answered}"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def agent(dash, project):
    """agent(**kw) -> Term: dashfloat confined to `project`, past its first frame."""

    def _agent(**kw):
        return dash("-C", str(project), **kw)

    return _agent


def rows_with(t, text: str) -> list[str]:
    return [line for line in t.lines if text in line]


def wait_confirming(t) -> None:
    """Until a preview waits and a y or n would count: the question reads "Apply?" (it
    reads "Wait…" in the first half second and after typing, until a pause)."""
    t.wait_for(lambda t: APPLY in t.text and " confirming " in t.status(), what="a pending preview, confirming")


def close_whole_preview(t) -> None:
    """q, then until the question is back and would take a y or n. Not before the pager
    is off row 0: a frame can reach the terminal in more than one read, so the rows of
    the frame before it (the question, reading "Apply?") can still be on screen below the
    new title, and a y typed then comes right after the v and q, which is typing."""
    t.type("q")
    t.wait_for(lambda t: "q back " not in t.lines[0], what="back in the transcript")
    wait_confirming(t)


def prompt_row(t) -> str:
    return t.lines[-1]


# ---- 1. write_file: preview, y, result -----------------------------------------------------


def test_write_file_preview_then_y_applies_it(agent, server, project):
    content = "hello\nhello world\n"
    server.push(
        calls_reply(call("write_file", {"path": "notes/greeting.txt", "content": content}),
                    text=["I will write the file."]),
        sse_reply(["The file is written."]),
    )
    t = agent()
    t.type("write a greeting\r")
    wait_confirming(t)
    assert rows_with(t, "⚙ write_file notes/greeting.txt"), t.dump()
    assert rows_with(t, "+hello"), t.dump()
    assert any(line.strip() == "+hello world" for line in t.lines), t.dump()
    assert any(line.strip() == "+hello" for line in t.lines), t.dump()
    assert rows_with(t, "+++ b/notes/greeting.txt"), t.dump()
    assert rows_with(t, "Apply? y approve · n reject · Esc reject and stop the turn"), t.dump()
    assert not (project / "notes").exists(), "nothing is written before the approval"
    assert len(chat_posts(server)) == 1

    t.type("y")
    t.wait_text("The file is written.")
    t.wait_status("idle")
    assert (project / "notes" / "greeting.txt").read_bytes() == content.encode()
    assert any(line.strip() == "→ ok: created 18 B" for line in t.lines), t.dump()
    assert rows_with(t, "approved by you"), t.dump()
    assert APPLY not in t.text, "the question is gone once decided"

    posts = wait_posts(server, 2)
    assert len(posts) == 2
    results = tool_results(posts[1])
    assert list(results) == ["call_1"]
    assert tool_messages(posts[1])[0]["content"].startswith('{"ok":true'), tool_messages(posts[1])
    assert results["call_1"]["ok"] is True and results["call_1"]["created"] is True, results
    check_pairing(posts[1])
    assistant = [m for m in posts[1]["json"]["messages"] if m.get("role") == "assistant"]
    assert assistant[-1]["tool_calls"][0]["function"]["name"] == "write_file"


# ---- 2. edit_file: preview, n, the model hears it ----------------------------------------------


def test_edit_file_preview_then_n_rejects_and_the_turn_goes_on(agent, server, project):
    target = project / "app.py"
    original = b"x = 1\nold = 'value'\ny = 2\n"
    target.write_bytes(original)
    server.push(
        calls_reply(call("edit_file", {"path": "app.py", "search_block": "old = 'value'",
                                       "replace_block": "new = 'value'"}, call_id="call_edit")),
        sse_reply(["Understood, I left app.py alone."]),
    )
    t = agent()
    t.type("rename the variable\r")
    wait_confirming(t)
    assert rows_with(t, "⚙ edit_file app.py"), t.dump()
    assert any(line.strip() == "-old = 'value'" for line in t.lines), t.dump()
    assert any(line.strip() == "+new = 'value'" for line in t.lines), t.dump()

    t.type("n")
    t.wait_text("Understood, I left app.py alone.")
    t.wait_status("idle")
    assert target.read_bytes() == original, "a rejected edit changes nothing"
    assert rows_with(t, "→ rejected"), t.dump()
    assert rows_with(t, "rejected by you"), t.dump()
    assert "Turn stopped" not in t.text, "n rejects the call, not the turn"

    posts = wait_posts(server, 2)
    assert tool_results(posts[1]) == {"call_edit": {"ok": False, "rejected": True}}
    check_pairing(posts[1])


# ---- 3. Esc on a preview ends the turn ---------------------------------------------------------


def test_esc_on_a_preview_rejects_every_call_and_ends_the_turn(agent, server, project):
    target = project / "a.txt"
    target.write_bytes(b"keep me\n")
    server.push(
        calls_reply(
            call("write_file", {"path": "a.txt", "content": "overwritten\n"}, call_id="call_w", index=0),
            call("execute_command", {"command": "touch ran.txt"}, call_id="call_x", index=1),
        ),
        sse_reply(["Fine, what instead?"]),
    )
    t = agent()
    t.type("change a.txt\r")
    wait_confirming(t)
    assert rows_with(t, "-keep me") and rows_with(t, "+overwritten"), t.dump()

    t.send(ESC)
    t.wait_text("Turn stopped")
    t.wait_status("idle")
    assert target.read_bytes() == b"keep me\n"
    assert not (project / "ran.txt").exists()
    assert len(rows_with(t, "→ rejected")) == 2, t.dump()  # the second call is answered too
    assert APPLY not in t.text
    assert len(chat_posts(server)) == 1, "Esc ends the turn: no request follows"

    # the next prompt works, and its request carries both rejections, paired
    t.type("do something else\r")
    t.wait_text("Fine, what instead?")
    t.wait_status("idle")
    posts = wait_posts(server, 2)
    assert len(posts) == 2
    msgs = posts[1]["json"]["messages"]
    tools = tool_messages(posts[1])
    assert [m["tool_call_id"] for m in tools] == ["call_w", "call_x"]
    assert all(json.loads(m["content"]) == {"ok": False, "rejected": True} for m in tools), tools
    check_pairing(posts[1])
    assert msgs[-1] == {"role": "user", "content": "do something else"}


# ---- 4. typeahead never decides --------------------------------------------------------------


def test_keys_typed_before_the_preview_never_decide_it(agent, server, project):
    hold = threading.Event()
    server.push(
        calls_reply(call("write_file", {"path": "t.txt", "content": "typed ahead\n"}), hold=hold),
        sse_reply(["Done."]),
    )
    t = agent()
    t.type("write t.txt\r")
    t.wait_for(lambda t: len(chat_posts(server)) == 1 and " waiting " in t.status(), what="the held request")
    t.type("y")
    t.type("n")
    t.type("y")
    # the keys were read (they went to the prompt editor) before the reply was released
    t.wait_for(lambda t: "yny" in prompt_row(t), what="typeahead in the prompt")
    hold.set()
    wait_confirming(t)
    # a key that is not a decision is answered with a hint; keys are handled in order, so
    # once the hint shows every earlier key has been handled too
    t.type("x")
    t.wait_for(lambda t: "y approves" in t.status(), what="the confirmation hint")
    spins = {t.status()}
    t.wait_for(lambda t: spins.add(t.status()) or len(spins) >= 3, what="the spinner stepping while confirming")
    assert " confirming " in t.status(), t.dump()
    wait_confirming(t)  # after the x, keys count again once typing paused
    assert not (project / "t.txt").exists(), "a key typed before the preview approved it"
    assert "→" not in t.text, t.dump()
    assert len(chat_posts(server)) == 1

    t.type("y")  # typed with the preview on screen: this one decides
    t.wait_text("Done.")
    t.wait_status("idle")
    assert (project / "t.txt").read_bytes() == b"typed ahead\n"
    assert rows_with(t, "→ ok"), t.dump()
    assert "yny" in prompt_row(t), "the prompt keeps its text through the confirmation"


# ---- 5. execute_command: exact command, live output, result -----------------------------------


def test_execute_command_shows_command_live_output_and_exit(agent, server, project):
    command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"
    server.push(
        calls_reply(call("execute_command", {"command": command})),
        sse_reply(["The command finished."]),
    )
    t = agent()
    t.type("run it\r")
    wait_confirming(t)
    assert rows_with(t, "⚙ execute_command echo first;"), t.dump()
    assert any(line.strip() == command for line in t.lines), t.dump()
    assert any(line.strip() == "cwd: ." for line in t.lines), t.dump()

    t.type("y")
    # "first" alone on a row: the live output (the command itself is on other rows)
    t.wait_for(lambda t: " running " in t.status() and any(line.strip() == "first" for line in t.lines),
               what="live output while running")
    assert not any(line.strip() == "second" for line in t.lines)
    assert "→" not in t.text, "no outcome while the command runs"
    (project / "go").touch()
    t.wait_text("→ ok: exit 0")
    t.wait_text("The command finished.")
    t.wait_status("idle")
    lines = [line.strip() for line in t.lines]
    ok_row = lines.index("→ ok: exit 0")
    assert lines[ok_row + 1 : ok_row + 3] == ["first", "second"], t.dump()

    posts = wait_posts(server, 2)
    result = tool_results(posts[1])["call_1"]
    assert result["ok"] is True and result["output"] == "first\nsecond\n", result
    check_pairing(posts[1])


# ---- 6. Esc during a running command -----------------------------------------------------------


def test_esc_during_a_running_command_cancels_it_and_kills_the_group(agent, server, project):
    # the marker is in sleep's own argument too, in case the shell execs it directly
    n = uuid.uuid4().int % 10**6
    marker = f"30.{n:06d}"
    command = f"sleep {marker} & sleep {marker} # dfmark{n}"
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["NEVER SENT"]))
    t = agent()
    t.type("sleep a while\r")
    wait_confirming(t)
    t.type("y")
    t.wait_status("running")
    deadline = time.monotonic() + 5
    while len(live_with_marker(marker)) < 2:  # both sleeps started
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)

    t.send(ESC)
    t.wait_text("→ cancelled")
    t.wait_status("idle")
    assert "Turn stopped" in t.text, t.dump()
    deadline = time.monotonic() + 5
    while (left := live_with_marker(marker)):
        assert time.monotonic() < deadline, f"processes of the cancelled command remain: {left}"
        time.sleep(0.02)
    assert len(chat_posts(server)) == 1, "a cancel ends the turn"
    assert "NEVER SENT" not in t.text

    t.type("why did it stop?\r")
    t.wait_text("NEVER SENT")
    t.wait_status("idle")
    posts = wait_posts(server, 2)
    result = tool_results(posts[1])["call_1"]
    assert result["ok"] is False and result["cancelled"] is True, result
    check_pairing(posts[1])


# ---- 7. read-only tools ask nothing --------------------------------------------------------------


def test_read_file_and_list_directory_run_without_confirmation(agent, server, project):
    (project / "a.txt").write_text("alpha line\n**beta** line\n# gamma line\n")
    (project / "src").mkdir()
    server.push(
        calls_reply(call("read_file", {"path": "a.txt"}, call_id="call_r", index=0),
                    call("list_directory", {}, call_id="call_l", index=1)),
        sse_reply(["I read it."]),
    )
    t = agent()
    t.type("look around\r")
    t.wait_text("I read it.")
    t.wait_status("idle")
    lines = [line.strip() for line in t.lines]
    assert "⚙ read_file a.txt" in lines, t.dump()
    read_ok = lines.index("→ ok: 3 lines")
    # verbatim, not Markdown
    assert lines[read_ok + 1 : read_ok + 4] == ["alpha line", "**beta** line", "# gamma line"], t.dump()
    # dim: a grey, not bold
    y = read_ok + 1
    cell = t.screen.buffer[y][len(t.lines[y]) - len(lines[y])]
    assert not cell.bold and len(cell.fg) == 6 and cell.fg[0:2] == cell.fg[2:4] == cell.fg[4:6], (cell, t.dump())
    assert "⚙ list_directory ." in lines, t.dump()
    list_ok = lines.index("→ ok: 2 entries")
    assert lines[list_ok + 1 : list_ok + 3] == ["a.txt", "src/"], t.dump()
    assert b"Apply?" not in t.raw, "a read-only tool asked for a confirmation"
    assert b"confirming" not in t.raw

    posts = wait_posts(server, 2)
    results = tool_results(posts[1])
    assert list(results) == ["call_r", "call_l"]
    assert results["call_r"]["ok"] is True and "**beta** line" in results["call_r"]["content"]
    assert results["call_l"]["ok"] is True
    check_pairing(posts[1])


# ---- 8. escape sequences are shown, never interpreted ----------------------------------------------


def test_escape_sequences_in_output_names_previews_and_model_text_are_shown_escaped(agent, server, project):
    command = "printf 'x\\033[31mred\\n'"
    evil = "evil\x1b[2Jname"
    try:
        (project / evil).write_text("boo\n")
    except OSError:  # a filesystem that refuses the name: the other checks still run
        evil = None
    server.push(
        calls_reply(
            call("execute_command", {"command": command}, call_id="c_x", index=0),
            call("list_directory", {}, call_id="c_l", index=1),
            call("write_file", {"path": "bidi.txt", "content": "a\u202eb\u200bc\n"}, call_id="c_w", index=2),
            text=["Colour \x1b[1;32mgreen here."],
        ),
        sse_reply(["Output was \x1b]0;pwned\x07 shown."]),
    )
    t = agent(rows=30)  # the whole story stays on screen
    t.type("print colour\r")
    wait_confirming(t)
    assert rows_with(t, "printf 'x\\033[31mred\\n'"), t.dump()  # the exact command, as typed
    t.type("y")
    t.wait_for(lambda t: "→ ok: exit 0" in t.text and APPLY in t.text, what="the second preview")
    assert any(line.strip() == "x\\e[31mred" for line in t.lines), t.dump()
    if evil is not None:
        assert any(line.strip() == "evil\\e[2Jname" for line in t.lines), t.dump()
    assert any(line.strip() == "+a\\u202eb\\u200bc" for line in t.lines), t.dump()
    t.type("y")
    t.wait_flat("shown.")
    t.wait_status("idle")
    assert "\\e[1;32mgreen" in t.text, t.dump()
    assert "\\e]0;pwned\\a" in t.text, t.dump()
    assert (project / "bidi.txt").read_text() == "a\u202eb\u200bc\n", "shown escaped, written verbatim"
    for raw in (b"\x1b[31mred", b"\x1b[1;32mgreen", b"\x1b]0;pwned", b"\x1b[2Jname",
                "\u202e".encode(), "\u200b".encode()):
        assert raw not in t.raw, f"{raw!r} reached the terminal raw"
    assert "pwned" not in (t.screen.title or "")


# ---- 8b. names that are not UTF-8: the listing's name reads the file (issue 14 §3) -------------------


def test_a_name_from_the_listing_reads_that_file(agent, server, project):
    """list_directory, then read_file with the very names the listing gave (taken from the
    tool message the model received), then with the model's own surrogate escape. Before the
    fix the first read said "no such file", and the last killed the turn with "the stream
    crashed: UnicodeEncodeError"."""
    base = os.fsencode(str(project))
    for raw, text in ((b"caf\xe9.txt", b"bonjour latin-1\n"), (b"nl\nname", b"line in nl name\n")):
        with open(os.path.join(base, raw), "wb") as fh:
            fh.write(text)
    second = Reply(headers={"Content-Type": "text/event-stream"}, chunks=[], hold_headers=threading.Event())
    server.push(calls_reply(call("list_directory", {}, call_id="c_l")), second, sse_reply(["Read them all."]))
    t = agent(rows=30)
    t.type("read the odd files\r")
    posts = wait_posts(server, 2)
    listing = tool_results(posts[1])["c_l"]
    by_type = {("nl" in e["name"]): e["name"] for e in listing["entries"]}
    latin, newline = by_type[False], by_type[True]
    assert latin == "caf\\xe9.txt", listing
    second.chunks[:] = sse_chunks([], tool_calls=[
        [call("read_file", {"path": latin}, call_id="c_r1", index=0)],
        [call("read_file", {"path": newline}, call_id="c_r2", index=1)],
        [{"index": 2, "id": "c_r3", "type": "function",
          "function": {"name": "read_file", "arguments": '{"path": "caf\\udce9.txt"}'}}],
    ], finish_reason="tool_calls")
    # and the model's own text with lone surrogates (JSON escapes, as a server sends them)
    second.chunks.insert(1, b'data: {"choices":[{"index":0,"delta":{"content":'
                            b'"odd \\ud800 and \\udce9 text"}}]}\n\n')
    second.hold_headers.set()
    t.wait_text("Read them all.")
    t.wait_status("idle")
    lines = [line.strip() for line in t.lines]
    assert "⚙ list_directory ." in lines and "caf\\xe9.txt" in lines and "nl\\nname" in lines, t.dump()
    assert lines.count("→ ok: 1 lines") == 3, t.dump()
    assert lines.count("bonjour latin-1") == 2 and "line in nl name" in lines, t.dump()
    assert "crashed" not in t.text and "no such file" not in t.text, t.dump()
    assert "odd \\ud800 and \\xe9 text" in t.text, t.dump()  # shown escaped

    posts = wait_posts(server, 3)
    reads = tool_results(posts[2])
    assert [reads[c]["path"] for c in ("c_r1", "c_r2", "c_r3")] == [latin, newline, latin], reads
    assert "\\xNN" in listing["names_escaped"] and "\\xNN" in reads["c_r1"]["names_escaped"]
    posts[2]["body"].decode("utf-8")  # strict: the request was encodable
    check_pairing(posts[2])


# ---- 9. a path that escapes the root ---------------------------------------------------------------


def test_write_outside_the_root_is_refused_without_asking(agent, server, project, tmp_path):
    server.push(
        calls_reply(call("write_file", {"path": "../outside.txt", "content": "escaped\n"})),
        sse_reply(["Sorry about that."]),
    )
    t = agent()
    t.type("write outside\r")
    t.wait_text("Sorry about that.")
    t.wait_status("idle")
    t.wait_flat("→ error: path escapes the working directory")
    assert b"Apply?" not in t.raw, "a refused call must not ask"
    assert not (tmp_path / "outside.txt").exists()
    assert os.listdir(project) == []

    posts = wait_posts(server, 2)
    result = tool_results(posts[1])["call_1"]
    assert result["ok"] is False and result["code"] == "path_escape", result
    check_pairing(posts[1])


# ---- more: each mutation asks, bounded output, non-zero exit, SIGHUP -----------------------------


def test_an_approval_is_for_one_call_the_next_asks_again(agent, server, project):
    server.push(
        calls_reply(call("write_file", {"path": "one.txt", "content": "1\n"}, call_id="c1", index=0),
                    call("write_file", {"path": "two.txt", "content": "2\n"}, call_id="c2", index=1)),
        sse_reply(["One of two."]),
    )
    t = agent()
    t.type("write two files\r")
    wait_confirming(t)
    t.type("y")
    t.wait_for(lambda t: "→ ok" in t.text and APPLY in t.text, what="the second preview")
    t.type("x")  # a barrier: once its hint shows, nothing earlier is still in flight
    t.wait_for(lambda t: "y approves" in t.status(), what="the confirmation hint")
    assert " confirming " in t.status(), t.dump()
    assert (project / "one.txt").read_bytes() == b"1\n"
    assert not (project / "two.txt").exists(), "the first y approved the second call too"
    wait_confirming(t)  # keys count again after a pause
    t.type("n")
    t.wait_text("One of two.")
    t.wait_status("idle")
    assert not (project / "two.txt").exists()
    posts = wait_posts(server, 2)
    results = tool_results(posts[1])
    assert list(results) == ["c1", "c2"]
    assert results["c1"]["ok"] is True and results["c2"] == {"ok": False, "rejected": True}, results
    check_pairing(posts[1])


def test_live_output_and_the_result_excerpt_are_bounded(agent, server, project):
    command = "seq 1 100; while [ ! -e go ]; do sleep 0.05; done"
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["Counted."]))
    t = agent()
    t.type("count\r")
    wait_confirming(t)
    t.type("y")
    t.wait_for(lambda t: " running " in t.status() and any(line.strip() == "100" for line in t.lines),
               what="the live tail")
    live = [line.strip() for line in t.lines if line.strip().isdigit()]
    assert live == [str(i) for i in range(93, 101)], f"live output is the last 8 lines: {live}\n{t.dump()}"
    (project / "go").touch()
    t.wait_text("Counted.")
    t.wait_status("idle")
    lines = [line.strip() for line in t.lines]
    assert "… 71 more lines" in lines, t.dump()  # 29 lines of 100 shown, then the marker
    assert lines[lines.index("… 71 more lines") - 1] == "29", t.dump()
    posts = wait_posts(server, 2)
    result = tool_results(posts[1])["call_1"]
    assert result["output"] == "".join(f"{i}\n" for i in range(1, 101)), "the model gets all of it"


def test_a_failing_command_shows_its_status_and_output(agent, server, project):
    server.push(calls_reply(call("execute_command", {"command": "echo oops; exit 3"})), sse_reply(["It failed."]))
    t = agent()
    t.type("fail\r")
    wait_confirming(t)
    t.type("y")
    t.wait_text("It failed.")
    t.wait_status("idle")
    lines = [line.strip() for line in t.lines]
    row = lines.index("→ error: exited with status 3")
    assert lines[row + 1] == "oops", t.dump()
    result = tool_results(wait_posts(server, 2)[1])["call_1"]
    assert result["ok"] is False and result["exit_code"] == 3 and result["code"] == "exit_status", result


def test_sighup_while_a_command_runs_leaves_no_process(agent, server, project):
    n = uuid.uuid4().int % 10**6
    marker = f"31.{n:06d}"
    server.push(calls_reply(call("execute_command", {"command": f"sleep {marker} & sleep {marker}"})))
    t = agent()
    t.type("hang\r")
    wait_confirming(t)
    t.type("y")
    t.wait_status("running")
    deadline = time.monotonic() + 5
    while len(live_with_marker(marker)) < 2:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    t.child.kill(signal.SIGHUP)
    t.wait_exit()
    deadline = time.monotonic() + 5
    while (left := live_with_marker(marker)):
        assert time.monotonic() < deadline, f"processes of the command outlived the app: {left}"
        time.sleep(0.02)


# ---- scrolling and the preview -----------------------------------------------------------------

PGUP, PGDN, HOME, END = "\x1b[5~", "\x1b[6~", "\x1b[H", "\x1b[F"


def test_a_long_preview_can_be_scrolled_before_deciding(agent, server, project):
    target = project / "big.txt"
    target.write_text("".join(f"old {i}\n" for i in range(80)))
    server.push(
        calls_reply(call("write_file", {"path": "big.txt", "content": "".join(f"new {i}\n" for i in range(80))})),
        sse_reply(["Rewritten."]),
    )
    t = agent()
    t.type("rewrite big.txt\r")
    wait_confirming(t)
    assert rows_with(t, "more diff lines (80 added, 80 removed in all)"), t.dump()  # capped at 50
    t.send(HOME)
    # the frame may come in more than one read: wait for all of it, not for its first rows
    t.wait_for(lambda t: "--- a/big.txt" in t.text and "-old 0" in t.text and APPLY not in t.text,
               what="the preview's top on screen, the Apply line scrolled away")
    assert " confirming " in t.status(), t.dump()
    assert target.read_text().startswith("old 0\n"), "scrolling decides nothing"
    t.type("y")  # the preview was on screen: deciding while scrolled back is allowed
    t.wait_for(lambda t: " idle " in t.status(), what="idle")
    assert target.read_text() == "".join(f"new {i}\n" for i in range(80))
    posts = wait_posts(server, 2)
    assert tool_results(posts[1])["call_1"]["ok"] is True


def test_a_preview_arriving_while_scrolled_back_is_brought_on_screen(agent, server, project):
    hold = threading.Event()
    text = [f"Paragraph {i} of the plan.\n\n" for i in range(40)]
    # chunks: 0 role, 1..40 content, 41 the tool call: hold before the call
    server.push(
        calls_reply(call("write_file", {"path": "plan.txt", "content": "planned\n"}), text=text,
                    waits={41: hold}),
        sse_reply(["Planned."]),
    )
    t = agent()
    t.type("plan\r")
    t.wait_text("Paragraph 39 of the plan.")
    t.send(PGUP)
    t.wait_for(lambda t: "line " in t.status() and "Paragraph 39" not in t.text, what="scrolled back")
    hold.set()
    wait_confirming(t)  # the Apply line is on screen although the user had scrolled back
    assert rows_with(t, "+planned"), t.dump()
    t.type("y")
    t.wait_text("Planned.")
    t.wait_status("idle")
    assert (project / "plan.txt").read_text() == "planned\n"


def test_a_tool_name_from_the_model_is_shown_escaped_in_its_row(agent, server, project):
    """The tool name is model text too: its control and bidi characters must be shown
    escaped in the ⚙ row (not dropped, not sent raw), with the args summary intact."""
    server.push(
        calls_reply(call("evil\x1b]0;pwned\x07\x1b[31mRED", {"path": "a"}, call_id="c1", index=0),
                    call("read_file\u202e", {"path": "a.txt"}, call_id="c2", index=1)),
        sse_reply(["Those tools do not exist."]),
    )
    t = agent()
    t.type("use odd tools\r")
    t.wait_text("Those tools do not exist.")
    t.wait_status("idle")
    t.wait_flat('→ error: unknown tool "read_file\\u202e"')
    assert "\u202e".encode() not in t.raw, "a bidi override from the model reached the terminal raw"
    assert b"\x1b]0;pwned" not in t.raw and b"\x1b[31mRED" not in t.raw
    rows = [line.strip() for line in t.lines if line.startswith("⚙")]
    assert rows == ['⚙ evil\\e]0;pwned\\a\\e[31mRED {"path": "a"}',
                    '⚙ read_file\\u202e {"path": "a.txt"}'], t.dump()
    results = tool_results(wait_posts(server, 2)[1])
    assert results["c1"]["code"] == results["c2"]["code"] == "unknown_tool"


def test_keys_typed_while_a_command_runs_never_decide_the_next_preview(agent, server, project):
    server.push(
        calls_reply(call("execute_command", {"command": "while [ ! -e go ]; do sleep 0.05; done; echo ran"},
                         call_id="c_x", index=0),
                    call("write_file", {"path": "next.txt", "content": "next\n"}, call_id="c_w", index=1)),
        sse_reply(["NEVER SENT"]),
    )
    t = agent()
    t.type("run then write\r")
    wait_confirming(t)
    t.type("y")
    t.wait_status("running")
    t.type("y")  # typed while the command runs, before the write's preview exists
    t.wait_for(lambda t: prompt_row(t).endswith("y"), what="the typed key in the prompt")
    (project / "go").touch()
    t.wait_for(lambda t: "→ ok: exit 0" in t.text and APPLY in t.text, what="the write's preview")
    t.type("x")
    t.wait_for(lambda t: "y approves" in t.status(), what="the confirmation hint")
    assert " confirming " in t.status(), t.dump()
    assert not (project / "next.txt").exists(), "a key typed while the command ran approved the write"

    t.send("\x03")  # Ctrl-C on a preview: like Esc, reject and stop the turn (and never quit)
    t.wait_text("Turn stopped")
    t.wait_status("idle")
    assert not t.eof
    assert not (project / "next.txt").exists()
    assert rows_with(t, "→ rejected"), t.dump()
    assert len(chat_posts(server)) == 1


def test_resize_and_help_during_a_preview_then_a_file_changed_since_the_preview(agent, server, project):
    target = project / "conf.ini"
    target.write_text("mode = old\n")
    server.push(
        calls_reply(call("edit_file", {"path": "conf.ini", "search_block": "mode = old",
                                       "replace_block": "mode = new"})),
        sse_reply(["Noted."]),
    )
    t = agent()
    t.type("switch the mode\r")
    wait_confirming(t)
    t.resize(30, 100)
    t.wait_for(lambda t: t.lines[-2].rstrip().endswith("Esc stop") and APPLY in t.text
               and rows_with(t, "+mode = new"), what="the preview redrawn at 100x30")
    t.send("\x1bOP")  # F1
    t.wait_text("DashFloat keys")
    t.send(ESC)  # closes the help; it must not stop the turn
    t.wait_gone("DashFloat keys")
    assert " confirming " in t.status() and APPLY in t.text, t.dump()
    assert "Turn stopped" not in t.text

    target.write_text("mode = edited by hand\n")  # after the preview, before the decision
    t.type("y")
    t.wait_text("Noted.")
    t.wait_status("idle")
    t.wait_flat("→ error: conf.ini changed since the preview")
    assert target.read_text() == "mode = edited by hand\n", "an approval never overwrites a changed file"
    result = tool_results(wait_posts(server, 2)[1])["call_1"]
    assert result["ok"] is False and result["code"] == "changed_since_preview", result


def test_a_long_line_of_live_output_is_bounded_too(agent, server, project):
    """Live output is bounded by lines (8); one 20 KB line (or a `\\r` progress bar, which
    never prints a newline) must be bounded as well, like the result excerpt (a line clipped
    at 500 chars, about 7 rows at 80 columns), not wrapped over hundreds of rows."""
    command = "head -c 20000 /dev/zero | tr '\\0' a; echo; echo END; while [ ! -e go ]; do sleep 0.05; done"
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["Long."]))
    t = agent()
    t.type("long line\r")
    wait_confirming(t)
    t.type("y")
    t.wait_for(lambda t: " running " in t.status() and any(line.strip() == "END" for line in t.lines),
               what="the live output's last line")
    live_rows = _rows_of(t, "a")
    tool_row_shown = bool(rows_with(t, "⚙ execute_command"))
    (project / "go").touch()
    t.wait_text("Long.")
    t.wait_status("idle")
    assert _rows_of(t, "a") <= 8, t.dump()  # the excerpt: clipped at 500 chars
    assert live_rows <= 8 and tool_row_shown, (
        f"while running, one output line filled {live_rows}+ screen rows and pushed the call's row "
        f"off the screen")


def _rows_of(t, ch: str) -> int:
    """How many screen rows hold nothing but `ch` (after the indent)."""
    return sum(1 for line in t.lines if line.strip() and set(line.strip()) == {ch})


# ---- deliberate keys: typing a sentence never answers a question --------------------------


def no_session_rules(t) -> None:
    """/permissions lists the session's rules: there must be none."""
    t.type("/permissions\r")
    t.wait_flat("No session rules yet")


@pytest.mark.parametrize("how", ["one read", "key by key"])
def test_typing_a_sentence_on_a_preview_decides_nothing(agent, server, project, how):
    """The defect: "can you stop" typed while a write waited approved it (the a of "can")
    and added a session rule; the rest went into the prompt. Typed in one go (one read) or
    key by key at a brisk typist's pace, no key of it decides and none lands in the prompt;
    a y after a pause then approves, once."""
    server.push(
        calls_reply(call("write_file", {"path": "w.txt", "content": "written\n"})),
        sse_reply(["Written."]),
    )
    t = agent()
    t.type("write w.txt\r")
    wait_confirming(t)
    if how == "one read":
        t.type("can you stop")
    else:
        for ch in "can you stop":
            t.type(ch)
            time.sleep(0.08)  # the typist's pace (~12 keys/s), not a wait for the app
    # the keys were handled once the question shows them as unused (or, with the defect,
    # once one of them approved the write)
    t.wait_for(lambda t: (project / "w.txt").exists() or "typed here, not used: can you stop" in t.flat,
               what="the sentence handled")
    assert not (project / "w.txt").exists(), "a key of the sentence approved the write"
    assert " confirming " in t.status() and len(chat_posts(server)) == 1, t.dump()
    assert "→" not in t.text and "approved by you" not in t.text, t.dump()
    assert "can" not in prompt_row(t), "typed keys landed in the prompt"

    wait_confirming(t)  # after a pause the question reads "Apply?" again
    t.type("y")
    t.wait_text("Written.")
    t.wait_status("idle")
    assert (project / "w.txt").read_text() == "written\n"
    assert rows_with(t, "approved by you"), t.dump()
    assert "allowed for the rest of the session" not in t.text
    no_session_rules(t)


def test_a_terminal_reply_on_a_preview_decides_nothing(agent, server, project):
    """Answers to query sequences (device attributes, a colour report, a cursor position,
    focus events) arrive as bytes on the input while a question waits: none decides."""
    server.push(
        calls_reply(call("write_file", {"path": "r.txt", "content": "r\n"})),
        sse_reply(["Done."]),
    )
    t = agent()
    t.type("write r.txt\r")
    wait_confirming(t)
    for reply in ("\x1b[?1;2c", "\x1b]11;rgb:ffff/ffff/ffff\x1b\\", "\x1b[12;5R", "\x1b[I", "\x1b[O",
                  "\x1b]11;rgb:0000/0000/0000\x07y", "yy", "ny"):
        t.send(reply)
    t.type("x")  # a barrier: once its hint shows, every reply before it has been read
    t.wait_for(lambda t: "y approves" in t.status() or "typing" in t.status(), what="the hint")
    assert not (project / "r.txt").exists(), "a terminal reply decided the question"
    assert " confirming " in t.status() and "Turn stopped" not in t.text, t.dump()
    wait_confirming(t)
    t.type("n")
    t.wait_text("Done.")
    assert rows_with(t, "→ rejected"), t.dump()


def test_always_takes_a_second_a_after_a_pause(agent, server, project):
    server.push(
        calls_reply(call("write_file", {"path": "aa.txt", "content": "aa\n"})),
        sse_reply(["Done."]),
    )
    t = agent()
    t.type("write aa.txt\r")
    wait_confirming(t)
    t.type("aa")  # typed at once: typing, not the deliberate second a
    t.wait_flat("typed here, not used: aa")
    assert not (project / "aa.txt").exists()
    wait_confirming(t)
    t.type("a")
    t.wait_flat("▸ Apply? a again allows write_file(aa.txt) for the session")
    assert not (project / "aa.txt").exists()
    t.type("a")
    t.wait_text("Done.")
    t.wait_status("idle")
    assert (project / "aa.txt").read_text() == "aa\n"
    t.type("/permissions\r")
    t.wait_flat("1. write_file(aa.txt)")


# ---- long previews: totals, the whole view, honest long lines and blank runs -----------------


def test_the_whole_preview_pages_through_a_500_line_write(agent, server, project):
    content = "".join(f"line {i}\n" for i in range(500))
    server.push(
        calls_reply(call("write_file", {"path": "long.txt", "content": content})),
        sse_reply(["Long file written."]),
    )
    t = agent()
    t.type("write a long file\r")
    wait_confirming(t)
    t.wait_flat("v views all 504 lines of the preview before you decide")
    assert rows_with(t, "… 453 more diff lines (500 added, 0 removed in all)"), t.dump()
    t.type("v")
    t.wait_for(lambda t: t.lines[0].startswith("write_file long.txt") and "lines 1-" in t.lines[0]
               and "of 504" in t.lines[0], what="the whole preview, from its top")
    assert t.lines[1].strip() == "new file · 500 lines · 4.3 KiB", t.dump()
    assert " confirming " in t.status(), t.dump()
    def line(n: int) -> str:  # line n (from 1) of the whole preview
        return {1: "new file", 2: "--- /dev/null", 3: "+++ b/long.txt", 4: "@@"}.get(n, f"+line {n - 5}")

    def page_drawn(t, after: int = 0) -> int:
        """The first line number the title shows, once rows 1 and 21 show its first and
        last line (the page is drawn whole), and it is past `after`."""
        m = re.search(r"lines ([\d,]+)-([\d,]+) of", t.lines[0])
        if not m:
            return 0
        first, last = (int(g.replace(",", "")) for g in m.groups())
        drawn = t.lines[1].strip().startswith(line(first)) and t.lines[21].strip() == line(last)
        return first if first > after and drawn else 0

    seen = set()
    first = t.wait_for(page_drawn, what="the first page")
    for _ in range(40):  # page through it all
        seen.update(line.strip() for line in t.lines[1:22])
        if "+line 499" in seen:
            break
        t.send(PGDN)
        first = t.wait_for(lambda t, f=first: page_drawn(t, f), what="the next page")
    assert {f"+line {i}" for i in range(500)} <= seen, "a line of the preview could not be reached"
    t.send(HOME)
    t.wait_for(lambda t: t.lines[1].strip().startswith("new file"), what="the top again")
    t.send(END)
    t.wait_for(lambda t: "+line 499" in t.text, what="the end")
    close_whole_preview(t)
    assert not (project / "long.txt").exists()
    t.type("y")
    t.wait_text("Long file written.")
    assert (project / "long.txt").read_text() == content


def test_a_200_kb_line_and_3000_blank_lines_are_shown_honestly(agent, server, project):
    content = "head\n" + "\n" * 3000 + "x" * 200_000 + "\ntail\n"
    server.push(
        calls_reply(call("write_file", {"path": "odd.txt", "content": content})),
        sse_reply(["Odd file written."]),
    )
    t = agent(rows=40)
    t.type("write an odd file\r")
    wait_confirming(t)
    flat = t.flat
    assert "new file · 3,003 lines · 198.3 KiB" in flat, t.dump()
    assert "+… 3,000 blank lines …" in flat, t.dump()
    assert "… [199,501 more chars]" in flat, t.dump()  # the window shows 500 chars of it
    assert rows_with(t, "+tail"), t.dump()
    x_rows = [line for line in t.lines if "xxxxxxxxxx" in line]
    assert 5 <= len(x_rows) <= 8, t.dump()  # ~500 chars at 80 columns, not 2,500 rows
    t.type("v")
    t.wait_for(lambda t: "lines 1-" in t.lines[0], what="the whole preview")
    t.send(END)
    t.wait_for(lambda t: "+tail" in t.text, what="the end of the whole preview")
    t.send(HOME)  # then page down to the count inside the long line: the whole view
    # shows 20,000 chars of it, its head and its tail; one page at a time, each drawn
    # before the next key (pages of x look alike: the title says the row in the line)
    t.wait_for(lambda t: "lines 1-" in t.lines[0], what="the top of the whole preview")
    for _ in range(40):
        if "… [180,001 more chars] …" in t.flat:
            break
        title = t.lines[0]
        t.send(PGDN)
        t.wait_for(lambda t, title=title: t.lines[0] != title, what="the next page")
    assert "… [180,001 more chars] …" in t.flat, t.dump()
    assert "lines 7-" in t.lines[0] and " · row " in t.lines[0], t.dump()  # inside the long line
    close_whole_preview(t)
    t.type("y")
    t.wait_text("Odd file written.")
    assert (project / "odd.txt").read_text() == content


# ---- issue 14: a root entered through a symlink; hard links ---------------------------------------


def test_a_root_entered_through_a_link_takes_paths_spelled_through_the_link_or_the_real_path(dash, server, tmp_path):
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "a.txt").write_text("alpha\n")
    link = tmp_path / "link"
    os.symlink(real, link)
    server.push(
        calls_reply(call("read_file", {"path": str(link / "a.txt")}, call_id="c_r", index=0),
                    call("list_directory", {"path": str(real / "sub")}, call_id="c_l", index=1),
                    call("write_file", {"path": str(real / "sub" / "new.txt"), "content": "new\n"},
                         call_id="c_w", index=2),
                    call("edit_file", {"path": str(link / "a.txt"), "search_block": "alpha",
                                       "replace_block": "ALPHA"}, call_id="c_e", index=3),
                    call("execute_command", {"command": "pwd -P; ls", "cwd": str(link / "sub")},
                         call_id="c_x", index=4)),
        sse_reply(["All five worked."]),
    )
    t = dash("-C", str(link), rows=40, cols=100)
    t.type("work through the link\r")
    wait_confirming(t)
    assert rows_with(t, "+++ b/sub/new.txt"), t.dump()  # named relative to the root
    t.type("y")
    t.wait_for(lambda t: "--- a/a.txt" in t.text and APPLY in t.text, what="the edit's preview")
    t.type("y")
    t.wait_for(lambda t: "cwd: sub" in t.text and APPLY in t.text, what="the command's preview")
    t.type("y")
    t.wait_text("All five worked.")
    t.wait_status("idle")
    assert "path escapes" not in t.flat, t.dump()
    assert (real / "sub" / "new.txt").read_text() == "new\n"
    assert (real / "a.txt").read_text() == "ALPHA\n"

    got = tool_results(wait_posts(server, 2)[1])
    assert got["c_r"]["ok"] and got["c_r"]["path"] == "a.txt" and got["c_r"]["content"] == "alpha\n", got
    assert got["c_l"]["ok"] and got["c_l"]["path"] == "sub", got
    assert got["c_w"] == {"ok": True, "path": "sub/new.txt", "bytes": 4, "created": True}, got
    assert got["c_e"]["ok"] and got["c_e"]["path"] == "a.txt", got
    assert got["c_x"]["ok"] and got["c_x"]["output"] == f"{os.path.realpath(real / 'sub')}\nnew.txt\n", got


def test_a_file_with_two_hard_links_says_so_when_read_and_when_written(agent, server, project, tmp_path):
    (project / "a.txt").write_text("one\n")
    os.link(project / "a.txt", tmp_path / "other-name.txt")
    server.push(
        calls_reply(call("read_file", {"path": "a.txt"}, call_id="c_r", index=0),
                    call("write_file", {"path": "a.txt", "content": "two\n"}, call_id="c_w", index=1)),
        sse_reply(["Written."]),
    )
    t = agent(rows=30)
    t.type("rewrite it\r")
    wait_confirming(t)
    assert rows_with(t, "→ ok: 1 lines, 2 hard links"), t.dump()
    assert ("this file has 2 hard links: the write replaces this name only and breaks the link; "
            "the other name keeps the old content") in t.flat, t.dump()
    t.type("y")
    t.wait_text("Written.")
    t.wait_flat("→ ok: wrote 4 B, hard link broken: 1 other name keeps the old content")
    assert (project / "a.txt").read_text() == "two\n"
    assert (tmp_path / "other-name.txt").read_text() == "one\n"
    got = tool_results(wait_posts(server, 2)[1])
    assert got["c_r"]["hard_links"] == 2 and got["c_w"]["hard_links"] == 2, got


# ---- command previews hide nothing (issue 14, section 7) -------------------------------------
# The review's cases: padding before `; touch …` put only the harmless head (or only the
# end, with nothing to say it belongs to the same command) on screen while y was offered.

PADDED = {
    "4000 spaces": (" " * 4000, "echo hi⟨4,000 spaces⟩; touch pwned"),
    "4000 tabs": ("\t" * 4000, "echo hi⟨4,000 tabs⟩; touch pwned"),
    "3000 blank lines": ("\n" * 3000, "⟨2,999 blank lines⟩"),
    "U+3000 x 2000": ("\u3000" * 2000, "echo hi⟨2,000 × U+3000⟩; touch pwned"),
    "U+2800 x 2000": ("\u2800" * 2000, "echo hi⟨2,000 × U+2800⟩; touch pwned"),
}


@pytest.mark.parametrize("case", list(PADDED))
def test_the_whole_padded_command_is_on_screen_while_y_is_offered(agent, server, project, case):
    pad, shown = PADDED[case]
    command = f"echo hi{pad}; touch pwned" if "lines" not in case else f"echo hi{pad}touch pwned"
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["Ran."]))
    t = agent()  # 80x24
    t.type("run it\r")
    wait_confirming(t)
    screen = t.flat
    assert shown in screen, t.dump()  # the count, and what is around it
    assert "echo hi" in screen and "touch pwned" in screen, t.dump()
    assert screen.index("touch pwned") < screen.index(APPLY) and "blank runs shown as ⟨counts⟩" in screen
    assert "v views all" not in screen  # nothing left out: the counts are exact
    if case == "4000 spaces":
        t.type("y")  # what runs is what was sent, byte for byte
        t.wait_text("Ran.")
        assert (project / "pwned").exists()
        request = chat_posts(server)[-1]
        assert tool_results(request)["call_1"]["ok"] is True
    else:
        t.type("n")
        t.wait_text("Ran.")
        assert not (project / "pwned").exists()


def test_a_200_kb_command_shows_its_end_and_v_shows_all_of_it(agent, server, project):
    command = "echo " + "a" * 200_000 + " > /dev/null; touch pwned"
    server.push(calls_reply(call("execute_command", {"command": command})), sse_reply(["Ran."]))
    t = agent()
    t.type("run it\r")
    wait_confirming(t)
    flat = t.flat
    assert "⟨199,5" in flat and "more characters⟩" in flat, t.dump()
    assert "> /dev/null; touch pwned" in flat, t.dump()
    assert "v views all 3 lines of the preview" in flat, t.dump()
    t.type("v")
    t.wait_for(lambda t: t.lines[1].startswith("1 command line · 195.3 KiB"), what="the whole preview")
    t.send(END)
    t.wait_for(lambda t: "aaaa > /dev/null; touch pwned" in t.flat and "more characters" not in t.flat,
               what="the end of the whole command, unclipped")
    close_whole_preview(t)
    t.type("n")
    t.wait_text("Ran.")
    assert not (project / "pwned").exists()
