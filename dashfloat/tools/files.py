"""The file tools: read_file, write_file, list_directory, and the hardened write underneath.

Bounds (ADR 0007 §2): read_file returns at most 2,000 lines and 64 KiB, and says so with both
totals; files above 256 KiB are streamed and only the requested window is kept (the exact line
total is traded away; ``truncated`` comes from a probe past the window); list_directory stats at
most 501 entries (the sorted head). Binary files are reported, not dumped. Non-UTF-8 content is
decoded with replacement characters and flagged; non-UTF-8 names are shown escaped and flagged.

Every open, stat and listing goes through ``safeopen`` beneath a descriptor of the root (one
per call), so what the path policy checked is what is opened: a directory swapped for a link
to the outside meanwhile is refused, never followed.

Writes go through ``atomic_write_at``: an ``O_EXCL`` temp file with a random name created
(``dir_fd``) in the directory descriptor that holds the target, fsync, the existing file's mode
kept, ``os.replace`` into place within that same descriptor, the directory fsynced. Any failure
removes the temp file and leaves the original untouched. A file with several hard links is
replaced under this name only: the other names keep the old content (results and previews say
so); read_file reports the link count.

Every function returns a result dict (``results.ok`` / ``results.error``); none raises for an
operating-system failure.
"""

from __future__ import annotations

import codecs
import errno
import heapq
import io
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from dashfloat.tools import names, pathpolicy, safeopen
from dashfloat.tools.pathpolicy import Resolved, shown
from dashfloat.tools.results import error, ok

READ_MAX_LINES = 2000  # lines per read_file reply
READ_MAX_BYTES = 64 * 1024  # bytes of file content per read_file reply
READ_LIMIT_MAX = 10_000  # the catalogue's range for `limit`
STREAM_ABOVE = 256 * 1024  # files above this are streamed: only the window is kept
BINARY_SAMPLE = 8 * 1024  # binary sniffing looks at this many leading bytes
LIST_MAX = 501  # list_directory stats at most this many entries
EDIT_MAX_BYTES = 8 * 1024 * 1024  # edit_file (and write_file over an existing file) refuse above
_CHUNK = 64 * 1024

# Bytes that occur in text: printable ASCII, high bytes (any encoding), and the usual controls
# (BEL, BS, TAB, LF, VT, FF, CR, ESC).
_TEXT_CONTROLS = {7, 8, 9, 10, 11, 12, 13, 27}
_NON_TEXT = bytes(b for b in range(0x20) if b not in _TEXT_CONTROLS) + b"\x7f"


def is_binary(sample: bytes) -> bool:
    """Sniff a leading sample: a NUL byte, many non-text control bytes, or mostly invalid UTF-8."""
    if not sample:
        return False
    if b"\0" in sample:
        return True
    controls = len(sample) - len(sample.translate(None, _NON_TEXT))
    if controls * 10 > len(sample):  # more than 10 % non-text control bytes
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError:
        pass
    # Cut-off multibyte sequence at the end of the sample is not evidence: decode incrementally.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(sample, final=False)
    bad = text.count("\ufffd")
    return bad * 10 > max(len(text), 1) * 3  # more than 30 % undecodable: not text


def decode_text(data: bytes, *, cut: bool = False) -> tuple[str, bool]:
    """UTF-8 text and whether replacement characters were needed.

    ``cut``: the bytes may end inside a multibyte character (a line cut at a byte cap); the
    incomplete tail is dropped rather than reported as an encoding error.
    """
    if cut:
        dec = codecs.getincrementaldecoder("utf-8")("strict")
        try:
            return dec.decode(data, final=False), False
        except UnicodeDecodeError:
            dec = codecs.getincrementaldecoder("utf-8")("replace")
            return dec.decode(data, final=False), True
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def mark_written_names(result: dict, *raw_names: str | bytes) -> dict:
    """Add ``names_escaped`` (how such names are written) when a name in the result is
    written with escapes (``names.written``)."""
    if any(names.is_written(n) for n in raw_names):
        result["names_escaped"] = names.NOTE
    return result


