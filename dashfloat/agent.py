"""The agent: owns the conversation and runs each turn, on its own thread.

It knows nothing of urwid. It reads plain tuples from its inbox (prompts, decisions and
cancels from a front end; stream and tool events from its worker threads) and reports
everything a front end shows through `post(tuple)` (see dashfloat.messages). A second,
headless front end can drive the same class.

A turn is a sequence of episodes: stream the model's answer; if it asked for tools, run
them one by one (a mutation waits for the front end's decision on a preview), append
one tool message per call in call order, and stream again, until the model answers
without tools, the turn is cancelled, or the episode limit is reached. Every way out of
a turn leaves a result for every announced call, and `conversation.repair` checks the
pairing invariant again before each request.

Worker events carry the episode number, so events that arrive after a cancel are dropped.

The session journal (dashfloat/journal.py) is written here and only here, on this thread:
everything posted to the front end (but what other events imply), the prompt and the answer,
each call's decision and result as the model reads it, file changes for /undo, the end of each
turn, with an fsync before a call with a side effect runs and at the end of a turn. A resumed
session starts with the conversation its journal holds; a turn that never ended gets its calls
answered (`cancelled`, outcome unknown) and the model is told with the next prompt.

Metering (dashfloat/metering.py): every request is metered, the provider's usage or an
estimate (`~`), into the totals (METER for the status bar, a `usage` journal event each, /usage);
the UI's context figure still comes from the final episode's usage only (ADR 0007 §5). Before
each request the budgets are checked, and after it: a budget reached ends the turn with an entry,
a `budget` journal event and ("stopped", "budget", detail) (headless mode's stop reason). The
repeat guard counts identical calls in a row within a turn (tools/pipeline.py, stage_repeat).

Supervision (ADR 0007 §2, §6): every worker thread (streamer, gate, tool, model list) is
started by `_spawn`, which puts exactly one terminal message in the inbox however the work
ends, a BaseException (SystemExit from a tool, GeneratorExit...) included, so no turn ever
waits for a message that cannot come. A message whose handling raises ends the turn (the
partial answer kept, every announced call answered) and the agent goes on; only a failure
of that recovery stops the agent thread, and then `_run` posts AGENT_DOWN on its way out.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import typing  # noqa: F401  (see below)
from collections.abc import Callable

from dashfloat import commands, context, conversation, masking, metering
from dashfloat import messages as M
from dashfloat.llm.endpoint import Endpoint
from dashfloat.tools import results

# typing is imported here, on the main thread, before any worker starts: the agent thread's
# lazy imports (tools' NamedTuples, requests) import it, and a dataclass defined meanwhile on
# the main thread reads sys.modules["typing"] half-made ("partially initialized module
# 'typing' has no attribute 'ClassVar"), which killed a headless run now and then.

log = logging.getLogger("dashfloat.agent")

MODEL_LIST_SHOWN = 30
MODEL_CLOSEST = 5  # names offered when /model NAME is not in the endpoint's list
CRASHES_IN_A_ROW = 3  # handling that fails this often without a success in between: stop
READ_POOL = 10  # read-only calls of one episode running at once
FILE_TOOL_TIMEOUT = 60.0  # a file tool still busy after this is abandoned (a hung mount)
EXEC_GRACE = 5.0  # execute_command enforces its own timeout; the agent waits this much more
REPORT_WAIT = 10.0  # a turn's end waits this long at most for git's reports on its commands
TITLE_CHARS = 100  # of a session's first prompt, in its journal's header (for the listing)
UNDO_NAMED = 10  # files an /undo report names; the rest are counted
INTERRUPTED_NOTE = ("[DashFloat: your previous turn was interrupted: DashFloat stopped (it was killed, crashed "
                    "or lost its terminal) before the turn ended. A call whose result says cancelled and "
                    "'outcome unknown' may or may not have run: check the state of what it touches before "
                    "repeating it.]")


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception, even one whose str() raises."""
    try:
        text = str(exc)
    except BaseException:  # a broken __str__ must not break the report
        text = "(no message)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _spawn(name: str, put: Callable[[tuple], None], body: Callable[[], tuple],
           failed: Callable[[str], tuple]) -> None:
    """Run `body` on a daemon thread and `put` exactly one terminal message: what `body`
    returns, or `failed(reason)` however it ends (any BaseException included)."""

    def run() -> None:
        msg = None
        try:
            msg = body()
        except BaseException as exc:  # a worker that dies must still answer
            log.error("thread %s ended by %s", name, type(exc).__name__, exc_info=True)
            msg = failed(describe(exc))
        finally:
            put(msg if msg is not None else failed("it ended without a result"))

    threading.Thread(target=run, name=name, daemon=True).start()


class Call:
    """One announced tool call and where it stands."""

    def __init__(self, raw: dict):
        self.id: str = raw["id"]
        self.name: str = raw.get("name") or ""
        self.raw = raw
        self.args: dict | None = None
        self.prepared = None
        self.gate: tuple[str, object] | None = None
        self.ctx = None  # its tools.pipeline.CallContext once gated
        self.result: dict | None = None
        self.recorded = False  # its result is in the journal
        self.repeats = 0  # identical calls just before it in the turn (the repeat guard)
        self.asked_ref = None  # the ref of the question shown for it: only a key for that ref decides it


def _always_asks(call: Call) -> str:
    """Why the built-in protection makes this call ask every time ("" if it does not): a
    file that runs code later, .git internals, DashFloat's own config."""
    decision = getattr(call.ctx, "rule_decision", None)
    return getattr(decision, "always_asks", "") or ""


def options_from(config) -> dict:
    """The Agent's keyword arguments that come from a loaded configuration (dashfloat/config.py):
    one place, so the full-screen and the headless front ends cannot run different agents."""
    return dict(
        root=str(config.root), max_episodes=config.max_episodes, exec_timeout=config.exec_timeout,
        exec_max_processes=config.exec_max_processes, policy_config=config, pre_hooks=config.pre_tool_use,
        post_hooks=config.post_tool_use, hook_timeout=config.hook_timeout, context_window=config.context_window,
        compact_threshold=config.compact_threshold,
        budgets=metering.Budgets(config.max_turns, config.max_tokens, config.max_cost), prices=config.prices,
    )


