"""The front end without a terminal: urwid.testing renders, key scripts, message application."""

from __future__ import annotations

import logging
import os
import re

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
        self.prepared = 0  # PREPARE messages (the first key typed), kept apart from the turn's

    def send(self, msg):
        if msg == (M.PREPARE,):
            self.prepared += 1
            return
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


def test_the_ctx_figure_says_when_it_is_an_estimate_and_stops_saying_it_when_the_provider_counts():
    app = make_app()
    feed(app, (M.PHASE, "idle"), (M.USAGE, {"total_tokens": 2459, "estimated": True}))
    assert "ctx ~2,459 tok" in screen(app)[-2]
    feed(app, (M.USAGE, {"prompt_tokens": 3000, "completion_tokens": 10}))
    status = screen(app)[-2]
    assert "ctx 3,010 tok" in status and "~" not in status


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


def test_a_key_read_in_the_same_pass_is_drawn_before_the_messages_are_taken():
    """Typing during a fast stream: the input and the doorbell were ready in one pass of the
    loop, and the key's echo waited for the drain of the stream's messages (up to its 5 ms
    budget) and only then was drawn (issue 16: keystroke echo)."""
    app = make_app()
    order = []

    class Loop:
        def draw_screen(self):
            order.append(("draw", app.prompt.edit_text, app.outbox.queue.qsize()))
            app._after_draw()

    app.loop = Loop()
    app._input_filter(["x"], [ord("x")])
    app.root.keypress((80, 24), "x")
    app.outbox.post((M.SYSTEM, "info", "a message"))
    app._on_doorbell(b"!")
    assert order == [("draw", "x", 1)]  # the echo, with the message still waiting
    assert "a message" in "\n".join(screen(app))  # then taken
    app.outbox.post((M.SYSTEM, "info", "another"))
    app._on_doorbell(b"!")  # no key since the last frame: no extra frame
    assert order == [("draw", "x", 1)]
    assert "another" in "\n".join(screen(app))


def test_a_refresh_lays_out_the_answer_so_the_frame_only_draws(monkeypatch):
    """App.refresh (each tick, each catch-up part) lays out what it took: the frame a
    key waits for does not lay out the parts taken since the frame before."""
    from dashfloat.ui import widgets as W

    app = make_app()
    stream_answer(app, "x" * 50_000)
    before = screen(app)
    app.apply((M.TOKEN, "y" * 50_000))
    app.refresh()
    monkeypatch.setattr(W, "long_line_rows", lambda *a: pytest.fail("laid out in the frame"))
    after = screen(app)
    assert after != before and "yyyy" in after[-3]


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
        ("\x1b[0;39;49m", "\x1b[m"),  # default colours: the reset says it all, in 3 bytes
        ("\x1b[0;38;5;188;49m", "\x1b[0;38;5;188m"),
        ("\x1b[0;39;1;49m", "\x1b[0;1m"),
        ("\x1b[0;39;1;4;49m", "\x1b[0;1;4m"),
        ("\x1b[0;33;42m", "\x1b[0;33;42m"),  # nothing implied: unchanged
        ("\x1b[0;38;5;229;4;48;5;164m", "\x1b[0;38;5;229;4;48;5;164m"),
        ("\x1b[0;38;5;39;48;5;49m", "\x1b[0;38;5;39;48;5;49m"),  # 39/49 as colour numbers stay
        ("\x1b[0;38;2;1;39;49;48;2;49;39;1m", "\x1b[0;38;2;1;39;49;48;2;49;39;1m"),  # truecolour too
        ("\x1b[0;39;48;2;0;0;49m", "\x1b[0;48;2;0;0;49m"),
        ("\x1b[0m", "\x1b[m"),
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


