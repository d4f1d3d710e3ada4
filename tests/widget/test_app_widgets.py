"""The front end without a terminal: urwid.testing renders, key scripts, message application."""

from __future__ import annotations

import pytest
import urwid
from urwid.testing import press, render_text

from dashfloat import messages as M
from dashfloat.history import History
from dashfloat.ui.app import App
from dashfloat.ui.bridge import Outbox
from dashfloat.ui.screen import best_shift, compact_sgr
from dashfloat.ui.statusline import status_markup


class FakeAgent:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)

    def start(self):
        pass


def make_app(ascii=False, model="test-model"):
    return App(agent=FakeAgent(), outbox=Outbox(), model_name=model, ascii=ascii, depth=256,
               history=History(None))


def feed(app, *msgs):
    for m in msgs:
        app.apply(m)
    app.refresh()


def screen(app, size=(80, 24)):
    return render_text(app.root, size)


def stream_answer(app, text, reasoning=""):
    feed(app, (M.USER, "hello"), (M.PHASE, "waiting"), (M.ASSISTANT_START,))
    if reasoning:
        feed(app, (M.REASONING, reasoning))
    for i in range(0, len(text), 7):
        app.apply((M.TOKEN, text[i : i + 7]))
    app.refresh()


@pytest.mark.parametrize("size", [(80, 24), (40, 12), (20, 5), (120, 40)])
def test_renders_at_every_size_without_error(size):
    app = make_app()
    stream_answer(app, "# Title\n\nSome **bold** text and `code`.\n\n```python\nprint('hi')\n```\n\n- a\n- b\n")
    feed(app, (M.ASSISTANT_END, "done"), (M.SYSTEM, "warn", "a long system message " * 5))
    rows = screen(app, size)
    assert len(rows) == size[1]
    assert all(len(r) == size[0] for r in rows)


def test_transcript_shows_user_markdown_and_status():
    app = make_app()
    stream_answer(app, "# Title\n\nSome **bold** text.\n\n```python\nprint('hi')\n```\n")
    feed(app, (M.ASSISTANT_END, "done"), (M.PHASE, "idle"),
         (M.USAGE, {"prompt_tokens": 100, "completion_tokens": 23, "total_tokens": 123}))
    text = "\n".join(screen(app))
    assert "❯ hello" in text
    assert "● Title" in text
    assert "Some bold text." in text
    assert "print('hi')" in text
    assert "**" not in text and "```" not in text
    status = screen(app)[-2]
    assert "idle" in status and "test-model" in status and "ctx 123 tok" in status


def test_streaming_tail_is_rendered_as_it_will_stay():
    """The unfinished block is rendered like the block it becomes (rows on the terminal
    stay as they are); the word being typed and an unclosed span wait a moment."""
    app = make_app()
    stream_answer(app, "First paragraph.\n\nSecond with **bold")
    text = "\n".join(screen(app))
    assert "First paragraph." in text
    assert "Second with" in text and "**" not in text and "bold" not in text
    feed(app, (M.TOKEN, " words** and mor"))
    text = "\n".join(screen(app))
    assert "Second with bold words and" in text and "**" not in text and "mor" not in text
    feed(app, (M.ASSISTANT_END, "done"))
    assert "Second with bold words and mor" in "\n".join(screen(app))  # the end shows all


def test_a_quiet_stream_shows_the_word_it_held_back():
    app = make_app()

    def answer_row():
        return next(r for r in screen(app) if r.startswith("●")).rstrip()

    stream_answer(app, "Partial answer te")
    assert answer_row() == "● Partial answer"
    app._dirty = True
    app._tick(None, None)  # text arrived since the last tick: still held back
    assert answer_row() == "● Partial answer"
    app._tick(None, None)  # a tick with nothing new: the stream is quiet
    assert answer_row() == "● Partial answer te"
    feed(app, (M.TOKEN, "xt and mo"))  # more text: the word being typed waits again
    assert answer_row() == "● Partial answer text and"
    app._tick(None, None)
    assert answer_row() == "● Partial answer text and mo"
    feed(app, (M.TOKEN, "re"))  # what is on screen is never taken back
    assert answer_row() == "● Partial answer text and mo"
    feed(app, (M.TOKEN, " words"))
    assert answer_row() == "● Partial answer text and more"


