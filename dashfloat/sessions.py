"""Finding, listing and loading sessions (the journals that dashfloat/journal.py writes).

Sessions live under `$XDG_STATE_HOME/dashfloat/sessions/<key>/<id>.jsonl`, where `<key>` is
the working directory's name plus a hash of its real path (so a directory reached through a
link finds the same sessions, and two directories of one name do not mix); the header names
the real path, and that is what decides. `<id>.store/` beside a journal holds its side files.

Listing reads only each file's header line and its last few KiB (`read_info`), so it costs
the same for a short session as for a 100 MB one. Loading (`load`) streams the file once,
line by line: it rebuilds the conversation exactly, keeps the screen's messages of the last
turns only (a bounded tail: UI_TAIL_TURNS turns, UI_TAIL_BYTES of journal), and notes what
it skipped (a line cut off by a kill, a NUL-filled tail after a crash) without losing the
rest. Pure reading: nothing here writes.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dashfloat import messages as M
from dashfloat.context import apply_ops
from dashfloat.journal import (  # noqa: F401 (where sessions live: their API here too)
    FORMAT,
    Store,
    internalize,
    new_id,
    project_dir,
    project_key,
    sessions_dir,
)

HEAD_MAX = 64 * 1024  # the header line is read up to this
TAIL_READ = 8 * 1024  # listing reads this much of a file's end (then up to TAIL_MAX)
TAIL_MAX = 256 * 1024
UI_TAIL_TURNS = 100  # a resumed session shows at most this many of its last turns
UI_TAIL_BYTES = 4 * 1024 * 1024  # ... and at most this much journal of them
ID_SHOWN = 8  # hex digits of an id a listing shows (more when that is not unique)
INTERRUPTED_RUNNING = ("DashFloat stopped while this call was running (it was killed, crashed or lost its "
                       "terminal): whether it finished, and what it changed, is unknown; check before "
                       "repeating it")
INTERRUPTED_WAITING = "DashFloat stopped before this call ran: it did not run"


class SessionError(Exception):
    """A session that cannot be found or used; str() says why and what to do."""


# ---- where: in dashfloat/journal.py (a new session's journal needs them, not this module) --


# ---- listing ----------------------------------------------------------------------------


@dataclass
class Info:
    id: str
    path: Path
    cwd: str
    start: float
    last: float  # the file's modification time: the last event
    title: str = ""
    turns: int | None = None
    tokens: int | None = None
    tokens_estimated: bool = False  # DashFloat's estimate: the provider sent no usage
    model: str = ""


def read_header(f) -> dict | None:
    line = f.readline(HEAD_MAX)
    try:
        head = json.loads(line)
    except ValueError:
        return None
    if not isinstance(head, dict) or head.get("type") != "session" or not isinstance(head.get("format"), int):
        return None
    return head


def read_info(path: Path) -> Info | None:
    """A session's listing from its header and its tail; None if it is not a session."""
    try:
        with open(path, "rb") as f:
            head = read_header(f)
            if head is None:
                return None
            st = os.fstat(f.fileno())
            turns, tokens, estimated = _tail_figures(f, st.st_size)
    except OSError:
        return None
    return Info(id=str(head.get("id") or path.stem), path=path, cwd=str(head.get("cwd") or ""),
                start=float(head.get("time") or 0), last=st.st_mtime, title=str(head.get("title") or ""),
                turns=turns, tokens=tokens, tokens_estimated=estimated, model=str(head.get("model") or ""))


def _tail_figures(f, size: int) -> tuple[int | None, int | None, bool]:
    """(turns, tokens, whether the tokens are an estimate) from the last events that carry
    them, reading the end of the file."""
    turns = tokens = None
    estimated = False
    want = TAIL_READ
    while True:
        start = max(0, size - want)
        f.seek(start)
        lines = f.read(size - start).split(b"\n")
        if start > 0:
            lines = lines[1:]  # cut in the middle
        for raw in reversed(lines):
            if turns is not None and tokens is not None:
                break
            if b'"turn"' not in raw and b'"tokens"' not in raw:
                continue
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if turns is None and isinstance(ev.get("turn"), int):
                turns = ev["turn"]
            if tokens is None and isinstance(ev.get("tokens"), int):
                tokens, estimated = ev["tokens"], ev.get("tokens_estimated") is True
        if (turns is not None and tokens is not None) or start == 0 or want >= TAIL_MAX:
            return turns, tokens, estimated
        want = min(TAIL_MAX, want * 4)


