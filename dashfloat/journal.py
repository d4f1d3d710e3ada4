"""The session journal: one append-only JSONL file per session, written by one thread.

A session survives anything because everything it needs is in this file the moment it
happens: the prompt, the answer (content, reasoning, tool calls), each call's decision and
result, what the screen showed, file changes for /undo, the end of every turn. Line 1 is a
header; every line, the header included, is one JSON object whose first keys are `seq`
(1, 2, ... per session, the header 0), `time` (Unix seconds) and `type`:

    session   the header: format, id, cwd (real path), model, host, dashfloat, title (its
              `time` is the start)
    prompt    a prompt: turn (1, 2, ...), text, and note (what the model was told with it)
    reasoning the reasoning the model streamed apart, before the answer it belongs to: text
    answer    the model's answer: status, content, calls [{id, name, arguments}]
    ui        an agent -> UI message (dashfloat/messages.py) the events above do not imply: m
    decision  a permission decision for a call: id, tool, decision, by, reason, mode, args_sha256
    audit     a change of permissions: what (mode, session_rule, revoke) and its details
    cancel    the turn was cancelled: by (absent: the user's key; "SIGTERM"...: a headless run's signal;
              "hangup", "signal", "quit": the full-screen app left while an answer streamed)
    run       a call starts executing: id, tool (a side effect may follow)
    result    a call's result as the model reads it: id, tool, content (the tool message's
              JSON text; written as a JSON value, last on its line, after its length clen)
    change    a file DashFloat's tools are about to change: turn, id, path, real, before, after
    undo      /undo restored files: turns, files [{path, outcome}], note (told to the model)
    usage     one request to the model: turn, model, prompt, cached, completion (tokens), estimated
              (true when the provider sent no usage), cost (with a price for the model)
    budget    a budget (metering.py): what (warning at 80 %, reached by a whole answer, stop: the
              turn was stopped), budget (max_turns, max_tokens, max_cost), limit, used, why
    turn_end  the end of a turn: turn, status (messages.TURN_REASONS, or interrupted), usage, tokens
              (tokens_estimated: true when no usage came and they are DashFloat's estimate)
    resume    the session was resumed: interrupted (the last turn had not ended), note
    compact   the conversation was compacted (dashfloat/context.py): reason (auto, /compact,
              overflow), how (stubs, summary, dropped, cut), before and after (tokens of the
              next request), window, length (messages before), ops (what was done, as data:
              a resume applies them to the conversation it rebuilds, so nothing is stored
              twice), summarised, dropped, stubbed, cut (counts), failed (why), usage
    clear     /clear: the conversation starts afresh here: messages, tokens (what was left)
    end       DashFloat left: reason (quit, hangup, signal, agent_down), turn, tokens
    note      something about the journal itself (events dropped before the first prompt)

A string longer than BIG characters anywhere in an event is stored once in the session's
store (`<id>.store/text/<sha256>`) and replaced by {"$blob": sha256, "size": n}; a file's
previous bytes for /undo go to `<id>.store/files/<sha256>`, bounded by `undo_store_mb`.

Writing: one `os.write` per event (O_APPEND), `sync()` (fsync) before a tool with a side
effect runs, at the end of each turn and when DashFloat leaves, so a kill -9 loses at most
the event being written. The file is locked (flock) while a DashFloat appends to it. Every
string is masked first (`masking`: the API key and secret header values never reach it).
A new session's file is created at its first prompt (`begin`); events before it wait in
memory. Every string round-trips: a lone surrogate (a file name that is not UTF-8) is
written as a JSON escape.

The API is small on purpose (the headless front end uses it too): `Journal(...)`,
`begin(title)`, `event(type, **fields)`, `ui(msg)`, `result(id, tool, content)`, `keep(data)`
/ `kept(sha)`, `sync()`, `close(reason)`.
Reading is in dashfloat/sessions.py.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from dashfloat import masking, private, storage, wire
from dashfloat import messages as M
from dashfloat.sha import sha256_hex

log = logging.getLogger("dashfloat.journal")

FORMAT = 1
BIG = 4096  # characters: a longer string is stored once in the store, by hash
PENDING_MAX = 2000  # events kept in memory before the first prompt creates the file
UNDO_STORE_MB = 256  # default bound on the previous bytes kept for /undo, per session

# agent -> UI messages that other events imply (prompt, answer, result, turn_end) or that
# only matter while they happen (the phase, streamed text, a command's live output)
UI_IMPLIED = frozenset((M.PHASE, M.TOKEN, M.REASONING, M.TOOL_OUTPUT, M.USER, M.ASSISTANT_START,
                        M.ASSISTANT_END, M.USAGE, M.AGENT_DOWN, M.CRASH, M.METER, M.STOPPED, M.LEAVE, M.CLIPBOARD,
                        M.COMPACTED, M.TURN_END, M.FILES))


# ---- where sessions live (here, not in sessions.py: a new session needs only this) -------

_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def sessions_dir(environ: Mapping[str, str]) -> Path:
    from dashfloat.config import state_dir

    return state_dir(environ) / "sessions"


def project_key(real_cwd: str) -> str:
    """`<name>-<12 hex digits of sha256(real path)>`: readable and unique per directory."""
    raw = os.fsencode(real_cwd)
    name = _KEY_CHARS.sub("_", os.path.basename(real_cwd.rstrip("/")) or "root")[:40]
    return f"{name}-{sha256_hex(raw)[:12]}"


def project_dir(environ: Mapping[str, str], real_cwd: str) -> Path:
    return sessions_dir(environ) / project_key(real_cwd)


def new_id() -> str:
    return os.urandom(8).hex()  # what secrets.token_hex does, without importing secrets


class Busy(Exception):
    """Another DashFloat holds this session's lock."""