def test_reasoning_is_apart_collapsed_and_toggles():
    app = make_app()
    stream_answer(app, "The answer.", reasoning="step one\nstep two\n")
    feed(app, (M.ASSISTANT_END, "done"))
    text = "\n".join(screen(app))
    assert "thought (2 lines, Ctrl-T shows)" in text
    assert "step one" not in text
    assert "The answer." in text
    press(app.root, (80, 24), "ctrl t")
    text = "\n".join(screen(app))
    assert "step one" in text and "step two" in text
    assert text.index("step two") < text.index("The answer.")


def test_cancelled_and_error_answers_are_marked():
    app = make_app()
    stream_answer(app, "partial ans")
    feed(app, (M.ASSISTANT_END, "cancelled"))
    assert "[cancelled: the answer above is partial]" in "\n".join(screen(app))
    stream_answer(app, "another")
    feed(app, (M.ASSISTANT_END, "error"), (M.SYSTEM, "error", "HTTP 500 from the server."))
    text = "\n".join(screen(app))
    assert "[stopped by an error" in text and "HTTP 500 from the server." in text


def test_escape_sequences_from_the_model_are_shown_escaped():
    app = make_app()
    stream_answer(app, "evil \x1b]0;title\x07 and \x1b[2J done")
    feed(app, (M.ASSISTANT_END, "done"))
    text = "\n".join(screen(app))
    assert "\\e]0;title\\a" in text and "\\e[2J" in text


def test_enter_submits_and_clears_the_prompt():
    app = make_app()
    press(app.root, (80, 24), *"hi there", "enter")
    assert app.agent.sent == [(M.PROMPT, "hi there")]
    assert app.prompt.edit_text == ""


def test_alt_enter_and_backslash_enter_insert_newlines():
    app = make_app()
    press(app.root, (80, 24), "a", "meta enter", "b", "\\", "enter", "c")
    assert app.prompt.edit_text == "a\nb\nc"
    assert app.agent.sent == []


def test_submit_while_streaming_keeps_the_prompt():
    app = make_app()
    feed(app, (M.PHASE, "streaming"))
    press(app.root, (80, 24), *"next", "enter")
    assert app.agent.sent == []
    assert app.prompt.edit_text == "next"
    assert "Esc cancels it" in screen(app)[-2]


def test_esc_and_ctrl_c_cancel_an_active_turn():
    app = make_app()
    feed(app, (M.PHASE, "streaming"))
    press(app.root, (80, 24), "esc")
    press(app.root, (80, 24), "ctrl c")
    assert app.agent.sent == [(M.CANCEL,), (M.CANCEL,)]


def test_ctrl_c_clears_then_quits():
    app = make_app()
    press(app.root, (80, 24), *"draft", "ctrl c")
    assert app.prompt.edit_text == ""
    assert "Ctrl-C again quits" in screen(app)[-2]
    with pytest.raises(urwid.ExitMainLoop):
        press(app.root, (80, 24), "ctrl c")
    assert (M.QUIT,) in app.agent.sent


def test_ctrl_c_then_other_key_does_not_quit():
    app = make_app()
    press(app.root, (80, 24), "ctrl c", "x", "ctrl c")
    assert app.prompt.edit_text == ""


def test_ctrl_d_quits_only_on_an_empty_prompt():
    app = make_app()
    press(app.root, (80, 24), *"ab", "left", "ctrl d")
    assert app.prompt.edit_text == "a"
    press(app.root, (80, 24), "backspace")
    with pytest.raises(urwid.ExitMainLoop):
        press(app.root, (80, 24), "ctrl d")


def test_bracketed_paste_is_gathered_and_never_submits():
    app = make_app()
    keys = app._input_filter(["begin paste", "l", "1", "enter", "l", "2", "enter", "end paste"], [])
    assert keys == []
    assert app.prompt.edit_text == "l1\nl2\n"
    assert app.agent.sent == []


def test_history_walks_with_up_and_down():
    app = make_app()
    press(app.root, (80, 24), *"one", "enter")
    app.history.add("one")  # the app hands the file write to a thread; do it here directly
    press(app.root, (80, 24), *"two", "enter")
    app.history.add("two")
    press(app.root, (80, 24), *"dra", "up")
    assert app.prompt.edit_text == "two"
    press(app.root, (80, 24), "up")
    assert app.prompt.edit_text == "one"
    press(app.root, (80, 24), "down", "down")
    assert app.prompt.edit_text == "dra"


