"""The screen oracle: every byte DashFloat writes, replayed into a terminal emulator, must
leave exactly the screen a full repaint of the same canvas leaves.

`OracleSession` runs the real App and its DashScreen in-process, with the screen's output
going into an emulated terminal (`XTerm`, pyte corrected where it departs from xterm) instead
of a tty. After every frame, `check()` paints the frame's canvas from scratch on a fresh
emulator and compares the two cell by cell (characters and renditions) and the cursor
(position and visibility). The session's actions are the user's and the agent's: streamed
text, tool rows, confirmations, the help overlay, multi-line prompts and pastes, scrolling,
resizes, Ctrl-L and Ctrl-Z/fg. Randomised sessions (tests/widget/test_screen_oracle.py) drive
them; tests/e2e use the same comparison through a real pty.

`answers=True` plays a terminal that answers the frame clock's cursor-position questions
(ui/frameclock.py) over a link that is behind: the answers are kept until the session
delivers them (`deliver`), so frames are held, skipped and drawn later; a held frame leaves
the terminal as the last drawn canvas left it, and the next drawn one must again equal a
full repaint of the newest canvas.
"""

from __future__ import annotations

import os
import random

import pyte
from pyte.screens import wcwidth  # pyte's own, lru-cached
from urwid.display.common import UNPRINTABLE_C1_TRANS_TABLE, UNPRINTABLE_TRANS_TABLE

from dashfloat import messages as M
from dashfloat.history import History
from dashfloat.ui.app import App
from dashfloat.ui.bridge import Outbox
from dashfloat.ui.frameclock import FrameClock
from dashfloat.ui.screen import RESET, DashScreen
from tests.xterm import XTerm, cells

_TEMPLATES: dict[str, pyte.screens.Char] = {}


def _template(escape: str) -> pyte.screens.Char:
    """The cell a character gets in rendition `escape` (pyte decodes the SGR once)."""
    cell = _TEMPLATES.get(escape)
    if cell is None:
        term = pyte.Screen(2, 1)
        pyte.Stream(term).feed(escape + "x")
        cell = _TEMPLATES[escape] = term.buffer[0][0]
    return cell


def expected_cells(rows: list, cols: int, escape_of) -> list[list]:
    """The cells a full repaint of canvas `rows` leaves, computed directly where every
    character is one column wide (full_paint, the emulator itself, for other rows: tested
    equal in tests/widget/test_screen_oracle.py)."""
    out = []
    blank = pyte.Screen(1, 1).default_char
    for row in rows:
        cells = []
        for a, _cs, run in row:
            text = run.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
            text = text.translate(UNPRINTABLE_C1_TRANS_TABLE)
            if not text.isascii() and any(wcwidth(ch) != 1 for ch in text):
                cells = None
                break
            t = _template(escape_of(a))
            cells.extend(t._replace(data=ch) for ch in text)
        if cells is None or len(cells) > cols:
            term = full_paint([row], cols, escape_of, None)
            cells = [term.buffer[0][x] for x in range(cols)]
        else:
            cells.extend([blank] * (cols - len(cells)))
        out.append(cells)
    return out


def buffer_cells(term: pyte.Screen) -> list[list]:
    return [[line[x] for x in range(term.columns)] for line in (term.buffer[y] for y in range(term.lines))]


def full_paint(rows: list, cols: int, escape_of, cursor) -> XTerm:
    """A fresh terminal with `rows` (canvas rows of (attr, charset, bytes) runs) painted
    from scratch, row by row with absolute addresses: the reference."""
    term = XTerm(cols, len(rows))
    stream = pyte.Stream(term)
    for y, row in enumerate(rows):
        stream.feed(f"\x1b[{y + 1};1H")
        for a, _cs, run in row:
            text = run.translate(UNPRINTABLE_TRANS_TABLE).decode("utf-8", "replace")
            stream.feed(escape_of(a) + text.translate(UNPRINTABLE_C1_TRANS_TABLE))
        stream.feed(RESET)
    if cursor is not None:
        stream.feed(f"\x1b[{cursor[1] + 1};{cursor[0] + 1}H\x1b[?25h")
    else:
        stream.feed("\x1b[?25l")
    return term


