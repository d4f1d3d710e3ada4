"""A long day (issue 16 §2): a turn, a key at the prompt and PgUp cost the same after
hundreds of turns as after a few. Counted, not timed: the lines of Python the front end
runs and the built-ins it calls for the same turn (the same messages, the same frames)
do not grow with the transcript. `make bench` (tests/bench/longday_bench.py) times the same in a pty."""

from __future__ import annotations

import sys
from collections import Counter

from urwid.testing import press, render_text

from dashfloat import messages as M
from dashfloat.history import History
from dashfloat.ui.app import App
from dashfloat.ui.bridge import Outbox
from dashfloat.ui.widgets import TranscriptPane

SIZE = (120, 40)
ANSWER = ("Here is what this turn found: the loader reads each layer.\n\n"
          + "\n".join(f"- step {i}: keep the first value of `key_{i}`" for i in range(15))
          + "\n\n```python\ndef turn():\n"
          + "\n".join(f"    value_{i} = compute({i}, key='layer')  # line {i}" for i in range(40))
          + "\n```\n\nThat is all for this turn.")


class _Agent:
    def send(self, msg):
        pass

    def start(self):
        pass


def _turn(app: App, n: int, answer: str = ANSWER) -> None:
    """One turn as the agent reports it: the prompt, a short text with two reads that run
    without a question, then the answer, streamed in pieces, a frame after each."""
    cid = f"c{n}"
    for msg in ((M.USER, "check the loader again"), (M.PHASE, "waiting"), (M.ASSISTANT_START,),
                (M.PHASE, "streaming"), (M.TOKEN, "I will look at the code first."), (M.ASSISTANT_END, "done"),
                (M.TOOL_CALL, {"id": cid + "r", "name": "read_file", "summary": "read_file src/mod1.py"}),
                (M.TOOL_CALL, {"id": cid + "l", "name": "list_directory", "summary": "list_directory src"}),
                (M.TOOL_RESULT, {"id": cid + "r", "status": "ok", "text": "ok: 80 lines"}),
                (M.TOOL_RESULT, {"id": cid + "l", "status": "ok", "text": "ok: 6 entries"}),
                (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming")):
        app.apply(msg)
    app.refresh()
    render_text(app.root, SIZE)
    for i in range(0, len(answer), 700):
        app.apply((M.TOKEN, answer[i : i + 700]))
        app.refresh()
        render_text(app.root, SIZE)
    for msg in ((M.ASSISTANT_END, "done"), (M.USAGE, {"total_tokens": 1500}), (M.PHASE, "idle")):
        app.apply(msg)
    app.refresh()
    render_text(app.root, SIZE)


def _moment(app: App) -> None:
    """A key typed and taken back at the prompt, two pages up and back to the end."""
    for keys in (("x",), ("backspace",), ("page up",), ("page up",), ("end",)):
        press(app.root, SIZE, *keys)
        render_text(app.root, SIZE)


def _work(fn) -> Counter:
    """The lines of Python `fn()` runs (by file and function) and the built-ins it calls,
    counted: a loop over the transcript shows up as lines run, a call as a call."""
    counts: Counter = Counter()

    def local(frame, event, arg):
        if event == "line":
            counts[(frame.f_code.co_filename, frame.f_code.co_name)] += 1
        return local

    def prof(frame, event, arg):
        if event == "c_call":
            counts[("builtin", getattr(arg, "__qualname__", repr(arg)))] += 1

    sys.setprofile(prof)
    sys.settrace(lambda frame, event, arg: local)
    try:
        fn()
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return counts


def test_a_turn_a_key_and_pgup_cost_the_same_after_250_turns_as_after_30():
    app = App(agent=_Agent(), outbox=Outbox(), model_name="m", ascii=False, depth=256, history=History(None))
    app.apply((M.PHASE, "idle"))  # the agent's start-up (its first idle freezes start-up's objects)
    render_text(app.root, SIZE)
    # past the lazy imports, the first-use caches and the bound of the pane's row cache
    # (TranscriptPane.CACHE_LINES): from there a turn drops as many cached rows as it adds
    n = 0
    while len(app.view.pane.lines) <= TranscriptPane.CACHE_LINES:
        n += 1
        _turn(app, n)
        _moment(app)
    early_turn, early_moment = _work(lambda: _turn(app, n + 1)), _work(lambda: _moment(app))
    lines_early = len(app.view.pane.lines)
    for k in range(n + 2, 250):
        _turn(app, k)
    _moment(app)
    late_turn, late_moment = _work(lambda: _turn(app, 250)), _work(lambda: _moment(app))
    lines_late = len(app.view.pane.lines)
    assert lines_late > 7 * lines_early and lines_late > 18_000  # the transcript grew: ~18,000 lines
    for early, late, what in ((early_turn, late_turn, "a turn"), (early_moment, late_moment, "a key and PgUp")):
        grew = {k: (early[k], v) for k, v in late.items() if v > early[k]}
        assert sum(late.values()) <= sum(early.values()), f"{what} does more work late in the day: {grew}"


def test_the_garbage_collector_does_not_walk_the_transcript():
    """A full collection walks every object the collector tracks: with a list per line a
    long day's transcript (100,000 lines) was in every one, a stall of a few hundred ms
    that grew with it. The lines an answer keeps are tuples of strings, which it stops
    tracking: what it tracks grows with the entries, not with their lines."""
    import gc

    app = App(agent=_Agent(), outbox=Outbox(), model_name="m", ascii=False, depth=256, history=History(None))
    app.apply((M.PHASE, "idle"))  # the agent's start-up (its first idle freezes start-up's objects)
    render_text(app.root, SIZE)
    answer = ANSWER.replace("```\n", "\n".join(f"    more_{i} = compute({i})" for i in range(250)) + "\n```\n")
    n = 0
    while len(app.view.pane.lines) <= 2 * TranscriptPane.CACHE_LINES:  # the rows it keeps are bounded
        n += 1
        _turn(app, n, answer)
    gc.collect()
    tracked, lines = len(gc.get_objects()), len(app.view.pane.lines)
    for k in range(n + 1, n + 21):
        _turn(app, k, answer)
    gc.collect()
    more_tracked, more_lines = len(gc.get_objects()) - tracked, len(app.view.pane.lines) - lines
    assert more_lines > 20 * 300
    # about 40 a turn (its five entries and their lists) for 330 lines; with a list per line 370
    assert more_tracked < 0.25 * more_lines, f"{more_tracked} more objects tracked for {more_lines} more lines"
    kept = [line for line in app.view.pane.lines if line]
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks (not the frozen)
    assert sum(id(line) in walked for line in kept) < 0.05 * len(kept)


def test_after_the_warm_up_a_full_collection_does_not_walk_the_start_up_objects():
    """What start-up made lives as long as the process: warm_imports moves it out of the
    collector's sight, so a full collection walks what the session made since."""
    import gc

    from dashfloat.ui.app import warm_imports

    gc.collect()
    before = len(gc.get_objects())
    try:
        warm_imports()
        assert len(gc.get_objects()) < before / 10, (before, len(gc.get_objects()))
    finally:
        gc.unfreeze()