def test_scrolling_shows_position_and_end_follows_again():
    app = make_app()
    feed(app, *[(M.SYSTEM, "info", f"line {i}") for i in range(100)])
    screen(app)
    assert app.view.following
    press(app.root, (80, 24), "page up")
    rows = screen(app)
    assert not app.view.following
    assert "line " in rows[-2] and "/" in rows[-2]  # position indicator
    assert "line 99" not in "\n".join(rows)
    press(app.root, (80, 24), "home")
    assert "line 0" in "\n".join(screen(app))
    feed(app, (M.SYSTEM, "info", "new while scrolled"))
    assert "new while scrolled" not in "\n".join(screen(app))
    press(app.root, (80, 24), "end")
    rows = screen(app)
    assert app.view.following
    assert "new while scrolled" in "\n".join(rows)


def test_help_overlay_lists_keys_and_closes():
    app = make_app()
    press(app.root, (80, 24), "f1")
    text = "\n".join(screen(app))
    assert "DashFloat keys" in text and "Alt-Enter" in text
    press(app.root, (80, 24), "esc")
    assert "DashFloat keys" not in "\n".join(screen(app))


def test_ascii_mode_uses_ascii_glyphs():
    app = make_app(ascii=True)
    stream_answer(app, "- item\n\nok")
    feed(app, (M.ASSISTANT_END, "done"))
    text = "\n".join(screen(app))
    assert "> hello" in text
    assert all(ord(c) < 128 for c in text), text


def test_agent_down_keeps_input_working():
    app = make_app()
    feed(app, (M.AGENT_DOWN, "RuntimeError: boom"))
    rows = screen(app)
    assert "The agent stopped: RuntimeError: boom" in "\n".join(rows)
    assert "agent down" in rows[-2]
    press(app.root, (80, 24), *"typing still works")
    assert app.prompt.edit_text == "typing still works"


def test_a_bad_message_is_an_entry_not_a_crash():
    app = make_app()
    app.outbox.post((M.USAGE, "not a dict"))
    app.outbox.post((M.SYSTEM, "info", "after"))
    app._on_doorbell(b"!")
    text = "\n".join(screen(app))
    assert "internal error showing a 'usage' message" in text
    assert "after" in text


def test_status_markup_is_pure_and_fits():
    markup = status_markup(phase="streaming", spinner="|", model="m", tokens=5, position=None,
                           notice="", width=60, sep="|")
    text = "".join(t for _a, t in markup)
    assert len(text) == 60
    assert "streaming" in text and "Esc cancel" in text


@pytest.mark.parametrize(
    "old,new,region,expected",
    [
        (list("abcdefghij"), list("defghijklm"), 10, 3),  # scrolled by 3
        (list("abcdefghij"), list("abcdefghij"), 10, 0),  # nothing moved
        (list("abcdefghij"), list("bcdefghijk"), 10, 1),
        (list("abcdefghij"), list("xyzuvwqrst"), 10, 0),  # a different screen
        (list("abcdefghij"), list("cdefghijklmnop")[:10], 10, 2),
        (list("abc"), list("bcd"), 3, 0),  # saves too few rows to be worth it
    ],
)
def test_best_shift(old, new, region, expected):
    assert best_shift(old, new, region) == expected


@pytest.mark.parametrize(
    "urwid_sgr,expected",
    [
        ("\x1b[0;39;49m", "\x1b[0m"),  # default colours: the reset says it all
        ("\x1b[0;38;5;188;49m", "\x1b[0;38;5;188m"),
        ("\x1b[0;39;1;49m", "\x1b[0;1m"),
        ("\x1b[0;39;1;4;49m", "\x1b[0;1;4m"),
        ("\x1b[0;33;42m", "\x1b[0;33;42m"),  # nothing implied: unchanged
        ("\x1b[0;38;5;229;4;48;5;164m", "\x1b[0;38;5;229;4;48;5;164m"),
        ("\x1b[0;38;5;39;48;5;49m", "\x1b[0;38;5;39;48;5;49m"),  # 39/49 as colour numbers stay
        ("\x1b[0;38;2;1;39;49;48;2;49;39;1m", "\x1b[0;38;2;1;39;49;48;2;49;39;1m"),  # truecolour too
        ("\x1b[0;39;48;2;0;0;49m", "\x1b[0;48;2;0;0;49m"),
        ("\x1b[0m", "\x1b[0m"),
        ("\x1b[1;31m", "\x1b[1;31m"),  # not urwid's shape: untouched
    ],
)
def test_compact_sgr(urwid_sgr, expected):
    assert compact_sgr(urwid_sgr) == expected