class Clock:
    """An injected monotonic clock: tests move time by hand, so no rule is timing-flaky."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def confirm_app(lines=None, full=None, always="write_file(a.txt)", always_asks=""):
    """An App with a write waiting for a decision (ref 7, call c1), the prompt holding a
    draft, the preview drawn at t=100."""
    clock = Clock()
    app = App(agent=FakeAgent(), outbox=Outbox(), model_name="test-model", ascii=False, depth=256,
              history=History(None), clock=clock)
    app.prompt.insert_text("my draft")
    info = {"id": "c1", "name": "write_file", "summary": "write_file a.txt (1 B)",
            "lines": lines or [("stat", "new file · 1 line · 2 B"), ("header", "+++ b/a.txt"), ("add", "+x")]}
    if full is not None:
        info["full"] = full
    if always:
        info["always"] = always
    if always_asks:
        info["always_asks"] = always_asks
    feed(app, (M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt (1 B)"}),
         (M.CONFIRM, 7, info), (M.PHASE, "confirming"))
    screen(app)
    app._after_draw()  # the loop calls this after a frame: now the preview is on screen
    return app, clock


def keys_in(app, clock, at, *keys, read=False):
    """Keys as the MainLoop hands them over: one read through the input filter (read=True:
    all in the same read), or each key in its own read."""
    clock.now = at
    reads = [list(keys)] if read else [[k] for k in keys]
    for batch in reads:
        for key in app._input_filter(batch, [ord(k) for k in batch if len(k) == 1]):
            app.root.keypress((80, 24), key)


def tick(app, clock, at):
    clock.now = at
    app._tick(None, None)


def question(app):
    return next((r.strip() for r in screen(app) if "y approve" in r or "a again" in r), "")


def test_a_confirmation_waits_for_its_preview_and_a_grace_period():
    app, clock = confirm_app()
    app.gate.shown_at = None  # not drawn yet
    keys_in(app, clock, 100.0, "y")
    assert app.agent.sent == [] and "not on screen yet" in screen(app)[-2]
    app._after_draw()
    assert question(app).startswith("▸ Wait…  y approve")
    keys_in(app, clock, 100.3, "y")  # 0.3 s after it appeared: too soon
    assert "too soon" in screen(app)[-2]
    tick(app, clock, 101.0)
    assert app.agent.sent == []
    tick(app, clock, 102.0)  # a pause: the question says keys count now
    assert question(app).startswith("▸ Apply? y approve")
    assert "too soon" not in screen(app)[-2]
    keys_in(app, clock, 102.0, "y")
    assert app.agent.sent == [] and "approving" in screen(app)[-2]  # held while a word could follow
    tick(app, clock, 102.4)
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "approved")]
    assert app.prompt.edit_text == "my draft"


def test_typing_a_sentence_on_a_confirmation_decides_nothing_and_lands_nowhere():
    """The defect: "can you stop" typed while a write waited approved it (the a) and added
    a session rule; the rest went into the prompt."""
    app, clock = confirm_app()
    t = 103.0
    for ch in "can you stop":
        keys_in(app, clock, t, ch)
        t += 0.12
        tick(app, clock, t)
    tick(app, clock, t + 2)
    assert app.agent.sent == []
    assert app.confirm is not None and app.prompt.edit_text == "my draft"
    text = "\n".join(screen(app))
    assert "typed here, not used: can you stop" in text
    assert "Apply? y approve" in text  # re-armed after the pause
    keys_in(app, clock, t + 3, "y")
    tick(app, clock, t + 3.5)
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "approved")]


def test_a_sentence_in_one_read_or_a_terminal_reply_decides_nothing():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, *"yes go ahead", read=True)
    keys_in(app, clock, 105.0, "meta ]", "1", "1", ";", "r", "g", "b", ":", "f", "meta \\", read=True)
    keys_in(app, clock, 107.0, "y", "y", read=True)
    tick(app, clock, 110.0)
    assert app.agent.sent == [] and app.confirm is not None
    assert "typed here, not used: yes go ahead11;rgb:fyy" in "\n".join(screen(app))


def test_the_log_says_why_a_decision_key_was_not_taken(caplog):
    """The screen says why a y did not count only until the next pause; the log keeps it
    (a flaky end-to-end run had a lone n refused with nothing to tell why)."""
    app, clock = confirm_app()
    with caplog.at_level(logging.INFO, logger="dashfloat.ui"):
        keys_in(app, clock, 100.2, "y")  # grace
        keys_in(app, clock, 101.0, "y", "y", read=True)  # together
        keys_in(app, clock, 101.3, "n")  # typing: 0.3 s after the last key
        tick(app, clock, 103.0)
        keys_in(app, clock, 103.0, "n")  # held ...
        keys_in(app, clock, 103.1, "o")  # ... and dropped: "no" is a word
        tick(app, clock, 106.0)
    said = [r.getMessage() for r in caplog.records if r.name == "dashfloat.ui"]
    assert said == [
        "confirmation: 'y' not taken (grace): 0.20 s after the preview was drawn, inf s after the last key, "
        "alone in its read",
        "confirmation: 'y' not taken (together): 1.00 s after the preview was drawn, 0.80 s after the last "
        "key, with other keys in its read",
        "confirmation: 'y' not taken (together): 1.00 s after the preview was drawn, 0.00 s after the last "
        "key, with other keys in its read",
        "confirmation: 'n' not taken (typing): 1.30 s after the preview was drawn, 0.30 s after the last key, "
        "alone in its read",
        "confirmation: the held 'n' was not taken: 'o' followed it within 0.3 s",
    ], said
    assert app.agent.sent == []


def test_a_word_that_starts_with_y_is_typing():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, "y")
    keys_in(app, clock, 103.15, "o")
    keys_in(app, clock, 103.3, "u")
    tick(app, clock, 106.0)
    assert app.agent.sent == []
    assert "typed here, not used: you" in "\n".join(screen(app))


def test_always_needs_a_second_a_and_names_the_rule():
    app, clock = confirm_app(always="write_file(a.txt)")
    keys_in(app, clock, 103.0, "a")
    tick(app, clock, 103.5)
    assert app.agent.sent == []
    assert "▸ Wait…  a again allows write_file(a.txt) for the session · y once · n reject" in "\n".join(screen(app))
    tick(app, clock, 104.0)
    assert "▸ Apply? a again allows write_file(a.txt) for the session" in "\n".join(screen(app))
    keys_in(app, clock, 104.5, "a")
    tick(app, clock, 105.0)
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "always")]
    assert "allowed for the rest of the session" in "\n".join(screen(app))


def test_a_file_that_always_asks_says_why_beside_the_keys_and_a_adds_no_rule():
    app, clock = confirm_app(always="", always_asks="direnv runs it when you next cd here")
    tick(app, clock, 101.0)
    rows = screen(app)
    at = next(i for i, r in enumerate(rows) if "Apply? y approve" in r)
    assert rows[at - 1].strip() == "▸ always asks: direnv runs it when you next cd here"
    assert "a a always" not in rows[-2] and "y approve" in rows[-2]  # the bar offers no session rule
    keys_in(app, clock, 103.0, "a")
    tick(app, clock, 104.0)
    text = "\n".join(screen(app))
    assert "a again approves it once (no session rule: it always asks)" in text
    assert "for the session" not in text
    keys_in(app, clock, 104.5, "a")
    tick(app, clock, 105.0)
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "always")]
    text = "\n".join(screen(app))
    assert "approved by you, once (it always asks)" in text
    assert "allowed for the rest of the session" not in text


def test_the_bar_offers_the_decision_keys_only_when_they_would_count():
    """The question reads Wait… in the grace, after typing and while a letter is held; the
    status bar then offers Esc alone, never a y that would not be taken."""
    app, clock = confirm_app()
    tick(app, clock, 100.2)
    rows = screen(app)
    assert "Wait…" in "\n".join(rows) and rows[-2].rstrip().endswith("Esc stop"), rows
    assert "y approve" not in rows[-2] and "n reject" not in rows[-2]
    tick(app, clock, 101.0)
    rows = screen(app)
    assert "Apply? y approve" in "\n".join(rows) and "y approve" in rows[-2] and "n reject" in rows[-2], rows
    keys_in(app, clock, 102.0, "x")  # a stray key: typing, Wait again until a pause
    rows = screen(app)  # (the notice names the keys that decide: "y approves · n rejects …")
    assert not re.search(r"y approve\b", rows[-2]), rows
    tick(app, clock, 102.7)
    assert "y approve" in screen(app)[-2]


def test_the_bar_offers_a_session_rule_on_an_ordinary_question():
    app, clock = confirm_app()
    tick(app, clock, 101.0)
    assert "a a always" in screen(app)[-2]


def test_a_lone_a_lapses():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, "a")
    tick(app, clock, 109.0)
    assert "a again" not in "\n".join(screen(app)) and question(app).startswith("▸ Apply?")
    keys_in(app, clock, 110.0, "a")  # after the window: the first a again, not the second
    tick(app, clock, 111.0)
    assert app.agent.sent == []


def test_esc_stops_at_once_even_right_after_typing():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, "h", "m")
    keys_in(app, clock, 103.1, "esc")
    assert app.agent.sent == [(M.CANCEL,)]
    assert app.confirm is None


def test_ctrl_c_on_a_confirmation_stops_the_turn():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, "ctrl c")
    assert app.agent.sent == [(M.CANCEL,)]


def test_a_paste_on_a_confirmation_is_dropped_with_a_notice():
    app, clock = confirm_app()
    clock.now = 103.0
    app._input_filter(["begin paste", *"yes", "end paste"], [])
    tick(app, clock, 110.0)
    assert app.agent.sent == [] and app.prompt.edit_text == "my draft"
    assert "typed here, not used: yes" in "\n".join(screen(app))


def test_typing_just_before_the_preview_keeps_it_waiting_for_a_pause():
    clock = Clock(100.0)
    app = App(agent=FakeAgent(), outbox=Outbox(), model_name="m", ascii=False, depth=256,
              history=History(None), clock=clock)
    feed(app, (M.PHASE, "streaming"))
    keys_in(app, clock, 100.0, "h")  # typing into the prompt while the answer streams
    keys_in(app, clock, 100.1, "i")
    feed(app, (M.TOOL_CALL, {"id": "c1", "name": "write_file", "summary": "write_file a.txt"}),
         (M.CONFIRM, 3, {"id": "c1", "name": "write_file", "summary": "write_file a.txt", "lines": [("add", "+x")]}),
         (M.PHASE, "confirming"))
    clock.now = 100.1
    screen(app)
    app._after_draw()
    keys_in(app, clock, 100.65, "y")  # past the grace, but the typing goes on
    tick(app, clock, 101.0)
    assert app.agent.sent == [] and app.prompt.edit_text == "hi"


def test_terminal_reports_never_reach_the_widgets():
    """A cursor position report (ESC[12;5R) or device attributes (ESC[?1;2c) arrive as
    tuples; urwid's process_input raises TypeError on a tuple that is not a mouse event,
    which ended DashFloat. The input filter drops them, and they make the read's other keys
    "came together"."""
    app, clock = confirm_app()
    reports = [("cursor position", 4, 11), ("device attributes", (1, 2))]
    loop = urwid.MainLoop(urwid.SolidFill("x"), screen=urwid.display.raw.Screen())
    with pytest.raises(TypeError):
        loop.process_input(reports[:1])
    clock.now = 103.0
    assert app._input_filter(reports, []) == []
    assert app._input_filter([reports[0], "y"], []) == ["y"]
    app.root.keypress((80, 24), "y")
    tick(app, clock, 110.0)
    assert app.agent.sent == [] and "typed here, not used: y" in "\n".join(screen(app))


def test_the_whole_preview_pages_and_y_decides_from_it():
    full = [("stat", "new file · 500 lines · 4.3 KiB"), ("header", "--- /dev/null"), ("header", "+++ b/a.txt"),
            ("hunk", "@@ -0,0 +1,500 @@")] + [("add", f"+line {i}") for i in range(500)]
    window = full[:54] + [("marker", "… 450 more diff lines (500 added, 0 removed in all)")]
    app, clock = confirm_app(lines=window, full=full)
    assert "v views all 504 lines of the preview" in "\n".join(screen(app))
    keys_in(app, clock, 103.0, "v")
    rows = screen(app)
    assert "lines 1-" in rows[0] and "of 504" in rows[0]
    assert rows[1].strip() == "new file · 500 lines · 4.3 KiB"
    assert "line 499" not in "\n".join(rows)
    keys_in(app, clock, 103.2, "page down")
    rows = screen(app)
    assert "+line 20" in "\n".join(rows) and "+line 0\n" not in "\n".join(rows) + "\n"
    keys_in(app, clock, 103.4, "end")
    rows = screen(app)
    assert rows[21].strip() == "+line 499" and "of 504" in rows[0]
    keys_in(app, clock, 103.6, "home")
    assert screen(app)[1].strip() == "new file · 500 lines · 4.3 KiB"
    for _ in range(30):
        keys_in(app, clock, 103.7, "down")
    assert screen(app)[1].strip() == "+line 26"
    keys_in(app, clock, 104.0, "esc")  # closes the view; it does not stop the turn
    assert app.agent.sent == [] and app.view_widget is None
    assert "Apply? y approve" in "\n".join(screen(app))
    keys_in(app, clock, 105.0, "v")
    keys_in(app, clock, 106.0, "y")  # decides from the view too
    tick(app, clock, 106.5)
    assert app.agent.sent == [(M.CONFIRM_DECISION, 7, "approved")]
    assert app.view_widget is None and "Apply?" not in "\n".join(screen(app))


def test_the_view_scrolls_by_rows_through_a_wrapped_line():
    from dashfloat.ui.pager import PreviewView

    lines = [[("diff_add", "+first")], [("diff_add", "+" + "".join(f"{i:03d}" for i in range(300)))],
             [("diff_add", "+last")]]
    view = PreviewView("t", lines)
    size = (40, 6)  # 5 rows of lines under the title; the long line takes 23 rows at 40 columns
    rows = render_text(view, size)
    assert rows[1].startswith("+first") and rows[2].startswith("+000001002")
    assert rows[0].startswith("t · lines 1-2 of 3 · PgUp")  # the top line fits: no row count
    view.keypress(size, "page down")  # 4 rows on: inside the long line
    rows = render_text(view, size)
    assert rows[1].startswith("9040041042") and view.top == (1, 3)
    # every page of a long line looks alike: the title says where in it the view is
    assert rows[0].startswith("t · lines 2-2 of 3 · row 4/23 · q back")  # the paging keys gave way
    view.keypress(size, "end")
    rows = render_text(view, size)
    assert rows[-1].startswith("+last") and rows[-2].rstrip().endswith("299")
    view.keypress(size, "down")  # the end stays the end
    assert render_text(view, size) == rows
    view.keypress(size, "up")
    assert render_text(view, size)[-1].rstrip().endswith("299")
    view.keypress(size, "home")
    assert render_text(view, size)[1].startswith("+first")
    view.keypress(size, "up")
    assert view.top == (0, 0)


def test_the_view_of_a_short_preview_and_at_small_sizes():
    app, clock = confirm_app()
    keys_in(app, clock, 103.0, "v")
    for size in ((80, 24), (40, 12), (20, 5)):
        rows = render_text(app.root, size)
        assert len(rows) == size[1] and all(len(r) == size[0] for r in rows)
    assert "+x" in "\n".join(screen(app))
    keys_in(app, clock, 104.0, "q")
    assert app.view_widget is None


@pytest.mark.parametrize("name,width", [("realistic", 60), ("bench", 100)])
def test_streamed_rows_stay_as_shown_except_tables(name, width):
    """Streaming token by token, a terminal row once shown (other than the last, still
    growing one) is never changed later, except the one line a streaming table shows
    until it completes: what reached the terminal is not sent again (a table's source
    rows were, when they were shown as they came)."""
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
    assert all(text == "┄ table ┄" for text in changed), changed


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
    hanging = [("assistant_prefix", "● "), ("md_bullet", "• "), ("md_bullet", "12. "), ("md_quote", "│ "),
               ("system_error", "· "), ("user_prefix", "❯ ")]
    checked = 0
    for _ in range(400):
        line = [("", " " * rng.randrange(1, 6))] if rng.random() < 0.3 else []
        line += rng.sample(hanging, rng.choice([0, 0, 1, 2]))
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


def test_wrapped_text_keeps_its_indent_everywhere():
    """The first paragraph of an answer, a system entry's first line, list items and
    quotes wrap under their text, never back to column 0 or under the prefix."""
    app = make_app()
    stream_answer(app, "word " * 30 + "\n\n- item " + "text " * 20 + "\n\n> quoted " + "words " * 20)
    feed(app, (M.ASSISTANT_END, "done"), (M.SYSTEM, "error", "failure " * 20))
    rows = [r.rstrip() for r in screen(app, (40, 30))]
    answer = rows.index(next(r for r in rows if r.startswith("● word")))
    body = rows[answer + 1 : rows.index("", answer)]
    assert len(body) >= 3 and all(r.startswith("  word") for r in body), rows
    item = rows.index(next(r for r in rows if r.startswith("  • item")))
    assert rows[item + 1].startswith("    text"), rows
    quote = rows.index(next(r for r in rows if r.startswith("  │ quoted")))
    assert rows[quote + 1].startswith("  │ words"), rows
    error = rows.index(next(r for r in rows if r.startswith("· failure")))
    assert all(r.startswith("  failure") for r in rows[error + 1 : error + 4]), rows


def test_a_refused_enters_note_does_not_outlive_the_turn():
    app = make_app()
    feed(app, (M.USER, "first"), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
    app.prompt.insert_text("second")
    press(app.root, (80, 24), "enter")
    assert "a turn is running" in screen(app)[-2]
    assert app.prompt.edit_text == "second"  # kept, to send once the turn ends
    feed(app, (M.TOKEN, "done."), (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    status = screen(app)[-2]
    assert " idle " in status and "a turn is running" not in status, status


def test_prompt_lines_align_under_the_first_lines_text():
    app = make_app()
    app.prompt.insert_text("line one that is long enough to wrap at forty\nline two")
    rows = screen(app, (40, 12))
    prompt = rows[rows.index(next(r for r in rows if r.startswith("❯ "))):]
    assert prompt[0].startswith("❯ line one")
    assert all(r.startswith("  ") and r.strip() for r in prompt[1:]), prompt
    canvas = app.root.render((40, 12), focus=True)
    assert canvas.cursor == (len("  line two"), 11)  # after the last character typed


def test_counts_in_a_command_preview_are_drawn_as_markers_in_the_row_the_preview_and_the_pager():
    from dashfloat.tools import preview
    from dashfloat.tools.catalogue import summary
    from dashfloat.ui.theme import UNICODE
    from dashfloat.ui.transcript import ToolEntry

    command = "echo hi" + " " * 4000 + "; echo ⟨fake⟩"
    lines, full = preview.command_view(command, ".")
    entry = ToolEntry(id="c1", name="execute_command", summary=summary("execute_command", {"command": command}))
    entry.set_preview(lines, full)
    drawn = entry.lines(UNICODE, False)
    row = drawn[0]
    assert ("marker", "⟨4,000 spaces⟩") in row and "".join(t for _, t in row).endswith("; echo \\u27e8fake\\u27e9")
    (cmd_line,) = [ln for ln in drawn if ("diff_add", "echo hi") in ln]
    assert cmd_line[1:] == [("diff_add", "echo hi"), ("marker", "⟨4,000 spaces⟩"),
                            ("diff_add", "; echo \\u27e8fake\\u27e9")]  # a literal ⟨ is no marker
    assert [("diff_add", "echo hi"), ("marker", "⟨4,000 spaces⟩")] == entry.view_lines()[1][:2]
    other = ToolEntry(id="c2", name="write_file", summary="write_file ⟨4,000 spaces⟩.txt (1 B)")
    assert ("marker", "⟨4,000 spaces⟩") not in other.lines(UNICODE, False)[0]  # a file name is not a count


def test_the_heap_is_trimmed_once_after_a_turns_last_frame(monkeypatch):
    """After a big turn ends, the frame that shows its end gives the heap's free pages
    back (a huge answer's frames leave freed holes that RSS would count for the rest of
    the session); not during the turn, once per turn, and not after a small one."""
    import dashfloat.ui.app as A

    calls = []
    monkeypatch.setattr(A, "give_back_memory", lambda: calls.append(1))
    monkeypatch.setattr(A, "TRIM_AFTER", 500)
    app = make_app()
    stream_answer(app, "line of text\n" * 50)
    app._after_draw()
    assert calls == []  # streaming: nothing yet
    feed(app, (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    app._after_draw()
    app._after_draw()
    assert calls == [1]
    stream_answer(app, "short")
    feed(app, (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    app._after_draw()
    assert calls == [1]  # 5 characters: nothing worth it
    stream_answer(app, "line of text\n" * 50)
    feed(app, (M.ASSISTANT_END, "done"), (M.PHASE, "idle"))
    app._after_draw()
    assert calls == [1, 1]


def test_giving_back_memory_never_fails():
    from dashfloat.ui.app import give_back_memory

    give_back_memory()
    give_back_memory()


def test_the_first_key_typed_starts_the_warm_up_once_after_its_frame(monkeypatch):
    """Memory at rest (issue 16): the Markdown parser and the tools load when a person starts
    typing, not at start-up; after the frame that shows the key, once; a resize is no key."""
    import threading

    from dashfloat.ui import app as app_module

    warmed = []
    done = threading.Event()
    monkeypatch.setattr(app_module, "warm_imports", lambda: (warmed.append(1), done.set()))
    app = make_app()
    app.apply((M.PHASE, "idle"))
    app._input_filter(["window resize"], [])
    app._after_draw()
    assert (app.agent.prepared, warmed) == (0, [])
    app._input_filter(["h"], [ord("h")])
    assert (app.agent.prepared, warmed) == (0, [])  # not before the frame that shows it
    app._after_draw()
    assert done.wait(10) and (app.agent.prepared, warmed) == (1, [1])
    for key in "ello":
        app._input_filter([key], [ord(key)])
        app._after_draw()
    assert (app.agent.prepared, warmed) == (1, [1])


def test_a_streaming_table_is_held_back_until_it_completes_unless_the_stream_goes_quiet():
    """A table's rows change width with every row: while it streams it shows one line and
    comes whole when it completes (its source rows are not sent, then sent again). A quiet
    stream shows the rows as they are, and from then on they stay (nothing taken back)."""
    app = make_app()
    stream_answer(app, "Settings:\n\n| a | b |\n| --- | --- |\n| one | two |\n")
    text = "\n".join(screen(app))
    assert "┄ table ┄" in text and "| one |" not in text and "Settings:" in text
    feed(app, (M.TOKEN, "| three | four |\n\nAfter."))
    text = "\n".join(screen(app))
    assert "┄ table ┄" not in text and "| one |" not in text
    assert "one   │ two" in text and "three │ four" in text
    # the next table goes quiet half-way: its rows show as they came, and stay
    feed(app, (M.TOKEN, "\n\n| x | y |\n| --- | --- |\n| 1 | 2 |\n"))
    assert "┄ table ┄" in "\n".join(screen(app))
    app._tick(None, None)
    app._tick(None, None)  # a tick with nothing new: quiet
    assert "| 1 | 2 |" in "\n".join(screen(app))
    feed(app, (M.TOKEN, "| 3 | 4 |\n"))
    text = "\n".join(screen(app))
    assert "| 1 | 2 |" in text and "| 3 | 4 |" in text and "┄ table ┄" not in text


def test_a_long_streaming_table_shows_its_rows_after_forty():
    from dashfloat.ui.transcript import TABLE_HELD_ROWS

    app = make_app()
    rows = "".join(f"| r{i} | v{i} |\n" for i in range(TABLE_HELD_ROWS))
    stream_answer(app, "| k | v |\n| --- | --- |\n" + rows[: rows.index(f"| r{TABLE_HELD_ROWS - 3} ")])
    assert "┄ table ┄" in "\n".join(screen(app))
    feed(app, (M.TOKEN, rows[rows.index(f"| r{TABLE_HELD_ROWS - 3} "):]))
    text = "\n".join(screen(app, (80, 60)))
    assert "┄ table ┄" not in text and f"| r{TABLE_HELD_ROWS - 1} | v{TABLE_HELD_ROWS - 1} |" in text


def test_while_a_big_block_is_taken_in_parts_frames_are_drawn_for_keys_and_every_stream_frame():
    from dashfloat.ui.app import STREAM_FRAME

    clock = [100.0]
    app = make_app()
    app.clock = lambda: clock[0]
    app._after_draw()  # a frame at 100.0
    assert not app.hold_frame()  # nothing being caught up: every frame is drawn
    app._catch_alarm = object()  # parts are being taken
    assert app.hold_frame()
    app._input_filter(["x"], [ord("x")])
    assert not app.hold_frame()  # a key: its frame now
    app._after_draw()
    assert app.hold_frame()
    clock[0] += STREAM_FRAME
    assert not app.hold_frame()  # and the stream's frame


def test_the_loop_runs_with_a_short_gil_switch_interval_and_gives_it_back():
    """While the app runs, a streamer thread parsing a fast server's SSE holds the GIL at
    most SWITCH_INTERVAL each time the loop lets it go (a key's wake-up, its reads, the
    frame's write); Python's 5 ms cost a key up to ~30 ms (app.SWITCH_INTERVAL says more)."""
    import sys

    from dashfloat.ui import app as app_module

    seen = []

    class StubLoop:
        after_first_frame = None

        def run(self):
            seen.append(sys.getswitchinterval())

    before = sys.getswitchinterval()
    app = make_app()
    app.loop = StubLoop()
    r, w = os.pipe()
    app._sig_fd = w  # (build_loop's watch_pipe)
    try:
        app.run()
    finally:
        os.close(r)
        os.close(w)
    assert seen == [pytest.approx(app_module.SWITCH_INTERVAL)]
    assert app_module.SWITCH_INTERVAL <= 0.001 < before
    assert sys.getswitchinterval() == before


class RecordingLoop:
    """A stand-in main loop that records the delays of the alarms the App sets."""

    def __init__(self):
        self.alarms = []

    def set_alarm_in(self, delay, callback):
        self.alarms.append(delay)
        return len(self.alarms)

    def draw_screen(self):
        pass


def test_a_stream_is_ticked_once_a_frame_and_a_silence_every_tick():
    """While text streams, the tick after a frame of it comes STREAM_FRAME later (no pass of
    the loop between two frames: the stream's CPU); in a silence the spinner steps every TICK;
    text drained by the tick does not schedule a tick of its own."""
    from dashfloat.ui.app import STREAM_FRAME, TICK

    clock = [100.0]
    app = make_app()
    app.clock = lambda: clock[0]
    app.loop = loop = RecordingLoop()
    app._agent_started = True
    feed(app, (M.USER, "hello"), (M.PHASE, "waiting"), (M.ASSISTANT_START,))
    assert loop.alarms == [TICK]  # the turn started: ticking
    app.outbox.post((M.TOKEN, "Some text that streams "))
    app._tick(None, None)
    assert loop.alarms[1:] == [STREAM_FRAME]  # text moved: the next tick is the next frame
    assert "Some text that" in "\n".join(screen(app))
    clock[0] += STREAM_FRAME
    app.outbox.post((M.TOKEN, "and more "))
    app._tick(None, None)
    assert loop.alarms[2:] == [STREAM_FRAME]
    clock[0] += STREAM_FRAME
    app._tick(None, None)  # nothing new: the quiet stream shows its held word
    clock[0] += STREAM_FRAME
    spin = app.spin
    app._tick(None, None)  # still nothing: a silence, the spinner turns every TICK
    assert loop.alarms[-1] == TICK and app.spin == spin + 1


def test_an_answers_first_words_are_shown_as_they_come_and_the_rest_at_the_ticks_pace():
    """Text that comes while the stream is cold (an answer's first words, text after a
    silence of a STREAM_FRAME) rings and is shown at once, not up to a TICK later; a word
    being typed shows nothing, so the text after it rings too; once a frame showed text, the
    next waits for the tick."""
    from dashfloat.ui.app import QUIET_KINDS, STREAM_FRAME, TICK

    clock = [100.0]
    app = make_app()
    app.clock = lambda: clock[0]
    app.loop = loop = RecordingLoop()
    app._agent_started = True
    app.outbox.quiet_kinds = QUIET_KINDS  # as cli.py makes it
    r, w = os.pipe()
    os.set_blocking(r, False)
    app.outbox.attach(w)

    def rang():
        try:
            return bool(os.read(r, 64))
        except BlockingIOError:
            return False

    def shown():
        return "\n".join(screen(app))

    try:
        app._drain()
        rang()
        feed(app, (M.USER, "hello"), (M.PHASE, "waiting"), (M.ASSISTANT_START,))
        assert loop.alarms == [TICK]
        clock[0] += 0.03
        app.outbox.post((M.TOKEN, "Hel"))
        assert rang()  # cold: the first text rings
        app._drain()
        assert "Hel" not in shown()  # a word being typed: nothing to show yet
        app.outbox.post((M.TOKEN, "lo there "))
        assert rang()  # still cold: no frame showed any of it
        app._drain()
        assert "Hello there" in shown()  # at once, no tick between
        assert loop.alarms == [TICK]  # and no tick of its own
        app.outbox.post((M.TOKEN, "and more "))
        assert not rang()  # warm: the rest waits for the tick
        app._drain()
        assert "and more" not in shown()
        clock[0] += STREAM_FRAME
        app._tick(None, None)
        assert "Hello there and more" in shown() and loop.alarms[-1] == STREAM_FRAME
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # quiet: the held word's frame (nothing held here)
        app.outbox.post((M.TOKEN, "then "))
        assert not rang()  # a STREAM_FRAME after that frame is not over yet
        app._drain()
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # its frame
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # quiet: the held word's frame
        app.outbox.post((M.TOKEN, "too soon "))
        assert not rang()
        app._drain()
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # its frame
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # the held word's frame
        clock[0] += STREAM_FRAME
        app._tick(None, None)  # a STREAM_FRAME without text: cold again
        assert "too soon" in shown() and loop.alarms[-1] == TICK
        app.outbox.post((M.TOKEN, "after a pause "))
        assert rang()
        app._drain()
        assert "after a pause" in shown()
        app.outbox.post((M.TOKEN, "and the end. "))
        assert not rang()
        app._drain()
        # the next answer comes a moment after this one's last frame (a prompt sent at once,
        # the next episode of a turn): cold all the same
        clock[0] += 0.01
        feed(app, (M.ASSISTANT_END, "done"), (M.USER, "again"), (M.ASSISTANT_START,))
        app.outbox.post((M.TOKEN, "Second answer "))
        assert rang()
        app._drain()
        assert "Second answer" in shown()
        # an open span holds its text back: it rings for COLD_TRIES frames that show nothing,
        # then waits for the tick (a held line must not cost a frame per token)
        feed(app, (M.ASSISTANT_END, "done"), (M.USER, "third"), (M.ASSISTANT_START,))
        from dashfloat.ui.app import COLD_TRIES

        app.outbox.post((M.TOKEN, "`an open span"))
        for _ in range(COLD_TRIES):
            assert rang()
            app._drain()
            app.outbox.post((M.TOKEN, " still open"))
        assert not rang()
        assert "an open span" not in shown()
    finally:
        os.close(r)
        os.close(w)


def test_the_collector_runs_again_from_the_first_frame_with_start_up_frozen():
    """cli.main turns the garbage collector off for start-up; the first frame turns it on,
    after freezing what start-up made (a full collection never walks it)."""
    import gc

    seen = []

    class StubLoop:
        after_first_frame = None

        def run(self):
            seen.append(gc.isenabled())
            self.after_first_frame()
            seen.append((gc.isenabled(), gc.get_freeze_count() > 0))

    app = make_app()
    app.loop = StubLoop()
    r, w = os.pipe()
    app._sig_fd = w
    gc.disable()
    try:
        app.run()
    finally:
        gc.enable()
        gc.unfreeze()
        os.close(r)
        os.close(w)
    assert seen == [False, (True, True)]


def test_the_rows_a_turn_laid_out_are_laid_out_again_when_it_ends():
    """After a turn's last frame the pane lays its rows out again (lay_out_again: at once, a
    screen's rows lie together in memory), once; the screen is the same."""
    app = make_app()
    feed(app, (M.PHASE, "streaming"), (M.USER, "hi there"), (M.ASSISTANT_START,),
         (M.TOKEN, "Hello **there**.\n\n- one\n- two\n\nMore text."))
    screen(app)
    pane = app.view.pane
    user_rows = pane._cache[0][1]
    feed(app, (M.ASSISTANT_END, "done"))
    assert pane._cache[0][1] is user_rows  # (a message alone keeps them)
    shown = screen(app)
    feed(app, (M.PHASE, "idle"))
    assert pane._cache[0][1] is user_rows  # not before the turn's last frame: its rows may still change
    screen(app)
    app._after_draw()  # the loop calls this after a frame
    again = pane._cache[0][1]
    assert again is not user_rows and again == user_rows  # laid out again
    assert screen(app)[:-2] == shown[:-2]  # (the status row changed: idle)
    app._after_draw()
    assert pane._cache[0][1] is again  # once a turn