class Agent:
    """Conversation state plus the turn state machine.

    phases: idle -> waiting -> streaming -> (running | confirming)* -> ... -> idle
    """

    def __init__(
        self,
        endpoint: Endpoint,
        model: str | None,
        post: Callable[[tuple], None],
        *,
        root: str = ".",
        stream_fn=None,
        list_models_fn=None,
        tools_enabled: bool = True,
        max_episodes: int = 50,
        exec_timeout: float = 30.0,
        exec_max_processes: int = 1024,
        policy=None,
        pre_hooks: tuple[str, ...] = (),
        post_hooks: tuple[str, ...] = (),
        hook_timeout: float = 10.0,
        journal=None,
        resumed=None,
        git_report: bool = True,
        context_window: int | None = None,
        compact_threshold: float = context.DEFAULT_THRESHOLD,
        environ=None,
        window_fn=None,
        budgets: metering.Budgets | None = None,
        prices: dict | None = None,
        policy_config=None,
    ):
        self.endpoint = endpoint
        self.model = model
        self._ui_post = post
        self.journal = journal  # journal.Journal, or None: this session is not recorded
        self.git_report = git_report  # say which files an approved command changed (git status)
        self.root = root
        self.tools_enabled = tools_enabled
        self.max_episodes = max_episodes
        self.exec_timeout = exec_timeout
        self.exec_max_processes = exec_max_processes
        self._policy = policy  # tools.permissions.Policy; None: built at first use (see `policy`)
        self._policy_config = policy_config  # a config.Config to build it from (else the defaults)
        self.pre_hooks = tuple(pre_hooks)
        self.post_hooks = tuple(post_hooks)
        self.hook_timeout = hook_timeout
        # the API key and secret header values: redacted from tool results
        self.secrets = masking.collect(endpoint.api_key, endpoint.headers)
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.messages: list[dict] = []
        self._stream_fn = stream_fn
        self._list_models_fn = list_models_fn
        self._client = None
        self._runner_mod = None  # tools.runner and tools.pipeline, loaded by _load_tools
        self._pipeline_mod = None
        self._thread: threading.Thread | None = None
        # turn state
        self._busy = False
        self._episode = 0  # global counter: tags worker events
        self._episodes_in_turn = 0
        self._cancel = None  # the CancelToken of the running stream
        self._content: list[str] = []
        self._episode_lock = threading.Lock()
        self._phase = "idle"
        self._calls: list[Call] = []
        self._call_index = 0
        self._confirm_ref = 0
        self._running: dict[str, tuple[Call, object]] = {}  # call id -> (call, its Cancel)
        self._gating: dict[str, object] = {}  # call id -> the Cancel of its gate thread
        self._deadlines: dict[str, tuple[float, float]] = {}  # call id -> (monotonic deadline, limit)
        self._stopping = False  # a cancel arrived while a tool ran: finish it, then stop
        self._stop_why = ""  # the front end's reason for that cancel ("" for Esc or Ctrl-C)
        self._final_usage: dict | None = None
        self._final_estimate: int | None = None  # the latest episode's tokens as estimated, when it sent no usage
        self._discovering = False
        self._pending_prompt: str | None = None
        self._answer_open = False  # an ASSISTANT_START was posted without its ASSISTANT_END
        self._model_check: tuple[int, str] | None = None  # (ref, name) of a /model NAME being checked
        self._listing = False  # /model without a name: its turn ends when the model list is in
        self._cmd_pending = False  # /sessions: its turn ends when its worker's answer (CMD_DONE) is in
        self._reports: set[str] = set()  # commands whose git status report is still to come
        self._held_end: tuple | None = None  # TURN_END waiting for those reports (REPORT_WAIT at most)
        self._held_until = 0.0
        self._check_ref = 0
        self._reasoning: list[str] = []  # the episode's reasoning, for the journal
        # /copy: the text of the turn being answered, and of the latest turn that wrote any
        self._turn_texts: list[str] = []
        self._last_answer: list[str] = []
        self.clipboard = True  # the front end has a terminal to put /copy's text on (not headless)
        # the session (journal): turns so far, the last request's token count, notes the model
        # gets with the next prompt, file changes for /undo and how their calls ended
        self._resumed = resumed
        self._turn = 0
        self._turn_open = False
        self._tokens: int | None = None
        self._tokens_estimated = False  # _tokens is DashFloat's estimate: the provider sent no usage
        self._model_notes: list[str] = []
        self._changes: list[dict] = []
        self._outcomes: dict[str, bool] = {}
        self._undone: set[int] = set()
        self._undo = None  # the /undo being run (UndoRun)
        self._undo_ref = 0
        # the context window (dashfloat/context.py): the system message, the estimate, compaction
        self._ctx = context.ContextManager(context_window, compact_threshold)
        self._window_set = context_window is not None  # configured: the endpoint is not asked
        self._environ = os.environ if environ is None else environ
        self._window_fn = window_fn
        self._window_asked: str | None = None  # the model whose window was asked for
        self._compaction = None  # (ref, plan, then, CancelToken) of a summary request under way
        self._compact_ref = 0
        self._compacted = False  # the next episode was just compacted for: do not check again
        self._sent_raw: int | None = None  # the raw estimate of the request last sent
        self._overflow_retried = False  # this turn already compacted after a context_length error
        self._compaction_changed = False  # the last compaction changed the conversation
        # metering: the totals and budgets, the estimate of the request in flight; the repeat
        # guard's last call
        self.meter = metering.Meter(budgets or metering.Budgets(), dict(prices or {}))
        self._request_input = 0
        self._repeat: tuple[str, int] = ("", 0)  # (key of the last call, how many in a row)
        if resumed is not None:
            self.messages = list(resumed.conversation)
            self._turn = resumed.turns
            self._tokens = resumed.tokens
            self._tokens_estimated = resumed.tokens_estimated
            self._model_notes = list(resumed.model_notes)
            self._changes = list(resumed.changes)
            self._outcomes = dict(resumed.outcomes)
            self._undone = set(resumed.undone)
            self.meter.earlier = metering.Totals.from_dict(getattr(resumed, "meter", None))
            self._last_answer = _last_answer(self.messages)
        if journal is not None:
            journal.on_error = lambda text: self.post(M.system("warn", text))

    # ---- the journal -------------------------------------------------------------------
    def post(self, msg: tuple) -> None:
        """Journal a message for the front end (journal.ui skips what other events imply),
        then hand it over."""
        if self.journal is not None:
            self.journal.ui(msg)
        self._ui_post(msg)

    def _j(self, type_: str, **fields) -> None:
        if self.journal is not None:
            self.journal.event(type_, **fields)

    def _sync(self) -> None:
        if self.journal is not None:
            self.journal.sync()

    # ---- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agent", daemon=True)
        self._thread.start()

    def send(self, msg: tuple) -> None:
        """Thread-safe: a front end hands the agent a message."""
        self.inbox.put(msg)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _load_modules(self) -> None:
        """Import the HTTP stack here, on the agent thread, so the UI's first frame never
        waits for it. The tools' runner and pipeline (~2 MiB a session that asks nothing
        does not carry: issue 16's memory at rest) load when the front end says a person
        has started typing (PREPARE), else once the first request is on its way (they
        overlap the wait for its answer), or at their first use; the policy is built now
        when nothing is waiting (a person has yet to type)."""
        from dashfloat.llm import client
        from dashfloat.llm.errors import ChatError
        from dashfloat.tools import catalogue

        self._ChatError = ChatError
        self._catalogue = catalogue
        self._client = client
        if self._stream_fn is None:
            self._stream_fn = client.stream_chat
        if self._list_models_fn is None:
            self._list_models_fn = client.list_models
        if self._window_fn is None:
            self._window_fn = client.context_window
        if self.inbox.empty():
            _ = self.policy

    def _load_tools(self) -> None:
        from dashfloat.tools import pipeline, runner

        self._pipeline_mod, self._runner_mod = pipeline, runner

    @property
    def _runner(self):
        """tools.runner, loaded at first use."""
        if self._runner_mod is None:
            self._load_tools()
        return self._runner_mod

    @property
    def _pipeline(self):
        """tools.pipeline, loaded at first use."""
        if self._pipeline_mod is None:
            self._load_tools()
        return self._pipeline_mod

    @property
    def policy(self):
        """The permission policy (tools.permissions.Policy), built at first use from
        `policy_config` (or the built-in defaults) when none was given."""
        if self._policy is None:
            from dashfloat.tools.permissions import Policy

            config = self._policy_config
            self._policy = Policy.from_config(config) if config is not None else Policy()
        return self._policy

    @policy.setter
    def policy(self, value) -> None:
        self._policy = value

    def _mode_name(self) -> str:
        """The permission mode, without building the policy for it."""
        if self._policy is None and self._policy_config is not None:
            return self._policy_config.permission_mode
        return self.policy.mode

    def _run(self) -> None:
        down = "its thread ended"  # None once it leaves because it was asked to
        try:
            self._load_modules()
            self._set_phase("idle")
            self.post((M.MODE, self._mode_name()))
            self._load_context()
            self._ui_post((M.METER, self.meter.view()))
            if self.model:
                self.post((M.MODEL, self.model))
                self._ask_window()
            else:
                self._discover()
            if self._resumed is not None:
                self._resume()
            crashes = 0
            while True:
                try:
                    msg = self.inbox.get(timeout=self._wait_timeout())
                except queue.Empty:
                    msg = ("deadline",)  # a running call may be past its deadline
                if msg[0] == M.QUIT:
                    down = None
                    why = msg[1] if len(msg) > 1 else "quit"
                    self._keep_streamed(why)
                    self._shutdown()
                    self._close_journal(why)
                    return
                try:
                    if msg[0] == "deadline":
                        self._check_deadlines()
                    else:
                        self.handle(msg)
                    crashes = 0
                except BaseException as exc:  # a bug ends the turn, not the agent
                    crashes += 1
                    if crashes >= CRASHES_IN_A_ROW:
                        raise
                    self._recover(msg, exc)
        except BaseException as exc:  # report and stop; the UI stays usable
            log.error("agent thread crashed", exc_info=True)
            down = describe(exc)
        finally:
            if down is not None:
                try:
                    self._shutdown()
                except BaseException:  # the report below matters more
                    log.error("shutdown after the crash failed", exc_info=True)
                self.post((M.AGENT_DOWN, down))
                self._close_journal("agent_down", why=down)

    def _recover(self, msg: tuple, exc: BaseException) -> None:
        """Handling `msg` raised: stop what runs, end the turn as a failure (the partial
        answer kept, every announced call answered), say so, and be ready for a prompt."""
        log.error("agent failed handling %r", msg[:1], exc_info=(type(exc), exc, exc.__traceback__))
        what = f"internal error while handling {msg[0]!r}: {describe(exc)}"
        if not self._busy:
            self.post(M.system("error", f"{what} (details in the log)."))
            self._set_phase("idle")
            return
        with self._episode_lock:  # no token of this episode is posted after this
            self._cancel_stream()
        for _call, cancel in list(self._running.values()):
            cancel.cancel()
        for cancel in list(self._gating.values()):
            cancel.cancel()
        self._pending_prompt = None
        if self._undo is not None:
            self._undo = None
        if self._compaction is not None:
            self._compaction[3].cancel()
            self._compaction = None
        if self._answer_open:
            content = "".join(self._content)
            if content:
                self.messages.append({"role": "assistant", "content": content})
            self._end_answer("error", content)
        announced = {c.get("id") for m in self.messages if m.get("role") == "assistant"
                     for c in (m.get("tool_calls") or [])}
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        for call in self._calls:
            if call.id in announced and call.id not in answered:
                if call.result is None:
                    call.result = results.error("internal", f"not run: {what}")
                self._append_result(call)
        self._calls = []
        self.post(M.system("error", f"The turn stopped on an {what}. The conversation is kept; "
                                    "say how to go on (details in the log)."))
        self._end_turn("error")

    def _keep_streamed(self, why: str) -> None:
        """Leaving while an answer streams (an ssh drop, a signal, a quit): stop it as Esc
        does, so the journal keeps the part that was on screen (and --continue shows it)
        and records the turn as cancelled `by` why."""
        if (self._busy and self._cancel is not None and self._undo is None
                and self._model_check is None and self._compaction is None):
            try:
                self._on_cancel(why)
            except Exception:  # leaving matters more than the record
                log.exception("keeping the streamed answer failed")

    def _shutdown(self) -> None:
        """Stop the stream and any running command (its whole process group)."""
        self._cancel_stream()
        for _call, cancel in list(self._running.values()):
            cancel.cancel()
        if self._runner_mod is not None:
            try:
                self._runner_mod.kill_all()
            except Exception:
                log.exception("kill_all failed")

    # ---- dispatch ---------------------------------------------------------------------
    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == M.PROMPT:
            self._on_prompt(msg[1])
        elif kind == M.CANCEL:
            self._on_cancel(msg[1] if len(msg) > 1 else "")
        elif kind == M.PREPARE:
            if self._pipeline_mod is None:
                self._load_tools()
        elif kind == M.CONFIRM_DECISION:
            self._on_decision(msg[1], msg[2], msg[3] if len(msg) > 3 else None)
        elif kind == M.MODELS:
            self._on_models(msg[1], msg[2])
        elif kind == M.MODEL_CHECK:
            self._on_model_check(msg[1], msg[2], msg[3], msg[4])
        elif kind in (M.S_DONE, M.S_FAILED):
            if msg[1] != self._episode or not self._busy or self._cancel is None:
                return  # a late event of a cancelled episode
            self._on_stream(kind, msg[2])
        elif kind == M.T_NOTE:  # a note for a row on screen, whenever it comes
            self.post((M.TOOL_NOTE, msg[2], msg[3]))
        elif kind == M.T_GIT:  # git's report on a command, whenever it comes
            self._on_git_report(msg[2], msg[3], msg[4])
        elif kind == M.U_DONE:
            self._on_undo_step(msg[1], msg[2])
        elif kind == M.C_DONE:
            self._on_compacted(msg[1], msg[2], msg[3])
        elif kind == M.WINDOW:
            self._on_window(msg[1], msg[2], msg[3])
        elif kind == M.CMD_DONE:  # a slash command's answer from its worker: its turn ends with it
            self.post(M.system(msg[2], msg[3]))
            if self._cmd_pending:
                self._cmd_pending = False
                self.post(M.turn_end("done" if msg[2] != "error" else "error"))
        elif kind in (M.T_OUTPUT, M.T_DONE, M.T_GATE):
            if msg[1] != self._episode or not self._busy:
                return
            if kind == M.T_OUTPUT:
                self.post((M.TOOL_OUTPUT, msg[2], msg[3]))
            elif kind == M.T_GATE:
                self._on_gate(msg[2], msg[3], msg[4])
            else:
                self._on_tool_done(msg[2], msg[3])
        else:
            log.warning("agent ignored unknown message %r", kind)

    def _end_answer(self, status: str, content: str = "", tool_calls: list | None = None) -> None:
        """End the answer on screen, and journal it: what it said (the conversation holds
        its message when it has content or calls), the reasoning shown apart, the calls."""
        self._answer_open = False
        if content:
            self._turn_texts.append(content)
            self._last_answer = list(self._turn_texts)
        reasoning = "".join(self._reasoning)
        if reasoning:  # an event of its own: a resume reads it only for the turns it shows
            self._j("reasoning", text=reasoning)
        fields: dict = {"status": status}
        if content:
            fields["content"] = content
        if tool_calls:
            fields["calls"] = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                               for c in tool_calls]
        self._j("answer", **fields)
        self.post((M.ASSISTANT_END, status))
        # the answer lives on as one string (the conversation, the journal): the pieces it
        # streamed in are not kept beside it (a 4 MiB answer would be held twice)
        self._content, self._reasoning = [], []

    def _set_phase(self, name: str) -> None:
        if name != self._phase or name == "idle":
            self._phase = name
            self.post(M.phase(name))

    # ---- model discovery --------------------------------------------------------------
    def _discover(self) -> None:
        """Ask GET /models on a worker thread; the answer arrives as ("models", ok, payload)."""
        if self._discovering:
            return
        self._discovering = True

        def work() -> tuple:
            try:
                return (M.MODELS, True, self._list_models_fn(self.endpoint))
            except self._ChatError as exc:
                return (M.MODELS, False, exc.as_dict())

        _spawn("models", self.inbox.put, work,
               lambda why: (M.MODELS, False, {"message": f"the model list failed: {why}", "hint": "see the log"}))

    def _on_models(self, ok: bool, payload) -> None:
        self._discovering = False
        pending, self._pending_prompt = self._pending_prompt, None
        listing, self._listing = self._listing, False
        if not ok:
            self.post(M.system("error", _error_line(payload)))
            if pending is not None:
                self._end_turn("error")
            elif listing:
                self.post(M.turn_end("done"))
            return
        models = list(payload)
        if len(models) == 1:
            self.model = models[0]
            self.post((M.MODEL, self.model))
            self._ask_window()
            self.post(M.system("info", f"Using model {self.model}, the only one {self.endpoint.base_url} serves."))
            if pending is not None:
                self._start_episode()
            elif listing:
                self.post(M.turn_end("done"))
            return
        if not models:
            text = f"{self.endpoint.base_url} lists no models. Choose one with --model NAME or DASHFLOAT_MODEL."
        else:
            shown = ", ".join(models[:MODEL_LIST_SHOWN])
            more = f" and {len(models) - MODEL_LIST_SHOWN} more" if len(models) > MODEL_LIST_SHOWN else ""
            text = (
                f"{self.endpoint.base_url} serves {len(models)} models: {shown}{more}. "
                "Choose one with /model NAME, or start with --model NAME (or DASHFLOAT_MODEL)."
            )
        self.post(M.system("warn", text))
        if pending is not None:
            self._end_turn("config")
        elif listing:
            self.post(M.turn_end("done"))

    # ---- turns ------------------------------------------------------------------------
    def _on_prompt(self, text: str) -> None:
        command = commands.parse(text)
        known = commands.lookup(command[0]) if command is not None else None
        if self._busy and known is not None and known.anytime:
            self._dispatch_slash(*command)  # beside the turn: it ends nothing
            return
        if self._busy:
            self.post(M.system("warn", "A turn is still running: press Esc to cancel it first."))
            return
        self._post_held_end()
        if command is not None:
            self._dispatch_slash(*command)
            # done at once (/undo, /compact, /model [NAME] and /sessions end when their worker does)
            if not self._busy and not self._listing and not self._cmd_pending:
                self.post(M.turn_end("done"))
            return
        self._turn += 1
        self._turn_open = True
        self._turn_texts = []
        note = "\n\n".join(self._model_notes)
        self._model_notes = []
        if self.journal is not None and not self.journal.started:
            self.journal.begin(title=text.strip().split("\n", 1)[0][:TITLE_CHARS], model=self.model)
        self._j("prompt", turn=self._turn, text=text, **({"note": note} if note else {}))
        self.post((M.USER, text))
        self.messages.append({"role": "user", "content": f"{note}\n\n{text}" if note else text})
        self._busy = True
        self._episodes_in_turn = 0
        self._final_usage = None
        self._final_estimate = None
        self._stopping = False
        self._overflow_retried = False
        self.meter.begin_turn()
        self._repeat = ("", 0)
        if self.model is None:
            self._set_phase("waiting")
            self._pending_prompt = text
            self._discover()
            return
        self._start_episode()

    # ---- slash commands (the table: dashfloat/commands.py) ------------------------------
    def _dispatch_slash(self, name: str, rest: str) -> None:
        cmd = commands.lookup(name)
        if cmd is None:
            self.post(M.system("error", commands.unknown_text(name)))
            return
        getattr(self, f"_{cmd.name}_command")(rest)

    def _help_command(self, rest: str) -> None:
        self.post(M.system("info", commands.help_text(rest)))

    def _model_command(self, name: str) -> None:
        if not name:
            if self.model:
                self.post(M.system("info", f"Model: {self.model}. /model NAME switches."))
            self._listing = True
            self._discover()
            return
        if len(name.split()) > 1:
            self.post(M.system("error", f"/model takes one model name, not {name!r}."))
            return
        # the endpoint's list decides; it is asked on a worker thread, like a turn
        self._check_ref += 1
        ref = self._check_ref
        self._model_check = (ref, name)
        self._busy = True
        self._final_usage = None
        self._final_estimate = None
        self._set_phase("waiting")

        def work() -> tuple:
            try:
                return (M.MODEL_CHECK, ref, name, True, list(self._list_models_fn(self.endpoint)))
            except self._ChatError as exc:
                return (M.MODEL_CHECK, ref, name, False, exc.as_dict())

        _spawn("model-check", self.inbox.put, work,
               lambda why: (M.MODEL_CHECK, ref, name, False, {"message": f"the model list failed: {why}"}))

    def _on_model_check(self, ref: int, name: str, ok: bool, payload) -> None:
        if self._model_check is None or self._model_check[0] != ref:
            return  # cancelled meanwhile
        self._model_check = None
        if ok and payload and not _model_listed(name, payload):
            near = _closest_models(name, payload)
            offer = f" Closest: {', '.join(near)}." if near else ""
            keep = f" The model stays {self.model}." if self.model else ""
            self.post(M.system("error", f"{self.endpoint.base_url} has no model {name!r}.{offer} "
                                        f"/model lists all {len(payload)}.{keep}"))
        else:
            self.model = name
            self.post((M.MODEL, name))
            self._ask_window()
            if ok and payload:
                self.post(M.system("info", f"Model set to {name}."))
            elif ok:
                self.post(M.system("warn", f"Model set to {name}, unchecked: {self.endpoint.base_url} "
                                           "lists no models."))
            else:
                why = _error_line(payload).rstrip(".")
                self.post(M.system("warn", f"Model set to {name}, unchecked: the endpoint's model list "
                                           f"is not available ({why})."))
        self._end_turn("done")

    def _mode_command(self, name: str) -> None:
        from dashfloat.tools import rules

        if not name:
            self.post(M.system("info", f"Permission mode: {self.policy.mode}. /mode NAME switches "
                                       f"({', '.join(rules.MODES)})."))
            return
        try:
            self.policy.mode = name
        except ValueError as exc:
            self.post(M.system("error", str(exc)))
            return
        if self.journal is None:
            log.info("audit: permission mode set to %s by the user (/mode)", name)
        self._j("audit", what="mode", mode=self.policy.mode, by="user (/mode)")
        self.post((M.MODE, self.policy.mode))
        self.post(M.system("info", f"Permission mode set to {self.policy.mode}."))

    def _permissions_command(self, rest: str) -> None:
        words = rest.split()
        if words[:1] == ["revoke"]:
            self._revoke(words[1:])
            return
        if words:
            self.post(M.system("error", f"/permissions does not take {rest!r}: /permissions lists the rules, "
                                        "/permissions revoke N removes session rule N."))
            return
        lines = self.policy.describe()
        session = self.policy.session_rules()
        if session:
            lines.append("Session rules, by number (/permissions revoke N removes one):")
            lines.extend(f"  {i}. {rule.text}" for i, rule in enumerate(session, 1))
        else:
            lines.append("No session rules yet: the a key on a confirmation adds one.")
        self.post(M.system("info", "\n".join(lines)))

    def _revoke(self, words: list[str]) -> None:
        count = len(self.policy.session_rules())
        if count == 0:
            self.post(M.system("error", "There are no session rules to revoke (the a key on a confirmation "
                                        "adds one; /permissions lists the rules)."))
            return
        if len(words) != 1 or not words[0].isdigit():
            self.post(M.system("error", "/permissions revoke N: N is a session rule's number, "
                                        f"1 to {count} (see /permissions)."))
            return
        n = int(words[0])
        if not 1 <= n <= count:
            are = "there is 1" if count == 1 else f"there are {count}"
            self.post(M.system("error", f"There is no session rule {n}: {are} (see /permissions)."))
            return
        try:
            rule = self.policy.revoke(n - 1)
        except IndexError:  # revoked meanwhile (the policy is shared)
            self.post(M.system("error", f"There is no session rule {n} any more (see /permissions)."))
            return
        if self.journal is None:
            log.info("audit: session rule revoked by the user: %s", rule.text)
        self._j("audit", what="revoke", rule=rule.text, by="user (/permissions revoke)")
        self.post(M.system("info", f"Revoked session rule {n}: {rule.text}"))

    # ---- resume ----------------------------------------------------------------------------
    def _resume(self) -> None:
        """The first thing a resumed session does: say what was skipped in its journal and,
        when its last turn never ended, answer every call left open (`cancelled`: did not
        run, or outcome unknown when it was running) and tell the model with the next prompt."""
        r, self._resumed = self._resumed, None
        when = _started_text(r.header.get("time"))
        for note in r.notes:
            self.post(M.system("warn", f"Resuming: {note}."))
        if r.open_turn:
            self._answer_interrupted(r)
        else:
            self._j("resume", interrupted=False)
        self.post(M.system("info", f"Resumed session {r.header.get('id', '?')}, {when}: "
                                   f"{r.turns} turn{'s' if r.turns != 1 else ''} so far."))
        self._sync()

    def _answer_interrupted(self, r) -> None:
        """The last turn never ended: answer its open calls, close it, note it for the model."""
        from dashfloat.sessions import INTERRUPTED_RUNNING, INTERRUPTED_WAITING

        if r.pending_confirm:
            self.post((M.DECIDED, r.pending_confirm, "not decided: DashFloat stopped while this question was open"))
        for c in r.open_calls:
            if c.get("started"):
                why = INTERRUPTED_RUNNING
            elif c.get("name") in self._runner.READ_ONLY:
                why = "DashFloat stopped before this call's result was recorded; it only reads, so it changed nothing"
            else:
                why = INTERRUPTED_WAITING
            call = Call({"id": c["id"], "name": c.get("name") or ""})
            call.result = results.cancelled(error=why)
            self._record_result(call)
            self._ui_post((M.TOOL_RESULT, self._runner.result_row(call.id, call.name, call.result)))
            self.messages.append(conversation.tool_message(call.id, call.result))
        self._model_notes.append(INTERRUPTED_NOTE)
        self._j("resume", interrupted=True, note=INTERRUPTED_NOTE)
        fields: dict = {"turn": self._turn, "status": "interrupted", **self._token_fields()}
        self._j("turn_end", **fields)
        open_calls = len(r.open_calls)
        calls = (f" {open_calls} call{'s' if open_calls != 1 else ''} it left open "
                 f"{'are' if open_calls != 1 else 'is'} marked cancelled." if open_calls else "")
        self.post(M.system("warn", "The last turn was interrupted: DashFloat stopped before it ended." + calls
                           + " The model is told so with your next prompt, and checks before repeating anything."))

    def _token_fields(self) -> dict:
        """The conversation's size at its last request, for the journal (`dashfloat sessions`)."""
        if self._tokens is None:
            return {}
        return {"tokens": self._tokens, "tokens_estimated": True} if self._tokens_estimated else {"tokens": self._tokens}

    def _close_journal(self, reason: str, **fields) -> None:
        if self.journal is None:
            return
        try:
            fields.update(self._token_fields())
            self.journal.close(reason, turn=self._turn, **fields)
        except Exception:
            log.exception("closing the journal failed")

    # ---- the context window (dashfloat/context.py, dashfloat/prompt.py) --------------------------
    def _tools(self):
        return self._catalogue.TOOLS if self.tools_enabled else None

    def _load_context(self) -> None:
        """The system message of every request: the built-in prompt and the AGENTS.md files,
        read now (at start, so also on resume, and on /clear); a dim entry names the files."""
        from dashfloat import prompt

        tools = self._tools() or []
        names = [t["function"]["name"] for t in tools]
        try:
            found = prompt.load_instructions(self.root, self._environ)
        except Exception as exc:  # a bug here must not cost the session its prompt
            log.error("loading the instructions failed", exc_info=True)
            found = prompt.Instructions(problems=[f"reading them failed: {describe(exc)}"])
        text = prompt.system_prompt(os.path.abspath(self.root), names, set(self._catalogue.READ_ONLY))
        self._ctx.system = prompt.system_message(text, found)
        entry = found.entry()
        if entry:
            self.post(M.system("note", entry))

    def _ask_window(self) -> None:
        """Ask the endpoint for the model's context window, on a worker (unless configured)."""
        model = self.model
        if self._window_set or not model or self._window_asked == model:
            return
        if self._window_asked is not None:  # another model: what was learned of the last one does not hold
            self._ctx.set_window(context.DEFAULT_WINDOW, "default")
        self._window_asked = model
        fn, endpoint = self._window_fn, self.endpoint

        def work() -> tuple:
            try:
                found = fn(endpoint, model)
            except self._ChatError as exc:
                log.info("the endpoint's model list gave no context window: %s", exc)
                found = None
            return (M.WINDOW, model, *(found or (None, "")))

        _spawn("window", self.inbox.put, work, lambda why: (M.WINDOW, model, None, why))

    def _on_window(self, model: str, tokens, source: str) -> None:
        if model != self.model or self._window_set:
            return  # the model changed meanwhile, or the configuration decides
        if self._ctx.source in ("the server's error", "estimated after a refusal"):
            return  # a refusal came first: what the server does beats what a list says
        if tokens:
            self._ctx.set_window(int(tokens), source)
            log.info("context window of %s: %d tokens (%s)", model, tokens, source)
        else:
            self._ctx.set_window(context.DEFAULT_WINDOW, "default")
            log.info("context window of %s: not stated (%s); %d assumed", model, source or "the model list says nothing",
                     context.DEFAULT_WINDOW)

    def _window_text(self) -> str:
        c = self._ctx
        where = {"default": "assumed: the endpoint does not say", "configuration": "from the configuration"}.get(
            c.source, f"from {c.source}")
        return f"the window is {c.window:,} tokens ({where}), compacted above {c.threshold:.0%}"

    def _start_compaction(self, reason: str, then, focus: str = "") -> None:
        """Compact the conversation, then `then()`: stubs at once; a summary on a worker (its
        answer comes back as C_DONE). Never inside a running turn's pending calls: it is only
        started before a request (every call answered) or between turns (/compact)."""
        tools = self._tools()
        plan = self._ctx.plan(self.messages, tools, reason=reason, focus=focus)
        if plan.request is None:
            self._finish_compaction(plan, None, "", then, None)
            return
        self._compact_ref += 1
        ref = self._compact_ref
        cancel = self._client.CancelToken()
        self._compaction = (ref, plan, then, cancel)
        self._set_phase("waiting")
        why = ("as asked (/compact)" if plan.reason == "/compact"
               else "the server refused the last request as too long" if plan.reason == "overflow"
               else f"the next request would take {context.short(plan.before)} tokens")
        self.post(M.system("info", f"Compacting the context, {why}; {self._window_text()}. Summarising "
                                   f"{context.describe(plan.middle)}..."))
        endpoint, model, stream, request = self.endpoint, self.model, self._stream_fn, plan.request

        def work() -> tuple:
            try:
                result = stream(endpoint, model, request, on_event=lambda ev: None, cancel=cancel)
            except self._ChatError as exc:
                return (M.C_DONE, ref, False, exc.as_dict())
            return (M.C_DONE, ref, True, result.as_dict())

        _spawn("compact", self.inbox.put, work,
               lambda why: (M.C_DONE, ref, False, {"message": f"the summary request crashed: {why}"}))

    def _on_compacted(self, ref: int, ok: bool, payload: dict) -> None:
        if self._compaction is None or self._compaction[0] != ref:
            return  # cancelled meanwhile
        _ref, plan, then, _cancel = self._compaction
        self._compaction = None
        summary, why, usage = None, "", None
        if not ok:
            why = "the summary request failed: " + str(payload.get("message") or "no reason given").rstrip(".")
        elif payload.get("cancelled"):
            why = "the summary request was cancelled"
        else:
            usage = payload.get("usage") or None
            if plan.request:  # the summary request is a request like any other: metered
                self._request_input = context.estimate_tokens(plan.request)
                self._meter(usage, payload.get("content") or "", [], payload.get("reasoning") or "")
            reason = payload.get("finish_reason")
            if reason in ("length", "content_filter"):
                why = f"the summary was cut short (finish_reason {reason})"
            else:
                summary = payload.get("content") or ""
        self._finish_compaction(plan, summary, why, then, usage)

    def _finish_compaction(self, plan, summary, why: str, then, usage) -> None:
        before_len = len(self.messages)
        out = self._ctx.finish(plan, summary, why, self._tools())
        self._compaction_changed = bool(out.ops)
        if not out.ops:  # nothing could be done: no entry, no event
            if plan.reason == "/compact":
                self.post(M.system("info", f"Nothing to compact: the conversation is its first request and its most "
                                           f"recent turn ({context.short(out.after)} tokens; {self._window_text()})."))
            then()
            return
        self.messages = out.messages
        fields: dict = {"reason": plan.reason, "how": out.how, "before": out.before, "after": out.after,
                        "window": self._ctx.window, "length": before_len, "ops": out.ops,
                        "summarised": out.summarised, "dropped": out.dropped, "stubbed": out.stubbed, "cut": out.cut}
        if out.failed:
            fields["failed"] = out.failed
        if usage:
            fields["usage"] = usage
        self._j("compact", **fields)
        log.info("%s", out.text)
        self.post(M.system("warn" if out.failed else "info", out.text))
        self.post((M.COMPACTED, {"reason": plan.reason, "how": out.how, "before": out.before, "after": out.after,
                                 "window": self._ctx.window, "text": out.text, "failed": out.failed or None}))
        self._ctx.failures = self._ctx.failures + 1 if out.failed else 0
        if not out.fits:
            self.post(M.system("error", f"The conversation does not fit the context window even compacted: {out.failed}. "
                                        "/clear starts a fresh conversation; if the model allows more, raise "
                                        "context_window."))
            self._end_turn("error")
            return
        if out.failed and self._ctx.failures >= context.FAILURES_TO_STOP:
            self.post(M.system("error", f"Context compaction failed {self._ctx.failures} times in a row (last: "
                                        f"{out.failed}), so earlier messages were dropped without a summary each "
                                        "time. The turn is stopped here: /compact tries again, /clear starts a "
                                        "fresh conversation."))
            self._end_turn("error")
            return
        then()

    def _after_compaction(self) -> None:
        """A turn's compaction ended: send the request it made room for."""
        self._compacted = True
        self._start_episode()

    def _overflow(self, err: dict) -> None:
        """The server refused the request as too long for the context window (the estimate was
        too low, or the window smaller than stated): learn the window it names, compact, and
        send once more."""
        self._overflow_retried = True
        self._end_answer("error", "")
        text = str(err.get("message") or "")
        counted = context.count_from_error(text)
        if counted:  # the provider's own count of what was sent: calibrate with it
            self._ctx.observe(self._sent_raw, {"prompt_tokens": counted})
        stated = context.window_from_error(text)
        if stated and stated < self._ctx.window:
            self._ctx.set_window(stated, "the server's error")
            learned = f"its window is {stated:,} tokens"
        else:  # it did not say: what was sent is too much, whatever the estimate said
            sent = self._ctx.estimate(self.messages, self._tools())
            self._ctx.set_window(max(1024, min(self._ctx.window, int(sent * 0.95))), "estimated after a refusal")
            learned = f"the window is taken to be {self._ctx.window:,} tokens"
        self.post(M.system("warn", f"The server refused the request as too long for the model's context window "
                                   f"({learned}): compacting, then sending it once more."))

        def then() -> None:
            if self._compaction_changed:
                self._after_compaction()
                return
            self.post(M.system("error", _error_line(err)))  # nothing to take out: it would fail again
            self._end_turn("error")

        self._start_compaction("overflow", then)

    def _compact_command(self, rest: str) -> None:
        if not self.messages:
            self.post(M.system("info", "Nothing to compact: the conversation is empty."))
            return
        if self.model is None:
            self.post(M.system("error", "/compact needs a model to write the summary: choose one with /model NAME."))
            return
        self._busy = True
        self._final_usage = None
        self._final_estimate = None
        self._start_compaction("/compact", lambda: self._end_turn("done"), focus=rest)

    def _clear_command(self, rest: str) -> None:
        if rest:
            self.post(M.system("error", f"/clear takes nothing, not {rest!r}."))
            return
        if not self.messages:
            self.post(M.system("info", "The conversation is already empty."))
            return
        n = len(self.messages)
        tokens = self._ctx.estimate(self.messages, self._tools())
        self.messages = []
        self._ctx.failures = 0
        self._j("clear", messages=n, tokens=tokens)
        self._load_context()  # the instructions as they are now
        self.post(M.system("info", f"Started a fresh conversation: the model no longer sees the earlier {n} "
                                   f"messages (~{context.short(tokens)} tokens). The session goes on: its journal, "
                                   "/undo and the permission rules are kept."))
        self._sync()

    # ---- /undo -------------------------------------------------------------------------------
    def _undo_command(self, rest: str) -> None:
        from dashfloat.tools import undo

        words = rest.split()
        if len(words) > 1 or (words and (not words[0].isdigit() or int(words[0]) < 1)):
            self.post(M.system("error", f"/undo takes a number of turns, not {rest!r}: /undo undoes the file "
                                        "changes of the last turn that changed files, /undo N those of the last N."))
            return
        if self.journal is None:
            self.post(M.system("error", "/undo needs the session journal, and it is off for this session "
                                        "(journal = false or --no-journal): no earlier content was kept."))
            return
        n = int(words[0]) if words else 1
        turns = sorted({c.get("turn") for c in self._changes if isinstance(c.get("turn"), int)
                        and c.get("turn") not in self._undone and self._outcomes.get(c.get("id")) is not False},
                       reverse=True)
        if not turns:
            self.post(M.system("info", "Nothing to undo: DashFloat's tools have changed no file in this session "
                                       f"since the last /undo. ({undo_not_covered()})"))
            return
        chosen = turns[:n]
        planned = undo.plan([c for c in self._changes if c.get("turn") in chosen], self._outcomes)
        kept = self.journal.kept
        self._undo_ref += 1
        run = self._undo = UndoRun(self._undo_ref, chosen, len(turns) < n)
        self._busy = True
        self._set_phase("running")
        root = self.root

        def work() -> tuple:  # on its own thread: the store and the files are read here
            outcomes, asks = [], []
            for ch in planned:
                item = undo.item(ch, kept)
                now = undo.inspect(root, item)
                if now.problem:
                    outcomes.append((item, f"left as it is: {now.problem}"))
                elif now.digest == item.after and not (item.before is not None and item.data is None):
                    why = undo.restore(root, item, now.digest)
                    done = "removed (DashFloat had created it)" if item.before is None else "restored"
                    outcomes.append((item, f"not restored: {why}" if why else done))
                elif now.digest == item.before:
                    outcomes.append((item, "already as it was before"))
                elif item.before is not None and item.data is None:
                    outcomes.append((item, f"not restored: {item.lost}"))
                else:
                    asks.append((item, now))
            return (M.U_DONE, run.ref, {"step": "inspect", "outcomes": outcomes, "asks": asks})

        _spawn("undo", self.inbox.put, work,
               lambda why: (M.U_DONE, run.ref, {"step": "inspect", "outcomes": [], "asks": [], "failed": why}))

    def _on_undo_step(self, ref: int, payload: dict) -> None:
        run = self._undo
        if run is None or ref != run.ref:
            return
        if payload.get("failed"):
            self.post(M.system("error", f"/undo failed: {payload['failed']} (details in the log)."))
            if payload["step"] == "inspect":  # what it did is not known: its turns are left to undo again
                self._undo = None
                self._busy = False
                self._set_phase("idle")
                self.post(M.turn_end("error"))
                return
        if payload["step"] == "inspect":
            run.outcomes.extend(payload["outcomes"])
            run.asks.extend(payload["asks"])
        else:  # a restore the user approved
            item, why = payload["item"], payload.get("why", "")
            done = "removed" if item.before is None else "restored"
            run.outcomes.append((item, f"not restored: {why}" if why else f"{done} (you said y)"))
            self.post((M.TOOL_RESULT, {"id": run.row, "name": "undo", "status": "error" if why else "ok",
                                       "text": f"error: {why}" if why else done, "excerpt": []}))
        if run.cancelled:
            for item, _now in run.asks:
                run.outcomes.append((item, "left as it is (Esc)"))
            run.asks = []
        self._undo_next()

    def _undo_next(self) -> None:
        from dashfloat.tools import undo

        run = self._undo
        if not run.asks:
            self._undo_finish()
            return
        item, now = run.asks[0]
        run.asked += 1
        run.row = f"undo-{run.ref}-{run.asked}"
        lines, full = undo.question(item, now)
        self.post((M.TOOL_CALL, {"id": run.row, "name": "undo", "summary": f"undo {undo_shown(item.shown)}"}))
        self._confirm_ref += 1
        run.confirm_ref = self._confirm_ref
        info = {"id": run.row, "name": "undo", "summary": f"undo {undo_shown(item.shown)}", "lines": lines,
                "always_asks": "it changed since DashFloat wrote it: y puts back the earlier content over "
                               "these changes, n leaves it as it is"}
        if full is not None:
            info["full"] = full
        self._set_phase("confirming")
        self.post((M.CONFIRM, self._confirm_ref, info))

    def _undo_decision(self, ref: int, decision: str) -> None:
        from dashfloat.tools import undo

        run = self._undo
        if self._phase != "confirming" or ref != run.confirm_ref or not run.asks:
            return
        item, now = run.asks.pop(0)
        if decision in ("approved", "always"):
            self.post((M.DECIDED, run.row, "approved by you"))
            self._set_phase("running")
            root = self.root
            _spawn("undo", self.inbox.put,
                   lambda: (M.U_DONE, run.ref, {"step": "restore", "item": item,
                                                "why": undo.restore(root, item, now.digest)}),
                   lambda why: (M.U_DONE, run.ref, {"step": "restore", "item": item, "why": why}))
            return
        self.post((M.DECIDED, run.row, "rejected by you"))
        self.post((M.TOOL_RESULT, {"id": run.row, "name": "undo", "status": "rejected",
                                   "text": "left as it is", "excerpt": []}))
        run.outcomes.append((item, "left as it is (you said n)"))
        self._undo_next()

    def _undo_cancel(self) -> None:
        run = self._undo
        run.cancelled = True
        if self._phase == "confirming" and run.asks:
            item, _now = run.asks.pop(0)
            self.post((M.DECIDED, run.row, "rejected by you"))
            self.post((M.TOOL_RESULT, {"id": run.row, "name": "undo", "status": "rejected",
                                       "text": "left as it is", "excerpt": []}))
            run.outcomes.append((item, "left as it is (Esc)"))
            for item, _now in run.asks:
                run.outcomes.append((item, "left as it is (Esc)"))
            run.asks = []
            self._undo_finish()
        # else a worker is running: its answer finishes the undo (cancelled: no more questions)

    def _undo_finish(self) -> None:
        run, self._undo = self._undo, None
        self._undone.update(run.turns)
        turns = ", ".join(str(t) for t in run.turns)
        what = f"turn{'s' if len(run.turns) != 1 else ''} {turns}"
        lines = [f"/undo of the file changes of {what}"
                 + (" (all the turns that changed files)" if run.short else "") + ":"]
        for item, outcome in run.outcomes[:UNDO_NAMED]:
            lines.append(f"  {undo_shown(item.shown)}: {outcome}")
        if len(run.outcomes) > UNDO_NAMED:
            lines.append(f"  and {len(run.outcomes) - UNDO_NAMED} more files")
        lines.append(undo_not_covered() + ".")
        back = [undo_shown(i.shown) for i, o in run.outcomes if o.startswith(("restored", "removed"))]
        left = [undo_shown(i.shown) for i, o in run.outcomes if not o.startswith(("restored", "removed", "already"))]
        note = None
        if back or left:
            note = (f"[DashFloat: the user ran /undo on the file changes of {what}. "
                    + (f"Put back as they were before: {', '.join(back[:UNDO_NAMED])}"
                       + (f" and {len(back) - UNDO_NAMED} more" if len(back) > UNDO_NAMED else "") + ". " if back else "")
                    + (f"Left as they are: {', '.join(left[:UNDO_NAMED])}. " if left else "")
                    + "Read a file again before you change it.]")
            self._model_notes.append(note)
        files = [{"path": item.path, "outcome": outcome} for item, outcome in run.outcomes]
        self._j("undo", turns=run.turns, files=files, **({"note": note} if note else {}))
        put_back = [{"path": item.path, "change": "removed" if outcome.startswith("removed") else "restored"}
                    for item, outcome in run.outcomes if outcome.startswith(("restored", "removed"))]
        if put_back:
            self.post((M.FILES, f"undo-{run.ref}", put_back, "undo"))
        self.post(M.system("info", "\n".join(lines)))
        self._sync()
        self._busy = False
        self._set_phase("idle")
        self.post(M.turn_end("done"))

    def _start_episode(self) -> None:
        fixed, notes = conversation.repair(self.messages)
        if notes:
            log.warning("conversation repaired before a request: %s", "; ".join(notes))
            self.post(M.system("warn", "Repaired the conversation before sending it: " + "; ".join(notes) + "."))
        self.messages = fixed
        tools = self._tools()
        raw = self._ctx.raw(self.messages, tools)  # one pass over the conversation per request
        estimate = self._ctx.calibrated_of(raw)
        # Every request is checked against the context window first: after a prompt and after
        # every round of tool results (all of the episode's calls are answered by now)
        if self._compacted:
            self._compacted = False
        elif estimate > self._ctx.limit:
            self._start_compaction("auto", self._after_compaction)
            return
        # then against the budgets, with the input of the request that would go (after compaction)
        stop = self.meter.check(self.model, estimate)
        if stop is not None:  # a budget keeps this request from going
            self._budget_stop(stop)
            self._end_turn("budget")
            return
        self._request_input = estimate
        self._episode += 1
        self._episodes_in_turn += 1
        episode = self._episode
        self._cancel = cancel = self._client.CancelToken()
        self._content = []
        self._reasoning = []
        self._calls = []
        self._call_index = 0
        self._set_phase("waiting")
        self.post((M.ASSISTANT_START,))
        self._answer_open = True
        request = self._ctx.request(self.messages)  # the system message, then the conversation
        self._sent_raw = raw
        model = self.model
        inbox = self.inbox

        # Streamed text goes from the streamer straight to the front end (one thread hop
        # per delta, not two; the client hands over a read's tokens as one delta) and into
        # `content`, which the agent reads when the episode ends. The episode lock orders
        # it against a cancel: once the agent has ended the episode under the lock, no late
        # token can follow the "cancelled" marker.
        content = self._content
        reasoning = self._reasoning
        lock = self._episode_lock = threading.Lock()
        post = self.post
        started = [False]

        def on_event(ev: tuple) -> None:
            kind = ev[0]
            if kind in ("content", "reasoning"):
                with lock:
                    if cancel.cancelled:
                        return
                    if not started[0]:
                        started[0] = True
                        post(M.phase("streaming"))
                    if kind == "content":
                        content.append(ev[1])
                        post((M.TOKEN, ev[1]))
                    else:
                        reasoning.append(ev[1])
                        post((M.REASONING, ev[1]))

        def work() -> tuple:
            kwargs = {"on_event": on_event, "cancel": cancel}
            if tools is not None:
                kwargs["tools"] = tools
            try:
                result = self._stream_fn(self.endpoint, model, request, **kwargs)
            except self._ChatError as exc:
                return (M.S_FAILED, episode, exc.as_dict())
            return (M.S_DONE, episode, result.as_dict())

        def failed(why: str) -> tuple:  # a bug in the streamer: a result, not a hang
            return (M.S_FAILED, episode, {"kind": "internal", "message": f"the stream crashed: {why}",
                                          "hint": "see the log file", "partial": bool(content)})

        _spawn(f"stream-{episode}", inbox.put, work, failed)
        if self._pipeline_mod is None:
            self._load_tools()  # while the request is on its way: the first call needs them

    def _on_stream(self, kind: str, payload) -> None:
        if kind == M.S_DONE:
            self._cancel = None
            self._on_done(payload)
        elif kind == M.S_FAILED:
            self._cancel = None
            self._on_failed(payload)

    def _on_done(self, result: dict) -> None:
        content = result.get("content") or "".join(self._content)
        raw_calls = result.get("tool_calls") or []
        self._final_usage = result.get("usage") or None  # only the latest episode's counts
        self._ctx.observe(self._sent_raw, self._final_usage)  # the estimate learns the provider's count
        usage = self._meter(result.get("usage"), content, raw_calls, result.get("reasoning") or "".join(self._reasoning))
        self._final_estimate = usage.prompt + usage.completion if usage.estimated else None
        if raw_calls and not self.tools_enabled:
            names = ", ".join(sorted({c.get("name") or "?" for c in raw_calls}))
            self.post(M.system("warn", f"The model asked for {len(raw_calls)} tool call(s) ({names}); tools are off."))
            raw_calls = []
        reason = result.get("finish_reason")
        if not self._reasoning and result.get("reasoning"):
            self._reasoning = [result["reasoning"]]
        if not content and not raw_calls:
            self._end_answer("empty")
            self.post(M.system("warn", _EMPTY_BECAUSE.get(reason, "[model returned nothing]")))
            self._end_turn("empty")
            return
        message = conversation.assistant_message(content, raw_calls)
        self._end_answer("done", content, message.get("tool_calls"))
        if reason in _CUT_BECAUSE:
            self.post(M.system("warn", _CUT_BECAUSE[reason]))
        self._calls = [Call(c) for c in raw_calls]
        self.messages.append(message)
        reached = self._budget_after()
        if not self._calls:
            if reached is not None:  # the answer is whole; what comes next will not go
                self._j("budget", what="reached", **{k: v for k, v in reached.as_dict().items() if k != "text"})
                self.post(M.system("warn", reached.after_answer))
            self._end_turn("done")
            return
        for call in self._calls:
            self.post((M.TOOL_CALL, {"id": call.id, "name": call.name,
                                     "summary": self._runner.summary(call.name, call.raw.get("args"))}))
        if reached is not None:  # no call runs once a budget is spent: the turn ends here
            self._budget_stop(reached)
            for call in self._calls:
                call.result = results.error("budget", f"not run: {reached.text}")
            self._commit_ready()
            for call in self._calls:
                self._append_result(call)
            self._calls = []
            self._end_turn("budget")
            return
        self._count_repeats()
        self._next_call()

    def _on_failed(self, err: dict) -> None:
        self._final_usage = None  # the failed episode reported none
        self._final_estimate = None
        content = "".join(self._content)
        if err.get("kind") == "context_length" and not content and not self._overflow_retried and self.messages:
            self._overflow(err)
            return
        if err.get("partial") or content:  # the provider answered part: the request is paid
            self._meter(None, content, [], "".join(self._reasoning))
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self._end_answer("error", content)
        self.post(M.system("error", _error_line(err)))
        self._end_turn("error")

    # ---- tools ------------------------------------------------------------------------
    def _gate(self, call: Call, cancel) -> tuple[tuple[str, object], list[str]]:
        """The pre-execute chain of tools/pipeline.py for one call, on the call's own
        thread. Returns (verdict, notes for the call's row). Never raises."""
        ctx = self._pipeline.CallContext(
            call_id=call.id, name=call.name, raw=call.raw, root=self.root, policy=self.policy,
            pre_hooks=self.pre_hooks, post_hooks=self.post_hooks, hook_timeout=self.hook_timeout,
            secrets=self.secrets, cancel=cancel, repeats=call.repeats,
        )
        call.ctx = ctx
        try:
            verdict = self._pipeline.pre_execute(ctx)
        except BaseException as exc:  # a bug in a stage is an error result, never a dead agent
            log.error("gate for %s failed", call.name, exc_info=True)
            verdict = ("done", results.error("internal", f"checking {call.name} failed: {describe(exc)}"))
        call.args = ctx.args
        if verdict[0] != "done":
            call.prepared = verdict[1]
        notes, ctx.notes = list(ctx.notes), []
        return verdict, notes

    def _start_gate(self, call: Call) -> None:
        episode = self._episode
        cancel = self._runner.Cancel()
        self._gating[call.id] = cancel

        def work() -> tuple:
            gate, notes = self._gate(call, cancel)
            return (M.T_GATE, episode, call.id, gate, notes)

        def failed(why: str) -> tuple:
            return (M.T_GATE, episode, call.id,
                    ("done", results.error("internal", f"checking {call.name} failed: {why}")), [])

        _spawn(f"gate-{call.name}", self.inbox.put, work, failed)

    def _on_gate(self, call_id: str, gate: tuple, notes: list) -> None:
        self._gating.pop(call_id, None)
        call = next((c for c in self._calls if c.id == call_id), None)
        if call is None:
            return
        call.gate = tuple(gate)
        decided = getattr(call.ctx, "audit", None)
        if decided is not None:
            self._audit(call, decided)
        for note in notes:
            self.post((M.TOOL_NOTE, call.id, note))
        if self._stopping:
            if not self._gating and not self._running:
                self._stop_turn(results.cancelled())
            return
        if not self._gating:
            self._next_call()

    def _next_call(self) -> None:
        """Start what can run next, or finish the episode when every call has a result.

        Each call's gate runs on its own thread; the agent only reacts to what comes back,
        so a slow hook or preview never keeps it from handling Esc or quit. Consecutive
        read-only calls that need no question run together (at most READ_POOL at once);
        a call that asks or mutates is a barrier and is gated only once every call before
        it has finished, so its preview shows the files as they are then. Results are
        committed (rows, then tool messages) in the model's order."""
        self._commit_ready()
        if self._running or self._gating:
            return
        calls = self._calls
        read_only = self._runner.READ_ONLY
        while self._call_index < len(calls):
            call = calls[self._call_index]
            if call.gate is None:
                group = [call]
                if call.name in read_only:  # gate the read-only run after it too: it may batch
                    j = self._call_index + 1
                    while j < len(calls) and len(group) < READ_POOL and calls[j].name in read_only:
                        group.append(calls[j])
                        j += 1
                for c in group:
                    if c.gate is None:
                        self._start_gate(c)
                return
            kind, payload = call.gate
            if kind == "done":
                call.result = payload
                self._commit_ready()
                continue
            if kind == "ask":
                self._confirm_ref += 1
                call.asked_ref = self._confirm_ref
                self._set_phase("confirming")
                self.post((M.CONFIRM, self._confirm_ref, self._confirm_info(call, payload)))
                return
            batch = [call]
            if call.name in read_only:
                j = self._call_index + 1
                while j < len(calls) and len(batch) < READ_POOL and calls[j].name in read_only:
                    nxt = calls[j]
                    if nxt.gate is None or nxt.gate[0] == "ask":
                        break
                    if nxt.gate[0] == "done":
                        nxt.result = nxt.gate[1]
                    else:
                        batch.append(nxt)
                    j += 1
            for c in batch:
                self._execute(c)
            return
        self._finish_episode()

    def _confirm_info(self, call: Call, payload) -> dict:
        """What the front end shows for a question: the preview's window, the whole
        preview when the window leaves some out (bounded), and the session rule the
        approve-always key would add."""
        info = {"id": call.id, "name": call.name, "summary": payload.summary, "lines": payload.preview}
        if getattr(payload, "full", None) is not None:
            info["full"] = payload.full
        why = _always_asks(call)
        if why:  # a session rule would never stop this question: the a key adds none
            info["always_asks"] = why
            return info
        try:
            info["always"] = self._pipeline.rules.exact_rule(call.name, call.args).text
        except Exception:  # no main argument to make a rule from: the key still works, unnamed
            log.debug("no exact rule for %s", call.name, exc_info=True)
        return info

    def _commit_ready(self) -> None:
        """Post the outcome rows of finished calls, in call order, up to the first unfinished."""
        while self._call_index < len(self._calls) and self._calls[self._call_index].result is not None:
            call = self._calls[self._call_index]
            self._call_index += 1
            row = self._runner.result_row(call.id, call.name, call.result)
            if call.gate is not None and call.gate[0] == "run" and call.prepared is not None:
                # a mutation no one was asked about: the screen still shows what it did
                row["details"] = list(call.prepared.preview)
            self._record_result(call, details=row.get("details"))
            self._ui_post((M.TOOL_RESULT, row))  # the journal's result event draws it again
            written = _written(call)
            if written is not None:
                self.post((M.FILES, call.id, [written], "tool"))

    def _record_result(self, call: Call, *, details=None, row: bool = True) -> None:
        """Journal a call's result as the model reads it (once per call); a resumed session
        rebuilds the tool message and, with `row`, the row on screen from it."""
        if call.recorded:
            return
        call.recorded = True
        fields: dict = {}
        if details:
            fields["details"] = details
        if not row:
            fields["row"] = False
        if self.journal is not None:
            self.journal.result(call.id, call.name, results.encode(call.result), **fields)

    def _append_result(self, call: Call) -> None:
        """The call's tool message into the conversation (journalled, if not yet)."""
        self._record_result(call, row=False)
        self.messages.append(conversation.tool_message(call.id, call.result))

    def _audit(self, call: Call, decision) -> None:
        """A permission decision on a call: a structured journal event (the audit trail);
        the log's audit line when the session is not journalled."""
        if self.journal is None:
            log.info("audit: %s", self.policy.audit_line(call.name, call.args, decision))
            return
        from dashfloat.tools.rules import args_hash

        fields = {"id": call.id, "tool": call.name, "decision": decision.decision, "by": decision.who,
                  "mode": self.policy.mode, "args_sha256": args_hash(call.name, call.args)}
        if decision.reason:
            fields["reason"] = decision.reason
        self._j("decision", **fields)

    def _on_decision(self, ref: int, decision: str, by: dict | None = None) -> None:
        """A question answered: by a key (`by` None), or by a front end without a person
        (`by`: who decided, the row's text, and what the model is told when it is not run)."""
        if self._undo is not None:
            self._undo_decision(ref, decision)
            return
        if self._phase != "confirming" or ref != self._confirm_ref:
            return  # a stale or duplicate key
        call = self._calls[self._call_index]
        if call.asked_ref != ref:
            # a repeated key: its question is answered and the next call's is not shown yet
            # (still being checked, or checked while others of its group still are)
            return
        key = {"always": "a", "approved": "y"}.get(decision, "n")
        verdict = "allow" if key in ("a", "y") else "deny"
        who = f"user key {key}"
        shown = "approved by you" if verdict == "allow" else "rejected by you"
        rejected = results.rejected()
        if by is not None:  # approve once at most: no session rule without a person
            who, shown = str(by.get("who") or "front end"), str(by.get("shown") or decision)
            if verdict == "deny" and by.get("reason"):
                rejected = results.rejected(error=str(by["reason"]))
        elif key == "a" and _always_asks(call):  # the protection: a rule would never be used
            who += " (once: this call always asks, no session rule)"
            shown = "approved by you, once (it always asks)"
        elif key == "a":  # approve, and allow this exact call for the session
            rule = self.policy.allow_exact(call.name, call.args, self.root).text
            who += f" (session rule {rule})"
            shown = "approved by you; allowed for the rest of the session"
            self._j("audit", what="session_rule", rule=rule, by="user key a")
        self._audit(call, self._pipeline.rules.Decision(verdict, who, ""))
        self.post((M.DECIDED, call.id, shown))
        if verdict == "allow":
            self._execute(call)
        else:
            call.result = rejected
            self._next_call()

    def _record_change(self, call: Call) -> None:
        """Before write_file or edit_file changes a file: keep its previous bytes (the ones
        the approved plan read beneath the root, and that the write checks again in the
        directory it writes in) and journal the change, for /undo."""
        plan = getattr(call.prepared, "plan", None)
        if self.journal is None or call.name not in ("write_file", "edit_file") or plan is None:
            return
        from dashfloat.journal import sha256

        before = kept = None  # before None: the file is new (undo removes it)
        if plan.old is not None:
            kept, why = self.journal.keep(plan.old)
            before = kept or sha256(plan.old)  # the hash all the same: undo must never take it for new
            if kept is None:
                self.post((M.TOOL_NOTE, call.id, f"/undo cannot restore this file: its previous content is not kept ({why})"))
        rel = _plan_path(plan)
        change = {"turn": self._turn, "id": call.id, "path": rel, "shown": plan.rel, "real": plan.path,
                  "before": before, "after": sha256(plan.new)}
        if plan.old is not None and kept is None:
            change["lost"] = True
        self._j("change", **change)
        self._changes.append(change)

    def _execute(self, call: Call) -> None:
        self._set_phase("running")
        episode = self._episode
        inbox = self.inbox
        if call.name in self._runner.MUTATING:
            self._record_change(call)
            self._j("run", id=call.id, tool=call.name)
            self._sync()  # a side effect follows: what led to it is on disk first
        git_before = call.name == "execute_command" and self.git_report
        if git_before:
            self._reports.add(call.id)  # T_GIT answers, whatever happens to the command
        cancel = self._runner.Cancel()
        self._running[call.id] = (call, cancel)
        limit = self.exec_timeout + EXEC_GRACE if call.name == "execute_command" else FILE_TOOL_TIMEOUT
        self._deadlines[call.id] = (time.monotonic() + limit, limit)

        secrets = self.secrets

        def on_output(text: str) -> None:
            inbox.put((M.T_OUTPUT, episode, call.id, self._pipeline.redact(text, secrets)))

        reporting = [False]  # the report's thread started: it sends T_GIT

        def work() -> tuple:
            before = None
            if git_before:
                before = _git_snapshot(self.root)
            try:
                result = self._runner.execute(call.name, call.args, self.root, call.prepared, cancel=cancel,
                                              on_output=on_output, exec_timeout=self.exec_timeout,
                                              exec_max_processes=self.exec_max_processes, policy=self.policy)
            except BaseException as exc:  # a tool that raises (even SystemExit) is an error result
                log.error("tool %s crashed", call.name, exc_info=True)
                result = results.error("internal", f"{call.name} failed: {describe(exc)}")
            if call.ctx is not None:
                try:
                    result = self._pipeline.post_execute(call.ctx, result)
                except BaseException as exc:
                    log.error("post-execute of %s failed", call.name, exc_info=True)
                    result = results.error("internal", f"{call.name}: post-processing failed: {describe(exc)}")
                for note in call.ctx.notes:
                    inbox.put((M.T_NOTE, episode, call.id, note))
            if git_before:  # after the result: the next request does not wait for git
                threading.Thread(target=_git_report, args=(self.root, before, inbox, episode, call.id),
                                 name="git-status", daemon=True).start()
                reporting[0] = True
            return (M.T_DONE, episode, call.id, result)

        def failed(why: str) -> tuple:
            if git_before and not reporting[0]:
                inbox.put((M.T_GIT, episode, call.id, None, []))
            return (M.T_DONE, episode, call.id, results.error("internal", f"{call.name} failed: {why}"))

        _spawn(f"tool-{call.name}", inbox.put, work, failed)

    def _on_tool_done(self, call_id: str, result: dict) -> None:
        entry = self._running.pop(call_id, None)
        self._deadlines.pop(call_id, None)
        if entry is None:
            return  # abandoned after its deadline: its result came too late
        call, _cancel = entry
        call.result = result
        if call.name in ("write_file", "edit_file"):
            self._outcomes[call.id] = bool(result.get("ok"))
        if self._stopping:
            if not self._running and not self._gating:
                self._stop_turn(results.cancelled())
            return
        if self._running or self._gating:
            self._commit_ready()
            return
        self._next_call()

    def _check_deadlines(self) -> None:
        """Abandon calls past their deadline: a result now, the work cancelled; end a turn
        whose git reports are overdue."""
        now = time.monotonic()
        if self._held_end is not None and now >= self._held_until:
            log.warning("git status reports still missing after %ss: %s", REPORT_WAIT, sorted(self._reports))
            self._post_held_end()
        for call_id, (deadline, limit) in list(self._deadlines.items()):
            if now >= deadline:
                entry = self._running.get(call_id)
                if entry is not None:
                    entry[1].cancel()
                    log.warning("abandoned %s after %ss", entry[0].name, limit)
                self._reports.discard(call_id)  # its thread is stuck: no report to wait for
                self._on_tool_done(call_id, results.error(
                    "timeout", f"did not finish within {limit:g}s; abandoned"))

    def _wait_timeout(self) -> float | None:
        due = [d for d, _ in self._deadlines.values()]
        if self._held_end is not None:
            due.append(self._held_until)
        if not due:
            return None
        return max(0.0, min(due) - time.monotonic())

    def _finish_episode(self) -> None:
        for call in self._calls:
            self._append_result(call)
        self._calls = []
        if self._episodes_in_turn >= self.max_episodes:
            self.post(M.system("warn", f"Stopped after {self.max_episodes} episodes in one turn (max_episodes). "
                                       "Say how to go on, or raise max_episodes in the configuration."))
            self._end_turn("limit")
            return
        self._start_episode()

    # ---- cancel and the end of a turn -------------------------------------------------
    def _on_cancel(self, why: str = "") -> None:
        """Esc or Ctrl-C (`why` ""), or a front end stopping the turn for a reason of its own
        (`why`, e.g. "SIGTERM": the journal and a question's row say so)."""
        if not self._busy:
            return
        if self._undo is not None:
            self._undo_cancel()
            return
        self._stop_why = why
        if self._turn_open:
            self._j("cancel", **({"by": why} if why else {}))
        if self._model_check is not None:
            name = self._model_check[1]
            self._model_check = None
            keep = f"; the model stays {self.model}" if self.model else ""
            self.post(M.system("info", f"Stopped checking model {name}{keep}."))
            self._end_turn("cancelled")
            return
        if self._compaction is not None:
            self._compaction[3].cancel()
            self._compaction = None
            self.post(M.system("info", "Compaction cancelled: the conversation is as it was."
                                       + (" " + self._stopped_text() if self._turn_open else "")))
            self._end_turn("cancelled")
            return
        if self._running or self._gating:
            # stop what runs; the (honest) results arrive as T_DONE, then the turn ends
            self._stopping = True
            for _call, cancel in list(self._running.values()):
                cancel.cancel()
            for cancel in list(self._gating.values()):
                cancel.cancel()
            return
        if self._phase == "confirming":
            if self._call_index < len(self._calls):
                self.post((M.DECIDED, self._calls[self._call_index].id,
                           f"rejected: the turn was stopped ({why})" if why else "rejected by you"))
            self._stop_turn(results.rejected())
            return
        with self._episode_lock:  # no token of this episode is posted after this
            streaming = self._cancel is not None
            self._cancel_stream()
        content = "".join(self._content)
        if streaming:  # the request went out: its input is paid even if no usage comes now
            self._meter(None, content, [], "".join(self._reasoning))
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self._pending_prompt = None
        self._end_answer("cancelled", content)
        self._end_turn("cancelled")

    def _stop_turn(self, unresolved: dict) -> None:
        """Answer every unresolved call of the episode, record them, and end the turn."""
        for call in self._calls[self._call_index :]:
            if call.result is None:
                call.result = dict(unresolved)
        self._commit_ready()
        for call in self._calls:
            self._append_result(call)
        self._calls = []
        self.post(M.system("info", self._stopped_text()))
        self._end_turn("cancelled")

    def _stopped_text(self) -> str:
        """A stopped turn invites the person to go on, unless the front end stopped it for a
        reason of its own (a signal: the process is ending, there is nobody to ask)."""
        return f"Turn stopped ({self._stop_why})." if self._stop_why else "Turn stopped. Say what to do instead."

    def _cancel_stream(self) -> None:
        if self._cancel is not None:
            try:
                self._cancel.cancel()
            except Exception:
                log.exception("cancel failed")
            self._cancel = None

    # ---- metering, budgets and the repeat guard ------------------------------------------
    def _meter(self, raw_usage, content: str, raw_calls: list, reasoning: str) -> metering.Usage:
        """Count one request: the provider's usage, else an estimate (its input as estimated
        before it went, its output from what came back). Posts the totals, journals it, posts
        the 80 % warnings it crossed, and returns what it counted."""
        usage = metering.normalize(raw_usage)
        if usage is None:
            out = metering.estimate_text(content) + metering.estimate_text(reasoning)
            for c in raw_calls:
                out += metering.estimate_text(str(c.get("name") or "") + json_dumps(c.get("args")))
            usage = metering.Usage(prompt=self._request_input, completion=out, estimated=True)
        cost = self.meter.record(usage, self.model)
        fields: dict = {"turn": self._turn, "model": self.model, "prompt": usage.prompt, "cached": usage.cached,
                        "completion": usage.completion}
        if usage.estimated:
            fields["estimated"] = True
        if cost is not None:
            fields["cost"] = round(cost, 8)
        self._j("usage", **fields)
        self._ui_post((M.METER, self.meter.view()))
        for w in self.meter.warnings():
            self._j("budget", what="warning", budget=w.budget, limit=w.limit, used=w.used)
            self.post(M.system("warn", w.text))
        return usage

    def _budget_after(self) -> metering.Stop | None:
        """After a request: the budget it used up, if one is. The caller stops the turn before
        any of the answer's calls runs, or, after a whole answer, says so (no next request goes)."""
        stop = self.meter.check(self.model)
        if stop is None or stop.why != "reached":
            return None
        return stop

    def _budget_stop(self, stop: metering.Stop) -> None:
        """End the turn for a budget: the entry, the journal event, ("stopped", "budget", ...)."""
        detail = stop.as_dict()
        self._j("budget", what="stop", **{k: v for k, v in detail.items() if k != "text"})
        self.post(M.system("error", stop.text))
        self._ui_post((M.STOPPED, "budget", detail))

    def _count_repeats(self) -> None:
        """How many identical calls (same tool, same arguments as validated) come right
        before each new call in this turn: the repeat guard's count."""
        last, run = self._repeat
        for call in self._calls:
            args, _err = self._runner.validate_call(call.raw)
            if args is None:
                args = call.raw.get("args")
            key = call.name + "\0" + json_dumps(args)
            run = run + 1 if key == last else 1
            last = key
            call.repeats = run - 1
        self._repeat = (last, run)

    def _sessions_command(self, rest: str) -> None:
        """This directory's sessions, read on a worker (headers and tails of the journals)."""
        if rest:
            self.post(M.system("error", f"/sessions takes no arguments, not {rest!r} (dashfloat sessions --all, "
                                        "in a shell, lists every directory's)."))
            return
        root = self.root
        current = self.journal.id if self.journal is not None and self.journal.started else None

        def work() -> tuple:
            return (M.CMD_DONE, "sessions", "info", sessions_text(root, current))

        self._cmd_pending = True

        _spawn("sessions", self.inbox.put, work,
               lambda why: (M.CMD_DONE, "sessions", "error", f"/sessions failed: {why} (details in the log)."))

    def _copy_command(self, rest: str) -> None:
        """/copy [N|list] (dashfloat/copyout.py): the last answer or one of its code blocks to
        the terminal's clipboard (a CLIPBOARD message: the front end writes OSC 52) and to
        the copy file, on a worker (tmux and the file are I/O). Also while a turn runs."""
        from dashfloat import copyout, private

        request = copyout.parse_args(rest)
        if isinstance(request, str):
            self.post(M.system("error", request))
            return
        texts = list(self._last_answer)
        streaming = self._answer_open
        if not texts:
            why = ("the answer being written is not finished: /copy when it ends (Esc stops it; "
                   "the partial text is kept and can be copied then)." if streaming
                   else "no answer yet in this session.")
            self.post(M.system("error", f"Nothing to copy: {why}"))
            return
        if request.what == "list":
            self.post(M.system("info", copyout.list_text(copyout.answer_blocks(texts))))
            return
        if request.what == "block":
            blocks = copyout.answer_blocks(texts)
            if request.n > len(blocks):
                self.post(M.system("error", copyout.out_of_range(request.n, blocks)))
                return
            block = blocks[request.n - 1]
            text = block.text
            what, lang = f"code block {request.n}", block.lang
        else:
            text = copyout.answer_text(texts)
            what, lang = "the last answer", ""
        if not text.strip():
            self.post(M.system("error", f"Nothing to copy: {what} is empty."))
            return
        text = masking.mask(text, self.secrets)  # as the screen shows it: the file and the clipboard alike
        environ = dict(self._environ)
        post = self._ui_post

        def work() -> tuple:
            from dashfloat.config import state_dir

            clipboard = "too_big"
            if not self.clipboard:
                clipboard = "none"
            elif copyout.fits(text):
                clipboard = "osc52"
                if copyout.tmux_load(text, environ) is None:
                    clipboard = "tmux"
                else:
                    post((M.CLIPBOARD, text))
            path = str(state_dir(environ) / copyout.FILE_NAME)
            try:
                copyout.write_file(path, text)
                file_error = None
            except OSError as exc:
                log.warning("/copy: %s could not be written: %s", path, exc)
                file_error = private.describe(exc)
            level, entry = copyout.report(what, text, clipboard=clipboard, path=path, file_error=file_error,
                                          streaming=streaming, lang=lang)
            return (M.CMD_DONE, "copy", level, entry)

        self._cmd_pending = self._cmd_pending or not self._busy
        _spawn("copy", self.inbox.put, work,
               lambda why: (M.CMD_DONE, "copy", "error", f"/copy failed: {why} (details in the log)."))

    def _quit_command(self, rest: str) -> None:
        if rest:
            self.post(M.system("error", f"/quit takes no arguments, not {rest!r}."))
            return
        self._ui_post((M.LEAVE,))

    def _usage_command(self, rest: str) -> None:
        if rest:
            self.post(M.system("error", f"/usage takes no arguments, not {rest!r}."))
            return
        self.post(M.system("info", self.meter.report(self.model)))

    def _end_turn(self, reason: str) -> None:
        """The turn is over: its usage, its journal event (fsynced), idle, then TURN_END with
        `reason` (messages.TURN_REASONS), held until git has reported on its commands."""
        if self._final_usage:
            self.post((M.USAGE, self._final_usage))  # only the final episode's usage
        total = _total_tokens(self._final_usage) if self._final_usage else None
        if total is not None:
            self._tokens, self._tokens_estimated = total, False
        elif self._final_estimate is not None:  # no usage came: the status bar and the sessions list show "~N"
            self._tokens, self._tokens_estimated = self._final_estimate, True
            self.post((M.USAGE, {"total_tokens": self._final_estimate, "estimated": True}))
        if self._turn_open:
            self._turn_open = False
            fields: dict = {"turn": self._turn, "status": reason}
            if self._final_usage:
                fields["usage"] = self._final_usage
            fields.update(self._token_fields())
            self._j("turn_end", **fields)
            self._sync()
        self._busy = False
        self._cancel = None
        self._running.clear()
        self._gating.clear()
        self._deadlines.clear()
        self._stopping = False
        self._model_check = None
        if self._compaction is not None:
            self._compaction[3].cancel()
            self._compaction = None
        self._compacted = False
        self._set_phase("idle")
        self._held_end = M.turn_end(reason)
        self._held_until = time.monotonic() + REPORT_WAIT
        if not self._reports:
            self._post_held_end()

    def _post_held_end(self) -> None:
        """Post the last turn's TURN_END if it still waits (a new prompt, or the wait is over)."""
        held, self._held_end = self._held_end, None
        if held is not None:
            self._reports.clear()  # a report that comes later is still shown, as a note
            self.post(held)

    def _on_git_report(self, call_id: str, text: str | None, files: list) -> None:
        if text:
            self.post((M.TOOL_NOTE, call_id, text))
        if files:
            self.post((M.FILES, call_id, files, "git"))
        self._reports.discard(call_id)
        if not self._reports:
            self._post_held_end()