class _Output:
    """The screen's output file: every write goes to the emulator at once."""

    def __init__(self, stream: pyte.Stream):
        self.stream = stream
        self.bytes = 0
        self.frames: list[str] = []

    def write(self, data: str) -> None:
        self.bytes += len(data.encode())
        self.frames.append(data)
        self.stream.feed(data)

    def flush(self) -> None:
        pass


class FakeAgent:
    def __init__(self):
        self.sent: list = []

    def send(self, msg):
        self.sent.append(msg)

    def start(self):
        pass


class OracleMismatch(AssertionError):
    pass


class OracleSession:
    """The App and its DashScreen, drawing into an emulated terminal."""

    def __init__(self, cols: int = 80, rows: int = 24, *, newline: str = "\r\n", sync: bool = False,
                 keep_margins_on_resize: bool = False, depth: int = 256, answers: bool = False):
        self.cols, self.rows = cols, rows
        self.term = XTerm(cols, rows)
        self.term.keep_margins_on_resize = keep_margins_on_resize
        if newline == "\n":  # a tty that adds the CR itself (ONLCR): new-line mode does the same
            self.term.set_mode(pyte.modes.LNM)
        self.stream = pyte.Stream(self.term)
        self.out = _Output(self.stream)
        self._pipe = os.pipe()
        self.now = 1000.0  # the App's clock: confirmations need pauses, which the session makes
        self.app = App(agent=FakeAgent(), outbox=Outbox(), model_name="test-model", ascii=False,
                       depth=depth, history=History(None), clock=lambda: self.now)
        self._input = os.fdopen(self._pipe[0], "rb", buffering=0)
        self.screen = DashScreen(input=self._input, output=self.out, bracketed_paste_mode=True)
        self.loop = self.app.build_loop(self.screen)
        self.screen.get_cols_rows = lambda: (self.cols, self.rows)
        self.loop.screen_size = (cols, rows)
        self.screen.start()
        self.screen.newline = newline
        if sync:  # a terminal that confirmed synchronized output (DECRQM 2026)
            self.screen.modes.synchronized_output = True
        self.frames = 0
        self.held = 0  # frames the clock held (answers=True)
        self.log: list[str] = []
        self.answers = answers
        self.unanswered: list[str] = []  # cursor reports on their way back
        self.shown = None  # the canvas the terminal shows (the last one drawn)
        if answers:
            self.screen.monotonic = lambda: self.now
            self.term.write_process_input = self._answer

    def _answer(self, data: str) -> None:
        """The emulator's answer to a question (ESC[row;colR): on its way back."""
        assert data.startswith("\x1b[") and data.endswith("R"), f"unexpected terminal answer {data!r}"
        self.unanswered.append(data)

    def deliver(self, n: int | None = None) -> None:
        """The first `n` answers (all by default) reach DashFloat's input, decoded as urwid
        decodes input: none may come out as a key (ESC[1;5R alone reads as Ctrl-F3)."""
        from urwid.display import escape

        n = len(self.unanswered) if n is None else n
        got, self.unanswered = self.unanswered[:n], self.unanswered[n:]
        for data in got:
            decoded, rest = escape.process_keyqueue(list(data.encode()), False)
            assert not rest
            keys = self.screen._apply_terminal_reports(decoded)
            assert keys == [], f"an answer reached the app as input: {data!r} -> {keys!r}"

    def close(self) -> None:
        try:
            self.deliver()  # else the stop waits (in real time) for the answer still on its way
            if self.screen.started:
                self.screen.stop()
        finally:
            os.close(self._pipe[1])
            self._input.close()  # not left to the collector: an App's first idle freezes what
            # is alive (gc.freeze), and a run of sessions ran out of descriptors select() takes
            for fd in (self.app.outbox._fd, self.app._sig_fd):  # the loop's two watch pipes
                if self.loop.remove_watch_pipe(fd):
                    os.close(fd)
            self.screen._resize_pipe_rd.close()  # urwid's screen opens it and never closes it
            self.screen._resize_pipe_wr.close()

    # ---- the frame and the check -------------------------------------------------------
    def draw(self) -> None:
        """What the main loop does when it goes idle: render, draw, then the after-draw
        callback; then compare."""
        size = (self.cols, self.rows)
        if self.answers and self.screen.frame_wait() > 0:
            # held (DashLoop renders nothing): the terminal still shows the last frame
            self.held += 1
            if self.shown is not None and (self.cols, self.rows) == self._shown_size:
                self.check(self.shown)
            return
        canvas = self.app.root.render(size, focus=True)
        self.screen.draw_screen(size, canvas)
        if self.loop.after_draw is not None:
            self.loop.after_draw()
        self.frames += 1
        if getattr(self.screen, "fallbacks", 0):
            raise OracleMismatch(self._report("the incremental drawing raised (see the log)", self.term))
        self.check(canvas)
        self.shown, self._shown_size = canvas, size

    def check(self, canvas) -> None:
        rows = list(canvas.content())
        if buffer_cells(self.term) != expected_cells(rows, self.cols, self.screen._attr_to_escape):
            ref = full_paint(rows, self.cols, self.screen._attr_to_escape, canvas.cursor)
            got, want = cells(self.term), cells(ref)
            bad = [y for y in range(self.rows) if got[y] != want[y]] or ["(none in full_paint: expected_cells is wrong)"]
            y = bad[0]
            x = next((x for x in range(self.cols) if isinstance(y, int) and got[y][x] != want[y][x]), None)
            first = f"; first at ({x}, {y}): {got[y][x]} != {want[y][x]}" if x is not None else ""
            raise OracleMismatch(self._report(f"rows {bad} differ from a full repaint{first}", ref))
        if canvas.cursor is not None:
            at = (self.term.cursor.x, self.term.cursor.y)
            if at != tuple(canvas.cursor) or self.term.cursor.hidden:
                ref = full_paint(rows, self.cols, self.screen._attr_to_escape, canvas.cursor)
                raise OracleMismatch(self._report(
                    f"cursor at {at} hidden={self.term.cursor.hidden}, want {tuple(canvas.cursor)} shown", ref))

    def _report(self, what: str, ref: XTerm) -> str:
        def show(t):
            return "\n".join(f"{i:2}|{line}" for i, line in enumerate(t.display))

        last = self.out.frames[-3:]
        return (f"frame {self.frames} ({self.cols}x{self.rows}): {what}\nafter: {self.log[-12:]}\n"
                f"--- terminal:\n{show(self.term)}\n--- full repaint:\n{show(ref)}\n--- last writes: {last!r}")

    # ---- actions: each one is followed by a frame ---------------------------------------
    def do(self, name: str, *args) -> None:
        self.log.append(f"{name}{args!r}"[:80])
        getattr(self, "_" + name)(*args)
        self.draw()

    def _msg(self, *msgs: tuple) -> None:
        for m in msgs:
            self.app.apply(m)
        self.app.refresh()

    def _tokens(self, pieces: list[str]) -> None:
        for p in pieces:
            self.app.apply((M.TOKEN, p))
        self.app._dirty = True
        self.app.refresh()

    def _settle(self) -> None:
        current = self.app.model.current
        if current is not None and current.settle():
            self.app.model.touch(current)
        self.app.refresh()

    def _key(self, *keys: str) -> None:
        size = (self.cols, self.rows)
        for key in self.app._input_filter(list(keys), []):
            if key != "window resize":
                self.app.root.keypress(size, key)

    def _paste(self, text: str) -> None:
        keys = ["begin paste"] + [("enter" if ch == "\n" else ch) for ch in text] + ["end paste"]
        self._key(*keys)

    def _resize(self, cols: int, rows: int) -> None:
        self.shown = None  # the emulator's resize changes the screen itself
        self.cols, self.rows = cols, rows
        self.term.resize(rows, cols)
        self.loop.screen_size = (cols, rows)
        self.screen.screen_buf = None  # what urwid does when it reads SIGWINCH's flag
        self._key("window resize")

    def _pause(self, seconds: float) -> None:
        """Time passes (the tick's part in a pending question: a held y acts)."""
        self.now += seconds
        if self.app.confirm is not None:
            self.app._confirm_tick(self.now)

    def _resize_mid_draw(self, cols: int, rows: int) -> None:
        """SIGWINCH lands while a frame is being drawn: after our part of the frame was
        prepared for the old size and before urwid writes its part (which it then skips,
        its resized flag being up). The stale frame is not checked; the one after the
        resize is."""
        self.shown = None
        screen = self.screen
        prepare = screen._before_draw

        landed = []

        def hooked(size, canvas_rows):
            prepare(size, canvas_rows)
            self.term.resize(rows, cols)
            screen._resized = True
            landed.append(True)

        screen._before_draw = hooked
        self.app.spin += 1  # a frame that differs from the last (else nothing is drawn)
        self.app.update_status()
        try:
            size = (self.cols, self.rows)
            screen.draw_screen(size, self.app.root.render(size, focus=True))
        finally:
            del screen._before_draw
        if not landed:  # nothing new to draw (an overlay, an idle bar): an ordinary resize
            self.term.resize(rows, cols)
        screen._resized = False
        self.cols, self.rows = cols, rows
        self.loop.screen_size = (cols, rows)
        screen.screen_buf = None
        self._key("window resize")

    def _redraw(self) -> None:
        self._key("ctrl l")

    def _suspend(self, shell_output: str = "$ fg\r\n") -> None:
        """Ctrl-Z and fg: the screen stops, the shell writes on the terminal, the screen
        starts again (a terminal without an alternate screen keeps what the shell wrote)."""
        self.shown = None
        self.screen.stop()
        self.stream.feed(shell_output)
        self.screen.start()


