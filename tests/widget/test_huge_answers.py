"""Huge answers in the transcript model (issue 16): a block that grows past BIG_BLOCK is
shown line by line, plain, and a frame's work depends on what arrived, not on the size
of the answer."""

from __future__ import annotations

import random
import statistics
import time

import pytest

from dashfloat.ui import markdown, theme
from dashfloat.ui import transcript as T
from dashfloat.ui.widgets import TranscriptView


def _texts(lines):
    return ["".join(str(t) for _a, t in T.segments(line)) for line in lines]


def catch_up(model, view) -> int:
    """Sync the view, and again while an answer is behind (took FRAME_BUDGET of a big block
    and more waits), as App.refresh and App._catch_up do; the number of syncs."""
    view.sync(model.entries, model.touched)
    n = 1
    while behind := [e for e in model.entries if getattr(e, "behind", False)]:
        for e in behind:
            e.version += 1
            model.touch(e)
        view.sync(model.entries, model.touched)
        n += 1
    return n


def stream(text: str, cuts: list[int], end: str = "done", frames: list | None = None):
    """An AssistantEntry fed `text` in pieces ending at `cuts`, its lines asked for after
    every piece (a frame, and the parts the frame left: `behind`); the lines at the end.
    `frames` gets the lines of every frame before the end."""
    e = T.AssistantEntry()
    prev = 0
    for c in [*cuts, len(text)]:
        if c > prev:
            e.add_content(text[prev:c])
            prev = c
        lines = e.lines(theme.UNICODE, False)
        if frames is not None:
            frames.append(lines)
        while e.behind:
            lines = e.lines(theme.UNICODE, False)
            if frames is not None:
                frames.append(lines)
    e.end(end)
    lines = e.lines(theme.UNICODE, False)
    while e.behind:
        lines = e.lines(theme.UNICODE, False)
    return lines


def huge_text(seed: int) -> str:
    rng = random.Random(seed)
    parts = ["# Title\n\nA *short* paragraph first.\n\n"]
    parts.append(" ".join(rng.choice(["alpha", "beta", "**gamma**", "`delta`"]) for _ in range(9000)) + "\n\n")
    parts.append("```python\n" + "".join(f"x_{i} = {i}  # line {i}\n" for i in range(2500)) + "```\n")
    parts.append("Between the two.\n\n")
    parts.append("".join(f"row {i}: plain text\n" for i in range(2500)))
    parts.append("\nThe end, with `code`.")
    return "".join(parts)


@pytest.mark.parametrize("seed", range(3))
def test_the_final_lines_do_not_depend_on_how_the_answer_arrived(seed):
    text = huge_text(seed)
    assert len(text) > 3 * T.BIG_BLOCK
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), 40))
    small = sorted(rng.sample(range(1, len(text)), 150))
    whole = stream(text, [])
    assert _texts(stream(text, cuts)) == _texts(whole)
    assert _texts(stream(text, small)) == _texts(whole)
    assert stream(text, small) == whole


def test_a_big_block_is_shown_plain_and_whole():
    body = "".join(f"line {i} with **stars**\n" for i in range(3000))
    lines = stream("Intro.\n\n" + body + "\nAfter **it**.", [100, 5000, 40000])
    texts = _texts(lines)
    assert texts[0].endswith("Intro.")
    assert any(t.strip() == "line 0 with **stars**" for t in texts)  # plain: the markers stay
    assert texts.count("") >= 2  # a blank line before and after the big block
    assert texts[-1].strip() == "After it."  # Markdown again after it
    assert sum(1 for t in texts if t.strip().startswith("line ")) == 3000


def test_a_big_code_block_keeps_its_lines_and_ends_at_its_fence():
    code = "".join(f"    value_{i} = compute({i})\n" for i in range(3000))
    text = "```python\ndef run():\n" + code + "```\n\nDone."
    lines = stream(text, [50, 70_000, 90_000])
    texts = _texts(lines)
    assert texts[0].endswith("python")
    assert sum(1 for t in texts if "value_" in t) == 3000
    assert texts[-1].strip() == "Done."
    assert not any("```" in t for t in texts)


def test_an_answer_cut_inside_a_big_block_shows_all_it_got():
    text = "x" * 100_000
    lines = stream(text, [40_000, 70_000], end="cancelled")
    assert sum(len(t.strip()) for t in _texts(lines)[:-1]) >= 100_000 + 1  # the glyph too
    assert "cancelled" in _texts(lines)[-1]