def _journals(directory: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(directory) if e.name.endswith(".jsonl") and e.is_file()]
    except OSError:
        return []


def _project_dirs(environ: Mapping[str, str]) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(sessions_dir(environ)) if e.is_dir()]
    except OSError:
        return []


def list_sessions(environ: Mapping[str, str], real_cwd: str | None = None) -> list[Info]:
    """The sessions of one working directory (None: of every directory), newest activity first."""
    dirs = [project_dir(environ, real_cwd)] if real_cwd is not None else _project_dirs(environ)
    out = []
    for directory in dirs:
        for path in _journals(directory):
            info = read_info(path)
            if info is not None and (real_cwd is None or info.cwd == real_cwd):
                out.append(info)
    out.sort(key=lambda i: i.last, reverse=True)
    return out


def latest(environ: Mapping[str, str], real_cwd: str) -> Info | None:
    """The session of this working directory with the most recent activity."""
    paths = sorted(_journals(project_dir(environ, real_cwd)), key=_mtime, reverse=True)
    for path in paths:
        info = read_info(path)
        if info is not None and info.cwd == real_cwd:
            return info
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def find(environ: Mapping[str, str], prefix: str) -> Info:
    """The one session whose id starts with `prefix`, in any directory."""
    prefix = prefix.strip().lower()
    if not prefix or not re.fullmatch(r"[0-9a-f]+", prefix):
        raise SessionError(f"--resume takes a session id (hex digits, a unique prefix is enough), not {prefix!r}; "
                           "`dashfloat sessions --all` lists them")
    found = [p for d in _project_dirs(environ) for p in _journals(d) if p.stem.startswith(prefix)]
    infos = [i for i in (read_info(p) for p in found) if i is not None]
    if not infos:
        raise SessionError(f"no session id starts with {prefix}; `dashfloat sessions --all` lists them")
    if len(infos) > 1:
        shown = ", ".join(sorted(i.id for i in infos)[:5]) + (", ..." if len(infos) > 5 else "")
        raise SessionError(f"{len(infos)} sessions start with {prefix} ({shown}): give more of the id")
    return infos[0]


def shown_ids(infos: list[Info]) -> dict[str, str]:
    """The shortest prefix of each id (at least ID_SHOWN digits) that no other listed id has."""
    ids = [i.id for i in infos]
    out = {}
    for sid in ids:
        n = ID_SHOWN
        while n < len(sid) and any(o != sid and o.startswith(sid[:n]) for o in ids):
            n += 1
        out[sid] = sid[:n]
    return out


def _tokens_cell(info: Info) -> str:
    """The TOKENS column: "-" when nothing counted them, "~N" when DashFloat estimated them."""
    if info.tokens is None:
        return "-"
    return f"~{info.tokens}" if info.tokens_estimated else str(info.tokens)


def format_listing(infos: list[Info], *, with_dirs: bool, now: float | None = None) -> str:
    from dashfloat.textsafe import visible

    ids = shown_ids(infos)
    rows = [("ID", "STARTED", "LAST ACTIVITY", "TURNS", "TOKENS", "FIRST PROMPT" + ("  (DIRECTORY)" if with_dirs else ""))]
    for i in infos:
        title = visible(i.title.split("\n", 1)[0]) or "-"
        if with_dirs:
            title += f"  ({visible(i.cwd)})"
        rows.append((ids[i.id], _when(i.start), _when(i.last), "?" if i.turns is None else str(i.turns),
                     _tokens_cell(i), title))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]),
                 r[3].rjust(widths[3]), r[4].rjust(widths[4]), r[5]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "?"


# ---- loading ----------------------------------------------------------------------------


@dataclass
class Loaded:
    """What a session's journal says, for resuming it."""

    header: dict
    path: Path
    conversation: list[dict] = field(default_factory=list)
    tail: list[dict] = field(default_factory=list)  # the events the screen shows again, in order
    hidden_turns: int = 0  # turns before the tail
    notes: list[str] = field(default_factory=list)  # what was skipped, for the screen
    next_seq: int = 1
    turns: int = 0
    tokens: int | None = None
    tokens_estimated: bool = False
    model: str | None = None
    open_turn: bool = False  # the last turn never ended (DashFloat was killed in it)
    open_calls: list[dict] = field(default_factory=list)  # {id, name, started} without a result
    pending_confirm: str | None = None  # a call whose question was on screen
    model_notes: list[str] = field(default_factory=list)  # to tell the model with the next prompt
    changes: list[dict] = field(default_factory=list)  # file changes, for /undo
    outcomes: dict[str, bool] = field(default_factory=dict)  # call id -> its result was ok
    undone: set[int] = field(default_factory=set)
    size: int = 0
    lines: int = 0
    meter: dict = field(default_factory=dict)  # the requests' usage summed (metering.Totals.as_dict)