# ---- randomised sessions ------------------------------------------------------------------

SIZES = [(80, 24), (120, 40), (30, 8), (60, 6), (40, 12), (20, 5), (100, 30),
         (20, 6), (19, 6), (10, 3), (2, 2), (1, 1), (80, 1), (1, 24)]  # the last: the too-small notice
KEYS = ["page up", "page down", "meta up", "meta down", "home", "end", "f1", "esc"]
WORDS = ("the loader reads `config.toml` first **then** the environment and a value set "
         "wins over the file while *this* stays possible; supercalifragilisticexpialidocious").split()


def random_pieces(rnd: random.Random, n: int) -> list[str]:
    """Markdown in token-sized pieces: prose, lists, code, headings, a table, long words."""
    from tests.fakeserver import markdown_answer

    kind = rnd.random()
    if kind < 0.4:
        pieces = markdown_answer(rnd.randint(20, 400))
        start = rnd.randint(0, max(0, len(pieces) - n))
        return pieces[start : start + n]
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.05:
            out.append("\n\n")
        elif r < 0.08:
            out.append("\n```python\n")
        elif r < 0.1:
            out.append("\n- ")
        elif r < 0.12:
            out.append("\n# ")
        elif r < 0.13:
            out.append("x" * rnd.randint(50, 200))
        elif r < 0.17:
            out.append("\n" + rnd.choice(WORDS))  # a soft break: the paragraph flows on
        else:
            out.append(" " + rnd.choice(WORDS))
    return out