class UndoRun:
    """An /undo in progress: its turns, what happened to each file, the questions left."""

    def __init__(self, ref: int, turns: list[int], short: bool):
        self.ref = ref
        self.turns = turns
        self.short = short  # fewer turns had changes than asked for
        self.outcomes: list = []  # (undo.Item, outcome text)
        self.asks: list = []  # (undo.Item, undo.Now) waiting for a question
        self.asked = 0
        self.row = ""  # the id of the question's row on screen
        self.confirm_ref = 0
        self.cancelled = False


def undo_shown(name: str) -> str:
    from dashfloat.tools.preview import safe

    return safe(name)


def undo_not_covered() -> str:
    return "/undo covers only the files DashFloat's own tools wrote, not changes made by commands"


def _plan_path(plan) -> str:
    """A write or edit plan's file, relative to the root (as the journal and /undo name it)."""
    return os.fsdecode(os.path.relpath(os.fsencode(plan.abs), os.fsencode(plan.root)))


def _written(call: Call) -> dict | None:
    """{"path", "change"} for a write_file or edit_file that changed its file, else None."""
    plan = getattr(call.prepared, "plan", None)
    if call.name not in ("write_file", "edit_file") or plan is None or not (call.result or {}).get("ok"):
        return None
    return {"path": _plan_path(plan), "change": "created" if call.result.get("created") else "modified"}