@pytest.mark.parametrize("size", [(40, 12), (20, 5), (80, 24)])
def test_help_overlay_and_a_tall_prompt_fit_small_screens(size):
    app = make_app()
    app.prompt.insert_text("\n".join(f"prompt line {i}" for i in range(30)))
    app._on_resize = lambda: None
    app.prompt_box.cap = max(1, min(8, size[1] // 3))
    rows = screen(app, size)
    assert len(rows) == size[1]
    assert "prompt line 29" in "\n".join(rows)  # the window follows the cursor
    assert sum("prompt line" in r for r in rows) <= app.prompt_box.cap
    press(app.root, size, "f1")
    rows = screen(app, size)
    assert len(rows) == size[1] and all(len(r) == size[0] for r in rows)


def test_long_lines_wrap_under_their_indent():
    app = make_app()
    stream_answer(app, "first\n\n" + "word " * 30)
    feed(app, (M.ASSISTANT_END, "done"))
    rows = [r.rstrip() for r in screen(app, (40, 24))]
    body = [r for r in rows if "word" in r]
    assert len(body) >= 3
    assert all(r.startswith("  word") for r in body), body


def test_unrestricted_mode_is_a_permanent_warning_in_the_status_bar():
    app = make_app()
    feed(app, (M.MODE, "unrestricted"))
    assert "UNRESTRICTED: no confirmations" in screen(app)[-2]
    feed(app, (M.PHASE, "streaming"), (M.MODE, "accept-edits"))
    status = screen(app)[-2]
    assert "mode accept-edits" in status and "UNRESTRICTED" not in status


def test_a_confirmation_takes_only_its_keys_and_keeps_the_prompt():
    app = make_app()
    app.prompt.insert_text("my draft")
    feed(app, (M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt (1 B)"}),
         (M.CONFIRM, 7, {"id": "c1", "name": "write_file", "summary": "write_file a.txt (1 B)",
                         "lines": [("header", "+++ b/a.txt"), ("add", "+x")]}),
         (M.PHASE, "confirming"))
    press(app.root, (80, 24), "y")  # not armed: the preview has not been drawn yet
    assert app.agent.sent == [] and app.confirm is not None
    screen(app)
    app._after_draw()  # the loop calls this after a frame: now the preview is on screen
    press(app.root, (80, 24), "x", "a")
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "always")]
    assert app.prompt.edit_text == "my draft"
    assert "allowed for the rest of the session" in "\n".join(screen(app))


@pytest.mark.parametrize("name,width", [("realistic", 60), ("bench", 100)])
def test_streamed_rows_stay_as_shown_except_tables(name, width):
    """Streaming token by token, a terminal row once shown (other than the last, still
    growing one) is never changed later, except a table's source rows when the table
    completes: what reached the terminal is not sent again."""
    import re

    from dashfloat.ui.theme import UNICODE
    from dashfloat.ui.transcript import AssistantEntry
    from dashfloat.ui.widgets import make_row
    from tests.fakeserver import markdown_answer
    from tests.unit.test_markdown import realistic_document

    if name == "realistic":
        pieces = re.findall(r"\s*\S+|\s+", realistic_document(6))
    else:
        pieces = markdown_answer(2000)
    entry = AssistantEntry()
    cache: dict = {}

    def rows() -> list:
        out = []
        for line in entry.lines(UNICODE, False):
            key = repr(line)
            if key not in cache:
                cache[key] = list(make_row(line).render((width,)).content())
            out.extend(cache[key])
        return out

    shown: list = []
    changed = []
    for i, piece in enumerate(pieces):
        entry.add_content(piece)
        last = i == len(pieces) - 1
        if i % 2 and not last:
            continue
        if last:
            entry.end("done")
        now = rows()
        changed += [b"".join(r for _a, _cs, r in old).decode().strip()
                    for old, new in zip(shown[:-1], now, strict=False) if old != new]
        shown = now
    assert len(shown) > 100
    assert all("|" in text for text in changed), changed


def _pane_with(lines):
    from dashfloat.ui.widgets import TranscriptPane

    pane = TranscriptPane()
    pane.replace(0, 0, lines)
    return pane


def _sample_lines(n=60):
    lines = []
    for i in range(n):
        if i % 7 == 3:
            lines.append([])
        elif i % 5 == 0:
            lines.append([("", "    "), ("md_code", f"indented line {i} " + "wrapping words " * 6)])
        else:
            lines.append([("user", f"line {i} "), ("", "short" if i % 2 else "a longer one " * 5)])
    return lines


@pytest.mark.parametrize("size", [(80, 24), (40, 12), (20, 5), (120, 3)])
def test_pane_shows_the_same_rows_as_a_listbox_at_the_end(size):
    """The pane's following view equals urwid's own ListBox of the same rows."""
    from dashfloat.ui.widgets import make_row

    lines = _sample_lines()
    pane = _pane_with(lines)
    box = urwid.ListBox(urwid.SimpleFocusListWalker([make_row(x) for x in lines]))
    box.set_focus(len(lines) - 1)
    box.set_focus_valign("bottom")
    assert list(pane.render(size).content()) == list(box.render(size).content())


def test_pane_scrolls_by_rows_and_follows_again_at_the_end():
    pane = _pane_with([[("", f"row {i}")] for i in range(50)])
    size = (20, 10)

    def text():
        return [b"".join(r for _a, _c, r in row).decode().strip() for row in pane.render(size).content()]

    assert text()[-1] == "row 49" and pane.position() == (50, 50)
    pane.scroll_rows(-9)
    assert not pane.following and text() == [f"row {i}" for i in range(31, 41)]
    assert pane.position() == (41, 50)
    pane.replace(0, 0, [[("", "inserted above")]])  # the view stays on the same rows
    assert text() == [f"row {i}" for i in range(31, 41)]
    pane.replace(51, 51, [[("", "appended below")]])
    assert "appended below" not in text()
    pane.to_top()
    assert text()[0] == "inserted above"
    pane.scroll_rows(-3)  # already at the top
    assert text()[0] == "inserted above"
    pane.scroll_rows(1000)
    assert pane.following and text()[-1] == "appended below"


def test_pane_scrolls_inside_a_wrapped_line():
    pane = _pane_with([[("", "w" * 100)], [("", "end")]])  # 5 rows at width 20, then 1
    size = (20, 3)
    pane.render(size)
    pane.scroll_rows(-2)
    rows = [b"".join(r for _a, _c, r in row).decode() for row in pane.render(size).content()]
    assert rows == ["w" * 20] * 3 and pane.anchor == (0, 1)
    pane.scroll_rows(2)
    assert pane.following


def test_pane_with_few_lines_is_top_aligned_and_blank_below():
    pane = _pane_with([[("", "only line")]])
    rows = [b"".join(r for _a, _c, r in row).decode().rstrip() for row in pane.render((30, 4)).content()]
    assert rows == ["only line", "", "", ""]


def test_line_rows_equal_the_widget_rendering():
    """The pane lays lines out without widgets; the rows must be exactly urwid's."""
    import random

    from dashfloat.ui.widgets import line_rows, make_row

    rng = random.Random(7)
    words = ["a", "word", "longerword", "x" * 30, "é", "世界", "ab\u0301c", " ", "  ", "snake_case", "--flag", "tab\there"]
    attrs = ["", "md_code", "user", "md_strong"]
    checked = 0
    for _ in range(400):
        line = [("", " " * rng.randrange(1, 6))] if rng.random() < 0.3 else []
        for _ in range(rng.randrange(0, 8)):
            text = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
            line.append((rng.choice(attrs), text + rng.choice(["", " "])))
        for width in (1, 2, 5, 13, 40, 80):
            assert line_rows(line, width) == list(make_row(line).render((width,)).content()), (line, width)
            checked += 1
    assert checked == 2400


def test_help_overlay_leaves_the_transcript_visible_around_it():
    """The pane's canvas is cut into by the overlay (its trimmed-content path)."""
    app = make_app()
    feed(app, *[(M.SYSTEM, "info", f"line {i} " + "x" * 70) for i in range(60)])
    press(app.root, (80, 24), "f1")
    rows = screen(app)
    boxed = [r for r in rows if "│" in r]
    assert boxed and any(r.startswith("· li") and r.endswith("xxxx") for r in boxed)


# ---- a dead worker never leaves the UI waiting -------------------------------------------


def drain_until(app, cond, what, timeout=5.0):
    import time

    deadline = time.monotonic() + timeout
    while True:
        app._drain()
        if cond():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen:\n" + "\n".join(screen(app)))
        time.sleep(0.01)


class Odd(BaseException):
    pass


@pytest.mark.parametrize("death", [SystemExit(1), KeyboardInterrupt(), Odd("odd")], ids=lambda e: type(e).__name__)
def test_a_streamer_killed_by_a_base_exception_returns_the_ui_to_idle_and_the_next_prompt_works(death):
    """The real agent on its thread, the real app on this one: the first stream dies by a
    BaseException after some text; the answer is closed as failed, an error entry says why,
    the status is idle, and the next prompt typed and sent with Enter is answered."""
    from dashfloat.agent import Agent
    from dashfloat.llm.client import StreamResult
    from dashfloat.llm.endpoint import Endpoint

    streams = []

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        streams.append(messages)
        if len(streams) == 1:
            on_event(("content", "Half of the first "))
            raise death
        on_event(("content", "Second answer."))
        return StreamResult(content="Second answer.", reasoning="", tool_calls=[], finish_reason="stop",
                            usage=None, cancelled=False)

    outbox = Outbox()
    agent = Agent(Endpoint(base_url="http://127.0.0.1:9/v1"), "test-model", outbox.post, stream_fn=stream)
    app = App(agent=agent, outbox=outbox, model_name="test-model", ascii=False, depth=256, history=History(None))
    app.start_agent()
    try:
        drain_until(app, lambda: app.phase == "idle" and agent.alive, "the agent to start")
        press(app.root, (80, 24), *"first", "enter")
        drain_until(app, lambda: len(streams) == 1 and app.phase == "idle" and app.model.current is None,
                    "the failed turn to end")
        text = "\n".join(screen(app))
        assert "Half of the first" in text
        assert f"the stream crashed: {type(death).__name__}" in text
        assert "idle" in screen(app)[-2] and "agent down" not in screen(app)[-2]
        press(app.root, (80, 24), *"second", "enter")
        drain_until(app, lambda: "Second answer." in "\n".join(screen(app)) and app.phase == "idle",
                    "the second answer")
        assert streams[1][-1] == {"role": "user", "content": "second"}
    finally:
        agent.send((M.QUIT,))
        agent.join(2)


def test_an_agent_thread_that_ends_without_a_report_is_found_by_the_tick():
    app = make_app()
    app.start_agent()
    feed(app, (M.USER, "hello"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.TOKEN, "Some text "))
    app._tick(None, None)  # alive: the turn goes on
    assert app.phase == "waiting" and not app.agent_down
    app.agent.alive = False  # gone, and nothing was posted
    app._tick(None, None)
    rows = screen(app)
    assert app.phase == "idle" and "agent down" in rows[-2]
    assert "The agent stopped: its thread ended without a report" in "\n".join(rows)
    assert app.model.current is None  # the partial answer is closed
    press(app.root, (80, 24), *"typing still works")
    assert app.prompt.edit_text == "typing still works"
    press(app.root, (80, 24), "enter")
    assert app.notice == "the agent is down" and app.agent.sent == []


def test_an_agent_down_report_and_the_tick_make_one_entry():
    app = make_app()
    app.start_agent()
    feed(app, (M.PHASE, "waiting"))
    app.agent.alive = False
    app.outbox.post((M.AGENT_DOWN, "RuntimeError: boom"))
    app._tick(None, None)
    text = "\n".join(screen(app))
    assert text.count("The agent stopped") == 1 and "RuntimeError: boom" in text


def test_a_system_entry_wraps_its_continuation_lines_under_their_indent():
    app = make_app()
    feed(app, (M.SYSTEM, "info", "Title:\n  item\n      " + "word " * 20))
    rows = [r.rstrip() for r in screen(app, (40, 24))]
    body = [r for r in rows if "word" in r]
    assert len(body) >= 3
    assert all(r.startswith("        word") for r in body), body
    assert "    item" in rows
