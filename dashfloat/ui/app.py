"""The full-screen front end: one urwid MainLoop on the main thread.

The main thread owns the widgets, the terminal and the only timer (the tick). It does no
network or process I/O: the agent and its streamers run on threads and reach the UI only
through the Outbox doorbell. Messages are applied to the transcript model at once; rows
are refreshed from the model on the tick (every TICK seconds while something is active;
streamed text every STREAM_FRAME), and there is no timer at all when idle (zero wake-ups,
zero bytes). Frames wait for the terminal's answer to the last one (ui/frameclock.py).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
import time

import urwid

from dashfloat import messages as M
from dashfloat.history import History
from dashfloat.ui import keymap, theme, toosmall
from dashfloat.ui.bridge import Outbox
from dashfloat.ui.confirmgate import PASSING, ConfirmGate
from dashfloat.ui.confirming import Confirming
from dashfloat.ui.eventloop import KeptSelectorEventLoop
from dashfloat.ui.screen import DashScreen
from dashfloat.ui.statusline import status_markup
from dashfloat.ui.transcript import TranscriptModel
from dashfloat.ui.widgets import (
    Prompt,
    PromptBox,
    StatusBar,
    TranscriptView,
    help_widget,
)

log = logging.getLogger("dashfloat.ui")

TICK = 0.1  # seconds between widget flushes and spinner steps while active
# seconds between frames of streamed text: over ssh every frame costs ~70 bytes besides its
# text (the cursor dance, the frame clock's question, ~40 bytes of ssh packet), a third of
# what a 10 Hz stream sends; 5 frames a second halve that (a word still appears whole)
STREAM_FRAME = 0.2
# frames a cold stream's text may ring for while they show none of it (a word being typed, an
# open span): then it waits for the tick, so a held-back line never costs a frame per token
COLD_TRIES = 3
CATCH_UP = 0.001  # seconds between the parts of a big block (a pass of the loop for keys)
# The GIL's switch interval while the app runs (Python's default is 5 ms). Each system call of
# a pass of the loop (the select that wakes on a key, the reads, the frame's write) lets the
# GIL go, and a streamer parsing a fast server's SSE holds it back up to a whole interval
# each time: measured here, a wake-up plus three such calls beside a JSON-parsing thread took
# p90 5-7 ms, max 28-32 ms at 5 ms; p90 0.03-1 ms, max 0.1-5 ms at 0.5-1 ms. Only threads that
# want the GIL at the same moment switch more often; a quiet stream does not notice. 1 ms, not
# 0.5: in the huge-answer bench 0.5 ms doubled the worst echo of the 4 MiB cap (250 vs 87-208).
SWITCH_INTERVAL = 0.001
LEAVING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)  # their bytes end the app
QUIET_KINDS = frozenset((M.TOKEN, M.REASONING, M.TOOL_OUTPUT))  # collected by the tick


class DashLoop(urwid.MainLoop):
    """A MainLoop that runs one callback right after the first frame is on screen, so
    work that can wait (starting the agent, warming imports) never delays it."""

    after_first_frame = None
    after_draw = None  # called after every frame (arms a confirmation once it is visible)
    hold_frame = None  # True: skip this frame (App.hold_frame)
    _clock_alarm = None

    def draw_screen(self, *args, **kwargs):
        if not self.screen_size:
            self.screen_size = self.screen.get_cols_rows()
        if min(self.screen_size) < 1:  # a terminal without a single cell: nothing can be shown
            return
        # self-clocked frames (ui/frameclock.py): while the terminal has not answered for
        # the last frame, the next one waits (nothing is rendered); the answer wakes the loop
        # through the input, or this alarm when the wait runs out
        wait = getattr(self.screen, "frame_wait", None)
        wait = wait() if wait is not None else 0.0
        if wait > 0:
            if self._clock_alarm is None:
                self._clock_alarm = self.set_alarm_in(wait, self._clock_due)
            return
        if self._clock_alarm is not None:
            self.remove_alarm(self._clock_alarm)
            self._clock_alarm = None
        if self.hold_frame is not None and self.after_first_frame is None and self.hold_frame():
            return  # catching up with a big block: the frame after the next part
        super().draw_screen(*args, **kwargs)
        callback, self.after_first_frame = self.after_first_frame, None
        if callback is not None:
            callback()
        if self.after_draw is not None:
            self.after_draw()

    def _clock_due(self, _loop, _data) -> None:
        self._clock_alarm = None  # the loop goes idle after an alarm: draw_screen follows


def warm_imports() -> None:
    """Load the Markdown parser and a common lexer before the first answer needs them:
    started after the frame that shows the first key typed (App._prepare), so a session
    that has asked nothing does not carry them (~3 MiB at rest, a tenth of the whole:
    issue 16) and a person typing a prompt gives it the time it takes (~50 ms of CPU).
    Then freeze what the imports made (settle())."""
    try:
        from dashfloat.ui import markdown

        markdown.render("# w\n\n- *x* `y`\n\n```python\nx = 1\n```\n\n```bash\nls -l\n```\n\n"
                        "```json\n{}\n```\n\n```diff\n+a\n```\n")
    except Exception:
        log.exception("warming imports failed")
    settle()


def settle() -> None:
    """Move what start-up made (modules, functions, classes: some 35,000 objects that live
    as long as the process) out of the garbage collector's sight (gc.freeze, which only
    joins two lists): a full collection, which can come at any keystroke, walks only what
    the session made since (on a loaded machine 100-200 ms for the start-up objects alone,
    a few ms without). Called after the first frame, when the agent is first idle (its
    modules are loaded) and after the warm-up."""
    gc.freeze()


TRIM_AFTER = 256 << 10  # characters streamed in a turn: after fewer, little was freed (and
# ctypes, which the trim needs, may not be loaded yet)


def give_back_memory() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim; elsewhere
    nothing): after a huge answer, the temporaries of its frames leave holes that RSS
    would count for the rest of the session though nothing is kept in them."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except Exception:  # noqa: BLE001 - not glibc: nothing to give back this way
        pass


class Root(urwid.WidgetWrap):
    def __init__(self, app: App, frame: urwid.Frame):
        super().__init__(frame)
        self.app = app
        self.frame = frame
        self.overlay: urwid.Widget | None = None

    def show(self, widget: urwid.Widget | None) -> None:
        self.overlay = widget
        if widget is None:
            self._w = self.frame
        else:
            self._w = urwid.Overlay(widget, self.frame, "center", ("relative", 90), "middle", ("relative", 90),
                                    min_width=20, min_height=5)

    def render(self, size, focus=False):
        cols, rows = size
        self.app.too_small = toosmall.too_small(cols, rows)
        if self.app.too_small:  # the notice instead of a layout that cannot be read
            return toosmall.canvas(cols, rows)
        return super().render(size, focus)

    def keypress(self, size, key):
        try:
            return self.app.on_key(size, key)
        except urwid.ExitMainLoop:
            raise
        except Exception as exc:  # a bug in a key handler: a one-line entry, never a dead UI
            log.exception("key handler failed for %r", key)
            self.app.model.system("error", f"internal error handling {key!r}: {exc!r} (see the log)")
            self.app.refresh()
            return None


class App(Confirming):
    def __init__(self, *, agent, outbox: Outbox, model_name: str | None, ascii: bool, depth: int,
                 history: History, log_path: str | None = None, base_url: str = "", clock=time.monotonic):
        self.agent = agent
        self.clock = clock  # when keys arrive and previews are drawn (tests pass their own)
        self.outbox = outbox
        self.ascii = ascii
        self.depth = depth
        self.glyphs = theme.ASCII if ascii else theme.UNICODE
        self.history = history
        self.log_path = log_path
        self.model = TranscriptModel(ascii=ascii)
        self.view = TranscriptView(self.glyphs)
        self.prompt = Prompt(self.glyphs.user)
        self.prompt_box = PromptBox(self.prompt, self.glyphs.user)
        self.status = StatusBar()
        self.phase = "idle"
        self._trim_due = False
        self._relayout_due = False  # a turn ended: its rows are laid out again (_after_draw)
        self._streamed = 0  # characters of answer text since the last idle
        self.model_name = model_name
        self.base_url = base_url
        self.tokens: int | None = None
        self.tokens_estimated = False  # self.tokens is DashFloat's estimate (the provider sent no usage)
        self.meter: dict | None = None  # the totals and budgets (metering.Meter.view)
        self.mode = "ask"  # the permission mode; shown in the status bar unless "ask"
        self._status_markup: list | None = None
        self.notice = ""
        self.spin = 0
        self.agent_down = False
        self._agent_started = False
        self._settled = False  # start-up's objects frozen (settle)
        self._warmed = False  # the warm-up started (_prepare: the first key typed)
        self._warm_due = False  # a key came: warm up after the frame that shows it
        self._catch_alarm = None  # the next part of a big block is due (_catch_up)
        self._key_since_draw = False  # input came since the last frame (hold_frame)
        self._drawn_at = 0.0  # when the last frame was drawn
        self._tick_handle = None
        self._dirty = False
        self._streamed_at = 0.0  # when streamed text was last copied into rows (the tick)
        self._cold_misses = 0  # frames of a cold stream that showed none of its text yet
        self._last_interrupt = False
        self._pasting = False
        self._paste: list[str] = []
        self._quitting = False
        self._editor = None  # the Ctrl-G editor's process while it runs
        self._hung_up = False  # a SIGHUP came (its handler sets this at once; the pipe tells the loop)
        self.quit_reason = "quit"  # what the journal's end records: quit, hangup, signal
        self.confirm: tuple[int, str] | None = None  # (ref, call id) waiting for y / n / Esc
        self.gate = ConfirmGate()  # which keys on it are decisions (confirmgate.py)
        self._held_key = ""  # the letter the gate holds, shown as unused if typing follows it
        self._gate_notice = ""  # what the gate's notice is about: "" (none), "explain", "hold", "step"
        self.view_widget = None  # the whole preview (pager.PreviewView) in the transcript's place
        # the read the keys being handled came in: when, how many keys, how many are left
        self._read_at = 0.0
        self._read_alone = True
        self._read_left = 0
        footer = urwid.Pile([self.status, self.prompt_box])
        self.frame = urwid.Frame(body=self.view.listbox, footer=footer, focus_part="footer")
        self.root = Root(self, self.frame)
        self.loop: urwid.MainLoop | None = None
        self._width = 80
        self.too_small = False  # the last frame was the too-small notice (ui/toosmall.py)

    # ---- lifecycle --------------------------------------------------------------------
    def build_loop(self, screen: urwid.display.raw.Screen | None = None) -> urwid.MainLoop:
        if screen is None:
            screen = DashScreen(bracketed_paste_mode=True)
        screen.set_terminal_properties(colors=self.depth)
        screen.complete_wait = keymap.LONE_ESC_WAIT  # Esc stops a turn at once
        if hasattr(screen, "scroll_region_rows"):
            screen.scroll_region_rows = self._scroll_region_rows
        self.loop = DashLoop(
            self.root,
            theme.palette(self.depth),
            screen=screen,
            event_loop=KeptSelectorEventLoop(),
            handle_mouse=False,
            input_filter=self._input_filter,
            pop_ups=False,
        )
        self.loop.after_draw = self._after_draw
        self.loop.hold_frame = self.hold_frame
        fd = self.loop.watch_pipe(self._on_doorbell)
        self.outbox.attach(fd)
        self._sig_fd = self.loop.watch_pipe(self._on_signal)
        self.update_status()
        return self.loop

    def _scroll_region_rows(self) -> int:
        """The rows at the top that scroll together: the transcript (or the whole preview)
        as last laid out; 0 (no scrolling) before it was."""
        size = getattr(self.frame.body, "last_size", None)
        return size[1] if size and not self.too_small else 0

    def install_signal_handlers(self) -> dict:
        """The loop hears of a signal from the wake-up fd: the pipe it watches is made
        CPython's set_wakeup_fd, which the C-level handler writes the signal's number to on
        whichever thread the kernel gave the signal to. (The Python-level handler runs on
        the main thread only, when it next runs bytecode: a SIGTERM the agent's thread took
        once waited, on an idle screen, for the next key.) The Python-level handler does only
        what cannot wait for the loop: a SIGHUP noted, an external editor ended."""
        fd = self._sig_fd
        os.set_blocking(fd, False)  # a full pipe drops a byte, never stalls a handler
        self._old_wake_fd = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)

        def handler(signum, frame):
            if signum == signal.SIGHUP:
                self._hung_up = True
            if signum in (signal.SIGHUP, signal.SIGTERM) and self._editor is not None:
                self._end_editor(self._editor)

        old = {}
        for sig in LEAVING_SIGNALS:
            old[sig] = signal.signal(sig, handler)
        return old

    def _on_signal(self, data: bytes):
        for signum in data:
            if signum not in LEAVING_SIGNALS:  # urwid's own (SIGWINCH, SIGCONT) ring the pipe too
                continue
            if signum == signal.SIGINT:
                self.command("interrupt")
            elif signum == signal.SIGHUP:
                log.info("terminal closed (hangup)")
                self.quit("hangup")
            else:
                log.info("leaving on signal %d", signum)
                self.quit("signal")
        return True

    def quit(self, why: str = "quit") -> None:
        self._quitting = True
        self.quit_reason = why
        try:
            self.agent.send((M.QUIT,) if why == "quit" else (M.QUIT, why))
        except Exception:
            log.exception("could not tell the agent to quit")
        raise urwid.ExitMainLoop()

    # ---- messages from the agent ------------------------------------------------------
    def _on_doorbell(self, _data: bytes):
        if self._key_since_draw and self.loop is not None:
            # a key read earlier in this pass of the loop is shown first: the drain (up to
            # its 5 ms budget of a fast stream's messages) comes after its echo, not before
            self.loop.draw_screen()
        self._drain()
        return True

    def _drain(self, ticking: bool = False) -> None:
        """Apply what the agent sent; text (quiet kinds) waits for the tick, which
        `ticking` says is the caller (it schedules the next itself)."""
        msgs, more = self.outbox.drain()
        structural = False
        for msg in msgs:
            try:
                structural |= self.apply(msg)
            except urwid.ExitMainLoop:  # ("leave",): /quit
                raise
            except Exception as exc:
                log.exception("applying %r failed", msg[:1])
                self.model.system("error", f"internal error showing a {msg[0]!r} message: {exc!r} (see the log)")
                structural = True
        if structural:
            self.refresh()
        elif self._dirty and not ticking and not self.outbox.quiet:
            self._show_stream_now()
        elif msgs and not ticking:
            self._ensure_tick()
        if more:
            self.outbox.ring()

    def apply(self, msg: tuple) -> bool:
        """Apply one agent message to the model. True if rows must be redrawn now."""
        kind = msg[0]
        if kind == M.TOKEN:
            self.model.token(msg[1])
            self._streamed += len(msg[1])
            self._dirty = True
            return False
        if kind == M.REASONING:
            self.model.reasoning(msg[1])
            self._dirty = True
            return False
        if kind == M.PHASE:
            if msg[1] != self.phase:
                self.notice = ""  # a note is about the moment ("a turn is running"): not the next one
                if msg[1] == "idle":
                    if not self._settled:
                        self._settled = True  # the agent's start-up imports are done
                        settle()
                    if self._streamed >= TRIM_AFTER:
                        self._trim_due = True  # a big turn ended: after its last frame (_after_draw)
                    self._streamed = 0
                    self._relayout_due = True  # after its last frame (_after_draw)
            self.phase = msg[1]
            if self.phase != "confirming" and self.confirm is not None:
                self._end_confirm()  # the agent moved on (a cancel): nothing to decide
            if self.phase in M.ACTIVE_PHASES:
                self._ensure_tick()
            self.update_status()
            return False
        if kind == M.USER:
            self.model.user(msg[1])
            return True
        if kind == M.ASSISTANT_START:
            self.model.start_assistant()
            # a new answer is cold whatever came before (the last one may have ended a moment
            # ago, when the next turn's Enter followed it): its first words show at once
            self._streamed_at = 0.0
            self._cold_misses = 0
            self.outbox.quiet = False  # (text still waiting is shown by the refresh this asks for)
            return True
        if kind == M.ASSISTANT_END:
            self.model.end_assistant(msg[1])
            return True
        if kind == M.SYSTEM:
            self.model.system(msg[1], msg[2])
            return True
        if kind == M.MODEL:
            self.model_name = msg[1]
            self.update_status()
            return False
        if kind == M.MODE:
            self.mode = msg[1]
            self.update_status()
            return False
        if kind == M.TOOL_NOTE:
            self.model.tool(msg[1]).note(msg[2])
            return True
        if kind == M.USAGE:
            usage = msg[1] or {}
            total = usage.get("total_tokens")
            if total is None and usage.get("prompt_tokens") is not None:
                total = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
            if isinstance(total, int):
                self.tokens, self.tokens_estimated = total, usage.get("estimated") is True
            self.update_status()
            return False
        if kind == M.METER:
            self.meter = msg[1]
            self.update_status()
            return False
        if kind == M.STOPPED:  # the entry that says why came with it; a front end that exits acts on it
            return False
        if kind == M.LEAVE:
            self.quit()
            return False
        if kind == M.CLIPBOARD:
            self._to_clipboard(msg[1])
            return False
        if kind == M.TOOL_CALL:
            self.model.tool_call(msg[1])
            return True
        if kind == M.TOOL_OUTPUT:
            self.model.tool(msg[1]).add_output(msg[2])
            self._dirty = True
            return False
        if kind == M.TOOL_RESULT:
            info = msg[1]
            self.model.tool(info["id"]).set_result(info.get("status", "error"), info.get("text", ""),
                                                   info.get("excerpt", []), info.get("details"))
            return True
        if kind == M.CONFIRM:
            ref, info = msg[1], msg[2]
            self.model.tool(info["id"]).set_preview(info.get("lines", []), info.get("full"), info.get("always", ""),
                                                    always_asks=info.get("always_asks", ""))
            self._end_confirm()
            self.confirm = (ref, info["id"])
            self.gate.open()
            self.view.following = True  # the preview must be on screen to be decided
            return True
        if kind == M.DECIDED:
            self.model.tool(msg[1]).decided(msg[2])
            return True
        if kind == M.CRASH:
            self.model.system("error", f"{msg[1]}: {msg[2]} (details in the log)")
            return True
        if kind == M.AGENT_DOWN:
            if self.agent_down:
                return False  # reported once (by the agent, or found by _check_agent)
            self.agent_down = True
            self.confirm = None
            self.confirm_armed = False
            self.phase = "idle"
            self.model.end_assistant("error")
            self.model.system("error", f"The agent stopped: {msg[1]}. Input and scrolling still work; "
                                       f"restart DashFloat to chat again (details in the log).")
            self.update_status()
            return True
        if kind in (M.TURN_END, M.FILES, M.COMPACTED):  # for the headless front end: the screen shows rows and entries
            return False
        log.warning("UI ignored unknown message %r", kind)
        return False

    def _to_clipboard(self, text: str) -> None:
        """/copy's OSC 52 (dashfloat/copyout.py), written between frames by the screen's own
        writer on this thread; a write that fails is logged (the entry names the file)."""
        from dashfloat import copyout

        sequence = copyout.osc52(text, os.environ)
        if not sequence or self.loop is None:
            return
        try:
            self.loop.screen.write(sequence)
            self.loop.screen.flush()
        except (OSError, ValueError):
            log.warning("the OSC 52 sequence could not be written", exc_info=True)

    def replay(self, msgs: list[tuple]) -> None:
        """Draw a resumed session's transcript again from its journal's messages, through
        `apply`, as they came: only the state of the moment is left out (the phase, and a
        question: it is answered by now, or the agent answers it when it starts)."""
        from dashfloat import masking

        for msg in msgs:
            msg = (msg[0], *masking.mask_deep(msg[1:], self.outbox.secrets))
            kind = msg[0]
            try:
                if kind in (M.PHASE, M.AGENT_DOWN):
                    continue
                if kind == M.CONFIRM:
                    info = msg[2]
                    self.model.tool(info["id"]).set_preview(info.get("lines", []), None, info.get("always", ""),
                                                            always_asks=info.get("always_asks", ""))
                    continue
                self.apply(msg)
            except Exception as exc:  # one odd message must not keep the session from resuming
                log.exception("replaying %r failed", kind)
                self.model.system("error", f"internal error showing a {kind!r} message again: {exc!r} (see the log)")
        if self.model.current is not None:  # an answer the journal has no end for
            self.model.end_assistant("cancelled")
        self.refresh()

    # ---- drawing ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Copy model changes into rows now (structural events), and the status bar."""
        self._dirty = False
        self.view.sync(self.model.entries, self.model.touched)
        self.view.pane.prepare()
        self.update_status()
        # an answer that took only part of what arrived (it may have ended meanwhile, and
        # entries come after it): the rest in parts, keys answered between them
        behind = [e for e in self.model.entries[-8:] if getattr(e, "behind", False)]
        for entry in behind:
            entry.version += 1
            self.model.touch(entry)
        if behind and self._catch_alarm is None and self.loop is not None:
            self._catch_alarm = self.loop.set_alarm_in(CATCH_UP, self._catch_up)

    def _catch_up(self, _loop, _data) -> None:
        """The next part of a big block that arrived faster than a frame takes (transcript
        FRAME_BUDGET): one part per pass of the loop, so a key typed meanwhile is read and
        drawn between two parts, not after all of them."""
        self._catch_alarm = None
        if self.loop is not None and (self._key_since_draw or self.clock() - self._drawn_at >= STREAM_FRAME):
            # urwid draws only when no alarm is due, and a chain of parts keeps one due: a key
            # (or a stream frame) is drawn before the next part, not after the last
            self.loop.draw_screen()
        self.refresh()

    def hold_frame(self) -> bool:
        """Skip this frame (DashLoop): while parts of a big block are being taken, a frame
        is drawn for a key, or every STREAM_FRAME; not after every part."""
        return (self._catch_alarm is not None and not self._key_since_draw
                and self.clock() - self._drawn_at < STREAM_FRAME)

    def _after_draw(self) -> None:
        """Note when a pending confirmation's preview was first drawn (the gate's grace
        starts then), and throw away keys typed before that: typeahead never decides.
        A frame that showed the too-small notice hid the preview: the question starts
        over (nothing held; the grace counts from when it is on screen again)."""
        self._key_since_draw, self._drawn_at = False, self.clock()
        if self._warm_due:
            self._prepare()
        if self.phase == "idle" and not self._dirty:  # the turn's last frame is drawn:
            if self._relayout_due:  # its rows, final now, laid out again together (widgets.py)
                self._relayout_due = False
                self.view.pane.lay_out_again()
            if self._trim_due:  # what it freed goes back
                self._trim_due = False
                give_back_memory()
        if self.too_small:
            self._hide_confirm()
            return
        if self.confirm is not None and self.gate.shown_at is None:
            self.gate.shown(self.clock())
            try:
                import termios

                screen = self.loop.screen
                fd = screen._input_fileno()
                if fd is not None and os.isatty(fd):
                    termios.tcflush(fd, termios.TCIFLUSH)
                    clock = getattr(screen, "clock", None)
                    if clock is not None:
                        clock.forget()  # its answer may have been flushed with the typeahead
            except (OSError, ImportError, AttributeError):
                log.debug("could not flush typeahead", exc_info=True)

    def _show_stream_now(self) -> None:
        """Streamed text that rang while the stream was cold (no frame of it for a
        STREAM_FRAME: an answer's first words, text after a pause) is shown at once, not on
        the next tick (up to TICK later); the frames after it keep the tick's pace. Until a
        frame shows some of it (the word being typed is held back), text still rings, for
        COLD_TRIES frames at most."""
        current = self.model.current
        before = current.shown_mark() if current is not None else None
        self.refresh()
        self._ensure_tick()
        if current is None or current.shown_mark() != before:
            self._streamed_at = self.clock()
            self._cold_misses = 0
        else:
            self._cold_misses += 1
        self.outbox.quiet = self._stream_waits()

    def _stream_waits(self) -> bool:
        """Whether streamed text waits for the tick (the outbox's `quiet`): it does unless
        the stream is cold (no text waits and none was shown for a STREAM_FRAME) and has not
        yet rung COLD_TRIES times for frames that showed none of it."""
        cold = not self._dirty and self.clock() - self._streamed_at >= STREAM_FRAME - TICK / 2
        return not cold or self._cold_misses >= COLD_TRIES

    def _ensure_tick(self, delay: float = TICK) -> None:
        if self._tick_handle is None and self.loop is not None:
            self._tick_handle = self.loop.set_alarm_in(delay, self._tick)
            self.outbox.quiet = self._stream_waits()

    def _tick(self, loop, _data) -> None:
        self._tick_handle = None
        self.outbox.quiet = False
        try:
            self._drain(ticking=True)  # the text that arrived quietly since the last tick
            if self.confirm is not None:
                self._confirm_tick(self.clock())
            # streamed text is copied into rows every STREAM_FRAME seconds (the tick after one waits so long)
            now = self.clock()
            streamed = self._dirty and now - self._streamed_at >= STREAM_FRAME - TICK / 2
            current = self.model.current
            if not self._dirty and current is not None and current.settle():
                self.model.touch(current)  # a quiet stream shows the word it held back
                streamed = True
            if streamed:
                self._streamed_at, self._cold_misses = now, 0
                self.refresh()
            if self.phase in M.ACTIVE_PHASES and self._check_agent():
                if not streamed and not self._dirty:  # moving text shows activity; the spinner is for silences
                    self.spin += 1
                    self.update_status()
                # text that moved is shown again a STREAM_FRAME later: no tick between two
                # frames of a stream (half the passes of the loop; its text waits quietly)
                self._ensure_tick(STREAM_FRAME if streamed else TICK)
            elif self._dirty:
                self._ensure_tick()  # text came with the turn's end: it is shown still
        except urwid.ExitMainLoop:  # ("leave",) drained here: /quit
            raise
        except Exception as exc:
            log.exception("tick failed")
            self.model.system("error", f"internal error in the display tick: {exc!r} (see the log)")
            self.refresh()
            if self.phase in M.ACTIVE_PHASES and not self.agent_down:
                self._ensure_tick()  # a failed tick must not stop the next (a question waits on it)

    def _check_agent(self) -> bool:
        """False (and the agent-down entry) when the agent thread has ended without saying
        so: a turn must never wait for an agent that is gone. Checked while a turn is active
        (on the tick) and on submit."""
        if self.agent_down or not self._agent_started or getattr(self.agent, "alive", True):
            return not self.agent_down
        self._drain()  # its own report, if it left one, says more
        if not self.agent_down:
            log.error("the agent thread has ended without a report")
            self.apply((M.AGENT_DOWN, "its thread ended without a report"))
            self.refresh()
        return False

    def _pending_entry(self):
        """The pending question's tool entry, if any."""
        return self.model.tools.get(self.confirm[1]) if self.confirm is not None else None

    def update_status(self) -> None:
        # the whole preview shows where it is in its own title row
        position = None if self.view.following or self.view_widget is not None else self.view.position()
        spinner = self.glyphs.spinner[self.spin % len(self.glyphs.spinner)]
        phase = "agent down" if self.agent_down else self.phase
        question = self._pending_entry()
        markup = status_markup(
            phase=phase,
            spinner=spinner,
            model=self.model_name,
            tokens=self.tokens,
            tokens_estimated=self.tokens_estimated,
            position=position,
            notice=self.notice,
            mode=self.mode,
            width=self._width,
            sep=self.glyphs.sep,
            dot=self.glyphs.system,
            # no session rule for a call that always asks; y/n only once its line reads Apply?
            session_rule=not (question is not None and question.always_asks),
            meter=self.meter,
            ready=question is None or question.ready,
        )
        if markup != self._status_markup:  # an unchanged bar keeps its cached canvas
            self._status_markup = markup
            self.status.set_text(markup)

    # ---- input ------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Once, when a person starts typing: load what the first turn needs, the Markdown
        parser here (a thread) and the tools in the agent (PREPARE). Not at rest: a session
        that is only open carries none of it (issue 16's memory at rest)."""
        self._warm_due = False
        if self._warmed:
            return
        self._warmed = True
        threading.Thread(target=warm_imports, name="warm", daemon=True).start()
        self.agent.send((M.PREPARE,))

    def _input_filter(self, keys, raw):
        """Gather bracketed paste into the prompt as text, so a pasted newline never submits;
        note when this read came and how many keys it held (a key alone in its read may be
        a decision; keys that came together are a paste, fast typing or a terminal's reply).
        The first key also starts the warm-up (_prepare), after the frame that shows it."""
        now = self.clock()
        if keys:
            self._key_since_draw = True
        if not self._warmed and any(key != "window resize" for key in keys):
            self._warm_due = True
        out = []
        for key in keys:
            if key == "begin paste":
                self._pasting = True
                self._paste = []
            elif key == "end paste":
                self._pasting = False
                if self._paste:
                    self._pasted("".join(self._paste), now)
                self._paste = []
            elif self._pasting:
                if key == "enter":
                    self._paste.append("\n")
                elif key == "tab":
                    self._paste.append("    ")
                elif isinstance(key, str) and len(key) == 1:
                    self._paste.append(key)
            elif not isinstance(key, str):
                continue  # a terminal's report (cursor position, device attributes): urwid's
                # process_input raises on tuples that are not mouse events, and we use no mouse
            else:
                if key == "window resize" and self.loop is not None:
                    self._on_resize()
                out.append(key)
        self._read_at = now
        self._read_alone = sum(1 for k in keys if k != "window resize") == 1
        self._read_left = sum(1 for k in out if isinstance(k, str) and k != "window resize")
        return out

    def _pasted(self, text: str, now: float) -> None:
        if self.confirm is None:
            self.prompt.insert_text(text)
            self.gate.typed(now)
            return
        # a paste never answers a question, and the prompt keeps its text meanwhile
        _verdict, cancelled = self.gate.key(None, "paste", now, False)
        if cancelled is not None:
            self._unused(self._held_key)
            self._held_key = ""
        self._unused(text)
        self._gate_says("explain", "a paste never decides: it was dropped; y/n alone decide")

    def _key_stamp(self) -> tuple[float, bool]:
        """(when, alone) of the key being handled: from its read when it came through
        _input_filter, else (a key handed to the widgets directly) now and alone."""
        if self._read_left > 0:
            self._read_left -= 1
            return self._read_at, self._read_alone
        return self.clock(), True

    def _on_resize(self) -> None:
        try:
            cols, rows = self.loop.screen.get_cols_rows()
        except Exception:
            return
        self._width = cols
        self.prompt_box.cap = max(1, min(8, rows // 3))
        self.update_status()

    def on_key(self, size, key):
        if isinstance(key, tuple):  # mouse events: not used
            return None
        at, alone = self._key_stamp()
        if toosmall.too_small(*size):
            return self._key_while_small(key, at, alone)
        if self._width != size[0]:
            self._width = size[0]
            self.prompt_box.cap = max(1, min(8, size[1] // 3))
            self.update_status()
        if self.confirm is not None:
            self._confirm_tick(at)  # a held y whose time has come acts before this key
        if self.root.overlay is not None:
            cmd = keymap.lookup(("help",), key)
            if cmd == "close_help":
                self.root.show(None)
            elif cmd == "help_scroll":
                self.root._w.keypress(size, key)
            return None
        if self.view_widget is not None:
            return self._view_key(size, key, at, alone)
        if self.confirm is not None:
            return self._confirm_key(key, at, alone)
        cmd = keymap.lookup(("global", "transcript", "prompt"), key)
        if cmd not in PASSING:
            self.gate.typed(at)  # a preview that appears now waits for a pause in this typing
        interrupt = cmd == "interrupt"
        try:
            if cmd is not None and self.command(cmd, size=size) is not False:
                return None
            # plain editing
            self.notice = "" if not interrupt else self.notice
            return self.frame.keypress(size, key)
        finally:
            if not interrupt:
                self._last_interrupt = False

    def _hide_confirm(self) -> None:
        """A pending question is not on screen (the too-small notice): it starts over, as if
        not drawn yet: nothing held, and the grace counts from when it is back."""
        if self.confirm is not None and (self.gate.shown_at is not None or self.gate.held is not None):
            self.gate.open()
            self._held_key = ""
            self._sync_ready(self.clock())

    def _key_while_small(self, key: str, at: float, alone: bool):
        """The too-small notice is on screen: only keys that are safe unseen act (Ctrl-C,
        Esc and Ctrl-D as their usual selves; Ctrl-L, Ctrl-Z). A question is not on screen,
        so its gate decides nothing (confirmgate rule 1); typing goes nowhere."""
        cmd = keymap.lookup(("global", "transcript", "prompt"), key)
        if cmd not in ("interrupt", "cancel", "quit_if_empty", "redraw", "suspend"):
            return None
        if cmd == "quit_if_empty" and self.prompt.edit_text:
            return None  # it would delete a character nobody can see
        if self.confirm is not None and cmd not in ("redraw", "suspend"):
            self._hide_confirm()  # also when the key came before the notice was drawn
            return self._confirm_key(key, at, alone)
        self.command(cmd)
        return None

    def command(self, cmd: str, size=None):
        """Run a keymap command. Returns False when the key should go on to the editor."""
        p = self.prompt
        if cmd == "submit":
            text = p.edit_text
            if text.endswith("\\") and p.edit_pos == len(text):
                p.set_edit_text(text[:-1])
                p.set_edit_pos(len(text) - 1)
                p.insert_newline()
                return None
            self.submit()
        elif cmd == "newline":
            p.insert_newline()
        elif cmd == "history_prev":
            if not p.on_first_line():
                return False
            entry = self.history.older(p.edit_text)
            if entry is not None:
                p.replace(entry)
        elif cmd == "history_next":
            if not p.on_last_line():
                return False
            entry = self.history.newer()
            if entry is not None:
                p.replace(entry)
        elif cmd == "external_editor":
            self.external_editor()
        elif cmd == "line_start":
            p.line_start()
        elif cmd == "line_end":
            p.line_end()
        elif cmd == "kill_line":
            p.kill_line()
        elif cmd == "quit_if_empty":
            if p.edit_text == "":
                self.quit()
            p.delete_forward()
        elif cmd == "cancel":
            if self.phase in M.ACTIVE_PHASES:
                self.agent.send((M.CANCEL,))
            self.notice = ""
            self.update_status()
        elif cmd == "interrupt":
            if self.phase in M.ACTIVE_PHASES:
                self.agent.send((M.CANCEL,))
                self._last_interrupt = False
            elif self._last_interrupt:
                self.quit()
            else:
                p.replace("")
                self._last_interrupt = True
                self.notice = "Ctrl-C again quits"
                self.update_status()
        elif cmd.startswith("scroll_"):
            self.view.scroll(cmd)
            self.update_status()
        elif cmd == "toggle_reasoning":
            self.view.show_reasoning = not self.view.show_reasoning
            self.view.rebuild()
        elif cmd == "redraw":
            if self.loop is not None:
                self.loop.screen.clear()
        elif cmd == "suspend":  # the whole job stops, not DashFloat alone (DashScreen.suspend)
            suspend = getattr(self.loop.screen, "suspend", None) if self.loop is not None else None
            if suspend is not None:
                suspend()
            else:
                os.killpg(os.getpgrp(), signal.SIGTSTP)
        elif cmd == "help":
            self.root.show(help_widget(self.ascii))
        elif cmd == "complete":
            from dashfloat import commands

            done = commands.complete(p.edit_text, p.edit_pos)
            if done is None:
                return False
            p.set_edit_text(done.text)
            p.set_edit_pos(done.cursor)
            self.notice = "  ".join(done.choices)
            self.update_status()
        return None

    def submit(self) -> None:
        text = self.prompt.edit_text
        if not text.strip():
            return
        from dashfloat import commands

        parsed = commands.parse(text)
        if parsed == ("quit", ""):  # at once, even while a turn runs (like Ctrl-D)
            self.prompt.replace("")
            self.quit()
        known = commands.lookup(parsed[0]) if parsed is not None else None
        if not self._check_agent():
            self.notice = "the agent is down"
            self.update_status()
            return
        if self.phase != "idle" and not (known is not None and known.anytime):
            self.notice = "a turn is running: Esc cancels it"
            self.update_status()
            return
        self.history.reset_navigation()
        # history.add appends one line to a file: hand it to a short-lived thread so the
        # UI thread stays free of file I/O
        threading.Thread(target=self.history.add, args=(text,), name="history", daemon=True).start()
        self.agent.send((M.PROMPT, text))
        self.prompt.replace("")
        self.view.scroll_to_end()
        self.notice = ""
        self.update_status()

    def external_editor(self) -> None:
        """Edit the prompt in $VISUAL/$EDITOR, with the screen stopped meanwhile."""
        import subprocess
        import tempfile
        import termios

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        fd, path = tempfile.mkstemp(prefix="dashfloat-prompt-", suffix=".md")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.prompt.edit_text)
            try:
                with self.loop.paused():
                    self._editor = subprocess.Popen(["/bin/sh", "-c", editor + ' "$1"', "editor", path])
                    try:
                        rc = self._editor.wait()  # a signal's handler runs meanwhile (PEP 475)
                    finally:
                        self._editor = None
            except (OSError, termios.error):
                if not self._hung_up:
                    raise
                # the terminal went away while the editor ran: the screen cannot start again
                log.info("terminal closed (hangup)")
                self.quit("hangup")
            if rc != 0:
                self.notice = f"editor exited with status {rc}; prompt unchanged"
            else:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                self.prompt.replace(text.rstrip("\n"))
        except OSError as exc:
            self.notice = f"editor failed: {exc.strerror or exc}"
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.update_status()

    @staticmethod
    def _end_editor(proc) -> None:
        """The terminal hung up (or SIGTERM) while the Ctrl-G editor runs in the foreground:
        DashFloat leads the session, so only it got the SIGHUP, and an editor that is not
        reading the terminal would keep DashFloat waiting forever. Pass the hangup on, as a
        shell does to its jobs: SIGHUP (then SIGCONT) to the editor and everything below it."""
        from dashfloat.tools.reaper import descendants

        for pid in descendants(proc.pid):
            for sig in (signal.SIGHUP, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass

    def start_agent(self) -> None:
        self.agent.start()
        self._agent_started = True

    # ---- run --------------------------------------------------------------------------
    def run(self) -> None:
        """Run until quit. Exceptions propagate after urwid has restored the terminal."""
        loop = self.loop or self.build_loop()
        old = self.install_signal_handlers()
        hook = threading.excepthook

        def thread_hook(args):
            log.error("exception in thread %s", args.thread.name if args.thread else "?",
                      exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
            if args.exc_type is not SystemExit:
                self.outbox.post((M.CRASH, f"thread {args.thread.name if args.thread else '?'}",
                                  f"{args.exc_type.__name__}: {args.exc_value}"[:300]))

        threading.excepthook = thread_hook

        def after_first_frame():
            settle()  # what start-up made, out of the collector's sight, then it runs
            gc.enable()  # (off since cli.main: start-up's objects were not walked)
            self.start_agent()

        loop.after_first_frame = after_first_frame
        switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            loop.run()
        except urwid.InputClosedError:
            # stdin read EOF: the terminal hung up (an ssh drop closes the pty), and the read
            # came before the SIGHUP the kernel sends with it. The same quiet exit as SIGHUP's.
            log.info("terminal closed (hangup)")
            self.quit_reason = "hangup"
        except OSError as exc:
            # a write to a terminal that hung up (a stalled link's blocked write, a frame
            # racing the EOF): the same hangup, recorded as one before the agent is told
            from dashfloat.hangup import hung_up

            if not hung_up(exc, sys.stdin.fileno()):
                raise
            log.info("terminal closed (hangup)")
            self.quit_reason = "hangup"
        finally:
            sys.setswitchinterval(switch)
            threading.excepthook = hook
            signal.set_wakeup_fd(self._old_wake_fd)
            for sig, handler in old.items():
                if sig == signal.SIGHUP and self.quit_reason == "hangup":
                    # the hangup's SIGHUP may still be on its way: it must not kill DashFloat
                    # before the commands are killed and the journal records the end
                    handler = signal.SIG_IGN
                try:
                    signal.signal(sig, handler)
                except (OSError, ValueError):
                    pass
            self.outbox.close()
            try:
                self.agent.send((M.QUIT,) if self.quit_reason == "quit" else (M.QUIT, self.quit_reason))
            except Exception:
                pass
            # no command (nor search program) may outlive the app, whatever the agent thread is doing now
            # (a module the agent is still importing has no kill_all yet, and has started nothing)
            for name in ("dashfloat.tools.exec", "dashfloat.tools.search"):
                kill_all = getattr(sys.modules.get(name), "kill_all", None)
                if kill_all is not None:
                    kill_all()