def _result_ok(content: str) -> bool:
    if content.startswith('{"ok":true'):
        return True
    if content.startswith('{"ok":false'):
        return False
    try:
        return bool(json.loads(content).get("ok"))
    except (ValueError, AttributeError):
        return False


# Events a resume does not need (the audit trail and the ends of runs), and the kinds of ui
# event it looks at as they come (the others, and reasoning, are parsed only if they are in
# the tail): a journal loads in about the time json needs for the conversation alone.
_NOT_NEEDED = frozenset(("decision", "audit", "cancel", "note", "end", "budget"))
_UI_LOOKED_AT = frozenset((M.MODEL, M.CONFIRM, M.DECIDED))


def _seq(line: str) -> int | None:
    if line.startswith('{"seq":'):
        try:
            return int(line[7:line.index(",", 7)])
        except ValueError:
            return None
    return None


def _parse_result(line: str, scan) -> dict | None:
    """A result line written with its content raw (journal.Journal.result): the content is
    sliced out by its length, only the short head is parsed. None if the line is damaged."""
    c = line.find('"clen":', 20, 120)
    try:
        clen = int(line[c + 7:line.index(",", c)])
    except ValueError:
        return None
    cut = len(line) - 2 - clen
    if not line.endswith("}\n") or line[cut - 11:cut] != ',"content":' or line[cut] != "{":
        return None
    ev, _end = scan(line[:cut - 11] + "}", 0)
    ev["content"] = line[cut:-2]
    return ev