def _git_snapshot(root: str):
    """The work tree's status before a command runs (tools/gitchanges.py); None if none."""
    try:
        from dashfloat.tools import gitchanges

        return gitchanges.snapshot(root)
    except Exception:
        log.exception("git status before a command failed")
        return None


def _git_report(root: str, before, inbox, episode: int, call_id: str) -> None:
    """After the command: which files it changed, as a note on its row and as a list (on
    its own thread). Always answers with T_GIT: the turn's end waits for it."""
    text, files = None, []
    try:
        if before is not None:  # None: not in a work tree, nothing to compare
            from dashfloat.tools import gitchanges

            after = gitchanges.snapshot(root)
            text = gitchanges.report(before, after)
            files = [{"path": path, "change": what} for path, what in gitchanges.shown_changes(before, after)]
    except BaseException:
        log.exception("git status after a command failed")
    finally:
        inbox.put((M.T_GIT, episode, call_id, text, files))


def sessions_text(root: str, current: str | None) -> str:
    """The /sessions entry: this directory's sessions as `dashfloat sessions` lists them,
    the current one marked."""
    from dashfloat import sessions

    here = os.path.realpath(root)
    infos = sessions.list_sessions(os.environ, here)
    if not infos:
        return f"No recorded sessions in {here} yet (a session is recorded from its first prompt)."
    lines = sessions.format_listing(infos, with_dirs=False).split("\n")
    ids = sessions.shown_ids(infos)
    out = [f"Sessions in {here}, newest activity first:", "  " + lines[0]]
    for info, line in zip(infos, lines[1:], strict=True):
        mark = "*" if info.id == current else " "
        out.append(f"{mark} {line}")
    from dashfloat.manpage import self_command

    me = self_command()  # `python3 dashfloat.pyz` or the single executable's path, as typed
    if current is not None and any(i.id == current for i in infos):
        out.append(f"* this session ({ids[current]}). {me} --resume ID resumes another (after /quit).")
    else:
        out.append(f"{me} --resume ID resumes one (after /quit).")
    return "\n".join(out)