def holder_in(proc_locks: str, dev: int, ino: int) -> int | None:
    """The process that holds a flock on the file (dev, ino), from the text of /proc/locks
    (`1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`; a waiter's line has `->`). Pure."""
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    for line in proc_locks.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want:
            try:
                return int(parts[4])
            except ValueError:
                return None
    return None


def lock_holder(path) -> int | None:
    """Which process holds the session's lock (Linux /proc/locks), or None when that cannot
    be told: a dropped ssh link can leave a DashFloat holding it until sshd notices."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return holder_in(text, st.st_dev, st.st_ino)


def now() -> float:
    return round(time.time(), 3)


def sha256(data: bytes) -> str:
    return sha256_hex(data)


def text_bytes(text: str) -> bytes:
    """A str as bytes that give it back exactly (lone surrogates included)."""
    return text.encode("utf-8", "surrogatepass")


def encode_line(obj: dict) -> bytes:
    """One JSON line. Non-ASCII stays UTF-8; a string the UTF-8 codec cannot take (a lone
    surrogate) makes the line ASCII with \\u escapes, which json.loads reads back exactly."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or Infinity: not JSON; written as their names
        obj = wire.clean(obj)
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


class Store:
    """The session's side files: long texts by hash (kept for as long as the session) and
    files' previous bytes for /undo (bounded: the least recently used go first)."""

    def __init__(self, path: Path, undo_max: int):
        self.path = path
        self.undo_max = undo_max
        self._files_total: int | None = None  # bytes under files/, counted on first use

    def _dir(self, sub: str) -> Path:
        d = self.path / sub
        if not d.is_dir():
            for note in private.ensure_dir(d):
                log.info("private files: %s", note)
        return d

    def put_text(self, text: str) -> tuple[str, int]:
        data = text_bytes(text)
        digest = sha256(data)
        target = self._dir("text") / digest
        if not target.exists():
            _write_private(target, data)
        return digest, len(text)

    def get_text(self, digest: str) -> str | None:
        data = self._read(self.path / "text" / digest, digest)
        return None if data is None else data.decode("utf-8", "surrogatepass")

    def put_file(self, data: bytes) -> tuple[str | None, str]:
        """(sha256, "") when the bytes are kept, else (None, why not)."""
        if len(data) > self.undo_max:
            return None, f"larger than the undo store's bound ({_mib(self.undo_max)}, undo_store_mb)"
        digest = sha256(data)
        directory = self._dir("files")
        target = directory / digest
        if self._files_total is None:
            self._files_total = sum(e.stat().st_size for e in os.scandir(directory) if e.is_file())
        if target.exists():
            os.utime(target)  # used again: the last to be dropped
            return digest, ""
        self._evict(directory, len(data))
        _write_private(target, data)
        self._files_total += len(data)
        return digest, ""

    def _evict(self, directory: Path, incoming: int) -> None:
        if self._files_total + incoming <= self.undo_max:
            return
        entries = sorted((e.stat().st_mtime_ns, e.name, e.stat().st_size)
                         for e in os.scandir(directory) if e.is_file())
        for _mtime, name, size in entries:
            if self._files_total + incoming <= self.undo_max:
                break
            try:
                os.unlink(directory / name)
            except OSError:
                continue
            self._files_total -= size
            log.info("undo store: dropped %s (%d bytes) to stay within %s", name, size, _mib(self.undo_max))

    def get_file(self, digest: str) -> bytes | None:
        return self._read(self.path / "files" / digest, digest)

    @staticmethod
    def _read(path: Path, digest: str) -> bytes | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return data if sha256(data) == digest else None


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