def huge_pieces(rnd: random.Random) -> list[str]:
    """A piece of a huge answer (issue 16), 34-60 KB (a line: to 200 KB), over the transcript's BIG_BLOCK so it
    is taken line by line, cut into 2-6 frames: one long line without blanks (base64), a
    paragraph of words, many short lines, or lines of a code block (closed or not)."""
    import base64

    size = rnd.randint(34_000, 60_000)
    kind = rnd.choice(["line", "words", "lines", "code"])
    if kind == "line":  # up to 200 KB, often at once: a line over FRAME_BUDGET is made visible in parts
        size = rnd.randint(34_000, 200_000)
        text = base64.b64encode(rnd.randbytes(size * 3 // 4)).decode()
        if rnd.random() < 0.5:  # completed by lines after it
            text += "\n" + "".join(f"{rnd.choice(WORDS)}\n" for _ in range(rnd.randint(1, 5)))
        cuts = sorted(rnd.sample(range(1, len(text)), rnd.randint(0, 2)))
        return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    elif kind == "words":
        text = " ".join(rnd.choice(WORDS) for _ in range(size // 6))
    elif kind == "lines":
        text = "".join(f"{i} {rnd.choice(WORDS)}\n" for i in range(size // 12))
    else:
        text = "```python\n" + "".join(f"x_{i} = f({i})  # {rnd.choice(WORDS)}\n" for i in range(size // 30))
        text += rnd.choice(["```\n\n", ""])
    cuts = sorted(rnd.sample(range(1, len(text)), rnd.randint(1, 5)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def random_session(seed: int, steps: int = 120, **kw) -> OracleSession:
    """A session of `steps` random actions, every frame checked against a full repaint."""
    rnd = random.Random(seed)
    size = rnd.choice(SIZES[:3])
    s = OracleSession(*size, **kw)
    s.draw()
    call = 0
    try:
        for _ in range(steps):
            app = s.app
            if s.answers:  # a link that is behind: answers come late, time passes
                if s.unanswered and rnd.random() < 0.4:
                    s.deliver(1)
                    if rnd.random() < 0.5:
                        s.draw()  # the loop draws when an answer came (a held frame)
                s.now += rnd.choice([0.0, 0.01, 0.05, 0.3, 2.5])
            r = rnd.random()
            if app.phase == "idle" and r < 0.15:
                text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 30)))
                if rnd.random() < 0.3:
                    text += "\n" + "\n".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 6)))
                s.do("msg", (M.USER, text), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"))
            elif app.model.current is not None and r < 0.45:
                s.do("tokens", random_pieces(rnd, rnd.randint(1, 40)))
            elif app.model.current is not None and r < 0.47:
                for piece in huge_pieces(rnd):  # a frame per piece
                    s.do("tokens", [piece])
            elif app.model.current is not None and r < 0.5:
                s.do("settle")
            elif app.model.current is not None and r < 0.55:
                s.do("msg", (M.ASSISTANT_END, rnd.choice(["done", "done", "cancelled", "error"])), (M.PHASE, "idle"))
            elif r < 0.6 and app.phase == "idle":
                call += 1
                cid = f"c{call}"
                lines = [("header", "+++ b/f.txt")] + [("add", "+" + rnd.choice(WORDS) * rnd.randint(1, 9))
                                                       for _ in range(rnd.randint(1, 30))]
                s.do("msg", (M.TOOL_CALL, {"id": cid, "name": "write_file", "summary": "write_file f.txt (9 B)"}),
                     (M.CONFIRM, call, {"id": cid, "name": "write_file", "summary": "write_file f.txt", "lines": lines}),
                     (M.PHASE, "confirming"))
            elif r < 0.64 and app.confirm is not None:
                s.do("pause", 2.0)
                key = rnd.choice(["y", "n", "x", "page up", "v", "v", "a"])
                s.do("key", key)
                s.do("pause", 0.5)
                if app.view_widget is not None:  # the whole preview: page through it, go back
                    s.do("key", rnd.choice(["page down", "down", "end"]))
                    s.do("key", rnd.choice(["q", "esc"]))
                if app.confirm is None:
                    cid = f"c{call}"
                    s.do("msg", (M.TOOL_OUTPUT, cid, "line one\nline two\rprogress 50%"),
                         (M.TOOL_RESULT, {"id": cid, "name": "write_file", "status": rnd.choice(["ok", "error"]),
                                          "text": "wrote f.txt", "excerpt": ["a", "b"]}),
                         (M.PHASE, "idle"))
            elif r < 0.68:
                s.do("msg", (M.SYSTEM, rnd.choice(["info", "warn", "error"]),
                             " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 40)))))
            elif r < 0.78:
                s.do("key", rnd.choice(KEYS))
            elif r < 0.84:
                if rnd.random() < 0.5:
                    s.do("key", *list(rnd.choice(WORDS)), "meta enter", *list(rnd.choice(WORDS)))
                else:
                    s.do("paste", "\n".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 12))))
            elif r < 0.86:
                s.do("key", "ctrl u")
            elif r < 0.89:
                s.do("resize", *rnd.choice(SIZES))
            elif r < 0.91:
                s.do("resize_mid_draw", *rnd.choice(SIZES))
            elif r < 0.93:
                s.do("redraw")
            elif r < 0.95:
                s.do("suspend")
            elif r < 0.97:
                s.do("key", "enter")
            else:
                s.do("key", "ctrl t")
        if s.answers and not s.held:  # chance drew no frame behind a question (1 session
            s.deliver()  # in 400; a screen too small asks nothing): hold one, so that every
            s.now += 2 * FrameClock.FIRST_WAIT  # such session checks a held frame
            s.do("resize", *SIZES[0])  # past any wait, at a size that draws: the next frame asks
            s.do("msg", (M.SYSTEM, "info", "a frame that asks where the cursor is"))
            s.do("msg", (M.SYSTEM, "info", "a frame that waits for the answer"))
            s.deliver()
            s.draw()
    finally:
        s.close()
    return s