# a ui line: {"seq":1,"time":2,"type":"ui","m":["KIND",... (journal.Journal.ui): KIND is 18
# characters after the start of '"type":"'
def load(path: Path, *, tail_turns: int = UI_TAIL_TURNS, tail_bytes: int = UI_TAIL_BYTES) -> Loaded:
    """Stream a journal once: the conversation, the screen's tail, the state of the last turn.

    Only the events that rebuild the conversation are parsed as they come (a result's content
    is sliced, not parsed); the screen's events are kept as text and parsed only if they end
    up in the tail. Raises SessionError when the file cannot be read or is not a journal."""
    path = Path(path)
    store = Store(path.with_name(path.stem + ".store"), 0)
    missing_blobs: list[str] = []

    def missing(digest: str) -> str:
        missing_blobs.append(digest)
        return f"[DashFloat: this text was kept apart from the journal, as {digest[:12]}..., and that file is gone]"

    damaged: list[tuple[int, str]] = []
    groups: deque[list] = deque()  # [journal bytes, events, is a turn]: one per turn, oldest first
    group: list = [0, [], False]  # what came before the first prompt
    groups.append(group)
    turns_held = 0
    held = 0  # journal bytes in `groups`
    calls: dict[str, dict] = {}
    changed_ids: set = set()
    last_good = ""
    decoder = json.JSONDecoder()
    decode, scan = decoder.decode, decoder.scan_once  # scan: the C scanner, without decode's checks
    not_needed, looked_at = _NOT_NEEDED, _UI_LOOKED_AT
    try:
        f = open(path, encoding="utf-8", errors="surrogateescape", newline="\n")
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror or exc}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = read_header(f)
        if head is None:
            raise SessionError(f"{path} is not a DashFloat session journal (its first line is not a header)")
        if head.get("format", 0) > FORMAT:
            raise SessionError(f"{path} was written by a newer DashFloat (format {head['format']}); "
                               "update DashFloat to resume it")
        out = Loaded(header=head, path=path, size=size)
        conv = out.conversation
        append = conv.append
        lineno = 1
        for line in f:
            lineno += 1
            at = line.find('"type":"', 10, 80)
            kind = line[at + 8:line.find('"', at + 8)] if at >= 0 else ""
            if kind in not_needed or kind == "reasoning" or (kind == "ui" and line[at + 18:line.find('"', at + 18)] not in looked_at):
                # not needed now (or only if in the tail): checked for a tear, not parsed
                if not line.endswith("}\n") or "\0" in line:
                    damaged.append((lineno, _damage(line)))
                    continue
                last_good = line
                if kind in not_needed:
                    continue
                ev = line
            else:
                try:
                    if kind == "result" and '"clen":' in line[:120]:
                        ev = _parse_result(line, scan)
                        if ev is None:
                            raise ValueError
                    else:
                        ev, end = scan(line, 0)
                        if end < len(line) - 1:  # more than the newline after the object
                            raise ValueError
                    kind = ev["type"]
                except (ValueError, KeyError, TypeError, StopIteration):
                    if line != "\n":
                        damaged.append((lineno, _damage(line)))
                    continue
                last_good = line
                if '"$blob"' in line:
                    ev = internalize(ev, store, missing)
            if kind == "result":
                cid = ev.get("id")
                content = ev.get("content")
                if not isinstance(content, str):
                    content = '{"ok":false,"error":"the result was not recorded","code":"internal"}'
                append({"role": "tool", "tool_call_id": cid, "content": content})
                calls.pop(cid, None)
                if cid in changed_ids:
                    out.outcomes[cid] = _result_ok(content)
                if not ev.get("row", True):
                    continue
            elif kind == "ui" or kind == "reasoning":
                if ev.__class__ is dict:
                    m = ev.get("m") or [None]
                    if m[0] == M.MODEL and len(m) > 1:
                        out.model = m[1]
                    elif m[0] == M.CONFIRM and len(m) > 2 and isinstance(m[2], dict):
                        out.pending_confirm = m[2].get("id")
                    elif m[0] == M.DECIDED and len(m) > 1 and m[1] == out.pending_confirm:
                        out.pending_confirm = None
            elif kind == "answer":
                content = ev.get("content") or ""
                msg_calls = ev.get("calls")
                if msg_calls:
                    tool_calls = []
                    for c in msg_calls:
                        cid = c.get("id")
                        name = c.get("name") or ""
                        tool_calls.append({"id": cid, "type": "function",
                                           "function": {"name": name, "arguments": c.get("arguments", "{}")}})
                        calls[cid] = {"id": cid, "name": name, "started": False}
                    append({"role": "assistant", "content": content, "tool_calls": tool_calls})
                elif content:
                    append({"role": "assistant", "content": content})
            elif kind == "prompt":
                text = ev.get("text", "")
                note = ev.get("note")
                append({"role": "user", "content": f"{note}\n\n{text}" if note else text})
                out.model_notes = []
                out.turns = ev.get("turn", out.turns + 1)
                out.open_turn = True
                calls = {}
                out.pending_confirm = None
                group = [0, [], True]
                groups.append(group)
                turns_held += 1
                while turns_held > tail_turns:
                    gone = groups.popleft()
                    held -= gone[0]
                    if gone[2]:
                        turns_held -= 1
                        out.hidden_turns += 1
            elif kind == "turn_end":
                out.open_turn = False
                if isinstance(ev.get("tokens"), int):
                    out.tokens, out.tokens_estimated = ev["tokens"], ev.get("tokens_estimated") is True
                if not ev.get("usage") and ev.get("tokens_estimated") is not True:
                    continue  # the screen shows a turn_end's usage (or estimate) only
            else:
                if kind == "run":
                    if ev.get("id") in calls:
                        calls[ev["id"]]["started"] = True
                elif kind == "change":
                    out.changes.append(ev)
                    changed_ids.add(ev.get("id"))
                elif kind == "undo":
                    out.undone.update(t for t in ev.get("turns", ()) if isinstance(t, int))
                    if ev.get("note"):
                        out.model_notes.append(ev["note"])
                elif kind == "resume":
                    if ev.get("note"):
                        out.model_notes.append(ev["note"])
                elif kind == "compact":  # the same ops the agent applied: the compacted conversation
                    ops = ev.get("ops")
                    if isinstance(ops, list):
                        if isinstance(ev.get("length"), int) and ev["length"] != len(conv):
                            out.notes.append(f"line {lineno} of the journal compacted a conversation of "
                                             f"{ev['length']} messages, but {len(conv)} were read before it")
                        try:
                            conv[:] = apply_ops(conv, ops)
                        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                            out.notes.append(f"line {lineno} of the journal (a compaction) could not be applied")
                elif kind == "clear":  # /clear: a fresh conversation from here
                    conv.clear()
                elif kind == "usage":
                    _add_usage(out.meter, ev)
                continue
            n = len(line)  # shown: into the current turn's group
            group[0] += n
            group[1].append(ev)
            held += n
            while held > tail_bytes and len(groups) > 1:
                gone = groups.popleft()
                held -= gone[0]
                if gone[2]:
                    turns_held -= 1
                    out.hidden_turns += 1
        out.lines = lineno
    seq = _seq(last_good)
    out.next_seq = seq + 1 if seq is not None else 1
    out.open_calls = list(calls.values()) if out.open_turn else []
    if not out.open_turn:
        out.pending_confirm = None
    for g in groups:
        for ev in g[1]:
            if isinstance(ev, str):  # kept as text: parse it now
                text = ev
                try:
                    ev = decode(text)
                except ValueError:
                    continue
                if '"$blob"' in text:
                    ev = internalize(ev, store, missing)
            out.tail.append(ev)
    for lineno, what in damaged:
        last = lineno == out.lines
        out.notes.append(f"line {lineno} of the journal {what}"
                         f"{' (the last line: DashFloat was stopped while writing it)' if last else ''}: skipped")
    if missing_blobs:
        out.notes.append(f"{len(missing_blobs)} text(s) kept apart from the journal are missing from {store.path}")
    return out


