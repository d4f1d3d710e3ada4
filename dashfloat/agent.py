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
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from dashfloat import conversation
from dashfloat import messages as M
from dashfloat.llm.endpoint import Endpoint
from dashfloat.tools import results

log = logging.getLogger("dashfloat.agent")

MODEL_LIST_SHOWN = 30
READ_POOL = 10  # read-only calls of one episode running at once
FILE_TOOL_TIMEOUT = 60.0  # a file tool still busy after this is abandoned (a hung mount)
EXEC_GRACE = 5.0  # execute_command enforces its own timeout; the agent waits this much more


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
        policy=None,
        pre_hooks: tuple[str, ...] = (),
        post_hooks: tuple[str, ...] = (),
        hook_timeout: float = 10.0,
    ):
        self.endpoint = endpoint
        self.model = model
        self.post = post
        self.root = root
        self.tools_enabled = tools_enabled
        self.max_episodes = max_episodes
        self.exec_timeout = exec_timeout
        self.policy = policy  # tools.permissions.Policy; built-in defaults when None
        self.pre_hooks = tuple(pre_hooks)
        self.post_hooks = tuple(post_hooks)
        self.hook_timeout = hook_timeout
        self.secrets = tuple(x for x in (endpoint.api_key,) if x)  # redacted from tool results
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.messages: list[dict] = []
        self._stream_fn = stream_fn
        self._list_models_fn = list_models_fn
        self._client = None
        self._runner = None
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
        self._final_usage: dict | None = None
        self._discovering = False
        self._pending_prompt: str | None = None

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
        """Import the HTTP stack and the tools here, on the agent thread, so the UI's
        first frame never waits for requests and urllib3 to load."""
        from dashfloat.llm import client
        from dashfloat.llm.errors import ChatError
        from dashfloat.tools import runner

        self._ChatError = ChatError
        from dashfloat.tools import pipeline

        self._pipeline = pipeline
        if self.policy is None:
            from dashfloat.tools.permissions import Policy

            self.policy = Policy()
        self._client = client
        self._runner = runner
        if self._stream_fn is None:
            self._stream_fn = client.stream_chat
        if self._list_models_fn is None:
            self._list_models_fn = client.list_models

    def _run(self) -> None:
        try:
            self._load_modules()
            self._set_phase("idle")
            self.post((M.MODE, self.policy.mode))
            if self.model:
                self.post((M.MODEL, self.model))
            else:
                self._discover()
            while True:
                try:
                    msg = self.inbox.get(timeout=self._wait_timeout())
                except queue.Empty:
                    self._check_deadlines()
                    continue
                if msg[0] == M.QUIT:
                    self._shutdown()
                    return
                self.handle(msg)
        except Exception as exc:  # the UI must survive a bug here: report and stop
            log.exception("agent thread crashed")
            self._shutdown()
            self.post((M.AGENT_DOWN, f"{type(exc).__name__}: {exc}"))

    def _shutdown(self) -> None:
        """Stop the stream and any running command (its whole process group)."""
        self._cancel_stream()
        for _call, cancel in list(self._running.values()):
            cancel.cancel()
        if self._runner is not None:
            try:
                self._runner.kill_all()
            except Exception:
                log.exception("kill_all failed")

    # ---- dispatch ---------------------------------------------------------------------
    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == M.PROMPT:
            self._on_prompt(msg[1])
        elif kind == M.CANCEL:
            self._on_cancel()
        elif kind == M.CONFIRM_DECISION:
            self._on_decision(msg[1], msg[2])
        elif kind == M.MODELS:
            self._on_models(msg[1], msg[2])
        elif kind in (M.S_DONE, M.S_FAILED):
            if msg[1] != self._episode or not self._busy or self._cancel is None:
                return  # a late event of a cancelled episode
            self._on_stream(kind, msg[2])
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

        def work():
            try:
                self.inbox.put((M.MODELS, True, self._list_models_fn(self.endpoint)))
            except self._ChatError as exc:
                self.inbox.put((M.MODELS, False, exc.as_dict()))
            except Exception as exc:  # a bug: still answer, so the agent never waits forever
                log.exception("model discovery failed")
                self.inbox.put((M.MODELS, False, {"message": f"model list failed: {exc}", "hint": ""}))

        threading.Thread(target=work, name="models", daemon=True).start()

    def _on_models(self, ok: bool, payload) -> None:
        self._discovering = False
        pending, self._pending_prompt = self._pending_prompt, None
        if not ok:
            self.post(M.system("error", _error_line(payload)))
            if pending is not None:
                self._end_turn()
            return
        models = list(payload)
        if len(models) == 1:
            self.model = models[0]
            self.post((M.MODEL, self.model))
            self.post(M.system("info", f"Using model {self.model}, the only one {self.endpoint.base_url} serves."))
            if pending is not None:
                self._start_episode()
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
            self._end_turn()

    # ---- turns ------------------------------------------------------------------------
    def _on_prompt(self, text: str) -> None:
        if self._busy:
            self.post(M.system("warn", "A turn is still running: press Esc to cancel it first."))
            return
        if text.strip() == "/model" or text.startswith("/model "):
            self._model_command(text[len("/model") :].strip())
            return
        if text.strip() == "/mode" or text.startswith("/mode "):
            self._mode_command(text[len("/mode") :].strip())
            return
        if text.strip() == "/permissions" or text.startswith("/permissions "):
            self._permissions_command(text[len("/permissions") :].strip())
            return
        self.post((M.USER, text))
        self.messages.append({"role": "user", "content": text})
        self._busy = True
        self._episodes_in_turn = 0
        self._final_usage = None
        self._stopping = False
        if self.model is None:
            self._set_phase("waiting")
            self._pending_prompt = text
            self._discover()
            return
        self._start_episode()

    def _model_command(self, name: str) -> None:
        if not name:
            if self.model:
                self.post(M.system("info", f"Model: {self.model}. /model NAME switches."))
            self._discover()
            return
        self.model = name
        self.post((M.MODEL, name))
        self.post(M.system("info", f"Model set to {name}."))

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
        log.info("audit: permission mode set to %s by the user (/mode)", name)
        self.post((M.MODE, self.policy.mode))
        self.post(M.system("info", f"Permission mode set to {self.policy.mode}."))

    def _permissions_command(self, rest: str) -> None:
        if rest.startswith("revoke"):
            try:
                n = int(rest.split()[1])
                if n < 1:
                    raise IndexError(n)
                rule = self.policy.revoke(n - 1)
            except (IndexError, ValueError):
                count = len(self.policy.session_rules())
                self.post(M.system("error", f"/permissions revoke N: N is a session rule's number, 1 to {count}."))
                return
            log.info("audit: session rule revoked by the user: %s", rule.text)
            self.post(M.system("info", f"Revoked: {rule.text}"))
            return
        lines = self.policy.describe()
        session = self.policy.session_rules()
        if session:
            lines.append("Session rules, by number (/permissions revoke N removes one):")
            lines.extend(f"  {i}. {rule.text}" for i, rule in enumerate(session, 1))
        else:
            lines.append("No session rules yet: the a key on a confirmation adds one.")
        self.post(M.system("info", "\n".join(lines)))

    def _start_episode(self) -> None:
        self._episode += 1
        self._episodes_in_turn += 1
        episode = self._episode
        self._cancel = cancel = self._client.CancelToken()
        self._content = []
        self._calls = []
        self._call_index = 0
        self._set_phase("waiting")
        self.post((M.ASSISTANT_START,))
        fixed, notes = conversation.repair(self.messages)
        if notes:
            log.warning("conversation repaired before a request: %s", "; ".join(notes))
            self.post(M.system("warn", "Repaired the conversation before sending it: " + "; ".join(notes) + "."))
        self.messages = fixed
        request = [dict(m) for m in fixed]
        model = self.model
        inbox = self.inbox
        tools = self._runner.TOOLS if self.tools_enabled else None

        # Streamed text goes from the streamer straight to the front end (one thread hop
        # per delta, not two; the client hands over a read's tokens as one delta) and into
        # `content`, which the agent reads when the episode ends. The episode lock orders
        # it against a cancel: once the agent has ended the episode under the lock, no late
        # token can follow the "cancelled" marker.
        content = self._content
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
                        post((M.REASONING, ev[1]))

        def work():
            try:
                kwargs = {"on_event": on_event, "cancel": cancel}
                if tools is not None:
                    kwargs["tools"] = tools
                result = self._stream_fn(self.endpoint, model, request, **kwargs)
                inbox.put((M.S_DONE, episode, result.as_dict()))
            except self._ChatError as exc:
                inbox.put((M.S_FAILED, episode, exc.as_dict()))
            except Exception as exc:  # a bug in the streamer: a result, not a hang
                log.exception("streamer crashed")
                inbox.put(
                    (M.S_FAILED, episode, {"kind": "internal", "message": f"the stream crashed: {exc!r}",
                                           "hint": "see the log file", "partial": False})
                )

        threading.Thread(target=work, name=f"stream-{episode}", daemon=True).start()

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
        if raw_calls and not self.tools_enabled:
            names = ", ".join(sorted({c.get("name") or "?" for c in raw_calls}))
            self.post(M.system("warn", f"The model asked for {len(raw_calls)} tool call(s) ({names}); tools are off."))
            raw_calls = []
        if not content and not raw_calls:
            self.post((M.ASSISTANT_END, "empty"))
            self.post(M.system("warn", "[model returned nothing]"))
            self._end_turn()
            return
        self.post((M.ASSISTANT_END, "done"))
        self._calls = [Call(c) for c in raw_calls]
        self.messages.append(conversation.assistant_message(content, raw_calls))
        if not self._calls:
            self._end_turn()
            return
        for call in self._calls:
            self.post((M.TOOL_CALL, {"id": call.id, "name": call.name,
                                     "summary": self._runner.summary(call.name, call.raw.get("args"))}))
        self._next_call()

    def _on_failed(self, err: dict) -> None:
        self._final_usage = None  # the failed episode reported none
        content = "".join(self._content)
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self.post((M.ASSISTANT_END, "error"))
        self.post(M.system("error", _error_line(err)))
        self._end_turn()

    # ---- tools ------------------------------------------------------------------------
    def _gate(self, call: Call, cancel) -> tuple[tuple[str, object], list[str]]:
        """The pre-execute chain of tools/pipeline.py for one call, on the call's own
        thread. Returns (verdict, notes for the call's row). Never raises."""
        ctx = self._pipeline.CallContext(
            call_id=call.id, name=call.name, raw=call.raw, root=self.root, policy=self.policy,
            pre_hooks=self.pre_hooks, post_hooks=self.post_hooks, hook_timeout=self.hook_timeout,
            secrets=self.secrets, cancel=cancel,
        )
        call.ctx = ctx
        try:
            verdict = self._pipeline.pre_execute(ctx)
        except Exception as exc:  # a bug in a stage is an error result, never a dead agent
            log.exception("gate for %s failed", call.name)
            verdict = ("done", results.error("internal", f"checking {call.name} failed: {type(exc).__name__}: {exc}"))
        call.args = ctx.args
        if verdict[0] != "done":
            call.prepared = verdict[1]
        notes, ctx.notes = list(ctx.notes), []
        return verdict, notes

    def _start_gate(self, call: Call) -> None:
        episode = self._episode
        cancel = self._runner.Cancel()
        self._gating[call.id] = cancel

        def work():
            gate, notes = self._gate(call, cancel)
            self.inbox.put((M.T_GATE, episode, call.id, gate, notes))

        threading.Thread(target=work, name=f"gate-{call.name}", daemon=True).start()

    def _on_gate(self, call_id: str, gate: tuple, notes: list) -> None:
        self._gating.pop(call_id, None)
        call = next((c for c in self._calls if c.id == call_id), None)
        if call is None:
            return
        call.gate = tuple(gate)
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
            self.post((M.TOOL_RESULT, row))

    def _on_decision(self, ref: int, decision: str) -> None:
        if self._phase != "confirming" or ref != self._confirm_ref:
            return  # a stale or duplicate key
        call = self._calls[self._call_index]
        key = {"always": "a", "approved": "y"}.get(decision, "n")
        verdict = "allow" if key in ("a", "y") else "deny"
        who = f"user key {key}"
        if key == "a":  # approve, and allow this exact call for the session
            who += f" (session rule {self.policy.allow_exact(call.name, call.args).text})"
        log.info("audit: %s", self.policy.audit_line(call.name, call.args,
                                                     self._pipeline.rules.Decision(verdict, who, "")))
        if verdict == "allow":
            self._execute(call)
        else:
            call.result = results.rejected()
            self._next_call()

    def _execute(self, call: Call) -> None:
        self._set_phase("running")
        episode = self._episode
        inbox = self.inbox
        cancel = self._runner.Cancel()
        self._running[call.id] = (call, cancel)
        limit = self.exec_timeout + EXEC_GRACE if call.name == "execute_command" else FILE_TOOL_TIMEOUT
        self._deadlines[call.id] = (time.monotonic() + limit, limit)

        secrets = [x for x in self.secrets if x and len(x) >= 8]

        def on_output(text: str) -> None:
            inbox.put((M.T_OUTPUT, episode, call.id, self._pipeline.redact(text, secrets)))

        def work():
            try:
                result = self._runner.execute(call.name, call.args, self.root, call.prepared, cancel=cancel,
                                              on_output=on_output, exec_timeout=self.exec_timeout)
            except Exception as exc:  # a tool that raises is an error result, never a crash
                log.exception("tool %s crashed", call.name)
                result = results.error("internal", f"{call.name} failed: {type(exc).__name__}: {exc}")
            if call.ctx is not None:
                try:
                    result = self._pipeline.post_execute(call.ctx, result)
                except Exception as exc:
                    log.exception("post-execute of %s failed", call.name)
                    result = results.error("internal", f"{call.name}: post-processing failed: {exc!r}")
                for note in call.ctx.notes:
                    self.post((M.TOOL_NOTE, call.id, note))
            inbox.put((M.T_DONE, episode, call.id, result))

        threading.Thread(target=work, name=f"tool-{call.name}", daemon=True).start()

    def _on_tool_done(self, call_id: str, result: dict) -> None:
        entry = self._running.pop(call_id, None)
        self._deadlines.pop(call_id, None)
        if entry is None:
            return  # abandoned after its deadline: its result came too late
        call, _cancel = entry
        call.result = result
        if self._stopping:
            if not self._running and not self._gating:
                self._stop_turn(results.cancelled())
            return
        if self._running or self._gating:
            self._commit_ready()
            return
        self._next_call()

    def _check_deadlines(self) -> None:
        """Abandon calls past their deadline: a result now, the work cancelled."""
        now = time.monotonic()
        for call_id, (deadline, limit) in list(self._deadlines.items()):
            if now >= deadline:
                entry = self._running.get(call_id)
                if entry is not None:
                    entry[1].cancel()
                    log.warning("abandoned %s after %ss", entry[0].name, limit)
                self._on_tool_done(call_id, results.error(
                    "timeout", f"did not finish within {limit:g}s; abandoned"))

    def _wait_timeout(self) -> float | None:
        if not self._deadlines:
            return None
        return max(0.0, min(d for d, _ in self._deadlines.values()) - time.monotonic())

    def _finish_episode(self) -> None:
        for call in self._calls:
            self.messages.append(conversation.tool_message(call.id, call.result))
        self._calls = []
        if self._episodes_in_turn >= self.max_episodes:
            self.post(M.system("warn", f"Stopped after {self.max_episodes} episodes in one turn (max_episodes). "
                                       "Say how to go on, or raise max_episodes in the configuration."))
            self._end_turn()
            return
        self._start_episode()

    # ---- cancel and the end of a turn -------------------------------------------------
    def _on_cancel(self) -> None:
        if not self._busy:
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
            self._stop_turn(results.rejected())
            return
        with self._episode_lock:  # no token of this episode is posted after this
            self._cancel_stream()
        content = "".join(self._content)
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self._pending_prompt = None
        self.post((M.ASSISTANT_END, "cancelled"))
        self._end_turn()

    def _stop_turn(self, unresolved: dict) -> None:
        """Answer every unresolved call of the episode, record them, and end the turn."""
        for call in self._calls[self._call_index :]:
            if call.result is None:
                call.result = dict(unresolved)
        self._commit_ready()
        for call in self._calls:
            self.messages.append(conversation.tool_message(call.id, call.result))
        self._calls = []
        self.post(M.system("info", "Turn stopped. Say what to do instead."))
        self._end_turn()

    def _cancel_stream(self) -> None:
        if self._cancel is not None:
            try:
                self._cancel.cancel()
            except Exception:
                log.exception("cancel failed")
            self._cancel = None

    def _end_turn(self) -> None:
        if self._final_usage:
            self.post((M.USAGE, self._final_usage))  # only the final episode's usage
        self._busy = False
        self._cancel = None
        self._running.clear()
        self._gating.clear()
        self._deadlines.clear()
        self._stopping = False
        self._set_phase("idle")


def _error_line(err: dict) -> str:
    message = str(err.get("message") or "request failed").rstrip(".")
    hint = str(err.get("hint") or "").strip()
    hint = hint[:1].upper() + hint[1:]
    line = f"{message}." + (f" {hint}" if hint else "")
    if err.get("partial"):
        line += " (The text above is incomplete.)"
    return line
