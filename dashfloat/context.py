"""The context window: what the next request costs in tokens, and compaction when it is too much.

Stable API (the metering code and the headless front end use it too):

  estimate_tokens(messages, tools=None) -> int
      A raw, tokenizer-free estimate of a request's prompt tokens: ~3.5 ASCII characters a
      token, one token per other character, 4 per message, the tools' schemas. Pure.
  ContextManager
      window, threshold, `estimate(messages, tools)` (calibrated: `observe(raw, usage)` with
      the provider's reported prompt_tokens scales the raw estimate), `plan` / `finish` (a
      compaction, in two steps because the summary is a request the agent makes on a worker).
  apply_ops(messages, ops) -> messages
      A compaction as data: the agent applies it to its conversation and journals the ops;
      sessions.load applies the same ops to the conversation it rebuilds, so a resumed
      session gets the compacted conversation without the journal storing it twice.

A compaction, when the estimate of the next request passes `threshold` x `window` (or on
/compact): (1) free: the outputs of old tool calls (not the most recent ones, never those the
model has not read yet) become short stubs that say what was there; (2) if still over: the
messages between the pinned head (the conversation's first request; the system message with
the instructions is rebuilt for every request and never compacted) and the most recent turns
(RECENT_SHARE of the window, verbatim) are summarised by one request without tools, in the
fixed structure of SUMMARY_HEADINGS. A summary that is empty, cut short or not smaller than
what it replaces is rejected; then (and when the request fails) the same messages are dropped
with a marker that says so (earlier summaries among them are kept). Last, if the request
still does not fit, the largest recent outputs and messages are cut (with a marker) until it
does. A unit is never split: an assistant message with tool calls stays with its results.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

DEFAULT_WINDOW = 32_768  # tokens, when neither the configuration nor the endpoint says
DEFAULT_THRESHOLD = 0.8
RECENT_SHARE = 0.3  # the most recent units kept verbatim: this share of the window at most
STUB_MIN = 600  # characters: a shorter tool output is never stubbed
RESULT_SHOWN = 1500  # characters of one tool output the summariser reads
SUMMARY_MIN, SUMMARY_MAX = 300, 2000  # tokens a summary may take (10 % of the window between)
FAILURES_TO_STOP = 3  # failed compactions in a row that stop the turn
CUT_MIN = 400  # characters a cut text keeps at least
CHARS_PER_TOKEN = 3.5  # ASCII characters per token of the raw estimate
MESSAGE_OVERHEAD = 4  # tokens per message (role, separators of the chat template)

SUMMARY_HEADINGS = (
    "Goal",
    "Decisions",
    "Files touched",
    "Commands that worked or failed",
    "Open problems",
    "Exact next steps",
)
SUMMARY_PREFIX = "[DashFloat: earlier messages of this conversation were compacted to fit the context window."
DROPPED_PREFIX = "[DashFloat: earlier messages of this conversation were dropped to fit the context window."
CUT_NOTE = "[DashFloat: cut to fit the context window: {n:,} more characters not shown]"


# ---- the estimate -----------------------------------------------------------------------------


def text_tokens(text: str) -> float:
    if not text:
        return 0.0
    if text.isascii():
        return len(text) / CHARS_PER_TOKEN
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars / CHARS_PER_TOKEN + (len(text) - ascii_chars)


def message_tokens(msg: dict) -> float:
    n = MESSAGE_OVERHEAD
    content = msg.get("content")
    if isinstance(content, str):
        n += text_tokens(content)
    elif content is not None:  # parts (not sent by DashFloat, but estimate them all the same)
        n += text_tokens(json.dumps(content, ensure_ascii=False))
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        n += 8 + text_tokens(str(fn.get("name") or "")) + text_tokens(str(fn.get("arguments") or ""))
    if msg.get("tool_call_id"):
        n += 4
    return n


_TOOLS_CACHE: dict[int, tuple[object, float]] = {}


def tools_tokens(tools) -> float:
    if not tools:
        return 0.0
    key = id(tools)
    hit = _TOOLS_CACHE.get(key)
    if hit is not None and hit[0] is tools:
        return hit[1]
    n = text_tokens(json.dumps(tools, ensure_ascii=False))
    _TOOLS_CACHE.clear()
    _TOOLS_CACHE[key] = (tools, n)
    return n


def estimate_tokens(messages, tools=None) -> int:
    """The raw estimate of the prompt tokens of a request with `messages` and `tools`. Pure."""
    return int(sum(message_tokens(m) for m in messages) + tools_tokens(tools) + 3)


def short(n: int) -> str:
    """31234 -> "31.2k"; under 1,000 as it is."""
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


# ---- ops: a compaction as data --------------------------------------------------------------------


def _calls_by_id(messages) -> dict[str, dict]:
    out = {}
    for m in messages:
        for c in m.get("tool_calls") or ():
            if isinstance(c, dict) and c.get("id"):
                out[c["id"]] = c
    return out


def _call_text(call: dict | None) -> str:
    if not call:
        return "a tool call"
    fn = call.get("function") or {}
    args = str(fn.get("arguments") or "")
    if len(args) > 160:
        args = args[:150] + "…"
    return f"{fn.get('name') or '?'} {args}"


def stub(content: str, call: dict | None) -> str:
    """The stub of a tool output: its small fields kept (ok, path, exit_code, lines...), the
    big ones (content, output, entries) named with their sizes. Valid JSON, deterministic."""
    try:
        obj = json.loads(content)
    except ValueError:
        obj = None
    kept: dict = {}
    gone: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is None or isinstance(v, bool | int | float) or (isinstance(v, str) and len(v) <= 200):
                kept[k] = v
            elif isinstance(v, str):
                gone.append(f"{k}: {len(v):,} characters, {v.count(chr(10)) + 1:,} lines")
            elif isinstance(v, list):
                gone.append(f"{k}: {len(v):,} items")
            else:
                gone.append(f"{k}: {len(json.dumps(v, ensure_ascii=False)):,} characters")
    else:
        gone.append(f"{len(content):,} characters")
    kept["stub"] = (f"the output of {_call_text(call)} was removed to save context ({'; '.join(gone)}); "
                    "call the tool again if you need it")
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))


def is_stub(content) -> bool:
    return isinstance(content, str) and '"stub":"the output of ' in content


ARGS_NOTE = "[DashFloat: {n:,} characters ({lines:,} lines) left out to save context]"
_ARGS_MARK = "left out to save context]"


def stub_args(arguments: str) -> str | None:
    """A call's arguments with every long string value (write_file's content, edit_file's
    blocks) replaced by a note of its size; None when there is none. Still valid JSON."""
    try:
        obj = json.loads(arguments)
    except (ValueError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    changed = False
    for k, v in obj.items():
        if isinstance(v, str) and len(v) > STUB_MIN and not v.endswith(_ARGS_MARK):
            obj[k] = ARGS_NOTE.format(n=len(v), lines=v.count("\n") + 1)
            changed = True
    return json.dumps(obj, ensure_ascii=False) if changed else None


def _with_args(msg: dict, ids, change) -> None:
    """Replace, in `msg`'s tool calls whose id is in `ids`, the arguments by `change(arguments)`
    (when it returns a string). New dicts: the calls the caller holds keep their arguments."""
    calls = msg.get("tool_calls")
    if not calls or not any(isinstance(c, dict) and c.get("id") in ids for c in calls):
        return
    new = []
    for c in calls:
        if isinstance(c, dict) and c.get("id") in ids:
            fn = dict(c.get("function") or {})
            changed = change(str(fn.get("arguments") or ""), c["id"])
            if changed is not None:
                fn["arguments"] = changed
                c = dict(c, function=fn)
        new.append(c)
    msg["tool_calls"] = new


def _cut_args(arguments: str, keep: int) -> str | None:
    """A call's arguments with their longest string value cut so the whole is about `keep`."""
    try:
        obj = json.loads(arguments)
    except (ValueError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    longest = max((k for k, v in obj.items() if isinstance(v, str)), key=lambda k: len(obj[k]), default=None)
    if longest is None:
        return None
    text = obj[longest]
    room = max(CUT_MIN, keep - (len(arguments) - len(text)))
    if len(text) <= room:
        return None
    obj[longest] = text[:room] + "\n" + CUT_NOTE.format(n=len(text) - room)
    return json.dumps(obj, ensure_ascii=False)


def cut_text(content: str, keep: int, *, tool: bool) -> str:
    """`content` cut to about `keep` characters with a marker. A tool output stays valid JSON:
    its longest string field is cut."""
    if len(content) <= keep:
        return content
    if tool:
        try:
            obj = json.loads(content)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            longest = max((k for k, v in obj.items() if isinstance(v, str)), key=lambda k: len(obj[k]), default=None)
            if longest is not None:
                other = len(content) - len(obj[longest])
                room = max(CUT_MIN, keep - other)
                text = obj[longest]
                if len(text) > room:
                    obj[longest] = text[:room]
                    obj["cut_by_dashfloat"] = (f"{len(text) - room:,} more characters of {longest} were cut to fit the "
                                               "context window; ask for a smaller part (offset/limit, a narrower "
                                               "command) to see them")
                    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return json.dumps({"cut": content[:keep], "cut_by_dashfloat": CUT_NOTE.format(n=len(content) - keep)},
                          ensure_ascii=False, separators=(",", ":"))
    return content[:keep] + "\n" + CUT_NOTE.format(n=len(content) - keep)


def apply_ops(messages: list[dict], ops: list) -> list[dict]:
    """A new list: `messages` with the compaction `ops` applied, in order. Pure; the same
    ops on the same conversation give the same result (the agent and a resume both use it).

      ["stub", [call ids]]                 those calls' outputs become stubs, and their long
                                           arguments (a written file's content) notes
      ["replace", head, tail, content]     messages[head:len-tail] become one user message
      ["cut", {key: chars}]                cut to about chars characters: a call's output (key:
                                           its id), its arguments ("args:" id), a message ("#" index)
    """
    out = [dict(m) for m in messages]
    for op in ops:
        kind = op[0]
        if kind == "stub":
            ids = set(op[1])
            calls = _calls_by_id(out)
            for m in out:
                if (m.get("role") == "tool" and m.get("tool_call_id") in ids and not is_stub(m.get("content"))
                        and len(str(m.get("content") or "")) > STUB_MIN):
                    m["content"] = stub(str(m.get("content") or ""), calls.get(m["tool_call_id"]))
                elif m.get("tool_calls"):
                    _with_args(m, ids, lambda args, _id: stub_args(args))
        elif kind == "replace":
            head, tail, content = int(op[1]), int(op[2]), op[3]
            head = min(head, len(out))
            tail = min(tail, len(out) - head)
            out = out[:head] + [{"role": "user", "content": content}] + (out[len(out) - tail:] if tail else [])
        elif kind == "cut":
            for key, chars in op[1].items():
                if key.startswith("args:"):
                    for m in out:
                        _with_args(m, {key[5:]}, lambda args, _id, n=int(chars): _cut_args(args, n))
                    continue
                for i, m in enumerate(out):
                    if (key.startswith("#") and key[1:] == str(i)) or (m.get("role") == "tool" and m.get("tool_call_id") == key):
                        if isinstance(m.get("content"), str):
                            m["content"] = cut_text(m["content"], int(chars), tool=m.get("role") == "tool")
                        break
    return out


# ---- units ------------------------------------------------------------------------------------


def units(messages: list[dict]) -> list[tuple[int, int]]:
    """[start, end) of each unit: an assistant message with tool calls and the tool messages
    after it are one unit (never split); every other message is its own."""
    out = []
    i, n = 0, len(messages)
    while i < n:
        j = i + 1
        if messages[i].get("role") == "assistant" and messages[i].get("tool_calls"):
            while j < n and messages[j].get("role") == "tool":
                j += 1
        out.append((i, j))
        i = j
    return out


def _is_marker(msg: dict) -> bool:
    """An earlier compaction's message (its summary, or the marker of what it dropped)."""
    content = msg.get("content")
    return isinstance(content, str) and content.startswith((SUMMARY_PREFIX, DROPPED_PREFIX))


def head_len(messages: list[dict]) -> int:
    """The pinned head: the conversation's first request."""
    return 1 if messages and messages[0].get("role") == "user" else 0


# ---- the summariser's request ---------------------------------------------------------------------

SUMMARISER_SYSTEM = (
    "You write the memory of a coding session between a user and an AI coding agent that has grown too "
    "long for the model's context window. The agent continues from your summary alone, so keep every fact "
    "it needs to go on: names, paths, numbers, commands, error messages, and anything the user asked to "
    "remember, exactly as written. Leave out pleasantries and what no longer matters."
)


def render(messages: list[dict], shown: int = RESULT_SHOWN) -> str:
    """The messages as a plain transcript for the summariser: tool outputs shortened."""
    calls = _calls_by_id(messages)
    parts = []
    for m in messages:
        role = m.get("role")
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        if role == "user":
            if content.startswith(SUMMARY_PREFIX):
                parts.append("EARLIER SUMMARY (merge it into yours):\n" + content.split("\n\n", 1)[-1])
            else:
                parts.append("USER:\n" + content)
        elif role == "assistant":
            if content:
                parts.append("ASSISTANT:\n" + content)
            for c in m.get("tool_calls") or ():
                parts.append("ASSISTANT CALLED: " + _call_text(c))
        elif role == "tool":
            name = ((calls.get(m.get("tool_call_id")) or {}).get("function") or {}).get("name") or "tool"
            body = content if len(content) <= shown else content[:shown] + f" …[{len(content) - shown:,} more characters]"
            parts.append(f"RESULT of {name}: {body}")
    return "\n\n".join(parts)


def summary_request(messages: list[dict], *, words: int, budget_chars: int, focus: str = "") -> list[dict]:
    """The summariser's messages (no tools): the transcript of `messages`, bounded by
    `budget_chars` (tool outputs shown shorter, then the middle left out), and the fixed
    structure."""
    text = ""
    for shown in (RESULT_SHOWN, 500, 150):
        text = render(messages, shown)
        if len(text) <= budget_chars:
            break
    if len(text) > budget_chars:
        keep = max(1000, budget_chars // 2)
        text = text[:keep] + f"\n\n[… {len(text) - 2 * keep:,} characters of the transcript left out …]\n\n" + text[-keep:]
    headings = "\n".join(f"## {h}" for h in SUMMARY_HEADINGS)
    ask = (f"<transcript>\n{text}\n</transcript>\n\nSummarise the transcript above for the agent that continues "
           f"the session. Use exactly these Markdown headings, in this order (write \"none\" under a heading with "
           f"nothing to say):\n\n{headings}\n\nMerge an earlier summary into yours: drop nothing it says that "
           f"still holds. Keep exact names, paths, numbers and error messages. At most {words} words. Write only "
           "the summary.")
    if focus:
        ask += f"\n\nThe user asks you to pay special attention to: {focus}"
    return [{"role": "system", "content": SUMMARISER_SYSTEM}, {"role": "user", "content": ask}]


def summary_message(summary: str, what: str) -> str:
    return f"{SUMMARY_PREFIX} Summary of {what}:]\n\n{summary.strip()}"


def dropped_message(what: str, why: str, kept: list[str]) -> str:
    text = (f"{DROPPED_PREFIX} {what[:1].upper() + what[1:]} were removed without a summary ({why}): what they "
            "said is lost. Ask the user if you need something from them.]")
    for earlier in kept:  # earlier summaries among them are kept
        text += "\n\n" + earlier
    return text


def describe(messages: list[dict]) -> str:
    """"23 earlier messages (4 prompts, 9 tool calls)": what a range of messages holds."""
    requests = sum(1 for m in messages if m.get("role") == "user"
                   and not str(m.get("content") or "").startswith((SUMMARY_PREFIX, DROPPED_PREFIX)))
    calls = sum(len(m.get("tool_calls") or ()) for m in messages)
    summaries = sum(1 for m in messages if str(m.get("content") or "").startswith(SUMMARY_PREFIX))
    bits = [f"{requests} prompt{'s' if requests != 1 else ''}", f"{calls} tool call{'s' if calls != 1 else ''}"]
    if summaries:
        bits.append(f"{summaries} earlier summar{'ies' if summaries != 1 else 'y'}")
    return f"{len(messages)} earlier message{'s' if len(messages) != 1 else ''} ({', '.join(bits)})"


# ---- the manager --------------------------------------------------------------------------------


@dataclass
class Plan:
    """A compaction under way: stage 1 done (`ops`, `messages`), stage 2 prepared."""

    reason: str  # "auto", "/compact", "overflow"
    before: int  # tokens of the request before
    ops: list = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)  # after `ops`
    stubbed: int = 0
    head: int = 0
    tail: int = 0  # the summary replaces messages[head:len-tail]
    middle: list[dict] = field(default_factory=list)
    request: list[dict] | None = None  # the summariser's messages; None: no summary needed/possible
    after: int = 0  # tokens after stage 1


@dataclass
class Outcome:
    """A finished compaction: the ops to journal and apply, the figures and the entry."""

    ops: list
    messages: list[dict]
    before: int
    after: int
    how: str  # "stubs", "summary", "dropped", "cut" (the last step that ran)
    text: str  # the entry: "context compacted: 31.2k → 8.9k tokens (...)"
    failed: str = ""  # why the compaction counts as failed ("" if it did not)
    fits: bool = True  # the request fits the window now
    summarised: int = 0
    dropped: int = 0
    stubbed: int = 0
    cut: int = 0


class ContextManager:
    """The window, the calibrated estimate, the failure count, and compaction planning."""

    def __init__(self, window: int | None = None, threshold: float = DEFAULT_THRESHOLD, *, source: str = ""):
        self.window = window or DEFAULT_WINDOW
        self.source = source or ("configuration" if window else "default")
        self.threshold = threshold
        self.ratio = 1.0  # provider-reported prompt tokens / raw estimate, of the last request
        self.failures = 0  # failed compactions in a row
        self.system: dict | None = None  # the system message of every request

    # -- the window
    def set_window(self, tokens: int, source: str) -> None:
        self.window = int(tokens)
        self.source = source

    @property
    def limit(self) -> int:
        """Compact when the next request's estimate passes this."""
        return int(self.window * self.threshold)

    @property
    def hard(self) -> int:
        """The most a request may take, leaving room for the answer."""
        return self.window - min(4096, self.window // 8)

    # -- the estimate
    def request(self, messages: list[dict]) -> list[dict]:
        """The messages of a request: the system message, then the conversation (copies)."""
        out = [dict(self.system)] if self.system else []
        return out + [dict(m) for m in messages]

    def raw(self, messages: list[dict], tools=None) -> int:
        """The raw estimate of the request made of `messages` (system message included)."""
        extra = message_tokens(self.system) if self.system else 0
        return int(estimate_tokens(messages, tools) + extra)

    def estimate(self, messages: list[dict], tools=None) -> int:
        """The calibrated estimate of the request made of `messages` (system message included)."""
        return self.calibrated_of(self.raw(messages, tools))

    def calibrated_of(self, raw: int) -> int:
        """The calibrated estimate of a request whose raw estimate is `raw`."""
        return int(raw * self.ratio)

    def observe(self, raw: int | None, usage: dict | None) -> None:
        """Calibrate with the provider's count: `raw` was the raw estimate of the request that
        `usage` (prompt_tokens) answers. Bounded (0.5x to 2.5x), so one odd figure (a server
        that counts only what was not cached) cannot make the estimate absurd."""
        if not raw or not isinstance(usage, dict):
            return
        prompt = usage.get("prompt_tokens")
        if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt <= 0 or raw < 50:
            return
        self.ratio = min(2.5, max(0.5, prompt / raw))

    # -- compaction
    def _recent_start(self, messages: list[dict], us: list[tuple[int, int]], tools) -> int:
        """Where the most recent units kept verbatim start (at least the last unit)."""
        budget = self.window * RECENT_SHARE / self.ratio
        total = 0.0
        start = us[-1][0] if us else len(messages)
        for a, b in reversed(us):
            total += sum(message_tokens(m) for m in messages[a:b])
            if total > budget and a < start:
                break
            start = a
        # whole turns where there are some: from the first request in that part
        first = next((i for i in range(start, len(messages)) if messages[i].get("role") == "user"), None)
        return start if first is None else first

    @property
    def target(self) -> int:
        """Where free stubbing stops: well under the limit, so the next compaction is not one
        turn away (and a provider's prompt cache is not broken turn after turn)."""
        return int(self.window * max(self.threshold - 0.2, self.threshold / 2))

    def plan(self, messages: list[dict], tools=None, *, reason: str = "auto", focus: str = "") -> Plan:
        """Stage 1 (stubs, oldest first, down to `target`) applied; stage 2 (the summary
        request) prepared when the stubs could not get there (a compaction that leaves the
        request just under the limit would come back at the next message), always on /compact
        and after a refusal (`reason` "/compact", "overflow")."""
        force = reason in ("/compact", "overflow")
        p = Plan(reason=reason, before=self.estimate(messages, tools))
        us = units(messages)
        head = head_len(messages)
        recent = max(head, self._recent_start(messages, us, tools))
        if reason == "/compact":  # on demand: everything but the latest turn
            recent = max(head, next((i for i in range(len(messages) - 1, -1, -1)
                                     if messages[i].get("role") == "user"), recent))
        # stubs: oldest first, never in the last unit (the model has not read those results)
        est = p.before
        calls = _calls_by_id(messages)
        outputs = {m["tool_call_id"]: m["content"] for m in messages
                   if m.get("role") == "tool" and m.get("tool_call_id") and isinstance(m.get("content"), str)}
        ids = []
        for m in messages[head:us[-1][0] if us else head]:
            for c in m.get("tool_calls") or ():
                if est <= self.target and not force:
                    break
                cid = c.get("id") if isinstance(c, dict) else None
                if not cid:
                    continue
                saving = 0.0
                content = outputs.get(cid)
                if content is not None and len(content) > STUB_MIN and not is_stub(content):
                    saving += text_tokens(content) - text_tokens(stub(content, calls.get(cid)))
                args = str((c.get("function") or {}).get("arguments") or "")
                shorter = stub_args(args) if len(args) > STUB_MIN else None
                if shorter is not None:
                    saving += text_tokens(args) - text_tokens(shorter)
                if saving > 0:
                    est -= int(saving * self.ratio)
                    ids.append(cid)
        if ids:
            p.ops.append(["stub", ids])
            p.stubbed = len(ids)
        p.messages = apply_ops(messages, p.ops)
        p.after = self.estimate(p.messages, tools)
        if p.after <= self.target and not force:
            return p  # the stubs made room enough
        # stage 2: summarise messages[head:recent] (as they were: the summariser reads the
        # outputs themselves, shortened, not their stubs)
        p.head, p.tail = head, len(p.messages) - recent
        p.middle = p.messages[head:recent]
        if all(_is_marker(m) for m in p.middle):
            p.middle = []  # nothing but an earlier compaction's message: summarising it again gains nothing
        if not p.middle:
            return p
        words = int(min(SUMMARY_MAX, max(SUMMARY_MIN, self.window * 0.1)) * 0.7)
        # what the summariser reads must fit its own request, with room for the summary
        budget_tokens = max(1000, self.hard - SUMMARY_MAX - 600)
        p.request = summary_request(messages[head:recent], words=words, budget_chars=int(budget_tokens * 3 / self.ratio),
                                    focus=focus)
        return p

    def finish(self, p: Plan, summary: str | None, why: str = "", tools=None) -> Outcome:
        """The compaction's end: the summary applied (or the fallback when `summary` is None or
        rejected: `why`), then cuts until the request fits. Never raises."""
        ops = list(p.ops)
        msgs = p.messages
        how = "stubs" if p.stubbed else "none"
        failed = ""
        summarised = dropped = 0
        if p.middle and (p.request is not None):
            what = describe(p.middle)
            text = None
            if summary is not None:
                summary = summary.strip()
                candidate = summary_message(summary, what)
                replaced = sum(message_tokens(m) for m in p.middle)
                if not summary:
                    why = "the summary was empty"
                elif message_tokens({"role": "user", "content": candidate}) >= replaced:
                    why = (f"the summary ({short(int(message_tokens({'role': 'user', 'content': candidate}) * self.ratio))}"
                           f" tokens) was not smaller than what it replaces ({short(int(replaced * self.ratio))})")
                else:
                    text = candidate
            if text is not None:
                how = "summary"
                summarised = len(p.middle)
            else:
                kept = [m["content"].split("\n\n", 1)[-1] for m in p.middle
                        if str(m.get("content") or "").startswith(SUMMARY_PREFIX)]
                kept = [k for k in kept if k]
                text = dropped_message(what, why or "the summary request failed", kept[-1:])
                how = "dropped"
                dropped = len(p.middle)
                failed = why or "the summary request failed"
            op = ["replace", p.head, p.tail, text]
            ops.append(op)
            msgs = apply_ops(msgs, [op])
        # last: cut until it fits under the limit (the hard bound at worst)
        cuts, msgs = self._fit(msgs, tools)
        if cuts:
            ops.append(["cut", cuts])
            how = "cut" if how in ("none", "stubs") else how
        after = self.estimate(msgs, tools)
        fits = after <= self.hard
        if not fits:
            failed = failed or f"even cut down, the request needs {short(after)} tokens of a {short(self.window)} window"
        elif after > self.limit and not failed and p.reason != "/compact":
            failed = f"the request still needs {short(after)} tokens, over the {short(self.limit)} threshold"
        done = []
        if summarised:
            done.append(f"summarised {describe(p.middle)}")
        if p.stubbed:
            done.append(f"{p.stubbed} old tool output{'s' if p.stubbed != 1 else ''} replaced by stubs")
        if dropped:
            done.append(f"dropped {describe(p.middle)} without a summary: {failed}")
        if cuts:
            done.append(f"cut {len(cuts)} long message{'s' if len(cuts) != 1 else ''} to fit")
        if not dropped:
            done.append("dropped nothing")
        text = f"context compacted: {short(p.before)} → {short(after)} tokens ({'; '.join(done)})"
        return Outcome(ops=ops, messages=msgs, before=p.before, after=after, how=how, text=text, failed=failed,
                       fits=fits, summarised=summarised, dropped=dropped, stubbed=p.stubbed, cut=len(cuts))

    def _fit(self, messages: list[dict], tools) -> tuple[dict, list[dict]]:
        """Cut the longest messages (tool outputs first, then any) until the estimate is under
        the limit; {key: chars} of the cuts and the messages after them."""
        cuts: dict[str, int] = {}
        msgs = messages
        for tools_only in (True, False):
            for _ in range(200):
                if self.estimate(msgs, tools) <= self.limit:
                    return cuts, msgs
                best, best_len = None, 0
                for key, text in _cuttable(msgs, tools_only):
                    if len(text) > best_len and len(text) > CUT_MIN * 2 and cuts.get(key, 1 << 60) > CUT_MIN:
                        best, best_len = key, len(text)
                if best is None:
                    break
                over = (self.estimate(msgs, tools) - self.limit) * CHARS_PER_TOKEN / self.ratio
                keep = max(CUT_MIN, int(best_len - over - 200))
                cuts[best] = min(keep, cuts.get(best, 1 << 60) - 1)
                msgs = apply_ops(messages, [["cut", dict(cuts)]])
        return cuts, msgs


def _cuttable(messages: list[dict], tools_only: bool):
    """(key, text) of what `_fit` may cut: tool outputs and calls' arguments (the first pass),
    then any message's content."""
    for i, m in enumerate(messages):
        c = m.get("content")
        for call in m.get("tool_calls") or ():
            if tools_only and isinstance(call, dict) and call.get("id"):
                yield "args:" + call["id"], str((call.get("function") or {}).get("arguments") or "")
        if not isinstance(c, str):
            continue
        if m.get("role") == "tool" and m.get("tool_call_id"):
            if tools_only:
                yield m["tool_call_id"], c
        elif not tools_only:
            yield f"#{i}", c


# ---- the window the endpoint reports ------------------------------------------------------------

_WINDOW_KEYS = ("context_window", "context_length", "max_context_length", "max_model_len", "max_input_tokens",
                "context_size", "n_ctx", "max_sequence_length")


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 256 <= v <= 100_000_000 else None


def window_of(entry) -> int | None:
    """The context window a model list entry states, if any. Pure.

    vLLM `max_model_len`; OpenRouter, Together `context_length` (and `top_provider.context_length`);
    Groq `context_window`; Mistral `max_context_length`; LM Studio's own API `loaded_context_length`
    (the loaded instance), `loaded_instances[].config.context_length`, `max_context_length`;
    llama.cpp `meta.n_ctx` where a build reports it, else `meta.n_ctx_train` (the model's, which
    the server's -c may lower: a refused request then tells the real figure); LiteLLM
    `model_info.max_input_tokens`."""
    if not isinstance(entry, dict):
        return None
    loaded = _int(entry.get("loaded_context_length"))
    if loaded:
        return loaded
    for inst in entry.get("loaded_instances") or ():
        if isinstance(inst, dict) and isinstance(inst.get("config"), dict):
            found = _int(inst["config"].get("context_length"))
            if found:
                return found
    for key in _WINDOW_KEYS:
        found = _int(entry.get(key))
        if found:
            return found
    for sub in ("meta", "top_provider", "model_info", "details"):
        inner = entry.get(sub)
        if isinstance(inner, dict):
            for key in ("n_ctx", *_WINDOW_KEYS, "n_ctx_train"):
                found = _int(inner.get(key))
                if found:
                    return found
    return None


def windows_of(obj) -> dict[str, int]:
    """{model id: window} for every entry of a /models answer that states one. Pure."""
    items = obj.get("data") if isinstance(obj, dict) else obj
    if isinstance(obj, dict) and not isinstance(items, list):
        items = obj.get("models")
    out = {}
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict):
            name = next((item[k] for k in ("id", "key", "name", "model") if isinstance(item.get(k), str) and item[k]), None)
            found = window_of(item)
            if name and found:
                out[name] = found
    return out


_OVERFLOW_WINDOW = re.compile(
    r"(?:maximum context length is|context length of only|context window of|maximum model length of"
    r"|context size \(|context length \(|maximum context length \(|max context size \()\s*(\d[\d,]*)",
    re.IGNORECASE,
)


def window_from_error(text: str) -> int | None:
    """The window a context-overflow error names ("This model's maximum context length is 8192
    tokens", llama.cpp's "exceeds the available context size (4096 tokens)"), or None. Pure."""
    m = _OVERFLOW_WINDOW.search(text or "")
    return _int(int(m.group(1).replace(",", ""))) if m else None


_OVERFLOW_COUNT = re.compile(
    r"\((\d[\d,]*) in the messages|resulted in (\d[\d,]*) tokens|request \((\d[\d,]*) tokens\)"
    r"|input length (?:\()?(\d[\d,]*)|requested tokens \((\d[\d,]*)\)|prompt is too long: (\d[\d,]*) tokens",
    re.IGNORECASE,
)


def count_from_error(text: str) -> int | None:
    """The prompt tokens a context-overflow error counted ("your messages resulted in 9412
    tokens", vLLM's "(9000 in the messages, ...)", llama.cpp's "request (9000 tokens)"), or
    None: the provider's own count, to calibrate the estimate with. Pure."""
    m = _OVERFLOW_COUNT.search(text or "")
    if not m:
        return None
    return _int(int(next(g for g in m.groups() if g).replace(",", "")))