def json_dumps(value) -> str:
    """Canonical JSON of call arguments (for the repeat guard's key and estimates)."""
    import json

    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _last_answer(messages: list[dict]) -> list[str]:
    """The texts of the latest turn of a conversation that wrote any (for /copy after a
    resume): the assistant messages with content after its last user message."""
    texts: list[str] = []
    for message in reversed(messages):
        role = message.get("role")
        content = message.get("content")
        if role == "assistant" and isinstance(content, str) and content:
            texts.append(content)
        elif role == "user" and texts:
            break
    return texts[::-1]


def _total_tokens(usage: dict) -> int | None:
    total = usage.get("total_tokens")
    if total is None and usage.get("prompt_tokens") is not None:
        total = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def _started_text(stamp) -> str:
    """When a resumed session started, from its header's `time` (epoch seconds), for the
    screen: a header without a usable time (an old or hand-made journal) says so, never 1970."""
    try:
        return "started " + time.strftime("%Y-%m-%d %H:%M", time.localtime(float(stamp)))
    except (TypeError, ValueError, OverflowError, OSError):
        return "started at an unknown time"


def _model_listed(name: str, models: list) -> bool:
    """Listed as is, or as NAME:latest (Ollama serves `llama3.2` as `llama3.2:latest`)."""
    return name in models or (":" not in name and f"{name}:latest" in models)