@pytest.mark.parametrize("kind", ["one_line", "words", "lines", "code"])
def test_a_frame_costs_what_arrived(kind):
    """1 MB arriving in 10 KB pieces, a frame (model -> view -> rows) after each: frames
    of the last half cost what frames of the first do (generous bounds: 5x, 10 ms; none
    over 0.25 s, a garbage collection included)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from huge_bench import answer

    text = answer(kind)
    model = T.TranscriptModel()
    view = TranscriptView(theme.UNICODE)
    model.user("go")
    model.start_assistant()
    times = []
    for i in range(0, len(text), 10_000):
        model.token(text[i : i + 10_000])
        t0 = time.process_time()  # CPU time: what this process did, whatever the load
        view.sync(model.entries, model.touched)
        view.pane.render((120, 37))
        times.append(time.process_time() - t0)
    model.end_assistant("done")
    t0 = time.process_time()
    catch_up(model, view)
    canvas = view.pane.render((120, 37))
    last = time.process_time() - t0
    shown = b"".join(b"".join(r for _a, _c, r in row) for row in canvas.content())
    assert b"Hq7HugeDone" in shown
    early = statistics.median(times[5:15])
    late = statistics.median(times[len(times) // 2 :])
    assert late < max(0.01, 5 * early), (early, late)  # no growth with the answer's size
    assert max(times[1:]) < 0.25 and last < 0.5  # (the first frame imports the parser)


def frame_allocations(text: str, sync) -> tuple:
    """An answer streamed 16 KB a frame (`sync(model, view)`, then the pane drawn at
    120x37): the model, the view, and (offset, bytes the frame allocated above what it
    kept before it) for each frame."""
    import gc
    import tracemalloc

    model = T.TranscriptModel()
    view = TranscriptView(theme.UNICODE)
    model.user("go")
    model.start_assistant()
    extra = []
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(0, len(text), 16_000):
            model.token(text[i : i + 16_000])
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            sync(model, view)
            view.pane.render((120, 37))
            extra.append((i, tracemalloc.get_traced_memory()[1] - before))
    finally:
        tracemalloc.stop()
    return model, view, extra


@pytest.mark.parametrize("kind", ["one_line", "words", "lines", "code"])
def test_a_frame_of_an_answer_of_megabytes_allocates_what_arrived(kind):
    """4 MiB answers (the ADR's cap: on one line, words, 200,000 lines, a code block of
    40,000 lines, 2.6 MB), 16 KB a frame: what a frame allocates beyond what it keeps does not grow
    with the answer. It copied the whole line a frame (the answer's text joined, the
    visible line grown by `+`, the layout's rows copied: a peak of 5 MiB above what it
    kept near the cap), and the list of the answer's lines (lines() and the view: 2 MiB
    for 200,000 lines). Allocation, not time: the same figure on a busy machine."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from huge_bench import MARK, answer

    text = answer(kind, 4.19)
    model, view, extra = frame_allocations(text, lambda model, view: view.sync(model.entries, model.touched))
    model.end_assistant("done")
    catch_up(model, view)
    canvas = view.pane.render((120, 37))
    shown = b"".join(b"".join(r for _a, _c, r in row) for row in canvas.content())
    assert MARK.encode() in shown  # the end of the answer is on screen
    late = [b for at, b in extra if at > len(text) * 3 // 4]
    assert len(late) > 30 and max(late) < 1 << 20, max(late) / (1 << 20)


def test_a_frame_of_an_answer_of_many_paragraphs_allocates_what_arrived():
    """1.5 MB of ordinary paragraphs (Markdown, each block small), 16 KB a frame, the
    view caught up every frame (as App._catch_up): a frame reads the window it renders,
    not the whole answer joined (it allocated the answer's size every frame)."""
    para = "Some *words* and `code` in a paragraph that goes on for a while, " * 6 + "\n\n"
    text = para * (1_500_000 // len(para)) + "The end."
    model, view, extra = frame_allocations(text, catch_up)
    model.end_assistant("done")
    catch_up(model, view)
    assert [t.strip() for t in _texts(view.pane.lines)[-2:]] == ["", "The end."]
    late = [b for at, b in extra if at > len(text) * 3 // 4]
    assert len(late) > 20 and max(late) < 1 << 20, max(late) / (1 << 20)


def test_code_beyond_the_highlight_bound_is_plain():
    code = "def f():\n    return 1\n" * (markdown.HIGHLIGHT_MAX // 20)
    lines = markdown.render("```python\n" + code + "```\n")
    assert {a for line in lines for a, _t in line} <= {"", "md_code_lang", "md_code_block"}
    small = markdown.render("```python\ndef f():\n    return 1\n```\n")
    assert "code_keyword" in {a for line in small for a, _t in line}


@pytest.mark.parametrize("end", ["done", "cancelled", "error"])
def test_an_ended_answer_keeps_its_lines_not_its_text(end):
    """Memory follows what is kept (issue 16): once an answer ended and all of it is laid
    out as lines, the entry lets its source go; the lines stay the same, for a redraw
    and for the reasoning shown or hidden (Ctrl-T) alike."""
    text = "Intro *here*.\n\n" + "".join(f"row {i}: plain\n" for i in range(2000)) + "\nThe `end`."
    e = T.AssistantEntry()
    e.add_reasoning("first this\nthen that")
    for i in range(0, len(text), 5000):
        e.add_content(text[i : i + 5000])
        e.lines(theme.UNICODE, False)
    e.end(end)
    final = e.lines(theme.UNICODE, False)
    assert not e._src and e.text == ""
    assert e.lines(theme.UNICODE, False) == final
    shown = e.lines(theme.UNICODE, True)
    assert shown[-len(final) + 1 :] == final[1:] and "then that" in _texts(shown)[2]
    assert _texts(final)[-1 if end == "done" else -2].strip() == "The end."
    assert stream(text, [5000], end=end) == final[1:]  # as if it had come at once, no reasoning


@pytest.mark.parametrize("fenced", [False, True])
def test_a_long_transcript_costs_memory_per_line_kept_not_per_line_shown(fenced):
    """Memory grows with what is kept (issue 16): 30,000 short lines streamed through the
    model and the view, a frame after each piece, then ended: what stays is the lines
    (the text, a few references each) and a bounded cache of rows: under 250 bytes a
    line of 38 characters (about 180 plain, 230 in a code block; it was 340 and 360: a
    list and a tuple per line, and the whole source kept beside them)."""
    import gc
    import tracemalloc

    n = 30_000
    body = "".join(f"line {i:05d}: the quick brown fox jumps\n" for i in range(n))
    text = ("```text\n" + body + "```\n\nDone.") if fenced else (body + "\nDone.")
    pieces = [text[i : i + 20_000] for i in range(0, len(text), 20_000)]
    del body, text
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        model = T.TranscriptModel()
        view = TranscriptView(theme.UNICODE)
        model.user("go")
        model.start_assistant()
        while pieces:
            model.token(pieces.pop(0))
            view.sync(model.entries, model.touched)
            view.pane.render((120, 37))
        model.end_assistant("done")
        view.sync(model.entries, model.touched)
        canvas = view.pane.render((120, 37))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert b"Done." in b"".join(b"".join(r for _a, _c, r in row) for row in canvas.content())
    assert len(view.pane.lines) > n
    assert kept / n < 250, f"{kept / n:.0f} bytes a line"


def test_a_big_block_that_arrives_at_once_is_made_into_lines_a_piece_at_a_time():
    """30,000 lines of a code block in one frame (a fast stream): the temporaries of
    making them into lines stay bounded (a piece at a time, BIG_PIECE): the peak is
    under 1 MiB above what is kept (it was 3.5 MiB: a list and two tuples a line at
    once, for the RSS peak of the 50,000-line bench answer)."""
    import gc
    import tracemalloc

    text = "```text\n" + "".join(f"{i:06d} ok\n" for i in range(30_000)) + "```\n\nDone."
    gc.collect()
    tracemalloc.start()
    try:
        model = T.TranscriptModel()
        view = TranscriptView(theme.UNICODE)
        model.user("go")
        model.start_assistant()
        model.token(text)
        view.sync(model.entries, model.touched)
        view.pane.render((120, 37))
        model.end_assistant("done")
        catch_up(model, view)
        view.pane.render((120, 37))
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(1 for line in view.pane.lines if "ok" in "".join(t for _a, t in T.segments(line))) == 30_000
    assert peak - kept < 1 << 20, (peak - kept) / (1 << 20)


@pytest.mark.parametrize("kind", ["lines", "code"])
def test_a_big_block_that_arrives_at_once_is_taken_a_frame_budget_at_a_time(kind):
    """A fast server delivers a megabyte of lines between two frames: one frame takes at
    most FRAME_BUDGET of it (a key typed meanwhile waits for that part, not for the whole:
    the echo of issue 16), the rest in the following parts, and nothing is lost."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from huge_bench import MARK, answer

    text = answer(kind)
    model = T.TranscriptModel()
    view = TranscriptView(theme.UNICODE)
    model.user("go")
    e = model.start_assistant()
    model.token(text)
    taken = []
    view.sync(model.entries, model.touched)
    while True:
        taken.append(e._big_pos)
        if not e.behind:
            break
        e.version += 1
        model.touch(e)
        view.sync(model.entries, model.touched)
    steps = [b - a for a, b in zip([0, *taken], taken, strict=False)]
    assert len(steps) > len(text) // T.FRAME_BUDGET // 2 and max(steps) <= T.FRAME_BUDGET + 80, steps[:5]
    model.end_assistant("done")
    assert catch_up(model, view) >= 1
    shown = b"".join(b"".join(r for _a, _c, r in row) for row in view.pane.render((120, 37)).content())
    assert MARK.encode() in shown
    assert sum(1 for line in view.pane.lines if line) > text.count("\n") * 0.9


def test_many_small_blocks_that_arrive_at_once_are_rendered_a_frame_budget_at_a_time():
    """Thousands of short paragraphs between two frames (none of them a big block): one
    frame renders at most MARKDOWN_BUDGET of them (it rendered all: 60-80 ms a frame, and a
    key waited for it), the following frames the rest, and the end is the same."""
    text = "".join(f"Paragraph {i} with *some* `code` and words.\n\n" for i in range(6000)) + "The end."
    model = T.TranscriptModel()
    view = TranscriptView(theme.UNICODE)
    model.user("go")
    e = model.start_assistant()
    model.token(text)
    view.sync(model.entries, model.touched)
    assert e.behind and e._done_upto <= T.MARKDOWN_BUDGET + 100
    assert e._tail_src == ""  # the rest is not rendered as the tail meanwhile (it was, whole)
    model.end_assistant("done")
    assert catch_up(model, view) >= len(text) // T.MARKDOWN_BUDGET
    assert _texts(e.lines(theme.UNICODE, False)) == _texts(stream(text, []))
    assert "The end." in "\n".join(_texts(view.pane.lines[-3:]))


@pytest.mark.parametrize("kind", ["lines", "paragraphs", "mixed"])
def test_text_that_arrives_at_once_is_scanned_a_window_a_call(kind, monkeypatch):
    """A fast server's 400 KB between two frames: finding the completed blocks scanned all
    of it in one call (~250 ns a character: one 50,000-line paragraph held a key 50 ms
    at its first frame). Each call now reads at most SCAN_WINDOW (to the end of a line),
    and the lines are those of a scan without a window, however the answer arrived."""
    if kind == "lines":
        text = "".join(f"line {i:05d}: the quick brown fox jumps\n" for i in range(20_000)) + "END"
    elif kind == "paragraphs":
        text = "".join(f"Paragraph {i} with *some* `code`.\n\n" for i in range(5000)) + "END"
    else:
        text = huge_text(7) * 3
    spans = []
    real = markdown.completed_prefix

    def spy(s, *, start=0, first=False, end=None):
        spans.append((len(s) if end is None else end) - start)
        return real(s, start=start, first=first, end=end)

    monkeypatch.setattr(markdown, "completed_prefix", spy)
    windowed = stream(text, [])
    longest = max(len(line) for line in text.split("\n")) + 1
    assert max(spans) <= T.SCAN_WINDOW + longest, max(spans)
    rng = random.Random(kind)
    pieces = stream(text, sorted(rng.sample(range(1, len(text)), 30)))
    monkeypatch.setattr(T, "SCAN_WINDOW", 1 << 40)  # the whole text each call, as before
    spans.clear()
    whole = stream(text, [])
    assert max(spans) > 10 * T.BIG_BLOCK  # (the spy saw the unbounded scan)
    assert windowed == whole and pieces == whole


def test_blank_line_finds_what_the_look_behind_pattern_found():
    """transcript.blank_line (two plain patterns) against the one-pattern form it replaced
    (a look-behind tried at every position: 7 ms for a 64 KiB part of a big block)."""
    import re

    old = re.compile(r"(?:^|(?<=\n))[ \t\r]*\n")
    rng = random.Random(16)
    alphabet = ["a", "b", " ", "\t", "\r", "\n", "\n", "\n"]
    for _ in range(3000):
        src = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        m = old.search(src)
        assert T.blank_line(src) == ((m.start(), m.end()) if m else None), repr(src)


LONG_LINES = {
    # one line of 300 KB, the answer cut inside it (the 4 MiB cap's case, smaller)
    "open": ("x" * 300_000, "error"),
    "closed": ("A paragraph first.\n\n" + "y" * 300_000 + "\nthe next line\n\nAfter it.", "done"),
    "cr-and-tab": ("word " * 5000 + "\n" + "a\tb" * 100_000 + "\r\nnext\n\nEND", "done"),
    "fence": ("```\n" + "z" * 300_000 + "\n" + "w" * 100 + "\n```\n\nEND", "done"),
    "fence-open": ("```\n" + "short\n" + "q" * 300_000, "cancelled"),
    # a long line of blanks ends a plain block: taken the usual way, whole
    "blanks": ("word " * 5000 + "\n" + " " * 100_000 + "\nAfter.", "done"),
    # the answer ends with blanks after its last line: no line of blanks is added
    "blank-end": ("word " * 5000 + "\nlast words\n" + " " * 120_000, "done"),
}


@pytest.mark.parametrize("kind", list(LONG_LINES))
def test_a_long_line_that_arrives_at_once_is_made_visible_a_frame_budget_at_a_time(kind, monkeypatch):
    """A megabyte on one line between two frames: making it visible (escaping what a
    terminal must not get raw) took ~40 ms a megabyte in one call, held from a key typed
    then (the 4 MiB cap's echo: 176-379 ms). Each call now makes at most FRAME_BUDGET of
    it visible, the rest at the next (`behind`), and the lines are those of the whole
    line made visible at once, however the answer arrived."""
    text, end = LONG_LINES[kind]
    sizes = []
    real = T.visible

    def spy(s, **kw):
        sizes.append(len(s))
        return real(s, **kw)

    monkeypatch.setattr(T, "visible", spy)
    monkeypatch.setattr(markdown, "visible", spy)  # (code lines are made visible there)
    frames: list = []
    budgeted = stream(text, [], end=end, frames=frames)
    if kind != "blanks":
        assert max(sizes) <= T.FRAME_BUDGET, max(sizes)
    rng = random.Random(kind)
    pieces = stream(text, sorted(rng.sample(range(1, len(text)), 40)), end=end, frames=frames)
    monkeypatch.setattr(T, "FRAME_BUDGET", 1 << 40)  # the whole line at once, as before
    sizes.clear()
    whole = stream(text, [], end=end)
    if kind != "blanks":  # (the spy saw the line made visible at once)
        assert max(sizes) >= 100_000
    assert budgeted == whole and pieces == whole
    final = _texts(whole)
    for frame in frames:  # every frame on the way shows the final lines, the last one as far as it came
        shown = _texts(frame) or [""]  # (a first part may show nothing yet)
        assert shown[:-1] == final[: len(shown) - 1] and final[len(shown) - 1].startswith(shown[-1])
    if kind == "blank-end":
        assert final[-1] == "  last words"
    if kind == "cr-and-tab":  # (tabs made spaces, the CR shown, in the pieces too)
        assert any(t.endswith("a    b\\r") for t in _texts(whole))


CRLF_ANSWER = ("Intro:\r\n\r\n```\r\nx = 1\r\ny = 2\r\nz = 3\r\n```\r\n\r\nAfter the code.\r\n\r\n"
               "```python\r\na = 1\r\nb = 2\r\n```\r\nEnd.\r\n")


@pytest.mark.parametrize("seed", range(20))
def test_a_crlf_answer_shows_no_cr_in_its_code_blocks_in_any_frame(seed):
    """The parser reads \\r\\n as \\n, so the completed code block shows no \\r; the lines
    of a block still streaming (rendered a line at a time, markdown.code_lines) must not
    either: every frame shows the final lines as far as they came."""
    rng = random.Random(seed)
    frames: list = []
    final = _texts(stream(CRLF_ANSWER, sorted(rng.sample(range(1, len(CRLF_ANSWER)), 12)), frames=frames))
    assert final[2:5] == ["    x = 1", "    y = 2", "    z = 3"] and final[9:11] == ["    a = 1", "    b = 2"]
    for frame in frames:
        shown = _texts(frame) or [""]
        assert shown[:-1] == final[: len(shown) - 1] and final[len(shown) - 1].startswith(shown[-1]), shown