def count_lines(data: bytes) -> int:
    """Lines as an editor counts them: newlines, plus one for a last line without a newline."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _os_error(exc: OSError, what: str, name: str) -> dict:
    if isinstance(exc, safeopen.Escape):
        return error("path_escape", f"path escapes the working directory: {name} "
                                    f"({exc.strerror}; {pathpolicy.ALLOWED})")
    if isinstance(exc, safeopen.Changed):
        return error("path_changed", f"cannot {what} {name}: {exc.strerror}; nothing was used, "
                                     "try again")
    if isinstance(exc, PermissionError):
        return error("permission_denied", f"permission denied: {what} {name}")
    if isinstance(exc, FileNotFoundError):
        return error("not_found", f"no such file or directory: {name}")
    if isinstance(exc, NotADirectoryError):
        return error("not_a_directory", f"cannot {what} {name}: not a directory (it, or a "
                                        "directory on its path, is something else now)")
    if exc.errno == errno.ELOOP:
        return error("io_error", f"cannot {what} {name}: too many levels of symbolic links "
                                 "(a symlink loop?), or it turned into a symbolic link meanwhile")
    return error("io_error", f"cannot {what} {name}: {exc.strerror or exc}")


def open_root(res: Resolved) -> safeopen.Root | dict:
    """The descriptor of the root ``res`` was resolved against (one per tool call), or the
    error result when the working directory cannot be opened."""
    try:
        return safeopen.Root(res.root or res.real_root)
    except OSError as exc:
        return _os_error(exc, "open the working directory", shown(res.root or res.real_root))


def open_regular(beneath: safeopen.Root, rel: str) -> int | dict:
    """Open an existing regular file beneath the root for reading, without ever blocking.

    Opened through ``beneath`` (nothing outside the root, whatever changed since the check);
    ``O_NONBLOCK`` so a FIFO swapped in after the policy's stat cannot block the open; the fd
    is re-checked with ``fstat``. Returns the fd or an error result.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    name = shown(rel)
    try:
        fd = beneath.open(rel, flags)
    except OSError as exc:
        return _os_error(exc, "open", name)
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return _os_error(exc, "stat", name)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return pathpolicy.special_error(name, st.st_mode) or error(
            "not_a_file", f"not a regular file: {name}"
        )
    return fd