def _add_usage(totals: dict, ev: dict) -> None:
    """Sum one `usage` event into the totals (metering.Totals.as_dict's keys)."""
    def num(key):
        v = ev.get(key)
        return v if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 else 0

    totals["requests"] = totals.get("requests", 0) + 1
    for key in ("prompt", "cached", "completion"):
        totals[key] = totals.get(key, 0) + int(num(key))
    if "cost" in ev:
        totals["cost"] = totals.get("cost", 0.0) + float(num("cost"))
        totals["priced"] = totals.get("priced", 0) + 1
    if ev.get("estimated"):
        totals["estimated"] = totals.get("estimated", 0) + 1


def _damage(line: str) -> str:
    body = line.rstrip("\n")
    if body and not body.strip("\0"):
        return f"is {len(body)} zero bytes (written by a crash before its data reached the disk)"
    if not line.endswith("\n"):
        return "is cut off"
    return "is damaged"


def ui_messages(loaded: Loaded) -> list[tuple]:
    """The agent -> UI messages that draw the tail of a session again, as it was."""
    from dashfloat.tools import runner

    out: list[tuple] = []
    if loaded.hidden_turns:
        one = loaded.hidden_turns == 1
        out.append(M.system("info", f"{loaded.hidden_turns} earlier turn{'' if one else 's'} of this session "
                                    f"{'is' if one else 'are'} not shown; the conversation holds them all."))
    reasoning = ""
    for ev in loaded.tail:
        kind = ev["type"]
        if kind == "reasoning":  # the reasoning of the answer that follows
            reasoning = ev.get("text") or ""
        elif kind == "ui":
            m = ev.get("m")
            if isinstance(m, list) and m and m[0] in M.AGENT_TO_UI:
                out.append(tuple(m))
        elif kind == "prompt":
            reasoning = ""
            out.append((M.USER, ev.get("text", "")))
        elif kind == "answer":
            out.append((M.ASSISTANT_START,))
            reasoning, shown = "", reasoning or ev.get("reasoning")
            if shown:
                out.append((M.REASONING, shown))
            if ev.get("content"):
                out.append((M.TOKEN, ev["content"]))
            out.append((M.ASSISTANT_END, ev.get("status") or "done"))
        elif kind == "result":
            try:
                result = json.loads(ev.get("content") or "")
                if not isinstance(result, dict):
                    raise ValueError
            except ValueError:
                result = {"ok": False, "error": "(the result could not be read back)"}
            row = runner.result_row(ev.get("id"), ev.get("tool") or "", result)
            if ev.get("details"):
                row["details"] = ev["details"]
            out.append((M.TOOL_RESULT, row))
        elif kind == "turn_end" and ev.get("usage"):
            out.append((M.USAGE, ev["usage"]))
        elif kind == "turn_end" and ev.get("tokens_estimated") is True and isinstance(ev.get("tokens"), int):
            out.append((M.USAGE, {"total_tokens": ev["tokens"], "estimated": True}))
    return out