def _write_private(target: Path, data: bytes) -> None:
    """Write a side file whole or not at all: a private temp file, fsynced, renamed."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd, _notes = private.open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)


def externalize(value, store: Store):
    """`value` with every string longer than BIG moved to the store (a {"$blob"} stand-in)."""
    if isinstance(value, str):
        if len(value) <= BIG:
            return value
        digest, size = store.put_text(value)
        return {"$blob": digest, "size": size}
    if isinstance(value, dict):
        return {k: externalize(v, store) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [externalize(v, store) for v in value]
    return value


def internalize(value, store: Store, missing: Callable[[str], str]):
    """The reverse of `externalize`; `missing(sha)` gives the text for a blob that is gone."""
    if isinstance(value, dict):
        if "$blob" in value and len(value) == 2 and "size" in value:
            digest = str(value["$blob"])
            text = store.get_text(digest)
            return missing(digest) if text is None else text
        return {k: internalize(v, store, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [internalize(v, store, missing) for v in value]
    return value


class Journal:
    """The writer of one session's journal. Only one thread writes (the agent's): the first
    thread that writes owns it, and a write from another thread is refused and logged.

    A failed write (disk full) is reported once through `on_error` and the journal stops:
    the session goes on unrecorded rather than with a file that has holes."""

    def __init__(self, path: Path, header: dict, *, secrets=(), undo_max: int = UNDO_STORE_MB * 1024 * 1024,
                 next_seq: int = 1, existing: bool = False):
        self.path = Path(path)
        self.id = str(header.get("id") or self.path.stem)
        self.header = dict(header)
        self.secrets = masking.normalize(secrets)
        self.store = Store(self.path.with_name(self.path.stem + ".store"), undo_max)
        self.seq = next_seq
        self.on_error: Callable[[str], None] | None = None
        self.failed: str | None = None
        self.closed = False
        self.foreign_writes = 0  # writes refused because another thread tried
        self.bytes_written = 0
        self._fd: int | None = None
        self._owner: int | None = None
        self._pending: list[tuple[str, float, dict]] | None = None if existing else []
        self._dropped = 0
        self._memory: dict[str, bytes] = {}  # /undo's previous bytes the store could not take
        self._memory_total = 0
        self._check_tail = existing
        if existing:
            self._open_existing()

    # ---- files and the lock -------------------------------------------------------------
    def _lock(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                pid = lock_holder(self.path)
                if pid is None:
                    raise Busy(f"session {self.id} is open in another DashFloat") from None
                raise Busy(f"session {self.id} is open in another DashFloat (process {pid}); if that one was "
                           f"left behind by a dropped connection, `kill {pid}` ends it (it keeps its journal) "
                           "and this can be tried again") from None
            raise

    def _open_existing(self) -> None:
        """Open for appending and take the lock (Busy if another DashFloat has it)."""
        fd, notes = private.open_private(self.path, os.O_WRONLY | os.O_APPEND)
        for note in notes:
            log.info("private files: %s", note)
        self._lock(fd)
        self._fd = fd

    @property
    def started(self) -> bool:
        return self._fd is not None

    def begin(self, title: str = "", **header) -> None:
        """Create the file (at a session's first prompt): header (`header` updates it: the
        model known by now), then what waited."""
        if self._fd is not None or self.failed or self.closed:
            return
        try:
            for note in private.ensure_dir(self.path.parent):
                log.info("private files: %s", note)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         private.FILE_MODE)
            self._lock(fd)
        except (OSError, Busy) as exc:
            self._fail(exc)
            return
        self._fd = fd
        self.header.update(header)
        header = {"seq": 0, "time": now(), "type": "session", "format": FORMAT, **self.header}
        if title:
            header["title"] = title
        self._write(masking.mask_deep(header, self.secrets, patterns=False) if self.secrets else header)
        pending, self._pending = self._pending or [], None
        if self._dropped:
            self.event("note", text=f"{self._dropped} events before the first prompt were not kept")
        for type_, at, fields in pending:
            self._append(type_, at, fields)

    # ---- writing --------------------------------------------------------------------------
    def event(self, type_: str, **fields) -> None:
        """Append one event (masked; long strings to the store). Never raises."""
        if self.closed or self.failed:
            return
        ident = threading.get_ident()
        if self._owner is None:
            self._owner = ident
        elif ident != self._owner:
            self.foreign_writes += 1
            log.error("journal: a %s event from thread %s refused (one writer: the agent thread)",
                      type_, threading.current_thread().name)
            return
        at = now()
        fields = masking.mask_deep(fields, self.secrets, patterns=False) if self.secrets else fields
        if self._pending is not None:
            if len(self._pending) >= PENDING_MAX:
                self._pending.pop(0)
                self._dropped += 1
            self._pending.append((type_, at, fields))
            return
        self._append(type_, at, fields)

    def result(self, call_id: str, tool: str, content: str, **fields) -> None:
        """A call's result: `content` is the tool message's text, JSON, exactly what the model
        reads. It is written as it is, as the last value on the line, with its length
        (`clen`) first, so a resume slices it out instead of parsing it (and nothing in it is
        escaped twice). Long or odd content goes the ordinary way (a string, or the store)."""
        try:
            content.encode("utf-8")
            plain = len(content) > BIG or "\n" in content or not (content.startswith("{") and content.endswith("}"))
        except UnicodeEncodeError:
            plain = True
        if plain:
            self.event("result", id=call_id, tool=tool, content=content, **fields)
        else:
            self.event("result", _raw=content, id=call_id, tool=tool, **fields)

    def ui(self, msg: tuple) -> None:
        """Journal an agent -> UI message unless other events imply it (UI_IMPLIED). A
        question's whole preview is left out: only its window stays on screen."""
        kind = msg[0]
        if kind in UI_IMPLIED:
            return
        if kind == M.CONFIRM and len(msg) > 2 and isinstance(msg[2], dict) and "full" in msg[2]:
            msg = (kind, msg[1], {k: v for k, v in msg[2].items() if k != "full"})
        self.event("ui", m=list(msg))

    def _append(self, type_: str, at: float, fields: dict) -> None:
        raw = fields.pop("_raw", None)
        try:
            body = externalize(fields, self.store)
        except OSError as exc:
            self._fail(exc)
            return
        if raw is None:
            self._write({"seq": self.seq, "time": at, "type": type_, **body})
        else:  # {"seq","time","type","clen",...,"content":<raw JSON>}
            head = encode_line({"seq": self.seq, "time": at, "type": type_, "clen": len(raw), **body})
            self._write(None, head[:-2] + b',"content":' + raw.encode("utf-8") + b"}\n")
        self.seq += 1

    def _write(self, obj: dict | None, line: bytes | None = None) -> None:
        if line is None:
            line = encode_line(obj)
        try:
            if self._check_tail:  # a torn last line (a kill during a write) ends here
                self._check_tail = False
                self._end_torn_line()
            view = memoryview(line)
            while view:  # one write; more only if the kernel takes part of it (a full disk)
                view = view[os.write(self._fd, view):]
            self.bytes_written += len(line)
        except OSError as exc:
            self._fail(exc)

    def _end_torn_line(self) -> None:
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            last = f.read(1)
        if last != b"\n":
            os.write(self._fd, b"\n")

    def sync(self) -> None:
        """fsync: what was written survives a crash of the machine too."""
        if self._fd is None or self.failed:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._fail(exc)

    def close(self, reason: str = "quit", **fields) -> None:
        """The end event, fsync, unlock. Idempotent."""
        if self.closed:
            return
        if self._fd is not None:
            self.event("end", reason=reason, **fields)
            self.sync()
            try:
                os.close(self._fd)  # the lock goes with it
            except OSError:
                pass
            self._fd = None
        self.closed = True

    def _fail(self, exc: BaseException) -> None:
        if self.failed:
            return
        why = storage.describe(exc) if isinstance(exc, OSError) else str(exc)
        self.failed = why
        log.error("journal %s: %s; the session is no longer recorded", self.path, why)
        if self.on_error is not None:
            try:
                self.on_error(f"The session journal could not be written ({why}): from here on this "
                              "session is not recorded, and --continue will not bring back what follows "
                              "(/undo keeps working from memory).")
            except Exception:
                log.exception("reporting the journal failure failed")

    # ---- /undo's previous bytes -------------------------------------------------------------
    def keep(self, data: bytes) -> tuple[str | None, str]:
        """Keep a file's previous bytes in the store: (sha256, "") or (None, why not).
        When the store cannot be written (a full disk, a state directory that cannot be
        written), they are kept in memory instead, within the same bound: /undo works for
        the rest of this session, only a resumed one cannot undo those changes."""
        if not self.failed:
            try:
                return self.store.put_file(data)
            except OSError as exc:
                log.warning("undo store %s: %s; keeping previous contents in memory", self.store.path, exc)
        if len(data) > self.store.undo_max:
            return None, f"larger than the undo store's bound ({_mib(self.store.undo_max)}, undo_store_mb)"
        digest = sha256(data)
        self._memory.pop(digest, None)
        self._memory[digest] = data  # the newest last: the oldest go first
        self._memory_total = sum(len(v) for v in self._memory.values())
        while self._memory_total > self.store.undo_max:
            old = next(iter(self._memory))
            self._memory_total -= len(self._memory.pop(old))
        return digest, ""

    def kept(self, digest: str) -> bytes | None:
        data = self._memory.get(digest)
        return data if data is not None else self.store.get_file(digest)