def read_bytes_bounded(fd: int, limit: int) -> bytes:
    """Read from ``fd`` until EOF or ``limit`` bytes (at most ``limit`` bytes are held)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# -- read_file ----------------------------------------------------------------------------


def _window(
    reader: io.BufferedIOBase, offset: int, max_lines: int, max_bytes: int
) -> tuple[bytes, int, bool, bool, bool]:
    """Collect the line window starting at 1-based ``offset`` from a binary reader.

    Memory is bounded by ``max_bytes`` plus one buffered chunk, whatever the line lengths.
    Returns (content, lines_returned, cut, more, past_end):
      cut:      the first line alone exceeded ``max_bytes`` and only its head is returned
      more:     something follows the returned content (learned from a one-byte probe)
      past_end: nothing at all from ``offset`` on (the file has fewer than ``offset`` lines)
    """
    # Skip offset-1 lines without holding them.
    to_skip = offset - 1
    while to_skip > 0:
        piece = reader.readline(_CHUNK)
        if not piece:
            return b"", 0, False, False, True
        if piece.endswith(b"\n"):
            to_skip -= 1
    out = bytearray()
    n = 0
    while n < max_lines:
        room = max_bytes - len(out)
        line = reader.readline(room + 1)
        if not line:
            return bytes(out), n, False, False, n == 0
        if len(line) > room:  # this line does not fit
            if n == 0:
                out += line[:room]
                return bytes(out), 1, True, True, False
            return bytes(out), n, False, True, False
        out += line
        n += 1
        if not line.endswith(b"\n"):  # a last line without a newline: EOF
            return bytes(out), n, False, False, False
    more = bool(reader.read(1))  # the probe past the window
    return bytes(out), n, False, more, False


def read_file(root: str | Path, path: str, offset: int = 1, limit: int = READ_MAX_LINES) -> dict:
    """Read a 1-based line window of a text file.

    Result: ``{"ok": true, "path": rel, "content": text, "lines": total | null, "size": bytes,
    "offset": offset, "truncated": bool}``; when truncated also ``next_offset`` and a ``note``
    reporting both totals; ``encoding_errors: true`` when invalid UTF-8 was replaced; a ``note``
    when the offset is past the end or the file is empty. ``lines`` is null for files above
    256 KiB (streamed; total not counted). A file with more than one hard link adds
    ``hard_links`` (the count) and ``hard_links_note``. Errors: bad_arguments, path_escape, not_found,
    not_a_file, special_file, binary (with ``size``), permission_denied, io_error.
    """
    for name, value, top in (("offset", offset, None), ("limit", limit, READ_LIMIT_MAX)):
        if not isinstance(value, int) or isinstance(value, bool):
            return error("bad_arguments", f"{name} must be an integer")
        if value < 1 or (top is not None and value > top):
            rng = f"1..{top}" if top else ">= 1"
            return error("bad_arguments", f"{name} must be {rng}, got {value}")
    res = pathpolicy.resolve(root, path, must_exist=True)
    if isinstance(res, dict):
        return res
    beneath = open_root(res)
    if isinstance(beneath, dict):
        return beneath
    with beneath:
        bad = pathpolicy.check_regular(res, beneath)
        if bad is not None:
            return bad
        fd = open_regular(beneath, res.rel)
    if isinstance(fd, dict):
        return fd
    rel = shown(res.rel)
    try:
        st = os.fstat(fd)
        size, links = st.st_size, st.st_nlink
        sample = os.pread(fd, BINARY_SAMPLE, 0)
        if is_binary(sample):
            return error(
                "binary",
                f"binary file, content not shown: {rel} ({size} bytes)",
                path=rel,
                size=size,
            )
        max_lines = min(limit, READ_MAX_LINES)
        total: int | None
        if size <= STREAM_ABOVE:
            data = read_bytes_bounded(fd, STREAM_ABOVE + 1)
        else:
            data = None
        if data is not None and len(data) <= STREAM_ABOVE:
            total = count_lines(data)
            size = len(data)
            reader: io.BufferedIOBase = io.BytesIO(data)
        else:  # large (or grew past the threshold while we read): stream the window
            total = None
            if data is not None:  # it grew: the size taken before the read is stale
                size = max(len(data), os.fstat(fd).st_size)
            os.lseek(fd, 0, os.SEEK_SET)
            reader = io.BufferedReader(io.FileIO(fd, closefd=False), _CHUNK)
        raw, n, cut, more, past_end = _window(reader, offset, max_lines, READ_MAX_BYTES)
    except OSError as exc:
        return _os_error(exc, "read", rel)
    finally:
        os.close(fd)
    content, enc_errors = decode_text(raw, cut=cut)
    result = ok(path=names.written(res.rel), content=content, lines=total, size=size, offset=offset,
                truncated=more)
    mark_written_names(result, res.rel)
    if enc_errors:
        result["encoding_errors"] = True
    if links > 1:
        result.update(hard_links_result(links))
    total_text = f"{total}" if total is not None else "? (file above 256 KiB: not counted)"
    if past_end:
        if size == 0:
            result["note"] = "the file is empty"
        else:
            result["note"] = (
                f"offset {offset} is past the end of the file ({total_text} lines, {size} bytes)"
            )
    elif more:
        last = offset + n - 1
        result["next_offset"] = offset + n
        if cut:
            result["note"] = (
                f"[truncated: line {offset} is longer than {READ_MAX_BYTES} bytes; "
                f"showing its first {len(raw)} bytes; the file has {total_text} lines, "
                f"{size} bytes; continue with offset={offset + n}]"
            )
        else:
            if n >= limit:
                why = f"the requested limit of {limit} lines"
            elif n >= READ_MAX_LINES:
                why = f"a reply holds at most {READ_MAX_LINES} lines"
            else:
                why = f"a reply holds at most {READ_MAX_BYTES} bytes"
            result["note"] = (
                f"[truncated: showing lines {offset}-{last} of {total_text} lines, "
                f"{len(raw)} of {size} bytes ({why}); continue with offset={offset + n}]"
            )
    return result


def hard_links_result(links: int) -> dict:
    """The fields read_file adds for a file with more than one hard link."""
    return {"hard_links": links,
            "hard_links_note": f"this file has {links} hard links: other names see the same content"}


def hard_links_broken(links: int) -> str:
    """What a write or edit of a file with ``links`` hard links does to the other names."""
    others = "the other name keeps" if links == 2 else f"the other {links - 1} names keep"
    return (f"this file has {links} hard links: the write replaces this name only and breaks "
            f"the link; {others} the old content")


# -- writing ------------------------------------------------------------------------------


def _temp_name(target: bytes) -> tuple[bytes, bytes]:
    directory, name = os.path.split(target)
    stem = name[:180]
    tmp = b"." + stem + b"." + secrets.token_hex(8).encode() + b".dftmp"
    return directory or b".", os.path.join(directory, tmp)


def _fsync_dir(dir_fd: int) -> None:
    try:
        dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


class NotRegularFile(OSError):
    """atomic_write refuses to replace a directory, symlink, FIFO, socket or device."""


def atomic_write_at(dir_fd: int, name: bytes, data: bytes) -> os.stat_result | None:
    """Replace (or create) the file ``name`` in the directory ``dir_fd`` with ``data``, atomically.

    An ``O_EXCL|O_CREAT|O_NOFOLLOW`` temp file with a random name (``secrets.token_hex``) in that
    same directory descriptor; data written and fsynced; an existing file's permission bits kept
    (setuid/setgid dropped, never widened; owner and group kept when we may); ``os.replace`` into place
    with ``dir_fd`` on both sides (the rename replaces this name only: other hard links keep the
    old content); the directory fsynced (best effort). On any failure the temp file is removed,
    the original is untouched, and the OSError propagates. Returns the replaced file's stat
    (None when the file was created).
    """
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EISDIR, "not a regular file", os.fsdecode(name))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    # A new file gets the usual 0o666 & ~umask; a replacement starts private and is then given
    # exactly the old mode.
    create_mode = 0o666 if st is None else 0o600
    for _attempt in range(8):
        _, tmp = _temp_name(name)
        try:
            fd = os.open(tmp, flags, create_mode, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "could not create a unique temp file", os.fsdecode(name))
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if st is not None:
                # The owner and the group as far as we may: root keeps both; a user keeps the
                # group of a group-shared file (their own or a colleague's) when they are in it,
                # or the rest of the group would lose a 0660 file to the user's own group.
                try:
                    os.fchown(fd, st.st_uid, st.st_gid)
                except OSError:
                    try:
                        os.fchown(fd, -1, st.st_gid)
                    except OSError:
                        pass
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    _fsync_dir(dir_fd)
    return st


def atomic_write(path: str | bytes, data: bytes) -> None:
    """``atomic_write_at`` for a path outside any policy (the tools use ``atomic_write_at``
    through a descriptor beneath the root): the parent directory is opened once, by name."""
    target = path if isinstance(path, bytes) else os.fsencode(path)
    directory, name = os.path.split(target)
    dir_fd = os.open(directory or b".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        atomic_write_at(dir_fd, name, data)
    finally:
        os.close(dir_fd)


def write_beneath(beneath: safeopen.Root, rel: str, data: bytes,
                  check: Callable[[int, bytes], dict | None] | None = None,
                  make_parents: bool = True) -> dict:
    """Create the missing parents of ``rel`` (unless not ``make_parents``) and atomically write
    ``data`` there, all beneath the root: the write_file result. ``check(dir_fd, name)``, when
    given, runs in the very directory descriptor the write will use, just before it; a result
    it returns is returned instead and nothing is written (apply_edit / apply_write: "still as
    previewed")."""
    name_shown = shown(rel)
    try:
        dir_fd, name = beneath.parent(rel, make_parents=make_parents)
    except OSError as exc:
        return _os_error(exc, "write", name_shown)
    try:
        if name == b".":
            return error("not_a_file", f"not a regular file: {name_shown}")
        if check is not None:
            refused = check(dir_fd, name)
            if refused is not None:
                return refused
        try:
            old = atomic_write_at(dir_fd, name, data)
        except NotRegularFile:
            return error("not_a_file", f"not a regular file: {name_shown}")
        except OSError as exc:
            return _os_error(exc, "write", name_shown)
    finally:
        os.close(dir_fd)
    result = ok(path=names.written(rel), bytes=len(data), created=old is None)
    if old is not None and old.st_nlink > 1:
        result["hard_links"] = old.st_nlink
        result["hard_links_note"] = hard_links_broken(old.st_nlink)
    return mark_written_names(result, rel)


def encode_content(content: object, what: str = "content") -> bytes | dict:
    if not isinstance(content, str):
        return error("bad_arguments", f"{what} must be a string")
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        return error("bad_arguments", f"{what} is not valid text (it holds lone surrogates)")


def check_write_target(res: Resolved, beneath: safeopen.Root | None = None) -> dict | None:
    """None when ``res`` may be written: new, or an existing regular file; a path ending in
    ``/`` names a directory, which write_file does not create."""
    if res.slash and not res.exists:
        return error(
            "bad_arguments",
            f"write_file writes a file, but {shown(res.rel)}/ ends in / (a directory); give "
            "the file's path without the trailing / (a missing directory is created for a "
            "file written inside it)",
        )
    if res.exists:
        return pathpolicy.check_regular(res, beneath)
    return None


def write_resolved(res: Resolved, data: bytes,
                   check: Callable[[int, bytes], dict | None] | None = None,
                   make_parents: bool = True) -> dict:
    """``write_beneath`` with a root descriptor of its own; the write_file result."""
    beneath = open_root(res)
    if isinstance(beneath, dict):
        return beneath
    with beneath:
        return write_beneath(beneath, res.rel, data, check, make_parents)


def write_file(root: str | Path, path: str, content: str) -> dict:
    """Write ``content`` (UTF-8) to ``path``, creating missing parent directories in the root.

    Result: ``{"ok": true, "path": rel, "bytes": n, "created": bool}``. Errors: bad_arguments,
    path_escape, not_a_file (a directory), special_file, not_a_directory (a parent is a file),
    permission_denied, io_error.
    """
    data = encode_content(content)
    if isinstance(data, dict):
        return data
    res = pathpolicy.resolve(root, path)
    if isinstance(res, dict):
        return res
    beneath = open_root(res)
    if isinstance(beneath, dict):
        return beneath
    with beneath:
        bad = check_write_target(res, beneath)
        if bad is not None:
            return bad
        return write_beneath(beneath, res.rel, data)


# -- list_directory -----------------------------------------------------------------------


def _names(dir_fd: int) -> tuple[list[bytes], int]:
    """The LIST_MAX smallest names (by bytes) and the total count; memory bounded."""
    count = 0

    def counted() -> Iterator[bytes]:
        nonlocal count
        with os.scandir(dir_fd) as it:
            for entry in it:
                count += 1
                yield os.fsencode(entry.name)

    head = heapq.nsmallest(LIST_MAX, counted())
    return head, count


def list_directory(root: str | Path, path: str = ".") -> dict:
    """List a directory: the sorted head of at most 501 entries, lstat'ed (links not followed).

    Result: ``{"ok": true, "path": rel, "entries": [{"name", "type", "size"?, "target"?,
    "escaped"?}], "total": n, "truncated": bool}``. ``type`` is file, dir, link or other;
    ``size`` only for files; ``target`` for links. Names (and ``path``) are ``names.written``:
    as they are when valid UTF-8, else with ``\\xNN`` escapes and then ``escaped: true`` on the
    entry and ``names_escaped`` (how to give them back) on the result.
    """
    res = pathpolicy.resolve(root, path, must_exist=True)
    if isinstance(res, dict):
        return res
    beneath = open_root(res)
    if isinstance(beneath, dict):
        return beneath
    rel = shown(res.rel)
    with beneath:
        bad = pathpolicy.check_directory(res, beneath)
        if bad is not None:
            return bad
        try:
            dir_fd = beneath.open_dir(res.rel, read=True)
        except OSError as exc:
            return _os_error(exc, "list", rel)
    try:
        return _listing(dir_fd, res.rel)
    finally:
        os.close(dir_fd)


def _listing(dir_fd: int, rel: str) -> dict:
    """list_directory's result for the directory ``rel`` (as resolved) open at ``dir_fd``:
    names and lstat, all relative to that descriptor."""
    try:
        listed, total = _names(dir_fd)
    except OSError as exc:
        return _os_error(exc, "list", shown(rel))
    entries = []
    escaped: list[bytes] = []  # names (and link targets) written with escapes
    for name in listed:
        entry: dict = {"name": names.written(name)}
        if names.is_written(name):
            entry["escaped"] = True
            escaped.append(name)
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            entry["type"] = "other"
            entries.append(entry)
            continue
        if stat.S_ISREG(st.st_mode):
            entry["type"] = "file"
            entry["size"] = st.st_size
        elif stat.S_ISDIR(st.st_mode):
            entry["type"] = "dir"
        elif stat.S_ISLNK(st.st_mode):
            entry["type"] = "link"
            try:
                target = os.readlink(name, dir_fd=dir_fd)
                entry["target"] = names.written(target)
                if names.is_written(target):
                    escaped.append(target)
            except OSError:
                pass
        else:
            entry["type"] = "other"
        entries.append(entry)
    result = ok(path=names.written(rel), entries=entries, total=total, truncated=total > len(entries))
    return mark_written_names(result, rel, *escaped)