def _closest_models(name: str, models: list) -> list[str]:
    """The listed names nearest to `name`: similar spellings first, then names that
    contain it or that it contains (case folded)."""
    import difflib

    names = [m for m in models if isinstance(m, str)]
    near = difflib.get_close_matches(name, names, n=MODEL_CLOSEST, cutoff=0.5)
    folded = name.casefold()
    for m in names:
        if len(near) >= MODEL_CLOSEST:
            break
        if m not in near and (folded in m.casefold() or m.casefold() in folded):
            near.append(m)
    return near


# finish_reason values that say why an answer is empty or short (Azure and OpenAI filter
# with content_filter; every server says length at the output token limit)
_EMPTY_BECAUSE = {
    "content_filter": "[the provider's content filter blocked the answer (finish_reason content_filter)]",
    "length": "[model returned nothing before it reached its output token limit (finish_reason length)]",
}
_CUT_BECAUSE = {
    "content_filter": "The provider's content filter cut the answer short (finish_reason content_filter).",
    "length": "The answer stopped at the model's output token limit (finish_reason length): it is cut short.",
}


def _error_line(err: dict) -> str:
    message = str(err.get("message") or "request failed").rstrip(".")
    hint = str(err.get("hint") or "").strip()
    hint = hint[:1].upper() + hint[1:]
    if hint and hint[-1] not in ".!?":
        hint += "."
    line = f"{message}." + (f" {hint}" if hint else "")
    if err.get("partial"):
        line += " (The text above is incomplete.)"
    return line
