"""The agent: owns the conversation and runs each turn, on its own thread.

It knows nothing of urwid. It reads plain tuples from its inbox (prompts and cancels from a
front end, stream events from its streamer threads) and reports everything a front end
shows through `post(tuple)` (see dashfloat.messages). A second, headless front end can
drive the same class.

One streamer thread per episode runs the HTTP request; its events carry the episode
number, so events of a cancelled episode that arrive late are dropped, not shown.
"""

from __future__ import annotations

import logging
import queue
import threading
import traceback
from collections.abc import Callable

from dashfloat import messages as M
from dashfloat.llm.endpoint import Endpoint
from dashfloat.llm.errors import ChatError

log = logging.getLogger("dashfloat.agent")

MODEL_LIST_SHOWN = 30


class Agent:
    """Conversation state plus the turn state machine (idle -> waiting -> streaming -> idle)."""

    def __init__(
        self,
        endpoint: Endpoint,
        model: str | None,
        post: Callable[[tuple], None],
        *,
        stream_fn=None,
        list_models_fn=None,
    ):
        self.endpoint = endpoint
        self.model = model
        self.post = post
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.messages: list[dict] = []
        self._stream_fn = stream_fn
        self._list_models_fn = list_models_fn
        self._thread: threading.Thread | None = None
        # current episode
        self._episode = 0
        self._busy = False
        self._cancel = None  # the CancelToken of the running episode
        self._content: list[str] = []
        self._got_content = False
        self._reasoning_seen = False
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

    def _load_client(self) -> None:
        """Import the HTTP stack here, on the agent thread, so the UI's first frame never
        waits for requests and urllib3 to load."""
        from dashfloat.llm import client

        self._client = client
        if self._stream_fn is None:
            self._stream_fn = client.stream_chat
        if self._list_models_fn is None:
            self._list_models_fn = client.list_models

    def _run(self) -> None:
        try:
            self._load_client()
            self.post(M.phase("idle"))
            if self.model:
                self.post((M.MODEL, self.model))
            else:
                self._discover()
            while True:
                msg = self.inbox.get()
                if msg[0] == M.QUIT:
                    self._cancel_episode()
                    return
                self.handle(msg)
        except Exception as exc:  # the UI must survive a bug here: report and stop
            log.exception("agent thread crashed")
            self.post((M.AGENT_DOWN, f"{type(exc).__name__}: {exc}"))

    # ---- dispatch ---------------------------------------------------------------------
    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == M.PROMPT:
            self._on_prompt(msg[1])
        elif kind == M.CANCEL:
            self._on_cancel()
        elif kind == M.MODELS:
            self._on_models(msg[1], msg[2])
        elif kind in (M.S_CONTENT, M.S_REASONING, M.S_USAGE, M.S_DONE, M.S_FAILED):
            if msg[1] != self._episode or not self._busy:
                return  # a late event of a cancelled episode
            self._on_stream(kind, msg[2])
        else:
            log.warning("agent ignored unknown message %r", kind)

    # ---- model discovery --------------------------------------------------------------
    def _discover(self) -> None:
        """Ask GET /models on a worker thread; the answer arrives as ("models", ok, payload)."""
        if self._discovering:
            return
        self._discovering = True

        def work():
            try:
                self.inbox.put((M.MODELS, True, self._list_models_fn(self.endpoint)))
            except ChatError as exc:
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
                self.post((M.ASSISTANT_END, "error"))
                self._finish_turn()
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
            self.post((M.ASSISTANT_END, "error"))
            self._finish_turn()

    # ---- turns ------------------------------------------------------------------------
    def _on_prompt(self, text: str) -> None:
        if self._busy:
            self.post(M.system("warn", "A turn is still running: press Esc to cancel it first."))
            return
        if text.strip() == "/model" or text.startswith("/model "):
            self._model_command(text[len("/model") :].strip())
            return
        self.post((M.USER, text))
        self.messages.append({"role": "user", "content": text})
        self._busy = True
        self.post(M.phase("waiting"))
        if self.model is None:
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

    def _start_episode(self) -> None:
        self._episode += 1
        episode = self._episode
        self._cancel = cancel = self._client.CancelToken()
        self._content = []
        self._got_content = False
        self._reasoning_seen = False
        self.post((M.ASSISTANT_START,))
        conversation = [dict(m) for m in self.messages]
        model = self.model
        inbox = self.inbox

        def on_event(ev: tuple) -> None:
            kind = ev[0]
            if kind == "content":
                inbox.put((M.S_CONTENT, episode, ev[1]))
            elif kind == "reasoning":
                inbox.put((M.S_REASONING, episode, ev[1]))
            elif kind == "usage":
                inbox.put((M.S_USAGE, episode, ev[1]))

        def work():
            try:
                result = self._stream_fn(self.endpoint, model, conversation, on_event=on_event, cancel=cancel)
                inbox.put((M.S_DONE, episode, result.as_dict()))
            except ChatError as exc:
                inbox.put((M.S_FAILED, episode, exc.as_dict()))
            except Exception as exc:  # a bug in the streamer: a result, not a hang
                log.exception("streamer crashed")
                inbox.put(
                    (M.S_FAILED, episode, {"kind": "internal", "message": f"the stream crashed: {exc!r}",
                                           "hint": "see the log file", "partial": False})
                )

        threading.Thread(target=work, name=f"stream-{episode}", daemon=True).start()

    def _on_stream(self, kind: str, payload) -> None:
        if kind == M.S_CONTENT:
            if not self._got_content:
                self._got_content = True
                self.post(M.phase("streaming"))
            self._content.append(payload)
            self.post((M.TOKEN, payload))
        elif kind == M.S_REASONING:
            if not self._reasoning_seen:
                self._reasoning_seen = True
                self.post(M.phase("streaming"))
            self.post((M.REASONING, payload))
        elif kind == M.S_USAGE:
            pass  # the final usage comes with S_DONE; the status bar shows only that one
        elif kind == M.S_DONE:
            self._on_done(payload)
        elif kind == M.S_FAILED:
            self._on_failed(payload)

    def _on_done(self, result: dict) -> None:
        content = result.get("content") or "".join(self._content)
        calls = result.get("tool_calls") or []
        if content:
            self.messages.append({"role": "assistant", "content": content})
        usage = result.get("usage")
        if usage:
            self.post((M.USAGE, usage))
        if calls:
            names = ", ".join(sorted({c.get("name") or "?" for c in calls}))
            self.post(
                M.system(
                    "warn",
                    f"The model asked for {len(calls)} tool call(s) ({names}); this build does not run tools yet.",
                )
            )
        status = "done" if content or calls else "empty"
        self.post((M.ASSISTANT_END, status))
        if status == "empty":
            self.post(M.system("warn", "[model returned nothing]"))
        self._finish_turn()

    def _on_failed(self, err: dict) -> None:
        content = "".join(self._content)
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self.post((M.ASSISTANT_END, "error"))
        self.post(M.system("error", _error_line(err)))
        self._finish_turn()

    def _on_cancel(self) -> None:
        if not self._busy:
            return
        self._cancel_episode()
        content = "".join(self._content)
        if content:
            self.messages.append({"role": "assistant", "content": content})
        self._pending_prompt = None
        self.post((M.ASSISTANT_END, "cancelled"))
        self._finish_turn()

    def _cancel_episode(self) -> None:
        if self._cancel is not None:
            try:
                self._cancel.cancel()
            except Exception:
                log.exception("cancel failed")
            self._cancel = None

    def _finish_turn(self) -> None:
        self._busy = False
        self._cancel = None
        self.post(M.phase("idle"))


def _error_line(err: dict) -> str:
    message = str(err.get("message") or "request failed").rstrip(".")
    hint = str(err.get("hint") or "").strip()
    hint = hint[:1].upper() + hint[1:]
    line = f"{message}." + (f" {hint}" if hint else "")
    if err.get("partial"):
        line += " (The text above is incomplete.)"
    return line


def format_exception_line(exc: BaseException) -> str:
    """One line for the screen; the full traceback goes to the log."""
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last[:300]
