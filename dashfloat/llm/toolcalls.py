"""Pure accumulator for streamed OpenAI-style tool calls (ADR 0007 section 1).

Why it exists: an OpenAI-compatible stream delivers each tool call as fragments in
`choices[0].delta.tool_calls` — the first fragment of an index carries id, type,
function.name and the start of function.arguments; later ones carry the index and more
argument text. Real providers bend that contract in many ways, so this module accepts
all of them and never raises on malformed input (a bad delta is ignored; a bad call
becomes an error *result* that goes back to the model, never a crash):

* merge by integer `index`: id and name are set once (first non-empty value wins — a
  later fragment that repeats, empties or CHANGES them is ignored; names are never
  concatenated), argument strings are appended;
* `index` omitted (Mistral, Gemini): a fragment with a new non-empty id starts a new call,
  as does the very first fragment; a fragment with neither index nor id continues the
  last call touched; a fragment whose id is already known continues that call;
* REFINEMENT of the "new id = new call" rule: an index-less fragment with an unseen id but
  no name continues the last call (a call cannot start without a name, so this is a
  provider that changes the id on every fragment; a new call would be an error anyway);
* a fragment carrying nothing usable (no id, name or arguments — e.g. a metadata-only
  delta) never creates a call;
* `arguments` may be missing or "" (a call without parameters -> args {}), or already a
  JSON object instead of a string (some servers) — accepted as is;
* calls come out in index order (index-less calls in arrival order), each with a unique
  id: a call without a usable id, or whose id repeats an earlier call's, gets
  "call_df_<n>" — deterministic for the same input, and never equal to a provider id.

Memory is bounded by the caller (the agent aborts the stream), using `count()` — distinct
calls — and `size()` — UTF-8 bytes of every id, name and argument fragment received,
counted per fragment even when ignored (conservative headroom, ADR 0007 section 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~2 ms before the first request)
if TYPE_CHECKING:
    from typing import Any

_SYNTHETIC_PREFIX = "call_df_"
_REASON_MAX = 80  # keep error reasons short: they go back to the model verbatim


@dataclass(eq=False)
class _Call:
    """One call being assembled."""

    key: tuple[
        int, int
    ]  # sort key: (index or position after the indexed ones, arrival)
    id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)  # argument string fragments
    obj: dict | None = None  # arguments sent as an already-decoded object


@dataclass(eq=False)
class Acc:
    """Accumulator state; create with `new()`, treat as opaque."""

    calls: list[_Call] = field(default_factory=list)  # in creation order
    by_index: dict[int, _Call] = field(default_factory=dict)
    by_id: dict[str, _Call] = field(default_factory=dict)
    last: _Call | None = None  # the call the latest fragment went to
    max_index: int | None = None
    nbytes: int = 0


def new() -> Acc:
    """A fresh, empty accumulator for one stream episode."""
    return Acc()


def count(acc: Acc) -> int:
    """Distinct calls so far (a call split into many fragments counts once)."""
    return len(acc.calls)


def size(acc: Acc) -> int:
    """UTF-8 bytes of all ids, names and argument fragments received so far."""
    return acc.nbytes


def feed(acc: Acc, deltas: Any) -> Acc:
    """Merge one chunk's `tool_calls` list into `acc` (mutates and returns it).

    Anything that is not a list of dicts, and any field of the wrong type, is ignored.
    """
    if not isinstance(deltas, (list, tuple)):
        return acc
    for delta in deltas:
        if isinstance(delta, dict):
            _feed_one(acc, delta)
    return acc


def finish(acc: Acc) -> list[dict]:
    """The assembled calls in index order: `{"id", "name", "args", "error"}` each.

    `args` is a dict, or None when the arguments are not a JSON object; `error` is None
    or a short reason meant for the model (missing name, unparseable arguments).
    """
    ordered = sorted(acc.calls, key=lambda c: c.key)
    provider_ids = {c.id for c in ordered if c.id is not None}
    used: set[str] = set()
    synthetic = 0
    out = []
    for call in ordered:
        call_id = call.id
        if call_id is None or call_id in used:
            synthetic += 1
            call_id = f"{_SYNTHETIC_PREFIX}{synthetic}"
            while call_id in provider_ids or call_id in used:
                synthetic += 1
                call_id = f"{_SYNTHETIC_PREFIX}{synthetic}"
        used.add(call_id)
        args, args_error = _parse_args(call)
        errors = [] if call.name else ["tool call has no function name"]
        if args_error:
            errors.append(args_error)
        out.append(
            {
                "id": call_id,
                "name": call.name or "",
                "args": args,
                "error": "; ".join(errors) or None,
            }
        )
    return out


# -- internals -----------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    """Byte length that cannot raise, even on lone surrogates decoded from JSON."""
    return len(text.encode("utf-8", "surrogatepass"))


def _feed_one(acc: Acc, delta: dict) -> None:
    """Route one fragment to its call (creating it if needed) and merge its fields."""
    index = delta.get("index")
    if isinstance(index, bool) or not isinstance(index, int):
        index = None  # null, "0", 0.0 ... : treat as omitted rather than guess
    raw_id = delta.get("id")
    fn = delta.get("function")
    if not isinstance(fn, dict):
        fn = {}
    raw_name = fn.get("name")
    raw_args = fn.get("arguments")

    args_text = raw_args if isinstance(raw_args, str) else None
    args_obj = raw_args if isinstance(raw_args, dict) else None
    for text in (raw_id, raw_name, args_text):
        if isinstance(text, str):
            acc.nbytes += _utf8_len(text)
    if args_obj is not None:
        try:
            acc.nbytes += _utf8_len(json.dumps(args_obj))
        except (TypeError, ValueError, RecursionError):
            args_obj = None  # not JSON-representable: cannot be sent back, ignore

    call_id = raw_id if isinstance(raw_id, str) and raw_id else None
    name = raw_name if isinstance(raw_name, str) and raw_name else None
    usable = bool(call_id or name or args_text or args_obj is not None)

    call = _route(acc, index, call_id, name, usable)
    if call is None:
        return
    if call_id is not None:
        if call.id is None:
            call.id = call_id
        acc.by_id.setdefault(call_id, call)
    if call.name is None and name is not None:
        call.name = name
    if args_text:
        call.parts.append(args_text)
    if args_obj is not None:
        call.obj = args_obj
    acc.last = call


def _route(
    acc: Acc, index: int | None, call_id: str | None, name: str | None, usable: bool
) -> _Call | None:
    """Which call a fragment belongs to (None: nothing to do)."""
    if index is not None:
        call = acc.by_index.get(index)
        if call is None and usable:
            call = _create(acc, (index, len(acc.calls)))
            acc.by_index[index] = call
            acc.max_index = (
                index if acc.max_index is None else max(acc.max_index, index)
            )
        return call
    if call_id is not None:
        known = acc.by_id.get(call_id)
        if known is not None:
            return known
        if acc.last is not None and name is None:
            return acc.last  # id changed on a continuation fragment
    elif acc.last is not None:
        return acc.last
    if not usable:
        return None
    after = 0 if acc.max_index is None else acc.max_index + 1
    return _create(acc, (after, len(acc.calls)))


def _create(acc: Acc, key: tuple[int, int]) -> _Call:
    """Register a new call."""
    call = _Call(key=key)
    acc.calls.append(call)
    return call


_JSON_TYPE = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _parse_args(call: _Call) -> tuple[dict | None, str | None]:
    """Decode the accumulated arguments into an object, or explain why not."""
    text = "".join(call.parts)
    if call.obj is not None:
        if text.strip():
            return None, "arguments mixed a JSON object with string fragments"
        return call.obj, None
    if not text.strip():
        return {}, None  # a call without parameters
    nbytes = _utf8_len(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg}: char {exc.pos}"
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        reason = str(exc)[:_REASON_MAX]
    else:
        if isinstance(value, dict):
            return value, None
        kind = _JSON_TYPE.get(type(value), type(value).__name__)
        return None, f"arguments are not a JSON object: got {kind} ({nbytes} bytes)"
    return None, f"arguments are not valid JSON: {reason} ({nbytes} bytes)"
